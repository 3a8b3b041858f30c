//! The state-space families counted exactly from their config.json: Mamba, Mamba-2
//! (Codestral), Falcon-Mamba, and the Mamba hybrids with a period (Jamba, Bamba), module by
//! module as transformers 5.24 builds them, with the counting toolkit of [`super::hybrid`].

use super::hybrid::*;
use super::*;
use crate::model::LayerMix;

/// Mamba and Falcon-Mamba (`MambaForCausalLM`, `FalconMambaForCausalLM`): `L` blocks of
/// one RMSNorm and a [`Mamba1`] mixer, a final norm, the embedding (tied by default).
///
/// # Formula
/// ```text
/// Ψ = V·h + L·(h + mixer) + h [+ V·h untied]
/// ```
/// Example: state-spaces/mamba-130m-hf (V 50,280, h 768, L 24, tied):
/// 38,615,040 + 24·(768 + 3,770,880) + 768 = 129,135,360.
pub(crate) fn mamba(v: &Value, a: &mut Acc) -> Result<Exact, String> {
    let h = pos("hidden_size", int_need(v, "hidden_size")?)?;
    let layers = depth("num_hidden_layers", int_need(v, "num_hidden_layers")?)?;
    let vocab = pos("vocab_size", int_need(v, "vocab_size")?)?;
    // MambaConfig sets intermediate_size = int(expand · hidden_size) in __post_init__, and
    // a config's own `intermediate_size` then overrides it (tiiuae/falcon-mamba-7b: expand
    // 16, intermediate_size 8,192, the checkpoint's).
    let d_inner = match opt_int(v, "intermediate_size")? {
        Some(d) => pos("intermediate_size", d)?,
        None => pos("expand", int_or(v, "expand", 2)? * h)?,
    };
    let dt_rank = match v.get("time_step_rank") {
        Some(Value::String(s)) if s == "auto" => h.div_ceil(16),
        _ => int_or(v, "time_step_rank", h.div_ceil(16))?,
    };
    let m = Mamba1 {
        h,
        d_inner,
        d_state: int_or(v, "state_size", 16)?,
        dt_rank,
        conv_kernel: int_or(v, "conv_kernel", 4)?,
        conv_bias: bool_or(v, "use_conv_bias", true)?,
        proj_bias: bool_or(v, "use_bias", false)?,
        bcdt_norms: false,
    };
    let tied = bool_or(v, "tie_word_embeddings", true)?;
    let mut t = Tally::default();
    let n = layers as u128;
    t.vector(h as u128, n);
    m.add(&mut t, n);
    ends(&mut t, vocab, h, h, tied);
    transformer_keys(a, h, layers, vocab, None, d_inner, tied);
    Ok(Exact {
        tally: t,
        mix: LayerMix {
            layers,
            mamba: layers,
            ssm: Some(m.shape()),
            ..LayerMix::default()
        },
    })
}

/// Mamba-2 (`Mamba2ForCausalLM`: Mamba-Codestral, mamba2-*-hf): `L` blocks of one RMSNorm
/// and a [`Mamba2`] mixer (`d_i = expand·h`, gated norm), a final norm, untied by default.
///
/// # Formula
/// ```text
/// Ψ = V·h + L·(h + mixer) + h [+ V·h untied]
/// ```
/// Example: mistralai/Mamba-Codestral-7B-v0.1 (V 32,768, h 4,096, L 64, untied):
/// 2·134,217,728 + 64·(4,096 + 109,635,968) + 4,096 = 7,285,403,648.
pub(crate) fn mamba2(v: &Value, a: &mut Acc) -> Result<Exact, String> {
    let h = pos("hidden_size", int_need(v, "hidden_size")?)?;
    let layers = depth("num_hidden_layers", int_need(v, "num_hidden_layers")?)?;
    let vocab = pos("vocab_size", int_need(v, "vocab_size")?)?;
    let d_inner = pos("expand", int_or(v, "expand", 2)? * h)?;
    let m = Mamba2 {
        h,
        d_inner,
        heads: int_or(v, "num_heads", 128)?,
        groups: int_or(v, "n_groups", 8)?,
        d_state: int_or(v, "state_size", 128)?,
        conv_kernel: int_or(v, "conv_kernel", 4)?,
        chunk: int_or(v, "chunk_size", 256)?,
        conv_bias: bool_or(v, "use_conv_bias", true)?,
        in_bias: bool_or(v, "use_bias", false)?,
        out_bias: bool_or(v, "use_bias", false)?,
        gated_norm: true,
    };
    let tied = bool_or(v, "tie_word_embeddings", false)?;
    let mut t = Tally::default();
    let n = layers as u128;
    t.vector(h as u128, n);
    m.add(&mut t, n);
    ends(&mut t, vocab, h, h, tied);
    transformer_keys(a, h, layers, vocab, None, d_inner, tied);
    Ok(Exact {
        tally: t,
        mix: LayerMix {
            layers,
            mamba: layers,
            ssm: Some(m.shape()),
            ..LayerMix::default()
        },
    })
}

