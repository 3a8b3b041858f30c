//! One step's memory over time, rank by rank: the step program's events
//! ([`crate::program`]), stage by stage, with the running total after each.
//!
//! The timeline *is* the program the estimate reads: its largest running total is
//! `Estimate::per_gpu_bytes`, and its peak event names the moment the verdict's phase
//! comes from. Stages are listed in full up to 8; a longer pipeline lists the first,
//! the last, the peak's and evenly spaced ones (every stage's high-water mark is kept).
//!
//! # What the program does not resolve
//! Operations inside a layer beyond the standard blocks' backward moments (the unit is
//! a layer); the constant items (CUDA context, NCCL, fragmentation, resident model
//! states) are a baseline allocated at the start. Micro-batches after the schedule's
//! steady state repeat it: the program runs `micro_batches_walked` of them (GPipe: the
//! first and last in full, the middle ones as one event each way).

use super::estimate::{route, stage_count, whole_ledger, Prepared, Route};
use super::ledger::{Item, Ledger, Location, Mech, Phase};
use super::program::walk::{layer_passes, micro_batches_to_walk};
use super::program::{infer, Ev, Peak, Sink, Trace};
use super::scenario::{Layout, Scenario};
use super::train::Stage;
use serde::{Deserialize, Serialize};

pub use super::program::{Event, StepPhase};

/// One stage's high-water mark.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StagePeak {
    /// Stage (0-based).
    pub stage: u32,
    /// The stage's largest `total_bytes`.
    pub peak_bytes: u64,
    /// Whether the stage's events are listed (at most 8 stages are).
    pub listed: bool,
}

/// A step's memory over time.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Timeline {
    /// The largest `total_bytes` over every stage (equals `Estimate::per_gpu_bytes`).
    pub peak_bytes: u64,
    /// Index into `events` of the event that reaches the peak (its first occurrence).
    pub peak_event: usize,
    /// The stage of the peak.
    pub peak_stage: u32,
    /// Every stage's high-water mark.
    pub stages: Vec<StagePeak>,
    /// Micro-batches the program runs per stage (the schedule's steady state repeats after).
    pub micro_batches_walked: u32,
    /// The events, stage by stage, in order.
    pub events: Vec<Event>,
}

/// Stages whose events are listed: every one up to 8, else the first, the last, the
/// peak and evenly spaced ones.
const LISTED_STAGES: u32 = 8;

/// The most layer passes (forward or backward of one layer of one micro-batch, over
/// every stage) a timeline lists; a larger schedule (say 512 stages of 2 virtual
/// chunks) gets no timeline (its estimate still runs, with the program's compressed
/// passes).
pub const MAX_LAYER_PASSES: u64 = 250_000;

/// Runs one step of `s` and lists its events. `None` when some figure is out of range
/// (no timeline is drawn for a scenario whose bytes do not fit in 64 bits) or the
/// schedule is longer than [`MAX_LAYER_PASSES`].
///
/// # Example
/// ```
/// use memfit_core::{estimate::estimate, scenario::{Scenario, Sharding, Zero}, timeline::timeline};
/// let mut s = Scenario::default(); // Llama-2-7B, 1 GPU
/// s.cluster.gpus_per_node = memfit_core::scenario::count(8);
/// s.sharding = Sharding::Zero(Zero::Z3);
/// let t = timeline(&s).unwrap();
/// assert_eq!(t.peak_bytes, estimate(&s).per_gpu_bytes);
/// ```
pub fn timeline(s: &Scenario) -> Option<Timeline> {
    let p = Prepared::of(s);
    let l = s.layout();
    let r = route(s);
    let (traces, peaks, walked) = match r {
        Route::Train => train_traces(s, &p, &l)?,
        Route::Infer => {
            let tr = infer_trace(s, &p, &l);
            let peak = u64::try_from(tr.peak).ok()?;
            (vec![tr], vec![peak], 1)
        }
        Route::Serve => {
            let tr = serve_trace(s, &p, &l);
            let peak = u64::try_from(tr.peak).ok()?;
            (vec![tr], vec![peak], 1)
        }
        Route::DeepSpeed | Route::Megatron => {
            let tr = convention_trace(s, &p, &l, r);
            let peak = u64::try_from(tr.peak).ok()?;
            (vec![tr], vec![peak], 1)
        }
    };
    let stages: Vec<StagePeak> = peaks
        .iter()
        .enumerate()
        .map(|(i, &peak_bytes)| StagePeak {
            stage: i as u32,
            peak_bytes,
            listed: traces.iter().any(|t| t.stage() == i as u32),
        })
        .collect();
    let peak_stage = argmax(&peaks);
    let mut events = Vec::new();
    let mut peak_event = 0;
    for t in traces {
        if t.stage() == peak_stage {
            peak_event = events.len() + t.peak_event;
        }
        events.extend(t.events?);
    }
    Some(Timeline {
        peak_bytes: peaks.iter().copied().max().unwrap_or(0),
        peak_event,
        peak_stage,
        stages,
        micro_batches_walked: walked,
        events,
    })
}

