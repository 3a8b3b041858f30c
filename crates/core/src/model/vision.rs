//! The vision encoder a preset's published checkpoints carry: a serving engine loads it
//! with the language model (memfit's presets count the text decoder alone).

/// A checkpoint's vision encoder and projector, parameters: `sharded` in the engines'
/// tensor-parallel linear layers (split over `t`), `replicated` on every rank
/// (embeddings, norms, row-parallel biases, the projector).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VisionTower {
    /// Parameters of the column- and row-parallel layers (divided by `t`).
    pub sharded: u64,
    /// Parameters every rank holds whole.
    pub replicated: u64,
    /// The encoder's layers and width (`vision_config.num_hidden_layers`, `hidden_size`).
    pub shape: (u32, u32),
}

/// Gemma 3's SigLIP encoder (27 layers, width 1,152, MLP 4,304, 14-pixel patches of a
/// 896-pixel image) and its projector onto a text width `h`.
///
/// # Formula
/// ```text
/// sharded    = 27·(4·1152² + 2·1152·4304 + 3·1152 + 4304)          = 411,279,984
/// replicated = 3·14²·1152 + 1152 (patches) + 64²·1152 (positions)
///              + 27·(4·1152 + 2·1152) (norms, row-parallel biases) + 2·1152 (post-norm)
///              + 1152·h + 1152 (projector and its norm)             = 5,586,048 + 1152·(h + 1)
/// ```
/// Source: Hugging Face `google/gemma-3-4b-it` `config.json` (`vision_config`: 27 layers,
/// hidden 1,152, intermediate 4,304, patch 14, image 896); vLLM `model_executor/models/
/// siglip.py` (`QKVParallelLinear`, `RowParallelLinear`, `ColumnParallelLinear`; embeddings
/// and norms whole) and `gemma3_mm.py` (`mm_input_projection_weight` of 1,152 × h,
/// `mm_soft_emb_norm`), 0.19.0; the Gemma 3 report's 417M vision encoder.
///
/// # Example
/// Gemma 3 4B (h = 2,560): 411,279,984 + 5,586,048 + 2,950,272 = 419,816,304 parameters
/// (the encoder alone 416,866,032: the report's "417M"), 0.78 GiB in bf16 at `t = 1`.
pub fn vision_tower(preset: &str, hidden: u32) -> Option<VisionTower> {
    const W: u64 = 1152;
    const L: u64 = 27;
    match preset {
        "gemma-3-4b" | "gemma-3-12b" | "gemma-3-27b" => Some(VisionTower {
            sharded: L * (4 * W * W + 2 * W * 4304 + 3 * W + 4304),
            replicated: 3 * 14 * 14 * W
                + W
                + 64 * 64 * W
                + L * 6 * W
                + 2 * W
                + W * (hidden as u64 + 1),
            shape: (27, 1152),
        }),
        "llama-4-scout" | "llama-4-maverick" => Some(llama4_vision(hidden as u64)),
        "mistral-small-3.1-24b" => Some(pixtral_vision(hidden as u64)),
        _ => None,
    }
}

/// Mistral Small 3.1's Pixtral encoder (24 layers, width 1,024, gated MLP 4,096, 14-pixel
/// patches, no biases) and its projector (RMS norm, a 2 × 2 patch merger 4,096 → 1,024, then
/// 1,024 → h → h).
///
/// # Formula
/// ```text
/// sharded    = 24·(4·1024² + 3·1024·4096) + 1024·h + h·h     (attention, MLP, linear_1, linear_2)
/// replicated = 3·14²·1024 (patches) + 1024 (ln_pre) + 24·2·1024 (norms) + 1024 (projector norm)
///              + 4096·1024 (patch merger)                     = 4,847,616
/// ```
/// Source: Hugging Face `mistralai/Mistral-Small-3.1-24B-Base-2503` `config.json`
/// (`vision_config`: pixtral, hidden 1,024, intermediate 4,096, 24 layers, patch 14;
/// `spatial_merge_size` 2, `multimodal_projector_bias` false), transformers
/// `modeling_pixtral.py` and `modeling_mistral3.py`; vLLM `models/pixtral.py` (QKV,
/// merged-column and row-parallel layers) and `models/mistral3.py` (`linear_1`
/// column-parallel, `linear_2` row-parallel).
///
/// # Example
/// h = 5,120: 434,110,464 + 4,847,616 = 438,958,080 parameters, 0.82 GiB in bf16 at t = 1;
/// vLLM 0.19 logs 44.76 GiB of weights for `Mistral-Small-3.1-24B-Instruct-2503` against the
/// text decoder's 43.91.
fn pixtral_vision(hidden: u64) -> VisionTower {
    const W: u64 = 1024;
    VisionTower {
        sharded: 24 * (4 * W * W + 3 * W * 4096) + W * hidden + hidden * hidden,
        replicated: 3 * 14 * 14 * W + W + 24 * 2 * W + W + 4096 * W,
        shape: (24, 1024),
    }
}

