//! vLLM's start-up: the budget, the profiling run, the KV pool, the refusal's wording.

use super::vllm_checks::*;
use super::*;
use crate::scenario::{Sampler, VLLM_FLASHINFER_OPTIN_FROM, VLLM_TRITON_TOPK_FROM, VLLM_V1_FROM};

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
    /// How the API server's `max_num_seqs` and `max_num_batched_tokens` defaults are
    /// chosen for the GPU ([`BatchRule`]).
    pub batch_rule: BatchRule,
}

/// The API server's default `(max_num_seqs, max_num_batched_tokens)` by release, V1
/// (`EngineArgs._set_default_args_v1`, read in the 0.8.0 – 0.8.5.post1, 0.9.0 – 0.12.0 and
/// 0.13.0 – 0.29.0 sdists: the 160 GiB tier first in 0.28.0, not in 0.27.1).
///
/// | releases | 1,024 rows | 8,192 batched tokens (16,384 from 0.28 on ≥ 160 GiB) |
/// |---|---|---|
/// | 0.8.0 – 0.8.3 | every GPU | device name with "h100" or "h200" |
/// | 0.8.4 | device name with "h100" or "h200" | the same |
/// | 0.8.5 | ≥ 70 GiB | ≥ 70 GiB |
/// | 0.9.0 – | ≥ 70 GiB, not an A100 | ≥ 70 GiB, not an A100 |
///
/// Otherwise 256 rows and 2,048 tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BatchRule {
    /// 0.8.0–0.8.3: H100/H200 by name for the tokens; 1,024 rows everywhere.
    NameRowsEverywhere,
    /// 0.8.4: H100/H200 by name for both.
    Name,
    /// 0.8.5: 70 GiB of device memory.
    Memory,
    /// 0.9.0–0.27: 70 GiB and not an A100.
    MemoryNotA100,
    /// 0.28+: as before, and 16,384 tokens on ≥ 160 GiB.
    MemoryNotA100Big160,
}

impl BatchRule {
    /// The rule of release `v` (V1 releases; V0 has its own defaults).
    pub(crate) fn of(v: Version) -> BatchRule {
        match v {
            v if v < Version(0, 8, 4, 0) => BatchRule::NameRowsEverywhere,
            v if v < Version(0, 8, 5, 0) => BatchRule::Name,
            v if v < Version(0, 9, 0, 0) => BatchRule::Memory,
            v if v < Version(0, 28, 0, 0) => BatchRule::MemoryNotA100,
            _ => BatchRule::MemoryNotA100Big160,
        }
    }
}

impl VllmEra {
    /// The era of release `v`.
    pub(crate) fn of(v: Version) -> VllmEra {
        VllmEra {
            v0: v < VLLM_V1_FROM,
            charges_context: v >= Version(0, 8, 0, 0) && v < Version(0, 9, 1, 0),
            ceil_budget: v >= Version(0, 14, 0, 0),
            util: if v >= Version(0, 20, 0, 0) {
                0.92
            } else {
                0.90
            },
            graphs: v >= Version(0, 20, 0, 0),
            batch_rule: BatchRule::of(v),
        }
    }
}