/// Training: every stage's program run for its peak, then the listed stages (the first,
/// the peak one, the last) traced; `None` past [`MAX_LAYER_PASSES`]. Returns the traces,
/// every stage's peak and the most micro-batches walked.
fn train_traces(s: &Scenario, p: &Prepared, l: &Layout) -> Option<(Vec<Trace>, Vec<u64>, u32)> {
    let n = stage_count(&p.arch, l);
    let stages: Vec<Stage> = (0..n.get()).map(|i| Stage::of(&p.arch, n, i)).collect();
    let cost = stages
        .iter()
        .map(|st| layer_passes(s, st))
        .fold(0u64, u64::saturating_add);
    if cost > MAX_LAYER_PASSES {
        return None;
    }
    let (mut peaks, mut walked) = (Vec::new(), 1);
    for st in &stages {
        let prog = crate::stage::stage_program(s, p, l, st);
        let mut pk = Peak::default();
        prog.run(s, &mut pk);
        peaks.push(u64::try_from(pk.peak).ok()?);
        walked = walked.max(micro_batches_to_walk(s, st.p.get(), st.i));
    }
    let peak_stage = argmax(&peaks);
    let traces = listed(n.get(), peak_stage)
        .into_iter()
        .map(|i| {
            let prog = crate::stage::stage_program(s, p, l, &stages[i as usize]);
            let mut tr = Trace::new(i);
            prog.run(s, &mut tr);
            tr
        })
        .collect();
    Some((traces, peaks, walked))
}

/// Inference: the prefill and the decode of the GPU items (`infer::run`).
fn infer_trace(s: &Scenario, p: &Prepared, l: &Layout) -> Trace {
    let mut lg = Ledger::bare();
    whole_ledger(s, p, l, Route::Infer, &mut lg);
    let items: Vec<Item> = lg
        .into_items()
        .into_iter()
        .filter(|i| i.location == Location::Gpu)
        .collect();
    let layers = crate::scenario::ceil_div(p.arch.layers, l.pp);
    let mut tr = Trace::new(0);
    infer::run(&items, layers, s.workload.gen, &mut tr);
    tr
}

/// DeepSpeed's and Megatron's formulas: every GPU item resident for the whole step.
fn convention_trace(s: &Scenario, p: &Prepared, l: &Layout, r: Route) -> Trace {
    let mut lg = Ledger::bare();
    let _ = whole_ledger(s, p, l, r, &mut lg);
    let ph = if r == Route::DeepSpeed {
        Phase::OptimizerStep
    } else {
        Phase::Backward
    };
    let mut tr = Trace::new(0);
    for it in lg
        .into_items()
        .iter()
        .filter(|i| i.location == Location::Gpu && i.alive_in(ph))
    {
        tr.event(resident(
            it,
            "resident (the convention counts it for the whole step)",
        ));
    }
    tr
}

/// A ledger item as one baseline allocation event.
fn resident(it: &Item, what: &'static str) -> Ev {
    Ev {
        phase: StepPhase::Baseline,
        layer: None,
        micro_batch: None,
        component: it.component,
        mech: it.mech,
        slot: u16::MAX,
        delta: it.bytes as i128,
        what,
    }
}

/// A serving engine's start-up as events, in the order the engine runs it: the
/// CUDA context, the weights load, the profiling forward (its peak stays reserved),
/// non-torch memory, CUDA graphs, then the KV pool takes the rest.
fn serve_trace(s: &Scenario, p: &Prepared, l: &Layout) -> Trace {
    let mut lg = Ledger::bare();
    crate::serve::Plan::of(s, p, l).items(&mut lg);
    // The device's allocations (llama.cpp's host memory is not on it).
    let mut items: Vec<_> = lg
        .into_items()
        .into_iter()
        .filter(|i| i.location == crate::ledger::Location::Gpu)
        .collect();
    // The context exists before anything the engine allocates.
    items.rotate_right(1);
    let mut tr = Trace::new(0);
    for it in items.iter().filter(|i| i.bytes > 0) {
        let what = match it.mech {
            Mech::ServeOutside => "CUDA context (outside the engine's budget)",
            Mech::ServeWeights => "weights loaded",
            Mech::ServeActivation => "profiling forward's peak, kept free for serving",
            Mech::ServeNonTorch => "non-torch memory after profiling (NCCL, cuBLAS)",
            Mech::ServeGraphs => "CUDA graphs captured",
            _ => "KV-cache pool allocated",
        };
        tr.event(resident(it, what));
    }
    tr
}

fn argmax(v: &[u64]) -> u32 {
    let mut best = 0;
    for (i, x) in v.iter().enumerate() {
        if *x > v[best] {
            best = i;
        }
    }
    best as u32
}

/// The stages whose events are listed.
fn listed(n: u32, peak: u32) -> Vec<u32> {
    if n <= LISTED_STAGES {
        return (0..n).collect();
    }
    let mut v: Vec<u32> = (0..LISTED_STAGES - 1)
        .map(|k| (k as u64 * (n - 1) as u64 / (LISTED_STAGES - 2) as u64) as u32)
        .collect();
    v.push(peak);
    v.sort_unstable();
    v.dedup();
    v
}
