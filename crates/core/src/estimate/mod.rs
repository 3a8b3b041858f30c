//! The estimator: `Scenario -> Estimate`, a ledger of memory items.
//!
//! Every item says what it is (component), where it lives (GPU, CPU, NVMe), how
//! many bytes, the formula in symbols, the values substituted and the source.
//! Totals are sums of items. Views read the ledger and never recompute memory.

use crate::ledger::{Ledger, Tally, OUT_OF_RANGE};
use crate::model::{Arch, ParamCount};
use crate::scenario::{Convention, Count, Layout, Mode, Scenario, Zero};
use crate::train::Stage;
use crate::{conventions, infer, train};
use serde::{Deserialize, Serialize};

mod elsewhere;
mod summary;

pub(crate) use elsewhere::whole_ledger;
pub use elsewhere::{compute_here, has_whole_ledger, set_remote, whole_ledger_line};

pub(crate) use summary::*;

pub use crate::ledger::{Component, Item, Location, Mech, Phase, Warning};

/// Model facts reported with the estimate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelInfo {
    /// Preset id.
    pub id: String,
    /// Display name.
    pub name: String,
    /// Total parameters `Ψ` used by the estimate.
    pub params: u64,
    /// DeepSpeed's largest-layer parameters `L` used by the estimate.
    pub largest_layer_params: u64,
    /// Parameters active per token (MoE) from the architecture.
    pub active_params: u64,
    /// Count from the architecture, by part.
    pub breakdown: ParamCount,
    /// Whether `params`/`largest_layer` came from explicit input.
    pub explicit_params: bool,
}

/// GPU facts reported with the estimate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GpuInfo {
    /// Preset id.
    pub id: String,
    /// Display name.
    pub name: String,
    /// Usable bytes per GPU.
    pub usable_bytes: u64,
}

/// The estimator's output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// The model.
    pub model: ModelInfo,
    /// The GPU.
    pub gpu: GpuInfo,
    /// The resolved parallel layout.
    pub layout: Layout,
    /// Accounting convention used.
    pub convention: String,
    /// Peak bytes per GPU (sum of GPU items).
    pub per_gpu_bytes: u64,
    /// Host RAM per node (sum of CPU items).
    pub per_cpu_bytes: u64,
    /// Peak GPU bytes the allocator hands out (without CUDA context and fragmentation):
    /// what `torch.cuda.max_memory_allocated` reports.
    pub allocated_bytes: u64,
    /// `per_gpu_bytes <= gpu.usable_bytes`.
    pub fits: bool,
    /// `usable − per_gpu`, negative when it does not fit.
    pub headroom_bytes: i64,
    /// Phase of the step where the GPU peak occurs.
    pub peak_phase: Phase,
    /// Phase where the host-RAM peak occurs.
    pub cpu_peak_phase: Phase,
    /// The ledger.
    pub items: Vec<Item>,
    /// Pinned host RAM per node (part of `per_cpu_bytes`, not extra; seed 000).
    pub pinned_cpu_bytes: u64,
    /// Rules of thumb from the seeds, shown beside the detailed estimate.
    pub rules_of_thumb: Vec<Rule>,
    /// Every pipeline stage's peak (one entry without pipeline parallelism).
    pub stages: Vec<StageSummary>,
    /// Input problems (cross-field; the codec adds per-key ones).
    pub warnings: Vec<Warning>,
    /// A serving engine's start-up (`mode=serve`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub serve: Option<crate::serve::ServeReport>,
    /// Some figure does not fit in 64 bits: the affected byte counts stand at
    /// [`OUT_OF_RANGE`] and are not figures (a warning names the keys; the CLI prints
    /// them as `null`, the page as "out of range").
    #[serde(default)]
    pub out_of_range: bool,
}

pub use crate::ledger::StageSummary;

