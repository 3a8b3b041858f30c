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
use memfit_core::contract::query::encode;
use memfit_core::contract::Settings;
use memfit_core::explore::sweep_key;
use memfit_core::scenario::Scenario;
use std::sync::Arc;
use std::time::Duration;
use wasm_bindgen::JsCast;

/// A search's answer: its key, the line to show and the scenario its link loads.
type Answer = (Scenario, String, Option<Scenario>);

/// The fewest-GPU search's state (the line next to the verdict), always computed.
#[derive(Clone, Copy)]
pub struct MinSearch {
    /// The fewest-GPU answer for `(key, line, the scenario its link loads)`.
    pub min: RwSignal<Option<Arc<Answer>>>,
    /// The key the page wants.
    pub key: Memo<Scenario>,
    /// Why the search could not run (its module did not load), once that happened.
    pub failed: RwSignal<Option<String>>,
}

/// Runs the fewest-GPU search for every scenario. The search may sweep many cluster
/// sizes. In the worker it starts at once (a newer request abandons it there), so its
/// answer can join the deferred panels' frame instead of costing a frame of its own; on
/// the main thread it waits for a pause in the typing.
pub fn use_min_gpus(settings: RwSignal<Settings>, tpl: RwSignal<Tpl>) -> MinSearch {
    let min = RwSignal::new(None::<Arc<Answer>>);
    let failed = RwSignal::new(None::<String>);
    let key = Memo::new(move |_| settings.with(|x| sweep_key(&x.scenario)));
    Effect::new(move |first: Option<()>| {
        let k = key.get();
        // A layout the search tries may read the op templates on their way: it waits for
        // them (this runs again when they arrive or fail).
        if tpl.with(|t| search_waits(t, &k)) {
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
            let here = move || search_here(k3, alive3, min, failed);
            let (k4, alive4, fallback) = (k.clone(), current.clone(), here.clone());
            let sent = worker::request(
                Kind::Min,
                encode(&k.clone().into()),
                Box::new(move |line, _| match read_fewest_answer(&line) {
                    Some((t, l)) if alive4() => min.set(Some(Arc::new((k4, t, l)))),
                    Some(_) => {}
                    None => fallback(),
                }),
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
    MinSearch { min, key, failed }
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
#[component]
pub fn MinGpusLine(settings: RwSignal<Settings>, explorer: MinSearch) -> impl IntoView {
    let answer = move || {
        let k = explorer.key.get();
        explorer
            .min
            .with(|m| m.as_ref().filter(|m| m.0 == k).cloned())
    };
    let text = move || match answer() {
        Some(m) => m.1.clone(),
        None => match explorer.failed.get() {
            None => "Fewest GPUs: searching…".to_string(),
            Some(why) => format!(
                "Fewest GPUs: the search could not load ({why}). Reload the page to try again."
            ),
        },
    };
    let link = move || {
        answer().and_then(|m| {
            let to = m.2.clone()?;
            let url = settings.with(|x| {
                let mut t = x.clone();
                t.scenario = to.clone();
                format!("?{}", encode(&t))
            });
            Some(view! { " " <a href=url data-testid="load-min-gpus" on:click=move |ev| { ev.prevent_default(); settings.update(|x| x.scenario = to.clone()); }>"load it"</a> })
        })
    };
    view! {
        <p class="panel min-gpus" data-testid="min-gpus" aria-live="polite">{text}{link}</p>
    }
}
