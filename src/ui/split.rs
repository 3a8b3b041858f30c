//! The page in wasm modules. The first (`memfit-web`, loaded at start) holds what a
//! 1440 × 1000 screen draws: the inputs, the verdict, the fewest-GPU line (not its search)
//! and the breakdown chart. The second (`memfit-below`, [`super::below`]) holds every panel
//! below the chart: the step time, the serving panel, the timeline, the fit map, the best
//! layouts, the explanation, the ledger, the comparisons, the tour, the accuracy tables and
//! the exports, and the `config.json` import form. It is fetched, compiled and mounted when
//! the chart's end comes on screen or the reader selects an item to explain (the import
//! form: when its group is first opened, [`mount_import`]), so the code and the CPU of
//! those panels cost nothing at start (Trunk 0.21 cannot split one module:
//! trunk-rs/trunk#1022; the second is a separate binary built beside the first).
//!
//! The two modules share no memory. What the panels below need travels as the URL
//! contract: the settings as their query string (`decode(encode(s)) == s`), the input
//! warnings of the opening link as JSON, and the selected item's index. The first module
//! calls the second's exports (`mount`, `settings`, `select`); the second calls back two
//! functions it was given at mount: a layout loaded from the fit map or the table (a
//! query string) and a selection made in the ledger (an index, -1 for none).
//!
//! A third module, `memfit-import` (`src/importer.rs`), holds the `config.json` importer's
//! parser and nothing of the page: fetched and instantiated on the first import
//! ([`import_config`]), it answers the settings' query string and the text with the new
//! query string and the message, and keeps the parser (about 40 KB gzip) out of the first
//! module without growing the second. A fourth, `memfit-search` (`src/search.rs`), holds the
//! fewest-GPU search: its worker fetches it after the first result ([`super::worker`],
//! [`search_urls`]), or the page loads it here when no worker runs ([`search_job`]).

use js_sys::{Function, Object, Promise, Reflect};
use std::cell::{Cell, RefCell};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

#[wasm_bindgen(inline_js = "export function import_module(url) { return import(url); }")]
extern "C" {
    /// `import(url)`: the second module's ES glue (a dynamic import needs no `eval`, so
    /// the page's Content-Security-Policy stays `script-src 'self'`).
    #[wasm_bindgen(catch)]
    fn import_module(url: &str) -> Result<Promise, JsValue>;
}

/// The modules the page loads later: the panels below the chart, the importer's parser
/// (`memfit-import`, `src/importer.rs`: no page, no Leptos view), and the fewest-GPU
/// search (`memfit-search`, `src/search.rs`: no page either), which its worker loads after
/// the first result is painted ([`super::worker`]), or the page itself when no worker runs;
/// the op-level allocator (`memfit-replay`) and the ledgers of inference, serving and the
/// other tools' conventions (`memfit-modes`), which the first module calls.
#[derive(Clone, Copy)]
enum Later {
    Below,
    Import,
    Search,
    Replay,
    Modes,
}

impl Later {
    /// The file names Trunk gives the module's glue and wasm (a `data-type="worker"`
    /// binary keeps its name unhashed; [`urls`] adds the first module's hash as a query to
    /// bust caches).
    fn files(self) -> (&'static str, &'static str) {
        match self {
            Later::Below => ("memfit-below.js", "memfit-below_bg.wasm"),
            Later::Import => ("memfit-import.js", "memfit-import_bg.wasm"),
            Later::Search => ("memfit-search.js", "memfit-search_bg.wasm"),
            Later::Replay => ("memfit-replay.js", "memfit-replay_bg.wasm"),
            Later::Modes => ("memfit-modes.js", "memfit-modes_bg.wasm"),
        }
    }
}

thread_local! {
    /// Each later module's namespace, fetched and instantiated once ([`module`]).
    static MODULES: RefCell<[Option<Promise>; 5]> = const { RefCell::new([None, None, None, None, None]) };
    /// The second module's namespace once it is mounted.
    static BELOW: RefCell<Option<Object>> = const { RefCell::new(None) };
    /// Whether loading has started (it starts once).
    static STARTED: Cell<bool> = const { Cell::new(false) };
}

/// What the second module is given when it mounts, read when it is ready (not when the
/// load started: the reader may have typed in between).
pub struct Snapshot {
    /// The settings' query string.
    pub query: String,
    /// The input warnings still shown, as JSON.
    pub warnings: String,
    /// The selected item, -1 for none.
    pub selected: i32,
}

