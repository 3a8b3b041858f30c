//! Ollama's own layer placement (`ctx_per=sequence`, `ngl` unset): how many layers Ollama
//! asks its llama.cpp runner to put on the GPUs (`--n-gpu-layers`), from its estimate of each
//! layer, its compute graph and what it keeps free, before llama.cpp allocates anything.
//!
//! Source: Ollama `llm/server.go` (v0.12.11–v0.13.5: `llamaServer.Load`, `buildLayout`,
//! `assignLayers`, `greedyFit`; `llm/memory.go` `EstimateGPULayers` before, the same
//! reserve), `fs/ggml/ggml.go` `GraphSize`, `ml/device.go` `MinimumMemory` (457 MiB on CUDA),
//! read at the release tags of github.com/ollama/ollama.

use super::device_total;
use super::llamacpp::plan_with;
use super::llamacpp_offload::LayerBytes;
use crate::resolved::Prepared;
use crate::scenario::{ollama_engine, CtxPer, Layout, Scenario};
use crate::serve::{FitOutcome, Fitted, Plan};
use crate::units::MIB;

/// What Ollama keeps free on a CUDA device beside its estimate (`MinimumMemory`), B.
pub(crate) const OLLAMA_MIN_MEMORY: u64 = 457 * MIB;

/// Whether Ollama places the layers: Ollama's convention (`ctx_per=sequence`) on llama.cpp
/// with `ngl` unset (`num_gpu` left to Ollama).
pub(crate) fn applies(s: &Scenario) -> bool {
    s.serving.ctx_per == CtxPer::Sequence && s.serving.ngl.is_none()
}

/// Whether Ollama starts llama-server (v0.30.0 and later, and without a named release: the
/// newest): `llm/llama_server.go` passes `-c num_ctx·parallel -np parallel` and no `-ngl`
/// ("let llama-server auto-detect"), so llama-server's own fit places the layers with the
/// context given ([`llama_server_launch`]). Before, Ollama places them ([`plan`]).
pub(crate) fn runs_llama_server(s: &Scenario) -> bool {
    s.ollama_used()
        .is_none_or(|v| v >= crate::scenario::OLLAMA_LLAMA_SERVER_FROM)
}

/// The llama-server launch Ollama 0.30+ makes of `s`: `-c` the sequences' total
/// (`ctx_per=total`, `max_len` = num_ctx·parallel), `--fit` at its default (on).
pub(crate) fn llama_server_launch(s: &Scenario) -> Scenario {
    let mut t = s.clone();
    let total = s
        .serve_max_len()
        .saturating_mul(s.serving.parallel.get() as u64);
    t.serving.max_len = Some(crate::nonzero::at_least_one(
        total.min(u32::MAX as u64) as u32
    ));
    t.serving.ctx_per = CtxPer::Total;
    t.serving.fit = crate::scenario::LlamaFit::On;
    t
}

