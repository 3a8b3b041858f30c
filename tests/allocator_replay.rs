//! The caching allocator (`memfit_core::allocator`) replayed on the real allocation streams of
//! measured H200 training runs gives the `max_memory_reserved` and `max_memory_allocated` the
//! runs measured.
//!
//! The streams (`tests/data/cuda_h200/streams/*.json`) were recorded by `tools/trace_alloc.py`:
//! each run's `transformers` model built from its config on the meta device, three iterations
//! of the measured loop, every storage an aten op creates an allocation, every storage that dies
//! a free (CUDA's SDPA backend and autocast reproduced). The measurements are the runs' own
//! (`tests/data/cuda_h200/train.jsonl`, torch 2.11 on an H200), an independent source: the
//! simulator never saw them while it was written from PyTorch's source, and these runs are
//! four of the calibration half (no held-out run is traced).
//!
//! What the replay leaves out — cuBLAS's workspace and a few small buffers CUDA's kernels take
//! and the meta device does not — sits in the tolerance: the traced allocated peak is 0.1–0.7 % (about 64 MiB)
//! under the measured one.

use memfit_core::allocator::{parse_stream, replay, replay_on, CachingAllocator, StreamEvent};
use serde_json::Value;

fn measured(id: &str) -> (u64, u64) {
    let text = std::fs::read_to_string("tests/data/cuda_h200/train.jsonl").unwrap();
    for line in text.lines() {
        let r: Value = serde_json::from_str(line).unwrap();
        if r["id"] == id {
            let peak = r["iters"][1]["peak"].as_u64().unwrap();
            return (peak, r["max_reserved"].as_u64().unwrap());
        }
    }
    panic!("{id} not measured")
}

fn stream(id: &str) -> (Vec<u64>, Vec<StreamEvent>) {
    let path = format!("tests/data/cuda_h200/streams/{id}.json");
    parse_stream(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// (run, what the run is, measured reserved − allocated as a share of allocated)
const RUNS: [(&str, &str); 4] = [
    (
        "C03",
        "GPT-2 medium, bf16 autocast, full checkpointing: reserved 22.4 % over the peak",
    ),
    ("C06", "Llama 3.2 3B, pure bf16, FlashAttention: 8.4 % over"),
    (
        "C19",
        "SmolLM2 1.7B, fp32, memory-efficient SDPA: 0.2 % over",
    ),
    ("C22", "GPT-2 124M, fp32, SGD with momentum: 10.5 % over"),
];

#[test]
fn replayed_streams_reserve_what_the_gpu_reserved() {
    for (id, what) in RUNS {
        let (resident, events) = stream(id);
        let a = replay(&resident, &events);
        let (peak, reserved) = measured(id);
        let err_res = a.max_reserved as f64 / reserved as f64 - 1.0;
        let err_alloc = a.max_allocated as f64 / peak as f64 - 1.0;
        eprintln!(
            "{id} ({what}): reserved {:.3} GiB vs measured {:.3} ({:+.2} %), allocated {:+.2} %",
            a.max_reserved as f64 / (1u64 << 30) as f64,
            reserved as f64 / (1u64 << 30) as f64,
            100.0 * err_res,
            100.0 * err_alloc
        );
        assert!(
            err_res.abs() <= 0.01,
            "{id}: reserved off by {:+.2} %",
            100.0 * err_res
        );
        assert!(
            (-0.01..=0.0).contains(&err_alloc),
            "{id}: allocated off by {:+.2} %",
            100.0 * err_alloc
        );
        // The mechanism, not a constant: the gap above the allocated peak is the run's own
        // (0.2 % to 22 % here), within 1.5 points of the measured gap.
        let gap = a.max_reserved as f64 / a.max_allocated as f64 - 1.0;
        let gap_meas = reserved as f64 / peak as f64 - 1.0;
        assert!(
            (gap - gap_meas).abs() <= 0.015,
            "{id}: gap {gap:.3} vs {gap_meas:.3}"
        );
    }
}

/// `expandable_segments:True` on the same streams (modelled from PyTorch's source; no run was
/// measured with it): never less reserved than the allocated peak, and an allocated peak no
/// higher than the default allocator's (it splits every remainder of 512 B or more, so it
/// hands out no oversize blocks). It is not always below the default allocator's reserve:
/// on C09's stream it maps 4.4 GiB more (freed logits-sized blocks merge into the one
/// segment and are split by smaller tensors, where the default allocator keeps each in a
/// segment of its own size); on these four it is below.
#[test]
fn expandable_segments_reserve_between_the_peak_and_the_default() {
    for (id, _) in RUNS {
        let (resident, events) = stream(id);
        let d = replay(&resident, &events);
        let e = replay_on(CachingAllocator::expandable(), &resident, &events);
        eprintln!(
            "{id}: default {:.3} GiB, expandable {:.3} GiB, allocated {:.3} GiB",
            d.max_reserved as f64 / (1u64 << 30) as f64,
            e.max_reserved as f64 / (1u64 << 30) as f64,
            e.max_allocated as f64 / (1u64 << 30) as f64
        );
        assert!(e.max_reserved <= d.max_reserved, "{id}");
        assert!(e.max_reserved >= e.max_allocated, "{id}");
        assert!(e.max_allocated <= d.max_allocated, "{id}");
    }
}
