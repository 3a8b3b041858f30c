//! Model states under the DeepSpeed, Megatron and memfit conventions: weights, adapters,
//! gradients, fp32 master weights, optimizer states, ZeRO-3's gathered layer and NVMe
//! staging — each item's bytes and formula text from one `Expr`.

use super::*;

/// What every model-state mechanism of one stage reads: the stage's parameters, the
/// shard degrees, the trained parameters, and how to write them in a formula.
pub(crate) struct StateCtx<'a> {
    pub(crate) s: &'a Scenario,
    pub(crate) arch: &'a Arch,
    pub(crate) st: &'a Stage,
    /// Whole-model `Ψ`.
    pub(crate) psi_total: u64,
    /// This stage's `Ψ_i`.
    pub(crate) psi: u64,
    /// `Ψ_i` with the routed experts divided by `ep` (unpartitioned copies).
    pub(crate) psi_ep: u64,
    /// Routed-expert parameters on this stage.
    pub(crate) experts: u64,
    /// Largest layer `L`.
    pub(crate) largest: u64,
    /// Compute bytes `k`.
    pub(crate) k: u64,
    /// TP degree `t`.
    pub(crate) t: u64,
    /// Effective ZeRO stage.
    pub(crate) z: Zero,
    /// GPUs per node (for host-RAM items).
    pub(crate) per_node: u64,
    /// What ZeRO divides by `N_s`: weights, gradients, optimizer states and master.
    pub(crate) w_div: u64,
    pub(crate) g_div: u64,
    pub(crate) o_div: u64,
    /// Trained parameters (all, or the LoRA adapters) and their bytes each.
    pub(crate) trained: u64,
    pub(crate) train_bytes: u64,
}

/// The rows FSDP2 adds to the routed experts' weights: `fully_shard` splits each
/// parameter along dim 0 into `N_s` equal shards, padding dim 0 up to a multiple of `N_s`;
/// transformers 5 stores a layer's experts as 3-D tensors `[E, ·, ·]`, so with more ranks
/// than experts every rank holds (and every all-gather moves) `⌈E/N_s⌉` experts' worth.
///
/// # Formula
/// ```text
/// Ψ_pad − Ψ = Ψ_E·(N_s·⌈E/N_s⌉ − E)/E      FSDP, N_s ∤ E; else 0
/// ```
/// `Ψ_E` the (stage's) routed expert parameters, `E` experts per layer, `N_s` the
/// sharding degree.
/// Source: PyTorch FSDP2 `fully_shard` (`_chunk_with_empty` / padded dim-0 sharding);
/// transformers 5 `MixtralExperts` (fused `gate_up_proj` / `down_proj`); measured with
/// FSDPMemTracker (`tools/measure_hf.py`, Mixtral, 8 experts on 32 ranks: UNSHARDED_PARAM
/// 133.7 MB, the calibration run −62 % before).
///
/// # Example
/// 8 experts of 2·3·384·768 = 1,769,472 parameters per layer, N_s = 32: the padding is
/// 1,769,472·(32·1 − 8)/8 = 5,308,416 parameters per layer (the experts ×4).
pub(crate) fn fsdp_expert_padding(s: &Scenario, arch: &Arch, experts: u64, div: u64) -> u128 {
    let e = arch.experts as u64;
    if s.fsdp() == Fsdp::None || e == 0 || div <= 1 || e.is_multiple_of(div) {
        return 0;
    }
    // Exact in 128 bits: 2^64 experts' parameters times 2^64 rows cannot overflow 2^128
    // before the division by E (the figures it feeds divide by N_s again).
    let rows = div as u128 * e.div_ceil(div) as u128;
    experts as u128 * (rows - e as u128) / e as u128
}

