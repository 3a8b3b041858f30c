//! SGLang's start-up: the static memory fraction and the token pool.

use super::sglang_args::{chunk_size, default_mfs, graph_max_bs, graphs_off, RESERVE_FROM};
use super::*;

/// SGLang's start-up (`ModelRunner.profile_max_num_token`, 0.4–0.5).
///
/// # Formula
/// ```text
/// F        = free memory before the weights (device total − CUDA context − D)
/// D        = the distributed start with more than one rank ([`dist_init`]: 1,644 MiB on
///            NVLink GPUs, 164 MiB elsewhere), else 0
/// rest     = (F − W) − F·(1 − mfs)  [− 100 MiB for a multimodal model, 0.5.18–]
/// tokens   = ⌊rest / (P·c_tok)⌋·P            P = page_size (`block_size`, 1; from 0.4.4)
/// mfs default: by release and GPU ([`default_mfs`])
/// ```
pub(super) fn plan(s: &Scenario, p: &Prepared, l: &Layout) -> Plan {
    let v = used_release(s);
    let total = device_total(s);
    let split = expert_split(s, &p.arch, l, v);
    let mfs = s
        .serving
        .gpu_util
        .unwrap_or_else(|| default_mfs(s, p, l, v, split.is_some()));
    // A reserve larger than the device leaves nothing (SGLang then fails to start).
    let mfs = (mfs * multimodal_factor(s, v)).clamp(0.0, 1.0);
    let dist = if l.tp.get() > 1 || l.pp.get() > 1 || split.is_some() {
        dist_init(s)
    } else {
        0
    };
    let free = total.saturating_sub(s.cuda_ctx_mib() as u64 * MIB + dist);
    let weights = serve_weights(s, p, l, split);
    let w = weights.eval();
    let (reserve_expr, reserve, mm) = held_back(s, v, free, mfs);
    let rest = free.saturating_sub(w).saturating_sub(reserve + mm);
    // Hybrids: the state cache's slots come out of the same rest first (`hybrid::sglang_state`).
    let state = hybrid::sglang_state(s, &p.arch, l, v, rest);
    let (slots, sigma) = state.unwrap_or((0, 0));
    let kv_bytes = rest.saturating_sub(slots.saturating_mul(sigma));
    let ml = max_len(s);
    let page = page_size(s, &p.arch, v);
    let (pl, kv, per_token) = kv_pool(s, &p.arch, l, v, (kv_bytes, page, ml), state);
    let error = kv_cache_dtype_refusal(s, v)
        .or_else(|| page_refusal(s, v, page))
        .or_else(|| expert_refusal(s, &p.arch, l, v))
        .or_else(|| mxfp4_refusal(s, &p.arch, v))
        .or_else(|| heads_vs_tp(&p.arch, l))
        .or_else(|| {
            let m = Memory {
                free,
                weights: w,
                reserve,
                rest,
                kv: kv_bytes,
                graphs: (!graphs_off(s)).then(|| 2 * MIB * graph_max_bs(s, l, v, split.is_some())),
                req_pool: req_pool_bytes(
                    s,
                    pl.tokens,
                    ml,
                    state.map(|x| x.0),
                    split.is_some().then_some(l.dp.get() as u64),
                ),
            };
            start_refusal(v, m, mfs, pl.tokens, ml)
        });
    Plan {
        engine: Engine::Sglang,
        version: v,
        budget: (free as f64 * mfs) as u64,
        weights,
        activation: reserve_expr,
        non_torch: sym("N_t", 0),
        graphs: sym("G", 0),
        kv,
        outside: Expr::new(&[
            Sym("ctx", s.cuda_ctx_mib() as u128 * MIB as u128),
            Sym("D", dist as u128),
            Add,
        ]),
        per_token,
        block_size: page.get() as u64,
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
        sources: eplb_sources(SOURCES, s, &p.arch, split.is_some()),
    }
}

