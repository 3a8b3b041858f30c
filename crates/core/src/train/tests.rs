//! Unit tests of the training mechanisms.

use super::*;

/// The two full-width Llama-2-7B blocks MemTracker measured (fp32, SGD, b = 1,
/// s = 2048; `tests/data/pytorch_measurements.json` "large"), by hand: eager attention
/// peaks inside the last layer's backward, sdpa at the embedding's backward. MemTracker's
/// totals are 8 B more (the loss and a scalar).
#[test]
fn full_width_backward_moments_by_hand() {
    // The harness computes the loss from logits it holds (`loss=loop`).
    let q =
        "model=llama-2-7b&layers=2&framework=pytorch&loss=loop&cuda_ctx=0&frag=0&nccl=0&device=cpu\
             &precision=fp32&optimizer=sgd&batch=1&seq=2048&attn=";
    let peak = |attn: &str| {
        let (s, w) = crate::contract::query::decode(&format!("{q}{attn}"));
        let s = s.scenario;
        assert!(w.is_empty(), "{w:?}");
        crate::estimate::estimate(&s).per_gpu_bytes as u128
    };
    let (weights, held) = (2_667_659_264u128, 262_144_000u128);
    let (a, g_head, g_layer) = (1_233_141_760u128, 524_304_384u128, 809_533_440u128);
    // Layer 1's softmax backward: layer 0 saved, layer 1 less the MLP's side, the
    // attention output and V; the head's and layer 1's gradients less q, k, v's and the
    // attention norm's; ∂P, ∂scores, ∂V and the residual's gradient.
    let (freed, g_qkvn, temp) = (528_490_496u128, 201_342_976u128, 1_140_850_688u128);
    let eager = weights + held + 2 * a - freed + g_head + g_layer - g_qkvn + temp;
    assert_eq!(peak("eager"), eager);
    assert_eq!(eager + 8, 7_140_941_832);
    // The embedding's backward: every gradient, the embedding's new dense one in place
    // of the written one, and the residual's gradient reaching it (T·h·4).
    let sdpa = weights + held + weights - 524_288_000 + 524_288_000 + 2048 * 4096 * 4;
    assert_eq!(peak("sdpa"), sdpa);
    assert_eq!(sdpa + 8, 5_631_016_968);
}

/// FlashAttention-1 and the 2022 Triton kernel (`attn=flash1`) save what PyTorch's SDPA
/// saves: no s² scores, K/V repeated to every head (neither has native GQA), so on a GQA
/// model they hold more than FlashAttention-2's native-GQA tensors.
#[test]
fn flash1_saves_what_sdpa_saves() {
    let peak = |attn: &str| {
        // Sharded states, so the activations decide the peak.
        let q = format!(
            "model=llama-3-8b&framework=megatron&zero=3&dp=8&gpus_per_node=8&seq=4096&attn={attn}"
        );
        let (s, w) = crate::contract::query::decode(&q);
        assert!(w.is_empty(), "{w:?}");
        crate::estimate::estimate(&s.scenario).per_gpu_bytes
    };
    assert_eq!(peak("flash1"), peak("sdpa"));
    assert!(peak("flash1") > peak("flash"));
}

/// Llama-2-7B on one GPU under bf16 autocast: the copies are every linear's weights
/// (the embedding and the 65 norms are never cast), the head's 2·V·h first.
#[test]
fn autocast_copies_of_llama2_7b_by_hand() {
    let mut s = Scenario::default();
    s.stack.framework = Framework::Pytorch;
    s.numerics.precision = Precision::Bf16;
    let arch = s.arch();
    let st = Stage::of(&arch, Count::MIN, 0);
    let psi = 6_738_415_616u128;
    let (head, body) = autocast_copy_split(&s, &arch, &st, 4 * psi);
    let cast = psi - 32_000 * 4096 - (65 * 4096);
    assert_eq!(head + body, 2 * cast);
    assert_eq!(head + body, 13_214_154_752);
    assert_eq!(head, 2 * 32_000 * 4096);
    // Freed layer by layer: 32 layers, nothing checkpointed.
    let w = CopyWalk::of(&s, &st, (head, body));
    assert_eq!((w.n, w.exit), (0, 0));
    assert_eq!(w.per * 32 + w.rem, body);
    assert_eq!(w.layer(0), w.per + w.rem);
    assert_eq!(w.layer(31), w.per);
    // Every layer checkpointed: the cache dies when autocast exits.
    s.activations.recompute = Recompute::Full;
    let w = CopyWalk::of(&s, &st, (head, body));
    assert_eq!(w.exit, body);
    assert_eq!((w.n, w.exit), (32, body));
    // FSDP's MixedPrecisionPolicy casts the parameters themselves: no autocast.
    s.sharding = crate::scenario::Sharding::Fsdp(Fsdp::FullShard);
    assert_eq!(autocast_copy_split(&s, &arch, &st, 4 * psi), (0, 0));
}

