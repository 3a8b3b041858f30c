//! The serving model's checks: each engine's refusals in its own words, releases outside
//! the modelled range, expert parallelism per engine, and llama.cpp's context, offload and
//! flash-attention settings.

use super::tests::plan;
use super::*;
use crate::contract::query::decode;
use crate::units::MIB;

/// The plan's refusal for `q` (issue 38: each engine checks what it checks).
#[track_caller]
fn refusal(q: &str) -> String {
    let (x, _) = decode(q);
    let s = &x.scenario;
    Plan::of(s, &Prepared::of(s), &s.layout())
        .error
        .unwrap_or_else(|| panic!("{q}: no refusal"))
}

/// The serve warnings for `q`, as (key, message).
fn serve_warnings(q: &str) -> Vec<(&'static str, String)> {
    let (x, _) = decode(q);
    let s = &x.scenario;
    s.serve_problems(&s.arch())
}

/// A llama.cpp cache type under vLLM and SGLang: refused as each release's argparse (or,
/// vLLM 0.33, its `CacheConfig` validator) words it; not 3.6× the tokens.
#[test]
fn cache_dtypes_the_engine_lacks_are_refused() {
    let base = "mode=serve&model=llama-3-8b&max_len=8192&kv_dtype=q4_0";
    assert_eq!(
        refusal(&format!("{base}&engine_version=0.7.3")),
        "argument --kv-cache-dtype: invalid choice: 'q4_0' (choose from 'auto', 'fp8', 'fp8_e5m2', 'fp8_e4m3')"
    );
    assert_eq!(
        refusal(&format!("{base}&engine_version=0.19.0")),
        "argument --kv-cache-dtype: invalid choice: 'q4_0' (choose from 'auto', 'bfloat16', 'float16', 'fp8', 'fp8_ds_mla', 'fp8_e4m3', 'fp8_e5m2', 'fp8_inc')"
    );
    assert_eq!(
        refusal(&format!("{base}&engine_version=0.9.2")),
        "argument --kv-cache-dtype: invalid choice: 'q4_0' (choose from 'auto', 'fp8', 'fp8_e4m3', 'fp8_e5m2')"
    );
    assert_eq!(
        refusal(base),
        "Invalid kv_cache_dtype: 'q4_0'. Valid values are: ['auto', 'float16', 'bfloat16', 'fp8', 'fp8_e4m3', 'fp8_e5m2', 'fp8_inc', 'fp8_ds_mla', 'nvfp4_ds_mla', 'turboquant_k8v4', 'turboquant_4bit_nc', 'turboquant_k3v4_nc', 'turboquant_3bit_nc', 'octave_k3v4', 'octave_k3v3', 'octave_k3v3_compact', 'ultraquant_4bit', 'int4_per_token_head', 'int8_per_token_head', 'fp8_per_token_head', 'nvfp4', 'nvfp4_4over6']"
    );
    // bfloat16 from 0.11; a 16-bit cache equal to the compute dtype is `auto`.
    assert_eq!(
        refusal("mode=serve&model=llama-3-8b&max_len=8192&kv_dtype=bf16&precision=fp32&engine_version=0.10.2"),
        "argument --kv-cache-dtype: invalid choice: 'bfloat16' (choose from 'auto', 'fp8', 'fp8_e4m3', 'fp8_e5m2', 'fp8_inc')"
    );
    assert!(
        plan("mode=serve&model=llama-3-8b&max_len=8192&kv_dtype=bf16&engine_version=0.10.2")
            .error
            .is_none()
    );
    assert!(
        plan("mode=serve&model=llama-3-8b&max_len=8192&kv_dtype=fp8&engine_version=0.7.3")
            .error
            .is_none()
    );
    // int8 per token and head from 0.20.
    assert!(refusal(
        "mode=serve&model=llama-3-8b&max_len=8192&kv_dtype=int8&engine_version=0.19.0"
    )
    .starts_with("argument --kv-cache-dtype: invalid choice: 'int8' (choose from"));
    assert!(
        plan("mode=serve&model=llama-3-8b&max_len=8192&kv_dtype=int8&engine_version=0.20.0")
            .error
            .is_none()
    );
    // SGLang: fp8_e4m3 from 0.4.2; bf16 from 0.5.4; the fp4 and mxfp8 types later.
    assert_eq!(
        refusal("mode=serve&engine=sglang&engine_version=0.5.3&model=llama-3-8b&max_len=8192&kv_dtype=q4_0"),
        "argument --kv-cache-dtype: invalid choice: 'q4_0' (choose from 'auto', 'fp8_e5m2', 'fp8_e4m3')"
    );
    assert_eq!(
        refusal("mode=serve&engine=sglang&model=llama-3-8b&max_len=8192&kv_dtype=q4_0"),
        "argument --kv-cache-dtype: invalid choice: 'q4_0' (choose from 'auto', 'fp8_e5m2', 'fp8_e4m3', 'mxfp8', 'bf16', 'bfloat16', 'nvfp4', 'fp4_mx_block16')"
    );
    assert!(refusal("mode=serve&engine=sglang&engine_version=0.5.16&model=llama-3-8b&max_len=8192&kv_dtype=int4").ends_with("'nvfp4', 'fp4_mx_block16', 'fp4_e2m1')"));
    assert_eq!(
        refusal("mode=serve&engine=sglang&engine_version=0.4.1&model=llama-3-8b&max_len=8192&kv_dtype=int4"),
        "argument --kv-cache-dtype: invalid choice: 'int4' (choose from 'auto', 'fp8_e5m2')"
    );
    // TensorRT-LLM: named, not refused; llama.cpp takes its own types.
    assert_eq!(
        serve_warnings("mode=serve&engine=trtllm&model=llama-3-8b&max_len=8192&kv_dtype=q4_0"),
        vec![("kv_dtype", "kv_dtype=q4_0 is not a cache type memfit models for TensorRT-LLM; counted as if TensorRT-LLM had it".to_string())]
    );
    assert!(plan(
        "mode=serve&engine=llamacpp&model=llama-3-8b&quant=q4_k_m&max_len=8192&kv_dtype=q4_0"
    )
    .error
    .is_none());
}

