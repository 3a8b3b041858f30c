//! Plain PyTorch's model states: fp32 parameters under autocast and its bf16 weight
//! cache, gradients freed by `zero_grad`, DDP buckets, optimizer states and AdamW's
//! temporaries.

use super::*;

/// Plain PyTorch's model states (see `model_states`): autocast over fp32 parameters or
/// FSDP2 with a bf16 MixedPrecisionPolicy, gradients freed by `zero_grad`, AdamW foreach.
/// Its mechanisms: `pytorch_params_grads`, `pytorch_optimizer`, and the unsharded
/// FSDP buffers (`fsdp_pipeline_buffers` or `fsdp_unsharded_buffers`).
pub(crate) fn pytorch_states(c: &StateCtx, l: &Layout, ledger: &mut Ledger) -> StageStates {
    let states = pytorch_params_grads(c, l, ledger);
    pytorch_optimizer(c, ledger);
    if c.s.fsdp() != Fsdp::None && l.pp.get() > 1 {
        fsdp_pipeline_buffers(c, ledger);
    } else if c.s.fsdp() != Fsdp::None {
        fsdp_unsharded_buffers(c, l, ledger);
    }
    states
}

impl StateCtx<'_> {
    /// Parameter bytes under PyTorch: fp32 under autocast / MixedPrecisionPolicy, else `k`.
    pub(crate) fn pytorch_param_bytes(&self) -> u64 {
        if self.s.numerics.precision.has_master() {
            4
        } else {
            self.k
        }
    }
}

/// Autocast's bf16 copies of stage `st`'s weights, split as PyTorch's first backward
/// frees them: `(C_head, C_body)` bytes; `(0, 0)` when the blocks do not run under
/// autocast (see [`autocast`]).
///
/// # Formula
/// ```text
/// C      = k·Ψ_cast/t = (k/4)·W·Ψ_cast/Ψ_i     W = 4·Ψ_i/t the stage's fp32 weights
/// Ψ_cast = L_i·(Ψ_attention + Ψ_mlp)/L + [last stage]·(Ψ_head + [tied]·V·h)
/// C_head = (k/4)·W·(Ψ_head + [tied]·V·h)/Ψ_i   (0 where the gradients are not split, see
///                                               `grad_split`), C_body = C − C_head
/// ```
/// Autocast casts what a linear reads — every linear's weight and bias, the LM head (a
/// tied matrix through it) — once per forward and caches the cast until the context
/// exits; the embedding lookup, learned positions and norms run on the fp32 parameters
/// and are never cast. Each copy is also saved by its matmul, so it outlives the cache:
/// the backward frees the head's copy first and each layer's when that layer's matmuls
/// are differentiated, just before its gradients are written (`c(j) = ⌊C_body/L_c⌋`, the
/// remainder at layer 0, as the gradients, see `ActPlan::pytorch_backward_high_water`).
/// A checkpointed layer saved nothing: its copies die with the cache and are re-cast by
/// its recomputation. Source: `torch.amp.autocast` (`cached_cast`: leaf fp32 tensors
/// that require grad; `clear_autocast_cache` on exit); measured with MemTracker
/// (`tools/measure_pytorch.py`): at the end of a bf16 AdamW run's backward no copy is
/// alive, and the embedding is never cast.
///
/// # Example
/// Llama-2-7B on one GPU, bf16: Ψ_cast = 6,738,415,616 − 131,072,000 (embedding) − 266,240
/// (norms) = 6,607,077,376, C = 2·Ψ_cast = 13,214,154,752 B; C_head = 2·131,072,000 =
/// 262,144,000 B.
pub(crate) fn autocast_copy_split(s: &Scenario, arch: &Arch, st: &Stage, w4: u128) -> (u128, u128) {
    if !autocast(s) || st.frac.0 == 0 {
        return (0, 0);
    }
    let c = arch.params();
    let layers = arch.layers.get() as u128;
    let vh = arch.vocab.get() as u128 * arch.hidden.get() as u128;
    let head = if st.i + 1 == st.p.get() {
        c.lm_head as u128 + if arch.tied { vh } else { 0 }
    } else {
        0
    };
    let body = (c.attention as u128 + c.mlp as u128).saturating_mul(st.layers as u128);
    let k = s.numerics.precision.compute_bytes() as u128;
    // (k/4)·W·x/Ψ_i, x counted over `layers` like the stage's share `frac`.
    let copies = |x: u128| {
        mul_div_u128(w4, x, st.frac.0, false)
            .unwrap_or(0)
            .min(w4)
            .saturating_mul(k)
            / 4
    };
    let all = copies(body.saturating_add(head.saturating_mul(layers)));
    let split = grad_split(s, arch, st, w4) != (0, 0);
    let h = if split {
        copies(head.saturating_mul(layers)).min(all)
    } else {
        0
    };
    (h, all - h)
}

