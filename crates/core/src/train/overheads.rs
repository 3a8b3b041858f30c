//! Runtime overheads and host memory: CUDA context, NCCL, DeepSpeed's communication
//! buckets, host RAM at model initialisation, pinned memory.

use super::*;

/// Communication buffers and runtime overheads per GPU: CUDA context, NCCL, DeepSpeed buckets.
///
/// # Formula
/// ```text
/// CUDA context                            C MiB                      (per stack: 685 measured for
///                                                                     PyTorch on Hopper, else 600)
/// cuBLAS workspaces (allocated)           n·w                        (see `cublas_workspaces`)
/// NCCL communicator buffers               N MiB                      (default 256 with > 1 GPU, else 0)
/// DeepSpeed ZeRO-1/2/3 reduce bucket      k·B_r·(2 if overlap_comm)   (B_r = reduce_bucket_size)
/// DeepSpeed ZeRO-1/2 all-gather bucket    k·B_a                      (optimizer step)
/// DeepSpeed ZeRO-3 prefetch bucket        k·min(B_p, M_live − L)     (forward, backward; M_live =
///                                         stage3_max_live_parameters bounds the gathered params)
/// ```
/// Sources: the context per stack, [`Scenario::cuda_context`] (measured as total − free −
/// reserved after initialisation: 718,077,952 B = 685 MiB with torch 2.11.0+cu130 on an H200,
/// `tests/data/cuda_h200/env.jsonl`; elsewhere the 500–700 MiB reported for CUDA 12, PyTorch
/// "Understanding CUDA Memory Usage", as 600 MiB); NCCL_BUFFSIZE 4 MiB per channel and peer (NCCL environment docs);
/// DeepSpeed config defaults (reduce_bucket_size 5e8, allgather_bucket_size 5e8,
/// stage3_prefetch_bucket_size 5e7); seed 001 (overlap_comm costs memory: ~+7%).
pub(crate) fn overhead_items(s: &Scenario, l: &Layout, largest: u64, ledger: &mut Ledger) {
    let mib = Sym("MiB", 1 << 20);
    let (comp, gpu) = (Component::Overhead, Location::Gpu);
    let ctx = s.cuda_context();
    let e = Expr::new(&[Sym("C", ctx.mib as u128), mib, Mul]);
    let note = "CUDA context (driver memory outside the caching allocator)";
    let src = ctx.source;
    ledger.push_expr(
        &[],
        Mech::CudaContext,
        comp,
        gpu,
        &e,
        note,
        String::new,
        src,
    );
    cublas_workspaces(s, ledger);
    let nccl = s
        .runtime
        .nccl_mib
        .unwrap_or(if l.world.get() > 1 { 256 } else { 0 });
    if nccl > 0 {
        let e = Expr::new(&[Sym("N", nccl as u128), mib, Mul]);
        let note = "NCCL communicator buffers";
        let ctx = || format!("GPUs={}", l.world);
        let src = "NCCL: NCCL_BUFFSIZE 4 MiB per channel per peer (NCCL environment variables documentation)";
        ledger.push_expr(&[], Mech::Nccl, comp, gpu, &e, note, ctx, src);
    }
    deepspeed_buckets(s, largest, ledger);
}

