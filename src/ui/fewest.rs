//! The fewest-GPU line next to the verdict ("Fits on 16 × H100 at the earliest …") and
//! its search. The first module draws the line and not the search: the search runs in
//! its own module (`memfit-search`, `src/search.rs`), in a Web Worker ([`super::worker`])
//! that starts after the first result is painted, or, when no worker can run, on the main
//! thread in slices ([`run_sliced`]) after that module is loaded here ([`super::split`]).
//! The answer travels as the line to show and the scenario its link loads
//! ([`crate::present::fewest_answer`], written where the search runs).

use super::explore::run_sliced;
use super::split;
use super::templates::{search_waits, Tpl};
use super::worker::{self, Kind};
use crate::present::read_fewest_answer;
use leptos::prelude::*;
use memfit_core::contract::query::{decode, encode};
use memfit_core::contract::{Settings, View};
use memfit_core::explore::sweep_key;
use memfit_core::scenario::Scenario;
use std::sync::Arc;
use std::time::Duration;
use wasm_bindgen::JsCast;

/// A search's answer: its key, the line to show and the query of the scenario its link
/// loads (with the default view).
type Answer = (Scenario, String, Option<String>);

/// The fewest-GPU search's state (the line next to the verdict), always computed.
#[derive(Clone, Copy)]
pub struct MinSearch {
    /// The fewest-GPU answer for `(key, line, the scenario its link loads)`.
    pub min: RwSignal<Option<Arc<Answer>>>,
    /// The key the page wants.
    pub key: Memo<Scenario>,
    /// Why the search could not run (its module did not load), once that happened.
    pub failed: RwSignal<Option<String>>,
    /// Whether the current key's answer is slow in coming (the worker said so, or the
    /// search runs on this thread): the line then stops showing the previous answer.
    pub overdue: RwSignal<bool>,
}

/// Runs the fewest-GPU search for every scenario. The search may sweep many cluster
/// sizes. In the worker it starts at once (a newer request abandons it there), so its
/// answer can join the deferred panels' frame instead of costing a frame of its own; on
/// the main thread it waits for a pause in the typing.
pub fn use_min_gpus(settings: RwSignal<Settings>, tpl: RwSignal<Tpl>) -> MinSearch {
    let min = RwSignal::new(None::<Arc<Answer>>);
    let failed = RwSignal::new(None::<String>);
    let key = Memo::new(move |_| settings.with(|x| sweep_key(&x.scenario)));
    let overdue = RwSignal::new(false);
    Effect::new(move |first: Option<()>| {
        let k = key.get();
        if overdue.get_untracked() {
            overdue.set(false);
        }
        // A layout the search tries may read the op templates on their way: it waits for
        // them (this runs again when they arrive or fail).
        if tpl.with(|t| search_waits(t, &k)) {
            overdue.set(true);
            return;
        }
        let current = {
            let k = k.clone();
            move || key.with_untracked(|now| *now == k)
        };
        let ask = move || {
            let known = min.with_untracked(|m| m.as_ref().is_some_and(|x| x.0 == k));
            if !current() || known {
                return;
            }
            let (k3, alive3) = (k.clone(), current.clone());
            let here = move || {
                // On this thread the search takes slices between frames: say so at once.
                overdue.set(true);
                search_here(k3, alive3, min, failed)
            };
            let alive5 = current.clone();
            let slow: worker::Slow = Box::new(move || {
                if alive5() {
                    overdue.set(true);
                }
            });
            let (k4, alive4, fallback) = (k.clone(), current.clone(), here.clone());
            let sent = worker::request(
                Kind::Min,
                encode(&k.clone().into()),
                Box::new(move |line, _| match read_fewest_answer(&line) {
                    Some((t, l)) if alive4() => min.set(Some(Arc::new((k4, t, l)))),
                    Some(_) => {}
                    None => fallback(),
                }),
                Some(slow),
            );
            if !sent {
                here();
            }
        };
        if worker::on_main_thread() {
            set_timeout(ask, Duration::from_millis(300));
        } else if first.is_none() {
            // At load, the worker starts after the first result is painted.
            request_animation_frame(move || set_timeout(ask, Duration::ZERO));
        } else {
            ask();
        }
    });
    MinSearch {
        min,
        key,
        failed,
        overdue,
    }
}

