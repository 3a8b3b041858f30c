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