/// What SGLang holds back from the pools: `(expression, reserve, multimodal share)`.
///
/// # Formula
/// R = ⌊F·(10⁶ − m)/10⁶⌋ with F the free memory (bytes) and m = mem_fraction_static in
/// parts per million: what SGLang leaves for activations and CUDA graphs
/// (`model_runner.py`: `rest_memory = available − total·(1 − mem_fraction_static)`); from
/// 0.5.18 a multimodal model's pools give `M_mm` = 100 MiB more to the encoder's cache
/// (`mm_runtime_reservation_gb`: `SGLANG_VLM_CACHE_SIZE_MB`, default 100).
///
/// # Example
/// F = 80 GiB, m = 880,000: R = ⌊85,899,345,920·120,000/10⁶⌋ = 10,307,921,510 B.
fn held_back(s: &Scenario, v: Version, free: u64, mfs: f64) -> (Expr, u64, u64) {
    let m = (mfs * 1e6).round() as u128;
    let expr = Expr::new(&[
        Sym("F", free as u128),
        Num(1_000_000),
        Sym("m", m),
        Sub,
        Mul,
        Num(1_000_000),
        Div,
    ]);
    let reserve = expr.eval().min(free);
    let mm = if s.vision().is_some() && v >= Version(0, 5, 18, 0) {
        100 * MIB
    } else {
        0
    };
    if mm > 0 {
        (expr.then(&[Sym("M_mm", mm as u128), Add]), reserve, mm)
    } else {
        (expr, reserve, 0)
    }
}

/// Whether SGLang keeps the sliding-window layers in a pool of their own (hybrid SWA
/// memory): gpt-oss and Llama 4 from 0.5.8 (`is_hybrid_swa_model`), except gpt-oss under
/// `trtllm_mha` (Blackwell's default backend for it) in 0.5.8–0.5.9; through 0.5.7 gpt-oss
/// sets `disable_hybrid_swa_memory` and Llama 4 needs `--hybrid-kvcache-ratio`; Gemma 2/3
/// stay on one pool in every release read (0.4.0–0.5.23).
///
/// Source: SGLang `configs/model_config.py` (`is_hybrid_swa_model`, 0.5.8–0.5.23),
/// `server_args.py` (the gpt-oss branch: `disable_hybrid_swa_memory = True` to 0.5.7, only
/// with `trtllm_mha` or speculative decoding in 0.5.8, only `trtllm_mha` in 0.5.9, none from
/// 0.5.10; Gemma's "Disable hybrid SWA memory … not yet supported"), every wheel 0.5.4–0.5.23.
fn swa_pool(s: &Scenario, arch: &Arch, v: Version) -> bool {
    let id = s.model.preset.as_str();
    let blackwell = crate::gpu::compute_capability(&s.cluster.gpu) == 100;
    arch.window > 0
        && arch.local_layers > 0
        && v >= Version(0, 5, 8, 0)
        && match id {
            x if x.starts_with("gpt-oss") => v >= Version(0, 5, 10, 0) || !blackwell,
            x => x.starts_with("llama-4"),
        }
}

