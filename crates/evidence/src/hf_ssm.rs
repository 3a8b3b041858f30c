//! memfit against real state-space and hybrid `transformers` runs (issue 37:
//! `tools/measure_hf_ssm.py`, the harness of `tools/measure_hf.py` over Mamba, Mamba-2,
//! Jamba, Bamba, Nemotron-H, Falcon-H1, LFM2, Qwen3-Next and Granite-4.0-H at tiny widths,
//! MemTracker on CPU). Without mamba-ssm, causal-conv1d or flash-linear-attention every
//! mixer runs transformers' PyTorch fallback, so each run is read with `ssm_kernels=torch-einsum`
//! (transformers 5.24 ≥ 5.18) on top of the keys of [`crate::hf::run_keys`].
//!
//! # Held out
//! The run list and its split (`tests/data/hf_ssm_runs.json`, the sha256 rule of
//! `tools/measure_hf.py`) were committed before anything was measured, and the
//! measurements in their own commit before memfit was compared with them. Mechanisms come
//! from the calibration runs only; held-out figures are reported, never tuned on.

use serde_json::Value;

use crate::hf::{rows_with, stats, HfRow};

/// The measurements, as `tools/measure_hf_ssm.py` wrote them.
pub const HF_SSM: &str = include_str!("../../../tests/data/hf_ssm_measurements.json");

/// The keys every SSM run adds: transformers' PyTorch fallback (no kernels installed).
pub const SSM_KEYS: &str = "&ssm_kernels=torch-einsum";

/// Held-out runs moved to calibration, each with why (none so far).
pub const SSM_MOVED_TO_CALIBRATION: &[(&str, &str)] = &[];

/// Whether a run counts as held out: the committed split, less the moved runs.
pub fn ssm_held_out(run: &Value) -> bool {
    let id = run["id"].as_str().unwrap_or("");
    run["held_out"].as_bool().unwrap_or(false)
        && !SSM_MOVED_TO_CALIBRATION.iter().any(|(m, _)| *m == id)
}

/// Every SSM run compared; runs that cannot be estimated beside, with why.
pub fn ssm_rows(doc: &Value) -> (Vec<HfRow>, Vec<(String, String)>) {
    rows_with(doc, SSM_KEYS, ssm_held_out)
}

/// The embedded SSM measurements compared.
pub fn embedded_ssm_rows() -> (Vec<HfRow>, Vec<(String, String)>) {
    match serde_json::from_str::<Value>(HF_SSM) {
        Ok(doc) => ssm_rows(&doc),
        Err(e) => (Vec::new(), vec![("(file)".into(), e.to_string())]),
    }
}

/// Whether a run is a training run (`train`) or an inference one (`infer`, `prefill`).
pub fn is_training(r: &HfRow) -> bool {
    r.kind == "train"
}

/// Calibration and held-out median / max |error| per family and per training /
/// inference, as a markdown table (each cell: runs: median / max, %).
pub fn ssm_table(rows: &[HfRow]) -> String {
    let cell = |(n, m, x): (usize, f64, f64)| {
        if n == 0 {
            "—".to_string()
        } else {
            format!("{n}: {:.1} / {:.1}", m * 100.0, x * 100.0)
        }
    };
    let mut md = String::from("| runs | calibration | held out |\n|---|---|---|\n");
    let mut families: Vec<&str> = rows.iter().map(|r| r.family.as_str()).collect();
    families.dedup();
    let mut line = |name: &str, of: &dyn Fn(&HfRow) -> bool| {
        md.push_str(&format!(
            "| {name} | {} | {} |\n",
            cell(stats(rows, |r| of(r) && !r.held_out)),
            cell(stats(rows, |r| of(r) && r.held_out))
        ));
    };
    for f in families {
        line(f, &|r: &HfRow| r.family == f);
    }
    line("training", &is_training);
    line("generate + prefill", &|r: &HfRow| !is_training(r));
    line("all", &|_: &HfRow| true);
    md
}
