//! Inference memory of the Mamba and short-convolution blocks of state-space and hybrid
//! models (Hugging Face `generate`): the per-layer conv and recurrent state, constant in
//! the sequence length, and the prefill's transient of the scan, which depends on whether
//! the fused kernels are installed (`ssm_kernels`).
//!
//! The formulas are read from the sources collected in `/work/research/ssm-memory.md`
//! (transformers 5.24 / 4.57.6, mamba_ssm 2.3.2, causal-conv1d 1.6.1); the torch
//! fallbacks' transients were counted from the code, not measured.

use crate::expr::{Expr, Tok::*};
use crate::ledger::{Component, Ledger, Location, Mech, Phase};
use crate::model::{Arch, Lightning, LinearAttn, Ssm};
use crate::scenario::{Scenario, SsmKernels};

/// Mamba-1's scan chunk in the fused kernel (`selective_scan.cpp`: `n_chunks = ⌈s/2048⌉`).
const SCAN_CHUNK: u128 = 2048;

const SRC_STATE: &str = "transformers 5.24 cache_utils.LinearAttentionLayer.lazy_initialization (conv state: K columns in the dtype of the tensor passed; recurrent state: zeros_like(final_state), fp32 from mamba_ssm's SelectiveScanFn / _state_passing_fwd and from the torch fallback) fed by MambaMixer.forward, Mamba2Mixer.forward, Lfm2ShortConv.forward";

/// Bytes of one Mamba / Mamba-2 block's conv and SSM state for one sequence (transformers
/// 5.x).
///
/// # Formula
/// ```text
/// Mamba-1:  d·K·e + d·N·4                     conv (b, d, K) in the model dtype, ssm (b, d, N) fp32
/// Mamba-2:  (d + 2·G·N)·K·e + H·P·N·4          conv (b, d + 2GN, K), ssm (b, H, P, N) fp32; H·P = d
/// ```
/// `d` inner width, `N` state size, `K` conv kernel, `G` B/C groups, `e` bytes of the model
/// dtype. Source: transformers 5.24 `cache_utils.LinearAttentionLayer.lazy_initialization`
/// (the conv state keeps `K` columns, not `K − 1`; the recurrent state is `zeros_like` the
/// fp32 final state), `modeling_mamba.MambaMixer.forward`, `modeling_mamba2.Mamba2Mixer.forward`.
///
/// # Example
/// Mamba-130M (d = 1,536, N = 16, K = 4), bf16: 1,536·4·2 + 1,536·16·4 = 110,592 B, ×24
/// layers = 2,654,208 B = 2.53 MiB per sequence. Mamba-2 2.7B (d = 5,120, N = 128, G = 1,
/// K = 4): 5,376·4·2 + 5,120·128·4 = 2,664,448 B, ×64 = 170,524,672 B = 162.6 MiB.
pub(crate) fn mamba_state_bytes(m: &Ssm, e: u128) -> u128 {
    let (d, n, k) = (m.d_inner as u128, m.d_state as u128, m.conv_kernel as u128);
    let conv_channels = if m.version == 2 {
        d + 2 * m.groups as u128 * n
    } else {
        d
    };
    conv_channels * k * e + d * n * 4
}

/// Bytes of one short-convolution block's state (LFM2) for one sequence: `h·K·e` (conv state
/// `(b, h, K)` in the model dtype, no recurrent state). Source: transformers 5.24
/// `modeling_lfm2.Lfm2ShortConv.forward` (`update_conv_state(B·x, conv_kernel_size =
/// conv_L_cache)`).
///
/// # Example
/// LFM2-350M (h = 1,024, K = 3), bf16: 6,144 B per conv block, ×10 = 61,440 B.
pub(crate) fn conv_state_bytes(arch: &Arch, e: u128) -> u128 {
    arch.hidden.get() as u128 * arch.short_conv_kernel() as u128 * e
}

