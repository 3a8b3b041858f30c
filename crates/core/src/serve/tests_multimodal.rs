//! Multimodal checkpoints and grouped pools: Gemma 3's vision encoder in the served
//! weights, vLLM's padded layer groups, SGLang's fraction cut and its distributed start.
//! The logs are calibration rows (they showed the mechanisms); the held-out SGLang rows
//! are in `sglang_held_out_logs`, never used to set anything.

use super::tests::plan;

/// vLLM 0.19 on an H100 at 0.95 (llm-d planner logs, `tests/data/serve_logs.json`; outside
/// the vLLM split, whose rule leaves vision checkpoints out): the weights each log loads
/// and the tokens it prints. Calibration rows: they showed the vision encoder, the padded
/// groups and the second, 8×-long rotary cache (memfit within 0.07 GiB of each log's
/// weights, tokens −0.16 / −0.01 / +0.35 %).
#[test]
fn vllm_gemma3_logs() {
    for (model, tokens, weights_gib) in [
        ("gemma-3-4b", 468_144u64, 8.58),
        ("gemma-3-12b", 130_304, 23.31),
        ("gemma-3-27b", 36_560, 51.45),
    ] {
        let p = plan(&format!("mode=serve&engine_version=0.19.0&model={model}&gpu=h100-80&max_len=8192&gpu_util=0.95&max_batched_tokens=8192"));
        let err = p.tokens as f64 / tokens as f64 - 1.0;
        assert!(
            err.abs() < 0.005,
            "{model}: {} tokens against {tokens} ({:+.2} %)",
            p.tokens,
            100.0 * err
        );
        // Vision encoder and both rotary caches in: within 0.1 GiB (the log prints 2 decimals).
        let w = p.weights.eval() as f64 / (1u64 << 30) as f64;
        assert!(
            (w - weights_gib).abs() < 0.1,
            "{model}: {w:.2} GiB against {weights_gib}"
        );
    }
}

/// vLLM's groups, by hand: Gemma 3 27B's 10 full and 52 sliding layers are dealt into
/// groups of 10, the last sliding group padded: 70 layers' bytes a token from 0.11.0;
/// 0.10.2 (the old log line) and Gemma 3 12B (8 + 40, no padding) as before.
#[test]
fn vllm_padded_groups() {
    let q = "mode=serve&model=gemma-3-27b&gpu=h100-80&max_len=8192&gpu_util=0.95";
    let new = plan(&format!("{q}&engine_version=0.19.0"));
    let old = plan(&format!("{q}&engine_version=0.10.2"));
    // row = 2 (K, V) · 16 KV heads · 128 · 2 B = 8,192 B a layer.
    assert_eq!(old.per_token, 62 * 8192);
    assert_eq!(new.per_token, 70 * 8192);
    let twelve =
        plan("mode=serve&model=gemma-3-12b&gpu=h100-80&max_len=8192&engine_version=0.19.0");
    assert_eq!(twelve.per_token, 48 * 2 * 8 * 256 * 2);
}

/// SGLang of 2025-03-27 on an H200 (`google/gemma-3-4b-it`, PR 4826's log): 0.88 cut to
/// 0.836 for a multimodal model, 834,615 tokens; 0.4.6 and later run Gemma 3 with
/// multimodal off (no cut).
#[test]
fn sglang_gemma3_multimodal_cut() {
    let q = "mode=serve&engine=sglang&model=gemma-3-4b&gpu=h200&gpu_util=0.88&max_len=131072";
    let p = plan(&format!("{q}&engine_version=0.4.4"));
    assert!(
        (p.tokens as f64 / 834_615.0 - 1.0).abs() < 0.005,
        "{}",
        p.tokens
    );
    let later = plan(&format!("{q}&engine_version=0.4.6"));
    assert!(later.tokens > p.tokens * 105 / 100);
}

