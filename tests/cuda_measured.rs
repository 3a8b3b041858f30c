//! `framework=pytorch` against a real CUDA device: `torch.cuda.max_memory_allocated` of real
//! `transformers` models trained and run on one NVIDIA H200 (`tests/data/cuda_h200`, copied
//! from the project's shared measurements; torch 2.11.0+cu130, transformers 5.17.0, peft
//! 0.21.0). **Calibration set**: the CUDA mechanisms (SDPA's dispatch, CUDA autocast's `pow`,
//! LoRA's frozen base, a fused projection's view) were found on these runs, so the bounds
//! below are calibration bounds, not accuracy claims; a held-out set measured the same way
//! judges the model outside the project.

use memfit_core::contract::report::estimate_with;
use memfit_core::estimate::Estimate;
use memfit_evidence::cuda::{infer_keys, runs as parse, settings, train_keys as train_query};
use serde_json::Value;

fn runs(file: &str) -> Vec<Value> {
    parse(match file {
        "train.jsonl" => memfit_evidence::cuda::TRAIN,
        _ => memfit_evidence::cuda::INFER,
    })
}

fn infer_query(r: &Value) -> String {
    infer_keys(r)
}

fn estimate(r: &Value, query: &str) -> Estimate {
    let s = settings(r, query).unwrap_or_else(|w| panic!("{}: {query}: {w}", r["id"]));
    estimate_with(&s.scenario, &[])
}

/// The calibration bound of a run and why it is wider than 1 %.
fn bound(id: &str) -> (f64, &'static str) {
    match id {
        "J03" => (
            0.03,
            "generate: Gemma 3 1B −1.8 %: the harness holds 116.75 MiB before the run (66 MiB \
             before the others; memfit: 32 MiB), docs/cuda.md",
        ),
        _ if id.starts_with('J') => (0.02, ""),
        _ => (0.01, ""),
    }
}

