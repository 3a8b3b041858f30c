//! "How accurate is this?": memfit against published measured runs, against real
//! `transformers` runs, its step time against published training runs and its serving
//! plans against vLLM start-up logs (held out and calibration apart), each row a link that
//! loads its
//! scenario. The tables (`accuracy.json`, the page's own file) are fetched from the page's
//! origin when the panel is first opened: nothing is requested at load.

use leptos::prelude::*;

use crate::present::{
    cuda_summary, hf_summary, llamacpp_summary, parse_accuracy, published_summary, pytorch_summary,
    serving_summary, sglang_summary, step_summary, value_text, Accuracy, AccuracyRow,
};

/// Where the panel's tables stand.
#[derive(Clone, Debug, PartialEq)]
enum Tables {
    /// Not asked for yet.
    Idle,
    /// Being fetched.
    Loading,
    /// Fetched and parsed.
    Ready(Box<Accuracy>),
    /// The fetch or the parse failed: the sentence to show.
    Failed(String),
}

/// Fetches and parses the tables (`accuracy.json` beside the page).
async fn load() -> Tables {
    match super::net::fetch_own("accuracy.json").await {
        Ok(text) => match parse_accuracy(&text) {
            Some(a) => Tables::Ready(Box::new(a)),
            None => Tables::Failed("accuracy.json is not the expected tables".into()),
        },
        Err(e) => Tables::Failed(e),
    }
}

/// The validation tables, fetched when the panel is opened.
#[component]
pub fn AccuracyPanel() -> impl IntoView {
    let tables = RwSignal::new(Tables::Idle);
    let on_toggle = move |ev: leptos::ev::Event| {
        if super::details_open(&ev)
            && tables.with_untracked(|t| matches!(t, Tables::Idle | Tables::Failed(_)))
        {
            tables.set(Tables::Loading);
            leptos::task::spawn_local(async move { tables.set(load().await) });
        }
    };
    let with = move |f: fn(&Accuracy) -> String| {
        tables.with(|t| match t {
            Tables::Ready(a) => f(a),
            _ => String::new(),
        })
    };
    let rows = move |f: fn(&Accuracy) -> Vec<AccuracyRow>| {
        Signal::derive(move || {
            tables.with(|t| match t {
                Tables::Ready(a) => f(a),
                _ => Vec::new(),
            })
        })
    };
    let status = move || {
        tables.with(|t| match t {
            Tables::Loading => "Loading the tables…".to_string(),
            Tables::Failed(e) => format!("The tables could not be loaded: {e}"),
            _ => String::new(),
        })
    };
    let notes = move || {
        tables.with(|t| match t {
            Tables::Ready(a) => a.published.notes.clone(),
            _ => Vec::new(),
        })
    };
    view! {
        <section class="panel accuracy" id="accuracy" data-testid="accuracy">
            <details on:toggle=on_toggle>
                <summary><h2>"How accurate is this?"</h2></summary>
                <p class="hint" data-testid="accuracy-status">{status}</p>
                <p data-testid="accuracy-summary">{move || with(|a| published_summary(&a.published))}</p>
                <RowsTable testid="accuracy-table" rows=rows(|a| a.published.rows.clone()) row_testid="accuracy-row" />
                <ul class="hint">
                    {move || notes().into_iter().map(|n| view! { <li>{n}</li> }).collect_view()}
                </ul>
                <h3>"Real transformers runs: held out and calibration"</h3>
                <p data-testid="hf-summary">{move || with(|a| hf_summary(&a.hf))}</p>
                <RowsTable testid="hf-table" rows=rows(|a| a.hf.rows.clone()) row_testid="hf-row" />
                <h3>"Real CUDA runs on one H200 (calibration only)"</h3>
                <p data-testid="cuda-summary">{move || with(|a| cuda_summary(&a.cuda))}</p>
                <RowsTable testid="cuda-table" rows=rows(|a| a.cuda.rows.clone()) row_testid="cuda-row" />
                <h3>"Step time: published training runs, held out and calibration"</h3>
                <p data-testid="step-summary">{move || with(|a| step_summary(&a.steptime))}</p>
                <RowsTable testid="step-table" rows=rows(|a| a.steptime.rows.clone()) row_testid="step-row" />
                <h3>"Serving: vLLM's and SGLang's KV-cache tokens against start-up logs, held out and calibration"</h3>
                <p data-testid="serve-acc-summary">{move || with(|a| serving_summary(&a.serving))}</p>
                <RowsTable testid="serve-acc-table" rows=rows(|a| a.serving.rows.clone()) row_testid="serve-acc-row" />
                <p data-testid="sglang-acc-summary">{move || with(|a| sglang_summary(&a.serving_sglang))}</p>
                <RowsTable testid="sglang-acc-table" rows=rows(|a| a.serving_sglang.rows.clone()) row_testid="sglang-acc-row" />
                <h3>"Serving: llama.cpp's and Ollama's GPU buffers against start-up logs, held out and calibration"</h3>
                <p data-testid="llamacpp-acc-summary">{move || with(|a| llamacpp_summary(&a.serving_llamacpp))}</p>
                <RowsTable testid="llamacpp-acc-table" rows=rows(|a| a.serving_llamacpp.rows.clone()) row_testid="llamacpp-acc-row" />
                <h3>"memfit's first PyTorch harness (in-sample)"</h3>
                <p data-testid="pytorch-summary">{move || with(|a| pytorch_summary(&a.pytorch))}</p>
                <RowsTable testid="pytorch-table" rows=rows(|a| a.pytorch.rows.clone()) row_testid="pytorch-row" />
                <p class="hint">"Where the misses come from: docs/validation.md, docs/steptime.md, docs/serving.md, tests/hf_measured.rs, tests/pytorch_measured.rs and tests/serve_vllm.rs in the repository."</p>
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
                                <td>{format!("{}: {}", r.set, r.label)}
                                    {r.unstated_note().map(|n| view! { <br /><span class="hint">{n}</span> })}</td>
                                <td>{r.metric.clone()}</td>
                                <td class="num">{value_text(r.measured)}</td>
                                <td class="num">{value_text(r.estimated)}</td>
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
