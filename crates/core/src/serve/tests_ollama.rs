//! Ollama's releases (`engine=llamacpp&engine_version=ollama-0.x.y`): how the release is
//! read and written back, and what each release does with what a launch leaves unset
//! (`scenario::ollama`). The release boundaries were read in Ollama's git history at each
//! tag; the logged runs they are checked on are in `tests/serve_llamacpp.rs`.

use super::tests::plan;
use super::*;
use crate::contract::query::{decode, encode};
use crate::units::MIB;

fn warnings(q: &str) -> Vec<(String, String)> {
    decode(q)
        .1
        .into_iter()
        .map(|w| (w.key, w.message))
        .collect()
}

/// The plan's notes: the engine's checks and the Ollama warnings.
fn problems(q: &str) -> Vec<(String, String)> {
    let (_, w) = decode(q);
    assert!(w.is_empty(), "{q}: {w:?}");
    let pl = plan(q);
    pl.notes()
        .map(|(k, m)| (k.to_string(), m.to_string()))
        .collect()
}

/// Builds are written `bN`, Ollama's releases `ollama-0.x.y` (a bare `0.13.5` under
/// llama.cpp is Ollama's: llama.cpp has no dotted releases); anything else is refused with
/// a message, and an Ollama release under another engine is named.
#[test]
fn releases_read_and_written_back() {
    let link =
        |v: &str| encode(&decode(&format!("mode=serve&engine=llamacpp&engine_version={v}")).0);
    assert!(link("b7437").ends_with("engine_version=b7437"));
    assert!(link("7437").ends_with("engine_version=b7437"));
    assert!(link("ollama-0.13.5").ends_with("engine_version=ollama-0.13.5"));
    assert!(link("0.13.5").ends_with("engine_version=ollama-0.13.5"));
    assert!(link("v0.6.7").ends_with("engine_version=ollama-0.6.7"));
    for bad in [
        "b0",
        "1.2.3",
        "ollama-1.0.0",
        "ollama",
        "ollama-b7437",
        "ollama-7437",
    ] {
        let w = warnings(&format!("mode=serve&engine=llamacpp&engine_version={bad}"));
        assert_eq!(w.len(), 1, "{bad}: {w:?}");
        assert_eq!(w[0].0, "engine_version");
    }
    let w = warnings("mode=serve&engine=vllm&engine_version=ollama-0.13.5");
    assert!(w[0].1.contains("with engine=llamacpp"), "{w:?}");
    // Another engine clears the release (vLLM's 0.19.0 is not Ollama's 0.19.0); the same
    // engine keeps it.
    let (mut x, _) = decode("mode=serve&engine=vllm&engine_version=0.19.0");
    crate::contract::query::set_key(&mut x, "engine", "vllm").unwrap();
    assert_eq!(x.scenario.serving.version, Some(Version(0, 19, 0, 0)));
    crate::contract::query::set_key(&mut x, "engine", "llamacpp").unwrap();
    assert_eq!(x.scenario.serving.version, None);
    // The plan names the release as the link does.
    let p = plan("mode=serve&engine=llamacpp&model=llama-3-8b&engine_version=ollama-0.13.5");
    assert_eq!(p.release(), "ollama-0.13.5");
    assert_eq!(
        plan("mode=serve&engine=llamacpp&model=llama-3-8b&engine_version=b5000").release(),
        "b5000"
    );
}

/// The llama.cpp each release vendors decides the build's rules: before b8133 the output
/// layer stays on the CPU with `-ngl` below the layer count (every release before 0.30),
/// from b8133 it goes first (0.30.0 runs b9452).
#[test]
fn vendored_builds() {
    let s = |v: &str| {
        decode(&format!("mode=serve&engine=llamacpp&engine_version={v}"))
            .0
            .scenario
    };
    assert_eq!(s("ollama-0.11.10").llamacpp_build(), Version(1, 0, 0, 0));
    assert_eq!(s("ollama-0.12.4").llamacpp_build(), Version(6646, 0, 0, 0));
    assert_eq!(s("ollama-0.13.5").llamacpp_build(), Version(7437, 0, 0, 0));
    assert_eq!(s("ollama-0.24.0").llamacpp_build(), Version(7437, 0, 0, 0));
    assert_eq!(s("ollama-0.30.0").llamacpp_build(), Version(9452, 0, 0, 0));
    assert_eq!(s("b8000").llamacpp_build(), Version(8000, 0, 0, 0));
    let q = "mode=serve&engine=llamacpp&model=llama-3-8b&ngl=20";
    let out = |v: &str| plan(&format!("{q}&engine_version={v}")).weights.eval();
    // 20 layers + the output layer on the GPU (0.30) against 20 layers alone (0.24).
    assert!(out("ollama-0.30.0") > out("ollama-0.24.0"));
    assert_eq!(out("ollama-0.24.0"), out("b8000"));
    assert_eq!(out("ollama-0.30.0"), out("b8133"));
}

