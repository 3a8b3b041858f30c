//! The one typed input of the estimator.
//!
//! Every setting a user can make lives in [`Scenario`]; the query-string codec
//! (`crate::share`) maps it to and from the URL, and the estimator reads nothing
//! else. Field docs name the query key.

use super::gpu::{gpu, Gpu, GPUS};
use super::model::{preset, Arch, Mlp, Norm, Preset};
use super::units::{Units, MIB};
use serde::{Deserialize, Serialize};

/// Training or inference.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Forward, backward and optimizer step.
    #[default]
    Train,
    /// Prefill and decode with a KV cache.
    Infer,
}

/// ZeRO stage (DeepSpeed) — what is partitioned across the data-parallel ranks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Zero {
    /// Plain data parallelism: every rank holds everything.
    #[default]
    Z0,
    /// Optimizer states partitioned.
    Z1,
    /// Optimizer states and gradients partitioned.
    Z2,
    /// Optimizer states, gradients and parameters partitioned (≈ FSDP FULL_SHARD).
    Z3,
}

impl Zero {
    /// The stage number.
    pub fn number(self) -> u8 {
        match self {
            Zero::Z0 => 0,
            Zero::Z1 => 1,
            Zero::Z2 => 2,
            Zero::Z3 => 3,
        }
    }
    /// From a stage number.
    pub fn from_number(n: u8) -> Option<Zero> {
        [Zero::Z0, Zero::Z1, Zero::Z2, Zero::Z3]
            .get(n as usize)
            .copied()
    }
}

/// Where offloaded state lives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Offload {
    /// Stays on the GPU.
    #[default]
    None,
    /// Host RAM (ZeRO-Offload).
    Cpu,
    /// NVMe (ZeRO-Infinity); host RAM still stages it.
    Nvme,
}

impl Offload {
    /// Stable query-string spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Offload::None => "none",
            Offload::Cpu => "cpu",
            Offload::Nvme => "nvme",
        }
    }
}

/// Numeric precision policy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Precision {
    /// Everything in fp32 (4 bytes).
    Fp32,
    /// Mixed precision: bf16 weights, grads and activations, fp32 master weights and optimizer states.
    #[default]
    Bf16,
    /// Mixed precision with fp16 (same byte counts as bf16, plus loss scaling).
    Fp16,
}

impl Precision {
    /// Stable query-string spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Precision::Fp32 => "fp32",
            Precision::Bf16 => "bf16",
            Precision::Fp16 => "fp16",
        }
    }
    /// Bytes per element of weights, gradients and activations in the compute dtype.
    pub fn compute_bytes(self) -> u64 {
        match self {
            Precision::Fp32 => 4,
            Precision::Bf16 | Precision::Fp16 => 2,
        }
    }
    /// Whether an fp32 master copy of the weights is kept.
    pub fn has_master(self) -> bool {
        !matches!(self, Precision::Fp32)
    }
}

/// Whose accounting the estimate follows. Sources disagree; memfit names the one it uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Convention {
    /// memfit's own model: 2+2+12 B/param mixed-precision Adam (seed 001, ZeRO paper),
    /// ZeRO-3 gathered-layer buffer (seed 000), seed 003's activation term.
    #[default]
    Memfit,
    /// The formulas on DeepSpeed's "Memory Requirements" page (seed 000), applied literally.
    DsDoc,
    /// DeepSpeed ≤ 0.14.2's estimator code (ZeRO-2: `4P + 16P/G`).
    Ds014,
    /// DeepSpeed ≥ 0.14.3's estimator code, checked against 0.19.8 (ZeRO-2: `2P + 18P/G`).
    Ds019,
}

impl Convention {
    /// Stable query-string spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Convention::Memfit => "memfit",
            Convention::DsDoc => "ds-doc",
            Convention::Ds014 => "ds-0.14",
            Convention::Ds019 => "ds-0.19",
        }
    }
    /// All conventions.
    pub const ALL: [Convention; 4] = [
        Convention::Memfit,
        Convention::DsDoc,
        Convention::Ds014,
        Convention::Ds019,
    ];
    /// Whether this is one of DeepSpeed's model-states estimators.
    pub fn is_deepspeed(self) -> bool {
        !matches!(self, Convention::Memfit)
    }
}

/// Architecture overrides on top of the preset (`None` = the preset's value).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArchOverrides {
    /// `layers`
    pub layers: Option<u32>,
    /// `hidden`
    pub hidden: Option<u32>,
    /// `heads`
    pub heads: Option<u32>,
    /// `kv_heads`
    pub kv_heads: Option<u32>,
    /// `ffn`
    pub ffn: Option<u32>,
    /// `vocab`
    pub vocab: Option<u32>,
    /// `mlp`
    pub mlp: Option<Mlp>,
    /// `norm`
    pub norm: Option<Norm>,
    /// `tied`
    pub tied: Option<bool>,
}

