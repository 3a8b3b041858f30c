//! What the serving panel shows, computed outside the view: the engine's answer in
//! words, concurrency against context length, and the serving fit map (tensor-parallel
//! degree × weight format).

use memfit_core::contract::query::encode;
use memfit_core::contract::Settings;
use memfit_core::estimate::Prepared;
use memfit_core::quant::Quant;
use memfit_core::scenario::{count, Dtype, Engine, Scenario};
use memfit_core::serve::{Plan, ServeReport};
use memfit_core::units::{group_digits, Units};

/// The engine's answer in the engine's words.
pub fn summary(r: &ServeReport, units: Units) -> Vec<String> {
    let mut out = vec![format!(
        "{} tokens of KV cache ({} bytes per token) = {:.2} concurrent requests of {} tokens.",
        group_digits(r.kv_tokens),
        group_digits(r.kv_bytes_per_token),
        r.max_concurrency,
        group_digits(r.max_len)
    )];
    out.extend(fit_line(r, units));
    out.push(budget_line(r, units));
    out.push(format!(
        "The longest single request that fits: {} tokens.",
        group_digits(r.max_len_fit)
    ));
    out.extend(experts_line(r));
    if let (Some(host), Some(file)) = (r.host_bytes, r.file_bytes) {
        out.push(format!(
            "In host memory: {} (the file's part the CPU maps and the KV cache of layers left on the CPU); the model file: {}.",
            units.format(host),
            units.format(file)
        ));
    }
    out
}

/// Where an empty `max_len` leaves llama.cpp's context: the front end's own default
/// ([`Scenario::serve_max_len`]), named so the reader knows which number to set.
pub fn default_context_line(s: &Scenario) -> Option<String> {
    use memfit_core::scenario::CtxPer;
    if s.serving.engine != Engine::Llamacpp || s.serving.max_len.is_some() {
        return None;
    }
    let n = group_digits(s.serve_max_len());
    let old_ollama = s
        .ollama_used()
        .filter(|v| *v < memfit_core::scenario::OLLAMA_CTX_BY_VRAM_FROM);
    if let Some(v) = old_ollama {
        return Some(format!(
            "Max length is empty: Ollama {v}'s default num_ctx, {n} tokens (2,048 before v0.6.7, 4,096 from it, by GPU memory from v0.15.5)."
        ));
    }
    Some(match s.serving.ctx_per {
        CtxPer::Sequence => format!(
            "Max length is empty: Ollama's default num_ctx for {:.2} GiB of GPU memory on the node, {n} tokens (from v0.15.5: 4,096, 32,768 from 23 GiB, 262,144 from 47 GiB, at most the model's context; earlier releases 4,096 or 2,048: name yours, engine_version=ollama-0.x.y).",
            (s.cuda_total() as f64 * s.cluster.gpus_per_node.get() as f64) / (1u64 << 30) as f64
        ),
        _ if n == "4,096" => format!(
            "Max length is empty: llama-server's default -c, {n} tokens (from PR #10136 until the --fit builds)."
        ),
        _ => format!(
            "Max length is empty: llama-server's default -c 0, the model's context, {n} tokens (its --fit may cut it)."
        ),
    })
}

/// What llama.cpp's `--fit` changed (llama-server from b7437): the settings the figures are
/// for, and why.
fn fit_line(r: &ServeReport, units: Units) -> Option<String> {
    let x = r.fit.as_ref()?;
    let f = |b: u64| units.format(b);
    let (on, gpu) = match x.devices {
        1 => (String::new(), "the GPU"),
        n => (format!(" on the {n} GPUs"), "the GPUs"),
    };
    if let ("ollama", Some(g)) = (x.outcome.as_str(), x.ngl) {
        return Some(format!(
            "Ollama places the layers itself (num_gpu unset): its estimate of every layer on {gpu}, {}, is more than the {} free{on} less what it keeps back (one more layer, 457 MiB and its compute-graph estimate), so {g} of the {} layers go to {gpu} and the rest stay in host memory. The figures are for that launch; set ngl to place them yourself.",
            f(x.projected_bytes),
            f(x.free_bytes),
            x.layers
        ));
    }
    let why = format!(
        "llama-server's --fit: the settings would use {} of the {} free{on}, not leaving its {} margin",
        f(x.projected_bytes),
        f(x.free_bytes),
        f(x.margin_bytes)
    );
    let ctx = match x.n_ctx == x.n_ctx_from {
        true => String::new(),
        false => format!(
            "the context is cut from {} to {} tokens",
            group_digits(x.n_ctx_from),
            group_digits(x.n_ctx)
        ),
    };
    let and = |a: &str, b: String| match (a.is_empty(), b.is_empty()) {
        (true, _) => b,
        (_, true) => a.to_string(),
        _ => format!("{a}, and {b}"),
    };
    let what = match (x.outcome.as_str(), x.ngl) {
        ("experts", _) => and(&ctx, format!("the routed experts of the last {} of the {} layers go to host memory, the rest stays on {gpu} (llama.cpp also puts part of one more layer's experts on it, not modelled)", x.cpu_experts, x.layers - 1)),
        ("layers", Some(g)) if x.cpu_experts > 0 => and(&ctx, format!("{g} layers (of the repeating layers and the output layer) stay on {gpu} with their routed experts in host memory, the rest in host memory")),
        ("layers", Some(g)) => and(&ctx, format!("{g} layers (of the repeating layers and the output layer) stay on {gpu}, the rest in host memory")),
        ("ngl_set", _) => and(&ctx, "it stops there, since ngl is set (\"n_gpu_layers already set by user\")".into()),
        _ => ctx,
    };
    Some(format!(
        "{why}: {what}. The figures are for that launch; with ctx_per=total, fit=off (llama-server's --fit off) shows the settings as given; Ollama 0.30+ always leaves the fit on."
    ))
}

