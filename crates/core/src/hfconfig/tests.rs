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
