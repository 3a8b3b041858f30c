//! The layout explorer off the main thread (issue 8: "run off the main thread so that
//! typing never waits for it").
//!
//! Web Workers, one for sweeps and one for the fewest-GPU search. The sweep's worker runs
//! the module that started it (the second, [`super::split`]): the page posts the
//! `WebAssembly.Module` it was instantiated from (no second download, no second compile)
//! and the URL of its JS glue; the worker instantiates it (`main` sees no `window` and
//! mounts nothing). The search's worker, started by the first module once its first
//! result is painted, runs a module of its own, `memfit-search` (`src/search.rs`: the
//! search and the query codec, no page), which it fetches: the first module carries the
//! search's answer, not the search. Each runs each request as an [`ExploreJob`]. A request
//! is a query string (the URL contract: `decode(encode(s)) == s`), the answer JSON (a
//! sweep) or one line of text (the search). The job runs
//! in steps with a pause between them, so a newer request of the same kind abandons
//! an older one within a step (the fewest-GPU search may try many cluster sizes), and
//! the page drops any answer that a newer request superseded. Each worker starts once.
//!
//! When a worker cannot be started (no module workers, no preload link) or fails, the
//! caller runs the job on the main thread in slices instead ([`super::explore`]).

use js_sys::{Array, Object, Reflect};
use memfit_core::contract::query::decode;
use memfit_core::explore::{MinGpusJob, SweepJob};
use memfit_core::scenario::Scenario;
use std::cell::RefCell;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{Blob, BlobPropertyBag, MessageEvent, Url, Worker, WorkerOptions, WorkerType};

/// The worker's script: import the page's glue, instantiate the posted module, then
/// run the latest request as an [`ExploreJob`] in steps, yielding between them so a
/// newer request (which replaces `next`) abandons it. A request still running 150 ms
/// after it arrived is reported once as `slow` (the page's line then says it searches,
/// with no timer of its own per keystroke). The op templates' text
/// ([`set_templates`]), with the module or later, is installed in the worker's module
/// (`install_templates`) before any request that follows it runs.
const SCRIPT: &str = r#"let m = null, next = null, busy = false, tpl = null;
const pause = () => new Promise((r) => setTimeout(r, 0));
const SLOW_MS = 150;
onmessage = async ({ data }) => {
  if (!data.js && !data.templates) data.at = performance.now();
  if (data.templates) { tpl = data.templates; if (m) m.install_templates(tpl); if (!data.js) return; }
  if (data.js) {
    try {
      const mod = await import(data.js); await mod.default({ module_or_path: data.module });
      if (tpl) mod.install_templates(tpl);
      m = mod;
    } catch (e) { postMessage({ failed: String(e) }); return; }
  } else { next = data; }
  if (busy || !m) return;
  busy = true;
  while (next) {
    const d = next; next = null;
    try {
      const job = new m.ExploreJob(d.kind, d.query);
      let ms = 0, done = false, told = false;
      for (;;) {
        const t0 = performance.now();
        done = job.step(20000);
        ms += performance.now() - t0;
        if (done) break;
        if (!told && performance.now() - d.at > SLOW_MS) { told = true; postMessage({ id: d.id, slow: true }); }
        await pause();
        if (next) break;
      }
      if (done) postMessage({ id: d.id, out: job.finish(), ms }); else job.free();
    } catch (e) { postMessage({ id: d.id, failed: String(e) }); break; }
    await pause();
  }
  busy = false;
};"#;

/// The page searches the fewest GPUs up to this many nodes (the CLI: 1024).
pub const PAGE_MAX_NODES: u32 = 128;
/// Layouts a sweep keeps for the best-layouts table.
pub const LISTED: usize = 50;

/// A job run in steps: the fewest-GPU search or a sweep. A trait object, so that a
/// binary that never starts a sweep links none of its code ([`ExploreJob::min_only`]).
trait Steps {
    fn step(&mut self, layouts: u32) -> bool;
    fn finish(self: Box<Self>) -> String;
}

/// The fewest-GPU search and the scenario it searches for (its line names the GPU and loads
/// the layout found).
struct MinJob(MinGpusJob, Scenario);