/// vLLM's start-up: the budget, the profiling run, the KV pool.
///
/// # Formula
/// ```text
/// budget  = u · M_total   (⌈·⌉ from 0.14)          u = gpu_memory_utilization (0.90; 0.92 from 0.20)
/// KV      = budget − W − A − N_t [− ctx 0.8.0–0.9.0] [− G from 0.20]
/// A       = max(A_fwd, r · V · S + A_moe),  r = min(max_num_seqs, max_num_batched_tokens)
/// N_t     = 256 MiB, + 1,894 MiB with more than one rank on an NVSwitch system (NVLS)
/// blocks  = ⌊KV / (B · c_tok)⌋;  tokens = blocks·B
/// concurrency = blocks / ⌈max_len / B⌉   (V0: blocks·B / max_len)
/// ```
/// `M_total` the device total `cudaMemGetInfo` reports; `W` the weights (+ the rotary
/// cos/sin caches `P_rope·d·k`, [`crate::model::rope_cache_rows`]); `A = max(A_fwd, A_samp)` the profiling run's torch peak:
/// the forward over `max_num_batched_tokens` tokens (attention skipped in V1) or the
/// dummy sampler over `r = min(max_num_seqs, tokens)` rows at `S` bytes a logit
/// ([`sampler_bytes`]: 16, or 36 on PyTorch's sort path);
/// `N_t` non-torch memory (cuBLAS workspaces; NCCL's buffers with more than one rank); `G`
/// the CUDA graphs' estimate (512 MiB; 0 with `--enforce-eager`, `graph_bs=0`); `B` the
/// block size (16); `c_tok` the KV bytes per token on the rank.
///
/// Source: vLLM `v1/worker/gpu_worker.py determine_available_memory`, `utils/mem_utils.py
/// memory_profiling`, `v1/core/kv_cache_utils.py get_num_blocks` and
/// `check_enough_kv_cache_memory`, `engine/arg_utils.py` defaults (sdists 0.6.6–0.33.0).
///
/// # Example
/// Llama 3 8B, H100 (85,029,158,912 B), u = 0.90, 0.11: budget 76,526,243,020 B; W =
/// 16,060,522,496 + 2,097,152 (rotary, P_rope = P = 8,192); each block of 16 tokens holds 2 MiB.
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
        let src = eplb_sources(SOURCES, s, arch, split.is_some());
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
    let unpadded = per_token;
    let per_token = grouped_per_token(arch, l, v, per_token);
    let (block, pl) = kv_pool(s, arch, v, kv_bytes, per_token, ml);
    let kv = pool_bytes(pl.blocks, block, per_token);
    let free = total.saturating_sub(s.cuda_ctx_mib() as u64 * MIB);
    let error = refusal(s, arch, l, v, total, checked_limits(s, v, ml))
        .or_else(|| load_oom(weights.eval(), free))
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
                s.cuda_ctx_mib() as u64 * MIB
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
        fit: None,
        fit_message: String::new(),
        notes: String::new(),
        sources: plan_sources(s, arch, split.is_some(), per_token != unpadded),
    }
}

/// [`SOURCES`] for this plan: EPLB's where it applies, the padded groups' where
/// [`grouped_per_token`] padded.
fn plan_sources(s: &Scenario, arch: &Arch, ep: bool, padded: bool) -> [&'static str; 6] {
    let mut src = eplb_sources(SOURCES, s, arch, ep);
    if padded {
        src[4] = "vLLM v1/core/kv_cache_utils.py _get_kv_cache_groups_uniform_page_size (each attention kind's layers in groups of the smaller kind's count, the last padded: c_tok counts the padded layers), get_num_blocks; tokens = blocks per group";
    }
    src
}

