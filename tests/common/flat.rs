//! A flat form of [`Settings`] for the property tests' generators: one struct with every
//! key's field side by side, so a strategy can draw each field and build a `Settings`
//! (counts that must not be zero checked on the way). Test code only: the CLI's `--json`
//! reads an object of query keys, checked by `KEYS` (`contract::query::decode_json`).
#![allow(dead_code)]

use memfit_core::contract::{Settings, View};
use memfit_core::scenario::*;
use memfit_core::units::Units;
use serde::{Deserialize, Serialize};

/// One flat settings object (serde names are the JSON contract).
#[allow(missing_docs)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FlatSettings {
    pub model: String,
    pub arch: ArchOverrides,
    pub params: Option<u64>,
    pub largest_layer: Option<u64>,
    pub mode: Mode,
    pub batch: u32,
    pub seq: u32,
    pub gen: u32,
    pub gpus_per_node: u32,
    pub nodes: u32,
    pub dp: Option<u32>,
    pub tp: u32,
    pub pp: u32,
    pub cp: u32,
    pub zero: Zero,
    pub offload_opt: Offload,
    pub offload_param: Offload,
    pub zero_init: bool,
    pub buffer_factor: f64,
    pub precision: Precision,
    pub grad_acc: GradAcc,
    pub optimizer: Optimizer,
    #[serde(default)]
    pub adam_impl: AdamImpl,
    #[serde(default)]
    pub logits: Logits,
    #[serde(default)]
    pub loss: Loss,
    pub fsdp: Fsdp,
    pub finetune: Finetune,
    pub lora_rank: u32,
    pub lora_targets: LoraTargets,
    pub double_quant: bool,
    pub weight_dtype: Dtype,
    pub quant_group: u32,
    #[serde(default)]
    pub quant: memfit_core::quant::Quant,
    pub kv_dtype: Dtype,
    pub sp: bool,
    pub recompute: Recompute,
    pub vpp: u32,
    pub microbatches: u32,
    pub ep: u32,
    pub pin_memory: bool,
    #[serde(default)]
    pub serving: Serving,
    pub solve: Solve,
    #[serde(default)]
    pub timeline: bool,
    #[serde(default)]
    pub time: bool,
    #[serde(default)]
    pub tp_overlap: bool,
    #[serde(default)]
    pub ep_overlap: bool,
    #[serde(default)]
    pub ce_fusion: CeFusion,
    #[serde(default)]
    pub fp8_recipe: Fp8Recipe,
    #[serde(default)]
    pub device: Device,
    #[serde(default)]
    pub fp8_params: bool,
    #[serde(default)]
    pub modules: Modules,
    #[serde(default)]
    pub tf32: Tf32,
    #[serde(default)]
    pub ssm_kernels: SsmKernels,
    #[serde(default)]
    pub fitmap: memfit_core::contract::FitColour,
    #[serde(default)]
    pub hardware: HardwareOverrides,
    pub attn: Attn,
    pub dropout: bool,
    pub schedule: Schedule,
    pub framework: Framework,
    pub ckpt_layers: u32,
    pub cuda_ctx_mib: Option<u32>,
    pub nccl_mib: Option<u32>,
    pub frag_pct: u32,
    pub reduce_bucket: u64,
    pub allgather_bucket: u64,
    pub overlap_comm: bool,
    pub prefetch_bucket: u64,
    pub max_live_params: u64,
    pub gpu: String,
    pub gpu_mem_mib: Option<u64>,
    pub convention: Convention,
    pub units: Units,
}

fn nonzero(name: &str, n: u32) -> Result<Count, String> {
    Count::new(n).ok_or_else(|| format!("`{name}` must be at least 1"))
}

/// The workload's keys, their counts checked.
fn workload(f: &FlatSettings) -> Result<Workload, String> {
    Ok(Workload {
        mode: f.mode,
        batch: nonzero("batch", f.batch)?,
        seq: nonzero("seq", f.seq)?,
        gen: f.gen,
        microbatches: nonzero("microbatches", f.microbatches)?,
        logits: f.logits,
        loss: f.loss,
    })
}

