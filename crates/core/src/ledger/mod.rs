//! The ledger: the bottom floor of the estimator. Every mechanism (model states,
//! activations, inference, other tools' conventions) pushes items here; `estimate`
//! orchestrates on top; the explorer and the timeline read the same mechanisms.
//!
//! A [`Ledger`] either records full [`Item`]s (component, location, bytes, formula,
//! values, source) or only tallies bytes per phase ([`Tally`]). The text of an item
//! is built by a closure that the tally never calls, so a mechanism run into a tally
//! allocates nothing: the layout explorer evaluates millions of layouts with the very
//! code that builds the explained ledger, and the two cannot drift apart.

use serde::{Deserialize, Serialize};

use crate::expr::Expr;

mod line;
mod sink;

pub use line::{items_from_line, items_to_line};
pub use sink::*;

pub use crate::units::OUT_OF_RANGE;

/// What a ledger item holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Component {
    /// Model parameters in the compute dtype.
    Weights,
    /// Parameter gradients.
    Gradients,
    /// fp32 master copy of the weights (mixed precision).
    MasterWeights,
    /// Optimizer moments (Adam: momentum and variance).
    OptimizerStates,
    /// DeepSpeed's lumped "params, grads and optimizer states" partition.
    ModelStates,
    /// ZeRO-3's gathered (all-gathered) layer: full params and grads of the largest layer.
    GatheredLayer,
    /// Activations saved for the backward pass.
    Activations,
    /// Inference KV cache.
    KvCache,
    /// Host RAM used while the model is built and handed to the GPUs.
    InitLoad,
    /// Transient buffers: prefill/decode workspace, optimizer temporaries, NVMe staging.
    Workspace,
    /// Logits and loss of the output layer.
    Logits,
    /// Communication buffers: NCCL, DDP buckets, DeepSpeed reduce/all-gather/prefetch buckets.
    CommBuffers,
    /// CUDA context and library workspaces (not allocator memory).
    Overhead,
    /// Allocator fragmentation: reserved but not allocated.
    Fragmentation,
}

impl Component {
    /// Position in [`Component::ALL`].
    pub fn index(self) -> usize {
        Component::ALL.iter().position(|c| *c == self).unwrap_or(0)
    }
    /// The query keys whose size drives the component (what an out-of-range warning names).
    pub fn driving_keys(self) -> &'static [&'static str] {
        match self {
            Component::Activations | Component::Logits | Component::CommBuffers => {
                &["seq", "batch", "microbatches"]
            }
            Component::KvCache | Component::Workspace => &["seq", "gen", "batch"],
            Component::Overhead => &["cuda_ctx", "nccl"],
            Component::Fragmentation => &["frag"],
            _ => &["params", "layers", "hidden", "gpus_per_node"],
        }
    }
    /// Every component, in stacking order (bottom to top of a bar).
    pub const ALL: [Component; 14] = [
        Component::Weights,
        Component::Gradients,
        Component::MasterWeights,
        Component::OptimizerStates,
        Component::ModelStates,
        Component::GatheredLayer,
        Component::Activations,
        Component::Logits,
        Component::KvCache,
        Component::Workspace,
        Component::CommBuffers,
        Component::Overhead,
        Component::Fragmentation,
        Component::InitLoad,
    ];
    /// Whether the component is tensor memory the allocator hands out (what
    /// `torch.cuda.max_memory_allocated` counts).
    pub fn is_allocated(self) -> bool {
        !matches!(self, Component::Overhead | Component::Fragmentation)
    }
    /// Stable machine name (as in the JSON).
    pub fn as_str(self) -> &'static str {
        match self {
            Component::Weights => "weights",
            Component::Gradients => "gradients",
            Component::MasterWeights => "master_weights",
            Component::OptimizerStates => "optimizer_states",
            Component::ModelStates => "model_states",
            Component::GatheredLayer => "gathered_layer",
            Component::Activations => "activations",
            Component::KvCache => "kv_cache",
            Component::InitLoad => "init_load",
            Component::Workspace => "workspace",
            Component::Logits => "logits",
            Component::CommBuffers => "comm_buffers",
            Component::Overhead => "overhead",
            Component::Fragmentation => "fragmentation",
        }
    }
    /// Human label.
    pub fn label(self) -> &'static str {
        match self {
            Component::Weights => "Weights",
            Component::Gradients => "Gradients",
            Component::MasterWeights => "fp32 master weights",
            Component::OptimizerStates => "Optimizer states",
            Component::ModelStates => "Model states (DeepSpeed, lumped)",
            Component::GatheredLayer => "Gathered layer (ZeRO-3)",
            Component::Activations => "Activations",
            Component::KvCache => "KV cache",
            Component::InitLoad => "Model init (host)",
            Component::Workspace => "Workspace",
            Component::Logits => "Logits and loss",
            Component::CommBuffers => "Communication buffers",
            Component::Overhead => "CUDA context",
            Component::Fragmentation => "Fragmentation",
        }
    }
    /// A stable colour (hex RGB) for charts and legends.
    pub fn color(self) -> (u8, u8, u8) {
        match self {
            Component::Weights => (0x3b, 0x6e, 0xc8),
            Component::Gradients => (0xe0, 0x8a, 0x1e),
            Component::MasterWeights => (0x6a, 0x4c, 0x93),
            Component::OptimizerStates => (0xc8, 0x3b, 0x4a),
            Component::ModelStates => (0x8c, 0x56, 0x4b),
            Component::GatheredLayer => (0x17, 0xa2, 0xb8),
            Component::Activations => (0x2e, 0x9e, 0x57),
            Component::KvCache => (0xb5, 0x9f, 0x1a),
            Component::InitLoad => (0x7f, 0x7f, 0x7f),
            Component::Workspace => (0xd6, 0x6e, 0xb8),
            Component::Logits => (0x9c, 0xc4, 0x3e),
            Component::CommBuffers => (0x5a, 0x9b, 0xd5),
            Component::Overhead => (0x4d, 0x4d, 0x4d),
            Component::Fragmentation => (0xbd, 0xbd, 0xbd),
        }
    }
}

