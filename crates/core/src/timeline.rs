//! One step's memory over time, rank by rank: a simulation that walks a training
//! step (or an inference request) in order and records every allocation and free.
//!
//! The walk takes its sizes from the same mechanisms as the estimator (the stage's
//! ledger items, `ActPlan` for the activations) and its *timing* from the schedule:
//! forward layer by layer (saved activations, ZeRO-3/FSDP's gathered parameters
//! gathered before a layer and released after it, a checkpointed layer's working
//! set), backward in reverse (recomputation, PyTorch's gradients written layer by
//! layer, saved activations freed, the per-backward reduce buckets), the optimizer
//! step (its temporaries and all-gather bucket), micro-batches in the order of the
//! pipeline schedule (GPipe; 1F1B's warm-up, steady state and cool-down; Megatron's
//! interleaved order with `vpp` chunks). Inference: prefill layer by layer into the
//! KV cache, then decode with the cache growing.
//!
//! The closed form (`estimate`) takes the largest phase sum; the walk's high-water
//! mark must be the same number for every stage (`tests/timeline.rs` checks it on
//! random scenarios). The walk found two errors in the closed form, both fixed there:
//! the interleaved schedule's later stages hold more chunks than Korthikanti's
//! first-stage factor (`activations::in_flight`), and PyTorch under gradient
//! accumulation keeps the gradients through the forward (`train::accumulates`).
//!
//! # What the walk does not resolve
//! Operations inside a layer (the walk's unit is a layer); the constant items (CUDA
//! context, NCCL, fragmentation, resident model states) are a baseline allocated at the
//! start. Micro-batches after the schedule's steady state repeat it: the walk runs
//! `micro_batches_walked` of them (GPipe: the first and last in full, the middle ones
//! as one event each way).

use super::estimate::{route, stage_count, train_stage, Prepared, Route};
use super::ledger::{Component, Item, Ledger, Location, Phase};
use super::scenario::{Scenario, Schedule};
use super::train::{accumulates, grad_split, pytorch_grads, ActPlan, CopyWalk, Stage};
use super::{activations, conventions, infer, train};
use serde::{Deserialize, Serialize};

/// The part of the step an event belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepPhase {
    /// Allocated before the step (resident model states, CUDA context, …).
    Baseline,
    /// A forward pass.
    Forward,
    /// A backward pass.
    Backward,
    /// The optimizer step.
    Optimizer,
    /// Inference: the prompt.
    Prefill,
    /// Inference: generating tokens.
    Decode,
}

impl StepPhase {
    /// Stable machine name (as in the JSON).
    pub fn as_str(self) -> &'static str {
        match self {
            StepPhase::Baseline => "baseline",
            StepPhase::Forward => "forward",
            StepPhase::Backward => "backward",
            StepPhase::Optimizer => "optimizer",
            StepPhase::Prefill => "prefill",
            StepPhase::Decode => "decode",
        }
    }
}

/// One allocation (`delta_bytes > 0`) or free (`< 0`) on one rank.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Event {
    /// Part of the step.
    pub phase: StepPhase,
    /// Transformer block (0-based, in the whole model), when the event is a layer's.
    pub layer: Option<u32>,
    /// Pipeline stage (0-based).
    pub stage: u32,
    /// Micro-batch (0-based), when the event is a micro-batch's.
    pub micro_batch: Option<u32>,
    /// What the bytes hold.
    pub component: Component,
    /// Bytes allocated (+) or freed (−).
    pub delta_bytes: i64,
    /// The rank's GPU bytes after the event.
    pub total_bytes: u64,
    /// What happens, in words.
    pub what: &'static str,
}

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
    /// Micro-batches the walk runs per stage (the schedule's steady state repeats after).
    pub micro_batches_walked: u32,
    /// The events, stage by stage, in order.
    pub events: Vec<Event>,
}

/// Stages whose events are listed: every one up to 8, else the first, the last, the
/// peak and evenly spaced ones.
const LISTED_STAGES: u32 = 8;

