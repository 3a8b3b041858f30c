//! The architecture families the importer reads, one function per `model_type` group:
//! each maps its config.json keys to memfit's shape and names the keys it read.

use super::*;

/// DeepSeek-V2 / V3 / R1: MLA ranks, routed and shared experts, dense first blocks, all
/// read from the config. The MLA shape is the preset's (`q_lora_rank` 1536 or none,
/// `kv_lora_rank` 512, rope 64, nope 128, v 128: every published V2/V3 checkpoint); a
/// config with other ranks is refused by field name.
pub(crate) fn deepseek(v: &Value, model_type: &str, a: &mut Acc) -> Result<&'static str, String> {
    // `q_lora_rank`: absent = the config class default (1536); null = no q compression.
    let q_rank = match v.get("q_lora_rank") {
        None => 1536,
        Some(Value::Null) => 0,
        Some(x) => x
            .as_u64()
            .ok_or("`q_lora_rank` must be an integer or null")?,
    };
    let base = match (model_type, q_rank) {
        (_, 0) => "deepseek-v2-lite",
        ("deepseek_v2", _) => "deepseek-v2",
        _ => "deepseek-v3",
    };
    let want = [
        ("q_lora_rank", q_rank, if q_rank == 0 { 0 } else { 1536 }),
        ("kv_lora_rank", need(v, &["kv_lora_rank"])?, 512),
        ("qk_rope_head_dim", need(v, &["qk_rope_head_dim"])?, 64),
        ("qk_nope_head_dim", need(v, &["qk_nope_head_dim"])?, 128),
        ("v_head_dim", need(v, &["v_head_dim"])?, 128),
    ];
    let off: Vec<String> = want
        .iter()
        .filter(|(_, got, want)| got != want)
        .map(|(k, got, want)| format!("`{k}` = {got} (memfit's MLA shape has {want})"))
        .collect();
    if !off.is_empty() {
        return Err(format!(
            "model_type `{model_type}`: {} changes the MLA weights and memfit cannot represent it yet; refusing rather than counting a different model",
            off.join(", ")
        ));
    }
    decoder_sizes(v, a)?;
    a.put("head_dim", 128);
    a.put("experts", need(v, &["n_routed_experts"])?);
    a.put("top_k", need(v, &["num_experts_per_tok"])?);
    a.put("moe_ffn", need(v, &["moe_intermediate_size"])?);
    a.put("shared_experts", get(v, &["n_shared_experts"]).unwrap_or(0));
    a.put(
        "first_dense",
        get(v, &["first_k_dense_replace"]).unwrap_or(0),
    );
    Ok(base)
}

