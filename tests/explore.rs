//! The layout explorer: its fast path equals `estimate`, its enumeration equals a
//! brute-force filter, `min_gpus` is exact, and known cases give the known answer.

use memfit_core::contract::query::{decode, encode};
use memfit_core::estimate::{estimate, is_clean, per_gpu_peak, Prepared};
use memfit_core::explore::{explore, min_gpus, rank, Candidate, MAX_BATCH};
use memfit_core::megatron::Recompute;
use memfit_core::scenario::{Convention, Framework, Fsdp, Mode, Offload, Scenario, Schedule, Zero};
use proptest::prelude::*;
use std::collections::BTreeSet;

fn scenario(q: &str) -> Scenario {
    let (s, w) = decode(q);
    let s = s.scenario;
    assert!(w.is_empty(), "{q}: {w:?}");
    s
}

/// Every check the CLI contract promises for one layout: the calculator, given the
/// layout's query string, prints the same per-GPU bytes, the same verdict, no warning.
#[track_caller]
fn assert_reproduces(base: &Scenario, l: &Candidate) {
    let s = l.scenario(base);
    let e = estimate(&s);
    assert_eq!(e.per_gpu_bytes, l.per_gpu_bytes, "{}", l.describe());
    assert_eq!(e.fits, l.fits(), "{}", l.describe());
    assert!(e.warnings.is_empty(), "{}: {:?}", l.describe(), e.warnings);
    let (back, w) = decode(&encode(&s.clone().into()));
    let back = back.scenario;
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(estimate(&back).per_gpu_bytes, l.per_gpu_bytes);
}

const MODELS: [&str; 8] = [
    "llama-2-7b",
    "llama-3-8b",
    "gpt2-xl",
    "mixtral-8x7b",
    "qwen2.5-14b",
    "gemma-2-9b",
    "t5-3b",
    "deepseek-v3",
];

