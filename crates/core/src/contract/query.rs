//! Scenario ⇄ query string.
//!
//! The query string is a public contract shared by the page, the CLI and the
//! tests. Keys are short and stable; `v=1` names the format version. Decoding
//! never panics and never turns a typo into a number: an unknown key is ignored
//! (with a warning), a bad value keeps the default and produces a warning that
//! names the key and the value. `decode(encode(s)) == s` for every valid `s`.

use crate::estimate::Warning;
use crate::gpu::{gpu, GPUS};
use crate::megatron::Recompute;
use crate::model::{preset, Bias, Mlp, Norm};
use crate::scenario::{
    AdamImpl, Attn, Convention, Dtype, Finetune, Framework, Fsdp, GradAcc, Logits, LoraTargets,
    Mode, Offload, Optimizer, Precision, Scenario, Schedule, Solve, Zero,
};
use crate::units::Units;

/// Format version written as `v=`.
pub const VERSION: u32 = 1;

/// Documentation of one query key (the README's table is checked against these).
#[derive(Clone, Copy, Debug)]
pub struct KeySpec {
    /// The key.
    pub key: &'static str,
    /// What it means.
    pub meaning: &'static str,
    /// Unit of the value.
    pub unit: &'static str,
    /// Allowed values.
    pub allowed: &'static str,
}

const fn k(
    key: &'static str,
    meaning: &'static str,
    unit: &'static str,
    allowed: &'static str,
) -> KeySpec {
    KeySpec {
        key,
        meaning,
        unit,
        allowed,
    }
}

