//! memfit against real `transformers` runs (`tools/measure_hf.py`: models built with
//! `AutoModelForCausalLM.from_config`, the loops people run — `model(…, labels=…).loss`,
//! the HF `Trainer`, FSDP2 `fully_shard` per decoder layer, `generate` — measured on CPU
//! with PyTorch's MemTracker / FSDPMemTracker; no CUDA caching allocator).
//!
//! Each run carries its model's `config.json` (`hf_config`), which memfit imports as the
//! page's importer does; the run's loop, precision, optimizer, attention kernel,
//! checkpointing, batch and sequence become query keys. The comparison is memfit's
//! `allocated_bytes` against MemTracker's peak `Total`.
//!
//! # Held out
//! The run list and its split were committed before any modelling from these runs
//! (`tests/data/hf_runs.json`): a run is held out when `int(sha256(id)[:8], 16) % 3 == 0`.
//! Mechanisms are built from the calibration runs only; the held-out figures are
//! reported, never tuned on, and no test bound is tightened on them.

use memfit_core::contract::query::{apply_import, decode_onto, encode};
use memfit_core::contract::report::estimate_with;
use memfit_core::contract::Settings;
use memfit_core::estimate::Phase;
use serde_json::Value;

use crate::stats::median_max;

/// Held-out runs moved to calibration, each with why: their configs and peaks were read
/// while a mechanism was being derived, so they no longer test it. (The split rule stays
/// as committed in `tests/data/hf_runs.json`; these runs are counted as calibration.)
pub const MOVED_TO_CALIBRATION: &[(&str, &str)] = &[
    ("prefill/llama/s/bf16/eager/ltk1/b1s512", "its ACT was decomposed to derive eager attention's softmax moment (eager_scores)"),
    ("prefill/qwen2/s/bf16/eager/ltk1/b1s512", "checked against eager_scores while deriving it"),
    ("train/qwen3/s/fp32/adamw-foreach/sdpa/nockpt/loss=model/b2s256", "its config and peak were read while deriving the per-head q/k norms (QK_NORMS)"),
    ("train/gemma2/s/fp32/adamw-foreach/eager/nockpt/loss=model/b2s256", "its config and peak were read while deriving Gemma's post-norms and soft-capping (POST_NORMS, SOFTCAP_*)"),
    ("prefill/gemma2/m/fp32/eager/ltk0/b2s384", "its −19 % (2026-11-24) was read to name the mechanism it lacked, Gemma 2's final-logit soft-capping at inference (two b·s·V tensors; `infer::workspace_items`, c = 2), which is now modelled"),
];

/// Whether a run counts as held out: the committed split, less the moved runs.
pub fn held_out(run: &Value) -> bool {
    let id = run["id"].as_str().unwrap_or("");
    run["held_out"].as_bool().unwrap_or(false)
        && !MOVED_TO_CALIBRATION.iter().any(|(m, _)| *m == id)
}

/// The measurements, as `tools/measure_hf.py` wrote them.
pub const HF: &str = include_str!("../../../tests/data/hf_measurements.json");

/// One real-stack run compared.
#[derive(Clone, Debug, PartialEq)]
pub struct HfRow {
    /// The run's id (also what decides its split).
    pub id: String,
    /// Model family (`llama`, `gpt2`, …).
    pub family: String,
    /// `train`, `trainer`, `fsdp`, `infer` or `prefill`.
    pub kind: String,
    /// Held out from modelling.
    pub held_out: bool,
    /// memfit's inputs: the imported config and the run's keys, as a query string.
    pub query: String,
    /// MemTracker's peak total, bytes.
    pub measured: u64,
    /// memfit's allocated peak, bytes.
    pub estimated: u64,
    /// The phase of memfit's peak.
    pub phase_estimated: &'static str,
    /// The phase of the measured peak (the largest of the run's phase peaks).
    pub phase_measured: String,
}

