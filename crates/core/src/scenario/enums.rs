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

spelled! {
    /// Transformer Engine's fp8 scaling recipe (Megatron-LM `--fp8-recipe`; Megatron-Bridge's
    /// `ds`, `cs`, `mx`, `sc`): how each GEMM input and output gradient is quantized, and so
    /// the memory traffic fp8 training adds (step time).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum Fp8Recipe {
        /// Per-tensor scales from the amax history: one cast pass (Transformer Engine's and Megatron-LM's default).
        #[default]
        Delayed = "delayed", "delayed scaling", "";
        /// Per-tensor scales from the tensor's own amax: an amax pass, then the cast (Megatron-Bridge's default `cs`).
        Tensorwise = "tensorwise", "current scaling (per tensor)", "an amax pass before each cast";
        /// MXFP8: a scale per 32 values, row- and column-wise copies (Blackwell).
        Mxfp8 = "mxfp8", "MXFP8 (Blackwell)", "a scale per 32 values, row- and column-wise copies";
        /// 1×128 and 128×128 block scales, row- and column-wise copies (DeepSeek-V3's recipe).
        Blockwise = "blockwise", "blockwise (1×128)", "a scale per 128 values, row- and column-wise copies";
    }
}

spelled! {
    /// Where PyTorch runs the step's kernels: which attention kernel `scaled_dot_product_attention`
    /// dispatches to, and which ops autocast runs in fp32 (framework=pytorch).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum Device {
        /// A CUDA GPU: SDPA picks flash, memory-efficient or the math fallback by dtype, GQA, mask and head size; CUDA autocast runs `pow` in fp32.
        #[default]
        Cuda = "cuda", "CUDA", "";
        /// PyTorch's CPU kernels, as a CPU memory tracker measures them: SDPA's CPU kernel repeats K/V to every head and saves no scores; CPU autocast keeps `pow` in 16 bits.
        Cpu = "cpu", "CPU tracker", "PyTorch's CPU kernels: what a CPU memory tracker measures";
    }
}

spelled! {
    /// Whether fp32 matmuls run on tf32 tensor cores (`torch.backends.cuda.matmul.allow_tf32`):
    /// step time of fp32 training.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum Tf32 {
        /// The framework's default: off under PyTorch, DeepSpeed and the HF Trainer (PyTorch's `allow_tf32 = False` since 1.12), on under Megatron.
        #[default]
        Auto = "auto", "framework default", "";
        /// tf32 tensor cores (`allow_tf32 = True`, `--tf32`).
        On = "on", "on", "tf32 tensor cores";
        /// Plain fp32 on the CUDA cores.
        Off = "off", "off", "plain fp32 on the CUDA cores";
    }
}

spelled! {
    /// Which model code runs under framework=pytorch: what the model's own forward holds
    /// beside the layer running (inference's working set).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum Modules {
        /// Hugging Face transformers classes: the forward holds the embedding's output and the rotary cos/sin for every layer.
        #[default]
        Hf = "hf", "Hugging Face", "";
        /// A bare stack of PyTorch modules (memfit's own measured harness): nothing beyond the layer's tensors.
        Plain = "plain", "plain modules", "nothing held beyond the layer's tensors";
    }
}

spelled! {
    /// How transformers runs the Mamba, short-convolution and gated-DeltaNet layers: the fused
    /// kernels when `mamba-ssm`, `causal-conv1d` and `flash-linear-attention` are installed
    /// (and on CUDA), else its torch fallback
    /// (`MambaMixer.slow_forward` / `mamba_selective_scan`, `Mamba2Mixer.torch_forward` /
    /// `mamba2_chunk_scan`), whose tensors carry the state size in every token: tens of
    /// GiB where the kernels need a few.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum SsmKernels {
        /// mamba-ssm 2.x, causal-conv1d 1.x (and flash-linear-attention) installed.
        #[default]
        Fused = "fused", "fused kernels (mamba-ssm, causal-conv1d)", "";
        /// transformers ≥ 5.18's torch fallback: Mamba-2's chunk scan by einsum.
        Torch = "torch", "torch fallback (transformers ≥ 5.18)", "the scan in PyTorch ops: its (b, d, s, N) tensors";
        /// transformers 4.44–5.17's torch fallback: Mamba-2's chunk scan broadcasts `C·B` to `(b, c, l, l, H, N)` before summing.
        TorchNaive = "torch-naive", "torch fallback (transformers ≤ 5.17)", "Mamba-2's naive chunk scan: a (b, c, l, l, H, N) fp32 product";
    }
}

spelled! {
    /// Whose allocations are modelled.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum Framework {
        /// DeepSpeed ZeRO: bf16/fp16 params and grads, fp32 partitioned optimizer, communication buckets.
        #[default]
        Deepspeed = "deepspeed", "DeepSpeed", "";
        /// Plain PyTorch (Hugging Face modules, autocast or FSDP2, torch.optim.AdamW foreach).
        Pytorch = "pytorch", "PyTorch / FSDP2", "";
        /// Megatron-LM: fp32 main grads, distributed optimizer, fused kernels, vocab-parallel loss.
        Megatron = "megatron", "Megatron-LM", "";
    }
}

