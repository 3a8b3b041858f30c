//! Communication volume: the bytes one GPU sends per optimizer step, by the
//! parallel dimension that sends them. The explorer ranks layouts with it; memory is
//! what memfit measures exactly, communication is the price each layout pays for it.
//!
//! All volumes count bytes *sent* by one GPU with ring collectives, where an
//! all-reduce of `X` bytes over `n` ranks sends `2·X·(n−1)/n` and an all-gather or
//! reduce-scatter sends `X·(n−1)/n` (Patarasuk & Yuan 2009; NCCL's ring algorithms).
//! Pipeline stages are counted for the first stage (the largest share of the model and
//! the most layers), the same rank whose memory the explorer reports.

use super::estimate::Prepared;
use super::scenario::{Finetune, Fsdp, Mode, Scenario, Zero};
use super::train::{lora_params, Stage};
use serde::{Deserialize, Serialize};

/// Bytes one GPU sends per optimizer step (inference: per batch of requests, prompt
/// and generation), by dimension.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Comm {
    /// Data parallelism and ZeRO/FSDP: gradient reduction, parameter gathers.
    pub dp: u64,
    /// Tensor (and sequence) parallelism: per-layer all-reduces.
    pub tp: u64,
    /// Pipeline parallelism: activations and their gradients between stages.
    pub pp: u64,
    /// Context parallelism: ring attention's K/V exchange.
    pub cp: u64,
    /// Expert parallelism: all-to-all dispatch and combine of MoE tokens.
    pub ep: u64,
}

impl Comm {
    /// Sum over the dimensions (saturating).
    pub fn total(&self) -> u64 {
        [self.dp, self.tp, self.pp, self.cp, self.ep]
            .iter()
            .fold(0u64, |a, b| a.saturating_add(*b))
    }
}

/// `x·(n−1)/n` in bytes, rounded up; 0 for a group of one.
fn ring(x: u128, n: u128) -> u128 {
    if n <= 1 {
        0
    } else {
        (x * (n - 1)).div_ceil(n)
    }
}

fn sat(x: u128) -> u64 {
    x.min(u64::MAX as u128) as u64
}

