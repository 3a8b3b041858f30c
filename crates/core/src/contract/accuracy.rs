//! The accuracy asset's row (`assets/accuracy.json`): the evidence crate writes it, the
//! page reads it. One type for both, so the two cannot drift apart.

use serde::{Deserialize, Serialize};

/// One compared run of the accuracy tables: memfit's figure against a measurement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AccuracyRow {
    /// Which set of runs.
    pub set: String,
    /// The run.
    pub label: String,
    /// memfit's inputs for it (the row's link).
    pub query: String,
    /// What is compared ("peak allocated, MiB").
    pub metric: String,
    /// The measured value.
    pub measured: f64,
    /// memfit's value.
    pub estimated: f64,
    /// Held out from modelling (real-stack runs only).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub held_out: bool,
    /// What the source does not state and memfit assumes (published runs only).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub unstated: String,
}

impl AccuracyRow {
    /// `(estimated − measured) / measured`.
    pub fn rel_error(&self) -> f64 {
        (self.estimated - self.measured) / self.measured
    }

    /// "not stated: batch (8 assumed); …" for a row whose source leaves settings open.
    pub fn unstated_note(&self) -> Option<String> {
        (!self.unstated.is_empty()).then(|| format!("not stated: {}", self.unstated))
    }

    /// "+3.2 %": memfit's signed relative error; "0.0 %" when it rounds to zero (no "−0.0").
    ///
    /// ```
    /// let r = |estimated: f64| memfit_core::contract::accuracy::AccuracyRow { set: String::new(), label: String::new(),
    ///     query: String::new(), metric: String::new(), measured: 100.0, estimated, held_out: false,
    ///     unstated: String::new() };
    /// assert_eq!(r(103.2).error_text(), "+3.2 %");
    /// assert_eq!(r(99.99).error_text(), "0.0 %");
    /// assert_eq!(r(98.0).error_text(), "-2.0 %");
    /// ```
    pub fn error_text(&self) -> String {
        let pct = (self.estimated - self.measured) / self.measured * 100.0;
        if (pct * 10.0).round() == 0.0 {
            "0.0 %".to_string()
        } else {
            format!("{pct:+.1} %")
        }
    }
}