/// SGLang logs never used to set anything (held out when the distributed start's 164 MiB
/// was set): Llama 3.1 8B on an 80 GB H100 (SGLang's docs of 2025-01-23, 0.88: 444,500
/// tokens; PR 4760's of 2025-03-25, default fraction: 442,750) and Qwen3-14B on 4 × RTX 4090
/// (TP 4, 0.8: 298,447) — `tests/data/serve_logs.json`: `sglang-docs-sendrequest-h100-llama31-8b`,
/// `sglang-pr4760-h100-llama31-8b`, `sglang-kuiperinfer-4x4090-qwen3-14b`.
#[test]
fn sglang_held_out_logs() {
    let rows = [
        ("mode=serve&engine=sglang&engine_version=0.4.1&model=llama-3-8b&gpu=h100-80&gpu_util=0.88&max_len=131072", 444_500.0),
        ("mode=serve&engine=sglang&engine_version=0.4.4&model=llama-3-8b&gpu=h100-80&max_len=131072", 442_750.0),
        ("mode=serve&engine=sglang&engine_version=0.5.3&model=qwen3-8b&layers=40&hidden=5120&heads=40&kv_heads=8&head_dim=128&ffn=17408&gpu=rtx4090&gpus_per_node=4&tp=4&gpu_util=0.8&max_len=40960", 298_447.0),
    ];
    for (q, logged) in rows {
        let err = plan(q).tokens as f64 / logged - 1.0;
        assert!(err.abs() < 0.03, "{q}: {:+.2} %", 100.0 * err);
    }
}

/// Llama 4 Scout on 4 H100s (vLLM 0.19, llm-d planner log, 0.95; calibration, outside the
/// vLLM split): 53.12 GiB of weights a GPU — the text decoder, the vision encoder split
/// over TP, and the rotary cache of its configured 10,485,760 positions (2.5 GiB in bf16);
/// 365,968 tokens. Without a `max_len` vLLM takes that context and refuses it.
#[test]
fn vllm_llama4_scout_log() {
    let p = plan("mode=serve&engine_version=0.19.0&model=llama-4-scout&gpu=h100-80&gpus_per_node=4&tp=4&max_len=8192&gpu_util=0.95&max_batched_tokens=8192");
    let w = p.weights.eval() as f64 / (1u64 << 30) as f64;
    assert!((w - 53.12).abs() < 0.01, "{w:.3} GiB");
    assert!(
        (p.tokens as f64 / 365_968.0 - 1.0).abs() < 0.01,
        "{}",
        p.tokens
    );
    let default = plan("mode=serve&model=llama-4-scout&gpu=h100-80&gpus_per_node=8&tp=8");
    assert_eq!(default.max_len, 10_485_760);
    assert!(default.error.unwrap().contains("max seq len (10485760)"));
    // SGLang from 0.4.6 builds no vision model for Llama 4 (multimodal off by default).
    let sg = |v: &str| {
        plan(&format!("mode=serve&engine=sglang&engine_version={v}&model=llama-4-scout&gpu=h100-80&gpus_per_node=4&tp=4&max_len=8192")).weights.eval()
    };
    assert!(sg("0.4.5") > sg("0.4.6"));
}

/// Mistral Small 3.1 / 3.2 (vLLM, H100, 0.95; llm-d logs outside the vLLM split, calibration):
/// the Pixtral encoder (438,958,080 parameters) split over TP in its parallel layers. The
/// logs' weights and tokens: bf16 TP 1 (0.19: 44.76 GiB, 184,752), RedHat's w8a8 at TP 1
/// and 2 (24.07 and 12.11 GiB; 319,344 and 773,584) and 3.2 on 0.11 (16,000 tokens:
/// 184,832). SGLang 0.5.3 cuts a defaulted fraction by 0.95 for it (c = 1).
#[test]
fn mistral_small_31_logs() {
    let q = "mode=serve&model=mistral-small-3.1-24b&gpu=h100-80&gpu_util=0.95";
    for (extra, weights_gib, tokens) in [
        ("engine_version=0.19.0&max_len=8192", 44.76, 184_752.0),
        (
            "engine_version=0.19.0&max_len=8192&quant=w8a8",
            24.07,
            319_344.0,
        ),
        (
            "engine_version=0.19.0&max_len=8192&quant=w8a8&gpus_per_node=2&tp=2",
            12.11,
            773_584.0,
        ),
        (
            "engine_version=0.11.0&max_len=16000&max_batched_tokens=8192",
            44.76,
            184_832.0,
        ),
    ] {
        let p = plan(&format!("{q}&{extra}"));
        let w = p.weights.eval() as f64 / (1u64 << 30) as f64;
        assert!((w - weights_gib).abs() < 0.07, "{extra}: {w:.2} GiB");
        assert!(
            (p.tokens as f64 / tokens - 1.0).abs() < 0.005,
            "{extra}: {}",
            p.tokens
        );
    }
    let sg = |fraction: &str| {
        plan(&format!("mode=serve&engine=sglang&engine_version=0.5.3&model=mistral-small-3.1-24b&gpu=h100-80&max_len=8192{fraction}")).budget
    };
    // The text preset's default fraction, cut by 0.95, against the same fraction given
    // (0.5.3: from 0.5.10 the text model's default also holds back its prefill graphs).
    let text = plan("mode=serve&engine=sglang&engine_version=0.5.3&model=mistral-small-24b&gpu=h100-80&max_len=8192").budget;
    assert!((sg("") as f64 / text as f64 - 0.95).abs() < 0.002);
    assert!(sg("&gpu_util=0.9") > sg(""));
}

