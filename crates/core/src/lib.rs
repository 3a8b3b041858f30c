//! # memfit-core — will this LLM job fit in GPU memory?
//!
//! memfit turns a model, a training or inference setup and a cluster into an
//! explained, per-GPU memory ledger.
//!
//! ## The memory model in one page
//!
//! Training with mixed precision and Adam keeps, per parameter (seed 001, the ZeRO
//! paper): 2 bytes of bf16/fp16 weights, 2 bytes of gradients, and K = 12 bytes of
//! optimizer state (fp32 master weights 4, momentum 4, variance 4) — "16 bytes per
//! parameter". ZeRO partitions these over the `N_d` data-parallel ranks: stage 1
//! the 12, stage 2 also the gradients, stage 3 also the weights, so per GPU
//!
//! ```text
//! ZeRO-0: 16Ψ      ZeRO-1: 4Ψ + 12Ψ/N_d      ZeRO-2: 2Ψ + 14Ψ/N_d      ZeRO-3: 16Ψ/N_d
//! ```
//!
//! ZeRO-3 additionally gathers one layer at a time (4 × the largest layer, seed
//! 000). Tensor and pipeline parallelism divide the parameters by `t·p`.
//! Activations add `34·b·s·h + 5·b·s²·a` bytes per layer (seed 003, Korthikanti et
//! al.). Inference keeps the weights and a KV cache of `2·b·(s+n)·L·a_kv·d·k` bytes.
//!
//! DeepSpeed's own estimators (doc page, 0.14.2, 0.19.8) are reproduced to the
//! byte under `convention=ds-doc|ds-0.14|ds-0.19`.
//!
//! This crate is pure Rust (serde only): no `leptos`, `web_sys` or `wasm_bindgen` can
//! be imported here, so the page, the CLI and other tools share one estimator.

pub mod activations;
pub mod allocator;
pub mod comm;
pub mod contract;
pub mod conventions;
pub mod cuda_trace;
pub mod decimal;
pub mod deepspeed;
pub mod estimate;
pub mod explore;
pub mod expr;
pub mod fexpr;
pub mod gpu;
pub mod hfconfig;
pub mod infer;
pub mod ledger;
pub mod megatron;
pub mod model;
pub mod nonzero;
pub mod opstream;
pub mod program;
pub mod quant;
pub mod resolved;
pub mod scenario;
pub mod serve;
pub mod solve;
pub mod spelling;
mod stage;
pub mod steptime;
pub mod timeline;
pub mod train;
pub mod units;
