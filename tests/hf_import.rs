//! `config.json` import: configs written from the published shapes import to the
//! published parameter counts; missing fields are named.

use memfit_core::contract::query::apply_import;
use memfit_core::contract::Settings;
use memfit_core::estimate::estimate;
use memfit_core::hfconfig::parse;
use memfit_core::scenario::Scenario;

fn import(name: &str) -> (Scenario, Vec<memfit_core::estimate::Warning>) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/configs")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    let imported = parse(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut s = Settings::default();
    let w = apply_import(&mut s, &imported);
    (s.scenario, w)
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
        // Qwen/Qwen1.5-MoE-A2.7B (qwen2_moe: shared expert and its gate), Qwen/Qwen3-30B-A3B
        // and Qwen/Qwen3-235B-A22B (qwen3_moe), bigcode/starcoder2-3b and -7b,
        // stabilityai/stablelm-2-1_6b (q/k/v biases) and stablelm-3b-4e1t (none),
        // facebook/opt-125m and opt-1.3b (2,048 + 2 learned positions),
        // bigscience/bloom-560m and bloom-1b1: the counts their checkpoints hold
        // (`model.num_parameters()`, tied heads counted once).
        ("qwen1.5-moe-a2.7b.json", 14_315_784_192),
        ("qwen3-30b-a3b.json", 30_532_122_624),
        ("qwen3-235b-a22b.json", 235_093_634_560),
        ("starcoder2-3b.json", 3_030_371_328),
        ("starcoder2-7b.json", 7_173_923_840),
        ("stablelm-2-1.6b.json", 1_644_515_328),
        ("stablelm-3b-4e1t.json", 2_795_443_200),
        ("opt-125m.json", 125_239_296),
        ("opt-1.3b.json", 1_315_758_080),
        ("bloom-560m.json", 559_214_592),
        ("bloom-1b1.json", 1_065_314_304),
        // microsoft/phi-2 and phi-1_5 (one LayerNorm per parallel block, LM-head bias),
        // microsoft/Phi-3.5-MoE-instruct (phimoe), openai/gpt-oss-20b and gpt-oss-120b
        // (expert and router biases, attention sinks), CohereForAI/c4ai-command-r-v01.
        // Second checkpoints (transformers 5.23's count, tools/count_params.py):
        // google/gemma-2-2b and gemma-2-27b (gemma2), mistralai/Mixtral-8x22B-v0.1,
        // Qwen/Qwen2-57B-A14B (qwen2_moe: 64 experts, shared expert of 20,480),
        // ibm-granite/granite-3.0-8b-base.
        ("gemma-2-2b.json", 2_614_341_888),
        ("gemma-2-27b.json", 27_227_128_320),
        ("mixtral-8x22b.json", 140_620_634_112),
        ("qwen2-57b-a14b.json", 57_408_658_944),
        ("granite-3.0-8b.json", 8_170_848_256),
        // google/flan-t5-base, google/mt5-base and mt5-small (T5 v1.1: gated GELU, an LM head
        // of its own): the checkpoints' counts. transformers 5.23 forces
        // `tie_word_embeddings = True` for T5 and mT5 and builds 24,674,304 / 192,086,016 /
        // 128,057,344 fewer (tools/count_params.py: 222,903,552 / 390,315,264 / 172,119,424);
        // the checkpoints hold the untied head, and memfit counts it.
        ("flan-t5-base.json", 247_577_856),
        ("mt5-base.json", 582_401_280),
        ("mt5-small.json", 300_176_768),
        ("phi-2.json", 2_779_683_840),
        ("phi-1.5.json", 1_418_270_720),
        ("phi-3.5-moe.json", 41_873_153_344),
        ("gpt-oss-20b.json", 20_914_757_184),
        ("gpt-oss-120b.json", 116_829_156_672),
        ("command-r.json", 34_980_831_232),
        // Families added with the counting tool (`tools/count_params.py`: transformers 5.23's
        // class for each model_type, built on the meta device from the named checkpoint's
        // config.json, `model.num_parameters()`):
        // google/gemma-2b and gemma-7b (gemma: two norms per block; the published 2.51B/8.54B),
        ("gemma-2b.json", 2_506_172_416),
        ("gemma-7b.json", 8_537_680_896),
        // google/gemma-3-4b-pt, -12b-pt and -27b-pt (gemma3: the text decoder; the Gemma 3
        // report's non-embedding 3,209M / 10,759M / 25,600M are in these counts),
        ("gemma-3-4b.json", 3_880_263_168),
        ("gemma-3-12b.json", 11_766_034_176),
        ("gemma-3-27b.json", 27_009_346_304),
        // EleutherAI/pythia-160m and pythia-1b (gpt_neox; the Pythia README's 162,322,944 and
        // 1,011,781,632) and gpt-neox-20b (20,554,567,680),
        ("pythia-160m.json", 162_322_944),
        ("pythia-1b.json", 1_011_781_632),
        ("gpt-neox-20b.json", 20_554_567_680),
        // tiiuae/falcon-7b (old architecture: multi-query, one LayerNorm), falcon-40b (new
        // architecture, two), falcon-11B (new architecture, one), falcon-rw-1b (sequential
        // block, biases, ALiBi),
        ("falcon-7b.json", 6_921_720_704),
        ("falcon-40b.json", 41_303_293_952),
        ("falcon2-11b.json", 10_836_484_096),
        ("falcon-rw-1b.json", 1_311_625_216),
        // allenai/OLMo-1B-hf and OLMo-7B-hf (olmo: LayerNorms without weights),
        // allenai/OLMoE-1B-7B-0924 (olmoe: q/k norms, 64 experts top-8),
        ("olmo-1b.json", 1_176_764_416),
        ("olmo-7b.json", 6_888_095_744),
        ("olmoe-1b-7b.json", 6_919_161_856),
        // deepseek-ai/DeepSeek-V2-Lite (no q compression) and DeepSeek-V2 (MLA, 160 + 2
        // experts); DeepSeek-V3 above,
        ("deepseek-v2-lite.json", 15_706_484_224),
        ("deepseek-v2.json", 235_741_434_880),
        // meta-llama/Llama-4-Scout-17B-16E and Llama-4-Maverick-17B-128E (llama4: the text
        // decoder, Llama4ForCausalLM),
        ("llama-4-scout.json", 107_769_861_120),
        ("llama-4-maverick.json", 400_711_848_960),
        // CohereForAI/c4ai-command-r-plus (cohere, per-head q/k norms),
        // c4ai-command-r7b-12-2024 and c4ai-command-a-03-2025 (cohere2).
        ("command-r-plus.json", 103_810_674_688),
        ("command-r7b.json", 8_028_033_024),
        ("command-a.json", 111_057_580_032),
        // mistralai/Mistral-Small-3.1-24B-Base-2503 (mistral3: the text decoder, Mistral Small 3's).
        ("mistral-small-3.1-24b.json", 23_572_403_200),
        // Qwen/Qwen2.5-VL-7B-Instruct and Qwen2-VL-7B-Instruct (qwen2_5_vl, qwen2_vl: the
        // decoder's fields at the top level; Qwen2.5-7B's / Qwen2-7B's 7,615,616,512).
        ("qwen2.5-vl-7b.json", 7_615_616_512),
        ("qwen2-vl-7b.json", 7_615_616_512),
        // Qwen/Qwen3-VL-8B-Instruct (qwen3_vl: a `text_config` of Qwen3 8B's 8,190,735,360).
        ("qwen3-vl-8b.json", 8_190_735_360),
        // Qwen/Qwen3-VL-30B-A3B-Instruct (qwen3_vl_moe: Qwen3-30B-A3B's 30,532,122,624).
        ("qwen3-vl-30b-a3b.json", 30_532_122_624),
    ] {
        let (s, w) = import(file);
        // The only warnings allowed are the import's notes (under `model`).
        assert!(w.iter().all(|w| w.key == "model"), "{file}: {w:?}");
        assert_eq!(estimate(&s).model.params, params, "{file}");
    }
}

