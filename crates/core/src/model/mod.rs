//! Transformer shapes and their exact parameter counts.
//!
//! A model is an [`Arch`]: the handful of numbers in a Hugging Face `config.json`
//! that fix every weight matrix. From it memfit counts parameters exactly (the way
//! `sum(p.numel() for p in model.parameters())` does, tied weights once) and the
//! "largest layer" the way DeepSpeed's ZeRO-3 estimator does (the largest single
//! module's own parameters, not recursive).

use crate::nonzero::Count;
use serde::{Deserialize, Serialize};

mod counts;
mod layers;

pub use counts::*;
pub use layers::{LayerMix, Lightning, LinKind, LinearAttn, Ssm, SsmDtype};

crate::spelled! {
    /// Feed-forward block shape.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum Mlp {
        /// Two matrices, `h→f→h` (GPT-2, GPT-3, BLOOM, T5): GELU or ReLU.
        Gelu = "gelu", "GELU (2 matrices)", "2 matrices";
        /// Three matrices, gate and up `h→f` and down `f→h` (Llama, Mistral, Qwen, Gemma).
        Swiglu = "swiglu", "SwiGLU (3 matrices)", "3 matrices";
    }
}

impl Mlp {
    /// Number of `h×f` matrices.
    pub fn matrices(self) -> u64 {
        match self {
            Mlp::Gelu => 2,
            Mlp::Swiglu => 3,
        }
    }
}

crate::spelled! {
    /// Normalisation layer kind.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum Norm {
        /// LayerNorm: weight and bias, `2h` parameters.
        Layernorm = "layernorm", "LayerNorm", "";
        /// RMSNorm: weight only, `h` parameters.
        Rmsnorm = "rmsnorm", "RMSNorm", "";
        /// LayerNorm without affine weights (`F.layer_norm(x, ...)`, OLMo v1): no parameters;
        /// it saves what a LayerNorm saves.
        #[serde(rename = "layernorm-np")]
        LayernormNp = "layernorm-np", "LayerNorm, no weights", "no weights: OLMo v1";
    }
}

impl Norm {
    /// Parameters of one norm over a vector of width `h`.
    pub fn params(self, h: u128) -> u128 {
        match self {
            Norm::Layernorm => 2 * h,
            Norm::Rmsnorm => h,
            Norm::LayernormNp => 0,
        }
    }
}

crate::spelled! {
    /// Which linear layers carry a bias vector.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum Bias {
        /// No biases (Llama, Mistral, Gemma).
        None = "none", "none", "";
        /// Only the q, k, v projections (Qwen2/2.5).
        Qkv = "qkv", "q/k/v", "q/k/v only";
        /// Every linear layer (GPT-2, GPT-3, BLOOM).
        All = "all", "all", "";
    }
}

