//! Shared helpers for the reference-vector tests.
#![allow(dead_code)]

use serde_json::Value;
use std::path::PathBuf;

/// `../shared/reference` next to the repository (override with `MEMFIT_REFERENCE_DIR`).
pub fn reference_dir() -> PathBuf {
    std::env::var_os("MEMFIT_REFERENCE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/reference"))
}

/// Loads one reference file; a missing file fails the test (never a silent skip).
pub fn load(name: &str) -> Value {
    let path = reference_dir().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read {}: {e} (set MEMFIT_REFERENCE_DIR)",
            path.display()
        )
    });
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// DeepSpeed's printing: `bytes / 2**30` with two decimals and the label "GB".
pub fn ds_gb(bytes: u64) -> String {
    format!("{:.2}GB", bytes as f64 / (1u64 << 30) as f64)
}

/// `json[key]` as u64 (accepts integral floats such as `2851000000.0`).
pub fn u(v: &Value, key: &str) -> u64 {
    let x = &v[key];
    x.as_u64()
        .or_else(|| x.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as u64))
        .unwrap_or_else(|| panic!("{key} is not an integer in {v}"))
}

/// Relative closeness check with the tolerance stated at the call site.
#[track_caller]
pub fn assert_close(actual: f64, expected: f64, rel_tol: f64, label: &str) {
    let rel = if expected == 0.0 {
        actual.abs()
    } else {
        ((actual - expected) / expected).abs()
    };
    assert!(
        rel <= rel_tol,
        "{label}: got {actual}, expected {expected} (rel {rel:.3e} > {rel_tol:.0e})"
    );
}

/// Collects failures so one data-driven loop reports every bad row, then fails once.
#[derive(Default)]
pub struct Failures {
    pub checked: usize,
    pub failed: Vec<String>,
}

impl Failures {
    pub fn check(&mut self, ok: bool, label: impl FnOnce() -> String) {
        self.checked += 1;
        if !ok {
            self.failed.push(label());
        }
    }
    #[track_caller]
    pub fn finish(self, what: &str) {
        eprintln!(
            "{what}: {} checks, {} failed",
            self.checked,
            self.failed.len()
        );
        assert!(self.checked > 0, "{what}: no rows checked");
        assert!(
            self.failed.is_empty(),
            "{what}: {} of {} checks failed:\n{}",
            self.failed.len(),
            self.checked,
            self.failed
                .iter()
                .take(40)
                .cloned()
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

/// One entry of `seed_examples.json` by id.
pub fn example<'a>(doc: &'a Value, id: &str) -> &'a Value {
    doc["examples"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == id)
        .unwrap_or_else(|| panic!("no example {id}"))
}
pub mod flat;
pub mod keys_gen;
