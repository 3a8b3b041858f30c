//! llama.cpp's pipeline parallelism across GPUs: the scheduler keeps several copies of
//! each device's inputs, and they sit in that device's compute buffer.

use super::llamacpp_offload::Placement;
use super::*;

/// Copies of each scheduler input under pipeline parallelism (`GGML_SCHED_MAX_COPIES`).
pub(crate) const SCHED_COPIES: u64 = 4;

/// The compute buffer of one GPU when llama.cpp splits the layers over several GPUs and runs
/// them as a pipeline: each split's inputs from another device are kept in
/// `n_copies` = 4 copies, all allocated for the whole graph, beside the graph's working set.
///
/// # Formula
/// ```text
/// C_dev = C + n_copies·(4·n_ub·h + m·n_ub·(n_kv + n_swa) + 4·n_ub)
///         when GPUs > 1, every layer and the output on the GPUs, the KV cache on the GPUs
/// ```
/// `C` the single-device compute buffer ([`super::llamacpp::compute_buffer`], with the offloaded
/// head where it applies), `n_copies` = 4, `n_ub` tokens per micro-batch, `h` hidden size; the
/// inputs are the f32 hidden state from the previous device (or the CPU's embedding lookup),
/// the attention mask (`m` = 2 B per cell with flash attention, f16; 4 B without, f32) over
/// `n_kv` cells of the full layers and `n_swa` of the windowed ones (0 when the model has none),
/// and the i32 positions; bytes. Graph inputs live on the CPU backend, so every GPU receives
/// its own copies. Each figure is one GPU's; the logs print one per device.
///
/// Source: llama.cpp `src/llama-context.cpp` (`pipeline_parallel = n_devices() > 1 &&
/// n_gpu_layers > n_layer && split_mode == LAYER && offload_kqv && !has_tensor_overrides()`),
/// `ggml/src/ggml-backend.cpp` (`n_copies = parallel ? GGML_SCHED_MAX_COPIES : 1`,
/// `GGML_SCHED_MAX_COPIES 4`; `ggml_backend_sched_split_graph` pass 5: a split's input from
/// another backend is duplicated `n_copies` times, each marked input and output "to prevent
/// ggml-alloc from overwriting the tensor", and added as leaves allocated first).
///
/// # Example
/// Llama 3.1 70B Q4_K_M on two Quadro RTX 6000, n_ctx 4,096, n_ub 512, flash attention (Ollama
/// 0.13.5): C = 4·512·(128,256 + 8,192) = 279,445,504 B; the copies 4·(4·512·8,192 +
/// 2·512·4,096 + 4·512) = 83,894,272 B; C_dev = 363,339,776 B = 346.51 MiB, logged `CUDA1 compute
/// buffer size = 346.55 MiB` (the device that holds the head). Without flash attention (Llama
/// 3.3 70B Q4_0, two MIG slices, Ollama 0.11.10): 584.00 + 96.01 = 680.01 MiB against the logged
/// 688.02 and 688.03 MiB (−1.2 %: 8 MiB not found).
#[allow(clippy::too_many_arguments)]
pub(super) fn pipeline_copies(
    c: Expr,
    arch: &crate::model::Arch,
    place: Placement,
    gpus: u32,
    kv_on_gpu: bool,
    n_ub: u64,
    cells: (u64, u64),
    fa: bool,
) -> Expr {
    if gpus < 2 || !place.all(arch) || !kv_on_gpu {
        return c;
    }
    let (n_kv, n_swa) = cells;
    c.then(&[
        Sym("n_copies", SCHED_COPIES as u128),
        Num(4),
        Sym("n_ub", n_ub as u128),
        Mul,
        Sym("h", arch.hidden.get() as u128),
        Mul,
        Sym("m", if fa { 2 } else { 4 }),
        Sym("n_ub", n_ub as u128),
        Mul,
        Sym("n_kv", n_kv as u128),
        Sym("n_swa", n_swa as u128),
        Add,
        Mul,
        Add,
        Num(4),
        Sym("n_ub", n_ub as u128),
        Mul,
        Add,
        Mul,
        Add,
    ])
}