/// How the engine divides the memory, in its own terms: vLLM's and TensorRT-LLM's budget
/// less what the profile measured; SGLang's static share (weights and pools) and what
/// `mem_fraction_static` holds back beside it; llama.cpp's three allocations.
fn budget_line(r: &ServeReport, units: Units) -> String {
    let f = |b: u64| units.format(b);
    match r.engine.as_str() {
        "sglang" => format!(
            "SGLang's static share {} (mem_fraction_static of the free memory): weights {}, KV cache {}; held back beside it for activations, CUDA graphs and the request-to-token table: {}.",
            f(r.budget_bytes), f(r.weights_bytes), f(r.kv_cache_bytes), f(r.activation_bytes)
        ),
        "llamacpp" => format!(
            "llama.cpp's allocations on the device ({}): weights {}, compute buffer {}, KV cache {}.",
            f(r.budget_bytes), f(r.weights_bytes), f(r.activation_bytes), f(r.kv_cache_bytes)
        ),
        _ => format!(
            "The engine's budget {}: weights {}, activation peak {}, non-torch {}, CUDA graphs {}, KV cache {}.",
            f(r.budget_bytes), f(r.weights_bytes), f(r.activation_bytes), f(r.non_torch_bytes),
            f(r.cuda_graph_bytes), f(r.kv_cache_bytes)
        ),
    }
}

/// Where the routed experts are, when the engine spreads them ("32 of the 256 routed experts
/// per MoE layer on each GPU (EP 8)").
fn experts_line(r: &ServeReport) -> Option<String> {
    let x = r.experts?;
    let on = match x.expert_tp {
        1 => "each GPU".to_string(),
        t => format!("each EP rank of {t} GPUs, each expert split over them"),
    };
    let eplb = match x.redundant {
        0 => String::new(),
        n => format!(", with EPLB's {n} redundant replicas"),
    };
    Some(format!(
        "Experts: {} of the {} routed experts per MoE layer on {on} (EP {}{eplb}).",
        x.per_rank, x.routed, x.ep_ranks
    ))
}

/// The common engines with their defaults, as key settings: every serving key is reset
/// to the engine's default (empty) unless the preset names it.
pub const ENGINE_PRESETS: &[(&str, &[(&str, &str)])] = &[
    ("vLLM", &[("engine", "vllm")]),
    ("SGLang", &[("engine", "sglang")]),
    ("TensorRT-LLM", &[("engine", "trtllm")]),
    (
        "llama-server",
        &[
            ("engine", "llamacpp"),
            ("quant", "q4_k_m"),
            ("ctx_per", "total"),
        ],
    ),
    (
        "Ollama",
        &[
            ("engine", "llamacpp"),
            ("quant", "q4_k_m"),
            ("max_len", "4096"),
            ("parallel", "1"),
        ],
    ),
];

/// Serving keys an engine preset leaves as they are: the engine (every preset names it), the
/// context the user asked for, and EPLB's replicas (vLLM's and SGLang's alike).
const PRESET_KEEPS: [&str; 3] = ["engine", "max_len", "redundant_experts"];

/// Applies an engine preset: the serving keys ([`SERVING_KEYS`] but [`PRESET_KEEPS`]) back
/// to their defaults (an Ollama preset after a llama-server one must not keep its shared
/// context, nor a partial offload), then the preset's.
///
/// [`SERVING_KEYS`]: memfit_core::scenario::SERVING_KEYS
pub fn apply_preset(x: &mut Settings, keys: &[(&str, &str)]) {
    use memfit_core::contract::query::{get_key, set_key};
    let defaults = Settings::default();
    for k in memfit_core::scenario::SERVING_KEYS {
        if !PRESET_KEEPS.contains(&k) {
            let _ = set_key(x, k, &get_key(&defaults, k));
        }
    }
    for (k, v) in keys {
        let _ = set_key(x, k, v);
    }
}

