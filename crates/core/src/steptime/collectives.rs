//! Collectives: NCCL's ring and NVLS rates and latencies, the SMs hidden communication
//! takes from the compute beside it, and tensor, context and expert parallelism's
//! collectives per block.

use super::*;
use std::num::NonZeroU64;

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

/// NCCL's tree all-reduce (Simple protocol): a chain inside each node, a double binary tree
/// across nodes; per-step latencies inside a node (NVLink or PCIe) and across, seconds
/// (`hwLatencies[..][Tree][Simple]`, the same source as [`NCCL_BASE`], whose
/// `baseLatencies[Tree][Simple]` is also 8.4 µs), and its bus bandwidth over the ring's
/// (`busBw·0.92` for a tree all-reduce in `ncclTopoTuneModel`).
pub(crate) const NCCL_TREE_STEP_IN: f64 = 4.0e-6;

pub(crate) const NCCL_TREE_STEP_NET: f64 = 14.0e-6;

pub(crate) const TREE_EFFICIENCY: f64 = 0.92;

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

/// The latency of one all-reduce of `n` ranks over `nodes` nodes whose bucket takes `w`
/// seconds on the ring's wire, seconds: NCCL's ring or tree, whichever its model finds
/// faster, the tree's slower bandwidth charged to it.
///
/// # Formula
/// ```text
/// ring  L_r = 2·L_ring − 8.4 µs                      (2(n−1) steps, 2(N−1) of them across nodes;
///                                                      L_ring from [`ring_latency`])
/// tree  L_t = 8.4 µs + 2·((n/N − 1)·4 µs + ⌊log₂N⌋·14 µs) + w·(n/((n−1)·0.92) − 1)
/// L = min(L_r, L_t) across nodes; inside a node L_ring (about NVLS's 25 µs on Hopper)
/// ```
/// The tree moves the same bytes a rank as the ring (a node sends and receives the whole
/// buffer once up and once down its two trees) at 0.92 of its bus bandwidth, without the
/// ring's `(n−1)/n`. Source: NVIDIA/nccl `src/graph/tuning.cc` (`ncclTopoTuneModel`: tree
/// all-reduce latency `base + 2·((nRanks/nNodes − 1)·intraLat + log2i(nNodes)·interLat)`,
/// its bus bandwidth ·0.92 and algorithm bandwidth half of it; ring `nsteps = 2(nRanks − 1)`);
/// NCCL picks the algorithm with the least modelled time per call.
///
/// # Example
/// DDP over 64 nodes beside TP 8 (n = N = 64), a bucket of 1 ms on the wire: ring
/// 8.4 + 2·63·14 = 1,772.4 µs; tree 8.4 + 2·6·14 = 176.4 µs + 1 ms·(64/(63·0.92) − 1) =
/// 280.6 µs: the tree. On 2 nodes of 8 (n = 16): ring 8.4 + 2·14·3.4 + 2·14 = 131.6 µs, tree
/// 8.4 + 2·(7·4 + 14) + 1 ms·0.159 = 251.8 µs: the ring.
pub(crate) fn allreduce_latency(hw: &Hw, gpu: &str, n: f64, nodes: f64, w: f64) -> f64 {
    let ring = ring_latency(hw, gpu, n, nodes);
    if n <= 1.0 || nodes <= 1.0 {
        return ring;
    }
    let nodes = nodes.clamp(1.0, n);
    let per_node = (n / nodes).floor().max(1.0);
    let tree = NCCL_BASE
        + 2.0 * ((per_node - 1.0) * NCCL_TREE_STEP_IN + nodes.log2().floor() * NCCL_TREE_STEP_NET)
        + w * (n / ((n - 1.0) * TREE_EFFICIENCY) - 1.0);
    (2.0 * ring - NCCL_BASE).min(tree)
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
pub(crate) fn link(hw: &Hw, span: u64, per_node: NonZeroU64) -> (f64, f64, f64) {
    if span <= per_node.get() {
        (hw.intra, RING_EFFICIENCY, ALPHA_INTRA)
    } else {
        (hw.inter, NET_EFFICIENCY, ALPHA_INTER)
    }
}

/// Where a ring collective (all-reduce, all-gather, reduce-scatter) of `n` ranks `stride`
/// apart in Megatron's rank order runs: `(B, η, α)`, its bus bandwidth `B·η` GB/s per rank.
/// Inside a node, NVLink's ring ([`link`]). Across nodes, rails: every GPU of a node has its
/// own NIC (`inter` is a node's NIC bandwidth over its GPUs). Each of NCCL's rings (one per
/// channel) enters and leaves a node once, so of the `q` members a node holds `q − 1` pass
/// the data on over NVLink and one over a NIC; the channels rotate which one, over the
/// members' NICs. A node thus sends the group's ring traffic — `(n−1)/n` of a rank's buffer
/// — once, over `q` NICs, and each member sends `(q−1)/q` of it over NVLink.
///
/// # Formula
/// ```text
/// q      = clamp(g / stride, 1, n)            members of the group in one node (g GPUs a node)
/// busbw  = B_inter·η_net                      q = 1: each rank over its own NIC (rail)
/// busbw  = min(q·B_inter·η_net,               q > 1: the members' q NICs, or NVLink, which
///              q/(q−1)·B_intra·η_ring)               carries (q−1)/q of each rank's bytes
/// t      = α + f·(n−1)/n·S / busbw            ([`collective`])
/// ```
/// `B_inter`, `B_intra` GB/s per GPU, one direction; `η_net` 0.92, `η_ring` 0.80; `S` bytes
/// per rank, `f` 1 (all-gather, reduce-scatter) or 2 (all-reduce). Sources: NVIDIA DGX
/// H100 user guide (eight 400 Gb/s ConnectX-7 for the compute fabric, one per GPU, each on
/// its own rail), DGX A100 (eight 200 Gb/s HDR); NVIDIA/nccl `src/graph/search.cc` and
/// `connect.cc` (a channel's ring crosses each node once, its NIC the one nearest the
/// GPU that leaves the node); nccl-tests `doc/PERFORMANCE.md` (bus bandwidth, the ring's
/// `(n−1)/n` factor, comparable with the hardware's link rate); llm-foundry's MPT 13B on
/// H100 ran at 4,792 tokens/s per GPU on 8 GPUs and 4,800 on 64 (its benchmark README),
/// where one NIC per rank's whole volume made the network 2.2 s of a 0.85 s step. Measured
/// ring bus bandwidth across nodes: 192 GB/s between DGX A100s (NVIDIA's figure in
/// NVIDIA/nccl#812; here 184, one NIC a rank gave 23), 95 GB/s with four 200 Gb/s NICs per
/// eight A100s ("~24 GB/s per NIC", NVIDIA/nccl-tests#252; here 92, was 11.5).
///
/// # Example
/// FSDP over 64 H100s, 8 nodes (stride 1, q = 8): min(8·50·0.92, 8/7·450·0.80) =
/// min(368, 411) = 368 GB/s; a 13B model's gathers and fp32 reduce-scatter, 8 B a
/// parameter (12.85 B parameters, 103 GB): 103·63/64/368 = 0.275 s, against 2.2 s at one
/// NIC's 46 GB/s. DGX
/// A100: min(184, 274) = 184. Megatron's data parallelism beside TP 8 (stride 8, q = 1):
/// 46 GB/s, each rank over its own rail; beside TP 4 (q = 2): min(92, 720) = 92.
pub(crate) fn ring_link(
    hw: &Hw,
    n: NonZeroU64,
    stride: NonZeroU64,
    per_node: NonZeroU64,
) -> (f64, f64, f64) {
    let span = n.saturating_mul(stride).get();
    if span <= per_node.get() {
        return link(hw, span, per_node);
    }
    let q = (per_node.get() / stride.get()).clamp(1, n.get()) as f64;
    let nvlink = q / (q - 1.0) * hw.intra * RING_EFFICIENCY;
    if q > 1.0 && nvlink < q * hw.inter * NET_EFFICIENCY {
        (q / (q - 1.0) * hw.intra, RING_EFFICIENCY, ALPHA_INTER)
    } else {
        (q * hw.inter, NET_EFFICIENCY, ALPHA_INTER)
    }
}

/// Tensor parallelism per block and micro-batch: 4 all-reduces (or all-gather +
/// reduce-scatter pairs) of the block's activations, 6 for a layer full recomputation
/// checkpoints (`4 + 2·share`, [`checkpointed_share`]); with
/// `tp_overlap` (Transformer Engine's userbuffers) the collectives run under the GEMMs they
/// feed and what the GEMMs cannot cover stays exposed; the GEMMs they run beside lose the
/// SMs the collectives hold ([`contended`]). `(whole, exposed, contention)` seconds.
pub(crate) fn tp_time(x: &Ctx, blk: &Block) -> (f64, f64, f64) {
    let (tp_bw, tp_eff, tp_alpha) = ring_link(&x.hw, x.l.tp.into(), NonZeroU64::MIN, x.per_node);
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
    let (cp_bw, cp_eff, cp_alpha) =
        link(&x.hw, x.l.tp.get() as u64 * x.l.cp.get() as u64, x.per_node);
    let kv_bytes = 2.0
        * x.tokens
        * (x.arch.kv_heads.get() as f64 / x.t).ceil()
        * x.arch.head_dim.get() as f64
        * x.k;
    let cp_total = if x.l.cp.get() > 1 {
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

/// An all-to-all of `bytes` per rank over `n` ranks `stride` apart, seconds: each rank
/// keeps `1/n` of its buffer, sends `(q−1)/n` to the members in its node over NVLink and
/// `(n−q)/n` to the other nodes over its own NIC (rails), both at once.
///
/// # Formula
/// ```text
/// inside a node (n·stride ≤ g):  t = α + (n−1)/n·S / (B_intra·η_ring)
/// across nodes, q = clamp(g/stride, 1, n) members a node:
///                                t = α + max((n−q)/n·S / (B_inter·η_net), (q−1)/n·S / (B_intra·η_ring))
/// ```
/// Sources: NCCL runs an all-to-all as grouped `ncclSend`/`ncclRecv` to every peer, and
/// since 2.12 (PXN) sends a message to another node through the NIC on the destination's
/// rail, over NVLink first when that NIC is a neighbour's: a node's outgoing bytes spread
/// over its NICs (NVIDIA technical blog "Doubling all2all Performance with NVIDIA
/// Collective Communication Library 2.12", 2022); DGX H100's one NIC per GPU.
///
/// # Example
/// 16 ranks over 2 DGX H100 nodes, 64 MB a rank: max(8/16·64 MB/46 GB/s, 7/16·64 MB/360 GB/s)
/// = max(0.696, 0.078) ms, 0.746 ms with α; the whole `(n−1)/n` through one NIC was 1.354 ms.
pub(crate) fn all_to_all(
    hw: &Hw,
    bytes: f64,
    n: u64,
    stride: NonZeroU64,
    per_node: NonZeroU64,
) -> f64 {
    let (per_node, stride) = (per_node.get(), stride.get());
    if n <= 1 || bytes <= 0.0 {
        return 0.0;
    }
    let nf = n as f64;
    let nvlink = |share: f64| share / nf * bytes / (hw.intra * 1e9 * RING_EFFICIENCY);
    if n.saturating_mul(stride) <= per_node {
        return ALPHA_INTRA + nvlink(nf - 1.0);
    }
    let q = (per_node / stride).clamp(1, n) as f64;
    let net = (nf - q) / nf * bytes / (hw.inter * 1e9 * NET_EFFICIENCY);
    ALPHA_INTER + net.max(nvlink(q - 1.0))
}

#[cfg(test)]
mod tests {
    use super::{all_to_all, allreduce_latency, ring_latency, ring_link, Hw};
    use crate::contract::query::decode;
    use std::num::NonZeroU64;

    fn nz(n: u64) -> NonZeroU64 {
        NonZeroU64::new(n).unwrap()
    }

    fn hw(q: &str) -> Hw {
        Hw::of(&decode(&format!("model=llama-2-7b&{q}")).0.scenario)
    }

    /// The ring's bus bandwidth `B·η`, GB/s.
    fn busbw(h: &Hw, n: u64, stride: u64) -> f64 {
        let (b, eta, _) = ring_link(h, nz(n), nz(stride), nz(8));
        b * eta
    }

    /// `ring_link`'s cases by hand (its doc example).
    #[test]
    fn rails_by_hand() {
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        let h100 = hw("gpu=h100-80");
        // Inside a node: NVLink's ring, 450·0.80, α 30 µs.
        assert_eq!(ring_link(&h100, nz(8), nz(1), nz(8)), (450.0, 0.80, 30e-6));
        // FSDP over 8 nodes, 8 members a node: the NICs, 8·50·0.92 = 368 (NVLink's
        // 8/7·450·0.80 = 411.4 is not the bound).
        assert!(close(busbw(&h100, 64, 1), 368.0));
        assert_eq!(ring_link(&h100, nz(64), nz(1), nz(8)).2, 50e-6);
        // DGX A100: 8·25·0.92 = 184 (NVIDIA measures 192, nccl#812).
        assert!(close(busbw(&hw("gpu=a100-80"), 64, 1), 184.0));
        // Four 200 Gb/s NICs per eight A100s (12.5 GB/s a GPU): 8·12.5·0.92 = 92 (measured
        // 95, nccl-tests#252).
        assert!(close(busbw(&hw("gpu=a100-80&inter_bw=12.5"), 16, 1), 92.0));
        // Beside TP 8 (one member a node): each rank's own NIC, 50·0.92 = 46.
        assert!(close(busbw(&h100, 8, 8), 46.0));
        // Beside TP 4 (two members a node): 2·50·0.92 = 92.
        assert!(close(busbw(&h100, 16, 4), 92.0));
        // A fabric faster than NVLink's share: 8 × 100 GB/s NICs, the bound is NVLink,
        // 8/7·450·0.80 = 411.43.
        let fast = hw("gpu=h100-80&inter_bw=100");
        assert!(close(busbw(&fast, 64, 1), 8.0 / 7.0 * 360.0));
        // Jean Zay's 6.25 GB/s per GPU, one member a node: 6.25·0.92 = 5.75.
        assert!(close(busbw(&hw("gpu=a100-80&inter_bw=6.25"), 4, 32), 5.75));
    }

    /// The issue's case: a 13B model (MPT-13B's shape) under FSDP on 64 H100s, 2 sequences
    /// of 2,048 a GPU. Its data-parallel time by hand: the bytes each rank sends
    /// (`comm_per_step`: two bf16 gathers and an fp32 reduce-scatter, `(n−1)/n` of 8 B a
    /// parameter) at 368 GB/s, plus NCCL's ring latency (64 ranks, 8 nodes: 8.4 + 56·3.4 +
    /// 7·14 = 296.8 µs) for each of the 3·40 collectives. memfit charged 2.24 s at one NIC's
    /// 46 GB/s; the step measured 0.85 s, as on 8 GPUs.
    #[test]
    fn fsdp_over_rails_by_hand() {
        let q = "model=gpt3-175b&layers=40&hidden=5120&heads=40&kv_heads=40&ffn=20480\
                 &vocab=50368&head_dim=128&gpu=h100-80&gpus_per_node=8&nodes=8&dp=64&batch=2\
                 &seq=2048&precision=bf16&framework=pytorch&modules=plain&fsdp=full_shard";
        let s = decode(q).0.scenario;
        let p = crate::estimate::Prepared::of(&s);
        let bytes = crate::comm::comm_per_step(&s, &p).dp as f64;
        let lat = ring_latency(&Hw::of(&s), "h100-80", 64.0, 8.0);
        assert!((lat - 296.8e-6).abs() < 1e-12);
        let want = bytes / 368e9 + 3.0 * 40.0 * lat;
        let t = super::super::step_time(&s, &p).expect("train");
        assert!((t.breakdown.dp_comm_s / want - 1.0).abs() < 1e-9, "{t:?}");
        // 12.9 B parameters · 8 B · 63/64 = 101 GB: 0.275 s on the wire, 0.311 s in all.
        assert!((t.breakdown.dp_comm_s - 0.311).abs() < 0.001, "{t:?}");
        assert!(t.step_s < 0.85, "{t:?}");
    }

    /// `all_to_all`'s doc example by hand, and inside a node.
    #[test]
    fn all_to_all_by_hand() {
        let h100 = hw("gpu=h100-80");
        let s = 64e6;
        let across = all_to_all(&h100, s, 16, nz(1), nz(8));
        let want = 50e-6 + (8.0 / 16.0 * s / 46e9).max(7.0 / 16.0 * s / 360e9);
        assert!((across - want).abs() < 1e-15);
        assert!((across * 1e3 - 0.746).abs() < 0.001, "{across}");
        // Inside a node: 7/8 of it over NVLink, 30 µs.
        let inside = all_to_all(&h100, s, 8, nz(1), nz(8));
        assert!((inside - (30e-6 + 7.0 / 8.0 * s / 360e9)).abs() < 1e-15);
        // One member a node (beside TP 8): 15/16 over the rank's own NIC.
        let railed = all_to_all(&h100, s, 16, nz(8), nz(8));
        assert!((railed - (50e-6 + 15.0 / 16.0 * s / 46e9)).abs() < 1e-15);
        assert_eq!(all_to_all(&h100, s, 1, nz(1), nz(8)), 0.0);
    }

    /// `allreduce_latency`'s doc examples: the tree across 64 nodes, the ring on 2.
    #[test]
    fn ring_or_tree_by_hand() {
        let h100 = hw("gpu=h100-80");
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        let tree = 176.4e-6 + 1e-3 * (64.0 / (63.0 * 0.92) - 1.0);
        assert!(close(
            allreduce_latency(&h100, "h100-80", 64.0, 64.0, 1e-3),
            tree
        ));
        assert!((tree * 1e6 - 280.6).abs() < 0.05);
        let ring = 8.4e-6 + 2.0 * 14.0 * 3.4e-6 + 2.0 * 14e-6;
        assert!(close(
            allreduce_latency(&h100, "h100-80", 16.0, 2.0, 1e-3),
            ring
        ));
        // Inside a node: the ring's reduce-scatter latency, as before.
        assert!(close(
            allreduce_latency(&h100, "h100-80", 8.0, 1.0, 1e-3),
            ring_latency(&h100, "h100-80", 8.0, 1.0)
        ));
    }
}