/// What mechanism an item (and every event of the step program that allocates or frees
/// its bytes) belongs to: a typed id, so tests and views pick items and events by what
/// they are, never by their display text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mech {
    // Model states (memfit's accounting, DeepSpeed-style and Megatron-style frameworks).
    /// The model's weights in the compute dtype.
    Weights,
    /// fp8 training's weight copies.
    Fp8Copies,
    /// LoRA's frozen 16-bit base.
    FrozenBase,
    /// QLoRA's frozen NF4 base.
    Nf4Base,
    /// LoRA/QLoRA adapters (fp32).
    Adapters,
    /// Gradients (resident buffer).
    Gradients,
    /// fp32 master weights.
    MasterWeights,
    /// Optimizer moments.
    OptimizerStates,
    /// ZeRO-3's gathered largest layer.
    GatheredLayer,
    /// ZeRO-Infinity's NVMe swap buffers (host).
    NvmeSwap,
    /// ZeRO-Infinity's parameter swap buffers (host).
    NvmeParamSwap,
    // PyTorch.
    /// Autocast's cast cache (forward).
    AutocastCache,
    /// Autocast's bf16 weight copies (forward and backward).
    AutocastCopies,
    /// PyTorch's parameters (fp32 under autocast).
    PtWeights,
    /// PyTorch's gradients (freed by `zero_grad`).
    PtGradients,
    /// DDP's gradient buckets.
    DdpBuckets,
    /// PyTorch's optimizer states.
    PtOptimizerStates,
    /// Adam's temporaries in the step (`foreach`, `forloop`).
    AdamTemporaries,
    /// FSDP under a pipeline: the stage kept unsharded.
    FsdpStageParams,
    /// FSDP under a pipeline: unsharded fp32 gradients.
    FsdpStageGrads,
    /// FSDP's root group unsharded.
    FsdpRoot,
    /// FSDP's current unsharded block.
    FsdpBlock,
    /// FSDP's prefetched next block (backward).
    FsdpPrefetch,
    /// FSDP's prefetched next block in the forward, beyond the logits.
    FsdpPrefetchForward,
    /// FSDP's unsharded fp32 gradient block before reduce-scatter.
    FsdpGradBlock,
    // Runtime.
    /// CUDA context and library workspaces.
    CudaContext,
    /// cuBLAS workspaces PyTorch allocates through its caching allocator.
    CublasWorkspace,
    /// NCCL communicator buffers.
    Nccl,
    /// DeepSpeed's gradient reduce bucket.
    ReduceBucket,
    /// DeepSpeed's all-gather bucket.
    AllgatherBucket,
    /// DeepSpeed's ZeRO-3 prefetch bucket.
    PrefetchBucket,
    /// Context parallelism's ring K/V buffers.
    CpRing,
    /// The torch fallback's scan transient of the Mamba block running (training).
    ScanTransient,
    /// Allocator fragmentation.
    Fragmentation,
    /// Host RAM while the model is built.
    HostInit,
    // The step's activations, walked by the program.
    /// Saved activations, checkpoints, working sets and backward temporaries.
    Activations,
    /// Logits and loss.
    Logits,
    /// The model output a training loop holds to the step's end.
    HeldOutput,
    // Inference.
    /// Inference weights.
    InferWeights,
    /// The prompt's KV cache.
    KvPrefill,
    /// Hugging Face's boolean sliding-window mask, held through the prefill.
    SlidingMask,
    /// The KV cache after generation.
    KvDecode,
    /// The prefill's working set.
    PrefillWorkspace,
    /// One decode step's working set.
    DecodeWorkspace,
    // Serving engines.
    /// The weights a serving engine loads.
    ServeWeights,
    /// The profiling forward's peak (kept free while serving).
    ServeActivation,
    /// Non-torch memory (NCCL, cuBLAS) that appeared while profiling.
    ServeNonTorch,
    /// CUDA graphs set aside before the KV cache.
    ServeGraphs,
    /// The KV-cache pool.
    ServeKv,
    /// What the process holds outside the engine's budget.
    ServeOutside,
    /// What a serving process keeps in host memory (llama.cpp: the file's span the CPU maps
    /// and the KV cache of the layers left on the CPU).
    ServeHost,
    // Other tools' conventions.
    /// DeepSpeed's fp16 parameters (ZeRO-2 offload).
    DsParams,
    /// DeepSpeed's offloaded states (host).
    DsOffloadStates,
    /// DeepSpeed's unpartitioned lead term.
    DsLead,
    /// DeepSpeed's partitioned rest.
    DsRest,
    /// DeepSpeed's model init (host).
    DsInitLoad,
    /// DeepSpeed's ZeRO-3 largest layer.
    DsGatheredLayer,
    /// DeepSpeed's ZeRO-3 partitions.
    DsZero3Rest,
    /// DeepSpeed's ZeRO-3 host RAM.
    DsZero3Host,
    /// Megatron's weight and optimizer term.
    MegatronStates,
    /// Megatron's activation term.
    MegatronActivations,
}

