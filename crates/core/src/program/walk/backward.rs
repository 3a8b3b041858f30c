//! The backward pass and the optimizer step of a stage's program: recomputation,
//! gradients written layer by layer, saved activations freed, reduce buckets, the step's
//! temporaries and `zero_grad`.

use super::*;

impl StageWalk {
    /// A backward pass: the first one frees autocast's cache and allocates what lives to
    /// the step (the LM head's gradients first); then GPipe's middle micro-batches as
    /// one event, or layer by layer in reverse; the pass's temporaries freed at the end.
    pub(crate) fn backward<S: Sink>(&self, w: &mut W<'_, S>, op: Op, pr: &mut Progress) {
        let (ph, mb) = (StepPhase::Backward, Some(op.mb));
        let has_logits = self.has_logits(op);
        if !pr.backward_seen {
            self.autocast_exit(w, mb);
        }
        if has_logits && self.separate && op.run == 1 {
            self.loss_backward(w, mb);
        }
        self.each(w, ph, mb, Life::PerBackward, false, per_backward_what);
        if !pr.backward_seen {
            pr.backward_seen = true;
            self.first_backward_starts(w, mb);
        }
        if op.run > 1 {
            self.middle_microbatches(w, op, has_logits);
        } else {
            for jj in 0..self.lc {
                self.backward_layer(w, op, self.lc - 1 - jj, has_logits && jj == 0, pr);
            }
        }
        self.each(w, ph, mb, Life::PerBackward, true, |_| {
            "freed after the backward"
        });
    }

