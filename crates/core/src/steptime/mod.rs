//! How long one training step takes on a layout, and why: compute at a measured GEMM
//! efficiency, memory-bound element-wise work, each parallel dimension's communication
//! (what overlaps and what does not), the pipeline bubble, the optimizer step and offload.
//!
//! Every constant is a physical measurement (GEMM throughput by shape and size, NCCL bus
//! bandwidth, FlashAttention's rates), cited where it is defined. Five are calibrated on
//! the phases of the `transformers` steps (`tests/data/cuda_h200/train.jsonl`, set D's
//! calibration half, set H's C19 under TF32) and say so: fp32 SDPA's share of the fp32 peak
//! ([`hardware::FP32_SDPA_SHARE`]), the exposed launches of a Hugging Face MoE expert loop
//! ([`eager::EXPERT_LAUNCHES`]), the optimizer's host time a step ([`eager::HOST_STEP_S`])
//! and per adapter tensor ([`adapters::ADAPTER_TENSOR_S`]), and the rate of the Hugging Face
//! RMSNorm's and RoPE's composed kernels ([`eager::COMPOSED_RATE`],
//! [`hardware::composed_rate`]). The published training runs in `tests/data/train_runs.json`
//! test the result (`tests/step_time.rs`), and the H200 steps `tests/cuda_measured.rs`.

mod adapters;
mod collectives;
mod data_parallel;
pub mod eager;
pub mod flops;
pub mod gemm_table;
pub mod hardware;
mod loss;
pub mod moe;
mod optimizer;
mod pipeline;

use crate::estimate::{stage_count, Prepared};
use crate::megatron::Recompute;
use crate::scenario::{
    Attn, Fp8Recipe, Framework, Mode, Offload, Precision, Scenario, Schedule, Zero,
};
use collectives::*;
pub use collectives::{contended, contention_share};
use data_parallel::*;
pub use hardware::Hw;
use hardware::*;
use loss::loss_time;
use moe::*;
use optimizer::*;
use pipeline::*;
use serde::{Deserialize, Serialize};

/// Where a step's time goes, seconds (the parts overlap-free: they add up to `step_s`
/// with `exposed_comm_s` the communication not hidden behind compute).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Breakdown {
    /// Forward and backward compute of every micro-batch (GEMMs, attention, element-wise).
    pub compute_s: f64,
    /// Recomputation's extra forward work.
    pub recompute_s: f64,
    /// Tensor-parallel collectives (exposed: Megatron runs them between the GEMMs).
    pub tp_comm_s: f64,
    /// Data-parallel gradient reduction and ZeRO-3/FSDP gathers, whole.
    pub dp_comm_s: f64,
    /// Pipeline point-to-point transfers.
    pub pp_comm_s: f64,
    /// Context parallelism's ring exchange, whole.
    pub cp_comm_s: f64,
    /// Expert parallelism's all-to-all.
    pub ep_comm_s: f64,
    /// Idle pipeline time: `(p − 1)/v` micro-batches.
    pub bubble_s: f64,
    /// The optimizer step (memory-bound).
    pub optimizer_s: f64,
    /// Offloaded optimizer: PCIe transfers and the CPU step.
    pub offload_s: f64,
    /// Communication on the critical path (what no compute hides).
    pub exposed_comm_s: f64,
    /// Compute slowed while hidden communication runs beside it: NCCL's kernels hold SMs
    /// the GEMMs then lack ([`contention_share`]).
    #[serde(default)]
    pub contention_s: f64,
}

/// The step-time model's answer for one layout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StepTime {
    /// Seconds per optimizer step.
    pub step_s: f64,
    /// Tokens per second, the whole cluster.
    pub tokens_per_s: f64,
    /// Tokens per second per GPU.
    pub tokens_per_s_per_gpu: f64,
    /// Model FLOPs utilisation (`6·N + attention` per token, see
    /// [`flops::model_flops_per_token`]).
    pub mfu: f64,
    /// Hardware FLOPs utilisation (recomputation counted).
    pub hfu: f64,
    /// Where the time goes.
    pub breakdown: Breakdown,
    /// Where the GEMM rates come from (an assumption the figure rests on).
    #[serde(default)]
    pub gemm_rates: GemmRates,
    /// Eager PyTorch's own costs are counted (`framework=pytorch`, `modules=hf`: unfused
    /// element-wise kernels, the optimizer's `foreach` passes, the MoE expert loop;
    /// [`eager`]). `torch.compile` would fuse most of them away; the figure does not assume it.
    #[serde(default)]
    pub eager_costs: bool,
}

