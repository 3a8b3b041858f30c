//! The model presets: one data table, [`PRESETS`], in display order (the order the page's
//! model list and `memfit --help` show). Each row is a preset's id, display name,
//! published parameter count and its tolerance, source, and its [`Arch`]: the shape's
//! fields, the others as in [`BASE`] (no positions, no experts, two norms per block, …).
//! It is a static table, not parsed text, so the page carries no parser for it.
//!
//! What the shapes encode, family by family (the `source` field of each row names the
//! config.json it was read from; counts are `transformers` `num_parameters()` unless the
//! tolerance says the publisher rounded):
//!
//! Llama 3.2 1B/3B: tied embeddings.
//! Qwen3: RMSNorm on q and k per head, no q/k/v bias, head_dim 128.
//! Gemma 3 (text): sandwich norms, per-head q/k norms, tied, head_dim 256.
//! Mistral Small 3 (24B): head_dim 128 (not hidden/heads = 160).
//! Qwen3 MoE: Qwen3's attention (per-head q/k norms, head_dim 128), every block MoE,
//! no shared experts, untied.
//! Qwen1.5-MoE / Qwen2-MoE: q/k/v biases, 60 routed experts of width 1408, one shared
//! expert of width 5632 (= 4 × 1408: counted as 4 shared experts) behind a sigmoid gate.
//! StarCoder2: LayerNorm, biases on every linear, GELU MLP (c_fc, c_proj), GQA, tied.
//! OPT: learned positions (max_position_embeddings + 2: OPT's offset), LayerNorm,
//! biases everywhere, ReLU MLP (fc1, fc2), tied.
//! Phi-2 / Phi-1.5: one LayerNorm per block (attention and MLP in parallel), biases on
//! every linear including the LM head, GELU MLP, untied.
//! Phi-3.5-MoE: LayerNorm, biases on q/k/v/o and the LM head (none on the experts or
//! the router), 16 experts, top-2, untied.
//! gpt-oss: biases on q/k/v/o, on every expert and on the router, one sink logit per
//! head, head_dim 64, every block MoE (experts as wide as the model), untied.
//! Cohere (Command R): one weight-only LayerNorm per block (parallel attention and
//! MLP; counted as an RMSNorm: h weights, no bias), SwiGLU, no biases, tied.
//! Llama 4 (text decoder): every MoE block has one shared expert as wide as a routed
//! one (`intermediate_size`), dense blocks are `intermediate_size_mlp` wide; q/k L2
//! norms have no weights; 3 of 4 layers attend within 8,192-token chunks.
//! Gemma (v1): two RMSNorms per block (Gemma 2 has four), GeGLU, head_dim 256, tied.
//! Gemma 3 (text decoder of the 4B/12B/27B multimodal checkpoints): Gemma 2's block with
//! per-head q/k norms, 262,208 tokens, 1,024-token window on 5 of 6 layers.
//! DeepSeek-V2: MLA (q rank 1536, or none in Lite; kv rank 512), 2 shared experts, one dense first block.
//! GPT-NeoX / Pythia: LayerNorm, biases on every linear, GELU MLP, fused qkv, untied.
//! Falcon: no biases, GELU MLP, fused qkv, tied; 7B: multi-query, one LayerNorm per
//! parallel block; 40B (new decoder architecture): 8 KV groups, two LayerNorms.
//! OLMo (v1): LayerNorm without weights, SwiGLU, no biases.
//! OLMoE: 64 experts of width 1024, top-8, RMSNorm over the whole q and k vectors.
//! Cohere: one weight-only LayerNorm per parallel block (counted as h weights), tied;
//! Command R+ adds per-head q/k LayerNorms (`a·d + a_kv·d` weights); Cohere2 (R7B, A)
//! attends within 4,096 tokens on 3 of 4 layers.

use super::{Arch, Bias, LinKind, Mla, Mlp, Norm, Preset};

/// The fields a row does not name: a decoder without learned positions, experts,
/// windows or encoder, two norms per block, nothing fused. (The shape fields are
/// placeholders every row sets.)
pub(super) const BASE: Arch = Arch {
    layers: 0,
    hidden: 0,
    heads: 0,
    kv_heads: 0,
    head_dim: 0,
    ffn: 0,
    vocab: 0,
    mlp: Mlp::Swiglu,
    norm: Norm::Rmsnorm,
    tied: false,
    bias: Bias::None,
    positions: 0,
    norms_per_layer: 2,
    qk_norm: false,
    qk_norm_head: false,
    softcap: false,
    gelu_ops: false,
    softmax_in_dtype: false,
    rope_partial: false,
    emb_norm: false,
    fused_qkv: false,
    fused_gate_up: false,
    experts: 0,
    top_k: 0,
    shared_experts: 0,
    moe_ffn: 0,
    first_dense: 0,
    shared_gate: false,
    expert_bias: false,
    head_bias: false,
    attn_sinks: false,
    window: 0,
    local_layers: 0,
    mla: None,
    encoder_layers: 0,
    rel_buckets: 0,
    attn_layers: None,
    mamba_layers: 0,
    conv_layers: 0,
    linear_layers: 0,
    ssm_version: 0,
    ssm_inner: 0,
    ssm_state: 0,
    ssm_groups: 0,
    ssm_heads: 0,
    ssm_conv: 0,
    ssm_chunk: 0,
    lin_k_heads: 0,
    lin_v_heads: 0,
    lin_k_dim: 0,
    lin_v_dim: 0,
    lin_kind: LinKind::Gdn,
};

/// Every model preset, in display order: this table's, then the hybrids'
/// ([`super::HYBRID_PRESETS`]), joined once.
pub fn presets() -> &'static [Preset] {
    static ALL: std::sync::OnceLock<Vec<Preset>> = std::sync::OnceLock::new();
    ALL.get_or_init(|| {
        PRESETS
            .iter()
            .chain(super::HYBRID_PRESETS)
            .cloned()
            .collect()
    })
}

