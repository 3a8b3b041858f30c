//! Activations across a pipeline: the layers of a stage, micro-batches in flight under
//! each schedule, a checkpointed layer's input, and the logits.

use super::vars::*;
use super::*;
use crate::scenario::Count;

/// Layers on pipeline stage `i` of `p` (earlier stages take the remainder).
pub fn stage_layers(layers: u32, p: Count, i: u32) -> u32 {
    let p = p.get();
    layers / p + u32::from(i < layers % p)
}

/// Model chunks whose activations stage `i` holds at its peak, and the chunks per
/// micro-batch: `(C, v)`; the stage holds `C/v` micro-batches' worth.
///
/// # Formula
/// ```text
/// GPipe:        C = m                                   v = 1
/// 1F1B:         C = min(p − i, m)                       v = 1
/// interleaved:  C = min(2·(p − i − 1) + (v − 1)·p + 1, m·v)     (chunks of L_i/v layers)
/// ```
/// `m` micro-batches per step, `p` stages evaluated (`pp`, capped at the layer count
/// like the stages themselves, so that the last stage holds one micro-batch under
/// 1F1B), `v` = [`Scenario::virtual_stages`]. The interleaved count is Megatron-LM's
/// warm-up (`get_forward_backward_func`: `(p − i − 1)·2 + (v − 1)·p` chunk forwards,
/// capped at `m·v`) plus the steady state's one more forward before a backward frees a
/// chunk. On the first stage with `m > p` it equals Korthikanti et al. §4.2.3's factor
/// `p·(1 + (p − 1)/(p·v))` micro-batches; on later stages it is larger than that factor
/// applied to `p − i` (the last stage still warms up `(v − 1)·p` chunks), which the
/// step timeline's schedule walk showed (`core::timeline`).
///
/// # Example
/// p = 4, v = 2, m = 8: stage 0 holds 11 chunks = 5.5 micro-batches; stage 3 holds
/// 5 chunks = 2.5 (the first-stage factor would have given 1.375).
pub fn in_flight(s: &Scenario, p: Count, i: u32) -> (u128, u128) {
    let p = p.get() as u128;
    let i = (i as u128).min(p - 1);
    let m = s.workload.microbatches.get() as u128;
    match (s.parallel.schedule, s.virtual_stages().get() as u128) {
        (Schedule::Gpipe, _) => (m, 1),
        (_, 1) => ((p - i).min(m), 1),
        (_, v) => ((2 * (p - i - 1) + (v - 1) * p + 1).min(m * v), v),
    }
}

/// Layers of a stage's model chunk (`L_i/v`, at least 1) and how many of them full
/// recomputation checkpoints: `ckpt_layers` per chunk (0 = all), as Megatron-LM's
/// `recompute_num_layers` counts per virtual pipeline stage.
pub fn chunk_layers(s: &Scenario, stage_layers: u32) -> (Count, u128) {
    let lc = crate::scenario::div_at_least_one(stage_layers, s.virtual_stages());
    let n = if s.activations.ckpt_layers == 0 {
        lc.get() as u128
    } else {
        (s.activations.ckpt_layers as u128).min(lc.get() as u128)
    };
    (lc, n)
}

/// Bytes of one block's checkpointed input (what full recompute keeps per layer):
/// `T·h·k'/r`, `k'` the residual stream's bytes (4 under autocast, see [`Shape::res`]).
pub fn layer_input_bytes(s: &Scenario, x: &Shape) -> u128 {
    let r = if s.parallel.sp { x.t } else { 1 };
    x.b * x.sl * x.h * x.res / r
}