impl Steps for MinJob {
    fn step(&mut self, layouts: u32) -> bool {
        self.0.step(layouts.into())
    }
    /// The line the page shows and the scenario its link loads
    /// ([`crate::present::fewest_answer`]: the first module reads neither the answer nor
    /// the layouts' descriptions).
    fn finish(self: Box<Self>) -> String {
        let MinJob(job, s) = *self;
        crate::present::fewest_answer(&job.finish(), &s)
    }
}

impl Steps for SweepJob {
    fn step(&mut self, layouts: u32) -> bool {
        SweepJob::step(self, layouts.into())
    }
    /// JSON.
    fn finish(self: Box<Self>) -> String {
        serde_json::to_string(&SweepJob::finish(*self)).unwrap_or_default()
    }
}

/// One explorer job inside the worker, run in steps (exported to the worker's script by
/// [`export_explore_job`](crate::export_explore_job) in each module that starts a worker):
/// `kind = "sweep"`: the [`memfit_core::explore::Sweep`] of the query's scenario with
/// the best [`LISTED`] layouts, as JSON; `kind = "min"`: its
/// [`memfit_core::explore::MinGpus`] up to [`PAGE_MAX_NODES`] nodes, as the line the page
/// shows ([`crate::present::fewest_answer`]).
pub struct ExploreJob(Box<dyn Steps>);

impl ExploreJob {
    /// Starts the job of `kind` for the scenario of `query`.
    pub fn new(kind: &str, query: &str) -> ExploreJob {
        if kind == "min" {
            return ExploreJob::min_only(kind, query);
        }
        let s = decode(query).0.scenario;
        ExploreJob(Box::new(SweepJob::new(&s, Some(LISTED), false)))
    }

    /// Starts the fewest-GPU search for the scenario of `query`, whatever `kind` says: for
    /// the search's module (`memfit-search`), whose worker is asked for nothing else (it
    /// then links no sweep, and no JSON writer for one).
    pub fn min_only(_kind: &str, query: &str) -> ExploreJob {
        let s = decode(query).0.scenario;
        ExploreJob(Box::new(MinJob(MinGpusJob::new(&s, PAGE_MAX_NODES), s)))
    }

    /// Evaluates about `layouts` more layouts; `true` when the job is finished.
    pub fn step(&mut self, layouts: u32) -> bool {
        self.0.step(layouts)
    }

    /// The answer: a sweep as JSON, the fewest-GPU search as one line.
    pub fn finish(self) -> String {
        self.0.finish()
    }
}

/// Exports [`ExploreJob`] to JavaScript as `ExploreJob` (`new`, `step`, `finish`), in the
/// binary that invokes it: the second module and the search's module do, the first and the
/// importer's modules do not (an export in this library would be kept, with the whole
/// explorer, in every binary).
/// `$start` is the constructor JavaScript's `new` calls: `new` (every kind) or `min_only`.
#[macro_export]
macro_rules! export_explore_job {
    ($start:ident) => {
        /// [`memfit::ui::worker::ExploreJob`], exported to the worker's script.
        #[wasm_bindgen::prelude::wasm_bindgen]
        pub struct ExploreJob($crate::ui::worker::ExploreJob);

        /// [`memfit::ui::worker::install_templates`], exported to the worker's script.
        #[wasm_bindgen::prelude::wasm_bindgen]
        pub fn install_templates(text: &str) -> bool {
            $crate::ui::worker::install_templates(text)
        }

        #[wasm_bindgen::prelude::wasm_bindgen]
        impl ExploreJob {
            /// Starts the job for the scenario of `query` (`kind`: "sweep" or "min").
            #[wasm_bindgen::prelude::wasm_bindgen(constructor)]
            pub fn new(kind: &str, query: &str) -> ExploreJob {
                ExploreJob($crate::ui::worker::ExploreJob::$start(kind, query))
            }

            /// Evaluates about `layouts` more layouts; `true` when the job is finished.
            pub fn step(&mut self, layouts: u32) -> bool {
                self.0.step(layouts)
            }

            /// The answer (a sweep as JSON, the fewest-GPU search as one line).
            pub fn finish(self) -> String {
                self.0.finish()
            }
        }
    };
}

