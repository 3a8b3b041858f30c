//! The page's network access, never at load: a `config.json` from the Hugging Face Hub
//! when the user asks for it, and the page's own `accuracy.json` when its panel is opened.
//! Also reads dropped/uploaded files.

use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

/// Fetches `https://huggingface.co/{repo}/resolve/main/config.json`.
///
/// # Errors
/// A sentence for the user: invalid id, network failure, or the Hub's status
/// (401/403 for gated models, 404 for unknown ids).
pub async fn fetch_hub_config(repo: &str) -> Result<String, String> {
    let repo = repo.trim();
    let valid = !repo.is_empty()
        && repo.split('/').count() == 2
        && repo
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
        && !repo.contains("..");
    if !valid {
        return Err(format!(
            "`{repo}` is not a Hub id like `meta-llama/Llama-3.1-8B`"
        ));
    }
    let url = format!("https://huggingface.co/{repo}/resolve/main/config.json");
    let window = leptos::prelude::window();
    let resp = JsFuture::from(window.fetch_with_str(&url))
        .await
        .map_err(|_| {
            "the Hub could not be reached (offline, or blocked by the network)".to_string()
        })?;
    let resp: web_sys::Response = resp
        .dyn_into()
        .map_err(|_| "unexpected fetch result".to_string())?;
    match resp.status() {
        200 => {}
        401 | 403 => return Err(format!("`{repo}` is gated or private: accept its licence on the Hub, download config.json and drop it here")),
        404 => return Err(format!("`{repo}` has no config.json on the Hub (check the id)")),
        s => return Err(format!("the Hub answered HTTP {s} for `{repo}`")),
    }
    let text = resp
        .text()
        .map_err(|_| "cannot read the Hub's answer".to_string())?;
    let text = JsFuture::from(text)
        .await
        .map_err(|_| "cannot read the Hub's answer".to_string())?;
    text.as_string()
        .ok_or_else(|| "the Hub's answer is not text".to_string())
}

/// Fetches one of the page's own files (a path relative to the page) as text.
///
/// # Errors
/// A sentence for the user: offline, or the server's status.
pub async fn fetch_own(path: &str) -> Result<String, String> {
    let window = leptos::prelude::window();
    let resp = JsFuture::from(window.fetch_with_str(path))
        .await
        .map_err(|_| format!("{path} could not be fetched (offline?)"))?;
    let resp: web_sys::Response = resp
        .dyn_into()
        .map_err(|_| "unexpected fetch result".to_string())?;
    if resp.status() != 200 {
        return Err(format!(
            "the server answered HTTP {} for {path}",
            resp.status()
        ));
    }
    let text = resp.text().map_err(|_| format!("cannot read {path}"))?;
    let text = JsFuture::from(text)
        .await
        .map_err(|_| format!("cannot read {path}"))?;
    text.as_string()
        .ok_or_else(|| format!("{path} is not text"))
}

/// Reads a user-chosen file as text.
///
/// # Errors
/// When the browser cannot read it.
pub async fn read_file(file: web_sys::File) -> Result<String, String> {
    let text = JsFuture::from(file.text())
        .await
        .map_err(|_| "cannot read the file".to_string())?;
    text.as_string()
        .ok_or_else(|| "the file is not text".to_string())
}
