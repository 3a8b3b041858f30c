//! The floating-point work of one micro-batch through one transformer block, op by op,
//! on one tensor- and context-parallel rank.

use crate::model::{Arch, Mlp};

/// What feeds a GEMM, which decides how fp8 training quantizes its input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Feed {
    /// A norm's output: Megatron-Core's Transformer Engine spec fuses the norm with the
    /// quantization (`TELayerNormColumnParallelLinear`: the dense block's QKV and first MLP
    /// GEMM, MLA's up-projections).
    Norm,
    /// Any other activation (`TERowParallelLinear`, `te.Linear`, the experts).
    Plain,
    /// Kept in 16 bits or more in fp8 training (the MoE router, the logits).
    High,
}

/// One matrix multiplication `m × k · k × n`, repeated `count` times (per rank).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gemm {
    /// Rows of the output (tokens).
    pub m: f64,
    /// The reduced dimension.
    pub k: f64,
    /// Columns of the output.
    pub n: f64,
    /// How many such products.
    pub count: f64,
    /// What feeds it.
    pub feed: Feed,
    /// How many of `count` are routed experts' GEMMs (`top_k` of an MoE block's expert
    /// GEMMs, each over the tokens routed to it; 0 elsewhere).
    pub routed: f64,
}

impl Gemm {
    /// Its FLOPs: `2·m·k·n·count`.
    pub fn flops(&self) -> f64 {
        2.0 * self.m * self.k * self.n * self.count
    }
}

/// At most this many weight GEMMs per block (MLA's five projections + the MoE's three).
const MAX_GEMMS: usize = 8;

/// A block's forward work on one rank: its GEMMs (projections and MLP), the attention core
/// (`QKᵀ` and `AV`, causal) and the bytes its element-wise ops move.
#[derive(Clone, Debug, PartialEq)]
pub struct BlockWork {
    /// The weight GEMMs (the first `n` of `slots`).
    slots: [Gemm; MAX_GEMMS],
    /// How many.
    n: usize,
    /// FLOPs of the attention core (flash attention; the causal half).
    pub attention_flops: f64,
    /// Bytes the element-wise ops read and write (norms, activation, residuals, rotary).
    pub elementwise_bytes: f64,
}

impl BlockWork {
    /// The weight GEMMs.
    pub fn gemms(&self) -> &[Gemm] {
        &self.slots[..self.n]
    }
    /// All forward FLOPs.
    pub fn flops(&self) -> f64 {
        self.gemms().iter().map(Gemm::flops).sum::<f64>() + self.attention_flops
    }
}

/// A fixed-size list of GEMMs (no allocation: the explorer asks for thousands of blocks).
struct Gemms {
    slots: [Gemm; MAX_GEMMS],
    n: usize,
}

impl Gemms {
    fn push(&mut self, g: Gemm) {
        if self.n < MAX_GEMMS {
            self.slots[self.n] = g;
            self.n += 1;
        }
    }
}

/// One block's forward work for `tokens = b·s/c` tokens on a rank of `t`-way tensor and
/// `c`-way context parallelism, `k` bytes per element.
///
/// # Formula
/// ```text
/// q, k, v      T × h · h × (a + 2·a_kv)·d/t                 (MLA: q_a, q_b, kv_a, kv_b)
/// o            T × a·d/t · a·d/t × h
/// MLP          T × h · h × (m−1)·f/t,  T × f/t · f/t × h     (MoE: f = (top_k + shared)·f_e)
/// attention    4·b·s·(s/c)·a·d/t · ½                         (QKᵀ and AV, causal half; T = b·s/c)
/// element-wise  T·k·(12·h + 3·f/t)                           (2 norms, 2 residual adds, rotary,
///                                                             the activation: read + write)
/// ```
/// Source: Korthikanti et al. 2022 §5 (24·b·s·h² + 4·b·s²·h per layer for GPT: a = h/d,
/// f = 4h, a_kv = a); Narayanan et al. 2021 Appendix (the 96·B·s·l·h² count); the causal
/// half as FlashAttention-2 skips masked blocks.
///
/// # Example
/// GPT-3 175B's shape (h = 12,288, a = 96, f = 49,152, GELU), b = 1, s = 2,048, t = 1:
/// GEMMs 24·2,048·12,288² = 7.42e12 FLOPs, attention 2·2,048²·12,288 = 1.03e11 (causal).
pub fn block(arch: &Arch, b: f64, s: f64, t: f64, c: f64, k: f64) -> BlockWork {
    let tokens = b * s / c;
    let (h, a, kv, d) = (
        arch.hidden.get() as f64,
        arch.heads.get() as f64,
        arch.kv_heads.get() as f64,
        arch.head_dim.get() as f64,
    );
    let g = |k_: f64, n: f64, count: f64, feed: Feed| Gemm {
        m: tokens,
        k: k_,
        n,
        count,
        feed,
        routed: 0.0,
    };
    // The unused slots (never read: `gemms()` stops at `n`).
    let zero = g(0.0, 0.0, 0.0, Feed::High);
    let mut gemms = Gemms {
        slots: [zero; MAX_GEMMS],
        n: 0,
    };
    use Feed::{High, Norm, Plain};
    match arch.mla {
        None => {
            gemms.push(g(h, (a + 2.0 * kv) * d / t, 1.0, Norm));
            gemms.push(g(a * d / t, h, 1.0, Plain));
        }
        Some(m) => {
            // Megatron-Core's MLA spec: the down-projections are plain linears after a
            // separate input norm; the up-projections fuse the latent norms.
            let qk = (m.rope_dim + m.nope_dim) as f64;
            if m.q_rank > 0 {
                gemms.push(g(h, m.q_rank as f64, 1.0, Plain));
                gemms.push(g(m.q_rank as f64, a * qk / t, 1.0, Norm));
            } else {
                gemms.push(g(h, a * qk / t, 1.0, Plain));
            }
            gemms.push(g(h, (m.kv_rank + m.rope_dim) as f64, 1.0, Plain));
            gemms.push(g(
                m.kv_rank as f64,
                a * (m.nope_dim + m.v_dim) as f64 / t,
                1.0,
                Norm,
            ));
            gemms.push(g(a * m.v_dim as f64 / t, h, 1.0, Plain));
        }
    }
    let f = arch.active_ffn() as f64;
    let ups = if arch.mlp == Mlp::Swiglu { 2.0 } else { 1.0 };
    if arch.experts > 0 {
        // Each token's routed and shared experts: (top_k + shared) GEMMs of width f_e.
        let fe = arch.expert_ffn() as f64;
        let n = (arch.routed_k().get() + arch.shared_experts) as f64;
        let routed = |y: Gemm| Gemm {
            routed: arch.top_k as f64,
            ..y
        };
        gemms.push(routed(g(h, ups * fe / t, n, Plain)));
        gemms.push(routed(g(fe / t, h, n, Plain)));
        gemms.push(g(h, arch.experts as f64, 1.0, High));
    } else {
        gemms.push(g(h, ups * f / t, 1.0, Norm));
        gemms.push(g(f / t, h, 1.0, Plain));
    }
    let qk_head = match arch.mla {
        Some(m) => (m.rope_dim + m.nope_dim) as f64,
        None => d,
    };
    let attention_flops = 4.0 * b * s * (s / c) * a * qk_head / t * 0.5;
    let elementwise_bytes = tokens * k * (12.0 * h + 3.0 * f / t);
    BlockWork {
        slots: gemms.slots,
        n: gemms.n,
        attention_flops,
        elementwise_bytes,
    }
}

