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

mod access;
mod context;
mod defaults;
mod problems;
mod scope;
pub use scope::{engine_reads, mode_reads, SERVING_KEYS};
mod ollama;
mod serving;

pub use access::*;
pub use context::CudaContext;
pub use ollama::*;
pub use serving::*;

mod enums;
mod stack_enums;

pub use enums::*;
pub use stack_enums::*;

use crate::gpu::{gpu, Gpu, GPUS};

pub use crate::megatron::Recompute;

use crate::model::{preset, Arch, Bias, Mlp, Norm, Preset};

use crate::units::MIB;

use serde::{Deserialize, Serialize};

pub use crate::nonzero::{at_least_one, ceil_div, count, div_at_least_one, Count};

/// Architecture overrides on top of the preset (`None` = the preset's value).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArchOverrides {
    /// `layers`
    pub layers: Option<Count>,
    /// `hidden`
    pub hidden: Option<Count>,
    /// `heads`
    pub heads: Option<Count>,
    /// `kv_heads`
    pub kv_heads: Option<Count>,
    /// `ffn`
    pub ffn: Option<Count>,
    /// `vocab`
    pub vocab: Option<Count>,
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
    pub head_dim: Option<Count>,
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
    /// `gelu_ops`
    #[serde(default)]
    pub gelu_ops: Option<bool>,
    /// `softmax_in_dtype`
    #[serde(default)]
    pub softmax_in_dtype: Option<bool>,
    /// `rope_partial`
    #[serde(default)]
    pub rope_partial: Option<bool>,
    /// `attn_layers`
    #[serde(default)]
    pub attn_layers: Option<u32>,
    /// `mamba_layers`
    #[serde(default)]
    pub mamba_layers: Option<u32>,
    /// `conv_layers`
    #[serde(default)]
    pub conv_layers: Option<u32>,
    /// `linear_layers`
    #[serde(default)]
    pub linear_layers: Option<u32>,
    /// `ssm_version`
    #[serde(default)]
    pub ssm_version: Option<u32>,
    /// `ssm_inner`
    #[serde(default)]
    pub ssm_inner: Option<u32>,
    /// `ssm_state`
    #[serde(default)]
    pub ssm_state: Option<u32>,
    /// `ssm_groups`
    #[serde(default)]
    pub ssm_groups: Option<u32>,
    /// `ssm_heads`
    #[serde(default)]
    pub ssm_heads: Option<u32>,
    /// `ssm_conv`
    #[serde(default)]
    pub ssm_conv: Option<u32>,
    /// `ssm_chunk`
    #[serde(default)]
    pub ssm_chunk: Option<u32>,
    /// `lin_k_heads`
    #[serde(default)]
    pub lin_k_heads: Option<u32>,
    /// `lin_v_heads`
    #[serde(default)]
    pub lin_v_heads: Option<u32>,
    /// `lin_k_dim`
    #[serde(default)]
    pub lin_k_dim: Option<u32>,
    /// `lin_v_dim`
    #[serde(default)]
    pub lin_v_dim: Option<u32>,
    /// `lin_kind`
    #[serde(default)]
    pub lin_kind: Option<crate::model::LinKind>,
    /// `ssm_dtype`
    pub ssm_dtype: Option<crate::model::SsmDtype>,
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
    /// `vision`: the parameters of the vision encoder (with its projector) that a serving
    /// engine loads with a multimodal checkpoint; `None` = the preset's
    /// ([`crate::model::vision_tower`]), 0 = none (a text-only launch).
    #[serde(default)]
    pub vision: Option<u64>,
    /// `context`: the context the checkpoint is configured for (`config.json`'s
    /// `max_position_embeddings`), tokens; `None` = the preset's
    /// ([`crate::model::model_context`]). Serving reads it ([`Scenario::context`]).
    #[serde(default)]
    pub context: Option<u32>,
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
    /// `loss`: training computes the loss in the model or in the loop.
    pub loss: Loss,
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
    /// `quant`: how inference and serving store the weights.
    #[serde(default)]
    pub quant: crate::quant::Quant,
    /// `double_quant` outside QLoRA: the NF4 weight format's double quantisation.
    #[serde(default = "yes")]
    pub nf4_double_quant: bool,
}

fn yes() -> bool {
    true
}

