//! The one place that touches `window.location` and `window.history`.

use leptos::prelude::{document, set_timeout, window};
use std::cell::{Cell, RefCell};
use wasm_bindgen::JsValue;

/// How long input must rest before the address bar follows it. `history.replaceState`
/// costs Chromium 4–6 ms (a same-document navigation), more than the estimate and the
/// verdict together; written once per pause instead of once per keystroke, it leaves the
/// keystroke's task. A reload or a closed tab within the pause still keeps the edit:
/// [`flush_on_hide`] writes it on `pagehide` and `visibilitychange`.
const SETTLE: std::time::Duration = std::time::Duration::from_millis(500);

thread_local! {
    /// The query the address bar should show, not yet written.
    static PENDING: RefCell<Option<String>> = const { RefCell::new(None) };
    /// Bumped by every deferred query: a timer writes only if none came after it.
    static GENERATION: Cell<u64> = const { Cell::new(0) };
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

/// Writes `query` to the address bar once input has rested for [`SETTLE`] (or at once
/// when the page is hidden or the link is copied: [`flush_query`]).
pub fn defer_query(query: String) {
    if let Some(s) = storage() {
        let _ = s.set_item(UNSAVED, &query);
    }
    PENDING.with(|p| *p.borrow_mut() = Some(query));
    let mine = GENERATION.with(|g| {
        g.set(g.get().wrapping_add(1));
        g.get()
    });
    set_timeout(
        move || {
            if GENERATION.with(Cell::get) == mine {
                flush_query();
            }
        },
        SETTLE,
    );
}

/// Writes the pending query now, if there is one: the edit is saved.
pub fn flush_query() {
    if let Some(q) = PENDING.with(|p| p.borrow_mut().take()) {
        replace_query(&q);
    }
    if let Some(s) = storage() {
        let _ = s.remove_item(UNSAVED);
    }
}

/// When the page is hidden or left (`pagehide`, and `visibilitychange`, the last event a
/// mobile browser reliably sends), writes `current()` — the settings of that moment, even
/// an edit made within the last frame — to the address bar and to session storage, so a
/// reload, a closed tab or a switched app never loses an edit. Listeners live as long as
/// the page.
pub fn flush_on_hide(current: impl Fn() -> String + 'static) {
    use wasm_bindgen::{closure::Closure, JsCast};
    let flush = Closure::<dyn FnMut()>::new(move || {
        PENDING.with(|p| p.borrow_mut().take());
        let q = current();
        if let Some(s) = storage() {
            let _ = s.set_item(UNSAVED, &q);
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