/// The `vision` key: 0 serves the text decoder alone (a language-only launch), a count
/// replaces the preset's (taken as split over TP), and the engines that do not load the
/// encoder with the model name it (llama.cpp's mmproj file, TensorRT-LLM's own engine).
#[test]
fn vision_key() {
    let q = "mode=serve&engine_version=0.19.0&model=gemma-3-27b&gpu=h100-80&max_len=8192";
    let w = |extra: &str| plan(&format!("{q}{extra}")).weights.eval();
    // 416,866,032 + 6,194,304 parameters in bf16.
    assert_eq!(
        w("") - w("&vision=0"),
        (411_279_984 + 5_586_048 + 6_194_304) * 2
    );
    assert_eq!(w("&vision=1000000") - w("&vision=0"), 2_000_000);
    let tp2 = |extra: &str| {
        plan(&format!("{q}&gpus_per_node=2&tp=2{extra}"))
            .weights
            .eval()
    };
    assert_eq!(tp2("&vision=1000000") - tp2("&vision=0"), 1_000_000);
    let keys = |e: &str| -> Vec<&'static str> {
        let (x, _) = crate::contract::query::decode(&format!(
            "mode=serve&model=gemma-3-4b&engine={e}&vision=400000000"
        ));
        x.scenario
            .serve_problems(&x.scenario.arch())
            .into_iter()
            .map(|(k, _)| k)
            .collect()
    };
    assert!(keys("vllm").is_empty() && keys("sglang").is_empty());
    assert_eq!(keys("trtllm"), ["vision"]);
    assert!(keys("llamacpp").contains(&"vision"));
}

/// Gemma 3's two rotary caches by hand: a local one of P = 131,072 rows and a global one
/// under linear factor 8 (P·8 rows), head 256 (27B: 128), bf16 — `P_rope·d·k` in the weights.
#[test]
fn vllm_gemma3_rotary_caches() {
    for (model, d) in [("gemma-3-4b", 256u64), ("gemma-3-27b", 128)] {
        let p = plan(&format!(
            "mode=serve&engine_version=0.19.0&model={model}&gpu=h100-80&max_len=8192"
        ));
        let want = format!("P_rope·d·k={}", (131_072 + 8 * 131_072) * d * 2);
        assert!(p.weights.values().contains(&want), "{}", p.weights.values());
    }
}

