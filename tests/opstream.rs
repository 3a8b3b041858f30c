//! memfit's op-level allocation stream (`memfit_core::opstream`) against the streams
//! `tools/trace_alloc.py` recorded for measured runs, and its replay against the runs'
//! measured `max_memory_reserved`.

use memfit_core::allocator::{parse_stream, replay, replay_dense, StreamEvent};
use memfit_core::opstream::{stream, template, Dims, OptEvents};

/// Frees point at their allocation's position; runs of consecutive frees are a set (the
/// allocator's state after them does not depend on their order).
fn canonical(events: &[StreamEvent]) -> Vec<(i64, i64)> {
    let mut pos = std::collections::HashMap::new();
    let (mut out, mut run) = (vec![], vec![]);
    for &(d, id) in events {
        if d > 0 {
            run.sort();
            out.append(&mut run);
            pos.insert(id, pos.len() as i64);
            out.push((d, -1));
        } else if d < 0 {
            run.push((d, pos[&id]));
        }
    }
    run.sort();
    out.append(&mut run);
    out
}

/// Rebuilds a run's stream from its template and demands the stream `tools/trace_alloc.py`
/// recorded for that run (committed in `tests/data/cuda_h200/streams/`) event for event.
fn rebuilt_is_traced(id: &str, key: &str, d: Dims, layers: u32, opt: OptEvents) {
    let t = template(key).unwrap_or_else(|| panic!("no template {key}"));
    let (res, ev) = stream(&t, &d, layers, opt, 3).unwrap();
    let text = std::fs::read_to_string(format!("tests/data/cuda_h200/streams/{id}.json")).unwrap();
    let (res2, ev2) = parse_stream(&text).unwrap();
    let (a, b) = (canonical(&ev), canonical(&ev2));
    let k = a.iter().zip(&b).position(|(x, y)| x != y);
    assert_eq!(
        k,
        None,
        "{id}: first difference at {k:?} of {} / {}",
        a.len(),
        b.len()
    );
    assert_eq!(a.len(), b.len(), "{id}");
    assert_eq!(res.iter().sum::<u64>(), res2.iter().sum::<u64>(), "{id}");
    // and so the replay gives the traced stream's figures
    let (r, r2) = (replay(&res, &ev), replay(&res2, &ev2));
    let rd = replay_dense(&res, &ev);
    assert_eq!(
        (rd.max_reserved, rd.max_allocated),
        (r.max_reserved, r.max_allocated)
    );
    assert_eq!(
        (r.max_reserved, r.max_allocated),
        (r2.max_reserved, r2.max_allocated),
        "{id}"
    );
}

#[test]
fn the_traced_runs_rebuilt_event_for_event() {
    // C06: Llama 3.2 3B (h 3,072, f 8,192, V 128,256, 24 heads over 8 KV heads, d 128, 28
    // layers), pure bf16, b 4 × 4,096, SDPA, AdamW foreach.
    let d = Dims {
        b: 4,
        s: 4096,
        h: 3072,
        f: 8192,
        v: 128_256,
        kv: 8,
        g: 3,
        d: 128,
        p: 1,
        r: 1,
    };
    rebuilt_is_traced(
        "C06",
        "llama|tied|gqa|bf16_pure|sdpa|0",
        d,
        28,
        OptEvents::AdamForeach,
    );
    // C03: GPT-2 medium (h 1,024 = 16 heads × 64, 24 layers, 1,024 positions), bf16 autocast,
    // checkpointing, b 8 × 1,024, AdamW foreach.
    let d = Dims {
        b: 8,
        s: 1024,
        h: 1024,
        f: 4096,
        v: 50_257,
        kv: 16,
        g: 1,
        d: 64,
        p: 1024,
        r: 1,
    };
    rebuilt_is_traced(
        "C03",
        "gpt2|tied|mha|amp_bf16|sdpa|1",
        d,
        24,
        OptEvents::AdamForeach,
    );
    // C22: GPT-2 124M (h 768 = 12 × 64, 12 layers), fp32, b 16 × 1,024, SGD with momentum.
    let d = Dims {
        b: 16,
        s: 1024,
        h: 768,
        f: 3072,
        v: 50_257,
        kv: 12,
        g: 1,
        d: 64,
        p: 1024,
        r: 1,
    };
    rebuilt_is_traced(
        "C22",
        "gpt2|tied|mha|fp32|sdpa|0",
        d,
        12,
        OptEvents::Momentum,
    );
}