/// MXFP4 on a dense model: vLLM 0.10.1–0.11.0 refuse at load, 0.11.1+ load the linears
/// unquantized (a warning), releases before 0.10.1 have no mxfp4 at all (a warning).
#[test]
fn mxfp4_on_a_dense_model() {
    let q = "mode=serve&model=llama-3-8b&max_len=8192&quant=mxfp4";
    assert_eq!(
        refusal(&format!("{q}&engine_version=0.10.1")),
        "NotImplementedError: Mxfp4 linear layer is not implemented"
    );
    assert_eq!(
        serve_warnings(&format!("{q}&engine_version=0.19.0")),
        vec![("quant", "vLLM 0.19.0 quantises only MoE experts with mxfp4 (gpt-oss-style checkpoints); a dense model's linear layers load unquantized (UnquantizedLinearMethod), but memfit counts them as MXFP4".to_string())]
    );
    assert_eq!(
        serve_warnings(&format!("{q}&engine_version=0.9.2")),
        vec![("quant", "vLLM 0.9.2 has no mxfp4 quantization (it arrived in 0.10.1, for gpt-oss); counted as if it had".to_string())]
    );
    // gpt-oss, its own path: nothing to say.
    assert!(serve_warnings("mode=serve&model=gpt-oss-20b&max_len=8192&quant=mxfp4").is_empty());
    assert!(
        plan("mode=serve&model=gpt-oss-20b&max_len=8192&quant=mxfp4&engine_version=0.10.1")
            .error
            .is_none()
    );
}

/// A release outside the modelled range is named, with the release whose rules are used
/// (which the report also carries).
#[test]
fn versions_outside_the_modelled_range_are_named() {
    let w = |q: &str| serve_warnings(&format!("mode=serve&model=llama-3-8b&max_len=8192&{q}"));
    let one = |m: &str| vec![("engine_version", m.to_string())];
    assert_eq!(
        w("engine_version=99.0"),
        one("memfit models vLLM 0.6.6 to 0.33.x; 99.0.0 is outside that range, so 0.33.0's rules are used")
    );
    assert_eq!(
        w("engine_version=0.2.4"),
        one("memfit models vLLM 0.6.6 to 0.33.x; 0.2.4 is outside that range, so 0.6.6's rules are used")
    );
    assert_eq!(
        w("engine=sglang&engine_version=0.6.4"),
        one("memfit models SGLang 0.4.0 to 0.5.23; 0.6.4 is outside that range, so 0.5.23's rules are used")
    );
    assert_eq!(
        w("engine=sglang&engine_version=0.1.0"),
        one("memfit models SGLang 0.4.0 to 0.5.23; 0.1.0 is outside that range, so 0.4.0's rules are used")
    );
    assert!(w("engine_version=0.33.1").is_empty() && w("engine_version=0.6.6").is_empty());
    let r = plan("mode=serve&model=llama-3-8b&max_len=8192&engine_version=0.2.4").report();
    assert_eq!(r.engine_version, "0.6.6");
}

/// A TP size that does not divide the attention heads: vLLM's config check, SGLang's
/// model assertion.
#[test]
fn tp_must_divide_the_heads() {
    let q = "mode=serve&model=llama-3-8b&max_len=8192&gpus_per_node=3&tp=3";
    assert_eq!(
        refusal(q),
        "Total number of attention heads (32) must be divisible by tensor parallel size (3)."
    );
    assert_eq!(
        refusal(&format!("{q}&engine_version=0.6.6")),
        "Total number of attention heads (32) must be divisible by tensor parallel size (3)."
    );
    assert_eq!(
        refusal(&format!("{q}&engine=sglang")),
        "AssertionError (srt/models/llama.py: `assert self.total_num_heads % tp_size == 0`; 32 heads, tp_size 3)"
    );
}

/// `gpu_util=1`: vLLM (0.9.1+) refuses to start, the free memory being less than the
/// whole device; V0 has no such check (a warning); 0.8.0–0.9.0 charge the context inside.
#[test]
fn gpu_util_one() {
    let q = "mode=serve&model=llama-3-8b&max_len=8192&gpu_util=1";
    assert_eq!(
        refusal(q),
        "Free memory on device cuda:0 (78.6/79.19 GiB) on startup is less than desired GPU memory utilization (1.0, 79.19 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes."
    );
    assert_eq!(
        refusal(&format!("{q}&engine_version=0.13.0")),
        "Free memory on device (78.6/79.19 GiB) on startup is less than desired GPU memory utilization (1.0, 79.19 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes."
    );
    assert!(
        plan("mode=serve&model=llama-3-8b&max_len=8192&gpu_util=0.99")
            .error
            .is_none()
    );
    assert_eq!(
        serve_warnings(&format!("{q}&engine_version=0.7.3")),
        vec![("gpu_util", "gpu_util=1 leaves no room for the CUDA context (600 MiB) beside vLLM 0.7.3's budget: the V0 engine has no start-up check (0.9.1 added one) and would run out of memory allocating the KV cache or capturing CUDA graphs".to_string())]
    );
    assert!(plan(&format!("{q}&engine_version=0.8.5")).error.is_none());
}

/// V0 (≤ 0.7) refuses in its own words: tokens of the pool against `max_model_len`; no
/// memory at all without the 0.13+ documentation link.
#[test]
fn vllm_v0_refuses_in_its_own_words() {
    let p = plan(
        "mode=serve&engine_version=0.6.6&model=llama-3-70b&gpus_per_node=2&tp=2&max_len=1000000",
    );
    assert_eq!(
        p.error.unwrap(),
        format!("The model's max seq len (1000000) is larger than the maximum number of tokens that can be stored in KV cache ({}). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.", p.tokens)
    );
    assert_eq!(
        super::engines::vllm_v0_too_long(29_000, 23_648),
        "The model's max seq len (29000) is larger than the maximum number of tokens that can be stored in KV cache (23648). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine."
    );
    assert_eq!(
        refusal("mode=serve&model=llama-3-70b&max_len=8192&engine_version=0.12.0&gpus_per_node=2&tp=2&gpu_util=0.5"),
        "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine."
    );
    assert_eq!(
        refusal("mode=serve&model=llama-3-70b&max_len=8192&gpus_per_node=2&tp=2&gpu_util=0.5"),
        "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine. See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."
    );
}

