//! Data parallelism: the gradient reduction and ZeRO-3 / FSDP gathers, what the backward
//! hides of them, and their ring latency.

use super::*;
use crate::scenario::div_at_least_one;
use std::num::NonZeroU64;

/// Data parallelism: `(whole, exposed)` seconds for `dp_bytes` sent per step, `replica` of
/// them HYBRID_SHARD's all-reduce across the replicas (see [`step_time`]'s formula for what
/// each stage hides behind the compute).
pub(crate) fn dp_time(x: &Ctx, blk: &Block, dp_bytes: f64, replica: f64) -> (f64, f64, f64) {
    let (hw, l, s, layers, m, k) = (&x.hw, &x.l, x.s, x.layers, x.m, x.k);
    let wire = dp_wire(x, dp_bytes, replica);
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
    } else if s.stack.framework == Framework::Deepspeed && l.pp.get() > 1 {
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

/// Seconds on the wire for `dp_bytes` a step, `replica` of them HYBRID_SHARD's all-reduce
/// across the replicas: the comm module counts bytes sent, a ring moves them at its bus
/// bandwidth. The data-parallel group is the `d·c` ranks TP apart (FSDP's and Megatron's
/// gradient reduction span DP × CP), HYBRID_SHARD's shard group the `N_s` of them in a node;
/// inside a node NVLink (NVLS on Hopper and Blackwell NVSwitch systems), across nodes rails
/// ([`ring_link`]). The replicas' all-reduce crosses nodes, `R = d·c/N_s` ranks `t·N_s`
/// apart, each over its own NIC.
fn dp_wire(x: &Ctx, dp_bytes: f64, replica: f64) -> f64 {
    let (hw, l) = (&x.hw, &x.l);
    if dp_bytes <= 0.0 {
        return 0.0;
    }
    let ns = NonZeroU64::from(x.s.shard_degree());
    let stride = NonZeroU64::from(l.tp);
    let (bw, eff, _) = ring_link(hw, ns, stride, x.per_node);
    let in_node = ns.saturating_mul(stride) <= x.per_node;
    let eff = if in_node && hw.nvls {
        NVLS_EFFICIENCY
    } else {
        eff
    };
    let replica = replica.clamp(0.0, dp_bytes);
    let replica_wire = if replica > 0.0 {
        // ⌈d·c / N_s⌉ ≥ 1: d·c ≥ 1 replicas' worth of ranks.
        let r = (l.dp.get() as u64 * l.cp.get() as u64).div_ceil(ns.get());
        let r = NonZeroU64::new(r).unwrap_or(NonZeroU64::MIN);
        let (rb, re, _) = ring_link(hw, r, stride.saturating_mul(ns), x.per_node);
        replica / (rb * 1e9 * re)
    } else {
        0.0
    };
    (dp_bytes - replica) / (bw * 1e9 * eff) + replica_wire
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
    // The group: the shard group (`d·c` ranks, HYBRID_SHARD's in a node), TP apart.
    let n = s.shard_degree().get() as f64;
    let per_node = div_at_least_one(s.cluster.gpus_per_node.get(), l.tp).get() as f64;
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

#[cfg(test)]
mod tests {
    use super::super::Ctx;
    use super::dp_wire;
    use crate::contract::query::decode;
    use crate::estimate::Prepared;

    /// `(dp bytes, replica bytes, wire seconds)` of a query.
    fn wire(q: &str) -> (f64, f64, f64) {
        let s = decode(&format!("model=llama-3-8b&gpus_per_node=8&{q}"))
            .0
            .scenario;
        let p = Prepared::of(&s);
        let dp = crate::comm::comm_per_step(&s, &p).dp as f64;
        let replica = crate::comm::replica_comm_per_step(&s, &p) as f64;
        (dp, replica, dp_wire(&Ctx::of(&s, &p), dp, replica))
    }

    /// HYBRID_SHARD on two DGX H100 nodes: the shard group's gathers and reduce-scatter
    /// inside the node (NVLS, 450·1.07 GB/s), the replicas' all-reduce of each shard across
    /// the two nodes over each rank's own NIC (50·0.92 = 46 GB/s).
    #[test]
    fn hybrid_shard_by_hand() {
        let (dp, replica, w) = wire("nodes=2&dp=16&framework=pytorch&fsdp=hybrid_shard");
        // Ψ·4 B (fp32 gradients) ·2/8 shards ·1/2 (two replicas).
        assert!(replica > 0.0 && replica < dp);
        let psi = 8_030_261_248.0;
        assert!(
            (replica / (2.0 * psi * 4.0 / 8.0 / 2.0) - 1.0).abs() < 1e-6,
            "{replica}"
        );
        let want = (dp - replica) / (450e9 * 1.07) + replica / 46e9;
        assert!((w / want - 1.0).abs() < 1e-12, "{w} vs {want}");
    }

    /// The data-parallel group spans DP × CP, TP apart: FSDP with CP 2 over two nodes is one
    /// group of 16, eight a node (8·50·0.92 = 368 GB/s), not 8 ranks with 4 a node (184).
    #[test]
    fn dp_group_spans_cp_by_hand() {
        let (dp, _, w) = wire("nodes=2&dp=8&cp=2&framework=pytorch&fsdp=full_shard");
        assert!((w / (dp / 368e9) - 1.0).abs() < 1e-12, "{w}");
    }
}
