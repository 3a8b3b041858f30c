//! llama.cpp's and Ollama's GPU buffers against public start-up logs
//! (`tests/data/serve_logs.json`, the fourth batch): the model buffer (`CUDA0 model buffer
//! size`), the KV buffer (every cache on the GPU, full-attention and sliding-window) and
//! the compute buffer (`CUDA0 compute buffer size`), in MiB as llama.cpp prints them.
//! Calibration and held-out parts apart: `tools/serve_split_llamacpp.py` fixed the split
//! (sha1 of the entry id) and the query each log's settings make, and both were committed
//! before any prediction was compared. The entries before this batch are not here: the
//! buffer model was built on them (`tests/serve_llamacpp.rs` checks them one by one).

use memfit_core::contract::report::estimate_query;
use serde_json::Value;

/// The committed split of the llama.cpp and Ollama logs, with each one's query.
pub const SPLIT: &str = include_str!("../../../tests/data/serve_split_llamacpp.json");

/// The buffers compared, in the order of [`LlamaRow::logged`].
pub const BUFFERS: [&str; 3] = ["model", "KV", "compute"];

/// One log compared: its logged and memfit's GPU buffers, MiB.
#[derive(Clone, Debug, PartialEq)]
pub struct LlamaRow {
    /// The entry's id.
    pub id: String,
    /// The release as memfit names it (`b7342`, `ollama-0.21.0`).
    pub release: String,
    /// memfit's query for the start-up the log states.
    pub query: String,
    /// In the held-out third.
    pub held_out: bool,
    /// Model, KV and compute buffer on the first GPU as logged, MiB.
    pub logged: [f64; 3],
    /// memfit's `weights_bytes`, `kv_cache_bytes` and `activation_bytes`, MiB.
    pub estimated: [f64; 3],
    /// Host memory: the model buffers off the GPU (`CPU_Mapped`, `CPU`, `CUDA_Host`) and the
    /// KV buffer on the CPU as logged, and memfit's `host_bytes`, MiB.
    pub host: (f64, f64),
}

impl LlamaRow {
    /// `(estimated − logged) / logged` of buffer `i` ([`BUFFERS`]).
    pub fn rel_error(&self, i: usize) -> f64 {
        (self.estimated[i] - self.logged[i]) / self.logged[i]
    }

    /// The error of the three buffers' sum: what the GPU holds before the first request.
    pub fn total_error(&self) -> f64 {
        let (e, l) = (
            self.estimated.iter().sum::<f64>(),
            self.logged.iter().sum::<f64>(),
        );
        (e - l) / l
    }
}

/// Every split entry, compared (held out first, then calibration; the split's order).
pub fn rows() -> Vec<LlamaRow> {
    let (Ok(logs), Ok(split)) = (
        serde_json::from_str::<Value>(crate::serve::LOGS),
        serde_json::from_str::<Value>(SPLIT),
    ) else {
        return Vec::new();
    };
    let held = crate::stats::string_list(&split, "held_out");
    let cal = crate::stats::string_list(&split, "calibration");
    let entries = logs["entries"].as_array().cloned().unwrap_or_default();
    let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
    let mut out = Vec::new();
    for (id, held_out) in held
        .iter()
        .map(|h| (h, true))
        .chain(cal.iter().map(|c| (c, false)))
    {
        let (Some(e), Some(q)) = (
            entries.iter().find(|e| e["id"].as_str() == Some(id)),
            split["queries"][id].as_str(),
        ) else {
            continue;
        };
        let lg = &e["logged"];
        let buf = |k: &str| lg[k]["CUDA0"].as_f64();
        let (Some(w), Some(kv), Some(c)) = (
            buf("model_buffer_mib"),
            buf("kv_buffer_mib"),
            buf("compute_buffer_mib"),
        ) else {
            continue;
        };
        let (_, est) = estimate_query(q);
        let Some(s) = est.serve else { continue };
        let off_gpu = |k: &str| -> f64 {
            lg[k].as_object().map_or(0.0, |m| {
                m.iter()
                    .filter(|(d, _)| *d != "CUDA0")
                    .filter_map(|(_, v)| v.as_f64())
                    .sum()
            })
        };
        out.push(LlamaRow {
            id: id.clone(),
            release: e["settings"]["release"].as_str().unwrap_or("").to_string(),
            query: q.to_string(),
            held_out,
            logged: [w, kv, c],
            estimated: [
                mib(s.weights_bytes),
                mib(s.kv_cache_bytes),
                mib(s.activation_bytes),
            ],
            host: (
                off_gpu("model_buffer_mib") + off_gpu("kv_buffer_mib"),
                mib(s.host_bytes.unwrap_or(0)),
            ),
        });
    }
    out
}

