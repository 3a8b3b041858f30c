//! The scenario's choices, each an enum whose spellings, form labels and notes are
//! declared once ([`spelled!`](crate::spelled)).

use crate::spelled;
use serde::{Deserialize, Serialize};

spelled! {
    /// Training or inference.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum Mode {
        /// Forward, backward and optimizer step.
        #[default]
        Train = "train", "Training", "";
        /// Prefill and decode with a KV cache (Hugging Face `generate`).
        Infer = "infer", "Inference", "";
        /// A serving engine's start-up: weights, profiling, then the KV-cache pool.
        Serve = "serve", "Serving", "";
    }
}

spelled! {
    /// ZeRO stage (DeepSpeed) — what is partitioned across the data-parallel ranks.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
    pub enum Zero {
        /// Plain data parallelism: every rank holds everything.
        #[default]
        Z0 = "0", "0 — plain DP", "";
        /// Optimizer states partitioned.
        Z1 = "1", "1 — optimizer states", "";
        /// Optimizer states and gradients partitioned.
        Z2 = "2", "2 — + gradients", "";
        /// Optimizer states, gradients and parameters partitioned (≈ FSDP FULL_SHARD).
        Z3 = "3", "3 — + parameters", "";
    }
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
        Zero::ALL.get(n as usize).copied()
    }
}

spelled! {
    /// PyTorch FSDP sharding strategy (maps onto the ZeRO stages); `None` is the `fsdp`
    /// key's "not FSDP" (a scenario keeps its sharding as one [`Sharding`]).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum Fsdp {
        /// Not using FSDP (the `zero` key applies).
        #[default]
        None = "none", "none", "";
        /// FULL_SHARD = ZeRO-3 over all data-parallel ranks.
        FullShard = "full_shard", "FULL_SHARD", "";
        /// SHARD_GRAD_OP = ZeRO-2.
        ShardGradOp = "shard_grad_op", "SHARD_GRAD_OP", "";
        /// HYBRID_SHARD = ZeRO-3 inside a node, replicated across nodes.
        HybridShard = "hybrid_shard", "HYBRID_SHARD", "";
    }
}

/// How the model states are sharded over the data-parallel ranks: a ZeRO stage, or an
/// FSDP strategy (which implies its stage). One value, so "ZeRO-2 and FULL_SHARD at
/// once" cannot be stated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Sharding {
    /// DeepSpeed's ZeRO stage (or, under `framework=pytorch`, DDP / ZeroRedundancyOptimizer).
    Zero(Zero),
    /// A PyTorch FSDP strategy (never [`Fsdp::None`]).
    Fsdp(Fsdp),
}

impl Default for Sharding {
    fn default() -> Self {
        Sharding::Zero(Zero::Z0)
    }
}

impl Sharding {
    /// An FSDP strategy, or ZeRO-0 for [`Fsdp::None`].
    pub fn fsdp_or_z0(f: Fsdp) -> Sharding {
        match f {
            Fsdp::None => Sharding::Zero(Zero::Z0),
            f => Sharding::Fsdp(f),
        }
    }
    /// The ZeRO stage in effect: FSDP's strategy maps to its stage.
    pub fn zero(self) -> Zero {
        match self {
            Sharding::Zero(z) => z,
            Sharding::Fsdp(Fsdp::ShardGradOp) => Zero::Z2,
            Sharding::Fsdp(Fsdp::None) => Zero::Z0,
            Sharding::Fsdp(_) => Zero::Z3,
        }
    }
    /// The FSDP strategy ([`Fsdp::None`] for a ZeRO stage).
    pub fn fsdp(self) -> Fsdp {
        match self {
            Sharding::Zero(_) => Fsdp::None,
            Sharding::Fsdp(f) => f,
        }
    }
    /// The `zero` key's stage (ZeRO-0 under FSDP, whose key is `fsdp`).
    pub fn zero_key(self) -> Zero {
        match self {
            Sharding::Zero(z) => z,
            Sharding::Fsdp(_) => Zero::Z0,
        }
    }
}