/// SGLang's KV pool from the bytes left for it (`kv`, its page and the context): one pool of
/// `tokens·c_tok`, or with a sliding-window pool ([`swa_pool`]) the full layers' tokens `T`
/// and the window layers' `⌊0.8·T⌋` (`swa_full_tokens_ratio`), each whole pages:
///
/// # Formula
/// ```text
/// one pool:  T = ⌊kv / (P·c_tok)⌋·P
/// SWA pool:  T = ⌊kv / (P·(c_full + 0.8·c_swa))⌋·P,  T_swa = ⌊0.8·T/P⌋·P
///            c_full = L_f·row, c_swa = L_w·row (row: a layer's K and V bytes a token)
/// ```
/// Source: SGLang `model_runner.py` (0.5.3–0.5.13: "Use sliding window memory pool.
/// full_layer_tokens=…, swa_layer_tokens=…", `denominator = swa_full_tokens_ratio ·
/// swa_layers_num + full_layers_num`), `model_executor/pool_configurator.py`
/// (`HybridSWAPoolConfigurator`, 0.5.23: `cell = c_full + ratio·c_swa`); the ratio's default
/// 0.8 in every release read.
///
/// # Example
/// gpt-oss-120b at TP 1 (18 full and 18 window layers, 8 KV heads of 64, bf16: row 2,048 B):
/// one pool 73,728 B a token; split, 36,864 + 0.8·36,864 = 66,355 B: 11 % more tokens.
fn kv_pool(
    s: &Scenario,
    arch: &Arch,
    l: &Layout,
    v: Version,
    (kv, page, ml): (u64, Count, u64),
    state: Option<(u64, u64)>,
) -> (Pool, Expr, u64) {
    let (per_token, _, format) = per_token(s, arch, l);
    if !swa_pool(s, arch, v) {
        let pl = pool(kv, per_token, page, ml);
        let expr = pool_expr(pl.tokens, per_token, state);
        return (pl, expr, per_token);
    }
    let (full, windowed) = stage_layers(arch, l.pp);
    let row = layer_row(arch, format, l.tp);
    let (c_full, c_swa) = (row * full, row * windowed);
    let cell = c_full + (c_swa * 4).div_ceil(5);
    let pl = pool(kv, cell, page, ml);
    let p = page.get() as u64;
    let swa_tokens = pl.tokens * 4 / 5 / p * p;
    let expr = Expr::new(&[
        Sym("T", pl.tokens as u128),
        Sym("c_full", c_full as u128),
        Mul,
        Sym("T_swa", swa_tokens as u128),
        Sym("c_swa", c_swa as u128),
        Mul,
        Add,
    ]);
    (pl, expr, cell)
}

/// The pools' bytes as the plan shows them: `tokens·c_tok`, and a hybrid's state cache
/// `S·σ` ([`hybrid::sglang_state`]).
fn pool_expr(tokens: u64, per_token: u64, state: Option<(u64, u64)>) -> Expr {
    let kv = Expr::new(&[
        Sym("tokens", tokens as u128),
        Sym("c_tok", per_token as u128),
        Mul,
    ]);
    match state {
        Some((n, sigma)) => kv.then(&[Sym("S", n as u128), Sym("σ", sigma as u128), Mul, Add]),
        None => kv,
    }
}

/// What SGLang's distributed start takes before the weights load with more than one rank
/// (NCCL's communicators, the custom all-reduce's buffers), bytes: its log line "Init torch
/// distributed ends. mem usage=…" (SGLang's GB being GiB).
///
/// # Formula
/// ```text
/// D = 1,644 MiB   NVLink GPUs (H100 SXM, H100 NVL, H200, GH200, B200, A100)
///   =   164 MiB   otherwise (PCIe-only: L4, L40S, A10, RTX cards, H100 PCIe, …)
/// ```
/// Where the GPUs reach each other over NVLink, NCCL's peer-to-peer transport keeps each
/// channel's receive buffers (Simple, LL128, LL) in device memory, for the TP group's
/// communicator and for torch's own; without peer access (consumer cards, most PCIe
/// servers) it goes through host memory and the custom all-reduce is off. The logs:
/// NVLink 1.25 GB (grok-2, 8 × H100 TP 8, v0.5.2rc2) and 1.96 GB (Llama 3.3 70B, 8 × H200
/// TP 8, a build of 2025-10-16; the other ranks 1.77–2.01), **calibrated**: their mean;
/// PCIe-only 0.13 GB (4 × L4, 0.4.3.post4) and 0.19 GB (2 × RTX 4090, a 2026 build),
/// their mean. Which GPUs have peers over NVLink is memfit's reading of the usual servers
/// (A100 and H100 NVL without a log). It lowers the free memory `F` the fraction is taken
/// of, as the CUDA context does. NVLS is off in SGLang from 0.4.3 (`NCCL_NVLS_ENABLE` from
/// `--enable-nccl-nvls`, default off), so no NVLS term as vLLM's. AMD (RCCL over xGMI,
/// 3.81 GB on 8 × MI355X in one 2026 log) is not modelled: 164 MiB.
///
/// Source: SGLang `model_executor/model_runner.py` `init_torch_distributed` (the log line),
/// `distributed/parallel_state.py` (`PyNcclCommunicator`, `CustomAllreduce` per TP group);
/// the logs in `tests/data/serve_logs.json`.
///
/// # Example
/// Qwen3-235B-A22B FP8 on 4 × H100 at 0.93 (vllm#21348, whose own line was not used): `F`
/// falls by 1,480 MiB, the pool by 0.93 of it (1.34 GiB, 29,985 tokens of 48,128 B):
/// 399,662 → 369,674 tokens against the logged 367,404.
fn dist_init(s: &Scenario) -> u64 {
    let nvlink = matches!(
        s.cluster.gpu.as_str(),
        "h100-80" | "h100-nvl" | "h200" | "gh200" | "b200-180" | "b200-192" | "a100-40" | "a100-80"
    );
    if nvlink {
        1644 * MIB
    } else {
        164 * MIB
    }
}