/// The last stage's output layer: final norm, LM head input, logits and the loss.
///
/// # Formula
/// ```text
/// PyTorch / DeepSpeed (HF):  2·T·h·k/r + n_s·T + κ·T·h/r + ⌈T·V·(k + 12)/t⌉   (the final
///                            norm as `push_norm` counts a block's; at the loss's backward: the
///                            logits the caller still holds, the log-softmax output the loss
///                            saved, its gradient and the gradient of its input, all fp32;
///                            the forward's fp32 upcast (k < 4) is already freed: k + 4 + 4 is
///                            the smaller forward moment)
/// PyTorch, ce_fusion=flash:  the final norm + ⌈2·T·V·k/t⌉  (flash-attn's cross entropy: the
///                            16-bit logits and their 16-bit gradient)
/// Megatron:                  2·T·h·k + ⌈4·T·V/t⌉            (vocab-parallel cross entropy: the fp32
///                            softmax; `ce_fusion=te`: ⌈k·T·V/t⌉, the gradient over the logits)
/// PyTorch under autocast:    4·T·h/r + n_s·T + κ·T·h/r + c_o·T·h·k/r + ⌈T·V·(k + 12)/t⌉   (the final norm
///                            runs in fp32 on the fp32 residual, see `push_norm`; the head
///                            saves its 16-bit cast of the norm's output)
/// ```
/// Symbols as in [`vars`](super::vars): `T = b·s'` tokens, `V` vocabulary, `t` TP
/// (vocab-parallel head), `c_o = 1` (the head reads the final norm).
/// Source: Hugging Face `LlamaForCausalLM.forward` (`logits.float()` then
/// `CrossEntropyLoss`); Megatron `vocab_parallel_cross_entropy`; measured with MemTracker
/// (`tools/measure_pytorch.py`): fp32 runs hold the fourth `4·T·V` too (what this changed:
/// docs/validation.md).
///
/// # Example
/// Llama-3-8B under DeepSpeed, b = 1, s = 8192, bf16: 2·8192·4096·2 + 4·8192 + 4·8192·4096 +
/// 8192·128256·14 = 14,977,892,352 B.
pub fn logits_bytes(s: &Scenario, arch: &Arch, x: &Shape) -> u128 {
    logits_terms(s, arch, x).iter().map(|t| t.bytes).sum()
}

/// Whether the loss is flash-attn's fused cross entropy (`ce_fusion=flash` under PyTorch).
pub fn flash_ce(s: &Scenario) -> bool {
    s.stack.framework == Framework::Pytorch
        && s.runtime.ce_fusion == crate::scenario::CeFusion::Flash
}

/// Whether the training loop holds the logits through the loss's backward (`loss=loop`
/// under `framework=pytorch`; the DeepSpeed framework's HF loop is counted so too).
/// Under `loss=model` (the default) the model's output is dropped before `backward()`.
pub fn held_by_loop(s: &Scenario) -> bool {
    s.stack.framework != Framework::Pytorch || s.workload.loss == Loss::Loop
}

/// The terms of [`logits_bytes`]: what the output layer saves, each a formula over
/// [`vars`].
pub fn logits_terms(s: &Scenario, arch: &Arch, x: &Shape) -> Terms {
    let mut v = Terms::new(vars(s, arch, x));
    if s.stack.framework == Framework::Megatron {
        v.push("LM head input", HEAD_INPUT_MEGATRON);
        if s.runtime.ce_fusion == crate::scenario::CeFusion::Te {
            v.push(
                "16-bit logits, overwritten by their gradient (Transformer Engine's fused cross entropy)",
                LOSS_TE,
            );
        } else {
            v.push("fp32 softmax (vocab-parallel cross entropy)", LOSS_MEGATRON);
        }
    } else {
        push_norm(s, &mut v, "final norm + LM head input", Reader::Head);
        if arch.softcap {
            v.push(
                "final-logit soft-capping (the tanh's output)",
                SOFTCAP_LOGITS,
            );
        }
        if flash_ce(s) {
            v.push(
                "16-bit logits and their gradient (flash-attn cross entropy)",
                LOSS_FLASH,
            );
        } else if held_by_loop(s) {
            v.push(
                "logits, fp32 log-softmax, its gradient, the logits' gradient",
                LOSS_HF,
            );
        } else {
            let what = "fp32 log-softmax, its gradient, the logits' gradient (the output dropped)";
            v.push(what, LOSS_HF_MODEL);
        }
    }
    v
}
