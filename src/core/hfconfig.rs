//! Hugging Face `config.json` → memfit model keys.
//!
//! Reads the fields that fix the weight shapes for the common families ([`SUPPORTED`]);
//! an unknown `model_type` with the standard decoder fields is read as a Llama-style
//! block with a note saying so ([`generic`]). A field that changes the weights and that
//! memfit cannot express is refused by name; a missing required field is named in the
//! error. The result is a list of query keys, so the import goes through the same
//! validated path as the URL and the form.

use serde_json::Value;

/// What an import produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Imported {
    /// `model_type` as read.
    pub model_type: String,
    /// The memfit preset the shape is built on.
    pub base: &'static str,
    /// `(key, value)` pairs to apply after selecting `base`.
    pub keys: Vec<(&'static str, String)>,
    /// Things the import could not represent exactly.
    pub notes: Vec<String>,
}

fn get(v: &Value, names: &[&str]) -> Option<u64> {
    names.iter().find_map(|n| v.get(*n).and_then(Value::as_u64))
}

fn need(v: &Value, names: &[&str]) -> Result<u64, String> {
    get(v, names).ok_or_else(|| format!("config.json lacks `{}`", names[0]))
}

/// Weight-changing fields of decoder configs that the importer cannot express (expert
/// widths, shared experts, dense first layers, MLA ranks, sparse-layer steps).
const UNREPRESENTED: [&str; 8] = [
    "moe_intermediate_size",
    "shared_expert_intermediate_size",
    "n_shared_experts",
    "first_k_dense_replace",
    "q_lora_rank",
    "kv_lora_rank",
    "decoder_sparse_step",
    "mlp_only_layers",
];