/// Where a step's GEMM rates come from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GemmRates {
    /// Measured on this GPU by shape and precision ([`gemm_table`]).
    Measured,
    /// No measurement for this GPU and precision (or a `tflops` override): the data-sheet
    /// peak times the size curve of [`Hw::gemm_s`].
    #[default]
    PeakCurve,
}

/// The step time of a training scenario (`None` for inference and serving).
///
/// # Formula
/// ```text
/// per micro-batch on the most loaded stage (L_s layers; the last stage adds the logits and
/// the loss, [`loss_time`]):
///   t_mb = L_s·(3·G + (1+2.5)·A + 3·E + Q + R + T_tp + T_ep + max(0, T_cp − A_cp))
///          G = Σ GEMMs at e(F) (the measured rate by shape where the GPU has a table,
///          [`gemm_table`]; adapters: no weight gradient, 2·G), A = attention at 0.55 of peak
///          (measured FlashAttention rates on an H200 and H100 SXM), E = element-wise at 0.8 HBM (eager
///          PyTorch with Hugging Face modules: its unfused kernels at the copy rate,
///          [`eager::elementwise_bytes`], the composed RMSNorm and RoPE at
///          [`eager::COMPOSED_RATE`]; MoE: the expert loop, [`eager::expert_loop_s`];
///          elsewhere the routed experts as grouped GEMMs, [`grouped_gemm_s`]),
///          Q = fp8 quantization's bytes forward and backward at 0.8 HBM ([`fp8_quant_bytes`]),
///          R = recomputation (full: G + A + E again for the checkpointed share of the
///          layers, `ckpt_layers`; selective: A), T_* = collectives (T_ep: [`ep_time`])
///   eager PyTorch: t_mb ≥ the host's kernel launches ([`eager::launch_floor_s`])
/// pipeline: (m + (p − 1)/v)·t_mb + exposed p2p of 2·m·v·T_p2p  (bubble = (p−1)/v · t_mb;
///   Megatron's interleaved schedule hides the steady phase's transfers: [`pipeline_time`])
/// data parallel: T_dp = n_c·L_ring + bytes per step / (B·η) (across nodes over rails,
///   [`ring_link`]), exposed max(T_dp − backward of
///   the last micro-batch, T_dp/L_s) (DeepSpeed's pipeline engine: all of T_dp); ZeRO-3/FSDP: per layer and micro-batch two gathers (k
///   bytes per parameter) and a reduce-scatter (k_g: 4 under FSDP), each L_ring + its bytes,
///   exposed beyond a third of the layer's compute, plus the first gather. L_ring is NCCL's
///   ring latency over the group's ranks and nodes ([`ring_latency`]); n_c the collectives
///   per step (3·L_s·m under ZeRO-3, 2·L_s·m under SHARD_GRAD_OP, L_s bucketed otherwise)
/// contention: each hidden collective c beside compute w adds max(c, w + φ·min(c, w)) −
///   max(c, w), φ = 24/n_SM ([`contended`]): TP overlap and CP's ring inside t_mb, DP and
///   interleaved pipeline transfers on the step
/// optimizer: 30 B per local trainable parameter / (0.8·HBM) (eager PyTorch: the measured
///   traffic of torch.optim's implementations, [`eager::optimizer_s`]);
///   offload: PCIe transfers + CPU-Adam
/// step = pipeline + exposed DP + DP/PP contention + optimizer + offload
/// MFU = F_token·tokens / (step · GPUs · peak)
/// ```
/// Sources: Narayanan et al. 2021 (the 1F1B and interleaved bubble (p−1)/(v·m)); NVIDIA/nccl
/// `src/graph/tuning.cc` (the ring latency);
/// Korthikanti et al. 2022 (selective and full recomputation's work; sequence parallelism's
/// collectives); Calculon (Isaev et al., SC'23: the per-layer composition, α–β collectives).
///
/// # Example
/// See `tests/step_time.rs` for Llama 3 8B on 8 H100s worked by hand.
pub fn step_time(s: &Scenario, p: &Prepared) -> Option<StepTime> {
    if s.workload.mode != Mode::Train {
        return None;
    }
    step_time_with(s, p, crate::comm::comm_per_step(s, p).dp as f64)
}

