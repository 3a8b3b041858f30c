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

mod backward;
mod forward;
mod schedule;
mod what;

pub(crate) use schedule::*;
pub(crate) use what::*;

/// `x` as a signed delta (saturating: a figure past 2^127 is out of range anyway).
pub(crate) fn sat(x: u128) -> i128 {
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
pub(crate) struct W<'a, S: Sink> {
    pub(crate) sink: &'a mut S,
    pub(crate) act: u16,
    pub(crate) logits: u16,
    pub(crate) gathered: u16,
}

impl<S: Sink> W<'_, S> {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn add(
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
    pub(crate) fn mark(&mut self, phase: StepPhase, component: Component, what: &'static str) {
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
    pub(crate) fn act(&self) -> (Mech, u16) {
        (Mech::Activations, self.act)
    }
    /// The logits' slot.
    pub(crate) fn logits(&self) -> (Mech, u16) {
        (Mech::Logits, self.logits)
    }
    /// The gathered parameters' slot.
    pub(crate) fn gathered(&self) -> (Mech, u16) {
        (Mech::GatheredLayer, self.gathered)
    }
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
    /// PyTorch (full training, LoRA) without accumulation into a resident buffer:
    /// the loss's backward runs first, a checkpointed layer's working set is freed when its
    /// forward returns.
    pub separate: bool,
    /// Logits and loss of one micro-batch (`train::logits_forward_bytes`).
    pub logits: i128,
    /// The model output the loop holds to the step's end (`train::held_output_bytes`).
    pub held: i128,
    /// The loss's moments where PyTorch walks them apart (`train::loss_moments`):
    /// `(forward, saved, backward)` bytes; `None`: one moment of `logits` bytes at the
    /// forward's end.
    pub loss: Option<(i128, i128, i128)>,
    /// One layer's gathered parameters (ZeRO-3 / FSDP).
    pub(crate) gathered: i128,
    /// A layer's saved activations `A` and a checkpointed layer's input `I`.
    pub(crate) a: i128,
    pub(crate) input: i128,
    /// Layers per chunk, checkpointed layers per chunk, virtual chunks.
    pub(crate) lc: u32,
    pub(crate) n: u32,
    pub(crate) v: u32,
    /// Gradients of the LM head (first in the backward), of the embedding (last) and of
    /// the layers between, written into the gradients' item (`grads`).
    pub(crate) g_head: i128,
    pub(crate) g_emb: i128,
    pub(crate) g_body: i128,
    pub(crate) grads: (Mech, u16),
    /// A tied embedding's gradient accumulation at the end (`train::tied_accumulation_bytes`).
    pub(crate) tied: i128,
    /// The tied accumulation adds in place (`train::tied_sum_in_place`).
    pub(crate) tied_in_place: bool,
    /// The embedding's backward: its token matrix's gradient and the residual's gradient
    /// reaching it (`train::embedding_backward`).
    pub(crate) emb_bwd: Option<(i128, i128)>,
    /// Autocast's copies as the first backward frees them (`train::CopyWalk`; zero
    /// unless walked: PyTorch under autocast without accumulation), from their item.
    pub(crate) copies: CopyWalk,
    pub(crate) copies_slot: (Mech, u16),
    /// Global index of this stage's first block, the stage and the stages.
    pub(crate) before: u32,
    pub(crate) stage: u32,
    pub(crate) stages: u32,
    pub(crate) micro_batches: u32,
    pub(crate) gpipe: bool,
}

/// What the walk has done so far.
pub(crate) struct Progress {
    pub(crate) started: bool,
    pub(crate) backward_seen: bool,
    pub(crate) grads_written: Vec<bool>,
    pub(crate) emb_written: bool,
}

pub(crate) fn gpu(i: &Item) -> bool {
    i.location == Location::Gpu
}

/// PyTorch's gradients of a stage as its program writes them: the item's slot, the
/// total, the LM head's and the embedding's shares (`train::grad_split`: the head's
/// first, the embedding's last, the rest ⌊G_l/L_c⌋ per layer with the remainder at layer
/// 0), tied accumulation and the embedding's backward (gradient, and its temporaries).
struct Grads {
    slot: (Mech, u16),
    total: i128,
    head: i128,
    emb: i128,
    tied: i128,
    emb_bwd: Option<(i128, i128)>,
}