spelled! {
    /// Where offloaded state lives.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum Offload {
        /// Stays on the GPU.
        #[default]
        None = "none", "none", "";
        /// Host RAM (ZeRO-Offload).
        Cpu = "cpu", "CPU", "";
        /// NVMe (ZeRO-Infinity); host RAM still stages it.
        Nvme = "nvme", "NVMe", "";
    }
}

spelled! {
    /// Numeric precision policy.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum Precision {
        /// Mixed precision: bf16 weights, grads and activations, fp32 master weights and optimizer states.
        #[default]
        Bf16 = "bf16", "bf16 mixed", "";
        /// Mixed precision with fp16 (same byte counts as bf16, plus loss scaling).
        Fp16 = "fp16", "fp16 mixed", "mixed, fp32 master";
        /// Everything in fp32 (4 bytes).
        Fp32 = "fp32", "fp32", "";
        /// Pure bf16: bf16 weights, gradients and optimizer states, no fp32 master copy.
        Bf16Pure = "bf16-pure", "bf16 pure", "no master";
        /// FP8 training, Transformer-Engine style: bf16 weights plus fp8 weight copies,
        /// fp32 master weights and optimizer states.
        Fp8 = "fp8", "fp8 (TE)", "bf16 + fp8 copies, fp32 master";
    }
}

impl Precision {
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

spelled! {
    /// How gradients are kept (seed 003's 16 vs 18 vs 20 bytes per parameter).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum GradAcc {
        /// Gradients in the compute dtype (2 B in bf16): 2+2+12 = 16 B/param with Adam.
        #[default]
        Compute = "compute", "compute dtype (16 B)", "16 B/param";
        /// Gradients accumulated in fp32 only (Megatron's `main_grad`): 2+4+12 = 18 B/param.
        Fp32 = "fp32", "fp32 (18 B)", "18, Megatron main_grad";
        /// Compute-dtype gradients plus an fp32 accumulation buffer: 2+2+4+12 = 20 B/param (seed 003).
        Both = "both", "both (20 B)", "20, seed 003";
        /// Megatron's main_grad buffer in the compute dtype (`grad_reduce_in_fp32=False`, `--grad-reduce-in-bf16`): 16 B/param.
        Main16 = "main16", "Megatron main_grad in 16 bits (16 B)", "Megatron grad_reduce_in_fp32=False";
    }
}

spelled! {
    /// How PyTorch's Adam/AdamW runs its update (`torch.optim.AdamW(foreach=…, fused=…)`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum AdamImpl {
        /// `foreach=True` (PyTorch's default on GPU): `_foreach_sqrt` of every `v` at once.
        #[default]
        Foreach = "foreach", "foreach", "sqrt(v) of every parameter";
        /// `fused=True`: one kernel per parameter group, no temporary tensors.
        Fused = "fused", "fused", "none";
        /// `foreach=False`: one parameter at a time (`sqrt(v)` and its quotient).
        Forloop = "forloop", "for-loop", "two of the largest tensor";
    }
}

spelled! {
    /// Who computes a training step's loss, which decides how long the logits live.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum Loss {
        /// The model (`model(input_ids=…, labels=…).loss`, the HF `Trainer`): the output is
        /// dropped before `backward()`, only what the loss saved lives on.
        #[default]
        Model = "model", "the model (labels=…)", "`model(…, labels=…).loss` or the HF Trainer: the output is dropped before backward";
        /// The loop, from `logits` it holds until after `backward()` (and the step).
        Loop = "loop", "the loop (holds logits)", "the loop computes the loss from `logits = model(ids).logits`, held through backward and the step";
    }
}

