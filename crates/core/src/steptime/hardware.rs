//! What each GPU computes and moves per second: dense peak TFLOP/s per precision, HBM
//! bandwidth, and the links between GPUs (within a node and across nodes); what a
//! scenario runs on ([`Hw`]): its peaks, GEMM efficiency and the attention kernel's share.

use super::*;

/// One GPU's figures.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Perf {
    /// GPU preset id.
    pub id: &'static str,
    /// Dense peak TFLOP/s of the 16-bit tensor cores (bf16, or fp16 where there is no bf16).
    pub tflops_16: f64,
    /// Dense peak TFLOP/s of fp8 tensor cores (0: none; the 16-bit figure is used).
    pub tflops_fp8: f64,
    /// Dense peak TFLOP/s of tf32 tensor cores (fp32 training's matmuls; 0: plain fp32).
    pub tflops_tf32: f64,
    /// Peak TFLOP/s of plain fp32 (CUDA cores): fp32 matmuls when tf32 is off, PyTorch's
    /// default (0: the tf32 figure, or the 16-bit one, as for a GPU without tf32).
    pub tflops_fp32: f64,
    /// HBM bandwidth, GB/s.
    pub hbm_gbps: f64,
    /// Intra-node bandwidth per GPU, one direction, GB/s (NVLink/NVSwitch, Infinity
    /// Fabric, or PCIe).
    pub intra_gbps: f64,
    /// Inter-node bandwidth per GPU, one direction, GB/s: a node's NICs over its GPUs (the
    /// usual fabric of the GPU's systems, one NIC per GPU on its own rail: 400 Gb/s NDR per
    /// H100 in a DGX H100, 200 Gb/s HDR per A100 in a DGX A100, as llm-foundry's A100 cluster's
    /// "1600 Gbps node-node interconnect (RoCE)"). A ring across nodes uses the NICs of all its
    /// members in a node ([`super::collectives::ring_link`]).
    pub inter_gbps: f64,
    /// Streaming multiprocessors (compute units on AMD) the communication kernels share
    /// with compute; 0 where communication runs on its own engines (Gaudi's on-die NICs,
    /// TPU's ICI DMA).
    pub sms: u32,
    /// Where the figures come from.
    pub source: &'static str,
}

const NV: &str = "NVIDIA data sheets (dense figures: the sparse ones halved)";