impl<'a> StateCtx<'a> {
    pub(crate) fn new(
        s: &'a Scenario,
        arch: &'a Arch,
        psi_total: u64,
        largest: u64,
        l: &Layout,
        st: &'a Stage,
    ) -> Self {
        let ns = s.shard_degree().get() as u64;
        let z = s.zero();
        let psi = st.share(psi_total);
        // Expert parallelism: each rank holds 1/ep of the routed experts. States that ZeRO
        // partitions are unchanged by it (experts are partitioned over the expert-data-parallel
        // group, N_s/ep ranks, which gives the same bytes per rank); unpartitioned copies shrink.
        let experts = st.share(arch.routed_expert_params()).min(psi);
        let psi_ep = psi - experts + experts.div_ceil(s.ep_ranks() as u64);
        let (w_div, g_div, o_div) = shard_divisors(z, ns);
        let (trained, train_bytes) = match s.finetune.kind() {
            Finetune::Full => (psi, s.numerics.precision.compute_bytes()),
            Finetune::Lora | Finetune::Qlora => (
                st.share(lora_params(arch, s.finetune.rank(), s.finetune.targets())),
                4,
            ),
        };
        StateCtx {
            s,
            arch,
            st,
            psi_total,
            psi,
            psi_ep,
            experts,
            largest,
            k: s.numerics.precision.compute_bytes(),
            t: l.tp.get() as u64,
            z,
            per_node: l.gpus_per_node.get().min(l.world.get()) as u64,
            w_div,
            g_div,
            o_div,
            trained,
            train_bytes,
        }
    }
    pub(crate) fn ep_on(&self) -> bool {
        self.s.ep_ranks() > 1 && self.experts > 0
    }
    /// `Ψ` or `Ψ_i` (a pipeline stage's share).
    pub(crate) fn psym(&self) -> &'static str {
        if self.st.p.get() > 1 {
            "Ψ_i"
        } else {
            "Ψ"
        }
    }
    /// The share of the trained parameters a rank holds:
    /// `⌈b·Ψ/(t·N_s)⌉` (`N_s` only when `div > 1`; `Ψ_i` on a pipeline stage, `Ψ_ep`
    /// with unpartitioned routed experts, `Ψ_a` for adapters).
    pub(crate) fn share_expr(&self, bytes_per: u64, div: u64) -> Expr {
        if self.s.finetune.kind() != Finetune::Full {
            return self.div_expr(bytes_per, "Ψ_a", self.trained, div);
        }
        self.full_expr(bytes_per, div)
    }
    /// `⌈b·Ψ/(t·N_s)⌉` of the whole-model states (`Ψ_ep` when unpartitioned and routed
    /// experts are spread over `ep`).
    pub(crate) fn full_expr(&self, bytes_per: u64, div: u64) -> Expr {
        let pad = fsdp_expert_padding(self.s, self.arch, self.experts, div);
        if div > 1 && pad > 0 {
            return self.div_expr_wide(bytes_per, "Ψ_pad", self.psi as u128 + pad, div);
        }
        let (sym, n) = if div > 1 {
            (self.psym(), self.psi)
        } else if self.ep_on() {
            (
                if self.st.p.get() > 1 {
                    "Ψ_i,ep"
                } else {
                    "Ψ_ep"
                },
                self.psi_ep,
            )
        } else {
            (self.psym(), self.psi_ep)
        };
        self.div_expr(bytes_per, sym, n, div)
    }
    /// QLoRA's frozen base (see [`nf4_bytes`]) as an expression, ÷ `t·[N_s]`:
    /// `⌈(⌈Ψ_q/2⌉ + ⌈Ψ_q/64⌉ + 4·⌈Ψ_q/16384⌉ + r·(Ψ − Ψ_q))/(t·[N_s])⌉` with double
    /// quantisation, `⌈(⌈Ψ_q/2⌉ + 4·⌈Ψ_q/64⌉ + r·(Ψ − Ψ_q))/(t·[N_s])⌉` without.
    pub(crate) fn nf4_expr(&self) -> Expr {
        let q = Sym("Ψ_q", quantisable_share(self.arch, self.psi) as u128);
        // PEFT's prepare_model_for_kbit_training casts the parameters left unquantised
        // (embedding, norms, LM head) to fp32; other stacks keep them in 16 bits.
        let r = if self.s.stack.framework == Framework::Pytorch {
            4
        } else {
            2
        };
        let psi = Sym(self.psym(), self.psi as u128);
        let codes = Expr::new(&[q, Num(2), DivCeil]);
        let e = if self.s.finetune.double_quant() {
            codes.then(&[
                q,
                Num(64),
                DivCeil,
                Add,
                Num(4),
                q,
                Num(16_384),
                DivCeil,
                Mul,
                Add,
            ])
        } else {
            codes.then(&[Num(4), q, Num(64), DivCeil, Mul, Add])
        };
        let e = e.then(&[Sym("r", r), psi, q, Sub, Mul, Add, Sym("t", self.t as u128)]);
        if self.w_div > 1 {
            e.then(&[Sym("N_s", self.w_div as u128), Mul, DivCeil])
        } else {
            e.then(&[DivCeil])
        }
    }
    /// `⌈b·X/(t·N_s)⌉` of a count `X` named `sym` (`N_s` only when `div > 1`).
    pub(crate) fn div_expr(&self, bytes_per: u64, sym: &'static str, n: u64, div: u64) -> Expr {
        self.div_expr_wide(bytes_per, sym, n as u128, div)
    }
    /// [`div_expr`](Self::div_expr) of a count that may pass 2^64 (exact in 128 bits).
    pub(crate) fn div_expr_wide(
        &self,
        bytes_per: u64,
        sym: &'static str,
        n: u128,
        div: u64,
    ) -> Expr {
        let head = Expr::new(&[
            Num(bytes_per as u128),
            Sym(sym, n),
            Mul,
            Sym("t", self.t as u128),
        ]);
        if div > 1 {
            head.then(&[Sym("N_s", div as u128), Mul, DivCeil])
        } else {
            head.then(&[DivCeil])
        }
    }
    /// `e` per node of host RAM (`·n`) when `loc` is not the GPU.
    pub(crate) fn at_expr(&self, loc: Location, e: Expr) -> Expr {
        if loc == Location::Gpu {
            e
        } else {
            e.then(&[Sym("n", self.per_node as u128), Mul])
        }
    }
    /// What the symbols of `share_expr` stand for: the stage, the experts, the adapters,
    /// and why host items count per node (`what`, the offload key).
    pub(crate) fn context(&self, loc: Location, what: &str) -> String {
        let mut out = Vec::new();
        if self.st.p.get() > 1 {
            out.push(format!(
                "stage {} of {}, Ψ={}",
                self.st.i, self.st.p, self.psi_total
            ));
        }
        if self.ep_on() {
            out.push(format!(
                "routed experts {}/ep, ep={}",
                self.experts,
                self.s.ep_ranks()
            ));
        }
        if self.s.finetune.kind() != Finetune::Full {
            let (r, targets) = (self.s.finetune.rank(), self.s.finetune.targets().as_str());
            out.push(format!("Ψ_a: r={r}, targets={targets}"));
        }
        if loc != Location::Gpu {
            out.push(format!("n = GPUs per node ({what})"));
        }
        out.join("; ")
    }
    /// Where the ZeRO-3 parameter partition lives.
    pub(crate) fn weights_loc(&self) -> Location {
        if self.z == Zero::Z3 {
            place(self.s.offload.params)
        } else {
            Location::Gpu
        }
    }
}

