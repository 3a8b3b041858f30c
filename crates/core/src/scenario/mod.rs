//! The one typed input of the estimator, in parts.
//!
//! Every setting a user can make that changes memory lives in [`Scenario`]: the model
//! (a preset and its overrides), the workload, the cluster, the parallel layout, the
//! sharding (one enum for the ZeRO stage or FSDP strategy), offload, numerics, the
//! activation policy, fine-tuning (an enum carrying its adapters' settings), the stack
//! (framework and accounting convention) and the runtime overheads. Degrees and counts
//! are [`Count`]s, which cannot be zero: the codec parses strings into them (parse,
//! don't validate), so the estimator never clamps. How the result is shown (units, the
//! timeline, a solve) is not an input of the estimate: see `contract::Settings`.

mod enums;

pub use enums::*;

use crate::gpu::{gpu, Gpu, GPUS};
pub use crate::megatron::Recompute;
use crate::model::{preset, Arch, Bias, Mlp, Norm, Preset};
use crate::units::MIB;
use serde::{Deserialize, Serialize};
use std::num::NonZeroU32;

/// A degree or count that cannot be zero (tp, pp, batch, seq, GPUs, ...).
pub type Count = NonZeroU32;

/// `n` as a [`Count`]; `n = 0` is a compile-time error in a constant and a panic
/// otherwise (use it for literals only; input goes through the codec).
pub const fn count(n: u32) -> Count {
    match NonZeroU32::new(n) {
        Some(c) => c,
        None => panic!("a count cannot be zero"),
    }
}

/// `n` as a [`Count`], 1 for 0: for degrees computed inside the estimator (divisors,
/// doublings), which are never 0; input goes through the codec instead.
pub fn at_least_one(n: u32) -> Count {
    Count::new(n).unwrap_or(Count::MIN)
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
    /// `bias`
    pub bias: Option<Bias>,
    /// `experts` (0 = dense)
    pub experts: Option<u32>,
    /// `top_k`
    pub top_k: Option<u32>,
    /// `head_dim`
    pub head_dim: Option<u32>,
    /// `moe_ffn`
    #[serde(default)]
    pub moe_ffn: Option<u32>,
    /// `shared_experts`
    #[serde(default)]
    pub shared_experts: Option<u32>,
    /// `first_dense`
    #[serde(default)]
    pub first_dense: Option<u32>,
    /// `positions`
    #[serde(default)]
    pub positions: Option<u32>,
    /// `window`
    #[serde(default)]
    pub window: Option<u32>,
    /// `local_layers`
    #[serde(default)]
    pub local_layers: Option<u32>,
}

impl ArchOverrides {
    /// Whether any field overrides the preset.
    pub fn any(&self) -> bool {
        *self != ArchOverrides::default()
    }
}

/// The model: a preset, overrides of its shape, and explicit counts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelSpec {
    /// `model`: preset id (see [`crate::model::presets`]).
    pub preset: String,
    /// Shape overrides (`layers`, `hidden`, ...); [`Scenario::arch`] is the resolved shape.
    pub overrides: ArchOverrides,
    /// `params`: explicit total parameter count (DeepSpeed's "cold" input).
    pub params: Option<u64>,
    /// `largest_layer`: explicit largest-layer parameter count.
    pub largest_layer: Option<u64>,
}

/// What one step (or request) processes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Workload {
    /// `mode`
    pub mode: Mode,
    /// `batch`: micro-batch per GPU (sequences).
    pub batch: Count,
    /// `seq`: sequence length in tokens (the prompt, in inference).
    pub seq: Count,
    /// `gen`: tokens generated (inference).
    pub gen: u32,
    /// `microbatches`: micro-batches per optimizer step (gradient accumulation).
    pub microbatches: Count,
    /// `logits`: inference keeps the last position's logits or every position's.
    pub logits: Logits,
}