/// One point of the concurrency curve.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConcurrencyPoint {
    /// `max_len`, tokens.
    pub max_len: u64,
    /// Requests of that length that fit at once.
    pub concurrency: f64,
}

/// Concurrency at `max_len` = 512, 1K, 2K, … up to the scenario's `max_len` doubled
/// (at most 2^22), one engine plan each.
///
/// # Example
/// Twice the context halves the requests (the pool is fixed; only `max_len` moves).
pub fn concurrency_curve(s: &Scenario) -> Vec<ConcurrencyPoint> {
    let p = Prepared::of(s);
    let l = s.layout();
    let here = Plan::of(s, &p, &l).max_len;
    let top = (here * 2).clamp(1024, 1 << 22);
    let mut out = Vec::new();
    let mut len = 512u64;
    while len <= top {
        let mut t = s.clone();
        t.serving.max_len = Some(count(len as u32));
        let plan = Plan::of(&t, &p, &l);
        out.push(ConcurrencyPoint {
            max_len: len,
            concurrency: plan.concurrency,
        });
        len *= 2;
    }
    out
}

/// One cell of the serving fit map.
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    /// Tensor-parallel degree.
    pub tp: u32,
    /// Weight format.
    pub quant: Quant,
    /// The non-expert weights' type where the column sets one (llama-quantize's
    /// `MXFP4_MOE`: `weight_dtype=q8_0` beside `quant=mxfp4`), else the scenario's.
    pub weight_dtype: Dtype,
    /// Requests of `max_len` that fit (0 when none).
    pub concurrency: f64,
    /// Whether one request fits.
    pub fits: bool,
    /// Expert parallelism: 1 (off) or the EP size over the cell's TP × DP GPUs (a
    /// mixture of experts under vLLM or SGLang, where it leaves more room than TP alone).
    pub ep: u32,
    /// EPLB's redundant experts the cell holds (`redundant_experts` on a mixture under
    /// vLLM or SGLang: `(E + R)/EP` experts per GPU), 0 without.
    pub redundant: u32,
    /// What llama-server's `--fit` changed in the cell (`None` where it did not run or
    /// changed nothing): the context it cut to, or the layers it kept on the GPU.
    pub fit: Option<memfit_core::serve::Fitted>,
    /// The link that loads the cell's layout.
    pub query: String,
}

/// The weight formats the map compares for an engine, in decreasing bytes per weight:
/// GGUF types for llama.cpp, the checkpoint formats the GPU engines load for the others;
/// vLLM on a mixture of experts adds MXFP4 (the experts in 4.25 bits, gpt-oss's format,
/// `--quantization mxfp4` from 0.10.1).
pub fn formats(e: Engine, moe: bool) -> &'static [Quant] {
    match e {
        Engine::Vllm if moe => &[
            Quant::None,
            Quant::W8a8,
            Quant::Fp8,
            Quant::Mxfp4,
            Quant::Nvfp4,
            Quant::W4a16,
        ],
        Engine::Llamacpp => &[
            Quant::Q8_0,
            Quant::Q6K,
            Quant::Q5KM,
            Quant::Q4KM,
            Quant::Q3KM,
            Quant::Q2K,
        ],
        _ => &[
            Quant::None,
            Quant::W8a8,
            Quant::Fp8,
            Quant::Nvfp4,
            Quant::W4a16,
        ],
    }
}

/// The map's columns: [`formats`], and on a mixture under llama.cpp llama-quantize's
/// `MXFP4_MOE` after Q5_K_M (the routed experts, 3-D tensors, in MXFP4 at 4.25 bits, every
/// other matrix and the output in Q8_0: `llama-quant.cpp`, "MoE tensors -> MXFP4, other
/// tensors -> Q8_0"; the layout of ggml-org's gpt-oss files, `quant=mxfp4&weight_dtype=q8_0`).
/// A column's `Dtype` is its `weight_dtype`, `None` to keep the scenario's.
pub fn columns(e: Engine, moe: bool) -> Vec<(Quant, Option<Dtype>)> {
    let mut out: Vec<(Quant, Option<Dtype>)> = formats(e, moe).iter().map(|&q| (q, None)).collect();
    if e == Engine::Llamacpp && moe {
        out.insert(3, (Quant::Mxfp4, Some(Dtype::Q8_0)));
    }
    out
}

