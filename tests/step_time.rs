//! The step-time model: by hand, its properties, the explorer's figures, and the published
//! training runs (`tests/data/train_runs.json`; half held out by `tools/train_split.py`
//! before any comparison). The budget of the issue (held-out median |error| ≤ 8 %, max ≤ 20 %)
//! is NOT met yet: the figures below are guards against regressions, and the README and
//! docs/steptime.md say so.

use memfit_core::contract::query::decode;
use memfit_core::estimate::Prepared;
use memfit_core::steptime::{step_time, StepTime};
use proptest::prelude::*;

fn time(q: &str) -> StepTime {
    let (x, w) = decode(q);
    assert!(w.is_empty(), "{q}: {w:?}");
    step_time(&x.scenario, &Prepared::of(&x.scenario)).expect("training")
}

/// Llama 3 8B on one H100, micro-batch 1 × 8,192 tokens, no parallelism, by hand: the
/// GEMMs at the rates measured for their shapes (the H200's table: the same GH100 die and
/// clocks), attention at 0.55 (Megatron's kernels), the element-wise bytes at 0.8 of HBM, the
/// logits and the loss, the optimizer step.
#[test]
fn one_gpu_by_hand() {
    let t = time("model=llama-3-8b&seq=8192&framework=megatron");
    let peak = 989.4e12;
    let tok = 8192.0f64;
    let (h, f, kv) = (4096.0f64, 14_336.0f64, 1024.0f64);
    // Every block GEMM is a measured shape (M = 8,192): QKV 800.6, o 690.8, gate+up 702.6,
    // down 651.9 TFLOP/s (forward, data and weight gradient together).
    let at = |flop: f64, tflops: f64| flop / (tflops * 1e12);
    let g = at(2.0 * tok * h * (h + 2.0 * kv), 800.6)
        + at(2.0 * tok * h * h, 690.8)
        + at(2.0 * tok * h * 2.0 * f, 702.6)
        + at(2.0 * tok * f * h, 651.9);
    let attn = 4.0 * tok * tok * 32.0 * 128.0 * 0.5 / (peak * 0.55);
    let ew = tok * 2.0 * (12.0 * h + 3.0 * f) / (3350e9 * 0.8);
    let block = (g + attn + ew) + (2.0 * g + 2.5 * attn + 2.0 * ew);
    // The LM head (forward and two backward GEMMs) and Megatron's unfused cross entropy:
    // 52 bytes per logit over 0.8 of HBM.
    // The LM head (8,192 × 4,096 · 4,096 × 128,256) is no measured shape: the table's
    // estimate (`gemm_table::efficiency`, checked by hand in its unit tests).
    let head = 2.0 * tok * h * 128_256.0;
    let head_rate = 989.4
        * memfit_core::steptime::gemm_table::efficiency(
            memfit_core::steptime::gemm_table::H200,
            tok,
            h,
            128_256.0,
            false,
            989.4,
            4.0,
        );
    let logits = 3.0 * at(head, head_rate) + tok * 128_256.0 * 52.0 / (3350e9 * 0.8);
    let opt = 8_030_261_248.0 * 30.0 / (3350e9 * 0.8);
    let want = 32.0 * block + logits + opt;
    assert!(
        (t.step_s / want - 1.0).abs() < 1e-9,
        "{} vs {want}",
        t.step_s
    );
    assert_eq!(t.breakdown.bubble_s, 0.0);
    assert!((t.tokens_per_s - tok / t.step_s).abs() < 1e-6);
}

/// FlashAttention-1 and the 2022 Triton kernel (`attn=flash1`) run at half
/// FlashAttention-2's share of the peak on the same GPU (0.275 on an A100, 0.165 on Hopper):
/// by hand, the step grows by each block's attention forward and backward (1 + 2.5 passes) at
/// that share, less FlashAttention-2's time: on an A100 0.55 of the peak, on an H100 the rate
/// measured by call size (`593·F/(F + 192 GFLOP)` TFLOP/s, F the forward + backward GFLOP).
#[test]
fn flash1_attention_by_hand() {
    // The causal half of 4·b·s²·a·d.
    let fwd = 4.0 * 8192.0f64 * 8192.0 * 32.0 * 128.0 * 0.5;
    let f = 3.5 * fwd / 1e9;
    let measured = f * 1e9 / (593.0e12 * f / (f + 192.0)) / 3.5;
    for (gpu, fa1, fa2) in [
        ("h100-80", fwd / (989.4e12 * 0.165), measured),
        ("a100-80", fwd / (312e12 * 0.275), fwd / (312e12 * 0.55)),
    ] {
        let q = format!("model=llama-3-8b&seq=8192&framework=pytorch&gpu={gpu}");
        let (a, b) = (time(&q), time(&format!("{q}&attn=flash1")));
        let extra = 32.0 * (1.0 + 2.5) * (fa1 - fa2);
        let got = b.step_s - a.step_s;
        assert!((got / extra - 1.0).abs() < 1e-9, "{gpu}: {got} vs {extra}");
    }
}