/// Megatron-Bridge's fp8 recipes (`mixed_precision.py`: `cfg.fp8_param_gather = True`).
const SRC_FP8_PARAMS: &str = "Megatron-Core fp8_param_gather / Transformer Engine fp8_model_init: the module weights are Float8Tensors (1 B), the fp32 master stays in the optimizer (Megatron-Bridge mixed_precision.py, bf16_with_fp8_*_mixed)";

/// Whether fp8 training keeps the weights themselves in fp8 (`fp8_params=1`, Megatron, fp8,
/// full training).
pub(crate) fn fp8_params(s: &Scenario) -> bool {
    s.runtime.fp8_params
        && s.numerics.precision == Precision::Fp8
        && s.stack.framework == Framework::Megatron
        && s.finetune.kind() == Finetune::Full
}

/// The model's weights: `k·Ψ_i/t` (÷ N_s under ZeRO-3), an fp8 copy under fp8
/// training, the frozen base of LoRA, or QLoRA's NF4 base.
///
/// # Formula
/// ```text
/// full / LoRA:  k·Ψ_i/(t·[N_s])            fp8 adds 1·Ψ_i/(t·[N_s])
/// fp8_params:    1·Ψ_i/(t·[N_s]) + 1·Ψ_i/(t·[N_s])   (fp8 weights and their transpose /
///                                                      column-wise copy; no 16-bit copy)
/// QLoRA:        (nf4(Ψ_q) + r·(Ψ − Ψ_q))/(t·[N_s])   r = 4 under PEFT (fp32 cast), else 2
/// ```
pub(crate) fn weight_items(c: &StateCtx, ledger: &mut Ledger) {
    let (s, k) = (c.s, c.k);
    let loc = c.weights_loc();
    let ctx = || c.context(loc, "offload_param");
    match s.finetune.kind() {
        Finetune::Full => {
            let fp8_params = fp8_params(s);
            let e = c.at_expr(loc, c.full_expr(if fp8_params { 1 } else { k }, c.w_div));
            let (note, src) = if fp8_params {
                ("fp8 weights (fp8_param_gather)", SRC_FP8_PARAMS)
            } else {
                ("", SRC_ZERO)
            };
            ledger.push_expr(
                &[],
                Mech::Weights,
                Component::Weights,
                loc,
                &e,
                note,
                ctx,
                src,
            );
            if s.numerics.precision == Precision::Fp8 {
                // One copy of the weights this rank holds: its experts only under EP (as the
                // 16-bit weights above).
                let e = c.at_expr(loc, c.full_expr(1, c.w_div));
                ledger.push_expr(
                    &[],
                    Mech::Fp8Copies,
                    Component::Weights,
                    loc,
                    &e,
                    "fp8 weight copies",
                    ctx,
                    "NVIDIA Transformer Engine FP8 training (bf16 weights + cached fp8 copies)",
                );
            }
        }
        Finetune::Lora => {
            let e = c.at_expr(loc, c.full_expr(k, c.w_div));
            let note = "frozen base";
            ledger.push_expr(
                &[],
                Mech::FrozenBase,
                Component::Weights,
                loc,
                &e,
                note,
                ctx,
                SRC_LORA,
            );
        }
        Finetune::Qlora => {
            let e = c.at_expr(loc, c.nf4_expr());
            let note = "frozen NF4 base: codes, absmax per 64 (8-bit + fp32 per 256 blocks with double quantisation), r-byte rest; r = 4 under PEFT, else 2";
            ledger.push_expr(
                &[],
                Mech::Nf4Base,
                Component::Weights,
                loc,
                &e,
                note,
                ctx,
                SRC_QLORA,
            );
        }
    }
}

