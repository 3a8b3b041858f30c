//! Activations of a stage: the per-layer formula, the plan of what the schedule keeps
//! in flight, PyTorch's gradient and embedding backward, context-parallel ring buffers.

use super::*;

/// One block's saved activations per micro-batch under the scenario's convention, as
/// terms whose bytes sum to `A` (see `ActPlan::a`).
///
/// # Formula
/// ```text
/// seed003:      (34·b·s'·h + 5·b·a·s'·s)·k/2          (SEED003)
/// seed002:      16·k·b·s'·h + 2·b·s'·h + 2·k·b·a·s'·s + b·a·s'·s   (SEED002)
/// korthikanti:  Korthikanti et al. 2022 Table 2, the layout's row (korthikanti_form)
/// memfit:       one term per saved tensor (memfit_layer)
/// ```
pub(crate) fn layer_terms(s: &Scenario, arch: &Arch, x: &Shape) -> Terms {
    let form = match s.stack.convention {
        Convention::Seed003 => SEED003,
        Convention::Seed002 => SEED002,
        Convention::Korthikanti => korthikanti_form(x, s.parallel.sp, s.activations.recompute),
        _ => return memfit_layer(s, arch, x),
    };
    let mut v = Terms::new(vars(s, arch, x));
    v.push("a layer", form);
    v
}

/// The formula text of a block's activations (each term rendered from the tokens its
/// bytes were evaluated from, named in brackets) and its symbols' values.
pub(crate) fn layer_activations_text(s: &Scenario, arch: &Arch, x: &Shape) -> Text {
    let terms = layer_terms(s, arch, x);
    let formula = (0..terms.len())
        .map(|i| {
            let e = terms.expr(i).symbols();
            match s.stack.convention {
                Convention::Seed003 | Convention::Seed002 | Convention::Korthikanti => e,
                _ => format!("{e} [{}]", terms[i].name),
            }
        })
        .collect::<Vec<_>>()
        .join(" + ");
    (formula, terms.values())
}

/// The source of a block's activations (`layer_terms`) under the scenario's convention.
pub(crate) fn layer_activations_source(s: &Scenario) -> &'static str {
    match s.stack.convention {
        Convention::Seed003 => SRC_ACT,
        Convention::Seed002 => "seed 002 (hepengfei: per-layer activations with k bytes per value)",
        Convention::Korthikanti => SRC_ACT_TP,
        _ => "memfit: Korthikanti et al. 2022 §4.1 derivation generalised (GQA, SwiGLU, flash, RMSNorm, MoE, CP)",
    }
}

/// What one stage's activations are made of, per model chunk: the bytes a layer
/// saves (`A`), a checkpointed layer's kept input (`I`), chunk layers `L_c`, the
/// checkpointed layers `n` of a chunk, the chunks in flight `C` (see `in_flight`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ActPlan {
    /// Bytes one layer saves for backward (`A`).
    pub a: u128,
    /// Bytes the largest block kind saves (`A_max`: a hybrid's recomputed block; `A`
    /// otherwise), the working set of a checkpointed layer's forward and recompute.
    pub a_max: u128,
    /// Bytes a checkpointed layer keeps (its input, `I`).
    pub input: u128,
    /// Layers per model chunk, `L_c = L_i/v`.
    pub lc: u128,
    /// Checkpointed layers per chunk (0 without full recompute).
    pub n: u128,
    /// Chunks in flight at the stage's peak, `C`.
    pub chunks: u128,
    /// Chunks per micro-batch, `v`.
    pub v: u128,
    /// What a recomputed layer's first norm saves of the kept checkpoint as it is: `I`,
    /// or 0 where a 16-bit composite RMSNorm saves its fp32 upcast instead.
    pub alias: u128,
    /// The moments inside a layer's backward (`layer_backward`; `None`: the whole-layer
    /// moment only).
    pub layer_bwd: Option<LayerBackward>,
}