/// fp8 training keeps the logits GEMM in 16 bits (Megatron's output layer is not a
/// Transformer Engine module): `Hw::gemm16_s` by hand, its doc example, and the override.
#[test]
fn fp8_logits_in_16_bits_by_hand() {
    use memfit_core::steptime::Hw;
    let hw = |q: &str| Hw::of(&decode(q).0.scenario);
    let f = 2.0 * 4096.0 * 4096.0 * 128_256.0 / 1e9; // Llama 3 8B's logits, 4,096 tokens
    let fp8 = hw("model=llama-3-8b&precision=fp8&gpu=h100-80");
    let t16 = f * 1e9 / (989.4e12 * 0.80 * f / (f + 4.0));
    let t8 = f * 1e9 / (1978.9e12 * 0.709 * f / (f + 4.0));
    assert!((fp8.gemm16_s(f) / t16 - 1.0).abs() < 1e-12);
    assert!((fp8.gemm_s(f) / t8 - 1.0).abs() < 1e-12);
    assert!((t16 * 1e3 - 5.44).abs() < 0.005 && (t8 * 1e3 - 3.07).abs() < 0.005);
    // A `tflops` override is the fp8 peak; the 16-bit one keeps the preset's ratio.
    let o = hw("model=llama-3-8b&precision=fp8&gpu=h100-80&tflops=1500");
    assert!((o.tflops16 - 1500.0 * 989.4 / 1978.9).abs() < 1e-9);
    // Outside fp8 the two are the same GEMM.
    let bf16 = hw("model=llama-3-8b&gpu=h100-80");
    assert_eq!(bf16.gemm16_s(f), bf16.gemm_s(f));
}

/// The cross entropy's memory traffic by kernel (`ce_fusion`), by hand: 52 bytes per logit
/// unfused, 28 with Megatron's native fusion, 10 with Transformer Engine's, at 0.8 of HBM;
/// one micro-batch of Llama 3 8B at 8,192 tokens on an H100. Outside Megatron the key
/// changes nothing and says so.
#[test]
fn cross_entropy_kernels_by_hand() {
    let q = "model=llama-3-8b&seq=8192&framework=megatron";
    let off = time(q).step_s;
    let logits = 8192.0 * 128_256.0;
    let bw = 3350e9 * 0.8;
    for (ce, beta) in [("native", 28.0), ("te", 10.0)] {
        let t = time(&format!("{q}&ce_fusion={ce}")).step_s;
        let want = logits * (52.0 - beta) / bw;
        assert!(
            ((off - t) / want - 1.0).abs() < 1e-9,
            "{ce}: {} vs {want}",
            off - t
        );
    }
    // Unfused: 52 B over 1.05·10⁹ logits is 20.4 ms a micro-batch.
    assert!((logits * 52.0 / bw * 1e3 - 20.4).abs() < 0.05);
    let (x, w) = decode("model=llama-3-8b&framework=pytorch&ce_fusion=te");
    let report = memfit_core::contract::report::estimate_with(&x.scenario, &w);
    let text = serde_json::to_string(&report).unwrap();
    assert!(
        text.contains("ce_fusion=native and te are Megatron's"),
        "{text}"
    );
    let p = Prepared::of(&x.scenario);
    let plain = decode("model=llama-3-8b&framework=pytorch").0;
    assert_eq!(
        step_time(&x.scenario, &p),
        step_time(&plain.scenario, &Prepared::of(&plain.scenario))
    );
}

/// Every published run with the query the evaluation builds for it (on an H100, no
/// cluster overrides).
fn run_queries() -> Vec<(serde_json::Value, String)> {
    let runs: serde_json::Value =
        serde_json::from_str(memfit_evidence::steptime::RUNS).expect("runs");
    let clusters = serde_json::json!({});
    runs["runs"]
        .as_array()
        .expect("array")
        .iter()
        .map(|r| {
            let q = memfit_evidence::steptime::run_query(r, "h100-80", &clusters);
            (r.clone(), q)
        })
        .collect()
}

/// The recipe settings the evaluation reads from the rows: Megatron-Bridge's fused cross
/// entropy (Transformer Engine), NeMo 24.07's native fusion for the Llama 3 and Nemotron
/// 8B/22B configs, the 25.11 Llama 3 8B H100 recipe's five recomputed layers.
#[test]
fn recipe_settings_reach_the_queries() {
    let mut seen = std::collections::BTreeMap::new();
    for (r, q) in run_queries() {
        let ce = r["ce_fusion"].as_str().unwrap_or("off");
        *seen.entry(ce.to_string()).or_insert(0) += 1;
        assert_eq!(q.contains("ce_fusion="), ce != "off", "{q}");
        if ce != "off" {
            assert!(q.contains(&format!("ce_fusion={ce}")), "{q}");
        }
        if r["id"] == "mbridge_2511_h100_llama3_8b_fp8_8gpu_gbs128" {
            assert!(
                q.contains("recompute=full") && q.contains("ckpt_layers=5"),
                "{q}"
            );
        }
    }
    // 21 dense Megatron-Bridge rows and the 4 Qwen3 MoE rows.
    assert_eq!(seen.get("te"), Some(&25));
    assert_eq!(seen.get("native"), Some(&4));
    assert_eq!(seen.get("flash"), Some(&4));
}

