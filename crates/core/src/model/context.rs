//! The context a model was trained for, by preset: serving's default `max_len` and the
//! bound the engines check a longer one against.

/// The model's context (`max_position_embeddings`) for presets memfit knows it of.
///
/// Source: each model's `config.json` on the Hugging Face Hub.
pub fn model_context(preset: &str) -> Option<u32> {
    Some(match preset {
        "gpt2" | "gpt2-medium" | "gpt2-large" | "gpt2-xl" => 1024,
        "gpt3-175b" | "opt-125m" | "opt-1.3b" | "olmo-1b" | "olmo-7b" | "stablelm-2-1.6b"
        | "falcon-7b" | "falcon-40b" | "phi-2" | "phi-1.5" | "bloom-560m" | "bloom-7b1"
        | "bloom-176b" | "gpt-neox-20b" => 2048,
        "llama-2-7b" | "llama-2-13b" | "llama-2-70b" | "olmo-2-7b" | "stablelm-3b-4e1t"
        | "olmoe-1b-7b" => 4096,
        "llama-3-8b" | "llama-3-70b" | "gemma-2b" | "gemma-7b" | "gemma-2-9b" | "gemma-2-27b"
        | "command-r7b" => 8192,
        "starcoder2-3b" | "starcoder2-7b" | "qwen1.5-moe-a2.7b" => 16_384,
        "mistral-7b" | "mixtral-8x7b" | "mistral-small-24b" | "qwen2.5-7b" | "qwen2.5-14b"
        | "qwen2.5-32b" | "qwen2.5-72b" | "gemma-3-1b" => 32_768,
        "qwen3-4b" | "qwen3-8b" | "qwen3-30b-a3b" | "qwen3-235b-a22b" => 40_960,
        "mixtral-8x22b" => 65_536,
        // Qwen2.5-VL's config: 128,000 (not a power of two).
        "qwen2.5-vl-7b" => 128_000,
        "qwen3-vl-8b" => 262_144,
        "llama-3.1-405b"
        | "llama-3.2-1b"
        | "llama-3.2-3b"
        | "gemma-3-4b"
        | "gemma-3-12b"
        | "gemma-3-27b"
        | "mistral-small-3.1-24b"
        | "phi-3-mini"
        | "phi-3-medium"
        | "phi-3.5-moe"
        | "gpt-oss-20b"
        | "gpt-oss-120b"
        | "command-r"
        | "command-r-plus"
        | "command-a" => 131_072,
        "deepseek-v2-lite" | "deepseek-v2" | "deepseek-v3" | "deepseek-r1" => 163_840,
        "phi-4" => 16_384,
        // Scout's config says 10M (its rotary cache is that long in vLLM: 2.5 GiB in bf16).
        "llama-4-scout" => 10_485_760,
        "llama-4-maverick" => 1_048_576,
        _ => return None,
    })
}

/// The longest context among the checkpoints a preset stands for (`llama-3-8b` is Llama 3
/// and 3.1: 8,192 and 131,072 tokens): a `max_len` above it is longer than any of their
/// configs allow. Source: each checkpoint's `config.json` (`max_position_embeddings`).
///
/// ```
/// assert_eq!(memfit_core::model::longest_context("llama-3-8b"), Some(131_072));
/// assert_eq!(memfit_core::model::longest_context("qwen2.5-7b"), Some(32_768));
/// ```
pub fn longest_context(preset: &str) -> Option<u32> {
    match preset {
        "llama-3-8b" | "llama-3-70b" => Some(131_072),
        p => model_context(p),
    }
}

/// The rows of the rotary cos/sin caches vLLM builds for a preset, `P_rope`: `get_rope` keeps
/// one cache per distinct (base, scaling), each of the model's context `P` rows, and a
/// linear-scaling cache (`LinearScalingRotaryEmbedding`) holds `P·f` rows. `None` where
/// the context is unknown.
///
/// # Formula
/// ```text
/// P_rope = Σ_caches P·f_c        f_c = the cache's linear factor (1 without linear scaling)
/// ```
/// Gemma 3 4B–27B: a local cache (θ = 10⁴, `rope_scaling` overridden to default) and a
/// global one (θ = 10⁶, linear factor 8): `P_rope = P + 8·P`; Gemma 3 1B has no scaling: `2·P`.
/// Qwen2.5-VL's and Qwen3-VL's M-RoPE keeps one cache of `4·P` rows ("We enlarge max_position_embeddings to
/// 4 times", `rotary_embedding/mrope.py`).
///
/// Source: vLLM `model_executor/models/gemma3.py` (`Gemma3Attention`: `rope_local_base_freq`
/// on sliding layers), `layers/rotary_embedding/linear_scaling_rope.py` (`max_len =
/// max_position_embeddings · scaling_factor`); the checkpoints' `config.json`.
///
/// # Example
/// Gemma 3 4B, `P` = 131,072, head 256, bf16: `P_rope` = 1,179,648 rows, `P_rope·d·k` = 576 MiB,
/// 512 MiB more than one cache of `P` rows: the llm-d planner's "Model loading took 8.58
/// GiB" (vLLM 0.19) was 0.51 GiB above memfit's weights before this was counted.
///
/// `context` is the model's (`P`, [`crate::scenario::Scenario::context`]); the caches'
/// count and scaling are the preset's family's.
///
/// ```
/// use memfit_core::model::{model_context, rope_cache_rows};
/// assert_eq!(rope_cache_rows("gemma-3-4b", model_context("gemma-3-4b")), Some(9 * 131_072));
/// assert_eq!(rope_cache_rows("llama-3-8b", Some(8_192)), Some(8_192));
/// assert_eq!(rope_cache_rows("llama-2-7b", Some(262_144)), Some(262_144));
/// ```
pub fn rope_cache_rows(preset: &str, context: Option<u32>) -> Option<u64> {
    let p = u64::from(context?);
    Some(match preset {
        "gemma-3-4b" | "gemma-3-12b" | "gemma-3-27b" => p + 8 * p,
        "gemma-3-1b" => 2 * p,
        // M-RoPE (`MRotaryEmbedding`): `cache_max_position_num = 4·P` for video positions.
        "qwen2.5-vl-7b" | "qwen3-vl-8b" => 4 * p,
        _ => p,
    })
}