/// Every GPU preset's figures.
#[rustfmt::skip]
pub const PERF: &[Perf] = &[
    Perf { id: "h100-80", tflops_16: 989.4, tflops_fp8: 1978.9, tflops_tf32: 494.7, tflops_fp32: 67.0, hbm_gbps: 3350.0, intra_gbps: 450.0, inter_gbps: 50.0, sms: 132, source: "NVIDIA H100 Tensor Core GPU data sheet (SXM5): 989.4 TFLOP/s BF16 dense, 3.35 TB/s, NVLink 900 GB/s; DGX H100: 8 × 400 Gb/s ConnectX-7" },
    Perf { id: "h100-pcie", tflops_16: 756.5, tflops_fp8: 1513.0, tflops_tf32: 378.0, tflops_fp32: 51.2, hbm_gbps: 2000.0, intra_gbps: 64.0, inter_gbps: 50.0, sms: 114, source: NV },
    Perf { id: "h100-nvl", tflops_16: 835.5, tflops_fp8: 1671.0, tflops_tf32: 417.5, tflops_fp32: 60.0, hbm_gbps: 3900.0, intra_gbps: 300.0, inter_gbps: 50.0, sms: 132, source: NV },
    Perf { id: "h200", tflops_16: 989.4, tflops_fp8: 1978.9, tflops_tf32: 494.7, tflops_fp32: 67.0, hbm_gbps: 4800.0, intra_gbps: 450.0, inter_gbps: 50.0, sms: 132, source: "NVIDIA H200 data sheet (SXM): 4.8 TB/s, NVLink 900 GB/s" },
    Perf { id: "gh200", tflops_16: 989.4, tflops_fp8: 1978.9, tflops_tf32: 494.7, tflops_fp32: 67.0, hbm_gbps: 4000.0, intra_gbps: 450.0, inter_gbps: 50.0, sms: 132, source: NV },
    Perf { id: "b200-180", tflops_16: 2250.0, tflops_fp8: 4500.0, tflops_tf32: 1100.0, tflops_fp32: 75.0, hbm_gbps: 8000.0, intra_gbps: 900.0, inter_gbps: 50.0, sms: 148, source: "NVIDIA HGX B200 data sheet (per GPU, dense): 2.25 PFLOP/s BF16, 8 TB/s, NVLink 1.8 TB/s" },
    Perf { id: "b200-192", tflops_16: 2250.0, tflops_fp8: 4500.0, tflops_tf32: 1100.0, tflops_fp32: 75.0, hbm_gbps: 8000.0, intra_gbps: 900.0, inter_gbps: 50.0, sms: 148, source: NV },
    Perf { id: "a100-40", tflops_16: 312.0, tflops_fp8: 0.0, tflops_tf32: 156.0, tflops_fp32: 19.5, hbm_gbps: 1555.0, intra_gbps: 300.0, inter_gbps: 25.0, sms: 108, source: "NVIDIA A100 data sheet (SXM4 40 GB): 312 TFLOP/s BF16 dense, 1,555 GB/s, NVLink 600 GB/s; DGX A100: 8 × 200 Gb/s HDR" },
    Perf { id: "a100-80", tflops_16: 312.0, tflops_fp8: 0.0, tflops_tf32: 156.0, tflops_fp32: 19.5, hbm_gbps: 2039.0, intra_gbps: 300.0, inter_gbps: 25.0, sms: 108, source: "NVIDIA A100 data sheet (SXM4 80 GB): 312 TFLOP/s BF16 dense, 2,039 GB/s, NVLink 600 GB/s; DGX A100: 8 × 200 Gb/s HDR" },
    Perf { id: "l4", tflops_16: 121.0, tflops_fp8: 242.5, tflops_tf32: 60.0, tflops_fp32: 30.3, hbm_gbps: 300.0, intra_gbps: 32.0, inter_gbps: 12.5, sms: 58, source: NV },
    Perf { id: "l40s", tflops_16: 362.05, tflops_fp8: 733.0, tflops_tf32: 183.0, tflops_fp32: 91.6, hbm_gbps: 864.0, intra_gbps: 32.0, inter_gbps: 25.0, sms: 142, source: NV },
    Perf { id: "a10g", tflops_16: 125.0, tflops_fp8: 0.0, tflops_tf32: 62.5, tflops_fp32: 31.2, hbm_gbps: 600.0, intra_gbps: 32.0, inter_gbps: 12.5, sms: 80, source: NV },
    Perf { id: "a10", tflops_16: 125.0, tflops_fp8: 0.0, tflops_tf32: 62.5, tflops_fp32: 31.2, hbm_gbps: 600.0, intra_gbps: 32.0, inter_gbps: 12.5, sms: 72, source: NV },
    Perf { id: "v100-16", tflops_16: 125.0, tflops_fp8: 0.0, tflops_tf32: 0.0, tflops_fp32: 15.7, hbm_gbps: 900.0, intra_gbps: 150.0, inter_gbps: 12.5, sms: 80, source: "NVIDIA V100 data sheet (SXM2): 125 TFLOP/s FP16 tensor, 900 GB/s, NVLink 300 GB/s" },
    Perf { id: "v100-32", tflops_16: 125.0, tflops_fp8: 0.0, tflops_tf32: 0.0, tflops_fp32: 15.7, hbm_gbps: 900.0, intra_gbps: 150.0, inter_gbps: 12.5, sms: 80, source: NV },
    Perf { id: "rtx3090", tflops_16: 71.0, tflops_fp8: 0.0, tflops_tf32: 35.6, tflops_fp32: 35.6, hbm_gbps: 936.0, intra_gbps: 32.0, inter_gbps: 3.125, sms: 82, source: "NVIDIA Ampere GA102 whitepaper (RTX 3090: 71 TFLOP/s FP16 tensor with FP32 accumulate, dense)" },
    Perf { id: "rtx4090", tflops_16: 165.2, tflops_fp8: 330.3, tflops_tf32: 82.6, tflops_fp32: 82.6, hbm_gbps: 1008.0, intra_gbps: 32.0, inter_gbps: 3.125, sms: 128, source: "NVIDIA Ada Lovelace whitepaper (RTX 4090: 165.2 TFLOP/s FP16 tensor with FP32 accumulate, dense)" },
    Perf { id: "rtx5090", tflops_16: 209.5, tflops_fp8: 419.0, tflops_tf32: 104.8, tflops_fp32: 104.8, hbm_gbps: 1792.0, intra_gbps: 64.0, inter_gbps: 3.125, sms: 170, source: "NVIDIA Blackwell RTX whitepaper (RTX 5090, dense)" },
    Perf { id: "mi250x", tflops_16: 383.0, tflops_fp8: 0.0, tflops_tf32: 95.7, tflops_fp32: 0.0, hbm_gbps: 3276.8, intra_gbps: 200.0, inter_gbps: 25.0, sms: 220, source: "AMD Instinct MI250X data sheet (both dies)" },
    Perf { id: "mi300x", tflops_16: 1307.4, tflops_fp8: 2614.9, tflops_tf32: 653.7, tflops_fp32: 0.0, hbm_gbps: 5300.0, intra_gbps: 448.0, inter_gbps: 50.0, sms: 304, source: "AMD Instinct MI300X data sheet (dense): 1,307.4 TFLOP/s BF16, 5.3 TB/s, 7 × 64 GB/s Infinity Fabric" },
    Perf { id: "mi325x", tflops_16: 1307.4, tflops_fp8: 2614.9, tflops_tf32: 653.7, tflops_fp32: 0.0, hbm_gbps: 6000.0, intra_gbps: 448.0, inter_gbps: 50.0, sms: 304, source: "AMD Instinct MI325X data sheet" },
    Perf { id: "gaudi3", tflops_16: 1835.0, tflops_fp8: 1835.0, tflops_tf32: 0.0, tflops_fp32: 0.0, hbm_gbps: 3700.0, intra_gbps: 262.5, inter_gbps: 37.5, sms: 0, source: "Intel Gaudi 3 white paper (MME BF16/FP8 1,835 TFLOP/s; 24 × 200 GbE, 21 inside the node)" },
    Perf { id: "tpu-v5e", tflops_16: 197.0, tflops_fp8: 0.0, tflops_tf32: 0.0, tflops_fp32: 0.0, hbm_gbps: 819.0, intra_gbps: 100.0, inter_gbps: 25.0, sms: 0, source: "Google Cloud TPU v5e documentation (197 TFLOP/s BF16, 819 GB/s HBM, ICI 1,600 Gbps)" },
    Perf { id: "tpu-v5p", tflops_16: 459.0, tflops_fp8: 0.0, tflops_tf32: 0.0, tflops_fp32: 0.0, hbm_gbps: 2765.0, intra_gbps: 300.0, inter_gbps: 25.0, sms: 0, source: "Google Cloud TPU v5p documentation (459 TFLOP/s BF16, 2,765 GB/s HBM, ICI 4,800 Gbps)" },
];

