//! Activation memory: what the forward pass saves for the backward pass.
//!
//! memfit's default model counts, per transformer block and micro-batch, every
//! tensor the block's autograd graph keeps — Korthikanti et al.'s Table 2 derivation
//! generalised to GQA, SwiGLU, RMSNorm, fused attention kernels, dropout on/off,
//! mixture-of-experts and context parallelism. The seed formulas and the paper's
//! rows are selectable conventions, reproduced exactly.

use super::megatron::Recompute;
use super::model::{Arch, Bias, Mlp, Norm};
use super::scenario::{Attn, Finetune, Framework, Fsdp, Layout, Scenario, Schedule};

/// Seed 002's arithmetic slip, as memfit explains it next to the seed's convention.
pub const SEED_002_SLIP: &str = "Seed 002's Llama-3 405B example prints M_a = 147,366 GB \
(147,366,233,505,792 bytes), but its own formula (34·b·s·h + 5·b·a·s²)·L gives \
22,313,351,535,132,672 bytes (≈ 22.3 PB): the example used s where the formula has s², \
151× less. memfit evaluates the formula; the per-GPU activation term becomes ≈ 10,895/MB GB, \
not ≈ 71/MB GB.";

/// One named term of a block's saved activations, in bytes per micro-batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Term {
    /// What is stored.
    pub name: &'static str,
    /// The term in symbols.
    pub formula: &'static str,
    /// Bytes.
    pub bytes: u128,
}

/// A block's terms, kept inline (at most [`Terms::CAPACITY`]) so that evaluating a
/// layout allocates nothing. Dereferences to a slice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Terms {
    items: [Term; Terms::CAPACITY],
    len: usize,
}

impl Terms {
    /// The most terms a block has (memfit's eager attention with dropout has 9).
    pub const CAPACITY: usize = 10;
    const EMPTY: Term = Term {
        name: "",
        formula: "",
        bytes: 0,
    };
    fn new() -> Terms {
        Terms {
            items: [Terms::EMPTY; Terms::CAPACITY],
            len: 0,
        }
    }
    fn push(&mut self, t: Term) {
        // The term lists below are fixed; a debug build checks the capacity.
        debug_assert!(self.len < Terms::CAPACITY);
        if self.len < Terms::CAPACITY {
            self.items[self.len] = t;
            self.len += 1;
        }
    }
}

impl<const N: usize> From<[Term; N]> for Terms {
    fn from(v: [Term; N]) -> Terms {
        let mut out = Terms::new();
        for t in v {
            out.push(t);
        }
        out
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
            sl: sq.div_ceil(l.cp.max(1) as u128),
            h: arch.hidden as u128,
            a: arch.heads as u128,
            kv: arch.kv_heads as u128,
            d: arch.head_dim as u128,
            f: arch.ffn as u128,
            t: l.tp.max(1) as u128,
            k: s.numerics.precision.compute_bytes() as u128,
            res: if autocast(s) {
                4
            } else {
                s.numerics.precision.compute_bytes() as u128
            },
        }
    }
}

/// Seed 003's per-layer activations (= seed 002 with k = 2, = Korthikanti's no-parallelism row).
///
/// # Formula
/// ```text
/// A = 34·b·s·h + 5·b·s²·a      bytes per layer (16-bit activations, 1-byte dropout masks)
/// ```
/// # Example
/// Llama-2-7B shape, b = 1, s = 4096: 34·4096·4096 + 5·4096²·32 = 3,254,779,904 B.
pub fn seed003_layer(x: &Shape) -> u128 {
    34 * x.b * x.s * x.h + 5 * x.b * x.s * x.s * x.a
}

/// Seed 002's per-layer activations with `k` bytes per value.
///
/// # Formula
/// ```text
/// A = 16k·b·s·h + 2·b·s·h + 2k·b·a·s² + b·a·s²      (MLP 10k·bsh + bsh; attention 6k·bsh + bsh + 2k·bas² + bas²)
/// ```
/// Source: seed 002 (hepengfei); with k = 2 it is 34bsh + 5bas².
pub fn seed002_layer(x: &Shape) -> u128 {
    16 * x.k * x.b * x.s * x.h
        + 2 * x.b * x.s * x.h
        + 2 * x.k * x.b * x.a * x.s * x.s
        + x.b * x.a * x.s * x.s
}

