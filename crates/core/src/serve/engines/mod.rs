//! The four engines' start-up programs.

mod llamacpp;
mod sglang;
mod trtllm;
mod vllm;

use super::kv::{layer_row, stage_layers, KvFormat};
use super::{model_context, sym, Plan};
use crate::expr::{Expr, Tok::*};
use crate::model::Arch;
use crate::quant;
use crate::resolved::Prepared;
use crate::scenario::{Engine, Layout, Scenario, Version};
use crate::units::{GIB, MIB};
#[cfg(test)]
pub(crate) use vllm::{vllm_too_long, vllm_v0_too_long, VllmEra};

/// The newest release memfit models per engine (what an empty `engine_version` means;
/// declared with the modelled range, [`Engine::modelled`]).
pub fn newest(e: Engine) -> Version {
    e.newest()
}

/// The release whose rules apply ([`Scenario::engine_release`]: inside the modelled range).
pub(crate) fn used_release(s: &Scenario) -> Version {
    s.engine_release().unwrap_or_else(|(_, used)| used)
}

/// Python's `str(round(x, 2))` of `b` bytes in GiB (`58.7`, `3.0`, `12.34`): how vLLM
/// prints GiB (`format_gib`, and the `GiB` lambdas before it).
pub(crate) fn py_gib(b: u64) -> String {
    let x = b as f64 / GIB as f64;
    let r = (x * 100.0).round() / 100.0;
    let t = format!("{r:.2}");
    let t = t.trim_end_matches('0');
    if t.ends_with('.') {
        format!("{t}0")
    } else {
        t.to_string()
    }
}

/// Python's `repr` of a list of strings, `['auto', 'fp8']`, or argparse's `'auto', 'fp8'`
/// (`', '.join(map(repr, choices))`, CPython 3.9–3.13.0 `ArgumentParser._check_value`).
pub(crate) fn py_strs(items: &[&str]) -> String {
    items
        .iter()
        .map(|c| format!("'{c}'"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The device total the engine sees (`cudaMemGetInfo`), bytes ([`Scenario::cuda_total`]).
pub(crate) fn device_total(s: &Scenario) -> u64 {
    s.cuda_total()
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
        Engine::Vllm => vllm::plan(s, p, l),
        Engine::Sglang => sglang::plan(s, p, l),
        Engine::Trtllm => trtllm::plan(s, p, l),
        Engine::Llamacpp => llamacpp::plan(s, p, l),
    }
}

const SRC_WEIGHTS: &str = "the format's layout (quant), ÷ t·p; vLLM adds the rotary cos/sin cache";

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
