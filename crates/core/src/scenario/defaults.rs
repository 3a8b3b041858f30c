//! The default scenario (Llama 2 7B, micro-batch 1 at 4,096 tokens, on one H100; bf16
//! mixed precision, AdamW, no ZeRO sharding): one field per line, a data table.

use super::*;

impl ModelSpec {
    /// Preset `id` as it is: no overrides, no explicit counts.
    pub fn of(id: &str) -> Self {
        ModelSpec {
            preset: id.to_string(),
            overrides: ArchOverrides::default(),
            params: None,
            largest_layer: None,
            vision: None,
            context: None,
        }
    }
}

impl Default for Scenario {
    fn default() -> Self {
        Scenario {
            model: ModelSpec::of("llama-2-7b"),
            workload: Workload {
                mode: Mode::Train,
                batch: count(1),
                seq: count(4096),
                gen: 256,
                microbatches: count(1),
                logits: Logits::Last,
                loss: Loss::Model,
            },
            cluster: Cluster {
                gpu: "h100-80".into(),
                gpu_mem_mib: None,
                gpus_per_node: count(1),
                nodes: count(1),
            },
            parallel: Parallel {
                dp: None,
                tp: count(1),
                pp: count(1),
                cp: count(1),
                ep: count(1),
                vpp: count(1),
                sp: false,
                schedule: Schedule::OneFOneB,
            },
            sharding: Sharding::Zero(Zero::Z0),
            offload: Offloading {
                optimizer: Offload::None,
                params: Offload::None,
                pin_memory: false,
            },
            numerics: Numerics {
                precision: Precision::Bf16,
                grad_acc: GradAcc::Compute,
                optimizer: Optimizer::Adamw,
                adam_impl: AdamImpl::Foreach,
                weight_dtype: Dtype::Auto,
                kv_dtype: Dtype::Auto,
                quant_group: count(128),
                quant: crate::quant::Quant::None,
                nf4_double_quant: true,
            },
            activations: ActivationPolicy {
                attn: Attn::Flash,
                dropout: false,
                recompute: Recompute::None,
                ckpt_layers: 0,
            },
            finetune: Tuning::Full,
            stack: Stack::default(),
            runtime: Runtime {
                cuda_ctx_mib: None,
                nccl_mib: None,
                frag_pct: 5,
                zero_init: true,
                buffer_factor: 1.5,
                reduce_bucket: 500_000_000,
                allgather_bucket: 500_000_000,
                overlap_comm: false,
                prefetch_bucket: 50_000_000,
                max_live_params: 1_000_000_000,
                tp_overlap: false,
                ep_overlap: false,
                ce_fusion: CeFusion::Off,
                fp8_recipe: Fp8Recipe::Delayed,
                device: Device::Cuda,
                fp8_params: false,
                modules: Modules::Hf,
                tf32: Tf32::Auto,
                ssm_kernels: SsmKernels::Fused,
            },
            serving: Serving::default(),
            hardware: HardwareOverrides::default(),
        }
    }
}