fn check(part: &str, file: &str, query: fn(&Value) -> String, peak: fn(&Value) -> u64) -> Vec<f64> {
    let mut errs = Vec::new();
    for r in runs(file).iter().filter(|r| r.get("error").is_none()) {
        let id = r["id"].as_str().unwrap();
        let q = query(r);
        let e = estimate(r, &q);
        let meas = peak(r) as f64;
        let err = (e.allocated_bytes as f64 - meas) / meas;
        let (b, why) = bound(id);
        eprintln!(
            "{part} {id}: {q}: memfit {} measured {meas} ({:+.2} %) {why}",
            e.allocated_bytes,
            err * 100.0
        );
        assert!(
            err.abs() <= b,
            "{id}: {:+.2} % beyond ±{:.0} % ({why}): {q}",
            err * 100.0,
            b * 100.0
        );
        errs.push(err.abs());
    }
    errs
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Every training run's allocated peak (`max_memory_allocated` of the measured iteration)
/// within its calibration bound; the median of all within 0.5 %.
#[test]
fn training_peaks_on_cuda_within_calibration_bounds() {
    let errs = check("train", "train.jsonl", train_query, |r| {
        r["iters"][1]["peak"].as_u64().unwrap()
    });
    assert_eq!(errs.len(), 24);
    let m = median(errs);
    eprintln!("train: median |error| {:.2} %", m * 100.0);
    assert!(m <= 0.005, "median {m}");
}

/// Every `generate` run's peak within its calibration bound.
#[test]
fn generate_peaks_on_cuda_within_calibration_bounds() {
    let errs = check("infer", "infer.jsonl", infer_query, |r| {
        r["peak"].as_u64().unwrap()
    });
    assert_eq!(errs.len(), 8);
}

/// The kernel CUDA's SDPA dispatch takes, seen in the estimate: fp32 with GQA is the math
/// fallback (eager's s² scores: C07), 16-bit with GQA is flash with K/V unexpanded (C06),
/// fp32 without GQA is the memory-efficient kernel (C19: neither), and a CPU tracker's kernel
/// is none of them (`device=cpu`).
#[test]
fn sdpa_dispatch_is_the_kernel_cuda_takes() {
    let all = runs("train.jsonl");
    let run = |id: &str| all.iter().find(|r| r["id"] == id).unwrap().clone();
    let bytes = |id: &str, attn: &str, extra: &str| {
        let r = run(id);
        let q = train_query(&r).replace("attn=sdpa", &format!("attn={attn}")) + extra;
        estimate(&r, &q).allocated_bytes
    };
    assert_eq!(bytes("C07", "sdpa", ""), bytes("C07", "eager", ""));
    assert_eq!(bytes("C06", "sdpa", ""), bytes("C06", "flash", ""));
    assert!(bytes("C19", "sdpa", "") < bytes("C19", "eager", ""));
    assert!(bytes("C19", "sdpa", "") >= bytes("C19", "flash", ""));
    assert!(bytes("C07", "sdpa", "&device=cpu") < bytes("C07", "sdpa", ""));
    assert!(bytes("C06", "sdpa", "&device=cpu") > bytes("C06", "sdpa", ""));
}

/// Mistral 7B at s = W = 4,096 (C26): the memory-efficient kernel saves the mask as a bf16
/// bias in each of the 32 layers (b·s²·2 = 33,554,432 B a layer) and Hugging Face repeats
/// K/V to all 32 heads (2·T·(32 − 8)·128·2 B a layer more than flash keeps), by hand; one
/// token shorter the window is not reached and flash runs.
#[test]
fn mask_bias_is_one_bf16_square_per_layer() {
    let all = runs("train.jsonl");
    let r = all.iter().find(|r| r["id"] == "C26").unwrap();
    let q = train_query(r);
    let with = estimate(r, &q).allocated_bytes as f64;
    let without = estimate(r, &q.replace("seq=4096", "seq=4095")).allocated_bytes as f64;
    let bias = 32.0 * 4096.0 * 4096.0 * 2.0;
    let kv = 32.0 * 2.0 * 4096.0 * 24.0 * 128.0 * 2.0;
    let gap = with - without;
    // At the peak (inside the backward) the first layers' tensors are alive, so at least the
    // 32 biases and at most the biases and every layer's repeated K/V separate the two.
    assert!(
        gap >= bias && gap <= bias + kv,
        "gap {gap}, bias {bias}, K/V {kv}"
    );
}

/// `generate` over a sliding window (J06: Mistral 7B, 32 layers windowed to 4,096, a 16,384-
/// token prompt, bf16): after the prefill each windowed layer's cache is a view of the whole
/// prompt's K/V, 2·32·16,384·8·128·2 = 2,147,483,648 B, not the window's 536,870,912; the
/// boolean mask is 16,384² = 268,435,456 B; at the end of decoding the window bounds it.
#[test]
fn sliding_window_prefill_holds_the_prompt() {
    use memfit_core::estimate::{Component, Phase};
    let all = runs("infer.jsonl");
    let r = all.iter().find(|r| r["id"] == "J06").unwrap();
    let e = estimate(r, &infer_query(r));
    let kv = |ph: Phase| {
        e.items
            .iter()
            .filter(|i| i.component == Component::KvCache && i.phases.contains(&ph))
            .map(|i| i.bytes)
            .sum::<u64>()
    };
    assert_eq!(kv(Phase::Prefill), 2 * 32 * 16_384 * 8 * 128 * 2);
    assert_eq!(kv(Phase::Decode), 2 * 32 * 4_096 * 8 * 128 * 2);
    assert!(e
        .items
        .iter()
        .any(|i| i.bytes == 16_384 * 16_384 && i.phases.contains(&Phase::Prefill)));
}

/// The measured step of a training run: the faster of iterations 2 and 3, and the measured
/// iteration's optimizer phase (`opt_s`), seconds.
fn measured_step(r: &Value) -> (f64, f64) {
    let steps = r["step_s"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    let step = steps
        .iter()
        .skip(1)
        .filter_map(Value::as_f64)
        .fold(f64::INFINITY, f64::min);
    (step, r["iters"][1]["opt_s"].as_f64().unwrap_or(0.0))
}

/// The step-time calibration bound of a run and why it is wider than 25 %.
fn step_bound(id: &str) -> (f64, &'static str) {
    match id {
        "C14" => (
            0.30,
            "Gemma 3 1B (h 1,152, V 262,144, a sliding-window mask): 0.73 of the measured \
             step, not yet found",
        ),
        _ => (0.25, ""),
    }
}

/// Every training run's step (`time=1`'s `step_s`) within its calibration bound, the median
/// (the upper of the two middle runs) within 10 %; the optimizer phase of every full
/// fine-tuning run over 5 ms within 12 % of `opt_s` (foreach, fused and for-loop AdamW, SGD:
/// `steptime::eager::optimizer_s`). Not yet found: LoRA's steps take 15–24 µs more per
/// adapter tensor than their traffic (C15 9.5 ms for 448 tensors, C17 5.9 ms for 224), where
/// full models show none (C25: 3,000 tensors, 1.4 ms beyond its traffic).
#[test]
fn step_times_on_cuda_within_calibration_bounds() {
    use memfit_core::estimate::Prepared;
    use memfit_core::steptime::step_time;
    let mut errs = Vec::new();
    for r in runs("train.jsonl")
        .iter()
        .filter(|r| r.get("error").is_none())
    {
        let id = r["id"].as_str().unwrap();
        let q = train_query(r);
        let s = settings(r, &q).unwrap_or_else(|w| panic!("{id}: {q}: {w}"));
        let Some(t) = step_time(&s.scenario, &Prepared::of(&s.scenario)) else {
            panic!("{id}: no step time");
        };
        let (step, opt) = measured_step(r);
        let err = (t.step_s - step) / step;
        let opt_err = (t.breakdown.optimizer_s - opt) / opt;
        let (b, why) = step_bound(id);
        eprintln!(
            "step {id}: memfit {:.4} s measured {step:.4} s ({:+.1} %); optimizer {:.4} s vs {opt:.4} s ({:+.1} %) {why}",
            t.step_s,
            err * 100.0,
            t.breakdown.optimizer_s,
            opt_err * 100.0
        );
        assert!(
            err.abs() <= b,
            "{id}: step {:+.1} % beyond ±{:.0} % ({why}): {q}",
            err * 100.0,
            b * 100.0
        );
        assert!(t.eager_costs, "{id}: Hugging Face eager costs not counted");
        if r["lora"].is_null() && opt > 5e-3 {
            assert!(
                opt_err.abs() <= 0.12,
                "{id}: optimizer {:+.1} %: {q}",
                opt_err * 100.0
            );
        }
        errs.push(err.abs());
    }
    assert_eq!(errs.len(), 24);
    let m = median(errs);
    assert!(m <= 0.10, "median {:.1} %", m * 100.0);
}
