//! The estimator: `Scenario -> Estimate`, a ledger of memory items.
//!
//! Every item says what it is (component), where it lives (GPU, CPU, NVMe), how
//! many bytes, the formula in symbols, the values substituted and the source.
//! Totals are sums of items. Views read the ledger and never recompute memory.

use super::deepspeed::{self, DsInputs, DsVersion};
use super::model::ParamCount;
use super::scenario::{Convention, Layout, Mode, Offload, Scenario, Zero};
use super::units::{mul, mul_div_ceil};
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
}

impl Component {
    /// Every component, in stacking order (bottom to top of a bar).
    pub const ALL: [Component; 9] = [
        Component::Weights,
        Component::Gradients,
        Component::MasterWeights,
        Component::OptimizerStates,
        Component::ModelStates,
        Component::GatheredLayer,
        Component::Activations,
        Component::KvCache,
        Component::InitLoad,
    ];
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
    /// `per_gpu_bytes <= gpu.usable_bytes`.
    pub fits: bool,
    /// `usable − per_gpu`, negative when it does not fit.
    pub headroom_bytes: i64,
    /// Phase of the step where the GPU peak occurs.
    pub peak_phase: Phase,
    /// The ledger.
    pub items: Vec<Item>,
    /// Input problems (cross-field; the codec adds per-key ones).
    pub warnings: Vec<Warning>,
}

impl Estimate {
    /// Sum of the GPU items of one component.
    pub fn gpu_bytes_of(&self, c: Component) -> u64 {
        self.items
            .iter()
            .filter(|i| i.component == c && i.location == Location::Gpu)
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

/// Builds ledger items with the layout's symbols at hand.
struct Ledger {
    items: Vec<Item>,
}

impl Ledger {
    fn push(
        &mut self,
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
        });
    }
}

const SRC_ZERO: &str =
    "seed 001 (ZeRO stage 1/2: 2+2+12 B/param), ZeRO paper (Rajbhandari et al. 2020 §5)";
const SRC_GATHER: &str =
    "seed 000 (DeepSpeed Memory Requirements: largest_layer_memory = 4·largest_layer_params)";
const SRC_ACT: &str =
    "seed 003 (34·b·s·h + 5·b·s²·a per layer) = Korthikanti et al. 2022 Table 2, no parallelism";
const SRC_ACT_TP: &str =
    "Korthikanti et al. 2022 Table 2, tensor parallel without sequence parallel";
const SRC_KV: &str = "seed 003 (KV cache 4·b·l·h·(s+n) in fp16), generalised to GQA and TP/PP";

/// Estimates memory for a scenario.
///
/// Never panics: any `Scenario` value gives an `Estimate` (inconsistent inputs
/// produce warnings). See the crate docs for the memory model.
///
/// # Example
/// ```
/// use memfit::core::{estimate::estimate, scenario::{Scenario, Zero}};
/// let mut s = Scenario::default(); // Llama-2-7B, bf16 + Adam, 1 GPU
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

    let mut ledger = Ledger { items: Vec::new() };
    let use_ds = s.convention.is_deepspeed()
        && s.mode == Mode::Train
        && matches!(s.zero, Zero::Z2 | Zero::Z3);
    if s.convention.is_deepspeed() && s.mode == Mode::Infer {
        warnings.push(Warning {
            key: "convention".into(),
            value: s.convention.as_str().into(),
            message: "DeepSpeed's estimators model training; inference uses memfit's accounting"
                .into(),
        });
    }
    let peak_phase = match (s.mode, use_ds) {
        (Mode::Infer, _) => {
            inference_items(s, &arch, psi, &layout, &mut ledger);
            Phase::Decode
        }
        (Mode::Train, true) => {
            deepspeed_items(s, psi, largest, &mut ledger);
            Phase::OptimizerStep
        }
        (Mode::Train, false) => {
            training_states(s, psi, largest, &layout, &mut ledger);
            activation_items(s, &arch, &layout, &mut ledger);
            Phase::Backward
        }
    };

    let total_at = |loc: Location| {
        ledger
            .items
            .iter()
            .filter(|i| i.location == loc)
            .fold(0u64, |a, i| a.saturating_add(i.bytes))
    };
    let per_gpu_bytes = total_at(Location::Gpu);
    let per_cpu_bytes = total_at(Location::Cpu);
    let usable = s.usable_bytes();
    let gpu = s.gpu();
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
        convention: if use_ds || !s.convention.is_deepspeed() {
            s.convention.as_str().into()
        } else {
            "memfit".into()
        },
        per_gpu_bytes,
        per_cpu_bytes,
        fits: per_gpu_bytes <= usable,
        headroom_bytes: (usable as i128 - per_gpu_bytes as i128)
            .clamp(i64::MIN as i128, i64::MAX as i128) as i64,
        peak_phase,
        items: ledger.items,
        warnings,
    }
}

