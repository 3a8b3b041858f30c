//! SGLang's launch defaults by release (`ServerArgs`): the static memory fraction, the
//! chunked-prefill size and the decode CUDA graphs' largest batch, each as the release's
//! `server_args.py` sets it from the GPU's memory.
//!
//! `g` below is `get_device_memory_capacity()`, the smallest GPU's `nvidia-smi` total in
//! MiB (memfit: the GPU's capacity), and `t` SGLang's `--tp-size`: every GPU of the server
//! under DP attention (`--enable-dp-attention`, the DP ranks split it).

use super::*;

/// The release whose `mem_fraction_static` default is a reserve by GPU tier (0.4.7.post1).
pub(super) const TIERS_FROM: Version = Version(0, 4, 7, 1);
/// The release whose reserve is computed from the chunked prefill and the graphs (0.5.3).
pub(super) const RESERVE_FROM: Version = Version(0, 5, 3, 0);
/// The release that captures prefill CUDA graphs by default (piecewise, 0.5.10).
const PREFILL_GRAPHS_FROM: Version = Version(0, 5, 10, 0);
/// The release whose `--disable-cuda-graph` turns the prefill graphs off too (0.5.14's
/// per-phase `cuda_graph_config`; before it only `--disable-piecewise-cuda-graph` did).
const DISABLE_BOTH_FROM: Version = Version(0, 5, 14, 0);
/// The release whose reserve counts the decode graphs only when they are captured
/// (`reserve_for_graph_mb`, 0.5.16; before it `2·D` whatever `--disable-cuda-graph`).
const DECODE_GATED_FROM: Version = Version(0, 5, 16, 0);

/// `graph_bs=0`: the launch captures no CUDA graphs (`--disable-cuda-graph`).
pub(super) fn graphs_off(s: &Scenario) -> bool {
    s.serving.graph_bs == Some(0)
}
/// The release whose 20–35 GiB tier takes 4,096-token chunks and 48/160 graph batches.
const SMALL_TIER_2026: Version = Version(0, 5, 20, 0);

/// SGLang's `--tp-size` for the fraction's rules: `t·d` under DP attention.
fn server_tp(l: &Layout, dp_attention: bool) -> u64 {
    let d = if dp_attention { l.dp.get() as u64 } else { 1 };
    l.tp.get() as u64 * d
}