/// The fewest-GPU search on the main thread, in slices (no worker could run it): the
/// search's module (`memfit-search`) is loaded on this thread and its `ExploreJob` run.
fn search_here(
    k: Scenario,
    alive: impl Fn() -> bool + 'static,
    min: RwSignal<Option<Arc<Answer>>>,
    failed: RwSignal<Option<String>>,
) {
    let query = encode(&k.clone().into());
    leptos::task::spawn_local(async move {
        let job = match split::search_job(&query, super::templates::text()).await {
            Ok(job) => JsJob(job, false),
            Err(e) => {
                let why = match e.dyn_ref::<js_sys::Error>() {
                    Some(e) => String::from(e.message()),
                    None => e.as_string().unwrap_or_else(|| format!("{e:?}")),
                };
                failed.set(Some(why));
                return;
            }
        };
        run_sliced(job, JsJob::step, alive, move |mut job, _| {
            job.1 = true;
            let line = split::method(&job.0, "finish", &[])
                .ok()
                .and_then(|v| v.as_string());
            if let Some((t, l)) = line.as_deref().and_then(read_fewest_answer) {
                min.set(Some(Arc::new((k, t, l))));
            }
        });
    });
}

/// The search module's `ExploreJob` (a JavaScript object), freed when dropped unless its
/// `finish` (which frees it) was called.
struct JsJob(js_sys::Object, bool);

impl JsJob {
    fn step(&mut self, layouts: u64) -> bool {
        let n = wasm_bindgen::JsValue::from(layouts as u32);
        split::method(&self.0, "step", &[n]).map_or(true, |v| v.as_bool().unwrap_or(true))
    }
}

impl Drop for JsJob {
    fn drop(&mut self) {
        if !self.1 {
            let _ = split::method(&self.0, "free", &[]);
        }
    }
}

/// "Fits on 16 × H100 at the earliest (TP 4 × PP 2 × DP 2, ZeRO-1)", next to the verdict.
/// While the current scenario's answer is on its way the line is `aria-busy` and shows the
/// previous answer until the worker reports the request slow (150 ms, `SLOW_MS` in
/// [`worker`]'s script), then "searching…". The worker answers most keys within a few
/// milliseconds, and the answer is usually the same line: a line that flipped to
/// "searching…" and back cost each keystroke a second layout and paint (issue 39). Its
/// link is one element whose address follows the answer (hidden when there is nothing to
/// load), not rebuilt per keystroke.
#[component]
pub fn MinGpusLine(settings: RwSignal<Settings>, explorer: MinSearch) -> impl IntoView {
    let answer = move || {
        let k = explorer.key.get();
        explorer
            .min
            .with(|m| m.as_ref().filter(|m| m.0 == k).cloned())
    };
    let overdue = explorer.overdue;
    let busy = Memo::new(move |_| answer().is_none() && explorer.failed.with(Option::is_none));
    let text = move || match answer() {
        Some(m) => m.1.clone(),
        None => match explorer.failed.get() {
            Some(why) => format!(
                "Fewest GPUs: the search could not load ({why}). Reload the page to try again."
            ),
            None => match explorer.min.get() {
                Some(prev) if !overdue.get() => prev.1.clone(),
                _ => "Fewest GPUs: searching…".to_string(),
            },
        },
    };
    // The scenario the link loads: the latest answer's, kept while the next one is on its
    // way (a click then does nothing), so the link's address and presence change when an
    // answer arrives, not twice per keystroke.
    let target = Memo::new(move |_| explorer.min.with(|m| m.as_ref().and_then(|m| m.2.clone())));
    let shown = Memo::new(move |_| settings.with(|x| x.view));
    // The answer's query is the link with the default view: decoded and written again only
    // for another view.
    let href = Memo::new(move |_| {
        target.with(|to| {
            to.as_ref().map(|q| {
                let view = shown.get();
                if view == View::default() {
                    return format!("?{q}");
                }
                let mut t = decode(q).0;
                t.view = view;
                format!("?{}", encode(&t))
            })
        })
    });
    let load = move |ev: leptos::ev::MouseEvent| {
        ev.prevent_default();
        if busy.get_untracked() {
            return;
        }
        if let Some(q) = target.get_untracked() {
            let to = decode(&q).0.scenario;
            settings.update(|x| x.scenario = to);
        }
    };
    view! {
        <p class="panel min-gpus" data-testid="min-gpus" aria-live="polite" aria-busy=move || busy.get().then_some("true")>
            {text}
            <span hidden=move || target.with(Option::is_none)>" "<a href=href data-testid="load-min-gpus" on:click=load>"load it"</a></span>
        </p>
    }
}
