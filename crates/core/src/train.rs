//! Training memory under memfit's convention: model states for every precision
//! policy, optimizer, ZeRO stage / FSDP strategy, offload target and fine-tuning
//! method; activations; host RAM at model init; pinned memory.

use super::activations::{
    autocast, chunk_layers, in_flight, korthikanti_layer, layer_backward, layer_input_bytes,
    logits_bytes, memfit_layer, stage_layers, LayerBackward, Shape,
};
use super::ledger::{Component, Ledger, Location, Mech, Phase, Text};
use super::megatron::Recompute;
use super::model::{Arch, LinearKind, Norm};
use super::scenario::{
    AdamImpl, Convention, Finetune, Framework, Fsdp, GradAcc, Layout, LoraTargets, Offload,
    Optimizer, Precision, Scenario, Schedule, Zero,
};
use super::units::{mul, mul_div_ceil, mul_div_u128};

const SRC_ZERO: &str =
    "seed 001 (ZeRO stage 1/2: 2+2+12 B/param), ZeRO paper (Rajbhandari et al. 2020 §5)";
const SRC_GATHER: &str =
    "seed 000 (DeepSpeed Memory Requirements: largest_layer_memory = 4·largest_layer_params)";
const SRC_ACT: &str =
    "seed 003 (34·b·s·h + 5·b·s²·a per layer) = Korthikanti et al. 2022 Table 2, no parallelism";
const SRC_ACT_TP: &str =
    "Korthikanti et al. 2022 Table 2, tensor parallel without sequence parallel";
const SRC_GRAD: &str = "seed 003 (16 vs 18 vs 20 B/param: gradient dtype and fp32 accumulation)";
const SRC_LORA: &str =
    "Hu et al. 2021 (LoRA: r·(d_in + d_out) per adapted matrix); PEFT keeps adapters in fp32";
const SRC_QLORA: &str = "Dettmers et al. 2023 (QLoRA: NF4 0.5 B/param, absmax per 64 values, double quantisation 8-bit absmax + fp32 per 256 blocks)";
const SRC_INIT: &str = "seed 000 (model built in fp32 on the host by each process; zero.Init partitions at construction)";
const SRC_NVME: &str = "DeepSpeed ZeRO-Infinity config defaults (offload_param buffer_count=5, buffer_size=1e8; offload_optimizer buffer_count=4)";

/// Bytes of optimizer state for `n` trainable parameters (`frac` of the model's
/// matrices, for Adafactor's factored moments); the text is `optimizer_state_formula`.
///
/// # Formula
/// ```text
/// adam / adamw:   2·s_b·n           (momentum and variance, s_b = 4, or 2 under bf16-pure)
/// sgd:            0
/// sgd-momentum:   s_b·n
/// lion:           s_b·n             (momentum only)
/// adam8bit:       2·n + 2·4·⌈n/2048⌉  (two 8-bit moments + one fp32 absmax per 2048-value block)
/// adafactor:      4·Σ(rows + cols) over matrices + 4·(vector params)   (factored second moment)
/// ```
/// Sources: Kingma & Ba 2015 (Adam); Dettmers et al. 2022 (8-bit optimizers,
/// bitsandbytes block size 2048); Shazeer & Stern 2018 (Adafactor, β1 = 0);
/// Chen et al. 2023 (Lion).
///
/// # Example
/// 1,000,000 parameters with AdamW in fp32 states: 8,000,000 bytes; with adam8bit:
/// 2,000,000 + 8·489 = 2,003,912 bytes.
pub fn optimizer_state_bytes(
    opt: Optimizer,
    precision: Precision,
    n: u64,
    arch: &Arch,
    frac: (u128, u128),
) -> u64 {
    let sb = precision.state_bytes();
    match opt {
        Optimizer::Adam | Optimizer::Adamw => mul(2 * sb, n),
        Optimizer::Sgd => 0,
        Optimizer::SgdMomentum | Optimizer::Lion => mul(sb, n),
        Optimizer::Adam8bit => mul(2, n).saturating_add(8 * n.div_ceil(2048)),
        Optimizer::Adafactor => {
            // Factored moments for each matrix, full moments for vectors; scaled to the
            // share `frac = (num, den)` of the model this rank trains.
            let linears = arch.linears();
            let factored: u128 = linears
                .iter()
                .map(|m| (m.inp + m.out) as u128 * m.count as u128)
                .sum();
            let matrix_params: u128 = linears.iter().map(|m| m.params() as u128).sum();
            let total = arch.params().total as u128;
            let vectors = total.saturating_sub(matrix_params);
            let whole = 4 * (factored + vectors);
            mul_div_u128(whole, frac.0, frac.1, false)
                .map_or(u64::MAX, |v| v.min(u64::MAX as u128) as u64)
        }
    }
}

/// The formula and source of `optimizer_state_bytes` for `opt`.
pub fn optimizer_state_formula(opt: Optimizer, precision: Precision) -> (String, &'static str) {
    let sb = precision.state_bytes();
    match opt {
        Optimizer::Adam | Optimizer::Adamw => (
            format!("2·{sb}·Ψ  (Adam m, v)"),
            "Kingma & Ba 2015 (Adam keeps momentum and variance); seed 001 K = 12 with the fp32 master",
        ),
        Optimizer::Sgd => ("0  (plain SGD keeps no state)".into(), "PyTorch torch.optim.SGD (momentum=0)"),
        Optimizer::SgdMomentum => (format!("{sb}·Ψ  (momentum buffer)"), "PyTorch torch.optim.SGD (momentum>0)"),
        Optimizer::Lion => (format!("{sb}·Ψ  (momentum only)"), "Chen et al. 2023 (Lion keeps one moment)"),
        Optimizer::Adam8bit => (
            "2·Ψ + 8·⌈Ψ/2048⌉  (8-bit m, v + fp32 absmax per 2048 block)".into(),
            "Dettmers et al. 2022 (8-bit optimizers; bitsandbytes block-wise quantisation, block 2048)",
        ),
        Optimizer::Adafactor => (
            "4·(Σ(rows+cols) + vector params)·share  (factored second moment, no momentum)".into(),
            "Shazeer & Stern 2018 (Adafactor; Hugging Face default β1 = None)",
        ),
    }
}

/// Trainable adapter parameters for LoRA/QLoRA.
///
/// # Formula
/// ```text
/// Ψ_a = Σ over adapted matrices  count · r · (d_in + d_out)
/// ```
/// `r` the LoRA rank; targets: `qv` (q, v), `attn` (q, k, v, o), `mlp` (all MLP
/// projections, experts included), `all` (both).
///
/// # Example
/// Llama-2-7B, r = 16, q and v: 32 layers · 2 · 16·(4096 + 4096) = 8,388,608.
pub fn lora_params(arch: &Arch, rank: u32, targets: LoraTargets) -> u64 {
    arch.linears()
        .iter()
        .filter(|m| match targets {
            LoraTargets::Qv => m.kind == LinearKind::Attn && (m.name == "q" || m.name == "v"),
            LoraTargets::Attn => m.kind == LinearKind::Attn,
            LoraTargets::Mlp => m.kind == LinearKind::Mlp,
            LoraTargets::All => matches!(m.kind, LinearKind::Attn | LinearKind::Mlp),
        })
        .fold(0u64, |acc, m| {
            acc.saturating_add(
                m.count
                    .saturating_mul(rank as u64)
                    .saturating_mul(m.inp + m.out),
            )
        })
}

/// Bytes of a QLoRA base: NF4 codes for the block linears, bf16 for the rest.
///
/// # Formula
/// ```text
/// quantised Ψ_q (attention, MLP, router matrices):
///   ⌈Ψ_q/2⌉ + ⌈Ψ_q/64⌉·1 + ⌈Ψ_q/(64·256)⌉·4      with double quantisation
///   ⌈Ψ_q/2⌉ + ⌈Ψ_q/64⌉·4                         without
/// others (embedding, norms, LM head): 2·(Ψ − Ψ_q)
/// ```
/// Source: Dettmers et al. 2023 (QLoRA §3: 0.5 B/param, blocksize 64, double
/// quantisation 8/64 + 32/(64·256) bits).
///
/// # Example
/// 64·256 = 16,384 quantised parameters with double quantisation:
/// 8,192 + 256 + 4 = 8,452 bytes (0.516 B/param).
pub fn nf4_bytes(quantised: u64, double_quant: bool) -> u64 {
    let codes = quantised.div_ceil(2);
    if double_quant {
        codes + quantised.div_ceil(64) + 4 * quantised.div_ceil(64 * 256)
    } else {
        codes + 4 * quantised.div_ceil(64)
    }
}

/// The block-linear (quantisable) part of `psi` parameters: the architecture's
/// count when `psi` is the architecture's total, else `psi` scaled by the
/// architecture's linear fraction (so explicit `params=` stays monotone).
pub(crate) fn quantisable_share(arch: &Arch, psi: u64) -> u64 {
    let q = quantisable_params(arch) as u128;
    let total = arch.params().total.max(1) as u128;
    (psi as u128 * q / total).min(psi as u128) as u64
}

fn quantisable_params(arch: &Arch) -> u64 {
    arch.linears()
        .iter()
        .filter(|m| {
            matches!(
                m.kind,
                LinearKind::Attn | LinearKind::Mlp | LinearKind::Router
            )
        })
        .fold(0u64, |acc, m| acc.saturating_add(m.params()))
}

/// What ZeRO stage `z` divides by `ns`: (weights, gradients, optimizer states and master).
fn shard_divisors(z: Zero, ns: u64) -> (u64, u64, u64) {
    (
        if z >= Zero::Z3 { ns } else { 1 },
        if z >= Zero::Z2 { ns } else { 1 },
        if z >= Zero::Z1 { ns } else { 1 },
    )
}

/// `Ψ/t` or `Ψ/(t·N_s)` in formulas.
fn shard_symbol(psym: &str, div: u64) -> String {
    if div > 1 {
        format!("{psym}/(t·N_s)")
    } else {
        format!("{psym}/t")
    }
}

/// Which pipeline stage a ledger is for, and its share of the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stage {
    /// Stage index, 0-based.
    pub i: u32,
    /// Stages, p.
    pub p: u32,
    /// Transformer blocks on this stage.
    pub layers: u32,
    /// This stage's share of the parameters, `num/den`.
    pub frac: (u128, u128),
}

