//! The two 2025 decoders whose blocks are not a transformer's, counted exactly from their
//! config.json: Qwen3-Next (gated DeltaNet and gated attention with routed experts) and
//! Gemma 3n's text decoder (per-layer embeddings, AltUp, LAuReL, KV-sharing blocks), with
//! the toolkit of [`super::hybrid`] and the shapes of [`super::decoders`].

use super::decoders::*;
use super::hybrid::*;
use super::*;
use crate::model::LayerMix;

/// Qwen3-Next's gated-DeltaNet blocks: the `linear_attention` entries of `layer_types`,
/// else every block but each `full_attention_interval`-th.
fn qwen3_next_linear_blocks(v: &Value, l: u64) -> Result<u64, String> {
    let spell = |s: &str| match s {
        "full_attention" | "attention" => Some(Kind::Attention),
        "linear_attention" => Some(Kind::Mamba),
        _ => None,
    };
    let n_lin = match kinds(v, &["layer_types"], spell)? {
        Some(ks) if ks.len() as u64 == l => count(&ks, Kind::Mamba),
        Some(ks) => {
            return Err(format!(
                "config.json: `layer_types` lists {} blocks, `num_hidden_layers` is {l}",
                ks.len()
            ))
        }
        None => {
            let every = pos(
                "full_attention_interval",
                int_or(v, "full_attention_interval", 4)?,
            )?;
            l - l / every
        }
    };
    Ok(n_lin)
}

/// The blocks with a routed-expert MLP: every `decoder_sparse_step`-th block not listed in
/// `mlp_only_layers` (Qwen2/3-MoE and Qwen3-Next's rule), when there are experts.
fn sparse_moe_layers(v: &Value, l: u64, experts: u64) -> Result<u64, String> {
    let step = pos("decoder_sparse_step", int_or(v, "decoder_sparse_step", 1)?)?;
    let dense_only: Vec<u64> = match v.get("mlp_only_layers") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(xs)) => xs.iter().filter_map(Value::as_u64).collect(),
        Some(x) => {
            return Err(format!(
                "config.json: `mlp_only_layers` must be a list (got {x})"
            ))
        }
    };
    let moe_layers = (0..l)
        .filter(|i| !dense_only.contains(i) && experts > 0 && (i + 1) % step == 0)
        .count() as u64;
    Ok(moe_layers)
}

/// Qwen3-Next (`Qwen3NextForCausalLM`, transformers 5.24
/// `models/qwen3_next/modeling_qwen3_next.py`): blocks of gated DeltaNet or gated
/// attention by `layer_types` (else every `full_attention_interval`-th, default 4, is
/// attention), each with an MoE (routed experts, one shared expert with its sigmoid gate,
/// a router) unless listed in `mlp_only_layers` or off the `decoder_sparse_step`.
///
/// # Formula
/// ```text
/// k = n_k·d_k, v = n_v·d_v
/// DeltaNet  = h·(2k + 2v) + h·2n_v + (2k + v)·K + 2·n_v + d_v + v·h
/// attention = h·2·a·d + 2·h·a_kv·d + a·d·h + 2d   (q carries its output gate; per-head q/k norms)
/// MoE       = E·3·h·f_e + h·E + 3·h·f_s + h
/// Ψ = V·h + L_lin·DeltaNet + L_a·attention + L_moe·MoE + (L − L_moe)·3·h·f + 2·L·h + h [+ V·h]
/// ```
/// `n_k`, `d_k`, `n_v`, `d_v` the linear-attention key/value heads and widths, `K` its
/// convolution kernel. Example: Qwen/Qwen3-Next-80B-A3B (h 2,048, L 48: 36 DeltaNet, 12
/// attention; 512 experts of 512, shared 512; V 151,936): 81,323,809,280 by this module.
pub(crate) fn qwen3_next(v: &Value, a: &mut Acc) -> Result<Exact, String> {
    gated_deltanet(v, a, 512)
}

