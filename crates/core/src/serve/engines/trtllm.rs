//! TensorRT-LLM's start-up: the free-memory fraction and the paged pool.

use super::*;

/// TensorRT-LLM's PyTorch backend (`KvCacheCreator`): a fraction of what the profiling
/// run leaves.
///
/// # Formula
/// ```text
/// KV     = f · (M_total − W − A − N_t − ctx)       f = free_gpu_memory_fraction (0.9)
/// tokens = ⌈⌊KV / c_tok⌋ / B⌉·B                    B = tokens_per_block (32)
/// ```
pub(super) fn plan(s: &Scenario, p: &Prepared, l: &Layout) -> Plan {
    let v = used_release(s);
    let k = s.numerics.precision.compute_bytes();
    let total = device_total(s);
    let f = s.serving.gpu_util.unwrap_or(0.9);
    let n = s
        .serving
        .max_batched_tokens
        .map_or(8192, |c| c.get() as u64);
    let weights = weights_expr(s, p, l);
    let act = forward_peak(&p.arch, n, k, l.tp);
    let activation = sym("A_fwd", act);
    let non_torch = sym(
        "N_t",
        NON_TORCH_1 + if l.tp.get() > 1 { NON_TORCH_NCCL } else { 0 },
    );
    let ctx = s.cuda_ctx_mib() as u64 * MIB;
    let free = total
        .saturating_sub(weights.eval())
        .saturating_sub(act)
        .saturating_sub(non_torch.eval())
        .saturating_sub(ctx);
    let kv_bytes = (free as f64 * f) as u64;
    let (per_token, _, _) = per_token(s, &p.arch, l);
    let block = s.serving.block_size.unwrap_or(count(32));
    let ml = max_len(s);
    let pl = pool(kv_bytes, per_token, block, ml);
    let block = block.get() as u64;
    let kv = Expr::new(&[
        Sym("blocks", pl.blocks as u128),
        Sym("B", block as u128),
        Mul,
        Sym("c_tok", per_token as u128),
        Mul,
    ]);
    let error = (pl.tokens < ml).then(|| {
        format!(
            "the KV cache holds {} tokens, fewer than max_seq_len {ml}",
            pl.tokens
        )
    });
    Plan {
        engine: Engine::Trtllm,
        version: v,
        budget: weights
            .eval()
            .saturating_add(act)
            .saturating_add(non_torch.eval())
            .saturating_add(kv_bytes),
        weights,
        activation,
        non_torch,
        graphs: sym("G", 0),
        kv,
        outside: sym("ctx", ctx),
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
        sources: [
            SRC_WEIGHTS,
            "TensorRT-LLM _torch/pyexecutor/_util.py KvCacheCreator: torch peak of a max_num_tokens dummy run",
            "TensorRT-LLM: non-torch memory at the profiling peak",
            "TensorRT-LLM: CUDA graphs inside the profiling peak",
            "TensorRT-LLM _util.py _cal_max_memory: (total − peak)·free_gpu_memory_fraction",
            "the CUDA context",
        ],
    }
}
