//! What a link holds: the scenario (every input of the estimate) and how the result is
//! shown (units, the step timeline in the CLI's JSON, an inverse solve).

use crate::scenario::{Scenario, Solve};
use crate::units::Units;
use serde::{Deserialize, Serialize};

/// How a result is shown and what is reported beside it; not an input of the estimate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct View {
    /// `units`: display units.
    pub units: Units,
    /// `timeline`: add the step timeline (every allocation and free) to the CLI's JSON.
    pub timeline: bool,
    /// `solve`: an inverse solve to report.
    pub solve: Solve,
    /// `time`: add the step-time model (step seconds, tokens/s, MFU, breakdown) to the JSON.
    #[serde(default)]
    pub time: bool,
    /// `fitmap`: what colours the fit map's cells.
    #[serde(default)]
    pub fitmap: FitColour,
}

crate::spelled! {
    /// What colours the fit map's cells.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum FitColour {
        /// The most headroom any layout of the cell leaves.
        #[default]
        Headroom = "headroom", "headroom", "";
        /// The fastest fitting layout's predicted tokens per second per GPU.
        Speed = "speed", "tokens/s per GPU", "training only";
    }
}

/// Everything a query string holds: the page's state, the CLI's input.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// The estimate's input.
    pub scenario: Scenario,
    /// How it is shown.
    pub view: View,
}

impl From<Scenario> for Settings {
    fn from(scenario: Scenario) -> Self {
        Settings {
            scenario,
            view: View::default(),
        }
    }
}
