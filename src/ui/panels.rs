//! Input panels, one component each.

use super::fields::{opts, KeyInput, KeySelect};
use super::import::ConfigImport;
use leptos::prelude::*;
use memfit_core::gpu::GPUS;
use memfit_core::model::{presets, Arch};
use memfit_core::scenario::Scenario;
use memfit_core::units::group_digits;

/// Finds a preset by id or display name (what the search box accepts).
fn find_preset(text: &str) -> Option<&'static str> {
    let t = text.trim().to_ascii_lowercase();
    presets()
        .iter()
        .find(|p| p.id == t || p.name.to_ascii_lowercase() == t)
        .map(|p| p.id)
}

/// Model: preset search, architecture overrides, explicit counts, config import.
#[component]
pub fn ModelPanel(scenario: RwSignal<Scenario>) -> impl IntoView {
    let arch = Memo::new(move |_| scenario.with(|s| s.preset().arch.clone()));
    let preset_value = move |f: fn(&Arch) -> String| Signal::derive(move || arch.with(f));
    let counts = Memo::new(move |_| scenario.with(|s| s.arch().params()));
    let search_error = RwSignal::new(None::<String>);
    // The preset list is touched only when the model changes.
    let model = Memo::new(move |_| scenario.with(|s| s.model.clone()));
    view! {
        <fieldset class="panel" data-testid="model-panel">
            <legend>"Model"</legend>
            <div class="grid">
                <div class="field">
                    <label for="f-model">"Preset"</label>
                    <select id="f-model" data-key="model"
                        on:change=move |ev| scenario.update(|s| s.select_model(&event_target_value(&ev)))
                        prop:value=move || model.get()>
                        {presets().iter().map(|p| view! {
                            <option value=p.id selected=move || model.with(|m| m == p.id)>{p.name}</option>
                        }).collect_view()}
                    </select>
                </div>
                <div class="field">
                    <label for="f-search">"Search presets"</label>
                    <input id="f-search" list="preset-list" type="search" placeholder="type a name" data-testid="preset-search"
                        on:change=move |ev| {
                            let v = event_target_value(&ev);
                            match find_preset(&v) {
                                Some(id) => { scenario.update(|s| s.select_model(id)); search_error.set(None); }
                                None => search_error.set(Some(format!("no preset named `{v}`"))),
                            }
                        } />
                    <datalist id="preset-list">
                        {presets().iter().map(|p| view! { <option value=p.name></option> }).collect_view()}
                    </datalist>
                    <span class="error" role="alert">{move || search_error.get()}</span>
                </div>
            </div>
            <ConfigImport scenario />
            <p class="hint">"Blank fields use the preset's value (shown greyed)."</p>
            <div class="grid">
                <KeyInput scenario key="layers" label="Layers" placeholder=preset_value(|a| a.layers.to_string()) />
                <KeyInput scenario key="hidden" label="Hidden" placeholder=preset_value(|a| a.hidden.to_string()) />
                <KeyInput scenario key="heads" label="Heads" placeholder=preset_value(|a| a.heads.to_string()) />
                <KeyInput scenario key="kv_heads" label="KV heads" placeholder=preset_value(|a| a.kv_heads.to_string()) />
                <KeyInput scenario key="head_dim" label="Head dim" placeholder=preset_value(|a| a.head_dim.to_string()) />
                <KeyInput scenario key="ffn" label="FFN width" placeholder=preset_value(|a| a.ffn.to_string()) />
                <KeyInput scenario key="vocab" label="Vocabulary" placeholder=preset_value(|a| a.vocab.to_string()) />
                <KeyInput scenario key="experts" label="Experts" placeholder=preset_value(|a| a.experts.to_string()) />
                <KeyInput scenario key="top_k" label="Top-k" placeholder=preset_value(|a| a.top_k.to_string()) />
                <KeyInput scenario key="moe_ffn" label="Expert width" placeholder=preset_value(|a| a.moe_ffn.to_string()) />
                <KeyInput scenario key="shared_experts" label="Shared experts" placeholder=preset_value(|a| a.shared_experts.to_string()) />
                <KeyInput scenario key="first_dense" label="Dense first blocks" placeholder=preset_value(|a| a.first_dense.to_string()) />
                <KeyInput scenario key="positions" label="Learned positions" placeholder=preset_value(|a| a.positions.to_string()) />
                <KeyInput scenario key="window" label="Sliding window" placeholder=preset_value(|a| a.window.to_string()) unit="tokens" />
                <KeyInput scenario key="local_layers" label="Windowed layers" placeholder=preset_value(|a| a.local_layers.to_string()) />
                <KeySelect scenario key="mlp" label="MLP" options=opts(&[("", "preset"), ("gelu", "GELU (2 matrices)"), ("swiglu", "SwiGLU (3 matrices)")]) />
                <KeySelect scenario key="norm" label="Norm" options=opts(&[("", "preset"), ("layernorm", "LayerNorm"), ("rmsnorm", "RMSNorm"), ("layernorm-np", "LayerNorm, no weights")]) />
                <KeySelect scenario key="tied" label="Tied LM head" options=opts(&[("", "preset"), ("1", "tied"), ("0", "untied")]) />
                <KeySelect scenario key="bias" label="Biases" options=opts(&[("", "preset"), ("none", "none"), ("qkv", "q/k/v"), ("all", "all")]) />
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

/// Workload: training or inference, batch, sequence, precision, optimizer, adapters.
#[component]
pub fn WorkloadPanel(scenario: RwSignal<Scenario>) -> impl IntoView {
    let dtypes = || {
        opts(&[
            ("auto", "auto"),
            ("fp32", "fp32"),
            ("bf16", "bf16"),
            ("fp16", "fp16"),
            ("fp8", "fp8"),
            ("int8", "int8"),
            ("int4", "int4"),
        ])
    };
    view! {
        <fieldset class="panel" data-testid="workload-panel">
            <legend>"Workload"</legend>
            <div class="grid">
                <KeySelect scenario key="mode" label="Mode" options=opts(&[("train", "Training"), ("infer", "Inference")]) />
                <KeySelect scenario key="precision" label="Precision" options=opts(&[("bf16", "bf16 mixed"), ("fp16", "fp16 mixed"), ("fp32", "fp32"), ("bf16-pure", "bf16 pure"), ("fp8", "fp8 (TE)")]) />
                <KeyInput scenario key="batch" label="Micro-batch / GPU" unit="sequences" />
                <KeyInput scenario key="seq" label="Sequence" unit="tokens" />
                <KeyInput scenario key="gen" label="Generated (inference)" unit="tokens" />
                <KeySelect scenario key="logits" label="Logits (inference)" options=opts(&[("last", "last position (generate)"), ("all", "every position + loss (eval)")]) />
                <KeyInput scenario key="microbatches" label="Micro-batches / step" />
                <KeySelect scenario key="optimizer" label="Optimizer" options=opts(&[("adamw", "AdamW"), ("adam", "Adam"), ("sgd", "SGD"), ("sgd-momentum", "SGD + momentum"), ("adam8bit", "8-bit Adam"), ("adafactor", "Adafactor"), ("lion", "Lion")]) />
                <KeySelect scenario key="adam_impl" label="AdamW kernel (PyTorch)" options=opts(&[("foreach", "foreach"), ("fused", "fused"), ("forloop", "for-loop")]) />
                <KeySelect scenario key="grad_acc_dtype" label="Gradients" options=opts(&[("compute", "compute dtype (16 B)"), ("fp32", "fp32 (18 B)"), ("both", "both (20 B)")]) />
                <KeySelect scenario key="finetune" label="Fine-tuning" options=opts(&[("full", "full"), ("lora", "LoRA"), ("qlora", "QLoRA (NF4)")]) />
                <KeyInput scenario key="lora_rank" label="LoRA rank" />
                <KeySelect scenario key="lora_targets" label="LoRA targets" options=opts(&[("all", "all linear"), ("attn", "attention"), ("qv", "q, v"), ("mlp", "MLP")]) />
                <KeySelect scenario key="weight_dtype" label="Weights (inference)" options=dtypes() />
                <KeySelect scenario key="kv_dtype" label="KV cache" options=dtypes() />
                <KeySelect scenario key="attn" label="Attention" options=opts(&[("flash", "FlashAttention"), ("sdpa", "PyTorch SDPA"), ("eager", "eager (s² scores)")]) />
                <KeySelect scenario key="recompute" label="Recompute" options=opts(&[("none", "none"), ("selective", "selective"), ("full", "full")]) />
                <KeySelect scenario key="dropout" label="Dropout" options=opts(&[("0", "off"), ("1", "on")]) />
            </div>
        </fieldset>
    }
}

/// Cluster and parallel layout, and the GPU.
#[component]
pub fn ClusterPanel(
    scenario: RwSignal<Scenario>,
    #[prop(into)] layout_problems: Signal<Vec<String>>,
) -> impl IntoView {
    let gpus: Vec<(String, String)> = GPUS
        .iter()
        .map(|g| (g.id.to_string(), g.name.to_string()))
        .collect();
    let auto_dp = Signal::derive(move || format!("auto ({})", scenario.with(|s| s.layout().dp)));
    let summary = move || {
        scenario.with(|s| {
            let l = s.layout();
            format!(
                "dp·tp·pp·cp = {}·{}·{}·{} = {} of {} GPUs",
                l.dp,
                l.tp,
                l.pp,
                l.cp,
                l.used(),
                l.world
            )
        })
    };
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
                <KeyInput scenario key="ep" label="EP" />
                <KeySelect scenario key="sp" label="SP (with TP)" options=opts(&[("0", "off"), ("1", "on")]) />
                <KeySelect scenario key="schedule" label="PP schedule" options=opts(&[("1f1b", "1F1B"), ("gpipe", "GPipe"), ("interleaved", "interleaved")]) />
                <KeyInput scenario key="vpp" label="Virtual stages" />
            </div>
            <p class="hint" data-testid="layout-summary">{summary}</p>
            <ul class="problems" data-testid="layout-problems">
                {move || layout_problems.get().into_iter().map(|p| view! { <li>{p}</li> }).collect_view()}
            </ul>
        </fieldset>
    }
}

/// ZeRO / FSDP, offload, framework, overheads and the accounting convention.
#[component]
pub fn ZeroPanel(scenario: RwSignal<Scenario>) -> impl IntoView {
    let off = || opts(&[("none", "none"), ("cpu", "CPU"), ("nvme", "NVMe")]);
    view! {
        <fieldset class="panel" data-testid="zero-panel">
            <legend>"ZeRO, offload and framework"</legend>
            <div class="grid">
                <KeySelect scenario key="zero" label="ZeRO stage" options=opts(&[("0", "0 — plain DP"), ("1", "1 — optimizer states"), ("2", "2 — + gradients"), ("3", "3 — + parameters")]) />
                <KeySelect scenario key="fsdp" label="FSDP" options=opts(&[("none", "none"), ("full_shard", "FULL_SHARD"), ("shard_grad_op", "SHARD_GRAD_OP"), ("hybrid_shard", "HYBRID_SHARD")]) />
                <KeySelect scenario key="offload_opt" label="Offload optimizer" options=off() />
                <KeySelect scenario key="offload_param" label="Offload params" options=off() />
                <KeySelect scenario key="zero_init" label="zero.Init" options=opts(&[("1", "yes"), ("0", "no")]) />
                <KeySelect scenario key="pin_memory" label="Pinned memory" options=opts(&[("0", "no"), ("1", "yes")]) />
                <KeySelect scenario key="framework" label="Framework" options=opts(&[("deepspeed", "DeepSpeed"), ("pytorch", "PyTorch / FSDP2"), ("megatron", "Megatron-LM")]) />
                <KeySelect scenario key="overlap_comm" label="overlap_comm" options=opts(&[("0", "off"), ("1", "on")]) />
                <KeyInput scenario key="reduce_bucket" label="reduce_bucket_size" unit="elements" />
                <KeyInput scenario key="prefetch_bucket" label="stage3 prefetch" unit="elements" />
                <KeyInput scenario key="max_live_params" label="stage3 max live" unit="elements" />
                <KeyInput scenario key="cuda_ctx" label="CUDA context" unit="MiB" />
                <KeyInput scenario key="nccl" label="NCCL buffers" unit="MiB" placeholder="auto".to_string() />
                <KeyInput scenario key="frag" label="Fragmentation" unit="%" />
                <KeyInput scenario key="buffer_factor" label="Host buffer factor" />
                <KeySelect scenario key="convention" label="Convention" options=opts(&[("memfit", "memfit"), ("ds-doc", "DeepSpeed docs"), ("ds-0.14", "DeepSpeed ≤ 0.14.2"), ("ds-0.19", "DeepSpeed ≥ 0.14.3"), ("megatron", "Megatron-LM (HEAD)"), ("megatron-0.14", "Megatron core 0.14"), ("seed003", "seed 003 activations"), ("seed002", "seed 002 activations"), ("korthikanti", "Korthikanti Table 2")]) />
                <KeySelect scenario key="units" label="Units" options=opts(&[("gib", "GiB (2^30 B)"), ("gb", "GB (10^9 B)")]) />
            </div>
        </fieldset>
    }
}
