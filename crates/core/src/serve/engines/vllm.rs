//! vLLM's start-up: the budget, the profiling run, the KV pool, the refusal's wording.

use super::*;
use crate::scenario::{
    Dtype, VLLM_MXFP4_FROM as MXFP4_FROM, VLLM_MXFP4_LINEAR_FALLBACK as MXFP4_LINEAR_FALLBACK,
    VLLM_V1_FROM,
};

/// What changes between vLLM releases (see docs/serving.md for the era table).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct VllmEra {
    /// The V0 engine (≤ 0.7): attention runs in the profile, `max_num_seqs` 256.
    pub v0: bool,
    /// 0.8.0–0.9.0: the V1 formula that charges all non-torch memory, the CUDA context
    /// included.
    pub charges_context: bool,
    /// `ceil(util·total)` (0.14+) instead of the float product.
    pub ceil_budget: bool,
    /// Default `gpu_memory_utilization`: 0.90, 0.92 from 0.20.
    pub util: f64,
    /// CUDA graphs estimated and subtracted before the KV cache (0.20+).
    pub graphs: bool,
    /// GPUs of ≥ 160 GiB get 16,384 batched tokens in the API server (0.29+).
    pub big_batch_160: bool,
}

impl VllmEra {
    /// The era of release `v`.
    pub(crate) fn of(v: Version) -> VllmEra {
        VllmEra {
            v0: v < VLLM_V1_FROM,
            charges_context: v >= Version(0, 8, 0) && v < Version(0, 9, 1),
            ceil_budget: v >= Version(0, 14, 0),
            util: if v >= Version(0, 20, 0) { 0.92 } else { 0.90 },
            graphs: v >= Version(0, 20, 0),
            big_batch_160: v >= Version(0, 29, 0),
        }
    }
}

/// vLLM's start-up: the budget, the profiling run, the KV pool.
///
/// # Formula
/// ```text
/// budget  = u · M_total   (⌈·⌉ from 0.14)          u = gpu_memory_utilization (0.90; 0.92 from 0.20)
/// KV      = budget − W − A − N_t [− ctx 0.8.0–0.9.0] [− G from 0.20]
/// A       = max(A_fwd, 16 · min(max_num_seqs, max_num_batched_tokens) · V + A_moe)
/// N_t     = 256 MiB, + 1,894 MiB with more than one rank on an NVSwitch system (NVLS)
/// blocks  = ⌊KV / (B · c_tok)⌋;  tokens = blocks·B
/// concurrency = blocks / ⌈max_len / B⌉   (V0: blocks·B / max_len)
/// ```
/// `M_total` the device total `cudaMemGetInfo` reports; `W` the weights (+ the rotary
/// cos/sin cache `P·d·k`); `A = max(A_fwd, A_samp)` the profiling run's torch peak:
/// the forward over `max_num_batched_tokens` tokens (attention skipped in V1) or the
/// dummy sampler over `min(max_num_seqs, tokens)` rows at [`SAMPLER_BYTES`] per logit;
/// `N_t` non-torch memory (cuBLAS workspaces; NCCL's buffers with more than one rank); `B` the
/// block size (16); `c_tok` the KV bytes per token on the rank.
///
/// Source: vLLM `v1/worker/gpu_worker.py determine_available_memory`, `utils/mem_utils.py
/// memory_profiling`, `v1/core/kv_cache_utils.py get_num_blocks` and
/// `check_enough_kv_cache_memory`, `engine/arg_utils.py` defaults (sdists 0.6.6–0.33.0).
///
/// # Example
/// Llama 3 8B, H100 (85,029,158,912 B), u = 0.90, 0.11: budget 76,526,243,020 B; W =
/// 16,060,522,496 + 2,097,152 (rotary, P = 8,192); each block of 16 tokens holds 2 MiB.
pub(super) fn plan(s: &Scenario, p: &Prepared, l: &Layout) -> Plan {
    let v = used_release(s);
    let era = VllmEra::of(v);
    let arch = &p.arch;
    let total = device_total(s);
    let budget = budget_of(s, era, total);
    let ml = max_len(s);
    let split = expert_split(s, arch, l, v);
    let weights = weights(s, p, l, split);
    let activation = profile_peak(s, arch, l, era, ml, split);
    let (non_torch, graphs) = non_torch(s, l, era, split);
    let used = [&weights, &activation, &non_torch, &graphs]
        .iter()
        .fold(0u64, |a, e| a.saturating_add(e.eval()));
    let kv_bytes = budget.saturating_sub(used);
    let (per_token, _, _) = per_token(s, arch, l);
    // V1 with Mamba / convolution blocks: one shared pool of equal pages (`hybrid`).
    let hybrid = if era.v0 {
        None
    } else {
        hybrid::vllm_pool(s, arch, l, kv_bytes, ml)
    };
    if let Some(h) = hybrid {
        let src = ep_sources(SOURCES, split.is_some());
        let parts = [weights, activation, non_torch, graphs];
        return hybrid_plan(
            s,
            v,
            budget,
            parts,
            &h,
            ml,
            era,
            (arch, l),
            total,
            kv_bytes,
            src,
        );
    }
    let (block, pl) = kv_pool(s, arch, v, kv_bytes, per_token, ml);
    let kv = Expr::new(&[
        Sym("blocks", pl.blocks as u128),
        Sym("B", block as u128),
        Mul,
        Sym("c_tok", per_token as u128),
        Mul,
    ]);
    let error = refusal(s, arch, l, v, total)
        .or_else(|| pool_error(v, ml, kv_bytes, (block, per_token), &pl));
    Plan {
        engine: Engine::Vllm,
        version: v,
        budget,
        weights,
        activation,
        non_torch,
        graphs,
        kv,
        outside: sym(
            "ctx",
            if era.charges_context {
                0
            } else {
                s.runtime.cuda_ctx_mib as u64 * MIB
            },
        ),
        per_token,
        block_size: block,
        blocks: pl.blocks,
        tokens: pl.tokens,
        max_len: ml,
        concurrency: pl.concurrency,
        max_len_fit: pl.fit,
        error,
        host: None,
        sources: ep_sources(SOURCES, split.is_some()),
    }
}

