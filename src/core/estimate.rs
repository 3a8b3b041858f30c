//! The estimator: `Scenario -> Estimate`, a ledger of memory items.
//!
//! Every item says what it is (component), where it lives (GPU, CPU, NVMe), how
//! many bytes, the formula in symbols, the values substituted and the source.
//! Totals are sums of items. Views read the ledger and never recompute memory.

use super::model::ParamCount;
use super::scenario::{Convention, Layout, Mode, Scenario, Zero};
use super::{conventions, infer, train};
use serde::{Deserialize, Serialize};

/// What a ledger item holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Component {
    /// Model parameters in the compute dtype.
    Weights,
    /// Parameter gradients.
    Gradients,
    /// fp32 master copy of the weights (mixed precision).
    MasterWeights,
    /// Optimizer moments (Adam: momentum and variance).
    OptimizerStates,
    /// DeepSpeed's lumped "params, grads and optimizer states" partition.
    ModelStates,
    /// ZeRO-3's gathered (all-gathered) layer: full params and grads of the largest layer.
    GatheredLayer,
    /// Activations saved for the backward pass.
    Activations,
    /// Inference KV cache.
    KvCache,
    /// Host RAM used while the model is built and handed to the GPUs.
    InitLoad,
    /// Transient buffers: prefill/decode workspace, optimizer temporaries, NVMe staging.
    Workspace,
    /// Logits and loss of the output layer.
    Logits,
    /// Communication buffers: NCCL, DDP buckets, DeepSpeed reduce/all-gather/prefetch buckets.
    CommBuffers,
    /// CUDA context and library workspaces (not allocator memory).
    Overhead,
    /// Allocator fragmentation: reserved but not allocated.
    Fragmentation,
}

impl Component {
    /// Every component, in stacking order (bottom to top of a bar).
    pub const ALL: [Component; 14] = [
        Component::Weights,
        Component::Gradients,
        Component::MasterWeights,
        Component::OptimizerStates,
        Component::ModelStates,
        Component::GatheredLayer,
        Component::Activations,
        Component::Logits,
        Component::KvCache,
        Component::Workspace,
        Component::CommBuffers,
        Component::Overhead,
        Component::Fragmentation,
        Component::InitLoad,
    ];
    /// Whether the component is tensor memory the allocator hands out (what
    /// `torch.cuda.max_memory_allocated` counts).
    pub fn is_allocated(self) -> bool {
        !matches!(self, Component::Overhead | Component::Fragmentation)
    }
    /// Stable machine name (as in the JSON).
    pub fn as_str(self) -> &'static str {
        match self {
            Component::Weights => "weights",
            Component::Gradients => "gradients",
            Component::MasterWeights => "master_weights",
            Component::OptimizerStates => "optimizer_states",
            Component::ModelStates => "model_states",
            Component::GatheredLayer => "gathered_layer",
            Component::Activations => "activations",
            Component::KvCache => "kv_cache",
            Component::InitLoad => "init_load",
            Component::Workspace => "workspace",
            Component::Logits => "logits",
            Component::CommBuffers => "comm_buffers",
            Component::Overhead => "overhead",
            Component::Fragmentation => "fragmentation",
        }
    }
    /// Human label.
    pub fn label(self) -> &'static str {
        match self {
            Component::Weights => "Weights",
            Component::Gradients => "Gradients",
            Component::MasterWeights => "fp32 master weights",
            Component::OptimizerStates => "Optimizer states",
            Component::ModelStates => "Model states (DeepSpeed, lumped)",
            Component::GatheredLayer => "Gathered layer (ZeRO-3)",
            Component::Activations => "Activations",
            Component::KvCache => "KV cache",
            Component::InitLoad => "Model init (host)",
            Component::Workspace => "Workspace",
            Component::Logits => "Logits and loss",
            Component::CommBuffers => "Communication buffers",
            Component::Overhead => "CUDA context",
            Component::Fragmentation => "Fragmentation",
        }
    }
    /// A stable colour (hex RGB) for charts and legends.
    pub fn color(self) -> (u8, u8, u8) {
        match self {
            Component::Weights => (0x3b, 0x6e, 0xc8),
            Component::Gradients => (0xe0, 0x8a, 0x1e),
            Component::MasterWeights => (0x6a, 0x4c, 0x93),
            Component::OptimizerStates => (0xc8, 0x3b, 0x4a),
            Component::ModelStates => (0x8c, 0x56, 0x4b),
            Component::GatheredLayer => (0x17, 0xa2, 0xb8),
            Component::Activations => (0x2e, 0x9e, 0x57),
            Component::KvCache => (0xb5, 0x9f, 0x1a),
            Component::InitLoad => (0x7f, 0x7f, 0x7f),
            Component::Workspace => (0xd6, 0x6e, 0xb8),
            Component::Logits => (0x9c, 0xc4, 0x3e),
            Component::CommBuffers => (0x5a, 0x9b, 0xd5),
            Component::Overhead => (0x4d, 0x4d, 0x4d),
            Component::Fragmentation => (0xbd, 0xbd, 0xbd),
        }
    }
}