impl Stage {
    /// Stage `i` of the scenario's pipeline, with its parameter share.
    ///
    /// # Formula
    /// ```text
    /// Ψ_i = L_i·Ψ_block + [i = 0]·Ψ_emb + [i = p−1]·(Ψ_final_norm + Ψ_head + [tied ∧ p > 1]·V·h)
    /// ```
    /// The last stage of a tied model keeps its own copy of the embedding matrix as the
    /// output layer (Megatron-LM, DeepSpeed pipeline); `Ψ_block` is the average block.
    pub fn of(arch: &Arch, p: u32, i: u32) -> Stage {
        let c = arch.params();
        let layers = arch.layers.max(1) as u128;
        let final_norm = arch.norm.params(arch.hidden as u128);
        let body = (c.attention + c.mlp + c.norms) as u128 - final_norm;
        let li = stage_layers(arch.layers, p, i);
        let mut num = body * li as u128; // over `layers`
        if i == 0 {
            num += c.embedding as u128 * layers;
        }
        if i + 1 == p.max(1) {
            num += (final_norm + c.lm_head as u128) * layers;
            if arch.tied && p > 1 {
                num += arch.vocab as u128 * arch.hidden as u128 * layers;
            }
        }
        Stage {
            i,
            p: p.max(1),
            layers: li,
            frac: (num, (c.total as u128).max(1) * layers),
        }
    }
    /// `x · frac`, rounded up, exactly (the product may need more than 128 bits for
    /// a model near the codec's limit of 10^18 parameters); `OUT_OF_RANGE` past 2^64.
    pub fn share(&self, x: u64) -> u64 {
        mul_div_u128(x as u128, self.frac.0, self.frac.1, true)
            .map_or(u64::MAX, |v| v.min(u64::MAX as u128) as u64)
    }
}

/// Where an offloaded state lives.
fn place(off: Offload) -> Location {
    match off {
        Offload::None => Location::Gpu,
        Offload::Cpu => Location::Cpu,
        Offload::Nvme => Location::Nvme,
    }
}

/// `n·` in front of a formula whose item is counted per node of host RAM.
fn node_prefix(loc: Location) -> &'static str {
    if loc == Location::Gpu {
        ""
    } else {
        "n·"
    }
}

/// What every model-state mechanism of one stage reads: the stage's parameters, the
/// shard degrees, the trained parameters, and how to write them in a formula.
struct StateCtx<'a> {
    s: &'a Scenario,
    arch: &'a Arch,
    st: &'a Stage,
    /// Whole-model `Ψ`.
    psi_total: u64,
    /// This stage's `Ψ_i`.
    psi: u64,
    /// `Ψ_i` with the routed experts divided by `ep` (unpartitioned copies).
    psi_ep: u64,
    /// Routed-expert parameters on this stage.
    experts: u64,
    /// Largest layer `L`.
    largest: u64,
    /// Compute bytes `k`.
    k: u64,
    /// TP degree `t`.
    t: u64,
    /// Shard degree `N_s`.
    ns: u64,
    /// Effective ZeRO stage.
    z: Zero,
    /// GPUs per node (for host-RAM items).
    per_node: u64,
    /// What ZeRO divides by `N_s`: weights, gradients, optimizer states and master.
    w_div: u64,
    g_div: u64,
    o_div: u64,
    /// Trained parameters (all, or the LoRA adapters) and their bytes each.
    trained: u64,
    train_bytes: u64,
}

impl<'a> StateCtx<'a> {
    fn new(
        s: &'a Scenario,
        arch: &'a Arch,
        psi_total: u64,
        largest: u64,
        l: &Layout,
        st: &'a Stage,
    ) -> Self {
        let ns = s.shard_degree() as u64;
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
            t: l.tp as u64,
            ns,
            z,
            per_node: l.gpus_per_node.min(l.world) as u64,
            w_div,
            g_div,
            o_div,
            trained,
            train_bytes,
        }
    }
    fn ep_on(&self) -> bool {
        self.s.ep_ranks() > 1 && self.experts > 0
    }
    /// `Ψ` or `Ψ_i` (a pipeline stage's share).
    fn psym(&self) -> &'static str {
        if self.st.p > 1 {
            "Ψ_i"
        } else {
            "Ψ"
        }
    }
    /// `Ψ/t`, `Ψ/(t·N_s)` or `Ψ_ep/t` for a state divided by `div`.
    fn sym(&self, div: u64) -> String {
        if div == 1 && self.ep_on() {
            shard_symbol(&format!("{}_ep", self.psym()), div)
        } else {
            shard_symbol(self.psym(), div)
        }
    }
    /// The values behind `sym`, with `extra` appended.
    fn vals(&self, extra: &str) -> String {
        let (psi, t, ns) = (self.psi, self.t, self.ns);
        let extra = if self.ep_on() {
            format!(
                ", Ψ_ep={} (routed experts {}/ep, ep={}){extra}",
                self.psi_ep,
                self.experts,
                self.s.ep_ranks()
            )
        } else {
            extra.to_string()
        };
        if self.st.p > 1 {
            format!(
                "Ψ_i={psi} (stage {} of {}, Ψ={}), t={t}, N_s={ns}{extra}",
                self.st.i, self.st.p, self.psi_total
            )
        } else {
            format!("Ψ={psi}, t={t}, N_s={ns}{extra}")
        }
    }
    /// Bytes at `loc`: per GPU, or per node (× GPUs per node) in host RAM / NVMe.
    fn at(&self, loc: Location, bytes: u64) -> u64 {
        if loc == Location::Gpu {
            bytes
        } else {
            mul(bytes, self.per_node)
        }
    }
    fn node_note(&self, loc: Location, what: &str) -> String {
        if loc == Location::Gpu {
            String::new()
        } else {
            format!(", n={} ({what})", self.per_node)
        }
    }
    /// `bytes_per · Ψ/(t·div)` of the whole-model states (`Ψ_ep` when unpartitioned).
    fn full(&self, bytes_per: u64, div: u64) -> u64 {
        let n = if div > 1 { self.psi } else { self.psi_ep };
        mul_div_ceil(bytes_per, n, self.t * div)
    }
    /// `bytes_per · Ψ_trained/(t·div)` of the trained parameters.
    fn trained_share(&self, bytes_per: u64, div: u64) -> u64 {
        if self.s.finetune.kind() == Finetune::Full {
            self.full(bytes_per, div)
        } else {
            mul_div_ceil(bytes_per, self.trained, self.t * div)
        }
    }
    /// Where the ZeRO-3 parameter partition lives.
    fn weights_loc(&self) -> Location {
        if self.z == Zero::Z3 {
            place(self.s.offload.params)
        } else {
            Location::Gpu
        }
    }
}

/// Model states per GPU under memfit's convention, for one pipeline stage.
///
/// # Formula
/// ```text
/// Ψ_i = stage i's parameters (see Stage::of);  N_s = shard degree
/// DeepSpeed / Megatron (mixed precision):
///   weights    = w·Ψ_i/t   / (N_s if ZeRO-3)      w = 4 fp32, 2 bf16/fp16, 2 + 1 fp8 (bf16 + fp8 copy)
///   gradients  = g·Ψ_i/t   / (N_s if ZeRO ≥ 2)    g = k (compute), 4 (fp32, Megatron main_grad), k + 4 (both)
///   master     = 4·Ψ_i/t   / (N_s if ZeRO ≥ 1)    mixed precision only
///   optimizer  = O(Ψ_i)/t  / (N_s if ZeRO ≥ 1)    see optimizer_state_bytes
/// PyTorch (autocast over fp32 parameters, torch.optim.AdamW foreach):
///   weights 4·Ψ_i/t, autocast bf16 copies 2·Ψ_i/t (forward, backward), gradients 4·Ψ_i/t
///   (backward, step: freed by zero_grad), Adam 8·Ψ_i/t, foreach temporaries 4·Ψ_i/t (step),
///   DDP bucket copy of the gradients 4·Ψ_i/t when N_d > 1 without sharding;
///   with FSDP: fp32 shards (/N_s) plus two unsharded bf16 blocks and one fp32 gradient block.
/// ZeRO-3 (DeepSpeed): gathered largest layer 2k·L/t (seed 000's 4·L) + prefetch bucket k·B_p.
/// ```
/// LoRA/QLoRA: the base is frozen (weights only: `k·Ψ`, or NF4 for QLoRA), and the `Ψ_a`
/// adapters train in fp32. Offloaded items are counted in host RAM (or NVMe) per node
/// (× GPUs per node). Divisions round up (the peak rank holds the largest shard).
/// Each mechanism is one function below: `weight_items`, `adapter_items`,
/// `gradient_items`, `master_weight_items`, `optimizer_items`, `gathered_layer_item`,
/// `nvme_staging_items`, and `pytorch_states` for plain PyTorch.
///
/// Source: seed 001 and the ZeRO paper (2+2+K, K = 12 for Adam), seed 004 ((2+2+K)·Ψ/N_d),
/// seed 003 (16/18/20 B/param), seed 000 (4·L gathered); PyTorch `torch.amp.autocast`
/// weight cache, `_multi_tensor_adamw`, DDP `Reducer` buckets; FSDP2 `fully_shard`.
///
/// # Example
/// Llama-2-7B (Ψ = 6,738,415,616), bf16 + AdamW, ZeRO-1 on 8 GPUs: weights
/// 2Ψ = 13,476,831,232 B, gradients 2Ψ, master 4Ψ/8 = 3,369,207,808 B, optimizer
/// 8Ψ/8 = 6,738,415,616 B.
pub(crate) fn model_states(
    s: &Scenario,
    arch: &Arch,
    psi_total: u64,
    largest: u64,
    l: &Layout,
    st: &Stage,
    ledger: &mut Ledger,
) -> StageStates {
    let c = StateCtx::new(s, arch, psi_total, largest, l, st);
    let mut out = StageStates::default();
    if pytorch_grads(s) {
        out = pytorch_states(&c, l, ledger);
    } else {
        weight_items(&c, ledger);
        adapter_items(&c, ledger);
        gradient_items(&c, ledger);
        master_weight_items(&c, ledger);
        optimizer_items(&c, ledger);
        gathered_layer_item(&c, ledger);
    }
    nvme_staging_items(&c, ledger);
    out
}

/// What a stage's model states hand to its activations: PyTorch's gradients, written in
/// the backward (0 otherwise), and autocast's bf16 copies as the backward frees them
/// (`autocast_copy_split`: the head's, the layers'; 0 unless walked).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct StageStates {
    /// PyTorch's gradient bytes of the stage, `G`.
    pub grads: u64,
    /// Autocast's copies `(C_head, C_body)` in bytes.
    pub copies: (u128, u128),
}