impl HfRow {
    /// `(estimated − measured) / measured`.
    pub fn rel_error(&self) -> f64 {
        (self.estimated as f64 - self.measured as f64) / self.measured as f64
    }

    /// One line for a test's log: part, id, both peaks, the error and both phases.
    pub fn line(&self) -> String {
        format!(
            "{} {}: est {} meas {} ({:+.1} %) phase {} / {}",
            if self.held_out { "HELD" } else { "cal " },
            self.id,
            self.estimated,
            self.measured,
            self.rel_error() * 100.0,
            self.phase_measured,
            self.phase_estimated
        )
    }
}

/// The keys a run's settings become (after its imported model).
///
/// `precision`: the harness's `bf16` is pure bf16 (`model.to(torch.bfloat16)`: memfit's
/// `bf16-pure` in training), `autocast-bf16` is fp32 parameters under autocast (memfit's
/// `bf16` under `framework=pytorch`). The Trainer's default optimizer in transformers 5.24 is
/// `adamw_torch_fused` (`torch.optim.AdamW(fused=True)`, recorded per run in `info`).
/// CUDA context, NCCL and fragmentation are 0: MemTracker counts tensors only.
pub fn run_keys(run: &Value) -> String {
    let s = |k: &str| run[k].as_str().unwrap_or("").to_string();
    let n = |k: &str| run[k].as_u64().unwrap_or(0);
    let kind = s("kind");
    let precision = match (kind.as_str(), s("precision").as_str()) {
        ("infer" | "prefill", p) => p.replace("autocast-", ""),
        (_, "bf16") => "bf16-pure".into(),
        (_, "autocast-bf16") => "bf16".into(),
        (_, p) => p.to_string(),
    };
    let optimizer = match s("optimizer").as_str() {
        "adamw-foreach" => "adamw&adam_impl=foreach".to_string(),
        "adamw-fused" | "trainer-default" => "adamw&adam_impl=fused".into(),
        "adamw-forloop" => "adamw&adam_impl=forloop".into(),
        o => o.to_string(),
    };
    let base = "framework=pytorch&cuda_ctx=0&frag=0&nccl=0&device=cpu";
    let shape = format!("batch={}&seq={}&attn={}", n("batch"), n("seq"), s("attn"));
    match kind.as_str() {
        "infer" => format!(
            "{base}&mode=infer&precision={precision}&{shape}&gen={}",
            n("gen")
        ),
        "prefill" => format!(
            "{base}&mode=infer&precision={precision}&{shape}&gen=0&logits={}",
            if n("logits_to_keep") == 0 {
                "prompt"
            } else {
                "last"
            }
        ),
        _ => {
            let ckpt = if run["ckpt"].as_bool().unwrap_or(false) {
                "full"
            } else {
                "none"
            };
            let fsdp = if kind == "fsdp" {
                let p = if run["mp_policy"].as_bool().unwrap_or(false) {
                    "bf16"
                } else {
                    "fp32"
                };
                format!(
                    "&fsdp=full_shard&gpus_per_node={}&precision={p}",
                    n("world")
                )
            } else {
                format!("&precision={precision}")
            };
            // The harness's `loss=loop` runs compute the loss from logits they hold.
            let loss = if s("loop") == "loss=loop" {
                "&loss=loop"
            } else {
                ""
            };
            format!("{base}{fsdp}&optimizer={optimizer}&recompute={ckpt}&{shape}{loss}")
        }
    }
}

/// The settings of a run: its `config.json` imported, then its keys.
///
/// # Errors
/// The config cannot be imported, or a key is refused (the warnings, joined).
pub fn run_settings(run: &Value) -> Result<Settings, String> {
    config_settings(run, &run_keys(run))
}

