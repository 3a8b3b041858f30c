//! llama.cpp's (and Ollama's) start-up: the GGUF's weights, the padded context, the compute buffer.

use super::llamacpp_offload::*;
use super::*;
use crate::scenario::{CtxPer, Dtype, LLAMACPP_FA_AUTO_FROM};
use crate::serve::HostMemory;

/// llama.cpp: the GGUF weights on the GPU, a KV cache of `n_ctx` cells, a compute buffer.
///
/// # Formula
/// ```text
/// W_gpu  = (W_gguf + 4·Ψ_r − [untied]·W_embd) / t    (token_embd stays in host memory; a tied
///                                                     head loads its copy on the GPU)
/// n_ctx  = ⌈max_len · parallel / 256⌉·256            (ctx_per=sequence, Ollama: -c num_ctx·OLLAMA_NUM_PARALLEL)
///        = ⌈max_len / 256⌉·256                       (ctx_per=total, llama-server -c max_len -np parallel;
///                                                     each slot holds n_slot = ⌊n_ctx / parallel⌋)
/// KV     = n_ctx·L_full·c_layer + n_swa·L_w·c_layer + R_s,  n_swa = ⌈min(n_ctx, W·parallel + n_ub)/256⌉·256
///          (R_s the recurrent blocks' state, see `recurrent_bytes`; L_full the attention blocks)
/// C      = 4·n_ub·(V + h)                             (the compute buffer with flash attention, `-fa
///                                                     auto`'s choice on CUDA from b6325: f32 logits of
///                                                     a micro-batch and its f32 hidden state)
///        = max(4·n_ub·(V + h), 4·n_ub·(n_kv·(a + 1) + 4·h))   (without: the f32 scores; see
///                                                     [`compute_buffer`])
/// ```
/// With `ngl` below L + 1 ([`Placement`]) `W_gpu` is [`LayerBytes`]' GPU layers and the
/// cache's layers are the GPU layers; with the output layer on the CPU `C` also holds a copy
/// of the head matrix ([`offloaded_head`]); with `kv_offload=0` the cache is in host memory (`KV`
/// on the GPU = 0).
///
/// Source: llama.cpp `llama_context` (`GGML_PAD(n_ctx, 256)`, PR #17046), `llama_kv_cache`
/// and `llama_kv_cache_iswa` (ec98e2002), `llama_model_loader` (token_embd on the CPU
/// buffer); Ollama `llm/llama_server.go` (`-c NumCtx·numParallel`; later `llm/server.go`,
/// `KvSize: opts.NumCtx * numParallel`); llama-server `examples/server/server.cpp` (later
/// `tools/server/`: `n_ctx_slot = n_ctx / params.n_parallel`, the context created with
/// `-c` cells; ggerganov/llama.cpp).
///
/// # Example
/// Llama 3 8B Q4_K_M, max_len 8,192, parallel 1, f16 cache: W_gpu = 4,912,898,048 −
/// 295,501,824 = 4,617,396,224 B; KV = 8,192·32·4,096 = 1,073,741,824 B (1,024 MiB).
/// With parallel 4: Ollama 32,768 cells, 4,096 MiB; llama-server `-c 8192 -np 4`
/// (ctx_per=total) 8,192 cells, 1,024 MiB, 2,048 tokens per slot.
pub(super) fn plan_at(s: &Scenario, p: &Prepared, l: &Layout) -> Plan {
    plan_with(s, p, l, (0, 0))
}