spelled! {
    /// Which positions' logits an inference forward keeps.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum Logits {
        /// The last position only (`generate`: `logits_to_keep=1`).
        #[default]
        Last = "last", "last position (generate)", "generate: last position";
        /// Every prompt position, and the loss over them (evaluation, perplexity).
        All = "all", "every position + loss (eval)", "every prompt position and the loss: evaluation, perplexity";
        /// Every prompt position's logits, no loss (`logits_to_keep=0`: scoring, embeddings of the vocabulary).
        Prompt = "prompt", "every position, no loss", "every prompt position's logits in the model's dtype, no loss (`logits_to_keep=0`)";
    }
}

spelled! {
    /// The optimizer.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum Optimizer {
        /// AdamW: momentum and variance.
        #[default]
        Adamw = "adamw", "AdamW", "";
        /// Adam: momentum and variance (same memory as AdamW).
        Adam = "adam", "Adam", "";
        /// Plain SGD: no state.
        Sgd = "sgd", "SGD", "";
        /// SGD with momentum: one moment.
        SgdMomentum = "sgd-momentum", "SGD + momentum", "";
        /// bitsandbytes 8-bit Adam: two 8-bit moments with one fp32 absmax per 2048-value block.
        Adam8bit = "adam8bit", "8-bit Adam", "";
        /// Adafactor: factored second moment (rows + columns per matrix), no momentum.
        Adafactor = "adafactor", "Adafactor", "";
        /// Lion: one moment.
        Lion = "lion", "Lion", "";
    }
}

spelled! {
    /// Full fine-tuning or parameter-efficient adapters: the `finetune` key's spelling
    /// (a scenario keeps the adapters' settings in [`Tuning`]).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum Finetune {
        /// Every parameter trains.
        #[default]
        Full = "full", "full", "";
        /// LoRA: frozen base in the compute dtype, trainable low-rank adapters.
        Lora = "lora", "LoRA", "";
        /// QLoRA: frozen base in 4-bit NF4, trainable adapters.
        Qlora = "qlora", "QLoRA (NF4)", "";
    }
}

spelled! {
    /// Which linear layers get LoRA adapters.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum LoraTargets {
        /// q and v projections (PEFT's default for Llama-style models).
        Qv = "qv", "q, v", "";
        /// All attention projections (q, k, v, o).
        Attn = "attn", "attention", "";
        /// The MLP projections.
        Mlp = "mlp", "MLP", "";
        /// Every linear layer in the blocks (QLoRA paper, Unsloth).
        #[default]
        All = "all", "all linear", "";
    }
}

spelled! {
    /// Storage dtype for inference weights or the KV cache.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum Dtype {
        /// The precision policy's compute dtype.
        #[default]
        Auto = "auto", "auto", "= precision";
        /// 4 bytes.
        Fp32 = "fp32", "fp32", "";
        /// 2 bytes.
        Bf16 = "bf16", "bf16", "";
        /// 2 bytes.
        Fp16 = "fp16", "fp16", "";
        /// 1 byte.
        Fp8 = "fp8", "fp8", "";
        /// 1 byte (+ group scales for weights).
        Int8 = "int8", "int8", "";
        /// 0.5 byte (+ group scales for weights).
        Int4 = "int4", "int4", "";
        /// llama.cpp cache type q8_0 (34 B per 32).
        Q8_0 = "q8_0", "q8_0 (llama.cpp)", "llama.cpp cache types: engine=llamacpp";
        /// llama.cpp cache type q4_0 (18 B per 32).
        Q4_0 = "q4_0", "q4_0 (llama.cpp)", "";
        /// llama.cpp cache type q4_1 (20 B per 32).
        Q4_1 = "q4_1", "q4_1 (llama.cpp)", "";
        /// llama.cpp cache type q5_0 (22 B per 32).
        Q5_0 = "q5_0", "q5_0 (llama.cpp)", "";
        /// llama.cpp cache type q5_1 (24 B per 32).
        Q5_1 = "q5_1", "q5_1 (llama.cpp)", "";
        /// llama.cpp cache type iq4_nl (18 B per 32).
        Iq4Nl = "iq4_nl", "iq4_nl (llama.cpp)", "";
    }
}