/// Qwen2.5-VL-7B on vLLM (H100 80 GB; logs outside the vLLM split, calibration of nothing:
/// the encoder and M-RoPE's 4·P cache come from the checkpoint and vLLM's source). 0.8.2
/// offline `LLM` (QwenLM/Qwen3-VL issue 1057): "Model loading took 15.6271 GB", 905,648
/// tokens; 0.8.0 at TP 4 (vLLM issue 15136): 3.9972 GB a rank. The tokens are 8.6 % high:
/// the encoder's profiling run is not modelled, and the plan says so.
#[test]
fn vllm_qwen25_vl_logs() {
    let q = "mode=serve&model=qwen2.5-vl-7b&gpu=h100-80";
    for (extra, logged) in [
        (
            "engine_version=0.8.2&max_batched_tokens=16384&max_seqs=1024",
            15.6271,
        ),
        ("engine_version=0.8.0&gpus_per_node=4&tp=4", 3.9972),
    ] {
        let p = plan(&format!("{q}&{extra}"));
        let w = p.weights.eval() as f64 / (1u64 << 30) as f64;
        assert!((w - logged).abs() < 0.07, "{extra}: {w:.4} GiB");
    }
    // M-RoPE: one cache of 4 · 128,000 rows × 128 × 2 B.
    let p = plan(&format!("{q}&engine_version=0.8.2"));
    assert!(p
        .weights
        .values()
        .contains(&format!("P_rope·d·k={}", 4 * 128_000 * 128 * 2)));
    let p = plan(&format!(
        "{q}&engine_version=0.8.2&max_batched_tokens=16384&max_seqs=1024"
    ));
    let err = p.tokens as f64 / 905_648.0 - 1.0;
    assert!(err > 0.0 && err < 0.10, "{:+.2} %", 100.0 * err);
    let (x, _) = crate::contract::query::decode(&format!("{q}&engine_version=0.8.2"));
    let warned = |s: &crate::scenario::Scenario| {
        s.serve_problems(&s.arch())
            .iter()
            .any(|(k, m)| *k == "vision" && m.contains("+8.6 %"))
    };
    assert!(warned(&x.scenario));
    let (x, _) = crate::contract::query::decode(&format!("{q}&engine_version=0.8.2&vision=0"));
    assert!(!warned(&x.scenario));
}

/// SGLang 0.5.3's budget for a preset on one H100 with the defaulted fraction, bytes.
fn sglang_budget(model: &str) -> f64 {
    plan(&format!(
        "mode=serve&engine=sglang&engine_version=0.5.3&model={model}&gpu=h100-80&max_len=8192"
    ))
    .budget as f64
}

/// SGLang's cut for Qwen2.5-VL from 0.4.10 reads `vision_config` as the config gives it:
/// no `num_hidden_layers` (Qwen names it `depth`: 24 taken), `hidden_size` 1,280, so
/// c = 24·1280²/(24·1024²) = 1.5625 and the defaulted fraction is cut by
/// 0.95·(1 − 0.1·0.5625) = 0.8965625.
#[test]
fn sglang_qwen25_vl_cut() {
    let r = sglang_budget("qwen2.5-vl-7b") / sglang_budget("qwen2.5-7b");
    assert!((r - 0.8965625).abs() < 0.002, "{r}");
}

/// Qwen3-VL-8B on vLLM, by hand: Qwen3 8B's 8,190,735,360 and the encoder's 576,388,336
/// parameters in bf16, and M-RoPE's cache of 4 · 262,144 rows × 128 × 2 B (256 MiB); the
/// encoder's profiling run named. SGLang (0.5.3, defaulted fraction) cuts by
/// 0.95·(1 − 0.1·(1152²/1024² − 1)) = 0.924766 (no `num_hidden_layers`: 24 read).
#[test]
fn qwen3_vl_by_hand() {
    let q = "mode=serve&engine_version=0.19.0&model=qwen3-vl-8b&gpu=h100-80&max_len=8192";
    let p = plan(q);
    assert_eq!(
        p.weights.eval(),
        (8_190_735_360 + 576_388_336) * 2 + 4 * 262_144 * 128 * 2
    );
    let (x, _) = crate::contract::query::decode(q);
    let s = &x.scenario;
    assert!(s
        .serve_problems(&s.arch())
        .iter()
        .any(|(k, _)| *k == "vision"));
    let r = sglang_budget("qwen3-vl-8b") / sglang_budget("qwen3-8b");
    assert!((r - 0.924766).abs() < 0.002, "{r}");
}