/// The machines.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cluster {
    /// `gpu`: GPU preset id.
    pub gpu: String,
    /// `gpu_mem`: custom usable memory per GPU in MiB (overrides the preset's capacity).
    pub gpu_mem_mib: Option<u64>,
    /// `gpus_per_node`
    pub gpus_per_node: Count,
    /// `nodes`
    pub nodes: Count,
}

/// The parallel layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Parallel {
    /// `dp`: data-parallel degree (`None` = what the cluster leaves).
    pub dp: Option<Count>,
    /// `tp`: tensor-parallel degree.
    pub tp: Count,
    /// `pp`: pipeline-parallel degree.
    pub pp: Count,
    /// `cp`: context-parallel degree.
    pub cp: Count,
    /// `ep`: expert-parallel degree (MoE).
    pub ep: Count,
    /// `vpp`: virtual pipeline stages per rank (interleaved schedule; 1 = none).
    pub vpp: Count,
    /// `sp`: sequence parallelism (with TP).
    pub sp: bool,
    /// `schedule`: pipeline schedule.
    pub schedule: Schedule,
}

/// Where states are offloaded to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Offloading {
    /// `offload_opt`: where optimizer states (and fp32 master weights) live.
    pub optimizer: Offload,
    /// `offload_param`: where ZeRO-3 parameter partitions live.
    pub params: Offload,
    /// `pin_memory`: pinned host buffers for ZeRO-3 offload.
    pub pin_memory: bool,
}

/// Number formats and the optimizer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Numerics {
    /// `precision`
    pub precision: Precision,
    /// `grad_acc_dtype`: how gradients are kept.
    pub grad_acc: GradAcc,
    /// `optimizer`
    pub optimizer: Optimizer,
    /// `adam_impl`: PyTorch Adam/AdamW implementation (foreach, fused, for-loop).
    pub adam_impl: AdamImpl,
    /// `weight_dtype`: inference weight storage.
    pub weight_dtype: Dtype,
    /// `kv_dtype`: KV cache storage.
    pub kv_dtype: Dtype,
    /// `quant_group`: weights per quantisation group (int8/int4 scales).
    pub quant_group: Count,
}

/// What the forward keeps for the backward, and how.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActivationPolicy {
    /// `attn`: attention kernel.
    pub attn: Attn,
    /// `dropout`: dropout layers active (masks stored).
    pub dropout: bool,
    /// `recompute`: activation recomputation.
    pub recompute: Recompute,
    /// `ckpt_layers`: with `recompute=full`, how many layers per chunk are checkpointed (0 = all).
    pub ckpt_layers: u32,
}

/// Full fine-tuning, or adapters with their settings (`finetune`, `lora_rank`,
/// `lora_targets`, `double_quant`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Tuning {
    /// Every parameter trains.
    #[default]
    Full,
    /// LoRA over a frozen base in the compute dtype.
    Lora {
        /// `lora_rank`
        rank: Count,
        /// `lora_targets`
        targets: LoraTargets,
    },
    /// QLoRA over a frozen NF4 base.
    Qlora {
        /// `lora_rank`
        rank: Count,
        /// `lora_targets`
        targets: LoraTargets,
        /// `double_quant`: double quantisation of the NF4 constants.
        double_quant: bool,
    },
}

