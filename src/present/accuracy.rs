//! The accuracy panel's presenters: the tables of `assets/accuracy.json` and their summaries.

use serde::Deserialize;

pub use memfit_core::contract::accuracy::AccuracyRow;

/// One table with its median and max |error| (fractions).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct AccuracyTable {
    /// The runs.
    pub rows: Vec<AccuracyRow>,
    /// Median |error|.
    pub median: f64,
    /// Max |error|.
    pub max: f64,
    /// How the runs were read (published set only).
    #[serde(default)]
    pub notes: Vec<String>,
}

/// The median and max |error| of one part of a split table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Deserialize)]
pub struct Part {
    /// Runs.
    pub n: usize,
    /// Median |error|.
    pub median: f64,
    /// Max |error|.
    pub max: f64,
}

/// The real-stack runs: every row, and the calibration and held-out parts apart.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct SplitTable {
    /// The runs (each says whether it is held out).
    pub rows: Vec<AccuracyRow>,
    /// The runs mechanisms were built from.
    pub calibration: Part,
    /// The runs held out before any modelling.
    pub held_out: Part,
    /// The torch version measured with.
    #[serde(default)]
    pub torch: String,
    /// The transformers version measured with.
    #[serde(default)]
    pub transformers: String,
}

/// One part of the step-time table: its runs' median and max |error| and pair ordering.
#[derive(Clone, Copy, Debug, Default, PartialEq, Deserialize)]
pub struct StepPart {
    /// Runs.
    pub n: usize,
    /// Median |error| of the step time.
    pub median: f64,
    /// Max |error|.
    pub max: f64,
    /// Pairs of runs differing in one choice whose faster one memfit predicts faster.
    pub pairs_ok: usize,
    /// Such pairs.
    pub pairs: usize,
}

/// The step-time model against published training runs: every row, the two parts apart.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct StepTable {
    /// The runs (each says whether it is held out).
    pub rows: Vec<AccuracyRow>,
    /// The runs mechanisms were read from.
    pub calibration: StepPart,
    /// The runs held out before any comparison.
    pub held_out: StepPart,
    /// Runs memfit predicts faster than measured.
    pub optimistic: usize,
}

/// The step-time table's one-line summary, held out first.
///
/// ```
/// use memfit::present::{StepPart, StepTable, step_summary};
/// let t = StepTable { held_out: StepPart { n: 43, median: 0.193, max: 0.425, pairs_ok: 3, pairs: 7 },
///                     calibration: StepPart { n: 43, median: 0.184, max: 0.436, pairs_ok: 6, pairs: 8 },
///                     optimistic: 80, ..Default::default() };
/// let s = step_summary(&t);
/// assert!(s.contains("held out (43 runs): median |error| 19.3 %, max 42.5 %, the faster of a pair predicted faster in 3 of 7"));
/// assert!(s.contains("faster than measured on 80 of 86"));
/// ```
pub fn step_summary(t: &StepTable) -> String {
    let (h, c) = (&t.held_out, &t.calibration);
    format!(
        "The step-time model (tokens per second, MFU, the explorer's ranking) against published training runs — Megatron-LM (Korthikanti et al. 2022), NeMo 24.07, Megatron-Bridge, llm-foundry, BLOOM — with their stated layouts: held out ({} runs): median |error| {:.1} %, max {:.1} %, the faster of a pair predicted faster in {} of {}; calibration ({} runs, the mechanisms were read from them): {:.1} %, {:.1} %, {} of {}. memfit predicts a step faster than measured on {} of {} runs: read its tokens per second as an upper bound and its ranking as a guide. The held-out runs were chosen by a hash of their id before any comparison and never tuned on.",
        h.n,
        h.median * 100.0,
        h.max * 100.0,
        h.pairs_ok,
        h.pairs,
        c.n,
        c.median * 100.0,
        c.max * 100.0,
        c.pairs_ok,
        c.pairs,
        t.optimistic,
        h.n + c.n
    )
}

/// A measured or predicted value as the accuracy tables show it: four significant digits
/// below 100 (step times in seconds: 0.578, 18.13), one decimal above (MiB: 1234.5), whole
/// counts from 100 as they are (KV-cache tokens: 238208).
///
/// ```
/// use memfit::present::value_text;
/// assert_eq!(value_text(0.5781), "0.578");
/// assert_eq!(value_text(18.134), "18.13");
/// assert_eq!(value_text(1234.56), "1234.6");
/// assert_eq!(value_text(238_208.0), "238208");
/// ```
pub fn value_text(v: f64) -> String {
    let a = v.abs();
    if a >= 100.0 && v.fract() == 0.0 {
        format!("{v:.0}")
    } else if a < 10.0 {
        format!("{v:.3}")
    } else if a < 100.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.1}")
    }
}

