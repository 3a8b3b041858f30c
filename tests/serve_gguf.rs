//! GGUF weights to the byte: every published llama.cpp size in `tests/data/gguf_sizes.json`
//! (llama.cpp's quantize README tables and `print_info: model size = … GiB (… BPW)` log
//! lines, collected with their sources before the rules were written) for the models
//! memfit has a preset of, and the file types it models.

use memfit_core::model::preset;
use memfit_core::quant::{shares, weights_expr, Quant};
use memfit_core::spelling::Spelled;
use serde_json::Value;

/// The GGUF model → memfit preset (same shapes).
fn preset_of(model: &str) -> Option<&'static str> {
    Some(match model {
        "meta-llama/Llama-3.1-8B" | "meta-llama/Meta-Llama-3-8B" => "llama-3-8b",
        "meta-llama/Llama-2-7b-hf" => "llama-2-7b",
        "meta-llama/Llama-2-13b-hf" => "llama-2-13b",
        "meta-llama/Llama-2-70b-hf" => "llama-2-70b",
        "mistralai/Mistral-7B-Instruct-v0.2" => "mistral-7b",
        "Qwen/Qwen2.5-7B-Instruct" | "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B" => "qwen2.5-7b",
        "deepseek-ai/DeepSeek-R1-Distill-Qwen-14B" => "qwen2.5-14b",
        "Qwen/Qwen3-30B-A3B" => "qwen3-30b-a3b",
        "Qwen/Qwen3-8B" => "qwen3-8b",
        "meta-llama/Llama-3.2-3B-Instruct" => "llama-3.2-3b",
        "meta-llama/Llama-3.2-1B-Instruct" => "llama-3.2-1b",
        "microsoft/Phi-3-mini-4k-instruct" => "phi-3-mini",
        _ => return None,
    })
}

/// f32 tensors a GGUF file adds that are not model parameters (rotary frequency
/// factors), from the entry's notes: `rope_freqs [64]` = 256 B.
fn extras(e: &Value) -> u64 {
    let note = e["arch"]["extras"].as_str().unwrap_or("");
    let mut b = 0;
    for part in note.split("rope_freqs").skip(1) {
        if let Some(n) = part.split('[').nth(1).and_then(|x| x.split(']').next()) {
            b += 4 * n.trim().parse::<u64>().unwrap_or(0);
        }
    }
    b
}

#[test]
fn published_gguf_sizes() {
    let d: Value =
        serde_json::from_str(&std::fs::read_to_string("tests/data/gguf_sizes.json").unwrap())
            .unwrap();
    let (mut checked, mut exact, mut failures) = (0, 0, Vec::new());
    for e in d["entries"].as_array().unwrap() {
        let model = e["model"].as_str().unwrap();
        let ft = e["file_type"].as_str().unwrap().to_lowercase();
        let (Some(id), Some(q)) = (preset_of(model), Quant::parse(&ft)) else {
            continue;
        };
        // memfit models llama-quantize without an importance matrix; with one, only the
        // IQ4 types' first ffn_down layers differ (they stay IQ4 instead of q5_K).
        let imatrix = e["assumed_imatrix"] == true;
        let iq4 = matches!(q, Quant::Iq4Nl | Quant::Iq4Xs);
        if q.gguf().is_none() || e["reproduced_by_calc"] != true || (imatrix && iq4) {
            continue;
        }
        let arch = &preset(id).unwrap().arch;
        let sh = shares(arch, q, memfit_core::scenario::count(32));
        let bytes = weights_expr(q, &sh, 2, true).eval() + extras(e);
        checked += 1;
        // The printed figure: "%.2f GiB" (or MiB below 1 GiB).
        let p = &e["published"];
        if let (Some(v), Some(unit)) = (p["value"].as_f64(), p["unit"].as_str()) {
            let div = if unit == "GiB" { 1u64 << 30 } else { 1 << 20 };
            let ours = format!("{:.2}", bytes as f64 / div as f64);
            if ours != format!("{v:.2}") {
                failures.push(format!("{model} {ft}: {ours} {unit}, published {v:.2}"));
            }
        }
        // The tensor-by-tensor sum of an independent re-implementation (the research
        // note's Python, written from llama.cpp's source before memfit's rules).
        if let Some(calc) = e["calc_llamacpp_ec98e2002_rules"]["tensor_bytes"].as_u64() {
            if calc == bytes {
                exact += 1;
            } else {
                failures.push(format!("{model} {ft}: {bytes} B, tensor sum {calc} B"));
            }
        }
    }
    assert!(checked >= 40, "only {checked} entries checked");
    assert!(
        failures.is_empty(),
        "{checked} checked, {exact} exact:\n{}",
        failures.join("\n")
    );
}

/// llama.cpp's KV cache: `cells · layers · (row(type_k) + row(type_v))`, against every
/// logged KV buffer size in the file.
#[test]
fn logged_kv_buffer_sizes() {
    use memfit_core::quant::gguf;
    let d: Value =
        serde_json::from_str(&std::fs::read_to_string("tests/data/gguf_sizes.json").unwrap())
            .unwrap();
    let ty = |s: &str| match s {
        "f16" | "bf16" => gguf::F16,
        "f32" => gguf::F32,
        "q8_0" => gguf::Q8_0,
        "q4_0" => gguf::Q4_0,
        "q4_1" => gguf::Q4_1,
        "q5_0" => gguf::Q5_0,
        "q5_1" => gguf::Q5_1,
        "iq4_nl" => gguf::IQ4_NL,
        other => panic!("cache type {other}"),
    };
    let mut n = 0;
    for e in d["kv_cache_ground_truth"].as_array().unwrap() {
        let cells = e["cells"].as_u64().unwrap();
        let layers = e["n_layer_kv"].as_u64().unwrap();
        let (k, v) = (
            e["n_embd_k_gqa"].as_u64().unwrap(),
            e["n_embd_v_gqa"].as_u64().unwrap(),
        );
        let kb = cells * layers * ty(e["type_k"].as_str().unwrap()).row_bytes(k);
        let vb = cells * layers * ty(e["type_v"].as_str().unwrap()).row_bytes(v);
        let total = e["calc"]["total_MiB"].as_f64().unwrap();
        let published = e["published"].as_str().unwrap();
        let mib = (kb + vb) as f64 / (1u64 << 20) as f64;
        assert!((mib - total).abs() < 0.005, "{published}: {mib}");
        assert!(
            published.contains(&format!("{:.2} MiB", mib))
                || published.contains(&format!("{:.2} MiB", kb as f64 / (1u64 << 20) as f64)),
            "{published}: {mib:.2}"
        );
        n += 1;
    }
    assert!(n >= 15);
}