/// `mem_fraction_static`'s default for release `v` on this GPU and layout.
///
/// # Formula
/// ```text
/// ≤ 0.4.7:              0.88 / 0.87 / 0.85 / 0.81 / 0.79 by t·p, with GPUs over 80 GiB
///                       from 0.4.5.post3 ([`early_mfs`])
/// 0.4.7.post1 – 0.5.2:  m = round((g − R)/g, 3),  R (MiB) by g: < 35 GiB (2.8 + t·p/10)·1024,
///                       < 90 GiB (9.5 + t·p/2)·1024, < 160 GiB (12 + t·p/2)·1024, else 32·1024;
///                       + 4,096 with DP attention
/// 0.5.3 –:              R = 512 + 1.5·max(C, 2048) + [graphs] 2·D + t·p/8·1024
///                           + [DP attention] 3·D·d (+ 1.5·D·d when D > 300)
///                           + [0.5.10–, prefill graphs] 8·n(C), or 1,536 with MLA;
///                       R ≥ 10,240 when g > 60 GiB
/// ```
/// `C` the chunked prefill ([`chunk_size`]), `D` the decode graphs' largest batch
/// ([`graph_max_bs`]), `d` the DP size, `n(C)` the prefill graphs' token buckets up to `C`
/// ([`prefill_graph_reserve`]). `[graphs]`: dropped with `--disable-cuda-graph`
/// (`graph_bs=0`) from 0.5.16; before it the default `D` is counted either way, and the DP
/// attention terms keep it in every release.
///
/// Source: SGLang `srt/server_args.py` `ServerArgs.__post_init__` (every wheel 0.4.0 – 0.5.2:
/// the table to 0.4.7, the tiers 0.4.7.post1 – 0.5.2),
/// `_handle_gpu_memory_settings` (0.5.3 – 0.5.18), `arg_groups/memory_hook.py` (0.5.19 –
/// 0.5.23), PyPI wheels.
///
/// # Example
/// Llama 3 8B on one H100 (g = 81,559): 0.4.10 R = 10,240 → 0.874; 0.5.3 R = 512 +
/// 12,288 + 512 + 128 = 13,440 → 0.835; 0.5.10 adds 8·58: 13,904 → 0.830. On an RTX 4090
/// (24,564): 0.5.3 R = 3,744 → 0.848; 0.5.20 (C 4,096, D 48) R = 7,280 → 0.704.
pub(super) fn default_mfs(
    s: &Scenario,
    p: &Prepared,
    l: &Layout,
    v: Version,
    dp_attention: bool,
) -> f64 {
    let g = (s.usable_bytes() / MIB) as f64;
    let t = server_tp(l, dp_attention);
    let tp = (t * l.pp.get() as u64) as f64;
    let round3 = |r: f64| ((g - r) / g * 1000.0).round() / 1000.0;
    if v < TIERS_FROM {
        return early_mfs(g, t * l.pp.get() as u64, v);
    }
    if v < RESERVE_FROM {
        let gib = 1024.0;
        let r = match g {
            g if g < 35.0 * gib => (2.8 + tp / 10.0) * gib,
            g if g < 90.0 * gib => (9.5 + tp / 2.0) * gib,
            g if g < 160.0 * gib => (12.0 + tp / 2.0) * gib,
            _ => 32.0 * gib,
        };
        return round3(r + if dp_attention { 4096.0 } else { 0.0 });
    }
    let c = chunk_size(s, v) as f64;
    let d = graph_max_bs(s, l, v, dp_attention) as f64;
    let decode = if graphs_off(s) && v >= DECODE_GATED_FROM {
        0.0
    } else {
        d * 2.0
    };
    let mut r = 512.0 + c.max(2048.0) * 1.5 + decode + tp / 8.0 * 1024.0;
    if dp_attention {
        let dp = l.dp.get() as f64;
        r += d * dp * 3.0 + if d > 300.0 { d * dp * 1.5 } else { 0.0 };
    }
    r += prefill_graph_reserve(s, p, l, v, dp_attention) as f64;
    if g > 60.0 * 1024.0 {
        r = r.max(10.0 * 1024.0);
    }
    round3(r)
}

/// `mem_fraction_static`'s default before the tiers (0.4.0 – 0.4.7): `g` in MiB, `n = t·p`.
///
/// # Formula
/// ```text
/// table(n) = 0.79 (n ≥ 16), 0.81 (≥ 8), 0.85 (≥ 4), 0.87 (≥ 2), 0.88
/// 0.4.0 – 0.4.5.post2:       table(n)
/// 0.4.5.post3 – 0.4.6.post1: table(n) if g ≤ 81,920, else (g − 13·1024)/g
/// 0.4.6.post2 – 0.4.7:       f = table(n) if g ≤ 81,920, else 0.88;
///                            g > 96·1024: min(f + 48·1024·(1 − f)/g, (g − 18·1024)/g)
///                            (0.4.7: 0.79 when g > 180,000)
/// ```
/// Source: SGLang `srt/server_args.py ServerArgs.__post_init__`, every PyPI wheel 0.4.0 …
/// 0.4.7 diffed release by release (posts included).
///
/// # Example
/// An H200 (g = 143,771), TP 8: 0.81 to 0.4.5.post2, 0.9074 in 0.4.6, then min(0.88 +
/// 49,152·0.12/143,771, 125,339/143,771) = 0.8718.
fn early_mfs(g: f64, n: u64, v: Version) -> f64 {
    let table = match n {
        x if x >= 16 => 0.79,
        x if x >= 8 => 0.81,
        x if x >= 4 => 0.85,
        x if x >= 2 => 0.87,
        _ => 0.88,
    };
    let gib = 1024.0;
    match v {
        v if v < Version(0, 4, 5, 3) => table,
        v if v < Version(0, 4, 6, 2) => {
            if g <= 81_920.0 {
                table
            } else {
                (g - 13.0 * gib) / g
            }
        }
        _ if v >= Version(0, 4, 7, 0) && g > 180_000.0 => 0.79,
        _ => {
            let f = if g <= 81_920.0 { table } else { 0.88 };
            if g > 96.0 * gib {
                f64::min(f + 48.0 * gib * (1.0 - f) / g, (g - 18.0 * gib) / g)
            } else {
                f
            }
        }
    }
}