/// The parallel layout's keys, their degrees checked.
fn parallel(f: &FlatSettings) -> Result<Parallel, String> {
    Ok(Parallel {
        dp: f.dp.map(|d| nonzero("dp", d)).transpose()?,
        tp: nonzero("tp", f.tp)?,
        pp: nonzero("pp", f.pp)?,
        cp: nonzero("cp", f.cp)?,
        ep: nonzero("ep", f.ep)?,
        vpp: nonzero("vpp", f.vpp)?,
        sp: f.sp,
        schedule: f.schedule,
    })
}

/// The number formats' keys.
fn numerics(f: &FlatSettings) -> Result<Numerics, String> {
    Ok(Numerics {
        precision: f.precision,
        grad_acc: f.grad_acc,
        optimizer: f.optimizer,
        adam_impl: f.adam_impl,
        weight_dtype: f.weight_dtype,
        kv_dtype: f.kv_dtype,
        quant_group: nonzero("quant_group", f.quant_group)?,
        quant: f.quant,
        nf4_double_quant: true,
    })
}

/// The runtime overheads' keys.
fn runtime(f: &FlatSettings) -> Runtime {
    Runtime {
        cuda_ctx_mib: f.cuda_ctx_mib,
        nccl_mib: f.nccl_mib,
        frag_pct: f.frag_pct,
        zero_init: f.zero_init,
        buffer_factor: f.buffer_factor,
        reduce_bucket: f.reduce_bucket,
        allgather_bucket: f.allgather_bucket,
        overlap_comm: f.overlap_comm,
        prefetch_bucket: f.prefetch_bucket,
        max_live_params: f.max_live_params,
        tp_overlap: f.tp_overlap,
        ep_overlap: f.ep_overlap,
        ce_fusion: f.ce_fusion,
        fp8_recipe: f.fp8_recipe,
        device: f.device,
        fp8_params: f.fp8_params,
        modules: f.modules,
        tf32: f.tf32,
        ssm_kernels: f.ssm_kernels,
    }
}

impl TryFrom<FlatSettings> for Settings {
    type Error = String;
    fn try_from(f: FlatSettings) -> Result<Settings, String> {
        // Checked in the keys' order: the first zero count is the error.
        let adapters = (nonzero("lora_rank", f.lora_rank)?, f.lora_targets);
        let workload = workload(&f)?;
        let gpus_per_node = nonzero("gpus_per_node", f.gpus_per_node)?;
        let nodes = nonzero("nodes", f.nodes)?;
        let (parallel, numerics, runtime) = (parallel(&f)?, numerics(&f)?, runtime(&f));
        let scenario = Scenario {
            model: ModelSpec {
                preset: f.model,
                overrides: f.arch,
                params: f.params,
                largest_layer: f.largest_layer,
                vision: None,
                context: None,
            },
            workload,
            cluster: Cluster {
                gpu: f.gpu,
                gpu_mem_mib: f.gpu_mem_mib,
                gpus_per_node,
                nodes,
            },
            parallel,
            sharding: match f.fsdp {
                Fsdp::None => Sharding::Zero(f.zero),
                s => Sharding::Fsdp(s),
            },
            offload: Offloading {
                optimizer: f.offload_opt,
                params: f.offload_param,
                pin_memory: f.pin_memory,
            },
            numerics,
            activations: ActivationPolicy {
                attn: f.attn,
                dropout: f.dropout,
                recompute: f.recompute,
                ckpt_layers: f.ckpt_layers,
            },
            finetune: match f.finetune {
                Finetune::Full => Tuning::Full,
                Finetune::Lora => Tuning::Lora {
                    rank: adapters.0,
                    targets: adapters.1,
                },
                Finetune::Qlora => Tuning::Qlora {
                    rank: adapters.0,
                    targets: adapters.1,
                    double_quant: f.double_quant,
                },
            },
            stack: Stack {
                framework: f.framework,
                convention: f.convention,
            },
            runtime,
            serving: f.serving,
            hardware: f.hardware,
        };
        let mut scenario = scenario;
        scenario.numerics.normalise_weight_format();
        if f.finetune != Finetune::Qlora {
            scenario.numerics.nf4_double_quant = f.double_quant;
        }
        Ok(Settings {
            scenario,
            view: View {
                units: f.units,
                timeline: f.timeline,
                time: f.time,
                fitmap: f.fitmap,
                solve: f.solve,
            },
        })
    }
}