impl Grads {
    fn of(
        s: &Scenario,
        p: &Prepared,
        st: &Stage,
        x: &activations::Shape,
        items: &[Item],
        separate: bool,
    ) -> Grads {
        let m = Mech::PtGradients;
        let slot = items
            .iter()
            .position(|i| i.mech == m && gpu(i))
            .map_or((m, u16::MAX), |k| (m, k as u16));
        let total: i128 = if pytorch_grads(s) {
            items.get(slot.1 as usize).map_or(0, |i| i.bytes as i128)
        } else {
            0
        };
        let (head, emb) = if separate {
            let (h, e) = grad_split(s, &p.arch, st, total as u128);
            (sat(h), sat(e))
        } else {
            (0, 0)
        };
        let tied = sat(train::tied_accumulation_bytes(
            s,
            &p.arch,
            st,
            total as u128,
        ));
        let emb_bwd = match train::embedding_backward(s, &p.arch, x, st, total as u128) {
            Some((g, r)) if separate => Some((sat(g), sat(r))),
            _ => None,
        };
        Grads {
            slot,
            total,
            head,
            emb,
            tied,
            emb_bwd,
        }
    }
}

/// The last stage's logits at the forward's end, the loss's moments `(forward, saved,
/// backward)` and the output the loop holds, bytes.
type LastStage = (i128, Option<(i128, i128, i128)>, i128);

fn last_stage_terms(
    s: &Scenario,
    p: &Prepared,
    x: &activations::Shape,
    st: &Stage,
    copies: (u128, u128),
    separate: bool,
) -> LastStage {
    (
        sat(train::logits_forward_bytes(s, &p.arch, x, st, copies)),
        train::loss_moments(s, &p.arch, x, st, separate)
            .map(|m| (sat(m.forward), sat(m.saved), sat(m.backward))),
        sat(train::held_output_bytes(s, &p.arch, x, separate)),
    )
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
        let last_stage = st.i + 1 == st.p.get();
        let pyt = pytorch_grads(s);
        // PyTorch LoRA runs its step the same way (the loss's backward first, each
        // checkpointed layer's working set freed when its forward returns); its adapters'
        // gradients are too small to walk (`Grads::total` is 0 for them). Found on the CUDA
        // calibration run C15 (LoRA with checkpointing: +6.3 % lumped, +1.3 % walked). QLoRA
        // keeps the lumped walk: no CUDA run measured it, and Unsloth's published maximum
        // contexts (HF + FA2, QLoRA) move from +8 to +20 % walked.
        let lora = s.stack.framework == crate::scenario::Framework::Pytorch
            && s.finetune.kind() == crate::scenario::Finetune::Lora;
        let separate = (pyt || lora) && !accumulates(s, st);
        let slot_of = |m: Mech| {
            items
                .iter()
                .position(|i| i.mech == m && gpu(i))
                .map_or((m, u16::MAX), |k| (m, k as u16))
        };
        let g = Grads::of(s, p, st, &x, &items, separate);
        let (logits, loss, held) = if last_stage {
            last_stage_terms(s, p, &x, st, states.copies, separate)
        } else {
            (0, None, 0)
        };
        let gathered = items
            .iter()
            .filter(|i| gpu(i) && life(i) == Life::PerLayer)
            .map(|i| i.bytes as i128)
            .sum();
        StageWalk {
            a: sat(plan.a),
            input: sat(plan.input),
            lc: plan.lc as u32,
            n: plan.n as u32,
            v: plan.v as u32,
            before: (0..st.i)
                .map(|k| activations::stage_layers(p.arch.layers.get(), st.p, k))
                .sum(),
            stage: st.i,
            stages: st.p.get(),
            micro_batches: micro_batches_to_walk(s, st.p.get(), st.i),
            gpipe: s.parallel.schedule == Schedule::Gpipe,
            copies_slot: slot_of(Mech::AutocastCache),
            items,
            plan,
            last_stage,
            pyt,
            separate,
            logits,
            loss,
            held,
            gathered,
            g_head: g.head,
            g_emb: g.emb,
            g_body: g.total - g.head - g.emb,
            grads: g.slot,
            tied: g.tied,
            tied_in_place: train::tied_sum_in_place(s),
            emb_bwd: g.emb_bwd,
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
}