/// Qwen3.5 and Qwen3.6 (`qwen3_5_text`, the `text_config` of `Qwen3_5ForConditionalGeneration`;
/// transformers 5.x `models/qwen3_5/modeling_qwen3_5.py`): Qwen3-Next's blocks — gated
/// DeltaNet (its `in_proj_qkv`, `in_proj_z`, `in_proj_b`, `in_proj_a` hold what Qwen3-Next's
/// merged projections do) and gated attention — with a dense gated MLP unless the config
/// names experts (`qwen3_5_moe_text` reads as [`qwen3_next`]). The checkpoints' `mtp.*` block
/// is not loaded (transformers ignores it; vLLM only for speculative decoding).
///
/// # Example
/// Qwen/Qwen3.5-27B (h 5,120, L 64: 48 DeltaNet, 16 attention of 24 × 256; MLP 17,408;
/// V 248,320, untied): 26,895,998,464, and with the vision encoder's 460,730,096 the
/// published 27,356,728,560; Qwen3.5-9B 8,953,803,264 + 456,010,480 = 9,409,813,744.
pub(crate) fn qwen3_5(v: &Value, a: &mut Acc) -> Result<Exact, String> {
    gated_deltanet(v, a, 0)
}

/// [`qwen3_next`]'s count, `experts_default` routed experts where the config names none.
fn gated_deltanet(v: &Value, a: &mut Acc, experts_default: u64) -> Result<Exact, String> {
    let (h, l, vocab) = sizes(v, (2048, 48, 151_936))?;
    let n_lin = qwen3_next_linear_blocks(v, l)?;
    let mut at = attn_with(v, h, 16, Some(256))?;
    let bias = bool_or(v, "attention_bias", false)?;
    (at.qkv_bias, at.o_bias, at.qk_norm) = (bias, bias, true);
    let (nk, dk, nv, dv) = (
        int_or(v, "linear_num_key_heads", 16)?,
        int_or(v, "linear_key_head_dim", 128)?,
        int_or(v, "linear_num_value_heads", 32)?,
        int_or(v, "linear_value_head_dim", 128)?,
    );
    let kernel = int_or(v, "linear_conv_kernel_dim", 4)?;
    let (kd, vd) = (nk * dk, nv * dv);
    let experts = int_or(v, "num_experts", experts_default)?;
    let moe_layers = sparse_moe_layers(v, l, experts)?;
    let (f, f_e, f_s) = (
        int_or(v, "intermediate_size", 5120)?,
        int_or(v, "moe_intermediate_size", 512)?,
        int_or(v, "shared_expert_intermediate_size", 512)?,
    );
    let tied = bool_or(v, "tie_word_embeddings", false)?;
    let mut t = Tally::default();
    // Gated DeltaNet blocks.
    let n = n_lin as u128;
    t.module(linear(h, 2 * kd + 2 * vd, false), n);
    t.module(linear(h, 2 * nv, false), n);
    t.module((2 * kd + vd) as u128 * kernel as u128, n);
    t.vector((2 * nv + dv) as u128, n);
    t.module(linear(vd, h, false), n);
    // Gated attention: q_proj carries the output gate (2·a·d).
    let n = (l - n_lin) as u128;
    let (hd, ah) = (at.head_dim, at.heads);
    t.module(linear(h, 2 * ah * hd, bias), n);
    t.module(linear(h, at.kv_heads * hd, bias), 2 * n);
    t.module(linear(ah * hd, h, bias), n);
    t.vector(2 * hd as u128, n);
    // Feed-forwards.
    let nm = moe_layers as u128;
    mlp(&mut t, h, f_e, true, false, nm * experts as u128);
    t.module(linear(h, experts, false), nm);
    mlp(&mut t, h, f_s, true, false, nm);
    t.module(linear(h, 1, false), nm);
    mlp(&mut t, h, f, true, false, (l - moe_layers) as u128);
    t.vector(2 * h as u128, l as u128);
    ends(&mut t, vocab, h, h, tied);
    transformer_keys(a, h, l, vocab, Some(at), f, tied);
    moe_keys(
        a,
        experts,
        int_or(v, "num_experts_per_tok", 10)?,
        f_e,
        l,
        moe_layers,
    );
    shared_keys(a, f_s, f_e, moe_layers);
    Ok(Exact {
        tally: t,
        mix: LayerMix {
            layers: l,
            attention: l - n_lin,
            linear_attention: n_lin,
            linear: Some(crate::model::LinearAttn {
                k_heads: nk,
                v_heads: nv,
                k_dim: dk,
                v_dim: dv,
                conv_kernel: kernel,
            }),
            moe: moe_layers,
            ..LayerMix::default()
        },
    })
}

