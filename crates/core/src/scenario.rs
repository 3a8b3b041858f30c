//! The one typed input of the estimator.
//!
//! Every setting a user can make lives in [`Scenario`]; the query-string codec
//! (`crate::contract`) maps it to and from the URL, and the estimator reads nothing
//! else. Field docs name the query key.

use super::gpu::{gpu, Gpu, GPUS};
use super::megatron::Recompute;
use super::model::{preset, Arch, Bias, Mlp, Norm, Preset};
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
    /// Pure bf16: bf16 weights, gradients and optimizer states, no fp32 master copy.
    Bf16Pure,
    /// FP8 training, Transformer-Engine style: bf16 weights plus fp8 weight copies,
    /// fp32 master weights and optimizer states.
    Fp8,
}

impl Precision {
    /// Stable query-string spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Precision::Fp32 => "fp32",
            Precision::Bf16 => "bf16",
            Precision::Fp16 => "fp16",
            Precision::Bf16Pure => "bf16-pure",
            Precision::Fp8 => "fp8",
        }
    }
    /// All policies.
    pub const ALL: [Precision; 5] = [
        Precision::Bf16,
        Precision::Fp16,
        Precision::Fp32,
        Precision::Bf16Pure,
        Precision::Fp8,
    ];
    /// Bytes per element of weights, gradients and activations in the compute dtype.
    pub fn compute_bytes(self) -> u64 {
        match self {
            Precision::Fp32 => 4,
            _ => 2,
        }
    }
    /// Whether an fp32 master copy of the weights is kept.
    pub fn has_master(self) -> bool {
        matches!(self, Precision::Bf16 | Precision::Fp16 | Precision::Fp8)
    }
    /// Bytes per element of optimizer moments (fp32, except bf16-pure).
    pub fn state_bytes(self) -> u64 {
        match self {
            Precision::Bf16Pure => 2,
            _ => 4,
        }
    }
}

/// How gradients are kept (seed 003's 16 vs 18 vs 20 bytes per parameter).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum GradAcc {
    /// Gradients in the compute dtype (2 B in bf16): 2+2+12 = 16 B/param with Adam.
    #[default]
    Compute,
    /// Gradients accumulated in fp32 only (Megatron's `main_grad`): 2+4+12 = 18 B/param.
    Fp32,
    /// Compute-dtype gradients plus an fp32 accumulation buffer: 2+2+4+12 = 20 B/param (seed 003).
    Both,
}

impl GradAcc {
    /// Stable query-string spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            GradAcc::Compute => "compute",
            GradAcc::Fp32 => "fp32",
            GradAcc::Both => "both",
        }
    }
    /// All options.
    pub const ALL: [GradAcc; 3] = [GradAcc::Compute, GradAcc::Fp32, GradAcc::Both];
}

/// How PyTorch's Adam/AdamW runs its update (`torch.optim.AdamW(foreach=…, fused=…)`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum AdamImpl {
    /// `foreach=True` (PyTorch's default on GPU): `_foreach_sqrt` of every `v` at once.
    #[default]
    Foreach,
    /// `fused=True`: one kernel per parameter group, no temporary tensors.
    Fused,
    /// `foreach=False`: one parameter at a time (`sqrt(v)` and its quotient).
    Forloop,
}

impl AdamImpl {
    /// Stable query-string spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            AdamImpl::Foreach => "foreach",
            AdamImpl::Fused => "fused",
            AdamImpl::Forloop => "forloop",
        }
    }
    /// All options.
    pub const ALL: [AdamImpl; 3] = [AdamImpl::Foreach, AdamImpl::Fused, AdamImpl::Forloop];
}

/// Which positions' logits an inference forward keeps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Logits {
    /// The last position only (`generate`: `logits_to_keep=1`).
    #[default]
    Last,
    /// Every prompt position, and the loss over them (evaluation, perplexity).
    All,
}

impl Logits {
    /// Stable query-string spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Logits::Last => "last",
            Logits::All => "all",
        }
    }
    /// All options.
    pub const ALL: [Logits; 2] = [Logits::Last, Logits::All];
}

/// The optimizer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Optimizer {
    /// AdamW: momentum and variance.
    #[default]
    Adamw,
    /// Adam: momentum and variance (same memory as AdamW).
    Adam,
    /// Plain SGD: no state.
    Sgd,
    /// SGD with momentum: one moment.
    SgdMomentum,
    /// bitsandbytes 8-bit Adam: two 8-bit moments with one fp32 absmax per 2048-value block.
    Adam8bit,
    /// Adafactor: factored second moment (rows + columns per matrix), no momentum.
    Adafactor,
    /// Lion: one moment.
    Lion,
}

