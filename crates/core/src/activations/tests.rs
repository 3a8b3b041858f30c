//! Unit tests of the activation formulas.

use super::*;
use crate::model::preset;
use crate::scenario::Scenario;

fn shape(s: &Scenario) -> Shape {
    Shape::of(s, &s.arch(), &s.layout())
}

/// GPT-3 shape with Korthikanti's assumptions (GELU, f = 4h, eager, dropout,
/// LayerNorm, 16-bit): memfit's terms sum to 34·s·b·h + 5·a·s²·b + the 16·T bytes
/// of LayerNorm statistics.
#[test]
fn memfit_reduces_to_korthikanti() {
    let mut s = Scenario::default();
    s.model.preset = "gpt3-175b".into();
    s.workload.seq = crate::scenario::count(2048);
    s.activations.attn = Attn::Eager;
    s.activations.dropout = true;
    s.stack.framework = Framework::Megatron; // fused 16-bit softmax, as the paper measured
    let arch = preset("gpt3-175b").unwrap().arch.clone();
    let x = shape(&s);
    let total: u128 = memfit_layer(&s, &arch, &x).iter().map(|t| t.bytes).sum();
    let row = korthikanti_form(&x, false, Recompute::None);
    let table = crate::expr::eval_bound(row, &vars(&s, &arch, &x)).unwrap();
    // By hand: 34·s·b·h + 5·a·s²·b with s = 2048, b = 1, h = 12288, a = 96.
    assert_eq!(table, 34 * 2048 * 12288 + 5 * 96 * 2048 * 2048);
    assert_eq!(total, table + 16 * 2048);
    assert_eq!(table, 2_868_903_936);
}

#[test]
fn llama2_7b_flash_layer_by_hand() {
    let s = Scenario::default();
    let arch = s.arch();
    let x = shape(&s);
    let t = 4096u128;
    // Norm inputs + linear inputs 2·T·h·2, rstd 4T and the composite RMSNorm's fp32
    // x·rsqrt 4·T·h (twice); q, k, v 3·T·4096·2; output T·4096·2; lse 4·T·32; SwiGLU 4·T·11008·2.
    let want = 2 * (2 * t * 4096 * 2 + 4 * t + 4 * t * 4096)
        + 3 * t * 4096 * 2
        + t * 4096 * 2
        + 4 * t * 32
        + 4 * t * 11008 * 2;
    assert_eq!(
        memfit_layer(&s, &arch, &x)
            .iter()
            .map(|t| t.bytes)
            .sum::<u128>(),
        want
    );
    assert_eq!(want, 763_920_384);
}

/// The blocks of `tools/measure_pytorch.py` under CPU autocast (bf16, fp32
/// parameters), b = 2, s = 256: the bytes their saved-tensor hooks report per block,
/// the parameters' bf16 casts left out (torch 2.15; Llama shape 7,294,976 B, GPT-2
/// shape 4,743,168 B).
/// The doc example of `logits_bytes`: the final norm counted as a block's norm.
#[test]
fn logits_bytes_of_llama_3_8b() {
    let (s, w) = crate::contract::query::decode("model=llama-3-8b&seq=8192&batch=1");
    let s = s.scenario;
    assert!(w.is_empty(), "{w:?}");
    let (t, h) = (8192u128, 4096u128);
    let want = 2 * t * h * 2 + 4 * t + 4 * t * h + t * 128_256 * 14;
    assert_eq!(logits_bytes(&s, &s.arch(), &shape(&s)), want);
    assert_eq!(want, 14_977_892_352);
}

/// Megatron's output layer by hand, with each cross-entropy kernel: the LM head's 16-bit
/// input `2·T·h·k` and what the loss saves — the fp32 softmax `4·T·V/t` (unfused, and the
/// native fusion), or the 16-bit logits the gradient overwrote, `k·T·V/t`
/// (`ce_fusion=te`).
#[test]
fn megatron_logits_by_cross_entropy_kernel() {
    let bytes = |ce: &str| {
        let q = format!(
            "model=llama-3-8b&seq=8192&framework=megatron&tp=2&gpus_per_node=2&ce_fusion={ce}"
        );
        let (s, w) = crate::contract::query::decode(&q);
        assert!(w.is_empty(), "{w:?}");
        let s = s.scenario;
        logits_bytes(&s, &s.arch(), &shape(&s))
    };
    let (t, h, v) = (8192u128, 4096u128, 128_256u128);
    let head = 2 * t * h * 2;
    assert_eq!(bytes("off"), head + 4 * t * v / 2);
    assert_eq!(bytes("native"), bytes("off"));
    assert_eq!(bytes("te"), head + 2 * t * v / 2);
    assert_eq!(bytes("off") - bytes("te"), 1_050_673_152);
}