/// Ollama's compute-graph estimate, `(partial, full)` offload, B.
///
/// # Formula
/// `e` hidden, `h` heads, `k` KV heads, `d = e/h`, `V` vocabulary, `c` = num_ctx·parallel,
/// `b` = num_batch (512), `K` = the KV cache's bytes, all layers:
/// ```text
/// llama, llama4:  full    = max(4b(1 + 4e + c(1+h)), 4b(e+V))
///                 partial = 4be + max(4b(1 + e + max(c,e)) + e²·9/16 + 4c(bh + dk),
///                                     4b(e+V) + eV·105/128)
///   a mixture:    partial = max(3·G + 4b(2f + k + e + c + dk), 4(cbh + cdk + 1024b + dkb))
///                 (G the first layer's ffn_gate_exps bytes, f the FFN width)
/// qwen2:          full    = max(4b(e+V), 4b(1 + 2e + c + ch))
///                 partial = max(4b(e+V) + eV·105/128, 4(b(1 + 2e + c(1+h)) + e(1+c)))
/// gemma 1–3:      full    = max(4b(e+V), 4b(2 + c + ch + 2e + 2dh))
///                 partial = max(4eb + eV·105/128 + 4Vb, 4b(2e + 1 + 2dh + c + ch) + 32dc + e·dh·9/16)
/// command-r:      full    = max(4b(e+V), 4b(2 + 4e + c(1+h)))
///                 partial = max(4b(e+V) + eV·105/128, 4b(1 + 2e + c(1+h)) + 4ec + e²·9/16)
/// phi2:           full    = max(4b(e+V), 4b(1 + 4e + c + ch))
///                 partial = max(4b(2e+V) + eV·105/128, 4b(2 + 3e + c + ch))
/// stablelm:       full    = 4b(c(1+h) + 3e + 2),  partial = max(4b(V + 2e), full)
/// others:         partial = full = (h/k_min)·K/6
/// ```
/// Ollama has formulas of its own for deepseek2, gpt-oss, chatglm and mllama; memfit gives them
/// the default (deepseek2's reads the GGUF's per-head key and value lengths, which differ between
/// the files converted before and after llama.cpp's MLA cache; gpt-oss runs on Ollama's own
/// engine from its first release, where the graph is measured). The phi2 and stablelm formulas
/// (Phi-1.5, Phi-2, StableLM) are not checked against a log of one.
/// Source: Ollama `fs/ggml/ggml.go` `GraphSize` (v0.13.5), `llm/server.go` (the default).
///
/// # Example
/// Llama 3.3 70B, 4,096 tokens: full 4·512·(1 + 32,768 + 4,096·65) = 612,370,432 B (584.0 MiB,
/// as Ollama logs `memory.graph.full`), partial 1,158,152,192 B (1.1 GiB).
pub(crate) fn graph_size(s: &Scenario, p: &Prepared, c: u64, b: u64, kv: u64) -> (u64, u64) {
    let a = &p.arch;
    // In 128 bits: the keys' limits keep every product below 2^128.
    let [e, h, k, v] = [a.hidden, a.heads, a.kv_heads, a.vocab].map(|x| x.get() as u128);
    let (c, b) = (c as u128, b as u128);
    let d = e / h;
    let id = s.preset().id;
    let head = 4 * b * (e + v) + e * v * 105 / 128;
    let family = |f: &[&str]| f.iter().any(|x| id.starts_with(x));
    let (partial, full) = if family(&["llama-", "mistral-7b", "mistral-small-24b", "mixtral-"]) {
        let full = (4 * b * (1 + 4 * e + c * (1 + h))).max(4 * b * (e + v));
        let partial = if a.experts > 0 {
            let g = LayerBytes::of(s, p).up_gate.first().map_or(0, |x| x.1) as u128;
            let f = a.ffn.get() as u128;
            (3 * g + 4 * b * (2 * f + k + e + c + d * k))
                .max(4 * (c * b * h + c * d * k + b * 1024 + d * k * b))
        } else {
            4 * b * e
                + (4 * b * (1 + e + c.max(e)) + e * e * 9 / 16 + 4 * c * (b * h + d * k)).max(head)
        };
        (partial, full)
    } else if family(&["qwen2.5-", "qwen1.5-"]) {
        let full = (4 * b * (e + v)).max(4 * b * (1 + 2 * e + c + c * h));
        (
            head.max(4 * (b * (1 + 2 * e + c * (1 + h)) + e * (1 + c))),
            full,
        )
    } else if family(&["gemma-"]) {
        let full = (4 * b * (e + v)).max(4 * b * (2 + c + c * h + 2 * e + 2 * d * h));
        let partial = (4 * e * b + e * v * 105 / 128 + 4 * v * b)
            .max(4 * b * (2 * e + 1 + 2 * d * h + c + c * h) + 4 * d * c * 8 + e * d * h * 9 / 16);
        (partial, full)
    } else if family(&["command-r"]) {
        let full = (4 * b * (e + v)).max(4 * b * (2 + 4 * e + c * (1 + h)));
        (
            head.max(4 * b * (1 + 2 * e + c * (1 + h)) + 4 * e * c + e * e * 9 / 16),
            full,
        )
    } else if family(&["phi-2", "phi-1.5"]) {
        let full = (4 * b * (e + v)).max(4 * b * (1 + 4 * e + c + c * h));
        let partial =
            (4 * b * (2 * e + v) + e * v * 105 / 128).max(4 * b * (2 + 3 * e + c + c * h));
        (partial, full)
    } else if family(&["stablelm-"]) {
        let full = 4 * b * (c * (1 + h) + 3 * e + 2);
        ((4 * b * (v + 2 * e)).max(full), full)
    } else {
        let g = h / k * kv as u128 / 6;
        (g, g)
    };
    let sat = |x: u128| x.min(u64::MAX as u128) as u64;
    (sat(partial), sat(if full == 0 { partial } else { full }))
}