/// Korthikanti et al. 2022 Table 2, per layer, bytes.
///
/// # Formula
/// ```text
/// no parallelism:         s·b·h·(34 + 5·a·s/h)
/// tensor parallel:        s·b·h·(10 + 24/t + 5·a·s/(h·t))
/// TP + sequence parallel: s·b·h·(34 + 5·a·s/h)/t
/// TP + selective:         s·b·h·(10 + 24/t)
/// TP + SP + selective:    34·s·b·h/t
/// full recompute:         2·s·b·h              (the layer input)
/// ```
/// Returned as a numerator over `2t` to stay exact: bytes = num / den.
pub fn korthikanti_layer(x: &Shape, sp: bool, recompute: Recompute) -> (u128, u128) {
    let (s, b, h, a, t) = (x.s, x.b, x.h, x.a, x.t);
    let sbh = s * b * h;
    let scores = 5 * a * s * s * b;
    match (recompute, sp || t == 1) {
        (Recompute::Full, _) => (2 * sbh, 1),
        (Recompute::Selective, true) => (34 * sbh, t),
        (Recompute::Selective, false) => (10 * t * sbh + 24 * sbh, t),
        (Recompute::None, true) => (34 * sbh + scores, t),
        (Recompute::None, false) => (10 * t * sbh + 24 * sbh + scores, t),
    }
}

/// memfit's per-block saved activations, term by term, for one micro-batch.
///
/// # Formula
/// With `T = b·s'` local tokens, `k` activation bytes, heads per TP rank `a/t`,
/// `a_kv/t`, replicated terms divided by `t` only under sequence parallelism (`r = t` if
/// SP else 1), and `n` the norm statistics (4 B/token RMSNorm rstd, 8 B LayerNorm mean+rstd):
/// ```text
/// attention norm input + qkv input      2·T·h·k/r + n·T
/// q, k, v for the kernel                T·(a + 2·a_kv')·d·k/t   (a_kv' = a_kv with flash, a with sdpa/eager: repeat_kv)
/// attention output (= o_proj input)     T·a·d·k/t
/// flash/sdpa log-sum-exp                4·T·a/t
/// eager softmax                         b·a·s'·s·k/t   [+ mask b·a·s'·s + dropped probs b·a·s'·s·k with dropout]
/// attention dropout mask                T·h/r          (dropout only)
/// MLP norm input + first linear input   2·T·h·k/r + n·T
/// SwiGLU (PyTorch)                      4·T·f·k/t      (gate, up, silu(gate), product)
/// SwiGLU (Megatron fused)               3·T·f·k/t
/// GELU                                  2·T·f·k/t      (fc1 output, GELU output)
/// MoE                                   T·top_k·(h·k + m_s·f_e·k)/t + 4·T·E   (routed copies, expert MLPs, fp32 router logits)
/// MLP dropout mask                      T·h/r          (dropout only)
/// ```
/// Selective recompute drops the eager softmax terms (the attention core is recomputed,
/// Korthikanti et al.); under `framework=pytorch` it is torchtitan's op-level SAC
/// (see `op_sac_layer`).
///
/// Source: Korthikanti et al. 2022 §4.1 (the same derivation; with GELU, f = 4h, eager
/// attention, dropout and LayerNorm it gives their 34·s·b·h + 5·a·s²·b exactly, plus the
/// norm statistics); PyTorch autograd saved tensors of Hugging Face `LlamaDecoderLayer`.
///
/// # Example
/// Llama-2-7B, b = 1, s = 4096, flash, no dropout, bf16, DeepSpeed/HF modules: per layer
/// 2·(2·T·h·2 + 4T + 4·T·h) + 3·T·4096·2 + T·4096·2 + 4·T·32 + 4·T·11008·2 = 763,920,384 B
/// (T = 4096).
pub fn memfit_layer(s: &Scenario, arch: &Arch, x: &Shape) -> Terms {
    let tok = x.b * x.sl;
    let (k, t, h) = (x.k, x.t, x.h);
    let r = if s.parallel.sp { t } else { 1 };
    if s.stack.framework == Framework::Pytorch
        && s.activations.recompute == Recompute::Selective
        && arch.mla.is_none()
    {
        return op_sac_layer(arch, x, r);
    }
    let a_t = x.a.div_ceil(t);
    let kv_heads = match s.activations.attn {
        Attn::Flash => x.kv,
        Attn::Sdpa | Attn::Eager => x.a,
    };
    let kv_t = kv_heads.div_ceil(t);
    let selective = s.activations.recompute == Recompute::Selective;
    let mut v = Terms::from([
        norm_term(
            s,
            arch,
            x,
            "attention norm + qkv input",
            attention_readers(arch),
        ),
        Term {
            name: "q, k, v",
            formula: "T·(a + 2·a_kv')·d·k/t",
            bytes: tok * (a_t + 2 * kv_t) * x.d * k,
        },
        Term {
            name: "attention output",
            formula: "T·a·d·k/t",
            bytes: tok * a_t * x.d * k,
        },
    ]);
    match s.activations.attn {
        Attn::Flash | Attn::Sdpa => v.push(Term {
            name: "log-sum-exp",
            formula: "4·T·a/t",
            bytes: 4 * tok * a_t,
        }),
        Attn::Eager if !selective => {
            // Hugging Face eager attention takes the softmax in fp32 and casts back:
            // the fp32 output (softmax backward) and the cast (input of the V matmul) are
            // both saved. Megatron's fused softmax keeps one 16-bit tensor.
            let (per, formula) = if s.stack.framework == Framework::Megatron || k >= 4 {
                (k, "b·a·s'·s·k/t")
            } else {
                (4 + k, "b·a·s'·s·(4 + k)/t  (fp32 softmax + cast)")
            };
            v.push(Term {
                name: "softmax",
                formula,
                bytes: x.b * a_t * x.sl * x.s * per,
            });
            if s.activations.dropout {
                v.push(Term {
                    name: "attention dropout mask + output",
                    formula: "b·a·s'·s·(1 + k)/t",
                    bytes: x.b * a_t * x.sl * x.s * (1 + k),
                });
            }
        }
        Attn::Eager => {}
    }
    if s.activations.dropout {
        v.push(Term {
            name: "attention residual dropout mask",
            formula: "T·h/r",
            bytes: tok * h / r,
        });
    }
    v.push(norm_term(
        s,
        arch,
        x,
        "MLP norm + first linear input",
        mlp_readers(arch),
    ));
    let swiglu_saved = if s.stack.framework == Framework::Megatron {
        3
    } else {
        4
    };
    if arch.experts > 0 {
        let fe = arch.expert_ffn() as u128;
        let per = match arch.mlp {
            Mlp::Swiglu => swiglu_saved,
            Mlp::Gelu => 2,
        };
        let routed = (arch.top_k + arch.shared_experts) as u128;
        v.push(Term {
            name: "MoE routed inputs + expert MLPs + router logits",
            formula: "T·top_k·(h·k + m_s·f_e·k)/t + 4·T·E",
            bytes: (tok * routed * (h * k + per * fe * k)).div_ceil(t)
                + 4 * tok * arch.experts as u128,
        });
    } else {
        let (per, formula) = match arch.mlp {
            Mlp::Swiglu if s.stack.framework == Framework::Megatron => {
                (3, "3·T·f·k/t  (fused SwiGLU: gate‖up, output)")
            }
            Mlp::Swiglu => (4, "4·T·f·k/t  (gate, up, silu(gate), product)"),
            Mlp::Gelu => (2, "2·T·f·k/t  (fc1 output, GELU output)"),
        };
        v.push(Term {
            name: "MLP intermediates",
            formula,
            bytes: per * tok * x.f.div_ceil(t) * k,
        });
    }
    if s.activations.dropout {
        v.push(Term {
            name: "MLP dropout mask",
            formula: "T·h/r",
            bytes: tok * h / r,
        });
    }
    v
}

