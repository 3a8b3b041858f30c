//! One training pipeline stage: its ledger items, its step program, and its explained
//! ledger read off the program.
//!
//! How the ledger's items relate to the program's events: every event allocates or
//! frees bytes of one mechanism's slot — a ledger item (model states, buffers,
//! overheads, each with its formula) or a walked slot (activations, logits, the layer's
//! gathered parameters). For each phase of the step (forward, backward, optimizer step)
//! the program's running total has a high-water moment; the items are what is alive at
//! those moments, slot by slot: an item keeps its formula and bytes where it is alive
//! whole, and is listed with the bytes alive (and says so) where the program has
//! written or freed part of it (PyTorch's gradients written layer by layer, autocast's
//! copies freed layer by layer). So the items alive in a phase sum to that phase's
//! high-water mark, and the items alive in the peak's phase are exactly what is alive at
//! the peak moment (`Estimate::per_gpu_bytes`).

use crate::expr::{bind, eval_bound, Tok, Tok::*};
use crate::ledger::StageSummary;
use crate::ledger::{Component, Item, Ledger, Location, Mech, Phase, Tally, OUT_OF_RANGE};
use crate::program::walk::{life, Life, StageWalk, WALKED};
use crate::program::{Peak, StepPhase, Watch};
use crate::resolved::Prepared;
use crate::scenario::{Layout, Scenario};
use crate::train::{self, ActPlan, Stage, StageStates};

/// The phases of a training step, in the order a tie between their sums is reported.
pub(crate) const TRAIN: [Phase; 3] = [Phase::Backward, Phase::Forward, Phase::OptimizerStep];

/// A stage's ledger items in program order (model states, context-parallel ring
/// buffers, overheads) and where the walked items go among them.
pub(crate) struct StageItems {
    /// The items (with their text when asked for).
    pub items: Vec<Item>,
    /// What the model states hand to the activations (PyTorch's gradients, autocast's copies).
    pub states: StageStates,
    /// Index at which the activations item goes.
    pub act_at: usize,
    /// Index at which the logits item goes.
    pub logits_at: usize,
}

/// The ledger items of stage `st` (text built when `text`).
pub(crate) fn stage_items(
    s: &Scenario,
    p: &Prepared,
    l: &Layout,
    st: &Stage,
    text: bool,
) -> StageItems {
    let mut lg = if text {
        Ledger::items()
    } else {
        Ledger::bare()
    };
    let states = train::model_states(s, &p.arch, p.psi, p.largest, l, st, &mut lg);
    let act_at = lg.len();
    train::cp_ring_buffers(s, &p.arch, l, &mut lg);
    train::scan_transient_item(s, &p.arch, l, &mut lg);
    let logits_at = lg.len();
    train::overhead_items(s, l, p.largest, &mut lg);
    StageItems {
        items: lg.into_items(),
        states,
        act_at,
        logits_at,
    }
}

/// Allocator fragmentation: `f%` of the allocated peak, reserved but unusable.
///
/// # Formula
/// ```text
/// fragmentation = ⌈f/100 · allocated peak⌉
/// ```
/// Default f = 5: PyTorch's caching allocator typically reserves 3–10 % more than it
/// has allocated in steady training (PyTorch CUDA semantics docs: memory management,
/// `expandable_segments` reduces it). Editable with `frag=`. The allocated peak is the
/// step program's (a peak out of range stays out of range).
///
/// # Example
/// An allocated peak of 40,000,000,000 B at f = 5: 2,000,000,000 B.
/// Where the run is one the op-level templates hold (`opstream::candidate`,
/// `opstream::replay`), the replayed gap instead, not a share: see [`REPLAYED_GAP`].
pub(crate) fn fragmentation(s: &Scenario, alloc_peak: u64) -> u64 {
    if alloc_peak == OUT_OF_RANGE {
        return OUT_OF_RANGE;
    }
    if let Some(r) = replayed_gap(s) {
        return replayed_bytes(s, &r, alloc_peak);
    }
    let v = [alloc_peak as u128, s.runtime.frag_pct as u128];
    eval_bound(FRAGMENTATION, &v).map_or(0, |b| b.min(OUT_OF_RANGE as u128) as u64)
}

