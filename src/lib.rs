//! # memfit — the page and the CLI
//!
//! The estimator and its contract (the query-string codec, the CLI's JSON) live in the
//! `memfit-core` crate (`crates/core`), whose manifest has no web dependency; the
//! comparison with measurements lives in `memfit-evidence` (`crates/evidence`). This
//! crate is what users run:
//!
//! - [`chart`]: `Estimate → SVG` with plotters (pure).
//! - [`learn`]: the guided tour's text, its numbers computed by the estimator (pure).
//! - [`export`]: the downloads (JSON, CSV, a ds_config fragment, a torchrun snippet; pure).
//! - `ui` (wasm only): the Leptos components, one per panel; the only code that touches
//!   the DOM.
//! - `src/bin/memfit.rs`: the CLI.

pub mod chart;
pub mod export;
pub mod learn;
pub mod present;
pub mod serving;
#[cfg(target_arch = "wasm32")]
pub mod ui;
