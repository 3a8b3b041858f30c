//! Megatron-LM's theoretical-memory formula: all 24 configs of
//! `../shared/reference/megatron_formula.json` at both revisions, relative 1e-9,
//! plus the printed summary lines and Megatron's parameter counts exactly.

mod common;
use common::{load, u, Failures};
use memfit_core::megatron::{
    megatron_memory, printed_summary, MegatronArgs, MegatronVersion, Recompute,
};
use serde_json::Value;
use std::num::NonZeroU64;

pub fn args_from(i: &Value) -> MegatronArgs {
    let opt = |k: &str| i[k].as_u64();
    // Megatron-LM's degrees are ≥ 1 (its argparse defaults and asserts).
    let nz = |n: u64| NonZeroU64::new(n).expect("a degree is at least 1");
    MegatronArgs {
        num_layers: u(i, "num_layers"),
        hidden_size: u(i, "hidden_size"),
        num_attention_heads: u(i, "num_attention_heads"),
        num_query_groups: if i["group_query_attention"].as_bool().unwrap() {
            u(i, "num_query_groups")
        } else {
            u(i, "num_attention_heads")
        },
        kv_channels: u(i, "kv_channels"),
        ffn_hidden_size: u(i, "ffn_hidden_size"),
        swiglu: i["swiglu"].as_bool().unwrap(),
        layernorm: i["normalization"] == "LayerNorm",
        vocab_size: u(i, "vocab_size_unpadded"),
        make_vocab_size_divisible_by: nz(u(i, "make_vocab_size_divisible_by")),
        untie: i["untie_embeddings_and_output_weights"].as_bool().unwrap(),
        num_experts: opt("num_experts").and_then(NonZeroU64::new),
        moe_ffn_hidden_size: opt("moe_ffn_hidden_size").unwrap_or(0),
        moe_router_topk: opt("moe_router_topk").unwrap_or(2),
        add_bias_linear: i["add_bias_linear"].as_bool().unwrap(),
        tp: nz(u(i, "tensor_model_parallel_size")),
        pp: nz(u(i, "pipeline_model_parallel_size")),
        vp: opt("virtual_pipeline_model_parallel_size").map(nz),
        dp: nz(u(i, "data_parallel_size")),
        ep: nz(u(i, "expert_model_parallel_size")),
        etp: nz(opt("expert_tensor_parallel_size").unwrap_or(1)),
        sequence_parallel: i["sequence_parallel"].as_bool().unwrap(),
        recompute: match i["recompute_granularity"].as_str() {
            Some("selective") => Recompute::Selective,
            Some("full") => Recompute::Full,
            _ => Recompute::None,
        },
        use_distributed_optimizer: i["use_distributed_optimizer"].as_bool().unwrap(),
        seq_length: u(i, "seq_length"),
        micro_batch_size: u(i, "micro_batch_size"),
        num_microbatches: opt("num_microbatches"),
    }
}

fn close(a: f64, b: f64) -> bool {
    ((a - b) / b).abs() <= 1e-9
}

