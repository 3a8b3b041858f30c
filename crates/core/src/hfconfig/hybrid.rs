//! The exact counter's toolkit: typed field readers with each config class's defaults,
//! a parameter [`Tally`], the Mamba / Mamba-2 / attention / MLP modules, block kinds, and
//! the [`LayerMix`] note — shared by the state-space and hybrid families (`ssm`) and the
//! new decoder families (`decoders`), which import it.
//!
//! memfit's [`crate::model::Arch`] is `L` equal transformer blocks, so these imports carry
//! the exact count as an explicit `params` (and `largest_layer`), the transformer keys of
//! their width (for the parts the memory model reads), the layer mix as query keys
//! (`contract::query::mix_keys`), and a note saying what is not modelled yet.
//!
//! Each family reads its own field names, with the defaults of its `transformers` config
//! class (transformers 5.24) for fields a config leaves out; a field of the wrong type is
//! named in the error, never defaulted.

use super::*;
use crate::model::{LayerMix, Ssm};

/// The largest integer a shape field may hold (2²⁴): every product below stays far inside
/// `u128`, and no published model comes near it.
pub(crate) const FIELD_MAX: u64 = 1 << 24;

/// An integer field: absent or null → `None`; a non-negative integer (or an integral
/// float) → its value; anything else, or a value above [`FIELD_MAX`] → an error naming it.
pub(crate) fn opt_int(v: &Value, k: &str) -> Result<Option<u64>, String> {
    let x = match v.get(k) {
        None | Some(Value::Null) => return Ok(None),
        Some(x) => x,
    };
    let n = x
        .as_u64()
        .or_else(|| {
            x.as_f64()
                .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f <= FIELD_MAX as f64)
                .map(|f| f as u64)
        })
        .ok_or_else(|| format!("config.json: `{k}` must be a non-negative integer (got {x})"))?;
    if n > FIELD_MAX {
        return Err(format!(
            "config.json: `{k}` = {n} is out of range (at most {FIELD_MAX})"
        ));
    }
    Ok(Some(n))
}

/// An integer field with its config class's default.
pub(crate) fn int_or(v: &Value, k: &str, default: u64) -> Result<u64, String> {
    Ok(opt_int(v, k)?.unwrap_or(default))
}

/// A required integer field.
pub(crate) fn int_need(v: &Value, k: &str) -> Result<u64, String> {
    opt_int(v, k)?.ok_or_else(|| format!("config.json lacks `{k}`"))
}

/// The first of several spellings present (`hybrid` configs rename fields between the
/// Hub's original code and `transformers`), else the default.
pub(crate) fn int_alias(v: &Value, ks: &[&str], default: u64) -> Result<u64, String> {
    for k in ks {
        if let Some(n) = opt_int(v, k)? {
            return Ok(n);
        }
    }
    Ok(default)
}

/// A boolean field: absent or null → the default; not a boolean → an error naming it.
pub(crate) fn bool_or(v: &Value, k: &str, default: bool) -> Result<bool, String> {
    match v.get(k) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Bool(b)) => Ok(*b),
        Some(x) => Err(format!(
            "config.json: `{k}` must be true or false (got {x})"
        )),
    }
}

/// A float field: absent or null → the default.
pub(crate) fn float_or(v: &Value, k: &str, default: f64) -> Result<f64, String> {
    match v.get(k) {
        None | Some(Value::Null) => Ok(default),
        Some(x) => x
            .as_f64()
            .filter(|f| f.is_finite() && *f >= 0.0)
            .ok_or_else(|| format!("config.json: `{k}` must be a non-negative number (got {x})")),
    }
}

/// At least 1 (a width or count that must not be zero), naming the field.
pub(crate) fn pos(k: &str, n: u64) -> Result<u64, String> {
    if n == 0 {
        Err(format!("config.json: `{k}` must be at least 1"))
    } else {
        Ok(n)
    }
}

/// The most blocks a config may have (2¹⁶; memfit's `layers` key stops at 1,024): the
/// per-block lists stay small.
const DEPTH_MAX: u64 = 1 << 16;

/// A block count: at least 1 and at most [`DEPTH_MAX`], naming the field.
pub(crate) fn depth(k: &str, n: u64) -> Result<u64, String> {
    if n > DEPTH_MAX {
        return Err(format!(
            "config.json: `{k}` = {n} blocks is out of range (at most {DEPTH_MAX})"
        ));
    }
    pos(k, n)
}