/// Median and max |error| of each buffer and of their sum over `rows`: `[model, KV,
/// compute, total]`, each `(median, max)`.
pub fn figures(rows: &[LlamaRow]) -> [(f64, f64); 4] {
    let of = |f: &dyn Fn(&LlamaRow) -> f64| {
        crate::stats::median_max(rows.iter().map(|r| f(r).abs()).collect())
    };
    [
        of(&|r| r.rel_error(0)),
        of(&|r| r.rel_error(1)),
        of(&|r| r.rel_error(2)),
        of(&|r| r.total_error()),
    ]
}

/// One part as `memfit --serve-eval-llamacpp` prints it: a row per log (each buffer logged
/// and memfit's, MiB, with the error) or, with `markdown`, the table docs/serving.md
/// carries; then the part's figures per buffer. `part` is `calibration`, `held_out` or
/// `all`.
pub fn report(part: &str, markdown: bool) -> String {
    let rows: Vec<LlamaRow> = rows()
        .into_iter()
        .filter(|r| part == "all" || r.held_out == (part == "held_out"))
        .collect();
    let mut out = String::new();
    if markdown {
        out.push_str("| run | release | model MiB (memfit) | KV MiB (memfit) | compute MiB (memfit) | total error | host MiB (memfit) |\n|---|---|---:|---:|---:|---:|---:|\n");
    } else {
        out.push_str(&format!(
            "{:58} {:>14} {:>19} {:>17} {:>17} {:>7}\n",
            "id", "release", "model log/memfit", "KV log/memfit", "compute", "total%"
        ));
    }
    for r in &rows {
        let cell = |i: usize| {
            format!(
                "{:.2} ({:.2}, {:+.1} %)",
                r.logged[i],
                r.estimated[i],
                r.rel_error(i) * 100.0
            )
        };
        if markdown {
            out.push_str(&format!(
                "| `{}` | {} | {} | {} | {} | {:+.2} % | {:.2} ({:.2}) |\n",
                r.id,
                r.release,
                cell(0),
                cell(1),
                cell(2),
                r.total_error() * 100.0,
                r.host.0,
                r.host.1
            ));
        } else {
            let id = &r.id[r.id.len().saturating_sub(58)..];
            let pair = |i: usize| format!("{:.2}/{:.2}", r.logged[i], r.estimated[i]);
            out.push_str(&format!(
                "{id:58} {:>14} {:>19} {:>17} {:>17} {:>+7.2}\n",
                r.release,
                pair(0),
                pair(1),
                pair(2),
                r.total_error() * 100.0
            ));
        }
    }
    let f = figures(&rows);
    let names = ["model", "KV", "compute", "total"];
    let parts: Vec<String> = names
        .iter()
        .zip(f)
        .map(|(n, (m, x))| format!("{n} {:.2} / {:.2} %", m * 100.0, x * 100.0))
        .collect();
    out.push_str(&format!(
        "{}{part}: {} runs, median / max |error|: {}\n",
        if markdown { "\n" } else { "" },
        rows.len(),
        parts.join(", ")
    ));
    out
}