/// Bytes of one gated-DeltaNet block's state for one sequence (transformers 5.x): the conv
/// state over q, k and v in the model dtype and the fp32 recurrent state.
///
/// # Formula
/// ```text
/// (2·H_k·d_k + H_v·d_v)·K·e + H_v·d_k·d_v·4
/// ```
/// Source: transformers 5.24 `modeling_qwen3_next.Qwen3NextGatedDeltaNet.forward`
/// (`update_conv_state(mixed_qkv)`, the recurrent state `[b, H_v, d_k, d_v]` of
/// `torch_chunk_gated_delta_rule`, fp32) and fla 0.5.2 `chunk_delta_h.py` (`final_state`
/// fp32).
///
/// # Example
/// Qwen3-Next-80B-A3B (H_k 16, H_v 32, d_k = d_v = 128, K 4), bf16: 8,192·4·2 +
/// 32·128·128·4 = 2,162,688 B, ×36 blocks = 77,856,768 B (74.25 MiB) per sequence.
pub(crate) fn linear_state_bytes(g: &LinearAttn, e: u128) -> u128 {
    let (hk, hv, dk, dv) = (
        g.k_heads as u128,
        g.v_heads as u128,
        g.k_dim as u128,
        g.v_dim as u128,
    );
    (2 * hk * dk + hv * dv) * g.conv_kernel as u128 * e + hv * dk * dv * 4
}

/// Bytes of one lightning-attention block's state for one sequence (MiniMax-Text-01): the
/// running `K^T V` of every head, in the model dtype, no convolution.
///
/// # Formula
/// ```text
/// H·d·d·e
/// ```
/// `H` heads, `d` head width, `e` bytes of the model dtype. Source: transformers
/// `models/minimax/modeling_minimax.py` (`MiniMaxLightningAttention.forward`:
/// `attn_weights_inter = torch.zeros(b, H, d, d).to(value_states)`, updated block by block
/// and kept by `MiniMaxCache.set_linear_cache`; read at commit 000c33f); vLLM 0.33
/// `MambaStateShapeCalculator.linear_attention_state_shape` (`(H/t, d, d)`) in
/// `linear_attention_state_dtype` (the model dtype).
///
/// # Example
/// MiniMax-Text-01 (H 64, d 128), bf16: 64·128·128·2 = 2,097,152 B per block, ×70 lightning
/// blocks = 146,800,640 B (140 MiB) per sequence.
pub(crate) fn lightning_state_bytes(x: &Lightning, e: u128) -> u128 {
    x.heads as u128 * x.head_dim as u128 * x.head_dim as u128 * e
}

/// The conv and recurrent state of the Mamba and short-convolution blocks at the end of the
/// prefill and of decoding (the same bytes: constant in the sequence length), as cache
/// items beside the attention blocks' KV cache.
///
/// # Formula
/// ```text
/// state = ⌈b·(L_m·S_m + L_c·S_c + L_l·S_l) / t⌉
/// ```
/// (`L_l`, `S_l` the linear-attention blocks and [`linear_state_bytes`] or, for lightning
/// attention, [`lightning_state_bytes`])
/// `L_m`, `L_c` the stage's Mamba and convolution blocks (`min(⌈L/p⌉, count)`, an upper
/// bound for p > 1), `S_m` = [`mamba_state_bytes`], `S_c` = [`conv_state_bytes`], `b` batch,
/// `t` tensor-parallel degree (the channels split like the heads). Source: see
/// [`mamba_state_bytes`]. Linear-attention blocks are not counted (a warning says so).
///
/// # Example
/// Mamba-2 2.7B, b = 8, bf16: 8·64·2,664,448 = 1,364,197,376 B (1.27 GiB).
pub(crate) fn state_items(s: &Scenario, arch: &Arch, t: u64, p: u64, ledger: &mut Ledger) {
    let e = s.numerics.precision.compute_bytes() as u128;
    let stage = (arch.layers.get() as u128).div_ceil(p as u128);
    let lm = stage.min(arch.mamba_layers as u128);
    let lc = stage.min(arch.conv_layers as u128);
    let sm = arch.ssm_shape().map_or(0, |m| mamba_state_bytes(&m, e));
    let sc = conv_state_bytes(arch, e);
    let ll = stage.min(arch.modelled_linear_layers() as u128);
    let sl = match (arch.linear_shape(), arch.lightning_shape()) {
        (Some(g), _) => linear_state_bytes(&g, e),
        (None, Some(x)) => lightning_state_bytes(&x, e),
        (None, None) => 0,
    };
    if lm * sm + lc * sc + ll * sl == 0 {
        return;
    }
    let b = s.workload.batch.get() as u128;
    let x = Expr::new(&[
        Sym("b", b),
        Sym("L_m", lm),
        Sym("S_m", sm),
        Mul,
        Sym("L_c", lc),
        Sym("S_c", sc),
        Mul,
        Add,
        Sym("L_l", ll),
        Sym("S_l", sl),
        Mul,
        Add,
        Mul,
        Sym("t", t as u128),
        DivCeil,
    ]);
    let ctx = || {
        let kind = match arch.ssm_shape() {
            Some(m) if m.version == 2 => "S_m = (d + 2GN)·K·e + d·N·4 (Mamba-2)",
            Some(_) => "S_m = d·K·e + d·N·4 (Mamba)",
            None => "no Mamba blocks",
        };
        let lin = if arch.lightning_shape().is_some() {
            "S_l = H·d·d·e (lightning attention, in the model dtype)"
        } else {
            "S_l = (2·H_k·d_k + H_v·d_v)·K·e + H_v·d_k·d_v·4 (gated DeltaNet)"
        };
        format!("{kind}; S_c = h·K·e (short convolution); {lin}; conv state in the model dtype, SSM / recurrent state fp32 (transformers 5.x)")
    };
    let note = "the Mamba / convolution / linear-attention blocks' conv and SSM state, constant in the tokens";
    let (comp, gpu) = (Component::KvCache, Location::Gpu);
    for (phase, mech) in [
        (Phase::Prefill, Mech::KvPrefill),
        (Phase::Decode, Mech::KvDecode),
    ] {
        ledger.push_expr(&[phase], mech, comp, gpu, &x, note, ctx, SRC_STATE);
    }
}

