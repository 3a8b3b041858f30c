//! The pipeline schedule of one stage: which micro-batch's forward or backward runs
//! when (GPipe, 1F1B, interleaved with `vpp` chunks), and how much of it must be walked.

use super::*;

/// One scheduled pass of a micro-batch's model chunk on a stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Op {
    pub(crate) forward: bool,
    pub(crate) mb: u32,
    pub(crate) chunk: u32,
    /// Micro-batches the pass stands for: 1, or GPipe's middle micro-batches walked
    /// as one event each way.
    pub(crate) run: u32,
}

/// The order of a stage's forward and backward passes, for `m` micro-batches.
///
/// GPipe: every forward, then every backward. 1F1B (and no pipeline, `p = 1`):
/// `p − i − 1` warm-up forwards, then forward/backward pairs, then the cool-down
/// backwards. Interleaved (Megatron-LM `forward_backward_pipelining_with_interleaving`):
/// `m·v` chunk passes each way; warm-up `min(2·(p − i − 1) + (v − 1)·p, m·v)`; the
/// k-th forward runs chunk `(k mod p·v)/p` of micro-batch `⌊k/(p·v)⌋·p + k mod p`, the
/// k-th backward the chunks in reverse.
pub(crate) fn schedule(s: &Scenario, p: u32, i: u32, m: u32) -> Vec<Op> {
    let v = s.virtual_stages().get();
    let mut ops = Vec::new();
    if s.parallel.schedule == Schedule::Gpipe {
        // The first and last micro-batch layer by layer, the middle ones as one pass.
        for forward in [true, false] {
            let op = |mb, run| Op {
                forward,
                mb,
                chunk: 0,
                run,
            };
            ops.push(op(0, 1));
            if m > 2 {
                ops.push(op(1, m - 2));
            }
            if m > 1 {
                ops.push(op(m - 1, 1));
            }
        }
        return ops;
    }
    // Megatron's order: micro-batches in groups of p, each group through chunk 0, 1, …
    // (forward) or v − 1, …, 0 (backward); the last group may be smaller.
    let order = |forward: bool| {
        let mut out = Vec::with_capacity((m as usize) * (v as usize));
        let mut g = 0;
        while g < m {
            let end = (g + p).min(m);
            for c in 0..v {
                let chunk = if forward { c } else { v - 1 - c };
                out.extend((g..end).map(|mb| Op {
                    forward,
                    mb,
                    chunk,
                    run: 1,
                }));
            }
            g = end;
        }
        out
    };
    let (f, b) = (order(true), order(false));
    let total = f.len();
    let warm = if v == 1 {
        (p - i - 1) as usize
    } else {
        2 * (p - i - 1) as usize + ((v - 1) * p) as usize
    }
    .min(total);
    ops.extend_from_slice(&f[..warm]);
    for k in 0..total - warm {
        ops.push(f[warm + k]);
        ops.push(b[k]);
    }
    ops.extend_from_slice(&b[total - warm..]);
    ops
}

/// Micro-batches the program needs on stage `i` to reach every state the step reaches:
/// GPipe all; otherwise up to the first forward after the first backward with the
/// most chunks in flight (the steady state repeats from there).
pub(crate) fn micro_batches_to_walk(s: &Scenario, p: u32, i: u32) -> u32 {
    let m = s.workload.microbatches.get();
    let v = s.virtual_stages().get() as u64;
    if s.parallel.schedule == Schedule::Gpipe {
        return m;
    }
    let warm = if v == 1 {
        (p - i - 1) as u64
    } else {
        2 * (p - i - 1) as u64 + (v - 1) * p as u64
    };
    // chunks needed: warm-up + 1 (peak) + 1 (a forward after the first backward)
    let need = (warm + 2).div_ceil(v);
    let need = if v > 1 {
        need.div_ceil(p as u64) * p as u64
    } else {
        need
    };
    need.min(m as u64) as u32
}

/// Layer passes (forward or backward of one layer of one micro-batch) the detailed
/// program of stage `st` runs.
pub(crate) fn layer_passes(s: &Scenario, st: &Stage) -> u64 {
    let v = s.virtual_stages().get() as u64;
    let (lc, _) = activations::chunk_layers(s, st.layers);
    let m = micro_batches_to_walk(s, st.p.get(), st.i) as u64;
    // GPipe walks its middle micro-batches as one event each way.
    let m = if s.parallel.schedule == Schedule::Gpipe {
        m.min(2) + 1
    } else {
        m
    };
    2 * m * v * lc.get() as u64
}
