//! Properties of the query codec and the estimator: round trip, no panics,
//! monotonicity, ledger sums.

use memfit_core::contract::query::{decode, encode, KEYS};
mod common;

use common::flat::FlatSettings;
use memfit_core::contract::{FitColour, Settings};
use memfit_core::estimate::{estimate, Component, Location};
use memfit_core::gpu::GPUS;
use memfit_core::megatron::Recompute;
use memfit_core::model::{presets, Bias, LinKind, Mlp, Norm, SsmDtype};
use memfit_core::quant::Quant;
use memfit_core::scenario::{
    at_least_one, AdamImpl, ArchOverrides, Attn, CeFusion, Convention, Count, CtxPer, Device,
    Dtype, Engine, Finetune, FlashAttn, Fp8Recipe, Framework, Fsdp, GradAcc, HardwareOverrides,
    LlamaFit, Logits, LoraTargets, Loss, Mode, Modules, Offload, Optimizer, Precision, Sampler,
    Scenario, Schedule, Serving, Solve, SsmKernels, Tf32, Version, Zero,
};
use memfit_core::units::Units;
use proptest::prelude::*;

fn opt<T: std::fmt::Debug + Clone + 'static>(
    s: impl Strategy<Value = T> + 'static,
) -> BoxedStrategy<Option<T>> {
    prop_oneof![Just(None), s.prop_map(Some)].boxed()
}

prop_compose! {
    fn arch_overrides()(
        base in arch_base(),
        moe_ffn in opt(1u32..=1 << 22),
        shared_experts in opt(0u32..=1024),
        first_dense in opt(0u32..=1023),
        positions in opt(0u32..=1 << 24),
        window in opt(0u32..=1 << 24),
        local_layers in opt(0u32..=1024),
    ) -> ArchOverrides {
        ArchOverrides { moe_ffn, shared_experts, first_dense, positions, window, local_layers, ..base }
    }
}

prop_compose! {
    /// The layer mix and SSM shape keys of state-space / hybrid models.
    fn arch_mix()(
        base in arch_overrides(),
        attn_layers in opt(0u32..=1024),
        mamba_layers in opt(0u32..=1024),
        conv_layers in opt(0u32..=1024),
        linear_layers in opt(0u32..=1024),
        ssm_version in opt(1u32..=2),
        ssm_inner in opt(1u32..=1 << 22),
        ssm_state in opt(1u32..=1 << 16),
        ssm_groups in opt(1u32..=4096),
        ssm_heads in opt(1u32..=1 << 16),
        ssm_conv in opt(1u32..=64),
        ssm_chunk in opt(1u32..=1 << 16),
        lin_k_heads in opt(1u32..=4096),
        lin_v_heads in opt(1u32..=4096),
        lin_k_dim in opt(1u32..=65_536),
        lin_v_dim in opt(1u32..=65_536),
        lin_kind in opt(prop::sample::select(LinKind::ALL.to_vec())),
        ssm_dtype in opt(prop::sample::select(SsmDtype::ALL.to_vec())),
    ) -> ArchOverrides {
        ArchOverrides { attn_layers, mamba_layers, conv_layers, linear_layers, ssm_version, ssm_inner, ssm_state, ssm_groups, ssm_heads, ssm_conv, ssm_chunk, lin_k_heads, lin_v_heads, lin_k_dim, lin_v_dim, lin_kind, ssm_dtype, ..base }
    }
}