/// Every key, in canonical order.
#[rustfmt::skip]
pub const KEYS: &[KeySpec] = &[
    k("v", "format version", "-", "1"),
    k("model", "model preset id", "-", "a preset id (see `memfit --help`)"),
    k("layers", "transformer blocks (overrides the preset)", "count", "1–1024, empty = preset"),
    k("hidden", "model width h", "count", "1–1048576, empty = preset"),
    k("heads", "attention heads a", "count", "1–4096, empty = preset"),
    k("kv_heads", "key/value heads (GQA/MQA)", "count", "1–4096, divides heads, empty = preset"),
    k("head_dim", "width of one attention head d", "count", "1–65536, empty = hidden/heads or preset"),
    k("ffn", "feed-forward width f", "count", "1–4194304, empty = preset"),
    k("vocab", "vocabulary size V", "tokens", "1–16777216, empty = preset"),
    k("mlp", "feed-forward shape", "-", "`gelu` (2 matrices), `swiglu` (3 matrices), empty = preset"),
    k("norm", "normalisation", "-", "`layernorm`, `rmsnorm`, `layernorm-np` (no weights: OLMo v1), empty = preset"),
    k("tied", "LM head tied to the embedding", "-", "`0`, `1`, empty = preset"),
    k("bias", "linear-layer biases", "-", "`none`, `qkv` (q/k/v only), `all`, empty = preset"),
    k("experts", "routed experts per MoE layer", "count", "0–1024 (0 = dense), empty = preset"),
    k("top_k", "experts each token uses", "count", "1–1024, empty = preset"),
    k("moe_ffn", "width of one routed expert", "count", "1–4194304, empty = `ffn` or preset"),
    k("shared_experts", "always-active experts per MoE layer, each `moe_ffn` wide", "count", "0–1024, empty = preset"),
    k("first_dense", "leading blocks with a dense `ffn`-wide MLP in an MoE model", "count", "0–1023, below layers, empty = preset"),
    k("positions", "learned absolute position embeddings (0 = rotary/ALiBi)", "positions", "0–16777216, empty = preset"),
    k("window", "sliding-window attention span W (bounds the KV cache of windowed layers)", "tokens", "0–16777216 (0 = none), empty = preset"),
    k("local_layers", "layers that attend within the window", "count", "0–1024, at most layers, empty = preset (scaled with a layers override)"),
    k("params", "explicit total parameters (DeepSpeed's cold input)", "parameters", "1–10^15, empty = from the architecture"),
    k("largest_layer", "explicit largest-layer parameters", "parameters", "1–10^15, empty = from the architecture"),
    k("mode", "training or inference", "-", "`train`, `infer`"),
    k("batch", "micro-batch per GPU", "sequences", "1–1048576"),
    k("seq", "sequence length (the prompt, in inference)", "tokens", "1–67108864"),
    k("gen", "tokens generated (inference)", "tokens", "0–67108864"),
    k("logits", "inference logits kept", "-", "`last` (generate: last position), `all` (every prompt position and the loss: evaluation, perplexity)"),
    k("gpus_per_node", "GPUs per node n", "GPUs", "1–1024"),
    k("nodes", "nodes", "nodes", "1–1048576"),
    k("dp", "data-parallel degree", "ranks", "1–1048576, `auto`/empty = GPUs / (tp·pp·cp)"),
    k("tp", "tensor-parallel degree", "ranks", "1–1048576"),
    k("pp", "pipeline-parallel degree", "stages", "1–1048576"),
    k("cp", "context-parallel degree", "ranks", "1–1048576"),
    k("zero", "ZeRO stage", "-", "0, 1, 2, 3"),
    k("offload_opt", "optimizer-state offload", "-", "`none`, `cpu`, `nvme`"),
    k("offload_param", "parameter offload (ZeRO-3)", "-", "`none`, `cpu`, `nvme`"),
    k("zero_init", "model built under deepspeed.zero.Init", "-", "`0`, `1`"),
    k("buffer_factor", "DeepSpeed additional_buffer_factor (host RAM)", "factor", "0 < x ≤ 100"),
    k("precision", "precision policy", "-", "`bf16`, `fp16` (mixed, fp32 master), `fp32`, `bf16-pure` (no master), `fp8` (bf16 + fp8 copies, fp32 master)"),
    k("grad_acc_dtype", "how gradients are kept", "-", "`compute` (16 B/param), `fp32` (18, Megatron main_grad), `both` (20, seed 003)"),
    k("optimizer", "optimizer", "-", "`adamw`, `adam`, `sgd`, `sgd-momentum`, `adam8bit`, `adafactor`, `lion`"),
    k("adam_impl", "PyTorch Adam/AdamW implementation (framework=pytorch): its temporaries in the step", "-", "`foreach` (sqrt(v) of every parameter), `fused` (none), `forloop` (two of the largest tensor)"),
    k("fsdp", "FSDP sharding strategy (overrides `zero`)", "-", "`none`, `full_shard`, `shard_grad_op`, `hybrid_shard`"),
    k("finetune", "full training or adapters", "-", "`full`, `lora`, `qlora`"),
    k("lora_rank", "LoRA rank r", "count", "1–65536"),
    k("lora_targets", "linears with adapters", "-", "`qv`, `attn`, `mlp`, `all`"),
    k("double_quant", "QLoRA double quantisation", "-", "`0`, `1`"),
    k("weight_dtype", "inference weight storage", "-", "`auto` (= precision), `fp32`, `bf16`, `fp16`, `fp8`, `int8`, `int4`"),
    k("quant_group", "weights per int8/int4 scale group", "weights", "1–1048576"),
    k("kv_dtype", "KV cache storage", "-", "`auto`, `fp32`, `bf16`, `fp16`, `fp8`, `int8`, `int4`"),
    k("sp", "sequence parallelism (with TP)", "-", "`0`, `1`"),
    k("recompute", "activation recomputation", "-", "`none`, `selective`, `full`"),
    k("vpp", "virtual pipeline stages per rank (interleaved)", "stages", "1–1024"),
    k("microbatches", "micro-batches per optimizer step", "count", "1–1048576"),
    k("ep", "expert-parallel degree", "ranks", "1–1024"),
    k("pin_memory", "pinned host buffers (ZeRO-3 offload)", "-", "`0`, `1`"),
    k("solve", "inverse solve to report", "-", "`none`, `max_batch`, `max_context`, `min_gpus`"),
    k("timeline", "add the step timeline (every allocation and free) to the JSON", "-", "`0`, `1`"),
    k("attn", "attention kernel", "-", "`flash`, `sdpa`, `eager` (stores the s² softmax)"),
    k("dropout", "dropout active (masks stored)", "-", "`0`, `1`"),
    k("schedule", "pipeline schedule", "-", "`1f1b`, `gpipe`, `interleaved` (with `vpp`)"),
    k("framework", "whose allocations are modelled", "-", "`deepspeed`, `pytorch`, `megatron`"),
    k("ckpt_layers", "layers per model chunk (per stage without `vpp`) checkpointed with `recompute=full`", "layers", "0 (= all)–1024"),
    k("cuda_ctx", "CUDA context + cuBLAS/cuDNN workspaces per GPU", "MiB", "0–65536"),
    k("nccl", "NCCL communicator buffers per GPU", "MiB", "0–65536, empty = 0 on one GPU, else 256"),
    k("frag", "allocator fragmentation (reserved − allocated)", "% of allocated", "0–100"),
    k("reduce_bucket", "DeepSpeed reduce_bucket_size", "elements", "0–10^12"),
    k("allgather_bucket", "DeepSpeed allgather_bucket_size", "elements", "0–10^12"),
    k("overlap_comm", "DeepSpeed overlap_comm (double-buffered reduce)", "-", "`0`, `1`"),
    k("prefetch_bucket", "DeepSpeed stage3_prefetch_bucket_size", "elements", "0–10^12"),
    k("max_live_params", "DeepSpeed stage3_max_live_parameters", "elements", "0–10^12"),
    k("gpu", "GPU preset id", "-", "a GPU id (see `memfit --help`)"),
    k("gpu_mem", "custom usable memory per GPU (overrides the preset)", "MiB", "1–1073741824, empty = preset"),
    k("convention", "whose accounting", "-", "`memfit`, `ds-doc`, `ds-0.14`, `ds-0.19`, `megatron`, `megatron-0.14`, `seed003`, `seed002`, `korthikanti`"),
    k("units", "display units", "-", "`gib` (2^30 B), `gb` (10^9 B)"),
];

