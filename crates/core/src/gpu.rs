//! The GPU (accelerator) catalogue.
//!
//! Capacities are what the device reports (`nvidia-smi --query-gpu=memory.total`,
//! `rocm-smi --showmeminfo vram`), not the marketing number: an "80 GB" H100 reports
//! 81,559 MiB = 85,520,809,984 bytes = 79.65 GiB. Where no device-reported figure
//! was available the entry says so in its `source` and uses the nominal size.

use super::units::MIB;

/// One accelerator model.
#[derive(Clone, Debug, PartialEq)]
pub struct Gpu {
    /// Query-string id (`gpu=`).
    pub id: &'static str,
    /// Display name.
    pub name: &'static str,
    /// Memory the device reports, in bytes.
    pub capacity_bytes: u64,
    /// Where the capacity comes from.
    pub source: &'static str,
}

const SMI: &str = "nvidia-smi memory.total";
const NOMINAL: &str = "nominal data-sheet size; no device-reported figure on file";

const fn mib(n: u64) -> u64 {
    n * MIB
}

/// NVIDIA compute capability × 10 of a preset (90 Hopper, 100 datacenter Blackwell, 120
/// consumer Blackwell; 0 off NVIDIA or unknown): which fp8 GEMM layouts and scaling recipes
/// Transformer Engine runs on it.
pub fn compute_capability(id: &str) -> u32 {
    match id {
        "h100-80" | "h100-pcie" | "h100-nvl" | "h200" | "gh200" => 90,
        "b200-180" | "b200-192" => 100,
        "rtx5090" => 120,
        "l4" | "l40s" | "rtx4090" => 89,
        "a10" | "a10g" | "rtx3090" => 86,
        "a100-40" | "a100-80" => 80,
        "v100-16" | "v100-32" => 70,
        _ => 0,
    }
}

/// Whether Transformer Engine's per-tensor fp8 GEMMs take any operand layout here, so one
/// quantized copy serves the forward and both backward GEMMs; elsewhere (Hopper, Ada)
/// cuBLAS takes fp8 only as `TN` and every operand the backward reads transposed gets a
/// column-wise copy.
///
/// Source: TransformerEngine `nvte_is_non_tn_fp8_gemm_supported`
/// (`common/transformer_engine.cpp`, v2.8): compute capability 10.0–11.x or ≥ 13.0.
pub fn fp8_any_layout(id: &str) -> bool {
    let cc = compute_capability(id);
    (100..120).contains(&cc) || cc >= 130
}

/// Whether Transformer Engine runs MXFP8 here (`check_mxfp8_support`, v2.8: 10.0–11.x).
pub fn runs_mxfp8(id: &str) -> bool {
    (100..120).contains(&compute_capability(id))
}

/// Whether Transformer Engine runs 1×128 block scaling here
/// (`check_fp8_block_scaling_support`, v2.8: Hopper, CUDA ≥ 12.9).
pub fn runs_blockwise(id: &str) -> bool {
    (90..100).contains(&compute_capability(id))
}