/// [`plan_at`] with the routed experts of the last `cpu_experts` GPU layers in host memory
/// (what llama.cpp's fit does to a mixture, [`super::llamacpp_fit`]), the first of them
/// keeping its up (`partial` 1) or up and gate (2) projections on the GPU: `W_gpu` less
/// their bytes, the host's mapped span reaching the output layer.
pub(crate) fn plan_with(s: &Scenario, p: &Prepared, l: &Layout, cpu: (u64, u8)) -> Plan {
    let v = s.llamacpp_build();
    let arch = &p.arch;
    let Cells {
        par,
        n_ub,
        shared,
        n_ctx,
        seq_len,
        swa_cells,
    } = cells(s, arch);
    let place = Placement {
        cpu_experts: cpu.0,
        partial: cpu.1,
        ..placement(s, arch, v)
    };
    let split = LayerBytes::of(s, p);
    let weights = weights_at(s, p, l, place, &split);
    let (full, windowed) = kv_stage(arch, place, s.serving.kv_offload, l.tp);
    let f = KvFormat::of(s.numerics.kv_dtype, s.numerics.precision);
    let row = layer_row(arch, f, Count::MIN);
    let rs = recurrent_bytes(arch, par.get());
    // The recurrent blocks' state (a transformer has none: its formula stays as it was).
    let kv = match kv_expr(n_ctx, full, swa_cells, windowed, row) {
        kv if rs > 0 => kv.then(&[Sym("R_s", rs), Add]),
        kv => kv,
    };
    let per_token = sat(row as u128 * full as u128);
    let cells3 = (n_ub, n_ctx, swa_cells);
    let activation = activation_expr(s, arch, place, &split, cells3, (full, windowed), l.tp);
    let compute = activation.eval();
    let ctx = s.cuda_ctx_mib() as u64 * MIB;
    let total = device_total(s);
    let fixed = sat(weights.eval() as u128
        + compute as u128
        + ctx as u128
        + rs
        + row as u128 * windowed as u128 * swa_cells as u128);
    let used = sat(fixed as u128 + row as u128 * full as u128 * n_ctx as u128);
    let fit = longest_fit(
        total.saturating_sub(fixed),
        fixed > total,
        per_token,
        seq_len,
        shared,
        par,
    );
    let resident = split.host_part(arch, place, s.serving.mmap);
    let host = resident.saturating_add(host_kv(s, arch, place, row, n_ctx, swa_cells));
    let error = cache_type_refusal(s, arch, v)
        .or_else(|| (used > total).then(|| out_of_memory(used, total)));
    Plan {
        engine: Engine::Llamacpp,
        version: used_release(s),
        budget: total,
        weights,
        activation,
        non_torch: sym("N_t", 0),
        graphs: sym("G", 0),
        kv,
        outside: sym("ctx", ctx),
        per_token,
        block_size: 1,
        blocks: n_ctx,
        tokens: n_ctx,
        max_len: seq_len,
        // `n_ctx/par` rounds to 0 only past the keys' limits (`max_len ≥ 1`, n_ctx padded to 256).
        concurrency: n_ctx as f64 / seq_len.max(1) as f64,
        max_len_fit: fit,
        error,
        host: Some(HostMemory {
            file: split.total,
            host,
        }),
        sources: SOURCES,
        fit: None,
        fit_message: String::new(),
        notes: String::new(),
    }
}

/// One GPU's compute buffer: the graph's ([`compute_buffer`]) over the widest attention (a
/// full layer's `n_ctx` cells, else the window's), the head copied in when the output layer
/// stays on the CPU ([`offloaded_head`]), the pipeline's input copies across GPUs
/// ([`super::llamacpp_pipeline::pipeline_copies`]).
#[allow(clippy::too_many_arguments)]
fn activation_expr(
    s: &Scenario,
    arch: &crate::model::Arch,
    place: Placement,
    split: &LayerBytes,
    (n_ub, n_ctx, swa_cells): (u64, u64, u64),
    (full, windowed): (u64, u64),
    gpus: Count,
) -> Expr {
    let fa = s.llamacpp_flash(arch);
    let mask_cells = (
        if full > 0 { n_ctx } else { 0 },
        if windowed > 0 { swa_cells } else { 0 },
    );
    let m = Micro {
        n_ub,
        n_out: outputs_reserved(s, n_ub),
        n_kv: if full > 0 { n_ctx } else { swa_cells },
        n_m: mask_cells.0.saturating_add(mask_cells.1),
        fa,
    };
    let c = offloaded_head(compute_buffer(arch, m), arch, place, split, m.n_out);
    let row = layer_row(
        arch,
        KvFormat::of(s.numerics.kv_dtype, s.numerics.precision),
        Count::MIN,
    );
    let c = cpu_layer_copies(s, c, arch, place, split, m, m.n_kv.saturating_mul(row));
    let kv_gpu = s.serving.kv_offload;
    super::llamacpp_pipeline::pipeline_copies(
        c,
        arch,
        place,
        gpus.get(),
        kv_gpu,
        n_ub,
        mask_cells,
        fa,
    )
}