/// Communication per GPU per optimizer step of the scenario's layout.
///
/// # Formula
/// ```text
/// Ψ_0 = first stage's parameters; Ψ_g = trained ones (Ψ_0, or the LoRA adapters' share)
/// k = compute bytes, t = TP, c = CP, p = PP, v = virtual stages, N_s = shard degree
/// m = micro-batches per step, b = micro-batch, s' = s/c, L_0 = first stage's layers
///
/// data parallel (ring over N_s ranks, ÷t: each TP rank holds 1/t):
///   ZeRO-0/1   2·Ψ_g·k_g/t·(N_s−1)/N_s          gradient all-reduce once per step (no_sync);
///                                              ZeRO-1: reduce-scatter + all-gather, same volume
///   ZeRO-2     (m·k_g + k)·Ψ_g/t·(N_s−1)/N_s  reduce-scatter every micro-batch + parameter all-gather
///   ZeRO-3     m·(2·Ψ_0·k + Ψ_g·k_g)/t·(N_s−1)/N_s   gather in forward and backward, reduce-scatter, per micro-batch
///   FSDP + PP  (Ψ_0·k + Ψ_g·k_g)/t·(N_s−1)/N_s     stage kept unsharded across micro-batches
///   HYBRID     + 2·Ψ_g·k_g/(t·N_s)·(R−1)/R        all-reduce of the shards across R = d·c/N_s replicas
///   k_g = gradient bytes ([`grad_reduce_bytes`]: 4 with FSDP, else k)
/// tensor parallel (t > 1; sequence parallel moves the same volume as all-gather + reduce-scatter):
///   n_c·2·b·s'·h·k·(t−1)/t · L_0 · m          n_c = 4 all-reduces per layer (2 forward, 2 backward),
///                                              6 with full recomputation (the forward is replayed)
/// pipeline parallel (p > 1):
///   2·m·v·b·s'·h·k / (t if sequence parallel) activations forward, their gradients backward
/// context parallel (c > 1), ring attention:
///   3·(c−1)·2·b·s'·⌈a_kv/t⌉·d·k · L_0 · m       K,V passed c−1 times forward; K,V and dK,dV backward
/// expert parallel (ep > 1):
///   4·b·s'·top_k·h·k·(ep−1)/ep · L_moe · m       dispatch + combine, forward and backward
/// inference (one batch: prompt then n generated tokens, T = b·(s + n) tokens):
///   tensor parallel 2·2·T·h·k·(t−1)/t·L_0, pipeline T·h·k
/// ```
/// Sources: ZeRO paper §7 (2Ψ for data parallelism and ZeRO-1/2, 3Ψ for ZeRO-3);
/// DeepSpeed stage-2 reduces gradients every micro-step; Korthikanti et al. 2022 §4.2.2
/// (per-layer TP collectives; SP has the same volume); Narayanan et al. 2021 §3.2
/// (pipeline point-to-point, scatter/gather over TP); Liu et al. 2023 (ring attention);
/// Lepikhin et al. 2020 (GShard all-to-all).
///
/// # Example
/// Llama-2-7B (Ψ = 6,738,415,616), bf16, ZeRO-3 on 8 GPUs, one micro-batch:
/// 3·Ψ·2·7/8 = 35,376,681,984 B; with ZeRO-1: 2·Ψ·2·7/8 = 23,584,454,656 B.
/// ```
/// use memfit_core::{comm::comm_per_step, estimate::Prepared, scenario::{Scenario, Zero}};
/// let mut s = Scenario::default();
/// s.cluster.gpus_per_node = memfit_core::scenario::count(8);
/// s.sharding = memfit_core::scenario::Sharding::Zero(Zero::Z3);
/// assert_eq!(comm_per_step(&s, &Prepared::of(&s)).dp, 35_376_681_984);
/// s.sharding = memfit_core::scenario::Sharding::Zero(Zero::Z1);
/// assert_eq!(comm_per_step(&s, &Prepared::of(&s)).dp, 23_584_454_656);
/// ```
pub fn comm_per_step(s: &Scenario, p: &Prepared) -> Comm {
    let l = s.layout();
    let st = Stage::of(&p.arch, super::estimate::stage_count(&p.arch, &l), 0);
    let mut c = activation_comm(s, p, &st);
    c.dp = data_parallel_comm(s, p, &st);
    c
}

/// Bytes per element of the data-parallel gradient reduction: 4 with FSDP (gradients
/// reduced in fp32: torchtitan's `mixed_precision_reduce = "float32"`, Composer's
/// `mixed_precision: DEFAULT`; the memory ledger's fp32 gradient block), else the compute
/// bytes (DeepSpeed and Megatron reduce in the compute dtype).
pub(crate) fn grad_reduce_bytes(s: &Scenario) -> u128 {
    if s.fsdp() != Fsdp::None {
        4
    } else {
        s.numerics.precision.compute_bytes() as u128
    }
}

/// The data-parallel part of `comm_per_step` for the first stage `st` (it does not
/// depend on the micro-batch size).
pub(crate) fn data_parallel_comm(s: &Scenario, p: &Prepared, st: &Stage) -> u64 {
    if s.workload.mode != Mode::Train {
        return 0;
    }
    let l = s.layout();
    let k = s.numerics.precision.compute_bytes() as u128;
    let t = l.tp.get() as u128;
    let m = s.workload.microbatches.get() as u128;
    let psi0 = st.share(p.psi) as u128;
    let psi_g = match s.finetune.kind() {
        Finetune::Full => psi0,
        _ => st.share(lora_params(
            &p.arch,
            s.finetune.rank(),
            s.finetune.targets(),
        )) as u128,
    };
    let ns = s.shard_degree().get() as u128;
    let z = s.zero();
    let kg = grad_reduce_bytes(s);
    let bytes = match z {
        _ if s.fsdp() != Fsdp::None && z == Zero::Z3 && l.pp.get() > 1 => psi0 * k + psi_g * kg,
        Zero::Z3 => m * (2 * psi0 * k + psi_g * kg),
        Zero::Z2 => m * psi_g * kg + psi_g * k,
        Zero::Z0 | Zero::Z1 => 2 * psi_g * kg,
    };
    let dp = ring(bytes / t, ns);
    sat(dp + replica_comm(s, psi_g))
}

