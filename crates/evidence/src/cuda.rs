//! memfit against real CUDA runs: `torch.cuda.max_memory_allocated` of real `transformers`
//! models trained and run with `generate` on one NVIDIA H200 (`tests/data/cuda_h200`,
//! measured by `tools/measure_cuda.py`; torch 2.11.0+cu130, transformers 5.17.0, peft 0.21.0).
//! Every run here is **calibration**: the CUDA mechanisms (`docs/cuda.md`) were found on
//! them. A held-out set measured the same way is kept outside the project.

use memfit_core::contract::query::encode;
use memfit_core::contract::report::estimate_with;
use memfit_core::contract::Settings;
use serde_json::Value;

/// The training runs (`train.jsonl`, one JSON object a line).
pub const TRAIN: &str = include_str!("../../../tests/data/cuda_h200/train.jsonl");
/// The `generate` runs (`infer.jsonl`).
pub const INFER: &str = include_str!("../../../tests/data/cuda_h200/infer.jsonl");

/// Set D's training runs (`tests/data/cuda_h200_d`, measured the same way on the same stack).
pub const TRAIN_D: &str = include_str!("../../../tests/data/cuda_h200_d/train.jsonl");
/// Set D's `generate` runs.
pub const INFER_D: &str = include_str!("../../../tests/data/cuda_h200_d/infer.jsonl");

/// Whether a set D run is held out: its number is a multiple of 3 (D03, …, DJ03, …, DR3),
/// fixed before anything was measured (`tests/data/cuda_h200_d/README.md`). Nothing is
/// tuned on these; the tests read only the others.
pub fn held_out_d(id: &str) -> bool {
    let digits: String = id.chars().filter(char::is_ascii_digit).collect();
    digits.parse::<u32>().map_or(true, |n| n % 3 == 0)
}

/// The runs of one file, in order.
pub fn runs(text: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// A training run's keys, as `tools/compare.py` builds them, with PEFT's LoRA targets named
/// as memfit spells them (`all-linear` → `all`, `qv`, `attn`).
pub fn train_keys(r: &Value) -> String {
    let s = |k: &str| r[k].as_str().unwrap_or("").to_string();
    let lora = r["lora"].as_object();
    // PEFT over a bf16 base runs its forward under bf16 autocast.
    let precision = match (s("policy").as_str(), lora.is_some()) {
        ("fp32", _) => "fp32",
        ("amp_bf16", _) | (_, true) => "bf16",
        _ => "bf16-pure",
    };
    let ckpt = if r["ckpt"].as_bool().unwrap_or(false) {
        "full"
    } else {
        "none"
    };
    let mut q = format!(
        "framework=pytorch&mode=train&gpu=h200&batch={}&seq={}&attn={}&recompute={ckpt}&optimizer={}&precision={precision}",
        r["batch"], r["seq"], s("attn"), s("optimizer"),
    );
    if s("optimizer") == "adamw" && s("adam_impl") != "foreach" {
        q += &format!("&adam_impl={}", s("adam_impl"));
    }
    if let Some(l) = lora {
        let targets = match l["targets"].as_str().unwrap_or("all") {
            "all-linear" => "all",
            t => t,
        };
        q += &format!("&finetune=lora&lora_rank={}&lora_targets={targets}", l["r"]);
    }
    q
}

/// A `generate` run's keys (bf16 weights, no autocast).
pub fn infer_keys(r: &Value) -> String {
    format!(
        "framework=pytorch&mode=infer&gpu=h200&batch={}&seq={}&gen={}&attn={}&precision=bf16-pure",
        r["batch"],
        r["prompt"],
        r["new_tokens"],
        r["attn"].as_str().unwrap_or("sdpa")
    )
}

/// A run's settings: its `config.json` imported, then `keys`.
///
/// # Errors
/// The config cannot be imported, or a key is refused (the warnings, joined).
pub fn settings(r: &Value, keys: &str) -> Result<Settings, String> {
    crate::hf::config_settings(r, keys)
}

/// One compared run.
#[derive(Clone, Debug)]
pub struct CudaRow {
    /// `C01`, `J03`, …
    pub id: String,
    /// The model (`llama-3.2-3b`).
    pub model: String,
    /// `train` or `generate`.
    pub kind: &'static str,
    /// memfit's inputs: the imported config and the run's keys, as a query string.
    pub query: String,
    /// The measured peak, `max_memory_allocated`, bytes.
    pub measured: u64,
    /// memfit's `allocated_bytes`.
    pub estimated: u64,
}

impl CudaRow {
    /// `(estimated − measured) / measured`.
    pub fn rel_error(&self) -> f64 {
        (self.estimated as f64 - self.measured as f64) / self.measured as f64
    }
}

/// One file of runs: its kind, its text, how a run's keys are built and where its peak is.
type Part = (
    &'static str,
    &'static str,
    fn(&Value) -> String,
    fn(&Value) -> Option<u64>,
);

/// Every run that ran (the out-of-memory runs have no config) compared; runs whose
/// settings cannot be built are returned beside, with why.
pub fn rows() -> (Vec<CudaRow>, Vec<(String, String)>) {
    let mut out = Vec::new();
    let mut failed = Vec::new();
    let parts: [Part; 2] = [
        ("train", TRAIN, train_keys, |r| {
            r["iters"][1]["peak"].as_u64()
        }),
        ("generate", INFER, infer_keys, |r| r["peak"].as_u64()),
    ];
    for (kind, text, keys, peak) in parts {
        for r in runs(text).iter().filter(|r| r.get("error").is_none()) {
            let id = r["id"].as_str().unwrap_or("").to_string();
            let (Some(measured), Ok(s)) = (peak(r), settings(r, &keys(r))) else {
                failed.push((id, "no peak or settings refused".into()));
                continue;
            };
            let e = estimate_with(&s.scenario, &[]);
            out.push(CudaRow {
                id,
                model: r["model"].as_str().unwrap_or("").to_string(),
                kind,
                query: encode(&s),
                measured,
                estimated: e.allocated_bytes,
            });
        }
    }
    (out, failed)
}

/// `(n, median |error|, max |error|)` of the rows of one kind.
pub fn stats(rows: &[CudaRow], kind: &str) -> (usize, f64, f64) {
    let errs: Vec<f64> = rows
        .iter()
        .filter(|r| r.kind == kind)
        .map(|r| r.rel_error().abs())
        .collect();
    let (median, max) = crate::stats::median_max(errs.clone());
    (errs.len(), median, max)
}
