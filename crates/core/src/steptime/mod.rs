//! How long one training step takes on a layout, and why: compute at a measured GEMM
//! efficiency, memory-bound element-wise work, each parallel dimension's communication
//! (what overlaps and what does not), the pipeline bubble, the optimizer step and offload.
//!
//! Every constant is a physical measurement (GEMM throughput by size, NCCL bus bandwidth,
//! FlashAttention's utilisation), cited where it is defined — none is fitted to end-to-end
//! training throughput. The published training runs in `tests/data/train_runs.json` test
//! the result (`tests/step_time.rs`).

pub mod flops;
pub mod hardware;

use crate::estimate::{stage_count, Prepared};
use crate::megatron::Recompute;
use crate::scenario::{
    Attn, CeFusion, Fp8Recipe, Framework, Mode, Offload, Precision, Scenario, Schedule, Zero,
};
use hardware::{perf, Perf};
use serde::{Deserialize, Serialize};

/// Where a step's time goes, seconds (the parts overlap-free: they add up to `step_s`
/// with `exposed_comm_s` the communication not hidden behind compute).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Breakdown {
    /// Forward and backward compute of every micro-batch (GEMMs, attention, element-wise).
    pub compute_s: f64,
    /// Recomputation's extra forward work.
    pub recompute_s: f64,
    /// Tensor-parallel collectives (exposed: Megatron runs them between the GEMMs).
    pub tp_comm_s: f64,
    /// Data-parallel gradient reduction and ZeRO-3/FSDP gathers, whole.
    pub dp_comm_s: f64,
    /// Pipeline point-to-point transfers.
    pub pp_comm_s: f64,
    /// Context parallelism's ring exchange, whole.
    pub cp_comm_s: f64,
    /// Expert parallelism's all-to-all.
    pub ep_comm_s: f64,
    /// Idle pipeline time: `(p − 1)/v` micro-batches.
    pub bubble_s: f64,
    /// The optimizer step (memory-bound).
    pub optimizer_s: f64,
    /// Offloaded optimizer: PCIe transfers and the CPU step.
    pub offload_s: f64,
    /// Communication on the critical path (what no compute hides).
    pub exposed_comm_s: f64,
    /// Compute slowed while hidden communication runs beside it: NCCL's kernels hold SMs
    /// the GEMMs then lack ([`contention_share`]).
    #[serde(default)]
    pub contention_s: f64,
}

/// The step-time model's answer for one layout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StepTime {
    /// Seconds per optimizer step.
    pub step_s: f64,
    /// Tokens per second, the whole cluster.
    pub tokens_per_s: f64,
    /// Tokens per second per GPU.
    pub tokens_per_s_per_gpu: f64,
    /// Model FLOPs utilisation (`6·N + attention` per token, see
    /// [`flops::model_flops_per_token`]).
    pub mfu: f64,
    /// Hardware FLOPs utilisation (recomputation counted).
    pub hfu: f64,
    /// Where the time goes.
    pub breakdown: Breakdown,
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
fn fp32_peak(s: &Scenario, p: &Perf) -> f64 {
    if plain_fp32(s, p) {
        p.tflops_fp32
    } else if p.tflops_tf32 > 0.0 {
        p.tflops_tf32
    } else {
        p.tflops_16
    }
}

/// Whether fp32 training's matmuls run as plain fp32 on the CUDA cores (see `fp32_peak`).
fn plain_fp32(s: &Scenario, p: &Perf) -> bool {
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
        } else {
            (ceiling16, h.tflops.unwrap_or(tflops))
        };
        Hw {
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
}

