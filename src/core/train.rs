//! Training memory under memfit's convention: model states for every precision
//! policy, optimizer, ZeRO stage / FSDP strategy, offload target and fine-tuning
//! method; activations; host RAM at model init; pinned memory.

use super::estimate::{Component, Ledger, Location, Phase};
use super::model::{Arch, LinearKind};
use super::scenario::{
    Finetune, GradAcc, Layout, LoraTargets, Offload, Optimizer, Precision, Scenario, Zero,
};
use super::units::{mul, mul_div_ceil};

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
/// matrices, for Adafactor's factored moments), and the formula text.
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
    frac: (u64, u64),
) -> (u64, String, &'static str) {
    let sb = precision.state_bytes();
    match opt {
        Optimizer::Adam | Optimizer::Adamw => (
            mul(2 * sb, n),
            format!("2·{sb}·Ψ  (Adam m, v)"),
            "Kingma & Ba 2015 (Adam keeps momentum and variance); seed 001 K = 12 with the fp32 master",
        ),
        Optimizer::Sgd => (0, "0  (plain SGD keeps no state)".into(), "PyTorch torch.optim.SGD (momentum=0)"),
        Optimizer::SgdMomentum => (mul(sb, n), format!("{sb}·Ψ  (momentum buffer)"), "PyTorch torch.optim.SGD (momentum>0)"),
        Optimizer::Lion => (mul(sb, n), format!("{sb}·Ψ  (momentum only)"), "Chen et al. 2023 (Lion keeps one moment)"),
        Optimizer::Adam8bit => (
            mul(2, n).saturating_add(8 * n.div_ceil(2048)),
            "2·Ψ + 8·⌈Ψ/2048⌉  (8-bit m, v + fp32 absmax per 2048 block)".into(),
            "Dettmers et al. 2022 (8-bit optimizers; bitsandbytes block-wise quantisation, block 2048)",
        ),
        Optimizer::Adafactor => {
            // Factored moments for each matrix, full moments for vectors; scaled to the
            // share `frac = (num, den)` of the model this rank trains.
            let linears = arch.linears();
            let factored: u128 = linears.iter().map(|m| (m.inp + m.out) as u128 * m.count as u128).sum();
            let matrix_params: u128 = linears.iter().map(|m| m.params() as u128).sum();
            let total = arch.params().total as u128;
            let vectors = total.saturating_sub(matrix_params);
            let whole = 4 * (factored + vectors);
            let b = (whole * frac.0 as u128 / frac.1.max(1) as u128).min(u64::MAX as u128) as u64;
            (
                b,
                "4·(Σ(rows+cols) + vector params)·share  (factored second moment, no momentum)".into(),
                "Shazeer & Stern 2018 (Adafactor; Hugging Face default β1 = None)",
            )
        }
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

/// Model states per GPU under memfit's convention.
///
/// # Formula
/// ```text
/// Ψ_r = Ψ / (t·p)                                 parameters per model-parallel rank (even split)
/// weights    = w·Ψ_r       / (N_s if ZeRO-3)      w = 4 fp32, 2 bf16/fp16, 2 + 1 fp8 (bf16 + fp8 copy)
/// gradients  = g·Ψ_r       / (N_s if ZeRO ≥ 2)    g = k (compute), 4 (fp32), k + 4 (both)
/// master     = 4·Ψ_r       / (N_s if ZeRO ≥ 1)    mixed precision (bf16, fp16, fp8) only
/// optimizer  = O(Ψ_r)      / (N_s if ZeRO ≥ 1)    see optimizer_state_bytes
/// gathered   = 2k·L / t                           ZeRO-3 / FSDP: the largest layer's params + grads
/// ```
/// `N_s` the shard degree (`N_d`, or the ranks in a node for HYBRID_SHARD), `L` the
/// largest layer. LoRA/QLoRA: the base is frozen (weights only: `k·Ψ_r`, or NF4 for
/// QLoRA), and the `Ψ_a` adapter parameters train in fp32 (4 + 4 + optimizer).
/// Offloaded items are counted in host RAM (or NVMe) per node: × GPUs per node.
/// Divisions round up (the peak rank holds the largest shard).
///
/// Source: seed 001 and the ZeRO paper (2+2+K, K = 12 for Adam), seed 004
/// ((2+2+K)·Ψ/N_d for ZeRO-3), seed 003 (16/18/20 B/param), seed 000 (4·L gathered).
///
/// # Example
/// Llama-2-7B (Ψ = 6,738,415,616), bf16 + AdamW, ZeRO-1 on 8 GPUs: weights
/// 2Ψ = 13,476,831,232 B, gradients 2Ψ, master 4Ψ/8 = 3,369,207,808 B, optimizer
/// 8Ψ/8 = 6,738,415,616 B.
pub(crate) fn model_states(
    s: &Scenario,
    arch: &Arch,
    psi: u64,
    largest: u64,
    l: &Layout,
    ledger: &mut Ledger,
) {
    let k = s.precision.compute_bytes();
    let mp = l.tp as u64 * l.pp as u64;
    let ns = s.shard_degree() as u64;
    let z = s.effective_zero();
    let per_node = l.gpus_per_node.min(l.world) as u64;
    let (w_div, g_div, o_div) = (
        if z >= Zero::Z3 { ns } else { 1 },
        if z >= Zero::Z2 { ns } else { 1 },
        if z >= Zero::Z1 { ns } else { 1 },
    );
    let sym = |div: u64| if div > 1 { "/(t·p·N_s)" } else { "/(t·p)" };
    let vals = |extra: &str| format!("Ψ={psi}, t={}, p={}, N_s={ns}{extra}", l.tp, l.pp);
    let place = |off: Offload| match off {
        Offload::None => Location::Gpu,
        Offload::Cpu => Location::Cpu,
        Offload::Nvme => Location::Nvme,
    };
    // Bytes on `loc`: per GPU, or per node (× n) off the GPU.
    let at = |loc: Location, bytes: u64| {
        if loc == Location::Gpu {
            bytes
        } else {
            mul(bytes, per_node)
        }
    };
    let node_note = |loc: Location, what: &str| {
        if loc == Location::Gpu {
            String::new()
        } else {
            format!(", n={per_node} ({what})")
        }
    };
    let weights_loc = if z == Zero::Z3 {
        place(s.offload_param)
    } else {
        Location::Gpu
    };
    let opt_loc = place(s.offload_opt);

    // The trained parameters: everything, or the adapters.
    let (trained, train_bytes) = match s.finetune {
        Finetune::Full => (psi, k),
        Finetune::Lora | Finetune::Qlora => (lora_params(arch, s.lora_rank, s.lora_targets), 4),
    };
    let tr = |bytes_per: u64, div: u64| mul_div_ceil(bytes_per, trained, mp * div);

    // Weights.
    match s.finetune {
        Finetune::Full => {
            let w = mul_div_ceil(k, psi, mp * w_div);
            let f = format!(
                "{}{k}·Ψ{}",
                if weights_loc == Location::Gpu {
                    ""
                } else {
                    "n·"
                },
                sym(w_div)
            );
            ledger.push(
                Component::Weights,
                weights_loc,
                at(weights_loc, w),
                &f,
                vals(&node_note(weights_loc, "offload_param")),
                SRC_ZERO,
            );
            if s.precision == Precision::Fp8 {
                let c = mul_div_ceil(1, psi, mp * w_div);
                ledger.push(
                    Component::Weights,
                    weights_loc,
                    at(weights_loc, c),
                    &format!("1·Ψ{}  (fp8 weight copies)", sym(w_div)),
                    vals(""),
                    "NVIDIA Transformer Engine FP8 training (bf16 weights + cached fp8 copies)",
                );
            }
        }
        Finetune::Lora => {
            let w = mul_div_ceil(k, psi, mp * w_div);
            ledger.push(
                Component::Weights,
                weights_loc,
                at(weights_loc, w),
                &format!("{k}·Ψ{}  (frozen base)", sym(w_div)),
                vals(""),
                SRC_LORA,
            );
        }
        Finetune::Qlora => {
            let q = quantisable_share(arch, psi);
            let base = nf4_bytes(q, s.double_quant).saturating_add(mul(2, psi - q));
            let w = base.div_ceil(mp * w_div);
            ledger.push(
                Component::Weights,
                weights_loc,
                at(weights_loc, w),
                if s.double_quant {
                    "(⌈Ψ_q/2⌉ + ⌈Ψ_q/64⌉ + 4·⌈Ψ_q/16384⌉ + 2·(Ψ−Ψ_q))/(t·p)  (frozen NF4 base)"
                } else {
                    "(⌈Ψ_q/2⌉ + 4·⌈Ψ_q/64⌉ + 2·(Ψ−Ψ_q))/(t·p)  (frozen NF4 base)"
                },
                format!("Ψ={psi}, Ψ_q={q}, t={}, p={}", l.tp, l.pp),
                SRC_QLORA,
            );
        }
    }
    if s.finetune != Finetune::Full {
        ledger.push(
            Component::Weights,
            Location::Gpu,
            tr(4, 1),
            "4·Ψ_a/(t·p)  (fp32 adapters)",
            format!(
                "Ψ_a={trained} (r={}, targets={}), t={}, p={}",
                s.lora_rank,
                s.lora_targets.as_str(),
                l.tp,
                l.pp
            ),
            SRC_LORA,
        );
    }

    // Gradients (of the trained parameters).
    let sym_t = |div: u64| {
        if s.finetune == Finetune::Full {
            sym(div).to_string()
        } else {
            format!("{}  (adapters, Ψ_a={trained})", sym(div))
        }
    };
    match (s.finetune, s.grad_acc) {
        (Finetune::Full, GradAcc::Compute) | (Finetune::Lora | Finetune::Qlora, _) => {
            ledger.push(
                Component::Gradients,
                Location::Gpu,
                tr(train_bytes, g_div),
                &format!("{train_bytes}·Ψ{}", sym_t(g_div)),
                vals(""),
                SRC_ZERO,
            );
        }
        (Finetune::Full, GradAcc::Fp32) => {
            ledger.push(
                Component::Gradients,
                Location::Gpu,
                tr(4, g_div),
                &format!("4·Ψ{}  (fp32 main grads)", sym(g_div)),
                vals(""),
                SRC_GRAD,
            );
        }
        (Finetune::Full, GradAcc::Both) => {
            ledger.push(
                Component::Gradients,
                Location::Gpu,
                tr(k, g_div),
                &format!("{k}·Ψ{}", sym(g_div)),
                vals(""),
                SRC_GRAD,
            );
            ledger.push(
                Component::Gradients,
                Location::Gpu,
                tr(4, g_div),
                &format!("4·Ψ{}  (fp32 accumulation buffer)", sym(g_div)),
                vals(""),
                SRC_GRAD,
            );
        }
    }

    // Master weights (mixed precision, full training only: adapters are already fp32).
    let prefix = if opt_loc == Location::Gpu { "" } else { "n·" };
    if s.finetune == Finetune::Full && s.precision.has_master() {
        ledger.push(
            Component::MasterWeights,
            opt_loc,
            at(opt_loc, tr(4, o_div)),
            &format!("{prefix}4·Ψ{}", sym(o_div)),
            vals(&node_note(opt_loc, "offload_opt")),
            SRC_ZERO,
        );
    }
    // Optimizer states.
    let state_precision = if s.finetune == Finetune::Full {
        s.precision
    } else {
        Precision::Fp32
    };
    let share = (1, mp * o_div);
    let (opt_bytes, opt_formula, opt_src) =
        optimizer_state_bytes(s.optimizer, state_precision, trained, arch, share);
    if opt_bytes > 0 {
        let per_rank = if s.optimizer == Optimizer::Adafactor {
            opt_bytes
        } else {
            opt_bytes.div_ceil(mp * o_div)
        };
        ledger.push(
            Component::OptimizerStates,
            opt_loc,
            at(opt_loc, per_rank),
            &format!("{prefix}[{opt_formula}]{}", sym(o_div)),
            format!(
                "{}, optimizer={}",
                vals(&node_note(opt_loc, "offload_opt")),
                s.optimizer.as_str()
            ),
            opt_src,
        );
    }

    // NVMe offload stages through pinned host buffers.
    if s.offload_opt == Offload::Nvme {
        ledger.push(
            Component::Workspace,
            Location::Cpu,
            mul(4 * 16, largest).saturating_mul(per_node),
            "n·4·16·L  (4 swap buffers of the largest layer's fp32 param, grad, m, v)",
            format!("L={largest}, n={per_node}"),
            SRC_NVME,
        );
    }
    if z == Zero::Z3 && s.offload_param == Offload::Nvme {
        ledger.push(
            Component::Workspace,
            Location::Cpu,
            mul(5 * 100_000_000, k).saturating_mul(per_node),
            &format!("n·5·1e8·{k}  (5 param swap buffers of 1e8 elements)"),
            format!("n={per_node}, k={k}"),
            SRC_NVME,
        );
    }

    // ZeRO-3 / FSDP gathers one layer at a time.
    if z == Zero::Z3 {
        ledger.push(
            Component::GatheredLayer,
            Location::Gpu,
            mul_div_ceil(2 * k, largest, l.tp as u64),
            &format!("{}·L/t", 2 * k),
            format!("L={largest}, t={}", l.tp),
            SRC_GATHER,
        );
    }
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
    let zero_init = s.zero_init && s.effective_zero() == Zero::Z3;
    let (bytes, formula, values) = if zero_init {
        (
            mul(4 * n, largest),
            "n·4·L  (zero.Init)",
            format!("n={n}, L={largest}"),
        )
    } else {
        (
            mul(4 * n, psi),
            "n·4·Ψ  (fp32 model per process)",
            format!("n={n}, Ψ={psi}"),
        )
    };
    ledger.push_in(&[Phase::Init],
        Component::InitLoad,
        Location::Cpu,
        bytes,
        formula,
        values,
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
    if !s.pin_memory || s.effective_zero() != Zero::Z3 || s.offload_opt == Offload::None {
        return 0;
    }
    let nodes = (l.world / l.gpus_per_node.max(1)).max(1) as u64;
    let per_param = if s.offload_param != Offload::None {
        6 + if s.microbatches > 1 { 2 } else { 0 }
    } else {
        4
    };
    mul_div_ceil(per_param, psi, nodes)
}

/// Activation memory saved for the backward pass, per GPU.
///
/// # Formula
/// ```text
/// per layer, t = 1:  A = s'·b·h·(34 + 5·a·s/h) · k/2      (= 34·b·s'·h + 5·b·a·s'·s)
/// per layer, t > 1:  A = s'·b·h·(10 + 24/t + 5·a·s/(h·t)) · k/2
/// per GPU:           A · ⌈L/p⌉ · p                         (1F1B: the first stage holds p micro-batches)
/// ```
/// `s` sequence length, `s' = s/c` the local sequence under context parallelism
/// `c`, `b` micro-batch, `h` hidden, `a` heads, `L` layers, `t` TP, `p` PP, `k`
/// bytes of the activation dtype (the constants assume 2-byte activations and
/// 1-byte dropout masks).
///
/// Source: seed 003 / seed 002 (`34bsh + 5bs²a`), Korthikanti et al. 2022 Table 2.
/// A first, convention-named term: dropout, attention kernels (flash stores no
/// s² scores), GQA and recomputation are refined later.
///
/// # Example
/// Llama-2-7B shape, b = 1, s = 4096, one GPU: per layer
/// 34·4096·4096 + 5·32·4096² = 3,254,779,904 B; ×32 layers = 104,152,956,928 B
/// (seed_examples.json `chaofa_training_rule`).
pub(crate) fn activation_items(s: &Scenario, arch: &Arch, l: &Layout, ledger: &mut Ledger) {
    let k = s.precision.compute_bytes() as u128;
    let b = s.batch as u128;
    let seq = s.seq as u128;
    let c = l.cp as u128;
    let s_local = seq.div_ceil(c);
    let h = arch.hidden as u128;
    let a = arch.heads as u128;
    let t = l.tp as u128;
    let p = l.pp as u128;
    let layers_per_stage = (arch.layers as u128).div_ceil(p);
    // Work in units of 1/2 byte·t so the TP formula stays integral: multiply by 2t·... then divide.
    let per_layer: u128 = if t == 1 {
        (34 * b * s_local * h + 5 * b * a * s_local * seq) * k / 2
    } else {
        // s'bh(10 + 24/t) + 5·a·s'·s·b/t
        (10 * t * b * s_local * h + 24 * b * s_local * h + 5 * b * a * s_local * seq) * k / (2 * t)
    };
    let total = per_layer * layers_per_stage * p;
    let (formula, src) = if t == 1 {
        ("(34·b·s'·h + 5·b·a·s'·s)·(k/2)·⌈L/p⌉·p", SRC_ACT)
    } else {
        ("s'·b·h·(10 + 24/t + 5·a·s/(h·t))·(k/2)·⌈L/p⌉·p", SRC_ACT_TP)
    };
    ledger.push(
        Component::Activations,
        Location::Gpu,
        total.min(u64::MAX as u128) as u64,
        formula,
        format!(
            "b={b}, s={seq}, s'=s/c={s_local}, h={h}, a={a}, L={}, t={t}, p={p}, c={c}, k={k}",
            arch.layers
        ),
        src,
    );
}