/// A run's `hf_config` imported, then `keys` decoded onto it (the CPU tracker's runs and the
/// CUDA runs of `crate::cuda` alike).
///
/// # Errors
/// The config cannot be imported, or a key is refused (the warnings, joined).
pub fn config_settings(run: &Value, keys: &str) -> Result<Settings, String> {
    let config = serde_json::to_string(&run["hf_config"]).map_err(|e| e.to_string())?;
    let imported = memfit_core::hfconfig::parse(&config)?;
    let mut base = Settings::default();
    // Import notes (e.g. an unknown type read as Llama-style) are not failures.
    let _ = apply_import(&mut base, &imported);
    let (s, w) = decode_onto(base, keys);
    if w.is_empty() {
        Ok(s)
    } else {
        Err(w
            .iter()
            .map(|w| format!("{}={}: {}", w.key, w.value, w.message))
            .collect::<Vec<_>>()
            .join("; "))
    }
}

fn phase_name(p: Phase) -> &'static str {
    match p {
        Phase::Forward => "forward",
        Phase::Backward => "backward",
        Phase::OptimizerStep => "optimizer_step",
        Phase::Prefill => "prefill",
        Phase::Decode => "decode",
        _ => "other",
    }
}

/// Every run compared; runs that cannot be estimated are returned beside, with why.
pub fn hf_rows(doc: &Value) -> (Vec<HfRow>, Vec<(String, String)>) {
    rows_with(doc, "", held_out)
}

/// Every run of `doc` compared, its keys ([`run_keys`]) followed by `extra`, its part
/// decided by `held`; runs that cannot be estimated are returned beside, with why.
pub fn rows_with(
    doc: &Value,
    extra: &str,
    held: fn(&Value) -> bool,
) -> (Vec<HfRow>, Vec<(String, String)>) {
    let mut rows = Vec::new();
    let mut failed = Vec::new();
    for run in doc["runs"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
        let id = run["id"].as_str().unwrap_or("").to_string();
        let s = match config_settings(run, &format!("{}{extra}", run_keys(run))) {
            Ok(s) => s,
            Err(e) => {
                failed.push((id, e));
                continue;
            }
        };
        let e = estimate_with(&s.scenario, &[]);
        let phase_measured = run["phase_peaks"]
            .as_object()
            .and_then(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_u64()?)))
                    .max_by_key(|(_, v)| *v)
                    .map(|(k, _)| k)
            })
            .unwrap_or_default();
        rows.push(HfRow {
            id,
            family: run["family"].as_str().unwrap_or("").into(),
            kind: run["kind"].as_str().unwrap_or("").into(),
            held_out: held(run),
            query: encode(&s),
            measured: run["peak"]["Total"].as_u64().unwrap_or(0),
            estimated: e.allocated_bytes,
            phase_estimated: phase_name(e.peak_phase),
            phase_measured,
        });
    }
    (rows, failed)
}

/// The measured totals at the ends of a training step's phases, against the step
/// program's running total at the same places: `(snapshot, measured, memfit)` for
/// `post_forward` (the forward's last event), `post_backward` (the backward's last),
/// `post_step` (before `zero_grad`) and `post_zero_grad` (the step's end). Training runs
/// without FSDP only (FSDP2's snapshots also count the fake group's communication buffers);
/// `None` when the run has no snapshots or no timeline.
pub fn phase_ends(run: &Value) -> Option<Vec<(&'static str, u64, u64)>> {
    use memfit_core::timeline::{timeline, StepPhase};
    if !matches!(run["kind"].as_str(), Some("train" | "trainer")) {
        return None;
    }
    let s = run_settings(run).ok()?;
    let t = timeline(&s.scenario)?;
    let ev = &t.events;
    let last = |ph: StepPhase| {
        ev.iter()
            .rev()
            .find(|e| e.phase == ph)
            .map(|e| e.total_bytes)
    };
    let zero_grad = ev
        .iter()
        .position(|e| e.phase == StepPhase::Optimizer && e.what.contains("zero_grad"))?;
    let before_zero_grad = if zero_grad == 0 {
        0
    } else {
        ev[zero_grad - 1].total_bytes
    };
    let snap = &run["snapshots"];
    let got = [
        ("post_forward", last(StepPhase::Forward)?),
        ("post_backward", last(StepPhase::Backward)?),
        ("post_step", before_zero_grad),
        ("post_zero_grad", ev.last()?.total_bytes),
    ];
    got.iter()
        .map(|&(k, est)| Some((k, snap[k].as_u64()?, est)))
        .collect()
}

