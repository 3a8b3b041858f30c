//! llama.cpp's automatic fit (`--fit`, on by default in llama-server and llama-cli from
//! b7437): before loading, llama.cpp measures its buffers with a dry run and, when they
//! would not leave 1 GiB of the device free, first shrinks an unset context, then moves
//! a mixture's routed experts and layers to host memory (an unset `-ngl`).

use super::llamacpp::{plan_at, plan_with};
use super::llamacpp_offload::placement;
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
/// U(c, g) = W_gpu + C + KV + ctx           one GPU's bytes at context c, g layers (memfit's
///                                          even layer split over the t GPUs of `tp`)
/// T       = M_total − 1,024 MiB            (free = M_total − ctx; the fit keeps 1,024 MiB of it)
/// U(c₀, all) ≤ T                           → no change (c₀ = max_len, else the model's context)
/// max_len unset, c₀ > 4,096, in sums over the t GPUs (ctx not counted, as llama.cpp reads it):
///   S(c)  = t·(U(c) − ctx),  S_T = t·(T − ctx) − [t > 1]·(t + 1)·(t·W_gpu / min(ngl, L)) / k
///           (k = 2 dense, 6 a mixture: half a layer, a sixth of one, wasted per GPU and one more)
///   c = 4,096 + (c₀ − 4,096)·(S_T − S(4,096)) / (S(c₀) − S(4,096)),  rounded down to 256,
///       at least 4,096                     (one GPU: done when S(4,096) < S_T)
/// else, c = 4,096 (max_len unset) or max_len; then, with several GPUs or the context not enough:
///   ngl set by the user: the fit stops ("n_gpu_layers already set by user to N, abort")
///   U(c, all) ≤ T: every layer stays (several GPUs: "should be fit across devices")
///   a mixture, U(c, all, e = L) ≤ T (every layer's routed experts in host memory):
///     e = L − f, f the most layers (the first ones) whose experts fit back: U(c, all, L − f) ≤ T
///     ("L + 1 layers (e overflowing)"); one GPU: the first overflowing layer's up, then
///     gate, projections back where U stays under T
///   else ngl = the most layers g (of L + 1) with U(c, g, e) ≤ T, e = every GPU layer's
///     experts for a mixture, 0 for a dense model   (0 when none fits)
/// ```
/// `U(c, g, e)` is [`plan_with`]'s: the routed experts (and gpt-oss's expert biases) of the
/// last `e` GPU layers in host memory. On one GPU llama.cpp then tries part of one more layer:
/// the first overflowing layer's up projections back on the GPU where `U < T`, then its
/// gate ones too (`LAYER_FRACTION_UP`, `LAYER_FRACTION_GATE`; the count of overflowing layers
/// stays). Its fallback when the up projections do not fit (`LAYER_FRACTION_ATTN`: that
/// layer's shared experts and router to host memory too) is not modelled.
/// `M_total` is the device's CUDA total ([`device_total`]), `U(c)` at every layer. The two
/// dry runs' line through (4,096, S_min) and (c₀, S_max) is llama.cpp's interpolation; its
/// integer division truncates. Over several GPUs llama.cpp fills whole layers back to front,
/// the last GPU first; memfit splits the same count evenly, which can hold up to a layer a
/// GPU more than the packing; a mixture's full layers (experts on the GPU) likewise.
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
    let t = l.tp.get() as u64;
    let ctx = s.cuda_ctx_mib() as u64 * MIB;
    let c0 = max_len(s);
    let sum = |b: u64| sat(t as u128 * b.saturating_sub(ctx) as u128);
    let mut fitted = Fitted {
        n_ctx_from: c0,
        n_ctx: c0,
        ngl: None,
        projected_bytes: sum(u0),
        free_bytes: sum(total),
        reduction_bytes: 0,
        layers: p.arch.layers.get() as u64 + 1,
        devices: t,
        cpu_experts: 0,
        outcome: FitOutcome::Context,
    };
    let finish = |t: &Scenario, f: Fitted| attach(plan_at(t, p, l), f);
    let mut c = c0;
    if s.serving.max_len.is_none() && c0 > FIT_MIN_CTX {
        let met;
        (c, met) = context(s, p, l, &base, &mut fitted);
        if t == 1 && met {
            return finish(&with(s, c, None), fitted);
        }
    }
    let bytes = |g: Option<u64>, e: u64, k: u8| used(&plan_with(&with(s, c, g), p, l, (e, k)));
    let at = |g: Option<u64>, e: u64| bytes(g, e, 0) <= target;
    let moe = p.arch.experts > 0;
    let layers = p.arch.layers.get() as u64;
    fitted.outcome = match s.serving.ngl {
        Some(_) => FitOutcome::NglSet,
        None if at(None, 0) => FitOutcome::Context,
        None if moe && at(None, layers) => FitOutcome::Experts,
        None => FitOutcome::Layers,
    };
    match fitted.outcome {
        FitOutcome::Experts => {
            // The most layers with their experts on the GPU (the first ones; llama.cpp
            // converts the dense-only layers to full ones front to back).
            let full = most(layers, |f| at(None, layers - f));
            fitted.cpu_experts = layers - full;
            // Then part of one more layer on one GPU: its up projections, then its gate ones,
            // each kept where it stays under the target.
            let e = layers - full;
            let k = match t == 1 && e > 0 {
                true => (1..=2).take_while(|&k| bytes(None, e, k) < target).count() as u8,
                false => 0,
            };
            attach(plan_with(&with(s, c, None), p, l, (e, k)), fitted)
        }
        FitOutcome::Layers => {
            // The most layers on the GPU (a mixture's with their experts in host memory).
            let e = if moe { layers } else { 0 };
            let g = most(fitted.layers, |g| at(Some(g), e));
            let t = with(s, c, Some(g));
            let gpu = placement(&t, &p.arch, v).gpu;
            fitted.ngl = Some(g);
            fitted.cpu_experts = e.min(gpu);
            attach(plan_with(&t, p, l, (e, 0)), fitted)
        }
        _ => finish(&with(s, c, None), fitted),
    }
}

