//! The logits and loss: the LM head's output, its fp32 upcast and the cross entropy.

use super::*;

/// One micro-batch's logits and loss in the forward phase of stage `st`.
///
/// # Formula
/// ```text
/// logits_bytes                                  (see activations::logits_bytes: k + 12 per logit)
/// PyTorch under autocast, no gradient accumulation, one micro-batch alive, last stage:
///   logits_bytes − 4·T·V/t + max(0, 4·T·V/t + C_B − C)
/// ```
/// The loss's forward (logits, fp32 upcast, log-softmax: `k + 8`) runs inside autocast
/// with its whole cache `C` (`autocast_copy_split`); the loss's backward (`k + 12`) runs
/// after autocast exited, when only the copies a matmul saved are alive: `C_B` = the head's
/// and the layers' that are not checkpointed (with every layer checkpointed, the head's
/// only). The forward phase holds the larger of the two moments; the copies are their own
/// item (`C`), so this item adds only what the backward moment has beyond it.
/// Source: `torch.amp.autocast` (`clear_autocast_cache` on exit); measured with
/// MemTracker (`tools/measure_pytorch.py`, bf16 runs with full checkpointing).
///
/// # Example
/// Llama shape h = 256, V = 4096, T = 512, bf16, every layer checkpointed: C − C_B =
/// 2·(4,868,352 − 1,048,576 − 2,304 − 1,048,576) = 5,537,792 B < 4·T·V = 8,388,608 B, so
/// the item is logits_bytes − 5,537,792 B.
pub(crate) fn logits_forward_bytes(
    s: &Scenario,
    arch: &Arch,
    x: &Shape,
    st: &Stage,
    copies: (u128, u128),
) -> u128 {
    let lb = logits_bytes(s, arch, x);
    match autocast_exit(s, arch, x, st, copies) {
        None => lb,
        Some(adj) => lb - adj.tv4 + adj.expr().eval_u128().unwrap_or(0),
    }
}

/// The loss's backward moment after autocast exited (see `logits_forward_bytes`): what
/// it holds beyond the loss's forward, `D` (`⌈4·T·V/t⌉` when the loop holds the logits,
/// `⌈(4 − k)·T·V/t⌉` when the model's output is dropped), and the copies still cached at
/// the exit, `C_x`.
struct AutocastExit {
    /// `D`, bytes.
    tv4: u128,
    /// `D` in symbols.
    name: &'static str,
    /// `C_x`, bytes: the autocast copies alive after the exit (`CopyWalk::exit`).
    exit: u128,
}

impl AutocastExit {
    /// What the loss's backward adds beyond the copies: `max(0, ⌈4·T·V/t⌉ − C_x)`.
    fn expr(&self) -> Expr {
        Expr::new(&[
            Num(0),
            Sym(self.name, self.tv4),
            Sym("C_x", self.exit),
            Sub,
            Max,
        ])
    }
}

/// The loss's moment after autocast exited, where it is the one `logits_forward_bytes`
/// counts (PyTorch under autocast, walked, one micro-batch alive, the last stage).
fn autocast_exit(
    s: &Scenario,
    arch: &Arch,
    x: &Shape,
    st: &Stage,
    copies: (u128, u128),
) -> Option<AutocastExit> {
    let one_alive = s.parallel.schedule != Schedule::Gpipe || s.workload.microbatches.get() <= 1;
    let walked = pytorch_grads(s) && !accumulates(s, st);
    if !(walked && one_alive && st.i + 1 == st.p.get()) {
        return None;
    }
    let (excess, name) = if crate::activations::flash_ce(s) {
        (LOSS_FLASH_FWD, "⌈k·T·V/t⌉")
    } else if held_by_loop(s) {
        (LOSS_MEGATRON, "⌈4·T·V/t⌉")
    } else {
        (LOSS_EXCESS_MODEL, "⌈(4 − k)·T·V/t⌉")
    };
    Some(AutocastExit {
        tv4: eval_bound(excess, &vars(s, arch, x)).unwrap_or(0),
        name,
        exit: CopyWalk::of(s, st, copies).exit,
    })
}

