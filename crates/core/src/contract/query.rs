//! Settings ⇄ query string.
//!
//! The query string is a public contract shared by the page, the CLI and the
//! tests. Keys are short and stable, declared once in [`KEYS`](super::keys::KEYS);
//! `v=1` names the format version. Decoding never panics and never turns a typo
//! into a number: an unknown key is ignored (with a warning), a bad value keeps the
//! default and produces a warning that names the key and the value.
//! `decode(encode(s)) == s` for every valid `s`.

pub use super::keys::{key, Key, KEYS, VERSION};
use super::settings::Settings;
use crate::estimate::Warning;

/// The README's key table (markdown), generated from [`KEYS`] and the defaults so
/// the documentation cannot drift (a test compares it with README.md). Not in the page's
/// wasm modules (see [`Key::meaning`]).
#[cfg(not(target_arch = "wasm32"))]
pub fn markdown_table() -> String {
    let d = Settings::default();
    let mut t = String::from(
        "| key | meaning | unit | default | allowed values |\n|---|---|---|---|---|\n",
    );
    for k in KEYS {
        let v = (k.get)(&d);
        let default = if v.is_empty() {
            "—".to_string()
        } else {
            format!("`{v}`")
        };
        t.push_str(&format!(
            "| `{}` | {} | {} | {} | {} |\n",
            k.name,
            k.meaning,
            k.unit,
            default,
            k.allowed_text()
        ));
    }
    t
}

/// Sets one key from its string value (the same parser serves the URL and the form).
/// `Ok(Some(note))`: the value was used and `note` says what else it changed.
///
/// # Errors
/// A message naming what is wrong with the value; the settings are unchanged.
pub fn set_key(s: &mut Settings, name: &str, value: &str) -> Result<Option<String>, String> {
    match key(name) {
        Some(k) => (k.set)(s, value),
        None => Err(format!("unknown key `{name}` ignored")),
    }
}

/// The canonical string value of one key (empty for "not set / preset value").
pub fn get_key(s: &Settings, name: &str) -> String {
    key(name).map(|k| (k.get)(s)).unwrap_or_default()
}