/// Llama 4 and Gemma 3 (4B+) ship multimodal configs: the import reads the text decoder
/// and says the vision encoder is not counted; Maverick's alternating dense/MoE blocks and
/// Llama 4's chunked attention become `first_dense`, `window` and `local_layers`.
#[test]
fn multimodal_configs_import_their_text_decoder_with_a_note() {
    for (file, note) in [
        ("llama-4-scout.json", "vision encoder"),
        ("llama-4-maverick.json", "dense blocks first"),
        ("gemma-3-27b.json", "vision encoder"),
    ] {
        let (s, w) = import(file);
        assert!(w.iter().any(|w| w.message.contains(note)), "{file}: {w:?}");
        let a = s.arch();
        match file {
            "llama-4-maverick.json" => {
                assert_eq!(
                    (a.experts, a.top_k, a.shared_experts, a.first_dense),
                    (128, 1, 1, 24)
                );
            }
            "llama-4-scout.json" => {
                // 48 layers, a NoPE (global) layer every 4th: 36 chunked layers of 8,192 tokens.
                assert_eq!((a.window, a.local_layers, a.first_dense), (8192, 36, 0));
            }
            // 62 layers, every 6th global: 52 layers within a 1,024-token window.
            _ => assert_eq!(
                (a.window, a.local_layers, a.vocab.get()),
                (1024, 52, 262_208)
            ),
        }
    }
    let cfg = r#"{"model_type":"gemma3","vision_config":{}}"#;
    assert!(parse(cfg).unwrap_err().contains("`text_config`"));
}

#[test]
fn missing_fields_are_named() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/configs/broken-llama.json");
    let e = parse(&std::fs::read_to_string(path).unwrap()).unwrap_err();
    assert_eq!(e, "config.json lacks `num_hidden_layers`");
}

/// A config whose weights the import cannot represent is refused, naming the fields,
/// never counted as a different model.
#[test]
fn unrepresentable_configs_are_refused_by_name() {
    let refused = |cfg: &str, want: &[&str]| {
        let e = parse(cfg).unwrap_err();
        assert!(want.iter().all(|w| e.contains(w)), "{e}");
    };
    // Qwen MoE with dense blocks between the MoE blocks.
    refused(
        r#"{"model_type":"qwen2_moe","hidden_size":2048,"intermediate_size":5632,
        "moe_intermediate_size":1408,"shared_expert_intermediate_size":5632,"num_experts":60,
        "num_experts_per_tok":4,"num_attention_heads":16,"num_key_value_heads":16,
        "num_hidden_layers":24,"vocab_size":151936,"decoder_sparse_step":2}"#,
        &["qwen2_moe", "`decoder_sparse_step`"],
    );
    refused(
        r#"{"model_type":"qwen3_moe","hidden_size":2048,"intermediate_size":6144,"moe_intermediate_size":768,
        "num_experts":128,"num_experts_per_tok":8,"num_attention_heads":32,"num_key_value_heads":4,
        "num_hidden_layers":48,"vocab_size":151936,"mlp_only_layers":[0,1]}"#,
        &["qwen3_moe", "`mlp_only_layers`"],
    );
    // facebook/opt-350m: project_in/project_out and post-norm blocks.
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/configs/opt-350m.json"),
    )
    .unwrap();
    refused(&text, &["`word_embed_proj_dim`"]);
    // StableLM 2 12B: per-head q/k LayerNorms and a parallel block.
    refused(
        r#"{"model_type":"stablelm","hidden_size":5120,"intermediate_size":13824,"num_attention_heads":32,
        "num_key_value_heads":8,"num_hidden_layers":40,"vocab_size":100352,"qk_layernorm":true,"use_parallel_residual":true}"#,
        &["`qk_layernorm`"],
    );
    // A Llama config with biases on every projection (`attention_bias`) and the MLP.
    refused(
        r#"{"model_type":"llama","hidden_size":4096,"intermediate_size":11008,"num_attention_heads":32,
        "num_hidden_layers":32,"vocab_size":32000,"attention_bias":true,"mlp_bias":true}"#,
        &["`attention_bias`", "`mlp_bias`"],
    );
    // DeepSeek with MLA ranks other than the published ones.
    refused(
        r#"{"model_type":"deepseek_v3","hidden_size":2048,"intermediate_size":10944,"moe_intermediate_size":1408,
        "n_routed_experts":64,"n_shared_experts":2,"first_k_dense_replace":1,"kv_lora_rank":256,"q_lora_rank":768,
        "qk_rope_head_dim":64,"qk_nope_head_dim":128,"v_head_dim":128,
        "num_attention_heads":16,"num_key_value_heads":16,"num_hidden_layers":27,"vocab_size":102400,"num_experts_per_tok":6}"#,
        &["deepseek_v3", "`q_lora_rank` = 768", "`kv_lora_rank` = 256"],
    );
    // An unknown type with MLA and MoE fields: the generic path refuses, naming what it
    // would have ignored.
    refused(
        r#"{"model_type":"my_deepseek","hidden_size":2048,"intermediate_size":10944,"moe_intermediate_size":1408,
        "n_routed_experts":64,"n_shared_experts":2,"first_k_dense_replace":1,"kv_lora_rank":512,"q_lora_rank":null,
        "num_attention_heads":16,"num_key_value_heads":16,"num_hidden_layers":27,"vocab_size":102400}"#,
        &[
            "`my_deepseek`",
            "`moe_intermediate_size`",
            "`kv_lora_rank`",
            "`n_routed_experts`",
        ],
    );
    // A plain Mixtral config (no such fields) still imports.
    assert!(parse(r#"{"model_type":"mixtral","hidden_size":4096,"intermediate_size":14336,"num_attention_heads":32,
        "num_key_value_heads":8,"num_hidden_layers":32,"vocab_size":32000,"num_local_experts":8,"num_experts_per_tok":2}"#).is_ok());
}

