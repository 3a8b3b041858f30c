//! Training activations of the Mamba and short-convolution blocks of state-space and
//! hybrid models: what each block saves for the backward, with the fused kernels
//! (mamba-ssm 2.3.2, causal-conv1d 1.6.1) or transformers' torch fallback (`ssm_kernels`),
//! and the torch fallback's transient of the block running.
//!
//! Read from the sources collected in `/work/research/ssm-memory.md` §2: the saved tensors of
//! the fused `autograd.Function`s from their `ctx.save_for_backward`, those of the torch
//! fallbacks counted by hand from the autograd rules (an estimate, about ±20 %; not
//! measured).

use super::{layer_input_bytes, mixer_norm_bytes, mlp_half_bytes, Shape};
use crate::model::{Arch, LinearAttn, Ssm};
use crate::scenario::{Scenario, SsmKernels};

/// What one Mamba block's mixer saves for the backward, per micro-batch, in bytes, and
/// which path it is.
///
/// # Formula
/// ```text
/// T = b·s',  E = b·d·s'·N,  R = ⌈h/16⌉,  s_pad = ⌈s'/l⌉·l,  l = chunk (256),  k bytes per value
/// Mamba-1, fused (MambaInnerFn, checkpoint_lvl = 1):
///     T·(2d + R + 2N + 2N + d)·k + b·d·⌈s'/2048⌉·2N·4
///     (xz, x_dbl, B and C copies, out; the scan's chunk states fp32)
/// Mamba-2, fused (MambaSplitConv1dScanCombinedFn):
///     T·(2d + 2GN + H)·k + T·d·k + T·G·4          (zxbcdt, out_x, rstd)
/// Mamba-1, torch:  (12 + 2·[k < 4])·E + 10·T·d·k
///     (discrete_A, discrete_B and every step's fp32 state, each 4·E; the steps' 16-bit
///      copies 2·E unless fp32; in_proj, conv and x_proj outputs ≈ 10·T·d·k)
/// Mamba-2, torch:  b·H·s_pad·4·(3·l + 5·N + 6·P) + b·(c + 1)·H·P·N·4
///                  + T·(2d + 2GN + H)·k + 2·T·(d + 2GN)·k + T·d·(16 + [k < 4]·k),
///                  c = ⌈s'/l⌉, P = d/H
///     (G, L, M of the chunk scan; B, C, B_decay and the einsums' contiguous copies of
///      them; the chunked x·dt, D_residual's padded x, C·states, the sum; the c + 1 chunk
///      states; in_proj's output, the convolution's output and its SiLU; the gated
///      RMSNorm's four fp32 d-wide tensors — it runs on the scan's fp32 output: the gate's
///      fp32 copy (its SiLU's input; in fp32 the in_proj output itself), the SiLU, the
///      product and the normalised tensor — and, in a 16-bit model, out_proj's 16-bit copy
///      of its fp32 output (`self.out_proj(scan_output.to(dtype))`; read off the bf16
///      calibration run `train/nemotron_h/s/bf16/adamw-foreach/sdpa/nockpt/loss=model/b2s256`:
///      4 × 1,048,576 + 524,288 B per block, memfit had 4·T·d·2). Counted on the live tensors at the backward's start
///      of `train/mamba2/s/fp32/adamw-foreach/eager/nockpt/loss=model/b2s256`, a
///      calibration run of `tests/data/hf_ssm_measurements.json`: 14 chunked fp32 tensors
///      per block; which of them are N, P or l wide is read from the code, as l = N = P = 64
///      in every measured configuration)
/// ```
/// Sources: mamba_ssm 2.3.2 `ops/selective_scan_interface.py::MambaInnerFn.forward` and
/// `ops/triton/ssd_combined.py::MambaSplitConv1dScanCombinedFn.forward`
/// (`ctx.save_for_backward`); transformers 5.24 `modeling_mamba.mamba_selective_scan`
/// (4.57.6 `MambaMixer.slow_forward`) and `modeling_mamba2.mamba2_chunk_scan` (the same
/// saved set in ≤ 5.17's naive version: `SumBackward` does not save its input).
///
/// # Example
/// Mamba-130M (h = 768, d = 1,536, N = 16), b = 8, s = 1,024, bf16: fused
/// 8,192·(3,072 + 48 + 32 + 32 + 1,536)·2 + 8·1,536·1·32·4 = 78,905,344 B; torch
/// 14·201,326,592 + 10·8,192·1,536·2 = 3,070,230,528 B (2.86 GiB; 14·E alone 2.625 GiB).
/// Mamba-2 2.7B (d = 5,120, N = 128, G = 1, H = 80), b = 8, s = 2,048, bf16, fused:
/// 16,384·(10,576·2 + 5,120·2) + 16,384·4 = 514,392,064 B.
pub fn mamba_mixer_saved(s: &Scenario, x: &Shape, m: &Ssm) -> (u128, &'static str) {
    let (b, sl, h, k) = (x.b, x.sl, x.h, x.k);
    let tok = b * sl;
    let (d, n, g) = (m.d_inner as u128, m.d_state as u128, m.groups as u128);
    let torch = s.runtime.ssm_kernels != SsmKernels::Fused;
    match (m.version == 2, torch) {
        (false, false) => (
            tok * (3 * d + h.div_ceil(16) + 4 * n) * k + b * d * sl.div_ceil(2048) * 2 * n * 4,
            "Mamba, fused MambaInnerFn (checkpoint_lvl 1): xz, x_dbl, B, C, out and the scan's chunk states",
        ),
        (true, false) => (
            tok * (3 * d + 2 * g * n + m.heads as u128) * k + tok * g * 4,
            "Mamba-2, fused MambaSplitConv1dScanCombinedFn: zxbcdt, out_x and rstd (the rest recomputed)",
        ),
        (false, true) => (
            (12 + if k < 4 { 2 } else { 0 }) * b * d * sl * n + 10 * tok * d * k,
            "Mamba, torch fallback: discrete_A, discrete_B and every step's fp32 state (b, d, s, N), the steps' 16-bit copies",
        ),
        (true, true) => {
            let l = m.chunk_len();
            let c = sl.div_ceil(l);
            let s_pad = c * l;
            let (hh, g) = (m.heads as u128, m.groups as u128);
            let p = d.checked_div(hh).unwrap_or(0);
            (
                b * hh * s_pad * 4 * (3 * l + 5 * n + 6 * p)
                    + b * (c + 1) * hh * p * n * 4
                    + tok * (2 * d + 2 * g * n + hh) * k
                    + 2 * tok * (d + 2 * g * n) * k
                    + tok * d * (16 + if k < 4 { k } else { 0 }),
                "Mamba-2, torch fallback: G, L, M (b, H, c, l, l), five N-wide and six P-wide chunked tensors and the chunk states fp32; in_proj, conv and gated-norm outputs",
            )
        }
    }
}