/// The map: TP 1, 2, 4, 8 × the engine's formats ([`columns`]), each cell one engine plan. TP and the
/// weight format are the two choices that set the weights per GPU, so the room left for
/// the KV cache; the KV dtype only scales the cost per token and stays as chosen.
///
/// On a mixture of experts each cell also tries expert parallelism over its TP × DP GPUs
/// (`ep = tp·dp`: vLLM's `--enable-expert-parallel`, SGLang's `--ep-size`) and keeps it
/// where it fits when TP alone does not, or holds more requests; a release or layout the
/// engine runs without EP (vLLM before 0.8.0, SGLang before 0.4.1 or with experts that `ep`
/// does not divide) gives the same plan or a refusal, so the cell stays without.
///
/// `redundant_experts` (EPLB) stays as chosen in every cell: vLLM from 0.10.0 refuses EPLB
/// without EP, and both engines refuse `E + R` physical experts that the cell's EP size
/// does not divide, so such cells read "—"; where EPLB runs each GPU holds `(E + R)/EP`
/// experts and the cell reads "EPLB".
pub fn fit_map(x: &Settings) -> Vec<Vec<Cell>> {
    let s = &x.scenario;
    let moe = Prepared::of(s).arch.experts > 0;
    [1u32, 2, 4, 8]
        .iter()
        .map(|&tp| {
            columns(s.serving.engine, moe)
                .into_iter()
                .map(|(q, w)| {
                    let mut y = x.clone();
                    y.scenario.parallel.tp = count(tp);
                    y.scenario.parallel.dp = None;
                    y.scenario.parallel.pp = count(1);
                    if y.scenario.world() < tp {
                        y.scenario.cluster.gpus_per_node = count(tp);
                    }
                    y.scenario.numerics.quant = q;
                    if let Some(w) = w {
                        y.scenario.numerics.weight_dtype = w;
                    }
                    y.scenario.parallel.ep = count(1);
                    let plain = cell(&y, tp);
                    let l = y.scenario.layout();
                    let td = l.tp.get().saturating_mul(l.dp.get());
                    if !moe || td <= 1 {
                        return plain;
                    }
                    y.scenario.parallel.ep = count(td);
                    let ep = cell(&y, tp);
                    let better = ep.fits && (!plain.fits || ep.concurrency > plain.concurrency);
                    if better {
                        ep
                    } else {
                        plain
                    }
                })
                .collect()
        })
        .collect()
}

/// One cell's plan: the settings `y` (TP, format and EP set).
fn cell(y: &Settings, tp: u32) -> Cell {
    let t = &y.scenario;
    let p = Prepared::of(t);
    let plan = Plan::of(t, &p, &t.layout());
    let moe_engine = matches!(t.serving.engine, Engine::Vllm | Engine::Sglang);
    Cell {
        tp,
        quant: t.numerics.quant,
        weight_dtype: t.numerics.weight_dtype,
        concurrency: plan.concurrency,
        fits: plan.error.is_none(),
        ep: t.parallel.ep.get(),
        redundant: if moe_engine && p.arch.experts > 0 {
            t.serving.redundant_experts
        } else {
            0
        },
        fit: plan.fit,
        query: encode(y),
    }
}

/// A column's heading: the `quant` key's value, `mxfp4 + q8_0` for llama-quantize's
/// `MXFP4_MOE` ([`columns`]).
pub fn column_label(c: &Cell) -> String {
    match (c.quant, c.weight_dtype) {
        (Quant::Mxfp4, Dtype::Q8_0) => "mxfp4 + q8_0".into(),
        (q, _) => q.as_str().into(),
    }
}

/// A cell's text: the concurrency ("3.5×", "3.5× EP" with expert parallelism, "3.5× EPLB"
/// with redundant experts), or "—" where one request does not fit; where llama-server's
/// `--fit` changed the launch, what it chose ("1.0× ctx 37,632", "42/81 layers", "31/48 exp.
/// host": the routed experts of 31 of the 48 layers in host memory).
pub fn cell_text(c: &Cell) -> String {
    use memfit_core::serve::FitOutcome;
    match c.fit {
        Some(f) if c.fits && matches!(f.outcome, FitOutcome::Layers | FitOutcome::Ollama) => {
            return format!("{}/{} layers", f.ngl.unwrap_or(0), f.layers);
        }
        Some(f) if c.fits && f.outcome == FitOutcome::Experts => {
            return format!("{}/{} exp. host", f.cpu_experts, f.layers - 1);
        }
        Some(f) if c.fits && f.n_ctx < f.n_ctx_from => {
            return format!("{:.1}× ctx {}", c.concurrency, group_digits(f.n_ctx));
        }
        _ => {}
    }
    match (c.fits, c.ep > 1, c.redundant > 0) {
        (true, true, true) => format!("{:.1}× EPLB", c.concurrency),
        (true, true, false) => format!("{:.1}× EP", c.concurrency),
        (true, false, _) => format!("{:.1}×", c.concurrency),
        _ => "—".into(),
    }
}

