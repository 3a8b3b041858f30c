//! Every query key, declared once: its name, what it means, its unit, the values it
//! accepts (range or spellings), the form's label, and how it is read from and written
//! to [`Settings`]. The codec (`query`), `memfit --help`, the README's key table
//! (`memfit --keys-markdown`) and the form's bounds and options are all generated from
//! [`KEYS`]; enum spellings come from their [`spelled!`](crate::spelled) declarations.

use super::settings::{FitColour, Settings};
use crate::decimal::parse_f64;
use crate::gpu::{gpu, GPUS};
use crate::model::{preset, Bias, LinKind, Mlp, Norm, SsmDtype};
use crate::quant::Quant;
use crate::scenario::{
    AdamImpl, Attn, CeFusion, Convention, Count, CtxPer, Device, Dtype, Engine, Finetune,
    FlashAttn, Fp8Recipe, Framework, Fsdp, GradAcc, LlamaFit, Logits, LoraTargets, Loss, Mode,
    Modules, Offload, Optimizer, Precision, Recompute, Sampler, Schedule, Sharding, Solve,
    SsmKernels, Tf32, Tuning, Version, Zero,
};
use crate::spelling::{Spelled, Spelling};
use crate::units::Units;

/// Format version written as `v=`.
pub const VERSION: u32 = 1;

/// The values a key accepts.
#[derive(Clone, Copy)]
pub enum Values {
    /// A whole number in `lo..=hi`; `empty`: the empty string (or `auto`, for `dp`) means
    /// "not set" (the preset's value, or what the cluster leaves).
    Int {
        /// Smallest accepted value.
        lo: u64,
        /// Largest accepted value.
        hi: u64,
        /// Whether the key may be left empty.
        empty: bool,
    },
    /// A number `0 < x ≤ hi`.
    Float {
        /// Largest accepted value.
        hi: f64,
    },
    /// `0` or `1` (also `true`/`false`, `yes`/`no`, `on`/`off`), with the form's labels.
    Bool {
        /// The form's label for 0.
        off: &'static str,
        /// The form's label for 1.
        on: &'static str,
        /// Whether the key may be left empty (the preset's value).
        empty: bool,
    },
    /// One of an enum's spellings; `empty`: the empty string means the preset's value.
    Options {
        /// `(spelling, label, note)` of every option.
        options: fn() -> Vec<Spelling>,
        /// Whether the key may be left empty.
        empty: bool,
    },
    /// A model preset id.
    Preset,
    /// A GPU preset id.
    Gpu,
    /// The format version.
    Version,
    /// Free text the key's parser checks (an engine version).
    Text,
}

/// A value's effect besides setting the key: a warning to show (the value was used).
pub type Applied = Option<String>;

/// One query key.
#[derive(Clone, Copy)]
pub struct Key {
    /// The key as written in the URL.
    pub name: &'static str,
    /// What it means (the CLI's `--help` and the README's key table; not compiled into the
    /// page's wasm modules, which never show it: 15.7 KB of text).
    #[cfg(not(target_arch = "wasm32"))]
    pub meaning: &'static str,
    /// Unit of the value.
    pub unit: &'static str,
    /// The form's label.
    pub label: &'static str,
    /// What it accepts.
    pub values: Values,
    /// The README's "allowed values" text: `{range}` and `{options}` are filled in from
    /// `values` (not compiled into the page's wasm modules, as `meaning`).
    #[cfg(not(target_arch = "wasm32"))]
    pub allowed: &'static str,
    /// The canonical string of the key's value (empty: not set).
    pub get: fn(&Settings) -> String,
    /// Parses and sets the key. `Err`: the value is rejected and nothing changed.
    pub set: fn(&mut Settings, &str) -> Result<Applied, String>,
}

impl Key {
    /// The README's text of the accepted values.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn allowed_text(&self) -> String {
        let range = match self.values {
            Values::Int { lo, hi, .. } => format!("{lo}–{}", big(hi)),
            _ => String::new(),
        };
        let options = match self.values {
            Values::Options { options, .. } => options()
                .iter()
                .map(|(s, _, note)| {
                    if note.is_empty() {
                        format!("`{s}`")
                    } else {
                        format!("`{s}` ({note})")
                    }
                })
                .collect::<Vec<_>>()
                .join(", "),
            _ => String::new(),
        };
        self.allowed
            .replace("{range}", &range)
            .replace("{options}", &options)
    }

    /// The form's `(value, label)` choices for a select (empty for a free-text key).
    pub fn choices(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        match self.values {
            Values::Options { options, empty } => {
                if empty {
                    out.push((String::new(), "preset".to_string()));
                }
                out.extend(
                    options()
                        .into_iter()
                        .map(|(s, label, _)| (s.to_string(), label.to_string())),
                );
            }
            Values::Bool { off, on, empty } => {
                if empty {
                    out.push((String::new(), "preset".to_string()));
                }
                out.push(("0".into(), off.into()));
                out.push(("1".into(), on.into()));
            }
            Values::Gpu => out.extend(GPUS.iter().map(|g| (g.id.into(), g.name.into()))),
            _ => {}
        }
        out
    }

    /// The numeric bounds the form enforces (`None` for a non-numeric key).
    pub fn bounds(&self) -> Option<(u64, u64)> {
        match self.values {
            Values::Int { lo, hi, .. } => Some((lo, hi)),
            _ => None,
        }
    }
}

/// `10^k` for the round powers of ten the table uses as limits, else the digits.
#[cfg(not(target_arch = "wasm32"))]
fn big(n: u64) -> String {
    let mut k = 0;
    let mut m = n;
    while m >= 10 && m.is_multiple_of(10) {
        m /= 10;
        k += 1;
    }
    if m == 1 && k >= 9 {
        format!("10^{k}")
    } else {
        n.to_string()
    }
}

/// A value a key holds: how it is written and parsed.
pub trait Field: Sized {
    /// The canonical string (empty: not set).
    fn show(&self) -> String;
    /// Parses `v` under the key's `values`.
    fn read(v: &str, values: &Values) -> Result<Self, String>;
}

pub(crate) fn parse_int(value: &str, lo: u64, hi: u64) -> Result<u64, String> {
    let t = value.trim().replace('_', "");
    let n: u64 = if let Some((m, e)) = t.split_once(['e', 'E']) {
        // Scientific notation for big counts, e.g. params=7e9 (must be an integer).
        let m = parse_f64(m).ok_or_else(|| format!("`{value}` is not a number"))?;
        let e: i32 = e
            .parse()
            .map_err(|_| format!("`{value}` is not a number"))?;
        let f = m * 10f64.powi(e);
        if !f.is_finite() || f.fract() != 0.0 || f < 0.0 || f > u64::MAX as f64 {
            return Err(format!("`{value}` is not a whole number"));
        }
        f as u64
    } else {
        t.parse().map_err(|_| {
            if t.starts_with('-') {
                format!("`{value}` is negative")
            } else {
                format!("`{value}` is not a whole number")
            }
        })?
    };
    if n < lo || n > hi {
        return Err(format!("`{value}` is outside {lo}–{hi}"));
    }
    Ok(n)
}