/// Wide expert parallelism (issue 38): DeepSeek-V3 FP8 under vLLM 0.10.1 with
/// `--data-parallel-size 8 --enable-expert-parallel` on 8 H200s. Each GPU holds 256/8 = 32
/// routed experts per MoE layer and a full copy of the rest (MLA attention, the three dense
/// layers, the shared expert, routers, embedding, head), by hand from the preset's breakdown.
#[test]
fn vllm_deepseek_v3_wide_ep_by_hand() {
    let base = "mode=serve&engine=vllm&engine_version=0.10.1&model=deepseek-v3&quant=fp8&gpu=h200&gpus_per_node=8&tp=1&dp=8";
    // Routed experts: 58 MoE layers · 256 experts · 3 matrices of 7,168 × 2,048, each an
    // fp8 byte per weight and one fp32 scale.
    let routed = 58 * 256 * 3 * 7168 * 2048 + 4 * (58 * 256 * 3);
    assert_eq!(routed, 653_908_948_992_u64);
    // Without EP every GPU loads all of it: Ψ_q = 669,065,609,216 fp8 weights in 45,032
    // matrices, Ψ_r = 1,960,795,136 parameters (embedding, head, routers, norms) in bf16.
    let all = 669_065_609_216 + 4 * 45_032 + 2 * 1_960_795_136_u64;
    let p0 = plan(&format!("{base}&ep=1"));
    assert_eq!(p0.weights.eval(), all); // 626.8 GiB
    assert!(p0.error.is_some());
    let p = plan(&format!("{base}&ep=8"));
    let w = (all - routed) + routed * 32 / 256;
    assert_eq!(w, 100_817_049_248); // 93.9 GiB
    assert_eq!(p.weights.eval(), w);
    // KV per DP rank: its own requests' MLA latent, 61 layers · (512 + 64) · 2 B.
    assert_eq!(p.per_token, 61 * 576 * 2);
    // The all-to-all's NCCL communicator over 8 NVSwitch GPUs: NVLS buffers as for TP.
    assert_eq!(p.non_torch.eval(), 256 * MIB + 1894 * MIB);
    let budget = p.budget; // 0.90 of the H200's cudaMemGetInfo total
    assert_eq!(budget, 135_098_951_270);
    let kv = budget - w - p.activation.eval() - p.non_torch.eval();
    assert_eq!(p.blocks, kv / (64 * 61 * 576 * 2));
    assert!(p.error.is_none(), "{:?}", p.error);
    assert!(p.concurrency > 2.0);
}

/// Qwen3-235B-A22B in bf16, vLLM 0.10.1, TP 1 × DP 8 with EP: 128/8 = 16 experts per
/// layer on each GPU.
#[test]
fn vllm_qwen3_235b_wide_ep_by_hand() {
    let p = plan("mode=serve&engine=vllm&engine_version=0.10.1&model=qwen3-235b-a22b&gpu=h200&gpus_per_node=8&tp=1&dp=8&ep=8");
    // 94 layers · 128 experts · 3 · 4,096 · 1,536 routed parameters of 235,093,634,560.
    let routed = 2 * 94 * 128 * 3 * 4096 * 1536_u64;
    let all = 2 * 235_093_634_560_u64;
    let rope = 40_960 * 128 * 2;
    assert_eq!(p.weights.eval(), all - routed + routed / 8 + rope);
    assert_eq!(p.weights.eval(), 72_779_062_272);
    // Four KV heads on each rank (TP 1): 94 · 2 · 4 · 128 · 2 B.
    assert_eq!(p.per_token, 94 * 2 * 4 * 128 * 2);
    assert!(p.error.is_none());
}

/// The remainder rule: vLLM 0.10.0's last rank takes every expert left over, 0.10.1+
/// spreads it over the first ranks (Qwen3-235B's 128 experts over TP 2 × DP 3 = 6).
#[test]
fn vllm_ep_remainder_by_release() {
    let q = |v| {
        let (x, _) = decode(&format!("mode=serve&engine=vllm&engine_version={v}&model=qwen3-235b-a22b&gpu=h200&gpus_per_node=6&tp=2&dp=3&ep=6"));
        let s = &x.scenario;
        super::engines::expert_split(s, &s.arch(), &s.layout(), s.engine_release().unwrap())
    };
    assert_eq!(q("0.10.0").unwrap().local, 128 - 5 * 21);
    assert_eq!(q("0.10.1").unwrap().local, 22);
    assert_eq!(q("0.10.1").unwrap().ranks, 6);
    // Before 0.8.0 there is no --enable-expert-parallel: argparse refuses it.
    let p = plan("mode=serve&engine=vllm&engine_version=0.7.3&model=qwen3-235b-a22b&gpu=h200&gpus_per_node=8&tp=1&dp=8&ep=8");
    assert_eq!(
        p.error.as_deref(),
        Some("unrecognized arguments: --enable-expert-parallel")
    );
}

/// SGLang: `--tp 8 --dp 8 --enable-dp-attention --ep-size 8` is memfit's tp=1, dp=8, ep=8;
/// an EP size that does not divide the experts trips the MoE layer's assertion.
#[test]
fn sglang_ep() {
    let p = plan("mode=serve&engine=sglang&engine_version=0.5.3&model=deepseek-v3&quant=fp8&gpu=h200&gpus_per_node=8&tp=1&dp=8&ep=8");
    assert_eq!(p.weights.eval(), 100_817_049_248);
    assert!(p.error.is_none(), "{:?}", p.error);
    let (x, _) = decode("mode=serve&engine=sglang&engine_version=0.5.3&model=qwen3-235b-a22b&gpu=h200&gpus_per_node=6&tp=1&dp=6&ep=6");
    let s = &x.scenario;
    let p = Plan::of(s, &Prepared::of(s), &s.layout());
    assert!(p
        .error
        .unwrap()
        .contains("assert num_experts % self.moe_ep_size == 0"));
    let p = plan("mode=serve&engine=sglang&engine_version=0.4.0&model=qwen3-235b-a22b&gpu=h200&gpus_per_node=8&tp=1&dp=8&ep=8");
    assert_eq!(
        p.error.as_deref(),
        Some("unrecognized arguments: --ep-size 8")
    );
}

/// A dense model with ep = 8: the named warning, and the weights as without EP.
#[test]
fn ep_on_a_dense_model_warns() {
    let q =
        "mode=serve&engine=vllm&engine_version=0.10.1&model=llama-3-8b&gpus_per_node=8&tp=1&dp=8";
    let (x, _) = decode(&format!("{q}&ep=8"));
    let s = &x.scenario;
    assert!(s
        .problems()
        .iter()
        .any(|(k, m)| *k == "ep" && m.contains("needs a mixture-of-experts model")));
    assert_eq!(
        plan(&format!("{q}&ep=8")).weights.eval(),
        plan(q).weights.eval()
    );
}

