//! What one token costs in a serving engine's KV cache, per GPU.

use crate::model::Arch;
use crate::quant::gguf::{self, GgmlType};
use crate::scenario::{div_at_least_one, Count, Dtype, Precision};

/// The KV cache's element format: bytes per `block` elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KvFormat {
    /// Spelling shown in the ledger.
    pub name: &'static str,
    /// Elements per block.
    pub block: u64,
    /// Bytes per block.
    pub bytes: u64,
}

impl KvFormat {
    /// The cache dtype of `kv_dtype` under precision `p` (`auto` = the compute dtype;
    /// ggml's block types for llama.cpp's `type_k`/`type_v`).
    pub fn of(d: Dtype, p: Precision) -> KvFormat {
        let g = |t: GgmlType| KvFormat {
            name: t.name,
            block: t.block,
            bytes: t.bytes,
        };
        match d {
            Dtype::Q8_0 => g(gguf::Q8_0),
            Dtype::Q4_0 => g(gguf::Q4_0),
            Dtype::Q4_1 => g(gguf::Q4_1),
            Dtype::Q5_0 => g(gguf::Q5_0),
            Dtype::Q5_1 => g(gguf::Q5_1),
            Dtype::Iq4Nl => g(gguf::IQ4_NL),
            _ => {
                let bits = d.bits(p);
                if bits >= 8 {
                    KvFormat {
                        name: d.as_str(),
                        block: 1,
                        bytes: bits / 8,
                    }
                } else {
                    KvFormat {
                        name: d.as_str(),
                        block: 2,
                        bytes: 1,
                    }
                }
            }
        }
    }
    /// Bytes of a row of `n` elements (`ggml_row_size`; `⌈n·bits/8⌉` for the rest).
    pub fn row(self, n: u64) -> u64 {
        n.div_ceil(self.block) * self.bytes
    }
}

/// One attention layer's cache row per token on one rank: K and V of the rank's KV heads
/// (`max(1, a_kv/t)`: a KV head is replicated when TP exceeds the KV heads), or MLA's
/// one latent (`r_kv + d_rope`, replicated over TP).
///
/// # Formula
/// ```text
/// standard:  2 · row(max(1, ⌊a_kv/t⌋)·d)
/// MLA:           row(r_kv + d_rope)
/// ```
/// Source: vLLM `ModelConfig.get_num_kv_heads` (`max(1, total_num_kv_heads // tp)`),
/// `FullAttentionSpec.page_size_bytes` (`2 · block_size · num_kv_heads · head_size ·
/// dtype_size`) and `MLAAttentionSpec` (one latent); llama.cpp `llama_kv_cache`
/// (`ggml_row_size(type_k, n_embd_k_gqa)` + the same for V).
///
/// # Example
/// Llama 3 8B (a_kv = 8, d = 128), bf16, t = 1: 2·8·128·2 = 4,096 B per layer and token;
/// t = 16: 2·1·128·2 = 512 B (each rank keeps one replicated head).
pub fn layer_row(arch: &Arch, f: KvFormat, t: Count) -> u64 {
    match arch.mla {
        Some(m) => f.row((m.kv_rank + m.rope_dim) as u64),
        None => {
            // More TP ranks than KV heads replicate them: one head a rank.
            let heads = div_at_least_one(arch.kv_heads.get(), t).get() as u64;
            2 * f.row(heads * arch.head_dim.get() as u64)
        }
    }
}

/// Layers of the most loaded pipeline stage that keep every token (`full`) and those
/// that keep a sliding window (`windowed`).
pub fn stage_layers(arch: &Arch, pp: Count) -> (u64, u64) {
    let (full, windowed) = crate::infer::kv_layers(arch, pp);
    (full as u64, windowed as u64)
}