/// `(e_max, F_½)` of a GPU's GEMM efficiency curve (see [`Hw::gemm_s`]).
fn gemm_curve(gpu: &str) -> (f64, f64) {
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
fn attention_efficiency(s: &Scenario) -> f64 {
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
const ATTENTION_BACKWARD: f64 = 2.5;
/// FP8 GEMMs' best-shape efficiency, MAMF over the dense fp8 peak (stas00/ml-engineering
/// 744d01e, `compute/accelerator/README.md`, FP8 `float8_e4m3fn` table): H100 SXM 1,402.6
/// of 1,979 (0.709), H200 1,453.4 (0.734), GH200 1,535.0 (0.776), B200 3,432.5 of 4,500
/// (0.763); GPUs without a measurement take the H100's, capped by their 16-bit ceiling.
fn fp8_ceiling(gpu: &str, ceiling16: f64) -> f64 {
    match gpu {
        "h200" => 0.734,
        "gh200" => 0.776,
        "b200-180" | "b200-192" => 0.763,
        _ => ceiling16.min(0.709),
    }
}
/// Share of HBM bandwidth element-wise kernels reach (STREAM-like copies; Calculon's
/// memory efficiency for accesses over 100 MB is 0.90, over 10 MB 0.75).
const HBM_EFFICIENCY: f64 = 0.80;
/// NCCL ring bus bandwidth over the per-direction link rate for large messages: DGX A100
/// 235/300 = 0.78, H100/H200 367/450 = 0.82 (nccl-tests; nccl-tests#212); one NIC per GPU
/// across nodes 46–48/50 (nccl-tests#290).
const RING_EFFICIENCY: f64 = 0.80;
/// Across nodes.
const NET_EFFICIENCY: f64 = 0.92;
/// NVLS all-reduce bus bandwidth over the link rate with more than 4 GPUs (480/450).
const NVLS_EFFICIENCY: f64 = 1.07;
/// Latency of one collective inside a node, seconds (nccl-tests: 44 µs at 32 KiB on DGX
/// A100, 30–50 µs in XLA's tables).
const ALPHA_INTRA: f64 = 30e-6;
/// Across nodes.
const ALPHA_INTER: f64 = 50e-6;
/// NCCL's latency model for a ring collective (Simple protocol, what large messages use),
/// seconds: a base latency and one per ring step, a step inside a node or across nodes.
/// NVIDIA/nccl `src/graph/tuning.cc` (5067397c), `ncclTunerConstantsDefaults`:
/// `baseLatencies[Ring][Simple] = 8.4` µs; `hwLatencies[NVLINK][Ring][Simple] = 3.4`,
/// `[PCI][Ring][Simple] = 5.7`, `[NET][Ring][Simple] = 14.0` µs; on a multi-node ring an
/// in-node step costs at least the network overhead × 3 (`getNetOverhead`: 1 µs on Intel
/// hosts, 2 µs on AMD ones, as DGX A100's EPYC).
const NCCL_BASE: f64 = 8.4e-6;
const NCCL_STEP_NVLINK: f64 = 3.4e-6;
const NCCL_STEP_PCI: f64 = 5.7e-6;
const NCCL_STEP_NET: f64 = 14.0e-6;
const NCCL_NET_OVERHEAD_AMD: f64 = 6.0e-6;
/// Thread blocks an NCCL collective runs, one per channel, each holding an SM for the
/// collective's duration: an H100's `ncclAllGather` beside a GEMM launches 24 (Nsight
/// Systems trace in NVIDIA developer forum thread 337991, "Compute-communication overlap
/// causes severe GEMM performance degradation", 2025; NCCL runs one block per channel,
/// `src/enqueue.cc`, `comm->nChannels`).
const NCCL_CTAS: f64 = 24.0;
/// Bytes the optimizer step reads and writes per local parameter: fp32 param, grad, two
/// moments read (16), three written (12), the bf16 copy (2).
const ADAM_BYTES: f64 = 30.0;
/// DeepSpeed CPU-Adam: parameters per second per node (ZeRO-Offload, Ren et al. 2021,
/// Table 2: 1B parameters in 0.22 s).
const CPU_ADAM_PER_S: f64 = 4.5e9;
/// Host link per GPU, GB/s one direction (PCIe 4.0 x16 as measured, ~25 GB/s).
const PCIE_GBPS: f64 = 25.0;

/// An all-reduce (`2(n−1)/n` bus factor), all-gather or reduce-scatter (`(n−1)/n`) of
/// `bytes` over `n` ranks on a link of `gbps`, seconds.
///
/// # Formula
/// `t = α + f·S / (B·η)`  (`f` the bus factor, `η` the ring/NVLS/network efficiency)
fn collective(bytes: f64, n: f64, factor: f64, gbps: f64, eff: f64, alpha: f64) -> f64 {
    if n <= 1.0 || bytes <= 0.0 {
        return 0.0;
    }
    alpha + factor * (n - 1.0) / n * bytes / (gbps * 1e9 * eff)
}

/// The latency of one reduce-scatter or all-gather over a ring of `n` ranks spread over
/// `nodes` nodes, seconds (NCCL's model; all-reduce has twice the steps).
///
/// # Formula
/// `L = 8.4 µs + (n − 1 − (N − 1))·l_in + (N − 1)·l_net`, with `l_in` 3.4 µs (NVLink; 5.7 µs
/// over PCIe; 6 µs on a multi-node ring with AMD hosts) and `l_net` 14 µs; `N` the nodes.
///
/// Source: NVIDIA/nccl `src/graph/tuning.cc` (the constants above): `latency = base +
/// (nsteps − nInterSteps)·intraLat + nInterSteps·interLat`, `nsteps = n − 1`,
/// `nInterSteps = N − 1`.
///
/// # Example
/// 8 ranks in one node: 8.4 + 7·3.4 = 32.2 µs (the 30 µs of nccl-tests at 8 GPUs); 512
/// ranks on 64 H100 nodes: 8.4 + 448·3.4 + 63·14 = 2,413.6 µs.
fn ring_latency(hw: &Hw, gpu: &str, n: f64, nodes: f64) -> f64 {
    if n <= 1.0 {
        return 0.0;
    }
    let nodes = nodes.clamp(1.0, n);
    let mut step_in = if hw.intra >= 100.0 {
        NCCL_STEP_NVLINK
    } else {
        NCCL_STEP_PCI
    };
    if nodes > 1.0 && gpu.starts_with("a100") {
        step_in = step_in.max(NCCL_NET_OVERHEAD_AMD);
    }
    NCCL_BASE + (n - nodes) * step_in + (nodes - 1.0) * NCCL_STEP_NET
}

/// The share of a GPU's SMs hidden communication takes from the compute it overlaps.
///
/// # Formula
/// `φ = n_CTA / n_SM`: while a collective runs, the GEMMs beside it have `1 − φ` of the
/// SMs (what that costs a step: [`contended`]). A lower bound: a GEMM sized to one wave of
/// all the SMs pays a second wave (the same thread measured 80 % → 47 % MFU for such a
/// GEMM).
///
/// # Example
/// H100 (132 SMs): φ = 24/132 = 0.182; 1 s of data-parallel reduction hidden behind a
/// longer backward adds 182 ms. A100 (108): 0.222; B200 (148): 0.162; Gaudi 3 and TPUs: 0.
pub fn contention_share(hw: &Hw) -> f64 {
    if hw.sms > 0.0 {
        (NCCL_CTAS / hw.sms).min(1.0)
    } else {
        0.0
    }
}

/// What a collective lasting `c` costs the compute `w` it runs beside, beyond the
/// uncontended `max(c, w)`, seconds.
///
/// # Formula
/// `max(c, w + φ·min(c, w)) − max(c, w)`: while the collective runs, the compute goes at
/// `1 − φ` of its speed. Compute-bound (`w ≥ c`): `φ·c`. Communication-bound (`c > w`): the
/// slowed compute `w(1 + φ)` still ends inside the collective unless it outgrows it — the
/// step waits for the wire either way.
///
/// # Example
/// H100 (φ = 0.182): a 10 ms gather beside 30 ms of compute costs 1.82 ms; beside 9 ms,
/// 9·1.182 − 10 = 0.64 ms; beside 5 ms, nothing.
pub fn contended(c: f64, w: f64, phi: f64) -> f64 {
    if c <= 0.0 || w <= 0.0 {
        return 0.0;
    }
    (c.max(w + phi * c.min(w)) - c.max(w)).max(0.0)
}

/// Where a group of `n` ranks `stride` apart in Megatron's rank order (TP innermost, then
/// CP, DP, PP) communicates: inside a node when the span fits in one.
fn link(hw: &Hw, span: u64, per_node: u64) -> (f64, f64, f64) {
    if span <= per_node.max(1) {
        (hw.intra, RING_EFFICIENCY, ALPHA_INTRA)
    } else {
        (hw.inter, NET_EFFICIENCY, ALPHA_INTER)
    }
}

/// The step time of a training scenario (`None` for inference and serving).
///
/// # Formula
/// ```text
/// per micro-batch on the most loaded stage (L_s layers; the last stage adds the logits and
/// the loss, [`loss_time`]):
///   t_mb = L_s·(3·G + (1+2.5)·A + 3·E + Q + R + T_tp + T_ep + max(0, T_cp − A_cp))
///          G = Σ GEMMs at e(F), A = attention at 0.55 of peak, E = element-wise at 0.8 HBM,
///          Q = fp8 quantization's bytes forward and backward at 0.8 HBM ([`fp8_quant_bytes`]),
///          R = recomputation (full: G + A + E again for the checkpointed share of the
///          layers, `ckpt_layers`; selective: A), T_* = collectives
/// pipeline: (m + (p − 1)/v)·t_mb + exposed p2p of 2·m·v·T_p2p  (bubble = (p−1)/v · t_mb;
///   Megatron's interleaved schedule hides the steady phase's transfers: [`pipeline_time`])
/// data parallel: T_dp = n_c·L_ring + bytes per step / (B·η), exposed max(T_dp − backward of
///   the last micro-batch, T_dp/L_s) (DeepSpeed's pipeline engine: all of T_dp); ZeRO-3/FSDP: per layer and micro-batch two gathers (k
///   bytes per parameter) and a reduce-scatter (k_g: 4 under FSDP), each L_ring + its bytes,
///   exposed beyond a third of the layer's compute, plus the first gather. L_ring is NCCL's
///   ring latency over the group's ranks and nodes ([`ring_latency`]); n_c the collectives
///   per step (3·L_s·m under ZeRO-3, 2·L_s·m under SHARD_GRAD_OP, L_s bucketed otherwise)
/// contention: each hidden collective c beside compute w adds max(c, w + φ·min(c, w)) −
///   max(c, w), φ = 24/n_SM ([`contended`]): TP overlap and CP's ring inside t_mb, DP and
///   interleaved pipeline transfers on the step
/// optimizer: 30 B per local parameter / (0.8·HBM);  offload: PCIe transfers + CPU-Adam
/// step = pipeline + exposed DP + DP/PP contention + optimizer + offload
/// MFU = F_token·tokens / (step · GPUs · peak)
/// ```
/// Sources: Narayanan et al. 2021 (the 1F1B and interleaved bubble (p−1)/(v·m)); NVIDIA/nccl
/// `src/graph/tuning.cc` (the ring latency);
/// Korthikanti et al. 2022 (selective and full recomputation's work; sequence parallelism's
/// collectives); Calculon (Isaev et al., SC'23: the per-layer composition, α–β collectives).
///
/// # Example
/// See `tests/step_time.rs` for Llama 3 8B on 8 H100s worked by hand.
pub fn step_time(s: &Scenario, p: &Prepared) -> Option<StepTime> {
    if s.workload.mode != Mode::Train {
        return None;
    }
    step_time_with(s, p, crate::comm::comm_per_step(s, p).dp as f64)
}

/// What every part of the step-time model reads of one layout, computed once.
struct Ctx<'a> {
    s: &'a Scenario,
    hw: Hw,
    l: crate::scenario::Layout,
    arch: &'a crate::model::Arch,
    /// TP, CP and PP degrees, the micro-batch, sequence, micro-batches, virtual stages.
    t: f64,
    c: f64,
    pp: f64,
    b: f64,
    seq: f64,
    m: f64,
    v: f64,
    /// Bytes per compute value.
    k: f64,
    per_node: u64,
    n_stages: u64,
    /// Layers on the most loaded stage.
    layers: f64,
    /// Tokens per micro-batch on one rank (the sequence split by CP).
    tokens: f64,
    /// Share of a chunk's layers full recomputation checkpoints (`ckpt_layers` of them; 1
    /// when all are, 0 without full recomputation).
    ckpt: f64,
}

impl<'a> Ctx<'a> {
    fn of(s: &'a Scenario, p: &'a Prepared) -> Ctx<'a> {
        let l = s.layout();
        let arch = &p.arch;
        let n_stages = stage_count(arch, &l);
        let (b, seq, c) = (
            s.workload.batch.get() as f64,
            s.workload.seq.get() as f64,
            l.cp as f64,
        );
        Ctx {
            s,
            hw: Hw::of(s),
            arch,
            t: l.tp as f64,
            c,
            pp: l.pp as f64,
            b,
            seq,
            m: s.workload.microbatches.get() as f64,
            v: s.parallel.vpp.get() as f64,
            k: s.numerics.precision.compute_bytes() as f64,
            per_node: s.cluster.gpus_per_node.get() as u64,
            n_stages: n_stages as u64,
            layers: (arch.layers as f64 / n_stages as f64).ceil(),
            tokens: b * seq / c,
            ckpt: checkpointed_share(s, arch.layers.div_ceil(n_stages as u32)),
            l,
        }
    }
}