/// One Mamba block's transient at the prefill (`no_grad`, freed after the block), in bytes,
/// by `ssm_kernels`, with a short description.
///
/// # Formula
/// ```text
/// E = b·d·s·N,  s_pad = ⌈s/l⌉·l,  c = ⌈s/l⌉,  l = chunk (`ssm_chunk`, 256),  P = d/H
/// Mamba-1, torch:        12·E + 9·b·s·d·e            discrete_A, discrete_B, deltaB_u (b, d, s, N)
///                          fp32; the block's in_proj output (2d wide), and seven d-wide
///                          tensors: the convolved x, dt, dt + bias, the per-step outputs and
///                          their stack, D·x, the gated output
/// Mamba-1, fused:        b·d·⌈s/2048⌉·2N·4 + 2·b·d·s·e    the scan's chunk states, out and out_z
/// Mamba-2, torch-naive:  b·s_pad·H·4·(l·max(N, P) + 3·l + 2·N)
///                          G_intermediate (b, c, l, l, H, N) or the Y_diag product (…, P), with
///                          L, G, M (b, H, c, l, l) and B, C repeated to H heads, all fp32
/// Mamba-2, torch:        b·H·4·(3·s_pad·l + s_pad·(7·P + 3·N) + (c + 2)·P·N)
///                          (einsum, transformers ≥ 5.18; alive together at the output's
///                          `.contiguous()`: G, L, M (b, H, c, l, l); D_residual, the chunked
///                          x·dt, B, C and B_decay; Y_diag, C·states, Y_off, their sum and
///                          its copy; the c + 1 chunk states and the zero initial state,
///                          all fp32), + b·s·(3·d + 4·G·N + H)·e: the block's in_proj
///                          output (2d + 2GN + H wide) and the convolution's (d + 2GN)
/// Mamba-2, fused:        b·c·H·P·N·(4 + e) + b·c·G·l²·4 + b·s·d·e
///                          chunk states fp32 and in C's dtype, CB fp32, the output
/// ```
/// Sources: transformers 5.24 `modeling_mamba.mamba_selective_scan` (4.57.6
/// `MambaMixer.slow_forward`: the same math); transformers 4.57.6 / 5.0–5.17
/// `Mamba2Mixer.torch_forward` (`G_intermediate = C[:, :, :, None, :, :] * B[:, :, None, :, :, :]`);
/// transformers 5.24 `mamba2_chunk_scan` (`torch.einsum("bclhn,bcshn->bclsh", C, B)`);
/// mamba_ssm 2.3.2 `csrc/selective_scan/selective_scan.cpp` and
/// `ops/triton/ssd_combined.py::_mamba_chunk_scan_combined_fwd`. Counted from the code
/// (research notes `ssm-memory.md` §1.7–1.8); the Mamba-2 torch term read off the live
/// tensors at the peak of `prefill/mamba2/s/fp32/eager/ltk1/b2s256`
/// (`tests/data/hf_ssm_measurements.json`, a calibration run: 21,669,472 B of activations,
/// the scan's part 15.1 MB = this formula at b 2, H 8, P = N = 64, s = 256, l = 64, c = 4:
/// 64·(49,152 + 147,456 + 24,576) = 14,155,776 B and the 1 MB of the x·dt not yet freed).
///
/// # Example
/// Mamba-130M (d = 1,536, N = 16), b = 8, s = 1,024, bf16, torch: 12·201,326,592 +
/// 9·8,192·1,536·2 = 2,415,919,104 + 226,492,416 = 2,642,411,520 B per block. Mamba-2 2.7B (d = 5,120, N = 128, H = 80, P = 64),
/// b = 8, s = 2,048, torch-naive: G_intermediate alone is 8·2,048·256·80·128·4 =
/// 171,798,691,840 B (171.8 GB); torch (einsum, l = 256, c = 8): 2,560·(1,572,864 +
/// 917,504 + 786,432 + 81,920) + 16,384·15,952·2 = 8,598,323,200 + 522,715,136 =
/// 9,121,038,336 B.
pub(crate) fn scan_transient(s: &Scenario, m: &Ssm) -> (u128, &'static str) {
    let e = s.numerics.precision.compute_bytes() as u128;
    let (b, sq) = (s.workload.batch.get() as u128, s.workload.seq.get() as u128);
    let (d, n) = (m.d_inner as u128, m.d_state as u128);
    let kernels = s.runtime.ssm_kernels;
    if m.version != 2 {
        return match kernels {
            SsmKernels::Fused => (
                b * d * sq.div_ceil(SCAN_CHUNK) * 2 * n * 4 + 2 * b * d * sq * e,
                "Mamba, fused selective scan: its chunk states b·d·⌈s/2048⌉·2N·4 and out, out_z 2·b·d·s·e",
            ),
            _ => (
                12 * b * d * sq * n + 9 * b * sq * d * e,
                "Mamba, torch fallback: discrete_A, discrete_B and deltaB_u, each (b, d, s, N) fp32 = 12·b·d·s·N, beside the block's in_proj output and seven d-wide tensors 9·b·s·d·e",
            ),
        };
    }
    let (h, g, l) = (m.heads as u128, m.groups as u128, m.chunk_len());
    let c = sq.div_ceil(l);
    let s_pad = c * l;
    let p = d.checked_div(h).unwrap_or(0);
    match kernels {
        SsmKernels::Fused => (
            b * c * h * p * n * (4 + e) + b * c * g * l * l * 4 + b * sq * d * e,
            "Mamba-2, fused chunk scan: chunk states b·c·H·P·N·(4 + e), CB b·c·G·l²·4, out b·s·d·e",
        ),
        SsmKernels::TorchEinsum => (
            b * h * 4 * (3 * s_pad * l + s_pad * (7 * p + 3 * n) + (c + 2) * p * n)
                + b * sq * (3 * d + 4 * g * n + h) * e,
            "Mamba-2, torch fallback (einsum, transformers ≥ 5.18): G, L, M (b, H, c, l, l), seven P-wide and three N-wide (b, s, H) tensors and the chunk states, fp32",
        ),
        SsmKernels::Torch | SsmKernels::TorchNaive => (
            b * s_pad * h * 4 * (l * n.max(p) + 3 * l + 2 * n),
            "Mamba-2, naive torch fallback (transformers ≤ 5.17): G_intermediate (b, c, l, l, H, N) fp32 (or the Y_diag product, P wide), beside L, G, M and B, C repeated to H heads",
        ),
    }
}

