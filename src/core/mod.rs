//! The estimator. Pure Rust: no `leptos`, no `web_sys`, no `wasm_bindgen`; builds
//! and tests natively.

pub mod activations;
pub mod comm;
pub mod conventions;
pub mod deepspeed;
pub mod estimate;
pub mod explore;
pub mod gpu;
pub mod hfconfig;
pub mod infer;
pub mod ledger;
pub mod megatron;
pub mod model;
pub mod scenario;
pub mod solve;
pub mod timeline;
pub mod train;
pub mod units;
