//! "How accurate is this?": memfit against published measured runs, each row a link
//! that loads its scenario. Computed when the panel is opened.

use crate::share::validation::{embedded_pytorch_rows, embedded_rows, Row};
use leptos::prelude::*;

/// The validation table (`share::validation`), on demand.
#[component]
pub fn AccuracyPanel() -> impl IntoView {
    let open = RwSignal::new(false);
    let data = Memo::new(move |_| open.get().then(embedded_rows));
    let pytorch = Memo::new(move |_| open.get().then(embedded_pytorch_rows));
    let pytorch_summary = move || {
        pytorch.with(|d| {
            d.as_ref().map(|(r, median, max)| {
                format!(
                    "{} runs measured with PyTorch's MemTracker on CPU (real Hugging Face classes; training, FSDP2 on a fake process group, full-width blocks, inference): median |error| {:.1} %, max {:.1} %.",
                    r.len(),
                    median * 100.0,
                    max * 100.0
                )
            })
        })
    };
    let summary = move || {
        data.with(|d| {
            d.as_ref().map(|(r, median, max, _)| {
                format!(
                    "{} published runs (Megatron-LM, torchtitan, PEFT, Unsloth): median |error| {:.1} %, max {:.1} %. memfit is not fitted to them.",
                    r.len(),
                    median * 100.0,
                    max * 100.0
                )
            })
        })
    };
    view! {
        <section class="panel accuracy" id="accuracy" data-testid="accuracy">
            <details on:toggle=move |ev| {
                use wasm_bindgen::JsCast;
                if let Some(d) = ev.target().and_then(|t| t.dyn_into::<web_sys::HtmlDetailsElement>().ok()) {
                    open.set(d.open());
                }
            }>
                <summary><h2>"How accurate is this?"</h2></summary>
                <p data-testid="accuracy-summary">{summary}</p>
                <div class="scroll">
                    <table data-testid="accuracy-table">
                        <thead><tr><th>"run"</th><th>"metric"</th><th>"measured"</th><th>"memfit"</th><th>"error"</th><th></th></tr></thead>
                        <tbody>
                            {move || data.with(|d| d.as_ref().map(|(rows, ..)| table_rows(rows, "accuracy-row")))}
                        </tbody>
                    </table>
                </div>
                <ul class="hint">
                    {move || data.with(|d| d.as_ref().map(|(.., notes)| notes.iter().map(|n| view! { <li>{n.clone()}</li> }).collect_view()))}
                </ul>
                <h3>"memfit's own PyTorch measurements"</h3>
                <p data-testid="pytorch-summary">{pytorch_summary}</p>
                <div class="scroll">
                    <table data-testid="pytorch-table">
                        <thead><tr><th>"run"</th><th>"metric"</th><th>"measured"</th><th>"memfit"</th><th>"error"</th><th></th></tr></thead>
                        <tbody>
                            {move || pytorch.with(|d| d.as_ref().map(|(rows, ..)| table_rows(rows, "pytorch-row")))}
                        </tbody>
                    </table>
                </div>
                <p class="hint">"Where the misses come from: docs/validation.md and tests/pytorch_measured.rs in the repository."</p>
            </details>
        </section>
    }
}

/// Table rows: run, metric, measured, memfit, error and a link that loads the scenario.
fn table_rows(rows: &[Row], testid: &'static str) -> impl IntoView {
    rows.iter()
        .map(|r| {
            let href = format!("?{}", r.query);
            view! {
                <tr data-testid=testid>
                    <td>{format!("{}: {}", r.set, r.label)}</td>
                    <td>{r.metric.clone()}</td>
                    <td class="num">{format!("{:.1}", r.measured)}</td>
                    <td class="num">{format!("{:.1}", r.estimated)}</td>
                    <td class="num">{format!("{:+.1} %", r.rel_error() * 100.0)}</td>
                    <td><a href=href>"load"</a></td>
                </tr>
            }
        })
        .collect_view()
}