/// The embedded measurements compared.
pub fn embedded_hf_rows() -> (Vec<HfRow>, Vec<(String, String)>) {
    match serde_json::from_str::<Value>(HF) {
        Ok(doc) => hf_rows(&doc),
        Err(e) => (Vec::new(), vec![("(file)".into(), e.to_string())]),
    }
}

/// Median and max |error| of the rows that `keep` selects: `(n, median, max)`.
pub fn stats(rows: &[HfRow], keep: impl Fn(&HfRow) -> bool) -> (usize, f64, f64) {
    let errs: Vec<f64> = rows
        .iter()
        .filter(|r| keep(r))
        .map(|r| r.rel_error().abs())
        .collect();
    let n = errs.len();
    let (median, max) = median_max(errs);
    (n, median, max)
}

fn cell((n, median, max): (usize, f64, f64)) -> String {
    if n == 0 {
        "—".into()
    } else {
        format!("{n}: {:.1} % / {:.1} %", median * 100.0, max * 100.0)
    }
}

/// What these runs changed (2026-11-24): the mechanisms added from the calibration runs,
/// each with the measurement that showed it, and the figures before and after on the
/// same runs (before: memfit at efc8280 with `logits=all` for `logits_to_keep=0`).
pub const CHANGED: &str = "\n### What the real-stack runs changed (2026-11-24)\n\n\
Mechanisms added, each from calibration runs (the measurement that showed it in brackets):\n\n\
- `loss=model` (default) / `loss=loop` (`framework=pytorch`): when the model computes the loss \
(`model(…, labels=…).loss`, the HF Trainer) its output is dropped before `backward()`: no held output, and the loss's \
backward holds the fp32 log-softmax output and two fp32 gradients, `12·T·V`, not `(k + 12)·T·V` \
[`train/llama/s/fp32/adamw-foreach/sdpa/nockpt/loss=model/b2s256`: TEMP = 2·4·T·V at a peak with GRAD = 0; \
`post_backward` = weights + states + gradients exactly].\n\
- The loss's two moments (`train::loss_moments`): the program holds `N + (k + 4 + u)·T·V` at the forward's end and \
reaches the backward's moment at the start of the backward, so the peak's phase is the backward's \
[the measured phase peaks: backward in 169 of the 230 training runs].\n\
- `logits=prompt` (`logits_to_keep=0`, no loss): every prompt position's logits in the model's dtype \
[`prefill/*/m/fp32/sdpa/ltk0`: −1.4 … −2.9 % with it, +17 … +29 % as `logits=all`].\n\
- Eager attention at inference (`infer::eager_scores`): the masked scores, their fp32 upcast and the softmax's fp32 \
output together, and the 4-D additive mask [`prefill/llama/s/bf16/eager/ltk1/b1s512`, moved to calibration: ACT \
23.66 MB = 10·8·512² + 2·512² + the layer's tensors].\n\
- Per-head q/k norms (Qwen3, Gemma 3) and sandwich post-norms (Gemma 2, 3) save their inputs, statistics and \
normalised tensors (`QK_NORMS`, `POST_NORMS`) [`train/gemma3/s/fp32/adamw-foreach/sdpa/nockpt/loss=model/b2s256`: \
−6.7 % → +0.4 %].\n\
- Gemma 2's soft-capping saves the tanh's output of the attention scores (eager) and of the final logits \
(`SOFTCAP_SCORES`, `SOFTCAP_LOGITS`) [`train/gemma2/s/*` calibration runs: −10 … −11 % → −0.1 … −3 %].\n\
- GPT-2's `gelu_new` is Python ops: its graph saves five `f`-wide tensors, not two (`Arch::gelu_ops`, `m_s = 5`) \
[`train/gpt2/s/fp32/adamw-foreach/sdpa/nockpt/loss=model/b2s256`: −20.6 % → −2.9 %].\n\
- FSDP2 pads dim 0 of transformers 5's fused 3-D expert weights to the sharding degree (`fsdp_expert_padding`): with \
more ranks than experts each rank holds, and each all-gather moves, `⌈E/N_s⌉` experts' worth \
[`fsdp/mixtral/m/*/w32`: −62 % and −64 % → −1.7 % and −4.3 %; at w8 nothing changes].\n\n\
memfit's first harness (`tools/measure_pytorch.py`) computes the loss from logits it holds: its runs are read \
with `loss=loop` and keep their figures.\n\n\
Median / max |error| (%), before and after, per part:\n\n\
| family | calibration before | calibration after | held out before | held out after |\n\
|---|---|---|---|---|\n\
| gemma2 | 8.8 / 38.0 | 0.9 / 7.6 | 8.1 / 47.9 | 0.6 / 19.2 |\n\
| gemma3 | 4.2 / 47.5 | 1.3 / 10.8 | 3.5 / 8.0 | 1.1 / 3.2 |\n\
| gpt2 | 8.9 / 122.2 | 2.4 / 62.6 | 7.3 / 19.4 | 1.6 / 2.9 |\n\
| gpt_neox | 5.6 / 21.9 | 0.0 / 3.6 | 3.2 / 64.4 | 0.6 / 3.3 |\n\
| llama | 5.9 / 60.6 | 0.8 / 3.8 | 5.8 / 11.6 | 0.5 / 2.4 |\n\
| mistral | 5.0 / 59.6 | 1.0 / 5.8 | 6.6 / 9.0 | 1.0 / 5.8 |\n\
| mixtral | 6.3 / 62.0 | 1.7 / 9.3 | 6.2 / 55.6 | 0.5 / 8.0 |\n\
| phi3 | 6.0 / 63.1 | 1.1 / 8.6 | 6.4 / 23.9 | 0.6 / 7.0 |\n\
| qwen2 | 7.8 / 72.5 | 1.4 / 8.2 | 9.4 / 13.2 | 1.3 / 8.1 |\n\
| qwen2_moe | 5.9 / 58.8 | 0.4 / 5.3 | 3.3 / 11.4 | 1.1 / 5.3 |\n\
| qwen3 | 4.0 / 51.7 | 1.2 / 7.8 | 2.5 / 44.6 | 1.5 / 7.8 |\n\
| all | 5.9 / 122.2 | 1.2 / 62.6 | 6.1 / 64.4 | 1.1 / 19.2 |\n\
\n\
| kind | calibration before | calibration after | held out before | held out after |\n\
|---|---|---|---|---|\n\
| fsdp | 7.7 / 62.0 | 1.9 / 8.3 | 6.1 / 11.6 | 2.0 / 5.5 |\n\
| infer | 3.4 / 16.6 | 2.4 / 16.6 | 2.5 / 14.6 | 1.8 / 7.7 |\n\
| prefill | 21.9 / 122.2 | 3.9 / 62.6 | 8.0 / 64.4 | 5.8 / 19.2 |\n\
| train | 5.7 / 20.5 | 0.4 / 20.3 | 6.0 / 19.4 | 0.6 / 3.7 |\n\
| trainer | 8.0 / 17.8 | 0.9 / 3.9 | 9.5 / 11.3 | 0.1 / 2.4 |\n\
| all | 5.9 / 122.2 | 1.2 / 62.6 | 6.1 / 64.4 | 1.1 / 19.2 |\n\n\
Open then: Gemma 2's soft-capping at inference \
(`prefill/gemma2/m/fp32/eager/ltk0`: −19 %), GPT-2's eager attention at inference (+63 %: GPT-2's own softmax is \
16-bit), inference's working set of GPT-2 (−7 … −17 %), and the published runs: torchtitan drops its output \
before `backward()` (`del pred`), so its rows lost the held output that had been making up for the allocator's \
reserved memory (median 7.6 % → 12.7 %).\n";