impl ActPlan {
    /// The plan of stage `st` (Korthikanti's convention counts recomputation inside `A`).
    pub fn of(s: &Scenario, arch: &Arch, l: &Layout, st: &Stage) -> ActPlan {
        let x = Shape::of(s, arch, l);
        let full = s.activations.recompute == Recompute::Full
            && s.stack.convention != Convention::Korthikanti;
        let (lc, n) = chunk_layers(s, st.layers);
        let (chunks, v) = in_flight(s, st.p, st.i);
        // The block's terms once: its bytes, and its backward's moments (memfit's convention).
        let terms = layer_terms(s, arch, &x);
        let a: u128 = terms.iter().map(|t| t.bytes).sum();
        // A hybrid's blocks differ: their average (`activations::ssm::hybrid_block_bytes`),
        // the whole-layer moment only.
        let hybrid = crate::activations::ssm::hybrid_block_bytes(s, arch, &x, a);
        ActPlan {
            a: hybrid.as_ref().map_or(a, |h| h.0),
            a_max: hybrid.as_ref().map_or(a, |h| h.1),
            input: layer_input_bytes(s, &x),
            lc: lc.get() as u128,
            n: if full { n } else { 0 },
            chunks,
            v,
            alias: if arch.norm == Norm::Rmsnorm && x.k < 4 && !autocast(s) {
                0
            } else {
                layer_input_bytes(s, &x)
            },
            layer_bwd: match s.stack.convention {
                Convention::Seed002 | Convention::Seed003 | Convention::Korthikanti => None,
                _ if hybrid.is_some() => None,
                _ => layer_backward_of(s, arch, &x, &terms),
            },
        }
    }
    /// Bytes one chunk of one micro-batch saves: `S_c = n·I + (L_c − n)·A`.
    pub fn chunk_saved(&self) -> u128 {
        self.n * self.input + (self.lc - self.n) * self.a
    }
    /// Whether every layer of a chunk is checkpointed (then its last layer's forward
    /// and its first layer's recomputation hold a layer's working set `A` on top).
    pub fn all_checkpointed(&self) -> bool {
        self.n > 0 && self.n == self.lc
    }
    /// Saved activations at the peak: `S_c·C + [n = L_c]·A_max` (`A_max = A` but in a
    /// hybrid, where the largest block kind's recompute sets the peak).
    pub fn peak(&self) -> u128 {
        self.chunk_saved() * self.chunks
            + if self.all_checkpointed() {
                self.a_max
            } else {
                0
            }
    }
    /// The bytes a checkpointed layer's recomputation adds: its working set `A_max` less its
    /// input where the recomputed first norm saves it as it is (the kept checkpoint, `I`:
    /// fp32 and autocast runs, LayerNorm); a 16-bit composite RMSNorm saves its fp32 upcast
    /// instead (saved-tensor hooks on `LlamaRMSNorm` and `torch.nn.RMSNorm`).
    pub fn recomputed(&self) -> u128 {
        self.a_max - self.alias.min(self.a_max)
    }
}

