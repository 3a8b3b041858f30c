//! The guided tour: twelve short steps through the ZeRO trade-offs, each with a link
//! that loads its scenario and a number the page then shows. Every number is
//! computed here by the estimator, never typed in: the browser test opens each
//! link and finds the quoted number where the step says it is.

use memfit_core::contract::query::decode;
use memfit_core::estimate::{estimate, Component, Estimate};
use memfit_core::timeline::timeline;
use memfit_core::units::Units;

/// One step of the tour.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// Short title.
    pub title: &'static str,
    /// One or two sentences, with the numbers filled in.
    pub text: String,
    /// The scenario's query string (the link is `?{query}#{panel}`).
    pub query: &'static str,
    /// The `data-testid` of the panel that makes the point.
    pub panel: &'static str,
    /// The number the text quotes, formatted as the page formats it.
    pub quoted: String,
    /// The `data-testid` of the element that shows `quoted` once the link is loaded.
    pub shown_in: &'static str,
}

fn est(q: &str) -> Estimate {
    estimate(&decode(q).0.scenario)
}

/// "about 1,234 ms a step (5,678 tokens/s per GPU)": the step-time model's figure.
fn step(q: &str) -> String {
    let s = decode(q).0.scenario;
    match memfit_core::steptime::step_time(&s, &memfit_core::estimate::Prepared::of(&s)) {
        Some(t) => format!(
            "about {} ms a step ({} tokens/s per GPU)",
            memfit_core::units::group_digits(t.step_s.mul_add(1e3, 0.5) as u64),
            memfit_core::units::group_digits(t.tokens_per_s_per_gpu as u64)
        ),
        None => String::new(),
    }
}

/// Bytes per parameter of the model states at the peak, over Ψ.
fn states(e: &Estimate) -> u64 {
    [
        Component::Weights,
        Component::Gradients,
        Component::MasterWeights,
        Component::OptimizerStates,
    ]
    .iter()
    .map(|c| e.gpu_bytes_of(*c))
    .sum()
}

