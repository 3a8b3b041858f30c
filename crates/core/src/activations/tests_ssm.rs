//! The state-space blocks' activations (`activations::ssm`) by hand: the research notes'
//! numbers and the tensors traced on calibration runs of `tests/data/hf_ssm_measurements.json`.

use super::ssm::*;
use super::Shape;
use crate::activations::layer_input_bytes;
use crate::contract::query::decode;
use crate::model::{LinearAttn, Ssm};

const MAMBA_130M: &str = "model=llama-2-7b&layers=24&hidden=768&heads=1&kv_heads=1&head_dim=768\
    &ffn=1536&vocab=50280&tied=1&params=129135360&mamba_layers=24&ssm_version=1\
    &ssm_inner=1536&ssm_state=16&ssm_conv=4&precision=bf16&batch=8&seq=1024";

/// The docs' example: Nemotron-H-like kinds (2 Mamba of 12, 1 attention of 6, 3 MLP-only
/// of 2): the recompute holds the Mamba block's 12, not the average ⌈36/6⌉ = 6; a model
/// of one kind keeps its average.
#[test]
fn largest_kind_by_hand() {
    assert_eq!(largest_kind(&[(1, 6), (2, 12), (0, 99), (3, 2)], 6), 12);
    assert_eq!(largest_kind(&[(4, 5), (0, 9)], 5), 5);
    // Falcon-H1's parallel blocks: both mixers in one block, the average is the block.
    assert_eq!(largest_kind(&[(4, 5), (4, 3)], 8), 8);
}

/// The traced tensors of the gated-DeltaNet torch path around its chunk rule (Qwen3-Next
/// calibration run, b 2, s 256, fp32): cat 512·512·4, conv 2·259·512·4, five (512, 256)
/// fp32 tensors, beta, softplus, its sum and two l2norm rsqrts of (512, 8).
#[test]
fn gdn_torch_around_by_hand() {
    let g = LinearAttn {
        k_heads: 4,
        v_heads: 8,
        k_dim: 32,
        v_dim: 32,
        conv_kernel: 4,
    };
    let at = |kernels: &str| {
        let q = format!(
            "model=llama-2-7b&hidden=256&precision=fp32&batch=2&seq=256&ssm_kernels={kernels}"
        );
        let s = decode(&q).0.scenario;
        let x = Shape::of(&s, &s.arch(), &s.layout());
        gdn_torch_around(&s, &x, &g)
    };
    let traced = 1_048_576 + 1_060_864 + 5 * 524_288 + 5 * 16_384;
    assert_eq!(at("torch"), traced);
    assert_eq!(at("fused"), 0);
}

/// The traced recompute of `train/mamba2/s/fp32/adamw-foreach/eager/ckpt/loss=model/b2s256`:
/// seven chunked tensors and two chunk-state tensors beyond the saved set, less the
/// gated norm's four fp32 tensors (the docs' example).
#[test]
fn mamba2_recompute_by_hand() {
    let m = Ssm {
        version: 2,
        d_inner: 512,
        d_state: 64,
        groups: 2,
        heads: 8,
        conv_kernel: 4,
        chunk: 64,
    };
    // A_max of a block without an MLP: its input, norm output and mixer.
    let at = |q: &str| {
        let s = decode(q).0.scenario;
        let x = Shape::of(&s, &s.arch(), &s.layout());
        let a_max = layer_input_bytes(&s, &x) + 512 * 256 * 4 + mamba_mixer_saved(&s, &x, &m).0;
        mamba2_recompute_transient(&s, &x, &m, a_max)
    };
    let q = "model=llama-2-7b&hidden=256&batch=2&seq=256&precision=fp32&ssm_kernels=torch";
    let traced = 7 * 1_048_576 + 1_310_720 + 262_144;
    assert_eq!(at(q), traced - 4 * 524_288 * 2);
    assert_eq!(at(&q.replace("torch", "fused")), 0);
}

/// Falcon-H1's ungated mixer (the traced calibration run, b 2, s 256, d 512): the SiLU and
/// the product where the gated norm has four fp32 tensors, 512·512·(16 − 8) in fp32;
/// in bf16 512·512·((16 + 2) − (2 + 4 + 2)).
#[test]
fn ungated_norm_by_hand() {
    let m = Ssm {
        version: 2,
        d_inner: 512,
        d_state: 64,
        groups: 1,
        heads: 8,
        conv_kernel: 4,
        chunk: 64,
    };
    let at = |p: &str, k: &str| {
        let q =
            format!("model=llama-2-7b&hidden=256&batch=2&seq=256&precision={p}&ssm_kernels={k}");
        let s = decode(&q).0.scenario;
        let x = Shape::of(&s, &s.arch(), &s.layout());
        ungated_norm_saving(&s, &x, &m)
    };
    assert_eq!(at("fp32", "torch"), 2 * 1_048_576);
    assert_eq!(at("bf16-pure", "torch"), 512 * 512 * 10);
    assert_eq!(at("fp32", "fused"), 0);
}

