//! llama.cpp's (and Ollama's) start-up: the GGUF's weights, the padded context, the compute buffer.

use super::*;
use crate::scenario::CtxPer;
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
/// C      = 4·n_ub·(V + h)                             (the compute buffer with flash attention, the
///                                                     default on CUDA: f32 logits of a micro-batch and
///                                                     its f32 hidden state)
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
    let rs = recurrent_bytes(arch, par);
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
    // The recurrent blocks' state (a transformer has none: its formula stays as it was).
    let kv = if rs > 0 {
        kv.then(&[Sym("R_s", rs), Add])
    } else {
        kv
    };
    let per_token = sat(row as u128 * full as u128);
    let compute = sat(4 * n_ub as u128 * (arch.vocab as u128 + arch.hidden as u128));
    let activation = sym("C", compute);
    let ctx = s.runtime.cuda_ctx_mib as u64 * MIB;
    let total = device_total(s);
    let fixed = sat(weights.eval() as u128
        + compute as u128
        + ctx as u128
        + rs
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

const SOURCES: [&str; 6] = [
    "llama.cpp GGUF tensor types (llama_tensor_get_type) and ggml block sizes; token_embd in host memory",
    "llama.cpp compute buffer (graph reserve for n_ubatch tokens, flash attention): f32 logits and hidden state; equal to the logged CUDA0 compute buffer of 6 Ollama/llama.cpp runs",
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
    let conv = (arch.short_conv_kernel() as u128).saturating_sub(1) * arch.hidden as u128;
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
