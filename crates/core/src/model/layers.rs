//! What the blocks of a state-space or hybrid model are: how many mix tokens with
//! softmax attention (and so carry a KV cache), with a Mamba / Mamba-2 state-space layer
//! (and of what state), with a short convolution, or with linear attention, and how many
//! feed-forwards are mixtures of experts.
//!
//! An [`Arch`] describes `L` identical transformer blocks; these models are not that.
//! The config.json import counts their parameters exactly from the config (see
//! `hfconfig::hybrid`) and describes their blocks with a [`LayerMix`], which the memory
//! model does not read yet: their activations and recurrent state are not modelled.

use serde::{Deserialize, Serialize};

/// The shape of the state-space layers of a model (all of its SSM layers share one).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ssm {
    /// 1 (Mamba: selective scan, a `d_inner × d_state` state per sequence and layer) or
    /// 2 (Mamba-2 / SSD: `heads × head_dim × d_state`, `groups` shared B and C).
    pub version: u8,
    /// Inner width `d_inner` (Mamba: `expand·h`; Mamba-2: `heads·head_dim`), channels.
    pub d_inner: u64,
    /// State size per channel, `N` (`state_size`, `mamba_d_state`, `ssm_state_size`).
    pub d_state: u64,
    /// Groups of B and C (Mamba-2 `n_groups`; 1 for Mamba).
    pub groups: u64,
    /// SSM heads (Mamba-2 `num_heads`; 0 for Mamba).
    pub heads: u64,
    /// Causal depthwise convolution kernel, tokens (`conv_kernel`, `d_conv`); the
    /// convolution cache holds `kernel − 1` tokens of `d_inner + 2·groups·N` channels.
    pub conv_kernel: u64,
}

/// How the blocks of a non-transformer (state-space, hybrid, short-convolution,
/// linear-attention) model divide. Every count is of decoder blocks (`layers` in all);
/// Falcon-H1's parallel blocks count as both an attention and a Mamba layer.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayerMix {
    /// Decoder blocks.
    pub layers: u64,
    /// Blocks with softmax attention: the only ones with a KV cache.
    pub attention: u64,
    /// Of those, blocks whose attention is windowed (`window` tokens of KV cache).
    pub windowed: u64,
    /// Blocks with a Mamba / Mamba-2 mixer ([`LayerMix::ssm`]).
    pub mamba: u64,
    /// Their state-space shape.
    pub ssm: Option<Ssm>,
    /// Blocks with a gated short convolution (LFM2): cache `conv_kernel − 1` tokens × `h`.
    pub conv: u64,
    /// The short convolution's kernel, tokens.
    pub conv_kernel: u64,
    /// Blocks with linear attention (Qwen3-Next's gated DeltaNet, MiniMax's lightning
    /// attention): a fixed-size state, no KV cache.
    pub linear_attention: u64,
    /// Blocks whose feed-forward is a mixture of experts.
    pub moe: u64,
}