/// LoRA/QLoRA adapters, trained in fp32: `4·Ψ_a/t`.
pub(crate) fn adapter_items(c: &StateCtx, ledger: &mut Ledger) {
    if c.s.finetune.kind() == Finetune::Full {
        return;
    }
    let e = c.share_expr(4, 1);
    let ctx = || c.context(Location::Gpu, "");
    let (mech, comp, loc) = (Mech::Adapters, Component::Weights, Location::Gpu);
    ledger.push_expr(&[], mech, comp, loc, &e, "fp32 adapters", ctx, SRC_LORA);
}

/// Gradients: `g·Ψ_i/t` (÷ N_s from ZeRO-2), in the compute dtype, in fp32
/// (`grad_acc_dtype=fp32`, and Megatron's `main_grad` by default), or both; Megatron's
/// `main_grad` in the compute dtype with `grad_acc_dtype=main16` (`grad_reduce_in_fp32 =
/// False`, Megatron-Bridge 25.11–26.06 performance recipes, `llama3_llm_pretrain.py`).
///
/// # Formula
/// ```text
/// compute: ⌈k·Ψ_i/(t·[N_s])⌉    fp32: ⌈4·Ψ_i/(t·[N_s])⌉    both: the two items
/// adapters: ⌈4·Ψ_a/(t·[N_s])⌉
/// ```
/// Source: seed 003 (16 vs 18 vs 20 B/param).
///
/// # Example
/// Llama-2-7B (Ψ = 6,738,415,616), bf16, ZeRO-2 on 8 GPUs: ⌈2·Ψ/(1·8)⌉ = 1,684,603,904 B.
pub(crate) fn gradient_items(c: &StateCtx, ledger: &mut Ledger) {
    let (s, k, div) = (c.s, c.k, c.g_div);
    let phases = adapter_grad_phases(s);
    // Megatron accumulates into fp32 main_grad buffers unless told to reduce in 16 bits
    // (`main16`: Megatron-Bridge's performance recipes set `grad_reduce_in_fp32 = False`).
    let grad_acc = match (s.stack.framework, s.numerics.grad_acc) {
        (Framework::Megatron, GradAcc::Compute) => GradAcc::Fp32,
        (_, g) => g,
    };
    let mut push = |bytes_per: u64, note: &'static str, src: &'static str| {
        let e = c.share_expr(bytes_per, div);
        let ctx = || c.context(Location::Gpu, "");
        let (mech, comp, loc) = (Mech::Gradients, Component::Gradients, Location::Gpu);
        let ph: &[Phase] = if s.finetune.kind() == Finetune::Full {
            &[]
        } else {
            phases
        };
        ledger.push_expr(ph, mech, comp, loc, &e, note, ctx, src);
    };
    match (s.finetune.kind(), grad_acc) {
        (Finetune::Full, GradAcc::Compute) => push(k, "", SRC_ZERO),
        (Finetune::Full, GradAcc::Main16) => push(k, "16-bit main grads", SRC_GRAD),
        (Finetune::Lora | Finetune::Qlora, _) => push(c.train_bytes, "adapters", SRC_ZERO),
        (Finetune::Full, GradAcc::Fp32) => push(4, "fp32 main grads", SRC_GRAD),
        (Finetune::Full, GradAcc::Both) => {
            push(k, "", SRC_GRAD);
            push(4, "fp32 accumulation buffer", SRC_GRAD);
        }
    }
}

