//! The state-space and hybrid presets (`crates/core/src/model/presets_hybrid.rs`): each is
//! exactly what importing its checkpoint's published config.json gives (shape, layer mix,
//! exact count), and every mode, the explorer, the fit map's sweep, the solvers and
//! serving answer for each without refusing or panicking; the KV cache is counted in the
//! attention blocks only (by hand) and the state does not grow with the context.

use memfit_core::contract::query::{apply_import, decode, decode_onto};
use memfit_core::contract::Settings;
use memfit_core::estimate::{estimate, Estimate};
use memfit_core::explore::{explore, min_gpus_within};
use memfit_core::hfconfig::parse;
use memfit_core::ledger::{Component, Phase};
use memfit_core::model::{preset, HYBRID_PRESETS};
use memfit_core::scenario::{Scenario, Solve};
use memfit_core::solve::max_fitting;

/// Each preset, the config.json it was read from (`tests/configs/`, copied from the Hub
/// page named), and transformers 5.24 `num_parameters()` of that checkpoint (the counts
/// `tests/hf_import.rs` checks the import against).
const ROWS: [(&str, &str, u64); 9] = [
    // https://huggingface.co/mistralai/Mamba-Codestral-7B-v0.1 (Mistral's announcement:
    // 7,285,403,648 parameters).
    (
        "mamba-codestral-7b",
        "mamba-codestral-7b.json",
        7_285_403_648,
    ),
    // https://huggingface.co/ai21labs/Jamba-v0.1 (model card: 52B total, 12B active).
    ("jamba-v0.1", "jamba-v0.1.json", 51_570_323_328),
    // https://huggingface.co/nvidia/Nemotron-H-8B-Base-8K (model card: 8B).
    ("nemotron-h-8b", "nemotron-h-8b-hub.json", 8_100_852_736),
    // https://huggingface.co/Qwen/Qwen3-Next-80B-A3B-Instruct (model card: 80B total, 3B
    // activated).
    (
        "qwen3-next-80b-a3b",
        "qwen3-next-80b-a3b.json",
        79_674_391_296,
    ),
    // https://huggingface.co/LiquidAI/LFM2-1.2B (model card: 1,170,340,608).
    ("lfm2-1.2b", "lfm2-1.2b.json", 1_170_340_608),
    // https://huggingface.co/ibm-granite/granite-4.0-h-tiny (model card: 7B total, 1B active).
    (
        "granite-4.0-h-tiny",
        "granite-4.0-h-tiny.json",
        6_939_037_248,
    ),
    // https://huggingface.co/tiiuae/Falcon-H1-7B-Base
    ("falcon-h1-7b", "falcon-h1-7b.json", 7_585_513_568),
    // https://huggingface.co/ibm-ai-platform/Bamba-9B
    ("bamba-9b", "bamba-9b.json", 9_780_235_392),
    // https://huggingface.co/MiniMaxAI/MiniMax-Text-01 (model card: 456B total, 45.9B
    // activated per token).
    ("minimax-text-01", "minimax-text-01.json", 456_089_655_296),
];

fn config(file: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/configs")
        .join(file);
    std::fs::read_to_string(path).unwrap()
}

fn at(q: &str) -> Scenario {
    let (s, w) = decode(q);
    assert!(w.is_empty(), "{q}: {w:?}");
    s.scenario
}

/// The decode-phase KV cache: attention blocks' K and V (not the state-space state).
fn kv(e: &Estimate) -> u64 {
    e.items
        .iter()
        .filter(|i| i.component == Component::KvCache && i.phases == [Phase::Decode])
        .filter(|i| !i.formula.contains("state"))
        .map(|i| i.bytes)
        .sum()
}

/// The decode-phase state of the Mamba, convolution and gated-DeltaNet blocks.
fn state(e: &Estimate) -> u64 {
    e.items
        .iter()
        .filter(|i| i.component == Component::KvCache && i.phases == [Phase::Decode])
        .filter(|i| i.formula.contains("state"))
        .map(|i| i.bytes)
        .sum()
}