/// `⌈P·f/100⌉`: the allocated peak `P` (bytes) times `frag_pct` `f`, rounded up.
const FRAGMENTATION: &[Tok] = &[Var("P", 0), Var("f", 1), Mul, Num(100), DivCeil];

/// Whether the run's op-level replay runs out of memory on its GPU even after the caching
/// allocator released its cached segments ([`crate::allocator::CachingAllocator::capped`]
/// under [`train::allocator_cap`]): then it does not fit, whatever the per-GPU
/// figure. Measured: set H (`tests/data/cuda_h100`), Phi-4 mini D29 ran out of memory on the
/// 79.18 GiB H100 at a 75.09 GiB allocated peak.
pub(crate) fn replay_out_of_memory(s: &Scenario) -> bool {
    replayed_gap(s).is_some_and(|r| r.oom)
}

/// The op-level replay of the run, where the templates hold it and `frag` is not 0.
fn replayed_gap(s: &Scenario) -> Option<crate::opstream::Replayed> {
    if s.runtime.frag_pct == 0 {
        return None;
    }
    let run = crate::opstream::candidate(s)?;
    let cap = train::allocator_cap(s);
    crate::opstream::replay(&crate::opstream::Run { cap, ..run })
}

/// What the caching allocator reserves beyond the event program's allocated peak, from the
/// run's op-level stream replayed through it.
///
/// # Formula
/// ```text
/// gap = max(R − A, R + W − P)
/// ```
/// R, A: the replayed stream's largest reserved and largest allocated bytes; W: the cuBLAS
/// workspaces (bytes), which the stream does not hold; P: the event program's allocated peak
/// (bytes). The allocated peak plus the gap is then the larger of two estimates of
/// `max_memory_reserved`: P plus the free bytes cached at the replay's peak, and the replay's
/// own reserved peak with the workspaces. The second binds where the op stream peaks above
/// the event program: C13 (Gemma 2 2B, eager, pure bf16, 2 × 4,096 on an H200), whose loss
/// backward in the second iteration asks for 7.81 GiB at 120.66 GiB allocated, as the
/// measured out-of-memory error did (120.72 GiB allocated, 132.29 reserved).
///
/// Source: the replay (`opstream`, `allocator.rs`); `tests/data/cuda_h200/train.jsonl` (C13).
///
/// # Example
/// C13: R = 139.99 GiB, A = 128.47, W = 0.06, P = 126.66: max(11.52, 13.39) = 13.39 GiB, so
/// the per-GPU figure (with the 0.67 GiB context) is 140.72 GiB, over the H200's 140.40.
/// On the 48 calibration runs that ran, the two terms agree within 0.05 GiB but for C08
/// (the second larger by 0.13 GiB), D05 (0.26), D13 (0.06) and D25 (0.61: Gemma 3 1B, whose
/// replayed reserved peak is −0.1 % from the measured one).
const REPLAYED_GAP: &[Tok] = &[
    Var("R", 0),
    Var("A", 1),
    Sub,
    Var("R", 0),
    Var("W", 2),
    Add,
    Var("P", 3),
    Sub,
    Max,
];

/// What the device's bound did to the replay, for the ledger ("" where it never bound).
fn retry_note(s: &Scenario, r: &crate::opstream::Replayed) -> String {
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    let cap = gib(train::allocator_cap(s));
    if r.oom {
        format!("; out of memory: a new segment does not fit the {cap:.2} GiB CUDA leaves the allocator even after it released its cached segments (R is the replay without that bound)")
    } else if r.retries > 0 {
        let n = match r.retries {
            1 => "once".to_string(),
            n => format!("{n} times"),
        };
        format!("; the allocator released its cached segments {n} to stay within the {cap:.2} GiB CUDA leaves it")
    } else {
        String::new()
    }
}

