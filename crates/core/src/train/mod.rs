//! Training memory under memfit's convention: model states for every precision
//! policy, optimizer, ZeRO stage / FSDP strategy, offload target and fine-tuning
//! method; activations; host RAM at model init; pinned memory.

use crate::activations::held_by_loop;
use crate::activations::vars::{
    HELD_OUTPUT, LOSS_EXCESS_MODEL, LOSS_FLASH_FWD, LOSS_FORWARD, LOSS_MEGATRON, LOSS_SAVED,
};
use crate::activations::{
    autocast, chunk_layers, in_flight, korthikanti_form, layer_backward_of, layer_input_bytes,
    logits_bytes, logits_terms, memfit_layer, stage_layers, vars, LayerBackward, Shape, Terms,
    SEED002, SEED003,
};
use crate::expr::{bind, eval_bound, Expr, Tok::*};
use crate::ledger::{Component, Ledger, Location, Mech, Phase, Text};
use crate::megatron::Recompute;
use crate::model::{Arch, LinearKind, Norm};
use crate::scenario::{
    AdamImpl, Convention, Count, Finetune, Framework, Fsdp, GradAcc, Layout, LoraTargets, Offload,
    Optimizer, Precision, Scenario, Schedule, Zero,
};
use crate::units::{mul_div_ceil, mul_div_u128};

mod actplan;
mod fsdp;
mod logits;
mod optimizer;
mod overheads;
mod pytorch;
mod states;

pub(crate) use actplan::*;
pub(crate) use fsdp::*;
pub(crate) use logits::*;
pub use optimizer::*;
pub(crate) use overheads::*;
pub(crate) use pytorch::*;
pub(crate) use states::*;

pub(crate) const SRC_ZERO: &str =
    "seed 001 (ZeRO stage 1/2: 2+2+12 B/param), ZeRO paper (Rajbhandari et al. 2020 §5)";

pub(crate) const SRC_GATHER: &str =
    "seed 000 (DeepSpeed Memory Requirements: largest_layer_memory = 4·largest_layer_params)";

pub(crate) const SRC_ACT: &str =
    "seed 003 (34·b·s·h + 5·b·s²·a per layer) = Korthikanti et al. 2022 Table 2, no parallelism";

pub(crate) const SRC_ACT_TP: &str =
    "Korthikanti et al. 2022 Table 2, tensor parallel without sequence parallel";

pub(crate) const SRC_GRAD: &str =
    "seed 003 (16 vs 18 vs 20 B/param: gradient dtype and fp32 accumulation)";

pub(crate) const SRC_LORA: &str =
    "Hu et al. 2021 (LoRA: r·(d_in + d_out) per adapted matrix); PEFT keeps adapters in fp32";

pub(crate) const SRC_QLORA: &str = "Dettmers et al. 2023 (QLoRA: NF4 0.5 B/param, absmax per 64 values, double quantisation 8-bit absmax + fp32 per 256 blocks)";

pub(crate) const SRC_INIT: &str = "seed 000 (model built in fp32 on the host by each process; zero.Init partitions at construction)";

pub(crate) const SRC_NVME: &str = "DeepSpeed ZeRO-Infinity config defaults (offload_param buffer_count=5, buffer_size=1e8; offload_optimizer buffer_count=4)";

/// What ZeRO stage `z` divides by `ns`: (weights, gradients, optimizer states and master).
pub(crate) fn shard_divisors(z: Zero, ns: u64) -> (u64, u64, u64) {
    (
        if z >= Zero::Z3 { ns } else { 1 },
        if z >= Zero::Z2 { ns } else { 1 },
        if z >= Zero::Z1 { ns } else { 1 },
    )
}

/// Which pipeline stage a ledger is for, and its share of the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stage {
    /// Stage index, 0-based.
    pub i: u32,
    /// Stages, p.
    pub p: Count,
    /// Transformer blocks on this stage.
    pub layers: u32,
    /// This stage's share of the parameters, `num/den`.
    pub frac: (u128, u128),
}

