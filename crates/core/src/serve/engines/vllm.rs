//! vLLM's start-up: the budget, the profiling run, the KV pool, the refusal's wording.

use super::*;

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
            v0: v < Version(0, 8, 0),
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
    let v = s.serving.version.unwrap_or(newest(Engine::Vllm));
    let era = VllmEra::of(v);
    let arch = &p.arch;
    let total = device_total(s);
    let util = s.serving.gpu_util.unwrap_or(era.util);
    let product = total as f64 * util;
    let budget = if era.ceil_budget {
        product.ceil()
    } else {
        product.floor()
    } as u64;
    let ml = max_len(s);
    let weights = weights(s, p, l);
    let activation = profile_peak(s, arch, l, era, ml);
    let (non_torch, graphs) = non_torch(s, l, era);
    let used = [&weights, &activation, &non_torch, &graphs]
        .iter()
        .fold(0u64, |a, e| a.saturating_add(e.eval()));
    let kv_bytes = budget.saturating_sub(used);
    let (per_token, _, _) = per_token(s, arch, l);
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
    let kv = Expr::new(&[
        Sym("blocks", pl.blocks as u128),
        Sym("B", block as u128),
        Mul,
        Sym("c_tok", per_token as u128),
        Mul,
    ]);
    let error = if kv_bytes == 0 {
        Some("No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.".to_string())
    } else if pl.fit < ml {
        let need = sat(ml.div_ceil(block) as u128 * block as u128 * per_token as u128);
        Some(vllm_too_long(v, ml, need, kv_bytes, pl.fit))
    } else {
        None
    };
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
        sources: SOURCES,
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

/// The weights as vLLM loads them: the format's bytes on the rank, the rotary cos/sin
/// cache `P·d·k` (P the model's context) and MXFP4's padding (`W` in [`plan`]'s formula).
fn weights(s: &Scenario, p: &Prepared, l: &Layout) -> Expr {
    let arch = &p.arch;
    let ctx = model_context(&s.model.preset).unwrap_or(0) as u64;
    let k = s.numerics.precision.compute_bytes();
    let rope = if arch.positions == 0 && arch.mla.is_none() {
        sat(ctx as u128 * arch.head_dim as u128 * k as u128)
    } else {
        0
    };
    weights_expr(s, p, l).then(&[
        Sym("P·d·k", rope as u128),
        Add,
        Sym("W_pad", mxfp4_padding(s, arch, l.tp) as u128),
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
fn profile_peak(s: &Scenario, arch: &Arch, l: &Layout, era: VllmEra, ml: u64) -> Expr {
    let (seqs, n) = batch_limits(s, era, ml);
    let k = s.numerics.precision.compute_bytes();
    let t = l.tp as u64;
    let mut fwd = forward_peak(arch, n, k, t);
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
        Sym("A_moe", moe_workspace(arch, n, k, t) as u128),
        Add,
        Max,
    ])
}

/// Non-torch memory `N_t` (with the CUDA context 0.8.0–0.9.0) and the CUDA graphs' `G`
/// (from 0.20), as vLLM subtracts them (see [`plan`]).
fn non_torch(s: &Scenario, l: &Layout, era: VllmEra) -> (Expr, Expr) {
    let nvls = matches!(
        s.cluster.gpu.as_str(),
        "h100-80" | "h200" | "gh200" | "b200-180" | "b200-192"
    );
    let nccl = if (l.tp > 1 || l.pp > 1) && nvls {
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

/// vLLM's refusal when one request of `max_len` does not fit, as each release words it
/// (`check_enough_kv_cache_memory`): "models's" until 0.22, the documentation link from
/// 0.13, `format_gib` numbers (`round(x, 2)`) from 0.14, the CPU-backend remark from 0.22.
pub(crate) fn vllm_too_long(v: Version, ml: u64, need: u64, avail: u64, fit: u64) -> String {
    let num = |b: u64| {
        let x = b as f64 / GIB as f64;
        if v >= Version(0, 14, 0) {
            // Python's str(round(x, 2)): 58.7, 3.0, 12.34.
            let r = (x * 100.0).round() / 100.0;
            let t = format!("{r:.2}");
            let t = t.trim_end_matches('0');
            if t.ends_with('.') {
                format!("{t}0")
            } else {
                t.to_string()
            }
        } else {
            format!("{x:.2}")
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
