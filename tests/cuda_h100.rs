//! Set H (`tests/data/cuda_h100`): the H200 sets' training runs measured again on one H100
//! 80GB HBM3 (torch 2.11.0+cu130), where 14 of 62 ran out of memory. Two questions:
//! - the caching allocator's out-of-memory retry (`CachingAllocator::capped`): the real CUDA
//!   allocator traces recorded on the H200 (`tests/data/cuda_h200_d/streams.txt.gz`,
//!   `tests/data/cuda_h200/rerun/streams.txt.gz`), replayed under the H100's bound, must say
//!   which runs ran there — an outcome measured on another GPU, not used to write the mechanism;
//! - memfit's verdict on `gpu=h100-80` for every run, and its step time there.
//!
//! The held-out split (run numbers that are multiples of 3) was fixed before measuring.

use memfit_core::allocator::{replay_on, CachingAllocator};
use memfit_core::cuda_trace::parse_cuda_traces;
use memfit_evidence::cuda::runs;
use memfit_evidence::cuda::StepRow;
use memfit_evidence::cuda_h100::{fit_rows, step_rows_h, TRAIN_H};
use std::collections::HashMap;
use std::io::Read;

const GIB: f64 = (1u64 << 30) as f64;

/// id → whether it ran on the H100, and its `max_memory_reserved` there.
fn outcomes() -> HashMap<String, (bool, Option<u64>)> {
    runs(TRAIN_H)
        .iter()
        .map(|r| {
            let id = r["id"].as_str().unwrap().to_string();
            (id, (r.get("error").is_none(), r["max_reserved"].as_u64()))
        })
        .collect()
}

#[test]
fn real_traces_replayed_under_the_h100_bound_say_which_runs_ran() {
    // The bound, by hand from the H100's own figures (env.jsonl): CUDA's total 85,017,493,504 B
    // less the context 718,077,952 B and two 32 MiB cuBLAS workspaces: 84,232,306,688 B.
    let cap = 85_017_493_504u64 - 718_077_952 - 2 * (32 << 20);
    assert_eq!(cap, 84_232_306_688);
    let out = outcomes();
    let (mut n, mut retried) = (0, Vec::new());
    for p in [
        "tests/data/cuda_h200_d/streams.txt.gz",
        "tests/data/cuda_h200/rerun/streams.txt.gz",
    ] {
        let mut text = String::new();
        flate2::read::MultiGzDecoder::new(std::fs::File::open(p).unwrap())
            .read_to_string(&mut text)
            .unwrap();
        for t in parse_cuda_traces(&text).unwrap() {
            let Some(&(ran, reserved)) = out.get(&t.id) else {
                continue;
            };
            n += 1;
            let a = replay_on(CachingAllocator::capped(cap), &[], &t.events);
            let free = replay_on(CachingAllocator::new(), &[], &t.events);
            println!(
                "{:4} ran {:5} replay: oom {:5} retries {:2} reserved {:6.2} GiB (unbounded {:6.2}; H100 measured {})",
                t.id,
                ran,
                a.oom,
                a.retries,
                a.max_reserved as f64 / GIB,
                free.max_reserved as f64 / GIB,
                reserved.map_or("-".into(), |r| format!("{:.2}", r as f64 / GIB)),
            );
            assert_eq!(a.oom, !ran, "{}: the replay under the H100's bound", t.id);
            if ran && a.retries > 0 {
                retried.push(t.id.clone());
            }
            // A run that ran without a retry reserved what the unbounded replay does.
            if ran && a.retries == 0 {
                assert_eq!(a.max_reserved, free.max_reserved, "{}", t.id);
            }
        }
    }
    // 24 calibration runs with traces (C10, C13 ran out of memory on the H200 too) and 36 of set D:
    // 48 that ran on the H100, 12 that did not.
    assert_eq!(n, 60);
    // Phi-4 mini C12 reserved 79.01 GiB on the H200, more than the H100 leaves it: it ran there
    // by releasing the cached segments once (measured reserved 72.53 GiB).
    assert_eq!(retried, ["C12"]);
}