/// Parses a `config.json` text.
///
/// # Errors
/// The JSON does not parse, `model_type` is unknown, or a required field is missing
/// (the message names it).
///
/// # Example
/// ```
/// use memfit::core::hfconfig::parse;
/// let cfg = r#"{"model_type":"llama","hidden_size":4096,"intermediate_size":14336,
///   "num_hidden_layers":32,"num_attention_heads":32,"num_key_value_heads":8,"vocab_size":128256}"#;
/// let i = parse(cfg).unwrap();
/// assert_eq!(i.base, "llama-2-7b");
/// assert!(i.keys.contains(&("kv_heads", "8".to_string())));
/// ```
pub fn parse(text: &str) -> Result<Imported, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    if !v.is_object() {
        return Err("config.json must be a JSON object".into());
    }
    let model_type = v
        .get("model_type")
        .and_then(Value::as_str)
        .ok_or("config.json lacks `model_type`")?
        .to_string();
    let mut keys: Vec<(&'static str, String)> = Vec::new();
    let mut notes = Vec::new();
    let mut put = |k: &'static str, x: u64| keys.push((k, x.to_string()));
    let tied = v.get("tie_word_embeddings").and_then(Value::as_bool);
    let base = match model_type.as_str() {
        "llama" | "mistral" | "mixtral" | "qwen2" | "qwen2_moe" | "qwen3" | "qwen3_moe"
        | "gemma" | "gemma2" | "gemma3_text" | "phi3" | "olmo2" | "deepseek_v3" | "granite" => {
            // Qwen MoE: expert and shared-expert widths become keys; sparse-step and
            // dense-only-layer variants are refused by name (a qwen2_moe config read as dense
            // with `intermediate_size`-wide experts came out 3.5× too large).
            let qwen_moe = matches!(model_type.as_str(), "qwen2_moe" | "qwen3_moe");
            if qwen_moe {
                if get(&v, &["decoder_sparse_step"]).is_some_and(|x| x != 1) {
                    return Err(format!("model_type `{model_type}`: `decoder_sparse_step` ≠ 1 (dense blocks between MoE blocks) changes the weights and memfit cannot represent it yet; refusing rather than counting a different model"));
                }
                if v.get("mlp_only_layers")
                    .and_then(Value::as_array)
                    .is_some_and(|l| !l.is_empty())
                {
                    return Err(format!("model_type `{model_type}`: a non-empty `mlp_only_layers` (dense blocks among the MoE blocks) changes the weights and memfit cannot represent it yet; refusing rather than counting a different model"));
                }
                let e = need(&v, &["moe_intermediate_size"])?;
                if e == 0 {
                    return Err(format!(
                        "model_type `{model_type}`: `moe_intermediate_size` must be at least 1"
                    ));
                }
                put("moe_ffn", e);
                let shared = get(&v, &["shared_expert_intermediate_size"]).unwrap_or(0);
                if !shared.is_multiple_of(e) {
                    return Err(format!("model_type `{model_type}`: `shared_expert_intermediate_size` ({shared}) is not a multiple of `moe_intermediate_size` ({e}); memfit counts shared experts in units of one expert's width"));
                }
                put("shared_experts", shared / e);
            }
            // Fields that change the weights and that the query keys cannot express: refuse
            // rather than count a different model. DeepSeek-V3 takes them from its preset
            // (noted below).
            if model_type != "deepseek_v3" && !qwen_moe {
                let unknown: Vec<&str> = UNREPRESENTED
                    .iter()
                    .copied()
                    .filter(|k| v.get(*k).is_some_and(|x| !x.is_null()))
                    .collect();
                let mut unknown = unknown;
                // Granite and Llama configs may carry biases: `attention_bias` on q/k/v/o,
                // `mlp_bias` on the MLP, neither expressible with one `bias` key.
                for flag in ["attention_bias", "mlp_bias"] {
                    if v.get(flag).and_then(Value::as_bool) == Some(true) {
                        unknown.push(flag);
                    }
                }
                if !unknown.is_empty() {
                    return Err(format!(
                        "model_type `{model_type}`: {} {} the weights and memfit's import cannot represent {} yet; refusing rather than counting a different model",
                        unknown.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", "),
                        if unknown.len() == 1 { "changes" } else { "change" },
                        if unknown.len() == 1 { "it" } else { "them" }
                    ));
                }
            }
            let h = need(&v, &["hidden_size"])?;
            let heads = need(&v, &["num_attention_heads"])?;
            put("hidden", h);
            put("heads", heads);
            put("layers", need(&v, &["num_hidden_layers"])?);
            put(
                "kv_heads",
                get(&v, &["num_key_value_heads"]).unwrap_or(heads),
            );
            put("ffn", need(&v, &["intermediate_size"])?);
            put("vocab", need(&v, &["vocab_size"])?);
            if let Some(d) = get(&v, &["head_dim"]) {
                put("head_dim", d);
            }
            if let Some(e) = get(
                &v,
                &["num_local_experts", "n_routed_experts", "num_experts"],
            ) {
                put("experts", e);
                put("top_k", get(&v, &["num_experts_per_tok"]).unwrap_or(2));
            }
            match model_type.as_str() {
                "mixtral" => "mixtral-8x7b",
                "qwen2" => "qwen2.5-7b",
                "qwen2_moe" => "qwen1.5-moe-a2.7b",
                "qwen3" => "qwen3-8b",
                "qwen3_moe" => "qwen3-30b-a3b",
                "gemma" => {
                    notes.push("Gemma (v1) is counted on Gemma 2's block (four norms per layer, two more than Gemma v1's): the parameter count is slightly high".into());
                    "gemma-2-9b"
                }
                "gemma2" => "gemma-2-9b",
                "gemma3_text" => "gemma-3-1b",
                "phi3" => "phi-3-mini",
                "olmo2" => "olmo-2-7b",
                "deepseek_v3" => {
                    notes.push(
                        "DeepSeek-V3's MLA ranks and expert widths come from the preset".into(),
                    );
                    "deepseek-v3"
                }
                "mistral" => "mistral-7b",
                _ => "llama-2-7b",
            }
        }
        "starcoder2" => {
            put("hidden", need(&v, &["hidden_size"])?);
            let heads = need(&v, &["num_attention_heads"])?;
            put("heads", heads);
            put("layers", need(&v, &["num_hidden_layers"])?);
            put(
                "kv_heads",
                get(&v, &["num_key_value_heads"]).unwrap_or(heads),
            );
            put("ffn", need(&v, &["intermediate_size"])?);
            put("vocab", need(&v, &["vocab_size"])?);
            if v.get("use_bias").and_then(Value::as_bool) == Some(false) {
                keys.push(("bias", "none".into()));
            }
            "starcoder2-7b"
        }
        "stablelm" => {
            for flag in ["qk_layernorm", "use_parallel_residual"] {
                if v.get(flag).and_then(Value::as_bool) == Some(true) {
                    return Err(format!("model_type `stablelm`: `{flag}` = true (StableLM 2 12B's per-head q/k LayerNorms / parallel block) changes the weights and memfit cannot represent it yet; refusing rather than counting a different model"));
                }
            }
            let heads = need(&v, &["num_attention_heads"])?;
            put("hidden", need(&v, &["hidden_size"])?);
            put("heads", heads);
            put("layers", need(&v, &["num_hidden_layers"])?);
            put(
                "kv_heads",
                get(&v, &["num_key_value_heads"]).unwrap_or(heads),
            );
            put("ffn", need(&v, &["intermediate_size"])?);
            put("vocab", need(&v, &["vocab_size"])?);
            let qkv_bias = v
                .get("use_qkv_bias")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            keys.push(("bias", if qkv_bias { "qkv" } else { "none" }.into()));
            "stablelm-2-1.6b"
        }
        "opt" => {
            let h = need(&v, &["hidden_size"])?;
            if get(&v, &["word_embed_proj_dim"]).is_some_and(|w| w != h) {
                return Err("model_type `opt`: `word_embed_proj_dim` ≠ `hidden_size` (OPT-350m's project_in/project_out) changes the weights and memfit cannot represent it yet; refusing rather than counting a different model".into());
            }
            if v.get("do_layer_norm_before").and_then(Value::as_bool) == Some(false) {
                return Err("model_type `opt`: `do_layer_norm_before` = false (post-norm OPT-350m, no final LayerNorm) changes the weights and memfit cannot represent it yet; refusing rather than counting a different model".into());
            }
            put("hidden", h);
            put("heads", need(&v, &["num_attention_heads"])?);
            put("layers", need(&v, &["num_hidden_layers"])?);
            put("ffn", need(&v, &["ffn_dim"])?);
            put("vocab", need(&v, &["vocab_size"])?);
            // OPTLearnedPositionalEmbedding: max_position_embeddings + 2 rows (its offset).
            put("positions", need(&v, &["max_position_embeddings"])? + 2);
            if v.get("enable_bias").and_then(Value::as_bool) == Some(false) {
                keys.push(("bias", "none".into()));
            }
            "opt-1.3b"
        }
        "phi" => {
            if v.get("qk_layernorm").and_then(Value::as_bool) == Some(true) {
                return Err("model_type `phi`: `qk_layernorm` = true changes the weights and memfit cannot represent it yet; refusing rather than counting a different model".into());
            }
            let heads = need(&v, &["num_attention_heads"])?;
            put("hidden", need(&v, &["hidden_size"])?);
            put("heads", heads);
            put("layers", need(&v, &["num_hidden_layers"])?);
            put(
                "kv_heads",
                get(&v, &["num_key_value_heads"]).unwrap_or(heads),
            );
            put("ffn", need(&v, &["intermediate_size"])?);
            put("vocab", need(&v, &["vocab_size"])?);
            "phi-2"
        }
        "phimoe" => {
            let heads = need(&v, &["num_attention_heads"])?;
            put("hidden", need(&v, &["hidden_size"])?);
            put("heads", heads);
            put("layers", need(&v, &["num_hidden_layers"])?);
            put(
                "kv_heads",
                get(&v, &["num_key_value_heads"]).unwrap_or(heads),
            );
            put("ffn", need(&v, &["intermediate_size"])?);
            put("vocab", need(&v, &["vocab_size"])?);
            put("experts", need(&v, &["num_local_experts"])?);
            put("top_k", get(&v, &["num_experts_per_tok"]).unwrap_or(2));
            if v.get("attention_bias").and_then(Value::as_bool) == Some(false) {
                keys.push(("bias", "none".into()));
            }
            "phi-3.5-moe"
        }
        "gpt_oss" => {
            let heads = need(&v, &["num_attention_heads"])?;
            put("hidden", need(&v, &["hidden_size"])?);
            put("heads", heads);
            put("layers", need(&v, &["num_hidden_layers"])?);
            put(
                "kv_heads",
                get(&v, &["num_key_value_heads"]).unwrap_or(heads),
            );
            put("head_dim", need(&v, &["head_dim"])?);
            put("ffn", need(&v, &["intermediate_size"])?);
            put("vocab", need(&v, &["vocab_size"])?);
            put("experts", need(&v, &["num_local_experts"])?);
            put(
                "top_k",
                get(&v, &["num_experts_per_tok", "experts_per_token"]).unwrap_or(4),
            );
            notes.push("gpt-oss checkpoints store the experts in MXFP4 (4.25 bits per weight); memfit counts them at the precision you select (weight_dtype=int4 approximates the checkpoint for inference)".into());
            "gpt-oss-20b"
        }
        "cohere" => {
            if v.get("use_qk_norm").and_then(Value::as_bool) == Some(true) {
                return Err("model_type `cohere`: `use_qk_norm` = true (Command R+'s per-head q/k LayerNorms) changes the weights and memfit cannot represent it yet; refusing rather than counting a different model".into());
            }
            let heads = need(&v, &["num_attention_heads"])?;
            put("hidden", need(&v, &["hidden_size"])?);
            put("heads", heads);
            put("layers", need(&v, &["num_hidden_layers"])?);
            put(
                "kv_heads",
                get(&v, &["num_key_value_heads"]).unwrap_or(heads),
            );
            put("ffn", need(&v, &["intermediate_size"])?);
            put("vocab", need(&v, &["vocab_size"])?);
            "command-r"
        }
        "bloom" => {
            let h = need(&v, &["hidden_size", "n_embed"])?;
            put("hidden", h);
            put("heads", need(&v, &["n_head", "num_attention_heads"])?);
            put("layers", need(&v, &["n_layer", "num_hidden_layers"])?);
            put("ffn", 4 * h);
            put("vocab", need(&v, &["vocab_size"])?);
            "bloom-7b1"
        }
        "gpt2" => {
            put("hidden", need(&v, &["n_embd", "hidden_size"])?);
            put("heads", need(&v, &["n_head", "num_attention_heads"])?);
            put("layers", need(&v, &["n_layer", "num_hidden_layers"])?);
            put("vocab", need(&v, &["vocab_size"])?);
            let h = need(&v, &["n_embd", "hidden_size"])?;
            put("ffn", get(&v, &["n_inner"]).unwrap_or(4 * h));
            "gpt2"
        }
        "gpt_neox" => {
            let h = need(&v, &["hidden_size"])?;
            put("hidden", h);
            put("heads", need(&v, &["num_attention_heads"])?);
            put("layers", need(&v, &["num_hidden_layers"])?);
            put("ffn", get(&v, &["intermediate_size"]).unwrap_or(4 * h));
            put("vocab", need(&v, &["vocab_size"])?);
            keys.push(("mlp", "gelu".into()));
            keys.push(("norm", "layernorm".into()));
            keys.push(("bias", "all".into()));
            notes.push("GPT-NeoX: rotary positions, parallel attention; counted as a GPT-2-style block without learned positions".into());
            "bloom-7b1"
        }
        "falcon" | "RefinedWeb" | "RefinedWebModel" => {
            let h = need(&v, &["hidden_size", "d_model"])?;
            let heads = need(&v, &["num_attention_heads", "n_head"])?;
            put("hidden", h);
            put("heads", heads);
            put("layers", need(&v, &["num_hidden_layers", "n_layer"])?);
            let kv = if v
                .get("multi_query")
                .and_then(Value::as_bool)
                .unwrap_or(false)
            {
                1
            } else {
                get(&v, &["num_kv_heads", "n_head_kv"]).unwrap_or(heads)
            };
            put("kv_heads", kv);
            put("ffn", get(&v, &["ffn_hidden_size"]).unwrap_or(4 * h));
            put("vocab", need(&v, &["vocab_size"])?);
            keys.push(("mlp", "gelu".into()));
            keys.push(("norm", "layernorm".into()));
            keys.push(("bias", "none".into()));
            notes.push(if v.get("new_decoder_architecture").and_then(Value::as_bool).unwrap_or(false) {
                "Falcon's new decoder architecture (grouped KV, two layer norms per block) is counted as a GPT-style block: the parameter count is approximate".to_string()
            } else {
                "Falcon: parallel attention with multi-query KV, counted as a GPT-style block: the parameter count is approximate (within 2 % for Falcon-7B)".to_string()
            });
            "bloom-7b1"
        }
        "t5" | "mt5" => {
            let d = need(&v, &["d_model"])?;
            put("hidden", d);
            put("heads", need(&v, &["num_heads"])?);
            put("layers", need(&v, &["num_decoder_layers", "num_layers"])?);
            put("head_dim", need(&v, &["d_kv"])?);
            put("ffn", need(&v, &["d_ff"])?);
            put("vocab", need(&v, &["vocab_size"])?);
            let gated = v
                .get("feed_forward_proj")
                .and_then(Value::as_str)
                .is_some_and(|p| p.starts_with("gated"));
            keys.push((
                "mlp",
                if gated {
                    "swiglu".into()
                } else {
                    "gelu".into()
                },
            ));
            if get(&v, &["num_layers"]) != get(&v, &["num_decoder_layers"])
                && get(&v, &["num_decoder_layers"]).is_some()
            {
                notes.push(
                    "encoder and decoder depths differ; memfit uses the decoder depth for both"
                        .into(),
                );
            }
            if gated {
                "t0-3b"
            } else {
                "t5-large"
            }
        }
        other => return generic(&v, other),
    };
    if let Some(t) = tied {
        keys.push(("tied", (t as u8).to_string()));
    }
    window_keys(&v, &model_type, &mut keys);
    Ok(Imported {
        model_type,
        base,
        keys,
        notes,
    })
}

