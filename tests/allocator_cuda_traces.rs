//! The caching allocator (`memfit_core::allocator`) replayed on **real CUDA allocator traces**:
//! every allocation and free that `torch.cuda.memory._record_memory_history` recorded on an H200
//! (torch 2.11.0+cu130) for 48 runs of set D (`tests/data/cuda_h200_d/streams.txt.gz`) and 32
//! calibration runs measured again (`tests/data/cuda_h200/rerun/streams.txt.gz`), from the
//! model's build to the run's end.
//!
//! Two checks per run, both against numbers the real allocator produced:
//! - the mechanism: the replay's `max_reserved` against the high-water mark of the segments the
//!   real allocator opened during the trace (its `S`/`s` lines);
//! - the figure a user meets: the replay against the run's measured `max_memory_reserved`
//!   (which also holds the ~35–100 MiB cached before recording began: cuBLAS's workspace),
//!   and, under `expandable_segments:True`, the same streams replayed on
//!   [`CachingAllocator::expandable`] against the runs measured again under that setting
//!   (`tests/data/cuda_h200_d/expandable/train.jsonl`).
//!
//! The allocator was written from PyTorch's source and checked on four meta-device traces
//! before any of these traces existed: none of them was used to write it. Set D's held-out
//! runs (numbers divisible by 3) are reported apart all the same.

use memfit_core::allocator::{replay, replay_on, CachingAllocator};
use memfit_core::cuda_trace::{parse_cuda_traces, CudaTrace};
use serde_json::Value;
use std::collections::HashMap;
use std::io::Read;

fn traces(path: &str) -> Vec<CudaTrace> {
    let f = std::fs::File::open(path).unwrap();
    let mut text = String::new();
    flate2::read::MultiGzDecoder::new(f)
        .read_to_string(&mut text)
        .unwrap();
    parse_cuda_traces(&text).unwrap()
}

/// id → measured `max_reserved` of the runs in `paths` (JSON lines; runs with errors skipped).
fn reserved(paths: &[&str]) -> HashMap<String, u64> {
    let mut m = HashMap::new();
    for p in paths {
        for line in std::fs::read_to_string(p).unwrap().lines() {
            let r: Value = serde_json::from_str(line).unwrap();
            if let (Some(id), Some(res)) = (r["id"].as_str(), r["max_reserved"].as_u64()) {
                m.insert(id.to_string(), res);
            }
        }
    }
    m
}

fn held_out(id: &str) -> bool {
    id.starts_with('D')
        && id
            .trim_start_matches(|c: char| c.is_ascii_alphabetic())
            .parse::<u32>()
            .is_ok_and(|n| n % 3 == 0)
}

struct Row {
    id: String,
    mech: f64,
    meas: f64,
    exp: Option<f64>,
}

fn rows() -> Vec<Row> {
    let d = "tests/data/cuda_h200_d";
    let r = "tests/data/cuda_h200/rerun";
    let meas = reserved(&[
        &format!("{d}/train.jsonl"),
        &format!("{d}/infer.jsonl"),
        &format!("{r}/train.jsonl"),
        &format!("{r}/infer.jsonl"),
    ]);
    let exp = reserved(&[&format!("{d}/expandable/train.jsonl")]);
    let mut out = Vec::new();
    for t in traces(&format!("{d}/streams.txt.gz"))
        .into_iter()
        .chain(traces(&format!("{r}/streams.txt.gz")))
    {
        let sim = replay(&[], &t.events).max_reserved as f64;
        let m = meas[&t.id] as f64;
        let e = exp.get(&t.id).map(|&x| {
            let s = replay_on(CachingAllocator::expandable(), &[], &t.events).max_reserved;
            s as f64 / x as f64 - 1.0
        });
        out.push(Row {
            mech: sim / t.traced_max_reserved as f64 - 1.0,
            meas: sim / m - 1.0,
            exp: e,
            id: t.id,
        });
    }
    out
}

fn median_max(v: &mut [f64]) -> (f64, f64) {
    v.iter_mut().for_each(|x| *x = x.abs());
    v.sort_by(|a, b| a.total_cmp(b));
    (v[v.len() / 2], v[v.len() - 1])
}

#[test]
fn replayed_real_traces_reserve_what_the_gpu_reserved() {
    let rows = rows();
    assert_eq!(rows.len(), 48 + 32, "traced runs");
    for r in &rows {
        println!(
            "{:5} mechanism {:+6.2}%  measured {:+6.2}%  expandable {}{}",
            r.id,
            100.0 * r.mech,
            100.0 * r.meas,
            r.exp
                .map_or("   -   ".into(), |e| format!("{:+6.2}%", 100.0 * e)),
            if held_out(&r.id) { "  (held out)" } else { "" }
        );
    }
    for (name, pick) in [("calibration", false), ("set D held out", true)] {
        let sel: Vec<&Row> = rows.iter().filter(|r| held_out(&r.id) == pick).collect();
        let (m1, x1) = median_max(&mut sel.iter().map(|r| r.mech).collect::<Vec<_>>());
        let (m2, x2) = median_max(&mut sel.iter().map(|r| r.meas).collect::<Vec<_>>());
        let (m3, x3) = median_max(&mut sel.iter().filter_map(|r| r.exp).collect::<Vec<_>>());
        // Bounds (every run, not tuned to these traces): the replay within 6 % of the real
        // segments and of the measured reserved, 10 % under expandable segments; medians
        // within 0.5 %.
        assert!(
            m1 < 0.005 && m2 < 0.005 && m3 < 0.005,
            "{name}: medians {m1} {m2} {m3}"
        );
        assert!(
            x1 < 0.06 && x2 < 0.06 && x3 < 0.10,
            "{name}: maxima {x1} {x2} {x3}"
        );
        println!(
            "{name} (n = {}): mechanism median {:.2} % max {:.2} %; measured reserved median {:.2} % max {:.2} %; expandable median {:.2} % max {:.2} %",
            sel.len(), 100.0 * m1, 100.0 * x1, 100.0 * m2, 100.0 * x2, 100.0 * m3, 100.0 * x3
        );
    }
}