fn arb_base() -> impl Strategy<Value = Scenario> {
    (
        (0usize..MODELS.len(), 0u32..4, 1u32..4, 0usize..4),
        (0usize..6, 0usize..3, 0usize..3, 0usize..3),
        (prop::bool::ANY, 0usize..3, 0usize..4),
    )
        .prop_map(
            |((m, g, nodes, seq), (conv, fw, mb, sched), (infer, gpu, frag))| {
                let mut s = Scenario::default();
                s.select_model(MODELS[m]);
                s.cluster.gpus_per_node = memfit_core::scenario::at_least_one(1 << g);
                s.cluster.nodes = memfit_core::scenario::at_least_one(nodes);
                s.workload.seq = memfit_core::scenario::at_least_one([512, 2048, 4096, 8192][seq]);
                s.stack.convention = [
                    Convention::Memfit,
                    Convention::Memfit,
                    Convention::Seed003,
                    Convention::Korthikanti,
                    Convention::Ds019,
                    Convention::Megatron,
                ][conv];
                s.stack.framework = [
                    Framework::Deepspeed,
                    Framework::Pytorch,
                    Framework::Megatron,
                ][fw];
                s.workload.microbatches = memfit_core::scenario::at_least_one([1, 4, 8][mb]);
                s.parallel.schedule = [
                    Schedule::OneFOneB,
                    Schedule::Gpipe,
                    Schedule::Interleaved,
                    Schedule::OneFOneB,
                ][sched];
                s.parallel.vpp = memfit_core::scenario::at_least_one(
                    if s.parallel.schedule == Schedule::Interleaved {
                        2
                    } else {
                        1
                    },
                );
                if infer {
                    s.workload.mode = Mode::Infer;
                    s.parallel.vpp = memfit_core::scenario::count(1);
                    s.parallel.schedule = Schedule::OneFOneB;
                    // Training's key: an inference base with it is warned about.
                    s.workload.microbatches = memfit_core::scenario::count(1);
                }
                s.cluster.gpu = ["h100-80", "a100-40", "h200"][gpu].into();
                s.runtime.frag_pct = [0, 5, 10, 5][frag];
                s
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// The sweep's allocation-free fast path (model states cached across micro-batches,
    /// only the end stages of a pipeline evaluated) gives `estimate`'s bytes exactly,
    /// for fitting layouts and for the non-fitting ones the fit map shows.
    #[test]
    fn fast_path_equals_estimate(base in arb_base(), pick in 0usize..1000) {
        let sweep = explore(&base, None);
        prop_assert_eq!(sweep.fitting as usize, sweep.layouts.len());
        let n = sweep.layouts.len();
        for i in 0..n.min(12) {
            assert_reproduces(&base, &sweep.layouts[(pick + i * 97) % n]);
        }
        for c in sweep.cells.iter().filter_map(|c| c.closest).take(12) {
            assert_reproduces(&base, &c);
        }
        // Best first.
        for w in sweep.layouts.windows(2) {
            prop_assert!(rank(&w[0], &w[1]) != std::cmp::Ordering::Greater);
        }
    }

    /// `per_gpu_peak` and `is_clean` agree with `estimate` on arbitrary layouts, valid or not.
    #[test]
    fn peak_and_clean_equal_estimate(mut s in arb_base(), tp in 0u32..4, pp in 0u32..4, z in 0u8..4, rc in 0usize..3, b in 1u32..5) {
        s.parallel.tp = memfit_core::scenario::at_least_one(1 << tp);
        s.parallel.pp = memfit_core::scenario::at_least_one(1 << pp);
        s.sharding = memfit_core::scenario::Sharding::Zero(Zero::from_number(z).unwrap());
        // Recomputation is training's key (in inference a warning that disqualifies nothing).
        if s.training() {
            s.activations.recompute = [Recompute::None, Recompute::Selective, Recompute::Full][rc];
        }
        s.workload.batch = memfit_core::scenario::at_least_one(b);
        let p = Prepared::of(&s);
        let e = estimate(&s);
        prop_assert_eq!(per_gpu_peak(&s, &p), e.per_gpu_bytes);
        prop_assert_eq!(is_clean(&s, &p), e.warnings.is_empty());
    }
}

/// The settings a layout carries, for set comparison.
type Key = (
    u32,
    u32,
    u32,
    u32,
    u8,
    &'static str,
    &'static str,
    &'static str,
    bool,
    u32,
);

fn key(l: &Candidate) -> Key {
    (
        l.dp,
        l.tp,
        l.pp,
        l.cp,
        l.zero.number(),
        l.fsdp.as_str(),
        l.offload_opt.as_str(),
        l.recompute.as_str(),
        l.sp,
        l.batch,
    )
}

/// Brute force: every (dp, tp, pp, cp) with dp·tp·pp·cp = N, every sharding,
/// offload, recomputation and sequence parallelism, through the full `estimate`;
/// valid = no warning, plus the degree rules the explorer documents (tp within a
/// node, tp and the KV heads divide one another, cp divides the sequence); the
/// micro-batch doubles from 1 while the layout fits.
fn brute_force(base: &Scenario) -> BTreeSet<Key> {
    let n = base.world();
    let arch = base.arch();
    let mut out = BTreeSet::new();
    let shardings: Vec<(Zero, Fsdp)> = {
        let mut v: Vec<(Zero, Fsdp)> = (0..4)
            .map(|z| (Zero::from_number(z).unwrap(), Fsdp::None))
            .collect();
        if base.stack.framework == Framework::Pytorch {
            v.extend([(Zero::Z0, Fsdp::FullShard), (Zero::Z0, Fsdp::ShardGradOp)]);
            if base.cluster.nodes.get() > 1 {
                v.push((Zero::Z0, Fsdp::HybridShard));
            }
        }
        v
    };
    for tp in 1..=n {
        for pp in 1..=n {
            for cp in 1..=n {
                if !n.is_multiple_of(tp * pp * cp) {
                    continue;
                }
                let kv = arch.kv_heads.get();
                if tp > base.cluster.gpus_per_node.get()
                    || !(kv.is_multiple_of(tp) || tp % kv == 0)
                    || !base.workload.seq.get().is_multiple_of(cp)
                {
                    continue;
                }
                for &(zero, fsdp) in &shardings {
                    for off in [Offload::None, Offload::Cpu] {
                        for rc in [Recompute::None, Recompute::Selective, Recompute::Full] {
                            for sp in [false, true] {
                                if sp && tp == 1 {
                                    continue;
                                }
                                let mut s = base.clone();
                                s.parallel.tp = memfit_core::scenario::at_least_one(tp);
                                s.parallel.pp = memfit_core::scenario::at_least_one(pp);
                                s.parallel.cp = memfit_core::scenario::at_least_one(cp);
                                s.sharding = match fsdp {
                                    Fsdp::None => memfit_core::scenario::Sharding::Zero(zero),
                                    f => memfit_core::scenario::Sharding::Fsdp(f),
                                };
                                s.offload.optimizer = off;
                                s.activations.recompute = rc;
                                s.parallel.sp = sp;
                                s.workload.microbatches =
                                    memfit_core::scenario::at_least_one(if pp > 1 {
                                        base.workload.microbatches.get().max(pp)
                                    } else {
                                        base.workload.microbatches.get()
                                    });
                                let mut b = 1;
                                loop {
                                    s.workload.batch = memfit_core::scenario::at_least_one(b);
                                    let e = estimate(&s);
                                    if !e.warnings.is_empty() || !e.fits {
                                        break;
                                    }
                                    out.insert((
                                        n / (tp * pp * cp),
                                        tp,
                                        pp,
                                        cp,
                                        zero.number(),
                                        fsdp.as_str(),
                                        off.as_str(),
                                        rc.as_str(),
                                        sp,
                                        b,
                                    ));
                                    if b >= MAX_BATCH {
                                        break;
                                    }
                                    b *= 2;
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

#[test]
fn enumeration_equals_brute_force_on_small_clusters() {
    for q in [
        "model=llama-2-7b&gpus_per_node=4&gpu=a100-40&seq=2048",
        "model=llama-2-7b&gpus_per_node=2&nodes=3&seq=1024",
        "model=gpt2-xl&gpus_per_node=8&gpu=a100-40&seq=1024&framework=pytorch",
        "model=mixtral-8x7b&gpus_per_node=4&nodes=2&framework=pytorch&seq=2048&microbatches=2&gpu=h200",
        "model=qwen2.5-14b&gpus_per_node=4&nodes=2&seq=4096&convention=ds-0.19",
        "model=llama-3-8b&gpus_per_node=4&nodes=2&seq=4096&convention=megatron",
    ] {
        let base = scenario(q);
        let sweep = explore(&base, None);
        let got: BTreeSet<Key> = sweep.layouts.iter().map(key).collect();
        assert_eq!(got.len(), sweep.layouts.len(), "{q}: duplicates");
        let want = brute_force(&base);
        assert!(!want.is_empty(), "{q}: nothing fits; pick a case that does");
        let missing: Vec<_> = want.difference(&got).take(5).collect();
        let extra: Vec<_> = got.difference(&want).take(5).collect();
        assert!(missing.is_empty() && extra.is_empty(), "{q}: missing {missing:?}, extra {extra:?}");
    }
}

#[test]
fn inference_sweeps_degrees_and_batch() {
    let base = scenario("model=llama-3-70b&mode=infer&gpus_per_node=8&seq=4096&gen=512");
    let sweep = explore(&base, None);
    assert!(sweep.fitting > 0);
    // 70B in bf16 (141 GB of weights) needs at least two H100s.
    assert!(sweep.layouts.iter().all(|l| l.tp * l.pp >= 2));
    for l in sweep.layouts.iter().take(20) {
        assert_reproduces(&base, l);
    }
}

/// The fewest GPUs: a layout fits there, and none on any earlier candidate.
#[test]
fn min_gpus_is_exact() {
    for (q, want) in [
        // 16 B/param of Llama-2-7B = 108 GB: two 80 GB GPUs with ZeRO and offload
        // would do, but one GPU with CPU offload already holds weights + gradients
        // (27 GB) + activations: fits on 1.
        ("model=llama-2-7b&gpus_per_node=8", 1),
        // bf16 weights + gradients alone are 4 B × 70,553,706,496 = 282 GB; spread over
        // 2 GPUs that is 141 GB each, over the 85.5 GB an H100 reports: 4 is the first
        // candidate (TP 4, CPU optimizer offload, full recomputation).
        ("model=llama-3-70b&gpus_per_node=8&seq=8192", 4),
        // 4 B × 13,015,864,320 = 52 GB of weights + gradients: 26 GB each on 2 A100 40 GB
        // under ZeRO-3 with offload; one GPU cannot hold 52 GB.
        ("model=llama-2-13b&gpus_per_node=8&gpu=a100-40", 2),
        // PyTorch keeps fp32 parameters under autocast: 4 + 4 + 8 (AdamW) = 16 B ×
        // 46,702,792,704 = 747 GB; FSDP over 8 GPUs leaves 93 GB each (> 85.5): 16.
        ("model=mixtral-8x7b&gpus_per_node=8&framework=pytorch", 16),
        // Megatron's formula at 64k tokens: 18 B/param over TP and the activations'
        // s·b·h·(10 + 24/t) per layer need all 8 GPUs of TP with SP (4 do not fit).
        (
            "model=llama-3-8b&gpus_per_node=8&seq=65536&convention=megatron",
            8,
        ),
    ] {
        let base = scenario(q);
        let m = min_gpus(&base);
        let g = m.value.expect("fits somewhere");
        assert_eq!(g, want, "{q}");
        let at = |g: u32| {
            let mut s = base.clone();
            let gpn = base.cluster.gpus_per_node.get();
            let (per_node, nodes) = if g < gpn { (g, 1) } else { (gpn, g / gpn) };
            s.cluster.gpus_per_node = memfit_core::scenario::at_least_one(per_node);
            s.cluster.nodes = memfit_core::scenario::at_least_one(nodes);
            explore(&s, Some(1)).fitting
        };
        assert!(at(g) > 0, "{q}: nothing fits on {g}");
        let mut earlier = vec![];
        let mut c = 1;
        while c < g {
            earlier.push(c);
            c = if c < base.cluster.gpus_per_node.get() {
                c * 2
            } else {
                c + base.cluster.gpus_per_node.get()
            };
        }
        for c in earlier {
            assert_eq!(at(c), 0, "{q}: fits on {c} < {g}");
        }
        assert_eq!(
            m.previous,
            if g == 1 {
                None
            } else {
                Some(prev_candidate(g, base.cluster.gpus_per_node.get()))
            }
        );
        assert_reproduces(
            &{
                let mut s = base.clone();
                s.cluster.gpus_per_node = memfit_core::scenario::at_least_one(m.gpus_per_node);
                s.cluster.nodes = memfit_core::scenario::at_least_one(m.nodes);
                s
            },
            &m.layout.unwrap(),
        );
    }
}

fn prev_candidate(g: u32, gpn: u32) -> u32 {
    if g <= gpn {
        g / 2
    } else {
        g - gpn
    }
}

#[test]
fn llama_2_70b_at_tp1_pp1_fits_only_under_zero3() {
    // Without TP or PP, ZeRO-0/1/2 keep the full 16-bit weights, 2·Ψ = 138 GB, on every
    // GPU: more than an 80 GB A100 holds, offload or not. ZeRO-3 shards them over 64.
    let base = scenario("model=llama-2-70b&gpus_per_node=8&nodes=8&gpu=a100-80");
    let sweep = explore(&base, Some(0));
    for z in [Zero::Z0, Zero::Z1, Zero::Z2] {
        let c = sweep.cell(z, 1, 1).unwrap();
        assert!(c.best.is_none(), "ZeRO-{} fits at TP1 PP1", z.number());
        assert!(c.closest.unwrap().headroom_bytes < 0);
    }
    let z3 = sweep.cell(Zero::Z3, 1, 1).unwrap().best.unwrap();
    assert!(z3.fits() && z3.dp * z3.cp == 64);
    assert_reproduces(&base, &z3);
}

#[test]
fn gpt3_under_megatron_needs_pipeline_parallelism() {
    // Megatron's formula (distributed optimizer at most, no offload): 175B on 64 GPUs
    // fits only when the pipeline splits the layers, as Megatron's GPT-3 recipes do.
    let base = scenario("model=gpt3-175b&seq=2048&gpus_per_node=8&nodes=8&convention=megatron");
    let sweep = explore(&base, None);
    assert!(sweep.fitting > 0);
    assert!(sweep.layouts.iter().all(|l| l.pp > 1));
    assert_reproduces(&base, &sweep.layouts[0]);
}

#[test]
fn long_context_needs_recomputation() {
    // Llama-3-8B at 81,920 tokens on 8 H100s: no layout fits without recomputation.
    // (At 65,536 tokens TP 8 under FSDP fits with 0.6 GB to spare since the backward is
    // walked inside the layer, `activations::layer_backward`.)
    let base = scenario("model=llama-3-8b&seq=81920&gpus_per_node=8&framework=pytorch");
    let sweep = explore(&base, None);
    assert!(sweep.fitting > 0);
    assert!(sweep.layouts.iter().all(|l| l.recompute != Recompute::None));
}

#[test]
fn llama_3_70b_on_64_h100_best_layout() {
    // The question. Best = the highest predicted tokens per second per GPU among
    // the fitting layouts (the step-time model), then the older proxy.
    let base = scenario("model=llama-3-70b&seq=8192&gpus_per_node=8&nodes=8");
    let all = explore(&base, None);
    let best = all.layouts[0];
    let fastest = all
        .layouts
        .iter()
        .map(|l| l.tokens_per_s_per_gpu)
        .fold(0.0, f64::max);
    assert_eq!(best.tokens_per_s_per_gpu, fastest);
    assert!(best.fits() && best.step_s > 0.0 && best.mfu > 0.0);
    assert_eq!(best.offload_opt, Offload::None);
    assert_reproduces(&base, &best);
    let sweep = explore(&base, Some(5));
    assert_eq!(sweep.layouts[0], best);
    // The fit map's cell of the current scenario (TP 1, PP 1, ZeRO-0) does not fit.
    assert!(sweep.cell(Zero::Z0, 1, 1).unwrap().best.is_none());
}

/// The page runs sweeps a slice at a time: any slicing gives the one-shot result.
#[test]
fn sliced_sweeps_equal_one_shot_sweeps() {
    use memfit_core::explore::{min_gpus_within, MinGpusJob, SweepJob};
    for q in [
        "model=llama-3-70b&seq=8192&gpus_per_node=8&nodes=8",
        "model=mixtral-8x7b&gpus_per_node=8&framework=pytorch&nodes=2",
    ] {
        let base = scenario(q);
        let whole = explore(&base, Some(50));
        for slice in [1, 37, 1000] {
            let mut job = SweepJob::new(&base, Some(50), false);
            let mut calls = 0;
            while !job.step(slice) {
                calls += 1;
            }
            assert!(slice > 100 || calls > 3, "{q}: {calls} slices of {slice}");
            assert_eq!(job.finish(), whole, "{q}, slices of {slice}");
        }
        let mut job = MinGpusJob::new(&base, 16);
        while !job.step(97) {}
        assert_eq!(job.finish(), min_gpus_within(&base, 16), "{q}");
    }
}

/// A pathological cluster (1,024 GPUs per node) is searched within the bounds
/// (65,536 GPUs), not for hours; the answer says how far it looked.
#[test]
fn min_gpus_is_bounded_on_huge_nodes() {
    use memfit_core::explore::MAX_GPUS;
    let base = scenario("model=llama-3.1-405b&seq=67108863&gpus_per_node=1024");
    let m = min_gpus(&base);
    assert_eq!(m.value, None);
    assert!(
        m.nodes as u64 * 1024 <= MAX_GPUS as u64,
        "searched {} nodes",
        m.nodes
    );
}

#[test]
fn pytorch_shards_with_fsdp_not_zero_2_or_3() {
    // Plain PyTorch has DDP (ZeRO-0), ZeroRedundancyOptimizer (ZeRO-1) and FSDP; ZeRO-2/3
    // without FSDP are DeepSpeed's, so the sweep offers FSDP's strategies in their place.
    let base = scenario("model=llama-3-8b&seq=8192&gpus_per_node=8&nodes=2&framework=pytorch");
    let sweep = explore(&base, None);
    assert!(sweep.fitting > 0);
    assert!(sweep
        .layouts
        .iter()
        .all(|l| l.fsdp != Fsdp::None || l.zero <= Zero::Z1));
    let kinds: BTreeSet<_> = sweep
        .layouts
        .iter()
        .map(|l| (l.zero as u8, l.fsdp as u8))
        .collect();
    assert!(kinds.contains(&(Zero::Z0 as u8, Fsdp::FullShard as u8)));
    assert!(kinds.contains(&(Zero::Z0 as u8, Fsdp::HybridShard as u8)));
    // No two listed layouts read alike (sequence parallelism is named).
    let names: BTreeSet<String> = sweep.layouts.iter().map(|l| l.describe()).collect();
    assert_eq!(names.len(), sweep.layouts.len());
    assert!(names.iter().any(|n| n.contains(" + SP")));
    // Asked for anyway, ZeRO-3 under PyTorch is counted and named as such.
    let z3 = scenario("model=llama-3-8b&framework=pytorch&zero=3&gpus_per_node=8");
    let e = estimate(&z3);
    assert!(
        e.warnings
            .iter()
            .any(|w| w.message.contains("fsdp=full_shard")),
        "{:?}",
        e.warnings
    );
    assert!(!is_clean(&z3, &Prepared::of(&z3)));
}

/// A setting every layout ignores (a key for another framework, precision or GPU) is
/// reported and disqualifies no layout: the explorer evaluates and fits the same layouts
/// with it as without it. (Until 2026-11-25 `ce_fusion` under PyTorch, `double_quant=0`
/// without NF4 and the fp8 recipes emptied the fit map.)
#[test]
fn ignored_settings_disqualify_no_layout() {
    let base = "model=llama-3-8b&gpus_per_node=8&seq=4096";
    for (extra, key) in [
        ("&framework=pytorch&ce_fusion=te", "ce_fusion"),
        ("&fp8_recipe=tensorwise", "fp8_recipe"),
        ("&double_quant=0", "double_quant"),
        ("&precision=fp8&gpu=h100-80&fp8_recipe=mxfp8", "fp8_recipe"),
    ] {
        let plain = extra
            .split('&')
            .filter(|kv| !kv.starts_with(key) && !kv.is_empty())
            .map(|kv| format!("&{kv}"))
            .collect::<String>();
        let (a, _) = decode(&format!("{base}{extra}"));
        let b = scenario(&format!("{base}{plain}"));
        let a = a.scenario;
        assert!(a.problems().iter().any(|(k, _)| *k == key), "{extra}");
        let (sa, sb) = (explore(&a, Some(0)), explore(&b, Some(0)));
        assert!(sb.evaluated > 1000, "{plain}: {}", sb.evaluated);
        assert_eq!(
            (sa.evaluated, sa.fitting),
            (sb.evaluated, sb.fitting),
            "{extra}"
        );
    }
}
