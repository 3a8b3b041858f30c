//! Which kernel PyTorch's `scaled_dot_product_attention` runs for a Hugging Face model, and
//! so what it saves for the backward: the choice CUDA makes and a CPU tracker cannot show.

use super::Shape;
use crate::model::Arch;
use crate::scenario::{Attn, Device, Framework, Scenario};

/// The kernel behind `attn=sdpa` (framework=pytorch).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SdpaKernel {
    /// FlashAttention-2 (CUDA, 16-bit, no mask, d ≤ 256): q, k, v as given (K/V unexpanded
    /// under `enable_gqa`), the output and the log-sum-exp.
    Flash,
    /// Memory-efficient attention (CUTLASS; CUDA): K/V repeated to every head by the model
    /// (`repeat_kv`), the log-sum-exp, and — when the model passes a mask — the mask as a
    /// float bias in q's dtype, one copy per layer.
    Efficient {
        /// The model passes a mask (a sliding window at least as long as the sequence).
        masked: bool,
    },
    /// The math fallback (`_scaled_dot_product_attention_math`): scaled q, K/V expanded to
    /// every head, and the s² probabilities — what eager attention saves.
    Math,
    /// PyTorch's CPU kernel: K/V repeated to every head, no scores (what a CPU memory
    /// tracker measures).
    Cpu,
}

/// The kernel PyTorch dispatches `attn=sdpa` to for a Hugging Face model, or `None` when the
/// attention is not SDPA under plain PyTorch (Megatron and DeepSpeed keep their own
/// kernels; memfit's `Attn` then says what is saved).
///
/// # Formula
/// ```text
/// masked  = W > 0 ∧ s ≥ W ∧ 2·L_w ≥ L      (a window the sequence reaches, on most layers)
/// gqa     = a_kv < a ∧ ¬masked              (Hugging Face passes enable_gqa=True only without a mask)
/// fp32    = k ≥ 4                           (q's dtype: fp32 weights without autocast)
/// Flash      if ¬fp32 ∧ ¬masked ∧ d ≤ 256 ∧ d mod 8 = 0
/// Efficient  if ¬gqa ∧ d mod (fp32 ? 4 : 8) = 0
/// Math       otherwise (fp32 with GQA, or a head too wide for flash with GQA)
/// ```
/// Symbols: `W` the window and `L_w` the windowed layers of `L` (tokens, layers), `s` the
/// sequence (tokens), `a`, `a_kv` the query and key/value heads, `d` the head width, `k` the
/// activation bytes.
///
/// Source: transformers 5.17 `integrations/sdpa_attention.py` (`use_gqa_in_sdpa`: torch ≥ 2.5
/// and no mask, else `repeat_kv`) and `masking_utils._ignore_causal_mask_sdpa` (the mask is
/// skipped only while `kv_length < sliding_window`); PyTorch 2.11 `sdp_utils.cpp`
/// (`use_flash_attention`: fp16/bf16, head dim ≤ 256, no attn_mask; `use_mem_efficient_attention`:
/// no `enable_gqa`). Found on the CUDA calibration runs
/// (`../shared/measurements/cuda-h200/train.jsonl`): fp32 with GQA keeps eager's s² scores
/// (C04, C07, C23 within 0.1 % as `attn=eager`), 16-bit with GQA saves K/V unexpanded (C06,
/// C09, C24 within 0.1 % as `attn=flash`), Mistral 7B at s = W = 4,096 saves the bias (C26:
/// 32 · 4,096² · 2 B = 1.07 GiB, the whole miss).
///
/// # Example
/// Qwen2.5-0.5B (a = 14, a_kv = 2, d = 64, no window), fp32, s = 2,048: gqa, fp32 → Math;
/// the same in bf16 → Flash; Mistral 7B (W = 4,096 on all 32 layers) at s = 4,096, bf16:
/// masked → Efficient { masked: true }.
pub fn sdpa_kernel(s: &Scenario, arch: &Arch, x: &Shape) -> Option<SdpaKernel> {
    if s.activations.attn != Attn::Sdpa || s.stack.framework != Framework::Pytorch {
        return None;
    }
    if s.runtime.device == Device::Cpu {
        return Some(SdpaKernel::Cpu);
    }
    let w = arch.window as u128;
    let masked = w > 0 && x.s >= w && 2 * arch.local_layers as u128 >= arch.layers.get() as u128;
    let gqa = x.kv < x.a && !masked;
    let fp32 = x.k >= 4;
    let flash = !fp32 && !masked && x.d <= 256 && x.d.is_multiple_of(8);
    let efficient = !gqa && x.d.is_multiple_of(if fp32 { 4 } else { 8 });
    Some(if flash {
        SdpaKernel::Flash
    } else if efficient {
        SdpaKernel::Efficient { masked }
    } else {
        SdpaKernel::Math
    })
}

/// The attention whose saved tensors the memory model counts: `attn` with SDPA resolved to
/// the kernel that runs (`sdpa_kernel`): flash as `Flash`, the math fallback as `Eager`, the
/// memory-efficient and CPU kernels as `Sdpa` (K/V repeated, log-sum-exp).
pub fn saved_attn(s: &Scenario, arch: &Arch, x: &Shape) -> Attn {
    match sdpa_kernel(s, arch, x) {
        Some(SdpaKernel::Flash) => Attn::Flash,
        Some(SdpaKernel::Math) => Attn::Eager,
        Some(SdpaKernel::Efficient { .. } | SdpaKernel::Cpu) => Attn::Sdpa,
        None => s.activations.attn,
    }
}