/// Every published run the evaluation compares ran on its GPUs, so memfit must say it fits
/// there, with the memory settings its recipe states (`memory_keys`, `ce_fusion`, each
/// cited in `memory_source`), or the row must name the setting memfit cannot express that
/// explains it (`memory_unmodelled`, with its source and its effect by hand).
#[test]
fn every_published_run_that_ran_fits_or_names_why() {
    let runs: serde_json::Value =
        serde_json::from_str(memfit_evidence::steptime::RUNS).expect("runs");
    let row = |id: &str| {
        runs["runs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == id)
            .unwrap()
            .clone()
    };
    let compared = memfit_evidence::steptime::compare(memfit_evidence::steptime::Part::All);
    assert!(compared.len() > 80, "{}", compared.len());
    let mut named = Vec::new();
    for c in &compared {
        let (x, _) = decode(&c.query);
        let e = memfit_core::estimate::estimate(&x.scenario);
        let r = row(&c.id);
        if r["memory_keys"].is_string() || r["ce_fusion"] == "flash" {
            assert!(
                r["memory_source"].as_str().is_some_and(|s| s.len() > 40),
                "{}: no source",
                c.id
            );
        }
        if !e.fits {
            let why = r["memory_unmodelled"].as_str().unwrap_or("");
            assert!(
                why.len() > 40,
                "{} ran but memfit says it does not fit ({} B): {}",
                c.id,
                e.per_gpu_bytes,
                c.query
            );
            named.push(c.id.clone());
        }
    }
    // The one left: Nemotron-4 340B under NeMo 24.07 keeps bf16 Adam moments and no fp32
    // master (no memfit key).
    assert_eq!(named, ["nemo2407_nemotron_340b_128gpu"]);
}

/// Transformer Engine's fp8 quantization traffic (`fp8_recipe`), by hand for one token of
/// Llama 3 8B's block (h = 4,096, 8 KV heads of 128, f = 14,336): each GEMM's input in the
/// forward (a norm-fed one fused with the norm under Megatron), each output gradient in
/// the backward, at 3 B a value plus a column-wise copy where cuBLAS takes fp8 only as TN
/// (Hopper), an amax pass for current scaling, block scales for MXFP8.
#[test]
fn fp8_quantization_by_hand() {
    use memfit_core::steptime::{flops, fp8_quant_bytes};
    let bytes = |q: &str| {
        let (x, w) = decode(q);
        assert!(w.is_empty(), "{q}: {w:?}");
        let s = &x.scenario;
        let p = Prepared::of(s);
        fp8_quant_bytes(s, &flops::block(&p.arch, 1.0, 1.0, 1.0, 1.0, 1.0))
    };
    let (h, f) = (4096.0, 14_336.0);
    // Input values: QKV and fc1 read the norms (h each), o reads h, fc2 reads f.
    // Gradient values: QKV's 4,096 + 2·1,024, o's h, fc1's 2f (SwiGLU), fc2's h.
    let grads = 6144.0 + h + 2.0 * f + h;
    let q = "model=llama-3-8b&precision=fp8&framework=megatron";
    // Hopper, delayed: the norm writes fp8 (−1 B) and is transposed later (+2); the rest
    // cast and transpose (4 B).
    let want = (1.0 * h + 4.0 * h + 1.0 * h + 4.0 * f, 4.0 * grads);
    assert_eq!(want, (81_920.0, 172_032.0));
    assert_eq!(bytes(&format!("{q}&gpu=h100-80")), want);
    // Hopper, current scaling: an amax pass (+2) except where the norm computes it.
    let want = (4.0 * h + 6.0 * h + 4.0 * h + 6.0 * f, 6.0 * grads);
    assert_eq!(want, (143_360.0, 258_048.0));
    assert_eq!(
        bytes(&format!("{q}&gpu=h100-80&fp8_recipe=tensorwise")),
        want
    );
    // Blackwell takes fp8 in any layout: no column-wise copies for per-tensor scaling.
    let want = (3.0 * h + 5.0 * h + 3.0 * h + 5.0 * f, 5.0 * grads);
    assert_eq!(
        bytes(&format!("{q}&gpu=b200-180&fp8_recipe=tensorwise")),
        want
    );
    // MXFP8: row- and column-wise copies, a 1-byte scale per 32 values on each.
    let mx = 2.0 + 1.0 + 1.0 + 2.0 / 32.0;
    let want = (mx * (3.0 * h + f), mx * grads);
    assert_eq!(want, (108_160.0, 174_720.0));
    assert_eq!(bytes(&format!("{q}&gpu=b200-180&fp8_recipe=mxfp8")), want);
    // Outside Megatron (te.Linear after a PyTorch norm) every input is cast and transposed.
    let py = "model=llama-3-8b&precision=fp8&framework=pytorch&gpu=h100-80";
    assert_eq!(bytes(py), (4.0 * (3.0 * h + f), 4.0 * grads));
    // bf16 moves none.
    assert_eq!(bytes("model=llama-3-8b&framework=megatron"), (0.0, 0.0));
    // The step: two micro-batches of 4,096 tokens through 32 blocks, forward and
    // backward, at 0.8 of the H100's 3,350 GB/s; current scaling costs 14.4 ms more.
    let q = "model=llama-3-8b&precision=fp8&framework=megatron&gpu=h100-80&seq=4096&microbatches=2";
    let extra =
        2.0 * 32.0 * 4096.0 * ((143_360.0 - 81_920.0) + (258_048.0 - 172_032.0)) / (3350e9 * 0.8);
    let got = time(&format!("{q}&fp8_recipe=tensorwise")).step_s - time(q).step_s;
    assert!((got / extra - 1.0).abs() < 1e-9, "{got} vs {extra}");
    assert!((extra * 1e3 - 14.42).abs() < 0.01, "{extra}");
}

/// `fp8_recipe` outside fp8 training is ignored and says so; a recipe Transformer Engine
/// refuses on the GPU is reported (MXFP8 below Blackwell, block scaling off Hopper).
#[test]
fn fp8_recipe_problems() {
    let says = |q: &str, what: &str| {
        let (x, w) = decode(q);
        let report = memfit_core::contract::report::estimate_with(&x.scenario, &w);
        let text = serde_json::to_string(&report).unwrap();
        assert!(text.contains(what), "{q}: {text}");
    };
    says(
        "model=llama-3-8b&fp8_recipe=tensorwise",
        "fp8_recipe applies to fp8 training",
    );
    says(
        "model=llama-3-8b&precision=fp8&gpu=h100-80&fp8_recipe=mxfp8",
        "MXFP8 on datacenter Blackwell only",
    );
    says(
        "model=llama-3-8b&precision=fp8&gpu=b200-180&fp8_recipe=blockwise",
        "block scaling on Hopper only",
    );
    // Where it runs, nothing is said.
    let (x, w) = decode("model=llama-3-8b&precision=fp8&gpu=b200-180&fp8_recipe=mxfp8");
    let report = memfit_core::contract::report::estimate_with(&x.scenario, &w);
    assert!(!serde_json::to_string(&report)
        .unwrap()
        .contains("fp8_recipe"));
}

/// The evaluation passes each fp8 row's scaling recipe: Megatron-Bridge's current scaling
/// (11 dense rows and 4 MoE) and MXFP8 (6), NeMo's and llm-foundry's delayed scaling (28); torchtitan's
/// torchao float8 rows (22) carry none.
#[test]
fn fp8_recipes_reach_the_queries() {
    let mut seen = std::collections::BTreeMap::new();
    for (r, q) in run_queries() {
        if let Some(f) = r["fp8_recipe"].as_str() {
            assert!(q.contains(&format!("fp8_recipe={f}")), "{q}");
            *seen.entry(f.to_string()).or_insert(0) += 1;
        } else {
            assert!(!q.contains("fp8_recipe="), "{q}");
        }
    }
    let n = |k: &str| seen.get(k).copied().unwrap_or(0);
    // Current scaling: 11 dense rows and the 4 Qwen3 MoE rows.
    assert_eq!((n("tensorwise"), n("mxfp8"), n("delayed")), (15, 6, 28));
}

/// The evaluation passes llm-foundry's Triton attention as `attn=flash1`, and only for the
/// rows whose launch scripts ran it.
#[test]
fn triton_rows_run_flash1() {
    let (mut triton, mut flash) = (0, 0);
    for (r, q) in run_queries() {
        match r["attn_impl"].as_str() {
            Some("triton") => {
                triton += 1;
                assert!(q.contains("attn=flash1"), "{q}");
            }
            _ => {
                flash += usize::from(r["attn_impl"] == "flash");
                assert!(!q.contains("attn=flash1"), "{q}");
            }
        }
    }
    // The one-node tables (12 rows) and the large-scale 13B and 30B (6): Triton; the
    // large-scale 1B, 3B, 7B and 70B (12): flash-attn 2.
    assert_eq!((triton, flash), (18, 12));
}

/// Hidden communication slows the compute beside it by `φ = 24/n_SM` of its duration
/// (NCCL's thread blocks hold SMs) unless the wire is the bottleneck: with data parallelism
/// alone and compute-bound, the charge is φ × the DP traffic; the parts still add up to the
/// step; φ is the documented share per GPU.
#[test]
fn contention_by_hand() {
    use memfit_core::steptime::{contended, contention_share, Hw};
    let q = "model=llama-3-8b&seq=8192&gpus_per_node=8&microbatches=4&framework=megatron&zero=1";
    let t = time(q);
    let b = t.breakdown;
    // Compute-bound: the whole reduction runs beside the last backward, which it slows by φ.
    assert!(b.dp_comm_s > 0.0 && b.exposed_comm_s < b.dp_comm_s, "{b:?}");
    assert!(
        (b.contention_s - 24.0 / 132.0 * b.dp_comm_s).abs() < 1e-12,
        "{b:?}"
    );
    let sum = b.compute_s
        + b.recompute_s
        + b.exposed_comm_s
        + b.contention_s
        + b.bubble_s
        + b.optimizer_s
        + b.offload_s;
    assert!((sum / t.step_s - 1.0).abs() < 1e-9);
    // Gaudi 3's collectives run on its NICs' engines; one GPU hides nothing.
    assert_eq!(time(&format!("{q}&gpu=gaudi3")).breakdown.contention_s, 0.0);
    assert_eq!(
        time("model=llama-3-8b&seq=8192&framework=megatron")
            .breakdown
            .contention_s,
        0.0
    );
    // Communication-bound overlaps cost only what the slowed compute outgrows (`contended`'s
    // doc example).
    let h = 24.0 / 132.0;
    assert!((contended(0.010, 0.030, h) - h * 0.010).abs() < 1e-15);
    assert!((contended(0.010, 0.009, h) - (0.009 * (1.0 + h) - 0.010)).abs() < 1e-15);
    assert!((contended(0.010, 0.009, h) * 1e3 - 0.636).abs() < 0.001);
    assert_eq!(contended(0.010, 0.005, h), 0.0);
    let phi = |gpu: &str| contention_share(&Hw::of(&decode(&format!("gpu={gpu}")).0.scenario));
    assert!((phi("h100-80") - 0.1818).abs() < 1e-4);
    assert!((phi("a100-80") - 0.2222).abs() < 1e-4);
    assert!((phi("b200-180") - 0.1622).abs() < 1e-4);
}

/// The pipeline bubble is (p − 1)/v micro-batches; interleaving divides it.
#[test]
fn bubble_by_hand() {
    let a =
        time("model=llama-3-8b&seq=4096&gpus_per_node=4&pp=4&microbatches=8&framework=megatron");
    let b = time("model=llama-3-8b&seq=4096&gpus_per_node=4&pp=4&microbatches=8&vpp=2&schedule=interleaved&framework=megatron");
    assert!(a.breakdown.bubble_s > 0.0);
    assert!(
        (b.breakdown.bubble_s / a.breakdown.bubble_s - 0.5).abs() < 0.05,
        "{} {}",
        a.breakdown.bubble_s,
        b.breakdown.bubble_s
    );
}

/// Megatron's interleaved schedule overlaps the steady phase's point-to-point transfers
/// (`overlap_p2p_comm`); only the first stage's warm-up and flush transfers wait, by hand.
/// 1F1B without interleaving waits for every transfer.
#[test]
fn interleaved_p2p_overlap_by_hand() {
    // Llama 3 70B, TP 8 × PP 4 on 4 nodes of 8 (a stage per node: transfers cross nodes),
    // 16 micro-batches, v = 2 (m a multiple of p, as Megatron asserts).
    let base = "model=llama-3-70b&seq=4096&gpus_per_node=8&nodes=4&tp=8&pp=4&sp=1&microbatches=16&framework=megatron";
    let plain = time(base);
    let inter = time(&format!("{base}&vpp=2&schedule=interleaved"));
    // One transfer: α + (4,096 tokens × 8,192 × 2 B / 8 with SP) / (50 GB/s × 0.92).
    let one = 50e-6 + 4096.0 * 8192.0 * 2.0 / 8.0 / (50e9 * 0.92);
    assert!((plain.breakdown.pp_comm_s / (2.0 * 16.0 * one) - 1.0).abs() < 1e-9);
    assert!((inter.breakdown.pp_comm_s / (2.0 * 16.0 * 2.0 * one) - 1.0).abs() < 1e-9);
    // Warm-up chunks w = 2·(4 − 1) + (2 − 1)·4 = 10 of m·v = 32: 20 transfers wait, the
    // other 44 hide behind a chunk's forward (10 layers, about 11 ms, against 0.23 ms).
    let hidden = inter.breakdown.pp_comm_s - 20.0 * one;
    let exposed_pp = inter.breakdown.exposed_comm_s
        - (plain.breakdown.exposed_comm_s - plain.breakdown.pp_comm_s);
    assert!(hidden > 0.0);
    assert!(
        (exposed_pp / (20.0 * one) - 1.0).abs() < 0.02,
        "{exposed_pp} vs {}",
        20.0 * one
    );
    // Without interleaving every transfer is on the step.
    assert!(plain.breakdown.exposed_comm_s >= plain.breakdown.pp_comm_s);
}

/// DeepSpeed's pipeline engine reduces gradients after the last backward: the whole
/// data-parallel time is exposed; Megatron's overlapped reduction hides part of it behind
/// the last micro-batch's backward.
#[test]
fn deepspeed_pipeline_reduces_after_the_step() {
    let q = |fw: &str| {
        format!("model=llama-2-13b&seq=2048&gpus_per_node=8&nodes=4&tp=4&pp=2&microbatches=8&zero=1&framework={fw}")
    };
    let ds = time(&q("deepspeed"));
    let mg = time(&q("megatron"));
    // Exposed data-parallel time: the exposed whole less TP's and PP's (both exposed here).
    let dp_exposed =
        |t: &StepTime| t.breakdown.exposed_comm_s - t.breakdown.tp_comm_s - t.breakdown.pp_comm_s;
    assert!(ds.breakdown.dp_comm_s > 0.0);
    assert!((dp_exposed(&ds) / ds.breakdown.dp_comm_s - 1.0).abs() < 1e-9);
    assert!(dp_exposed(&mg) < 0.9 * mg.breakdown.dp_comm_s);
}

/// BLOOM's prequel misses on one node too, before any pipeline or data parallelism: the
/// chronicle's "Max possible TFLOPs check" ran its 48-node model's block (h 14,336, 64
/// heads, vocabulary 250k, TP 8, fp16, full recomputation) as 6 layers on one node, MBS 2,
/// GBS 512, at 119.19 s and 130.43 s an iteration (157.02 and 143.48 TFLOPs: Megatron's
/// `96·B·s·L·h²·(1 + s/6h + V/16Lh)` over 8 GPUs gives 157 for 119.19 s, so GBS is 512 as
/// the section's heading says, not the table's 2048), and 10 layers at MBS 1 at 205.52 s
/// (bigscience-workshop/bigscience `train/tr11-176B-ml/chronicles-prequel.md`, 9e64ede,
/// "Choosing the fastest 3D Topology"). memfit is faster than both by more than all it
/// charges the 48-node layout of the same block for its pipeline and data parallelism
/// (bubble and exposed transfers): what the 48-node rows miss is mostly per-GPU compute,
/// which no multi-node mechanism may be tuned to cover (docs/steptime.md, nineteenth round).
#[test]
fn bloom_one_node_misses_before_the_pipeline() {
    let one = |layers: u32, mbs: u32| {
        time(&format!(
            "model=gpt3-175b&layers={layers}&hidden=14336&heads=64&kv_heads=64&ffn=57344\
             &vocab=250680&head_dim=224&gpu=a100-80&gpus_per_node=8&nodes=1&tp=8&batch={mbs}\
             &microbatches={}&seq=2048&recompute=full&precision=fp16&attn=eager&zero=1",
            512 / mbs
        ))
        .step_s
    };
    // The calibration row `bloom_prequel_0221_181b_dp8_tp8_pp6_mb4` (72 layers, 48 nodes).
    let big = time(
        "model=gpt3-175b&layers=72&hidden=14336&heads=64&kv_heads=64&ffn=57344&vocab=250680\
         &head_dim=224&gpu=a100-80&gpus_per_node=8&nodes=48&tp=8&pp=6&dp=8&batch=4\
         &microbatches=64&seq=2048&recompute=full&precision=fp16&attn=eager&inter_bw=6.25&zero=1",
    );
    let b = big.breakdown;
    let multi_node = (b.bubble_s + b.exposed_comm_s - b.tp_comm_s) / big.step_s;
    for (predicted, measured) in [(one(6, 2), 119.19), (one(10, 1), 205.52)] {
        let short = 1.0 - predicted / measured;
        assert!(
            short > multi_node,
            "{predicted} s against {measured} s: {short} ≤ {multi_node}"
        );
    }
}

/// TP communication overlap needs sequence parallelism (Megatron-LM asserts it): without
/// `sp=1` it changes nothing and the input problems say so.
#[test]
fn tp_overlap_needs_sequence_parallelism() {
    let base = "model=llama-3-70b&seq=8192&gpus_per_node=8&tp=8&framework=megatron";
    let (x, w) = decode(&format!("{base}&tp_overlap=1"));
    let off = time(base);
    let t = step_time(&x.scenario, &Prepared::of(&x.scenario)).unwrap();
    assert_eq!(t.step_s, off.step_s);
    let report = memfit_core::contract::report::estimate_with(&x.scenario, &w);
    let text = serde_json::to_string(&report).unwrap();
    assert!(text.contains("TP communication overlap needs"), "{text}");
    let on = time(&format!("{base}&sp=1&tp_overlap=1"));
    let sp = time(&format!("{base}&sp=1"));
    assert!(on.step_s < sp.step_s);
}

/// Full recomputation of `ckpt_layers` layers per chunk (Megatron's `--recompute-method
/// block --recompute-num-layers`) repeats the forward of that share of the layers, and
/// their two extra TP collectives, no more.
#[test]
fn partial_recompute_by_share() {
    let base = "model=llama-3-8b&seq=8192&gpus_per_node=2&tp=2&sp=1&framework=megatron";
    let none = time(base);
    let full = time(&format!("{base}&recompute=full"));
    let five = time(&format!("{base}&recompute=full&ckpt_layers=5"));
    let share = 5.0 / 32.0;
    assert!((five.breakdown.recompute_s / full.breakdown.recompute_s - share).abs() < 1e-9);
    assert!(none.step_s < five.step_s && five.step_s < full.step_s);
    assert!((five.hfu / five.mfu - (1.0 + share / 3.0)).abs() < 1e-9);
    // TP: 4 collectives a layer, 6 for a checkpointed one.
    let per = none.breakdown.tp_comm_s / 4.0;
    assert!((full.breakdown.tp_comm_s / per - 6.0).abs() < 1e-9);
    assert!((five.breakdown.tp_comm_s / per - (4.0 + 2.0 * share)).abs() < 1e-9);
}

/// Inference and serving have no step time.
#[test]
fn only_training() {
    let (x, _) = decode("mode=infer");
    assert!(step_time(&x.scenario, &Prepared::of(&x.scenario)).is_none());
}

/// The explorer's figures are the step-time model's for the layout each entry loads, and
/// the best entry is the fastest fitting one.
#[test]
fn explorer_ranks_by_throughput() {
    let (x, _) = decode("model=llama-3-8b&gpus_per_node=8&seq=8192");
    let sweep = memfit_core::explore::explore(&x.scenario, Some(20));
    assert!(sweep.layouts.len() >= 5);
    for w in sweep.layouts.windows(2) {
        assert!(w[0].tokens_per_s_per_gpu >= w[1].tokens_per_s_per_gpu);
    }
    for l in &sweep.layouts {
        let s = l.scenario(&x.scenario);
        let t = step_time(&s, &Prepared::of(&s)).unwrap();
        assert!(
            (t.tokens_per_s_per_gpu / l.tokens_per_s_per_gpu - 1.0).abs() < 1e-9,
            "{}",
            l.describe()
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// More work never takes less time: a longer sequence, a larger micro-batch, more
    /// layers (the layout held).
    #[test]
    fn time_grows_with_work(seq in 1u32..=16, batch in 1u32..=8, layers in 1u32..=80, tp in 0u32..=3) {
        let t = 1u32 << tp;
        let q = |s: u32, b: u32, l: u32| format!("model=llama-3-70b&layers={l}&seq={}&batch={b}&gpus_per_node=8&tp={t}&framework=megatron", s * 512);
        let base = time(&q(seq, batch, layers)).step_s;
        prop_assert!(time(&q(seq + 1, batch, layers)).step_s >= base);
        prop_assert!(time(&q(seq, batch + 1, layers)).step_s >= base);
        prop_assert!(time(&q(seq, batch, layers + 1)).step_s >= base);
    }

    /// Per token, more data parallelism at a fixed micro-batch is never faster (without
    /// ZeRO each rank does the same work, its optimizer step included, and only the
    /// gradient reduction grows): what memfit can promise about DP. Under ZeRO-1 the
    /// optimizer's shard shrinks with the ranks, which over rails outweighs the reduction's
    /// growth (Llama 3 8B: 11,143 tokens/s per GPU on one node, 11,154 on two).
    #[test]
    fn more_dp_is_never_faster_per_token(nodes in 1u32..=16) {
        let q = |n: u32| format!("model=llama-3-8b&seq=4096&gpus_per_node=8&nodes={n}&zero=0&framework=megatron");
        let a = time(&q(nodes));
        let b = time(&q(nodes * 2));
        prop_assert!(b.tokens_per_s_per_gpu <= a.tokens_per_s_per_gpu * (1.0 + 1e-12));
    }
}

/// The published runs, each part apart (`memfit_evidence::steptime`: one mapping from a
/// run's stated settings to memfit's keys, shared with `memfit --train-eval` and the page's
/// accuracy table): where the model stands. These are guards against regressions at
/// today's figures (held out: median 15.0 %, max 37.6 %, pairs 2 of 5; calibration 15.0 %,
/// 34.2 %, pairs 2 of 2; pairs count only runs measured more than 5 % apart, as issue 36
/// judges them: before that rule 3 of 7 and 6 of 8), NOT the budget (8 % / 20 % / 90 %), which the model does
/// not meet. The seventeenth round (rails across nodes) raised both medians, from 12.9 and
/// 10.9 %, and these bounds with them (0.140 → 0.150, 0.115 → 0.155): llm-foundry's
/// multi-node FSDP runs had matched only because one NIC carried each rank's whole volume
/// (docs/steptime.md). The bounds hold over the 43 dense runs of each part as before; the
/// MoE runs added with issue 36's item 4 (Megatron-Bridge's Qwen3 rows) have their own guard,
/// [`moe_runs_guard`].
#[test]
fn published_runs_guard() {
    use memfit_evidence::steptime::{compare, pairs, stats, Part};
    for (part, med_max, max_max, min_ok, min_total) in [
        (Part::HeldOut, 0.150, 0.380, 2, 5),
        (Part::Calibration, 0.155, 0.350, 2, 2),
    ] {
        let rows: Vec<_> = compare(part)
            .into_iter()
            .filter(|r| !r.query.contains("model=qwen3"))
            .collect();
        assert_eq!(rows.len(), 43, "{part:?}");
        for r in &rows {
            let (_, w) = decode(&r.query);
            assert!(w.is_empty(), "{}: {w:?}", r.id);
        }
        let (_, median, max) = stats(&rows);
        assert!(
            median <= med_max && max <= max_max,
            "{part:?}: median {:.1} %, max {:.1} %",
            median * 100.0,
            max * 100.0
        );
        let (ok, total, _) = pairs(&rows);
        assert!(
            total >= min_total && ok >= min_ok,
            "{part:?}: pairs {ok} of {total}"
        );
    }
}

/// The MoE runs (Megatron-Bridge's H100 Qwen3 30B-A3B and 235B-A22B rows, force-balanced and
/// dropless): one held out, three calibration, split by `tools/train_split.py` before any
/// comparison. A guard at today's figures, not a claim of accuracy: memfit is 53 % fast on the
/// held-out PP 2 × EP 8 row, within 1 % on the EP 16 row (whose step is mostly its
/// all-to-all across two nodes) and 18–23 % fast on the 235B rows (docs/steptime.md).
#[test]
fn moe_runs_guard() {
    use memfit_evidence::steptime::{compare, Part};
    let moe = |part| -> Vec<_> {
        compare(part)
            .into_iter()
            .filter(|r| r.query.contains("model=qwen3"))
            .collect()
    };
    let (held, cal) = (moe(Part::HeldOut), moe(Part::Calibration));
    assert_eq!((held.len(), cal.len()), (1, 3));
    for r in held.iter().chain(&cal) {
        assert!(r.query.contains("&ep="), "{}", r.query);
        assert!(
            r.error().abs() <= 0.55,
            "{}: {:+.1} %",
            r.id,
            r.error() * 100.0
        );
    }
}

/// The held-out figures the best-layouts table cites are the comparison's (rounded to a
/// tenth of a percent), and the page's accuracy asset carries the same.
#[test]
fn cited_figures_are_the_comparison() {
    use memfit_evidence::steptime::{compare, stats, Part};
    let (_, median, max) = stats(&compare(Part::HeldOut));
    let (m, x) = memfit::present::STEP_HELD_OUT;
    assert!(
        (median * 100.0 - m).abs() < 0.05,
        "median {:.2} % vs {m}",
        median * 100.0
    );
    assert!(
        (max * 100.0 - x).abs() < 0.05,
        "max {:.2} % vs {x}",
        max * 100.0
    );
    let [p10, p50, p90] =
        memfit_evidence::steptime::ratio_quantiles(&compare(Part::HeldOut), [0.1, 0.5, 0.9]);
    let (lo, mid, hi) = memfit::present::STEP_HELD_OUT_RATIO;
    for (got, cited) in [(p10, lo), (p50, mid), (p90, hi)] {
        assert!(
            (got - cited).abs() < 0.005,
            "measured/predicted {got:.4} vs cited {cited}"
        );
    }
    let (ok, total, _) = memfit_evidence::steptime::pairs(&compare(Part::HeldOut));
    assert_eq!((ok, total), memfit::present::STEP_HELD_OUT_PAIRS);
    let a = memfit::present::accuracy();
    assert_eq!(a.steptime.held_out.n, 44);
    assert!((a.steptime.held_out.median - median).abs() < 1e-9);
    assert_eq!(a.steptime.rows.len(), 90);
}

/// fp32 training's matmuls follow `tf32`: PyTorch's default leaves tf32 off, so they run as
/// plain fp32 on the CUDA cores (H200: 67 TFLOP/s, its data sheet) with the GEMM curve's
/// latency `F_½` scaled by 67/989.4; `tf32=on`, or Megatron's default, runs them on tf32
/// tensor cores (494.7) with the 16-bit curve. 16-bit training is unaffected.
#[test]
fn fp32_matmuls_follow_tf32() {
    use memfit_core::steptime::Hw;
    let hw = |q: &str| Hw::of(&decode(q).0.scenario);
    let q = "model=llama-3-8b&gpu=h200&precision=fp32";
    let plain = hw(&format!("{q}&framework=pytorch"));
    let tf32 = hw(&format!("{q}&framework=pytorch&tf32=on"));
    let megatron = hw(&format!("{q}&framework=megatron"));
    assert_eq!(plain.tflops, 67.0);
    assert_eq!(tf32.tflops, 494.7);
    assert_eq!(megatron.tflops, 494.7);
    assert_eq!(hw(&format!("{q}&framework=megatron&tf32=off")).tflops, 67.0);
    assert!((plain.gemm_half_gflop / tf32.gemm_half_gflop - 67.0 / 989.4).abs() < 1e-12);
    let bf16 = "model=llama-3-8b&gpu=h200&framework=pytorch";
    assert_eq!(hw(bf16).tflops, hw(&format!("{bf16}&tf32=off")).tflops);
}

/// `attn=sdpa` under Hugging Face modules is timed as the kernel CUDA dispatches to (the one
/// the memory model counts): fp32 with GQA falls back to the math kernel, timed as eager
/// attention with the math kernel's passes over the scores; a sliding window the sequence reaches (Mistral 7B at s = W = 4,096) runs the
/// memory-efficient kernel over every block of the s², twice the causal work, at
/// FlashAttention's measured rate (H200): one token shorter, flash and the causal half.
#[test]
fn sdpa_kernel_sets_the_attention_time() {
    // Qwen2.5 7B in fp32 (28 heads, 4 KV heads): the math kernel is eager attention less the
    // scaling pass and the cast (28 B a score against the model code's 36), forward and
    // 2.5× backward over 28 layers of 28·2,048² scores at the copy rate.
    let q = "model=qwen2.5-7b&framework=pytorch&gpu=h200&precision=fp32&seq=2048";
    let (math, eager) = (
        time(&format!("{q}&attn=sdpa")).step_s,
        time(&format!("{q}&attn=eager")).step_s,
    );
    let scores = 28.0 * 2048.0 * 2048.0;
    let want = 28.0 * scores * (36.0 - 28.0) * 3.5 / (4800e9 * 4.273 / 4.8);
    assert!(
        ((eager - math) / want - 1.0).abs() < 1e-9,
        "{} vs {want}",
        eager - math
    );
    let m = "model=mistral-7b&framework=pytorch&gpu=h200&precision=bf16-pure&attn=sdpa";
    let (masked, flash) = (
        time(&format!("{m}&seq=4096")),
        time(&format!("{m}&seq=4095")),
    );
    // 4·b·s²·a·d·½ forward (causal), 3.5× forward + backward, at 593·F/(F + 192) TFLOP/s.
    let fb = |f: f64| f / (593.0 * f / (f + 192.0) * 1e3);
    let causal = |s: f64| 3.5 * 4.0 * s * s * 32.0 * 128.0 * 0.5 / 1e9;
    let want = 32.0 * (fb(2.0 * causal(4096.0)) - fb(causal(4095.0)));
    let got = masked.step_s - flash.step_s;
    // Everything else grows by one token in 4,096 (under 0.5 ms here).
    assert!((got - want).abs() < 5e-4, "{got} vs {want}");
}

/// A tensor-core GEMM whose K or N is off the 16-byte grain (GPT-2's 50,257-token LM head)
/// runs at 0.18 of the aligned rate under Hugging Face modules; Megatron pads its vocabulary
/// to a multiple of 128·t, so its shapes are not penalised; nor is fp32 on the CUDA cores.
/// The misaligned GEMM's time is the one measured on the H200 (`gemm.jsonl` of set D, GPT-2
/// medium's LM head: forward, data and weight gradient at M = 4,096 and 16,384), within 2 %.
#[test]
fn misaligned_gemms_at_measured_rate() {
    use memfit_core::steptime::Hw;
    let hw = |q: &str| Hw::of(&decode(q).0.scenario);
    let ratio = |h: &Hw| {
        h.gemm16_mkn_s(8192.0, 1024.0, 50_257.0) / h.gemm16_mkn_s(8192.0, 1024.0, 50_256.0)
    };
    let hf = hw("model=llama-3-8b&gpu=h200&framework=pytorch");
    assert!((ratio(&hf) - 1.0 / 0.18).abs() < 1e-3, "{}", ratio(&hf));
    let rows = include_str!("data/cuda_h200_d/gemm.jsonl");
    for m in [4096u32, 16_384] {
        let label = format!("\"gpt2-medium/lm_head/M{m}\"");
        let line = rows.lines().find(|l| l.contains(&label)).expect("row");
        let r: serde_json::Value = serde_json::from_str(line).expect("json");
        let measured: f64 = ["bf16_fwd_s", "bf16_dgrad_s", "bf16_wgrad_s"]
            .iter()
            .map(|k| r[k].as_f64().unwrap_or(0.0))
            .sum();
        let got = 3.0 * hf.gemm16_mkn_s(f64::from(m), 1024.0, 50_257.0);
        assert!(
            (got / measured - 1.0).abs() < 0.02,
            "M {m}: {got} vs {measured}"
        );
    }
    let mega = hw("model=llama-3-8b&gpu=h200&framework=megatron");
    assert!((ratio(&mega) - 1.0).abs() < 1e-3, "{}", ratio(&mega));
    let fp32 = hw("model=llama-3-8b&gpu=h200&framework=pytorch&precision=fp32");
    assert!((ratio(&fp32) - 1.0).abs() < 1e-3, "{}", ratio(&fp32));
    // M (the tokens) is never a leading dimension.
    assert!(
        (hf.gemm16_mkn_s(8191.0, 1024.0, 50_256.0) / hf.gemm16_mkn_s(8192.0, 1024.0, 50_256.0)
            - 1.0)
            .abs()
            < 1e-3
    );
}

/// Adapters leave the weights frozen: no weight gradient, so LoRA's backward has one GEMM
/// pass where full training has two; the adapters add their own six thin GEMMs a matrix
/// (two forward, the data and weight gradients of both). By hand on an A100 (the curve
/// 0.87·F/(F + 7 GFLOP) of 312 TFLOP/s), Llama 3 8B at 4,096 tokens under DeepSpeed, r 16 on
/// q (4,096 → 4,096) and v (4,096 → 1,024): the compute differs by one pass of every block's
/// GEMMs and of the LM head, less the adapters' GEMMs (q: six of 2·T·4,096·16 FLOP; v: three
/// of those and three of 2·T·1,024·16).
#[test]
fn adapters_compute_no_weight_gradient() {
    let q = "model=llama-3-8b&gpu=a100-80&seq=4096";
    let lora_q = format!("{q}&finetune=lora&lora_rank=16&lora_targets=qv");
    let (full, lora) = (time(q), time(&lora_q));
    let gemm = |f: f64| f / (312e12 * 0.87 * (f / 1e9) / (f / 1e9 + 7.0));
    let (t, h, f, kv) = (4096.0f64, 4096.0f64, 14_336.0f64, 1024.0f64);
    let block = gemm(2.0 * t * h * (h + 2.0 * kv))
        + gemm(2.0 * t * h * h)
        + gemm(2.0 * t * h * 2.0 * f)
        + gemm(2.0 * t * f * h);
    let adapters = 9.0 * gemm(2.0 * t * h * 16.0) + 3.0 * gemm(2.0 * t * kv * 16.0);
    let want = 32.0 * (block - adapters) + gemm(2.0 * t * h * 128_256.0);
    let got = full.breakdown.compute_s - lora.breakdown.compute_s;
    assert!((got / want - 1.0).abs() < 1e-9, "{got} vs {want}");
}
