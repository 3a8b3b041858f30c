//! The vision encoder of a multimodal `config.json` (`vision_config`), counted as the
//! serving engines load it with the language model (the `vision` key).

use crate::model::{llama4_vision, pixtral, qwen3_vl, qwen_vl, siglip, QwenVl};
use serde_json::Value;

/// The parameters of the vision encoder and projector of a `model_type` memfit reads the
/// text decoder of (Gemma 3's SigLIP, Mistral 3's Pixtral, Llama 4's encoder, Qwen2-VL's,
/// Qwen2.5-VL's and Qwen3-VL's), with the
/// published checkpoints' values for a field the config leaves out; `h` the text width.
/// `None` for another type or a config without `vision_config`. Formulas:
/// [`crate::model::vision_tower`]'s.
///
/// # Example
/// `google/gemma-3-4b-it` (27 layers of 1,152, MLP 4,304, patch 14, image 896; h = 2,560):
/// 419,816,304.
pub(super) fn vision_params(v: &Value, model_type: &str, h: u64) -> Option<u64> {
    let c = v.get("vision_config")?;
    let g = |k: &str, d: u64| c.get(k).and_then(Value::as_u64).unwrap_or(d);
    let t = match model_type {
        "gemma3" => siglip(
            g("num_hidden_layers", 27),
            g("hidden_size", 1152),
            g("intermediate_size", 4304),
            g("patch_size", 14),
            g("image_size", 896),
            h,
        ),
        "mistral3" => pixtral(
            g("num_hidden_layers", 24),
            g("hidden_size", 1024),
            g("intermediate_size", 4096),
            g("patch_size", 14),
            v.get("spatial_merge_size")
                .and_then(Value::as_u64)
                .unwrap_or(2),
            h,
        ),
        "llama4" => llama4_vision(
            g("num_hidden_layers", 34),
            g("hidden_size", 1408),
            g("intermediate_size", 5632),
            g("patch_size", 14),
            g("image_size", 336),
            g("vision_output_dim", 4096),
            h,
        ),
        "qwen2_5_vl" => qwen_vl(
            QwenVl::V25,
            g("depth", 32),
            g("hidden_size", 1280),
            g("intermediate_size", 3420),
            g("patch_size", 14),
            g("out_hidden_size", h),
        ),
        "qwen2_vl" => {
            let w = g("embed_dim", 1280);
            qwen_vl(
                QwenVl::V2,
                g("depth", 32),
                w,
                w.saturating_mul(g("mlp_ratio", 4)),
                g("patch_size", 14),
                g("hidden_size", h),
            )
        }
        // Qwen3.5's encoder is Qwen3-VL's without DeepStack mergers.
        "qwen3_vl" | "qwen3_vl_moe" | "qwen3_5" | "qwen3_5_moe" => qwen3_vl(
            g("depth", 27),
            g("hidden_size", 1152),
            g("intermediate_size", 4304),
            g("patch_size", 16),
            g("num_position_embeddings", 2304),
            c.get("deepstack_visual_indexes")
                .and_then(Value::as_array)
                .map_or(u64::from(model_type.starts_with("qwen3_vl")) * 3, |a| {
                    a.len() as u64
                }),
            g("out_hidden_size", h),
        ),
        _ => return None,
    };
    Some(t.sharded.saturating_add(t.replicated))
}