/// The output layer's GEMM (the logits) for `tokens` tokens on a `t`-way rank.
pub fn logits(arch: &Arch, tokens: f64, t: f64) -> Gemm {
    Gemm {
        m: tokens,
        k: arch.hidden.get() as f64,
        n: arch.vocab.get() as f64 / t,
        count: 1.0,
        feed: Feed::High,
        routed: 0.0,
    }
}

/// Model FLOPs per token, the MFU convention: `6·N_active` for the weights (forward and
/// backward, embeddings excluded) and `6·L·s·a·d` for causal attention (`12·L·s·h/2`).
///
/// # Formula
/// `F_token = 6·(N_active − V·h) + 6·L·s·a·d` — every active parameter but the input
/// embedding (a lookup); the LM head counts (a GEMM of `h × V`).
///
/// Source: PaLM (Chowdhery et al. 2022) Appendix B (`6N + 12·L·H·Q·T`, attention without the
/// causal half); memfit halves attention for causal models, as FlashAttention computes
/// (stated in the README).
///
/// # Example
/// Llama 3 8B at s = 8,192: 6·(8,030,261,248 − 525,336,576) + 6·32·8,192·32·128 =
/// 45,029,548,032 + 6,442,450,944 = 51,471,998,976 FLOPs per token.
pub fn model_flops_per_token(arch: &Arch, s: f64) -> f64 {
    let p = arch.params();
    let emb = (arch.vocab.get() as f64) * (arch.hidden.get() as f64);
    let non_emb = p.active as f64 - emb;
    let qk_head = match arch.mla {
        Some(m) => (m.rope_dim + m.nope_dim) as f64,
        None => arch.head_dim.get() as f64,
    };
    6.0 * non_emb + 6.0 * arch.layers.get() as f64 * s * arch.heads.get() as f64 * qk_head
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::preset;

    /// Korthikanti et al.'s count for GPT-3: 24·b·s·h² GEMM FLOPs per layer forward.
    #[test]
    fn gpt3_block_by_hand() {
        let a = &preset("gpt3-175b").unwrap().arch;
        let w = block(a, 1.0, 2048.0, 1.0, 1.0, 2.0);
        let gemm: f64 = w.gemms().iter().map(Gemm::flops).sum();
        let h = 12_288.0f64;
        assert!(
            (gemm / (24.0 * 2048.0 * h * h) - 1.0).abs() < 1e-9,
            "{gemm}"
        );
        assert!((w.attention_flops - 2.0 * 2048.0f64.powi(2) * h).abs() < 1.0);
        // t = 8 splits every GEMM and the attention eight ways.
        let w8 = block(a, 1.0, 2048.0, 8.0, 1.0, 2.0);
        assert!((w8.flops() * 8.0 / w.flops() - 1.0).abs() < 1e-9);
    }

    #[test]
    fn llama_3_8b_model_flops() {
        let a = &preset("llama-3-8b").unwrap().arch;
        assert_eq!(model_flops_per_token(a, 8192.0), 51_471_998_976.0);
    }
}