/// The share of a stage's layers full recomputation checkpoints: `ckpt_layers` of each
/// chunk's `L_c` (all when `ckpt_layers` is 0), none without `recompute=full`
/// (Megatron's `--recompute-method block --recompute-num-layers`).
///
/// # Example
/// Llama 3 8B on one stage, `recompute=full&ckpt_layers=5`: 5 of 32 layers, 0.156.
fn checkpointed_share(s: &Scenario, stage_layers: u32) -> f64 {
    if s.activations.recompute != Recompute::Full {
        return 0.0;
    }
    let (lc, n) = crate::activations::chunk_layers(s, stage_layers);
    n as f64 / lc.max(1) as f64
}

/// One block's compute per micro-batch, seconds: its GEMMs `g`, attention `a`, element-wise
/// work `e`, forward, backward and recomputation (see [`step_time`]'s formula).
struct Block {
    w: flops::BlockWork,
    g: f64,
    a: f64,
    fwd: f64,
    bwd: f64,
    recompute: f64,
}

fn block(x: &Ctx) -> Block {
    let (s, hw, arch, k) = (x.s, &x.hw, x.arch, x.k);
    let w = flops::block(arch, x.b, x.seq, x.t, x.c, k);
    let g: f64 = w.gemms().iter().map(|y| hw.gemm_s(y.flops() / 1e9)).sum();
    // Attention runs in 16 bits even in fp8 training.
    let peak16 = perf(&s.cluster.gpu).tflops_16 * 1e12;
    let heads = (arch.heads as f64 / x.t).ceil();
    let a = match s.activations.attn {
        Attn::Eager => {
            // Both products over the full s² (masked afterwards), one head at a time, and
            // the softmax (+ dropout mask) reading and writing the scores.
            let one = 2.0 * x.seq * (x.seq / x.c) * arch.head_dim as f64 / 1e9;
            let gemms = 2.0 * x.b * heads * hw.gemm16_s(one);
            let scores = x.b * heads * x.seq * (x.seq / x.c);
            let drop = if s.activations.dropout { 3.0 } else { 0.0 };
            gemms + scores * (2.0 * k + drop) / (hw.hbm * 1e9 * HBM_EFFICIENCY)
        }
        _ => w.attention_flops / (peak16 * attention_efficiency(s)),
    };
    let (qf, qb) = fp8_quant_bytes(s, &w);
    let bw = hw.hbm * 1e9 * HBM_EFFICIENCY;
    let e = w.elementwise_bytes / bw;
    let fwd = g + a + e + qf / bw;
    let bwd = 2.0 * g + ATTENTION_BACKWARD * a + 2.0 * e + qb / bw;
    let recompute = match s.activations.recompute {
        Recompute::None => 0.0,
        Recompute::Selective => a,
        // The checkpointed layers run their forward again (a share of the stage's).
        Recompute::Full => fwd * x.ckpt,
    };
    Block {
        w,
        g,
        a,
        fwd,
        bwd,
        recompute,
    }
}