/// SGLang's state cache for a gated-DeltaNet hybrid, by hand: Qwen3.5-9B (the import's
/// keys) at TP 2 on RTX 4090s, 0.8, 262,144 tokens (a 2026 build's log, a calibration row:
/// "max_mamba_cache_size: 186", 327,310 tokens). σ = 24 blocks · (3 · 8,192/2 · 2 B +
/// 32/2 · 128 · 128 · 4 B) = 25,755,648 B; from 0.5.4 the slots take 0.9/1.9 of what is left.
#[test]
fn sglang_gdn_state_cache() {
    let q = "mode=serve&engine=sglang&layers=32&hidden=4096&heads=16&kv_heads=4&head_dim=256&ffn=12288&vocab=248320&tied=0&rope_partial=1&linear_layers=24&ssm_conv=4&lin_k_heads=16&lin_v_heads=32&lin_k_dim=128&lin_v_dim=128&params=8953803264&vision=456010480&gpu=rtx4090&gpus_per_node=2&tp=2&gpu_util=0.8&max_len=262144";
    let p = plan(&format!("{q}&engine_version=0.5.9"));
    let sigma = 24 * (3 * 4096 * 2 + 16 * 128 * 128 * 4);
    assert_eq!(sigma, 25_755_648);
    assert!(
        p.kv.values().contains(&format!("σ={sigma}")),
        "{}",
        p.kv.values()
    );
    let err = p.tokens as f64 / 327_310.0 - 1.0;
    assert!(err.abs() < 0.05, "{:+.2} %", 100.0 * err);
    // The slots and the tokens share what is left: S·σ ≈ 0.9 · tokens · c_tok.
    let values = p.kv.values();
    let slots = values
        .split("S=")
        .nth(1)
        .unwrap()
        .split(',')
        .next()
        .unwrap();
    let state = slots.parse::<u64>().unwrap() * sigma;
    let ratio = state as f64 / (p.tokens * p.per_token) as f64;
    assert!((ratio - 0.9).abs() < 0.01, "{ratio}");
    // 0.5.2–0.5.3: 512 slots (or max_running_requests); before 0.5.2 no state is counted.
    let early = plan(&format!("{q}&engine_version=0.5.3&max_seqs=64"));
    assert!(early.kv.values().contains("S=64,"));
    let none = plan(&format!("{q}&engine_version=0.5.1"));
    assert!(!none.kv.values().contains('σ'));
}

/// The value of symbol `name` in a plan's KV-pool expression (the last in its list).
fn kv_value(query: &str, name: &str) -> String {
    let v = plan(query).kv.values();
    let tail = v.split(&format!("{name}=")).nth(1).unwrap_or("");
    tail.split([',', ';']).next().unwrap_or("").to_string()
}

/// `ssm_dtype` (the checkpoint's `mamba_ssm_dtype`; Qwen3.5 declares float32): vLLM's state
/// page holds the recurrent state in it (else the model dtype), SGLang's slots too (else
/// fp32). Qwen3.5-9B's gated DeltaNet at TP 1: conv 3 · 8,192 · 2 B = 49,152 B, state
/// 32 · 128 · 128 = 524,288 elements.
#[test]
fn ssm_dtype_sets_the_state_bytes() {
    let q = "mode=serve&layers=32&hidden=4096&heads=16&kv_heads=4&head_dim=256&ffn=12288&vocab=248320&linear_layers=24&ssm_conv=4&lin_k_heads=16&lin_v_heads=32&lin_k_dim=128&lin_v_dim=128&gpu=h100-80&max_len=32768";
    let page = |extra: &str| kv_value(&format!("{q}&engine_version=0.19.0{extra}"), "page");
    // B = 16·⌈P_s/(16·c_1)⌉ with c_1 = 2 · 4 · 256 · 2 B = 4,096 B a token and layer.
    let padded = |p_s: u64| (16 * p_s.div_ceil(16 * 4096) * 4096).to_string();
    assert_eq!(page(""), padded(49_152 + 524_288 * 2));
    assert_eq!(page("&ssm_dtype=fp32"), padded(49_152 + 524_288 * 4));
    let sigma = |extra: &str| {
        kv_value(
            &format!("{q}&engine=sglang&engine_version=0.5.9{extra}"),
            "σ",
        )
    };
    assert_eq!(sigma(""), (24 * (49_152 + 524_288 * 4)).to_string());
    assert_eq!(
        sigma("&ssm_dtype=bf16"),
        (24 * (49_152 + 524_288 * 2)).to_string()
    );
}
