//! The step timeline: the step program's events, listed in full. Its high-water mark
//! and the phase of its peak event are the estimate's (which reads the same program with
//! dominated passes run as one event each), stage by stage.

use memfit_core::contract::query::decode;
use memfit_core::estimate::{estimate, Mech, Phase};
use memfit_core::megatron::Recompute;
use memfit_core::scenario::{
    Attn, Convention, Framework, Fsdp, Mode, Offload, Scenario, Schedule, Zero,
};
use memfit_core::timeline::{timeline, StepPhase, Timeline};
use proptest::prelude::*;

const MODELS: [&str; 7] = [
    "llama-2-7b",
    "llama-3-8b",
    "gpt2-xl",
    "mixtral-8x7b",
    "qwen2.5-14b",
    "gemma-2-9b",
    "deepseek-v3",
];

#[allow(clippy::type_complexity)]
fn arb() -> impl Strategy<Value = Scenario> {
    (
        (0usize..MODELS.len(), 0u32..4, 0u8..4, 0usize..4, 0usize..3),
        (0usize..5, 0usize..3, 0usize..5, 0usize..4, 0usize..3),
        (0usize..6, 0usize..5, 0usize..4, 0usize..3, 0usize..4),
    )
        .prop_map(
            |((m, g, z, seq, fw), (pp, sched, mb, rc, ck), (conv, mode, fsdp, attn, misc))| {
                let mut s = Scenario::default();
                s.select_model(MODELS[m]);
                s.cluster.gpus_per_node = memfit_core::scenario::at_least_one(1 << g);
                s.sharding = memfit_core::scenario::Sharding::Zero(Zero::from_number(z).unwrap());
                s.workload.seq = memfit_core::scenario::at_least_one([256, 2048, 4096, 8192][seq]);
                s.stack.framework = [
                    Framework::Deepspeed,
                    Framework::Pytorch,
                    Framework::Megatron,
                ][fw];
                s.parallel.pp = memfit_core::scenario::at_least_one([1, 2, 4, 1, 8][pp]);
                s.parallel.schedule =
                    [Schedule::OneFOneB, Schedule::Gpipe, Schedule::Interleaved][sched];
                s.parallel.vpp = memfit_core::scenario::at_least_one(
                    if s.parallel.schedule == Schedule::Interleaved {
                        2
                    } else {
                        1
                    },
                );
                s.workload.microbatches = memfit_core::scenario::at_least_one([1, 2, 4, 8, 16][mb]);
                if s.parallel.schedule == Schedule::Interleaved {
                    // Megatron runs interleaved micro-batches in groups of pp (flagged otherwise).
                    s.workload.microbatches = memfit_core::scenario::at_least_one(
                        s.workload
                            .microbatches
                            .get()
                            .next_multiple_of(s.parallel.pp.get()),
                    );
                }
                s.activations.recompute = [
                    Recompute::None,
                    Recompute::Selective,
                    Recompute::Full,
                    Recompute::Full,
                ][rc];
                s.activations.ckpt_layers = [0, 1, 3][ck];
                s.stack.convention = [
                    Convention::Memfit,
                    Convention::Memfit,
                    Convention::Seed003,
                    Convention::Korthikanti,
                    Convention::Ds019,
                    Convention::Megatron,
                ][conv];
                if mode == 0 {
                    s.workload.mode = Mode::Infer;
                    s.workload.gen = [0, 1, 100, 5000, 70000][mb];
                }
                if s.stack.framework == Framework::Pytorch {
                    let f = [Fsdp::None, Fsdp::FullShard, Fsdp::ShardGradOp, Fsdp::None][fsdp];
                    if f != Fsdp::None {
                        s.sharding = memfit_core::scenario::Sharding::Fsdp(f);
                    }
                }
                s.activations.attn = [Attn::Flash, Attn::Eager, Attn::Sdpa][attn];
                match misc {
                    1 => s.offload.optimizer = Offload::Cpu,
                    2 => s.runtime.frag_pct = 0,
                    3 => s.workload.batch = memfit_core::scenario::at_least_one(3),
                    _ => {}
                }
                s
            },
        )
}

