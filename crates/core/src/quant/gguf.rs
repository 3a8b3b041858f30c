//! llama.cpp's storage: ggml's block types (elements and bytes per block) and the
//! per-tensor type rules of `llama_tensor_get_type` that make a GGUF "file type" such
//! as Q4_K_M a mixture (the head in Q6_K, some `attn_v` and `ffn_down` in Q6_K, the
//! rest in Q4_K).
//!
//! Source: ggml-org/llama.cpp, `ggml/src/ggml-common.h` (block structs),
//! `ggml/src/ggml.c` (`type_traits`), `src/llama-quant.cpp` (`llama_tensor_get_type`,
//! `llama_model_quantize_impl`); see docs/serving.md for the commit read.

use super::tensors::{Role, Tensor};
use crate::model::Arch;

/// A ggml tensor type: `(spelling, elements per block, bytes per block)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GgmlType {
    /// ggml's name (`q4_K`, `f16`, ...).
    pub name: &'static str,
    /// Elements per block (`QK4_0` = 32, `QK_K` = 256, 1 for float types).
    pub block: u64,
    /// Bytes per block (`sizeof(block_q4_K)` = 144, ...).
    pub bytes: u64,
}

macro_rules! ggml {
    ($($id:ident = $name:literal, $block:literal, $bytes:literal;)+) => {
        $(
            #[doc = concat!("`", $name, "`: ", stringify!($bytes), " bytes per ", stringify!($block), " elements.")]
            pub const $id: GgmlType = GgmlType { name: $name, block: $block, bytes: $bytes };
        )+
    };
}

ggml! {
    F32 = "f32", 1, 4;
    F16 = "f16", 1, 2;
    BF16 = "bf16", 1, 2;
    Q4_0 = "q4_0", 32, 18;
    Q4_1 = "q4_1", 32, 20;
    Q5_0 = "q5_0", 32, 22;
    Q5_1 = "q5_1", 32, 24;
    Q8_0 = "q8_0", 32, 34;
    Q2_K = "q2_K", 256, 84;
    Q3_K = "q3_K", 256, 110;
    Q4_K = "q4_K", 256, 144;
    Q5_K = "q5_K", 256, 176;
    Q6_K = "q6_K", 256, 210;
    IQ4_NL = "iq4_nl", 32, 18;
    IQ4_XS = "iq4_xs", 256, 136;
    MXFP4 = "mxfp4", 32, 17;
}

impl GgmlType {
    /// Bytes of one row of `n` elements (`ggml_row_size`): `n / block · bytes`.
    ///
    /// # Formula
    /// `row = n / B · S` (`B` elements and `S` bytes per block); ggml requires `B | n`.
    ///
    /// # Example
    /// A row of 4,096 in q4_K: 4,096 / 256 · 144 = 2,304 B (4.5 bits per weight); in
    /// q8_0: 4,096 / 32 · 34 = 4,352 B (8.5 bits).
    pub fn row_bytes(self, n: u64) -> u64 {
        n / self.block * self.bytes
    }
    /// Whether a row of `n` elements splits into whole blocks.
    pub fn fits_row(self, n: u64) -> bool {
        n.is_multiple_of(self.block)
    }
}

/// llama.cpp's file types (`LLAMA_FTYPE_MOSTLY_*`) memfit models, in the lower-case
/// spelling of `llama-quantize`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileType {
    /// `Q4_0`
    Q4_0,
    /// `Q4_1`
    Q4_1,
    /// `Q5_0`
    Q5_0,
    /// `Q5_1`
    Q5_1,
    /// `Q8_0`
    Q8_0,
    /// `Q2_K`
    Q2K,
    /// `Q3_K_S`
    Q3KS,
    /// `Q3_K_M`
    Q3KM,
    /// `Q3_K_L`
    Q3KL,
    /// `Q4_K_S`
    Q4KS,
    /// `Q4_K_M`
    Q4KM,
    /// `Q5_K_S`
    Q5KS,
    /// `Q5_K_M`
    Q5KM,
    /// `Q6_K`
    Q6K,
    /// `IQ4_NL`
    IQ4NL,
    /// `IQ4_XS`
    IQ4XS,
    /// `MXFP4 MoE` as `convert_hf_to_gguf.py` writes gpt-oss with `--outtype q8_0`
    /// (ggml-org's and LM Studio's files): the routed experts in MXFP4 as the checkpoint
    /// stores them, the other matrices in Q8_0, norms, biases and routers in f32.
    Mxfp4MoeQ8,
    /// gpt-oss's `MXFP4 MoE` files with the rest in 16 bits (Ollama's `gpt-oss` blobs,
    /// unsloth's `F16` files): the routed experts in MXFP4, the other matrices in F16 (or
    /// BF16: the same bytes), norms, biases, sinks and routers in f32 as every GGUF keeps
    /// its 1-D tensors and routers.
    Mxfp4MoeF16,
}