/// A rule of thumb, labelled as such.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rule {
    /// What the rule says.
    pub name: String,
    /// Its answer for this scenario, bytes per GPU.
    pub bytes: u64,
    /// The rule in symbols.
    pub formula: String,
    /// Where it comes from.
    pub source: String,
}

impl Estimate {
    /// The GPU items alive in the peak phase (what `per_gpu_bytes` sums).
    pub fn peak_gpu_items(&self) -> impl Iterator<Item = &Item> {
        self.items
            .iter()
            .filter(|i| i.location == Location::Gpu && i.alive_in(self.peak_phase))
    }
    /// Bytes of one component on the GPU at the peak.
    pub fn gpu_bytes_of(&self, c: Component) -> u64 {
        self.peak_gpu_items()
            .filter(|i| i.component == c)
            .fold(0u64, |a, i| a.saturating_add(i.bytes))
    }
    /// The GPU component with the most bytes.
    pub fn largest_gpu_component(&self) -> Option<Component> {
        Component::ALL
            .iter()
            .copied()
            .filter(|c| self.gpu_bytes_of(*c) > 0)
            .max_by_key(|c| self.gpu_bytes_of(*c))
    }
}

pub use crate::resolved::Prepared;

pub(crate) use crate::stage::TRAIN;

/// The phases of inference.
const INFER: [Phase; 2] = [Phase::Decode, Phase::Prefill];

/// Whose accounting a scenario takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Route {
    /// Inference (memfit's accounting under every convention).
    Infer,
    /// A serving engine's start-up.
    Serve,
    /// DeepSpeed's estimators (ZeRO-2/3 training).
    DeepSpeed,
    /// Megatron-LM's formula (training).
    Megatron,
    /// memfit's per-stage mechanisms (training).
    Train,
}

pub(crate) fn route(s: &Scenario) -> Route {
    let z = s.zero();
    match s.workload.mode {
        Mode::Infer => Route::Infer,
        Mode::Serve => Route::Serve,
        Mode::Train if s.stack.convention.is_deepspeed() && matches!(z, Zero::Z2 | Zero::Z3) => {
            Route::DeepSpeed
        }
        Mode::Train if s.stack.convention.is_megatron() => Route::Megatron,
        Mode::Train => Route::Train,
    }
}

impl Route {
    fn phases(self) -> &'static [Phase] {
        match self {
            Route::Infer => &INFER,
            Route::Serve => &[Phase::Decode],
            Route::DeepSpeed => &[Phase::OptimizerStep],
            Route::Megatron => &[Phase::Backward],
            Route::Train => &TRAIN,
        }
    }
}

/// Pipeline stages evaluated: `pp`, capped at the layer count (a larger `pp` is
/// flagged as a problem) and at 1024.
pub(crate) fn stage_count(arch: &Arch, l: &Layout) -> Count {
    l.pp.min(arch.layers).min(crate::scenario::count(1024))
}

/// The ledger of a scenario that has no pipeline stages of its own (inference and
/// the other tools' conventions); a warning when Megatron's formula needs one.
pub(crate) fn whole_ledger_here(
    s: &Scenario,
    p: &Prepared,
    l: &Layout,
    r: Route,
    ledger: &mut Ledger,
) -> Option<Warning> {
    match r {
        Route::Infer => {
            infer::inference_items(s, &p.arch, p.psi, l, ledger);
            train::overhead_items(s, l, p.largest, ledger);
            add_fragmentation(s, ledger, &INFER);
            None
        }
        Route::Serve => {
            crate::serve::Plan::of(s, p, l).items(ledger);
            None
        }
        Route::DeepSpeed => {
            conventions::deepspeed_items(s, p.psi, p.largest, ledger);
            None
        }
        Route::Megatron => conventions::megatron_items(s, &p.arch, l, ledger),
        Route::Train => None,
    }
}

