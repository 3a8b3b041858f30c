//! "How accurate is this?": memfit against published measured runs, each row a link
//! that loads its scenario. Computed when the panel is opened.

use leptos::prelude::*;
use memfit_evidence::validation::{embedded_pytorch_rows, embedded_rows, Row};

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
                <RowsTable testid="accuracy-table" rows=Signal::derive(move || data.with(|d| d.as_ref().map(|(r, ..)| r.clone()).unwrap_or_default())) row_testid="accuracy-row" />
                <ul class="hint">
                    {move || data.with(|d| d.as_ref().map(|(.., notes)| notes.iter().map(|n| view! { <li>{n.clone()}</li> }).collect_view()))}
                </ul>
                <h3>"memfit's own PyTorch measurements"</h3>
                <p data-testid="pytorch-summary">{pytorch_summary}</p>
                <RowsTable testid="pytorch-table" rows=Signal::derive(move || pytorch.with(|d| d.as_ref().map(|(r, ..)| r.clone()).unwrap_or_default())) row_testid="pytorch-row" />
                <p class="hint">"Where the misses come from: docs/validation.md and tests/pytorch_measured.rs in the repository."</p>
            </details>
        </section>
    }
}

/// A comparison table: run, metric, measured, memfit, error, and a link that loads
/// the run's scenario.
#[component]
fn RowsTable(
    testid: &'static str,
    #[prop(into)] rows: Signal<Vec<Row>>,
    row_testid: &'static str,
) -> impl IntoView {
    view! {
        <div class="scroll">
            <table data-testid=testid>
                <thead><tr><th>"run"</th><th>"metric"</th><th>"measured"</th><th>"memfit"</th><th>"error"</th><th></th></tr></thead>
                <tbody>
                    {move || rows.with(|rows| rows.iter().map(|r| {
                        let href = format!("?{}", r.query);
                        view! {
                            <tr data-testid=row_testid>
                                <td>{format!("{}: {}", r.set, r.label)}</td>
                                <td>{r.metric.clone()}</td>
                                <td class="num">{format!("{:.1}", r.measured)}</td>
                                <td class="num">{format!("{:.1}", r.estimated)}</td>
                                <td class="num">{format!("{:+.1} %", r.rel_error() * 100.0)}</td>
                                <td><a href=href>"load"</a></td>
                            </tr>
                        }
                    }).collect_view())}
                </tbody>
            </table>
        </div>
    }
}