/// The doc example of `loss_moments` (Llama shape h = 256, V = 4096, T = 512, fp32,
/// RMSNorm, `loss=model`), and `loss=loop`'s backward moment with the held logits.
#[test]
fn loss_moments_by_hand() {
    let q = "model=llama-2-7b&hidden=256&heads=8&kv_heads=2&ffn=688&vocab=4096&layers=4\
             &framework=pytorch&precision=fp32&batch=2&seq=256";
    let moments = |extra: &str| {
        let (s, w) = crate::contract::query::decode(&format!("{q}{extra}"));
        assert!(w.is_empty(), "{w:?}");
        let s = s.scenario;
        let (arch, l) = (s.arch(), s.layout());
        let x = Shape::of(&s, &arch, &l);
        let st = Stage::of(&arch, Count::MIN, 0);
        loss_moments(&s, &arch, &x, &st, true).unwrap()
    };
    let (t, v, h) = (512u128, 4096u128, 256u128);
    // The final norm: its input and output (2·T·h·4), rstd (4·T), the normalised fp32 tensor.
    let n = 2 * t * h * 4 + 4 * t + 4 * t * h;
    assert_eq!(n, 1_574_912);
    let m = |q: &str| {
        let l = moments(q);
        (l.forward, l.saved, l.backward)
    };
    assert_eq!(m(""), (n + t * v * 8, n + 4 * t * v, n + 12 * t * v));
    assert_eq!(m(""), (18_352_128, 9_963_520, 26_740_736));
    assert_eq!(
        m("&loss=loop"),
        (n + t * v * 8, n + 8 * t * v, n + 16 * t * v)
    );
}

/// Gemma 3's per-head q/k norms and sandwich post-norms, term by term (the measured
/// Gemma 3 shape: h = 256, a = 4, a_kv = 1, d = 64, b·s = 512, fp32).
#[test]
fn gemma3_norm_terms_by_hand() {
    let (s, w) = crate::contract::query::decode(
        "model=gemma-3-4b&hidden=256&heads=4&kv_heads=1&head_dim=64&ffn=1024&vocab=4096\
         &layers=2&window=0&local_layers=0&framework=pytorch&precision=fp32&batch=2&seq=256",
    );
    assert!(w.is_empty(), "{w:?}");
    let s = s.scenario;
    let terms = memfit_layer(&s, &s.arch(), &Shape::of(&s, &s.arch(), &s.layout()));
    let bytes = |name: &str| terms.iter().find(|t| t.name == name).unwrap().bytes;
    let (t, h, d) = (512u128, 256u128, 64u128);
    // q and k per head: input (k = 4) and normalised tensor (κ = 4), 4 B rstd per head.
    assert_eq!(
        bytes("per-head q and k norms"),
        t * (4 + 1) * (d * (4 + 4) + 4)
    );
    // Two post-norms: input, rstd, normalised tensor.
    assert_eq!(
        bytes("post-norms (sandwich block)"),
        2 * (t * h * 4 + 4 * t + 4 * t * h)
    );
}

/// The doc example of `fsdp_expert_padding`: 8 experts on 32 ranks pad to 32 rows, 8 on
/// 8 (or 2) pad to none, 8 on 3 pad to 9.
#[test]
fn fsdp_expert_padding_by_hand() {
    let (s, w) =
        crate::contract::query::decode("model=mixtral-8x7b&fsdp=full_shard&framework=pytorch");
    assert!(w.is_empty(), "{w:?}");
    let s = s.scenario;
    let arch = s.arch();
    let per_layer = 2 * 3 * 384 * 768u64;
    assert_eq!(per_layer, 1_769_472);
    assert_eq!(
        fsdp_expert_padding(&s, &arch, per_layer, 32),
        (per_layer * (32 - 8) / 8) as u128
    );
    assert_eq!(fsdp_expert_padding(&s, &arch, per_layer, 32), 5_308_416);
    assert_eq!(fsdp_expert_padding(&s, &arch, per_layer, 8), 0);
    assert_eq!(fsdp_expert_padding(&s, &arch, per_layer, 2), 0);
    assert_eq!(
        fsdp_expert_padding(&s, &arch, per_layer, 3),
        (per_layer / 8) as u128
    );
    // Not FSDP (ZeRO-3 flattens its parameters): no padding.
    let (z, _) = crate::contract::query::decode("model=mixtral-8x7b&zero=3");
    assert_eq!(fsdp_expert_padding(&z.scenario, &arch, per_layer, 32), 0);
}
