//! vLLM's KV-cache tokens against public start-up logs (`tests/data/serve_logs.json`),
//! calibration and held-out parts apart. The held-out third was fixed by
//! `tools/serve_split.py` (sha1 of the entry id) and committed before any prediction was
//! compared with the logs; `tests/serve_vllm.rs` checks the figures, `tools/serve_eval.py`
//! prints them row by row, and the page's accuracy panel shows them (`assets/accuracy.json`
//! "serving").

use memfit_core::contract::report::estimate_query;
use serde_json::Value;

/// The logs, as collected (see `tests/data/serve_logs.json` "field_notes").
pub const LOGS: &str = include_str!("../../../tests/data/serve_logs.json");
/// The committed split: which entries are held out, and the preset each model maps to.
pub const SPLIT: &str = include_str!("../../../tests/data/serve_split.json");

/// One log compared: its logged and predicted KV-cache tokens.
#[derive(Clone, Debug, PartialEq)]
pub struct ServeRow {
    /// The entry's id.
    pub id: String,
    /// The engine release the log states.
    pub release: String,
    /// memfit's query for the start-up the log states.
    pub query: String,
    /// "GPU KV cache size: N tokens" as logged.
    pub logged: u64,
    /// memfit's `serve.kv_tokens`.
    pub estimated: u64,
    /// In the held-out third.
    pub held_out: bool,
    /// "Model loading took X GiB" where the log prints it, and memfit's weights, GiB.
    pub weights_gib: (Option<f64>, f64),
    /// "Available KV cache memory: X GiB" where printed, and memfit's KV pool, GiB.
    pub kv_gib: (Option<f64>, f64),
    /// The profiling run's torch peak increase where printed, and memfit's, GiB.
    pub activation_gib: (Option<f64>, f64),
}

impl ServeRow {
    /// `(estimated − logged) / logged`.
    pub fn rel_error(&self) -> f64 {
        (self.estimated as f64 - self.logged as f64) / self.logged as f64
    }
}

/// memfit's GPU preset for a log's GPU name (the split's GPUs).
///
/// ```
/// use memfit_evidence::serve::gpu_id;
/// assert_eq!(gpu_id("NVIDIA L40S (46068 MiB)"), Some("l40s"));
/// assert_eq!(gpu_id("NVIDIA L4"), Some("l4"));
/// assert_eq!(gpu_id("NVIDIA GeForce RTX 3090 24 GB (WSL2)"), Some("rtx3090"));
/// assert_eq!(gpu_id("NVIDIA A10G"), Some("a10g"));
/// assert_eq!(gpu_id("NVIDIA A10"), Some("a10"));
/// assert_eq!(gpu_id("NVIDIA A100-SXM4-40GB"), Some("a100-40"));
/// assert_eq!(gpu_id("NVIDIA GH200 480GB"), None);
/// ```
pub fn gpu_id(name: &str) -> Option<&'static str> {
    let n = name.to_lowercase();
    Some(if n.contains("h100") && n.contains("80") {
        "h100-80"
    } else if n.contains("a100") && n.contains("80") {
        "a100-80"
    } else if n.contains("a100") && n.contains("40") {
        "a100-40"
    } else if n.contains("l40s") {
        "l40s"
    } else if n.starts_with("nvidia l4") {
        "l4"
    } else if n.contains("h200") && !n.contains("gh200") {
        "h200"
    } else if let Some((_, id)) = [
        ("rtx 3090", "rtx3090"),
        ("rtx 4090", "rtx4090"),
        ("rtx 5090", "rtx5090"),
        ("mi300x", "mi300x"),
        ("a10g", "a10g"),
    ]
    .into_iter()
    .find(|(name, _)| n.contains(name))
    {
        id
    } else if n.starts_with("nvidia a10") && !n.starts_with("nvidia a100") {
        "a10"
    } else {
        return None;
    })
}

/// The weight format a checkpoint states (its name or `quantization`).
fn quant_of(e: &Value) -> Option<&'static str> {
    let m = e["model"].as_str().unwrap_or("").to_lowercase();
    let q = e["quantization"].as_str().unwrap_or("").to_lowercase();
    if m.contains("gpt-oss") {
        Some("mxfp4")
    } else if m.contains("w4a16") || q.contains("gptq") || q.contains("awq") {
        Some("w4a16")
    } else if m.contains("w8a8") {
        Some("w8a8")
    } else if m.contains("fp8") || q.starts_with("fp8") {
        Some("fp8")
    } else {
        None
    }
}