impl Optimizer {
    /// Stable query-string spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Optimizer::Adamw => "adamw",
            Optimizer::Adam => "adam",
            Optimizer::Sgd => "sgd",
            Optimizer::SgdMomentum => "sgd-momentum",
            Optimizer::Adam8bit => "adam8bit",
            Optimizer::Adafactor => "adafactor",
            Optimizer::Lion => "lion",
        }
    }
    /// All optimizers.
    pub const ALL: [Optimizer; 7] = [
        Optimizer::Adamw,
        Optimizer::Adam,
        Optimizer::Sgd,
        Optimizer::SgdMomentum,
        Optimizer::Adam8bit,
        Optimizer::Adafactor,
        Optimizer::Lion,
    ];
}

/// PyTorch FSDP sharding strategy (maps onto the ZeRO stages).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Fsdp {
    /// Not using FSDP (the `zero` key applies).
    #[default]
    None,
    /// FULL_SHARD = ZeRO-3 over all data-parallel ranks.
    FullShard,
    /// SHARD_GRAD_OP = ZeRO-2.
    ShardGradOp,
    /// HYBRID_SHARD = ZeRO-3 inside a node, replicated across nodes.
    HybridShard,
}

impl Fsdp {
    /// Stable query-string spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Fsdp::None => "none",
            Fsdp::FullShard => "full_shard",
            Fsdp::ShardGradOp => "shard_grad_op",
            Fsdp::HybridShard => "hybrid_shard",
        }
    }
    /// All strategies.
    pub const ALL: [Fsdp; 4] = [
        Fsdp::None,
        Fsdp::FullShard,
        Fsdp::ShardGradOp,
        Fsdp::HybridShard,
    ];
}

/// Full fine-tuning or parameter-efficient adapters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Finetune {
    /// Every parameter trains.
    #[default]
    Full,
    /// LoRA: frozen base in the compute dtype, trainable low-rank adapters.
    Lora,
    /// QLoRA: frozen base in 4-bit NF4, trainable adapters.
    Qlora,
}

impl Finetune {
    /// Stable query-string spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Finetune::Full => "full",
            Finetune::Lora => "lora",
            Finetune::Qlora => "qlora",
        }
    }
    /// All options.
    pub const ALL: [Finetune; 3] = [Finetune::Full, Finetune::Lora, Finetune::Qlora];
}

/// Which linear layers get LoRA adapters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum LoraTargets {
    /// q and v projections (PEFT's default for Llama-style models).
    Qv,
    /// All attention projections (q, k, v, o).
    Attn,
    /// The MLP projections.
    Mlp,
    /// Every linear layer in the blocks (QLoRA paper, Unsloth).
    #[default]
    All,
}

impl LoraTargets {
    /// Stable query-string spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            LoraTargets::Qv => "qv",
            LoraTargets::Attn => "attn",
            LoraTargets::Mlp => "mlp",
            LoraTargets::All => "all",
        }
    }
    /// All options.
    pub const ALL: [LoraTargets; 4] = [
        LoraTargets::Qv,
        LoraTargets::Attn,
        LoraTargets::Mlp,
        LoraTargets::All,
    ];
}

/// Storage dtype for inference weights or the KV cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Dtype {
    /// The precision policy's compute dtype.
    #[default]
    Auto,
    /// 4 bytes.
    Fp32,
    /// 2 bytes.
    Bf16,
    /// 2 bytes.
    Fp16,
    /// 1 byte.
    Fp8,
    /// 1 byte (+ group scales for weights).
    Int8,
    /// 0.5 byte (+ group scales for weights).
    Int4,
}