/// How autocast's copies leave a stage in PyTorch's first backward (see
/// `autocast_copy_split`): the checkpointed layers' when autocast exits, the head's
/// first, then each layer's just before its gradients are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CopyWalk {
    /// The head's copy, `C_head`.
    pub head: u128,
    /// Layer `j`'s copy is `per + [j = 0]·rem` (`C_body` over the chunk's `L_c` layers).
    pub per: u128,
    /// The remainder of `C_body/L_c`, with layer 0.
    pub rem: u128,
    /// Checkpointed layers of the chunk, `n` (the first `n`).
    pub n: u128,
    /// Freed when autocast exits: the checkpointed layers' copies, `Σ_{j<n} c(j)`.
    pub exit: u128,
}

impl CopyWalk {
    /// The walk of stage `st`'s copies `(C_head, C_body)` (`autocast_copy_split`).
    pub fn of(s: &Scenario, st: &Stage, (head, body): (u128, u128)) -> CopyWalk {
        let (lc, n) = chunk_layers(s, st.layers);
        let lc = lc.get() as u128;
        let full = s.activations.recompute == Recompute::Full
            && s.stack.convention != Convention::Korthikanti;
        let n = if full { n } else { 0 };
        let (per, rem) = (body / lc, body % lc);
        CopyWalk {
            head,
            per,
            rem,
            n,
            exit: if n > 0 { n * per + rem } else { 0 },
        }
    }
    /// Layer `j`'s copy, `c(j)`.
    pub fn layer(&self, j: u128) -> u128 {
        self.per + if j == 0 { self.rem } else { 0 }
    }
}

/// Autocast's bf16 copies of the weights (`autocast_copy_split`).
///
/// # Formula
/// ```text
/// PyTorch, no gradient accumulation:
///   forward:   C = k·Ψ_cast/t          (the cast cache, every linear's weights)
///   backward:  the copies alive at the backward's high-water mark, counted with it
///              (`activation_items`, `ActPlan::pytorch_backward_high_water`)
/// with gradient accumulation (the gradients resident, the backward lumped):
///   forward and backward:  C
/// ```
/// Source: `torch.amp.autocast` (`cache_enabled=True`), `torch.utils.checkpoint` (a
/// checkpointed block saves only its input); measured with MemTracker
/// (`tools/measure_pytorch.py`).
///
/// # Example
/// Llama-2-7B, bf16 autocast, t = 1: forward 2·6,607,077,376 = 13,214,154,752 B.
pub(crate) fn autocast_copies(c: &StateCtx, ledger: &mut Ledger) -> (u128, u128) {
    let (s, k, t, psi) = (c.s, c.k, c.t, c.psi);
    let w4 = mul_div_ceil(4, psi, t) as u128;
    let (head, body) = autocast_copy_split(s, c.arch, c.st, w4);
    if head + body == 0 {
        return (0, 0);
    }
    // C = C_head + C_body = k·Ψ_cast/t, split as the first backward frees the copies.
    let e = Expr::new(&[Sym("C_head", head), Sym("C_body", body), Add]);
    let src = "PyTorch torch.amp.autocast weight-cast cache (cache_enabled=True)";
    let ctx = || {
        let psym = c.psym();
        format!("C = {k}·Ψ_cast/t, the linears' weights cast; {psym}={psi}, t={t}")
    };
    let notes = [
        "autocast bf16 weight copies, forward: the cast cache of every linear",
        "autocast bf16 weight copies of every linear, forward and backward",
    ];
    let cache_only = pytorch_grads(s) && !accumulates(s, c.st);
    push_cast_copies(ledger, cache_only, &e, notes, ctx, src);
    (head, body)
}

