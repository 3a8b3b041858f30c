//! What a scenario cannot do as given: the problems the estimate warns about (layout,
//! sharding, experts, schedule, scope, a hybrid's caveats) and the settings every layout
//! ignores.

use super::*;

impl Scenario {
    /// Every cross-field problem of the scenario: [`Scenario::problems_for`] and the
    /// [`Scenario::ignored_settings`]. A serving engine's own checks
    /// ([`Scenario::serve_problems`]) are the serve plan's notes, which the estimate lists
    /// with these.
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
        self.other_mode_settings(&mut out);
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
        out
    }

    /// State-shape keys set on a model without state blocks (no `mamba_layers`,
    /// `conv_layers` or `linear_layers`): named once, with every such key, as ignored.
    fn inert_state_keys(&self, out: &mut Vec<(&'static str, String)>) {
        let o = &self.model.overrides;
        let set: Vec<&'static str> = [
            ("ssm_version", o.ssm_version.is_some()),
            ("ssm_inner", o.ssm_inner.is_some()),
            ("ssm_state", o.ssm_state.is_some()),
            ("ssm_groups", o.ssm_groups.is_some()),
            ("ssm_heads", o.ssm_heads.is_some()),
            ("ssm_conv", o.ssm_conv.is_some()),
            ("ssm_chunk", o.ssm_chunk.is_some()),
            ("ssm_dtype", o.ssm_dtype.is_some()),
            ("lin_k_heads", o.lin_k_heads.is_some()),
            ("lin_v_heads", o.lin_v_heads.is_some()),
            ("lin_k_dim", o.lin_k_dim.is_some()),
            ("lin_v_dim", o.lin_v_dim.is_some()),
            ("lin_kind", o.lin_kind.is_some()),
        ]
        .into_iter()
        .filter_map(|(k, on)| on.then_some(k))
        .collect();
        if let Some(first) = set.first() {
            out.push((
                first,
                format!("{} shape{} state blocks (Mamba, short convolution, linear attention), and this model has none (set mamba_layers, conv_layers or linear_layers): ignored", set.join(", "), if set.len() == 1 { "s" } else { "" }),
            ));
        }
    }

    /// A hybrid preset's exact count holds for its own shape only: said when the shape is
    /// overridden without an explicit `params`.
    fn exact_count_caveat(&self, arch: &Arch, out: &mut Vec<(&'static str, String)>) {
        let p = self.preset();
        if let Some(e) = p.exact.filter(|_| self.model.overrides.any()) {
            if self.model.params.is_none() {
                out.push((
                    "model",
                    format!("{}'s exact count ({} parameters, from its config.json) holds for its own shape only: with the shape overridden, Ψ is counted as {} transformer blocks ({} parameters); set params, or import a config.json, for an exact count", p.name, crate::units::group_digits(e.params), arch.layers, crate::units::group_digits(arch.params().total)),
                ));
            }
        }
    }

    /// The linear-attention blocks: without their shape nothing of them is modelled;
    /// lightning attention's state is, its training activations and llama.cpp are not.
    fn linear_caveats(&self, arch: &Arch, out: &mut Vec<(&'static str, String)>) {
        let n = arch.linear_layers;
        if n > 0 && arch.modelled_linear_layers() == 0 {
            out.push((
                "linear_layers",
                format!("the {n} linear-attention blocks' state and activations are not modelled without their shape (gated DeltaNet: lin_k_heads, lin_v_heads, lin_k_dim, lin_v_dim; lightning: lin_kind=lightning, lin_v_heads, lin_v_dim): no KV cache and no state is counted for them, and they train as attention blocks"),
            ));
        }
        if arch.lightning_shape().is_none() {
            return;
        }
        match self.workload.mode {
            Mode::Train => out.push((
                "lin_kind",
                format!("training: the {n} lightning-attention blocks' saved tensors are not modelled; they are counted as attention blocks (attention + MLP)"),
            )),
            Mode::Serve if self.serving.engine == Engine::Llamacpp => out.push((
                "lin_kind",
                format!("serving: llama.cpp has no lightning-attention architecture (its MiniMax support is MiniMax-M2's, full attention): the {n} lightning blocks' state is not counted"),
            )),
            _ => {}
        }
    }

    /// What memfit does not model yet of a state-space / hybrid model's blocks, said
    /// rather than answered with transformer figures: linear-attention blocks' state
    /// without their shape (every mode), the Mamba / convolution blocks' training
    /// activations and the serving engines' hybrid caches.
    fn hybrid_caveats(&self, arch: &Arch, out: &mut Vec<(&'static str, String)>) {
        self.exact_count_caveat(arch, out);
        if !arch.is_hybrid() {
            self.inert_state_keys(out);
            return;
        }
        self.linear_caveats(arch, out);
        let linear = arch.modelled_linear_layers() as u64;
        let gdn = if arch.linear_shape().is_some() {
            linear
        } else {
            0
        };
        let trained = arch.mamba_layers as u64 + arch.conv_layers as u64 + gdn;
        let blocks = arch.mamba_layers as u64 + arch.conv_layers as u64 + linear;
        if blocks == 0 {
            return;
        }
        match self.workload.mode {
            Mode::Train if trained > 0 && (arch.attention_layers() > 0 || arch.conv_layers > 0) => out.push((
                "mamba_layers",
                format!("training a hybrid: its {} attention (and linear-attention) blocks are counted as transformer blocks (attention + MLP) and each of its {trained} Mamba / short-convolution / gated-DeltaNet blocks as its mixer plus an MLP (Nemotron-H's separate MLP blocks are approximated so); the layer's backward moments are those of the whole block", arch.attention_layers() as u64 + arch.linear_layers as u64 - gdn),
            )),
            Mode::Train => {}
            Mode::Serve => {
                let e = self.serving.engine;
                let v0 = e == Engine::Vllm && self.serving.version.is_some_and(|v| v < VLLM_V1_FROM);
                // SGLang's state cache is modelled from 0.5.2 for Mamba-2 and gated DeltaNet.
                let sglang_state = e == Engine::Sglang
                    && arch.states_mamba2_or_gdn()
                    && self.engine_release().unwrap_or_else(|(_, used)| used) >= Version(0, 5, 2, 0);
                if (matches!(e, Engine::Sglang | Engine::Trtllm) && !sglang_state) || v0 {
                    out.push((
                        "mamba_layers",
                        format!("serving: {}'s state cache for the {blocks} Mamba / short-convolution / linear-attention blocks is not modelled (vLLM V1's hybrid pool, llama.cpp's recurrent state and SGLang's from 0.5.2 for Mamba-2 and gated-DeltaNet blocks are); its KV pool counts the attention blocks only", if v0 { "vLLM V0" } else { e.as_str() }),
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
        let model_par = l.tp.get() as u64 * l.pp.get() as u64 * l.cp.get() as u64;
        if par.dp.is_none() && !(l.world.get() as u64).is_multiple_of(model_par) {
            out.push((
                "dp",
                format!(
                    "tp·pp·cp = {model_par} does not divide the {} GPUs; dp set to {}",
                    l.world, l.dp
                ),
            ));
        } else if l.used() != l.world.get() as u128 {
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
        if !arch.heads.get().is_multiple_of(l.tp.get()) {
            out.push((
                "tp",
                format!(
                    "tp = {} does not divide the {} attention heads",
                    l.tp, arch.heads
                ),
            ));
        }
        if l.pp.get() > arch.layers.get() {
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
        if self.offload.optimizer != Offload::None && z == Zero::Z0 && self.training() {
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
        // Serving follows the engines' rules; inference ignores `ep` (its own warning below).
        let engine_rules = self.workload.mode != Mode::Train;
        if arch.experts > 0 && !arch.experts.is_multiple_of(ep) && !engine_rules {
            out.push((
                "ep",
                format!("ep = {ep} does not divide the {} experts", arch.experts),
            ));
        }
        let dp_ranks = l.dp.get() as u64 * l.cp.get() as u64;
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
        } else if ep > 1 && self.workload.mode == Mode::Infer {
            out.push((
                "ep",
                format!("mode=infer is one model per replica (transformers' generate): each of the {} replicas holds all {} experts, so ep = {ep} is ignored; expert parallelism is a serving engine's (mode=serve with vLLM or SGLang)", l.dp, arch.experts),
            ));
        }
        if self.runtime.ep_overlap && self.training() && (arch.experts == 0 || self.ep_ranks() < 2)
        {
            out.push((
                "ep_overlap",
                "the expert-parallel all-to-all overlap needs an MoE model with ep ≥ 2 (Megatron-Core asserts expert_model_parallel_size > 1); ignored".to_string(),
            ));
        }
    }
    /// Pipeline schedules, micro-batches and sequence parallelism.
    fn schedule_problems(&self, arch: &Arch, l: &Layout, out: &mut Vec<(&'static str, String)>) {
        // Inference and serving run no pipeline schedule: their `vpp`, `schedule` and
        // `microbatches` are named as another mode's keys (`other_mode_settings`).
        if !self.training() {
            return;
        }
        let par = &self.parallel;
        let (pp, vpp) = (par.pp.get(), par.vpp.get());
        let m = self.workload.microbatches.get();
        let framework = self.stack.framework;
        if vpp > 1 && (pp < 2 || !arch.layers.get().is_multiple_of(pp.saturating_mul(vpp))) {
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
        if par.sp && l.tp.get() < 2 {
            out.push((
                "sp",
                "sequence parallelism shards along TP; with tp = 1 it changes nothing".to_string(),
            ));
        }
        if self.runtime.tp_overlap && self.training() && (l.tp.get() < 2 || !par.sp) {
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
