//! SGLang release by release after 0.5.3 (PyPI wheels 0.5.3 … 0.5.23): the refusals'
//! words, the reserve for DP attention, the page on Blackwell, the state cache of Mamba-2
//! hybrids, the multimodal cache's share.

use super::tests::plan;
use crate::units::MIB;

const Q8B: &str = "mode=serve&engine=sglang&model=llama-3-8b&gpu=rtx4090&gpu_util=0.6&max_len=8192";

/// Llama 3 8B on an RTX 4090 with `--mem-fraction-static 0.6`: F = 25,127,026,688 B free
/// before the weights, W = 16,060,522,496 B, the reserve F·0.4 = 10,050,810,675 B leaves
/// nothing. Each release says it its way; 0.5.14 names the fraction that would do:
/// minimum 16,060,522,496 / 25,127,026,688 = 0.6392, suggested ⌈639.17⌉/1000 = 0.640.
#[test]
fn no_room_for_the_pool_in_each_release_s_words() {
    let err = |v: &str| plan(&format!("{Q8B}&engine_version={v}")).error.unwrap();
    let head = "Not enough memory. Please try to increase --mem-fraction-static.";
    assert_eq!(err("0.5.2"), head);
    assert_eq!(
        err("0.5.3"),
        format!("{head} Current value: self.server_args.mem_fraction_static=0.6")
    );
    assert_eq!(
        err("0.5.10"),
        format!("{head} Current value: mem_fraction_static=0.6")
    );
    assert_eq!(
        err("0.5.14"),
        "Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.6. Raise --mem-fraction-static above 0.640 (minimum viable = 1 - available/pre = 0.6392). If using speculative decoding, draft weights are now counted."
    );
    // Weights larger than the free memory fail as they load, in every release.
    let big = plan("mode=serve&engine=sglang&model=llama-2-70b&gpu=rtx4090");
    assert!(big
        .error
        .unwrap()
        .starts_with("torch.OutOfMemoryError: CUDA out of memory while the weights load"));
}

/// The chunked-prefill assertion's message arrived in 0.4.9.post6; a datacenter Blackwell
/// GPU runs a standard-attention model on `trtllm_mha` from 0.5.7 (a page of 64 tokens),
/// an MLA model keeps one token a page.
#[test]
fn pages_by_release_and_gpu() {
    let q = "mode=serve&engine=sglang&model=llama-3-8b&max_len=8192&block_size=48";
    assert_eq!(
        plan(&format!("{q}&engine_version=0.5.23")).error.unwrap(),
        "AssertionError: chunked_prefill_size must be divisible by page_size (chunked_prefill_size 8192, page_size 48)"
    );
    assert!(plan(&format!("{q}&engine_version=0.4.9.post3"))
        .error
        .unwrap()
        .contains("`assert self.chunked_prefill_size % self.page_size == 0`"));
    let b200 = |v: &str, m: &str| {
        plan(&format!("mode=serve&engine=sglang&engine_version={v}&model={m}&gpu=b200-180&gpus_per_node=8&tp=8&max_len=8192")).block_size
    };
    assert_eq!(b200("0.5.6", "llama-3-70b"), 1);
    assert_eq!(b200("0.5.7", "llama-3-70b"), 64);
    assert_eq!(b200("0.5.23", "deepseek-v3"), 1);
    let p = plan(
        "mode=serve&engine=sglang&model=llama-3-70b&gpu=b200-180&gpus_per_node=8&tp=8&max_len=8192",
    );
    assert_eq!(p.tokens % 64, 0);
}

