//! The generic reading of a `model_type` memfit has no reader for: a Llama-style decoder,
//! but only when every field of the config is one it reads or one known to change no
//! weight, and the activation is SiLU; anything else is refused by name (0.5 % off is the
//! most a user should ever get from an unknown family, and a refusal is better).

use super::*;

/// An unknown `model_type` with the standard decoder field names: read as a Llama-style
/// block (RMSNorm, SwiGLU, no biases, rotary positions, untied unless the config says),
/// with a note that says so; without them, refused with the missing fields named.
pub(super) fn generic(v: &Value, model_type: &str) -> Result<Imported, String> {
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
    let weights = generic_unread(v);
    if !weights.is_empty() {
        return Err(format!(
            "model_type `{model_type}` is not supported ({SUPPORTED}); a generic Llama-style import would ignore {}, which may change the weights: refusing rather than counting a different model",
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
        params: None,
        largest_layer: None,
        layer_mix: None,
        model_type: model_type.to_string(),
        base: "llama-2-7b",
        keys,
        notes: vec![format!(
            "model_type `{model_type}` is not one memfit knows: read as a Llama-style decoder (RMSNorm, SwiGLU MLP, no biases, rotary positions, two norms per block) from its standard fields; check the parameter count against the model card"
        )],
    })
}

/// Fields a Llama-style block reads, or that change no weight (token ids, dropout, norm
/// epsilons, rotary settings, scalar multipliers, loss and generation settings): the
/// generic import may see them.
const GENERIC_NEUTRAL: &[&str] = &[
    "hidden_size",
    "num_attention_heads",
    "num_hidden_layers",
    "num_key_value_heads",
    "intermediate_size",
    "vocab_size",
    "head_dim",
    "tie_word_embeddings",
    "model_type",
    "sliding_window",
    "use_sliding_window",
    "max_window_layers",
    "layer_types",
    "quantization_config",
    "hidden_act",
    "_name_or_path",
    "architectures",
    "auto_map",
    "transformers_version",
    "torch_dtype",
    "dtype",
    "attention_dropout",
    "hidden_dropout",
    "embedding_dropout",
    "residual_dropout",
    "resid_pdrop",
    "embd_pdrop",
    "attn_pdrop",
    "dropout",
    "bos_token_id",
    "eos_token_id",
    "pad_token_id",
    "eod_token_id",
    "sep_token_id",
    "decoder_start_token_id",
    "initializer_range",
    "initializer_factor",
    "max_position_embeddings",
    "original_max_position_embeddings",
    "rms_norm_eps",
    "layer_norm_eps",
    "layer_norm_epsilon",
    "norm_eps",
    "norm_epsilon",
    "rope_theta",
    "rope_scaling",
    "rope_parameters",
    "rope_interleave",
    "partial_rotary_factor",
    "rotary_pct",
    "rope_type",
    "no_rope_layers",
    "no_rope_layer_interval",
    "use_cache",
    "num_logits_to_keep",
    "pretraining_tp",
    "output_attentions",
    "output_hidden_states",
    "return_dict",
    "use_return_dict",
    "chunk_size_feed_forward",
    "is_encoder_decoder",
    "is_decoder",
    "add_cross_attention",
    "tie_encoder_decoder",
    "torchscript",
    "pruned_heads",
    "tf_legacy_loss",
    "use_bfloat16",
    "id2label",
    "label2id",
    "problem_type",
    "tokenizer_class",
    "task_specific_params",
    "finetuning_task",
    "prefix",
    "output_router_logits",
    "router_aux_loss_coef",
    "aux_loss_coef",
    "router_jitter_noise",
    "z_loss_coefficient",
    "attention_multiplier",
    "embedding_multiplier",
    "residual_multiplier",
    "logits_scaling",
    "logit_scale",
    "query_pre_attn_scalar",
    "attn_logit_softcapping",
    "final_logit_softcapping",
    "_attn_implementation",
    "attn_implementation",
    "use_flash_attn",
    "max_length",
    "min_length",
    "do_sample",
    "temperature",
    "top_p",
    "top_k",
    "num_beams",
    "repetition_penalty",
    "length_penalty",
    "no_repeat_ngram_size",
    "early_stopping",
    "num_return_sequences",
    "bad_words_ids",
    "typical_p",
    "use_bidirectional_attention",
];

/// Flags that leave a Llama-style block unchanged when false.
const GENERIC_FALSE_OK: &[&str] = &[
    "bias",
    "qkv_bias",
    "attention_bias",
    "mlp_bias",
    "use_bias",
    "use_qkv_bias",
    "qk_layernorm",
    "qk_norm",
    "use_qk_norm",
    "attention_out_bias",
    "use_parallel_residual",
];

/// The fields of `v` a generic Llama-style import would ignore and that may change the
/// weights: any field not in [`GENERIC_NEUTRAL`] unless null (or false, for the flags in
/// [`GENERIC_FALSE_OK`]; or 0, for expert counts), block kinds other than (sliding, full,
/// chunked) attention in `layer_types`, and an activation other than SiLU (an ungated
/// MLP: Apertus's xIELU, Nemotron's ReLU²). So the fallback answers only when what it
/// reads is all that fixes the weights; everything else is refused by name.
fn generic_unread(v: &Value) -> Vec<String> {
    let Some(obj) = v.as_object() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (k, x) in obj {
        let neutral = GENERIC_NEUTRAL.contains(&k.as_str())
            || x.is_null()
            || (x == &Value::Bool(false) && GENERIC_FALSE_OK.contains(&k.as_str()))
            || (x.as_u64() == Some(0) && k.contains("expert"));
        if !neutral {
            out.push(k.clone());
        }
    }
    if let Some(Value::Array(types)) = v.get("layer_types") {
        let attention = |t: &Value| {
            matches!(
                t.as_str(),
                Some("full_attention" | "sliding_attention" | "chunked_attention" | "attention")
            )
        };
        if !types.iter().all(attention) {
            out.push("layer_types".into());
        }
    }
    if let Some(act) = v.get("hidden_act").filter(|x| !x.is_null()) {
        if !matches!(act.as_str(), Some("silu" | "swish")) {
            out.push("hidden_act".into());
        }
    }
    out
}