/// The rows of logits llama.cpp reserves in its graph: every token of the micro-batch
/// before b9460, from then one output per sequence.
///
/// # Formula
/// `n_out = n_ub` (before b9460) or `min(n_ub, n_seq)`, `n_seq` = `parallel`.
///
/// Source: llama.cpp PR #23861 (b9460, merged 2026-06-01): `n_outputs_max = n_seq_max`,
/// the reserve's `n_outputs = min(n_tokens, n_outputs_max)`. Example: n_ub 512, parallel 4:
/// 512 rows on b9459, 4 on b9460.
fn outputs_reserved(s: &Scenario, n_ub: u64) -> u64 {
    match s.llamacpp_build() < crate::scenario::LLAMACPP_OUTPUTS_PER_SEQ_FROM {
        true => n_ub,
        false => n_ub.min(s.serving.parallel.get() as u64),
    }
}

/// llama.cpp's failure when the buffers do not fit the device (its CUDA backend's
/// `cudaMalloc failed: out of memory`), with the bytes it would need.
/// llama.cpp's checks on the cache type (`--cache-type-k`/`--cache-type-v`; memfit's
/// `kv_dtype` sets both): a type outside its list fails as the argument is read, and a
/// quantized V cache without flash attention fails as the context is created (before
/// b6325 flash attention is off unless `-fa` is given, so `flash_attn=on` is needed there).
/// Ollama checks the same things its own way: it logs "quantized kv cache requested but
/// flash attention disabled" and runs f16, and takes only f16, q8_0 and q4_0.
///
/// Source: llama.cpp `common/arg.cpp` (`kv_cache_types`: f32, f16, bf16, q8_0, q4_0, q4_1,
/// iq4_nl, q5_0, q5_1; `kv_cache_type_from_str` throws "Unsupported cache type: "),
/// `src/llama-context.cpp` (`ggml_is_quantized(type_v)` without flash attention:
/// "V cache quantization requires flash_attn", the context is not created); Ollama
/// `llm/server.go`.
///
/// # Example
/// `kv_dtype=fp8`: refused as the argument is read; `kv_dtype=q8_0&flash_attn=off`: refused
/// at the context; `kv_dtype=q8_0` on b8179 (`-fa auto`): starts.
pub(crate) fn cache_type_refusal(
    s: &Scenario,
    arch: &crate::model::Arch,
    v: Version,
) -> Option<String> {
    let d = s.numerics.kv_dtype;
    if matches!(d, Dtype::Fp8 | Dtype::Int8 | Dtype::Int4) {
        return Some(format!(
            "error while handling argument \"--cache-type-k\": Unsupported cache type: {} (llama.cpp's cache types: f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1; Ollama's: f16, q8_0, q4_0)",
            d.as_str()
        ));
    }
    (d.is_ggml() && !s.llamacpp_flash(arch)).then(|| {
        let ollama = match s.ollama_used() {
            Some(o) => format!("; Ollama {o} passes OLLAMA_KV_CACHE_TYPE on to llama-server"),
            None => "; Ollama before 0.30 instead logs \"quantized kv cache requested but flash attention disabled\" and runs an f16 cache: name its release (engine_version=ollama-0.x.y)".to_string(),
        };
        format!("llama_init_from_model: V cache quantization requires flash_attn — failed to create context ({} V cache without flash attention{}{ollama})",
            d.as_str(),
            if v < LLAMACPP_FA_AUTO_FROM { ", which is off by default before b6325: pass -fa" } else { "" })
    })
}

