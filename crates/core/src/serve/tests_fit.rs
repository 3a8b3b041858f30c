//! llama.cpp's `--fit` (llama-server from b7437): the context it shrinks, the layers it
//! moves, where it stops, and where it does not run.

use super::tests::plan;
use super::*;
use crate::contract::query::decode;
use crate::units::MIB;

/// Bytes the plan puts on the GPU, the CUDA context included (what the fit compares with
/// the device's total less its 1,024 MiB margin).
fn gpu_bytes(q: &str) -> u64 {
    gpu_bytes_of(&plan(q))
}

fn gpu_bytes_of(p: &Plan) -> u64 {
    [&p.weights, &p.activation, &p.kv, &p.outside]
        .iter()
        .map(|e| e.eval())
        .sum()
}

fn fitted(q: &str) -> Fitted {
    plan(q)
        .fit
        .unwrap_or_else(|| panic!("{q}: the fit did not run"))
}

const MARGIN: u64 = 1024 * MIB;

/// Llama 2 7B (512 KiB of f16 KV a token) with a 131,072-token context on an RTX 4090,
/// llama-server b8179, no `-c`: 64 GiB of cache at the model's context. The fit draws the
/// line through its two dry runs (4,096 tokens and 131,072) and takes the context where it
/// meets the device's total less 1,024 MiB, rounded down to 256; every layer stays.
#[test]
fn fit_shrinks_the_context() {
    let q = "mode=serve&engine=llamacpp&model=llama-2-7b&context=131072&quant=q4_k_m&gpu=rtx4090&ctx_per=total&engine_version=b8179";
    let off = |c: u64| gpu_bytes(&format!("{q}&fit=off&max_len={c}"));
    let total = plan(q).budget;
    let target = total - MARGIN;
    let (u_min, u_max) = (off(4096), off(131_072));
    assert!(u_max > target && u_min < target);
    let n = 4096 + (131_072 - 4096) * (target - u_min) / (u_max - u_min);
    let want = n - n % 256;
    let f = fitted(q);
    assert_eq!(f.outcome, FitOutcome::Context);
    assert_eq!((f.n_ctx_from, f.n_ctx, f.ngl), (131_072, want, None));
    let p = plan(q);
    assert_eq!(p.max_len, want, "the slot's context is the fitted -c");
    assert_eq!(p.error, None);
    // The cache is linear in the context here, and so is the compute buffer (flash
    // attention: a layer's peak, whose masks take 6·n_ub = 3,072 B a cell), so the
    // rounded-down context fits and 256 more would not.
    assert!(gpu_bytes(q) <= target);
    assert!(off(want + 256) > target);
    // 512 KiB a token and 3,072 B of masks: the reduction the fit logs is
    // (131,072 − c)·(512 KiB + 3 KiB).
    assert_eq!(f.reduction_bytes, (131_072 - want) * (512 * 1024 + 6 * 512));
    assert_eq!(f.free_bytes, total - p.outside.eval());
    assert_eq!(f.projected_bytes, u_max - p.outside.eval());
    let m = f.message();
    assert!(
        m.contains(&format!(
            "context size reduced from 131072 to {want} -> need"
        )),
        "{m}"
    );
}

/// A context the user set is never shrunk (PR #18070): layers go to host memory instead,
/// as many as leave 1,024 MiB free. Llama 3 70B Q4_K_M at `-c 8192` on an RTX 4090.
#[test]
fn fit_moves_layers_when_the_context_is_set() {
    let q = "mode=serve&engine=llamacpp&model=llama-3-70b&quant=q4_k_m&gpu=rtx4090&ctx_per=total&max_len=8192";
    let f = fitted(q);
    assert_eq!(f.outcome, FitOutcome::Layers);
    assert_eq!((f.n_ctx_from, f.n_ctx), (8192, 8192));
    let g = f.ngl.expect("a layer count");
    assert_eq!(f.layers, 81);
    let target = plan(q).budget - MARGIN;
    let at = |g: u64| gpu_bytes(&format!("{q}&fit=off&ngl={g}"));
    assert!(at(g) <= target, "ngl {g} leaves the margin");
    assert!(at(g + 1) > target, "ngl {} would not", g + 1);
    let p = plan(q);
    assert_eq!(p.error, None);
    let mut given = plan(&format!("{q}&fit=off&ngl={g}"));
    given.fit = Some(f);
    given.fit_message = f.message();
    assert_eq!(p, given);
    assert!(f
        .message()
        .contains(&format!("offloaded {g}/81 layers to GPU")));
}