/// A norm and the linears that read its output, as a block saves them.
///
/// # Formula
/// ```text
/// 16-bit or fp32 modules:  2·T·h·k/r + n·T [+ 4·T·h/r composite RMSNorm]
///                          (the norm's input; its output, one tensor every reader saves)
/// autocast:                4·T·h/r + n·T [+ 4·T·h/r] + c·T·h·k/r
///                          (the fp32 residual is the norm's input and its output is fp32;
///                           each of the c linears reading it saves its own 16-bit cast)
/// ```
/// `T = b·s'` tokens, `r = t` under sequence parallelism else 1, `n` the statistics (4 B
/// per token RMSNorm rstd, 8 B LayerNorm mean + rstd); composite RMSNorm (Hugging Face
/// `LlamaRMSNorm`, `torch.nn.RMSNorm`) also saves the normalised fp32 `x·rsqrt(mean(x²))`,
/// fused kernels (Megatron/Apex) do not. `c` the readers (`attention_readers`,
/// `mlp_readers`).
/// Source: PyTorch autocast (`cached_cast` caches casts of leaf parameters only, so an
/// activation is cast once per op that reads it); measured with saved-tensor hooks on the
/// blocks of `tools/measure_pytorch.py` (torch 2.15, CPU autocast, bf16).
///
/// # Example
/// Llama shape h = 256, b·s = 2·256, autocast bf16, attention norm (q, k, v separate):
/// 4·512·256 + 4·512 + 4·512·256 + 3·512·256·2 = 1,837,056 B, as measured; without
/// autocast (bf16 modules) 2·512·256·2 + 4·512 + 4·512·256 = 1,050,624 B.
fn norm_term(s: &Scenario, arch: &Arch, x: &Shape, name: &'static str, readers: u128) -> Term {
    let tok = x.b * x.sl;
    let r = if s.parallel.sp { x.t } else { 1 };
    let stats = match arch.norm {
        Norm::Rmsnorm => 4,
        Norm::Layernorm | Norm::LayernormNp => 8,
    };
    let composite = if arch.norm == Norm::Rmsnorm && s.stack.framework != Framework::Megatron {
        4 * tok * x.h / r
    } else {
        0
    };
    let (bytes, formula) = if autocast(s) {
        let casts = readers * tok * x.h * x.k / r;
        let formula = match readers {
            1 => "4·T·h/r + n·T [+ 4·T·h/r composite RMSNorm] + T·h·k/r  (autocast: fp32 residual and norm, one reader's 16-bit cast)",
            2 => "4·T·h/r + n·T [+ 4·T·h/r composite RMSNorm] + 2·T·h·k/r  (autocast: fp32 residual and norm, each of 2 readers' 16-bit cast)",
            _ => "4·T·h/r + n·T [+ 4·T·h/r composite RMSNorm] + 3·T·h·k/r  (autocast: fp32 residual and norm, each of 3 readers' 16-bit cast)",
        };
        (4 * tok * x.h / r + stats * tok + composite + casts, formula)
    } else {
        (
            2 * tok * x.h * x.k / r + stats * tok + composite,
            "2·T·h·k/r + n·T [+ 4·T·h/r composite RMSNorm]",
        )
    };
    Term {
        name,
        formula,
        bytes,
    }
}

