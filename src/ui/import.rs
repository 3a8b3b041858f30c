//! Import a Hugging Face `config.json`: paste it, drop or choose the file, or fetch it
//! from the Hub by id (on request only).
//!
//! The first module draws the collapsed group ([`ConfigImport`]) and nothing of its form:
//! the form ([`ImportForm`], its file and Hub reads) is the second module's
//! (`memfit-below`, [`super::split`]), which the first opening of the group loads (when the
//! reader has not scrolled it in already) and mounts there ([`mount_form`]). The parser
//! (`memfit_core::hfconfig`, about 40 KB gzip with the JSON reader it needs) lives in a
//! third module, `memfit-import` (`src/importer.rs`), fetched on the first import. The form
//! sends the settings (their query string, read from the first module when the parser is
//! ready) and the text; that module parses, applies and answers with the new settings and
//! the message ([`apply_config`]); the form hands the new settings to the first module.

use super::{net, split};
use leptos::prelude::*;
use leptos::task::spawn_local;
use memfit_core::contract::query::{apply_import, decode, encode};
use memfit_core::contract::Settings;
use memfit_core::estimate::Warning;
use memfit_core::hfconfig;
use wasm_bindgen::{JsCast, JsValue};

/// In the importer's module: parses `text`, applies it to the settings of `query`; returns
/// the new settings' query string and the message to show.
pub fn apply_config(query: &str, text: &str) -> Result<(String, String), String> {
    let imported = hfconfig::parse(text)?;
    let mut next = decode(query).0;
    let warnings: Vec<Warning> = apply_import(&mut next, &imported);
    let mut msg = format!(
        "Imported a `{}` config on the {} preset.",
        imported.model_type, imported.base
    );
    for w in warnings {
        msg.push_str(&format!(" {}: {}.", w.key, w.message));
    }
    Ok((encode(&next), msg))
}

/// Parses `text` (in the importer's module) and applies it; returns the message to show.
/// The settings are read once that module is ready, so an edit made while it loaded is
/// kept under the import.
async fn apply_text(io: Io, text: String) -> Result<String, String> {
    let now = move || {
        io.now
            .call0(&JsValue::NULL)
            .ok()
            .and_then(|q| q.as_string())
            .unwrap_or_default()
    };
    let (query, msg) = split::import_config(now, &text).await?;
    let _ = io.apply.call1(&JsValue::NULL, &query.into());
    Ok(msg)
}

/// The first module's two functions: `now()` its settings' query string, `apply(query)`
/// new settings.
#[derive(Clone)]
struct Io {
    now: js_sys::Function,
    apply: js_sys::Function,
}

/// In the second module: mounts the import form into `el` (inside the first module's
/// collapsed group). `now()` gives the first module's settings as their query string;
/// `apply(query)` gives it the imported settings.
pub fn mount_form(el: web_sys::HtmlElement, now: js_sys::Function, apply: js_sys::Function) {
    super::panic::install();
    let io = StoredValue::new_local(Io { now, apply });
    leptos::mount::mount_to(el, move || view! { <ImportForm io /> }).forget();
}

/// The import form (the second module's).
#[component]
fn ImportForm(io: StoredValue<Io, LocalStorage>) -> impl IntoView {
    let import = move |t: String| apply_text(io.get_value(), t);
    let text = RwSignal::new(String::new());
    let hub = RwSignal::new(String::new());
    let status: RwSignal<Option<Result<String, String>>> = RwSignal::new(None);
    let busy = RwSignal::new(false);
    let on_file = move |file: web_sys::File| {
        spawn_local(async move {
            let r = match net::read_file(file).await {
                Ok(t) => import(t).await,
                Err(e) => Err(e),
            };
            status.set(Some(r));
        });
    };
    view! {
            <div
                class="drop"
                on:dragover=move |ev: web_sys::DragEvent| ev.prevent_default()
                on:drop=move |ev: web_sys::DragEvent| {
                    ev.prevent_default();
                    if let Some(f) = ev.data_transfer().and_then(|d| d.files()).and_then(|l| l.get(0)) {
                        on_file(f);
                    }
                }
            >
                <label for="import-text">"Paste config.json, or drop the file here"</label>
                <textarea id="import-text" autocomplete="off" rows="4" data-testid="import-text" prop:value=move || text.get()
                    on:input=move |ev| text.set(event_target_value(&ev))></textarea>
                <div class="row">
                    <button type="button" data-testid="import-apply" on:click=move |_| {
                        let t = text.get_untracked();
                        spawn_local(async move { status.set(Some(import(t).await)) });
                    }>
                        "Apply pasted config"
                    </button>
                    <label class="file">
                        "Choose file… "
                        <input type="file" autocomplete="off" accept=".json,application/json" data-testid="import-file"
                            on:change=move |ev| {
                                let input = ev.target().and_then(|t| t.dyn_into::<web_sys::HtmlInputElement>().ok());
                                if let Some(f) = input.and_then(|i| i.files()).and_then(|l| l.get(0)) {
                                    on_file(f);
                                }
                            } />
                    </label>
                </div>
                <div class="row">
                    <label for="import-hub">"Hub id"</label>
                    <input id="import-hub" autocomplete="off" type="text" placeholder="Qwen/Qwen2.5-7B" prop:value=move || hub.get()
                        on:input=move |ev| hub.set(event_target_value(&ev)) />
                    <button type="button" data-testid="import-fetch" disabled=move || busy.get()
                        on:click=move |_| {
                            let id = hub.get_untracked();
                            busy.set(true);
                            spawn_local(async move {
                                let r = match net::fetch_hub_config(&id).await {
                                    Ok(t) => import(t).await,
                                    Err(e) => Err(e),
                                };
                                status.set(Some(r));
                                busy.set(false);
                            });
                        }>
                        "Fetch from the Hub"
                    </button>
                </div>
                <p class="hint">"Fetching is the only network request memfit makes, and only when you press the button."</p>
                {move || status.get().map(|r| match r {
                    Ok(m) => view! { <p class="ok" role="status" data-testid="import-status">{m}</p> }.into_any(),
                    Err(e) => view! { <p class="error" role="alert" data-testid="import-status">{e}</p> }.into_any(),
                })}
            </div>
    }
}

/// The collapsed group "Import a Hugging Face config.json" (the first module's): its form
/// is mounted from the second module when the group is first opened ([`split::mount_import`]).
#[component]
pub fn ConfigImport(settings: RwSignal<Settings>) -> impl IntoView {
    let host = NodeRef::<leptos::html::Div>::new();
    let started = StoredValue::new(false);
    let on_toggle = move |ev: leptos::ev::Event| {
        let Some(el) = host.get_untracked() else {
            return;
        };
        if super::details_open(&ev) && !started.get_value() {
            started.set_value(true);
            let now = move || settings.with_untracked(encode);
            let apply = move |q: String| {
                let next = decode(&q).0;
                if settings.with_untracked(|s| *s != next) {
                    settings.set(next);
                }
            };
            split::mount_import(el.into(), now, apply);
        }
    };
    view! {
        <details class="import" data-testid="import" on:toggle=on_toggle>
            <summary>"Import a Hugging Face config.json"</summary>
            <div node_ref=host class="hint">"Loading the import form…"</div>
        </details>
    }
}
