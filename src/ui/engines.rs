//! The ledgers memfit's training stages do not compute: inference, the serving engines'
//! start-up programs (vLLM, SGLang, TensorRT-LLM, llama.cpp) and the other tools' conventions
//! (DeepSpeed's estimators, Megatron-LM's formula). A training link never runs them, and they
//! are about 20 KB of the first module gzipped: it links none of them (issue 39: the first
//! screen ≤ 300 KB). The first time the scenario reads one (a link, or a mode or convention
//! selected: `memfit_core::estimate::has_whole_ledger`) it loads their module
//! (`memfit-modes`, `src/modes.rs`: those ledgers and the query decoder, no page) and asks it
//! for each (`memfit_core::estimate::set_remote`, `memfit_core::serve::set_planner`): a
//! synchronous call with the scenario's query string (`decode(encode(s)) == s`), answered
//! with the items as one line. Every other module computes them itself
//! (`memfit_core::estimate::compute_here`, in its `main`).
//!
//! # While it loads
//! The verdict of such a scenario is held, as for the op templates ([`super::templates`]): no
//! per-GPU figure, no headroom, no largest share and no fits / does not fit until the ledger
//! is there; the chart is marked busy and its drawing hidden. There is no figure to show
//! instead (without the ledger there is no estimate), so a failed load keeps it held and says
//! why.

use leptos::prelude::*;
use memfit_core::contract::query::encode;
use memfit_core::contract::Settings;
use memfit_core::estimate::{has_whole_ledger, Prepared};
use memfit_core::scenario::{Layout, Scenario};
use memfit_core::serve::{self, Plan};
use std::cell::{Cell, RefCell};

/// Where the module is.
#[derive(Clone, Debug, PartialEq)]
pub enum Eng {
    /// Not asked for: no scenario has read a whole ledger yet.
    Idle,
    /// Being fetched.
    Loading,
    /// Loaded: it computes this module's whole ledgers and serving plans.
    Ready,
    /// The load failed, or the module stopped with an error: why.
    Failed(String),
}

thread_local! {
    /// The module's namespace, once loaded.
    static MODULE: RefCell<Option<js_sys::Object>> = const { RefCell::new(None) };
    /// Why it failed, once it did (nothing is asked of it after that).
    static FAILED: RefCell<Option<String>> = const { RefCell::new(None) };
    /// The state, for a call that fails after the load ([`ask`]).
    static STATE: Cell<Option<RwSignal<Eng>>> = const { Cell::new(None) };
}

/// The module's state; it is loaded the first time the scenario reads a whole ledger.
pub fn use_engines(scenario: Memo<Scenario>) -> RwSignal<Eng> {
    let state = RwSignal::new(Eng::Idle);
    STATE.set(Some(state));
    Effect::new(move |_| {
        if !scenario.with(has_whole_ledger) || state.with_untracked(|t| *t != Eng::Idle) {
            return;
        }
        state.set(Eng::Loading);
        wasm_bindgen_futures::spawn_local(async move {
            match super::split::modes_module().await {
                Ok(m) => {
                    MODULE.with_borrow_mut(|x| *x = Some(m));
                    memfit_core::estimate::set_remote(whole_there);
                    serve::set_planner(plan_there);
                    state.set(Eng::Ready);
                }
                Err(e) => {
                    let why = e.as_string().unwrap_or_else(|| format!("{e:?}"));
                    fail(format!("its module could not load: {why}"));
                }
            }
        });
    });
    state
}

/// Records the failure and says it (after the estimate being computed, never inside it).
fn fail(why: String) {
    FAILED.with_borrow_mut(|f| *f = Some(why.clone()));
    if let Some(state) = STATE.get() {
        set_timeout(
            move || state.set(Eng::Failed(why)),
            std::time::Duration::ZERO,
        );
    }
}

/// The module's export `name` for `s` (its query string); `None` where it cannot answer,
/// and a failure said where it throws.
fn ask(name: &str, s: &Scenario) -> Option<String> {
    if FAILED.with_borrow(Option::is_some) {
        return None;
    }
    let query = encode(&Settings::from(s.clone()));
    let out = MODULE.with_borrow(|m| {
        m.as_ref()
            .map(|m| super::split::export(m, name, &[query.into()]))
    })?;
    let line = out.ok().and_then(|v| v.as_string());
    if line.is_none() {
        fail("its module stopped with an error".into());
    }
    line
}

/// The whole ledger of `s`, as a line ([`memfit_core::estimate::whole_ledger_line`]).
fn whole_there(s: &Scenario) -> Option<String> {
    ask("whole", s)
}

/// The plan of `s`; the first module asks only for the scenario's own layout (`estimate`).
fn plan_there(s: &Scenario, _p: &Prepared, l: &Layout) -> Option<Plan> {
    if *l != s.layout() {
        return None;
    }
    Plan::from_line(&ask("plan", s)?)
}

/// Whether the figures of `s` are held: it reads a whole ledger not computed yet (or that
/// cannot be).
pub fn holds(state: &Eng, s: &Scenario) -> bool {
    has_whole_ledger(s) && *state != Eng::Ready
}

/// What the verdict says when the module failed and `s` reads a whole ledger.
pub fn failure(state: &Eng, s: &Scenario) -> Option<String> {
    match state {
        Eng::Failed(why) if has_whole_ledger(s) => Some(format!(
            "The estimator of inference, serving and DeepSpeed's and Megatron's formulas could \
             not load ({why}): no figure can be shown for this scenario. Reload the page to try \
             again."
        )),
        _ => None,
    }
}