/// Jamba (`JambaForCausalLM`): every block a Mamba mixer (with dt/B/C norms) or attention
/// (`i % attn_layer_period == attn_layer_offset`), then a gated MLP or, where
/// `i % expert_layer_period == expert_layer_offset` and `num_experts > 1`, an MoE of
/// `num_experts` gated experts (gate and up fused) and a router; two RMSNorms per block.
///
/// # Formula
/// ```text
/// Ψ = V·h + L_m·mamba + L_a·attn + L_e·(E·3·h·f + h·E) + (L − L_e)·3·h·f
///   + 2·L·h + h [+ V·h untied]
/// ```
/// Source: transformers 5.24 `models/jamba/modeling_jamba.py`, `configuration_jamba.py`.
/// Example: ai21labs/Jamba-v0.1 (h 4,096, L 32: 4 attention, 28 Mamba, 16 MoE of 16
/// experts of 14,336): 51,570,323,328.
pub(crate) fn jamba(v: &Value, a: &mut Acc) -> Result<Exact, String> {
    let h = pos("hidden_size", int_or(v, "hidden_size", 4096)?)?;
    let layers = depth("num_hidden_layers", int_or(v, "num_hidden_layers", 32)?)?;
    let vocab = pos("vocab_size", int_or(v, "vocab_size", 65_536)?)?;
    let f = int_or(v, "intermediate_size", 14_336)?;
    let attn = Attn::read(v, h, Some(32))?;
    let (ap, ao) = (
        pos("attn_layer_period", int_or(v, "attn_layer_period", 8)?)?,
        int_or(v, "attn_layer_offset", 4)?,
    );
    let (ep, eo) = (
        pos("expert_layer_period", int_or(v, "expert_layer_period", 2)?)?,
        int_or(v, "expert_layer_offset", 1)?,
    );
    let e = int_or(v, "num_experts", 16)?;
    let dt_rank = match v.get("mamba_dt_rank") {
        Some(Value::String(s)) if s == "auto" => h.div_ceil(16),
        _ => int_or(v, "mamba_dt_rank", h.div_ceil(16))?,
    };
    let m = Mamba1 {
        h,
        d_inner: int_or(v, "mamba_expand", 2)? * h,
        d_state: int_or(v, "mamba_d_state", 16)?,
        dt_rank,
        conv_kernel: int_or(v, "mamba_d_conv", 4)?,
        conv_bias: bool_or(v, "mamba_conv_bias", true)?,
        proj_bias: bool_or(v, "mamba_proj_bias", false)?,
        bcdt_norms: true,
    };
    let attn_layers = (0..layers).filter(|i| i % ap == ao).count() as u64;
    let moe_layers = if e > 1 {
        (0..layers).filter(|i| i % ep == eo).count() as u64
    } else {
        0
    };
    let tied = bool_or(v, "tie_word_embeddings", false)?;
    let mut t = Tally::default();
    m.add(&mut t, (layers - attn_layers) as u128);
    attn.add(&mut t, attn_layers as u128);
    experts(&mut t, h, e, f, true, moe_layers as u128);
    mlp(&mut t, h, f, true, false, (layers - moe_layers) as u128);
    t.vector(2 * h as u128, layers as u128);
    ends(&mut t, vocab, h, h, tied);
    transformer_keys(a, h, layers, vocab, Some(attn), f, tied);
    moe_keys(
        a,
        e,
        int_or(v, "num_experts_per_tok", 2)?,
        f,
        layers,
        moe_layers,
    );
    Ok(Exact {
        tally: t,
        mix: LayerMix {
            layers,
            attention: attn_layers,
            mamba: layers - attn_layers,
            ssm: Some(m.shape()),
            moe: moe_layers,
            ..LayerMix::default()
        },
    })
}

