//! The serving panel: the engine's answer, concurrency against context length, and the
//! serving fit map (TP × weight format), each cell loading its layout.

use crate::chart::{render_concurrency, ChartSize};
use crate::serving::{
    cell_class, cell_text, column_label, concurrency_curve, default_context_line, fit_map, summary,
};
use leptos::prelude::*;
use memfit_core::contract::query::decode;
use memfit_core::contract::Settings;
use memfit_core::estimate::Estimate;
use memfit_core::units::Units;

/// What the engine gives: tokens, concurrency, the longest request, its error.
#[component]
pub fn ServePanel(
    #[prop(into)] estimate: Signal<Estimate>,
    settings: RwSignal<Settings>,
    #[prop(into)] units: Signal<Units>,
) -> impl IntoView {
    let report = Memo::new(move |_| estimate.with(|e| e.serve.clone()));
    let scenario = Memo::new(move |_| settings.with(|x| x.scenario.clone()));
    let lines = move || {
        let mut out = report.with(|r| {
            r.as_ref()
                .map(|r| summary(r, units.get()))
                .unwrap_or_default()
        });
        if !out.is_empty() {
            out.extend(scenario.with(default_context_line));
        }
        out
    };
    let error = move || report.with(|r| r.as_ref().and_then(|r| r.error.clone()));
    let curve = Memo::new(move |_| {
        // Only a serving scenario has a curve (the panel is hidden otherwise).
        if report.with(Option::is_none) {
            return String::new();
        }
        scenario.with(|s| {
            let pts: Vec<(u64, f64)> = concurrency_curve(s)
                .into_iter()
                .map(|p| (p.max_len, p.concurrency))
                .collect();
            let chosen = report.with(|r| r.as_ref().map_or(0, |r| r.max_len));
            let size = if super::viewport_width() < 600.0 {
                ChartSize {
                    width: 420,
                    height: 300,
                }
            } else {
                ChartSize {
                    width: 760,
                    height: 320,
                }
            };
            render_concurrency(&pts, chosen, size)
        })
    });
    let fig = NodeRef::<leptos::html::Figure>::new();
    super::draw_svg(fig, move || curve.get());
    view! {
        <Show when=move || report.with(Option::is_some)>
            <section class="panel serve" data-testid="serve-panel">
                <h2>"Serving: what the engine gives you"</h2>
                {move || lines().into_iter().map(|l| view! { <p>{l}</p> }).collect_view()}
                <p class="error" role="alert" data-testid="serve-error">{error}</p>
                <figure class="chart" role="img" aria-label="concurrent requests against max_len" node_ref=fig></figure>
                <ServeMap settings />
            </section>
        </Show>
    }
}

/// TP × weight format, coloured by concurrency at the chosen `max_len`.
#[component]
fn ServeMap(settings: RwSignal<Settings>) -> impl IntoView {
    let map = Memo::new(move |_| settings.with(fit_map));
    let load = move |q: String| settings.set(decode(&q).0);
    view! {
        <p class="hint">"Concurrent requests at this max_len, by tensor-parallel degree (rows) and weight format (columns): the two choices that set the weights per GPU, so the room left for the KV cache. On a mixture of experts a cell marked EP spreads the experts over its GPUs (expert parallelism), where that holds more; with redundant experts (EPLB) each GPU holds (experts + redundant)/EP of them, and a cell the engine refuses them in (vLLM 0.10+ without EP, an EP size that does not divide them) reads —. Click a cell to load it."</p>
        <div class="serve-map-wrap">
        <table class="serve-map" data-testid="serve-map">
            <thead><tr><th>"TP"</th>
                {move || map.with(|m| m.first().map(|row| row.iter().map(|c| view! { <th>{column_label(c)}</th> }).collect_view()))}
            </tr></thead>
            <tbody>
                {move || map.with(|m| m.iter().map(|row| {
                    let tp = row.first().map_or(1, |c| c.tp);
                    view! {
                        <tr><th>{tp}</th>
                            {row.iter().map(|c| {
                                let q = c.query.clone();
                                let text = cell_text(c);
                                view! { <td class=cell_class(c)><button type="button" on:click=move |_| load(q.clone())>{text}</button></td> }
                            }).collect_view()}
                        </tr>
                    }
                }).collect_view())}
            </tbody>
        </table>
        </div>
    }
}