/// Where an item lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Location {
    /// GPU memory, per GPU.
    Gpu,
    /// Host RAM, per node.
    Cpu,
    /// NVMe, per node.
    Nvme,
}

/// The phase of a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Model construction, before training starts.
    Init,
    /// Forward pass.
    Forward,
    /// Backward pass.
    Backward,
    /// Optimizer step.
    OptimizerStep,
    /// Inference: processing the prompt.
    Prefill,
    /// Inference: generating tokens.
    Decode,
}

/// One line of the ledger.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Item {
    /// The mechanism (not in the JSON report).
    #[serde(skip, default = "no_mech")]
    pub mech: Mech,
    /// What it holds.
    pub component: Component,
    /// Where it lives.
    pub location: Location,
    /// Bytes (per GPU for `gpu`, per node for `cpu`/`nvme`).
    pub bytes: u64,
    /// Which ranks hold it: `"all"` (every GPU alike) or `"node"` (per node of host RAM).
    pub rank: String,
    /// The formula in symbols.
    pub formula: String,
    /// The values substituted into the formula.
    pub values: String,
    /// Where the formula comes from (seed file, paper, tool and version).
    pub source: String,
    /// The phases this item exists in (empty: every phase of the step).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub phases: Vec<Phase>,
}

fn no_mech() -> Mech {
    Mech::Weights
}

