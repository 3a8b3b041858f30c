//! Optimizer states per optimizer, LoRA adapter counts and the NF4 base: the byte
//! counts the model-state mechanisms divide among ranks.

use super::*;

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
    if let Some(e) = optimizer_state_expr(opt, precision, "Ψ", n) {
        return e.eval();
    }
    match opt {
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
        _ => 0,
    }
}

/// The state of `n` parameters (named `sym`) under `opt`, as an expression; `None` for
/// Adafactor, whose factored moments depend on the matrices' shapes, not on `n`.
///
/// # Formula
/// ```text
/// adam / adamw: 2·s_b·Ψ     sgd-momentum, lion: s_b·Ψ     sgd: 0
/// adam8bit:     2·Ψ + 8·⌈Ψ/2048⌉
/// ```
/// `s_b` the state's bytes (4, or 2 under `precision=bf16-pure`).
///
/// # Example
/// AdamW, fp32 states, Ψ = 1,000,000: 2·4·1,000,000 = 8,000,000 B.
pub fn optimizer_state_expr(
    opt: Optimizer,
    precision: Precision,
    sym: &'static str,
    n: u64,
) -> Option<Expr> {
    let (sb, psi) = (
        Sym("s_b", precision.state_bytes() as u128),
        Sym(sym, n as u128),
    );
    Some(match opt {
        Optimizer::Adam | Optimizer::Adamw => Expr::new(&[Num(2), sb, Mul, psi, Mul]),
        Optimizer::Sgd => Expr::new(&[Num(0)]),
        Optimizer::SgdMomentum | Optimizer::Lion => Expr::new(&[sb, psi, Mul]),
        Optimizer::Adam8bit => {
            Expr::new(&[Num(2), psi, Mul, Num(8), psi, Num(2048), DivCeil, Mul, Add])
        }
        Optimizer::Adafactor => return None,
    })
}

/// One rank's optimizer state: [`optimizer_state_expr`] divided by `t·[N_s]` (`N_s`
/// when `div > 1`), or Adafactor's factored share (`S_f`, already this rank's), with a
/// note naming what the state holds.
#[allow(clippy::too_many_arguments)]
pub(crate) fn optimizer_rank_expr(
    opt: Optimizer,
    precision: Precision,
    sym: &'static str,
    n: u64,
    arch: &Arch,
    frac: (u128, u128),
    t: u64,
    div: u64,
) -> Expr {
    let Some(e) = optimizer_state_expr(opt, precision, sym, n) else {
        let share = (frac.0, frac.1.saturating_mul((t * div) as u128));
        let bytes = optimizer_state_bytes(opt, precision, n, arch, share);
        return Expr::new(&[Sym("S_f", bytes as u128)]);
    };
    let e = e.then(&[Sym("t", t as u128)]);
    if div > 1 {
        e.then(&[Sym("N_s", div as u128), Mul, DivCeil])
    } else {
        e.then(&[DivCeil])
    }
}

/// What `opt`'s state holds, and the source (the formula is [`optimizer_state_expr`]).
pub fn optimizer_state_note(opt: Optimizer) -> (&'static str, &'static str) {
    match opt {
        Optimizer::Adam | Optimizer::Adamw => (
            "Adam m, v",
            "Kingma & Ba 2015 (Adam keeps momentum and variance); seed 001 K = 12 with the fp32 master",
        ),
        Optimizer::Sgd => ("plain SGD keeps no state", "PyTorch torch.optim.SGD (momentum=0)"),
        Optimizer::SgdMomentum => ("momentum buffer", "PyTorch torch.optim.SGD (momentum>0)"),
        Optimizer::Lion => ("momentum only", "Chen et al. 2023 (Lion keeps one moment)"),
        Optimizer::Adam8bit => (
            "8-bit m, v + fp32 absmax per 2048 block",
            "Dettmers et al. 2022 (8-bit optimizers; bitsandbytes block-wise quantisation, block 2048)",
        ),
        Optimizer::Adafactor => (
            "S_f = 4·(Σ(rows+cols) + vector params) of this rank's share: factored second moment, no momentum",
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
    // `Ψ ≥ 1` for every shape (the vocabulary and width are `Count`s), a plain `u64` count; the guard keeps a 0 finite.
    let total = arch.params().total.max(1) as u128;
    (psi as u128 * q / total).min(psi as u128) as u64
}

pub(crate) fn quantisable_params(arch: &Arch) -> u64 {
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