/// An unknown `model_type` with the standard fields is read as a Llama-style decoder and
/// says so: Llama-3-8B's shape under another name gives Llama-3-8B's published count.
#[test]
fn unknown_model_type_is_read_generically_with_a_note() {
    let cfg = r#"{"model_type":"my_llama_fork","hidden_size":4096,"intermediate_size":14336,
        "num_attention_heads":32,"num_key_value_heads":8,"num_hidden_layers":32,"vocab_size":128256,
        "tie_word_embeddings":false,"attention_bias":false}"#;
    let imported = parse(cfg).unwrap();
    assert!(imported
        .notes
        .iter()
        .any(|n| n.contains("my_llama_fork") && n.contains("Llama-style")));
    let mut s = Settings::default();
    let w = apply_import(&mut s, &imported);
    assert!(
        w.iter()
            .any(|w| w.key == "model" && w.message.contains("Llama-style")),
        "{w:?}"
    );
    assert_eq!(estimate(&s.scenario).model.params, 8_030_261_248);
}

/// Granite 3.x is a Llama-shaped block (its multipliers are scalars, not weights): the
/// ibm-granite/granite-3.0-2b-base shape, counted by hand.
#[test]
fn granite_counts_as_a_llama_block() {
    let (s, w) = import("granite-3.0-2b.json");
    assert!(w.is_empty(), "{w:?}");
    let (h, l, v, kv_w, f) = (2048u64, 40u64, 49_155u64, 8 * 64u64, 8192u64);
    // Embedding (tied) + per block: q, o (h²) + k, v (h·512) + 3 MLP matrices + 2 RMSNorms; final norm.
    let per_block = 2 * h * h + 2 * h * kv_w + 3 * h * f + 2 * h;
    assert_eq!(estimate(&s).model.params, v * h + l * per_block + h);
    assert_eq!(estimate(&s).model.params, 2_533_531_648);
}

/// Sliding-window layers bound the KV cache: Gemma 3 1B imports 22 of 26 layers windowed
/// to 512 tokens (every sixth layer global); the inference cache at 8,192 + 0 tokens,
/// batch 1, bf16 is 2·(4·8,192 + 22·512)·1·256·2 bytes (a_kv = 1, d = 256), by hand.
#[test]
fn sliding_window_bounds_the_kv_cache() {
    use memfit_core::contract::query::decode_onto;
    use memfit_core::estimate::Component;
    let (s, w) = import("gemma-3-1b.json");
    assert!(w.is_empty(), "{w:?}");
    let a = s.arch();
    assert_eq!((a.window, a.local_layers), (512, 22));
    let (s, w) = decode_onto(s.into(), "mode=infer&seq=8192&gen=0&batch=1&precision=bf16");
    assert!(w.is_empty(), "{w:?}");
    let s = s.scenario;
    let kv: u64 = estimate(&s)
        .items
        .iter()
        .filter(|i| i.component == Component::KvCache)
        .map(|i| i.bytes)
        .max()
        .unwrap();
    assert_eq!(kv, 2 * (4 * 8192 + 22 * 512) * 256 * 2);
    // gpt-oss-20b: every other layer (12 of 24) windowed to 128 tokens.
    let (s, _) = import("gpt-oss-20b.json");
    assert_eq!((s.arch().window, s.arch().local_layers), (128, 12));
    // A window as long as the context (Phi-3.5-MoE's 131,072) and Qwen3's disabled one: none.
    for f in ["phi-3.5-moe.json", "qwen3-8b.json", "mixtral-8x7b.json"] {
        assert_eq!(import(f).0.arch().local_layers, 0, "{f}");
    }
    // Mistral 7B v0.1 and StarCoder2: every layer.
    assert_eq!(import("mistral-7b.json").0.arch().local_layers, 32);
    assert_eq!(import("starcoder2-3b.json").0.arch().local_layers, 30);
}

