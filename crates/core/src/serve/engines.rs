//! The four engines' start-up programs.

use super::kv::{layer_row, stage_layers, KvFormat};
use super::{model_context, sym, Plan};
use crate::expr::{Expr, Tok::*};
use crate::model::Arch;
use crate::resolved::Prepared;
use crate::scenario::{Engine, Layout, Scenario, Version};
use crate::units::{GIB, MIB};

/// The newest release memfit models per engine (what an empty `engine_version` means).
pub fn newest(e: Engine) -> Version {
    match e {
        Engine::Vllm => Version(0, 33, 0),
        Engine::Sglang => Version(0, 5, 3),
        Engine::Trtllm => Version(1, 0, 0),
        Engine::Llamacpp => Version(6000, 0, 0),
    }
}

/// The device total `cudaMemGetInfo` reports, where public logs or device queries give
/// it (smaller than `nvidia-smi memory.total` by what the driver keeps): `(gpu id, MiB·2^20
/// or bytes)`. Other GPUs: the preset's capacity less 512 MiB.
///
/// Source: deviceQuery / `torch.cuda.get_device_properties` output in public files (see
/// docs/serving.md): H100 80 GB 85,029,158,912 B (79.19 GiB, as vLLM's logs print).
pub const CUDA_TOTAL: &[(&str, u64)] = &[
    ("h100-80", 85_029_158_912),
    ("h100-pcie", 85_029_158_912),
    ("a100-80", 85_093_777_408),
    ("a100-40", 40_536 * MIB),
    ("l40s", 45_589 * MIB),
    ("rtx4090", 24_563 * MIB),
    ("h200", 143_156 * MIB),
];

/// The device total the engine sees (`cudaMemGetInfo`), bytes; `gpu_mem` when set.
pub(crate) fn device_total(s: &Scenario) -> u64 {
    if s.cluster.gpu_mem_mib.is_some() {
        return s.usable_bytes();
    }
    CUDA_TOTAL
        .iter()
        .find(|(id, _)| *id == s.cluster.gpu)
        .map_or(s.usable_bytes().saturating_sub(512 * MIB), |(_, b)| *b)
}

/// The weights on one rank: the format's bytes (see [`quant::weights_expr`]) over
/// `t·p` ranks.
///
/// # Formula
/// `W = ⌈W_format / (t·p)⌉`
pub fn weights_expr(s: &Scenario, p: &Prepared, l: &Layout) -> Expr {
    let (w, _) = crate::infer::format_weights(s, &p.arch, p.psi);
    w.then(&[
        Sym("t", l.tp as u128),
        Sym("p", l.pp as u128),
        Mul,
        DivCeil,
    ])
}

/// The context a request may use: `max_len`, else the model's, else `seq + gen`.
fn max_len(s: &Scenario) -> u64 {
    s.serving.max_len.map(|c| c.get() as u64).unwrap_or_else(|| {
        model_context(&s.model.preset)
            .map(u64::from)
            .unwrap_or(s.workload.seq.get() as u64 + s.workload.gen as u64)
    })
}

/// KV bytes per token on the most loaded rank: `(L_s + L_w)·row` (windowed layers are
/// pooled like full ones: vLLM and SGLang give every layer the same blocks).
fn per_token(s: &Scenario, arch: &Arch, l: &Layout) -> (u64, u64, KvFormat) {
    let f = KvFormat::of(s.numerics.kv_dtype, s.numerics.precision);
    let (full, windowed) = stage_layers(arch, l.pp);
    let row = layer_row(arch, f, l.tp);
    (row * (full + windowed), full + windowed, f)
}