/// Llama 4 text decoder: routed experts (`intermediate_size` wide) plus one shared expert
/// in each MoE block, dense blocks `intermediate_size_mlp` wide, MoE blocks from
/// `moe_layers` or every `interleave_moe_layer_step`-th block; 8,192-token chunked
/// attention on the RoPE layers (3 of 4) bounds their KV cache (`window`).
pub(crate) fn llama4(v: &Value, a: &mut Acc) -> Result<&'static str, String> {
    if v.get("attention_bias").and_then(Value::as_bool) == Some(true) {
        return Err("model_type `llama4_text`: `attention_bias` = true changes the weights and memfit's import cannot represent it yet; refusing rather than counting a different model".into());
    }
    // Llama4TextConfig's defaults (transformers 5.23) for the fields a config may omit.
    let or = |k: &str, d: u64| get(v, &[k]).unwrap_or(d);
    let layers = or("num_hidden_layers", 48);
    let heads = or("num_attention_heads", 40);
    for (k, x) in [
        ("hidden", or("hidden_size", 5120)),
        ("heads", heads),
        ("layers", layers),
        ("kv_heads", or("num_key_value_heads", 8)),
        ("head_dim", or("head_dim", 128)),
        ("ffn", or("intermediate_size_mlp", 16_384)),
        ("moe_ffn", or("intermediate_size", 8192)),
        ("vocab", or("vocab_size", 202_048)),
        ("experts", or("num_local_experts", 16)),
        ("top_k", or("num_experts_per_tok", 1)),
        ("shared_experts", 1),
    ] {
        a.put(k, x);
    }
    let moe_layers = match v.get("moe_layers").and_then(Value::as_array) {
        Some(l) => l.len() as u64,
        None => {
            // config.json is untrusted input: a 0 step means every layer, as 1 does (a divisor from the file).
            let step = or("interleave_moe_layer_step", 1).max(1);
            (step - 1..layers).step_by(step as usize).count() as u64
        }
    };
    let dense = layers.saturating_sub(moe_layers);
    a.put("first_dense", dense);
    if dense > 0 && moe_layers > 0 {
        a.notes.push(format!("Llama 4 alternates {dense} dense and {moe_layers} MoE blocks; memfit places the dense blocks first (the totals are exact; a pipeline stage's share is approximate)"));
    }
    // Chunked attention: layer_types, else no_rope_layers (1 = RoPE = chunked), else every
    // layer but each 4th.
    let chunked = if let Some(t) = v.get("layer_types").and_then(Value::as_array) {
        t.iter()
            .filter(|t| t.as_str() == Some("chunked_attention"))
            .count() as u64
    } else if let Some(n) = v.get("no_rope_layers").and_then(Value::as_array) {
        n.iter().filter(|x| x.as_u64() == Some(1)).count() as u64
    } else {
        // A divisor read from config.json (untrusted): 0 counts as 1.
        layers - layers / or("no_rope_layer_interval", 4).max(1)
    };
    let chunk = match v.get("attention_chunk_size") {
        None => 8192,
        Some(x) => x.as_u64().unwrap_or(0),
    };
    if chunk > 0 && chunked > 0 {
        a.put("window", chunk);
        a.put("local_layers", chunked.min(layers));
    } else {
        a.put("window", 0);
    }
    // The preset whose block layout matches: Maverick's interleaved dense blocks, or Scout's.
    Ok(if dense > 0 {
        "llama-4-maverick"
    } else {
        "llama-4-scout"
    })
}

/// Llama-style decoders (Llama, Mistral, Mixtral, Qwen2/3 and their MoE, Gemma 1–3,
/// Phi-3, OLMo 1/2, OLMoE, Granite): sizes as keys on the family's preset.
pub(crate) fn llama_family(
    v: &Value,
    model_type: &str,
    a: &mut Acc,
) -> Result<&'static str, String> {
    let qwen_moe = matches!(model_type, "qwen2_moe" | "qwen3_moe");
    if qwen_moe {
        qwen_moe_keys(v, model_type, a)?;
    } else {
        refuse_unrepresented(v, model_type)?;
    }
    decoder_sizes(v, a)?;
    if let Some(d) = get(v, &["head_dim"]) {
        a.put("head_dim", d);
    }
    if let Some(e) = get(v, &["num_local_experts", "n_routed_experts", "num_experts"]) {
        a.put("experts", e);
        a.put("top_k", get(v, &["num_experts_per_tok"]).unwrap_or(2));
    }
    Ok(match model_type {
        "mixtral" => "mixtral-8x7b",
        "qwen2" => "qwen2.5-7b",
        "qwen2_moe" => "qwen1.5-moe-a2.7b",
        "qwen3" => "qwen3-8b",
        "qwen3_moe" => "qwen3-30b-a3b",
        "gemma" => "gemma-7b",
        "gemma2" => "gemma-2-9b",
        "gemma3_text" => "gemma-3-1b",
        "phi3" => "phi-3-mini",
        "olmo" => "olmo-7b",
        "olmo2" => "olmo-2-7b",
        "olmoe" => "olmoe-1b-7b",
        "mistral" => "mistral-7b",
        _ => "llama-2-7b",
    })
}

