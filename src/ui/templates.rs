//! The op-level allocator's templates (`op_templates.txt`: 397 KB, about 60 KB gzip), fetched
//! from the page's own origin the first time a scenario may read them, never at the start of
//! one that does not (issue 39: the first screen ships without them).
//!
//! Which scenarios read them is known without them (`memfit_core::opstream::candidate`: a
//! single-GPU `framework=pytorch` training run of a traced family, its fragmentation replayed
//! on its op-level stream instead of the flat share; `may_read`: a run whose fewest-GPU search
//! or layout sweep tries such a layout). Once fetched, the text is installed in every wasm
//! instance that estimates, each with statics of its own: the allocator's module
//! (`memfit-replay`, `src/replay.rs`, fetched beside the text), which computes this module's
//! replays (`memfit_core::opstream::set_replayer`: the first module links neither the
//! templates' reader nor the replay), the fewest-GPU search's worker (or its module on the
//! main thread), the second module ([`super::split`]) and its sweep's worker
//! ([`super::worker::set_templates`]); each then computes again.
//!
//! # While they load
//! The verdict is held: its headline says the allocator is being replayed and it shows no
//! per-GPU figure, no headroom, no largest share and no fits / does not fit until the replay's
//! figure is there; the chart is marked busy and its drawing hidden (its space kept), and the
//! fewest-GPU search waits.
//! A figure shown and then changed (the flat share and the replay differ, by much more than
//! the replay misses the measured runs: docs/allocator.md) reads as the answer, and a run near
//! the GPU's limit could flip from "fits" to "does not fit": holding the verdict for the fetch
//! (one request to this origin) shows nothing that is not the final answer. A failed fetch is said
//! in the verdict, which then shows the flat share's figure and says that it is.

use leptos::prelude::*;
use memfit_core::opstream;
use memfit_core::scenario::Scenario;
use std::cell::RefCell;
use wasm_bindgen::JsValue;

/// The file, beside the page (Trunk copies `crates/core/data/op_templates.txt`).
const FILE: &str = "op_templates.txt";

/// Where the templates are.
#[derive(Clone, Debug, PartialEq)]
pub enum Tpl {
    /// Not asked for: no scenario has needed them yet.
    Idle,
    /// Being fetched.
    Loading,
    /// Installed here and sent to the other instances.
    Ready,
    /// The fetch or the parse failed: why.
    Failed(String),
}

impl Tpl {
    /// Whether they may still come (a scenario that reads them waits).
    fn coming(&self) -> bool {
        matches!(self, Tpl::Idle | Tpl::Loading)
    }
}

thread_local! {
    /// The text, once installed here (a JavaScript string, handed to the other instances).
    static TEXT: RefCell<Option<JsValue>> = const { RefCell::new(None) };
    /// The fetch in flight or done (the second module's mount waits for it).
    static LOAD: RefCell<Option<js_sys::Promise>> = const { RefCell::new(None) };
    /// The allocator's module, once the text is installed in it.
    static REPLAY: RefCell<Option<js_sys::Object>> = const { RefCell::new(None) };
    /// Why the fetch failed, once it did.
    static FAILED: RefCell<Option<String>> = const { RefCell::new(None) };
    /// The state, for a replay that fails after the load ([`replay_there`]).
    static STATE: std::cell::Cell<Option<RwSignal<Tpl>>> = const { std::cell::Cell::new(None) };
}

/// Whether the estimate of `s` reads the templates: its fragmentation is their replay.
pub fn reads(s: &Scenario) -> bool {
    s.runtime.frag_pct != 0 && opstream::candidate(s).is_some()
}

/// The templates' state; they are fetched the first time the scenario may read them
/// ([`opstream::may_read`]).
pub fn use_templates(scenario: Memo<Scenario>) -> RwSignal<Tpl> {
    let state = RwSignal::new(Tpl::Idle);
    STATE.set(Some(state));
    Effect::new(move |_| {
        let wanted = scenario.with(opstream::may_read);
        if !wanted || state.with_untracked(|t| *t != Tpl::Idle) {
            return;
        }
        state.set(Tpl::Loading);
        let done = wasm_bindgen_futures::future_to_promise(async move {
            match load().await {
                Ok(()) => state.set(Tpl::Ready),
                Err(why) => {
                    FAILED.with_borrow_mut(|f| *f = Some(why.clone()));
                    state.set(Tpl::Failed(why));
                }
            }
            Ok(JsValue::UNDEFINED)
        });
        LOAD.with_borrow_mut(|l| *l = Some(done));
    });
    state
}

