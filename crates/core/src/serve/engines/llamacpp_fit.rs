//! llama.cpp's automatic fit (`--fit`, on by default in llama-server and llama-cli from
//! b7437): before loading, llama.cpp measures its buffers with a dry run and, when they
//! would not leave 1 GiB of the device free, first shrinks an unset context, then moves
//! layers to host memory (an unset `-ngl`).

use super::llamacpp::plan_at;
use super::*;
use crate::scenario::{CtxPer, LlamaFit, LLAMACPP_FIT_FROM};
use crate::serve::{FitOutcome, Fitted};

/// The free memory the fit keeps on each device (`--fit-target`, `-fitt`; 1,024 MiB).
pub(crate) const FIT_MARGIN: u64 = 1024 * MIB;

/// The shortest context the fit shrinks to (`--fit-ctx`, `-fitc`; 4,096 tokens).
pub(crate) const FIT_MIN_CTX: u64 = 4096;

/// Whether the fit runs: `fit=on`, or `auto` on llama-server (`ctx_per=total`) from
/// [`LLAMACPP_FIT_FROM`] (b7437). Ollama (`ctx_per=sequence`) never runs it: it passes its own
/// context and layer count to its runner.
pub(crate) fn fit_runs(s: &Scenario, v: Version) -> bool {
    match s.serving.fit {
        LlamaFit::Off => false,
        LlamaFit::On => s.serving.ctx_per == CtxPer::Total,
        LlamaFit::Auto => s.serving.ctx_per == CtxPer::Total && v >= LLAMACPP_FIT_FROM,
    }
}

/// Bytes the plan puts on the most loaded GPU, the CUDA context included.
fn used(pl: &Plan) -> u64 {
    let parts = [&pl.weights, &pl.activation, &pl.kv, &pl.outside];
    sat(parts.iter().map(|e| e.eval() as u128).sum())
}

/// `s` with the context (`-c`) and `-ngl` the fit chose.
fn with(s: &Scenario, n_ctx: u64, ngl: Option<u64>) -> Scenario {
    let mut t = s.clone();
    t.serving.max_len = Some(crate::nonzero::at_least_one(
        n_ctx.min(u32::MAX as u64) as u32
    ));
    if let Some(g) = ngl {
        t.serving.ngl = Some(g.min(u32::MAX as u64) as u32);
    }
    t
}

