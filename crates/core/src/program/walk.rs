//! The training step's program, stage by stage: the resident states, the passes in
//! the order of the pipeline schedule, layer by layer, then the optimizer step.
//!
//! Forward, layer by layer: ZeRO-3/FSDP's gathered parameters before a layer and
//! released after it; the layer's saved activations (or a checkpointed layer's input
//! and its working set); the logits after the model's last layer. Backward, in reverse:
//! recomputation, PyTorch's gradients written layer by layer (the LM head's first, the
//! embedding's last, inside a layer the MLP's before the attention's), saved activations
//! freed, the per-backward reduce buckets. Then the optimizer step's temporaries and
//! `zero_grad`. Micro-batches follow the schedule (GPipe; 1F1B's warm-up, steady state
//! and cool-down; Megatron's interleaved order with `vpp` chunks); the steady state
//! repeats, so a stage runs only up to the first forward after its first backward with
//! the most chunks in flight (`micro_batches_to_walk`).
//!
//! Sizes come from the stage's ledger items (model states, buffers, overheads: each
//! allocated and freed by its [`Life`]) and from the activation plan (`train::ActPlan`,
//! one formula per mechanism).

use super::{Ev, Sink, StepPhase};
use crate::activations::{self, LayerBackward};
use crate::ledger::{Component, Item, Location, Mech, Phase};
use crate::resolved::Prepared;
use crate::scenario::{Scenario, Schedule};
use crate::train::{self, accumulates, grad_split, pytorch_grads, ActPlan, CopyWalk, Stage};

/// `x` as a signed delta (saturating: a figure past 2^127 is out of range anyway).
fn sat(x: u128) -> i128 {
    x.min(i128::MAX as u128) as i128
}

/// How an item of a stage's ledger lives through the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Life {
    /// Allocated before the step, never freed.
    Resident,
    /// From the first forward to the end of the last backward.
    Passes,
    /// From the first forward to the first backward (autocast's cast cache: cleared when
    /// autocast exits).
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
}

/// The life of item `it` from the phases it is alive in.
pub(crate) fn life(it: &Item) -> Life {
    use Phase::*;
    let ph = &it.phases;
    let has = |p: Phase| ph.contains(&p);
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

/// The walked slots after the stage's ledger items: the activations, the logits, and the
/// gathered parameters of the layer being run (the sum of the items of life
/// [`Life::PerLayer`]).
pub(crate) const WALKED: usize = 3;

/// A sink with the stage's place in the model: every event of the walk goes through
/// here.
struct W<'a, S: Sink> {
    sink: &'a mut S,
    act: u16,
    logits: u16,
    gathered: u16,
}

