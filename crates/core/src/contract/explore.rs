//! The explorer's JSON (`memfit --explore`) and the minimum-GPU answer: the sweep of
//! `core::explore` with a query string per layout, so that every entry reproduces in
//! the calculator.

use super::query::encode;
use super::settings::{Settings, View};
use crate::explore::{explore, min_gpus, Candidate, MinGpus};
use crate::scenario::{at_least_one, Solve};
use serde_json::{json, Value};

/// One layout as JSON: its degrees and settings, bytes, communication, and the query
/// string that loads it.
pub fn layout_json(base: &Settings, l: &Candidate) -> Value {
    // The layout's own query reproduces one estimate: the base's view without its solve.
    let settings = Settings {
        scenario: l.scenario(&base.scenario),
        view: View {
            solve: Solve::None,
            ..base.view
        },
    };
    json!({
        "query": encode(&settings),
        "describe": l.describe_on(&base.scenario),
        "dp": l.dp, "tp": l.tp, "pp": l.pp, "cp": l.cp,
        "zero": l.zero.number(),
        "fsdp": l.fsdp.as_str(),
        "offload_opt": l.offload_opt.as_str(),
        "recompute": l.recompute.as_str(),
        "sp": l.sp,
        "batch": l.batch,
        "microbatches": l.microbatches,
        "per_gpu_bytes": l.per_gpu_bytes,
        "headroom_bytes": l.headroom_bytes,
        "fits": l.fits(),
        "comm_bytes_per_step": l.comm.total(),
        "comm": l.comm,
        "tokens_per_step": l.tokens_per_step,
        "compute_overhead": l.compute_overhead,
        "step_s": l.step_s,
        "tokens_per_s_per_gpu": l.tokens_per_s_per_gpu,
        "mfu": l.mfu,
    })
}

/// `{"gpus", "evaluated", "fitting", "best", "layouts": [...]}` for the scenario's
/// cluster: the fitting layouts, best first, at most `limit` (`None`: all).
pub fn explore_report(s: &Settings, limit: Option<usize>) -> Value {
    let sweep = explore(&s.scenario, limit);
    let mut v = json!({
        "gpus": sweep.gpus,
        "evaluated": sweep.evaluated,
        "fitting": sweep.fitting,
        "best": "the highest predicted training tokens per second per GPU (the step-time model; inference and serving have none), then no optimizer offload, then least wasted compute (pipeline bubble (p−1)/(v·m) + recomputation), then least communication per trained token (bytes one GPU sends per optimizer step ÷ tokens the cluster trains in it), then most headroom",
        "layouts": sweep.layouts.iter().map(|l| layout_json(s, l)).collect::<Vec<_>>(),
    });
    super::nulls::null_out_of_range(&mut v);
    v
}

/// `{"what": "min_gpus", "value": G, ...}`: the fewest GPUs on which a layout fits.
pub fn min_gpus_json(s: &Settings) -> Value {
    min_gpus_value(s, &min_gpus(&s.scenario))
}

/// The JSON of a computed minimum-GPU answer.
pub fn min_gpus_value(x: &Settings, m: &MinGpus) -> Value {
    let s = &x.scenario;
    let mut cluster = x.clone();
    cluster.scenario.cluster.gpus_per_node = at_least_one(m.gpus_per_node);
    cluster.scenario.cluster.nodes = at_least_one(m.nodes);
    let mut v = json!({
        "what": "min_gpus",
        "value": m.value,
        "gpus_per_node": m.gpus_per_node,
        "nodes": m.nodes,
        "previous_candidate": m.previous,
        "layout": m.layout.map(|l| layout_json(&cluster, &l)),
        "message": match m.value {
            Some(g) => format!("fits on {g} × {} at the earliest{}{}", s.gpu().name,
                m.layout.map(|l| format!(" ({})", l.describe_on(&cluster.scenario))).unwrap_or_default(),
                m.layout.and_then(|l| {
                    let mut t = cluster.scenario.clone();
                    l.apply(&mut t);
                    host_note(&t)
                }).unwrap_or_default()),
            None => match no_gpu_count_helps(s) {
                Some(why) => why,
                None => format!("no layout fits on up to {} nodes of {} × {}",
                    m.nodes, m.gpus_per_node, s.gpu().name),
            },
        },
    });
    super::nulls::null_out_of_range(&mut v);
    v
}

/// A llama.cpp launch that starts with part of the model in host memory, as llama-server's
/// `--fit` placed it (the fewest-GPU search counts it as fitting, since it starts): ", with
/// 44 of 81 layers on the GPU, the rest in host memory" or ", with the experts of 24 of 36
/// layers in host memory"; `None` for every other launch.
pub fn host_note(s: &crate::scenario::Scenario) -> Option<String> {
    if s.workload.mode != crate::scenario::Mode::Serve
        || s.serving.engine != crate::scenario::Engine::Llamacpp
    {
        return None;
    }
    let p = crate::estimate::Prepared::of(s);
    let f = crate::serve::Plan::of(s, &p, &s.layout()).fit?;
    match (f.ngl, f.cpu_experts) {
        (Some(g), _) => Some(format!(
            ", with {g} of {} layers on the GPU{}, the rest in host memory",
            f.layers,
            if f.devices > 1 { "s" } else { "" }
        )),
        (None, e) if e > 0 => Some(format!(
            ", with the experts of {e} of {} layers in host memory",
            f.layers - 1
        )),
        _ => None,
    }
}

/// In serving, the engine's refusal of a setting that no GPU count or layout changes
/// ([`crate::serve::settings_refusal`]), as the fewest-GPU search's answer: "no GPU count
/// helps: <engine> refuses these settings on any layout — <its words>".
pub fn no_gpu_count_helps(s: &crate::scenario::Scenario) -> Option<String> {
    if s.workload.mode != crate::scenario::Mode::Serve {
        return None;
    }
    crate::serve::settings_refusal(s).map(|e| {
        format!(
            "no GPU count helps: {} refuses these settings on any layout — {e}",
            s.serving.engine.label()
        )
    })
}
