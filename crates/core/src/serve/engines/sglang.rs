//! SGLang's start-up: the static memory fraction and the token pool.

use super::*;

/// SGLang's start-up (`ModelRunner.profile_max_num_token`, 0.4–0.5).
///
/// # Formula
/// ```text
/// F        = free memory before the weights (device total − CUDA context − D)
/// D        = 164 MiB with more than one rank (the distributed start, [`DIST_INIT`]), else 0
/// rest     = (F − W) − F·(1 − mfs)
/// tokens   = ⌊rest / (P·c_tok)⌋·P            P = page_size (`block_size`, 1; from 0.4.4)
/// mfs default (0.5.x) = round((M_smi − R)/M_smi, 3),  R = 512 + 1.5·max(cp, 2048) + 2·bs + t·p/8·1024  (MiB;
///          ≥ 10,240 on GPUs over 60 GiB), cp and bs by the GPU's size; 0.4.x: 0.88/0.87/0.85/0.81/0.79 by t·p
/// ```
pub(super) fn plan(s: &Scenario, p: &Prepared, l: &Layout) -> Plan {
    let v = used_release(s);
    let total = device_total(s);
    let split = expert_split(s, &p.arch, l, v);
    let mfs = s
        .serving
        .gpu_util
        .unwrap_or_else(|| default_mfs(s, l, v, split.is_some()));
    // A reserve larger than the device leaves nothing (SGLang then fails to start).
    let mfs = (mfs * multimodal_factor(s, v)).clamp(0.0, 1.0);
    let dist = if l.tp.get() > 1 || l.pp.get() > 1 || split.is_some() {
        DIST_INIT
    } else {
        0
    };
    let free = total.saturating_sub(s.cuda_ctx_mib() as u64 * MIB + dist);
    let weights = serve_weights(s, p, l, split);
    let w = weights.eval();
    // # Formula
    // R = ⌊F·(10⁶ − m)/10⁶⌋ with F the free memory (bytes) and m = mem_fraction_static in
    // parts per million: what SGLang leaves for activations and CUDA graphs
    // (`model_runner.py`: `rest_memory = available − total·(1 − mem_fraction_static)`).
    // Example: F = 80 GiB, m = 880,000: R = ⌊85,899,345,920·120,000/10⁶⌋ = 10,307,921,510 B.
    let m = (mfs * 1e6).round() as u128;
    let reserve_expr = Expr::new(&[
        Sym("F", free as u128),
        Num(1_000_000),
        Sym("m", m),
        Sub,
        Mul,
        Num(1_000_000),
        Div,
    ]);
    let reserve = reserve_expr.eval().min(free);
    let rest = free.saturating_sub(w).saturating_sub(reserve);
    // Hybrids: the state cache's slots come out of the same rest first (`hybrid::sglang_state`).
    let state = hybrid::sglang_state(s, &p.arch, l, v, rest);
    let (slots, sigma) = state.unwrap_or((0, 0));
    let kv_bytes = rest.saturating_sub(slots.saturating_mul(sigma));
    let (per_token, _, _) = per_token(s, &p.arch, l);
    let ml = max_len(s);
    let page = page_size(s, v);
    let pl = pool(kv_bytes, per_token, page, ml);
    let kv = pool_expr(pl.tokens, per_token, state);
    let error = kv_cache_dtype_refusal(s, v)
        .or_else(|| page_refusal(s, v, page))
        .or_else(|| expert_refusal(s, &p.arch, l, v))
        .or_else(|| heads_vs_tp(&p.arch, l))
        .or_else(|| start_refusal(kv_bytes, reserve, mfs, pl.tokens, ml));
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
        sources: eplb_sources(SOURCES, s, &p.arch, split.is_some()),
    }
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
/// distributed ends. mem usage=…" prints 0.13 GB on 4 × L4 (0.4.3.post4) and 0.19 GB on 2 ×
/// RTX 4090 (a 2026 build); 164 MiB is their mean (**calibrated** on those two lines, SGLang's
/// GB being GiB). It lowers the free memory `F` the fraction is taken of, as the CUDA
/// context does. NVLS is off in SGLang from 0.4.3 (`NCCL_NVLS_ENABLE` from
/// `--enable-nccl-nvls`, default off), so no NVSwitch term as vLLM's.
const DIST_INIT: u64 = 164 * MIB;