/// The model's weights: `k·Ψ_i/t` (÷ N_s under ZeRO-3), an fp8 copy under fp8
/// training, the frozen base of LoRA, or QLoRA's NF4 base.
///
/// # Formula
/// ```text
/// full / LoRA:  k·Ψ_i/(t·[N_s])            fp8 adds 1·Ψ_i/(t·[N_s])
/// QLoRA:        (nf4(Ψ_q) + r·(Ψ − Ψ_q))/(t·[N_s])   r = 4 under PEFT (fp32 cast), else 2
/// ```
fn weight_items(c: &StateCtx, ledger: &mut Ledger) {
    let (s, k) = (c.s, c.k);
    let loc = c.weights_loc();
    match s.finetune.kind() {
        Finetune::Full => {
            ledger.push(
                Mech::Weights,
                Component::Weights,
                loc,
                c.at(loc, c.full(k, c.w_div)),
                || {
                    (
                        format!("{}{k}·{}", node_prefix(loc), c.sym(c.w_div)),
                        c.vals(&c.node_note(loc, "offload_param")),
                    )
                },
                SRC_ZERO,
            );
            if s.numerics.precision == Precision::Fp8 {
                ledger.push(
                    Mech::Fp8Copies,
                    Component::Weights,
                    loc,
                    c.at(loc, mul_div_ceil(1, c.psi, c.t * c.w_div)),
                    || {
                        (
                            format!("1·{}  (fp8 weight copies)", c.sym(c.w_div)),
                            c.vals(""),
                        )
                    },
                    "NVIDIA Transformer Engine FP8 training (bf16 weights + cached fp8 copies)",
                );
            }
        }
        Finetune::Lora => ledger.push(
            Mech::FrozenBase,
            Component::Weights,
            loc,
            c.at(loc, c.full(k, c.w_div)),
            || (format!("{k}·{}  (frozen base)", c.sym(c.w_div)), c.vals("")),
            SRC_LORA,
        ),
        Finetune::Qlora => {
            let q = quantisable_share(c.arch, c.psi);
            // PEFT's prepare_model_for_kbit_training casts the parameters left unquantised
            // (embedding, norms, LM head) to fp32; other stacks keep them in 16 bits.
            let rest_b = if s.stack.framework == Framework::Pytorch {
                4
            } else {
                2
            };
            let base =
                nf4_bytes(q, s.finetune.double_quant()).saturating_add(mul(rest_b, c.psi - q));
            let (psi, t) = (c.psi, c.t);
            ledger.push(Mech::Nf4Base,
                Component::Weights,
                loc,
                c.at(loc, base.div_ceil(c.t * c.w_div)),
                || {
                    let f = if s.finetune.double_quant() {
                        "(⌈Ψ_q/2⌉ + ⌈Ψ_q/64⌉ + 4·⌈Ψ_q/16384⌉ + r·(Ψ−Ψ_q))/t  (frozen NF4 base; r = 4 under PEFT, else 2)"
                    } else {
                        "(⌈Ψ_q/2⌉ + 4·⌈Ψ_q/64⌉ + r·(Ψ−Ψ_q))/t  (frozen NF4 base; r = 4 under PEFT, else 2)"
                    };
                    (f.into(), format!("Ψ={psi}, Ψ_q={q}, t={t}"))
                },
                SRC_QLORA,
            );
        }
    }
}

/// LoRA/QLoRA adapters, trained in fp32: `4·Ψ_a/t`.
fn adapter_items(c: &StateCtx, ledger: &mut Ledger) {
    if c.s.finetune.kind() == Finetune::Full {
        return;
    }
    ledger.push(
        Mech::Adapters,
        Component::Weights,
        Location::Gpu,
        c.trained_share(4, 1),
        || {
            (
                "4·Ψ_a/t  (fp32 adapters)".into(),
                format!(
                    "Ψ_a={} (r={}, targets={}), t={}",
                    c.trained,
                    c.s.finetune.rank(),
                    c.s.finetune.targets().as_str(),
                    c.t
                ),
            )
        },
        SRC_LORA,
    );
}

/// Gradients: `g·Ψ_i/t` (÷ N_s from ZeRO-2), in the compute dtype, in fp32
/// (`grad_acc_dtype=fp32`, always under Megatron's `main_grad`), or both.
///
/// # Formula
/// ```text
/// compute: k·Ψ_i/(t·[N_s])    fp32: 4·Ψ_i/(t·[N_s])    both: (k + 4)·Ψ_i/(t·[N_s])
/// adapters: 4·Ψ_a/(t·[N_s])
/// ```
/// Source: seed 003 (16 vs 18 vs 20 B/param).
fn gradient_items(c: &StateCtx, ledger: &mut Ledger) {
    let (s, k, div) = (c.s, c.k, c.g_div);
    // Megatron always accumulates into fp32 main_grad buffers.
    let grad_acc =
        if s.stack.framework == Framework::Megatron && s.numerics.grad_acc == GradAcc::Compute {
            GradAcc::Fp32
        } else {
            s.numerics.grad_acc
        };
    let mut push = |bytes_per: u64, note: &'static str, src: &'static str| {
        ledger.push(
            Mech::Gradients,
            Component::Gradients,
            Location::Gpu,
            c.trained_share(bytes_per, div),
            || {
                let f = if s.finetune.kind() == Finetune::Full {
                    format!("{bytes_per}·{}{note}", c.sym(div))
                } else {
                    format!(
                        "{bytes_per}·{}  (adapters, Ψ_a={})",
                        c.sym(div).replace(c.psym(), "Ψ_a"),
                        c.trained
                    )
                };
                (f, c.vals(""))
            },
            src,
        );
    };
    match (s.finetune.kind(), grad_acc) {
        (Finetune::Full, GradAcc::Compute) => push(k, "", SRC_ZERO),
        (Finetune::Lora | Finetune::Qlora, _) => push(c.train_bytes, "", SRC_ZERO),
        (Finetune::Full, GradAcc::Fp32) => push(4, "  (fp32 main grads)", SRC_GRAD),
        (Finetune::Full, GradAcc::Both) => {
            push(k, "", SRC_GRAD);
            push(4, "  (fp32 accumulation buffer)", SRC_GRAD);
        }
    }
}

/// fp32 master weights of mixed precision (full training; adapters are already
/// fp32): `4·Ψ_i/t` (÷ N_s from ZeRO-1), in host RAM per node with `offload_opt`.
fn master_weight_items(c: &StateCtx, ledger: &mut Ledger) {
    if c.s.finetune.kind() != Finetune::Full || !c.s.numerics.precision.has_master() {
        return;
    }
    let loc = place(c.s.offload.optimizer);
    ledger.push(
        Mech::MasterWeights,
        Component::MasterWeights,
        loc,
        c.at(loc, c.trained_share(4, c.o_div)),
        || {
            (
                format!("{}4·{}", node_prefix(loc), c.sym(c.o_div)),
                c.vals(&c.node_note(loc, "offload_opt")),
            )
        },
        SRC_ZERO,
    );
}

/// Optimizer states of the trained parameters (see `optimizer_state_bytes`), ÷ `t`
/// and ÷ N_s from ZeRO-1; in host RAM per node with `offload_opt`.
fn optimizer_items(c: &StateCtx, ledger: &mut Ledger) {
    let s = c.s;
    let loc = place(s.offload.optimizer);
    let precision = if s.finetune.kind() == Finetune::Full {
        s.numerics.precision
    } else {
        Precision::Fp32
    };
    let share = (
        c.st.frac.0,
        c.st.frac.1.saturating_mul((c.t * c.o_div) as u128),
    );
    let bytes = optimizer_state_bytes(s.numerics.optimizer, precision, c.trained, c.arch, share);
    if bytes == 0 {
        return;
    }
    let per_rank = if s.numerics.optimizer == Optimizer::Adafactor {
        bytes
    } else {
        bytes.div_ceil(c.t * c.o_div)
    };
    let (formula, src) = optimizer_state_formula(s.numerics.optimizer, precision);
    ledger.push(
        Mech::OptimizerStates,
        Component::OptimizerStates,
        loc,
        c.at(loc, per_rank),
        || {
            (
                format!(
                    "{}[{formula}]/{}",
                    node_prefix(loc),
                    c.sym(c.o_div)
                        .trim_start_matches(c.psym())
                        .trim_start_matches('/')
                ),
                format!(
                    "{}, optimizer={}",
                    c.vals(&c.node_note(loc, "offload_opt")),
                    s.numerics.optimizer.as_str()
                ),
            )
        },
        src,
    );
}

/// ZeRO-3 gathers one layer at a time: its full parameters and gradients, `2k·L/t`
/// (seed 000's `4·L` in 16 bits).
fn gathered_layer_item(c: &StateCtx, ledger: &mut Ledger) {
    if c.z != Zero::Z3 {
        return;
    }
    let (k, t, largest) = (c.k, c.t, c.largest);
    // Gathered before a layer's forward or backward and released after it: alive in
    // the passes, not in the optimizer step (which updates the fp32 partitions).
    ledger.push_in(
        &FWD_BWD,
        Mech::GatheredLayer,
        Component::GatheredLayer,
        Location::Gpu,
        mul_div_ceil(2 * k, largest, t),
        || (format!("{}·L/t", 2 * k), format!("L={largest}, t={t}")),
        SRC_GATHER,
    );
}

/// NVMe offload stages through pinned host buffers (DeepSpeed ZeRO-Infinity defaults).
///
/// # Formula
/// ```text
/// offload_opt=nvme:              n·4·16·L      (4 swap buffers of the largest layer's fp32 param, grad, m, v)
/// offload_param=nvme (ZeRO-3):   n·5·1e8·k     (5 parameter swap buffers of 1e8 elements)
/// ```
fn nvme_staging_items(c: &StateCtx, ledger: &mut Ledger) {
    let (s, largest, n, k) = (c.s, c.largest, c.per_node, c.k);
    if s.offload.optimizer == Offload::Nvme {
        ledger.push(
            Mech::NvmeSwap,
            Component::Workspace,
            Location::Cpu,
            mul(4 * 16, largest).saturating_mul(n),
            || {
                (
                    "n·4·16·L  (4 swap buffers of the largest layer's fp32 param, grad, m, v)"
                        .into(),
                    format!("L={largest}, n={n}"),
                )
            },
            SRC_NVME,
        );
    }
    if c.z == Zero::Z3 && s.offload.params == Offload::Nvme {
        ledger.push(
            Mech::NvmeParamSwap,
            Component::Workspace,
            Location::Cpu,
            mul(5 * 100_000_000, k).saturating_mul(n),
            || {
                (
                    format!("n·5·1e8·{k}  (5 param swap buffers of 1e8 elements)"),
                    format!("n={n}, k={k}"),
                )
            },
            SRC_NVME,
        );
    }
}

/// Plain PyTorch's model states (see `model_states`): autocast over fp32 parameters or
/// FSDP2 with a bf16 MixedPrecisionPolicy, gradients freed by `zero_grad`, AdamW foreach.
/// Its mechanisms: `pytorch_params_grads`, `pytorch_optimizer`, and the unsharded
/// FSDP buffers (`fsdp_pipeline_buffers` or `fsdp_unsharded_buffers`).
fn pytorch_states(c: &StateCtx, l: &Layout, ledger: &mut Ledger) -> StageStates {
    let states = pytorch_params_grads(c, l, ledger);
    pytorch_optimizer(c, ledger);
    if c.s.fsdp() != Fsdp::None && l.pp > 1 {
        fsdp_pipeline_buffers(c, ledger);
    } else if c.s.fsdp() != Fsdp::None {
        fsdp_unsharded_buffers(c, l, ledger);
    }
    states
}

