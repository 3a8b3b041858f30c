//! The hybrids whose blocks mix kinds beyond Jamba's periods, counted exactly from their
//! config.json: Nemotron-H (both spellings of its pattern), Falcon-H1's parallel
//! attention and Mamba-2, Granite-4.0-H (Mamba-2 with MoE) and LFM2 (short convolutions),
//! module by module as transformers 5.24 builds them, with the toolkit of [`super::hybrid`].

use super::hybrid::*;
use super::*;
use crate::model::LayerMix;

/// Nemotron-H's block names (transformers' and the legacy ones, `transformers`'
/// `_LEGACY_LAYER_TYPE_REMAP`).
fn spell_nemotron(s: &str) -> Option<Kind> {
    match s {
        "mlp" => Some(Kind::Mlp),
        "moe" => Some(Kind::Moe),
        other => spell_hybrid(other),
    }
}

/// Nemotron-H's block kinds: `layers_block_type` / `layer_types` (transformers' spelling),
/// else the Hub's `hybrid_override_pattern` (`M` Mamba, `*` attention, `-` MLP, `E` MoE),
/// else NemotronHConfig's default list.
fn nemotron_kinds(v: &Value) -> Result<Vec<Kind>, String> {
    if let Some(ks) = kinds(v, &["layers_block_type", "layer_types"], spell_nemotron)? {
        return Ok(ks);
    }
    match v.get("hybrid_override_pattern") {
        Some(Value::String(p)) => p
            .chars()
            .map(|c| match c {
                'M' => Ok(Kind::Mamba),
                '*' => Ok(Kind::Attention),
                '-' => Ok(Kind::Mlp),
                'E' => Ok(Kind::Moe),
                c => Err(format!(
                    "config.json: `hybrid_override_pattern` holds `{c}`, not one of M, *, -, E"
                )),
            })
            .collect(),
        Some(x) => Err(format!(
            "config.json: `hybrid_override_pattern` must be a string (got {x})"
        )),
        None => Ok(vec![Kind::Mamba, Kind::Moe, Kind::Attention, Kind::Mlp]),
    }
}

/// Nemotron-H's `n_e` MoE blocks: `E` experts of `(f_e, l)` up and `(l, f_e)` down, the
/// router `(E, h)`, a shared expert, and with `moe_latent_size` the latent projections
/// `h → l → h`.
///
/// # Formula
/// ```text
/// n_e · (E·2·l·f_e + E·h + 2·h·f_s [+ 2·h·l])       (biases where mlp_bias)
/// ```
/// Source: transformers 5.24 `models/nemotron_h/modeling_nemotron_h.py` (`NemotronHMoE`).
/// Example: E = 8, l = h = 4,096, f_e = 7,688, f_s = 7,688, one block: 8·2·4,096·7,688 +
/// 8·4,096 + 2·4,096·7,688 = 503,840,768 + 32,768 + 62,980,096 = 566,853,632.
fn nemotron_moe(v: &Value, t: &mut Tally, h: u64, mlp_bias: bool, n_e: u64) -> Result<(), String> {
    let (e, f_e) = (
        int_alias(v, &["n_routed_experts", "num_local_experts"], 8)?,
        int_or(v, "moe_intermediate_size", 7688)?,
    );
    let latent = opt_int(v, "moe_latent_size")?;
    let l = latent.unwrap_or(h);
    let n = n_e as u128;
    // Experts: (E, f_e, l) up and (E, l, f_e) down; the router (E, h).
    t.module(linear(l, f_e, false), n * e as u128);
    t.module(linear(f_e, l, false), n * e as u128);
    t.module(linear(h, e, false), n);
    mlp(
        t,
        h,
        int_or(v, "moe_shared_expert_intermediate_size", 7688)?,
        false,
        mlp_bias,
        n,
    );
    if latent.is_some() {
        t.module(linear(h, l, mlp_bias), n);
        t.module(linear(l, h, mlp_bias), n);
    }
    Ok(())
}

