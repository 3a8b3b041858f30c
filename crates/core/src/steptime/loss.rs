//! The cross-entropy loss's memory-bound passes over the logits.

use super::{eager, Ctx, HBM_EFFICIENCY};
use crate::scenario::{CeFusion, Framework};

/// The cross-entropy loss over one micro-batch's logits on one rank, forward and backward,
/// seconds: memory-bound passes over `T × V/t` values, most of them in fp32.
///
/// # Formula
/// `t = T · V/t · β / (0.8·HBM)`, `β` bytes per logit:
/// - Megatron's `vocab_parallel_cross_entropy` (Megatron-LM
///   `megatron/core/tensor_parallel/cross_entropy.py`, d98e8a6): `.float()` (read 2, write
///   4), max (4), subtract in place (8), `exp` in place (8), sum (4), divide in place (8);
///   backward: multiply in place (8), the fp32 gradient cast for the output layer (6): 52.
/// - PyTorch's `cross_entropy` under autocast (fp32 op list): the upcast (6),
///   `log_softmax` reading a row three times and writing it (16), its backward reading the
///   gradient and the output, reducing, writing (16), the cast back (6): 44.
/// - `ce_fusion=native` (Megatron's `fused_vocab_parallel_cross_entropy`, JIT-fused; core
///   0.8 `megatron/core/fusions/fused_cross_entropy.py`): upcast + max (6), subtract + `exp`
///   (8), divide (8); backward: multiply + the cast to 16 bits (6): 28.
/// - `ce_fusion=te` (Transformer Engine's Triton `parallel_cross_entropy` before
///   2026-07): the online softmax reads the logits (2), the loss kernel reads them again and
///   writes the gradient in their place (4); backward: the in-place multiply (4): 10.
///
/// Under Hugging Face modules, Gemma 2's `final_logit_softcapping` adds its three passes
/// over the `k`-byte logits ([`softcap_bytes`]) at the copy rate.
///
/// # Example
/// Llama 3 8B (V = 128,256) at 8,192 tokens, t = 1, H100 (3,350 GB/s), Megatron:
/// 8,192 · 128,256 · 52 B = 54.6 GB → 20.4 ms per micro-batch.
pub(super) fn loss_time(x: &Ctx) -> f64 {
    let logits = x.tokens * (x.arch.vocab.get() as f64 / x.t);
    let softcap = if x.arch.softcap && eager::applies(x.s) {
        logits * softcap_bytes(x.k) / (x.hw.hbm * 1e9 * eager::HBM_COPY)
    } else {
        0.0
    };
    let beta = match (x.s.stack.framework, x.s.runtime.ce_fusion) {
        (Framework::Pytorch, _) => 44.0,
        (Framework::Megatron, CeFusion::Native) => 28.0,
        (Framework::Megatron, CeFusion::Te) => 10.0,
        _ => 52.0,
    };
    logits * beta / (x.hw.hbm * 1e9 * HBM_EFFICIENCY) + softcap
}

/// Bytes per value of Gemma 2's soft-capping, forward and backward, of `k`-byte values:
/// `x / cap`, `tanh`, `· cap` each read and write (6k); backward the two products' gradients
/// (2k each) and `tanh`'s, which reads the gradient and its output and writes (3k): 13k.
/// Source: transformers 5.17 `modeling_gemma2.py` (`Gemma2ForCausalLM.forward`: `logits =
/// logits / cap; logits = torch.tanh(logits); logits = logits * cap`; the same on the scores
/// in `eager_attention_forward` with `attn_logit_softcapping`).
///
/// # Example
/// Gemma 2 2B (V 256,000) over 2,048 tokens in bf16: 524.3 M logits · 26 B = 13.6 GB,
/// 3.2 ms at 4.27 TB/s.
pub(crate) fn softcap_bytes(k: f64) -> f64 {
    13.0 * k
}