    /// The first backward's start: autocast exited, its cache cleared (the copies a matmul
    /// saved live on), the forward's other temporaries freed.
    fn autocast_exit<S: Sink>(&self, w: &mut W<'_, S>, mb: Option<u32>) {
        let ph = StepPhase::Backward;
        let what = |_| "freed when the forward's context exits";
        let others = |lf: Life, i: &Item| lf == Life::Forward && i.component != Component::Weights;
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

    /// PyTorch: the loss's backward, done before any layer's; then the logits (and the
    /// loss's tensors) freed, less what the loop still holds.
    fn loss_backward<S: Sink>(&self, w: &mut W<'_, S>, mb: Option<u32>) {
        let ph = StepPhase::Backward;
        let lg = w.logits();
        let now = match self.loss {
            Some((_, saved, bwd)) => {
                let what = "the loss's backward: the log-softmax's and the logits' fp32 gradients";
                w.add(ph, None, mb, Component::Logits, lg, bwd - saved, what);
                bwd
            }
            None => self.logits,
        };
        let what = if self.held > 0 {
            "loss gradient done: logits freed (the loop still holds the output)"
        } else {
            "loss gradient done: logits and the loss's tensors freed"
        };
        w.add(
            ph,
            None,
            mb,
            Component::Logits,
            lg,
            -(now - self.held),
            what,
        );
    }

    /// What the first backward allocates before its layers: the LM head's copy freed and
    /// its gradients written, and everything that lives to the step (PyTorch's gradients
    /// are written layer by layer instead).
    fn first_backward_starts<S: Sink>(&self, w: &mut W<'_, S>, mb: Option<u32>) {
        let ph = StepPhase::Backward;
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
        let to_step = |lf: Life, i: &Item| {
            lf == Life::BackwardToStep && !(self.pyt && i.component == Component::Gradients)
        };
        self.each_of(w, ph, mb, to_step, false, to_step_what);
    }

    /// GPipe's middle micro-batches as one event: their logits and saved activations freed.
    fn middle_microbatches<S: Sink>(&self, w: &mut W<'_, S>, op: Op, has_logits: bool) {
        let (ph, mb) = (StepPhase::Backward, Some(op.mb));
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
    }

    /// One layer's backward: gather, recompute a checkpointed layer, write its gradients
    /// (PyTorch, first backward of the chunk), free what it saved, the logits after the
    /// model's last layer (non-PyTorch), the embedding's gradients after layer 0.
    pub(crate) fn backward_layer<S: Sink>(
        &self,
        w: &mut W<'_, S>,
        op: Op,
        j: u32,
        frees_logits: bool,
        pr: &mut Progress,
    ) {
        let layer = Some(self.first_layer(op.chunk) + j);
        let (ph, mb) = (StepPhase::Backward, Some(op.mb));
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
        let ckpt = j < self.n;
        // Inside the layer (`activations::layer_backward`): PyTorch without accumulation.
        let lb = self.plan.layer_bwd.filter(|_| self.separate);
        let live = self.recompute_layer(w, layer, mb, ckpt);
        let last_chunk = self.v == 1 || op.chunk + 1 == self.v;
        let mut freed = 0;
        if self.pyt && !pr.grads_written[j as usize] && last_chunk {
            pr.grads_written[j as usize] = true;
            freed = self.write_layer_grads(w, layer, mb, j, ckpt, lb, live);
        } else if let Some(lb) = lb {
            // A later micro-batch's backward: its temporaries are walked there too.
            freed = self.attention_core(w, layer, mb, lb, live, self.v == 1);
        }
        self.free_layer(w, layer, mb, (ckpt, live, freed), frees_logits);
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

    /// A checkpointed layer's recomputation: its working set less the kept input where the
    /// first norm saves that input as it is (`ActPlan::recomputed`). Returns the layer's
    /// live activation bytes (the recomputed set and the checkpoint, or what it saved).
    fn recompute_layer<S: Sink>(
        &self,
        w: &mut W<'_, S>,
        layer: Option<u32>,
        mb: Option<u32>,
        ckpt: bool,
    ) -> i128 {
        let rec = if self.separate {
            sat(self.plan.recomputed())
        } else {
            sat(self.plan.a_max)
        };
        if ckpt {
            let (what, act) = ("recompute the layer's activations", w.act());
            w.add(
                StepPhase::Backward,
                layer,
                mb,
                Component::Activations,
                act,
                rec,
                what,
            );
        }
        if ckpt {
            rec + self.input
        } else {
            self.a
        }
    }

    /// The layer's activations freed after its backward (`(checkpointed, live bytes, bytes
    /// the attention core already freed)`), then, after the model's last layer outside
    /// PyTorch, the logits and loss.
    fn free_layer<S: Sink>(
        &self,
        w: &mut W<'_, S>,
        layer: Option<u32>,
        mb: Option<u32>,
        (ckpt, live, freed): (bool, i128, i128),
        frees_logits: bool,
    ) {
        let ph = StepPhase::Backward;
        let (what, held) = if ckpt {
            (
                "free the recomputed activations and the layer's checkpoint",
                live,
            )
        } else {
            ("free the layer's saved activations", self.a)
        };
        let act = w.act();
        w.add(
            ph,
            layer,
            mb,
            Component::Activations,
            act,
            -(held - freed),
            what,
        );
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
    }

    /// PyTorch's first backward of layer `j` in the last chunk: autocast's copies re-cast
    /// by a recomputation and freed by the matmuls' backward, the gradients written (MLP,
    /// its norm and o first, then q, k, v and the attention norm, around the attention
    /// core when it is walked). Returns the activation bytes the attention core freed.
    #[allow(clippy::too_many_arguments)]
    fn write_layer_grads<S: Sink>(
        &self,
        w: &mut W<'_, S>,
        layer: Option<u32>,
        mb: Option<u32>,
        j: u32,
        ckpt: bool,
        lb: Option<LayerBackward>,
        live: i128,
    ) -> i128 {
        let (ph, copies) = (StepPhase::Backward, self.copies_slot);
        let mut freed = 0;
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
        freed
    }

    /// A layer's attention core differentiated (`activations::layer_backward`): the MLP's
    /// saved tensors and the attention output (eager: also V and the softmax's cast) freed,
    /// then eager attention's softmax-backward temporaries for a moment. Returns the bytes
    /// freed (at most `live`, what the layer holds).
    pub(crate) fn attention_core<S: Sink>(
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

    /// After the last backward: what lived through the passes is freed; the optimizer
    /// step's temporaries come and go; gradients and buckets are freed by `zero_grad`.
    pub(crate) fn step<S: Sink>(&self, w: &mut W<'_, S>) {
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
