//! llama.cpp's (and Ollama's) start-up: the GGUF's weights, the padded context, the compute buffer.

use super::*;
use crate::scenario::{CtxPer, FlashAttn};
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
/// KV     = n_ctx·L_full·c_layer + n_swa·L_w·c_layer,  n_swa = ⌈min(n_ctx, W·parallel + n_ub)/256⌉·256
/// C      = 4·n_ub·(V + h)                             (the compute buffer with flash attention, `-fa
///                                                     auto`'s choice on CUDA from b6325: f32 logits of
///                                                     a micro-batch and its f32 hidden state)
///        = max(4·n_ub·(V + h), 4·n_ub·(n_kv·(a + 1) + 4·h))   (without: the f32 scores; see
///                                                     [`compute_buffer`])
/// ```
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
pub(super) fn plan(s: &Scenario, p: &Prepared, l: &Layout) -> Plan {
    let v = used_release(s);
    let arch = &p.arch;
    let par = s.serving.parallel.get() as u64;
    let ml = max_len(s);
    let n_ub = s.serving.max_batched_tokens.map_or(512, |c| c.get() as u64);
    let pad = |n: u64| n.div_ceil(256).saturating_mul(256);
    let shared = s.serving.ctx_per == CtxPer::Total;
    let n_ctx = if shared {
        pad(ml)
    } else {
        pad(ml.saturating_mul(par))
    };
    // The longest request one sequence may hold: max_len, or its slot of the shared n_ctx.
    let seq_len = if shared { n_ctx / par.max(1) } else { ml };
    let weights = gpu_weights(s, p, l);
    let f = KvFormat::of(s.numerics.kv_dtype, s.numerics.precision);
    let (full, windowed) = stage_layers(arch, l.tp);
    let row = layer_row(arch, f, 1);
    let swa_cells = if windowed > 0 {
        pad(n_ctx.min(
            (arch.window as u64)
                .saturating_mul(par)
                .saturating_add(n_ub),
        ))
    } else {
        0
    };
    let kv = Expr::new(&[
        Sym("n_ctx", n_ctx as u128),
        Sym("L_full", full as u128),
        Mul,
        Sym("n_swa", swa_cells as u128),
        Sym("L_w", windowed as u128),
        Mul,
        Add,
        Sym("c_layer", row as u128),
        Mul,
    ]);
    let per_token = sat(row as u128 * full as u128);
    // The scores of the widest attention: a full layer's n_ctx cells, else the window's.
    let n_kv = if full > 0 { n_ctx } else { swa_cells };
    let activation = compute_buffer(arch, n_ub, n_kv, flash_attn(s, v));
    let compute = activation.eval();
    let ctx = s.runtime.cuda_ctx_mib as u64 * MIB;
    let total = device_total(s);
    let fixed = sat(weights.eval() as u128
        + compute as u128
        + ctx as u128
        + row as u128 * windowed as u128 * swa_cells as u128);
    let used = sat(fixed as u128 + row as u128 * full as u128 * n_ctx as u128);
    let cells = total.saturating_sub(fixed) / per_token.max(1);
    let fit = if shared {
        cells / 256 * 256 / par.max(1)
    } else {
        cells / par.max(1) / 256 * 256
    };
    let error = (used > total).then(|| {
        format!(
            "cudaMalloc failed: out of memory — needs {} GiB of the device's {} GiB",
            gib(used),
            gib(total)
        )
    });
    Plan {
        engine: Engine::Llamacpp,
        version: v,
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
        concurrency: n_ctx as f64 / seq_len.max(1) as f64,
        max_len_fit: fit,
        error,
        host: Some(host_memory(s, p)),
        sources: SOURCES,
    }
}

/// llama.cpp's first build whose flash attention defaults to `auto` (PR #15434, "use FA +
/// max. GPU layers by default", merged 2025-08-30); before it `common.h` had
/// `flash_attn = false`.
pub(crate) const LLAMACPP_FA_AUTO_FROM: Version = Version(6325, 0, 0);

/// Whether the compute graph uses flash attention: `flash_attn`, or with `auto` the build's
/// default (off before [`LLAMACPP_FA_AUTO_FROM`]; from it `-fa auto`, which turns flash
/// attention on where the device runs the op, as CUDA does for the head sizes memfit's
/// presets have: logged `flash_attn = auto` runs print the flash path's buffer).
///
/// Ollama passes its own setting (`OLLAMA_FLASH_ATTENTION`, off by default through 0.11;
/// later releases turn it on per model): set `flash_attn` for an Ollama run.
///
/// Source: llama.cpp `common/common.h` (`flash_attn = false`, then `flash_attn_type =
/// LLAMA_FLASH_ATTN_TYPE_AUTO`, PR #15434, b6325), `src/llama-context.cpp` (auto resolves
/// on when every FA op lands on its layer's device); logged builds b5285 (`flash_attn = 0`)
/// and b8133/b8179 (`flash_attn = auto`).
pub(crate) fn flash_attn(s: &Scenario, v: Version) -> bool {
    match s.serving.flash_attn {
        FlashAttn::On => true,
        FlashAttn::Off => false,
        FlashAttn::Auto => v >= LLAMACPP_FA_AUTO_FROM,
    }
}