/// The shape of a decoder-only transformer (dense or mixture-of-experts).
///
/// The shape's sizes (`layers`, `hidden`, `heads`, `kv_heads`, `head_dim`, `ffn`, `vocab`)
/// are [`Count`]s, never 0 (the key table and the preset table parse them so); the other
/// counts are plain integers where 0 means "none" (`experts`, `positions`, `window`, …).
/// `head_dim` is explicit because some models (Gemma 2) do not use `hidden / heads`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Arch {
    /// Transformer blocks, `L`.
    pub layers: Count,
    /// Model width, `h`.
    pub hidden: Count,
    /// Query heads, `a`.
    pub heads: Count,
    /// Key/value heads, `a_kv` (= `a` for MHA, 1 for MQA, in between for GQA).
    pub kv_heads: Count,
    /// Width of one head, `d` (usually `h / a`).
    pub head_dim: Count,
    /// Feed-forward inner width, `f` (per expert for MoE).
    pub ffn: Count,
    /// Vocabulary size, `V`.
    pub vocab: Count,
    /// Feed-forward shape.
    pub mlp: Mlp,
    /// Normalisation kind.
    pub norm: Norm,
    /// LM head shares the embedding matrix.
    pub tied: bool,
    /// Which linears have biases.
    pub bias: Bias,
    /// Learned absolute position embeddings (0 for RoPE / ALiBi).
    pub positions: u32,
    /// Norms inside each block: 2 (pre-norm) or 4 (Gemma 2's sandwich norms).
    pub norms_per_layer: u32,
    /// OLMo 2 style q/k norms over the full projected q and k vectors.
    pub qk_norm: bool,
    /// Qwen3 / Gemma 3 style q/k norms per head: one `d`-wide norm each for q and k
    /// (`Qwen3RMSNorm(head_dim)`), shared by the heads.
    #[serde(default)]
    pub qk_norm_head: bool,
    /// Gemma 2's soft-capping: `cap·tanh(x/cap)` on the attention scores (eager) and on
    /// the final logits, each tanh saving its output for the backward.
    #[serde(default)]
    pub softcap: bool,
    /// The GELU is `gelu_new` written in Python ops (GPT-2's `NewGELUActivation`:
    /// `0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))`), whose autograd graph saves five
    /// `f`-wide tensors where a fused GELU saves two.
    #[serde(default)]
    pub gelu_ops: bool,
    /// Eager attention's softmax is taken in the model's dtype (GPT-2's own
    /// `eager_attention_forward`: `softmax(scores)`, no `dtype=torch.float32` upcast), so at
    /// inference two score tensors of `k` bytes are alive at its peak instead of the
    /// masked scores, their fp32 copy and the fp32 softmax.
    #[serde(default)]
    pub softmax_in_dtype: bool,
    /// The rotary embedding covers only part of each head (`partial_rotary_factor` or
    /// `rotary_pct` < 1: Phi-2, Phi-4-mini, StableLM, GPT-NeoX). Transformers then builds q
    /// with `torch.cat([rotated, pass_through], -1)`, a tensor in (b, heads, s, d) memory
    /// order, and FlashAttention's output takes that order, so the attention output is
    /// copied (`.contiguous()`) before o_proj and both copies are saved.
    #[serde(default)]
    pub rope_partial: bool,
    /// LayerNorm right after the embedding (BLOOM).
    pub emb_norm: bool,
    /// q, k and v live in one fused linear module (GPT-2 `c_attn`, Phi-3 `qkv_proj`).
    pub fused_qkv: bool,
    /// Gate and up projections live in one fused module (Phi-3 `gate_up_proj`).
    pub fused_gate_up: bool,
    /// Routed experts per MoE layer (0 = dense model).
    pub experts: u32,
    /// Experts each token is routed to.
    pub top_k: u32,
    /// Shared (always active) experts per MoE layer (DeepSeek).
    pub shared_experts: u32,
    /// Inner width of one expert (0 = `ffn`).
    pub moe_ffn: u32,
    /// The first `first_dense` blocks use a dense MLP of width `ffn` (DeepSeek-V3: 3).
    pub first_dense: u32,
    /// A sigmoid gate on the shared experts' output, `Linear(h, 1)` per MoE layer
    /// (Qwen2-MoE's `shared_expert_gate`).
    #[serde(default)]
    pub shared_gate: bool,
    /// Biases on every expert's projections (gate and up `2·f_e`, down `h`) and on the
    /// router (`E`) (gpt-oss).
    #[serde(default)]
    pub expert_bias: bool,
    /// A bias on the LM head, `V` (Phi-2, Phi-3.5-MoE).
    #[serde(default)]
    pub head_bias: bool,
    /// One learned attention-sink logit per head and layer (gpt-oss `sinks`).
    #[serde(default)]
    pub attn_sinks: bool,
    /// Sliding-window attention span `W` in tokens (0 = every layer attends to the whole
    /// context). Changes no weight; bounds the KV cache of the windowed layers.
    #[serde(default)]
    pub window: u32,
    /// Layers that attend within the window, `L_w` (Gemma 2: every other layer; Gemma 3:
    /// five of six; gpt-oss: every other; StarCoder2 and Mistral v0.1: all).
    #[serde(default)]
    pub local_layers: u32,
    /// Multi-head latent attention shape (DeepSeek-V2/V3); `None` = standard q/k/v/o.
    pub mla: Option<Mla>,
    /// Encoder blocks of an encoder-decoder model (T5); 0 = decoder-only.
    pub encoder_layers: u32,
    /// T5 relative-position buckets (a `buckets × heads` table in the first block of each stack).
    pub rel_buckets: u32,
    /// Blocks with softmax attention, the only ones with a KV cache (`None` = every block
    /// that is not a Mamba, short-convolution or linear-attention block; see
    /// [`Arch::attention_layers`]).
    #[serde(default)]
    pub attn_layers: Option<u32>,
    /// Blocks with a Mamba / Mamba-2 mixer, `L_m` (0 for a transformer).
    #[serde(default)]
    pub mamba_layers: u32,
    /// Blocks with a gated short convolution (LFM2), `L_c`.
    #[serde(default)]
    pub conv_layers: u32,
    /// Blocks with linear attention (gated DeltaNet, lightning attention), `L_lin`.
    #[serde(default)]
    pub linear_layers: u32,
    /// The Mamba blocks' version: 1 (selective scan) or 2 (SSD); 0 = 1.
    #[serde(default)]
    pub ssm_version: u32,
    /// Their inner width `d` (`d_inner`, `intermediate_size`, `expand·h`); 0 = `2·h`.
    #[serde(default)]
    pub ssm_inner: u32,
    /// Their state size per channel `N`; 0 = 16 (Mamba) or 128 (Mamba-2).
    #[serde(default)]
    pub ssm_state: u32,
    /// Mamba-2's B/C groups `G`; 0 = 1.
    #[serde(default)]
    pub ssm_groups: u32,
    /// Mamba-2's heads `H` (`P = d/H` wide); 0 = `d/64`.
    #[serde(default)]
    pub ssm_heads: u32,
    /// The causal convolution's kernel `K` of the Mamba and short-convolution blocks
    /// (`conv_kernel`, `d_conv`, LFM2's `conv_L_cache`); 0 = 4 (Mamba) or 3 (LFM2).
    #[serde(default)]
    pub ssm_conv: u32,
    /// Mamba-2's chunk length `l` (`chunk_size`, `mamba_chunk_size`); 0 = 256.
    #[serde(default)]
    pub ssm_chunk: u32,
    /// The gated-DeltaNet blocks' key heads `H_k` (`linear_num_key_heads`); 0 = none.
    #[serde(default)]
    pub lin_k_heads: u32,
    /// Their value heads `H_v` (`linear_num_value_heads`).
    #[serde(default)]
    pub lin_v_heads: u32,
    /// Their key head width `d_k` (`linear_key_head_dim`).
    #[serde(default)]
    pub lin_k_dim: u32,
    /// Their value head width `d_v` (`linear_value_head_dim`).
    #[serde(default)]
    pub lin_v_dim: u32,
    /// Which linear attention the `linear_layers` blocks run: gated DeltaNet (default) or
    /// MiniMax's lightning attention (`lin_v_heads` heads of `lin_v_dim`).
    #[serde(default)]
    pub lin_kind: LinKind,
    /// The SSM state's element type the checkpoint declares (`mamba_ssm_dtype`; `Auto`:
    /// none, each engine's default).
    #[serde(default)]
    pub ssm_dtype: SsmDtype,
}

