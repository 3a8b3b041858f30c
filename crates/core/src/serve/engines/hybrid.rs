//! vLLM V1's KV pool for models with Mamba or short-convolution blocks: one state page per
//! such layer and request, the attention blocks' pages raised to the same size, and the
//! layers grouped over one shared block pool.

use super::*;

/// vLLM V1's hybrid pool: the page every layer shares, the block size that page sets, how
/// the layers group, and what a request of `max_len` tokens takes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct HybridPool {
    /// The state page of one Mamba / convolution layer and request, unpadded, bytes.
    pub state_page: u64,
    /// The page every layer's block has (the state page padded to `block · attn_1tok`).
    pub page: u64,
    /// Tokens per attention block (`max_len` without attention blocks).
    pub block: u64,
    /// Layers per KV-cache group.
    pub group: u64,
    /// Groups of state layers and of attention layers.
    pub groups: (u64, u64),
    /// Blocks of the pool, each `group · page` bytes.
    pub blocks: u64,
    /// Blocks one request of `max_len` tokens takes.
    pub per_request: u64,
    /// Attention bytes per token over the stage's attention layers.
    pub per_token: u64,
    /// The longest request the pool holds alone, tokens.
    pub fit: u64,
}

/// The state page of one Mamba or short-convolution layer for one request on one rank, as
/// vLLM 0.33's `MambaStateShapeCalculator` shapes it and `MambaSpec.page_size_bytes` sums it.
///
/// # Formula
/// ```text
/// Mamba-1:  (K−1)·⌈d/t⌉·e + ⌈d/t⌉·N·e
/// Mamba-2:  (K−1)·(d + 2·G'·N)/t·e + ⌈H/t⌉·P·N·e      G' = G rounded up to a multiple of t
/// conv:     (K−1)·⌈h/t⌉·e                              (LFM2's ShortConv)
/// GDN:      (K−1)·⌈(2·H_k·d_k + H_v·d_v)/t⌉·e + ⌈H_v/t⌉·d_v·d_k·e   (gated DeltaNet)
/// lightning: ⌊H/t⌋·d·d·e                               (MiniMax's linear attention)
/// ```
/// (the largest when a model has several kinds: every state layer gets one page size)
/// `e` the model dtype's bytes (`--mamba-cache-dtype auto` and `--mamba-ssm-cache-dtype auto`:
/// the conv and the SSM state both in the model dtype, unlike transformers' fp32 state;
/// Nemotron-H's config forces an fp32 SSM state, not modelled). Source: vLLM 0.33.0
/// `model_executor/layers/mamba/mamba_utils.py` (`MambaStateShapeCalculator.mamba1_state_shape`,
/// `mamba2_state_shape`, `short_conv_state_shape`, `gated_delta_net_state_shape`,
/// `linear_attention_state_shape` (`(num_heads // tp_size, head_dim, head_dim)`),
/// `extra_groups_for_head_shards`;
/// `MambaStateDtypeCalculator`), `v1/kv_cache_interface.py::MambaSpec.page_size_bytes`.
///
/// # Example
/// Mamba-130M, bf16, t = 1: 3·1,536·2 + 1,536·16·2 = 58,368 B. Mamba-2 2.7B: 3·5,376·2 +
/// 80·64·128·2 = 1,342,976 B (×64 layers 82.0 MiB per request). MiniMax-Text-01, t = 8:
/// 8·128·128·2 = 262,144 B.
pub(super) fn state_page(arch: &Arch, e: u64, t: u64) -> u64 {
    state_bytes(arch, (e, arch.ssm_dtype.bytes_or(e)), t)
}