fn out_of_memory(used: u64, total: u64) -> String {
    format!(
        "cudaMalloc failed: out of memory — needs {} GiB of the device's {} GiB",
        gib(used),
        gib(total)
    )
}

/// The cache's cells as llama.cpp sizes them, and the sequences that share them.
struct Cells {
    /// Sequences served at once (`--parallel`).
    par: std::num::NonZeroU64,
    /// Tokens per micro-batch (`n_ubatch`, 512 unless set).
    n_ub: u64,
    /// Whether `max_len` is the total the slots share (llama-server's `-c`).
    shared: bool,
    /// Context cells, padded to 256.
    n_ctx: u64,
    /// The longest request one sequence may hold: `max_len`, or its slot of the shared `n_ctx`.
    seq_len: u64,
    /// Cells of a windowed layer (0 without windowed layers).
    swa_cells: u64,
}

/// # Formula
/// ```text
/// n_ctx = pad₂₅₆(max_len)            (ctx_per=total: llama-server -c)
///       = pad₂₅₆(max_len · parallel)  (ctx_per=sequence: Ollama's num_ctx per sequence)
/// seq   = n_ctx / parallel  (total)   or  max_len  (sequence)
/// n_swa = pad₂₅₆(min(n_ctx, W · parallel + n_ub))   where the model has windowed layers
/// ```
/// Sources: see [`plan`]. Example: max_len 8,192, parallel 4, Ollama: n_ctx 32,768, seq 8,192;
/// llama-server: n_ctx 8,192, seq 2,048.
fn cells(s: &Scenario, arch: &Arch) -> Cells {
    let par = std::num::NonZeroU64::from(s.serving.parallel);
    let ml = max_len(s);
    let n_ub = s.serving.max_batched_tokens.map_or(512, |c| c.get() as u64);
    let pad = |n: u64| n.div_ceil(256).saturating_mul(256);
    let shared = s.serving.ctx_per == CtxPer::Total;
    let n_ctx = if shared {
        pad(ml)
    } else {
        pad(ml.saturating_mul(par.get()))
    };
    let seq_len = if shared { n_ctx / par.get() } else { ml };
    let (_, windowed_all) = stage_layers(arch, Count::MIN);
    let swa_cells = if windowed_all > 0 {
        pad(n_ctx.min(
            (arch.window as u64)
                .saturating_mul(par.get())
                .saturating_add(n_ub),
        ))
    } else {
        0
    };
    Cells {
        par,
        n_ub,
        shared,
        n_ctx,
        seq_len,
        swa_cells,
    }
}

/// The KV cache on the most loaded GPU: `(n_ctx·L_full + n_swa·L_w)·c_layer`.
fn kv_expr(n_ctx: u64, full: u64, swa: u64, windowed: u64, row: u64) -> Expr {
    Expr::new(&[
        Sym("n_ctx", n_ctx as u128),
        Sym("L_full", full as u128),
        Mul,
        Sym("n_swa", swa as u128),
        Sym("L_w", windowed as u128),
        Mul,
        Add,
        Sym("c_layer", row as u128),
        Mul,
    ])
}

/// The longest request that fits alone in the `room` the GPU has for the cache: its cells
/// (`room / c_tok`) in steps of 256, per sequence (Ollama) or per slot of the shared
/// context (llama-server). With no cache on the GPUs (every layer on the CPU, or
/// `--no-kv-offload`) the GPU does not bound the context (host memory, not modelled, does):
/// `max_len` when the rest fits, else 0.
fn longest_fit(
    room: u64,
    over: bool,
    per_token: u64,
    seq_len: u64,
    shared: bool,
    par: std::num::NonZeroU64,
) -> u64 {
    if per_token == 0 {
        return if over { 0 } else { seq_len };
    }
    let cells = room / per_token;
    if shared {
        cells / 256 * 256 / par.get()
    } else {
        cells / par.get() / 256 * 256
    }
}