/// State-space, hybrid and 2024–2025 families, counted exactly from config.json. Each
/// config is the checkpoint's published values written out by transformers' own config
/// class (`AutoConfig.for_model(model_type, **published).to_dict()`, so every field is
/// present as transformers writes it, `Infinity` included); the counts are
/// `num_parameters()` of the model transformers 5.24.0 (torch 2.15.0) builds from it on the
/// meta device (`tools/count_params.py`).
#[test]
fn hybrid_and_new_family_counts_are_exact() {
    for (file, params) in [
        // state-spaces/mamba-130m-hf and mamba-2.8b-hf (mamba, tied).
        ("mamba-130m.json", 129_135_360u64),
        ("mamba-2.8b.json", 2_768_345_600),
        // mistralai/Mamba-Codestral-7B-v0.1 (mamba2: 8 groups, 128 heads, untied) and
        // state-spaces/mamba2-2.7b (1 group, 80 heads, tied).
        ("mamba-codestral-7b.json", 7_285_403_648),
        ("mamba2-2.7b.json", 2_702_599_680),
        // tiiuae/falcon-mamba-7b (falcon_mamba: a Mamba mixer, untied).
        ("falcon-mamba-7b.json", 7_272_665_088),
        // ai21labs/Jamba-v0.1 (jamba: attention every 8th block from 4, MoE every 2nd from
        // 1, Mamba with dt/B/C norms).
        ("jamba-v0.1.json", 51_570_323_328),
        // ibm-ai-platform/Bamba-9B (bamba: attention at 9, 18, 27; Mamba-2 elsewhere).
        ("bamba-9b.json", 9_780_235_392),
        // nvidia/Nemotron-H-8B-Base-8K as the Hub writes it (`hybrid_override_pattern`, no
        // MoE fields, `num_hidden_layers` 52) and as transformers writes it
        // (`layers_block_type`); transformers' default NemotronHConfig (one block of each
        // kind: Mamba-2, MoE with a shared expert, attention, MLP) and the same with a
        // 1,024-wide latent MoE projection and 16 experts.
        ("nemotron-h-8b-hub.json", 8_100_852_736),
        ("nemotron-h-8b.json", 8_100_852_736),
        ("nemotron-h-moe.json", 1_968_355_712),
        ("nemotron-h-moe-latent.json", 1_724_856_704),
        // tiiuae/Falcon-H1-7B-Base (falcon_h1: attention and Mamba-2 in parallel in every block).
        ("falcon-h1-7b.json", 7_585_513_568),
        // ibm-granite/granite-4.0-h-tiny (granitemoehybrid: 64 experts + a shared MLP, 4
        // attention blocks of 40) and granite-4.0-h-1b (no experts).
        ("granite-4.0-h-tiny.json", 6_939_037_248),
        ("granite-4.0-h-1b.json", 1_461_538_368),
        // LiquidAI/LFM2-1.2B (Hub form: `full_attn_idxs`, `block_ff_dim`, `tie_embedding`;
        // 12,288 → 8,192 wide MLP) and LFM2-2.6B (`layer_types`; 10,752 → 7,168).
        ("lfm2-1.2b.json", 1_170_340_608),
        ("lfm2-2.6b.json", 1_908_669_440),
        // THUDM/GLM-4-9B-0414 (glm4: q/k/v biases, fused gate/up, four norms per block),
        // ByteDance-Seed/Seed-OSS-36B-Base (seed_oss: q/k/v biases, no o bias),
        // allenai/Olmo-3-1025-7B (olmo3: full-width q/k norms), tencent/Hunyuan-7B-Pretrain
        // (hunyuan_v1_dense: per-head q/k norms), swiss-ai/Apertus-8B-2509 (apertus: ungated
        // xIELU MLP, two learned scalars per block), LGAI-EXAONE/EXAONE-4.0-32B (exaone4).
        ("glm-4-9b.json", 9_400_279_040),
        ("seed-oss-36b.json", 36_151_104_512),
        ("olmo-3-7b.json", 7_298_011_136),
        ("hunyuan-7b.json", 7_504_568_320),
        ("apertus-8b.json", 8_053_338_176),
        ("exaone-4.0-32b.json", 32_003_216_384),
        // MoE families: zai-org/GLM-4.5-Air (glm4_moe: 1 dense block, 128 experts + 1
        // shared), baidu/ERNIE-4.5-21B-A3B-PT (ernie4_5_moe: learned correction bias, 2
        // shared experts as one MLP), tencent/Hunyuan-A13B-Pretrain (hunyuan_v1_moe: a
        // shared MLP in every block), MiniMaxAI/MiniMax-Text-01 (minimax: 70 lightning-
        // attention blocks of 80).
        ("glm-4.5-air.json", 106_852_245_504),
        ("ernie-4.5-21b-a3b.json", 21_825_437_888),
        ("hunyuan-a13b.json", 80_393_183_232),
        ("minimax-text-01.json", 456_089_655_296),
        // Qwen/Qwen3-Next-80B-A3B-Instruct (qwen3_next: 36 gated-DeltaNet blocks, 12 gated
        // attention blocks; 512 experts + a gated shared expert in each).
        ("qwen3-next-80b-a3b.json", 79_674_391_296),
        // google/gemma-3n-E4B and gemma-3n-E2B (gemma3n: the text decoder, with its
        // per-layer embeddings, AltUp, LAuReL and KV-sharing blocks; vision and audio
        // encoders not counted).
        ("gemma-3n-e4b.json", 6_835_235_568),
        ("gemma-3n-e2b.json", 4_435_182_688),
        // Two tiny shapes a randomised comparison with transformers caught: Nemotron-H's LM
        // head is its own even when the config says `tie_word_embeddings` (the class ties
        // nothing), and ERNIE 4.5's `use_bias` puts biases on the shared expert but not on
        // the routed experts.
        ("tiny-nemotron-h-tied-flag.json", 197_896),
        // vaultgemma (read generically before, now refused there for its GELU): a 1B shape
        // with Gemma 3 1B's widths (not a published checkpoint's config).
        ("vaultgemma-1b.json", 992_734_848),
        // transformers' default PhimoeConfig: no LM-head bias (Phi-3.5-MoE has one), so
        // the preset's count is V too high; the import carries the exact count.
        ("phimoe-default.json", 41_872_793_600),
        // helium (read generically before: its o projection is h → h whatever `head_dim`
        // says, 17.6 % off for a shape with a·d ≠ h): a 2B shape, not a published config.
        ("helium-2b.json", 2_023_868_416),
        ("tiny-ernie-4.5-moe-bias.json", 271_180),
    ] {
        let (s, w) = import(file);
        assert!(w.iter().all(|w| w.key == "model"), "{file}: {w:?}");
        assert_eq!(estimate(&s).model.params, params, "{file}");
        // State-space, convolution and linear-attention models say what is not modelled;
        // plain transformers do not.
        let hybrid = [
            "mamba",
            "falcon-mamba",
            "jamba",
            "bamba",
            "nemotron",
            "falcon-h1",
            "granite-4.0-h",
            "lfm2",
            "minimax",
            "qwen3-next",
            "tiny-nemotron",
        ]
        .iter()
        .any(|p| file.starts_with(p));
        assert_eq!(
            w.iter().any(|w| w.message.contains("does not model")),
            hybrid,
            "{file}: {w:?}"
        );
    }
}