/// What a layer holds at the moments inside its PyTorch backward, relative to the
/// whole-layer moment (every saved tensor alive, every gradient written) that `ActPlan`
/// walks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LayerBackward {
    /// Saved bytes of the layer freed before its attention core is differentiated: the
    /// MLP's side and the attention output; eager attention also V and the softmax's
    /// 16-bit cast (`S_f`).
    pub freed: u128,
    /// Eager attention's softmax-backward temporaries (`X`; 0 for fused kernels).
    pub temp: u128,
    /// The layer's parameters whose gradients come last — q, k, v (with biases and q/k
    /// norms) and the attention norm — over the layer's parameters: `(Ψ_qkvn, Ψ_l)`.
    pub grad_part: (u128, u128),
    /// Autocast's copies freed last (q, k, v) over the layer's copied linears:
    /// `(Ψ_qkv, Ψ_attn + Ψ_mlp)` per layer.
    pub copy_part: (u128, u128),
}

impl LayerBackward {
    /// Of a layer's gradient bytes `g` and autocast copy `c`: the gradients written last
    /// (`g·Ψ_qkvn/Ψ_l`) and the copies freed last (`c·Ψ_qkv/(Ψ_attn + Ψ_mlp)`).
    pub fn qkv_parts(&self, g: u128, c: u128) -> (u128, u128) {
        let part = |x: u128, (n, d): (u128, u128)| {
            super::units::mul_div_u128(x, n, d, false)
                .unwrap_or(x)
                .min(x)
        };
        (part(g, self.grad_part), part(c, self.copy_part))
    }
}

/// The moments inside a PyTorch layer's backward. The residual's gradient reaches the MLP
/// first: its gradients are written and its saved tensors freed, then the attention
/// output's linear's; then the attention core is differentiated — eager attention's P·V
/// matmul (∂P, ∂V; its saved V freed) and softmax (∂scores) while q, k and the fp32
/// probabilities are still saved; q, k, v's and the attention norm's gradients come last.
///
/// # Formula
/// ```text
/// S_f = T·a·d·k/t [attention output] + MLP norm + first linear input + MLP intermediates
///       eager: + [q, k, v separate]·T·a'·d·k/t [V] + [k < 4]·b·a·s'·s·k/t [softmax's cast]
/// X   = eager: 2·b·a·s'·s·4/t [∂P and ∂scores, fp32: Hugging Face takes the softmax in
///       fp32] + T·h·res/r [the residual stream's gradient] + T·a'·d·k/t [∂V];  else 0
/// Ψ_qkvn = Ψ_attn/L − (a·d·h + b_o) + n(h)         Ψ_qkv = Ψ_attn/L − (a·d·h + b_o)
/// ```
/// `T = b·s'` tokens, `a' = a` (eager repeats the KV heads), `d` head width, `k` bytes
/// per activation, `res` bytes per residual element (`Shape::res`), `r = t` under
/// sequence parallelism, `n(h)` the norm's parameters. Only PyTorch's standard pre-norm
/// blocks without dropout (two norms a layer, no MLA, no encoder, not op-level selective
/// checkpointing); other blocks keep the whole-layer moment (`None`).
/// Source: PyTorch autograd; Hugging Face `eager_attention_forward`
/// (`softmax(..., dtype=torch.float32).to(query.dtype)`); measured with MemTracker on
/// full-width Llama-2-7B blocks (`tools/measure_pytorch.py --large-into`): fp32 eager,
/// s = 2048, TEMP 1,140,850,688 B = 2·32·2048²·4 + 2·2048·4096·4 and GRAD = the head's +
/// the MLP's + the MLP norm's + o's gradients, exactly; the 16 full-width runs 0.0 %
/// (were −6.1 … +3.1 %).
///
/// # Example
/// Llama-2-7B shape, b = 1, s = 2048, fp32, eager: S_f = 33,554,432·2 + 100,671,488 +
/// 360,710,144 = 528,490,496 B; X = 1,073,741,824 + 33,554,432·2 = 1,140,850,688 B;
/// Ψ_qkvn = 3·4096² + 4096 = 50,335,744 of Ψ_l = 202,383,360.
pub fn layer_backward(s: &Scenario, arch: &Arch, x: &Shape) -> Option<LayerBackward> {
    let standard = arch.mla.is_none() && arch.encoder_layers == 0 && arch.norms_per_layer == 2;
    if s.stack.framework != Framework::Pytorch
        || s.activations.recompute == Recompute::Selective
        || s.activations.dropout
        || !standard
    {
        return None;
    }
    let eager = s.activations.attn == Attn::Eager;
    let (tok, t) = (x.b * x.sl, x.t);
    let r = if s.parallel.sp { t } else { 1 };
    let a_t = x.a.div_ceil(t);
    let probs = x.b * a_t * x.sl * x.s;
    let head_side = tok * a_t * x.d * x.k;
    let terms = memfit_layer(s, arch, x);
    let mlp_side: u128 = terms
        .iter()
        .skip_while(|t| t.name != "MLP norm + first linear input")
        .map(|t| t.bytes)
        .sum();
    let (freed, temp) = if eager {
        let v = if arch.fused_qkv { 0 } else { head_side };
        let cast = if x.k < 4 { probs * x.k } else { 0 };
        let temp = 2 * probs * 4 + tok * x.h * x.res / r + head_side;
        (head_side + v + cast + mlp_side, temp)
    } else {
        (head_side + mlp_side, 0)
    };
    let c = arch.params();
    let layers = arch.layers.max(1) as u128;
    let (h, a, d) = (x.h, x.a, x.d);
    let o = a * d * h + if arch.bias == Bias::All { h } else { 0 };
    let attn = c.attention as u128 / layers;
    let qkv = attn.saturating_sub(o);
    Some(LayerBackward {
        freed,
        temp,
        grad_part: (qkv + arch.norm.params(h), (c.per_layer as u128).max(1)),
        copy_part: (qkv, (attn + c.mlp as u128 / layers).max(1)),
    })
}

