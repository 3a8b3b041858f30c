//! DeepSpeed's ZeRO model-states estimators, reproduced to the byte.
//!
//! DeepSpeed ships `estimate_zero2_model_states_mem_needs` and
//! `estimate_zero3_model_states_mem_needs` (seed 000 documents them). They count
//! model states only — parameters, gradients, optimizer states — per GPU and per
//! node of host RAM, and they compute in Python floats and truncate with `int()`.
//! This module replays that arithmetic in `f64` in the same order, so results
//! match the tool exactly (checked against `reference/deepspeed_estimators.json`).
//!
//! Three variants exist and disagree:
//! - **doc** (seed 000's page): ZeRO-2 no offload `4P + 16P/G`; ZeRO-2 CPU offload
//!   host RAM `P·max(4n, 16)·abf` with `n` = GPUs per node.
//! - **0.14.2** code: as the doc, except CPU offload uses *total* GPUs `G` in `max(4G, 16)`.
//! - **0.19.8** code (≥ 0.14.3, PR #5099): ZeRO-2 no offload `2P + 18P/G`
//!   (fp16 params and grads counted at 2 bytes, not 4).
//!
//! ZeRO-3 is identical in all three.

use serde::{Deserialize, Serialize};

/// Which DeepSpeed formula set to replay.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum DsVersion {
    /// The docs page (seed 000), applied literally.
    Doc,
    /// DeepSpeed ≤ 0.14.2.
    V0_14,
    /// DeepSpeed ≥ 0.14.3 (checked against 0.19.8).
    V0_19,
}

/// The inputs DeepSpeed's estimators take.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DsInputs {
    /// `total_params`, `P`.
    pub total_params: f64,
    /// `largest_layer_params`, `L` (ZeRO-3 only).
    pub largest_layer_params: f64,
    /// `num_gpus_per_node`, `n`.
    pub gpus_per_node: u32,
    /// `num_nodes`.
    pub nodes: u32,
    /// `additional_buffer_factor`, `abf` (DeepSpeed's default 1.5).
    pub buffer_factor: f64,
}

/// DeepSpeed's answer: bytes of host RAM per node and of GPU memory per GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DsEstimate {
    /// Host RAM per node ("per CPU"), bytes.
    pub cpu: u64,
    /// GPU memory per GPU, bytes.
    pub gpu: u64,
    /// ZeRO-3's `largest_layer_memory = 4·L` (0 for ZeRO-2), bytes.
    pub largest_layer_memory: u64,
}

/// Python's `int(x)` for a non-negative float.
fn int(x: f64) -> u64 {
    if x.is_finite() && x > 0.0 {
        x.trunc() as u64
    } else {
        0
    }
}

/// DeepSpeed's ZeRO-2 model-states estimate.
///
/// # Formula
/// ```text
/// G = n · nodes
/// offload:  gpu = 2P
///           cpu = P · max(4G, 16) · abf           (code; the doc says max(4n, 16))
/// none:     gpu = 4P + int(16P/G)                 (doc, ≤ 0.14.2)
///           gpu = 2P + int(18P/G)                 (≥ 0.14.3)
///           cpu = P · 4 · n · abf                 (fp32 model built on the host at init)
/// ```
/// `P` parameters, `n` GPUs per node, `G` GPUs in total, `abf` the additional
/// buffer factor; every result truncated with `int()`.
///
/// Source: seed 000 (DeepSpeed "Memory Requirements"); DeepSpeed 0.14.2 and 0.19.8
/// `deepspeed/runtime/zero/stage_1_and_2.py`, as recorded in
/// `reference/deepspeed_estimators.json`.
///
/// # Example
/// ```
/// use memfit_core::deepspeed::{zero2, DsInputs, DsVersion};
/// let i = DsInputs { total_params: 2851e6, largest_layer_params: 32e6,
///                    gpus_per_node: 8, nodes: 1, buffer_factor: 1.5 };
/// // seed 000: "127.45GB | 15.93GB | offload_optimizer=none" (GiB labelled GB)
/// let e = zero2(&i, false, DsVersion::Doc);
/// assert_eq!((e.cpu, e.gpu), (136_848_000_000, 17_106_000_000));
/// // DeepSpeed 0.19.8 prints 11.28GB for the same call.
/// assert_eq!(zero2(&i, false, DsVersion::V0_19).gpu, 12_116_750_000);
/// ```
pub fn zero2(i: &DsInputs, cpu_offload: bool, version: DsVersion) -> DsEstimate {
    let p = i.total_params;
    let n = i.gpus_per_node as f64;
    let g = (i.gpus_per_node as f64) * (i.nodes as f64);
    let (cpu, gpu) = if cpu_offload {
        let gpus_in_max = if version == DsVersion::Doc { n } else { g };
        (p * (4.0 * gpus_in_max).max(16.0) * i.buffer_factor, 2.0 * p)
    } else {
        let gpu = match version {
            DsVersion::Doc | DsVersion::V0_14 => 4.0 * p + (16.0 * p / g).trunc(),
            DsVersion::V0_19 => 2.0 * p + (18.0 * p / g).trunc(),
        };
        (p * 4.0 * n * i.buffer_factor, gpu)
    };
    DsEstimate {
        cpu: int(cpu),
        gpu: int(gpu),
        largest_layer_memory: 0,
    }
}