/// What every part of the step-time model reads of one layout, computed once.
struct Ctx<'a> {
    s: &'a Scenario,
    hw: Hw,
    l: crate::scenario::Layout,
    arch: &'a crate::model::Arch,
    /// TP, CP and PP degrees, the micro-batch, sequence, micro-batches, virtual stages.
    t: f64,
    c: f64,
    pp: f64,
    b: f64,
    seq: f64,
    m: f64,
    v: f64,
    /// Bytes per compute value.
    k: f64,
    per_node: std::num::NonZeroU64,
    n_stages: u64,
    /// Layers on the most loaded stage.
    layers: f64,
    /// Tokens per micro-batch on one rank (the sequence split by CP).
    tokens: f64,
    /// Share of a chunk's layers full recomputation checkpoints (`ckpt_layers` of them; 1
    /// when all are, 0 without full recomputation).
    ckpt: f64,
}

impl<'a> Ctx<'a> {
    fn of(s: &'a Scenario, p: &'a Prepared) -> Ctx<'a> {
        let l = s.layout();
        let arch = &p.arch;
        let n_stages = stage_count(arch, &l).get();
        let (b, seq, c) = (
            s.workload.batch.get() as f64,
            s.workload.seq.get() as f64,
            l.cp.get() as f64,
        );
        Ctx {
            s,
            hw: Hw::of(s),
            arch,
            t: l.tp.get() as f64,
            c,
            pp: l.pp.get() as f64,
            b,
            seq,
            m: s.workload.microbatches.get() as f64,
            v: s.parallel.vpp.get() as f64,
            k: s.numerics.precision.compute_bytes() as f64,
            per_node: s.cluster.gpus_per_node.into(),
            n_stages: n_stages as u64,
            layers: (arch.layers.get() as f64 / n_stages as f64).ceil(),
            tokens: b * seq / c,
            ckpt: checkpointed_share(s, arch.layers.get().div_ceil(n_stages)),
            l,
        }
    }
}

/// The share of a stage's layers full recomputation checkpoints: `ckpt_layers` of each
/// chunk's `L_c` (all when `ckpt_layers` is 0), none without `recompute=full`
/// (Megatron's `--recompute-method block --recompute-num-layers`).
///
/// # Example
/// Llama 3 8B on one stage, `recompute=full&ckpt_layers=5`: 5 of 32 layers, 0.156.
fn checkpointed_share(s: &Scenario, stage_layers: u32) -> f64 {
    if s.activations.recompute != Recompute::Full {
        return 0.0;
    }
    let (lc, n) = crate::activations::chunk_layers(s, stage_layers);
    n as f64 / lc.get() as f64
}

/// One block's compute per micro-batch, seconds: its GEMMs `g`, attention `a`, element-wise
/// work `e`, forward, backward and recomputation (see [`step_time`]'s formula).
struct Block {
    w: flops::BlockWork,
    g: f64,
    a: f64,
    fwd: f64,
    bwd: f64,
    recompute: f64,
}

