//! Eager PyTorch's own costs in a Hugging Face `transformers` training step
//! (`framework=pytorch`, `modules=hf`): the unfused element-wise kernels of the modelling
//! code, the materialised attention scores, the MoE expert loop, the host's kernel launches
//! as a floor, and `torch.optim`'s update as memory traffic and host work. Measured on one H200 (`tests/data/cuda_h200/train.jsonl`, the
//! per-phase seconds `fw_s`, `bw_s`, `opt_s`). `torch.compile` fuses the element-wise chains
//! and the optimizer's `foreach` kernels (`fused=True`), and removes most of these costs;
//! published runs under plain modules (torchtitan, llm-foundry: `modules=plain`) do not
//! take them.

use super::adapters::{adapted_matrices, ADAPTER_TENSOR_S};
use crate::estimate::Prepared;
use crate::model::{Arch, Mlp, Norm};
use crate::scenario::{AdamImpl, Finetune, Framework, Modules, Optimizer, Precision, Scenario};

/// The H200's measured copy bandwidth over its data-sheet HBM rate: `gemm.jsonl`'s
/// `hbm_copy`, 4.27 TB/s of 4.8 (bytes read + written).
pub const HBM_COPY: f64 = 4.273 / 4.8;
/// The rate of the Hugging Face RMSNorm's and rotary embedding's kernels over the data-sheet
/// HBM rate (**calibrated**): the share [`elementwise_split`] calls composed. Those modules are
/// written in Python as reductions (`mean(-1)`), products broadcast along the last dimension
/// (`· rsqrt(var)`, `· weight`, `· cos`, `· sin`) and strided slices of transposed heads
/// (`rotate_half`'s halves and `cat`); PyTorch's CUDA loops run the vectorized kernel only
/// for contiguous operands of one dtype (`aten/src/ATen/native/cuda/CUDALoops.cuh`,
/// `gpu_kernel_impl`: `launch_vectorized_kernel` when `iter.is_contiguous()`, else the
/// unrolled or legacy loop with an offset calculator), so they run below the copy rate.
///
/// # Formula
/// `t_composed = B_composed / (r_c·B_HBM)`,
/// `r_c = HBM_COPY / median_i[(fw_i − G_i − A_i − E_flat,i − H_i − ℓ_i/2) / (B_composed,i/(HBM_COPY·B_HBM))]`:
/// each calibration run's forward phase (`fw_s`) less memfit's GEMMs, attention, flat
/// element-wise work, LM head and half the loss, over the composed bytes at the copy rate.
/// Over the 30 calibration runs with SDPA and full fine-tuning (`tests/data/cuda_h200/
/// train.jsonl` C04–C26 and set D's calibration runs, `tests/data/cuda_h200_d/train.jsonl`;
/// never the held-out D03, D06, …) the median is 1.97 (bf16 runs 1.35–3.68; the backward
/// phases, with twice the forward's bytes, give 1.68): `r_c` = 0.890/1.97 = 0.452, 2.17 TB/s
/// on an H200. The flat kernels keep the measured copy rate: GPT-2 (LayerNorm one kernel,
/// learned positions, no composed work) comes out within −12 … +13 % without it.
///
/// # Example
/// Llama 3.2 3B under autocast, 8,192 tokens: the two RMSNorms (2·3,072·28 B) and RoPE over
/// q and k (4,096·36 B) are 319,488 B a token, 2.62 GB a block: 1.21 ms at 2.17 TB/s (0.61 ms
/// at the copy rate).
pub const COMPOSED_RATE: f64 = 0.452;

/// The launch cost of one small kernel, seconds (`gemm.jsonl`'s `launch_overhead_add`: an
/// `add` of two tiny tensors, 7.34 µs each over 1,000 launches). The optimizer's host work per
/// parameter tensor is of the same size (see [`optimizer_s`]).
pub const LAUNCH_S: f64 = 7.3e-6;

/// Host work of one `optimizer.step()`, seconds (see [`optimizer_s`]).
pub const HOST_STEP_S: f64 = 1.5e-3;

