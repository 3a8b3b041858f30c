//! A decoder's weight tensors one by one, named as llama.cpp's GGUF files name them
//! (`token_embd`, `blk.i.attn_v`, `blk.i.ffn_down_exps`, `output`, ...): what the
//! quantisation formats and llama.cpp's per-tensor type rules read.

use crate::model::{Arch, Mlp};

/// What a weight matrix is (the GGUF name without `blk.i.` and `.weight`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// `token_embd`: the token embedding.
    TokenEmbd,
    /// `output`: the untied LM head.
    Output,
    /// `attn_q`
    AttnQ,
    /// `attn_k`
    AttnK,
    /// `attn_v`
    AttnV,
    /// `attn_qkv` (fused q, k, v: GPT-2, Phi-3, Falcon).
    AttnQkv,
    /// `attn_output`
    AttnOutput,
    /// MLA's `attn_q_a`, `attn_q_b`, `attn_kv_a_mqa`, `attn_kv_b`.
    AttnMla,
    /// `ffn_gate` (`_exps`, `_shexp`)
    FfnGate,
    /// `ffn_up` (`_exps`, `_shexp`)
    FfnUp,
    /// `ffn_down` (`_exps`, `_shexp`)
    FfnDown,
    /// `ffn_gate_inp`: a mixture's router (never quantised).
    Router,
    /// A Mamba mixer's linear maps: `ssm_in`, `ssm_x`, `ssm_dt`, `ssm_out`.
    SsmLinear,
    /// A Mamba mixer's small 2-D weights kept in f32: `ssm_conv1d`, Mamba's `ssm_a`.
    SsmSmall,
}

impl Role {
    /// A linear map inside a block (what weight-only formats quantise; not the
    /// embedding, the LM head or the router).
    pub fn is_block_linear(self) -> bool {
        !matches!(
            self,
            Role::TokenEmbd | Role::Output | Role::Router | Role::SsmSmall
        )
    }
}

/// One weight matrix (or a stack of a mixture's experts): `rows` rows of `cols`
/// elements each (ggml's `ne[1]` and `ne[0]`; `cols` is the input width), `n` stacked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tensor {
    /// What it is.
    pub role: Role,
    /// The block it belongs to (`None` for the embedding and the head).
    pub layer: Option<u32>,
    /// Input width, `ne[0]`: the length of one row, what a quantisation block runs along.
    pub cols: u64,
    /// Output width, `ne[1]`.
    pub rows: u64,
    /// Matrices stacked (`ne[2]`: the routed experts of a mixture; 1 otherwise).
    pub n: u64,
    /// A routed expert's weights (MXFP4 on gpt-oss quantises only these).
    pub routed: bool,
}

impl Tensor {
    /// Elements.
    pub fn elements(&self) -> u128 {
        self.cols as u128 * self.rows as u128 * self.n as u128
    }
}

/// A pure state-space model's tensors as llama.cpp names them: per block `ssm_in`
/// (`h → 2d`, Mamba-2 `2d + 2·G·N + H`), `ssm_conv1d` (`k × channels`), for Mamba-1 `ssm_x`
/// (`d → ⌈h/16⌉ + 2N`), `ssm_dt` (`⌈h/16⌉ → d`) and `ssm_a` (`N × d`), and `ssm_out`
/// (`d → h`); the output head unless tied.
fn ssm_tensors(arch: &Arch, s: crate::model::Ssm, out: &mut Vec<Tensor>) {
    let m = |role, layer, cols, rows| Tensor {
        role,
        layer,
        cols,
        rows,
        n: 1,
        routed: false,
    };
    let (h, v) = (arch.hidden.get() as u64, arch.vocab.get() as u64);
    let (d, n, k) = (s.d_inner, s.d_state, s.conv_kernel);
    for i in 0..arch.layers.get() {
        let l = Some(i);
        let (conv_ch, in_w) = if s.version == 2 {
            let c = d + 2 * s.groups * n;
            (c, 2 * d + 2 * s.groups * n + s.heads)
        } else {
            (d, 2 * d)
        };
        out.push(m(Role::SsmLinear, l, h, in_w));
        out.push(m(Role::SsmSmall, l, k, conv_ch));
        if s.version != 2 {
            let r = h.div_ceil(16);
            out.push(m(Role::SsmLinear, l, d, r + 2 * n));
            out.push(m(Role::SsmLinear, l, r, d));
            out.push(m(Role::SsmSmall, l, n, d));
        }
        out.push(m(Role::SsmLinear, l, d, h));
    }
    if !arch.tied {
        out.push(m(Role::Output, None, h, v));
    }
}

