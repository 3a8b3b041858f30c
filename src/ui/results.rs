//! Result panels: verdict, chart, ledger, explain, export. They read the Estimate only.

use super::url;
use crate::chart::present::{phase_label, quick_line, rows, verdict};
use crate::chart::{Bar, Bars, ChartSize, Stacked};
use crate::export;
use crate::present::{activates, legend};
use leptos::prelude::*;
use memfit_core::contract::Settings;
use memfit_core::estimate::{Component, Estimate, Warning};
use memfit_core::units::{group_digits, Units};
use wasm_bindgen::JsCast;

/// The main chart's size: narrower on phones (no legend column; the HTML legend shows).
fn chart_size() -> ChartSize {
    if super::viewport_width() < 600.0 {
        ChartSize {
            width: 420,
            height: 340,
        }
    } else {
        ChartSize::default()
    }
}

/// On a phone the results come first and the form after them: this bar stays at the top
/// of the screen with the verdict in one line and jumps to the inputs and back, so the
/// verdict stays in view while the inputs are edited (hidden on wide screens, where the
/// form sits beside the results).
#[component]
pub fn QuickBar(
    #[prop(into)] estimate: Signal<Estimate>,
    #[prop(into)] units: Signal<Units>,
    #[prop(into)] held: Signal<Option<&'static str>>,
) -> impl IntoView {
    let v = Memo::new(move |_| estimate.with(|e| verdict(e, units.get())));
    let line = move || {
        if let Some(h) = held.get() {
            h.to_string()
        } else {
            v.with(quick_line)
        }
    };
    view! {
        <nav class="quickbar" aria-label="Jump to" data-testid="quickbar" class:fits=move || held.get().is_none() && v.with(|v| v.fits)>
            <span class="quick-verdict" data-testid="quick-verdict">{line}</span>
            <button type="button" data-testid="to-inputs" on:click=|_| super::scroll_to("inputs")>"Inputs"</button>
            <button type="button" on:click=|_| super::scroll_to("verdict")>"Results"</button>
        </nav>
    }
}

/// Fits / does not fit, the per-GPU peak, headroom, what dominates, per-stage peaks
/// and the seeds' rules of thumb. While `held` (what the figures need is loading: the op
/// templates the run reads, or the module of the ledger it reads, `super::engines`) the
/// headline is `held`'s and the per-GPU figure, the headroom and fits / does not fit are
/// not shown; `failed` says why the flat share stands in for the replay, or why no figure
/// can be shown.
#[component]
pub fn VerdictPanel(
    #[prop(into)] estimate: Signal<Estimate>,
    #[prop(into)] units: Signal<Units>,
    #[prop(into)] held: Signal<Option<&'static str>>,
    #[prop(into)] failed: Signal<Option<String>>,
) -> impl IntoView {
    let v = Memo::new(move |_| estimate.with(|e| verdict(e, units.get())));
    let headline = move || {
        if let Some(h) = held.get() {
            h.to_string()
        } else {
            v.with(|v| v.headline.clone())
        }
    };
    let stages = move || stages_table(estimate, units);
    let rules = move || {
        estimate.with(|e| {
            let u = units.get();
            e.rules_of_thumb
                .iter()
                .map(|r| view! { <li>{format!("{} — {} ({})", r.name, u.format(r.bytes), r.formula)}</li> })
                .collect_view()
        })
    };
    view! {
        <section class="panel verdict" id="verdict" class:fits=move || held.get().is_none() && v.with(|v| v.fits)
            class:held=move || held.get().is_some() aria-busy=move || held.get().is_some().then_some("true") data-testid="verdict" aria-live="polite">
            <h2 data-testid="headline">{headline}</h2>
            <p class="big">
                // Empty while held: this element only ever shows the final figure.
                <span data-testid="per-gpu" data-bytes=move || (held.get().is_none()).then(|| estimate.with(|e| e.per_gpu_bytes.to_string()))>
                    {move || (held.get().is_none()).then(|| v.with(|v| v.per_gpu.clone()))}
                </span>
                {move || held.get().is_some().then_some("…")}
                " per GPU of "
                <span data-testid="usable">{move || v.with(|v| v.usable.clone())}</span>
                " usable on " {move || estimate.with(|e| e.gpu.name.clone())}
            </p>
            {move || failed.get().map(|why| view! { <p class="error" role="alert" data-testid="templates-failed">{why}</p> })}
            <ul>
                <li data-testid="headroom">{move || if held.get().is_some() { "…".to_string() } else { v.with(|v| v.headroom.clone()) }}</li>
                <li>"Largest: " {move || if held.get().is_some() { "…".to_string() } else { v.with(|v| v.largest.clone()) }}</li>
                <li>"Peak during: " {move || v.with(|v| v.phase.clone())}</li>
                // Short on purpose: a long line here became the page's largest paint (Lighthouse's
                // LCP 0.9 → 3.4 s); the explanation is the item's title.
                <li title="Tensors only, as torch.cuda.max_memory_allocated reports them; the per-GPU figure adds what runs out with it: the allocator's reserve (fragmentation) and the CUDA context">
                    "Allocated (max_memory_allocated): "
                    {move || estimate.with(|e| units.get().format(e.allocated_bytes))}</li>
                <li>"Host RAM per node: " <span data-testid="per-cpu">{move || v.with(|v| v.per_cpu.clone())}</span></li>
                <li>"Convention: " {move || estimate.with(|e| e.convention.clone())}</li>
            </ul>
            {stages}
            <p class="hint">"Rules of thumb (seed 003), for comparison:"</p>
            <ul class="rules">{rules}</ul>
        </section>
    }
}

