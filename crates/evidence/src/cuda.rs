//! memfit against real CUDA runs: `torch.cuda.max_memory_allocated` of real `transformers`
//! models trained and run with `generate` on one NVIDIA H200 (`tests/data/cuda_h200`,
//! measured by `tools/measure_cuda.py`; torch 2.11.0+cu130, transformers 5.17.0, peft 0.21.0).
//! Every run of the calibration set is **calibration**: the CUDA mechanisms (`docs/cuda.md`)
//! were found on them. A held-out set measured the same way is kept outside the project.
//! Set D (`tests/data/cuda_h200_d`, [`TRAIN_D`]) holds out a third of its runs ([`held_out`]).

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

/// Whether a set D run is held out ([`held_out`], for ids known to be set D's).
pub fn held_out_d(id: &str) -> bool {
    held_out(id)
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
    train_keys_on(r, "h200")
}

/// [`train_keys`] on another GPU preset (`h100-80` for set H).
pub fn train_keys_on(r: &Value, gpu: &str) -> String {
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
        "framework=pytorch&mode=train&gpu={gpu}&batch={}&seq={}&attn={}&recompute={ckpt}&optimizer={}&precision={precision}",
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
    /// Training runs: what runs out, `max_memory_reserved` + the CUDA context ([`CONTEXT_BYTES`]).
    pub reserved: Option<u64>,
    /// memfit's `per_gpu_bytes`.
    pub per_gpu: u64,
    /// Whether memfit replays the run's op-level stream (`memfit_core::opstream::run_of`) or
    /// adds the flat `frag` share.
    pub op_level: bool,
}

impl CudaRow {
    /// `(estimated − measured) / measured`.
    pub fn rel_error(&self) -> f64 {
        (self.estimated as f64 - self.measured as f64) / self.measured as f64
    }

    /// `(per_gpu_bytes − (max_memory_reserved + context)) / (max_memory_reserved + context)`.
    pub fn reserved_error(&self) -> Option<f64> {
        self.reserved
            .map(|m| (self.per_gpu as f64 - m as f64) / m as f64)
    }
}

/// The CUDA context of the runs' stack (torch 2.11.0+cu130 on an H200), measured by
/// `tools/measure_cuda.py` as the device's used bytes outside the caching allocator after
/// CUDA's initialisation (`env.jsonl`: `context_bytes`, the same in both sets).
pub const CONTEXT_BYTES: u64 = 718_077_952;

/// `(n, median |error|, max |error|)` of `per_gpu_bytes` against reserved + context over the
/// training rows `keep` accepts.
pub fn reserved_stats(rows: &[CudaRow], keep: impl Fn(&CudaRow) -> bool) -> (usize, f64, f64) {
    let errs: Vec<f64> = rows
        .iter()
        .filter(|r| keep(r))
        .filter_map(|r| r.reserved_error().map(f64::abs))
        .collect();
    let (median, max) = crate::stats::median_max(errs.clone());
    (errs.len(), median, max)
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
    rows_of(TRAIN, INFER, "h200")
}

/// [`rows`] for set D (`tests/data/cuda_h200_d`): calibration and held-out runs alike (split
/// them with [`held_out`]).
pub fn rows_d() -> (Vec<CudaRow>, Vec<(String, String)>) {
    rows_of(TRAIN_D, INFER_D, "h200")
}