spelled! {
    /// Pipeline schedule.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum Schedule {
        /// 1F1B (PipeDream-flush): stage i holds min(p − i, m) micro-batches.
        #[default]
        OneFOneB = "1f1b", "1F1B", "";
        /// GPipe: every micro-batch's forward before any backward: m in flight.
        Gpipe = "gpipe", "GPipe", "";
        /// Interleaved 1F1B with `vpp` virtual stages (Megatron-LM's schedule).
        Interleaved = "interleaved", "interleaved", "with `vpp`";
    }
}

spelled! {
    /// Whose accounting the estimate follows. Sources disagree; memfit names the one it uses.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum Convention {
        /// memfit's own model: 2+2+12 B/param mixed-precision Adam (seed 001, ZeRO paper),
        /// ZeRO-3 gathered-layer buffer (seed 000), seed 003's activation term.
        #[default]
        Memfit = "memfit", "memfit", "";
        /// The formulas on DeepSpeed's "Memory Requirements" page (seed 000), applied literally.
        DsDoc = "ds-doc", "DeepSpeed docs", "";
        /// DeepSpeed ≤ 0.14.2's estimator code (ZeRO-2: `4P + 16P/G`).
        Ds014 = "ds-0.14", "DeepSpeed ≤ 0.14.2", "";
        /// DeepSpeed ≥ 0.14.3's estimator code, checked against 0.19.8 (ZeRO-2: `2P + 18P/G`).
        Ds019 = "ds-0.19", "DeepSpeed ≥ 0.14.3", "";
        /// Megatron-LM's theoretical memory formula at HEAD (d98e8a64).
        Megatron = "megatron", "Megatron-LM (HEAD)", "";
        /// Megatron-LM's formula at core_v0.14.0.
        Megatron014 = "megatron-0.14", "Megatron core 0.14", "";
        /// memfit's model states with seed 003's activations `(34·b·s·h + 5·b·s²·a)·L`.
        Seed003 = "seed003", "seed 003 activations", "";
        /// memfit's model states with seed 002's activations `16k·bsh + 2bsh + 2k·bas² + bas²` per layer.
        Seed002 = "seed002", "seed 002 activations", "";
        /// memfit's model states with Korthikanti et al. Table 2 (row chosen by tp, sp, recompute).
        Korthikanti = "korthikanti", "Korthikanti Table 2", "";
    }
}

impl Convention {
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

spelled! {
    /// A serving engine (`mode=serve`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum Engine {
        /// vLLM (V1 engine).
        #[default]
        Vllm = "vllm", "vLLM", "";
        /// SGLang.
        Sglang = "sglang", "SGLang", "";
        /// TensorRT-LLM.
        Trtllm = "trtllm", "TensorRT-LLM", "";
        /// llama.cpp (and Ollama: `parallel` = `OLLAMA_NUM_PARALLEL`).
        Llamacpp = "llamacpp", "llama.cpp / Ollama", "Ollama = llamacpp + `parallel`";
    }
}

spelled! {
    /// How llama.cpp's `max_len` meets `parallel`: Ollama gives each of its parallel
    /// sequences the whole context, llama-server splits its `-c` among the slots.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum CtxPer {
        /// Ollama: `max_len` is `num_ctx`, each of the `OLLAMA_NUM_PARALLEL` sequences gets it (`n_ctx = max_len·parallel`).
        #[default]
        Sequence = "sequence", "each sequence (Ollama)", "Ollama: each of the `parallel` sequences gets `max_len`, n_ctx = max_len·parallel";
        /// llama-server: `max_len` is `-c` (n_ctx), split among the `-np` slots (`n_ctx / parallel` each).
        Total = "total", "shared (llama-server)", "llama-server: `max_len` is `-c`, shared by the `-np` slots, n_ctx/parallel each";
    }
}

spelled! {
    /// llama.cpp's flash attention (`-fa auto|on|off`; Ollama's `OLLAMA_FLASH_ATTENTION`):
    /// whether the compute buffer holds the f32 attention scores of a micro-batch.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum FlashAttn {
        /// The build's default: off before b6325 (`common.h` `flash_attn = false`), `-fa auto` from b6325 (on where the GPU runs it: every CUDA GPU memfit lists).
        #[default]
        Auto = "auto", "the build's default", "";
        /// Flash attention (`-fa on`, `OLLAMA_FLASH_ATTENTION=1`).
        On = "on", "on", "`-fa on`, OLLAMA_FLASH_ATTENTION=1";
        /// The plain attention graph (`-fa off`; Ollama before it enabled flash attention by default): the f32 scores `n_ctx × n_ubatch × heads` in the compute buffer.
        Off = "off", "off", "`-fa off`: the f32 scores n_ctx × n_ubatch × heads in the compute buffer";
    }
}

/// An engine release, `major.minor[.patch]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Version(pub u16, pub u16, pub u16);

impl Version {
    /// Parses `0.11`, `0.11.2`, `v0.11.2` (letters after the numbers, as in `0.11.0rc1`,
    /// are ignored).
    pub fn parse(text: &str) -> Option<Version> {
        let t = text.trim().trim_start_matches(['v', 'V', 'b', 'B']);
        let mut parts = t.split('.').map(|p| {
            let digits: String = p.chars().take_while(char::is_ascii_digit).collect();
            digits.parse::<u16>().ok()
        });
        let major = parts.next()??;
        let minor = parts.next().flatten().unwrap_or(0);
        let patch = parts.next().flatten().unwrap_or(0);
        Some(Version(major, minor, patch))
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.0, self.1, self.2)
    }
}
