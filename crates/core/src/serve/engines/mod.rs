//! The four engines' start-up programs.

mod eplb;
mod hybrid;
mod llamacpp;
mod llamacpp_fit;
#[cfg(test)]
pub(crate) use llamacpp::plan_with as llamacpp_plan_with;
pub(crate) use llamacpp_fit::FIT_MARGIN;
mod llamacpp_offload;
mod llamacpp_pipeline;
pub(crate) mod ollama_layout;
mod sglang;
mod sglang_args;
mod trtllm;
pub(crate) mod vllm;
mod vllm_checks;

use super::kv::{layer_row, stage_layers, KvFormat};
use super::{sym, Plan};
use crate::expr::{Expr, Tok::*};
use crate::model::Arch;
use crate::quant;
use crate::resolved::Prepared;
use crate::scenario::{count, Count, Engine, Layout, Scenario, Version};
use crate::units::{GIB, MIB};
#[cfg(test)]
pub(crate) use vllm::VllmEra;
#[cfg(test)]
pub(crate) use vllm_checks::{vllm_too_long, vllm_v0_too_long};

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

/// Weights larger than the memory free before they load: the launch fails in torch's
/// allocator while they load, before any of the engine's own checks (its message there is
/// torch's; the figures are memfit's). `None` when they fit.
///
/// ```text
/// W > F  →  "torch.OutOfMemoryError: CUDA out of memory while the weights load (W GiB …, F GiB free)"
/// ```
pub(crate) fn load_oom(weights: u64, free: u64) -> Option<String> {
    (weights > free).then(|| {
        format!(
            "torch.OutOfMemoryError: CUDA out of memory while the weights load ({} GiB on this rank, {} GiB free)",
            py_gib(weights),
            py_gib(free)
        )
    })
}

/// The weights on one rank: the format's bytes (see [`quant::weights_expr`]) over
/// `t·p` ranks.
///
/// # Formula
/// `W = ⌈W_format / (t·p)⌉`
pub fn weights_expr(s: &Scenario, p: &Prepared, l: &Layout) -> Expr {
    let (w, _) = crate::infer::format_weights(s, &p.arch, p.psi);
    w.then(&[
        Sym("t", l.tp.get() as u128),
        Sym("p", l.pp.get() as u128),
        Mul,
        DivCeil,
    ])
}

/// Expert parallelism as the engine applies it: the routed experts spread over `ranks`
/// GPUs, each expert cut `expert_tp` ways inside its rank, `local` experts (per MoE layer)
/// on the most loaded rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ExpertSplit {
    /// EP ranks the routed experts are spread over.
    pub ranks: u32,
    /// Tensor parallelism of one expert inside its rank.
    pub expert_tp: Count,
    /// Routed experts per MoE layer on the most loaded rank.
    pub local: u32,
}

pub(crate) use crate::scenario::VLLM_EP_FROM;
/// vLLM's even split of a remainder (the first `E mod EP` ranks take one more); before it,
/// the last rank took every expert left over.
pub(crate) const VLLM_EP_EVEN_FROM: Version = Version(0, 10, 1, 0);
/// SGLang's `--ep-size` first release (not in 0.4.0's `server_args.py`).
pub(crate) const SGLANG_EP_FROM: Version = Version(0, 4, 1, 0);