/// Autocast's bf16 copies as a ledger item: the forward's cast cache alone
/// (`cache_only`: freed as autocast exits, before the backward) or copies kept through
/// the backward (`notes`: the item's note in each case).
fn push_cast_copies(
    ledger: &mut Ledger,
    cache_only: bool,
    e: &Expr,
    notes: [&str; 2],
    ctx: impl FnOnce() -> String,
    src: &'static str,
) {
    let (comp, gpu) = (Component::Weights, Location::Gpu);
    if cache_only {
        let fwd = [Phase::Forward];
        ledger.push_expr(&fwd, Mech::AutocastCache, comp, gpu, e, notes[0], ctx, src);
    } else {
        let (m, n) = (Mech::AutocastCopies, notes[1]);
        ledger.push_expr(&FWD_BWD, m, comp, gpu, e, n, ctx, src);
    }
}

/// Autocast's bf16 copies of LoRA's fp32 adapters (PEFT over a 16-bit base under
/// autocast): each adapter's A and B are leaf fp32 parameters that require grad, so
/// `cached_cast` keeps a bf16 copy of each for the whole forward, and each copy is saved by
/// its matmul; they leave as a full model's copies do (`CopyWalk`: a checkpointed layer's
/// when autocast exits, the others' at their layer's backward). The LM head is never
/// adapted: `C_head = 0`.
///
/// # Formula
/// ```text
/// C_body = ⌈k·Ψ_a/t⌉     framework=pytorch, LoRA, autocast (precision with a master); else 0
/// ```
/// Source: `torch.amp.autocast` (`cached_cast`); the allocator trace of the CUDA calibration
/// run D22 (Qwen2.5 7B, LoRA r 64 on every linear, checkpointed) at its forward's peak holds
/// 84 bf16 tensors of 2,424,832 B (`64·18,944·2`: A or B of gate, up, down) and 252 of
/// 458,752 B (`64·3,584·2`), 2·Ψ_a = 322,961,408 B, where memfit's forward was −1.4 %.
///
/// # Example
/// D22: Ψ_a = 161,480,704, bf16: 322,961,408 B.
pub(crate) fn lora_autocast_copies(c: &StateCtx, ledger: &mut Ledger) -> (u128, u128) {
    let s = c.s;
    if !(s.stack.framework == Framework::Pytorch
        && s.finetune.kind() == Finetune::Lora
        && s.numerics.precision.has_master()
        && c.st.frac.0 > 0)
    {
        return (0, 0);
    }
    let body = mul_div_ceil(c.k, c.trained, c.t) as u128;
    let e = Expr::new(&[Sym("C_head", 0), Sym("C_body", body), Add]);
    let src = "PyTorch torch.amp.autocast weight-cast cache (cache_enabled=True) over PEFT's fp32 adapters";
    let (k, t, pa) = (c.k, c.t, c.trained);
    let ctx = || format!("C = {k}·Ψ_a/t, the adapters cast; Ψ_a={pa}, t={t}");
    let notes = [
        "autocast bf16 copies of the adapters, forward: the cast cache",
        "autocast bf16 copies of the adapters, forward and backward",
    ];
    push_cast_copies(ledger, !accumulates(s, c.st), &e, notes, ctx, src);
    (0, body)
}

/// PyTorch parameters (`p·Ψ_i/t`, ÷ N_s under FSDP full shard), autocast's bf16 weight
/// cache (forward and backward, without FSDP), gradients (backward and step: freed by
/// `zero_grad`; the whole step under gradient accumulation, see `accumulates`) and
/// DDP's bucket copy of the gradients (N_d > 1, unsharded). Returns the gradient bytes
/// and the copies' split.
pub(crate) fn pytorch_params_grads(c: &StateCtx, l: &Layout, ledger: &mut Ledger) -> StageStates {
    let s = c.s;
    let pb = c.pytorch_param_bytes();
    let ctx = || c.context(Location::Gpu, "");
    let (psym, psi, gpu) = (c.psym(), c.psi, Location::Gpu);
    let e = c.div_expr(pb, psym, psi, c.w_div);
    let (mech, comp) = (Mech::PtWeights, Component::Weights);
    ledger.push_expr(&[], mech, comp, gpu, &e, "", ctx, SRC_PYTORCH);
    let copies = autocast_copies(c, ledger);
    let phases = bwd_step(s, c.st);
    let e = c.div_expr(pb, psym, psi, c.g_div);
    let (mech, comp) = (Mech::PtGradients, Component::Gradients);
    let note = "freed by zero_grad";
    let grads = ledger.push_expr(phases, mech, comp, gpu, &e, note, ctx, SRC_PYTORCH);
    if l.dp.get() > 1 && c.z == Zero::Z0 && s.fsdp() == Fsdp::None {
        let e = c.div_expr(pb, psym, psi, 1);
        let (mech, comp) = (Mech::DdpBuckets, Component::CommBuffers);
        let note = "DDP bucket copy of the gradients";
        let src = "PyTorch DistributedDataParallel Reducer buckets (gradient_as_bucket_view=False, the default)";
        ledger.push_expr(phases, mech, comp, gpu, &e, note, ctx, src);
    }
    StageStates { grads, copies }
}

