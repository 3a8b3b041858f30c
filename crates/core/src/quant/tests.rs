use super::tensors::Role;
use super::*;
use crate::model::preset;

fn bytes(model: &str, q: Quant) -> u128 {
    let a = &preset(model).unwrap().arch;
    let s = shares(a, q, crate::nonzero::count(128));
    weights_expr(q, &s, 2, true).eval() as u128
}

/// Llama 3 8B in Q4_K_M, tensor by tensor (rows · blocks per row · bytes per block):
/// q4_K rows of 4,096 = 16·144 = 2,304 B, q6_K = 16·210 = 3,360 B; `ffn_down` rows of
/// 14,336 = 56 blocks (8,064 B in q4_K, 11,760 B in q6_K). `attn_v` and `ffn_down` are
/// q6_K on the 16 layers `use_more_bits` picks, the head is q6_K, norms f32.
#[test]
fn llama_3_8b_q4_k_m_by_hand() {
    let (q, k, v4, v6) = (4096 * 2304, 1024 * 2304, 1024 * 2304, 1024 * 3360);
    let (gu, d4, d6) = (14_336 * 2304, 4096 * 8064, 4096 * 11_760);
    let (emb, out) = (128_256 * 2304, 128_256 * 3360);
    let norms = (2 * 32 + 1) * 4096 * 4;
    let want: u128 =
        emb + out + 32 * (2 * q + k + 2 * gu) + 16 * (v6 + d6) + 16 * (v4 + d4) + norms;
    assert_eq!(want, 4_912_898_048);
    assert_eq!(bytes("llama-3-8b", Quant::Q4KM), want);
    // llama.cpp prints "model size = 4.58 GiB (4.89 BPW)" for this file.
    let gib = want as f64 / (1u64 << 30) as f64;
    assert_eq!(format!("{gib:.2}"), "4.58");
    let bpw = want as f64 * 8.0 / 8_030_261_248.0;
    assert_eq!(format!("{bpw:.2}"), "4.89");
}

/// A format's bytes per weight, from its layout, on one 4,096 × 4,096 block linear.
#[test]
fn bytes_per_weight_by_hand() {
    let s = Shares {
        elements: 4096 * 4096,
        matrices: 1,
        rows: 4096,
        groups: 4096 * 32,
        blocks: 4096 * 4096 / 32,
        ..Shares::default()
    };
    let e = 4096u64 * 4096;
    let w = |q| weights_expr(q, &s, 2, true).eval();
    assert_eq!(w(Quant::Fp8), e + 4);
    assert_eq!(w(Quant::W8a8), e + 4 * 4096);
    assert_eq!(w(Quant::Int8), e + 4 * 4096);
    // codes 4 bits, an fp16 scale and a 4-bit zero per 128: 4 + 16/128 + 4/128 = 4.15625 bits.
    assert_eq!(w(Quant::W4a16), e / 2 + 2 * 131_072 + 65_536);
    assert_eq!(w(Quant::W4a16) * 8 * 128, e * (4 * 128 + 16 + 4));
    // NF4 with double quantisation: 4 + 8/64 + 32/16384 bits.
    assert_eq!(w(Quant::Nf4), e / 2 + e / 64 + 4 * (e / 16_384));
    // MXFP4: 17 B per 32 = 4.25 bits.
    assert_eq!(w(Quant::Mxfp4) * 32, e * 17);
    let s16 = Shares {
        blocks: 4096 * 4096 / 16,
        ..s.clone()
    };
    // NVFP4: 9 B per 16 = 4.5 bits, plus two fp32 global scales.
    assert_eq!(
        weights_expr(Quant::Nvfp4, &s16, 2, true).eval(),
        e * 9 / 16 + 8
    );
}

/// gpt-oss's MXFP4 leaves everything but the routed experts in 16 bits.
#[test]
fn mxfp4_quantises_only_the_experts_of_a_mixture() {
    let a = &preset("gpt-oss-20b").unwrap().arch;
    let s = shares(a, Quant::Mxfp4, crate::nonzero::count(32));
    assert_eq!(s.elements, a.routed_expert_params() as u128);
    assert_eq!(s.elements + s.rest, a.params().total as u128);
    // Every expert row is a whole number of 32-blocks (2,880 = 90·32).
    assert_eq!(s.blocks * 32, s.elements);
}

/// Mixtral (8 experts): attn_v and attn_k in q8_0, attn_output in q5_K under Q4_K_M.
#[test]
fn eight_experts_lift_attention() {
    let a = &preset("mixtral-8x7b").unwrap().arch;
    let (ts, _) = tensors::tensors(a);
    let types = gguf::tensor_types(gguf::FileType::Q4KM, a, &ts);
    for (t, ty) in ts.iter().zip(&types) {
        let want = match t.role {
            Role::AttnV | Role::AttnK => Some(gguf::Q8_0),
            Role::AttnOutput => Some(gguf::Q5_K),
            Role::Router => None,
            _ => continue,
        };
        assert_eq!(*ty, want, "{t:?}");
    }
}

/// A row that is not whole 256-blocks falls back (Qwen2.5 7B's ffn_down rows are
/// 18,944 = 74 blocks: whole; GPT-2's 768-wide rows are 3 blocks: whole; a 2,880-wide
/// row, gpt-oss, is 11.25 blocks → q4_K falls back to q5_0).
#[test]
fn rows_that_are_not_whole_blocks_fall_back() {
    let a = &preset("gpt-oss-20b").unwrap().arch;
    let (ts, _) = tensors::tensors(a);
    let types = gguf::tensor_types(gguf::FileType::Q4KM, a, &ts);
    let q = ts.iter().position(|t| t.role == Role::AttnQ).unwrap();
    assert_eq!(ts[q].cols, 2880);
    assert_eq!(types[q], Some(gguf::Q5_0));
}
