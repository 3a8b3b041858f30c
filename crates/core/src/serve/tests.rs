use super::engines::{moe_workspace, mxfp4_padding, VllmEra};
use super::*;
use crate::contract::query::decode;
use crate::scenario::Count;
use crate::units::{GIB, MIB};

pub(super) fn plan(q: &str) -> Plan {
    let (x, w) = decode(q);
    assert!(w.is_empty(), "{q}: {w:?}");
    let s = &x.scenario;
    Plan::of(s, &Prepared::of(s), &s.layout())
}

/// vLLM 0.19 (no CUDA-graph subtraction, util 0.90 default), Llama 3 8B on one H100, by
/// hand: every term of `KV = ⌈u·M⌉ − W − A − N_t`.
#[test]
fn vllm_llama_3_8b_by_hand() {
    let p = plan("mode=serve&engine=vllm&engine_version=0.19.0&model=llama-3-8b&max_len=8192");
    let total: u64 = 85_029_158_912; // cudaMemGetInfo total of an H100 80 GB
    let budget = (total as f64 * 0.9).ceil() as u64;
    assert_eq!(p.budget, budget);
    // Weights: 8,030,261,248 parameters in bf16 + the rotary cache (8,192 positions × 128 × 2 B).
    let w = 2 * 8_030_261_248 + 8192 * 128 * 2;
    assert_eq!(p.weights.eval(), w);
    // Profiling: the sampler over 1,024 rows × 128,256 logits at 16 B beats the
    // forward of 8,192 tokens (8,192·2·(2·4,096 + 3·14,336) = 838,860,800 B).
    let a = 1024 * 128_256 * 16;
    assert_eq!(p.activation.eval(), a);
    assert_eq!(p.non_torch.eval(), 256 * MIB);
    let kv = budget - w - a - 256 * MIB;
    // A 16-token block of 32 layers × 2 × 8 heads × 128 × 2 B = 2 MiB.
    let blocks = kv / (2 * MIB);
    assert_eq!(p.blocks, blocks);
    assert_eq!(p.tokens, blocks * 16);
    assert_eq!(p.concurrency, blocks as f64 / 512.0);
    assert!(p.error.is_none());
}

/// The eras: what each release range charges.
#[test]
fn vllm_eras() {
    let e = |a, b, c| VllmEra::of(Version(a, b, c, 0));
    assert!(e(0, 7, 3).v0 && !e(0, 8, 0).v0);
    assert!(e(0, 8, 5).charges_context && !e(0, 9, 1).charges_context);
    assert!(!e(0, 13, 0).ceil_budget && e(0, 14, 0).ceil_budget);
    assert_eq!((e(0, 19, 1).util, e(0, 20, 0).util), (0.90, 0.92));
    assert!(!e(0, 19, 1).graphs && e(0, 20, 0).graphs);
    // From 0.20.2 the tokens are reported as ⌊concurrency · max_len⌋.
    let a = plan("mode=serve&engine_version=0.20.2&model=llama-3-8b&max_len=1000");
    assert_eq!(a.tokens, (a.blocks as f64 / 63.0 * 1000.0) as u64);
}