impl FileType {
    /// The type every quantised tensor starts from (`default_type` in
    /// `llama_model_quantize_impl`).
    pub fn default_type(self) -> GgmlType {
        use FileType::*;
        match self {
            Q4_0 => self::Q4_0,
            Q4_1 => self::Q4_1,
            Q5_0 => self::Q5_0,
            Q5_1 => self::Q5_1,
            Q8_0 => self::Q8_0,
            Q2K => self::Q2_K,
            Q3KS | Q3KM | Q3KL => self::Q3_K,
            Q4KS | Q4KM => self::Q4_K,
            Q5KS | Q5KM => self::Q5_K,
            Q6K => self::Q6_K,
            IQ4NL => self::IQ4_NL,
            IQ4XS => self::IQ4_XS,
            Mxfp4MoeQ8 | Mxfp4MoeF16 => self::MXFP4,
        }
    }
}

/// `use_more_bits` of `llama_tensor_get_type`: the first and last eighth of the layers
/// and every third layer between them.
///
/// # Formula
/// `i < n/8  ∨  i ≥ 7n/8  ∨  (i − n/8) mod 3 = 2`   (integer division, C's `%`)
///
/// # Example
/// n = 32: layers 0–3, 6, 9, 12, 15, 18, 21, 24, 27 and 28–31 (16 of 32).
pub fn use_more_bits(i: i64, n: i64) -> bool {
    i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2
}

/// The counters `llama_model_quantize_impl` keeps while it walks the tensors.
#[derive(Default)]
struct Counters {
    /// `i_attention_wv`: `attn_v` tensors typed so far.
    wv: i64,
    /// `i_ffn_down`: `ffn_down` tensors typed so far.
    down: i64,
}

/// The type llama.cpp stores each tensor in for `ft`, `None` for what stays a float
/// (the caller's `F32`/`F16`): 1-D tensors (norms, biases) are never quantised, nor
/// the router (`ffn_gate_inp`).
///
/// # Formula (llama_tensor_get_type, the rules for the file types above)
/// ```text
/// output (or token_embd when the head is tied):  Q8_0 if ne0 % 256 ≠ 0, else Q6_K unless the default is Q8_0
/// attn_v:     Q2_K → n_gqa ≥ 4 ? Q4_K : Q3_K;  Q3_K_M → i_v < 2 ? Q5_K : Q4_K;  Q3_K_L → Q5_K;
///             IQ4_NL/IQ4_XS with n_gqa ≥ 4 → Q5_K;  Q4_K_M/Q5_K_M with use_more_bits(i_v, n_v) → Q6_K;
///             Q4_K_S with i_v < 4 → Q5_K;  then an 80-layer ("70B") model lifts Q3_K/Q4_K to Q5_K,
///             and 8 experts make it Q8_0
/// attn_k:     8 experts → Q8_0
/// ffn_down:   Q2_K → Q3_K;  Q3_K_M → i < L/16 ? Q5_K : Q4_K;  Q3_K_L → Q5_K;
///             Q4_K_M/Q5_K_M with use_more_bits(i, L) → Q6_K;  Q4_K_S with i < L/8 → Q5_K;
///             IQ4_NL/IQ4_XS with i < L/8 → Q5_K (no importance matrix)
///             (i: the tensor's layer; every ffn_down of a layer, experts and shared, counts as it)
/// attn_output: 8 experts: Q2_K/Q3_K_S/Q3_K_M/IQ4_NL/Q4_K_S/Q4_K_M/IQ4_XS → Q5_K;
///             else Q2_K → Q3_K, Q3_K_M → Q4_K, Q3_K_L → Q5_K
/// attn_qkv:   Q3_K_M/Q3_K_L → Q4_K;  Q4_K_M → Q5_K;  Q5_K_M → Q6_K
/// fallback:   a row not a whole number of blocks: Q2_K/Q3_K/IQ4_XS → IQ4_NL, Q4_K → Q5_0,
///             Q5_K → Q5_1, Q6_K → Q8_0; still not whole → F16
/// ```
pub fn tensor_types(ft: FileType, arch: &Arch, tensors: &[Tensor]) -> Vec<Option<GgmlType>> {
    let mut c = Counters::default();
    tensors
        .iter()
        .map(|t| {
            if matches!(t.role, Role::Router | Role::SsmSmall) {
                return None;
            }
            if ft == FileType::Mxfp4MoeQ8 {
                // The converter, not llama-quantize's rules: only two types.
                return Some(if t.routed { MXFP4 } else { Q8_0 });
            }
            if ft == FileType::Mxfp4MoeF16 {
                return Some(if t.routed { MXFP4 } else { F16 });
            }
            let ty = rule(ft, arch, t, &mut c);
            Some(fallback(ty, t.cols))
        })
        .collect()
}