/// Nemotron-H (`NemotronHForCausalLM`): each block one RMSNorm and one mixer, by
/// `layers_block_type` / `layer_types` (transformers) or `hybrid_override_pattern` (the
/// Hub's: `M` Mamba-2, `*` attention, `-` MLP, `E` MoE): a [`Mamba2`] mixer
/// (`d_i = mamba_num_heads·mamba_head_dim`), bias-free attention, a plain (ReLU²) MLP
/// `intermediate_size` wide, or an MoE of plain experts with a shared expert and an
/// optional latent projection.
///
/// # Formula
/// ```text
/// Ψ = V·h + L_m·mamba2 + L_a·attn + L_f·2·h·f
///   + L_e·(E·2·l·f_e + h·E + 2·h·f_s + [2·h·l latent]) + L·h + h [+ V·h untied]
/// ```
/// `l` = `moe_latent_size` (default `h`), `f_s` the shared expert's width; the LM head is
/// never tied (transformers 5.24 declares no tied weights for this class). Source:
/// transformers 5.24 `models/nemotron_h/modeling_nemotron_h.py`, `configuration_nemotron_h.py`.
/// Example: nvidia/Nemotron-H-8B-Base-8K (h 4,096, 52 blocks: 24 M, 4 attention, 24 MLP
/// of 21,504; V 131,072): 8,100,852,736.
pub(crate) fn nemotron_h(v: &Value, a: &mut Acc) -> Result<Exact, String> {
    let h = pos("hidden_size", int_or(v, "hidden_size", 4096)?)?;
    let vocab = pos("vocab_size", int_or(v, "vocab_size", 131_072)?)?;
    let ks = nemotron_kinds(v)?;
    let layers = depth("layers_block_type", ks.len() as u64)?;
    let mut attn = Attn::read(v, h, Some(32))?;
    // NemotronHConfig.head_dim defaults to 128 (not h / heads); the Hub's
    // `attention_head_dim` is not read by transformers.
    attn.head_dim = pos("head_dim", int_or(v, "head_dim", 128)?)?;
    let heads = int_or(v, "mamba_num_heads", 128)?;
    let m = Mamba2 {
        h,
        d_inner: heads * int_or(v, "mamba_head_dim", 64)?,
        heads,
        groups: int_alias(v, &["n_groups", "mamba_n_groups"], 8)?,
        d_state: int_or(v, "ssm_state_size", 128)?,
        conv_kernel: int_alias(v, &["conv_kernel", "mamba_d_conv"], 4)?,
        chunk: int_or(v, "chunk_size", 128)?,
        conv_bias: bool_or(v, "use_conv_bias", bool_or(v, "mamba_conv_bias", true)?)?,
        in_bias: bool_or(v, "use_bias", false)?,
        out_bias: bool_or(v, "use_bias", false)?,
        gated_norm: true,
    };
    let mlp_bias = bool_or(v, "mlp_bias", false)?;
    let f = int_or(v, "intermediate_size", 21_504)?;
    let (n_m, n_a, n_f, n_e) = (
        count(&ks, Kind::Mamba),
        count(&ks, Kind::Attention),
        count(&ks, Kind::Mlp),
        count(&ks, Kind::Moe),
    );
    // NemotronHForCausalLM declares no tied weights (`_tied_weights_keys = {}`): its LM
    // head is its own whatever `tie_word_embeddings` says.
    let tied = false;
    let mut t = Tally::default();
    m.add(&mut t, n_m as u128);
    attn.add(&mut t, n_a as u128);
    mlp(&mut t, h, f, false, mlp_bias, n_f as u128);
    if n_e > 0 {
        nemotron_moe(v, &mut t, h, mlp_bias, n_e)?;
    }
    t.vector(h as u128, layers as u128);
    ends(&mut t, vocab, h, h, tied);
    transformer_keys(a, h, layers, vocab, Some(attn), f, tied);
    Ok(Exact {
        tally: t,
        mix: LayerMix {
            layers,
            attention: n_a,
            mamba: n_m,
            ssm: Some(m.shape()),
            moe: n_e,
            ..LayerMix::default()
        },
    })
}

