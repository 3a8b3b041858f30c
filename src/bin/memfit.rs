//! memfit CLI: a query string in, the Estimate as JSON out.
//!
//! ```text
//! memfit 'model=llama-2-7b&mode=train&zero=3&gpus_per_node=8'
//! memfit --json '{"model":"gpt2","zero":2}'   # the query's keys as a JSON object
//! memfit --strict '...'                      # exit 2 on any warning
//! memfit --config config.json 'zero=3&gpus_per_node=8'   # import, then the query
//! ```
//! Exit status: 0 on success (warnings included), 2 when the input cannot be used.

use memfit_core::contract::query::KEYS;
use memfit_core::contract::report::{estimate_with, report, report_query};
use memfit_core::contract::Settings;
use memfit_core::{gpu::GPUS, model::presets};
use std::process::ExitCode;

fn help() -> String {
    let mut h = String::from(
        "memfit — will this LLM job fit in GPU memory?\n\n\
         USAGE:\n  memfit [--strict] '<query string>'\n  memfit --explore [--limit N] '<query string>'   (every layout of the cluster; N = 0: all fitting)\n  memfit [--strict] --json '<JSON object of query keys>'\n  memfit [--strict] --config path/to/config.json ['<query string>']   (import a Hugging Face config, then apply the query)\n  memfit --help\n  memfit --keys-markdown     (the README's key table)\n  memfit --validation ../shared/reference/measured_runs.json   (docs/validation.md)\n  memfit --accuracy-json     (assets/accuracy.json: the page's accuracy tables)\n  memfit --alloc-replay stream.json [--expandable]   (PyTorch's caching allocator on a stream from tools/trace_alloc.py)\n  memfit --train-eval calibration|held_out|all [--markdown] [--pairs] [--queries]   (the step-time model against published training runs; docs/steptime.md)\n  memfit --serve-eval calibration|held_out|all [--markdown]   (vLLM's KV-cache tokens against start-up logs; docs/serving.md)\n  memfit --serve-eval-llamacpp calibration|held_out|all [--markdown]   (llama.cpp's and Ollama's GPU buffers against start-up logs)\n\n\
         Prints the estimate as one JSON object. Exit 0 on success (warnings are in\n\
         \"warnings\"), 2 when the input cannot be used (or, with --strict, has warnings).\n\nKEYS:\n",
    );
    for k in KEYS {
        h.push_str(&format!(
            "  {:<14} {} [{}] — {}\n",
            k.name,
            k.meaning,
            k.unit,
            k.allowed_text()
        ));
    }
    h.push_str("\nMODELS:\n");
    for p in presets() {
        h.push_str(&format!("  {:<16} {}\n", p.id, p.name));
    }
    h.push_str("\nGPUS:\n");
    for g in GPUS {
        h.push_str(&format!("  {:<12} {}\n", g.id, g.name));
    }
    h
}

