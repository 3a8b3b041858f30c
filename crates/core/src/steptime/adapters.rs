//! LoRA's own work in a training step beyond its element-wise passes
//! ([`super::eager::elementwise_bytes`]): the two small GEMMs of every adapted matrix and
//! their four gradients, and the optimizer's cost per adapter tensor.

use crate::model::Arch;
use crate::scenario::{Finetune, Scenario};

/// The adapters' GEMMs of one block over `tokens` tokens on a `t`-way rank, `(forward,
/// backward)` seconds (0 without adapters).
///
/// # Formula
/// ```text
/// per adapted matrix (d_in → d_out, rank r), T tokens, each GEMM `G[M, K, N]` at `gemm`
/// (the step's `Hw::gemm_mkn_s`: the measured rate by shape, or the size curve):
///   forward   x·A  [T, d_in, r]        (x·A)·B  [T, r, d_out]
///   backward  dB: gᵀ·(xA) [d_out, T, r]   d(xA): g·Bᵀ [T, d_out, r]
///             dA: (d(xA))ᵀ·x [r, T, d_in]  dx: d(xA)·Aᵀ [T, r, d_in]
/// t_fwd = Σ_m (n_m/L)·(G[T,d_in,r] + G[T,r,d_out]) / t      (likewise t_bwd over its four)
/// ```
/// `[M, K, N]` as PyTorch runs them (PEFT's `lora_B(lora_A(x))`, autograd's data and weight
/// gradients: the adapters train, so both gradients run); `n_m` matrices of the family in
/// `L` blocks. GEMMs this thin (r = 8–64) sit at the bottom of the size curve: a few µs each
/// whatever their FLOPs, which is what makes them cost.
///
/// Source: PEFT 0.21 `tuners/lora/layer.py` (`Linear.forward`: `result + lora_B(lora_A(
/// dropout(x))) * scaling`). Measured: memfit had none of them; LoRA on every linear of
/// Llama 3 8B over 2,048 tokens (D19) was 0.78 of its measured step.
///
/// # Example
/// Llama 3 8B, r 16 on all 7 linears, 2,048 tokens, H200 bf16: 7 × 6 GEMMs a block, each of
/// 0.07–0.94 GFLOP, about 1 % of their FLOPs' worth at the peak but 6.6 µs each on average
/// on the size curve: 0.093 ms a block forward, 0.186 backward (9 ms a step over 32 blocks).
pub(crate) fn adapter_gemms_s(
    s: &Scenario,
    arch: &Arch,
    gemm: impl Fn(f64, f64, f64) -> f64,
    tokens: f64,
    t: f64,
) -> (f64, f64) {
    if s.finetune.kind() == Finetune::Full || arch.layers.get() == 0 {
        return (0.0, 0.0);
    }
    let r = s.finetune.rank() as f64;
    let l = arch.layers.get() as f64;
    let g = gemm;
    let (mut fwd, mut bwd) = (0.0, 0.0);
    for m in adapted_matrices(s, arch) {
        let (din, dout, share) = (m.inp as f64, m.out as f64, m.count as f64 / l);
        fwd += share * (g(tokens, din, r) + g(tokens, r, dout));
        bwd += share
            * (g(dout, tokens, r) + g(tokens, dout, r) + g(r, tokens, din) + g(tokens, r, din));
    }
    (fwd / t, bwd / t)
}

/// The optimizer's time per adapter tensor beyond its memory traffic, seconds
/// (**calibrated**): `torch.optim`'s foreach AdamW over PEFT's adapters takes about two
/// exposed launches a tensor (2 × 7.3 µs) more than its bytes and its 1.5 ms of host work,
/// where full models show none (C25: over 3,000 tensors, 1.4 ms beyond its traffic). The
/// cause is not found; the cost is read off the optimizer phases (`opt_s`).
///
/// # Formula
/// `t_opt = traffic + t_0 + n_t·τ_a`, `n_t` = 2 per adapted matrix, `τ_a` the median over
/// the calibration LoRA runs of `(opt_s − traffic − t_0)/n_t`: C15 15.8 µs (448 tensors),
/// C16 3.1 (128), C17 17.4 (224), D19 18.5 (448), D20 21.9 (448), D22 13.3 (392), D23 16.1
/// (224), and the same three C runs measured again (`cuda_h200/rerun`) 10.7, 15.6, 9.4:
/// median 15.7 µs. The rerun's spread (C16 2.5 → 4.1 ms) is the phase's noise.
///
/// # Example
/// Llama 3 8B, r 16 on all linears (448 tensors): 448 · 15.7 µs = 7.0 ms beside 0.9 ms of
/// traffic and 1.5 ms of host work (measured D19: 10.7 ms).
pub const ADAPTER_TENSOR_S: f64 = 15.7e-6;

/// The matrices LoRA adapts (the same filter as [`crate::train::lora_params`]).
pub(crate) fn adapted_matrices<'a>(
    s: &Scenario,
    arch: &'a Arch,
) -> impl Iterator<Item = crate::model::Linear> + 'a {
    use crate::model::LinearKind;
    use crate::scenario::LoraTargets;
    let targets = s.finetune.targets();
    arch.linears().into_iter().filter(move |m| match targets {
        LoraTargets::Qv => m.kind == LinearKind::Attn && (m.name == "q" || m.name == "v"),
        LoraTargets::Attn => m.kind == LinearKind::Attn,
        LoraTargets::Mlp => m.kind == LinearKind::Mlp,
        LoraTargets::All => matches!(m.kind, LinearKind::Attn | LinearKind::Mlp),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::query::decode;

    /// Llama 3 8B, r 16 on q (4,096 → 4,096) and v (4,096 → 1,024), 2,048 tokens, with
    /// each GEMM timed as its FLOPs (2·M·K·N): forward 2·T·16·(4,096 + 4,096) +
    /// 2·T·16·(4,096 + 1,024) a block, backward twice that; a full fine-tune has none.
    #[test]
    fn adapter_gemms_by_hand() {
        let q = "model=llama-3-8b&finetune=lora&lora_rank=16&lora_targets=qv";
        let s = decode(q).0.scenario;
        let flops = |m: f64, k: f64, n: f64| 2.0 * m * k * n;
        let t = 2048.0;
        let (f, b) = adapter_gemms_s(&s, &s.arch(), flops, t, 1.0);
        let want = 2.0 * t * 16.0 * (8192.0 + 5120.0);
        assert_eq!(f, want);
        assert_eq!(b, 2.0 * want);
        let full = decode("model=llama-3-8b").0.scenario;
        assert_eq!(
            adapter_gemms_s(&full, &full.arch(), flops, t, 1.0),
            (0.0, 0.0)
        );
    }
}