/// How release `v` of the engine spreads the routed experts when `ep > 1` on a mixture
/// (`None`: no expert parallelism, every rank holds every expert ÷ TP).
///
/// # Formula
/// ```text
/// vLLM (--enable-expert-parallel, 0.8.0+):  EP = t·d,  t_e = 1,
///     E_r = ⌈E/EP⌉ (0.10.1+)   or   E − (EP−1)·⌊E/EP⌋ (0.8.0–0.10.0: the last rank takes the rest)
/// SGLang (--ep-size ep, 0.4.1+; --tp t·d with --enable-dp-attention --dp d):
///     EP = ep,  t_e = t·d/ep,  E_r = E/ep
/// ```
/// vLLM ignores the value of `ep`: `--enable-expert-parallel` spreads the experts over
/// every DP × TP rank; with `t·d = 1` it does nothing.
///
/// Source: vLLM `model_executor/layers/fused_moe/layer.py` (`FusedMoE.__init__`:
/// `ep_size = tp_size · dp_size`, `determine_expert_map`: "Any remaining are assigned to
/// the last rank" 0.8.0–0.10.0, `base_experts + 1 if ep_rank < remainder` 0.10.1–0.19)
/// and `fused_moe/config.py FusedMoEParallelConfig.make` (0.9.2–0.33.0, `ep_size =
/// tp_size` after `flatten_tp_across_dp`; sdists 0.8.0, 0.8.5, 0.9.2, 0.10.0, 0.10.1,
/// 0.10.2, 0.11.0, 0.12.0, 0.19.0, 0.33.0); SGLang
/// `srt/layers/moe/fused_moe_triton/layer.py` (`assert num_experts % self.moe_ep_size ==
/// 0`, `num_local_experts = num_experts // moe_ep_size`, `intermediate_size //
/// moe_tp_size`; sgl-project/sglang 008d7d0e), `srt/server_args.py` (`--ep-size` from
/// 0.4.1, sdists 0.4.0–0.5.3).
///
/// # Example
/// DeepSeek-V3 (256 experts), vLLM 0.10.1, t = 1, d = 8: EP = 8, 32 experts per layer on
/// each GPU; 0.10.0 with t·d = 6: the last rank holds 256 − 5·42 = 46.
pub(crate) fn expert_split(
    s: &Scenario,
    arch: &Arch,
    l: &Layout,
    v: Version,
) -> Option<ExpertSplit> {
    let ep = s.parallel.ep.get();
    let e = arch.experts;
    if e == 0 || ep <= 1 {
        return None;
    }
    match s.serving.engine {
        Engine::Vllm => {
            let ranks = l.tp.get().saturating_mul(l.dp.get());
            if v < VLLM_EP_FROM || ranks <= 1 {
                return None;
            }
            let local = if v >= VLLM_EP_EVEN_FROM {
                e.div_ceil(ranks)
            } else {
                e - (ranks - 1).saturating_mul(e / ranks).min(e)
            };
            Some(ExpertSplit {
                ranks,
                expert_tp: Count::MIN,
                local,
            })
        }
        Engine::Sglang => {
            let tp = l.tp.get().saturating_mul(l.dp.get());
            let physical = e.saturating_add(eplb::redundant(s, arch));
            if v < SGLANG_EP_FROM || !tp.is_multiple_of(ep) || !physical.is_multiple_of(ep) {
                return None;
            }
            Some(ExpertSplit {
                ranks: ep,
                // `tp` is a multiple of `ep` (checked above): the quotient is ≥ 1.
                expert_tp: crate::scenario::at_least_one(tp / ep),
                local: e / ep,
            })
        }
        Engine::Trtllm | Engine::Llamacpp => None,
    }
}

/// Where the start-up puts the routed experts (`serve.experts`): [`expert_split`] with
/// EPLB's redundant replicas ([`eplb::with_redundant`]); `None` where every GPU of a DP rank
/// holds its TP share of every expert (no expert parallelism, no EPLB, or not a mixture).
///
/// # Formula
/// ```text
/// E_r = ⌈(E + R) / EP⌉   (vLLM ≥ 0.10.1, SGLang; vLLM before: the last rank takes E − (EP−1)·⌊E/EP⌋)
/// ```
/// `E` routed experts per MoE layer, `R` redundant replicas, `EP` the ranks (vLLM `t·d`,
/// SGLang `ep`). Source: vLLM `fused_moe/layer.py` (`determine_expert_map`), SGLang
/// `fused_moe_triton/layer.py` (`num_local_experts = num_experts // moe_ep_size`).
///
/// # Example
/// DeepSeek-V3 (E = 256), vLLM 0.10.1, TP 1 × DP 8 with `ep=8`: EP 8, E_r = 32 experts per
/// MoE layer on each GPU; with `redundant_experts=32`, E_r = 288/8 = 36.
pub fn expert_placement(s: &Scenario, p: &Prepared, l: &Layout) -> Option<crate::serve::Experts> {
    let split = expert_split(s, &p.arch, l, used_release(s));
    let r = eplb::redundant(s, &p.arch);
    eplb::with_redundant(split, &p.arch, l, r).map(|x| crate::serve::Experts {
        routed: p.arch.experts,
        redundant: r,
        ep_ranks: x.ranks,
        per_rank: x.local,
        expert_tp: x.expert_tp.get(),
    })
}