/// The compute buffer llama.cpp reserves for one micro-batch of `n_ub` tokens (the worst
/// case graph, the KV cache full: `n_kv` cells).
///
/// # Formula
/// ```text
/// C_fa   = 4·n_ub·(V + h)                          (flash attention: the f32 logits of the
///                                                   micro-batch and its f32 hidden state)
/// C_plain = max(C_fa, 4·n_ub·(n_kv·(a + 1) + 4·h)) (without: the f32 scores
///                                                   kq = n_kv × n_ub × a, the f32 mask
///                                                   n_kv × n_ub, four f32 hidden states)
/// ```
/// `n_ub` tokens (n_ubatch, 512 by default), `V` vocabulary, `h` hidden size, `a` query
/// heads, `n_kv` cells of the widest attention (n_ctx, or the window's cells when every
/// layer is windowed); bytes. Without flash attention the graph multiplies K by Q into an
/// f32 `[n_kv, n_ub, a]` tensor (`ggml_mul_mat` with `GGML_PREC_F32`), the soft-max runs in
/// place on it (ggml-alloc's `ggml_op_can_inplace(GGML_OP_SOFT_MAX)`), with the f32 mask
/// `[n_kv, n_ub]` beside it; the logits, smaller, later reuse its space.
///
/// Source: llama.cpp `src/llama-graph.cpp` `build_attn_mha` (the `kq` branch) and
/// `build_attn_inp_kq_mask` ("flash attention requires an f16 mask", f32 otherwise);
/// Ollama `fs/ggml/ggml.go` `GraphSize` (`fullOffload = max(4·batch·(1 + 4·embedding +
/// context·(1 + heads)), 4·batch·(embedding + vocab))` for llama), which the logged
/// buffers below reproduce.
///
/// # Example
/// Llama 3 8B, n_ctx 8,192, n_ub 512, without flash attention: 4·512·(8,192·33 + 4·4,096) =
/// 587,202,560 B = 560.00 MiB, as Ollama/llama.cpp logs print it (`CUDA0 compute buffer
/// size = 560.00 MiB`, Ollama runner logs with `flash_attn = 0`, 2024–2025). With flash attention: 4·512·(128,256 + 4,096) = 271,056,896 B =
/// 258.50 MiB.
pub(crate) fn compute_buffer(arch: &crate::model::Arch, n_ub: u64, n_kv: u64, fa: bool) -> Expr {
    let fa_expr = [
        Num(4),
        Sym("n_ub", n_ub as u128),
        Mul,
        Sym("V", arch.vocab as u128),
        Sym("h", arch.hidden as u128),
        Add,
        Mul,
    ];
    if fa {
        return Expr::new(&fa_expr);
    }
    let mut toks = fa_expr.to_vec();
    toks.extend_from_slice(&[
        Num(4),
        Sym("n_ub", n_ub as u128),
        Mul,
        Sym("n_kv", n_kv as u128),
        Sym("a", arch.heads as u128),
        Num(1),
        Add,
        Mul,
        Num(4),
        Sym("h", arch.hidden as u128),
        Mul,
        Add,
        Mul,
        Max,
    ]);
    Expr::new(&toks)
}

const SOURCES: [&str; 6] = [
    "llama.cpp GGUF tensor types (llama_tensor_get_type) and ggml block sizes; token_embd in host memory",
    "llama.cpp compute buffer (graph reserve for n_ubatch tokens): with flash attention the f32 logits and hidden state (equal to the logged CUDA0 compute buffer of 6 Ollama/llama.cpp runs); without, the f32 scores n_ctx × n_ubatch × heads, the mask and four hidden states (llama-graph.cpp build_attn_mha; Ollama fs/ggml GraphSize; 560.00 MiB logged for Llama 3 8B at n_ctx 8192)",
    "llama.cpp: none",
    "llama.cpp: CUDA graphs inside the compute buffer",
    "llama.cpp llama_kv_cache / llama_kv_cache_iswa: cells × layers × (row(type_k) + row(type_v))",
    "the CUDA context",
];

/// `token_embd`'s bytes in the file's format (`W_embd`).
fn embd_bytes(s: &Scenario, arch: &crate::model::Arch) -> u64 {
    let k = s.numerics.precision.compute_bytes();
    match s.numerics.quant.gguf() {
        Some(_) => quant::shares(arch, s.numerics.quant, 32).gguf_embd as u64,
        None => sat(arch.vocab as u128 * arch.hidden as u128 * k as u128),
    }
}

/// What the model takes outside the GPUs: the file's weights, and the part of them held in
/// host memory (the whole process, not per GPU).
///
/// # Formula
/// ```text
/// file = W_gguf + 4·Ψ_r      (every tensor once, as `W_gpu` counts them before the split)
/// host = W_embd              (token_embd: the CPU_Mapped model buffer, tied or not; a tied
///                             head's GPU copy is counted in W_gpu)
/// ```
/// Layers left on the CPU (`-ngl` below the layers) and a KV cache kept in host memory
/// (`--no-kv-offload`) are not modelled: every layer and the cache are on the GPUs.
///
/// Source: llama.cpp `llama_model_loader` / `llama_model::load_tensors` (`token_embd` on the
/// CPU buffer type; the output's `TENSOR_DUPLICATED` copy for a tied head).
///
/// # Example
/// Llama 3 8B Q4_K_M: file 4,912,898,048 B, host 295,501,824 B (281.81 MiB; with every
/// layer offloaded, llama.cpp's `CPU_Mapped model buffer size` is this `token_embd`).
fn host_memory(s: &Scenario, p: &Prepared) -> HostMemory {
    let (w, _) = crate::infer::format_weights(s, &p.arch, p.psi);
    HostMemory {
        file: w.eval(),
        host: embd_bytes(s, &p.arch),
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
        Sym("t", l.tp as u128),
        DivCeil,
    ])
}
