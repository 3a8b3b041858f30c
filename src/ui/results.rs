//! Result panels: verdict, chart, ledger table, warnings. They read the Estimate only.

use super::url;
use crate::chart::present::{rows, verdict};
use crate::chart::{render_stacked, Bar, ChartSize};
use crate::core::estimate::{Estimate, Warning};
use crate::core::units::Units;
use leptos::prelude::*;

/// Fits / does not fit, the per-GPU peak, headroom and what dominates.
#[component]
pub fn VerdictPanel(
    #[prop(into)] estimate: Signal<Estimate>,
    #[prop(into)] units: Signal<Units>,
) -> impl IntoView {
    let v = Memo::new(move |_| estimate.with(|e| verdict(e, units.get())));
    view! {
        <section class="panel verdict" class:fits=move || v.with(|v| v.fits) data-testid="verdict" aria-live="polite">
            <h2 data-testid="headline">{move || v.with(|v| v.headline.clone())}</h2>
            <p class="big">
                <span data-testid="per-gpu" data-bytes=move || estimate.with(|e| e.per_gpu_bytes.to_string())>
                    {move || v.with(|v| v.per_gpu.clone())}
                </span>
                " per GPU of "
                <span data-testid="usable">{move || v.with(|v| v.usable.clone())}</span>
                " usable"
            </p>
            <ul>
                <li data-testid="headroom">{move || v.with(|v| v.headroom.clone())}</li>
                <li>"Largest: " {move || v.with(|v| v.largest.clone())}</li>
                <li>"Peak during: " {move || v.with(|v| v.phase.clone())}</li>
                <li>"Host RAM per node: " <span data-testid="per-cpu">{move || v.with(|v| v.per_cpu.clone())}</span></li>
            </ul>
        </section>
    }
}

/// The stacked bar chart (plotters SVG) with the usable-memory line.
#[component]
pub fn ChartPanel(
    #[prop(into)] estimate: Signal<Estimate>,
    #[prop(into)] units: Signal<Units>,
) -> impl IntoView {
    let svg = Memo::new(move |_| {
        estimate.with(|e| {
            let bars = [Bar::from_estimate("this configuration", e)];
            render_stacked(&bars, e.gpu.usable_bytes, units.get(), ChartSize::default())
        })
    });
    let summary = move || {
        estimate.with(|e| {
            let u = units.get();
            format!(
                "Stacked bar: {} per GPU against {} usable on {}.",
                u.format(e.per_gpu_bytes),
                u.format(e.gpu.usable_bytes),
                e.gpu.name
            )
        })
    };
    view! {
        <section class="panel chart-panel">
            <h2>"Per-GPU memory"</h2>
            <figure class="chart" role="img" aria-label=summary data-testid="chart" inner_html=move || svg.get()></figure>
            <p class="sr-summary">{summary}</p>
        </section>
    }
}

/// The ledger: every item with formula, values and source.
#[component]
pub fn LedgerTable(
    #[prop(into)] estimate: Signal<Estimate>,
    #[prop(into)] units: Signal<Units>,
) -> impl IntoView {
    let table = Memo::new(move |_| estimate.with(|e| rows(&e.items, units.get())));
    view! {
        <section class="panel ledger">
            <h2>"Ledger"</h2>
            <div class="table-wrap">
                <table data-testid="ledger">
                    <thead>
                        <tr><th>"Component"</th><th>"Where"</th><th>"Size"</th><th>"Bytes"</th><th>"Formula"</th><th>"Values"</th><th>"Source"</th></tr>
                    </thead>
                    <tbody>
                        {move || table.get().into_iter().map(|r| view! {
                            <tr>
                                <td>{r.component}</td>
                                <td>{r.location}</td>
                                <td class="num">{r.size}</td>
                                <td class="num">{r.bytes}</td>
                                <td><code>{r.formula}</code></td>
                                <td class="vals">{r.values}</td>
                                <td class="src">{r.source}</td>
                            </tr>
                        }).collect_view()}
                    </tbody>
                </table>
            </div>
        </section>
    }
}

/// Input warnings, by key. Values are shown as text (never as markup).
#[component]
pub fn WarningsPanel(#[prop(into)] warnings: Signal<Vec<Warning>>) -> impl IntoView {
    view! {
        <Show when=move || warnings.with(|w| !w.is_empty())>
            <section class="panel warnings" data-testid="warnings" role="status">
                <h2>"Input problems"</h2>
                <ul>
                    {move || warnings.get().into_iter().map(|w| view! {
                        <li><code>{w.key}</code>": " {w.message}</li>
                    }).collect_view()}
                </ul>
            </section>
        </Show>
    }
}

/// Copy the page's URL (every setting is in it).
#[component]
pub fn CopyLink() -> impl IntoView {
    let copied = RwSignal::new(false);
    view! {
        <button
            type="button"
            data-testid="copy-link"
            on:click=move |_| {
                url::copy_to_clipboard(&url::href());
                copied.set(true);
            }
        >
            {move || if copied.get() { "Link copied" } else { "Copy link" }}
        </button>
    }
}