/// Gemma 3n's text decoder (`Gemma3nForCausalLM`, transformers 5.24
/// `models/gemma3n/modeling_gemma3n.py`; a `gemma3n` checkpoint's `text_config`).
///
/// # Formula
/// ```text
/// per block i:  h·a·d + a·d·h + d (q, o, q norm)
///             + [2·h·a_kv·d + d]  unless i is among the last `num_kv_shared_layers`
///               (those reuse an earlier block's k and v: no k, v, k norm)
///             + 3·h·f_i (gated MLP, `intermediate_size` per block or one for all)
///             + 4h (norms) + h + n² + n³ + n·h + h (AltUp: output scale, correction and
///               prediction coefficients, modality router, router norm; n = altup_num_inputs)
///             + 2·h·r + h (LAuReL, rank r) + 2·h·p + h (per-layer-input gate, projection, norm)
/// Ψ = V·h (tied) + V_p·L·p + h·L·p + p (per-layer embeddings, their projection and norm)
///   + 2·(n − 1)·h² (AltUp projections in and out) + Σ blocks + h [+ V·h untied]
/// ```
/// `p` = `hidden_size_per_layer_input`, `V_p` = `vocab_size_per_layer_input`.
/// Example: google/gemma-3n-E4B (h 2,048, L 35, 8 heads, 2 KV, d 256, f 16,384, V 262,400,
/// V_p 262,144, p 256, 15 KV-shared blocks, n 4, r 64): 6,835,235,568.
pub(crate) fn gemma3n(v: &Value, a: &mut Acc) -> Result<Exact, String> {
    let (h, l, vocab) = sizes(v, (2048, 35, 262_400))?;
    let mut at = attn_with(v, h, 8, Some(256))?;
    at.kv_heads = pos("num_key_value_heads", int_or(v, "num_key_value_heads", 2)?)?;
    let bias = bool_or(v, "attention_bias", false)?;
    let f: Vec<u64> = match v.get("intermediate_size") {
        Some(Value::Array(xs)) => {
            let fs: Vec<u64> = xs.iter().filter_map(Value::as_u64).collect();
            if fs.len() != xs.len() || fs.len() as u64 != l {
                return Err(
                    "config.json: `intermediate_size` must be one integer or one per block".into(),
                );
            }
            fs
        }
        _ => vec![int_or(v, "intermediate_size", 16_384)?; l as usize],
    };
    let shared = int_or(v, "num_kv_shared_layers", 15)?.min(l);
    let p = int_or(v, "hidden_size_per_layer_input", 256)?;
    let vp = int_or(v, "vocab_size_per_layer_input", 262_144)?;
    let n = int_or(v, "altup_num_inputs", 4)?;
    let r = int_or(v, "laurel_rank", 64)?;
    let tied = bool_or(v, "tie_word_embeddings", true)?;
    let (ad, kvd, d) = (
        at.heads * at.head_dim,
        at.kv_heads * at.head_dim,
        at.head_dim,
    );
    let mut t = Tally::default();
    let lu = l as u128;
    t.module(linear(h, ad, bias), lu);
    t.module(linear(ad, h, bias), lu);
    t.vector(d as u128, lu);
    let own_kv = (l - shared) as u128;
    t.module(linear(h, kvd, bias), 2 * own_kv);
    t.vector(d as u128, own_kv);
    for fi in &f {
        mlp(&mut t, h, *fi, true, false, 1);
    }
    // Norms, AltUp, LAuReL, per-layer input.
    let (hu, nu) = (h as u128, n as u128);
    t.vector(4 * hu + hu + nu * nu + nu * nu * nu + hu, lu);
    t.module(linear(h, n, false), lu);
    t.module(linear(h, r, false), lu);
    t.module(linear(r, h, false), lu);
    t.vector(h as u128, lu);
    t.module(linear(h, p, false), lu);
    t.module(linear(p, h, false), lu);
    t.vector(h as u128, lu);
    // Per-layer embeddings and projection, AltUp projections.
    t.module(linear(vp, l * p, false), 1);
    t.module(linear(h, l * p, false), 1);
    t.vector(p as u128, 1);
    t.module(linear(h, h, false), 2 * n.saturating_sub(1) as u128);
    ends(&mut t, vocab, h, h, tied);
    let f0 = f.iter().copied().max().unwrap_or(0);
    transformer_keys(a, h, l, vocab, Some(at), f0, tied);
    if v.get("layer_types").is_some_and(Value::is_array) {
        window_keys(v, "gemma3n_text", &mut a.keys);
    }
    a.notes.push(format!(
        "Gemma 3n: the parameter count is exact ({shared} of {l} blocks reuse an earlier block's KV cache; per-layer embeddings, AltUp and LAuReL counted), but the memory model reads it as {l} plain blocks {f0} wide"
    ));
    Ok(Exact {
        tally: t,
        mix: LayerMix::default(),
    })
}