/// SGLang's cut of `mem_fraction_static` for a multimodal checkpoint (memfit's: Gemma 3
/// 4B–27B, Llama 4, Mistral Small 3.1, whose encoder `model::vision_tower` counts): ×0.95
/// through 0.4.4 and ×0.90 in 0.4.5–0.4.8, given or defaulted ("Automatically reduce
/// --mem-fraction-static … because this is a multimodal model"); from 0.4.9 only a defaulted
/// fraction, ×0.90 in 0.4.9, then by the encoder's size: `0.95·clamp(1 − 0.1·(c − 1), 0.8,
/// 1.05)` with `c = L·H²/(24·1024²)` (`adjust_mem_fraction_for_vlm`). From 0.4.6 Gemma 3 and
/// Llama 4 run with multimodal off unless `--enable-multimodal` (`mm_disabled_models`): no cut.
///
/// Source: SGLang `model_executor/model_runner.py` (0.4.3.post4, 0.4.4: `*= 0.95`; 0.4.5,
/// 0.4.7, 0.4.8: `*= 0.90`), `server_args.py` (0.4.9: `*= 0.90` in the default branch;
/// 0.4.10.post2, 0.5.3: `adjust_mem_fraction_for_vlm`), `configs/model_config.py`
/// (`mm_disabled_models`, 0.4.6–0.5.3).
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
        v if v < Version(0, 4, 5, 0) => 0.95,
        v if v < Version(0, 4, 9, 0) => 0.90,
        _ if given => 1.0,
        v if v < Version(0, 4, 10, 0) => 0.90,
        _ => 0.95 * (1.0 - 0.1 * (l * h * h / (24.0 * 1024.0 * 1024.0) - 1.0)).clamp(0.8, 1.05),
    }
}

/// What SGLang says once the pool is sized, in the order it meets it: no memory for the
/// pool ("Not enough memory"), nothing held back for CUDA graphs ([`graph_capture_refusal`]),
/// a pool shorter than the context (requests cut). Source: SGLang `model_runner.py`
/// (`init_memory_pool`, then `init_cuda_graphs`), `scheduler.py` (`max_req_input_len`).
fn start_refusal(kv_bytes: u64, reserve: u64, mfs: f64, tokens: u64, ml: u64) -> Option<String> {
    if kv_bytes == 0 {
        Some("Not enough memory. Please try to increase --mem-fraction-static.".to_string())
    } else if reserve == 0 {
        Some(graph_capture_refusal(mfs))
    } else {
        (tokens < ml).then(|| {
            format!("max_total_num_tokens={tokens} is smaller than the context length {ml}: requests are cut to {} tokens", tokens.saturating_sub(1))
        })
    }
}

/// SGLang's first release with `--page-size` (0.4.3.post4 has none: one token a page).
const PAGE_SIZE_FROM: Version = Version(0, 4, 4, 0);

/// The KV pool's page, `block_size` (`--page-size`, default 1) from 0.4.4; the pool's
/// tokens are rounded down to whole pages (`max_total_num_tokens // page_size *
/// page_size`). Source: SGLang `srt/server_args.py`, `model_executor/model_runner.py
/// init_memory_pool` (0.4.4, 0.4.6, 0.5.3 sdists).
pub(crate) fn page_size(s: &Scenario, v: Version) -> Count {
    match s.serving.block_size {
        Some(b) if v >= PAGE_SIZE_FROM => b,
        _ => Count::MIN,
    }
}

/// SGLang's chunked-prefill size: `max_batched_tokens`, else the release's default for the
/// GPU (before 0.4.10: 2,048 under 25,000 MiB, else 8,192; from 0.4.10 by the GPU's size,
/// as in [`default_mfs`]). Source: SGLang `srt/server_args.py` (0.4.4, 0.4.6, 0.5.3).
fn chunk_size(s: &Scenario, v: Version) -> u64 {
    let smi = s.usable_bytes() / MIB;
    s.serving.max_batched_tokens.map_or_else(
        || match smi {
            _ if v < Version(0, 4, 10, 0) => {
                if smi < 25_000 {
                    2048
                } else {
                    8192
                }
            }
            m if m < 35 * 1024 => 2048,
            m if m < 60 * 1024 => 4096,
            m if m < 160 * 1024 => 8192,
            _ => 16_384,
        },
        |c| c.get() as u64,
    )
}

/// SGLang's refusal of a chunked-prefill size that is not whole pages: a bare assertion in
/// `ServerArgs.__post_init__` (`assert self.chunked_prefill_size % self.page_size == 0`,
/// 0.4.4–0.5.3), quoted with its line.
fn page_refusal(s: &Scenario, v: Version, page: Count) -> Option<String> {
    let cp = chunk_size(s, v);
    let p = page.get() as u64;
    (!cp.is_multiple_of(p)).then(|| {
        format!("AssertionError (srt/server_args.py: `assert self.chunked_prefill_size % self.page_size == 0`; chunked_prefill_size {cp}, page_size {p})")
    })
}

