//! EPLB's redundant experts (`redundant_experts`): vLLM's `--enable-eplb` with
//! `--num-redundant-experts` / `--eplb-config`, SGLang's `--ep-num-redundant-experts`.
//! The engine builds `E + R` physical experts per MoE layer (the `R` most loaded logical
//! experts replicated) and spreads them over the EP ranks like the logical ones, so each
//! GPU holds `(E + R)/EP` experts' weights.

use super::ExpertSplit;
use crate::model::Arch;
use crate::quant::Quant;
use crate::scenario::{eplb_model, Engine, Layout, Scenario, Version};

/// vLLM's first release with EPLB (`--enable-eplb`, `--num-redundant-experts`: not in
/// 0.9.1's `engine/arg_utils.py`, in 0.9.2's).
pub(crate) const VLLM_EPLB_FROM: Version = Version(0, 9, 2, 0);
/// vLLM's `ParallelConfig` requires `--enable-expert-parallel` (and `t·d > 1`) for EPLB
/// from 0.10.0 (`config.py`; 0.9.2 has neither check).
pub(crate) const VLLM_EPLB_NEEDS_EP: Version = Version(0, 10, 0, 0);
/// vLLM's `--eplb-config '{"num_redundant_experts": N}'` (`EPLBConfig`, 0.10.2's
/// `engine/arg_utils.py`, where `--num-redundant-experts` is "[DEPRECATED] … will be
/// removed in v0.12.0").
pub(crate) const VLLM_EPLB_CONFIG_FROM: Version = Version(0, 10, 2, 0);
/// `--num-redundant-experts` gone (not in 0.12.0's `engine/arg_utils.py`).
pub(crate) const VLLM_NUM_REDUNDANT_GONE: Version = Version(0, 12, 0, 0);
/// SGLang's `--ep-num-redundant-experts`: first in 0.4.6.post5 (`srt/server_args.py`; not
/// in 0.4.6–0.4.6.post4).
pub(crate) const SGLANG_EPLB_FROM: Version = Version(0, 4, 6, 5);

/// The redundant experts asked for: `redundant_experts` on a mixture under vLLM or SGLang
/// (0 for a dense model and the other engines, which [`Scenario::serve_problems`] names):
/// what the engine's command line and configuration checks see.
pub(crate) fn requested(s: &Scenario, arch: &Arch) -> u32 {
    match s.serving.engine {
        Engine::Vllm | Engine::Sglang if arch.experts > 0 => s.serving.redundant_experts,
        _ => 0,
    }
}

/// The redundant experts the model's layers are built with: [`requested`] where the
/// release's code for the model takes them ([`eplb_model`]), else 0 (the experts load once).
pub(crate) fn redundant(s: &Scenario, arch: &Arch) -> u32 {
    let v = super::used_release(s);
    match eplb_model(s.serving.engine, &s.model.preset, v) {
        Some(false) => 0,
        _ => requested(s, arch),
    }
}

/// How the user spells `R` redundant experts in release `v` (vLLM 0.10.2–0.11.x take
/// both spellings; the JSON one is given).
pub(crate) fn flag(e: Engine, v: Version, r: u32) -> String {
    match e {
        Engine::Sglang => format!("--ep-num-redundant-experts {r}"),
        _ if v >= VLLM_EPLB_CONFIG_FROM => {
            format!("--enable-eplb --eplb-config '{{\"num_redundant_experts\": {r}}}'")
        }
        _ => format!("--enable-eplb --num-redundant-experts {r}"),
    }
}

/// The split with `R` redundant experts added: under expert parallelism each of the `EP`
/// ranks holds `(E + R)/EP` physical experts; without it (vLLM 0.9.2, which lets EPLB run
/// without `--enable-expert-parallel`, and SGLang with `--ep-size 1`) every rank holds all
/// `E + R`, each cut `t` ways.
///
/// # Formula
/// ```text
/// E_r = ⌈(E + R)/EP⌉,  t_e as without EPLB       (expert parallelism)
/// E_r = E + R,         t_e = t                    (no expert parallelism)
/// ```
/// Source: vLLM `fused_moe/layer.py FusedMoE.__init__` (`global_num_experts =
/// num_experts + num_redundant_experts`, `determine_expert_map(ep_size, ep_rank,
/// global_num_experts)`; 0.9.2–0.33.0), SGLang `srt/managers/expert_location.py
/// _init_common` (`num_physical_experts = num_logical_experts + ep_num_redundant_experts`,
/// `num_local_physical_experts = num_physical_experts // ep_size`; 0.4.6.post5,
/// `srt/eplb/expert_location.py` 0.5.3) and `models/deepseek_v2.py` (`num_experts =
/// n_routed_experts + ep_num_redundant_experts`).
///
/// # Example
/// DeepSeek-V3 (256 routed experts), R = 32, EP = 8: E_r = 288/8 = 36 experts per MoE
/// layer on each GPU (32 without EPLB).
pub(crate) fn with_redundant(
    split: Option<ExpertSplit>,
    arch: &Arch,
    l: &Layout,
    r: u32,
) -> Option<ExpertSplit> {
    if r == 0 || arch.experts == 0 {
        return split;
    }
    let physical = arch.experts.saturating_add(r);
    Some(match split {
        Some(x) => ExpertSplit {
            local: match x.ranks {
                0 => physical,
                n => physical.div_ceil(n),
            },
            ..x
        },
        None => ExpertSplit {
            ranks: 1,
            expert_tp: l.tp,
            local: physical,
        },
    })
}