/// Whether a scenario runs Hugging Face modules under eager PyTorch.
pub fn applies(s: &Scenario) -> bool {
    s.stack.framework == Framework::Pytorch && s.runtime.modules == Modules::Hf
}

/// Bytes of the residual stream's values (`k_r`) and of the MLP's inner values (`k_f`).
///
/// Under autocast over fp32 weights ([`crate::activations::autocast`], as the memory model
/// has it: not under FSDP's mixed precision, nor LoRA's 16-bit base) the embedding's output,
/// the residual adds and the norms stay fp32 (4 B) while the linears' outputs are bf16
/// (2 B); otherwise both are the compute width (2 B; fp32 4 B).
fn widths(s: &Scenario) -> (f64, f64) {
    let kf = if s.numerics.precision == Precision::Fp32 {
        4.0
    } else {
        2.0
    };
    let kr = if crate::activations::autocast(s) {
        4.0
    } else {
        kf
    };
    (kr, kf)
}

/// The forward element-wise bytes of one block over `tokens` tokens on a `t`-way rank, in
/// unfused eager PyTorch (the backward moves twice as much: `block` in the parent module).
///
/// # Formula
/// ```text
/// E_fwd = T · ( n_n·h·β_n + [q/k norms] (a + a_kv)·d·β_n      the norms
///             + 6·k_r·h                                         two residual adds
///             + [autocast] 30·h                                 five projection inputs cast to bf16
///             + [RoPE] (a + a_kv)·d·β_rot                       rotary embedding of q and k
///             + 2·k_f·a·d                                       the heads' transpose().contiguous()
///             + c_f·f/t·k_f                                     the activation and gate product
///             + Σ_adapted (4·d_in + 7·d_out)·k_f )               LoRA's own passes (PEFT)
/// ```
/// `T` tokens, `h` width, `a`, `a_kv`, `d` heads, KV heads and head width, `f` the active
/// MLP width, `n_n` norms per block, `k_r`, `k_f` bytes ([`widths`]). By count of
/// transformers 5.17's modelling code:
/// - `β_n`: the Hugging Face RMSNorm upcasts to fp32 whatever its input (`to(float32)`,
///   `pow(2)`, `mean`, `· rsqrt`, `to(dtype)`, `· weight`): 28 B per value from an fp32
///   input, 36 from bf16; `F.layer_norm` is one kernel: `2·k_r`.
/// - `β_rot` (`q·cos + rotate_half(q)·sin`, cos/sin in the residual's dtype): 36 B per value
///   under autocast (the products promote to fp32, SDPA's autocast casts them back), 20 in
///   bf16, 40 in fp32.
/// - `c_f`: SwiGLU 5 (`act(g)` read + write, `· u` read 2 write 1), a fused GELU 2, GPT-2's
///   `gelu_new` in Python ops 18 (eight kernels: `pow`, `·`, `+`, `·`, `tanh`, `+`, `·`, `·`),
///   at 4 B under autocast (`pow` is on autocast's fp32 list, and the chain after it follows).
/// - LoRA (`lora_B(lora_A(x))·scale` added to the base output): forward reads `x` and writes,
///   scales and adds the `d_out`-wide output; its backward (here in the `2·E_fwd`) the
///   gradients of both and the add into the input's gradient.
///
/// Measured: C24 (Llama 3.2 3B under autocast, 8,192 tokens) spends about 50 ms of its
/// 138 ms forward (`fw_s`) beyond its GEMMs, attention and loss; memfit's fused count
/// (`12·h + 3·f` at 2 B, 28 blocks) gave 7 ms of it, this count 31 ms. The per-head q/k
/// norms and RoPE over Qwen3 0.6B's 2,048-wide q show in C09's forward (243 ms), the
/// longest of the sub-billion models'.
///
/// # Example
/// Llama 3.2 3B (h 3,072, 24 heads and 8 KV heads of 128, f 8,192) under autocast, per token:
/// 2·3,072·28 + 6·4·3,072 + 30·3,072 + 4,096·36 + 2·2·3,072 + 5·8,192·2 = 172,032 + 73,728 +
/// 92,160 + 147,456 + 12,288 + 81,920 = 579,584 B; 4.75 GB per block at 8,192 tokens,
/// 1.11 ms at 4.27 TB/s.
pub fn elementwise_bytes(s: &Scenario, arch: &Arch, tokens: f64, t: f64) -> f64 {
    let (flat, composed) = elementwise_split(s, arch, tokens, t);
    flat + composed
}