/// Which of a stage's gradients PyTorch writes before its first layer's backward and
/// which after its last: `(G_head, G_emb)` in bytes, the rest `G − G_head − G_emb` layer
/// by layer (see `ActPlan::pytorch_backward_high_water`).
///
/// # Formula
/// ```text
/// G_head = G·Ψ_head/Ψ_i   last stage: final norm + LM head (+ the tied matrix, whose gradient
///                          the LM head writes first)
/// G_emb  = G·Ψ_emb/Ψ_i    first stage: the embedding (and learned positions), written last
/// FSDP and interleaved pipelines (v > 1): (0, 0), spread over the layers
/// ```
/// Source: PyTorch autograd order (the loss's backward reaches the LM head first, the
/// embedding last); measured with MemTracker: at a bf16 run's backward peak the embedding's
/// gradient is not yet written (`tools/measure_pytorch.py`).
///
/// # Example
/// Llama-2-7B on one GPU, fp32 gradients G = 26,953,662,464 B: G_head = 4·(4096 + 131,072,000)
/// = 524,304,384 B, G_emb = 4·131,072,000 = 524,288,000 B.
pub(crate) fn grad_split(s: &Scenario, arch: &Arch, st: &Stage, grads: u128) -> (u128, u128) {
    // FSDP reduce-scatters per unit (the root's at the end); its walk is not split here.
    if s.virtual_stages().get() > 1 || st.frac.0 == 0 || s.fsdp() != Fsdp::None {
        return (0, 0);
    }
    let c = arch.params();
    let (first, last) = (st.i == 0, st.i + 1 == st.p.get());
    let vh = arch.vocab.get() as u128 * arch.hidden.get() as u128;
    let final_norm = arch.norm.params(arch.hidden.get() as u128);
    let head = if last {
        final_norm + c.lm_head as u128 + if arch.tied { vh } else { 0 }
    } else {
        0
    };
    let emb = if first {
        (c.embedding as u128).saturating_sub(if arch.tied && last { vh } else { 0 })
    } else {
        0
    };
    let (h, e) = (
        grad_share(arch, st, grads, head),
        grad_share(arch, st, grads, emb),
    );
    (h, e.min(grads - h))
}

/// The bytes of `params` parameters' gradients, of the stage's `grads` (`G·Ψ_x/Ψ_i`).
pub(crate) fn grad_share(arch: &Arch, st: &Stage, grads: u128, params: u128) -> u128 {
    let layers = arch.layers.get() as u128;
    mul_div_u128(grads, params.saturating_mul(layers), st.frac.0, false)
        .unwrap_or(0)
        .min(grads)
}

/// A tied embedding's gradient accumulation at the end of PyTorch's first backward: the
/// LM head wrote the tied matrix's gradient first; the embedding's backward produces its
/// own dense gradient of the same shape, and autograd's accumulation allocates their sum
/// before the old one is freed — three `V·h` gradients for a moment, two beyond the one
/// already counted.
///
/// # Formula
/// ```text
/// 2·G_tied = 2·G·V·h/Ψ_i      tied, embedding and head on the one stage, PyTorch without
///                              accumulation (the walked split, `grad_split`); else 0
/// ```
/// Source: PyTorch autograd's `AccumulateGrad` (a new `grad = old + new` when the old
/// gradient cannot be updated in place); measured with MemTracker
/// (`tools/measure_pytorch.py`, GPT-2 shape, AdamW fused: the backward's peak holds three
/// `V·h` fp32 tensors, 12,582,912 B, with the tied gradient not yet in place).
///
/// # Example
/// GPT-2 small, fp32 gradients: 2·4·50,257·768 = 308,779,008 B.
/// Whether autograd adds a tied matrix's second gradient into the first in place, so that
/// the accumulation allocates no sum: on a CUDA device (`AccumulateGrad`: `variable_grad +=
/// new_grad`), the moment then holds the old and the new gradient only, and the new one is
/// freed after it. PyTorch's CPU kernels as MemTracker measured them allocate the sum (see
/// [`tied_accumulation_bytes`]).
///
/// # Formula
/// ```text
/// moment = old + new             device=cuda   (+G_tied beyond the old)
///          old + new + sum       device=cpu    (+2·G_tied)
/// ```
/// Source: PyTorch 2.11 `torch/csrc/autograd/functions/accumulate_grad.h`
/// (`accumulateGrad`: `variable_grad += new_grad` when grad mode is off). Found on the CUDA
/// calibration run C12 (Phi-4-mini, tied, V·h·4 = 2,458,386,432 B, checkpointed):
/// `bw_peak` − `post_bw` = 64,009,865,728 − 61,445,587,968 = 2,564,277,760 B, one `V·h`
/// gradient and the residual's gradient, where memfit's backward held two (+3.7 %).
///
/// # Example
/// C12: the backward's last moment 61,443,457,024 + 50,331,648 (the residual's gradient) +
/// 2,458,386,432 = 63,952,175,104 B against the measured 64,009,865,728 (−0.1 %).
pub(crate) fn tied_sum_in_place(s: &Scenario) -> bool {
    s.runtime.device == crate::scenario::Device::Cuda
}