const SRC_PYTORCH: &str = "PyTorch 2.x: fp32 params under torch.amp.autocast (or FSDP2 MixedPrecisionPolicy), torch.optim.AdamW (foreach)";
const FWD_BWD: [Phase; 2] = [Phase::Forward, Phase::Backward];
const BWD_STEP: [Phase; 2] = [Phase::Backward, Phase::OptimizerStep];
const ALL_STEP: [Phase; 3] = [Phase::Forward, Phase::Backward, Phase::OptimizerStep];

/// What PyTorch allocates in backward and frees after the step (gradients, DDP's
/// buckets): backward and step, or the whole step once gradients accumulate.
fn bwd_step(s: &Scenario, st: &Stage) -> &'static [Phase] {
    if accumulates(s, st) {
        &ALL_STEP
    } else {
        &BWD_STEP
    }
}

impl StateCtx<'_> {
    /// Parameter bytes under PyTorch: fp32 under autocast / MixedPrecisionPolicy, else `k`.
    fn pytorch_param_bytes(&self) -> u64 {
        if self.s.numerics.precision.has_master() {
            4
        } else {
            self.k
        }
    }
    fn pytorch_vals(&self) -> String {
        format!(
            "{}={}, t={}, N_s={}",
            self.psym(),
            self.psi,
            self.t,
            self.ns
        )
    }
}

/// Autocast's bf16 copies of stage `st`'s weights, split as PyTorch's first backward
/// frees them: `(C_head, C_body)` bytes; `(0, 0)` when the blocks do not run under
/// autocast (see [`autocast`]).
///
/// # Formula
/// ```text
/// C      = k·Ψ_cast/t = (k/4)·W·Ψ_cast/Ψ_i     W = 4·Ψ_i/t the stage's fp32 weights
/// Ψ_cast = L_i·(Ψ_attention + Ψ_mlp)/L + [last stage]·(Ψ_head + [tied]·V·h)
/// C_head = (k/4)·W·(Ψ_head + [tied]·V·h)/Ψ_i   (0 where the gradients are not split, see
///                                               `grad_split`), C_body = C − C_head
/// ```
/// Autocast casts what a linear reads — every linear's weight and bias, the LM head (a
/// tied matrix through it) — once per forward and caches the cast until the context
/// exits; the embedding lookup, learned positions and norms run on the fp32 parameters
/// and are never cast. Each copy is also saved by its matmul, so it outlives the cache:
/// the backward frees the head's copy first and each layer's when that layer's matmuls
/// are differentiated, just before its gradients are written (`c(j) = ⌊C_body/L_c⌋`, the
/// remainder at layer 0, as the gradients, see `ActPlan::pytorch_backward_high_water`).
/// A checkpointed layer saved nothing: its copies die with the cache and are re-cast by
/// its recomputation. Source: `torch.amp.autocast` (`cached_cast`: leaf fp32 tensors
/// that require grad; `clear_autocast_cache` on exit); measured with MemTracker
/// (`tools/measure_pytorch.py`): at the end of a bf16 AdamW run's backward no copy is
/// alive, and the embedding is never cast.
///
/// # Example
/// Llama-2-7B on one GPU, bf16: Ψ_cast = 6,738,415,616 − 131,072,000 (embedding) − 266,240
/// (norms) = 6,607,077,376, C = 2·Ψ_cast = 13,214,154,752 B; C_head = 2·131,072,000 =
/// 262,144,000 B.
pub(crate) fn autocast_copy_split(s: &Scenario, arch: &Arch, st: &Stage, w4: u128) -> (u128, u128) {
    if !autocast(s) || st.frac.0 == 0 {
        return (0, 0);
    }
    let c = arch.params();
    let layers = arch.layers.max(1) as u128;
    let vh = arch.vocab as u128 * arch.hidden as u128;
    let head = if st.i + 1 == st.p {
        c.lm_head as u128 + if arch.tied { vh } else { 0 }
    } else {
        0
    };
    let body = (c.attention as u128 + c.mlp as u128).saturating_mul(st.layers as u128);
    let k = s.numerics.precision.compute_bytes() as u128;
    // (k/4)·W·x/Ψ_i, x counted over `layers` like the stage's share `frac`.
    let copies = |x: u128| {
        mul_div_u128(w4, x, st.frac.0, false)
            .unwrap_or(0)
            .min(w4)
            .saturating_mul(k)
            / 4
    };
    let all = copies(body.saturating_add(head.saturating_mul(layers)));
    let split = grad_split(s, arch, st, w4) != (0, 0);
    let h = if split {
        copies(head.saturating_mul(layers)).min(all)
    } else {
        0
    };
    (h, all - h)
}

/// One micro-batch's logits and loss in the forward phase of stage `st`.
///
/// # Formula
/// ```text
/// logits_bytes                                  (see activations::logits_bytes: k + 12 per logit)
/// PyTorch under autocast, no gradient accumulation, one micro-batch alive, last stage:
///   logits_bytes − 4·T·V/t + max(0, 4·T·V/t + C_B − C)
/// ```
/// The loss's forward (logits, fp32 upcast, log-softmax: `k + 8`) runs inside autocast
/// with its whole cache `C` (`autocast_copy_split`); the loss's backward (`k + 12`) runs
/// after autocast exited, when only the copies a matmul saved are alive: `C_B` = the head's
/// and the layers' that are not checkpointed (with every layer checkpointed, the head's
/// only). The forward phase holds the larger of the two moments; the copies are their own
/// item (`C`), so this item adds only what the backward moment has beyond it.
/// Source: `torch.amp.autocast` (`clear_autocast_cache` on exit); measured with
/// MemTracker (`tools/measure_pytorch.py`, bf16 runs with full checkpointing).
///
/// # Example
/// Llama shape h = 256, V = 4096, T = 512, bf16, every layer checkpointed: C − C_B =
/// 2·(4,868,352 − 1,048,576 − 2,304 − 1,048,576) = 5,537,792 B < 4·T·V = 8,388,608 B, so
/// the item is logits_bytes − 5,537,792 B.
pub(crate) fn logits_forward_bytes(
    s: &Scenario,
    arch: &Arch,
    x: &Shape,
    st: &Stage,
    copies: (u128, u128),
) -> u128 {
    let (lb, _) = logits_bytes(s, arch, x);
    let one_alive = s.parallel.schedule != Schedule::Gpipe || s.workload.microbatches.get() <= 1;
    let walked = pytorch_grads(s) && !accumulates(s, st);
    if !(walked && one_alive && st.i + 1 == st.p) {
        return lb;
    }
    let exit = CopyWalk::of(s, st, copies).exit;
    let tv4 = (4 * x.b * x.sl * arch.vocab as u128).div_ceil(x.t);
    lb - tv4 + tv4.saturating_sub(exit)
}

/// How autocast's copies leave a stage in PyTorch's first backward (see
/// `autocast_copy_split`): the checkpointed layers' when autocast exits, the head's
/// first, then each layer's just before its gradients are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CopyWalk {
    /// The head's copy, `C_head`.
    pub head: u128,
    /// Layer `j`'s copy is `per + [j = 0]·rem` (`C_body` over the chunk's `L_c` layers).
    pub per: u128,
    /// The remainder of `C_body/L_c`, with layer 0.
    pub rem: u128,
    /// Checkpointed layers of the chunk, `n` (the first `n`).
    pub n: u128,
    /// Freed when autocast exits: the checkpointed layers' copies, `Σ_{j<n} c(j)`.
    pub exit: u128,
}

impl CopyWalk {
    /// The walk of stage `st`'s copies `(C_head, C_body)` (`autocast_copy_split`).
    pub fn of(s: &Scenario, st: &Stage, (head, body): (u128, u128)) -> CopyWalk {
        let (lc, n) = chunk_layers(s, st.layers);
        let full = s.activations.recompute == Recompute::Full
            && s.stack.convention != Convention::Korthikanti;
        let n = if full { n } else { 0 };
        let (per, rem) = (body / lc, body % lc);
        CopyWalk {
            head,
            per,
            rem,
            n,
            exit: if n > 0 { n * per + rem } else { 0 },
        }
    }
    /// Layer `j`'s copy, `c(j)`.
    pub fn layer(&self, j: u128) -> u128 {
        self.per + if j == 0 { self.rem } else { 0 }
    }
}

/// Autocast's bf16 copies of the weights (`autocast_copy_split`).
///
/// # Formula
/// ```text
/// PyTorch, no gradient accumulation:
///   forward:   C = k·Ψ_cast/t          (the cast cache, every linear's weights)
///   backward:  the copies alive at the backward's high-water mark, counted with it
///              (`activation_items`, `ActPlan::pytorch_backward_high_water`)
/// with gradient accumulation (the gradients resident, the backward lumped):
///   forward and backward:  C
/// ```
/// Source: `torch.amp.autocast` (`cache_enabled=True`), `torch.utils.checkpoint` (a
/// checkpointed block saves only its input); measured with MemTracker
/// (`tools/measure_pytorch.py`).
///
/// # Example
/// Llama-2-7B, bf16 autocast, t = 1: forward 2·6,607,077,376 = 13,214,154,752 B.
fn autocast_copies(c: &StateCtx, ledger: &mut Ledger) -> (u128, u128) {
    let (s, k, t, psi) = (c.s, c.k, c.t, c.psi);
    let w4 = mul_div_ceil(4, psi, t) as u128;
    let (head, body) = autocast_copy_split(s, c.arch, c.st, w4);
    if head + body == 0 {
        return (0, 0);
    }
    let bytes = (head + body).min(u64::MAX as u128) as u64;
    let src = "PyTorch torch.amp.autocast weight-cast cache (cache_enabled=True)";
    let vals = || format!("{}, C_head={head} B, C_body={body} B", c.pytorch_vals());
    if pytorch_grads(s) && !accumulates(s, c.st) {
        ledger.push_in(
            &[Phase::Forward], Mech::AutocastCache,
            Component::Weights,
            Location::Gpu,
            bytes,
            || {
                (
                    format!("{k}·Ψ_cast/t  (autocast bf16 weight copies, forward: the cast cache of every linear)"),
                    vals(),
                )
            },
            src,
        );
    } else {
        ledger.push_in(
            &FWD_BWD, Mech::AutocastCopies,
            Component::Weights,
            Location::Gpu,
            bytes,
            || {
                (
                    format!("{k}·Ψ_cast/t  (autocast bf16 weight copies of every linear, forward and backward)"),
                    vals(),
                )
            },
            src,
        );
    }
    (head, body)
}

