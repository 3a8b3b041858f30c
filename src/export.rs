//! Exports: the estimate as JSON and CSV, a DeepSpeed `ds_config.json` fragment and
//! a torchrun + FSDP2 snippet for the chosen layout. Pure text; the page offers them
//! as downloads (data URLs, no network).

use memfit_core::contract::{report::report, Settings};
use memfit_core::estimate::Estimate;
use memfit_core::scenario::{Fsdp, Offload, Precision, Scenario, Zero};
use serde_json::json;

/// The CLI's JSON report, pretty-printed.
pub fn estimate_json(s: &Settings, e: &Estimate) -> String {
    serde_json::to_string_pretty(&report(s, e)).unwrap_or_default()
}

fn csv_field(x: &str) -> String {
    if x.contains([',', '"', '\n']) {
        format!("\"{}\"", x.replace('"', "\"\""))
    } else {
        x.to_string()
    }
}

/// The ledger as CSV: `component,location,bytes,rank,phases,formula,values,source`.
///
/// ```
/// use memfit_core::{estimate::estimate, scenario::Scenario};
/// let s = Scenario::default();
/// let csv = memfit::export::items_csv(&estimate(&s));
/// assert!(csv.starts_with("component,location,bytes,rank,phases,formula,values,source\nweights,gpu,"));
/// ```
pub fn items_csv(e: &Estimate) -> String {
    let mut out = String::from("component,location,bytes,rank,phases,formula,values,source\n");
    for i in &e.items {
        let loc = serde_json::to_value(i.location)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default();
        let phases: Vec<String> = i
            .phases
            .iter()
            .filter_map(|p| {
                serde_json::to_value(p)
                    .ok()
                    .and_then(|v| v.as_str().map(String::from))
            })
            .collect();
        out.push_str(&format!(
            "{},{},{},{},{},{},{},{}\n",
            i.component.as_str(),
            loc,
            i.bytes,
            csv_field(&i.rank),
            csv_field(&phases.join(" ")),
            csv_field(&i.formula),
            csv_field(&i.values),
            csv_field(&i.source)
        ));
    }
    out
}

/// A DeepSpeed config fragment for the scenario's ZeRO stage, offload, precision and buckets.
pub fn ds_config(s: &Scenario) -> String {
    let l = s.layout();
    let off = |o: Offload| match o {
        Offload::None => json!({"device": "none"}),
        Offload::Cpu => json!({"device": "cpu", "pin_memory": s.offload.pin_memory}),
        Offload::Nvme => {
            json!({"device": "nvme", "nvme_path": "/local_nvme", "pin_memory": s.offload.pin_memory})
        }
    };
    let mut zero = json!({
        "stage": s.zero().number(),
        "overlap_comm": s.runtime.overlap_comm,
        "contiguous_gradients": true,
        "reduce_bucket_size": s.runtime.reduce_bucket,
        "allgather_bucket_size": s.runtime.allgather_bucket,
        "offload_optimizer": off(s.offload.optimizer),
    });
    if s.zero() == Zero::Z3 {
        zero["offload_param"] = off(s.offload.params);
        zero["stage3_prefetch_bucket_size"] = json!(s.runtime.prefetch_bucket);
    }
    let mut cfg = json!({
        "train_micro_batch_size_per_gpu": s.workload.batch.get(),
        "gradient_accumulation_steps": s.workload.microbatches.get(),
        "train_batch_size": s.workload.batch.get() as u64 * s.workload.microbatches.get() as u64 * l.dp.get() as u64,
        "zero_optimization": zero,
        "gradient_clipping": 1.0,
    });
    match s.numerics.precision {
        Precision::Bf16 | Precision::Bf16Pure | Precision::Fp8 => {
            cfg["bf16"] = json!({"enabled": true})
        }
        Precision::Fp16 => {
            cfg["fp16"] = json!({"enabled": true, "loss_scale": 0, "initial_scale_power": 16})
        }
        Precision::Fp32 => {}
    }
    if s.activations.recompute != memfit_core::megatron::Recompute::None {
        cfg["activation_checkpointing"] =
            json!({"partition_activations": false, "contiguous_memory_optimization": false});
    }
    serde_json::to_string_pretty(&cfg).unwrap_or_default()
}