/// With neither set, the context goes first, to 4,096 tokens at the least, then layers.
#[test]
fn fit_shrinks_the_context_then_moves_layers() {
    let q = "mode=serve&engine=llamacpp&model=llama-3-70b&quant=q4_k_m&gpu=rtx4090&ctx_per=total&context=131072";
    let f = fitted(q);
    assert_eq!(f.outcome, FitOutcome::Layers);
    assert_eq!((f.n_ctx_from, f.n_ctx), (131_072, 4096));
    let g = f.ngl.unwrap();
    let at = |g: u64| gpu_bytes(&format!("{q}&fit=off&max_len=4096&ngl={g}"));
    let target = plan(q).budget - MARGIN;
    assert!(at(g) <= target && at(g + 1) > target);
    // At the shortest context the reduction is the whole difference of the two dry runs.
    assert_eq!(
        f.reduction_bytes,
        gpu_bytes(&format!("{q}&fit=off")) - gpu_bytes(&format!("{q}&fit=off&max_len=4096"))
    );
}

/// `-ngl` set: the fit shrinks an unset context, then stops ("n_gpu_layers already set by
/// user to 999, abort", as a RamaLama log on a 20 GB card prints after "context size reduced
/// from 32768 to 4096"), and the start-up runs out of memory as before.
#[test]
fn fit_stops_at_a_user_ngl() {
    let q = "mode=serve&engine=llamacpp&model=llama-3-70b&quant=q4_k_m&gpu=rtx4090&ctx_per=total&ngl=99";
    let f = fitted(q);
    assert_eq!(f.outcome, FitOutcome::NglSet);
    assert_eq!((f.n_ctx_from, f.n_ctx, f.ngl), (8192, 4096, None));
    let p = plan(q);
    assert!(p
        .error
        .unwrap()
        .starts_with("cudaMalloc failed: out of memory"));
    assert_eq!(p.max_len, 4096);
}

/// Where the fit does not run, or has nothing to do, the plan is the settings' own:
/// Ollama (`ctx_per=sequence`), builds before b7437, `fit=off`, and a model that leaves the
/// margin free.
#[test]
fn fit_keeps_what_it_does_not_touch() {
    let big = "mode=serve&engine=llamacpp&model=llama-3-70b&quant=q4_k_m&gpu=rtx4090&max_len=8192";
    for q in [
        format!("{big}&ctx_per=total&engine_version=b7000"),
        format!("{big}&ctx_per=total&fit=off"),
        "mode=serve&engine=llamacpp&model=llama-3-8b&quant=q4_k_m&gpu=rtx4090&ctx_per=total".into(),
    ] {
        let p = plan(&q);
        assert_eq!(p.fit, None, "{q}");
        let fit_off = match q.contains("fit=off") {
            true => plan(&q),
            false => plan(&format!("{q}&fit=off")),
        };
        assert_eq!(p, fit_off, "{q}");
    }
    // Under Ollama's convention before 0.30 Ollama places the layers (`fit` is
    // llama-server's and changes nothing there): 41 of 81 on the RTX 4090, the launch starts.
    let old = format!("{big}&engine_version=ollama-0.13.5");
    let ollama = plan(&old);
    assert!(ollama.error.is_none());
    let f = ollama.fit.unwrap();
    assert_eq!(
        (f.outcome, f.ngl, f.layers),
        (FitOutcome::Ollama, Some(41), 81)
    );
    assert_eq!(plan(&format!("{old}&fit=off")), plan(&old));
    // From 0.30 (and without a release: the newest) Ollama starts llama-server with `-c` and
    // no `-ngl`, so llama-server's fit places them, as with `ctx_per=total`: 42 of 81.
    let newest = plan(big).fit.unwrap();
    let server = fitted(&format!("{big}&ctx_per=total"));
    assert_eq!((newest.outcome, newest.ngl), (FitOutcome::Layers, Some(42)));
    assert_eq!(newest, server);
    assert_eq!(
        plan(&format!("{big}&engine_version=ollama-0.30.0")).fit,
        Some(newest)
    );
    // `fit=on` runs it on a build before b7437 (and says so).
    let on = format!("{big}&ctx_per=total&engine_version=b7000&fit=on");
    assert_eq!(fitted(&on).outcome, FitOutcome::Layers);
}

