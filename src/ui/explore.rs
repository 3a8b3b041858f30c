//! Which layouts fit: the fit map and the best layouts (the fewest-GPU line: [`super::fewest`]).
//!
//! The sweep runs outside the keystroke's task: in a Web Worker ([`super::worker`])
//! when the browser can run one, so the main thread only posts the query and draws the
//! answer; otherwise on the main thread, from the next animation frame, in slices of a
//! few milliseconds between browser tasks, so typing is never queued behind it. The
//! sweep only reruns when a setting it depends on changes (`sweep_key`), so loading a
//! layout from the map moves the outline without a new sweep. While a newer sweep is
//! pending, the panel is marked as updating instead of showing old numbers as current.

use super::fields::KeyField;
use super::worker::{self, Kind, LISTED};
use crate::chart::fitmap::{annotate_fit_map, cell_summary, render_fit_map};
use crate::chart::ChartSize;
use crate::present::{
    aria_sort, best_layouts_count, best_layouts_hint, fit_map_hint, next_sort, sorted_layouts,
    speed_text, SortBy,
};
use leptos::prelude::*;
use memfit_core::contract::query::encode;
use memfit_core::contract::Settings;
use memfit_core::explore::{sweep_key, Candidate, Sweep, SweepJob};
use memfit_core::scenario::Scenario;
use memfit_core::units::Units;
use std::sync::Arc;
use std::time::Duration;
use wasm_bindgen::JsCast;

/// Rows the table shows until asked for all.
const SHOWN: usize = 10;

/// One sweep and the scenario (its `sweep_key`) it was run for.
#[derive(Clone, Debug, PartialEq)]
pub struct Explored {
    /// The sweep's input.
    pub key: Scenario,
    /// What it found.
    pub sweep: Sweep,
    /// Time the sweep took in this browser, milliseconds: in the worker, or the sum of
    /// its main-thread slices when no worker could run.
    pub ms: f64,
    /// Whether it ran in the worker.
    pub off_main: bool,
}

/// The sweep's state (the fit map's and the best-layouts table's): the latest sweep, and
/// whether it is behind the scenario.
#[derive(Clone, Copy)]
pub struct Explorer {
    /// The latest finished sweep.
    pub result: RwSignal<Option<Arc<Explored>>>,
    /// The key the page wants.
    pub key: Memo<Scenario>,
    /// Whether the fit map / the best-layouts table is known to be on screen: a sweep is
    /// requested only while one of them is (they catch up when they scroll into view; a
    /// page that opens with them below the fold sweeps nothing).
    pub map_on: RwSignal<bool>,
    pub table_on: RwSignal<bool>,
}

impl Explorer {
    /// Whether the shown sweep is not the current scenario's. The panels grey it out only
    /// while on screen: off screen what they show is frozen, and toggling a filter (and its
    /// transition) on two hidden panels twice per input cost a style pass and frames.
    pub fn stale(&self) -> bool {
        let k = self.key.get();
        self.result.with(|r| r.as_ref().is_none_or(|e| e.key != k))
    }
}