/// The linears that read the attention norm's output: q, k and v (3), one fused qkv
/// module (1), or MLA's q_a and kv_a projections (2).
fn attention_readers(arch: &Arch) -> u128 {
    match (arch.mla.is_some(), arch.fused_qkv) {
        (true, _) => 2,
        (false, true) => 1,
        (false, false) => 3,
    }
}

/// The linears that read the MLP norm's output: gate and up (2), one fused gate‖up
/// module or GELU's fc (1); MoE: the router, plus the shared experts' first linears.
fn mlp_readers(arch: &Arch) -> u128 {
    let dense = match arch.mlp {
        Mlp::Swiglu if !arch.fused_gate_up => 2,
        _ => 1,
    };
    if arch.experts == 0 {
        dense
    } else {
        1 + if arch.shared_experts > 0 { dense } else { 0 }
    }
}

/// PyTorch selective activation checkpointing as torchtitan applies it ("op" policy):
/// inside each block, the outputs of every other matmul and of the attention kernel are
/// saved, everything else is recomputed in backward.
///
/// # Formula
/// ```text
/// block input                         T·h·k/r
/// saved matmuls (1st, 3rd, 5th, 7th)  T·(a·d + a_kv·d + f_e + h)·k/t    (q, v, gate, down)
/// attention output + log-sum-exp      T·a·d·k/t + 4·T·a/t
/// ```
/// Source: torchtitan `apply_ac` with `selective_ac_option = "op"` (`_save_list`: mm,
/// scaled_dot_product_*_attention; "save every other mm").
pub fn op_sac_layer(arch: &Arch, x: &Shape, r: u128) -> Terms {
    let tok = x.b * x.sl;
    let (k, t, h) = (x.k, x.t, x.h);
    let f = if arch.experts > 0 {
        arch.active_ffn()
    } else {
        x.f
    };
    Terms::from([
        Term {
            name: "block input",
            formula: "T·h·k'/r  (k' = 4 under autocast: the fp32 residual)",
            bytes: tok * h * x.res / r,
        },
        Term {
            name: "saved matmul outputs (q, v, gate, down)",
            formula: "T·(a·d + a_kv·d + f + h)·k/t",
            bytes: (tok * (x.a * x.d + x.kv * x.d + f + h) * k).div_ceil(t),
        },
        Term {
            name: "attention output + log-sum-exp",
            formula: "T·a·d·k/t + 4·T·a/t",
            bytes: (tok * x.a * x.d * k + 4 * tok * x.a).div_ceil(t),
        },
    ])
}

/// Layers on pipeline stage `i` of `p` (earlier stages take the remainder).
pub fn stage_layers(layers: u32, p: u32, i: u32) -> u32 {
    let p = p.max(1);
    layers / p + u32::from(i < layers % p)
}