/// What the per-tensor traces of inference changed (2026-11-24, later): the runs were re-run
/// on CPU with every live tensor named at the peak (transformers 5.24, torch 2.15), the
/// mechanisms read off the calibration runs' traces; figures on the same split before and after.
pub const CHANGED_INFERENCE: &str = "\n### What tracing inference tensor by tensor changed (2026-11-24, later)\n\n\
Seven calibration runs were re-run with every live tensor named at the peak (a MemTracker subclass recording each \
storage's producing op and stack; each run reproduces the recorded peak in every category). Mechanisms, each \
from those traces:\n\n\
- The layer's two moments (`infer::workspace_items`): the attention's tensors and the MLP's are never alive \
together, and eager attention's scores belong to the first only; the second holds the probabilities the attention \
returned (`infer::eager_probs`: decoder layers keep `self_attn_weights`) [`prefill/gemma2/m/fp32/eager/ltk1/b2s384`: \
peak in the last MLP with the fp32 `[2, 6, 384, 384]` probabilities alive; `prefill/gemma3/s/bf16/eager/ltk0`: \
+10.7 % → −1.1 %].\n\
- `repeat_kv` copies k and v only for grouped-query attention (`infer::attention_width`) [`prefill/gpt2/s/bf16/eager`: \
the `c_attn` output and no copies].\n\
- GPT-2's `gelu_new` at inference peaks with four `f`-wide tensors (`infer::mlp_width`) \
[`prefill/gpt2/m/fp32/sdpa/ltk1/b2s384`: −19.5 % → −4.6 %; the rest is the attention output and residual sum \
GPT-2's block keeps and its position embeddings].\n\
- GPT-2's own eager attention takes the softmax in the model's dtype (`softmax_in_dtype`, set by the GPT-2 presets \
and imports): two score tensors of `k` bytes, not `k + 8` [`prefill/gpt2/s/bf16/eager/ltk0/b1s512`: +62.5 % → \
−1.2 %].\n\
- Gemma 2's final soft-capping at inference holds two `b·s·V` logits tensors with `logits=prompt` \
[`prefill/gemma2/m/fp32/eager/ltk0/b2s384`, a held-out run whose −19 % was read last session to name this \
mechanism: moved to calibration, −19.2 % → −2.6 %].\n\
- Mixture-of-experts layers at inference (`infer::moe_width`): Hugging Face's grouped dispatch holds, per routed copy, \
the gathered input, the fused gate-up output, the activation and the product; Qwen2-MoE's shared expert runs first \
and its output is kept [`infer/mixtral/s/fp32/sdpa/static/gen32/b3s128`: −9.3 % → −1.8 %; \
`infer/qwen2_moe/s/fp32/sdpa/static/gen32/b3s128` traced the same way].\n\n\
Median / max |error| (%), before and after, on the split as it is now (the moved run counted as calibration in both):\n\n\
| family | calibration before | calibration after | held out before | held out after |\n\
|---|---|---|---|---|\n\
| gemma2 | 1.2 / 19.2 | 1.7 / 5.2 | 0.2 / 7.7 | 0.9 / 3.7 |\n\
| gemma3 | 1.3 / 10.8 | 1.3 / 5.4 | 1.2 / 3.2 | 1.2 / 3.2 |\n\
| gpt2 | 2.4 / 62.6 | 1.9 / 20.3 | 1.7 / 2.9 | 1.7 / 2.9 |\n\
| gpt_neox | 0.0 / 3.6 | 0.0 / 3.6 | 0.6 / 3.3 | 0.5 / 1.6 |\n\
| llama | 0.8 / 3.8 | 0.7 / 3.5 | 0.5 / 2.4 | 0.5 / 2.4 |\n\
| mistral | 1.0 / 5.8 | 1.0 / 3.3 | 1.0 / 5.8 | 0.7 / 1.9 |\n\
| mixtral | 1.7 / 9.3 | 0.6 / 8.3 | 0.5 / 8.0 | 0.5 / 5.5 |\n\
| phi3 | 1.1 / 8.6 | 1.0 / 8.6 | 0.6 / 7.0 | 0.6 / 7.0 |\n\
| qwen2 | 1.4 / 8.2 | 1.4 / 5.6 | 1.3 / 8.1 | 0.9 / 2.0 |\n\
| qwen2_moe | 0.4 / 5.3 | 0.6 / 4.1 | 1.1 / 5.3 | 1.1 / 5.3 |\n\
| qwen3 | 1.2 / 7.8 | 1.2 / 4.4 | 1.5 / 7.8 | 1.5 / 3.3 |\n\
| all | 1.2 / 62.6 | 1.1 / 20.3 | 1.1 / 8.1 | 0.9 / 7.0 |\n\
\n\
| kind | calibration before | calibration after | held out before | held out after |\n\
|---|---|---|---|---|\n\
| fsdp | 1.9 / 8.3 | 1.9 / 8.3 | 2.0 / 5.5 | 2.0 / 5.5 |\n\
| infer | 2.4 / 16.6 | 2.2 / 8.6 | 1.7 / 7.7 | 1.7 / 7.0 |\n\
| prefill | 4.5 / 62.6 | 1.5 / 6.5 | 5.5 / 8.1 | 1.2 / 5.3 |\n\
| train | 0.4 / 20.3 | 0.4 / 20.3 | 0.6 / 3.7 | 0.6 / 3.7 |\n\
| trainer | 1.0 / 3.9 | 1.0 / 3.9 | 0.1 / 2.4 | 0.1 / 2.4 |\n\
| all | 1.2 / 62.6 | 1.1 / 20.3 | 1.1 / 8.1 | 0.9 / 7.0 |\n\n\
Open: the published runs (torchtitan's rows report the allocator's reserved memory, see above); the two `h`-wide \
tensors and the position embeddings GPT-2's forward keeps at inference (−2 … −6 %); Gemma's second additive \
mask and sliding-window caches' concatenated copies (Gemma 2 fp32 eager: −2 … −5 %); the input embeddings every \
Hugging Face model's forward keeps to its end (`h` per token; memfit's first harness does not keep them, and its runs \
fit without them).\n";