/// What an exact import counted.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    /// All parameters (tied weights once), `Ψ`.
    pub total: u128,
    /// DeepSpeed's largest layer: the biggest module's own parameters.
    pub largest: u128,
}

impl Tally {
    /// `n` copies of a module of `p` parameters (a weight matrix with its bias).
    pub(crate) fn module(&mut self, p: u128, n: u128) {
        self.total += p * n;
        if n > 0 {
            self.largest = self.largest.max(p);
        }
    }

    /// `n` copies of vectors (norms, biases of fused kernels, `A_log`, `D`): no module
    /// of their own that could be the largest.
    pub(crate) fn vector(&mut self, p: u128, n: u128) {
        self.total += p * n;
    }
}

/// A linear map `inp → out` with an optional bias: `inp·out (+ out)`.
pub(crate) fn linear(inp: u64, out: u64, bias: bool) -> u128 {
    inp as u128 * out as u128 + if bias { out as u128 } else { 0 }
}

/// The Mamba (selective scan) mixer of `transformers`' `MambaMixer`, `FalconMambaMixer` and
/// `JambaMambaMixer`.
///
/// # Formula
/// ```text
/// in_proj   h → 2·d_i          h·2d_i (+ 2d_i bias)
/// conv1d    depthwise, k taps   d_i·k (+ d_i bias)
/// x_proj    d_i → r + 2N        d_i·(r + 2N)
/// dt_proj   r → d_i, bias       r·d_i + d_i
/// A_log, D                      d_i·N + d_i
/// out_proj  d_i → h             d_i·h (+ h bias)
/// Jamba: RMSNorms of dt, B, C   r + 2N
/// ```
/// `h` width, `d_i` inner width (`intermediate_size`, else `expand·h`), `N` state size, `r` time-step rank
/// (`"auto"` = ⌈h/16⌉), `k` convolution kernel (all counts of channels or taps).
/// Source: transformers 5.24 `models/mamba/modeling_mamba.py` (`MambaMixer.__init__`),
/// `falcon_mamba/modeling_falcon_mamba.py`, `jamba/modeling_jamba.py`.
/// Example: Mamba-130M (h 768, d_i 1,536, N 16, r 48, k 4, conv bias, no proj bias):
/// 2,359,296 + 7,680 + 122,880 + 75,264 + 26,112 + 1,179,648 = 3,770,880 per layer.
#[derive(Clone, Copy)]
pub(crate) struct Mamba1 {
    pub h: u64,
    pub d_inner: u64,
    pub d_state: u64,
    pub dt_rank: u64,
    pub conv_kernel: u64,
    pub conv_bias: bool,
    pub proj_bias: bool,
    /// Jamba's RMSNorms of dt, B and C.
    pub bcdt_norms: bool,
}

impl Mamba1 {
    pub(crate) fn add(&self, t: &mut Tally, n: u128) {
        let (h, di, s, r, k) = (
            self.h,
            self.d_inner,
            self.d_state,
            self.dt_rank,
            self.conv_kernel,
        );
        t.module(linear(h, 2 * di, self.proj_bias), n);
        t.module(
            di as u128 * k as u128 + if self.conv_bias { di as u128 } else { 0 },
            n,
        );
        t.module(linear(di, r + 2 * s, false), n);
        t.module(linear(r, di, true), n);
        t.vector(di as u128 * s as u128 + di as u128, n);
        t.module(linear(di, h, self.proj_bias), n);
        if self.bcdt_norms {
            t.vector((r + 2 * s) as u128, n);
        }
    }

    pub(crate) fn shape(&self) -> Ssm {
        Ssm {
            version: 1,
            d_inner: self.d_inner,
            d_state: self.d_state,
            groups: 1,
            heads: 0,
            conv_kernel: self.conv_kernel,
            chunk: 0,
        }
    }
}