/// Falcon-H1 (`FalconH1ForCausalLM`): every block runs attention and a [`Mamba2`] mixer
/// in parallel on one input norm (`d_i = mamba_d_ssm`, else `mamba_expand·h`; the gated
/// norm only with `mamba_rms_norm`; in_proj bias `mamba_proj_bias`, out_proj bias
/// `projectors_bias`), then a gated MLP after a second norm.
///
/// # Formula
/// ```text
/// Ψ = V·h + L·(mamba2 + attn + 3·h·f + 2h) + h [+ V·h untied]
/// ```
/// Source: transformers 5.24 `models/falcon_h1/modeling_falcon_h1.py`.
/// Example: tiiuae/Falcon-H1-7B-Base (h 3,072, L 44, 12 heads, 2 KV, d 128, f 12,288;
/// d_i 3,072, 24 SSM heads, N 256; V 130,048): 7,585,513,568.
pub(crate) fn falcon_h1(v: &Value, a: &mut Acc) -> Result<Exact, String> {
    let h = pos("hidden_size", int_or(v, "hidden_size", 4096)?)?;
    let layers = depth("num_hidden_layers", int_or(v, "num_hidden_layers", 32)?)?;
    let vocab = pos("vocab_size", int_or(v, "vocab_size", 128_000)?)?;
    let f = int_or(v, "intermediate_size", 14_336)?;
    let mut attn = Attn::read(v, h, Some(32))?;
    let bias = bool_or(v, "attention_bias", false)?;
    (attn.qkv_bias, attn.o_bias) = (bias, bias);
    let d_inner = match opt_int(v, "mamba_d_ssm")? {
        Some(d) => d,
        None => int_or(v, "mamba_expand", 2)? * h,
    };
    let m = Mamba2 {
        h,
        d_inner,
        heads: int_or(v, "mamba_n_heads", 128)?,
        groups: int_or(v, "mamba_n_groups", 1)?,
        d_state: int_or(v, "mamba_d_state", 256)?,
        conv_kernel: int_or(v, "mamba_d_conv", 4)?,
        chunk: int_or(v, "mamba_chunk_size", 256)?,
        conv_bias: bool_or(v, "mamba_conv_bias", true)?,
        in_bias: bool_or(v, "mamba_proj_bias", false)?,
        out_bias: bool_or(v, "projectors_bias", false)?,
        gated_norm: bool_or(v, "mamba_rms_norm", false)?,
    };
    if m.gated_norm {
        a.notes.push("Falcon-H1 with `mamba_rms_norm`: the count includes its gated RMSNorm, but the torch path's activations are counted without it (as the published checkpoints run: `activations::ssm::ungated_norm_saving`), a few T·d bytes per block low".into());
    }
    let tied = bool_or(v, "tie_word_embeddings", false)?;
    let n = layers as u128;
    let mut t = Tally::default();
    m.add(&mut t, n);
    attn.add(&mut t, n);
    mlp(&mut t, h, f, true, bool_or(v, "mlp_bias", false)?, n);
    t.vector(2 * h as u128, n);
    ends(&mut t, vocab, h, h, tied);
    transformer_keys(a, h, layers, vocab, Some(attn), f, tied);
    Ok(Exact {
        tally: t,
        mix: LayerMix {
            layers,
            attention: layers,
            mamba: layers,
            ssm: Some(m.shape()),
            ..LayerMix::default()
        },
    })
}