/// The memory traffic fp8 training adds to one block's micro-batch, `(forward, backward)`
/// bytes: Transformer Engine quantizes each GEMM's input in the forward and each GEMM's
/// output gradient in the backward (0 outside `precision=fp8`).
///
/// # Formula
/// ```text
/// Q_fwd = Σ β_in · m·k·count     Q_bwd = Σ β · m·n·count      (GEMMs fed in 16 bits excluded)
/// β  = 3 (read 2 B, write 1 B) + 1 column-wise copy + 2 amax pass + scales, per recipe:
///                 any layout (Blackwell)   TN only (Hopper, Ada)
///   delayed        3                       4      (cast_transpose)
///   tensorwise     5                       6      (amax pass, then cast_transpose)
///   mxfp8          4.0625                  —      (row- and column-wise, a 1-B scale per 32 each)
///   blockwise      —                       4.0625 (row- and column-wise, a 4-B scale per 128 each)
/// β_in = β, except a norm-fed GEMM under Megatron (TE's LayerNormLinear):
///   delayed: the norm writes fp8 in place of its 16-bit output (−1), transposed in the
///            backward (read 1, write 1: +2 where the layout needs it) → −1 or +1;
///   tensorwise: the norm computes the amax in its own pass (FUSED_NORM_AMAX_FP8) → β − 2.
/// ```
/// Sources: TransformerEngine v1.8 `pytorch/module/linear.py` (`fp8_cast_transpose_fused` of
/// the input; `grad_output_preprocess` casts and transposes the output gradient),
/// `layernorm_linear.py` (`layernorm_fwd_fp8`, `fp8_transpose` in the backward); v2.8
/// `pytorch/csrc/quantizer.cpp` (`Float8CurrentScalingQuantizer::quantize_impl`: compute
/// amax, reduce, scale, quantize; `need_transpose = columnwise && !non_tn`),
/// `pytorch/csrc/extensions/normalization.cpp` (the fused norm per quantizer).
/// Weights are quantized once per step (Megatron's `is_first_microbatch`) and not counted.
///
/// # Example
/// Llama 3 8B (h = 4,096, KV 1,024, f = 14,336), one token, Megatron, H100, delayed:
/// inputs 1·4,096 (QKV) + 4·4,096 (o) + 1·4,096 (fc1) + 4·14,336 (fc2) = 81,920 B,
/// gradients 4·(6,144 + 4,096 + 28,672 + 4,096) = 172,032 B; tensorwise 143,360 + 258,048.
pub fn fp8_quant_bytes(s: &Scenario, w: &flops::BlockWork) -> (f64, f64) {
    if s.numerics.precision != Precision::Fp8 {
        return (0.0, 0.0);
    }
    let recipe = s.runtime.fp8_recipe;
    let any_layout = crate::gpu::fp8_any_layout(&s.cluster.gpu);
    let (beta, beta_norm) = fp8_bytes_per_value(recipe, any_layout);
    let fused_norm = s.stack.framework == Framework::Megatron;
    let (mut fwd, mut bwd) = (0.0, 0.0);
    for y in w.gemms() {
        let b_in = match y.feed {
            flops::Feed::High => continue,
            flops::Feed::Norm if fused_norm => beta_norm,
            _ => beta,
        };
        fwd += b_in * y.m * y.k * y.count;
        bwd += beta * y.m * y.n * y.count;
    }
    (fwd, bwd)
}