/// The accuracy panel's data: `assets/accuracy.json`, computed natively by
/// `memfit --accuracy-json` from memfit-evidence (the page does not link the harness)
/// and fetched from the page's own origin when the panel is opened.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct Accuracy {
    /// Published runs memfit was not fitted to.
    pub published: AccuracyTable,
    /// memfit's first PyTorch harness (its own modules; its mechanisms were built on them).
    pub pytorch: AccuracyTable,
    /// Real `transformers` runs, calibration and held out.
    #[serde(default)]
    pub hf: SplitTable,
    /// The step-time model against published training runs.
    #[serde(default)]
    pub steptime: StepTable,
    /// Real CUDA runs (calibration only).
    #[serde(default)]
    pub cuda: CudaTable,
    /// vLLM's KV-cache tokens against public start-up logs, calibration and held out.
    #[serde(default)]
    pub serving: SplitTable,
    /// SGLang's pool tokens against public start-up logs, calibration and held out.
    #[serde(default)]
    pub serving_sglang: SplitTable,
    /// llama.cpp's and Ollama's GPU buffers against public start-up logs.
    #[serde(default)]
    pub serving_llamacpp: SplitTable,
}

/// The real CUDA runs: every row, training and `generate` apart (all calibration).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct CudaTable {
    /// Every compared run.
    pub rows: Vec<AccuracyRow>,
    /// The training runs' figures.
    pub train: Part,
    /// The `generate` runs' figures.
    pub generate: Part,
    /// The GPU.
    pub device: String,
    /// PyTorch's version.
    pub torch: String,
    /// transformers' version.
    pub transformers: String,
    /// Set D, measured the same way: its calibration and held-out runs apart.
    #[serde(default)]
    pub set_d: CudaSplit,
    /// `per_gpu_bytes` against `max_memory_reserved` + the CUDA context (training runs).
    #[serde(default)]
    pub reserved: ReservedSplit,
    /// Set H: the same training runs on an H100, memfit's verdict against whether they ran.
    #[serde(default)]
    pub h100: Option<Verdicts>,
}

/// Fit verdicts against runs that ran or ran out of memory on one GPU.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct Verdicts {
    /// The GPU.
    pub device: String,
    /// Runs compared.
    pub n: usize,
    /// Of those, how many ran out of memory.
    pub oom: usize,
    /// Verdicts right.
    pub right: usize,
    /// Held-out runs compared.
    pub held_out_n: usize,
    /// Held-out verdicts right.
    pub held_out_right: usize,
    /// The runs whose verdict is wrong.
    pub wrong: Vec<String>,
}

/// What runs out, `per_gpu_bytes` against reserved + context: calibration and held out, all
/// training runs and the runs memfit replays op by op.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct ReservedSplit {
    /// The first set and set D's calibration runs.
    pub calibration: Part,
    /// Set D's held-out runs (read once).
    pub held_out: Part,
    /// The calibration runs an op-level template holds.
    pub calibration_op: Part,
    /// The held-out runs an op-level template holds.
    pub held_out_op: Part,
}

/// Set D's figures: calibration and held out, each training and `generate` apart.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct CudaSplit {
    /// The runs memfit's CUDA mechanisms may be found on.
    pub calibration: TrainGenerate,
    /// A third of the runs, set aside before they were measured.
    pub held_out: TrainGenerate,
}

/// One part's training and `generate` figures.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct TrainGenerate {
    /// Training runs.
    pub train: Part,
    /// `generate` runs.
    pub generate: Part,
}

