//! Activation memory: what the forward pass saves for the backward pass.
//!
//! memfit's default model counts, per transformer block and micro-batch, every
//! tensor the block's autograd graph keeps — Korthikanti et al.'s Table 2 derivation
//! generalised to GQA, SwiGLU, RMSNorm, fused attention kernels, dropout on/off,
//! mixture-of-experts and context parallelism. The seed formulas and the paper's
//! rows are selectable conventions, reproduced exactly.

use crate::expr::{bind, eval_bound, Expr, Tok};
use crate::megatron::Recompute;
use crate::model::{Arch, Bias, Mlp, Norm};
use crate::scenario::{Attn, Finetune, Framework, Fsdp, Layout, Loss, Scenario, Schedule};

mod backward;
mod layer;
mod pipeline;
mod sdpa;
pub mod ssm;
pub mod vars;

pub use backward::*;
pub use layer::*;
pub use pipeline::*;
pub use sdpa::*;
pub use vars::{korthikanti_form, vars, Vals, SEED002, SEED003};

/// Seed 002's arithmetic slip, as memfit explains it next to the seed's convention.
pub const SEED_002_SLIP: &str = "Seed 002's Llama-3 405B example prints M_a = 147,366 GB \
(147,366,233,505,792 bytes), but its own formula (34·b·s·h + 5·b·a·s²)·L gives \
22,313,351,535,132,672 bytes (≈ 22.3 PB): the example used s where the formula has s², \
151× less. memfit evaluates the formula; the per-GPU activation term becomes ≈ 10,895/MB GB, \
not ≈ 71/MB GB.";

/// One named term of a block's saved activations, in bytes per micro-batch: a constant
/// formula over the block's symbols ([`vars`]), evaluated once ([`Terms::push`]), so its
/// text and its bytes are one value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Term {
    /// What is stored.
    pub name: &'static str,
    /// The term as a formula over [`vars`] (reverse Polish, see [`crate::expr`]).
    pub form: &'static [Tok],
    /// Bytes: `form` evaluated with the block's values.
    pub bytes: u128,
}

/// A block's terms and the values of their symbols, kept inline (at most
/// [`Terms::CAPACITY`]) so that evaluating a layout allocates nothing. Dereferences to a
/// slice of terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Terms {
    items: [Term; Terms::CAPACITY],
    len: usize,
    /// The values of [`vars`] the terms were evaluated with.
    pub vals: Vals,
}

impl Terms {
    /// The most terms a block has (eager attention with dropout, q/k norms and post-norms: 11).
    pub const CAPACITY: usize = 20;
    const EMPTY: Term = Term {
        name: "",
        form: &[],
        bytes: 0,
    };
    /// No terms yet, over the block's values `vals`.
    pub(crate) fn new(vals: Vals) -> Terms {
        Terms {
            items: [Terms::EMPTY; Terms::CAPACITY],
            len: 0,
            vals,
        }
    }
    /// Adds the term `name` = `form` evaluated with the block's values.
    pub(crate) fn push(&mut self, name: &'static str, form: &'static [Tok]) {
        let bytes = eval_bound(form, &self.vals);
        // The formulas below are well formed and the term lists fixed; a debug build
        // checks both (`activations::tests`).
        debug_assert!(bytes.is_some(), "ill-formed term {name}");
        debug_assert!(self.len < Terms::CAPACITY);
        if self.len < Terms::CAPACITY {
            self.items[self.len] = Term {
                name,
                form,
                bytes: bytes.unwrap_or(0),
            };
            self.len += 1;
        }
    }
    /// Term `i` as an [`Expr`] with its symbols' values (for its text).
    pub fn expr(&self, i: usize) -> Expr {
        bind(self[i].form, &self.vals)
    }
    /// The symbols' values of every term, each once, in the order they first appear.
    pub fn values(&self) -> String {
        let mut seen: Vec<&str> = Vec::new();
        let mut out = Vec::new();
        for t in self.iter() {
            for tok in t.form {
                if let Tok::Var(name, i) = *tok {
                    if !seen.contains(&name) {
                        seen.push(name);
                        out.push(format!("{name}={}", self.vals[i]));
                    }
                }
            }
        }
        out.join(", ")
    }
}

impl std::ops::Deref for Terms {
    type Target = [Term];
    fn deref(&self) -> &[Term] {
        &self.items[..self.len]
    }
}

/// Shape numbers the activation formulas read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Micro-batch, b.
    pub b: u128,
    /// Full sequence length, s.
    pub s: u128,
    /// Local sequence s' = ⌈s/c⌉ under context parallelism.
    pub sl: u128,
    /// Hidden, h.
    pub h: u128,
    /// Heads, a.
    pub a: u128,
    /// KV heads.
    pub kv: u128,
    /// Head width, d.
    pub d: u128,
    /// FFN width f.
    pub f: u128,
    /// TP degree, t.
    pub t: u128,
    /// Bytes per activation element, k.
    pub k: u128,
    /// Bytes per element of the residual stream (the blocks' inputs and outputs): 4 under
    /// autocast (see [`autocast`]), else `k`.
    pub res: u128,
}

/// Whether the blocks run under `torch.amp.autocast` over fp32 parameters: PyTorch with
/// a master precision and no FSDP (whose MixedPrecisionPolicy casts the parameters
/// themselves), training every parameter or QLoRA (PEFT's `prepare_model_for_kbit_training`
/// casts every parameter that is not 4-bit to fp32); LoRA keeps its frozen base in the
/// compute dtype. Then the embedding's output is fp32, each block adds its 16-bit output
/// to an fp32 residual, norms run in fp32, and every linear casts its own input to 16 bits.
pub fn autocast(s: &Scenario) -> bool {
    s.stack.framework == Framework::Pytorch
        && s.numerics.precision.has_master()
        && s.fsdp() == Fsdp::None
        && s.finetune.kind() != Finetune::Lora
}

impl Shape {
    /// The shape of a scenario.
    pub fn of(s: &Scenario, arch: &Arch, l: &Layout) -> Shape {
        let sq = s.workload.seq.get() as u128;
        Shape {
            b: s.workload.batch.get() as u128,
            s: sq,
            sl: sq.div_ceil(l.cp.get() as u128),
            h: arch.hidden.get() as u128,
            a: arch.heads.get() as u128,
            kv: arch.kv_heads.get() as u128,
            d: arch.head_dim.get() as u128,
            f: arch.ffn.get() as u128,
            t: l.tp.get() as u128,
            k: s.numerics.precision.compute_bytes() as u128,
            res: if autocast(s) {
                4
            } else {
                s.numerics.precision.compute_bytes() as u128
            },
        }
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_ssm;