/// The markdown section of docs/validation.md: calibration and held-out figures per family
/// and per loop, then every run.
pub fn hf_markdown(doc: &Value) -> String {
    let (rows, failed) = hf_rows(doc);
    let v = &doc["versions"];
    let mut md = String::from("\n## Real `transformers` runs (calibration and held out)\n\n");
    md.push_str(&format!(
        "Measured by `tools/measure_hf.py` with torch {}, transformers {} on CPU (MemTracker / \
         FSDPMemTracker: tensors only, no CUDA caching allocator). Models built with \
         `AutoModelForCausalLM.from_config` and imported into memfit from their `config.json`; \
         memfit's `allocated_bytes` against the measured peak. Split fixed before modelling: \
         held out when `int(sha256(id)[:8], 16) % 3 == 0`. Each cell: runs: median / max \
         |error|.\n\n",
        v["torch"].as_str().unwrap_or("?"),
        v["transformers"].as_str().unwrap_or("?")
    ));
    let (cal, held) = (stats(&rows, |r| !r.held_out), stats(&rows, |r| r.held_out));
    md.push_str(&format!(
        "**Calibration {}; held out {}.**\n\n",
        cell(cal),
        cell(held)
    ));
    let agree = rows
        .iter()
        .filter(|r| r.phase_estimated == r.phase_measured)
        .count();
    md.push_str(&format!(
        "The peak's phase agrees with the measured one in {agree} of {} runs.\n\n",
        rows.len()
    ));
    md.push_str("Held-out runs moved to calibration (read while deriving a mechanism):\n\n");
    for (id, why) in MOVED_TO_CALIBRATION {
        md.push_str(&format!("- `{id}`: {why}\n"));
    }
    md.push('\n');
    md.push_str(&group_tables(&rows));
    md.push_str(&phase_end_table(doc));
    md.push_str(&run_table(&rows));
    for (id, why) in &failed {
        md.push_str(&format!("\nNot compared: `{id}`: {why}\n"));
    }
    md.push_str(CHANGED);
    md.push_str(CHANGED_INFERENCE);
    md
}