/// Bytes per quantized value, `(β, β for a norm-fed input under Megatron)`, for a recipe
/// on a GPU whose fp8 GEMMs take any layout or only `TN` ([`fp8_quant_bytes`]).
pub fn fp8_bytes_per_value(recipe: Fp8Recipe, any_layout: bool) -> (f64, f64) {
    let col = if any_layout { 0.0 } else { 1.0 };
    // Block scales: one per 32 values (E8M0, 1 B) or per 128 (fp32, 4 B), on both copies.
    let scales = 2.0 / 32.0;
    match recipe {
        Fp8Recipe::Delayed => (3.0 + col, -1.0 + 2.0 * col),
        Fp8Recipe::Tensorwise => (5.0 + col, 3.0 + col),
        Fp8Recipe::Mxfp8 | Fp8Recipe::Blockwise => (4.0 + scales, 4.0 + scales),
    }
}

/// Tensor parallelism per block and micro-batch: 4 all-reduces (or all-gather +
/// reduce-scatter pairs) of the block's activations, 6 for a layer full recomputation
/// checkpoints (`4 + 2·share`, [`checkpointed_share`]); with
/// `tp_overlap` (Transformer Engine's userbuffers) the collectives run under the GEMMs they
/// feed and what the GEMMs cannot cover stays exposed; the GEMMs they run beside lose the
/// SMs the collectives hold ([`contended`]). `(whole, exposed, contention)` seconds.
fn tp_time(x: &Ctx, blk: &Block) -> (f64, f64, f64) {
    let (tp_bw, tp_eff, tp_alpha) = link(&x.hw, x.l.tp as u64, x.per_node);
    // A recomputed layer's forward repeats its two collectives.
    let n_tp = 4.0 + 2.0 * x.ckpt;
    let tp_one = collective(act_bytes(x), x.t, 2.0, tp_bw, tp_eff, tp_alpha);
    let tp_whole = n_tp * tp_one;
    // Userbuffers overlap needs sequence parallelism (Megatron-LM asserts it; Megatron-Bridge
    // turns the overlap off without it).
    let overlap = x.s.runtime.tp_overlap && x.s.parallel.sp;
    let window = (blk.g + 2.0 * blk.g) * 0.5;
    let (tp, contention) = if overlap {
        (
            (tp_whole - window).max(0.0),
            contended(tp_whole, window, contention_share(&x.hw)),
        )
    } else {
        (tp_whole, 0.0)
    };
    (tp_whole, tp, contention)
}

/// The cross-entropy loss over one micro-batch's logits on one rank, forward and backward,
/// seconds: memory-bound passes over `T × V/t` values, most of them in fp32.
///
/// # Formula
/// `t = T · V/t · β / (0.8·HBM)`, `β` bytes per logit:
/// - Megatron's `vocab_parallel_cross_entropy` (Megatron-LM
///   `megatron/core/tensor_parallel/cross_entropy.py`, d98e8a6): `.float()` (read 2, write
///   4), max (4), subtract in place (8), `exp` in place (8), sum (4), divide in place (8);
///   backward: multiply in place (8), the fp32 gradient cast for the output layer (6): 52.
/// - PyTorch's `cross_entropy` under autocast (fp32 op list): the upcast (6),
///   `log_softmax` reading a row three times and writing it (16), its backward reading the
///   gradient and the output, reducing, writing (16), the cast back (6): 44.
/// - `ce_fusion=native` (Megatron's `fused_vocab_parallel_cross_entropy`, JIT-fused; core
///   0.8 `megatron/core/fusions/fused_cross_entropy.py`): upcast + max (6), subtract + `exp`
///   (8), divide (8); backward: multiply + the cast to 16 bits (6): 28.
/// - `ce_fusion=te` (Transformer Engine's Triton `parallel_cross_entropy` before
///   2026-07): the online softmax reads the logits (2), the loss kernel reads them again and
///   writes the gradient in their place (4); backward: the in-place multiply (4): 10.
///
/// # Example
/// Llama 3 8B (V = 128,256) at 8,192 tokens, t = 1, H100 (3,350 GB/s), Megatron:
/// 8,192 · 128,256 · 52 B = 54.6 GB → 20.4 ms per micro-batch.
fn loss_time(x: &Ctx) -> f64 {
    let beta = match (x.s.stack.framework, x.s.runtime.ce_fusion) {
        (Framework::Pytorch, _) => 44.0,
        (Framework::Megatron, CeFusion::Native) => 28.0,
        (Framework::Megatron, CeFusion::Te) => 10.0,
        _ => 52.0,
    };
    x.tokens * (x.arch.vocab as f64 / x.t) * beta / (x.hw.hbm * 1e9 * HBM_EFFICIENCY)
}