/// `ep` as each engine reads it (issue 38): vLLM's EP size is tp·dp whatever `ep` says,
/// TensorRT-LLM and llama.cpp ignore it, and the training checks against `dp·cp` are not
/// applied to serving (vLLM TP 2 × EP 2 on one DP rank is a valid start-up).
#[test]
fn ep_warnings_per_engine() {
    let moe = "mode=serve&model=qwen3-30b-a3b&gpus_per_node=8";
    let ep = |q: &str| -> Vec<String> {
        serve_warnings(q)
            .into_iter()
            .filter(|(k, _)| *k == "ep")
            .map(|(_, m)| m)
            .collect()
    };
    // vLLM, tp 2 × dp 2 = 4 ranks, ep = 8: the value used is 4.
    assert_eq!(
        ep(&format!("{moe}&engine=vllm&tp=2&dp=2&ep=8")),
        ["vLLM's EP size is tp·dp = 4 whenever --enable-expert-parallel is on (ep only switches it on): counted with EP = 4, not ep = 8"]
    );
    // ep = tp·dp: nothing to say.
    assert!(ep(&format!("{moe}&engine=vllm&tp=2&dp=2&ep=4")).is_empty());
    // tp·dp = 1: nothing to spread.
    assert_eq!(
        ep(&format!("{moe}&engine=vllm&tp=1&dp=1&ep=2")),
        ["vLLM's expert parallelism spreads the experts over tp·dp = 1 GPU, so it does nothing: ep = 2 ignored, counted without expert parallelism"]
    );
    for (engine, label) in [("trtllm", "TensorRT-LLM"), ("llamacpp", "llama.cpp")] {
        assert_eq!(
            ep(&format!("{moe}&engine={engine}&tp=2&dp=1&ep=2")),
            [format!("expert parallelism is not modelled for {label}: ep = 2 ignored, every GPU holds every expert ÷ tp")]
        );
    }
    // vLLM TP 2 × EP 2 on one DP rank: no training-style "ep does not divide dp·cp".
    let (x, _) = decode(&format!("{moe}&engine=vllm&tp=2&dp=1&ep=2"));
    let s = &x.scenario;
    assert!(
        s.problems().iter().all(|(k, _)| *k != "ep"),
        "{:?}",
        s.problems()
    );
    // …whereas training still checks it.
    let (x, _) = decode("model=qwen3-30b-a3b&gpus_per_node=8&tp=2&dp=1&ep=2");
    assert!(x
        .scenario
        .problems()
        .iter()
        .any(|(k, m)| *k == "ep" && m.contains("does not divide the 1 data-parallel ranks")));
}

/// `mode=infer` has no expert parallelism (each replica runs the whole model): `ep` is named
/// in one warning, and the estimate is the one without it (DeepSeek-V2-Lite, 64 experts, on
/// two GPUs: the same bytes with `ep=2`, and no divisibility warning for `ep=3` either).
#[test]
fn inference_names_expert_parallelism_ignored() {
    use crate::estimate::estimate;
    let q = "mode=infer&model=deepseek-v2-lite&gpus_per_node=2";
    for ep in [2, 3] {
        let (x, _) = decode(&format!("{q}&ep={ep}"));
        let eps: Vec<String> = x
            .scenario
            .problems()
            .into_iter()
            .filter(|(k, _)| *k == "ep")
            .map(|(_, m)| m)
            .collect();
        assert_eq!(eps.len(), 1, "{eps:?}");
        assert!(
            eps[0].starts_with("mode=infer is one model per replica")
                && eps[0].contains("all 64 experts"),
            "{eps:?}"
        );
        assert_eq!(
            estimate(&x.scenario).per_gpu_bytes,
            estimate(&decode(q).0.scenario).per_gpu_bytes
        );
    }
}

/// llama.cpp's two conventions for `parallel` (issue 38): Ollama's `OLLAMA_NUM_PARALLEL=4`
/// with `num_ctx` 8,192 gives each sequence 8,192 tokens (n_ctx 32,768), llama-server's
/// `-c 8192 -np 4` splits 8,192 among 4 slots. Llama 3 8B Q4_K_M, f16 cache: 32 layers ×
/// 4,096 B a token.
#[test]
fn llamacpp_ctx_per_sequence_or_total() {
    let q = "mode=serve&engine=llamacpp&model=llama-3-8b&quant=q4_k_m&max_len=8192&parallel=4";
    let ollama = plan(q);
    assert_eq!(ollama.tokens, 32_768);
    assert_eq!(ollama.kv.eval(), 32_768 * 32 * 4096); // 4,096 MiB
    assert_eq!(ollama.kv.eval(), 4096 * MIB);
    assert_eq!((ollama.max_len, ollama.concurrency), (8192, 4.0));
    // An old link (no ctx_per) decodes to the same plan as ctx_per=sequence.
    assert_eq!(plan(&format!("{q}&ctx_per=sequence")), ollama);
    let server = plan(&format!("{q}&ctx_per=total"));
    assert_eq!(server.tokens, 8192);
    assert_eq!(server.kv.eval(), 1024 * MIB); // llama-server's log: 1024.00 MiB
    assert_eq!((server.max_len, server.concurrency), (2048, 4.0));
    assert_eq!(server.weights.eval(), ollama.weights.eval());
    // The longest context that fits: Ollama's per sequence, llama-server's per slot.
    let cells = |p: &Plan| {
        (p.budget - p.weights.eval() - p.activation.eval() - p.outside.eval()) / p.per_token
    };
    assert_eq!(ollama.max_len_fit, cells(&ollama) / 4 / 256 * 256);
    assert_eq!(server.max_len_fit, cells(&server) / 256 * 256 / 4);
    // parallel = 1: the two conventions agree.
    let one = "mode=serve&engine=llamacpp&model=llama-3-8b&quant=q4_k_m&max_len=8192";
    assert_eq!(plan(&format!("{one}&ctx_per=total")), plan(one));
}

/// llama.cpp's host side (issue 38): the file's weights and `token_embd`, which stays in
/// host memory (the `CPU_Mapped model buffer` of 281.81 MiB llama.cpp logs for Llama 3 8B
/// Q4_K_M); the GPUs hold the rest. Only llama.cpp reports them.
#[test]
fn llamacpp_file_and_host_bytes() {
    let p = plan("mode=serve&engine=llamacpp&model=llama-3-8b&quant=q4_k_m&max_len=8192");
    let r = p.report();
    assert_eq!(r.file_bytes, Some(4_912_898_048));
    assert_eq!(r.host_bytes, Some(295_501_824));
    assert_eq!(r.weights_bytes, 4_912_898_048 - 295_501_824);
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["file_bytes"], 4_912_898_048_u64);
    assert_eq!(json["host_bytes"], 295_501_824_u64);
    // A tied embedding (Llama 3.2 1B, Q8_0): token_embd in host memory and its copy as the
    // head on the GPU, so the GPU weights are the whole file.
    let t = plan("mode=serve&engine=llamacpp&model=llama-3.2-1b&quant=q8_0&max_len=8192").report();
    assert_eq!(t.weights_bytes, t.file_bytes.unwrap());
    assert_eq!(t.host_bytes, Some(128_256 * 2048 / 32 * 34));
    // vLLM: neither field.
    let v = plan("mode=serve&engine=vllm&model=llama-3-8b&max_len=8192").report();
    let json = serde_json::to_value(&v).unwrap();
    assert!(json.get("file_bytes").is_none() && json.get("host_bytes").is_none());
}