/// HYBRID_SHARD's all-reduce of each shard across the `R = d·c/N_s` replicas, bytes one GPU
/// sends per step for `psi_g` trained parameters of its stage (0 under any other sharding):
/// `2·Ψ_g·k_g/(t·N_s)·(R−1)/R`, the part of [`data_parallel_comm`] that crosses nodes.
pub(crate) fn replica_comm(s: &Scenario, psi_g: u128) -> u128 {
    if s.fsdp() != Fsdp::HybridShard || s.workload.mode != Mode::Train {
        return 0;
    }
    let l = s.layout();
    let t = l.tp.get() as u128;
    let ns = s.shard_degree().get() as u128;
    let replicas = (l.dp.get() as u128 * l.cp.get() as u128).div_ceil(ns);
    ring(2 * psi_g * grad_reduce_bytes(s) / (t * ns), replicas)
}

/// [`replica_comm`] for the first stage, as [`comm_per_step`] counts it.
pub(crate) fn replica_comm_per_step(s: &Scenario, p: &Prepared) -> u64 {
    let l = s.layout();
    let st = Stage::of(&p.arch, super::estimate::stage_count(&p.arch, &l), 0);
    let psi_g = match s.finetune.kind() {
        Finetune::Full => st.share(p.psi),
        _ => st.share(lora_params(
            &p.arch,
            s.finetune.rank(),
            s.finetune.targets(),
        )),
    } as u128;
    sat(replica_comm(s, psi_g))
}

