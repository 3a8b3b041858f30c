//! vLLM's dummy sampler pass by the code that runs its top-k/top-p (issue 38 item 4): the
//! release's default, the `sampler` key, its warnings, and the one log the sort path's
//! bytes were set on; the release's default rows, and the device totals read from logs.

use super::engines::vllm::sampler_path;
use super::tests::plan;
use crate::contract::query::decode;
use crate::scenario::{Sampler, Version};

/// Qwen3-30B-A3B on two H100s, 8,192 batched tokens, 1,024 sampler rows (V = 151,936).
const Q: &str =
    "mode=serve&engine=vllm&model=qwen3-30b-a3b&gpu=h100-80&gpus_per_node=2&tp=2&max_len=8192";

/// The fused-MoE workspace the pass keeps beside the sampler (see `vllm_ep_profiles_whole_experts`).
const A_MOE: u64 = 8192 * 2 * 8 * (2048 + 384);

/// Per release, by hand: 16 B a logit on FlashInfer's path (0.11, the Docker images) and the
/// Triton kernel's (0.19), 36 B on PyTorch's sort, the default of 0.11.1–0.16.
#[test]
fn the_release_picks_the_sampler_path() {
    for (v, per_logit) in [
        ("0.11.0", 16),
        ("0.11.1", 36),
        ("0.11.2", 36),
        ("0.14.0", 36),
        ("0.16.0", 36),
        ("0.19.0", 16),
    ] {
        let p = plan(&format!("{Q}&engine_version={v}"));
        assert_eq!(
            p.activation.eval(),
            1024 * 151_936 * per_logit + A_MOE,
            "{v}"
        );
    }
    // A pip install of 0.11 without flashinfer: the sort path, when the link says so.
    let p = plan(&format!("{Q}&engine_version=0.11.0&sampler=sort"));
    assert_eq!(p.activation.eval(), 1024 * 151_936 * 36 + A_MOE);
    // The Triton kernel takes 8 rows or more; fewer go through the sort.
    let (x, _) = decode(&format!("{Q}&engine_version=0.19.0"));
    assert_eq!(
        sampler_path(&x.scenario, Version(0, 19, 0, 0), 8),
        Sampler::Triton
    );
    assert_eq!(
        sampler_path(&x.scenario, Version(0, 19, 0, 0), 4),
        Sampler::Sort
    );
}

/// The calibration the 36 B came from, and only that: Qwen3-30B-A3B-Instruct-2507 on eight
/// GH200 (TP 4 × PP 2), vLLM 0.10.1 built from source (no flashinfer: the sort path), the
/// `LLM` class's 16,384 batched tokens and 1,024 rows. Its last stage's ranks logged
/// "GPU KV cache size: 6,167,568 tokens" (Isambard-AI benchmark README, 2025-10-08). memfit
/// plans the last stage; with FlashInfer's 16 B it says 6,421,296 (+4.1 %).
#[test]
fn the_sort_path_on_the_gh200_log() {
    let q = "mode=serve&engine=vllm&engine_version=0.10.1&model=qwen3-30b-a3b&gpu=gh200&gpus_per_node=8&tp=4&pp=2&max_len=262144&max_batched_tokens=16384&max_seqs=1024";
    let logged = 6_167_568.0;
    let sort = plan(&format!("{q}&sampler=sort")).report().kv_tokens as f64;
    assert!((sort / logged - 1.0).abs() < 0.005, "{sort}");
    let default = plan(q).report().kv_tokens as f64;
    assert!(default / logged - 1.0 > 0.04, "{default}");
}

/// The log that moved the opt-in to 0.11.1 (a calibration row, read after the 0.11.1 and
/// 0.11.2 sdists showed it): Llama 3 8B Instruct on one H200, vLLM 0.11.2 in Docker
/// (flashinfer installed: its autotuner logs), `max_model_len` 1,024, the API server's
/// 8,192 batched tokens and 1,024 rows on a ≥ 70 GiB GPU (faradawn/bench3 at 446e08c,
/// `logs/vllm_server.log`): "Model loading took 14.9596 GiB", "Available KV cache memory:
/// 105.97 GiB", "GPU KV cache size: 868,080 tokens". The sort path's sampler is
/// 1,024·128,256·36 B = 4.40 GiB; FlashInfer's 16 B would leave 2.68 GiB more for the cache.
#[test]
fn the_sort_path_is_the_default_from_0_11_1() {
    let q = "mode=serve&engine=vllm&engine_version=0.11.2&model=llama-3-8b&gpu=h200&max_len=1024";
    let logged = 868_080.0;
    let p = plan(q);
    assert_eq!(p.activation.eval(), 1024 * 128_256 * 36);
    let tokens = p.report().kv_tokens as f64;
    assert!((tokens / logged - 1.0).abs() < 0.005, "{tokens}");
    let fi = plan(&format!("{q}&sampler=flashinfer")).report().kv_tokens as f64;
    assert!(fi / logged - 1.0 > 0.02, "{fi}");
}