/// The table.
#[rustfmt::skip]
pub static PRESETS: &[Preset] = &[
    Preset {
        id: "gpt2",
        name: "GPT-2 small (124M)",
        arch: Arch { layers: 12, hidden: 768, heads: 12, kv_heads: 12, head_dim: 64, ffn: 3072, vocab: 50_257, mlp: Mlp::Gelu, norm: Norm::Layernorm, tied: true, bias: Bias::All, positions: 1024, fused_qkv: true, gelu_ops: true, softmax_in_dtype: true, ..BASE },
        published_params: 124_439_808,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face config.json; count = transformers num_parameters()",
        exact: None,
    },
    Preset {
        id: "gpt2-medium",
        name: "GPT-2 medium (355M)",
        arch: Arch { layers: 24, hidden: 1024, heads: 16, kv_heads: 16, head_dim: 64, ffn: 4096, vocab: 50_257, mlp: Mlp::Gelu, norm: Norm::Layernorm, tied: true, bias: Bias::All, positions: 1024, fused_qkv: true, gelu_ops: true, softmax_in_dtype: true, ..BASE },
        published_params: 354_823_168,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face config.json; count = transformers num_parameters()",
        exact: None,
    },
    Preset {
        id: "gpt2-large",
        name: "GPT-2 large (774M)",
        arch: Arch { layers: 36, hidden: 1280, heads: 20, kv_heads: 20, head_dim: 64, ffn: 5120, vocab: 50_257, mlp: Mlp::Gelu, norm: Norm::Layernorm, tied: true, bias: Bias::All, positions: 1024, fused_qkv: true, gelu_ops: true, softmax_in_dtype: true, ..BASE },
        published_params: 774_030_080,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face config.json; count = transformers num_parameters()",
        exact: None,
    },
    Preset {
        id: "gpt2-xl",
        name: "GPT-2 XL (1.5B)",
        arch: Arch { layers: 48, hidden: 1600, heads: 25, kv_heads: 25, head_dim: 64, ffn: 6400, vocab: 50_257, mlp: Mlp::Gelu, norm: Norm::Layernorm, tied: true, bias: Bias::All, positions: 1024, fused_qkv: true, gelu_ops: true, softmax_in_dtype: true, ..BASE },
        published_params: 1_557_611_200,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face config.json; count = transformers num_parameters()",
        exact: None,
    },
    Preset {
        id: "gpt3-175b",
        name: "GPT-3 175B",
        arch: Arch { layers: 96, hidden: 12_288, heads: 96, kv_heads: 96, head_dim: 128, ffn: 49_152, vocab: 50_257, mlp: Mlp::Gelu, norm: Norm::Layernorm, tied: true, bias: Bias::All, positions: 2048, fused_qkv: true, ..BASE },
        published_params: 175_000_000_000,
        published_rel_tol: 0.005,
        #[cfg(not(target_arch = "wasm32"))] source: "Brown et al. 2020 Table 2.1 shape (L=96, h=12288, a=96, n_ctx=2048), GPT-2 vocabulary 50257 unpadded, learned positions; exact count 174,604,259,328; the paper rounds to 175.0B",
        exact: None,
    },
    Preset {
        id: "llama-2-7b",
        name: "Llama 2 7B",
        arch: Arch { layers: 32, hidden: 4096, heads: 32, kv_heads: 32, head_dim: 128, ffn: 11_008, vocab: 32_000, mlp: Mlp::Swiglu, norm: Norm::Rmsnorm, tied: false, bias: Bias::None, ..BASE },
        published_params: 6_738_415_616,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face config.json; count = transformers num_parameters()",
        exact: None,
    },
    Preset {
        id: "llama-2-13b",
        name: "Llama 2 13B",
        arch: Arch { layers: 40, hidden: 5120, heads: 40, kv_heads: 40, head_dim: 128, ffn: 13_824, vocab: 32_000, mlp: Mlp::Swiglu, norm: Norm::Rmsnorm, tied: false, bias: Bias::None, ..BASE },
        published_params: 13_015_864_320,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face config.json; count = transformers num_parameters()",
        exact: None,
    },
    Preset {
        id: "llama-2-70b",
        name: "Llama 2 70B",
        arch: Arch { layers: 80, hidden: 8192, heads: 64, kv_heads: 8, head_dim: 128, ffn: 28_672, vocab: 32_000, mlp: Mlp::Swiglu, norm: Norm::Rmsnorm, tied: false, bias: Bias::None, ..BASE },
        published_params: 68_976_648_192,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face config.json; count = transformers num_parameters()",
        exact: None,
    },
    Preset {
        id: "llama-3-8b",
        name: "Llama 3 / 3.1 8B",
        arch: Arch { layers: 32, hidden: 4096, heads: 32, kv_heads: 8, head_dim: 128, ffn: 14_336, vocab: 128_256, mlp: Mlp::Swiglu, norm: Norm::Rmsnorm, tied: false, bias: Bias::None, ..BASE },
        published_params: 8_030_261_248,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face config.json; count = transformers num_parameters()",
        exact: None,
    },
    Preset {
        id: "llama-3-70b",
        name: "Llama 3 / 3.1 70B",
        arch: Arch { layers: 80, hidden: 8192, heads: 64, kv_heads: 8, head_dim: 128, ffn: 28_672, vocab: 128_256, mlp: Mlp::Swiglu, norm: Norm::Rmsnorm, tied: false, bias: Bias::None, ..BASE },
        published_params: 70_553_706_496,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face config.json; count = transformers num_parameters()",
        exact: None,
    },
    Preset {
        id: "llama-3.1-405b",
        name: "Llama 3.1 405B",
        arch: Arch { layers: 126, hidden: 16_384, heads: 128, kv_heads: 8, head_dim: 128, ffn: 53_248, vocab: 128_256, mlp: Mlp::Swiglu, norm: Norm::Rmsnorm, tied: false, bias: Bias::None, ..BASE },
        published_params: 405_853_388_800,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face config.json; count = transformers num_parameters()",
        exact: None,
    },
    Preset {
        id: "llama-3.2-1b",
        name: "Llama 3.2 1B",
        arch: Arch { layers: 16, hidden: 2048, heads: 32, kv_heads: 8, head_dim: 64, ffn: 8192, vocab: 128_256, mlp: Mlp::Swiglu, norm: Norm::Rmsnorm, tied: true, bias: Bias::None, ..BASE },
        published_params: 1_235_814_400,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face meta-llama/Llama-3.2-1B config.json (tied embeddings); count = transformers num_parameters()",
        exact: None,
    },
    Preset {
        id: "llama-3.2-3b",
        name: "Llama 3.2 3B",
        arch: Arch { layers: 28, hidden: 3072, heads: 24, kv_heads: 8, head_dim: 128, ffn: 8192, vocab: 128_256, mlp: Mlp::Swiglu, norm: Norm::Rmsnorm, tied: true, bias: Bias::None, ..BASE },
        published_params: 3_212_749_824,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face meta-llama/Llama-3.2-3B config.json (tied embeddings); count = transformers num_parameters()",
        exact: None,
    },
    Preset {
        id: "llama-4-scout",
        name: "Llama 4 Scout (109B MoE, text)",
        arch: Arch { layers: 48, hidden: 5120, heads: 40, kv_heads: 8, head_dim: 128, ffn: 16_384, vocab: 202_048, mlp: Mlp::Swiglu, norm: Norm::Rmsnorm, tied: false, bias: Bias::None, experts: 16, top_k: 1, shared_experts: 1, moe_ffn: 8192, window: 8192, local_layers: 36, ..BASE },
        published_params: 107_769_861_120,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face meta-llama/Llama-4-Scout-17B-16E config.json, text decoder (Llama4ForCausalLM: 16 experts top-1 + a shared expert in every block); the vision encoder (~0.9B of the card's 109B) is not counted",
        exact: None,
    },
    Preset {
        id: "llama-4-maverick",
        name: "Llama 4 Maverick (400B MoE, text)",
        arch: Arch { layers: 48, hidden: 5120, heads: 40, kv_heads: 8, head_dim: 128, ffn: 16_384, vocab: 202_048, mlp: Mlp::Swiglu, norm: Norm::Rmsnorm, tied: false, bias: Bias::None, experts: 128, top_k: 1, shared_experts: 1, moe_ffn: 8192, first_dense: 24, window: 8192, local_layers: 36, ..BASE },
        published_params: 400_711_848_960,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face meta-llama/Llama-4-Maverick-17B-128E config.json, text decoder (128 experts top-1 + shared in every other block; memfit places the 24 dense blocks first: totals exact)",
        exact: None,
    },
    Preset {
        id: "mistral-7b",
        name: "Mistral 7B v0.1",
        arch: Arch { layers: 32, hidden: 4096, heads: 32, kv_heads: 8, head_dim: 128, ffn: 14_336, vocab: 32_000, mlp: Mlp::Swiglu, norm: Norm::Rmsnorm, tied: false, bias: Bias::None, window: 4096, local_layers: 32, ..BASE },
        published_params: 7_241_732_096,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face mistralai/Mistral-7B-v0.1 config.json (sliding window 4,096 on every layer: a rolling KV cache)",
        exact: None,
    },
    Preset {
        id: "mistral-small-24b",
        name: "Mistral Small 3 (24B)",
        arch: Arch { layers: 40, hidden: 5120, heads: 32, kv_heads: 8, head_dim: 128, ffn: 32_768, vocab: 131_072, mlp: Mlp::Swiglu, norm: Norm::Rmsnorm, tied: false, bias: Bias::None, ..BASE },
        published_params: 23_572_403_200,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face mistralai/Mistral-Small-24B-Base-2501 config.json (head_dim 128); count = transformers num_parameters()",
        exact: None,
    },
    Preset {
        id: "mixtral-8x7b",
        name: "Mixtral 8x7B",
        arch: Arch { layers: 32, hidden: 4096, heads: 32, kv_heads: 8, head_dim: 128, ffn: 14_336, vocab: 32_000, mlp: Mlp::Swiglu, norm: Norm::Rmsnorm, tied: false, bias: Bias::None, experts: 8, top_k: 2, ..BASE },
        published_params: 46_702_792_704,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face config.json; count = transformers num_parameters()",
        exact: None,
    },
    Preset {
        id: "mixtral-8x22b",
        name: "Mixtral 8x22B",
        arch: Arch { layers: 56, hidden: 6144, heads: 48, kv_heads: 8, head_dim: 128, ffn: 16_384, vocab: 32_768, mlp: Mlp::Swiglu, norm: Norm::Rmsnorm, tied: false, bias: Bias::None, experts: 8, top_k: 2, ..BASE },
        published_params: 141_000_000_000,
        published_rel_tol: 0.005,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face config.json; the model card says 141B (exact count 140,630,071,296)",
        exact: None,
    },
    Preset {
        id: "qwen2.5-7b",
        name: "Qwen2.5 7B",
        arch: Arch { layers: 28, hidden: 3584, heads: 28, kv_heads: 4, head_dim: 128, ffn: 18_944, vocab: 152_064, mlp: Mlp::Swiglu, norm: Norm::Rmsnorm, tied: false, bias: Bias::Qkv, ..BASE },
        published_params: 7_615_616_512,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face config.json; count = transformers num_parameters()",
        exact: None,
    },
    Preset {
        id: "qwen2.5-14b",
        name: "Qwen2.5 14B",
        arch: Arch { layers: 48, hidden: 5120, heads: 40, kv_heads: 8, head_dim: 128, ffn: 13_824, vocab: 152_064, mlp: Mlp::Swiglu, norm: Norm::Rmsnorm, tied: false, bias: Bias::Qkv, ..BASE },
        published_params: 14_770_033_664,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face config.json; count = transformers num_parameters()",
        exact: None,
    },
    Preset {
        id: "qwen2.5-32b",
        name: "Qwen2.5 32B",
        arch: Arch { layers: 64, hidden: 5120, heads: 40, kv_heads: 8, head_dim: 128, ffn: 27_648, vocab: 152_064, mlp: Mlp::Swiglu, norm: Norm::Rmsnorm, tied: false, bias: Bias::Qkv, ..BASE },
        published_params: 32_763_876_352,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face config.json; count = transformers num_parameters()",
        exact: None,
    },
    Preset {
        id: "qwen2.5-72b",
        name: "Qwen2.5 72B",
        arch: Arch { layers: 80, hidden: 8192, heads: 64, kv_heads: 8, head_dim: 128, ffn: 29_568, vocab: 152_064, mlp: Mlp::Swiglu, norm: Norm::Rmsnorm, tied: false, bias: Bias::Qkv, ..BASE },
        published_params: 72_706_203_648,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face config.json; count = transformers num_parameters()",
        exact: None,
    },
    Preset {
        id: "qwen3-4b",
        name: "Qwen3 4B",
        arch: Arch { layers: 36, hidden: 2560, heads: 32, kv_heads: 8, head_dim: 128, ffn: 9728, vocab: 151_936, mlp: Mlp::Swiglu, norm: Norm::Rmsnorm, tied: true, bias: Bias::None, qk_norm_head: true, ..BASE },
        published_params: 4_022_468_096,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face Qwen/Qwen3-4B config.json (qk_norm, tied); model card: 4.0B, 3.6B non-embedding (3,633,511,936 here)",
        exact: None,
    },
    Preset {
        id: "qwen3-8b",
        name: "Qwen3 8B",
        arch: Arch { layers: 36, hidden: 4096, heads: 32, kv_heads: 8, head_dim: 128, ffn: 12_288, vocab: 151_936, mlp: Mlp::Swiglu, norm: Norm::Rmsnorm, tied: false, bias: Bias::None, qk_norm_head: true, ..BASE },
        published_params: 8_190_735_360,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face Qwen/Qwen3-8B config.json (qk_norm, untied); model card: 8.2B, 6.95B non-embedding (6,946,075,648 here)",
        exact: None,
    },
    Preset {
        id: "qwen3-30b-a3b",
        name: "Qwen3 30B-A3B (MoE)",
        arch: Arch { layers: 48, hidden: 2048, heads: 32, kv_heads: 4, head_dim: 128, ffn: 6144, vocab: 151_936, mlp: Mlp::Swiglu, norm: Norm::Rmsnorm, tied: false, bias: Bias::None, qk_norm_head: true, experts: 128, top_k: 8, moe_ffn: 768, ..BASE },
        published_params: 30_532_122_624,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face Qwen/Qwen3-30B-A3B config.json (qwen3_moe: 128 experts of width 768, top-8, per-head q/k norms, untied); model card: 30.5B total, 3.3B activated",
        exact: None,
    },
    Preset {
        id: "qwen3-235b-a22b",
        name: "Qwen3 235B-A22B (MoE)",
        arch: Arch { layers: 94, hidden: 4096, heads: 64, kv_heads: 4, head_dim: 128, ffn: 12_288, vocab: 151_936, mlp: Mlp::Swiglu, norm: Norm::Rmsnorm, tied: false, bias: Bias::None, qk_norm_head: true, experts: 128, top_k: 8, moe_ffn: 1536, ..BASE },
        published_params: 235_093_634_560,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face Qwen/Qwen3-235B-A22B config.json (qwen3_moe: 128 experts of width 1536, top-8); model card: 235B total, 22B activated",
        exact: None,
    },
    Preset {
        id: "qwen1.5-moe-a2.7b",
        name: "Qwen1.5-MoE A2.7B",
        arch: Arch { layers: 24, hidden: 2048, heads: 16, kv_heads: 16, head_dim: 128, ffn: 5632, vocab: 151_936, mlp: Mlp::Swiglu, norm: Norm::Rmsnorm, tied: false, bias: Bias::Qkv, experts: 60, top_k: 4, shared_experts: 4, moe_ffn: 1408, shared_gate: true, ..BASE },
        published_params: 14_315_784_192,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face Qwen/Qwen1.5-MoE-A2.7B config.json (qwen2_moe: 60 experts of width 1408, top-4, shared expert of width 5632 with its gate); model card: 14.3B total, 2.7B activated",
        exact: None,
    },
    Preset {
        id: "gemma-2b",
        name: "Gemma 2B",
        arch: Arch { layers: 18, hidden: 2048, heads: 8, kv_heads: 1, head_dim: 256, ffn: 16_384, vocab: 256_000, mlp: Mlp::Swiglu, norm: Norm::Rmsnorm, tied: true, bias: Bias::None, ..BASE },
        published_params: 2_506_172_416,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face google/gemma-2b config.json (gemma: two RMSNorms per block, MQA, tied)",
        exact: None,
    },
    Preset {
        id: "gemma-7b",
        name: "Gemma 7B",
        arch: Arch { layers: 28, hidden: 3072, heads: 16, kv_heads: 16, head_dim: 256, ffn: 24_576, vocab: 256_000, mlp: Mlp::Swiglu, norm: Norm::Rmsnorm, tied: true, bias: Bias::None, ..BASE },
        published_params: 8_537_680_896,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face google/gemma-7b config.json (gemma)",
        exact: None,
    },
    Preset {
        id: "gemma-2-9b",
        name: "Gemma 2 9B",
        arch: Arch { layers: 42, hidden: 3584, heads: 16, kv_heads: 8, head_dim: 256, ffn: 14_336, vocab: 256_000, mlp: Mlp::Swiglu, norm: Norm::Rmsnorm, tied: true, bias: Bias::None, norms_per_layer: 4, window: 4096, local_layers: 21, softcap: true, ..BASE },
        published_params: 9_241_705_984,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face config.json; count = transformers num_parameters()",
        exact: None,
    },
    Preset {
        id: "gemma-2-27b",
        name: "Gemma 2 27B",
        arch: Arch { layers: 46, hidden: 4608, heads: 32, kv_heads: 16, head_dim: 128, ffn: 36_864, vocab: 256_000, mlp: Mlp::Swiglu, norm: Norm::Rmsnorm, tied: true, bias: Bias::None, norms_per_layer: 4, window: 4096, local_layers: 23, softcap: true, ..BASE },
        published_params: 27_227_128_320,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face config.json; count = transformers num_parameters()",
        exact: None,
    },
    Preset {
        id: "gemma-3-1b",
        name: "Gemma 3 1B",
        arch: Arch { layers: 26, hidden: 1152, heads: 4, kv_heads: 1, head_dim: 256, ffn: 6912, vocab: 262_144, mlp: Mlp::Swiglu, norm: Norm::Rmsnorm, tied: true, bias: Bias::None, norms_per_layer: 4, qk_norm_head: true, window: 512, local_layers: 22, ..BASE },
        published_params: 999_885_952,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face google/gemma-3-1b-pt config.json (gemma3_text: sandwich norms, per-head q/k norms, tied)",
        exact: None,
    },
    Preset {
        id: "gemma-3-4b",
        name: "Gemma 3 4B (text)",
        arch: Arch { layers: 34, hidden: 2560, heads: 8, kv_heads: 4, head_dim: 256, ffn: 10_240, vocab: 262_208, mlp: Mlp::Swiglu, norm: Norm::Rmsnorm, tied: true, bias: Bias::None, norms_per_layer: 4, qk_norm_head: true, window: 1024, local_layers: 29, ..BASE },
        published_params: 3_880_263_168,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face google/gemma-3-4b-pt config.json, text decoder (Gemma 3 report: 3,209M non-embedding + 675M embedding; the 417M SigLIP vision encoder is not counted)",
        exact: None,
    },
    Preset {
        id: "gemma-3-12b",
        name: "Gemma 3 12B (text)",
        arch: Arch { layers: 48, hidden: 3840, heads: 16, kv_heads: 8, head_dim: 256, ffn: 15_360, vocab: 262_208, mlp: Mlp::Swiglu, norm: Norm::Rmsnorm, tied: true, bias: Bias::None, norms_per_layer: 4, qk_norm_head: true, window: 1024, local_layers: 40, ..BASE },
        published_params: 11_766_034_176,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face google/gemma-3-12b-pt config.json, text decoder (report: 10,759M non-embedding)",
        exact: None,
    },
    Preset {
        id: "gemma-3-27b",
        name: "Gemma 3 27B (text)",
        arch: Arch { layers: 62, hidden: 5376, heads: 32, kv_heads: 16, head_dim: 128, ffn: 21_504, vocab: 262_208, mlp: Mlp::Swiglu, norm: Norm::Rmsnorm, tied: true, bias: Bias::None, norms_per_layer: 4, qk_norm_head: true, window: 1024, local_layers: 52, ..BASE },
        published_params: 27_009_346_304,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face google/gemma-3-27b-pt config.json, text decoder (report: 25,600M non-embedding)",
        exact: None,
    },
    Preset {
        id: "phi-3-mini",
        name: "Phi-3 mini (3.8B)",
        arch: Arch { layers: 32, hidden: 3072, heads: 32, kv_heads: 32, head_dim: 96, ffn: 8192, vocab: 32_064, mlp: Mlp::Swiglu, norm: Norm::Rmsnorm, tied: false, bias: Bias::None, fused_qkv: true, fused_gate_up: true, ..BASE },
        published_params: 3_821_079_552,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face config.json; count = transformers num_parameters()",
        exact: None,
    },
    Preset {
        id: "phi-3-medium",
        name: "Phi-3 medium (14B)",
        arch: Arch { layers: 40, hidden: 5120, heads: 40, kv_heads: 10, head_dim: 128, ffn: 17_920, vocab: 32_064, mlp: Mlp::Swiglu, norm: Norm::Rmsnorm, tied: false, bias: Bias::None, fused_qkv: true, fused_gate_up: true, ..BASE },
        published_params: 13_960_238_080,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face config.json; count = transformers num_parameters()",
        exact: None,
    },
    Preset {
        id: "phi-4",
        name: "Phi-4 (14B)",
        arch: Arch { layers: 40, hidden: 5120, heads: 40, kv_heads: 10, head_dim: 128, ffn: 17_920, vocab: 100_352, mlp: Mlp::Swiglu, norm: Norm::Rmsnorm, tied: false, bias: Bias::None, fused_qkv: true, fused_gate_up: true, ..BASE },
        published_params: 14_659_507_200,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face microsoft/phi-4 config.json (model_type phi3, untied)",
        exact: None,
    },
    Preset {
        id: "t5-large",
        name: "T5 large (770M, encoder-decoder)",
        arch: Arch { layers: 24, hidden: 1024, heads: 16, kv_heads: 16, head_dim: 64, ffn: 4096, vocab: 32_128, mlp: Mlp::Gelu, norm: Norm::Rmsnorm, tied: true, bias: Bias::None, encoder_layers: 24, rel_buckets: 32, ..BASE },
        published_params: 737_668_096,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face t5-large config.json; count as DeepSpeed's doc prints it (737.67M)",
        exact: None,
    },
    Preset {
        id: "t5-3b",
        name: "T5 3B (encoder-decoder)",
        arch: Arch { layers: 24, hidden: 1024, heads: 32, kv_heads: 32, head_dim: 128, ffn: 16_384, vocab: 32_128, mlp: Mlp::Gelu, norm: Norm::Rmsnorm, tied: true, bias: Bias::None, encoder_layers: 24, rel_buckets: 32, ..BASE },
        published_params: 2_851_598_336,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face t5-3b config.json; count as DeepSpeed's doc prints it (2851M)",
        exact: None,
    },
    Preset {
        id: "deepseek-v2-lite",
        name: "DeepSeek-V2-Lite (16B MoE, MLA)",
        arch: Arch { layers: 27, hidden: 2048, heads: 16, kv_heads: 16, head_dim: 128, ffn: 10_944, vocab: 102_400, mlp: Mlp::Swiglu, norm: Norm::Rmsnorm, tied: false, bias: Bias::None, experts: 64, top_k: 6, shared_experts: 2, moe_ffn: 1408, first_dense: 1, mla: Some(Mla { q_rank: 0, kv_rank: 512, rope_dim: 64, nope_dim: 128, v_dim: 128 }), ..BASE },
        published_params: 15_706_484_224,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face deepseek-ai/DeepSeek-V2-Lite config.json (no q compression, 64 experts + 2 shared, top-6); model card: 15.7B total, 2.4B activated",
        exact: None,
    },
    Preset {
        id: "deepseek-v2",
        name: "DeepSeek-V2 (236B MoE, MLA)",
        arch: Arch { layers: 60, hidden: 5120, heads: 128, kv_heads: 128, head_dim: 128, ffn: 12_288, vocab: 102_400, mlp: Mlp::Swiglu, norm: Norm::Rmsnorm, tied: false, bias: Bias::None, experts: 160, top_k: 6, shared_experts: 2, moe_ffn: 1536, first_dense: 1, mla: Some(Mla { q_rank: 1536, kv_rank: 512, rope_dim: 64, nope_dim: 128, v_dim: 128 }), ..BASE },
        published_params: 235_741_434_880,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face deepseek-ai/DeepSeek-V2 config.json (160 experts + 2 shared, top-6); model card: 236B total, 21B activated",
        exact: None,
    },
    Preset {
        id: "deepseek-v3",
        name: "DeepSeek-V3 (671B MoE, MLA)",
        arch: Arch { layers: 61, hidden: 7168, heads: 128, kv_heads: 128, head_dim: 128, ffn: 18_432, vocab: 129_280, mlp: Mlp::Swiglu, norm: Norm::Rmsnorm, tied: false, bias: Bias::None, experts: 256, top_k: 8, shared_experts: 1, moe_ffn: 2048, first_dense: 3, mla: Some(Mla { q_rank: 1536, kv_rank: 512, rope_dim: 64, nope_dim: 128, v_dim: 128 }), ..BASE },
        published_params: 671_026_404_352,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face deepseek-ai/DeepSeek-V3 config.json, transformers num_parameters() (MTP module excluded); DeepSeek-V3 report: 671B total, 37B activated",
        exact: None,
    },
    Preset {
        id: "deepseek-r1",
        name: "DeepSeek-R1 (671B MoE, MLA; V3's architecture)",
        arch: Arch { layers: 61, hidden: 7168, heads: 128, kv_heads: 128, head_dim: 128, ffn: 18_432, vocab: 129_280, mlp: Mlp::Swiglu, norm: Norm::Rmsnorm, tied: false, bias: Bias::None, experts: 256, top_k: 8, shared_experts: 1, moe_ffn: 2048, first_dense: 3, mla: Some(Mla { q_rank: 1536, kv_rank: 512, rope_dim: 64, nope_dim: 128, v_dim: 128 }), ..BASE },
        published_params: 671_026_404_352,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face deepseek-ai/DeepSeek-R1 config.json (model_type deepseek_v3, the V3 shape; MTP module excluded); model card: 671B total, 37B activated",
        exact: None,
    },
    Preset {
        id: "t0-3b",
        name: "T0 3B (T5 v1.1 XL LM-adapted)",
        arch: Arch { layers: 24, hidden: 2048, heads: 32, kv_heads: 32, head_dim: 64, ffn: 5120, vocab: 32_128, mlp: Mlp::Swiglu, norm: Norm::Rmsnorm, tied: false, bias: Bias::None, encoder_layers: 24, rel_buckets: 32, ..BASE },
        published_params: 2_849_757_184,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face bigscience/T0_3B config.json (gated-gelu, untied)",
        exact: None,
    },
    Preset {
        id: "mt0-xxl",
        name: "mT0 XXL (13B, mT5 XXL)",
        arch: Arch { layers: 24, hidden: 4096, heads: 64, kv_heads: 64, head_dim: 64, ffn: 10_240, vocab: 250_112, mlp: Mlp::Swiglu, norm: Norm::Rmsnorm, tied: false, bias: Bias::None, encoder_layers: 24, rel_buckets: 32, ..BASE },
        published_params: 12_921_057_280,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face bigscience/mt0-xxl config.json (gated-gelu, untied)",
        exact: None,
    },
    Preset {
        id: "phi-2",
        name: "Phi-2 (2.7B)",
        arch: Arch { layers: 32, hidden: 2560, heads: 32, kv_heads: 32, head_dim: 80, ffn: 10_240, vocab: 51_200, mlp: Mlp::Gelu, norm: Norm::Layernorm, tied: false, bias: Bias::All, norms_per_layer: 1, head_bias: true, rope_partial: true, ..BASE },
        published_params: 2_779_683_840,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face microsoft/phi-2 config.json (phi: parallel block with one LayerNorm, biases everywhere incl. the LM head, untied)",
        exact: None,
    },
    Preset {
        id: "phi-1.5",
        name: "Phi-1.5 (1.4B)",
        arch: Arch { layers: 24, hidden: 2048, heads: 32, kv_heads: 32, head_dim: 64, ffn: 8192, vocab: 51_200, mlp: Mlp::Gelu, norm: Norm::Layernorm, tied: false, bias: Bias::All, norms_per_layer: 1, head_bias: true, rope_partial: true, ..BASE },
        published_params: 1_418_270_720,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face microsoft/phi-1_5 config.json (phi)",
        exact: None,
    },
    Preset {
        id: "phi-3.5-moe",
        name: "Phi-3.5-MoE (42B, 16 experts)",
        arch: Arch { layers: 32, hidden: 4096, heads: 32, kv_heads: 8, head_dim: 128, ffn: 6400, vocab: 32_064, mlp: Mlp::Swiglu, norm: Norm::Layernorm, tied: false, bias: Bias::All, experts: 16, top_k: 2, head_bias: true, ..BASE },
        published_params: 41_873_153_344,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face microsoft/Phi-3.5-MoE-instruct config.json (phimoe: LayerNorm, q/k/v/o and LM-head biases, 16 experts top-2); model card: 42B total, 6.6B active",
        exact: None,
    },
    Preset {
        id: "gpt-oss-20b",
        name: "gpt-oss 20B (MoE)",
        arch: Arch { layers: 24, hidden: 2880, heads: 64, kv_heads: 8, head_dim: 64, ffn: 2880, vocab: 201_088, mlp: Mlp::Swiglu, norm: Norm::Rmsnorm, tied: false, bias: Bias::All, fused_gate_up: true, experts: 32, top_k: 4, expert_bias: true, attn_sinks: true, window: 128, local_layers: 12, ..BASE },
        published_params: 20_914_757_184,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face openai/gpt-oss-20b config.json (gpt_oss: 32 experts top-4 with biases, attention sinks, untied; counted in bf16 — the checkpoint stores the experts in MXFP4)",
        exact: None,
    },
    Preset {
        id: "gpt-oss-120b",
        name: "gpt-oss 120B (MoE)",
        arch: Arch { layers: 36, hidden: 2880, heads: 64, kv_heads: 8, head_dim: 64, ffn: 2880, vocab: 201_088, mlp: Mlp::Swiglu, norm: Norm::Rmsnorm, tied: false, bias: Bias::All, fused_gate_up: true, experts: 128, top_k: 4, expert_bias: true, attn_sinks: true, window: 128, local_layers: 18, ..BASE },
        published_params: 116_829_156_672,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face openai/gpt-oss-120b config.json (gpt_oss: 128 experts top-4); model card: 117B total, 5.1B active",
        exact: None,
    },
    Preset {
        id: "command-r",
        name: "Command R (35B)",
        arch: Arch { layers: 40, hidden: 8192, heads: 64, kv_heads: 64, head_dim: 128, ffn: 22_528, vocab: 256_000, mlp: Mlp::Swiglu, norm: Norm::Rmsnorm, tied: true, bias: Bias::None, norms_per_layer: 1, ..BASE },
        published_params: 34_980_831_232,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face CohereForAI/c4ai-command-r-v01 config.json (cohere: one weight-only LayerNorm per parallel block, tied)",
        exact: None,
    },
    Preset {
        id: "command-r-plus",
        name: "Command R+ (104B)",
        arch: Arch { layers: 64, hidden: 12_288, heads: 96, kv_heads: 8, head_dim: 128, ffn: 33_792, vocab: 256_000, mlp: Mlp::Swiglu, norm: Norm::Rmsnorm, tied: true, bias: Bias::None, norms_per_layer: 1, qk_norm: true, ..BASE },
        published_params: 103_810_674_688,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face CohereForAI/c4ai-command-r-plus config.json (cohere with use_qk_norm: per-head q/k LayerNorms, tied)",
        exact: None,
    },
    Preset {
        id: "command-r7b",
        name: "Command R7B",
        arch: Arch { layers: 32, hidden: 4096, heads: 32, kv_heads: 8, head_dim: 128, ffn: 14_336, vocab: 256_000, mlp: Mlp::Swiglu, norm: Norm::Rmsnorm, tied: true, bias: Bias::None, norms_per_layer: 1, window: 4096, local_layers: 24, ..BASE },
        published_params: 8_028_033_024,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face CohereForAI/c4ai-command-r7b-12-2024 config.json (cohere2: 4,096-token window on 3 of 4 layers, tied)",
        exact: None,
    },
    Preset {
        id: "command-a",
        name: "Command A (111B)",
        arch: Arch { layers: 64, hidden: 12_288, heads: 96, kv_heads: 8, head_dim: 128, ffn: 36_864, vocab: 256_000, mlp: Mlp::Swiglu, norm: Norm::Rmsnorm, tied: true, bias: Bias::None, norms_per_layer: 1, window: 4096, local_layers: 48, ..BASE },
        published_params: 111_057_580_032,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face CohereForAI/c4ai-command-a-03-2025 config.json (cohere2)",
        exact: None,
    },
    Preset {
        id: "starcoder2-3b",
        name: "StarCoder2 3B",
        arch: Arch { layers: 30, hidden: 3072, heads: 24, kv_heads: 2, head_dim: 128, ffn: 12_288, vocab: 49_152, mlp: Mlp::Gelu, norm: Norm::Layernorm, tied: true, bias: Bias::All, window: 4096, local_layers: 30, ..BASE },
        published_params: 3_030_371_328,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face bigcode/starcoder2-3b config.json (starcoder2: LayerNorm, biases on every linear, GELU, GQA 24/2, tied)",
        exact: None,
    },
    Preset {
        id: "starcoder2-7b",
        name: "StarCoder2 7B",
        arch: Arch { layers: 32, hidden: 4608, heads: 36, kv_heads: 4, head_dim: 128, ffn: 18_432, vocab: 49_152, mlp: Mlp::Gelu, norm: Norm::Layernorm, tied: true, bias: Bias::All, window: 4096, local_layers: 32, ..BASE },
        published_params: 7_173_923_840,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face bigcode/starcoder2-7b config.json (starcoder2, GQA 36/4, tied)",
        exact: None,
    },
    Preset {
        id: "stablelm-2-1.6b",
        name: "StableLM 2 1.6B",
        arch: Arch { layers: 24, hidden: 2048, heads: 32, kv_heads: 32, head_dim: 64, ffn: 5632, vocab: 100_352, mlp: Mlp::Swiglu, norm: Norm::Layernorm, tied: false, bias: Bias::Qkv, rope_partial: true, ..BASE },
        published_params: 1_644_515_328,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face stabilityai/stablelm-2-1_6b config.json (stablelm: LayerNorm, SwiGLU, q/k/v biases, untied)",
        exact: None,
    },
    Preset {
        id: "stablelm-3b-4e1t",
        name: "StableLM 3B 4E1T",
        arch: Arch { layers: 32, hidden: 2560, heads: 32, kv_heads: 32, head_dim: 80, ffn: 6912, vocab: 50_304, mlp: Mlp::Swiglu, norm: Norm::Layernorm, tied: false, bias: Bias::None, rope_partial: true, ..BASE },
        published_params: 2_795_443_200,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face stabilityai/stablelm-3b-4e1t config.json (stablelm: LayerNorm, SwiGLU, no biases, untied)",
        exact: None,
    },
    Preset {
        id: "opt-125m",
        name: "OPT 125M",
        arch: Arch { layers: 12, hidden: 768, heads: 12, kv_heads: 12, head_dim: 64, ffn: 3072, vocab: 50_272, mlp: Mlp::Gelu, norm: Norm::Layernorm, tied: true, bias: Bias::All, positions: 2050, ..BASE },
        published_params: 125_239_296,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face facebook/opt-125m config.json (opt: 2048 + 2 learned positions, LayerNorm, biases, ReLU MLP, tied)",
        exact: None,
    },
    Preset {
        id: "opt-1.3b",
        name: "OPT 1.3B",
        arch: Arch { layers: 24, hidden: 2048, heads: 32, kv_heads: 32, head_dim: 64, ffn: 8192, vocab: 50_272, mlp: Mlp::Gelu, norm: Norm::Layernorm, tied: true, bias: Bias::All, positions: 2050, ..BASE },
        published_params: 1_315_758_080,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face facebook/opt-1.3b config.json (opt)",
        exact: None,
    },
    Preset {
        id: "bloom-560m",
        name: "BLOOM 560M",
        arch: Arch { layers: 24, hidden: 1024, heads: 16, kv_heads: 16, head_dim: 64, ffn: 4096, vocab: 250_880, mlp: Mlp::Gelu, norm: Norm::Layernorm, tied: true, bias: Bias::All, emb_norm: true, fused_qkv: true, ..BASE },
        published_params: 559_214_592,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face bigscience/bloom-560m config.json (bloom: embedding LayerNorm, ALiBi, biases, tied)",
        exact: None,
    },
    Preset {
        id: "bloom-7b1",
        name: "BLOOM 7B1 (bloomz-7b1)",
        arch: Arch { layers: 30, hidden: 4096, heads: 32, kv_heads: 32, head_dim: 128, ffn: 16_384, vocab: 250_880, mlp: Mlp::Gelu, norm: Norm::Layernorm, tied: true, bias: Bias::All, emb_norm: true, fused_qkv: true, ..BASE },
        published_params: 7_069_016_064,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face bigscience/bloom-7b1 config.json",
        exact: None,
    },
    Preset {
        id: "olmo-2-7b",
        name: "OLMo 2 7B",
        arch: Arch { layers: 32, hidden: 4096, heads: 32, kv_heads: 32, head_dim: 128, ffn: 11_008, vocab: 100_352, mlp: Mlp::Swiglu, norm: Norm::Rmsnorm, tied: false, bias: Bias::None, qk_norm: true, ..BASE },
        published_params: 7_298_617_344,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face config.json; count = transformers num_parameters()",
        exact: None,
    },
    Preset {
        id: "olmo-1b",
        name: "OLMo 1B",
        arch: Arch { layers: 16, hidden: 2048, heads: 16, kv_heads: 16, head_dim: 128, ffn: 8192, vocab: 50_304, mlp: Mlp::Swiglu, norm: Norm::LayernormNp, tied: true, bias: Bias::None, ..BASE },
        published_params: 1_176_764_416,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face allenai/OLMo-1B-hf config.json (olmo: LayerNorm without weights, SwiGLU, tied)",
        exact: None,
    },
    Preset {
        id: "olmo-7b",
        name: "OLMo 7B",
        arch: Arch { layers: 32, hidden: 4096, heads: 32, kv_heads: 32, head_dim: 128, ffn: 11_008, vocab: 50_304, mlp: Mlp::Swiglu, norm: Norm::LayernormNp, tied: false, bias: Bias::None, ..BASE },
        published_params: 6_888_095_744,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face allenai/OLMo-7B-hf config.json (olmo, untied)",
        exact: None,
    },
    Preset {
        id: "olmoe-1b-7b",
        name: "OLMoE 1B-7B (MoE)",
        arch: Arch { layers: 16, hidden: 2048, heads: 16, kv_heads: 16, head_dim: 128, ffn: 1024, vocab: 50_304, mlp: Mlp::Swiglu, norm: Norm::Rmsnorm, tied: false, bias: Bias::None, qk_norm: true, experts: 64, top_k: 8, ..BASE },
        published_params: 6_919_161_856,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face allenai/OLMoE-1B-7B-0924 (and -0125, the same shape) config.json (olmoe: 64 experts top-8, q/k RMSNorms); model card: 6.9B total, 1.3B active",
        exact: None,
    },
    Preset {
        id: "bloom-176b",
        name: "BLOOM 176B",
        arch: Arch { layers: 70, hidden: 14_336, heads: 112, kv_heads: 112, head_dim: 128, ffn: 57_344, vocab: 250_880, mlp: Mlp::Gelu, norm: Norm::Layernorm, tied: true, bias: Bias::All, emb_norm: true, fused_qkv: true, ..BASE },
        published_params: 176_247_271_424,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face config.json; count = transformers num_parameters()",
        exact: None,
    },
    Preset {
        id: "gpt-neox-20b",
        name: "GPT-NeoX 20B",
        arch: Arch { layers: 44, hidden: 6144, heads: 64, kv_heads: 64, head_dim: 96, ffn: 24_576, vocab: 50_432, mlp: Mlp::Gelu, norm: Norm::Layernorm, tied: false, bias: Bias::All, fused_qkv: true, rope_partial: true, ..BASE },
        published_params: 20_554_567_680,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face EleutherAI/gpt-neox-20b config.json (gpt_neox: parallel block, two LayerNorms, biases, untied); the Pythia README's count",
        exact: None,
    },
    Preset {
        id: "falcon-7b",
        name: "Falcon 7B",
        arch: Arch { layers: 32, hidden: 4544, heads: 71, kv_heads: 1, head_dim: 64, ffn: 18_176, vocab: 65_024, mlp: Mlp::Gelu, norm: Norm::Layernorm, tied: true, bias: Bias::None, norms_per_layer: 1, fused_qkv: true, ..BASE },
        published_params: 6_921_720_704,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face tiiuae/falcon-7b config.json (falcon: multi-query, one LayerNorm per parallel block, no biases, tied)",
        exact: None,
    },
    Preset {
        id: "falcon-40b",
        name: "Falcon 40B",
        arch: Arch { layers: 60, hidden: 8192, heads: 128, kv_heads: 8, head_dim: 64, ffn: 32_768, vocab: 65_024, mlp: Mlp::Gelu, norm: Norm::Layernorm, tied: true, bias: Bias::None, fused_qkv: true, ..BASE },
        published_params: 41_303_293_952,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face tiiuae/falcon-40b config.json (new decoder architecture: 8 KV groups, ln_attn and ln_mlp, tied)",
        exact: None,
    },
    // Pure state-space models: every block one RMSNorm and a Mamba / Mamba-2 mixer, no
    // attention and no MLP (the attention fields are placeholders the estimator does not
    // read for them: no KV cache, the activations of `activations::ssm`).
    Preset {
        id: "mamba-130m",
        name: "Mamba 130M",
        arch: Arch { layers: 24, hidden: 768, heads: 1, kv_heads: 1, head_dim: 768, ffn: 1536, vocab: 50_280, tied: true, attn_layers: Some(0), mamba_layers: 24, ssm_version: 1, ssm_inner: 1536, ssm_state: 16, ssm_conv: 4, ..BASE },
        published_params: 129_135_360,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face state-spaces/mamba-130m-hf config.json (mamba: d_inner 1,536, state 16, conv 4, tied); count = transformers num_parameters()",
        exact: None,
    },
    Preset {
        id: "mamba2-2.7b",
        name: "Mamba-2 2.7B",
        arch: Arch { layers: 64, hidden: 2560, heads: 1, kv_heads: 1, head_dim: 2560, ffn: 5120, vocab: 50_288, tied: true, attn_layers: Some(0), mamba_layers: 64, ssm_version: 2, ssm_inner: 5120, ssm_state: 128, ssm_groups: 1, ssm_heads: 80, ssm_conv: 4, ..BASE },
        published_params: 2_702_599_680,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face state-spaces/mamba2-2.7b config (mamba2: 80 heads of 64, 1 group, state 128, conv 4, tied); count = transformers Mamba2ForCausalLM num_parameters()",
        exact: None,
    },
    Preset {
        id: "falcon-mamba-7b",
        name: "Falcon Mamba 7B",
        arch: Arch { layers: 64, hidden: 4096, heads: 1, kv_heads: 1, head_dim: 4096, ffn: 8192, vocab: 65_024, tied: false, attn_layers: Some(0), mamba_layers: 64, ssm_version: 1, ssm_inner: 8192, ssm_state: 16, ssm_conv: 4, ..BASE },
        published_params: 7_272_665_088,
        published_rel_tol: 0.0,
        #[cfg(not(target_arch = "wasm32"))] source: "Hugging Face tiiuae/falcon-mamba-7b config.json (falcon_mamba: a Mamba mixer with d_inner 8,192, dt_rank 256, untied); count = transformers num_parameters()",
        exact: None,
    },
];

#[cfg(test)]
mod tests {
    /// Ids are unique and the list starts and ends where the page's model list does;
    /// every row sets its shape (no placeholder of `BASE` is left).
    #[test]
    fn table_in_display_order() {
        let all = super::PRESETS;
        assert_eq!(all.len(), 75);
        assert_eq!((all[0].id, all[74].id), ("gpt2", "falcon-mamba-7b"));
        let mut ids: Vec<&str> = all.iter().map(|p| p.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 75, "duplicate preset id");
        for p in all {
            let a = &p.arch;
            let shape = [
                a.layers, a.hidden, a.heads, a.kv_heads, a.head_dim, a.ffn, a.vocab,
            ];
            assert!(shape.iter().all(|&x| x > 0), "{}", p.id);
        }
    }
}
