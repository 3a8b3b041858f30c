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
    assert!(
        (t.step_s / want - 1.0).abs() < 1e-9,
        "{} vs {want}",
        t.step_s
    );
    assert_eq!(t.breakdown.bubble_s, 0.0);
    assert!((t.tokens_per_s - tok / t.step_s).abs() < 1e-6);
}

/// The pipeline bubble is (p − 1)/v micro-batches; interleaving divides it.
#[test]
fn bubble_by_hand() {
    let a =
        time("model=llama-3-8b&seq=4096&gpus_per_node=4&pp=4&microbatches=8&framework=megatron");
    let b = time("model=llama-3-8b&seq=4096&gpus_per_node=4&pp=4&microbatches=8&vpp=2&schedule=interleaved&framework=megatron");
    assert!(a.breakdown.bubble_s > 0.0);
    assert!(
        (b.breakdown.bubble_s / a.breakdown.bubble_s - 0.5).abs() < 0.05,
        "{} {}",
        a.breakdown.bubble_s,
        b.breakdown.bubble_s
    );
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
        assert!(
            (t.tokens_per_s_per_gpu / l.tokens_per_s_per_gpu - 1.0).abs() < 1e-9,
            "{}",
            l.describe()
        );
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

/// A published run's stated settings as a query (the same mapping as
/// `tools/train_eval.py`, which prints the row-by-row tables).
fn run_query(r: &serde_json::Value, gpu: &str) -> String {
    let a = &r["arch"];
    let n = |v: &serde_json::Value| v.as_u64();
    let h = n(&a["hidden"]).unwrap();
    let heads = n(&a["heads"]).unwrap();
    let ffn = n(&a["ffn"]).unwrap_or(4 * h);
    let gelu = ffn == 4 * h;
    let mut q = vec![
        format!("model={}", if gelu { "gpt3-175b" } else { "llama-2-7b" }),
        format!("layers={}", n(&a["layers"]).unwrap()),
        format!("hidden={h}"),
        format!("heads={heads}"),
        format!("kv_heads={}", n(&a["kv_heads"]).unwrap_or(heads)),
        format!("ffn={ffn}"),
        format!("vocab={}", n(&a["vocab"]).unwrap()),
        format!("head_dim={}", h / heads),
    ];
    if !gelu {
        q.push("positions=0".into());
    }
    let (tp, pp, cp) = (
        n(&r["tp"]).unwrap(),
        n(&r["pp"]).unwrap(),
        n(&r["cp"]).unwrap_or(1),
    );
    let gpus = n(&r["gpus"]).unwrap_or(tp * pp * n(&r["dp"]).unwrap_or(1) * cp);
    let per_node = if gpus >= 8 { 8 } else { gpus };
    let dp = n(&r["dp"]).unwrap_or(gpus / (tp * pp * cp));
    let mb = n(&r["micro_batch"]).unwrap();
    q.extend([
        format!("gpu={gpu}"),
        format!("gpus_per_node={per_node}"),
        format!("nodes={}", (gpus / per_node).max(1)),
        format!("tp={tp}"),
        format!("pp={pp}"),
        format!("cp={cp}"),
        format!("dp={dp}"),
        format!("batch={mb}"),
        format!(
            "microbatches={}",
            (n(&r["global_batch"]).unwrap() / (dp * mb)).max(1)
        ),
        format!("seq={}", n(&r["seq_len"]).unwrap()),
    ]);
    if let Some(v) = n(&r["vpp"]).filter(|v| *v > 1) {
        q.push(format!("vpp={v}&schedule=interleaved"));
    }
    if let Some(rc) = r["recompute"]
        .as_str()
        .filter(|x| ["selective", "full"].contains(x))
    {
        q.push(format!("recompute={rc}"));
    }
    if r["sequence_parallel"] == true {
        q.push("sp=1".into());
    }
    let p = r["precision"].as_str().unwrap_or("").to_lowercase();
    q.push(format!(
        "precision={}",
        if p.starts_with("fp8") {
            "fp8"
        } else {
            p.as_str()
        }
    ));
    let era = [
        "narayanan2021",
        "korthikanti2022",
        "mtnlg2022",
        "bigscience_bloom",
    ];
    if era.contains(&r["source_key"].as_str().unwrap_or("")) {
        q.push("attn=eager".into());
    }
    // The cluster's figures where the source states them (tests/data/train_clusters.json).
    let clusters: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string("tests/data/train_clusters.json").expect("train_clusters.json"),
    )
    .expect("train_clusters.json is JSON");
    let source = r["source_key"].as_str().unwrap_or("");
    if let Some(keys) = clusters["sources"][source]["keys"].as_object() {
        for (k, v) in keys {
            q.push(format!(
                "{k}={}",
                v.as_str().expect("a key's value is a string")
            ));
        }
    }
    let fw = r["framework"].as_str().unwrap_or("").to_lowercase();
    if fw.contains("nemo") || fw.contains("bridge") {
        q.push("tp_overlap=1".into());
    }
    if fw.contains("torchtitan") || fw.contains("foundry") {
        // The row's sharding strategy (llm-foundry states FULL_SHARD or SHARD_GRAD_OP).
        let strategy = if r["fsdp"] == "SHARD_GRAD_OP" {
            "shard_grad_op"
        } else {
            "full_shard"
        };
        q.push(format!("framework=pytorch&fsdp={strategy}"));
    } else if fw.contains("deepspeed") {
        q.push(format!("zero={}", n(&r["zero_stage"]).unwrap_or(1)));
    } else {
        q.push("framework=megatron&zero=1".into());
    }
    q.join("&")
}

/// The measured step: the iteration time, or the global batch's tokens over the
/// measured tokens per second.
fn measured_step(r: &serde_json::Value) -> f64 {
    let m = &r["measured"];
    if let Some(t) = m["iteration_time_s"].as_f64() {
        return t;
    }
    let tokens = r["global_batch"].as_f64().unwrap() * r["seq_len"].as_f64().unwrap();
    if let Some(x) = m["tokens_per_s_total"].as_f64() {
        return tokens / x;
    }
    let gpus = r["gpus"].as_f64().unwrap_or(1.0);
    tokens / (m["tokens_per_s_per_gpu"].as_f64().unwrap() * gpus)
}

/// The published runs, each part apart: where the model stands. These are guards against
/// regressions at today's figures (held out: median 15.5 %, max 43.0 %; calibration 18.1 %,
/// 44.7 %), NOT the issue's
/// budget (8 % / 20 %), which the model does not meet.
#[test]
fn published_runs_guard() {
    let load = |f: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(format!("tests/data/{f}")).unwrap()).unwrap()
    };
    let (runs, split) = (load("train_runs.json"), load("train_split.json"));
    for (part, med_max, max_max) in [("held_out", 18.0, 44.0), ("calibration", 19.0, 45.5)] {
        let ids: Vec<&str> = split[part]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let mut errs = Vec::new();
        for r in runs["runs"].as_array().unwrap() {
            if !ids.contains(&r["id"].as_str().unwrap()) {
                continue;
            }
            let gpu = split["gpus"][r["gpu"].as_str().unwrap()].as_str().unwrap();
            let t = time(&run_query(r, gpu));
            let m = measured_step(r);
            errs.push(((t.step_s - m) / m * 100.0).abs());
        }
        errs.sort_by(f64::total_cmp);
        assert_eq!(errs.len(), 43, "{part}");
        let median = errs[21];
        let max = errs[42];
        assert!(
            median <= med_max && max <= max_max,
            "{part}: median {median:.1} %, max {max:.1} %"
        );
    }
}
