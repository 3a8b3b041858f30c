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
    /// `vision_config`'s `num_hidden_layers` and `hidden_size` as a reader of the config
    /// sees them (SGLang's `adjust_mem_fraction_for_vlm`; 24 where the field is absent):
    /// the encoder's layers and width, except Qwen's configs, which name the depth `depth`
    /// (read as 24) and, in Qwen2-VL, give the output width as `hidden_size`.
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
    let h = hidden as u64;
    match preset {
        "gemma-3-4b" | "gemma-3-12b" | "gemma-3-27b" => Some(siglip(27, 1152, 4304, 14, 896, h)),
        "llama-4-scout" | "llama-4-maverick" => {
            Some(llama4_vision(34, 1408, 5632, 14, 336, 4096, h))
        }
        "mistral-small-3.1-24b" => Some(pixtral(24, 1024, 4096, 14, 2, h)),
        "qwen2.5-vl-7b" => Some(qwen_vl(QwenVl::V25, 32, 1280, 3420, 14, h)),
        "qwen3-vl-8b" => Some(qwen3_vl(27, 1152, 4304, 16, 2304, 3, h)),
        _ => None,
    }
}

/// A SigLIP encoder of `l` layers of width `w`, MLP `f`, `p`-pixel patches of an
/// `image`-pixel square, and Gemma 3's projector onto `h` (the formula above with these
/// symbols). Source as [`vision_tower`].
pub fn siglip(l: u64, w: u64, f: u64, p: u64, image: u64, h: u64) -> VisionTower {
    let side = image.checked_div(p).unwrap_or(0);
    VisionTower {
        sharded: l * (4 * w * w + 2 * w * f + 3 * w + f),
        replicated: 3 * p * p * w + w + side * side * w + l * 6 * w + 2 * w + w * (h + 1),
        shape: (l as u32, w as u32),
    }
}

/// A Pixtral encoder (Mistral Small 3.1's: 24 layers, width 1,024, gated MLP 4,096, 14-pixel
/// patches, no biases) and its projector (RMS norm, a `merge × merge` patch merger, 2 × 2:
/// 4,096 → 1,024, then 1,024 → h → h).
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
pub fn pixtral(l: u64, w: u64, f: u64, p: u64, merge: u64, h: u64) -> VisionTower {
    VisionTower {
        sharded: l * (4 * w * w + 3 * w * f) + w * h + h * h,
        replicated: 3 * p * p * w + w + l * 2 * w + w + merge * merge * w * w,
        shape: (l as u32, w as u32),
    }
}

/// Llama 4's vision encoder (34 layers, width 1,408, MLP 5,632, 14-pixel patches of a
/// 336-pixel image, biases everywhere), its pixel-shuffle MLP (f → out → out: 5,632 → 4,096 →
/// 4,096) and the projector onto a text width `h` (out × h).
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
pub fn llama4_vision(l: u64, w: u64, f: u64, p: u64, image: u64, out: u64, h: u64) -> VisionTower {
    let side = image.checked_div(p).unwrap_or(0);
    VisionTower {
        sharded: l * (4 * w * w + 2 * w * f + 3 * w + f) + 3 * p * p * w + f * out + out * out,
        replicated: w + (side * side + 1) * w + 4 * w + l * 6 * w + out * h,
        shape: (l as u32, w as u32),
    }
}

/// Which Qwen vision encoder: Qwen2-VL's (LayerNorm, a GELU MLP of `fc1`/`fc2`) or
/// Qwen2.5-VL's (RMSNorm, a gated MLP).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QwenVl {
    /// Qwen2-VL: `embed_dim`, `mlp_ratio` (MLP `f = ratio·w`).
    V2,
    /// Qwen2.5-VL: `hidden_size`, `intermediate_size`.
    V25,
}

/// Qwen2-VL's and Qwen2.5-VL's encoder: `l` layers of width `w`, MLP `f`, `p`-pixel patches
/// over 2 frames (a bias-free Conv3d), biases in every linear layer, and the patch merger
/// (a norm, then 2 × 2 patches: `4w → 4w → out`, `out` the text width `h`).
///
/// # Formula
/// ```text
/// Qwen2.5-VL  sharded    = l·(4w² + 3wf + 3w + 2f) + 16w² + 4w + 4w·out
///             replicated = 3·2·p²·w + l·4w (norms, row-parallel biases) + w + out
/// Qwen2-VL    sharded    = l·(4w² + 2wf + 3w + f) + 16w² + 4w + 4w·out
///             replicated = 3·2·p²·w + l·6w (LayerNorms, row-parallel biases) + 2w + out
/// ```
/// Source: Hugging Face `Qwen/Qwen2.5-VL-7B-Instruct` and `Qwen/Qwen2-VL-7B-Instruct`
/// `config.json` (`vision_config`: depth 32, width 1,280, intermediate 3,420 / `mlp_ratio` 4,
/// patch 14, `temporal_patch_size` 2, `spatial_merge_size` 2, out 3,584); vLLM
/// `models/qwen2_5_vl.py` and `qwen2_vl.py` (QKV column-parallel with bias, `proj` and
/// `down_proj`/`fc2` row-parallel, merger `mlp.0` column- and `mlp.2` row-parallel); the
/// checkpoints' totals (8,292,166,656 and 8,291,375,616 parameters; Qwen2.5-VL-3B
/// 3,754,622,976).
///
/// # Example
/// Qwen2.5-VL-7B (h = 3,584): 630,306,560 + 44,569,600 sharded, 1,505,280 + 163,840 + 4,864
/// replicated = 676,550,144 parameters; with Qwen2.5-7B's 7,615,616,512 the checkpoint's
/// 8,292,166,656.
pub fn qwen_vl(kind: QwenVl, l: u64, w: u64, f: u64, p: u64, out: u64) -> VisionTower {
    let merger = 16 * w * w + 4 * w + 4 * w * out;
    let patches = 3 * 2 * p * p * w;
    let (layer, norms, ln_q) = match kind {
        QwenVl::V25 => (4 * w * w + 3 * w * f + 3 * w + 2 * f, 4 * w, w),
        QwenVl::V2 => (4 * w * w + 2 * w * f + 3 * w + f, 6 * w, 2 * w),
    };
    // What `vision_config.num_hidden_layers` / `hidden_size` read as (see `shape`).
    let read_width = match kind {
        QwenVl::V25 => w,
        QwenVl::V2 => out,
    };
    VisionTower {
        sharded: l * layer + merger,
        replicated: patches + l * norms + ln_q + out,
        shape: (24, read_width as u32),
    }
}