/// The Mamba-2 (SSD) mixer of `transformers`' `Mamba2Mixer` and of the hybrids built on it
/// (`BambaMixer`, `NemotronHMamba2Mixer`, `GraniteMoeHybridMambaLayer`, `FalconH1Mixer`).
///
/// # Formula
/// ```text
/// c = d_i + 2·G·N                        convolved channels (x, B, C)
/// in_proj   h → d_i + c + H              h·(d_i + c + H) (+ d_i + c + H bias)
/// conv1d    depthwise, k taps            c·k (+ c bias)
/// dt_bias, A_log, D                      3·H
/// norm      gated RMSNorm over d_i       d_i   (Falcon-H1: only with mamba_rms_norm)
/// out_proj  d_i → h                      d_i·h (+ h bias)
/// ```
/// `h` width, `d_i` inner width (Mamba-2, Bamba, Granite: `expand·h`; Nemotron-H:
/// `heads·head_dim`; Falcon-H1: `mamba_d_ssm`), `H` SSM heads, `G` groups, `N` state
/// size, `k` kernel. Source: transformers 5.24 `models/mamba2/modeling_mamba2.py`
/// (`Mamba2Mixer.__init__`) and the hybrids' copies.
/// Example: Mamba-Codestral-7B (h 4,096, d_i 8,192, H 128, G 8, N 128, k 4, conv bias):
/// c = 10,240; 76,021,760 + 51,200 + 384 + 8,192 + 33,554,432 = 109,635,968 per layer.
#[derive(Clone, Copy)]
pub(crate) struct Mamba2 {
    pub h: u64,
    pub d_inner: u64,
    pub heads: u64,
    pub groups: u64,
    pub d_state: u64,
    pub conv_kernel: u64,
    /// The chunk length `l` (`chunk_size`, `mamba_chunk_size`).
    pub chunk: u64,
    pub conv_bias: bool,
    pub in_bias: bool,
    pub out_bias: bool,
    pub gated_norm: bool,
}

impl Mamba2 {
    pub(crate) fn add(&self, t: &mut Tally, n: u128) {
        let c = self.d_inner + 2 * self.groups * self.d_state;
        let proj = self.d_inner + c + self.heads;
        t.module(linear(self.h, proj, self.in_bias), n);
        t.module(
            c as u128 * self.conv_kernel as u128 + if self.conv_bias { c as u128 } else { 0 },
            n,
        );
        t.vector(3 * self.heads as u128, n);
        if self.gated_norm {
            t.vector(self.d_inner as u128, n);
        }
        t.module(linear(self.d_inner, self.h, self.out_bias), n);
    }

    pub(crate) fn shape(&self) -> Ssm {
        Ssm {
            version: 2,
            d_inner: self.d_inner,
            d_state: self.d_state,
            groups: self.groups,
            heads: self.heads,
            conv_kernel: self.conv_kernel,
            chunk: self.chunk,
        }
    }
}

/// Softmax attention: q, k, v, o with optional biases and per-head q/k norms.
///
/// # Formula
/// ```text
/// h·a·d + 2·h·a_kv·d + a·d·h  (+ (a + 2a_kv)·d q/k/v bias) (+ h o bias)
///   (+ 2·d per-head q/k norms | + (a + a_kv)·d full-width q/k norms)
/// ```
/// `h` width, `a` heads, `a_kv` KV heads, `d` head width. Source: transformers 5.24
/// `LlamaAttention` and its copies (`BambaAttention`, `JambaAttention`, ...).
/// Example: Jamba (h 4,096, a 32, a_kv 8, d 128): 16,777,216 + 8,388,608 + 16,777,216 =
/// 41,943,040.
#[derive(Clone, Copy)]
pub(crate) struct Attn {
    pub h: u64,
    pub heads: u64,
    pub kv_heads: u64,
    pub head_dim: u64,
    pub qkv_bias: bool,
    pub o_bias: bool,
    /// Per-head q and k RMSNorms (`d` each).
    pub qk_norm: bool,
    /// OLMo 2/3 q and k RMSNorms over the whole projections (`a·d` and `a_kv·d`).
    pub qk_norm_full: bool,
}

impl Attn {
    /// Reads the standard attention fields: `num_attention_heads`, `num_key_value_heads`
    /// (default: the heads), `head_dim` (default: `h / heads`, as `getattr(config,
    /// "head_dim", ...)` does).
    pub(crate) fn read(v: &Value, h: u64, heads_default: Option<u64>) -> Result<Attn, String> {
        let heads = match heads_default {
            Some(d) => int_or(v, "num_attention_heads", d)?,
            None => int_need(v, "num_attention_heads")?,
        };
        let heads = pos("num_attention_heads", heads)?;
        let kv_heads = pos(
            "num_key_value_heads",
            int_or(v, "num_key_value_heads", heads)?,
        )?;
        let head_dim = pos("head_dim", int_or(v, "head_dim", h / heads)?)?;
        Ok(Attn {
            h,
            heads,
            kv_heads,
            head_dim,
            qkv_bias: false,
            o_bias: false,
            qk_norm: false,
            qk_norm_full: false,
        })
    }

