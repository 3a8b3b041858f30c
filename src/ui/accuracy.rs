//! "How accurate is this?": memfit against published measured runs, each row a link
//! that loads its scenario. Computed when the panel is opened.

use leptos::prelude::*;

use crate::present::{accuracy, published_summary, pytorch_summary, AccuracyRow};

/// The validation tables (`assets/accuracy.json`), parsed when the panel is opened.
#[component]
pub fn AccuracyPanel() -> impl IntoView {
    let open = RwSignal::new(false);
    let data = Memo::new(move |_| open.get().then(accuracy));
    let summary = move || data.with(|d| d.as_ref().map(|a| published_summary(&a.published)));
    let pytorch_summary = move || data.with(|d| d.as_ref().map(|a| pytorch_summary(&a.pytorch)));
    let published_rows = Signal::derive(move || {
        data.with(|d| {
            d.as_ref()
                .map(|a| a.published.rows.clone())
                .unwrap_or_default()
        })
    });
    let pytorch_rows = Signal::derive(move || {
        data.with(|d| {
            d.as_ref()
                .map(|a| a.pytorch.rows.clone())
                .unwrap_or_default()
        })
    });
    let notes = move || {
        data.with(|d| {
            d.as_ref()
                .map(|a| a.published.notes.clone())
                .unwrap_or_default()
        })
    };
    view! {
        <section class="panel accuracy" id="accuracy" data-testid="accuracy">
            <details on:toggle=move |ev| open.set(super::details_open(&ev))>
                <summary><h2>"How accurate is this?"</h2></summary>
                <p data-testid="accuracy-summary">{summary}</p>
                <RowsTable testid="accuracy-table" rows=published_rows row_testid="accuracy-row" />
                <ul class="hint">
                    {move || notes().into_iter().map(|n| view! { <li>{n}</li> }).collect_view()}
                </ul>
                <h3>"memfit's own PyTorch measurements"</h3>
                <p data-testid="pytorch-summary">{pytorch_summary}</p>
                <RowsTable testid="pytorch-table" rows=pytorch_rows row_testid="pytorch-row" />
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
    #[prop(into)] rows: Signal<Vec<AccuracyRow>>,
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
                                <td class="num">{r.error_text()}</td>
                                <td><a href=href>"load"</a></td>
                            </tr>
                        }
                    }).collect_view())}
                </tbody>
            </table>
        </div>
    }
}
