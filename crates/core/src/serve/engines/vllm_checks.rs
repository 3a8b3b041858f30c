//! What vLLM refuses, in each release's own words: a cache dtype it lacks, `tp` that does
//! not divide the heads, more memory than the device has free, MXFP4 on a dense model, and
//! the KV pool's "no available memory" and "max seq len" refusals.

use super::*;
use crate::scenario::{
    Dtype, VLLM_MXFP4_FROM as MXFP4_FROM, VLLM_MXFP4_LINEAR_FALLBACK as MXFP4_LINEAR_FALLBACK,
};

/// What vLLM refuses before the KV cache is sized, in the order it meets them: the
/// command line (`--kv-cache-dtype`), the engine config (attention heads against TP), the
/// worker's start (free memory against `gpu_memory_utilization`), the model's load (MXFP4
/// on a dense model).
pub(super) fn refusal(
    s: &Scenario,
    arch: &Arch,
    l: &Layout,
    v: Version,
    total: u64,
    limits: (u64, u64),
) -> Option<String> {
    if let Some(e) = kv_cache_dtype_refusal(s, v) {
        return Some(e);
    }
    if let Some(e) = block_size_refusal(s, v) {
        return Some(e);
    }
    if let Some(e) = scheduler_refusal(limits) {
        return Some(e);
    }
    if let Some(e) = expert_refusal(s, arch, l, v) {
        return Some(e);
    }
    if arch.heads.get() > 0 && l.tp.get() > 0 && !arch.heads.get().is_multiple_of(l.tp.get()) {
        return Some(vllm_heads_vs_tp(arch.heads.get(), l.tp.get()));
    }
    if let Some(e) = startup_memory_refusal(s, v, total) {
        return Some(e);
    }
    let dense = arch.experts == 0;
    let mxfp4 = s.numerics.quant == crate::quant::Quant::Mxfp4;
    if mxfp4 && dense && v >= MXFP4_FROM && v < MXFP4_LINEAR_FALLBACK {
        return Some("NotImplementedError: Mxfp4 linear layer is not implemented".to_string());
    }
    None
}

/// `--block-size`'s choices in release `v`; `None` where any positive size is taken.
///
/// Source: vLLM `engine/arg_utils.py` (`choices=[8, 16, 32, 64, 128]`, 0.6.6–0.8.0 read;
/// 0.8.1–0.8.4 not read, taken as 0.8.0), then the `BlockSize` literal that `get_kwargs`
/// turns into argparse choices (`config.py` 0.8.5–0.10.x, `config/cache.py` 0.10.2–0.17.x:
/// `Literal[1, 8, 16, 32, 64, 128]`, 256 added in 0.12.0), and from 0.18.0 a plain `int`
/// (`SkipValidation[int]`; 0.33.0 `Field(gt=0)`).
pub(crate) fn block_sizes(v: Version) -> Option<&'static [u32]> {
    if v < Version(0, 8, 5, 0) {
        Some(&[8, 16, 32, 64, 128])
    } else if v < Version(0, 12, 0, 0) {
        Some(&[1, 8, 16, 32, 64, 128])
    } else if v < Version(0, 18, 0, 0) {
        Some(&[1, 8, 16, 32, 64, 128, 256])
    } else {
        None
    }
}

/// argparse's refusal of a `block_size` outside the release's choices ([`block_sizes`]):
/// "argument --block-size: invalid choice: 7 (choose from 8, 16, 32, 64, 128)".
pub(crate) fn block_size_refusal(s: &Scenario, v: Version) -> Option<String> {
    let b = s.serving.block_size?.get();
    let choices = block_sizes(v)?;
    (!choices.contains(&b)).then(|| {
        let list: Vec<String> = choices.iter().map(u32::to_string).collect();
        format!(
            "argument --block-size: invalid choice: {b} (choose from {})",
            list.join(", ")
        )
    })
}

/// `SchedulerConfig`'s refusal of fewer batched tokens than sequences, on the values the
/// engine arguments resolve to: `(max_num_seqs, max_num_batched_tokens)`.
///
/// Source: vLLM `SchedulerConfig._verify_args` / `__post_init__` (`config.py` 0.6.6–0.10.0,
/// `config/scheduler.py` 0.10.1–0.33.0; the same words in every release read):
/// "max_num_batched_tokens ({n}) must be greater than or equal to max_num_seqs ({seqs})."
///
/// # Example
/// `max_seqs=4096&max_batched_tokens=2048`: refused in every release. `max_batched_tokens=512`
/// alone on an H100: 0.9.2 refuses it (its default `max_num_seqs` there is 1,024 > 512);
/// 0.10.1 and later cap the default at 512 and start.
pub(crate) fn scheduler_refusal((seqs, n): (u64, u64)) -> Option<String> {
    (n < seqs).then(|| {
        format!(
            "max_num_batched_tokens ({n}) must be greater than or equal to max_num_seqs ({seqs})."
        )
    })
}

