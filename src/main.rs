//! wasm entry: install the panic hook and mount the app (nothing in a worker). Nothing else.

#[cfg(target_arch = "wasm32")]
fn main() {
    // In the explorer's Web Worker (`ui::worker`) the same module runs without a page.
    if web_sys::window().is_none() {
        return;
    }
    memfit::ui::panic::install();
    memfit::ui::start();
}

// The fewest-GPU search's worker runs this module (`memfit::ui::worker`), and nothing else.
#[cfg(target_arch = "wasm32")]
memfit::export_explore_job!(min_only);

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    eprintln!("memfit-web is the browser app; build it with `trunk build`. The CLI is `memfit`.");
}
