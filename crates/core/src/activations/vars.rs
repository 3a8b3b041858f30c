//! The symbols of a block's activation formulas and the formulas themselves, as constant
//! token lists ([`crate::expr`]): each term's bytes are its formula evaluated with one
//! block's values ([`vars`]), and its text is the same formula rendered, so the two
//! cannot drift.
//!
//! # Symbols (all integers)
//! | symbol | meaning | unit |
//! |---|---|---|
//! | `T` | local tokens per micro-batch, `b·s'` | tokens |
//! | `b`, `s`, `s'` | micro-batch, sequence, local sequence `⌈s/c⌉` | sequences, tokens |
//! | `h`, `d`, `f` | hidden, head width, FFN width | elements |
//! | `a`, `a_kv` | query heads, KV heads | heads |
//! | `a_kv'` | the KV heads the attention kernel reads: `a_kv` with flash, `a` with sdpa/eager (`repeat_kv`) | heads |
//! | `t`, `r` | TP degree; `r = t` under sequence parallelism, else 1 | ranks |
//! | `k`, `k_r` | bytes per activation element; per residual element (4 under autocast) | B |
//! | `n_s` | norm statistics per token: 4 (RMSNorm rstd), 8 (LayerNorm mean + rstd) | B |
//! | `κ` | a composite RMSNorm's fp32 normalised tensor per element: 4, or 0 (fused kernels, LayerNorm) | B |
//! | `c_a`, `c_m` | the linears that read the attention / MLP norm's output (autocast casts once per reader) | linears |
//! | `m_s` | MLP tensors saved per FFN width: 4 SwiGLU, 3 fused SwiGLU (Megatron), 2 GELU, 5 GPT-2's `gelu_new` in Python ops (its input, tanh's output, 0.5·x, 1 + tanh, the product) | tensors |
//! | `m`, `f_e`, `E` | experts a token visits (top-k + shared), an expert's FFN width, experts | — |
//! | `V` | vocabulary | tokens |
//! | `n_p` | norms of a block beyond its two pre-norms (Gemma 2/3's post-norms: 2) | norms |
//! | `n_h` | a per-head RMSNorm's statistics per head and token | B |
//! | `k_l` | the logits' bytes per element the loop holds after the forward: `k` (`loss=loop`), 0 (`loss=model`) | B |
//! | `u` | an fp32 upcast of 16-bit values: 4 when `k < 4`, else 0 | B |
//! | `c_o` | the final norm's readers (the LM head): 1 | linears |
//! | `f_a` | the FFN width a token's MLP computes (MoE: the active experts'), for op-level SAC | elements |

use super::*;
use crate::expr::Tok::{self, *};

/// The values of the symbols, indexed as the `Var`s below.
pub type Vals = [u128; N_VARS];

/// How many symbols there are.
pub const N_VARS: usize = 32;

/// Local tokens `T = b·s'`.
pub const T: Tok = Var("T", 0);
/// Hidden `h`.
pub const H: Tok = Var("h", 1);
/// Bytes per activation element `k`.
pub const K: Tok = Var("k", 2);
/// TP degree `t`.
pub const TP: Tok = Var("t", 3);
/// The SP divisor `r`.
pub const R: Tok = Var("r", 4);
/// Norm statistics per token `n_s`.
pub const NS: Tok = Var("n_s", 5);
/// Composite RMSNorm's fp32 normalised tensor per element `κ`.
pub const KAPPA: Tok = Var("κ", 6);
/// Query heads `a`.
pub const A: Tok = Var("a", 7);
/// KV heads the kernel reads `a_kv'`.
pub const AKV_K: Tok = Var("a_kv'", 8);
/// Head width `d`.
pub const D: Tok = Var("d", 9);
/// Micro-batch `b`.
pub const B: Tok = Var("b", 10);
/// Local sequence `s'`.
pub const SL: Tok = Var("s'", 11);
/// Sequence `s`.
pub const S: Tok = Var("s", 12);
/// FFN width `f`.
pub const F: Tok = Var("f", 13);
/// Experts a token visits `m`.
pub const M: Tok = Var("m", 14);
/// An expert's FFN width `f_e`.
pub const FE: Tok = Var("f_e", 15);
/// Experts `E`.
pub const E: Tok = Var("E", 16);
/// Bytes per residual element `k_r`.
pub const KR: Tok = Var("k_r", 17);
/// KV heads `a_kv`.
pub const AKV: Tok = Var("a_kv", 18);
/// Readers of the attention norm `c_a`.
pub const CA: Tok = Var("c_a", 19);
/// Readers of the MLP norm `c_m`.
pub const CM: Tok = Var("c_m", 20);
/// MLP tensors saved per FFN width `m_s`.
pub const MS: Tok = Var("m_s", 21);
/// The FFN width a token's MLP computes `f_a`.
pub const FA: Tok = Var("f_a", 22);
/// The final norm's readers (the LM head: 1), `c_o`.
pub const CO: Tok = Var("c_o", 23);
/// Vocabulary `V`.
pub const V: Tok = Var("V", 24);
/// The fp32 upcast of 16-bit values: 4 when `k < 4`, else 0, `u`.
pub const U: Tok = Var("u", 25);
/// Norms of a block beyond the two pre-norms (Gemma's sandwich norms: 2), `n_p`.
pub const NP: Tok = Var("n_p", 26);
/// An RMSNorm's statistics per head and token (per-head q/k norms), `n_h`.
pub const NH: Tok = Var("n_h", 27);
/// The logits' bytes per element the loop holds after the forward: `k` under `loss=loop`,
/// 0 under `loss=model`, `k_l`.
pub const KL: Tok = Var("k_l", 28);