/// SGLang's cut of `mem_fraction_static` for a multimodal checkpoint (memfit's: Gemma 3
/// 4B–27B, Llama 4, Mistral Small 3.1, whose encoder `model::vision_tower` counts): ×0.95
/// through 0.4.4.post3 and ×0.90 in 0.4.4.post4–0.4.8.post1, given or defaulted
/// ("Automatically reduce --mem-fraction-static … because this is a multimodal model"); from
/// 0.4.9 only a defaulted fraction, ×0.90 in 0.4.9–0.4.9.post2, then by the encoder's size:
/// `0.95·clamp(1 − 0.1·(c − 1), 0.8, 1.05)` with `c = L·H²/(24·1024²)`
/// (`adjust_mem_fraction_for_vlm`, unchanged to 0.5.23). From 0.4.6 Gemma 3 and Llama 4 run
/// with multimodal off unless `--enable-multimodal` (`mm_disabled_models`): no cut.
///
/// Source: SGLang `model_executor/model_runner.py` (`*= 0.95` to 0.4.4.post3, `*= 0.90`
/// 0.4.4.post4–0.4.8.post1), `server_args.py` (0.4.9–0.4.9.post2: `*= 0.90` in the default
/// branch; 0.4.9.post3–0.5.2, 0.5.3, 0.5.23: `adjust_mem_fraction_for_vlm`; every wheel
/// diffed), `configs/model_config.py` (`mm_disabled_models`, 0.4.6–0.5.23).
///
/// # Example
/// `google/gemma-3-4b-it` on an H200, SGLang of 2025-03-27 (0.4.4.post2), 0.88: 0.836; its
/// log allocates 834,615 tokens (memfit 882,804 without the cut). Mistral Small 3.1 on 0.5.3
/// with the default fraction: c = 1, ×0.95.
fn multimodal_factor(s: &Scenario, v: Version) -> f64 {
    let preset = &s.model.preset;
    let Some(vt) = s.vision() else {
        return 1.0;
    };
    let off = v >= Version(0, 4, 6, 0)
        && (preset.starts_with("gemma-3") || preset.starts_with("llama-4"));
    let given = s.serving.gpu_util.is_some();
    let (l, h) = (vt.shape.0 as f64, vt.shape.1 as f64);
    match v {
        _ if off => 1.0,
        v if v < Version(0, 4, 4, 4) => 0.95,
        v if v < Version(0, 4, 9, 0) => 0.90,
        _ if given => 1.0,
        v if v < Version(0, 4, 9, 3) => 0.90,
        _ => 0.95 * (1.0 - 0.1 * (l * h * h / (24.0 * 1024.0 * 1024.0) - 1.0)).clamp(0.8, 1.05),
    }
}