/// [`elementwise_bytes`] in two parts, `(flat, composed)`: the contiguous point-wise kernels
/// (residual adds, casts, the activation, the heads' copy, LoRA's passes) and the Hugging
/// Face RMSNorm and rotary embedding, composed in Python of reductions, broadcasts over the
/// last dimension and strided slices ([`COMPOSED_RATE`]).
pub fn elementwise_split(s: &Scenario, arch: &Arch, tokens: f64, t: f64) -> (f64, f64) {
    let (kr, kf) = widths(s);
    let fp32 = s.numerics.precision == Precision::Fp32;
    let autocast = kr > kf;
    let h = arch.hidden.get() as f64;
    let qk =
        (arch.heads.get() as f64 + arch.kv_heads.get() as f64) * arch.head_dim.get() as f64 / t;
    let beta_n = match arch.norm {
        Norm::Rmsnorm if kr >= 4.0 => 28.0,
        Norm::Rmsnorm => 36.0,
        _ => 2.0 * kr,
    };
    let norms = arch.norms_per_layer as f64 * h * beta_n
        + if arch.qk_norm || arch.qk_norm_head {
            qk * beta_n
        } else {
            0.0
        };
    let casts = if autocast { 30.0 * h } else { 0.0 };
    let rope = if arch.positions > 0 {
        0.0
    } else if autocast {
        36.0 * qk
    } else if fp32 {
        40.0 * qk
    } else {
        20.0 * qk
    };
    // Autocast runs `pow` in fp32: all but the first of gelu_new's kernels then read and
    // write 4 B.
    let (cf, kg) = if arch.gelu_ops {
        (18.0, if autocast { 4.0 } else { kf })
    } else if arch.mlp == Mlp::Swiglu {
        (5.0, kf)
    } else {
        (2.0, kf)
    };
    let heads_out = 2.0 * kf * arch.heads.get() as f64 * arch.head_dim.get() as f64 / t;
    let f = arch.active_ffn() as f64 / t;
    // `F.layer_norm` is one fused kernel: flat, with the point-wise work.
    let (flat_norms, composed_norms) = if arch.norm == Norm::Rmsnorm {
        (0.0, norms)
    } else {
        (norms, 0.0)
    };
    let flat = flat_norms
        + 6.0 * kr * h
        + casts
        + heads_out
        + cf * f * kg
        + adapter_bytes(s, arch) / t * kf;
    (tokens * flat, tokens * (composed_norms + rope))
}

/// LoRA's own element-wise values per token and block, `Σ (4·d_in + 7·d_out)` over the
/// adapted matrices (0 without adapters; [`elementwise_bytes`]).
fn adapter_bytes(s: &Scenario, arch: &Arch) -> f64 {
    if s.finetune.kind() == Finetune::Full || arch.layers.get() == 0 {
        return 0.0;
    }
    let l = arch.layers.get() as f64;
    adapted_matrices(s, arch)
        .map(|m| m.count as f64 * (4.0 * m.inp as f64 + 7.0 * m.out as f64))
        .sum::<f64>()
        / l
}