/// [`REPLAYED_GAP`]'s values for the run.
fn replayed_values(s: &Scenario, r: &crate::opstream::Replayed, alloc_peak: u64) -> [u128; 4] {
    let w = train::cublas_workspace_bytes(s);
    [
        r.max_reserved as u128,
        r.max_allocated as u128,
        w as u128,
        alloc_peak as u128,
    ]
}

/// [`REPLAYED_GAP`] in bytes.
fn replayed_bytes(s: &Scenario, r: &crate::opstream::Replayed, alloc_peak: u64) -> u64 {
    let v = replayed_values(s, r, alloc_peak);
    eval_bound(REPLAYED_GAP, &v).map_or(0, |b| b.min(OUT_OF_RANGE as u128) as u64)
}

/// The fragmentation item on an allocated peak (see [`fragmentation`]).
pub(crate) fn push_fragmentation(s: &Scenario, alloc_peak: u64, ledger: &mut Ledger) {
    if s.runtime.frag_pct == 0 {
        return;
    }
    if let (Some(r), true) = (replayed_gap(s), alloc_peak != OUT_OF_RANGE) {
        let src = "PyTorch caching allocator replayed on the run's op-level stream (memfit opstream: templates traced from transformers 5.24; allocator from CUDACachingAllocator.cpp)";
        let v = replayed_values(s, &r, alloc_peak);
        let text = || {
            let e = bind(REPLAYED_GAP, &v);
            (
                e.symbols(),
                format!(
                    "{}; R, A = the replayed stream's max reserved and max allocated, W = the cuBLAS workspaces, P = the allocated peak{}",
                    e.values(),
                    retry_note(s, &r)
                ),
            )
        };
        let (mech, comp, gpu) = (Mech::Fragmentation, Component::Fragmentation, Location::Gpu);
        ledger.push(
            mech,
            comp,
            gpu,
            replayed_bytes(s, &r, alloc_peak),
            text,
            src,
        );
        return;
    }
    let src = "PyTorch caching allocator: reserved − allocated, typically 3–10 % (CUDA semantics: memory management)";
    let (mech, comp, gpu) = (Mech::Fragmentation, Component::Fragmentation, Location::Gpu);
    if alloc_peak == OUT_OF_RANGE {
        let f = s.runtime.frag_pct;
        let text = || {
            let e = bind(FRAGMENTATION, &[0, f as u128]);
            (e.symbols(), format!("f={f}, P out of range"))
        };
        ledger.push(mech, comp, gpu, OUT_OF_RANGE, text, src);
        return;
    }
    let bytes = fragmentation(s, alloc_peak);
    let v = [alloc_peak as u128, s.runtime.frag_pct as u128];
    let text = || {
        let e = bind(FRAGMENTATION, &v);
        (
            e.symbols(),
            format!("{}; P = the allocated peak, f = frag_pct", e.values()),
        )
    };
    ledger.push(mech, comp, gpu, bytes, text, src);
}

/// Bytes as a ledger figure: exact below 2^64 − 1, else [`OUT_OF_RANGE`].
fn figure(x: i128) -> u64 {
    x.clamp(0, OUT_OF_RANGE as i128) as u64
}

/// The GPU bytes outside the allocator among `items` (CUDA context, NCCL).
fn overhead(items: &[Item]) -> i128 {
    items
        .iter()
        .filter(|i| i.location == Location::Gpu && !i.component.is_allocated())
        .map(|i| i.bytes as i128)
        .sum()
}

/// The per-GPU peak of stage `st`: its program's largest running total plus the
/// fragmentation on its allocated part (what the explorer and the solvers read).
pub(crate) fn stage_peak(s: &Scenario, p: &Prepared, l: &Layout, st: &Stage) -> u64 {
    let si = stage_items(s, p, l, st, false);
    let walk = StageWalk::new(s, p, st, si.items, si.states);
    let mut sink = Peak::default();
    walk.run(s, &mut sink);
    let peak = figure(sink.peak);
    let alloc = figure(sink.peak - overhead(&walk.items));
    if peak == OUT_OF_RANGE {
        return OUT_OF_RANGE;
    }
    peak.saturating_add(if s.runtime.frag_pct == 0 {
        0
    } else {
        fragmentation(s, alloc)
    })
}

