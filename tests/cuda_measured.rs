//! `framework=pytorch` against a real CUDA device: `torch.cuda.max_memory_allocated` of real
//! `transformers` models trained and run on one NVIDIA H200 (`tests/data/cuda_h200`, copied
//! from the project's shared measurements; torch 2.11.0+cu130, transformers 5.17.0, peft
//! 0.21.0). **Calibration set**: the CUDA mechanisms (SDPA's dispatch, CUDA autocast's `pow`,
//! LoRA's frozen base, a fused projection's view) were found on these runs, so the bounds
//! below are calibration bounds, not accuracy claims; a held-out set measured the same way
//! judges the model outside the project. The step times also read set D
//! (`tests/data/cuda_h200_d`, the same stack): its calibration half is bounded like the
//! calibration set, its held-out third (numbers divisible by 3, fixed before measuring) is
//! reported apart.

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

/// The step-time calibration bound of a run and why it is wider than 12 %.
fn step_bound(id: &str) -> (f64, &'static str) {
    match id {
        "C14" => (
            0.17,
            "Gemma 3 1B (h 1,152, V 262,144, a sliding-window mask): 0.84 of the measured \
             step, not yet found",
        ),
        "D08" => (
            0.14,
            "GPT-2 124M in bf16 under eager attention, +12.6 %: the eager backward is \
             charged 2.5 × the forward, more than its passes (docs/steptime.md)",
        ),
        _ => (0.12, ""),
    }
}

/// Every calibration training run's step (`time=1`'s `step_s`) within its calibration bound
/// — the calibration set C01–C26 and set D's calibration half (`tests/data/cuda_h200_d`,
/// every run whose number is not a multiple of 3) — the median of each part within 6 %; the
/// optimizer phase of every full fine-tuning run over 5 ms within 13 % of `opt_s` (foreach,
/// fused and for-loop AdamW, SGD: `steptime::eager::optimizer_s`). The measured step is the
/// faster of iterations 2 and 3 (as `compare.py` of the shared measurements reads it).
#[test]
fn step_times_on_cuda_within_calibration_bounds() {
    use memfit_evidence::cuda::{step_rows, TRAIN, TRAIN_D};
    for (part, text, n) in [("C", TRAIN, 24), ("D", TRAIN_D, 24)] {
        let (rows, failed) = step_rows(text);
        assert!(failed.is_empty(), "{failed:?}");
        let mut errs = Vec::new();
        for r in rows.iter().filter(|r| !r.held_out) {
            let (err, opt_err) = (r.rel_error(), r.optimizer_s / r.measured_opt_s - 1.0);
            let (b, why) = step_bound(&r.id);
            eprintln!(
                "step {}: {} memfit {:.4} s measured {:.4} s ({:+.1} %); optimizer {:.4} s vs {:.4} s ({:+.1} %) {why}",
                r.id,
                r.model,
                r.step_s,
                r.measured_s,
                err * 100.0,
                r.optimizer_s,
                r.measured_opt_s,
                opt_err * 100.0
            );
            assert!(
                err.abs() <= b,
                "{}: step {:+.1} % beyond ±{:.0} % ({why}): {}",
                r.id,
                err * 100.0,
                b * 100.0,
                r.query
            );
            assert!(
                r.eager_costs,
                "{}: Hugging Face eager costs not counted",
                r.id
            );
            if !r.lora && r.measured_opt_s > 5e-3 {
                assert!(
                    opt_err.abs() <= 0.13,
                    "{}: optimizer {:+.1} %: {}",
                    r.id,
                    opt_err * 100.0,
                    r.query
                );
            }
            errs.push(err.abs());
        }
        assert_eq!(errs.len(), n, "{part}");
        let m = median(errs);
        eprintln!("step {part} calibration: median |error| {:.1} %", m * 100.0);
        assert!(m <= 0.06, "{part}: median {:.1} %", m * 100.0);
    }
}

/// Set D's held-out runs (D03, D06, …, D36), compared once after the model changed and
/// reported apart: nothing was tuned on them. Read once (2026-11-27, after the composed
/// kernels, LoRA's GEMMs and Gemma 2's soft-capping): median |error| 6.1 % (6.6 % the
/// upper of the two middle runs, as `median` here takes it), max 12.6 % (D27, OLMoE, SGD). Guarded at issue 36's budget for these steps (median ≤ 10 %,
/// max ≤ 25 %), not at the figures read.
#[test]
fn step_times_on_cuda_held_out() {
    use memfit_evidence::cuda::{step_rows, TRAIN_D};
    let (rows, failed) = step_rows(TRAIN_D);
    assert!(failed.is_empty(), "{failed:?}");
    let held: Vec<_> = rows.iter().filter(|r| r.held_out).collect();
    for r in &held {
        eprintln!(
            "held out {}: {} memfit {:.4} s measured {:.4} s ({:+.1} %)",
            r.id,
            r.model,
            r.step_s,
            r.measured_s,
            r.rel_error() * 100.0
        );
    }
    let errs: Vec<f64> = held.iter().map(|r| r.rel_error().abs()).collect();
    assert_eq!(errs.len(), 12);
    let max = errs.iter().copied().fold(0.0, f64::max);
    let m = median(errs);
    eprintln!(
        "step D held out: median |error| {:.1} %, max {:.1} %",
        m * 100.0,
        max * 100.0
    );
    assert!(m <= 0.10 && max <= 0.25, "median {m}, max {max}");
}