/// One micro-batch's block activations on one rank, bytes (TP's and PP's messages).
fn act_bytes(x: &Ctx) -> f64 {
    x.tokens * x.arch.hidden as f64 * x.k
}

/// Context parallelism per block and micro-batch: K and V passed c − 1 times (forward),
/// K, V, dK, dV (backward), overlapped with the attention. `(whole, exposed)` seconds.
fn cp_time(x: &Ctx, blk: &Block) -> (f64, f64, f64) {
    let (cp_bw, cp_eff, cp_alpha) = link(&x.hw, x.l.tp as u64 * x.l.cp as u64, x.per_node);
    let kv_bytes =
        2.0 * x.tokens * (x.arch.kv_heads as f64 / x.t).ceil() * x.arch.head_dim as f64 * x.k;
    let cp_total = if x.l.cp > 1 {
        3.0 * (x.c - 1.0) * (cp_alpha + kv_bytes / (cp_bw * 1e9 * cp_eff))
    } else {
        0.0
    };
    let window = (1.0 + ATTENTION_BACKWARD) * blk.a;
    (
        cp_total,
        (cp_total - window).max(0.0),
        contended(cp_total, window, contention_share(&x.hw)),
    )
}

/// Expert parallelism per block and micro-batch: dispatch and combine, forward and
/// backward, on the MoE layers' share. Seconds.
fn ep_time(x: &Ctx) -> f64 {
    let arch = x.arch;
    let ep = x.s.ep_ranks() as f64;
    if arch.experts > 0 && ep > 1.0 {
        let (bw, eff, alpha) = link(&x.hw, x.l.tp as u64 * ep as u64, x.per_node);
        let moe_share =
            (arch.layers - arch.first_dense.min(arch.layers)) as f64 / arch.layers as f64;
        4.0 * moe_share
            * collective(
                x.tokens * arch.top_k as f64 * arch.hidden as f64 * x.k,
                ep,
                1.0,
                bw,
                eff,
                alpha,
            )
    } else {
        0.0
    }
}

/// The pipeline: `(bubble, point-to-point whole, point-to-point exposed, whole)` seconds for
/// `t_mb` per micro-batch.
///
/// # Formula
/// ```text
/// transfers    n = 2·m·v, each T_p2p = α + bytes/(B·η)   (an activation forward, a gradient back;
///              bytes/t with SP, and under DeepSpeed with TP plus an all-gather over the TP ranks)
/// exposed      1F1B, GPipe, DeepSpeed: n·T_p2p
///              Megatron interleaved (overlap_p2p_comm): 2·w·T_p2p + (n − 2·w)·max(0, T_p2p − t_mb/(3·v))
///              w = min(m·v, 2·(p − 1) + (v − 1)·p)       (the first stage's warm-up chunks)
/// ```
/// In Megatron's interleaved schedule the sends and receives of the steady 1F1B phase are
/// posted asynchronously and waited for only when the next chunk needs them, so each hides
/// behind a chunk's forward (`t_mb/(3·v)`, the shortest work it can overlap); the warm-up and
/// flush transfers wait (`overlap_p2p_comm_warmup_flush` is off by default). 1F1B without
/// interleaving exchanges with blocking batched send/receive.
///
/// Sources: NVIDIA/Megatron-LM `megatron/training/arguments.py` (d98e8a6:
/// `--no-overlap-p2p-communication`, so overlap is the default with a virtual pipeline, and
/// forced off without one), `megatron/core/pipeline_parallel/schedules.py` (the warm-up count);
/// Megatron-Bridge `training/comm_overlap.py` (067f987: `overlap_p2p_comm = True` when
/// `PP > 1` and `VPP > 1`).
///
/// # Example
/// p = 4, v = 20, m = 32: w = 2·3 + 19·4 = 82 warm-up chunks; of the 1,280 transfers 164 wait
/// and 1,116 hide behind a chunk's forward when it outlasts them.
fn pipeline_time(x: &Ctx, t_mb: f64) -> (f64, f64, f64, f64) {
    let l = &x.l;
    if l.pp < 2 {
        return (0.0, 0.0, 0.0, x.m * t_mb);
    }
    let bubble = (x.pp - 1.0) / x.v * t_mb;
    let (pp_bw, pp_eff, pp_alpha) = link(
        &x.hw,
        l.tp as u64 * l.cp as u64 * l.dp as u64 + 1,
        x.per_node,
    );
    // DeepSpeed's pipeline engine partitions a stage's output over the TP ranks before
    // sending and all-gathers it on arrival (`pipe_partitioned`, `grad_partitioned`: true by
    // default; deepspeedai/DeepSpeed `runtime/pipe/engine.py`, edaa722); Megatron sends the
    // sequence-parallel shard.
    let partitioned = x.s.stack.framework == Framework::Deepspeed && l.tp > 1;
    let p2p_bytes = act_bytes(x)
        / if x.s.parallel.sp || partitioned {
            x.t
        } else {
            1.0
        };
    let regather = if partitioned {
        let (bw, eff, alpha) = link(&x.hw, l.tp as u64, x.per_node);
        collective(act_bytes(x), x.t, 1.0, bw, eff, alpha)
    } else {
        0.0
    };
    let one = pp_alpha + p2p_bytes / (pp_bw * 1e9 * pp_eff) + regather;
    let n = 2.0 * x.m * x.v;
    let whole = n * one;
    let overlapped = x.v > 1.0
        && x.s.parallel.schedule == Schedule::Interleaved
        && x.s.stack.framework == Framework::Megatron;
    let exposed = if overlapped {
        let warmup = (2.0 * (x.pp - 1.0) + (x.v - 1.0) * x.pp).min(x.m * x.v);
        let waiting = (2.0 * warmup).min(n);
        waiting * one + (n - waiting) * (one - t_mb / (3.0 * x.v)).max(0.0)
    } else {
        whole
    };
    (bubble, whole, exposed, x.m * t_mb + bubble + exposed)
}

