//! Collectives: NCCL's ring and NVLS rates and latencies, the SMs hidden communication
//! takes from the compute beside it, and tensor, context and expert parallelism's
//! collectives per block.

use super::*;

/// NCCL ring bus bandwidth over the per-direction link rate for large messages: DGX A100
/// 235/300 = 0.78, H100/H200 367/450 = 0.82 (nccl-tests; nccl-tests#212); one NIC per GPU
/// across nodes 46–48/50 (nccl-tests#290).
pub(crate) const RING_EFFICIENCY: f64 = 0.80;

/// Across nodes.
pub(crate) const NET_EFFICIENCY: f64 = 0.92;

/// NVLS all-reduce bus bandwidth over the link rate with more than 4 GPUs (480/450).
pub(crate) const NVLS_EFFICIENCY: f64 = 1.07;

/// Latency of one collective inside a node, seconds (nccl-tests: 44 µs at 32 KiB on DGX
/// A100, 30–50 µs in XLA's tables).
pub(crate) const ALPHA_INTRA: f64 = 30e-6;

/// Across nodes.
pub(crate) const ALPHA_INTER: f64 = 50e-6;

/// NCCL's latency model for a ring collective (Simple protocol, what large messages use),
/// seconds: a base latency and one per ring step, a step inside a node or across nodes.
/// NVIDIA/nccl `src/graph/tuning.cc` (5067397c), `ncclTunerConstantsDefaults`:
/// `baseLatencies[Ring][Simple] = 8.4` µs; `hwLatencies[NVLINK][Ring][Simple] = 3.4`,
/// `[PCI][Ring][Simple] = 5.7`, `[NET][Ring][Simple] = 14.0` µs; on a multi-node ring an
/// in-node step costs at least the network overhead × 3 (`getNetOverhead`: 1 µs on Intel
/// hosts, 2 µs on AMD ones, as DGX A100's EPYC).
pub(crate) const NCCL_BASE: f64 = 8.4e-6;

pub(crate) const NCCL_STEP_NVLINK: f64 = 3.4e-6;

pub(crate) const NCCL_STEP_PCI: f64 = 5.7e-6;

pub(crate) const NCCL_STEP_NET: f64 = 14.0e-6;

pub(crate) const NCCL_NET_OVERHEAD_AMD: f64 = 6.0e-6;

/// Thread blocks an NCCL collective runs, one per channel, each holding an SM for the
/// collective's duration: an H100's `ncclAllGather` beside a GEMM launches 24 (Nsight
/// Systems trace in NVIDIA developer forum thread 337991, "Compute-communication overlap
/// causes severe GEMM performance degradation", 2025; NCCL runs one block per channel,
/// `src/enqueue.cc`, `comm->nChannels`).
pub(crate) const NCCL_CTAS: f64 = 24.0;

/// An all-reduce (`2(n−1)/n` bus factor), all-gather or reduce-scatter (`(n−1)/n`) of
/// `bytes` over `n` ranks on a link of `gbps`, seconds.
///
/// # Formula
/// `t = α + f·S / (B·η)`  (`f` the bus factor, `η` the ring/NVLS/network efficiency)
pub(crate) fn collective(bytes: f64, n: f64, factor: f64, gbps: f64, eff: f64, alpha: f64) -> f64 {
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
pub(crate) fn ring_latency(hw: &Hw, gpu: &str, n: f64, nodes: f64) -> f64 {
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
pub(crate) fn link(hw: &Hw, span: u64, per_node: u64) -> (f64, f64, f64) {
    if span <= per_node.max(1) {
        (hw.intra, RING_EFFICIENCY, ALPHA_INTRA)
    } else {
        (hw.inter, NET_EFFICIENCY, ALPHA_INTER)
    }
}

/// Tensor parallelism per block and micro-batch: 4 all-reduces (or all-gather +
/// reduce-scatter pairs) of the block's activations, 6 for a layer full recomputation
/// checkpoints (`4 + 2·share`, [`checkpointed_share`]); with
/// `tp_overlap` (Transformer Engine's userbuffers) the collectives run under the GEMMs they
/// feed and what the GEMMs cannot cover stays exposed; the GEMMs they run beside lose the
/// SMs the collectives hold ([`contended`]). `(whole, exposed, contention)` seconds.
pub(crate) fn tp_time(x: &Ctx, blk: &Block) -> (f64, f64, f64) {
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

/// Context parallelism per block and micro-batch: K and V passed c − 1 times (forward),
/// K, V, dK, dV (backward), overlapped with the attention. `(whole, exposed)` seconds.
pub(crate) fn cp_time(x: &Ctx, blk: &Block) -> (f64, f64, f64) {
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
pub(crate) fn ep_time(x: &Ctx) -> f64 {
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