/// A figure a step quotes, each computed from the scenario of its query.
#[derive(Clone, Copy, Debug)]
enum Fig {
    /// The per-GPU peak.
    Peak(&'static str),
    /// Host RAM per node.
    Cpu(&'static str),
    /// Pinned host RAM per node.
    Pinned(&'static str),
    /// The model states at the peak ([`states`]).
    States(&'static str),
    /// The saved activations at the peak.
    Activations(&'static str),
    /// The KV cache (and a state-space model's state) at the peak.
    Kv(&'static str),
    /// The step-time model's figure ([`step`]).
    Step(&'static str),
    /// The parameter count, digits grouped.
    Params(&'static str),
    /// Where the timeline puts the peak: phase, layer and event.
    PeakAt(&'static str),
    /// The softmax-attention blocks among all: "4 of its 52".
    AttnOf(&'static str),
    /// The prompt's tokens, digits grouped.
    Tokens(&'static str),
}

/// One step as data: its text is a template whose `{}` take `figs` in order.
struct Spec {
    title: &'static str,
    query: &'static str,
    panel: &'static str,
    shown_in: &'static str,
    text: &'static str,
    figs: &'static [Fig],
}

const Z0: &str = "model=llama-2-7b&seq=4096&gpus_per_node=8&zero=0";
const Z1: &str = "model=llama-2-7b&seq=4096&gpus_per_node=8&zero=1";
const Z2: &str = "model=llama-2-7b&seq=4096&gpus_per_node=8&zero=2";
const Z3: &str = "model=llama-2-7b&seq=4096&gpus_per_node=8&zero=3";
const OFFLOAD: &str =
    "model=llama-2-7b&seq=4096&gpus_per_node=8&zero=3&offload_opt=cpu&offload_param=cpu&pin_memory=1";
const LONG: &str = "model=llama-2-7b&seq=32768&gpus_per_node=8&zero=3";
const RECOMPUTE: &str = "model=llama-2-7b&seq=32768&gpus_per_node=8&zero=3&recompute=full";
const CP: &str = "model=llama-2-7b&seq=32768&gpus_per_node=8&zero=3&cp=4";
const ACC20: &str = "model=llama-2-7b&seq=4096&gpus_per_node=8&zero=1&grad_acc_dtype=both";
const ACC18: &str = "model=llama-2-7b&seq=4096&gpus_per_node=8&zero=1&grad_acc_dtype=fp32";
const DS14: &str = "model=llama-2-7b&seq=4096&gpus_per_node=8&zero=2&convention=ds-0.14";
const DS19: &str = "model=llama-2-7b&seq=4096&gpus_per_node=8&zero=2&convention=ds-0.19";
const SEED002: &str = "model=llama-2-7b&seq=4096&gpus_per_node=8&zero=3&convention=seed002";
const MAMBA: &str = "model=mamba2-2.7b&mode=infer&seq=32768&batch=8";
const MAMBA_NAIVE: &str = "model=mamba2-2.7b&mode=infer&seq=32768&batch=8&ssm_kernels=torch";
const PHI2: &str = "model=phi-2&mode=infer&seq=32768&batch=8";
const HYBRID_8K: &str = "model=nemotron-h-8b&mode=infer&seq=8192";
const HYBRID_128K: &str = "model=nemotron-h-8b&mode=infer&seq=131072";
const LLAMA_8K: &str = "model=llama-3-8b&mode=infer&seq=8192";
const LLAMA_128K: &str = "model=llama-3-8b&mode=infer&seq=131072";

/// The tour, in order.
const TOUR: [Spec; 12] = [
    Spec {
        title: "Plain data parallelism: 16 bytes per parameter",
        query: Z0,
        panel: "timeline",
        shown_in: "per-gpu",
        text: "Every rank keeps bf16 weights (2Ψ) and gradients (2Ψ), fp32 master weights (4Ψ) and Adam's two moments (8Ψ): 16 × {} parameters = {} before one activation (seed 001). Llama-2-7B at 4,096 tokens peaks at {} per GPU — no 80 GB GPU holds it.",
        figs: &[Fig::Params(Z0), Fig::States(Z0), Fig::Peak(Z0)],
    },
    Spec {
        title: "ZeRO-1: 4 + 12/N_d",
        query: Z1,
        panel: "zero-compare",
        shown_in: "per-gpu",
        text: "Partition the optimizer states (master weights and moments, 12Ψ) over N_d = 8 ranks: the model states fall to 4Ψ + 12Ψ/8 = {}, the peak to {}. Communication is unchanged: 2Ψ per step, as plain data parallelism; memfit's step-time model puts it at {} against {} for plain data parallelism, whose optimizer step updates every parameter on every rank.",
        figs: &[Fig::States(Z1), Fig::Peak(Z1), Fig::Step(Z1), Fig::Step(Z0)],
    },
    Spec {
        title: "ZeRO-2: 2 + 14/N_d",
        query: Z2,
        panel: "zero-compare",
        shown_in: "per-gpu",
        text: "Also partition the gradients: 2Ψ + 14Ψ/8 = {}, peak {}. Stage 2 reduces each gradient bucket to its owner and frees it; a parameter whose flat slice spans two ranks keeps its whole gradient until both have reduced, so stage 2 can fall back toward stage 1 (seed 001).",
        figs: &[Fig::States(Z2), Fig::Peak(Z2)],
    },
    Spec {
        title: "ZeRO-3: 16/N_d, for 3Ψ of communication",
        query: Z3,
        panel: "timeline",
        shown_in: "per-gpu",
        text: "Partition the weights too: 16Ψ/8 = {} per rank. Each layer is all-gathered before its forward and again before its backward — 3Ψ of traffic per step instead of 2Ψ (seed 004), hidden behind the layers' compute while the links keep up: {}. The timeline marks the peak, {}, at {}.",
        figs: &[Fig::States(Z3), Fig::Step(Z3), Fig::Peak(Z3), Fig::PeakAt(Z3)],
    },
    Spec {
        title: "Offload to CPU: GPU memory for host RAM and PCIe",
        query: OFFLOAD,
        panel: "verdict",
        shown_in: "per-cpu",
        text: "ZeRO-Offload moves the fp32 master weights and the moments (and, with offload_param, the weights) to host RAM: the GPU peak drops to {}, but each node needs {} of host RAM, {} of it pinned, and every step crosses PCIe twice and runs Adam on the CPU: {}.",
        figs: &[Fig::Peak(OFFLOAD), Fig::Cpu(OFFLOAD), Fig::Pinned(OFFLOAD), Fig::Step(OFFLOAD)],
    },
    Spec {
        title: "Long sequences: activations take over",
        query: LONG,
        panel: "chart",
        shown_in: "per-gpu",
        text: "At 32,768 tokens the saved activations alone are {} of the {} peak: ZeRO does not touch them, since every rank holds its own micro-batch's.",
        figs: &[Fig::Activations(LONG), Fig::Peak(LONG)],
    },
    Spec {
        title: "Recomputation trades compute for activations",
        query: RECOMPUTE,
        panel: "timeline",
        shown_in: "per-gpu",
        text: "Full recomputation keeps only each layer's input and recomputes the rest in backward (about a third more compute): activations {} instead of {}, peak {}. Flash attention already avoids the s² scores; selective recomputation drops only them.",
        figs: &[Fig::Activations(RECOMPUTE), Fig::Activations(LONG), Fig::Peak(RECOMPUTE)],
    },
    Spec {
        title: "Context parallelism splits the sequence",
        query: CP,
        panel: "chart",
        shown_in: "per-gpu",
        text: "With CP = 4 each rank holds 8,192 of the 32,768 tokens' activations and passes K/V chunks around a ring: peak {} without recomputing anything, at the price of K/V traffic in every attention layer.",
        figs: &[Fig::Peak(CP)],
    },
    Spec {
        title: "The seeds disagree: 16, 18 or 20 bytes per parameter",
        query: ACC20,
        panel: "ledger",
        shown_in: "per-gpu",
        text: "Seed 001 counts 2 + 2 + 12 = 16 B/param; Megatron accumulates gradients in fp32 only (2 + 4 + 12 = 18); seed 003 keeps bf16 gradients and an fp32 accumulation buffer (20). Same model, same ZeRO-1: {} (18) or {} (20) instead of {} — memfit names the convention (grad_acc_dtype) rather than picking one silently.",
        figs: &[Fig::Peak(ACC18), Fig::Peak(ACC20), Fig::Peak(Z1)],
    },
    Spec {
        title: "Tools and seeds disagree: DeepSpeed's versions, seed 002's slip",
        query: DS14,
        panel: "ledger",
        shown_in: "per-gpu",
        text: "DeepSpeed's ZeRO-2 estimator counted 4P + 16P/G up to v0.14.2 ({}) and 2P + 18P/G from v0.14.3 ({}), model states only. Seed 002's 405B example put s where its formula has s² and printed 151× too little; evaluated as written, its constants give {} here against {} for ZeRO-3 under memfit's terms (convention=seed002).",
        figs: &[Fig::Peak(DS14), Fig::Peak(DS19), Fig::Peak(SEED002), Fig::Peak(Z3)],
    },
    Spec {
        title: "State-space models: memory that does not grow with the context",
        query: MAMBA,
        panel: "chart",
        shown_in: "per-gpu",
        text: "Mamba-2 keeps a fixed state per sequence instead of a KV cache: serving 8 sequences of 32,768 tokens, Mamba-2 2.7B holds {} of state and peaks at {} per GPU, where Phi-2, a transformer of the same size ({} parameters), needs {} of KV cache and {} in all. The scan still costs memory while it reads the prompt, and how much depends on the kernels: transformers ≤ 5.17's torch path without them (ssm_kernels=torch; ≥ 5.18 is torch-einsum) would ask for {}.",
        figs: &[Fig::Kv(MAMBA), Fig::Peak(MAMBA), Fig::Params(PHI2), Fig::Kv(PHI2), Fig::Peak(PHI2), Fig::Peak(MAMBA_NAIVE)],
    },
    Spec {
        title: "Hybrids: attention in a few blocks, a KV cache that grows slowly",
        query: HYBRID_128K,
        panel: "chart",
        shown_in: "per-gpu",
        text: "Nemotron-H 8B ({} parameters) attends in {} blocks; the others are Mamba-2 and MLP blocks. One sequence's KV cache and state grow from {} at {} tokens to {} at {}, its peak from {} to {}. Llama 3 8B, a transformer of its size ({} parameters), attends in {} blocks: {} to {} of KV cache, peak {} to {}. Both peaks also grow by the prefill's one-layer transient (the whole prompt through one block at once); the KV cache is what the hybrid saves.",
        figs: &[Fig::Params(HYBRID_8K), Fig::AttnOf(HYBRID_8K), Fig::Kv(HYBRID_8K), Fig::Tokens(HYBRID_8K), Fig::Kv(HYBRID_128K), Fig::Tokens(HYBRID_128K), Fig::Peak(HYBRID_8K), Fig::Peak(HYBRID_128K), Fig::Params(LLAMA_8K), Fig::AttnOf(LLAMA_8K), Fig::Kv(LLAMA_8K), Fig::Kv(LLAMA_128K), Fig::Peak(LLAMA_8K), Fig::Peak(LLAMA_128K)],
    },
];

/// Where the timeline of `q` puts its peak: "backward, layer 31: what happens there".
fn peak_at(q: &str) -> String {
    let t = timeline(&decode(q).0.scenario);
    t.as_ref()
        .and_then(|t| t.events.get(t.peak_event))
        .map(|e| match e.layer {
            Some(l) => format!("{}, layer {l}: {}", e.phase.as_str(), e.what),
            None => format!("{}: {}", e.phase.as_str(), e.what),
        })
        .unwrap_or_default()
}

/// A figure's text, numbers in `units`.
fn figure(fig: Fig, units: Units) -> String {
    match fig {
        Fig::Peak(q) => units.format(est(q).per_gpu_bytes),
        Fig::Cpu(q) => units.format(est(q).per_cpu_bytes),
        Fig::Pinned(q) => units.format(est(q).pinned_cpu_bytes),
        Fig::States(q) => units.format(states(&est(q))),
        Fig::Activations(q) => units.format(est(q).gpu_bytes_of(Component::Activations)),
        Fig::Kv(q) => units.format(est(q).gpu_bytes_of(Component::KvCache)),
        Fig::Step(q) => step(q),
        Fig::Params(q) => memfit_core::units::group_digits(est(q).model.params),
        Fig::PeakAt(q) => peak_at(q),
        Fig::Tokens(q) => {
            memfit_core::units::group_digits(decode(q).0.scenario.workload.seq.get() as u64)
        }
        Fig::AttnOf(q) => {
            let a = decode(q).0.scenario.arch();
            format!("{} of its {}", a.attention_layers(), a.layers)
        }
    }
}

/// `template` with each `{}` replaced by the next of `values`.
fn fill(template: &str, values: &[String]) -> String {
    let mut parts = template.split("{}");
    let mut out = parts.next().unwrap_or_default().to_string();
    for (part, v) in parts.zip(
        values
            .iter()
            .map(String::as_str)
            .chain(std::iter::repeat("")),
    ) {
        out.push_str(v);
        out.push_str(part);
    }
    out
}

/// The steps, numbers in `units`.
pub fn steps(units: Units) -> Vec<Step> {
    TOUR.iter()
        .map(|s| {
            let quoted = match s.shown_in {
                "per-cpu" => figure(Fig::Cpu(s.query), units),
                _ => figure(Fig::Peak(s.query), units),
            };
            let values: Vec<String> = s.figs.iter().map(|f| figure(*f, units)).collect();
            Step {
                title: s.title,
                text: fill(s.text, &values),
                query: s.query,
                panel: s.panel,
                quoted,
                shown_in: s.shown_in,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use memfit_core::contract::query::decode;

    /// Every template has as many `{}` as figures, so no figure is dropped or left blank.
    #[test]
    fn every_template_takes_its_figures() {
        for s in &TOUR {
            assert_eq!(s.text.matches("{}").count(), s.figs.len(), "{}", s.title);
        }
        assert_eq!(fill("a {} b {}", &["1".into(), "2".into()]), "a 1 b 2");
    }

    #[test]
    fn zero_steps_say_their_step_time() {
        let st = steps(Units::Gib);
        assert!(st[1].text.contains(" ms a step (") && st[1].text.contains("tokens/s per GPU"));
        assert!(st[3].text.contains(" ms a step ("));
        assert!(st[4].text.contains("runs Adam on the CPU: about "));
        // Offload is the slow way to save memory.
        let ms = |t: &str, after: &str| -> u64 {
            let i = t.find(after).unwrap() + after.len();
            t[i..]
                .split(' ')
                .next()
                .unwrap()
                .replace(',', "")
                .parse()
                .unwrap()
        };
        assert!(
            ms(&st[4].text, "CPU: about ") > ms(&st[3].text, "while the links keep up: about ")
        );
    }

    #[test]
    fn every_step_quotes_what_its_page_shows() {
        let s = steps(Units::Gib);
        assert!((6..=12).contains(&s.len()));
        for st in &s {
            let (sc, w) = decode(st.query);
            let sc = sc.scenario;
            assert!(w.is_empty(), "{}: {w:?}", st.query);
            let e = estimate(&sc);
            assert!(e.warnings.is_empty(), "{}: {:?}", st.query, e.warnings);
            let want = match st.shown_in {
                "per-gpu" => Units::Gib.format(e.per_gpu_bytes),
                "per-cpu" => Units::Gib.format(e.per_cpu_bytes),
                other => panic!("unknown {other}"),
            };
            assert_eq!(st.quoted, want, "{}", st.title);
            assert!(st.text.contains(&st.quoted), "{}: {}", st.title, st.text);
        }
        // Seed 001's bytes per parameter, by hand: 16Ψ, 4Ψ + 12Ψ/8, 2Ψ + 14Ψ/8, 16Ψ/8.
        let psi = 6_738_415_616u64;
        assert!(s[0].text.contains(&Units::Gib.format(16 * psi)));
        assert!(s[1]
            .text
            .contains(&Units::Gib.format(4 * psi + 12 * psi / 8)));
        assert!(s[2]
            .text
            .contains(&Units::Gib.format(2 * psi + 14 * psi / 8)));
        assert!(s[3].text.contains(&Units::Gib.format(16 * psi / 8)));
        assert!(s[3].text.contains("backward, layer 31"));
    }

    /// The hybrid step: Nemotron-H's config.json puts attention in 4 of its 52 blocks
    /// (`hybrid_override_pattern`), Llama 3 8B's in all 32; the hybrid's KV cache grows an
    /// eighth as fast (`2·4·8·128·2` against `2·32·8·128·2` bytes a token), its peak less.
    #[test]
    fn hybrid_step_compares_by_the_estimator() {
        let st = &steps(Units::Gib)[11];
        assert!(st.text.contains("4 of its 52") && st.text.contains("32 of its 32"));
        assert!(st.text.contains("8,192 tokens") && st.text.contains("131,072"));
        let kv = |q: &str| est(q).gpu_bytes_of(Component::KvCache);
        let grow = |a: &str, b: &str| kv(b) - kv(a);
        assert_eq!(
            grow(HYBRID_8K, HYBRID_128K),
            2 * 4 * 8 * 128 * 2 * (131_072 - 8192)
        );
        assert_eq!(grow(LLAMA_8K, LLAMA_128K), 8 * grow(HYBRID_8K, HYBRID_128K));
        let peak = |q: &str| est(q).per_gpu_bytes;
        assert!(peak(HYBRID_128K) - peak(HYBRID_8K) < peak(LLAMA_128K) - peak(LLAMA_8K));
    }
}
