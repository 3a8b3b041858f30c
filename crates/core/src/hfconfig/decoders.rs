//! Transformer families of 2024–2025 whose blocks differ from memfit's preset shapes in
//! ways the query keys cannot express (attention biases without an o bias, full-width or
//! per-head q/k norms, four norms per block, xIELU's learned scalars, MoE layouts with
//! shared experts, correction biases and dense blocks, MiniMax's lightning attention):
//! GLM-4, GLM-4.5 (`glm4_moe`), Seed-OSS, OLMo 3, Hunyuan dense and MoE, Apertus, EXAONE 4,
//! ERNIE 4.5 MoE, MiniMax. Each is counted exactly with [`Decoder`]; the import carries the
//! count as an explicit `params` where the transformer keys' own count differs.

use super::hybrid::*;
use super::*;
use crate::model::LayerMix;

/// The feed-forward of an MoE block.
///
/// # Formula
/// ```text
/// E·3·h·f_e                              routed experts (gated, no biases)
/// + 3·h·f_s  (+ 2f_s + h biases)          shared experts as one MLP f_s wide
/// + h·E  (+ E correction bias)            router
/// ```
#[derive(Clone, Copy, Default)]
pub(crate) struct Moe {
    /// Routed experts `E`.
    pub experts: u64,
    /// Experts per token.
    pub top_k: u64,
    /// One expert's width `f_e`.
    pub f_e: u64,
    /// All shared experts' width `f_s` (one MLP; 0 = none).
    pub f_s: u64,
    /// A learned `E`-wide routing correction bias (ERNIE 4.5's `e_score_correction_bias`).
    pub router_bias: bool,
    /// Biases on the shared MLP's projections (the routed experts, 3-D tensors in
    /// transformers 5, have none).
    pub shared_bias: bool,
}

/// A decoder of `L` blocks, each attention (or MiniMax's linear attention) and a
/// feed-forward (a dense MLP, or an MoE in `moe_layers` of them).
///
/// # Formula
/// ```text
/// Ψ = V·h + L_a·attn + L_lin·lin + (L − L_moe)·mlp + L_moe·moe + L·(k_n·h + x)
///   + h [+ V·h untied] [+ V LM-head bias]
/// mlp = m·h·f (+ biases),  m = 3 gated | 2 plain;  x = 2 xIELU scalars (Apertus)
/// lin = a·d norm + h·3a·d (qkv) + a·d·h (out) + h·a·d (output gate)   (MiniMax)
/// ```
/// `k_n` norms per block (2, or 4 with GLM-4's post-norms). Source: the transformers 5.24
/// modeling file of each family (named at its function).
pub(crate) struct Decoder {
    pub h: u64,
    pub layers: u64,
    pub vocab: u64,
    pub tied: bool,
    pub head_bias: bool,
    pub attn: Attn,
    /// Blocks with MiniMax lightning (linear) attention instead of softmax attention.
    pub linear_layers: u64,
    pub norms: u64,
    pub f: u64,
    pub gated: bool,
    pub mlp_bias: bool,
    /// Learned scalars of the activation per block (xIELU: `alpha_p`, `alpha_n`).
    pub act_params: u64,
    pub moe: Option<Moe>,
    pub moe_layers: u64,
}