/// The stage's program with its items and fragmentation, for the timeline: the items
/// (fragmentation last, resident) and the walk.
pub(crate) fn stage_program(s: &Scenario, p: &Prepared, l: &Layout, st: &Stage) -> StageWalk {
    let si = stage_items(s, p, l, st, false);
    let walk = StageWalk::new(s, p, st, si.items, si.states);
    let mut sink = Peak::default();
    walk.run(s, &mut sink);
    let alloc = figure(sink.peak - overhead(&walk.items));
    let mut items = walk.items;
    let mut lg = Ledger::Bare(std::mem::take(&mut items));
    push_fragmentation(s, alloc, &mut lg);
    StageWalk::new(s, p, st, lg.into_items(), si.states)
}

/// One stage's explained ledger, read off its program at each phase's high-water moment.
pub(crate) struct StageLedger {
    /// The items, in ledger order.
    pub items: Vec<Item>,
    /// The stage's peak and its phase.
    pub summary: StageSummary,
}

/// Maps the program's phases to the ledger's.
fn ledger_phase(ph: StepPhase) -> Phase {
    match ph {
        StepPhase::Forward => Phase::Forward,
        StepPhase::Optimizer => Phase::OptimizerStep,
        StepPhase::Prefill => Phase::Prefill,
        StepPhase::Decode => Phase::Decode,
        StepPhase::Baseline | StepPhase::Backward => Phase::Backward,
    }
}

/// The ledger of stage `st`: its program run into a [`Watch`], then every slot's bytes at
/// the forward's, the backward's and the optimizer step's high-water moments (see the
/// module docs), fragmentation on the allocated peak.
pub(crate) fn stage_ledger(s: &Scenario, p: &Prepared, l: &Layout, st: &Stage) -> StageLedger {
    let si = stage_items(s, p, l, st, true);
    let (act_at, logits_at, states) = (si.act_at, si.logits_at, si.states);
    let walk = StageWalk::new(s, p, st, si.items, si.states);
    let mut w = Watch::new(walk.slots());
    walk.run(s, &mut w);
    let n = walk.items.len();
    let (snap, moments) = high_water(&w, walk.slots());
    let gathered = snap.iter().map(|v| v[n + 2]).collect::<Vec<_>>();
    let mut items = Vec::with_capacity(n + 4);
    let plan = ActPlan::of(s, &p.arch, l, st);
    let ctx = Walked {
        s,
        p,
        l,
        st,
        plan: &plan,
        states,
        walk: &walk,
        moments,
    };
    for (k, it) in walk.items.iter().enumerate() {
        if k == act_at {
            ctx.activations(&snap.iter().map(|v| v[n]).collect::<Vec<_>>(), &mut items);
        }
        if k == logits_at {
            ctx.logits(
                &snap.iter().map(|v| v[n + 1]).collect::<Vec<_>>(),
                &mut items,
            );
        }
        let live: Vec<i128> = if it.location != Location::Gpu {
            vec![]
        } else if life(it) == Life::PerLayer {
            // The gathered slot holds every per-layer item at once, or none.
            gathered
                .iter()
                .map(|g| if *g > 0 { it.bytes as i128 } else { 0 })
                .collect()
        } else {
            snap.iter().map(|v| v[k]).collect()
        };
        at_moments(it, &live, &ctx, &mut items);
    }
    if act_at >= n {
        ctx.activations(&snap.iter().map(|v| v[n]).collect::<Vec<_>>(), &mut items);
    }
    if logits_at >= n {
        ctx.logits(
            &snap.iter().map(|v| v[n + 1]).collect::<Vec<_>>(),
            &mut items,
        );
    }
    debug_assert_eq!(WALKED, 3);
    // Fragmentation on the allocated peak (the overheads are resident: the same moment).
    let alloc = figure(w.peak - overhead(&walk.items));
    let mut lg = Ledger::Items(items);
    push_fragmentation(s, alloc, &mut lg);
    let items = lg.into_items();
    let peak_phase = w
        .peak_event
        .map_or(Phase::Backward, |e| ledger_phase(e.phase));
    let summary = summarise(st, &items, peak_phase);
    StageLedger { items, summary }
}