/// Importing the checkpoint's config.json sets the preset's shape and layer mix and counts
/// the preset's exact parameters and largest layer; the preset's estimate says
/// transformers' count.
#[test]
fn each_preset_is_its_config_import() {
    assert_eq!(ROWS.len(), HYBRID_PRESETS.len());
    for (id, file, hf) in ROWS {
        let p = preset(id).unwrap_or_else(|| panic!("no preset {id}"));
        let imported = parse(&config(file)).unwrap();
        let mut s = Settings::default();
        apply_import(&mut s, &imported);
        assert_eq!(s.scenario.arch(), p.arch, "{id}");
        assert_eq!(imported.params, Some(hf), "{id}");
        match p.exact {
            Some(e) => {
                assert_eq!(
                    (e.params, Some(e.largest_layer)),
                    (hf, imported.largest_layer)
                );
            }
            None => assert_eq!(p.arch.params().total, hf, "{id}"),
        }
        let e = estimate(&at(&format!("model={id}")));
        assert_eq!(e.model.params, hf, "{id}");
    }
}

/// Training (ZeRO-3, LoRA with TP and PP), inference, serving on vLLM and llama.cpp, the
/// explorer's sweep (the fit map's cells), the fewest-GPU search and the batch and context
/// solvers answer for every hybrid preset; no panic, no refusal of the shape.
#[test]
fn every_mode_and_solver_answers() {
    let modes = [
        "mode=train&zero=3&gpus_per_node=8&seq=4096",
        "mode=train&tp=4&pp=2&gpus_per_node=8&finetune=lora&seq=4096",
        "mode=infer&seq=8192&gen=512&batch=4&gpus_per_node=8&tp=8",
        "mode=serve&engine=vllm&max_len=32768&gpus_per_node=8&tp=8",
        "mode=serve&engine=llamacpp&max_len=8192&quant=q8_0",
    ];
    for p in HYBRID_PRESETS {
        let psi = p.exact.map_or(p.arch.params().total, |e| e.params);
        for q in modes {
            let q = format!("model={}&{q}", p.id);
            let s = at(&q);
            assert!(s.problems().iter().all(|(k, _)| *k != "model"), "{q}");
            let e = estimate(&s);
            assert_eq!(e.model.params, psi, "{q}");
            assert!(e.per_gpu_bytes > 0, "{q}");
            if q.contains("serve") {
                let v = e.serve.as_ref().unwrap();
                assert!(v.error.is_none() || !e.fits, "{q}: {v:?}");
            }
        }
        // MiniMax-Text-01 (456B) on 16 nodes of H200s, the others on one node of H100s.
        let nodes = if psi > 100_000_000_000 {
            "&gpu=h200&nodes=16"
        } else {
            ""
        };
        for q in [modes[0], modes[2], modes[3]] {
            let s = at(&format!("model={}&{q}{nodes}", p.id));
            let sw = explore(&s, Some(10));
            assert!(!sw.cells.is_empty() && sw.fitting > 0, "{} {q}", p.id);
            assert!(min_gpus_within(&s, 16).value.is_some(), "{} {q}", p.id);
        }
        let s = at(&format!(
            "model={}&mode=infer&gpu=h200&quant=int4_g&gpus_per_node=8&tp=8",
            p.id
        ));
        for what in [Solve::MaxBatch, Solve::MaxContext] {
            let r = max_fitting(&s, what).unwrap();
            assert!(r.value >= 1, "{} {what:?}", p.id);
        }
    }
}