/// Schedules sweeps (see the module docs): in the explorer's worker when the browser
/// can run one, else on the main thread in slices after the verdict is painted.
pub fn use_explorer(settings: RwSignal<Settings>, templates: Signal<u32>) -> Explorer {
    let result = RwSignal::new(None::<Arc<Explored>>);
    let key = Memo::new(move |_| settings.with(|x| sweep_key(&x.scenario)));
    let (map_on, table_on) = (RwSignal::new(false), RwSignal::new(false));
    // Whether a panel that shows the sweep is on screen (tracked: one scrolling into view
    // requests the sweep its key still lacks).
    let wanted = Memo::new(move |_| map_on.get() || table_on.get());
    Effect::new(move |before: Option<u32>| {
        let k = key.get();
        // The op templates arrived: a sweep from before them is stale (it may read them).
        let t = templates.get();
        if before.is_some_and(|b| b != t) {
            result.set(None);
        }
        let have = result.with_untracked(|r| r.as_ref().is_some_and(|e| e.key == k));
        if !wanted.get() || have {
            return t;
        }
        let alive = move |k: Scenario| {
            move || key.with_untracked(|now| *now == k) && templates.get_untracked() == t
        };
        let set_sweep = move |k: Scenario, sweep: Sweep, ms: f64, off_main: bool| {
            result.set(Some(Arc::new(Explored {
                key: k,
                sweep,
                ms,
                off_main,
            })));
        };
        let (k1, alive1) = (k.clone(), alive(k.clone()));
        let here = move || {
            request_animation_frame(move || {
                let job = SweepJob::new(&k1, Some(LISTED), false);
                run_sliced(job, SweepJob::step, alive1, move |job, ms| {
                    set_sweep(k1, job.finish(), ms, false)
                });
            })
        };
        let (k2, alive2, fallback) = (k.clone(), alive(k.clone()), here.clone());
        let sent = worker::request(
            Kind::Sweep,
            encode(&k.into()),
            Box::new(move |json, ms| match serde_json::from_str::<Sweep>(&json) {
                Ok(sweep) if alive2() => set_sweep(k2, sweep, ms, true),
                Ok(_) => {}
                Err(_) => fallback(),
            }),
            None,
        );
        if !sent {
            here();
        }
        t
    });
    Explorer {
        result,
        key,
        map_on,
        table_on,
    }
}

/// Longest slice of work per task, milliseconds (a frame is 16.7 ms).
const SLICE_MS: f64 = 6.0;
/// Layouts per `step` call inside a slice.
const STEP_LAYOUTS: u64 = 400;

/// Runs a resumable job in slices of about `SLICE_MS` between browser tasks, so that
/// input events are handled in between; drops it as soon as `alive()` is false (a
/// newer input made it stale); calls `done(job, busy_ms)` at the end.
pub(super) fn run_sliced<J: 'static>(
    job: J,
    step: fn(&mut J, u64) -> bool,
    alive: impl Fn() -> bool + 'static,
    done: impl FnOnce(J, f64) + 'static,
) {
    struct Task<J, A, D> {
        job: J,
        step: fn(&mut J, u64) -> bool,
        alive: A,
        done: D,
        busy: f64,
    }
    fn tick<J: 'static, A: Fn() -> bool + 'static, D: FnOnce(J, f64) + 'static>(
        mut t: Task<J, A, D>,
    ) {
        if !(t.alive)() {
            return;
        }
        let t0 = now_ms();
        let mut finished = false;
        while now_ms() - t0 < SLICE_MS {
            if (t.step)(&mut t.job, STEP_LAYOUTS) {
                finished = true;
                break;
            }
        }
        t.busy += now_ms() - t0;
        if finished {
            // The result (sorting, rendering) in a task of its own, after the last slice.
            set_timeout(
                move || {
                    if (t.alive)() {
                        let Task {
                            job, done, busy, ..
                        } = t;
                        done(job, busy);
                    }
                },
                Duration::ZERO,
            );
        } else {
            set_timeout(move || tick(t), Duration::ZERO);
        }
    }
    tick(Task {
        job,
        step,
        alive,
        done,
        busy: 0.0,
    });
}

fn now_ms() -> f64 {
    window().performance().map_or(0.0, |p| p.now())
}

/// Loads a layout into the calculator (and so the URL).
fn load(settings: RwSignal<Settings>, l: &Candidate) {
    settings.update(|x| l.apply(&mut x.scenario));
}

/// The query string that loads `l` over the current scenario (for plain links). Panels pass
/// their settings frozen while off screen ([`super::while_visible`]): ten links re-encoded
/// per input cost 0.24 ms where no one sees them.
fn href(settings: Signal<Settings>, l: &Candidate) -> String {
    settings.with(|x| {
        let mut t = x.clone();
        l.apply(&mut t.scenario);
        t.view.solve = memfit_core::scenario::Solve::None;
        format!("?{}", encode(&t))
    })
}

fn fit_map_size() -> ChartSize {
    if super::viewport_width() < 600.0 {
        ChartSize {
            width: 360,
            height: 560,
        }
    } else {
        ChartSize {
            width: 900,
            height: 330,
        }
    }
}