/// PyTorch parameters (`p·Ψ_i/t`, ÷ N_s under FSDP full shard), autocast's bf16 weight
/// cache (forward and backward, without FSDP), gradients (backward and step: freed by
/// `zero_grad`; the whole step under gradient accumulation, see `accumulates`) and
/// DDP's bucket copy of the gradients (N_d > 1, unsharded). Returns the gradient bytes
/// and the copies' split.
fn pytorch_params_grads(c: &StateCtx, l: &Layout, ledger: &mut Ledger) -> StageStates {
    let (s, t, psi) = (c.s, c.t, c.psi);
    let pb = c.pytorch_param_bytes();
    let psym = c.psym();
    let sym = |div: u64| shard_symbol(psym, div);
    ledger.push(
        Mech::PtWeights,
        Component::Weights,
        Location::Gpu,
        mul_div_ceil(pb, psi, t * c.w_div),
        || (format!("{pb}·{}", sym(c.w_div)), c.pytorch_vals()),
        SRC_PYTORCH,
    );
    let copies = autocast_copies(c, ledger);
    let grads = mul_div_ceil(pb, psi, t * c.g_div);
    let phases = bwd_step(s, c.st);
    ledger.push_in(
        phases,
        Mech::PtGradients,
        Component::Gradients,
        Location::Gpu,
        grads,
        || {
            (
                format!("{pb}·{}  (freed by zero_grad)", sym(c.g_div)),
                c.pytorch_vals(),
            )
        },
        SRC_PYTORCH,
    );
    if l.dp > 1 && c.z == Zero::Z0 && s.fsdp() == Fsdp::None {
        ledger.push_in(
            phases, Mech::DdpBuckets,
            Component::CommBuffers,
            Location::Gpu,
            mul_div_ceil(pb, psi, t),
            || {
                (
                    format!("{pb}·{psym}/t  (DDP bucket copy of the gradients)"),
                    c.pytorch_vals(),
                )
            },
            "PyTorch DistributedDataParallel Reducer buckets (gradient_as_bucket_view=False, the default)",
        );
    }
    StageStates { grads, copies }
}

/// PyTorch optimizer states, and AdamW's foreach temporaries in the step
/// (`torch._foreach_sqrt(v)`: `s_b·Ψ_i/t`, ÷ N_s when sharded).
fn pytorch_optimizer(c: &StateCtx, ledger: &mut Ledger) {
    let (s, t, psi) = (c.s, c.t, c.psi);
    let share = (
        c.st.frac.0,
        c.st.frac.1.saturating_mul((t * c.o_div) as u128),
    );
    let bytes = optimizer_state_bytes(
        s.numerics.optimizer,
        s.numerics.precision,
        psi,
        c.arch,
        share,
    );
    if bytes > 0 {
        let per_rank = if s.numerics.optimizer == Optimizer::Adafactor {
            bytes
        } else {
            bytes.div_ceil(t * c.o_div)
        };
        let (formula, src) = optimizer_state_formula(s.numerics.optimizer, s.numerics.precision);
        ledger.push(
            Mech::PtOptimizerStates,
            Component::OptimizerStates,
            Location::Gpu,
            per_rank,
            || {
                (
                    format!("[{formula}]/(t{})", if c.o_div > 1 { "·N_s" } else { "" }),
                    c.pytorch_vals(),
                )
            },
            src,
        );
    }
    if matches!(s.numerics.optimizer, Optimizer::Adam | Optimizer::Adamw) {
        adam_temporaries(c, ledger);
    }
}

/// The temporaries of PyTorch's Adam/AdamW update, by implementation (`adam_impl`).
///
/// # Formula
/// ```text
/// foreach:  s_b·Ψ_i/(t·N_s)        torch._foreach_sqrt(v) of every parameter at once
/// fused:    0                      one fused kernel, no temporary tensor
/// forloop:  2·s_b·P_max/(t·N_s)    sqrt(v) and its quotient by the bias correction, for
///                                  one parameter at a time (the largest, P_max)
/// ```
/// `s_b` state bytes (4), `P_max` the largest single parameter tensor.
/// Source: PyTorch `torch/optim/adamw.py` (`_multi_tensor_adamw`, `_fused_adamw`,
/// `_single_tensor_adamw`); measured with MemTracker (`tools/measure_pytorch.py
/// --impl-into`): at seq 32 the step is the peak, and the three differ by exactly these.
///
/// # Example
/// Llama-2-7B, fp32 states, one GPU: foreach 4·6,738,415,616 = 26,953,662,464 B; fused 0;
/// for-loop 2·4·131,072,000 (the embedding) = 1,048,576,000 B.
fn adam_temporaries(c: &StateCtx, ledger: &mut Ledger) {
    let (s, t) = (c.s, c.t);
    let sb = s.numerics.precision.state_bytes();
    let sym = shard_symbol(c.psym(), c.o_div);
    let (bytes, formula, src) = match s.numerics.adam_impl {
        AdamImpl::Foreach => (
            mul_div_ceil(sb, c.psi, t * c.o_div),
            format!("{sb}·{sym}  (foreach sqrt(v) temporaries)"),
            "PyTorch torch.optim.AdamW foreach implementation (_multi_tensor_adamw: torch._foreach_sqrt)",
        ),
        AdamImpl::Fused => (
            0,
            "0  (fused kernel: no temporaries)".to_string(),
            "PyTorch torch.optim.AdamW(fused=True) (_fused_adamw)",
        ),
        AdamImpl::Forloop => (
            mul_div_ceil(2 * sb, c.largest.min(c.psi), t * c.o_div),
            format!("2·{sb}·P_max/(t{})  (for-loop: sqrt(v) and the quotient of the largest tensor)", if c.o_div > 1 { "·N_s" } else { "" }),
            "PyTorch torch.optim.AdamW(foreach=False) (_single_tensor_adamw)",
        ),
    };
    let vals = format!("{}, P_max={}", c.pytorch_vals(), c.largest);
    ledger.push_in(
        &[Phase::OptimizerStep],
        Mech::AdamTemporaries,
        Component::Workspace,
        Location::Gpu,
        bytes,
        || (formula, vals),
        src,
    );
}

/// FSDP under pipeline parallelism keeps the stage unsharded across micro-batches
/// (`reshard_after_forward=False`) and accumulates unsharded fp32 gradients until the
/// last micro-batch's reduce-scatter: `k·Ψ_i/t` (forward, backward) + `4·Ψ_i/t`
/// (backward, step).
fn fsdp_pipeline_buffers(c: &StateCtx, ledger: &mut Ledger) {
    let (k, t, psi, psym) = (c.k, c.t, c.psi, c.psym());
    let src = "PyTorch FSDP2 under pipeline parallelism (torchtitan: reshard_after_forward=False with PP; gradients reduce-scattered after the last micro-batch)";
    ledger.push_in(
        &FWD_BWD,
        Mech::FsdpStageParams,
        Component::GatheredLayer,
        Location::Gpu,
        mul_div_ceil(k, psi, t),
        || {
            (
                format!("{k}·{psym}/t  (stage kept unsharded across micro-batches)"),
                c.pytorch_vals(),
            )
        },
        src,
    );
    ledger.push_in(
        bwd_step(c.s, c.st),
        Mech::FsdpStageGrads,
        Component::GatheredLayer,
        Location::Gpu,
        mul_div_ceil(4, psi, t),
        || {
            (
                format!("4·{psym}/t  (unsharded fp32 gradients accumulated over micro-batches)"),
                c.pytorch_vals(),
            )
        },
        src,
    );
}

/// FSDP2's unsharded buffers without pipeline parallelism: the root group (embedding,
/// final norm, head) for the whole forward and backward, the current block, the
/// prefetched next block, and the unsharded fp32 gradient block before its
/// reduce-scatter.
///
/// # Formula
/// ```text
/// k·P_root/t (fwd, bwd) + k·P_block/t (fwd, bwd) + 4·P_block/t (bwd)
/// prefetched block:  k·P_block/t (bwd);  max(0, k·P_block/t − L_f) (fwd)
/// ```
/// `L_f` the logits and loss of the forward (`logits_forward_bytes`): the last block
/// prefetches nothing, so the forward's moment with the logits holds one block, and the
/// earlier blocks' moments with two blocks hold no logits — the forward phase, which sums
/// every saved activation with the logits, counts the second block only beyond them.
/// Source: PyTorch FSDP2 `fully_shard` (forward prefetch of the next block); measured with
/// FSDPMemTracker on 8 ranks (`tools/measure_pytorch.py --fsdp-into`): the forward's peak
/// holds the shard, the root and one block (PARAM 35,496,192 B = 7,637,248 + 16,779,264 +
/// 11,079,680).
///
/// # Example
/// The measured 8-rank fp32 run (h = 512, 4 layers, V = 4096, b·s = 512): P_block =
/// 2,769,920, k·P_block = 11,079,680 B < L_f = 36,700,160 B: the forward holds one block.
fn fsdp_unsharded_buffers(c: &StateCtx, l: &Layout, ledger: &mut Ledger) {
    let (arch, k, t) = (c.arch, c.k, c.t);
    let counts = arch.params();
    let root = counts.embedding + counts.lm_head + arch.norm.params(arch.hidden as u128) as u64;
    ledger.push_in(
        &FWD_BWD,
        Mech::FsdpRoot,
        Component::GatheredLayer,
        Location::Gpu,
        mul_div_ceil(k, root, t),
        || {
            (
                format!("{k}·P_root/t  (root group unsharded: embedding, final norm, head)"),
                format!("P_root={root}, t={t}"),
            )
        },
        "PyTorch FSDP2 fully_shard(model) root group",
    );
    let block = counts.per_layer;
    let one = mul_div_ceil(k, block, t);
    ledger.push_in(
        &FWD_BWD,
        Mech::FsdpBlock,
        Component::GatheredLayer,
        Location::Gpu,
        one,
        || {
            (
                format!("{k}·P_block/t  (the current unsharded block)"),
                format!("P_block={block}, t={t}"),
            )
        },
        "PyTorch FSDP2 fully_shard",
    );
    ledger.push_in(
        &[Phase::Backward],
        Mech::FsdpPrefetch,
        Component::GatheredLayer,
        Location::Gpu,
        one,
        || {
            (
                format!("{k}·P_block/t  (the prefetched next block)"),
                format!("P_block={block}, t={t}"),
            )
        },
        "PyTorch FSDP2 fully_shard (backward prefetch of the next block)",
    );
    let x = Shape::of(c.s, arch, l);
    let logits = logits_forward_bytes(c.s, arch, &x, c.st, (0, 0));
    let extra = (one as u128).saturating_sub(logits) as u64;
    if extra > 0 {
        ledger.push_in(
            &[Phase::Forward], Mech::FsdpPrefetchForward,
            Component::GatheredLayer,
            Location::Gpu,
            extra,
            || {
                (
                    format!("max(0, {k}·P_block/t − L_f)  (the prefetched next block, beyond the logits: the last block prefetches none)"),
                    format!("P_block={block}, t={t}, L_f={logits} B"),
                )
            },
            "PyTorch FSDP2 fully_shard (forward prefetch of the next block); measured with FSDPMemTracker",
        );
    }
    ledger.push_in(
        &[Phase::Backward],
        Mech::FsdpGradBlock,
        Component::GatheredLayer,
        Location::Gpu,
        mul_div_ceil(4, block, t),
        || {
            (
                "4·P_block/t  (unsharded fp32 gradient block before reduce-scatter)".into(),
                format!("P_block={block}, t={t}"),
            )
        },
        "PyTorch FSDP2 MixedPrecisionPolicy(reduce_dtype=float32)",
    );
}