/// Mamba-2 hybrids kept 0.5.3's 512 state slots (or `max_seqs`) while SGLang turned their
/// radix cache off (to 0.5.6); gated-DeltaNet ones took 0.9/1.9 of the pools' memory from
/// 0.5.3.post3 (0.2/1.2 in 0.5.3.post2).
#[test]
fn state_slots_by_release_and_kind() {
    let slots = |m: &str, v: &str| {
        let p = plan(&format!("mode=serve&engine=sglang&engine_version={v}&model={m}&gpu=h100-80&gpus_per_node=4&tp=4&max_len=32768"));
        p.kv.values()
    };
    let nemotron = |v: &str| slots("nemotron-h-8b", v);
    assert!(nemotron("0.5.4").contains("S=512"), "{}", nemotron("0.5.4"));
    assert!(nemotron("0.5.6").contains("S=512"));
    assert!(!nemotron("0.5.6.post1").contains("S=512"));
    let next = |v: &str| slots("qwen3-next-80b-a3b", v);
    assert!(next("0.5.3").contains("S=512"));
    assert!(!next("0.5.3.post3").contains("S=512"));
    // 0.2/1.2 = 1/6 of the rest against 0.9/1.9: fewer slots in .post2.
    let n = |text: String| -> u64 {
        let at = text.find("S=").unwrap() + 2;
        text[at..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect::<String>()
            .parse()
            .unwrap()
    };
    assert!(n(next("0.5.3.post2")) * 2 < n(next("0.5.3.post3")));
}

/// From 0.5.18 a multimodal model's pools give 100 MiB to the encoder's cache
/// (`SGLANG_VLM_CACHE_SIZE_MB`): the held-back bytes grow by exactly that.
#[test]
fn multimodal_cache_share_from_0_5_18() {
    let q = "mode=serve&engine=sglang&model=mistral-small-3.1-24b&gpu=h100-80&max_len=8192&gpu_util=0.9";
    let held = |v: &str| plan(&format!("{q}&engine_version={v}")).activation.eval();
    assert_eq!(held("0.5.18") - held("0.5.17"), 100 * MIB);
    let text =
        "mode=serve&engine=sglang&model=mistral-small-24b&gpu=h100-80&max_len=8192&gpu_util=0.9";
    let held = |v: &str| {
        plan(&format!("{text}&engine_version={v}"))
            .activation
            .eval()
    };
    assert_eq!(held("0.5.18"), held("0.5.17"));
}

/// The distributed start by interconnect (`sglang::dist_init`), against the logs in
/// `tests/data/serve_logs.json`. Calibration rows: the constant is the mean of the NVLink
/// logs' printed "Init torch distributed ends. mem usage" (1.25 GB grok-2 on 8 × H100,
/// 1.96 GB Llama 3.3 70B on 8 × H200) and of the PCIe-only ones (0.13 GB 4 × L4, 0.19 GB
/// 2 × RTX 4090). Qwen3-235B-A22B FP8 on 4 × H100 at 0.93 (vllm#21348, ≈0.4.9; its own
/// tokens not used) was +8.8 % with 164 MiB on every GPU.
#[test]
fn distributed_start_by_interconnect() {
    let tokens = |q: &str| plan(&format!("mode=serve&engine=sglang&{q}")).tokens as f64;
    for (q, logged) in [
        (
            "engine_version=0.4.9&model=qwen3-235b-a22b&quant=fp8&gpu=h100-80&gpus_per_node=4&tp=4&gpu_util=0.93",
            367_404.0,
        ),
        // Default fraction 0.897 (C 8,192, D 512, TP 8: R = 14,848 MiB of 143,771).
        (
            "engine_version=0.5.3&model=llama-3-70b&gpu=h200&gpus_per_node=8&tp=8",
            2_795_207.0,
        ),
    ] {
        let err = tokens(q) / logged - 1.0;
        assert!(err.abs() < 0.01, "{q}: {:+.2} %", 100.0 * err);
    }
    // By hand: the H100 run's free memory falls by 1,644 − 164 = 1,480 MiB, its pool by
    // 0.93 of that, ⌊·/48,128 B⌋ tokens (one KV head of 128 on each of 94 layers, K and V).
    let h100 = "model=qwen3-235b-a22b&quant=fp8&gpus_per_node=4&tp=4&gpu_util=0.93";
    let nvlink = tokens(&format!("{h100}&gpu=h100-80"));
    let pcie = tokens(&format!("{h100}&gpu=h100-pcie"));
    let drop = (1480.0 * MIB as f64 * 0.93 / 48_128.0).round();
    assert!(
        (pcie - nvlink - drop).abs() <= 2.0,
        "{pcie} − {nvlink} vs {drop}"
    );
    // One GPU: no distributed start, NVLink or not.
    let one = "model=llama-3-8b&gpu_util=0.9&max_len=8192";
    let (a, b) = (
        plan(&format!("mode=serve&engine=sglang&{one}&gpu=h100-80")),
        plan(&format!("mode=serve&engine=sglang&{one}&gpu=h100-pcie")),
    );
    assert_eq!(a.tokens, b.tokens);
}

/// Qwen3-8B on one B200, SGLang's main branch of 2026-04-27 (its clean-startup-log skill:
/// default fraction, page 64 from `trtllm_mha`, prefill graphs captured): 992,896 tokens.
/// The GPU is read from the log (177.57 GB free at load begin, the Blackwell-only backend)
/// and the release from the date, so this checks the 0.5.10+ rules; nothing was set from it.
#[test]
fn sglang_b200_default_2026() {
    let p = plan("mode=serve&engine=sglang&engine_version=0.5.10&model=qwen3-8b&gpu=b200-180");
    let err = p.tokens as f64 / 992_896.0 - 1.0;
    assert!(err.abs() < 0.01, "{} ({:+.2} %)", p.tokens, 100.0 * err);
    assert_eq!(p.tokens % 64, 0);
}

/// Gemma 3 12B on 2 × RTX 4090 (sglang#12496, Nov 2025) printed `mem_fraction_static=0.717`
/// with `--chunked-prefill-size 4096`: R = 512 + 1.5·4,096 + 2·24 + 2/8·1,024 = 6,960 MiB of
/// 24,564 → round(0.71666, 3) = 0.717 (the 20–35 GiB tier's D = 24 from 0.5.4.post1; Gemma 3
/// runs with multimodal off from 0.4.6, so no cut). Without the flag: C = 2,048, R = 3,888 →
/// 0.842.
#[test]
fn gemma3_12b_printed_fraction() {
    let q = "mode=serve&engine=sglang&engine_version=0.5.5&model=gemma-3-12b&gpu=rtx4090&gpus_per_node=2&tp=2&kv_dtype=fp8";
    let m = |extra: &str| plan(&format!("{q}{extra}")).activation.values();
    assert!(
        m("&max_batched_tokens=4096").contains("m=717000"),
        "{}",
        m("&max_batched_tokens=4096")
    );
    assert!(m("").contains("m=842000"), "{}", m(""));
}

/// `quant=mxfp4` under SGLang (`sglang::mxfp4_refusal`): unknown before 0.5.0; from it only
/// MoE experts are quantized, and a dense model's linear layers assert.
#[test]
fn sglang_mxfp4_by_release_and_kind() {
    let err = |q: &str| plan(&format!("mode=serve&engine=sglang&{q}")).error;
    let old = err("model=llama-3-8b&quant=mxfp4&engine_version=0.4.10").unwrap();
    assert!(
        old.starts_with("ValueError: Unknown quantization method: mxfp4."),
        "{old}"
    );
    let dense = err("model=llama-3-8b&quant=mxfp4").unwrap();
    assert!(
        dense.starts_with("AssertionError (srt/layers/linear.py"),
        "{dense}"
    );
    assert_eq!(
        err("model=gpt-oss-20b&quant=mxfp4&engine_version=0.5.1&max_len=8192"),
        None
    );
}

/// `graph_bs` (`--cuda-graph-max-bs`, `--disable-cuda-graph`) in SGLang's default fraction,
/// Llama 3 8B on one H100 (g = 81,559 MiB, C = 8,192): R = 512 + 12,288 + 2·D + 128 (+ 8·58
/// prefill graphs from 0.5.10).
/// - D = 32 given (0.5.3): R = 12,992 → 0.841 (the default D = 256: 13,440 → 0.835).
/// - `--disable-cuda-graph` to 0.5.13: the reserve counts the default D and the prefill
///   graphs stay (0.830 on 0.5.13); 0.5.14–0.5.15 turn the prefill graphs off (13,440 →
///   0.835); from 0.5.16 the decode term goes too (12,928 → 0.841).
/// - high fractions: with graphs, 0.995 leaves less than SGLang's graph estimate (capture
///   fails); without them it starts; at 1 the KV pool's allocation fails either way.
#[test]
fn sglang_graph_batch_and_disabled_graphs() {
    let q = "mode=serve&engine=sglang&model=llama-3-8b&gpu=h100-80&max_len=8192";
    let m = |extra: &str| plan(&format!("{q}&{extra}")).activation.values();
    for (extra, mfs) in [
        ("engine_version=0.5.3", "m=835000"),
        ("engine_version=0.5.3&graph_bs=32", "m=841000"),
        ("engine_version=0.5.3&graph_bs=0", "m=835000"),
        ("engine_version=0.5.13&graph_bs=0", "m=830000"),
        ("engine_version=0.5.14&graph_bs=0", "m=835000"),
        ("engine_version=0.5.16&graph_bs=0", "m=841000"),
        ("engine_version=0.5.16", "m=830000"),
    ] {
        assert!(m(extra).contains(mfs), "{extra}: {}", m(extra));
    }
    let on = plan(&format!("{q}&gpu_util=0.995")).error.unwrap();
    assert!(on.starts_with("Capture cuda graph failed"), "{on}");
    assert_eq!(plan(&format!("{q}&graph_bs=0&gpu_util=0.995")).error, None);
    for g in ["", "&graph_bs=0"] {
        let one = plan(&format!("{q}{g}&gpu_util=1")).error.unwrap();
        assert!(one.contains("while the KV pool is allocated"), "{one}");
    }
}

/// vLLM's `--enforce-eager` (`graph_bs=0`): from 0.20 the 512 MiB graph estimate is not
/// subtracted, 256 more blocks of 2 MiB (Llama 3 8B: 16 tokens · 128 KiB); before 0.20
/// nothing changes. Another `graph_bs` is named and counted as the default.
#[test]
fn vllm_enforce_eager() {
    let q = "mode=serve&model=llama-3-8b&gpu=h100-80&max_len=8192";
    let t = |extra: &str| plan(&format!("{q}&{extra}")).tokens;
    assert_eq!(t("graph_bs=0") - t(""), 256 * 16);
    assert_eq!(
        t("engine_version=0.19.0&graph_bs=0"),
        t("engine_version=0.19.0")
    );
    let (x, w) = crate::contract::query::decode(&format!("{q}&graph_bs=64"));
    assert!(w.is_empty());
    let warned = x
        .scenario
        .serve_problems(&crate::serve::Prepared::of(&x.scenario).arch);
    assert!(
        warned
            .iter()
            .any(|(k, m)| *k == "graph_bs" && m.contains("--enforce-eager")),
        "{warned:?}"
    );
    assert_eq!(t("graph_bs=64"), t(""));
}

/// SGLang's sliding-window pool (`sglang::swa_pool`, `kv_pool`): gpt-oss-120b (18 full, 18
/// window layers; a layer's K and V 8 heads · 64 · 2 · 2 B = 2,048 B a token) on one H100:
/// one pool of 73,728 B a token through 0.5.7, from 0.5.8 `T` full tokens at 36,864 + 0.8 ·
/// 36,864 = 66,356 B (rounded up) and ⌊0.8·T⌋ window tokens — 10/9 the tokens from the same
/// bytes. On a B200 (`trtllm_mha`) 0.5.8–0.5.9 keep one pool; 0.5.10 splits there too. Llama
/// 4 (36 chunked of 48 layers) splits from 0.5.8; Gemma 3 never.
#[test]
fn sglang_sliding_window_pool() {
    let q = "mode=serve&engine=sglang&model=gpt-oss-120b&quant=mxfp4&max_len=8192";
    let p = |extra: &str| plan(&format!("{q}&{extra}"));
    let one = p("gpu=h100-80&engine_version=0.5.7");
    let split = p("gpu=h100-80&engine_version=0.5.8");
    assert_eq!((one.per_token, split.per_token), (73_728, 66_356));
    assert_eq!(split.tokens, one.tokens * 73_728 / 66_356);
    let values = split.kv.values();
    assert!(
        values.contains(&format!("T_swa={}", split.tokens * 4 / 5)),
        "{values}"
    );
    assert_eq!(p("gpu=b200-180&engine_version=0.5.9").per_token, 73_728);
    assert_eq!(p("gpu=b200-180&engine_version=0.5.10").per_token, 66_356);
    let scout = |v: &str| {
        plan(&format!("mode=serve&engine=sglang&model=llama-4-scout&gpu=h100-80&gpus_per_node=4&tp=4&max_len=8192&engine_version={v}")).per_token
    };
    // 48 layers of 2 KV heads (8/4) · 128 · 2 · 2 B = 1,024 B: 49,152 in one pool; 12 full
    // and 36 chunked: 12,288 + 0.8 · 36,864 = 41,780 (rounded up).
    assert_eq!((scout("0.5.7"), scout("0.5.8")), (49_152, 41_780));
    let gemma = |v: &str| {
        plan(&format!("mode=serve&engine=sglang&model=gemma-3-12b&gpu=h100-80&max_len=8192&engine_version={v}")).per_token
    };
    assert_eq!(gemma("0.5.7"), gemma("0.5.23"));
}
