//! `per_gpu_bytes` against what runs out on the GPU: the run's `max_memory_reserved` plus the
//! CUDA context (718,077,952 B on this stack, `env.jsonl`), for the real CUDA training runs on
//! one H200 (torch 2.11.0+cu130, transformers 5.17.0). **Calibration runs only**: the shared
//! set (`tests/data/cuda_h200`, all calibration) and set D's runs whose number is not a
//! multiple of 3; set D's held-out runs are never read here.
//!
//! A run the op-level templates hold (`memfit_core::opstream::run_of`) gets the replayed
//! allocator gap; the others the flat `frag` share (none of these runs since the
//! mixture-of-experts templates). The two groups are reported apart.

use memfit_core::contract::report::estimate_with;
use memfit_core::opstream::{replayed, run_of};
use memfit_evidence::cuda::{held_out, runs, settings, train_keys, TRAIN, TRAIN_D};

use memfit_evidence::cuda::CONTEXT_BYTES as CTX;
use memfit_evidence::stats::median_max;

struct Row {
    id: String,
    err: f64,
    op: bool,
}

fn rows() -> Vec<Row> {
    let mut out = vec![];
    for text in [TRAIN, TRAIN_D] {
        for r in runs(text).iter().filter(|r| r.get("error").is_none()) {
            let id = r["id"].as_str().unwrap().to_string();
            if held_out(&id) {
                continue;
            }
            let q = train_keys(r);
            let s = settings(r, &q).unwrap_or_else(|w| panic!("{id}: {w}"));
            let e = estimate_with(&s.scenario, &[]);
            let meas = r["max_reserved"].as_u64().unwrap() + CTX;
            let err = (e.per_gpu_bytes as f64 - meas as f64) / meas as f64;
            let op = run_of(&s.scenario).and_then(|r| replayed(&r)).is_some();
            eprintln!(
                "{id} {:>18} {} per_gpu {:.2} GiB vs reserved+ctx {:.2} GiB: {:+.2} %",
                r["model"].as_str().unwrap(),
                if op { "op-level" } else { "flat    " },
                e.per_gpu_bytes as f64 / (1u64 << 30) as f64,
                meas as f64 / (1u64 << 30) as f64,
                100.0 * err
            );
            out.push(Row { id, err, op });
        }
    }
    out
}

/// The calibration bound of a run the templates hold, and why it is wider than 2 %.
fn bound(id: &str) -> (f64, &'static str) {
    match id {
        "C05" | "C12" | "C23" => (
            0.05,
            "the replay of the run's own meta-device stream misses by as much (docs/allocator.md: \
             C05 +2.5 %, C12 +4.3 %, C23 +3.1 %): what the meta device does not show",
        ),
        "D29" => (
            0.05,
            "Phi-4-mini fp32: the replay of its real CUDA trace is +3.1 % already \
             (docs/allocator.md); the template's stream, with SDPA's math path as CUDA runs it \
             (tools/trace_alloc.py `_math_cuda`, seventh session), +3.5 % (was −4.7 %)",
        ),
        "C04" => (
            0.045,
            "fp32 with math SDPA: −4.0 % with the math path as CUDA runs it (was −2.2 %); its \
             real trace holds 2L + 1 blocks of 48 MiB an iteration that no template has, not \
             identified (docs/cuda.md)",
        ),
        "C25" => (
            0.035,
            "OLMoE: the template routes every expert an even share of the tokens (T·top_k/E), as \
             the meta-device tracer does, whose replay of this run is −3.0 % as well \
             (docs/allocator.md); real routing is by value",
        ),
        "D05" => (
            0.04,
            "Gemma 2, eager, autocast: the replay of its real CUDA trace is −2.0 % \
             (docs/allocator.md), the template's stream's own reserved peak +3.7 % \
             (+3.2 % before the measured 685 MiB context replaced 600); cause not found",
        ),
        _ => (0.02, ""),
    }
}

#[test]
fn reserved_on_calibration_runs() {
    let rows = rows();
    let op: Vec<&Row> = rows.iter().filter(|r| r.op).collect();
    let mut beyond = vec![];
    for r in &op {
        let (b, why) = bound(&r.id);
        if r.err.abs() > b {
            beyond.push(format!(
                "{}: {:+.2} % beyond ±{:.1} % ({why})",
                r.id,
                100.0 * r.err,
                100.0 * b
            ));
        }
    }
    for group in [true, false]
        .into_iter()
        .filter(|g| rows.iter().any(|r| r.op == *g))
    {
        let e: Vec<f64> = rows
            .iter()
            .filter(|r| r.op == group)
            .map(|r| r.err.abs())
            .collect();
        let (m, x) = median_max(e.clone());
        eprintln!(
            "{}: {} runs, median {:.2} %, max {:.2} %",
            if group {
                "op-level replay"
            } else {
                "flat frag share"
            },
            e.len(),
            100.0 * m,
            100.0 * x
        );
    }
    assert!(beyond.is_empty(), "{beyond:#?}");
    let (m, _) = median_max(op.iter().map(|r| r.err.abs()).collect());
    assert!(m <= 0.01, "median {:.2} %", 100.0 * m);
    // Every calibration run is one a template holds (since the mixture-of-experts templates).
    let flat: Vec<&str> = rows
        .iter()
        .filter(|r| !r.op)
        .map(|r| r.id.as_str())
        .collect();
    assert!(flat.is_empty(), "runs left to the flat share: {flat:?}");
    assert!(!rows.iter().any(|r| held_out(&r.id)));
}

/// The two calibration runs that ran out of memory on the 139.80 GiB device (C10: Qwen3
/// 0.6B, eager, pure bf16, 16 × 2,048; C13: Gemma 2 2B, eager, pure bf16, 2 × 4,096) are
/// predicted not to fit. Their rows carry no config (the run never built a report), so the
/// model's config comes from another run of the same model.
#[test]
fn the_runs_that_ran_out_of_memory_do_not_fit() {
    let all: Vec<serde_json::Value> = [TRAIN, TRAIN_D].iter().flat_map(|t| runs(t)).collect();
    let mut seen = vec![];
    for r in all.iter().filter(|r| r["oom"] == true) {
        let id = r["id"].as_str().unwrap();
        let donor = all
            .iter()
            .find(|d| d["model"] == r["model"] && d.get("hf_config").is_some())
            .unwrap_or_else(|| panic!("{id}: no config of {}", r["model"]));
        let mut r = r.clone();
        r["hf_config"] = donor["hf_config"].clone();
        let q = train_keys(&r);
        let s = settings(&r, &q).unwrap_or_else(|w| panic!("{id}: {w}"));
        let e = estimate_with(&s.scenario, &[]);
        assert!(
            !e.fits,
            "{id} ran out of memory, memfit says {} B fits",
            e.per_gpu_bytes
        );
        seen.push(id.to_string());
    }
    assert_eq!(seen, ["C10", "C13"]);
}