/// The fit's published example (`tools/fit-params/README.md`, PR #16653, build 6895):
/// Qwen3-30B-A3B in f16 on an RTX 4090 — "projected to use 61807 MiB of device memory vs.
/// 24077 MiB of free device memory", "context size reduced from 40960 to 4096 -> need
/// 3456 MiB less memory in total". memfit: 61,782 MiB (−0.04 %); the free memory is the
/// device's less memfit's CUDA context (23,963 MiB; that machine's context was 486 MiB);
/// the reduction 36,864 tokens × 96 KiB, to the MiB. What follows, the experts moved to
/// host memory, ends at "48 layers (34 overflowing), 19187 MiB used, 1199 MiB free" there,
/// which does not add up (15 full layers of 1,152 MiB of f16 experts alone are 17,280 MiB
/// beside 2.3 GiB of dense weights; and its "surplus of 16164 MiB" with only the dense
/// weights was measured at the 40,960-token context, 3,456 MiB more cache): memfit's
/// "49 layers (31 overflowing)" is not checked against it.
#[test]
fn fit_matches_its_readme_example() {
    let q = "mode=serve&engine=llamacpp&model=qwen3-30b-a3b&precision=fp16&gpu=rtx4090&ctx_per=total&fit=on&engine_version=b7437";
    let f = fitted(q);
    let projected = f.projected_bytes as f64 / MIB as f64;
    assert!((projected / 61_807.0 - 1.0).abs() < 0.001, "{projected}");
    assert_eq!((f.n_ctx_from, f.n_ctx), (40_960, 4096));
    assert_eq!(f.reduction_bytes / MIB, 3456);
    assert_eq!((f.outcome, f.cpu_experts), (FitOutcome::Experts, 31));
    assert!(f
        .message()
        .contains("-> need 3456 MiB less memory in total"));
}