/// Inference's program over its ledger: the largest running total (with fragmentation)
/// and the phase of the moment that first reaches it.
fn infer_peak(s: &Scenario, p: &Prepared, l: &Layout, items: &[Item]) -> (u64, Phase) {
    let layers = crate::scenario::ceil_div(p.arch.layers, l.pp);
    let mut w = crate::program::Watch::new(items.len());
    crate::program::infer::run(items, layers, s.workload.gen, &mut w);
    let phase = match w.peak_event.map(|e| e.phase) {
        Some(crate::program::StepPhase::Prefill) => Phase::Prefill,
        _ => Phase::Decode,
    };
    (w.peak.clamp(0, OUT_OF_RANGE as i128) as u64, phase)
}

/// The per-GPU peak of a scenario, `estimate(s).per_gpu_bytes`, without building
/// the ledger's text: each stage's step program run into a running-total sink.
///
/// # Example
/// ```
/// use memfit_core::estimate::{estimate, per_gpu_peak, Prepared};
/// use memfit_core::scenario::{Scenario, Sharding, Zero};
/// let mut s = Scenario::default();
/// s.cluster.gpus_per_node = memfit_core::scenario::count(8);
/// s.sharding = Sharding::Zero(Zero::Z3);
/// s.parallel.pp = memfit_core::scenario::count(2);
/// assert_eq!(per_gpu_peak(&s, &Prepared::of(&s)), estimate(&s).per_gpu_bytes);
/// ```
pub fn per_gpu_peak(s: &Scenario, p: &Prepared) -> u64 {
    let l = s.layout();
    let r = route(s);
    if r == Route::Train {
        let n = stage_count(&p.arch, &l);
        (0..n.get())
            .map(|i| crate::stage::stage_peak(s, p, &l, &Stage::of(&p.arch, n, i)))
            .max()
            .unwrap_or(0)
    } else {
        let mut lg = Ledger::tally();
        whole_ledger(s, p, &l, r, &mut lg);
        lg.totals().peak(Location::Gpu, r.phases(), false).0
    }
}

/// Whether `estimate(s)` has no warning (cross-field problems, a convention that
/// does not model the scenario), checked without building the ledger. `p` is
/// `Prepared::of` a scenario with the same model as `s` (the layout may differ). The explorer
/// lists only such layouts.
///
/// # Example
/// ```
/// use memfit_core::estimate::{estimate, is_clean, Prepared};
/// use memfit_core::scenario::Scenario;
/// let mut s = Scenario::default();
/// s.parallel.tp = memfit_core::scenario::count(3); // does not divide the 32 heads
/// assert!(!is_clean(&s, &Prepared::of(&s)) && !estimate(&s).warnings.is_empty());
/// ```
pub fn is_clean(s: &Scenario, p: &Prepared) -> bool {
    if !s.problems_for(&p.arch).is_empty() {
        return false;
    }
    match route(s) {
        Route::Infer | Route::Serve => {
            !(s.stack.convention.is_deepspeed() || s.stack.convention.is_megatron())
        }
        Route::Megatron => {
            let mut lg = Ledger::tally();
            whole_ledger(s, p, &s.layout(), Route::Megatron, &mut lg).is_none()
        }
        Route::DeepSpeed | Route::Train => true,
    }
}

/// Every pipeline stage's ledger, read off its step program; returns the peak stage's
/// items and every stage's summary.
fn train_stages(s: &Scenario, p: &Prepared, l: &Layout) -> (Vec<Item>, Vec<StageSummary>) {
    let n = stage_count(&p.arch, l);
    let mut stages = Vec::with_capacity(n.get() as usize);
    let mut best: Option<(u64, Vec<Item>)> = None;
    for i in 0..n.get() {
        let st = Stage::of(&p.arch, n, i);
        let mut sl = crate::stage::stage_ledger(s, p, l, &st);
        let bytes = sl.summary.per_gpu_bytes;
        stages.push(sl.summary);
        if n.get() > 1 {
            for item in sl.items.iter_mut() {
                item.rank = format!("stage {i} of {n}");
            }
        }
        if best.as_ref().is_none_or(|(b, _)| bytes > *b) {
            best = Some((bytes, sl.items));
        }
    }
    (best.map(|(_, items)| items).unwrap_or_default(), stages)
}

