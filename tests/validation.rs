//! `docs/validation.md` is generated from `../shared/reference/measured_runs.json` by
//! `memfit --validation`; this test regenerates it, fails when the committed file is
//! stale, and prints the median and maximum errors.

mod common;
use common::load;
use memfit_evidence::validation::{markdown, rows, summary};

#[test]
fn validation_report_is_current() {
    let doc = load("measured_runs.json");
    let (r, _) = rows(&doc);
    let (median, max) = summary(&r);
    eprintln!(
        "validation: {} rows, median |error| {:.1} %, max {:.1} %",
        r.len(),
        median * 100.0,
        max * 100.0
    );
    assert!(r.len() >= 30, "only {} rows compared", r.len());
    assert!(r
        .iter()
        .all(|x| x.estimated.is_finite() && x.estimated > 0.0));
    // Every published row says what its source leaves open (none states everything): the
    // PEFT README gives neither batch nor sequence, torchtitan reports the allocator's
    // reserve, Megatron PR #482 states no sequence.
    assert!(
        r.iter().all(|x| !x.unstated.is_empty()),
        "a row without its assumptions"
    );
    assert!(r
        .iter()
        .filter(|x| x.set == "peft_readme_a100")
        .all(|x| x.unstated.contains("batch") && x.unstated.contains("sequence")));
    assert!(r
        .iter()
        .filter(|x| x.set == "torchtitan_performance_md")
        .all(|x| x.unstated.contains("reserve")));
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/validation.md");
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == markdown(&doc),
        "docs/validation.md is stale: run `cargo run --release --bin memfit -- --validation ../shared/reference/measured_runs.json > docs/validation.md`"
    );
}

/// The page's embedded copy of the published measurements is the reference file, and
/// the page's table is the report's.
#[test]
fn embedded_measurements_are_the_reference() {
    let reference = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../shared/reference/measured_runs.json"),
    )
    .expect("../shared/reference/measured_runs.json");
    assert_eq!(
        memfit_evidence::validation::EMBEDDED,
        reference,
        "assets/measured_runs.json is stale: copy it from ../shared/reference/"
    );
    let (r, median, max, notes) = memfit_evidence::validation::embedded_rows();
    let doc = load("measured_runs.json");
    let (want, want_notes) = rows(&doc);
    assert_eq!(r, want);
    assert_eq!(notes, want_notes);
    assert_eq!((median, max), summary(&want));
}

/// The page's accuracy tables (`assets/accuracy.json`) are the harness's current output:
/// the page reads this file instead of linking memfit-evidence.
#[test]
fn accuracy_asset_is_current() {
    let shipped = include_str!("../assets/accuracy.json");
    assert!(
        shipped == memfit_evidence::validation::accuracy_asset(),
        "assets/accuracy.json is stale: cargo run --bin memfit -- --accuracy-json > assets/accuracy.json"
    );
    let parsed = memfit::present::accuracy();
    let (rows, median, _, _) = memfit_evidence::validation::embedded_rows();
    assert_eq!(parsed.published.rows.len(), rows.len());
    assert!((parsed.published.median - median).abs() <= 1e-12 * median);
}