/// llama.cpp without flash attention (issue 38): the compute buffer holds the f32 scores
/// `n_ctx × n_ubatch × heads`, the f32 mask and four hidden states. Llama 3 8B, n_ctx 8,192,
/// n_ubatch 512: 4·512·(8,192·(32 + 1) + 4·4,096) = 587,202,560 B, the `CUDA0 compute buffer
/// size = 560.00 MiB` of Ollama's runner logs (flash_attn = 0); Llama 2 7B's shape (32 heads,
/// 4,096 wide, MHA) at 8,192 gives the same (a Metal log of such a model prints 560.00 MiB;
/// its logits, 4·512·(32,000 + 4,096) B = 70.5 MiB, are smaller).
/// With flash attention: 4·512·(128,256 + 4,096) = 271,056,896 B (258.50 MiB).
#[test]
fn llamacpp_compute_buffer_without_flash_attention() {
    let q = "mode=serve&engine=llamacpp&model=llama-3-8b&quant=q4_k_m&max_len=8192";
    let off = plan(&format!("{q}&flash_attn=off"));
    assert_eq!(off.activation.eval(), 587_202_560);
    assert_eq!(off.activation.eval(), 560 * MIB);
    let on = plan(&format!("{q}&flash_attn=on"));
    assert_eq!(on.activation.eval(), 271_056_896);
    // The cache does not change; the cells left for max_len_fit do.
    assert_eq!(off.kv.eval(), on.kv.eval());
    assert!(off.max_len_fit < on.max_len_fit);
    let l2 =
        plan("mode=serve&engine=llamacpp&model=llama-2-7b&quant=q4_0&max_len=8192&flash_attn=off");
    assert_eq!(l2.activation.eval(), 560 * MIB);
    // A short context: the logits outgrow the scores (Llama 3 8B, n_ctx 2,048:
    // 4·512·(2,048·33 + 16,384) = 172 MiB < 258.5 MiB).
    let short = plan(
        "mode=serve&engine=llamacpp&model=llama-3-8b&quant=q4_k_m&max_len=2048&flash_attn=off",
    );
    assert_eq!(short.activation.eval(), 271_056_896);
    // auto: the build's default, off before b6325 (b5285 logs `flash_attn = 0`), on from it
    // (b8179 logs `flash_attn = auto` and the flash path's buffer); the newest modelled is on.
    assert_eq!(
        plan(&format!("{q}&engine_version=b5285")).activation,
        off.activation
    );
    assert_eq!(
        plan(&format!("{q}&engine_version=b6324")).activation,
        off.activation
    );
    assert_eq!(
        plan(&format!("{q}&engine_version=b6325")).activation,
        on.activation
    );
    assert_eq!(plan(q).activation, on.activation);
    assert_eq!(plan(&format!("{q}&flash_attn=auto")), plan(q));
}

/// llama.cpp's `-ngl` and `--no-kv-offload` (issue 38): the layers left on the CPU, their KV
/// cache and the file's span the CPU maps go to `host_bytes`. Llama 3 8B Q4_K_M (32 layers,
/// untied), n_ctx 8,192, f16 cache (4,096 B a layer and token = 32 MiB a layer).
#[test]
fn llamacpp_partial_offload_and_kv_on_host() {
    let q = "mode=serve&engine=llamacpp&model=llama-3-8b&quant=q4_k_m&max_len=8192";
    let all = plan(q).report();
    let embd = 295_501_824;
    assert_eq!(all.host_bytes, Some(embd));
    // -ngl 33 (= L + 1) or more is every layer, under either rule.
    for v in ["b7300", "b8179"] {
        for n in [33, 99] {
            assert_eq!(
                plan(&format!("{q}&ngl={n}&engine_version={v}"))
                    .report()
                    .weights_bytes,
                all.weights_bytes
            );
        }
    }
    // Before b8133, -ngl 32: every repeating layer on the GPU, the output layer (head and
    // final norm) on the CPU, and the CPU's mapped span reaches the file's end: the whole file.
    let old = plan(&format!("{q}&ngl=32&engine_version=b7300")).report();
    assert_eq!(old.kv_cache_bytes, all.kv_cache_bytes);
    assert_eq!(old.host_bytes, old.file_bytes);
    let head = all.weights_bytes - old.weights_bytes; // the head (Q6_K) and the final norm
    assert_eq!(head, 128_256 * 4096 / 256 * 210 + 4 * 4096);
    // From b8133, -ngl 32: the output layer first, layer 0 on the CPU with its 32 MiB of KV;
    // the CPU maps token_embd and layer 0.
    let new = plan(&format!("{q}&ngl=32&engine_version=b8179")).report();
    assert_eq!(new.kv_cache_bytes, 31 * 32 * MIB);
    let layer0 = all.weights_bytes - new.weights_bytes;
    assert_eq!(new.host_bytes, Some(embd + layer0 + 32 * MIB));
    // -ngl 0: nothing on the GPU; the whole file and the whole cache in host memory.
    let none = plan(&format!("{q}&ngl=0"));
    let r = none.report();
    assert_eq!((r.weights_bytes, r.kv_cache_bytes), (0, 0));
    assert_eq!(r.host_bytes, Some(r.file_bytes.unwrap() + 1024 * MIB));
    assert!(none.error.is_none());
    assert_eq!(r.max_len_fit, 8192); // the GPU does not bound the context
                                     // --no-kv-offload: the weights stay, the cache (1,024 MiB) moves to host memory.
    let nokv = plan(&format!("{q}&kv_offload=0")).report();
    assert_eq!(nokv.weights_bytes, all.weights_bytes);
    assert_eq!(nokv.kv_cache_bytes, 0);
    assert_eq!(nokv.host_bytes, Some(embd + 1024 * MIB));
}