/// Communication buffers and runtime overheads per GPU: CUDA context, NCCL, DeepSpeed buckets.
///
/// # Formula
/// ```text
/// CUDA context + cuBLAS/cuDNN workspaces  C MiB                      (default 600)
/// NCCL communicator buffers               N MiB                      (default 256 with > 1 GPU, else 0)
/// DeepSpeed ZeRO-1/2/3 reduce bucket      k·B_r·(2 if overlap_comm)   (B_r = reduce_bucket_size)
/// DeepSpeed ZeRO-1/2 all-gather bucket    k·B_a                      (optimizer step)
/// DeepSpeed ZeRO-3 prefetch bucket        k·min(B_p, M_live − L)     (forward, backward; M_live =
///                                         stage3_max_live_parameters bounds the gathered params)
/// ```
/// Sources: CUDA 12 context on Hopper measures 500–700 MiB including cuBLAS/cuDNN
/// handles (NVIDIA CUDA C Programming Guide, lazy loading; PyTorch "Understanding CUDA
/// Memory Usage"); NCCL_BUFFSIZE 4 MiB per channel and peer (NCCL environment docs);
/// DeepSpeed config defaults (reduce_bucket_size 5e8, allgather_bucket_size 5e8,
/// stage3_prefetch_bucket_size 5e7); seed 001 (overlap_comm costs memory: ~+7%).
pub(crate) fn overhead_items(s: &Scenario, l: &Layout, largest: u64, ledger: &mut Ledger) {
    let mib = 1u64 << 20;
    ledger.push(Mech::CudaContext,
        Component::Overhead,
        Location::Gpu,
        s.runtime.cuda_ctx_mib as u64 * mib,
        || {
            (
                "C  (CUDA context + cuBLAS/cuDNN workspaces)".into(),
                format!("C={} MiB", s.runtime.cuda_ctx_mib),
            )
        },
        "CUDA 12 context on H100 with cuBLAS/cuDNN handles: 500–700 MiB (PyTorch notes: Understanding CUDA Memory Usage)",
    );
    let nccl = s
        .runtime
        .nccl_mib
        .unwrap_or(if l.world > 1 { 256 } else { 0 });
    if nccl > 0 {
        ledger.push(Mech::Nccl,
            Component::Overhead,
            Location::Gpu,
            nccl as u64 * mib,
            || {
                (
                    "N  (NCCL communicator buffers)".into(),
                    format!("N={nccl} MiB, GPUs={}", l.world),
                )
            },
            "NCCL: NCCL_BUFFSIZE 4 MiB per channel per peer (NCCL environment variables documentation)",
        );
    }
    deepspeed_buckets(s, largest, ledger);
}

/// DeepSpeed's ZeRO communication buckets (training, ZeRO ≥ 1, not FSDP): the gradient
/// reduce bucket in backward (doubled with `overlap_comm`), the updated-parameter
/// all-gather bucket in the step (stages 1/2) or the stage-3 parameter prefetch.
fn deepspeed_buckets(s: &Scenario, largest: u64, ledger: &mut Ledger) {
    let z = s.zero();
    if s.workload.mode != super::scenario::Mode::Train
        || s.stack.framework != Framework::Deepspeed
        || z < Zero::Z1
        || s.fsdp() != Fsdp::None
    {
        return;
    }
    let k = s.numerics.precision.compute_bytes();
    let copies = if s.runtime.overlap_comm { 2 } else { 1 };
    let src = "DeepSpeed ZeRO config (reduce_bucket_size, allgather_bucket_size, stage3_prefetch_bucket_size, overlap_comm); seed 001";
    ledger.push_in(
        &[Phase::Backward],
        Mech::ReduceBucket,
        Component::CommBuffers,
        Location::Gpu,
        mul(k * copies, s.runtime.reduce_bucket),
        || {
            (
                format!(
                    "{k}·B_r{}  (gradient reduce bucket)",
                    if copies == 2 {
                        "·2 (overlap_comm)"
                    } else {
                        ""
                    }
                ),
                format!("B_r={}, k={k}", s.runtime.reduce_bucket),
            )
        },
        src,
    );
    if z < Zero::Z3 {
        ledger.push_in(
            &[Phase::OptimizerStep],
            Mech::AllgatherBucket,
            Component::CommBuffers,
            Location::Gpu,
            mul(k, s.runtime.allgather_bucket),
            || {
                (
                    format!("{k}·B_a  (updated-parameter all-gather bucket)"),
                    format!("B_a={}, k={k}", s.runtime.allgather_bucket),
                )
            },
            src,
        );
    } else {
        ledger.push_in(
            &FWD_BWD, Mech::PrefetchBucket,
            Component::CommBuffers,
            Location::Gpu,
            mul(k, s.runtime.prefetch_bucket.min(s.runtime.max_live_params.saturating_sub(largest))),
            || {
                (
                    format!("{k}·min(B_p, M_live − L)  (ZeRO-3 parameter prefetch, capped by stage3_max_live_parameters)"),
                    format!("B_p={}, M_live={}, L={largest}, k={k}", s.runtime.prefetch_bucket, s.runtime.max_live_params),
                )
            },
            src,
        );
    }
}

/// One block's saved activations per micro-batch under the scenario's convention:
/// bytes, the formula, its source.
///
/// # Formula
/// ```text
/// seed003:      (34·b·s'·h + 5·b·a·s'·s)·(k/2)
/// seed002:      16k·b·s'·h + 2·b·s'·h + 2k·b·a·s'·s + b·a·s'·s
/// korthikanti:  Korthikanti et al. 2022 Table 2 row (tp, sp, recompute)
/// memfit:       Σ memfit_layer terms
/// ```
pub(crate) fn layer_activations(s: &Scenario, arch: &Arch, x: &Shape) -> u128 {
    match s.stack.convention {
        Convention::Seed003 => (34 * x.b * x.sl * x.h + 5 * x.b * x.a * x.sl * x.s) * x.k / 2,
        Convention::Seed002 => {
            let y = Shape { s: x.sl, ..*x };
            let quad = 2 * x.k * x.b * x.a * x.sl * x.s + x.b * x.a * x.sl * x.s;
            16 * x.k * y.b * y.s * y.h + 2 * y.b * y.s * y.h + quad
        }
        Convention::Korthikanti => {
            let (n, d) = korthikanti_layer(x, s.parallel.sp, s.activations.recompute);
            n / d
        }
        _ => memfit_layer(s, arch, x).iter().map(|t| t.bytes).sum(),
    }
}

/// The source of `layer_activations` under the scenario's convention.
fn layer_activations_source(s: &Scenario) -> &'static str {
    match s.stack.convention {
        Convention::Seed003 => SRC_ACT,
        Convention::Seed002 => "seed 002 (hepengfei: per-layer activations with k bytes per value)",
        Convention::Korthikanti => SRC_ACT_TP,
        _ => "memfit: Korthikanti et al. 2022 §4.1 derivation generalised (GQA, SwiGLU, flash, RMSNorm, MoE, CP)",
    }
}

/// The formula text of `layer_activations`.
fn layer_activations_formula(s: &Scenario, arch: &Arch, x: &Shape) -> String {
    match s.stack.convention {
        Convention::Seed003 => "(34·b·s'·h + 5·b·a·s'·s)·(k/2)".into(),
        Convention::Seed002 => "16k·b·s'·h + 2·b·s'·h + 2k·b·a·s'·s + b·a·s'·s".into(),
        Convention::Korthikanti => "Korthikanti et al. 2022 Table 2 row (tp, sp, recompute)".into(),
        _ => memfit_layer(s, arch, x)
            .iter()
            .map(|t| format!("{} [{}]", t.formula, t.name))
            .collect::<Vec<_>>()
            .join(" + "),
    }
}

/// Whether a PyTorch stage runs a forward after its first backward with its most
/// micro-batches in flight (gradient accumulation): from then on the gradients (and
/// what lives from backward to the step) are alive in the forward too.
///
/// # Formula
/// ```text
/// 1F1B (and no pipeline):  m ≥ p − i + 1      (warm-up p − i − 1 forwards, F, B, then F again)
/// GPipe:                   never               (every forward precedes every backward)
/// ```
pub(crate) fn accumulates(s: &Scenario, st: &Stage) -> bool {
    s.parallel.schedule != Schedule::Gpipe
        && s.workload.microbatches.get().max(1) > st.p.saturating_sub(st.i)
}

/// Whether the stage's gradients are written during backward and freed by
/// `zero_grad` (PyTorch, full fine-tuning), rather than kept as a resident buffer.
pub(crate) fn pytorch_grads(s: &Scenario) -> bool {
    s.stack.framework == Framework::Pytorch && s.finetune.kind() == Finetune::Full
}

/// What one stage's activations are made of, per model chunk: the bytes a layer
/// saves (`A`), a checkpointed layer's kept input (`I`), chunk layers `L_c`, the
/// checkpointed layers `n` of a chunk, the chunks in flight `C` (see `in_flight`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ActPlan {
    /// Bytes one layer saves for backward (`A`).
    pub a: u128,
    /// Bytes a checkpointed layer keeps (its input, `I`).
    pub input: u128,
    /// Layers per model chunk, `L_c = L_i/v`.
    pub lc: u128,
    /// Checkpointed layers per chunk (0 without full recompute).
    pub n: u128,
    /// Chunks in flight at the stage's peak, `C`.
    pub chunks: u128,
    /// Chunks per micro-batch, `v`.
    pub v: u128,
    /// What a recomputed layer's first norm saves of the kept checkpoint as it is: `I`,
    /// or 0 where a 16-bit composite RMSNorm saves its fp32 upcast instead.
    pub alias: u128,
    /// The moments inside a layer's backward (`layer_backward`; `None`: the whole-layer
    /// moment only).
    pub layer_bwd: Option<LayerBackward>,
}