fn int_range(values: &Values) -> (u64, u64) {
    match *values {
        Values::Int { lo, hi, .. } => (lo, hi),
        _ => (0, u64::MAX),
    }
}

fn is_empty(v: &str) -> bool {
    v.trim().is_empty()
}

impl Field for u64 {
    fn show(&self) -> String {
        self.to_string()
    }
    fn read(v: &str, values: &Values) -> Result<Self, String> {
        let (lo, hi) = int_range(values);
        parse_int(v, lo, hi)
    }
}

impl Field for u32 {
    fn show(&self) -> String {
        self.to_string()
    }
    fn read(v: &str, values: &Values) -> Result<Self, String> {
        let (lo, hi) = int_range(values);
        parse_int(v, lo, hi.min(u32::MAX as u64)).map(|n| n as u32)
    }
}

impl Field for Count {
    fn show(&self) -> String {
        self.to_string()
    }
    fn read(v: &str, values: &Values) -> Result<Self, String> {
        let (lo, hi) = int_range(values);
        let n = parse_int(v, lo.max(1), hi.min(u32::MAX as u64))?;
        Count::new(n as u32).ok_or_else(|| format!("`{v}` is zero"))
    }
}

impl Field for bool {
    fn show(&self) -> String {
        (*self as u8).to_string()
    }
    fn read(v: &str, _: &Values) -> Result<Self, String> {
        match v.trim() {
            "1" | "true" | "yes" | "on" => Ok(true),
            "0" | "false" | "no" | "off" => Ok(false),
            _ => Err(format!("`{v}` is not 0 or 1")),
        }
    }
}

impl Field for f64 {
    fn show(&self) -> String {
        self.to_string()
    }
    fn read(v: &str, values: &Values) -> Result<Self, String> {
        let hi = match *values {
            Values::Float { hi } => hi,
            _ => f64::MAX,
        };
        let f = parse_f64(v.trim()).ok_or_else(|| format!("`{v}` is not a number"))?;
        if !(f.is_finite() && f > 0.0 && f <= hi) {
            return Err(format!("`{v}` is outside (0, {hi}]"));
        }
        Ok(f)
    }
}

impl<T: Field> Field for Option<T> {
    fn show(&self) -> String {
        self.as_ref().map(T::show).unwrap_or_default()
    }
    fn read(v: &str, values: &Values) -> Result<Self, String> {
        if is_empty(v) {
            Ok(None)
        } else {
            T::read(v, values).map(Some)
        }
    }
}

/// Spelled enums are fields through this wrapper's impls (no blanket impl over
/// [`Spelled`], which would overlap the integers').
macro_rules! spelled_field {
    ($($t:ty),+) => {$(
        impl Field for $t {
            fn show(&self) -> String {
                Spelled::as_str(*self).to_string()
            }
            fn read(v: &str, _: &Values) -> Result<Self, String> {
                <$t as Spelled>::parse(v).ok_or_else(|| {
                    let names: Vec<&str> = <$t as Spelled>::ALL.iter().map(|x| Spelled::as_str(*x)).collect();
                    format!("`{v}` is not one of {}", names.join(", "))
                })
            }
        }
    )+};
}
spelled_field!(
    Mode,
    Offload,
    Precision,
    GradAcc,
    AdamImpl,
    Logits,
    Loss,
    Optimizer,
    LoraTargets,
    Dtype,
    Solve,
    Attn,
    CeFusion,
    Fp8Recipe,
    Device,
    Modules,
    Tf32,
    SsmKernels,
    CtxPer,
    FlashAttn,
    LlamaFit,
    Sampler,
    Schedule,
    Framework,
    Convention,
    Recompute,
    Units,
    Mlp,
    Norm,
    Bias,
    LinKind,
    SsmDtype,
    Quant,
    Engine,
    FitColour
);

/// The canonical string of a field (one copy per field type).
#[inline(never)]
fn show_field<T: Field>(x: &T) -> String {
    x.show()
}

/// Parses `v` into the field `slot` under `values`; on `Err` the field is unchanged.
#[inline(never)]
fn read_field<T: Field>(slot: &mut T, v: &str, values: &Values) -> Result<Applied, String> {
    *slot = T::read(v, values)?;
    Ok(None)
}

/// A key bound to one field of [`Settings`] by its path.
macro_rules! field {
    ($name:literal, $($f:ident).+, $values:expr, $meaning:literal, $unit:literal, $label:literal, $allowed:literal) => {
        Key {
            name: $name,
            #[cfg(not(target_arch = "wasm32"))]
            meaning: $meaning,
            unit: $unit,
            label: $label,
            values: $values,
            #[cfg(not(target_arch = "wasm32"))]
            allowed: $allowed,
            // Each closure only finds the field; the reading and writing are one
            // function per field type (the page's code size: one copy, not one per key).
            get: |x| show_field(&x.$($f).+),
            set: |x, v| read_field(&mut x.$($f).+, v, &$values),
        }
    };
}

const fn int(lo: u64, hi: u64) -> Values {
    Values::Int {
        lo,
        hi,
        empty: false,
    }
}
const fn opt_int(lo: u64, hi: u64) -> Values {
    Values::Int {
        lo,
        hi,
        empty: true,
    }
}
const fn flag(off: &'static str, on: &'static str) -> Values {
    Values::Bool {
        off,
        on,
        empty: false,
    }
}
const fn options<T: Spelled>(empty: bool) -> Values {
    Values::Options {
        options: T::spellings,
        empty,
    }
}

const MAX_PARAMS: u64 = 1_000_000_000_000_000;
const BUCKET: Values = int(0, 1_000_000_000_000);

fn set_model(x: &mut Settings, v: &str) -> Result<Applied, String> {
    let id = v.trim();
    if preset(id).is_none() {
        return Err(format!("unknown model `{v}` (the presets are listed by `memfit --help` and in the Preset menu)"));
    }
    x.scenario.model.preset = id.to_string();
    Ok(None)
}

fn set_gpu(x: &mut Settings, v: &str) -> Result<Applied, String> {
    let id = v.trim();
    if gpu(id).is_none() {
        return Err(format!(
            "unknown GPU `{v}`; known: {}",
            GPUS.iter().map(|g| g.id).collect::<Vec<_>>().join(", ")
        ));
    }
    x.scenario.cluster.gpu = id.to_string();
    Ok(None)
}

fn set_version(_: &mut Settings, v: &str) -> Result<Applied, String> {
    let n = parse_int(v, 0, u32::MAX as u64)?;
    if n != VERSION as u64 {
        return Err(format!(
            "format version `{v}` is unknown; reading as version {VERSION}"
        ));
    }
    Ok(None)
}

fn set_dp(x: &mut Settings, v: &str) -> Result<Applied, String> {
    x.scenario.parallel.dp = if v.trim() == "auto" {
        None
    } else {
        Field::read(v, &opt_int(1, 1 << 20))?
    };
    Ok(None)
}