prop_compose! {
    fn arch_base()(
        layers in opt(1u32..=1024), hidden in opt(1u32..=1 << 20), heads in opt(1u32..=4096),
        kv_heads in opt(1u32..=4096), ffn in opt(1u32..=1 << 22), vocab in opt(1u32..=1 << 24),
        mlp in opt(prop::sample::select(Mlp::ALL.to_vec())),
        norm in opt(prop::sample::select(Norm::ALL.to_vec())),
        tied in opt(any::<bool>()),
        bias in opt(prop::sample::select(Bias::ALL.to_vec())),
        experts in opt(0u32..=1024),
        top_k in opt(1u32..=1024),
        head_dim in opt(1u32..=65_536),
    ) -> ArchOverrides {
        let c = |n: Option<u32>| n.map(at_least_one);
        let (layers, hidden, heads, kv_heads, ffn, vocab, head_dim) = (c(layers), c(hidden), c(heads), c(kv_heads), c(ffn), c(vocab), c(head_dim));
        ArchOverrides { layers, hidden, heads, kv_heads, ffn, vocab, mlp, norm, tied, bias, experts, top_k, head_dim, ..Default::default() }
    }
}

/// The training/inference knobs added by the model-states work.
#[derive(Clone, Debug)]
struct Knobs {
    grad_acc: GradAcc,
    optimizer: Optimizer,
    fsdp: Fsdp,
    finetune: Finetune,
    lora_rank: u32,
    lora_targets: LoraTargets,
    double_quant: bool,
    weight_dtype: Dtype,
    quant_group: u32,
    kv_dtype: Dtype,
    sp: bool,
    recompute: Recompute,
    vpp: u32,
    microbatches: u32,
    ep: u32,
    pin_memory: bool,
    solve: Solve,
}

prop_compose! {
    fn knobs()(
        grad_acc in prop::sample::select(GradAcc::ALL.to_vec()),
        optimizer in prop::sample::select(Optimizer::ALL.to_vec()),
        fsdp in prop::sample::select(Fsdp::ALL.to_vec()),
        finetune in prop::sample::select(Finetune::ALL.to_vec()),
        lora_rank in 1u32..=65_536,
        lora_targets in prop::sample::select(LoraTargets::ALL.to_vec()),
        double_quant in any::<bool>(),
        weight_dtype in prop::sample::select(Dtype::ALL.to_vec()),
        quant_group in 1u32..=1 << 20,
        kv_dtype in prop::sample::select(Dtype::ALL.to_vec()),
        sp in any::<bool>(),
        recompute in prop::sample::select(Recompute::ALL.to_vec()),
        vpp in 1u32..=1024,
        microbatches in 1u32..=1 << 20,
        ep in 1u32..=1024,
        pin_memory in any::<bool>(),
        solve in prop::sample::select(Solve::ALL.to_vec()),
    ) -> Knobs {
        Knobs { grad_acc, optimizer, fsdp, finetune, lora_rank, lora_targets, double_quant, weight_dtype, quant_group,
                kv_dtype, sp, recompute, vpp, microbatches, ep, pin_memory, solve }
    }
}

/// The activation / overhead knobs.
#[derive(Clone, Debug)]
struct Knobs2 {
    attn: Attn,
    dropout: bool,
    schedule: Schedule,
    framework: Framework,
    ckpt_layers: u32,
    cuda_ctx_mib: Option<u32>,
    nccl_mib: Option<u32>,
    frag_pct: u32,
    reduce_bucket: u64,
    allgather_bucket: u64,
    overlap_comm: bool,
    prefetch_bucket: u64,
    max_live_params: u64,
    timeline: bool,
}

prop_compose! {
    fn knobs2()(
        attn in prop::sample::select(Attn::ALL.to_vec()),
        dropout in any::<bool>(),
        schedule in prop::sample::select(Schedule::ALL.to_vec()),
        framework in prop::sample::select(Framework::ALL.to_vec()),
        ckpt_layers in 0u32..=1024,
        cuda_ctx_mib in opt(0u32..=65_536),
        nccl_mib in opt(0u32..=65_536),
        frag_pct in 0u32..=100,
        reduce_bucket in 0u64..=1_000_000_000_000,
        allgather_bucket in 0u64..=1_000_000_000_000,
        overlap_comm in any::<bool>(),
        prefetch_bucket in 0u64..=1_000_000_000_000,
        max_live_params in 0u64..=1_000_000_000_000,
        // 1 case in 8 walks the step timeline too (a walk of up to a million layer
        // passes is slow in a debug build).
        timeline in prop::bool::weighted(0.125),
    ) -> Knobs2 {
        Knobs2 { attn, dropout, schedule, framework, ckpt_layers, cuda_ctx_mib, nccl_mib, frag_pct, reduce_bucket,
                 allgather_bucket, overlap_comm, prefetch_bucket, max_live_params, timeline }
    }
}