/// What the engine says to `ep > 1` on a mixture that it cannot run: the flag unknown to
/// the release (argparse's "unrecognized arguments"), or SGLang's checks of the EP size
/// against its TP size (`t·d` with DP attention) and the experts.
///
/// Source: CPython `argparse.ArgumentParser.parse_args` ("unrecognized arguments: %s");
/// vLLM `engine/arg_utils.py` (no `--enable-expert-parallel` in 0.7.3); SGLang
/// `srt/server_args.py` (no `--ep-size` in 0.4.0), its model config's block-quantisation
/// check ("tp_size … must be divisible by ep_size …") and
/// `fused_moe_triton/layer.py` (`assert num_experts % self.moe_ep_size == 0`).
///
/// With `redundant_experts` the EPLB checks follow ([`eplb::refusal`]); SGLang's
/// physical experts `E + R` are checked against `ep` there.
pub(crate) fn expert_refusal(s: &Scenario, arch: &Arch, l: &Layout, v: Version) -> Option<String> {
    ep_refusal(s, arch, l, v).or_else(|| eplb::refusal(s, arch, l, v))
}

/// [`expert_refusal`] without EPLB.
fn ep_refusal(s: &Scenario, arch: &Arch, l: &Layout, v: Version) -> Option<String> {
    let ep = s.parallel.ep.get();
    let e = arch.experts;
    if e == 0 || ep <= 1 {
        return None;
    }
    match s.serving.engine {
        Engine::Vllm if v < VLLM_EP_FROM => {
            Some("unrecognized arguments: --enable-expert-parallel".to_string())
        }
        Engine::Sglang if v < SGLANG_EP_FROM => {
            Some(format!("unrecognized arguments: --ep-size {ep}"))
        }
        Engine::Sglang => {
            let tp = l.tp.get().saturating_mul(l.dp.get());
            if !tp.is_multiple_of(ep) {
                Some(format!("tp_size {tp} must be divisible by ep_size {ep}"))
            } else if !e.is_multiple_of(ep) && eplb::redundant(s, arch) == 0 {
                Some(format!("AssertionError (srt/layers/moe/fused_moe_triton/layer.py: `assert num_experts % self.moe_ep_size == 0`; {e} experts, ep_size {ep})"))
            } else {
                None
            }
        }
        _ => None,
    }
}

/// Bytes of the routed experts in the weights' format (what EP divides): the format's
/// layout of the routed tensors alone (their share of `Ψ_q`, `M`, `R`, `G`, `B`), or for an
/// unquantised or group-quantised checkpoint the routed parameters' share of the bytes.
///
/// # Formula
/// ```text
/// W_e = layout(shares(E_2) − shares(E)) with Ψ_r = 0     (E_2 = 2E: what doubling the experts adds)
/// W_e = ⌊W·Ψ_e/Ψ⌋                                     (quant=none, int8g, int4g)
/// ```
/// The routers (`h × E`, kept in the compute dtype) stay with the replicated rest.
///
/// # Example
/// DeepSeek-V3 in fp8: Ψ_e = 58·256·3·7,168·2,048 = 653,908,770,816 and M = 58·256·3 =
/// 44,544 scales of 4 B: W_e = 653,908,948,992 B.
pub(crate) fn routed_bytes(s: &Scenario, p: &Prepared) -> u64 {
    let arch = &p.arch;
    if arch.experts == 0 {
        return 0;
    }
    let q = s.numerics.quant;
    match q {
        quant::Quant::None | quant::Quant::Int8G | quant::Quant::Int4G => {
            let (w, _) = crate::infer::format_weights(s, arch, p.psi);
            // `Ψ` is a plain count (an explicit `params=` is ≥ 1 by the keys); the guard keeps a 0 finite.
            let psi = p.psi.max(1) as u128;
            sat(w.eval() as u128 * arch.routed_expert_params().min(p.psi) as u128 / psi)
        }
        _ => {
            let g = s.numerics.quant_group;
            let one = quant::shares(arch, q, g);
            let mut doubled = arch.clone();
            doubled.experts = arch.experts.saturating_mul(2);
            let two = quant::shares(&doubled, q, g);
            let routed = quant::Shares {
                elements: two.elements - one.elements,
                matrices: two.matrices - one.matrices,
                rows: two.rows - one.rows,
                groups: two.groups - one.groups,
                blocks: two.blocks - one.blocks,
                gguf_bytes: two.gguf_bytes.saturating_sub(one.gguf_bytes),
                gguf_embd: 0,
                gguf_mix: Vec::new(),
                rest: 0,
            };
            let k = s.numerics.precision.compute_bytes();
            quant::weights_expr(q, &routed, k, s.double_quant()).eval()
        }
    }
}

