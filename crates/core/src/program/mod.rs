//! The step as one event program: for each pipeline stage, the ordered allocations
//! and frees of one training step (or one prefill + decode), each naming its component
//! and its mechanism ([`Mech`]). It is the single source of the step's memory:
//!
//! - the verdict's peak (`Estimate::per_gpu_bytes`) is the program's largest running
//!   total, and the peak's phase and event are where that total is first reached;
//! - the ledger's items are what is alive at each phase's high-water moment, by
//!   mechanism (see [`Watch`] and `estimate`), so the items alive in the peak's phase are
//!   exactly what is alive at the peak moment;
//! - the timeline (`timeline::timeline`) is the program's event list.
//!
//! The program runs into a [`Sink`]: [`Peak`] keeps only the running total and its
//! maximum (the explorer's exact path; no allocation), [`Watch`] also keeps what is
//! alive per mechanism at each phase's maximum (the estimate), [`Trace`] keeps every
//! event (the timeline). Where a sink does not want the curve's shape
//! ([`Sink::detailed`] false), passes whose moments are all below a later identical
//! pass's are run as one event each (a warm-up forward below the next forward, a
//! cool-down backward below the previous one): the maxima are the same (property-tested
//! against the detailed program).

pub(crate) mod infer;
pub(crate) mod walk;

use crate::ledger::{Component, Mech};
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
    /// Index in per-phase arrays.
    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// One event as the program emits it: `delta` bytes allocated (+) or freed (−) for the
/// mechanism in `slot` (the stage's ledger item of that index, or one of the walked
/// slots after them).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ev {
    pub phase: StepPhase,
    pub layer: Option<u32>,
    pub micro_batch: Option<u32>,
    pub component: Component,
    pub mech: Mech,
    pub slot: u16,
    pub delta: i128,
    pub what: &'static str,
}

/// Where the program's events go.
pub(crate) trait Sink {
    /// An allocation or free (`delta ≠ 0`) or a mark (`delta = 0`: a named moment).
    fn event(&mut self, e: Ev);
    /// Whether the sink wants every pass in full (the curve), not only its maxima.
    fn detailed(&self) -> bool;
}

/// The running total and its maximum: the cheapest sink.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Peak {
    total: i128,
    /// The largest running total.
    pub peak: i128,
}

impl Sink for Peak {
    fn event(&mut self, e: Ev) {
        self.total += e.delta;
        self.peak = self.peak.max(self.total);
    }
    fn detailed(&self) -> bool {
        false
    }
}

/// The program's maxima with what is alive there: the running total, its maximum and
/// the first event that reaches it, and for every phase the maximum of the running total
/// within it and the bytes alive per slot at that moment.
#[derive(Clone, Debug)]
pub(crate) struct Watch {
    total: i128,
    live: Vec<i128>,
    /// The phase of the last event (a phase's first moment is the state it begins in).
    phase: Option<StepPhase>,
    /// The largest running total.
    pub peak: i128,
    /// The event (phase, layer, micro-batch, what) that first reaches it.
    pub peak_event: Option<Ev>,
    /// Per phase: the largest running total within it, the bytes per slot there and the
    /// event that first reaches it (`None`: no event in the phase).
    pub phase_max: [Option<PhaseMax>; 6],
}

/// A phase's high-water moment.
#[derive(Clone, Debug)]
pub(crate) struct PhaseMax {
    /// The running total there.
    pub total: i128,
    /// The bytes alive per slot there.
    pub live: Vec<i128>,
    /// The event that first reaches it.
    pub at: Ev,
}

impl Watch {
    /// A watch over `slots` slots.
    pub(crate) fn new(slots: usize) -> Watch {
        Watch {
            total: 0,
            live: vec![0; slots],
            phase: None,
            peak: 0,
            peak_event: None,
            phase_max: Default::default(),
        }
    }
}

impl Watch {
    /// Keeps the current state as phase `ph`'s high-water moment if it is higher.
    fn see(&mut self, ph: StepPhase, at: Ev) {
        let slot = &mut self.phase_max[ph.index()];
        if slot.as_ref().is_none_or(|m| self.total > m.total) {
            *slot = Some(PhaseMax {
                total: self.total,
                live: self.live.clone(),
                at,
            });
        }
    }
}

impl Sink for Watch {
    fn event(&mut self, e: Ev) {
        // A phase begins in the state the previous one left (the backward begins with the
        // forward's activations and logits alive).
        if self.phase != Some(e.phase) {
            self.phase = Some(e.phase);
            self.see(e.phase, e);
        }
        self.total += e.delta;
        if let Some(x) = self.live.get_mut(e.slot as usize) {
            *x += e.delta;
        }
        if self.total > self.peak {
            self.peak = self.total;
            self.peak_event = Some(e);
        }
        self.see(e.phase, e);
    }
    fn detailed(&self) -> bool {
        false
    }
}

/// One allocation (`delta_bytes > 0`) or free (`< 0`) on one rank, as the timeline lists it.
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
    /// The mechanism (not in the JSON).
    #[serde(skip)]
    pub mech: Mech,
    /// Bytes allocated (+) or freed (−).
    pub delta_bytes: i64,
    /// The rank's GPU bytes after the event.
    pub total_bytes: u64,
    /// What happens, in words.
    pub what: &'static str,
}

/// Every event of one stage, with the running total and its first maximum.
#[derive(Clone, Debug)]
pub(crate) struct Trace {
    stage: u32,
    total: i128,
    /// The largest running total.
    pub peak: i128,
    /// Index into `events` of the first event that reaches `peak`.
    pub peak_event: usize,
    /// The events (`None` once a figure does not fit in 64 bits).
    pub events: Option<Vec<Event>>,
}

impl Trace {
    /// The stage traced.
    pub(crate) fn stage(&self) -> u32 {
        self.stage
    }
    /// An empty trace of stage `stage`.
    pub(crate) fn new(stage: u32) -> Trace {
        Trace {
            stage,
            total: 0,
            peak: 0,
            peak_event: 0,
            events: Some(Vec::new()),
        }
    }
}

impl Sink for Trace {
    fn event(&mut self, e: Ev) {
        self.total += e.delta;
        let Some(events) = &mut self.events else {
            return;
        };
        if self.total > self.peak {
            self.peak = self.total;
            self.peak_event = events.len();
        }
        match (i64::try_from(e.delta), u64::try_from(self.total)) {
            (Ok(delta_bytes), Ok(total_bytes)) => events.push(Event {
                phase: e.phase,
                layer: e.layer,
                stage: self.stage,
                micro_batch: e.micro_batch,
                component: e.component,
                mech: e.mech,
                delta_bytes,
                total_bytes,
                what: e.what,
            }),
            _ => self.events = None,
        }
    }
    fn detailed(&self) -> bool {
        true
    }
}

/// Part `j` of `n` of `total`, so that the parts sum to `total` exactly.
pub(crate) fn share(total: i128, j: i128, n: i128) -> i128 {
    // Parts of a whole: callers pass a layer count or a group count (≥ 1); the guard keeps a 0 finite.
    let n = n.max(1);
    total * (j + 1) / n - total * j / n
}