pub(crate) fn tied_accumulation_bytes(s: &Scenario, arch: &Arch, st: &Stage, grads: u128) -> u128 {
    let walked =
        pytorch_grads(s) && !accumulates(s, st) && grad_split(s, arch, st, grads) != (0, 0);
    if !(arch.tied && st.p.get() == 1 && walked) {
        return 0;
    }
    2 * grad_share(
        arch,
        st,
        grads,
        arch.vocab.get() as u128 * arch.hidden.get() as u128,
    )
}

/// The embedding's backward at the end of PyTorch's first backward: every gradient but
/// the embedding's is written, the embedding's dense gradient is being produced, and the
/// residual stream's gradient that reaches it is still alive.
///
/// # Formula
/// ```text
/// E = G − G_emb + G_tok + R,   R = T·h·res/r    first stage, the walked split
///                                               (`grad_split`); else no such moment
/// ```
/// `G` the stage's gradient bytes, `G_emb` the embedding's (`grad_split`), `G_tok` the token
/// matrix's `G·V·h/Ψ_i` (tied: its second gradient, the accumulation's `new`), `T = b·s'`,
/// `res` bytes per residual element (`Shape::res`), `r = t` under sequence parallelism.
/// Returns `(G_tok, R)`.
/// Source: PyTorch autograd (`embedding_dense_backward` allocates the whole `V·h` gradient);
/// measured with MemTracker on full-width Llama-2-7B blocks, fp32 SGD with sdpa: at the peak
/// GRAD = every gradient but the embedding's and TEMP 557,842,432 B = 4·32000·4096 +
/// 4·2048·4096.
///
/// # Example
/// Llama-2-7B shape, 2 layers, b = 1, s = 2048, fp32: G_tok = 524,288,000 B, R =
/// 33,554,432 B, E = 2,667,659,264 − 524,288,000 + 524,288,000 + 33,554,432 =
/// 2,701,213,696 B.
pub(crate) fn embedding_backward(
    s: &Scenario,
    arch: &Arch,
    x: &Shape,
    st: &Stage,
    grads: u128,
) -> Option<(u128, u128)> {
    if st.i != 0 || grad_split(s, arch, st, grads) == (0, 0) {
        return None;
    }
    let r = if s.parallel.sp { x.t } else { 1 };
    let g_tok = grad_share(
        arch,
        st,
        grads,
        arch.vocab.get() as u128 * arch.hidden.get() as u128,
    );
    Some((g_tok, x.b * x.sl * x.h * x.res / r))
}