/// `zero=N`: a ZeRO stage (replacing an FSDP strategy: the form's ZeRO menu switches
/// FSDP off; the decoder applies `zero` before `fsdp`).
fn set_zero(x: &mut Settings, v: &str) -> Result<Applied, String> {
    let n = parse_int(v, 0, 3).map_err(|_| format!("`{v}` is not a ZeRO stage (0, 1, 2 or 3)"))?;
    let z = Zero::from_number(n as u8).unwrap_or_default();
    if !(matches!(x.scenario.sharding, Sharding::Fsdp(_)) && z == Zero::Z0) {
        x.scenario.sharding = Sharding::Zero(z);
    }
    Ok(None)
}

/// `fsdp=S`: an FSDP strategy replaces a ZeRO stage (said when one was set); `none`
/// leaves a ZeRO stage as it is.
fn set_fsdp(x: &mut Settings, v: &str) -> Result<Applied, String> {
    let f = <Fsdp as Spelled>::parse(v).ok_or_else(|| {
        let names: Vec<&str> = Fsdp::ALL.iter().map(|f| f.as_str()).collect();
        format!("`{v}` is not one of {}", names.join(", "))
    })?;
    let before = x.scenario.sharding;
    x.scenario.sharding = match (f, before) {
        (Fsdp::None, Sharding::Zero(_)) => before,
        (f, _) => Sharding::fsdp_or_z0(f),
    };
    Ok(match (f, before) {
        (Fsdp::None, _) | (_, Sharding::Zero(Zero::Z0) | Sharding::Fsdp(_)) => None,
        (f, Sharding::Zero(z)) => Some(format!(
            "fsdp={} sets the sharding; zero={} is ignored",
            f.as_str(),
            z.number()
        )),
    })
}

fn set_finetune(x: &mut Settings, v: &str) -> Result<Applied, String> {
    let kind: Finetune = <Finetune as Spelled>::parse(v).ok_or_else(|| {
        let names: Vec<&str> = Finetune::ALL.iter().map(|f| f.as_str()).collect();
        format!("`{v}` is not one of {}", names.join(", "))
    })?;
    let t = &mut x.scenario.finetune;
    if t.kind() != kind {
        // The adapters' settings carry over between LoRA and QLoRA.
        let next = Tuning::of(kind);
        *t = match (next, t.adapters()) {
            (Tuning::Lora { .. }, Some((rank, targets))) => Tuning::Lora { rank, targets },
            (Tuning::Qlora { double_quant, .. }, Some((rank, targets))) => Tuning::Qlora {
                rank,
                targets,
                double_quant,
            },
            (next, _) => next,
        };
    }
    Ok(None)
}

fn set_weight_dtype(x: &mut Settings, v: &str) -> Result<Applied, String> {
    let d: Dtype = Field::read(v, &options::<Dtype>(false))?;
    let n = &mut x.scenario.numerics;
    n.weight_dtype = d;
    n.normalise_weight_format();
    Ok(None)
}

/// Sets the engine; a change of engine clears `engine_version`, which the next engine would
/// read as its own numbering (vLLM's 0.19.0 as Ollama's 0.19.0). A link applies `engine`
/// before `engine_version` (the canonical order), so a link's release is kept.
fn set_engine(x: &mut Settings, v: &str) -> Result<Applied, String> {
    let before = x.scenario.serving.engine;
    read_field(&mut x.scenario.serving.engine, v, &options::<Engine>(false))?;
    if x.scenario.serving.engine != before {
        x.scenario.serving.version = None;
    }
    Ok(None)
}

fn get_engine_version(x: &Settings) -> String {
    let sv = &x.scenario.serving;
    match (sv.version, sv.engine) {
        (None, _) => String::new(),
        (Some(v), Engine::Llamacpp) if v.0 == 0 => format!("ollama-{v}"),
        (Some(v), Engine::Llamacpp) => format!("b{}", v.0),
        (Some(v), _) => v.to_string(),
    }
}

fn set_engine_version(x: &mut Settings, v: &str) -> Result<Applied, String> {
    if is_empty(v) {
        x.scenario.serving.version = None;
        return Ok(None);
    }
    let llama = x.scenario.serving.engine == Engine::Llamacpp;
    x.scenario.serving.version = Some(read_release(v.trim(), llama)?);
    Ok(None)
}

/// An `engine_version` as the engine numbers its releases: vLLM's, SGLang's and
/// TensorRT-LLM's `major.minor[.patch][.postN]`; under `engine=llamacpp`, llama.cpp's build
/// `bN` (`Version(N, 0, 0, 0)`) or an Ollama release `ollama-0.13.5` (also `0.13.5`: llama.cpp
/// has no dotted releases), kept as `Version(0, 13, 5, 0)`. Ollama has released only `0.x`,
/// so a llama.cpp version whose first number is 0 is Ollama's ([`Scenario::ollama_release`]).
fn read_release(t: &str, llama: bool) -> Result<Version, String> {
    let rest = t.strip_prefix("ollama-").unwrap_or(t);
    let ollama = rest.len() < t.len();
    let build = !rest.contains('.');
    match Version::parse(rest) {
        Some(v) if !llama && !ollama => Ok(v),
        Some(v) if llama && (if build { v.0 >= 1 && !ollama } else { v.0 == 0 }) => Ok(v),
        _ => Err(format!("`{t}` is not a release memfit reads: major.minor[.patch][.postN]; with engine=llamacpp a llama.cpp build bN (b1–b65535) or an Ollama release ollama-0.x.y")),
    }
}

fn adapters_only(key: &str) -> String {
    format!("{key} applies to finetune=lora or finetune=qlora")
}

fn get_rank(x: &Settings) -> String {
    x.scenario
        .finetune
        .adapters()
        .map_or(16, |(r, _)| r.get())
        .to_string()
}

fn set_rank(x: &mut Settings, v: &str) -> Result<Applied, String> {
    let r: Count = Field::read(v, &int(1, 65_536))?;
    match &mut x.scenario.finetune {
        Tuning::Lora { rank, .. } | Tuning::Qlora { rank, .. } => *rank = r,
        Tuning::Full if r.get() == 16 => {}
        Tuning::Full => return Err(adapters_only("lora_rank")),
    }
    Ok(None)
}

fn get_targets(x: &Settings) -> String {
    x.scenario
        .finetune
        .adapters()
        .map_or(LoraTargets::All, |(_, t)| t)
        .as_str()
        .into()
}

fn set_targets(x: &mut Settings, v: &str) -> Result<Applied, String> {
    let t: LoraTargets = Field::read(v, &options::<LoraTargets>(false))?;
    match &mut x.scenario.finetune {
        Tuning::Lora { targets, .. } | Tuning::Qlora { targets, .. } => *targets = t,
        Tuning::Full if t == LoraTargets::All => {}
        Tuning::Full => return Err(adapters_only("lora_targets")),
    }
    Ok(None)
}

fn get_double_quant(x: &Settings) -> String {
    x.scenario.double_quant().show()
}

