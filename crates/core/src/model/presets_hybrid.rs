//! The state-space and hybrid flagships, one per family memfit counts exactly from its
//! config.json (`hfconfig::ssm`, `hfconfig::hybrids`, `hfconfig::novel`), in display order
//! after [`super::PRESETS`].
//!
//! A hybrid's blocks are not `L` equal transformer blocks, so [`Arch::params`] cannot count
//! them: each hybrid row's `arch` is what importing its checkpoint's config.json sets (the
//! transformer keys of its width and the layer mix: `attn_layers`, `mamba_layers`,
//! `conv_layers`, `linear_layers`, `ssm_*`, `lin_*`), and its [`Exact`] holds the count that
//! import makes module by module. `tests/hybrid_presets.rs` imports each published
//! config.json (`tests/configs/`, the Hub URL beside each) and checks that the import sets
//! this `arch` and counts this [`Exact`]; `tests/hf_import.rs` checks the same counts
//! against transformers 5.24 `num_parameters()`. A pure Mamba-2 model (Mamba-Codestral) is
//! counted by [`Arch::params`] itself.
//!
//! What the shapes encode:
//! Jamba v0.1: a Mamba (selective-scan) mixer with dt/B/C norms in 28 of 32 blocks,
//! attention in 4, an MoE of 16 experts (top 2) in every other block.
//! Nemotron-H 8B: 52 blocks of one mixer each: 24 Mamba-2, 4 attention, 24 ReLU² MLPs.
//! Qwen3-Next 80B-A3B: 36 gated-DeltaNet blocks and 12 gated-attention blocks, each with
//! 512 experts (top 10) and a gated shared expert.
//! LFM2 1.2B: 10 gated short-convolution blocks (kernel 3) and 6 attention blocks.
//! Granite 4.0-H Tiny: 36 Mamba-2 and 4 attention blocks, each with a shared MLP and 64
//! experts (top 6).
//! Falcon-H1 7B: attention and a Mamba-2 mixer side by side in all 44 blocks.
//! Bamba 9B: 29 Mamba-2 and 3 attention blocks, a gated MLP in each.
//! MiniMax-Text-01: 70 lightning-attention blocks (64 heads of 128, a `K^T V` state each) and
//! 10 softmax-attention blocks, each with 32 experts (top 2).

use super::presets::BASE;
use super::{Arch, Exact, LinKind, Preset};
use crate::nonzero::count;

