//! EPLB's redundant experts (`redundant_experts`, issue 38): the physical experts each EP
//! rank holds, and the engines' refusals in their own words (read in vLLM's and SGLang's
//! sdists: see `engines/eplb.rs`).

use super::tests::plan;
use crate::contract::query::decode;

const V3: &str = "mode=serve&model=deepseek-v3&quant=fp8&gpu=h200&gpus_per_node=8";

/// The refusal for `q`, or `None`.
fn error(q: &str) -> Option<String> {
    plan(q).error
}

/// DeepSeek-V3 FP8, vLLM 0.10.1, TP 1 × DP 8 with EP and 32 redundant experts
/// (`--enable-eplb --num-redundant-experts 32`): 256 + 32 = 288 physical experts per MoE
/// layer over 8 ranks, 36 on each GPU, 4 more than without EPLB. By hand from the
/// expert shapes: one routed expert of one layer is 3 matrices of 7,168 × 2,048 fp8
/// bytes, each with one fp32 scale (quant=fp8: per-tensor scales), over 58 MoE layers.
#[test]
fn vllm_deepseek_v3_redundant_experts_by_hand() {
    let q = format!("{V3}&engine=vllm&engine_version=0.10.1&tp=1&dp=8&ep=8");
    let expert = 3 * 7168 * 2048 + 3 * 4_u64;
    assert_eq!(expert, 44_040_204);
    let per_gpu = |experts: u64| 58 * experts * expert;
    let p0 = plan(&q);
    let p = plan(&format!("{q}&redundant_experts=32"));
    assert!(p.error.is_none(), "{:?}", p.error);
    // The replicated rest (attention, dense layers, shared expert, embedding, head) is
    // the same; the routed part goes from 32 to 36 experts per layer.
    let rest = p0.weights.eval() - per_gpu(32);
    assert_eq!(p.weights.eval(), rest + per_gpu(36));
    assert_eq!(p.weights.eval() - p0.weights.eval(), 58 * 4 * 44_040_204);
    assert_eq!(p.weights.eval(), 111_034_376_576); // 103.4 GiB (93.9 without EPLB)
                                                   // The pool shrinks by what the replicas take (same activation and NCCL).
    assert_eq!(p.activation.eval(), p0.activation.eval());
    assert!(p.kv.eval() < p0.kv.eval());
    assert!(p.sources[0].contains("EPLB"));
    // The same plan with 0.12.0's spelling (--eplb-config) and SGLang's --ep-num-redundant-experts.
    let new = plan(&format!(
        "{V3}&engine=vllm&engine_version=0.12.0&tp=1&dp=8&ep=8&redundant_experts=32"
    ));
    assert_eq!(new.weights.eval(), 111_034_376_576);
    let sg = plan(&format!(
        "{V3}&engine=sglang&engine_version=0.5.3&tp=1&dp=8&ep=8&redundant_experts=32&max_len=32768"
    ));
    assert_eq!(sg.weights.eval(), 111_034_376_576);
    assert!(sg.error.is_none(), "{:?}", sg.error);
}

