//! What the sweep tries for one scenario: tensor-parallel degrees, sharding strategies,
//! offload targets, recomputation policies, and the memory peak of one combination from
//! the stage tallies.

use super::*;

/// Divisors of `n`, ascending.
pub(crate) fn divisors(n: u32) -> Vec<u32> {
    let mut d: Vec<u32> = (1..=n.min(1 << 16))
        .filter(|i| n.is_multiple_of(*i))
        .collect();
    if n > 1 << 16 {
        // Large N: the cofactors too (N ≤ 2^32).
        let extra: Vec<u32> = d.iter().map(|i| n / i).collect();
        d.extend(extra);
        d.sort_unstable();
        d.dedup();
    }
    d
}

/// The TP degrees a cluster of `n` GPUs offers the scenario's model.
pub(crate) fn tp_options(s: &Scenario, p: &Prepared, n: u32) -> Vec<u32> {
    let (heads, kv) = (p.arch.heads.get(), p.arch.kv_heads.get());
    divisors(n)
        .into_iter()
        .filter(|&t| {
            t <= s.cluster.gpus_per_node.get() && heads % t == 0 && (kv % t == 0 || t % kv == 0)
        })
        .collect()
}

/// Shardings to sweep: ZeRO 0–3; under PyTorch DDP (ZeRO-0), ZeroRedundancyOptimizer
/// (ZeRO-1) and FSDP's strategies in place of ZeRO-2 and 3, which PyTorch does not have
/// (hybrid only across nodes); inference has none.
pub(crate) fn shardings(s: &Scenario) -> Vec<(Zero, Fsdp)> {
    if s.workload.mode != Mode::Train {
        return vec![(Zero::Z0, Fsdp::None)];
    }
    let zeros: &[Zero] = if s.stack.framework == Framework::Pytorch {
        &[Zero::Z0, Zero::Z1]
    } else {
        &[Zero::Z0, Zero::Z1, Zero::Z2, Zero::Z3]
    };
    let mut v: Vec<(Zero, Fsdp)> = zeros.iter().map(|&z| (z, Fsdp::None)).collect();
    if s.stack.framework == Framework::Pytorch {
        v.push((Zero::Z0, Fsdp::FullShard));
        v.push((Zero::Z0, Fsdp::ShardGradOp));
        if s.cluster.nodes.get() > 1 {
            v.push((Zero::Z0, Fsdp::HybridShard));
        }
    }
    v
}

pub(crate) fn offloads(s: &Scenario) -> Vec<Offload> {
    if s.workload.mode != Mode::Train {
        return vec![Offload::None];
    }
    let mut v = vec![Offload::None, Offload::Cpu];
    if s.offload.optimizer == Offload::Nvme {
        v.push(Offload::Nvme);
    }
    v
}

pub(crate) fn recomputes(s: &Scenario) -> Vec<Recompute> {
    if s.workload.mode != Mode::Train {
        vec![s.activations.recompute]
    } else {
        vec![Recompute::None, Recompute::Selective, Recompute::Full]
    }
}

/// The pipeline degrees the sweep tries on `n` GPUs: the divisors of `n` up to the layers
/// (at least one layer a stage), and only 1 under llama.cpp, whose layer split memfit
/// counts over `tp` GPUs (its `pp` is not read, and named).
pub(crate) fn pp_options(s: &Scenario, n: u32, layers: u32) -> Vec<u32> {
    let llama_cpp = s.workload.mode == crate::scenario::Mode::Serve
        && s.serving.engine == crate::scenario::Engine::Llamacpp;
    divisors(n)
        .into_iter()
        .filter(|&pp| pp <= layers && (pp == 1 || !llama_cpp))
        .collect()
}

/// Sets the degree-dependent settings of a layout on the working scenario.
pub(crate) fn set_degrees(w: &mut Scenario, base: &Scenario, tp: u32, pp: u32, cp: u32, sp: bool) {
    w.parallel.dp = None;
    w.parallel.tp = at_least_one(tp);
    w.parallel.pp = at_least_one(pp);
    w.parallel.cp = at_least_one(cp);
    w.parallel.sp = sp && tp > 1;
    if !base.training() {
        // Inference and serving run no pipeline schedule: their micro-batches, virtual
        // stages and schedule stay as given (named as training's keys when set).
        w.workload.microbatches = base.workload.microbatches;
        w.parallel.vpp = base.parallel.vpp;
        w.parallel.schedule = base.parallel.schedule;
    } else if pp > 1 {
        w.workload.microbatches = base.workload.microbatches.max(at_least_one(pp));
        w.parallel.vpp = base.parallel.vpp;
        w.parallel.schedule = base.parallel.schedule;
    } else {
        w.workload.microbatches = base.workload.microbatches;
        w.parallel.vpp = Count::MIN;
        w.parallel.schedule = if base.parallel.schedule == Schedule::Interleaved {
            Schedule::OneFOneB
        } else {
            base.parallel.schedule
        };
    }
}

/// A sharding × offload of one degree set, with what does not depend on the
/// micro-batch or the recomputation: its model states + overheads per evaluated
/// stage (training under memfit's mechanisms) and its data-parallel communication.
#[derive(Clone, Copy)]
pub(crate) struct Combo {
    pub(crate) zero: Zero,
    pub(crate) fsdp: Fsdp,
    pub(crate) offload_opt: Offload,
    pub(crate) offload_param: Offload,
    /// Model states + overheads of the first and last stage (`cached` routes).
    pub(crate) states: [Tally; 2],
    /// Whether `estimate`'s own per-stage mechanisms apply (else `per_gpu_peak`).
    pub(crate) cached: bool,
    /// Data-parallel bytes per step.
    pub(crate) comm_dp: u64,
    /// Still fitting at the current micro-batch (for this recomputation).
    pub(crate) alive: bool,
    /// Accepted without a warning (any recomputation; Megatron's formula is checked
    /// per recomputation, its warning depends on it).
    pub(crate) clean: bool,
    /// Megatron's formula route.
    pub(crate) megatron: bool,
}

impl Combo {
    pub(crate) fn set(&self, w: &mut Scenario) {
        w.sharding = match self.fsdp {
            Fsdp::None => Sharding::Zero(self.zero),
            f => Sharding::Fsdp(f),
        };
        w.offload.optimizer = self.offload_opt;
        w.offload.params = self.offload_param;
    }
}

/// Per-GPU peak of a combo at the working scenario's micro-batch and recomputation,
/// from the activation tallies of the evaluated stages.
///
/// Only the first and last pipeline stages are evaluated: a middle stage `i` holds
/// no more of any item than stage 0 (no embedding, no more layers — earlier stages
/// take the remainder — and no more micro-batches in flight, `min(p − i, m)`, under
/// every schedule), so the maximum over stages is the maximum of the two ends.
/// Model states and overheads do not depend on the micro-batch or recomputation;
/// activations do not depend on the sharding or offload; fragmentation is taken on
/// their sum, as `estimate` does. The property test `fast_path_equals_estimate`
/// checks all of this against `estimate`, which evaluates every stage in full.
pub(crate) fn combo_peak(w: &Scenario, c: &Combo, acts: &[Tally; 2], n_stages: usize) -> u64 {
    let mut best = 0;
    for (states, act) in c.states.iter().zip(acts).take(n_stages) {
        let mut t = *states;
        t.merge(act);
        let mut lg = Ledger::Tally(t);
        add_fragmentation(w, &mut lg, &TRAIN);
        best = best.max(lg.totals().peak(Location::Gpu, &TRAIN, false).0);
    }
    best
}