/// The loss's forward and backward moments of the last stage, where PyTorch walks the
/// step apart (`separate`: no accumulation, one micro-batch alive) and nothing else changes
/// between them (no FSDP, whose blocks are gathered and released around them).
///
/// # Formula
/// ```text
/// forward  = N + ⌈T·V·(k + 4 + u)/t⌉     the logits, their fp32 upcast (u = 4 when k < 4, else 0)
///                                        and the log-softmax output, with the final norm N
/// saved    = N + ⌈T·V·(k_l + 4)/t⌉       after the loss's forward: the log-softmax output, and
///                                        the logits where the loop holds them (k_l = k, loss=loop)
/// backward = logits_bytes                (loss=model: ⌈12·T·V/t⌉ + N; loss=loop: ⌈T·V·(k + 12)/t⌉ + N)
/// ```
/// The program holds `forward` at the end of the forward and reaches `backward` at the
/// start of the backward (after autocast exited), so the peak's phase is the backward's
/// when the loss's gradients outweigh the forward's moment. The largest of the two, with
/// the copies autocast frees in between, is `logits_forward_bytes`.
/// Source: PyTorch autograd (`log_softmax` saves its output; `nll_loss`'s and
/// `log_softmax`'s backward allocate the fp32 gradients); measured with MemTracker on real
/// `transformers` models (`tools/measure_hf.py`: the training peak is at the start of the
/// backward with GRAD 0 and TEMP = 2·4·T·V).
///
/// # Example
/// Llama shape h = 256, V = 4096, T = 512, fp32, RMSNorm: N = 2·512·256·4 + 4·512 +
/// 4·512·256 = 1,574,912 B; forward = N + 512·4096·8 = 18,352,128 B; backward (loss=model)
/// = N + 12·512·4096 = 26,740,736 B.
pub(crate) fn loss_moments(
    s: &Scenario,
    arch: &Arch,
    x: &Shape,
    st: &Stage,
    separate: bool,
) -> Option<LossMoments> {
    let one_alive = s.parallel.schedule != Schedule::Gpipe || s.workload.microbatches.get() <= 1;
    let hf = s.stack.framework == Framework::Pytorch;
    if !(separate && one_alive && hf && s.fsdp() == Fsdp::None && st.i + 1 == st.p.get()) {
        return None;
    }
    // Every term but the loss's own (the final norm, soft-capping) is alive at both moments.
    let terms = logits_terms(s, arch, x);
    let bwd: u128 = terms.iter().map(|t| t.bytes).sum();
    let loss = terms.last().map_or(0, |t| t.bytes);
    let (forward, kept) = if crate::activations::flash_ce(s) {
        (LOSS_FLASH_FWD, LOSS_FLASH_FWD)
    } else {
        (LOSS_FORWARD, LOSS_SAVED)
    };
    let fwd = bwd - loss + eval_bound(forward, &terms.vals).unwrap_or(0);
    let saved = bwd - loss + eval_bound(kept, &terms.vals).unwrap_or(0);
    let fwd = fwd.min(bwd);
    Some(LossMoments {
        forward: fwd,
        saved: saved.min(fwd),
        backward: bwd,
    })
}

/// The loss's moments on the last stage (see [`loss_moments`]), bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LossMoments {
    /// At the loss's forward.
    pub forward: u128,
    /// Between the forward and the backward.
    pub saved: u128,
    /// At the loss's backward.
    pub backward: u128,
}

/// The logits' source.
pub(crate) const SRC_LOGITS: &str = "Hugging Face causal-LM loss (bf16 logits, fp32 upcast, log-softmax) / Megatron vocab-parallel cross entropy";