/// `base` (every layer on the GPUs) or, where Ollama's estimate of it does not fit, the
/// launch with the layers Ollama puts on the GPUs.
///
/// # Formula
/// ```text
/// L_i   = W_i + K_i                    (layer i's tensors and KV cache)
/// L_out = W_out (+ W_embd, tied)       (the output layer)
/// cap   = F − (L_0 + 457 MiB + max(graph_partial, graph_full))   per GPU (F: free, total − ctx)
///       = F − (457 MiB + C)        on Ollama's own engine ([`crate::scenario::ollama_engine`]: it measures the
///                                   graph, C llama.cpp's compute buffer, and keeps no layer back)
/// all layers:  Σ L_i + L_out ≤ t·cap
/// else n_gpu = the most of the last layers with Σ L_i ≤ t·cap, the output layer on the CPU
/// ```
/// Ollama packs the layers from the last one down (`greedyFit`) and, when not all fit, tries
/// again without the output layer. Over several GPUs it balances the layers; memfit takes the
/// GPUs' sum, as its own split is even. Approximations: each layer's KV cache is llama.cpp's
/// (Ollama's estimate gives windowed layers the whole context except Gemma 3's and gpt-oss's);
/// Ollama's graph formulas are those of the families above, the default for the rest.
///
/// # Example
/// Llama 3.3 70B Q4_0, 4,096 tokens, f16 KV, on a 40 GiB MIG slice (Ollama 0.11.10 logs
/// `layers.offload=80` of 81, `memory.required.full="39.9 GiB"` against
/// `memory.available="[39.3 GiB]"`): 80 layers of about 475 MiB fit under the cap, the output
/// layer (822 MiB of Q6_K) does not.
pub(crate) fn plan(s: &Scenario, p: &Prepared, l: &Layout, base: Plan) -> Plan {
    let t = l.tp.get() as u64;
    let split = LayerBytes::of(s, p);
    let n = split.layers.len() as u64;
    if n == 0 {
        return base;
    }
    let kv_all = base.kv.eval().saturating_mul(t);
    let kv_i = kv_all / n;
    let layer = |i: usize| split.layers[i].saturating_add(kv_i);
    let out = split
        .output()
        .saturating_add(if p.arch.tied { split.embd } else { 0 });
    let c = base.tokens;
    let b = s.serving.max_batched_tokens.map_or(512, |c| c.get() as u64);
    let own = ollama_engine(s.preset().id, s.ollama_used());
    let (partial, full) = match own {
        // Ollama's engine measures the graph it allocates: llama.cpp's compute buffer.
        true => (base.activation.eval(), base.activation.eval()),
        false => graph_size(s, p, c, b, kv_all),
    };
    let ctx = s.cuda_ctx_mib() as u64 * MIB;
    let free = device_total(s).saturating_sub(ctx);
    // The llama.cpp runner also keeps one more layer back.
    let reserve = if own { 0 } else { layer(0) }
        .saturating_add(OLLAMA_MIN_MEMORY)
        .saturating_add(partial.max(full));
    let cap = |reserve: u64| {
        (free.saturating_sub(reserve) as u128 * t as u128).min(u64::MAX as u128) as u64
    };
    let sum: u64 = (0..n as usize).fold(0u64, |a, i| a.saturating_add(layer(i)));
    if sum.saturating_add(out) <= cap(reserve) {
        return base;
    }
    let place = |cap: u64| last_layers(&layer, n as usize, cap);
    let at = |g: u64| {
        let mut with = s.clone();
        with.serving.ngl = Some(g as u32);
        plan_with(&with, p, l, (0, 0))
    };
    let mut g = place(cap(reserve));
    let mut pl = at(g);
    let mut reserve = reserve;
    // Ollama's engine measures the graph of the layout it tries (larger with layers on the
    // CPU) and lays out again until the layers stop falling.
    while own && pl.activation.eval() > partial.max(full) {
        let r = OLLAMA_MIN_MEMORY.saturating_add(pl.activation.eval());
        let g2 = place(cap(r));
        if g2 >= g || r <= reserve {
            break;
        }
        (g, reserve) = (g2, r);
        pl = at(g);
    }
    let fitted = Fitted {
        n_ctx_from: c,
        n_ctx: c,
        ngl: Some(g),
        projected_bytes: sum
            .saturating_add(out)
            .saturating_add(reserve.saturating_mul(t)),
        free_bytes: free.saturating_mul(t),
        reduction_bytes: 0,
        layers: n + 1,
        devices: t,
        cpu_experts: 0,
        outcome: FitOutcome::Ollama,
    };
    pl.fit_message = message(&fitted, own, (partial, full));
    pl.fit = Some(fitted);
    pl
}

/// The most of the last layers whose bytes (`layer(i)`, `i < n`) stay under `cap`: Ollama's
/// `greedyFit` from the last layer down, the output layer left on the CPU.
fn last_layers(layer: &impl Fn(usize) -> u64, n: usize, cap: u64) -> u64 {
    let mut used = 0u64;
    (0..n)
        .rev()
        .take_while(|&i| {
            used = used.saturating_add(layer(i));
            used <= cap
        })
        .count() as u64
}

/// What Ollama's placement says, in its log's terms (`layers.offload`, `memory.available`,
/// `memory.required.full`) and how it reckoned: the runner's estimate or its engine's
/// measurement. `graph` is `(partial, full)`.
fn message(f: &Fitted, own: bool, (partial, full): (u64, u64)) -> String {
    let gib = |x: u64| format!("{:.1} GiB", x as f64 / (1u64 << 30) as f64);
    let how = match own {
        true => format!("Ollama's engine measures each layer's weights and KV cache, the output layer and its compute graph ({}) and keeps 457 MiB back", gib(full)),
        false => format!("its estimate: each layer's weights and KV cache, the output layer, one more layer, 457 MiB and the compute graph, {} partial / {} full", gib(partial), gib(full)),
    };
    format!(
        "Ollama places the layers (num_gpu unset): layers.model={} layers.offload={}, memory.available={} against memory.required.full={} ({how})",
        f.layers,
        f.ngl.unwrap_or(0),
        gib(f.free_bytes),
        gib(f.projected_bytes),
    )
}
