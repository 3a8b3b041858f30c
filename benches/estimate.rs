//! Criterion benchmarks of the pure core: decode → estimate → encode, and the chart.

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use memfit::chart::{render_stacked, Bar, ChartSize};
use memfit_core::contract::query::{decode, encode};
use memfit_core::contract::report::report_query;
use memfit_core::estimate::estimate;
use memfit_core::explore::explore;

const Q: &str = "model=llama-3-70b&mode=train&zero=3&gpus_per_node=8&nodes=4&tp=2&seq=8192";

fn bench(c: &mut Criterion) {
    let (x, _) = decode(Q);
    let s = x.scenario.clone();
    c.bench_function("decode", |b| b.iter(|| decode(black_box(Q))));
    c.bench_function("estimate", |b| b.iter(|| estimate(black_box(&s))));
    c.bench_function("encode", |b| b.iter(|| encode(black_box(&x))));
    c.bench_function("report_query (CLI path)", |b| {
        b.iter(|| report_query(black_box(Q)))
    });
    let e = estimate(&s);
    let bars = [Bar::from_estimate("this", &e)];
    c.bench_function("render_stacked", |b| {
        b.iter(|| {
            render_stacked(
                black_box(&bars),
                e.gpu.usable_bytes,
                memfit_core::units::Units::Gib,
                ChartSize::default(),
            )
        })
    });
}

/// The layout explorer on Llama 3 70B at 8k context (the case), N H100s:
/// throughput in layouts evaluated per second.
fn bench_explore(c: &mut Criterion) {
    let mut g = c.benchmark_group("explore llama-3-70b seq 8192");
    g.sample_size(10);
    for (gpn, nodes) in [(8u32, 1u32), (8, 8), (8, 64), (8, 512)] {
        let q = format!("model=llama-3-70b&seq=8192&gpus_per_node={gpn}&nodes={nodes}");
        let (s, _) = decode(&q);
        let s = s.scenario;
        let n = gpn * nodes;
        let evaluated = explore(&s, Some(50)).evaluated;
        g.throughput(Throughput::Elements(evaluated));
        g.bench_with_input(BenchmarkId::new("gpus", n), &s, |b, s| {
            b.iter(|| explore(black_box(s), Some(50)))
        });
    }
    g.finish();
}

/// The op-level stream of a single-GPU `transformers` run rebuilt from its template and
/// replayed through the caching allocator (what a keystroke costs when it changes the run):
/// Llama 3.2 3B pure bf16 at 4 × 4,096 (28 layers) and Llama 3 8B checkpointed at 1 × 8,192.
fn bench_opstream(c: &mut Criterion) {
    use memfit_core::allocator::replay_dense;
    use memfit_core::opstream::{run_of, stream, template};
    for q in [
        "model=llama-3.2-3b&framework=pytorch&gpus_per_node=1&batch=4&seq=4096&attn=sdpa&precision=bf16-pure",
        "model=llama-3-8b&framework=pytorch&gpus_per_node=1&batch=1&seq=8192&attn=sdpa&precision=bf16-pure&recompute=full&adam_impl=fused",
    ] {
        let (s, _) = decode(q);
        let run = run_of(&s.scenario).expect("a run the templates hold");
        let t = template(&run.key).unwrap();
        c.bench_function(&format!("opstream stream+replay {}", run.key), |b| {
            b.iter(|| {
                let (res, ev) = stream(&t, black_box(&run.dims), run.layers, run.opt, 3).unwrap();
                replay_dense(&res, &ev).max_reserved
            })
        });
    }
}

/// The step timeline: the walk and its chart, for the tour's ZeRO-3 case and a
/// 4-stage 1F1B pipeline of Llama 3 70B.
fn bench_timeline(c: &mut Criterion) {
    use memfit::chart::timeline::render_timeline;
    use memfit_core::timeline::timeline;
    for q in [
        "model=llama-2-7b&seq=4096&gpus_per_node=8&zero=3",
        "model=llama-3-70b&seq=8192&gpus_per_node=8&nodes=4&tp=8&pp=4&microbatches=16&zero=1",
    ] {
        let (s, _) = decode(q);
        let s = s.scenario;
        c.bench_function(&format!("timeline {q}"), |b| {
            b.iter(|| timeline(black_box(&s)))
        });
        let t = timeline(&s).unwrap();
        c.bench_function(&format!("render_timeline {q}"), |b| {
            b.iter(|| {
                render_timeline(
                    black_box(&t),
                    80 << 30,
                    memfit_core::units::Units::Gib,
                    ChartSize::default(),
                )
            })
        });
    }
}

/// A keystroke's redraw of the two charts that follow the input (the sequence length 4,096 ↔
/// 4,133 on the default ZeRO-3 link): before, a full drawing tokenized and diffed against
/// the one on the page; now, the moves of the drawing kept in place (`chart::inplace`).
fn bench_in_place(c: &mut Criterion) {
    use memfit::chart::inplace::{redraw, InPlace};
    use memfit::chart::svg::{diff_parsed, Parsed};
    use memfit::chart::timeline::{render_timeline, Walk, Walked};
    use memfit::chart::{annotate, Bars, Stacked};
    use memfit_core::timeline::timeline;
    use memfit_core::units::Units;
    let size = ChartSize::default();
    let at = |seq: u32| {
        let (s, _) = decode(&format!(
            "model=llama-2-7b&zero=3&gpus_per_node=8&seq={seq}"
        ));
        let e = estimate(&s.scenario);
        let t = timeline(&s.scenario).unwrap();
        (
            vec![Bar::from_estimate("this configuration", &e)],
            e.gpu.usable_bytes,
            t,
        )
    };
    let runs = [at(4096), at(4133)];
    let bars = |i: usize| Bars {
        bars: &runs[i].0,
        capacity: runs[i].1,
        units: Units::Gib,
        size,
    };
    let walk = |i: usize| {
        Some(Walk {
            timeline: &runs[i].2,
            capacity: runs[i].1,
            units: Units::Gib,
            size,
        })
    };
    let drawn = |i: usize| {
        let b = bars(i);
        Parsed::new(annotate(
            &render_stacked(b.bars, b.capacity, b.units, size),
            b.bars,
            b.units,
        ))
    };
    let on_page = drawn(0);
    c.bench_function("chart redraw: full drawing + diff", |b| {
        b.iter(|| diff_parsed(&on_page, &drawn(black_box(1))))
    });
    let mut kept = Stacked::draw(bars(0)).1;
    let mut i = 0;
    c.bench_function("chart redraw: moved in place", |b| {
        b.iter(|| {
            i ^= 1;
            redraw(&mut kept, black_box(bars(i)))
        })
    });
    let on_page = Parsed::new(render_timeline(&runs[0].2, runs[0].1, Units::Gib, size));
    c.bench_function("timeline redraw: full drawing + diff", |b| {
        b.iter(|| {
            let new = Parsed::new(render_timeline(
                black_box(&runs[1].2),
                runs[1].1,
                Units::Gib,
                size,
            ));
            diff_parsed(&on_page, &new)
        })
    });
    let mut kept = Walked::draw(walk(0)).1;
    c.bench_function("timeline redraw: moved in place", |b| {
        b.iter(|| {
            i ^= 1;
            redraw(&mut kept, black_box(walk(i)))
        })
    });
}

criterion_group!(
    benches,
    bench,
    bench_explore,
    bench_opstream,
    bench_timeline,
    bench_in_place
);
criterion_main!(benches);