/// The cell index (`data-cell`) of the fit map's element at `target`, if any.
fn cell_index(target: Option<web_sys::EventTarget>) -> Option<usize> {
    target
        .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
        .and_then(|el| el.closest("[data-cell]").ok().flatten())
        .and_then(|el| el.get_attribute("data-cell"))
        .and_then(|v| v.parse::<usize>().ok())
}

/// "64 GPUs: 6,218 layouts evaluated in 20.9 ms (in a background worker), 3,698 fit."
fn sweep_counts(r: Option<&Explored>) -> String {
    match r {
        None => "Sweeping every layout…".to_string(),
        Some(e) => format!(
            "{} GPUs: {} layouts evaluated in {:.1} ms{}, {} fit.",
            e.sweep.gpus,
            memfit_core::units::group_digits(e.sweep.evaluated),
            e.ms,
            if e.off_main {
                " (in a background worker)"
            } else {
                ""
            },
            memfit_core::units::group_digits(e.sweep.fitting)
        ),
    }
}

/// The fit map's text alternative: the cells where a layout fits.
fn fit_map_summary(r: Option<&Explored>) -> String {
    r.map_or(String::new(), |e| {
        let fit: Vec<String> = e
            .sweep
            .cells
            .iter()
            .filter(|c| c.best.is_some())
            .map(|c| format!("ZeRO-{} TP {} PP {}", c.zero.number(), c.tp, c.pp))
            .collect();
        format!(
            "Fit map. Cells where a layout fits: {}.",
            if fit.is_empty() {
                "none".into()
            } else {
                fit.join(", ")
            }
        )
    })
}

/// The fit map as table rows: each cell's best layout (or the closest), with a load link.
fn fit_table_rows(
    settings: RwSignal<Settings>,
    linked: Signal<Settings>,
    e: &Explored,
    u: Units,
) -> impl IntoView {
    e.sweep
        .cells
        .iter()
        .filter_map(|c| {
            let l = c.best.or(c.closest)?;
            let text = cell_summary(c, u, e.sweep.inference, &e.key);
            Some(view! {
                <tr class:over=c.best.is_none()>
                    <td>{format!("ZeRO-{}", c.zero.number())}</td><td class="num">{c.tp}</td><td class="num">{c.pp}</td>
                    <td>{text}</td>
                    <td><a href=move || href(linked, &l) on:click=move |ev| { ev.prevent_default(); load(settings, &l); }>"load"</a></td>
                </tr>
            })
        })
        .collect_view()
}

/// The fit map's annotated SVG, rebuilt when the sweep, the outlined cell, the colouring
/// or the units change.
fn fit_map_svg(
    shown: Signal<Option<Arc<Explored>>>,
    current: Signal<(memfit_core::scenario::Zero, u32, u32)>,
    colour: Memo<memfit_core::contract::FitColour>,
    units: Signal<Units>,
) -> Memo<Option<String>> {
    Memo::new(move |_| {
        shown.with(|r| {
            r.as_ref().map(|e| {
                let u = units.get();
                annotate_fit_map(
                    &render_fit_map(
                        &e.sweep,
                        current.get(),
                        e.key.usable_bytes(),
                        u,
                        colour.get(),
                        fit_map_size(),
                    ),
                    &e.sweep,
                    &e.key,
                    u,
                )
            })
        })
    })
}

/// Loads the best layout of the cell under `target` (the closest one when nothing fits).
fn pick_cell(
    settings: RwSignal<Settings>,
    shown: Signal<Option<Arc<Explored>>>,
    target: Option<web_sys::EventTarget>,
) {
    let cell = cell_index(target).and_then(|i| {
        shown.with_untracked(|r| r.as_ref().and_then(|e| e.sweep.cells.get(i).copied()))
    });
    if let Some(l) = cell.and_then(|c| c.best.or(c.closest)) {
        load(settings, &l);
    }
}

