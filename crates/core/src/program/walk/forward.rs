//! The forward pass of a stage's program, layer by layer: gathered parameters, saved
//! activations or checkpointed inputs, the logits after the last layer, the embedding.

use super::*;

impl StageWalk {
    /// Whether a pass touches the logits (the model's last chunk on the last stage).
    pub(crate) fn has_logits(&self, op: Op) -> bool {
        self.last_stage && op.chunk + 1 == self.v
    }

    /// A whole pass as one event (its saved activations, `S_c`), where its moments are
    /// below those of a neighbouring identical pass.
    pub(crate) fn pass_at_once<S: Sink>(&self, w: &mut W<'_, S>, op: Op, forward: bool) {
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
    pub(crate) fn each<S: Sink>(
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
    pub(crate) fn each_of<S: Sink>(
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
    pub(crate) fn g_layer(&self, j: u32) -> i128 {
        let lc = self.lc as i128;
        self.g_body / lc + if j == 0 { self.g_body % lc } else { 0 }
    }

    /// Global block index of chunk `c`'s first layer on this stage.
    pub(crate) fn first_layer(&self, c: u32) -> u32 {
        if self.v > 1 {
            (c * self.stages + self.stage) * self.lc
        } else {
            self.before
        }
    }

    /// A forward pass: the first one allocates what lives through the passes; GPipe's
    /// middle micro-batches are one event each; otherwise layer by layer.
    pub(crate) fn forward<S: Sink>(&self, w: &mut W<'_, S>, op: Op, pr: &mut Progress) {
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
    pub(crate) fn forward_layer<S: Sink>(&self, w: &mut W<'_, S>, op: Op, j: u32) {
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
        // A checkpointed layer's working set: the largest block kind's (`ActPlan::a_max`).
        let a = if ckpt { sat(self.plan.a_max) } else { a };
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
                self.loss.map_or(self.logits, |(f, _, _)| f),
                "logits and loss",
            );
            if let Some((fwd, saved, _)) = self.loss {
                let what = "the loss's forward done: the logits' fp32 upcast (and the dropped output) freed";
                w.add(ph, layer, mb, Component::Logits, lg, saved - fwd, what);
            }
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

    /// The embedding's backward, last (`train::embedding_backward`): its dense gradient
    /// while the residual's gradient reaches it, the rest of its gradients, and a tied
    /// matrix's accumulation (old + new + their sum) for a moment, or on CUDA in place
    /// (`train::tied_sum_in_place`).
    pub(crate) fn embedding<S: Sink>(&self, w: &mut W<'_, S>, layer: Option<u32>, mb: Option<u32>) {
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
        if self.tied > 0 && self.tied_in_place {
            let what = "tied embedding: its new gradient added in place, then freed";
            w.add(ph, layer, mb, Component::Gradients, g, -self.tied / 2, what);
        } else if self.tied > 0 {
            let what = "tied embedding: its gradient accumulated (old + new + their sum)";
            w.add(ph, layer, mb, Component::Gradients, g, self.tied / 2, what);
            let what = "the accumulation's temporaries freed";
            w.add(ph, layer, mb, Component::Gradients, g, -self.tied, what);
        }
    }
}