/// PyTorch optimizer states, and AdamW's foreach temporaries in the step
/// (`torch._foreach_sqrt(v)`: `s_b·Ψ_i/t`, ÷ N_s when sharded).
pub(crate) fn pytorch_optimizer(c: &StateCtx, ledger: &mut Ledger) {
    let (s, opt, precision) = (c.s, c.s.numerics.optimizer, c.s.numerics.precision);
    let (psym, psi, t, div) = (c.psym(), c.psi, c.t, c.o_div);
    let e = optimizer_rank_expr(opt, precision, psym, psi, c.arch, c.st.frac, t, div);
    if e.eval() > 0 {
        let (note, src) = optimizer_state_note(opt);
        let ctx = || c.context(Location::Gpu, "");
        let (mech, comp, gpu) = (
            Mech::PtOptimizerStates,
            Component::OptimizerStates,
            Location::Gpu,
        );
        ledger.push_expr(&[], mech, comp, gpu, &e, note, ctx, src);
    }
    if matches!(s.numerics.optimizer, Optimizer::Adam | Optimizer::Adamw) {
        adam_temporaries(c, ledger);
    }
}

/// The temporaries of PyTorch's Adam/AdamW update, by implementation (`adam_impl`).
///
/// # Formula
/// ```text
/// foreach:  s_b·Ψ_i/(t·N_s)        torch._foreach_sqrt(v) of every parameter at once
/// fused:    0                      one fused kernel, no temporary tensor
/// forloop:  2·s_b·P_max/(t·N_s)    sqrt(v) and its quotient by the bias correction, for
///                                  one parameter at a time (the largest, P_max)
/// ```
/// `s_b` state bytes (4), `P_max` the largest single parameter tensor.
/// Source: PyTorch `torch/optim/adamw.py` (`_multi_tensor_adamw`, `_fused_adamw`,
/// `_single_tensor_adamw`); measured with MemTracker (`tools/measure_pytorch.py
/// --impl-into`): at seq 32 the step is the peak, and the three differ by exactly these.
///
/// # Example
/// Llama-2-7B, fp32 states, one GPU: foreach 4·6,738,415,616 = 26,953,662,464 B; fused 0;
/// for-loop 2·4·131,072,000 (the embedding) = 1,048,576,000 B.
pub(crate) fn adam_temporaries(c: &StateCtx, ledger: &mut Ledger) {
    let sb = c.s.numerics.precision.state_bytes();
    let (e, note, src) = match c.s.numerics.adam_impl {
        AdamImpl::Foreach => (
            c.div_expr(sb, c.psym(), c.psi, c.o_div),
            "foreach sqrt(v) temporaries",
            "PyTorch torch.optim.AdamW foreach implementation (_multi_tensor_adamw: torch._foreach_sqrt)",
        ),
        AdamImpl::Fused => (
            Expr::new(&[Num(0)]),
            "fused kernel: no temporaries",
            "PyTorch torch.optim.AdamW(fused=True) (_fused_adamw)",
        ),
        AdamImpl::Forloop => (
            c.div_expr(2 * sb, "P_max", c.largest.min(c.psi), c.o_div),
            "for-loop: sqrt(v) and the quotient of the largest tensor, P_max = min(L, Ψ)",
            "PyTorch torch.optim.AdamW(foreach=False) (_single_tensor_adamw)",
        ),
    };
    let ctx = || c.context(Location::Gpu, "");
    let (mech, comp, gpu) = (Mech::AdamTemporaries, Component::Workspace, Location::Gpu);
    ledger.push_expr(&[Phase::OptimizerStep], mech, comp, gpu, &e, note, ctx, src);
}