fn block(x: &Ctx) -> Block {
    let (s, hw, arch, k) = (x.s, &x.hw, x.arch, x.k);
    let w = flops::block(arch, x.b, x.seq, x.t, x.c, k);
    let eager_hf = eager::applies(s);
    let g: f64 = w.gemms().iter().map(|y| gemm_time(x, y, eager_hf)).sum();
    let a = attention_time(x, &w);
    let (qf, qb) = fp8_quant_bytes(s, &w);
    let bw = hw.hbm * 1e9 * HBM_EFFICIENCY;
    // Eager PyTorch runs each element-wise op as its own kernel ([`eager::elementwise_bytes`],
    // at the measured copy rate); fused stacks move the block's fused count.
    let e = if eager_hf {
        let (flat, composed) = eager::elementwise_split(s, arch, x.tokens, x.t);
        flat / (hw.hbm * 1e9 * eager::HBM_COPY)
            + composed / hardware::composed_rate(perf(&s.cluster.gpu).sms, hw.hbm)
    } else {
        w.elementwise_bytes / bw
    };
    // Hugging Face MoE blocks run their experts in a Python loop ([`eager::expert_loop_s`]).
    let moe_loop = if eager_hf && arch.experts > 0 {
        eager::expert_loop_s(arch)
            * (arch.layers.get() - arch.first_dense.min(arch.layers.get())) as f64
            / arch.layers.get() as f64
    } else {
        0.0
    };
    let (lora_f, lora_b) = adapters::adapter_gemms_s(
        s,
        arch,
        |m, k, n| hw.gemm_mkn_s(m, k, n, 1.0),
        x.tokens,
        x.t,
    );
    let fwd = g + a + e + qf / bw + moe_loop + lora_f;
    // Frozen weights (adapters) compute no weight gradient: the backward's GEMMs are the
    // data gradients alone (measured: C16, C17 backward/forward 1.31, 1.27 against 1.9–2.1
    // for full fine-tuning).
    let wgrad = if s.finetune.kind() == crate::scenario::Finetune::Full {
        1.0
    } else {
        0.0
    };
    let bwd =
        (1.0 + wgrad) * g + ATTENTION_BACKWARD * a + 2.0 * e + qb / bw + 2.0 * moe_loop + lora_b;
    let recompute = match s.activations.recompute {
        Recompute::None => 0.0,
        Recompute::Selective => a,
        // The checkpointed layers run their forward again (a share of the stage's).
        Recompute::Full => fwd * x.ckpt,
    };
    Block {
        w,
        g,
        a,
        fwd,
        bwd,
        recompute,
    }
}

/// One weight GEMM family of a block, seconds: `count` GEMMs at [`Hw::gemm_mkn_s`]; a
/// Hugging Face MoE block's routed experts as one GEMM per expert over its share of the
/// tokens ([`eager::expert_rows`]), the shared experts over all of them; elsewhere the
/// routed experts as grouped GEMMs over each local expert's rows ([`grouped_gemm_s`]).
fn gemm_time(x: &Ctx, y: &flops::Gemm, eager_hf: bool) -> f64 {
    if eager_hf && y.routed > 0.0 && x.arch.experts > 0 {
        let (rows, n) = eager::expert_rows(x.arch, y.m);
        let shared = y.count - y.routed;
        n * x.hw.gemm_mkn_s(rows, y.k, y.n, 1.0) + x.hw.gemm_mkn_s(y.m, y.k, y.n, shared)
    } else if y.routed > 0.0 && x.arch.experts > 0 {
        grouped_gemm_s(x, y)
    } else {
        x.hw.gemm_mkn_s(y.m, y.k, y.n, y.count)
    }
}

/// One block's attention core per micro-batch, forward seconds (the backward is
/// `ATTENTION_BACKWARD` times it).
///
/// - Eager attention: both products over the full `s²` (masked afterwards), one head at a
///   time, and the passes over the scores: the softmax (+ dropout mask) reading and writing
///   them, or under Hugging Face modules the mask, the fp32 softmax and the cast
///   ([`eager::score_bytes`]).
/// - `attn=sdpa` under Hugging Face modules runs the kernel PyTorch dispatches to
///   ([`crate::activations::sdpa_kernel`], as the memory model counts it): the math fallback
///   (fp32 with GQA) as eager attention; the memory-efficient kernel with a mask (a sliding
///   window the sequence reaches) over the full `s²`, the dense mask leaving no causal
///   block to skip, at FlashAttention's rate (the CUTLASS kernel is not measured; it is
///   not faster).
/// - `attn=sdpa` in fp32 without grouped-query attention runs the memory-efficient kernel on
///   the CUDA cores, TF32 or not ([`hardware::FP32_SDPA_SHARE`]).
/// - FlashAttention on a GPU with a measured table (H200, H100 SXM) outside Megatron: the
///   measured rate by the call's size
///   ([`gemm_table::flash_h200_tflops`]).
/// - Otherwise the share of the 16-bit peak of [`attention_efficiency`].
///
/// # Example
/// Llama 3 8B on an H200 (PyTorch SDPA), b 1, s 4,096: forward 137.4 GFLOP, forward +
/// backward 481 GFLOP at 424 TFLOP/s: 1.13 ms, of which the forward 0.324 ms.
fn attention_time(x: &Ctx, w: &flops::BlockWork) -> f64 {
    let (s, arch) = (x.s, x.arch);
    // Attention runs in 16 bits even in fp8 training.
    let peak16 = perf(&s.cluster.gpu).tflops_16 * 1e12;
    let kernel = if eager::applies(s) {
        crate::activations::sdpa_kernel(s, arch, &crate::activations::Shape::of(s, arch, &x.l))
    } else {
        None
    };
    use crate::activations::SdpaKernel;
    // A dense mask computes every block of the s² (twice the causal half).
    let work = match kernel {
        Some(SdpaKernel::Efficient { masked: true }) => 2.0 * w.attention_flops,
        _ => w.attention_flops,
    };
    let fp32 = s.numerics.precision == Precision::Fp32;
    match s.activations.attn {
        _ if kernel == Some(SdpaKernel::Math) => eager_attention(x, true),
        _ if fp32 && matches!(kernel, Some(SdpaKernel::Efficient { .. })) => {
            work / (perf(&s.cluster.gpu).tflops_fp32 * 1e12 * FP32_SDPA_SHARE)
        }
        Attn::Eager => eager_attention(x, false),
        Attn::Flash1 => w.attention_flops / (peak16 * attention_efficiency(s)),
        _ if gemm_table::table(&s.cluster.gpu).is_some()
            && s.stack.framework != Framework::Megatron =>
        {
            let f = (1.0 + ATTENTION_BACKWARD) * work / 1e9;
            let fwd_bwd = f / (gemm_table::flash_h200_tflops(f) * 1e3);
            fwd_bwd / (1.0 + ATTENTION_BACKWARD)
        }
        _ => work / (peak16 * attention_efficiency(s)),
    }
}

