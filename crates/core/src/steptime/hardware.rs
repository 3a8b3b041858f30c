//! What each GPU computes and moves per second: dense peak TFLOP/s per precision, HBM
//! bandwidth, and the links between GPUs (within a node and across nodes).

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
    /// Inter-node bandwidth per GPU, one direction, GB/s (the usual fabric of the GPU's
    /// systems: 400 Gb/s NDR per H100, 200 Gb/s HDR per A100).
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
}