/// The figures of GPU preset `id` (an H100's when unknown).
pub fn perf(id: &str) -> &'static Perf {
    PERF.iter().find(|p| p.id == id).unwrap_or(&PERF[0])
}

/// The hardware figures a scenario runs on: the GPU preset's, with the `tflops`,
/// `hbm_bw`, `intra_bw` and `inter_bw` overrides.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hw {
    /// Dense peak TFLOP/s of the compute precision's matmuls.
    pub tflops: f64,
    /// HBM GB/s.
    pub hbm: f64,
    /// Intra-node GB/s per GPU, one direction.
    pub intra: f64,
    /// Inter-node GB/s per GPU, one direction.
    pub inter: f64,
    /// The best-shape GEMM efficiency (MAMF / peak).
    pub gemm_ceiling: f64,
    /// GFLOP of one GEMM at which it reaches half its ceiling.
    pub gemm_half_gflop: f64,
    /// NVLink SHARP (NVLS) all-reduce in the node (Hopper and Blackwell NVSwitch systems).
    pub nvls: bool,
    /// Dense peak TFLOP/s of 16-bit matmuls: what the GEMMs fp8 training leaves in 16 bits
    /// run at (the logits, eager attention). Equals `tflops` outside fp8.
    pub tflops16: f64,
    /// The 16-bit best-shape GEMM efficiency (`gemm_ceiling` outside fp8).
    pub ceiling16: f64,
    /// Streaming multiprocessors (0: communication has its own engines).
    pub sms: f64,
    /// Measured GEMM rates by shape ([`gemm_table`]; `None`: the size curve at the peak).
    pub table: Option<&'static [gemm_table::Rate]>,
    /// The compute precision's GEMMs are fp8 (the table's fp8 column).
    pub fp8: bool,
    /// GEMMs off the 16-byte grain slow down ([`MISALIGNED_RATE`]): tensor-core GEMMs under
    /// Hugging Face modules, whose vocabulary is not padded (Megatron and DeepSpeed pad it
    /// to `128·t`; fp32 on the CUDA cores has no such rule).
    pub misaligned_slow: bool,
    /// Bytes of a GEMM's input element (fp8 1, 16-bit 2, fp32 4) and of its output (fp8
    /// writes 16-bit): the traffic of [`Hw::gemm_mkn_s`]'s memory floor.
    pub gemm_bytes: (f64, f64),
}