/// When a LoRA adapter's gradients exist under PyTorch (PEFT): written by the backward and
/// freed by `optimizer.zero_grad()` (`set_to_none=True`, PyTorch's default since 2.0), so
/// they are not held through the next forward and its loss; under the other frameworks
/// (and QLoRA, which no CUDA run measured) they stay resident.
///
/// # Formula
/// ```text
/// adapter gradients ⌈4·Ψ_a/t⌉ live   backward → step     (framework=pytorch, LoRA)
///                                    the whole step      otherwise
/// ```
/// Source: PyTorch 2.11 `torch/optim/optimizer.py` (`zero_grad(set_to_none=True)`); the
/// measured loop's phase ends of the CUDA calibration run D19 (Llama 3 8B, LoRA r 16 on
/// every linear): `post_zero_grad` − `post_bw` = 16,632,013,824 − 16,799,785,984 B =
/// −167,772,160 B = 4·41,943,040, the adapters' fp32 gradients; the run's peak is the loss's
/// backward, before any of them is written.
///
/// # Example
/// D19: Ψ_a = 41,943,040: 167,772,160 B no longer under the loss's backward; memfit
/// +0.44 → −0.05 %.
fn adapter_grad_phases(s: &Scenario) -> &'static [Phase] {
    if s.stack.framework == Framework::Pytorch && s.finetune.kind() == Finetune::Lora {
        &BWD_STEP
    } else {
        &[]
    }
}

/// fp32 master weights of mixed precision (full training; adapters are already
/// fp32): `⌈4·Ψ_i/(t·[N_s])⌉` (÷ N_s from ZeRO-1), in host RAM per node with
/// `offload_opt` (`·n`).
pub(crate) fn master_weight_items(c: &StateCtx, ledger: &mut Ledger) {
    if c.s.finetune.kind() != Finetune::Full || !c.s.numerics.precision.has_master() {
        return;
    }
    let loc = place(c.s.offload.optimizer);
    let e = c.at_expr(loc, c.share_expr(4, c.o_div));
    let ctx = || c.context(loc, "offload_opt");
    let (mech, comp) = (Mech::MasterWeights, Component::MasterWeights);
    ledger.push_expr(&[], mech, comp, loc, &e, "", ctx, SRC_ZERO);
}

/// Optimizer states of the trained parameters (see `optimizer_state_bytes`), ÷ `t`
/// and ÷ N_s from ZeRO-1; in host RAM per node with `offload_opt`.
pub(crate) fn optimizer_items(c: &StateCtx, ledger: &mut Ledger) {
    let s = c.s;
    let loc = place(s.offload.optimizer);
    let (precision, sym) = if s.finetune.kind() == Finetune::Full {
        (s.numerics.precision, c.psym())
    } else {
        (Precision::Fp32, "Ψ_a")
    };
    let opt = s.numerics.optimizer;
    let e = optimizer_rank_expr(
        opt, precision, sym, c.trained, c.arch, c.st.frac, c.t, c.o_div,
    );
    let e = c.at_expr(loc, e);
    if e.eval() == 0 {
        return;
    }
    let (note, src) = optimizer_state_note(opt);
    let ctx = || c.context(loc, "offload_opt");
    let (mech, comp) = (Mech::OptimizerStates, Component::OptimizerStates);
    ledger.push_expr(&[], mech, comp, loc, &e, note, ctx, src);
    adapter_adam_temporaries(c, ledger);
}