impl Decoder {
    fn count(&self, a: &mut Acc, model_type: &str, v: &Value) -> Exact {
        let (h, l) = (self.h, self.layers as u128);
        let mut t = Tally::default();
        let n_lin = self.linear_layers.min(self.layers);
        self.attn.add(&mut t, (self.layers - n_lin) as u128);
        if n_lin > 0 {
            let ad = self.attn.heads * self.attn.head_dim;
            let n = n_lin as u128;
            t.vector(ad as u128, n);
            t.module(linear(h, 3 * ad, false), n);
            t.module(linear(ad, h, false), n);
            t.module(linear(h, ad, false), n);
        }
        let n_moe = if self.moe.is_some() {
            self.moe_layers.min(self.layers)
        } else {
            0
        };
        mlp(
            &mut t,
            h,
            self.f,
            self.gated,
            self.mlp_bias,
            (self.layers - n_moe) as u128,
        );
        if let Some(m) = self.moe.filter(|_| n_moe > 0) {
            let n = n_moe as u128;
            mlp(&mut t, h, m.f_e, true, false, n * m.experts as u128);
            if m.f_s > 0 {
                mlp(&mut t, h, m.f_s, true, m.shared_bias, n);
            }
            t.module(linear(h, m.experts, false), n);
            if m.router_bias {
                t.vector(m.experts as u128, n);
            }
        }
        t.vector((self.norms * h + self.act_params) as u128, l);
        ends(&mut t, self.vocab, h, h, self.tied);
        if self.head_bias {
            t.vector(self.vocab as u128, 1);
        }
        transformer_keys(
            a,
            h,
            self.layers,
            self.vocab,
            Some(self.attn),
            self.f,
            self.tied,
        );
        if let Some(m) = self.moe {
            moe_keys(a, m.experts, m.top_k, m.f_e, self.layers, n_moe);
        }
        if v.get("layer_types").is_some_and(Value::is_array) {
            window_keys(v, model_type, &mut a.keys);
        }
        Exact {
            tally: t,
            mix: if n_lin > 0 {
                LayerMix {
                    layers: self.layers,
                    attention: self.layers - n_lin,
                    linear_attention: n_lin,
                    // MiniMaxLightningAttention: `num_attention_heads` heads of `head_dim`.
                    lightning: Some(crate::model::Lightning {
                        heads: self.attn.heads,
                        head_dim: self.attn.head_dim,
                    }),
                    moe: n_moe,
                    ..LayerMix::default()
                }
            } else {
                LayerMix::default()
            },
        }
    }
}

/// The common sizes: width, depth, vocabulary (each with the config class's default).
pub(crate) fn sizes(v: &Value, d: (u64, u64, u64)) -> Result<(u64, u64, u64), String> {
    Ok((
        pos("hidden_size", int_or(v, "hidden_size", d.0)?)?,
        depth("num_hidden_layers", int_or(v, "num_hidden_layers", d.1)?)?,
        pos("vocab_size", int_or(v, "vocab_size", d.2)?)?,
    ))
}

/// Attention heads with a family's `head_dim` default (`None` = `h / heads`).
pub(crate) fn attn_with(
    v: &Value,
    h: u64,
    heads: u64,
    head_dim: Option<u64>,
) -> Result<Attn, String> {
    let mut at = Attn::read(v, h, Some(heads))?;
    if let Some(d) = head_dim {
        at.head_dim = pos("head_dim", int_or(v, "head_dim", d)?)?;
    }
    Ok(at)
}

/// A dense decoder with 2 norms per block and a gated MLP `intermediate_size` wide.
pub(crate) fn dense(h: u64, layers: u64, vocab: u64, tied: bool, attn: Attn, f: u64) -> Decoder {
    Decoder {
        h,
        layers,
        vocab,
        tied,
        head_bias: false,
        attn,
        linear_layers: 0,
        norms: 2,
        f,
        gated: true,
        mlp_bias: false,
        act_params: 0,
        moe: None,
        moe_layers: 0,
    }
}

/// GLM-4 (`Glm4ForCausalLM`, transformers 5.24 `models/glm4/modeling_glm4.py`): q/k/v
/// biases (`attention_bias`, default true), no o bias, gate and up fused, four RMSNorms
/// per block (input, post-attention, post-self-attention, post-MLP).
/// Example: THUDM/GLM-4-9B-0414 (h 4,096, L 40, 32 heads, 2 KV, f 13,696, V 151,552):
/// 9,400,279,040.
pub(crate) fn glm4(v: &Value, a: &mut Acc) -> Result<Exact, String> {
    let (h, l, vocab) = sizes(v, (4096, 40, 151_552))?;
    let mut at = attn_with(v, h, 32, Some(128))?;
    at.qkv_bias = bool_or(v, "attention_bias", true)?;
    let mut d = dense(
        h,
        l,
        vocab,
        bool_or(v, "tie_word_embeddings", false)?,
        at,
        int_or(v, "intermediate_size", 13_696)?,
    );
    d.norms = 4;
    Ok(d.count(a, "glm4", v))
}