/// What one short-convolution block's mixer (LFM2 `Lfm2ShortConv`) saves: `7·T·h·k` (the
/// in_proj input, `BCx` 3h wide, `B·x`, the convolution's output and `y`), the same with
/// causal-conv1d (`CausalConv1dFn` saves only its input, but `C · conv_out` saves the output
/// anyway). Source: transformers 5.24 `modeling_lfm2.Lfm2ShortConv.slow_forward` /
/// `cuda_kernels_forward`, causal-conv1d 1.6.1 `CausalConv1dFn.forward`.
///
/// # Example
/// LFM2-350M (h = 1,024), b = 8, s = 2,048, bf16: 7·16,384·1,024·2 = 234,881,024 B.
pub fn conv_mixer_saved(x: &Shape) -> u128 {
    7 * x.b * x.sl * x.h * x.k
}

/// The transient the torch fallback's scan holds beside the saved tensors while one Mamba
/// block runs its forward, in bytes (0 with the fused kernels: their temporaries are small).
///
/// # Formula
/// ```text
/// Mamba-1, torch:        4·E                          deltaB_u (b, d, s', N) fp32
/// Mamba-2, torch:        b·H·s_pad·l·4                one permuted (b, H, c, l, l) copy in the einsum
/// Mamba-2, torch-naive:  b·s_pad·l·H·max(N, P)·4      G_intermediate (or the Y_diag product)
/// ```
/// Sources: transformers 5.24 `modeling_mamba.mamba_selective_scan` (`deltaB_u` lives
/// through the loop), transformers 4.57.6 / ≤ 5.17 `Mamba2Mixer.torch_forward`
/// (`G_intermediate = C[:, :, :, None, :, :] * B[:, :, None, :, :, :]`), 5.24
/// `mamba2_chunk_scan` (einsum). The backward adds a few E-sized fp32 gradient buffers for
/// the block it runs; they are of the same size and not counted apart.
///
/// # Example
/// Mamba-130M, b = 8, s = 1,024, torch: 4·201,326,592 = 805,306,368 B.
pub fn mamba_transient(s: &Scenario, x: &Shape, m: &Ssm) -> u128 {
    let (d, n, hh) = (m.d_inner as u128, m.d_state as u128, m.heads as u128);
    let l = m.chunk_len();
    let s_pad = x.sl.div_ceil(l) * l;
    match (m.version == 2, s.runtime.ssm_kernels) {
        (_, SsmKernels::Fused) => 0,
        (false, _) => 4 * x.b * d * x.sl * n,
        (true, SsmKernels::TorchEinsum) => x.b * hh * s_pad * l * 4,
        (true, SsmKernels::Torch | SsmKernels::TorchNaive) => {
            let p = d.checked_div(hh).unwrap_or(0);
            x.b * s_pad * l * hh * n.max(p) * 4
        }
    }
}