/// The temporaries of PyTorch's foreach AdamW over LoRA's fp32 adapters during the step:
/// `torch._foreach_sqrt(v)` of every adapter at once, 4 B each (fused: none; for-loop: one
/// tensor's, negligible and not counted).
///
/// # Formula
/// ```text
/// foreach, framework=pytorch, LoRA:  ⌈4·Ψ_a/t⌉   (optimizer step only)
/// ```
/// Source: PyTorch 2.11 `torch/optim/adamw.py` (`_multi_tensor_adamw`); the measured loop's
/// phases of the CUDA calibration run D19 (Llama 3 8B, LoRA r 16 on every linear, foreach
/// AdamW): `opt_peak` − `post_bw` = 16,967,558,144 − 16,799,785,984 = 167,772,160 B =
/// 4·41,943,040, where memfit's step added nothing (its step peak −1.0 %; D22 −3.8 %).
///
/// # Example
/// D22 (Qwen2.5 7B, r 64 on every linear): Ψ_a = 161,480,704: 645,922,816 B.
fn adapter_adam_temporaries(c: &StateCtx, ledger: &mut Ledger) {
    let s = c.s;
    let adam = matches!(s.numerics.optimizer, Optimizer::Adam | Optimizer::Adamw);
    if !(adam
        && s.finetune.kind() == Finetune::Lora
        && s.stack.framework == Framework::Pytorch
        && s.numerics.adam_impl == AdamImpl::Foreach
        && s.offload.optimizer == Offload::None)
    {
        return;
    }
    let e = c.div_expr(4, "Ψ_a", c.trained, c.o_div);
    let ctx = || c.context(Location::Gpu, "");
    let (mech, comp, gpu) = (Mech::AdamTemporaries, Component::Workspace, Location::Gpu);
    let note = "foreach sqrt(v) temporaries of the fp32 adapters";
    let src = "PyTorch torch.optim.AdamW foreach implementation (_multi_tensor_adamw: torch._foreach_sqrt)";
    ledger.push_expr(&[Phase::OptimizerStep], mech, comp, gpu, &e, note, ctx, src);
}

/// ZeRO-3 gathers one layer at a time: its full parameters and gradients, `2k·L/t`
/// (seed 000's `4·L` in 16 bits).
pub(crate) fn gathered_layer_item(c: &StateCtx, ledger: &mut Ledger) {
    if c.z != Zero::Z3 {
        return;
    }
    // Gathered before a layer's forward or backward and released after it: alive in
    // the passes, not in the optimizer step (which updates the fp32 partitions).
    let e = Expr::new(&[Num(2), Sym("k", c.k as u128)]).then(&[Mul]);
    let e = e.then(&[
        Sym("L", c.largest as u128),
        Mul,
        Sym("t", c.t as u128),
        DivCeil,
    ]);
    let (mech, comp, loc) = (Mech::GatheredLayer, Component::GatheredLayer, Location::Gpu);
    ledger.push_expr(&FWD_BWD, mech, comp, loc, &e, "", String::new, SRC_GATHER);
}

/// NVMe offload stages through pinned host buffers (DeepSpeed ZeRO-Infinity defaults).
///
/// # Formula
/// ```text
/// offload_opt=nvme:              n·4·16·L      (4 swap buffers of the largest layer's fp32 param, grad, m, v)
/// offload_param=nvme (ZeRO-3):   n·5·1e8·k     (5 parameter swap buffers of 1e8 elements)
/// ```
pub(crate) fn nvme_staging_items(c: &StateCtx, ledger: &mut Ledger) {
    let (s, n) = (c.s, Sym("n", c.per_node as u128));
    let (comp, loc) = (Component::Workspace, Location::Cpu);
    if s.offload.optimizer == Offload::Nvme {
        let e = Expr::new(&[
            Num(4),
            Num(16),
            Mul,
            Sym("L", c.largest as u128),
            Mul,
            n,
            Mul,
        ]);
        let note = "4 swap buffers of the largest layer's fp32 param, grad, m, v";
        let ctx = || "n = GPUs per node".to_string();
        ledger.push_expr(&[], Mech::NvmeSwap, comp, loc, &e, note, ctx, SRC_NVME);
    }
    if c.z == Zero::Z3 && s.offload.params == Offload::Nvme {
        let e = Expr::new(&[
            Num(5),
            Num(100_000_000),
            Mul,
            Sym("k", c.k as u128),
            Mul,
            n,
            Mul,
        ]);
        let note = "5 param swap buffers of 1e8 elements";
        let ctx = || "n = GPUs per node".to_string();
        ledger.push_expr(&[], Mech::NvmeParamSwap, comp, loc, &e, note, ctx, SRC_NVME);
    }
}
