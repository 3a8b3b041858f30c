//! Activation conventions reproduced exactly: Korthikanti et al. Table 2 (every row,
//! GPT-3 and Llama-2-7B shapes, per layer and all layers), seed 002's formula and its
//! Llama-3 405B example (with the arithmetic slip it contains), seed 003's term.

mod common;
use common::{example, load, u, Failures};
use memfit_core::contract::report::estimate_query;
use memfit_core::estimate::Component;

fn activations(q: &str) -> u64 {
    let (_, e) = estimate_query(q);
    e.gpu_bytes_of(Component::Activations)
}

#[test]
fn korthikanti_table_2_every_row() {
    let doc = load("seed_examples.json");
    let mut f = Failures::default();
    for w in example(&doc, "korthikanti_activation_formulas")["worked_computed_here"]
        .as_array()
        .unwrap()
    {
        let model = if w["model"].as_str().unwrap().starts_with("GPT-3") {
            "gpt3-175b"
        } else {
            "llama-2-7b"
        };
        let (t, layers) = (u(w, "t"), u(w, "L"));
        let base = format!(
            "model={model}&convention=korthikanti&batch={}&seq={}&gpus_per_node={t}",
            u(w, "b"),
            u(w, "s")
        );
        for (row, opts) in [
            ("no_parallelism", "tp=1&gpus_per_node=1"),
            ("tensor_parallel", "tp=T"),
            ("tensor_parallel+sequence_parallel", "tp=T&sp=1"),
            (
                "tensor_parallel+selective_recompute",
                "tp=T&recompute=selective",
            ),
            (
                "tensor_parallel+sequence_parallel+selective_recompute",
                "tp=T&sp=1&recompute=selective",
            ),
            (
                "full_recompute (per layer, input only)",
                "tp=1&gpus_per_node=1&recompute=full",
            ),
        ] {
            let opts = opts.replace('T', &t.to_string());
            let per_layer = activations(&format!("{base}&{opts}&layers=1"));
            let want = w["per_layer_bytes"][row].as_f64().unwrap();
            f.check(per_layer as f64 == want, || {
                format!("{model} {row}: per layer {per_layer} vs {want}")
            });
            let all = activations(&format!("{base}&{opts}"));
            let want_all = w["all_layers_bytes"][row].as_f64().unwrap();
            f.check(all as f64 == want_all, || {
                format!("{model} {row}: {layers} layers {all} vs {want_all}")
            });
        }
    }
    f.finish("Korthikanti Table 2");
}

/// Seed 002: `16k·bsh + 2bsh + 2k·bas² + bas²` per layer (k = 2 gives 34bsh + 5bas²).
#[test]
fn seed_002_formula() {
    // Llama-2-7B shape, b = 2, s = 1024, bf16 (k = 2): 16·2·2·1024·4096 + 2·2·1024·4096
    // + 2·2·2·32·1024² + 2·32·1024² = 268,435,456 + 16,777,216 + 268,435,456 + 67,108,864.
    let per_layer: u64 = 268_435_456 + 16_777_216 + 268_435_456 + 67_108_864;
    assert_eq!(
        activations("convention=seed002&layers=1&batch=2&seq=1024"),
        per_layer
    );
    assert_eq!(
        activations("convention=seed002&batch=2&seq=1024"),
        32 * per_layer
    );
    // k = 4 (fp32): 64bsh + 2bsh + 8bas² + bas².
    let fp32: u64 = 64 * 2 * 1024 * 4096 + 2 * 2 * 1024 * 4096 + 9 * 2 * 32 * 1024 * 1024;
    assert_eq!(
        activations("convention=seed002&layers=1&batch=2&seq=1024&precision=fp32"),
        fp32
    );
    // With k = 2 seed 002 equals seed 003.
    assert_eq!(
        activations("convention=seed003&layers=1&batch=2&seq=1024"),
        per_layer
    );
}

/// Seed 002's Llama-3 405B example prints M_a = 147,366 GB, but its own formula
/// (34·b·s·h + 5·b·a·s²)·L gives 22,313,351 GB: the example used `s` where the formula
/// has `s²` (151× less). memfit computes the formula; this test pins both numbers.
#[test]
fn seed_002_llama3_405b_slip() {
    let doc = load("seed_examples.json");
    let e = example(&doc, "hepengfei_llama3_405b");
    let i = &e["inputs"];
    let (l, h, a, s, b) = (
        u(i, "L"),
        u(i, "h"),
        u(i, "a"),
        u(i, "s"),
        u(i, "b_per_DP_unit"),
    );
    let as_printed = l * (34 * b * s * h + 5 * b * a * s); // the slip: s instead of s²
    let by_formula = l as u128 * (34 * b * s * h) as u128
        + l as u128 * 5 * b as u128 * a as u128 * (s as u128) * (s as u128);
    assert_eq!(as_printed, u(&e["expected"], "M_a_bytes")); // 147,366,233,505,792 B
    assert_eq!(
        by_formula,
        u(&e["computed"], "M_a_bytes_by_the_seeds_own_formula") as u128
    );
    assert_eq!(by_formula / as_printed as u128, 151);
    // memfit's seed002 convention follows the formula (k = 2 → 34bsh + 5bas²). The 405B
    // shape has 128 heads and 126 layers; b = 16 sequences of 131,072 tokens.
    let q = format!("model=llama-3.1-405b&convention=seed002&batch={b}&seq={s}");
    assert_eq!(activations(&q) as u128, by_formula);
    // The explanation memfit gives next to it names both numbers and the factor.
    let text = memfit_core::activations::SEED_002_SLIP;
    for needle in ["147,366 GB", "22,313,351,535,132,672", "151×", "s²"] {
        assert!(text.contains(needle), "explanation lacks {needle}");
    }
    assert!(e["discrepancy"].as_str().unwrap().contains("151x"));
}