/// Sliding-window attention (no weights; the KV cache of the windowed layers holds at most
/// `window` tokens): `window` and `local_layers` keys from `sliding_window` and, in order of
/// preference, `layer_types` (count of `sliding_attention`), Gemma 3's
/// `sliding_window_pattern` (every P-th layer global), Gemma 2's alternation (even layers
/// local), Qwen's `use_sliding_window` from `max_window_layers` on, or every layer
/// (Mistral v0.1, Mixtral, StarCoder2). No window, or one as long as the context: nothing.
fn window_keys(v: &Value, model_type: &str, keys: &mut Vec<(&'static str, String)>) {
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
            "gemma3_text" => {
                layers - layers / get(v, &["sliding_window_pattern"]).unwrap_or(6).max(1)
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

/// The model types read exactly (or, for a few, with a note), in the refusal message.
pub const SUPPORTED: &str = "llama, mistral, mixtral, qwen2, qwen2_moe, qwen3, qwen3_moe, gemma, gemma2, gemma3_text, phi, phi3, phimoe, olmo2, granite, cohere, gpt_oss, deepseek_v3, starcoder2, stablelm, opt, bloom, gpt2, gpt_neox, falcon, t5, mt5";

/// An unknown `model_type` with the standard decoder field names: read as a Llama-style
/// block (RMSNorm, SwiGLU, no biases, rotary positions, untied unless the config says),
/// with a note that says so; without them, refused with the missing fields named.
fn generic(v: &Value, model_type: &str) -> Result<Imported, String> {
    const FIELDS: [&str; 5] = [
        "hidden_size",
        "num_attention_heads",
        "num_hidden_layers",
        "intermediate_size",
        "vocab_size",
    ];
    let missing: Vec<&str> = FIELDS
        .iter()
        .copied()
        .filter(|f| get(v, &[f]).is_none())
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "model_type `{model_type}` is not supported ({SUPPORTED}), and its config lacks the standard decoder fields a generic import needs: {}",
            missing.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ")
        ));
    }
    let weights: Vec<&str> = UNREPRESENTED
        .iter()
        .copied()
        .chain([
            "num_local_experts",
            "num_experts",
            "n_routed_experts",
            "attention_bias",
            "mlp_bias",
            "qk_layernorm",
            "use_qkv_bias",
            "use_bias",
            "sliding_window_pattern",
        ])
        .filter(|k| {
            v.get(*k)
                .is_some_and(|x| !x.is_null() && x != &Value::Bool(false))
        })
        .collect();
    if !weights.is_empty() {
        return Err(format!(
            "model_type `{model_type}` is not supported ({SUPPORTED}); a generic Llama-style import would ignore {}, which change the weights: refusing rather than counting a different model",
            weights.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ")
        ));
    }
    let heads = get(v, &["num_attention_heads"]).unwrap_or(1);
    let mut keys: Vec<(&'static str, String)> = vec![
        ("hidden", get(v, &["hidden_size"]).unwrap_or(1).to_string()),
        ("heads", heads.to_string()),
        (
            "layers",
            get(v, &["num_hidden_layers"]).unwrap_or(1).to_string(),
        ),
        (
            "kv_heads",
            get(v, &["num_key_value_heads"])
                .unwrap_or(heads)
                .to_string(),
        ),
        (
            "ffn",
            get(v, &["intermediate_size"]).unwrap_or(1).to_string(),
        ),
        ("vocab", get(v, &["vocab_size"]).unwrap_or(1).to_string()),
    ];
    if let Some(d) = get(v, &["head_dim"]) {
        keys.push(("head_dim", d.to_string()));
    }
    if let Some(t) = v.get("tie_word_embeddings").and_then(Value::as_bool) {
        keys.push(("tied", (t as u8).to_string()));
    }
    window_keys(v, model_type, &mut keys);
    Ok(Imported {
        model_type: model_type.to_string(),
        base: "llama-2-7b",
        keys,
        notes: vec![format!(
            "model_type `{model_type}` is not one memfit knows: read as a Llama-style decoder (RMSNorm, SwiGLU MLP, no biases, rotary positions, two norms per block) from its standard fields; check the parameter count against the model card"
        )],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_missing_field() {
        let e = parse(r#"{"model_type":"llama","hidden_size":4096}"#).unwrap_err();
        assert!(e.contains("num_attention_heads"), "{e}");
        assert!(parse("[1]").unwrap_err().contains("object"));
        let e = parse(r#"{"model_type":"rwkv"}"#).unwrap_err();
        assert!(
            e.contains("not supported") && e.contains("`hidden_size`") && e.contains("`rwkv`"),
            "{e}"
        );
        assert!(parse("{").unwrap_err().contains("JSON"));
        // Zero widths are refused or left to the codec's range checks, never a panic.
        for t in [
            "qwen2_moe",
            "qwen3_moe",
            "opt",
            "bloom",
            "stablelm",
            "starcoder2",
            "x",
        ] {
            let _ = parse(&format!(
                r#"{{"model_type":"{t}","hidden_size":0,"intermediate_size":0,"moe_intermediate_size":0,
                "shared_expert_intermediate_size":0,"num_attention_heads":0,"num_hidden_layers":0,
                "vocab_size":0,"ffn_dim":0,"max_position_embeddings":0,"n_head":0,"n_layer":0}}"#
            ));
        }
    }
}