/// The table of every pipeline stage's peak (`None` for one stage).
fn stages_table(estimate: Signal<Estimate>, units: Signal<Units>) -> Option<impl IntoView> {
    estimate.with(|e| {
        let u = units.get();
        if e.stages.len() < 2 {
            return None;
        }
        let rows = e
            .stages
            .iter()
            .map(|st| {
                let fits = st.per_gpu_bytes <= e.gpu.usable_bytes;
                view! {
                    <tr class:over=!fits>
                        <td>{st.stage}</td><td class="num">{st.layers}</td>
                        <td class="num">{u.format(st.per_gpu_bytes)}</td>
                        <td>{phase_label(st.peak_phase)}</td><td>{if fits { "fits" } else { "over" }}</td>
                    </tr>
                }
            })
            .collect_view();
        Some(view! {
            <table class="stages" data-testid="stages">
                <caption>"Every pipeline stage"</caption>
                <thead><tr><th>"stage"</th><th>"layers"</th><th>"peak"</th><th>"during"</th><th></th></tr></thead>
                <tbody>{rows}</tbody>
            </table>
        })
    })
}

/// The stacked bar chart (plotters SVG) with the usable-memory line; a click on a
/// segment explains it.
#[component]
pub fn ChartPanel(
    #[prop(into)] estimate: Signal<Estimate>,
    #[prop(into)] units: Signal<Units>,
    selected: RwSignal<Option<usize>>,
    /// Marked busy, its drawing hidden (its figures would change), while the verdict is held.
    #[prop(into)]
    held: Signal<bool>,
) -> impl IntoView {
    let bars = Memo::new(move |_| estimate.with(bars_of));
    let summary = move || {
        estimate.with(|e| {
            let u = units.get();
            let parts: Vec<String> = Component::ALL
                .iter()
                .filter(|c| e.gpu_bytes_of(**c) > 0)
                .map(|c| format!("{} {}", c.label(), u.format(e.gpu_bytes_of(*c))))
                .collect();
            format!(
                "Per-GPU memory {} of {} usable: {}.",
                u.format(e.per_gpu_bytes),
                u.format(e.gpu.usable_bytes),
                parts.join(", ")
            )
        })
    };
    let on_click = move |ev: web_sys::MouseEvent| {
        let comp = ev
            .target()
            .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
            .and_then(|el| el.get_attribute("data-component"));
        if let Some(c) = comp {
            let idx = estimate.with(|e| e.items.iter().position(|i| i.component.as_str() == c));
            selected.set(idx);
        }
    };
    // Rebuilt only when the components shown change, not with every figure.
    let swatches = Memo::new(move |_| estimate.with(legend));
    let fig = NodeRef::<leptos::html::Figure>::new();
    super::draw_in_place::<Stacked, _>(fig, move |draw| {
        let (capacity, units, size) = (
            estimate.with(|e| e.gpu.usable_bytes),
            units.get(),
            chart_size(),
        );
        bars.with(|bars| {
            draw(Bars {
                bars,
                capacity,
                units,
                size,
            })
        });
    });
    view! {
        <section class="panel chart-panel" id="chart" class:held=held aria-busy=move || held.get().then_some("true")>
            <h2>"Per-GPU memory"</h2>
            <figure class="chart" role="img" aria-label=summary data-testid="chart" on:click=on_click node_ref=fig></figure>
            <ul class="html-legend" aria-hidden="true">
                {move || swatches.get().into_iter().map(|(label, color)| view! {
                    <li><span class="swatch" style:--swatch=color></span>{label}</li>
                }).collect_view()}
            </ul>
            <p class="hint">"Hover a segment for its size; click it to see its formula."</p>
        </section>
    }
}