/// The transient of a checkpointed Mamba-2 block's recompute on the torch path, in bytes,
/// beyond the recomputed block's saved set `A_max`: the block at `mamba2_chunk_scan`'s
/// return holds its input, its norm's output, the mixer's saved tensors up to the scan and
/// the scan's locals, but not yet what it saves after the scan (the gated RMSNorm, out_proj's
/// input, a hybrid block's attention and MLP). 0 for Mamba-1 and the fused kernels.
///
/// # Formula
/// ```text
/// X_r = max(0, I + T·h·k + M_s − T·d·(16 + [k < 4]·k) + X_l − A_max)
/// X_l = b·H·4·(s_pad·(6·P + N) + (c + 2)·P·N),   s_pad = ⌈s'/l⌉·l, c = s_pad/l, P = d/H
/// ```
/// `I` the block's input, `M_s` = [`mamba_mixer_saved`], `T·d·(16 + [k < 4]·k)` its gated
/// norm's part, `A_max` the recomputed block's saved set ([`hybrid_block_bytes`]). `X_l`, the
/// scan's locals alive at `output = (Y_diag + Y_off).contiguous()` beyond its saved
/// tensors: the padded x·dt and C (P, N), `D_residual`, `Y_diag`, `Y_off`, their sum and
/// its contiguous copy (P each), the einsum output of the c + 1 chunk states (its copy is
/// saved) and the zero initial state. Source: transformers 5.24
/// `modeling_mamba2.mamba2_chunk_scan` (the same function in `modeling_nemotron_h`,
/// `modeling_bamba`, `modeling_falcon_h1`; `FalconH1DecoderLayer` runs the Mamba mixer before
/// the attention); every checkpointed Mamba-2 calibration run of
/// `tests/data/hf_ssm_measurements.json` peaks there (traced:
/// `train/mamba2/s/fp32/adamw-foreach/eager/ckpt/loss=model/b2s256`, 21 chunked fp32 tensors
/// and three chunk-state tensors live, 14 and one of them saved).
///
/// # Example
/// That run's block (b 2, H 8, P = N = l = 64, s' 256, d 512, fp32; no MLP, so `A_max` is
/// `I + T·h·k + M_s`): X_l − T·d·16 = 2·8·4·(256·448 + 6·4,096) − 512·512·16 = 8,912,896 −
/// 4,194,304 = 4,718,592 B.
pub fn mamba2_recompute_transient(s: &Scenario, x: &Shape, m: &Ssm, a_max: u128) -> u128 {
    if m.version != 2 || s.runtime.ssm_kernels == SsmKernels::Fused {
        return 0;
    }
    let (d, n, hh) = (m.d_inner as u128, m.d_state as u128, m.heads as u128);
    let l = m.chunk_len();
    let c = x.sl.div_ceil(l);
    let s_pad = c * l;
    let p = d.checked_div(hh).unwrap_or(0);
    let locals = x.b * hh * 4 * (s_pad * (6 * p + n) + (c + 2) * p * n);
    let after = x.b * x.sl * d * (16 + if x.k < 4 { x.k } else { 0 });
    let before = layer_input_bytes(s, x)
        .saturating_add(x.b * x.sl * x.h * x.k)
        .saturating_add(mamba_mixer_saved(s, x, m).0);
    before
        .saturating_sub(after)
        .saturating_add(locals)
        .saturating_sub(a_max)
}

