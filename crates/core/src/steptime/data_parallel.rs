//! Data parallelism: the gradient reduction and ZeRO-3 / FSDP gathers, what the backward
//! hides of them, and their ring latency.

use super::*;

/// Data parallelism: `(whole, exposed)` seconds for `dp_bytes` sent per step (see
/// [`step_time`]'s formula for what each stage hides behind the compute).
pub(crate) fn dp_time(x: &Ctx, blk: &Block, dp_bytes: f64) -> (f64, f64, f64) {
    let (hw, l, s, layers, m, k) = (&x.hw, &x.l, x.s, x.layers, x.m, x.k);
    let inner = l.tp as u64 * l.cp as u64;
    let (dp_bw, dp_eff, _) = ring_link(hw, l.dp as u64, inner, x.per_node);
    let in_node = inner * l.dp as u64 <= x.per_node.max(1);
    // The comm module counts bytes sent; a ring moves them at the bus bandwidth (NVLS
    // inside a node).
    let wire = if dp_bytes > 0.0 {
        dp_bytes
            / (dp_bw
                * 1e9
                * if in_node && hw.nvls {
                    NVLS_EFFICIENCY
                } else {
                    dp_eff
                })
    } else {
        0.0
    };
    let zero3 = s.zero() == Zero::Z3;
    let phi = contention_share(hw);
    let (lat, n_coll) = dp_latency(x, wire);
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
/// gradients over the data-parallel ranks — under ZeRO-0 all-reduces, NCCL's ring or tree
/// across nodes ([`allreduce_latency`], each bucket `wire/L` on the ring's wire).
pub(crate) fn dp_latency(x: &Ctx, wire: f64) -> (f64, f64) {
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
    } else if s.zero() == Zero::Z0 {
        let bucket = wire / x.layers.max(1.0);
        let ar = allreduce_latency(&x.hw, &s.cluster.gpu, n, nodes, bucket);
        return (ar, x.layers);
    } else {
        return (lat, x.layers);
    };
    (lat, per_layer * x.layers * x.m)
}
