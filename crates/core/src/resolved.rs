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
    /// Parameters one token touches: the architecture's, or with a hybrid preset's exact
    /// count that count less the routed experts a token skips (`Ψ − (Ψ_arch − active_arch)`).
    pub active: u64,
}

impl Prepared {
    /// Resolves the scenario's model: `Ψ` is the explicit `params=`, else a hybrid preset's
    /// exact count ([`crate::model::Exact`]) while its shape is not overridden, else the
    /// architecture's count (likewise the largest layer).
    pub fn of(s: &Scenario) -> Prepared {
        let arch = s.arch();
        let counts = arch.params();
        let exact = s.preset().exact.filter(|_| !s.model.overrides.any());
        let skipped = counts.total - counts.active;
        Prepared {
            active: exact.map_or(counts.active, |e| e.params.saturating_sub(skipped)),
            psi: s
                .model
                .params
                .or(exact.map(|e| e.params))
                .unwrap_or(counts.total),
            largest: s
                .model
                .largest_layer
                .or(exact.map(|e| e.largest_layer))
                .unwrap_or(counts.largest_layer),
            arch,
            counts,
        }
    }
}