/// vLLM's refusals, release by release: the flags before 0.9.2, EP off and one GPU from
/// 0.10.0 (`ParallelConfig`), 288 − 2 = 286 experts over 8 ranks (the FusedMoE assert),
/// and the weight formats without EPLB.
#[test]
fn vllm_eplb_refusals() {
    let ep = format!("{V3}&engine=vllm&tp=1&dp=8&ep=8");
    assert_eq!(
        error(&format!("{ep}&engine_version=0.9.1&redundant_experts=32")).as_deref(),
        Some("unrecognized arguments: --enable-eplb --num-redundant-experts 32")
    );
    assert_eq!(
        error(&format!(
            "{V3}&engine=vllm&engine_version=0.10.1&tp=8&redundant_experts=32"
        ))
        .as_deref(),
        Some("enable_expert_parallel must be True to use EPLB.")
    );
    assert_eq!(
        error(&format!("{ep}&engine_version=0.10.1&redundant_experts=30")).as_deref(),
        Some("AssertionError: EPLB currently only supports even distribution of experts across ranks.")
    );
    // 0.9.2 lets EPLB run without EP: every rank holds all 288 experts ÷ TP 8.
    let tp8 = format!("{V3}&engine=vllm&engine_version=0.9.2&tp=8");
    let (p0, p) = (plan(&tp8), plan(&format!("{tp8}&redundant_experts=32")));
    assert_eq!(
        p.weights.eval() - p0.weights.eval(),
        58 * 32 * 44_040_204 / 8
    );
    assert!(p.error.is_none() || !p.error.unwrap().contains("EPLB"));
    // Formats: 0.9.2 FP8 alone; 0.10.x FP8 and unquantised; bf16 passes from 0.10.0.
    let lite = "mode=serve&model=deepseek-v2-lite&engine=vllm&gpu=h100-80&gpus_per_node=2&tp=2&ep=2&max_len=8192&redundant_experts=16";
    assert_eq!(
        error(&format!("{lite}&engine_version=0.9.2")).as_deref(),
        Some("NotImplementedError: EPLB is only supported for FP8 quantization for now.")
    );
    assert_eq!(error(&format!("{lite}&engine_version=0.10.1")), None);
    let bf16 = "mode=serve&model=qwen3-30b-a3b&engine=vllm&gpu=h100-80&gpus_per_node=2&tp=2&ep=2&max_len=8192&redundant_experts=16";
    assert_eq!(
        error(&format!("{bf16}&engine_version=0.11.0&quant=w4a16")).as_deref(),
        Some("NotImplementedError: EPLB is only supported for FP8 quantization for now.")
    );
    let gpt = "mode=serve&model=gpt-oss-120b&quant=mxfp4&engine=vllm&gpu=h100-80&gpus_per_node=2&tp=2&ep=2&max_len=8192&redundant_experts=128";
    assert_eq!(
        error(&format!("{gpt}&engine_version=0.12.0")).as_deref(),
        Some("NotImplementedError: EPLB is not supported Mxfp4MoEMethod. EPLB is only supported for FP8 quantization for now.")
    );
    assert_eq!(
        error(&format!("{gpt}&engine_version=0.33.0")).as_deref(),
        Some("NotImplementedError: EPLB is not supported GptOssMxfp4MoEMethod.")
    );
}

/// SGLang: `--ep-num-redundant-experts` from 0.4.6.post5 (not in 0.4.6.post4), the
/// physical experts checked against `--ep-size` (`expert_location.py`), the replicas on
/// every GPU with `--ep-size 1`.
#[test]
fn sglang_redundant_experts() {
    let q = format!("{V3}&engine=sglang&tp=8&ep=8");
    assert_eq!(
        error(&format!(
            "{q}&engine_version=0.4.6.post4&redundant_experts=32"
        ))
        .as_deref(),
        Some("unrecognized arguments: --ep-num-redundant-experts 32")
    );
    assert!(!error(&format!(
        "{q}&engine_version=0.4.6.post5&redundant_experts=32"
    ))
    .unwrap_or_default()
    .contains("unrecognized arguments"));
    let e = error(&format!("{q}&engine_version=0.5.3&redundant_experts=30")).unwrap();
    assert!(e.contains("num_physical_experts % ep_size == 0") && e.contains("286"));
    // Qwen1.5-MoE's 60 experts do not split over 8 ranks; 60 + 4 = 64 do.
    let qm = "mode=serve&model=qwen1.5-moe-a2.7b&engine=sglang&engine_version=0.5.3&gpu=h100-80&gpus_per_node=8&tp=8&ep=8&max_len=8192";
    assert!(error(qm)
        .unwrap()
        .contains("num_experts % self.moe_ep_size"));
    let p = plan(&format!("{qm}&redundant_experts=4"));
    assert!(p.error.is_none(), "{:?}", p.error);
    // 64/8 = 8 whole experts per GPU against 60/8 = 7.5 experts' bytes under TP 8 alone:
    // half an expert more, each 3 · 2,048 · 1,408 bf16 weights, over 24 MoE layers.
    let tp_only = plan(&qm.replace("&ep=8", ""));
    assert_eq!(
        p.weights.eval() - tp_only.weights.eval(),
        24 * 3 * 2048 * 1408 * 2 / 2
    );
    // --ep-size 1: every GPU holds all 256 + 32 experts ÷ TP 8.
    let tp = format!("{V3}&engine=sglang&engine_version=0.5.3&tp=8");
    let (p0, p) = (plan(&tp), plan(&format!("{tp}&redundant_experts=32")));
    assert_eq!(
        p.weights.eval() - p0.weights.eval(),
        58 * 32 * 44_040_204 / 8
    );
}

