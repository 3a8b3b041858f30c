//! Activation bytes of one transformer layer: seed 003's and seed 002's closed forms,
//! Korthikanti et al.'s table (with sequence parallelism and recomputation), memfit's
//! term-by-term layer, and operator-level selective checkpointing.

use super::vars::*;
use super::*;

/// memfit's per-block saved activations, term by term, for one micro-batch.
///
/// # Formula
/// Each term is a constant formula of [`vars`](super::vars) (the symbols' table is
/// there), evaluated with the block's values; the ledger prints the same tokens.
/// ```text
/// attention norm + qkv input            2·T·h·k/r + n_s·T + κ·T·h/r         (NORM; autocast: NORM_AC_ATTN,
///                                       4·T·h/r + n_s·T + κ·T·h/r + c_a·T·h·k/r)
/// q, k, v as the kernel reads them      T·(⌈a/t⌉ + 2·⌈a_kv'/t⌉)·d·k          (QKV)
/// attention output (= o_proj input)     T·⌈a/t⌉·d·k                          (ATTN_OUT)
/// flash/sdpa log-sum-exp                4·T·⌈a/t⌉                            (LSE)
/// eager softmax                         b·⌈a/t⌉·s'·s·k  (Megatron, fp32)     (SOFTMAX)
///                                       b·⌈a/t⌉·s'·s·(4 + k)  (HF: fp32 + cast) (SOFTMAX_HF)
/// attention dropout mask + output       b·⌈a/t⌉·s'·s·(1 + k)                 (ATTN_DROPOUT; dropout only)
/// residual dropout masks                T·h/r, twice                         (DROPOUT_MASK; dropout only)
/// MLP norm + first linear input         as the attention norm with c_m       (NORM / NORM_AC_MLP)
/// dense MLP                             m_s·T·⌈f/t⌉·k  (m_s = 4 SwiGLU, 3 fused SwiGLU, 2 GELU)  (MLP)
/// MoE                                   ⌈T·m·(h·k + m_s·f_e·k)/t⌉ + 4·T·E     (MOE: routed copies, expert MLPs,
///                                                                              fp32 router logits)
/// per-head q/k norms (Qwen3, Gemma 3)   T·(⌈a/t⌉ + ⌈a_kv/t⌉)·(d·(k + κ) + n_h)   (QK_NORMS)
/// sandwich post-norms (Gemma 2, 3)      n_p·(T·h·k/r + n_s·T + κ·T·h/r)       (POST_NORMS)
/// Gemma 2 attention soft-capping        b·⌈a/t⌉·s'·s·k  (eager only: the tanh's output)  (SOFTCAP_SCORES)
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
    let mut v = Terms::new(vars(s, arch, x));
    if s.stack.framework == Framework::Pytorch
        && s.activations.recompute == Recompute::Selective
        && arch.mla.is_none()
    {
        op_sac_layer(&mut v);
        return v;
    }
    push_norm(s, &mut v, "attention norm + qkv input", Reader::Attention);
    v.push("q, k, v (as the kernel reads them)", QKV);
    if arch.qk_norm_head {
        v.push("per-head q and k norms", QK_NORMS);
    }
    v.push("attention output", ATTN_OUT);
    attention_core_terms(s, arch, x, &mut v);
    if s.activations.dropout {
        v.push("attention residual dropout mask", DROPOUT_MASK);
    }
    if arch.norms_per_layer > 2 {
        v.push("post-norms (sandwich block)", POST_NORMS);
    }
    push_norm(s, &mut v, MLP_NORM, Reader::Mlp);
    mlp_term(s, arch, &mut v);
    if s.activations.dropout {
        v.push("MLP dropout mask", DROPOUT_MASK);
    }
    v
}

/// The name of the MLP norm's term: the first of the MLP's side of a block
/// (`layer_backward` frees from it on).
pub(crate) const MLP_NORM: &str = "MLP norm + first linear input";