/// The LoRA rank, `r_l` (0 without adapters).
pub const RL: Tok = Var("r_l", 29);
/// Bytes per element a LoRA adapter saves, `k_a`: its linears' 16-bit input cast under
/// autocast (`k`), else the fp32 copy PEFT casts the input to for its fp32 adapters (4).
pub const KA: Tok = Var("k_a", 30);
/// Per-token elements a mixture-of-experts block saves under Hugging Face's grouped experts,
/// `w_x` (see [`moe_saved_width`]).
pub const WX: Tok = Var("w_x", 31);

/// The values of every symbol for one block of `s` on `x`.
///
/// # Example
/// Llama-2-7B, b = 1, s = 4096, bf16, flash, one GPU: T = 4096, h = 4096, k = 2, t = r = 1,
/// n_s = 4, κ = 4, a = a_kv' = 32, d = 128, f = 11008, m_s = 4, c_a = 3, c_m = 2.
pub fn vars(s: &Scenario, arch: &Arch, x: &Shape) -> Vals {
    let megatron = s.stack.framework == Framework::Megatron;
    let mut v = [0u128; N_VARS];
    v[0] = x.b * x.sl;
    v[1] = x.h;
    v[2] = x.k;
    v[3] = x.t;
    v[4] = if s.parallel.sp { x.t } else { 1 };
    v[5] = match arch.norm {
        Norm::Rmsnorm => 4,
        Norm::Layernorm | Norm::LayernormNp => 8,
    };
    v[6] = if arch.norm == Norm::Rmsnorm && !megatron {
        4
    } else {
        0
    };
    v[7] = x.a;
    v[8] = match super::saved_attn(s, arch, x) {
        Attn::Flash => x.kv,
        Attn::Sdpa | Attn::Flash1 | Attn::Eager => x.a,
    };
    v[9] = x.d;
    v[10] = x.b;
    v[11] = x.sl;
    v[12] = x.s;
    v[13] = x.f;
    v[14] = (arch.top_k + arch.shared_experts) as u128;
    v[15] = arch.expert_ffn() as u128;
    v[16] = arch.experts as u128;
    v[17] = x.res;
    v[18] = x.kv;
    v[19] = attention_readers(arch);
    v[20] = mlp_readers(arch);
    v[21] = match arch.mlp {
        Mlp::Swiglu if megatron => 3,
        Mlp::Swiglu => 4,
        Mlp::Gelu if arch.gelu_ops && !megatron && cuda_autocast_pow(s) => 8,
        Mlp::Gelu if arch.gelu_ops && !megatron => 5,
        Mlp::Gelu => 2,
    };
    v[22] = if arch.experts > 0 {
        arch.active_ffn()
    } else {
        x.f
    };
    v[23] = 1;
    v[24] = arch.vocab.get() as u128;
    v[25] = if x.k < 4 { 4 } else { 0 };
    v[26] = (arch.norms_per_layer as u128).saturating_sub(2);
    v[27] = 4;
    v[28] = if held_by_loop(s) { x.k } else { 0 };
    v[29] = match s.finetune {
        crate::scenario::Tuning::Full => 0,
        crate::scenario::Tuning::Lora { rank, .. }
        | crate::scenario::Tuning::Qlora { rank, .. } => rank.get() as u128,
    };
    v[30] = if s.numerics.precision.has_master() {
        x.k
    } else {
        4
    };
    v[31] = moe_saved_width(arch, v[21], v[1]);
    v
}