/// Installs the op templates' text in this module's instance (a worker's, or the search's
/// module on the main thread): see [`memfit_core::opstream::install`]. `false` when it does
/// not parse (the flat share is then used, as the page says).
pub fn install_templates(text: &str) -> bool {
    memfit_core::opstream::install(text).is_ok()
}

/// The two kinds of request, one worker each.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    /// One cluster's sweep.
    Sweep,
    /// The fewest-GPU search.
    Min,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Sweep => "sweep",
            Kind::Min => "min",
        }
    }
}

/// The answer's callback: `(json, milliseconds the job took in the worker)`.
type Done = Box<dyn FnOnce(String, f64)>;

struct Lane {
    worker: Worker,
    /// Kept alive while the worker is.
    _on_message: Closure<dyn FnMut(MessageEvent)>,
    _on_error: Closure<dyn FnMut(web_sys::Event)>,
    /// The latest request and its callback.
    waiting: Option<(u32, Done)>,
    /// The latest request's callback for the `slow` notice, if it asked for one.
    slow: Option<(u32, Slow)>,
}

/// Called once when the worker reports that a request is still running after 150 ms.
pub type Slow = Box<dyn FnOnce()>;

thread_local! {
    static LANES: RefCell<[Option<Lane>; 2]> = const { RefCell::new([None, None]) };
    static NEXT_ID: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
    /// Set when a worker could not start or failed: from then on the main thread computes.
    static BROKEN: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// The URL of this module's JS glue, when it is not the page's `modulepreload` link
    /// (the second module's, [`super::split`]).
    static GLUE: RefCell<Option<String>> = const { RefCell::new(None) };
    /// The op templates' text, once fetched ([`set_templates`]).
    static TEMPLATES: RefCell<Option<JsValue>> = const { RefCell::new(None) };
}

/// The op templates' text (a JavaScript string), fetched by the page: sent to every worker
/// running now, and with the module to every worker started later, before any later request
/// (each worker's module is an instance of its own, with its own templates).
pub fn set_templates(text: &JsValue) {
    TEMPLATES.with_borrow_mut(|t| *t = Some(text.clone()));
    let msg = Object::new();
    let _ = Reflect::set(&msg, &"templates".into(), text);
    LANES.with_borrow(|l| {
        for lane in l.iter().flatten() {
            let _ = lane.worker.post_message(&msg);
        }
    });
}

/// Tells the workers to load this module from `url` (the second module's glue).
pub fn set_glue(url: String) {
    GLUE.with_borrow_mut(|g| *g = Some(url));
}

/// Whether the explorer runs on the main thread (no worker could start, or one failed).
pub fn on_main_thread() -> bool {
    BROKEN.get()
}

/// Sends `query` to the worker of `kind`; `done` gets the answer unless a newer request
/// of the same kind is sent first; `slow`, if given, is called once if the worker reports
/// the request still running after 150 ms. Returns `false` when no worker can run it (the
/// caller then computes on the main thread).
pub fn request(kind: Kind, query: String, done: Done, slow: Option<Slow>) -> bool {
    if BROKEN.get() {
        return false;
    }
    let slot = kind as usize;
    if LANES.with_borrow(|l| l[slot].is_none()) {
        match start(kind) {
            Some(lane) => LANES.with_borrow_mut(|l| l[slot] = Some(lane)),
            None => {
                BROKEN.set(true);
                return false;
            }
        }
    }
    let id = NEXT_ID.get().wrapping_add(1);
    NEXT_ID.set(id);
    let msg = Object::new();
    let _ = Reflect::set(&msg, &"id".into(), &id.into());
    let _ = Reflect::set(&msg, &"kind".into(), &kind.as_str().into());
    let _ = Reflect::set(&msg, &"query".into(), &query.into());
    LANES
        .with_borrow_mut(|l| {
            let lane = l[slot].as_mut()?;
            lane.waiting = Some((id, done));
            lane.slow = slow.map(|f| (id, f));
            lane.worker.post_message(&msg).ok()
        })
        .is_some()
}