/// The forward's peak activation over `n` tokens on one rank, as the profiling run sees
/// it: the residual stream and the normed input (`2h`), and the larger of attention's
/// q, k, v and output or the MLP's gate/up output and activation.
///
/// # Formula
/// ```text
/// A_fwd = n·k·(2h + max(((a + 2a_kv)·d + a·d)/t,  m'·f/t))
///   m' = 3 (SwiGLU: gate+up 2f, SiluAndMul f) or 2 (GELU: up f, activation f)
///   MoE: f = top_k·f_e (the fused kernel's intermediate caches), + top_k·h (its output cache)
/// ```
/// Source: vLLM `LlamaDecoderLayer.forward` (`gate_up_proj`, `SiluAndMul`) and
/// `fused_moe` (`intermediate_cache1/2/3`); measured against the logs' "torch peak memory
/// increase" (tests/data/serve_logs.json).
///
/// # Example
/// Llama 3 8B, n = 8,192, bf16, t = 1: 8,192·2·(8,192 + 3·14,336) = 838,860,800 B.
pub(crate) fn forward_peak(arch: &Arch, n: u64, k: u64, t: u64) -> u64 {
    let (h, a, kv, d) = (
        arch.hidden as u64,
        arch.heads as u64,
        arch.kv_heads as u64,
        arch.head_dim as u64,
    );
    let attn = ((a + 2 * kv) * d + a * d) / t;
    let m = if arch.mlp == crate::model::Mlp::Swiglu { 3 } else { 2 };
    let mlp = if arch.experts > 0 {
        let tk = arch.top_k.max(1) as u64;
        tk * m * arch.expert_ffn() as u64 / t + tk * h
    } else {
        m * arch.ffn as u64 / t
    };
    n * k * (2 * h + attn.max(mlp))
}

/// Shared tail of the paged engines: blocks, tokens, concurrency, the longest request.
struct Pool {
    blocks: u64,
    tokens: u64,
    concurrency: f64,
    fit: u64,
}

fn pool(kv_bytes: u64, per_token: u64, block: u64, max_len: u64) -> Pool {
    let page = per_token.max(1) * block.max(1);
    let blocks = kv_bytes / page;
    let tokens = blocks * block;
    let need = max_len.div_ceil(block.max(1)).max(1);
    Pool {
        blocks,
        tokens,
        concurrency: blocks as f64 / need as f64,
        fit: tokens,
    }
}

fn gib(b: u64) -> String {
    format!("{:.2}", b as f64 / GIB as f64)
}

/// Every engine's plan.
pub(crate) fn plan(s: &Scenario, p: &Prepared, l: &Layout) -> Plan {
    match s.serving.engine {
        Engine::Vllm => vllm(s, p, l),
        Engine::Sglang => sglang(s, p, l),
        Engine::Trtllm => trtllm(s, p, l),
        Engine::Llamacpp => llamacpp(s, p, l),
    }
}

const SRC_WEIGHTS: &str = "the format's layout (quant), ÷ t·p; vLLM adds the rotary cos/sin cache";

/// What changes between vLLM releases (see docs/serving.md for the era table).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct VllmEra {
    /// The V0 engine (≤ 0.7): attention runs in the profile, `max_num_seqs` 256.
    pub v0: bool,
    /// 0.8.0–0.9.0: the V1 formula that charges all non-torch memory, the CUDA context
    /// included.
    pub charges_context: bool,
    /// NCCL buffers are set up after the baseline snapshot (≤ 0.10), so charged.
    pub charges_nccl: bool,
    /// `ceil(util·total)` (0.14+) instead of the float product.
    pub ceil_budget: bool,
    /// Default `gpu_memory_utilization`: 0.90, 0.92 from 0.20.
    pub util: f64,
    /// CUDA graphs estimated and subtracted before the KV cache (0.20+).
    pub graphs: bool,
    /// GPUs of ≥ 160 GiB get 16,384 batched tokens in the API server (0.29+).
    pub big_batch_160: bool,
}

impl VllmEra {
    /// The era of release `v`.
    pub(crate) fn of(v: Version) -> VllmEra {
        VllmEra {
            v0: v < Version(0, 8, 0),
            charges_context: v >= Version(0, 8, 0) && v < Version(0, 9, 1),
            charges_nccl: v < Version(0, 11, 0),
            ceil_budget: v >= Version(0, 14, 0),
            util: if v >= Version(0, 20, 0) { 0.92 } else { 0.90 },
            graphs: v >= Version(0, 20, 0),
            big_batch_160: v >= Version(0, 29, 0),
        }
    }
}

