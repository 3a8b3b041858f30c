//! Activation bytes of one transformer layer: seed 003's and seed 002's closed forms,
//! Korthikanti et al.'s table (with sequence parallelism and recomputation), memfit's
//! term-by-term layer, and operator-level selective checkpointing.

use super::*;

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
    attention_core_terms(s, x, &mut v);
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
    v.push(mlp_term(s, arch, x));
    if s.activations.dropout {
        v.push(Term {
            name: "MLP dropout mask",
            formula: "T·h/r",
            bytes: tok * h / r,
        });
    }
    v
}

/// The attention core's saved tensors: the log-sum-exp of flash/SDPA, or eager
/// attention's softmax (and its dropout) unless selective recomputation drops them.
fn attention_core_terms(s: &Scenario, x: &Shape, v: &mut Terms) {
    let (tok, k, a_t) = (x.b * x.sl, x.k, x.a.div_ceil(x.t));
    let selective = s.activations.recompute == Recompute::Selective;
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
}

/// The MLP's saved intermediates: dense (SwiGLU, fused under Megatron, or GELU) or a
/// mixture of experts (routed copies, expert MLPs, fp32 router logits).
fn mlp_term(s: &Scenario, arch: &Arch, x: &Shape) -> Term {
    let (tok, k, t, h) = (x.b * x.sl, x.k, x.t, x.h);
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
        Term {
            name: "MoE routed inputs + expert MLPs + router logits",
            formula: "T·top_k·(h·k + m_s·f_e·k)/t + 4·T·E",
            bytes: (tok * routed * (h * k + per * fe * k)).div_ceil(t)
                + 4 * tok * arch.experts as u128,
        }
    } else {
        let (per, formula) = match arch.mlp {
            Mlp::Swiglu if s.stack.framework == Framework::Megatron => {
                (3, "3·T·f·k/t  (fused SwiGLU: gate‖up, output)")
            }
            Mlp::Swiglu => (4, "4·T·f·k/t  (gate, up, silu(gate), product)"),
            Mlp::Gelu => (2, "2·T·f·k/t  (fc1 output, GELU output)"),
        };
        Term {
            name: "MLP intermediates",
            formula,
            bytes: per * tok * x.f.div_ceil(t) * k,
        }
    }
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
pub(crate) fn norm_term(
    s: &Scenario,
    arch: &Arch,
    x: &Shape,
    name: &'static str,
    readers: u128,
) -> Term {
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