impl Dtype {
    /// Stable query-string spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Dtype::Auto => "auto",
            Dtype::Fp32 => "fp32",
            Dtype::Bf16 => "bf16",
            Dtype::Fp16 => "fp16",
            Dtype::Fp8 => "fp8",
            Dtype::Int8 => "int8",
            Dtype::Int4 => "int4",
        }
    }
    /// All options.
    pub const ALL: [Dtype; 7] = [
        Dtype::Auto,
        Dtype::Fp32,
        Dtype::Bf16,
        Dtype::Fp16,
        Dtype::Fp8,
        Dtype::Int8,
        Dtype::Int4,
    ];
    /// Bits per element (`auto` resolves to the precision's compute dtype).
    pub fn bits(self, p: Precision) -> u64 {
        match self {
            Dtype::Auto => p.compute_bytes() * 8,
            Dtype::Fp32 => 32,
            Dtype::Bf16 | Dtype::Fp16 => 16,
            Dtype::Fp8 | Dtype::Int8 => 8,
            Dtype::Int4 => 4,
        }
    }
    /// Whether the format stores integer codes with per-group scales.
    pub fn is_integer(self) -> bool {
        matches!(self, Dtype::Int8 | Dtype::Int4)
    }
}

/// An inverse solve to report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Solve {
    /// Nothing.
    #[default]
    None,
    /// The largest micro-batch that fits.
    MaxBatch,
    /// The largest sequence length (prompt + generated, in inference) that fits.
    MaxContext,
    /// The fewest GPUs of the selected type on which some layout fits.
    MinGpus,
}

impl Solve {
    /// Stable query-string spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Solve::None => "none",
            Solve::MaxBatch => "max_batch",
            Solve::MaxContext => "max_context",
            Solve::MinGpus => "min_gpus",
        }
    }
    /// All options.
    pub const ALL: [Solve; 4] = [
        Solve::None,
        Solve::MaxBatch,
        Solve::MaxContext,
        Solve::MinGpus,
    ];
}

/// Attention kernel (decides whether the s² scores are stored).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Attn {
    /// FlashAttention-2/3: stores q, k, v, output and the log-sum-exp; no s² scores; native GQA.
    #[default]
    Flash,
    /// PyTorch fused SDPA (flash / memory-efficient backends): no s² scores; K/V repeated to all heads (HF `repeat_kv`).
    Sdpa,
    /// Eager attention: stores the softmax (and, with dropout, the mask and dropped probabilities).
    Eager,
}

impl Attn {
    /// Stable query-string spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Attn::Flash => "flash",
            Attn::Sdpa => "sdpa",
            Attn::Eager => "eager",
        }
    }
    /// All options.
    pub const ALL: [Attn; 3] = [Attn::Flash, Attn::Sdpa, Attn::Eager];
}

/// Whose allocations are modelled.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Framework {
    /// DeepSpeed ZeRO: bf16/fp16 params and grads, fp32 partitioned optimizer, communication buckets.
    #[default]
    Deepspeed,
    /// Plain PyTorch (Hugging Face modules, autocast or FSDP2, torch.optim.AdamW foreach).
    Pytorch,
    /// Megatron-LM: fp32 main grads, distributed optimizer, fused kernels, vocab-parallel loss.
    Megatron,
}

impl Framework {
    /// Stable query-string spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Framework::Deepspeed => "deepspeed",
            Framework::Pytorch => "pytorch",
            Framework::Megatron => "megatron",
        }
    }
    /// All options.
    pub const ALL: [Framework; 3] = [
        Framework::Deepspeed,
        Framework::Pytorch,
        Framework::Megatron,
    ];
}

/// Pipeline schedule.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Schedule {
    /// 1F1B (PipeDream-flush): stage i holds min(p − i, m) micro-batches.
    #[default]
    OneFOneB,
    /// GPipe: every micro-batch's forward before any backward: m in flight.
    Gpipe,
    /// Interleaved 1F1B with `vpp` virtual stages (Megatron-LM's schedule).
    Interleaved,
}

impl Schedule {
    /// Stable query-string spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Schedule::OneFOneB => "1f1b",
            Schedule::Gpipe => "gpipe",
            Schedule::Interleaved => "interleaved",
        }
    }
    /// All options.
    pub const ALL: [Schedule; 3] = [Schedule::OneFOneB, Schedule::Gpipe, Schedule::Interleaved];
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
    /// Megatron-LM's theoretical memory formula at HEAD (d98e8a64).
    Megatron,
    /// Megatron-LM's formula at core_v0.14.0.
    Megatron014,
    /// memfit's model states with seed 003's activations `(34·b·s·h + 5·b·s²·a)·L`.
    Seed003,
    /// memfit's model states with seed 002's activations `16k·bsh + 2bsh + 2k·bas² + bas²` per layer.
    Seed002,
    /// memfit's model states with Korthikanti et al. Table 2 (row chosen by tp, sp, recompute).
    Korthikanti,
}