/// vLLM's start-up: the budget, the profiling run, the KV pool.
///
/// # Formula
/// ```text
/// budget  = u · M_total   (⌈·⌉ from 0.14)          u = gpu_memory_utilization (0.90; 0.92 from 0.20)
/// KV      = budget − W − A − N_t [− ctx 0.8.0–0.9.0] [− G from 0.20]
/// blocks  = ⌊KV / (B · c_tok)⌋;  tokens = blocks·B
/// concurrency = blocks / ⌈max_len / B⌉   (V0: blocks·B / max_len)
/// ```
/// `M_total` the device total `cudaMemGetInfo` reports; `W` the weights (+ the rotary
/// cos/sin cache `P·d·k`); `A = max(A_fwd, A_samp)` the profiling run's torch peak:
/// the forward over `max_num_batched_tokens` tokens (attention skipped in V1) or the
/// dummy sampler over `min(max_num_seqs, tokens)` rows at [`SAMPLER_BYTES`] per logit;
/// `N_t` non-torch memory (NCCL with TP ≥ 2 up to 0.10, cuBLAS workspaces); `B` the
/// block size (16); `c_tok` the KV bytes per token on the rank.
///
/// Source: vLLM `v1/worker/gpu_worker.py determine_available_memory`, `utils/mem_utils.py
/// memory_profiling`, `v1/core/kv_cache_utils.py get_num_blocks` and
/// `check_enough_kv_cache_memory`, `engine/arg_utils.py` defaults (sdists 0.6.6–0.33.0).
///
/// # Example
/// Llama 3 8B, H100 (85,029,158,912 B), u = 0.90, 0.11: budget 76,526,243,020 B; W =
/// 16,060,522,496 + 2,097,152 (rotary, P = 8,192); each block of 16 tokens holds 2 MiB.
fn vllm(s: &Scenario, p: &Prepared, l: &Layout) -> Plan {
    let v = s.serving.version.unwrap_or(newest(Engine::Vllm));
    let era = VllmEra::of(v);
    let k = s.numerics.precision.compute_bytes();
    let arch = &p.arch;
    let total = device_total(s);
    let util = s.serving.gpu_util.unwrap_or(era.util);
    let product = total as f64 * util;
    let budget = if era.ceil_budget { product.ceil() } else { product.floor() } as u64;
    let ml = max_len(s);
    let nvml = s.usable_bytes();
    let large = nvml >= 70 * GIB && !s.cluster.gpu.starts_with("a100");
    let (seqs_default, batched_default) = if era.v0 {
        (256, if ml > 32_768 { 2048 } else { ml.max(2048) })
    } else if era.big_batch_160 && nvml >= 160 * GIB {
        (1024, 16_384)
    } else if large {
        (1024, 8192)
    } else {
        (256, 2048)
    };
    let n = s
        .serving
        .max_batched_tokens
        .map_or(batched_default, |c| c.get() as u64);
    let seqs = s.serving.max_seqs.map_or(seqs_default, |c| c.get() as u64);
    let t = l.tp as u64;
    let ctx = model_context(&s.model.preset).unwrap_or(0) as u64;
    let rope = if arch.positions == 0 && arch.mla.is_none() {
        ctx * arch.head_dim as u64 * k
    } else {
        0
    };
    let weights = weights_expr(s, p, l).then(&[Sym("P·d·k", rope as u128), Add]);
    let mut fwd = forward_peak(arch, n, k, t);
    if era.v0 {
        // V0 runs attention in the profile: flash attention's output beside q, k, v.
        fwd += n * k * (arch.heads as u64 * arch.head_dim as u64) / t;
    }
    let sampler = seqs.min(n) * arch.vocab as u64 * SAMPLER_BYTES;
    let activation = Expr::new(&[
        Sym("A_fwd", fwd as u128),
        Sym("A_samp", sampler as u128),
        Max,
    ]);
    let nccl = if l.tp * l.pp > 1 && era.charges_nccl { NON_TORCH_NCCL } else { 0 };
    let context = if era.charges_context {
        s.runtime.cuda_ctx_mib as u64 * MIB
    } else {
        0
    };
    let non_torch = sym("N_t", NON_TORCH_1 + nccl + context);
    let graphs = sym("G", if era.graphs { GRAPHS } else { 0 });
    let used = weights.eval() + activation.eval() + non_torch.eval() + graphs.eval();
    let kv_bytes = budget.saturating_sub(used);
    let (per_token, _, _) = per_token(s, arch, l);
    let block = s.serving.block_size.map_or(
        if arch.mla.is_some() && !era.v0 { 64 } else { 16 },
        |c| c.get() as u64,
    );
    let mut pl = pool(kv_bytes, per_token, block, ml);
    if era.v0 {
        pl.concurrency = pl.tokens as f64 / ml.max(1) as f64;
    } else if v >= Version(0, 20, 2) {
        pl.tokens = (pl.concurrency * ml as f64) as u64;
    }
    let kv = Expr::new(&[
        Sym("blocks", pl.blocks as u128),
        Sym("B", block as u128),
        Mul,
        Sym("c_tok", per_token as u128),
        Mul,
    ]);
    let word = if v >= Version(0, 22, 0) { "model's" } else { "models's" };
    let error = if kv_bytes == 0 {
        Some("No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.".to_string())
    } else if pl.fit < ml {
        let need = ml.div_ceil(block) * block * per_token;
        Some(format!(
            "To serve at least one request with the {word} max seq len ({ml}), ({} GiB KV cache is needed, which is larger than the available KV cache memory ({} GiB). Based on the available memory, the estimated maximum model length is {}. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
            gib(need),
            gib(kv_bytes),
            pl.fit
        ))
    } else {
        None
    };
    Plan {
        engine: Engine::Vllm,
        version: v,
        budget,
        weights,
        activation,
        non_torch,
        graphs,
        kv,
        outside: sym("ctx", if era.charges_context { 0 } else { s.runtime.cuda_ctx_mib as u64 * MIB }),
        per_token,
        block_size: block,
        blocks: pl.blocks,
        tokens: pl.tokens,
        max_len: ml,
        concurrency: pl.concurrency,
        max_len_fit: pl.fit,
        error,
        sources: [
            SRC_WEIGHTS,
            "vLLM gpu_model_runner.profile_run: torch peak of a max_num_batched_tokens forward (attention skipped in V1) or _dummy_sampler_run over min(max_num_seqs, tokens) rows",
            "vLLM utils/mem_utils.py memory_profiling: non_torch_increase (cuBLAS; NCCL up to 0.10; everything 0.8.0–0.9.0)",
            "vLLM gpu_model_runner.profile_cudagraph_memory (subtracted from 0.20)",
            "vLLM v1/core/kv_cache_utils.py get_num_blocks, get_max_concurrency_for_kv_cache_config",
            "the CUDA context and NCCL set up before vLLM's baseline snapshot",
        ],
    }
}