prop_compose! {
    /// A weight format and a serving engine's knobs.
    fn serving()(
        quant in prop::sample::select(Quant::ALL.to_vec()),
        engine in prop::sample::select(Engine::ALL.to_vec()),
        version in opt((0u16..=100, 0u16..=100, 0u16..=100, 0u16..=9)),
        gpu_util in opt(prop_oneof![Just(0.9f64), Just(1.0), 1e-6f64..=1.0]),
        max_len in opt(1u32..=1 << 26),
        max_batched_tokens in opt(1u32..=1 << 26),
        max_seqs in opt(1u32..=1 << 20),
        block_size in opt(1u32..=1 << 16),
        parallel in 1u32..=4096,
        ctx_per in prop::sample::select(CtxPer::ALL.to_vec()),
        flash_attn in prop::sample::select(FlashAttn::ALL.to_vec()),
        fit in prop::sample::select(LlamaFit::ALL.to_vec()),
        sampler in prop::sample::select(Sampler::ALL.to_vec()),
        ngl in opt(0u32..=65_536),
        kv_offload in any::<bool>(),
        mmap in any::<bool>(),
        redundant_experts in prop_oneof![Just(0u32), 0u32..=4096],
        graph_bs in opt(0u32..=1 << 16),
        hw in prop::array::uniform4(opt(prop_oneof![Just(989.4f64), Just(1.0), 1e-3f64..=1e6])),
        time in any::<bool>(),
        tp_overlap in any::<bool>(),
        fitmap in prop::sample::select(FitColour::ALL.to_vec()),
        ce_fusion in prop::sample::select(CeFusion::ALL.to_vec()),
        fp8_recipe in prop::sample::select(Fp8Recipe::ALL.to_vec()),
        device in prop::sample::select(Device::ALL.to_vec()),
        fp8_params in any::<bool>(),
        modules in prop::sample::select(Modules::ALL.to_vec()),
        tf32 in prop::sample::select(Tf32::ALL.to_vec()),
        ssm_kernels in prop::sample::select(SsmKernels::ALL.to_vec()),
        ep_overlap in any::<bool>(),
    ) -> (Quant, Serving, HardwareOverrides, bool, bool, FitColour, CeFusion, Fp8Recipe, Device, bool, Modules, (Tf32, SsmKernels, bool)) {
        (quant, Serving {
            engine,
            // Under llama.cpp the codec's releases are builds `bN` (N ≥ 1) and Ollama's `0.x.y`.
            version: version.map(|(a, b, c, d)| match (engine, a) {
                (Engine::Llamacpp, 0) => Version(0, b, c, d),
                (Engine::Llamacpp, _) => Version(a, 0, 0, 0),
                _ => Version(a, b, c, d),
            }),
            gpu_util,
            max_len: max_len.map(at_least_one),
            max_batched_tokens: max_batched_tokens.map(at_least_one),
            max_seqs: max_seqs.map(at_least_one),
            block_size: block_size.map(at_least_one),
            parallel: at_least_one(parallel),
            ctx_per,
            sampler,
            flash_attn,
            fit,
            ngl,
            kv_offload,
            mmap,
            redundant_experts,
            graph_bs,
        }, HardwareOverrides { tflops: hw[0], hbm_bw: hw[1], intra_bw: hw[2], inter_bw: hw[3] }, time, tp_overlap, fitmap, ce_fusion, fp8_recipe, device, fp8_params, modules, (tf32, ssm_kernels, ep_overlap))
    }
}