impl Stage {
    /// Stage `i` of the scenario's pipeline, with its parameter share.
    ///
    /// # Formula
    /// ```text
    /// Ψ_i = L_i·Ψ_block + [i = 0]·Ψ_emb + [i = p−1]·(Ψ_final_norm + Ψ_head + [tied ∧ p > 1]·V·h)
    /// ```
    /// The last stage of a tied model keeps its own copy of the embedding matrix as the
    /// output layer (Megatron-LM, DeepSpeed pipeline); `Ψ_block` is the average block.
    pub fn of(arch: &Arch, p: Count, i: u32) -> Stage {
        let c = arch.params();
        let layers = arch.layers.get() as u128;
        let final_norm = arch.norm.params(arch.hidden.get() as u128);
        // In u128: an arch at the keys' limits overflows u64 in the sum.
        let body =
            (c.attention as u128 + c.mlp as u128 + c.norms as u128).saturating_sub(final_norm);
        let li = stage_layers(arch.layers.get(), p, i);
        let mut num = body * li as u128; // over `layers`
        if i == 0 {
            num += c.embedding as u128 * layers;
        }
        if i + 1 == p.get() {
            num += (final_norm + c.lm_head as u128) * layers;
            if arch.tied && p.get() > 1 {
                num += arch.vocab.get() as u128 * arch.hidden.get() as u128 * layers;
            }
        }
        Stage {
            i,
            p,
            layers: li,
            // `Ψ ≥ 1` (see `quantisable_share`), a plain count: the denominator of the stage's share.
            frac: (num, (c.total as u128).max(1) * layers),
        }
    }
    /// `x · frac`, rounded up, exactly (the product may need more than 128 bits for
    /// a model near the codec's limit of 10^18 parameters); `OUT_OF_RANGE` past 2^64.
    pub fn share(&self, x: u64) -> u64 {
        mul_div_u128(x as u128, self.frac.0, self.frac.1, true)
            .map_or(u64::MAX, |v| v.min(u64::MAX as u128) as u64)
    }
}

/// Where an offloaded state lives.
pub(crate) fn place(off: Offload) -> Location {
    match off {
        Offload::None => Location::Gpu,
        Offload::Cpu => Location::Cpu,
        Offload::Nvme => Location::Nvme,
    }
}

/// Model states per GPU under memfit's convention, for one pipeline stage.
///
/// # Formula
/// ```text
/// Ψ_i = stage i's parameters (see Stage::of);  N_s = shard degree
/// DeepSpeed / Megatron (mixed precision):
///   weights    = w·Ψ_i/t   / (N_s if ZeRO-3)      w = 4 fp32, 2 bf16/fp16, 2 + 1 fp8 (bf16 + fp8 copy)
///   gradients  = g·Ψ_i/t   / (N_s if ZeRO ≥ 2)    g = k (compute), 4 (fp32, Megatron main_grad), k + 4 (both)
///   master     = 4·Ψ_i/t   / (N_s if ZeRO ≥ 1)    mixed precision only
///   optimizer  = O(Ψ_i)/t  / (N_s if ZeRO ≥ 1)    see optimizer_state_bytes
/// PyTorch (autocast over fp32 parameters, torch.optim.AdamW foreach):
///   weights 4·Ψ_i/t, autocast bf16 copies 2·Ψ_i/t (forward, backward), gradients 4·Ψ_i/t
///   (backward, step: freed by zero_grad), Adam 8·Ψ_i/t, foreach temporaries 4·Ψ_i/t (step),
///   DDP bucket copy of the gradients 4·Ψ_i/t when N_d > 1 without sharding;
///   with FSDP: fp32 shards (/N_s) plus two unsharded bf16 blocks and one fp32 gradient block.
/// ZeRO-3 (DeepSpeed): gathered largest layer 2k·L/t (seed 000's 4·L) + prefetch bucket k·B_p.
/// ```
/// LoRA/QLoRA: the base is frozen (weights only: `k·Ψ`, or NF4 for QLoRA), and the `Ψ_a`
/// adapters train in fp32. Offloaded items are counted in host RAM (or NVMe) per node
/// (× GPUs per node). Divisions round up (the peak rank holds the largest shard).
/// Each mechanism is one function below: `weight_items`, `adapter_items`,
/// `gradient_items`, `master_weight_items`, `optimizer_items`, `gathered_layer_item`,
/// `nvme_staging_items`, and `pytorch_states` for plain PyTorch.
///
/// Source: seed 001 and the ZeRO paper (2+2+K, K = 12 for Adam), seed 004 ((2+2+K)·Ψ/N_d),
/// seed 003 (16/18/20 B/param), seed 000 (4·L gathered); PyTorch `torch.amp.autocast`
/// weight cache, `_multi_tensor_adamw`, DDP `Reducer` buckets; FSDP2 `fully_shard`.
///
/// # Example
/// Llama-2-7B (Ψ = 6,738,415,616), bf16 + AdamW, ZeRO-1 on 8 GPUs: weights
/// 2Ψ = 13,476,831,232 B, gradients 2Ψ, master 4Ψ/8 = 3,369,207,808 B, optimizer
/// 8Ψ/8 = 6,738,415,616 B.
pub(crate) fn model_states(
    s: &Scenario,
    arch: &Arch,
    psi_total: u64,
    largest: u64,
    l: &Layout,
    st: &Stage,
    ledger: &mut Ledger,
) -> StageStates {
    let c = StateCtx::new(s, arch, psi_total, largest, l, st);
    let mut out = StageStates::default();
    if pytorch_grads(s) {
        out = pytorch_states(&c, l, ledger);
    } else {
        weight_items(&c, ledger);
        adapter_items(&c, ledger);
        out.copies = lora_autocast_copies(&c, ledger);
        gradient_items(&c, ledger);
        master_weight_items(&c, ledger);
        optimizer_items(&c, ledger);
        gathered_layer_item(&c, ledger);
    }
    nvme_staging_items(&c, ledger);
    out
}