/// Estimates memory for a scenario.
///
/// Never panics: any `Scenario` value gives an `Estimate` (inconsistent inputs
/// produce warnings). The peak per location is the largest sum over the phases of
/// the step (training: backward, forward, optimizer step; inference: prefill,
/// decode; host RAM also at model init).
///
/// # Example
/// ```
/// use memfit_core::{estimate::estimate, scenario::{Scenario, Zero}};
/// let mut s = Scenario::default(); // Llama-2-7B, bf16 + AdamW, 1 GPU
/// s.cluster.gpus_per_node = memfit_core::scenario::count(8);
/// s.sharding = memfit_core::scenario::Sharding::Zero(Zero::Z3);
/// let e = estimate(&s);
/// // 16 bytes per parameter over 8 ranks: 16 · 6,738,415,616 / 8
/// let states: u64 = e.items.iter()
///     .filter(|i| ["weights", "gradients", "master_weights", "optimizer_states"]
///         .contains(&i.component.as_str()))
///     .map(|i| i.bytes).sum();
/// assert_eq!(states, 13_476_831_232);
/// ```
pub fn estimate(s: &Scenario) -> Estimate {
    let p = Prepared::of(s);
    let layout = s.layout();
    let r = route(s);
    let mut warnings = input_warnings(s, r);
    let inputs = warnings.len();
    let convention = match r {
        Route::DeepSpeed | Route::Megatron => s.stack.convention.as_str(),
        Route::Infer | Route::Serve | Route::Train => Convention::Memfit.as_str(),
    };
    let Step {
        ledger,
        mut stages,
        pinned,
        program,
        warning,
    } = step(s, &p, &layout, r);
    warnings.extend(warning);
    let totals = ledger.totals();
    let (per_gpu_bytes, peak_phase) =
        program.unwrap_or_else(|| totals.peak(Location::Gpu, r.phases(), false));
    let (per_cpu_bytes, cpu_peak_phase) = totals.peak(Location::Cpu, r.phases(), false);
    let allocated_bytes = totals.at(Location::Gpu, peak_phase, true);
    let mut range = out_of_range_warnings(&totals, per_gpu_bytes, per_cpu_bytes);
    if p.counts.total == OUT_OF_RANGE || p.psi == OUT_OF_RANGE {
        range.insert(
            0,
            Warning {
                key: "layers".into(),
                value: String::new(),
                message: "out of range: the parameter count exceeds 2^64; lower layers, hidden, ffn, vocab or experts".into(),
            },
        );
    }
    let out_of_range = !range.is_empty();
    warnings.extend(range);
    let items = ledger.into_items();
    if stages.is_empty() {
        stages.push(StageSummary {
            stage: 0,
            layers: p.arch.layers.get(),
            per_gpu_bytes,
            peak_phase,
            components: by_component(&items, peak_phase),
        });
    }
    let usable = s.usable_bytes();
    let serve = (r == Route::Serve).then(|| crate::serve::Plan::of(s, &p, &layout));
    // The plan's notes are input problems too: listed with them.
    let notes = serve.iter().flat_map(crate::serve::Plan::note_warnings);
    warnings.splice(inputs..inputs, notes);
    let fits = per_gpu_bytes <= usable
        && serve.as_ref().is_none_or(|pl| pl.error.is_none())
        && !crate::stage::replay_out_of_memory(s);
    Estimate {
        serve: serve.map(|pl| crate::serve::ServeReport {
            experts: crate::serve::expert_placement(s, &p, &layout),
            ..pl.report()
        }),
        model: model_info(s, &p),
        gpu: gpu_info(s),
        convention: convention.into(),
        per_gpu_bytes,
        allocated_bytes,
        per_cpu_bytes,
        fits,
        headroom_bytes: (usable as i128 - per_gpu_bytes as i128)
            .clamp(i64::MIN as i128, i64::MAX as i128) as i64,
        peak_phase,
        cpu_peak_phase,
        items,
        pinned_cpu_bytes: pinned,
        rules_of_thumb: rules(s, &p.arch, p.psi, &layout),
        layout,
        stages,
        warnings,
        out_of_range,
    }
}