/// The KV cache in host memory, whole process: the CPU layers' (all of it with
/// `kv_offload=0`).
///
/// # Formula
/// `KV_host = c_layer·(L_full·n_ctx + L_w·n_swa) − [kv_offload]·c_layer·(g_full·n_ctx + g_w·n_swa)`
/// with `g_full`, `g_w` the full-context and windowed layers among the `g` GPU layers
/// ([`gpu_kv_layers`]).
fn host_kv(
    s: &Scenario,
    arch: &crate::model::Arch,
    place: Placement,
    row: u64,
    n_ctx: u64,
    swa: u64,
) -> u64 {
    let cost = |full: u64, w: u64| {
        sat(row as u128 * (full as u128 * n_ctx as u128 + w as u128 * swa as u128))
    };
    let (full_all, windowed_all) = stage_layers(arch, Count::MIN);
    let gpu = if s.serving.kv_offload {
        let (g_full, g_w) = gpu_kv_layers(arch, place.gpu);
        cost(g_full, g_w)
    } else {
        0
    };
    cost(full_all, windowed_all).saturating_sub(gpu)
}

/// The compute buffer llama.cpp reserves for one micro-batch of `n_ub` tokens (the worst
/// case graph, the KV cache full: `n_kv` cells).
///
/// # Formula
/// ```text
/// C_fa    = max(4·n_out·(V + h), P_layer)           the f32 logits and normed hidden state,
/// P_layer = 6·n_ub·n_m + 4·n_ub·(h + 3·f)            a layer's peak: the masks, the residual,
///                                                    gate, up and gated product ([`layer_peak`])
/// C_plain = max(C_fa, 4·n_ub·(n_kv·(a + 1) + 4·h))   (without flash attention: the f32 scores
///                                                    kq = n_kv × n_ub × a, the f32 mask
///                                                    n_kv × n_ub, four f32 hidden states)
/// n_out   = n_ub   (before b9460)   or   min(n_ub, n_seq)   (b9460, PR #23861, on)
/// ```
/// `n_ub` tokens (n_ubatch, 512 by default), `V` vocabulary, `h` hidden size, `a` query
/// heads, `n_kv` cells of the widest attention (n_ctx, or the window's cells when every
/// layer is windowed), `n_m` the cells of every mask (n_ctx for full attention plus the
/// window's cells), `f` the feed-forward width ([`ffn_width`]: `ffn`, or `k·f_e`), `n_seq`
/// the sequences (`--parallel`); bytes.
///
/// With flash attention, the layer's peak: the scheduler copies each f32 mask onto the GPU
/// (`4·n_ub·n_m`, freed after the cast) and casts it to f16 (`2·n_ub·n_m`, alive through
/// every layer); the feed-forward block holds the residual (h), the gate and up products
/// (f each) and the gated product (f; `ggml_swiglu_split` is not an op ggml-alloc runs in
/// place). Before b9460 the logits of all `n_ub` tokens are larger for every model with a
/// vocabulary over `3·f + 6·n_m/4` (the first term sets the buffer); from b9460 the graph
/// keeps one output per sequence (`n_outputs_max = n_seq_max`) and the layer's peak sets it.
/// Without flash attention the graph multiplies K by Q into an f32 `[n_kv, n_ub, a]` tensor
/// (`ggml_mul_mat` with `GGML_PREC_F32`), the soft-max runs in place on it (ggml-alloc's
/// `ggml_op_can_inplace(GGML_OP_SOFT_MAX)`), with the f32 mask `[n_kv, n_ub]` beside it; the
/// logits, smaller, later reuse its space. Not counted: the freed f32 masks' space that the
/// allocator reuses for the layer's smaller tensors at long contexts (the layer term is then
/// an over-estimate by up to `4·n_ub·n_m`).
///
/// Source: llama.cpp `src/llama-graph.cpp` `build_attn_mha` (the `kq` branch),
/// `build_attn_inp_kq_mask` (`ggml_cast(…, GGML_TYPE_F16)` with flash attention), `build_ffn`
/// (`ggml_swiglu_split`); `ggml/src/ggml-alloc.c` `ggml_op_can_inplace`;
/// `ggml/src/ggml-backend.cpp` (an input on another backend copied at the split's start);
/// `src/llama-context.cpp` (`n_outputs_max`, b9460); Ollama `fs/ggml/ggml.go` `GraphSize`
/// (`fullOffload = max(4·batch·(1 + 4·embedding + context·(1 + heads)), 4·batch·(embedding +
/// vocab))` for llama), which the logged buffers below reproduce.
///
/// # Example
/// Llama 3 8B, n_ctx 8,192, n_ub 512, without flash attention: 4·512·(8,192·33 + 4·4,096) =
/// 587,202,560 B = 560.00 MiB, as Ollama/llama.cpp logs print it (`CUDA0 compute buffer
/// size = 560.00 MiB`, Ollama runner logs with `flash_attn = 0`, 2024–2025). With flash
/// attention: 4·512·(128,256 + 4,096) = 271,056,896 B = 258.50 MiB (the layer's peak,
/// 6·512·8,192 + 4·512·(4,096 + 3·14,336) = 121,634,816 B, is smaller). On b9460 and later,
/// one sequence: the layer's peak sets it, 116.00 MiB.
pub(crate) fn compute_buffer(arch: &crate::model::Arch, m: Micro) -> Expr {
    let mut toks = vec![
        Num(4),
        Sym("n_out", m.n_out as u128),
        Mul,
        Sym("V", arch.vocab.get() as u128),
        Sym("h", arch.hidden.get() as u128),
        Add,
        Mul,
    ];
    let f = ffn_width(arch) as u128;
    toks.push(Sym("P_layer", layer_peak(arch, m, 3 * f)));
    toks.push(Max);
    if m.fa {
        return Expr::new(&toks);
    }
    toks.extend_from_slice(&[
        Num(4),
        Sym("n_ub", m.n_ub as u128),
        Mul,
        Sym("n_kv", m.n_kv as u128),
        Sym("a", arch.heads.get() as u128),
        Num(1),
        Add,
        Mul,
        Num(4),
        Sym("h", arch.hidden.get() as u128),
        Mul,
        Add,
        Mul,
        Max,
    ]);
    Expr::new(&toks)
}