/// Walks one step of `s`. `None` when some figure is out of range (no timeline is
/// drawn for a scenario whose bytes do not fit in 64 bits) or the schedule is longer
/// than [`MAX_LAYER_PASSES`].
///
/// # Example
/// ```
/// use memfit_core::{estimate::estimate, scenario::{Scenario, Zero}, timeline::timeline};
/// let mut s = Scenario::default(); // Llama-2-7B, 1 GPU
/// s.cluster.gpus_per_node = memfit_core::scenario::count(8);
/// s.sharding = memfit_core::scenario::Sharding::Zero(Zero::Z3);
/// let t = timeline(&s).unwrap();
/// assert_eq!(t.peak_bytes, estimate(&s).per_gpu_bytes);
/// ```
pub fn timeline(s: &Scenario) -> Option<Timeline> {
    let p = Prepared::of(s);
    let l = s.layout();
    let r = route(s);
    if r == Route::Train && walk_cost(s, &p) > MAX_LAYER_PASSES {
        return None;
    }
    let mut walks: Vec<Walk> = Vec::new();
    let mut walked = 1;
    let mut peaks = Vec::new();
    match r {
        Route::Train => {
            let n = stage_count(&p.arch, &l);
            for i in 0..n {
                let mut w = Walk::new(i, false);
                walked = walked.max(train_walk(s, &p, &Stage::of(&p.arch, n, i), &mut w)?);
                peaks.push(w.peak);
            }
            let peak_stage = argmax(&peaks);
            for i in listed(n, peak_stage) {
                let mut w = Walk::new(i, true);
                train_walk(s, &p, &Stage::of(&p.arch, n, i), &mut w)?;
                walks.push(w);
            }
        }
        Route::Infer => {
            let mut w = Walk::new(0, true);
            infer_walk(s, &p, &mut w)?;
            walks.push(w);
        }
        Route::DeepSpeed | Route::Megatron => {
            let mut lg = Ledger::bare();
            match r {
                Route::DeepSpeed => conventions::deepspeed_items(s, p.psi, p.largest, &mut lg),
                _ => {
                    let _ = conventions::megatron_items(s, &p.arch, &l, &mut lg);
                }
            }
            let ph = if r == Route::DeepSpeed {
                Phase::OptimizerStep
            } else {
                Phase::Backward
            };
            let mut w = Walk::new(0, true);
            for it in lg.into_items().iter().filter(|i| gpu(i) && i.alive_in(ph)) {
                w.add(
                    StepPhase::Baseline,
                    None,
                    None,
                    it.component,
                    signed(it.bytes)?,
                    "resident (the convention counts it for the whole step)",
                );
            }
            walks.push(w);
        }
    }
    if r != Route::Train {
        peaks = vec![walks[0].peak];
    }
    let stages: Vec<StagePeak> = peaks
        .iter()
        .enumerate()
        .map(|(i, &peak_bytes)| StagePeak {
            stage: i as u32,
            peak_bytes,
            listed: walks.iter().any(|w| w.stage == i as u32),
        })
        .collect();
    let peak_stage = argmax(&peaks);
    let mut events = Vec::new();
    let mut peak_event = 0;
    for w in walks {
        if w.stage == peak_stage {
            peak_event = events.len() + w.peak_event;
        }
        events.extend(w.events);
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

/// The most layer passes (forward or backward of one layer of one micro-batch, over
/// every stage) a timeline walks; a larger schedule (say 512 stages of 2
/// virtual chunks) gets no timeline.
pub const MAX_LAYER_PASSES: u64 = 250_000;

/// Layer passes the training walk would run, over every stage.
fn walk_cost(s: &Scenario, p: &Prepared) -> u64 {
    let n = stage_count(&p.arch, &s.layout());
    let v = s.virtual_stages().max(1) as u64;
    (0..n)
        .map(|i| {
            let st = Stage::of(&p.arch, n, i);
            let (lc, _) = activations::chunk_layers(s, st.layers);
            let m = micro_batches_to_walk(s, n, i) as u64;
            // GPipe walks its middle micro-batches as one event each way.
            let m = if s.parallel.schedule == Schedule::Gpipe {
                m.min(2) + 1
            } else {
                m
            };
            2 * m * v * lc as u64
        })
        .fold(0u64, u64::saturating_add)
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

fn gpu(i: &Item) -> bool {
    i.location == Location::Gpu
}

/// Bytes as a signed delta; `None` past `i64::MAX` (out of range).
fn signed(b: impl TryInto<i64>) -> Option<i64> {
    b.try_into().ok()
}

/// A rank's running total, its high-water mark and (when listed) its events.
struct Walk {
    stage: u32,
    keep: bool,
    total: u64,
    peak: u64,
    peak_event: usize,
    count: usize,
    events: Vec<Event>,
}

impl Walk {
    fn new(stage: u32, keep: bool) -> Walk {
        Walk {
            stage,
            keep,
            total: 0,
            peak: 0,
            peak_event: 0,
            count: 0,
            events: Vec::new(),
        }
    }
    /// Allocates (or, with `free`, frees) every item of `items`, one event each.
    fn each<'a>(
        &mut self,
        phase: StepPhase,
        micro_batch: Option<u32>,
        items: impl Iterator<Item = &'a Item>,
        free: bool,
        what: impl Fn(Component) -> &'static str,
    ) -> Option<()> {
        for it in items {
            let b = signed(it.bytes)?;
            self.add(
                phase,
                None,
                micro_batch,
                it.component,
                if free { -b } else { b },
                what(it.component),
            );
        }
        Some(())
    }
    /// A zero-byte event that names a moment of the step.
    fn mark(&mut self, phase: StepPhase, component: Component, what: &'static str) {
        self.count += 1;
        if self.keep {
            self.events.push(Event {
                phase,
                layer: None,
                stage: self.stage,
                micro_batch: None,
                component,
                delta_bytes: 0,
                total_bytes: self.total,
                what,
            });
        }
    }
    fn add(
        &mut self,
        phase: StepPhase,
        layer: Option<u32>,
        micro_batch: Option<u32>,
        component: Component,
        delta: i64,
        what: &'static str,
    ) {
        if delta == 0 {
            return;
        }
        self.total = self.total.saturating_add_signed(delta);
        if self.total > self.peak {
            self.peak = self.total;
            self.peak_event = self.count;
        }
        self.count += 1;
        if self.keep {
            self.events.push(Event {
                phase,
                layer,
                stage: self.stage,
                micro_batch,
                component,
                delta_bytes: delta,
                total_bytes: self.total,
                what,
            });
        }
    }
}

/// One scheduled pass of a micro-batch's model chunk on a stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Op {
    forward: bool,
    mb: u32,
    chunk: u32,
    /// Micro-batches the pass stands for: 1, or GPipe's middle micro-batches walked
    /// as one event each way.
    run: u32,
}

/// The order of a stage's forward and backward passes, for `m` micro-batches.
///
/// GPipe: every forward, then every backward. 1F1B (and no pipeline, `p = 1`):
/// `p − i − 1` warm-up forwards, then forward/backward pairs, then the cool-down
/// backwards. Interleaved (Megatron-LM `forward_backward_pipelining_with_interleaving`):
/// `m·v` chunk passes each way; warm-up `min(2·(p − i − 1) + (v − 1)·p, m·v)`; the
/// k-th forward runs chunk `(k mod p·v)/p` of micro-batch `⌊k/(p·v)⌋·p + k mod p`, the
/// k-th backward the chunks in reverse.
fn schedule(s: &Scenario, p: u32, i: u32, m: u32) -> Vec<Op> {
    let v = s.virtual_stages().max(1);
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

/// Micro-batches the walk needs on stage `i` to reach every state the step reaches:
/// GPipe all; otherwise up to the first forward after the first backward with the
/// most chunks in flight (the steady state repeats from there).
fn micro_batches_to_walk(s: &Scenario, p: u32, i: u32) -> u32 {
    let m = s.workload.microbatches.get().max(1);
    let v = s.virtual_stages().max(1) as u64;
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

/// How an item of a stage's ledger lives through the walk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Life {
    /// Allocated before the step, never freed.
    Resident,
    /// From the first forward to the end of the last backward.
    Passes,
    /// From the first forward to the first backward (autocast's cast cache under full
    /// checkpointing: cleared when autocast exits).
    Forward,
    /// Gathered before each layer's pass and released after it.
    PerLayer,
    /// Within each backward pass.
    PerBackward,
    /// From the first backward to the end of the step (PyTorch's gradients are
    /// written layer by layer in the first backward).
    BackwardToStep,
    /// Within the optimizer step.
    Step,
    /// Walked by the activation plan (saved activations, logits).
    Plan,
}

fn life(it: &Item) -> Life {
    use Phase::*;
    let ph = &it.phases;
    let has = |p: Phase| ph.contains(&p);
    if matches!(it.component, Component::Activations | Component::Logits) {
        return Life::Plan;
    }
    // Autocast's copies at the backward's high-water mark: the walk frees the copies
    // layer by layer itself (`CopyWalk`).
    if it.component == Component::Weights && ph == &[Backward] {
        return Life::Plan;
    }
    if ph.is_empty() {
        return Life::Resident;
    }
    match (has(Forward), has(Backward), has(OptimizerStep)) {
        (_, true, true) => Life::BackwardToStep,
        (true, true, false) if it.component == Component::GatheredLayer => Life::PerLayer,
        (true, false, false) => Life::Forward,
        (true, _, false) => Life::Passes,
        (false, true, false) => Life::PerBackward,
        (false, false, true) => Life::Step,
        _ => Life::Resident,
    }
}

/// Walks one training stage; returns the micro-batches walked.
///
/// The resident states first, then the stage's passes in schedule order (a forward:
/// [`StageWalk::forward`], a backward: [`StageWalk::backward`]), then the optimizer step
/// ([`StageWalk::step`]).
fn train_walk(s: &Scenario, p: &Prepared, st: &Stage, w: &mut Walk) -> Option<u32> {
    let t = StageWalk::of(s, p, st)?;
    w.each(
        StepPhase::Baseline,
        None,
        t.with(|lf| lf == Life::Resident),
        false,
        resident_what,
    )?;
    let m = micro_batches_to_walk(s, st.p, st.i);
    let mut progress = Progress {
        started: false,
        backward_seen: false,
        grads_written: vec![false; t.lc as usize],
        emb_written: false,
    };
    for op in schedule(s, st.p, st.i, m) {
        if op.forward {
            t.forward(w, op, &mut progress)?;
        } else {
            t.backward(w, op, &mut progress)?;
        }
    }
    t.step(w)?;
    Some(m)
}

/// What one stage's walk allocates, computed once from its ledger and activation plan.
struct StageWalk {
    /// The stage's GPU items other than activations and logits (walked by their [`Life`]).
    items: Vec<Item>,
    plan: ActPlan,
    /// The stage holds the LM head (logits and loss).
    last_stage: bool,
    /// PyTorch writes gradients into fresh tensors layer by layer in the first backward.
    pyt: bool,
    /// ... and without accumulation into a resident buffer (the loss's backward runs first).
    separate: bool,
    /// Logits and loss of one micro-batch (`train::logits_forward_bytes`).
    logits: i64,
    /// The model output the loop holds to the step's end (`train::held_output_bytes`).
    held: i64,
    /// One layer's gathered parameters (ZeRO-3 / FSDP).
    gathered: i64,
    /// A layer's saved activations `A` and a checkpointed layer's input `I`.
    a: i64,
    input: i64,
    /// Layers per chunk, checkpointed layers per chunk, virtual chunks.
    lc: u32,
    n: u32,
    v: u32,
    /// Gradients of the LM head (first in the backward), of the embedding (last) and of
    /// the layers between.
    g_head: i64,
    g_emb: i64,
    g_body: i64,
    /// A tied embedding's gradient accumulation at the end (`train::tied_accumulation_bytes`).
    tied: i64,
    /// The embedding's backward: its token matrix's gradient and the residual's gradient
    /// reaching it (`train::embedding_backward`).
    emb_bwd: Option<(i64, i64)>,
    /// Autocast's copies as the first backward frees them (`train::CopyWalk`; zero
    /// unless walked: PyTorch under autocast without accumulation).
    copies: CopyWalk,
    /// Global index of this stage's first block, the stage and the stages.
    before: u32,
    stage: u32,
    stages: u32,
}

/// What the walk has done so far.
struct Progress {
    started: bool,
    backward_seen: bool,
    grads_written: Vec<bool>,
    emb_written: bool,
}

impl StageWalk {
    fn of(s: &Scenario, p: &Prepared, st: &Stage) -> Option<StageWalk> {
        let l = s.layout();
        let mut lg = Ledger::bare();
        let states = train_stage(s, p, &l, st, &mut lg);
        let items: Vec<Item> = lg.into_items().into_iter().filter(gpu).collect();
        let plan = ActPlan::of(s, &p.arch, &l, st);
        let x = activations::Shape::of(s, &p.arch, &l);
        let last_stage = st.i + 1 == st.p;
        let pyt = pytorch_grads(s);
        let separate = pyt && !accumulates(s, st);
        let sum = |f: &dyn Fn(&Item) -> bool| -> Option<i64> {
            items
                .iter()
                .filter(|i| f(i))
                .try_fold(0i64, |a, i| a.checked_add(signed(i.bytes)?))
        };
        let grads = sum(&|i| {
            life(i) == Life::BackwardToStep && i.component == Component::Gradients && pyt
        })?;
        let logits = if last_stage {
            signed(train::logits_forward_bytes(
                s,
                &p.arch,
                &x,
                st,
                states.copies,
            ))?
        } else {
            0
        };
        let gathered = sum(&|i| life(i) == Life::PerLayer)?;
        // Gradients in the first backward: the LM head's first, the embedding's last, the
        // rest ⌊G_l/L_c⌋ per layer with the remainder at layer 0 (see `train::grad_split`
        // and `ActPlan::pytorch_backward_high_water`).
        let (g_head, g_emb) = if separate {
            let (h, e) = grad_split(s, &p.arch, st, grads.max(0) as u128);
            (signed(h)?, signed(e)?)
        } else {
            (0, 0)
        };
        Some(StageWalk {
            a: signed(plan.a)?,
            input: signed(plan.input)?,
            lc: plan.lc as u32,
            n: plan.n as u32,
            v: plan.v as u32,
            before: (0..st.i)
                .map(|k| activations::stage_layers(p.arch.layers, st.p, k))
                .sum(),
            stage: st.i,
            stages: st.p,
            items,
            plan,
            last_stage,
            pyt,
            separate,
            logits,
            held: if last_stage {
                signed(train::held_output_bytes(s, &p.arch, &x, separate))?
            } else {
                0
            },
            gathered,
            g_head,
            g_emb,
            g_body: grads - g_head - g_emb,
            tied: signed(train::tied_accumulation_bytes(
                s,
                &p.arch,
                st,
                grads.max(0) as u128,
            ))?,
            emb_bwd: match train::embedding_backward(s, &p.arch, &x, st, grads.max(0) as u128) {
                Some((g, r)) if separate => Some((signed(g)?, signed(r)?)),
                _ => None,
            },
            copies: if separate {
                CopyWalk::of(s, st, states.copies)
            } else {
                CopyWalk::default()
            },
        })
    }

    /// The stage's items of the lives `keep` accepts.
    fn with(&self, keep: impl Fn(Life) -> bool) -> impl Iterator<Item = &Item> {
        self.items.iter().filter(move |i| keep(life(i)))
    }

    /// Layer `j`'s share of the body's gradients: `⌊G_b/L_c⌋`, the remainder at layer 0.
    fn g_layer(&self, j: u32) -> i64 {
        let lc = self.lc as i64;
        self.g_body / lc + if j == 0 { self.g_body % lc } else { 0 }
    }

    /// Global block index of chunk `c`'s first layer on this stage.
    fn first_layer(&self, c: u32) -> u32 {
        if self.v > 1 {
            (c * self.stages + self.stage) * self.lc
        } else {
            self.before
        }
    }

    /// A forward pass: the first one allocates what lives through the passes; GPipe's
    /// middle micro-batches are one event each; otherwise layer by layer.
    fn forward(&self, w: &mut Walk, op: Op, pr: &mut Progress) -> Option<()> {
        let mb = Some(op.mb);
        if !pr.started {
            pr.started = true;
            w.each(
                StepPhase::Forward,
                mb,
                self.with(|lf| matches!(lf, Life::Passes | Life::Forward)),
                false,
                passes_what,
            )?;
        }
        if op.run > 1 {
            let run = op.run as i64;
            let saved = signed(self.plan.chunk_saved())?.checked_mul(run)?;
            w.add(
                StepPhase::Forward,
                None,
                mb,
                Component::Activations,
                saved,
                "forward of the middle micro-batches (saved activations)",
            );
            if self.last_stage {
                let logits = self.logits.checked_mul(run)?;
                let what = "their logits and loss";
                w.add(
                    StepPhase::Forward,
                    None,
                    mb,
                    Component::Logits,
                    logits,
                    what,
                );
            }
            return Some(());
        }
        for j in 0..self.lc {
            self.forward_layer(w, op, j);
        }
        Some(())
    }

    /// The events of layer `j`'s pass in `op`, starting with the all-gather of its
    /// parameters (ZeRO-3 / FSDP; nothing otherwise).
    fn layer_pass<'w>(
        &self,
        w: &'w mut Walk,
        phase: StepPhase,
        op: Op,
        j: u32,
    ) -> impl FnMut(Component, i64, &'static str) + 'w {
        let layer = Some(self.first_layer(op.chunk) + j);
        let mut at = move |c: Component, bytes: i64, what: &'static str| {
            w.add(phase, layer, Some(op.mb), c, bytes, what)
        };
        at(
            Component::GatheredLayer,
            self.gathered,
            "all-gather the layer's parameters",
        );
        at
    }

    /// One layer's forward: gather, save (or checkpoint and run the working set), the
    /// logits after the chunk's last layer of the model, release.
    fn forward_layer(&self, w: &mut Walk, op: Op, j: u32) {
        let mut at = self.layer_pass(w, StepPhase::Forward, op, j);
        let (a, ckpt) = (self.a, j < self.n);
        if ckpt {
            let keep = "keep the layer's input (checkpoint)";
            at(Component::Activations, self.input, keep);
            at(
                Component::Activations,
                a,
                "the layer's working set (not saved)",
            );
        } else {
            at(Component::Activations, a, "save the layer's activations");
        }
        // PyTorch frees a checkpointed layer's working set when its forward returns,
        // before the logits exist (see `train::activation_items`).
        let free_ws = "free the working set";
        if ckpt && self.separate {
            at(Component::Activations, -a, free_ws);
        }
        if self.last_stage && op.chunk + 1 == self.v && j + 1 == self.lc {
            at(Component::Logits, self.logits, "logits and loss");
        }
        if ckpt && !self.separate {
            at(Component::Activations, -a, free_ws);
        }
        let release = "release the gathered parameters";
        at(Component::GatheredLayer, -self.gathered, release);
    }

    /// A backward pass: the first one frees autocast's cache and allocates what lives to
    /// the step (the LM head's gradients first); then GPipe's middle micro-batches as
    /// one event, or layer by layer in reverse; the pass's temporaries freed at the end.
    fn backward(&self, w: &mut Walk, op: Op, pr: &mut Progress) -> Option<()> {
        let mb = Some(op.mb);
        let has_logits = self.last_stage && op.chunk + 1 == self.v;
        if !pr.backward_seen {
            // Autocast exited: its cache is cleared; the copies a matmul saved live on.
            let what = |_| "freed when the forward's context exits";
            let others = self.with(|lf| lf == Life::Forward);
            let others = others.filter(|i| i.component != Component::Weights);
            w.each(StepPhase::Backward, mb, others, true, what)?;
            let exit = signed(self.copies.exit)?;
            if exit > 0 {
                let what = "autocast exited: the checkpointed layers' cached copies freed";
                w.add(
                    StepPhase::Backward,
                    None,
                    mb,
                    Component::Weights,
                    -exit,
                    what,
                );
            }
        }
        if has_logits && self.separate && op.run == 1 {
            // PyTorch: the loss's backward is done before any layer's.
            let what = "loss gradient done: logits freed (the loop still holds the output)";
            w.add(
                StepPhase::Backward,
                None,
                mb,
                Component::Logits,
                -(self.logits - self.held),
                what,
            );
        }
        let per_backward = |lf| lf == Life::PerBackward;
        w.each(
            StepPhase::Backward,
            mb,
            self.with(per_backward),
            false,
            per_backward_what,
        )?;
        if !pr.backward_seen {
            pr.backward_seen = true;
            let head_copy = signed(self.copies.head)?;
            if head_copy > 0 {
                let what = "the LM head's bf16 copy freed by its backward";
                w.add(
                    StepPhase::Backward,
                    None,
                    mb,
                    Component::Weights,
                    -head_copy,
                    what,
                );
            }
            if self.g_head > 0 {
                let what = "the LM head's gradients (first in the backward)";
                w.add(
                    StepPhase::Backward,
                    None,
                    mb,
                    Component::Gradients,
                    self.g_head,
                    what,
                );
            }
            // PyTorch's gradients are written layer by layer below.
            let to_step = self.items.iter().filter(|i| {
                life(i) == Life::BackwardToStep
                    && !(self.pyt && i.component == Component::Gradients)
            });
            w.each(StepPhase::Backward, mb, to_step, false, to_step_what)?;
        }
        if op.run > 1 {
            let run = op.run as i64;
            if has_logits {
                let logits = -self.logits.checked_mul(run)?;
                w.add(
                    StepPhase::Backward,
                    None,
                    mb,
                    Component::Logits,
                    logits,
                    "their logits freed",
                );
            }
            let saved = signed(self.plan.chunk_saved())?.checked_mul(run)?;
            let what = "backward of the middle micro-batches (activations freed)";
            w.add(
                StepPhase::Backward,
                None,
                mb,
                Component::Activations,
                -saved,
                what,
            );
        } else {
            for jj in 0..self.lc {
                self.backward_layer(w, op, self.lc - 1 - jj, has_logits && jj == 0, pr);
            }
        }
        let what = |_| "freed after the backward";
        w.each(StepPhase::Backward, mb, self.with(per_backward), true, what)
    }

    /// One layer's backward: gather, recompute a checkpointed layer, write its
    /// gradients (PyTorch, first backward of the chunk), free what it saved, the logits
    /// after the model's last layer (non-PyTorch), the embedding's gradients after layer 0.
    fn backward_layer(&self, w: &mut Walk, op: Op, j: u32, frees_logits: bool, pr: &mut Progress) {
        let mut at = self.layer_pass(w, StepPhase::Backward, op, j);
        let (a, ckpt) = (self.a, j < self.n);
        // Inside the layer (`activations::layer_backward`), walked where the closed form
        // has it: PyTorch without accumulation.
        let lb = self.plan.layer_bwd.filter(|_| self.separate);
        // A recomputation adds its working set less the kept input where the first norm
        // saves that input as it is (`ActPlan::recomputed`).
        let rec = if self.separate {
            signed(self.plan.recomputed()).unwrap_or(a)
        } else {
            a
        };
        if ckpt {
            at(
                Component::Activations,
                rec,
                "recompute the layer's activations",
            );
        }
        let live = if ckpt { rec + self.input } else { a };
        let last_chunk = self.v == 1 || op.chunk + 1 == self.v;
        let mut freed = 0;
        if self.pyt && !pr.grads_written[j as usize] && last_chunk {
            pr.grads_written[j as usize] = true;
            // Autocast's copy of the layer: re-cast by a checkpointed layer's recomputation;
            // freed by the matmuls' backward, before the gradients are written.
            let copy = self.copies.layer(j as u128).min(i64::MAX as u128) as i64;
            if copy > 0 && ckpt {
                at(
                    Component::Weights,
                    copy,
                    "recomputation re-casts the layer's bf16 copies",
                );
            }
            let g = self.g_layer(j);
            match lb {
                Some(lb) => {
                    let (g_qkvn, c_qkv) = lb.qkv_parts(g.max(0) as u128, copy.max(0) as u128);
                    let (g_qkvn, c_qkv) = (g_qkvn as i64, c_qkv as i64);
                    if copy > 0 {
                        let what = "the MLP's and o's bf16 copies freed by their matmuls' backward";
                        at(Component::Weights, -(copy - c_qkv), what);
                    }
                    let what = "write the MLP's, its norm's and o's gradients";
                    at(Component::Gradients, g - g_qkvn, what);
                    freed = self.attention_core(&mut at, lb, live, true);
                    if c_qkv > 0 {
                        at(Component::Weights, -c_qkv, "q, k, v's bf16 copies freed");
                    }
                    let what = "write q, k, v's and the attention norm's gradients";
                    at(Component::Gradients, g_qkvn, what);
                }
                None => {
                    if copy > 0 {
                        let what = "the layer's bf16 copies freed by its matmuls' backward";
                        at(Component::Weights, -copy, what);
                    }
                    at(Component::Gradients, g, "write the layer's gradients");
                }
            }
        } else if let Some(lb) = lb {
            // A later micro-batch's backward: its temporaries are walked where the closed
            // form has that moment (`ActPlan::pytorch_backward_high_water`).
            let temp = self.v == 1;
            freed = self.attention_core(&mut at, lb, live, temp);
        }
        if ckpt {
            at(
                Component::Activations,
                -(live - freed),
                "free the recomputed activations and the layer's checkpoint",
            );
        } else {
            at(
                Component::Activations,
                -(a - freed),
                "free the layer's saved activations",
            );
        }
        if frees_logits && !self.separate {
            at(Component::Logits, -self.logits, "logits and loss freed");
        }
        if j == 0 && !pr.emb_written && (self.g_emb > 0 || self.emb_bwd.is_some()) {
            pr.emb_written = true;
            self.embedding(&mut at);
        }
        let release = "release the gathered parameters (gradients reduce-scattered)";
        at(Component::GatheredLayer, -self.gathered, release);
    }

    /// A layer's attention core differentiated (`activations::layer_backward`): the MLP's
    /// saved tensors and the attention output (eager: also V and the softmax's cast) freed,
    /// then eager attention's softmax-backward temporaries for a moment. Returns the bytes
    /// freed (at most `live`, what the layer holds).
    fn attention_core(
        &self,
        at: &mut impl FnMut(Component, i64, &'static str),
        lb: activations::LayerBackward,
        live: i64,
        with_temp: bool,
    ) -> i64 {
        let freed = (lb.freed.min(i64::MAX as u128) as i64).min(live);
        let what = "the MLP's saved tensors and the attention output freed by their backward";
        at(Component::Activations, -freed, what);
        let temp = lb.temp.min(i64::MAX as u128) as i64;
        if temp > 0 && with_temp {
            let what = "softmax backward: ∂P and ∂scores (fp32), ∂V and the residual's gradient";
            at(Component::Activations, temp, what);
            at(
                Component::Activations,
                -temp,
                "the softmax backward's temporaries freed",
            );
        }
        freed
    }

    /// The embedding's backward, last (`train::embedding_backward`): its dense gradient
    /// while the residual's gradient reaches it, the rest of its gradients, and a tied
    /// matrix's accumulation (old + new + their sum) for a moment.
    fn embedding(&self, at: &mut impl FnMut(Component, i64, &'static str)) {
        let (g_tok, r) = self.emb_bwd.unwrap_or((0, 0));
        // Untied, the token matrix's gradient is part of `g_emb`; tied, it is the
        // accumulation's `new` (the head wrote the old one).
        let g_tok = if self.tied > 0 {
            self.tied / 2
        } else {
            g_tok.min(self.g_emb)
        };
        let what = "the gradient reaching the embedding";
        at(Component::Activations, r, what);
        at(
            Component::Gradients,
            g_tok,
            "the embedding's dense gradient",
        );
        at(Component::Activations, -r, "the residual's gradient freed");
        let what = "the embedding's gradients (last in the backward)";
        at(
            Component::Gradients,
            self.g_emb - if self.tied > 0 { 0 } else { g_tok },
            what,
        );
        if self.tied > 0 {
            let what = "tied embedding: its gradient accumulated (old + new + their sum)";
            at(Component::Gradients, self.tied / 2, what);
            let what = "the accumulation's temporaries freed";
            at(Component::Gradients, -self.tied, what);
        }
    }

    /// After the last backward: what lived through the passes is freed; the optimizer
    /// step's temporaries come and go; gradients and buckets are freed by `zero_grad`.
    fn step(&self, w: &mut Walk) -> Option<()> {
        let what = |_| "freed after the last backward";
        w.each(
            StepPhase::Backward,
            None,
            self.with(|lf| lf == Life::Passes),
            true,
            what,
        )?;
        w.mark(
            StepPhase::Optimizer,
            Component::OptimizerStates,
            "optimizer step: the update runs in place on the resident states",
        );
        let step = |lf| lf == Life::Step;
        w.each(
            StepPhase::Optimizer,
            None,
            self.with(step),
            false,
            step_what,
        )?;
        w.each(StepPhase::Optimizer, None, self.with(step), true, |_| {
            "freed after the update"
        })?;
        let what = |_| "zero_grad / buckets freed after the step";
        w.each(
            StepPhase::Optimizer,
            None,
            self.with(|lf| lf == Life::BackwardToStep),
            true,
            what,
        )?;
        let what = "the loop drops its reference to the model output";
        w.add(
            StepPhase::Optimizer,
            None,
            None,
            Component::Logits,
            -self.held,
            what,
        );
        Some(())
    }
}

fn resident_what(c: Component) -> &'static str {
    match c {
        Component::Weights => "resident weights",
        Component::Gradients => "resident gradient buffer",
        Component::MasterWeights => "resident fp32 master weights",
        Component::OptimizerStates => "resident optimizer states",
        Component::ModelStates => "resident model states",
        Component::Overhead => "CUDA context / NCCL",
        Component::Fragmentation => "allocator fragmentation",
        Component::CommBuffers => "communication buffers",
        _ => "resident",
    }
}

fn passes_what(c: Component) -> &'static str {
    match c {
        Component::Weights => "autocast's bf16 weight copies",
        Component::CommBuffers => "prefetch / ring buffers for the passes",
        _ => "held through forward and backward",
    }
}

fn per_backward_what(c: Component) -> &'static str {
    match c {
        Component::CommBuffers => "gradient reduce bucket",
        Component::GatheredLayer => "unsharded gradient block before reduce-scatter",
        _ => "held during the backward",
    }
}

