//! The pipeline: its bubble and its point-to-point transfers, hidden or exposed by schedule.

use super::*;

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
pub(crate) fn pipeline_time(x: &Ctx, t_mb: f64) -> (f64, f64, f64, f64) {
    let l = &x.l;
    if l.pp.get() < 2 {
        return (0.0, 0.0, 0.0, x.m * t_mb);
    }
    let bubble = (x.pp - 1.0) / x.v * t_mb;
    let (pp_bw, pp_eff, pp_alpha) = link(
        &x.hw,
        l.tp.get() as u64 * l.cp.get() as u64 * l.dp.get() as u64 + 1,
        x.per_node,
    );
    // DeepSpeed's pipeline engine partitions a stage's output over the TP ranks before
    // sending and all-gathers it on arrival (`pipe_partitioned`, `grad_partitioned`: true by
    // default; deepspeedai/DeepSpeed `runtime/pipe/engine.py`, edaa722); Megatron sends the
    // sequence-parallel shard.
    let partitioned = x.s.stack.framework == Framework::Deepspeed && l.tp.get() > 1;
    let p2p_bytes = act_bytes(x)
        / if x.s.parallel.sp || partitioned {
            x.t
        } else {
            1.0
        };
    let regather = if partitioned {
        let (bw, eff, alpha) = link(&x.hw, l.tp.get() as u64, x.per_node);
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