/// The fit map: every TP × PP per ZeRO stage, coloured by the best headroom; a click
/// (or Enter) on a cell loads its best layout (the closest one when nothing fits).
#[component]
pub fn FitMapPanel(
    settings: RwSignal<Settings>,
    explorer: Explorer,
    #[prop(into)] units: Signal<Units>,
) -> impl IntoView {
    // Off screen, the map, its outline and its table stay as they were (no SVG rebuilt
    // per input) and catch up when the panel scrolls into view.
    let node = NodeRef::<leptos::html::Section>::new();
    let visible = super::on_screen(node);
    let seen = super::seen(node);
    Effect::new(move |_| explorer.map_on.set(seen.get()));
    let shown: Signal<Option<Arc<Explored>>> =
        super::while_visible(explorer.result.into(), visible);
    let linked = super::while_visible(settings.into(), visible);
    let current = super::while_visible(
        Signal::derive(move || {
            settings.with(|x| {
                let l = x.scenario.layout();
                (x.scenario.zero(), l.tp.get(), l.pp.get())
            })
        }),
        visible,
    );
    let colour = Memo::new(move |_| settings.with(|x| x.view.fitmap));
    let svg = fit_map_svg(shown, current, colour, units);
    let pick = move |target: Option<web_sys::EventTarget>| pick_cell(settings, shown, target);
    let on_click = move |ev: web_sys::MouseEvent| pick(ev.target());
    let on_key = move |ev: web_sys::KeyboardEvent| {
        if ev.key() == "Enter" || ev.key() == " " {
            ev.prevent_default();
            pick(ev.target());
        }
    };
    let counts = move || shown.with(|r| sweep_counts(r.as_deref()));
    let summary = move || shown.with(|r| fit_map_summary(r.as_deref()));
    let table_open = RwSignal::new(false);
    let rows = move || {
        if !table_open.get() {
            return None;
        }
        shown.with(|r| {
            r.as_ref()
                .map(|e| fit_table_rows(settings, linked, e, units.get()))
        })
    };
    let fig = NodeRef::<leptos::html::Figure>::new();
    super::draw_svg(fig, move || svg.get().unwrap_or_default());
    view! {
        <section class="panel fitmap" node_ref=node class:stale=move || visible.get() && explorer.stale() data-testid="explorer"
            data-sweep-ms=move || explorer.result.with(|r| r.as_ref().map(|e| format!("{:.2}", e.ms)))
            data-evaluated=move || explorer.result.with(|r| r.as_ref().map(|e| e.sweep.evaluated.to_string()))>
            <h2>"Which layouts fit"</h2>
            <p class="hint" data-testid="explore-counts">{counts}<span class="updating">" Updating…"</span></p>
            <div class="field inline"><KeyField settings name="fitmap" /></div>
            <figure class="chart map" role="group" aria-label=summary data-testid="fit-map"
                on:click=on_click on:keydown=on_key node_ref=fig></figure>
            <p class="hint">{move || shown.with(|r| fit_map_hint(r.as_ref().is_some_and(|e| e.sweep.inference), colour.get() == memfit_core::contract::FitColour::Speed))}</p>
            <details on:toggle=move |ev| table_open.set(super::details_open(&ev))>
                <summary>"The fit map as a table"</summary>
                <div class="table-wrap">
                    <table data-testid="fit-table">
                        <thead><tr><th>"ZeRO"</th><th>"TP"</th><th>"PP"</th><th>"best layout"</th><th></th></tr></thead>
                        <tbody>{rows}</tbody>
                    </table>
                </div>
            </details>
        </section>
    }
}