/// vLLM's profile under expert parallelism (issue 38, TP × EP): the fused-MoE caches hold
/// whole experts (`N = 2·f_e`, the MoE layer's `tp_size` 1). Qwen3-30B-A3B on two H100s,
/// 8,192 batched tokens, 1,024 sampler rows: A = A_samp + A_moe.
#[test]
fn vllm_ep_profiles_whole_experts() {
    let q =
        "mode=serve&engine=vllm&model=qwen3-30b-a3b&gpu=h100-80&gpus_per_node=2&tp=2&max_len=8192";
    let sampler: u64 = 1024 * 151_936 * 16;
    let tp = plan(q);
    assert_eq!(tp.activation.eval(), sampler + 8192 * 2 * 8 * (2048 + 384));
    let ep = plan(&format!("{q}&ep=2"));
    assert_eq!(ep.activation.eval(), sampler + 8192 * 2 * 8 * (2048 + 768));
    // The forward's peak with whole experts (below the sampler's here).
    assert_eq!(
        super::engines::forward_peak_ep(
            &crate::model::preset("qwen3-30b-a3b").unwrap().arch,
            8192,
            2,
            crate::scenario::count(2),
            crate::scenario::Count::MIN
        ),
        8192 * 2 * (4096 + 8 * 3 * 768 + 8 * 2048)
    );
}

/// llama.cpp's own keys under another engine: named and ignored (the plan is unchanged).
#[test]
fn llamacpp_keys_are_named_under_other_engines() {
    let q = "mode=serve&model=llama-3-8b&max_len=8192";
    let w = serve_warnings(&format!("{q}&ngl=10&kv_offload=0&flash_attn=off"));
    let keys: Vec<&str> = w.iter().map(|(k, _)| *k).collect();
    assert_eq!(keys, ["flash_attn", "ngl", "kv_offload"]);
    assert_eq!(
        w[1].1,
        "`ngl` is llama.cpp's setting (engine=llamacpp); ignored under vLLM"
    );
    // The same plan, but for its notes (these three warnings).
    let mut named = plan(&format!("{q}&ngl=10&kv_offload=0&flash_attn=off"));
    assert_eq!(named.notes().count(), 3);
    named.notes.clear();
    assert_eq!(named, plan(q));
    assert!(serve_warnings(&format!(
        "{q}&engine=llamacpp&ngl=10&kv_offload=0&flash_attn=off"
    ))
    .is_empty());
}

/// `serve.experts` is the placement the weights item counts: its `E_r` and `t_e` symbols
/// are `per_rank` and `expert_tp`, over vLLM's and SGLang's EP, EPLB and vLLM's uneven split
/// before 0.10.1 (DeepSeek-V3 over 6 ranks on 0.10.0: the last takes 256 − 5·42 = 46).
#[test]
fn experts_report_is_the_weights_placement() {
    use crate::estimate::estimate;
    let ds = "mode=serve&model=deepseek-v3&quant=fp8&gpu=h200";
    for (q, want) in [
        (format!("{ds}&engine=vllm&engine_version=0.10.1&gpus_per_node=8&dp=8&ep=8"), Some((8, 32, 1, 0))),
        (format!("{ds}&engine=vllm&engine_version=0.10.1&gpus_per_node=8&dp=8&ep=8&redundant_experts=32"), Some((8, 36, 1, 32))),
        (format!("{ds}&engine=vllm&engine_version=0.10.0&gpus_per_node=6&dp=6&ep=6"), Some((6, 46, 1, 0))),
        (format!("{ds}&engine=sglang&engine_version=0.5.3&gpus_per_node=8&tp=8&ep=4"), Some((4, 64, 2, 0))),
        (format!("{ds}&engine=vllm&engine_version=0.10.1&gpus_per_node=8&tp=8"), None),
        (format!("{ds}&engine=trtllm&gpus_per_node=8&tp=8&ep=8"), None),
    ] {
        let s = decode(&q).0.scenario;
        let x = estimate(&s).serve.unwrap().experts;
        assert_eq!(x.map(|x| (x.ep_ranks, x.per_rank, x.expert_tp, x.redundant)), want, "{q}");
        if let Some(x) = x {
            assert_eq!(x.routed, 256);
            let w = plan(&q).weights.values();
            assert!(w.contains(&format!("E_r={}", x.per_rank)) && w.contains(&format!("t_e={}", x.expert_tp)), "{q}: {w}");
        }
    }
}

/// vLLM's block sizes per release (argparse's choices) and its scheduler's check of batched
/// tokens against sequences, in its own words; SGLang takes any page size.
#[test]
fn block_sizes_and_batch_limits_as_vllm_checks_them() {
    let q = "mode=serve&model=llama-3-8b&max_len=8192";
    assert_eq!(
        refusal(&format!("{q}&block_size=7&engine_version=0.7.3")),
        "argument --block-size: invalid choice: 7 (choose from 8, 16, 32, 64, 128)"
    );
    assert_eq!(
        refusal(&format!("{q}&block_size=256&engine_version=0.10.1")),
        "argument --block-size: invalid choice: 256 (choose from 1, 8, 16, 32, 64, 128)"
    );
    assert_eq!(
        refusal(&format!("{q}&block_size=48&engine_version=0.17.0")),
        "argument --block-size: invalid choice: 48 (choose from 1, 8, 16, 32, 64, 128, 256)"
    );
    for ok in [
        "block_size=256&engine_version=0.12.0",
        "block_size=1&engine_version=0.8.5",
        "block_size=48&engine_version=0.18.0",
        "block_size=7&engine=sglang&max_batched_tokens=7000",
    ] {
        assert!(plan(&format!("{q}&{ok}")).error.is_none(), "{ok}");
    }
    assert_eq!(
        refusal(&format!("{q}&max_seqs=4096&max_batched_tokens=2048")),
        "max_num_batched_tokens (2048) must be greater than or equal to max_num_seqs (4096)."
    );
    // Tokens below the default sequences: 0.9.2 (V1 on an H100: 1,024 sequences) refuses,
    // 0.10.1+ caps the default sequences at the tokens.
    assert_eq!(
        refusal(&format!("{q}&max_batched_tokens=512&engine_version=0.9.2")),
        "max_num_batched_tokens (512) must be greater than or equal to max_num_seqs (1024)."
    );
    assert!(
        plan(&format!("{q}&max_batched_tokens=512&engine_version=0.10.1"))
            .error
            .is_none()
    );
}

