//! Input panels, one component each: lists of keys (each control is generated from its
//! key's declaration by [`KeyField`]).

use super::fields::{Advanced, Disclosure, KeyField};
use super::import::ConfigImport;
use crate::present::{find_preset, layout_summary, param_count_line};
use leptos::prelude::*;
use memfit_core::contract::Settings;
use memfit_core::model::{presets, Arch};

/// The counts the estimate reads, and whether they are a hybrid preset's exact count (its
/// shape and the explicit counts untouched) rather than the architecture's.
fn resolved_counts(settings: RwSignal<Settings>) -> Memo<(memfit_core::estimate::Prepared, bool)> {
    Memo::new(move |_| {
        settings.with(|x| {
            let s = &x.scenario;
            let exact = s.preset().exact.is_some()
                && !s.model.overrides.any()
                && s.model.params.is_none()
                && s.model.largest_layer.is_none();
            (memfit_core::estimate::Prepared::of(s), exact)
        })
    })
}

/// Model: preset search, architecture overrides, explicit counts, config import.
#[component]
pub fn ModelPanel(settings: RwSignal<Settings>) -> impl IntoView {
    let arch = Memo::new(move |_| settings.with(|x| x.scenario.preset().arch.clone()));
    let preset_value = move |f: PresetValue| Signal::derive(move || arch.with(f));
    let counts = resolved_counts(settings);
    let search_error = RwSignal::new(None::<String>);
    // The preset list is touched only when the model changes.
    let model = Memo::new(move |_| settings.with(|x| x.scenario.model.preset.clone()));
    let select = move |id: &str| settings.update(|x| x.scenario.select_model(id));
    let overrides_set =
        Memo::new(move |_| settings.with(|x| crate::present::differing(x, &arch_keys())));
    view! {
        <fieldset class="panel" data-testid="model-panel">
            <legend>"Model"</legend>
            <div class="grid">
                <div class="field">
                    <label for="f-model">"Preset"</label>
                    <select id="f-model" data-key="model" autocomplete="off"
                        on:change=move |ev| select(&event_target_value(&ev))
                        prop:value=move || model.get()>
                        {presets().iter().map(|p| view! {
                            <option value=p.id selected=move || model.with(|m| m == p.id)>{p.name}</option>
                        }).collect_view()}
                    </select>
                </div>
                <div class="field">
                    <label for="f-search">"Search presets"</label>
                    <input id="f-search" autocomplete="off" list="preset-list" type="search" placeholder="type a name" data-testid="preset-search"
                        on:change=move |ev| {
                            let v = event_target_value(&ev);
                            match find_preset(&v) {
                                Some(id) => { select(id); search_error.set(None); }
                                None => search_error.set(Some(format!("no preset named `{v}`"))),
                            }
                        } />
                    <datalist id="preset-list">
                        {presets().iter().map(|p| view! { <option value=p.name></option> }).collect_view()}
                    </datalist>
                    <span class="error" role="alert">{move || search_error.get()}</span>
                </div>
            </div>
            <ConfigImport settings />
            <Disclosure open={overrides_set.get_untracked() > 0}
                summary=Signal::derive(move || crate::present::advanced_summary("Architecture overrides", overrides_set.get(), arch_keys().len()))>
            <p class="hint">"Blank fields use the preset's value (shown greyed)."</p>
            <div class="grid">
                {SHAPE.iter().map(|&(name, f)| view! { <KeyField settings name placeholder=preset_value(f) /> }).collect_view()}
                {HYBRID_KEYS.iter().chain(&FORM_KEYS[..7]).map(|&name| view! { <KeyField settings name /> }).collect_view()}
                <KeyField settings name="params" placeholder=Signal::derive(move || counts.with(|(p, e)| if *e { p.psi } else { p.counts.total }.to_string())) />
                <KeyField settings name="largest_layer" placeholder=Signal::derive(move || counts.with(|(p, e)| if *e { p.largest } else { p.counts.largest_layer }.to_string())) />
                <KeyField settings name="vision" placeholder=Signal::derive(move || settings.with(|x| preset_vision(&x.scenario))) />
                <KeyField settings name="context" placeholder=Signal::derive(move || settings.with(|x| x.scenario.context().map_or(String::new(), |c| c.to_string()))) />
            </div>
            </Disclosure>
            <p class="hint" data-testid="param-count">{move || counts.with(|(p, e)| param_count_line(p, *e))}</p>
        </fieldset>
    }
}

