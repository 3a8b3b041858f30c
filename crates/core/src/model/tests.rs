//! Unit tests of the model shapes and presets.

use super::*;

/// Every preset's computed count equals the count its publisher reports (a hybrid's: its
/// exact count, which `tests/hybrid_presets.rs` checks against its config.json import).
#[test]
fn presets_match_published_counts() {
    for p in presets() {
        p.arch.check().unwrap_or_else(|e| panic!("{}: {e}", p.id));
        p.arch
            .check_mix()
            .unwrap_or_else(|e| panic!("{}: {e}", p.id));
        let got = p.exact.map_or(p.arch.params().total, |e| e.params);
        if p.published_rel_tol == 0.0 {
            assert_eq!(got, p.published_params, "{}", p.id);
        } else {
            let rel = (got as f64 - p.published_params as f64).abs() / p.published_params as f64;
            assert!(
                rel <= p.published_rel_tol,
                "{}: {got} vs {} (rel {rel})",
                p.id,
                p.published_params
            );
        }
    }
}

#[test]
fn gpt2_breakdown_by_hand() {
    // wte 50257·768 + wpe 1024·768; block: c_attn 768·2304+2304, c_proj 768²+768,
    // c_fc 768·3072+3072, c_proj 3072·768+768, 2 LayerNorms 4·768; ln_f 2·768.
    let p = preset("gpt2").unwrap().arch.params();
    assert_eq!(p.embedding, 38_597_376 + 786_432);
    assert_eq!(
        p.per_layer,
        1_771_776 + 590_592 + 2_362_368 + 2_360_064 + 3_072
    );
    assert_eq!(p.largest_layer, 38_597_376); // transformer.wte, as DeepSpeed reports
    assert_eq!(p.lm_head, 0);
}

#[test]
fn deepseek_v3_active_params() {
    // DeepSeek-V3 technical report: "37B activated" per token, which rounds a count
    // without the input embedding lookup (129280·7168): 37.55B − 0.93B = 36.63B → 37B.
    let p = preset("deepseek-v3").unwrap().arch.params();
    assert_eq!(p.active, 37_552_282_624);
    let without_lookup = p.active - 129_280 * 7168;
    assert_eq!((without_lookup as f64 / 1e9).round(), 37.0);
}

#[test]
fn t5_largest_layer_is_the_shared_embedding() {
    // DeepSpeed reports `shared` (32128·1024) for both T5 shapes.
    assert_eq!(
        preset("t5-3b").unwrap().arch.params().largest_layer,
        32_899_072
    );
}

#[test]
fn moe_active_params() {
    // Mixtral 8x7B: "12.9B active" (Mistral AI). By hand: total minus the 6 unused
    // experts in each of 32 layers, 46,702,792,704 − 32·6·(3·4096·14336).
    let p = preset("mixtral-8x7b").unwrap().arch.params();
    assert_eq!(p.active, 46_702_792_704 - 32 * 6 * 3 * 4096 * 14_336);
    assert_eq!(p.active, 12_879_925_248);
}

#[test]
fn linears_cover_every_matrix() {
    // Matrices + vectors = the total; Llama-2-7B's vectors are its 65 RMSNorms.
    for id in ["llama-2-7b", "mixtral-8x7b", "t5-3b", "deepseek-v3", "gpt2"] {
        let a = &preset(id).unwrap().arch;
        let m: u64 = a.linears().iter().map(Linear::params).sum();
        let p = a.params();
        assert!(m <= p.total, "{id}");
        if id == "llama-2-7b" {
            assert_eq!(p.total - m, 65 * 4096);
        }
    }
}

#[test]
fn check_rejects_bad_shapes() {
    let mut a = preset("llama-2-7b").unwrap().arch.clone();
    a.kv_heads = crate::scenario::count(5);
    assert!(a.check().unwrap_err().contains("kv_heads"));
    a.kv_heads = crate::scenario::count(32);
    a.local_layers = 4;
    assert!(a.check().unwrap_err().contains("local_layers"));
}

/// The hybrids follow the table, ids unique over both; the pure state-space row is counted
/// by its shape, every hybrid row by its exact count.
#[test]
fn hybrid_presets_follow_the_table() {
    let all = presets();
    assert_eq!(all.len(), PRESETS.len() + HYBRID_PRESETS.len());
    assert_eq!(all[PRESETS.len()].id, HYBRID_PRESETS[0].id);
    let mut ids: Vec<&str> = all.iter().map(|p| p.id).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), all.len(), "duplicate preset id");
    for p in HYBRID_PRESETS {
        assert!(p.arch.is_hybrid(), "{}", p.id);
        assert_eq!(p.exact.is_none(), p.arch.ssm_params().is_some(), "{}", p.id);
    }
}

/// Parse, don't clamp: a zero size never reaches an `Arch`. The codec refuses it with a
/// warning naming the key (the preset's value stays), and the shape's sizes are counts.
#[test]
fn zero_sizes_are_refused_at_the_codec() {
    for key in [
        "layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab",
    ] {
        let (settings, warnings) = crate::contract::query::decode(&format!("model=gpt2&{key}=0"));
        assert!(
            warnings.iter().any(|w| w.key == key && w.value == "0"),
            "{key}=0: {warnings:?}"
        );
        assert_eq!(
            settings.scenario.arch(),
            preset("gpt2").unwrap().arch,
            "{key}"
        );
    }
}