/// A `max_len` longer than the checkpoints' context is named with the engine's refusal
/// (vLLM, SGLang); Llama 3 8B's preset stands for 3.1 too (131,072 tokens), an imported
/// or overridden shape is not checked, and TensorRT-LLM and llama.cpp say nothing.
#[test]
fn a_context_longer_than_the_model_is_named() {
    let ctx = |q: &str| -> Vec<String> {
        serve_warnings(q)
            .into_iter()
            .filter(|(k, _)| *k == "max_len")
            .map(|(_, m)| m)
            .collect()
    };
    let w = ctx("mode=serve&model=qwen2.5-7b&max_len=131072");
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].starts_with("max_len = 131,072 is longer than Qwen2.5 7B's context (32,768 tokens")
            && w[0].contains(
                "User-specified max_model_len (131072) is greater than the derived max_model_len"
            )
            && w[0].contains("VLLM_ALLOW_LONG_MAX_MODEL_LEN=1"),
        "{w:?}"
    );
    let sg = ctx("mode=serve&engine=sglang&model=qwen2.5-7b&max_len=131072");
    assert!(sg[0].contains("User-specified context_length (131072) is greater than the derived context_length (32768)") && sg[0].contains("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1"), "{sg:?}");
    assert!(ctx("mode=serve&model=llama-3-8b&max_len=131072").is_empty());
    assert_eq!(ctx("mode=serve&model=llama-3-8b&max_len=200000").len(), 1);
    assert!(ctx("mode=serve&model=qwen2.5-7b&max_len=32768").is_empty());
    assert!(ctx("mode=serve&model=qwen2.5-7b&max_len=131072&layers=20").is_empty());
    assert!(
        ctx("mode=serve&engine=llamacpp&model=qwen2.5-7b&quant=q4_k_m&max_len=131072").is_empty()
    );
}

/// Weight formats an engine does not load are named: llama.cpp takes GGUF types, `none`
/// and MXFP4 only; TensorRT-LLM takes no GGUF and no bitsandbytes format.
#[test]
fn formats_the_engine_does_not_load_are_named() {
    let named = |e: &str, q: &str| {
        serve_warnings(&format!("mode=serve&model=llama-3-8b&engine={e}&quant={q}"))
            .iter()
            .any(|(k, _)| *k == "quant")
    };
    for q in [
        "fp8", "w8a8", "w4a16", "nvfp4", "nf4", "int8_g", "int4_g", "int8",
    ] {
        assert!(named("llamacpp", q), "llama.cpp {q}");
    }
    for q in ["none", "q4_k_m", "q8_0", "iq4_xs", "mxfp4"] {
        assert!(!named("llamacpp", q), "llama.cpp {q}");
    }
    for q in ["q4_k_m", "q8_0", "nf4", "int8"] {
        assert!(named("trtllm", q), "TensorRT-LLM {q}");
    }
    for q in ["fp8", "w8a8", "w4a16", "nvfp4", "int8_g", "none"] {
        assert!(!named("trtllm", q), "TensorRT-LLM {q}");
    }
    assert!(!named("vllm", "q4_k_m") && !named("sglang", "fp8"));
    // A llama.cpp block type as the weights' dtype (gpt-oss's GGUF file with quant=mxfp4)
    // is llama.cpp's alone.
    let dtype = |e: &str, d: &str| {
        serve_warnings(&format!(
            "mode=serve&model=gpt-oss-20b&engine={e}&quant=mxfp4&weight_dtype={d}"
        ))
        .into_iter()
        .find(|(k, _)| *k == "quant")
        .map(|(_, m)| m)
    };
    for e in ["vllm", "sglang", "trtllm"] {
        let m = dtype(e, "q8_0").unwrap_or_else(|| panic!("{e}"));
        assert!(
            m.starts_with("weight_dtype=q8_0 is a llama.cpp block type"),
            "{m}"
        );
        assert_eq!(dtype(e, "bf16"), None, "{e}");
    }
    assert_eq!(dtype("llamacpp", "q8_0"), None);
}

/// llama.cpp's layer split is counted over `tp` GPUs; `pp` is named, not silently read as
/// one GPU holding every layer (Llama 3 8B Q4_K_M on two GPUs: half the weights with tp=2).
#[test]
fn llama_cpp_names_pp() {
    let q = "mode=serve&engine=llamacpp&model=llama-3-8b&quant=q4_k_m&gpus_per_node=2";
    let w = serve_warnings(&format!("{q}&pp=2"));
    assert!(
        w.iter()
            .any(|(k, m)| *k == "pp" && m.contains("set tp to the GPU count")),
        "{w:?}"
    );
    assert!(serve_warnings(&format!("{q}&tp=2"))
        .iter()
        .all(|(k, _)| *k != "pp"));
    let (one, two) = (plan(&format!("{q}&pp=2")), plan(&format!("{q}&tp=2")));
    assert!(two.weights.eval() < one.weights.eval() * 6 / 10);
}

/// vLLM's V0 engine refuses fewer batched tokens than the context without chunked prefill,
/// which it turns on by itself only above 32,768 tokens (`SchedulerConfig._verify_args`,
/// 0.6.6.post1 and 0.7.3); V1 always chunks.
#[test]
fn vllm_v0_batched_tokens_below_the_context() {
    let q = "mode=serve&model=llama-3-8b&engine_version=0.7.3&max_len=8192&max_batched_tokens=4096";
    let w = serve_warnings(q);
    assert_eq!(w.len(), 1, "{w:?}");
    assert_eq!(w[0].0, "max_batched_tokens");
    assert!(w[0].1.contains("\"max_num_batched_tokens (4096) is smaller than max_model_len (8192). This effectively limits"), "{}", w[0].1);
    // Equal is allowed (`<` in the source); above 32k V0 chunks by default; V1 always.
    for ok in [
        "mode=serve&model=llama-3-8b&engine_version=0.7.3&max_len=8192&max_batched_tokens=8192",
        "mode=serve&model=llama-3-8b&engine_version=0.6.6&max_len=65536&max_batched_tokens=4096",
        "mode=serve&model=llama-3-8b&engine_version=0.8.0&max_len=8192&max_batched_tokens=4096",
        "mode=serve&model=llama-3-8b&engine=sglang&max_len=8192&max_batched_tokens=4096",
    ] {
        assert!(
            serve_warnings(ok)
                .iter()
                .all(|(k, _)| *k != "max_batched_tokens"),
            "{ok}"
        );
    }
    // Without max_len, the preset's context (Qwen2.5 7B: 32,768) is the model length.
    let w =
        serve_warnings("mode=serve&model=qwen2.5-7b&engine_version=0.6.6&max_batched_tokens=16384");
    assert!(
        w.iter()
            .any(|(k, m)| *k == "max_batched_tokens" && m.contains("max_model_len (32768)")),
        "{w:?}"
    );
}

