//! The serving engines' start-up programs (`memfit_core::serve`: vLLM, SGLang, TensorRT-LLM,
//! llama.cpp; about 25 KB of code), which only `mode=serve` runs: the first module links
//! none of them (issue 39: the first screen ≤ 300 KB). The first time the scenario is in
//! `mode=serve` (a link, or the mode selected) it loads their module (`memfit-serve`,
//! `src/serve.rs`: the engines and the query decoder, no page) and asks it for each plan
//! (`memfit_core::serve::set_planner`): a synchronous call with the scenario's query string
//! (`decode(encode(s)) == s`), answered with `Plan::to_line`. Every other module computes its
//! plans itself (`memfit_core::serve::compute_here`, in its `main`).
//!
//! # While it loads
//! The verdict of a `mode=serve` scenario is held, as for the op templates
//! ([`super::templates`]): no per-GPU figure, no headroom, no largest share and no fits / does
//! not fit until the engine's plan is there; the chart is marked busy and its drawing hidden.
//! There is no figure to show instead (without the engine's start-up there is no serving
//! estimate), so a failed load keeps it held and says why.

use leptos::prelude::*;
use memfit_core::contract::query::encode;
use memfit_core::contract::Settings;
use memfit_core::estimate::Prepared;
use memfit_core::scenario::{Layout, Mode, Scenario};
use memfit_core::serve::{self, Plan};
use std::cell::{Cell, RefCell};

/// Where the module that computes plans is.
#[derive(Clone, Debug, PartialEq)]
pub enum Eng {
    /// Not asked for: no scenario has been in `mode=serve` yet.
    Idle,
    /// Being fetched.
    Loading,
    /// Loaded: it computes this module's plans.
    Ready,
    /// The load failed, or the module stopped with an error: why.
    Failed(String),
}

thread_local! {
    /// The module's namespace, once loaded.
    static MODULE: RefCell<Option<js_sys::Object>> = const { RefCell::new(None) };
    /// Why it failed, once it did (no plan is asked of it after that).
    static FAILED: RefCell<Option<String>> = const { RefCell::new(None) };
    /// The state, for a call that fails after the load ([`plan_there`]).
    static STATE: Cell<Option<RwSignal<Eng>>> = const { Cell::new(None) };
}

/// Whether the estimate of `s` runs an engine's start-up.
pub fn serves(s: &Scenario) -> bool {
    s.workload.mode == Mode::Serve
}

/// The module's state; it is loaded the first time the scenario is in `mode=serve`.
pub fn use_engines(scenario: Memo<Scenario>) -> RwSignal<Eng> {
    let state = RwSignal::new(Eng::Idle);
    STATE.set(Some(state));
    Effect::new(move |_| {
        if !scenario.with(serves) || state.with_untracked(|t| *t != Eng::Idle) {
            return;
        }
        state.set(Eng::Loading);
        wasm_bindgen_futures::spawn_local(async move {
            match super::split::serve_module().await {
                Ok(m) => {
                    MODULE.with_borrow_mut(|x| *x = Some(m));
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

/// The plan of `s`, computed by the module that holds the engines; `None` (the pending
/// plan, its verdict held) where it cannot answer. The first module asks only for the
/// scenario's own layout (`estimate`); another layout is not sent.
fn plan_there(s: &Scenario, _p: &Prepared, l: &Layout) -> Option<Plan> {
    if FAILED.with_borrow(Option::is_some) || *l != s.layout() {
        return None;
    }
    let query = encode(&Settings::from(s.clone()));
    let out = MODULE.with_borrow(|m| {
        m.as_ref()
            .map(|m| super::split::export(m, "plan", &[query.into()]))
    })?;
    let plan = out.ok().and_then(|v| Plan::from_line(&v.as_string()?));
    if plan.is_none() {
        fail("its module stopped with an error".into());
    }
    plan
}

/// Whether the figures of `s` are held: it serves and its plans are not computed yet (or
/// cannot be).
pub fn holds(state: &Eng, s: &Scenario) -> bool {
    serves(s) && *state != Eng::Ready
}

/// What the verdict says when the module failed and `s` serves.
pub fn failure(state: &Eng, s: &Scenario) -> Option<String> {
    match state {
        Eng::Failed(why) if serves(s) => Some(format!(
            "The serving engines' start-up model could not load ({why}): no serving figure can \
             be shown. Reload the page to try again."
        )),
        _ => None,
    }
}