/// The routed experts in host memory (`-ngl 99 --n-cpu-moe 99`, what the fit does to a
/// mixture): gpt-oss-20b's ggml-org GGUF on an RTX 3070, llama.cpp b6699, `-c 131072 -fa on`
/// (ikawrakow/ik_llama.cpp issue #822, the mainline log): "CUDA0 model buffer size =
/// 1242.03 MiB", "CPU_Mapped model buffer size = 10949.33 MiB", "CUDA0 KV buffer size =
/// 3072.00 MiB" + "18.00 MiB", "CUDA0 compute buffer size = 456.98 MiB".
#[test]
fn experts_in_host_memory_match_the_gpt_oss_log() {
    let q = "mode=serve&engine=llamacpp&model=gpt-oss-20b&quant=mxfp4&weight_dtype=q8_0&gpu=rtx4090&ctx_per=total&max_len=131072&flash_attn=on&engine_version=b6699&fit=off";
    let (x, _) = decode(q);
    let s = &x.scenario;
    let p = super::engines::llamacpp_plan_with(s, &Prepared::of(s), &s.layout(), (24, 0));
    let mib = |b: u64| b as f64 / MIB as f64;
    let w = mib(p.weights.eval());
    assert!((w - 1242.03).abs() < 0.1, "{w:.2}");
    let host = mib(p.host.unwrap().host);
    assert!((host - 10_949.33).abs() < 0.1, "{host:.2}");
    assert_eq!(p.kv.eval(), 3090 * MIB);
    // The compute buffer is a layer's peak, not the logits' 4·n_ub·(V + h) = 398.38 MiB:
    // the masks of 131,072 + 768 cells, 6·512·131,840 B = 386.25 MiB, and the residual,
    // gate, up and gated product of k = 4 experts of 2,880, 4·512·(2,880 + 3·4·2,880) B =
    // 73.13 MiB: 459.38 MiB, 0.5 % over the log's 456.98.
    let c = mib(p.activation.eval());
    assert!((c - 459.38).abs() < 0.01, "{c:.2}");
    assert!((c - 456.98).abs() / 456.98 < 0.006);
    // With every expert on the GPU it is the whole file less token_embd.
    let all = plan(q);
    assert!((mib(all.weights.eval()) - 10_949.35).abs() < 0.1);
}

/// A mixture on one GPU that does not fit even at 4,096 tokens: llama.cpp moves the routed
/// experts of every layer to host memory, then brings layers' experts back front to back
/// while the margin holds ("N layers (M overflowing)"). gpt-oss-120b (ggml-org's GGUF) on
/// an RTX 4090 at the model's 131,072-token context: the context goes to 4,096, then the
/// experts of all but the first few layers go to host memory.
#[test]
fn fit_moves_a_mixtures_experts() {
    let q = "mode=serve&engine=llamacpp&model=gpt-oss-120b&quant=mxfp4&weight_dtype=q8_0&gpu=rtx4090&ctx_per=total";
    let f = fitted(q);
    assert_eq!(f.outcome, FitOutcome::Experts);
    assert_eq!(
        (f.n_ctx_from, f.n_ctx, f.ngl, f.layers),
        (131_072, 4096, None, 37)
    );
    let (x, _) = decode(&format!("{q}&max_len=4096&fit=off"));
    let s = &x.scenario;
    let part = |e: u64, k: u8| {
        let p = super::engines::llamacpp_plan_with(s, &Prepared::of(s), &s.layout(), (e, k));
        gpu_bytes_of(&p)
    };
    let with = |e: u64| part(e, 0);
    let target = plan(q).budget - MARGIN;
    let e = f.cpu_experts;
    assert!(e > 0 && e < 36, "{e}");
    assert!(
        with(e) <= target,
        "{e} layers' experts in host memory leave the margin"
    );
    assert!(
        with(e - 1) > target,
        "one more layer's experts on the GPU would not"
    );
    // Then the first overflowing layer's up projections (gpt-oss: 128 experts × 2,880 ×
    // 2,880 in MXFP4), then its gate ones, where they stay under the target.
    let up = 128 * 2880 * 2880 / 32 * 17;
    assert_eq!(part(e, 1) - with(e), up);
    assert_eq!(part(e, 2) - with(e), 2 * up);
    let k = (1..=2).take_while(|&k| part(e, k) < target).count() as u8;
    let p = plan(q);
    assert_eq!(gpu_bytes_of(&p), part(e, k));
    assert!(gpu_bytes_of(&p) < target);
    assert_eq!(p.error, None);
    assert!(f
        .message()
        .ends_with(&format!("; 37 layers ({e} overflowing)")));
    assert_eq!(Plan::from_line(&p.to_line()), Some(p));
}

