//! The one place that touches `window.location` and `window.history`.

use leptos::prelude::{document, window};
use std::cell::{Cell, RefCell};
use wasm_bindgen::JsValue;

/// How long input must rest before the address bar follows it. `history.replaceState`
/// costs Chromium 4–6 ms (a same-document navigation), more than the estimate and the
/// verdict together; written once per pause instead of once per keystroke, it leaves the
/// keystroke's task. A reload or a closed tab within the pause still keeps the edit:
/// [`follow`]'s listeners write it on `pagehide` and `visibilitychange`.
const SETTLE_MS: i32 = 500;

thread_local! {
    /// The settings of this moment as a query ([`follow`]): called only when the address
    /// bar is written, never per keystroke.
    static CURRENT: RefCell<Option<Box<dyn Fn() -> String>>> = const { RefCell::new(None) };
    /// An edit the address bar does not show yet.
    static DIRTY: Cell<bool> = const { Cell::new(false) };
    /// The pending settle timer's id (0: none).
    static TIMER: Cell<i32> = const { Cell::new(0) };
    /// What the settle timer runs: one function for the page's life, so an edit costs a
    /// `clearTimeout` and a `setTimeout`, no new closure.
    static SETTLED: wasm_bindgen::closure::Closure<dyn FnMut()> =
        wasm_bindgen::closure::Closure::new(|| {
            TIMER.set(0);
            flush_query();
        });
    /// Whether session storage holds an edit ([`UNSAVED`]) that a write must clear.
    static STORED: Cell<bool> = const { Cell::new(false) };
}

/// The query the page opens on, without the leading `?` (empty when unavailable): the
/// address bar's, or, on a reload, an edit that had not reached it yet ([`UNSAVED`]).
pub fn read_query() -> String {
    let unsaved = storage().and_then(|s| {
        let q = s.get_item(UNSAVED).ok().flatten();
        let _ = s.remove_item(UNSAVED);
        q
    });
    match unsaved {
        Some(q) if is_reload() => q,
        _ => window()
            .location()
            .search()
            .unwrap_or_default()
            .trim_start_matches('?')
            .to_string(),
    }
}

/// The session-storage key of an edit not yet in the address bar. A reload starts from the
/// URL the browser had when it was asked to reload, before `pagehide` runs (measured in
/// Chromium 156): the edit waits here too, and a reloaded page takes it back.
const UNSAVED: &str = "memfit-unsaved-query";

fn storage() -> Option<web_sys::Storage> {
    window().session_storage().ok().flatten()
}

/// Whether this page load is a reload (the Navigation Timing entry's `type`).
fn is_reload() -> bool {
    let entries = window()
        .performance()
        .map(|p| p.get_entries_by_type("navigation"));
    entries
        .and_then(|e| js_sys::Reflect::get(&e.get(0), &JsValue::from_str("type")).ok())
        .and_then(|t| t.as_string())
        .is_some_and(|t| t == "reload")
}

/// Replaces the current history entry's query (no new entry, no scroll jump); a
/// `#fragment` (a link to one panel) is kept.
pub fn replace_query(query: &str) {
    let hash = window().location().hash().unwrap_or_default();
    let url = format!("?{query}{hash}");
    if let Ok(history) = window().history() {
        let _ = history.replace_state_with_url(&JsValue::NULL, "", Some(&url));
    }
}

/// An edit: the address bar follows once input has rested for [`SETTLE_MS`] (or at once
/// when the page is hidden or the link is copied: [`flush_query`]). Restarts the one settle
/// timer (no clock is read, so a wall clock set back changes nothing); the settings are
/// encoded when written, not here.
pub fn edited() {
    use wasm_bindgen::JsCast;
    DIRTY.set(true);
    let w = window();
    let pending = TIMER.replace(0);
    if pending != 0 {
        w.clear_timeout_with_handle(pending);
    }
    let id = SETTLED.with(|f| {
        w.set_timeout_with_callback_and_timeout_and_arguments_0(
            f.as_ref().unchecked_ref(),
            SETTLE_MS,
        )
    });
    // Refused (never expected): the address bar is written now instead.
    match id {
        Ok(id) => TIMER.set(id),
        Err(_) => flush_query(),
    }
}