/// Eager attention's forward per block and micro-batch, seconds: both products over the full
/// `s²` (masked afterwards) and the passes over the scores ([`attention_time`]).
fn eager_attention(x: &Ctx, math: bool) -> f64 {
    let (s, hw, arch, k) = (x.s, &x.hw, x.arch, x.k);
    let heads = (arch.heads.get() as f64 / x.t).ceil();
    let one = 2.0 * x.seq * (x.seq / x.c) * arch.head_dim.get() as f64 / 1e9;
    // `torch.matmul` of the Hugging Face code batches every head in one call.
    let gemms = if eager::applies(s) {
        2.0 * hw.gemm16_s(one * x.b * heads)
    } else {
        2.0 * x.b * heads * hw.gemm16_s(one)
    };
    let scores = x.b * heads * x.seq * (x.seq / x.c);
    let drop = if s.activations.dropout { 3.0 } else { 0.0 };
    let (beta, rate) = if eager::applies(s) {
        (eager::score_bytes(s, k, math), eager::HBM_COPY)
    } else {
        (2.0 * k, HBM_EFFICIENCY)
    };
    gemms + scores * (beta + drop) / (hw.hbm * 1e9 * rate)
}

/// The memory traffic fp8 training adds to one block's micro-batch, `(forward, backward)`
/// bytes: Transformer Engine quantizes each GEMM's input in the forward and each GEMM's
/// output gradient in the backward (0 outside `precision=fp8`).
///
/// # Formula
/// ```text
/// Q_fwd = Σ β_in · m·k·count     Q_bwd = Σ β · m·n·count      (GEMMs fed in 16 bits excluded)
/// β  = 3 (read 2 B, write 1 B) + 1 column-wise copy + 2 amax pass + scales, per recipe:
///                 any layout (Blackwell)   TN only (Hopper, Ada)
///   delayed        3                       4      (cast_transpose)
///   tensorwise     5                       6      (amax pass, then cast_transpose)
///   mxfp8          4.0625                  —      (row- and column-wise, a 1-B scale per 32 each)
///   blockwise      —                       4.0625 (row- and column-wise, a 4-B scale per 128 each)
/// β_in = β, except a norm-fed GEMM under Megatron (TE's LayerNormLinear):
///   delayed: the norm writes fp8 in place of its 16-bit output (−1), transposed in the
///            backward (read 1, write 1: +2 where the layout needs it) → −1 or +1;
///   tensorwise: the norm computes the amax in its own pass (FUSED_NORM_AMAX_FP8) → β − 2.
/// ```
/// Sources: TransformerEngine v1.8 `pytorch/module/linear.py` (`fp8_cast_transpose_fused` of
/// the input; `grad_output_preprocess` casts and transposes the output gradient),
/// `layernorm_linear.py` (`layernorm_fwd_fp8`, `fp8_transpose` in the backward); v2.8
/// `pytorch/csrc/quantizer.cpp` (`Float8CurrentScalingQuantizer::quantize_impl`: compute
/// amax, reduce, scale, quantize; `need_transpose = columnwise && !non_tn`),
/// `pytorch/csrc/extensions/normalization.cpp` (the fused norm per quantizer).
/// Weights are quantized once per step (Megatron's `is_first_microbatch`) and not counted.
///
/// # Example
/// Llama 3 8B (h = 4,096, KV 1,024, f = 14,336), one token, Megatron, H100, delayed:
/// inputs 1·4,096 (QKV) + 4·4,096 (o) + 1·4,096 (fc1) + 4·14,336 (fc2) = 81,920 B,
/// gradients 4·(6,144 + 4,096 + 28,672 + 4,096) = 172,032 B; tensorwise 143,360 + 258,048.
pub fn fp8_quant_bytes(s: &Scenario, w: &flops::BlockWork) -> (f64, f64) {
    if s.numerics.precision != Precision::Fp8 {
        return (0.0, 0.0);
    }
    let recipe = s.runtime.fp8_recipe;
    let any_layout = crate::gpu::fp8_any_layout(&s.cluster.gpu);
    let (beta, beta_norm) = fp8_bytes_per_value(recipe, any_layout);
    let fused_norm = s.stack.framework == Framework::Megatron;
    let (mut fwd, mut bwd) = (0.0, 0.0);
    for y in w.gemms() {
        let b_in = match y.feed {
            flops::Feed::High => continue,
            flops::Feed::Norm if fused_norm => beta_norm,
            _ => beta,
        };
        fwd += b_in * y.m * y.k * y.count;
        bwd += beta * y.m * y.n * y.count;
    }
    (fwd, bwd)
}

