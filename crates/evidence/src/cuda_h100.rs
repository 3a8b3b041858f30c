//! Set H: the same `transformers` runs as the H200 sets, measured on one NVIDIA H100 80GB
//! HBM3 (`tests/data/cuda_h100`, `tools/measure_cuda.py`, torch 2.11.0+cu130, transformers
//! 5.17.0, 2026-11-27): step time on a second GPU, and the fit verdict at 80 GB (14 of the 62
//! training runs ran out of memory there). The held-out split was fixed before measuring
//! ([`held_out_h`]); the GEMM rates of the same file are inputs, the runs judge them.

use crate::cuda::{runs, settings, step_rows_on, train_keys_on, StepRow, CONTEXT_BYTES};
use memfit_core::contract::report::estimate_with;
use serde_json::Value;

/// Set H's training runs (`train.jsonl`), those that ran out of memory included (`oom`).
pub const TRAIN_H: &str = include_str!("../../../tests/data/cuda_h100/train.jsonl");
/// Set H's `transformers.Trainer` runs.
pub const TRAINER_H: &str = include_str!("../../../tests/data/cuda_h100/trainer.jsonl");
/// The fp32 runs again with TF32 on (`tf32/train.jsonl`, `--tf32`).
pub const TRAIN_H_TF32: &str = include_str!("../../../tests/data/cuda_h100/tf32/train.jsonl");
/// Set H's `generate` runs.
pub const INFER_H: &str = include_str!("../../../tests/data/cuda_h100/infer.jsonl");
/// The training list again, for the spread between two runs of one step (`repeat/`, C01–D20).
pub const TRAIN_H_REPEAT: &str = include_str!("../../../tests/data/cuda_h100/repeat/train.jsonl");
/// The H200 sets, for the configs of runs that ran out of memory on the H100 (whose records
/// carry none).
const H200_TRAIN: [&str; 2] = [crate::cuda::TRAIN, crate::cuda::TRAIN_D];

/// The preset set H ran on.
pub const GPU: &str = "h100-80";

/// Whether a set H run is held out: every run whose number is a multiple of 3, of every list
/// (C03, …, D36, R03, DR3, J03, DJ03, …), fixed before measuring
/// (`tests/data/cuda_h100/README.md`).
pub fn held_out_h(id: &str) -> bool {
    let digits: String = id.chars().filter(char::is_ascii_digit).collect();
    digits.parse::<u32>().is_ok_and(|n| n.is_multiple_of(3))
}

/// Set H's allocated peaks (training and `generate`) against memfit's on `h100-80`, the
/// runs that ran (split them with [`held_out_h`]).
pub fn rows_h() -> (Vec<crate::cuda::CudaRow>, Vec<(String, String)>) {
    crate::cuda::rows_of(TRAIN_H, INFER_H, GPU)
}

/// Set H's steps against memfit's on `h100-80`.
pub fn step_rows_h(text: &str) -> (Vec<StepRow>, Vec<(String, String)>) {
    step_rows_on(text, GPU, "", held_out_h)
}

/// The fp32 runs measured with TF32 on ([`TRAIN_H_TF32`]) against memfit's with `tf32=on`.
pub fn step_rows_h_tf32() -> (Vec<StepRow>, Vec<(String, String)>) {
    step_rows_on(TRAIN_H_TF32, GPU, "&tf32=on", held_out_h)
}

/// One training run's fit on the H100: whether it ran, against memfit's verdict.
#[derive(Clone, Debug)]
pub struct FitRow {
    /// `C01`, …
    pub id: String,
    /// The model.
    pub model: String,
    /// It ran (false: `torch.OutOfMemoryError`).
    pub ran: bool,
    /// Ran: `max_memory_reserved` + the CUDA context, bytes.
    pub reserved: Option<u64>,
    /// Ran: `max_memory_allocated`, bytes.
    pub allocated: Option<u64>,
    /// memfit's `per_gpu_bytes` on `h100-80`.
    pub per_gpu: u64,
    /// memfit's `allocated_bytes`.
    pub estimated: u64,
    /// memfit's verdict.
    pub fits: bool,
    /// memfit's bound (`gpu.usable_bytes`).
    pub usable: u64,
    /// Held out ([`held_out_h`]).
    pub held_out: bool,
}

/// The config of a run: its own, or (out of memory: none recorded) that of the same model in
/// the H200 sets.
fn with_config(r: &Value) -> Option<Value> {
    if r.get("hf_config").is_some_and(|c| c.is_object()) {
        return Some(r.clone());
    }
    let model = r["model"].as_str()?;
    let cfg = H200_TRAIN
        .iter()
        .flat_map(|t| runs(t))
        .find(|x| x["model"].as_str() == Some(model) && x["hf_config"].is_object())?;
    let mut out = r.clone();
    out["hf_config"] = cfg["hf_config"].clone();
    Some(out)
}

/// Every training run of set H, memfit's verdict on `h100-80` against whether it ran; runs
/// whose settings cannot be built are returned beside, with why.
pub fn fit_rows() -> (Vec<FitRow>, Vec<(String, String)>) {
    let (mut out, mut failed) = (Vec::new(), Vec::new());
    for r in runs(TRAIN_H) {
        let id = r["id"].as_str().unwrap_or("").to_string();
        let ran = r.get("error").is_none();
        let Some(r) = with_config(&r) else {
            failed.push((id, "no config for the model".into()));
            continue;
        };
        let s = match settings(&r, &train_keys_on(&r, GPU)) {
            Ok(s) => s,
            Err(w) => {
                failed.push((id, w));
                continue;
            }
        };
        let e = estimate_with(&s.scenario, &[]);
        out.push(FitRow {
            held_out: held_out_h(&id),
            id,
            model: r["model"].as_str().unwrap_or("").to_string(),
            ran,
            reserved: ran
                .then(|| r["max_reserved"].as_u64().map(|x| x + CONTEXT_BYTES))
                .flatten(),
            allocated: ran.then(|| r["iters"][1]["peak"].as_u64()).flatten(),
            per_gpu: e.per_gpu_bytes,
            estimated: e.allocated_bytes,
            fits: e.fits,
            usable: e.gpu.usable_bytes,
        });
    }
    (out, failed)
}

/// Set H's fit verdicts for the page ("cuda" → "h100"): memfit on `h100-80` against whether
/// each training run ran there ([`fit_rows`]).
pub fn verdicts_json() -> serde_json::Value {
    let (rows, _) = fit_rows();
    let right = |held: bool| {
        let r: Vec<_> = rows.iter().filter(|r| !held || r.held_out).collect();
        (r.len(), r.iter().filter(|r| r.ran == r.fits).count())
    };
    let ((n, ok), (hn, hok)) = (right(false), right(true));
    let wrong: Vec<&str> = rows
        .iter()
        .filter(|r| r.ran != r.fits)
        .map(|r| r.id.as_str())
        .collect();
    serde_json::json!({"device": "H100 80GB HBM3", "n": n, "oom": rows.iter().filter(|r| !r.ran).count(),
           "right": ok, "held_out_n": hn, "held_out_right": hok, "wrong": wrong})
}