/// The peak of fp32 training's matmuls, TFLOP/s: tf32 tensor cores where tf32 is on
/// (`tf32=on`, or `auto` under Megatron), the CUDA cores' plain fp32 where it is off
/// (`auto` under PyTorch, DeepSpeed and the HF Trainer: PyTorch's
/// `torch.backends.cuda.matmul.allow_tf32 = False` since 1.12).
///
/// # Formula
/// ```text
/// P = P_tf32   if tf32          (0: P_16)
/// P = P_fp32   otherwise        (0: P_tf32, then P_16)
/// ```
/// Source: PyTorch docs "TensorFloat-32 (TF32) on Ampere (and later) devices"; NVIDIA data
/// sheets (H100/H200 SXM: 67 TFLOP/s FP32, 494.7 TF32 dense). Found on the CUDA calibration
/// runs: the four fp32 `transformers` steps (C04, C07, C19, C23) took 6–7× memfit's time at
/// the tf32 peak.
///
/// # Example
/// H200, precision=fp32, framework=pytorch: 67 TFLOP/s; with `tf32=on`: 494.7.
pub(crate) fn fp32_peak(s: &Scenario, p: &Perf) -> f64 {
    if plain_fp32(s, p) {
        p.tflops_fp32
    } else if p.tflops_tf32 > 0.0 {
        p.tflops_tf32
    } else {
        p.tflops_16
    }
}

/// Whether fp32 training's matmuls run as plain fp32 on the CUDA cores (see `fp32_peak`).
pub(crate) fn plain_fp32(s: &Scenario, p: &Perf) -> bool {
    let tf32 = match s.runtime.tf32 {
        crate::scenario::Tf32::On => true,
        crate::scenario::Tf32::Off => false,
        crate::scenario::Tf32::Auto => s.stack.framework == Framework::Megatron,
    };
    s.numerics.precision == Precision::Fp32 && !tf32 && p.tflops_fp32 > 0.0
}