/// Where an item lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Location {
    /// GPU memory, per GPU.
    Gpu,
    /// Host RAM, per node.
    Cpu,
    /// NVMe, per node.
    Nvme,
}

/// The phase of a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Model construction, before training starts.
    Init,
    /// Forward pass.
    Forward,
    /// Backward pass.
    Backward,
    /// Optimizer step.
    OptimizerStep,
    /// Inference: processing the prompt.
    Prefill,
    /// Inference: generating tokens.
    Decode,
}

/// One line of the ledger.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Item {
    /// What it holds.
    pub component: Component,
    /// Where it lives.
    pub location: Location,
    /// Bytes (per GPU for `gpu`, per node for `cpu`/`nvme`).
    pub bytes: u64,
    /// Which ranks hold it: `"all"` (every GPU alike) or `"node"` (per node of host RAM).
    pub rank: String,
    /// The formula in symbols.
    pub formula: String,
    /// The values substituted into the formula.
    pub values: String,
    /// Where the formula comes from (seed file, paper, tool and version).
    pub source: String,
    /// The phases this item exists in (empty: every phase of the step).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub phases: Vec<Phase>,
}

impl Item {
    /// Whether the item is alive in phase `ph` (`Init` items only in `Init`).
    pub fn alive_in(&self, ph: Phase) -> bool {
        if self.phases.is_empty() {
            ph != Phase::Init
        } else {
            self.phases.contains(&ph)
        }
    }
}

/// A problem with the input, by key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Warning {
    /// The query key concerned.
    pub key: String,
    /// The offending value as given (may be empty).
    pub value: String,
    /// What is wrong and what memfit did instead.
    pub message: String,
}

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
}

/// One pipeline stage's peak (all stages are listed; the ledger shows the peak one).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StageSummary {
    /// Stage index, 0-based.
    pub stage: u32,
    /// Transformer blocks on the stage.
    pub layers: u32,
    /// Peak bytes per GPU of the stage.
    pub per_gpu_bytes: u64,
    /// Phase of the stage's peak.
    pub peak_phase: Phase,
    /// Bytes by component at the stage's peak.
    pub components: Vec<(Component, u64)>,
}

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

/// Builds ledger items.
pub(crate) struct Ledger {
    pub(crate) items: Vec<Item>,
}

impl Ledger {
    /// Adds an item present in every phase.
    pub(crate) fn push(
        &mut self,
        component: Component,
        location: Location,
        bytes: u64,
        formula: &str,
        values: String,
        source: &str,
    ) {
        self.push_in(&[], component, location, bytes, formula, values, source);
    }

    /// Adds an item present in the given phases only (every phase when empty).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn push_in(
        &mut self,
        phases: &[Phase],
        component: Component,
        location: Location,
        bytes: u64,
        formula: &str,
        values: String,
        source: &str,
    ) {
        self.items.push(Item {
            component,
            location,
            bytes,
            rank: if location == Location::Gpu {
                "all".into()
            } else {
                "node".into()
            },
            formula: formula.into(),
            values,
            source: source.into(),
            phases: phases.to_vec(),
        });
    }
}