impl Tuning {
    /// PEFT's defaults for the kind: rank 16 on every linear, double quantisation on.
    pub fn of(kind: Finetune) -> Tuning {
        let (rank, targets) = (count(16), LoraTargets::All);
        match kind {
            Finetune::Full => Tuning::Full,
            Finetune::Lora => Tuning::Lora { rank, targets },
            Finetune::Qlora => Tuning::Qlora {
                rank,
                targets,
                double_quant: true,
            },
        }
    }
    /// The `finetune` key's spelling.
    pub fn kind(self) -> Finetune {
        match self {
            Tuning::Full => Finetune::Full,
            Tuning::Lora { .. } => Finetune::Lora,
            Tuning::Qlora { .. } => Finetune::Qlora,
        }
    }
    /// The adapters' rank (PEFT's 16 where there are none).
    pub fn rank(self) -> u32 {
        self.adapters().map_or(16, |(r, _)| r.get())
    }
    /// The adapters' targets (every linear where there are none).
    pub fn targets(self) -> LoraTargets {
        self.adapters().map_or(LoraTargets::All, |(_, t)| t)
    }
    /// QLoRA's double quantisation (on where there is no QLoRA).
    pub fn double_quant(self) -> bool {
        match self {
            Tuning::Qlora { double_quant, .. } => double_quant,
            _ => true,
        }
    }
    /// The adapters' rank and targets (`None` for full training).
    pub fn adapters(self) -> Option<(Count, LoraTargets)> {
        match self {
            Tuning::Full => None,
            Tuning::Lora { rank, targets } | Tuning::Qlora { rank, targets, .. } => {
                Some((rank, targets))
            }
        }
    }
}

/// Whose allocations and whose accounting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stack {
    /// `framework`: whose allocations are modelled.
    pub framework: Framework,
    /// `convention`: whose accounting the estimate follows.
    pub convention: Convention,
}

/// Runtime overheads and framework internals.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Runtime {
    /// `cuda_ctx`: CUDA context + library workspaces per GPU, MiB.
    pub cuda_ctx_mib: u32,
    /// `nccl`: NCCL communicator buffers per GPU, MiB (`None` = 0 on one GPU, else the default).
    pub nccl_mib: Option<u32>,
    /// `frag`: allocator fragmentation, percent of allocated bytes (reserved − allocated).
    pub frag_pct: u32,
    /// `zero_init`: model built under `deepspeed.zero.Init` (partitioned at construction).
    pub zero_init: bool,
    /// `buffer_factor`: DeepSpeed's `additional_buffer_factor` on CPU RAM.
    pub buffer_factor: f64,
    /// `reduce_bucket`: DeepSpeed reduce_bucket_size, elements.
    pub reduce_bucket: u64,
    /// `allgather_bucket`: DeepSpeed allgather_bucket_size, elements.
    pub allgather_bucket: u64,
    /// `overlap_comm`: DeepSpeed overlap_comm (double-buffered reduction).
    pub overlap_comm: bool,
    /// `prefetch_bucket`: DeepSpeed stage3_prefetch_bucket_size, elements.
    pub prefetch_bucket: u64,
    /// `max_live_params`: DeepSpeed stage3_max_live_parameters, elements.
    pub max_live_params: u64,
}

/// Every input of one estimate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Scenario {
    /// The model.
    pub model: ModelSpec,
    /// What a step processes.
    pub workload: Workload,
    /// The machines.
    pub cluster: Cluster,
    /// The parallel layout.
    pub parallel: Parallel,
    /// `zero` / `fsdp`: how model states are sharded.
    pub sharding: Sharding,
    /// Offload of optimizer states and parameters.
    pub offload: Offloading,
    /// Number formats and the optimizer.
    pub numerics: Numerics,
    /// Attention kernel, dropout, recomputation.
    pub activations: ActivationPolicy,
    /// Full training or adapters.
    pub finetune: Tuning,
    /// Framework and convention.
    pub stack: Stack,
    /// Runtime overheads.
    pub runtime: Runtime,
}