/// What a stage's model states hand to its activations: PyTorch's gradients, written in
/// the backward (0 otherwise), and autocast's bf16 copies as the backward frees them
/// (`autocast_copy_split`: the head's, the layers'; 0 unless walked).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct StageStates {
    /// PyTorch's gradient bytes of the stage, `G`.
    pub grads: u64,
    /// Autocast's copies `(C_head, C_body)` in bytes.
    pub copies: (u128, u128),
}

pub(crate) const SRC_PYTORCH: &str = "PyTorch 2.x: fp32 params under torch.amp.autocast (or FSDP2 MixedPrecisionPolicy), torch.optim.AdamW (foreach)";

pub(crate) const FWD_BWD: [Phase; 2] = [Phase::Forward, Phase::Backward];

pub(crate) const BWD_STEP: [Phase; 2] = [Phase::Backward, Phase::OptimizerStep];

pub(crate) const ALL_STEP: [Phase; 3] = [Phase::Forward, Phase::Backward, Phase::OptimizerStep];

/// What PyTorch allocates in backward and frees after the step (gradients, DDP's
/// buckets): backward and step, or the whole step once gradients accumulate.
pub(crate) fn bwd_step(s: &Scenario, st: &Stage) -> &'static [Phase] {
    if accumulates(s, st) {
        &ALL_STEP
    } else {
        &BWD_STEP
    }
}

/// Whether a PyTorch stage runs a forward after its first backward with its most
/// micro-batches in flight (gradient accumulation): from then on the gradients (and
/// what lives from backward to the step) are alive in the forward too.
///
/// # Formula
/// ```text
/// 1F1B (and no pipeline):  m ≥ p − i + 1      (warm-up p − i − 1 forwards, F, B, then F again)
/// GPipe:                   never               (every forward precedes every backward)
/// ```
pub(crate) fn accumulates(s: &Scenario, st: &Stage) -> bool {
    s.parallel.schedule != Schedule::Gpipe
        && s.workload.microbatches.get() > st.p.get().saturating_sub(st.i)
}

/// Whether the stage's gradients are written during backward and freed by
/// `zero_grad` (PyTorch, full fine-tuning), rather than kept as a resident buffer.
pub(crate) fn pytorch_grads(s: &Scenario) -> bool {
    s.stack.framework == Framework::Pytorch && s.finetune.kind() == Finetune::Full
}

#[cfg(test)]
mod tests;