impl Dtype {
    /// Bits per element (`auto` resolves to the precision's compute dtype).
    pub fn bits(self, p: Precision) -> u64 {
        match self {
            Dtype::Auto => p.compute_bytes() * 8,
            Dtype::Fp32 => 32,
            Dtype::Bf16 | Dtype::Fp16 => 16,
            Dtype::Fp8 | Dtype::Int8 => 8,
            Dtype::Int4 => 4,
            // ggml's block types, rounded down: exact only through `serve::kv::KvFormat`.
            Dtype::Q8_0 => 8,
            Dtype::Q5_0 | Dtype::Q5_1 => 5,
            Dtype::Q4_0 | Dtype::Q4_1 | Dtype::Iq4Nl => 4,
        }
    }
    /// Whether the format stores integer codes with per-group scales.
    pub fn is_integer(self) -> bool {
        matches!(self, Dtype::Int8 | Dtype::Int4)
    }
    /// Whether it is one of llama.cpp's block types (a cache type only llama.cpp has).
    pub fn is_ggml(self) -> bool {
        matches!(
            self,
            Dtype::Q8_0 | Dtype::Q4_0 | Dtype::Q4_1 | Dtype::Q5_0 | Dtype::Q5_1 | Dtype::Iq4Nl
        )
    }
}

spelled! {
    /// An inverse solve to report.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum Solve {
        /// Nothing.
        #[default]
        None = "none", "none", "";
        /// The largest micro-batch that fits.
        MaxBatch = "max_batch", "largest micro-batch", "";
        /// The largest sequence length (prompt + generated, in inference) that fits.
        MaxContext = "max_context", "longest context", "";
        /// The fewest GPUs of the selected type on which some layout fits.
        MinGpus = "min_gpus", "fewest GPUs", "";
    }
}

spelled! {
    /// Attention kernel (decides whether the s² scores are stored).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum Attn {
        /// FlashAttention-2/3: stores q, k, v, output and the log-sum-exp; no s² scores; native GQA.
        #[default]
        Flash = "flash", "FlashAttention", "";
        /// PyTorch fused SDPA (flash / memory-efficient backends): no s² scores; K/V repeated to all heads (HF `repeat_kv`).
        Sdpa = "sdpa", "PyTorch SDPA", "";
        /// FlashAttention-1 and the 2022 Triton kernel (llm-foundry's `attn_impl: triton`): no
        /// s² scores, K/V repeated to all heads (no native GQA), about half FlashAttention-2's speed.
        Flash1 = "flash1", "FlashAttention-1", "FlashAttention-1 or the 2022 Triton kernel: half FlashAttention-2's speed";
        /// Eager attention: stores the softmax (and, with dropout, the mask and dropped probabilities).
        Eager = "eager", "eager (s² scores)", "stores the s² softmax";
    }
}

spelled! {
    /// Megatron's cross-entropy kernel (`--cross-entropy-loss-fusion`,
    /// `--cross-entropy-fusion-impl`): what the loss saves and how much memory traffic it
    /// takes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum CeFusion {
        /// `vocab_parallel_cross_entropy`: unfused fp32 passes (52 B per logit), the fp32 softmax saved.
        #[default]
        Off = "off", "unfused", "";
        /// `--cross-entropy-fusion-impl native`: the same passes JIT-fused (28 B per logit), the fp32 softmax saved.
        Native = "native", "fused (native)", "JIT-fused passes, fp32 softmax saved";
        /// `--cross-entropy-fusion-impl te`: Transformer Engine's Triton kernel writes the gradient over the 16-bit logits (10 B per logit; TE releases before 2026-07).
        Te = "te", "fused (TE)", "the gradient over the 16-bit logits";
        /// flash-attn's `CrossEntropyLoss` under plain PyTorch (llm-foundry's `fused_crossentropy`): the 16-bit logits saved, a 16-bit gradient beside them.
        Flash = "flash", "flash-attn (PyTorch)", "16-bit logits and gradient, framework=pytorch";
    }
}