prop_compose! {
    /// Any settings the codec can express (every field within its documented range),
    /// built through the tests' flat form (tests/common/flat.rs).
    fn settings()(
        model in prop::sample::select(presets().iter().map(|p| p.id.to_string()).collect::<Vec<_>>()),
        arch in arch_mix(),
        params in opt(1u64..=1_000_000_000_000_000), largest_layer in opt(1u64..=1_000_000_000_000_000),
        mode in prop_oneof![Just(Mode::Train), Just(Mode::Infer), Just(Mode::Serve)],
        batch in 1u32..=1 << 20, seq in 1u32..=1 << 26, gen in 0u32..=1 << 26,
        gpus_per_node in 1u32..=1024, nodes in 1u32..=1 << 20,
        dp in opt(1u32..=1 << 20), tp in 1u32..=1 << 20, pp in 1u32..=1 << 20, cp in 1u32..=1 << 20,
        zero in prop::sample::select(Zero::ALL.to_vec()),
        offload_opt in prop::sample::select(Offload::ALL.to_vec()),
        offload_param in prop::sample::select(Offload::ALL.to_vec()),
        zero_init in any::<bool>(),
        buffer_factor in prop_oneof![Just(1.5f64), Just(1.0), 1e-6f64..=100.0],
        precision in prop::sample::select(Precision::ALL.to_vec()),
        k in knobs(),
        k2 in knobs2(),
        sv in serving(),
        gpu in prop::sample::select(GPUS.iter().map(|g| g.id.to_string()).collect::<Vec<_>>()),
        gpu_mem_mib in opt(1u64..=1 << 30),
        convention in prop::sample::select(Convention::ALL.to_vec()),
        units in prop::sample::select(Units::ALL.to_vec()),
        adam_impl in prop::sample::select(AdamImpl::ALL.to_vec()),
        logits in prop::sample::select(Logits::ALL.to_vec()),
        loss in prop::sample::select(Loss::ALL.to_vec()),
    ) -> Settings {
        Settings::try_from(FlatSettings { model, arch, params, largest_layer, mode, batch, seq, gen, gpus_per_node, nodes, dp, tp, pp, cp,
                   zero, offload_opt, offload_param, zero_init, buffer_factor, precision,
                   grad_acc: k.grad_acc, optimizer: k.optimizer, fsdp: k.fsdp, finetune: k.finetune,
                   lora_rank: k.lora_rank, lora_targets: k.lora_targets, double_quant: k.double_quant,
                   weight_dtype: k.weight_dtype, quant_group: k.quant_group, kv_dtype: k.kv_dtype, sp: k.sp,
                   recompute: k.recompute, vpp: k.vpp, microbatches: k.microbatches, ep: k.ep,
                   pin_memory: k.pin_memory, solve: k.solve, attn: k2.attn, dropout: k2.dropout,
                   schedule: k2.schedule, framework: k2.framework, ckpt_layers: k2.ckpt_layers,
                   cuda_ctx_mib: k2.cuda_ctx_mib, nccl_mib: k2.nccl_mib, frag_pct: k2.frag_pct,
                   reduce_bucket: k2.reduce_bucket, allgather_bucket: k2.allgather_bucket,
                   overlap_comm: k2.overlap_comm, prefetch_bucket: k2.prefetch_bucket, max_live_params: k2.max_live_params, timeline: k2.timeline,
                   quant: sv.0, serving: sv.1, hardware: sv.2, time: sv.3, tp_overlap: sv.4, fitmap: sv.5, ce_fusion: sv.6, fp8_recipe: sv.7, device: sv.8, fp8_params: sv.9, modules: sv.10, tf32: sv.11.0, ssm_kernels: sv.11.1, ep_overlap: sv.11.2, gpu, gpu_mem_mib, convention, units, adam_impl, logits, loss })
            .expect("every count is at least 1")
    }
}