#[test]
fn memfit_says_which_runs_fit_the_h100() {
    let (rows, failed) = fit_rows();
    assert!(failed.is_empty(), "{failed:?}");
    assert_eq!(rows.len(), 62);
    assert_eq!(rows.iter().filter(|r| !r.ran).count(), 14);
    let wrong: Vec<&str> = rows
        .iter()
        .filter(|r| r.ran != r.fits)
        .map(|r| r.id.as_str())
        .collect();
    for r in &rows {
        println!(
            "{:4} {:18} ran {:5} fits {:5} per GPU {:6.2} GiB (measured reserved + context {}){}",
            r.id,
            r.model,
            r.ran,
            r.fits,
            r.per_gpu as f64 / GIB,
            r.reserved
                .map_or("-".into(), |x| format!("{:.2}", x as f64 / GIB)),
            if r.held_out { "  held out" } else { "" }
        );
    }
    // D29 (Phi-4 mini, fp32, SDPA's math path, calibration) ran out of memory at a 75.09 GiB
    // allocated peak. Its template, traced with the math path as CUDA runs it (the softmax
    // backward's temporary, a score-sized bool, the mask added in place: tools/trace_alloc.py
    // `_math_cuda`), runs out under the bound as the real trace does; traced with torch 2.15's
    // math op it fitted with 4 retries.
    assert!(wrong.is_empty(), "{wrong:?}");
    // Every held-out run's verdict is right.
    assert!(rows.iter().filter(|r| r.held_out).all(|r| r.ran == r.fits));
    // C12 fits by the retry: 83.14 GiB per GPU without the bound, over the H100's 79.65.
    let c12 = rows.iter().find(|r| r.id == "C12").unwrap();
    assert!(c12.fits && (c12.per_gpu as f64) < 79.65 * GIB);
}

#[test]
fn step_times_on_the_h100() {
    let (rows, failed) = step_rows_h(TRAIN_H);
    assert!(failed.is_empty(), "{failed:?}");
    assert_eq!(rows.len(), 48);
    let split = |held: bool| {
        let e: Vec<f64> = rows
            .iter()
            .filter(|r| r.held_out == held)
            .map(|r| r.rel_error().abs())
            .collect();
        memfit_evidence::stats::median_max(e)
    };
    print_steps(&rows);
    let (cal, held) = (split(false), split(true));
    println!(
        "calibration median {:.1} % max {:.1} %",
        100.0 * cal.0,
        100.0 * cal.1
    );
    println!(
        "held out    median {:.1} % max {:.1} %",
        100.0 * held.0,
        100.0 * held.1
    );
    // Issue 36's single-GPU budget (median ≤ 10 %, max ≤ 25 %), on the held-out third.
    assert!(held.0 <= 0.10 && held.1 <= 0.25, "{held:?}");
    assert!(cal.0 <= 0.10 && cal.1 <= 0.25, "{cal:?}");
}

#[test]
fn fp32_steps_with_tf32_on() {
    use memfit_evidence::cuda_h100::step_rows_h_tf32;
    let (rows, failed) = step_rows_h_tf32();
    assert!(failed.is_empty(), "{failed:?}");
    assert_eq!(rows.len(), 11);
    print_steps(&rows);
    let e: Vec<f64> = rows.iter().map(|r| r.rel_error().abs()).collect();
    let (median, max) = memfit_evidence::stats::median_max(e);
    println!(
        "tf32=on: median {:.1} % max {:.1} %",
        100.0 * median,
        100.0 * max
    );
    // The multi-head (no GQA) models' fp32 SDPA runs the memory-efficient kernel on the CUDA
    // cores, TF32 or not (`FP32_SDPA_SHARE`): C19 −33.8 → −0.7 %. Beyond 15 %: D36 (held out,
    // Phi-3 mini, head size 96), −20.6 % (was −30.1).
    let far: Vec<&str> = rows
        .iter()
        .filter(|r| r.rel_error().abs() > 0.15)
        .map(|r| r.id.as_str())
        .collect();
    assert_eq!(far, ["D36"]);
    assert!(median <= 0.06 && max <= 0.21, "{median} {max}");
}

fn print_steps(rows: &[StepRow]) {
    for r in rows {
        println!(
            "{:4} {:18} measured {:.3} s memfit {:.3} s {:+6.1} %{}",
            r.id,
            r.model,
            r.measured_s,
            r.step_s,
            100.0 * r.rel_error(),
            if r.held_out { "  held out" } else { "" }
        );
    }
}