impl Item {
    /// Whether the item is alive in phase `ph` (`Init` items only in `Init`).
    pub fn alive_in(&self, ph: Phase) -> bool {
        if self.phases.is_empty() {
            ph != Phase::Init
        } else {
            self.phases.contains(&ph)
        }
    }
}

/// A problem with the input, by key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Warning {
    /// The query key concerned.
    pub key: String,
    /// The offending value as given (may be empty).
    pub value: String,
    /// What is wrong and what memfit did instead.
    pub message: String,
}

impl Warning {
    /// `warnings` as JSON, byte for byte what `serde_json::to_string` writes (the page's
    /// first module sends its input warnings to the second this way without linking serde's
    /// JSON writer: 0.9 KB of its gzip).
    pub fn list_json(warnings: &[Warning]) -> String {
        let mut out = String::from("[");
        for (i, w) in warnings.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            for (j, (name, text)) in [
                ("key", &w.key),
                ("value", &w.value),
                ("message", &w.message),
            ]
            .into_iter()
            .enumerate()
            {
                out.push_str(if j == 0 { "{\"" } else { ",\"" });
                out.push_str(name);
                out.push_str("\":");
                json_string(&mut out, text);
            }
            out.push('}');
        }
        out.push(']');
        out
    }
}

/// Appends `s` as a JSON string, escaped as `serde_json` escapes it.
fn json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.push_str("\\u00");
                out.push(char::from(HEX[(c as usize) >> 4]));
                out.push(char::from(HEX[(c as usize) & 15]));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

impl Phase {
    /// Every phase, in [`Tally`] index order.
    pub const ALL: [Phase; 6] = [
        Phase::Init,
        Phase::Forward,
        Phase::Backward,
        Phase::OptimizerStep,
        Phase::Prefill,
        Phase::Decode,
    ];
    /// Index into a [`Tally`]'s per-phase arrays.
    pub const fn index(self) -> usize {
        match self {
            Phase::Init => 0,
            Phase::Forward => 1,
            Phase::Backward => 2,
            Phase::OptimizerStep => 3,
            Phase::Prefill => 4,
            Phase::Decode => 5,
        }
    }
    /// Stable machine name (as in the JSON).
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Init => "init",
            Phase::Forward => "forward",
            Phase::Backward => "backward",
            Phase::OptimizerStep => "optimizer_step",
            Phase::Prefill => "prefill",
            Phase::Decode => "decode",
        }
    }
}

/// One pipeline stage's peak (all stages are listed; the ledger shows the peak one).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StageSummary {
    /// Stage index, 0-based.
    pub stage: u32,
    /// Transformer blocks on the stage.
    pub layers: u32,
    /// Peak bytes per GPU of the stage.
    pub per_gpu_bytes: u64,
    /// Phase of the stage's peak.
    pub peak_phase: Phase,
    /// Bytes by component at the stage's peak.
    pub components: Vec<(Component, u64)>,
}

/// GPU bytes by component among the items alive in `phase`.
pub(crate) fn by_component(items: &[Item], phase: Phase) -> Vec<(Component, u64)> {
    Component::ALL
        .iter()
        .map(|c| {
            let b = items
                .iter()
                .filter(|i| i.location == Location::Gpu && i.component == *c && i.alive_in(phase))
                .fold(0u64, |a, i| a.saturating_add(i.bytes));
            (*c, b)
        })
        .filter(|(_, b)| *b > 0)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::Warning;

    #[test]
    fn warnings_json_is_serde_json_byte_for_byte() {
        let w = |key: &str, value: &str, message: &str| Warning {
            key: key.into(),
            value: value.into(),
            message: message.into(),
        };
        let every_control: String = (0u8..0x20).map(char::from).collect();
        for list in [
            vec![],
            vec![w("seq", "-1", "`-1` is negative")],
            vec![
                w("a\"b", "c\\d", "e\nf\r\tg\u{8}\u{c}"),
                w("", &every_control, "\u{7f} é ∑ 😀 </script>"),
            ],
        ] {
            let want = serde_json::to_string(&list).unwrap();
            assert_eq!(Warning::list_json(&list), want);
            assert_eq!(serde_json::from_str::<Vec<Warning>>(&want).unwrap(), list);
        }
    }
}