fn fail(msg: &str) -> ExitCode {
    eprintln!("memfit: {msg}\nTry 'memfit --help'.");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let has = |flag: &str| args.iter().any(|a| a == flag);
    if has("--help") || has("-h") {
        print!("{}", help());
        return ExitCode::SUCCESS;
    }
    if has("--keys-markdown") {
        print!("{}", memfit_core::contract::query::markdown_table());
        return ExitCode::SUCCESS;
    }
    if has("--accuracy-json") {
        print!("{}", memfit_evidence::validation::accuracy_asset());
        return ExitCode::SUCCESS;
    }
    if let Some(pos) = args.iter().position(|a| a == "--train-eval") {
        return train_eval(&args, pos);
    }
    if let Some(pos) = args.iter().position(|a| a == "--serve-eval") {
        return match args.get(pos + 1).map(String::as_str) {
            Some(p @ ("calibration" | "held_out" | "all")) => {
                print!("{}", memfit_evidence::serve::report(p, has("--markdown")));
                ExitCode::SUCCESS
            }
            _ => fail("--serve-eval needs calibration, held_out or all"),
        };
    }
    if let Some(pos) = args.iter().position(|a| a == "--serve-eval-llamacpp") {
        return match args.get(pos + 1).map(String::as_str) {
            Some(p @ ("calibration" | "held_out" | "all")) => {
                let md = has("--markdown");
                print!("{}", memfit_evidence::serve_llamacpp::report(p, md));
                ExitCode::SUCCESS
            }
            _ => fail("--serve-eval-llamacpp needs calibration, held_out or all"),
        };
    }
    if let Some(pos) = args.iter().position(|a| a == "--alloc-replay") {
        return alloc_replay(args.get(pos + 1), has("--expandable"));
    }
    if let Some(pos) = args.iter().position(|a| a == "--validation") {
        return validation(args.get(pos + 1));
    }
    if let Some(pos) = args.iter().position(|a| a == "--explore") {
        args.remove(pos);
        return explore(args);
    }
    let strict = has("--strict");
    args.retain(|a| a != "--strict");
    if let Some(pos) = args.iter().position(|a| a == "--config") {
        return config(args, pos, strict);
    }
    let value = match args.as_slice() {
        [flag, json] if flag == "--json" => match memfit_core::contract::query::decode_json(json) {
            Ok(s) => report(&s, &estimate_with(&s.scenario, &[])),
            Err(e) => return fail(&format!("the JSON is not a scenario: {e}")),
        },
        [q] if !q.starts_with("--") => report_query(q),
        [] => return fail("no query string given"),
        _ => return fail(&format!("unexpected arguments: {}", args.join(" "))),
    };
    print_report(&value, strict)
}

/// `--train-eval calibration|held_out|all [--markdown] [--pairs] [--queries]`.
fn train_eval(args: &[String], pos: usize) -> ExitCode {
    use memfit_evidence::steptime::{queries, report, Part};
    let Some(part) = args.get(pos + 1).and_then(|p| Part::parse(p)) else {
        return fail("--train-eval needs calibration, held_out or all");
    };
    let has = |flag: &str| args.iter().any(|a| a == flag);
    if has("--queries") {
        print!("{}", queries(part));
    } else {
        print!("{}", report(part, has("--markdown"), has("--pairs")));
    }
    ExitCode::SUCCESS
}

/// `--alloc-replay PATH`: PyTorch's caching allocator replayed on a recorded allocation
/// stream (`tools/trace_alloc.py`): what `max_memory_reserved` and `max_memory_allocated`
/// would read, as JSON.
fn alloc_replay(path: Option<&String>, expandable: bool) -> ExitCode {
    use memfit_core::allocator::{parse_stream, replay_on, CachingAllocator};
    let Some(path) = path else {
        return fail("--alloc-replay needs the path of a stream (tools/trace_alloc.py writes one)");
    };
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => return fail(&format!("cannot read {path}: {e}")),
    };
    let cache = || {
        if expandable {
            CachingAllocator::expandable()
        } else {
            CachingAllocator::new()
        }
    };
    if text.starts_with('#') {
        return cuda_traces_replay(path, &text, cache);
    }
    let (resident, events) = match parse_stream(&text) {
        Ok(x) => x,
        Err(e) => return fail(&format!("{path}: {e}")),
    };
    let a = replay_on(cache(), &resident, &events);
    let v = serde_json::json!({
        "max_reserved_bytes": a.max_reserved,
        "max_allocated_bytes": a.max_allocated,
        "reserved_over_allocated": a.max_reserved as f64 / a.max_allocated.max(1) as f64 - 1.0,
        "end_reserved_bytes": a.reserved,
        "alloc_conf": if expandable { "expandable_segments:True" } else { "default" },
        "note": "PyTorch's CUDA caching allocator (memfit_core::allocator); add the CUDA context for what the device uses. expandable_segments replays real H200 traces within 0.12 % median, 9.2 % max (docs/allocator.md)",
    });
    println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
    ExitCode::SUCCESS
}