/// The expert loop of a Hugging Face MoE block, forward seconds beyond its GEMMs: each routed
/// expert's `torch.where` (a device-to-host sync), gather, activation, weighting and
/// `index_add_` run one expert at a time, so the host's launches are exposed (the experts'
/// GEMMs, one per expert over its `T·k/E` tokens, are timed as such in `block`).
///
/// # Formula
/// `t = E · n_x · τ` per MoE block (the backward twice it): `E` routed experts, `n_x`
/// [`EXPERT_LAUNCHES`], `τ` 7.3 µs a launch (`gemm.jsonl`).
///
/// Measured: OLMoE 1B-7B (C25, 64 experts, 16 blocks) spent 54 ms in its forward and 96 ms
/// in its backward where its GEMMs as grouped ones and its attention take about 17 ms
/// forward; Qwen1.5-MoE-A2.7B (C18, 60 experts, 24 blocks) 79 and 205 ms (with
/// recomputation).
///
/// # Example
/// 64 experts: 64·1·7.3 µs = 0.47 ms per block forward.
pub fn expert_loop_s(arch: &Arch) -> f64 {
    arch.experts as f64 * EXPERT_LAUNCHES * LAUNCH_S
}

/// Launches of the expert loop per expert beyond its two GEMMs that the GEMMs do not hide
/// ([`expert_loop_s`]): one (of the seven, the `torch.where` sync exposing it). Calibrated on
/// C18 and C25, with the per-expert GEMMs: their steps come out +3.3 % and −5.2 % at one
/// launch, +16.9 % and +3.9 % at two.
pub const EXPERT_LAUNCHES: f64 = 1.0;

/// Kernels one block launches in its forward under eager PyTorch, by count of the
/// `transformers` modelling code (the backward launches about twice as many).
///
/// # Formula
/// ```text
/// n = n_n·n_norm (+ 2·n_norm q/k norms) + n_lin (+ n_lin autocast casts) + 10 (RoPE)
///     + n_act + 3 (attention: the kernel, the heads' transpose and contiguous copy) + 2
///     (residual adds) + 4·n_adapted (LoRA: A, B, the scale, the add)
/// ```
/// `n_norm` 7 for the Hugging Face RMSNorm (`to`, `pow`, `mean`, `+ ε`, `rsqrt`, `·`,
/// `· weight`), 1 for `F.layer_norm`; `n_lin` the block's linears (q, k, v, o or a fused
/// QKV; gate, up, down or a fused gate-up); `n_act` 2 for SwiGLU, 1 for a fused GELU, 8 for
/// GPT-2's `gelu_new`. The MoE expert loop's launches are [`expert_loop_s`]'s.
///
/// # Example
/// Llama 3.2 1B under autocast: 14 + 7 + 7 + 10 + 2 + 3 + 2 = 45.
pub fn block_kernels(s: &Scenario, arch: &Arch) -> f64 {
    let per_norm = match arch.norm {
        Norm::Rmsnorm => 7.0,
        _ => 1.0,
    };
    let qk = if arch.qk_norm || arch.qk_norm_head {
        2.0
    } else {
        0.0
    };
    let attn = if arch.fused_qkv { 2.0 } else { 4.0 };
    let mlp = match arch.mlp {
        Mlp::Swiglu if arch.fused_gate_up => 2.0,
        Mlp::Swiglu => 3.0,
        _ => 2.0,
    };
    let linears = attn + mlp;
    let casts = if crate::activations::autocast(s) {
        linears
    } else {
        0.0
    };
    let rope = if arch.positions > 0 { 0.0 } else { 10.0 };
    let act = if arch.gelu_ops {
        8.0
    } else if arch.mlp == Mlp::Swiglu {
        2.0
    } else {
        1.0
    };
    let adapters = if s.finetune.kind() == Finetune::Full || arch.layers.get() == 0 {
        0.0
    } else {
        4.0 * adapted_matrices(s, arch)
            .map(|m| m.count as f64)
            .sum::<f64>()
            / arch.layers.get() as f64
    };
    (arch.norms_per_layer as f64 + qk) * per_norm
        + linears
        + casts
        + rope
        + act
        + 3.0
        + 2.0
        + adapters
}

/// Kernels of a step outside the blocks, per micro-batch: the embedding, the final norm, the
/// LM head, the loss (the upcast, `log_softmax`, `nll_loss`, the label shift) and their
/// backward.
pub const HEAD_KERNELS: f64 = 40.0;

