//! The fewest-GPU line next to the verdict ("Fewest GPUs: fits on 16 × H100 at the earliest
//! (…)."), written where the search runs (its worker's module, `memfit-search`) with the
//! scenario its "load it" link loads: the first module shows the text and loads the
//! scenario, so it links neither the answer's reader nor the layouts' descriptions (issue 39).

use memfit_core::contract::query::encode;
use memfit_core::explore::MinGpus;
use memfit_core::scenario::{at_least_one, Scenario};

/// The line for the search's answer `m` on `s` and the scenario its link loads (`s` on the
/// fewest GPUs with the layout found), as the worker sends them: the text, a newline, that
/// scenario's query string (empty: nothing to load). The text is the CLI's `message`
/// (`--explore … solve=min_gpus`) where a layout fits; the page searches up to `max_nodes`.
pub fn fewest_answer(m: &MinGpus, s: &Scenario) -> String {
    // The scenario on the cluster found (its DP degree, so a serving engine's EP, follow).
    let mut on = s.clone();
    on.cluster.gpus_per_node = at_least_one(m.gpus_per_node);
    on.cluster.nodes = at_least_one(m.nodes);
    let text = match m.value {
        Some(g) => format!(
            "Fewest GPUs: fits on {g} × {} at the earliest{}{}.",
            s.gpu().name,
            m.layout
                .map(|l| format!(" ({})", l.describe_on(&on)))
                .unwrap_or_default(),
            m.layout
                .and_then(|l| {
                    let mut t = on.clone();
                    l.apply(&mut t);
                    memfit_core::contract::explore::host_note(&t)
                })
                .unwrap_or_default()
        ),
        None => match memfit_core::contract::explore::no_gpu_count_helps(s) {
            Some(why) => format!("Fewest GPUs: {why}."),
            None => format!(
                "Fewest GPUs: no layout fits on up to {} nodes × {} GPUs (the CLI searches up to 1,024 nodes).",
                m.nodes, m.gpus_per_node
            ),
        },
    };
    let load = m.layout.map(|l| {
        let mut t = on.clone();
        l.apply(&mut t);
        encode(&t.into())
    });
    format!("{text}\n{}", load.unwrap_or_default())
}

/// [`fewest_answer`]'s line read back: the text and the query of the scenario to load, not
/// decoded (the page decodes it only for a click or a non-default view: an answer comes
/// with every keystroke); `None`: not such a line, e.g. the empty answer of a failed worker.
pub fn read_fewest_answer(line: &str) -> Option<(String, Option<String>)> {
    let (text, query) = line.split_once('\n')?;
    if !text.starts_with("Fewest GPUs: ") {
        return None;
    }
    let load = (!query.is_empty()).then(|| query.to_string());
    Some((text.to_string(), load))
}

#[cfg(test)]
mod tests {
    use super::*;
    use memfit_core::contract::explore::min_gpus_json;
    use memfit_core::contract::query::decode;
    use memfit_core::explore::{sweep_key, MinGpusJob};

    /// The worker is sent the link's sweep key (`sweep_key`), not its whole scenario: its line
    /// is the CLI's message for the whole link, and its link loads the whole link on the
    /// fewest GPUs with the layout found, for links of every mode.
    #[test]
    fn the_worker_line_is_the_clis_for_several_links() {
        for q in [
            "model=llama-2-7b&zero=3&gpus_per_node=8",
            "model=gpt2&batch=4&tp=2&gpus_per_node=4",
            "model=llama-3.2-3b&framework=pytorch&gpus_per_node=1&batch=4&seq=4096&attn=sdpa&precision=bf16-pure&gpu=h200",
            "model=llama-2-13b&mode=infer&seq=2048&gen=256&gpus_per_node=8",
            "model=llama-3-8b&mode=serve&gpus_per_node=8",
            // Expert parallelism is named ("DP 8, EP 8"; "DP 8 (EP 8)"): the scenario's `ep`.
            "mode=serve&engine=vllm&engine_version=0.10.1&model=deepseek-v3&quant=fp8&gpu=h200&gpus_per_node=8&tp=1&dp=8&ep=8",
            "model=mixtral-8x7b&gpus_per_node=8&ep=8&zero=1",
            // llama-server's --fit: one GPU, with layers in host memory (named).
            "mode=serve&engine=llamacpp&model=llama-3-70b&quant=q4_k_m&gpu=rtx3090&ctx_per=total&max_len=8192&gpus_per_node=8",
        ] {
            let x = decode(q).0;
            let key = sweep_key(&x.scenario);
            let mut job = MinGpusJob::new(&key, 128);
            while !job.step(20_000) {}
            let m = job.finish();
            let (text, load) = read_fewest_answer(&fewest_answer(&m, &key)).expect(q);
            let cli = min_gpus_json(&x);
            assert!(cli["value"].is_u64(), "{q}: {cli}");
            assert_eq!(text, format!("Fewest GPUs: {}.", cli["message"].as_str().unwrap()), "{q}");
            assert_eq!(q.contains("ep=8"), text.contains("EP 8"), "{q}: {text}");
            assert_eq!(
                q.contains("llamacpp"),
                text.contains("layers on the GPU, the rest in host memory"),
                "{q}: {text}"
            );
            let mut want = x.scenario.clone();
            want.cluster.gpus_per_node = at_least_one(m.gpus_per_node);
            want.cluster.nodes = at_least_one(m.nodes);
            m.layout.expect(q).apply(&mut want);
            assert_eq!(load.map(|l| decode(&l).0.scenario), Some(want), "{q}");
        }
        assert_eq!(read_fewest_answer(""), None);
    }

    /// A setting the engine refuses on any layout (llama.cpp's fp8 cache) is named, not
    /// answered with "no layout fits on up to … nodes"; a model too large for the nodes
    /// searched keeps that answer.
    #[test]
    fn a_refused_setting_is_named_instead_of_the_node_count() {
        let answer = |q: &str, nodes: u32| {
            let key = sweep_key(&decode(q).0.scenario);
            let mut job = MinGpusJob::new(&key, nodes);
            while !job.step(20_000) {}
            read_fewest_answer(&fewest_answer(&job.finish(), &key)).expect(q)
        };
        let (text, load) = answer(
            "mode=serve&engine=llamacpp&model=llama-3-8b&kv_dtype=fp8",
            2,
        );
        assert!(
            text.starts_with("Fewest GPUs: no GPU count helps: llama.cpp refuses these settings on any layout — error while handling argument \"--cache-type-k\": Unsupported cache type: fp8"),
            "{text}"
        );
        assert_eq!(load, None);
        let (big, _) = answer(
            "mode=serve&model=llama-3.1-405b&gpu=rtx4090&gpus_per_node=1",
            2,
        );
        assert!(
            big.starts_with("Fewest GPUs: no layout fits on up to 2 nodes"),
            "{big}"
        );
    }
}
