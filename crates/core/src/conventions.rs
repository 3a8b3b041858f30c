//! Ledgers that reproduce other tools exactly: DeepSpeed's model-states
//! estimators and Megatron-LM's theoretical memory formula.

use super::deepspeed::{self, DsInputs, DsVersion};
use super::ledger::{Component, Ledger, Location, Mech, Warning};
use super::megatron::{megatron_memory, MegatronArgs, MegatronVersion};
use super::model::{Arch, Mlp, Norm};
use super::scenario::{Convention, Layout, Offload, Scenario, Zero};
use std::num::NonZeroU64;

/// Model states exactly as DeepSpeed's estimators compute them, split into
/// ledger items whose sums are DeepSpeed's two numbers.
pub(crate) fn deepspeed_items(s: &Scenario, psi: u64, largest: u64, ledger: &mut Ledger) {
    let version = match s.stack.convention {
        Convention::DsDoc => DsVersion::Doc,
        Convention::Ds014 => DsVersion::V0_14,
        _ => DsVersion::V0_19,
    };
    let tool = match version {
        DsVersion::Doc => "seed 000 (DeepSpeed docs, Memory Requirements)",
        DsVersion::V0_14 => "DeepSpeed 0.14.2 estimate_zero*_model_states_mem_needs",
        DsVersion::V0_19 => "DeepSpeed 0.19.8 estimate_zero*_model_states_mem_needs",
    };
    let i = DsInputs {
        total_params: psi as f64,
        largest_layer_params: largest as f64,
        gpus_per_node: s.cluster.gpus_per_node.get(),
        nodes: s.cluster.nodes.get(),
        buffer_factor: s.runtime.buffer_factor,
    };
    let offload = s.offload.optimizer != Offload::None;
    let terms = if s.zero() == Zero::Z2 {
        deepspeed::zero2_terms(&i, offload, version)
    } else {
        let param_off = s.offload.params != Offload::None && offload;
        deepspeed::zero3_terms(&i, offload, param_off, s.runtime.zero_init)
    };
    push_deepspeed(&terms, s.zero(), offload, tool, ledger);
}

/// DeepSpeed's terms as ledger items: each item's bytes, formula and values come from its
/// own [`FExpr`](crate::fexpr::FExpr), and the GPU items add up to DeepSpeed's GPU figure
/// (below 2^53 bytes the `f64` sum is exact; past it, the last GPU item takes the rest).
fn push_deepspeed(
    t: &deepspeed::DsTerms,
    zero: Zero,
    offload: bool,
    tool: &'static str,
    ledger: &mut Ledger,
) {
    let e = t.estimate();
    let mut pushed = 0u64;
    for (k, (x, note)) in t.gpu.iter().enumerate() {
        let last = k + 1 == t.gpu.len();
        let bytes = if last {
            e.gpu.saturating_sub(pushed)
        } else {
            x.bytes()
        };
        pushed = pushed.saturating_add(bytes);
        let (mech, component) = match (zero, k) {
            (Zero::Z2, 0) if offload => (Mech::DsParams, Component::Weights),
            (Zero::Z2, 0) => (Mech::DsLead, Component::Weights),
            (Zero::Z2, _) => (Mech::DsRest, Component::ModelStates),
            (_, 0) => (Mech::DsGatheredLayer, Component::GatheredLayer),
            _ => (Mech::DsZero3Rest, Component::ModelStates),
        };
        ledger.push(
            mech,
            component,
            Location::Gpu,
            bytes,
            || (format!("{}  ({note})", x.symbols()), x.values()),
            tool,
        );
    }
    let (x, note) = &t.cpu;
    let (mech, component) = match (zero, offload) {
        (Zero::Z2, true) => (Mech::DsOffloadStates, Component::ModelStates),
        (Zero::Z2, false) => (Mech::DsInitLoad, Component::InitLoad),
        (_, true) => (Mech::DsZero3Host, Component::ModelStates),
        (_, false) => (Mech::DsZero3Host, Component::InitLoad),
    };
    ledger.push(
        mech,
        component,
        Location::Cpu,
        e.cpu,
        || (format!("{}  ({note})", x.symbols()), x.values()),
        tool,
    );
}