/// The host's floor under one micro-batch's forward and backward: eager PyTorch launches
/// every kernel from Python, so a step whose kernels are shorter than their launches waits
/// for the host.
///
/// # Formula
/// `t ≥ (L·n·(3 + r) + 40)·τ`: `n` [`block_kernels`], forward once and backward twice as
/// many, `r` the recomputed share of the forward, `τ` 7.3 µs a launch (`gemm.jsonl`).
/// The step takes the longer of this and its GPU work; on the calibration runs (the
/// shortest, C01, 125 ms against a floor of 13 ms) it never binds: it bounds small shapes,
/// where the GPU work alone would be launch-free.
///
/// # Example
/// Llama 3.2 1B (16 blocks) under autocast: (16·45·3 + 40)·7.3 µs = 16.1 ms a micro-batch.
pub fn launch_floor_s(s: &Scenario, arch: &Arch, layers: f64, recompute: f64) -> f64 {
    (layers * block_kernels(s, arch) * (3.0 + recompute) + HEAD_KERNELS) * LAUNCH_S
}

/// The routed experts' GEMMs of one MoE block in the Hugging Face loop, `(rows, count)`: each
/// of the `E` experts multiplies its own `T·k/E` tokens (on average), where a grouped GEMM
/// would run `k` GEMMs of `T` rows' worth.
///
/// # Example
/// OLMoE (64 experts, top 8) at 4,096 tokens: 64 GEMMs of 512 rows.
pub fn expert_rows(arch: &Arch, tokens: f64) -> (f64, f64) {
    if arch.experts == 0 {
        return (tokens, 0.0);
    }
    let e = arch.experts as f64;
    (tokens * arch.top_k as f64 / e, e)
}

/// Bytes per score of eager attention's forward in the `transformers` code, or of SDPA's
/// math fallback (`math`), the scores `k` bytes wide.
///
/// # Formula
/// ```text
/// eager:  k (QKᵀ) + 2k (· scaling) + k + k_m + k_p (+ mask) + k_p + 4 (softmax in fp32)
///         + [k < 4] 4 + k (the cast back) + k (AV reads) + [Gemma 2] 6k (soft-capping)
/// math:   k (QKᵀ, q pre-scaled) + 2k + k (+ causal bias) + 2k (softmax) + k (AV)
/// ```
/// `k_m` the additive mask's width: the model's float dtype, so 4 B under autocast (its
/// parameters are fp32) and `k` otherwise; `k_p = max(k, k_m)`, the sum's promoted width.
/// Source: transformers 5.17 `eager_attention_forward` (Llama, Qwen2, Mistral: `matmul(q, kᵀ)
/// · scaling + causal_mask`, `softmax(…, dtype=float32).to(q.dtype)`); PyTorch
/// `_scaled_dot_product_attention_math`.
///
/// # Example
/// Autocast (k 2, mask fp32): 2 + 4 + 10 + 8 + 6 + 2 = 32 B; pure bf16 26; fp32 36; the math
/// fallback in fp32 28; Gemma 2's soft-capping adds `6k` (12 B in bf16). Measured: C21 (Llama 3.2 1B, eager under autocast) was 0.80 of its
/// measured step with the 20 B of the count that left out the scaling and the promotion.
pub fn score_bytes(s: &Scenario, k: f64, math: bool) -> f64 {
    if math {
        return 7.0 * k;
    }
    let km = if crate::activations::autocast(s) {
        4.0
    } else {
        k
    };
    let kp = k.max(km);
    let cast = if k < 4.0 { 4.0 + k } else { 0.0 };
    // Gemma 2's `attn_logit_softcapping`: `/ cap`, `tanh`, `· cap` before the mask (its
    // backward is in the attention's 2.5 ×).
    let softcap = if s.arch().softcap { 6.0 * k } else { 0.0 };
    k + 2.0 * k + (k + km + kp) + (kp + 4.0) + cast + k + softcap
}