/// Qwen MoE: expert and shared-expert widths become keys (`moe_ffn`, `shared_experts` in
/// units of one expert's width); sparse-step and dense-only-layer variants are refused by
/// name (a qwen2_moe config read as dense with `intermediate_size`-wide experts came out
/// 3.5× too large).
pub(crate) fn qwen_moe_keys(v: &Value, model_type: &str, a: &mut Acc) -> Result<(), String> {
    if get(v, &["decoder_sparse_step"]).is_some_and(|x| x != 1) {
        return Err(format!("model_type `{model_type}`: `decoder_sparse_step` ≠ 1 (dense blocks between MoE blocks) changes the weights and memfit cannot represent it yet; refusing rather than counting a different model"));
    }
    if v.get("mlp_only_layers")
        .and_then(Value::as_array)
        .is_some_and(|l| !l.is_empty())
    {
        return Err(format!("model_type `{model_type}`: a non-empty `mlp_only_layers` (dense blocks among the MoE blocks) changes the weights and memfit cannot represent it yet; refusing rather than counting a different model"));
    }
    let e = need(v, &["moe_intermediate_size"])?;
    if e == 0 {
        return Err(format!(
            "model_type `{model_type}`: `moe_intermediate_size` must be at least 1"
        ));
    }
    a.put("moe_ffn", e);
    let shared = get(v, &["shared_expert_intermediate_size"]).unwrap_or(0);
    if !shared.is_multiple_of(e) {
        return Err(format!("model_type `{model_type}`: `shared_expert_intermediate_size` ({shared}) is not a multiple of `moe_intermediate_size` ({e}); memfit counts shared experts in units of one expert's width"));
    }
    a.put("shared_experts", shared / e);
    Ok(())
}

/// StarCoder2: LayerNorm, biases on every linear (unless `use_bias` is false), GELU MLP, GQA.
pub(crate) fn starcoder2(v: &Value, a: &mut Acc) -> Result<&'static str, String> {
    decoder_sizes(v, a)?;
    if v.get("use_bias").and_then(Value::as_bool) == Some(false) {
        a.keys.push(("bias", "none".into()));
    }
    Ok("starcoder2-7b")
}

/// StableLM (2 1.6B, 3B 4E1T): LayerNorm, SwiGLU, q/k/v biases when `use_qkv_bias`; per-head q/k norms and parallel blocks refused.
pub(crate) fn stablelm(v: &Value, a: &mut Acc) -> Result<&'static str, String> {
    for flag in ["qk_layernorm", "use_parallel_residual"] {
        if v.get(flag).and_then(Value::as_bool) == Some(true) {
            return Err(format!("model_type `stablelm`: `{flag}` = true (StableLM 2 12B's per-head q/k LayerNorms / parallel block) changes the weights and memfit cannot represent it yet; refusing rather than counting a different model"));
        }
    }
    decoder_sizes(v, a)?;
    let qkv_bias = v
        .get("use_qkv_bias")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    a.keys
        .push(("bias", if qkv_bias { "qkv" } else { "none" }.into()));
    Ok("stablelm-2-1.6b")
}

/// OPT: learned positions (`max_position_embeddings + 2`), LayerNorm, biases; OPT-350m's projections and post-norm refused.
pub(crate) fn opt(v: &Value, a: &mut Acc) -> Result<&'static str, String> {
    let h = need(v, &["hidden_size"])?;
    if get(v, &["word_embed_proj_dim"]).is_some_and(|w| w != h) {
        return Err("model_type `opt`: `word_embed_proj_dim` ≠ `hidden_size` (OPT-350m's project_in/project_out) changes the weights and memfit cannot represent it yet; refusing rather than counting a different model".into());
    }
    if v.get("do_layer_norm_before").and_then(Value::as_bool) == Some(false) {
        return Err("model_type `opt`: `do_layer_norm_before` = false (post-norm OPT-350m, no final LayerNorm) changes the weights and memfit cannot represent it yet; refusing rather than counting a different model".into());
    }
    a.put("hidden", h);
    a.put("heads", need(v, &["num_attention_heads"])?);
    a.put("layers", need(v, &["num_hidden_layers"])?);
    a.put("ffn", need(v, &["ffn_dim"])?);
    a.put("vocab", need(v, &["vocab_size"])?);
    // OPTLearnedPositionalEmbedding: max_position_embeddings + 2 rows (its offset).
    a.put("positions", need(v, &["max_position_embeddings"])? + 2);
    if v.get("enable_bias").and_then(Value::as_bool) == Some(false) {
        a.keys.push(("bias", "none".into()));
    }
    Ok("opt-1.3b")
}

