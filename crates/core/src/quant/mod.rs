//! Quantised weights to the byte: every format's layout (codes, scales, zero points,
//! which tensors it leaves in 16 bits), read off the model's tensors one by one.
//!
//! One key, `quant`, names the format. `weight_dtype=int8|int4`, the older spelling,
//! decodes to `quant=int8_g|int4_g`, the same bytes.

pub mod gguf;
pub mod tensors;

use crate::expr::{Expr, Tok::*};
use crate::model::Arch;
use serde::{Deserialize, Serialize};
use tensors::Tensor;

crate::spelled! {
    /// How the weights are stored.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum Quant {
        /// Not quantised: `weight_dtype` (the compute dtype by default).
        #[default]
        None = "none", "none (weight_dtype)", "every weight in `weight_dtype`";
        /// memfit's generic int8: one fp16 scale per `quant_group` weights.
        Int8G = "int8_g", "int8, fp16 group scales", "one fp16 scale per `quant_group` block-linear weights; what `weight_dtype=int8` meant";
        /// memfit's generic int4: one fp16 scale per `quant_group` weights.
        Int4G = "int4_g", "int4, fp16 group scales", "as `int8_g` with 4-bit codes; what `weight_dtype=int4` meant";
        /// FP8 E4M3 weights with one fp32 scale per matrix.
        Fp8 = "fp8", "FP8 (per-tensor scales)", "vLLM `quantization=fp8`, FP8 checkpoints";
        /// INT8 weights with one fp32 scale per output channel.
        W8a8 = "w8a8", "INT8 W8A8 (per-channel)", "compressed-tensors / SmoothQuant int8";
        /// INT4 weights with fp16 group scales and 4-bit zero points.
        W4a16 = "w4a16", "INT4 W4A16 (GPTQ / AWQ)", "group = `quant_group`; scales fp16, zero points packed 4-bit";
        /// bitsandbytes NF4.
        Nf4 = "nf4", "NF4 (bitsandbytes)", "blocks of 64; `double_quant`";
        /// bitsandbytes LLM.int8().
        Int8 = "int8", "LLM.int8() (bitsandbytes)", "int8 codes, one fp32 scale per row";
        /// OCP MXFP4: 32 FP4 values share an E8M0 scale.
        Mxfp4 = "mxfp4", "MXFP4", "gpt-oss: the routed experts only; with weight_dtype=q8_0 the rest in Q8_0, as gpt-oss GGUF files";
        /// NVIDIA NVFP4: 16 FP4 values share an FP8 scale, plus fp32 global scales.
        Nvfp4 = "nvfp4", "NVFP4", "";
        /// GGUF Q4_0.
        Q4_0 = "q4_0", "GGUF Q4_0", "";
        /// GGUF Q4_1.
        Q4_1 = "q4_1", "GGUF Q4_1", "";
        /// GGUF Q5_0.
        Q5_0 = "q5_0", "GGUF Q5_0", "";
        /// GGUF Q5_1.
        Q5_1 = "q5_1", "GGUF Q5_1", "";
        /// GGUF Q8_0.
        Q8_0 = "q8_0", "GGUF Q8_0", "";
        /// GGUF Q2_K.
        Q2K = "q2_k", "GGUF Q2_K", "";
        /// GGUF Q3_K_S.
        Q3KS = "q3_k_s", "GGUF Q3_K_S", "";
        /// GGUF Q3_K_M.
        Q3KM = "q3_k_m", "GGUF Q3_K_M", "";
        /// GGUF Q3_K_L.
        Q3KL = "q3_k_l", "GGUF Q3_K_L", "";
        /// GGUF Q4_K_S.
        Q4KS = "q4_k_s", "GGUF Q4_K_S", "";
        /// GGUF Q4_K_M.
        Q4KM = "q4_k_m", "GGUF Q4_K_M", "";
        /// GGUF Q5_K_S.
        Q5KS = "q5_k_s", "GGUF Q5_K_S", "";
        /// GGUF Q5_K_M.
        Q5KM = "q5_k_m", "GGUF Q5_K_M", "";
        /// GGUF Q6_K.
        Q6K = "q6_k", "GGUF Q6_K", "";
        /// GGUF IQ4_NL.
        Iq4Nl = "iq4_nl", "GGUF IQ4_NL", "";
        /// GGUF IQ4_XS.
        Iq4Xs = "iq4_xs", "GGUF IQ4_XS", "";
    }
}

