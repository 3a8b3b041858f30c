use super::*;

fn nz(n: u64) -> NonZeroU64 {
    NonZeroU64::new(n).unwrap()
}

/// A dense Llama-shaped run: s = 2,048, b = 1, h = 4,096, f = 11,008, L = 32, TP 8.
fn args() -> MegatronArgs {
    MegatronArgs {
        num_layers: 32,
        hidden_size: 4096,
        num_attention_heads: 32,
        num_query_groups: 32,
        kv_channels: 128,
        ffn_hidden_size: 11008,
        swiglu: true,
        layernorm: false,
        vocab_size: 32000,
        make_vocab_size_divisible_by: nz(128),
        untie: true,
        num_experts: None,
        moe_ffn_hidden_size: 0,
        moe_router_topk: 0,
        add_bias_linear: false,
        tp: nz(8),
        pp: nz(1),
        vp: None,
        dp: nz(1),
        ep: nz(1),
        etp: nz(1),
        sequence_parallel: true,
        recompute: Recompute::Selective,
        seq_length: 2048,
        micro_batch_size: 1,
        num_microbatches: None,
        use_distributed_optimizer: false,
    }
}

/// The two activation formulas' documented examples, and their text.
#[test]
fn activation_formulas_by_hand() {
    let a = args();
    let sp = activations_sp(&a, 32000.0);
    assert_eq!(sp.eval(), Some(1_002_702_848.0));
    assert_eq!(
        sp.symbols(),
        "((s·b·h·(18 + 4·(f/h))·L + 8·s·b·p + s·b·h·p)·φ + s·b·h·4·(1 + V/h))/t"
    );
    let plain = activations_without_sp(&a, 32000.0);
    assert_eq!(plain.eval(), Some(3_531_227_136.0 * 1.05));
}