/// Parameter tensors of a model (what `torch.optim` loops over): every weight matrix, each
/// linear's bias, each norm's weight (and bias for LayerNorm), the embeddings.
///
/// # Example
/// GPT-2 medium (24 layers, fused `c_attn`, biases, LayerNorm): 1 + 24·(2 + 2)·2 + 24·2·2
/// + 2 (`ln_f`) + 1 (`wpe`) = 292, as `model.parameters()` lists.
pub fn param_tensors(arch: &Arch) -> f64 {
    let l = arch.layers.get() as f64;
    let mut mats: f64 = arch.linears().iter().map(|m| m.count as f64).sum();
    if arch.fused_qkv {
        mats -= 2.0 * l;
    }
    if arch.fused_gate_up && arch.mlp == Mlp::Swiglu {
        mats -= l;
    }
    let biases = match arch.bias {
        crate::model::Bias::All => mats - 1.0,
        crate::model::Bias::Qkv => 3.0 * l,
        crate::model::Bias::None => 0.0,
    };
    let per_norm = match arch.norm {
        Norm::Layernorm => 2.0,
        Norm::Rmsnorm => 1.0,
        Norm::LayernormNp => 0.0,
    };
    let qk = if arch.qk_norm || arch.qk_norm_head {
        2.0 * l
    } else {
        0.0
    };
    let norms = (arch.norms_per_layer as f64 * l + 1.0) * per_norm + qk;
    let pos = if arch.positions > 0 { 1.0 } else { 0.0 };
    mats + biases + norms + pos
}

/// Accesses per parameter of `torch.optim`'s update in units of the state's width, as
/// measured (`None`: an optimizer not measured; the generic count applies).
///
/// # Formula
/// `t = Ψ_t·a·k_s / (0.89·B_HBM) + n_t·τ`  ([`optimizer_s`]), `a`:
/// - AdamW `foreach=True` (and the for-loop, the same kernels one tensor at a time): 24 at
///   4 B (fp32 states), 28.75 at 2 B (bf16 states), C04/C05/C12/C19/C23 (3.2–3.8 B fp32:
///   95–102 B per parameter) and C11/C25/C26 (bf16: 57.5–58.3 B). By count 20 (`mul_`,
///   `lerp_`, `mul_`, `addcmul_`, `sqrt`, `div_`, `add_`, `addcdiv_`).
/// - `fused=True`: 9.5 (C24: 28.5 ms for 3.21 B fp32 parameters, 37.9 B each; by count 7:
///   param, grad, two moments read, three written).
/// - SGD: 4 (C18: 7.9 B per bf16 parameter; by count 3, `add_`); with momentum 10.7 (the
///   count of 8 at SGD's measured 3/4 of the copy rate).
fn accesses(s: &Scenario, ks: f64) -> Option<f64> {
    match s.numerics.optimizer {
        Optimizer::Adamw | Optimizer::Adam => Some(match s.numerics.adam_impl {
            AdamImpl::Fused => 9.5,
            _ if ks < 4.0 => 28.75,
            _ => 24.0,
        }),
        Optimizer::Sgd => Some(4.0),
        Optimizer::SgdMomentum => Some(10.7),
        _ => None,
    }
}

