//! Unit tests of the config.json importer.

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

/// `quantization_config` blocks as checkpoints publish them → the `quant` key.
#[test]
fn quantization_config_to_quant() {
    let base = r#""model_type":"llama","hidden_size":4096,"intermediate_size":14336,"num_hidden_layers":32,"num_attention_heads":32,"num_key_value_heads":8,"vocab_size":128256"#;
    let with = |q: &str| parse(&format!("{{{base},\"quantization_config\":{q}}}")).unwrap();
    let key = |i: &super::Imported, k: &str| {
        i.keys
            .iter()
            .rev()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| v.clone())
    };
    // hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4
    let awq = with(
        r#"{"bits":4,"group_size":128,"quant_method":"awq","version":"gemm","zero_point":true}"#,
    );
    assert_eq!(key(&awq, "quant").as_deref(), Some("w4a16"));
    assert_eq!(key(&awq, "quant_group").as_deref(), Some("128"));
    // RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8-dynamic (compressed-tensors, channel scales)
    let fp8 = with(
        r#"{"quant_method":"compressed-tensors","config_groups":{"group_0":{"targets":["Linear"],"weights":{"num_bits":8,"type":"float","strategy":"channel"}}}}"#,
    );
    assert_eq!(key(&fp8, "quant").as_deref(), Some("fp8"));
    let w8a8 = with(
        r#"{"quant_method":"compressed-tensors","config_groups":{"group_0":{"weights":{"num_bits":8,"type":"int","strategy":"channel"}}}}"#,
    );
    assert_eq!(key(&w8a8, "quant").as_deref(), Some("w8a8"));
    // openai/gpt-oss-20b
    let mx = with(
        r#"{"modules_to_not_convert":["model.layers.*.self_attn","model.layers.*.mlp.router","model.embed_tokens","lm_head"],"quant_method":"mxfp4"}"#,
    );
    assert_eq!(key(&mx, "quant").as_deref(), Some("mxfp4"));
    let nf4 = with(
        r#"{"quant_method":"bitsandbytes","load_in_4bit":true,"bnb_4bit_quant_type":"nf4","bnb_4bit_use_double_quant":true}"#,
    );
    assert_eq!(key(&nf4, "quant").as_deref(), Some("nf4"));
    assert_eq!(key(&nf4, "double_quant").as_deref(), Some("1"));
    let hqq = with(r#"{"quant_method":"hqq"}"#);
    assert_eq!(key(&hqq, "quant"), None);
    assert!(hqq.notes.iter().any(|n| n.contains("hqq")));
}