/// What SGLang says once the pool is sized, in the order it meets it: weights larger than
/// the free memory (torch's out-of-memory error while they load, before any of SGLang's
/// checks; its numbers are memfit's), the weights leave
/// nothing under the fraction (0.5.14: [`weights_refusal`]), no memory for the pool ("Not
/// enough memory", [`pool_refusal`]), the held-back share smaller than the request-to-token
/// table allocated before the KV pool ([`req_pool_bytes`]: the KV pool's allocation fails),
/// less left than SGLang's own graph estimate ([`graph_capture_refusal`]), a pool shorter
/// than the context (requests cut). Source:
/// SGLang `model_runner.py` (`init_memory_pool`, then `init_cuda_graphs`), `scheduler.py`
/// (`max_req_input_len`).
fn start_refusal(v: Version, m: Memory, mfs: f64, tokens: u64, ml: u64) -> Option<String> {
    if let Some(e) = load_oom(m.weights, m.free) {
        Some(e)
    } else if v >= Version(0, 5, 14, 0) && m.rest == 0 {
        Some(weights_refusal(m, mfs))
    } else if m.kv == 0 {
        Some(pool_refusal(v, mfs))
    } else if m.reserve < m.req_pool {
        Some(format!("torch.OutOfMemoryError: CUDA out of memory while the KV pool is allocated: the request-to-token table allocated before it (ReqToTokenPool, {} GiB) does not fit in the {} GiB that mem_fraction_static = {mfs} holds back", gib(m.req_pool), gib(m.reserve)))
    } else if let Some(g) = m.graphs.filter(|&g| m.reserve - m.req_pool < g) {
        Some(graph_capture_refusal(v, mfs, m.reserve - m.req_pool, g))
    } else {
        (tokens < ml).then(|| {
            format!("max_total_num_tokens={tokens} is smaller than the context length {ml}: requests are cut to {} tokens", tokens.saturating_sub(1))
        })
    }
}

/// The bytes [`start_refusal`] reads: the free memory before the weights `F`, the weights
/// `W`, the reserve `F·(1 − m)`, what is left for the pools, and the KV pool's share of it.
#[derive(Clone, Copy)]
struct Memory {
    free: u64,
    weights: u64,
    reserve: u64,
    rest: u64,
    kv: u64,
    /// SGLang's own estimate of the decode CUDA graphs, 2 MiB a batch size up to `D` (its
    /// reserve's `2·D` term); `None` with `--disable-cuda-graph`.
    graphs: Option<u64>,
    /// The request-to-token table allocated from the held-back share ([`req_pool_bytes`]).
    req_pool: u64,
}

/// SGLang's request-to-token table (`ReqToTokenPool.req_to_token`, int32), allocated right
/// after the KV pool from the share `mem_fraction_static` holds back, bytes.
///
/// # Formula
/// ```text
/// R     = max_running_requests (÷ the DP size under DP attention), else
///         clamp(⌊T / C · 512⌋, 2,048, 4,096);  R ≤ T/2;  hybrids: R ≤ the state slots
/// bytes = (R + 1) · (C + 4) · 4
/// ```
/// `T` the pool's tokens, `C` the context (`context_length`, memfit's `max_len`).
///
/// Source: SGLang `model_executor/model_runner.py init_memory_pool` (0.4.0–0.5.3: `max_num_reqs
/// = min(max(int(T / context_len · 512), 2048), 4096)`, `max_context_len = context_len + 4`),
/// `mem_cache/kv_cache_configurator.py resolve_max_num_reqs` (0.5.23: the same, capped at
/// `T // 2`), `mem_cache/memory_pool.py ReqToTokenPool` (`torch.zeros((size + 1,
/// max_context_len), dtype=torch.int32)`). Checked on the logs' "Memory pool end" lines (the
/// drop below the weights' and the pool's, GiB): QwQ-32B 4 × L4 1.155 against 1.000 (R 2,048,
/// C 131,072); grok-2 8 × H100 1.89 against 1.724 (R 3,529, the log's
/// `max_running_requests=3529`); Qwen3-8B on a B200 0.68 against 0.625 (R 4,096); 0.05–0.17
/// GiB more in each (not modelled).
///
/// # Example
/// Llama 3 8B, 131,072 tokens of context, a pool of 480,000: R = 2,048, 2,049 · 131,076 · 4 =
/// 1,074,298,896 B.
fn req_pool_bytes(
    s: &Scenario,
    tokens: u64,
    ml: u64,
    slots: Option<u64>,
    dp_attention: Option<u64>,
) -> u64 {
    let r = match (
        s.serving.max_seqs.map(|n| n.get() as u64),
        dp_attention.unwrap_or(1),
    ) {
        // SGLang's `max(1, max_running_requests // dp_size)`.
        (Some(n), d) if n < d => 1,
        (Some(n), d) => n / d,
        (None, _) => (tokens.saturating_mul(512).checked_div(ml).unwrap_or(0)).clamp(2048, 4096),
    };
    let r = r.min(tokens / 2).min(slots.unwrap_or(u64::MAX));
    (r + 1).saturating_mul(ml + 4).saturating_mul(4)
}

