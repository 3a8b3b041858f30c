//! State-space and hybrid families (Mamba, Mamba-2, Falcon-Mamba, Jamba, Bamba,
//! Nemotron-H, Falcon-H1, Granite-4.0-H, LFM2): their parameters counted exactly from
//! config.json, module by module as `transformers` builds them, and their blocks described
//! by a [`LayerMix`].
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
const FIELD_MAX: u64 = 1 << 24;

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
    fn add(&self, t: &mut Tally, n: u128) {
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

    fn shape(&self) -> Ssm {
        Ssm {
            version: 1,
            d_inner: self.d_inner,
            d_state: self.d_state,
            groups: 1,
            heads: 0,
            conv_kernel: self.conv_kernel,
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
    pub conv_bias: bool,
    pub in_bias: bool,
    pub out_bias: bool,
    pub gated_norm: bool,
}

impl Mamba2 {
    fn add(&self, t: &mut Tally, n: u128) {
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

    fn shape(&self) -> Ssm {
        Ssm {
            version: 2,
            d_inner: self.d_inner,
            d_state: self.d_state,
            groups: self.groups,
            heads: self.heads,
            conv_kernel: self.conv_kernel,
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
        "`{model_type}` is a state-space / hybrid model ({} of its {} blocks; {} with softmax attention): its parameter count is exact (`params`, from transformers' modules) and its blocks are carried by `attn_layers`, `mamba_layers`, `conv_layers`, `linear_layers`, `ssm_*` and `lin_*`, so inference counts the KV cache of the attention blocks only and the Mamba / convolution blocks' conv and SSM state, training their saved activations by `ssm_kernels`, and serving vLLM V1's hybrid pool and llama.cpp's recurrent state; memfit does not model yet SGLang's, TensorRT-LLM's or vLLM V0's state caches, nor linear attention other than gated DeltaNet (MiniMax's lightning attention)",
        parts.join(", "),
        m.layers,
        m.attention,
    )
}

/// Mamba and Falcon-Mamba (`MambaForCausalLM`, `FalconMambaForCausalLM`): `L` blocks of
/// one RMSNorm and a [`Mamba1`] mixer, a final norm, the embedding (tied by default).
///
/// # Formula
/// ```text
/// Ψ = V·h + L·(h + mixer) + h [+ V·h untied]
/// ```
/// Example: state-spaces/mamba-130m-hf (V 50,280, h 768, L 24, tied):
/// 38,615,040 + 24·(768 + 3,770,880) + 768 = 129,135,360.
pub(crate) fn mamba(v: &Value, a: &mut Acc) -> Result<Exact, String> {
    let h = pos("hidden_size", int_need(v, "hidden_size")?)?;
    let layers = depth("num_hidden_layers", int_need(v, "num_hidden_layers")?)?;
    let vocab = pos("vocab_size", int_need(v, "vocab_size")?)?;
    // MambaConfig sets intermediate_size = int(expand · hidden_size) in __post_init__, and
    // a config's own `intermediate_size` then overrides it (tiiuae/falcon-mamba-7b: expand
    // 16, intermediate_size 8,192, the checkpoint's).
    let d_inner = match opt_int(v, "intermediate_size")? {
        Some(d) => pos("intermediate_size", d)?,
        None => pos("expand", int_or(v, "expand", 2)? * h)?,
    };
    let dt_rank = match v.get("time_step_rank") {
        Some(Value::String(s)) if s == "auto" => h.div_ceil(16),
        _ => int_or(v, "time_step_rank", h.div_ceil(16))?,
    };
    let m = Mamba1 {
        h,
        d_inner,
        d_state: int_or(v, "state_size", 16)?,
        dt_rank,
        conv_kernel: int_or(v, "conv_kernel", 4)?,
        conv_bias: bool_or(v, "use_conv_bias", true)?,
        proj_bias: bool_or(v, "use_bias", false)?,
        bcdt_norms: false,
    };
    let tied = bool_or(v, "tie_word_embeddings", true)?;
    let mut t = Tally::default();
    let n = layers as u128;
    t.vector(h as u128, n);
    m.add(&mut t, n);
    ends(&mut t, vocab, h, h, tied);
    transformer_keys(a, h, layers, vocab, None, d_inner, tied);
    Ok(Exact {
        tally: t,
        mix: LayerMix {
            layers,
            mamba: layers,
            ssm: Some(m.shape()),
            ..LayerMix::default()
        },
    })
}

/// Mamba-2 (`Mamba2ForCausalLM`: Mamba-Codestral, mamba2-*-hf): `L` blocks of one RMSNorm
/// and a [`Mamba2`] mixer (`d_i = expand·h`, gated norm), a final norm, untied by default.
///
/// # Formula
/// ```text
/// Ψ = V·h + L·(h + mixer) + h [+ V·h untied]
/// ```
/// Example: mistralai/Mamba-Codestral-7B-v0.1 (V 32,768, h 4,096, L 64, untied):
/// 2·134,217,728 + 64·(4,096 + 109,635,968) + 4,096 = 7,285,403,648.
pub(crate) fn mamba2(v: &Value, a: &mut Acc) -> Result<Exact, String> {
    let h = pos("hidden_size", int_need(v, "hidden_size")?)?;
    let layers = depth("num_hidden_layers", int_need(v, "num_hidden_layers")?)?;
    let vocab = pos("vocab_size", int_need(v, "vocab_size")?)?;
    let d_inner = pos("expand", int_or(v, "expand", 2)? * h)?;
    let m = Mamba2 {
        h,
        d_inner,
        heads: int_or(v, "num_heads", 128)?,
        groups: int_or(v, "n_groups", 8)?,
        d_state: int_or(v, "state_size", 128)?,
        conv_kernel: int_or(v, "conv_kernel", 4)?,
        conv_bias: bool_or(v, "use_conv_bias", true)?,
        in_bias: bool_or(v, "use_bias", false)?,
        out_bias: bool_or(v, "use_bias", false)?,
        gated_norm: true,
    };
    let tied = bool_or(v, "tie_word_embeddings", false)?;
    let mut t = Tally::default();
    let n = layers as u128;
    t.vector(h as u128, n);
    m.add(&mut t, n);
    ends(&mut t, vocab, h, h, tied);
    transformer_keys(a, h, layers, vocab, None, d_inner, tied);
    Ok(Exact {
        tally: t,
        mix: LayerMix {
            layers,
            mamba: layers,
            ssm: Some(m.shape()),
            ..LayerMix::default()
        },
    })
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

/// `mamba` / `linear_attention` → Mamba, `attention` / `full_attention` → attention.
fn spell_hybrid(s: &str) -> Option<Kind> {
    match s {
        "mamba" | "linear_attention" | "mamba2" => Some(Kind::Mamba),
        "attention" | "full_attention" => Some(Kind::Attention),
        _ => None,
    }
}

/// Nemotron-H's block names (transformers' and the legacy ones, `transformers`'
/// `_LEGACY_LAYER_TYPE_REMAP`).
fn spell_nemotron(s: &str) -> Option<Kind> {
    match s {
        "mlp" => Some(Kind::Mlp),
        "moe" => Some(Kind::Moe),
        other => spell_hybrid(other),
    }
}

/// Counts of each kind.
pub(crate) fn count(ks: &[Kind], k: Kind) -> u64 {
    ks.iter().filter(|x| **x == k).count() as u64
}

/// Jamba (`JambaForCausalLM`): every block a Mamba mixer (with dt/B/C norms) or attention
/// (`i % attn_layer_period == attn_layer_offset`), then a gated MLP or, where
/// `i % expert_layer_period == expert_layer_offset` and `num_experts > 1`, an MoE of
/// `num_experts` gated experts (gate and up fused) and a router; two RMSNorms per block.
///
/// # Formula
/// ```text
/// Ψ = V·h + L_m·mamba + L_a·attn + L_e·(E·3·h·f + h·E) + (L − L_e)·3·h·f
///   + 2·L·h + h [+ V·h untied]
/// ```
/// Source: transformers 5.24 `models/jamba/modeling_jamba.py`, `configuration_jamba.py`.
/// Example: ai21labs/Jamba-v0.1 (h 4,096, L 32: 4 attention, 28 Mamba, 16 MoE of 16
/// experts of 14,336): 51,570,323,328.
pub(crate) fn jamba(v: &Value, a: &mut Acc) -> Result<Exact, String> {
    let h = pos("hidden_size", int_or(v, "hidden_size", 4096)?)?;
    let layers = depth("num_hidden_layers", int_or(v, "num_hidden_layers", 32)?)?;
    let vocab = pos("vocab_size", int_or(v, "vocab_size", 65_536)?)?;
    let f = int_or(v, "intermediate_size", 14_336)?;
    let attn = Attn::read(v, h, Some(32))?;
    let (ap, ao) = (
        pos("attn_layer_period", int_or(v, "attn_layer_period", 8)?)?,
        int_or(v, "attn_layer_offset", 4)?,
    );
    let (ep, eo) = (
        pos("expert_layer_period", int_or(v, "expert_layer_period", 2)?)?,
        int_or(v, "expert_layer_offset", 1)?,
    );
    let e = int_or(v, "num_experts", 16)?;
    let dt_rank = match v.get("mamba_dt_rank") {
        Some(Value::String(s)) if s == "auto" => h.div_ceil(16),
        _ => int_or(v, "mamba_dt_rank", h.div_ceil(16))?,
    };
    let m = Mamba1 {
        h,
        d_inner: int_or(v, "mamba_expand", 2)? * h,
        d_state: int_or(v, "mamba_d_state", 16)?,
        dt_rank,
        conv_kernel: int_or(v, "mamba_d_conv", 4)?,
        conv_bias: bool_or(v, "mamba_conv_bias", true)?,
        proj_bias: bool_or(v, "mamba_proj_bias", false)?,
        bcdt_norms: true,
    };
    let attn_layers = (0..layers).filter(|i| i % ap == ao).count() as u64;
    let moe_layers = if e > 1 {
        (0..layers).filter(|i| i % ep == eo).count() as u64
    } else {
        0
    };
    let tied = bool_or(v, "tie_word_embeddings", false)?;
    let mut t = Tally::default();
    m.add(&mut t, (layers - attn_layers) as u128);
    attn.add(&mut t, attn_layers as u128);
    experts(&mut t, h, e, f, true, moe_layers as u128);
    mlp(&mut t, h, f, true, false, (layers - moe_layers) as u128);
    t.vector(2 * h as u128, layers as u128);
    ends(&mut t, vocab, h, h, tied);
    transformer_keys(a, h, layers, vocab, Some(attn), f, tied);
    moe_keys(
        a,
        e,
        int_or(v, "num_experts_per_tok", 2)?,
        f,
        layers,
        moe_layers,
    );
    Ok(Exact {
        tally: t,
        mix: LayerMix {
            layers,
            attention: attn_layers,
            mamba: layers - attn_layers,
            ssm: Some(m.shape()),
            moe: moe_layers,
            ..LayerMix::default()
        },
    })
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

/// Bamba (`BambaForCausalLM`): every block a [`Mamba2`] mixer (`d_i = mamba_expand·h`) or,
/// at `attn_layer_indices`, attention; a gated MLP and two RMSNorms in each.
///
/// # Formula
/// ```text
/// Ψ = V·h + L_m·mamba2 + L_a·attn + L·(3·h·f + 2h) + h [+ V·h untied]
/// ```
/// Source: transformers 5.24 `models/bamba/modeling_bamba.py`.
/// Example: ibm-ai-platform/Bamba-9B (h 4,096, L 32, attention at 9, 18, 27, f 14,336,
/// V 128,256): 9,780,235,392 (the −17.9 % of a Llama reading is its Mamba-2 layers).
pub(crate) fn bamba(v: &Value, a: &mut Acc) -> Result<Exact, String> {
    let h = pos("hidden_size", int_or(v, "hidden_size", 4096)?)?;
    let layers = depth("num_hidden_layers", int_or(v, "num_hidden_layers", 32)?)?;
    let vocab = pos("vocab_size", int_or(v, "vocab_size", 128_000)?)?;
    let f = int_or(v, "intermediate_size", 14_336)?;
    let mut attn = Attn::read(v, h, Some(32))?;
    let bias = bool_or(v, "attention_bias", false)?;
    (attn.qkv_bias, attn.o_bias) = (bias, bias);
    let attn_layers = match v.get("attn_layer_indices") {
        None | Some(Value::Null) => 0,
        Some(Value::Array(xs)) => {
            let mut idx: Vec<u64> = xs
                .iter()
                .map(|x| x.as_u64().filter(|i| *i < layers))
                .collect::<Option<Vec<_>>>()
                .ok_or("config.json: `attn_layer_indices` must list block indices below `num_hidden_layers`")?;
            idx.sort_unstable();
            idx.dedup();
            idx.len() as u64
        }
        Some(x) => {
            return Err(format!(
                "config.json: `attn_layer_indices` must be a list (got {x})"
            ))
        }
    };
    let proj_bias = bool_or(v, "mamba_proj_bias", false)?;
    let m = Mamba2 {
        h,
        d_inner: int_or(v, "mamba_expand", 2)? * h,
        heads: int_or(v, "mamba_n_heads", 128)?,
        groups: int_or(v, "mamba_n_groups", 1)?,
        d_state: int_or(v, "mamba_d_state", 256)?,
        conv_kernel: int_or(v, "mamba_d_conv", 4)?,
        conv_bias: bool_or(v, "mamba_conv_bias", true)?,
        in_bias: proj_bias,
        out_bias: proj_bias,
        gated_norm: true,
    };
    let tied = bool_or(v, "tie_word_embeddings", false)?;
    let mut t = Tally::default();
    m.add(&mut t, (layers - attn_layers) as u128);
    attn.add(&mut t, attn_layers as u128);
    mlp(
        &mut t,
        h,
        f,
        true,
        bool_or(v, "mlp_bias", false)?,
        layers as u128,
    );
    t.vector(2 * h as u128, layers as u128);
    ends(&mut t, vocab, h, h, tied);
    transformer_keys(a, h, layers, vocab, Some(attn), f, tied);
    Ok(Exact {
        tally: t,
        mix: LayerMix {
            layers,
            attention: attn_layers,
            mamba: layers - attn_layers,
            ssm: Some(m.shape()),
            ..LayerMix::default()
        },
    })
}

/// Nemotron-H's block kinds: `layers_block_type` / `layer_types` (transformers' spelling),
/// else the Hub's `hybrid_override_pattern` (`M` Mamba, `*` attention, `-` MLP, `E` MoE),
/// else NemotronHConfig's default list.
fn nemotron_kinds(v: &Value) -> Result<Vec<Kind>, String> {
    if let Some(ks) = kinds(v, &["layers_block_type", "layer_types"], spell_nemotron)? {
        return Ok(ks);
    }
    match v.get("hybrid_override_pattern") {
        Some(Value::String(p)) => p
            .chars()
            .map(|c| match c {
                'M' => Ok(Kind::Mamba),
                '*' => Ok(Kind::Attention),
                '-' => Ok(Kind::Mlp),
                'E' => Ok(Kind::Moe),
                c => Err(format!(
                    "config.json: `hybrid_override_pattern` holds `{c}`, not one of M, *, -, E"
                )),
            })
            .collect(),
        Some(x) => Err(format!(
            "config.json: `hybrid_override_pattern` must be a string (got {x})"
        )),
        None => Ok(vec![Kind::Mamba, Kind::Moe, Kind::Attention, Kind::Mlp]),
    }
}

/// Nemotron-H's `n_e` MoE blocks: `E` experts of `(f_e, l)` up and `(l, f_e)` down, the
/// router `(E, h)`, a shared expert, and with `moe_latent_size` the latent projections
/// `h → l → h`.
///
/// # Formula
/// ```text
/// n_e · (E·2·l·f_e + E·h + 2·h·f_s [+ 2·h·l])       (biases where mlp_bias)
/// ```
/// Source: transformers 5.24 `models/nemotron_h/modeling_nemotron_h.py` (`NemotronHMoE`).
/// Example: E = 8, l = h = 4,096, f_e = 7,688, f_s = 7,688, one block: 8·2·4,096·7,688 +
/// 8·4,096 + 2·4,096·7,688 = 503,840,768 + 32,768 + 62,980,096 = 566,853,632.
fn nemotron_moe(v: &Value, t: &mut Tally, h: u64, mlp_bias: bool, n_e: u64) -> Result<(), String> {
    let (e, f_e) = (
        int_alias(v, &["n_routed_experts", "num_local_experts"], 8)?,
        int_or(v, "moe_intermediate_size", 7688)?,
    );
    let latent = opt_int(v, "moe_latent_size")?;
    let l = latent.unwrap_or(h);
    let n = n_e as u128;
    // Experts: (E, f_e, l) up and (E, l, f_e) down; the router (E, h).
    t.module(linear(l, f_e, false), n * e as u128);
    t.module(linear(f_e, l, false), n * e as u128);
    t.module(linear(h, e, false), n);
    mlp(
        t,
        h,
        int_or(v, "moe_shared_expert_intermediate_size", 7688)?,
        false,
        mlp_bias,
        n,
    );
    if latent.is_some() {
        t.module(linear(h, l, mlp_bias), n);
        t.module(linear(l, h, mlp_bias), n);
    }
    Ok(())
}

/// Nemotron-H (`NemotronHForCausalLM`): each block one RMSNorm and one mixer, by
/// `layers_block_type` / `layer_types` (transformers) or `hybrid_override_pattern` (the
/// Hub's: `M` Mamba-2, `*` attention, `-` MLP, `E` MoE): a [`Mamba2`] mixer
/// (`d_i = mamba_num_heads·mamba_head_dim`), bias-free attention, a plain (ReLU²) MLP
/// `intermediate_size` wide, or an MoE of plain experts with a shared expert and an
/// optional latent projection.
///
/// # Formula
/// ```text
/// Ψ = V·h + L_m·mamba2 + L_a·attn + L_f·2·h·f
///   + L_e·(E·2·l·f_e + h·E + 2·h·f_s + [2·h·l latent]) + L·h + h [+ V·h untied]
/// ```
/// `l` = `moe_latent_size` (default `h`), `f_s` the shared expert's width; the LM head is
/// never tied (transformers 5.24 declares no tied weights for this class). Source:
/// transformers 5.24 `models/nemotron_h/modeling_nemotron_h.py`, `configuration_nemotron_h.py`.
/// Example: nvidia/Nemotron-H-8B-Base-8K (h 4,096, 52 blocks: 24 M, 4 attention, 24 MLP
/// of 21,504; V 131,072): 8,100,852,736.
pub(crate) fn nemotron_h(v: &Value, a: &mut Acc) -> Result<Exact, String> {
    let h = pos("hidden_size", int_or(v, "hidden_size", 4096)?)?;
    let vocab = pos("vocab_size", int_or(v, "vocab_size", 131_072)?)?;
    let ks = nemotron_kinds(v)?;
    let layers = depth("layers_block_type", ks.len() as u64)?;
    let mut attn = Attn::read(v, h, Some(32))?;
    // NemotronHConfig.head_dim defaults to 128 (not h / heads); the Hub's
    // `attention_head_dim` is not read by transformers.
    attn.head_dim = pos("head_dim", int_or(v, "head_dim", 128)?)?;
    let heads = int_or(v, "mamba_num_heads", 128)?;
    let m = Mamba2 {
        h,
        d_inner: heads * int_or(v, "mamba_head_dim", 64)?,
        heads,
        groups: int_alias(v, &["n_groups", "mamba_n_groups"], 8)?,
        d_state: int_or(v, "ssm_state_size", 128)?,
        conv_kernel: int_alias(v, &["conv_kernel", "mamba_d_conv"], 4)?,
        conv_bias: bool_or(v, "use_conv_bias", bool_or(v, "mamba_conv_bias", true)?)?,
        in_bias: bool_or(v, "use_bias", false)?,
        out_bias: bool_or(v, "use_bias", false)?,
        gated_norm: true,
    };
    let mlp_bias = bool_or(v, "mlp_bias", false)?;
    let f = int_or(v, "intermediate_size", 21_504)?;
    let (n_m, n_a, n_f, n_e) = (
        count(&ks, Kind::Mamba),
        count(&ks, Kind::Attention),
        count(&ks, Kind::Mlp),
        count(&ks, Kind::Moe),
    );
    // NemotronHForCausalLM declares no tied weights (`_tied_weights_keys = {}`): its LM
    // head is its own whatever `tie_word_embeddings` says.
    let tied = false;
    let mut t = Tally::default();
    m.add(&mut t, n_m as u128);
    attn.add(&mut t, n_a as u128);
    mlp(&mut t, h, f, false, mlp_bias, n_f as u128);
    if n_e > 0 {
        nemotron_moe(v, &mut t, h, mlp_bias, n_e)?;
    }
    t.vector(h as u128, layers as u128);
    ends(&mut t, vocab, h, h, tied);
    transformer_keys(a, h, layers, vocab, Some(attn), f, tied);
    Ok(Exact {
        tally: t,
        mix: LayerMix {
            layers,
            attention: n_a,
            mamba: n_m,
            ssm: Some(m.shape()),
            moe: n_e,
            ..LayerMix::default()
        },
    })
}

/// Falcon-H1 (`FalconH1ForCausalLM`): every block runs attention and a [`Mamba2`] mixer
/// in parallel on one input norm (`d_i = mamba_d_ssm`, else `mamba_expand·h`; the gated
/// norm only with `mamba_rms_norm`; in_proj bias `mamba_proj_bias`, out_proj bias
/// `projectors_bias`), then a gated MLP after a second norm.
///
/// # Formula
/// ```text
/// Ψ = V·h + L·(mamba2 + attn + 3·h·f + 2h) + h [+ V·h untied]
/// ```
/// Source: transformers 5.24 `models/falcon_h1/modeling_falcon_h1.py`.
/// Example: tiiuae/Falcon-H1-7B-Base (h 3,072, L 44, 12 heads, 2 KV, d 128, f 12,288;
/// d_i 3,072, 24 SSM heads, N 256; V 130,048): 7,585,513,568.
pub(crate) fn falcon_h1(v: &Value, a: &mut Acc) -> Result<Exact, String> {
    let h = pos("hidden_size", int_or(v, "hidden_size", 4096)?)?;
    let layers = depth("num_hidden_layers", int_or(v, "num_hidden_layers", 32)?)?;
    let vocab = pos("vocab_size", int_or(v, "vocab_size", 128_000)?)?;
    let f = int_or(v, "intermediate_size", 14_336)?;
    let mut attn = Attn::read(v, h, Some(32))?;
    let bias = bool_or(v, "attention_bias", false)?;
    (attn.qkv_bias, attn.o_bias) = (bias, bias);
    let d_inner = match opt_int(v, "mamba_d_ssm")? {
        Some(d) => d,
        None => int_or(v, "mamba_expand", 2)? * h,
    };
    let m = Mamba2 {
        h,
        d_inner,
        heads: int_or(v, "mamba_n_heads", 128)?,
        groups: int_or(v, "mamba_n_groups", 1)?,
        d_state: int_or(v, "mamba_d_state", 256)?,
        conv_kernel: int_or(v, "mamba_d_conv", 4)?,
        conv_bias: bool_or(v, "mamba_conv_bias", true)?,
        in_bias: bool_or(v, "mamba_proj_bias", false)?,
        out_bias: bool_or(v, "projectors_bias", false)?,
        gated_norm: bool_or(v, "mamba_rms_norm", false)?,
    };
    let tied = bool_or(v, "tie_word_embeddings", false)?;
    let n = layers as u128;
    let mut t = Tally::default();
    m.add(&mut t, n);
    attn.add(&mut t, n);
    mlp(&mut t, h, f, true, bool_or(v, "mlp_bias", false)?, n);
    t.vector(2 * h as u128, n);
    ends(&mut t, vocab, h, h, tied);
    transformer_keys(a, h, layers, vocab, Some(attn), f, tied);
    Ok(Exact {
        tally: t,
        mix: LayerMix {
            layers,
            attention: layers,
            mamba: layers,
            ssm: Some(m.shape()),
            ..LayerMix::default()
        },
    })
}

/// Granite 4.0-H (`GraniteMoeHybridForCausalLM`): every block a [`Mamba2`] mixer
/// (`d_i = mamba_expand·h`) or attention by `layer_types` (or `layers_block_type`), then a
/// shared gated MLP (`shared_intermediate_size`, gate and up fused) and, when
/// `num_local_experts > 0`, an MoE of gated experts with a router; two RMSNorms.
///
/// # Formula
/// ```text
/// Ψ = V·h + L_m·mamba2 + L_a·attn + L·(3·h·f_s + 2h) + [L·(E·3·h·f + h·E)] + h [+ V·h untied]
/// ```
/// Source: transformers 5.24 `models/granitemoehybrid/modeling_granitemoehybrid.py`.
/// Example: ibm-granite/granite-4.0-h-tiny (h 1,536, 40 blocks: 4 attention, 36 Mamba-2;
/// 64 experts of 512, shared 1,024; V 100,352, tied): 6,939,037,248.
pub(crate) fn granite_hybrid(v: &Value, a: &mut Acc) -> Result<Exact, String> {
    let h = pos("hidden_size", int_or(v, "hidden_size", 4096)?)?;
    let vocab = pos("vocab_size", int_or(v, "vocab_size", 32_000)?)?;
    let ks = kinds(v, &["layer_types", "layers_block_type"], spell_hybrid)?;
    let layers = match &ks {
        Some(ks) => ks.len() as u64,
        None => int_or(v, "num_hidden_layers", 32)?,
    };
    let layers = depth("num_hidden_layers", layers)?;
    let n_a = ks.as_deref().map_or(0, |ks| count(ks, Kind::Attention));
    let mut attn = Attn::read(v, h, Some(32))?;
    let bias = bool_or(v, "attention_bias", false)?;
    (attn.qkv_bias, attn.o_bias) = (bias, bias);
    let proj_bias = bool_or(v, "mamba_proj_bias", false)?;
    let m = Mamba2 {
        h,
        d_inner: int_or(v, "mamba_expand", 2)? * h,
        heads: int_or(v, "mamba_n_heads", 128)?,
        groups: int_or(v, "mamba_n_groups", 1)?,
        d_state: int_or(v, "mamba_d_state", 256)?,
        conv_kernel: int_or(v, "mamba_d_conv", 4)?,
        conv_bias: bool_or(v, "mamba_conv_bias", true)?,
        in_bias: proj_bias,
        out_bias: proj_bias,
        gated_norm: true,
    };
    let e = int_or(v, "num_local_experts", 8)?;
    let f = int_or(v, "intermediate_size", 11_008)?;
    let f_s = int_or(v, "shared_intermediate_size", 1024)?;
    let tied = bool_or(v, "tie_word_embeddings", false)?;
    let n = layers as u128;
    let mut t = Tally::default();
    m.add(&mut t, (layers - n_a) as u128);
    attn.add(&mut t, n_a as u128);
    // GraniteMoeHybridMLP: input_linear h → 2·f_s (gate and up), output_linear f_s → h.
    t.module(linear(h, 2 * f_s, false), n);
    t.module(linear(f_s, h, false), n);
    if e > 0 {
        experts(&mut t, h, e, f, true, n);
    }
    t.vector(2 * h as u128, n);
    ends(&mut t, vocab, h, h, tied);
    let moe_layers = if e > 0 { layers } else { 0 };
    transformer_keys(
        a,
        h,
        layers,
        vocab,
        Some(attn),
        if e > 0 { f } else { f_s },
        tied,
    );
    moe_keys(
        a,
        e,
        int_or(v, "num_experts_per_tok", 2)?,
        f,
        layers,
        moe_layers,
    );
    Ok(Exact {
        tally: t,
        mix: LayerMix {
            layers,
            attention: n_a,
            mamba: layers - n_a,
            ssm: Some(m.shape()),
            moe: moe_layers,
            ..LayerMix::default()
        },
    })
}

/// LFM2's block kinds: `layer_types` (`conv`, `full_attention`), else `full_attn_idxs`
/// (the attention blocks' indices; the rest short convolutions), else all attention.
fn lfm2_kinds(v: &Value) -> Result<Vec<Kind>, String> {
    let spell = |s: &str| match s {
        "conv" => Some(Kind::Conv),
        "full_attention" | "attention" => Some(Kind::Attention),
        _ => None,
    };
    let ks = match kinds(v, &["layer_types"], spell)? {
        Some(ks) => ks,
        None => {
            let layers = depth("num_hidden_layers", int_or(v, "num_hidden_layers", 32)?)?;
            match v.get("full_attn_idxs") {
                None | Some(Value::Null) => vec![Kind::Attention; layers as usize],
                Some(Value::Array(xs)) => {
                    let idx: Vec<u64> = xs.iter().filter_map(Value::as_u64).collect();
                    if idx.len() != xs.len() {
                        return Err("config.json: `full_attn_idxs` must list block indices".into());
                    }
                    (0..layers)
                        .map(|i| {
                            if idx.contains(&i) {
                                Kind::Attention
                            } else {
                                Kind::Conv
                            }
                        })
                        .collect()
                }
                Some(x) => {
                    return Err(format!(
                        "config.json: `full_attn_idxs` must be a list (got {x})"
                    ))
                }
            }
        }
    };
    Ok(ks)
}

/// LFM2's feed-forward width as `Lfm2MLP` adjusts it: with `block_auto_adjust_ff_dim`,
/// `f = 2·f/3`, then times `block_ffn_dim_multiplier` and rounded up to
/// `block_multiple_of`.
///
/// # Formula
/// ```text
/// f' = ⌈⌊m·⌊2f/3⌋⌋ / M⌉·M      (f' = ⌊2f/3⌋ without a multiplier; f without the adjustment)
/// ```
/// Source: transformers 5.24 `models/lfm2/modeling_lfm2.py` (`Lfm2MLP.__init__`).
/// Example: LFM2-1.2B, f = 12,288, m = 1.0, M = 256: ⌊2·12,288/3⌋ = 8,192 → 8,192.
fn lfm2_ffn(v: &Value) -> Result<u64, String> {
    let mut f = int_alias(v, &["block_ff_dim", "intermediate_size"], 12_288)?;
    if bool_or(v, "block_auto_adjust_ff_dim", true)? {
        f = 2 * f / 3;
        if v.get("block_ffn_dim_multiplier")
            .is_some_and(|x| !x.is_null())
        {
            let mult = float_or(v, "block_ffn_dim_multiplier", 1.0)?;
            f = (mult * f as f64).floor().min(FIELD_MAX as f64) as u64;
            let of = pos("block_multiple_of", int_or(v, "block_multiple_of", 256)?)?;
            f = f.div_ceil(of) * of;
        }
    }
    Ok(f)
}

/// LFM2 (`Lfm2ForCausalLM`): every block a gated short convolution or attention (with
/// per-head q/k RMSNorms) by `layer_types` (else `full_attn_idxs`, else all attention),
/// then a gated MLP whose width is adjusted (`block_auto_adjust_ff_dim`:
/// `⌊2f/3⌋`, then with `block_ffn_dim_multiplier` `m`: `⌊m·f⌋` rounded up to
/// `block_multiple_of`); two RMSNorms per block, a final one, tied by default.
///
/// # Formula
/// ```text
/// conv  = h·3h + h·K + h·h (+ 3h + h + h biases with conv_bias)
/// Ψ = V·h + L_c·conv + L_a·(attn + 2d) + L·(3·h·f' + 2h) + h [+ V·h untied]
/// ```
/// `K` = `conv_L_cache`. Source: transformers 5.24 `models/lfm2/modeling_lfm2.py`
/// (`Lfm2ShortConv`, `Lfm2MLP`), `configuration_lfm2.py` (`block_ff_dim`, `tie_embedding`).
/// Example: LiquidAI/LFM2-1.2B (h 2,048, 16 blocks: 6 attention, 10 conv; f 12,288 →
/// 8,192; V 65,536, tied): 1,170,340,608.
pub(crate) fn lfm2(v: &Value, a: &mut Acc) -> Result<Exact, String> {
    let h = pos("hidden_size", int_or(v, "hidden_size", 2560)?)?;
    let vocab = pos("vocab_size", int_or(v, "vocab_size", 65_536)?)?;
    let ks = lfm2_kinds(v)?;
    let layers = depth("num_hidden_layers", ks.len() as u64)?;
    let (n_a, n_c) = (count(&ks, Kind::Attention), count(&ks, Kind::Conv));
    let mut attn = Attn::read(v, h, Some(32))?;
    attn.qk_norm = true;
    let f = lfm2_ffn(v)?;
    let kernel = int_or(v, "conv_L_cache", 3)?;
    let cb = bool_or(v, "conv_bias", false)?;
    let tied = match v.get("tie_embedding") {
        Some(Value::Bool(b)) => *b,
        _ => bool_or(v, "tie_word_embeddings", true)?,
    };
    let mut t = Tally::default();
    let nc = n_c as u128;
    t.module(linear(h, 3 * h, cb), nc);
    t.module(
        h as u128 * kernel as u128 + if cb { h as u128 } else { 0 },
        nc,
    );
    t.module(linear(h, h, cb), nc);
    attn.add(&mut t, n_a as u128);
    mlp(&mut t, h, f, true, false, layers as u128);
    t.vector(2 * h as u128, layers as u128);
    ends(&mut t, vocab, h, h, tied);
    transformer_keys(a, h, layers, vocab, Some(attn), f, tied);
    Ok(Exact {
        tally: t,
        mix: LayerMix {
            layers,
            attention: n_a,
            conv: n_c,
            conv_kernel: kernel,
            ..LayerMix::default()
        },
    })
}