fn rule(ft: FileType, arch: &Arch, t: &Tensor, c: &mut Counters) -> GgmlType {
    use FileType as F;
    let d = ft.default_type();
    let eight = arch.experts == 8;
    match t.role {
        Role::Output | Role::TokenEmbd if t.role == Role::Output || arch.tied => {
            if !t.cols.is_multiple_of(256) {
                Q8_0
            } else if d != Q8_0 {
                Q6_K
            } else {
                d
            }
        }
        Role::AttnV => attn_v(ft, arch, c),
        Role::AttnK if eight => Q8_0,
        Role::FfnDown => ffn_down(ft, arch, t, c),
        Role::AttnOutput if eight => match ft {
            F::Q2K | F::Q3KS | F::Q3KM | F::IQ4NL | F::Q4KS | F::Q4KM | F::IQ4XS => Q5_K,
            _ => d,
        },
        Role::AttnOutput => match ft {
            F::Q2K => Q3_K,
            F::Q3KM => Q4_K,
            F::Q3KL => Q5_K,
            _ => d,
        },
        Role::AttnQkv => match ft {
            F::Q3KM | F::Q3KL => Q4_K,
            F::Q4KM => Q5_K,
            F::Q5KM => Q6_K,
            _ => d,
        },
        _ => d,
    }
}

/// `attn_v`'s type: more bits for the first layers (by file type), for grouped-query
/// models (`n_gqa ≥ 4`), 80-layer models and 8-expert models.
fn attn_v(ft: FileType, arch: &Arch, c: &mut Counters) -> GgmlType {
    use FileType as F;
    let d = ft.default_type();
    let n_gqa = arch.heads.get() / arch.kv_heads.get();
    let n = arch.layers.get() as i64;
    let i = c.wv;
    c.wv += 1;
    let mut ty = match ft {
        F::Q2K => {
            if n_gqa >= 4 {
                Q4_K
            } else {
                Q3_K
            }
        }
        F::Q3KM => {
            if i < 2 {
                Q5_K
            } else {
                Q4_K
            }
        }
        F::Q3KL => Q5_K,
        F::IQ4NL | F::IQ4XS if n_gqa >= 4 => Q5_K,
        F::Q4KM | F::Q5KM if use_more_bits(i, n) => Q6_K,
        F::Q4KS if i < 4 => Q5_K,
        _ => d,
    };
    if arch.layers.get() == 80 && (ty == Q3_K || ty == Q4_K) {
        ty = Q5_K;
    }
    if arch.experts == 8 {
        ty = Q8_0;
    }
    ty
}

/// `ffn_down`'s type: more bits for the first layers, by file type.
fn ffn_down(ft: FileType, arch: &Arch, t: &Tensor, c: &mut Counters) -> GgmlType {
    use FileType as F;
    let d = ft.default_type();
    let n = arch.layers.get() as i64;
    let i = t.layer.map_or(c.down, i64::from);
    c.down += 1;
    match ft {
        F::Q2K => Q3_K,
        F::Q3KM if i < n / 16 => Q5_K,
        F::Q3KM => Q4_K,
        F::Q3KL => Q5_K,
        F::Q4KM | F::Q5KM if use_more_bits(i, n) => Q6_K,
        F::Q4KS if i < n / 8 => Q5_K,
        // Without an importance matrix (memfit models llama-quantize run without
        // --imatrix; imatrix files keep these in the IQ4 type).
        F::IQ4NL | F::IQ4XS if i < n / 8 => Q5_K,
        _ => d,
    }
}

/// The type a tensor falls back to when its rows are not whole blocks of the chosen
/// type (`convert_incompatible_tensor` in `llama_tensor_get_type`).
fn fallback(ty: GgmlType, cols: u64) -> GgmlType {
    if ty.fits_row(cols) {
        return ty;
    }
    let next = match ty {
        Q2_K | Q3_K | IQ4_XS => IQ4_NL,
        Q4_K => Q5_0,
        Q5_K => Q5_1,
        Q6_K => Q8_0,
        other => other,
    };
    if next.fits_row(cols) {
        next
    } else {
        F16
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_per_weight_of_the_block_types() {
        // 8·bytes/block: q4_0 4.5, q8_0 8.5, q4_K 4.5, q6_K 6.5625, iq4_xs 4.25, mxfp4 4.25.
        let bpw = |t: GgmlType| 8.0 * t.bytes as f64 / t.block as f64;
        assert_eq!(bpw(Q4_0), 4.5);
        assert_eq!(bpw(Q8_0), 8.5);
        assert_eq!(bpw(Q4_K), 4.5);
        assert_eq!(bpw(Q6_K), 6.5625);
        assert_eq!(bpw(Q2_K), 2.625);
        assert_eq!(bpw(Q3_K), 3.4375);
        assert_eq!(bpw(Q5_K), 5.5);
        assert_eq!(bpw(IQ4_XS), 4.25);
        assert_eq!(bpw(MXFP4), 4.25);
    }

    #[test]
    fn use_more_bits_for_32_layers() {
        let more: Vec<i64> = (0..32).filter(|&i| use_more_bits(i, 32)).collect();
        assert_eq!(
            more,
            vec![0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31]
        );
    }
}