/// llama.cpp's start-up after its fit: the plan of the settings the fit chose, and what it
/// changed (`None` where the fit does not run or changes nothing).
///
/// # Formula
/// ```text
/// U(c, g) = W_gpu + C + KV + ctx           the plan's bytes on the GPU at context c, g layers
/// T       = M_total − 1,024 MiB            (free = M_total − ctx; the fit keeps 1,024 MiB of it)
/// U(c₀, all) ≤ T                           → no change (c₀ = max_len, else the model's context)
/// max_len unset, c₀ > 4,096:
///   c = 4,096 + (c₀ − 4,096)·(T − U(4,096)) / (U(c₀) − U(4,096)),  rounded down to 256,
///       at least 4,096                     (one GPU: done when U(4,096) < T)
/// else, c = 4,096 (max_len unset) or max_len, and with ngl unset:
///   ngl = the most layers g (of L + 1) with U(c, g) ≤ T   (dense; 0 when none fits)
/// ngl set by the user: the fit stops ("n_gpu_layers already set by user to N, abort")
/// ```
/// `M_total` is the device's CUDA total ([`device_total`]), `U(c)` at every layer. The two
/// dry runs' line through (4,096, U_min) and (c₀, U_max) is llama.cpp's interpolation; its
/// integer division truncates. A mixture whose layers must move (llama.cpp first moves the
/// routed experts of every layer, then fills layers back) and several GPUs (the context
/// target less half a layer per GPU, then layers per device) are not modelled: named.
///
/// Source: llama.cpp `common/fit.cpp` `common_params_fit_impl` (first `llama_params_fit_impl`
/// in `src/llama.cpp`, PR #16653; PR #18070: a context set by the user is never reduced),
/// `common/common.h` (`fit_params = true`, `fit_params_min_ctx = 4096`,
/// `fit_params_target` 1,024 MiB a device).
///
/// # Example
/// Llama 2 7B Q4_K_M with a 131,072-token context (512 KiB of f16 KV a token) on an RTX
/// 4090 (24,563 MiB, 600 MiB of it the CUDA context), llama-server b8179 with no `-c`:
/// "projected to use 69427 MiB of device memory vs. 23963 MiB of free device memory";
/// the line through 4,096 and 131,072 tokens meets the target at 37,888 tokens (rounded
/// down to 256), "context size reduced from 131072 to 37888 -> need 46592 MiB less memory
/// in total" (93,184 tokens × 512 KiB); every layer stays (`tests_fit`).
pub(super) fn plan(s: &Scenario, p: &Prepared, l: &Layout, v: Version) -> Plan {
    let base = plan_at(s, p, l);
    if !fit_runs(s, v) {
        return base;
    }
    let total = device_total(s);
    let target = total.saturating_sub(FIT_MARGIN);
    let u0 = used(&base);
    if u0 <= target {
        return base;
    }
    let ctx = s.cuda_ctx_mib() as u64 * MIB;
    let c0 = max_len(s);
    let mut fitted = Fitted {
        n_ctx_from: c0,
        n_ctx: c0,
        ngl: None,
        projected_bytes: u0.saturating_sub(ctx),
        free_bytes: total.saturating_sub(ctx),
        reduction_bytes: 0,
        layers: p.arch.layers.get() as u64 + 1,
        outcome: FitOutcome::Context,
    };
    let auto_ctx = s.serving.max_len.is_none();
    let finish = |t: &Scenario, f: Fitted| {
        let mut pl = plan_at(t, p, l);
        pl.fit = Some(f);
        pl
    };
    if l.tp.get() > 1 {
        fitted.outcome = FitOutcome::NotModelled;
        let mut pl = base;
        pl.fit = Some(fitted);
        return pl;
    }
    let mut c = c0;
    if auto_ctx && c0 > FIT_MIN_CTX {
        let u_min = used(&plan_at(&with(s, FIT_MIN_CTX, None), p, l));
        c = FIT_MIN_CTX;
        let span = (c0 - FIT_MIN_CTX) as u128;
        if target > u_min && u0 > u_min {
            let step = span * (target - u_min) as u128 / (u0 - u_min) as u128;
            let n = FIT_MIN_CTX as u128 + step;
            c = sat(n - n % 256).max(FIT_MIN_CTX);
            let per_ctx = (u0 - u_min) as u128 / span;
            fitted.n_ctx = c;
            fitted.reduction_bytes = sat((c0 - c) as u128 * per_ctx);
            return finish(&with(s, c, None), fitted);
        }
        fitted.n_ctx = c;
        fitted.reduction_bytes = u0.saturating_sub(u_min);
    }
    if s.serving.ngl.is_some() {
        fitted.outcome = FitOutcome::NglSet;
        return finish(&with(s, c, None), fitted);
    }
    if p.arch.experts > 0 {
        fitted.outcome = FitOutcome::NotModelled;
        return finish(&with(s, c, None), fitted);
    }
    let layers = p.arch.layers.get() as u64 + 1;
    let fits = |g: u64| used(&plan_at(&with(s, c, Some(g)), p, l)) <= target;
    // The most layers that fit: U grows with g, so a bisection finds llama.cpp's answer
    // (its false-position search stops at the last count that fits).
    let (mut lo, mut hi) = (0u64, layers);
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    fitted.ngl = Some(lo);
    fitted.outcome = FitOutcome::Layers;
    finish(&with(s, c, Some(lo)), fitted)
}