/// Per-token elements a mixture-of-experts block saves under Hugging Face's grouped experts
/// (`grouped_mm_experts_forward`), `w_x`. Each routed copy saves its gathered input
/// (`selected_hidden_states_g`, the gate‖up grouped matmul's input), the expert MLP's
/// intermediates (`m_s·f_e`: the gate‖up output, `act(gate)`, the product), and the down
/// projection's output `proj_out`, which `proj_out · sample_weights` saves for the routing
/// weights' gradient: `2·h + m_s·f_e`. Shared experts (Qwen2-MoE) are one dense MLP of width
/// `n_e·f_e` (its intermediates) whose output the sigmoid gate's product saves (`h`).
///
/// # Formula
/// ```text
/// w_x = top_k·(2·h + m_s·f_e) + n_e·m_s·f_e + [n_e > 0]·h
/// ```
/// Source: transformers 5.17 `integrations/moe.py` (`grouped_mm_experts_forward`),
/// `modeling_qwen2_moe.py` (`Qwen2MoeSparseMoeBlock.forward`: `sigmoid(shared_expert_gate(x))
/// · shared_expert(x)`); traced with `tools/trace_alloc.py` on the CUDA calibration run C25
/// (OLMoE-1B-7B, b = 4, s = 1,024): at the forward's end each layer holds one
/// `aten.index.Tensor` (the gathered input) and two `aten._grouped_mm` outputs of
/// 134,217,728 B (`32,768·2,048·2`: the gate‖up output and `proj_out`), where memfit counted
/// `h + m_s·f_e` per copy (C25's forward peak −6.6 %, its backward peak −3.1 %).
///
/// # Example
/// OLMoE (h = 2,048, f_e = 1,024, top-8, SwiGLU m_s = 4): 8·(4,096 + 4,096) = 65,536;
/// Qwen1.5-MoE-A2.7B (h = 2,048, f_e = 1,408, top-4, n_e = 4): 4·(4,096 + 5,632) +
/// 4·5,632 + 2,048 = 63,488.
pub(crate) fn moe_saved_width(arch: &Arch, ms: u128, h: u128) -> u128 {
    let (fe, k, ne) = (
        arch.expert_ffn() as u128,
        arch.top_k as u128,
        arch.shared_experts as u128,
    );
    k * (2 * h + ms * fe) + ne * ms * fe + u128::from(ne > 0) * h
}

/// Whether GPT-2's `gelu_new` in Python ops runs its `pow` in fp32: CUDA autocast lists `pow`
/// among the ops it casts to fp32 (CPU autocast does not), and everything after it in the
/// expression is then fp32.
///
/// # Formula
/// ```text
/// saved per element of T·f:  CPU autocast  fc1 out, tanh, 0.5·x, 1 + tanh, product: 5·k = 10 B
///                            CUDA autocast fp32 x (pow's input), fp32 tanh, 0.5·x (k),
///                                          fp32 1 + tanh, c_proj's 16-bit cast of the
///                                          (fp32) product (k): 12 + 2·k = 16 B = m_s·k, m_s = 8
/// ```
/// Source: PyTorch 2.11 `aten/src/ATen/autocast_mode.cpp` (CUDA: `KERNEL_CUDA(pow, fp32)`;
/// the CPU list has no `pow`); transformers `activations.NewGELUActivation`. Found on the
/// CUDA calibration run C01 (GPT-2 medium, bf16 autocast, b = 8, s = 1,024): measured
/// 25.10 GiB against memfit's 20.54 with 5 tensors, a miss of 4.56 GiB; 6 B · 8,192 · 4,096 ·
/// 24 layers = 4.50 GiB.
///
/// # Example
/// GPT-2 medium, f = 4,096, T = 8,192: 8 · 8,192 · 4,096 · 2 = 536,870,912 B per layer.
pub(crate) fn cuda_autocast_pow(s: &Scenario) -> bool {
    s.runtime.device == crate::scenario::Device::Cuda && super::autocast(s)
}

