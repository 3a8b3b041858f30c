//! Hugging Face `config.json` → memfit model keys.
//!
//! Reads the fields that fix the weight shapes for the common families ([`SUPPORTED`]);
//! an unknown `model_type` with the standard decoder fields is read as a Llama-style
//! block with a note saying so ([`generic::generic`]), unless the config holds a field that block
//! does not read and that may change the weights (then it is refused by name). A field
//! that changes the weights and that memfit cannot express is refused by name; a missing
//! required field is named in the error. The result is a list of query keys, so the
//! import goes through the same validated path as the URL and the form.
//!
//! State-space, hybrid and 2024–2025 families whose blocks the keys cannot express
//! (`hybrid`, `decoders`) are counted exactly module by module as transformers builds
//! them: the import carries the count ([`Imported::params`], applied as an explicit
//! `params` where the keys' own count differs) and how the blocks divide
//! ([`Imported::layer_mix`], which `apply_import` sets as the `attn_layers`,
//! `mamba_layers`, `conv_layers`, `linear_layers` and `ssm_*` keys), with a note saying
//! what of those blocks the memory model does not model yet.

use serde_json::Value;

mod decoders;
mod families;
mod generic;
mod hybrid;
mod hybrids;
mod novel;
mod ssm;
mod vision;

use crate::model::LayerMix;
pub(crate) use families::*;

/// What an import produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Imported {
    /// `model_type` as read.
    pub model_type: String,
    /// The memfit preset the shape is built on.
    pub base: &'static str,
    /// `(key, value)` pairs to apply after selecting `base`.
    pub keys: Vec<(&'static str, String)>,
    /// Things the import could not represent exactly.
    pub notes: Vec<String>,
    /// The exact parameter count where the keys' transformer shape cannot hold it
    /// (state-space and hybrid families, ...): applied as an explicit `params` when the
    /// shape's own count differs ([`crate::contract::query::apply_import`]).
    pub params: Option<u64>,
    /// The largest module's parameters, with [`Imported::params`].
    pub largest_layer: Option<u64>,
    /// How the blocks of a state-space / hybrid model divide (attention, Mamba, short
    /// convolution, linear attention, MoE); `None` for a plain transformer.
    pub layer_mix: Option<LayerMix>,
}

fn get(v: &Value, names: &[&str]) -> Option<u64> {
    names.iter().find_map(|n| v.get(*n).and_then(Value::as_u64))
}

fn need(v: &Value, names: &[&str]) -> Result<u64, String> {
    get(v, names).ok_or_else(|| format!("config.json lacks `{}`", names[0]))
}

/// Weight-changing fields of decoder configs that the importer cannot express (expert
/// widths, shared experts, dense first layers, MLA ranks, sparse-layer steps).
const UNREPRESENTED: [&str; 8] = [
    "moe_intermediate_size",
    "shared_expert_intermediate_size",
    "n_shared_experts",
    "first_k_dense_replace",
    "q_lora_rank",
    "kv_lora_rank",
    "decoder_sparse_step",
    "mlp_only_layers",
];

/// The import of a family counted exactly ([`exact_family`]): the keys its transformer
/// shape sets, the quantisation's keys, the state-space note, and the exact count (capped
/// at 10^18) with its layer mix.
fn exact_import(
    v: &Value,
    outer_type: String,
    model_type: &str,
    acc: Acc,
    e: hybrid::Exact,
) -> Imported {
    let Acc {
        mut keys,
        mut notes,
        ..
    } = acc;
    if let Some(q) = v.get("quantization_config") {
        quant_keys(q, &mut keys, &mut notes);
    }
    rope_keys(v, &mut keys);
    if e.mix.layers > 0 {
        notes.push(hybrid::ssm_note(model_type, &e.mix));
    }
    // The recurrent state's declared type (Qwen3.5's `mamba_ssm_dtype: float32`).
    let declared = v.get("mamba_ssm_dtype").and_then(Value::as_str);
    if let Some(d) = declared.and_then(|d| match d {
        "float32" => Some("fp32"),
        "bfloat16" => Some("bf16"),
        _ => None,
    }) {
        keys.push(("ssm_dtype", d.to_string()));
    }
    let cap = |x: u128| x.min(1_000_000_000_000_000) as u64;
    Imported {
        model_type: outer_type,
        base: "llama-2-7b",
        keys,
        notes,
        params: Some(cap(e.tally.total)),
        largest_layer: Some(cap(e.tally.largest)),
        layer_mix: (e.mix.layers > 0).then_some(e.mix),
    }
}