/// The cuBLAS workspaces PyTorch allocates through its caching allocator, one per cuBLAS
/// handle and stream: the forward's thread, and in training the autograd engine's device
/// thread as well. They count in `torch.cuda.memory_allocated` (not in the context), for
/// the whole run. None under `device=cpu` or a serving engine (its own profile counts it).
///
/// # Formula
/// ```text
/// W = n·w     n = 2 (training: forward thread + autograd thread) or 1 (inference)
///             w = 4,096 KiB · 8 = 32 MiB on compute capability 9.0 and 10.0,
///                 4,096 KiB · 2 + 16 KiB · 8 = 8,320 KiB elsewhere
/// ```
/// Source: PyTorch 2.11 `aten/src/ATen/cuda/CublasHandlePool.cpp` (`parseChosenWorkspaceSize`,
/// the default `CUBLAS_WORKSPACE_CONFIG`; cuBLASLt shares the workspace). Found on the CUDA
/// calibration set (`tests/data/cuda_h200`): 32 MiB allocated before the first model is
/// built, 65–66 MiB after the first backward, every training run's iteration starting 65–70
/// MiB above its parameters and optimizer states (memfit −0.1 % on 17 runs without it).
///
/// # Example
/// Training on an H200: 2 · 33,554,432 = 67,108,864 B; inference on an A100: 8,519,680 B.
fn cublas_workspaces(s: &Scenario, ledger: &mut Ledger) {
    let Some((n, kib)) = cublas_handles(s) else {
        return;
    };
    let e = Expr::new(&[Sym("n", n), Sym("w", kib), Mul, Sym("KiB", 1024), Mul]);
    let note = "cuBLAS workspaces (one per handle: forward thread, autograd thread)";
    let src = "PyTorch 2.11 CublasHandlePool.cpp: default CUBLAS_WORKSPACE_CONFIG :4096:8 on sm90/sm100, :4096:2:16:8 elsewhere";
    let (comp, gpu) = (Component::Workspace, Location::Gpu);
    let ctx = || format!("n={n} handles, w={kib} KiB");
    ledger.push_expr(&[], Mech::CublasWorkspace, comp, gpu, &e, note, ctx, src);
}

/// `(n, w)`: the cuBLAS handles and each one's workspace in KiB (see [`cublas_workspaces`]),
/// `None` where there are none.
fn cublas_handles(s: &Scenario) -> Option<(u128, u128)> {
    use crate::scenario::{Device, Mode};
    if s.runtime.device == Device::Cpu || s.workload.mode == Mode::Serve {
        return None;
    }
    let n = if s.workload.mode == Mode::Train { 2 } else { 1 };
    let cc = crate::gpu::compute_capability(&s.cluster.gpu);
    let kib = if cc == 90 || cc == 100 {
        4096 * 8
    } else {
        4096 * 2 + 16 * 8
    };
    Some((n, kib))
}

/// The cuBLAS workspaces' bytes, `n·w·1024` (0 where there are none).
pub(crate) fn cublas_workspace_bytes(s: &Scenario) -> u64 {
    cublas_handles(s).map_or(0, |(n, kib)| (n * kib * 1024) as u64)
}

/// The bytes the caching allocator's segments can take on one GPU: CUDA's total less the
/// context and the cuBLAS workspaces, which sit beside the op stream
/// ([`crate::allocator::CachingAllocator::capped`]).
///
/// # Formula
/// `cap = T − C − W` (B): `T` CUDA's total ([`Scenario::cuda_total_bytes`]), `C` the context
/// ([`Scenario::cuda_context`]), `W` the cuBLAS workspaces. Example: training with
/// `framework=pytorch&gpu=h100-80`, two 32 MiB workspaces (W = 67,108,864 B):
/// 85,017,493,504 − 718,274,560 − 67,108,864 = 84,232,110,080 B (78.45 GiB).
pub(crate) fn allocator_cap(s: &Scenario) -> u64 {
    let ctx = u64::from(s.cuda_ctx_mib()) << 20;
    s.cuda_total_bytes()
        .saturating_sub(ctx)
        .saturating_sub(cublas_workspace_bytes(s))
}

