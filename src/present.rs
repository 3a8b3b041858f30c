//! Presenters: the small pure functions the page's views bind (texts, summaries, look-ups),
//! kept out of `view!` so they are tested natively. Nothing here touches the DOM.

use memfit_core::model::{presets, ParamCount};
use memfit_core::scenario::Layout;
use memfit_core::units::group_digits;
use serde::Deserialize;

/// Finds a preset by id or display name (what the search box accepts).
///
/// ```
/// assert_eq!(memfit::present::find_preset("Llama 2 7B"), Some("llama-2-7b"));
/// assert_eq!(memfit::present::find_preset(" GPT2 "), Some("gpt2"));
/// assert_eq!(memfit::present::find_preset("gpt-5"), None);
/// ```
pub fn find_preset(text: &str) -> Option<&'static str> {
    let t = text.trim().to_ascii_lowercase();
    presets()
        .iter()
        .find(|p| p.id == t || p.name.to_ascii_lowercase() == t)
        .map(|p| p.id)
}

/// "dp·tp·pp·cp = 2·2·2·1 = 8 of 8 GPUs".
///
/// ```
/// use memfit_core::scenario::Layout;
/// let l = Layout { dp: 2, tp: 2, pp: 2, cp: 1, world: 16, gpus_per_node: 8 };
/// assert_eq!(memfit::present::layout_summary(&l), "dp·tp·pp·cp = 2·2·2·1 = 8 of 16 GPUs");
/// ```
pub fn layout_summary(l: &Layout) -> String {
    format!(
        "dp·tp·pp·cp = {}·{}·{}·{} = {} of {} GPUs",
        l.dp,
        l.tp,
        l.pp,
        l.cp,
        l.used(),
        l.world
    )
}

/// The model panel's count line: total, active per token and the largest layer.
pub fn param_count_line(c: &ParamCount) -> String {
    format!(
        "From the architecture: {} parameters ({} active per token), largest layer {}.",
        group_digits(c.total),
        group_digits(c.active),
        group_digits(c.largest_layer)
    )
}

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

/// The step-time model's held-out figures the best-layouts table cites (`tests/step_time.rs`
/// checks them against the comparison): median and max |error|, percent.
pub const STEP_HELD_OUT: (f64, f64) = (15.0, 37.6);

/// Measured over predicted step on the held-out runs: 10th percentile, median, 90th
/// (nearest rank; `tests/step_time.rs` checks them against the comparison).
pub const STEP_HELD_OUT_RATIO: (f64, f64, f64) = (0.98, 1.18, 1.39);

/// What the held-out runs say of one predicted step: "published runs held out from the
/// model took 0.98–1.39× its step (…, median 1.18×): about 1.53 s to 2.17 s here".
///
/// ```
/// let s = memfit::present::step_band(1.56);
/// assert!(s.contains("0.98–1.39×"));
/// assert!(s.contains("about 1.53 s to 2.17 s here"));
/// ```
pub fn step_band(step_s: f64) -> String {
    let (lo, mid, hi) = STEP_HELD_OUT_RATIO;
    format!(
        "Published runs held out from the model took {lo:.2}–{hi:.2}× its step (10th–90th percentile, median {mid:.2}×): about {} to {} here.",
        duration_text(step_s * lo),
        duration_text(step_s * hi)
    )
}

/// Held-out pairs of runs that differ in one choice whose faster one the model predicts
/// faster: `(right, pairs)` (`tests/step_time.rs` checks them against the comparison).
pub const STEP_HELD_OUT_PAIRS: (usize, usize) = (3, 7);

/// The step-time panel's caption: what the model is and how far it is off.
pub fn step_model_hint() -> String {
    format!(
        "memfit's step-time model: GEMMs at measured efficiency, memory-bound kernels at HBM speed, each collective at its link's bandwidth and what the framework overlaps. It predicts faster than measured on most published runs (held out: median |error| {:.0} %, up to {:.0} %; see How accurate is this?): budget a margin.",
        STEP_HELD_OUT.0, STEP_HELD_OUT.1
    )
}

/// The best-layouts table's caption.
pub fn best_layouts_hint() -> String {
    format!(
        "Best first: the highest predicted training tokens per second per GPU, then no optimizer offload, the least wasted compute, the least communication per trained token, the most headroom. The step-time model is optimistic on most published runs (held out: median |error| {:.0} %, up to {:.0} %; see How accurate is this?), and of held-out pairs of runs that differ in one choice it ordered {} of {} right: treat layouts a few percent apart as ties, and budget a margin on its figures.",
        STEP_HELD_OUT.0, STEP_HELD_OUT.1, STEP_HELD_OUT_PAIRS.0, STEP_HELD_OUT_PAIRS.1
    )
}