/// Not even the dense weights fit: layers go to host memory, each GPU layer's experts too
/// (llama.cpp's dense-only fill). Qwen3-235B-A22B Q4_K_M on an RTX 3090 at 131,072 tokens
/// set by the user.
#[test]
fn fit_moves_a_mixtures_layers_when_the_dense_part_does_not_fit() {
    let q = "mode=serve&engine=llamacpp&model=qwen3-235b-a22b&quant=q4_k_m&gpu=rtx3090&ctx_per=total&max_len=131072";
    let f = fitted(q);
    assert_eq!(f.outcome, FitOutcome::Layers);
    let g = f.ngl.unwrap();
    assert!(g > 0 && g < 95, "{g}");
    assert_eq!(
        f.cpu_experts,
        g - 1,
        "every GPU layer's experts in host memory"
    );
    let at = |g: u64| {
        let (x, _) = decode(&format!("{q}&fit=off&ngl={g}"));
        let s = &x.scenario;
        let p = super::engines::llamacpp_plan_with(s, &Prepared::of(s), &s.layout(), (94, 0));
        gpu_bytes_of(&p)
    };
    let target = plan(q).budget - MARGIN;
    assert!(at(g) <= target && at(g + 1) > target, "{g}");
}

/// Several GPUs (llama.cpp's layer split, `tp=2`): the context line is drawn through the
/// sums over the devices, and the target keeps back (t + 1)/2 layers' weights, since each
/// GPU takes whole layers. Llama 3 70B Q4_K_M with a 131,072-token context on two RTX 3090s
/// (a common llama-server setup): the context is cut and every layer stays.
#[test]
fn fit_over_two_gpus_shrinks_the_context() {
    let q = "mode=serve&engine=llamacpp&model=llama-3-70b&quant=q4_k_m&gpu=rtx3090&gpus_per_node=2&tp=2&ctx_per=total&context=131072";
    let off = |c: u64| plan(&format!("{q}&fit=off&max_len={c}"));
    let full = off(131_072);
    let ctx = full.outside.eval();
    let total = full.budget;
    // Written out as common_params_fit_impl computes it, in sums over the two GPUs.
    let sum = |p: &Plan| 2 * (gpu_bytes_of(p) - ctx) as u128;
    let per_layer = 2 * full.weights.eval() as u128 / 80;
    let goal = 2 * (total - MARGIN - ctx) as u128 - 3 * per_layer / 2;
    let (s_min, s_max) = (sum(&off(4096)), sum(&full));
    assert!(s_max > goal && goal > s_min);
    let n = 4096 + 127_976 * (goal - s_min) / (s_max - s_min);
    let want = (n - n % 256) as u64;
    let f = fitted(q);
    assert_eq!(f.outcome, FitOutcome::Context);
    assert_eq!(
        (f.n_ctx_from, f.n_ctx, f.ngl, f.devices),
        (131_072, want, None, 2)
    );
    assert_eq!(f.projected_bytes as u128, s_max);
    assert_eq!(f.free_bytes, 2 * (total - ctx));
    assert!(f
        .message()
        .ends_with("entire model should be fit across devices by reducing context"));
    // The launch it chose leaves the margin on each GPU; the half-layer reserve kept the
    // context short of where one GPU's line alone would have put it.
    let p = plan(q);
    assert_eq!(p.error, None);
    assert_eq!(p.max_len, want);
    assert!(gpu_bytes(q) <= total - MARGIN);
    let alone = 4096 + 127_976 * (goal + 3 * per_layer / 2 - s_min) / (s_max - s_min);
    assert!(alone > n);
}

