//! The second wasm module's page ([`super::split`] says why there are two): every panel
//! below the breakdown chart, mounted into the first module's placeholder. Its settings, input
//! warnings and selected item are copies of the first module's, kept in step by the
//! calls [`set_settings`] and [`set_selected`]; a layout loaded here, or an item selected
//! here, is sent back through the two functions given to [`mount`].

use super::compare::{SeqCurve, ZeroComparison};
use super::explore::{use_explorer, BestLayouts, FitMapPanel};
use super::learn::LearnPanel;
use super::results::{ExplainPanel, ExportPanel, LedgerTable};
use super::serving::ServePanel;
use super::steptime::StepTimePanel;
use super::timeline::TimelinePanel;
use super::{accuracy::AccuracyPanel, near_once, staged};
use leptos::prelude::*;
use memfit_core::contract::query::{decode, encode};
use memfit_core::contract::report::estimate_with;
use memfit_core::contract::Settings;
use memfit_core::estimate::Warning;
use std::cell::Cell;

/// The copies, and what the first module last sent (a change that differs from it was
/// made here, and is sent back).
#[derive(Clone, Copy)]
struct Shared {
    settings: RwSignal<Settings>,
    warnings: RwSignal<Vec<Warning>>,
    selected: RwSignal<Option<usize>>,
    sent_settings: StoredValue<Settings>,
    sent_selected: StoredValue<Option<usize>>,
    /// How many times the page's op templates arrived or failed ([`set_templates`]): what
    /// reads the scenario computes again.
    templates: RwSignal<u32>,
}

thread_local! {
    static SHARED: Cell<Option<Shared>> = const { Cell::new(None) };
    /// Whether the page's fetch of the op templates has settled (installed or failed).
    static SETTLED: Cell<bool> = const { Cell::new(false) };
}

/// The op templates' text fetched by the page (`null`: the fetch failed), given before
/// [`mount`] or when they arrive later: installed in this instance and sent to the sweep's
/// worker ([`super::worker::set_templates`]); every panel computes again.
pub fn set_templates(text: wasm_bindgen::JsValue) {
    if let Some(t) = text.as_string() {
        let _ = memfit_core::opstream::install(&t);
        super::worker::set_templates(&text);
    }
    SETTLED.set(true);
    if let Some(shared) = SHARED.get() {
        shared.templates.update(|n| *n += 1);
    }
}

fn selection(i: i32) -> Option<usize> {
    usize::try_from(i).ok()
}

fn warnings_of(json: &str) -> Vec<Warning> {
    serde_json::from_str(json).unwrap_or_default()
}

/// Mounts the panels into `el`. `glue` is this module's JS glue (its explorer worker
/// loads it); `query`, `warnings` (JSON) and `selected` (-1 for none) the first module's
/// state; `on_select(index)` and `on_load(query)` report changes made here.
pub fn mount(
    el: web_sys::HtmlElement,
    glue: String,
    query: &str,
    warnings: &str,
    selected: i32,
    on_select: js_sys::Function,
    on_load: js_sys::Function,
) {
    super::panic::install();
    super::worker::set_glue(glue);
    let settings = decode(query).0;
    let warnings = warnings_of(warnings);
    let selected = selection(selected);
    leptos::mount::mount_to(el, move || {
        let shared = Shared {
            settings: RwSignal::new(settings.clone()),
            warnings: RwSignal::new(warnings),
            selected: RwSignal::new(selected),
            sent_settings: StoredValue::new(settings),
            sent_selected: StoredValue::new(selected),
            templates: RwSignal::new(0),
        };
        SHARED.set(Some(shared));
        // A change made here (a layout loaded, the fit map's colouring): back to the page.
        Effect::new(move |_| {
            shared.settings.with(|x| {
                if shared.sent_settings.with_value(|s| s != x) {
                    shared.sent_settings.set_value(x.clone());
                    let _ = on_load.call1(&wasm_bindgen::JsValue::NULL, &encode(x).into());
                }
            })
        });
        Effect::new(move |_| {
            let now = shared.selected.get();
            if shared.sent_selected.get_value() != now {
                shared.sent_selected.set_value(now);
                let i = now.map_or(-1, |i| i as i32);
                let _ = on_select.call1(&wasm_bindgen::JsValue::NULL, &i.into());
            }
        });
        view! { <Below shared /> }
    })
    .forget();
}