impl ActPlan {
    /// The plan of stage `st` (Korthikanti's convention counts recomputation inside `A`).
    pub fn of(s: &Scenario, arch: &Arch, l: &Layout, st: &Stage) -> ActPlan {
        let x = Shape::of(s, arch, l);
        let full = s.activations.recompute == Recompute::Full
            && s.stack.convention != Convention::Korthikanti;
        let (lc, n) = chunk_layers(s, st.layers);
        let (chunks, v) = in_flight(s, st.p, st.i);
        ActPlan {
            a: layer_activations(s, arch, &x),
            input: layer_input_bytes(s, &x),
            lc,
            n: if full { n } else { 0 },
            chunks,
            v,
            alias: if arch.norm == Norm::Rmsnorm && x.k < 4 && !autocast(s) {
                0
            } else {
                layer_input_bytes(s, &x)
            },
            layer_bwd: match s.stack.convention {
                Convention::Seed002 | Convention::Seed003 | Convention::Korthikanti => None,
                _ => layer_backward(s, arch, &x),
            },
        }
    }
    /// Bytes one chunk of one micro-batch saves: `S_c = n·I + (L_c − n)·A`.
    pub fn chunk_saved(&self) -> u128 {
        self.n * self.input + (self.lc - self.n) * self.a
    }
    /// Whether every layer of a chunk is checkpointed (then its last layer's forward
    /// and its first layer's recomputation hold a layer's working set `A` on top).
    pub fn all_checkpointed(&self) -> bool {
        self.n > 0 && self.n == self.lc
    }
    /// Saved activations at the peak: `S_c·C + [n = L_c]·A`.
    pub fn peak(&self) -> u128 {
        self.chunk_saved() * self.chunks + if self.all_checkpointed() { self.a } else { 0 }
    }
    /// The bytes a checkpointed layer's recomputation adds: its working set `A` less its
    /// input where the recomputed first norm saves it as it is (the kept checkpoint, `I`:
    /// fp32 and autocast runs, LayerNorm); a 16-bit composite RMSNorm saves its fp32 upcast
    /// instead (saved-tensor hooks on `LlamaRMSNorm` and `torch.nn.RMSNorm`).
    pub fn recomputed(&self) -> u128 {
        self.a - self.alias.min(self.a)
    }
}

/// Which of a stage's gradients PyTorch writes before its first layer's backward and
/// which after its last: `(G_head, G_emb)` in bytes, the rest `G − G_head − G_emb` layer
/// by layer (see `ActPlan::pytorch_backward_high_water`).
///
/// # Formula
/// ```text
/// G_head = G·Ψ_head/Ψ_i   last stage: final norm + LM head (+ the tied matrix, whose gradient
///                          the LM head writes first)
/// G_emb  = G·Ψ_emb/Ψ_i    first stage: the embedding (and learned positions), written last
/// FSDP and interleaved pipelines (v > 1): (0, 0), spread over the layers
/// ```
/// Source: PyTorch autograd order (the loss's backward reaches the LM head first, the
/// embedding last); measured with MemTracker: at a bf16 run's backward peak the embedding's
/// gradient is not yet written (`tools/measure_pytorch.py`).
///
/// # Example
/// Llama-2-7B on one GPU, fp32 gradients G = 26,953,662,464 B: G_head = 4·(4096 + 131,072,000)
/// = 524,304,384 B, G_emb = 4·131,072,000 = 524,288,000 B.
pub(crate) fn grad_split(s: &Scenario, arch: &Arch, st: &Stage, grads: u128) -> (u128, u128) {
    // FSDP reduce-scatters per unit (the root's at the end); its walk is not split here.
    if s.virtual_stages() > 1 || st.frac.0 == 0 || s.fsdp() != Fsdp::None {
        return (0, 0);
    }
    let c = arch.params();
    let (first, last) = (st.i == 0, st.i + 1 == st.p);
    let vh = arch.vocab as u128 * arch.hidden as u128;
    let final_norm = arch.norm.params(arch.hidden as u128);
    let head = if last {
        final_norm + c.lm_head as u128 + if arch.tied { vh } else { 0 }
    } else {
        0
    };
    let emb = if first {
        (c.embedding as u128).saturating_sub(if arch.tied && last { vh } else { 0 })
    } else {
        0
    };
    let (h, e) = (
        grad_share(arch, st, grads, head),
        grad_share(arch, st, grads, emb),
    );
    (h, e.min(grads - h))
}

/// The bytes of `params` parameters' gradients, of the stage's `grads` (`G·Ψ_x/Ψ_i`).
fn grad_share(arch: &Arch, st: &Stage, grads: u128, params: u128) -> u128 {
    let layers = arch.layers.max(1) as u128;
    mul_div_u128(grads, params.saturating_mul(layers), st.frac.0, false)
        .unwrap_or(0)
        .min(grads)
}

/// A tied embedding's gradient accumulation at the end of PyTorch's first backward: the
/// LM head wrote the tied matrix's gradient first; the embedding's backward produces its
/// own dense gradient of the same shape, and autograd's accumulation allocates their sum
/// before the old one is freed — three `V·h` gradients for a moment, two beyond the one
/// already counted.
///
/// # Formula
/// ```text
/// 2·G_tied = 2·G·V·h/Ψ_i      tied, embedding and head on the one stage, PyTorch without
///                              accumulation (the walked split, `grad_split`); else 0
/// ```
/// Source: PyTorch autograd's `AccumulateGrad` (a new `grad = old + new` when the old
/// gradient cannot be updated in place); measured with MemTracker
/// (`tools/measure_pytorch.py`, GPT-2 shape, AdamW fused: the backward's peak holds three
/// `V·h` fp32 tensors, 12,582,912 B, with the tied gradient not yet in place).
///
/// # Example
/// GPT-2 small, fp32 gradients: 2·4·50,257·768 = 308,779,008 B.
pub(crate) fn tied_accumulation_bytes(s: &Scenario, arch: &Arch, st: &Stage, grads: u128) -> u128 {
    let walked =
        pytorch_grads(s) && !accumulates(s, st) && grad_split(s, arch, st, grads) != (0, 0);
    if !(arch.tied && st.p == 1 && walked) {
        return 0;
    }
    2 * grad_share(arch, st, grads, arch.vocab as u128 * arch.hidden as u128)
}

/// The embedding's backward at the end of PyTorch's first backward: every gradient but
/// the embedding's is written, the embedding's dense gradient is being produced, and the
/// residual stream's gradient that reaches it is still alive.
///
/// # Formula
/// ```text
/// E = G − G_emb + G_tok + R,   R = T·h·res/r    first stage, the walked split
///                                               (`grad_split`); else no such moment
/// ```
/// `G` the stage's gradient bytes, `G_emb` the embedding's (`grad_split`), `G_tok` the token
/// matrix's `G·V·h/Ψ_i` (tied: its second gradient, the accumulation's `new`), `T = b·s'`,
/// `res` bytes per residual element (`Shape::res`), `r = t` under sequence parallelism.
/// Returns `(G_tok, R)`.
/// Source: PyTorch autograd (`embedding_dense_backward` allocates the whole `V·h` gradient);
/// measured with MemTracker on full-width Llama-2-7B blocks, fp32 SGD with sdpa: at the peak
/// GRAD = every gradient but the embedding's and TEMP 557,842,432 B = 4·32000·4096 +
/// 4·2048·4096.
///
/// # Example
/// Llama-2-7B shape, 2 layers, b = 1, s = 2048, fp32: G_tok = 524,288,000 B, R =
/// 33,554,432 B, E = 2,667,659,264 − 524,288,000 + 524,288,000 + 33,554,432 =
/// 2,701,213,696 B.
pub(crate) fn embedding_backward(
    s: &Scenario,
    arch: &Arch,
    x: &Shape,
    st: &Stage,
    grads: u128,
) -> Option<(u128, u128)> {
    if st.i != 0 || grad_split(s, arch, st, grads) == (0, 0) {
        return None;
    }
    let r = if s.parallel.sp { x.t } else { 1 };
    let g_tok = grad_share(arch, st, grads, arch.vocab as u128 * arch.hidden as u128);
    Some((g_tok, x.b * x.sl * x.h * x.res / r))
}

/// Activations for one pipeline stage under the scenario's convention, where the
/// gradients are resident (not PyTorch's first backward, which the step program walks
/// moment by moment): the explorer's fast path, and the text of the activations item.
///
/// # Formula
/// ```text
/// saved at the peak:  S_c·C + [n = L_c]·A        S_c = n·I + (L_c − n)·A
/// output layer (last stage): logits_bytes · (m under GPipe, else 1)
/// ```
/// `A` from `layer_activations` (memfit's terms by default, seed 003, seed 002 or
/// Korthikanti's Table 2, which counts full recompute as `2sbh` per layer without the
/// working set); `I` the block input; `C` chunks in flight of `L_c = L_i/v` layers
/// (`in_flight`, `chunk_layers`); `n` checkpointed layers per chunk (full recompute;
/// `ckpt_layers`, 0 = all). A layer's working set `A` comes on top of the saved ones
/// only when the chunk's last layer is itself checkpointed (`n = L_c`): then its
/// forward and its recomputation in backward hold `A` while every other layer's
/// checkpoint is still kept; with `n < L_c` the non-checkpointed layers' `A` is the
/// larger moment. The step program (`program::walk`) reaches these bytes at the forward's
/// and the backward's high-water moments (property-tested); PyTorch without gradient
/// accumulation is the program's alone.
///
/// # Example
/// Llama-2-7B, b = 1, s = 4096, flash, DeepSpeed, no recompute, one stage:
/// 32 · 763,920,384 = 24,445,452,288 B.
pub(crate) fn activation_items(
    s: &Scenario,
    arch: &Arch,
    l: &Layout,
    st: &Stage,
    states: StageStates,
    ledger: &mut Ledger,
) {
    let x = Shape::of(s, arch, l);
    let plan = ActPlan::of(s, arch, l, st);
    ledger.push_in(
        &FWD_BWD,
        Mech::Activations,
        Component::Activations,
        Location::Gpu,
        plan.peak().min(u64::MAX as u128) as u64,
        || activations_text(s, arch, l, &plan),
        layer_activations_source(s),
    );
    if st.i + 1 == st.p {
        logits_item(s, arch, &x, st, states.copies, ledger);
    }
}

/// The activations item's formula and values (the plan of `activation_items`).
pub(crate) fn activations_text(s: &Scenario, arch: &Arch, l: &Layout, plan: &ActPlan) -> Text {
    let x = Shape::of(s, arch, l);
    let formula = layer_activations_formula(s, arch, &x);
    let m_i = plan.chunks as f64 / plan.v as f64;
    (
        if plan.n > 0 {
            format!(
                "(n·I + (L_c − n)·A)·C{};  A = {formula}",
                if plan.all_checkpointed() { " + A" } else { "" }
            )
        } else {
            format!("A·L_c·C;  A = {formula}")
        },
        format!(
            "A={} B/layer, I={}, L_c={}, n={}, C={} chunks (m_i={:.3}), b={}, s={}, s'={}, h={}, a={}, a_kv={}, d={}, f={}, t={}, c={}, k={}, attn={}, recompute={}, sp={}",
            plan.a, plan.input, plan.lc, plan.n, plan.chunks, m_i, x.b, x.s, x.sl, x.h, x.a, x.kv, x.d, x.f, x.t, l.cp, x.k,
            s.activations.attn.as_str(), s.activations.recompute.as_str(), s.parallel.sp as u8
        ),
    )
}

/// The activations' source under the scenario's convention.
pub(crate) fn activations_source(s: &Scenario) -> &'static str {
    layer_activations_source(s)
}

