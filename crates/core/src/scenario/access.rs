//! What the estimator reads from a scenario: the resolved layout (degrees, world size,
//! GPUs per node) and the derived settings (effective ZeRO stage, shard degree, expert
//! ranks, the architecture with its overrides).

use super::*;

/// The parallel layout the scenario resolves to. Every degree is a [`Count`] (never 0),
/// so what reads it divides by it without a clamp.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Layout {
    /// Data-parallel degree, `N_d`.
    pub dp: Count,
    /// Tensor-parallel degree, `t`.
    pub tp: Count,
    /// Pipeline-parallel degree, `p`.
    pub pp: Count,
    /// Context-parallel degree, `c`.
    pub cp: Count,
    /// GPUs in the cluster, `G = gpus_per_node · nodes`.
    pub world: Count,
    /// GPUs per node, `n`.
    pub gpus_per_node: Count,
}

impl Layout {
    /// GPUs the layout uses, `dp·tp·pp·cp`, exactly (up to 2^128; four `u32` factors), ≥ 1.
    pub fn used(&self) -> u128 {
        self.dp.get() as u128
            * self.tp.get() as u128
            * self.pp.get() as u128
            * self.cp.get() as u128
    }
}

impl Scenario {
    /// The preset the scenario names, falling back to the default model.
    pub fn preset(&self) -> &'static Preset {
        preset(&self.model.preset)
            .or_else(|| preset(&Scenario::default().model.preset))
            .expect("the default model is a preset")
    }

    /// The preset's shape with the overrides applied. `head_dim` follows `hidden/heads`
    /// when either is overridden.
    pub fn arch(&self) -> Arch {
        let mut a = self.preset().arch.clone();
        let o = &self.model.overrides;
        if o.hidden.is_some() || o.heads.is_some() {
            a.hidden = o.hidden.unwrap_or(a.hidden);
            a.heads = o.heads.unwrap_or(a.heads);
            // More heads than the width (an override) still leaves each head one wide.
            a.head_dim = div_at_least_one(a.hidden.get(), a.heads);
            // Multi-head presets stay multi-head; GQA presets keep their groups (capped).
            let was_mha = self.preset().arch.kv_heads == self.preset().arch.heads;
            if o.kv_heads.is_none() && (was_mha || a.kv_heads > a.heads) {
                a.kv_heads = a.heads;
            }
        }
        if let Some(l) = o.layers {
            // Encoder-decoder presets: the override sets both stacks (an imported T5
            // config's depth; encoder and decoder depths are equal in T5/mT5/Flan-T5).
            if a.encoder_layers > 0 {
                a.encoder_layers = l.get();
            }
            a.layers = l;
        }
        a.kv_heads = o.kv_heads.unwrap_or(a.kv_heads);
        a.ffn = o.ffn.unwrap_or(a.ffn);
        a.vocab = o.vocab.unwrap_or(a.vocab);
        a.mlp = o.mlp.unwrap_or(a.mlp);
        a.norm = o.norm.unwrap_or(a.norm);
        a.tied = o.tied.unwrap_or(a.tied);
        a.gelu_ops = o.gelu_ops.unwrap_or(a.gelu_ops);
        a.softmax_in_dtype = o.softmax_in_dtype.unwrap_or(a.softmax_in_dtype);
        a.rope_partial = o.rope_partial.unwrap_or(a.rope_partial);
        a.bias = o.bias.unwrap_or(a.bias);
        a.head_dim = o.head_dim.unwrap_or(a.head_dim);
        a.experts = o.experts.unwrap_or(a.experts);
        a.moe_ffn = o.moe_ffn.unwrap_or(a.moe_ffn);
        a.shared_experts = o.shared_experts.unwrap_or(a.shared_experts);
        a.first_dense = o.first_dense.unwrap_or(a.first_dense);
        a.positions = o.positions.unwrap_or(a.positions);
        a.window = o.window.unwrap_or(a.window);
        mix_overrides(&mut a, o);
        a.local_layers = match o.local_layers {
            Some(n) => n,
            // A depth override keeps the preset's share of windowed layers (Gemma 2's
            // every other layer stays every other layer).
            None if o.layers.is_some() && self.preset().arch.layers.get() > 0 => {
                let p = &self.preset().arch;
                ((a.layers.get() as u64 * p.local_layers as u64).div_ceil(p.layers.get() as u64))
                    as u32
            }
            None => a.local_layers,
        };
        if a.window == 0 && o.local_layers.is_none() {
            a.local_layers = 0;
        }
        if a.experts == 0 {
            // A dense override of an MoE preset drops the preset's expert structure with
            // its experts (explicit overrides stay, and `Arch::check` names them).
            a.moe_ffn = o.moe_ffn.unwrap_or(0);
            a.shared_experts = o.shared_experts.unwrap_or(0);
            a.first_dense = o.first_dense.unwrap_or(0);
        }
        a.top_k = o.top_k.unwrap_or(if a.experts > 0 && a.top_k == 0 {
            1
        } else {
            a.top_k
        });
        a
    }

    /// The selected GPU (falls back to the default GPU for an unknown id).
    pub fn gpu(&self) -> &'static Gpu {
        gpu(&self.cluster.gpu).unwrap_or(&GPUS[0])
    }

    /// Usable memory per GPU in bytes: the custom figure if given, else the preset's.
    pub fn usable_bytes(&self) -> u64 {
        self.cluster
            .gpu_mem_mib
            .map_or(self.gpu().capacity_bytes, |m| m.saturating_mul(MIB))
    }

    /// Total GPUs `G`.
    pub fn world(&self) -> u32 {
        self.cluster
            .gpus_per_node
            .get()
            .saturating_mul(self.cluster.nodes.get())
    }

    /// Virtual pipeline stages per rank the activations are walked in: `vpp` under the
    /// interleaved schedule (training, `vpp ≥ 2`, not PyTorch, the layers divisible by
    /// `pp·vpp` as Megatron-LM asserts), else 1 (the other cases are flagged and counted
    /// as 1F1B).
    pub fn virtual_stages(&self) -> Count {
        let (pp, vpp) = (self.parallel.pp.get(), self.parallel.vpp.get());
        let layers = self
            .model
            .overrides
            .layers
            .unwrap_or(self.preset().arch.layers);
        if self.parallel.schedule == Schedule::Interleaved
            && vpp >= 2
            && pp >= 2
            && self.stack.framework != Framework::Pytorch
            && layers.get().is_multiple_of(pp.saturating_mul(vpp))
        {
            self.parallel.vpp
        } else {
            Count::MIN
        }
    }

    /// The parallel layout: `dp` defaults to `⌊G / (tp·pp·cp)⌋`, at least 1 (a cluster
    /// smaller than one model replica is flagged as a problem; the estimate still runs
    /// with one replica).
    pub fn layout(&self) -> Layout {
        let p = &self.parallel;
        let model_par = p.tp.get() as u64 * p.pp.get() as u64 * p.cp.get() as u64;
        // ⌊G / (t·p·c)⌋ ≤ G ≤ u32::MAX, so the cast is exact.
        let dp =
            p.dp.unwrap_or_else(|| at_least_one((self.world() as u64 / model_par) as u32));
        Layout {
            dp,
            tp: p.tp,
            pp: p.pp,
            cp: p.cp,
            world: self
                .cluster
                .gpus_per_node
                .saturating_mul(self.cluster.nodes),
            gpus_per_node: self.cluster.gpus_per_node,
        }
    }

    /// The ZeRO stage in effect: FSDP's strategy maps to its stage.
    pub fn zero(&self) -> Zero {
        self.sharding.zero()
    }

    /// The FSDP strategy ([`Fsdp::None`] without FSDP).
    pub fn fsdp(&self) -> Fsdp {
        self.sharding.fsdp()
    }

    /// Ranks the sharded states are split over, `N_s`: the data-parallel ranks times the
    /// context-parallel ranks (context-parallel ranks hold the same weights, so ZeRO/FSDP
    /// shard over both: torchtitan's `dp_shard_cp` mesh, Megatron's data-parallel group
    /// with CP); for HYBRID_SHARD only the ranks inside one node.
    pub fn shard_degree(&self) -> Count {
        let l = self.layout();
        let ranks = l.dp.saturating_mul(l.cp);
        match self.fsdp() {
            Fsdp::HybridShard => {
                div_at_least_one(l.gpus_per_node.get(), l.tp.saturating_mul(l.cp)).min(ranks)
            }
            _ => ranks,
        }
    }

    /// The expert-parallel degree in effect: `ep`, at most the data-parallel ranks
    /// `dp·cp` it is carved from (a larger `ep` is flagged as a problem).
    pub fn ep_ranks(&self) -> u32 {
        let l = self.layout();
        let dp_ranks = (l.dp.get() as u64 * l.cp.get() as u64).min(u32::MAX as u64) as u32;
        self.parallel.ep.get().min(dp_ranks)
    }

    /// The vision encoder a serving engine loads with the model: `vision` when set (0: none;
    /// a given count is taken as split over TP, with the preset's encoder's config shape for
    /// SGLang's cut, a 24-layer, 1,024-wide one where the preset has none), else the preset's ([`crate::model::vision_tower`]) unless
    /// the shape is overridden.
    pub fn vision(&self) -> Option<crate::model::VisionTower> {
        match self.model.vision {
            Some(0) => None,
            // A count replaces the preset's; the config shape SGLang reads stays the
            // preset's encoder's (ViT-L's 24 × 1,024 without one).
            Some(n) => Some(crate::model::VisionTower {
                sharded: n,
                replicated: 0,
                shape: crate::model::vision_tower(&self.model.preset, self.arch().hidden.get())
                    .map_or((24, 1024), |t| t.shape),
            }),
            None if self.model.overrides.any() => None,
            None => crate::model::vision_tower(&self.model.preset, self.arch().hidden.get()),
        }
    }

    /// Selects a model preset and drops the architecture overrides made for the
    /// previous one (the form does this; the URL decoder sets fields one by one).
    pub fn select_model(&mut self, id: &str) {
        self.model = ModelSpec::of(id);
    }

    /// The model's context, tokens: `context` when set, else the preset's
    /// ([`crate::model::model_context`]; an edited shape keeps its preset's context).
    pub fn context(&self) -> Option<u32> {
        self.model
            .context
            .or_else(|| crate::model::model_context(&self.model.preset))
    }

    /// Whether the scenario trains.
    pub fn training(&self) -> bool {
        self.workload.mode == Mode::Train
    }

    /// Cross-field checks that no single key can make: the layout versus the
    /// cluster, the shape versus TP. Each problem is a human sentence; the
    /// estimate still runs (per-GPU memory depends on the degrees, not on whether
    /// the cluster is big enough) and shows them as warnings.
    /// Double quantisation of NF4 constants: QLoRA's setting, else the `quant=nf4` format's.
    pub fn double_quant(&self) -> bool {
        match self.finetune {
            Tuning::Qlora { double_quant, .. } => double_quant,
            _ => self.numerics.nf4_double_quant,
        }
    }
}