/// Every template in the data parses and rebuilds a stream at other dimensions and layer
/// counts: every free ends a live allocation, once, and what stays allocated at the end is
/// what the loop keeps (the optimizer's states, nothing of the activations).
#[test]
fn every_template_rebuilds_a_consistent_stream() {
    use memfit_core::opstream::data;
    let d = data().expect("the templates' data");
    let keys: Vec<&String> = d.keys().collect();
    assert!(keys.len() >= 246, "{} templates", keys.len());
    for key in keys {
        let t = template(key).unwrap_or_else(|| panic!("{key}: does not parse"));
        for layers in [2u32, 7, 13] {
            let dims = Dims {
                b: 2,
                s: 640,
                h: 896,
                f: 2432,
                v: 1000,
                kv: 2,
                g: if key.contains("|mha|") { 1 } else { 7 },
                d: 64,
                p: 1024,
                r: 8,
            };
            for opt in [OptEvents::None, OptEvents::AdamForeach] {
                let (_, ev) = match stream(&t, &dims, layers, opt, 3) {
                    Ok(x) => x,
                    // alternating layer types whose last layer is of the other type than the
                    // traced model's: refused (the flat share is used), not rebuilt wrong
                    // (or whose neighbours' types the trace never had side by side)
                    Err(e)
                        if t.types.is_some()
                            && (e.contains("has no segment") || e.contains("does not hold")) =>
                    {
                        continue
                    }
                    Err(e) => panic!("{key} at {layers} layers: {e}"),
                };
                let mut live = std::collections::HashMap::new();
                for &(n, id) in &ev {
                    if n > 0 {
                        assert!(
                            live.insert(id, n).is_none(),
                            "{key}: id {id} allocated twice"
                        );
                    } else {
                        assert_eq!(live.remove(&id), Some(-n), "{key}: free of {id} not live");
                    }
                }
                // SGD keeps nothing; AdamW its two states per parameter
                let kept: i64 = live.values().sum();
                if opt == OptEvents::None {
                    assert_eq!(kept, 0, "{key} at {layers} layers keeps {kept} B");
                }
            }
        }
    }
}

/// The class read off an imported shape is its `transformers` family, for every model of the
/// measured runs (their `config.json`s).
#[test]
fn classes_of_the_measured_models() {
    use memfit_core::opstream::class;
    use memfit_evidence::cuda::{held_out, runs, settings, train_keys, TRAIN, TRAIN_D};
    let mut seen = std::collections::BTreeSet::new();
    for text in [TRAIN, TRAIN_D] {
        for r in runs(text).iter().filter(|r| r.get("error").is_none()) {
            let id = r["id"].as_str().unwrap();
            if held_out(id) {
                continue;
            }
            let mt = r["hf_config"]["model_type"].as_str().unwrap();
            let s = settings(r, &train_keys(r)).unwrap();
            let c = class(&s.scenario.arch());
            let want = match mt {
                "olmoe" | "qwen2_moe" | "gemma3_text" | "gemma2" | "gpt2" | "llama" | "mistral"
                | "phi3" | "qwen2" | "qwen3" => Some(mt),
                other => panic!("{id}: model_type {other} not expected"),
            };
            assert_eq!(
                c.as_deref().map(|c| c.split('|').next().unwrap()),
                want,
                "{id} ({mt}): {c:?}"
            );
            seen.insert(format!("{mt} → {c:?}"));
        }
    }
    eprintln!("{seen:#?}");
}