/// The entry's stated settings as a query (`None` when its GPU or release is missing).
pub fn query(e: &Value, preset: &str) -> Option<String> {
    let n = |k: &str| e[k].as_u64();
    let (tp, pp) = (n("tp").unwrap_or(1), n("pp").unwrap_or(1));
    let version: Vec<&str> = e["engine_version"].as_str()?.split('.').take(3).collect();
    let mut q = vec![
        "mode=serve".to_string(),
        "engine=vllm".into(),
        format!("engine_version={}", version.join(".")),
        format!("model={preset}"),
        format!("gpu={}", gpu_id(e["gpu"].as_str()?)?),
        format!("gpus_per_node={}", tp * pp),
        format!("tp={tp}"),
        format!("pp={pp}"),
        format!("max_len={}", n("max_model_len")?),
    ];
    if let Some(u) = e["gpu_memory_utilization"].as_f64() {
        q.push(format!("gpu_util={u}"));
    }
    for (k, key) in [
        ("max_num_seqs", "max_seqs"),
        ("max_num_batched_tokens", "max_batched_tokens"),
        ("block_size", "block_size"),
    ] {
        if let Some(v) = n(k) {
            q.push(format!("{key}={v}"));
        }
    }
    if e["kv_cache_dtype"]
        .as_str()
        .unwrap_or("auto")
        .starts_with("fp8")
    {
        q.push("kv_dtype=fp8".into());
    }
    match e["dtype"]
        .as_str()
        .unwrap_or("")
        .trim_start_matches("torch.")
    {
        "float32" | "fp32" => q.push("precision=fp32".into()),
        "float16" | "fp16" | "half" => q.push("precision=fp16".into()),
        _ => {}
    }
    if let Some(f) = quant_of(e) {
        q.push(format!("quant={f}"));
    }
    // What the log itself states: --enable-expert-parallel (EP over the TP ranks), and the
    // sampler's warning that flashinfer is not installed.
    if e["enable_expert_parallel"].as_bool() == Some(true) {
        q.push(format!("ep={tp}"));
    }
    if let Some(p) = e["sampler_from_log"].as_str() {
        q.push(format!("sampler={p}"));
    }
    Some(q.join("&"))
}

/// Every split entry with logged tokens, compared (calibration and held out; the split's
/// order within the logs' order).
pub fn rows() -> Vec<ServeRow> {
    let (Ok(logs), Ok(split)) = (
        serde_json::from_str::<Value>(LOGS),
        serde_json::from_str::<Value>(SPLIT),
    ) else {
        return Vec::new();
    };
    let held = crate::stats::string_list(&split, "held_out");
    let cal = crate::stats::string_list(&split, "calibration");
    let mut out = Vec::new();
    for e in logs["entries"].as_array().into_iter().flatten() {
        let id = e["id"].as_str().unwrap_or("");
        let held_out = held.iter().any(|h| h == id);
        if !held_out && !cal.iter().any(|c| c == id) {
            continue;
        }
        let (Some(logged), Some(preset)) = (
            e["logged"]["kv_cache_tokens"].as_u64(),
            split["models"][e["model"].as_str().unwrap_or("")].as_str(),
        ) else {
            continue;
        };
        let Some(q) = query(e, preset) else { continue };
        let (_, est) = estimate_query(&q);
        let Some(s) = est.serve else { continue };
        let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
        let lg = |k: &str| e["logged"][k].as_f64();
        out.push(ServeRow {
            id: id.to_string(),
            release: e["engine_version"].as_str().unwrap_or("").to_string(),
            query: q,
            logged,
            estimated: s.kv_tokens,
            held_out,
            weights_gib: (lg("model_loading_gib"), gib(s.weights_bytes)),
            kv_gib: (lg("available_kv_cache_gib"), gib(s.kv_cache_bytes)),
            activation_gib: (lg("torch_peak_increase_gib"), gib(s.activation_bytes)),
        });
    }
    out
}

/// SGLang's start-up logs in `tests/data/serve_logs.json` with the query each one's settings
/// make, read by hand (SGLang prints fewer of them than vLLM; releases from the log or its
/// date), and whether the log is one of the three held out before SGLang's rules were
/// modelled (docs/serving.md, "SGLang start-up logs"). The same queries as the tests in
/// `serve::tests_sglang`, `serve::tests_multimodal` and `tests/serve_llamacpp.rs`.
pub const SGLANG: [(&str, &str, bool); 9] = [
    ("sglang-docs-sendrequest-h100-llama31-8b", "engine_version=0.4.1&model=llama-3-8b&gpu=h100-80&gpu_util=0.88&max_len=131072", true),
    ("sglang-pr4760-h100-llama31-8b", "engine_version=0.4.4&model=llama-3-8b&gpu=h100-80&max_len=131072", true),
    ("sglang-kuiperinfer-4x4090-qwen3-14b", "engine_version=0.5.3&model=qwen3-8b&layers=40&hidden=5120&heads=40&kv_heads=8&head_dim=128&ffn=17408&gpu=rtx4090&gpus_per_node=4&tp=4&gpu_util=0.8&max_len=40960", true),
    ("sglang-llmsinclouds-4xl4-qwq32b", "engine_version=0.4.3&model=qwen2.5-32b&gpu=l4&gpus_per_node=4&tp=4&gpu_util=0.85&max_len=131072", false),
    ("sglang-mydeepseekr1-rtx3090-r1-distill-qwen-7b", "engine_version=0.4.3&model=qwen2.5-7b&gpu=rtx3090&gpu_util=0.88&max_len=131072", false),
    ("sglang-pr4826-h200-gemma3-4b-it", "engine_version=0.4.4&model=gemma-3-4b&gpu=h200&gpu_util=0.88&max_len=131072", false),
    ("sglang-issue21348-4xh100-qwen3-235b-a22b-fp8", "engine_version=0.4.9&model=qwen3-235b-a22b&quant=fp8&gpu=h100-80&gpus_per_node=4&tp=4&gpu_util=0.93", false),
    ("sglang-pr11716-8xh200-llama33-70b", "engine_version=0.5.3&model=llama-3-70b&gpu=h200&gpus_per_node=8&tp=8", false),
    ("sglang-skill-b200-qwen3-8b", "engine_version=0.5.10&model=qwen3-8b&gpu=b200-180", false),
];