/// The torch fallback's transient while one Mamba-1 block runs its backward, in bytes
/// (0 for Mamba-2 and the fused kernels: [`mamba_transient`] covers them).
///
/// # Formula
/// ```text
/// Mamba-1, torch:  16·b·d·s'·N     four (b, d, s', N) fp32 buffers: the gradients of
///                                  discrete_A and deltaB_u that every step's `select`
///                                  backward writes into (three live) and their sum
/// ```
/// Source: the live tensors at the backward's peak of
/// `train/mamba/s/fp32/adamw-foreach/eager/nockpt/loss=model/b2s256`
/// (`tests/data/hf_ssm_measurements.json`, calibration; transformers 5.24
/// `modeling_mamba.mamba_selective_scan`'s loop `discrete_A[:, :, index]`,
/// `deltaB_u[:, :, index]`): three `select_backward` outputs and one `add`, each
/// 2·512·256·16·4 = 16,777,216 B (b 2, d 512, s 256, N 16).
///
/// # Example
/// Mamba-130M, b = 8, s = 1,024: 16·201,326,592 = 3,221,225,472 B.
pub fn mamba_backward_transient(s: &Scenario, x: &Shape, m: &Ssm) -> u128 {
    match (m.version, s.runtime.ssm_kernels) {
        (2, _) | (_, SsmKernels::Fused) => 0,
        _ => 16 * x.b * m.d_inner as u128 * x.sl * m.d_state as u128,
    }
}