/// Percent-encodes a value for a query string (RFC 3986 unreserved characters stay).
pub fn percent_encode(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for b in v.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Decodes `%XX` escapes and `+` (space); invalid escapes stay as written and
/// invalid UTF-8 is replaced, so this never fails.
pub fn percent_decode(v: &str) -> String {
    let bytes = v.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Encodes settings: `v=1` followed by every key whose value differs from the
/// default, in canonical order.
///
/// ```
/// use memfit_core::contract::{query::{encode, decode}, Settings};
/// use memfit_core::scenario::{count, Sharding, Zero};
/// let mut s = Settings::default();
/// s.scenario.sharding = Sharding::Zero(Zero::Z3);
/// s.scenario.cluster.gpus_per_node = count(8);
/// assert_eq!(encode(&s), "v=1&gpus_per_node=8&zero=3");
/// assert_eq!(decode(&encode(&s)).0, s);
/// ```
pub fn encode(s: &Settings) -> String {
    let d = defaults();
    let mut out = format!("v={VERSION}");
    for (k, dv) in KEYS[1..].iter().zip(d) {
        let v = (k.get)(s);
        if v != *dv {
            out.push('&');
            out.push_str(k.name);
            out.push('=');
            out.push_str(&percent_encode(&v));
        }
    }
    out
}

/// Whether key `name` of `s` differs from its default (false for an unknown key).
///
/// ```
/// use memfit_core::contract::{query::{decode, differs_from_default}};
/// let (s, _) = decode("layers=40");
/// assert!(differs_from_default(&s, "layers") && !differs_from_default(&s, "frag"));
/// ```
pub fn differs_from_default(s: &Settings, name: &str) -> bool {
    match KEYS[1..].iter().position(|k| k.name == name) {
        Some(i) => (KEYS[i + 1].get)(s) != defaults()[i],
        None => false,
    }
}

/// Every key's value in the default settings (`KEYS[1..]`, in order), written once: the
/// page encodes its settings two or three times a keystroke (the address bar, the
/// fewest-GPU search's request), and building the defaults and writing their ~100 values
/// again each time was half of it.
fn defaults() -> &'static [String] {
    static D: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    D.get_or_init(|| {
        let d = Settings::default();
        KEYS[1..].iter().map(|k| (k.get)(&d)).collect()
    })
}

/// Applies an imported `config.json`: selects the base preset, then sets each key
/// through the same parser as the URL. Returns problems as warnings.
pub fn apply_import(s: &mut Settings, imported: &crate::hfconfig::Imported) -> Vec<Warning> {
    s.scenario.select_model(imported.base);
    let mut warnings = Vec::new();
    for (k, v) in &imported.keys {
        match set_key(s, k, v) {
            Ok(None) => {}
            Ok(Some(message)) | Err(message) => warnings.push(Warning {
                key: (*k).into(),
                value: v.clone(),
                message,
            }),
        }
    }
    // An exact count the keys' transformer shape does not reproduce (state-space and
    // hybrid families): explicit `params` and `largest_layer`.
    if let Some(p) = imported.params {
        if s.scenario.arch().params().total != p {
            s.scenario.model.params = Some(p);
            s.scenario.model.largest_layer = imported.largest_layer;
        }
    }
    if let Some(m) = &imported.layer_mix {
        for (k, v) in mix_keys(m) {
            if let Ok(Some(message)) | Err(message) = set_key(s, k, &v) {
                warnings.push(Warning {
                    key: k.into(),
                    value: v,
                    message,
                });
            }
        }
    }
    for n in &imported.notes {
        warnings.push(Warning {
            key: "model".into(),
            value: imported.model_type.clone(),
            message: n.clone(),
        });
    }
    warnings
}

/// The settings of a JSON object of query keys (`memfit --json`): `{"model": "gpt2",
/// "zero": 2, "gpus_per_node": 4}`. Each value is the key's query value — a string, a
/// number, `true`/`false` (read as `1`/`0`) or `null` (the default) — read by the same
/// [`KEYS`] as a link, but strictly: an unknown key or a value the key rejects is an error
/// naming it, not a warning.
///
/// ```
/// use memfit_core::contract::query::{decode, decode_json, encode_json};
/// let s = decode_json(r#"{"model": "gpt2", "zero": 2, "gpus_per_node": 4, "sp": false}"#).unwrap();
/// assert_eq!(s, decode("model=gpt2&zero=2&gpus_per_node=4").0);
/// assert!(decode_json(r#"{"tp": "abc"}"#).unwrap_err().contains("tp"));
/// assert!(decode_json(r#"{"tpp": 2}"#).unwrap_err().contains("unknown key `tpp`"));
/// assert_eq!(decode_json(&encode_json(&s).to_string()).unwrap(), s);
/// ```
pub fn decode_json(text: &str) -> Result<Settings, String> {
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    let obj = v
        .as_object()
        .ok_or("the JSON must be an object of query keys")?;
    let mut pairs = Vec::with_capacity(obj.len());
    for (k, x) in obj {
        if !KEYS.iter().any(|key| key.name == k) {
            return Err(format!("unknown key `{k}`"));
        }
        let value = match x {
            serde_json::Value::Null => continue,
            serde_json::Value::Bool(b) => (*b as u8).to_string(),
            serde_json::Value::Number(n) => n.to_string(),
            serde_json::Value::String(s) => s.clone(),
            other => return Err(format!("`{k}`: {other} is not a query value")),
        };
        pairs.push((k.as_str(), value));
    }
    // The keys in the codec's canonical order (the model first), as `decode` applies them.
    let rank = |k: &str| KEYS.iter().position(|x| x.name == k).unwrap_or(KEYS.len());
    pairs.sort_by_key(|(k, _)| rank(k));
    let mut s = Settings::default();
    for (k, v) in pairs {
        set_key(&mut s, k, &v).map_err(|e| format!("`{k}`: {e}"))?;
    }
    Ok(s)
}

/// The settings as a JSON object of query keys (what [`decode_json`] reads): the keys
/// [`encode`] writes, with their query values as strings.
pub fn encode_json(s: &Settings) -> serde_json::Value {
    let q = encode(s);
    let map = q
        .split('&')
        .filter_map(|p| p.split_once('='))
        .map(|(k, v)| {
            (
                percent_decode(k),
                serde_json::Value::String(percent_decode(v)),
            )
        })
        .collect();
    serde_json::Value::Object(map)
}

/// The query keys that carry an imported [`LayerMix`](crate::model::LayerMix): the block
/// counts (`attn_layers` only where it differs from `L − L_m − L_c − L_lin`: Falcon-H1's
/// parallel blocks, Nemotron-H's MLP-only blocks) and the Mamba shape (`ssm_*`; Mamba-2's
/// groups and heads), the convolution's kernel `ssm_conv` (the Mamba blocks' when both
/// kinds exist — no published model has both).
pub fn mix_keys(m: &crate::model::LayerMix) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    let others = m
        .mamba
        .saturating_add(m.conv)
        .saturating_add(m.linear_attention);
    if m.attention != m.layers.saturating_sub(others) {
        out.push(("attn_layers", m.attention.to_string()));
    }
    for (k, v) in [
        ("mamba_layers", m.mamba),
        ("conv_layers", m.conv),
        ("linear_layers", m.linear_attention),
    ] {
        if v > 0 {
            out.push((k, v.to_string()));
        }
    }
    if m.conv > 0 && m.conv_kernel > 0 {
        out.push(("ssm_conv", m.conv_kernel.to_string()));
    }
    if let (true, Some(ssm)) = (m.mamba > 0, m.ssm) {
        out.push(("ssm_version", ssm.version.to_string()));
        out.push(("ssm_inner", ssm.d_inner.to_string()));
        out.push(("ssm_state", ssm.d_state.to_string()));
        if ssm.version == 2 {
            out.push(("ssm_groups", ssm.groups.to_string()));
            out.push(("ssm_heads", ssm.heads.to_string()));
            if ssm.chunk > 0 && ssm.chunk != 256 {
                out.push(("ssm_chunk", ssm.chunk.to_string()));
            }
        }
        out.retain(|(k, _)| *k != "ssm_conv");
        out.push(("ssm_conv", ssm.conv_kernel.to_string()));
    }
    if let (true, Some(g)) = (m.linear_attention > 0, m.linear) {
        out.push(("lin_k_heads", g.k_heads.to_string()));
        out.push(("lin_v_heads", g.v_heads.to_string()));
        out.push(("lin_k_dim", g.k_dim.to_string()));
        out.push(("lin_v_dim", g.v_dim.to_string()));
        if !out.iter().any(|(k, _)| *k == "ssm_conv") {
            out.push(("ssm_conv", g.conv_kernel.to_string()));
        }
    }
    if let (true, Some(g)) = (m.linear_attention > 0, m.lightning) {
        out.push(("lin_kind", "lightning".to_string()));
        out.push(("lin_v_heads", g.heads.to_string()));
        out.push(("lin_v_dim", g.head_dim.to_string()));
    }
    out
}