impl Convention {
    /// Stable query-string spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Convention::Memfit => "memfit",
            Convention::DsDoc => "ds-doc",
            Convention::Ds014 => "ds-0.14",
            Convention::Ds019 => "ds-0.19",
            Convention::Megatron => "megatron",
            Convention::Megatron014 => "megatron-0.14",
            Convention::Seed003 => "seed003",
            Convention::Seed002 => "seed002",
            Convention::Korthikanti => "korthikanti",
        }
    }
    /// All conventions.
    pub const ALL: [Convention; 9] = [
        Convention::Memfit,
        Convention::DsDoc,
        Convention::Ds014,
        Convention::Ds019,
        Convention::Megatron,
        Convention::Megatron014,
        Convention::Seed003,
        Convention::Seed002,
        Convention::Korthikanti,
    ];
    /// Whether this is one of DeepSpeed's model-states estimators.
    pub fn is_deepspeed(self) -> bool {
        matches!(
            self,
            Convention::DsDoc | Convention::Ds014 | Convention::Ds019
        )
    }
    /// Whether this is Megatron-LM's formula.
    pub fn is_megatron(self) -> bool {
        matches!(self, Convention::Megatron | Convention::Megatron014)
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

/// Every input of one estimate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Scenario {
    /// `model`: preset id (see [`crate::model::presets`]).
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
    /// `grad_acc_dtype`: how gradients are kept.
    pub grad_acc: GradAcc,
    /// `optimizer`
    pub optimizer: Optimizer,
    /// `adam_impl`: PyTorch Adam/AdamW implementation (foreach, fused, for-loop).
    #[serde(default)]
    pub adam_impl: AdamImpl,
    /// `logits`: inference keeps the last position's logits or every position's.
    #[serde(default)]
    pub logits: Logits,
    /// `fsdp`: FSDP sharding strategy (overrides `zero` when not `none`).
    pub fsdp: Fsdp,
    /// `finetune`
    pub finetune: Finetune,
    /// `lora_rank`
    pub lora_rank: u32,
    /// `lora_targets`
    pub lora_targets: LoraTargets,
    /// `double_quant`: QLoRA double quantisation of the NF4 constants.
    pub double_quant: bool,
    /// `weight_dtype`: inference weight storage.
    pub weight_dtype: Dtype,
    /// `quant_group`: weights per quantisation group (int8/int4 scales).
    pub quant_group: u32,
    /// `kv_dtype`: KV cache storage.
    pub kv_dtype: Dtype,
    /// `sp`: sequence parallelism (with TP).
    pub sp: bool,
    /// `recompute`: activation recomputation.
    pub recompute: Recompute,
    /// `vpp`: virtual pipeline stages per rank (interleaved schedule; 1 = none).
    pub vpp: u32,
    /// `microbatches`: micro-batches per optimizer step (gradient accumulation).
    pub microbatches: u32,
    /// `ep`: expert-parallel degree (MoE).
    pub ep: u32,
    /// `pin_memory`: pinned host buffers for ZeRO-3 offload.
    pub pin_memory: bool,
    /// `solve`: an inverse solve to report.
    pub solve: Solve,
    /// `timeline`: add the step timeline (`core::timeline`) to the CLI's JSON.
    #[serde(default)]
    pub timeline: bool,
    /// `attn`: attention kernel.
    pub attn: Attn,
    /// `dropout`: dropout layers active (masks stored).
    pub dropout: bool,
    /// `schedule`: pipeline schedule.
    pub schedule: Schedule,
    /// `framework`: whose allocations are modelled.
    pub framework: Framework,
    /// `ckpt_layers`: with `recompute=full`, how many layers per stage are checkpointed (0 = all).
    pub ckpt_layers: u32,
    /// `cuda_ctx`: CUDA context + library workspaces per GPU, MiB.
    pub cuda_ctx_mib: u32,
    /// `nccl`: NCCL communicator buffers per GPU, MiB (`None` = 0 on one GPU, else the default).
    pub nccl_mib: Option<u32>,
    /// `frag`: allocator fragmentation, percent of allocated bytes (reserved − allocated).
    pub frag_pct: u32,
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
            grad_acc: GradAcc::Compute,
            adam_impl: AdamImpl::Foreach,
            logits: Logits::Last,
            optimizer: Optimizer::Adamw,
            fsdp: Fsdp::None,
            finetune: Finetune::Full,
            lora_rank: 16,
            lora_targets: LoraTargets::All,
            double_quant: true,
            weight_dtype: Dtype::Auto,
            quant_group: 128,
            kv_dtype: Dtype::Auto,
            sp: false,
            recompute: Recompute::None,
            vpp: 1,
            microbatches: 1,
            ep: 1,
            pin_memory: false,
            timeline: false,
            solve: Solve::None,
            attn: Attn::Flash,
            dropout: false,
            schedule: Schedule::OneFOneB,
            framework: Framework::Deepspeed,
            ckpt_layers: 0,
            cuda_ctx_mib: 600,
            nccl_mib: None,
            frag_pct: 5,
            reduce_bucket: 500_000_000,
            allgather_bucket: 500_000_000,
            overlap_comm: false,
            prefetch_bucket: 50_000_000,
            max_live_params: 1_000_000_000,
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
    /// GPUs the layout uses, `dp·tp·pp·cp`, exactly (up to 2^128; four `u32` factors).
    pub fn used(&self) -> u128 {
        self.dp as u128 * self.tp as u128 * self.pp as u128 * self.cp as u128
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

    /// Virtual pipeline stages per rank the activations are walked in: `vpp` under the
    /// interleaved schedule (training, `vpp ≥ 2`, not PyTorch), else 1.
    pub fn virtual_stages(&self) -> u32 {
        if self.schedule == Schedule::Interleaved
            && self.vpp >= 2
            && self.framework != Framework::Pytorch
        {
            self.vpp
        } else {
            1
        }
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

    /// The ZeRO stage in effect: FSDP's strategy when set, else `zero`.
    pub fn effective_zero(&self) -> Zero {
        match self.fsdp {
            Fsdp::None => self.zero,
            Fsdp::FullShard | Fsdp::HybridShard => Zero::Z3,
            Fsdp::ShardGradOp => Zero::Z2,
        }
    }

    /// Ranks the sharded states are split over, `N_s`: the data-parallel ranks times the
    /// context-parallel ranks (context-parallel ranks hold the same weights, so ZeRO/FSDP
    /// shard over both: torchtitan's `dp_shard_cp` mesh, Megatron's data-parallel group
    /// with CP); for HYBRID_SHARD only the ranks inside one node.
    pub fn shard_degree(&self) -> u32 {
        let l = self.layout();
        match self.fsdp {
            Fsdp::HybridShard => {
                let per_node = (l.gpus_per_node / l.tp.saturating_mul(l.cp).max(1)).max(1);
                per_node.min(l.dp.saturating_mul(l.cp))
            }
            _ => l.dp.saturating_mul(l.cp),
        }
    }

    /// The expert-parallel degree in effect: `ep`, at most the data-parallel ranks
    /// `dp·cp` it is carved from (a larger `ep` is flagged as a problem).
    pub fn ep_ranks(&self) -> u32 {
        let l = self.layout();
        let dp_ranks = (l.dp as u64 * l.cp as u64).clamp(1, u32::MAX as u64) as u32;
        self.ep.clamp(1, dp_ranks)
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
        self.problems_for(&self.arch())
    }

    /// [`Scenario::problems`] with the architecture already resolved: `arch` must be
    /// `self.arch()` (the layout explorer resolves it once per sweep).
    pub fn problems_for(&self, arch: &Arch) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        let l = self.layout();
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
        let z = self.effective_zero();
        if self.framework == Framework::Pytorch
            && self.mode == Mode::Train
            && self.fsdp == Fsdp::None
            && self.zero > Zero::Z1
        {
            out.push((
                "zero",
                format!(
                    "framework=pytorch has no ZeRO-{} of its own (ZeRO-1 is ZeroRedundancyOptimizer): \
                     fsdp={} is PyTorch's way to shard {}; counted as ZeRO-{} sharding without FSDP's \
                     unsharded buffers",
                    self.zero.number(),
                    if self.zero == Zero::Z2 { "shard_grad_op" } else { "full_shard" },
                    if self.zero == Zero::Z2 {
                        "gradients and optimizer states"
                    } else {
                        "parameters too"
                    },
                    self.zero.number()
                ),
            ));
        }
        if self.fsdp != Fsdp::None && self.zero != Zero::Z0 {
            out.push((
                "fsdp",
                format!(
                    "fsdp={} sets the sharding; zero={} is ignored",
                    self.fsdp.as_str(),
                    self.zero.number()
                ),
            ));
        }
        if self.offload_opt != Offload::None && z == Zero::Z0 {
            out.push((
                "offload_opt",
                "optimizer offload needs ZeRO stage 1, 2 or 3 (or FSDP); counted as if it worked"
                    .to_string(),
            ));
        }
        if arch.experts > 0 && arch.experts % self.ep.max(1) != 0 {
            out.push((
                "ep",
                format!(
                    "ep = {} does not divide the {} experts",
                    self.ep, arch.experts
                ),
            ));
        }
        let dp_ranks = l.dp as u64 * l.cp as u64;
        if arch.experts > 0 && self.ep > 1 && dp_ranks % self.ep as u64 != 0 {
            out.push((
                "ep",
                format!(
                    "ep = {} does not divide the {dp_ranks} data-parallel ranks (dp·cp): expert parallelism splits them; counted with ep = {}",
                    self.ep,
                    self.ep_ranks()
                ),
            ));
        }
        if arch.experts == 0 && self.ep > 1 {
            out.push((
                "ep",
                "ep > 1 needs a mixture-of-experts model; ignored".to_string(),
            ));
        }
        if self.vpp > 1 && (self.pp < 2 || arch.layers % (self.pp * self.vpp).max(1) != 0) {
            out.push((
                "vpp",
                format!(
                    "vpp = {} needs pp > 1 and layers ({}) divisible by pp·vpp",
                    self.vpp, arch.layers
                ),
            ));
        }
        if self.mode == Mode::Train && self.pp > 1 && self.microbatches < self.pp {
            out.push((
                "microbatches",
                format!(
                    "{} micro-batch(es) for {} pipeline stages: the pipeline idles; 1F1B needs at least pp micro-batches",
                    self.microbatches, self.pp
                ),
            ));
        }
        if self.schedule == Schedule::Interleaved && self.vpp < 2 {
            out.push((
                "vpp",
                "the interleaved schedule needs vpp ≥ 2; counted as 1F1B".to_string(),
            ));
        } else if self.schedule == Schedule::Interleaved
            && self.mode == Mode::Train
            && self.pp > 1
            && self.framework != Framework::Pytorch
            && self.microbatches % self.pp != 0
        {
            out.push((
                "microbatches",
                format!(
                    "the interleaved schedule runs micro-batches in groups of pp: {} is not a multiple of pp = {} (Megatron-LM asserts it)",
                    self.microbatches, self.pp
                ),
            ));
        } else if self.schedule == Schedule::Interleaved
            && self.framework == Framework::Pytorch
            && self.mode == Mode::Train
        {
            out.push((
                "schedule",
                "framework=pytorch models the 1F1B and GPipe schedules; interleaved is counted as 1F1B".to_string(),
            ));
        }
        if self.sp && self.tp < 2 {
            out.push((
                "sp",
                "sequence parallelism shards along TP; with tp = 1 it changes nothing".to_string(),
            ));
        }
        if self.finetune != Finetune::Full
            && (self.convention.is_deepspeed() || self.convention.is_megatron())
        {
            out.push((
                "finetune",
                format!(
                    "{} models full training only; LoRA/QLoRA use memfit's accounting",
                    self.convention.as_str()
                ),
            ));
        }
        if self.mode == Mode::Infer
            && (self.weight_dtype.is_integer() || self.kv_dtype.is_integer())
            && self.quant_group == 0
        {
            out.push(("quant_group", "quant_group must be at least 1".to_string()));
        }
        if self.offload_param != Offload::None && z != Zero::Z3 {
            out.push((
                "offload_param",
                "parameter offload needs ZeRO stage 3; ignored".to_string(),
            ));
        }
        if self.mode == Mode::Infer && z != Zero::Z0 {
            out.push((
                "zero",
                "ZeRO applies to training; ignored in inference".to_string(),
            ));
        }
        if self.convention.is_deepspeed() && !matches!(z, Zero::Z2 | Zero::Z3) {
            out.push((
                "convention",
                format!(
                    "DeepSpeed's estimators cover ZeRO-2 and ZeRO-3 only; zero={} uses memfit's accounting",
                    z.number()
                ),
            ));
        }
        if self.convention.is_megatron() && (z > Zero::Z1 || self.offload_opt != Offload::None) {
            out.push((
                "convention",
                "Megatron's formula models its distributed optimizer (zero=1) or none (zero=0); ZeRO-2/3 and offload are not in it".to_string(),
            ));
        }
        out
    }
}