/// vLLM's refusal of a tensor-parallel size that does not divide the attention heads.
///
/// Source: vLLM `ModelConfig.verify_with_parallel_config` (`config.py` 0.6.6–0.10.x,
/// `config/model.py` 0.11–0.33.0; the same words in every release): "Total number of
/// attention heads ({a}) must be divisible by tensor parallel size ({t})."
pub(crate) fn vllm_heads_vs_tp(heads: u32, tp: u32) -> String {
    format!("Total number of attention heads ({heads}) must be divisible by tensor parallel size ({tp}).")
}

/// `--kv-cache-dtype`'s choices in release `v`, in the order the source declares them.
///
/// Source: vLLM `engine/arg_utils.py` (`choices=['auto', 'fp8', 'fp8_e5m2', 'fp8_e4m3']`,
/// 0.6.6–0.8.4), then the `CacheDType` literal (`config.py` 0.8.5–0.10.x, `config/cache.py`
/// 0.10.2–0.33.0): `fp8_inc` from 0.10.0, `bfloat16` 0.11.0, `fp8_ds_mla` 0.11.1, `float16`
/// 0.18.0, the turboquant types, `int8_per_token_head`, `fp8_per_token_head` and `nvfp4`
/// 0.20.0, `int4_per_token_head` 0.25.0, `nvfp4_4over6` 0.28.0, `nvfp4_ds_mla` 0.30.0,
/// `ultraquant_4bit` 0.32.0, the octave types 0.33.0 (sdists of every minor release read).
pub(crate) fn cache_dtypes(v: Version) -> Vec<&'static str> {
    if v < Version(0, 8, 5, 0) {
        return vec!["auto", "fp8", "fp8_e5m2", "fp8_e4m3"];
    }
    let from = |x: (u16, u16)| v >= Version(x.0, x.1, 0, 0);
    let mut out = vec!["auto"];
    if from((0, 18)) {
        out.push("float16");
    }
    if from((0, 11)) {
        out.push("bfloat16");
    }
    out.extend(["fp8", "fp8_e4m3", "fp8_e5m2"]);
    if from((0, 10)) {
        out.push("fp8_inc");
    }
    if v >= Version(0, 11, 1, 0) {
        out.push("fp8_ds_mla");
    }
    if from((0, 30)) {
        out.push("nvfp4_ds_mla");
    }
    if from((0, 20)) {
        out.extend([
            "turboquant_k8v4",
            "turboquant_4bit_nc",
            "turboquant_k3v4_nc",
            "turboquant_3bit_nc",
        ]);
    }
    if from((0, 33)) {
        out.extend(["octave_k3v4", "octave_k3v3", "octave_k3v3_compact"]);
    }
    if from((0, 32)) {
        out.push("ultraquant_4bit");
    }
    if from((0, 25)) {
        out.push("int4_per_token_head");
    }
    if from((0, 20)) {
        out.extend(["int8_per_token_head", "fp8_per_token_head", "nvfp4"]);
    }
    if from((0, 28)) {
        out.push("nvfp4_4over6");
    }
    out
}

/// vLLM's spelling of memfit's `kv_dtype`: `None` where the compute dtype's own width
/// (what `auto` stores) needs no flag, else the value a user would pass.
fn cache_dtype_of(s: &Scenario) -> Option<&'static str> {
    let d = s.numerics.kv_dtype;
    let auto_bits = Dtype::Auto.bits(s.numerics.precision);
    Some(match d {
        Dtype::Auto | Dtype::Fp8 => return None,
        Dtype::Bf16 | Dtype::Fp16 | Dtype::Fp32 if d.bits(s.numerics.precision) == auto_bits => {
            return None
        }
        Dtype::Bf16 => "bfloat16",
        Dtype::Fp16 => "float16",
        Dtype::Fp32 => "float32",
        Dtype::Int8 => "int8_per_token_head",
        Dtype::Int4 => "int4_per_token_head",
        other => other.as_str(),
    })
}