/// vLLM's hybrid KV cache manager (V1, from 0.11.0 as counted here) on a model with two
/// attention kinds (full and sliding-window or chunked-local layers): the layers of each
/// kind are dealt into groups of `g` layers, the last group of a kind padded to `g`, and
/// every group draws blocks from one pool; the tokens printed are the blocks per group.
/// So a pool holds `⌊KV / (g·n·B·row)⌋·B` tokens: the bytes per token of `g·n` layers,
/// padding included, not of the `L_f + L_w` real ones.
///
/// # Formula
/// ```text
/// g   = min(L_f, L_w)   (max(L_f, L_w) when max < 1.5·min)
/// n   = ⌈L_f/g⌉ + ⌈L_w/g⌉
/// c'  = c_tok · g·n / (L_f + L_w)          c_tok = (L_f + L_w)·row
/// ```
/// `L_f`, `L_w` the stage's full and windowed layers. Source: vLLM
/// `v1/core/kv_cache_utils.py` `_get_kv_cache_groups_uniform_page_size` (groups of the
/// smallest kind's layer count, "Add %d padding layers"; the 1.5 rule as in 0.19.0),
/// `get_num_blocks` (`available // (page_size · group_size)`), and the log line
/// (`num_blocks // len(kv_cache_groups) · block_size`, 0.11.0–0.19.0; 0.9.2–0.10.2 printed
/// `num_blocks · block_size` and are left as before). Equal kinds (Gemma 2, gpt-oss) pad
/// nothing.
///
/// # Example
/// Gemma 3 27B (10 full, 52 sliding layers): g = 10, n = 1 + 6 = 7, so 70 layers' bytes a
/// token, 70/62 = 1.129 of the unpadded count. vLLM 0.19 on an H100 at 0.95 logs 36,560
/// tokens; memfit 36,688 (+0.35 %; 43,632, +19.3 %, before the groups, the vision
/// encoder and both rotary caches were counted). Gemma 3 12B (8 + 40): no padding.
fn grouped_per_token(arch: &Arch, l: &Layout, v: Version, per_token: u64) -> u64 {
    let (f, w) = super::super::kv::stage_layers(arch, l.pp);
    if v < Version(0, 11, 0, 0) || f == 0 || w == 0 {
        return per_token;
    }
    let (lo, hi) = (f.min(w), f.max(w));
    let g = if 2 * hi < 3 * lo { hi } else { lo };
    let slots = g * (f.div_ceil(g) + w.div_ceil(g));
    sat(per_token as u128 * slots as u128 / (f + w) as u128)
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

/// The pool's bytes as the plan shows them: `blocks·B·c_tok`.
fn pool_bytes(blocks: u64, block: u64, per_token: u64) -> Expr {
    Expr::new(&[
        Sym("blocks", blocks as u128),
        Sym("B", block as u128),
        Mul,
        Sym("c_tok", per_token as u128),
        Mul,
    ])
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
    let block = s
        .serving
        .block_size
        .unwrap_or(if arch.mla.is_some() && !era.v0 {
            count(64)
        } else {
            count(16)
        });
    let mut pl = pool(kv_bytes, per_token, block, ml);
    let block = block.get() as u64;
    if era.v0 {
        // `ml ≥ 1` from the keys or the model's context; the guard keeps a 0 finite.
        pl.concurrency = pl.tokens as f64 / ml.max(1) as f64;
    } else if v >= Version(0, 20, 2, 0) {
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
    let error = if let Some(e) = refusal(s, arch, l, v, total, checked_limits(s, v, ml)) {
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
                s.cuda_ctx_mib() as u64 * MIB
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
        fit: None,
        fit_message: String::new(),
        notes: String::new(),
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
    "vLLM gpu_model_runner.profile_run: torch peak of a max_num_batched_tokens forward (attention skipped in V1) or _dummy_sampler_run over min(max_num_seqs, tokens) rows at S bytes a logit: 16 with FlashInfer's top-k/top-p (the Docker images to 0.11.0) or the Triton kernel (0.17+), 36 with PyTorch's sort (a pip install without flashinfer before 0.11.1, every install 0.11.1–0.16); the key `sampler` says which",
    "vLLM utils/mem_utils.py memory_profiling: non_torch_increase (cuBLAS workspaces; NCCL buffers allocated at the first collective; everything 0.8.0–0.9.0); constants from the calibration logs",
    "vLLM gpu_model_runner.profile_cudagraph_memory (subtracted from 0.20)",
    "vLLM v1/core/kv_cache_utils.py get_num_blocks, get_max_concurrency_for_kv_cache_config",
    "the CUDA context and NCCL set up before vLLM's baseline snapshot",
];

/// The weights as vLLM loads them: the format's bytes on the rank (with expert
/// parallelism, [`serve_weights`]), the rotary cos/sin caches `P_rope·d·k` (P_rope their rows,
/// [`crate::model::rope_cache_rows`]: the context once per cache, `P·f` under linear
/// scaling) and MXFP4's padding (`W` in [`plan`]'s formula; under EP each rank's whole
/// experts are padded, `W_pad(t = 1)·E_r/E`).
fn weights(s: &Scenario, p: &Prepared, l: &Layout, split: Option<ExpertSplit>) -> Expr {
    let arch = &p.arch;
    let rows = crate::model::rope_cache_rows(&s.model.preset, s.context()).unwrap_or(0);
    let k = s.numerics.precision.compute_bytes();
    let rope = if arch.positions == 0 && arch.mla.is_none() {
        sat(rows as u128 * arch.head_dim.get() as u128 * k as u128)
    } else {
        0
    };
    let pad = match split {
        // A split exists only for a mixture (`ExpertSplit`).
        Some(x) => arch.mixture().map_or(0, |e| {
            sat(mxfp4_padding(s, arch, Count::MIN) as u128 * x.local as u128 / e.get() as u128)
        }),
        None => mxfp4_padding(s, arch, l.tp),
    };
    serve_weights(s, p, l, split).then(&[
        Sym("P_rope·d·k", rope as u128),
        Add,
        Sym("W_pad", pad as u128),
        Add,
    ])
}

/// `(max_num_seqs, max_num_batched_tokens)`: the keys, else the release's defaults for
/// this GPU (V0: 256 and max(max_len, 2,048) up to 32k; V1: [`BatchRule`]).
///
/// # Formula
/// ```text
/// V1, the API server:  (1,024, 8,192) on a "large" GPU, (1,024, 16,384) on ≥ 160 GiB from 0.28,
///                      else (256, 2,048); 0.8.0–0.8.3: 1,024 rows on every GPU
/// large = name has h100/h200 (0.8.0–0.8.4) | M ≥ 70 GiB (0.8.5) | M ≥ 70 GiB, not an A100 (0.9.0+)
/// ```
/// `M` the device's total memory (bytes, as `torch.cuda` reports it). Source: vLLM
/// `engine/arg_utils.py EngineArgs._set_default_args_v1` (0.8.0 – 0.29.0 sdists).
///
/// # Example
/// Llama 3 8B on one RTX 4090 (V = 128,256), vLLM 0.8.3: (1,024, 2,048), so the dummy
/// sampler holds min(1,024, 2,048)·128,256·16 B = 2.1 GB; 0.8.4: (256, 2,048), 0.53 GB.
/// An A100 80 GB: (1,024, 8,192) on 0.8.5, (256, 2,048) from 0.9.0.
fn batch_limits(s: &Scenario, era: VllmEra, ml: u64) -> (u64, u64) {
    let nvml = s.usable_bytes();
    let g = s.cluster.gpu.as_str();
    let named = g.starts_with("h100") || g.starts_with("h200") || g == "gh200";
    let memory = nvml >= 70 * GIB;
    let (large, rows_everywhere) = match era.batch_rule {
        BatchRule::NameRowsEverywhere => (named, true),
        BatchRule::Name => (named, false),
        BatchRule::Memory => (memory, false),
        BatchRule::MemoryNotA100 | BatchRule::MemoryNotA100Big160 => {
            (memory && !g.starts_with("a100"), false)
        }
    };
    let (seqs_default, batched_default) = if era.v0 {
        (256, if ml > 32_768 { 2048 } else { ml.max(2048) })
    } else if era.batch_rule == BatchRule::MemoryNotA100Big160 && nvml >= 160 * GIB {
        (1024, 16_384)
    } else if large {
        (1024, 8192)
    } else if rows_everywhere {
        (1024, 2048)
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

/// The `(max_num_seqs, max_num_batched_tokens)` the scheduler checks
/// ([`scheduler_refusal`]): [`batch_limits`], a defaulted `max_num_seqs` capped at the
/// batched tokens from 0.10.1 (`EngineArgs._set_default_args_v1`: `min(default,
/// max_num_batched_tokens)`; 0.10.0 and before keep the default).
fn checked_limits(s: &Scenario, v: Version, ml: u64) -> (u64, u64) {
    let (seqs, n) = batch_limits(s, VllmEra::of(v), ml);
    if s.serving.max_seqs.is_none() && v >= Version(0, 10, 1, 0) {
        (seqs.min(n), n)
    } else {
        (seqs, n)
    }
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
    let te = split.map_or(l.tp, |x| x.expert_tp);
    let mut fwd = forward_peak_ep(arch, n, k, l.tp, te);
    let t = l.tp.get() as u64;
    if era.v0 {
        // V0 runs attention in the profile: flash attention's output beside q, k, v.
        fwd = fwd.saturating_add(sat(n as u128
            * k as u128
            * (arch.heads.get() as u128 * arch.head_dim.get() as u128)
            / t as u128));
    }
    let rows = seqs.min(n);
    let per_logit = sampler_bytes(s, era, rows);
    Expr::new(&[
        Sym("A_fwd", fwd as u128),
        Sym("r", rows as u128),
        Sym("V", arch.vocab.get() as u128),
        Mul,
        Sym("S", per_logit as u128),
        Mul,
        Sym("A_moe", moe_workspace(arch, n, k, te) as u128),
        Add,
        Max,
    ])
}

/// The code that runs the dummy sampler pass's top-k/top-p in vLLM release `v` over `rows`
/// rows: the `sampler` key, else the release's default.
///
/// Source: vLLM sdists, `v1/sample/ops/topk_topp_sampler.py TopKTopPSampler.__init__` and
/// `apply_top_k_top_p`: FlashInfer's sampler when flashinfer ≥ 0.2.3 is installed
/// (0.9.2–0.11.0; 0.8.x with flashinfer < 0.2.3), which the Docker images ship (0.8.5's
/// `docker/Dockerfile`: flashinfer 0.2.1.post2; 0.9.2–0.11.0: 0.2.6.post1) and the pip
/// wheels do not require (`requirements/cuda.txt`, no flashinfer before 0.12); opt-in
/// (`VLLM_USE_FLASHINFER_SAMPLER=1`) from 0.11.1, the PyTorch sort otherwise; the Triton
/// kernel from 0.17.0 for 8 rows or more (`HAS_TRITON and logits.shape[0] >= 8`; not in
/// 0.16.0).
pub(crate) fn sampler_path(s: &Scenario, v: Version, rows: u64) -> Sampler {
    let default = if v >= VLLM_TRITON_TOPK_FROM {
        Sampler::Triton
    } else if v >= VLLM_FLASHINFER_OPTIN_FROM {
        Sampler::Sort
    } else {
        Sampler::Flashinfer
    };
    let asked = match s.serving.sampler {
        Sampler::Auto => default,
        Sampler::Triton if v < VLLM_TRITON_TOPK_FROM => default,
        p => p,
    };
    if asked == Sampler::Triton && rows < 8 {
        Sampler::Sort
    } else {
        asked
    }
}

/// Bytes per logit the dummy sampler pass holds at its peak, by the code that runs it.
///
/// # Formula
/// ```text
/// S = 16 B   the Triton kernel, FlashInfer, and V0's sampler
///   = 36 B   PyTorch's sort
/// ```
/// The Triton path's 16 B is calibrated on the 0.19 logs (torch peak increase over
/// `max_num_seqs · V`: 15.0–16.2 B; FlashInfer's is taken equal: dennislee22's 0.10.1.1 A100
/// logs, the Docker image, fit it within 1 %). The sort path holds, read in the code, the
/// bf16 logits (2), their fp32 copy (4), the sorted values (4) and int64 indices (8), the
/// top-k and top-p masks (1 + 1), the cumulative sum (4) and the scatter's result (4):
/// 28 B before the sort's own buffers; 36 B is calibrated on one log (Qwen3-30B-A3B on GH200,
/// vLLM 0.10.1 built from source, TP 4 × PP 2, 1,024 rows: the last stage's KV cache,
/// 6,167,568 tokens, needs 36.1 B).
///
/// # Example
/// 1,024 rows × V = 151,936 on the sort path: 1,024·151,936·36 = 5,601,189,888 B.
fn sampler_bytes(s: &Scenario, era: VllmEra, rows: u64) -> u64 {
    if era.v0 {
        return SAMPLER_BYTES;
    }
    match sampler_path(s, used_release(s), rows) {
        Sampler::Sort => SAMPLER_SORT_BYTES,
        _ => SAMPLER_BYTES,
    }
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
    let nccl = if (l.tp.get() > 1 || l.pp.get() > 1 || split.is_some()) && nvls {
        NON_TORCH_NCCL
    } else {
        0
    };
    let context = if era.charges_context {
        s.cuda_ctx_mib() as u64 * MIB
    } else {
        0
    };
    (
        sym("N_t", NON_TORCH_1 + nccl + context),
        // `--enforce-eager` (`graph_bs=0`) captures nothing, and vLLM estimates nothing.
        sym(
            "G",
            if era.graphs && s.serving.graph_bs != Some(0) {
                GRAPHS
            } else {
                0
            },
        ),
    )
}