impl<S: Sink> W<'_, S> {
    #[allow(clippy::too_many_arguments)]
    fn add(
        &mut self,
        phase: StepPhase,
        layer: Option<u32>,
        micro_batch: Option<u32>,
        component: Component,
        (mech, slot): (Mech, u16),
        delta: i128,
        what: &'static str,
    ) {
        if delta != 0 {
            self.sink.event(Ev {
                phase,
                layer,
                micro_batch,
                component,
                mech,
                slot,
                delta,
                what,
            });
        }
    }
    /// A zero-byte event that names a moment of the step.
    fn mark(&mut self, phase: StepPhase, component: Component, what: &'static str) {
        self.sink.event(Ev {
            phase,
            layer: None,
            micro_batch: None,
            component,
            mech: Mech::OptimizerStates,
            slot: u16::MAX,
            delta: 0,
            what,
        });
    }
    /// The activations' slot.
    fn act(&self) -> (Mech, u16) {
        (Mech::Activations, self.act)
    }
    /// The logits' slot.
    fn logits(&self) -> (Mech, u16) {
        (Mech::Logits, self.logits)
    }
    /// The gathered parameters' slot.
    fn gathered(&self) -> (Mech, u16) {
        (Mech::GatheredLayer, self.gathered)
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

/// Micro-batches the program needs on stage `i` to reach every state the step reaches:
/// GPipe all; otherwise up to the first forward after the first backward with the
/// most chunks in flight (the steady state repeats from there).
pub(crate) fn micro_batches_to_walk(s: &Scenario, p: u32, i: u32) -> u32 {
    let m = s.workload.microbatches.get();
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

/// Layer passes (forward or backward of one layer of one micro-batch) the detailed
/// program of stage `st` runs.
pub(crate) fn layer_passes(s: &Scenario, st: &Stage) -> u64 {
    let v = s.virtual_stages().max(1) as u64;
    let (lc, _) = activations::chunk_layers(s, st.layers);
    let m = micro_batches_to_walk(s, st.p, st.i) as u64;
    // GPipe walks its middle micro-batches as one event each way.
    let m = if s.parallel.schedule == Schedule::Gpipe {
        m.min(2) + 1
    } else {
        m
    };
    2 * m * v * lc as u64
}

/// What one stage's program allocates, computed once from its ledger and activation plan.
pub(crate) struct StageWalk {
    /// The stage's ledger items (GPU items are walked by their [`Life`]; their index is
    /// their slot).
    pub items: Vec<Item>,
    /// The activation plan (`A`, `I`, `L_c`, `n`, chunks in flight).
    pub plan: ActPlan,
    /// The stage holds the LM head (logits and loss).
    pub last_stage: bool,
    /// PyTorch writes gradients into fresh tensors layer by layer in the first backward.
    pub pyt: bool,
    /// ... and without accumulation into a resident buffer (the loss's backward runs first).
    pub separate: bool,
    /// Logits and loss of one micro-batch (`train::logits_forward_bytes`).
    pub logits: i128,
    /// The model output the loop holds to the step's end (`train::held_output_bytes`).
    pub held: i128,
    /// One layer's gathered parameters (ZeRO-3 / FSDP).
    gathered: i128,
    /// A layer's saved activations `A` and a checkpointed layer's input `I`.
    a: i128,
    input: i128,
    /// Layers per chunk, checkpointed layers per chunk, virtual chunks.
    lc: u32,
    n: u32,
    v: u32,
    /// Gradients of the LM head (first in the backward), of the embedding (last) and of
    /// the layers between, written into the gradients' item (`grads`).
    g_head: i128,
    g_emb: i128,
    g_body: i128,
    grads: (Mech, u16),
    /// A tied embedding's gradient accumulation at the end (`train::tied_accumulation_bytes`).
    tied: i128,
    /// The embedding's backward: its token matrix's gradient and the residual's gradient
    /// reaching it (`train::embedding_backward`).
    emb_bwd: Option<(i128, i128)>,
    /// Autocast's copies as the first backward frees them (`train::CopyWalk`; zero
    /// unless walked: PyTorch under autocast without accumulation), from their item.
    copies: CopyWalk,
    copies_slot: (Mech, u16),
    /// Global index of this stage's first block, the stage and the stages.
    before: u32,
    stage: u32,
    stages: u32,
    micro_batches: u32,
    gpipe: bool,
}

/// What the walk has done so far.
struct Progress {
    started: bool,
    backward_seen: bool,
    grads_written: Vec<bool>,
    emb_written: bool,
}

fn gpu(i: &Item) -> bool {
    i.location == Location::Gpu
}

impl StageWalk {
    /// The program of stage `st`, from its ledger items (`train::stage_items`) and the
    /// model states' hand-over.
    pub(crate) fn new(
        s: &Scenario,
        p: &Prepared,
        st: &Stage,
        items: Vec<Item>,
        states: train::StageStates,
    ) -> StageWalk {
        let l = s.layout();
        let plan = ActPlan::of(s, &p.arch, &l, st);
        let x = activations::Shape::of(s, &p.arch, &l);
        let last_stage = st.i + 1 == st.p;
        let pyt = pytorch_grads(s);
        let separate = pyt && !accumulates(s, st);
        let slot_of = |m: Mech| {
            items
                .iter()
                .position(|i| i.mech == m && gpu(i))
                .map_or((m, u16::MAX), |k| (m, k as u16))
        };
        let grads_slot = slot_of(Mech::PtGradients);
        let grads: i128 = if pyt {
            items
                .get(grads_slot.1 as usize)
                .map_or(0, |i| i.bytes as i128)
        } else {
            0
        };
        let logits = if last_stage {
            sat(train::logits_forward_bytes(
                s,
                &p.arch,
                &x,
                st,
                states.copies,
            ))
        } else {
            0
        };
        let gathered = items
            .iter()
            .filter(|i| gpu(i) && life(i) == Life::PerLayer)
            .map(|i| i.bytes as i128)
            .sum();
        // Gradients in the first backward: the LM head's first, the embedding's last, the
        // rest ⌊G_l/L_c⌋ per layer with the remainder at layer 0 (`train::grad_split`).
        let (g_head, g_emb) = if separate {
            let (h, e) = grad_split(s, &p.arch, st, grads as u128);
            (sat(h), sat(e))
        } else {
            (0, 0)
        };
        StageWalk {
            a: sat(plan.a),
            input: sat(plan.input),
            lc: plan.lc as u32,
            n: plan.n as u32,
            v: plan.v as u32,
            before: (0..st.i)
                .map(|k| activations::stage_layers(p.arch.layers, st.p, k))
                .sum(),
            stage: st.i,
            stages: st.p,
            micro_batches: micro_batches_to_walk(s, st.p, st.i),
            gpipe: s.parallel.schedule == Schedule::Gpipe,
            copies_slot: slot_of(Mech::AutocastCache),
            items,
            plan,
            last_stage,
            pyt,
            separate,
            logits,
            held: if last_stage {
                sat(train::held_output_bytes(s, &p.arch, &x, separate))
            } else {
                0
            },
            gathered,
            g_head,
            g_emb,
            g_body: grads - g_head - g_emb,
            grads: grads_slot,
            tied: sat(train::tied_accumulation_bytes(
                s,
                &p.arch,
                st,
                grads as u128,
            )),
            emb_bwd: match train::embedding_backward(s, &p.arch, &x, st, grads as u128) {
                Some((g, r)) if separate => Some((sat(g), sat(r))),
                _ => None,
            },
            copies: if separate {
                CopyWalk::of(s, st, states.copies)
            } else {
                CopyWalk::default()
            },
        }
    }

    /// Slots of the program: the ledger items, then the walked ones ([`WALKED`]).
    pub(crate) fn slots(&self) -> usize {
        self.items.len() + WALKED
    }

    /// Runs the stage's program into `sink`: the resident states first, then the passes in
    /// schedule order ([`StageWalk::forward`], [`StageWalk::backward`]), then the optimizer
    /// step ([`StageWalk::step`]).
    pub(crate) fn run<S: Sink>(&self, s: &Scenario, sink: &mut S) {
        let n = self.items.len() as u16;
        let mut w = W {
            sink,
            act: n,
            logits: n + 1,
            gathered: n + 2,
        };
        self.each(
            &mut w,
            StepPhase::Baseline,
            None,
            Life::Resident,
            false,
            resident_what,
        );
        let mut progress = Progress {
            started: false,
            backward_seen: false,
            grads_written: vec![false; self.lc as usize],
            emb_written: false,
        };
        let ops = schedule(s, self.stages, self.stage, self.micro_batches);
        let detailed = w.sink.detailed();
        let mut backwards = 0;
        for (k, op) in ops.iter().enumerate() {
            let next = ops.get(k + 1);
            // GPipe's program is short already (its middle micro-batches are one pass).
            let lump = !detailed && !self.gpipe;
            if op.forward {
                let below_next = next.is_some_and(|nx| nx.forward && !self.has_logits(*nx));
                if lump && progress.started && below_next && !self.has_logits(*op) {
                    self.pass_at_once(&mut w, *op, true);
                } else {
                    self.forward(&mut w, *op, &mut progress);
                }
            } else {
                let prev = k.checked_sub(1).map(|j| ops[j]);
                let after_backward = prev.is_some_and(|pv| !pv.forward);
                // A cool-down backward after another one that was not the first (whose
                // gradients and embedding backward happen once): its moments are the
                // previous backward's with one chunk fewer in flight.
                if lump && after_backward && backwards >= 2 && !self.has_logits(*op) {
                    self.pass_at_once(&mut w, *op, false);
                } else {
                    self.backward(&mut w, *op, &mut progress);
                }
                backwards += 1;
            }
        }
        self.step(&mut w);
    }

    /// Whether a pass touches the logits (the model's last chunk on the last stage).
    fn has_logits(&self, op: Op) -> bool {
        self.last_stage && op.chunk + 1 == self.v
    }

    /// A whole pass as one event (its saved activations, `S_c`), where its moments are
    /// below those of a neighbouring identical pass.
    fn pass_at_once<S: Sink>(&self, w: &mut W<'_, S>, op: Op, forward: bool) {
        let saved = sat(self.plan.chunk_saved());
        let act = w.act();
        if forward {
            let what = "forward of a warm-up micro-batch (its saved activations)";
            w.add(
                StepPhase::Forward,
                None,
                Some(op.mb),
                Component::Activations,
                act,
                saved,
                what,
            );
        } else {
            let what = "backward of a cool-down micro-batch (its activations freed)";
            w.add(
                StepPhase::Backward,
                None,
                Some(op.mb),
                Component::Activations,
                act,
                -saved,
                what,
            );
        }
    }

    /// Allocates (or, with `free`, frees) every item of life `lf`, one event each.
    #[allow(clippy::too_many_arguments)]
    fn each<S: Sink>(
        &self,
        w: &mut W<'_, S>,
        phase: StepPhase,
        micro_batch: Option<u32>,
        lf: Life,
        free: bool,
        what: fn(Component) -> &'static str,
    ) {
        self.each_of(w, phase, micro_batch, |l, _| l == lf, free, what);
    }

    /// [`StageWalk::each`] over the items `keep` accepts.
    #[allow(clippy::too_many_arguments)]
    fn each_of<S: Sink>(
        &self,
        w: &mut W<'_, S>,
        phase: StepPhase,
        micro_batch: Option<u32>,
        keep: impl Fn(Life, &Item) -> bool,
        free: bool,
        what: fn(Component) -> &'static str,
    ) {
        for (k, it) in self.items.iter().enumerate() {
            if !gpu(it) || !keep(life(it), it) {
                continue;
            }
            let b = it.bytes as i128;
            w.add(
                phase,
                None,
                micro_batch,
                it.component,
                (it.mech, k as u16),
                if free { -b } else { b },
                what(it.component),
            );
        }
    }

    /// Layer `j`'s share of the body's gradients: `⌊G_b/L_c⌋`, the remainder at layer 0.
    fn g_layer(&self, j: u32) -> i128 {
        let lc = self.lc as i128;
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
    fn forward<S: Sink>(&self, w: &mut W<'_, S>, op: Op, pr: &mut Progress) {
        let mb = Some(op.mb);
        if !pr.started {
            pr.started = true;
            let keep = |lf: Life, _: &Item| matches!(lf, Life::Passes | Life::Forward);
            self.each_of(w, StepPhase::Forward, mb, keep, false, passes_what);
        }
        if op.run > 1 {
            let run = op.run as i128;
            let saved = sat(self.plan.chunk_saved()) * run;
            let what = "forward of the middle micro-batches (saved activations)";
            let act = w.act();
            w.add(
                StepPhase::Forward,
                None,
                mb,
                Component::Activations,
                act,
                saved,
                what,
            );
            if self.last_stage {
                let logits = w.logits();
                let what = "their logits and loss";
                w.add(
                    StepPhase::Forward,
                    None,
                    mb,
                    Component::Logits,
                    logits,
                    self.logits * run,
                    what,
                );
            }
            return;
        }
        for j in 0..self.lc {
            self.forward_layer(w, op, j);
        }
    }

    /// One layer's forward: gather, save (or checkpoint and run the working set), the
    /// logits after the chunk's last layer of the model, release.
    fn forward_layer<S: Sink>(&self, w: &mut W<'_, S>, op: Op, j: u32) {
        let layer = Some(self.first_layer(op.chunk) + j);
        let (ph, mb, act, lg) = (StepPhase::Forward, Some(op.mb), w.act(), w.logits());
        let gathered = w.gathered();
        let gather = "all-gather the layer's parameters";
        w.add(
            ph,
            layer,
            mb,
            Component::GatheredLayer,
            gathered,
            self.gathered,
            gather,
        );
        let (a, ckpt) = (self.a, j < self.n);
        if ckpt {
            let keep = "keep the layer's input (checkpoint)";
            w.add(ph, layer, mb, Component::Activations, act, self.input, keep);
            let ws = "the layer's working set (not saved)";
            w.add(ph, layer, mb, Component::Activations, act, a, ws);
        } else {
            let what = "save the layer's activations";
            w.add(ph, layer, mb, Component::Activations, act, a, what);
        }
        // PyTorch frees a checkpointed layer's working set when its forward returns,
        // before the logits exist (see `train::activation_items`).
        let free_ws = "free the working set";
        if ckpt && self.separate {
            w.add(ph, layer, mb, Component::Activations, act, -a, free_ws);
        }
        if self.last_stage && op.chunk + 1 == self.v && j + 1 == self.lc {
            w.add(
                ph,
                layer,
                mb,
                Component::Logits,
                lg,
                self.logits,
                "logits and loss",
            );
        }
        if ckpt && !self.separate {
            w.add(ph, layer, mb, Component::Activations, act, -a, free_ws);
        }
        let release = "release the gathered parameters";
        w.add(
            ph,
            layer,
            mb,
            Component::GatheredLayer,
            gathered,
            -self.gathered,
            release,
        );
    }

    /// A backward pass: the first one frees autocast's cache and allocates what lives to
    /// the step (the LM head's gradients first); then GPipe's middle micro-batches as
    /// one event, or layer by layer in reverse; the pass's temporaries freed at the end.
    fn backward<S: Sink>(&self, w: &mut W<'_, S>, op: Op, pr: &mut Progress) {
        let (ph, mb) = (StepPhase::Backward, Some(op.mb));
        let has_logits = self.has_logits(op);
        if !pr.backward_seen {
            // Autocast exited: its cache is cleared; the copies a matmul saved live on.
            let what = |_| "freed when the forward's context exits";
            let others =
                |lf: Life, i: &Item| lf == Life::Forward && i.component != Component::Weights;
            self.each_of(w, ph, mb, others, true, what);
            let what = "autocast exited: the checkpointed layers' cached copies freed";
            w.add(
                ph,
                None,
                mb,
                Component::Weights,
                self.copies_slot,
                -sat(self.copies.exit),
                what,
            );
        }
        if has_logits && self.separate && op.run == 1 {
            // PyTorch: the loss's backward is done before any layer's.
            let what = "loss gradient done: logits freed (the loop still holds the output)";
            let lg = w.logits();
            w.add(
                ph,
                None,
                mb,
                Component::Logits,
                lg,
                -(self.logits - self.held),
                what,
            );
        }
        self.each(w, ph, mb, Life::PerBackward, false, per_backward_what);
        if !pr.backward_seen {
            pr.backward_seen = true;
            let what = "the LM head's bf16 copy freed by its backward";
            w.add(
                ph,
                None,
                mb,
                Component::Weights,
                self.copies_slot,
                -sat(self.copies.head),
                what,
            );
            let what = "the LM head's gradients (first in the backward)";
            w.add(
                ph,
                None,
                mb,
                Component::Gradients,
                self.grads,
                self.g_head,
                what,
            );
            // PyTorch's gradients are written layer by layer below.
            let to_step = |lf: Life, i: &Item| {
                lf == Life::BackwardToStep && !(self.pyt && i.component == Component::Gradients)
            };
            self.each_of(w, ph, mb, to_step, false, to_step_what);
        }
        if op.run > 1 {
            let run = op.run as i128;
            if has_logits {
                let lg = w.logits();
                w.add(
                    ph,
                    None,
                    mb,
                    Component::Logits,
                    lg,
                    -self.logits * run,
                    "their logits freed",
                );
            }
            let saved = sat(self.plan.chunk_saved()) * run;
            let what = "backward of the middle micro-batches (activations freed)";
            let act = w.act();
            w.add(ph, None, mb, Component::Activations, act, -saved, what);
        } else {
            for jj in 0..self.lc {
                self.backward_layer(w, op, self.lc - 1 - jj, has_logits && jj == 0, pr);
            }
        }
        self.each(w, ph, mb, Life::PerBackward, true, |_| {
            "freed after the backward"
        });
    }

    /// One layer's backward: gather, recompute a checkpointed layer, write its gradients
    /// (PyTorch, first backward of the chunk), free what it saved, the logits after the
    /// model's last layer (non-PyTorch), the embedding's gradients after layer 0.
    fn backward_layer<S: Sink>(
        &self,
        w: &mut W<'_, S>,
        op: Op,
        j: u32,
        frees_logits: bool,
        pr: &mut Progress,
    ) {
        let layer = Some(self.first_layer(op.chunk) + j);
        let (ph, mb, act) = (StepPhase::Backward, Some(op.mb), w.act());
        let gathered = w.gathered();
        let gather = "all-gather the layer's parameters";
        w.add(
            ph,
            layer,
            mb,
            Component::GatheredLayer,
            gathered,
            self.gathered,
            gather,
        );
        let (a, ckpt) = (self.a, j < self.n);
        // Inside the layer (`activations::layer_backward`): PyTorch without accumulation.
        let lb = self.plan.layer_bwd.filter(|_| self.separate);
        // A recomputation adds its working set less the kept input where the first norm
        // saves that input as it is (`ActPlan::recomputed`).
        let rec = if self.separate {
            sat(self.plan.recomputed())
        } else {
            a
        };
        if ckpt {
            let what = "recompute the layer's activations";
            w.add(ph, layer, mb, Component::Activations, act, rec, what);
        }
        let live = if ckpt { rec + self.input } else { a };
        let last_chunk = self.v == 1 || op.chunk + 1 == self.v;
        let mut freed = 0;
        let copies = self.copies_slot;
        if self.pyt && !pr.grads_written[j as usize] && last_chunk {
            pr.grads_written[j as usize] = true;
            // Autocast's copy of the layer: re-cast by a checkpointed layer's recomputation;
            // freed by the matmuls' backward, before the gradients are written.
            let copy = sat(self.copies.layer(j as u128));
            if copy > 0 && ckpt {
                let what = "recomputation re-casts the layer's bf16 copies";
                w.add(ph, layer, mb, Component::Weights, copies, copy, what);
            }
            let g = self.g_layer(j);
            match lb {
                Some(lb) => {
                    let (g_qkvn, c_qkv) = lb.qkv_parts(g.max(0) as u128, copy.max(0) as u128);
                    let (g_qkvn, c_qkv) = (sat(g_qkvn), sat(c_qkv));
                    let what = "the MLP's and o's bf16 copies freed by their matmuls' backward";
                    w.add(
                        ph,
                        layer,
                        mb,
                        Component::Weights,
                        copies,
                        -(copy - c_qkv),
                        what,
                    );
                    let what = "write the MLP's, its norm's and o's gradients";
                    w.add(
                        ph,
                        layer,
                        mb,
                        Component::Gradients,
                        self.grads,
                        g - g_qkvn,
                        what,
                    );
                    freed = self.attention_core(w, layer, mb, lb, live, true);
                    let what = "q, k, v's bf16 copies freed";
                    w.add(ph, layer, mb, Component::Weights, copies, -c_qkv, what);
                    let what = "write q, k, v's and the attention norm's gradients";
                    w.add(
                        ph,
                        layer,
                        mb,
                        Component::Gradients,
                        self.grads,
                        g_qkvn,
                        what,
                    );
                }
                None => {
                    let what = "the layer's bf16 copies freed by its matmuls' backward";
                    w.add(ph, layer, mb, Component::Weights, copies, -copy, what);
                    let what = "write the layer's gradients";
                    w.add(ph, layer, mb, Component::Gradients, self.grads, g, what);
                }
            }
        } else if let Some(lb) = lb {
            // A later micro-batch's backward: its temporaries are walked there too.
            freed = self.attention_core(w, layer, mb, lb, live, self.v == 1);
        }
        if ckpt {
            let what = "free the recomputed activations and the layer's checkpoint";
            w.add(
                ph,
                layer,
                mb,
                Component::Activations,
                act,
                -(live - freed),
                what,
            );
        } else {
            let what = "free the layer's saved activations";
            w.add(
                ph,
                layer,
                mb,
                Component::Activations,
                act,
                -(a - freed),
                what,
            );
        }
        if frees_logits && !self.separate {
            let lg = w.logits();
            w.add(
                ph,
                layer,
                mb,
                Component::Logits,
                lg,
                -self.logits,
                "logits and loss freed",
            );
        }
        if j == 0 && !pr.emb_written && (self.g_emb > 0 || self.emb_bwd.is_some()) {
            pr.emb_written = true;
            self.embedding(w, layer, mb);
        }
        let release = "release the gathered parameters (gradients reduce-scattered)";
        w.add(
            ph,
            layer,
            mb,
            Component::GatheredLayer,
            gathered,
            -self.gathered,
            release,
        );
    }

    /// A layer's attention core differentiated (`activations::layer_backward`): the MLP's
    /// saved tensors and the attention output (eager: also V and the softmax's cast) freed,
    /// then eager attention's softmax-backward temporaries for a moment. Returns the bytes
    /// freed (at most `live`, what the layer holds).
    fn attention_core<S: Sink>(
        &self,
        w: &mut W<'_, S>,
        layer: Option<u32>,
        mb: Option<u32>,
        lb: LayerBackward,
        live: i128,
        with_temp: bool,
    ) -> i128 {
        let (ph, act) = (StepPhase::Backward, w.act());
        let freed = sat(lb.freed).min(live);
        let what = "the MLP's saved tensors and the attention output freed by their backward";
        w.add(ph, layer, mb, Component::Activations, act, -freed, what);
        let temp = sat(lb.temp);
        if with_temp {
            let what = "softmax backward: ∂P and ∂scores (fp32), ∂V and the residual's gradient";
            w.add(ph, layer, mb, Component::Activations, act, temp, what);
            let what = "the softmax backward's temporaries freed";
            w.add(ph, layer, mb, Component::Activations, act, -temp, what);
        }
        freed
    }

    /// The embedding's backward, last (`train::embedding_backward`): its dense gradient
    /// while the residual's gradient reaches it, the rest of its gradients, and a tied
    /// matrix's accumulation (old + new + their sum) for a moment.
    fn embedding<S: Sink>(&self, w: &mut W<'_, S>, layer: Option<u32>, mb: Option<u32>) {
        let (ph, act, g) = (StepPhase::Backward, w.act(), self.grads);
        let (g_tok, r) = self.emb_bwd.unwrap_or((0, 0));
        // Untied, the token matrix's gradient is part of `g_emb`; tied, it is the
        // accumulation's `new` (the head wrote the old one).
        let g_tok = if self.tied > 0 {
            self.tied / 2
        } else {
            g_tok.min(self.g_emb)
        };
        let what = "the gradient reaching the embedding";
        w.add(ph, layer, mb, Component::Activations, act, r, what);
        let what = "the embedding's dense gradient";
        w.add(ph, layer, mb, Component::Gradients, g, g_tok, what);
        let what = "the residual's gradient freed";
        w.add(ph, layer, mb, Component::Activations, act, -r, what);
        let what = "the embedding's gradients (last in the backward)";
        let rest = self.g_emb - if self.tied > 0 { 0 } else { g_tok };
        w.add(ph, layer, mb, Component::Gradients, g, rest, what);
        if self.tied > 0 {
            let what = "tied embedding: its gradient accumulated (old + new + their sum)";
            w.add(ph, layer, mb, Component::Gradients, g, self.tied / 2, what);
            let what = "the accumulation's temporaries freed";
            w.add(ph, layer, mb, Component::Gradients, g, -self.tied, what);
        }
    }

    /// After the last backward: what lived through the passes is freed; the optimizer
    /// step's temporaries come and go; gradients and buckets are freed by `zero_grad`.
    fn step<S: Sink>(&self, w: &mut W<'_, S>) {
        let what = |_| "freed after the last backward";
        self.each(w, StepPhase::Backward, None, Life::Passes, true, what);
        let what = "optimizer step: the update runs in place on the resident states";
        w.mark(StepPhase::Optimizer, Component::OptimizerStates, what);
        self.each(w, StepPhase::Optimizer, None, Life::Step, false, step_what);
        let what = |_| "freed after the update";
        self.each(w, StepPhase::Optimizer, None, Life::Step, true, what);
        let what = |_| "zero_grad / buckets freed after the step";
        self.each(
            w,
            StepPhase::Optimizer,
            None,
            Life::BackwardToStep,
            true,
            what,
        );
        let what = "the loop drops its reference to the model output";
        let lg = w.logits();
        w.add(
            StepPhase::Optimizer,
            None,
            None,
            Component::Logits,
            lg,
            -self.held,
            what,
        );
    }
}

pub(crate) fn resident_what(c: Component) -> &'static str {
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