const SOURCES: [&str; 6] = [
    "llama.cpp GGUF tensor types (llama_tensor_get_type) and ggml block sizes; token_embd in host memory",
    "llama.cpp compute buffer (graph reserve for n_ubatch tokens): with flash attention the f32 logits and hidden state (equal to the logged CUDA0 compute buffer of 6 Ollama/llama.cpp runs); without, the f32 scores n_ctx × n_ubatch × heads, the mask and four hidden states (llama-graph.cpp build_attn_mha; Ollama fs/ggml GraphSize; 560.00 MiB logged for Llama 3 8B at n_ctx 8192); with the output layer on the CPU, the head matrix copied in for the offloaded product (ggml-backend.cpp ggml_backend_sched_split_graph; 606.03, 578.36 and 1088.45 MiB logged); over several GPUs, four copies of each GPU's inputs (pipeline parallelism, GGML_SCHED_MAX_COPIES; 346.51 MiB against 346.55 logged)",
    "llama.cpp: none",
    "llama.cpp: CUDA graphs inside the compute buffer",
    "llama.cpp llama_kv_cache / llama_kv_cache_iswa: cells × layers × (row(type_k) + row(type_v))",
    "the CUDA context",
];

/// llama.cpp's recurrent memory of the Mamba and short-convolution blocks (the `r` and `s`
/// tensors of `llama_memory_recurrent`, one row per sequence), always f32.
///
/// # Formula
/// ```text
/// R_s    = 4·n_rows·(L_m·((K−1)·(d + 2·G·N) + N·d) + L_c·(K−1)·h)
/// n_rows = max(1, parallel)                    (n_seq_max; n_rs_seq = 0 rollback snapshots)
/// ```
/// `d`, `N`, `G`, `K` the Mamba shape (`G = 0` for Mamba: `ssm_n_group`), `h` hidden, `L_m`,
/// `L_c` the Mamba and short-convolution blocks. Source: llama.cpp
/// `src/llama-memory-recurrent.cpp` (0054ee8c: `n_rows = mem_size·(1 + n_rs_seq)`,
/// `ggml_new_tensor_2d(ctx, type_r, n_embd_r(), n_rows)`), `llama-hparams.cpp`
/// (`n_embd_r`, `n_embd_s`), `llama-model.cpp::create_memory` (`GGML_TYPE_F32` for both,
/// `mem_size = max(1, n_seq_max)`). The whole model on one GPU (llama.cpp splits layers,
/// not channels). Gated-DeltaNet blocks (Qwen3-Next) as `convert_hf_to_gguf.py` writes them:
/// `d_state = d_k`, `n_group = H_k`, `d_inner = H_v·d_v`, so `L_l·((K−1)·(H_v·d_v +
/// 2·H_k·d_k) + d_k·H_v·d_v)` more: Qwen3-Next 4·36·(3·8,192 + 524,288) = 79,036,416 B
/// (75.4 MiB) per sequence.
///
/// # Example
/// Mamba-130M, parallel 1: 4·24·(3·1,536 + 16·1,536) = 2,801,664 B (2.67 MiB); Mamba-2
/// 2.7B: 4·64·(3·5,376 + 128·5,120) = 171,900,928 B (163.9 MiB).
pub(crate) fn recurrent_bytes(arch: &crate::model::Arch, parallel: u64) -> u128 {
    // `parallel` is a count (at least 1), as llama.cpp's `max(1, n_seq_max)`.
    let rows = parallel as u128;
    let mamba = arch.ssm_shape().map_or(0, |m| {
        let (d, n) = (m.d_inner as u128, m.d_state as u128);
        let g = if m.version == 2 { m.groups as u128 } else { 0 };
        (m.conv_kernel as u128).saturating_sub(1) * (d + 2 * g * n) + n * d
    });
    let conv = (arch.short_conv_kernel() as u128).saturating_sub(1) * arch.hidden.get() as u128;
    let gdn = arch.linear_shape().map_or(0, |g| {
        let (hk, hv, dk, dv) = (
            g.k_heads as u128,
            g.v_heads as u128,
            g.k_dim as u128,
            g.v_dim as u128,
        );
        (g.conv_kernel as u128).saturating_sub(1) * (hv * dv + 2 * hk * dk) + dk * hv * dv
    });
    let layers = arch.mamba_layers as u128 * mamba
        + arch.conv_layers as u128 * conv
        + if gdn > 0 {
            arch.linear_layers as u128 * gdn
        } else {
            0
        };
    4 * rows * layers
}

/// One GPU's weights: the file's less `token_embd` (every layer and its experts on the
/// GPUs, [`gpu_weights`]), else the placement's layers ([`LayerBytes::gpu_expr`]).
fn weights_at(s: &Scenario, p: &Prepared, l: &Layout, place: Placement, b: &LayerBytes) -> Expr {
    match place.all(&p.arch) && place.cpu_experts == 0 {
        true => gpu_weights(s, p, l),
        false => b.gpu_expr(&p.arch, place, l.tp.get()),
    }
}

/// The weights on the GPU: the GGUF's (or the format's) bytes less an untied `token_embd`,
/// which stays in host memory, over `t` ranks (`W_gpu` in [`plan`]'s formula).
fn gpu_weights(s: &Scenario, p: &Prepared, l: &Layout) -> Expr {
    let arch = &p.arch;
    let embd = if arch.tied { 0 } else { embd_bytes(s, arch) };
    let (w, _) = crate::infer::format_weights(s, arch, p.psi);
    w.then(&[
        Sym("W_embd", embd as u128),
        Sub,
        Sym("t", l.tp.get() as u128),
        DivCeil,
    ])
}
