//! memfit against real `transformers` runs (`tools/measure_hf.py`, MemTracker on CPU):
//! calibration and held-out runs reported apart (`memfit_evidence::hf`).
//!
//! Bounds here are set on the calibration runs only; the held-out figures are printed and
//! never bounded tighter than the calibration ones (a held-out run is not tuned on).

use memfit_evidence::hf::{embedded_hf_rows, stats, HfRow};
use serde_json::Value;

fn doc() -> Value {
    serde_json::from_str(memfit_evidence::hf::HF).unwrap()
}

/// The split is the committed rule's, recorded per run, and it spans the data: about a
/// third held out, every family and every loop in both parts.
#[test]
fn the_split_is_fixed_and_spans_every_family() {
    let d = doc();
    assert_eq!(
        d["split"]["rule"].as_str().unwrap(),
        "held_out = int(sha256(id)[:8], 16) % 3 == 0"
    );
    let runs = d["runs"].as_array().unwrap();
    assert!(runs.len() >= 150, "{} runs", runs.len());
    // The run list committed before modelling holds every measured run with the same split.
    let list: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/hf_runs.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let listed: std::collections::HashMap<&str, bool> = list["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["id"].as_str().unwrap(), r["held_out"].as_bool().unwrap()))
        .collect();
    for r in runs {
        let id = r["id"].as_str().unwrap();
        assert_eq!(
            listed.get(id),
            Some(&r["held_out"].as_bool().unwrap()),
            "{id}"
        );
    }
    let held = runs.iter().filter(|r| r["held_out"] == true).count();
    let frac = held as f64 / runs.len() as f64;
    assert!(
        (0.2..=0.45).contains(&frac),
        "held out {held} of {}",
        runs.len()
    );
    let (rows, _) = embedded_hf_rows();
    let mut families: Vec<&str> = rows.iter().map(|r| r.family.as_str()).collect();
    families.sort();
    families.dedup();
    assert!(families.len() >= 8, "{families:?}");
}

/// Every run is estimated (its config imports, its keys are accepted), and the figures
/// are printed per part, family and loop.
#[test]
fn every_run_is_compared_and_reported_by_part() {
    let (rows, failed) = embedded_hf_rows();
    assert!(failed.is_empty(), "{failed:?}");
    for r in &rows {
        eprintln!("{}", r.line());
    }
    let show = |what: &str, keep: &dyn Fn(&HfRow) -> bool| {
        let (n, m, x) = stats(&rows, keep);
        eprintln!(
            "{what}: {n} runs, median {:.1} %, max {:.1} %",
            m * 100.0,
            x * 100.0
        );
        (n, m, x)
    };
    let (_, cal_median, cal_max) = show("calibration", &|r| !r.held_out);
    show("held out", &|r| r.held_out);
    // Bounds on the calibration runs only, at today's figures (docs/validation.md: 0.6 %
    // and 8.7 %, an FSDP2 Mixtral run; 20.3 % on GPT-2's pure-bf16 eager run before its
    // softmax was counted in the model's dtype); held-out figures are printed, never bounded.
    assert!(cal_median < 0.015, "calibration median {cal_median}");
    assert!(cal_max < 0.09, "calibration max {cal_max}");
}

/// The step's curve between the peaks: the program's running totals at the ends of the
/// forward, the backward and the optimizer step and after `zero_grad` against the
/// measured snapshots. Bounded on the calibration runs (median per snapshot); held out
/// printed.
#[test]
fn phase_end_totals_follow_the_measured_curve() {
    use memfit_evidence::hf::{held_out, phase_ends};
    let d = doc();
    let mut cal: std::collections::BTreeMap<&str, Vec<f64>> = Default::default();
    let mut held: std::collections::BTreeMap<&str, Vec<f64>> = Default::default();
    for run in d["runs"].as_array().unwrap() {
        let Some(ends) = phase_ends(run) else {
            continue;
        };
        for (k, meas, est) in ends {
            let e = (est as f64 - meas as f64).abs() / meas as f64;
            if held_out(run) { &mut held } else { &mut cal }
                .entry(k)
                .or_default()
                .push(e);
        }
    }
    for (k, v) in &cal {
        let (m, x) = memfit_evidence::validation::median_max(v.clone());
        let (hm, hx) = memfit_evidence::validation::median_max(held[k].clone());
        eprintln!("{k}: calibration {} runs median {:.1} % max {:.1} %; held out median {:.1} % max {:.1} %",
            v.len(), m * 100.0, x * 100.0, hm * 100.0, hx * 100.0);
        assert!(v.len() >= 100, "{k}: {} runs", v.len());
        assert!(m <= 0.03, "{k}: calibration median {m}");
    }
    assert_eq!(cal.len(), 4);
}