/// Every weight matrix of a decoder-only model, in GGUF order (embedding, blocks,
/// head), and the count of the remaining parameters: the one-dimensional ones (norms,
/// biases, attention sinks, learned positions), which every format keeps unquantised.
///
/// The matrices' elements plus the rest equal [`Arch::params`]'s total (a test checks
/// it for every preset).
///
/// # Example
/// Llama 3 8B: 1 + 32·7 + 1 = 226 matrices (q, k, v, o, gate, up, down per block, the
/// embedding, the untied head) and 32·2·4,096 + 4,096 = 266,240 norm weights.
pub fn tensors(arch: &Arch) -> (Vec<Tensor>, u128) {
    let (h, v) = (arch.hidden.get() as u64, arch.vocab.get() as u64);
    let mut out = Vec::with_capacity(arch.layers.get() as usize * 12 + 2);
    let m = |role, layer, cols, rows| Tensor {
        role,
        layer,
        cols,
        rows,
        n: 1,
        routed: false,
    };
    out.push(m(Role::TokenEmbd, None, h, v));
    if let (Some(s), Some(_)) = (arch.ssm_shape(), arch.ssm_params()) {
        ssm_tensors(arch, s, &mut out);
        let matrices: u128 = out.iter().map(Tensor::elements).sum();
        let total = arch.params().total as u128;
        return (out, total.saturating_sub(matrices));
    }
    let dense_layers = if arch.experts > 0 {
        arch.first_dense.min(arch.layers.get())
    } else {
        arch.layers.get()
    };
    for i in 0..arch.layers.get() {
        let l = Some(i);
        attention(arch, l, &mut out);
        let ups = |out: &mut Vec<Tensor>, width: u64, n: u64, routed: bool| {
            let t = |role, cols, rows| Tensor {
                role,
                layer: l,
                cols,
                rows,
                n,
                routed,
            };
            if arch.mlp == Mlp::Swiglu {
                out.push(t(Role::FfnGate, h, width));
            }
            out.push(t(Role::FfnUp, h, width));
            out.push(t(Role::FfnDown, width, h));
        };
        if i < dense_layers {
            ups(&mut out, arch.ffn.get() as u64, 1, false);
        } else {
            let fe = arch.expert_ffn() as u64;
            out.push(m(Role::Router, l, h, arch.experts as u64));
            ups(&mut out, fe, arch.experts as u64, true);
            if arch.shared_experts > 0 {
                ups(&mut out, fe * arch.shared_experts as u64, 1, false);
            }
        }
    }
    if !arch.tied {
        out.push(m(Role::Output, None, h, v));
    }
    let matrices: u128 = out.iter().map(Tensor::elements).sum();
    let total = arch.params().total as u128;
    (out, total.saturating_sub(matrices))
}

/// One block's attention matrices.
fn attention(arch: &Arch, l: Option<u32>, out: &mut Vec<Tensor>) {
    let h = arch.hidden.get() as u64;
    let (a, kv, d) = (
        arch.heads.get() as u64,
        arch.kv_heads.get() as u64,
        arch.head_dim.get() as u64,
    );
    let m = |role, cols, rows| Tensor {
        role,
        layer: l,
        cols,
        rows,
        n: 1,
        routed: false,
    };
    match arch.mla {
        None if arch.fused_qkv => {
            out.push(m(Role::AttnQkv, h, (a + 2 * kv) * d));
            out.push(m(Role::AttnOutput, a * d, h));
        }
        None => out.extend([
            m(Role::AttnQ, h, a * d),
            m(Role::AttnK, h, kv * d),
            m(Role::AttnV, h, kv * d),
            m(Role::AttnOutput, a * d, h),
        ]),
        Some(x) => {
            let qk = (x.rope_dim + x.nope_dim) as u64;
            if x.q_rank > 0 {
                out.push(m(Role::AttnMla, h, x.q_rank as u64));
                out.push(m(Role::AttnMla, x.q_rank as u64, a * qk));
            } else {
                out.push(m(Role::AttnQ, h, a * qk));
            }
            out.push(m(Role::AttnMla, h, (x.kv_rank + x.rope_dim) as u64));
            out.push(m(
                Role::AttnMla,
                x.kv_rank as u64,
                a * (x.nope_dim + x.v_dim) as u64,
            ));
            out.push(m(Role::AttnOutput, a * x.v_dim as u64, h));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::presets;

    /// The matrices and the rest add up to the exact parameter count, for every
    /// decoder-only preset (encoder-decoder models are not listed: llama.cpp serves
    /// decoders).
    #[test]
    fn tensors_cover_every_parameter() {
        for p in presets().iter().filter(|p| p.arch.encoder_layers == 0) {
            let (ts, rest) = tensors(&p.arch);
            let sum: u128 = ts.iter().map(Tensor::elements).sum::<u128>() + rest;
            assert_eq!(sum, p.arch.params().total as u128, "{}", p.id);
            // The rest is one-dimensional: at most a few vectors of width h per block.
            let a = &p.arch;
            let per_block = 8 * a.hidden.get() as u128
                + 4 * (a.heads.get() as u128 + 2 * a.kv_heads.get() as u128)
                    * a.head_dim.get() as u128
                + 3 * a.ffn.get().max(a.expert_ffn()) as u128 * (a.experts.max(1) as u128 + 1);
            let bound = (a.layers.get() as u128 + 1) * per_block
                + a.positions as u128 * a.hidden.get() as u128;
            assert!(rest <= bound, "{}: {rest} > {bound}", p.id);
        }
    }

    #[test]
    fn llama_3_8b_by_hand() {
        let a = &crate::model::preset("llama-3-8b").unwrap().arch;
        let (ts, rest) = tensors(a);
        assert_eq!(ts.len(), 1 + 32 * 7 + 1);
        assert_eq!(rest, 32 * 2 * 4096 + 4096);
        let v = ts.iter().find(|t| t.role == Role::AttnV).unwrap();
        assert_eq!((v.cols, v.rows), (4096, 1024));
        let down = ts.iter().find(|t| t.role == Role::FfnDown).unwrap();
        assert_eq!((down.cols, down.rows), (14_336, 4096));
    }
}