/// Model states (weights, gradients, master weights, optimizer states) per GPU
/// under memfit's convention.
///
/// # Formula
/// ```text
/// Ψ_r = Ψ / (t·p)                      parameters per model-parallel rank (even split)
/// weights   = k·Ψ_r      / (N_d if ZeRO ≥ 3)
/// gradients = k·Ψ_r      / (N_d if ZeRO ≥ 2)
/// master    = 4·Ψ_r      / (N_d if ZeRO ≥ 1)      (mixed precision only)
/// optimizer = 8·Ψ_r      / (N_d if ZeRO ≥ 1)      (Adam m and v in fp32)
/// gathered  = 2k·L / t                             (ZeRO-3: largest layer's params + grads)
/// ```
/// `k` bytes of the compute dtype (2 for bf16/fp16, 4 for fp32), `Ψ` parameters,
/// `L` largest-layer parameters, `t`, `p`, `N_d` the TP, PP and DP degrees.
/// Offloaded items move to host RAM and are counted per node (× GPUs per node).
/// Divisions round up: the peak rank holds the largest shard, in whole bytes.
///
/// Source: seed 001 and the ZeRO paper (2+2+K with K = 12 for Adam), seed 004
/// ((2+2+K)·Ψ/N_d for ZeRO-3), seed 000 (4·largest_layer for the gathered layer).
///
/// # Example
/// Llama-2-7B (Ψ = 6,738,415,616), bf16 + Adam, ZeRO-1 on 8 GPUs:
/// weights 2Ψ = 13,476,831,232 B, gradients 2Ψ, master 4Ψ/8 = 3,369,207,808 B,
/// optimizer 8Ψ/8 = 6,738,415,616 B.
fn training_states(s: &Scenario, psi: u64, largest: u64, l: &Layout, ledger: &mut Ledger) {
    let k = s.precision.compute_bytes();
    let mp = l.tp as u64 * l.pp as u64;
    let nd = l.dp as u64;
    let z = s.zero;
    let per_node = l.gpus_per_node.min(l.world) as u64;
    let vals = |extra: &str| format!("Ψ={psi}, t={}, p={}, N_d={nd}{extra}", l.tp, l.pp);
    let (w_div, g_div, o_div) = (
        if z >= Zero::Z3 { nd } else { 1 },
        if z >= Zero::Z2 { nd } else { 1 },
        if z >= Zero::Z1 { nd } else { 1 },
    );
    let shard = |bytes_per_param: u64, div: u64| mul_div_ceil(bytes_per_param, psi, mp * div);
    let sym = |div: u64| if div > 1 { "/(t·p·N_d)" } else { "/(t·p)" };

    // Weights (ZeRO-3 parameter partitions may live on the host).
    let w = shard(k, w_div);
    let weights_on_cpu = z == Zero::Z3 && s.offload_param != Offload::None;
    if weights_on_cpu {
        ledger.push(
            Component::Weights,
            Location::Cpu,
            mul(w, per_node),
            &format!("n·{k}·Ψ{}", sym(w_div)),
            vals(&format!(
                ", n={per_node} (offload_param={})",
                s.offload_param.as_str()
            )),
            SRC_ZERO,
        );
    } else {
        ledger.push(
            Component::Weights,
            Location::Gpu,
            w,
            &format!("{k}·Ψ{}", sym(w_div)),
            vals(""),
            SRC_ZERO,
        );
    }

    // Gradients.
    let g = shard(k, g_div);
    let opt_loc = match s.offload_opt {
        Offload::None => Location::Gpu,
        Offload::Cpu => Location::Cpu,
        Offload::Nvme => Location::Nvme,
    };
    ledger.push(
        Component::Gradients,
        Location::Gpu,
        g,
        &format!("{k}·Ψ{}", sym(g_div)),
        vals(""),
        SRC_ZERO,
    );

    // Master weights and optimizer states (these are what ZeRO-Offload moves).
    let place = |bytes: u64| {
        if opt_loc == Location::Gpu {
            bytes
        } else {
            mul(bytes, per_node)
        }
    };
    let prefix = if opt_loc == Location::Gpu { "" } else { "n·" };
    let extra = if opt_loc == Location::Gpu {
        String::new()
    } else {
        format!(", n={per_node} (offload_opt={})", s.offload_opt.as_str())
    };
    if s.precision.has_master() {
        ledger.push(
            Component::MasterWeights,
            opt_loc,
            place(shard(4, o_div)),
            &format!("{prefix}4·Ψ{}", sym(o_div)),
            vals(&extra),
            SRC_ZERO,
        );
    }
    ledger.push(
        Component::OptimizerStates,
        opt_loc,
        place(shard(8, o_div)),
        &format!("{prefix}8·Ψ{}  (Adam m, v in fp32)", sym(o_div)),
        vals(&extra),
        SRC_ZERO,
    );

    if z == Zero::Z3 {
        ledger.push(
            Component::GatheredLayer,
            Location::Gpu,
            mul_div_ceil(2 * k, largest, l.tp as u64),
            &format!("{}·L/t", 2 * k),
            format!("L={largest}, t={}", l.tp),
            SRC_GATHER,
        );
    }
}