fn set_double_quant(x: &mut Settings, v: &str) -> Result<Applied, String> {
    let d: bool = Field::read(v, &flag("off", "on"))?;
    match &mut x.scenario.finetune {
        Tuning::Qlora { double_quant, .. } => *double_quant = d,
        // The nf4 weight format's (quant=nf4); a warning when nothing reads it.
        _ => x.scenario.numerics.nf4_double_quant = d,
    }
    Ok(None)
}

/// Every key, in canonical order (the order `encode` writes them and the decoder
/// applies them).
#[rustfmt::skip]
pub const KEYS: &[Key] = &[
    Key { name: "v", #[cfg(not(target_arch = "wasm32"))] meaning: "format version", unit: "-", label: "Format version", values: Values::Version, #[cfg(not(target_arch = "wasm32"))] allowed: "1",
          get: |_| VERSION.to_string(), set: set_version },
    Key { name: "model", #[cfg(not(target_arch = "wasm32"))] meaning: "model preset id", unit: "-", label: "Preset", values: Values::Preset, #[cfg(not(target_arch = "wasm32"))] allowed: "a preset id (see `memfit --help`)",
          get: |x| x.scenario.model.preset.clone(), set: set_model },
    field!("layers", scenario.model.overrides.layers, opt_int(1, 1024), "transformer blocks (overrides the preset)", "count", "Layers", "{range}, empty = preset"),
    field!("hidden", scenario.model.overrides.hidden, opt_int(1, 1 << 20), "model width h", "count", "Hidden", "{range}, empty = preset"),
    field!("heads", scenario.model.overrides.heads, opt_int(1, 4096), "attention heads a", "count", "Heads", "{range}, empty = preset"),
    field!("kv_heads", scenario.model.overrides.kv_heads, opt_int(1, 4096), "key/value heads (GQA/MQA)", "count", "KV heads", "{range}, divides heads, empty = preset"),
    field!("head_dim", scenario.model.overrides.head_dim, opt_int(1, 65_536), "width of one attention head d", "count", "Head dim", "{range}, empty = hidden/heads or preset"),
    field!("ffn", scenario.model.overrides.ffn, opt_int(1, 1 << 22), "feed-forward width f", "count", "FFN width", "{range}, empty = preset"),
    field!("vocab", scenario.model.overrides.vocab, opt_int(1, 1 << 24), "vocabulary size V", "tokens", "Vocabulary", "{range}, empty = preset"),
    field!("mlp", scenario.model.overrides.mlp, options::<Mlp>(true), "feed-forward shape", "-", "MLP", "{options}, empty = preset"),
    field!("norm", scenario.model.overrides.norm, options::<Norm>(true), "normalisation", "-", "Norm", "{options}, empty = preset"),
    field!("tied", scenario.model.overrides.tied, Values::Bool { off: "untied", on: "tied", empty: true }, "LM head tied to the embedding", "-", "Tied LM head", "`0`, `1`, empty = preset"),
    field!("gelu_ops", scenario.model.overrides.gelu_ops, Values::Bool { off: "fused kernel", on: "Python ops (gelu_new)", empty: true }, "GELU as GPT-2's gelu_new in Python ops (saves 5 f-wide tensors) or a fused kernel (2)", "-", "GELU implementation", "`0`, `1`, empty = preset"),
    field!("rope_partial", scenario.model.overrides.rope_partial, Values::Bool { off: "whole head", on: "part of each head", empty: true }, "the rotary embedding covers part of each head (partial_rotary_factor < 1: Phi-2, Phi-4-mini, StableLM, GPT-NeoX): transformers concatenates q's rotated and pass-through parts, and on CUDA FlashAttention's output is then copied before o_proj (one more T·a·d tensor saved per layer)", "-", "Partial rotary", "`0`, `1`, empty = preset"),
    field!("softmax_in_dtype", scenario.model.overrides.softmax_in_dtype, Values::Bool { off: "fp32 (upcast first)", on: "model dtype (GPT-2)", empty: true }, "eager attention's softmax in the model's dtype (GPT-2's own attention: 2 score tensors at its peak) or upcast to fp32 first (Hugging Face's shared eager attention: the scores, an fp32 copy and the fp32 softmax)", "-", "Eager softmax dtype", "`0`, `1`, empty = preset"),
    field!("bias", scenario.model.overrides.bias, options::<Bias>(true), "linear-layer biases", "-", "Biases", "{options}, empty = preset"),
    field!("experts", scenario.model.overrides.experts, opt_int(0, 1024), "routed experts per MoE layer", "count", "Experts", "{range} (0 = dense), empty = preset"),
    field!("top_k", scenario.model.overrides.top_k, opt_int(1, 1024), "experts each token uses", "count", "Top-k", "{range}, empty = preset"),
    field!("moe_ffn", scenario.model.overrides.moe_ffn, opt_int(1, 1 << 22), "width of one routed expert", "count", "Expert width", "{range}, empty = `ffn` or preset"),
    field!("shared_experts", scenario.model.overrides.shared_experts, opt_int(0, 1024), "always-active experts per MoE layer, each `moe_ffn` wide", "count", "Shared experts", "{range}, empty = preset"),
    field!("first_dense", scenario.model.overrides.first_dense, opt_int(0, 1023), "leading blocks with a dense `ffn`-wide MLP in an MoE model", "count", "Dense first blocks", "{range}, below layers, empty = preset"),
    field!("positions", scenario.model.overrides.positions, opt_int(0, 1 << 24), "learned absolute position embeddings (0 = rotary/ALiBi)", "positions", "Learned positions", "{range}, empty = preset"),
    field!("window", scenario.model.overrides.window, opt_int(0, 1 << 24), "sliding-window attention span W (bounds the KV cache of windowed layers)", "tokens", "Sliding window", "{range} (0 = none), empty = preset"),
    field!("local_layers", scenario.model.overrides.local_layers, opt_int(0, 1024), "layers that attend within the window", "count", "Windowed layers", "{range}, at most layers, empty = preset (scaled with a layers override)"),
    field!("attn_layers", scenario.model.overrides.attn_layers, opt_int(0, 1024), "blocks with softmax attention, the only ones with a KV cache (a hybrid's; Falcon-H1's parallel blocks count here and in mamba_layers)", "count", "Attention blocks", "{range}, at most layers, empty = layers − mamba_layers − conv_layers − linear_layers"),
    field!("mamba_layers", scenario.model.overrides.mamba_layers, opt_int(0, 1024), "blocks with a Mamba / Mamba-2 mixer: a conv and an SSM state per sequence, constant in its length", "count", "Mamba blocks", "{range}, empty = preset (0)"),
    field!("conv_layers", scenario.model.overrides.conv_layers, opt_int(0, 1024), "blocks with a gated short convolution (LFM2): a conv state of `ssm_conv` tokens × hidden", "count", "Short-conv blocks", "{range}, empty = preset (0)"),
    field!("linear_layers", scenario.model.overrides.linear_layers, opt_int(0, 1024), "blocks with linear attention (gated DeltaNet, lightning attention: `lin_kind`): no KV cache; their state from the `lin_*` keys (without them not modelled: a warning says so)", "count", "Linear-attention blocks", "{range}, empty = preset (0)"),
    field!("ssm_version", scenario.model.overrides.ssm_version, opt_int(1, 2), "the Mamba blocks' mixer: 1 (Mamba, selective scan) or 2 (Mamba-2, SSD)", "-", "Mamba version", "{range}, empty = 1"),
    field!("ssm_inner", scenario.model.overrides.ssm_inner, opt_int(1, 1 << 22), "the Mamba blocks' inner width d (`intermediate_size`, `expand·hidden`)", "channels", "Mamba inner width", "{range}, empty = 2·hidden"),
    field!("ssm_state", scenario.model.overrides.ssm_state, opt_int(1, 1 << 16), "the Mamba blocks' state size N per channel (`state_size`, `d_state`)", "count", "SSM state size", "{range}, empty = 16 (Mamba) or 128 (Mamba-2)"),
    field!("ssm_groups", scenario.model.overrides.ssm_groups, opt_int(1, 4096), "Mamba-2's B/C groups G (`n_groups`)", "count", "SSM groups", "{range}, divides ssm_heads, empty = 1"),
    field!("ssm_heads", scenario.model.overrides.ssm_heads, opt_int(1, 1 << 16), "Mamba-2's heads H (`num_heads`), each d/H wide", "count", "SSM heads", "{range}, divides ssm_inner, empty = ⌈ssm_inner/64⌉"),
    field!("ssm_conv", scenario.model.overrides.ssm_conv, opt_int(1, 64), "the causal convolution's kernel K of the Mamba, short-convolution and gated-DeltaNet blocks (`conv_kernel`, `d_conv`, LFM2's `conv_L_cache`, `linear_conv_kernel_dim`)", "tokens", "Conv kernel", "{range}, empty = 4 (Mamba, gated DeltaNet) or 3 (short conv)"),
    field!("ssm_chunk", scenario.model.overrides.ssm_chunk, opt_int(1, 1 << 16), "Mamba-2's chunk length l (`chunk_size`, `mamba_chunk_size`): its chunked scan's (b, H, ⌈s/l⌉, l, l) tensors without the fused kernels", "tokens", "SSM chunk", "{range}, empty = 256"),
    field!("lin_k_heads", scenario.model.overrides.lin_k_heads, opt_int(1, 4096), "the gated-DeltaNet (linear-attention) blocks' key heads H_k (`linear_num_key_heads`)", "count", "Linear-attn key heads", "{range}, empty = preset (none: their state is not modelled)"),
    field!("lin_v_heads", scenario.model.overrides.lin_v_heads, opt_int(1, 4096), "the gated-DeltaNet blocks' value heads H_v (`linear_num_value_heads`): a H_v·d_k·d_v fp32 state per sequence and block; lightning attention's heads H (a H·d·d state in the model dtype)", "count", "Linear-attn value heads", "{range}, empty = preset"),
    field!("lin_k_dim", scenario.model.overrides.lin_k_dim, opt_int(1, 65_536), "the gated-DeltaNet blocks' key head width d_k (`linear_key_head_dim`)", "count", "Linear-attn key width", "{range}, empty = preset"),
    field!("lin_v_dim", scenario.model.overrides.lin_v_dim, opt_int(1, 65_536), "the gated-DeltaNet blocks' value head width d_v (`linear_value_head_dim`); lightning attention's head width d (`head_dim`)", "count", "Linear-attn value width", "{range}, empty = preset"),
    field!("lin_kind", scenario.model.overrides.lin_kind, options::<LinKind>(true), "which linear attention the linear_layers blocks run: gated DeltaNet (a conv over q, k, v and an fp32 H_v·d_k·d_v state) or MiniMax's lightning attention (no conv, a H·d·d state in the model dtype)", "-", "Linear-attn kind", "{options}, empty = preset (gdn)"),
    field!("ssm_dtype", scenario.model.overrides.ssm_dtype, options::<SsmDtype>(true), "the recurrent state's element type the checkpoint declares (`mamba_ssm_dtype`: Qwen3.5's fp32), which the engines' state cache of Mamba and gated-DeltaNet blocks holds: `auto` (none declared) is vLLM's model dtype and SGLang's fp32", "-", "SSM state type", "{options}, empty = preset (auto)"),
    field!("params", scenario.model.params, opt_int(1, MAX_PARAMS), "explicit total parameters (DeepSpeed's cold input)", "parameters", "Params (explicit)", "{range}, empty = from the architecture"),
    field!("largest_layer", scenario.model.largest_layer, opt_int(1, MAX_PARAMS), "explicit largest-layer parameters", "parameters", "Largest layer", "{range}, empty = from the architecture"),
    field!("vision", scenario.model.vision, opt_int(0, MAX_PARAMS), "serving: the vision encoder (and projector) a multimodal checkpoint loads with the language model, counted in the weights ÷ TP; 0 = none (a text-only launch)", "parameters", "Vision encoder (serving)", "{range}, empty = the preset's (Gemma 3 4B–27B, Llama 4, Mistral Small 3.1), 0 = none"),
    field!("context", scenario.model.context, opt_int(1, 1 << 27), "serving: the context the checkpoint is configured for (config.json's max_position_embeddings): the default max_len, what vLLM and SGLang check a longer max_len against, vLLM's rotary cache rows", "tokens", "Model context (serving)", "{range}, empty = the preset's"),
    field!("mode", scenario.workload.mode, options::<Mode>(false), "training or inference", "-", "Mode", "{options}"),
    field!("batch", scenario.workload.batch, int(1, 1 << 20), "micro-batch per GPU", "sequences", "Micro-batch / GPU", "{range}"),
    field!("seq", scenario.workload.seq, int(1, 1 << 26), "sequence length (the prompt, in inference)", "tokens", "Sequence", "{range}"),
    field!("gen", scenario.workload.gen, int(0, 1 << 26), "tokens generated (inference)", "tokens", "Generated (inference)", "{range}"),
    field!("logits", scenario.workload.logits, options::<Logits>(false), "inference logits kept", "-", "Logits (inference)", "{options}"),
    field!("loss", scenario.workload.loss, options::<Loss>(false), "who computes the training loss, so how long the logits live (framework=pytorch)", "-", "Loss (training)", "{options}"),
    field!("gpus_per_node", scenario.cluster.gpus_per_node, int(1, 1024), "GPUs per node n", "GPUs", "GPUs / node", "{range}"),
    field!("nodes", scenario.cluster.nodes, int(1, 1 << 20), "nodes", "nodes", "Nodes", "{range}"),
    Key { name: "dp", #[cfg(not(target_arch = "wasm32"))] meaning: "data-parallel degree", unit: "ranks", label: "DP", values: opt_int(1, 1 << 20), #[cfg(not(target_arch = "wasm32"))] allowed: "{range}, `auto`/empty = GPUs / (tp·pp·cp)",
          get: |x| x.scenario.parallel.dp.show(), set: set_dp },
    field!("tp", scenario.parallel.tp, int(1, 1 << 20), "tensor-parallel degree", "ranks", "TP", "{range}"),
    field!("pp", scenario.parallel.pp, int(1, 1 << 20), "pipeline-parallel degree", "stages", "PP", "{range}"),
    field!("cp", scenario.parallel.cp, int(1, 1 << 20), "context-parallel degree", "ranks", "CP", "{range}"),
    Key { name: "zero", #[cfg(not(target_arch = "wasm32"))] meaning: "ZeRO stage", unit: "-", label: "ZeRO stage", values: Values::Options { options: <Zero as Spelled>::spellings, empty: false }, #[cfg(not(target_arch = "wasm32"))] allowed: "0, 1, 2, 3",
          get: |x| x.scenario.sharding.zero_key().as_str().into(), set: set_zero },
    field!("offload_opt", scenario.offload.optimizer, options::<Offload>(false), "optimizer-state offload", "-", "Offload optimizer", "{options}"),
    field!("offload_param", scenario.offload.params, options::<Offload>(false), "parameter offload (ZeRO-3)", "-", "Offload params", "{options}"),
    field!("zero_init", scenario.runtime.zero_init, flag("no", "yes"), "model built under deepspeed.zero.Init", "-", "zero.Init", "`0`, `1`"),
    field!("buffer_factor", scenario.runtime.buffer_factor, Values::Float { hi: 100.0 }, "DeepSpeed additional_buffer_factor (host RAM)", "factor", "Host buffer factor", "0 < x ≤ 100"),
    field!("precision", scenario.numerics.precision, options::<Precision>(false), "precision policy", "-", "Precision", "{options}"),
    field!("grad_acc_dtype", scenario.numerics.grad_acc, options::<GradAcc>(false), "how gradients are kept", "-", "Gradients", "{options}"),
    field!("optimizer", scenario.numerics.optimizer, options::<Optimizer>(false), "optimizer", "-", "Optimizer", "{options}"),
    field!("adam_impl", scenario.numerics.adam_impl, options::<AdamImpl>(false), "PyTorch Adam/AdamW implementation (framework=pytorch): its temporaries in the step", "-", "AdamW kernel (PyTorch)", "{options}"),
    Key { name: "fsdp", #[cfg(not(target_arch = "wasm32"))] meaning: "FSDP sharding strategy (overrides `zero`)", unit: "-", label: "FSDP", values: Values::Options { options: <Fsdp as Spelled>::spellings, empty: false }, #[cfg(not(target_arch = "wasm32"))] allowed: "{options}",
          get: |x| x.scenario.sharding.fsdp().as_str().into(), set: set_fsdp },
    Key { name: "finetune", #[cfg(not(target_arch = "wasm32"))] meaning: "full training or adapters", unit: "-", label: "Fine-tuning", values: Values::Options { options: <Finetune as Spelled>::spellings, empty: false }, #[cfg(not(target_arch = "wasm32"))] allowed: "{options}",
          get: |x| x.scenario.finetune.kind().as_str().into(), set: set_finetune },
    Key { name: "lora_rank", #[cfg(not(target_arch = "wasm32"))] meaning: "LoRA rank r", unit: "count", label: "LoRA rank", values: int(1, 65_536), #[cfg(not(target_arch = "wasm32"))] allowed: "{range}",
          get: get_rank, set: set_rank },
    Key { name: "lora_targets", #[cfg(not(target_arch = "wasm32"))] meaning: "linears with adapters", unit: "-", label: "LoRA targets", values: options::<LoraTargets>(false), #[cfg(not(target_arch = "wasm32"))] allowed: "{options}",
          get: get_targets, set: set_targets },
    Key { name: "double_quant", #[cfg(not(target_arch = "wasm32"))] meaning: "double quantisation of the NF4 constants (finetune=qlora, quant=nf4)", unit: "-", label: "Double quantisation", values: flag("off", "on"), #[cfg(not(target_arch = "wasm32"))] allowed: "`0`, `1`",
          get: get_double_quant, set: set_double_quant },
    Key { name: "weight_dtype", #[cfg(not(target_arch = "wasm32"))] meaning: "storage dtype of unquantised weights (inference, serving)", unit: "-", label: "Weights (inference)", values: options::<Dtype>(false), #[cfg(not(target_arch = "wasm32"))] allowed: "{options}; `int8`/`int4` are read as `quant=int8_g`/`int4_g`",
          get: |x| x.scenario.numerics.weight_dtype.show(), set: set_weight_dtype },
    field!("quant_group", scenario.numerics.quant_group, int(1, 1 << 20), "weights per int8/int4 scale group", "weights", "Quantisation group", "{range}"),
    field!("kv_dtype", scenario.numerics.kv_dtype, options::<Dtype>(false), "KV cache storage", "-", "KV cache", "{options}"),
    field!("sp", scenario.parallel.sp, flag("off", "on"), "sequence parallelism (with TP)", "-", "SP (with TP)", "`0`, `1`"),
    field!("recompute", scenario.activations.recompute, options::<Recompute>(false), "activation recomputation", "-", "Recompute", "{options}"),
    field!("vpp", scenario.parallel.vpp, int(1, 1024), "virtual pipeline stages per rank (interleaved)", "stages", "Virtual stages", "{range}"),
    field!("microbatches", scenario.workload.microbatches, int(1, 1 << 20), "micro-batches per optimizer step", "count", "Micro-batches / step", "{range}"),
    field!("ep", scenario.parallel.ep, int(1, 1024), "expert-parallel degree", "ranks", "EP", "{range}"),
    field!("pin_memory", scenario.offload.pin_memory, flag("no", "yes"), "pinned host buffers (ZeRO-3 offload)", "-", "Pinned memory", "`0`, `1`"),
    field!("solve", view.solve, options::<Solve>(false), "inverse solve to report", "-", "Solve", "{options}"),
    field!("timeline", view.timeline, flag("off", "on"), "add the step timeline (every allocation and free) to the JSON", "-", "Timeline in the JSON", "`0`, `1`"),
    field!("attn", scenario.activations.attn, options::<Attn>(false), "attention kernel", "-", "Attention", "{options}"),
    field!("dropout", scenario.activations.dropout, flag("off", "on"), "dropout active (masks stored)", "-", "Dropout", "`0`, `1`"),
    field!("schedule", scenario.parallel.schedule, options::<Schedule>(false), "pipeline schedule", "-", "PP schedule", "{options}"),
    field!("framework", scenario.stack.framework, options::<Framework>(false), "whose allocations are modelled", "-", "Framework", "{options}"),
    field!("ckpt_layers", scenario.activations.ckpt_layers, int(0, 1024), "layers per model chunk (per stage without `vpp`) checkpointed with `recompute=full`", "layers", "Checkpointed layers", "0 (= all)–1024"),
    field!("cuda_ctx", scenario.runtime.cuda_ctx_mib, opt_int(0, 65_536), "CUDA context per GPU: the driver's memory outside the caching allocator (measured 685 MiB with torch 2.11 and CUDA 13.0 on an H200)", "MiB", "CUDA context", "{range}, empty = per stack: 685 for framework=pytorch on Hopper (measured), else 600"),
    field!("nccl", scenario.runtime.nccl_mib, opt_int(0, 65_536), "NCCL communicator buffers per GPU", "MiB", "NCCL buffers", "{range}, empty = 0 on one GPU, else 256"),
    field!("frag", scenario.runtime.frag_pct, int(0, 100), "allocator reserve (reserved − allocated) where no op-level template holds the run (single-GPU transformers training is replayed instead); 0 = none", "% of allocated", "Fragmentation", "{range}"),
    field!("reduce_bucket", scenario.runtime.reduce_bucket, BUCKET, "DeepSpeed reduce_bucket_size", "elements", "reduce_bucket_size", "{range}"),
    field!("allgather_bucket", scenario.runtime.allgather_bucket, BUCKET, "DeepSpeed allgather_bucket_size", "elements", "allgather_bucket_size", "{range}"),
    field!("overlap_comm", scenario.runtime.overlap_comm, flag("off", "on"), "DeepSpeed overlap_comm (double-buffered reduce)", "-", "overlap_comm", "`0`, `1`"),
    field!("prefetch_bucket", scenario.runtime.prefetch_bucket, BUCKET, "DeepSpeed stage3_prefetch_bucket_size", "elements", "stage3 prefetch", "{range}"),
    field!("max_live_params", scenario.runtime.max_live_params, BUCKET, "DeepSpeed stage3_max_live_parameters", "elements", "stage3 max live", "{range}"),
    Key { name: "gpu", #[cfg(not(target_arch = "wasm32"))] meaning: "GPU preset id", unit: "-", label: "GPU", values: Values::Gpu, #[cfg(not(target_arch = "wasm32"))] allowed: "a GPU id (see `memfit --help`)",
          get: |x| x.scenario.cluster.gpu.clone(), set: set_gpu },
    field!("gpu_mem", scenario.cluster.gpu_mem_mib, opt_int(1, 1 << 30), "custom usable memory per GPU (overrides the preset)", "MiB", "Custom memory", "{range}, empty = preset"),
    field!("convention", scenario.stack.convention, options::<Convention>(false), "whose accounting", "-", "Convention", "{options}"),
    field!("units", view.units, options::<Units>(false), "display units", "-", "Units", "{options}"),
    field!("quant", scenario.numerics.quant, options::<Quant>(false), "weight format (inference and serving): quantised layouts to the byte", "-", "Weight format", "{options}"),
    Key { name: "engine", #[cfg(not(target_arch = "wasm32"))] meaning: "serving engine (`mode=serve`); another engine than the one set clears `engine_version` (each engine numbers its own releases)", unit: "-", label: "Engine", values: options::<Engine>(false), #[cfg(not(target_arch = "wasm32"))] allowed: "{options}",
          get: |x| show_field(&x.scenario.serving.engine), set: set_engine },
    Key { name: "engine_version", #[cfg(not(target_arch = "wasm32"))] meaning: "engine release whose start-up is modelled", unit: "-", label: "Engine version", values: Values::Text, #[cfg(not(target_arch = "wasm32"))] allowed: "`major.minor[.patch][.postN]`; engine=llamacpp: llama.cpp's build `bN` or an Ollama release `ollama-0.x.y`; empty = the newest modelled (see README, Serving)",
          get: get_engine_version, set: set_engine_version },
    field!("gpu_util", scenario.serving.gpu_util, Values::Float { hi: 1.0 }, "vLLM gpu_memory_utilization / SGLang mem_fraction_static / TensorRT-LLM free_gpu_memory_fraction", "fraction", "Memory fraction", "0 < x ≤ 1, empty = the engine's default"),
    field!("max_len", scenario.serving.max_len, opt_int(1, 1 << 26), "max_model_len (vLLM, SGLang context_length) / n_ctx (llama.cpp)", "tokens", "Max length", "{range}, empty = the model's context (`seq` + `gen` if the model has none); llama.cpp: Ollama's by GPU memory (4,096, 32,768 from 23 GiB, 262,144 from 47 GiB, at most the model's; ollama-0.6.7 to 0.15.4: 4,096, earlier 2,048), llama-server's 4,096 before b7437"),
    field!("max_batched_tokens", scenario.serving.max_batched_tokens, opt_int(1, 1 << 26), "tokens in one forward: max_num_batched_tokens / chunked_prefill_size / n_ubatch", "tokens", "Max batched tokens", "{range}, empty = the engine's default"),
    field!("max_seqs", scenario.serving.max_seqs, opt_int(1, 1 << 20), "max_num_seqs / max_running_requests", "sequences", "Max sequences", "{range}, empty = the engine's default"),
    field!("block_size", scenario.serving.block_size, opt_int(1, 1 << 16), "tokens per KV-cache block (page)", "tokens", "KV block size", "{range}, empty = the engine's default"),
    field!("tflops", scenario.hardware.tflops, Values::Float { hi: 1e6 }, "dense peak TFLOP/s of the compute precision (step time)", "TFLOP/s", "Peak TFLOP/s", "0 < x ≤ 10^6, empty = the GPU's"),
    field!("hbm_bw", scenario.hardware.hbm_bw, Values::Float { hi: 1e6 }, "HBM bandwidth (step time)", "GB/s", "HBM bandwidth", "0 < x ≤ 10^6, empty = the GPU's"),
    field!("intra_bw", scenario.hardware.intra_bw, Values::Float { hi: 1e6 }, "intra-node bandwidth per GPU, one direction (step time)", "GB/s", "Intra-node bandwidth", "0 < x ≤ 10^6, empty = the GPU's"),
    field!("inter_bw", scenario.hardware.inter_bw, Values::Float { hi: 1e6 }, "inter-node bandwidth per GPU, one direction: a node's NICs over its GPUs (DGX H100, 8 × 400 Gb/s: 50; DGX A100 or RoCE at 8 × 200 Gb/s: 25; 4 × 200 Gb/s per 8 GPUs: 12.5) — collectives across nodes use every member's NIC (step time)", "GB/s", "Inter-node bandwidth", "0 < x ≤ 10^6, empty = the GPU's"),
    field!("ep_overlap", scenario.runtime.ep_overlap, flag("off", "on"), "expert-parallel all-to-all overlapped with another micro-batch's compute (Megatron-Core overlap_moe_expert_parallel_comm; Megatron-Bridge's moe_a2a_overlap) — step time", "-", "EP A2A overlap", "`0`, `1`"),
    field!("tp_overlap", scenario.runtime.tp_overlap, flag("off", "on"), "tensor-parallel collectives overlapped with the GEMMs (Transformer Engine userbuffers; NeMo's performance recipes) — step time", "-", "TP comm overlap", "`0`, `1`"),
    field!("ce_fusion", scenario.runtime.ce_fusion, options::<CeFusion>(false), "Megatron's cross-entropy kernel (`--cross-entropy-loss-fusion`, `--cross-entropy-fusion-impl`): what the loss saves and its memory traffic (framework=megatron)", "-", "Cross-entropy fusion", "{options}"),
    field!("fp8_recipe", scenario.runtime.fp8_recipe, options::<Fp8Recipe>(false), "Transformer Engine's fp8 scaling recipe (`--fp8-recipe`): the casts, amax passes and column-wise copies fp8 training adds (step time; precision=fp8)", "-", "FP8 recipe", "{options}"),
    field!("fp8_params", scenario.runtime.fp8_params, flag("off", "on"), "fp8 training keeps the weights in fp8 (Megatron `--fp8-param-gather`, Megatron-Bridge's fp8 recipes): no 16-bit copy; the fp8 transpose or column-wise copy stays (precision=fp8, framework=megatron)", "-", "FP8 parameters", "`0`, `1`"),
    field!("device", scenario.runtime.device, options::<Device>(false), "where PyTorch runs the kernels (framework=pytorch): `cuda` dispatches SDPA to flash, memory-efficient or math by dtype, GQA, mask and head size, and CUDA autocast runs `pow` in fp32; `cpu` is PyTorch's CPU kernels, as a CPU memory tracker measures them", "-", "Device kernels", "{options}"),
    field!("modules", scenario.runtime.modules, options::<Modules>(false), "the model code under framework=pytorch: `hf` (transformers classes, whose forward holds the embedding's output and the rotary cos/sin for every layer) or `plain` (a bare module stack, as memfit's own measured harness)", "-", "Model code", "{options}"),
    field!("tf32", scenario.runtime.tf32, options::<Tf32>(false), "fp32 matmuls on tf32 tensor cores (`torch.backends.cuda.matmul.allow_tf32`): `auto` is the framework's default (off under PyTorch, DeepSpeed and the HF Trainer, on under Megatron) — step time of precision=fp32", "-", "TF32 matmuls", "{options}"),
    field!("ssm_kernels", scenario.runtime.ssm_kernels, options::<SsmKernels>(false), "how transformers runs the Mamba, short-convolution and gated-DeltaNet blocks: `fused` (mamba-ssm, causal-conv1d and flash-linear-attention installed), `torch` (its PyTorch fallback as transformers 4.44–5.17 runs it, the stack memfit's CUDA runs were measured on: Mamba-2's chunk scan materialises a (b, c, l, l, H, N) product; `torch-naive` is the same) or `torch-einsum` (the fallback of transformers ≥ 5.18, Mamba-2's scan by einsum): the fallback's scan tensors carry the state size N for every token", "-", "SSM kernels", "{options}"),
    field!("fitmap", view.fitmap, options::<FitColour>(false), "what colours the fit map's cells", "-", "Fit map colour", "{options}"),
    field!("time", view.time, flag("off", "on"), "add the step time (seconds, tokens/s, MFU and breakdown) to the JSON", "-", "Step time in the JSON", "`0`, `1`"),
    field!("parallel", scenario.serving.parallel, int(1, 4096), "llama.cpp --parallel / OLLAMA_NUM_PARALLEL (sequences served at once; `ctx_per` says whether each gets `max_len` or they share it)", "sequences", "Parallel (llama.cpp)", "{range}"),
    field!("ctx_per", scenario.serving.ctx_per, options::<CtxPer>(false), "what llama.cpp's `max_len` is with `parallel` sequences: each sequence's context (Ollama's num_ctx: the cache holds max_len·parallel tokens) or the total the slots share (llama-server's -c: max_len tokens, max_len/parallel per slot)", "-", "Context per (llama.cpp)", "{options}"),
    field!("sampler", scenario.serving.sampler, options::<Sampler>(false), "vLLM's top-k/top-p code in the profiling run's dummy sampler pass, which sets the bytes a logit holds there: `auto` is the release's default (FlashInfer's 0.8–0.11.0 as the Docker images ship it, PyTorch's sort 0.11.1–0.16, the Triton kernel from 0.17); `sort` for a pip install without flashinfer before 0.11.1", "-", "Sampler (vLLM)", "{options}"),
    field!("flash_attn", scenario.serving.flash_attn, options::<FlashAttn>(false), "llama.cpp's flash attention (`-fa`; Ollama's OLLAMA_FLASH_ATTENTION): without it the compute buffer holds the f32 attention scores of a micro-batch (n_ctx × n_ubatch × heads); `auto` is the front end's default: the build's (off before b6325, on from b6325), or with engine_version=ollama-0.x.y Ollama's (off before 0.11.8, then on for the models it lists, for every model from 0.13.4)", "-", "Flash attention (llama.cpp)", "{options}"),
    field!("fit", scenario.serving.fit, options::<LlamaFit>(false), "llama.cpp's --fit (b7437+): until 1 GiB stays free, an unset max_len shrinks (to 4,096 at least), then an unset ngl; `auto` = on for llama-server (ctx_per=total)", "-", "Fit to the GPU (llama.cpp)", "{options}"),
    field!("ngl", scenario.serving.ngl, opt_int(0, 65_536), "llama.cpp's -ngl / Ollama's num_gpu: layers on the GPUs, counted as llama.cpp counts them (the repeating layers and the output layer, L + 1); the rest, their KV cache included, stay in host memory (serve.host_bytes)", "layers", "GPU layers (llama.cpp)", "{range}, empty = every layer"),
    field!("kv_offload", scenario.serving.kv_offload, flag("off", "on"), "llama.cpp keeps the KV cache of its GPU layers on the GPUs; `0` is --no-kv-offload (the whole cache in host memory)", "-", "KV offload (llama.cpp)", "`0`, `1`"),
    field!("mmap", scenario.serving.mmap, flag("off", "on"), "llama.cpp maps the GGUF file: host memory holds the file's mapped range (the whole file while the output layer stays on the CPU, else token_embd and the CPU's layers); `0` is --no-mmap (Ollama turns mmap off on Windows with CUDA, and on Linux when free RAM is below the model): the CPU's tensors are read into host buffers and the GPUs' part of the file is not held", "-", "mmap (llama.cpp)", "`0`, `1`"),
    field!("redundant_experts", scenario.serving.redundant_experts, int(0, 4096), "EPLB's redundant experts per MoE layer (vLLM --enable-eplb with --num-redundant-experts, 0.9.2–0.11, or --eplb-config '{\"num_redundant_experts\": N}', 0.10.2+; SGLang --ep-num-redundant-experts, 0.4.6.post5+): E + N physical experts spread over the EP ranks, (E + N)/EP on each GPU", "experts", "Redundant experts (EPLB)", "{range}; 0 = EPLB off"),
    field!("graph_bs", scenario.serving.graph_bs, opt_int(0, 1 << 16), "the decode CUDA graphs' largest batch: SGLang --cuda-graph-max-bs (--cuda-graph-max-bs-decode from 0.5.14), which its default mem_fraction_static reserves 2 MiB a batch for (0.5.3+); 0 = no CUDA graphs (SGLang --disable-cuda-graph: no graph reserve from 0.5.16, no prefill graphs from 0.5.14; vLLM --enforce-eager: no graph estimate subtracted, 0.20+)", "sequences", "CUDA-graph max batch", "{range}, empty = the engine's default"),
];

/// The key named `name`.
pub fn key(name: &str) -> Option<&'static Key> {
    KEYS.iter().find(|k| k.name == name)
}