/// Data parallelism: `(whole, exposed)` seconds for `dp_bytes` sent per step (see
/// [`step_time`]'s formula for what each stage hides behind the compute).
fn dp_time(x: &Ctx, blk: &Block, dp_bytes: f64) -> (f64, f64, f64) {
    let (hw, l, s, layers, m, k) = (&x.hw, &x.l, x.s, x.layers, x.m, x.k);
    let (dp_bw, dp_eff, _) = link(hw, l.tp as u64 * l.cp as u64 * l.dp as u64, x.per_node);
    // The comm module counts bytes sent; a ring moves them at the bus bandwidth.
    let wire = if dp_bytes > 0.0 {
        dp_bytes
            / (dp_bw
                * 1e9
                * if dp_bw == hw.intra && hw.nvls {
                    NVLS_EFFICIENCY
                } else {
                    dp_eff
                })
    } else {
        0.0
    };
    let zero3 = s.zero() == Zero::Z3;
    let phi = contention_share(hw);
    let (lat, n_coll) = dp_latency(x);
    let dp_total = if dp_bytes > 0.0 {
        lat * n_coll + wire
    } else {
        0.0
    };
    let (dp_exposed, contention) = if zero3 && dp_bytes > 0.0 {
        // Per layer and micro-batch three collectives (gather for the forward, gather for
        // the backward, reduce-scatter of the gradients), each prefetched behind a third of
        // the layer's compute; the first gather has nothing to hide behind. The gathers
        // move k bytes per parameter, the reduction k_g (fp32 under FSDP), each after its
        // ring's latency. With adapters (LoRA) the reduction is of the adapters alone,
        // negligible beside the gathers: it is left inside them (r = 0, no third
        // collective).
        let k_g = crate::comm::grad_reduce_bytes(s) as f64;
        let r = if s.finetune.kind() == crate::scenario::Finetune::Full {
            k_g
        } else {
            0.0
        };
        let per_layer = wire / (layers * m).max(1.0);
        let window = (blk.fwd + blk.bwd + blk.recompute) / 3.0;
        let gather = lat + per_layer * k / (2.0 * k + r);
        let reduce = if r > 0.0 {
            lat + per_layer * r / (2.0 * k + r)
        } else {
            0.0
        };
        (
            ((gather - window).max(0.0) * 2.0 + (reduce - window).max(0.0)) * layers * m + gather,
            (2.0 * contended(gather, window, phi) + contended(reduce, window, phi)) * layers * m,
        )
    } else if zero3 {
        (0.0, 0.0)
    } else if s.stack.framework == Framework::Deepspeed && l.pp > 1 {
        // DeepSpeed's pipeline engine reduces the gradients after the last micro-batch's
        // backward (its TrainSchedule ends with ReduceTiedGrads, ReduceGrads, OptimizerStep:
        // deepspeedai/DeepSpeed `runtime/pipe/schedule.py`, edaa722): nothing hides it.
        (dp_total, 0.0)
    } else {
        let last_bwd = layers * blk.bwd;
        (
            (dp_total - last_bwd).max(dp_total / layers.max(1.0)),
            contended(dp_total, last_bwd, phi),
        )
    };
    (dp_total, dp_exposed, contention)
}

/// The data-parallel collectives' ring latency ([`ring_latency`]) and their number per step:
/// under ZeRO-3 / FSDP FULL_SHARD three per layer and micro-batch over the shard group (two
/// gathers and a reduce-scatter; two with adapters), under FSDP SHARD_GRAD_OP two (a
/// gather and a reduce-scatter); otherwise bucketed reductions, one per layer's worth of
/// gradients over the data-parallel ranks.
fn dp_latency(x: &Ctx) -> (f64, f64) {
    let (s, l) = (x.s, &x.l);
    let zero3 = s.zero() == Zero::Z3;
    let n = if zero3 {
        s.shard_degree() as f64
    } else {
        l.dp as f64
    };
    // Ranks of the group in one node: the group's members are TP·CP apart.
    let inner = (l.tp as u64 * l.cp as u64).max(1);
    let per_node = (x.per_node / inner).max(1) as f64;
    let nodes = (n / per_node).ceil();
    let lat = ring_latency(&x.hw, &s.cluster.gpu, n, nodes);
    let per_layer = if zero3 {
        if s.finetune.kind() == crate::scenario::Finetune::Full {
            3.0
        } else {
            2.0
        }
    } else if s.fsdp() == crate::scenario::Fsdp::ShardGradOp {
        2.0
    } else {
        return (lat, x.layers);
    };
    (lat, per_layer * x.layers * x.m)
}