/// The default context (`max_len` empty) by release: 2,048 before 0.6.7, 4,096 to 0.15.4
/// (at most the model's context from 0.9.3), then by the node's GPU memory.
#[test]
fn default_context_by_release() {
    let ctx = |v: &str, extra: &str| {
        let (x, _) = decode(&format!(
            "mode=serve&engine=llamacpp&model=llama-3-8b&context=131072&gpu=h100-80&engine_version={v}{extra}"
        ));
        x.scenario.serve_max_len()
    };
    assert_eq!(ctx("ollama-0.6.6", ""), 2048);
    assert_eq!(ctx("ollama-0.6.7", ""), 4096);
    assert_eq!(
        ctx("ollama-0.9.2", "&context=2048"),
        4096,
        "no cap before 0.9.3"
    );
    assert_eq!(ctx("ollama-0.9.3", "&context=2048"), 2048);
    assert_eq!(ctx("ollama-0.15.4", ""), 4096);
    assert_eq!(
        ctx("ollama-0.15.5", ""),
        131_072,
        "262,144 on 79 GiB, at most the model's"
    );
    assert_eq!(ctx("ollama-0.15.5", "&gpu=l4"), 4096);
    assert_eq!(ctx("ollama-0.13.5", "&max_len=9000"), 9000);
}

/// Flash attention with `OLLAMA_FLASH_ATTENTION` unset: off before 0.11.8; on for the
/// models Ollama lists from the release that listed them (gpt-oss 0.11.8, qwen3 0.12.4,
/// gemma3 0.12.6); for the others from 0.13.4; never for gemma2 or MLA.
#[test]
fn flash_attention_by_release() {
    let fa = |model: &str, v: &str| {
        let (x, _) = decode(&format!(
            "mode=serve&engine=llamacpp&model={model}&engine_version={v}"
        ));
        let s = &x.scenario;
        s.llamacpp_flash(&Prepared::of(s).arch)
    };
    assert!(!fa("gpt-oss-20b", "ollama-0.11.7"));
    assert!(fa("gpt-oss-20b", "ollama-0.11.8"));
    assert!(!fa("qwen3-8b", "ollama-0.12.3"));
    assert!(fa("qwen3-8b", "ollama-0.12.4"));
    assert!(!fa("gemma-3-4b", "ollama-0.12.5"));
    assert!(fa("gemma-3-4b", "ollama-0.12.6"));
    assert!(!fa("llama-3-8b", "ollama-0.13.3"));
    assert!(fa("llama-3-8b", "ollama-0.13.4"));
    assert!(!fa("gemma-2-9b", "ollama-0.30.0"));
    assert!(!fa("deepseek-v3", "ollama-0.30.0"));
    // Ollama's own engine keeps its list's answer (llama4 and qwen25vl are not on it) until
    // 0.30.0 runs every GGUF model through llama-server (`auto`).
    assert!(!fa("llama-4-scout", "ollama-0.13.5"));
    assert!(!fa("qwen2.5-vl-7b", "ollama-0.24.0"));
    assert!(fa("llama-4-scout", "ollama-0.30.0"));
    // lfm2 runs on the llama.cpp runner (auto) until 0.14.3, then on the engine, listed.
    assert!(fa("lfm2-1.2b", "ollama-0.14.2"));
    assert!(fa("lfm2-1.2b", "ollama-0.14.3"));
    // …and a quantized cache there falls back in that engine's words.
    let w = problems(
        "mode=serve&engine=llamacpp&model=llama-4-scout&kv_dtype=q8_0&engine_version=ollama-0.13.5",
    );
    assert!(
        w.iter().any(|(k, m)| k == "kv_dtype"
            && m.contains("quantized kv cache requested but flash attention disabled")),
        "{w:?}"
    );
    // Without flash attention the compute buffer holds the f32 scores: larger.
    let act = |v: &str| {
        plan(&format!(
            "mode=serve&engine=llamacpp&model=llama-3-8b&max_len=8192&engine_version={v}"
        ))
        .activation
        .eval()
    };
    assert!(act("ollama-0.13.3") > act("ollama-0.13.4"));
    assert_eq!(act("ollama-0.13.4"), act("b8179"));
}

