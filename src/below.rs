//! The second wasm module's entry ([`memfit::ui::below`]): the panels below the chart,
//! loaded by the page when the reader comes near them. It mounts nothing by itself: the
//! page calls `mount`, then `settings` and `select` as its state changes. In the
//! explorer's Web Worker the same module runs sweeps (`ExploreJob`) and mounts nothing.

#[cfg(target_arch = "wasm32")]
mod exports {
    use wasm_bindgen::prelude::*;

    /// Mounts the panels into `el` (see [`memfit::ui::below::mount`]).
    #[wasm_bindgen]
    pub fn mount(
        el: web_sys::HtmlElement,
        glue: String,
        query: String,
        warnings: String,
        selected: i32,
        on_select: js_sys::Function,
        on_load: js_sys::Function,
    ) {
        memfit::ui::below::mount(el, glue, &query, &warnings, selected, on_select, on_load);
    }

    /// Mounts the `config.json` import form into `el` (see
    /// [`memfit::ui::import::mount_form`]): `now()` gives the page's settings as their query
    /// string, `apply(query)` takes imported ones.
    #[wasm_bindgen]
    pub fn mount_import(el: web_sys::HtmlElement, now: js_sys::Function, apply: js_sys::Function) {
        memfit::ui::import::mount_form(el, now, apply);
    }

    /// The page's settings (a query string) and input warnings (JSON) changed.
    #[wasm_bindgen]
    pub fn settings(query: String, warnings: String) {
        memfit::ui::below::set_settings(&query, &warnings);
    }

    /// The op templates' text, fetched by the page (`null`: the fetch failed): see
    /// [`memfit::ui::below::set_templates`].
    #[wasm_bindgen]
    pub fn templates(text: JsValue) {
        memfit::ui::below::set_templates(text);
    }

    /// The page's selected item changed (-1: none).
    #[wasm_bindgen]
    pub fn select(selected: i32) {
        memfit::ui::below::set_selected(selected);
    }
}

// The sweep's worker runs this module (`memfit::ui::worker`).
#[cfg(target_arch = "wasm32")]
memfit::export_explore_job!(new);

/// Computes its whole ledgers and serving plans itself
/// (`memfit_core::estimate::compute_here`): only the page's first module asks another module.
fn main() {
    #[cfg(target_arch = "wasm32")]
    memfit_core::estimate::compute_here();
}