/// The attention core's saved tensors: the log-sum-exp of flash/SDPA, or eager
/// attention's softmax (and its dropout) unless selective recomputation drops them.
fn attention_core_terms(s: &Scenario, arch: &Arch, x: &Shape, v: &mut Terms) {
    let selective = s.activations.recompute == Recompute::Selective;
    match s.activations.attn {
        Attn::Flash | Attn::Sdpa | Attn::Flash1 => v.push("log-sum-exp", LSE),
        Attn::Eager if !selective => {
            // Hugging Face eager attention takes the softmax in fp32 and casts back:
            // the fp32 output (softmax backward) and the cast (input of the V matmul) are
            // both saved. Megatron's fused softmax keeps one 16-bit tensor.
            if s.stack.framework == Framework::Megatron || x.k >= 4 {
                v.push("softmax", SOFTMAX);
            } else {
                v.push("softmax (fp32 softmax + its 16-bit cast)", SOFTMAX_HF);
            }
            if arch.softcap {
                v.push("attention soft-capping (the tanh's output)", SOFTCAP_SCORES);
            }
            if s.activations.dropout {
                v.push("attention dropout mask + output", ATTN_DROPOUT);
            }
        }
        Attn::Eager => {}
    }
}

/// The MLP's saved intermediates: dense (SwiGLU, fused under Megatron, or GELU) or a
/// mixture of experts (routed copies, expert MLPs, fp32 router logits).
fn mlp_term(s: &Scenario, arch: &Arch, v: &mut Terms) {
    if arch.experts > 0 {
        v.push("MoE routed inputs + expert MLPs + router logits", MOE);
        return;
    }
    let name = match arch.mlp {
        Mlp::Swiglu if s.stack.framework == Framework::Megatron => {
            "MLP intermediates (fused SwiGLU: gate‖up, output)"
        }
        Mlp::Swiglu => "MLP intermediates (gate, up, silu(gate), product)",
        Mlp::Gelu if arch.gelu_ops && s.stack.framework != Framework::Megatron => {
            "MLP intermediates (gelu_new in Python ops: fc1 output, tanh, 0.5·x, 1 + tanh, product)"
        }
        Mlp::Gelu => "MLP intermediates (fc1 output, GELU output)",
    };
    v.push(name, MLP);
}

/// Which linears read a norm's output (autocast casts it once per reader).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reader {
    /// q, k, v (`c_a`).
    Attention,
    /// The MLP's first linears (`c_m`).
    Mlp,
    /// The LM head (`c_o = 1`).
    Head,
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
pub(crate) fn push_norm(s: &Scenario, v: &mut Terms, name: &'static str, reader: Reader) {
    let form = match (autocast(s), reader) {
        (false, _) => NORM,
        (true, Reader::Attention) => NORM_AC_ATTN,
        (true, Reader::Mlp) => NORM_AC_MLP,
        (true, Reader::Head) => NORM_AC_OUT,
    };
    v.push(name, form);
}

/// PyTorch selective activation checkpointing as torchtitan applies it ("op" policy):
/// inside each block, the outputs of every other matmul and of the attention kernel are
/// saved, everything else is recomputed in backward.
///
/// # Formula
/// ```text
/// block input                         T·h·k_r/r                            (SAC_INPUT)
/// saved matmuls (1st, 3rd, 5th, 7th)  ⌈T·(a·d + a_kv·d + f_a + h)·k/t⌉    (SAC_MATMULS: q, v, gate, down)
/// attention output + log-sum-exp      ⌈(T·a·d·k + 4·T·a)/t⌉               (SAC_ATTN)
/// ```
/// # Example
/// Llama 3 8B shape (h = 4096, a = 32, a_kv = 8, d = 128, f = 14336), b = 1, s = 4096,
/// autocast bf16 (k_r = 4), t = 1: 4096·4096·4 + 4096·(4096 + 1024 + 14336 + 4096)·2 +
/// (4096·4096·2 + 4·4096·32) = 67,108,864 + 192,937,984 + 34,078,720 = 294,125,568 B.
/// Source: torchtitan `apply_ac` with `selective_ac_option = "op"` (`_save_list`: mm,
/// scaled_dot_product_*_attention; "save every other mm").
pub fn op_sac_layer(v: &mut Terms) {
    v.push("block input", SAC_INPUT);
    v.push("saved matmul outputs (q, v, gate, down)", SAC_MATMULS);
    v.push("attention output + log-sum-exp", SAC_ATTN);
}