/// The layer mix and state-space / linear-attention shape overrides (`attn_layers`,
/// `mamba_layers`, …, `ssm_*`, `lin_*`) onto the preset's architecture.
fn mix_overrides(a: &mut Arch, o: &ArchOverrides) {
    a.attn_layers = o.attn_layers.or(a.attn_layers);
    a.mamba_layers = o.mamba_layers.unwrap_or(a.mamba_layers);
    a.conv_layers = o.conv_layers.unwrap_or(a.conv_layers);
    a.linear_layers = o.linear_layers.unwrap_or(a.linear_layers);
    a.ssm_version = o.ssm_version.unwrap_or(a.ssm_version);
    a.ssm_inner = o.ssm_inner.unwrap_or(a.ssm_inner);
    a.ssm_state = o.ssm_state.unwrap_or(a.ssm_state);
    a.ssm_groups = o.ssm_groups.unwrap_or(a.ssm_groups);
    a.ssm_heads = o.ssm_heads.unwrap_or(a.ssm_heads);
    a.ssm_conv = o.ssm_conv.unwrap_or(a.ssm_conv);
    a.ssm_chunk = o.ssm_chunk.unwrap_or(a.ssm_chunk);
    a.lin_k_heads = o.lin_k_heads.unwrap_or(a.lin_k_heads);
    a.lin_v_heads = o.lin_v_heads.unwrap_or(a.lin_v_heads);
    a.lin_k_dim = o.lin_k_dim.unwrap_or(a.lin_k_dim);
    a.lin_v_dim = o.lin_v_dim.unwrap_or(a.lin_v_dim);
    a.lin_kind = o.lin_kind.unwrap_or(a.lin_kind);
    a.ssm_dtype = o.ssm_dtype.unwrap_or(a.ssm_dtype);
}