/// One row of the best layouts: its rank, layout, speed, bytes and load link, each cell
/// following `row` (the layout at this position of the sorted list).
#[component]
fn BestRow(
    row: Signal<Option<(usize, Candidate)>>,
    settings: RwSignal<Settings>,
    linked: Signal<Settings>,
    units: Signal<Units>,
) -> impl IntoView {
    // The layout on the swept settings: names the expert parallelism they carry.
    let describe = move |l: &Candidate| settings.with_untracked(|x| l.describe_on(&x.scenario));
    let cell = move |f: fn(&Candidate, Units) -> String| {
        move || {
            row.get()
                .map(|(_, l)| f(&l, units.get()))
                .unwrap_or_default()
        }
    };
    view! {
        <tr>
            <td class="num">{move || row.get().map(|(i, _)| i + 1)}</td>
            <td>{move || row.get().map(|(_, l)| describe(&l))}</td>
            <td class="num">{cell(|l, _| speed_text(l).0)}</td>
            <td class="num">{cell(|l, _| speed_text(l).1)}</td>
            <td class="num">{cell(|l, u| u.format(l.per_gpu_bytes))}</td>
            <td class="num">{cell(|l, u| u.format(l.headroom_bytes.max(0) as u64))}</td>
            <td class="num">{cell(|l, u| u.format(l.comm.total()))}</td>
            <td class="num">{move || row.get().map(|(_, l)| l.batch)}</td>
            <td><a data-testid="load-layout"
                href=move || row.get().map(|(_, l)| href(linked, &l)).unwrap_or_default()
                on:click=move |ev| {
                    ev.prevent_default();
                    if let Some((_, l)) = row.get_untracked() {
                        load(settings, &l);
                    }
                }>"load"</a></td>
        </tr>
    }
}

/// The best fitting layouts (at most 50), sortable, each with a load link.
#[component]
pub fn BestLayouts(
    settings: RwSignal<Settings>,
    explorer: Explorer,
    #[prop(into)] units: Signal<Units>,
) -> impl IntoView {
    let sort = RwSignal::new((SortBy::Rank, true));
    let show_all = RwSignal::new(false);
    let node = NodeRef::<leptos::html::Section>::new();
    let visible = super::on_screen(node);
    let seen = super::seen(node);
    Effect::new(move |_| explorer.table_on.set(seen.get()));
    let shown: Signal<Option<Arc<Explored>>> =
        super::while_visible(explorer.result.into(), visible);
    let linked = super::while_visible(settings.into(), visible);
    let header = move |col: SortBy, label: &'static str| {
        view! {
            <th aria-sort=move || aria_sort(sort.get(), col)>
                <button class="sort" on:click=move |_| sort.update(|s| *s = next_sort(*s, col))>{label}</button>
            </th>
        }
    };
    // The rows as positions whose cells follow the data: a new sweep (a keystroke, mostly)
    // sets the texts that changed, and a row whose layout and bytes stayed but whose speed
    // moved (a bandwidth edit) shows the new speed (keyed by layout, it kept the old one).
    let rows = Memo::new(move |_| {
        let shown_n = (!show_all.get()).then_some(SHOWN);
        shown.with(|r| {
            r.as_ref()
                .map(|e| sorted_layouts(&e.sweep.layouts, sort.get(), shown_n))
                .unwrap_or_default()
        })
    });
    let count = move || {
        let listed = if show_all.get() { usize::MAX } else { SHOWN };
        shown.with(|r| {
            r.as_ref()
                .map(|e| best_layouts_count(e.sweep.fitting, e.sweep.layouts.len(), listed))
        })
    };
    view! {
        <section class="panel best" node_ref=node class:stale=move || visible.get() && explorer.stale() data-testid="best-layouts">
            <h2>"Best fitting layouts"</h2>
            <p class="hint">{best_layouts_hint()}</p>
            <div class="table-wrap">
                <table>
                    <thead><tr>
                        {header(SortBy::Rank, "#")}<th>"layout"</th>
                        {header(SortBy::Speed, "tokens/s per GPU")}<th>"MFU"</th>
                        {header(SortBy::Peak, "peak per GPU")}{header(SortBy::Headroom, "headroom")}
                        {header(SortBy::Comm, "sent per GPU per step")}{header(SortBy::Batch, "micro-batch")}<th></th>
                    </tr></thead>
                    <tbody>
                        <For each=move || 0..rows.with(Vec::len) key=|n| *n let:n>
                            <BestRow row=Signal::derive(move || rows.with(|r| r.get(n).copied())) settings linked units />
                        </For>
                    </tbody>
                </table>
            </div>
            <p class="hint">
                {count}
                <button data-testid="show-all-layouts" on:click=move |_| show_all.update(|v| *v = !*v)>
                    {move || if show_all.get() { "Show the best 10".to_string() } else { format!("Show the best {LISTED}") }}
                </button>
            </p>
        </section>
    }
}