#[test]
fn megatron_formula_both_revisions() {
    let doc = load("megatron_formula.json");
    let mut f = Failures::default();
    for case in doc["cases"].as_array().unwrap() {
        let id = case["id"].as_str().unwrap();
        let args = args_from(&case["inputs"]);
        f.check(
            args.padded_vocab() == u(&case["inputs"], "padded_vocab_size"),
            || format!("{id}: padded vocab {}", args.padded_vocab()),
        );
        for (rev, version) in [
            ("megatron_head", MegatronVersion::Head),
            ("megatron_core_v0.14.0", MegatronVersion::V0_14),
        ] {
            let o = &case["outputs"][rev];
            let e = megatron_memory(&args, version);
            let wo = o["weight_and_optimizer_bytes"].as_f64().unwrap();
            f.check(close(e.weight_and_optimizer_bytes, wo), || {
                format!(
                    "{id} {rev}: weight+opt {} vs {wo}",
                    e.weight_and_optimizer_bytes
                )
            });
            match (o["activation_bytes"].as_f64(), e.activation_bytes) {
                (Some(want), Some(got)) => f.check(close(got, want), || {
                    format!("{id} {rev}: activations {got} vs {want}")
                }),
                (None, None) => f.check(true, String::new),
                (w, g) => f.check(false, || format!("{id} {rev}: activations {g:?} vs {w:?}")),
            }
            let want_line = o["printed_summary_line"].as_str().unwrap();
            f.check(printed_summary(&e) == want_line, || {
                format!(
                    "{id} {rev}: printed {:?} vs {want_line:?}",
                    printed_summary(&e)
                )
            });
            let shard = format!("{:.4}", e.most_loaded_shard_params / 1e9);
            let want_shard = format!(
                "{:.4}",
                o["printed_params_most_loaded_shard_billions"]
                    .as_f64()
                    .unwrap()
            );
            f.check(shard == want_shard, || {
                format!("{id} {rev}: most loaded shard {shard} vs {want_shard}")
            });
            if version == MegatronVersion::Head {
                f.check(
                    e.total_params == case["num_parameters_total_computed"].as_f64().unwrap(),
                    || format!("{id}: total params {}", e.total_params),
                );
                f.check(
                    e.active_params == case["num_parameters_active_computed"].as_f64().unwrap(),
                    || format!("{id}: active params {}", e.active_params),
                );
            }
        }
    }
    f.finish("Megatron formula");
}

/// The same 24 configs through the public query string (`convention=megatron`):
/// the CLI's per-GPU total equals Megatron's total (weight and optimizer + activations).
#[test]
fn megatron_convention_through_the_query_string() {
    let doc = load("megatron_formula.json");
    let mut f = Failures::default();
    for case in doc["cases"].as_array().unwrap() {
        let id = case["id"].as_str().unwrap();
        let i = &case["inputs"];
        let model = match case["model"].as_str().unwrap() {
            "gpt3-175b" => "gpt3-175b",
            "llama2-7b" => "llama-2-7b",
            "llama2-70b" => "llama-2-70b",
            "llama3-8b" => "llama-3-8b",
            "llama3-70b" => "llama-3-70b",
            "llama3-405b" => "llama-3.1-405b",
            "mixtral-8x7b" => "mixtral-8x7b",
            other => panic!("unmapped model {other}"),
        };
        let (tp, pp, dp) = (
            u(i, "tensor_model_parallel_size"),
            u(i, "pipeline_model_parallel_size"),
            u(i, "data_parallel_size"),
        );
        let mut q = format!(
            "model={model}&convention=megatron&tp={tp}&pp={pp}&dp={dp}&gpus_per_node={}&seq={}&batch={}&microbatches={}&ep={}&sp={}&zero={}",
            tp * pp * dp,
            u(i, "seq_length"),
            u(i, "micro_batch_size"),
            u(i, "num_microbatches"),
            u(i, "expert_model_parallel_size"),
            i["sequence_parallel"].as_bool().unwrap() as u8,
            i["use_distributed_optimizer"].as_bool().unwrap() as u8,
        );
        if let Some(r) = i["recompute_granularity"].as_str() {
            q.push_str(&format!("&recompute={r}"));
        }
        if let Some(v) = i["virtual_pipeline_model_parallel_size"].as_u64() {
            q.push_str(&format!("&vpp={v}&schedule=interleaved"));
        }
        let (_, e) = memfit_core::contract::report::estimate_query(&q);
        let want = case["outputs"]["megatron_head"]["total_bytes"]
            .as_f64()
            .unwrap();
        let rel = (e.per_gpu_bytes as f64 - want).abs() / want;
        // Items are whole bytes (each rounded), so allow 1 byte per item.
        f.check((e.per_gpu_bytes as f64 - want).abs() <= 1.0, || {
            format!("{id}: {q} → {} vs {want} (rel {rel:e})", e.per_gpu_bytes)
        });
        f.check(e.convention == "megatron", || {
            format!("{id}: convention {}", e.convention)
        });
    }
    f.finish("Megatron through the query string");
}