/// Qwen3-VL's encoder (SigLIP 2 shaped: `l` layers of width `w`, a GELU MLP `f`, biases
/// everywhere, LayerNorms), `p`-pixel patches over 2 frames (a Conv3d with bias), `pos`
/// learned positions, the patch merger (a norm of `w`, then `4w → 4w → out`) and `ds`
/// DeepStack mergers (the same, normed after the 2 × 2 shuffle: a norm of `4w`).
///
/// # Formula
/// ```text
/// sharded    = l·(4w² + 2wf + 3w + f) + (1 + ds)·(16w² + 4w + 4w·out)
/// replicated = 3·2·p²·w + w + pos·w + l·6w + 2w + ds·8w + (1 + ds)·out
/// ```
/// Source: Hugging Face `Qwen/Qwen3-VL-8B-Instruct` `config.json` (`vision_config`: depth
/// 27, hidden 1,152, intermediate 4,304, patch 16, 2,304 position embeddings,
/// `deepstack_visual_indexes` [8, 16, 24], out 4,096); transformers `modeling_qwen3_vl.py`
/// (`Qwen3VLVisionPatchMerger`, `use_postshuffle_norm`); vLLM `models/qwen3_vl.py` (QKV and
/// `linear_fc1` column-, `proj` and `linear_fc2` row-parallel); the checkpoint's
/// 8,767,123,696 parameters.
///
/// # Example
/// Qwen3-VL-8B (h = 4,096): 411,466,608 (27 layers) + 40,119,040 (merger) + 120,377,856
/// (3 DeepStack mergers) + 1,770,624 (patches) + 2,654,208 (positions) = 576,388,336; with
/// Qwen3 8B's 8,190,735,360 the published 8,767,123,696.
pub fn qwen3_vl(l: u64, w: u64, f: u64, p: u64, pos: u64, ds: u64, out: u64) -> VisionTower {
    let merger = 16 * w * w + 4 * w + 4 * w * out;
    VisionTower {
        sharded: l * (4 * w * w + 2 * w * f + 3 * w + f) + (1 + ds) * merger,
        replicated: 3 * 2 * p * p * w
            + w
            + pos * w
            + l * 6 * w
            + 2 * w
            + ds * 8 * w
            + (1 + ds) * out,
        // No `num_hidden_layers` in the config (see `shape`).
        shape: (24, w as u32),
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

    /// The published checkpoints' totals less their text decoders (Qwen2.5-7B 7,615,616,512;
    /// Qwen2.5-3B 3,085,938,688, tied): Qwen2.5-VL-7B 8,292,166,656, Qwen2.5-VL-3B
    /// 3,754,622,976, Qwen2-VL-7B 8,291,375,616.
    #[test]
    fn qwen_vl_towers() {
        let all = |t: VisionTower| t.sharded + t.replicated;
        assert_eq!(
            all(qwen_vl(QwenVl::V25, 32, 1280, 3420, 14, 3584)),
            8_292_166_656 - 7_615_616_512
        );
        assert_eq!(
            all(qwen_vl(QwenVl::V25, 32, 1280, 3420, 14, 2048)),
            3_754_622_976 - 3_085_938_688
        );
        assert_eq!(
            all(qwen_vl(QwenVl::V2, 32, 1280, 5120, 14, 3584)),
            8_291_375_616 - 7_615_616_512
        );
        assert_eq!(
            vision_tower("qwen2.5-vl-7b", 3584).map(all),
            Some(676_550_144)
        );
    }

    /// Qwen3-VL-8B: the checkpoint's 8,767,123,696 less Qwen3 8B's 8,190,735,360.
    #[test]
    fn qwen3_vl_tower() {
        let t = qwen3_vl(27, 1152, 4304, 16, 2304, 3, 4096);
        assert_eq!(t.sharded + t.replicated, 8_767_123_696 - 8_190_735_360);
    }
}