/// A cell's colour class: none, under one request, a few, many.
pub fn cell_class(c: &Cell) -> &'static str {
    // Layers in host memory: it starts, at the host's speed.
    if c.fits && c.fit.is_some_and(|f| f.ngl.is_some() || f.cpu_experts > 0) {
        return "few";
    }
    match c.concurrency {
        x if !c.fits || x < 1.0 => "none",
        x if x < 4.0 => "few",
        x if x < 32.0 => "some",
        _ => "many",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memfit_core::contract::query::decode;

    fn settings(q: &str) -> Settings {
        decode(q).0
    }

    #[test]
    fn engine_presets_set_their_engine() {
        let mut x = settings("mode=serve&model=llama-3-8b&gpu_util=0.5&parallel=4");
        let (_, ollama) = ENGINE_PRESETS.iter().find(|(l, _)| *l == "Ollama").unwrap();
        apply_preset(&mut x, ollama);
        assert_eq!(
            encode(&x),
            "v=1&model=llama-3-8b&mode=serve&quant=q4_k_m&engine=llamacpp&max_len=4096"
        );
    }

    #[test]
    fn llama_server_shares_its_context_and_presets_reset_llama_cpp_keys() {
        let mut x = settings(
            "mode=serve&model=llama-3-8b&engine=llamacpp&ngl=10&kv_offload=0&flash_attn=off",
        );
        let (_, server) = ENGINE_PRESETS
            .iter()
            .find(|(l, _)| *l == "llama-server")
            .unwrap();
        apply_preset(&mut x, server);
        assert_eq!(
            encode(&x),
            "v=1&model=llama-3-8b&mode=serve&quant=q4_k_m&engine=llamacpp&ctx_per=total"
        );
        let (_, ollama) = ENGINE_PRESETS.iter().find(|(l, _)| *l == "Ollama").unwrap();
        apply_preset(&mut x, ollama);
        assert_eq!(
            encode(&x),
            "v=1&model=llama-3-8b&mode=serve&quant=q4_k_m&engine=llamacpp&max_len=4096"
        );
    }

    fn report(q: &str) -> ServeReport {
        memfit_core::estimate::estimate(&decode(q).0.scenario)
            .serve
            .expect("a serving estimate")
    }

    /// The panel says where the experts are: DeepSeek-V3's 256 routed experts over vLLM's
    /// EP 8 (TP 1 × DP 8) are 256/8 = 32 per MoE layer on each GPU, (256 + 32)/8 = 36 with
    /// 32 EPLB replicas; SGLang's `--ep-size 4` inside TP 8 is 64 experts on each EP rank
    /// of 8/4 = 2 GPUs. Without EP (TP 8), no line.
    #[test]
    fn summary_names_the_experts_per_gpu() {
        let q = "mode=serve&engine=vllm&engine_version=0.10.1&model=deepseek-v3&quant=fp8&gpu=h200&gpus_per_node=8&tp=1&dp=8&ep=8";
        let line = |q: &str| {
            summary(&report(q), Units::Gib)
                .into_iter()
                .find(|l| l.starts_with("Experts:"))
        };
        assert_eq!(
            line(q).as_deref(),
            Some("Experts: 32 of the 256 routed experts per MoE layer on each GPU (EP 8).")
        );
        assert_eq!(
            line(&format!("{q}&redundant_experts=32")).as_deref(),
            Some("Experts: 36 of the 256 routed experts per MoE layer on each GPU (EP 8, with EPLB's 32 redundant replicas).")
        );
        let sg = "mode=serve&engine=sglang&engine_version=0.5.3&model=deepseek-v3&quant=fp8&gpu=h200&gpus_per_node=8&tp=8&ep=4";
        assert_eq!(
            line(sg).as_deref(),
            Some("Experts: 64 of the 256 routed experts per MoE layer on each EP rank of 2 GPUs, each expert split over them (EP 4).")
        );
        let tp8 = "mode=serve&engine=vllm&engine_version=0.10.1&model=deepseek-v3&quant=fp8&gpu=h200&gpus_per_node=8&tp=8";
        assert_eq!(line(tp8), None);
    }

    /// The panel says what llama-server's --fit changed: Llama 2 7B with a 131,072-token
    /// context on an RTX 4090 gets the context the fit leaves room for (37,632 tokens:
    /// `serve::tests_fit`); with fit=off, or under Ollama, no line.
    #[test]
    fn summary_says_what_the_fit_changed() {
        let q = "mode=serve&engine=llamacpp&model=llama-2-7b&context=131072&quant=q4_k_m&gpu=rtx4090&ctx_per=total&engine_version=b8179";
        let line = |q: &str| {
            summary(&report(q), Units::Gib)
                .into_iter()
                .find(|l| l.starts_with("llama-server's --fit"))
        };
        let l = line(q).expect("a fit line");
        assert!(
            l.contains(
                "the context is cut from 131,072 to 37,632 tokens. The figures are for that launch"
            ),
            "{l}"
        );
        assert_eq!(line(&format!("{q}&fit=off")), None);
        let layers = "mode=serve&engine=llamacpp&model=llama-3-70b&quant=q4_k_m&gpu=rtx4090&ctx_per=total&max_len=8192";
        let l = line(layers).expect("a fit line");
        assert!(
            l.contains(
                ": 42 layers (of the repeating layers and the output layer) stay on the GPU"
            ),
            "{l}"
        );
    }

    /// llama.cpp's host memory and file in the panel, as the JSON has them (Qwen2.5 7B
    /// Q4_K_M with one layer on the GPU: most of the file stays in host memory).
    /// An empty max_len names the front end's default it stands for.
    #[test]
    fn default_context_is_named() {
        let line = |q: &str| default_context_line(&settings(q).scenario);
        let q = "mode=serve&engine=llamacpp&model=llama-3-8b&context=131072&gpu=rtx4090";
        let ollama = line(q).unwrap();
        assert!(
            ollama.contains("for 23.99 GiB of GPU memory on the node, 32,768 tokens"),
            "{ollama}"
        );
        let old = line(&format!("{q}&ctx_per=total&engine_version=b7000")).unwrap();
        assert!(old.contains("default -c, 4,096 tokens"), "{old}");
        let new = line(&format!("{q}&ctx_per=total")).unwrap();
        assert!(
            new.contains("-c 0, the model's context, 131,072 tokens"),
            "{new}"
        );
        let ollama_old = line(&format!("{q}&engine_version=ollama-0.13.5")).unwrap();
        assert!(
            ollama_old.contains("Ollama 0.13.5's default num_ctx, 4,096 tokens"),
            "{ollama_old}"
        );
        assert_eq!(line(&format!("{q}&max_len=8192")), None);
        assert_eq!(line("mode=serve&engine=vllm&model=llama-3-8b"), None);
    }

    #[test]
    fn summary_gives_llama_cpp_host_memory() {
        let q = "mode=serve&engine=llamacpp&model=qwen2.5-7b&quant=q4_k_m&max_len=1024&ngl=1&gpu=a100-80";
        let r = report(q);
        let (host, file) = (r.host_bytes.unwrap(), r.file_bytes.unwrap());
        assert!(host > file / 2 && host < file * 2, "{host} {file}");
        let want = format!(
            "In host memory: {} (the file's part the CPU maps and the KV cache of layers left on the CPU); the model file: {}.",
            Units::Gib.format(host),
            Units::Gib.format(file)
        );
        assert!(summary(&r, Units::Gib).contains(&want));
        assert!(!summary(
            &report("mode=serve&engine=vllm&model=llama-3-8b"),
            Units::Gib
        )
        .iter()
        .any(|l| l.starts_with("In host memory")));
    }

    /// The budget line in each engine's terms: SGLang's static share (weights + KV) and what
    /// it holds back; llama.cpp's allocations; vLLM's budget less its profile.
    #[test]
    fn budget_line_in_each_engine_s_terms() {
        let line = |q: &str| summary(&report(q), Units::Gib)[1].clone();
        let sg = report("mode=serve&engine=sglang&model=llama-3-8b&max_len=8192");
        // The static share is the weights and the pool, less what does not fill a token.
        let left = sg.budget_bytes - sg.weights_bytes - sg.kv_cache_bytes;
        assert!(left < sg.kv_bytes_per_token, "{left}");
        let s = line("mode=serve&engine=sglang&model=llama-3-8b&max_len=8192");
        assert!(s.starts_with("SGLang's static share ") && s.contains("held back beside it for activations, CUDA graphs and the request-to-token table"), "{s}");
        assert!(line("mode=serve&engine=llamacpp&model=llama-3-8b")
            .starts_with("llama.cpp's allocations on the device"));
        assert!(line("mode=serve&model=llama-3-8b").starts_with("The engine's budget "));
    }

    /// A mixture under vLLM: each cell tries expert parallelism and keeps the better plan.
    /// In bf16 EP holds the same expert bytes per GPU as TP and a larger fused-MoE cache, so
    /// TP stays; in MXFP4 TP's cut experts are padded to 256 columns (Qwen3-30B-A3B's 768
    /// over TP 2: 384 → 512) and whole experts are not, so EP holds more.
    #[test]
    fn map_sweeps_expert_parallelism_on_a_mixture() {
        let x = settings("mode=serve&engine=vllm&model=qwen3-30b-a3b&max_len=8192");
        let m = fit_map(&x);
        let plan = |y: &Settings| {
            let t = &y.scenario;
            Plan::of(t, &Prepared::of(t), &t.layout())
        };
        // TP 1: one GPU, nothing to spread.
        assert!(m[0].iter().all(|c| c.ep == 1));
        for row in &m[1..] {
            for c in row {
                let mut y = decode(&c.query).0;
                assert_eq!(plan(&y).concurrency, c.concurrency, "{}", c.query);
                // The other choice never holds more.
                let other = if c.ep > 1 { 1 } else { c.tp };
                y.scenario.parallel.ep = count(other);
                let alt = plan(&y);
                assert!(
                    alt.error.is_some() || alt.concurrency <= c.concurrency,
                    "{}: ep={other} gives {}",
                    c.query,
                    alt.concurrency
                );
            }
        }
        let col = |q: Quant| m[1].iter().position(|c| c.quant == q).unwrap();
        let bf16 = &m[1][col(Quant::None)];
        assert_eq!(bf16.ep, 1, "{bf16:?}");
        let mx = &m[1][col(Quant::Mxfp4)];
        assert_eq!(mx.ep, 2, "{mx:?}");
        assert!(mx.query.contains("ep=2") && cell_text(mx).ends_with("× EP"));
        // A dense model: no EP, no MXFP4 column.
        let d = fit_map(&settings(
            "mode=serve&engine=vllm&model=llama-3-8b&max_len=8192",
        ));
        assert!(d
            .iter()
            .flatten()
            .all(|c| c.ep == 1 && !c.query.contains("ep=")));
        assert!(d[0].iter().all(|c| c.quant != Quant::Mxfp4));
    }

    /// llama.cpp on a mixture: llama-quantize's MXFP4_MOE between Q5_K_M and Q4_K_M, its
    /// link the layout of ggml-org's gpt-oss files (11.27 GiB for the 20b, as b6699 logs
    /// "file size = 11.27 GiB"); a dense model has no such column (every matrix would be Q8_0).
    #[test]
    fn map_has_mxfp4_moe_on_a_mixture_under_llama_cpp() {
        let q = "mode=serve&engine=llamacpp&model=gpt-oss-20b&gpu=rtx4090&max_len=8192";
        let m = fit_map(&settings(q));
        let heads: Vec<String> = m[0].iter().map(column_label).collect();
        assert_eq!(
            heads,
            [
                "q8_0",
                "q6_k",
                "q5_k_m",
                "mxfp4 + q8_0",
                "q4_k_m",
                "q3_k_m",
                "q2_k"
            ]
        );
        let c = &m[0][3];
        assert!(
            c.query.contains("quant=mxfp4") && c.query.contains("weight_dtype=q8_0"),
            "{}",
            c.query
        );
        assert!(c.fits, "{c:?}");
        let t = &settings(&c.query).scenario;
        let host = Plan::of(t, &Prepared::of(t), &t.layout()).host.unwrap();
        let gib = host.file as f64 / (1u64 << 30) as f64;
        assert_eq!(format!("{gib:.2}"), "11.27");
        let d = fit_map(&settings(
            "mode=serve&engine=llamacpp&model=llama-3-8b&gpu=rtx4090&max_len=8192",
        ));
        assert!(d[0].iter().all(|c| c.quant != Quant::Mxfp4));
        assert_eq!(d[0].len(), 6);
    }

    /// EPLB in the map: DeepSeek-V3 FP8 on 8 H200s, vLLM 0.10.1, 32 redundant experts.
    /// Without EP vLLM refuses EPLB, so a fitting cell is an EP cell; TP 8 with EP 8 holds
    /// 288/8 = 36 experts per layer on each GPU, four more than without EPLB (58 MoE layers ·
    /// 4 · 3 · 7,168 · 2,048 fp8 bytes and 3 fp32 scales each), so fewer requests.
    #[test]
    fn map_keeps_redundant_experts() {
        let q = "mode=serve&engine=vllm&engine_version=0.10.1&model=deepseek-v3&gpu=h200&gpus_per_node=8&max_len=8192";
        let m = fit_map(&settings(&format!("{q}&redundant_experts=32")));
        let m0 = fit_map(&settings(q));
        let fp8 = m[3].iter().position(|c| c.quant == Quant::Fp8).unwrap();
        let (c, c0) = (&m[3][fp8], &m0[3][fp8]);
        assert!(c.fits && c.ep == 8 && c.redundant == 32, "{c:?}");
        assert!(cell_text(c).ends_with("× EPLB") && c.query.contains("redundant_experts=32"));
        assert!(c0.fits && c.concurrency < c0.concurrency, "{c:?} {c0:?}");
        let plan = |q: &str| {
            let t = &settings(q).scenario;
            Plan::of(t, &Prepared::of(t), &t.layout())
        };
        let extra = plan(&c.query).weights.eval()
            - plan(&c.query.replace("&redundant_experts=32", ""))
                .weights
                .eval();
        assert_eq!(extra, 58 * 4 * (3 * 7168 * 2048 + 3 * 4));
        assert!(m.iter().flatten().all(|c| !c.fits || c.ep > 1));
    }

    #[test]
    fn curve_halves_with_twice_the_context() {
        let x = settings("mode=serve&model=llama-3-8b&max_len=8192");
        let pts = concurrency_curve(&x.scenario);
        assert_eq!(pts.first().unwrap().max_len, 512);
        assert_eq!(pts.last().unwrap().max_len, 16_384);
        for w in pts.windows(2) {
            // blocks / ⌈L/16⌉: exactly half when L doubles (L a multiple of 16).
            assert!((w[0].concurrency / w[1].concurrency - 2.0).abs() < 1e-9);
        }
    }

    /// llama-server on one RTX 4090: Llama 3 70B's cells at TP 1 read the layers the fit
    /// keeps on the GPU where the file does not fit; with fit=off the same cells read "—".
    #[test]
    fn map_says_what_the_fit_chose() {
        let q =
            "mode=serve&engine=llamacpp&model=llama-3-70b&gpu=rtx4090&ctx_per=total&max_len=8192";
        let m = fit_map(&settings(q));
        let q8 = &m[0][0];
        assert!(q8.fits && q8.fit.is_some_and(|f| f.ngl.is_some()), "{q8:?}");
        let f = q8.fit.unwrap();
        assert_eq!(cell_text(q8), format!("{}/81 layers", f.ngl.unwrap()));
        assert_eq!(cell_class(q8), "few");
        let off = fit_map(&settings(&format!("{q}&fit=off")));
        assert_eq!(cell_text(&off[0][0]), "—");
        let ctx =
            "mode=serve&engine=llamacpp&model=llama-2-7b&context=131072&gpu=rtx4090&ctx_per=total";
        let m = fit_map(&settings(ctx));
        assert!(
            cell_text(&m[0][3]).starts_with("1.0× ctx "),
            "{:?}",
            m[0][3]
        );
        // A mixture: the fit moves routed experts to host memory (the q8_0 cell of Qwen3
        // 30B-A3B, 30 GiB, on one 24 GiB card); two GPUs hold it whole.
        let moe =
            "mode=serve&engine=llamacpp&model=qwen3-30b-a3b&gpu=rtx3090&ctx_per=total&max_len=8192";
        let m = fit_map(&settings(moe));
        let c = m[0]
            .iter()
            .find(|c| c.quant == memfit_core::quant::Quant::Q8_0)
            .unwrap();
        let f = c.fit.expect("the fit ran");
        assert_eq!(cell_text(c), format!("{}/48 exp. host", f.cpu_experts));
        assert_eq!(cell_class(c), "few");
        let two = m[1]
            .iter()
            .find(|c| c.quant == memfit_core::quant::Quant::Q8_0)
            .unwrap();
        assert!(two.fits && two.fit.is_none(), "{two:?}");
    }

    #[test]
    fn map_more_tp_and_fewer_bits_fit_more() {
        let x = settings("mode=serve&model=llama-3-70b&max_len=8192");
        let m = fit_map(&x);
        assert_eq!(m.len(), 4);
        // 70B in bf16 does not fit one H100; in w4a16 it does.
        assert!(!m[0][0].fits);
        assert!(m[0][4].fits);
        // Formats in decreasing bytes per weight: w8a8 (8 bits + per-channel scales), fp8
        // (8 + per-matrix), nvfp4 (4.5), w4a16 (4.16).
        for row in &m {
            for w in row.windows(2) {
                assert!(w[1].concurrency >= w[0].concurrency, "{row:?}");
            }
        }
        for (big, small) in m[3].iter().zip(&m[0]) {
            assert!(big.concurrency > small.concurrency);
        }
        assert!(m[1][0].query.contains("tp=2") && m[1][0].query.contains("gpus_per_node=2"));
    }
}