/// The weights on one rank: [`weights_expr`] without expert parallelism; with it, the
/// replicated rest over the rank's `t·p` and the routed experts of the most loaded EP
/// rank over `t_e·p`.
///
/// # Formula
/// ```text
/// W = ⌈W_o / (t·p)⌉ + ⌈W_e·E_r / (E·t_e·p)⌉ [+ (⌈V_t/t⌉ + V_r)·k],   W_o = W_format − W_e
/// ```
/// The bracket: the vision encoder a multimodal checkpoint carries ([`vision_bytes`]).
/// `W_o` attention, embeddings, head, dense layers, shared experts, routers and norms,
/// replicated on every DP rank (÷ TP inside it); `W_e` the routed experts
/// ([`routed_bytes`]), `E_r`, `t_e` from [`expert_split`]; with EPLB's `R` redundant
/// experts `E_r = ⌈(E + R)/EP⌉` ([`eplb::with_redundant`]: `W_e/E` is one logical expert's
/// bytes, and a replica weighs as much).
///
/// # Example
/// DeepSeek-V3 fp8, vLLM, t = 1, d = 8: W_format = 672,987,379,616, W_e =
/// 653,908,948,992, so W_o = 19,078,430,624 and W = W_o + W_e·32/256 = 100,817,049,248 B
/// (93.9 GiB, against 626.8 GiB without EP). With 32 redundant experts: E_r = 288/8 = 36,
/// W = W_o + W_e·36/256 = 111,034,376,576 B (103.4 GiB).
pub(crate) fn serve_weights(
    s: &Scenario,
    p: &Prepared,
    l: &Layout,
    split: Option<ExpertSplit>,
) -> Expr {
    let text = text_weights(s, p, l, split);
    match vision_bytes(s, l) {
        Some(toks) => text.then(&toks),
        None => text,
    }
}

/// The vision encoder and projector of a preset whose published checkpoints are
/// multimodal (Gemma 3 4B–27B, Llama 4, Mistral Small 3.1: `model::vision_tower`), as tokens to add to the
/// weights: vLLM and SGLang load them with the language model, unquantized (the
/// quantized checkpoints leave the vision tower in 16 bits) and split over `t` in their
/// parallel linear layers. Counted on every pipeline stage (the first holds it: an upper
/// bound for the others). `None` for a text model, custom shapes without `vision`, or
/// `vision=0` ([`Scenario::vision`]).
///
/// # Formula
/// ```text
/// W_vis = (⌈V_t/t⌉ + V_r)·k        k = the compute dtype's bytes
/// ```
/// # Example
/// Gemma 3 27B (h = 5,376), bf16, t = 1: (411,279,984 + 5,586,048 + 6,194,304)·2 =
/// 846,120,672 B (0.79 GiB); vLLM 0.19's log for `google/gemma-3-27b-it` on an H100 loads
/// 51.45 GiB against the text decoder's 50.34.
fn vision_bytes(s: &Scenario, l: &Layout) -> Option<[crate::expr::Tok; 8]> {
    // SGLang from 0.4.6 runs Llama 4 with multimodal off and builds no vision model
    // (`models/mllama4.py`: `has_vision = has_vision_weights and enable_multimodal`); its
    // Gemma 3 builds the encoder whatever the setting (`gemma3_mm.py`).
    let sglang_text_only = s.serving.engine == Engine::Sglang
        && s.model.preset.starts_with("llama-4")
        && s.model.vision.is_none()
        && used_release(s) >= Version(0, 4, 6, 0);
    if sglang_text_only {
        return None;
    }
    let v = s.vision()?;
    let k = s.numerics.precision.compute_bytes();
    Some([
        Sym("V_t", v.sharded as u128),
        Sym("t", l.tp.get() as u128),
        DivCeil,
        Sym("V_r", v.replicated as u128),
        Add,
        Sym("k", k as u128),
        Mul,
        Add,
    ])
}