/// SGLang with `mem_fraction_static = 1` holds nothing back: the request-to-token table
/// (allocated first: R = 4,096, (4,097)·(8,196)·4 = 134,316,048 B) leaves the KV pool short
/// and its allocation fails; at 0.995 the 0.39 GiB held back holds the table but not SGLang's
/// own estimate of the graphs (2 MiB · 256), and graph capture fails (SGLang's message);
/// 0.95 starts.
#[test]
fn sglang_high_fractions_fail_at_the_pool_or_the_graphs() {
    let q = "mode=serve&engine=sglang&model=llama-3-8b&max_len=8192";
    let e = refusal(&format!("{q}&gpu_util=1"));
    assert!(
        e.starts_with("torch.OutOfMemoryError: CUDA out of memory while the KV pool is allocated: the request-to-token table allocated before it (ReqToTokenPool, 0.13 GiB)"),
        "{e}"
    );
    let g = refusal(&format!("{q}&gpu_util=0.995"));
    assert!(
        g.starts_with("Capture cuda graph failed: CUDA out of memory"),
        "{g}"
    );
    assert!(g.contains("1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)"));
    assert!(plan(&format!("{q}&gpu_util=0.95")).error.is_none());
}

/// The request-to-token table by hand (`sglang::req_pool_bytes`): 131,072 tokens of context on
/// an H100 at 0.99 hold back 0.79 GiB, below the table's (2,049)·(131,076)·4 B = 1.00 GiB
/// (R = 2,048: ⌊T/C·512⌋ ≈ 2,011 clamped up); `max_seqs=256` shrinks it to 0.13 GiB and the
/// launch passes that check. At 0.98 (1.57 GiB) it starts.
#[test]
fn sglang_request_table_in_the_held_back_share() {
    let q = "mode=serve&engine=sglang&model=llama-3-8b&max_len=131072";
    let e = refusal(&format!("{q}&gpu_util=0.99"));
    assert!(e.contains("ReqToTokenPool, 1.00 GiB"), "{e}");
    assert!(e.contains("does not fit in the 0.79 GiB"), "{e}");
    let small = plan(&format!("{q}&gpu_util=0.99&max_seqs=256")).error;
    assert!(!small.is_some_and(|e| e.contains("ReqToTokenPool")));
    assert!(plan(&format!("{q}&gpu_util=0.98")).error.is_none());
}

/// SGLang's `--page-size` (0.4.4+): the pool's tokens are whole pages, and the
/// chunked-prefill size must be a multiple of the page (SGLang's assertion); 0.4.3 has
/// no pages (`block_size` named, not read).
#[test]
fn sglang_page_size() {
    let q = "mode=serve&engine=sglang&model=llama-3-8b&max_len=8192";
    let one = plan(&format!("{q}&engine_version=0.5.3"));
    let p64 = plan(&format!("{q}&engine_version=0.5.3&block_size=64"));
    assert_eq!(p64.block_size, 64);
    // Same bytes, rounded down to whole pages of 64 tokens.
    assert_eq!(p64.tokens, one.tokens / 64 * 64);
    assert_eq!(p64.tokens % 64, 0);
    // H100 80 GB on 0.5.3: the default chunked prefill is 8,192 tokens (60–160 GiB).
    assert_eq!(
        refusal(&format!("{q}&engine_version=0.5.3&block_size=48")),
        "AssertionError: chunked_prefill_size must be divisible by page_size (chunked_prefill_size 8192, page_size 48)"
    );
    assert!(plan(&format!(
        "{q}&engine_version=0.5.3&block_size=48&max_batched_tokens=4800"
    ))
    .error
    .is_none());
    // Before 0.4.4 there is no --page-size: one token a page.
    let old = plan(&format!("{q}&block_size=64&engine_version=0.4.3"));
    assert_eq!(old.block_size, 1);
    let w = serve_warnings(&format!("{q}&block_size=64&engine_version=0.4.3"));
    assert!(
        w.iter()
            .any(|(k, m)| *k == "block_size" && m.contains("0.4.4")),
        "{w:?}"
    );
}

/// A serving key under an engine without it is named, never read silently: llama.cpp's
/// `parallel` and `ctx_per` under vLLM; the paged engines' `gpu_util`, `max_seqs` and
/// `block_size` under llama.cpp; `max_seqs` under TensorRT-LLM.
#[test]
fn engine_keys_named_where_they_mean_nothing() {
    let keys =
        |q: &str| -> Vec<&'static str> { serve_warnings(q).into_iter().map(|(k, _)| k).collect() };
    let v = "mode=serve&model=llama-3-8b&max_len=8192";
    assert_eq!(
        keys(&format!("{v}&parallel=4&ctx_per=total")),
        ["parallel", "ctx_per"]
    );
    let l = "mode=serve&engine=llamacpp&quant=q4_k_m&model=llama-3-8b&max_len=8192";
    assert_eq!(
        keys(&format!("{l}&gpu_util=0.5&max_seqs=64&block_size=32")),
        ["gpu_util", "max_seqs", "block_size"]
    );
    assert!(keys(&format!("{l}&parallel=4&ctx_per=total")).is_empty());
    let t = "mode=serve&engine=trtllm&model=llama-3-8b&max_len=8192";
    assert_eq!(keys(&format!("{t}&max_seqs=64")), ["max_seqs"]);
    assert!(keys(&format!("{t}&block_size=64")).is_empty());
    // Each ignored key leaves the answer as it was.
    let base = plan(l);
    let with = plan(&format!("{l}&gpu_util=0.5&max_seqs=64&block_size=32"));
    assert_eq!((base.tokens, base.kv.eval()), (with.tokens, with.kv.eval()));
}

/// llama.cpp's cache-type checks (`llamacpp::cache_type_refusal`): a type outside its list
/// fails as the argument is read; a quantized V cache without flash attention fails as the
/// context is created — by default before b6325 (flash attention off), only with `-fa off`
/// after (`-fa auto`). The f16/bf16/f32 caches start either way.
#[test]
fn llamacpp_cache_type_checks() {
    let q = "mode=serve&engine=llamacpp&model=llama-3-8b";
    let err = |extra: &str| plan(&format!("{q}&{extra}")).error;
    for d in ["fp8", "int8", "int4"] {
        let e = err(&format!("kv_dtype={d}")).unwrap();
        assert!(
            e.starts_with(&format!(
                "error while handling argument \"--cache-type-k\": Unsupported cache type: {d}"
            )),
            "{e}"
        );
    }
    let v = err("kv_dtype=q8_0&engine_version=b5000").unwrap();
    assert!(
        v.starts_with("llama_init_from_model: V cache quantization requires flash_attn"),
        "{v}"
    );
    assert!(v.contains("pass -fa"), "{v}");
    assert!(err("kv_dtype=q4_0&flash_attn=off")
        .unwrap()
        .contains("requires flash_attn"));
    for ok in [
        "kv_dtype=q8_0",
        "kv_dtype=q8_0&engine_version=b5000&flash_attn=on",
        "kv_dtype=bf16&flash_attn=off",
        "kv_dtype=fp32&engine_version=b5000",
    ] {
        assert_eq!(err(ok), None, "{ok}");
    }
}