impl Hw {
    /// The scenario's hardware.
    pub fn of(s: &Scenario) -> Hw {
        let p: &Perf = perf(&s.cluster.gpu);
        let tflops = match s.numerics.precision {
            Precision::Fp8 if p.tflops_fp8 > 0.0 => p.tflops_fp8,
            Precision::Fp32 => fp32_peak(s, p),
            _ => p.tflops_16,
        };
        let (ceiling16, half) = gemm_curve(&s.cluster.gpu);
        let h = &s.hardware;
        let fp8 = s.numerics.precision == Precision::Fp8 && p.tflops_fp8 > 0.0;
        let (ceiling, tflops16) = if fp8 {
            // A `tflops` override is the fp8 peak; the 16-bit one keeps the preset's ratio.
            let t16 = h
                .tflops
                .map_or(p.tflops_16, |t| t * p.tflops_16 / p.tflops_fp8);
            (fp8_ceiling(&s.cluster.gpu, ceiling16), t16)
        } else if plain_fp32(s, p) && matches!(s.cluster.gpu.as_str(), "h200" | "h100-80") {
            (FP32_CEILING_H200, h.tflops.unwrap_or(tflops))
        } else {
            (ceiling16, h.tflops.unwrap_or(tflops))
        };
        // The measured rates are of bf16 and fp8 at the preset's own peak: fp32 and a
        // `tflops` override keep the curve.
        let table = if s.numerics.precision == Precision::Fp32 || h.tflops.is_some() {
            None
        } else {
            gemm_table::table(&s.cluster.gpu)
        };
        Hw {
            table,
            fp8,
            misaligned_slow: !plain_fp32(s, p) && super::eager::applies(s),
            gemm_bytes: match s.numerics.precision {
                Precision::Fp8 if fp8 => (1.0, 2.0),
                Precision::Fp32 => (4.0, 4.0),
                _ => (2.0, 2.0),
            },
            tflops16,
            ceiling16,
            sms: p.sms as f64,
            tflops: h.tflops.unwrap_or(tflops),
            hbm: h.hbm_bw.unwrap_or(p.hbm_gbps),
            intra: h.intra_bw.unwrap_or(p.intra_gbps),
            inter: h.inter_bw.unwrap_or(p.inter_gbps),
            gemm_ceiling: ceiling,
            // The curve's F_½ is a fixed latency at the tensor cores' peak (F_½ = τ·P): on the
            // CUDA cores' plain fp32 it shrinks with the peak, or the many small GEMMs of eager
            // attention would each pay the tensor cores' F_½ at a seventh of their speed.
            gemm_half_gflop: if plain_fp32(s, p) {
                half * p.tflops_fp32 / p.tflops_16
            } else {
                half
            },
            nvls: matches!(
                s.cluster.gpu.as_str(),
                "h100-80" | "h200" | "gh200" | "b200-180" | "b200-192"
            ),
        }
    }
    /// Seconds for one GEMM of `gflop` GFLOP.
    ///
    /// # Formula
    /// `t = F / (P · e(F))`,  `e(F) = e_max · F/(F + F_½)`
    ///
    /// `e_max` the best-shape efficiency (A100 0.87, H100 0.80, B200 0.78 bf16), `F_½` the
    /// single-GEMM size at which half of it is reached (A100 7 GFLOP, H100 4 GFLOP): the
    /// measured curves of cuBLAS square GEMMs (NVIDIA "CUDA 11 Features Revealed", Fig. 6:
    /// A100 0.28 at 1024³, 0.63 at 2048³, 0.83 at 4096³) and XLA's measured matmul table
    /// (H100: 0.26, 0.65, 0.79); MAMF ceilings from stas00/ml-engineering (744d01e).
    ///
    /// # Example
    /// H100, a 137 GFLOP GEMM (4096³): e = 0.80·137/141 = 0.777, t = 0.178 ms.
    pub fn gemm_s(&self, gflop: f64) -> f64 {
        let e = self.gemm_ceiling * gflop / (gflop + self.gemm_half_gflop);
        gflop * 1e9 / (self.tflops * 1e12 * e.max(1e-3))
    }
    /// Seconds for one GEMM fp8 training runs in 16 bits ([`Hw::gemm_s`]'s curve at the
    /// 16-bit peak and ceiling; the same as `gemm_s` outside fp8).
    ///
    /// Megatron-LM builds its output layer (the logits) as `tensor_parallel.
    /// ColumnParallelLinear`, outside Transformer Engine's fp8 autocast (an fp8 LM head is
    /// opt-in since 2026-05, `fp8_output_proj` with MXFP8: `megatron/core/models/gpt/
    /// gpt_model.py`, d98e8a6); llm-foundry's MPT takes its logits with `F.linear` on the
    /// tied embedding, outside `te.Linear`.
    ///
    /// # Example
    /// H100 in fp8, the logits of Llama 3 8B over 4,096 tokens (4.3 TFLOP): 16-bit
    /// 4,304 GFLOP/(989.4 TFLOP/s · 0.80·4,304/4,308) = 5.44 ms, against 3.07 ms at the fp8
    /// peak and ceiling (0.709).
    pub fn gemm16_s(&self, gflop: f64) -> f64 {
        let e = self.ceiling16 * gflop / (gflop + self.gemm_half_gflop);
        gflop * 1e9 / (self.tflops16 * 1e12 * e.max(1e-3))
    }
    /// Seconds for `count` GEMMs of `m × k · k × n` at the compute precision: the measured
    /// rates by shape where the GPU has a table ([`gemm_table::efficiency`]), else
    /// [`Hw::gemm_s`]'s curve, on which `count` GEMMs go as one of `count` times the FLOPs
    /// (as memfit has always timed the experts' GEMMs).
    ///
    /// # Example
    /// H200 bf16, 8,192 × 4,096 · 4,096 × 6,144 (412 GFLOP), a measured shape: 800.6 TFLOP/s,
    /// 0.515 ms (the curve: 0.80 · 412/416 of 989.4 = 784, 0.526 ms).
    pub fn gemm_mkn_s(&self, m: f64, k: f64, n: f64, count: f64) -> f64 {
        let e = |t| gemm_table::efficiency(t, m, k, n, self.fp8, self.tflops, self.gemm_half_gflop);
        self.table_or_curve([m, k, n, count], self.tflops, e, |f| self.gemm_s(f))
    }
    /// [`Hw::gemm_mkn_s`] for a GEMM fp8 training keeps in 16 bits ([`Hw::gemm16_s`]).
    pub fn gemm16_mkn_s(&self, m: f64, k: f64, n: f64) -> f64 {
        let e = |t| gemm_table::efficiency(t, m, k, n, false, self.tflops16, self.gemm_half_gflop);
        self.table_or_curve([m, k, n, 1.0], self.tflops16, e, |f| self.gemm16_s(f))
    }
    /// `count` GEMMs of `[m, k, n, count]` at the table's efficiency `e` of the peak `peak`
    /// TFLOP/s, or on the curve.
    fn table_or_curve(
        &self,
        [m, k, n, count]: [f64; 4],
        peak: f64,
        e: impl Fn(&'static [gemm_table::Rate]) -> f64,
        curve: impl Fn(f64) -> f64,
    ) -> f64 {
        let gflop = 2.0 * m * k * n / 1e9;
        // A leading dimension off the 16-byte grain (K or N not a multiple of 8 values).
        let off = |v: f64| v.fract() == 0.0 && v % 8.0 != 0.0;
        let slow = if self.misaligned_slow && (off(k) || off(n)) {
            1.0 / MISALIGNED_RATE
        } else {
            1.0
        };
        let compute = slow
            * match self.table {
                Some(t) => count * gflop * 1e9 / (peak * 1e12 * e(t).max(1e-3)),
                None => curve(count * gflop),
            };
        compute.max(count * self.gemm_floor_s(m, k, n))
    }

    /// The memory floor of one GEMM: its operands read and its result written once at the
    /// measured copy rate, seconds. It binds where `M` is small (a few tokens per expert,
    /// decoding): the weights are read whole for few rows.
    ///
    /// # Formula
    /// `t ≥ ((m·k + k·n)·b_in + m·n·b_out) / (0.89·B_HBM)` (bytes over B/s; `b` the element
    /// bytes, [`Hw::gemm_bytes`]; 0.89 the copy rate measured over the data sheet's,
    /// `eager::HBM_COPY`).
    ///
    /// Measured (`tests/data/cuda_h100/gemm.jsonl`, `set: moe`, bf16 on an H100): one expert of
    /// Mixtral 8×7B (4,096 → 28,672) at 16 tokens ran at 37.6 TFLOP/s (its floor: 235 MB in
    /// 78.8 µs, 47.7 TFLOP/s; the size curve alone said 325); DeepSeek-V3's (7,168 → 4,096) at
    /// 64 tokens at 121 (floor 193). At 1,024 tokens and over no measured expert GEMM is near
    /// its floor.
    ///
    /// # Example
    /// H100 SXM bf16, 16 × 4,096 · 4,096 × 28,672: (65,536 + 117,440,512)·2 + 458,752·2 B =
    /// 235.9 MB at 0.89·3,350 GB/s = 2,982 GB/s: 79.1 µs.
    pub fn gemm_floor_s(&self, m: f64, k: f64, n: f64) -> f64 {
        let (b_in, b_out) = self.gemm_bytes;
        ((m * k + k * n) * b_in + m * n * b_out) / (super::eager::HBM_COPY * self.hbm * 1e9)
    }
}

/// The composed kernels' rate, B/s, on a GPU of `sms` streaming multiprocessors and
/// `hbm_gbps` GB/s of HBM: [`super::eager::COMPOSED_RATE`] of the H200's data-sheet HBM rate
/// as an absolute rate of the SMs that issue those strided, unvectorized loops (scaled by the
/// SM count), never above the GPU's copy rate.
///
/// # Formula
/// `r = min(0.452·4,800e9·n_SM/132, HBM_COPY·B_HBM)` (B/s; `n_SM` the preset's
/// streaming multiprocessors, `B_HBM` its data-sheet HBM rate).
///
/// Measured (set H, `tests/data/cuda_h100`): the same `transformers` steps on an H100 SXM
/// (132 SMs at the H200's clocks, HBM3 3.35 TB/s against 4.8; copy measured 3.01 against
/// 4.27 TB/s) took 1.02–1.30 times the H200's (bf16 median 1.11), where charging these
/// kernels at 0.452 of the H100's HBM rate predicted 1.11–1.36 (the H100 calibration third:
/// median +7.4 %, max +23.9 %, all but 8 of 33 over). The SMs, not HBM, bound them.
///
/// # Example
/// H200: min(2,170, 4,273) GB/s = 2,170 (unchanged); H100 SXM: min(2,170, 2,982) = 2,170
/// (was 1,514); A100 (108 SMs): min(1,775, 1,815) = 1,775.
pub fn composed_rate(sms: u32, hbm_gbps: f64) -> f64 {
    (super::eager::COMPOSED_RATE * 4800e9 * f64::from(sms) / 132.0)
        .min(super::eager::HBM_COPY * hbm_gbps * 1e9)
}

/// The best-shape efficiency of plain fp32 matmuls on an H200's (and H100 SXM's) CUDA cores
/// (cuBLAS SGEMM, PyTorch's default `allow_tf32 = False`), over their 67 TFLOP/s.
///
/// Measured: the fp32 forward GEMMs at the linear layers of six small models
/// (`tests/data/cuda_h200_d/gemm.jsonl`, set "small", M = 4,096 and 16,384) ran at 49.6
/// TFLOP/s median, 0.74 of 67 (35.5–44 at the narrowest shapes); the same 60 shapes on an H100
/// SXM (`tests/data/cuda_h100/gemm.jsonl`) at 0.95–1.17 times the H200's time, median 1.00.
/// Until the seventh session this was 0.68, calibrated on the step C19 with its attention
/// charged at FlashAttention's 16-bit rate; with that attention on the CUDA cores
/// ([`FP32_SDPA_SHARE`]) the measured rate fits: fp32 steps on the H200, C02 +9.4 → +4.5 %,
/// C04 +5.9 → +0.1 %, C19 +2.0 → +5.5 %, C22 −6.1 → +0.5 %, C23 +4.4 → −1.2 %. Other GPUs
/// keep their 16-bit ceiling for fp32.
///
/// # Example
/// H200, `precision=fp32`, a 137 GFLOP GEMM: F_½ scaled to the CUDA cores 4·67/989.4 =
/// 0.27 GFLOP, e = 0.74·137/137.27 = 0.739, t = 137e9/(67e12·0.739) = 2.77 ms.
pub(crate) const FP32_CEILING_H200: f64 = 0.74;

/// The share of its rate a tensor-core GEMM keeps when its K or N (a leading dimension in
/// PyTorch's row-major layout; M never is) is not a multiple of 8 values (16 B of a 16-bit
/// type): cuBLAS then runs kernels for a smaller alignment (NVIDIA "Matrix Multiplication
/// Background User's Guide", Tensor Core requirements). GPT-2's vocabulary, 50,257, is the
/// common case: the LM head's three GEMMs. Counted under Hugging Face modules only:
/// Megatron and DeepSpeed pad the vocabulary to a multiple of `128·t`
/// (`--make-vocab-size-divisible-by`), and their other widths are chosen aligned.
///
/// # Formula
/// `t = t_aligned / r`, `r = R_misaligned / R_aligned`, both TFLOP/s of forward, data and
/// weight gradient together (`3·F / (t_fwd + t_dgrad + t_wgrad)`), `R_aligned` the table's
/// rate at the same `M, K, N` ([`super::gemm_table::efficiency`], what `r` multiplies).
///
/// Measured (`tests/data/cuda_h200_d/gemm.jsonl`, set "small", torch 2.11.0+cu130 on an
/// H200): GPT-2 medium's LM head, K 1,024, N 50,257, ran at 122.0 TFLOP/s at M = 4,096 and
/// 124.0 at M = 16,384 (forward 96–97, gradients 137–149), where the table gives the aligned
/// shape 670 and 687: `r` = 0.182 and 0.180; the aligned LM heads of the same file run at
/// 692–776. The same GEMM in plain fp32 (CUDA cores, no tensor-core alignment) runs at
/// 50.7–51.3, like every other fp32 shape. (The 0.5 used before came from nanoGPT's "~25 %"
/// faster step with the vocabulary padded, an A100 under `torch.compile`.)
///
/// # Example
/// GPT-2 medium's logits over 8,192 tokens on an H200 (2·8,192·1,024·50,257 = 843 GFLOP a
/// pass): 1.24 ms at the table's 682 TFLOP/s, 6.86 ms misaligned (123 TFLOP/s).
pub(crate) const MISALIGNED_RATE: f64 = 0.18;

/// `(e_max, F_½)` of a GPU's GEMM efficiency curve (see [`Hw::gemm_s`]).
pub(crate) fn gemm_curve(gpu: &str) -> (f64, f64) {
    match gpu {
        "a100-40" | "a100-80" => (0.87, 7.0),
        "h100-80" | "h100-pcie" | "h100-nvl" | "h200" | "gh200" => (0.80, 4.0),
        "b200-180" | "b200-192" => (0.78, 13.0),
        "mi300x" | "mi325x" => (0.55, 8.0),
        _ => (0.75, 6.0),
    }
}

/// The attention kernel's share of the 16-bit peak, forward and backward together.
///
/// - FlashAttention-2 on an A100: 50–73 % forward, about 60 % forward + backward (Dao 2023,
///   Fig. 4–6): 0.55.
/// - On Hopper, FlashAttention-2 (PyTorch's SDPA, llm-foundry, torchtitan) reaches about
///   350 TFLOP/s forward and less backward, 0.33 of 989 (Shah et al. 2024, FlashAttention-3,
///   Fig. 5–7); Transformer Engine's cuDNN / FlashAttention-3 kernels (Megatron, NeMo)
///   600–740 forward: 0.55.
/// - FlashAttention-1 and the 2022 Triton kernel (`attn=flash1`): half of FlashAttention-2
///   on the same GPU, 0.275 (A100) and 0.165 (Hopper and later). FlashAttention-2 is
///   "around 2× faster than FlashAttention", which reached "25–40 % of the theoretical
///   maximum" on an A100 (Dao 2023, abstract and §1); the Triton kernel llm-foundry ran as
///   `attn_impl: triton` is "slightly slower than [the] CUDA [FlashAttention-1] forward +
///   backward" and built on pre-Hopper Triton (its docstring, `llmfoundry/models/layers/
///   flash_attn_triton.py`, b2a43a1).
/// - Eager attention (the scores materialised): its two batched GEMMs run over the full
///   `s²` (the mask is applied after), at [`Hw::gemm_s`]'s efficiency for one head's GEMM,
///   and the softmax (and dropout) pass over the scores is memory-bound.
pub(crate) fn attention_efficiency(s: &Scenario) -> f64 {
    let hopper_plus = matches!(
        s.cluster.gpu.as_str(),
        "h100-80" | "h100-pcie" | "h100-nvl" | "h200" | "gh200" | "b200-180" | "b200-192"
    );
    match (s.activations.attn, hopper_plus) {
        (Attn::Flash1, true) => 0.33 / 2.0,
        (Attn::Flash1, false) => 0.55 / 2.0,
        (_, true) if s.stack.framework != Framework::Megatron => 0.33,
        _ => 0.55,
    }
}

/// Backward attention work over forward (FlashAttention recomputes the scores: 2.5×).
pub(crate) const ATTENTION_BACKWARD: f64 = 2.5;

/// PyTorch SDPA's memory-efficient kernel in fp32 (multi-head attention under
/// `precision=fp32`, where FlashAttention takes no fp32; grouped-query attention runs the
/// math fallback instead): its share of the GPU's plain fp32 peak, forward and backward
/// alike. The kernel computes on the CUDA cores whatever `allow_tf32` says: TF32 speeds up
/// the linear layers, not it.
///
/// # Formula
/// `t_attn = F_attn / (0.38 · P_fp32)` per pass (s; `F_attn` the causal attention FLOPs,
/// `P_fp32` the plain fp32 peak, 67 TFLOP/s on Hopper).
///
/// Calibrated on one run (**calibrated**): C19 (SmolLM2 1.7B, 32 heads of 64, 4 × 2,048, fp32)
/// measured with TF32 on an H100 (`tests/data/cuda_h100/tf32/train.jsonl`, calibration) took
/// 0.631 s where memfit with its attention at FlashAttention's rate gave 0.417: the 0.214 s
/// more over the 5.77 TFLOP of its 24 layers' attention (forward + backward) leaves 25.3
/// TFLOP/s, 0.38 of 67. TF32 runs after (11): median 4.5 %, max 20.6 % (D36, held out, Phi-3
/// mini's head size 96; was −30.1 %); C19 −33.8 → −0.7 %.
///
/// # Example
/// C19's step on an H200: 24 · 3.5 · 68.7 GFLOP = 5.77 TFLOP at 0.38 · 67 = 25.5 TFLOP/s:
/// 0.227 s of attention.
pub(crate) const FP32_SDPA_SHARE: f64 = 0.38;

/// FP8 GEMMs' best-shape efficiency, MAMF over the dense fp8 peak (stas00/ml-engineering
/// 744d01e, `compute/accelerator/README.md`, FP8 `float8_e4m3fn` table): H100 SXM 1,402.6
/// of 1,979 (0.709), H200 1,453.4 (0.734), GH200 1,535.0 (0.776), B200 3,432.5 of 4,500
/// (0.763); GPUs without a measurement take the H100's, capped by their 16-bit ceiling.
pub(crate) fn fp8_ceiling(gpu: &str, ceiling16: f64) -> f64 {
    match gpu {
        "h200" => 0.734,
        "gh200" => 0.776,
        "b200-180" | "b200-192" => 0.763,
        _ => ceiling16.min(0.709),
    }
}

/// Share of HBM bandwidth element-wise kernels reach (STREAM-like copies; Calculon's
/// memory efficiency for accesses over 100 MB is 0.90, over 10 MB 0.75).
pub(crate) const HBM_EFFICIENCY: f64 = 0.80;

#[cfg(test)]
mod tests {
    use super::*;