/// Calibration and held-out figures per model family, then per loop.
fn group_tables(rows: &[HfRow]) -> String {
    let mut md = String::new();
    for (title, key) in [("family", 0), ("loop", 1)] {
        md.push_str(&format!(
            "| {title} | calibration | held out |\n|---|---|---|\n"
        ));
        let mut groups: Vec<String> = rows
            .iter()
            .map(|r| {
                if key == 0 {
                    r.family.clone()
                } else {
                    r.kind.clone()
                }
            })
            .collect();
        groups.sort();
        groups.dedup();
        for g in groups {
            let of = |r: &HfRow| (if key == 0 { &r.family } else { &r.kind }) == &g;
            md.push_str(&format!(
                "| {g} | {} | {} |\n",
                cell(stats(rows, |r| of(r) && !r.held_out)),
                cell(stats(rows, |r| of(r) && r.held_out))
            ));
        }
        md.push('\n');
    }
    md
}

/// Every run: measured and memfit's peak, the error and the peak's phase.
fn run_table(rows: &[HfRow]) -> String {
    let mut md = String::new();
    md.push_str("| run | part | measured MiB | memfit MiB | error | peak phase (measured / memfit) |\n|---|---|---|---|---|---|\n");
    for r in rows {
        md.push_str(&format!(
            "| `{}` | {} | {:.2} | {:.2} | {:+.1} % | {} / {} |\n",
            r.id,
            if r.held_out {
                "held out"
            } else {
                "calibration"
            },
            r.measured as f64 / (1u64 << 20) as f64,
            r.estimated as f64 / (1u64 << 20) as f64,
            r.rel_error() * 100.0,
            r.phase_measured,
            r.phase_estimated
        ));
    }
    md
}

