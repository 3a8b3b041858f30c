//! memfit against measurements: published runs (`../shared/reference/measured_runs.json`)
//! and memfit's own PyTorch MemTracker runs, compared row by row. Native tooling for the
//! CLI (`memfit --validation`, `memfit --train-eval`) and the tests; nothing here ships in
//! the page. `steptime` compares the step-time model with published training runs.

pub mod cuda;
pub mod cuda_h100;
pub mod hf;
pub mod hf_ssm;
pub mod serve;
pub mod serve_llamacpp;
pub mod stats;
pub mod steptime;
pub mod validation;