/// The CUDA table's one-line summary: the first set (calibration) and set D's held-out
/// runs apart.
///
/// ```
/// use memfit::present::{CudaSplit, CudaTable, Part, TrainGenerate, cuda_summary};
/// let mut t = CudaTable { train: Part { n: 24, median: 0.0004, max: 0.065 },
///                     generate: Part { n: 8, median: 0.021, max: 0.174 }, ..Default::default() };
/// let s = cuda_summary(&t);
/// assert!(s.contains("training (24 runs): median |error| 0.0 %, max 6.5 %"));
/// assert!(s.contains("generate (8 runs): median |error| 2.1 %, max 17.4 %"));
/// assert!(s.contains("Calibration only") && !s.contains("Set D"));
/// t.set_d = CudaSplit { held_out: TrainGenerate { train: Part { n: 12, median: 0.001, max: 0.141 },
///                                                   generate: Part { n: 4, median: 0.004, max: 0.004 } },
///                       ..Default::default() };
/// assert!(cuda_summary(&t).contains("held out (a third of its runs, set aside before they were measured; read once) training 12 runs, median |error| 0.1 %, max 14.1 %"));
/// t.h100 = Some(memfit::present::Verdicts { device: "H100 80GB HBM3".into(), n: 62, oom: 14,
///     right: 61, held_out_n: 20, held_out_right: 20, wrong: vec!["D29".into()] });
/// assert!(cuda_summary(&t).contains("H100 80GB HBM3 (14 of 62 ran out of memory there): memfit's fits / does not fit right for 61 of 62 (held out 20 of 20; wrong: D29)"));
/// ```
pub fn cuda_summary(t: &CudaTable) -> String {
    let mut s = first_set_summary(t);
    let (c, h) = (&t.set_d.calibration, &t.set_d.held_out);
    if h.train.n + h.generate.n > 0 {
        let p = |x: &Part| runs_median_max(x, "median |error|");
        s.push_str(&format!(
            " Set D, measured the same way: held out (a third of its runs, set aside before they were measured; read once) training {}, generate {}; calibration training {}, generate {}.",
            p(&h.train), p(&h.generate), p(&c.train), p(&c.generate)
        ));
    }
    if let Some(v) = &t.h100 {
        s.push_str(&format!(
            " The same training runs on an {} ({} of {} ran out of memory there): memfit's fits / does not fit right for {} of {} (held out {} of {}; wrong: {}).",
            v.device,
            v.oom,
            v.n,
            v.right,
            v.n,
            v.held_out_right,
            v.held_out_n,
            if v.wrong.is_empty() { "none".to_string() } else { v.wrong.join(", ") }
        ));
    }
    let r = &t.reserved;
    if r.held_out.n + r.calibration.n > 0 {
        let p = |x: &Part| runs_median_max(x, "median");
        s.push_str(&format!(
            " What runs out, memfit's per-GPU figure against max_memory_reserved + the CUDA context: held out (set D, read once) {}, of which the caching allocator was replayed on the op-level stream of {}; calibration {}, replayed on {}. Runs no op-level template holds (multi-GPU layouts, DeepSpeed, Megatron, other mixture-of-experts shapes) add the flat 5 % share.",
            p(&r.held_out), p(&r.held_out_op), p(&r.calibration), p(&r.calibration_op)
        ));
    }
    s
}

/// `N runs, <median> M %, max X %` of one part.
fn runs_median_max(x: &Part, median: &str) -> String {
    format!(
        "{} runs, {median} {:.1} %, max {:.1} %",
        x.n,
        x.median * 100.0,
        x.max * 100.0
    )
}

fn first_set_summary(t: &CudaTable) -> String {
    format!(
        "Real transformers models trained and run with generate on one {} (torch {}, transformers {}; torch.cuda.max_memory_allocated): training ({} runs): median |error| {:.1} %, max {:.1} %; generate ({} runs): median |error| {:.1} %, max {:.1} %. Calibration only: memfit's CUDA mechanisms (SDPA's backends, CUDA autocast, LoRA's frozen base, cuBLAS workspaces) were found on these runs, so this is not an accuracy claim.",
        t.device,
        t.torch,
        t.transformers,
        t.train.n,
        t.train.median * 100.0,
        t.train.max * 100.0,
        t.generate.n,
        t.generate.median * 100.0,
        t.generate.max * 100.0
    )
}

/// Parses the accuracy tables (`None` when the text is not the asset's JSON).
pub fn parse_accuracy(text: &str) -> Option<Accuracy> {
    serde_json::from_str(text).ok()
}

/// The accuracy tables as the repository holds them (native: tests and tools; the page
/// fetches the same file).
#[cfg(not(target_arch = "wasm32"))]
pub fn accuracy() -> Accuracy {
    parse_accuracy(include_str!("../../assets/accuracy.json")).unwrap_or_default()
}

/// The real-stack table's one-line summary: the two parts apart, held out first.
///
/// ```
/// use memfit::present::{Part, SplitTable, hf_summary};
/// let t = SplitTable { calibration: Part { n: 10, median: 0.017, max: 0.3 },
///                      held_out: Part { n: 5, median: 0.016, max: 0.2 }, ..Default::default() };
/// let s = hf_summary(&t);
/// assert!(s.contains("held out (5 runs): median |error| 1.6 %, max 20.0 %"));
/// assert!(s.contains("calibration (10 runs): median |error| 1.7 %, max 30.0 %"));
/// ```
pub fn hf_summary(t: &SplitTable) -> String {
    format!(
        "Real transformers models ({}) and loops — model(…, labels=…).loss, the HF Trainer, FSDP2 on a fake process group, generate — measured with PyTorch's MemTracker on CPU (torch {}, transformers {}; tensors only, no CUDA caching allocator): {}. The held-out runs were chosen by a hash of their id before any modelling and never tuned on.",
        "Llama, Qwen2, Qwen3, Mistral, Gemma 2 and 3, Phi-3, GPT-2, GPT-NeoX, Mixtral, Qwen2-MoE",
        t.torch,
        t.transformers,
        held_then_calibration(t, "runs", 1)
    )
}