/// Per step phase (forward, backward, optimizer): the bytes of every slot at the phase's
/// high-water moment (a phase with no event holds what the baseline holds), and what
/// happened at that moment.
fn high_water(w: &Watch, slots: usize) -> (Vec<Vec<i128>>, Vec<&'static str>) {
    let base = w.phase_max[StepPhase::Baseline.index()]
        .clone()
        .map_or(vec![0; slots], |m| m.live);
    let phases = [
        StepPhase::Forward,
        StepPhase::Backward,
        StepPhase::Optimizer,
    ];
    let snap = phases
        .iter()
        .map(|ph| {
            w.phase_max[ph.index()]
                .clone()
                .map_or(base.clone(), |m| m.live)
        })
        .collect();
    let moments = phases
        .iter()
        .map(|ph| w.phase_max[ph.index()].as_ref().map_or("", |m| m.at.what))
        .collect();
    (snap, moments)
}

/// A stage's summary: its GPU bytes and components at the peak phase.
fn summarise(st: &Stage, items: &[Item], peak_phase: Phase) -> StageSummary {
    let mut tally = Tally::default();
    for i in items {
        tally.add(i.component, i.location, i.bytes, &i.phases);
    }
    StageSummary {
        stage: st.i,
        layers: st.layers,
        per_gpu_bytes: tally.at(Location::Gpu, peak_phase, false),
        peak_phase,
        components: crate::ledger::by_component(items, peak_phase),
    }
}

/// What the walked items' texts read.
struct Walked<'a> {
    s: &'a Scenario,
    p: &'a Prepared,
    l: &'a Layout,
    st: &'a Stage,
    plan: &'a ActPlan,
    states: StageStates,
    walk: &'a StageWalk,
    /// The event of each phase's high-water moment (forward, backward, step).
    moments: Vec<&'static str>,
}

const MOMENTS: [Phase; 3] = [Phase::Forward, Phase::Backward, Phase::OptimizerStep];

/// Groups the phases by the bytes alive in them (0 left out): `(bytes, phases)`, in phase
/// order of first appearance.
fn groups(live: &[i128]) -> Vec<(i128, Vec<Phase>)> {
    let mut out: Vec<(i128, Vec<Phase>)> = Vec::new();
    for (ph, &b) in MOMENTS.iter().zip(live) {
        if b == 0 {
            continue;
        }
        match out.iter_mut().find(|(x, _)| *x == b) {
            Some((_, v)) => v.push(*ph),
            None => out.push((b, vec![*ph])),
        }
    }
    out
}

/// The phases an item is nominally alive in (`[]`: every phase of the step).
fn nominal(it: &Item) -> Vec<Phase> {
    if it.phases.is_empty() {
        MOMENTS.to_vec()
    } else {
        MOMENTS
            .iter()
            .copied()
            .filter(|p| it.phases.contains(p))
            .collect()
    }
}