/// The first module's settings changed (its query string, and its input warnings as JSON).
pub fn set_settings(query: &str, warnings: &str) {
    let Some(shared) = SHARED.get() else { return };
    let next = decode(query).0;
    shared.sent_settings.set_value(next.clone());
    if shared.settings.with_untracked(|s| *s != next) {
        shared.settings.set(next);
    }
    let w = warnings_of(warnings);
    if shared.warnings.with_untracked(|now| *now != w) {
        shared.warnings.set(w);
    }
}

/// The first module's selected item changed (-1: none).
pub fn set_selected(i: i32) {
    let Some(shared) = SHARED.get() else { return };
    let next = selection(i);
    shared.sent_selected.set_value(next);
    if shared.selected.get_untracked() != next {
        shared.selected.set(next);
    }
}

/// The panels below the chart. The step time, the serving panel and the timeline first; the
/// fit map and the best layouts one frame later; the explanation and the ledger one more;
/// the comparisons, the tour, the accuracy tables and the exports when the reader scrolls
/// near them (or follows a link to one).
#[component]
fn Below(shared: Shared) -> impl IntoView {
    let Shared {
        settings,
        warnings,
        selected,
        templates,
        ..
    } = shared;
    let changed = Memo::new(move |_| settings.with(|x| x.scenario.clone()));
    // What reads the scenario reads it again when the op templates arrive.
    let scenario = Signal::derive(move || {
        templates.track();
        changed.get()
    });
    let estimate = Memo::new(move |_| scenario.with(|s| warnings.with(|w| estimate_with(s, w))));
    let units = Memo::new(move |_| settings.with(|x| x.view.units));
    let explorer = use_explorer(settings, templates.into());
    // A run that reads the op templates while the page fetches them: said until they arrive.
    let held = move || {
        templates.track();
        !SETTLED.get()
            && !memfit_core::opstream::available()
            && scenario.with(super::templates::reads)
    };
    let stage = staged(4);
    let at = move |n: u8| move || stage.get() >= n;
    let sentinel = NodeRef::<leptos::html::Div>::new();
    let near = near_once(sentinel, "600px");
    // A link to one of these panels (`?…#zero-compare`, the tour's links) lands on it once
    // it exists: the browser's own scroll to the fragment ran before this module loaded.
    Effect::new(move |done: Option<bool>| {
        if done == Some(true) {
            return true;
        }
        let built = at(4)() && near.get();
        if built {
            if let Some(id) = super::url::fragment() {
                request_animation_frame(move || super::scroll_to(&id));
            }
        }
        built
    });
    view! {
        <Show when=held>
            <p class="panel hint" role="status" data-testid="below-held">
                "Replaying the caching allocator on this run's op-level stream: the figures below are the flat fragmentation share until its templates have loaded."
            </p>
        </Show>
        <StepTimePanel scenario />
        <ServePanel estimate settings units />
        <TimelinePanel scenario units />
        <Show when=at(1)>
            <FitMapPanel settings explorer units />
            <BestLayouts settings explorer units />
        </Show>
        <Show when=at(2)>
            <ExplainPanel estimate units selected />
            <LedgerTable estimate units selected />
            <div class="lazy-sentinel" node_ref=sentinel aria-hidden="true"></div>
        </Show>
        <Show when=move || at(3)() && near.get()>
            <ZeroComparison scenario units />
            <SeqCurve scenario units />
        </Show>
        <Show when=move || at(4)() && near.get()>
            <LearnPanel units />
            <AccuracyPanel />
            <ExportPanel settings estimate />
        </Show>
    }
}