/// One block's saved activations averaged over a hybrid model's blocks, in bytes per
/// micro-batch, with the formula's values; `None` for a model without Mamba or
/// convolution blocks.
///
/// # Formula
/// ```text
/// A = ⌈(L_a·A_t + L_lin·A_l + L_m·A_m + L_c·A_c + L_f·A_mlp) / n⌉
/// A_max = max(A, the A_x of every block kind present)   the recompute working set
/// A_m = I + T·h·k + mixer_m + [L_a + L_c + L_lin > 0]·A_mlp
/// A_c = I + conv_mixer + A_mlp
/// n = L_a + L_lin + L_m + L_c            blocks of one mixer and an MLP (Jamba, Bamba, LFM2)
/// Falcon-H1 (L_a + L_m > L, parallel):   n = L, A_m = mixer_m (the attention's norm output
///                                        feeds both mixers; the block's MLP is in A_t)
/// Nemotron-H (L_a + L_m < L):            n = L, L_f = L − L_a − L_m MLP-only blocks,
///                                        A_t − A_mlp per attention block, A_m without A_mlp
/// ```
/// Sources: transformers 5.24 `modeling_falcon_h1.FalconH1DecoderLayer.forward` (one
/// `input_layernorm`, `mamba(...)` and `self_attn(...)` on its output, then
/// `pre_ff_layernorm` and the MLP), `modeling_nemotron_h.NemotronHBlock` (one norm and one
/// mixer per block: `mamba`, `attention`, `mlp` or `moe` by `layers_block_type`).
/// `A_t` a transformer block (attention + MLP, `memfit_layer`), `I` the block's input the
/// norm saves (`layer_input_bytes`), `T·h·k` the mixer's in_proj input (the norm's output),
/// `mixer_m` = [`mamba_mixer_saved`], `conv_mixer` = [`conv_mixer_saved`], `A_mlp` the MLP
/// half of a transformer block (its norm and feed-forward). A pure Mamba / Mamba-2 model's
/// blocks have no MLP; in a hybrid every Mamba block is counted with one (Jamba, LFM2 and
/// Falcon-H1 blocks have one; Nemotron-H's separate MLP blocks are about as many as its
/// Mamba blocks). The average keeps the stage's total exact for `p = 1`.
///
/// Returns `(A, A_max, values)`. Under full checkpointing every block keeps only its input,
/// and the block whose recompute sets the peak is the largest kind's, not the average:
/// `torch.utils.checkpoint` reruns one block's forward at a time inside the backward, so
/// the live set is that block's own saved tensors (transformers 5.24
/// `GradientCheckpointingLayer.__call__`, `modeling_nemotron_h.NemotronHBlock`,
/// `modeling_bamba.BambaDecoderLayer`).
///
/// # Example
/// Nemotron-H with 2 Mamba, 1 attention and 3 MLP-only blocks of A_m = 12, A_t − A_mlp = 6
/// and A_mlp = 2 MB: A = ⌈(2·12 + 6 + 3·2)/6⌉ = 6 MB, A_max = A_m = 12 MB.
pub fn hybrid_block_bytes(
    s: &Scenario,
    arch: &Arch,
    x: &Shape,
    transformer: u128,
) -> Option<(u128, u128, String)> {
    let (la, lm, lc, ll, parallel, mlp_only) = block_kinds(arch);
    if lm + lc + ll == 0 {
        return None;
    }
    let gdn = arch.linear_shape();
    // A Mamba, convolution or gated-DeltaNet block's first norm: its input, statistics, fp32
    // normalised tensor and output (the in_proj's input), as a transformer block's.
    let norm = mixer_norm_bytes(s, arch, x);
    let mlp = mlp_half_bytes(s, arch, x);
    let layers = arch.layers.get() as u128;
    let mixers = la + lm + lc + ll;
    let (am, what) = match arch.ssm_shape() {
        Some(m) if lm > 0 => {
            let (mixer, what) = mamba_mixer_saved(s, x, &m);
            let with_mlp = mamba_block_mlp(s, arch, x);
            let sum = if parallel {
                mixer.saturating_sub(ungated_norm_saving(s, x, &m))
            } else {
                norm.saturating_add(mixer)
            };
            (sum.saturating_add(with_mlp), what)
        }
        _ => (0, ""),
    };
    // Nemotron-H's attention blocks have no MLP; its MLP-only blocks are one.
    let at = if mlp_only > 0 {
        transformer.saturating_sub(mlp)
    } else {
        transformer
    };
    // Saturating: a transformer term of absurd overrides may be near u128::MAX.
    // The convolution mixer's count includes its in_proj input, the norm's output.
    let ac = norm
        .saturating_add(conv_mixer_saved(x))
        .saturating_sub(x.b * x.sl * x.h * x.k)
        .saturating_add(mlp);
    let al = gdn.map_or(0, |g| gdn_block_bytes(s, x, &g, norm, mlp));
    let total = la
        .saturating_mul(at)
        .saturating_add(lm.saturating_mul(am))
        .saturating_add(lc.saturating_mul(ac))
        .saturating_add(ll.saturating_mul(al))
        .saturating_add(mlp_only.saturating_mul(mlp));
    // The block count where blocks and mixers differ (mixers > 0 here).
    let n = if (parallel || mlp_only > 0) && layers > 0 {
        layers
    } else {
        mixers
    };
    let a = total.div_ceil(n);
    // The largest block kind present: a checkpointed block's recompute holds its own set.
    let largest = largest_kind(
        &[(la, at), (lm, am), (lc, ac), (ll, al), (mlp_only, mlp)],
        a,
    );
    Some((
        a,
        largest,
        format!("A = ⌈(L_a·A_t + L_m·A_m + L_c·A_c + L_l·A_l + L_f·A_mlp)/n⌉, A_max = {largest} with L_a={la}, A_t={at}, L_m={lm}, A_m={am} ({what}), L_c={lc}, A_c={ac}, L_l={ll}, A_l={al}, L_f={mlp_only}, A_mlp={mlp}, n = {n}; ssm_kernels={}", s.runtime.ssm_kernels.as_str()),
    ))
}