/// SGLang's refusal when `mem_fraction_static` holds nothing back: the KV pool takes the
/// whole free memory, and the CUDA graphs captured next (then every forward's activations)
/// have none. SGLang's words, with the cause torch reports in place of its message.
///
/// Source: SGLang `model_executor/cuda_graph_runner.py` (0.4.6: the message inline; 0.5.3:
/// `CUDA_GRAPH_CAPTURE_FAILED_MSG`), `model_runner.py profile_max_num_token` (`rest_memory
/// = available − total·(1 − mem_fraction_static)`: with 1 the pool is all of it).
fn graph_capture_refusal(mfs: f64) -> String {
    format!("Capture cuda graph failed: CUDA out of memory (mem_fraction_static = {mfs} gives the KV pool all the free memory; nothing is left for CUDA graphs and activations). Possible solutions: 1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7) 2. set --cuda-graph-max-bs to a smaller value (e.g., 16) …")
}

const SOURCES: [&str; 6] = [
    SRC_WEIGHTS,
    "SGLang server_args (mem_fraction_static default): the rest of the free memory is held back for activations and CUDA graphs",
    "SGLang: inside the held-back share",
    "SGLang: inside the held-back share",
    "SGLang model_runner.profile_max_num_token: int(rest·2^30) // cell_size",
    "the CUDA context, and the distributed start with more than one rank (SGLang's log: \"Init torch distributed ends. mem usage\"), before the weights load",
];

/// `mem_fraction_static`'s default for release `v` on this GPU and layout (the `mfs
/// default` lines of [`plan`]'s formula). With expert parallelism over DP attention
/// SGLang's `--tp` is every GPU of the server, `t·d` (the DP ranks split it).
fn default_mfs(s: &Scenario, l: &Layout, v: Version, dp_attention: bool) -> f64 {
    let smi = s.usable_bytes() / MIB;
    let l = &Layout {
        tp: if dp_attention {
            l.tp.saturating_mul(l.dp)
        } else {
            l.tp
        },
        ..*l
    };
    let tp = l.tp.get() as f64 * l.pp.get() as f64;
    if v < Version(0, 4, 10, 0) {
        match l.tp.get().saturating_mul(l.pp.get()) {
            x if x >= 16 => 0.79,
            x if x >= 8 => 0.81,
            x if x >= 4 => 0.85,
            x if x >= 2 => 0.87,
            _ => 0.88,
        }
    } else {
        let g = smi as f64;
        let wide = l.tp.get() >= 4;
        let bs = match smi {
            m if m < 20 * 1024 => 8.0,
            m if m < 35 * 1024 => {
                if wide {
                    80.0
                } else {
                    16.0
                }
            }
            m if m < 60 * 1024 => {
                if wide {
                    160.0
                } else {
                    32.0
                }
            }
            m if m < 160 * 1024 => {
                if wide {
                    512.0
                } else {
                    256.0
                }
            }
            _ => 512.0,
        };
        let cp = chunk_size(s, v) as f64;
        let mut r = 512.0 + f64::max(cp, 2048.0) * 1.5 + bs * 2.0 + tp / 8.0 * 1024.0;
        if g > 60.0 * 1024.0 {
            r = r.max(10.0 * 1024.0);
        }
        ((g - r) / g * 1000.0).round() / 1000.0
    }
}

/// `--kv-cache-dtype`'s choices in release `v`.
///
/// Source: SGLang `srt/server_args.py` (`choices=["auto", "fp8_e5m2"]` in 0.4.0 and 0.4.1,
/// `["auto", "fp8_e5m2", "fp8_e4m3"]` from 0.4.2 through 0.5.3; PyPI sdists).
pub(crate) fn cache_dtypes(v: Version) -> &'static [&'static str] {
    if v < Version(0, 4, 2, 0) {
        &["auto", "fp8_e5m2"]
    } else {
        &["auto", "fp8_e5m2", "fp8_e4m3"]
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
    if matches!(
        d,
        crate::scenario::Dtype::Auto | crate::scenario::Dtype::Fp8
    ) || same_width
    {
        return None;
    }
    Some(format!(
        "argument --kv-cache-dtype: invalid choice: '{}' (choose from {})",
        d.as_str(),
        py_strs(cache_dtypes(v))
    ))
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