/// DeepSpeed's ZeRO-3 model-states estimate (the same in the doc and every code version).
///
/// # Formula
/// ```text
/// G = n · nodes, gf = 1 / nodes, LLM = 4L   (gathered fp16 params + fp16 grads of the largest layer)
/// param+opt offload: gpu = LLM
///                    cpu = P·18·gf·abf  (zero_init)   | P·max(4n, 18·gf)·abf
/// opt offload only:  gpu = LLM + int(2P/G)
///                    cpu = P·16·gf·abf  (zero_init)   | P·max(4n, 16·gf)·abf
/// no offload:        gpu = LLM + int(18P/G)
///                    cpu = L·4·n·abf    (zero_init)   | P·4·n·abf
/// ```
/// `P` parameters, `L` largest-layer parameters, `n` GPUs per node; results
/// truncated with `int()`. Parameter offload without optimizer offload is not a
/// case DeepSpeed's estimator has: it is treated as no offload, as the code does.
///
/// Source: seed 000; DeepSpeed `deepspeed/runtime/zero/stage3.py` (unchanged from
/// 2021 to 0.19.8).
///
/// # Example
/// ```
/// use memfit_core::deepspeed::{zero3, DsInputs};
/// let i = DsInputs { total_params: 2851e6, largest_layer_params: 32e6,
///                    gpus_per_node: 8, nodes: 1, buffer_factor: 1.5 };
/// // seed 000: "1.43GB | 6.09GB | offload_param=none, offload_optimizer=none, zero_init=1"
/// let e = zero3(&i, false, false, true);
/// assert_eq!((e.cpu, e.gpu), (1_536_000_000, 6_542_750_000));
/// ```
pub fn zero3(
    i: &DsInputs,
    cpu_offload: bool,
    cpu_offload_params: bool,
    zero_init: bool,
) -> DsEstimate {
    let p = i.total_params;
    let l = i.largest_layer_params;
    let n = i.gpus_per_node as f64;
    let g = (i.gpus_per_node as f64) * (i.nodes as f64);
    let gf = 1.0 / i.nodes as f64;
    let abf = i.buffer_factor;
    let llm = 4.0 * l;
    let (cpu, gpu) = if cpu_offload {
        if cpu_offload_params {
            let cpu = if zero_init {
                p * 18.0 * gf * abf
            } else {
                p * (4.0 * n).max(18.0 * gf) * abf
            };
            (cpu, llm)
        } else {
            let cpu = if zero_init {
                p * 16.0 * gf * abf
            } else {
                p * (4.0 * n).max(16.0 * gf) * abf
            };
            (cpu, llm + (2.0 * p / g).trunc())
        }
    } else {
        let cpu = if zero_init {
            l * 4.0 * n * abf
        } else {
            p * 4.0 * n * abf
        };
        (cpu, llm + (18.0 * p / g).trunc())
    };
    DsEstimate {
        cpu: int(cpu),
        gpu: int(gpu),
        largest_layer_memory: int(llm),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t5_large_4gpu() -> DsInputs {
        DsInputs {
            total_params: 737_668_096.0,
            largest_layer_params: 32_899_072.0,
            gpus_per_node: 4,
            nodes: 1,
            buffer_factor: 1.5,
        }
    }

    /// Seed 000's t5-large example prints `bytes >> 20` with "MB":
    /// case1 3291MB, case2 125MB, case3 477MB, largest layer 125MB.
    #[test]
    fn t5_large_cases_by_hand() {
        let i = t5_large_4gpu();
        let case1 = zero3(&i, false, false, true).gpu;
        let case2 = zero3(&i, true, true, true).gpu;
        let case3 = zero3(&i, true, false, true).gpu;
        // 4·32,899,072 = 131,596,288; int(18·737,668,096/4) = 3,319,506,432
        assert_eq!(case1, 131_596_288 + 3_319_506_432);
        assert_eq!((case1 >> 20, case2 >> 20, case3 >> 20), (3291, 125, 477));
    }

    #[test]
    fn zero2_multi_node_doc_vs_code() {
        // 16 nodes × 1 GPU, offload: doc max(4·1,16)=16, code max(4·16,16)=64.
        let i = DsInputs {
            total_params: 1e9,
            largest_layer_params: 0.0,
            gpus_per_node: 1,
            nodes: 16,
            buffer_factor: 1.0,
        };
        assert_eq!(zero2(&i, true, DsVersion::Doc).cpu, 16_000_000_000);
        assert_eq!(zero2(&i, true, DsVersion::V0_14).cpu, 64_000_000_000);
    }
}