/// Phi-2 / Phi-1.5: one LayerNorm per parallel block, biases everywhere incl. the LM head.
pub(crate) fn phi(v: &Value, a: &mut Acc) -> Result<&'static str, String> {
    if v.get("qk_layernorm").and_then(Value::as_bool) == Some(true) {
        return Err("model_type `phi`: `qk_layernorm` = true changes the weights and memfit cannot represent it yet; refusing rather than counting a different model".into());
    }
    decoder_sizes(v, a)?;
    Ok("phi-2")
}

/// Phi-3.5-MoE: LayerNorm, q/k/v/o and LM-head biases, experts without biases.
///
/// Without `lm_head_bias` (transformers' default false; Phi-3.5-MoE sets it) the preset's
/// LM-head bias is not there: the import carries the exact count.
///
/// # Formula
/// ```text
/// Ψ = V·h + L·(h·a·d + 2·h·a_kv·d + a·d·h [+ (a + 2a_kv)·d + h biases]
///             + 2·2h (LayerNorms) + E·3·h·f + h·E) + 2h [+ V·h untied] [+ V head bias]
/// ```
/// Source: transformers 5.24 `models/phimoe/modeling_phimoe.py`. Example: the default
/// PhimoeConfig (h 4,096, L 32, 32 heads, 8 KV, 16 experts of 6,400, V 32,064, no
/// LM-head bias): 41,872,793,600.
pub(crate) fn phimoe(v: &Value, a: &mut Acc) -> Result<&'static str, String> {
    decoder_sizes(v, a)?;
    let e = need(v, &["num_local_experts"])?;
    a.put("experts", e);
    a.put("top_k", get(v, &["num_experts_per_tok"]).unwrap_or(2));
    let bias = v.get("attention_bias").and_then(Value::as_bool) != Some(false);
    if !bias {
        a.keys.push(("bias", "none".into()));
    }
    let sane = [
        "hidden_size",
        "num_hidden_layers",
        "vocab_size",
        "intermediate_size",
        "num_attention_heads",
        "num_key_value_heads",
        "head_dim",
        "num_local_experts",
    ]
    .iter()
    .all(|k| get(v, &[k]).is_none_or(|x| x <= 1 << 24));
    if sane && v.get("lm_head_bias").and_then(Value::as_bool) != Some(true) {
        let u = |k: &str| get(v, &[k]).unwrap_or(0) as u128;
        let (h, l, vocab, f, heads) = (
            u("hidden_size"),
            u("num_hidden_layers"),
            u("vocab_size"),
            u("intermediate_size"),
            // A divisor read from config.json (untrusted): 0 counts as 1.
            u("num_attention_heads").max(1),
        );
        let kv = get(v, &["num_key_value_heads"]).map_or(heads, |k| k as u128);
        let d = get(v, &["head_dim"]).map_or(h / heads, |d| d as u128);
        let e = e as u128;
        let biases = if bias { (heads + 2 * kv) * d + h } else { 0 };
        let block = h * heads * d * 2 + 2 * h * kv * d + biases + 4 * h + e * 3 * h * f + h * e;
        let tied = v.get("tie_word_embeddings").and_then(Value::as_bool) == Some(true);
        a.exact = Some(vocab * h + l * block + 2 * h + if tied { 0 } else { vocab * h });
    }
    Ok("phi-3.5-moe")
}

/// gpt-oss: expert and router biases, attention sinks; MXFP4 experts noted.
pub(crate) fn gpt_oss(v: &Value, a: &mut Acc) -> Result<&'static str, String> {
    decoder_sizes(v, a)?;
    a.put("head_dim", need(v, &["head_dim"])?);
    a.put("experts", need(v, &["num_local_experts"])?);
    a.put(
        "top_k",
        get(v, &["num_experts_per_tok", "experts_per_token"]).unwrap_or(4),
    );
    a.notes.push("gpt-oss checkpoints store the experts in MXFP4 (4.25 bits per weight); memfit counts them at the precision you select (weight_dtype=int4 approximates the checkpoint for inference)".into());
    Ok("gpt-oss-20b")
}