/// The bars of the chart: one per pipeline stage, or the configuration's one.
fn bars_of(e: &Estimate) -> Vec<Bar> {
    if e.stages.len() > 1 {
        e.stages
            .iter()
            .map(|st| Bar {
                label: format!("stage {}", st.stage),
                segments: st.components.clone(),
            })
            .collect()
    } else {
        vec![Bar::from_estimate("this configuration", e)]
    }
}

/// The ledger: every item with formula, values and source; a row click explains it.
#[component]
pub fn LedgerTable(
    #[prop(into)] estimate: Signal<Estimate>,
    #[prop(into)] units: Signal<Units>,
    selected: RwSignal<Option<usize>>,
) -> impl IntoView {
    let node = NodeRef::<leptos::html::Section>::new();
    let estimate = super::while_visible(estimate, super::on_screen(node));
    let table = Memo::new(move |_| estimate.with(|e| rows(&e.items, units.get())));
    view! {
        <section class="panel ledger" id="ledger" node_ref=node>
            <h2>"Ledger"</h2>
            <div class="table-wrap">
                <table data-testid="ledger">
                    <thead>
                        <tr><th>"Component"</th><th>"Where"</th><th>"Size"</th><th>"Bytes"</th><th>"Formula"</th></tr>
                    </thead>
                    <tbody>
                        {move || table.get().into_iter().enumerate().map(|(i, r)| view! {
                            <tr tabindex="0" class:selected=move || selected.get() == Some(i) data-row=i
                                on:click=move |_| selected.set(Some(i))
                                on:keydown=move |ev: web_sys::KeyboardEvent| if activates(&ev.key()) { selected.set(Some(i)) }>
                                <td>{r.component}</td>
                                <td>{r.location}</td>
                                <td class="num">{r.size}</td>
                                <td class="num">{r.bytes}</td>
                                <td><code>{r.formula}</code></td>
                            </tr>
                        }).collect_view()}
                    </tbody>
                </table>
            </div>
        </section>
    }
}

/// Explain mode: the selected item's formula, substituted values and source; and the
/// whole ledger's formulas on request.
#[component]
pub fn ExplainPanel(
    #[prop(into)] estimate: Signal<Estimate>,
    #[prop(into)] units: Signal<Units>,
    selected: RwSignal<Option<usize>>,
) -> impl IntoView {
    // Off screen it stays as it was; the list of all formulas is built only while open.
    let node = NodeRef::<leptos::html::Section>::new();
    let estimate = super::while_visible(estimate, super::on_screen(node));
    let open = RwSignal::new(false);
    let item = move || {
        selected
            .get()
            .and_then(|i| estimate.with(|e| e.items.get(i).cloned()))
    };
    view! {
        <section class="panel explain" data-testid="explain" aria-live="polite" node_ref=node>
            <h2>"Explain"</h2>
            {move || match item() {
                None => view! { <p class="hint">"Click a bar segment or a ledger row to see how it is computed."</p> }.into_any(),
                Some(i) => view! {
                    <dl data-testid="explain-item">
                        <dt>"Item"</dt><dd>{i.component.label()} " — " {units.get().format(i.bytes)} " (" {group_digits(i.bytes)} " bytes)"</dd>
                        <dt>"Formula"</dt><dd><code data-testid="explain-formula">{i.formula.clone()}</code></dd>
                        <dt>"Values"</dt><dd><code>{i.values.clone()}</code></dd>
                        <dt>"Source"</dt><dd>{i.source.clone()}</dd>
                        <dt>"Held by"</dt><dd>{i.rank.clone()}</dd>
                    </dl>
                }.into_any(),
            }}
            <details data-testid="all-formulas" on:toggle=move |ev| open.set(is_open(&ev))>
                <summary>"Show all formulas"</summary>
                <ol>
                    {move || open.get().then(|| estimate.with(|e| e.items.iter().map(|i| view! {
                        <li><strong>{i.component.label()}</strong> " = " <code>{i.formula.clone()}</code>
                            " with " <code>{i.values.clone()}</code> " → " {units.get().format(i.bytes)}
                            <br /><small>{i.source.clone()}</small></li>
                    }).collect_view()))}
                </ol>
            </details>
        </section>
    }
}