/// Megatron-LM's two numbers (weight and optimizer; activations) as ledger items.
/// Returns a warning when this revision does not report activations for the settings.
pub(crate) fn megatron_items(
    s: &Scenario,
    arch: &Arch,
    l: &Layout,
    ledger: &mut Ledger,
) -> Option<Warning> {
    let version = if s.stack.convention == Convention::Megatron014 {
        MegatronVersion::V0_14
    } else {
        MegatronVersion::Head
    };
    let args = megatron_args(s, arch, l);
    let e = megatron_memory(&args, version);
    let tool = match version {
        MegatronVersion::Head => "Megatron-LM theoretical_memory_usage.py (HEAD d98e8a64)",
        MegatronVersion::V0_14 => "Megatron-LM theoretical_memory_usage.py (core_v0.14.0)",
    };
    let states = &e.states;
    ledger.push(
        Mech::MegatronStates,
        Component::ModelStates,
        Location::Gpu,
        e.weight_and_optimizer_bytes.round() as u64,
        || {
            (
                format!(
                    "{}  (most-loaded shard's params × bytes each: bf16 param 2 + fp32 grad 4 + master 4 + Adam 8, β = 18, or 6 + 12/d with the distributed optimizer)",
                    states.symbols()
                ),
                format!(
                    "{}; t={}, p={}, d={}, V_pad={}, distributed_optimizer={}",
                    states.values(),
                    l.tp,
                    l.pp,
                    l.dp,
                    args.padded_vocab(),
                    args.use_distributed_optimizer as u8
                ),
            )
        },
        tool,
    );
    match (&e.activations, e.activation_bytes) {
        (Some(x), Some(a)) => {
            let path = if e.without_sp_path {
                "HEAD's path without sequence parallelism, with its 1.05 margin"
            } else {
                "Korthikanti et al. Table 2, sequence parallelism + selective recompute"
            };
            let text = || {
                (
                    format!("{}  ({path}; φ = the first stage's in-flight factor)", x.symbols()),
                    format!(
                        "{}; vpp={}, microbatches={}, sp={}, recompute={}",
                        x.values(),
                        s.parallel.vpp.get(),
                        s.workload.microbatches.get(),
                        s.parallel.sp as u8,
                        s.activations.recompute.as_str()
                    ),
                )
            };
            ledger.push(Mech::MegatronActivations, Component::Activations, Location::Gpu, a.round() as u64, text, tool);
            None
        }
        _ => Some(Warning {
            key: "convention".into(),
            value: s.stack.convention.as_str().into(),
            message: "Megatron core_v0.14.0 reports activations only with sp=1 and recompute=selective; the estimate holds weights and optimizer only".into(),
        }),
    }
}

/// Megatron-LM's `--make-vocab-size-divisible-by` default.
const VOCAB_MULTIPLE: crate::nonzero::Count = crate::nonzero::count(128);

/// Megatron-LM's arguments for the scenario: the shape, the parallel degrees, the
/// distributed optimizer (ZeRO ≥ 1), recomputation, sequence and batch.
fn megatron_args(s: &Scenario, arch: &Arch, l: &Layout) -> MegatronArgs {
    MegatronArgs {
        num_layers: arch.layers.get() as u64,
        hidden_size: arch.hidden.get() as u64,
        num_attention_heads: arch.heads.get() as u64,
        num_query_groups: arch.kv_heads.get() as u64,
        kv_channels: arch.head_dim.get() as u64,
        ffn_hidden_size: arch.ffn.get() as u64,
        swiglu: arch.mlp == Mlp::Swiglu,
        layernorm: arch.norm != Norm::Rmsnorm,
        vocab_size: arch.vocab.get() as u64,
        make_vocab_size_divisible_by: VOCAB_MULTIPLE.into(),
        untie: !arch.tied,
        num_experts: NonZeroU64::new(arch.experts as u64),
        moe_ffn_hidden_size: if arch.moe_ffn > 0 {
            arch.moe_ffn as u64
        } else {
            arch.ffn.get() as u64
        },
        moe_router_topk: arch.top_k as u64,
        add_bias_linear: false,
        tp: l.tp.into(),
        pp: l.pp.into(),
        vp: (s.parallel.vpp.get() > 1).then_some(s.parallel.vpp.into()),
        dp: l.dp.into(),
        ep: s.parallel.ep.into(),
        etp: l.tp.into(),
        sequence_parallel: s.parallel.sp,
        recompute: s.activations.recompute,
        use_distributed_optimizer: s.zero() >= Zero::Z1,
        seq_length: s.workload.seq.get() as u64,
        micro_batch_size: s.workload.batch.get() as u64,
        num_microbatches: Some(s.workload.microbatches.get() as u64),
    }
}