/// Writes the current settings now, if an edit is not in the address bar yet.
pub fn flush_query() {
    if DIRTY.replace(false) {
        if let Some(q) = CURRENT.with_borrow(|c| c.as_ref().map(|f| f())) {
            replace_query(&q);
        }
    }
    if STORED.replace(false) {
        if let Some(s) = storage() {
            let _ = s.remove_item(UNSAVED);
        }
    }
}

/// Writes the current settings now, edited or not (the canonical spelling of the opening
/// link).
pub fn write_now() {
    DIRTY.set(true);
    flush_query();
}

/// The address bar follows `current()`, the settings of the moment as a query: after
/// [`edited`] once input settles, and when the page is hidden or left (`pagehide`, and
/// `visibilitychange`, the last event a mobile browser reliably sends) at once, to the
/// address bar and to session storage, so a reload, a closed tab or a switched app never
/// loses an edit — even one made within the last frame. Listeners live as long as the page.
pub fn follow(current: impl Fn() -> String + 'static) {
    use wasm_bindgen::{closure::Closure, JsCast};
    CURRENT.with_borrow_mut(|c| *c = Some(Box::new(current)));
    let flush = Closure::<dyn FnMut()>::new(move || {
        DIRTY.set(false);
        let Some(q) = CURRENT.with_borrow(|c| c.as_ref().map(|f| f())) else {
            return;
        };
        if let Some(s) = storage() {
            let _ = s.set_item(UNSAVED, &q);
            STORED.set(true);
        }
        replace_query(&q);
    });
    let f = flush.as_ref().unchecked_ref();
    let _ = window().add_event_listener_with_callback("pagehide", f);
    let _ = document().add_event_listener_with_callback("visibilitychange", f);
    flush.forget();
}

/// Whether the page was opened on a `#fragment` (a link to one panel).
pub fn has_fragment() -> bool {
    window()
        .location()
        .hash()
        .is_ok_and(|h| !h.is_empty() && h != "#")
}

/// The `#fragment` the page was opened on, without the `#` (a link to one panel).
pub fn fragment() -> Option<String> {
    let h = window().location().hash().ok()?;
    let id = h.trim_start_matches('#');
    (!id.is_empty()).then(|| id.to_string())
}

/// The page without its query string (the panic message's reset link): works at `/`
/// and under any sub-path.
pub fn reset_href() -> String {
    window()
        .location()
        .pathname()
        .unwrap_or_else(|_| "./".into())
}

/// The page's full URL with every edit in it (for the copy-link button).
pub fn href() -> String {
    flush_query();
    window().location().href().unwrap_or_default()
}

/// Copies text to the clipboard; resolves silently when the browser refuses.
pub fn copy_to_clipboard(text: &str) {
    let clipboard = window().navigator().clipboard();
    let _ = clipboard.write_text(text);
}

/// The URL of `file` beside the first module's glue (Trunk's `modulepreload` link), with its
/// hash as a query (a new build's file is never read from an old cache).
pub fn beside_first(file: &str) -> Option<String> {
    let first = document()
        .query_selector("link[rel=modulepreload]")
        .ok()
        .flatten()
        .and_then(|el| el.get_attribute("href"))?;
    let base = href();
    let first = web_sys::Url::new_with_base(&first, &base).ok()?.href();
    let version = first
        .rsplit('/')
        .next()
        .unwrap_or_default()
        .trim_end_matches(".js")
        .to_string();
    let u = web_sys::Url::new_with_base(file, &first).ok()?;
    u.set_search(&format!("v={version}"));
    Some(u.href())
}