/// What the engine says to `R > 0` redundant experts it cannot run, in its own words and
/// in the order it meets them: the flags unknown to the release (argparse), vLLM's
/// `ParallelConfig` (EP off, one GPU), the physical experts that the EP ranks do not
/// divide (vLLM's and SGLang's asserts), vLLM's weight formats without EPLB.
///
/// Source: CPython `argparse` ("unrecognized arguments: %s"); vLLM `config.py` /
/// `config/parallel.py ParallelConfig.__post_init__` ("enable_expert_parallel must be True
/// to use EPLB.", "EPLB requires tensor_parallel_size or data_parallel_size to be greater
/// than 1, but got TP=…,DP=…."; 0.10.0–0.33.0), `fused_moe/layer.py FusedMoE.__init__`
/// ("EPLB currently only supports even distribution of experts across ranks."); SGLang
/// `expert_location.py _init_common` (`assert num_physical_experts % ep_size == 0`).
pub(crate) fn refusal(s: &Scenario, arch: &Arch, l: &Layout, v: Version) -> Option<String> {
    let r = requested(s, arch);
    if r == 0 {
        return None;
    }
    // The model's own layers (the physical experts' asserts, the formats) only where its
    // code takes the replicas.
    let built = redundant(s, arch) > 0;
    let e = s.serving.engine;
    let physical = arch.experts.saturating_add(r);
    let ep = s.parallel.ep.get();
    if e == Engine::Sglang {
        if v < SGLANG_EPLB_FROM {
            return Some(format!("unrecognized arguments: {}", flag(e, v, r)));
        }
        return (built && ep > 1 && !physical.is_multiple_of(ep)).then(|| {
            format!("AssertionError (srt/managers/expert_location.py: `assert num_physical_experts % ep_size == 0`; {} logical + {r} redundant = {physical} experts, ep_size {ep})", arch.experts)
        });
    }
    if v < VLLM_EPLB_FROM {
        return Some(format!("unrecognized arguments: {}", flag(e, v, r)));
    }
    let td = l.tp.get().saturating_mul(l.dp.get());
    let ep_on = ep > 1 && td > 1;
    if v >= VLLM_EPLB_NEEDS_EP {
        if ep <= 1 {
            return Some("enable_expert_parallel must be True to use EPLB.".into());
        }
        if td <= 1 {
            return Some(format!("EPLB requires tensor_parallel_size or data_parallel_size to be greater than 1, but got TP={},DP={}.", l.tp, l.dp));
        }
    }
    if !built {
        return None;
    }
    if ep_on && !physical.is_multiple_of(td) {
        return Some(
            "AssertionError: EPLB currently only supports even distribution of experts across ranks."
                .into(),
        );
    }
    vllm_format_refusal(s, v)
}

/// vLLM's weight formats without EPLB: FP8 alone in 0.9.2, FP8 and unquantised in
/// 0.10.0–0.11.x, from 0.12.0 each MoE method's `supports_eplb` (memfit refuses there only
/// MXFP4, whose gpt-oss method never has it; the other formats map to several methods,
/// some with it).
///
/// Source: vLLM `fused_moe/layer.py FusedMoE.__init__` (`isinstance(quant_method,
/// Fp8MoEMethod)` 0.9.2, `(Fp8MoEMethod, UnquantizedFusedMoEMethod)` 0.10.0–0.11.0: "EPLB is
/// only supported for FP8 quantization for now."; 0.12.0 "EPLB is not supported {class}.
/// EPLB is only supported for FP8 quantization for now."; 0.19.0 "EPLB is not supported
/// {class}.", the same in 0.33.0's `routed_experts.py`; 0.13–0.18 not read, given 0.19's
/// words), `quantization/mxfp4.py` (`Mxfp4MoEMethod`, `GptOssMxfp4MoEMethod` from 0.20.0;
/// only `Mxfp4MoEMethod.supports_eplb`, from 0.24.0).
fn vllm_format_refusal(s: &Scenario, v: Version) -> Option<String> {
    let q = s.numerics.quant;
    let old = "EPLB is only supported for FP8 quantization for now.";
    if v < VLLM_NUM_REDUNDANT_GONE {
        let ok = q == Quant::Fp8 || (q == Quant::None && v >= VLLM_EPLB_NEEDS_EP);
        return (!ok).then(|| format!("NotImplementedError: {old}"));
    }
    if q != Quant::Mxfp4 {
        return None;
    }
    let gpt_oss = s.model.preset.starts_with("gpt-oss") && v >= Version(0, 20, 0, 0);
    if !gpt_oss && v >= Version(0, 24, 0, 0) {
        return None;
    }
    let class = if gpt_oss {
        "GptOssMxfp4MoEMethod"
    } else {
        "Mxfp4MoEMethod"
    };
    Some(if v < Version(0, 13, 0, 0) {
        format!("NotImplementedError: EPLB is not supported {class}. {old}")
    } else {
        format!("NotImplementedError: EPLB is not supported {class}.")
    })
}