/// A duration as the step-time panel shows it: milliseconds below a second ("412.3 ms"),
/// seconds above ("6.04 s", "104.7 s").
///
/// ```
/// use memfit::present::duration_text;
/// assert_eq!(duration_text(0.41234), "412.3 ms");
/// assert_eq!(duration_text(6.0367), "6.04 s");
/// assert_eq!(duration_text(104.71), "104.7 s");
/// ```
pub fn duration_text(s: f64) -> String {
    if s < 1.0 {
        format!("{:.1} ms", s * 1e3)
    } else if s < 100.0 {
        format!("{s:.2} s")
    } else {
        format!("{s:.1} s")
    }
}

/// One line of the step-time panel: what, seconds, share of the step.
#[derive(Clone, Debug, PartialEq)]
pub struct StepRow {
    /// What the time is spent on.
    pub label: &'static str,
    /// Seconds per step.
    pub seconds: f64,
    /// Share of the step (0–1; for whole communication, beside the step it overlaps).
    pub share: f64,
}

/// The step-time panel's figures: the headline, the parts that add up to the step, and
/// each parallel dimension's communication whole (partly hidden behind compute).
#[derive(Clone, Debug, PartialEq)]
pub struct StepView {
    /// Seconds per step (the exact figure, for tests and tools).
    pub step_s: f64,
    /// "6.04 s a step · 5,428 tokens/s per GPU · 347,392 tokens/s for the cluster · MFU 23 %
    /// (HFU 31 %)".
    pub headline: String,
    /// The parts of the step (they add up to it).
    pub parts: Vec<StepRow>,
    /// Communication per dimension, whole (what is not hidden is in `parts`).
    pub comm: Vec<StepRow>,
}

/// The step-time panel's figures for a step-time answer.
///
/// # Formula
/// `step = compute + recomputation + communication not hidden + compute slowed by hidden
/// communication + bubble + optimizer + offload` (memfit's step-time model, `crates/core/src/steptime`); each share is the
/// part over the step.
///
/// ```
/// use memfit::present::step_view;
/// use memfit_core::contract::query::decode;
/// use memfit_core::estimate::Prepared;
/// let s = decode("model=llama-3-8b&seq=8192&framework=megatron").0.scenario;
/// let t = memfit_core::steptime::step_time(&s, &Prepared::of(&s)).unwrap();
/// let v = step_view(&t);
/// let sum: f64 = v.parts.iter().map(|r| r.seconds).sum();
/// assert!((sum / t.step_s - 1.0).abs() < 1e-9);
/// assert!(v.headline.contains("tokens/s per GPU"));
/// ```
pub fn step_view(t: &memfit_core::steptime::StepTime) -> StepView {
    let b = &t.breakdown;
    let step = t.step_s.max(f64::MIN_POSITIVE);
    let row = |label, seconds: f64| StepRow {
        label,
        seconds,
        share: seconds / step,
    };
    // The non-zero rows (compute always shows).
    fn shown<const N: usize>(rows: [StepRow; N]) -> Vec<StepRow> {
        rows.into_iter()
            .filter(|r| r.seconds > 0.0 || r.label.starts_with("compute"))
            .collect()
    }
    let parts = shown([
        row("compute: forward and backward", b.compute_s),
        row("recomputation", b.recompute_s),
        row("communication not hidden by compute", b.exposed_comm_s),
        row(
            "compute slowed by the SMs hidden communication holds",
            b.contention_s,
        ),
        row("pipeline bubble", b.bubble_s),
        row("optimizer step", b.optimizer_s),
        row("offload: PCIe transfers and the CPU optimizer", b.offload_s),
    ]);
    let comm = shown([
        row("tensor parallel", b.tp_comm_s),
        row("data parallel / ZeRO / FSDP", b.dp_comm_s),
        row("pipeline transfers", b.pp_comm_s),
        row("context parallel", b.cp_comm_s),
        row("expert parallel", b.ep_comm_s),
    ]);
    let hfu = if (t.hfu - t.mfu).abs() > 1e-9 {
        format!(" (HFU {:.0} %)", t.hfu * 100.0)
    } else {
        String::new()
    };
    let g = |x: f64| memfit_core::units::group_digits(x.max(0.0).round() as u64);
    StepView {
        step_s: t.step_s,
        headline: format!(
            "{} a step · {} tokens/s per GPU · {} tokens/s for the cluster · MFU {:.0} %{hfu}",
            duration_text(t.step_s),
            g(t.tokens_per_s_per_gpu),
            g(t.tokens_per_s),
            t.mfu * 100.0
        ),
        parts,
        comm,
    }
}

