//! The fifth wasm module's entry: the op-level allocator (`memfit_core::opstream`: the
//! templates' reader, the stream's rebuild and the caching allocator's replay), and nothing
//! else: no page, no Leptos view. The first module loads it, with the templates' text, the
//! first time a scenario may read them ([`memfit::ui`]'s `templates`), installs the text in it
//! and asks it for each replay (`memfit_core::opstream::set_replayer`), so that the first
//! module links neither the reader nor the replay. The second module and the workers, which
//! carry the same code for their own estimates, install the text in themselves.

#[cfg(target_arch = "wasm32")]
mod exports {
    use memfit_core::opstream::{self, Run};
    use wasm_bindgen::prelude::*;

    /// Installs the templates' text here ([`memfit_core::opstream::install`]); `false` when
    /// it does not parse.
    #[wasm_bindgen]
    pub fn install_templates(text: &str) -> bool {
        memfit::ui::panic::install();
        opstream::install(text).is_ok()
    }

    /// The replay of the run of `line` ([`Run::to_line`]) as [`opstream::Replayed::to_line`]
    /// writes it; empty where the templates do not hold it.
    #[wasm_bindgen]
    pub fn replay(line: &str) -> String {
        Run::from_line(line)
            .and_then(|r| opstream::replay(&r))
            .map(|r| r.to_line())
            .unwrap_or_default()
    }
}

fn main() {}