/// SGLang's logs compared ([`SGLANG`]): the pool's tokens as logged ("max_total_num_tokens"
/// or "KV Cache is allocated. #tokens") against memfit's.
pub fn sglang_rows() -> Vec<ServeRow> {
    let Ok(logs) = serde_json::from_str::<Value>(LOGS) else {
        return Vec::new();
    };
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    let mut out = Vec::new();
    for (id, q, held_out) in SGLANG {
        let Some(e) = logs["entries"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|e| e["id"].as_str() == Some(id))
        else {
            continue;
        };
        let lg = &e["logged"];
        let Some(logged) = ["max_total_num_tokens", "kv_cache_tokens", "kv_tokens"]
            .iter()
            .find_map(|k| lg[*k].as_u64())
        else {
            continue;
        };
        let query = format!("mode=serve&engine=sglang&{q}");
        let (_, est) = estimate_query(&query);
        let Some(s) = est.serve else { continue };
        let release = q
            .split('&')
            .find_map(|kv| kv.strip_prefix("engine_version="))
            .unwrap_or("")
            .to_string();
        out.push(ServeRow {
            id: id.to_string(),
            release,
            query,
            logged,
            estimated: s.kv_tokens,
            held_out,
            weights_gib: (lg["weights_mem_usage_gb"].as_f64(), gib(s.weights_bytes)),
            kv_gib: (None, gib(s.kv_cache_bytes)),
            activation_gib: (None, gib(s.activation_bytes)),
        });
    }
    out
}

/// One part of the comparison as `memfit --serve-eval` prints it: a row per log (logged and
/// memfit's weights, KV pool and profiling peak in GiB, tokens and their error) or, with
/// `markdown`, the table docs/serving.md carries; then the part's median and max |error|.
/// `part` is `calibration`, `held_out` or `all`.
pub fn report(part: &str, markdown: bool) -> String {
    use memfit_core::units::group_digits;
    let rows: Vec<ServeRow> = rows()
        .into_iter()
        .filter(|r| part == "all" || r.held_out == (part == "held_out"))
        .collect();
    let opt = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.2}"));
    let mut out = String::new();
    if markdown {
        out.push_str("| run | logged tokens | memfit | error |\n|---|---:|---:|---:|\n");
    } else {
        out.push_str(&format!(
            "{:62} {:>7} {:>7} {:>7} {:>7} {:>9} {:>9} {:>6} {:>5} {:>5}\n",
            "id", "W log", "W", "KV log", "KV", "tok log", "tok", "err%", "A log", "A"
        ));
    }
    for r in &rows {
        let err = r.rel_error() * 100.0;
        if markdown {
            out.push_str(&format!(
                "| `{}` | {} | {} | {err:+.2} % |\n",
                r.id,
                group_digits(r.logged),
                group_digits(r.estimated)
            ));
        } else {
            let id = &r.id[r.id.len().saturating_sub(62)..];
            out.push_str(&format!(
                "{id:62} {:>7} {:>7.2} {:>7} {:>7.2} {:>9} {:>9} {err:>6.1} {:>5} {:>5.2}\n",
                opt(r.weights_gib.0),
                r.weights_gib.1,
                opt(r.kv_gib.0),
                r.kv_gib.1,
                r.logged,
                r.estimated,
                opt(r.activation_gib.0),
                r.activation_gib.1
            ));
        }
    }
    let (median, max) =
        crate::stats::median_max(rows.iter().map(|r| r.rel_error().abs()).collect());
    out.push_str(&format!(
        "{}{part}: {} runs, median |error| {:.2} %, max {:.2} %\n",
        if markdown { "\n" } else { "" },
        rows.len(),
        median * 100.0,
        max * 100.0
    ));
    out
}
