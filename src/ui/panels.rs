//! Input panels, one component each.

use super::fields::{opts, KeyInput, KeySelect};
use crate::core::gpu::GPUS;
use crate::core::model::presets;
use crate::core::scenario::Scenario;
use crate::core::units::group_digits;
use leptos::prelude::*;

/// Model: preset, architecture overrides, explicit parameter counts.
#[component]
pub fn ModelPanel(scenario: RwSignal<Scenario>) -> impl IntoView {
    let arch = Memo::new(move |_| scenario.with(|s| s.preset().arch.clone()));
    let preset_value =
        move |f: fn(&crate::core::model::Arch) -> String| Signal::derive(move || arch.with(f));
    let counts = Memo::new(move |_| scenario.with(|s| s.arch().params()));
    view! {
        <fieldset class="panel" data-testid="model-panel">
            <legend>"Model"</legend>
            <div class="field">
                <label for="f-model">"Preset"</label>
                <select
                    id="f-model"
                    data-key="model"
                    on:change=move |ev| scenario.update(|s| s.select_model(&event_target_value(&ev)))
                    prop:value=move || scenario.with(|s| s.model.clone())
                >
                    {presets()
                        .iter()
                        .map(|p| {
                            view! {
                                <option value=p.id selected=move || scenario.with(|s| s.model == p.id)>
                                    {p.name}
                                </option>
                            }
                        })
                        .collect_view()}
                </select>
            </div>
            <p class="hint">"Blank fields use the preset's value (shown greyed)."</p>
            <div class="grid">
                <KeyInput scenario key="layers" label="Layers" placeholder=preset_value(|a| a.layers.to_string()) />
                <KeyInput scenario key="hidden" label="Hidden" placeholder=preset_value(|a| a.hidden.to_string()) />
                <KeyInput scenario key="heads" label="Heads" placeholder=preset_value(|a| a.heads.to_string()) />
                <KeyInput scenario key="kv_heads" label="KV heads" placeholder=preset_value(|a| a.kv_heads.to_string()) />
                <KeyInput scenario key="ffn" label="FFN width" placeholder=preset_value(|a| a.ffn.to_string()) />
                <KeyInput scenario key="vocab" label="Vocabulary" placeholder=preset_value(|a| a.vocab.to_string()) />
                <KeySelect scenario key="mlp" label="MLP" options=opts(&[("", "preset"), ("gelu", "GELU (2 matrices)"), ("swiglu", "SwiGLU (3 matrices)")]) />
                <KeySelect scenario key="norm" label="Norm" options=opts(&[("", "preset"), ("layernorm", "LayerNorm"), ("rmsnorm", "RMSNorm")]) />
                <KeySelect scenario key="tied" label="Tied LM head" options=opts(&[("", "preset"), ("1", "tied"), ("0", "untied")]) />
                <KeyInput scenario key="params" label="Params (explicit)" placeholder=Signal::derive(move || counts.with(|c| c.total.to_string())) />
                <KeyInput scenario key="largest_layer" label="Largest layer" placeholder=Signal::derive(move || counts.with(|c| c.largest_layer.to_string())) />
            </div>
            <p class="hint" data-testid="param-count">
                {move || counts.with(|c| format!(
                    "From the architecture: {} parameters ({} active per token), largest layer {}.",
                    group_digits(c.total), group_digits(c.active), group_digits(c.largest_layer)
                ))}
            </p>
        </fieldset>
    }
}

/// Workload: training or inference, batch, sequence, precision.
#[component]
pub fn WorkloadPanel(scenario: RwSignal<Scenario>) -> impl IntoView {
    view! {
        <fieldset class="panel" data-testid="workload-panel">
            <legend>"Workload"</legend>
            <div class="grid">
                <KeySelect scenario key="mode" label="Mode" options=opts(&[("train", "Training"), ("infer", "Inference")]) />
                <KeySelect scenario key="precision" label="Precision" options=opts(&[("bf16", "bf16 mixed (fp32 master)"), ("fp16", "fp16 mixed (fp32 master)"), ("fp32", "fp32")]) />
                <KeyInput scenario key="batch" label="Micro-batch / GPU" unit="seq" />
                <KeyInput scenario key="seq" label="Sequence" unit="tokens" />
                <KeyInput scenario key="gen" label="Generated (inference)" unit="tokens" />
            </div>
        </fieldset>
    }
}

/// Cluster and parallel layout, and the GPU.
#[component]
pub fn ClusterPanel(scenario: RwSignal<Scenario>) -> impl IntoView {
    let gpus: Vec<(String, String)> = GPUS
        .iter()
        .map(|g| (g.id.to_string(), g.name.to_string()))
        .collect();
    let auto_dp = Signal::derive(move || format!("auto ({})", scenario.with(|s| s.layout().dp)));
    view! {
        <fieldset class="panel" data-testid="cluster-panel">
            <legend>"Cluster and layout"</legend>
            <div class="grid">
                <KeySelect scenario key="gpu" label="GPU" options=gpus />
                <KeyInput scenario key="gpu_mem" label="Custom memory" unit="MiB" placeholder="preset".to_string() />
                <KeyInput scenario key="gpus_per_node" label="GPUs / node" />
                <KeyInput scenario key="nodes" label="Nodes" />
                <KeyInput scenario key="dp" label="DP" placeholder=auto_dp />
                <KeyInput scenario key="tp" label="TP" />
                <KeyInput scenario key="pp" label="PP" />
                <KeyInput scenario key="cp" label="CP" />
            </div>
        </fieldset>
    }
}

/// ZeRO stage, offload and the accounting convention.
#[component]
pub fn ZeroPanel(scenario: RwSignal<Scenario>) -> impl IntoView {
    let off = || opts(&[("none", "none"), ("cpu", "CPU"), ("nvme", "NVMe")]);
    view! {
        <fieldset class="panel" data-testid="zero-panel">
            <legend>"ZeRO and offload"</legend>
            <div class="grid">
                <KeySelect scenario key="zero" label="ZeRO stage" options=opts(&[("0", "0 — plain DP"), ("1", "1 — optimizer states"), ("2", "2 — + gradients"), ("3", "3 — + parameters")]) />
                <KeySelect scenario key="offload_opt" label="Offload optimizer" options=off() />
                <KeySelect scenario key="offload_param" label="Offload params" options=off() />
                <KeySelect scenario key="zero_init" label="zero.Init" options=opts(&[("1", "yes"), ("0", "no")]) />
                <KeyInput scenario key="buffer_factor" label="Host buffer factor" />
                <KeySelect scenario key="convention" label="Convention" options=opts(&[("memfit", "memfit"), ("ds-doc", "DeepSpeed docs"), ("ds-0.14", "DeepSpeed ≤ 0.14.2"), ("ds-0.19", "DeepSpeed ≥ 0.14.3")]) />
                <KeySelect scenario key="units" label="Units" options=opts(&[("gib", "GiB (2^30 B)"), ("gb", "GB (10^9 B)")]) />
            </div>
        </fieldset>
    }
}