/// A hybrid's layer mix and its state-space and linear-attention shapes (set by a
/// config.json import; blank for a transformer).
const HYBRID_KEYS: [&str; 17] = [
    "attn_layers",
    "mamba_layers",
    "conv_layers",
    "linear_layers",
    "ssm_version",
    "ssm_inner",
    "ssm_state",
    "ssm_groups",
    "ssm_heads",
    "ssm_conv",
    "ssm_chunk",
    "lin_k_heads",
    "lin_v_heads",
    "lin_k_dim",
    "lin_v_dim",
    "lin_kind",
    "ssm_dtype",
];

/// A preset's value of one shape key, as its blank box shows it.
type PresetValue = fn(&Arch) -> String;

/// The transformer shape's overrides (the model panel's advanced group, with the hybrid
/// keys and [`FORM_KEYS`]), each with the preset's value its blank box shows.
const SHAPE: [(&str, PresetValue); 15] = [
    ("layers", |a| a.layers.to_string()),
    ("hidden", |a| a.hidden.to_string()),
    ("heads", |a| a.heads.to_string()),
    ("kv_heads", |a| a.kv_heads.to_string()),
    ("head_dim", |a| a.head_dim.to_string()),
    ("ffn", |a| a.ffn.to_string()),
    ("vocab", |a| a.vocab.to_string()),
    ("experts", |a| a.experts.to_string()),
    ("top_k", |a| a.top_k.to_string()),
    ("moe_ffn", |a| a.moe_ffn.to_string()),
    ("shared_experts", |a| a.shared_experts.to_string()),
    ("first_dense", |a| a.first_dense.to_string()),
    ("positions", |a| a.positions.to_string()),
    ("window", |a| a.window.to_string()),
    ("local_layers", |a| a.local_layers.to_string()),
];

/// What the blank `vision` box shows: the encoder the estimate counts when it is blank —
/// the preset's, or 0 for a text model or a shape overridden by hand
/// (`Scenario::vision`).
fn preset_vision(s: &memfit_core::scenario::Scenario) -> String {
    s.vision()
        .map_or(0, |v| v.sharded + v.replicated)
        .to_string()
}

/// The block's form and the explicit counts (the rest of the advanced group; the last four,
/// the counts and the context, show the resolved or the preset's value in their blank boxes).
const FORM_KEYS: [&str; 11] = [
    "mlp",
    "norm",
    "tied",
    "bias",
    "gelu_ops",
    "softmax_in_dtype",
    "rope_partial",
    "params",
    "largest_layer",
    "vision",
    "context",
];

/// Every key of the model panel's advanced group, in the form's order.
fn arch_keys() -> Vec<&'static str> {
    SHAPE
        .iter()
        .map(|&(name, _)| name)
        .chain(HYBRID_KEYS)
        .chain(FORM_KEYS)
        .collect()
}

/// What a newcomer sets first: the task, the batch and sequence, the precision, the
/// training recipe's main choices.
const WORKLOAD: [&str; 10] = [
    "mode",
    "precision",
    "batch",
    "seq",
    "gen",
    "microbatches",
    "finetune",
    "quant",
    "recompute",
    "attn",
];

/// The workload's less-used keys.
const WORKLOAD_MORE: &[&str] = &[
    "optimizer",
    "adam_impl",
    "grad_acc_dtype",
    "lora_rank",
    "lora_targets",
    "weight_dtype",
    "kv_dtype",
    "logits",
    "loss",
    "dropout",
];

/// Workload: training or inference, batch, sequence, precision; the optimizer, adapters
/// and numerics' details in a collapsed group.
#[component]
pub fn WorkloadPanel(settings: RwSignal<Settings>) -> impl IntoView {
    view! {
        <fieldset class="panel" data-testid="workload-panel">
            <legend>"Workload"</legend>
            <div class="grid">
                {WORKLOAD.map(|name| view! { <KeyField settings name /> }).collect_view()}
            </div>
            <Advanced settings label="Optimizer, adapters, number formats" names=WORKLOAD_MORE />
        </fieldset>
    }
}