/// `--alloc-replay TRACE.txt`: real CUDA allocator traces (`tools/measure_cuda.py --streams`,
/// decompressed): per run, the replay's reserved peak beside the segments the real allocator
/// opened during the trace, one JSON object per line.
fn cuda_traces_replay(
    path: &str,
    text: &str,
    cache: impl Fn() -> memfit_core::allocator::CachingAllocator,
) -> ExitCode {
    use memfit_core::allocator::replay_on;
    let runs = match memfit_core::cuda_trace::parse_cuda_traces(text) {
        Ok(r) => r,
        Err(e) => return fail(&format!("{path}: {e}")),
    };
    for t in runs {
        let a = replay_on(cache(), &[], &t.events);
        let v = serde_json::json!({
            "id": t.id,
            "max_reserved_bytes": a.max_reserved,
            "max_allocated_bytes": a.max_allocated,
            "traced_max_reserved_bytes": t.traced_max_reserved,
            "traced_segments_opened": t.segments_opened,
        });
        println!("{v}");
    }
    ExitCode::SUCCESS
}

/// `--validation PATH`: docs/validation.md from measured_runs.json.
fn validation(path: Option<&String>) -> ExitCode {
    let Some(path) = path else {
        return fail("--validation needs the path of measured_runs.json");
    };
    let doc = match std::fs::read_to_string(path)
        .map(|t| serde_json::from_str::<serde_json::Value>(&t))
    {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => return fail(&format!("{path} is not JSON: {e}")),
        Err(e) => return fail(&format!("cannot read {path}: {e}")),
    };
    print!("{}", memfit_evidence::validation::markdown(&doc));
    ExitCode::SUCCESS
}

/// `--explore [--limit N] QUERY` (the `--explore` flag already removed from `args`).
fn explore(mut args: Vec<String>) -> ExitCode {
    let mut limit = Some(50usize);
    if let Some(lp) = args.iter().position(|a| a == "--limit") {
        let Some(n) = args.get(lp + 1).and_then(|v| v.parse::<usize>().ok()) else {
            return fail("--limit needs a whole number (0 = all)");
        };
        limit = if n == 0 { None } else { Some(n) };
        args.drain(lp..lp + 2);
    }
    let [q] = args.as_slice() else {
        return fail("--explore takes one query string");
    };
    let (s, mut w) = memfit_core::contract::query::decode(q);
    let mut v = memfit_core::contract::explore::explore_report(&s, limit);
    // Settings every layout ignores (they disqualify none of them) are said once here.
    w.extend(
        s.scenario
            .ignored_settings()
            .into_iter()
            .map(|(key, message)| memfit_core::estimate::Warning {
                key: key.into(),
                value: String::new(),
                message,
            }),
    );
    v["warnings"] = serde_json::to_value(&w).unwrap_or_default();
    if s.view.solve == memfit_core::scenario::Solve::MinGpus {
        v["solve"] = memfit_core::contract::explore::min_gpus_json(&s);
    }
    match serde_json::to_string_pretty(&v) {
        Ok(text) => {
            println!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => fail(&format!("cannot print JSON: {e}")),
    }
}

/// `--config PATH [QUERY]`: import a Hugging Face config.json, then apply the query.
fn config(mut args: Vec<String>, pos: usize, strict: bool) -> ExitCode {
    let Some(path) = args.get(pos + 1).cloned() else {
        return fail("--config needs the path of a config.json");
    };
    args.drain(pos..pos + 2);
    let query = match args.as_slice() {
        [] => String::new(),
        [q] if !q.starts_with("--") => q.clone(),
        _ => return fail(&format!("unexpected arguments: {}", args.join(" "))),
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => return fail(&format!("cannot read {path}: {e}")),
    };
    let imported = match memfit_core::hfconfig::parse(&text) {
        Ok(i) => i,
        Err(e) => return fail(&format!("{path}: {e}")),
    };
    let mut base = Settings::default();
    let mut warnings = memfit_core::contract::query::apply_import(&mut base, &imported);
    let (s, w) = memfit_core::contract::query::decode_onto(base, &query);
    warnings.extend(w);
    let value = report(&s, &estimate_with(&s.scenario, &warnings));
    print_report(&value, strict)
}

/// Prints a report; with `strict`, exit 2 when it carries warnings.
fn print_report(value: &serde_json::Value, strict: bool) -> ExitCode {
    match serde_json::to_string_pretty(value) {
        Ok(text) => println!("{text}"),
        Err(e) => return fail(&format!("cannot print JSON: {e}")),
    }
    let warned = value["warnings"].as_array().is_some_and(|w| !w.is_empty());
    if strict && warned {
        return fail("warnings present (--strict)");
    }
    ExitCode::SUCCESS
}
