//! wasm entry: install the panic hook and mount the app. Nothing else: the fewest-GPU
//! search's worker runs a module of its own (`src/search.rs`).

#[cfg(target_arch = "wasm32")]
fn main() {
    memfit::ui::panic::install();
    memfit::ui::start();
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    eprintln!("memfit-web is the browser app; build it with `trunk build`. The CLI is `memfit`.");
}