/// The cache type: Ollama before 0.30 runs f16 where it does not take the type asked for
/// (named, and the f16 cache counted); from 0.30 llama-server's checks apply.
#[test]
fn kv_cache_type_by_release() {
    let q = "mode=serve&engine=llamacpp&model=llama-3-8b&max_len=8192";
    let kv = |extra: &str| plan(&format!("{q}&{extra}")).kv.eval();
    let f16 = kv("engine_version=ollama-0.13.3");
    let named = |extra: &str| {
        problems(&format!("{q}&{extra}"))
            .into_iter()
            .find(|(k, _)| k == "kv_dtype")
            .map(|(_, m)| m)
    };
    // 0.13.3: flash attention off for Llama → f16, named in Ollama's words.
    let m = named("engine_version=ollama-0.13.3&kv_dtype=q8_0").unwrap();
    assert!(
        m.contains("quantized kv cache requested but flash attention disabled"),
        "{m}"
    );
    assert_eq!(kv("engine_version=ollama-0.13.3&kv_dtype=q8_0"), f16);
    // With flash attention on, q8_0 holds: 34 B per 32 values against 64.
    assert_eq!(
        kv("engine_version=ollama-0.13.3&kv_dtype=q8_0&flash_attn=on") * 32,
        f16 * 17
    );
    assert_eq!(
        named("engine_version=ollama-0.13.3&kv_dtype=q8_0&flash_attn=on"),
        None
    );
    // 0.13.4–0.24: the llama.cpp runner's `auto` is not enough.
    let m = named("engine_version=ollama-0.13.5&kv_dtype=q4_0").unwrap();
    assert!(m.contains("OLLAMA_FLASH_ATTENTION must be enabled"), "{m}");
    assert_eq!(
        named("engine_version=ollama-0.13.5&kv_dtype=q4_0&flash_attn=on"),
        None
    );
    // A type outside Ollama's three, and a release without the setting.
    assert!(
        named("engine_version=ollama-0.13.5&kv_dtype=q5_0&flash_attn=on")
            .unwrap()
            .contains("f16, q8_0 and q4_0")
    );
    assert!(
        named("engine_version=ollama-0.4.7&kv_dtype=q8_0&flash_attn=on")
            .unwrap()
            .contains("no OLLAMA_KV_CACHE_TYPE")
    );
    assert_eq!(
        plan(&format!("{q}&engine_version=ollama-0.4.7&kv_dtype=fp8")).error,
        None
    );
    // 0.30+: passed on; llama.cpp refuses a quantized V cache without flash attention.
    let e = plan(&format!(
        "{q}&engine_version=ollama-0.30.0&kv_dtype=q8_0&flash_attn=off"
    ))
    .error
    .unwrap();
    assert!(
        e.contains("passes OLLAMA_KV_CACHE_TYPE on to llama-server"),
        "{e}"
    );
    assert_eq!(
        named("engine_version=ollama-0.30.0&kv_dtype=q8_0&flash_attn=off"),
        None
    );
}

