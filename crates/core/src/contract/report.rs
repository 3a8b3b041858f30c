//! The CLI's JSON: one object per scenario, field names fixed by DESIGN.md.

use super::nulls::null_out_of_range;
use super::query::{decode, encode};
use super::settings::Settings;
use crate::estimate::{estimate, Estimate, Warning};
use crate::scenario::{Scenario, Solve};
use crate::solve::max_fitting;
use serde_json::{json, Value};

/// JSON schema version of the report.
pub const REPORT_VERSION: u32 = 1;

/// Estimates a scenario and merges the codec's warnings with the estimate's.
pub fn estimate_with(s: &Scenario, decode_warnings: &[Warning]) -> Estimate {
    let mut e = estimate(s);
    let mut w = decode_warnings.to_vec();
    w.append(&mut e.warnings);
    e.warnings = w;
    e
}

/// Decodes a query string and estimates it: what the page and the CLI both show.
pub fn estimate_query(query: &str) -> (Settings, Estimate) {
    let (s, w) = decode(query);
    let e = estimate_with(&s.scenario, &w);
    (s, e)
}

/// The report for a scenario and its estimate:
/// `{version, query, model, gpu, layout, per_gpu_bytes, per_cpu_bytes, fits, items, warnings, ...}`.
pub fn report(x: &Settings, e: &Estimate) -> Value {
    let s = &x.scenario;
    let mut v = serde_json::to_value(e).unwrap_or_else(|_| json!({}));
    if let Value::Object(map) = &mut v {
        map.insert("version".into(), json!(REPORT_VERSION));
        map.insert("query".into(), json!(encode(x)));
        if x.view.solve == Solve::MinGpus {
            map.insert("solve".into(), super::explore::min_gpus_json(x));
        } else if let Some(r) = max_fitting(s, x.view.solve) {
            map.insert(
                "solve".into(),
                serde_json::to_value(r).unwrap_or(Value::Null),
            );
        }
    }
    if x.view.time {
        if let Value::Object(map) = &mut v {
            let p = crate::estimate::Prepared::of(s);
            map.insert(
                "time".into(),
                crate::steptime::step_time(s, &p)
                    .and_then(|t| serde_json::to_value(t).ok())
                    .unwrap_or(Value::Null),
            );
        }
    }
    if x.view.timeline {
        if let Value::Object(map) = &mut v {
            map.insert(
                "timeline".into(),
                crate::timeline::timeline(s)
                    .and_then(|t| serde_json::to_value(t).ok())
                    .unwrap_or(Value::Null),
            );
        }
    }
    // Last: no byte count at the out-of-range sentinel leaves as a figure (the solve's
    // included, whose own scenarios may overflow where this one does not).
    null_out_of_range(&mut v);
    v
}

/// Decodes, estimates and reports a query string in one call.
pub fn report_query(query: &str) -> Value {
    let (s, e) = estimate_query(query);
    report(&s, &e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_has_the_contract_fields() {
        let r = report_query("model=llama-2-7b&mode=train&zero=3&gpus_per_node=8");
        for k in [
            "version",
            "query",
            "model",
            "gpu",
            "per_gpu_bytes",
            "per_cpu_bytes",
            "fits",
            "items",
            "warnings",
        ] {
            assert!(r.get(k).is_some(), "missing {k}");
        }
        assert_eq!(r["model"]["params"], 6_738_415_616u64);
        assert_eq!(r["model"]["largest_layer_params"], 131_072_000u64);
        assert_eq!(r["gpu"]["id"], "h100-80");
        assert_eq!(r["gpu"]["usable_bytes"], 85_520_809_984u64);
        assert_eq!(r["query"], "v=1&gpus_per_node=8&zero=3");
        let item = &r["items"][0];
        for k in [
            "component",
            "location",
            "bytes",
            "rank",
            "formula",
            "values",
            "source",
        ] {
            assert!(item.get(k).is_some(), "item lacks {k}");
        }
    }
}