/// Activations for one pipeline stage under the scenario's convention, where the
/// gradients are resident (not PyTorch's first backward, which the step program walks
/// moment by moment): the explorer's fast path, and the text of the activations item.
///
/// # Formula
/// ```text
/// saved at the peak:  S_c·C + [n = L_c]·A        S_c = n·I + (L_c − n)·A
/// output layer (last stage): logits_bytes · (m under GPipe, else 1)
/// ```
/// `A` from `layer_terms` (memfit's terms by default, seed 003, seed 002 or
/// Korthikanti's Table 2, which counts full recompute as `2sbh` per layer without the
/// working set); `I` the block input; `C` chunks in flight of `L_c = L_i/v` layers
/// (`in_flight`, `chunk_layers`); `n` checkpointed layers per chunk (full recompute;
/// `ckpt_layers`, 0 = all). A layer's working set `A` comes on top of the saved ones
/// only when the chunk's last layer is itself checkpointed (`n = L_c`): then its
/// forward and its recomputation in backward hold `A` while every other layer's
/// checkpoint is still kept; with `n < L_c` the non-checkpointed layers' `A` is the
/// larger moment. The step program (`program::walk`) reaches these bytes at the forward's
/// and the backward's high-water moments (property-tested); PyTorch without gradient
/// accumulation is the program's alone.
///
/// # Example
/// Llama-2-7B, b = 1, s = 4096, flash, DeepSpeed, no recompute, one stage:
/// 32 · 763,920,384 = 24,445,452,288 B.
pub(crate) fn activation_items(
    s: &Scenario,
    arch: &Arch,
    l: &Layout,
    st: &Stage,
    states: StageStates,
    ledger: &mut Ledger,
) {
    let x = Shape::of(s, arch, l);
    let plan = ActPlan::of(s, arch, l, st);
    ledger.push_in(
        &FWD_BWD,
        Mech::Activations,
        Component::Activations,
        Location::Gpu,
        plan.peak().min(u64::MAX as u128) as u64,
        || activations_text(s, arch, l, &plan),
        layer_activations_source(s),
    );
    if st.i + 1 == st.p.get() {
        logits_item(s, arch, &x, st, states.copies, ledger);
    }
}

/// The torch fallback's scan transient of the Mamba block running (forward and backward),
/// on top of the saved activations: `activations::ssm::mamba_transient` in the forward (`4·E`
/// for Mamba, Mamba-2's chunk-scan tensors; 0 with the fused kernels) and
/// `activations::ssm::mamba_backward_transient` in the backward (Mamba: `16·E`, four fp32
/// gradient buffers; measured, `tests/data/hf_ssm_measurements.json`).
///
/// # Example
/// Mamba-130M, b = 8, s = 1,024, ssm_kernels=torch: 805,306,368 B.
pub(crate) fn scan_transient_item(s: &Scenario, arch: &Arch, l: &Layout, ledger: &mut Ledger) {
    let Some(m) = arch.ssm_shape() else {
        return;
    };
    let x = Shape::of(s, arch, l);
    let bytes = crate::activations::ssm::mamba_transient(s, &x, &m);
    if bytes == 0 {
        return;
    }
    // Mamba-1's backward holds four E-sized fp32 buffers (`mamba_backward_transient`); a
    // checkpointed Mamba-2 block's recompute, the chunk scan's locals at its return
    // (`mamba2_recompute_transient`).
    let recompute = if s.activations.recompute == crate::scenario::Recompute::Full {
        let a: u128 = layer_terms(s, arch, &x).iter().map(|t| t.bytes).sum();
        let a_max = crate::activations::ssm::hybrid_block_bytes(s, arch, &x, a).map_or(a, |h| h.1);
        crate::activations::ssm::mamba2_recompute_transient(s, &x, &m, a_max)
    } else {
        0
    };
    // Mamba-1's buffers appear inside the mixer's backward, after the block's MLP half has
    // run its backward and freed its saved tensors (`mamba_block_mlp`).
    let m1 = crate::activations::ssm::mamba_backward_transient(s, &x, &m)
        .saturating_sub(crate::activations::ssm::mamba_block_mlp(s, arch, &x));
    let bwd = m1.max(bytes).max(recompute);
    let note = "the Mamba block running: the torch fallback's scan transient";
    let ctx = || {
        format!(
            "ssm_kernels={}: Mamba 4·b·d·s'·N (deltaB_u) in the forward, 16·b·d·s'·N (four fp32 gradient buffers) in the backward; Mamba-2 b·H·s_pad·l·4 (einsum) or b·s_pad·l·H·max(N, P)·4 (G_intermediate, ≤ 5.17); a checkpointed Mamba-2 block's recompute in the backward: the chunk scan's locals at its return, max(0, b·H·4·(s_pad·(6P + N) + (c + 2)·P·N) − T·d·(16 + [k < 4]·k))",
            s.runtime.ssm_kernels.as_str()
        )
    };
    let src = "transformers 5.24 modeling_mamba.mamba_selective_scan / modeling_mamba2.mamba2_chunk_scan, 4.57.6 Mamba2Mixer.torch_forward (research notes ssm-memory.md §2b; Mamba's backward buffers measured: tests/data/hf_ssm_measurements.json)";
    let (mech, comp, gpu) = (Mech::ScanTransient, Component::Workspace, Location::Gpu);
    for (phase, v) in [(Phase::Forward, bytes), (Phase::Backward, bwd)] {
        let e = Expr::new(&[Sym("X_scan", v)]);
        ledger.push_expr(&[phase], mech, comp, gpu, &e, note, ctx, src);
    }
}

