//! Measured GEMM and attention rates by shape and precision, per GPU: what a GEMM of
//! `m × k · k × n` reaches where the GPU has been measured (H200: `tests/data/cuda_h200/
//! gemm.jsonl`), and FlashAttention's forward + backward rate by the size of the call.
//! GPUs without measurements keep [`super::Hw::gemm_s`]'s size curve at their data-sheet
//! peak (`time`'s `gemm_rates` says which one a scenario used).

/// One measured GEMM shape: TFLOP/s of bf16 (`x @ w.t()`, `g @ w`, `g.t() @ x`) and fp8
/// (`torch._scaled_mm`, e4m3, tensor-wise scales, bf16 out), forward, data gradient and
/// weight gradient together (`3·F / (t_fwd + t_dgrad + t_wgrad)`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rate {
    /// Rows (tokens).
    pub m: f64,
    /// The reduced dimension.
    pub k: f64,
    /// Columns.
    pub n: f64,
    /// bf16 TFLOP/s.
    pub bf16: f64,
    /// fp8 TFLOP/s.
    pub fp8: f64,
}

/// NVIDIA H200 SXM, torch 2.11.0+cu130 (cuBLAS/cuBLASLt), CUDA events over 10 runs after 3
/// warm-ups, 2026-11-27: the linear layers of Llama 3 8B and 70B under TP 1, 2, 4 and 8 at
/// M = 8,192 tokens (and 2,048 and 16,384 for 8B at TP 1). Derivation: each row is
/// `3·2·M·K·N / (t_fwd + t_dgrad + t_wgrad)` of `gemm.jsonl` (`tests/data/cuda_h200/`).
/// Median 657 bf16 (0.66 of 989.4) and 1,246 fp8 (0.63 of 1,978.9).
#[rustfmt::skip]
pub const H200: &[Rate] = &[
    Rate { m: 8192.0, k: 4096.0, n: 6144.0, bf16: 800.6, fp8: 1402.3 }, // llama-3-8b/tp1/qkv/M8192
    Rate { m: 2048.0, k: 4096.0, n: 6144.0, bf16: 741.6, fp8: 1250.7 }, // llama-3-8b/tp1/qkv/M2048
    Rate { m: 16384.0, k: 4096.0, n: 6144.0, bf16: 780.9, fp8: 1344.5 }, // llama-3-8b/tp1/qkv/M16384
    Rate { m: 8192.0, k: 4096.0, n: 4096.0, bf16: 690.8, fp8: 1201.7 }, // llama-3-8b/tp1/o/M8192
    Rate { m: 2048.0, k: 4096.0, n: 4096.0, bf16: 614.3, fp8: 1015.1 }, // llama-3-8b/tp1/o/M2048
    Rate { m: 16384.0, k: 4096.0, n: 4096.0, bf16: 671.4, fp8: 1333.7 }, // llama-3-8b/tp1/o/M16384
    Rate { m: 8192.0, k: 4096.0, n: 28672.0, bf16: 702.6, fp8: 1297.5 }, // llama-3-8b/tp1/gate_up/M8192
    Rate { m: 2048.0, k: 4096.0, n: 28672.0, bf16: 641.6, fp8: 1240.4 }, // llama-3-8b/tp1/gate_up/M2048
    Rate { m: 16384.0, k: 4096.0, n: 28672.0, bf16: 699.6, fp8: 1359.1 }, // llama-3-8b/tp1/gate_up/M16384
    Rate { m: 8192.0, k: 14336.0, n: 4096.0, bf16: 651.9, fp8: 1235.2 }, // llama-3-8b/tp1/down/M8192
    Rate { m: 2048.0, k: 14336.0, n: 4096.0, bf16: 563.7, fp8: 982.9 }, // llama-3-8b/tp1/down/M2048
    Rate { m: 16384.0, k: 14336.0, n: 4096.0, bf16: 618.3, fp8: 1291.0 }, // llama-3-8b/tp1/down/M16384
    Rate { m: 8192.0, k: 4096.0, n: 3072.0, bf16: 618.3, fp8: 1103.7 }, // llama-3-8b/tp2/qkv/M8192
    Rate { m: 8192.0, k: 2048.0, n: 4096.0, bf16: 612.3, fp8: 1089.7 }, // llama-3-8b/tp2/o/M8192
    Rate { m: 8192.0, k: 4096.0, n: 14336.0, bf16: 703.0, fp8: 1344.0 }, // llama-3-8b/tp2/gate_up/M8192
    Rate { m: 8192.0, k: 7168.0, n: 4096.0, bf16: 651.8, fp8: 1199.8 }, // llama-3-8b/tp2/down/M8192
    Rate { m: 8192.0, k: 4096.0, n: 1536.0, bf16: 606.3, fp8: 1040.8 }, // llama-3-8b/tp4/qkv/M8192
    Rate { m: 8192.0, k: 1024.0, n: 4096.0, bf16: 590.5, fp8: 1046.5 }, // llama-3-8b/tp4/o/M8192
    Rate { m: 8192.0, k: 4096.0, n: 7168.0, bf16: 717.4, fp8: 1334.0 }, // llama-3-8b/tp4/gate_up/M8192
    Rate { m: 8192.0, k: 3584.0, n: 4096.0, bf16: 669.2, fp8: 1189.7 }, // llama-3-8b/tp4/down/M8192
    Rate { m: 8192.0, k: 4096.0, n: 768.0, bf16: 579.9, fp8: 928.3 }, // llama-3-8b/tp8/qkv/M8192
    Rate { m: 8192.0, k: 512.0, n: 4096.0, bf16: 581.4, fp8: 859.5 }, // llama-3-8b/tp8/o/M8192
    Rate { m: 8192.0, k: 4096.0, n: 3584.0, bf16: 697.6, fp8: 1342.0 }, // llama-3-8b/tp8/gate_up/M8192
    Rate { m: 8192.0, k: 1792.0, n: 4096.0, bf16: 680.8, fp8: 1219.8 }, // llama-3-8b/tp8/down/M8192
    Rate { m: 8192.0, k: 8192.0, n: 10240.0, bf16: 720.1, fp8: 1325.1 }, // llama-3-70b/tp1/qkv/M8192
    Rate { m: 8192.0, k: 8192.0, n: 8192.0, bf16: 660.8, fp8: 1338.6 }, // llama-3-70b/tp1/o/M8192
    Rate { m: 8192.0, k: 8192.0, n: 57344.0, bf16: 673.3, fp8: 1229.5 }, // llama-3-70b/tp1/gate_up/M8192
    Rate { m: 8192.0, k: 28672.0, n: 8192.0, bf16: 686.9, fp8: 1295.6 }, // llama-3-70b/tp1/down/M8192
    Rate { m: 8192.0, k: 8192.0, n: 5120.0, bf16: 632.7, fp8: 1292.1 }, // llama-3-70b/tp2/qkv/M8192
    Rate { m: 8192.0, k: 4096.0, n: 8192.0, bf16: 665.7, fp8: 1281.6 }, // llama-3-70b/tp2/o/M8192
    Rate { m: 8192.0, k: 8192.0, n: 28672.0, bf16: 670.7, fp8: 1264.9 }, // llama-3-70b/tp2/gate_up/M8192
    Rate { m: 8192.0, k: 14336.0, n: 8192.0, bf16: 653.3, fp8: 1262.4 }, // llama-3-70b/tp2/down/M8192
    Rate { m: 8192.0, k: 8192.0, n: 2560.0, bf16: 604.5, fp8: 1168.0 }, // llama-3-70b/tp4/qkv/M8192
    Rate { m: 8192.0, k: 2048.0, n: 8192.0, bf16: 645.5, fp8: 1193.7 }, // llama-3-70b/tp4/o/M8192
    Rate { m: 8192.0, k: 8192.0, n: 14336.0, bf16: 693.5, fp8: 1315.2 }, // llama-3-70b/tp4/gate_up/M8192
    Rate { m: 8192.0, k: 7168.0, n: 8192.0, bf16: 648.3, fp8: 1298.1 }, // llama-3-70b/tp4/down/M8192
    Rate { m: 8192.0, k: 8192.0, n: 1280.0, bf16: 610.5, fp8: 1087.4 }, // llama-3-70b/tp8/qkv/M8192
    Rate { m: 8192.0, k: 1024.0, n: 8192.0, bf16: 609.4, fp8: 1057.1 }, // llama-3-70b/tp8/o/M8192
    Rate { m: 8192.0, k: 8192.0, n: 7168.0, bf16: 689.7, fp8: 1330.5 }, // llama-3-70b/tp8/gate_up/M8192
    Rate { m: 8192.0, k: 3584.0, n: 8192.0, bf16: 650.1, fp8: 1220.9 }, // llama-3-70b/tp8/down/M8192
];

