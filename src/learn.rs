//! The guided tour: nine short steps through the ZeRO trade-offs, each with a link
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

/// The steps, numbers in `units`.
pub fn steps(units: Units) -> Vec<Step> {
    let f = |b: u64| units.format(b);
    let q = |extra: &'static str| -> &'static str { extra };
    let mut out = Vec::with_capacity(9);
    let mut push = |title, query: &'static str, panel, shown_in, quoted: String, text: String| {
        out.push(Step {
            title,
            text,
            query,
            panel,
            quoted,
            shown_in,
        })
    };

    let q0 = q("model=llama-2-7b&seq=4096&gpus_per_node=8&zero=0");
    let e0 = est(q0);
    let psi = e0.model.params;
    push(
        "Plain data parallelism: 16 bytes per parameter",
        q0,
        "timeline",
        "per-gpu",
        f(e0.per_gpu_bytes),
        format!(
            "Every rank keeps bf16 weights (2Ψ) and gradients (2Ψ), fp32 master weights (4Ψ) and Adam's two moments (8Ψ): 16 × {} parameters = {} before one activation (seed 001). Llama-2-7B at 4,096 tokens peaks at {} per GPU — no 80 GB GPU holds it.",
            memfit_core::units::group_digits(psi),
            f(states(&e0)),
            f(e0.per_gpu_bytes)
        ),
    );
    let q1 = q("model=llama-2-7b&seq=4096&gpus_per_node=8&zero=1");
    let e1 = est(q1);
    push(
        "ZeRO-1: 4 + 12/N_d",
        q1,
        "zero-compare",
        "per-gpu",
        f(e1.per_gpu_bytes),
        format!(
            "Partition the optimizer states (master weights and moments, 12Ψ) over N_d = 8 ranks: the model states fall to 4Ψ + 12Ψ/8 = {}, the peak to {}. Communication is unchanged: 2Ψ per step, as plain data parallelism; memfit's step-time model puts it at {} against {} for plain data parallelism, whose optimizer step updates every parameter on every rank.",
            f(states(&e1)),
            f(e1.per_gpu_bytes),
            step(q1),
            step(q0)
        ),
    );
    let q2 = q("model=llama-2-7b&seq=4096&gpus_per_node=8&zero=2");
    let e2 = est(q2);
    push(
        "ZeRO-2: 2 + 14/N_d",
        q2,
        "zero-compare",
        "per-gpu",
        f(e2.per_gpu_bytes),
        format!(
            "Also partition the gradients: 2Ψ + 14Ψ/8 = {}, peak {}. Stage 2 reduces each gradient bucket to its owner and frees it; a parameter whose flat slice spans two ranks keeps its whole gradient until both have reduced, so stage 2 can fall back toward stage 1 (seed 001).",
            f(states(&e2)),
            f(e2.per_gpu_bytes)
        ),
    );
    let q3 = q("model=llama-2-7b&seq=4096&gpus_per_node=8&zero=3");
    let e3 = est(q3);
    let t3 = timeline(&decode(q3).0.scenario);
    let where3 = t3
        .as_ref()
        .and_then(|t| t.events.get(t.peak_event))
        .map(|e| match e.layer {
            Some(l) => format!("{}, layer {l}: {}", e.phase.as_str(), e.what),
            None => format!("{}: {}", e.phase.as_str(), e.what),
        })
        .unwrap_or_default();
    push(
        "ZeRO-3: 16/N_d, for 3Ψ of communication",
        q3,
        "timeline",
        "per-gpu",
        f(e3.per_gpu_bytes),
        format!(
            "Partition the weights too: 16Ψ/8 = {} per rank. Each layer is all-gathered before its forward and again before its backward — 3Ψ of traffic per step instead of 2Ψ (seed 004), hidden behind the layers' compute while the links keep up: {}. The timeline marks the peak, {}, at {where3}.",
            f(states(&e3)),
            step(q3),
            f(e3.per_gpu_bytes)
        ),
    );
    let q4 = q("model=llama-2-7b&seq=4096&gpus_per_node=8&zero=3&offload_opt=cpu&offload_param=cpu&pin_memory=1");
    let e4 = est(q4);
    push(
        "Offload to CPU: GPU memory for host RAM and PCIe",
        q4,
        "verdict",
        "per-cpu",
        f(e4.per_cpu_bytes),
        format!(
            "ZeRO-Offload moves the fp32 master weights and the moments (and, with offload_param, the weights) to host RAM: the GPU peak drops to {}, but each node needs {} of host RAM, {} of it pinned, and every step crosses PCIe twice and runs Adam on the CPU: {}.",
            f(e4.per_gpu_bytes),
            f(e4.per_cpu_bytes),
            f(e4.pinned_cpu_bytes),
            step(q4)
        ),
    );
    let q5 = q("model=llama-2-7b&seq=32768&gpus_per_node=8&zero=3");
    let e5 = est(q5);
    push(
        "Long sequences: activations take over",
        q5,
        "chart",
        "per-gpu",
        f(e5.per_gpu_bytes),
        format!(
            "At 32,768 tokens the saved activations alone are {} of the {} peak: ZeRO does not touch them, since every rank holds its own micro-batch's.",
            f(e5.gpu_bytes_of(Component::Activations)),
            f(e5.per_gpu_bytes)
        ),
    );
    let q6 = q("model=llama-2-7b&seq=32768&gpus_per_node=8&zero=3&recompute=full");
    let e6 = est(q6);
    push(
        "Recomputation trades compute for activations",
        q6,
        "timeline",
        "per-gpu",
        f(e6.per_gpu_bytes),
        format!(
            "Full recomputation keeps only each layer's input and recomputes the rest in backward (about a third more compute): activations {} instead of {}, peak {}. Flash attention already avoids the s² scores; selective recomputation drops only them.",
            f(e6.gpu_bytes_of(Component::Activations)),
            f(e5.gpu_bytes_of(Component::Activations)),
            f(e6.per_gpu_bytes)
        ),
    );
    let q7 = q("model=llama-2-7b&seq=32768&gpus_per_node=8&zero=3&cp=4");
    let e7 = est(q7);
    push(
        "Context parallelism splits the sequence",
        q7,
        "chart",
        "per-gpu",
        f(e7.per_gpu_bytes),
        format!(
            "With CP = 4 each rank holds 8,192 of the 32,768 tokens' activations and passes K/V chunks around a ring: peak {} without recomputing anything, at the price of K/V traffic in every attention layer.",
            f(e7.per_gpu_bytes)
        ),
    );
    let q8 = q("model=llama-2-7b&seq=4096&gpus_per_node=8&zero=1&grad_acc_dtype=both");
    let e8 = est(q8);
    let e8b = est("model=llama-2-7b&seq=4096&gpus_per_node=8&zero=1&grad_acc_dtype=fp32");
    push(
        "The seeds disagree: 16, 18 or 20 bytes per parameter",
        q8,
        "ledger",
        "per-gpu",
        f(e8.per_gpu_bytes),
        format!(
            "Seed 001 counts 2 + 2 + 12 = 16 B/param; Megatron accumulates gradients in fp32 only (2 + 4 + 12 = 18); seed 003 keeps bf16 gradients and an fp32 accumulation buffer (20). Same model, same ZeRO-1: {} (18) or {} (20) instead of {} — memfit names the convention (grad_acc_dtype) rather than picking one silently.",
            f(e8b.per_gpu_bytes),
            f(e8.per_gpu_bytes),
            f(e1.per_gpu_bytes)
        ),
    );
    let q9 = q("model=llama-2-7b&seq=4096&gpus_per_node=8&zero=2&convention=ds-0.14");
    let e9 = est(q9);
    let e9b = est("model=llama-2-7b&seq=4096&gpus_per_node=8&zero=2&convention=ds-0.19");
    let e10 = est("model=llama-2-7b&seq=4096&gpus_per_node=8&zero=3&convention=seed002");
    push(
        "Tools and seeds disagree: DeepSpeed's versions, seed 002's slip",
        q9,
        "ledger",
        "per-gpu",
        f(e9.per_gpu_bytes),
        format!(
            "DeepSpeed's ZeRO-2 estimator counted 4P + 16P/G up to v0.14.2 ({}) and 2P + 18P/G from v0.14.3 ({}), model states only. Seed 002's 405B example put s where its formula has s² and printed 151× too little; evaluated as written, its constants give {} here against {} for ZeRO-3 under memfit's terms (convention=seed002).",
            f(e9.per_gpu_bytes),
            f(e9b.per_gpu_bytes),
            f(e10.per_gpu_bytes),
            f(e3.per_gpu_bytes)
        ),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use memfit_core::contract::query::decode;

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
        assert!((6..=10).contains(&s.len()));
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
}