/// The engine's own refusal, in its words (the typo "models's" until 0.22).
#[test]
fn vllm_refuses_a_context_that_does_not_fit() {
    let p = plan(
        "mode=serve&engine_version=0.19.0&model=llama-3-70b&gpus_per_node=2&tp=2&max_len=1000000",
    );
    let msg = p.error.unwrap();
    assert!(
        msg.starts_with("To serve at least one request with the models's max seq len (1000000)"),
        "{msg}"
    );
    assert!(msg.contains(&format!(
        "the estimated maximum model length is {}",
        p.max_len_fit
    )));
    let p = plan(
        "mode=serve&engine_version=0.22.0&model=llama-3-70b&gpus_per_node=2&tp=2&max_len=1000000",
    );
    let msg = p.error.unwrap();
    assert!(
        msg.contains("the model's max seq len") && msg.contains("(which also controls CPU memory"),
        "{msg}"
    );
    assert!(msg.ends_with("conserving_memory/ for more details."));
    // No memory left under the budget (70B in bf16 over two H100s at 0.5: 65.7 GiB of
    // weights a GPU against a 39.8 GiB budget).
    let p = plan("mode=serve&model=llama-3-70b&max_len=8192&gpus_per_node=2&tp=2&gpu_util=0.5");
    assert!(p
        .error
        .unwrap()
        .starts_with("No available memory for the cache blocks."));
    // Weights larger than the device fail as they load (131.42 GiB on one H100).
    let p = plan("mode=serve&model=llama-3-70b&max_len=8192");
    assert_eq!(
        p.error.unwrap(),
        "torch.OutOfMemoryError: CUDA out of memory while the weights load (131.42 GiB on this rank, 78.6 GiB free)"
    );
    // format_gib: Python's str(round(x, 2)).
    let m = super::engines::vllm_too_long(Version(0, 14, 0, 0), 10, 3 * GIB, GIB + GIB / 10, 5);
    assert!(
        m.contains("(3.0 GiB KV cache") && m.contains("(1.1 GiB)"),
        "{m}"
    );
}

/// KV heads per rank: `max(1, a_kv / t)` — with t = 16 > 8 KV heads every rank keeps one.
#[test]
fn kv_heads_are_replicated_past_their_count() {
    let a = plan("mode=serve&model=llama-3-70b&gpus_per_node=8&tp=8&max_len=8192");
    let b = plan("mode=serve&model=llama-3-70b&gpus_per_node=16&tp=16&max_len=8192");
    // 80 layers × 2 × 1 head × 128 × 2 B.
    assert_eq!(a.per_token, 80 * 2 * 128 * 2);
    assert_eq!(b.per_token, a.per_token);
    // MLA caches one latent of 512 + 64 per layer, on every rank.
    let m = plan("mode=serve&model=deepseek-v2-lite&max_len=8192");
    assert_eq!(m.per_token, 27 * (512 + 64) * 2);
    assert_eq!(m.block_size, 64);
}

/// SGLang 0.5: `mem_fraction_static` from the reserve rule, then tokens from what is left.
#[test]
fn sglang_by_hand() {
    let p = plan("mode=serve&engine=sglang&engine_version=0.5.3&model=llama-3-8b&max_len=8192");
    // H100 (81,559 MiB): reserve = max(512 + 1.5·8,192 + 2·256 + 1/8·1,024, 10,240) = 13,440 MiB.
    let mfs = ((81_559.0f64 - 13_440.0) / 81_559.0 * 1000.0).round() / 1000.0;
    assert_eq!(mfs, 0.835);
    let free = 85_029_158_912u64 - 600 * MIB;
    let rest = free - 2 * 8_030_261_248 - (free as f64 * (1.0 - mfs)) as u64;
    assert_eq!(p.tokens, rest / (32 * 2 * 8 * 128 * 2));
}

/// llama.cpp: n_ctx padded to 256, multiplied by Ollama's parallel; the sliding window's
/// cells `PAD(min(n_ctx, W·parallel + n_ub), 256)`.
#[test]
fn llama_cpp_cells() {
    let p =
        plan("mode=serve&engine=llamacpp&model=llama-3-8b&quant=q4_k_m&max_len=1000&parallel=3");
    assert_eq!(p.tokens, 3072);
    assert_eq!(p.kv.eval(), 3072 * 32 * 2 * 1024 * 2);
    // Gemma 2 9B: 21 global layers of n_ctx cells, 21 windowed of PAD(4,096 + 512) = 4,608.
    let g = plan("mode=serve&engine=llamacpp&model=gemma-2-9b&quant=q4_k_m&max_len=32768");
    let row = 2 * 8 * 256 * 2;
    assert_eq!(g.kv.eval(), (32_768 * 21 + 4608 * 21) * row);
}