/// Several GPUs with the context set: layers go to host memory until each GPU leaves its
/// margin (memfit splits the kept layers evenly; llama.cpp packs them back to front).
/// With `-ngl` set the fit stops after the context, as on one GPU; a mixture's experts
/// go to host memory as on one GPU.
#[test]
fn fit_over_two_gpus_moves_layers_or_stops() {
    let q = "mode=serve&engine=llamacpp&model=llama-3-70b&quant=q4_k_m&gpu=rtx3090&gpus_per_node=2&tp=2&ctx_per=total&max_len=65536";
    let f = fitted(q);
    assert_eq!(
        (f.outcome, f.n_ctx, f.devices),
        (FitOutcome::Layers, 65_536, 2)
    );
    let g = f.ngl.unwrap();
    let target = plan(q).budget - MARGIN;
    let at = |g: u64| gpu_bytes(&format!("{q}&fit=off&ngl={g}"));
    assert!(at(g) <= target && at(g + 1) > target, "{g}");
    assert!(plan(&format!("{q}&fit=off")).error.is_some());
    assert_eq!(plan(q).error, None);
    // -ngl set, context unset: the context is cut (with the reserve of the user's layer
    // count), then the fit stops; the layers stay as given.
    let set = "mode=serve&engine=llamacpp&model=llama-3-70b&quant=q4_k_m&gpu=rtx3090&gpus_per_node=2&tp=2&ctx_per=total&context=131072&ngl=99";
    let f = fitted(set);
    assert_eq!(f.outcome, FitOutcome::NglSet);
    assert!(f.n_ctx < 131_072 && f.n_ctx >= 4096);
    assert_eq!(plan(set).max_len, f.n_ctx);
    // A mixture over two GPUs: the experts of the last layers go to host memory, split
    // evenly like the layers, as few as leave each GPU its margin.
    let moe = "mode=serve&engine=llamacpp&model=qwen3-30b-a3b&precision=fp16&gpu=rtx3090&gpus_per_node=2&tp=2&ctx_per=total&max_len=32768";
    let f = fitted(moe);
    assert_eq!((f.outcome, f.devices), (FitOutcome::Experts, 2));
    let (x, _) = decode(&format!("{moe}&fit=off"));
    let s = &x.scenario;
    let with = |e: u64| {
        let p = super::engines::llamacpp_plan_with(s, &Prepared::of(s), &s.layout(), (e, 0));
        gpu_bytes_of(&p)
    };
    let e = f.cpu_experts;
    let target = plan(moe).budget - MARGIN;
    assert!(e > 0 && with(e) <= target && with(e - 1) > target, "{e}");
    assert_eq!(plan(moe).error, None);
}

/// The plan's line carries the fit (the page's second module sends plans as lines).
#[test]
fn the_line_carries_the_fit() {
    for q in [
        "mode=serve&engine=llamacpp&model=llama-3-70b&quant=q4_k_m&gpu=rtx4090&ctx_per=total",
        "mode=serve&engine=llamacpp&model=llama-3-70b&quant=q4_k_m&gpu=rtx4090&ctx_per=total&ngl=99",
        "mode=serve&engine=llamacpp&model=llama-3-70b&quant=q4_k_m&gpu=rtx3090&gpus_per_node=2&tp=2&ctx_per=total&context=131072",
    ] {
        let p = plan(q);
        assert!(p.fit.is_some());
        assert_eq!(Plan::from_line(&p.to_line()), Some(p));
    }
}

/// `fit=on` where it cannot apply is named.
#[test]
fn fit_warnings() {
    let warn = |q: &str| {
        let (x, _) = decode(q);
        let s = &x.scenario;
        s.serve_problems(&s.arch())
            .into_iter()
            .filter(|(k, _)| *k == "fit")
            .map(|(_, m)| m)
            .collect::<Vec<_>>()
    };
    let base = "mode=serve&engine=llamacpp&model=llama-3-8b";
    assert!(warn(&format!("{base}&fit=on"))[0].contains("Ollama (ctx_per=sequence)"));
    assert!(
        warn(&format!("{base}&fit=on&ctx_per=total&engine_version=b7000"))[0]
            .starts_with("llama.cpp b7000 has no --fit")
    );
    assert!(warn(&format!("{base}&fit=on&ctx_per=total")).is_empty());
    assert!(warn(&format!("{base}&ctx_per=total&engine_version=b7000")).is_empty());
}