/// A 16-bit (or fp32) norm and its readers' input: its input, its output (one tensor every
/// reader saves), the statistics, the composite RMSNorm's normalised tensor.
#[rustfmt::skip]
pub const NORM: &[Tok] = &[
    Num(2), T, Mul, H, Mul, K, Mul, R, Div, NS, T, Mul, Add, KAPPA, T, Mul, H, Mul, R, Div, Add,
];

/// The same under autocast: the fp32 residual and fp32 output, the statistics, the
/// normalised tensor, and each of the `c` readers' own 16-bit cast.
#[rustfmt::skip]
const fn norm_autocast(c: Tok) -> [Tok; 29] {
    [
        Num(4), T, Mul, H, Mul, R, Div, NS, T, Mul, Add, KAPPA, T, Mul, H, Mul, R, Div, Add, c,
        T, Mul, H, Mul, K, Mul, R, Div, Add,
    ]
}
/// The attention norm under autocast (`c_a` readers).
pub const NORM_AC_ATTN: &[Tok] = &norm_autocast(CA);
/// The MLP norm under autocast (`c_m` readers).
pub const NORM_AC_MLP: &[Tok] = &norm_autocast(CM);
/// The final norm under autocast (the LM head reads it: `c_o = 1`).
pub const NORM_AC_OUT: &[Tok] = &norm_autocast(CO);