/// [`state_page`] with the convolution state in `e.0` bytes an element and the SSM
/// (recurrent) state in `e.1`: SGLang keeps the second in fp32 by default.
pub(super) fn state_bytes(arch: &Arch, e: (u64, u64), t: u64) -> u64 {
    let (ec, es) = e;
    let mamba = arch.ssm_shape().map_or(0, |m| {
        let (d, n, k) = (m.d_inner, m.d_state, m.conv_kernel.saturating_sub(1));
        if m.version == 2 {
            let g = m.groups.div_ceil(t) * t;
            let p = d.checked_div(m.heads).unwrap_or(0);
            k * ((d + 2 * g * n) / t) * ec + m.heads.div_ceil(t) * p * n * es
        } else {
            k * d.div_ceil(t) * ec + d.div_ceil(t) * n * es
        }
    });
    let conv = if arch.conv_layers > 0 {
        arch.short_conv_kernel().saturating_sub(1) * (arch.hidden.get() as u64).div_ceil(t) * ec
    } else {
        0
    };
    let gdn = arch.linear_shape().map_or(0, |g| {
        let conv_dim = 2 * g.k_heads * g.k_dim + g.v_heads * g.v_dim;
        let k = g.conv_kernel.saturating_sub(1);
        k * conv_dim.div_ceil(t) * ec + g.v_heads.div_ceil(t) * g.v_dim * g.k_dim * es
    });
    let lightning = arch
        .lightning_shape()
        .map_or(0, |x| x.heads / t * x.head_dim * x.head_dim * es);
    mamba.max(conv).max(gdn).max(lightning)
}

/// vLLM V1's pool for a model with Mamba or convolution blocks; `None` for a transformer.
///
/// # Formula
/// ```text
/// c_1    = the attention's bytes per token and layer (layer_row)
/// B      = max(B_user, α·⌈P_s / (α·c_1)⌉)      α = B_user or 16 (FlashAttention's alignment);
///          max_len without attention blocks (mamba_block_size = max_model_len)
/// page   = B·c_1  (the state page P_s padded up to it);  page = P_s without attention
/// g      = min(L_s, L_a)  layers per group;  groups n_s = ⌈L_s/g⌉, n_a = ⌈L_a/g⌉
/// blocks = ⌊KV / (g·page)⌋
/// per request of T = max_len tokens:  n_s + n_a·⌈T/B⌉ blocks  (prefix caching off: one
///          state block per state group)
/// concurrency = blocks / per_request;  longest request alone = ⌊(blocks − n_s)/n_a⌋·B
/// ```
/// `L_s`, `L_a` the stage's state (Mamba + convolution) and attention layers. Source: vLLM
/// 0.33.0 `platforms/interface.py::Platform._align_hybrid_block_size` (the attention block
/// size raised until a page holds the state page, `mamba_page_size_padded`),
/// `v1/core/kv_cache_utils.py` (`_get_kv_cache_groups_uniform_page_size`: equal-sized
/// groups; `get_num_blocks`), `v1/kv_cache_interface.py::MambaSpec.max_memory_usage_bytes`
/// (`mamba_cache_mode = "none"`: one block per request). Speculative decoding's extra
/// blocks and prefix caching's `align` mode are not modelled.
///
/// # Example
/// Qwen3-Next-like shape with a 1,097,728 B state page, 2 KV heads of 256, bf16, t = 1:
/// c_1 = 2,048 B, B = 16·⌈1,097,728/32,768⌉ = 544, page = 1,114,112 B, g = 12 (36 state
/// and 12 attention layers: 3 + 1 groups).
pub(super) fn vllm_pool(
    s: &Scenario,
    arch: &Arch,
    l: &Layout,
    kv_bytes: u64,
    max_len: u64,
) -> Option<HybridPool> {
    let stage = (arch.layers.get() as u64).div_ceil(l.pp.get() as u64);
    let linear = arch.modelled_linear_layers() as u64;
    let state_layers = stage.min(arch.mamba_layers as u64 + arch.conv_layers as u64 + linear);
    if state_layers == 0 {
        return None;
    }
    let e = s.numerics.precision.compute_bytes();
    let p_s = state_page(arch, e, l.tp.get() as u64);
    let f = KvFormat::of(s.numerics.kv_dtype, s.numerics.precision);
    let (full, windowed) = stage_layers(arch, l.pp);
    let attn = full + windowed;
    let c1 = layer_row(arch, f, l.tp);
    let (block, page) = if attn > 0 && c1 > 0 {
        let align = s.serving.block_size.map_or(16, |c| c.get() as u64);
        // In u128, saturated to 64 bits: absurd head counts and widths must not overflow.
        let (a, c, p) = (align as u128, c1 as u128, p_s as u128);
        let b = (a * p.div_ceil(a * c)).max(a);
        (sat(b), sat(b * c))
    } else {
        (max_len, p_s)
    };
    let group = if attn > 0 {
        state_layers.min(attn)
    } else {
        state_layers
    };
    let groups = (
        state_layers.div_ceil(group),
        if attn > 0 { attn.div_ceil(group) } else { 0 },
    );
    let bytes_per_block = group as u128 * page as u128;
    let blocks = sat((kv_bytes as u128).checked_div(bytes_per_block).unwrap_or(0));
    let per_request = groups
        .1
        .saturating_mul(max_len.div_ceil(block))
        .saturating_add(groups.0);
    let fit = match groups.1 {
        0 if blocks >= groups.0 => max_len,
        0 => 0,
        n => (blocks.saturating_sub(groups.0) / n).saturating_mul(block),
    };
    Some(HybridPool {
        state_page: p_s,
        page,
        block,
        group,
        groups,
        blocks,
        per_request,
        per_token: sat(c1 as u128 * attn as u128),
        fit,
    })
}