/// A ledger item as the program holds it at the phases' high-water moments: as it is
/// where it is alive whole in its phases, else one item per distinct partial size.
fn at_moments(it: &Item, live: &[i128], ctx: &Walked, out: &mut Vec<Item>) {
    if live.is_empty() {
        out.push(it.clone());
        return;
    }
    let whole = it.bytes as i128;
    let expected: Vec<i128> = MOMENTS
        .iter()
        .map(|ph| if nominal(it).contains(ph) { whole } else { 0 })
        .collect();
    if live == expected.as_slice() {
        out.push(it.clone());
        return;
    }
    for (bytes, phases) in groups(live) {
        let mut x = it.clone();
        x.phases = if phases == nominal(it) && !it.phases.is_empty() {
            it.phases.clone()
        } else if phases.len() == MOMENTS.len() {
            Vec::new()
        } else {
            phases
        };
        if bytes != whole && !it.formula.is_empty() {
            let (phase, at) = ctx.moment(&x.phases);
            x.formula = format!(
                "{} — at the {phase}'s high-water moment ({at}): {}",
                it.formula,
                if bytes < whole {
                    "the part the program has written or not yet freed"
                } else {
                    "with the program's transient on top"
                }
            );
            x.values = format!("{}; alive there: {bytes} of {whole} B", it.values);
        }
        x.bytes = figure(bytes);
        out.push(x);
    }
}

impl Walked<'_> {
    /// The phase of `phases` whose moment is described, and that moment's event.
    fn moment(&self, phases: &[Phase]) -> (&'static str, &'static str) {
        let (name, k) = if phases.is_empty() || phases.contains(&Phase::Forward) {
            ("forward", 0)
        } else if phases.contains(&Phase::Backward) {
            ("backward", 1)
        } else {
            ("optimizer step", 2)
        };
        (name, self.moments.get(k).copied().unwrap_or(""))
    }

    /// The activations alive at each phase's high-water moment.
    fn activations(&self, live: &[i128], out: &mut Vec<Item>) {
        let src = train::activations_source(self.s);
        let closed = self.plan.peak() as i128;
        // One text for every group (the per-layer formula is the same).
        let text = train::activations_text(self.s, &self.p.arch, self.l, self.plan);
        for (bytes, phases) in groups(live) {
            let (formula, values) = if !self.walk.separate && bytes == closed {
                text.clone()
            } else {
                let (f, v) = text.clone();
                let (phase, at) = self.moment(&phases);
                let held = if phase == "forward" {
                    "every layer's saved activations (a checkpointed layer's input), the working set of the layer running"
                } else {
                    "saved activations and checkpoints of the layers not yet differentiated, a recomputed working set and backward temporaries"
                };
                (
                    format!(
                        "what the step program holds at the {phase}'s high-water moment ({at}): {held};  per layer: {f}"
                    ),
                    v,
                )
            };
            out.push(Item {
                mech: Mech::Activations,
                component: Component::Activations,
                location: Location::Gpu,
                bytes: figure(bytes),
                rank: "all".into(),
                formula,
                values,
                source: src.into(),
                phases,
            });
        }
    }

    /// The logits alive at each phase's high-water moment.
    fn logits(&self, live: &[i128], out: &mut Vec<Item>) {
        // A model-free walk may hold no logits (`logits = 0`): a divisor of 1, and a moment holding any logits holds at least one copy.
        let one = self.walk.logits.max(1);
        for (bytes, phases) in groups(live) {
            let alive = (bytes / one).max(1) as u128;
            let held = bytes == self.walk.held && bytes != self.walk.logits;
            let (formula, values) = if held {
                train::held_output_text(self.s, &self.p.arch, self.l)
            } else {
                let (s, arch, copies) = (self.s, &self.p.arch, self.states.copies);
                train::logits_text(s, arch, self.l, self.st, copies, alive)
            };
            let (mech, source) = if held {
                (
                    Mech::HeldOutput,
                    "the training loop's reference to the model output (`logits = model(ids)` / `outputs = model(**batch)`) keeps it alive until the step's end; measured with MemTracker (`tools/measure_pytorch.py`)",
                )
            } else {
                (Mech::Logits, train::SRC_LOGITS)
            };
            out.push(Item {
                mech,
                component: Component::Logits,
                location: Location::Gpu,
                bytes: figure(bytes),
                rank: "all".into(),
                formula,
                values,
                source: source.into(),
                phases,
            });
        }
    }
}
