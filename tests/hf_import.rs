//! `config.json` import: configs written from the published shapes import to the
//! published parameter counts; missing fields are named.

use memfit::core::estimate::estimate;
use memfit::core::hfconfig::parse;
use memfit::core::scenario::Scenario;
use memfit::share::query::apply_import;

fn import(name: &str) -> (Scenario, Vec<memfit::core::estimate::Warning>) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/configs")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    let imported = parse(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut s = Scenario::default();
    let w = apply_import(&mut s, &imported);
    (s, w)
}

#[test]
fn imports_reproduce_published_counts() {
    for (file, params) in [
        ("llama-3-8b.json", 8_030_261_248u64),
        ("mistral-7b.json", 7_241_732_096),
        ("mixtral-8x7b.json", 46_702_792_704),
        ("qwen2.5-7b.json", 7_615_616_512),
        ("gemma-2-9b.json", 9_241_705_984),
        ("phi-3-mini.json", 3_821_079_552),
        ("gpt2.json", 124_439_808),
        ("t5-large.json", 737_668_096),
        // t5-base and t5-small (Hugging Face checkpoints, `model.num_parameters()`): the
        // imported depth now sets the encoder too (it stayed at the preset's 24: +38 %).
        // Qwen/Qwen3-8B and Qwen/Qwen3-4B (per-head q/k norms; 4B ties its embeddings),
        // meta-llama/Llama-3.2-1B (tied).
        ("qwen3-8b.json", 8_190_735_360),
        ("qwen3-4b.json", 4_022_468_096),
        ("llama-3.2-1b.json", 1_235_814_400),
        // google/gemma-3-1b-pt (gemma3_text), microsoft/phi-4 (phi3),
        // mistralai/Mistral-Small-24B-Base-2501 (mistral, head_dim 128).
        ("gemma-3-1b.json", 999_885_952),
        ("phi-4.json", 14_659_507_200),
        ("mistral-small-24b.json", 23_572_403_200),
        ("t5-base.json", 222_903_552),
        ("t5-small.json", 60_506_624),
        ("deepseek-v3.json", 671_026_404_352),
    ] {
        let (s, w) = import(file);
        // The only warnings allowed are the import's notes (under `model`).
        assert!(w.iter().all(|w| w.key == "model"), "{file}: {w:?}");
        assert_eq!(estimate(&s).model.params, params, "{file}");
    }
}

#[test]
fn approximate_families_import_close_to_their_counts() {
    // GPT-NeoX-20B: 20,554,567,680 published; Falcon-7B: 6,921,720,704. memfit counts them
    // as GPT-style blocks (see the import note), within 2 %.
    for (file, published) in [
        ("gpt-neox-20b.json", 20_554_567_680f64),
        ("falcon-7b.json", 6_921_720_704f64),
    ] {
        let (s, w) = import(file);
        let got = estimate(&s).model.params as f64;
        let rel = (got - published).abs() / published;
        eprintln!("{file}: {got} vs {published} ({:.2} %)", rel * 100.0);
        assert!(rel < 0.02, "{file}: {got} vs {published}");
        assert!(
            !w.is_empty(),
            "{file} should carry a note that it is approximate"
        );
    }
}

#[test]
fn missing_fields_are_named() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/configs/broken-llama.json");
    let e = parse(&std::fs::read_to_string(path).unwrap()).unwrap_err();
    assert_eq!(e, "config.json lacks `num_hidden_layers`");
}

/// A config whose weights the import cannot represent is refused, naming the fields,
/// never counted as a different model (Qwen1.5-MoE-A2.7B's shape: 60 experts of width
/// 1,408 plus a 5,632-wide shared expert; read as dense it came out 3.5× too large).
#[test]
fn unrepresentable_moe_configs_are_refused_by_name() {
    let cfg = r#"{"model_type":"qwen2_moe","hidden_size":2048,"intermediate_size":5632,
        "moe_intermediate_size":1408,"shared_expert_intermediate_size":5632,"num_experts":60,
        "num_experts_per_tok":4,"num_attention_heads":16,"num_key_value_heads":16,
        "num_hidden_layers":24,"vocab_size":151936,"decoder_sparse_step":1,"mlp_only_layers":[]}"#;
    let e = parse(cfg).unwrap_err();
    assert!(
        e.contains("qwen2_moe")
            && e.contains("`moe_intermediate_size`")
            && e.contains("`shared_expert_intermediate_size`"),
        "{e}"
    );
    // A plain Mixtral config (no such fields) still imports.
    assert!(parse(r#"{"model_type":"mixtral","hidden_size":4096,"intermediate_size":14336,"num_attention_heads":32,
        "num_key_value_heads":8,"num_hidden_layers":32,"vocab_size":32000,"num_local_experts":8,"num_experts_per_tok":2}"#).is_ok());
}

/// Sliding-window layers are said, not hidden: Gemma 3's import notes that the KV cache
/// is counted in full on every layer.
#[test]
fn sliding_window_is_noted() {
    let (_, w) = import("gemma-3-1b.json");
    assert!(
        w.iter()
            .any(|w| w.message.contains("512 tokens") && w.message.contains("upper bound")),
        "{w:?}"
    );
}