/// The step program's running totals at the phase ends against the measured snapshots
/// (training runs, no FSDP): median / max |error| per snapshot and part.
pub fn phase_end_table(doc: &Value) -> String {
    let mut errs: std::collections::BTreeMap<(&str, bool), Vec<f64>> = Default::default();
    for run in doc["runs"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
        let Some(ends) = phase_ends(run) else {
            continue;
        };
        for (k, meas, est) in ends {
            if meas > 0 {
                let e = (est as f64 - meas as f64).abs() / meas as f64;
                errs.entry((k, held_out(run))).or_default().push(e);
            }
        }
    }
    let mut md = String::from(
        "The step's curve between the peaks: the program's running total at the end of the forward, the backward, \
         the optimizer step and after `zero_grad`, against the measured snapshots (training runs without FSDP). \
         Each cell: runs: median / max |error|.\n\n| snapshot | calibration | held out |\n|---|---|---|\n",
    );
    for k in [
        "post_forward",
        "post_backward",
        "post_step",
        "post_zero_grad",
    ] {
        let cell = |held: bool| {
            let v = errs.get(&(k, held)).cloned().unwrap_or_default();
            let n = v.len();
            let (m, x) = median_max(v);
            if n == 0 {
                "—".to_string()
            } else {
                format!("{n}: {:.1} % / {:.1} %", m * 100.0, x * 100.0)
            }
        };
        md.push_str(&format!("| {k} | {} | {} |\n", cell(false), cell(true)));
    }
    md.push('\n');
    md
}