/// The measured table of a GPU preset (`None`: none measured; the size curve applies).
///
/// The H100 SXM (`h100-80`) takes the H200's: the same GH100 die (132 SMs, 1,980 MHz boost,
/// 989.4 dense bf16 TFLOP/s) at the same 700 W; only the memory differs (HBM3 3.35 TB/s
/// against HBM3e 4.8), which these compute-bound shapes (over 1,000 FLOP a byte) do not
/// feel. Measured on the published H100 runs: their signed median error −9.6 → −4.5 % (the
/// curve's best-shape ceiling, 0.80, was above 39 of the 40 measured shapes). The PCIe and
/// NVL H100s (350–400 W, lower clocks) and the GH200 keep the curve.
pub fn table(gpu: &str) -> Option<&'static [Rate]> {
    match gpu {
        "h200" | "h100-80" => Some(H200),
        _ => None,
    }
}

/// Efficiency (share of the peak `peak` TFLOP/s) of one `m × k · k × n` GEMM from a
/// measured table: every measured shape's rate carried to this GEMM's size along the size
/// curve, weighted by the inverse cube of its squared distance in log shape (a measured
/// shape returns its own rate; the estimate moves continuously between them, so one token
/// more or less never jumps from one shape's rate to another's).
///
/// # Formula
/// ```text
/// d_i = (ln m/m_i)² + (ln k/k_i)² + (ln n/n_i)²             (squared distance in log shape)
/// e_i = R_i/P · c(F)/c(F_i),   c(F) = F/(F + F_½),   F = 2·m·k·n
/// e   = Σ e_i/d_i³ / Σ 1/d_i³                          (e_j where some d_j = 0)
/// ```
/// The power is the one that predicts the table's own shapes best, each left out in turn
/// (bf16, median |error| of the 40: power 1 4.9 %, 2 3.9 %, 3 3.5 %, 4 3.6 %, 6 3.9 %; the
/// nearest shape alone 4.2 %, the table's median rate 5.5 %, the curve it replaces 20.4 %).
/// `R_i` TFLOP/s of a measured shape (bf16 or fp8), `P` the peak, `F_½` GFLOP the size
/// curve's half point ([`super::Hw::gemm_s`]): shapes outside the table (the small widths of
/// sub-billion models) keep the measured rates of the nearest shapes, lowered as their size
/// falls.
///
/// # Example
/// H200 bf16, Llama 3 8B's QKV at M = 4,096 (K 4,096, N 6,144; 206 GFLOP): the nearest are
/// M = 2,048 (741.6 TFLOP/s) and M = 8,192 (800.6), both at d = (ln 2)² = 0.480 and carried
/// to 0.764 and 0.801 of the peak; with the farther shapes (TP 2's QKV at d = 0.961, …),
/// most of them slower, the estimate is 0.706 (699 TFLOP/s).
pub fn efficiency(t: &[Rate], m: f64, k: f64, n: f64, fp8: bool, peak: f64, half: f64) -> f64 {
    let c = |f: f64| f / (f + half);
    let f = 2.0 * m * k * n / 1e9;
    let (mut num, mut den) = (0.0, 0.0);
    for r in t {
        let d = (m / r.m).ln().powi(2) + (k / r.k).ln().powi(2) + (n / r.n).ln().powi(2);
        let rate = if fp8 { r.fp8 } else { r.bf16 };
        let e = rate / peak * c(f) / c(2.0 * r.m * r.k * r.n / 1e9);
        if d <= 0.0 {
            return e;
        }
        num += e / d.powi(3);
        den += 1.0 / d.powi(3);
    }
    if den > 0.0 {
        num / den
    } else {
        0.0
    }
}