/// One sequence of `S = 1,000 + 24` tokens in bf16: the KV cache is
/// `2 · L_a · a_kv · d · 2 B · S` (K and V, attention blocks only), written out per
/// checkpoint from its config.json; the state of the other blocks is the same at 32× the
/// context, and the KV cache grows exactly 32-fold.
#[test]
fn kv_cache_in_attention_blocks_only_by_hand() {
    // (preset, attention blocks, KV heads, head width) from each config.json.
    let hand: [(&str, u64, u64, u64); 9] = [
        ("mamba-codestral-7b", 0, 0, 0),
        ("jamba-v0.1", 4, 8, 128),    // attn_layer_period 8, offset 4 of 32
        ("nemotron-h-8b", 4, 8, 128), // four `*` in hybrid_override_pattern
        ("qwen3-next-80b-a3b", 12, 2, 256), // full_attention in 12 of 48 layer_types
        ("lfm2-1.2b", 6, 8, 64),      // full_attn_idxs [2, 5, 8, 10, 12, 14]
        ("granite-4.0-h-tiny", 4, 4, 128), // `attention` in 4 of 40 layer_types
        ("falcon-h1-7b", 44, 2, 128), // every block attends
        ("bamba-9b", 3, 8, 128),      // attn_layer_indices [9, 18, 27]
        ("minimax-text-01", 10, 8, 128), // full_attention in 10 of 80 layer_types
    ];
    for (id, l_a, a_kv, d) in hand {
        let q = |seq: u32| format!("model={id}&mode=infer&batch=1&seq={seq}&gen=24&precision=bf16");
        let short = estimate(&at(&q(1000)));
        let long = estimate(&at(&q(32 * 1024 - 24)));
        assert_eq!(kv(&short), 2 * l_a * a_kv * d * 2 * 1024, "{id}");
        assert_eq!(kv(&long), 32 * kv(&short), "{id}");
        assert!(state(&short) > 0, "{id}: no state");
        assert_eq!(state(&long), state(&short), "{id}: the state grew");
    }
}

/// Nemotron-H 8B against Llama 3 8B (nearly the same Ψ), one sequence from 4,096 to 131,072
/// tokens: the hybrid's 4 attention blocks of 52 grow its KV cache by `2·4·8·128·2 B =
/// 16 KiB` a token, Llama's 32 blocks by 128 KiB, eight times as much; the rest of the
/// growth is the prefill's one-layer transient, which both pay, so the hybrid's peak grows
/// less by at least the KV difference less that transient's difference.
#[test]
fn a_hybrid_grows_less_than_a_transformer_of_its_size() {
    let peak = |m: &str, seq: u32| {
        estimate(&at(&format!(
            "model={m}&mode=infer&batch=1&seq={seq}&gen=1&gpu=h200"
        )))
    };
    let (h4, h128) = (peak("nemotron-h-8b", 4096), peak("nemotron-h-8b", 131_072));
    let (t4, t128) = (peak("llama-3-8b", 4096), peak("llama-3-8b", 131_072));
    let per_token = |a: &Estimate, b: &Estimate| (kv(b) - kv(a)) / (131_072 - 4096);
    assert_eq!(per_token(&h4, &h128), 2 * 4 * 8 * 128 * 2);
    assert_eq!(per_token(&t4, &t128), 2 * 32 * 8 * 128 * 2);
    let grew = |a: &Estimate, b: &Estimate| b.per_gpu_bytes - a.per_gpu_bytes;
    assert!(grew(&h4, &h128) < grew(&t4, &t128));
    assert_eq!(state(&h128), state(&h4));
}

/// vLLM V1 pools the attention blocks' KV and the other blocks' state in equal pages: per
/// token it counts the attention blocks only, `2·L_a·a_kv·d·2 B / tp`.
#[test]
fn vllm_counts_kv_per_token_in_attention_blocks() {
    for (id, l_a, a_kv, d) in [
        ("nemotron-h-8b", 4u64, 8u64, 128u64),
        ("falcon-h1-7b", 44, 2, 128),
        ("lfm2-1.2b", 6, 8, 64),
    ] {
        let s = at(&format!(
            "model={id}&mode=serve&engine=vllm&max_len=8192&precision=bf16"
        ));
        let v = estimate(&s).serve.unwrap();
        assert_eq!(v.kv_bytes_per_token, 2 * l_a * a_kv * d * 2, "{id}: {v:?}");
        assert!(v.max_concurrency >= 1.0 && v.error.is_none(), "{id}: {v:?}");
    }
}

/// Overriding a hybrid preset's shape drops its exact count, and a warning says so.
#[test]
fn an_overridden_shape_says_the_count_is_no_longer_exact() {
    let s = at("model=nemotron-h-8b&layers=26");
    let w = s.problems();
    assert!(
        w.iter()
            .any(|(k, m)| *k == "model" && m.contains("exact count")),
        "{w:?}"
    );
    assert_ne!(estimate(&s).model.params, 8_100_852_736);
    let (s, _) = decode_onto(s.into(), "params=4000000000");
    assert!(s.scenario.problems().iter().all(|(k, _)| *k != "model"));
    assert_eq!(estimate(&s.scenario).model.params, 4_000_000_000);
}