impl Default for Scenario {
    fn default() -> Self {
        Scenario {
            model: ModelSpec {
                preset: "llama-2-7b".into(),
                overrides: ArchOverrides::default(),
                params: None,
                largest_layer: None,
            },
            workload: Workload {
                mode: Mode::Train,
                batch: count(1),
                seq: count(4096),
                gen: 256,
                microbatches: count(1),
                logits: Logits::Last,
            },
            cluster: Cluster {
                gpu: "h100-80".into(),
                gpu_mem_mib: None,
                gpus_per_node: count(1),
                nodes: count(1),
            },
            parallel: Parallel {
                dp: None,
                tp: count(1),
                pp: count(1),
                cp: count(1),
                ep: count(1),
                vpp: count(1),
                sp: false,
                schedule: Schedule::OneFOneB,
            },
            sharding: Sharding::Zero(Zero::Z0),
            offload: Offloading {
                optimizer: Offload::None,
                params: Offload::None,
                pin_memory: false,
            },
            numerics: Numerics {
                precision: Precision::Bf16,
                grad_acc: GradAcc::Compute,
                optimizer: Optimizer::Adamw,
                adam_impl: AdamImpl::Foreach,
                weight_dtype: Dtype::Auto,
                kv_dtype: Dtype::Auto,
                quant_group: count(128),
            },
            activations: ActivationPolicy {
                attn: Attn::Flash,
                dropout: false,
                recompute: Recompute::None,
                ckpt_layers: 0,
            },
            finetune: Tuning::Full,
            stack: Stack::default(),
            runtime: Runtime {
                cuda_ctx_mib: 600,
                nccl_mib: None,
                frag_pct: 5,
                zero_init: true,
                buffer_factor: 1.5,
                reduce_bucket: 500_000_000,
                allgather_bucket: 500_000_000,
                overlap_comm: false,
                prefetch_bucket: 50_000_000,
                max_live_params: 1_000_000_000,
            },
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
    /// GPUs the layout uses, `dp·tp·pp·cp`, exactly (up to 2^128; four `u32` factors).
    pub fn used(&self) -> u128 {
        self.dp as u128 * self.tp as u128 * self.pp as u128 * self.cp as u128
    }
}
impl Scenario {
    /// The preset the scenario names, falling back to the default model.
    pub fn preset(&self) -> &'static Preset {
        preset(&self.model.preset)
            .or_else(|| preset(&Scenario::default().model.preset))
            .expect("the default model is a preset")
    }

    /// The preset's shape with the overrides applied. `head_dim` follows `hidden/heads`
    /// when either is overridden.
    pub fn arch(&self) -> Arch {
        let mut a = self.preset().arch.clone();
        let o = &self.model.overrides;
        if o.hidden.is_some() || o.heads.is_some() {
            a.hidden = o.hidden.unwrap_or(a.hidden);
            a.heads = o.heads.unwrap_or(a.heads);
            a.head_dim = (a.hidden / a.heads.max(1)).max(1);
            // Multi-head presets stay multi-head; GQA presets keep their groups (capped).
            let was_mha = self.preset().arch.kv_heads == self.preset().arch.heads;
            if o.kv_heads.is_none() && (was_mha || a.kv_heads > a.heads) {
                a.kv_heads = a.heads;
            }
        }
        if let Some(l) = o.layers {
            // Encoder-decoder presets: the override sets both stacks (an imported T5
            // config's depth; encoder and decoder depths are equal in T5/mT5/Flan-T5).
            if a.encoder_layers > 0 {
                a.encoder_layers = l;
            }
            a.layers = l;
        }
        a.kv_heads = o.kv_heads.unwrap_or(a.kv_heads);
        a.ffn = o.ffn.unwrap_or(a.ffn);
        a.vocab = o.vocab.unwrap_or(a.vocab);
        a.mlp = o.mlp.unwrap_or(a.mlp);
        a.norm = o.norm.unwrap_or(a.norm);
        a.tied = o.tied.unwrap_or(a.tied);
        a.bias = o.bias.unwrap_or(a.bias);
        a.head_dim = o.head_dim.unwrap_or(a.head_dim);
        a.experts = o.experts.unwrap_or(a.experts);
        a.moe_ffn = o.moe_ffn.unwrap_or(a.moe_ffn);
        a.shared_experts = o.shared_experts.unwrap_or(a.shared_experts);
        a.first_dense = o.first_dense.unwrap_or(a.first_dense);
        a.positions = o.positions.unwrap_or(a.positions);
        a.window = o.window.unwrap_or(a.window);
        a.local_layers = match o.local_layers {
            Some(n) => n,
            // A depth override keeps the preset's share of windowed layers (Gemma 2's
            // every other layer stays every other layer).
            None if o.layers.is_some() && self.preset().arch.layers > 0 => {
                let p = &self.preset().arch;
                ((a.layers as u64 * p.local_layers as u64).div_ceil(p.layers as u64)) as u32
            }
            None => a.local_layers,
        };
        if a.window == 0 && o.local_layers.is_none() {
            a.local_layers = 0;
        }
        if a.experts == 0 {
            // A dense override of an MoE preset drops the preset's expert structure with
            // its experts (explicit overrides stay, and `Arch::check` names them).
            a.moe_ffn = o.moe_ffn.unwrap_or(0);
            a.shared_experts = o.shared_experts.unwrap_or(0);
            a.first_dense = o.first_dense.unwrap_or(0);
        }
        a.top_k = o.top_k.unwrap_or(if a.experts > 0 && a.top_k == 0 {
            1
        } else {
            a.top_k
        });
        a
    }

    /// The selected GPU (falls back to the default GPU for an unknown id).
    pub fn gpu(&self) -> &'static Gpu {
        gpu(&self.cluster.gpu).unwrap_or(&GPUS[0])
    }