/// Model chunks whose activations stage `i` holds at its peak, and the chunks per
/// micro-batch: `(C, v)`; the stage holds `C/v` micro-batches' worth.
///
/// # Formula
/// ```text
/// GPipe:        C = m                                   v = 1
/// 1F1B:         C = min(p − i, m)                       v = 1
/// interleaved:  C = min(2·(p − i − 1) + (v − 1)·p + 1, m·v)     (chunks of L_i/v layers)
/// ```
/// `m` micro-batches per step, `p` stages evaluated (`pp`, capped at the layer count
/// like the stages themselves, so that the last stage holds one micro-batch under
/// 1F1B), `v` = [`Scenario::virtual_stages`]. The interleaved count is Megatron-LM's
/// warm-up (`get_forward_backward_func`: `(p − i − 1)·2 + (v − 1)·p` chunk forwards,
/// capped at `m·v`) plus the steady state's one more forward before a backward frees a
/// chunk. On the first stage with `m > p` it equals Korthikanti et al. §4.2.3's factor
/// `p·(1 + (p − 1)/(p·v))` micro-batches; on later stages it is larger than that factor
/// applied to `p − i` (the last stage still warms up `(v − 1)·p` chunks), which the
/// step timeline's schedule walk showed (`core::timeline`).
///
/// # Example
/// p = 4, v = 2, m = 8: stage 0 holds 11 chunks = 5.5 micro-batches; stage 3 holds
/// 5 chunks = 2.5 (the first-stage factor would have given 1.375).
pub fn in_flight(s: &Scenario, p: u32, i: u32) -> (u128, u128) {
    let p = p.max(1) as u128;
    let i = (i as u128).min(p - 1);
    let m = s.workload.microbatches.get().max(1) as u128;
    match (s.parallel.schedule, s.virtual_stages() as u128) {
        (Schedule::Gpipe, _) => (m, 1),
        (_, 1) => ((p - i).min(m), 1),
        (_, v) => ((2 * (p - i - 1) + (v - 1) * p + 1).min(m * v), v),
    }
}

/// Layers of a stage's model chunk (`L_i/v`, at least 1) and how many of them full
/// recomputation checkpoints: `ckpt_layers` per chunk (0 = all), as Megatron-LM's
/// `recompute_num_layers` counts per virtual pipeline stage.
pub fn chunk_layers(s: &Scenario, stage_layers: u32) -> (u128, u128) {
    let lc = (stage_layers / s.virtual_stages().max(1)).max(1) as u128;
    let n = if s.activations.ckpt_layers == 0 {
        lc
    } else {
        (s.activations.ckpt_layers as u128).min(lc)
    };
    (lc, n)
}

/// Bytes of one block's checkpointed input (what full recompute keeps per layer):
/// `T·h·k'/r`, `k'` the residual stream's bytes (4 under autocast, see [`Shape::res`]).
pub fn layer_input_bytes(s: &Scenario, x: &Shape) -> u128 {
    let r = if s.parallel.sp { x.t } else { 1 };
    x.b * x.sl * x.h * x.res / r
}