/// Cohere (Command R, R+): one weight-only LayerNorm per parallel block, tied; with
/// `use_qk_norm` (Command R+) per-head q/k LayerNorms, `(a + a_kv)·d` weights.
pub(crate) fn cohere(v: &Value, a: &mut Acc) -> Result<&'static str, String> {
    decoder_sizes(v, a)?;
    Ok(
        if v.get("use_qk_norm").and_then(Value::as_bool) == Some(true) {
            "command-r-plus"
        } else {
            "command-r"
        },
    )
}

/// BLOOM: embedding LayerNorm, ALiBi, biases, `4h` MLP.
pub(crate) fn bloom(v: &Value, a: &mut Acc) -> Result<&'static str, String> {
    let h = need(v, &["hidden_size", "n_embed"])?;
    a.put("hidden", h);
    a.put("heads", need(v, &["n_head", "num_attention_heads"])?);
    a.put("layers", need(v, &["n_layer", "num_hidden_layers"])?);
    a.put("ffn", 4 * h);
    a.put("vocab", need(v, &["vocab_size"])?);
    Ok("bloom-7b1")
}

/// GPT-2: learned positions, LayerNorm, biases, tied.
pub(crate) fn gpt2(v: &Value, a: &mut Acc) -> Result<&'static str, String> {
    a.put("hidden", need(v, &["n_embd", "hidden_size"])?);
    a.put("heads", need(v, &["n_head", "num_attention_heads"])?);
    a.put("layers", need(v, &["n_layer", "num_hidden_layers"])?);
    a.put("vocab", need(v, &["vocab_size"])?);
    let h = need(v, &["n_embd", "hidden_size"])?;
    a.put("ffn", get(v, &["n_inner"]).unwrap_or(4 * h));
    Ok("gpt2")
}

/// GPT-NeoX / Pythia: two LayerNorms per block (parallel or sequential: the same
/// weights), biases on every linear, GELU MLP (`intermediate_size`, default `4h`), rotary
/// positions, untied unless the config says. `attention_bias` = false (biases on the MLP
/// only) is refused by name.
pub(crate) fn gpt_neox(v: &Value, a: &mut Acc) -> Result<&'static str, String> {
    if v.get("attention_bias").and_then(Value::as_bool) == Some(false) {
        return Err("model_type `gpt_neox`: `attention_bias` = false (biases on the MLP but not on the attention) changes the weights and memfit cannot represent it yet; refusing rather than counting a different model".into());
    }
    let h = need(v, &["hidden_size"])?;
    a.put("hidden", h);
    a.put("heads", need(v, &["num_attention_heads"])?);
    a.put("layers", need(v, &["num_hidden_layers"])?);
    a.put("ffn", get(v, &["intermediate_size"]).unwrap_or(4 * h));
    a.put("vocab", need(v, &["vocab_size"])?);
    Ok("gpt-neox-20b")
}

/// Falcon, as `transformers`' FalconDecoderLayer builds it: KV heads from `num_kv_heads`
/// (new decoder architecture), one (`multi_query`, the default) or all heads; one
/// LayerNorm per parallel block unless the block is sequential (`parallel_attn` false) or
/// the new architecture keeps two (`num_ln_in_parallel_attn`, default 2); biases on every
/// linear when `bias`; GELU MLP `ffn_hidden_size` (default `4h`) wide; tied.
pub(crate) fn falcon(v: &Value, a: &mut Acc) -> Result<&'static str, String> {
    let flag = |k: &str, d: bool| v.get(k).and_then(Value::as_bool).unwrap_or(d);
    let h = need(v, &["hidden_size", "d_model"])?;
    let heads = need(v, &["num_attention_heads", "n_head"])?;
    let new_arch = flag("new_decoder_architecture", false);
    a.put("hidden", h);
    a.put("heads", heads);
    a.put("layers", need(v, &["num_hidden_layers", "n_layer"])?);
    let kv = if new_arch {
        get(v, &["num_kv_heads", "n_head_kv"]).unwrap_or(heads)
    } else if flag("multi_query", true) {
        1
    } else {
        heads
    };
    a.put("kv_heads", kv);
    a.put("ffn", get(v, &["ffn_hidden_size"]).unwrap_or(4 * h));
    a.put("vocab", need(v, &["vocab_size"])?);
    let lns = match get(v, &["num_ln_in_parallel_attn"]) {
        None if new_arch => 2,
        n => n.unwrap_or(1),
    };
    let two_norms = !flag("parallel_attn", true) || lns == 2;
    if flag("bias", false) {
        a.keys.push(("bias", "all".into()));
    }
    Ok(if two_norms { "falcon-40b" } else { "falcon-7b" })
}