/// Every part of `comm_per_step` but data parallelism, for the first stage `st`
/// (none of it depends on the sharding or offload).
pub(crate) fn activation_comm(s: &Scenario, p: &Prepared, st: &Stage) -> Comm {
    let l = s.layout();
    let arch = &p.arch;
    let n = st.p.get();
    let k = s.numerics.precision.compute_bytes() as u128;
    let (t, c, pp) = (l.tp.get() as u128, l.cp.get() as u128, n as u128);
    let b = s.workload.batch.get() as u128;
    let h = arch.hidden.get() as u128;
    let layers = st.layers as u128;
    if s.workload.mode != Mode::Train {
        let tokens = b * (s.workload.seq.get() as u128 + s.workload.gen as u128);
        return Comm {
            tp: sat(ring(2 * 2 * tokens * h * k, t) * layers),
            pp: if pp > 1 { sat(tokens * h * k) } else { 0 },
            ..Comm::default()
        };
    }
    let m = s.workload.microbatches.get() as u128;
    let sl = (s.workload.seq.get() as u128).div_ceil(c);
    // Four collectives a layer, two more for each layer full recomputation checkpoints
    // (`ckpt_layers` of each chunk: `n` of `L_c`, the stage's `layers/L_c` chunks).
    let checkpointed = if s.activations.recompute == super::megatron::Recompute::Full {
        let (lc, n) = crate::activations::chunk_layers(s, st.layers);
        n * crate::scenario::div_at_least_one(st.layers, lc).get() as u128
    } else {
        0
    };
    let act = b * sl * h * k;
    let tp = ring(2 * act, t) * (4 * layers + 2 * checkpointed) * m;
    let v = s.parallel.vpp.get() as u128;
    let pp_bytes = if pp > 1 {
        2 * m * v * act / if s.parallel.sp { t } else { 1 }
    } else {
        0
    };
    let kv_t = (arch.kv_heads.get() as u128).div_ceil(t);
    let cp = 3 * (c - 1) * 2 * b * sl * kv_t * arch.head_dim.get() as u128 * k * layers * m;
    let ep_deg = s.ep_ranks() as u128;
    let ep = if arch.experts > 0 && ep_deg > 1 {
        let moe_layers = layers.saturating_sub(arch.first_dense as u128);
        ring(4 * b * sl * arch.top_k as u128 * h * k, ep_deg) * moe_layers * m
    } else {
        0
    };
    Comm {
        dp: 0,
        tp: sat(tp),
        pp: sat(pp_bytes),
        cp: sat(cp),
        ep: sat(ep),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::megatron::Recompute;

    fn comm(q: impl Fn(&mut Scenario)) -> Comm {
        let mut s = Scenario::default();
        q(&mut s);
        comm_per_step(&s, &Prepared::of(&s))
    }

    /// Data-parallel bytes of Llama-2-7B (the default model) on 8 GPUs of one node.
    fn dp8(sharding: crate::scenario::Sharding, m: u32) -> u128 {
        comm(|s| {
            s.cluster.gpus_per_node = crate::scenario::count(8);
            s.sharding = sharding;
            s.workload.microbatches = crate::scenario::at_least_one(m);
        })
        .dp as u128
    }

    #[test]
    fn zero_stages_follow_the_zero_paper() {
        let psi = 6_738_415_616u128;
        let dp = |z, m| dp8(crate::scenario::Sharding::Zero(z), m);
        // 2Ψ (ZeRO-0/1), (m + 1)Ψ (ZeRO-2), 3mΨ (ZeRO-3) elements of 2 bytes, × 7/8.
        assert_eq!(dp(Zero::Z0, 4), (2 * psi * 2 * 7).div_ceil(8));
        assert_eq!(dp(Zero::Z1, 4), (2 * psi * 2 * 7).div_ceil(8));
        assert_eq!(dp(Zero::Z2, 4), (5 * psi * 2 * 7).div_ceil(8));
        assert_eq!(dp(Zero::Z3, 4), (12 * psi * 2 * 7).div_ceil(8));
        // One GPU sends nothing.
        assert_eq!(comm(|_| {}).total(), 0);
    }

    /// FSDP gathers bf16 parameters but reduce-scatters fp32 gradients: per micro-batch
    /// 2·Ψ·2 + Ψ·4 = 8Ψ bytes against ZeRO-3's 6Ψ, × 7/8 on 8 GPUs.
    #[test]
    fn fsdp_reduces_gradients_in_fp32() {
        let psi = 6_738_415_616u128;
        let dp = dp8;
        use crate::scenario::Sharding;
        assert_eq!(
            dp(Sharding::Fsdp(Fsdp::FullShard), 1),
            (8 * psi * 7).div_ceil(8)
        );
        assert_eq!(
            dp(Sharding::Fsdp(Fsdp::FullShard), 3),
            (3 * 8 * psi * 7).div_ceil(8)
        );
        assert_eq!(dp(Sharding::Zero(Zero::Z3), 1), (6 * psi * 7).div_ceil(8));
        // SHARD_GRAD_OP: the fp32 reduction every micro-batch, one bf16 gather per step:
        // (3·4 + 2)·Ψ for m = 3.
        assert_eq!(
            dp(Sharding::Fsdp(Fsdp::ShardGradOp), 3),
            (14 * psi * 7).div_ceil(8)
        );
    }

    #[test]
    fn tensor_parallel_by_hand() {
        // Llama-2-7B, t = 2 of 2 GPUs, b = 1, s = 4096: 4 all-reduces of 4096·4096·2 bytes
        // per layer, each sending 2·X·1/2 = X, over 32 layers.
        let c = comm(|s| {
            s.cluster.gpus_per_node = crate::scenario::count(2);
            s.parallel.tp = crate::scenario::count(2);
        });
        let x = 4096u64 * 4096 * 2;
        assert_eq!(c.tp, 4 * x * 32);
        assert_eq!(c.dp, 0);
        // Full recompute replays the forward's two all-reduces.
        let f = comm(|s| {
            s.cluster.gpus_per_node = crate::scenario::count(2);
            s.parallel.tp = crate::scenario::count(2);
            s.activations.recompute = Recompute::Full;
        });
        assert_eq!(f.tp, 6 * x * 32);
    }

    #[test]
    fn pipeline_and_context_by_hand() {
        let c = comm(|s| {
            s.cluster.gpus_per_node = crate::scenario::count(4);
            s.parallel.pp = crate::scenario::count(2);
            s.parallel.cp = crate::scenario::count(2);
            s.workload.microbatches = crate::scenario::count(2);
        });
        // PP: 2·m·b·s'·h·k with s' = 2048: 2·2·2048·4096·2.
        assert_eq!(c.pp, 2 * 2 * 2048 * 4096 * 2);
        // CP: 3·(c−1)·2·b·s'·a_kv·d·k per layer · 16 layers on stage 0 · 2 micro-batches.
        assert_eq!(c.cp, 3 * 2 * 2048 * 32 * 128 * 2 * 16 * 2);
    }
}