    /// Every GPU preset has its figures.
    #[test]
    fn every_gpu_has_figures() {
        for g in crate::gpu::GPUS {
            assert!(PERF.iter().any(|p| p.id == g.id), "{} has no figures", g.id);
        }
        for p in PERF {
            assert!(
                p.tflops_16 > 0.0 && p.hbm_gbps > 0.0 && p.intra_gbps > 0.0 && p.inter_gbps > 0.0,
                "{}",
                p.id
            );
        }
    }

    /// The doc example of [`Hw::gemm_floor_s`], by hand: (16·4,096 + 4,096·28,672)·2 +
    /// 16·28,672·2 = 235,929,600 B at 0.8902·3,350e9 B/s.
    #[test]
    fn gemm_floor_by_hand() {
        let s = crate::contract::query::decode("framework=megatron&gpu=h100-80")
            .0
            .scenario;
        let hw = Hw::of(&s);
        let bytes = (16.0 * 4096.0 + 4096.0 * 28672.0) * 2.0 + 16.0 * 28672.0 * 2.0;
        assert_eq!(bytes, 235_929_600.0);
        let t = bytes / (4.273 / 4.8 * 3350e9);
        assert!((hw.gemm_floor_s(16.0, 4096.0, 28672.0) - t).abs() < 1e-12);
        assert!((t - 79.1e-6).abs() < 0.1e-6);
        // The floor binds there, and not at a dense training shape.
        assert_eq!(hw.gemm_mkn_s(16.0, 4096.0, 28672.0, 1.0), t);
        let dense = hw.gemm_mkn_s(8192.0, 4096.0, 4096.0, 1.0);
        assert!(dense > hw.gemm_floor_s(8192.0, 4096.0, 4096.0) * 3.0);
    }
}
