//! The scenario's model, resolved once: the architecture with its overrides, its
//! parameter counts, and the `Ψ` and largest layer every mechanism reads.

use crate::model::{Arch, ParamCount};
use crate::scenario::Scenario;

/// What every mechanism reads about the model, resolved once per scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct Prepared {
    /// The architecture with the scenario's overrides.
    pub arch: Arch,
    /// Its parameter counts.
    pub counts: ParamCount,
    /// `Ψ`: the explicit `params=` or the architecture's total.
    pub psi: u64,
    /// `L`: the explicit `largest_layer=` or the architecture's largest module.
    pub largest: u64,
}

impl Prepared {
    /// Resolves the scenario's model.
    pub fn of(s: &Scenario) -> Prepared {
        let arch = s.arch();
        let counts = arch.params();
        Prepared {
            psi: s.model.params.unwrap_or(counts.total),
            largest: s.model.largest_layer.unwrap_or(counts.largest_layer),
            arch,
            counts,
        }
    }
}