/// Granite 4.0-H (`GraniteMoeHybridForCausalLM`): every block a [`Mamba2`] mixer
/// (`d_i = mamba_expand·h`) or attention by `layer_types` (or `layers_block_type`), then a
/// shared gated MLP (`shared_intermediate_size`, gate and up fused) and, when
/// `num_local_experts > 0`, an MoE of gated experts with a router; two RMSNorms.
///
/// # Formula
/// ```text
/// Ψ = V·h + L_m·mamba2 + L_a·attn + L·(3·h·f_s + 2h) + [L·(E·3·h·f + h·E)] + h [+ V·h untied]
/// ```
/// Source: transformers 5.24 `models/granitemoehybrid/modeling_granitemoehybrid.py`.
/// Example: ibm-granite/granite-4.0-h-tiny (h 1,536, 40 blocks: 4 attention, 36 Mamba-2;
/// 64 experts of 512, shared 1,024; V 100,352, tied): 6,939,037,248.
pub(crate) fn granite_hybrid(v: &Value, a: &mut Acc) -> Result<Exact, String> {
    let h = pos("hidden_size", int_or(v, "hidden_size", 4096)?)?;
    let vocab = pos("vocab_size", int_or(v, "vocab_size", 32_000)?)?;
    let ks = kinds(v, &["layer_types", "layers_block_type"], spell_hybrid)?;
    let layers = match &ks {
        Some(ks) => ks.len() as u64,
        None => int_or(v, "num_hidden_layers", 32)?,
    };
    let layers = depth("num_hidden_layers", layers)?;
    let n_a = ks.as_deref().map_or(0, |ks| count(ks, Kind::Attention));
    let mut attn = Attn::read(v, h, Some(32))?;
    let bias = bool_or(v, "attention_bias", false)?;
    (attn.qkv_bias, attn.o_bias) = (bias, bias);
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
    let e = int_or(v, "num_local_experts", 8)?;
    let f = int_or(v, "intermediate_size", 11_008)?;
    let f_s = int_or(v, "shared_intermediate_size", 1024)?;
    let tied = bool_or(v, "tie_word_embeddings", false)?;
    let n = layers as u128;
    let mut t = Tally::default();
    m.add(&mut t, (layers - n_a) as u128);
    attn.add(&mut t, n_a as u128);
    // GraniteMoeHybridMLP: input_linear h → 2·f_s (gate and up), output_linear f_s → h.
    t.module(linear(h, 2 * f_s, false), n);
    t.module(linear(f_s, h, false), n);
    if e > 0 {
        experts(&mut t, h, e, f, true, n);
    }
    t.vector(2 * h as u128, n);
    ends(&mut t, vocab, h, h, tied);
    let moe_layers = if e > 0 { layers } else { 0 };
    transformer_keys(
        a,
        h,
        layers,
        vocab,
        Some(attn),
        if e > 0 { f } else { f_s },
        tied,
    );
    moe_keys(
        a,
        e,
        int_or(v, "num_experts_per_tok", 2)?,
        f,
        layers,
        moe_layers,
    );
    shared_keys(a, f_s, f, moe_layers);
    Ok(Exact {
        tally: t,
        mix: LayerMix {
            layers,
            attention: n_a,
            mamba: layers - n_a,
            ssm: Some(m.shape()),
            moe: moe_layers,
            ..LayerMix::default()
        },
    })
}

/// LFM2's block kinds: `layer_types` (`conv`, `full_attention`), else `full_attn_idxs`
/// (the attention blocks' indices; the rest short convolutions), else all attention.
fn lfm2_kinds(v: &Value) -> Result<Vec<Kind>, String> {
    let spell = |s: &str| match s {
        "conv" => Some(Kind::Conv),
        "full_attention" | "attention" => Some(Kind::Attention),
        _ => None,
    };
    let ks = match kinds(v, &["layer_types"], spell)? {
        Some(ks) => ks,
        None => {
            let layers = depth("num_hidden_layers", int_or(v, "num_hidden_layers", 32)?)?;
            match v.get("full_attn_idxs") {
                None | Some(Value::Null) => vec![Kind::Attention; layers as usize],
                Some(Value::Array(xs)) => {
                    let idx: Vec<u64> = xs.iter().filter_map(Value::as_u64).collect();
                    if idx.len() != xs.len() {
                        return Err("config.json: `full_attn_idxs` must list block indices".into());
                    }
                    (0..layers)
                        .map(|i| {
                            if idx.contains(&i) {
                                Kind::Attention
                            } else {
                                Kind::Conv
                            }
                        })
                        .collect()
                }
                Some(x) => {
                    return Err(format!(
                        "config.json: `full_attn_idxs` must be a list (got {x})"
                    ))
                }
            }
        }
    };
    Ok(ks)
}

