//! The sixth wasm module's entry: the serving engines' start-up programs
//! (`memfit_core::serve`: vLLM, SGLang, TensorRT-LLM, llama.cpp) and the query decoder they
//! start from, and nothing else: no page, no Leptos view. The first module loads it the first
//! time a scenario serves ([`memfit::ui`]'s `engines`) and asks it for each plan
//! (`memfit_core::serve::set_planner`), so that it links none of the engines. The other
//! modules compute their plans themselves (`memfit_core::serve::compute_here` in their `main`).

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
}

/// Computes the plans it is asked for here (`memfit_core::serve::compute_here`).
fn main() {
    #[cfg(target_arch = "wasm32")]
    memfit_core::serve::compute_here();
}
