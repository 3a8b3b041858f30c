//! memfit against real state-space and hybrid `transformers` runs (issue 37,
//! `tools/measure_hf_ssm.py`, MemTracker on CPU, transformers' PyTorch fallback):
//! calibration and held-out runs reported apart (`memfit_evidence::hf_ssm`).
//!
//! Bounds here are set on the calibration runs only; the held-out figures are printed and
//! asserted only as reported (never tightened on, never tuned on).

use memfit_evidence::hf::HfRow;
use memfit_evidence::hf_ssm::{embedded_ssm_rows, is_training, ssm_table, HF_SSM};
use serde_json::Value;

/// The split is the committed run list's (fixed before measuring), every measured run is
/// in it with the same part, and every family has runs in both parts.
#[test]
fn the_ssm_split_is_the_committed_one() {
    let d: Value = serde_json::from_str(HF_SSM).unwrap();
    let list: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/hf_ssm_runs.json"
        ))
        .unwrap(),
    )
    .unwrap();
    assert_eq!(d["split"]["rule"], list["split"]["rule"]);
    let listed: std::collections::HashMap<&str, bool> = list["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["id"].as_str().unwrap(), r["held_out"].as_bool().unwrap()))
        .collect();
    let runs = d["runs"].as_array().unwrap();
    assert_eq!(runs.len(), listed.len(), "every planned run measured");
    for r in runs {
        let id = r["id"].as_str().unwrap();
        assert_eq!(
            listed.get(id),
            Some(&r["held_out"].as_bool().unwrap()),
            "{id}"
        );
    }
    let (rows, failed) = embedded_ssm_rows();
    assert!(failed.is_empty(), "{failed:?}");
    for fam in [
        "mamba",
        "mamba2",
        "jamba",
        "bamba",
        "nemotron_h",
        "falcon_h1",
        "lfm2",
        "qwen3_next",
        "granitemoehybrid",
    ] {
        let of = |held: bool| {
            rows.iter()
                .filter(|r| r.family == fam && r.held_out == held)
                .count()
        };
        assert!(
            of(false) >= 5 && of(true) >= 2,
            "{fam}: {} / {}",
            of(false),
            of(true)
        );
    }
}

fn print(rows: &[HfRow]) {
    for r in rows {
        eprintln!("{}", r.line());
    }
    eprintln!("{}", ssm_table(rows));
}

/// Every run estimated and printed; the calibration figures bounded per part.
#[test]
fn ssm_runs_are_compared_and_reported_by_part() {
    let (rows, failed) = embedded_ssm_rows();
    assert!(failed.is_empty(), "{failed:?}");
    print(&rows);
    let cal =
        |train: bool| memfit_evidence::hf::stats(&rows, |r| !r.held_out && is_training(r) == train);
    let (n, t_median, t_max) = cal(true);
    eprintln!("calibration training: {n} runs, median {t_median:.4}, max {t_max:.4}");
    assert_eq!(n, 34);
    let (n, g_median, g_max) = cal(false);
    eprintln!("calibration generate + prefill: {n} runs, median {g_median:.4}, max {g_max:.4}");
    assert_eq!(n, 35);
    // Bounds at today's calibration figures (docs/ssm.md, 2026-11-27). Generate and prefill
    // meet the transformer budgets' max (7 %), not yet their median (1 %: 1.5 %, Mamba-2's
    // chunk scan +1 … +3 % where l = N = P). Training is wider where a mechanism of
    // transformers' torch path is not modelled yet: Mamba-2 hybrids in bf16 (Nemotron-H
    // −12.0 % under full checkpointing, −6.8 % without; Bamba −5.0 % / −7.4 %); Qwen3-Next's
    // gated attention and routed experts' outputs without checkpointing (−6.6 %,
    // `train/qwen3_next/s/fp32/adamw-foreach/sdpa/nockpt/loss=model/b2s256`); Granite-4.0-H in
    // bf16 (−6.0 %). Fixed since the first comparison (3.5 % / 20.5 %): the recomputed block
    // under full checkpointing is the largest block kind's (`ActPlan::a_max`; Nemotron-H fp32
    // −14.4 % → −2.6 %, Bamba bf16 −12.0 % → −5.0 %), the gated-DeltaNet block's convolution
    // and gated norm (`ssm::gdn_torch_around`) and the shared expert of Qwen3-Next and
    // Granite-4.0-H (`shared_experts` from the import; Qwen3-Next −20.5 % → −6.6 %,
    // Granite-4.0-H −11.9 % → −6.0 %).
    assert!(t_median < 0.027, "calibration training median {t_median}");
    assert!(t_max < 0.121, "calibration training max {t_max}");
    assert!(g_median < 0.016, "calibration generate median {g_median}");
    assert!(g_max < 0.064, "calibration generate max {g_max}");
    // Held out, as reported (never tuned on): median / max.
    let held =
        |train: bool| memfit_evidence::hf::stats(&rows, |r| r.held_out && is_training(r) == train);
    let ((nt, mt, xt), (ng, mg, xg)) = (held(true), held(false));
    eprintln!("held out training: {nt} runs, median {mt:.4}, max {xt:.4}; generate + prefill: {ng} runs, median {mg:.4}, max {xg:.4}");
    assert_eq!((nt, ng), (20, 10));
    // As reported once after the mechanisms were fixed (2026-11-27): training 1.4 % / 13.9 %
    // (2.1 % / 26.6 % before the hybrid recompute, gated-DeltaNet and shared-expert
    // mechanisms), generate + prefill 1.7 % / 2.5 %; before them all 8.7 % / 39.8 % and
    // 15.5 % / 41.1 %.
    // The grouped-experts MoE term (`activations::vars::moe_saved_width`, found on the CUDA
    // calibration runs C25 and D28) moved it from 1.38 % to 1.40 % untuned (Jamba's rows up,
    // Qwen3-Next's and Granite-4.0-H's down).
    assert!(mt < 0.0145 && xt < 0.14, "held out training {mt} / {xt}");
    assert!(mg < 0.018 && xg < 0.026, "held out generate {mg} / {xg}");
}