/// What vLLM may use: `gpu_memory_utilization × total` (the release's default utilisation
/// unless `gpu_util` is set), rounded up or down as the release does (`VllmEra::ceil_budget`).
///
/// # Formula
/// ```text
/// budget = ⌈u·M⌉ or ⌊u·M⌋
/// ```
/// Source: vLLM `v1/worker/gpu_worker.py determine_available_memory` (`requested_memory`).
/// Example: H100 (85,029,158,912 B), u = 0.90: 76,526,243,020 B.
fn budget_of(s: &Scenario, era: VllmEra, total: u64) -> u64 {
    let util = s.serving.gpu_util.unwrap_or(era.util);
    let product = total as f64 * util;
    if era.ceil_budget {
        product.ceil() as u64
    } else {
        product.floor() as u64
    }
}

/// The refusal when the pool holds no block (or, before V1, fewer tokens than one request),
/// or when one `max_len` request does not fit, in the release's own words.
fn pool_error(
    v: Version,
    ml: u64,
    kv_bytes: u64,
    (block, per_token): (u64, u64),
    pl: &Pool,
) -> Option<String> {
    let era = VllmEra::of(v);
    if kv_bytes == 0 || (era.v0 && pl.blocks == 0) {
        Some(vllm_no_memory(v))
    } else if era.v0 && pl.tokens < ml {
        Some(vllm_v0_too_long(ml, pl.tokens))
    } else if pl.fit < ml {
        let need = sat(ml.div_ceil(block) as u128 * block as u128 * per_token as u128);
        Some(vllm_too_long(v, ml, need, kv_bytes, pl.fit))
    } else {
        None
    }
}