/// A dense model, TensorRT-LLM and llama.cpp: `redundant_experts` named and ignored.
#[test]
fn redundant_experts_ignored_where_nothing_has_them() {
    let warn = |q: &str| {
        let (x, _) = decode(q);
        let s = &x.scenario;
        s.serve_problems(&s.arch())
    };
    let dense = "mode=serve&model=llama-3-8b&engine=vllm&redundant_experts=8";
    assert!(warn(dense).iter().any(|(k, _)| *k == "redundant_experts"));
    assert_eq!(
        plan(dense).weights.eval(),
        plan("mode=serve&model=llama-3-8b&engine=vllm")
            .weights
            .eval()
    );
    let trt = format!("{V3}&engine=trtllm&tp=8&redundant_experts=32");
    assert!(warn(&trt)
        .iter()
        .any(|(k, m)| *k == "redundant_experts" && m.contains("TensorRT-LLM")));
}

/// A model whose code has no EPLB: vLLM accepts the flags (its configuration checks still
/// apply) and loads every expert once (`gpu_model_runner.py` builds EPLB only for a
/// `MixtureOfExperts` model): Qwen3-MoE before 0.10.1 (`qwen3_moe.py` takes
/// `num_redundant_experts` from 0.10.1), Qwen1.5-MoE (`qwen2_moe.py`) in every release.
#[test]
fn models_without_eplb_load_no_replicas() {
    let q = "mode=serve&model=qwen3-30b-a3b&engine=vllm&gpu=h100-80&gpus_per_node=2&tp=2&ep=2&max_len=8192";
    let with = |v: &str, r: u32| plan(&format!("{q}&engine_version={v}&redundant_experts={r}"));
    assert_eq!(
        with("0.10.0", 16).weights.eval(),
        with("0.10.0", 0).weights.eval()
    );
    assert!(with("0.10.0", 16).error.is_none());
    // From 0.10.1: 128 + 16 = 144 experts over EP 2, 72 a GPU against 64: 8 more of
    // 3 · 2,048 · 768 bf16 weights over 48 layers.
    assert_eq!(
        with("0.10.1", 16).weights.eval() - with("0.10.1", 0).weights.eval(),
        48 * 8 * 3 * 2048 * 768 * 2
    );
    let qm = "mode=serve&model=qwen1.5-moe-a2.7b&engine=vllm&gpu=h100-80&gpus_per_node=4&tp=4&ep=4&max_len=8192";
    let (x, _) = decode(&format!("{qm}&redundant_experts=4"));
    let s = &x.scenario;
    assert!(s
        .serve_problems(&s.arch())
        .iter()
        .any(|(k, m)| *k == "redundant_experts" && m.contains("builds no redundant experts")));
    assert_eq!(
        plan(&format!("{qm}&redundant_experts=4")).weights.eval(),
        plan(qm).weights.eval()
    );
    // The configuration's check still applies: EPLB without EP.
    assert_eq!(
        error(&format!("{}&redundant_experts=4", qm.replace("&ep=4", ""))).as_deref(),
        Some("enable_expert_parallel must be True to use EPLB.")
    );
}