impl From<&Settings> for FlatSettings {
    fn from(x: &Settings) -> FlatSettings {
        let s = &x.scenario;
        let (rank, targets) = s
            .finetune
            .adapters()
            .unwrap_or((count(16), LoraTargets::All));
        FlatSettings {
            model: s.model.preset.clone(),
            arch: s.model.overrides.clone(),
            params: s.model.params,
            largest_layer: s.model.largest_layer,
            mode: s.workload.mode,
            batch: s.workload.batch.get(),
            seq: s.workload.seq.get(),
            gen: s.workload.gen,
            gpus_per_node: s.cluster.gpus_per_node.get(),
            nodes: s.cluster.nodes.get(),
            dp: s.parallel.dp.map(Count::get),
            tp: s.parallel.tp.get(),
            pp: s.parallel.pp.get(),
            cp: s.parallel.cp.get(),
            zero: s.sharding.zero_key(),
            offload_opt: s.offload.optimizer,
            offload_param: s.offload.params,
            zero_init: s.runtime.zero_init,
            buffer_factor: s.runtime.buffer_factor,
            precision: s.numerics.precision,
            grad_acc: s.numerics.grad_acc,
            optimizer: s.numerics.optimizer,
            adam_impl: s.numerics.adam_impl,
            logits: s.workload.logits,
            loss: s.workload.loss,
            fsdp: s.sharding.fsdp(),
            finetune: s.finetune.kind(),
            lora_rank: rank.get(),
            lora_targets: targets,
            double_quant: s.double_quant(),
            weight_dtype: s.numerics.weight_dtype,
            quant_group: s.numerics.quant_group.get(),
            quant: s.numerics.quant,
            kv_dtype: s.numerics.kv_dtype,
            sp: s.parallel.sp,
            recompute: s.activations.recompute,
            vpp: s.parallel.vpp.get(),
            microbatches: s.workload.microbatches.get(),
            ep: s.parallel.ep.get(),
            pin_memory: s.offload.pin_memory,
            serving: s.serving,
            solve: x.view.solve,
            timeline: x.view.timeline,
            time: x.view.time,
            fitmap: x.view.fitmap,
            hardware: s.hardware,
            attn: s.activations.attn,
            dropout: s.activations.dropout,
            schedule: s.parallel.schedule,
            framework: s.stack.framework,
            ckpt_layers: s.activations.ckpt_layers,
            cuda_ctx_mib: s.runtime.cuda_ctx_mib,
            nccl_mib: s.runtime.nccl_mib,
            frag_pct: s.runtime.frag_pct,
            reduce_bucket: s.runtime.reduce_bucket,
            allgather_bucket: s.runtime.allgather_bucket,
            overlap_comm: s.runtime.overlap_comm,
            prefetch_bucket: s.runtime.prefetch_bucket,
            max_live_params: s.runtime.max_live_params,
            tp_overlap: s.runtime.tp_overlap,
            ep_overlap: s.runtime.ep_overlap,
            ce_fusion: s.runtime.ce_fusion,
            fp8_recipe: s.runtime.fp8_recipe,
            device: s.runtime.device,
            fp8_params: s.runtime.fp8_params,
            modules: s.runtime.modules,
            tf32: s.runtime.tf32,
            ssm_kernels: s.runtime.ssm_kernels,
            gpu: s.cluster.gpu.clone(),
            gpu_mem_mib: s.cluster.gpu_mem_mib,
            convention: s.stack.convention,
            units: x.view.units,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memfit_core::contract::query::decode;

    /// The flat form and the settings convert both ways without loss.
    #[test]
    fn flat_round_trips() {
        for q in [
            "",
            "model=gpt2&zero=2&gpus_per_node=4&units=gb&timeline=1",
            "finetune=qlora&lora_rank=8&double_quant=0&fsdp=hybrid_shard&tp=2&dp=3",
            "mode=infer&kv_dtype=int4&quant_group=64&solve=max_context",
        ] {
            let x = decode(q).0;
            let flat = FlatSettings::from(&x);
            assert_eq!(Settings::try_from(flat).unwrap(), x, "{q}");
        }
        let mut flat = FlatSettings::from(&Settings::default());
        flat.tp = 0;
        assert_eq!(
            Settings::try_from(flat).unwrap_err(),
            "`tp` must be at least 1"
        );
    }
}