/// SGLang's "Not enough memory" when nothing is left for the KV pool, with the fraction as
/// the release prints it (Python's `repr` of the float, which Rust's `{}` writes alike).
/// Source: SGLang `model_runner.py` (0.4.10, 0.5.2: the sentence alone; 0.5.3: `Current
/// value: {self.server_args.mem_fraction_static=}`), `MemoryPoolConfig` /
/// `pool_configurator.py` (0.5.10–0.5.23: `Current value: mem_fraction_static=…`).
fn pool_refusal(v: Version, mfs: f64) -> String {
    let head = "Not enough memory. Please try to increase --mem-fraction-static.";
    match v {
        v if v < RESERVE_FROM => head.to_string(),
        v if v < Version(0, 5, 10, 0) => {
            format!("{head} Current value: self.server_args.mem_fraction_static={mfs}")
        }
        _ => format!("{head} Current value: mem_fraction_static={mfs}"),
    }
}

/// SGLang's refusal (0.5.14–) when the loaded weights exceed the static budget.
///
/// # Formula
/// `minimum = 1 − (F − W)/F`, `suggested = ⌈minimum·1000⌉/1000`.
///
/// Source: SGLang `model_executor/pool_configurator.py` (0.5.14), `mem_cache/
/// kv_cache_configurator.py` (`_profile_available_bytes`, 0.5.23), quoted.
fn weights_refusal(m: Memory, mfs: f64) -> String {
    // (A device with nothing free needs all of it: minimum 1.)
    let min = if m.free == 0 {
        1.0
    } else {
        m.weights.min(m.free) as f64 / m.free as f64
    };
    let suggested = (min * 1000.0).ceil() / 1000.0;
    format!("Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static={mfs}. Raise --mem-fraction-static above {suggested:.3} (minimum viable = 1 - available/pre = {min:.4}). If using speculative decoding, draft weights are now counted.")
}

/// SGLang's first release with `--page-size` (0.4.3.post4 has none: one token a page).
const PAGE_SIZE_FROM: Version = Version(0, 4, 4, 0);

/// The KV pool's page, `block_size` (`--page-size`, default 1) from 0.4.4; the pool's
/// tokens are rounded down to whole pages (`max_total_num_tokens // page_size *
/// page_size`). From 0.5.7 a datacenter Blackwell GPU (compute capability 10.0) runs a
/// standard-attention model on `trtllm_mha` by default, which sets a page of 64.
/// Source: SGLang `srt/server_args.py`, `model_executor/model_runner.py init_memory_pool`
/// (0.4.4, 0.4.6, 0.5.3 sdists), `_handle_attention_backend_compatibility` (0.5.7),
/// `arg_groups/model_override_base.py get_default_attn_backend` (0.5.23).
fn page_size(s: &Scenario, arch: &Arch, v: Version) -> Count {
    match s.serving.block_size {
        Some(b) if v >= PAGE_SIZE_FROM => b,
        None if v >= Version(0, 5, 7, 0)
            && arch.mla.is_none()
            && crate::gpu::compute_capability(&s.cluster.gpu) == 100 =>
        {
            crate::scenario::count(64)
        }
        _ => Count::MIN,
    }
}

/// SGLang's refusal of a chunked-prefill size that is not whole pages: a bare assertion in
/// `ServerArgs.__post_init__` (`assert self.chunked_prefill_size % self.page_size == 0`,
/// 0.4.4–0.4.9.post3), quoted with its line; with its message from 0.4.9.post6
/// (`check_server_args`; 0.4.9.post4–5 not read). Source: SGLang `srt/server_args.py`
/// (0.4.7.post1, 0.4.9.post3, 0.4.9.post6, 0.5.3, 0.5.23's `arg_groups/validation_hook.py`).
fn page_refusal(s: &Scenario, v: Version, page: Count) -> Option<String> {
    let cp = chunk_size(s, v);
    let p = page.get() as u64;
    (!cp.is_multiple_of(p)).then(|| {
        if v >= Version(0, 4, 9, 6) {
            format!("AssertionError: chunked_prefill_size must be divisible by page_size (chunked_prefill_size {cp}, page_size {p})")
        } else {
            format!("AssertionError (srt/server_args.py: `assert self.chunked_prefill_size % self.page_size == 0`; chunked_prefill_size {cp}, page_size {p})")
        }
    })
}