/// `rope_partial` from the share of each head the rotary embedding covers: transformers'
/// `partial_rotary_factor` (top level or in `rope_parameters` / `rope_scaling`) or GPT-NeoX's
/// `rotary_pct`; a share under 1 sets it, a share of 1 clears it, no field leaves the preset's.
fn rope_keys(v: &Value, keys: &mut Vec<(&'static str, String)>) {
    let nested = |k: &str| v.get(k).and_then(|r| r.get("partial_rotary_factor"));
    let share = v
        .get("partial_rotary_factor")
        .or_else(|| nested("rope_parameters"))
        .or_else(|| nested("rope_scaling"))
        .or_else(|| v.get("rotary_pct"))
        .and_then(Value::as_f64);
    if let Some(f) = share.filter(|f| *f > 0.0) {
        keys.push(("rope_partial", u8::from(f < 1.0).to_string()));
    }
}

/// Parses a `config.json` text.
///
/// # Errors
/// The JSON does not parse, `model_type` is unknown, or a required field is missing
/// (the message names it).
///
/// # Example
/// ```
/// use memfit_core::hfconfig::parse;
/// let cfg = r#"{"model_type":"llama","hidden_size":4096,"intermediate_size":14336,
///   "num_hidden_layers":32,"num_attention_heads":32,"num_key_value_heads":8,"vocab_size":128256}"#;
/// let i = parse(cfg).unwrap();
/// assert_eq!(i.base, "llama-2-7b");
/// assert!(i.keys.contains(&("kv_heads", "8".to_string())));
/// ```
pub fn parse(text: &str) -> Result<Imported, String> {
    let (mut i, ctx) = parse_decoder(text)?;
    if let Some(c) = ctx {
        i.keys.push(("context", c.to_string()));
    }
    Ok(i)
}

/// The model's context as the text decoder's config gives it (`max_position_embeddings`;
/// GPT-2's `n_positions`), within the `context` key's range: `None` where the config has
/// none (BLOOM and Falcon's ALiBi, T5's relative positions). vLLM derives a longer context
/// from some `rope_scaling` types (YaRN's factor); that is not read: a `max_len` sets it.
fn context_of(v: &Value) -> Option<u64> {
    get(v, &["max_position_embeddings", "n_positions"]).filter(|c| (1..=1 << 27).contains(c))
}

/// [`parse`] without the `context` key, and the context ([`context_of`]).
fn parse_decoder(text: &str) -> Result<(Imported, Option<u64>), String> {
    let text = &json_non_finite_to_null(text);
    let v: Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    if !v.is_object() {
        return Err("config.json must be a JSON object".into());
    }
    let outer_type = v
        .get("model_type")
        .and_then(Value::as_str)
        .ok_or("config.json lacks `model_type`")?
        .to_string();
    let mut acc = Acc::default();
    let (v, model_type) = text_decoder(v, &outer_type, &mut acc)?;
    let ctx = context_of(&v);
    if let Some(family) = exact_family(&model_type) {
        let e = family(&v, &mut acc)?;
        return Ok((exact_import(&v, outer_type, &model_type, acc, e), ctx));
    }
    let tied = v.get("tie_word_embeddings").and_then(Value::as_bool);
    let base = match model_type.as_str() {
        "llama" | "mistral" | "mixtral" | "qwen2" | "qwen2_moe" | "qwen3" | "qwen3_moe"
        | "gemma" | "gemma2" | "gemma3_text" | "phi3" | "olmo" | "olmo2" | "olmoe" | "granite" => {
            llama_family(&v, &model_type, &mut acc)?
        }
        "deepseek_v2" | "deepseek_v3" => deepseek(&v, &model_type, &mut acc)?,
        "llama4_text" => llama4(&v, &mut acc)?,
        "cohere2" => {
            decoder_sizes(&v, &mut acc)?;
            "command-r7b"
        }
        "starcoder2" => starcoder2(&v, &mut acc)?,
        "stablelm" => stablelm(&v, &mut acc)?,
        "opt" => opt(&v, &mut acc)?,
        "phi" => phi(&v, &mut acc)?,
        "phimoe" => phimoe(&v, &mut acc)?,
        "gpt_oss" => gpt_oss(&v, &mut acc)?,
        "cohere" => cohere(&v, &mut acc)?,
        "bloom" => bloom(&v, &mut acc)?,
        "gpt2" => gpt2(&v, &mut acc)?,
        "gpt_neox" => gpt_neox(&v, &mut acc)?,
        "falcon" | "RefinedWeb" | "RefinedWebModel" => falcon(&v, &mut acc)?,
        "t5" | "mt5" => t5(&v, &mut acc)?,
        other => return generic::generic(&v, other).map(|i| (i, ctx)),
    };
    let base = multimodal_base(&outer_type).unwrap_or(base);
    let Acc {
        mut keys,
        notes,
        exact,
    } = acc;
    if let Some(t) = tied {
        keys.push(("tied", (t as u8).to_string()));
    }
    if model_type != "llama4_text" {
        window_keys(&v, &model_type, &mut keys);
    }
    rope_keys(&v, &mut keys);
    let mut notes = notes;
    if let Ok(top) = serde_json::from_str::<Value>(text) {
        if let Some(q) = top.get("quantization_config") {
            quant_keys(q, &mut keys, &mut notes);
        }
    }
    let i = Imported {
        model_type: outer_type,
        base,
        keys,
        notes,
        params: exact.map(|x| x.min(1_000_000_000_000_000) as u64),
        largest_layer: None,
        layer_mix: None,
    };
    Ok((i, ctx))
}

/// The preset a multimodal checkpoint's import stands on, where memfit has one of its
/// family: the import's keys give the shape, the preset what they cannot say — the context
/// (serving's default `max_len`), vLLM's rotary caches (Gemma 3's two, M-RoPE's `4·P`) and
/// the encoder's config shape SGLang reads. Gemma 3 4B–27B share theirs (131,072 positions,
/// linear factor 8), as do Mistral Small 3.1 and 3.2.
fn multimodal_base(outer_type: &str) -> Option<&'static str> {
    Some(match outer_type {
        "gemma3" => "gemma-3-4b",
        "mistral3" => "mistral-small-3.1-24b",
        "qwen2_5_vl" => "qwen2.5-vl-7b",
        "qwen3_vl" => "qwen3-vl-8b",
        _ => return None,
    })
}