/// LFM2's feed-forward width as `Lfm2MLP` adjusts it: with `block_auto_adjust_ff_dim`,
/// `f = 2·f/3`, then times `block_ffn_dim_multiplier` and rounded up to
/// `block_multiple_of`.
///
/// # Formula
/// ```text
/// f' = ⌈⌊m·⌊2f/3⌋⌋ / M⌉·M      (f' = ⌊2f/3⌋ without a multiplier; f without the adjustment)
/// ```
/// Source: transformers 5.24 `models/lfm2/modeling_lfm2.py` (`Lfm2MLP.__init__`).
/// Example: LFM2-1.2B, f = 12,288, m = 1.0, M = 256: ⌊2·12,288/3⌋ = 8,192 → 8,192.
fn lfm2_ffn(v: &Value) -> Result<u64, String> {
    let mut f = int_alias(v, &["block_ff_dim", "intermediate_size"], 12_288)?;
    if bool_or(v, "block_auto_adjust_ff_dim", true)? {
        f = 2 * f / 3;
        if v.get("block_ffn_dim_multiplier")
            .is_some_and(|x| !x.is_null())
        {
            let mult = float_or(v, "block_ffn_dim_multiplier", 1.0)?;
            f = (mult * f as f64).floor().min(FIELD_MAX as f64) as u64;
            let of = pos("block_multiple_of", int_or(v, "block_multiple_of", 256)?)?;
            f = f.div_ceil(of) * of;
        }
    }
    Ok(f)
}

/// LFM2 (`Lfm2ForCausalLM`): every block a gated short convolution or attention (with
/// per-head q/k RMSNorms) by `layer_types` (else `full_attn_idxs`, else all attention),
/// then a gated MLP whose width is adjusted (`block_auto_adjust_ff_dim`:
/// `⌊2f/3⌋`, then with `block_ffn_dim_multiplier` `m`: `⌊m·f⌋` rounded up to
/// `block_multiple_of`); two RMSNorms per block, a final one, tied by default.
///
/// # Formula
/// ```text
/// conv  = h·3h + h·K + h·h (+ 3h + h + h biases with conv_bias)
/// Ψ = V·h + L_c·conv + L_a·(attn + 2d) + L·(3·h·f' + 2h) + h [+ V·h untied]
/// ```
/// `K` = `conv_L_cache`. Source: transformers 5.24 `models/lfm2/modeling_lfm2.py`
/// (`Lfm2ShortConv`, `Lfm2MLP`), `configuration_lfm2.py` (`block_ff_dim`, `tie_embedding`).
/// Example: LiquidAI/LFM2-1.2B (h 2,048, 16 blocks: 6 attention, 10 conv; f 12,288 →
/// 8,192; V 65,536, tied): 1,170,340,608.
pub(crate) fn lfm2(v: &Value, a: &mut Acc) -> Result<Exact, String> {
    let h = pos("hidden_size", int_or(v, "hidden_size", 2560)?)?;
    let vocab = pos("vocab_size", int_or(v, "vocab_size", 65_536)?)?;
    let ks = lfm2_kinds(v)?;
    let layers = depth("num_hidden_layers", ks.len() as u64)?;
    let (n_a, n_c) = (count(&ks, Kind::Attention), count(&ks, Kind::Conv));
    let mut attn = Attn::read(v, h, Some(32))?;
    attn.qk_norm = true;
    let f = lfm2_ffn(v)?;
    let kernel = int_or(v, "conv_L_cache", 3)?;
    let cb = bool_or(v, "conv_bias", false)?;
    let tied = match v.get("tie_embedding") {
        Some(Value::Bool(b)) => *b,
        _ => bool_or(v, "tie_word_embeddings", true)?,
    };
    let mut t = Tally::default();
    let nc = n_c as u128;
    t.module(linear(h, 3 * h, cb), nc);
    t.module(
        h as u128 * kernel as u128 + if cb { h as u128 } else { 0 },
        nc,
    );
    t.module(linear(h, h, cb), nc);
    attn.add(&mut t, n_a as u128);
    mlp(&mut t, h, f, true, false, layers as u128);
    t.vector(2 * h as u128, layers as u128);
    ends(&mut t, vocab, h, h, tied);
    transformer_keys(a, h, layers, vocab, Some(attn), f, tied);
    Ok(Exact {
        tally: t,
        mix: LayerMix {
            layers,
            attention: n_a,
            conv: n_c,
            conv_kernel: kernel,
            ..LayerMix::default()
        },
    })
}