/// The moments inside a layer's backward for the full-width Llama-2-7B block that
/// MemTracker measured (`tests/data/pytorch_measurements.json`, "large"), by hand.
#[test]
fn layer_backward_of_a_llama_2_7b_block_by_hand() {
    let mut s = Scenario::default();
    s.stack.framework = Framework::Pytorch;
    s.numerics.precision = crate::scenario::Precision::Fp32;
    s.activations.attn = Attn::Eager;
    s.workload.batch = crate::scenario::count(1);
    s.workload.seq = crate::scenario::count(2048);
    s.model.overrides.layers = Some(crate::scenario::count(2));
    let (t, h, a, f) = (2048u128, 4096u128, 32u128, 11008u128);
    // On CUDA the softmax backward's temporary adds one fp32 s² tensor.
    let cuda = layer_backward(&s, &s.arch(), &shape(&s)).unwrap();
    // MemTracker measured on the CPU.
    s.runtime.device = crate::scenario::Device::Cpu;
    let lb = layer_backward(&s, &s.arch(), &shape(&s)).unwrap();
    assert_eq!(cuda.temp - lb.temp, a * t * t * 4);
    // The attention output and V (T·h·4 each), the MLP norm (input, output,
    // composite RMSNorm's normalised tensor, rstd) and the four MLP intermediates.
    let mlp_norm = 2 * t * h * 4 + 4 * t + 4 * t * h;
    assert_eq!(lb.freed, 2 * t * h * 4 + mlp_norm + 4 * t * f * 4);
    assert_eq!(lb.freed, 528_490_496);
    // ∂P and ∂scores in fp32, ∂V and the residual's gradient: MemTracker's TEMP.
    assert_eq!(lb.temp, 2 * a * t * t * 4 + 2 * t * h * 4);
    assert_eq!(lb.temp, 1_140_850_688);
    assert_eq!(lb.grad_part, (3 * h * h + h, 4 * h * h + 3 * h * f + 2 * h));
    assert_eq!(lb.copy_part, (3 * h * h, 4 * h * h + 3 * h * f));
    // Measured at the peak: GRAD 1,132,494,848 = the head's 524,304,384 + the layer's
    // less q, k, v's and the attention norm's.
    let layer = 4 * (4 * h * h + 3 * h * f + 2 * h);
    let (g, _) = lb.qkv_parts(layer, 0);
    assert_eq!(524_304_384 + layer - g, 1_132_494_848);
    // Under autocast the softmax's bf16 cast is freed too and the residual is fp32.
    s.numerics.precision = crate::scenario::Precision::Bf16;
    let lb = layer_backward(&s, &s.arch(), &shape(&s)).unwrap();
    assert_eq!(lb.temp, 2 * a * t * t * 4 + t * h * 4 + t * h * 2);
    assert_eq!(lb.temp, 1_124_073_472);
    // Fused kernels: no softmax temporaries; Megatron keeps the whole-layer moment.
    s.activations.attn = Attn::Sdpa;
    assert_eq!(layer_backward(&s, &s.arch(), &shape(&s)).unwrap().temp, 0);
    s.stack.framework = Framework::Megatron;
    assert!(layer_backward(&s, &s.arch(), &shape(&s)).is_none());
}

#[test]
fn autocast_blocks_match_saved_tensor_hooks() {
    let mut s = Scenario::default();
    s.stack.framework = Framework::Pytorch;
    // Measured with saved-tensor hooks under CPU autocast and PyTorch's CPU SDPA kernel.
    s.runtime.device = crate::scenario::Device::Cpu;
    s.numerics.precision = crate::scenario::Precision::Bf16;
    s.activations.attn = Attn::Sdpa;
    s.workload.batch = crate::scenario::count(2);
    s.workload.seq = crate::scenario::count(256);
    s.model.overrides.hidden = Some(crate::scenario::count(256));
    s.model.overrides.heads = Some(crate::scenario::count(8));
    s.model.overrides.kv_heads = Some(crate::scenario::count(2));
    s.model.overrides.ffn = Some(crate::scenario::count(688));
    s.model.overrides.vocab = Some(crate::scenario::count(4096));
    s.model.overrides.layers = Some(crate::scenario::count(4));
    assert!(autocast(&s));
    let sum = |s: &Scenario| -> u128 {
        memfit_layer(s, &s.arch(), &shape(s))
            .iter()
            .map(|t| t.bytes)
            .sum()
    };
    let llama = sum(&s);
    assert_eq!(llama, 7_294_976);
    // The attention norm: fp32 input and normalised tensor, rstd, q/k/v casts.
    let t = memfit_layer(&s, &s.arch(), &shape(&s))[0];
    assert_eq!(
        t.bytes,
        4 * 512 * 256 + 4 * 512 + 4 * 512 * 256 + 3 * 512 * 256 * 2
    );
    assert_eq!(t.bytes, 1_837_056);
    // A checkpointed block keeps its fp32 input.
    assert_eq!(layer_input_bytes(&s, &shape(&s)), 4 * 512 * 256);
    s.model.preset = "gpt2".into();
    s.model.overrides.kv_heads = Some(crate::scenario::count(8));
    s.model.overrides.ffn = Some(crate::scenario::count(1024));
    // The harness's GPT-2 block uses a fused GELU (`F.gelu(approximate="tanh")`).
    s.model.overrides.gelu_ops = Some(false);
    assert_eq!(sum(&s), 4_743_168);
    // LoRA keeps a 16-bit base: no fp32 residual.
    s.finetune = crate::scenario::Tuning::of(crate::scenario::Finetune::Lora);
    assert!(!autocast(&s));
}