/// FlashAttention's forward + backward rate on an H200, and an H100 SXM as [`table`] says
/// (PyTorch's SDPA, causal, bf16), TFLOP/s,
/// for a call of `f` GFLOP forward + backward (`3.5 ×` the causal forward).
///
/// # Formula
/// `R(F) = 593 · F/(F + 192)`  (TFLOP/s, `F` in GFLOP)
///
/// Fitted through the measured calls of `gemm.jsonl` (`sdpa/…`, fwd+bwd): b 1, s 2,048, 32
/// heads of 128 (120 GFLOP): 228; s 4,096 (481): 430; s 8,192 (1,924): 539; b 4, s 4,096
/// (1,924): 499; 8 heads, 1 KV head, s 8,192 (481): 447. The two-point fit through s 2,048
/// and 8,192 gives 424 at 481 GFLOP.
///
/// # Example
/// F = 481 GFLOP: 593 · 481/673 = 424 TFLOP/s, 0.43 of 989.4 (the flat 0.33 it replaces:
/// 326).
pub fn flash_h200_tflops(f: f64) -> f64 {
    593.0 * f / (f + 192.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A measured shape returns its own rate.
    #[test]
    fn measured_shape_returns_its_rate() {
        let e = efficiency(H200, 8192.0, 4096.0, 6144.0, false, 989.4, 4.0);
        assert!((e * 989.4 - 800.6).abs() < 1e-9, "{e}");
        let e8 = efficiency(H200, 8192.0, 4096.0, 6144.0, true, 1978.9, 4.0);
        assert!((e8 * 1978.9 - 1402.3).abs() < 1e-9, "{e8}");
    }

    /// The doc example: every shape carried along the size curve, weighted by nearness.
    #[test]
    fn unmeasured_shape_by_hand() {
        let e = efficiency(H200, 4096.0, 4096.0, 6144.0, false, 989.4, 4.0);
        let c = |f: f64| f / (f + 4.0);
        let f = 2.0 * 4096.0 * 4096.0 * 6144.0 / 1e9;
        let (mut num, mut den) = (0.0, 0.0);
        for r in H200 {
            let d = (4096.0 / r.m).ln().powi(2)
                + (4096.0 / r.k).ln().powi(2)
                + (6144.0 / r.n).ln().powi(2);
            let fj = 2.0 * r.m * r.k * r.n / 1e9;
            num += r.bf16 / 989.4 * c(f) / c(fj) / d.powi(3);
            den += 1.0 / d.powi(3);
        }
        assert!((e - num / den).abs() < 1e-12, "{e}");
        assert!((e - 0.706).abs() < 1e-3, "{e}");
        // Continuous: one token fewer barely moves it.
        let e1 = efficiency(H200, 4095.0, 4096.0, 6144.0, false, 989.4, 4.0);
        assert!((e1 / e - 1.0).abs() < 1e-3, "{e1} {e}");
        assert!((flash_h200_tflops(481.0) - 423.8).abs() < 0.1);
    }
}