/// The table.
#[rustfmt::skip]
pub static HYBRID_PRESETS: &[Preset] = &[
    Preset {
        id: "mamba-codestral-7b",
        name: "Mamba-Codestral 7B",
        arch: Arch { layers: count(64), hidden: count(4096), heads: count(1), kv_heads: count(1), head_dim: count(4096), ffn: count(8192), vocab: count(32_768), tied: false, mamba_layers: 64, ssm_version: 2, ssm_inner: 8192, ssm_state: 128, ssm_groups: 8, ssm_heads: 128, ssm_conv: 4, ..BASE },
        published_params: 7_285_403_648,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "https://huggingface.co/mistralai/Mamba-Codestral-7B-v0.1 config.json (mamba2: 128 heads of 64, 8 groups, state 128, untied); count = Mistral's announcement (7,285,403,648) = transformers num_parameters()",
        exact: None,
    },
    Preset {
        id: "jamba-v0.1",
        name: "Jamba v0.1 (52B, 12B active)",
        arch: Arch { layers: count(32), hidden: count(4096), heads: count(32), kv_heads: count(8), head_dim: count(128), ffn: count(14_336), vocab: count(65_536), tied: false, experts: 16, top_k: 2, moe_ffn: 14_336, first_dense: 16, mamba_layers: 28, ssm_version: 1, ssm_inner: 8192, ssm_state: 16, ssm_conv: 4, ..BASE },
        published_params: 52_000_000_000,
        published_rel_tol: 0.01,
        #[cfg(not(target_arch = "wasm32"))] source: "https://huggingface.co/ai21labs/Jamba-v0.1 config.json (jamba: attention every 8th block from 4, MoE every 2nd from 1); model card: 52B total, 12B active",
        exact: Some(Exact { params: 51_570_323_328, largest_layer: 268_435_456 }),
    },
    Preset {
        id: "nemotron-h-8b",
        name: "Nemotron-H 8B",
        arch: Arch { layers: count(52), hidden: count(4096), heads: count(32), kv_heads: count(8), head_dim: count(128), ffn: count(21_504), vocab: count(131_072), tied: false, attn_layers: Some(4), mamba_layers: 24, ssm_version: 2, ssm_inner: 8192, ssm_state: 128, ssm_groups: 8, ssm_heads: 128, ssm_conv: 4, ssm_chunk: 128, ..BASE },
        published_params: 8_000_000_000,
        published_rel_tol: 0.02,
        #[cfg(not(target_arch = "wasm32"))] source: "https://huggingface.co/nvidia/Nemotron-H-8B-Base-8K config.json (nemotron_h: pattern of 24 M, 4 *, 24 -); model card: 8B parameters",
        exact: Some(Exact { params: 8_100_852_736, largest_layer: 536_870_912 }),
    },
    Preset {
        id: "qwen3-next-80b-a3b",
        name: "Qwen3-Next 80B-A3B",
        arch: Arch { layers: count(48), hidden: count(2048), heads: count(16), kv_heads: count(2), head_dim: count(256), ffn: count(5120), vocab: count(151_936), tied: false, experts: 512, top_k: 10, shared_experts: 1, moe_ffn: 512, linear_layers: 36, ssm_conv: 4, lin_k_heads: 16, lin_v_heads: 32, lin_k_dim: 128, lin_v_dim: 128, rope_partial: true, ..BASE },
        published_params: 80_000_000_000,
        published_rel_tol: 0.01,
        #[cfg(not(target_arch = "wasm32"))] source: "https://huggingface.co/Qwen/Qwen3-Next-80B-A3B-Instruct config.json (qwen3_next: full attention every 4th block); model card: 80B in total, 3B activated",
        exact: Some(Exact { params: 79_674_391_296, largest_layer: 311_164_928 }),
    },
    Preset {
        id: "lfm2-1.2b",
        name: "LFM2 1.2B",
        arch: Arch { layers: count(16), hidden: count(2048), heads: count(32), kv_heads: count(8), head_dim: count(64), ffn: count(8192), vocab: count(65_536), tied: true, conv_layers: 10, ssm_conv: 3, ..BASE },
        published_params: 1_170_340_608,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "https://huggingface.co/LiquidAI/LFM2-1.2B config.json (lfm2: attention at 2, 5, 8, 10, 12, 14); model card: 1,170,340,608 parameters",
        exact: Some(Exact { params: 1_170_340_608, largest_layer: 134_217_728 }),
    },
    Preset {
        id: "granite-4.0-h-tiny",
        name: "Granite 4.0-H Tiny (7B, 1B active)",
        arch: Arch { layers: count(40), hidden: count(1536), heads: count(12), kv_heads: count(4), head_dim: count(128), ffn: count(512), vocab: count(100_352), tied: true, experts: 64, top_k: 6, shared_experts: 2, moe_ffn: 512, mamba_layers: 36, ssm_version: 2, ssm_inner: 3072, ssm_state: 128, ssm_groups: 1, ssm_heads: 48, ssm_conv: 4, ..BASE },
        published_params: 7_000_000_000,
        published_rel_tol: 0.01,
        #[cfg(not(target_arch = "wasm32"))] source: "https://huggingface.co/ibm-granite/granite-4.0-h-tiny config.json (granitemoehybrid: attention in 4 of 40 blocks); model card: 7B total, 1B active",
        exact: Some(Exact { params: 6_939_037_248, largest_layer: 154_140_672 }),
    },
    Preset {
        id: "falcon-h1-7b",
        name: "Falcon-H1 7B",
        arch: Arch { layers: count(44), hidden: count(3072), heads: count(12), kv_heads: count(2), head_dim: count(128), ffn: count(12_288), vocab: count(130_048), tied: false, attn_layers: Some(44), mamba_layers: 44, ssm_version: 2, ssm_inner: 3072, ssm_state: 256, ssm_groups: 1, ssm_heads: 24, ssm_conv: 4, ssm_chunk: 128, ..BASE },
        published_params: 7_585_513_568,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "https://huggingface.co/tiiuae/Falcon-H1-7B-Base config.json (falcon_h1: parallel attention and Mamba-2 in every block); count = transformers num_parameters()",
        exact: Some(Exact { params: 7_585_513_568, largest_layer: 399_507_456 }),
    },
    Preset {
        id: "bamba-9b",
        name: "Bamba 9B",
        arch: Arch { layers: count(32), hidden: count(4096), heads: count(32), kv_heads: count(8), head_dim: count(128), ffn: count(14_336), vocab: count(128_256), tied: false, mamba_layers: 29, ssm_version: 2, ssm_inner: 8192, ssm_state: 128, ssm_groups: 1, ssm_heads: 128, ssm_conv: 4, rope_partial: true, ..BASE },
        published_params: 9_780_235_392,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "https://huggingface.co/ibm-ai-platform/Bamba-9B config.json (bamba: attention at 9, 18, 27); count = transformers num_parameters()",
        exact: Some(Exact { params: 9_780_235_392, largest_layer: 525_336_576 }),
    },
    Preset {
        id: "minimax-text-01",
        name: "MiniMax-Text-01 (456B, 45.9B active)",
        arch: Arch { layers: count(80), hidden: count(6144), heads: count(64), kv_heads: count(8), head_dim: count(128), ffn: count(9216), vocab: count(200_064), tied: false, experts: 32, top_k: 2, moe_ffn: 9216, linear_layers: 70, lin_v_heads: 64, lin_v_dim: 128, lin_kind: LinKind::Lightning, ..BASE },
        published_params: 456_000_000_000,
        published_rel_tol: 0.001,
        #[cfg(not(target_arch = "wasm32"))] source: "https://huggingface.co/MiniMaxAI/MiniMax-Text-01 config.json (minimax: softmax attention every 8th block, lightning attention in the others); model card: 456B total, 45.9B activated per token",
        exact: Some(Exact { params: 456_089_655_296, largest_layer: 1_229_193_216 }),
    },
];