/// Multi-head latent attention (DeepSeek-V2/V3): low-rank q and kv projections.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mla {
    /// `q_lora_rank` (0 = a plain q projection).
    pub q_rank: u32,
    /// `kv_lora_rank`.
    pub kv_rank: u32,
    /// `qk_rope_head_dim`.
    pub rope_dim: u32,
    /// `qk_nope_head_dim`.
    pub nope_dim: u32,
    /// `v_head_dim`.
    pub v_dim: u32,
}

/// `count` matrices `inp × out` of one kind.
const fn lin(name: &'static str, kind: LinearKind, inp: u64, out: u64, count: u64) -> Linear {
    Linear {
        name,
        kind,
        inp,
        out,
        count,
    }
}

/// A named model with its exact shape and the parameter count its authors publish.
#[derive(Clone, Debug, PartialEq)]
pub struct Preset {
    /// Query-string id (`model=`).
    pub id: &'static str,
    /// Display name.
    pub name: &'static str,
    /// The shape.
    pub arch: Arch,
    /// The total parameter count as published (model card or `num_parameters()`).
    pub published_params: u64,
    /// Relative tolerance of the published count: 0 when the publisher gives the
    /// exact integer, larger when it only gives a rounded figure (GPT-3's "175.0B").
    pub published_rel_tol: f64,
    /// Where the shape and count come from (native builds only: the page never shows it,
    /// and its 7.7 KB of text stay out of the wasm modules).
    #[cfg(not(target_arch = "wasm32"))]
    pub source: &'static str,
    /// The exact count of a model whose blocks an [`Arch`] cannot describe (a hybrid of
    /// attention, Mamba, short-convolution or linear-attention blocks: its `arch` is the
    /// transformer approximation and layer mix its config.json import sets); `None` where
    /// [`Arch::params`] counts the shape exactly.
    pub exact: Option<Exact>,
}

/// A hybrid preset's exact counts, as `hfconfig` counts its checkpoint's config.json
/// module by module (checked in `tests/hybrid_presets.rs` against that import and
/// transformers' `num_parameters()`). They are the preset's `Ψ` and largest layer while
/// its shape is not overridden (`crate::resolved::Prepared::of`), as an import's explicit
/// `params` and `largest_layer` are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exact {
    /// Every parameter, tied weights once, `Ψ`.
    pub params: u64,
    /// The largest module's own parameters (DeepSpeed's `largest_layer_params`).
    pub largest_layer: u64,
}

mod context;
mod presets;
mod presets_hybrid;
mod vision;
pub use context::{longest_context, model_context, rope_cache_rows};
pub use presets::{presets, PRESETS};
pub use presets_hybrid::HYBRID_PRESETS;
pub use vision::{
    llama4_vision, pixtral, qwen3_vl, qwen_vl, siglip, vision_tower, QwenVl, VisionTower,
};

/// Looks a preset up by its id.
pub fn preset(id: &str) -> Option<&'static Preset> {
    presets().iter().find(|p| p.id == id)
}

#[cfg(test)]
mod tests;