/// q, k, v as the attention kernel reads them: `T·(⌈a/t⌉ + 2·⌈a_kv'/t⌉)·d·k`.
#[rustfmt::skip]
pub const QKV: &[Tok] = &[
    T, A, TP, DivCeil, Num(2), AKV_K, TP, DivCeil, Mul, Add, Mul, D, Mul, K, Mul,
];
/// The attention output (`o_proj`'s input): `T·⌈a/t⌉·d·k`.
#[rustfmt::skip]
pub const ATTN_OUT: &[Tok] = &[T, A, TP, DivCeil, Mul, D, Mul, K, Mul];
/// Flash / SDPA's log-sum-exp, fp32: `4·T·⌈a/t⌉`.
#[rustfmt::skip]
pub const LSE: &[Tok] = &[Num(4), T, Mul, A, TP, DivCeil, Mul];
/// A fused q‖k‖v projection's output beyond v, kept alive by the v view the attention kernel
/// saves (q and k are new tensors after RoPE): `T·(⌈a/t⌉ + ⌈a_kv/t⌉)·d·k`.
#[rustfmt::skip]
pub const FUSED_QKV_HELD: &[Tok] = &[
    T, A, TP, DivCeil, AKV, TP, DivCeil, Add, Mul, D, Mul, K, Mul,
];
/// A frozen RMSNorm (composite: the fp32 input and the statistics; its output is saved by no
/// frozen linear): `n_s·T + κ·T·h/r`.
#[rustfmt::skip]
pub const NORM_FROZEN_RMS: &[Tok] = &[NS, T, Mul, KAPPA, T, Mul, H, Mul, R, Div, Add];
/// A frozen LayerNorm (`native_layer_norm` saves its input and the statistics):
/// `T·h·k/r + n_s·T`.
#[rustfmt::skip]
pub const NORM_FROZEN_LN: &[Tok] = &[T, H, Mul, K, Mul, R, Div, NS, T, Mul, Add];
/// A LoRA adapter on an `h`-wide input: its own cast of the input and the rank-wide
/// output of A (B's input): `T·(h + r_l)·k_a`.
#[rustfmt::skip]
pub const ADAPTER_H: &[Tok] = &[T, H, RL, Add, Mul, KA, Mul];
/// A LoRA adapter on `o_proj`: `T·(⌈a/t⌉·d + r_l)·k_a`.
#[rustfmt::skip]
pub const ADAPTER_O: &[Tok] = &[T, A, TP, DivCeil, D, Mul, RL, Add, Mul, KA, Mul];
/// A LoRA adapter on `down_proj`: `T·(⌈f/t⌉ + r_l)·k_a`.
#[rustfmt::skip]
pub const ADAPTER_F: &[Tok] = &[T, F, TP, DivCeil, RL, Add, Mul, KA, Mul];
/// A frozen dense MLP: every intermediate but the last (the down projection's input, which
/// only a trainable weight would need): `(m_s − 1)·T·⌈f/t⌉·k`.
#[rustfmt::skip]
pub const MLP_FROZEN: &[Tok] = &[MS, Num(1), Sub, T, Mul, F, TP, DivCeil, Mul, K, Mul];
/// SDPA's float copy of a boolean mask, saved by the memory-efficient kernel (one per
/// layer, shared by the heads): `b·s'·s·k`.
#[rustfmt::skip]
pub const MASK_BIAS: &[Tok] = &[B, SL, Mul, S, Mul, K, Mul];
/// Eager attention's 16-bit softmax (Megatron's fused kernel, or fp32 activations):
/// `b·⌈a/t⌉·s'·s·k`.
#[rustfmt::skip]
pub const SOFTMAX: &[Tok] = &[B, A, TP, DivCeil, Mul, SL, Mul, S, Mul, K, Mul];
/// Hugging Face eager attention's fp32 softmax and its 16-bit cast: `b·⌈a/t⌉·s'·s·(4 + k)`.
#[rustfmt::skip]
pub const SOFTMAX_HF: &[Tok] = &[
    B, A, TP, DivCeil, Mul, SL, Mul, S, Mul, Num(4), K, Add, Mul,
];
/// Attention dropout's mask and output: `b·⌈a/t⌉·s'·s·(1 + k)`.
#[rustfmt::skip]
pub const ATTN_DROPOUT: &[Tok] = &[
    B, A, TP, DivCeil, Mul, SL, Mul, S, Mul, Num(1), K, Add, Mul,
];
/// A residual dropout mask, one byte per element: `T·h/r`.
#[rustfmt::skip]
pub const DROPOUT_MASK: &[Tok] = &[T, H, Mul, R, Div];
/// A dense MLP's saved intermediates: `m_s·T·⌈f/t⌉·k`.
#[rustfmt::skip]
pub const MLP: &[Tok] = &[MS, T, Mul, F, TP, DivCeil, Mul, K, Mul];
/// A mixture of experts: routed copies, the experts' MLPs, fp32 router logits:
/// `⌈T·m·(h·k + m_s·f_e·k)/t⌉ + 4·T·E`.
#[rustfmt::skip]
pub const MOE: &[Tok] = &[
    T, M, Mul, H, K, Mul, MS, FE, Mul, K, Mul, Add, Mul, TP, DivCeil, Num(4), T, Mul, E, Mul,
    Add,
];
/// A mixture of experts under Hugging Face's grouped experts (framework=pytorch): what each
/// token's routed copies and the shared experts save ([`moe_saved_width`]), fp32 router
/// logits: `⌈T·w_x·k/t⌉ + 4·T·E`.
#[rustfmt::skip]
pub const MOE_HF: &[Tok] = &[T, WX, Mul, K, Mul, TP, DivCeil, Num(4), T, Mul, E, Mul, Add];
/// Op-level SAC's block input: `T·h·k_r/r`.
#[rustfmt::skip]
pub const SAC_INPUT: &[Tok] = &[T, H, Mul, KR, Mul, R, Div];
/// Op-level SAC's saved matmuls (q, v, gate, down): `⌈T·(a·d + a_kv·d + f_a + h)·k/t⌉`.
#[rustfmt::skip]
pub const SAC_MATMULS: &[Tok] = &[
    T, A, D, Mul, AKV, D, Mul, Add, FA, Add, H, Add, Mul, K, Mul, TP, DivCeil,
];
/// Op-level SAC's attention output and log-sum-exp: `⌈(T·a·d·k + 4·T·a)/t⌉`.
#[rustfmt::skip]
pub const SAC_ATTN: &[Tok] = &[
    T, A, Mul, D, Mul, K, Mul, Num(4), T, Mul, A, Mul, Add, TP, DivCeil,
];