/// Every exactly-counted family, fed its defaults, zeros, the largest accepted values,
/// values out of range and fields of the wrong type: an answer or a message, never a
/// panic (this runs in the browser); what answers also estimates.
#[test]
fn exact_families_never_panic() {
    use crate::contract::query::apply_import;
    use crate::contract::Settings;
    let types = [
        "mamba",
        "falcon_mamba",
        "mamba2",
        "jamba",
        "bamba",
        "nemotron_h",
        "falcon_h1",
        "granitemoehybrid",
        "lfm2",
        "glm4",
        "glm4_moe",
        "seed_oss",
        "olmo3",
        "hunyuan_v1_dense",
        "hunyuan_v1_moe",
        "apertus",
        "exaone4",
        "ernie4_5_moe",
        "minimax",
        "qwen3_next",
        "gemma3n_text",
        "vaultgemma",
    ];
    let fields = [
        "hidden_size",
        "num_hidden_layers",
        "vocab_size",
        "intermediate_size",
        "num_attention_heads",
        "num_key_value_heads",
        "head_dim",
        "expand",
        "state_size",
        "conv_kernel",
        "time_step_rank",
        "num_heads",
        "n_groups",
        "mamba_expand",
        "mamba_d_state",
        "mamba_d_conv",
        "mamba_dt_rank",
        "mamba_n_heads",
        "mamba_n_groups",
        "mamba_d_ssm",
        "mamba_num_heads",
        "mamba_head_dim",
        "ssm_state_size",
        "num_experts",
        "num_local_experts",
        "n_routed_experts",
        "moe_intermediate_size",
        "shared_intermediate_size",
        "moe_shared_expert_intermediate_size",
        "moe_latent_size",
        "attn_layer_period",
        "attn_layer_offset",
        "expert_layer_period",
        "expert_layer_offset",
        "block_ff_dim",
        "block_multiple_of",
        "conv_L_cache",
        "linear_num_key_heads",
        "linear_key_head_dim",
        "linear_num_value_heads",
        "linear_value_head_dim",
        "linear_conv_kernel_dim",
        "decoder_sparse_step",
        "full_attention_interval",
        "moe_layer_interval",
        "moe_layer_start_index",
        "moe_layer_end_index",
        "moe_num_experts",
        "moe_num_shared_experts",
        "first_k_dense_replace",
        "n_shared_experts",
        "num_kv_shared_layers",
        "hidden_size_per_layer_input",
        "vocab_size_per_layer_input",
        "altup_num_inputs",
        "laurel_rank",
        "shared_expert_intermediate_size",
    ];
    let lists = r#","layer_types":["mamba","attention","conv","linear_attention","full_attention"],
        "layers_block_type":["M","*"],"hybrid_override_pattern":"M*-E","attn_layer_indices":[0,99],
        "full_attn_idxs":[0,"x"],"mlp_only_layers":[0],"attn_type_list":[0,1],"moe_topk":[1,2]"#;
    let mut answered = 0;
    for t in types {
        let mut cfgs = vec![format!(r#"{{"model_type":"{t}"}}"#)];
        for value in [
            "0", "1", "16777216", "16777217", "-1", "\"x\"", "1.5", "null", "true",
        ] {
            let body: Vec<String> = fields.iter().map(|f| format!(r#""{f}":{value}"#)).collect();
            cfgs.push(format!(r#"{{"model_type":"{t}",{}}}"#, body.join(",")));
            cfgs.push(format!(
                r#"{{"model_type":"{t}",{}{lists}}}"#,
                body.join(",")
            ));
        }
        cfgs.push(format!(
            r#"{{"model_type":"{t}","num_hidden_layers":65537,"hidden_size":8}}"#
        ));
        for c in cfgs {
            if let Ok(i) = parse(&c) {
                answered += 1;
                let mut s = Settings::default();
                let _ = apply_import(&mut s, &i);
                let _ = crate::estimate::estimate(&s.scenario);
            }
        }
    }
    // Defaults, ones and the largest values answer for every family.
    assert!(answered >= 3 * types.len(), "{answered}");
    // Python's non-finite numbers outside strings become null; inside strings they stay.
    let i = parse(
        r#"{"model_type":"mamba2","hidden_size":64,"num_hidden_layers":2,"vocab_size":100,
        "num_heads":2,"head_dim":64,"time_step_limit":[0.0, Infinity],"x":-Infinity,"y":NaN,
        "name":"Infinity \"NaN\""}"#,
    )
    .unwrap();
    assert!(i.params.is_some());
}

/// The share of each head the rotary embedding covers sets `rope_partial`: Phi-4-mini's
/// `partial_rotary_factor` 0.75 (microsoft/Phi-4-mini-instruct config.json), GPT-NeoX's
/// `rotary_pct` 0.25 (EleutherAI/gpt-neox-20b), a factor of 1 clears it, none leaves it.
#[test]
fn partial_rotary_factor_sets_rope_partial() {
    let phi3 = r#""model_type":"phi3","hidden_size":3072,"intermediate_size":8192,"num_hidden_layers":32,"num_attention_heads":24,"num_key_value_heads":8,"vocab_size":200064,"tie_word_embeddings":true"#;
    let key = |json: String| {
        parse(&json)
            .unwrap()
            .keys
            .iter()
            .rev()
            .find(|(n, _)| *n == "rope_partial")
            .map(|(_, v)| v.clone())
    };
    let k = |extra: &str| key(format!("{{{phi3}{extra}}}"));
    assert_eq!(k(r#","partial_rotary_factor":0.75"#).as_deref(), Some("1"));
    assert_eq!(k(r#","partial_rotary_factor":1.0"#).as_deref(), Some("0"));
    assert_eq!(
        k(r#","rope_parameters":{"rope_type":"default","partial_rotary_factor":0.5}"#).as_deref(),
        Some("1")
    );
    assert_eq!(k(""), None);
    let neox = r#"{"model_type":"gpt_neox","hidden_size":6144,"intermediate_size":24576,"num_hidden_layers":44,"num_attention_heads":64,"vocab_size":50432,"rotary_pct":0.25,"use_parallel_residual":true,"tie_word_embeddings":false}"#;
    assert_eq!(key(neox.to_string()).as_deref(), Some("1"));
}