/// The peak of one location over the phases: items without a phase count in every
/// phase of the step (not in `Init`); `Init` items count only in `Init`.
fn peak(items: &[Item], loc: Location, phases: &[Phase]) -> (u64, Phase) {
    let mut best = (0u64, phases[0]);
    for &ph in phases.iter().chain(std::iter::once(&Phase::Init)) {
        let sum = items
            .iter()
            .filter(|i| i.location == loc)
            .filter(|i| i.alive_in(ph))
            .fold(0u64, |a, i| a.saturating_add(i.bytes));
        if sum > best.0 {
            best = (sum, ph);
        }
    }
    best
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
/// use memfit::core::{estimate::estimate, scenario::{Scenario, Zero}};
/// let mut s = Scenario::default(); // Llama-2-7B, bf16 + AdamW, 1 GPU
/// s.gpus_per_node = 8;
/// s.zero = Zero::Z3;
/// let e = estimate(&s);
/// // 16 bytes per parameter over 8 ranks: 16 · 6,738,415,616 / 8
/// let states: u64 = e.items.iter()
///     .filter(|i| ["weights", "gradients", "master_weights", "optimizer_states"]
///         .contains(&i.component.as_str()))
///     .map(|i| i.bytes).sum();
/// assert_eq!(states, 13_476_831_232);
/// ```
pub fn estimate(s: &Scenario) -> Estimate {
    let preset = s.preset();
    let arch = s.arch();
    let counts = arch.params();
    let psi = s.params.unwrap_or(counts.total);
    let largest = s.largest_layer.unwrap_or(counts.largest_layer);
    let layout = s.layout();
    let mut warnings: Vec<Warning> = s
        .problems()
        .into_iter()
        .map(|(key, message)| Warning {
            key: key.into(),
            value: String::new(),
            message,
        })
        .collect();
    let z = s.effective_zero();

    let mut ledger = Ledger { items: Vec::new() };
    let use_ds =
        s.convention.is_deepspeed() && s.mode == Mode::Train && matches!(z, Zero::Z2 | Zero::Z3);
    let use_megatron = s.convention.is_megatron() && s.mode == Mode::Train;
    if (s.convention.is_deepspeed() || s.convention.is_megatron()) && s.mode == Mode::Infer {
        warnings.push(Warning {
            key: "convention".into(),
            value: s.convention.as_str().into(),
            message: format!(
                "{} models training; inference uses memfit's accounting",
                s.convention.as_str()
            ),
        });
    }
    let mut pinned = 0;
    let mut stages: Vec<StageSummary> = Vec::new();
    let mut convention = Convention::Memfit.as_str();
    let phases: &[Phase] = match s.mode {
        Mode::Infer => {
            infer::inference_items(s, &arch, psi, &layout, &mut ledger);
            &[Phase::Decode, Phase::Prefill]
        }
        Mode::Train if use_ds => {
            conventions::deepspeed_items(s, psi, largest, &mut ledger);
            convention = s.convention.as_str();
            &[Phase::OptimizerStep]
        }
        Mode::Train if use_megatron => {
            if let Some(w) = conventions::megatron_items(s, &arch, &layout, &mut ledger) {
                warnings.push(w);
            }
            convention = s.convention.as_str();
            &[Phase::Backward]
        }
        Mode::Train => {
            const TRAIN: [Phase; 3] = [Phase::Backward, Phase::Forward, Phase::OptimizerStep];
            // Every pipeline stage (they differ: embedding, head, micro-batches in flight);
            // the ledger shows the stage with the highest peak.
            // (pp beyond the layer count is flagged as a problem; stages are capped there.)
            let p = layout.pp.min(arch.layers.max(1)).clamp(1, 1024);
            let mut best: Option<(u64, Vec<Item>)> = None;
            for i in 0..p {
                let st = train::Stage::of(&arch, p, i);
                let mut lg = Ledger { items: Vec::new() };
                train::model_states(s, &arch, psi, largest, &layout, &st, &mut lg);
                train::activation_items(s, &arch, &layout, &st, &mut lg);
                train::overhead_items(s, &layout, largest, &mut lg);
                add_fragmentation(s, &mut lg, &TRAIN);
                let (bytes, phase) = peak(&lg.items, Location::Gpu, &TRAIN);
                stages.push(StageSummary {
                    stage: i,
                    layers: st.layers,
                    per_gpu_bytes: bytes,
                    peak_phase: phase,
                    components: by_component(&lg.items, phase),
                });
                if p > 1 {
                    for item in lg.items.iter_mut() {
                        item.rank = format!("stage {i} of {p}");
                    }
                }
                if best.as_ref().is_none_or(|(b, _)| bytes > *b) {
                    best = Some((bytes, lg.items));
                }
            }
            ledger.items = best.map(|(_, items)| items).unwrap_or_default();
            train::host_init(s, psi, largest, &layout, &mut ledger);
            pinned = train::pinned_bytes(s, psi, &layout);
            &TRAIN
        }
    };
    if s.mode == Mode::Infer && !use_ds && !use_megatron {
        train::overhead_items(s, &layout, largest, &mut ledger);
        add_fragmentation(s, &mut ledger, phases);
    }
    let (per_gpu_bytes, peak_phase) = peak(&ledger.items, Location::Gpu, phases);
    let (per_cpu_bytes, cpu_peak_phase) = peak(&ledger.items, Location::Cpu, phases);
    let allocated_bytes = ledger
        .items
        .iter()
        .filter(|i| {
            i.location == Location::Gpu && i.component.is_allocated() && i.alive_in(peak_phase)
        })
        .fold(0u64, |a, i| a.saturating_add(i.bytes));
    if stages.is_empty() {
        stages.push(StageSummary {
            stage: 0,
            layers: arch.layers,
            per_gpu_bytes,
            peak_phase,
            components: by_component(&ledger.items, peak_phase),
        });
    }
    if use_megatron && s.convention == Convention::Megatron014 && !convention.is_empty() {
        convention = s.convention.as_str();
    }
    let usable = s.usable_bytes();
    let gpu = s.gpu();
    let rules_of_thumb = rules(s, &arch, psi, &layout);
    Estimate {
        model: ModelInfo {
            id: preset.id.into(),
            name: preset.name.into(),
            params: psi,
            largest_layer_params: largest,
            active_params: counts.active,
            breakdown: counts,
            explicit_params: s.params.is_some() || s.largest_layer.is_some(),
        },
        gpu: GpuInfo {
            id: if s.gpu_mem_mib.is_some() {
                "custom".into()
            } else {
                gpu.id.into()
            },
            name: if s.gpu_mem_mib.is_some() {
                "Custom capacity".into()
            } else {
                gpu.name.into()
            },
            usable_bytes: usable,
        },
        layout,
        convention: convention.into(),
        per_gpu_bytes,
        allocated_bytes,
        per_cpu_bytes,
        fits: per_gpu_bytes <= usable,
        headroom_bytes: (usable as i128 - per_gpu_bytes as i128)
            .clamp(i64::MIN as i128, i64::MAX as i128) as i64,
        peak_phase,
        cpu_peak_phase,
        items: ledger.items,
        pinned_cpu_bytes: pinned,
        rules_of_thumb,
        stages,
        warnings,
    }
}

/// GPU bytes by component among the items alive in `phase`.
fn by_component(items: &[Item], phase: Phase) -> Vec<(Component, u64)> {
    Component::ALL
        .iter()
        .map(|c| {
            let b = items
                .iter()
                .filter(|i| i.location == Location::Gpu && i.component == *c && i.alive_in(phase))
                .fold(0u64, |a, i| a.saturating_add(i.bytes));
            (*c, b)
        })
        .filter(|(_, b)| *b > 0)
        .collect()
}

/// Allocator fragmentation: `f%` of the allocated peak, reserved but unusable.
///
/// # Formula
/// ```text
/// fragmentation = ⌈f/100 · max over phases (allocated GPU bytes)⌉
/// ```
/// Default f = 5: PyTorch's caching allocator typically reserves 3–10 % more than it
/// has allocated in steady training (PyTorch CUDA semantics docs: memory management,
/// `expandable_segments` reduces it). Editable with `frag=`.
fn add_fragmentation(s: &Scenario, ledger: &mut Ledger, phases: &[Phase]) {
    if s.frag_pct == 0 {
        return;
    }
    let allocated: Vec<Item> = ledger
        .items
        .iter()
        .filter(|i| i.component.is_allocated())
        .cloned()
        .collect();
    let (peak_alloc, _) = peak(&allocated, Location::Gpu, phases);
    let bytes = (peak_alloc as u128 * s.frag_pct as u128)
        .div_ceil(100)
        .min(u64::MAX as u128) as u64;
    ledger.push(
        Component::Fragmentation,
        Location::Gpu,
        bytes,
        "f/100 · allocated peak",
        format!("f={}%, allocated peak={peak_alloc}", s.frag_pct),
        "PyTorch caching allocator: reserved − allocated, typically 3–10 % (CUDA semantics: memory management)",
    );
}

/// Seed 003's rules of thumb, labelled as rules.
///
/// # Formula
/// ```text
/// inference: 1.2 · k·Ψ                                (7B in bf16 → 16.8 GB)
/// training:  20·Ψ + (34·b·s·h + 5·b·s²·a)·L           (AdamW mixed precision, no ZeRO)
/// ```
/// Source: seed 003 (chaofa).
fn rules(s: &Scenario, arch: &super::model::Arch, psi: u64, _l: &Layout) -> Vec<Rule> {
    let k = s.precision.compute_bytes();
    match s.mode {
        Mode::Infer => vec![Rule {
            name: "seed 003: inference ≈ 1.2 × weights".into(),
            bytes: (k as u128 * psi as u128 * 12 / 10).min(u64::MAX as u128) as u64,
            formula: format!("1.2·{k}·Ψ"),
            source: "seed 003 (chaofa: 7B in bf16 → 16.8 GB)".into(),
        }],
        Mode::Train => {
            let (b, sq, h, a, layers) = (
                s.batch as u128,
                s.seq as u128,
                arch.hidden as u128,
                arch.heads as u128,
                arch.layers as u128,
            );
            let act = (34 * b * sq * h + 5 * b * sq * sq * a) * layers;
            vec![Rule {
                name: "seed 003: training ≈ 20·Ψ + activations (no ZeRO)".into(),
                bytes: (20 * psi as u128 + act).min(u64::MAX as u128) as u64,
                formula: "20·Ψ + (34·b·s·h + 5·b·s²·a)·L".into(),
                source: "seed 003 (chaofa: 20 = 6 params + 6 grads + 8 Adam, bytes per parameter)"
                    .into(),
            }]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::scenario::Offload;

    fn gpu_item(e: &Estimate, c: Component) -> u64 {
        e.gpu_bytes_of(c)
    }

    /// The issue's acceptance query, checked by hand:
    /// `model=llama-2-7b&mode=train&zero=3&gpus_per_node=8`.
    #[test]
    fn llama2_7b_zero3_8gpu_model_states_by_hand() {
        let mut s = Scenario::default();
        s.zero = Zero::Z3;
        s.gpus_per_node = 8;
        let e = estimate(&s);
        let psi: u64 = 6_738_415_616;
        assert_eq!(e.model.params, psi);
        // Each of 8 ranks holds 1/8 of every state.
        assert_eq!(gpu_item(&e, Component::Weights), 2 * psi / 8); // 1,684,603,904
        assert_eq!(gpu_item(&e, Component::Gradients), 1_684_603_904);
        assert_eq!(gpu_item(&e, Component::MasterWeights), 3_369_207_808);
        assert_eq!(gpu_item(&e, Component::OptimizerStates), 6_738_415_616);
        // Largest layer = embedding 32000·4096 = 131,072,000 params; 4 bytes each (bf16 params + grads).
        assert_eq!(e.model.largest_layer_params, 131_072_000);
        assert_eq!(gpu_item(&e, Component::GatheredLayer), 524_288_000);
        // Activations (memfit, flash, no dropout): 32 layers · 763,920,384 B (see activations.rs).
        assert_eq!(gpu_item(&e, Component::Activations), 32 * 763_920_384);
        // Seed 003's term for comparison: 32 · (34·4096·4096 + 5·32·4096²) = 104,152,956,928.
        s.convention = Convention::Seed003;
        assert_eq!(
            gpu_item(&estimate(&s), Component::Activations),
            104_152_956_928
        );
        assert_eq!(
            e.per_gpu_bytes,
            e.items
                .iter()
                .filter(|i| i.location == Location::Gpu)
                .map(|i| i.bytes)
                .sum::<u64>()
        );
        assert!(e.fits);
    }

    #[test]
    fn zero_stages_shrink_states_as_the_zero_paper_says() {
        // ZeRO paper headline: Ψ = 7.5B, N_d = 64: 120 / 31.4 / 16.6 / 1.9 GB.
        let mut s = Scenario::default();
        s.params = Some(7_500_000_000);
        s.gpus_per_node = 8;
        s.nodes = 8;
        let states = |z| {
            let mut s = s.clone();
            s.zero = z;
            let e = estimate(&s);
            [
                Component::Weights,
                Component::Gradients,
                Component::MasterWeights,
                Component::OptimizerStates,
            ]
            .iter()
            .map(|c| gpu_item(&e, *c))
            .sum::<u64>()
        };
        assert_eq!(states(Zero::Z0), 120_000_000_000);
        assert_eq!(states(Zero::Z1), 31_406_250_000);
        assert_eq!(states(Zero::Z2), 16_640_625_000);
        assert_eq!(states(Zero::Z3), 1_875_000_000);
    }

    #[test]
    fn offload_moves_optimizer_to_host_per_node() {
        let mut s = Scenario::default();
        s.zero = Zero::Z2;
        s.gpus_per_node = 4;
        s.offload_opt = Offload::Cpu;
        let e = estimate(&s);
        assert_eq!(e.gpu_bytes_of(Component::OptimizerStates), 0);
        // Steady state: 4 ranks per node, each 12Ψ/4 → 12Ψ per node.
        let steady: u64 = e
            .items
            .iter()
            .filter(|i| i.location == Location::Cpu && i.phases.is_empty())
            .map(|i| i.bytes)
            .sum();
        assert_eq!(steady, 12 * 6_738_415_616);
        // At init each of the 4 processes builds the fp32 model: 16Ψ, the host peak.
        assert_eq!(e.per_cpu_bytes, 16 * 6_738_415_616);
        assert_eq!(e.cpu_peak_phase, Phase::Init);
    }

    #[test]
    fn inference_kv_cache_matches_seed_003() {
        let mut s = Scenario::default();
        s.mode = Mode::Infer;
        s.seq = 512;
        s.gen = 32;
        let e = estimate(&s);
        let kv = |ph| {
            e.items
                .iter()
                .find(|i| i.component == Component::KvCache && i.phases == [ph])
                .unwrap()
                .bytes
        };
        assert_eq!(kv(Phase::Decode), 285_212_672); // 2·1·(512+32)·32·32·128·2
        assert_eq!(kv(Phase::Prefill), 268_435_456); // 2·1·512·32·32·128·2
        assert_eq!(e.gpu_bytes_of(Component::Weights), 2 * 6_738_415_616);
    }

    #[test]
    fn every_item_is_explained() {
        for conv in Convention::ALL {
            for z in [Zero::Z0, Zero::Z1, Zero::Z2, Zero::Z3] {
                for off in [Offload::None, Offload::Cpu] {
                    let mut s = Scenario::default();
                    s.convention = conv;
                    s.zero = z;
                    s.offload_opt = off;
                    s.offload_param = off;
                    for i in estimate(&s).items {
                        assert!(
                            !i.formula.is_empty() && !i.values.is_empty() && !i.source.is_empty(),
                            "{i:?}"
                        );
                    }
                }
            }
        }
    }
}