/// The chunked-prefill size: `max_batched_tokens`, else the release's default for the GPU.
///
/// # Formula
/// ```text
/// ≤ 0.4.7:             2,048 when g < 25,000 MiB, else 8,192 (0.4.7: 16,384 over 180,000)
/// 0.4.7.post1 – 0.5.2: 2,048 (g < 35 GiB), 8,192 (< 160 GiB), else 16,384
/// 0.5.3 –:             2,048 (< 35 GiB; 4,096 from 0.5.20), 4,096 (< 60 GiB),
///                      8,192 (< 160 GiB), else 16,384
/// ```
/// Source: SGLang `srt/server_args.py` (0.4.6.post5, 0.4.7, 0.4.7.post1, 0.5.2, 0.5.3),
/// `arg_groups/memory_hook.py` (0.5.20).
pub(super) fn chunk_size(s: &Scenario, v: Version) -> u64 {
    if let Some(c) = s.serving.max_batched_tokens {
        return c.get() as u64;
    }
    let g = s.usable_bytes() / MIB;
    let gib = 1024;
    match g {
        g if v < TIERS_FROM => match g {
            g if g > 180_000 && v >= Version(0, 4, 7, 0) => 16_384,
            g if g < 25_000 => 2048,
            _ => 8192,
        },
        g if g < 35 * gib && v >= SMALL_TIER_2026 => 4096,
        g if g < 35 * gib => 2048,
        g if g < 60 * gib && v >= RESERVE_FROM => 4096,
        g if g < 160 * gib => 8192,
        _ => 16_384,
    }
}

/// The decode CUDA graphs' largest batch (`cuda_graph_max_bs`): `graph_bs` where given
/// (over 0), else as the release defaults it, capped from 0.5.22 by
/// `--max-running-requests` (`max_seqs`; a given batch is not capped). With
/// `--disable-cuda-graph` SGLang still sets the default, which its reserve reads (see
/// [`default_mfs`]).
///
/// # Formula
/// ```text
/// g < 20 GiB: 8;  < 35 GiB: 16 (t < 4; 24 from 0.5.5, 48 from 0.5.20) or 80 (160 from 0.5.20)
/// < 60 GiB: 32 or 160;  < 160 GiB: 256 or 512;  else 512
/// ```
/// Source: SGLang `_handle_gpu_memory_settings` (0.5.3, 0.5.4.post1: 24),
/// `arg_groups/memory_hook.py` (0.5.20, 0.5.22).
pub(super) fn graph_max_bs(s: &Scenario, l: &Layout, v: Version, dp_attention: bool) -> u64 {
    if let Some(n) = s.serving.graph_bs.filter(|&n| n > 0) {
        return u64::from(n);
    }
    let g = s.usable_bytes() / MIB;
    let wide = server_tp(l, dp_attention) >= 4;
    let gib = 1024;
    let bs = match g {
        g if g < 20 * gib => 8,
        g if g < 35 * gib => match (wide, v) {
            (true, v) if v >= SMALL_TIER_2026 => 160,
            (true, _) => 80,
            (false, v) if v >= SMALL_TIER_2026 => 48,
            (false, v) if v >= Version(0, 5, 4, 1) => 24,
            (false, _) => 16,
        },
        g if g < 60 * gib => {
            if wide {
                160
            } else {
                32
            }
        }
        g if g < 160 * gib => {
            if wide {
                512
            } else {
                256
            }
        }
        _ => 512,
    };
    match s.serving.max_seqs {
        Some(m) if v >= Version(0, 5, 22, 0) => bs.min(m.get() as u64),
        _ => bs,
    }
}