/// Seed-OSS (`SeedOssForCausalLM`, `models/seed_oss/modeling_seed_oss.py`): q/k/v biases
/// (`attention_bias`, default true), an o bias only with `attention_out_bias`, MLP biases
/// with `mlp_bias`.
/// Example: ByteDance-Seed/Seed-OSS-36B-Base (h 5,120, L 64, 80 heads, 8 KV, d 128,
/// f 27,648, V 155,136): 36,151,104,512.
pub(crate) fn seed_oss(v: &Value, a: &mut Acc) -> Result<Exact, String> {
    let (h, l, vocab) = sizes(v, (4096, 64, 155_136))?;
    let mut at = attn_with(v, h, 80, Some(128))?;
    at.qkv_bias = bool_or(v, "attention_bias", true)?;
    at.o_bias = bool_or(v, "attention_out_bias", false)?;
    let mut d = dense(
        h,
        l,
        vocab,
        bool_or(v, "tie_word_embeddings", false)?,
        at,
        int_or(v, "intermediate_size", 27_648)?,
    );
    d.mlp_bias = bool_or(v, "mlp_bias", false)?;
    Ok(d.count(a, "seed_oss", v))
}

/// OLMo 3 (`Olmo3ForCausalLM`, `models/olmo3/modeling_olmo3.py`) and OLMo 2 layouts:
/// q and k RMSNorms over the whole projections (`a·d`, `a_kv·d`), biases on all four
/// projections with `attention_bias`, two post-norms per block.
/// Example: allenai/Olmo-3-1025-7B (h 4,096, L 32, 32 heads, f 11,008, V 100,278):
/// 7,298,011,136.
pub(crate) fn olmo3(v: &Value, a: &mut Acc) -> Result<Exact, String> {
    let (h, l, vocab) = sizes(v, (4096, 32, 50_304))?;
    let mut at = attn_with(v, h, 32, None)?;
    let bias = bool_or(v, "attention_bias", false)?;
    (at.qkv_bias, at.o_bias, at.qk_norm_full) = (bias, bias, true);
    let d = dense(
        h,
        l,
        vocab,
        bool_or(v, "tie_word_embeddings", false)?,
        at,
        int_or(v, "intermediate_size", 11_008)?,
    );
    Ok(d.count(a, "olmo3", v))
}

/// Hunyuan dense (`HunYuanDenseV1ForCausalLM`, `models/hunyuan_v1_dense/`): per-head q/k
/// RMSNorms (`query_layernorm`, `key_layernorm`, always), biases on all four projections
/// with `attention_bias`.
/// Example: tencent/Hunyuan-7B-Pretrain (h 4,096, L 32, 32 heads, 8 KV, d 128, f 14,336,
/// V 128,167, tied): 7,504,568,320.
pub(crate) fn hunyuan_dense(v: &Value, a: &mut Acc) -> Result<Exact, String> {
    let (h, l, vocab) = sizes(v, (4096, 32, 290_943))?;
    let mut at = attn_with(v, h, 32, None)?;
    let bias = bool_or(v, "attention_bias", false)?;
    (at.qkv_bias, at.o_bias, at.qk_norm) = (bias, bias, true);
    let d = dense(
        h,
        l,
        vocab,
        bool_or(v, "tie_word_embeddings", false)?,
        at,
        int_or(v, "intermediate_size", 11_008)?,
    );
    Ok(d.count(a, "hunyuan_v1_dense", v))
}

/// One integer from a field that may be a per-layer list of equal values (Hunyuan-A13B's
/// `moe_topk`, `num_experts`); a list of differing values is refused by name.
pub(crate) fn int_or_list(v: &Value, k: &str, default: u64) -> Result<u64, String> {
    match v.get(k) {
        Some(Value::Array(xs)) => {
            let first = xs.first().and_then(Value::as_u64);
            match first {
                Some(x) if xs.iter().all(|y| y.as_u64() == Some(x)) && x <= 1 << 24 => Ok(x),
                _ => Err(format!("model_type: `{k}` differs between layers (or is not a list of integers); memfit cannot represent that yet")),
            }
        }
        _ => int_or(v, k, default),
    }
}

/// Hunyuan MoE (`HunYuanMoEV1ForCausalLM`, `models/hunyuan_v1_moe/`): Hunyuan's attention
/// and, in every block, `num_experts` gated experts and one shared gated MLP, all
/// `intermediate_size` wide, and a router.
/// Example: tencent/Hunyuan-A13B-Pretrain (h 4,096, L 32, 32 heads, 8 KV, d 128, 64
/// experts of 3,072, V 128,167, tied): 80,393,183,232.
pub(crate) fn hunyuan_moe(v: &Value, a: &mut Acc) -> Result<Exact, String> {
    let (h, l, vocab) = sizes(v, (4096, 32, 290_943))?;
    let mut at = attn_with(v, h, 32, None)?;
    let bias = bool_or(v, "attention_bias", false)?;
    (at.qkv_bias, at.o_bias, at.qk_norm) = (bias, bias, true);
    let f = int_or(v, "intermediate_size", 11_008)?;
    let mut d = dense(
        h,
        l,
        vocab,
        bool_or(v, "tie_word_embeddings", false)?,
        at,
        f,
    );
    d.moe = Some(Moe {
        experts: pos("num_experts", int_or_list(v, "num_experts", 1)?)?,
        top_k: int_or_list(v, "moe_topk", 1)?,
        f_e: f,
        f_s: f,
        ..Moe::default()
    });
    d.moe_layers = l;
    Ok(d.count(a, "hunyuan_v1_moe", v))
}