/// Bytes per quantized value, `(β, β for a norm-fed input under Megatron)`, for a recipe
/// on a GPU whose fp8 GEMMs take any layout or only `TN` ([`fp8_quant_bytes`]).
pub fn fp8_bytes_per_value(recipe: Fp8Recipe, any_layout: bool) -> (f64, f64) {
    let col = if any_layout { 0.0 } else { 1.0 };
    // Block scales: one per 32 values (E8M0, 1 B) or per 128 (fp32, 4 B), on both copies.
    let scales = 2.0 / 32.0;
    match recipe {
        Fp8Recipe::Delayed => (3.0 + col, -1.0 + 2.0 * col),
        Fp8Recipe::Tensorwise => (5.0 + col, 3.0 + col),
        Fp8Recipe::Mxfp8 | Fp8Recipe::Blockwise => (4.0 + scales, 4.0 + scales),
    }
}

/// One micro-batch's block activations on one rank, bytes (TP's and PP's messages).
fn act_bytes(x: &Ctx) -> f64 {
    x.tokens * x.arch.hidden.get() as f64 * x.k
}

/// How long eager PyTorch's micro-batch of `busy` seconds of GPU work waits for the host's
/// kernel launches ([`eager::launch_floor_s`]; 0 elsewhere).
fn launch_wait(x: &Ctx, blk: &Block, busy: f64) -> f64 {
    if !eager::applies(x.s) {
        return 0.0;
    }
    let r = if blk.fwd > 0.0 {
        blk.recompute / blk.fwd
    } else {
        0.0
    };
    (eager::launch_floor_s(x.s, x.arch, x.layers, r) - busy).max(0.0)
}