/// Every GPU preset, in display order.
pub const GPUS: &[Gpu] = &[
    Gpu {
        id: "h100-80",
        name: "NVIDIA H100 SXM 80 GB",
        capacity_bytes: mib(81_559),
        source: SMI,
    },
    Gpu {
        id: "h100-pcie",
        name: "NVIDIA H100 PCIe 80 GB",
        capacity_bytes: mib(81_559),
        source: SMI,
    },
    Gpu {
        id: "h100-nvl",
        name: "NVIDIA H100 NVL 94 GB",
        capacity_bytes: mib(95_830),
        source: SMI,
    },
    Gpu {
        id: "h200",
        name: "NVIDIA H200 141 GB",
        capacity_bytes: mib(143_771),
        source: SMI,
    },
    Gpu {
        id: "gh200",
        name: "NVIDIA GH200 96 GB",
        capacity_bytes: mib(97_871),
        source: SMI,
    },
    Gpu {
        id: "b200-180",
        name: "NVIDIA B200 180 GB (HGX)",
        capacity_bytes: mib(183_359),
        source: SMI,
    },
    Gpu {
        id: "b200-192",
        name: "NVIDIA B200 192 GB",
        capacity_bytes: mib(196_608),
        source: NOMINAL,
    },
    Gpu {
        id: "a100-40",
        name: "NVIDIA A100 40 GB",
        capacity_bytes: mib(40_960),
        source: SMI,
    },
    Gpu {
        id: "a100-80",
        name: "NVIDIA A100 80 GB",
        capacity_bytes: mib(81_920),
        source: SMI,
    },
    Gpu {
        id: "l4",
        name: "NVIDIA L4 24 GB",
        capacity_bytes: mib(23_034),
        source: SMI,
    },
    Gpu {
        id: "l40s",
        name: "NVIDIA L40S 48 GB",
        capacity_bytes: mib(46_068),
        source: SMI,
    },
    Gpu {
        id: "a10g",
        name: "NVIDIA A10G 24 GB",
        capacity_bytes: mib(23_028),
        source: SMI,
    },
    Gpu {
        id: "a10",
        name: "NVIDIA A10 24 GB",
        capacity_bytes: mib(23_028),
        source: SMI,
    },
    Gpu {
        id: "v100-16",
        name: "NVIDIA V100 16 GB",
        capacity_bytes: mib(16_160),
        source: SMI,
    },
    Gpu {
        id: "v100-32",
        name: "NVIDIA V100 32 GB",
        capacity_bytes: mib(32_510),
        source: SMI,
    },
    Gpu {
        id: "rtx3090",
        name: "NVIDIA RTX 3090 24 GB",
        capacity_bytes: mib(24_576),
        source: SMI,
    },
    Gpu {
        id: "rtx4090",
        name: "NVIDIA RTX 4090 24 GB",
        capacity_bytes: mib(24_564),
        source: SMI,
    },
    Gpu {
        id: "rtx5090",
        name: "NVIDIA RTX 5090 32 GB",
        capacity_bytes: mib(32_607),
        source: SMI,
    },
    Gpu {
        id: "mi250x",
        name: "AMD MI250X (one GCD, 64 GB)",
        capacity_bytes: 68_702_699_520,
        source: "rocm-smi VRAM total",
    },
    Gpu {
        id: "mi300x",
        name: "AMD MI300X 192 GB",
        capacity_bytes: 205_822_885_888,
        source: "rocm-smi VRAM total",
    },
    Gpu {
        id: "mi325x",
        name: "AMD MI325X 256 GB",
        capacity_bytes: 256 * 1024 * MIB,
        source: NOMINAL,
    },
    Gpu {
        id: "gaudi3",
        name: "Intel Gaudi 3 128 GB",
        capacity_bytes: 128 * 1024 * MIB,
        source: NOMINAL,
    },
    Gpu {
        id: "tpu-v5e",
        name: "Google TPU v5e 16 GB",
        capacity_bytes: 16 * 1024 * MIB,
        source: NOMINAL,
    },
    Gpu {
        id: "tpu-v5p",
        name: "Google TPU v5p 95 GB",
        capacity_bytes: 95 * 1024 * MIB,
        source: NOMINAL,
    },
];

/// Looks a GPU up by its id.
pub fn gpu(id: &str) -> Option<&'static Gpu> {
    GPUS.iter().find(|g| g.id == id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn h100_reports_81559_mib() {
        // DESIGN.md's CLI example: "usable_bytes": 85520809984.
        assert_eq!(gpu("h100-80").unwrap().capacity_bytes, 85_520_809_984);
    }

    /// Every NVIDIA preset has a compute capability (the fp8 recipes read it); the AMD,
    /// Intel and Google ones have none.
    #[test]
    fn nvidia_presets_have_a_compute_capability() {
        for g in GPUS {
            let nvidia =
                !(g.id.starts_with("mi") || g.id.starts_with("gaudi") || g.id.starts_with("tpu"));
            assert_eq!(compute_capability(g.id) > 0, nvidia, "{}", g.id);
        }
        assert!(
            fp8_any_layout("b200-180") && !fp8_any_layout("h100-80") && !fp8_any_layout("rtx5090")
        );
        assert!(runs_mxfp8("b200-192") && !runs_mxfp8("rtx5090") && !runs_mxfp8("h200"));
        assert!(runs_blockwise("gh200") && !runs_blockwise("b200-180"));
    }

    #[test]
    fn ids_are_unique() {
        for (i, a) in GPUS.iter().enumerate() {
            assert!(GPUS[i + 1..].iter().all(|b| b.id != a.id), "{}", a.id);
        }
    }
}