/// Apertus (`ApertusForCausalLM`, `models/apertus/modeling_apertus.py`): per-head q/k
/// RMSNorms, biases on all four projections with `attention_bias`, a plain (ungated) MLP
/// whose xIELU activation (`hidden_act` = `xielu`) learns two scalars per block.
/// Example: swiss-ai/Apertus-8B-2509 (h 4,096, L 32, 32 heads, 8 KV, f 21,504,
/// V 131,072): 8,053,338,176.
pub(crate) fn apertus(v: &Value, a: &mut Acc) -> Result<Exact, String> {
    let (h, l, vocab) = sizes(v, (4096, 32, 131_072))?;
    let mut at = attn_with(v, h, 32, None)?;
    let bias = bool_or(v, "attention_bias", false)?;
    (at.qkv_bias, at.o_bias, at.qk_norm) = (bias, bias, true);
    let mut d = dense(
        h,
        l,
        vocab,
        bool_or(v, "tie_word_embeddings", false)?,
        at,
        int_or(v, "intermediate_size", 14_336)?,
    );
    d.gated = false;
    let act = v
        .get("hidden_act")
        .and_then(Value::as_str)
        .unwrap_or("xielu");
    d.act_params = if act == "xielu" { 2 } else { 0 };
    Ok(d.count(a, "apertus", v))
}

/// EXAONE 4.0 (`Exaone4ForCausalLM`, `models/exaone4/modeling_exaone4.py`): per-head q/k
/// RMSNorms, no biases, two post-norms per block; its local/global layer pattern changes no
/// weight (the KV cache of the `sliding_attention` layers is bounded by the window).
/// Example: LGAI-EXAONE/EXAONE-4.0-32B (h 5,120, L 64, 40 heads, 8 KV, d 128, f 27,392,
/// V 102,400): 32,003,216,384.
pub(crate) fn exaone4(v: &Value, a: &mut Acc) -> Result<Exact, String> {
    let (h, l, vocab) = sizes(v, (4096, 32, 102_400))?;
    let mut at = attn_with(v, h, 32, None)?;
    at.qk_norm = true;
    let d = dense(
        h,
        l,
        vocab,
        bool_or(v, "tie_word_embeddings", false)?,
        at,
        int_or(v, "intermediate_size", 16_384)?,
    );
    let e = d.count(a, "exaone4", v);
    // Without `layer_types`, Exaone4Config makes every block but each
    // `sliding_window_pattern`-th a sliding one (none without a window).
    let window = opt_int(v, "sliding_window")?.filter(|w| *w > 0);
    let pattern = v.get("sliding_window_pattern").and_then(Value::as_u64);
    if let (None, Some(w), Some(p)) = (v.get("layer_types"), window, pattern.filter(|p| *p > 0)) {
        let local = l - l / p;
        if local > 0 && opt_int(v, "max_position_embeddings")?.is_none_or(|m| w < m) {
            a.put("window", w);
            a.put("local_layers", local);
        }
    }
    Ok(e)
}