/// Activation memory saved for the backward pass, per GPU.
///
/// # Formula
/// ```text
/// per layer, t = 1:  A = s'·b·h·(34 + 5·a·s/h) · k/2      (= 34·b·s'·h + 5·b·a·s'·s)
/// per layer, t > 1:  A = s'·b·h·(10 + 24/t + 5·a·s/(h·t)) · k/2
/// per GPU:           A · ⌈L/p⌉ · p                         (1F1B: the first stage holds p micro-batches)
/// ```
/// `s` sequence length, `s' = s/c` the local sequence under context parallelism
/// `c`, `b` micro-batch, `h` hidden, `a` heads, `L` layers, `t` TP, `p` PP, `k`
/// bytes of the activation dtype (the constants assume 2-byte activations and
/// 1-byte dropout masks).
///
/// Source: seed 003 / seed 002 (`34bsh + 5bs²a`), Korthikanti et al. 2022 Table 2.
/// A first, convention-named term: dropout, attention kernels (flash stores no
/// s² scores), GQA and recomputation are refined later.
///
/// # Example
/// Llama-2-7B shape, b = 1, s = 4096, one GPU: per layer
/// 34·4096·4096 + 5·32·4096² = 3,254,779,904 B; ×32 layers = 104,152,956,928 B
/// (seed_examples.json `chaofa_training_rule`).
fn activation_items(s: &Scenario, arch: &super::model::Arch, l: &Layout, ledger: &mut Ledger) {
    let k = s.precision.compute_bytes() as u128;
    let b = s.batch as u128;
    let seq = s.seq as u128;
    let c = l.cp as u128;
    let s_local = seq.div_ceil(c);
    let h = arch.hidden as u128;
    let a = arch.heads as u128;
    let t = l.tp as u128;
    let p = l.pp as u128;
    let layers_per_stage = (arch.layers as u128).div_ceil(p);
    // Work in units of 1/2 byte·t so the TP formula stays integral: multiply by 2t·... then divide.
    let per_layer: u128 = if t == 1 {
        (34 * b * s_local * h + 5 * b * a * s_local * seq) * k / 2
    } else {
        // s'bh(10 + 24/t) + 5·a·s'·s·b/t
        (10 * t * b * s_local * h + 24 * b * s_local * h + 5 * b * a * s_local * seq) * k / (2 * t)
    };
    let total = per_layer * layers_per_stage * p;
    let (formula, src) = if t == 1 {
        ("(34·b·s'·h + 5·b·a·s'·s)·(k/2)·⌈L/p⌉·p", SRC_ACT)
    } else {
        ("s'·b·h·(10 + 24/t + 5·a·s/(h·t))·(k/2)·⌈L/p⌉·p", SRC_ACT_TP)
    };
    ledger.push(
        Component::Activations,
        Location::Gpu,
        total.min(u64::MAX as u128) as u64,
        formula,
        format!(
            "b={b}, s={seq}, s'=s/c={s_local}, h={h}, a={a}, L={}, t={t}, p={p}, c={c}, k={k}",
            arch.layers
        ),
        src,
    );
}