/// Python's `json.dumps` writes `Infinity`, `-Infinity` and `NaN` (Mamba-2's
/// `time_step_limit: [0.0, Infinity]`), which are not JSON: outside strings they become
/// `null` (no weight shape is a non-finite number).
fn json_non_finite_to_null(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains("Infinity") && !text.contains("NaN") {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let (mut in_str, mut esc) = (false, false);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if in_str {
            out.push(c);
            if esc {
                esc = false;
            } else if c == '\\' {
                esc = true;
            } else if c == '"' {
                in_str = false;
            }
            rest = &rest[c.len_utf8()..];
            continue;
        }
        if c == '"' {
            in_str = true;
        }
        let word = ["-Infinity", "Infinity", "NaN"]
            .into_iter()
            .find(|w| rest.starts_with(w));
        match word {
            Some(w) => {
                out.push_str("null");
                rest = &rest[w.len()..];
            }
            None => {
                out.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    std::borrow::Cow::Owned(out)
}

/// `quantization_config` → `quant` (and `quant_group`, `double_quant`).
///
/// # Formula
/// ```text
/// quant_method fp8 | modelopt FP8            → fp8
/// compressed-tensors: weights num_bits 8 float → fp8; 8 int → w8a8; 4 int → w4a16 (group_size)
/// gptq | awq with bits 4                     → w4a16 (group_size)
/// bitsandbytes load_in_4bit (nf4)            → nf4 (bnb_4bit_use_double_quant); load_in_8bit → int8
/// mxfp4                                      → mxfp4;  modelopt NVFP4 → nvfp4
/// ```
/// Source: the `quantization_config` blocks of Hugging Face checkpoints (transformers
/// `utils/quantization_config.py`; compressed-tensors `config_groups`).
pub(crate) fn quant_keys(
    q: &Value,
    keys: &mut Vec<(&'static str, String)>,
    notes: &mut Vec<String>,
) {
    let method = q.get("quant_method").and_then(Value::as_str).unwrap_or("");
    let bits = get(q, &["bits", "w_bit"]);
    let group = get(q, &["group_size", "q_group_size"]);
    let mut put = |k: &'static str, v: String| keys.push((k, v));
    let chosen = match method {
        "fp8" | "fbgemm_fp8" => Some("fp8"),
        "mxfp4" => Some("mxfp4"),
        "modelopt" => match q.get("quant_algo").and_then(Value::as_str) {
            Some(a) if a.contains("NVFP4") => Some("nvfp4"),
            Some(a) if a.contains("FP8") => Some("fp8"),
            _ => None,
        },
        "gptq" | "awq" if bits == Some(4) => {
            if let Some(g) = group.filter(|g| *g > 0) {
                put("quant_group", g.to_string());
            }
            Some("w4a16")
        }
        "bitsandbytes" => {
            if q.get("load_in_4bit").and_then(Value::as_bool) == Some(true) {
                let dq = q
                    .get("bnb_4bit_use_double_quant")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                put("double_quant", (dq as u8).to_string());
                Some("nf4")
            } else if q.get("load_in_8bit").and_then(Value::as_bool) == Some(true) {
                Some("int8")
            } else {
                None
            }
        }
        "compressed-tensors" => {
            let w = q
                .get("config_groups")
                .and_then(Value::as_object)
                .and_then(|g| g.values().next())
                .and_then(|g| g.get("weights"));
            let nb = w.and_then(|w| get(w, &["num_bits"]));
            let ty = w
                .and_then(|w| w.get("type"))
                .and_then(Value::as_str)
                .unwrap_or("int");
            match (nb, ty) {
                (Some(8), "float") => Some("fp8"),
                (Some(8), _) => Some("w8a8"),
                (Some(4), "float") => Some("nvfp4"),
                (Some(4), _) => {
                    if let Some(g) = w.and_then(|w| get(w, &["group_size"])).filter(|g| *g > 0) {
                        put("quant_group", g.to_string());
                    }
                    Some("w4a16")
                }
                _ => None,
            }
        }
        _ => None,
    };
    match chosen {
        Some(v) => put("quant", v.to_string()),
        None => notes.push(format!(
            "quantization_config `{method}` is not one of the formats memfit lays out; the weights are counted unquantised (set `quant` by hand)"
        )),
    }
}

/// Keys and notes one import collects.
#[derive(Default)]
pub(crate) struct Acc {
    keys: Vec<(&'static str, String)>,
    notes: Vec<String>,
    /// An exact count where a preset-based reading's keys cannot reach it (Phi-3.5-MoE
    /// without its LM-head bias).
    exact: Option<u128>,
}

impl Acc {
    fn put(&mut self, key: &'static str, x: u64) {
        self.keys.push((key, x.to_string()));
    }
}

/// The standard decoder sizes (`hidden_size`, `num_attention_heads`, `num_hidden_layers`,
/// `num_key_value_heads` (default: the heads), `intermediate_size`, `vocab_size`) as keys.
fn decoder_sizes(v: &Value, a: &mut Acc) -> Result<(), String> {
    let heads = need(v, &["num_attention_heads"])?;
    a.put("hidden", need(v, &["hidden_size"])?);
    a.put("heads", heads);
    a.put("layers", need(v, &["num_hidden_layers"])?);
    a.put(
        "kv_heads",
        get(v, &["num_key_value_heads"]).unwrap_or(heads),
    );
    a.put("ffn", need(v, &["intermediate_size"])?);
    a.put("vocab", need(v, &["vocab_size"])?);
    Ok(())
}

/// The text decoder of a multimodal checkpoint (Llama 4, Gemma 3 4B–27B, Mistral Small
/// 3.1, Qwen2-VL, Qwen2.5-VL and Qwen3-VL): its `text_config` (Qwen2-VL's and Qwen2.5-VL's:
/// the top level when there is none), with `transformers`' defaults for the fields such configs leave
/// out (Gemma 3's heads, head width and vocabulary), and a note that the vision encoder
/// is not counted. Any other config is returned as it is.
fn text_decoder(v: Value, model_type: &str, a: &mut Acc) -> Result<(Value, String), String> {
    let (defaults, inner): (&[(&str, u64)], &str) = match model_type {
        // Gemma3TextConfig's defaults (transformers 5.23).
        "gemma3" => (
            &[
                ("num_attention_heads", 8),
                ("num_key_value_heads", 4),
                ("head_dim", 256),
                ("vocab_size", 262_208),
                ("sliding_window", 4096),
            ],
            "gemma3_text",
        ),
        "llama4" => (&[], "llama4_text"),
        "gemma3n" => (&[], "gemma3n_text"),
        "mistral3" => (&[], "mistral"),
        // Qwen2-VL / Qwen2.5-VL: the published configs keep the decoder's fields at the top
        // level (later transformers write a `text_config`, read when present).
        "qwen2_vl" | "qwen2_5_vl" => (&[], "qwen2"),
        // Qwen3-VL: a `text_config` of `qwen3_vl_text` / `qwen3_vl_moe_text`, read as Qwen3's.
        "qwen3_vl" => (&[], "qwen3"),
        "qwen3_vl_moe" => (&[], "qwen3_moe"),
        // Qwen3.5 / 3.6: gated DeltaNet hybrids (Qwen3-Next's blocks) with Qwen3-VL's encoder.
        "qwen3_5" => (&[], "qwen3_5_text"),
        "qwen3_5_moe" => (&[], "qwen3_5_moe_text"),
        _ => return Ok((v, model_type.to_string())),
    };
    let qwen = model_type.starts_with("qwen");
    let top = matches!(model_type, "qwen2_vl" | "qwen2_5_vl") && v.get("text_config").is_none();
    let flat = top.then(|| v.as_object().cloned()).flatten();
    let Some(Value::Object(text)) = flat
        .map(Value::Object)
        .or_else(|| v.get("text_config").cloned())
    else {
        return Err(format!(
            "model_type `{model_type}` is a multimodal config: memfit reads its `text_config`, which is missing"
        ));
    };
    let mut text = text.clone();
    for (k, d) in defaults {
        text.entry(*k).or_insert((*d).into());
    }
    // Qwen's VL configs give the tying at the top level (the text config may not repeat it).
    if let (true, Some(t)) = (qwen, v.get("tie_word_embeddings")) {
        text.entry("tie_word_embeddings").or_insert(t.clone());
    }
    let inner = match text.get("model_type").and_then(Value::as_str) {
        Some(t) if !top && !qwen => t,
        _ => inner,
    }
    .to_string();
    let h = text.get("hidden_size").and_then(Value::as_u64).unwrap_or(0);
    match vision::vision_params(&v, model_type, h) {
        Some(n) => {
            a.put("vision", n);
            a.notes.push(format!(
                "`{model_type}` is a multimodal checkpoint: memfit counts and models its text decoder (`{inner}`); its vision encoder and projector ({} parameters) are counted when served (`vision`), not in training or inference",
                crate::units::group_digits(n)
            ));
        }
        None => a.notes.push(format!(
            "`{model_type}` is a multimodal checkpoint: memfit counts and models its text decoder (`{inner}`); the vision encoder and projector are not counted"
        )),
    }
    Ok((Value::Object(text), inner))
}

/// Fields that change the weights and that the query keys cannot express
/// ([`UNREPRESENTED`], and Llama/Granite's `attention_bias` / `mlp_bias`, neither
/// expressible with one `bias` key): refused by name rather than counting a different model.
fn refuse_unrepresented(v: &Value, model_type: &str) -> Result<(), String> {
    let mut unknown: Vec<&str> = UNREPRESENTED
        .iter()
        .copied()
        .filter(|k| v.get(*k).is_some_and(|x| !x.is_null()))
        .collect();
    for flag in ["attention_bias", "mlp_bias"] {
        if v.get(flag).and_then(Value::as_bool) == Some(true) {
            unknown.push(flag);
        }
    }
    if unknown.is_empty() {
        return Ok(());
    }
    Err(format!(
        "model_type `{model_type}`: {} {} the weights and memfit's import cannot represent {} yet; refusing rather than counting a different model",
        unknown.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", "),
        if unknown.len() == 1 { "changes" } else { "change" },
        if unknown.len() == 1 { "it" } else { "them" }
    ))
}

/// The model types read exactly (or, for a few, with a note), in the refusal message.
pub const SUPPORTED: &str = "llama, llama4, mistral, mistral3, mixtral, qwen2, qwen2_vl, qwen2_5_vl, qwen2_moe, qwen3_vl, qwen3_vl_moe, qwen3, qwen3_moe, gemma, gemma2, gemma3, gemma3_text, phi, phi3, phimoe, olmo, olmo2, olmoe, granite, cohere, cohere2, gpt_oss, deepseek_v2, deepseek_v3, starcoder2, stablelm, opt, bloom, gpt2, gpt_neox, falcon, t5, mt5; counted exactly module by module: mamba, mamba2, falcon_mamba, jamba, bamba, nemotron_h, falcon_h1, granitemoehybrid, lfm2, qwen3_next, qwen3_5, qwen3_5_moe, gemma3n, gemma3n_text, vaultgemma, helium, glm4, glm4_moe, seed_oss, olmo3, hunyuan_v1_dense, hunyuan_v1_moe, apertus, exaone4, ernie4_5_moe, minimax";

/// A family counted exactly by `hybrid` or `decoders`.
pub(crate) type Family = fn(&Value, &mut Acc) -> Result<hybrid::Exact, String>;

/// The exact importer of a `model_type`, if it has one.
pub(crate) fn exact_family(model_type: &str) -> Option<Family> {
    Some(match model_type {
        "mamba" | "falcon_mamba" => ssm::mamba,
        "mamba2" => ssm::mamba2,
        "jamba" => ssm::jamba,
        "bamba" => ssm::bamba,
        "nemotron_h" => hybrids::nemotron_h,
        "falcon_h1" => hybrids::falcon_h1,
        "granitemoehybrid" => hybrids::granite_hybrid,
        "lfm2" => hybrids::lfm2,
        "glm4" => decoders::glm4,
        "glm4_moe" => decoders::glm4_moe,
        "seed_oss" => decoders::seed_oss,
        "olmo3" => decoders::olmo3,
        "hunyuan_v1_dense" => decoders::hunyuan_dense,
        "hunyuan_v1_moe" => decoders::hunyuan_moe,
        "apertus" => decoders::apertus,
        "exaone4" => decoders::exaone4,
        "ernie4_5_moe" => decoders::ernie45_moe,
        "minimax" => decoders::minimax,
        "qwen3_next" | "qwen3_5_moe_text" => novel::qwen3_next,
        "qwen3_5_text" => novel::qwen3_5,
        "gemma3n_text" => novel::gemma3n,
        "vaultgemma" => decoders::vaultgemma,
        "helium" => decoders::helium,
        _ => return None,
    })
}

#[cfg(test)]
mod tests;