/// The sequences served with `OLLAMA_NUM_PARALLEL` unset (4 from 0.2.0, 2 from 0.6.7, 1
/// from 0.10.0), `ctx_per=total` under an Ollama release, and releases outside the range.
#[test]
fn other_release_warnings() {
    let q = "mode=serve&engine=llamacpp&model=llama-3-8b";
    let keys = |extra: &str| -> Vec<String> {
        problems(&format!("{q}&{extra}"))
            .into_iter()
            .map(|(k, _)| k)
            .collect()
    };
    assert_eq!(keys("engine_version=ollama-0.1.48"), Vec::<String>::new());
    assert_eq!(keys("engine_version=ollama-0.2.0"), ["parallel"]);
    assert!(problems(&format!("{q}&engine_version=ollama-0.6.7"))[0]
        .1
        .contains("serves 2 sequences"));
    assert_eq!(
        keys("engine_version=ollama-0.6.7&parallel=2"),
        Vec::<String>::new()
    );
    assert_eq!(keys("engine_version=ollama-0.10.0"), Vec::<String>::new());
    assert_eq!(
        keys("engine_version=ollama-0.13.5&ctx_per=total"),
        ["ctx_per"]
    );
    assert_eq!(
        keys("engine_version=b7437&ctx_per=total"),
        Vec::<String>::new()
    );
    let m = problems(&format!("{q}&engine_version=ollama-0.40.0"));
    assert_eq!(m[0].0, "engine_version");
    assert!(
        m[0].1.contains("memfit models Ollama 0.1.0 to 0.33.x"),
        "{}",
        m[0].1
    );
}

/// Ollama's compute-graph estimate against the figures its logs print: Llama 3.3 70B at 4,096
/// tokens (`memory.graph.full="584.0 MiB"`, partial "1.1 GiB", v0.11.10) and Qwen2.5 7B at
/// 1,024 tokens × 256 and 2,048 × 512 (152.0 / 578.4 MiB and 304.0 / 730.4 MiB, v0.3.14),
/// each written out from `GraphSize`'s formula.
#[test]
fn ollama_graph_estimate() {
    use super::engines::ollama_layout::graph_size;
    let g = |q: &str, c: u64, b: u64| {
        let s = decode(q).0.scenario;
        graph_size(&s, &Prepared::of(&s), c, b, 0)
    };
    let llama = "mode=serve&engine=llamacpp&model=llama-3-70b&quant=q4_0";
    // full: 4·512·(1 + 4·8192 + 4096·65); partial: 4·512·8192 + 4·512·136,448 + 8192·128,256·105/128.
    assert_eq!(
        g(llama, 4096, 512),
        (
            4 * 512 * 8192 + 4 * 512 * (8192 + 128_256) + 8192 * 128_256 * 105 / 128,
            4 * 512 * (1 + 4 * 8192 + 4096 * 65)
        )
    );
    assert_eq!(g(llama, 4096, 512).1 / MIB, 584);
    let qwen = "mode=serve&engine=llamacpp&model=qwen2.5-7b&quant=q4_k_m";
    let head = |b: u64| 4 * b * (3584 + 152_064) + 3584 * 152_064 * 105 / 128;
    assert_eq!(g(qwen, 1024, 256), (head(256), 4 * 256 * (3584 + 152_064)));
    assert_eq!(g(qwen, 2048, 512), (head(512), 4 * 512 * (3584 + 152_064)));
    let mib = |x: u64| format!("{:.1}", x as f64 / MIB as f64);
    assert_eq!(
        [g(qwen, 1024, 256), g(qwen, 2048, 512)].map(|(p, f)| (mib(p), mib(f))),
        [
            ("578.4".to_string(), "152.0".to_string()),
            ("730.4".to_string(), "304.0".to_string())
        ]
    );
    // phi2 (Phi-2: e 2,560, h 32, V 51,200), 2,048 tokens: full max(4·512·53,760 = 110,100,480,
    // 4·512·(1 + 10,240 + 2,048 + 65,536) = 159,385,600); partial max(4·512·56,320 +
    // 2,560·51,200·105/128 = 115,343,360 + 107,520,000, 4·512·(2 + 7,680 + 2,048 + 65,536)).
    let phi = "mode=serve&engine=llamacpp&model=phi-2&quant=q4_k_m";
    assert_eq!(g(phi, 2048, 512), (222_863_360, 159_385_600));
    // stablelm (StableLM 2 1.6B: e 2,048, h 32, V 100,352), 4,096 tokens: full
    // 4·512·(4,096·33 + 6,144 + 2) = 289,411,072, above the vocabulary graph 4·512·104,448.
    let stablelm = "mode=serve&engine=llamacpp&model=stablelm-2-1.6b&quant=q4_k_m";
    assert_eq!(g(stablelm, 4096, 512), (289_411_072, 289_411_072));
}

