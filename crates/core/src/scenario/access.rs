//! What the estimator reads from a scenario: the resolved layout (degrees, world size,
//! GPUs per node) and the derived settings (effective ZeRO stage, shard degree, expert
//! ranks, the architecture with its overrides).

use super::*;

/// The parallel layout the scenario resolves to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Layout {
    /// Data-parallel degree, `N_d`.
    pub dp: u32,
    /// Tensor-parallel degree, `t`.
    pub tp: u32,
    /// Pipeline-parallel degree, `p`.
    pub pp: u32,
    /// Context-parallel degree, `c`.
    pub cp: u32,
    /// GPUs in the cluster, `G = gpus_per_node · nodes`.
    pub world: u32,
    /// GPUs per node, `n`.
    pub gpus_per_node: u32,
}

impl Layout {
    /// GPUs the layout uses, `dp·tp·pp·cp`, exactly (up to 2^128; four `u32` factors).
    pub fn used(&self) -> u128 {
        self.dp as u128 * self.tp as u128 * self.pp as u128 * self.cp as u128
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
            a.head_dim = (a.hidden / a.heads.max(1)).max(1);
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
                a.encoder_layers = l;
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
        a.bias = o.bias.unwrap_or(a.bias);
        a.head_dim = o.head_dim.unwrap_or(a.head_dim);
        a.experts = o.experts.unwrap_or(a.experts);
        a.moe_ffn = o.moe_ffn.unwrap_or(a.moe_ffn);
        a.shared_experts = o.shared_experts.unwrap_or(a.shared_experts);
        a.first_dense = o.first_dense.unwrap_or(a.first_dense);
        a.positions = o.positions.unwrap_or(a.positions);
        a.window = o.window.unwrap_or(a.window);
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
        a.lin_k_heads = o.lin_k_heads.unwrap_or(a.lin_k_heads);
        a.lin_v_heads = o.lin_v_heads.unwrap_or(a.lin_v_heads);
        a.lin_k_dim = o.lin_k_dim.unwrap_or(a.lin_k_dim);
        a.lin_v_dim = o.lin_v_dim.unwrap_or(a.lin_v_dim);
        a.local_layers = match o.local_layers {
            Some(n) => n,
            // A depth override keeps the preset's share of windowed layers (Gemma 2's
            // every other layer stays every other layer).
            None if o.layers.is_some() && self.preset().arch.layers > 0 => {
                let p = &self.preset().arch;
                ((a.layers as u64 * p.local_layers as u64).div_ceil(p.layers as u64)) as u32
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
    pub fn virtual_stages(&self) -> u32 {
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
            && layers.is_multiple_of(pp.saturating_mul(vpp))
        {
            self.parallel.vpp.get()
        } else {
            1
        }
    }

    /// The parallel layout: `dp` defaults to `G / (tp·pp·cp)` (at least 1).
    /// The parallel layout: `dp` defaults to `G / (tp·pp·cp)` (at least 1).
    pub fn layout(&self) -> Layout {
        let p = &self.parallel;
        let (tp, pp, cp) = (p.tp.get(), p.pp.get(), p.cp.get());
        let model_par = tp as u64 * pp as u64 * cp as u64;
        let dp = p.dp.map_or_else(
            || (self.world() as u64 / model_par).clamp(1, u32::MAX as u64) as u32,
            Count::get,
        );
        Layout {
            dp,
            tp,
            pp,
            cp,
            world: self.world(),
            gpus_per_node: self.cluster.gpus_per_node.get(),
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
    pub fn shard_degree(&self) -> u32 {
        let l = self.layout();
        match self.fsdp() {
            Fsdp::HybridShard => {
                let per_node = (l.gpus_per_node / l.tp.saturating_mul(l.cp)).max(1);
                per_node.min(l.dp.saturating_mul(l.cp))
            }
            _ => l.dp.saturating_mul(l.cp),
        }
    }

    /// The expert-parallel degree in effect: `ep`, at most the data-parallel ranks
    /// `dp·cp` it is carved from (a larger `ep` is flagged as a problem).
    pub fn ep_ranks(&self) -> u32 {
        let l = self.layout();
        let dp_ranks = (l.dp as u64 * l.cp as u64).min(u32::MAX as u64) as u32;
        self.parallel.ep.get().min(dp_ranks)
    }

    /// Selects a model preset and drops the architecture overrides made for the
    /// previous one (the form does this; the URL decoder sets fields one by one).
    pub fn select_model(&mut self, id: &str) {
        self.model = ModelSpec {
            preset: id.to_string(),
            overrides: ArchOverrides::default(),
            params: None,
            largest_layer: None,
        };
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

    /// Every cross-field problem of the scenario: [`Scenario::problems_for`] and the
    /// [`Scenario::ignored_settings`].
    pub fn problems(&self) -> Vec<(&'static str, String)> {
        let mut out = self.problems_for(&self.arch());
        out.extend(self.ignored_settings());
        out
    }

    /// The problems of the scenario's layout and settings together, with the architecture
    /// already resolved: `arch` must be `self.arch()` (the layout explorer resolves it once
    /// per sweep, and lists only layouts without any).
    pub fn problems_for(&self, arch: &Arch) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        let l = self.layout();
        self.layout_problems(arch, &l, &mut out);
        self.sharding_problems(arch, &l, &mut out);
        self.expert_problems(arch, &l, &mut out);
        self.schedule_problems(arch, &l, &mut out);
        self.scope_problems(arch, &l, &mut out);
        out
    }

    /// Settings that do not apply to the rest of the scenario whatever the layout, and so
    /// are ignored or counted as stated (a key for another framework, precision or GPU):
    /// reported, but they disqualify no layout of the explorer.
    pub fn ignored_settings(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        self.hybrid_caveats(&self.arch(), &mut out);
        let qlora = matches!(self.finetune, Tuning::Qlora { .. });
        if !self.numerics.nf4_double_quant
            && !qlora
            && self.numerics.quant != crate::quant::Quant::Nf4
        {
            out.push((
                "double_quant",
                "double_quant applies to finetune=qlora or quant=nf4; it is ignored".into(),
            ));
        }
        let flash_ce = self.runtime.ce_fusion == CeFusion::Flash;
        if self.training() && self.runtime.ce_fusion != CeFusion::Off {
            if flash_ce && self.stack.framework != Framework::Pytorch {
                out.push((
                    "ce_fusion",
                    "ce_fusion=flash is flash-attn's cross-entropy kernel under plain PyTorch (framework=pytorch); ignored"
                        .to_string(),
                ));
            } else if !flash_ce && self.stack.framework != Framework::Megatron {
                out.push((
                    "ce_fusion",
                    "ce_fusion=native and te are Megatron's cross-entropy kernels (framework=megatron); ignored"
                        .to_string(),
                ));
            }
        }
        if self.numerics.grad_acc == GradAcc::Main16 && self.stack.framework != Framework::Megatron
        {
            out.push((
                "grad_acc_dtype",
                "grad_acc_dtype=main16 is Megatron's 16-bit main_grad (framework=megatron); counted as compute".to_string(),
            ));
        }
        if self.runtime.fp8_params
            && (!self.training()
                || self.numerics.precision != Precision::Fp8
                || self.stack.framework != Framework::Megatron
                || self.finetune.kind() != Finetune::Full)
        {
            out.push((
                "fp8_params",
                "fp8_params applies to full fp8 training under Megatron (mode=train, precision=fp8, framework=megatron); ignored".to_string(),
            ));
        }
        if self.runtime.fp8_recipe != Fp8Recipe::Delayed {
            let id = self.cluster.gpu.as_str();
            if !self.training() || self.numerics.precision != Precision::Fp8 {
                out.push((
                    "fp8_recipe",
                    "fp8_recipe applies to fp8 training (mode=train, precision=fp8); ignored"
                        .to_string(),
                ));
            } else if self.runtime.fp8_recipe == Fp8Recipe::Mxfp8 && !crate::gpu::runs_mxfp8(id) {
                out.push((
                    "fp8_recipe",
                    format!("Transformer Engine runs MXFP8 on datacenter Blackwell only (compute capability 10.x); {id} is not — counted as if it ran"),
                ));
            } else if self.runtime.fp8_recipe == Fp8Recipe::Blockwise
                && !crate::gpu::runs_blockwise(id)
            {
                out.push((
                    "fp8_recipe",
                    format!("Transformer Engine runs 1×128 block scaling on Hopper only (compute capability 9.0, CUDA ≥ 12.9); {id} is not — counted as if it ran"),
                ));
            }
        }
        if self.workload.mode == Mode::Serve {
            out.extend(self.serve_problems(&self.arch()));
        }
        out
    }

    /// What memfit does not model yet of a state-space / hybrid model's blocks, said
    /// rather than answered with transformer figures: linear-attention blocks' state
    /// (every mode), the Mamba / convolution blocks' training activations and the serving
    /// engines' hybrid caches.
    fn hybrid_caveats(&self, arch: &Arch, out: &mut Vec<(&'static str, String)>) {
        if !arch.is_hybrid() {
            return;
        }
        if arch.linear_layers > 0 && arch.linear_shape().is_none() {
            out.push((
                "linear_layers",
                format!("the {} linear-attention blocks' conv and recurrent state and activations are not modelled without their gated-DeltaNet shape (lin_k_heads, lin_v_heads, lin_k_dim, lin_v_dim): no KV cache and no state is counted for them, and they train as attention blocks", arch.linear_layers),
            ));
        }
        let gdn = if arch.linear_shape().is_some() {
            arch.linear_layers as u64
        } else {
            0
        };
        let blocks = arch.mamba_layers as u64 + arch.conv_layers as u64 + gdn;
        if blocks == 0 {
            return;
        }
        match self.workload.mode {
            Mode::Train if arch.attention_layers() > 0 || arch.conv_layers > 0 => out.push((
                "mamba_layers",
                format!("training a hybrid: its {} attention (and linear-attention) blocks are counted as transformer blocks (attention + MLP) and each of its {blocks} Mamba / short-convolution / gated-DeltaNet blocks as its mixer plus an MLP (Nemotron-H's separate MLP blocks are approximated so); the layer's backward moments are those of the whole block", arch.attention_layers() as u64 + arch.linear_layers as u64 - gdn),
            )),
            Mode::Train => {}
            Mode::Serve => {
                let e = self.serving.engine;
                let v0 = e == Engine::Vllm && self.serving.version.is_some_and(|v| v < VLLM_V1_FROM);
                if matches!(e, Engine::Sglang | Engine::Trtllm) || v0 {
                    out.push((
                        "mamba_layers",
                        format!("serving: {}'s state cache for the {blocks} Mamba / short-convolution / gated-DeltaNet blocks is not modelled (vLLM V1's hybrid pool and llama.cpp's recurrent state are); its KV pool counts the attention blocks only", if v0 { "vLLM V0" } else { e.as_str() }),
                    ));
                }
            }
            Mode::Infer => {}
        }
    }

    /// The shape, and the degrees against the cluster and the shape (`model`, `dp`, `tp`, `pp`).
    fn layout_problems(&self, arch: &Arch, l: &Layout, out: &mut Vec<(&'static str, String)>) {
        let par = &self.parallel;
        if let Err(e) = arch.check() {
            out.push(("model", format!("model shape: {e}")));
        }
        let model_par = l.tp as u64 * l.pp as u64 * l.cp as u64;
        if par.dp.is_none() && !(l.world as u64).is_multiple_of(model_par) {
            out.push((
                "dp",
                format!(
                    "tp·pp·cp = {model_par} does not divide the {} GPUs; dp set to {}",
                    l.world, l.dp
                ),
            ));
        } else if l.used() != l.world as u128 {
            out.push((
                "dp",
                format!(
                    "dp·tp·pp·cp = {}·{}·{}·{} = {} GPUs, but the cluster has {}·{} = {}",
                    l.dp,
                    l.tp,
                    l.pp,
                    l.cp,
                    l.used(),
                    self.cluster.gpus_per_node,
                    self.cluster.nodes,
                    l.world
                ),
            ));
        }
        if !arch.heads.is_multiple_of(l.tp) {
            out.push((
                "tp",
                format!(
                    "tp = {} does not divide the {} attention heads",
                    l.tp, arch.heads
                ),
            ));
        }
        if l.pp > arch.layers {
            out.push((
                "pp",
                format!("pp = {} is more than the {} layers", l.pp, arch.layers),
            ));
        }
    }
    /// ZeRO stages a framework lacks, and optimizer offload without sharding.
    fn sharding_problems(&self, arch: &Arch, l: &Layout, out: &mut Vec<(&'static str, String)>) {
        let _ = (arch, l);
        let framework = self.stack.framework;
        let z = self.zero();
        if let (Framework::Pytorch, true, Sharding::Zero(stage @ (Zero::Z2 | Zero::Z3))) =
            (framework, self.training(), self.sharding)
        {
            let z2 = stage == Zero::Z2;
            out.push((
                "zero",
                format!(
                    "framework=pytorch has no ZeRO-{} of its own (ZeRO-1 is ZeroRedundancyOptimizer): \
                     fsdp={} is PyTorch's way to shard {}; counted as ZeRO-{} sharding without FSDP's \
                     unsharded buffers",
                    stage.number(),
                    if z2 { "shard_grad_op" } else { "full_shard" },
                    if z2 {
                        "gradients and optimizer states"
                    } else {
                        "parameters too"
                    },
                    stage.number()
                ),
            ));
        }
        if self.offload.optimizer != Offload::None && z == Zero::Z0 {
            out.push((
                "offload_opt",
                "optimizer offload needs ZeRO stage 1, 2 or 3 (or FSDP); counted as if it worked"
                    .to_string(),
            ));
        }
    }
    /// Expert parallelism against the experts and the data-parallel ranks.
    /// Serving follows the engine's rules instead of the two divisibility checks: vLLM and
    /// SGLang carve EP from the `t·d` GPUs of TP × DP, not from `dp·cp` (vLLM's size is
    /// `t·d` whatever `ep` says, SGLang refuses an `ep` not dividing `t·d` or the experts),
    /// TensorRT-LLM and llama.cpp ignore `ep` ([`Scenario::serve_problems`]).
    fn expert_problems(&self, arch: &Arch, l: &Layout, out: &mut Vec<(&'static str, String)>) {
        let ep = self.parallel.ep.get();
        let engine_rules = self.workload.mode == Mode::Serve;
        if arch.experts > 0 && !arch.experts.is_multiple_of(ep) && !engine_rules {
            out.push((
                "ep",
                format!("ep = {ep} does not divide the {} experts", arch.experts),
            ));
        }
        let dp_ranks = l.dp as u64 * l.cp as u64;
        if arch.experts > 0 && ep > 1 && !dp_ranks.is_multiple_of(ep as u64) && !engine_rules {
            out.push((
                "ep",
                format!(
                    "ep = {ep} does not divide the {dp_ranks} data-parallel ranks (dp·cp): expert parallelism splits them; counted with ep = {}",
                    self.ep_ranks()
                ),
            ));
        }
        if arch.experts == 0 && ep > 1 {
            out.push((
                "ep",
                "ep > 1 needs a mixture-of-experts model; ignored".to_string(),
            ));
        }
    }
    /// Pipeline schedules, micro-batches and sequence parallelism.
    fn schedule_problems(&self, arch: &Arch, l: &Layout, out: &mut Vec<(&'static str, String)>) {
        let par = &self.parallel;
        let (pp, vpp) = (par.pp.get(), par.vpp.get());
        let m = self.workload.microbatches.get();
        let framework = self.stack.framework;
        if vpp > 1 && (pp < 2 || !arch.layers.is_multiple_of(pp.saturating_mul(vpp))) {
            out.push((
                "vpp",
                format!(
                    "vpp = {vpp} needs pp > 1 and layers ({}) divisible by pp·vpp; counted as 1F1B",
                    arch.layers
                ),
            ));
        }
        if self.training() && pp > 1 && m < pp {
            out.push((
                "microbatches",
                format!(
                    "{m} micro-batch(es) for {pp} pipeline stages: the pipeline idles; 1F1B needs at least pp micro-batches"
                ),
            ));
        }
        if par.schedule == Schedule::Interleaved && vpp < 2 {
            out.push((
                "vpp",
                "the interleaved schedule needs vpp ≥ 2; counted as 1F1B".to_string(),
            ));
        } else if par.schedule == Schedule::Interleaved
            && self.training()
            && pp > 1
            && framework != Framework::Pytorch
            && !m.is_multiple_of(pp)
        {
            out.push((
                "microbatches",
                format!(
                    "the interleaved schedule runs micro-batches in groups of pp: {m} is not a multiple of pp = {pp} (Megatron-LM asserts it)"
                ),
            ));
        } else if par.schedule == Schedule::Interleaved
            && framework == Framework::Pytorch
            && self.training()
        {
            out.push((
                "schedule",
                "framework=pytorch models the 1F1B and GPipe schedules; interleaved is counted as 1F1B".to_string(),
            ));
        }
        if par.sp && l.tp < 2 {
            out.push((
                "sp",
                "sequence parallelism shards along TP; with tp = 1 it changes nothing".to_string(),
            ));
        }
        if self.runtime.tp_overlap && self.training() && (l.tp < 2 || !par.sp) {
            out.push((
                "tp_overlap",
                "TP communication overlap needs tp ≥ 2 and sequence parallelism (sp=1): Megatron-LM asserts it, Megatron-Bridge turns the overlap off; ignored".to_string(),
            ));
        }
    }
    /// Settings a convention or mode leaves out (fine-tuning under a tool's convention, parameter offload below ZeRO-3, ZeRO in inference, stages a tool's formula lacks).
    fn scope_problems(&self, arch: &Arch, l: &Layout, out: &mut Vec<(&'static str, String)>) {
        let _ = (arch, l);
        let convention = self.stack.convention;
        let z = self.zero();
        if self.finetune != Tuning::Full && (convention.is_deepspeed() || convention.is_megatron())
        {
            out.push((
                "finetune",
                format!(
                    "{} models full training only; LoRA/QLoRA use memfit's accounting",
                    convention.as_str()
                ),
            ));
        }
        if self.offload.params != Offload::None && z != Zero::Z3 {
            out.push((
                "offload_param",
                "parameter offload needs ZeRO stage 3; ignored".to_string(),
            ));
        }
        if !self.training() && z != Zero::Z0 {
            out.push((
                "zero",
                "ZeRO applies to training; ignored in inference".to_string(),
            ));
        }
        if convention.is_deepspeed() && !matches!(z, Zero::Z2 | Zero::Z3) {
            out.push((
                "convention",
                format!(
                    "DeepSpeed's estimators cover ZeRO-2 and ZeRO-3 only; zero={} uses memfit's accounting",
                    z.number()
                ),
            ));
        }
        if convention.is_megatron() && (z > Zero::Z1 || self.offload.optimizer != Offload::None) {
            out.push((
                "convention",
                "Megatron's formula models its distributed optimizer (zero=1) or none (zero=0); ZeRO-2/3 and offload are not in it".to_string(),
            ));
        }
    }
}

/// The device total `cudaMemGetInfo` reports, where public logs or device queries give
/// it (smaller than `nvidia-smi memory.total` by what the driver keeps): `(gpu id, MiB·2^20
/// or bytes)`. Other GPUs: the preset's capacity less 512 MiB.
///
/// Source: deviceQuery / `torch.cuda.get_device_properties` output in public files (see
/// docs/serving.md): H100 80 GB 85,029,158,912 B (79.19 GiB, as vLLM's logs print).
pub const CUDA_TOTAL: &[(&str, u64)] = &[
    ("h100-80", 85_029_158_912),
    ("h100-pcie", 85_029_158_912),
    ("a100-80", 85_093_777_408),
    ("a100-40", 40_536 * MIB),
    ("l40s", 45_589 * MIB),
    ("rtx4090", 24_563 * MIB),
    ("h200", 143_156 * MIB),
];

/// vLLM's first V1 release (the V0 engine is ≤ 0.7).
pub const VLLM_V1_FROM: Version = Version(0, 8, 0);
/// vLLM's `--enable-expert-parallel` first release (not in 0.7.3's `arg_utils.py`).
pub const VLLM_EP_FROM: Version = Version(0, 8, 0);
/// vLLM's first release with `--quantization mxfp4` (gpt-oss).
///
/// Source: vLLM sdists 0.10.0 (no `quantization/mxfp4.py`) and 0.10.1 (`Mxfp4Config`).
pub const VLLM_MXFP4_FROM: Version = Version(0, 10, 1);
/// vLLM's first release whose MXFP4 config loads a linear layer unquantized instead of
/// raising `NotImplementedError("Mxfp4 linear layer is not implemented")`.
///
/// Source: vLLM `model_executor/layers/quantization/mxfp4.py Mxfp4Config.get_quant_method`
/// (raises in 0.10.1–0.11.0; `UnquantizedLinearMethod()` with a debug log from 0.11.1,
/// through 0.33.0).
pub const VLLM_MXFP4_LINEAR_FALLBACK: Version = Version(0, 11, 1);

impl Engine {
    /// The newest release memfit models (what an empty `engine_version` means).
    pub fn newest(self) -> Version {
        match self {
            Engine::Vllm => Version(0, 33, 0),
            Engine::Sglang => Version(0, 5, 3),
            Engine::Trtllm => Version(1, 0, 0),
            Engine::Llamacpp => Version(7300, 0, 0),
        }
    }
    /// The releases memfit models, `(oldest, newest)`: what its sources were read at
    /// (docs/serving.md, "Sources read"). Patch releases of the newest minor count as
    /// modelled; llama.cpp's build numbers are not checked (every build is read with one
    /// set of rules; the build decides only `flash_attn=auto`'s default, off before b6325).
    ///
    /// Source: vLLM's PyPI sdists 0.6.6.post1 … 0.33.0; SGLang's 0.4.0 … 0.5.3 (the newest
    /// whose `mem_fraction_static` rule is modelled); TensorRT-LLM 1.0.
    pub fn modelled(self) -> Option<(Version, Version)> {
        match self {
            Engine::Vllm => Some((Version(0, 6, 6), self.newest())),
            Engine::Sglang => Some((Version(0, 4, 0), self.newest())),
            Engine::Trtllm => Some((Version(1, 0, 0), self.newest())),
            Engine::Llamacpp => None,
        }
    }
    /// The engine's name as its project writes it.
    pub fn label(self) -> &'static str {
        match self {
            Engine::Vllm => "vLLM",
            Engine::Sglang => "SGLang",
            Engine::Trtllm => "TensorRT-LLM",
            Engine::Llamacpp => "llama.cpp",
        }
    }
}

impl Scenario {
    /// The device total a serving engine sees (`cudaMemGetInfo`), bytes: `gpu_mem` when
    /// set, else [`CUDA_TOTAL`]'s figure, else the capacity less 512 MiB.
    pub fn cuda_total(&self) -> u64 {
        if self.cluster.gpu_mem_mib.is_some() {
            return self.usable_bytes();
        }
        CUDA_TOTAL
            .iter()
            .find(|(id, _)| *id == self.cluster.gpu)
            .map_or(self.usable_bytes().saturating_sub(512 * MIB), |(_, b)| *b)
    }

    /// The serving engine's release whose rules apply: `engine_version` (empty: the newest
    /// modelled) when inside [`Engine::modelled`]'s range; `Err((asked, used))` outside it,
    /// `used` the nearest end.
    pub fn engine_release(&self) -> Result<Version, (Version, Version)> {
        let e = self.serving.engine;
        let v = self.serving.version.unwrap_or(e.newest());
        let Some((lo, hi)) = e.modelled() else {
            return Ok(v);
        };
        if v < lo {
            Err((v, lo))
        } else if v > Version(hi.0, hi.1, u16::MAX) {
            Err((v, hi))
        } else {
            Ok(v)
        }
    }

    /// What memfit takes from a serving scenario but the engine would not, as named
    /// warnings; what the engine refuses is the serve plan's `error` instead, in the
    /// engine's words (`serve::Plan`).
    ///
    /// - `engine_version` outside the releases memfit models ([`Engine::modelled`]): the
    ///   nearest modelled release's rules are used, and named.
    /// - `quant=mxfp4` under vLLM before 0.10.1 (no `--quantization mxfp4`), or on a dense
    ///   model from 0.11.1 (`Mxfp4Config.get_quant_method` loads linear layers unquantized:
    ///   vLLM's MXFP4 path is the MoE experts', as in gpt-oss; 0.10.1–0.11.0 refuse).
    /// - `gpu_util` under vLLM's V0 engine (≤ 0.7) above `(M_total − ctx)/M_total`: V0 has
    ///   no start-up check (0.9.1 added one); its budget and the CUDA context outside it
    ///   exceed the device.
    /// - a `kv_dtype` memfit does not model TensorRT-LLM with (llama.cpp's block types,
    ///   int8, int4).
    ///
    /// Source: vLLM `model_executor/layers/quantization/mxfp4.py` (0.10.1–0.33.0),
    /// `worker/worker.py determine_num_available_blocks` (0.6.6.post1, 0.7.3),
    /// `v1/worker/gpu_worker.py init_device` (0.9.1).
    pub fn serve_problems(&self, arch: &Arch) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        let e = self.serving.engine;
        let name = e.label();
        let v = match self.engine_release() {
            Ok(v) => v,
            Err((asked, used)) => {
                if let Some((lo, hi)) = e.modelled() {
                    out.push((
                        "engine_version",
                        format!(
                            "memfit models {name} {lo} to {}.{}.x; {asked} is outside that range, so {used}'s rules are used",
                            hi.0, hi.1
                        ),
                    ));
                }
                used
            }
        };
        if e == Engine::Vllm && self.numerics.quant == crate::quant::Quant::Mxfp4 {
            if v < VLLM_MXFP4_FROM {
                out.push((
                    "quant",
                    format!("vLLM {v} has no mxfp4 quantization (it arrived in {VLLM_MXFP4_FROM}, for gpt-oss); counted as if it had"),
                ));
            } else if arch.experts == 0 && v >= VLLM_MXFP4_LINEAR_FALLBACK {
                out.push((
                    "quant",
                    format!("vLLM {v} quantises only MoE experts with mxfp4 (gpt-oss-style checkpoints); a dense model's linear layers load unquantized (UnquantizedLinearMethod), but memfit counts them as MXFP4"),
                ));
            }
        }
        if let (Engine::Vllm, true, Some(u)) = (e, v < VLLM_V1_FROM, self.serving.gpu_util) {
            let total = self.cuda_total() as f64;
            let ctx = self.runtime.cuda_ctx_mib as f64 * MIB as f64;
            if total * u + ctx > total {
                out.push((
                    "gpu_util",
                    format!("gpu_util={u} leaves no room for the CUDA context ({} MiB) beside vLLM {v}'s budget: the V0 engine has no start-up check (0.9.1 added one) and would run out of memory allocating the KV cache or capturing CUDA graphs", self.runtime.cuda_ctx_mib),
                ));
            }
        }
        self.serve_ep_problems(arch, v, &mut out);
        self.llamacpp_only_problems(&mut out);
        let d = self.numerics.kv_dtype;
        if e == Engine::Trtllm && (d.is_ggml() || d.is_integer()) {
            out.push((
                "kv_dtype",
                format!("kv_dtype={} is not a cache type memfit models for TensorRT-LLM; counted as if TensorRT-LLM had it", d.as_str()),
            ));
        }
        out
    }
    /// llama.cpp's own keys (`flash_attn`, `ngl`, `kv_offload`) set under another engine,
    /// which has no such setting: each named and ignored.
    fn llamacpp_only_problems(&self, out: &mut Vec<(&'static str, String)>) {
        let sv = &self.serving;
        if sv.engine == Engine::Llamacpp {
            return;
        }
        let name = sv.engine.label();
        let set = [
            ("flash_attn", sv.flash_attn != FlashAttn::Auto),
            ("ngl", sv.ngl.is_some()),
            ("kv_offload", !sv.kv_offload),
        ];
        for (key, on) in set {
            if on {
                out.push((
                    key,
                    format!(
                        "`{key}` is llama.cpp's setting (engine=llamacpp); ignored under {name}"
                    ),
                ));
            }
        }
    }
    /// `ep > 1` on a mixture of experts as each engine reads it: vLLM's EP size is `t·d`
    /// whatever `ep` says (`--enable-expert-parallel` is a switch; with `t·d = 1` it does
    /// nothing), TensorRT-LLM's and llama.cpp's expert parallelism is not modelled.
    ///
    /// Source: vLLM `model_executor/layers/fused_moe/layer.py` (`ep_size = tp_size ·
    /// dp_size`) and `fused_moe/config.py FusedMoEParallelConfig.make` (the serving
    /// engines' `expert_split`).
    fn serve_ep_problems(&self, arch: &Arch, v: Version, out: &mut Vec<(&'static str, String)>) {
        let ep = self.parallel.ep.get();
        if arch.experts == 0 || ep <= 1 {
            return;
        }
        let l = self.layout();
        let td = l.tp as u64 * l.dp as u64;
        match self.serving.engine {
            Engine::Vllm if v >= VLLM_EP_FROM => {
                if td <= 1 {
                    out.push((
                        "ep",
                        format!("vLLM's expert parallelism spreads the experts over tp·dp = 1 GPU, so it does nothing: ep = {ep} ignored, counted without expert parallelism"),
                    ));
                } else if td != ep as u64 {
                    out.push((
                        "ep",
                        format!("vLLM's EP size is tp·dp = {td} whenever --enable-expert-parallel is on (ep only switches it on): counted with EP = {td}, not ep = {ep}"),
                    ));
                }
            }
            Engine::Trtllm | Engine::Llamacpp => out.push((
                "ep",
                format!("expert parallelism is not modelled for {}: ep = {ep} ignored, every GPU holds every expert ÷ tp", self.serving.engine.label()),
            )),
            _ => {}
        }
    }
}