/// Inference: weights and KV cache per GPU.
///
/// # Formula
/// ```text
/// weights  = k·Ψ/(t·p)
/// kv_cache = 2·b·(s+n)·⌈L/p⌉·⌈a_kv/t⌉·d·k
/// ```
/// `k` bytes per element, `b` batch, `s` prompt tokens, `n` generated tokens, `L`
/// layers, `a_kv` KV heads, `d` head width; the 2 counts K and V.
///
/// Source: seed 003 (`4·b·l·h·(s+n)` for MHA in fp16, i.e. `a_kv·d = h`, k = 2).
///
/// # Example
/// Llama-2-7B, b = 1, s = 512, n = 32, bf16: 2·1·544·32·32·128·2 = 285,212,672 B
/// (equals llm-analysis 0.2.2's `kv_cache_memory_per_gpu` for the same case).
fn inference_items(
    s: &Scenario,
    arch: &super::model::Arch,
    psi: u64,
    l: &Layout,
    ledger: &mut Ledger,
) {
    let k = s.precision.compute_bytes();
    let mp = l.tp as u64 * l.pp as u64;
    ledger.push(
        Component::Weights,
        Location::Gpu,
        mul_div_ceil(k, psi, mp),
        &format!("{k}·Ψ/(t·p)"),
        format!("Ψ={psi}, t={}, p={}", l.tp, l.pp),
        "seed 003 (weights = bytes per parameter · Φ)",
    );
    let tokens = s.seq as u128 + s.gen as u128;
    let layers = (arch.layers as u128).div_ceil(l.pp as u128);
    let kv_heads = (arch.kv_heads as u128).div_ceil(l.tp as u128);
    let kv = 2 * s.batch as u128 * tokens * layers * kv_heads * arch.head_dim as u128 * k as u128;
    ledger.push(
        Component::KvCache,
        Location::Gpu,
        kv.min(u64::MAX as u128) as u64,
        "2·b·(s+n)·⌈L/p⌉·⌈a_kv/t⌉·d·k",
        format!(
            "b={}, s={}, n={}, L={}, a_kv={}, d={}, t={}, p={}, k={k}",
            s.batch, s.seq, s.gen, arch.layers, arch.kv_heads, arch.head_dim, l.tp, l.pp
        ),
        SRC_KV,
    );
}