/// What the worker of `kind` runs: the glue's URL and the module (compiled, or its URL).
/// A sweep runs the module that asks for it (the second one, whose glue [`set_glue`]
/// named); the fewest-GPU search runs its own module, `memfit-search`, fetched by the
/// worker ([`super::split::search_urls`]).
fn source(kind: Kind) -> Option<(JsValue, JsValue)> {
    if kind == Kind::Min {
        let (js, wasm) = super::split::search_urls()?;
        return Some((js.into(), wasm.into()));
    }
    let js = match GLUE.with_borrow(Clone::clone) {
        Some(url) => JsValue::from(url),
        None => leptos::prelude::document()
            .query_selector("link[rel=modulepreload]")
            .ok()
            .flatten()
            .and_then(|el| Reflect::get(&el, &"href".into()).ok())
            .filter(|v| v.is_string())?,
    };
    Some((js, wasm_bindgen::module()))
}

/// Starts a worker for `kind` and sends it the module; `None` when the browser cannot.
fn start(kind: Kind) -> Option<Lane> {
    let (js, module) = source(kind)?;
    let props = BlobPropertyBag::new();
    props.set_type("text/javascript");
    let blob = Blob::new_with_str_sequence_and_options(&Array::of1(&SCRIPT.into()), &props).ok()?;
    let url = Url::create_object_url_with_blob(&blob).ok()?;
    let opts = WorkerOptions::new();
    opts.set_type(WorkerType::Module);
    let worker = Worker::new_with_options(&url, &opts).ok();
    let _ = Url::revoke_object_url(&url);
    let worker = worker?;
    let slot = kind as usize;
    let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |ev: MessageEvent| {
        let data = ev.data();
        let get = |k: &str| Reflect::get(&data, &k.into()).unwrap_or(JsValue::UNDEFINED);
        if !get("failed").is_undefined() {
            fail(slot, &get("failed").as_string().unwrap_or_default());
            return;
        }
        let id = get("id").as_f64().map(|v| v as u32);
        if get("slow").is_truthy() {
            let slow = LANES.with_borrow_mut(|l| taken_for(&mut l[slot].as_mut()?.slow, id));
            if let Some(f) = slow {
                f();
            }
            return;
        }
        let out = get("out").as_string().unwrap_or_default();
        let ms = get("ms").as_f64().unwrap_or(f64::NAN);
        let done = LANES.with_borrow_mut(|l| taken_for(&mut l[slot].as_mut()?.waiting, id));
        if let Some(done) = done {
            done(out, ms);
        }
    });
    worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    // A worker the browser refuses (a Content-Security-Policy, no module workers) or
    // whose script fails reports an `error` event, not an exception.
    let on_error = Closure::<dyn FnMut(web_sys::Event)>::new(move |_: web_sys::Event| {
        fail(slot, "the worker did not start or stopped with an error")
    });
    worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
    let init = Object::new();
    let _ = Reflect::set(&init, &"js".into(), &js);
    let _ = Reflect::set(&init, &"module".into(), &module);
    if let Some(t) = TEMPLATES.with_borrow(Clone::clone) {
        let _ = Reflect::set(&init, &"templates".into(), &t);
    }
    worker.post_message(&init).ok()?;
    Some(Lane {
        worker,
        _on_message: on_message,
        _on_error: on_error,
        waiting: None,
        slow: None,
    })
}

/// The callback in `slot` if it belongs to request `id` (taken), else `None` (left there:
/// an answer to an older request).
fn taken_for<T>(slot: &mut Option<(u32, T)>, id: Option<u32>) -> Option<T> {
    match slot.take() {
        Some((want, f)) if Some(want) == id => Some(f),
        other => {
            *slot = other;
            None
        }
    }
}

/// Gives up on the workers: the waiting request (and every later one) is computed on
/// the main thread instead (its callback gets an empty answer, which it cannot parse).
fn fail(slot: usize, why: &str) {
    BROKEN.set(true);
    let waiting = LANES.with_borrow_mut(|l| {
        let lane = l[slot].take()?;
        lane.worker.terminate();
        // This runs inside one of these closures: they must outlive the call.
        std::mem::forget((lane._on_message, lane._on_error));
        lane.waiting
    });
    leptos::logging::warn!(
        "memfit: the explorer's worker failed ({why}); computing on the main thread"
    );
    if let Some((_, done)) = waiting {
        done(String::new(), f64::NAN);
    }
}