/// The scenario's cross-field problems as warnings, and a convention that models
/// training only, asked about inference.
fn input_warnings(s: &Scenario, r: Route) -> Vec<Warning> {
    let mut warnings: Vec<Warning> = s
        .problems()
        .into_iter()
        .map(|(key, message)| Warning {
            key: key.into(),
            value: String::new(),
            message,
        })
        .collect();
    let convention = s.stack.convention;
    if (convention.is_deepspeed() || convention.is_megatron())
        && matches!(r, Route::Infer | Route::Serve)
    {
        warnings.push(Warning {
            key: "convention".into(),
            value: convention.as_str().into(),
            message: format!(
                "{} models training; inference uses memfit's accounting",
                convention.as_str()
            ),
        });
    }
    warnings
}

/// One step's ledger, stages, pinned host bytes, the program's peak and phase (training
/// and inference), and a warning of the route.
struct Step {
    ledger: Ledger,
    stages: Vec<StageSummary>,
    pinned: u64,
    program: Option<(u64, Phase)>,
    warning: Option<Warning>,
}

/// The ledger of route `r`: the stages' programs under memfit's training convention
/// (the peak is the largest stage's, its phase the moment that first reaches it), or
/// the whole-job ledger of the other routes (inference's peak from its program).
fn step(s: &Scenario, p: &Prepared, layout: &Layout, r: Route) -> Step {
    if r == Route::Train {
        let (items, stages) = train_stages(s, p, layout);
        let top = stages
            .iter()
            .fold(None::<&StageSummary>, |best, st| match best {
                Some(b) if b.per_gpu_bytes >= st.per_gpu_bytes => Some(b),
                _ => Some(st),
            });
        let program = top.map(|st| (st.per_gpu_bytes, st.peak_phase));
        let mut ledger = Ledger::Items(items);
        train::host_init(s, p.psi, p.largest, layout, &mut ledger);
        let pinned = train::pinned_bytes(s, p.psi, layout);
        return Step {
            ledger,
            stages,
            pinned,
            program,
            warning: None,
        };
    }
    let mut ledger = Ledger::items();
    let warning = whole_ledger(s, p, layout, r, &mut ledger);
    let program = match (&ledger, r) {
        (Ledger::Items(items), Route::Infer) => Some(infer_peak(s, p, layout, items)),
        _ => None,
    };
    Step {
        ledger,
        stages: Vec::new(),
        pinned: 0,
        program,
        warning,
    }
}

pub(crate) use crate::ledger::by_component;

/// Allocator fragmentation: `f%` of the allocated peak, reserved but unusable.
///
/// # Formula
/// ```text
/// fragmentation = ⌈f/100 · max over phases (allocated GPU bytes)⌉
/// ```
/// Default f = 5: PyTorch's caching allocator typically reserves 3–10 % more than it
/// has allocated in steady training (PyTorch CUDA semantics docs: memory management,
/// `expandable_segments` reduces it). Editable with `frag=`.
///
/// # Example
/// An allocated peak of 40,000,000,000 B at f = 5: 2,000,000,000 B.
pub(crate) fn add_fragmentation(s: &Scenario, ledger: &mut Ledger, phases: &[Phase]) {
    if s.runtime.frag_pct == 0 {
        return;
    }
    let (peak_alloc, _) = ledger.totals().peak(Location::Gpu, phases, true);
    crate::stage::push_fragmentation(s, peak_alloc, ledger);
}

#[cfg(test)]
mod tests;