/// The optimizer step on this rank's share of the stage's parameters: `(on the GPU,
/// offloaded: PCIe transfers + CPU-Adam)` seconds.
fn optimizer_time(x: &Ctx, p: &Prepared) -> (f64, f64) {
    let s = x.s;
    let stage_params = p.psi as f64 / x.n_stages as f64 / x.t;
    let shard = if s.zero() >= Zero::Z1 {
        s.shard_degree() as f64
    } else {
        1.0
    };
    let local = stage_params / shard;
    if s.offload.optimizer != Offload::None {
        let gpus_on_node = x.per_node as f64;
        (
            0.0,
            local * 6.0 / (PCIE_GBPS * 1e9) + local * gpus_on_node / CPU_ADAM_PER_S,
        )
    } else {
        (local * ADAM_BYTES / (x.hw.hbm * 1e9 * HBM_EFFICIENCY), 0.0)
    }
}

/// [`step_time`] with the data-parallel bytes per step already counted (the explorer has
/// them for each layout).
pub fn step_time_with(s: &Scenario, p: &Prepared, dp_bytes: f64) -> Option<StepTime> {
    if s.workload.mode != Mode::Train {
        return None;
    }
    let x = Ctx::of(s, p);
    let (m, layers) = (x.m, x.layers);
    let blk = block(&x);
    let (tp_whole, tp, tp_contention) = tp_time(&x, &blk);
    let (cp_total, cp_exposed, cp_contention) = cp_time(&x, &blk);
    let ep_total = ep_time(&x);
    // Collectives hidden behind a block's compute slow it by the SMs they hold.
    let block_contention = tp_contention + cp_contention;
    let block_mb =
        blk.fwd + blk.bwd + blk.recompute + tp + ep_total + cp_exposed + block_contention;
    // The last stage also computes the logits and the loss (the first the embedding, a
    // lookup).
    let logits =
        x.hw.gemm16_s(flops::logits(x.arch, x.tokens, x.t).flops() / 1e9) * 3.0 + loss_time(&x);
    let t_mb = layers * block_mb + logits;
    let (bubble, pp_comm, pp_exposed, pipeline) = pipeline_time(&x, t_mb);
    let (dp_total, dp_exposed, dp_contention) = dp_time(&x, &blk, dp_bytes);
    let (optimizer, offload) = optimizer_time(&x, p);

    // The hidden pipeline transfers (small beside a chunk's compute) and the data-parallel
    // traffic do the same to the step.
    let step_contention = contention_share(&x.hw) * (pp_comm - pp_exposed).max(0.0) + dp_contention;
    let step = pipeline + dp_exposed + optimizer + offload + step_contention;
    let gpus = x.l.world as f64;
    let tokens_step = x.l.dp as f64 * m * x.b * x.seq;
    let f_token = flops::model_flops_per_token(x.arch, x.seq);
    let peak = x.hw.tflops * 1e12;
    let mfu = f_token * tokens_step / (step * gpus * peak);
    let extra = match s.activations.recompute {
        Recompute::None => 0.0,
        Recompute::Selective => blk.w.attention_flops / blk.w.flops() / 3.0,
        Recompute::Full => x.ckpt / 3.0,
    };
    let exposed = m * layers * (tp + ep_total + cp_exposed) + pp_exposed + dp_exposed;
    Some(StepTime {
        step_s: step,
        tokens_per_s: tokens_step / step,
        tokens_per_s_per_gpu: tokens_step / step / gpus,
        mfu,
        hfu: mfu * (1.0 + extra),
        breakdown: Breakdown {
            compute_s: m * (layers * (blk.fwd + blk.bwd) + logits),
            recompute_s: m * layers * blk.recompute,
            tp_comm_s: m * layers * tp_whole,
            dp_comm_s: dp_total,
            pp_comm_s: pp_comm,
            cp_comm_s: m * layers * cp_total,
            ep_comm_s: m * layers * ep_total,
            bubble_s: bubble,
            optimizer_s: optimizer,
            offload_s: offload,
            exposed_comm_s: exposed,
            contention_s: m * layers * block_contention + step_contention,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::{ring_latency, Hw};
    use crate::contract::query::decode;

    fn hw(gpu: &str) -> Hw {
        Hw::of(&decode(&format!("model=llama-2-7b&gpu={gpu}")).0.scenario)
    }

    /// NCCL's ring latency by hand (`ring_latency`'s doc example and the A100 host case).
    #[test]
    fn ring_latency_by_hand() {
        let h100 = hw("h100-80");
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        // 8 ranks in one node: 8.4 + 7·3.4 = 32.2 µs.
        assert!(close(ring_latency(&h100, "h100-80", 8.0, 1.0), 32.2e-6));
        // 512 ranks on 64 nodes: 8.4 + 448·3.4 + 63·14 = 2,413.6 µs.
        assert!(close(
            ring_latency(&h100, "h100-80", 512.0, 64.0),
            2_413.6e-6
        ));
        // DGX A100's AMD hosts: an in-node step of a multi-node ring costs 6 µs;
        // 16 ranks on 2 nodes: 8.4 + 14·6 + 1·14 = 106.4 µs.
        let a100 = hw("a100-80");
        assert!(close(ring_latency(&a100, "a100-80", 16.0, 2.0), 106.4e-6));
        // One rank: no collective.
        assert_eq!(ring_latency(&h100, "h100-80", 1.0, 1.0), 0.0);
    }
}