/// One gated-DeltaNet block's transient at the prefill, in bytes, by `ssm_kernels`.
///
/// # Formula
/// ```text
/// fused (fla):  b·⌈s/64⌉·H_v·d_k·d_v·e + 3·b·s·H_v·d_v·e + b·s·H_v·64·e
///                (the chunk states h, w/u/v_new, the intra-chunk A)
/// torch:        10·b·H_v·s_pad·max(d_k, d_v)·4 + 3·b·H_v·s_pad·64·4,  s_pad = ⌈s/64⌉·64
///                (q, k, v, k_beta, v_beta, decayed k_beta, new values, k_cumdecay and the
///                 output, fp32; three (b, H_v, c, 64, 64) chunk matrices)
///               + b·s·(2·H_k·d_k + 2·V + 2·H_v)·e + b·s·V·e + b·s·C·e + b·s·H_v·(3·e + 4)
///                (beside the rule in its block: in_proj_qkvz's and in_proj_ba's outputs, z's
///                 reshaped copy, the convolution's SiLU output, C = 2·H_k·d_k + V wide,
///                 V = H_v·d_v; b's and a's copies, β = b.sigmoid() and the fp32 decay g)
/// ```
/// Sources: fla 0.5.2 `ops/gated_delta_rule/chunk.py` (`h = k.new_empty(B, NT, HV, K, V)`),
/// transformers 5.24 `modeling_qwen3_next.torch_chunk_gated_delta_rule` (research notes
/// §1.9) and `Qwen3NextGatedDeltaNet.forward` (`fix_query_key_value_ordering`,
/// `causal_conv1d_fn`); the torch terms read off the live tensors at the peak of the
/// calibration run `prefill/qwen3_next/s/fp32/sdpa/ltk1/b2s256`
/// (`tests/data/hf_ssm_measurements.json`: the rule's 8,388,608 B, and beside it in_proj
/// 1,572,864 + 32,768, z 524,288, the convolution 1,048,576 and 4 × 16,384 B of gates).
///
/// # Example
/// Qwen3-Next (H_k 16, H_v 32, d = 128), b = 1, s = 4,096, bf16: torch 10·32·4,096·128·4 +
/// 3·32·4,096·64·4 = 771,751,936 B, beside it 4,096·(12,288 + 64)·2 + 4,096·4,096·2 +
/// 4,096·8,192·2 + 4,096·32·10 = 101,187,584 + 33,554,432 + 67,108,864 + 1,310,720 B;
/// fused 67,108,864 + 100,663,296 + 16,777,216 B.
pub(crate) fn linear_transient(s: &Scenario, g: &LinearAttn) -> (u128, &'static str) {
    let e = s.numerics.precision.compute_bytes() as u128;
    let (b, sq) = (s.workload.batch.get() as u128, s.workload.seq.get() as u128);
    let (hv, dk, dv) = (g.v_heads as u128, g.k_dim as u128, g.v_dim as u128);
    match s.runtime.ssm_kernels {
        SsmKernels::Fused => (
            b * sq.div_ceil(64) * hv * dk * dv * e + 3 * b * sq * hv * dv * e + b * sq * hv * 64 * e,
            "gated DeltaNet, fla chunk kernel: chunk states b·⌈s/64⌉·H_v·d_k·d_v·e, w, u, v_new 3·b·s·H_v·d_v·e, A b·s·H_v·64·e",
        ),
        _ => {
            let s_pad = sq.div_ceil(64) * 64;
            let (tok, v) = (b * sq, hv * dv);
            let c = 2 * g.k_heads as u128 * dk + v;
            let beside = tok * (2 * g.k_heads as u128 * dk + 2 * v + 2 * hv) * e
                + tok * v * e
                + tok * c * e
                + tok * hv * (3 * e + 4);
            (
                10 * b * hv * s_pad * dk.max(dv) * 4 + 3 * b * hv * s_pad * 64 * 4 + beside,
                "gated DeltaNet, torch chunk fallback: ten (b, H_v, s, d) fp32 tensors and three (b, H_v, c, 64, 64), beside the block's in_proj outputs, z's copy, the convolution's output and the gates",
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::query::decode;

    fn ssm(version: u8, d: u64, n: u64, g: u64, h: u64) -> Ssm {
        Ssm {
            version,
            d_inner: d,
            d_state: n,
            groups: g,
            heads: h,
            conv_kernel: 4,
            chunk: if version == 2 { 256 } else { 0 },
        }
    }

    /// The research notes' per-sequence state: Mamba-130M 2.53 MiB, Mamba-2 2.7B 162.6 MiB.
    #[test]
    fn state_per_sequence_by_hand() {
        assert_eq!(
            24 * mamba_state_bytes(&ssm(1, 1536, 16, 1, 0), 2),
            2_654_208
        );
        assert_eq!(
            64 * mamba_state_bytes(&ssm(2, 5120, 128, 1, 80), 2),
            170_524_672
        );
    }

    /// Qwen3-Next's gated-DeltaNet state and prefill transient (research notes §1.4, §1.9).
    #[test]
    fn gated_deltanet_by_hand() {
        let g = LinearAttn {
            k_heads: 16,
            v_heads: 32,
            k_dim: 128,
            v_dim: 128,
            conv_kernel: 4,
        };
        assert_eq!(36 * linear_state_bytes(&g, 2), 77_856_768);
        let at = |k: &str| {
            let (s, _) = decode(&format!("mode=infer&batch=1&seq=4096&ssm_kernels={k}"));
            linear_transient(&s.scenario, &g).0
        };
        // The rule's fp32 tensors, then the block's bf16 tensors beside it (the docs' example).
        let beside = 101_187_584 + 33_554_432 + 67_108_864 + 1_310_720;
        assert_eq!(at("torch"), 771_751_936 + beside);
        assert_eq!(at("fused"), 67_108_864 + 100_663_296 + 16_777_216);
    }

    /// MiniMax-Text-01's lightning state (H 64, d 128, bf16): 64·128·128·2 B per block.
    #[test]
    fn lightning_state_by_hand() {
        let x = Lightning {
            heads: 64,
            head_dim: 128,
        };
        assert_eq!(lightning_state_bytes(&x, 2), 2_097_152);
        assert_eq!(70 * lightning_state_bytes(&x, 2), 146_800_640);
    }

    /// Sanity check 2: Mamba-2 2.7B at 8 × 2,048 on transformers ≤ 5.17's torch path (`torch`) allocates
    /// a 171.8 GB G_intermediate at its first layer; ≥ 5.18 about 9 GB; the kernels < 0.5 GB.
    #[test]
    fn mamba2_prefill_transient_by_hand() {
        let m = ssm(2, 5120, 128, 1, 80);
        let at = |k: &str| {
            let (s, _) = decode(&format!("mode=infer&batch=8&seq=2048&ssm_kernels={k}"));
            scan_transient(&s.scenario, &m).0
        };
        let g_intermediate = 8 * 2048 * 256 * 80 * 128 * 4u128;
        assert_eq!(g_intermediate, 171_798_691_840);
        assert_eq!(
            at("torch-naive"),
            g_intermediate + 8 * 2048 * 80 * 4 * (3 * 256 + 256)
        );
        // 8·80·4·(3·2,048·256 + 2,048·(7·64 + 3·128) + 10·64·128), and the block's in_proj
        // and conv outputs in bf16: 8·2,048·(3·5,120 + 4·128 + 80)·2.
        assert_eq!(
            at("torch-einsum"),
            8_598_323_200 + 8 * 2048 * (3 * 5120 + 4 * 128 + 80) * 2
        );
        // `torch` is transformers ≤ 5.17's fallback, as `torch-naive` (the earlier spelling).
        assert_eq!(at("torch"), at("torch-naive"));
        assert!(at("fused") < 500_000_000, "{}", at("fused"));
        // Mamba-130M at 8 × 1,024: 12·E = 2.25 GiB on the torch path, and the block's in_proj
        // output and seven d-wide tensors in bf16.
        let (s, _) = decode("mode=infer&batch=8&seq=1024&ssm_kernels=torch");
        let e = 8 * 1536 * 1024 * 16u128;
        assert_eq!(
            scan_transient(&s.scenario, &ssm(1, 1536, 16, 1, 0)).0,
            12 * e + 9 * 8 * 1024 * 1536 * 2
        );
    }
}
