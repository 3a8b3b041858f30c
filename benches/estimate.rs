//! Criterion benchmarks of the pure core: decode → estimate → encode, and the chart.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use memfit::chart::{render_stacked, Bar, ChartSize};
use memfit::core::estimate::estimate;
use memfit::share::query::{decode, encode};
use memfit::share::report::report_query;

const Q: &str = "model=llama-3-70b&mode=train&zero=3&gpus_per_node=8&nodes=4&tp=2&seq=8192";

fn bench(c: &mut Criterion) {
    let (s, _) = decode(Q);
    c.bench_function("decode", |b| b.iter(|| decode(black_box(Q))));
    c.bench_function("estimate", |b| b.iter(|| estimate(black_box(&s))));
    c.bench_function("encode", |b| b.iter(|| encode(black_box(&s))));
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
                memfit::core::units::Units::Gib,
                ChartSize::default(),
            )
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