/// SGLang's refusal when what `mem_fraction_static` holds back, less the request-to-token
/// table, is below SGLang's own estimate of the decode graphs (2 MiB a batch size, its
/// reserve's `2·D`; the logs' captures took more: 0.93 GiB at `D` 80 on 4 × L4, 0.89 at
/// 160 on 8 × H100, so this is a floor, and a launch above it may still fail). SGLang's
/// words, with the cause torch reports in place of its message. With `mem_fraction_static`
/// 1 the KV pool's own allocation fails first ([`start_refusal`]).
///
/// Source: SGLang `model_executor/cuda_graph_runner.py` (0.4.6: the message inline; 0.5.3:
/// `CUDA_GRAPH_CAPTURE_FAILED_MSG`), `model_executor/runner_backend_utils` (0.5.14–0.5.23:
/// the decode graphs' flags), `model_runner.py profile_max_num_token` (`rest_memory =
/// available − total·(1 − mem_fraction_static)`: with 1 the pool is all of it).
fn graph_capture_refusal(v: Version, mfs: f64, left: u64, estimate: u64) -> String {
    let flag = if v >= Version(0, 5, 14, 0) {
        "--cuda-graph-max-bs-decode"
    } else {
        "--cuda-graph-max-bs"
    };
    format!("Capture cuda graph failed: CUDA out of memory (mem_fraction_static = {mfs} leaves {} GiB beside the KV pool and the request-to-token table, below SGLang's own estimate of the decode graphs, {} GiB). Possible solutions: 1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7) 2. set {flag} to a smaller value (e.g., 16) …", gib(left), gib(estimate))
}

const SOURCES: [&str; 6] = [
    SRC_WEIGHTS,
    "SGLang server_args (mem_fraction_static default): the rest of the free memory is held back for activations and CUDA graphs",
    "SGLang: inside the held-back share",
    "SGLang: inside the held-back share",
    "SGLang model_runner.profile_max_num_token: int(rest·2^30) // cell_size",
    "the CUDA context, and the distributed start with more than one rank (SGLang's log: \"Init torch distributed ends. mem usage\"), before the weights load",
];

/// `--kv-cache-dtype`'s choices in release `v`.
///
/// Source: SGLang `srt/server_args.py` (`choices=["auto", "fp8_e5m2"]` in 0.4.0 and 0.4.1,
/// `["auto", "fp8_e5m2", "fp8_e4m3"]` from 0.4.2 through 0.5.3; `bf16`, `bfloat16` from
/// 0.5.4, `fp4_e2m1` from 0.5.4.post3, `mxfp8`, `nvfp4`, `fp4_mx_block16` from 0.5.16,
/// `fp4_e2m1` gone in 0.5.21: `arg_groups/fields/model.py`; PyPI sdists and wheels).
pub(crate) fn cache_dtypes(v: Version) -> &'static [&'static str] {
    const FP8: [&str; 3] = ["auto", "fp8_e5m2", "fp8_e4m3"];
    const BF16: [&str; 6] = [
        "auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16", "fp4_e2m1",
    ];
    // 0.5.16's order; 0.5.21 drops the last.
    const MX: [&str; 9] = [
        "auto",
        "fp8_e5m2",
        "fp8_e4m3",
        "mxfp8",
        "bf16",
        "bfloat16",
        "nvfp4",
        "fp4_mx_block16",
        "fp4_e2m1",
    ];
    match v {
        v if v < Version(0, 4, 2, 0) => &FP8[..2],
        v if v < Version(0, 5, 4, 0) => &FP8,
        v if v < Version(0, 5, 4, 3) => &BF16[..5],
        v if v < Version(0, 5, 16, 0) => &BF16,
        v if v < Version(0, 5, 21, 0) => &MX,
        _ => &MX[..8],
    }
}