    /// Usable memory per GPU in bytes: the custom figure if given, else the preset's.
    pub fn usable_bytes(&self) -> u64 {
        self.cluster
            .gpu_mem_mib
            .map_or(self.gpu().capacity_bytes, |m| m.saturating_mul(MIB))
    }

    /// Total GPUs `G`.
    pub fn world(&self) -> u32 {
        self.cluster
            .gpus_per_node
            .get()
            .saturating_mul(self.cluster.nodes.get())
    }

    /// Virtual pipeline stages per rank the activations are walked in: `vpp` under the
    /// interleaved schedule (training, `vpp ≥ 2`, not PyTorch, the layers divisible by
    /// `pp·vpp` as Megatron-LM asserts), else 1 (the other cases are flagged and counted
    /// as 1F1B).
    pub fn virtual_stages(&self) -> u32 {
        let (pp, vpp) = (self.parallel.pp.get(), self.parallel.vpp.get());
        let layers = self
            .model
            .overrides
            .layers
            .unwrap_or(self.preset().arch.layers);
        if self.parallel.schedule == Schedule::Interleaved
            && vpp >= 2
            && pp >= 2
            && self.stack.framework != Framework::Pytorch
            && layers % pp.saturating_mul(vpp) == 0
        {
            self.parallel.vpp.get()
        } else {
            1
        }
    }

    /// The parallel layout: `dp` defaults to `G / (tp·pp·cp)` (at least 1).
    /// The parallel layout: `dp` defaults to `G / (tp·pp·cp)` (at least 1).
    pub fn layout(&self) -> Layout {
        let p = &self.parallel;
        let (tp, pp, cp) = (p.tp.get(), p.pp.get(), p.cp.get());
        let model_par = tp as u64 * pp as u64 * cp as u64;
        let dp = p.dp.map_or_else(
            || (self.world() as u64 / model_par).clamp(1, u32::MAX as u64) as u32,
            Count::get,
        );
        Layout {
            dp,
            tp,
            pp,
            cp,
            world: self.world(),
            gpus_per_node: self.cluster.gpus_per_node.get(),
        }
    }

    /// The ZeRO stage in effect: FSDP's strategy maps to its stage.
    pub fn zero(&self) -> Zero {
        self.sharding.zero()
    }

    /// The FSDP strategy ([`Fsdp::None`] without FSDP).
    pub fn fsdp(&self) -> Fsdp {
        self.sharding.fsdp()
    }