/// The rows of a training and a `generate` file, their keys on the GPU preset `gpu`.
pub(crate) fn rows_of(
    train: &'static str,
    infer: &'static str,
    gpu: &str,
) -> (Vec<CudaRow>, Vec<(String, String)>) {
    let mut out = Vec::new();
    let mut failed = Vec::new();
    let parts: [Part; 2] = [
        ("train", train, train_keys, |r| {
            r["iters"][1]["peak"].as_u64()
        }),
        ("generate", infer, infer_keys, |r| r["peak"].as_u64()),
    ];
    for (kind, text, keys, peak) in parts {
        for r in runs(text).iter().filter(|r| r.get("error").is_none()) {
            let id = r["id"].as_str().unwrap_or("").to_string();
            let q = keys(r).replace("gpu=h200", &format!("gpu={gpu}"));
            let (Some(measured), Ok(s)) = (peak(r), settings(r, &q)) else {
                failed.push((id, "no peak or settings refused".into()));
                continue;
            };
            let e = estimate_with(&s.scenario, &[]);
            let reserved = (kind == "train")
                .then(|| r["max_reserved"].as_u64().map(|x| x + CONTEXT_BYTES))
                .flatten();
            out.push(CudaRow {
                id,
                model: r["model"].as_str().unwrap_or("").to_string(),
                kind,
                query: encode(&s),
                measured,
                estimated: e.allocated_bytes,
                reserved,
                per_gpu: e.per_gpu_bytes,
                op_level: memfit_core::opstream::run_of(&s.scenario)
                    .and_then(|r| memfit_core::opstream::replayed(&r))
                    .is_some(),
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

/// Whether a run is held out: set D's split, fixed before anything was measured
/// (`tests/data/cuda_h200_d/README.md`), holds out every run whose number is a multiple of 3
/// (D03, D06, …, D36, DR3, DJ03, …). The calibration set (`C…`) is all calibration.
pub fn held_out(id: &str) -> bool {
    let digits: String = id.chars().filter(char::is_ascii_digit).collect();
    id.starts_with('D') && digits.parse::<u32>().is_ok_and(|n| n.is_multiple_of(3))
}

/// One training run's step time against memfit's.
#[derive(Clone, Debug)]
pub struct StepRow {
    /// `C01`, `D04`, …
    pub id: String,
    /// The model (`qwen3-1.7b`).
    pub model: String,
    /// memfit's inputs, as a query string.
    pub query: String,
    /// The measured step: the faster of iterations 2 and 3 (`step_s`, each the sum of the
    /// iteration's `fw_s + bw_s + opt_s`), seconds.
    pub measured_s: f64,
    /// The measured iteration's optimizer phase (`iters[1].opt_s`), seconds.
    pub measured_opt_s: f64,
    /// memfit's `time.step_s`.
    pub step_s: f64,
    /// memfit's optimizer step (`breakdown.optimizer_s`).
    pub optimizer_s: f64,
    /// Hugging Face eager costs counted (`eager_costs`).
    pub eager_costs: bool,
    /// Held out ([`held_out`]).
    pub held_out: bool,
    /// PEFT adapters.
    pub lora: bool,
}

impl StepRow {
    /// `(memfit − measured) / measured`.
    pub fn rel_error(&self) -> f64 {
        (self.step_s - self.measured_s) / self.measured_s
    }
}

/// Every training run of a file that ran, memfit's step against the measured one; runs
/// whose settings cannot be built are returned beside, with why.
pub fn step_rows(text: &str) -> (Vec<StepRow>, Vec<(String, String)>) {
    step_rows_on(text, "h200", "", held_out)
}

/// [`step_rows`] on another GPU preset, with keys added to every run's (`&tf32=on`) and that
/// set's held-out rule.
pub fn step_rows_on(
    text: &str,
    gpu: &str,
    extra: &str,
    held: fn(&str) -> bool,
) -> (Vec<StepRow>, Vec<(String, String)>) {
    use memfit_core::estimate::Prepared;
    use memfit_core::steptime::step_time;
    let (mut out, mut failed) = (Vec::new(), Vec::new());
    for r in runs(text).iter().filter(|r| r.get("error").is_none()) {
        let id = r["id"].as_str().unwrap_or("").to_string();
        let q = train_keys_on(r, gpu) + extra;
        let steps = r["step_s"].as_array().map(Vec::as_slice).unwrap_or(&[]);
        let measured_s = steps
            .iter()
            .skip(1)
            .filter_map(Value::as_f64)
            .fold(f64::INFINITY, f64::min);
        let s = match settings(r, &q) {
            Ok(s) => s,
            Err(w) => {
                failed.push((id, w));
                continue;
            }
        };
        let Some(t) = step_time(&s.scenario, &Prepared::of(&s.scenario)) else {
            failed.push((id, "no step time".into()));
            continue;
        };
        out.push(StepRow {
            held_out: held(&id),
            id,
            model: r["model"].as_str().unwrap_or("").to_string(),
            query: q,
            measured_s,
            measured_opt_s: r["iters"][1]["opt_s"].as_f64().unwrap_or(0.0),
            step_s: t.step_s,
            optimizer_s: t.breakdown.optimizer_s,
            eager_costs: t.eager_costs,
            lora: r["lora"].is_object(),
        });
    }
    (out, failed)
}