prop_compose! {
    /// Any scenario the codec can express.
    fn scenario()(s in settings()) -> Scenario {
        s.scenario
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn decode_encode_round_trips(s in settings()) {
        let q = encode(&s);
        let (back, warnings) = decode(&q);
        prop_assert!(warnings.is_empty(), "{q}: {warnings:?}");
        prop_assert_eq!(back, s);
    }

    #[test]
    fn estimate_never_panics_and_sums(s in scenario()) {
        let e = estimate(&s);
        // The peak is the sum of the items alive in the peak phase.
        let gpu: u128 = e.items.iter()
            .filter(|i| i.location == Location::Gpu && i.alive_in(e.peak_phase))
            .map(|i| i.bytes as u128).sum();
        prop_assert_eq!(e.per_gpu_bytes as u128, gpu.min(u64::MAX as u128));
        let all: u128 = e.items.iter().filter(|i| i.location == Location::Gpu).map(|i| i.bytes as u128).sum();
        prop_assert!(e.per_gpu_bytes as u128 <= all);
        // A serving engine must also hold one request of max_len.
        let serves = e.serve.as_ref().is_none_or(|r| r.error.is_none());
        prop_assert_eq!(e.fits, e.per_gpu_bytes <= e.gpu.usable_bytes && serves);
    }

    #[test]
    fn decode_of_arbitrary_strings_never_panics(q in ".{0,200}") {
        let _ = decode(&q);
    }

    #[test]
    fn decode_of_key_shaped_garbage_never_panics(
        pairs in prop::collection::vec((prop::sample::select(KEYS.iter().map(|k| k.name).collect::<Vec<_>>()), "[%+=&a-z0-9.\\-_<>]{0,12}"), 0..12)
    ) {
        let q: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let (s, _) = decode(&q.join("&"));
        let s = s.scenario;
        let _ = estimate(&s);
    }

    /// More parameters, longer sequences or bigger batches never need less memory — up to
    /// less than one block of a serving engine's KV pool, which allocates whole blocks
    /// (`⌊KV / block⌋`): more weights can leave a smaller remainder unallocated. (A state-space
    /// model's vLLM pool can have blocks of a few bytes under absurd TP degrees, where this
    /// rounding shows on almost every draw.)
    #[test]
    fn memory_is_monotone(base in scenario(), extra in 1u32..1000) {
        let mut s = base;
        s.parallel.dp = Some(s.parallel.dp.unwrap_or(Count::MIN));
        let e = estimate(&s);
        let block = e.serve.as_ref().map_or(0, |r| r.kv_cache_bytes.checked_div(r.kv_blocks).unwrap_or(0));
        let e0 = e.per_gpu_bytes.saturating_sub(block.saturating_sub(1));
        let mut bigger = s.clone();
        bigger.workload.seq = at_least_one(s.workload.seq.get().saturating_add(extra).min(1 << 26));
        prop_assert!(estimate(&bigger).per_gpu_bytes >= e0);
        let mut bigger = s.clone();
        bigger.workload.batch = at_least_one(s.workload.batch.get().saturating_add(extra).min(1 << 20));
        prop_assert!(estimate(&bigger).per_gpu_bytes >= e0);
        let mut bigger = s.clone();
        bigger.model.params = Some(s.model.params.unwrap_or(s.arch().params().total).saturating_add(extra as u64 * 1_000_000));
        prop_assert!(estimate(&bigger).per_gpu_bytes >= e0);
    }
}

/// The model-state components (what ZeRO partitions).
const STATES: [Component; 5] = [
    Component::Weights,
    Component::Gradients,
    Component::MasterWeights,
    Component::OptimizerStates,
    Component::ModelStates,
];

fn states_bytes(e: &memfit_core::estimate::Estimate) -> u128 {
    e.items
        .iter()
        .filter(|i| i.location == Location::Gpu && STATES.contains(&i.component))
        .map(|i| i.bytes as u128)
        .sum()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    /// "Out of range" is exact: set iff some byte count stands at 2^64 − 1 (the saturated
    /// value, see `ledger::OUT_OF_RANGE`) or the parameter count does (every byte figure
    /// derived from a saturated count is wrong even when it fits: 4-bit weights of 2^64
    /// parameters are 2^63 bytes); then a warning says "out of range" and the CLI's JSON
    /// carries no saturated figure. Otherwise every figure is below it.
    #[test]
    fn out_of_range_is_flagged_never_printed(mut x in settings()) {
        // (min_gpus sweeps whole clusters per case; tests/explore.rs covers it.)
        if x.view.solve == Solve::MinGpus {
            x.view.solve = Solve::None;
        }
        let s = x.scenario.clone();
        let e = estimate(&s);
        let p = memfit_core::estimate::Prepared::of(&s);
        let saturated = e.per_gpu_bytes == u64::MAX || e.per_cpu_bytes == u64::MAX
            || e.items.iter().any(|i| i.bytes == u64::MAX)
            || p.counts.total == u64::MAX || p.psi == u64::MAX;
        prop_assert_eq!(e.out_of_range, saturated);
        prop_assert_eq!(e.out_of_range, e.warnings.iter().any(|w| w.message.starts_with("out of range")));
        let json = memfit_core::contract::report::report(&x, &e).to_string();
        prop_assert!(!json.contains("18446744073709551615"), "a saturated figure in the JSON");
    }

    /// Per-GPU memory never decreases when batch, seq, layers or hidden grow (with the
    /// data-parallel degree held: it is derived from the cluster otherwise). Why it
    /// holds: every GPU item is a non-decreasing function of each of them — tokens
    /// `b·s'`, the scores `b·s'·s`, the parameter count and the layers per stage (earlier
    /// stages take the remainder, so stage 0 never loses a layer) — and the peak and
    /// the fragmentation are maxima and fractions of sums of them.
    #[test]
    fn memory_is_monotone_in_batch_seq_layers_hidden(base in scenario(), extra in 1u32..64) {
        let mut s = base;
        s.parallel.dp = Some(s.layout().dp);
        let e0 = estimate(&s).per_gpu_bytes;
        let mut t = s.clone();
        t.workload.batch = memfit_core::scenario::at_least_one((s.workload.batch.get() + extra).min(1 << 20));
        // (pp beyond the layer count is a flagged layout whose stages are capped at the
        // layer count, so growing the layers adds stages: compared only where pp fits.)
        prop_assert!(estimate(&t).per_gpu_bytes >= e0, "batch");
        let mut t = s.clone();
        t.workload.seq = memfit_core::scenario::at_least_one((s.workload.seq.get() + extra).min(1 << 26));
        prop_assert!(estimate(&t).per_gpu_bytes >= e0, "seq");
        // Layers and hidden through the architecture (an explicit `params=` fixes Ψ).
        // A hybrid's stage holds L_s blocks of the model's *mean* block (which stage a Mamba
        // or convolution block falls in is not placed), so one more attention block moves the
        // mean towards the attention block's bytes, down by a few bytes when the state block is
        // the larger (GPT-2 with `conv_layers=1`, `pp=15`, `seq=1`, layers 302 → 303: stage 0
        // keeps 21 blocks and its activations fall 42 B): layers compared on transformers only.
        if s.model.params.is_none() && s.model.largest_layer.is_none() && s.parallel.pp.get() <= s.arch().layers.get() {
            let a = s.arch();
            let mut t = s.clone();
            t.model.overrides.layers = Some(at_least_one((a.layers.get() + extra).min(1024)));
            prop_assert!(a.is_hybrid() || estimate(&t).per_gpu_bytes >= e0, "layers {} → {:?}", a.layers, t.model.overrides.layers);
            // Growing hidden by a multiple of the heads keeps the head width a whole number.
            let mut t = s.clone();
            t.model.overrides.hidden = Some(at_least_one((a.hidden.get() + extra * a.heads.get()).min(1 << 20)));
            t.model.overrides.heads = Some(a.heads);
            t.model.overrides.head_dim = Some(at_least_one(t.model.overrides.hidden.unwrap().get() / a.heads.get()));
            if t.model.overrides.hidden.unwrap() > a.hidden && t.model.overrides.head_dim.unwrap() >= a.head_dim {
                prop_assert!(estimate(&t).per_gpu_bytes >= e0, "hidden {} → {:?}", a.hidden, t.model.overrides.hidden);
            }
        }
    }

    /// Under ZeRO-3, more data-parallel ranks never need more memory per GPU: the
    /// sharded states divide by `N_s`, everything else does not depend on it. A training
    /// property: in serving, DP changes what an engine does (SGLang's expert parallelism with
    /// DP attention needs `t·d` divisible by `ep`, and more DP can switch it off).
    #[test]
    fn zero3_memory_never_grows_with_dp(base in scenario(), dp in 1u32..512, more in 1u32..512) {
        let mut s = base;
        s.workload.mode = memfit_core::scenario::Mode::Train;
        s.sharding = memfit_core::scenario::Sharding::Zero(Zero::Z3);
        s.parallel.dp = Some(at_least_one(dp));
        let e0 = estimate(&s).per_gpu_bytes;
        s.parallel.dp = Some(at_least_one(dp + more));
        prop_assert!(estimate(&s).per_gpu_bytes <= e0);
    }

    /// A higher ZeRO stage never holds more model states per GPU (it partitions one more
    /// of them). The *total* is not monotone, and the test below pins why: stage 1 adds
    /// DeepSpeed's reduce and all-gather buckets, and stage 3 the gathered layer and the
    /// prefetch bucket, which outweigh the saving when the shard degree is small.
    /// One pipeline stage: the ledger lists the peak stage's items, and which stage
    /// peaks can change with the ZeRO stage (the invariant holds stage by stage).
    #[test]
    fn higher_zero_stage_never_holds_more_states(base in scenario()) {
        let mut s = base;
        s.stack.convention = Convention::Memfit;
        s.parallel.pp = memfit_core::scenario::count(1);
        let mut prev = u128::MAX;
        for z in [Zero::Z0, Zero::Z1, Zero::Z2, Zero::Z3] {
            s.sharding = memfit_core::scenario::Sharding::Zero(z);
            let b = states_bytes(&estimate(&s));
            prop_assert!(b <= prev, "ZeRO-{} holds {b} > {prev}", z.number());
            prev = b;
        }
    }
}

/// The counterexample to "the total never grows with the stage": Llama-2-7B on one GPU.
#[test]
fn higher_zero_stage_can_hold_more_in_total_on_one_gpu() {
    let at = |z| {
        let s = Scenario {
            sharding: memfit_core::scenario::Sharding::Zero(z),
            ..Default::default()
        };
        estimate(&s).per_gpu_bytes
    };
    // N_s = 1: nothing is partitioned; stage 1 adds 2·5e8 + 2·5e8 bytes of buckets, stage 3
    // the gathered largest layer (4·131,072,000) and the prefetch bucket (2·5e7).
    assert!(at(Zero::Z1) > at(Zero::Z0));
    assert!(at(Zero::Z3) > at(Zero::Z2));
}

/// The example: Llama 3.1 405B at 2^26 tokens × 2^20 sequences.
#[test]
fn extreme_inputs_are_out_of_range_not_16_eib() {
    let r = memfit_core::contract::report::report_query(
        "seq=67108864&batch=1048576&model=llama-3.1-405b",
    );
    assert!(r["per_gpu_bytes"].is_null() && r["headroom_bytes"].is_null());
    assert_eq!(r["fits"], false);
    assert_eq!(r["out_of_range"], true);
    let w: Vec<&str> = r["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["message"].as_str().unwrap())
        .collect();
    assert!(
        w.iter().any(
            |m| m.starts_with("out of range: the activations exceed 2^64 bytes")
                && m.contains("seq")
                && m.contains("batch")
        ),
        "{w:?}"
    );
    assert_eq!(
        memfit_core::units::Units::Gib.format(u64::MAX),
        "out of range"
    );
}