/// `sampler` where it means nothing is named: another engine, vLLM's V0 engine, the Triton
/// kernel before 0.17.
#[test]
fn sampler_keys_that_mean_nothing_are_named() {
    let warn = |q: &str| {
        let (x, _) = decode(q);
        let s = &x.scenario;
        s.serve_problems(&s.arch())
            .into_iter()
            .filter(|(k, _)| *k == "sampler")
            .map(|(_, m)| m)
            .collect::<Vec<_>>()
    };
    let base = "mode=serve&model=llama-3-8b&gpu=h100-80";
    assert!(warn(&format!("{base}&engine=sglang&sampler=sort"))[0].contains("is vLLM's"));
    assert!(warn(&format!(
        "{base}&engine=vllm&engine_version=0.7.3&sampler=sort"
    ))[0]
        .contains("V0"));
    let w = warn(&format!(
        "{base}&engine=vllm&engine_version=0.14.0&sampler=triton"
    ));
    assert!(
        w[0].contains("no Triton") && w[0].contains("0.17.0"),
        "{w:?}"
    );
    // Counted as that release's default (the sort).
    assert_eq!(
        plan(&format!("{Q}&engine_version=0.14.0&sampler=triton"))
            .activation
            .eval(),
        1024 * 151_936 * 36 + A_MOE
    );
    assert!(warn(&format!(
        "{base}&engine=vllm&engine_version=0.19.0&sampler=triton"
    ))
    .is_empty());
    assert!(warn(&format!(
        "{base}&engine=vllm&engine_version=0.10.1&sampler=flashinfer"
    ))
    .is_empty());
}

/// The API server's default rows and batched tokens by release (`BatchRule`, read in the
/// 0.8.0–0.8.5.post1 and 0.9.0 sdists), seen through the dummy sampler's
/// `min(max_num_seqs, max_num_batched_tokens)·V·16 B` (Llama 3 8B, V = 128,256; FlashInfer's
/// 16 B up to 0.11.0), which is above the forward's peak in each case.
#[test]
fn default_rows_follow_the_release() {
    let samp = |rows: u64| rows * 128_256 * 16;
    for (gpu, v, rows) in [
        // 0.8.0–0.8.3: 1,024 rows on every GPU.
        ("rtx4090", "0.8.0", 1024),
        ("rtx4090", "0.8.3", 1024),
        // 0.8.4: 1,024 only where the device name has "h100" or "h200".
        ("rtx4090", "0.8.4", 256),
        ("a100-80", "0.8.4", 256),
        ("h100-80", "0.8.4", 1024),
        ("gh200", "0.8.4", 1024),
        // 0.8.5: 70 GiB of device memory, the A100 80 GB included.
        ("a100-80", "0.8.5", 1024),
        ("rtx4090", "0.8.5", 256),
        // 0.9.0 on: not on an A100.
        ("a100-80", "0.9.0", 256),
        ("h100-80", "0.9.0", 1024),
    ] {
        let p = plan(&format!(
            "mode=serve&engine=vllm&engine_version={v}&model=llama-3-8b&gpu={gpu}&max_len=4096"
        ));
        assert_eq!(p.activation.eval(), samp(rows), "{gpu} {v}");
    }
    // The 160 GiB tier (16,384 batched tokens) first in 0.28.0: with one row the forward's
    // peak, 2·n·(2·4,096 + 3·14,336) B, shows the tokens.
    let fwd = |n: u64| n * 2 * (2 * 4096 + 3 * 14_336);
    for (v, n) in [("0.27.1", 8192), ("0.28.0", 16_384)] {
        let p = plan(&format!(
            "mode=serve&engine=vllm&engine_version={v}&model=llama-3-8b&gpu=b200-180&max_len=4096&max_seqs=1"
        ));
        assert_eq!(p.activation.eval(), fwd(n), "{v}");
    }
}

/// The device totals taken from logs print back as the logs printed them: vLLM's
/// `total × gpu_memory_utilization` and the totals themselves, in GiB to two decimals
/// (L40S, 0.10.2: "(43.93/44.42 GiB)", "(0.9, 39.98 GiB)"; RTX 3090, V0:
/// "total_gpu_memory=23.58GiB"; A100 40 GB, V0: "total_gpu_memory (39.50GiB) x
/// gpu_memory_utilization (0.90) = 35.55GiB").
#[test]
fn device_totals_print_as_the_logs() {
    let total = |gpu: &str| {
        let (x, _) = decode(&format!("mode=serve&gpu={gpu}"));
        x.scenario.cuda_total() as f64 / (1u64 << 30) as f64
    };
    let two = |v: f64| format!("{v:.2}");
    assert_eq!(two(total("l40s")), "44.42");
    assert_eq!(two(0.9 * total("l40s")), "39.98");
    assert_eq!(two(total("rtx3090")), "23.58");
    assert_eq!(two(total("a100-40")), "39.50");
    assert_eq!(two(0.9 * total("a100-40")), "35.55");
    // vLLM 0.10.2's budget on the L40S is the float product (no ceiling before 0.14).
    let p =
        plan("mode=serve&engine=vllm&engine_version=0.10.2&model=llama-3-8b&gpu=l40s&max_len=4096");
    assert_eq!(super::engines::py_gib(p.budget), "39.98");
}