/// Bytes per logit the sampler's dummy pass holds at its peak (fp32 logits, the
/// softmax's probabilities, the top-k/top-p sort's values and int64 indices).
const SAMPLER_BYTES: u64 = 20;
/// Non-torch memory that appears during profiling on one GPU (cuBLAS workspaces), bytes.
const NON_TORCH_1: u64 = 100 * MIB;
/// NCCL and custom all-reduce buffers with more than one rank, bytes.
const NON_TORCH_NCCL: u64 = 1024 * MIB;
/// The CUDA graph estimate vLLM subtracts from 0.20, bytes.
const GRAPHS: u64 = 512 * MIB;

/// SGLang's start-up (`ModelRunner.profile_max_num_token`, 0.4–0.5).
///
/// # Formula
/// ```text
/// F        = free memory before the weights (device total − CUDA context)
/// rest     = (F − W) − F·(1 − mfs)
/// tokens   = ⌊rest / c_tok⌋ (page size 1)
/// mfs default (0.5.x) = round((M_smi − R)/M_smi, 3),  R = 512 + 1.5·max(cp, 2048) + 2·bs + t·p/8·1024  (MiB;
///          ≥ 10,240 on GPUs over 60 GiB), cp and bs by the GPU's size; 0.4.x: 0.88/0.87/0.85/0.81/0.79 by t·p
/// ```
fn sglang(s: &Scenario, p: &Prepared, l: &Layout) -> Plan {
    let v = s.serving.version.unwrap_or(newest(Engine::Sglang));
    let total = device_total(s);
    let smi = s.usable_bytes() / MIB;
    let tp = (l.tp * l.pp) as f64;
    let mfs = s.serving.gpu_util.unwrap_or_else(|| {
        if v < Version(0, 4, 10) {
            match l.tp * l.pp {
                x if x >= 16 => 0.79,
                x if x >= 8 => 0.81,
                x if x >= 4 => 0.85,
                x if x >= 2 => 0.87,
                _ => 0.88,
            }
        } else {
            let g = smi as f64;
            let (cp, bs) = match smi {
                m if m < 20 * 1024 => (2048.0, 8.0),
                m if m < 35 * 1024 => (2048.0, if l.tp < 4 { 16.0 } else { 80.0 }),
                m if m < 60 * 1024 => (4096.0, if l.tp < 4 { 32.0 } else { 160.0 }),
                m if m < 160 * 1024 => (8192.0, if l.tp < 4 { 256.0 } else { 512.0 }),
                _ => (16384.0, 512.0),
            };
            let cp = s.serving.max_batched_tokens.map_or(cp, |c| c.get() as f64);
            let mut r = 512.0 + f64::max(cp, 2048.0) * 1.5 + bs * 2.0 + tp / 8.0 * 1024.0;
            if g > 60.0 * 1024.0 {
                r = r.max(10.0 * 1024.0);
            }
            ((g - r) / g * 1000.0).round() / 1000.0
        }
    });
    let free = total.saturating_sub(s.runtime.cuda_ctx_mib as u64 * MIB);
    let weights = weights_expr(s, p, l);
    let w = weights.eval();
    let reserve = (free as f64 * (1.0 - mfs)) as u64;
    let kv_bytes = free.saturating_sub(w).saturating_sub(reserve);
    let (per_token, _, _) = per_token(s, &p.arch, l);
    let ml = max_len(s);
    let pl = pool(kv_bytes, per_token, 1, ml);
    let kv = Expr::new(&[Sym("tokens", pl.tokens as u128), Sym("c_tok", per_token as u128), Mul]);
    let error = (pl.tokens < ml).then(|| {
        if kv_bytes == 0 {
            "Not enough memory. Please try to increase --mem-fraction-static.".to_string()
        } else {
            format!("max_total_num_tokens={} is smaller than the context length {ml}: requests are cut to {} tokens", pl.tokens, pl.tokens.saturating_sub(1))
        }
    });
    Plan {
        engine: Engine::Sglang,
        version: v,
        budget: (free as f64 * mfs) as u64,
        weights,
        activation: sym("F·(1−mfs)", reserve),
        non_torch: sym("N_t", 0),
        graphs: sym("G", 0),
        kv,
        outside: sym("ctx", s.runtime.cuda_ctx_mib as u64 * MIB),
        per_token,
        block_size: 1,
        blocks: pl.blocks,
        tokens: pl.tokens,
        max_len: ml,
        concurrency: pl.concurrency,
        max_len_fit: pl.fit,
        error,
        sources: [
            SRC_WEIGHTS,
            "SGLang server_args (mem_fraction_static default): the rest of the free memory is held back for activations and CUDA graphs",
            "SGLang: inside the held-back share",
            "SGLang: inside the held-back share",
            "SGLang model_runner.profile_max_num_token: int(rest·2^30) // cell_size",
            "the CUDA context and NCCL before the weights load (SGLang's baseline)",
        ],
    }
}