/// What a Falcon-H1 Mamba-2 mixer on the torch path saves less than [`mamba_mixer_saved`]
/// counts, in bytes: Falcon-H1 gates the scan's fp32 output without the gated RMSNorm
/// (`mamba_rms_norm=False`, transformers' default and the published checkpoints', e.g.
/// `tests/configs/falcon-h1-7b.json`), so the mixer saves the SiLU of the gate (k), the fp32
/// product and, in 16 bits, out_proj's copy of it: `T·d·(k + 4 + [k < 4]·k)` instead of the
/// gated norm's `T·d·(16 + [k < 4]·k)`.
///
/// # Formula
/// `T·d·(12 − k)` on the torch Mamba-2 path (0 otherwise), `T = b·s'`.
/// Source: transformers 5.24 `modeling_falcon_h1.FalconH1Mixer.torch_forward`
/// (`scan_output = scan_output * torch.nn.functional.silu(gate)` when `not self.mamba_rms_norm`,
/// then `self.out_proj(scan_output.to(dtype))`); read off the live tensors at the backward's
/// start of the calibration run `train/falcon_h1/s/fp32/sgd/sdpa/nockpt/loss=model/b2s256`
/// (`tests/data/hf_ssm_measurements.json`: the SiLU and the product, 2 × 1,048,576 B per
/// block, where memfit counted four).
///
/// # Example
/// That run (b 2, s' 256, d 512, fp32): 512·512·8 = 2,097,152 B per block.
pub fn ungated_norm_saving(s: &Scenario, x: &Shape, m: &Ssm) -> u128 {
    if m.version != 2 || s.runtime.ssm_kernels == SsmKernels::Fused {
        return 0;
    }
    x.b * x.sl * m.d_inner as u128 * (12 - x.k.min(12))
}

/// A hybrid's block kinds: `(L_a, L_m, L_c, L_l, parallel, L_f)` — attention (and linear
/// attention without a gated-DeltaNet shape), Mamba, convolution and gated-DeltaNet blocks,
/// whether the blocks are Falcon-H1's parallel ones (more mixers than blocks) and how many
/// are MLP-only (Nemotron-H: fewer mixers than blocks).
fn block_kinds(arch: &Arch) -> (u128, u128, u128, u128, bool, u128) {
    let (lm, lc) = (arch.mamba_layers as u128, arch.conv_layers as u128);
    // Gated-DeltaNet blocks with their shape; other linear attention counts as attention.
    let ll = if arch.linear_shape().is_some() {
        arch.linear_layers as u128
    } else {
        0
    };
    let la = arch.attention_layers() as u128 + arch.linear_layers as u128 - ll;
    let (mixers, layers) = (la + lm + lc + ll, arch.layers.get() as u128);
    (
        la,
        lm,
        lc,
        ll,
        mixers > layers,
        layers.saturating_sub(mixers),
    )
}

/// The MLP half a hybrid's Mamba block carries (its norm and feed-forward, `A_mlp`), in
/// bytes: blocks of one mixer and an MLP (Jamba, Bamba, Granite-4.0-H); 0 for a pure
/// Mamba model, Nemotron-H's single-mixer blocks and Falcon-H1's parallel ones (their MLP
/// is counted with the attention). Its backward runs, and frees it, before the mixer's.
pub fn mamba_block_mlp(s: &Scenario, arch: &Arch, x: &Shape) -> u128 {
    let (la, _, lc, ll, parallel, mlp_only) = block_kinds(arch);
    if la + lc + ll > 0 && mlp_only == 0 && !parallel {
        mlp_half_bytes(s, arch, x)
    } else {
        0
    }
}