/// Model states exactly as DeepSpeed's estimators compute them, split into
/// ledger items whose sums are DeepSpeed's two numbers.
fn deepspeed_items(s: &Scenario, psi: u64, largest: u64, ledger: &mut Ledger) {
    let version = match s.convention {
        Convention::DsDoc => DsVersion::Doc,
        Convention::Ds014 => DsVersion::V0_14,
        _ => DsVersion::V0_19,
    };
    let tool = match version {
        DsVersion::Doc => "seed 000 (DeepSpeed docs, Memory Requirements)",
        DsVersion::V0_14 => "DeepSpeed 0.14.2 estimate_zero*_model_states_mem_needs",
        DsVersion::V0_19 => "DeepSpeed 0.19.8 estimate_zero*_model_states_mem_needs",
    };
    let i = DsInputs {
        total_params: psi as f64,
        largest_layer_params: largest as f64,
        gpus_per_node: s.gpus_per_node.max(1),
        nodes: s.nodes.max(1),
        buffer_factor: s.buffer_factor,
    };
    let n = i.gpus_per_node;
    let g = n as u64 * i.nodes as u64;
    let base = format!(
        "P={psi}, G={g}, n={n}, nodes={}, abf={}",
        i.nodes, s.buffer_factor
    );
    let offload = s.offload_opt != Offload::None;
    if s.zero == Zero::Z2 {
        let e = deepspeed::zero2(&i, offload, version);
        if offload {
            ledger.push(
                Component::Weights,
                Location::Gpu,
                e.gpu,
                "2·P  (fp16 params)",
                base.clone(),
                tool,
            );
            let f = if version == DsVersion::Doc {
                "P·max(4·n, 16)·abf"
            } else {
                "P·max(4·G, 16)·abf"
            };
            ledger.push(Component::ModelStates, Location::Cpu, e.cpu, f, base, tool);
        } else {
            let (lead, lead_formula) = match version {
                DsVersion::V0_19 => (2 * psi, "2·P  (fp16 params)"),
                _ => (4 * psi, "4·P  (fp16 params and grads)"),
            };
            let rest = e.gpu - lead.min(e.gpu);
            let rest_formula = match version {
                DsVersion::V0_19 => "int(18·P/G)  (grads and optimizer states, partitioned)",
                _ => "int(16·P/G)  (optimizer states, partitioned)",
            };
            ledger.push(
                Component::Weights,
                Location::Gpu,
                lead,
                lead_formula,
                base.clone(),
                tool,
            );
            ledger.push(
                Component::ModelStates,
                Location::Gpu,
                rest,
                rest_formula,
                base.clone(),
                tool,
            );
            ledger.push(
                Component::InitLoad,
                Location::Cpu,
                e.cpu,
                "P·4·n·abf  (fp32 model built per process at init)",
                base,
                tool,
            );
        }
        return;
    }
    let param_off = s.offload_param != Offload::None && offload;
    let e = deepspeed::zero3(&i, offload, param_off, s.zero_init);
    let base = format!("{base}, L={largest}, zero_init={}", s.zero_init as u8);
    ledger.push(
        Component::GatheredLayer,
        Location::Gpu,
        e.largest_layer_memory,
        "4·L  (largest layer's fp16 params + grads)",
        base.clone(),
        tool,
    );
    let rest = e.gpu - e.largest_layer_memory.min(e.gpu);
    let (rest_formula, cpu_formula) = match (offload, param_off, s.zero_init) {
        (true, true, true) => ("", "P·18·(1/nodes)·abf"),
        (true, true, false) => ("", "P·max(4·n, 18/nodes)·abf"),
        (true, false, true) => ("int(2·P/G)  (fp16 param partition)", "P·16·(1/nodes)·abf"),
        (true, false, false) => (
            "int(2·P/G)  (fp16 param partition)",
            "P·max(4·n, 16/nodes)·abf",
        ),
        (false, _, true) => (
            "int(18·P/G)  (params, grads, optimizer states partitioned)",
            "L·4·n·abf  (zero.Init)",
        ),
        (false, _, false) => (
            "int(18·P/G)  (params, grads, optimizer states partitioned)",
            "P·4·n·abf  (fp32 model built per process at init)",
        ),
    };
    if !rest_formula.is_empty() {
        ledger.push(
            Component::ModelStates,
            Location::Gpu,
            rest,
            rest_formula,
            base.clone(),
            tool,
        );
    }
    let cpu_component = if offload {
        Component::ModelStates
    } else {
        Component::InitLoad
    };
    ledger.push(cpu_component, Location::Cpu, e.cpu, cpu_formula, base, tool);
}

#[cfg(test)]
mod tests {
    use super::*;

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
        // Activations: 32 layers · (34·4096·4096 + 5·32·4096²) = 104,152,956,928.
        assert_eq!(gpu_item(&e, Component::Activations), 104_152_956_928);
        assert_eq!(
            e.per_gpu_bytes,
            e.items
                .iter()
                .filter(|i| i.location == Location::Gpu)
                .map(|i| i.bytes)
                .sum::<u64>()
        );
        assert!(!e.fits);
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
        // 4 ranks per node, each 12Ψ/4 → 12Ψ per node.
        assert_eq!(e.per_cpu_bytes, 12 * 6_738_415_616);
    }

    #[test]
    fn inference_kv_cache_matches_seed_003() {
        let mut s = Scenario::default();
        s.mode = Mode::Infer;
        s.seq = 512;
        s.gen = 32;
        let e = estimate(&s);
        assert_eq!(e.gpu_bytes_of(Component::KvCache), 285_212_672);
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