/// vLLM's refusal of a cache dtype release `v` does not have: argparse's "invalid choice"
/// (choices sorted from 0.8.5, where they come from the `CacheDType` literal), or from
/// 0.33.0 `CacheConfig`'s validator (`--kv-cache-dtype` became free text there; pydantic
/// wraps this `ValueError` in its `ValidationError`).
///
/// Source: vLLM `engine/arg_utils.py` (`literal_to_kwargs`: `sorted(options)`), CPython
/// `argparse._check_value` ("invalid choice: %(value)r (choose from %(choices)s)", each
/// choice `repr`'d), vLLM 0.33.0 `config/cache.py CacheConfig._validate_cache_dtype`.
pub(crate) fn kv_cache_dtype_refusal(s: &Scenario, v: Version) -> Option<String> {
    let name = cache_dtype_of(s)?;
    let mut choices = cache_dtypes(v);
    if choices.contains(&name) {
        return None;
    }
    // What a user of this release would type: vLLM's word where it has one for the width.
    let value = match s.numerics.kv_dtype {
        Dtype::Bf16 | Dtype::Fp16 => name,
        d => d.as_str(),
    };
    if v >= Version(0, 33, 0, 0) {
        return Some(format!(
            "Invalid kv_cache_dtype: '{value}'. Valid values are: [{}]",
            py_strs(&choices)
        ));
    }
    if v >= Version(0, 8, 5, 0) {
        choices.sort_unstable();
    }
    Some(format!(
        "argument --kv-cache-dtype: invalid choice: '{value}' (choose from {})",
        py_strs(&choices)
    ))
}

/// vLLM's refusal to start when the free memory is less than `gpu_memory_utilization` of
/// the total (from 0.9.1): with memfit's CUDA context already on the device, a `gpu_util`
/// above `(M_total − ctx)/M_total` (1.0 always) is refused.
///
/// # Formula
/// `refuse when M_total − ctx < u·M_total`   (`⌈u·M_total⌉` from 0.14)
///
/// Source: vLLM `v1/worker/gpu_worker.py Worker.init_device` (0.9.1–0.13: "Free memory on
/// device (…/… GiB) on startup is less than desired GPU memory utilization (…)"), from 0.14
/// `v1/worker/utils.py request_memory` (the device named, `format_gib` numbers), through 0.33.0.
pub(crate) fn startup_memory_refusal(s: &Scenario, v: Version, total: u64) -> Option<String> {
    if v < Version(0, 9, 1, 0) {
        return None;
    }
    let util = s.serving.gpu_util?;
    let free = total.saturating_sub(s.cuda_ctx_mib() as u64 * MIB);
    let product = total as f64 * util;
    let requested = if v >= Version(0, 14, 0, 0) {
        product.ceil()
    } else {
        product
    };
    if (free as f64) >= requested {
        return None;
    }
    let device = if v >= Version(0, 14, 0, 0) {
        " cuda:0"
    } else {
        ""
    };
    Some(format!(
        "Free memory on device{device} ({}/{} GiB) on startup is less than desired GPU memory utilization ({util:?}, {} GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.",
        py_gib(free),
        py_gib(total),
        py_gib(requested as u64)
    ))
}

/// vLLM's refusal when no memory is left for the KV cache; the documentation link from 0.13.
///
/// Source: vLLM `worker/worker.py raise_if_cache_size_invalid` (V0, ≤ 0.7),
/// `v1/core/kv_cache_utils.py check_enough_kv_cache_memory` (0.8–0.33.0).
pub(crate) fn vllm_no_memory(v: Version) -> String {
    let link = if v >= Version(0, 13, 0, 0) {
        " See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."
    } else {
        ""
    };
    format!("No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.{link}")
}

/// The V0 engine's (≤ 0.7) refusal when one request of `max_len` does not fit: the pool's
/// tokens `blocks·B` against `max_model_len`.
///
/// Source: vLLM `worker/worker.py raise_if_cache_size_invalid` (0.6.6.post1, 0.7.3).
pub(crate) fn vllm_v0_too_long(ml: u64, tokens: u64) -> String {
    format!("The model's max seq len ({ml}) is larger than the maximum number of tokens that can be stored in KV cache ({tokens}). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.")
}

/// vLLM's refusal when one request of `max_len` does not fit, as each release words it
/// (`check_enough_kv_cache_memory`): "models's" until 0.22, the documentation link from
/// 0.13, `format_gib` numbers (`round(x, 2)`) from 0.14, the CPU-backend remark from 0.22.
pub(crate) fn vllm_too_long(v: Version, ml: u64, need: u64, avail: u64, fit: u64) -> String {
    let num = |b: u64| {
        if v >= Version(0, 14, 0, 0) {
            py_gib(b)
        } else {
            format!("{:.2}", b as f64 / GIB as f64)
        }
    };
    let word = if v >= Version(0, 22, 0, 0) {
        "model's"
    } else {
        "models's"
    };
    let util = if v >= Version(0, 22, 0, 0) {
        "`gpu_memory_utilization` (which also controls CPU memory on the CPU backend)"
    } else {
        "`gpu_memory_utilization`"
    };
    let link = if v >= Version(0, 13, 0, 0) {
        " See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."
    } else {
        ""
    };
    format!(
        "To serve at least one request with the {word} max seq len ({ml}), ({} GiB KV cache is needed, which is larger than the available KV cache memory ({} GiB). Based on the available memory, the estimated maximum model length is {fit}. Try increasing {util} or decreasing `max_model_len` when initializing the engine.{link}",
        num(need),
        num(avail)
    )
}
