//! Eager attention's transient tensors at inference: the scores at the moment of the
//! softmax (with the additive mask every layer reads) and the probabilities a layer returns
//! when asked for them; 0 for flash/SDPA attention.

use crate::expr::{Expr, Tok, Tok::*};
use crate::model::Arch;
use crate::scenario::Scenario;

/// Eager attention's score tensors at the moment of its softmax, for `tokens` queries over
/// `keys` keys, and the additive mask the model builds once per forward; 0 for flash/SDPA.
///
/// # Formula
/// ```text
/// A_e = b·⌈a/t⌉·T·S·(k + 4 + u) + b·T·S·k      (eager; u = 4 when k < 4, else 0)
/// A_e = b·⌈a/t⌉·T·S·2·k + b·T·S·k              (softmax in the model's dtype: GPT-2)
/// ```
/// The masked scores (`k`), their fp32 upcast that `softmax(…, dtype=float32)` takes first
/// when `k < 4` (`u`), and its fp32 output, alive together; then the 4-D additive mask
/// (`b·1·T·S`, model dtype) that every layer reads. `T` queries (`s` at prefill, 1 per
/// decoded token), `S` keys (`s`, then up to `s + n`). GPT-2's own eager attention takes
/// the softmax in the model's dtype: its peak is the score product and the scaled scores,
/// two tensors of `k` bytes (`Arch::softmax_in_dtype`; in fp32 both forms give 8 bytes).
/// Source: Hugging Face `eager_attention_forward` (transformers 5.24: matmul · scaling +
/// mask, `softmax(dtype=torch.float32).to(query.dtype)`); measured with MemTracker
/// (`tools/measure_hf.py`, Llama shape h = 256, a = 8, b = 1, s = 512, bf16: the prefill
/// working set 23.1 MB = 10·8·512² + 2·512² + the layer's other tensors).
///
/// GPT-2's form: traced with MemTracker (`prefill/gpt2/s/bf16/eager/ltk0/b1s512` peaks at the
/// `* scaling` multiply, modeling_gpt2.py:59, with two bf16 `[8, 512, 512]` tensors).
///
/// # Example
/// b = 1, a = 8, t = 1, T = S = 512, bf16 (k = 2, u = 4):
/// 8·512²·10 + 512²·2 = 20,971,520 + 524,288 = 21,495,808 B; GPT-2's form:
/// 8·512²·4 + 512²·2 = 8,912,896 B.
pub(super) fn eager_scores(
    s: &Scenario,
    arch: &Arch,
    k: u64,
    t: u64,
    tokens: u128,
    keys: u128,
) -> Expr {
    let kk = Sym("k", k as u128);
    if arch.softmax_in_dtype {
        return score_tensors(s, arch, t, tokens, keys, k, &[Num(2), Mul, kk, Mul]);
    }
    let u = Sym("u", if k < 4 { 4 } else { 0 });
    score_tensors(s, arch, t, tokens, keys, k, &[kk, Num(4), Add, u, Add, Mul])
}

/// Score-sized tensors of eager attention, `b·⌈a/t⌉·T·S·c + b·T·S·k` with the bytes per
/// score element `c` given as the tokens that multiply the stack's top (`c` = `k + 4 + u`,
/// `2·k` or `k`), plus the additive mask; 0 with flash/SDPA. See [`eager_scores`] and
/// [`eager_probs`] for the formulas and sources.
fn score_tensors(
    s: &Scenario,
    arch: &Arch,
    t: u64,
    tokens: u128,
    keys: u128,
    k: u64,
    per_element: &[Tok],
) -> Expr {
    if s.activations.attn != crate::scenario::Attn::Eager {
        return Expr::new(&[Num(0)]);
    }
    let b = Sym("b", s.workload.batch.get() as u128);
    let (tq, sk) = (Sym("T", tokens), Sym("S", keys));
    let heads = [
        b,
        Sym("a", arch.heads.get() as u128),
        Sym("t", t as u128),
        DivCeil,
        Mul,
        tq,
        Mul,
        sk,
        Mul,
    ];
    let mask = [b, tq, Mul, sk, Mul, Sym("k", k as u128), Mul, Add];
    Expr::new(&heads).then(per_element).then(&mask)
}

/// What eager attention leaves alive after it returns: the probabilities (the softmax's
/// output in the model's dtype, returned as `attn_weights` and held by the decoder layer's
/// locals through its MLP), and the additive mask; 0 for flash/SDPA (which return none).
///
/// # Formula
/// `W_e = b·⌈a/t⌉·T·S·k + b·T·S·k`
///
/// Source: Hugging Face decoder layers (transformers 5.24) keep the attention's second
/// output (`hidden_states, self_attn_weights = self.self_attn(…)`, or `_`) until they return;
/// traced with MemTracker on `prefill/gemma2/m/fp32/eager/ltk1/b2s384`: the peak is in the
/// last layer's MLP with the fp32 `[2, 6, 384, 384]` probabilities (7,077,888 B) alive.
///
/// # Example
/// b = 2, a = 6, t = 1, T = S = 384, fp32: 2·6·384²·4 + 2·384²·4 = 8,257,536 B.
pub(super) fn eager_probs(
    s: &Scenario,
    arch: &Arch,
    k: u64,
    t: u64,
    tokens: u128,
    keys: u128,
) -> Expr {
    score_tensors(s, arch, t, tokens, keys, k, &[Sym("k", k as u128), Mul])
}