/// `held out (N runs): median |error| M %, max X %; calibration (…)` of a split table, to
/// `digits` decimals.
fn held_then_calibration(t: &SplitTable, what: &str, digits: usize) -> String {
    let p = |x: &Part| {
        format!(
            "({} {what}): median |error| {:.digits$} %, max {:.digits$} %",
            x.n,
            x.median * 100.0,
            x.max * 100.0
        )
    };
    format!(
        "held out {}; calibration {}",
        p(&t.held_out),
        p(&t.calibration)
    )
}

/// The serving table's one-line summary: held out first, then calibration.
///
/// ```
/// use memfit::present::{Part, SplitTable, serving_summary};
/// let t = SplitTable { calibration: Part { n: 38, median: 0.0016, max: 0.0719 },
///                      held_out: Part { n: 19, median: 0.0037, max: 0.0296 }, ..Default::default() };
/// let s = serving_summary(&t);
/// assert!(s.contains("held out (19 logs): median |error| 0.37 %, max 2.96 %"));
/// assert!(s.contains("calibration (38 logs): median |error| 0.16 %, max 7.19 %"));
/// ```
pub fn serving_summary(t: &SplitTable) -> String {
    format!(
        "vLLM's \"GPU KV cache size: N tokens\" in public start-up logs (issues and repositories; each row names its release), each log's own settings as memfit's inputs: {}. The held-out third was chosen by a hash of each log's id before any comparison and never tuned on; the calibration logs are where the engine's constants were set.",
        held_then_calibration(t, "logs", 2)
    )
}

/// The llama.cpp and Ollama table's one-line summary (the error of the GPU total: model,
/// KV and compute buffer).
///
/// ```
/// use memfit::present::{Part, SplitTable, llamacpp_summary};
/// let t = SplitTable { calibration: Part { n: 13, median: 0.0, max: 0.0184 },
///                      held_out: Part { n: 9, median: 0.0, max: 0.0582 }, ..Default::default() };
/// let s = llamacpp_summary(&t);
/// assert!(s.contains("held out (9 logs): median |error| 0.00 %, max 5.82 %"));
/// assert!(s.contains("calibration (13 logs)"));
/// ```
pub fn llamacpp_summary(t: &SplitTable) -> String {
    format!(
        "llama.cpp's and Ollama's GPU buffers (model + KV cache + compute, MiB as each log prints them) in public start-up logs, each log's context, sequences, layers on the GPU and flash attention as memfit's inputs: {}. The held-out third was chosen by a hash of each log's id and committed before any comparison; the model and KV buffers follow from the GGUF rules, the compute buffer is where the misses are (docs/serving.md).",
        held_then_calibration(t, "logs", 2)
    )
}

/// The SGLang serving table's one-line summary.
///
/// ```
/// use memfit::present::{Part, SplitTable, sglang_summary};
/// let t = SplitTable { calibration: Part { n: 6, median: 0.005, max: 0.073 },
///                      held_out: Part { n: 3, median: 0.003, max: 0.029 }, ..Default::default() };
/// assert!(sglang_summary(&t).contains("held out (3 logs): median |error| 0.30 %, max 2.90 %"));
/// ```
pub fn sglang_summary(t: &SplitTable) -> String {
    format!(
        "SGLang's pool (\"max_total_num_tokens\") in public start-up logs, each log's settings read by hand into memfit's inputs: {}. Three logs were set aside before SGLang's rules were modelled and never tuned on; the calibration logs are where its constants (the distributed start, the fraction's reserve) were set.",
        held_then_calibration(t, "logs", 2)
    )
}

/// The published table's one-line summary.
///
/// ```
/// let t = memfit::present::AccuracyTable { rows: vec![], median: 0.075, max: 0.366, notes: vec![] };
/// assert!(memfit::present::published_summary(&t).starts_with("0 published runs"));
/// assert!(memfit::present::published_summary(&t).contains("median |error| 7.5 %, max 36.6 %"));
/// ```
pub fn published_summary(t: &AccuracyTable) -> String {
    format!(
        "{} published runs (Megatron-LM, torchtitan, PEFT, Unsloth): median |error| {:.1} %, max {:.1} %. Held out: memfit is not fitted to them.",
        t.rows.len(),
        t.median * 100.0,
        t.max * 100.0
    )
}

/// The PyTorch table's one-line summary, labelled in-sample.
pub fn pytorch_summary(t: &AccuracyTable) -> String {
    format!(
        "{} runs of memfit's first harness (its own Llama- and GPT-2-shaped modules, not transformers classes; a loop that holds the logits: loss=loop), measured with PyTorch's MemTracker on CPU: median |error| {:.1} %, max {:.1} %. In-sample: memfit's PyTorch mechanisms were built on these runs, so this is a consistency check, not an accuracy claim.",
        t.rows.len(),
        t.median * 100.0,
        t.max * 100.0
    )
}
