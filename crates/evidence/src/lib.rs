//! memfit against measurements: published runs (`../shared/reference/measured_runs.json`)
//! and memfit's own PyTorch MemTracker runs, compared row by row. Native tooling for the
//! CLI (`memfit --validation`) and the tests; nothing here ships in the page.

pub mod hf;
pub mod validation;
