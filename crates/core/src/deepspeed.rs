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

use crate::fexpr::{FExpr, FTok, FTok::*};
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

/// DeepSpeed's estimate as the terms it adds, each an [`FExpr`] with what it counts: the
/// GPU terms in the order Python adds them, and the host RAM per node. The ledger items
/// print these same programs; [`DsTerms::estimate`] sums them as Python does.
#[derive(Clone, Debug, PartialEq)]
pub struct DsTerms {
    /// Per GPU, in DeepSpeed's order (ZeRO-3: the largest layer's `4·L` first).
    pub gpu: Vec<(FExpr, &'static str)>,
    /// Host RAM per node.
    pub cpu: (FExpr, &'static str),
    /// ZeRO-3's `largest_layer_memory` term (an index into `gpu`).
    pub largest: Option<usize>,
}

impl DsTerms {
    /// DeepSpeed's two numbers: the GPU terms added in `f64` in order, then `int()`.
    pub fn estimate(&self) -> DsEstimate {
        let gpu = self
            .gpu
            .iter()
            .fold(0.0, |a, (e, _)| a + e.eval().unwrap_or(0.0));
        let int = |x: f64| FExpr::new(&[Num(x)]).bytes();
        DsEstimate {
            cpu: self.cpu.0.bytes(),
            gpu: int(gpu),
            largest_layer_memory: self.largest.map_or(0, |k| self.gpu[k].0.bytes()),
        }
    }
}

/// The symbols DeepSpeed's estimators read.
struct Syms {
    p: FTok,
    l: FTok,
    n: FTok,
    g: FTok,
    nodes: FTok,
    abf: FTok,
}

impl Syms {
    fn of(i: &DsInputs) -> Syms {
        Syms {
            p: Sym("P", i.total_params),
            l: Sym("L", i.largest_layer_params),
            n: Sym("n", i.gpus_per_node as f64),
            g: Sym("G", i.gpus_per_node as f64 * i.nodes as f64),
            nodes: Sym("nodes", i.nodes as f64),
            abf: Sym("abf", i.buffer_factor),
        }
    }
    /// `int(c·x/G)`: a state partitioned over every GPU.
    fn part(&self, c: f64, x: FTok) -> FExpr {
        FExpr::new(&[Num(c), x, Mul, self.g, Div, Int])
    }
    /// `x·max(4·n, c·(1/nodes))·abf` (`c/nodes` as DeepSpeed writes `c * gpu_factor`).
    fn host_max(&self, c: f64) -> FExpr {
        let (p, n, nodes, abf) = (self.p, self.n, self.nodes, self.abf);
        FExpr::new(&[
            p,
            Num(4.0),
            n,
            Mul,
            Num(c),
            Num(1.0),
            nodes,
            Div,
            Mul,
            Max,
            Mul,
            abf,
            Mul,
        ])
    }
    /// `x·c·(1/nodes)·abf`.
    fn host_per_node(&self, c: f64) -> FExpr {
        let (p, nodes, abf) = (self.p, self.nodes, self.abf);
        FExpr::new(&[p, Num(c), Mul, Num(1.0), nodes, Div, Mul, abf, Mul])
    }
    /// `x·4·n·abf`: the fp32 model (or layer) each process builds at init.
    fn init(&self, x: FTok) -> FExpr {
        FExpr::new(&[x, Num(4.0), Mul, self.n, Mul, self.abf, Mul])
    }
}

/// DeepSpeed's ZeRO-2 model-states estimate, as terms.
///
/// # Formula
/// ```text
/// G = n · nodes
/// offload:  gpu = 2P
///           cpu = P · max(4G, 16) · abf           (code; the doc says max(4n, 16))
/// none:     gpu = 4P + int(16P/G)                 (doc, ≤ 0.14.2)
///           gpu = 2P + int(18P/G)                 (≥ 0.14.3)
///           cpu = P · 4n · abf
/// ```
/// Source: seed 000; DeepSpeed 0.14.2 and 0.19.8
/// `deepspeed/runtime/zero/stage_1_and_2.py estimate_zero2_model_states_mem_needs`.
/// Example: Llama-2-7B (P = 6,738,415,616) on 8 GPUs, 0.19: 2P + int(18P/8) =
/// 13,476,831,232 + 15,161,435,136 = 28,638,266,368 B.
pub fn zero2_terms(i: &DsInputs, cpu_offload: bool, version: DsVersion) -> DsTerms {
    let s = Syms::of(i);
    let (p, n, g, abf) = (s.p, s.n, s.g, s.abf);
    if cpu_offload {
        let gpus_in_max = if version == DsVersion::Doc { n } else { g };
        let cpu = FExpr::new(&[p, Num(4.0), gpus_in_max, Mul, Num(16.0), Max, Mul, abf, Mul]);
        return DsTerms {
            gpu: vec![(FExpr::new(&[Num(2.0), p, Mul]), "fp16 params")],
            cpu: (cpu, "offloaded optimizer states, fp32 params and grads"),
            largest: None,
        };
    }
    let gpu = match version {
        DsVersion::Doc | DsVersion::V0_14 => vec![
            (FExpr::new(&[Num(4.0), p, Mul]), "fp16 params and grads"),
            (s.part(16.0, p), "optimizer states, partitioned"),
        ],
        DsVersion::V0_19 => vec![
            (FExpr::new(&[Num(2.0), p, Mul]), "fp16 params"),
            (s.part(18.0, p), "grads and optimizer states, partitioned"),
        ],
    };
    DsTerms {
        gpu,
        cpu: (s.init(p), "fp32 model built per process at init"),
        largest: None,
    }
}

/// DeepSpeed's ZeRO-2 model-states estimate.
pub fn zero2(i: &DsInputs, cpu_offload: bool, version: DsVersion) -> DsEstimate {
    zero2_terms(i, cpu_offload, version).estimate()
}

/// DeepSpeed's ZeRO-3 model-states estimate, as terms.
///
/// # Formula
/// ```text
/// G = n · nodes,  LLM = 4L                            (largest layer's fp16 params + grads)
/// offload params + optimizer:  gpu = LLM
///     cpu = P·18·(1/nodes)·abf   (zero_init)   or  P·max(4n, 18·(1/nodes))·abf
/// offload optimizer only:      gpu = LLM + int(2P/G)
///     cpu = P·16·(1/nodes)·abf   (zero_init)   or  P·max(4n, 16·(1/nodes))·abf
/// no offload:                  gpu = LLM + int(18P/G)
///     cpu = L·4n·abf             (zero_init)   or  P·4n·abf
/// ```
/// Source: seed 000; DeepSpeed `deepspeed/runtime/zero/stage3.py
/// estimate_zero3_model_states_mem_needs` (identical in 0.14.2 and 0.19.8).
/// Example: t5-large (P = 737,668,096, L = 32,899,072) on 4 GPUs, no offload: 4L +
/// int(18P/4) = 131,596,288 + 3,319,506,432 B (seed 000's "3291MB").
pub fn zero3_terms(
    i: &DsInputs,
    cpu_offload: bool,
    cpu_offload_params: bool,
    zero_init: bool,
) -> DsTerms {
    let s = Syms::of(i);
    let llm = (
        FExpr::new(&[Num(4.0), s.l, Mul]),
        "largest layer's fp16 params + grads",
    );
    let (gpu, cpu) = match (cpu_offload, cpu_offload_params) {
        (true, true) => {
            let cpu = if zero_init {
                s.host_per_node(18.0)
            } else {
                s.host_max(18.0)
            };
            (
                vec![llm],
                (cpu, "offloaded params, grads and optimizer states"),
            )
        }
        (true, false) => {
            let cpu = if zero_init {
                s.host_per_node(16.0)
            } else {
                s.host_max(16.0)
            };
            let part = (s.part(2.0, s.p), "fp16 param partition");
            (vec![llm, part], (cpu, "offloaded optimizer states"))
        }
        (false, _) => {
            let cpu = if zero_init {
                (s.init(s.l), "zero.Init")
            } else {
                (s.init(s.p), "fp32 model built per process at init")
            };
            let part = (
                s.part(18.0, s.p),
                "params, grads, optimizer states partitioned",
            );
            (vec![llm, part], cpu)
        }
    };
    DsTerms {
        gpu,
        cpu,
        largest: Some(0),
    }
}

/// DeepSpeed's ZeRO-3 model-states estimate.
pub fn zero3(
    i: &DsInputs,
    cpu_offload: bool,
    cpu_offload_params: bool,
    zero_init: bool,
) -> DsEstimate {
    zero3_terms(i, cpu_offload, cpu_offload_params, zero_init).estimate()
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