impl Quant {
    /// The llama.cpp file type, for the GGUF formats.
    pub fn gguf(self) -> Option<gguf::FileType> {
        use gguf::FileType as F;
        Some(match self {
            Quant::Q4_0 => F::Q4_0,
            Quant::Q4_1 => F::Q4_1,
            Quant::Q5_0 => F::Q5_0,
            Quant::Q5_1 => F::Q5_1,
            Quant::Q8_0 => F::Q8_0,
            Quant::Q2K => F::Q2K,
            Quant::Q3KS => F::Q3KS,
            Quant::Q3KM => F::Q3KM,
            Quant::Q3KL => F::Q3KL,
            Quant::Q4KS => F::Q4KS,
            Quant::Q4KM => F::Q4KM,
            Quant::Q5KS => F::Q5KS,
            Quant::Q5KM => F::Q5KM,
            Quant::Q6K => F::Q6K,
            Quant::Iq4Nl => F::IQ4NL,
            Quant::Iq4Xs => F::IQ4XS,
            _ => return None,
        })
    }
    /// Whether the format quantises `t` (the others stay in 16 bits, or f32 in GGUF).
    fn selects(self, t: &Tensor, moe: bool) -> bool {
        match self {
            Quant::None => false,
            Quant::Mxfp4 if moe => t.routed,
            _ => t.role.is_block_linear(),
        }
    }
    /// What the format leaves unquantised, for the ledger.
    pub fn kept(self, moe: bool) -> &'static str {
        match self {
            Quant::None => "",
            Quant::Mxfp4 if moe => {
                "attention, shared experts, router, embedding, head and norms in the compute dtype"
            }
            q if q.gguf().is_some() => {
                "norms, biases and routers in f32; the embedding and head by the file type's rules"
            }
            _ => "embedding, LM head, routers and norms in the compute dtype",
        }
    }
    /// Where the layout comes from.
    pub fn source(self) -> &'static str {
        match self {
            Quant::None => "",
            Quant::Int8G | Quant::Int4G => "group-wise weight quantisation (one fp16 scale per group; embeddings, norms and LM head stay 16-bit)",
            Quant::Fp8 => "vLLM Fp8LinearMethod (model_executor/layers/quantization/fp8.py): fp8 weight, one fp32 weight_scale per logical matrix",
            Quant::W8a8 => "vLLM CompressedTensorsW8A8Int8: int8 weight, fp32 ChannelQuantScaleParameter [out, 1]",
            Quant::W4a16 => "GPTQ / AWQ checkpoints (qweight int32 packing 8 codes, scales fp16 [in/g, out], qzeros int32 packing 8 zeros)",
            Quant::Nf4 => "bitsandbytes Params4bit (blocksize 64; QLoRA §3 double quantisation)",
            Quant::Int8 => "bitsandbytes Int8Params (CB int8 [out, in], SCB fp32 [out])",
            Quant::Mxfp4 => "OCP MX v1.0 (32 E2M1 values + one E8M0 scale = 17 B); gpt-oss's checkpoint quantises the MoE experts",
            Quant::Nvfp4 => "NVIDIA ModelOpt NVFP4 (16 E2M1 values + one E4M3 scale = 9 B; weight_scale_2 and input_scale fp32 per matrix)",
            _ => "llama.cpp ggml-common.h (block sizes) and src/llama-quant.cpp llama_tensor_get_type (per-tensor types)",
        }
    }
}

/// Sums over the quantised tensors that the formats' layouts read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Shares {
    /// `Ψ_q`: elements of the quantised tensors.
    pub elements: u128,
    /// `M`: matrices (each expert counted).
    pub matrices: u128,
    /// `R`: output rows (each expert counted).
    pub rows: u128,
    /// `G`: groups of `g` along each row, `Σ ⌈cols/g⌉·rows`.
    pub groups: u128,
    /// `B`: the format's blocks (16 for NVFP4, 32 for MXFP4) along each row.
    pub blocks: u128,
    /// GGUF: bytes of the quantised tensors by llama.cpp's per-tensor types.
    pub gguf_bytes: u128,
    /// GGUF: bytes of `token_embd` (llama.cpp keeps it in host memory).
    pub gguf_embd: u128,
    /// GGUF: `(type, tensors)` of the mixture, for the ledger's text.
    pub gguf_mix: Vec<(&'static str, u32)>,
    /// Parameters left unquantised.
    pub rest: u128,
}

/// [`Shares`] of `arch` for format `q` with group `g`.
///
/// # Example
/// Llama 3 8B in w4a16 with g = 128: Ψ_q = 6,979,321,856 (the block linears),
/// G = Σ ⌈cols/128⌉·rows = 54,525,952 groups.
pub fn shares(arch: &Arch, q: Quant, g: crate::nonzero::Count) -> Shares {
    shares_in(arch, q, q.gguf(), g)
}