/// Decodes a query string (with or without the leading `?`). Never fails: bad
/// values keep the default and come back as warnings naming key and value.
pub fn decode(query: &str) -> (Settings, Vec<Warning>) {
    decode_onto(Settings::default(), query)
}

/// Applies a query string on top of `base` (an imported config's settings: the query's
/// keys win), with the same per-key warnings as [`decode`].
///
/// The keys are applied in canonical order (the model first, `zero` before `fsdp`,
/// `finetune` before the adapters' keys), so a link means the same whatever the order
/// of its keys; of a repeated key the last value wins. Warnings come in the order of
/// the query (repeated keys first), the model's first.
pub fn decode_onto(base: Settings, query: &str) -> (Settings, Vec<Warning>) {
    let mut s = base;
    let mut warnings = Vec::new();
    let q = query.trim().trim_start_matches('?');
    let mut seen: Vec<String> = Vec::new();
    let mut pairs: Vec<(usize, String, String)> = Vec::new();
    for (i, part) in q.split('&').filter(|p| !p.is_empty()).enumerate() {
        let (k, v) = part.split_once('=').unwrap_or((part, ""));
        let (k, v) = (percent_decode(k), percent_decode(v));
        if seen.contains(&k) {
            warnings.push(Warning {
                key: k.clone(),
                value: v.clone(),
                message: format!("`{k}` is given more than once; the last value wins"),
            });
        } else {
            seen.push(k.clone());
        }
        pairs.push((i, k, v));
    }
    let rank = |k: &str| KEYS.iter().position(|x| x.name == k).unwrap_or(KEYS.len());
    pairs.sort_by_key(|(_, k, _)| rank(k));
    let mut later: Vec<((bool, usize), Warning)> = Vec::new();
    for (i, k, v) in pairs {
        let order = (k != "model", i);
        match set_key(&mut s, &k, &v) {
            Ok(None) => {}
            Ok(Some(message)) => later.push((
                order,
                Warning {
                    key: k,
                    value: String::new(),
                    message,
                },
            )),
            Err(mut message) => {
                if key(&k).is_some() && k != "v" {
                    let kept = get_key(&s, &k);
                    message.push_str(&format!(
                        "; using {}",
                        if kept.is_empty() {
                            empty_means(&k).into()
                        } else {
                            format!("`{kept}`")
                        }
                    ));
                }
                later.push((
                    order,
                    Warning {
                        key: k,
                        value: v,
                        message,
                    },
                ));
            }
        }
    }
    later.sort_by_key(|(order, _)| *order);
    warnings.extend(later.into_iter().map(|(_, w)| w));
    (s, warnings)
}