/// The activations item's formula and values (the plan of `activation_items`).
pub(crate) fn activations_text(s: &Scenario, arch: &Arch, l: &Layout, plan: &ActPlan) -> Text {
    let x = Shape::of(s, arch, l);
    let (formula, values) = layer_activations_text(s, arch, &x);
    let t: u128 = layer_terms(s, arch, &x).iter().map(|t| t.bytes).sum();
    let values = match crate::activations::ssm::hybrid_block_bytes(s, arch, &x, t) {
        Some((_, _, h)) => format!("{h}; A_t: {values}"),
        None => values,
    };
    let m_i = plan.chunks as f64 / plan.v as f64;
    (
        if plan.n > 0 {
            format!(
                "(n·I + (L_c − n)·A)·C{};  A = {formula}",
                match (plan.all_checkpointed(), plan.a_max > plan.a) {
                    (true, true) => " + A_max",
                    (true, false) => " + A",
                    _ => "",
                }
            )
        } else {
            format!("A·L_c·C;  A = {formula}")
        },
        format!(
            "A={} B/layer, I={}, L_c={}, n={}, C={} chunks (m_i={:.3}); {values}; c={}, attn={}, recompute={}, sp={}",
            plan.a, plan.input, plan.lc, plan.n, plan.chunks, m_i, l.cp,
            s.activations.attn.as_str(), s.activations.recompute.as_str(), s.parallel.sp as u8
        ),
    )
}

/// The activations' source under the scenario's convention.
pub(crate) fn activations_source(s: &Scenario) -> &'static str {
    layer_activations_source(s)
}

/// Ring attention passes K/V chunks between the CP ranks, double-buffered.
///
/// # Formula
/// ```text
/// 2·2·b·s'·⌈a_kv/t⌉·d·k      (forward and backward; c > 1 only)
/// ```
/// Source: ring attention (Liu et al. 2023); Megatron-core / torchtitan CP.
pub(crate) fn cp_ring_buffers(s: &Scenario, arch: &Arch, l: &Layout, ledger: &mut Ledger) {
    if l.cp.get() <= 1 {
        return;
    }
    let x = Shape::of(s, arch, l);
    let e = Expr::new(&[
        Num(2),
        Num(2),
        Mul,
        Sym("b", x.b),
        Mul,
        Sym("s'", x.sl),
        Mul,
    ]);
    let e = e.then(&[
        Sym("a_kv", x.kv),
        Sym("t", x.t),
        DivCeil,
        Mul,
        Sym("d", x.d),
        Mul,
    ]);
    let e = e.then(&[Sym("k", x.k), Mul]);
    let note = "double-buffered K and V chunks";
    let ctx = || format!("s' = s/c, c={}", l.cp);
    let src = "ring attention context parallelism (Liu et al. 2023; Megatron-core / torchtitan CP): K/V chunks exchanged per step";
    let (mech, comp, gpu) = (Mech::CpRing, Component::CommBuffers, Location::Gpu);
    ledger.push_expr(&FWD_BWD, mech, comp, gpu, &e, note, ctx, src);
}