impl ArchOverrides {
    /// Whether any field overrides the preset.
    pub fn any(&self) -> bool {
        *self != ArchOverrides::default()
    }
}

/// Every input of one estimate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Scenario {
    /// `model`: preset id (see [`crate::core::model::presets`]).
    pub model: String,
    /// Architecture overrides (`layers`, `hidden`, ...).
    pub arch: ArchOverrides,
    /// `params`: explicit total parameter count (DeepSpeed's "cold" input).
    pub params: Option<u64>,
    /// `largest_layer`: explicit largest-layer parameter count.
    pub largest_layer: Option<u64>,
    /// `mode`
    pub mode: Mode,
    /// `batch`: micro-batch per GPU (sequences).
    pub batch: u32,
    /// `seq`: sequence length in tokens (the prompt, in inference).
    pub seq: u32,
    /// `gen`: tokens generated (inference).
    pub gen: u32,
    /// `gpus_per_node`
    pub gpus_per_node: u32,
    /// `nodes`
    pub nodes: u32,
    /// `dp`: data-parallel degree (`None` = what the cluster leaves).
    pub dp: Option<u32>,
    /// `tp`: tensor-parallel degree.
    pub tp: u32,
    /// `pp`: pipeline-parallel degree.
    pub pp: u32,
    /// `cp`: context-parallel degree.
    pub cp: u32,
    /// `zero`: ZeRO stage.
    pub zero: Zero,
    /// `offload_opt`: where optimizer states (and fp32 master weights) live.
    pub offload_opt: Offload,
    /// `offload_param`: where ZeRO-3 parameter partitions live.
    pub offload_param: Offload,
    /// `zero_init`: model built under `deepspeed.zero.Init` (partitioned at construction).
    pub zero_init: bool,
    /// `buffer_factor`: DeepSpeed's `additional_buffer_factor` on CPU RAM.
    pub buffer_factor: f64,
    /// `precision`
    pub precision: Precision,
    /// `gpu`: GPU preset id.
    pub gpu: String,
    /// `gpu_mem`: custom usable memory per GPU in MiB (overrides the preset's capacity).
    pub gpu_mem_mib: Option<u64>,
    /// `convention`
    pub convention: Convention,
    /// `units`: display units.
    pub units: Units,
}

impl Default for Scenario {
    fn default() -> Self {
        Scenario {
            model: "llama-2-7b".into(),
            arch: ArchOverrides::default(),
            params: None,
            largest_layer: None,
            mode: Mode::Train,
            batch: 1,
            seq: 4096,
            gen: 256,
            gpus_per_node: 1,
            nodes: 1,
            dp: None,
            tp: 1,
            pp: 1,
            cp: 1,
            zero: Zero::Z0,
            offload_opt: Offload::None,
            offload_param: Offload::None,
            zero_init: true,
            buffer_factor: 1.5,
            precision: Precision::Bf16,
            gpu: "h100-80".into(),
            gpu_mem_mib: None,
            convention: Convention::Memfit,
            units: Units::Gib,
        }
    }
}

/// The parallel layout the scenario resolves to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Layout {
    /// Data-parallel degree, `N_d`.
    pub dp: u32,
    /// Tensor-parallel degree, `t`.
    pub tp: u32,
    /// Pipeline-parallel degree, `p`.
    pub pp: u32,
    /// Context-parallel degree, `c`.
    pub cp: u32,
    /// GPUs in the cluster, `G = gpus_per_node · nodes`.
    pub world: u32,
    /// GPUs per node, `n`.
    pub gpus_per_node: u32,
}

impl Layout {
    /// GPUs the layout uses, `dp·tp·pp·cp`.
    pub fn used(&self) -> u64 {
        (self.dp as u64 * self.tp as u64 * self.pp as u64).saturating_mul(self.cp as u64)
    }
}