/// `pl` with the fit that chose it, and the fit's message in llama.cpp's words.
fn attach(mut pl: Plan, f: Fitted) -> Plan {
    pl.fit_message = f.message();
    pl.fit = Some(f);
    pl
}

/// The largest `n ≤ max` with `fits(n)` (0 when none), for a `fits` that holds up to a
/// point and not beyond: memory grows with the layers (or experts) on the GPU, so a
/// bisection finds llama.cpp's answer (its false-position search stops at the last count
/// that fits).
fn most(max: u64, fits: impl Fn(u64) -> bool) -> u64 {
    let (mut lo, mut hi) = (0u64, max);
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo
}

/// The fit's second step, an unset context over 4,096 tokens: the context where the line
/// through the dry runs at 4,096 tokens and at `c₀` meets the devices' target (see
/// [`plan`]'s formula), with `fitted.n_ctx` and `fitted.reduction_bytes` set, and whether the
/// line met the target; 4,096 where the shortest context does not reach it either.
fn context(s: &Scenario, p: &Prepared, l: &Layout, base: &Plan, f: &mut Fitted) -> (u64, bool) {
    let t = f.devices as u128;
    let c0 = f.n_ctx_from;
    let min = used(&plan_at(&with(s, FIT_MIN_CTX, None), p, l));
    let ctx = s.cuda_ctx_mib() as u64 * MIB;
    let sum = |b: u64| t * b.saturating_sub(ctx) as u128;
    // Several GPUs take whole layers: the target keeps (t + 1)/2 layers' weights back
    // (a sixth of that for a mixture, whose tensors move one by one).
    let layers = (p.arch.layers.get() as u64).min(s.serving.ngl.map_or(u64::MAX, u64::from));
    let per_layer = (t * base.weights.eval() as u128)
        .checked_div(layers as u128)
        .unwrap_or(0);
    let k = if p.arch.experts > 0 { 6 } else { 2 };
    let slack = if t > 1 { (t + 1) * per_layer / k } else { 0 };
    let goal = sum(device_total(s).saturating_sub(FIT_MARGIN)).saturating_sub(slack);
    let (s_min, s_max) = (sum(min), sum(used(base)));
    let span = (c0 - FIT_MIN_CTX) as u128;
    f.n_ctx = FIT_MIN_CTX;
    f.reduction_bytes = sat(s_max.saturating_sub(s_min));
    let met = goal > s_min && s_max > s_min;
    if met {
        let n = FIT_MIN_CTX as u128 + span * (goal - s_min) / (s_max - s_min);
        f.n_ctx = sat(n - n % 256).max(FIT_MIN_CTX);
        let per_ctx = (s_max - s_min) / span;
        f.reduction_bytes = sat((c0 - f.n_ctx) as u128 * per_ctx);
    }
    (f.n_ctx, met)
}
