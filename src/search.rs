//! The fourth wasm module's entry: the fewest-GPU search (`memfit_core::explore::MinGpusJob`,
//! with the query codec it reads its scenario with), and nothing else: no page, no Leptos
//! view. The search's worker ([`memfit::ui::worker`]) loads it after the first result is
//! painted, and the page itself when no worker can run ([`memfit::ui::split`]), so the first
//! module carries the line's text, not the search (about 30 KB gzip).

// The search's worker runs this module (`memfit::ui::worker`): `ExploreJob` is the search
// whatever kind it is asked for.
#[cfg(target_arch = "wasm32")]
memfit::export_explore_job!(min_only);

/// Computes its whole ledgers and serving plans itself
/// (`memfit_core::estimate::compute_here`): only the page's first module asks another module.
fn main() {
    #[cfg(target_arch = "wasm32")]
    memfit_core::estimate::compute_here();
}