/// The last stage's output layer: final norm, LM head input, logits and the loss.
///
/// # Formula
/// ```text
/// PyTorch / DeepSpeed (HF):  2·T·h·k + n·T [+ 4·T·h] + T·V·(k + 4 + 4 + 4)/t   (the final
///                            norm as `norm_term` counts a block's; at the loss's backward: the
///                            logits the caller still holds, the log-softmax output the loss
///                            saved, its gradient and the gradient of its input, all fp32;
///                            the forward's fp32 upcast (k < 4) is already freed: k + 4 + 4 is
///                            the smaller forward moment)
/// Megatron:                  2·T·h·k + 4·T·V/t              (fused vocab-parallel cross entropy, fp32)
/// PyTorch under autocast:    4·T·h + n·T [+ 4·T·h] + T·h·k + T·V·(k + 12)/t   (the final norm
///                            runs in fp32 on the fp32 residual, see `norm_term`; the head
///                            saves its 16-bit cast of the norm's output)
/// ```
/// `T = b·s'` tokens, `V` vocabulary, `t` TP (vocab-parallel head).
/// Source: Hugging Face `LlamaForCausalLM.forward` (`logits.float()` then
/// `CrossEntropyLoss`); Megatron `vocab_parallel_cross_entropy`; measured with MemTracker
/// (`tools/measure_pytorch.py`): fp32 runs hold the fourth `4·T·V` too (before 2026-11-23
/// memfit counted `k + 8` for fp32 and was 6–15 % low on those runs).
///
/// # Example
/// Llama-3-8B under DeepSpeed, b = 1, s = 8192, bf16: 2·8192·4096·2 + 4·8192 + 4·8192·4096 +
/// 8192·128256·14 = 14,977,892,352 B.
pub fn logits_bytes(s: &Scenario, arch: &Arch, x: &Shape) -> (u128, &'static str) {
    let tok = x.b * x.sl;
    let v = arch.vocab as u128;
    match s.stack.framework {
        Framework::Megatron => (
            2 * tok * x.h * x.k + (4 * tok * v).div_ceil(x.t),
            "2·T·h·k + 4·T·V/t",
        ),
        _ if autocast(s) => (
            norm_term(s, arch, x, "final norm + LM head input", 1).bytes
                + (tok * v * (x.k + 12)).div_ceil(x.t),
            "4·T·h + n·T [+ 4·T·h composite RMSNorm] + T·h·k + T·V·(k + 4 + 4 + 4)/t  (autocast: the fp32 final norm and the head's cast input)",
        ),
        _ => (
            norm_term(s, arch, x, "final norm + LM head input", 1).bytes
                + (tok * v * (x.k + 12)).div_ceil(x.t),
            "2·T·h·k + n·T [+ 4·T·h composite RMSNorm] + T·V·(k + 4 + 4 + 4)/t",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::preset;
    use crate::scenario::Scenario;

    fn shape(s: &Scenario) -> Shape {
        Shape::of(s, &s.arch(), &s.layout())
    }

    /// GPT-3 shape with Korthikanti's assumptions (GELU, f = 4h, eager, dropout,
    /// LayerNorm, 16-bit): memfit's terms sum to 34·s·b·h + 5·a·s²·b + the 16·T bytes
    /// of LayerNorm statistics.
    #[test]
    fn memfit_reduces_to_korthikanti() {
        let mut s = Scenario::default();
        s.model.preset = "gpt3-175b".into();
        s.workload.seq = crate::scenario::count(2048);
        s.activations.attn = Attn::Eager;
        s.activations.dropout = true;
        s.stack.framework = Framework::Megatron; // fused 16-bit softmax, as the paper measured
        let arch = preset("gpt3-175b").unwrap().arch.clone();
        let x = shape(&s);
        let total: u128 = memfit_layer(&s, &arch, &x).iter().map(|t| t.bytes).sum();
        let (n, d) = korthikanti_layer(&x, false, Recompute::None);
        assert_eq!(total, n / d + 16 * 2048);
        assert_eq!(n / d, 2_868_903_936);
    }

    #[test]
    fn llama2_7b_flash_layer_by_hand() {
        let s = Scenario::default();
        let arch = s.arch();
        let x = shape(&s);
        let t = 4096u128;
        // Norm inputs + linear inputs 2·T·h·2, rstd 4T and the composite RMSNorm's fp32
        // x·rsqrt 4·T·h (twice); q, k, v 3·T·4096·2; output T·4096·2; lse 4·T·32; SwiGLU 4·T·11008·2.
        let want = 2 * (2 * t * 4096 * 2 + 4 * t + 4 * t * 4096)
            + 3 * t * 4096 * 2
            + t * 4096 * 2
            + 4 * t * 32
            + 4 * t * 11008 * 2;
        assert_eq!(
            memfit_layer(&s, &arch, &x)
                .iter()
                .map(|t| t.bytes)
                .sum::<u128>(),
            want
        );
        assert_eq!(want, 763_920_384);
    }

    /// The blocks of `tools/measure_pytorch.py` under CPU autocast (bf16, fp32
    /// parameters), b = 2, s = 256: the bytes their saved-tensor hooks report per block,
    /// the parameters' bf16 casts left out (torch 2.15; Llama shape 7,294,976 B, GPT-2
    /// shape 4,743,168 B).
    /// The doc example of `logits_bytes`: the final norm counted as a block's norm.
    #[test]
    fn logits_bytes_of_llama_3_8b() {
        let (s, w) = crate::contract::query::decode("model=llama-3-8b&seq=8192&batch=1");
        let s = s.scenario;
        assert!(w.is_empty(), "{w:?}");
        let (t, h) = (8192u128, 4096u128);
        let want = 2 * t * h * 2 + 4 * t + 4 * t * h + t * 128_256 * 14;
        assert_eq!(logits_bytes(&s, &s.arch(), &shape(&s)).0, want);
        assert_eq!(want, 14_977_892_352);
    }

    /// The moments inside a layer's backward for the full-width Llama-2-7B block that
    /// MemTracker measured (`tests/data/pytorch_measurements.json`, "large"), by hand.
    #[test]
    fn layer_backward_of_a_llama_2_7b_block_by_hand() {
        let mut s = Scenario::default();
        s.stack.framework = Framework::Pytorch;
        s.numerics.precision = crate::scenario::Precision::Fp32;
        s.activations.attn = Attn::Eager;
        s.workload.batch = crate::scenario::count(1);
        s.workload.seq = crate::scenario::count(2048);
        s.model.overrides.layers = Some(2);
        let (t, h, a, f) = (2048u128, 4096u128, 32u128, 11008u128);
        let lb = layer_backward(&s, &s.arch(), &shape(&s)).unwrap();
        // The attention output and V (T·h·4 each), the MLP norm (input, output,
        // composite RMSNorm's normalised tensor, rstd) and the four MLP intermediates.
        let mlp_norm = 2 * t * h * 4 + 4 * t + 4 * t * h;
        assert_eq!(lb.freed, 2 * t * h * 4 + mlp_norm + 4 * t * f * 4);
        assert_eq!(lb.freed, 528_490_496);
        // ∂P and ∂scores in fp32, ∂V and the residual's gradient: MemTracker's TEMP.
        assert_eq!(lb.temp, 2 * a * t * t * 4 + 2 * t * h * 4);
        assert_eq!(lb.temp, 1_140_850_688);
        assert_eq!(lb.grad_part, (3 * h * h + h, 4 * h * h + 3 * h * f + 2 * h));
        assert_eq!(lb.copy_part, (3 * h * h, 4 * h * h + 3 * h * f));
        // Measured at the peak: GRAD 1,132,494,848 = the head's 524,304,384 + the layer's
        // less q, k, v's and the attention norm's.
        let layer = 4 * (4 * h * h + 3 * h * f + 2 * h);
        let (g, _) = lb.qkv_parts(layer, 0);
        assert_eq!(524_304_384 + layer - g, 1_132_494_848);
        // Under autocast the softmax's bf16 cast is freed too and the residual is fp32.
        s.numerics.precision = crate::scenario::Precision::Bf16;
        let lb = layer_backward(&s, &s.arch(), &shape(&s)).unwrap();
        assert_eq!(lb.temp, 2 * a * t * t * 4 + t * h * 4 + t * h * 2);
        assert_eq!(lb.temp, 1_124_073_472);
        // Fused kernels: no softmax temporaries; Megatron keeps the whole-layer moment.
        s.activations.attn = Attn::Sdpa;
        assert_eq!(layer_backward(&s, &s.arch(), &shape(&s)).unwrap().temp, 0);
        s.stack.framework = Framework::Megatron;
        assert!(layer_backward(&s, &s.arch(), &shape(&s)).is_none());
    }

    #[test]
    fn autocast_blocks_match_saved_tensor_hooks() {
        let mut s = Scenario::default();
        s.stack.framework = Framework::Pytorch;
        s.numerics.precision = crate::scenario::Precision::Bf16;
        s.activations.attn = Attn::Sdpa;
        s.workload.batch = crate::scenario::count(2);
        s.workload.seq = crate::scenario::count(256);
        s.model.overrides.hidden = Some(256);
        s.model.overrides.heads = Some(8);
        s.model.overrides.kv_heads = Some(2);
        s.model.overrides.ffn = Some(688);
        s.model.overrides.vocab = Some(4096);
        s.model.overrides.layers = Some(4);
        assert!(autocast(&s));
        let sum = |s: &Scenario| -> u128 {
            memfit_layer(s, &s.arch(), &shape(s))
                .iter()
                .map(|t| t.bytes)
                .sum()
        };
        let llama = sum(&s);
        assert_eq!(llama, 7_294_976);
        // The attention norm: fp32 input and normalised tensor, rstd, q/k/v casts.
        let t = memfit_layer(&s, &s.arch(), &shape(&s))[0];
        assert_eq!(
            t.bytes,
            4 * 512 * 256 + 4 * 512 + 4 * 512 * 256 + 3 * 512 * 256 * 2
        );
        assert_eq!(t.bytes, 1_837_056);
        // A checkpointed block keeps its fp32 input.
        assert_eq!(layer_input_bytes(&s, &shape(&s)), 4 * 512 * 256);
        s.model.preset = "gpt2".into();
        s.model.overrides.kv_heads = Some(8);
        s.model.overrides.ffn = Some(1024);
        assert_eq!(sum(&s), 4_743_168);
        // LoRA keeps a 16-bit base: no fp32 residual.
        s.finetune = crate::scenario::Tuning::of(crate::scenario::Finetune::Lora);
        assert!(!autocast(&s));
    }

    #[test]
    fn pipeline_in_flight() {
        let mut s = Scenario::default();
        s.parallel.pp = crate::scenario::count(4);
        s.workload.microbatches = crate::scenario::count(8);
        let l = s.layout();
        assert_eq!(in_flight(&s, l.pp, 0), (4, 1));
        assert_eq!(in_flight(&s, l.pp, 3), (1, 1));
        s.parallel.schedule = Schedule::Gpipe;
        assert_eq!(in_flight(&s, l.pp, 3), (8, 1));
        s.parallel.schedule = Schedule::Interleaved;
        s.parallel.vpp = crate::scenario::count(2);
        // Stage 0: 2·3 + 1·4 + 1 = 11 chunks = 4 · (1 + 3/8) = 5.5 micro-batches
        // (Korthikanti's factor); stage 3: 0 + 4 + 1 = 5 chunks = 2.5.
        assert_eq!(in_flight(&s, l.pp, 0), (11, 2));
        assert_eq!(in_flight(&s, l.pp, 3), (5, 2));
        // m = p: every chunk is warm-up, all 8 micro-batches' chunks are in flight.
        s.workload.microbatches = crate::scenario::count(4);
        assert_eq!(in_flight(&s, l.pp, 0), (8, 2));
        assert_eq!(stage_layers(30, 4, 0), 8);
        assert_eq!(stage_layers(30, 4, 3), 7);
    }
}