fn to_step_what(c: Component) -> &'static str {
    match c {
        Component::CommBuffers => "DDP gradient buckets",
        Component::GatheredLayer => "unsharded gradients accumulated over micro-batches",
        _ => "held from backward to the step",
    }
}

fn step_what(c: Component) -> &'static str {
    match c {
        Component::CommBuffers => "all-gather bucket for the updated parameters",
        Component::Workspace => "optimizer temporaries (foreach)",
        _ => "optimizer step",
    }
}

/// Decode events: at most this many token groups.
const DECODE_GROUPS: u64 = 64;

/// Walks inference: the weights, the prompt layer by layer into the KV cache, then
/// the generated tokens with the cache growing.
fn infer_walk(s: &Scenario, p: &Prepared, w: &mut Walk) -> Option<u32> {
    let l = s.layout();
    let mut lg = Ledger::bare();
    infer::inference_items(s, &p.arch, p.psi, &l, &mut lg);
    train::overhead_items(s, &l, p.largest, &mut lg);
    super::estimate::add_fragmentation(s, &mut lg, &[Phase::Decode, Phase::Prefill]);
    let items: Vec<Item> = lg.into_items().into_iter().filter(gpu).collect();
    let find = |c: Component, ph: Phase| {
        items
            .iter()
            .filter(|i| i.component == c && i.phases == [ph])
            .try_fold(0i64, |a, i| a.checked_add(signed(i.bytes)?))
    };
    w.each(
        StepPhase::Baseline,
        None,
        items.iter().filter(|i| i.phases.is_empty()),
        false,
        resident_what,
    )?;
    let kv_prompt = find(Component::KvCache, Phase::Prefill)?;
    let kv_full = find(Component::KvCache, Phase::Decode)?;
    let work_prefill = find(Component::Workspace, Phase::Prefill)?;
    let work_decode = find(Component::Workspace, Phase::Decode)?;
    let layers = (p.arch.layers.max(1) as u64)
        .div_ceil(l.pp.max(1) as u64)
        .max(1) as i64;
    for j in 0..layers {
        let part = share(kv_prompt, j, layers);
        let layer = Some(j as u32);
        w.add(
            StepPhase::Prefill,
            layer,
            None,
            Component::KvCache,
            part,
            "write the prompt's keys and values",
        );
        w.add(
            StepPhase::Prefill,
            layer,
            None,
            Component::Workspace,
            work_prefill,
            "the layer's forward tensors",
        );
        w.add(
            StepPhase::Prefill,
            layer,
            None,
            Component::Workspace,
            -work_prefill,
            "freed after the layer",
        );
    }
    let tokens = (s.workload.gen as u64).max(1);
    let groups = tokens.min(DECODE_GROUPS) as i64;
    let grow = kv_full - kv_prompt;
    for g in 0..groups {
        let part = share(grow, g, groups);
        w.add(
            StepPhase::Decode,
            None,
            None,
            Component::KvCache,
            part,
            "the cache grows by the generated tokens",
        );
        w.add(
            StepPhase::Decode,
            None,
            None,
            Component::Workspace,
            work_decode,
            "one token's forward tensors",
        );
        w.add(
            StepPhase::Decode,
            None,
            None,
            Component::Workspace,
            -work_decode,
            "freed after the token",
        );
    }
    Some(1)
}

/// Part `j` of `n` of `total`, so that the parts sum to `total` exactly.
fn share(total: i64, j: i64, n: i64) -> i64 {
    let (t, j, n) = (total as i128, j as i128, n.max(1) as i128);
    (t * (j + 1) / n - t * j / n) as i64
}
