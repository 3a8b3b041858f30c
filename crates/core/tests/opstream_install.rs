//! The op-level templates given at run time (`opstream::install`, as the page does once it has
//! fetched `op_templates.txt`) estimate every run as the compiled-in ones do (the `templates`
//! feature, on by default: the CLI's). Run both ways: `cargo test -p memfit-core --test
//! opstream_install` (compiled in, then installed: the same estimates) and with
//! `--no-default-features` (none at first: the flat share, then installed: the replay).
//! One test here installs them: the installed templates are the process's from then on.

use memfit_core::contract::query::decode;
use memfit_core::contract::report::estimate_with;
use memfit_core::estimate::{Component, Estimate};
use memfit_core::opstream::{available, candidate, data, install, may_read};

/// Runs the templates hold (the first is the page's single-GPU PyTorch link), then runs they
/// do not (the default link; PyTorch on 8 GPUs under ZeRO-3).
const HELD: [&str; 5] = [
    "model=llama-3.2-3b&framework=pytorch&gpus_per_node=1&batch=4&seq=4096&attn=sdpa&precision=bf16-pure&gpu=h200",
    "framework=pytorch&attn=sdpa&precision=bf16-pure&recompute=full&model=llama-2-7b&seq=2048",
    "framework=pytorch&model=gpt2&optimizer=sgd&precision=fp32&attn=eager",
    "framework=pytorch&model=llama-2-7b&attn=eager&precision=bf16&optimizer=sgd&seq=4096",
    "framework=pytorch&attn=sdpa&precision=bf16&finetune=lora&model=llama-3.2-1b&seq=1024",
];
const NOT_HELD: [&str; 2] = [
    "model=llama-2-7b&zero=3&gpus_per_node=8",
    "model=llama-3.2-3b&framework=pytorch&attn=sdpa&zero=3&gpus_per_node=8",
];

fn estimate(q: &str) -> Estimate {
    let (settings, warnings) = decode(q);
    estimate_with(&settings.scenario, &warnings)
}

/// Every query's estimate, in a thread of its own: the replay's caches are per thread, so
/// nothing computed from other data is reused.
fn estimates() -> Vec<Estimate> {
    std::thread::spawn(|| HELD.iter().chain(&NOT_HELD).map(|q| estimate(q)).collect())
        .join()
        .expect("estimates")
}

/// The source of the fragmentation item: the replay's or the flat share's.
fn replayed(e: &Estimate) -> bool {
    e.items
        .iter()
        .find(|i| i.component == Component::Fragmentation)
        .is_some_and(|i| i.source.contains("replayed"))
}

#[test]
fn installed_templates_estimate_as_the_compiled_in_ones() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/data/op_templates.txt");
    let text = std::fs::read_to_string(path).expect("data/op_templates.txt");
    // which runs read the templates is known before they are there
    for q in HELD {
        let s = decode(q).0.scenario;
        assert!(candidate(&s).is_some() && may_read(&s), "{q}");
    }
    let s = decode(NOT_HELD[0]).0.scenario;
    assert!(candidate(&s).is_none() && !may_read(&s));
    // the fewest-GPU search of the 8-GPU PyTorch run tries one GPU without ZeRO: it may read them
    let s = decode(NOT_HELD[1]).0.scenario;
    assert!(candidate(&s).is_none() && may_read(&s));

    let before = estimates();
    assert_eq!(available(), cfg!(feature = "templates"));
    // text that is not the templates installs nothing
    assert!(install("").is_err() && install("not templates").is_err());
    assert_eq!(available(), cfg!(feature = "templates"));

    install(&text).expect("the templates install");
    assert!(available());
    assert!(data().is_some_and(|d| d.keys().count() >= 246));
    let after = estimates();
    assert!(after[..HELD.len()].iter().all(replayed));
    assert!(after[HELD.len()..].iter().all(|e| !replayed(e)));
    if cfg!(feature = "templates") {
        // the same data, read from the file at run time: every figure and text the same
        for ((a, b), q) in before.iter().zip(&after).zip(HELD.iter().chain(&NOT_HELD)) {
            assert!(
                a == b,
                "{q}: installed {} B, compiled in {} B",
                b.per_gpu_bytes,
                a.per_gpu_bytes
            );
        }
    } else {
        // without them: the flat share, which the installed templates replace, and only it
        for ((a, b), q) in before.iter().zip(&after).zip(HELD.iter().chain(&NOT_HELD)) {
            assert!(!replayed(a), "{q}");
            assert_eq!(a.allocated_bytes, b.allocated_bytes, "{q}");
            let others = |e: &Estimate| -> u64 {
                e.items
                    .iter()
                    .filter(|i| i.component != Component::Fragmentation)
                    .map(|i| i.bytes)
                    .sum()
            };
            assert_eq!(others(a), others(b), "{q}");
        }
    }
    // a second install changes nothing
    assert!(install(&text).is_ok());
}

/// A run and its replay travel between the page's wasm modules as lines of integers
/// (`Run::to_line`, `Replayed::to_line`): read back, the same.
#[test]
fn a_run_and_its_replay_as_lines() {
    use memfit_core::opstream::{Replayed, Run};
    for q in HELD {
        let r = candidate(&decode(q).0.scenario).expect(q);
        assert_eq!(Run::from_line(&r.to_line()).as_ref(), Some(&r), "{q}");
    }
    let x = Replayed {
        max_reserved: u64::MAX,
        max_allocated: 1 << 40,
        retries: 2,
        oom: true,
    };
    assert_eq!(Replayed::from_line(&x.to_line()), Some(x));
    // A line of an older module (no retries, no bound) reads as none.
    let old = Replayed::from_line("10 7").unwrap();
    assert_eq!((old.max_reserved, old.retries, old.oom), (10, 0, false));
    let r = Run::from_line("k;1,2,3,4,5,6,7,8,9,10;3;0").unwrap();
    assert_eq!(r.cap, 0);
    for bad in [
        "",
        "k;1,2;3;0",
        "k;1,2,3,4,5,6,7,8,9,10;3;9",
        "k;1,2,3,4,5,6,7,8,9,x;3;0",
        "k;1,2,3,4,5,6,7,8,9,10;3;0;-1",
    ] {
        assert!(Run::from_line(bad).is_none(), "{bad}");
    }
}