/// Which runner loads a model, by release (`OllamaEngineRequired` at each tag), and what
/// it changes: Qwen3-30B-A3B Q8_0 (31 GiB) on an RTX 4090 at 8,192 tokens. On the llama.cpp
/// runner (v0.11.10) Ollama's estimate keeps one more layer back and a 1.0 GiB graph from
/// its formula: 33 of 49 layers; on its own engine (v0.13.5) it measures the graph
/// (llama.cpp's compute buffer) and keeps no layer back: 35.
#[test]
fn ollama_engine_by_release() {
    use crate::scenario::ollama_engine;
    let v = |m: u16, p: u16| Some(Version(0, m, p, 0));
    for (id, at, own) in [
        ("qwen3-8b", v(11, 10), false),
        ("qwen3-8b", v(12, 0), true),
        ("qwen3-30b-a3b", v(12, 1), false),
        ("qwen3-30b-a3b", v(12, 2), true),
        ("llama-3-8b", v(13, 5), false),
        ("gemma-3-4b", v(6, 0), true),
        ("gemma-3-4b", v(30, 0), false),
        ("deepseek-v3", v(12, 11), false),
        ("deepseek-v3", v(13, 0), true),
        ("deepseek-v2-lite", v(13, 5), false),
        ("nemotron-h-8b", v(17, 1), true),
        ("gemma-3-4b", None, false),
    ] {
        assert_eq!(ollama_engine(id, at), own, "{id} {at:?}");
    }
    let q = "mode=serve&engine=llamacpp&model=qwen3-30b-a3b&quant=q8_0&gpu=rtx4090&max_len=8192";
    let fit = |r: &str| plan(&format!("{q}&engine_version={r}")).fit.unwrap();
    let (runner, own) = (fit("ollama-0.11.10"), fit("ollama-0.13.5"));
    assert_eq!((runner.ngl, own.ngl, own.layers), (Some(33), Some(35), 49));
    assert!(plan(&format!("{q}&engine_version=ollama-0.13.5"))
        .fit_message
        .contains("Ollama's engine measures"));
}

/// llama.cpp b9460 and Ollama 0.30.1 on reserve one output's logits per sequence, so a
/// layer's peak sets the compute buffer. By hand, Qwen2.5 32B Q4_K_M (V = 152,064, h =
/// 5,120, f = 27,648), n_ub 512, n_ctx 4,096, flash attention, one sequence:
/// - b9459: 4·512·(152,064 + 5,120) = 321,912,832 B (the logits of 512 tokens);
/// - b9460: 6·512·4,096 + 4·512·(5,120 + 3·27,648) = 192,937,984 B (184.00 MiB);
/// - Ollama 0.30.10 (b9672) at ngl 48 (the output layer and 47 of 64 layers on the GPU): the CPU
///   layers' Q4_K up matrix
///   (27,648·5,120/256·144 = 79,626,240 B) copied in beside 4·512·(2·5,120 + 2·27,648):
///   12,582,912 + 134,217,728 + 79,626,240 = 226,426,880 B (215.94 MiB; the log: 225.96).
///
/// Four sequences on b9460 reserve 4 rows, still under the layer's peak.
#[test]
fn logits_reserve_from_b9460() {
    let q = "mode=serve&engine=llamacpp&model=qwen2.5-32b&quant=q4_k_m&max_len=4096&gpu=a100-80&flash_attn=on";
    let compute = |extra: &str| plan(&format!("{q}&{extra}")).activation.eval();
    assert_eq!(compute("engine_version=b9459"), 321_912_832);
    assert_eq!(compute("engine_version=ollama-0.30.0"), 321_912_832);
    assert_eq!(compute("engine_version=b9460"), 192_937_984);
    assert_eq!(
        compute("engine_version=b9460&parallel=4&ctx_per=total"),
        192_937_984
    );
    assert_eq!(compute("engine_version=ollama-0.30.10&ngl=48"), 226_426_880);
    // Before b9460 the 512 rows of logits still set it: the CPU layers' peak is smaller.
    assert_eq!(compute("engine_version=b9459&ngl=48"), 321_912_832);
}
