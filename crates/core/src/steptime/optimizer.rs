//! The optimizer step on the GPU (memory-bound) or offloaded (PCIe and CPU-Adam).

use super::*;

/// Bytes the optimizer step reads and writes per local parameter: fp32 param, grad, two
/// moments read (16), three written (12), the bf16 copy (2).
pub(crate) const ADAM_BYTES: f64 = 30.0;

/// DeepSpeed CPU-Adam: parameters per second per node (ZeRO-Offload, Ren et al. 2021,
/// Table 2: 1B parameters in 0.22 s).
pub(crate) const CPU_ADAM_PER_S: f64 = 4.5e9;

/// Host link per GPU, GB/s one direction (PCIe 4.0 x16 as measured, ~25 GB/s).
pub(crate) const PCIE_GBPS: f64 = 25.0;

/// The optimizer step on this rank's share of the stage's parameters: `(on the GPU,
/// offloaded: PCIe transfers + CPU-Adam)` seconds.
pub(crate) fn optimizer_time(x: &Ctx, p: &Prepared) -> (f64, f64) {
    let s = x.s;
    let stage_params = p.psi as f64 / x.n_stages as f64 / x.t;
    let shard = if s.zero() >= Zero::Z1 {
        s.shard_degree().get() as f64
    } else {
        1.0
    };
    let local = stage_params / shard;
    if s.offload.optimizer != Offload::None {
        let gpus_on_node = x.per_node.get() as f64;
        (
            0.0,
            local * 6.0 / (PCIE_GBPS * 1e9) + local * gpus_on_node / CPU_ADAM_PER_S,
        )
    } else if let Some(t) = eager::optimizer_s(s, p, local, x.hw.hbm).filter(|_| eager::applies(s))
    {
        (t, 0.0)
    } else {
        let trainable = if s.finetune.kind() == crate::scenario::Finetune::Full {
            local
        } else {
            // Adapters: only they step (their share of the stage like the weights').
            crate::train::lora_params(&p.arch, s.finetune.rank(), s.finetune.targets()) as f64
                / x.n_stages as f64
                / x.t
                / shard
        };
        (
            trainable * ADAM_BYTES / (x.hw.hbm * 1e9 * HBM_EFFICIENCY),
            0.0,
        )
    }
}