    /// Ranks the sharded states are split over, `N_s`: the data-parallel ranks times the
    /// context-parallel ranks (context-parallel ranks hold the same weights, so ZeRO/FSDP
    /// shard over both: torchtitan's `dp_shard_cp` mesh, Megatron's data-parallel group
    /// with CP); for HYBRID_SHARD only the ranks inside one node.
    pub fn shard_degree(&self) -> u32 {
        let l = self.layout();
        match self.fsdp() {
            Fsdp::HybridShard => {
                let per_node = (l.gpus_per_node / l.tp.saturating_mul(l.cp)).max(1);
                per_node.min(l.dp.saturating_mul(l.cp))
            }
            _ => l.dp.saturating_mul(l.cp),
        }
    }

    /// The expert-parallel degree in effect: `ep`, at most the data-parallel ranks
    /// `dp·cp` it is carved from (a larger `ep` is flagged as a problem).
    pub fn ep_ranks(&self) -> u32 {
        let l = self.layout();
        let dp_ranks = (l.dp as u64 * l.cp as u64).min(u32::MAX as u64) as u32;
        self.parallel.ep.get().min(dp_ranks)
    }

    /// Selects a model preset and drops the architecture overrides made for the
    /// previous one (the form does this; the URL decoder sets fields one by one).
    pub fn select_model(&mut self, id: &str) {
        self.model = ModelSpec {
            preset: id.to_string(),
            overrides: ArchOverrides::default(),
            params: None,
            largest_layer: None,
        };
    }

    /// Whether the scenario trains.
    pub fn training(&self) -> bool {
        self.workload.mode == Mode::Train
    }

    /// Cross-field checks that no single key can make: the layout versus the
    /// cluster, the shape versus TP. Each problem is a human sentence; the
    /// estimate still runs (per-GPU memory depends on the degrees, not on whether
    /// the cluster is big enough) and shows them as warnings.
    pub fn problems(&self) -> Vec<(&'static str, String)> {
        self.problems_for(&self.arch())
    }