/// SGLang's state cache for Mamba-2 and gated-DeltaNet blocks (`MambaPool`), from 0.5.2:
/// `(S, σ)`, the request slots and each slot's bytes on this rank; `None` for a transformer,
/// a kind not modelled ([`Arch::states_mamba2_or_gdn`]) or an earlier release.
///
/// # Formula
/// ```text
/// σ = L_s · (conv: (K−1)·conv_dim/t · 2 B  +  SSM: ⌈H/t⌉·P·N · 4 B)
/// S = ⌊(R · r/(1 + r)) / σ⌋,  r = 0.9          (0.5.3.post3+ [0.2 in .post2]: mamba_full_memory_ratio; Mamba-2
///                                              models from 0.5.6.post1)
/// S = max_running_requests, else 512            (0.5.2–0.5.3; Mamba-2 models to 0.5.6,
///                                              which ran with the radix cache off)
/// KV = R − S·σ
/// ```
/// `R` the memory left for the pools (`rest_memory`), `L_s` the stage's state blocks, the
/// convolution state in bf16 (`SGLANG_MAMBA_CONV_DTYPE`) and the SSM state in fp32 (the
/// default `mamba_ssm_dtype`); gated DeltaNet: `conv_dim = 2·H_k·d_k + H_v·d_v`, `H = H_v`,
/// `P = d_v`, `N = d_k`. The 0.5.17 pool's extra slot comes out of the same bytes (`⌊(B −
/// σ)/σ⌋ + 1` slots). Source: SGLang `model_executor/model_runner_kv_cache_mixin.py`
/// (`handle_max_mamba_cache`, 0.5.4–0.5.10; 0.5.3.post2 has the ratio at 0.2, 0.5.3.post3
/// at 0.9; `disable_radix_cache` set for Mamba-2 models until 0.5.6.post1),
/// `mem_cache/kv_cache_configurator.py` (0.5.23: the ratio still 0.9), `model_runner.py` (0.5.2, 0.5.3: `rest_memory
/// -= max_mamba_cache_size · mamba_cache_per_req`), `configs/mamba_utils.py`
/// (`Mamba2StateShape.create`, `mamba2_state_dtype`, `mamba_cache_per_req`).
///
/// # Example
/// Qwen3.5-9B on 2 × RTX 4090 (TP 2): σ = 24·(3·4,096·2 + 16·128·128·4) = 25,755,648 B; a
/// log of it prints "max_mamba_cache_size: 186" and 327,310 tokens.
pub(super) fn sglang_state(
    s: &Scenario,
    arch: &Arch,
    l: &Layout,
    v: Version,
    rest: u64,
) -> Option<(u64, u64)> {
    if v < Version(0, 5, 2, 0) || !arch.states_mamba2_or_gdn() {
        return None;
    }
    let stage = (arch.layers.get() as u64).div_ceil(l.pp.get() as u64);
    let n = stage.min(arch.mamba_layers as u64 + arch.linear_layers as u64);
    let e_ssm = arch.ssm_dtype.bytes_or(4);
    let sigma = n.saturating_mul(state_bytes(arch, (2, e_ssm), l.tp.get() as u64));
    if sigma == 0 {
        return None;
    }
    // Mamba-2 models ran without the radix cache until 0.5.6.post1, so kept 0.5.3's count.
    let ratio = v >= Version(0, 5, 3, 2) && (arch.mamba_layers == 0 || v >= Version(0, 5, 6, 1));
    // r/(1 + r): 0.2 → 1/6 in 0.5.3.post2, 0.9 → 9/19 after.
    let (num, den) = if v < Version(0, 5, 3, 3) {
        (1, 6)
    } else {
        (9, 19)
    };
    let slots = if ratio {
        sat(rest as u128 * num / den / sigma as u128)
    } else {
        s.serving.max_seqs.map_or(512, |c| c.get() as u64)
    };
    Some((slots, sigma))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::query::decode;

    /// The research notes' vLLM pages (TP 1, bf16): Mamba-130M 58,368 B, Mamba-2 2.7B
    /// 1,342,976 B; a Qwen3-Next-like block size of 544 tokens from a 1,097,728 B page.
    #[test]
    fn pages_by_hand() {
        let q = "model=llama-2-7b&hidden=768&layers=24&mamba_layers=24&ssm_inner=1536&ssm_state=16&precision=bf16";
        let a = decode(q).0.scenario.arch();
        assert_eq!(state_page(&a, 2, 1), 58_368);
        let q = "model=llama-2-7b&hidden=2560&layers=64&mamba_layers=64&ssm_version=2&ssm_inner=5120&ssm_state=128&ssm_heads=80&ssm_groups=1";
        let a = decode(q).0.scenario.arch();
        assert_eq!(state_page(&a, 2, 1), 1_342_976);
        // A hybrid: 48 layers, 36 state layers, 12 attention layers with 2 KV heads of 256.
        let q = "mode=serve&model=llama-2-7b&hidden=2560&heads=16&kv_heads=2&head_dim=256\
            &layers=48&mamba_layers=36&ssm_version=2&ssm_inner=5120&ssm_state=128&ssm_heads=80\
            &ssm_groups=1&precision=bf16";
        let s = decode(q).0.scenario;
        let p = vllm_pool(&s, &s.arch(), &s.layout(), 1 << 34, 4096).unwrap();
        let page = 1_342_976u64;
        assert_eq!(p.block, 16 * page.div_ceil(16 * 2048));
        assert_eq!((p.group, p.groups), (12, (3, 1)));
        assert_eq!(p.page, p.block * 2048);
        assert_eq!(p.per_request, 3 + 4096u64.div_ceil(p.block));
        assert_eq!(p.blocks, (1u64 << 34) / (12 * p.page));
        // Qwen3-Next (research notes §3.1): a 1,097,728 B gated-DeltaNet page, block 544 at
        // TP 1 and 272 at TP 4.
        let q = "mode=serve&model=llama-2-7b&hidden=2048&heads=16&kv_heads=2&head_dim=256\
            &layers=48&linear_layers=36&lin_k_heads=16&lin_v_heads=32&lin_k_dim=128\
            &lin_v_dim=128&precision=bf16&gpus_per_node=4";
        let s = decode(q).0.scenario;
        assert_eq!(state_page(&s.arch(), 2, 1), 1_097_728);
        let p = vllm_pool(&s, &s.arch(), &s.layout(), 1 << 34, 4096).unwrap();
        assert_eq!((p.block, p.page, p.groups), (544, 1_114_112, (3, 1)));
        let s = decode(&format!("{q}&tp=4")).0.scenario;
        assert_eq!(state_page(&s.arch(), 2, 4), 274_432);
        let p = vllm_pool(&s, &s.arch(), &s.layout(), 1 << 34, 4096).unwrap();
        assert_eq!(p.block, 272);
    }
}
