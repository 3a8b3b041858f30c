//! The third wasm module's entry: the Hugging Face `config.json` importer's parser
//! (`memfit_core::hfconfig`, with the JSON reader it needs), fetched by the page on the
//! first import ([`memfit::ui::import`], `memfit::ui::split`) so that the first module does
//! not carry it (about 40 KB gzip). It holds no page: no Leptos view, no explorer.

#[cfg(target_arch = "wasm32")]
mod exports {
    use wasm_bindgen::prelude::*;

    /// Parses a `config.json` and applies it to the settings of `query` (see
    /// [`memfit::ui::import::apply_config`]): `[query, message]`, or the parser's message
    /// thrown.
    #[wasm_bindgen]
    pub fn import_config(query: String, text: String) -> Result<Vec<String>, String> {
        memfit::ui::panic::install();
        memfit::ui::import::apply_config(&query, &text).map(|(q, m)| vec![q, m])
    }
}

fn main() {}