    /// [`Scenario::problems`] with the architecture already resolved: `arch` must be
    /// `self.arch()` (the layout explorer resolves it once per sweep).
    pub fn problems_for(&self, arch: &Arch) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        let l = self.layout();
        let par = &self.parallel;
        let (framework, convention) = (self.stack.framework, self.stack.convention);
        let (pp, vpp, ep) = (par.pp.get(), par.vpp.get(), par.ep.get());
        let m = self.workload.microbatches.get();
        if let Err(e) = arch.check() {
            out.push(("model", format!("model shape: {e}")));
        }
        let model_par = l.tp as u64 * l.pp as u64 * l.cp as u64;
        if par.dp.is_none() && l.world as u64 % model_par != 0 {
            out.push((
                "dp",
                format!(
                    "tp·pp·cp = {model_par} does not divide the {} GPUs; dp set to {}",
                    l.world, l.dp
                ),
            ));
        } else if l.used() != l.world as u128 {
            out.push((
                "dp",
                format!(
                    "dp·tp·pp·cp = {}·{}·{}·{} = {} GPUs, but the cluster has {}·{} = {}",
                    l.dp,
                    l.tp,
                    l.pp,
                    l.cp,
                    l.used(),
                    self.cluster.gpus_per_node,
                    self.cluster.nodes,
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
        let z = self.zero();
        if let (Framework::Pytorch, true, Sharding::Zero(stage @ (Zero::Z2 | Zero::Z3))) =
            (framework, self.training(), self.sharding)
        {
            let z2 = stage == Zero::Z2;
            out.push((
                "zero",
                format!(
                    "framework=pytorch has no ZeRO-{} of its own (ZeRO-1 is ZeroRedundancyOptimizer): \
                     fsdp={} is PyTorch's way to shard {}; counted as ZeRO-{} sharding without FSDP's \
                     unsharded buffers",
                    stage.number(),
                    if z2 { "shard_grad_op" } else { "full_shard" },
                    if z2 {
                        "gradients and optimizer states"
                    } else {
                        "parameters too"
                    },
                    stage.number()
                ),
            ));
        }
        if self.offload.optimizer != Offload::None && z == Zero::Z0 {
            out.push((
                "offload_opt",
                "optimizer offload needs ZeRO stage 1, 2 or 3 (or FSDP); counted as if it worked"
                    .to_string(),
            ));
        }
        if arch.experts > 0 && arch.experts % ep != 0 {
            out.push((
                "ep",
                format!("ep = {ep} does not divide the {} experts", arch.experts),
            ));
        }
        let dp_ranks = l.dp as u64 * l.cp as u64;
        if arch.experts > 0 && ep > 1 && dp_ranks % ep as u64 != 0 {
            out.push((
                "ep",
                format!(
                    "ep = {ep} does not divide the {dp_ranks} data-parallel ranks (dp·cp): expert parallelism splits them; counted with ep = {}",
                    self.ep_ranks()
                ),
            ));
        }
        if arch.experts == 0 && ep > 1 {
            out.push((
                "ep",
                "ep > 1 needs a mixture-of-experts model; ignored".to_string(),
            ));
        }
        if vpp > 1 && (pp < 2 || arch.layers % pp.saturating_mul(vpp) != 0) {
            out.push((
                "vpp",
                format!(
                    "vpp = {vpp} needs pp > 1 and layers ({}) divisible by pp·vpp; counted as 1F1B",
                    arch.layers
                ),
            ));
        }
        if self.training() && pp > 1 && m < pp {
            out.push((
                "microbatches",
                format!(
                    "{m} micro-batch(es) for {pp} pipeline stages: the pipeline idles; 1F1B needs at least pp micro-batches"
                ),
            ));
        }
        if par.schedule == Schedule::Interleaved && vpp < 2 {
            out.push((
                "vpp",
                "the interleaved schedule needs vpp ≥ 2; counted as 1F1B".to_string(),
            ));
        } else if par.schedule == Schedule::Interleaved
            && self.training()
            && pp > 1
            && framework != Framework::Pytorch
            && m % pp != 0
        {
            out.push((
                "microbatches",
                format!(
                    "the interleaved schedule runs micro-batches in groups of pp: {m} is not a multiple of pp = {pp} (Megatron-LM asserts it)"
                ),
            ));
        } else if par.schedule == Schedule::Interleaved
            && framework == Framework::Pytorch
            && self.training()
        {
            out.push((
                "schedule",
                "framework=pytorch models the 1F1B and GPipe schedules; interleaved is counted as 1F1B".to_string(),
            ));
        }
        if par.sp && l.tp < 2 {
            out.push((
                "sp",
                "sequence parallelism shards along TP; with tp = 1 it changes nothing".to_string(),
            ));
        }
        if self.finetune != Tuning::Full && (convention.is_deepspeed() || convention.is_megatron())
        {
            out.push((
                "finetune",
                format!(
                    "{} models full training only; LoRA/QLoRA use memfit's accounting",
                    convention.as_str()
                ),
            ));
        }
        if self.offload.params != Offload::None && z != Zero::Z3 {
            out.push((
                "offload_param",
                "parameter offload needs ZeRO stage 3; ignored".to_string(),
            ));
        }
        if !self.training() && z != Zero::Z0 {
            out.push((
                "zero",
                "ZeRO applies to training; ignored in inference".to_string(),
            ));
        }
        if convention.is_deepspeed() && !matches!(z, Zero::Z2 | Zero::Z3) {
            out.push((
                "convention",
                format!(
                    "DeepSpeed's estimators cover ZeRO-2 and ZeRO-3 only; zero={} uses memfit's accounting",
                    z.number()
                ),
            ));
        }
        if convention.is_megatron() && (z > Zero::Z1 || self.offload.optimizer != Offload::None) {
            out.push((
                "convention",
                "Megatron's formula models its distributed optimizer (zero=1) or none (zero=0); ZeRO-2/3 and offload are not in it".to_string(),
            ));
        }
        out
    }
}