/// Every event's total is the running sum of the deltas, and the peak event holds the peak.
fn consistent(t: &Timeline) {
    let mut stage = u32::MAX;
    let mut total = 0u64;
    for e in &t.events {
        if e.stage != stage {
            stage = e.stage;
            total = 0;
        }
        total = total
            .checked_add_signed(e.delta_bytes)
            .expect("freed more than allocated");
        assert_eq!(total, e.total_bytes);
        assert!(e.total_bytes <= t.peak_bytes);
    }
    let pe = &t.events[t.peak_event];
    assert_eq!(pe.total_bytes, t.peak_bytes);
    assert_eq!(pe.stage, t.peak_stage);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

    /// The verdict and the timeline are one program: the estimate (the program run with
    /// its dominated passes as one event each, read at its high-water moments) and the
    /// timeline (every event listed) reach the same peak on every stage, and name the same
    /// phase for it.
    #[test]
    fn verdict_and_timeline_are_one_program(s in arb()) {
        let e = estimate(&s);
        prop_assume!(!e.out_of_range);
        let t = timeline(&s).expect("in range");
        consistent(&t);
        let q = memfit_core::contract::query::encode(&s.clone().into());
        prop_assert_eq!(t.peak_bytes, e.per_gpu_bytes, "{}", q);
        let at = &t.events[t.peak_event];
        let phase = match at.phase {
            StepPhase::Forward => Some(Phase::Forward),
            StepPhase::Backward => Some(Phase::Backward),
            StepPhase::Optimizer => Some(Phase::OptimizerStep),
            StepPhase::Prefill => Some(Phase::Prefill),
            StepPhase::Decode => Some(Phase::Decode),
            // The other tools' conventions hold everything from the start.
            StepPhase::Baseline => None,
        };
        if let Some(ph) = phase {
            prop_assert_eq!(ph, e.peak_phase, "{} at {:?}", q, at.what);
        }
        if !e.stages.is_empty() {
            prop_assert_eq!(t.stages.len(), e.stages.len());
            for (w, c) in t.stages.iter().zip(&e.stages) {
                prop_assert_eq!(w.peak_bytes, c.per_gpu_bytes, "stage {}: {}", c.stage, memfit_core::contract::query::encode(&s.clone().into()));
            }
        }
    }
}

fn q(query: &str) -> Scenario {
    let (s, w) = decode(query);
    let s = s.scenario;
    assert!(w.is_empty(), "{w:?}");
    s
}

/// Llama-2-7B on 8 GPUs, ZeRO 0 → 3: the baseline (resident model states) follows
/// seed 001's bytes per parameter — 16Ψ, 4Ψ + 12Ψ/8, 2Ψ + 14Ψ/8, 16Ψ/8 — and the peak
/// lands in the backward pass at every stage; under ZeRO-3 every layer's parameters
/// are all-gathered before its forward and its backward and released after.
#[test]
fn zero_stages_walk_for_llama_2_7b_on_8_gpus() {
    let psi: u64 = 6_738_415_616;
    let want = [
        16 * psi,
        4 * psi + 12 * psi / 8,
        2 * psi + 14 * psi / 8,
        16 * psi / 8,
    ];
    let mut peaks = Vec::new();
    for z in 0..4u8 {
        let s = q(&format!(
            "model=llama-2-7b&gpus_per_node=8&zero={z}&seq=4096"
        ));
        let t = timeline(&s).unwrap();
        let states: u64 = t
            .events
            .iter()
            .filter(|e| e.phase == StepPhase::Baseline)
            .filter(|e| {
                ["weights", "gradients", "master_weights", "optimizer_states"]
                    .contains(&e.component.as_str())
            })
            .map(|e| e.delta_bytes as u64)
            .sum();
        assert_eq!(states, want[z as usize], "ZeRO-{z}");
        // The peak is the turn from forward to backward: the last layer's logits
        // (ZeRO-0, where nothing more is allocated for backward) or the backward's
        // reduce bucket (ZeRO ≥ 1), with every layer's activations still saved.
        let pe = &t.events[t.peak_event];
        if z == 0 {
            assert_eq!(
                (pe.phase, pe.layer, pe.mech),
                (StepPhase::Forward, Some(31), Mech::Logits)
            );
        } else if z == 3 {
            // ZeRO-3: the last layer's parameters gathered again for its backward.
            assert_eq!(
                (pe.phase, pe.layer, pe.mech),
                (StepPhase::Backward, Some(31), Mech::GatheredLayer)
            );
        } else {
            assert_eq!(
                (pe.phase, pe.mech),
                (StepPhase::Backward, Mech::ReduceBucket),
                "ZeRO-{z}"
            );
        }
        // The verdict names the same moment's phase.
        let e = estimate(&s);
        assert_eq!(t.peak_bytes, e.per_gpu_bytes);
        let phase = if z == 0 {
            Phase::Forward
        } else {
            Phase::Backward
        };
        assert_eq!(e.peak_phase, phase, "ZeRO-{z}");
        peaks.push(t.peak_bytes);
        let gathers = t
            .events
            .iter()
            .filter(|e| e.component.as_str() == "gathered_layer" && e.delta_bytes > 0)
            .count();
        // 32 layers, gathered once in forward and once in backward.
        assert_eq!(gathers, if z == 3 { 64 } else { 0 }, "ZeRO-{z}");
    }
    assert!(peaks.windows(2).all(|w| w[1] < w[0]), "{peaks:?}");
}