/// [`serve_weights`] without the vision encoder.
fn text_weights(s: &Scenario, p: &Prepared, l: &Layout, split: Option<ExpertSplit>) -> Expr {
    let split = eplb::with_redundant(split, &p.arch, l, eplb::redundant(s, &p.arch));
    let Some(x) = split else {
        return weights_expr(s, p, l);
    };
    let all = weights_expr(
        s,
        p,
        &Layout {
            tp: Count::MIN,
            pp: Count::MIN,
            ..*l
        },
    )
    .eval();
    let we = routed_bytes(s, p).min(all);
    Expr::new(&[
        Sym("W_o", (all - we) as u128),
        Sym("t", l.tp.get() as u128),
        Sym("p", l.pp.get() as u128),
        Mul,
        DivCeil,
        Sym("W_e", we as u128),
        Sym("E_r", x.local as u128),
        Mul,
        Sym("E", p.arch.experts as u128),
        Sym("t_e", x.expert_tp.get() as u128),
        Mul,
        Sym("p", l.pp.get() as u128),
        Mul,
        DivCeil,
        Add,
    ])
}

/// The context a request may use: `max_len`, else the model's, else `seq + gen`.
fn max_len(s: &Scenario) -> u64 {
    s.serve_max_len()
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
pub(crate) fn forward_peak(arch: &Arch, n: u64, k: u64, t: Count) -> u64 {
    forward_peak_ep(arch, n, k, t, t)
}

/// [`forward_peak`] with the routed experts cut `t_e` ways instead of `t` (expert
/// parallelism keeps each expert whole on its rank: `t_e = 1` under vLLM's EP).
///
/// # Formula
/// `A_fwd = n·k·(2h + max(((a + 2a_kv)·d + a·d)/t,  top_k·m'·f_e/t_e + top_k·h))` (MoE)
///
/// # Example
/// Qwen3-30B-A3B (h = 2,048, a = 32, a_kv = 4, d = 128, f_e = 768, top-8), n = 8,192, bf16,
/// t = 2, t_e = 1: 8,192·2·(4,096 + 8·3·768 + 8·2,048) = 637,534,208 B.
pub(crate) fn forward_peak_ep(arch: &Arch, n: u64, k: u64, t: Count, te: Count) -> u64 {
    let (h, a, kv, d) = (
        arch.hidden.get() as u128,
        arch.heads.get() as u128,
        arch.kv_heads.get() as u128,
        arch.head_dim.get() as u128,
    );
    let (n, k, t) = (n as u128, k as u128, t.get() as u128);
    let attn = ((a + 2 * kv) * d + a * d) / t;
    let m = if arch.mlp == crate::model::Mlp::Swiglu {
        3
    } else {
        2
    };
    let mlp = if arch.experts > 0 {
        let tk = arch.routed_k().get() as u128;
        tk * m * arch.expert_ffn() as u128 / te.get() as u128 + tk * h
    } else {
        m * arch.ffn.get() as u128 / t
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
pub(crate) fn mxfp4_padding(s: &Scenario, arch: &Arch, t: Count) -> u64 {
    if s.numerics.quant != crate::quant::Quant::Mxfp4 || arch.experts == 0 {
        return 0;
    }
    let f = arch.expert_ffn() as u128 / t.get() as u128;
    let pad = f.div_ceil(256) * 256 - f;
    let layers =
        (arch.layers.get() as u128).saturating_sub(arch.first_dense.min(arch.layers.get()) as u128);
    sat(layers * arch.experts as u128 * 3 * arch.hidden.get() as u128 * pad * 17 / 32)
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
pub(crate) fn moe_workspace(arch: &Arch, n: u64, k: u64, t: Count) -> u64 {
    if arch.experts == 0 {
        return 0;
    }
    let f = arch.expert_ffn() as u128 / t.get() as u128;
    let h = arch.hidden.get() as u128;
    sat(n as u128 * k as u128 * arch.routed_k().get() as u128 * ((2 * f).max(h) + f))
}

/// Shared tail of the paged engines: blocks, tokens, concurrency, the longest request.
struct Pool {
    blocks: u64,
    tokens: u64,
    concurrency: f64,
    fit: u64,
}

fn pool(kv_bytes: u64, per_token: u64, block: Count, max_len: u64) -> Pool {
    let block = block.get() as u64;
    // An attention-free model keeps no K/V a token (`per_token = 0`): a page of 1 byte.
    let page = per_token.max(1) as u128 * block as u128;
    let blocks = sat(kv_bytes as u128 / page);
    let tokens = sat(blocks as u128 * block as u128);
    // A request needs at least one block (`max_len ≥ 1` from the keys or the model's context;
    // the guard keeps a 0 finite).
    let need = max_len.div_ceil(block).max(1);
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

/// Every engine's plan, with its notes: [`Scenario::serve_problems`] and, under an Ollama
/// release, [`Scenario::ollama_problems`] (written here so the page's first module, which
/// reads them from the plan's line, carries none of their wording).
pub(crate) fn plan(s: &Scenario, p: &Prepared, l: &Layout) -> Plan {
    let mut pl = match s.serving.engine {
        Engine::Vllm => vllm::plan(s, p, l),
        Engine::Sglang => sglang::plan(s, p, l),
        Engine::Trtllm => trtllm::plan(s, p, l),
        Engine::Llamacpp => {
            // Ollama runs an f16 cache where it does not take the type asked for.
            let f16 = s.ollama_kv_fallback(s.llamacpp_flash(&p.arch)).map(|_| {
                let mut t = s.clone();
                t.numerics.kv_dtype = crate::scenario::Dtype::Fp16;
                t
            });
            let s = f16.as_ref().unwrap_or(s);
            let pl = llamacpp_fit::plan(s, p, l, s.llamacpp_build());
            match ollama_layout::applies(s) {
                // Ollama 0.30+ starts llama-server with `-c` and no `-ngl`: where its fit
                // changes the launch, that launch.
                true if ollama_layout::runs_llama_server(s) => {
                    let t = ollama_layout::llama_server_launch(s);
                    let fitted = llamacpp_fit::plan(&t, p, l, t.llamacpp_build());
                    if fitted.fit.is_some() {
                        fitted
                    } else {
                        pl
                    }
                }
                true => ollama_layout::plan(s, p, l, pl),
                false => pl,
            }
        }
    };
    let mut notes = s.serve_problems(&s.arch());
    s.ollama_problems(&p.arch, &mut notes);
    pl.notes = notes
        .iter()
        .map(|(k, m)| format!("{k}\u{1d}{m}"))
        .collect::<Vec<_>>()
        .join("\u{1e}");
    pl
}

const SRC_WEIGHTS: &str = "the format's layout (quant), ÷ t·p; vLLM adds the rotary cos/sin cache";
const SRC_WEIGHTS_EP: &str = "expert parallelism: the routed experts of the most loaded EP rank (vLLM fused_moe/layer.py determine_expert_map, EP = TP·DP; SGLang fused_moe_triton/layer.py, --ep-size), the rest ÷ t·p on every DP rank";

/// An engine's item sources, with the weights' naming expert parallelism where the routed
/// experts are split over EP ranks.
pub(super) fn ep_sources(base: [&'static str; 6], split: bool) -> [&'static str; 6] {
    let mut out = base;
    if split {
        out[0] = SRC_WEIGHTS_EP;
    }
    out
}

const SRC_WEIGHTS_EPLB: &str = "EPLB: E + R physical experts (R redundant replicas), ⌈(E + R)/EP⌉ on each EP rank (vLLM fused_moe/layer.py FusedMoE: global_num_experts = num_experts + num_redundant_experts; SGLang expert_location.py: num_physical_experts // ep_size), the rest ÷ t·p on every DP rank";

/// [`ep_sources`], naming EPLB's redundant experts where they are counted.
pub(super) fn eplb_sources(
    base: [&'static str; 6],
    s: &Scenario,
    arch: &Arch,
    split: bool,
) -> [&'static str; 6] {
    let mut out = ep_sources(base, split);
    if eplb::redundant(s, arch) > 0 {
        out[0] = SRC_WEIGHTS_EPLB;
    }
    out
}

/// Bytes per logit the sampler's dummy pass holds at its peak on the Triton kernel's and
/// FlashInfer's paths (and V0's sampler): the calibration logs' torch peak increase over
/// `max_num_seqs · V` is 15.0–16.2 B (vLLM 0.19). See `vllm::sampler_bytes`.
const SAMPLER_BYTES: u64 = 16;
/// The same on PyTorch's sort path (`apply_top_k_top_p`'s `logits.sort`): 28 B read in
/// the code before the sort's own buffers; 36 B calibrated on one log (see
/// `vllm::sampler_bytes`).
const SAMPLER_SORT_BYTES: u64 = 36;
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