/// MiniMax-Text-01's 70 lightning-attention blocks keep one `d × d` matrix per head (`K^T V`,
/// transformers `MiniMaxLightningAttention`: `zeros(b, H, d, d)` in the value's dtype):
/// `70 · 64 · 128 · 128 · 2 B` per sequence in bf16, whatever the context; vLLM pages it per
/// rank as `(H/t, d, d)` in the model dtype (`linear_attention_state_shape`); llama.cpp has
/// no such architecture and a warning says so, as one does for training.
#[test]
fn lightning_state_by_hand() {
    let q = |seq: u32| {
        format!("model=minimax-text-01&mode=infer&batch=2&seq={seq}&gen=24&precision=bf16")
    };
    let short = estimate(&at(&q(1000)));
    let long = estimate(&at(&q(100_000)));
    assert_eq!(state(&short), 2 * 70 * 64 * 128 * 128 * 2);
    assert_eq!(state(&long), state(&short));
    let s = at("model=minimax-text-01&mode=serve&engine=vllm&max_len=65536&gpus_per_node=8&tp=8&precision=bf16&gpu=h200");
    let v = estimate(&s).serve.unwrap();
    // Attention: 10 blocks of ⌈8/8⌉ KV heads of 128 per rank, K and V in bf16.
    assert_eq!(v.kv_bytes_per_token, 2 * 10 * 128 * 2);
    assert!(v.max_concurrency > 0.0 && v.error.is_none(), "{v:?}");
    let s = at("model=minimax-text-01&mode=serve&engine=llamacpp&quant=q4_k_m&max_len=8192");
    assert!(s
        .problems()
        .iter()
        .any(|(k, m)| *k == "lin_kind" && m.contains("llama.cpp")));
    let s = at("model=minimax-text-01&mode=train&zero=3&gpus_per_node=8&nodes=8");
    assert!(s
        .problems()
        .iter()
        .any(|(k, m)| *k == "lin_kind" && m.contains("training")));
}

/// The active parameters of the MoE hybrids: the exact count less the routed experts a token
/// skips. MiniMax's card's "45.9B activated" leaves out the embedding and the LM head
/// (`2·V·h`); Jamba's "12B active" is the whole.
#[test]
fn active_parameters_against_the_model_cards() {
    let active = |m: &str| estimate(&at(&format!("model={m}"))).model.active_params as f64;
    // MiniMax-Text-01: 80 blocks skip 30 of 32 experts of 3·6,144·9,216.
    let minimax = 456_089_655_296.0 - 80.0 * 30.0 * 3.0 * 6144.0 * 9216.0;
    assert_eq!(active("minimax-text-01"), minimax);
    let rel = |x: f64, card: f64| (x - card).abs() / card;
    assert!(rel(minimax - 2.0 * 200_064.0 * 6144.0, 45.9e9) < 0.002);
    // Jamba v0.1: 16 MoE blocks skip 14 of 16 experts of 3·4,096·14,336.
    let jamba = 51_570_323_328.0 - 16.0 * 14.0 * 3.0 * 4096.0 * 14_336.0;
    assert_eq!(active("jamba-v0.1"), jamba);
    assert!(rel(jamba, 12e9) < 0.01);
    // A dense hybrid touches every parameter.
    assert_eq!(active("nemotron-h-8b"), 8_100_852_736.0);
}

/// State-shape keys on a transformer change nothing and say so, once, naming each; on a
/// hybrid they are its shape (no such warning).
#[test]
fn state_keys_on_a_transformer_are_named_as_ignored() {
    let inert = |q: &str| -> Vec<(&'static str, String)> {
        at(q)
            .problems()
            .into_iter()
            .filter(|(_, m)| m.contains("this model has none"))
            .collect()
    };
    let w = inert("model=llama-3-8b&ssm_state=64&ssm_dtype=fp32&lin_kind=lightning");
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!(w[0].0, "ssm_state");
    assert!(
        w[0].1
            .starts_with("ssm_state, ssm_dtype, lin_kind shape state blocks"),
        "{w:?}"
    );
    assert!(inert("model=nemotron-h-8b&ssm_state=64").is_empty());
    assert!(inert("model=llama-3-8b").is_empty());
}