/// Under 1F1B, stage i holds min(p − i, m) micro-batches' activations at its peak
/// (PipeDream-flush): counted from the walk's events, not from the formula.
#[test]
fn one_f_one_b_in_flight_from_the_walk() {
    let s = q("model=llama-2-7b&gpus_per_node=8&pp=4&microbatches=8&seq=2048");
    let t = timeline(&s).unwrap();
    for stage in 0..4u32 {
        let mut alive = std::collections::BTreeMap::<u32, i64>::new();
        let mut most = 0;
        for e in t.events.iter().filter(|e| e.stage == stage) {
            if e.component.as_str() == "activations" {
                *alive.entry(e.micro_batch.unwrap()).or_default() += e.delta_bytes;
                most = most.max(alive.values().filter(|b| **b > 0).count());
            }
        }
        assert_eq!(most, (4 - stage as usize).min(8), "stage {stage}");
    }
}

/// Inference: the KV cache grows through prefill and decode to 2·b·(s + n)·L·a_kv·d·k,
/// and the peak is the last decode step.
#[test]
fn inference_kv_cache_grows_to_its_full_size() {
    let s = q("model=llama-2-7b&mode=infer&seq=100&gen=4000&batch=2");
    let t = timeline(&s).unwrap();
    let kv: i64 = t
        .events
        .iter()
        .filter(|e| e.component.as_str() == "kv_cache")
        .map(|e| e.delta_bytes)
        .sum();
    // 2 (K, V) · b 2 · 4100 tokens · 32 layers · 32 KV heads · 128 · 2 bytes
    assert_eq!(kv, 2 * 2 * 4100 * 32 * 32 * 128 * 2);
    let pe = &t.events[t.peak_event];
    assert_eq!(pe.phase, StepPhase::Decode);
    assert_eq!(t.peak_bytes, estimate(&s).per_gpu_bytes);
}

/// `timeline=1` adds the timeline to the JSON report, in the documented shape.
#[test]
fn report_carries_the_timeline() {
    let v = memfit_core::contract::report::report_query(
        "model=llama-2-7b&gpus_per_node=8&zero=3&timeline=1",
    );
    let t = &v["timeline"];
    assert_eq!(t["peak_bytes"], v["per_gpu_bytes"]);
    let ev = &t["events"][t["peak_event"].as_u64().unwrap() as usize];
    for key in [
        "phase",
        "layer",
        "stage",
        "micro_batch",
        "component",
        "delta_bytes",
        "total_bytes",
    ] {
        assert!(ev.get(key).is_some(), "{key} missing: {ev}");
    }
    assert_eq!(ev["total_bytes"], t["peak_bytes"]);
    let phases: std::collections::BTreeSet<&str> = t["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["phase"].as_str().unwrap())
        .collect();
    assert!(
        ["baseline", "forward", "backward", "optimizer"]
            .iter()
            .all(|p| phases.contains(p)),
        "{phases:?}"
    );
    assert!(
        memfit_core::contract::report::report_query("model=llama-2-7b")
            .get("timeline")
            .is_none()
    );
}

/// A schedule too long to walk gets no timeline (the JSON says `null`), quickly.
#[test]
fn huge_schedules_are_refused_not_walked() {
    let query = "model=llama-3.1-405b&layers=1024&pp=1024&vpp=1024&schedule=interleaved&microbatches=1048576&gpus_per_node=8&nodes=131072&timeline=1";
    assert!(timeline(&q(query)).is_none());
    let v = memfit_core::contract::report::report_query(query);
    assert!(v["timeline"].is_null());
    // A long but walkable one: 128 eight-layer stages under 1F1B, stage i walking
    // p − i + 1 micro-batches: 2·8·Σ_{k=2}^{129} k = 134,144 layer passes.
    let t = timeline(&q(
        "model=llama-3.1-405b&layers=1024&pp=128&microbatches=2048&gpus_per_node=8&nodes=16",
    ))
    .unwrap();
    assert_eq!(t.stages.len(), 128);
    assert!(t.stages.iter().filter(|s| s.listed).count() <= 8);
}