/// The largest of the block kinds present (`(count, bytes)`), at least the average `a`.
pub(crate) fn largest_kind(kinds: &[(u128, u128)], a: u128) -> u128 {
    kinds
        .iter()
        .filter(|(count, _)| *count > 0)
        .map(|(_, bytes)| *bytes)
        .fold(a, u128::max)
}

/// One gated-DeltaNet block's saved bytes: `A_l = N_1 + T·H_v·d_v·k + core + X_t + A_mlp`
/// (its first norm with its input and output, the in_proj input, `mixer_norm_bytes`; the
/// out_proj input, [`linear_mixer_saved`], the torch path's convolution and gated norm
/// [`gdn_torch_around`], and the MLP half).
fn gdn_block_bytes(s: &Scenario, x: &Shape, g: &LinearAttn, norm: u128, mlp: u128) -> u128 {
    let (hv, dv) = (g.v_heads as u128, g.v_dim as u128);
    let out_in = x.b * x.sl * hv * dv * x.k;
    norm.saturating_add(out_in)
        .saturating_add(linear_mixer_saved(s, x, g))
        .saturating_add(gdn_torch_around(s, x, g))
        .saturating_add(mlp)
}

/// What transformers' torch path of a gated-DeltaNet block saves around its chunk rule,
/// beyond the in_proj and out_proj inputs, in bytes (0 with the fused kernels: not measured,
/// fla's `FusedRMSNormGated` and causal-conv1d save less).
///
/// # Formula
/// ```text
/// X_t = T·C·k + b·(s' + K − 1)·C·k + T·V·(12 + 2k) + T·H_v·(k + 16)
///     C = 2·H_k·d_k + V,  V = H_v·d_v,  T = b·s',  k bytes per value, K the conv kernel
/// ```
/// `T·C·k`: `mixed_qkv = torch.cat((query, key, value))`, saved by `F.conv1d`;
/// `b·(s' + K − 1)·C·k`: the convolution's padded output, saved by the SiLU on its slice;
/// `T·V·(12 + 2k)`: `Qwen3NextRMSNormGated`'s fp32 input (saved by `pow` and the rsqrt
/// `mul`, 4), the normed `x·rsqrt` cast back (saved by the weight `mul`, k), `weight·x` (k),
/// the gate's fp32 copy (saved by `silu`, 4) and the SiLU's output (4); the product, cast
/// to k, is the out_proj input already counted; `T·H_v·(k + 16)`: `beta = b.sigmoid()` (k),
/// `softplus` and its sum (4 + 4) and the two `l2norm` rsqrts (4 + 4).
/// Source: transformers 5.24 `modeling_qwen3_next.Qwen3NextGatedDeltaNet.forward`,
/// `causal_conv1d_fn` (torch fallback), `Qwen3NextRMSNormGated.forward`, `l2norm`; read off
/// the live tensors at the peak of the calibration run
/// `train/qwen3_next/s/fp32/adamw-foreach/sdpa/nockpt/loss=model/b2s256`
/// (`tests/data/hf_ssm_measurements.json`; traced with `tools/trace_hf.py`'s tracker).
///
/// # Example
/// That run (b 2, s' 256, H_k 4, d_k 32, H_v 8, d_v 32, K 4, fp32): C = 512, V = 256,
/// 512·512·4 + 2·259·512·4 + 512·256·20 + 512·8·20 = 1,048,576 + 1,060,864 +
/// 2,621,440 + 81,920 = 4,812,800 B per block (traced: cat 1,048,576, conv 1,060,864, z and
/// the output's clones, x·rsqrt, weight·x and SiLU 5 × 524,288, small tensors 81,920; the
/// gated norm's own rsqrt, 16,384, left out).
pub fn gdn_torch_around(s: &Scenario, x: &Shape, g: &LinearAttn) -> u128 {
    if s.runtime.ssm_kernels == SsmKernels::Fused {
        return 0;
    }
    let (hk, hv, dk, dv) = (
        g.k_heads as u128,
        g.v_heads as u128,
        g.k_dim as u128,
        g.v_dim as u128,
    );
    let (tok, k, v) = (x.b * x.sl, x.k, hv * dv);
    let c = 2 * hk * dk + v;
    let padded = x.b * (x.sl + (g.conv_kernel as u128).saturating_sub(1)) * c * k;
    tok * c * k + padded + tok * v * (12 + 2 * k) + tok * hv * (k + 16)
}

