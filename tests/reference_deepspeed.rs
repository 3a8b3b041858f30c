//! DeepSpeed estimator parity, to the byte: every option row of the three sets in
//! `../shared/reference/deepspeed_estimators.json` (the docs page, 0.14.2, 0.19.8),
//! driven through the query string → estimate path; plus the live models' exact
//! parameter counts from memfit's presets.

mod common;
use common::{ds_gb, load, u, Failures};
use memfit_core::contract::report::estimate_query;

#[test]
fn every_deepspeed_row_matches_exactly() {
    let doc = load("deepspeed_estimators.json");
    let mut f = Failures::default();
    let mut per_set = Vec::new();
    for (set, conv) in [
        ("deepspeed_doc", "ds-doc"),
        ("deepspeed_0.14.2", "ds-0.14"),
        ("deepspeed_0.19.8", "ds-0.19"),
    ] {
        let before = f.checked;
        let s = &doc["sets"][set];
        for (stage, zero) in [("zero2", 2), ("zero3", 3)] {
            for case in s[stage].as_array().unwrap() {
                let i = &case["inputs"];
                let mut base = format!(
                    "convention={conv}&zero={zero}&params={}&gpus_per_node={}&nodes={}&buffer_factor={}",
                    u(i, "total_params"),
                    u(i, "num_gpus_per_node"),
                    u(i, "num_nodes"),
                    i["additional_buffer_factor"]
                );
                if zero == 3 {
                    base.push_str(&format!("&largest_layer={}", u(i, "largest_layer_params")));
                }
                for row in case["rows"].as_array().unwrap() {
                    let mut q = format!(
                        "{base}&offload_opt={}",
                        row["offload_optimizer"].as_str().unwrap()
                    );
                    if zero == 3 {
                        q.push_str(&format!(
                            "&offload_param={}&zero_init={}",
                            row["offload_param"].as_str().unwrap(),
                            row["zero_init"].as_bool().unwrap() as u8
                        ));
                    }
                    let (_, e) = estimate_query(&q);
                    let (cpu, gpu) = (u(row, "cpu_mem_bytes"), u(row, "gpu_mem_bytes"));
                    f.check(e.per_cpu_bytes == cpu && e.per_gpu_bytes == gpu && e.warnings.is_empty(), || {
                        format!("{set} {q}: got cpu {} gpu {} (warnings {:?}), want cpu {cpu} gpu {gpu}", e.per_cpu_bytes, e.per_gpu_bytes, e.warnings)
                    });
                    // The printed line's first two columns are DeepSpeed's "GB" (= GiB) strings.
                    if let Some(line) = row["printed_line"].as_str() {
                        let cols: Vec<&str> = line.split('|').map(str::trim).collect();
                        let ok = cols.len() >= 2
                            && cols[0] == ds_gb(e.per_cpu_bytes)
                            && cols[1] == ds_gb(e.per_gpu_bytes);
                        f.check(ok, || {
                            format!(
                                "{set} {q}: printed {line:?} vs {} | {}",
                                ds_gb(e.per_cpu_bytes),
                                ds_gb(e.per_gpu_bytes)
                            )
                        });
                    }
                }
            }
        }
        per_set.push(format!("{set}: {}", f.checked - before));
    }
    eprintln!("checks per set: {}", per_set.join(", "));
    f.finish("DeepSpeed estimator rows");
}

/// The live models (built with transformers 4.31.0): DeepSpeed's total and largest-layer
/// parameter counts equal memfit's architecture-derived counts for the matching preset
/// (or shape), and the live runs reproduce through the architecture alone (no `params=`).
#[test]
fn live_models_parameter_counts_and_runs() {
    let doc = load("deepspeed_estimators.json");
    let mut f = Failures::default();
    for (set, conv) in [
        ("deepspeed_0.14.2", "ds-0.14"),
        ("deepspeed_0.19.8", "ds-0.19"),
    ] {
        for m in doc["live_models"][set].as_array().unwrap() {
            let c = &m["config"];
            let name = m["model"].as_str().unwrap();
            let model_q = if name.starts_with("gpt2") {
                "model=gpt2".to_string()
            } else if name.starts_with("t5-large") {
                "model=t5-large".to_string()
            } else if name.starts_with("t5-3b") {
                "model=t5-3b".to_string()
            } else {
                format!(
                    "model=llama-2-7b&hidden={}&ffn={}&layers={}&heads={}&kv_heads={}&vocab={}&tied={}",
                    c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"], c["num_attention_heads"],
                    c["num_key_value_heads"], c["vocab_size"], c["tie_word_embeddings"].as_bool().unwrap() as u8
                )
            };
            let (_, e) = estimate_query(&model_q);
            f.check(e.model.params == u(m, "total_params"), || {
                format!("{name}: params {} != {}", e.model.params, m["total_params"])
            });
            f.check(
                e.model.largest_layer_params == u(m, "largest_layer_params"),
                || {
                    format!(
                        "{name}: largest {} != {}",
                        e.model.largest_layer_params, m["largest_layer_params"]
                    )
                },
            );
            for run in m["runs"].as_array().unwrap() {
                let i = &run["inputs"];
                let base = format!(
                    "{model_q}&convention={conv}&gpus_per_node={}&nodes={}&buffer_factor={}",
                    u(i, "num_gpus_per_node"),
                    u(i, "num_nodes"),
                    i["additional_buffer_factor"]
                );
                for row in run["zero2_rows"].as_array().unwrap() {
                    let q = format!(
                        "{base}&zero=2&offload_opt={}",
                        row["offload_optimizer"].as_str().unwrap()
                    );
                    let (_, e) = estimate_query(&q);
                    f.check(
                        e.per_cpu_bytes == u(row, "cpu_mem_bytes")
                            && e.per_gpu_bytes == u(row, "gpu_mem_bytes"),
                        || {
                            format!(
                                "{set} {q}: cpu {} gpu {} vs {row}",
                                e.per_cpu_bytes, e.per_gpu_bytes
                            )
                        },
                    );
                }
                for row in run["zero3_rows"].as_array().unwrap() {
                    let q = format!(
                        "{base}&zero=3&offload_opt={}&offload_param={}&zero_init={}",
                        row["offload_optimizer"].as_str().unwrap(),
                        row["offload_param"].as_str().unwrap(),
                        row["zero_init"].as_bool().unwrap() as u8
                    );
                    let (_, e) = estimate_query(&q);
                    f.check(
                        e.per_cpu_bytes == u(row, "cpu_mem_bytes")
                            && e.per_gpu_bytes == u(row, "gpu_mem_bytes"),
                        || {
                            format!(
                                "{set} {q}: cpu {} gpu {} vs {row}",
                                e.per_cpu_bytes, e.per_gpu_bytes
                            )
                        },
                    );
                }
            }
        }
    }
    f.finish("DeepSpeed live models");
}