/// The logits item's formula and values for `alive` micro-batches (`m_a`): the output
/// layer's terms (`logits_terms`), rendered from the tokens their bytes came from, and
/// under autocast the loss's later moment (`logits_forward_bytes`).
pub(crate) fn logits_text(
    s: &Scenario,
    arch: &Arch,
    l: &Layout,
    st: &Stage,
    copies: (u128, u128),
    alive: u128,
) -> Text {
    let x = Shape::of(s, arch, l);
    let terms = logits_terms(s, arch, &x);
    let mut formula = (0..terms.len())
        .map(|i| format!("{} [{}]", terms.expr(i).symbols(), terms[i].name))
        .collect::<Vec<_>>()
        .join(" + ");
    let mut values = terms.values();
    if let Some(adj) = autocast_exit(s, arch, &x, st, copies) {
        let e = adj.expr();
        formula = format!(
            "{formula} − {} + {}  (the loss's backward runs after autocast freed its cache: C_x the copies still alive)",
            adj.name,
            e.symbols()
        );
        values = format!("{values}, {}", e.values());
    }
    (format!("({formula})·m_a"), format!("{values}, m_a={alive}"))
}

/// The last stage's logits and loss (see `logits_bytes`), for every micro-batch
/// alive at once (GPipe: all `m`; 1F1B: one), forward and backward.
pub(crate) fn logits_item(
    s: &Scenario,
    arch: &Arch,
    x: &Shape,
    st: &Stage,
    copies: (u128, u128),
    ledger: &mut Ledger,
) {
    let lb = logits_forward_bytes(s, arch, x, st, copies);
    let alive = if s.parallel.schedule == Schedule::Gpipe {
        s.workload.microbatches.get() as u128
    } else {
        1
    };
    let l = s.layout();
    ledger.push_in(
        &FWD_BWD,
        Mech::Logits,
        Component::Logits,
        Location::Gpu,
        (lb * alive).min(u64::MAX as u128) as u64,
        || logits_text(s, arch, &l, st, copies, alive),
        SRC_LOGITS,
    );
}

/// The model output (the logits tensor) that a PyTorch training loop keeps referenced
/// after the loss's backward: through the layers' backward and the optimizer step.
///
/// # Formula
/// ```text
/// T·V·k/t       T = b·s' tokens, V vocabulary, k compute bytes (the LM head's output
///               dtype: 2 under autocast or bf16, 4 in fp32), t TP (vocab-parallel head)
/// ```
/// Source: the common loop `logits = model(ids)` (or `outputs = model(**batch)`, whose
/// `outputs.logits` lives as long as `outputs`), `loss.backward()`, `opt.step()`,
/// `opt.zero_grad()`: the Python name holds the tensor until it is rebound or deleted.
/// Measured with MemTracker (`tools/measure_pytorch.py`): with every block checkpointed
/// the step is the peak and it holds exactly this tensor (8,388,608 B in the fp32 Llama
/// run below; what this changed: docs/validation.md).
/// Hugging Face's `Trainer` returns only the loss from `training_step`, so its output dies
/// with the forward: there this bound is high by `T·V·k/t`.
///
/// # Example
/// b = 2, s = 256, V = 4096, fp32 (k = 4), t = 1: 512·4096·4 = 8,388,608 B.
///
/// Counted when PyTorch's backward is walked apart (`separate`: no accumulation) with one
/// micro-batch per step; otherwise 0 (the loss's moment holds it already).
pub(crate) fn held_output_bytes(s: &Scenario, arch: &Arch, x: &Shape, separate: bool) -> u128 {
    if !separate || s.workload.microbatches.get() > 1 || !held_by_loop(s) {
        return 0;
    }
    eval_bound(HELD_OUTPUT, &vars(s, arch, x)).unwrap_or(0)
}

/// The held output's formula and values (`held_output_bytes`'s tokens).
pub(crate) fn held_output_text(s: &Scenario, arch: &Arch, l: &Layout) -> Text {
    let e = bind(HELD_OUTPUT, &vars(s, arch, &Shape::of(s, arch, l)));
    (
        format!("{}  (the model output the loop holds)", e.symbols()),
        e.values(),
    )
}