/// T5 / mT5 / Flan-T5: encoder-decoder, gated or plain MLP.
pub(crate) fn t5(v: &Value, a: &mut Acc) -> Result<&'static str, String> {
    let d = need(v, &["d_model"])?;
    a.put("hidden", d);
    a.put("heads", need(v, &["num_heads"])?);
    a.put("layers", need(v, &["num_decoder_layers", "num_layers"])?);
    a.put("head_dim", need(v, &["d_kv"])?);
    a.put("ffn", need(v, &["d_ff"])?);
    a.put("vocab", need(v, &["vocab_size"])?);
    let gated = v
        .get("feed_forward_proj")
        .and_then(Value::as_str)
        .is_some_and(|p| p.starts_with("gated"));
    a.keys.push((
        "mlp",
        if gated {
            "swiglu".into()
        } else {
            "gelu".into()
        },
    ));
    if get(v, &["num_layers"]) != get(v, &["num_decoder_layers"])
        && get(v, &["num_decoder_layers"]).is_some()
    {
        a.notes.push(
            "encoder and decoder depths differ; memfit uses the decoder depth for both".into(),
        );
    }
    Ok(if gated { "t0-3b" } else { "t5-large" })
}

/// Sliding-window attention (no weights; the KV cache of the windowed layers holds at most
/// `window` tokens): `window` and `local_layers` keys from `sliding_window` and, in order of
/// preference, `layer_types` (count of `sliding_attention`), Gemma 3's
/// `sliding_window_pattern` (every P-th layer global), Gemma 2's alternation (even layers
/// local), Qwen's `use_sliding_window` from `max_window_layers` on, or every layer
/// (Mistral v0.1, Mixtral, StarCoder2). No window, or one as long as the context: nothing.
pub(crate) fn window_keys(v: &Value, model_type: &str, keys: &mut Vec<(&'static str, String)>) {
    let Some(w) = get(v, &["sliding_window"]).filter(|&w| w > 0) else {
        return;
    };
    if get(v, &["max_position_embeddings"]).is_some_and(|m| w >= m) {
        return;
    }
    let layers = get(v, &["num_hidden_layers", "n_layer"]).unwrap_or(0);
    let local = if let Some(types) = v.get("layer_types").and_then(Value::as_array) {
        types
            .iter()
            .filter(|t| t.as_str() == Some("sliding_attention"))
            .count() as u64
    } else {
        match model_type {
            // Every P-th layer global (Gemma 3: 6, Cohere2: 4).
            "gemma3_text" | "cohere2" => {
                let default = if model_type == "cohere2" { 4 } else { 6 };
                layers
                    - layers
                        // A divisor read from config.json (untrusted): 0 counts as 1.
                        / get(v, &["sliding_window_pattern"])
                            .unwrap_or(default)
                            .max(1)
            }
            "gemma2" => layers.div_ceil(2),
            "qwen2" | "qwen2_moe" | "qwen3" | "qwen3_moe" => {
                if v.get("use_sliding_window").and_then(Value::as_bool) == Some(true) {
                    layers.saturating_sub(get(v, &["max_window_layers"]).unwrap_or(0))
                } else {
                    0
                }
            }
            _ => layers,
        }
    };
    if local > 0 {
        keys.push(("window", w.to_string()));
        keys.push(("local_layers", local.min(layers).to_string()));
    }
}