/// A measured or predicted value as the accuracy tables show it: four significant digits
/// below 100 (step times in seconds: 0.578, 18.13), one decimal above (MiB: 1234.5).
///
/// ```
/// use memfit::present::value_text;
/// assert_eq!(value_text(0.5781), "0.578");
/// assert_eq!(value_text(18.134), "18.13");
/// assert_eq!(value_text(1234.56), "1234.6");
/// ```
pub fn value_text(v: f64) -> String {
    let a = v.abs();
    if a < 10.0 {
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
}

/// The CUDA table's one-line summary, labelled calibration.
///
/// ```
/// use memfit::present::{CudaTable, Part, cuda_summary};
/// let t = CudaTable { train: Part { n: 24, median: 0.0004, max: 0.065 },
///                     generate: Part { n: 8, median: 0.021, max: 0.174 }, ..Default::default() };
/// let s = cuda_summary(&t);
/// assert!(s.contains("training (24 runs): median |error| 0.0 %, max 6.5 %"));
/// assert!(s.contains("generate (8 runs): median |error| 2.1 %, max 17.4 %"));
/// assert!(s.contains("Calibration only"));
/// ```
pub fn cuda_summary(t: &CudaTable) -> String {
    format!(
        "Real transformers models trained and run with generate on one {} (torch {}, transformers {}; torch.cuda.max_memory_allocated): training ({} runs): median |error| {:.1} %, max {:.1} %; generate ({} runs): median |error| {:.1} %, max {:.1} %. Calibration only: memfit's CUDA mechanisms (SDPA's backends, CUDA autocast, LoRA's frozen base, cuBLAS workspaces) were found on these runs, so this is not an accuracy claim; a held-out set measured the same way judges memfit outside the project.",
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
    parse_accuracy(include_str!("../assets/accuracy.json")).unwrap_or_default()
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
        "Real transformers models ({}) and loops — model(…, labels=…).loss, the HF Trainer, FSDP2 on a fake process group, generate — measured with PyTorch's MemTracker on CPU (torch {}, transformers {}; tensors only, no CUDA caching allocator): held out ({} runs): median |error| {:.1} %, max {:.1} %; calibration ({} runs): median |error| {:.1} %, max {:.1} %. The held-out runs were chosen by a hash of their id before any modelling and never tuned on.",
        "Llama, Qwen2, Qwen3, Mistral, Gemma 2 and 3, Phi-3, GPT-2, GPT-NeoX, Mixtral, Qwen2-MoE",
        t.torch,
        t.transformers,
        t.held_out.n,
        t.held_out.median * 100.0,
        t.held_out.max * 100.0,
        t.calibration.n,
        t.calibration.median * 100.0,
        t.calibration.max * 100.0
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

/// The legend of the breakdown chart: every component some stage holds, with its label
/// and colour (`#rrggbb`).
pub fn legend(e: &memfit_core::estimate::Estimate) -> Vec<(&'static str, String)> {
    use memfit_core::estimate::Component;
    Component::ALL
        .iter()
        .filter(|c| {
            e.stages
                .iter()
                .any(|st| st.components.iter().any(|(x, b)| x == *c && *b > 0))
        })
        .map(|c| {
            let (r, g, b) = c.color();
            (c.label(), format!("#{r:02x}{g:02x}{b:02x}"))
        })
        .collect()
}

/// Whether a key press activates a focused row or cell (Enter or Space).
pub fn activates(key: &str) -> bool {
    key == "Enter" || key == " "
}

/// The fit map's caption.
pub fn fit_map_hint(inference: bool, speed: bool) -> String {
    let over = if inference {
        "Each cell is one TP × PP, over every batch size"
    } else {
        "Each cell is one TP × PP under one ZeRO stage, over every context-parallel size, sequence parallelism, offload, recomputation and micro-batch"
    };
    let number = if speed && !inference {
        "the number is the fastest fitting layout's predicted tokens per second per GPU (the headroom, negative, where nothing fits)"
    } else {
        "the number is the most headroom any of them leaves"
    };
    format!("{over}; {number}. Click a cell (or focus it and press Enter) to load its best layout — the closest one when nothing fits.")
}

/// Columns of the best-layouts table that sort.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SortBy {
    /// The explorer's rank.
    Rank,
    /// Peak per GPU.
    Peak,
    /// Headroom.
    Headroom,
    /// Bytes sent per GPU per step.
    Comm,
    /// Micro-batch.
    Batch,
    /// Predicted tokens per second per GPU.
    Speed,
}

/// The table's order after a click on `col`: the same column flips its direction, another
/// column sorts ascending.
pub fn next_sort(current: (SortBy, bool), col: SortBy) -> (SortBy, bool) {
    if current.0 == col {
        (col, !current.1)
    } else {
        (col, true)
    }
}

/// `aria-sort` of column `col` under `current`.
pub fn aria_sort(current: (SortBy, bool), col: SortBy) -> &'static str {
    match current {
        (c, true) if c == col => "ascending",
        (c, false) if c == col => "descending",
        _ => "none",
    }
}

/// The layouts in table order, each with its rank (0-based), the first `shown` of them.
pub fn sorted_layouts(
    layouts: &[memfit_core::explore::Candidate],
    (col, asc): (SortBy, bool),
    shown: Option<usize>,
) -> Vec<(usize, memfit_core::explore::Candidate)> {
    let mut v: Vec<_> = layouts.iter().copied().enumerate().collect();
    v.sort_by(|(ia, a), (ib, b)| {
        let o = match col {
            SortBy::Rank => ia.cmp(ib),
            SortBy::Peak => a.per_gpu_bytes.cmp(&b.per_gpu_bytes),
            SortBy::Headroom => a.headroom_bytes.cmp(&b.headroom_bytes),
            SortBy::Comm => a.comm.total().cmp(&b.comm.total()),
            SortBy::Batch => a.batch.cmp(&b.batch),
            SortBy::Speed => a.tokens_per_s_per_gpu.total_cmp(&b.tokens_per_s_per_gpu),
        };
        if asc {
            o
        } else {
            o.reverse()
        }
    });
    if let Some(n) = shown {
        v.truncate(n);
    }
    v
}

/// Tokens per second per GPU and MFU as the table shows them ("—" where the step-time
/// model does not apply).
pub fn speed_text(l: &memfit_core::explore::Candidate) -> (String, String) {
    if l.tokens_per_s_per_gpu > 0.0 {
        (
            format!("{:.0}", l.tokens_per_s_per_gpu),
            format!("{:.0} %", l.mfu * 100.0),
        )
    } else {
        ("—".into(), "—".into())
    }
}

/// "The best 10 of 1,234 fitting layouts." (or that none fits).
pub fn best_layouts_count(fitting: u64, listed: usize, shown: usize) -> String {
    if fitting == 0 {
        "No layout of this cluster fits.".to_string()
    } else {
        format!(
            "The best {} of {} fitting layouts. ",
            listed.min(shown),
            group_digits(fitting)
        )
    }
}

/// How many of `names` differ from their defaults in `x` (what an "advanced" group's
/// summary counts, and whether it opens by itself on a shared link).
pub fn differing(x: &memfit_core::contract::Settings, names: &[&str]) -> usize {
    use memfit_core::contract::query::get_key;
    let d = memfit_core::contract::Settings::default();
    names
        .iter()
        .filter(|k| get_key(x, k) != get_key(&d, k))
        .count()
}

/// "Advanced: 2 of 11 set" / "Advanced (11, at their defaults)".
pub fn advanced_summary(label: &str, differ: usize, total: usize) -> String {
    if differ == 0 {
        format!("{label} ({total}, at their defaults)")
    } else {
        format!("{label}: {differ} of {total} changed")
    }
}

#[cfg(test)]
mod advanced_tests {
    use super::*;
    use memfit_core::contract::query::decode;

    #[test]
    fn counts_what_a_link_sets() {
        let (x, _) = decode("layers=40&frag=10&cuda_ctx=600");
        // cuda_ctx=600 is the default: not counted.
        assert_eq!(differing(&x, &["layers", "hidden", "frag", "cuda_ctx"]), 2);
        assert_eq!(
            advanced_summary("Framework internals", 0, 9),
            "Framework internals (9, at their defaults)"
        );
        assert_eq!(
            advanced_summary("Framework internals", 2, 9),
            "Framework internals: 2 of 9 changed"
        );
    }
}