/// Seed 003's per-layer activations (= seed 002 with k = 2, = Korthikanti's
/// no-parallelism row), scaled to `k` bytes per value, on the local sequence.
///
/// # Formula
/// ```text
/// A = (34·b·s'·h + 5·b·a·s'·s)·k/2      bytes per layer (1-byte dropout masks)
/// ```
/// Source: seed 003.
///
/// # Example
/// Llama-2-7B shape, b = 1, s = 4096, k = 2: 34·4096·4096 + 5·4096²·32 = 3,254,779,904 B.
#[rustfmt::skip]
pub const SEED003: &[Tok] = &[
    Num(34), B, Mul, SL, Mul, H, Mul, Num(5), B, Mul, A, Mul, SL, Mul, S, Mul, Add, K, Mul,
    Num(2), Div,
];
/// Seed 002's per-layer activations with `k` bytes per value, on the local sequence.
///
/// # Formula
/// ```text
/// A = 16·k·b·s'·h + 2·b·s'·h + 2·k·b·a·s'·s + b·a·s'·s
///     (MLP 10k·bsh + bsh; attention 6k·bsh + bsh + 2k·bas² + bas²)
/// ```
/// Source: seed 002 (hepengfei); with k = 2 and s' = s it is 34bsh + 5bas².
#[rustfmt::skip]
pub const SEED002: &[Tok] = &[
    Num(16), K, Mul, B, Mul, SL, Mul, H, Mul, Num(2), B, Mul, SL, Mul, H, Mul, Add, Num(2), K,
    Mul, B, Mul, A, Mul, SL, Mul, S, Mul, Add, B, A, Mul, SL, Mul, S, Mul, Add,
];
/// Korthikanti et al. Table 2, full recomputation: the layer input `2·s·b·h`.
#[rustfmt::skip]
pub const KORTHIKANTI_FULL: &[Tok] = &[Num(2), S, Mul, B, Mul, H, Mul];
/// Table 2, selective with SP (or t = 1): `34·s·b·h/t`.
#[rustfmt::skip]
pub const KORTHIKANTI_SEL_SP: &[Tok] = &[Num(34), S, Mul, B, Mul, H, Mul, TP, Div];
/// Table 2, selective, TP without SP: `s·b·h·(10·t + 24)/t`.
#[rustfmt::skip]
pub const KORTHIKANTI_SEL: &[Tok] = &[
    S, B, Mul, H, Mul, Num(10), TP, Mul, Num(24), Add, Mul, TP, Div,
];
/// Table 2, no recomputation with SP (or t = 1): `(34·s·b·h + 5·a·s·s·b)/t`.
#[rustfmt::skip]
pub const KORTHIKANTI_SP: &[Tok] = &[
    Num(34), S, Mul, B, Mul, H, Mul, Num(5), A, Mul, S, Mul, S, Mul, B, Mul, Add, TP, Div,
];
/// Table 2, no recomputation, TP without SP: `(s·b·h·(10·t + 24) + 5·a·s·s·b)/t`.
#[rustfmt::skip]
pub const KORTHIKANTI_TP: &[Tok] = &[
    S, B, Mul, H, Mul, Num(10), TP, Mul, Num(24), Add, Mul, Num(5), A, Mul, S, Mul, S, Mul, B,
    Mul, Add, TP, Div,
];

/// Korthikanti et al. 2022 Table 2, per layer, bytes: the row for the layout.
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
/// Each row is evaluated as one integer numerator over `t` (rounded down at the end).
/// Source: Korthikanti et al., "Reducing Activation Recomputation in Large Transformer
/// Models", 2022, Table 2.
///
/// # Example
/// GPT-3 175B (h = 12288, a = 96), s = 2048, b = 1, no parallelism:
/// 34·2048·12288 + 5·96·2048² = 2,868,903,936 B.
pub fn korthikanti_form(x: &Shape, sp: bool, recompute: Recompute) -> &'static [Tok] {
    match (recompute, sp || x.t == 1) {
        (Recompute::Full, _) => KORTHIKANTI_FULL,
        (Recompute::Selective, true) => KORTHIKANTI_SEL_SP,
        (Recompute::Selective, false) => KORTHIKANTI_SEL,
        (Recompute::None, true) => KORTHIKANTI_SP,
        (Recompute::None, false) => KORTHIKANTI_TP,
    }
}