/// Fetches the text and the allocator's module side by side, installs the text in that
/// module and asks it for this module's replays ([`replay_there`]), and hands the text to the
/// workers (the page hands it to the second module when the state changes,
/// `super::split::send_templates`).
async fn load() -> Result<(), String> {
    let url = super::url::beside_first(FILE).unwrap_or_else(|| FILE.to_string());
    let module = super::split::replay_module();
    let text = super::net::fetch_own(&url).await?;
    let m = module.await.map_err(|e| {
        let why = e.as_string().unwrap_or_else(|| format!("{e:?}"));
        format!("the allocator's module could not load: {why}")
    })?;
    let js = JsValue::from_str(&text);
    let installed = super::split::export(&m, "install_templates", std::slice::from_ref(&js));
    if installed.ok().and_then(|v| v.as_bool()) != Some(true) {
        return Err(format!("{FILE} does not parse"));
    }
    REPLAY.with_borrow_mut(|r| *r = Some(m));
    opstream::set_replayer(replay_there);
    TEXT.with_borrow_mut(|t| *t = Some(js.clone()));
    super::worker::set_templates(&js);
    Ok(())
}

/// A run's replay, computed by the allocator's module (a synchronous call into that
/// instance, which remembers its last replays); `None` where it gives none.
/// A call that throws (the module stopped) is said as a failed load, never taken for a run
/// the templates do not hold: from then on the flat share, and the verdict says why.
fn replay_there(run: &opstream::Run) -> Option<opstream::Replayed> {
    if FAILED.with_borrow(Option::is_some) {
        return None;
    }
    let out = REPLAY
        .with_borrow(|m| super::split::export(m.as_ref()?, "replay", &[run.to_line().into()]).ok());
    match out {
        Some(v) => opstream::Replayed::from_line(&v.as_string()?),
        None => {
            let why = "the allocator's module stopped with an error".to_string();
            FAILED.with_borrow_mut(|f| *f = Some(why.clone()));
            // Not while the estimate that asked is being computed: after it.
            if let Some(state) = STATE.get() {
                set_timeout(
                    move || state.set(Tpl::Failed(why)),
                    std::time::Duration::ZERO,
                );
            }
            None
        }
    }
}

/// Waits for the fetch when one is in flight (at once otherwise), then says what the other
/// instances are told ([`outcome`]).
pub async fn settled() -> Option<JsValue> {
    if let Some(p) = LOAD.with_borrow(Clone::clone) {
        let _ = wasm_bindgen_futures::JsFuture::from(p).await;
    }
    outcome()
}

/// What the other instances are told once the fetch has settled: the text (`Some`), its
/// failure (`Some(null)`), or nothing yet (`None`).
pub fn outcome() -> Option<JsValue> {
    if let Some(t) = TEXT.with_borrow(Clone::clone) {
        return Some(t);
    }
    FAILED.with_borrow(|f| f.as_ref().map(|_| JsValue::NULL))
}

/// The text, once installed here.
pub fn text() -> Option<JsValue> {
    TEXT.with_borrow(Clone::clone)
}

/// Whether the figures of `s` are held: it reads templates that may still come.
pub fn holds(state: &Tpl, s: &Scenario) -> bool {
    state.coming() && reads(s)
}

/// Whether the fewest-GPU search of `s` waits: a layout it tries may read templates that may
/// still come.
pub fn search_waits(state: &Tpl, s: &Scenario) -> bool {
    state.coming() && opstream::may_read(s)
}

/// What the verdict says when the templates failed and `s` reads them.
pub fn failure(state: &Tpl, s: &Scenario) -> Option<String> {
    match state {
        Tpl::Failed(why) if reads(s) => Some(format!(
            "The allocator's op templates could not load ({why}): the fragmentation here is the \
             flat {} % share of the allocated peak, not the caching allocator replayed on this \
             run's allocations. Reload the page to try again.",
            s.runtime.frag_pct
        )),
        _ => None,
    }
}
