//! The four engines' start-up programs.

use super::kv::{layer_row, stage_layers, KvFormat};
use super::{model_context, sym, Plan};
use crate::expr::{Expr, Tok::*};
use crate::model::Arch;
use crate::quant;
use crate::resolved::Prepared;
use crate::scenario::{Engine, Layout, Scenario, Version};
use crate::units::{GIB, MIB};

/// The newest release memfit models per engine (what an empty `engine_version` means).
pub fn newest(e: Engine) -> Version {
    match e {
        Engine::Vllm => Version(0, 33, 0),
        Engine::Sglang => Version(0, 5, 3),
        Engine::Trtllm => Version(1, 0, 0),
        Engine::Llamacpp => Version(7300, 0, 0),
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
    w.then(&[Sym("t", l.tp as u128), Sym("p", l.pp as u128), Mul, DivCeil])
}

/// The context a request may use: `max_len`, else the model's, else `seq + gen`.
fn max_len(s: &Scenario) -> u64 {
    s.serving
        .max_len
        .map(|c| c.get() as u64)
        .unwrap_or_else(|| {
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
    (
        sat(row as u128 * (full + windowed) as u128),
        full + windowed,
        f,
    )
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
        arch.hidden as u128,
        arch.heads as u128,
        arch.kv_heads as u128,
        arch.head_dim as u128,
    );
    let (n, k, t) = (n as u128, k as u128, t.max(1) as u128);
    let attn = ((a + 2 * kv) * d + a * d) / t;
    let m = if arch.mlp == crate::model::Mlp::Swiglu {
        3
    } else {
        2
    };
    let mlp = if arch.experts > 0 {
        let tk = arch.top_k.max(1) as u128;
        tk * m * arch.expert_ffn() as u128 / t + tk * h
    } else {
        m * arch.ffn as u128 / t
    };
    sat(n * k * (2 * h + attn.max(mlp)))
}

/// vLLM's MXFP4 MoE pads each rank's expert width to a multiple of 256 (gpt-oss: 2,880 →
/// 3,072), so the routed experts hold more than the checkpoint.
///
/// # Formula
/// `W_pad = L_moe·E·3·h·(⌈f_e/t/256⌉·256 − f_e/t)·17/32`   (0 unless quant=mxfp4 on a mixture)
///
/// Source: vLLM `model_executor/layers/quantization/mxfp4.py` (`round_up(intermediate_size_per_partition, 256)`).
///
/// # Example
/// gpt-oss-20b (24 layers, 32 experts, h = f_e = 2,880), t = 1: 24·32·3·2,880·192·17/32 =
/// 676,700,160 B.
pub(crate) fn mxfp4_padding(s: &Scenario, arch: &Arch, t: u32) -> u64 {
    if s.numerics.quant != crate::quant::Quant::Mxfp4 || arch.experts == 0 {
        return 0;
    }
    let f = arch.expert_ffn() as u128 / t.max(1) as u128;
    let pad = f.div_ceil(256) * 256 - f;
    let layers = (arch.layers as u128).saturating_sub(arch.first_dense.min(arch.layers) as u128);
    sat(layers * arch.experts as u128 * 3 * arch.hidden as u128 * pad * 17 / 32)
}

/// The fused-MoE kernel's workspace over `n` tokens on one rank, which vLLM keeps
/// allocated after the forward (so it is alive while the sampler runs): the gate/up
/// output sharing storage with the down output, and the activation.
///
/// # Formula
/// `A_moe = n·k·top_k·(max(2·f_e/t, h) + f_e/t)`   (0 for a dense model)
///
/// Source: vLLM `fused_moe/fused_moe.py fused_experts_impl` (`intermediate_cache13` of
/// `M·top_k·max(N, K)`, `intermediate_cache2` of `M·top_k·N/2`), held by the workspace
/// manager between calls.
///
/// # Example
/// Qwen3-30B-A3B (h = 2,048, f_e = 768, top-8), n = 8,192, bf16, t = 1:
/// 8,192·2·8·(2,048 + 768) = 369,098,752 B.
pub(crate) fn moe_workspace(arch: &Arch, n: u64, k: u64, t: u64) -> u64 {
    if arch.experts == 0 {
        return 0;
    }
    let t = t.max(1) as u128;
    let f = arch.expert_ffn() as u128 / t;
    let h = arch.hidden as u128;
    sat(n as u128 * k as u128 * arch.top_k.max(1) as u128 * ((2 * f).max(h) + f))
}

/// Shared tail of the paged engines: blocks, tokens, concurrency, the longest request.
struct Pool {
    blocks: u64,
    tokens: u64,
    concurrency: f64,
    fit: u64,
}

fn pool(kv_bytes: u64, per_token: u64, block: u64, max_len: u64) -> Pool {
    let page = (per_token.max(1) as u128 * block.max(1) as u128).max(1);
    let blocks = sat(kv_bytes as u128 / page);
    let tokens = sat(blocks as u128 * block as u128);
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

/// `x` clamped to 64 bits (figures past 2^64 bytes saturate: no engine starts there).
fn sat(x: u128) -> u64 {
    x.min(u64::MAX as u128) as u64
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
/// A       = max(A_fwd, 16 · min(max_num_seqs, max_num_batched_tokens) · V + A_moe)
/// N_t     = 256 MiB, + 1,894 MiB with more than one rank on an NVSwitch system (NVLS)
/// blocks  = ⌊KV / (B · c_tok)⌋;  tokens = blocks·B
/// concurrency = blocks / ⌈max_len / B⌉   (V0: blocks·B / max_len)
/// ```
/// `M_total` the device total `cudaMemGetInfo` reports; `W` the weights (+ the rotary
/// cos/sin cache `P·d·k`); `A = max(A_fwd, A_samp)` the profiling run's torch peak:
/// the forward over `max_num_batched_tokens` tokens (attention skipped in V1) or the
/// dummy sampler over `min(max_num_seqs, tokens)` rows at [`SAMPLER_BYTES`] per logit;
/// `N_t` non-torch memory (cuBLAS workspaces; NCCL's buffers with more than one rank); `B` the
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
    let budget = if era.ceil_budget {
        product.ceil()
    } else {
        product.floor()
    } as u64;
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
        sat(ctx as u128 * arch.head_dim as u128 * k as u128)
    } else {
        0
    };
    let weights = weights_expr(s, p, l).then(&[
        Sym("P·d·k", rope as u128),
        Add,
        Sym("W_pad", mxfp4_padding(s, arch, l.tp) as u128),
        Add,
    ]);
    let mut fwd = forward_peak(arch, n, k, t);
    if era.v0 {
        // V0 runs attention in the profile: flash attention's output beside q, k, v.
        fwd = fwd.saturating_add(sat(n as u128
            * k as u128
            * (arch.heads as u128 * arch.head_dim as u128)
            / t as u128));
    }
    let sampler = sat(seqs.min(n) as u128 * arch.vocab as u128 * SAMPLER_BYTES as u128);
    let activation = Expr::new(&[
        Sym("A_fwd", fwd as u128),
        Sym("A_samp", sampler as u128),
        Sym("A_moe", moe_workspace(arch, n, k, t) as u128),
        Add,
        Max,
    ]);
    let nvls = matches!(
        s.cluster.gpu.as_str(),
        "h100-80" | "h200" | "gh200" | "b200-180" | "b200-192"
    );
    let nccl = if (l.tp > 1 || l.pp > 1) && nvls {
        NON_TORCH_NCCL
    } else {
        0
    };
    let context = if era.charges_context {
        s.runtime.cuda_ctx_mib as u64 * MIB
    } else {
        0
    };
    let non_torch = sym("N_t", NON_TORCH_1 + nccl + context);
    let graphs = sym("G", if era.graphs { GRAPHS } else { 0 });
    let used = [&weights, &activation, &non_torch, &graphs]
        .iter()
        .fold(0u64, |a, e| a.saturating_add(e.eval()));
    let kv_bytes = budget.saturating_sub(used);
    let (per_token, _, _) = per_token(s, arch, l);
    let block = s.serving.block_size.map_or(
        if arch.mla.is_some() && !era.v0 {
            64
        } else {
            16
        },
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
    let error = if kv_bytes == 0 {
        Some("No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.".to_string())
    } else if pl.fit < ml {
        let need = sat(ml.div_ceil(block) as u128 * block as u128 * per_token as u128);
        Some(vllm_too_long(v, ml, need, kv_bytes, pl.fit))
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
            "vLLM utils/mem_utils.py memory_profiling: non_torch_increase (cuBLAS workspaces; NCCL buffers allocated at the first collective; everything 0.8.0–0.9.0); constants from the calibration logs",
            "vLLM gpu_model_runner.profile_cudagraph_memory (subtracted from 0.20)",
            "vLLM v1/core/kv_cache_utils.py get_num_blocks, get_max_concurrency_for_kv_cache_config",
            "the CUDA context and NCCL set up before vLLM's baseline snapshot",
        ],
    }
}

/// vLLM's refusal when one request of `max_len` does not fit, as each release words it
/// (`check_enough_kv_cache_memory`): "models's" until 0.22, the documentation link from
/// 0.13, `format_gib` numbers (`round(x, 2)`) from 0.14, the CPU-backend remark from 0.22.
pub(crate) fn vllm_too_long(v: Version, ml: u64, need: u64, avail: u64, fit: u64) -> String {
    let num = |b: u64| {
        let x = b as f64 / GIB as f64;
        if v >= Version(0, 14, 0) {
            // Python's str(round(x, 2)): 58.7, 3.0, 12.34.
            let r = (x * 100.0).round() / 100.0;
            let t = format!("{r:.2}");
            let t = t.trim_end_matches('0');
            if t.ends_with('.') {
                format!("{t}0")
            } else {
                t.to_string()
            }
        } else {
            format!("{x:.2}")
        }
    };
    let word = if v >= Version(0, 22, 0) {
        "model's"
    } else {
        "models's"
    };
    let util = if v >= Version(0, 22, 0) {
        "`gpu_memory_utilization` (which also controls CPU memory on the CPU backend)"
    } else {
        "`gpu_memory_utilization`"
    };
    let link = if v >= Version(0, 13, 0) {
        " See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."
    } else {
        ""
    };
    format!(
        "To serve at least one request with the {word} max seq len ({ml}), ({} GiB KV cache is needed, which is larger than the available KV cache memory ({} GiB). Based on the available memory, the estimated maximum model length is {fit}. Try increasing {util} or decreasing `max_model_len` when initializing the engine.{link}",
        num(need),
        num(avail)
    )
}

/// Bytes per logit the sampler's dummy pass holds at its peak: the fp32 logits (4) and
/// the top-k/top-p sort's fp32 values (4) and int64 indices (8).
///
/// Source: vLLM `v1/sample/ops/topk_topp_sampler.py apply_top_k_top_p` (`logits.sort`);
/// the calibration logs' torch peak increase over `max_num_seqs · V` is 15.0–16.2 B.
const SAMPLER_BYTES: u64 = 16;
/// Non-torch memory that appears during profiling on one GPU (cuBLAS/cuBLASLt
/// workspaces, lazily loaded kernels), bytes: the calibration logs print 0.24–0.27 GiB
/// (vLLM 0.19, H100).
const NON_TORCH_1: u64 = 256 * MIB;
/// What more than one rank adds on an NVSwitch system (H100/H200 SXM, GH200, B200):
/// NCCL allocates its NVLS (NVLink SHARP) buffers at the first collective, inside the
/// profiling run, whether or not the communicator was created before the baseline. The
/// calibration logs print 2.06–2.21 GiB at TP 2–4 (vLLM 0.19, H100 SXM), 1.8–1.95 GiB
/// over one GPU's; A100 runs at TP 2 show no such jump (no NVLS), so none is added there.
const NON_TORCH_NCCL: u64 = 1894 * MIB;
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
    let tp = l.tp as f64 * l.pp as f64;
    let mfs = s.serving.gpu_util.unwrap_or_else(|| {
        if v < Version(0, 4, 10) {
            match l.tp.saturating_mul(l.pp) {
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
    // A reserve larger than the device leaves nothing (SGLang then fails to start).
    let mfs = mfs.clamp(0.0, 1.0);
    let free = total.saturating_sub(s.runtime.cuda_ctx_mib as u64 * MIB);
    let weights = weights_expr(s, p, l);
    let w = weights.eval();
    let reserve = ((free as f64 * (1.0 - mfs)) as u64).min(free);
    let kv_bytes = free.saturating_sub(w).saturating_sub(reserve);
    let (per_token, _, _) = per_token(s, &p.arch, l);
    let ml = max_len(s);
    let pl = pool(kv_bytes, per_token, 1, ml);
    let kv = Expr::new(&[
        Sym("tokens", pl.tokens as u128),
        Sym("c_tok", per_token as u128),
        Mul,
    ]);
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
    let n = s
        .serving
        .max_batched_tokens
        .map_or(8192, |c| c.get() as u64);
    let weights = weights_expr(s, p, l);
    let act = forward_peak(&p.arch, n, k, l.tp as u64);
    let activation = sym("A_fwd", act);
    let non_torch = sym(
        "N_t",
        NON_TORCH_1 + if l.tp > 1 { NON_TORCH_NCCL } else { 0 },
    );
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

/// llama.cpp: the GGUF weights on the GPU, a KV cache of `n_ctx` cells, a compute buffer.
///
/// # Formula
/// ```text
/// W_gpu  = (W_gguf + 4·Ψ_r − [untied]·W_embd) / t    (token_embd stays in host memory; a tied
///                                                     head loads its copy on the GPU)
/// n_ctx  = ⌈max_len · parallel / 256⌉·256            (Ollama: -c num_ctx·OLLAMA_NUM_PARALLEL)
/// KV     = n_ctx·L_full·c_layer + n_swa·L_w·c_layer,  n_swa = ⌈min(n_ctx, W·parallel + n_ub)/256⌉·256
/// C      = 4·n_ub·(V + h)                             (the compute buffer with flash attention, the
///                                                     default on CUDA: f32 logits of a micro-batch and
///                                                     its f32 hidden state)
/// ```
/// Source: llama.cpp `llama_context` (`GGML_PAD(n_ctx, 256)`, PR #17046), `llama_kv_cache`
/// and `llama_kv_cache_iswa` (ec98e2002), `llama_model_loader` (token_embd on the CPU
/// buffer); Ollama `llm/llama_server.go` (`-c NumCtx·numParallel`).
///
/// # Example
/// Llama 3 8B Q4_K_M, max_len 8,192, parallel 1, f16 cache: W_gpu = 4,912,898,048 −
/// 295,501,824 = 4,617,396,224 B; KV = 8,192·32·4,096 = 1,073,741,824 B (1,024 MiB).
fn llamacpp(s: &Scenario, p: &Prepared, l: &Layout) -> Plan {
    let v = s.serving.version.unwrap_or(newest(Engine::Llamacpp));
    let arch = &p.arch;
    let k = s.numerics.precision.compute_bytes();
    let par = s.serving.parallel.get() as u64;
    let ml = max_len(s);
    let n_ub = s.serving.max_batched_tokens.map_or(512, |c| c.get() as u64);
    let pad = |n: u64| n.div_ceil(256).saturating_mul(256);
    let n_ctx = pad(ml.saturating_mul(par));
    let embd = if arch.tied {
        0
    } else {
        match s.numerics.quant.gguf() {
            Some(_) => quant::shares(arch, s.numerics.quant, 32).gguf_embd as u64,
            None => sat(arch.vocab as u128 * arch.hidden as u128 * k as u128),
        }
    };
    let (w, _) = crate::infer::format_weights(s, arch, p.psi);
    let weights = w.then(&[
        Sym("W_embd", embd as u128),
        Sub,
        Sym("t", l.tp as u128),
        DivCeil,
    ]);
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
    let compute = sat(4 * n_ub as u128 * (arch.vocab as u128 + arch.hidden as u128));
    let activation = sym("C", compute);
    let ctx = s.runtime.cuda_ctx_mib as u64 * MIB;
    let total = device_total(s);
    let fixed = sat(weights.eval() as u128
        + compute as u128
        + ctx as u128
        + row as u128 * windowed as u128 * swa_cells as u128);
    let used = sat(fixed as u128 + row as u128 * full as u128 * n_ctx as u128);
    let fit = total.saturating_sub(fixed) / per_token.max(1) / par.max(1) / 256 * 256;
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
        max_len: ml,
        concurrency: n_ctx as f64 / ml.max(1) as f64,
        max_len_fit: fit,
        error,
        sources: [
            "llama.cpp GGUF tensor types (llama_tensor_get_type) and ggml block sizes; token_embd in host memory",
            "llama.cpp compute buffer (graph reserve for n_ubatch tokens, flash attention): f32 logits and hidden state; equal to the logged CUDA0 compute buffer of 6 Ollama/llama.cpp runs",
            "llama.cpp: none",
            "llama.cpp: CUDA graphs inside the compute buffer",
            "llama.cpp llama_kv_cache / llama_kv_cache_iswa: cells × layers × (row(type_k) + row(type_v))",
            "the CUDA context",
        ],
    }
}