/// Whether the `<details>` a `toggle` event came from is open.
fn is_open(ev: &web_sys::Event) -> bool {
    ev.target()
        .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
        .is_some_and(|d| d.has_attribute("open"))
}

/// Export the estimate and matching configs (as downloads from data URLs).
#[component]
pub fn ExportPanel(
    #[prop(into)] settings: Signal<Settings>,
    #[prop(into)] estimate: Signal<Estimate>,
) -> impl IntoView {
    let node = NodeRef::<leptos::html::Section>::new();
    let visible = super::on_screen(node);
    let settings = super::while_visible(settings, visible);
    let estimate = super::while_visible(estimate, visible);
    let kind = RwSignal::new("json".to_string());
    let text = Memo::new(move |_| {
        let k = kind.get();
        settings.with(|x| {
            estimate.with(|e| match k.as_str() {
                "csv" => export::items_csv(e),
                "ds" => export::ds_config(&x.scenario),
                "torchrun" => export::torchrun_snippet(&x.scenario),
                _ => export::estimate_json(x, e),
            })
        })
    });
    let file = move || match kind.get().as_str() {
        "csv" => ("memfit-ledger.csv", "text/csv"),
        "ds" => ("ds_config.json", "application/json"),
        "torchrun" => ("train_fsdp.txt", "text/plain"),
        _ => ("memfit-estimate.json", "application/json"),
    };
    let href = move || {
        format!(
            "data:{};charset=utf-8,{}",
            file().1,
            memfit_core::contract::query::percent_encode(&text.get())
        )
    };
    view! {
        <section class="panel export" data-testid="export" node_ref=node>
            <h2>"Export"</h2>
            <div class="row">
                <label for="export-kind">"Format"</label>
                <select id="export-kind" autocomplete="off" on:change=move |ev| kind.set(event_target_value(&ev)) prop:value=move || kind.get()>
                    <option value="json">"Estimate (JSON)"</option>
                    <option value="csv">"Ledger (CSV)"</option>
                    <option value="ds">"DeepSpeed ds_config.json"</option>
                    <option value="torchrun">"torchrun + FSDP2 snippet"</option>
                </select>
                <a class="button" data-testid="download" href=href download=move || file().0>"Download"</a>
                <button type="button" on:click=move |_| url::copy_to_clipboard(&text.get_untracked())>"Copy"</button>
            </div>
            <pre data-testid="export-text">{move || text.get()}</pre>
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

/// Wires the static "Copy link" button of `index.html` (static so that the header,
/// painted before the wasm loads, never reflows): a click copies the page's URL and
/// says so.
pub fn wire_copy_link() {
    use wasm_bindgen::closure::Closure;
    let Some(button) = document().get_element_by_id("copy-link") else {
        return;
    };
    let b = button.clone();
    let on_click = Closure::<dyn FnMut()>::new(move || {
        url::copy_to_clipboard(&url::href());
        b.set_text_content(Some("Link copied"));
    });
    let _ = button.add_event_listener_with_callback("click", on_click.as_ref().unchecked_ref());
    // The button lives as long as the page.
    on_click.forget();
}
