//! The model presets: one data table, `presets.json`, in display order (the order the
//! page's model list and `memfit --help` show). Each row is a preset's id, display name,
//! published parameter count and its tolerance, source, and the full [`Arch`] in the
//! field names of its serde form; the table is parsed once, on first use.
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

use std::sync::OnceLock;

use serde::Deserialize;

use super::{Arch, Preset};

/// One row of `presets.json`.
#[derive(Deserialize)]
struct Row {
    id: String,
    name: String,
    published_params: u64,
    published_rel_tol: f64,
    source: String,
    arch: Arch,
}

/// The table, as shipped.
const TABLE: &str = include_str!("presets.json");

/// Every model preset, in display order (the table's order).
///
/// The table is part of the crate and checked by its tests (every row parses, ids are
/// unique, counts match `Arch::params`), so a row that does not parse is a build defect;
/// it is reported by an empty list here rather than a panic on the page.
pub fn presets() -> &'static [Preset] {
    static P: OnceLock<Vec<Preset>> = OnceLock::new();
    P.get_or_init(|| parse(TABLE).unwrap_or_default())
}

/// The presets of a table in `presets.json`'s form. Strings live as long as the
/// program (the table is read once).
fn parse(table: &str) -> Result<Vec<Preset>, serde_json::Error> {
    let rows: Vec<Row> = serde_json::from_str(table)?;
    let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
    Ok(rows
        .into_iter()
        .map(|r| Preset {
            id: leak(r.id),
            name: leak(r.name),
            arch: r.arch,
            published_params: r.published_params,
            published_rel_tol: r.published_rel_tol,
            source: leak(r.source),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    /// Every row parses, ids are unique and the list starts and ends where the page's
    /// model list does.
    #[test]
    fn table_parses_in_display_order() {
        let all = super::parse(super::TABLE).expect("presets.json parses");
        assert_eq!(all.len(), 72);
        let mut ids: Vec<&str> = all.iter().map(|p| p.id).collect();
        assert_eq!((ids[0], ids[ids.len() - 1]), ("gpt2", "falcon-40b"));
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 72, "duplicate preset id");
    }
}