/// What one gated-DeltaNet block's core saves for the backward, per micro-batch, in bytes.
///
/// # Formula
/// ```text
/// fused (fla ChunkGatedDeltaRuleFunction):
///     T·(2·H_k·d_k·k + H_v·d_v·k + H_v·64·k + 2·H_k·4 + H_v·(4 + k))
///     (q, k after l2norm, their rstd, v, g, beta, the intra-chunk A; the chunk states are
///      recomputed)
/// torch (torch_chunk_gated_delta_rule):
///     U·4·(8·d_k + 3·d_v + 5·64 + 4 + d_k·d_v/64) + 2·T·H_v·d_k·4 + 2·(U − U/c)·d_k·4
///     U = b·H_v·s_pad, s_pad = ⌈s'/64⌉·64, c = s_pad/64 chunks, T = b·s'
///     (U-sized: the padded q, k, v, k_beta, the two matmuls' operand copies k_beta, kᵀ,
///      q, kᵀ, k_cumdecay, the solved values and every chunk's v_new (8 d_k- and 3 d_v-wide);
///      five chunk matrices (the two products, their decayed copies, the pairwise decay);
///      three decay exps and the padded β; one recurrent state per chunk.
///      Beside them: the l2-normalised q and k at H_v heads before padding, and the chunk
///      loop's copies of q[:, :, i] and k[:, :, i]ᵀ for every chunk but one (the first
///      reads the zero state, the last update is dropped without output_final_state))
/// ```
/// The block also keeps its input, the in_proj input `T·h·k` and the out_proj input
/// `T·H_v·d_v·k` (counted in [`hybrid_block_bytes`]). Sources: fla 0.5.2
/// `ops/gated_delta_rule/chunk.py::ChunkGatedDeltaRuleFunction.forward`
/// (`ctx.save_for_backward`), transformers 5.24
/// `modeling_qwen3_next.torch_chunk_gated_delta_rule` (research notes §2), the torch count
/// read off the live tensors at the backward's start of the calibration run
/// `train/qwen3_next/s/fp32/adamw-foreach/sdpa/nockpt/loss=model/b2s256`
/// (`tests/data/hf_ssm_measurements.json`: 13,172,736 B per block inside the rule, of which
/// the normalised q, k (2 × 524,288) and the loop's copies (6 × 131,072) were missing).
///
/// # Example
/// Qwen3-Next (H_k 16, H_v 32, d_k = d_v = 128), bf16, per token: fused 8,192 + 8,192 + 4,096
/// + 128 + 192 = 20,800 B (the notes print 20,864).
///
/// Torch at b = 1, s = 4,096 (U = 131,072, c = 64): 131,072·4·(1,024 + 384 + 320 + 4 + 256)
/// = 1,042,284,544, plus 2·131,072·128·4 = 134,217,728, plus 2·129,024·128·4 = 132,120,576:
/// 1,308,622,848 B.
pub fn linear_mixer_saved(s: &Scenario, x: &Shape, g: &LinearAttn) -> u128 {
    let (hk, hv, dk, dv) = (
        g.k_heads as u128,
        g.v_heads as u128,
        g.k_dim as u128,
        g.v_dim as u128,
    );
    let (tok, k) = (x.b * x.sl, x.k);
    match s.runtime.ssm_kernels {
        SsmKernels::Fused => {
            tok * (2 * hk * dk * k + hv * dv * k + hv * 64 * k + 2 * hk * 4 + hv * (4 + k))
        }
        _ => {
            let u = x.b * hv * x.sl.div_ceil(64) * 64;
            let first = x.b * hv * 64;
            u * 4 * (8 * dk + 3 * dv + 5 * 64 + 4 + dk * dv / 64)
                + 2 * x.b * x.sl * hv * dk * 4
                + 2 * u.saturating_sub(first) * dk * 4
        }
    }
}