/// DeepSpeed's ZeRO communication buckets (training, ZeRO ≥ 1, not FSDP): the gradient
/// reduce bucket in backward (doubled with `overlap_comm`), the updated-parameter
/// all-gather bucket in the step (stages 1/2) or the stage-3 parameter prefetch.
pub(crate) fn deepspeed_buckets(s: &Scenario, largest: u64, ledger: &mut Ledger) {
    let z = s.zero();
    if s.workload.mode != crate::scenario::Mode::Train
        || s.stack.framework != Framework::Deepspeed
        || z < Zero::Z1
        || s.fsdp() != Fsdp::None
    {
        return;
    }
    let k = Sym("k", s.numerics.precision.compute_bytes() as u128);
    let src = "DeepSpeed ZeRO config (reduce_bucket_size, allgather_bucket_size, stage3_prefetch_bucket_size, overlap_comm); seed 001";
    let (comp, gpu, none) = (Component::CommBuffers, Location::Gpu, String::new);
    let rt = &s.runtime;
    let e = Expr::new(&[k, Sym("B_r", rt.reduce_bucket as u128), Mul]);
    let (e, note) = if rt.overlap_comm {
        (
            e.then(&[Num(2), Mul]),
            "gradient reduce bucket, twice with overlap_comm",
        )
    } else {
        (e, "gradient reduce bucket")
    };
    let bwd = [Phase::Backward];
    ledger.push_expr(&bwd, Mech::ReduceBucket, comp, gpu, &e, note, none, src);
    if z < Zero::Z3 {
        let e = Expr::new(&[k, Sym("B_a", rt.allgather_bucket as u128), Mul]);
        let note = "updated-parameter all-gather bucket";
        let step = [Phase::OptimizerStep];
        ledger.push_expr(&step, Mech::AllgatherBucket, comp, gpu, &e, note, none, src);
    } else {
        let e = Expr::new(&[
            k,
            Sym("B_p", rt.prefetch_bucket as u128),
            Sym("M_live", rt.max_live_params as u128),
            Sym("L", largest as u128),
            Sub,
            Min,
            Mul,
        ]);
        let note = "ZeRO-3 parameter prefetch, capped by stage3_max_live_parameters";
        ledger.push_expr(
            &FWD_BWD,
            Mech::PrefetchBucket,
            comp,
            gpu,
            &e,
            note,
            none,
            src,
        );
    }
}

/// Host RAM per node while the model is built (phase `Init`; the host peak is the
/// larger of this and the offloaded states).
///
/// # Formula
/// ```text
/// without zero.Init (or below ZeRO-3): n · 4·Ψ     (each process builds the fp32 model)
/// with zero.Init under ZeRO-3:         n · 4·L     (only the layer being built is whole)
/// ```
/// Source: seed 000 (the CPU-RAM formulas without the additional buffer factor).
///
/// # Example
/// Llama-2-7B on 8 GPUs per node without zero.Init: 8·4·6,738,415,616 = 215,629,299,712 B.
pub(crate) fn host_init(s: &Scenario, psi: u64, largest: u64, l: &Layout, ledger: &mut Ledger) {
    let n = Sym("n", l.gpus_per_node.get().min(l.world.get()) as u128);
    let zero_init = s.runtime.zero_init && s.zero() == Zero::Z3;
    let (e, note) = if zero_init {
        (
            Expr::new(&[n, Num(4), Mul, Sym("L", largest as u128), Mul]),
            "zero.Init",
        )
    } else {
        (
            Expr::new(&[n, Num(4), Mul, Sym("Ψ", psi as u128), Mul]),
            "fp32 model per process",
        )
    };
    let (mech, comp, loc) = (Mech::HostInit, Component::InitLoad, Location::Cpu);
    ledger.push_expr(
        &[Phase::Init],
        mech,
        comp,
        loc,
        &e,
        note,
        String::new,
        SRC_INIT,
    );
}

/// Pinned host RAM per node for ZeRO-3 CPU offload with `pin_memory=1` (part of the
/// host RAM, not extra).
///
/// # Formula
/// ```text
/// offload_param=cpu:  (6 + 2 if microbatches > 1)·Ψ / nodes   (fp16 params + fp32 grads [+ fp16 grads])
/// otherwise:          4·Ψ / nodes                              (fp32 grads)
/// ```
/// Source: seed 000 ("Pinned Memory"), per node as DeepSpeed's CPU formulas are.
pub(crate) fn pinned_bytes(s: &Scenario, psi: u64, l: &Layout) -> u64 {
    if !s.offload.pin_memory || s.zero() != Zero::Z3 || s.offload.optimizer == Offload::None {
        return 0;
    }
    // G = n·nodes ≥ n (saturating at u32::MAX ≥ n), so the quotient is ≥ 1.
    let nodes = (l.world.get() / l.gpus_per_node.get()) as u64;
    let per_param = if s.offload.params != Offload::None {
        6 + if s.workload.microbatches.get() > 1 {
            2
        } else {
            0
        }
    } else {
        4
    };
    mul_div_ceil(per_param, psi, nodes)
}