/// What the default prefill CUDA graphs add to the reserve from 0.5.10, MiB: 8 per token
/// bucket captured up to the chunked prefill `C` (piecewise graphs; from 0.5.15 the
/// "breakable" ones, same buckets), a flat 1,536 for an MLA model; 0 where the release
/// turns them off for the launch.
///
/// # Formula
/// ```text
/// buckets ≤ C: 4…32 step 4, 48…256 step 16, 288…512 step 32, 576…1,024 step 64,
///              1,280…4,096 step 256, 4,608… step 512      (n = 42, 50, 58, 74 at 2k, 4k, 8k, 16k)
/// reserve = 8·n  (MLA: 1,536; 0.5.13–0.5.16: C capped at the context `max_len`)
/// off: multimodal, pipeline parallelism; `--disable-cuda-graph` (0.5.14–);
///      DP attention and EPLB (0.5.10–0.5.16 / 0.5.14);
///      Qwen3-Next (0.5.10–0.5.14); MLA (0.5.15–0.5.16)
/// ```
/// Source: SGLang `server_args.py` (`_handle_piecewise_cuda_graph`, `piecewise_cuda_graph_tokens`,
/// 0.5.10), `arg_groups/cuda_graph_hook.py` (`apply_cuda_graph_compatibility`, 0.5.23),
/// `configs/model_config.py` (`piecewise_cuda_graph_disabled_model_archs`, 0.5.10).
///
/// # Example
/// Llama 3 8B on an H100 (C = 8,192): n = 58, 464 MiB.
fn prefill_graph_reserve(
    s: &Scenario,
    p: &Prepared,
    l: &Layout,
    v: Version,
    dp_attention: bool,
) -> u64 {
    let mla = p.arch.mla.is_some();
    let eplb = eplb::redundant(s, &p.arch) > 0;
    let before = |x: (u16, u16, u16)| v < Version(x.0, x.1, x.2, 0);
    let off = v < PREFILL_GRAPHS_FROM
        || (graphs_off(s) && v >= DISABLE_BOTH_FROM)
        || s.vision().is_some()
        || l.pp.get() > 1
        || (dp_attention && before((0, 5, 17)))
        || (eplb && before((0, 5, 15)))
        || (s.model.preset.starts_with("qwen3-next") && before((0, 5, 15)))
        || (mla && !before((0, 5, 15)) && before((0, 5, 17)));
    if off {
        return 0;
    }
    if mla {
        return 1536;
    }
    let mut c = chunk_size(s, v);
    if let (Some(ml), false) = (s.serving.max_len, before((0, 5, 13)) || !before((0, 5, 17))) {
        c = c.min(ml.get() as u64);
    }
    8 * prefill_buckets(c)
}