/// Starts loading the second module into `el` (once): `now` gives the state to mount
/// with; `on_select` and `on_load` are what the second module calls back. A failure is
/// shown in `el`, with what to do.
pub fn load(
    el: web_sys::Element,
    now: impl Fn() -> Snapshot + 'static,
    on_select: impl Fn(i32) + 'static,
    on_load: impl Fn(String) + 'static,
    templates: impl std::future::Future<Output = Option<JsValue>> + 'static,
) {
    if STARTED.replace(true) {
        return;
    }
    wasm_bindgen_futures::spawn_local(async move {
        let on_select = Closure::<dyn Fn(i32)>::new(on_select).into_js_value();
        let on_load = Closure::<dyn Fn(String)>::new(on_load).into_js_value();
        if let Err(e) = mount(&el, &now, &on_select, &on_load, templates).await {
            let why = e.as_string().unwrap_or_else(|| format!("{e:?}"));
            el.set_text_content(Some(&format!(
                "The panels below the chart (step time, serving, timeline, fit map, best \
                 layouts, explanation, ledger, comparisons, tour, accuracy, export) could not load: {why}. \
                 Reload the page to try again."
            )));
            let _ = el.set_attribute("role", "alert");
            let _ = el.set_attribute("class", "panel below-failed");
        }
    });
}

/// A later module's namespace: fetched and instantiated on the first call (which mounts
/// nothing), the same promise for every later one.
async fn module(which: Later) -> Result<Object, JsValue> {
    Ok(JsFuture::from(started(which)).await?.unchecked_into())
}

/// The promise of a later module's namespace, its fetch started by the first call.
fn started(which: Later) -> Promise {
    MODULES.with_borrow_mut(|m| {
        m[which as usize]
            .get_or_insert_with(|| wasm_bindgen_futures::future_to_promise(instantiate(which)))
            .clone()
    })
}

/// The op-level allocator's module (`memfit-replay`, `src/replay.rs`): its fetch starts at
/// this call; the namespace when awaited.
pub fn replay_module() -> impl std::future::Future<Output = Result<Object, JsValue>> {
    // Awaited from now on: a failed load is this future's error, never an unhandled rejection.
    let p = JsFuture::from(started(Later::Replay));
    async move { Ok(p.await?.unchecked_into()) }
}

/// The whole ledgers' module (`memfit-modes`, `src/modes.rs`): its fetch starts at this
/// call; the namespace when awaited.
pub fn modes_module() -> impl std::future::Future<Output = Result<Object, JsValue>> {
    let p = JsFuture::from(started(Later::Modes));
    async move { Ok(p.await?.unchecked_into()) }
}

/// Calls the export `name` of a later module's namespace `m`.
pub fn export(m: &Object, name: &str, args: &[JsValue]) -> Result<JsValue, JsValue> {
    call(m, name, args)
}

async fn instantiate(which: Later) -> Result<JsValue, JsValue> {
    let (glue, wasm) = urls(which).ok_or("this page has no module link to start from")?;
    let m: Object = JsFuture::from(import_module(&glue)?)
        .await?
        .unchecked_into();
    let opts = Object::new();
    Reflect::set(&opts, &"module_or_path".into(), &wasm.into())?;
    JsFuture::from(call(&m, "default", &[opts.into()])?.unchecked_into::<Promise>()).await?;
    Ok(m.into())
}

async fn mount(
    el: &web_sys::Element,
    now: &dyn Fn() -> Snapshot,
    on_select: &JsValue,
    on_load: &JsValue,
    templates: impl std::future::Future<Output = Option<JsValue>>,
) -> Result<(), JsValue> {
    let m = module(Later::Below).await?;
    let (glue, _) = urls(Later::Below).ok_or("this page has no module link to start from")?;
    // The op templates once a fetch of them in flight has settled: the panels mount with
    // the replay's figures, never the flat share's first (`super::templates::settled`).
    if let Some(t) = templates.await {
        call(&m, "templates", &[t])?;
    }
    // The state now: what the reader did while the module loaded is included.
    let first = now();
    let args = [
        el.clone().into(),
        glue.into(),
        first.query.into(),
        first.warnings.into(),
        first.selected.into(),
        on_select.clone(),
        on_load.clone(),
    ];
    call(&m, "mount", &args)?;
    BELOW.with_borrow_mut(|b| *b = Some(m));
    Ok(())
}