impl Numerics {
    /// The GGUF file type the weights are (`None`: not a GGUF file): `quant`'s, and
    /// `quant=mxfp4&weight_dtype=q8_0` for gpt-oss's `MXFP4 MoE` files as
    /// `convert_hf_to_gguf.py --outtype q8_0` writes them (ggml-org's, LM Studio's: "type
    /// q8_0: 98 tensors, type mxfp4: 72 tensors" for gpt-oss-20b). `quant=mxfp4` alone keeps
    /// the rest in 16 bits (Ollama's gpt-oss files, 13.8 GB for the 20b).
    pub fn gguf(&self) -> Option<crate::quant::gguf::FileType> {
        match (self.quant, self.weight_dtype) {
            (crate::quant::Quant::Mxfp4, Dtype::Q8_0) => {
                Some(crate::quant::gguf::FileType::Mxfp4MoeQ8)
            }
            (q, _) => q.gguf(),
        }
    }
    /// `weight_dtype=int8|int4`, the older spelling of a quantised format, as the one
    /// key `quant` (`int8_g`, `int4_g`: the same bytes); a `quant` already set wins.
    pub fn normalise_weight_format(&mut self) {
        let q = match self.weight_dtype {
            Dtype::Int8 => crate::quant::Quant::Int8G,
            Dtype::Int4 => crate::quant::Quant::Int4G,
            _ => return,
        };
        self.weight_dtype = Dtype::Auto;
        if self.quant == crate::quant::Quant::None {
            self.quant = q;
        }
    }
}

impl Scenario {
    /// The GGUF file type the weights are when llama.cpp serves them (`None`: not a GGUF
    /// file): [`Numerics::gguf`], and for `quant=mxfp4` with 16-bit weights under
    /// `engine=llamacpp` gpt-oss's MXFP4 file with its other matrices in F16 and its 1-D
    /// tensors and routers in f32 ([`FileType::Mxfp4MoeF16`](crate::quant::gguf::FileType)):
    /// the same `quant=mxfp4` under vLLM or SGLang is the Hugging Face checkpoint, whose
    /// norms, biases and routers load in the model's dtype.
    ///
    /// Source: llama.cpp `convert_hf_to_gguf.py` (1-D tensors and `ffn_gate_inp` stay f32);
    /// unsloth's `gpt-oss-20b-F16.gguf` loads 12,036.68 MiB on the GPU, and the 16-bit
    /// count of the same tensors falls 17.5 MiB short (`tests/data/serve_logs.json`).
    pub fn gguf(&self) -> Option<crate::quant::gguf::FileType> {
        use crate::quant::{gguf::FileType, Quant};
        match self.numerics.gguf() {
            None if self.workload.mode == Mode::Serve
                && self.serving.engine == Engine::Llamacpp
                && self.numerics.quant == Quant::Mxfp4
                && matches!(
                    self.numerics.weight_dtype,
                    Dtype::Auto | Dtype::Fp16 | Dtype::Bf16
                ) =>
            {
                Some(FileType::Mxfp4MoeF16)
            }
            ft => ft,
        }
    }
}

/// Hardware figures that override the GPU preset's (`None` = the preset's), for the
/// step-time model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HardwareOverrides {
    /// `tflops`: dense peak TFLOP/s of the compute precision.
    pub tflops: Option<f64>,
    /// `hbm_bw`: HBM bandwidth, GB/s.
    pub hbm_bw: Option<f64>,
    /// `intra_bw`: intra-node bandwidth per GPU, one direction, GB/s.
    pub intra_bw: Option<f64>,
    /// `inter_bw`: inter-node bandwidth per GPU, one direction, GB/s: a node's NICs over its
    /// GPUs (rails: each GPU's own NIC on DGX systems).
    pub inter_bw: Option<f64>,
}