/// The GEMM memory floor (`Hw::gemm_floor_s`) against the expert GEMMs measured at small M
/// (`set: moe`): for the wide experts (Mixtral 8×7B, DeepSeek-V3: K·N ≥ 14.7 M) at 16 and 64
/// tokens an expert, memfit's rate is within 1.25 times `torch._grouped_mm`'s over 32 experts
/// (the size curve alone gave up to 8.3 times: 325 TFLOP/s where 39 ran).
#[test]
fn wide_expert_gemms_at_small_m_meet_their_memory_floor() {
    use memfit_core::steptime::hardware::Hw;
    let s = memfit_core::contract::query::decode("framework=megatron&gpu=h100-80")
        .0
        .scenario;
    let hw = Hw::of(&s);
    let text = std::fs::read_to_string("tests/data/cuda_h100/gemm.jsonl").unwrap();
    let mut n = 0;
    for r in text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
    {
        let f = |k: &str| r[k].as_f64().unwrap_or(0.0);
        let (m, k, nn) = (f("M"), f("K"), f("N"));
        if r["set"].as_str() != Some("moe") || m > 64.0 || k * nn < 14.0e6 {
            continue;
        }
        n += 1;
        let memfit = 2.0 * m * k * nn / hw.gemm_mkn_s(m, k, nn, 1.0) / 1e12;
        let grouped = f("grouped_fwd_tflops");
        let ratio = memfit / grouped;
        println!(
            "{}: memfit {memfit:.0} TFLOP/s, grouped {grouped:.0}, ×{ratio:.2}",
            r["label"]
        );
        assert!((0.8..=1.25).contains(&ratio), "{}: ×{ratio:.2}", r["label"]);
    }
    assert_eq!(n, 8);
}

/// The allocated peaks on the H100 against memfit's on `h100-80`: the same bytes as on the H200
/// (the held-out third read once, after the seventh session's changes).
#[test]
fn allocated_peaks_on_the_h100() {
    use memfit_evidence::cuda::CudaRow;
    use memfit_evidence::cuda_h100::rows_h;
    let (rows, failed) = rows_h();
    assert!(failed.is_empty(), "{failed:?}");
    let part = |kind: &str, held: bool| {
        let r: Vec<&CudaRow> = rows
            .iter()
            .filter(|r| r.kind == kind && held_out(&r.id) == held)
            .collect();
        let e: Vec<f64> = r.iter().map(|r| r.rel_error().abs()).collect();
        let (median, max) = memfit_evidence::stats::median_max(e);
        (r.len(), median, max)
    };
    for (kind, held) in [
        ("train", false),
        ("train", true),
        ("generate", false),
        ("generate", true),
    ] {
        let (n, median, max) = part(kind, held);
        println!(
            "{kind} {}: {n} runs, median {:.2} %, max {:.2} %",
            if held { "held out" } else { "calibration" },
            100.0 * median,
            100.0 * max
        );
    }
    let (n, median, max) = part("train", true);
    assert_eq!(n, 15);
    assert!(median <= 0.01 && max <= 0.04, "{median} {max}");
    let (n, median, max) = part("generate", true);
    assert_eq!(n, 6);
    assert!(median <= 0.01 && max <= 0.03, "{median} {max}");
}

fn held_out(id: &str) -> bool {
    memfit_evidence::cuda_h100::held_out_h(id)
}

/// What runs out on the H100: memfit's per-GPU figure against `max_memory_reserved` + the
/// context, calibration and held out apart (the held-out third read once).
#[test]
fn reserved_on_the_h100() {
    use memfit_evidence::cuda::reserved_stats;
    use memfit_evidence::cuda_h100::rows_h;
    let (rows, _) = rows_h();
    let cal = reserved_stats(&rows, |r| r.kind == "train" && !held_out(&r.id));
    let held = reserved_stats(&rows, |r| r.kind == "train" && held_out(&r.id));
    for r in rows.iter().filter(|r| r.kind == "train") {
        println!(
            "{:4} {:18} per GPU {:+6.2} % of reserved + context{}",
            r.id,
            r.model,
            100.0 * r.reserved_error().unwrap_or(f64::NAN),
            if held_out(&r.id) { "  held out" } else { "" }
        );
    }
    println!("calibration {cal:?}\nheld out {held:?}");
    assert_eq!((cal.0, held.0), (33, 15));
    assert!(cal.1 <= 0.005 && cal.2 <= 0.041, "{cal:?}");
    // Held out: median 0.5 %; the largest, D18 (SmolLM2, eager, checkpointed), −11.0 %, is the
    // allocator's own spread: the same run measured again in the same session (`repeat/`)
    // reserved 63.76 GiB, not 71.76, as on the H200 (63.76), where memfit is −0.1 %.
    assert!(held.1 <= 0.01 && held.2 <= 0.111, "{held:?}");
    let far: Vec<&str> = rows
        .iter()
        .filter(|r| r.kind == "train" && r.reserved_error().is_some_and(|e| e.abs() > 0.06))
        .map(|r| r.id.as_str())
        .collect();
    assert_eq!(far, ["D18"]);
}