/// What an empty key stands for, as an input problem names the value kept: a serving key's
/// empty is the engine's default (for its release, GPU and layout), a model key's the
/// preset's value.
fn empty_means(k: &str) -> &'static str {
    use crate::scenario::{mode_reads, Mode};
    match k {
        "max_len" => return "the model's context",
        "ngl" => return "every layer",
        "engine_version" => return "the newest modelled release",
        _ => {}
    }
    if mode_reads(k, Mode::Serve) && !mode_reads(k, Mode::Train) && !mode_reads(k, Mode::Infer) {
        "the engine's default"
    } else {
        "the preset's value"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{count, Fsdp, LoraTargets, Sharding, Tuning, Zero};

    /// A bad value names what the empty key stands for: the engine's default for a serving
    /// knob, the model's context for `max_len`, every layer for `ngl`, the preset's value for
    /// a model key.
    #[test]
    fn bad_values_name_what_empty_means() {
        let (_, w) = decode("mode=serve&graph_bs=-3&max_len=0&ngl=-1&params=-1");
        let said = |k: &str| w.iter().find(|x| x.key == k).unwrap().message.clone();
        assert!(said("graph_bs").ends_with("using the engine's default"));
        assert!(said("max_len").ends_with("using the model's context"));
        assert!(said("ngl").ends_with("using every layer"));
        assert!(said("params").ends_with("using the preset's value"));
    }

    #[test]
    fn default_encodes_to_version_only() {
        assert_eq!(encode(&Settings::default()), "v=1");
        assert_eq!(decode("").0, Settings::default());
    }

    #[test]
    fn malformed_url_from_the_issue() {
        let (s, w) = decode("?batch=-3&zero=9&tp=abc&model=%3Cscript%3Ealert(1)%3C/script%3E");
        assert_eq!(s, Settings::default());
        let keys: Vec<&str> = w.iter().map(|w| w.key.as_str()).collect();
        assert_eq!(keys, ["model", "batch", "zero", "tp"]);
        assert_eq!(w[0].value, "<script>alert(1)</script>");
        assert!(w[1].message.contains("negative"), "{}", w[1].message);
        assert!(w[3].message.contains("`abc` is not a whole number"));
    }

    #[test]
    fn unknown_and_duplicate_keys_warn() {
        let (s, w) = decode("tpp=2&tp=2&tp=4");
        assert_eq!(s.scenario.parallel.tp, count(4));
        assert_eq!(w.len(), 2);
        assert!(w
            .iter()
            .any(|w| w.key == "tpp" && w.message.contains("unknown key")));
    }

    #[test]
    fn scientific_and_grouped_counts() {
        let (s, w) = decode("params=2851e6&largest_layer=32_000_000");
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(s.scenario.model.params, Some(2_851_000_000));
        assert_eq!(s.scenario.model.largest_layer, Some(32_000_000));
        assert!(decode("params=1.5e0").1[0].message.contains("whole"));
    }

    #[test]
    fn zero_is_not_a_count() {
        for k in [
            "tp",
            "pp",
            "cp",
            "ep",
            "vpp",
            "batch",
            "seq",
            "microbatches",
            "nodes",
        ] {
            let (s, w) = decode(&format!("{k}=0"));
            assert_eq!(s, Settings::default(), "{k}");
            assert!(w[0].message.contains("outside 1–"), "{k}: {w:?}");
        }
    }

    #[test]
    fn percent_coding_round_trips() {
        for v in ["a b", "<x>&=?", "é", "%", "%zz", "100%"] {
            let enc = percent_encode(v);
            assert_eq!(percent_decode(&enc), v);
        }
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
    }

    #[test]
    fn model_applies_before_overrides() {
        let (s, _) = decode("layers=40&model=llama-3-8b");
        assert_eq!(s.scenario.model.preset, "llama-3-8b");
        assert_eq!(s.scenario.arch().layers.get(), 40);
    }

    /// Keys apply in canonical order: a link means the same whatever its order.
    #[test]
    fn key_order_does_not_matter() {
        let a = decode("lora_rank=64&finetune=qlora&double_quant=0&fsdp=full_shard&tp=2").0;
        let b = decode("tp=2&fsdp=full_shard&double_quant=0&finetune=qlora&lora_rank=64").0;
        assert_eq!(a, b);
        assert_eq!(
            a.scenario.finetune,
            Tuning::Qlora {
                rank: count(64),
                targets: LoraTargets::All,
                double_quant: false
            }
        );
        assert_eq!(a.scenario.sharding, Sharding::Fsdp(Fsdp::FullShard));
    }

    /// One sharding: an FSDP strategy replaces a ZeRO stage, and says so.
    #[test]
    fn fsdp_and_zero_are_one_setting() {
        let (s, w) = decode("zero=2&fsdp=full_shard");
        assert_eq!(s.scenario.sharding, Sharding::Fsdp(Fsdp::FullShard));
        assert_eq!(w.len(), 1);
        assert_eq!(
            w[0].message,
            "fsdp=full_shard sets the sharding; zero=2 is ignored"
        );
        assert_eq!(encode(&s), "v=1&fsdp=full_shard");
        let (s, w) = decode("zero=3&fsdp=none");
        assert!(w.is_empty());
        assert_eq!(s.scenario.sharding, Sharding::Zero(Zero::Z3));
    }

    /// Adapters' keys without adapters are said to be ignored (the default is silent).
    #[test]
    fn adapter_keys_need_adapters() {
        let (s, w) = decode("lora_rank=32&lora_targets=qv");
        assert_eq!(s, Settings::default());
        assert_eq!(w.len(), 2);
        assert!(w[0].message.contains("applies to finetune=lora"), "{w:?}");
        // double_quant also sets the nf4 weight format's; without either reader the
        // estimate says it is ignored.
        let (s, w) = decode("double_quant=0");
        assert!(w.is_empty() && !s.scenario.double_quant());
        let e = crate::estimate::estimate(&s.scenario);
        assert!(
            e.warnings.iter().any(|w| w.key == "double_quant"),
            "{:?}",
            e.warnings
        );
        assert!(decode("lora_rank=16&lora_targets=all&double_quant=1")
            .1
            .is_empty());
        // LoRA keeps its settings when it becomes QLoRA in the form.
        let (mut s, _) = decode("finetune=lora&lora_rank=8&lora_targets=attn");
        set_key(&mut s, "finetune", "qlora").unwrap();
        assert_eq!(
            s.scenario.finetune.adapters(),
            Some((count(8), LoraTargets::Attn))
        );
    }

    /// The README's text of the accepted values comes from the declaration.
    #[test]
    fn allowed_text_is_generated() {
        let text = |n: &str| key(n).unwrap().allowed_text();
        assert_eq!(text("tp"), "1–1048576");
        assert_eq!(text("params"), "1–10^15, empty = from the architecture");
        assert_eq!(text("reduce_bucket"), "0–10^12");
        assert_eq!(
            text("precision"),
            "`bf16`, `fp16` (mixed, fp32 master), `fp32`, `bf16-pure` (no master), `fp8` (bf16 + fp8 copies, fp32 master)"
        );
        assert_eq!(
            text("mlp"),
            "`gelu` (2 matrices), `swiglu` (3 matrices), empty = preset"
        );
        assert_eq!(key("seq").unwrap().bounds(), Some((1, 1 << 26)));
        let choices = key("zero").unwrap().choices();
        assert_eq!(
            choices[3],
            ("3".to_string(), "3 — + parameters".to_string())
        );
    }

    #[test]
    fn every_key_has_a_getter_and_setter() {
        let s = Settings::default();
        for k in KEYS {
            let mut t = s.clone();
            let v = (k.get)(&s);
            assert!(set_key(&mut t, k.name, &v).is_ok(), "{}={v}", k.name);
            assert_eq!(t, s, "{}", k.name);
        }
    }
}