impl Scenario {
    /// The preset the scenario names, falling back to the default model.
    pub fn preset(&self) -> &'static Preset {
        preset(&self.model)
            .or_else(|| preset(&Scenario::default().model))
            .expect("the default model is a preset")
    }

    /// The preset's shape with the overrides applied. `head_dim` follows `hidden/heads`
    /// when either is overridden.
    pub fn arch(&self) -> Arch {
        let mut a = self.preset().arch.clone();
        let o = &self.arch;
        if o.hidden.is_some() || o.heads.is_some() {
            a.hidden = o.hidden.unwrap_or(a.hidden);
            a.heads = o.heads.unwrap_or(a.heads);
            a.head_dim = (a.hidden / a.heads.max(1)).max(1);
            if o.kv_heads.is_none() && a.kv_heads > a.heads {
                a.kv_heads = a.heads;
            }
        }
        a.layers = o.layers.unwrap_or(a.layers);
        a.kv_heads = o.kv_heads.unwrap_or(a.kv_heads);
        a.ffn = o.ffn.unwrap_or(a.ffn);
        a.vocab = o.vocab.unwrap_or(a.vocab);
        a.mlp = o.mlp.unwrap_or(a.mlp);
        a.norm = o.norm.unwrap_or(a.norm);
        a.tied = o.tied.unwrap_or(a.tied);
        a
    }

    /// The selected GPU (falls back to the default GPU for an unknown id).
    pub fn gpu(&self) -> &'static Gpu {
        gpu(&self.gpu).unwrap_or(&GPUS[0])
    }

    /// Usable memory per GPU in bytes: the custom figure if given, else the preset's.
    pub fn usable_bytes(&self) -> u64 {
        self.gpu_mem_mib
            .map_or(self.gpu().capacity_bytes, |m| m.saturating_mul(MIB))
    }

    /// Total GPUs `G`.
    pub fn world(&self) -> u32 {
        self.gpus_per_node.saturating_mul(self.nodes).max(1)
    }

    /// The parallel layout: `dp` defaults to `G / (tp·pp·cp)` (at least 1).
    pub fn layout(&self) -> Layout {
        let model_par = (self.tp as u64 * self.pp as u64 * self.cp as u64).max(1);
        let dp = self
            .dp
            .unwrap_or_else(|| (self.world() as u64 / model_par).clamp(1, u32::MAX as u64) as u32);
        Layout {
            dp: dp.max(1),
            tp: self.tp.max(1),
            pp: self.pp.max(1),
            cp: self.cp.max(1),
            world: self.world(),
            gpus_per_node: self.gpus_per_node.max(1),
        }
    }

    /// Selects a model preset and drops the architecture overrides made for the
    /// previous one (the form does this; the URL decoder sets fields one by one).
    pub fn select_model(&mut self, id: &str) {
        self.model = id.to_string();
        self.arch = ArchOverrides::default();
        self.params = None;
        self.largest_layer = None;
    }

    /// Cross-field checks that no single key can make: the layout versus the
    /// cluster, the shape versus TP. Each problem is a human sentence; the
    /// estimate still runs (per-GPU memory depends on the degrees, not on whether
    /// the cluster is big enough) and shows them as warnings.
    pub fn problems(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        let l = self.layout();
        let arch = self.arch();
        if let Err(e) = arch.check() {
            out.push(("model", format!("model shape: {e}")));
        }
        let model_par = l.tp as u64 * l.pp as u64 * l.cp as u64;
        if self.dp.is_none() && l.world as u64 % model_par != 0 {
            out.push((
                "dp",
                format!(
                    "tp·pp·cp = {model_par} does not divide the {} GPUs; dp set to {}",
                    l.world, l.dp
                ),
            ));
        } else if l.used() != l.world as u64 {
            out.push((
                "dp",
                format!(
                    "dp·tp·pp·cp = {}·{}·{}·{} = {} GPUs, but the cluster has {}·{} = {}",
                    l.dp,
                    l.tp,
                    l.pp,
                    l.cp,
                    l.used(),
                    self.gpus_per_node,
                    self.nodes,
                    l.world
                ),
            ));
        }
        if arch.heads % l.tp != 0 {
            out.push((
                "tp",
                format!(
                    "tp = {} does not divide the {} attention heads",
                    l.tp, arch.heads
                ),
            ));
        }
        if l.pp > arch.layers {
            out.push((
                "pp",
                format!("pp = {} is more than the {} layers", l.pp, arch.layers),
            ));
        }
        if self.offload_param != Offload::None && self.zero != Zero::Z3 {
            out.push((
                "offload_param",
                "parameter offload needs ZeRO stage 3; ignored".to_string(),
            ));
        }
        if self.mode == Mode::Infer && self.zero != Zero::Z0 {
            out.push((
                "zero",
                "ZeRO applies to training; ignored in inference".to_string(),
            ));
        }
        if self.convention.is_deepspeed() && !matches!(self.zero, Zero::Z2 | Zero::Z3) {
            out.push((
                "convention",
                format!(
                    "DeepSpeed's estimators cover ZeRO-2 and ZeRO-3 only; zero={} uses memfit's accounting",
                    self.zero.number()
                ),
            ));
        }
        out
    }
}