/// Llama 4's vision encoder (34 layers, width 1,408, MLP 5,632, 14-pixel patches of a
/// 336-pixel image, biases everywhere), its pixel-shuffle MLP (5,632 → 4,096 → 4,096) and
/// the projector onto a text width `h` (4,096 × h).
///
/// # Formula
/// ```text
/// sharded    = 34·(4·1408² + 2·1408·5632 + 3·1408 + 5632) + 588·1408 (patches)
///              + 5632·4096 + 4096·4096                            = 849,854,208
/// replicated = 1408 (class) + 577·1408 (positions) + 4·1408 (outer norms)
///              + 34·6·1408 (norms, row-parallel biases) + 4096·h   = 1,106,688 + 4096·h
/// ```
/// Source: Hugging Face `meta-llama/Llama-4-Scout-17B-16E` `config.json` (`vision_config`:
/// hidden 1,408, 34 layers, image 336, patch 14, pixel_shuffle_ratio 0.5,
/// vision_output_dim 4,096; intermediate 5,632), transformers `modeling_llama4.py`
/// (`Llama4VisionModel`, `Llama4VisionPixelShuffleMLP`, `Llama4MultiModalProjector`); SGLang
/// `models/mllama4.py` and vLLM `models/mllama4.py` (column- and row-parallel layers).
///
/// # Example
/// h = 5,120: 849,854,208 + 22,078,208 = 871,932,416 parameters; at t = 4 in bf16,
/// (212,463,552 + 22,078,208)·2 = 469,083,520 B (0.44 GiB) a GPU.
fn llama4_vision(hidden: u64) -> VisionTower {
    const W: u64 = 1408;
    const F: u64 = 5632;
    const L: u64 = 34;
    VisionTower {
        sharded: L * (4 * W * W + 2 * W * F + 3 * W + F) + 588 * W + F * 4096 + 4096 * 4096,
        replicated: W + 577 * W + 4 * W + L * 6 * W + 4096 * hidden,
        shape: (34, 1408),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// By hand, layer by layer (SigLIP's modules in `siglip.py`), and against the Gemma 3
    /// technical report's "Vision Encoder: 417M" (Table 1, rounded to millions).
    #[test]
    fn gemma3_4b_vision_tower() {
        let v = vision_tower("gemma-3-4b", 2560).unwrap();
        let per_layer = 1152 * 3456 + 3456 // qkv
            + 1152 * 1152 + 1152 // out
            + 1152 * 4304 + 4304 // fc1
            + 4304 * 1152 + 1152 // fc2
            + 2 * 2 * 1152; // two layer norms
        let encoder = 588 * 1152 + 1152 + 4096 * 1152 + 27 * per_layer + 2 * 1152;
        let projector = 1152 * 2560 + 1152;
        assert_eq!(v.sharded + v.replicated, encoder + projector);
        assert_eq!(encoder, 416_866_032);
        assert!((416_500_000..417_500_000).contains(&encoder));
        assert!(vision_tower("gemma-3-1b", 1152).is_none());
    }

    /// Pixtral and its projector by hand (`modeling_pixtral.py`, `modeling_mistral3.py`).
    #[test]
    fn pixtral_vision_tower() {
        let v = vision_tower("mistral-small-3.1-24b", 5120).unwrap();
        let layer = 1024 + 4 * 1024 * 1024 + 1024 + 3 * 1024 * 4096;
        let encoder = 3 * 14 * 14 * 1024 + 1024 + 24 * layer;
        let projector = 1024 + 4 * 1024 * 1024 + 1024 * 5120 + 5120 * 5120;
        assert_eq!(v.sharded + v.replicated, encoder + projector);
        assert_eq!(v.sharded + v.replicated, 438_958_080);
        assert!(vision_tower("mistral-small-24b", 5120).is_none());
    }

    /// Llama 4's encoder by hand (`modeling_llama4.py`'s modules) against the formula.
    #[test]
    fn llama4_vision_tower() {
        let v = vision_tower("llama-4-scout", 5120).unwrap();
        let layer =
            4 * (1408 * 1408 + 1408) + (1408 * 5632 + 5632) + (5632 * 1408 + 1408) + 2 * 2 * 1408;
        let encoder = 588 * 1408 + 1408 + 577 * 1408 + 2 * 2 * 1408 + 34 * layer;
        let adapter = 5632 * 4096 + 4096 * 4096;
        assert_eq!(v.sharded + v.replicated, encoder + adapter + 4096 * 5120);
        assert_eq!(v.sharded + v.replicated, 871_932_416);
    }
}