/// Cluster and parallel layout, and the GPU.
#[component]
pub fn ClusterPanel(
    settings: RwSignal<Settings>,
    #[prop(into)] layout_problems: Signal<Vec<String>>,
) -> impl IntoView {
    let layout = Memo::new(move |_| settings.with(|x| x.scenario.layout()));
    let auto_dp = Signal::derive(move || format!("auto ({})", layout.with(|l| l.dp)));
    view! {
        <fieldset class="panel" data-testid="cluster-panel">
            <legend>"Cluster and layout"</legend>
            <div class="grid">
                <KeyField settings name="gpu" />
                <KeyField settings name="gpu_mem" placeholder="preset".to_string() />
                <KeyField settings name="gpus_per_node" />
                <KeyField settings name="nodes" />
                <KeyField settings name="dp" placeholder=auto_dp />
                {["tp", "pp", "cp", "ep", "sp", "schedule", "vpp"].map(|name| view! { <KeyField settings name /> }).collect_view()}
            </div>
            <p class="hint" data-testid="layout-summary">{move || layout.with(layout_summary)}</p>
            <ul class="problems" data-testid="layout-problems">
                {move || layout_problems.get().into_iter().map(|p| view! { <li>{p}</li> }).collect_view()}
            </ul>
        </fieldset>
    }
}

/// The keys of the ZeRO / framework panel a newcomer sets.
const ZERO: [&str; 6] = [
    "zero",
    "fsdp",
    "offload_opt",
    "offload_param",
    "framework",
    "units",
];

/// Framework internals: buckets, prefetch, pinned memory, TP overlap.
const ZERO_INTERNALS: &[&str] = &[
    "zero_init",
    "pin_memory",
    "overlap_comm",
    "reduce_bucket",
    "allgather_bucket",
    "prefetch_bucket",
    "max_live_params",
    "buffer_factor",
    "tp_overlap",
    "ep_overlap",
    "ce_fusion",
    "fp8_recipe",
    "fp8_params",
    "device",
    "modules",
    "tf32",
    "ssm_kernels",
];

/// Runtime overheads, hardware figures and the accounting convention.
const ZERO_RUNTIME: &[&str] = &[
    "cuda_ctx",
    "nccl",
    "frag",
    "tflops",
    "hbm_bw",
    "intra_bw",
    "inter_bw",
    "convention",
];

/// "auto" for `nccl` (0 on one GPU, else 256 MiB), "per stack" for `cuda_ctx` (685 MiB
/// measured for PyTorch on Hopper, else 600), blank otherwise.
fn auto_nccl(name: &'static str) -> Signal<String> {
    Signal::derive(move || match name {
        "nccl" => "auto".into(),
        "cuda_ctx" => "per stack".into(),
        _ => String::new(),
    })
}

/// ZeRO / FSDP, offload, framework; internals, overheads and the convention collapsed.
#[component]
pub fn ZeroPanel(settings: RwSignal<Settings>) -> impl IntoView {
    view! {
        <fieldset class="panel" data-testid="zero-panel">
            <legend>"ZeRO, offload and framework"</legend>
            <div class="grid">
                {ZERO.map(|name| view! { <KeyField settings name /> }).collect_view()}
            </div>
            <Advanced settings label="Framework internals" names=ZERO_INTERNALS />
            <Advanced settings label="Runtime overheads, hardware, convention" names=ZERO_RUNTIME placeholders=auto_nccl />
        </fieldset>
    }
}

/// The serving engine and its knobs (shown with `mode=serve`).
#[component]
pub fn ServingInputs(settings: RwSignal<Settings>) -> impl IntoView {
    let serving = Memo::new(move |_| {
        settings.with(|x| x.scenario.workload.mode == memfit_core::scenario::Mode::Serve)
    });
    let apply = move |keys: &'static [(&'static str, &'static str)]| {
        settings.update(|x| crate::serving::apply_preset(x, keys))
    };
    view! {
        <Show when=move || serving.get()>
            <fieldset class="panel" data-testid="serving-inputs">
                <legend>"Serving engine"</legend>
                <div class="engine-presets" role="group" aria-label="engine presets">
                    {crate::serving::ENGINE_PRESETS.iter().map(|(label, keys)| view! {
                        <button type="button" on:click=move |_| apply(keys)>{*label}</button>
                    }).collect_view()}
                </div>
                <p class="hint">"Blank fields take the engine's default for its version, GPU and layout."</p>
                <div class="grid">
                    {memfit_core::scenario::SERVING_KEYS.map(|name| view! { <KeyField settings name placeholder="default".to_string() /> }).collect_view()}
                </div>
            </fieldset>
        </Show>
    }
}