/// Bamba (`BambaForCausalLM`): every block a [`Mamba2`] mixer (`d_i = mamba_expand·h`) or,
/// at `attn_layer_indices`, attention; a gated MLP and two RMSNorms in each.
///
/// # Formula
/// ```text
/// Ψ = V·h + L_m·mamba2 + L_a·attn + L·(3·h·f + 2h) + h [+ V·h untied]
/// ```
/// Source: transformers 5.24 `models/bamba/modeling_bamba.py`.
/// Example: ibm-ai-platform/Bamba-9B (h 4,096, L 32, attention at 9, 18, 27, f 14,336,
/// V 128,256): 9,780,235,392 (the −17.9 % of a Llama reading is its Mamba-2 layers).
pub(crate) fn bamba(v: &Value, a: &mut Acc) -> Result<Exact, String> {
    let h = pos("hidden_size", int_or(v, "hidden_size", 4096)?)?;
    let layers = depth("num_hidden_layers", int_or(v, "num_hidden_layers", 32)?)?;
    let vocab = pos("vocab_size", int_or(v, "vocab_size", 128_000)?)?;
    let f = int_or(v, "intermediate_size", 14_336)?;
    let mut attn = Attn::read(v, h, Some(32))?;
    let bias = bool_or(v, "attention_bias", false)?;
    (attn.qkv_bias, attn.o_bias) = (bias, bias);
    let attn_layers = match v.get("attn_layer_indices") {
        None | Some(Value::Null) => 0,
        Some(Value::Array(xs)) => {
            let mut idx: Vec<u64> = xs
                .iter()
                .map(|x| x.as_u64().filter(|i| *i < layers))
                .collect::<Option<Vec<_>>>()
                .ok_or("config.json: `attn_layer_indices` must list block indices below `num_hidden_layers`")?;
            idx.sort_unstable();
            idx.dedup();
            idx.len() as u64
        }
        Some(x) => {
            return Err(format!(
                "config.json: `attn_layer_indices` must be a list (got {x})"
            ))
        }
    };
    let proj_bias = bool_or(v, "mamba_proj_bias", false)?;
    let m = Mamba2 {
        h,
        d_inner: int_or(v, "mamba_expand", 2)? * h,
        heads: int_or(v, "mamba_n_heads", 128)?,
        groups: int_or(v, "mamba_n_groups", 1)?,
        d_state: int_or(v, "mamba_d_state", 256)?,
        conv_kernel: int_or(v, "mamba_d_conv", 4)?,
        chunk: int_or(v, "mamba_chunk_size", 256)?,
        conv_bias: bool_or(v, "mamba_conv_bias", true)?,
        in_bias: proj_bias,
        out_bias: proj_bias,
        gated_norm: true,
    };
    let tied = bool_or(v, "tie_word_embeddings", false)?;
    let mut t = Tally::default();
    m.add(&mut t, (layers - attn_layers) as u128);
    attn.add(&mut t, attn_layers as u128);
    mlp(
        &mut t,
        h,
        f,
        true,
        bool_or(v, "mlp_bias", false)?,
        layers as u128,
    );
    t.vector(2 * h as u128, layers as u128);
    ends(&mut t, vocab, h, h, tied);
    transformer_keys(a, h, layers, vocab, Some(attn), f, tied);
    Ok(Exact {
        tally: t,
        mix: LayerMix {
            layers,
            attention: attn_layers,
            mamba: layers - attn_layers,
            ssm: Some(m.shape()),
            ..LayerMix::default()
        },
    })
}