/// Mounts the `config.json` import form into `el` (in place of its "Loading…" line) from
/// the second module (its export `mount_import`, [`super::import::mount_form`]), loaded
/// first when the reader has not scrolled it in yet: `now` gives the settings' query
/// string, `apply` takes imported ones. A failure is shown in `el`, with what to do.
pub fn mount_import(
    el: web_sys::HtmlElement,
    now: impl Fn() -> String + 'static,
    apply: impl Fn(String) + 'static,
) {
    wasm_bindgen_futures::spawn_local(async move {
        let now = Closure::<dyn Fn() -> String>::new(now).into_js_value();
        let apply = Closure::<dyn Fn(String)>::new(apply).into_js_value();
        let mounted = match module(Later::Below).await {
            Ok(m) => {
                // The "Loading…" line goes; the form takes its place.
                el.set_text_content(None);
                let _ = el.remove_attribute("class");
                call(&m, "mount_import", &[el.clone().into(), now, apply]).map(drop)
            }
            Err(e) => Err(e),
        };
        if let Err(e) = mounted {
            let why = e.as_string().unwrap_or_else(|| format!("{e:?}"));
            el.set_text_content(Some(&format!(
                "The import form could not load: {why}. Reload the page to try again."
            )));
            let _ = el.set_attribute("role", "alert");
            let _ = el.set_attribute("class", "error");
        }
    });
}

/// Imports a Hugging Face `config.json` in the importer's module (its export
/// `import_config`, [`super::import::apply_config`]), loaded on the first call: `now` gives the
/// settings' query string once it is ready. Returns the new settings' query string and the
/// message, or what went wrong (the parser's message, or why the module did not load).
pub async fn import_config(
    now: impl FnOnce() -> String,
    text: &str,
) -> Result<(String, String), String> {
    let why = |e: JsValue| e.as_string().unwrap_or_else(|| format!("{e:?}"));
    let m = module(Later::Import).await.map_err(|e| {
        format!(
            "The importer could not load: {}. Reload the page to try again.",
            why(e)
        )
    })?;
    let out = call(&m, "import_config", &[now().into(), text.into()]).map_err(why)?;
    let out: js_sys::Array = out.unchecked_into();
    match (out.get(0).as_string(), out.get(1).as_string()) {
        (Some(query), Some(message)) => Ok((query, message)),
        _ => Err("the importer gave no answer".into()),
    }
}

/// The fewest-GPU search's module: its glue and wasm URLs, for the worker that runs it.
pub fn search_urls() -> Option<(String, String)> {
    urls(Later::Search)
}

/// Starts the fewest-GPU search for the settings of `query` on this thread (no worker
/// could run it): the search's module is loaded on the first call, given the op templates'
/// text where the page has it (`templates`), and its `ExploreJob` is returned, to be run by calling `step` and then `finish` ([`method`]).
pub async fn search_job(query: &str, templates: Option<JsValue>) -> Result<Object, JsValue> {
    let m = module(Later::Search).await?;
    if let Some(t) = templates {
        call(&m, "install_templates", &[t])?;
    }
    let new: Function = Reflect::get(&m, &"ExploreJob".into())?.dyn_into()?;
    let args = js_sys::Array::of2(&"min".into(), &query.into());
    Ok(Reflect::construct(&new, &args)?.unchecked_into())
}

/// Calls the method `name` of `obj` (`this` is `obj`).
pub fn method(obj: &Object, name: &str, args: &[JsValue]) -> Result<JsValue, JsValue> {
    let f: Function = Reflect::get(obj, &name.into())?.dyn_into()?;
    f.apply(obj, &args.iter().collect())
}

/// Calls the export `name` of module `m`.
fn call(m: &Object, name: &str, args: &[JsValue]) -> Result<JsValue, JsValue> {
    let f: Function = Reflect::get(m, &name.into())?.dyn_into()?;
    f.apply(&JsValue::NULL, &args.iter().collect())
}

/// A later module's glue and wasm URLs: beside the first module's glue (Trunk's
/// `modulepreload` link), with its hash as a query.
fn urls(which: Later) -> Option<(String, String)> {
    let (glue, wasm) = which.files();
    let at = super::url::beside_first;
    Some((at(glue)?, at(wasm)?))
}

/// Whether the second module is mounted (what to send it is computed only then).
pub fn mounted() -> bool {
    BELOW.with_borrow(Option::is_some)
}

/// Sends the settings (a query string) and the input warnings (JSON) to the second
/// module, when it is mounted.
pub fn send_settings(query: &str, warnings: &str) {
    send("settings", &[query.into(), warnings.into()]);
}

/// Sends the op templates' text (`null`: their fetch failed) to the second module, when it
/// is mounted (it is given them before it mounts otherwise, [`mount`]).
pub fn send_templates(text: Option<JsValue>) {
    if let Some(t) = text {
        send("templates", &[t]);
    }
}

/// Sends the selected item (-1 for none) to the second module, when it is mounted.
pub fn send_selected(selected: i32) {
    send("select", &[selected.into()]);
}

fn send(name: &str, args: &[JsValue]) {
    BELOW.with_borrow(|b| {
        if let Some(m) = b {
            let _ = call(m, name, args);
        }
    });
}