/// `optimizer.step()` of eager PyTorch on `local` trainable parameters (the rank's share),
/// seconds (`None` where [`accesses`] has no measurement).
///
/// # Formula
/// ```text
/// t = Ψ_t·a·k_s / (0.89·B_HBM) + t_0                          foreach, fused
/// t = max(Ψ_t·a·k_s / (0.89·B_HBM), 12·n_t·τ) + t_0            for-loop (12 launches a tensor)
/// t_0 = 1.5 ms (+ n_t·τ_a with adapters, [`super::adapters::ADAPTER_TENSOR_S`])
/// ```
/// `Ψ_t` trainable parameters (LoRA: the adapters alone), `k_s` the state's bytes (4; 2 for
/// pure bf16), `n_t` parameter tensors ([`param_tensors`]; LoRA: two per adapted matrix), `τ`
/// 7.3 µs a launch, `t_0` 1.5 ms of host work a step (`_init_group`, grouping by device and
/// dtype, the CPU step counters), measured as the small models' excess over their traffic:
/// C01 9.5 ms for 355 M fp32 parameters (7.9 ms traffic), C09 15.0 (13.4), C22 2.0 (1.2, SGD with momentum);
/// it does not grow with the tensors (C25: over 3,000 expert tensors, 94.4 ms for 93.2 of
/// traffic).
///
/// # Example
/// Mistral 7B in pure bf16, foreach AdamW on an H200: 7.24e9 · 28.75 · 2 B / 4.27 TB/s =
/// 97.5 ms + 1.5 = 99.0 ms (measured C26: 97.3 ms).
pub fn optimizer_s(s: &Scenario, p: &Prepared, local: f64, hbm_gbps: f64) -> Option<f64> {
    let adapters = s.finetune.kind() != Finetune::Full;
    let ks = if s.numerics.precision == Precision::Bf16Pure && !adapters {
        2.0
    } else {
        4.0
    };
    let a = accesses(s, ks)?;
    let (params, tensors) = if adapters {
        let r = crate::train::lora_params(&p.arch, s.finetune.rank(), s.finetune.targets()) as f64;
        (
            r,
            2.0 * adapted_matrices(s, &p.arch)
                .map(|m| m.count as f64)
                .sum::<f64>(),
        )
    } else {
        (local, param_tensors(&p.arch))
    };
    let traffic = params * a * ks / (hbm_gbps * 1e9 * HBM_COPY);
    // Adapters pay their own cost per tensor ([`ADAPTER_TENSOR_S`]).
    let host = HOST_STEP_S
        + if adapters {
            tensors * ADAPTER_TENSOR_S
        } else {
            0.0
        };
    Some(if s.numerics.adam_impl == AdamImpl::Forloop && a > 9.5 {
        traffic.max(12.0 * tensors * LAUNCH_S) + host
    } else {
        traffic + host
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::query::decode;

    fn scen(q: &str) -> Scenario {
        decode(q).0.scenario
    }

    /// GPT-2 medium's parameter tensors, as `model.parameters()` counts them.
    #[test]
    fn gpt2_medium_tensors() {
        let s = scen("model=gpt2-medium");
        assert_eq!(param_tensors(&s.arch()), 292.0);
    }

    /// The optimizer's doc example: Mistral 7B, pure bf16, foreach AdamW on an H200.
    #[test]
    fn optimizer_by_hand() {
        let s = scen("model=mistral-7b&framework=pytorch&precision=bf16-pure&gpu=h200");
        let p = Prepared::of(&s);
        let psi = p.psi as f64;
        let t = optimizer_s(&s, &p, psi, 4800.0).unwrap_or(0.0);
        let want = psi * 28.75 * 2.0 / 4.273e12 + 1.5e-3;
        assert!((t - want).abs() < 1e-12, "{t} {want}");
        assert!((t - 0.0990).abs() < 0.002, "{t}");
    }

    /// The element-wise doc example: Llama 3.2 3B under autocast, 8,192 tokens.
    #[test]
    fn elementwise_by_hand() {
        let s = scen("model=llama-3.2-3b&framework=pytorch&precision=bf16");
        let e = elementwise_bytes(&s, &s.arch(), 8192.0, 1.0);
        assert_eq!(e, 8192.0 * 579_584.0);
        assert!((e / 1e9 - 4.75).abs() < 0.01);
    }

    /// The composed share (the Hugging Face RMSNorm and RoPE) of the element-wise doc
    /// example, Llama 3.2 3B under autocast: 2·3,072·28 + 4,096·36 = 319,488 B a token, the
    /// rest flat; GPT-2 (one-kernel LayerNorm, learned positions) has none.
    #[test]
    fn composed_split_by_hand() {
        let s = scen("model=llama-3.2-3b&framework=pytorch&precision=bf16");
        let (flat, composed) = elementwise_split(&s, &s.arch(), 8192.0, 1.0);
        assert_eq!(composed, 8192.0 * 319_488.0);
        assert_eq!(flat, 8192.0 * (579_584.0 - 319_488.0));
        let g = scen("model=gpt2-medium&framework=pytorch&precision=bf16");
        assert_eq!(elementwise_split(&g, &g.arch(), 8192.0, 1.0).1, 0.0);
    }

    /// The score bytes' doc example: autocast 32, pure bf16 26, fp32 36, the math fallback 28.
    #[test]
    fn score_bytes_by_hand() {
        let q = "model=llama-3.2-1b&framework=pytorch";
        assert_eq!(
            score_bytes(&scen(&format!("{q}&precision=bf16")), 2.0, false),
            32.0
        );
        assert_eq!(
            score_bytes(&scen(&format!("{q}&precision=bf16-pure")), 2.0, false),
            26.0
        );
        assert_eq!(
            score_bytes(&scen(&format!("{q}&precision=fp32")), 4.0, false),
            36.0
        );
        assert_eq!(
            score_bytes(&scen(&format!("{q}&precision=fp32")), 4.0, true),
            28.0
        );
    }

    /// OLMoE's expert loop: 64 experts of top 8 over 4,096 tokens, 512 rows each, and one
    /// launch each (0.467 ms a block forward); a dense model has none.
    #[test]
    fn expert_loop_by_hand() {
        let a = scen("model=olmoe-1b-7b").arch();
        assert_eq!(expert_rows(&a, 4096.0), (512.0, 64.0));
        assert!((expert_loop_s(&a) - 64.0 * 7.3e-6).abs() < 1e-15);
        assert_eq!(expert_loop_s(&scen("model=llama-3-8b").arch()), 0.0);
    }

    /// LoRA's optimizer steps the adapters alone: Llama 3 8B, r 64 on q and v, foreach AdamW
    /// (fp32 adapters: 24 accesses of 4 B) + the host's 1.5 ms + 15.7 µs for each of the
    /// 32 · 2 · 2 = 128 adapter tensors.
    #[test]
    fn lora_optimizer_by_hand() {
        let s = scen("model=llama-3-8b&framework=pytorch&finetune=lora&lora_rank=64&lora_targets=qv&gpu=h200");
        let p = Prepared::of(&s);
        // 32 layers · 64 · ((4,096 + 4,096) + (4,096 + 1,024)) = 27,262,976 parameters.
        let r = 27_262_976.0;
        let t = optimizer_s(&s, &p, p.psi as f64, 4800.0).unwrap_or(0.0);
        assert!(
            (t - (r * 24.0 * 4.0 / 4.273e12 + 1.5e-3 + 128.0 * 15.7e-6)).abs() < 1e-12,
            "{t}"
        );
    }

    /// The launch floor's doc example (Llama 3.2 1B, 45 kernels a block, 16.1 ms), and GPT-2
    /// at one sequence of 128 tokens, whose step the floor sets: 12 blocks of 23 kernels
    /// (two LayerNorms, four linears and their autocast casts, `gelu_new`'s eight, attention
    /// 3, residuals 2), (12·23·3 + 40)·7.3 µs = 6.34 ms.
    #[test]
    fn launch_floor_by_hand() {
        let s = scen("model=llama-3.2-1b&framework=pytorch");
        assert_eq!(block_kernels(&s, &s.arch()), 45.0);
        let t = launch_floor_s(&s, &s.arch(), 16.0, 0.0);
        assert!(
            (t - (16.0 * 45.0 * 3.0 + 40.0) * 7.3e-6).abs() < 1e-15 && (t - 0.0161).abs() < 1e-4
        );
        let q = "model=gpt2&framework=pytorch&gpu=h200&batch=1&seq=128";
        let g = scen(q);
        assert_eq!(block_kernels(&g, &g.arch()), 23.0);
        let st = crate::steptime::step_time(&g, &Prepared::of(&g)).map(|t| t.breakdown.compute_s);
        let want = (12.0 * 23.0 * 3.0 + 40.0) * 7.3e-6;
        assert!(
            st.is_some_and(|c| (c - want).abs() < 1e-12),
            "{st:?} vs {want}"
        );
    }
}