/// The block size (`block_size`, else 16; 64 for MLA on V1) and the KV pool the bytes left
/// give, with the concurrency and tokens as the release prints them: V0 divides the tokens
/// by `max_len`; from 0.20.2 the printed tokens are ⌊concurrency × max_len⌋.
///
/// # Formula
/// ```text
/// blocks = ⌊kv_bytes / (B·c_tok)⌋,  tokens = blocks·B,  concurrency = tokens / max_len (V0)
/// ```
/// Source: vLLM `v1/core/kv_cache_utils.py get_num_blocks`,
/// `get_max_concurrency_for_kv_cache_config`; V0 `worker/worker.py` (sdists 0.6.6–0.33.0).
/// Example: 37,001,625,600 B at 131,072 B per token, B = 16: 17,643 blocks, 282,288 tokens.
fn kv_pool(
    s: &Scenario,
    arch: &Arch,
    v: Version,
    kv_bytes: u64,
    per_token: u64,
    ml: u64,
) -> (u64, Pool) {
    let era = VllmEra::of(v);
    let block = s.serving.block_size.map_or(
        if arch.mla.is_some() && !era.v0 {
            64
        } else {
            16
        },
        |c| c.get() as u64,
    );
    let mut pl = pool(kv_bytes, per_token, block, ml);
    if era.v0 {
        pl.concurrency = pl.tokens as f64 / ml.max(1) as f64;
    } else if v >= Version(0, 20, 2) {
        pl.tokens = (pl.concurrency * ml as f64) as u64;
    }
    (block, pl)
}