/// SGLang's (argparse's) refusal of a cache dtype it does not have: memfit's `fp8` is
/// one of SGLang's fp8 types, and a 16- or 32-bit `kv_dtype` equal to the compute dtype is
/// `auto`; anything else is refused as typed.
///
/// Source: SGLang `srt/server_args.py` (`--kv-cache-dtype` choices), CPython
/// `argparse._check_value` ("invalid choice: %(value)r (choose from %(choices)s)").
pub(crate) fn kv_cache_dtype_refusal(s: &Scenario, v: Version) -> Option<String> {
    let d = s.numerics.kv_dtype;
    let p = s.numerics.precision;
    let same_width = matches!(
        d,
        crate::scenario::Dtype::Bf16 | crate::scenario::Dtype::Fp16 | crate::scenario::Dtype::Fp32
    ) && d.bits(p) == crate::scenario::Dtype::Auto.bits(p);
    let bf16 = d == crate::scenario::Dtype::Bf16 && v >= Version(0, 5, 4, 0);
    if matches!(
        d,
        crate::scenario::Dtype::Auto | crate::scenario::Dtype::Fp8
    ) || same_width
        || bf16
    {
        return None;
    }
    Some(format!(
        "argument --kv-cache-dtype: invalid choice: '{}' (choose from {})",
        d.as_str(),
        py_strs(cache_dtypes(v))
    ))
}

/// SGLang's answer to `quant=mxfp4`: before 0.5.0 (gpt-oss's release) it has no such method;
/// from it MXFP4 quantizes only MoE experts, and a linear layer outside the checkpoint's
/// ignored modules gets no method at all, so a dense model fails on its first linear
/// layer's assertion (on CUDA; ROCm loads those layers unquantized).
///
/// Source: SGLang `srt/configs/model_config.py` `_verify_quantization` ("Unknown
/// quantization method: … Must be one of …", 0.4.10.post2), `srt/layers/quantization/
/// mxfp4.py` `Mxfp4Config.get_quant_method` (0.5.0rc0–0.5.23: `None` for a `LinearBase`
/// not skipped), `srt/layers/linear.py` (`assert self.quant_method is not None`).
///
/// # Example
/// Llama 3 8B with `quant=mxfp4`: 0.4.10 "Unknown quantization method: mxfp4 …"; 0.5.23 the
/// assertion. gpt-oss-20b (32 experts) on 0.5.23: no refusal.
fn mxfp4_refusal(s: &Scenario, arch: &Arch, v: Version) -> Option<String> {
    if s.numerics.quant != crate::quant::Quant::Mxfp4 {
        return None;
    }
    if v < Version(0, 5, 0, 0) {
        return Some(format!("ValueError: Unknown quantization method: mxfp4. Must be one of ['awq', 'fp8', 'gptq', …] (SGLang {v}; MXFP4 arrived with gpt-oss in 0.5.0)"));
    }
    (arch.experts == 0).then(|| {
        "AssertionError (srt/layers/linear.py: `assert self.quant_method is not None`): SGLang's MXFP4 quantizes only MoE experts, and gives a dense model's linear layers no method".to_string()
    })
}

/// SGLang's refusal of a tensor-parallel size that does not divide the attention heads: a
/// bare assertion in the model's attention (no message of its own), quoted with its line.
///
/// Source: SGLang `srt/models/llama.py LlamaAttention.__init__` (`assert
/// self.total_num_heads % tp_size == 0`, 0.4.0–0.5.3; the other model files assert the same).
pub(crate) fn heads_vs_tp(arch: &Arch, l: &Layout) -> Option<String> {
    (arch.heads.get() > 0 && l.tp.get() > 0 && !arch.heads.get().is_multiple_of(l.tp.get())).then(|| {
        format!(
            "AssertionError (srt/models/llama.py: `assert self.total_num_heads % tp_size == 0`; {} heads, tp_size {})",
            arch.heads, l.tp
        )
    })
}