#[test]
fn pipeline_in_flight() {
    let mut s = Scenario::default();
    s.parallel.pp = crate::scenario::count(4);
    s.workload.microbatches = crate::scenario::count(8);
    let l = s.layout();
    assert_eq!(in_flight(&s, l.pp, 0), (4, 1));
    assert_eq!(in_flight(&s, l.pp, 3), (1, 1));
    s.parallel.schedule = Schedule::Gpipe;
    assert_eq!(in_flight(&s, l.pp, 3), (8, 1));
    s.parallel.schedule = Schedule::Interleaved;
    s.parallel.vpp = crate::scenario::count(2);
    // Stage 0: 2·3 + 1·4 + 1 = 11 chunks = 4 · (1 + 3/8) = 5.5 micro-batches
    // (Korthikanti's factor); stage 3: 0 + 4 + 1 = 5 chunks = 2.5.
    assert_eq!(in_flight(&s, l.pp, 0), (11, 2));
    assert_eq!(in_flight(&s, l.pp, 3), (5, 2));
    // m = p: every chunk is warm-up, all 8 micro-batches' chunks are in flight.
    s.workload.microbatches = crate::scenario::count(4);
    assert_eq!(in_flight(&s, l.pp, 0), (8, 2));
    assert_eq!(stage_layers(30, crate::scenario::count(4), 0), 8);
    assert_eq!(stage_layers(30, crate::scenario::count(4), 3), 7);
}

/// The doc example of `op_sac_layer`, and each term's text rendered from the tokens its
/// bytes came from.
#[test]
fn op_sac_terms_by_hand() {
    let (s, w) = crate::contract::query::decode(
        "model=llama-3-8b&framework=pytorch&recompute=selective&precision=bf16&seq=4096",
    );
    assert!(w.is_empty(), "{w:?}");
    let s = s.scenario;
    let terms = memfit_layer(&s, &s.arch(), &shape(&s));
    let (t, h) = (4096u128, 4096u128);
    let want = [
        t * h * 4,                                // block input, fp32 residual
        t * (32 * 128 + 8 * 128 + 14336 + h) * 2, // q, v, gate, down
        t * 32 * 128 * 2 + 4 * t * 32,            // attention output + lse
    ];
    let got: Vec<u128> = terms.iter().map(|x| x.bytes).collect();
    assert_eq!(got, want);
    assert_eq!(want.iter().sum::<u128>(), 294_125_568);
    assert_eq!(terms.expr(0).symbols(), "T·h·k_r/r");
    assert_eq!(terms.expr(1).symbols(), "⌈T·(a·d + a_kv·d + f_a + h)·k/t⌉");
    assert_eq!(terms.expr(2).symbols(), "⌈(T·a·d·k + 4·T·a)/t⌉");
    for i in 0..terms.len() {
        assert_eq!(terms.expr(i).eval_u128(), Some(terms[i].bytes));
    }
}

/// Phi-4-mini's partial rotary embedding on CUDA flash: one more attention-output-sized
/// tensor per layer (o_proj's input copied out of q's memory order), 8,192·24·128·2 =
/// 50,331,648 B at b = 2, s = 4,096 — by hand, and the measured run C11's gap (75.53 GiB
/// measured, 74.03 before the term: 1.50 GiB = 32 × 48 MiB). Not with a full rotary
/// embedding, not with eager attention, not on a CPU.
#[test]
fn partial_rotary_saves_the_attention_output_twice_on_cuda_flash() {
    use crate::contract::query::decode;
    let q = "model=phi-3-mini&heads=24&kv_heads=8&head_dim=128&vocab=200064&tied=1&framework=pytorch&precision=bf16-pure&batch=2&seq=4096&gpu=h200";
    let per_layer = |extra: &str| {
        let (s, w) = decode(&format!("{q}&{extra}"));
        assert!(w.is_empty(), "{w:?}");
        let arch = s.scenario.arch();
        memfit_layer(&s.scenario, &arch, &shape(&s.scenario))
            .iter()
            .map(|t| t.bytes)
            .sum::<u128>()
    };
    assert_eq!(
        per_layer("rope_partial=1&attn=sdpa") - per_layer("rope_partial=0&attn=sdpa"),
        8_192 * 24 * 128 * 2
    );
    assert_eq!(
        per_layer("rope_partial=1&attn=eager"),
        per_layer("rope_partial=0&attn=eager")
    );
    assert_eq!(
        per_layer("rope_partial=1&attn=sdpa&device=cpu"),
        per_layer("rope_partial=0&attn=sdpa&device=cpu")
    );
}