/// The generic Llama-style reading answers only when nothing it ignores can change the
/// weights: an unknown type carrying a hybrid pattern, an ungated activation, SSM or MoE
/// fields, or non-attention block kinds is refused by field name; harmless extras (token
/// ids, rotary settings, generation fields, false bias flags) still import.
#[test]
fn generic_import_refuses_what_it_would_ignore() {
    let base = r#""hidden_size":4096,"intermediate_size":21504,"num_attention_heads":32,
        "num_key_value_heads":8,"num_hidden_layers":52,"vocab_size":131072"#;
    let refused = |extra: &str, want: &str| {
        let cfg = format!(r#"{{"model_type":"my_fork",{base},{extra}}}"#);
        let e = parse(&cfg).unwrap_err();
        assert!(e.contains(want) && e.contains("my_fork"), "{e}");
    };
    // A Nemotron-H-like config under another name (read as a 52-layer Llama: +110 %).
    refused(
        r#""hybrid_override_pattern":"M-M-M-M*-","mamba_num_heads":128,"ssm_state_size":128"#,
        "`hybrid_override_pattern`",
    );
    refused(r#""hidden_act":"relu2""#, "`hidden_act`");
    refused(r#""hidden_act":"xielu""#, "`hidden_act`");
    refused(
        r#""layer_types":["conv","full_attention"]"#,
        "`layer_types`",
    );
    refused(
        r#""num_experts":8,"num_experts_per_tok":2"#,
        "`num_experts`",
    );
    refused(r#""attention_bias":true"#, "`attention_bias`");
    refused(r#""use_qk_norm":true"#, "`use_qk_norm`");
    // Harmless extras import, with the generic note.
    let ok = format!(
        r#"{{"model_type":"my_fork",{base},"hidden_act":"silu","attention_bias":false,
        "rope_parameters":{{"rope_theta":1e6,"rope_type":"default"}},"bos_token_id":1,
        "eos_token_id":[2,3],"torch_dtype":"bfloat16","moe_intermediate_size":null,
        "no_rope_layers":[1,1,1,0],"layer_types":["full_attention","sliding_attention"],
        "num_local_experts":0,"transformers_version":"5.17.0","use_cache":true}}"#
    );
    let i = parse(&ok).unwrap();
    assert!(i.notes.iter().any(|n| n.contains("Llama-style")), "{i:?}");
}

/// State-space and hybrid imports reach every mode of the estimator without a panic,
/// keep their exact count under the query's keys (the explicit `params` survives a
/// training, inference and serving query), and say what is not modelled; the `LayerMix`
/// tells attention blocks (the KV cache) from Mamba, convolution and linear-attention ones.
#[test]
fn hybrid_imports_estimate_in_every_mode_with_the_caveat() {
    use memfit_core::contract::query::decode_onto;
    let mix = |file: &str| {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/configs")
            .join(file);
        parse(&std::fs::read_to_string(path).unwrap())
            .unwrap()
            .layer_mix
            .unwrap()
    };
    let m = mix("nemotron-h-8b-hub.json");
    assert_eq!((m.layers, m.attention, m.mamba, m.moe), (52, 4, 24, 0));
    let ssm = m.ssm.unwrap();
    assert_eq!(
        (
            ssm.version,
            ssm.d_inner,
            ssm.d_state,
            ssm.groups,
            ssm.heads,
            ssm.conv_kernel
        ),
        (2, 8192, 128, 8, 128, 4)
    );
    let m = mix("jamba-v0.1.json");
    assert_eq!((m.attention, m.mamba, m.moe), (4, 28, 16));
    assert_eq!(m.ssm.unwrap().version, 1);
    let m = mix("lfm2-1.2b.json");
    assert_eq!((m.attention, m.conv, m.conv_kernel), (6, 10, 3));
    let m = mix("qwen3-next-80b-a3b.json");
    assert_eq!((m.attention, m.linear_attention, m.moe), (12, 36, 48));
    let m = mix("falcon-h1-7b.json");
    assert_eq!((m.layers, m.attention, m.mamba), (44, 44, 44));
    for (file, params) in [
        ("mamba-130m.json", 129_135_360u64),
        ("jamba-v0.1.json", 51_570_323_328),
        ("granite-4.0-h-tiny.json", 6_939_037_248),
        ("qwen3-next-80b-a3b.json", 79_674_391_296),
    ] {
        let (s, _) = import(file);
        for q in [
            "mode=train&zero=3&gpus_per_node=8",
            "mode=infer&seq=8192&gen=512&batch=4",
            "mode=serve&engine=vllm&max_len=8192&gpus_per_node=8&tp=8",
            "mode=train&tp=4&pp=2&gpus_per_node=8&finetune=lora",
        ] {
            let (s, _) = decode_onto(s.clone().into(), q);
            let e = estimate(&s.scenario);
            assert_eq!(e.model.params, params, "{file} {q}");
        }
    }
}

/// The randomised comparison with transformers (`tools/fuzz_counts.py` writes the configs
/// and counts; `MEMFIT_COUNTS_DIR` names its output): every count memfit answers must be
/// transformers' own. Refusals are listed, not failures.
#[test]
#[ignore = "needs MEMFIT_COUNTS_DIR from tools/fuzz_counts.py"]
fn counts_match_a_manifest() {
    let dir = std::env::var("MEMFIT_COUNTS_DIR").expect("MEMFIT_COUNTS_DIR");
    let manifest = std::fs::read_to_string(format!("{dir}/manifest.tsv")).unwrap();
    let mut wrong = Vec::new();
    for line in manifest.lines() {
        let Some((file, n)) = line.split_once('\t') else {
            continue;
        };
        let want: u64 = n.trim().parse().unwrap();
        let text = std::fs::read_to_string(format!("{dir}/{file}")).unwrap();
        match parse(&text) {
            Err(e) => println!("refused {file}: {e}"),
            Ok(i) => {
                let mut s = Settings::default();
                let _ = apply_import(&mut s, &i);
                let got = estimate(&s.scenario).model.params;
                if got != want {
                    wrong.push(format!("{file}: memfit {got}, transformers {want}"));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// EXAONE 4's local/global pattern changes no weight but bounds the KV cache: from
/// `layer_types` as transformers writes it, or from `sliding_window_pattern` (every 4th
/// block global) where a config has no list: 48 of 64 blocks windowed to 4,096 tokens.
#[test]
fn exaone4_layer_pattern_bounds_the_kv_cache() {
    let (s, _) = import("exaone-4.0-32b.json");
    assert_eq!((s.arch().window, s.arch().local_layers), (4096, 48));
    let cfg = r#"{"model_type":"exaone4","hidden_size":5120,"num_hidden_layers":64,
        "num_attention_heads":40,"num_key_value_heads":8,"head_dim":128,"intermediate_size":27392,
        "vocab_size":102400,"sliding_window":4096,"sliding_window_pattern":4,
        "max_position_embeddings":131072,"tie_word_embeddings":false}"#;
    let mut st = Settings::default();
    let _ = apply_import(&mut st, &parse(cfg).unwrap());
    let a = st.scenario.arch();
    assert_eq!((a.window, a.local_layers), (4096, 48));
    assert_eq!(estimate(&st.scenario).model.params, 32_003_216_384);
}

/// The imported layer mix travels as query keys (a link reproduces it), and inference reads
/// it: no KV cache in Mamba blocks, the conv and SSM state per Mamba / convolution block
/// (Mamba-130M 2.53 MiB and Mamba-2 2.7B 162.6 MiB per sequence, transformers 5.x), a KV
/// cache in the attention blocks only (LFM2: 6 of 16), and the prefill's scan transient by
/// `ssm_kernels` (Mamba-2 2.7B at 8 × 2,048: transformers ≤ 5.17's torch path does not fit
/// an H200, the kernels do).
#[test]
fn hybrid_layer_mix_reaches_inference() {
    use memfit_core::contract::query::{decode_onto, encode};
    use memfit_core::ledger::{Component, Phase};
    let state = |s: &Scenario| -> u64 {
        estimate(s)
            .items
            .iter()
            .filter(|i| {
                i.component == Component::KvCache
                    && i.phases == [Phase::Decode]
                    && i.formula.contains("conv and SSM state")
            })
            .map(|i| i.bytes)
            .sum()
    };
    let kv = |s: &Scenario| -> u64 {
        estimate(s)
            .items
            .iter()
            .filter(|i| {
                i.component == Component::KvCache
                    && i.phases == [Phase::Decode]
                    && !i.formula.contains("conv and SSM state")
            })
            .map(|i| i.bytes)
            .sum()
    };
    let (s, _) = import("mamba-130m.json");
    let q = encode(&Settings::from(s.clone()));
    for k in [
        "mamba_layers=24",
        "ssm_version=1",
        "ssm_inner=1536",
        "ssm_state=16",
        "ssm_conv=4",
    ] {
        assert!(q.contains(k), "{q}");
    }
    let infer = |s: &Scenario, q: &str| decode_onto(s.clone().into(), q).0.scenario;
    let one = infer(&s, "mode=infer&batch=1&seq=512&precision=bf16");
    assert_eq!(state(&one), 2_654_208);
    assert_eq!(kv(&one), 0);
    let (s2, _) = import("mamba2-2.7b.json");
    let one = infer(&s2, "mode=infer&batch=1&seq=512&precision=bf16");
    assert_eq!(state(&one), 170_524_672);
    assert_eq!(kv(&one), 0);
    // Sanity check 2 (research §1.8): 8 × 2,048 prefill on an H200.
    let big = "mode=infer&batch=8&seq=2048&gen=16&precision=bf16&gpu=h200";
    let fits = |k: &str| estimate(&infer(&s2, &format!("{big}&ssm_kernels={k}"))).fits;
    // transformers ≤ 5.17's fallback (`torch`, also spelled `torch-naive`) cannot prefill it
    // in 140 GB (the issue's own H200 observation); ≥ 5.18's einsum scan can.
    assert!(fits("fused") && fits("torch-einsum"));
    assert!(!fits("torch") && !fits("torch-naive"));
    // LFM2: KV in its 6 attention blocks, conv state in its 10 convolution blocks.
    let (s3, _) = import("lfm2-1.2b.json");
    let a = s3.arch();
    assert_eq!(
        (a.attention_layers(), a.conv_layers, a.short_conv_kernel()),
        (6, 10, 3)
    );
    let one = infer(&s3, "mode=infer&batch=1&seq=1000&gen=24&precision=bf16");
    assert_eq!(
        kv(&one),
        2 * 1024 * 6 * a.kv_heads.get() as u64 * a.head_dim.get() as u64 * 2
    );
    assert_eq!(state(&one), 10 * a.hidden.get() as u64 * 3 * 2);
    // Qwen3-Next: 36 gated-DeltaNet blocks with their shape as keys, 74.25 MiB of state per
    // sequence, the KV cache in its 12 attention blocks.
    let (s5, _) = import("qwen3-next-80b-a3b.json");
    let q = encode(&Settings::from(s5.clone()));
    for k in [
        "linear_layers=36",
        "lin_k_heads=16",
        "lin_v_heads=32",
        "lin_k_dim=128",
    ] {
        assert!(q.contains(k), "{q}");
    }
    let one = infer(&s5, "mode=infer&batch=1&seq=1000&gen=24&precision=bf16");
    assert_eq!(state(&one), 77_856_768);
    assert_eq!(kv(&one), 2 * 1024 * 12 * 2 * 256 * 2);
    // Falcon-H1's parallel blocks: attention and Mamba in all 44.
    let (s4, _) = import("falcon-h1-7b.json");
    let a = s4.arch();
    assert_eq!((a.attention_layers(), a.mamba_layers), (44, 44));
}

/// The mix keys are validated: more blocks than `layers`, or Mamba-2 heads that do not
/// divide the inner width, are named; a plain transformer keeps every block as attention.
#[test]
fn layer_mix_is_validated() {
    use memfit_core::contract::query::decode;
    let problems = |q: &str| decode(q).0.scenario.problems();
    let named = |q: &str, want: &str| {
        let p = problems(q);
        assert!(p.iter().any(|(_, m)| m.contains(want)), "{q}: {p:?}");
    };
    named(
        "layers=24&mamba_layers=20&conv_layers=5",
        "must not exceed layers (24)",
    );
    named("layers=24&attn_layers=25", "attn_layers (25)");
    named(
        "mamba_layers=4&ssm_version=2&ssm_inner=1000&ssm_heads=3",
        "ssm_heads (3) must divide",
    );
    let (s, _) = decode("model=llama-2-7b");
    assert_eq!(s.scenario.arch().attention_layers(), 32);
    assert!(!s.scenario.arch().is_hybrid());
    // A pure Mamba model trains without a caveat; a hybrid says how its blocks are
    // counted; serving and linear attention say what is not modelled yet.
    let w = |q: &str| decode(q).0.scenario.problems();
    assert!(!w("mamba_layers=32&mode=train")
        .iter()
        .any(|(_, m)| m.contains("not modelled") || m.contains("hybrid")));
    assert!(w("mamba_layers=8&mode=train")
        .iter()
        .any(|(_, m)| m.contains("training a hybrid")));
    assert!(!w("mamba_layers=8&mode=serve")
        .iter()
        .any(|(_, m)| m.contains("not modelled")));
    assert!(w("mamba_layers=8&mode=serve&engine=sglang")
        .iter()
        .any(|(_, m)| m.contains("not modelled")));
    assert!(
        !w("linear_layers=8&lin_k_heads=2&lin_v_heads=4&lin_k_dim=64&lin_v_dim=64&mode=infer")
            .iter()
            .any(|(_, m)| m.contains("not modelled"))
    );
    assert!(w("linear_layers=8&mode=infer")
        .iter()
        .any(|(_, m)| m.contains("not modelled")));
    assert!(!w("mamba_layers=8&mode=infer")
        .iter()
        .any(|(_, m)| m.contains("not modelled")));
}

/// Sanity check 1 (research notes §2b): training Mamba-130M at 8 × 1,024 tokens on
/// transformers' torch path needs tens of GiB (14·E = 2.625 GiB saved per block, 63 GiB over
/// 24 blocks); the fused kernels need a few GiB, most of it the logits.
#[test]
fn mamba_training_torch_path_needs_tens_of_gib() {
    use memfit_core::contract::query::decode_onto;
    let (s, _) = import("mamba-130m.json");
    let q = "mode=train&batch=8&seq=1024&precision=bf16&framework=pytorch&gpu=h200";
    let at = |k: &str| {
        let s = decode_onto(s.clone().into(), &format!("{q}&ssm_kernels={k}"))
            .0
            .scenario;
        estimate(&s).allocated_bytes as f64 / (1u64 << 30) as f64
    };
    let (fused, torch) = (at("fused"), at("torch"));
    assert!((60.0..90.0).contains(&torch), "torch path {torch} GiB");
    assert!(fused < 12.0, "fused {fused} GiB");
    // Without the kernels it does not fit a 48 GB card.
    let small = decode_onto(s.clone().into(), &format!("{q}&ssm_kernels=torch&gpu=l40s"))
        .0
        .scenario;
    assert!(!estimate(&small).fits);
}

/// Serving a state-space model: vLLM V1 pools equal pages (Mamba-2 2.7B: a state page of
/// 1,342,976 B per layer and request, 64 layers per block, one block per request) and
/// llama.cpp keeps an f32 recurrent state per sequence (163.9 MiB for Mamba-2 2.7B); a
/// hybrid's attention blocks raise vLLM's block size until a page holds the state page.
#[test]
fn hybrid_serving_state_by_hand() {
    use memfit_core::contract::query::decode_onto;
    let (s, _) = import("mamba2-2.7b.json");
    let at = |s: &Scenario, q: &str| {
        let s = decode_onto(s.clone().into(), q).0.scenario;
        estimate(&s).serve.unwrap()
    };
    let v = at(&s, "mode=serve&engine=vllm&max_len=8192&precision=bf16");
    assert_eq!(v.kv_cache_bytes, v.kv_blocks * 64 * 1_342_976);
    assert_eq!(v.max_concurrency, v.kv_blocks as f64);
    assert_eq!((v.kv_bytes_per_token, v.max_len_fit), (0, 8192));
    let c = at(&s, "mode=serve&engine=llamacpp&max_len=8192&quant=q8_0");
    assert_eq!(c.kv_cache_bytes, 171_900_928);
    let c4 = at(
        &s,
        "mode=serve&engine=llamacpp&max_len=8192&quant=q8_0&parallel=4",
    );
    assert_eq!(c4.kv_cache_bytes, 4 * 171_900_928);
    // Jamba (28 Mamba, 4 attention blocks), TP 8: state page 3·1,024·2 + 1,024·16·2 =
    // 38,912 B; attention 512 B per token and layer; B = 16·⌈38,912/8,192⌉ = 80.
    let (j, _) = import("jamba-v0.1.json");
    let q = "mode=serve&engine=vllm&max_len=32768&gpus_per_node=8&tp=8";
    let v = at(&j, q);
    assert_eq!(v.kv_cache_bytes, v.kv_blocks * 4 * 80 * 512);
    let per_request = 7 + 32768u64.div_ceil(80);
    let want = v.kv_blocks as f64 / per_request as f64;
    assert!((v.max_concurrency - want).abs() < 0.01, "{v:?}");
}

/// A multimodal config's vision encoder is read from its `vision_config` into `vision`
/// (the serving engines load it): the same counts as the presets' encoders, whose
/// formulas are checked by hand in `model::vision`; a text-only config sets none.
#[test]
fn multimodal_configs_carry_their_vision_encoder() {
    for (file, vision) in [
        ("gemma-3-4b.json", 419_816_304u64),
        ("llama-4-scout.json", 871_932_416),
        ("mistral-small-3.1-24b.json", 438_958_080),
        // The checkpoints' 8,292,166,656 and 8,291,375,616 less the decoder's 7,615,616,512.
        ("qwen2.5-vl-7b.json", 676_550_144),
        ("qwen2-vl-7b.json", 675_759_104),
        // 8,767,123,696 less 8,190,735,360.
        ("qwen3-vl-8b.json", 576_388_336),
        // 31,070,754,032 less 30,532,122,624.
        ("qwen3-vl-30b-a3b.json", 538_631_408),
        // Qwen/Qwen3.5-27B and Qwen3.5-9B (qwen3_5: Qwen3-VL's encoder without DeepStack).
        ("qwen3.5-27b.json", 460_730_096),
        ("qwen3.5-9b.json", 456_010_480),
    ] {
        let (s, w) = import(file);
        assert_eq!(s.model.vision, Some(vision), "{file}");
        assert!(w.iter().all(|w| w.key == "model"), "{file}: {w:?}");
    }
    let (s, _) = import("gemma-3-1b.json");
    assert_eq!(s.model.vision, None);
}

/// An import carries the checkpoint's context (`max_position_embeddings` → `context`), so
/// serving's default `max_len` is the config's, as vLLM and SGLang derive it, not the
/// preset the import stands on: Llama 3.2 1B (131,072; it stands on `llama-2-7b`, 4,096)
/// and EXAONE 4.0 32B (131,072). A longer `max_len` is named against it; a config without
/// one (BLOOM's ALiBi) leaves the preset's.
#[test]
fn imports_carry_the_checkpoint_context() {
    for (file, ctx) in [
        ("llama-3.2-1b.json", 131_072u32),
        ("exaone-4.0-32b.json", 131_072),
        ("gpt2.json", 1024),
    ] {
        let (mut s, _) = import(file);
        assert_eq!(s.model.context, Some(ctx), "{file}");
        s.workload.mode = memfit_core::scenario::Mode::Serve;
        assert_eq!(
            estimate(&s).serve.unwrap().max_len,
            u64::from(ctx),
            "{file}"
        );
    }
    let (s, _) = import("bloom-560m.json");
    assert_eq!(s.model.context, None);
    let q = "mode=serve&model=llama-2-7b&layers=16&hidden=2048&heads=32&kv_heads=8&head_dim=64&ffn=8192&vocab=128256&context=131072";
    let long = memfit_core::estimate::estimate(
        &memfit_core::contract::query::decode(&format!("{q}&max_len=200000"))
            .0
            .scenario,
    );
    assert!(
        long.warnings.iter().any(|w| w.key == "max_len"
            && w.message
                .contains("longer than the model's context (131,072 tokens")),
        "{:?}",
        long.warnings
    );
    let fits = estimate(
        &memfit_core::contract::query::decode(&format!("{q}&max_len=131072"))
            .0
            .scenario,
    );
    assert!(fits.warnings.iter().all(|w| w.key != "max_len"));
}

/// A multimodal import stands on its family's preset (`model` in the query), so serving
/// sees the checkpoint's context and vLLM's rotary caches: the imports plan as the presets do.
#[test]
fn multimodal_imports_stand_on_their_family_preset() {
    for (file, preset) in [
        ("gemma-3-27b.json", "gemma-3-4b"),
        ("mistral-small-3.1-24b.json", "mistral-small-3.1-24b"),
        ("qwen2.5-vl-7b.json", "qwen2.5-vl-7b"),
        ("qwen3-vl-8b.json", "qwen3-vl-8b"),
    ] {
        let (s, _) = import(file);
        assert_eq!(s.model.preset, preset, "{file}");
    }
    let (mut s, _) = import("qwen3-vl-8b.json");
    s.workload.mode = memfit_core::scenario::Mode::Serve;
    let direct = memfit_core::contract::query::decode("mode=serve&model=qwen3-vl-8b")
        .0
        .scenario;
    let w = |s: &Scenario| estimate(s).serve.map(|p| p.weights_bytes);
    assert_eq!(w(&s), w(&direct));
    assert!(w(&s).is_some());
}

/// Qwen3.5 (`qwen3_5`, a gated-DeltaNet hybrid with Qwen3-VL's encoder): the text decoder
/// counted module by module, and with the encoder the checkpoints' published totals (the
/// `mtp.*` block excluded, as transformers loads them): 27,356,728,560 and 9,409,813,744.
/// One block in four is attention (16 of 64, 8 of 32); 256-wide heads, a quarter rotary.
#[test]
fn qwen35_counts_are_exact() {
    for (file, text, attention) in [
        ("qwen3.5-27b.json", 26_895_998_464u64, 16u64),
        ("qwen3.5-9b.json", 8_953_803_264, 8),
    ] {
        let (s, w) = import(file);
        assert!(w.iter().all(|w| w.key == "model"), "{file}: {w:?}");
        assert_eq!(estimate(&s).model.params, text, "{file}");
        assert_eq!(
            text + s.model.vision.unwrap(),
            match file {
                "qwen3.5-27b.json" => 27_356_728_560,
                _ => 9_409_813_744,
            }
        );
        // `mamba_ssm_dtype: float32` is carried (the engines' state cache holds it).
        assert_eq!(
            s.model.overrides.ssm_dtype,
            Some(memfit_core::model::SsmDtype::Fp32)
        );
        // Served by vLLM, the encoder loads with the decoder (both bf16), and the rotary
        // cache of the config's 262,144 positions (`context`, carried by the import):
        // 262,144 × 256 × 2 B = 128 MiB. vLLM's is a quarter of that (rotary_dim 64, the
        // partial factor ¼); memfit has no key for the factor and counts the whole head.
        assert_eq!(s.model.context, Some(262_144));
        let mut served = s.clone();
        served.workload.mode = memfit_core::scenario::Mode::Serve;
        let plan = estimate(&served).serve.unwrap();
        let both = (text + s.model.vision.unwrap()) * 2;
        assert_eq!(plan.weights_bytes, both + 262_144 * 256 * 2, "{file}");
        assert_eq!(plan.max_len, 262_144, "{file}");
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/configs")
            .join(file);
        let mix = parse(&std::fs::read_to_string(path).unwrap())
            .unwrap()
            .layer_mix
            .unwrap();
        assert_eq!(
            (mix.attention, mix.linear_attention),
            (attention, 3 * attention),
            "{file}"
        );
    }
}