/// [`shares`] of a GGUF file of type `ft` (`None`: not a GGUF file), which [`Quant::gguf`]
/// gives but for gpt-oss's `MXFP4 MoE` files ([`Numerics::gguf`](crate::scenario::Numerics::gguf)).
pub fn shares_in(
    arch: &Arch,
    q: Quant,
    ft: Option<gguf::FileType>,
    g: crate::nonzero::Count,
) -> Shares {
    let (ts, vectors) = tensors::tensors(arch);
    let moe = arch.experts > 0;
    let block = if q == Quant::Nvfp4 { 16 } else { 32 };
    let g = g.get() as u64;
    let mut s = Shares {
        rest: vectors,
        ..Shares::default()
    };
    let types = ft.map(|ft| gguf::tensor_types(ft, arch, &ts));
    for (i, t) in ts.iter().enumerate() {
        let gguf_type = types.as_ref().and_then(|v| v[i]);
        if let Some(ty) = gguf_type {
            let b = ty.row_bytes(t.cols) as u128 * t.rows as u128 * t.n as u128;
            s.gguf_bytes += b;
            if t.role == tensors::Role::TokenEmbd {
                s.gguf_embd = b;
            }
            match s.gguf_mix.iter_mut().find(|(n, _)| *n == ty.name) {
                Some((_, c)) => *c += 1,
                None => s.gguf_mix.push((ty.name, 1)),
            }
            s.elements += t.elements();
        } else if types.is_none() && q.selects(t, moe) {
            let n = t.n as u128;
            s.elements += t.elements();
            s.matrices += n;
            s.rows += t.rows as u128 * n;
            s.groups += t.cols.div_ceil(g) as u128 * t.rows as u128 * n;
            s.blocks += t.cols.div_ceil(block) as u128 * t.rows as u128 * n;
        } else {
            s.rest += t.elements();
        }
    }
    s
}

/// The weights' bytes in format `q` (not `None`, `Int8G`, `Int4G`: see
/// `infer::weight_expr`), `k` bytes per unquantised parameter.
///
/// # Formula
/// ```text
/// fp8:    Ψ_q + 4·M                                  + k·Ψ_r
/// w8a8:   Ψ_q + 4·R                                  + k·Ψ_r
/// int8:   Ψ_q + 4·R                                  + k·Ψ_r     (LLM.int8)
/// w4a16:  ⌈Ψ_q/2⌉ + 2·G + ⌈G/2⌉                      + k·Ψ_r     (codes, fp16 scales, 4-bit zeros)
/// nf4:    ⌈Ψ_q/2⌉ + ⌈Ψ_q/64⌉ + 4·⌈Ψ_q/16384⌉         + k·Ψ_r     (double quantisation; without: ⌈Ψ_q/2⌉ + 4·⌈Ψ_q/64⌉)
/// mxfp4:  17·B₃₂                                     + k·Ψ_r     (B₃₂ blocks of 32 along the rows)
/// nvfp4:  9·B₁₆ + 8·M                                + k·Ψ_r
/// GGUF:   Σ_tensors rows·(cols/B_T)·S_T              + 4·Ψ_r     (type T by llama_tensor_get_type)
/// ```
/// `Ψ_q` quantised weights, `Ψ_r` the rest, `M` matrices, `R` output rows, `G` groups
/// of `g` along the rows (see [`shares`]).
///
/// # Example
/// A 4,096 × 4,096 matrix in w4a16, g = 128: 8,388,608 + 2·131,072 + 65,536 =
/// 8,716,288 B (4.156 bits per weight).
pub fn weights_expr(q: Quant, s: &Shares, k: u64, double_quant: bool) -> Expr {
    let (qe, rest) = (Sym("Ψ_q", s.elements), Sym("Ψ_r", s.rest));
    let kept = |e: Expr| e.then(&[Sym("k", k as u128), rest, Mul, Add]);
    match q {
        Quant::Fp8 => kept(Expr::new(&[qe, Num(4), Sym("M", s.matrices), Mul, Add])),
        Quant::W8a8 | Quant::Int8 => kept(Expr::new(&[qe, Num(4), Sym("R", s.rows), Mul, Add])),
        Quant::W4a16 => {
            let gr = Sym("G", s.groups);
            kept(Expr::new(&[
                qe,
                Num(2),
                DivCeil,
                Num(2),
                gr,
                Mul,
                Add,
                gr,
                Num(2),
                DivCeil,
                Add,
            ]))
        }
        Quant::Nf4 if double_quant => kept(Expr::new(&[
            qe,
            Num(2),
            DivCeil,
            qe,
            Num(64),
            DivCeil,
            Add,
            Num(4),
            qe,
            Num(16_384),
            DivCeil,
            Mul,
            Add,
        ])),
        Quant::Nf4 => kept(Expr::new(&[
            qe,
            Num(2),
            DivCeil,
            Num(4),
            qe,
            Num(64),
            DivCeil,
            Mul,
            Add,
        ])),
        // A GGUF file's MXFP4 (`Shares::gguf_mix` filled) is counted as the other GGUF types.
        Quant::Mxfp4 if s.gguf_mix.is_empty() => {
            kept(Expr::new(&[Num(17), Sym("B₃₂", s.blocks), Mul]))
        }
        Quant::Nvfp4 => kept(Expr::new(&[
            Num(9),
            Sym("B₁₆", s.blocks),
            Mul,
            Num(8),
            Sym("M", s.matrices),
            Mul,
            Add,
        ])),
        _ => Expr::new(&[Sym("W_gguf", s.gguf_bytes), Num(4), rest, Mul, Add]),
    }
}

/// The GGUF mixture as text (`q4_K ×193, q6_K ×33`).
pub fn mix_text(s: &Shares) -> String {
    s.gguf_mix
        .iter()
        .map(|(n, c)| format!("{n} ×{c}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests;