/// TensorRT-LLM's PyTorch backend (`KvCacheCreator`): a fraction of what the profiling
/// run leaves.
///
/// # Formula
/// ```text
/// KV     = f · (M_total − W − A − N_t − ctx)       f = free_gpu_memory_fraction (0.9)
/// tokens = ⌈⌊KV / c_tok⌋ / B⌉·B                    B = tokens_per_block (32)
/// ```
fn trtllm(s: &Scenario, p: &Prepared, l: &Layout) -> Plan {
    let v = s.serving.version.unwrap_or(newest(Engine::Trtllm));
    let k = s.numerics.precision.compute_bytes();
    let total = device_total(s);
    let f = s.serving.gpu_util.unwrap_or(0.9);
    let n = s.serving.max_batched_tokens.map_or(8192, |c| c.get() as u64);
    let weights = weights_expr(s, p, l);
    let act = forward_peak(&p.arch, n, k, l.tp as u64);
    let activation = sym("A_fwd", act);
    let non_torch = sym("N_t", NON_TORCH_1 + if l.tp > 1 { NON_TORCH_NCCL } else { 0 });
    let ctx = s.runtime.cuda_ctx_mib as u64 * MIB;
    let free = total
        .saturating_sub(weights.eval())
        .saturating_sub(act)
        .saturating_sub(non_torch.eval())
        .saturating_sub(ctx);
    let kv_bytes = (free as f64 * f) as u64;
    let (per_token, _, _) = per_token(s, &p.arch, l);
    let block = s.serving.block_size.map_or(32, |c| c.get() as u64);
    let ml = max_len(s);
    let pl = pool(kv_bytes, per_token, block, ml);
    let kv = Expr::new(&[
        Sym("blocks", pl.blocks as u128),
        Sym("B", block as u128),
        Mul,
        Sym("c_tok", per_token as u128),
        Mul,
    ]);
    let error = (pl.tokens < ml).then(|| {
        format!("the KV cache holds {} tokens, fewer than max_seq_len {ml}", pl.tokens)
    });
    Plan {
        engine: Engine::Trtllm,
        version: v,
        budget: weights.eval() + act + non_torch.eval() + kv_bytes,
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

/// llama.cpp: the GGUF weights, a KV cache of `n_ctx` cells, a compute buffer.
///
/// # Formula
/// ```text
/// n_ctx  = max_len · parallel, padded to 256
/// KV     = n_ctx · L · (row(type_k, a_kv·d) + row(type_v, a_kv·d))
/// C      = V · n_ub · 4 + n_ctx · n_ub · a · 4 / (flash attention ? n_ctx : 1)      (compute buffer)
/// ```
fn llamacpp(s: &Scenario, p: &Prepared, l: &Layout) -> Plan {
    let v = s.serving.version.unwrap_or(newest(Engine::Llamacpp));
    let arch = &p.arch;
    let par = s.serving.parallel.get() as u64;
    let ml = max_len(s);
    let n_ctx = (ml * par).div_ceil(256) * 256;
    let weights = weights_expr(s, p, l);
    let (per_token, _, _) = per_token(s, arch, l);
    let kv = Expr::new(&[Sym("n_ctx", n_ctx as u128), Sym("c_tok", per_token as u128), Mul]);
    let n_ub = s.serving.max_batched_tokens.map_or(512, |c| c.get() as u64);
    let compute = arch.vocab as u64 * n_ub * 4;
    let activation = sym("C", compute);
    let ctx = s.runtime.cuda_ctx_mib as u64 * MIB;
    let total = device_total(s);
    let used = weights.eval() + kv.eval() + compute + ctx;
    let free_for_kv = total.saturating_sub(weights.eval() + compute + ctx);
    let fit = free_for_kv / per_token.max(1) / par.max(1);
    let error = (used > total).then(|| {
        format!(
            "cudaMalloc failed: out of memory (needs {} GiB of {} GiB)",
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
        max_len: ml,
        concurrency: n_ctx as f64 / ml.max(1) as f64,
        max_len_fit: fit,
        error,
        sources: [
            "llama.cpp GGUF tensor types (llama_tensor_get_type) and ggml block sizes",
            "llama.cpp compute buffer: the logits of one micro-batch (n_ubatch) in f32",
            "llama.cpp: none",
            "llama.cpp: CUDA graphs inside the compute buffer",
            "llama.cpp llama_kv_cache: n_ctx cells × layers × (row(type_k) + row(type_v))",
            "the CUDA context",
        ],
    }
}
