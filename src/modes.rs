//! The sixth wasm module's entry: the ledgers memfit's training stages do not compute
//! (`memfit_core::estimate::whole_ledger_line`: inference, the serving engines' start-up
//! programs, DeepSpeed's estimators and Megatron-LM's formula) and the query decoder they
//! start from, and nothing else: no page, no Leptos view. The first module loads it the first
//! time a scenario reads one ([`memfit::ui`]'s `engines`) and asks it for each
//! (`memfit_core::estimate::set_remote`, `memfit_core::serve::set_planner`), so that it links
//! none of them. The other modules compute them themselves
//! (`memfit_core::estimate::compute_here` in their `main`).

#[cfg(target_arch = "wasm32")]
mod exports {
    use memfit_core::contract::query::decode;
    use memfit_core::estimate::Prepared;
    use memfit_core::serve::Plan;
    use wasm_bindgen::prelude::*;

    /// The serving plan of the scenario of `query` (its own layout) as [`Plan::to_line`]
    /// writes it.
    #[wasm_bindgen]
    pub fn plan(query: &str) -> String {
        memfit::ui::panic::install();
        let s = decode(query).0.scenario;
        let p = Prepared::of(&s);
        Plan::of(&s, &p, &s.layout()).to_line()
    }

    /// The whole ledger of the scenario of `query` as
    /// [`memfit_core::estimate::whole_ledger_line`] writes it.
    #[wasm_bindgen]
    pub fn whole(query: &str) -> String {
        memfit::ui::panic::install();
        memfit_core::estimate::whole_ledger_line(&decode(query).0.scenario)
    }
}

/// Computes what it is asked here (`memfit_core::estimate::compute_here`).
fn main() {
    #[cfg(target_arch = "wasm32")]
    memfit_core::estimate::compute_here();
}