/// A torchrun command and FSDP2 (`fully_shard`) setup matching the layout.
pub fn torchrun_snippet(s: &Scenario) -> String {
    let l = s.layout();
    let reshard = match (s.fsdp(), s.zero()) {
        (Fsdp::ShardGradOp, _) | (Fsdp::None, Zero::Z2) => {
            "False  # SHARD_GRAD_OP: keep params unsharded after forward"
        }
        _ => "True   # FULL_SHARD",
    };
    let mesh = if s.fsdp() == Fsdp::HybridShard {
        format!(
            "init_device_mesh(\"cuda\", ({}, {}), mesh_dim_names=(\"replicate\", \"shard\"))",
            s.cluster.nodes.get(),
            memfit_core::scenario::div_at_least_one(l.gpus_per_node.get(), l.tp)
        )
    } else if l.tp.get() > 1 {
        format!(
            "init_device_mesh(\"cuda\", ({}, {}), mesh_dim_names=(\"dp\", \"tp\"))",
            l.dp, l.tp
        )
    } else {
        format!(
            "init_device_mesh(\"cuda\", ({},), mesh_dim_names=(\"dp\",))",
            l.dp
        )
    };
    let dtype = match s.numerics.precision {
        Precision::Fp16 => "torch.float16",
        Precision::Fp32 => "torch.float32",
        _ => "torch.bfloat16",
    };
    format!(
        "# memfit: {} on {} × {} GPUs (dp={}, tp={}, pp={}, cp={})\n\
         torchrun --nnodes={} --nproc-per-node={} train.py\n\n\
         # train.py\n\
         import torch\n\
         from torch.distributed.device_mesh import init_device_mesh\n\
         from torch.distributed.fsdp import fully_shard, MixedPrecisionPolicy\n\n\
         mesh = {mesh}\n\
         mp = MixedPrecisionPolicy(param_dtype={dtype}, reduce_dtype=torch.float32)\n\
         for block in model.layers:\n    fully_shard(block, mesh=mesh{}, mp_policy=mp, reshard_after_forward={reshard})\n\
         fully_shard(model, mesh=mesh{}, mp_policy=mp)\n\
         optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, foreach=True)\n",
        s.preset().name,
        s.cluster.nodes.get(),
        s.cluster.gpus_per_node.get(),
        l.dp,
        l.tp,
        l.pp,
        l.cp,
        s.cluster.nodes.get(),
        s.cluster.gpus_per_node.get(),
        if l.tp.get() > 1 { "[\"dp\"]" } else { "" },
        if l.tp.get() > 1 { "[\"dp\"]" } else { "" },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use memfit_core::contract::query::decode;
    use memfit_core::estimate::estimate;

    #[test]
    fn ds_config_reflects_the_scenario() {
        let (s, _) = decode(
            "zero=3&offload_opt=cpu&offload_param=cpu&gpus_per_node=8&batch=4&microbatches=2",
        );
        let s = s.scenario;
        let v: serde_json::Value = serde_json::from_str(&ds_config(&s)).unwrap();
        assert_eq!(v["zero_optimization"]["stage"], 3);
        assert_eq!(v["zero_optimization"]["offload_param"]["device"], "cpu");
        assert_eq!(v["train_batch_size"], 4 * 2 * 8);
        assert_eq!(v["bf16"]["enabled"], true);
    }

    #[test]
    fn csv_has_one_row_per_item_and_quotes_commas() {
        let (s, _) = decode("zero=3&gpus_per_node=8");
        let s = s.scenario;
        let e = estimate(&s);
        let csv = items_csv(&e);
        assert_eq!(csv.lines().count(), e.items.len() + 1);
        assert!(csv.contains("\"Ψ=6738415616, t=1, N_s=8\""));
    }

    #[test]
    fn torchrun_matches_layout() {
        let (s, _) = decode("gpus_per_node=8&nodes=2&tp=2&fsdp=full_shard");
        let s = s.scenario;
        let t = torchrun_snippet(&s);
        assert!(t.contains("--nnodes=2 --nproc-per-node=8"));
        assert!(t.contains("(8, 2)"));
    }
}