    pub(crate) fn add(&self, t: &mut Tally, n: u128) {
        let (h, a, kv, d) = (self.h, self.heads, self.kv_heads, self.head_dim);
        t.module(linear(h, a * d, self.qkv_bias), n);
        t.module(linear(h, kv * d, self.qkv_bias), 2 * n);
        t.module(linear(a * d, h, self.o_bias), n);
        if self.qk_norm {
            t.vector(2 * d as u128, n);
        }
        if self.qk_norm_full {
            t.vector((a + kv) as u128 * d as u128, n);
        }
    }
}

/// `n` feed-forwards of width `f`: gated (gate, up, down: `3·h·f`) or plain (up, down:
/// `2·h·f`), with optional biases (`2f + h` or `f + h`). Each matrix is a largest-layer
/// candidate (a fused gate/up module, GLM-4's, is counted as its two halves).
pub(crate) fn mlp(t: &mut Tally, h: u64, f: u64, gated: bool, bias: bool, n: u128) {
    let up = linear(h, f, bias);
    t.module(up, n * if gated { 2 } else { 1 });
    t.module(linear(f, h, bias), n);
}

/// `E` experts of width `f` (gated or plain, no biases) and a bias-free router `h → E`:
/// `E·m·h·f + h·E`. Stored as 3-D tensors in transformers 5; the largest-layer candidate is
/// one expert's matrix, as memfit counts the MoE families it already reads.
pub(crate) fn experts(t: &mut Tally, h: u64, e: u64, f: u64, gated: bool, n: u128) {
    mlp(t, h, f, gated, false, n * e as u128);
    t.module(linear(h, e, false), n);
}

/// The keys every exact import sets on the `llama-2-7b` base: width, depth, vocabulary,
/// the attention shape (or one head `h` wide where there is none), the feed-forward width,
/// the tying.
#[allow(clippy::too_many_arguments)]
pub(crate) fn transformer_keys(
    a: &mut Acc,
    h: u64,
    layers: u64,
    vocab: u64,
    attn: Option<Attn>,
    ffn: u64,
    tied: bool,
) {
    a.put("hidden", h);
    a.put("layers", layers);
    a.put("vocab", vocab);
    match attn {
        Some(at) => {
            a.put("heads", at.heads);
            a.put("kv_heads", at.kv_heads);
            a.put("head_dim", at.head_dim);
        }
        None => {
            a.put("heads", 1);
            a.put("kv_heads", 1);
            a.put("head_dim", h);
        }
    }
    // A hybrid without an MLP (`ffn = 0` in its config.json) gets the key's least width: its `Exact` count, not this shape, is its Ψ.
    a.put("ffn", ffn.max(1));
    a.keys.push(("tied", (tied as u8).to_string()));
}

/// What a family import hands back to [`parse`].
pub(crate) struct Exact {
    pub tally: Tally,
    pub mix: LayerMix,
}

/// Embedding, final norm and LM head (`V·h + n_f + [V·h untied]`).
pub(crate) fn ends(t: &mut Tally, vocab: u64, h: u64, final_norm: u64, tied: bool) {
    t.module(linear(vocab, h, false), 1);
    t.vector(final_norm as u128, 1);
    if !tied {
        t.module(linear(h, vocab, false), 1);
    }
}

