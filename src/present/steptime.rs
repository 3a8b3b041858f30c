//! The step-time panel's presenters: the model's figure, its measured band and breakdown.

/// The step-time model's held-out figures the best-layouts table cites (`tests/step_time.rs`
/// checks them against the comparison): median and max |error|, percent.
pub const STEP_HELD_OUT: (f64, f64) = (15.1, 53.4);

/// Measured over predicted step on the held-out runs: 10th percentile, median, 90th
/// (nearest rank; `tests/step_time.rs` checks them against the comparison).
pub const STEP_HELD_OUT_RATIO: (f64, f64, f64) = (0.98, 1.18, 1.41);

/// What the held-out runs say of one predicted step: "published runs held out from the
/// model took 0.98–1.41× its step (…, median 1.18×): about 1.53 s to 2.20 s here".
///
/// ```
/// let s = memfit::present::step_band(1.56);
/// assert!(s.contains("0.98–1.41×"));
/// assert!(s.contains("about 1.53 s to 2.20 s here"));
/// ```
pub fn step_band(step_s: f64) -> String {
    let (lo, mid, hi) = STEP_HELD_OUT_RATIO;
    format!(
        "Published runs held out from the model took {lo:.2}–{hi:.2}× its step (10th–90th percentile, median {mid:.2}×): about {} to {} here.",
        duration_text(step_s * lo),
        duration_text(step_s * hi)
    )
}

/// Held-out pairs of runs that differ in one choice, measured more than 5 % apart, whose
/// faster one the model predicts faster: `(right, pairs)` (`tests/step_time.rs` checks them
/// against the comparison).
pub const STEP_HELD_OUT_PAIRS: (usize, usize) = (2, 5);

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
        "Best first: the highest predicted training tokens per second per GPU, then no optimizer offload, the least wasted compute, the least communication per trained token, the most headroom. The step-time model is optimistic on most published runs (held out: median |error| {:.0} %, up to {:.0} %; see How accurate is this?), and of held-out pairs of runs that differ in one choice and were measured more than 5 % apart it ordered {} of {} right: treat layouts a few percent apart as ties, and budget a margin on its figures.",
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
    /// What the figure rests on: where its GEMM rates come from, and whether eager
    /// PyTorch's own costs are in it.
    pub basis: String,
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
        basis: step_basis(t),
    }
}

/// "GEMMs at the rates measured on an H200 by shape and precision …; eager PyTorch's own
/// kernels and optimizer passes counted (torch.compile would fuse most of them away)".
///
/// ```
/// use memfit::present::step_basis;
/// use memfit_core::contract::query::decode;
/// use memfit_core::estimate::Prepared;
/// let time = |q: &str| {
///     let s = decode(q).0.scenario;
///     memfit_core::steptime::step_time(&s, &Prepared::of(&s)).unwrap()
/// };
/// let h200 = step_basis(&time("model=llama-3-8b&gpu=h200&framework=pytorch"));
/// assert!(h200.starts_with("GEMMs at the rates measured on an H200"), "{h200}");
/// assert!(h200.contains("torch.compile"));
/// let a100 = step_basis(&time("model=llama-3-8b&gpu=a100-80&framework=megatron"));
/// assert!(a100.starts_with("GEMMs at the data sheet's peak"), "{a100}");
/// assert!(!a100.contains("torch.compile"));
/// ```
pub fn step_basis(t: &memfit_core::steptime::StepTime) -> String {
    use memfit_core::steptime::GemmRates;
    let gemm = match t.gemm_rates {
        GemmRates::Measured => "GEMMs at the rates measured on an H200 by shape and precision (the H100 SXM shares its die and clocks)",
        GemmRates::PeakCurve => {
            "GEMMs at the data sheet's peak times a size curve (no shape-by-shape measurement for this GPU)"
        }
    };
    if t.eager_costs {
        format!("{gemm}; eager PyTorch's own kernels and optimizer passes counted (torch.compile would fuse most of them away).")
    } else {
        format!("{gemm}.")
    }
}