/// How many prefill CUDA-graph token buckets SGLang captures up to `c` tokens.
///
/// ```text
/// 4…32 step 4 (8), 48…256 step 16 (14), 288…512 step 32 (8), 576…1,024 step 64 (8),
/// 1,280…4,096 step 256 (12), then 4,608, 5,120, … step 512
/// ```
fn prefill_buckets(c: u64) -> u64 {
    const RUNS: [(u64, u64, u64); 5] = [
        (4, 32, 4),
        (48, 256, 16),
        (288, 512, 32),
        (576, 1024, 64),
        (1280, 4096, 256),
    ];
    let mut n = 0;
    for (lo, hi, step) in RUNS {
        if c >= lo {
            n += (c.min(hi) - lo) / step + 1;
        }
    }
    if c >= 4608 {
        n += (c - 4608) / 512 + 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::query::decode;

    fn mfs(q: &str) -> f64 {
        mfs_dp(q, false)
    }

    fn mfs_dp(q: &str, dp_attention: bool) -> f64 {
        let s = decode(q).0.scenario;
        let p = Prepared::of(&s);
        default_mfs(&s, &p, &s.layout(), used_release(&s), dp_attention)
    }

    /// DeepSeek-V3 with DP attention over 8 H200s (g = 143,771 MiB, `--tp 8 --dp 8`):
    /// 0.4.10 R = (12 + 8/2)·1024 + 4,096 = 20,480 → 0.858; 0.5.3 R = 512 + 1.5·8,192 +
    /// 2·512 + 1,024 + 3·512·8 + 1.5·512·8 = 33,280 → 0.769 (no prefill graphs under DP
    /// attention before 0.5.17); 0.5.17 adds MLA's 1,536 → 0.758.
    #[test]
    fn dp_attention_reserve_by_release() {
        let q = |v: &str| {
            format!("mode=serve&engine=sglang&engine_version={v}&model=deepseek-v3&quant=fp8&gpu=h200&gpus_per_node=8&tp=1&dp=8&ep=8")
        };
        assert_eq!(mfs_dp(&q("0.4.10"), true), 0.858);
        assert_eq!(mfs_dp(&q("0.5.3"), true), 0.769);
        assert_eq!(mfs_dp(&q("0.5.16"), true), 0.769);
        assert_eq!(mfs_dp(&q("0.5.17"), true), 0.758);
    }

    /// The helper's counts of SGLang's bucket list at 2k, 4k, 8k, 16k tokens.
    #[test]
    fn prefill_buckets_by_hand() {
        assert_eq!(
            [2048, 4096, 8192, 16_384].map(prefill_buckets),
            [42, 50, 58, 74]
        );
        assert_eq!(prefill_buckets(4), 1);
        assert_eq!(prefill_buckets(100), 8 + 4);
    }

    /// Llama 3 8B, TP 1, defaults, by release: H100 (81,559 MiB) and RTX 4090 (24,564 MiB).
    /// By hand: 0.4.10 on the H100 R = (9.5 + 0.5)·1024 = 10,240 → round(71,319/81,559, 3)
    /// = 0.874; the 4090 R = 2.9·1024 = 2,969.6 → 0.879. 0.5.3: R = 512 + 1.5·8,192 + 2·256 +
    /// 128 = 13,440 → 0.835 and 512 + 3,072 + 32 + 128 = 3,744 → 0.848. 0.5.5 (D 24): 3,760
    /// → 0.847. 0.5.10 (+8·58 = 464, +8·42 = 336): 0.830 and 0.833. 0.5.20 on the 4090 (C
    /// 4,096, D 48, +8·50): 512 + 6,144 + 96 + 128 + 400 = 7,280 → 0.704.
    #[test]
    fn default_fraction_by_release() {
        let q = |v: &str, gpu: &str| {
            format!("mode=serve&engine=sglang&engine_version={v}&model=llama-3-8b&gpu={gpu}")
        };
        let table = [
            ("0.4.6", "h100-80", 0.88),
            ("0.4.6", "h200", 0.9074),
            ("0.4.6.post2", "h200", 0.8718),
            ("0.4.7", "h200", 0.8718),
            ("0.4.5.post2", "h200", 0.88),
            ("0.4.10", "h100-80", 0.874),
            ("0.4.10", "rtx4090", 0.879),
            ("0.5.3", "h100-80", 0.835),
            ("0.5.3", "rtx4090", 0.848),
            ("0.5.5", "rtx4090", 0.847),
            ("0.5.10", "h100-80", 0.830),
            ("0.5.10", "rtx4090", 0.833),
            ("0.5.23", "h100-80", 0.830),
            ("0.5.23", "rtx4090", 0.704),
        ];
        for (v, gpu, want) in table {
            let got = mfs(&q(v, gpu));
            assert!((got - want).abs() < 5e-5, "{v} on {gpu}: {got}");
        }
    }
}