/// The note every exact import of a state-space or hybrid model carries.
pub(crate) fn ssm_note(model_type: &str, m: &LayerMix) -> String {
    let mut parts = Vec::new();
    if m.mamba > 0 {
        let kind = match m.ssm.map(|s| s.version) {
            Some(1) => "Mamba",
            _ => "Mamba-2",
        };
        parts.push(format!("{} {kind}", m.mamba));
    }
    if m.conv > 0 {
        parts.push(format!("{} short-convolution", m.conv));
    }
    if m.linear_attention > 0 {
        parts.push(format!("{} linear-attention", m.linear_attention));
    }
    format!(
        "`{model_type}` is a state-space / hybrid model ({} of its {} blocks; {} with softmax attention): its parameter count is exact (`params`, from transformers' modules) and its blocks are carried by `attn_layers`, `mamba_layers`, `conv_layers`, `linear_layers`, `ssm_*` and `lin_*`, so inference counts the KV cache of the attention blocks only and the Mamba / convolution / linear-attention blocks' state, training their saved activations by `ssm_kernels`, and serving vLLM V1's hybrid pool and llama.cpp's recurrent state; memfit does not model yet SGLang's, TensorRT-LLM's or vLLM V0's state caches, nor the saved activations of MiniMax's lightning attention (it trains as attention)",
        parts.join(", "),
        m.layers,
        m.attention,
    )
}

/// The block kinds of a layer list, spelled as the Hub's original code and as
/// `transformers` write them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Softmax attention (`attention`, `full_attention`, Nemotron-H `*`).
    Attention,
    /// A Mamba / Mamba-2 mixer (`mamba`, `linear_attention` in the hybrids' lists, `M`).
    Mamba,
    /// Nemotron-H's dense MLP block (`mlp`, `-`).
    Mlp,
    /// Nemotron-H's MoE block (`moe`, `E`).
    Moe,
    /// LFM2's short convolution (`conv`).
    Conv,
}

/// A config's list of block kinds (`layer_types`, `layers_block_type`), each spelling
/// mapped by `spell`; an unknown spelling is an error naming it.
pub(crate) fn kinds(
    v: &Value,
    keys: &[&str],
    spell: fn(&str) -> Option<Kind>,
) -> Result<Option<Vec<Kind>>, String> {
    for k in keys {
        match v.get(*k) {
            None | Some(Value::Null) => continue,
            Some(Value::Array(xs)) => {
                return xs
                    .iter()
                    .map(|x| {
                        x.as_str().and_then(spell).ok_or_else(|| {
                            format!("config.json: `{k}` holds {x}, not a block kind memfit knows")
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .map(Some);
            }
            Some(x) => return Err(format!("config.json: `{k}` must be a list (got {x})")),
        }
    }
    Ok(None)
}

/// Counts of each kind.
pub(crate) fn count(ks: &[Kind], k: Kind) -> u64 {
    ks.iter().filter(|x| **x == k).count() as u64
}

/// The MoE keys of a hybrid's transformer approximation: its experts, their width, and
/// its dense-MLP blocks as `first_dense` (the active count is then that of the
/// transformer approximation; the total is the exact `params`).
pub(crate) fn moe_keys(a: &mut Acc, e: u64, top_k: u64, f_e: u64, layers: u64, moe_layers: u64) {
    if e > 1 && moe_layers > 0 && f_e > 0 {
        a.put("experts", e);
        a.put("top_k", top_k.clamp(1, e));
        a.put("moe_ffn", f_e);
        a.put("first_dense", layers - moe_layers);
    }
}

/// A shared expert `f_s` wide beside routed experts `f_e` wide, as `shared_experts = f_s/f_e`
/// (memfit counts shared experts in units of one routed expert's width; the activations'
/// MoE term then saves the shared MLP's intermediates). Left out when `f_s` is not a
/// multiple of `f_e` (the parameter count stays exact: the import carries `params`).
/// Qwen3-Next's `shared_expert` and Granite-4.0-H's `shared_mlp` run on every token of every
/// MoE block (transformers 5.24 `Qwen3NextSparseMoeBlock.forward`,
/// `GraniteMoeHybridDecoderLayer.forward`). Example: Qwen3-Next-80B-A3B f_s = f_e = 512: 1.
pub(crate) fn shared_keys(a: &mut Acc, f_s: u64, f_e: u64, moe_layers: u64) {
    if moe_layers > 0 && f_e > 0 && f_s > 0 && f_s.is_multiple_of(f_e) {
        a.put("shared_experts", f_s / f_e);
    }
}

/// `mamba` / `linear_attention` → Mamba, `attention` / `full_attention` → attention.
pub(crate) fn spell_hybrid(s: &str) -> Option<Kind> {
    match s {
        "mamba" | "linear_attention" | "mamba2" => Some(Kind::Mamba),
        "attention" | "full_attention" => Some(Kind::Attention),
        _ => None,
    }
}
