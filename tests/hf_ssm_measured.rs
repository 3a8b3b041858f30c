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
    // Bounds at today's calibration figures (docs/ssm.md, 2026-11-27, second pass).
    // Generate and prefill meet the transformer budgets (0.7 % / 2.2 %) since Qwen3-Next's
    // gated-DeltaNet prefill counts the block's in_proj, z and convolution outputs beside
    // the chunk rule and the scan's held stream is the block's first half (`h_x = h_l − h`;
    // Qwen3-Next −6.3 % → +1.3 %). Training is wider where a mechanism of transformers'
    // torch path is not modelled yet: the largest misses left are Jamba +2.7 %, Nemotron-H
    // fp32 +2.6 %, Qwen3-Next −1.4 % (routed experts' outputs), Mamba bf16 −1.6 %. A Mamba,
    // convolution or gated-DeltaNet block's first norm saves what a transformer block's
    // does (`layer::mixer_norm_bytes`: its fp32 normalised tensor and statistics too;
    // calibration training median 1.3 % → 0.8 %). Falcon-H1's Mamba mixer gates without the gated RMSNorm
    // (`ssm::ungated_norm_saving`: +4.6 % → +0.3 %); Mamba-1's backward buffers come after
    // the block's MLP half is freed (`ssm::mamba_block_mlp`: Jamba +5.2 % → +2.3 %).
    // The Mamba-2 gated RMSNorm's fp32 tensors in a 16-bit model (`ssm::mamba_mixer_saved`)
    // moved Nemotron-H bf16 −6.8 % → −1.6 %, Bamba −7.4 % → −2.0 %, Granite-4.0-H
    // −6.0 % → −1.6 %; a checkpointed Mamba-2 block's recompute peaking at the chunk scan's
    // return (`ssm::mamba2_recompute_transient`) Nemotron-H bf16 −12.0 % → −1.6 %, fp32
    // −2.6 % → +1.8 %, Mamba-2 −3.6 % → +0.8 %. Fixed since the first comparison
    // (3.5 % / 20.5 %): the recomputed block under full checkpointing is the largest block
    // kind's (`ActPlan::a_max`), the gated-DeltaNet block's convolution and gated norm
    // (`ssm::gdn_torch_around`), the shared expert of Qwen3-Next and Granite-4.0-H, and
    // (second pass) Qwen3-Next's gated attention with its per-head q/k norms
    // (`vars::ATTN_GATE`, `QK_NORMS`) and the chunk rule's normalised q, k and per-chunk
    // copies (`ssm::linear_mixer_saved`; Qwen3-Next training −6.6 % → −2.0 %).
    // Merged with the grouped-experts MoE term (found on CUDA runs C25 and D28, applied to
    // every MoE family): Jamba's calibration rows up (max 2.7 % → 3.6 %), training median
    // 0.8 % → 0.82 %.
    assert!(t_median < 0.009, "calibration training median {t_median}");
    assert!(t_max < 0.037, "calibration training max {t_max}");
    assert!(g_median < 0.008, "calibration generate median {g_median}");
    assert!(g_max < 0.023, "calibration generate max {g_max}");
    // Held out, as reported (never tuned on): median / max.
    let held =
        |train: bool| memfit_evidence::hf::stats(&rows, |r| r.held_out && is_training(r) == train);
    let ((nt, mt, xt), (ng, mg, xg)) = (held(true), held(false));
    eprintln!("held out training: {nt} runs, median {mt:.4}, max {xt:.4}; generate + prefill: {ng} runs, median {mg:.4}, max {xg:.4}");
    assert_eq!((nt, ng), (20, 10));
    // Second pass (2026-11-27), read twice, each time after the calibration work was
    // committed: after the Qwen3-Next mechanisms training 1.2 % / 13.9 %, generate + prefill
    // 0.4 % / 1.5 %; after the Mamba-2 16-bit gated norm, the recompute at the scan's
    // return, Falcon-H1's ungated mixer, Mamba-1's backward after the MLP and the mixers'
    // first norm: training 0.7 % / 3.7 % (pure Mamba-2 bf16 13.9 % → 3.7 %), generate +
    // prefill 0.4 % / 1.5 %. Bounds not tightened on them.
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