/// GLM-4.5 / GLM-4.5-Air (`Glm4MoeForCausalLM`, `models/glm4_moe/modeling_glm4_moe.py`):
/// q/k/v biases with `attention_bias`, per-head q/k norms with `use_qk_norm`; the first
/// `first_k_dense_replace` blocks have a dense MLP `intermediate_size` wide, the others
/// `n_routed_experts` experts `moe_intermediate_size` wide, `n_shared_experts` shared ones
/// (one MLP `n_shared·f_e` wide) and a router (its correction bias is a buffer). The
/// next-token-prediction layers (`num_nextn_predict_layers`) are not built.
/// Example: zai-org/GLM-4.5-Air (h 4,096, L 46, 96 heads, 8 KV, d 128, 128 experts of
/// 1,408, V 151,552): 106,852,245,504.
pub(crate) fn glm4_moe(v: &Value, a: &mut Acc) -> Result<Exact, String> {
    let (h, l, vocab) = sizes(v, (4096, 46, 151_552))?;
    let mut at = attn_with(v, h, 96, None)?;
    at.qkv_bias = bool_or(v, "attention_bias", false)?;
    at.qk_norm = bool_or(v, "use_qk_norm", false)?;
    let mut d = dense(
        h,
        l,
        vocab,
        bool_or(v, "tie_word_embeddings", false)?,
        at,
        int_or(v, "intermediate_size", 10_944)?,
    );
    let f_e = int_or(v, "moe_intermediate_size", 1408)?;
    d.moe = Some(Moe {
        experts: pos("n_routed_experts", int_or(v, "n_routed_experts", 128)?)?,
        top_k: int_or(v, "num_experts_per_tok", 8)?,
        f_e,
        f_s: f_e * int_or(v, "n_shared_experts", 1)?,
        ..Moe::default()
    });
    d.moe_layers = l.saturating_sub(int_or(v, "first_k_dense_replace", 1)?);
    Ok(d.count(a, "glm4_moe", v))
}

/// ERNIE 4.5 MoE (`Ernie4_5_MoeForCausalLM`, `models/ernie4_5_moe/`): biases on every
/// projection and the LM head with `use_bias`; MoE blocks are those with
/// `(i + 1) % moe_layer_interval == 0` and `moe_layer_start_index ≤ i ≤
/// moe_layer_end_index` (−1 = the last), each `moe_num_experts` gated experts
/// `moe_intermediate_size` wide, one shared MLP `moe_num_shared_experts·f_e` wide, a router
/// and its learned correction bias (`E`); tied by default.
/// Example: baidu/ERNIE-4.5-21B-A3B-PT (h 2,560, L 28, 20 heads, 4 KV, 64 experts of
/// 1,536, 2 shared, V 103,424): 21,825,437,888.
pub(crate) fn ernie45_moe(v: &Value, a: &mut Acc) -> Result<Exact, String> {
    let (h, l, vocab) = sizes(v, (2560, 28, 103_424))?;
    let bias = bool_or(v, "use_bias", false)?;
    let mut at = attn_with(v, h, 20, None)?;
    (at.qkv_bias, at.o_bias) = (bias, bias);
    let mut d = dense(
        h,
        l,
        vocab,
        bool_or(v, "tie_word_embeddings", true)?,
        at,
        int_or(v, "intermediate_size", 12_288)?,
    );
    d.mlp_bias = bias;
    d.head_bias = bias;
    let f_e = int_or(v, "moe_intermediate_size", 1536)?;
    let interval = pos("moe_layer_interval", int_or(v, "moe_layer_interval", 1)?)?;
    let start = int_or(v, "moe_layer_start_index", 1)?;
    let end = match v.get("moe_layer_end_index").and_then(Value::as_i64) {
        None | Some(-1) => l - 1,
        Some(e) if e >= 0 => e as u64,
        Some(e) => {
            return Err(format!(
                "config.json: `moe_layer_end_index` = {e} is not a block index"
            ))
        }
    };
    d.moe_layers = (0..l)
        .filter(|i| (i + 1) % interval == 0 && *i >= start && *i <= end)
        .count() as u64;
    d.moe = Some(Moe {
        experts: pos(
            "moe_num_experts",
            int_alias(v, &["moe_num_experts", "num_experts"], 64)?,
        )?,
        top_k: int_alias(v, &["moe_k", "num_experts_per_tok"], 6)?,
        f_e,
        f_s: f_e * int_or(v, "moe_num_shared_experts", 2)?,
        router_bias: true,
        shared_bias: bias,
    });
    Ok(d.count(a, "ernie4_5_moe", v))
}