#[test]
fn moe_workspace_and_mxfp4_padding_by_hand() {
    let a = &crate::model::preset("qwen3-30b-a3b").unwrap().arch;
    assert_eq!(
        moe_workspace(a, 8192, 2, Count::MIN),
        8192 * 2 * 8 * (2048 + 768)
    );
    let (x, _) = decode("mode=serve&model=gpt-oss-20b&quant=mxfp4");
    let g = &crate::model::preset("gpt-oss-20b").unwrap().arch;
    assert_eq!(
        mxfp4_padding(&x.scenario, g, Count::MIN),
        24 * 32 * 3 * 2880 * 192 * 17 / 32
    );
    // t = 2: 1,440 per rank → 1,536.
    assert_eq!(
        mxfp4_padding(&x.scenario, g, crate::scenario::count(2)),
        24 * 32 * 3 * 2880 * 96 * 17 / 32
    );
}

/// Every plan's items sum to the engine's budget (vLLM) plus the context outside it, when
/// the pool is full; the report rounds the concurrency down to two decimals.
#[test]
fn items_and_report() {
    let p = plan("mode=serve&model=llama-3-8b&max_len=8192&engine_version=0.19.0");
    let r = p.report();
    let parts = r.weights_bytes
        + r.activation_bytes
        + r.non_torch_bytes
        + r.cuda_graph_bytes
        + r.kv_cache_bytes;
    assert!(
        parts <= r.budget_bytes && r.budget_bytes - parts < 2 * MIB,
        "{parts} vs {}",
        r.budget_bytes
    );
    assert_eq!(r.max_concurrency, (p.concurrency * 100.0).floor() / 100.0);
    assert!(r.budget_bytes < 80 * GIB);
}

/// TensorRT-LLM's PyTorch backend by hand: 0.9 of what the weights, the profiling forward,
/// non-torch memory and the context leave, in blocks of 32 tokens.
#[test]
fn trtllm_by_hand() {
    let p = plan("mode=serve&engine=trtllm&model=llama-3-8b&max_len=8192");
    let total: u64 = 85_029_158_912;
    let w = 2 * 8_030_261_248u64;
    let a = 8192 * 2 * (2 * 4096 + 3 * 14_336);
    let free = total - w - a - 256 * MIB - 600 * MIB;
    let kv = (free as f64 * 0.9) as u64;
    let page = 32 * 32 * 2 * 8 * 128 * 2;
    assert_eq!(p.blocks, kv / page);
    assert_eq!(p.tokens, kv / page * 32);
}

/// NF4 weights with and without double quantisation (`double_quant` outside QLoRA).
#[test]
fn nf4_double_quant_outside_qlora() {
    let on = plan("mode=serve&model=llama-3-8b&quant=nf4&max_len=8192")
        .weights
        .eval();
    let off = plan("mode=serve&model=llama-3-8b&quant=nf4&double_quant=0&max_len=8192")
        .weights
        .eval();
    // Without: a 4-byte absmax per 64 weights; with: 1 byte per 64 + 4 per 16,384.
    let q: u64 = 6_979_321_856; // Llama 3 8B's block linears
    assert_eq!(
        off - on,
        4 * q.div_ceil(64) - q.div_ceil(64) - 4 * q.div_ceil(16_384)
    );
}

/// llama.cpp with the output layer on the CPU (`-ngl 0`): the GPU's compute buffer holds a
/// copy of the head matrix (the scheduler runs its product on the GPU), by hand for Qwen3 4B
/// Q6_K (tied: the head is `token_embd`, 2,560 × 151,936 in blocks of 256 weights, 210 B
/// each) beside the f32 logits and hidden state of 512 tokens.
#[test]
fn llamacpp_head_copied_into_the_compute_buffer() {
    let q = "mode=serve&engine=llamacpp&model=qwen3-4b&quant=q6_k&max_len=4096&gpu=l4&engine_version=b5285";
    let head = 2560 * 151_936 / 256 * 210_u64;
    let logits = 4 * 512 * (151_936 + 2560_u64);
    assert_eq!(plan(&format!("{q}&ngl=0")).activation.eval(), head + logits);
    assert_eq!(head + logits, 635_473_408); // 606.03 MiB, as logged
                                            // Every layer and the output on the GPU: no copy.
    assert!(plan(q).activation.eval() < head);
}
