//! The step-time model: by hand, its properties, the explorer's figures, and the published
//! training runs (`tests/data/train_runs.json`; half held out by `tools/train_split.py`
//! before any comparison). The budget of the issue (held-out median |error| ≤ 8 %, max ≤ 20 %)
//! is NOT met yet: the figures below are guards against regressions, and the README and
//! docs/steptime.md say so.

use memfit_core::contract::query::decode;
use memfit_core::estimate::Prepared;
use memfit_core::steptime::{step_time, StepTime};
use proptest::prelude::*;

fn time(q: &str) -> StepTime {
    let (x, w) = decode(q);
    assert!(w.is_empty(), "{q}: {w:?}");
    step_time(&x.scenario, &Prepared::of(&x.scenario)).expect("training")
}

/// Llama 3 8B on one H100, micro-batch 1 × 8,192 tokens, no parallelism, by hand: the
/// GEMMs at the measured efficiency curve, attention at 0.55 (Megatron's kernels), the
/// element-wise bytes at 0.8 of HBM, the logits, the optimizer step.
#[test]
fn one_gpu_by_hand() {
    let t = time("model=llama-3-8b&seq=8192&framework=megatron");
    let peak = 989.4e12;
    let gemm = |gflop: f64| gflop * 1e9 / (peak * 0.80 * gflop / (gflop + 4.0));
    let tok = 8192.0f64;
    let (h, f, kv) = (4096.0f64, 14_336.0f64, 1024.0f64);
    let g = gemm(2.0 * tok * h * (h + 2.0 * kv) / 1e9)
        + gemm(2.0 * tok * h * h / 1e9)
        + gemm(2.0 * tok * h * 2.0 * f / 1e9)
        + gemm(2.0 * tok * f * h / 1e9);
    let attn = 4.0 * tok * tok * 32.0 * 128.0 * 0.5 / (peak * 0.55);
    let ew = tok * 2.0 * (12.0 * h + 3.0 * f) / (3350e9 * 0.8);
    let block = (g + attn + ew) + (2.0 * g + 2.5 * attn + 2.0 * ew);
    let logits = 3.0 * gemm(2.0 * tok * h * 128_256.0 / 1e9);
    let opt = 8_030_261_248.0 * 30.0 / (3350e9 * 0.8);
    let want = 32.0 * block + logits + opt;
    assert!((t.step_s / want - 1.0).abs() < 1e-9, "{} vs {want}", t.step_s);
    assert_eq!(t.breakdown.bubble_s, 0.0);
    assert!((t.tokens_per_s - tok / t.step_s).abs() < 1e-6);
}

/// The pipeline bubble is (p − 1)/v micro-batches; interleaving divides it.
#[test]
fn bubble_by_hand() {
    let a = time("model=llama-3-8b&seq=4096&gpus_per_node=4&pp=4&microbatches=8&framework=megatron");
    let b = time("model=llama-3-8b&seq=4096&gpus_per_node=4&pp=4&microbatches=8&vpp=2&schedule=interleaved&framework=megatron");
    assert!(a.breakdown.bubble_s > 0.0);
    assert!((b.breakdown.bubble_s / a.breakdown.bubble_s - 0.5).abs() < 0.05, "{} {}", a.breakdown.bubble_s, b.breakdown.bubble_s);
}

/// Inference and serving have no step time.
#[test]
fn only_training() {
    let (x, _) = decode("mode=infer");
    assert!(step_time(&x.scenario, &Prepared::of(&x.scenario)).is_none());
}

/// The explorer's figures are the step-time model's for the layout each entry loads, and
/// the best entry is the fastest fitting one.
#[test]
fn explorer_ranks_by_throughput() {
    let (x, _) = decode("model=llama-3-8b&gpus_per_node=8&seq=8192");
    let sweep = memfit_core::explore::explore(&x.scenario, Some(20));
    assert!(sweep.layouts.len() >= 5);
    for w in sweep.layouts.windows(2) {
        assert!(w[0].tokens_per_s_per_gpu >= w[1].tokens_per_s_per_gpu);
    }
    for l in &sweep.layouts {
        let s = l.scenario(&x.scenario);
        let t = step_time(&s, &Prepared::of(&s)).unwrap();
        assert!((t.tokens_per_s_per_gpu / l.tokens_per_s_per_gpu - 1.0).abs() < 1e-9, "{}", l.describe());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// More work never takes less time: a longer sequence, a larger micro-batch, more
    /// layers (the layout held).
    #[test]
    fn time_grows_with_work(seq in 1u32..=16, batch in 1u32..=8, layers in 1u32..=80, tp in 0u32..=3) {
        let t = 1u32 << tp;
        let q = |s: u32, b: u32, l: u32| format!("model=llama-3-70b&layers={l}&seq={}&batch={b}&gpus_per_node=8&tp={t}&framework=megatron", s * 512);
        let base = time(&q(seq, batch, layers)).step_s;
        prop_assert!(time(&q(seq + 1, batch, layers)).step_s >= base);
        prop_assert!(time(&q(seq, batch + 1, layers)).step_s >= base);
        prop_assert!(time(&q(seq, batch, layers + 1)).step_s >= base);
    }

    /// Per token, more data parallelism at a fixed micro-batch is never faster (each rank
    /// does the same work and only the gradient reduction grows): what memfit can promise
    /// about DP.
    #[test]
    fn more_dp_is_never_faster_per_token(nodes in 1u32..=16) {
        let q = |n: u32| format!("model=llama-3-8b&seq=4096&gpus_per_node=8&nodes={n}&zero=1&framework=megatron");
        let a = time(&q(nodes));
        let b = time(&q(nodes * 2));
        prop_assert!(b.tokens_per_s_per_gpu <= a.tokens_per_s_per_gpu * (1.0 + 1e-12));
    }
}

/// The published runs: where the model stands (guards, not the budget).
#[test]
fn published_runs_guard() {
    let out = std::process::Command::new("python3")
        .args(["tools/train_eval.py", env!("CARGO_BIN_EXE_memfit"), "held_out"])
        .output();
    let Ok(out) = out else { return };
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.starts_with("held_out:") && l.contains("median")).unwrap_or("");
    let med: f64 = line
        .split("median |error| ")
        .nth(1)
        .and_then(|x| x.split(' ').next())
        .and_then(|x| x.parse().ok())
        .unwrap_or(f64::MAX);
    assert!(med <= 25.0, "held-out median {med} %: {line}");
}