/// MiniMax-Text-01 (`MiniMaxForCausalLM`, `models/minimax/modeling_minimax.py`): blocks of
/// softmax attention or lightning (linear) attention by `layer_types` (else the Hub's
/// `attn_type_list`, 1 = softmax; else transformers' default, every other block), each
/// with an MoE of `num_local_experts` gated experts `intermediate_size` wide and a router.
/// Example: MiniMaxAI/MiniMax-Text-01 (h 6,144, L 80: 10 softmax, 70 lightning; 64 heads,
/// 8 KV, d 128; 32 experts of 9,216; V 200,064): 456,089,655,296.
pub(crate) fn minimax(v: &Value, a: &mut Acc) -> Result<Exact, String> {
    let (h, l, vocab) = sizes(v, (4096, 32, 32_000))?;
    let at = attn_with(v, h, 32, None)?;
    let spell = |s: &str| match s {
        "full_attention" | "attention" => Some(Kind::Attention),
        "linear_attention" => Some(Kind::Mamba),
        _ => None,
    };
    let linear = match kinds(v, &["layer_types"], spell)? {
        Some(ks) => {
            if ks.len() as u64 != l {
                return Err(format!(
                    "config.json: `layer_types` lists {} blocks, `num_hidden_layers` is {l}",
                    ks.len()
                ));
            }
            count(&ks, Kind::Mamba)
        }
        None => match v.get("attn_type_list").and_then(Value::as_array) {
            Some(xs) if xs.len() as u64 == l => {
                xs.iter().filter(|x| x.as_u64() == Some(0)).count() as u64
            }
            Some(_) => {
                return Err("config.json: `attn_type_list` must list one 0 or 1 per block".into())
            }
            None => l / 2,
        },
    };
    let f = int_or(v, "intermediate_size", 14_336)?;
    let mut d = dense(
        h,
        l,
        vocab,
        bool_or(v, "tie_word_embeddings", false)?,
        at,
        f,
    );
    d.linear_layers = linear;
    d.moe = Some(Moe {
        experts: pos("num_local_experts", int_or(v, "num_local_experts", 8)?)?,
        top_k: int_or(v, "num_experts_per_tok", 2)?,
        f_e: f,
        ..Moe::default()
    });
    d.moe_layers = l;
    Ok(d.count(a, "minimax", v))
}

/// VaultGemma (`VaultGemmaForCausalLM`, transformers 5.24
/// `models/vaultgemma/modeling_vaultgemma.py`): Gemma's gated GELU block with two norms
/// (input, pre-feed-forward), biases on all four projections with `attention_bias`, tied
/// by default. Example: a 1B shape (h 1,152, L 26, 4 heads, 1 KV, d 256, f 6,912,
/// V 256,000, tied): 992,734,848.
pub(crate) fn vaultgemma(v: &Value, a: &mut Acc) -> Result<Exact, String> {
    let (h, l, vocab) = sizes(v, (2304, 26, 256_000))?;
    let mut at = attn_with(v, h, 8, Some(256))?;
    let bias = bool_or(v, "attention_bias", false)?;
    (at.qkv_bias, at.o_bias) = (bias, bias);
    let d = dense(
        h,
        l,
        vocab,
        bool_or(v, "tie_word_embeddings", true)?,
        at,
        int_or(v, "intermediate_size", 9216)?,
    );
    Ok(d.count(a, "vaultgemma", v))
}

/// Helium (`HeliumForCausalLM`, transformers 5.24 `models/helium/modeling_helium.py`):
/// q/k/v biases with `attention_bias`, an o projection `hidden_size → hidden_size` (so
/// `a·d` must be `h` for the model to run; transformers builds it so whatever `head_dim`
/// says), MLP biases with `mlp_bias`.
/// Example: a 2B shape (h 2,048, L 28, 16 heads, 8 KV, d 128, f 8,192, V 64,000,
/// untied): 2,023,868,416.
pub(crate) fn helium(v: &Value, a: &mut Acc) -> Result<Exact, String> {
    let (h, l, vocab) = sizes(v, (2560, 24, 48_000))?;
    let mut at = attn_with(v, h, 20, Some(128))?;
    at.qkv_bias = bool_or(v, "attention_bias", false)?;
    let mlp_bias = bool_or(v, "mlp_bias", false)?;
    let f = int_or(v, "intermediate_size", 7040)?;
    let tied = bool_or(v, "tie_word_embeddings", false)?;
    let (ad, kvd, lu) = (at.heads * at.head_dim, at.kv_heads * at.head_dim, l as u128);
    let mut t = Tally::default();
    t.module(linear(h, ad, at.qkv_bias), lu);
    t.module(linear(h, kvd, at.qkv_bias), 2 * lu);
    t.module(linear(h, h, false), lu);
    mlp(&mut t, h, f, true, mlp_bias, lu);
    t.vector(2 * h as u128, lu);
    ends(&mut t, vocab, h, h, tied);
    transformer_keys(a, h, l, vocab, Some(at), f, tied);
    Ok(Exact {
        tally: t,
        mix: LayerMix::default(),
    })
}