/// Megatron's LM head input, 16-bit: `2·T·h·k`.
#[rustfmt::skip]
pub const HEAD_INPUT_MEGATRON: &[Tok] = &[Num(2), T, Mul, H, Mul, K, Mul];
/// Megatron's fused vocab-parallel cross entropy, fp32 logits: `⌈4·T·V/t⌉`.
#[rustfmt::skip]
pub const LOSS_MEGATRON: &[Tok] = &[Num(4), T, Mul, V, Mul, TP, DivCeil];
/// Transformer Engine's fused cross entropy (`ce_fusion=te`, TE before 2026-07): the
/// kernel writes the gradient over the 16-bit logits and saves them: `⌈k·T·V/t⌉`.
/// Source: TransformerEngine `transformer_engine/pytorch/triton/cross_entropy.py`
/// (`cross_entropy_forward` computed `grad_input` in `_input`'s place until 01bbe3e,
/// 2026-07-09, which made it a separate fp32 tensor).
#[rustfmt::skip]
pub const LOSS_TE: &[Tok] = &[T, V, Mul, K, Mul, TP, DivCeil];
/// flash-attn's cross entropy under plain PyTorch (`ce_fusion=flash`, llm-foundry's
/// `fused_crossentropy`) at its backward: the 16-bit logits it saved and the 16-bit gradient
/// it writes beside them (`inplace_backward=False`): `⌈2·T·V·k/t⌉`.
/// Source: flash-attn `ops/triton/cross_entropy.py` (`CrossEntropyLoss`: saves the logits and
/// the log-sum-exp; `grad_logits = torch.empty_like(logits)` unless `inplace_backward`);
/// llm-foundry v0.3.0 `modeling_mpt.py` (`loss_fn: fused_crossentropy` by default).
#[rustfmt::skip]
pub const LOSS_FLASH: &[Tok] = &[Num(2), T, Mul, V, Mul, K, Mul, TP, DivCeil];
/// flash-attn's cross entropy's forward moment and what it keeps until the backward: the
/// 16-bit logits, `⌈T·V·k/t⌉` (its log-sum-exp is 4 B a token).
#[rustfmt::skip]
pub const LOSS_FLASH_FWD: &[Tok] = &[T, V, Mul, K, Mul, TP, DivCeil];
/// Hugging Face's loss at its backward when the loop holds the logits (`loss=loop`): the
/// logits (`k`), the fp32 log-softmax output the loss saved, its gradient and its input's
/// gradient: `⌈T·V·(k + 12)/t⌉`.
#[rustfmt::skip]
pub const LOSS_HF: &[Tok] = &[T, V, Mul, K, Num(12), Add, Mul, TP, DivCeil];
/// The same when the model computes the loss and the output is dropped before `backward()`
/// (`loss=model`): the log-softmax output, its gradient and the logits' gradient, fp32:
/// `⌈12·T·V/t⌉`.
#[rustfmt::skip]
pub const LOSS_HF_MODEL: &[Tok] = &[Num(12), T, Mul, V, Mul, TP, DivCeil];
/// What the loss's backward holds beyond its forward (logits, fp32 upcast, log-softmax:
/// `k + 8`) under `loss=model`: `⌈(4 − k)·T·V/t⌉` (0 in fp32).
#[rustfmt::skip]
pub const LOSS_EXCESS_MODEL: &[Tok] = &[Num(4), K, Sub, T, Mul, V, Mul, TP, DivCeil];
/// The model output a training loop holds, in the LM head's output dtype: `⌈T·V·k/t⌉`.
#[rustfmt::skip]
pub const HELD_OUTPUT: &[Tok] = &[T, V, Mul, K, Mul, TP, DivCeil];
/// The loss's forward moment: the logits, their fp32 upcast where they are 16-bit and the
/// log-softmax output: `⌈T·V·(k + 4 + u)/t⌉` (`u = 4` when `k < 4`, else 0).
#[rustfmt::skip]
pub const LOSS_FORWARD: &[Tok] = &[T, V, Mul, K, Num(4), Add, U, Add, Mul, TP, DivCeil];
/// The post-norms of a sandwich block (Gemma 2 and 3: after the attention and after the
/// MLP), each saving the fp32 copy of its input it takes first (`x.float()`: the input
/// itself in fp32), its statistics and (composite RMSNorm) its normalised fp32 tensor:
/// `n_p·(4·T·h/r + n_s·T + κ·T·h/r)`. Gemma's norm upcasts a 16-bit input (the o_proj or
/// down_proj output) and saves only the copy; found on the CUDA calibration run C14
/// (Gemma 3 1B, bf16 autocast: `T·h·k` left it 1.7 % low).
#[rustfmt::skip]
pub const POST_NORMS: &[Tok] = &[
    NP, Num(4), T, Mul, H, Mul, R, Div, NS, T, Mul, Add, KAPPA, T, Mul, H, Mul, R, Div, Add, Mul,
];
/// Per-head q and k RMSNorms (Qwen3, Gemma 3), each saving its input (the projection's
/// output), its statistics and its normalised tensor:
/// `T·(⌈a/t⌉ + ⌈a_kv/t⌉)·(d·(k + κ) + n_h)`.
#[rustfmt::skip]
pub const QK_NORMS: &[Tok] = &[
    T, A, TP, DivCeil, AKV, TP, DivCeil, Add, Mul, D, K, KAPPA, Add, Mul, NH, Add, Mul,
];
/// Qwen3-Next's gated attention beyond a plain block with per-head q/k norms
/// ([`QK_NORMS`]): the sigmoid of the gate and the gated product (`o_proj`'s input; the
/// attention output it multiplies stays saved), and in fp32 the gate half of `q_proj`'s
/// output, which q_norm's saved input (a view of it) keeps; in 16 bits q_norm and k_norm
/// save their fp32 copies (`x.float()`) instead of the projections' outputs, `4 − k` more
/// per element: `T·d·(⌈a/t⌉·(2·k + 4 − u) + (⌈a/t⌉ + ⌈a_kv/t⌉)·(4 − k))`. Source:
/// transformers 5.24 `modeling_qwen3_next.Qwen3NextAttention.forward` (`torch.chunk` of
/// `q_proj`'s output, `attn_output * torch.sigmoid(gate)`) and `Qwen3NextRMSNorm.forward`
/// (`self._norm(x.float())`, `output * (1.0 + self.weight.float())`); read off the live
/// tensors of the calibration run `train/qwen3_next/s/fp32/adamw-foreach/sdpa/nockpt/loss=model/b2s256`
/// (`tests/data/hf_ssm_measurements.json`): the attention block held 3,158,016 B beyond
/// q, k, v, the output and the log-sum-exp = `QK_NORMS` (1,585,152) + 3·512·256·4.
#[rustfmt::skip]
pub const ATTN_GATE: &[Tok] = &[
    T, D, Mul, A, TP, DivCeil, Num(2), K, Mul, Num(4), Add, U, Sub, Mul,
    A, TP, DivCeil, AKV, TP, DivCeil, Add, Num(4), K, Sub, Mul, Add, Mul,
];
/// Full-width q and k RMSNorms (OLMo 2, OLMoE), each saving its input's upcast, its
/// normalised tensor and its per-token statistics:
/// `T·(⌈a/t⌉ + ⌈a_kv/t⌉)·d·(k + κ) + 2·n_s·T`.
#[rustfmt::skip]
pub const QK_NORMS_FULL: &[Tok] = &[
    T, A, TP, DivCeil, AKV, TP, DivCeil, Add, Mul, D, Mul, K, KAPPA, Add, Mul, Num(2), NS, Mul, T,
    Mul, Add,
];
/// Gemma 2's attention soft-capping under eager attention: the tanh's output, saved:
/// `b·⌈a/t⌉·s'·s·k`.
#[rustfmt::skip]
pub const SOFTCAP_SCORES: &[Tok] = &[B, A, TP, DivCeil, Mul, SL, Mul, S, Mul, K, Mul];
/// Gemma 2's final-logit soft-capping: the tanh's output, saved through the loss's
/// backward: `⌈T·V·k/t⌉`.
#[rustfmt::skip]
pub const SOFTCAP_LOGITS: &[Tok] = &[T, V, Mul, K, Mul, TP, DivCeil];
/// What the loss keeps after its forward until its backward: the log-softmax output,
/// with the logits too when the loop holds them (`loss=loop`): `⌈T·V·(k_l + 4)/t⌉`, `k_l`
/// the logits' bytes the loop holds (0 under `loss=model`).
#[rustfmt::skip]
pub const LOSS_SAVED: &[Tok] = &[T, V, Mul, KL, Num(4), Add, Mul, TP, DivCeil];