/// [`step_time`] with the data-parallel bytes per step already counted (the explorer has
/// them for each layout).
pub fn step_time_with(s: &Scenario, p: &Prepared, dp_bytes: f64) -> Option<StepTime> {
    if s.workload.mode != Mode::Train {
        return None;
    }
    let x = Ctx::of(s, p);
    let (m, layers) = (x.m, x.layers);
    let blk = block(&x);
    let (tp_whole, tp, tp_contention) = tp_time(&x, &blk);
    let (cp_total, cp_exposed, cp_contention) = cp_time(&x, &blk);
    let (ep_total, ep, ep_contention) = ep_time(&x, &blk);
    // Collectives hidden behind a block's compute slow it by the SMs they hold.
    let block_contention = tp_contention + cp_contention + ep_contention;
    let block_mb = blk.fwd + blk.bwd + blk.recompute + tp + ep + cp_exposed + block_contention;
    // The last stage also computes the logits and the loss (the first the embedding, a
    // lookup).
    let head = flops::logits(x.arch, x.tokens, x.t);
    let head_passes = if s.finetune.kind() == crate::scenario::Finetune::Full {
        3.0
    } else {
        2.0
    };
    let logits = x.hw.gemm16_mkn_s(head.m, head.k, head.n) * head_passes + loss_time(&x);
    let launch_wait = launch_wait(&x, &blk, layers * block_mb + logits);
    let t_mb = layers * block_mb + logits + launch_wait;
    let (bubble, pp_comm, pp_exposed, pipeline) = pipeline_time(&x, t_mb);
    let replica = crate::comm::replica_comm_per_step(s, p) as f64;
    let (dp_total, dp_exposed, dp_contention) = dp_time(&x, &blk, dp_bytes, replica);
    let (optimizer, offload) = optimizer_time(&x, p);

    // The hidden pipeline transfers (small beside a chunk's compute) and the data-parallel
    // traffic do the same to the step.
    let step_contention = contention_share(&x.hw) * (pp_comm - pp_exposed).max(0.0) + dp_contention;
    let step = pipeline + dp_exposed + optimizer + offload + step_contention;
    let gpus = x.l.world.get() as f64;
    let tokens_step = x.l.dp.get() as f64 * m * x.b * x.seq;
    let f_token = flops::model_flops_per_token(x.arch, x.seq);
    let peak = x.hw.tflops * 1e12;
    let mfu = f_token * tokens_step / (step * gpus * peak);
    let extra = match s.activations.recompute {
        Recompute::None => 0.0,
        Recompute::Selective => blk.w.attention_flops / blk.w.flops() / 3.0,
        Recompute::Full => x.ckpt / 3.0,
    };
    let exposed = m * layers * (tp + ep + cp_exposed) + pp_exposed + dp_exposed;
    Some(StepTime {
        step_s: step,
        tokens_per_s: tokens_step / step,
        tokens_per_s_per_gpu: tokens_step / step / gpus,
        mfu,
        hfu: mfu * (1.0 + extra),
        gemm_rates: if x.hw.table.is_some() {
            GemmRates::Measured
        } else {
            GemmRates::PeakCurve
        },
        eager_costs: eager::applies(s),
        breakdown: Breakdown {
            compute_s: m * (layers * (blk.fwd + blk.bwd) + logits + launch_wait),
            recompute_s: m * layers * blk.recompute,
            tp_comm_s: m * layers * tp_whole,
            dp_comm_s: dp_total,
            pp_comm_s: pp_comm,
            cp_comm_s: m * layers * cp_total,
            ep_comm_s: m * layers * ep_total,
            bubble_s: bubble,
            optimizer_s: optimizer,
            offload_s: offload,
            exposed_comm_s: exposed,
            contention_s: m * layers * block_contention + step_contention,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::{ring_latency, Hw};
    use crate::contract::query::decode;

    fn hw(gpu: &str) -> Hw {
        Hw::of(&decode(&format!("model=llama-2-7b&gpu={gpu}")).0.scenario)
    }

    /// NCCL's ring latency by hand (`ring_latency`'s doc example and the A100 host case).
    #[test]
    fn ring_latency_by_hand() {
        let h100 = hw("h100-80");
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        // 8 ranks in one node: 8.4 + 7·3.4 = 32.2 µs.
        assert!(close(ring_latency(&h100, "h100-80", 8.0, 1.0), 32.2e-6));
        // 512 ranks on 64 nodes: 8.4 + 448·3.4 + 63·14 = 2,413.6 µs.
        assert!(close(
            ring_latency(&h100, "h100-80", 512.0, 64.0),
            2_413.6e-6
        ));
        // DGX A100's AMD hosts: an in-node step of a multi-node ring costs 6 µs;
        // 16 ranks on 2 nodes: 8.4 + 14·6 + 1·14 = 106.4 µs.
        let a100 = hw("a100-80");
        assert!(close(ring_latency(&a100, "a100-80", 16.0, 2.0), 106.4e-6));
        // One rank: no collective.
        assert_eq!(ring_latency(&h100, "h100-80", 1.0, 1.0), 0.0);
    }
}