/// The research notes' numbers: Mamba-130M at 8 × 1,024, fused 78.9 MB per block, torch
/// 14·E + 10·T·d·k; Mamba-2 2.7B at 8 × 2,048 fused 514.4 MB per block.
#[test]
fn mixer_saved_by_hand() {
    let m1 = Ssm {
        version: 1,
        d_inner: 1536,
        d_state: 16,
        groups: 1,
        heads: 0,
        conv_kernel: 4,
        chunk: 0,
    };
    let at = |q: &str, m: &Ssm| {
        let s = decode(q).0.scenario;
        let x = Shape::of(&s, &s.arch(), &s.layout());
        (mamba_mixer_saved(&s, &x, m).0, mamba_transient(&s, &x, m))
    };
    assert_eq!(at(MAMBA_130M, &m1), (78_905_344, 0));
    let e = 8 * 1536 * 1024 * 16u128;
    let torch = at(&format!("{MAMBA_130M}&ssm_kernels=torch"), &m1);
    assert_eq!(torch, (14 * e + 10 * 8192 * 1536 * 2, 4 * e));
    let m2 = Ssm {
        version: 2,
        d_inner: 5120,
        d_state: 128,
        groups: 1,
        heads: 80,
        conv_kernel: 4,
        chunk: 256,
    };
    let q2 = "model=llama-2-7b&hidden=2560&precision=bf16&batch=8&seq=2048";
    assert_eq!(at(q2, &m2).0, 514_392_064);
    let naive = at(&format!("{q2}&ssm_kernels=torch-naive"), &m2).1;
    assert_eq!(naive, 171_798_691_840);
    // Qwen3-Next's gated DeltaNet per token (b = 1, s = 4,096 = 64 whole chunks).
    let g = LinearAttn {
        k_heads: 16,
        v_heads: 32,
        k_dim: 128,
        v_dim: 128,
        conv_kernel: 4,
    };
    let lin = |k: &str| {
        let q = format!("model=llama-2-7b&precision=bf16&batch=1&seq=4096&ssm_kernels={k}");
        let s = decode(&q).0.scenario;
        let x = Shape::of(&s, &s.arch(), &s.layout());
        linear_mixer_saved(&s, &x, &g)
    };
    assert_eq!(lin("fused"), 4096 * 20_800);
    // torch: U = 131,072 head-tokens, c = 64 chunks (the docs' example).
    let u = 32 * 4096u128;
    let torch =
        u * 4 * (1024 + 384 + 320 + 4 + 256) + 2 * u * 128 * 4 + 2 * (u - 32 * 64) * 128 * 4;
    assert_eq!(torch, 1_308_622_848);
    assert_eq!(lin("torch"), torch);
}

/// The MLP half a Mamba block carries: a Jamba-like mix (3 Mamba blocks and 1 attention
/// block, each with an MLP) carries the block's MLP half; a pure Mamba model none.
#[test]
fn mamba_block_mlp_by_structure() {
    let at = |mix: &str| {
        let q = format!(
            "model=llama-2-7b&layers=4&hidden=256&heads=8&ffn=512&{mix}&ssm_version=1&ssm_inner=512&ssm_state=16&precision=fp32&batch=2&seq=256&ssm_kernels=torch"
        );
        let s = decode(&q).0.scenario;
        let arch = s.arch();
        let x = Shape::of(&s, &arch, &s.layout());
        (
            mamba_block_mlp(&s, &arch, &x),
            crate::activations::mlp_half_bytes(&s, &arch, &x),
        )
    };
    let (jamba, mlp) = at("mamba_layers=3");
    assert!(mlp > 0);
    assert_eq!(jamba, mlp);
    assert_eq!(at("mamba_layers=4").0, 0);
}

/// The first norm of a convolution block as traced on the LFM2 calibration run (T = 512,
/// h = 256, fp32): input, x·rsqrt and weight·x, 3 × 524,288 B, and the rsqrt, 2,048 B.
#[test]
fn mixer_norm_by_hand() {
    let q = "model=llama-2-7b&hidden=256&heads=8&batch=2&seq=256&precision=fp32";
    let s = decode(q).0.scenario;
    let arch = s.arch();
    let x = Shape::of(&s, &arch, &s.layout());
    assert_eq!(
        crate::activations::mixer_norm_bytes(&s, &arch, &x),
        3 * 524_288 + 2_048
    );
}
