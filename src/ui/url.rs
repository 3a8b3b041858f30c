//! The one place that touches `window.location` and `window.history`.

use leptos::prelude::window;
use wasm_bindgen::JsValue;

/// The current query string without the leading `?` (empty when unavailable).
pub fn read_query() -> String {
    window()
        .location()
        .search()
        .unwrap_or_default()
        .trim_start_matches('?')
        .to_string()
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

/// The page's full URL (for the copy-link button).
pub fn href() -> String {
    window().location().href().unwrap_or_default()
}

/// Copies text to the clipboard; resolves silently when the browser refuses.
pub fn copy_to_clipboard(text: &str) {
    let clipboard = window().navigator().clipboard();
    let _ = clipboard.write_text(text);
}