/// A serving engine and its knobs (`mode=serve`); `None` = the engine's default for
/// its version, GPU and layout.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Serving {
    /// `engine`
    pub engine: Engine,
    /// `engine_version` (`None` = the newest modelled).
    pub version: Option<Version>,
    /// `gpu_util`: vLLM `gpu_memory_utilization`, SGLang `mem_fraction_static`,
    /// TensorRT-LLM `free_gpu_memory_fraction`.
    pub gpu_util: Option<f64>,
    /// `max_len`: `max_model_len` / `n_ctx` (`None` = the model's context).
    pub max_len: Option<Count>,
    /// `max_batched_tokens`: `max_num_batched_tokens` / chunked-prefill size / `n_batch`.
    pub max_batched_tokens: Option<Count>,
    /// `max_seqs`: `max_num_seqs` / `max_running_requests`.
    pub max_seqs: Option<Count>,
    /// `block_size`: tokens per KV block (page).
    pub block_size: Option<Count>,
    /// `parallel`: llama.cpp `--parallel` / `OLLAMA_NUM_PARALLEL` (sequences at once).
    pub parallel: Count,
    /// `ctx_per`: whether `max_len` is each sequence's context (Ollama) or the total that
    /// the `parallel` slots share (llama-server's `-c`).
    #[serde(default)]
    pub ctx_per: CtxPer,
    /// `sampler`: which code runs vLLM's top-k/top-p in the profiling run's dummy sampler
    /// pass (`auto` = the release's default).
    pub sampler: Sampler,
    /// `flash_attn`: llama.cpp's `-fa` (`auto` = the build's default).
    #[serde(default)]
    pub flash_attn: FlashAttn,
    /// `fit`: llama.cpp's `--fit` (`auto` = on for llama-server from b7437).
    #[serde(default)]
    pub fit: LlamaFit,
    /// `ngl`: llama.cpp's `-ngl` / Ollama's `num_gpu`, layers on the GPUs counted as
    /// llama.cpp counts them (the repeating layers and the output layer); `None` = all.
    #[serde(default)]
    pub ngl: Option<u32>,
    /// `kv_offload`: llama.cpp keeps the KV cache of its GPU layers on the GPUs (`false`:
    /// `--no-kv-offload`, the whole cache in host memory).
    #[serde(default = "yes")]
    pub kv_offload: bool,
    /// `mmap`: llama.cpp maps the GGUF file (`false`: `--no-mmap`, Ollama's `use_mmap`
    /// false: the tensors the CPU keeps are read into host buffers, the rest of the file is
    /// not held in host memory).
    #[serde(default = "yes")]
    pub mmap: bool,
    /// `redundant_experts`: EPLB's redundant (replicated) routed experts per MoE layer,
    /// vLLM `--enable-eplb --num-redundant-experts` / `--eplb-config`, SGLang
    /// `--ep-num-redundant-experts` (0 = EPLB off).
    #[serde(default)]
    pub redundant_experts: u32,
    /// `graph_bs`: the decode CUDA graphs' largest batch, SGLang `--cuda-graph-max-bs`
    /// (`--cuda-graph-max-bs-decode` from 0.5.14); `Some(0)`: no CUDA graphs (SGLang
    /// `--disable-cuda-graph`, vLLM `--enforce-eager`); `None` = the engine's default.
    #[serde(default)]
    pub graph_bs: Option<u32>,
}

impl Default for Serving {
    fn default() -> Self {
        Serving {
            engine: Engine::Vllm,
            version: None,
            gpu_util: None,
            max_len: None,
            max_batched_tokens: None,
            max_seqs: None,
            block_size: None,
            parallel: count(1),
            ctx_per: CtxPer::Sequence,
            sampler: Sampler::Auto,
            flash_attn: FlashAttn::Auto,
            fit: LlamaFit::Auto,
            ngl: None,
            kv_offload: true,
            mmap: true,
            redundant_experts: 0,
            graph_bs: None,
        }
    }
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
    /// `cuda_ctx`: CUDA context per GPU, MiB (`None` = the stack's figure, see
    /// [`Scenario::cuda_context`]).
    pub cuda_ctx_mib: Option<u32>,
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
    /// `tp_overlap`: tensor-parallel collectives overlapped with the GEMMs (step time).
    #[serde(default)]
    pub tp_overlap: bool,
    /// `ep_overlap`: the expert-parallel all-to-all overlapped with another micro-batch's
    /// compute (Megatron-Core `overlap_moe_expert_parallel_comm`; step time).
    #[serde(default)]
    pub ep_overlap: bool,
    /// `ce_fusion`: Megatron's cross-entropy kernel (memory of the saved softmax, step time).
    #[serde(default)]
    pub ce_fusion: CeFusion,
    /// `fp8_recipe`: Transformer Engine's fp8 scaling recipe (step time; precision=fp8).
    #[serde(default)]
    pub fp8_recipe: Fp8Recipe,
    /// `device`: where PyTorch runs the kernels (SDPA's dispatch, autocast's fp32 ops).
    #[serde(default)]
    pub device: Device,
    /// `fp8_params`: fp8 training keeps the weights themselves in fp8 (Megatron
    /// `--fp8-param-gather`), no 16-bit copy.
    #[serde(default)]
    pub fp8_params: bool,
    /// `modules`: the model code under framework=pytorch (Hugging Face or plain modules).
    #[serde(default)]
    pub modules: Modules,
    /// `tf32`: fp32 matmuls on tf32 tensor cores (step time).
    #[serde(default)]
    pub tf32: Tf32,
    /// `ssm_kernels`: the Mamba / convolution layers run fused kernels (mamba-ssm,
    /// causal-conv1d) or transformers' torch fallback.
    #[serde(default)]
    pub ssm_kernels: SsmKernels,
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
    /// The serving engine (`mode=serve`).
    #[serde(default)]
    pub serving: Serving,
    /// Hardware figures for the step-time model.
    #[serde(default)]
    pub hardware: HardwareOverrides,
}