/// Ring attention passes K/V chunks between the CP ranks, double-buffered.
///
/// # Formula
/// ```text
/// 2·2·b·s'·⌈a_kv/t⌉·d·k      (forward and backward; c > 1 only)
/// ```
/// Source: ring attention (Liu et al. 2023); Megatron-core / torchtitan CP.
pub(crate) fn cp_ring_buffers(s: &Scenario, arch: &Arch, l: &Layout, ledger: &mut Ledger) {
    if l.cp <= 1 {
        return;
    }
    let x = Shape::of(s, arch, l);
    let kv_t = x.kv.div_ceil(x.t);
    let bytes = 2 * 2 * x.b * x.sl * kv_t * x.d * x.k;
    ledger.push_in(
        &FWD_BWD,
        Mech::CpRing,
        Component::CommBuffers,
        Location::Gpu,
        bytes.min(u64::MAX as u128) as u64,
        || {
            (
                "2·2·b·s'·⌈a_kv/t⌉·d·k  (double-buffered K and V chunks)".into(),
                format!("b={}, s'={}, a_kv={}, d={}, t={}, k={}, c={}", x.b, x.sl, x.kv, x.d, x.t, x.k, l.cp),
            )
        },
        "ring attention context parallelism (Liu et al. 2023; Megatron-core / torchtitan CP): K/V chunks exchanged per step",
    );
}

/// The logits' source.
pub(crate) const SRC_LOGITS: &str = "Hugging Face causal-LM loss (bf16 logits, fp32 upcast, log-softmax) / Megatron vocab-parallel cross entropy";

/// The logits item's formula (one micro-batch's, `lf`) and values, for `alive`
/// micro-batches.
pub(crate) fn logits_text(
    s: &Scenario,
    arch: &Arch,
    l: &Layout,
    st: &Stage,
    copies: (u128, u128),
    alive: u128,
) -> Text {
    let x = Shape::of(s, arch, l);
    let (full, lf) = logits_bytes(s, arch, &x);
    let lb = logits_forward_bytes(s, arch, &x, st, copies);
    let lf = if lb == full {
        lf.to_string()
    } else {
        "2·T·h·k + T·V·(k + 4 + 4)/t + max(0, 4·T·V/t − k·Ψ_i/t)  (the loss's backward runs after autocast freed its cache)".to_string()
    };
    (
        format!("({lf})·{alive}"),
        format!(
            "T=b·s'={}, h={}, V={}, k={}, t={}, micro-batches alive={alive}",
            x.b * x.sl,
            x.h,
            arch.vocab,
            x.k,
            x.t
        ),
    )
}

/// The last stage's logits and loss (see `logits_bytes`), for every micro-batch
/// alive at once (GPipe: all `m`; 1F1B: one), forward and backward.
fn logits_item(
    s: &Scenario,
    arch: &Arch,
    x: &Shape,
    st: &Stage,
    copies: (u128, u128),
    ledger: &mut Ledger,
) {
    let lb = logits_forward_bytes(s, arch, x, st, copies);
    let alive = if s.parallel.schedule == Schedule::Gpipe {
        s.workload.microbatches.get() as u128
    } else {
        1
    };
    let l = s.layout();
    ledger.push_in(
        &FWD_BWD,
        Mech::Logits,
        Component::Logits,
        Location::Gpu,
        (lb * alive).min(u64::MAX as u128) as u64,
        || logits_text(s, arch, &l, st, copies, alive),
        SRC_LOGITS,
    );
}

/// The model output (the logits tensor) that a PyTorch training loop keeps referenced
/// after the loss's backward: through the layers' backward and the optimizer step.
///
/// # Formula
/// ```text
/// T·V·k/t       T = b·s' tokens, V vocabulary, k compute bytes (the LM head's output
///               dtype: 2 under autocast or bf16, 4 in fp32), t TP (vocab-parallel head)
/// ```
/// Source: the common loop `logits = model(ids)` (or `outputs = model(**batch)`, whose
/// `outputs.logits` lives as long as `outputs`), `loss.backward()`, `opt.step()`,
/// `opt.zero_grad()`: the Python name holds the tensor until it is rebound or deleted.
/// Measured with MemTracker (`tools/measure_pytorch.py`): with every block checkpointed
/// the step is the peak and it holds exactly this tensor (8,388,608 B in the fp32 Llama
/// run below); before 2026-11-23 memfit freed it with the loss and was 4–8 % low there.
/// Hugging Face's `Trainer` returns only the loss from `training_step`, so its output dies
/// with the forward: there this bound is high by `T·V·k/t`.
///
/// # Example
/// b = 2, s = 256, V = 4096, fp32 (k = 4), t = 1: 512·4096·4 = 8,388,608 B.
///
/// Counted when PyTorch's backward is walked apart (`separate`: no accumulation) with one
/// micro-batch per step; otherwise 0 (the loss's moment holds it already).
pub(crate) fn held_output_bytes(s: &Scenario, arch: &Arch, x: &Shape, separate: bool) -> u128 {
    if !separate || s.workload.microbatches.get() > 1 {
        return 0;
    }
    (x.b * x.sl * arch.vocab as u128 * x.k).div_ceil(x.t)
}

/// Host RAM per node while the model is built (phase `Init`; the host peak is the
/// larger of this and the offloaded states).
///
/// # Formula
/// ```text
/// without zero.Init (or below ZeRO-3): n · 4·Ψ     (each process builds the fp32 model)
/// with zero.Init under ZeRO-3:         n · 4·L     (only the layer being built is whole)
/// ```
/// Source: seed 000 (the CPU-RAM formulas without the additional buffer factor).
///
/// # Example
/// Llama-2-7B on 8 GPUs per node without zero.Init: 8·4·6,738,415,616 = 215,629,299,712 B.
pub(crate) fn host_init(s: &Scenario, psi: u64, largest: u64, l: &Layout, ledger: &mut Ledger) {
    let n = l.gpus_per_node.min(l.world) as u64;
    let zero_init = s.runtime.zero_init && s.zero() == Zero::Z3;
    let bytes = mul(4 * n, if zero_init { largest } else { psi });
    ledger.push_in(
        &[Phase::Init],
        Mech::HostInit,
        Component::InitLoad,
        Location::Cpu,
        bytes,
        || {
            if zero_init {
                ("n·4·L  (zero.Init)".into(), format!("n={n}, L={largest}"))
            } else {
                (
                    "n·4·Ψ  (fp32 model per process)".into(),
                    format!("n={n}, Ψ={psi}"),
                )
            }
        },
        SRC_INIT,
    );
}

/// Pinned host RAM per node for ZeRO-3 CPU offload with `pin_memory=1` (part of the
/// host RAM, not extra).
///
/// # Formula
/// ```text
/// offload_param=cpu:  (6 + 2 if microbatches > 1)·Ψ / nodes   (fp16 params + fp32 grads [+ fp16 grads])
/// otherwise:          4·Ψ / nodes                              (fp32 grads)
/// ```
/// Source: seed 000 ("Pinned Memory"), per node as DeepSpeed's CPU formulas are.
pub(crate) fn pinned_bytes(s: &Scenario, psi: u64, l: &Layout) -> u64 {
    if !s.offload.pin_memory || s.zero() != Zero::Z3 || s.offload.optimizer == Offload::None {
        return 0;
    }
    let nodes = (l.world / l.gpus_per_node.max(1)).max(1) as u64;
    let per_param = if s.offload.params != Offload::None {
        6 + if s.workload.microbatches.get() > 1 {
            2
        } else {
            0
        }
    } else {
        4
    };
    mul_div_ceil(per_param, psi, nodes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The two full-width Llama-2-7B blocks MemTracker measured (fp32, SGD, b = 1,
    /// s = 2048; `tests/data/pytorch_measurements.json` "large"), by hand: eager attention
    /// peaks inside the last layer's backward, sdpa at the embedding's backward. MemTracker's
    /// totals are 8 B more (the loss and a scalar).
    #[test]
    fn full_width_backward_moments_by_hand() {
        let q = "model=llama-2-7b&layers=2&framework=pytorch&cuda_ctx=0&frag=0&nccl=0\
                 &precision=fp32&optimizer=sgd&batch=1&seq=2048&attn=";
        let peak = |attn: &str| {
            let (s, w) = crate::contract::query::decode(&format!("{q}{attn}"));
            let s = s.scenario;
            assert!(w.is_empty(), "{w:?}");
            crate::estimate::estimate(&s).per_gpu_bytes as u128
        };
        let (weights, held) = (2_667_659_264u128, 262_144_000u128);
        let (a, g_head, g_layer) = (1_233_141_760u128, 524_304_384u128, 809_533_440u128);
        // Layer 1's softmax backward: layer 0 saved, layer 1 less the MLP's side, the
        // attention output and V; the head's and layer 1's gradients less q, k, v's and the
        // attention norm's; ∂P, ∂scores, ∂V and the residual's gradient.
        let (freed, g_qkvn, temp) = (528_490_496u128, 201_342_976u128, 1_140_850_688u128);
        let eager = weights + held + 2 * a - freed + g_head + g_layer - g_qkvn + temp;
        assert_eq!(peak("eager"), eager);
        assert_eq!(eager + 8, 7_140_941_832);
        // The embedding's backward: every gradient, the embedding's new dense one in place
        // of the written one, and the residual's gradient reaching it (T·h·4).
        let sdpa = weights + held + weights - 524_288_000 + 524_288_000 + 2048 * 4096 * 4;
        assert_eq!(peak("sdpa"), sdpa);
        assert_eq!(sdpa + 8, 5_631_016_968);
    }

    /// Llama-2-7B on one GPU under bf16 autocast: the copies are every linear's weights
    /// (the embedding and the 65 norms are never cast), the head's 2·V·h first.
    #[test]
    fn autocast_copies_of_llama2_7b_by_hand() {
        let mut s = Scenario::default();
        s.stack.framework = Framework::Pytorch;
        s.numerics.precision = Precision::Bf16;
        let arch = s.arch();
        let st = Stage::of(&arch, 1, 0);
        let psi = 6_738_415_616u128;
        let (head, body) = autocast_copy_split(&s, &arch, &st, 4 * psi);
        let cast = psi - 32_000 * 4096 - (65 * 4096);
        assert_eq!(head + body, 2 * cast);
        assert_eq!(head + body, 13_214_154_752);
        assert_eq!(head, 2 * 32_000 * 4096);
        // Freed layer by layer: 32 layers, nothing checkpointed.
        let w = CopyWalk::of(&s, &st, (head, body));
        assert_eq!((w.n, w.exit), (0, 0));
        assert_eq!(w.per * 32 + w.rem, body);
        assert_eq!(w.layer(0), w.per + w.rem);
        assert_eq!(w.layer(31), w.per);
        // Every layer checkpointed: the cache dies when autocast exits.
        s.activations.recompute = Recompute::Full;
        let w = CopyWalk::of(&s, &st, (head, body));
        assert_eq!(w.exit, body);
        assert_eq!((w.n, w.exit), (32, body));
        // FSDP's MixedPrecisionPolicy casts the parameters themselves: no autocast.
        s.sharding = crate::scenario::Sharding::Fsdp(Fsdp::FullShard);
        assert_eq!(autocast_copy_split(&s, &arch, &st, 4 * psi), (0, 0));
    }
}