/// [`plan`] for a model with Mamba / convolution blocks under V1: the pool of
/// `hybrid::vllm_pool` (`blocks · g · page` bytes), its concurrency for a `max_len` request
/// and the refusal when one request does not fit.
#[allow(clippy::too_many_arguments)]
fn hybrid_plan(
    s: &Scenario,
    v: Version,
    budget: u64,
    [weights, activation, non_torch, graphs]: [Expr; 4],
    h: &hybrid::HybridPool,
    ml: u64,
    era: VllmEra,
    (arch, l): (&Arch, &Layout),
    total: u64,
    kv_bytes: u64,
    src: [&'static str; 6],
) -> Plan {
    let kv = Expr::new(&[
        Sym("blocks", h.blocks as u128),
        Sym("g", h.group as u128),
        Mul,
        Sym("page", h.page as u128),
        Mul,
    ]);
    let error = if let Some(e) = refusal(s, arch, l, v, total) {
        Some(e)
    } else if kv_bytes == 0 || h.blocks == 0 {
        Some(vllm_no_memory(v))
    } else if h.blocks < h.per_request {
        let need = sat(h.per_request as u128 * h.group as u128 * h.page as u128);
        Some(vllm_too_long(v, ml, need, kv_bytes, h.fit))
    } else {
        None
    };
    let concurrency = h.blocks as f64 / h.per_request as f64;
    Plan {
        engine: Engine::Vllm,
        version: v,
        budget,
        weights,
        activation,
        non_torch,
        graphs,
        kv,
        outside: sym(
            "ctx",
            if era.charges_context {
                0
            } else {
                s.runtime.cuda_ctx_mib as u64 * MIB
            },
        ),
        per_token: h.per_token,
        block_size: h.block,
        blocks: h.blocks,
        tokens: (concurrency * ml as f64) as u64,
        max_len: ml,
        concurrency,
        max_len_fit: h.fit,
        error,
        host: None,
        sources: [
            src[0],
            src[1],
            src[2],
            src[3],
            "vLLM 0.33 hybrid KV cache: MambaSpec state pages (MambaStateShapeCalculator), Platform._align_hybrid_block_size, equal-sized layer groups over one block pool (kv_cache_utils.get_num_blocks); a request takes one block per state group and ⌈T/B⌉ per attention group",
            src[5],
        ],
    }
}

const SOURCES: [&str; 6] = [
    SRC_WEIGHTS,
    "vLLM gpu_model_runner.profile_run: torch peak of a max_num_batched_tokens forward (attention skipped in V1) or _dummy_sampler_run over min(max_num_seqs, tokens) rows",
    "vLLM utils/mem_utils.py memory_profiling: non_torch_increase (cuBLAS workspaces; NCCL buffers allocated at the first collective; everything 0.8.0–0.9.0); constants from the calibration logs",
    "vLLM gpu_model_runner.profile_cudagraph_memory (subtracted from 0.20)",
    "vLLM v1/core/kv_cache_utils.py get_num_blocks, get_max_concurrency_for_kv_cache_config",
    "the CUDA context and NCCL set up before vLLM's baseline snapshot",
];

/// The weights as vLLM loads them: the format's bytes on the rank (with expert
/// parallelism, [`serve_weights`]), the rotary cos/sin cache `P·d·k` (P the model's
/// context) and MXFP4's padding (`W` in [`plan`]'s formula; under EP each rank's whole
/// experts are padded, `W_pad(t = 1)·E_r/E`).
fn weights(s: &Scenario, p: &Prepared, l: &Layout, split: Option<ExpertSplit>) -> Expr {
    let arch = &p.arch;
    let ctx = model_context(&s.model.preset).unwrap_or(0) as u64;
    let k = s.numerics.precision.compute_bytes();
    let rope = if arch.positions == 0 && arch.mla.is_none() {
        sat(ctx as u128 * arch.head_dim as u128 * k as u128)
    } else {
        0
    };
    let pad = match split {
        Some(x) => {
            sat(mxfp4_padding(s, arch, 1) as u128 * x.local as u128 / arch.experts.max(1) as u128)
        }
        None => mxfp4_padding(s, arch, l.tp),
    };
    serve_weights(s, p, l, split).then(&[
        Sym("P·d·k", rope as u128),
        Add,
        Sym("W_pad", pad as u128),
        Add,
    ])
}

/// `(max_num_seqs, max_num_batched_tokens)`: the keys, else the release's defaults for
/// this GPU (V0: 256 and max(max_len, 2,048) up to 32k; V1: 1,024 and 8,192 on ≥ 70 GiB
/// GPUs other than the A100, 1,024 and 16,384 on ≥ 160 GiB from 0.29, else 256 and 2,048).
fn batch_limits(s: &Scenario, era: VllmEra, ml: u64) -> (u64, u64) {
    let nvml = s.usable_bytes();
    let large = nvml >= 70 * GIB && !s.cluster.gpu.starts_with("a100");
    let (seqs_default, batched_default) = if era.v0 {
        (256, if ml > 32_768 { 2048 } else { ml.max(2048) })
    } else if era.big_batch_160 && nvml >= 160 * GIB {
        (1024, 16_384)
    } else if large {
        (1024, 8192)
    } else {
        (256, 2048)
    };
    let n = s
        .serving
        .max_batched_tokens
        .map_or(batched_default, |c| c.get() as u64);
    let seqs = s.serving.max_seqs.map_or(seqs_default, |c| c.get() as u64);
    (seqs, n)
}

/// The profiling run's torch peak `A = max(A_fwd, A_samp + A_moe)` (see [`plan`]).
///
/// Under expert parallelism the fused-MoE kernel's caches hold whole experts: its `N` is
/// `2·f_e/t_e` with the experts' own tensor parallelism `t_e` (1 under vLLM's EP, where
/// the MoE layer's `tp_size` becomes 1 and `ep_size = t·d`), not `2·f_e/t`.
///
/// # Formula
/// ```text
/// A_fwd = forward_peak with the MoE width top_k·m·f_e/t_e   (attention still over t)
/// A_moe = n·k·top_k·(max(2·f_e/t_e, h) + f_e/t_e)           t_e = t without EP
/// ```
/// Source: vLLM `fused_moe/config.py FusedMoEParallelConfig.make` (`use_ep`: `tp_size=1`,
/// `ep_size = tp_size·dp_size`), `fused_moe/layer.py` (`intermediate_size_per_partition =
/// intermediate_size // tp_size`), `fused_moe/fused_moe.py fused_experts_impl` (`N =
/// w1.size(1)`, `cache13` of `M·top_k·max(N, K)`, `intermediate_cache2` of `M·top_k·N/2`;
/// 0.9.2–0.33.0).
///
/// # Example
/// Qwen3-30B-A3B (h = 2,048, f_e = 768, top-8), n = 8,192, bf16, t = 2: without EP
/// A_moe = 8,192·2·8·(2,048 + 384) = 318,767,104 B; with EP (t_e = 1) 8,192·2·8·(2,048 +
/// 768) = 369,098,752 B.
fn profile_peak(
    s: &Scenario,
    arch: &Arch,
    l: &Layout,
    era: VllmEra,
    ml: u64,
    split: Option<ExpertSplit>,
) -> Expr {
    let (seqs, n) = batch_limits(s, era, ml);
    let k = s.numerics.precision.compute_bytes();
    let t = l.tp as u64;
    let te = split.map_or(t, |x| x.expert_tp as u64);
    let mut fwd = forward_peak_ep(arch, n, k, t, te);
    if era.v0 {
        // V0 runs attention in the profile: flash attention's output beside q, k, v.
        fwd = fwd.saturating_add(sat(n as u128
            * k as u128
            * (arch.heads as u128 * arch.head_dim as u128)
            / t as u128));
    }
    let sampler = sat(seqs.min(n) as u128 * arch.vocab as u128 * SAMPLER_BYTES as u128);
    Expr::new(&[
        Sym("A_fwd", fwd as u128),
        Sym("A_samp", sampler as u128),
        Sym("A_moe", moe_workspace(arch, n, k, te) as u128),
        Add,
        Max,
    ])
}

/// Non-torch memory `N_t` (with the CUDA context 0.8.0–0.9.0) and the CUDA graphs' `G`
/// (from 0.20), as vLLM subtracts them (see [`plan`]). Expert parallelism's all-to-all
/// runs over the EP group's NCCL communicator, so with EP the NVLS buffers are counted as
/// for TP (an assumption: no public wide-EP log states its non-torch memory).
fn non_torch(s: &Scenario, l: &Layout, era: VllmEra, split: Option<ExpertSplit>) -> (Expr, Expr) {
    let nvls = matches!(
        s.cluster.gpu.as_str(),
        "h100-80" | "h200" | "gh200" | "b200-180" | "b200-192"
    );
    let nccl = if (l.tp > 1 || l.pp > 1 || split.is_some()) && nvls {
        NON_TORCH_NCCL
    } else {
        0
    };
    let context = if era.charges_context {
        s.runtime.cuda_ctx_mib as u64 * MIB
    } else {
        0
    };
    (
        sym("N_t", NON_TORCH_1 + nccl + context),
        sym("G", if era.graphs { GRAPHS } else { 0 }),
    )
}

/// What vLLM refuses before the KV cache is sized, in the order it meets them: the
/// command line (`--kv-cache-dtype`), the engine config (attention heads against TP), the
/// worker's start (free memory against `gpu_memory_utilization`), the model's load (MXFP4
/// on a dense model).
fn refusal(s: &Scenario, arch: &Arch, l: &Layout, v: Version, total: u64) -> Option<String> {
    if let Some(e) = kv_cache_dtype_refusal(s, v) {
        return Some(e);
    }
    if let Some(e) = expert_refusal(s, arch, l, v) {
        return Some(e);
    }
    if arch.heads > 0 && l.tp > 0 && !arch.heads.is_multiple_of(l.tp) {
        return Some(vllm_heads_vs_tp(arch.heads, l.tp));
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
    if v < Version(0, 8, 5) {
        return vec!["auto", "fp8", "fp8_e5m2", "fp8_e4m3"];
    }
    let from = |x: (u16, u16)| v >= Version(x.0, x.1, 0);
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
    if v >= Version(0, 11, 1) {
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
    if v >= Version(0, 33, 0) {
        return Some(format!(
            "Invalid kv_cache_dtype: '{value}'. Valid values are: [{}]",
            py_strs(&choices)
        ));
    }
    if v >= Version(0, 8, 5) {
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
    if v < Version(0, 9, 1) {
        return None;
    }
    let util = s.serving.gpu_util?;
    let free = total.saturating_sub(s.runtime.cuda_ctx_mib as u64 * MIB);
    let product = total as f64 * util;
    let requested = if v >= Version(0, 14, 0) {
        product.ceil()
    } else {
        product
    };
    if (free as f64) >= requested {
        return None;
    }
    let device = if v >= Version(0, 14, 0) {
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
    let link = if v >= Version(0, 13, 0) {
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
        if v >= Version(0, 14, 0) {
            py_gib(b)
        } else {
            format!("{:.2}", b as f64 / GIB as f64)
        }
    };
    let word = if v >= Version(0, 22, 0) {
        "model's"
    } else {
        "models's"
    };
    let util = if v >= Version(0, 22, 0) {
        "`gpu_memory_utilization` (which also controls CPU memory on the CPU backend)"
    } else {
        "`gpu_memory_utilization`"
    };
    let link = if v >= Version(0, 13, 0) {
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