/// The README's key table (markdown), generated from [`KEYS`] and the defaults so
/// the documentation cannot drift (a test compares it with README.md).
pub fn markdown_table() -> String {
    let d = Scenario::default();
    let mut t = String::from(
        "| key | meaning | unit | default | allowed values |\n|---|---|---|---|---|\n",
    );
    for spec in KEYS {
        let v = get_key(&d, spec.key);
        let default = if v.is_empty() {
            "—".to_string()
        } else {
            format!("`{v}`")
        };
        t.push_str(&format!(
            "| `{}` | {} | {} | {} | {} |\n",
            spec.key, spec.meaning, spec.unit, default, spec.allowed
        ));
    }
    t
}

fn parse_int(value: &str, lo: u64, hi: u64) -> Result<u64, String> {
    let t = value.trim().replace('_', "");
    let n: u64 = if let Some((m, e)) = t.split_once(['e', 'E']) {
        // Scientific notation for big counts, e.g. params=7e9 (must be an integer).
        let m: f64 = m
            .parse()
            .map_err(|_| format!("`{value}` is not a number"))?;
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

fn parse_u32(value: &str, lo: u32, hi: u32) -> Result<u32, String> {
    parse_int(value, lo as u64, hi as u64).map(|n| n as u32)
}

fn parse_opt_u32(value: &str, lo: u32, hi: u32) -> Result<Option<u32>, String> {
    if value.trim().is_empty() {
        Ok(None)
    } else {
        parse_u32(value, lo, hi).map(Some)
    }
}

fn parse_bool(value: &str) -> Result<bool, String> {
    match value.trim() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(format!("`{value}` is not 0 or 1")),
    }
}

fn parse_enum<T: Copy>(value: &str, options: &[(&str, T)]) -> Result<T, String> {
    let v = value.trim().to_ascii_lowercase();
    options
        .iter()
        .find(|(name, _)| *name == v)
        .map(|(_, t)| *t)
        .ok_or_else(|| {
            let names: Vec<&str> = options.iter().map(|(n, _)| *n).collect();
            format!("`{value}` is not one of {}", names.join(", "))
        })
}

const OFFLOADS: &[(&str, Offload)] = &[
    ("none", Offload::None),
    ("cpu", Offload::Cpu),
    ("nvme", Offload::Nvme),
];
const MLPS: &[(&str, Mlp)] = &[("gelu", Mlp::Gelu), ("swiglu", Mlp::Swiglu)];
const NORMS: &[(&str, Norm)] = &[
    ("layernorm", Norm::Layernorm),
    ("rmsnorm", Norm::Rmsnorm),
    ("layernorm-np", Norm::LayernormNp),
];
const MAX_PARAMS: u64 = 1_000_000_000_000_000;

/// Sets one key from its string value (the same parser serves the URL and the form).
///
/// # Errors
/// A message naming what is wrong with the value; the scenario is unchanged.
pub fn set_key(s: &mut Scenario, key: &str, value: &str) -> Result<(), String> {
    let v = value;
    match key {
        "v" => {
            let n = parse_u32(v, 0, u32::MAX)?;
            if n != VERSION {
                return Err(format!(
                    "format version `{v}` is unknown; reading as version {VERSION}"
                ));
            }
        }
        "model" => {
            let id = v.trim();
            if preset(id).is_none() {
                return Err(format!("unknown model `{v}` (the presets are listed by `memfit --help` and in the Preset menu)"));
            }
            s.model = id.to_string();
        }
        "layers" => s.arch.layers = parse_opt_u32(v, 1, 1024)?,
        "hidden" => s.arch.hidden = parse_opt_u32(v, 1, 1 << 20)?,
        "heads" => s.arch.heads = parse_opt_u32(v, 1, 4096)?,
        "kv_heads" => s.arch.kv_heads = parse_opt_u32(v, 1, 4096)?,
        "ffn" => s.arch.ffn = parse_opt_u32(v, 1, 1 << 22)?,
        "vocab" => s.arch.vocab = parse_opt_u32(v, 1, 1 << 24)?,
        "mlp" => {
            s.arch.mlp = if v.trim().is_empty() {
                None
            } else {
                Some(parse_enum(v, MLPS)?)
            }
        }
        "norm" => {
            s.arch.norm = if v.trim().is_empty() {
                None
            } else {
                Some(parse_enum(v, NORMS)?)
            }
        }
        "tied" => {
            s.arch.tied = if v.trim().is_empty() {
                None
            } else {
                Some(parse_bool(v)?)
            }
        }
        "bias" => {
            s.arch.bias = if v.trim().is_empty() {
                None
            } else {
                Some(parse_enum(
                    v,
                    &[("none", Bias::None), ("qkv", Bias::Qkv), ("all", Bias::All)],
                )?)
            }
        }
        "experts" => {
            s.arch.experts = if v.trim().is_empty() {
                None
            } else {
                Some(parse_u32(v, 0, 1024)?)
            }
        }
        "top_k" => s.arch.top_k = parse_opt_u32(v, 1, 1024)?,
        "moe_ffn" => s.arch.moe_ffn = parse_opt_u32(v, 1, 1 << 22)?,
        "shared_experts" => s.arch.shared_experts = parse_opt_u32(v, 0, 1024)?,
        "first_dense" => s.arch.first_dense = parse_opt_u32(v, 0, 1023)?,
        "positions" => s.arch.positions = parse_opt_u32(v, 0, 1 << 24)?,
        "window" => s.arch.window = parse_opt_u32(v, 0, 1 << 24)?,
        "local_layers" => s.arch.local_layers = parse_opt_u32(v, 0, 1024)?,
        "head_dim" => s.arch.head_dim = parse_opt_u32(v, 1, 65_536)?,
        "params" => {
            s.params = if v.trim().is_empty() {
                None
            } else {
                Some(parse_int(v, 1, MAX_PARAMS)?)
            }
        }
        "largest_layer" => {
            s.largest_layer = if v.trim().is_empty() {
                None
            } else {
                Some(parse_int(v, 1, MAX_PARAMS)?)
            }
        }
        "mode" => s.mode = parse_enum(v, &[("train", Mode::Train), ("infer", Mode::Infer)])?,
        "batch" => s.batch = parse_u32(v, 1, 1 << 20)?,
        "seq" => s.seq = parse_u32(v, 1, 1 << 26)?,
        "gen" => s.gen = parse_u32(v, 0, 1 << 26)?,
        "gpus_per_node" => s.gpus_per_node = parse_u32(v, 1, 1024)?,
        "nodes" => s.nodes = parse_u32(v, 1, 1 << 20)?,
        "dp" => {
            s.dp = if v.trim().is_empty() || v.trim() == "auto" {
                None
            } else {
                Some(parse_u32(v, 1, 1 << 20)?)
            }
        }
        "tp" => s.tp = parse_u32(v, 1, 1 << 20)?,
        "pp" => s.pp = parse_u32(v, 1, 1 << 20)?,
        "cp" => s.cp = parse_u32(v, 1, 1 << 20)?,
        "zero" => {
            let n = parse_int(v, 0, 3)
                .map_err(|_| format!("`{v}` is not a ZeRO stage (0, 1, 2 or 3)"))?;
            s.zero = Zero::from_number(n as u8).unwrap_or_default();
        }
        "offload_opt" => s.offload_opt = parse_enum(v, OFFLOADS)?,
        "offload_param" => s.offload_param = parse_enum(v, OFFLOADS)?,
        "zero_init" => s.zero_init = parse_bool(v)?,
        "buffer_factor" => {
            let f: f64 = v
                .trim()
                .parse()
                .map_err(|_| format!("`{v}` is not a number"))?;
            if !(f.is_finite() && f > 0.0 && f <= 100.0) {
                return Err(format!("`{v}` is outside (0, 100]"));
            }
            s.buffer_factor = f;
        }
        "precision" => s.precision = parse_enum(v, &Precision::ALL.map(|p| (p.as_str(), p)))?,
        "grad_acc_dtype" => s.grad_acc = parse_enum(v, &GradAcc::ALL.map(|p| (p.as_str(), p)))?,
        "optimizer" => s.optimizer = parse_enum(v, &Optimizer::ALL.map(|p| (p.as_str(), p)))?,
        "adam_impl" => s.adam_impl = parse_enum(v, &AdamImpl::ALL.map(|p| (p.as_str(), p)))?,
        "logits" => s.logits = parse_enum(v, &Logits::ALL.map(|p| (p.as_str(), p)))?,
        "fsdp" => s.fsdp = parse_enum(v, &Fsdp::ALL.map(|p| (p.as_str(), p)))?,
        "finetune" => s.finetune = parse_enum(v, &Finetune::ALL.map(|p| (p.as_str(), p)))?,
        "lora_rank" => s.lora_rank = parse_u32(v, 1, 65_536)?,
        "lora_targets" => {
            s.lora_targets = parse_enum(v, &LoraTargets::ALL.map(|p| (p.as_str(), p)))?
        }
        "double_quant" => s.double_quant = parse_bool(v)?,
        "weight_dtype" => s.weight_dtype = parse_enum(v, &Dtype::ALL.map(|p| (p.as_str(), p)))?,
        "quant_group" => s.quant_group = parse_u32(v, 1, 1 << 20)?,
        "kv_dtype" => s.kv_dtype = parse_enum(v, &Dtype::ALL.map(|p| (p.as_str(), p)))?,
        "sp" => s.sp = parse_bool(v)?,
        "recompute" => {
            s.recompute = parse_enum(
                v,
                &[
                    ("none", Recompute::None),
                    ("selective", Recompute::Selective),
                    ("full", Recompute::Full),
                ],
            )?
        }
        "vpp" => s.vpp = parse_u32(v, 1, 1024)?,
        "microbatches" => s.microbatches = parse_u32(v, 1, 1 << 20)?,
        "ep" => s.ep = parse_u32(v, 1, 1024)?,
        "pin_memory" => s.pin_memory = parse_bool(v)?,
        "timeline" => s.timeline = parse_bool(v)?,
        "solve" => s.solve = parse_enum(v, &Solve::ALL.map(|p| (p.as_str(), p)))?,
        "attn" => s.attn = parse_enum(v, &Attn::ALL.map(|p| (p.as_str(), p)))?,
        "dropout" => s.dropout = parse_bool(v)?,
        "schedule" => s.schedule = parse_enum(v, &Schedule::ALL.map(|p| (p.as_str(), p)))?,
        "framework" => s.framework = parse_enum(v, &Framework::ALL.map(|p| (p.as_str(), p)))?,
        "ckpt_layers" => s.ckpt_layers = parse_u32(v, 0, 1024)?,
        "cuda_ctx" => s.cuda_ctx_mib = parse_u32(v, 0, 65_536)?,
        "nccl" => s.nccl_mib = parse_opt_u32(v, 0, 65_536)?,
        "frag" => s.frag_pct = parse_u32(v, 0, 100)?,
        "reduce_bucket" => s.reduce_bucket = parse_int(v, 0, 1_000_000_000_000)?,
        "allgather_bucket" => s.allgather_bucket = parse_int(v, 0, 1_000_000_000_000)?,
        "overlap_comm" => s.overlap_comm = parse_bool(v)?,
        "prefetch_bucket" => s.prefetch_bucket = parse_int(v, 0, 1_000_000_000_000)?,
        "max_live_params" => s.max_live_params = parse_int(v, 0, 1_000_000_000_000)?,
        "gpu" => {
            let id = v.trim();
            if gpu(id).is_none() {
                return Err(format!(
                    "unknown GPU `{v}`; known: {}",
                    GPUS.iter().map(|g| g.id).collect::<Vec<_>>().join(", ")
                ));
            }
            s.gpu = id.to_string();
        }
        "gpu_mem" => {
            s.gpu_mem_mib = if v.trim().is_empty() {
                None
            } else {
                Some(parse_int(v, 1, 1 << 30)?)
            }
        }
        "convention" => {
            s.convention = parse_enum(v, &Convention::ALL.map(|c| (c.as_str(), c)))?;
        }
        "units" => s.units = parse_enum(v, &[("gib", Units::Gib), ("gb", Units::Gb)])?,
        _ => return Err(format!("unknown key `{key}` ignored")),
    }
    Ok(())
}

fn opt<T: ToString>(o: &Option<T>) -> String {
    o.as_ref().map(T::to_string).unwrap_or_default()
}

/// The canonical string value of one key (empty for "not set / preset value").
pub fn get_key(s: &Scenario, key: &str) -> String {
    match key {
        "v" => VERSION.to_string(),
        "model" => s.model.clone(),
        "layers" => opt(&s.arch.layers),
        "hidden" => opt(&s.arch.hidden),
        "heads" => opt(&s.arch.heads),
        "kv_heads" => opt(&s.arch.kv_heads),
        "ffn" => opt(&s.arch.ffn),
        "vocab" => opt(&s.arch.vocab),
        "mlp" => s
            .arch
            .mlp
            .map(|m| m.as_str().to_string())
            .unwrap_or_default(),
        "norm" => s
            .arch
            .norm
            .map(|m| m.as_str().to_string())
            .unwrap_or_default(),
        "tied" => s
            .arch
            .tied
            .map(|t| (t as u8).to_string())
            .unwrap_or_default(),
        "bias" => s
            .arch
            .bias
            .map(|b| match b {
                Bias::None => "none".to_string(),
                Bias::Qkv => "qkv".to_string(),
                Bias::All => "all".to_string(),
            })
            .unwrap_or_default(),
        "experts" => opt(&s.arch.experts),
        "top_k" => opt(&s.arch.top_k),
        "moe_ffn" => opt(&s.arch.moe_ffn),
        "shared_experts" => opt(&s.arch.shared_experts),
        "first_dense" => opt(&s.arch.first_dense),
        "positions" => opt(&s.arch.positions),
        "window" => opt(&s.arch.window),
        "local_layers" => opt(&s.arch.local_layers),
        "head_dim" => opt(&s.arch.head_dim),
        "params" => opt(&s.params),
        "largest_layer" => opt(&s.largest_layer),
        "mode" => match s.mode {
            Mode::Train => "train".into(),
            Mode::Infer => "infer".into(),
        },
        "batch" => s.batch.to_string(),
        "seq" => s.seq.to_string(),
        "gen" => s.gen.to_string(),
        "gpus_per_node" => s.gpus_per_node.to_string(),
        "nodes" => s.nodes.to_string(),
        "dp" => opt(&s.dp),
        "tp" => s.tp.to_string(),
        "pp" => s.pp.to_string(),
        "cp" => s.cp.to_string(),
        "zero" => s.zero.number().to_string(),
        "offload_opt" => s.offload_opt.as_str().into(),
        "offload_param" => s.offload_param.as_str().into(),
        "zero_init" => (s.zero_init as u8).to_string(),
        "buffer_factor" => s.buffer_factor.to_string(),
        "precision" => s.precision.as_str().into(),
        "grad_acc_dtype" => s.grad_acc.as_str().into(),
        "optimizer" => s.optimizer.as_str().into(),
        "adam_impl" => s.adam_impl.as_str().into(),
        "logits" => s.logits.as_str().into(),
        "fsdp" => s.fsdp.as_str().into(),
        "finetune" => s.finetune.as_str().into(),
        "lora_rank" => s.lora_rank.to_string(),
        "lora_targets" => s.lora_targets.as_str().into(),
        "double_quant" => (s.double_quant as u8).to_string(),
        "weight_dtype" => s.weight_dtype.as_str().into(),
        "quant_group" => s.quant_group.to_string(),
        "kv_dtype" => s.kv_dtype.as_str().into(),
        "sp" => (s.sp as u8).to_string(),
        "recompute" => s.recompute.as_str().into(),
        "vpp" => s.vpp.to_string(),
        "microbatches" => s.microbatches.to_string(),
        "ep" => s.ep.to_string(),
        "pin_memory" => (s.pin_memory as u8).to_string(),
        "timeline" => (s.timeline as u8).to_string(),
        "solve" => s.solve.as_str().into(),
        "attn" => s.attn.as_str().into(),
        "dropout" => (s.dropout as u8).to_string(),
        "schedule" => s.schedule.as_str().into(),
        "framework" => s.framework.as_str().into(),
        "ckpt_layers" => s.ckpt_layers.to_string(),
        "cuda_ctx" => s.cuda_ctx_mib.to_string(),
        "nccl" => opt(&s.nccl_mib),
        "frag" => s.frag_pct.to_string(),
        "reduce_bucket" => s.reduce_bucket.to_string(),
        "allgather_bucket" => s.allgather_bucket.to_string(),
        "overlap_comm" => (s.overlap_comm as u8).to_string(),
        "prefetch_bucket" => s.prefetch_bucket.to_string(),
        "max_live_params" => s.max_live_params.to_string(),
        "gpu" => s.gpu.clone(),
        "gpu_mem" => opt(&s.gpu_mem_mib),
        "convention" => s.convention.as_str().into(),
        "units" => s.units.as_str().into(),
        _ => String::new(),
    }
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

/// Encodes a scenario: `v=1` followed by every key whose value differs from the
/// default, in canonical order.
///
/// ```
/// use memfit_core::scenario::{Scenario, Zero};
/// use memfit_core::contract::query::{encode, decode};
/// let mut s = Scenario::default();
/// s.zero = Zero::Z3;
/// s.gpus_per_node = 8;
/// assert_eq!(encode(&s), "v=1&gpus_per_node=8&zero=3");
/// assert_eq!(decode(&encode(&s)).0, s);
/// ```
pub fn encode(s: &Scenario) -> String {
    let d = Scenario::default();
    let mut parts = vec![format!("v={VERSION}")];
    for spec in &KEYS[1..] {
        let v = get_key(s, spec.key);
        if v != get_key(&d, spec.key) {
            parts.push(format!("{}={}", spec.key, percent_encode(&v)));
        }
    }
    parts.join("&")
}

/// Applies an imported `config.json`: selects the base preset, then sets each key
/// through the same parser as the URL. Returns problems as warnings.
pub fn apply_import(s: &mut Scenario, imported: &crate::hfconfig::Imported) -> Vec<Warning> {
    s.select_model(imported.base);
    let mut warnings = Vec::new();
    for (k, v) in &imported.keys {
        if let Err(message) = set_key(s, k, v) {
            warnings.push(Warning {
                key: (*k).into(),
                value: v.clone(),
                message,
            });
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

/// Decodes a query string (with or without the leading `?`). Never fails: bad
/// values keep the default and come back as warnings naming key and value.
pub fn decode(query: &str) -> (Scenario, Vec<Warning>) {
    decode_onto(Scenario::default(), query)
}

/// Applies a query string on top of `base` (an imported config's scenario: the query's
/// keys win), with the same per-key warnings as [`decode`].
pub fn decode_onto(base: Scenario, query: &str) -> (Scenario, Vec<Warning>) {
    let mut s = base;
    let mut warnings = Vec::new();
    let q = query.trim().trim_start_matches('?');
    let mut seen: Vec<String> = Vec::new();
    let mut pairs: Vec<(String, String)> = Vec::new();
    for part in q.split('&').filter(|p| !p.is_empty()) {
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
        pairs.push((k, v));
    }
    // The model goes first so that architecture keys apply on top of it whatever their order.
    pairs.sort_by_key(|(k, _)| k != "model");
    for (k, v) in pairs {
        if let Err(mut message) = set_key(&mut s, &k, &v) {
            if KEYS.iter().any(|spec| spec.key == k) && k != "v" {
                let kept = get_key(&s, &k);
                message.push_str(&format!(
                    "; using {}",
                    if kept.is_empty() {
                        "the preset's value".into()
                    } else {
                        format!("`{kept}`")
                    }
                ));
            }
            warnings.push(Warning {
                key: k,
                value: v,
                message,
            });
        }
    }
    (s, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_encodes_to_version_only() {
        assert_eq!(encode(&Scenario::default()), "v=1");
        assert_eq!(decode("").0, Scenario::default());
    }

    #[test]
    fn malformed_url_from_the_issue() {
        let (s, w) = decode("?batch=-3&zero=9&tp=abc&model=%3Cscript%3Ealert(1)%3C/script%3E");
        assert_eq!(s, Scenario::default());
        let keys: Vec<&str> = w.iter().map(|w| w.key.as_str()).collect();
        assert_eq!(keys, ["model", "batch", "zero", "tp"]);
        assert_eq!(w[0].value, "<script>alert(1)</script>");
        assert!(w[1].message.contains("negative"), "{}", w[1].message);
        assert!(w[3].message.contains("`abc` is not a whole number"));
    }

    #[test]
    fn unknown_and_duplicate_keys_warn() {
        let (s, w) = decode("tpp=2&tp=2&tp=4");
        assert_eq!(s.tp, 4);
        assert_eq!(w.len(), 2);
        assert!(w
            .iter()
            .any(|w| w.key == "tpp" && w.message.contains("unknown key")));
    }

    #[test]
    fn scientific_and_grouped_counts() {
        let (s, w) = decode("params=2851e6&largest_layer=32_000_000");
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(s.params, Some(2_851_000_000));
        assert_eq!(s.largest_layer, Some(32_000_000));
        assert!(decode("params=1.5e0").1[0].message.contains("whole"));
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
        assert_eq!(s.model, "llama-3-8b");
        assert_eq!(s.arch().layers, 40);
    }

    #[test]
    fn every_key_has_a_getter_and_setter() {
        let s = Scenario::default();
        for spec in KEYS {
            let mut t = s.clone();
            let v = get_key(&s, spec.key);
            assert!(set_key(&mut t, spec.key, &v).is_ok(), "{}={v}", spec.key);
            assert_eq!(t, s, "{}", spec.key);
        }
    }
}
