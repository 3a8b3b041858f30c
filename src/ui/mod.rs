//! The Leptos page. Components are small, one per panel; all numbers come from
//! the Estimate; all URL access is in [`url`], all network access in `net`.

mod accuracy;
pub mod below;
mod compare;
mod engines;
mod explore;
mod fewest;
mod fields;
pub mod import;
mod learn;
mod net;
mod panels;
pub mod panic;
mod results;
mod serving;
mod split;
mod steptime;
mod templates;
mod timeline;
pub mod url;
pub mod worker;

use fewest::{use_min_gpus, MinGpusLine};
use leptos::prelude::*;
use memfit_core::contract::query::{decode, encode, get_key};
use memfit_core::contract::report::estimate_with;
use memfit_core::contract::Settings;
use memfit_core::estimate::Warning;
use panels::{ClusterPanel, ModelPanel, ServingInputs, WorkloadPanel, ZeroPanel};
use results::{ChartPanel, QuickBar, VerdictPanel, WarningsPanel};

/// The window's width in CSS pixels (1200 when unknown): charts pick their size by it.
fn viewport_width() -> f64 {
    window()
        .inner_width()
        .ok()
        .and_then(|v| v.as_f64())
        .unwrap_or(1200.0)
}

/// The scenario after the next paint, for the panels below the chart: an input's verdict
/// and main chart are painted first and the rest follows in the next task (issue 9: input
/// → result within one task; the deferred panels are at most one frame behind). Changes
/// within one frame coalesce into one update. While `mounted()` is false (those panels are
/// not loaded) it follows at once, without a frame and a task per keystroke: nothing reads
/// it then but a check that they are mounted.
fn after_paint<T: Clone + PartialEq + Send + Sync + 'static>(
    scenario: RwSignal<T>,
    mounted: impl Fn() -> bool + 'static,
) -> Signal<T> {
    let later = RwSignal::new(scenario.get_untracked());
    let pending = StoredValue::new(false);
    let catch_up = move || {
        pending.set_value(false);
        let now = scenario.get_untracked();
        if later.with_untracked(|l| *l != now) {
            later.set(now);
        }
    };
    Effect::new(move |_| {
        scenario.track();
        if pending.get_value() {
            return;
        }
        if !mounted() {
            catch_up();
            return;
        }
        pending.set_value(true);
        request_animation_frame(move || set_timeout(catch_up, std::time::Duration::ZERO));
    });
    later.into()
}

/// How many of the page's later stages are mounted: 0 at first, then one more per
/// painted frame up to `last`. The first task only builds the inputs, the verdict and
/// the main chart; each panel group below them gets a task of its own, so that no
/// single task of the page's start is long (Lighthouse's total blocking time).
fn staged(last: u8) -> Signal<u8> {
    let stage = RwSignal::new(0u8);
    fn next(stage: RwSignal<u8>, last: u8) {
        request_animation_frame(move || {
            set_timeout(
                move || {
                    stage.update(|s| *s += 1);
                    if stage.get_untracked() < last {
                        next(stage, last);
                    }
                },
                std::time::Duration::ZERO,
            )
        });
    }
    next(stage, last);
    stage.into()
}

/// Calls `f(intersecting)` whenever `el` enters or leaves the viewport grown by `margin`
/// (an `IntersectionObserver`; the element lives as long as the page).
fn observe(el: &web_sys::Element, margin: &str, mut f: impl FnMut(bool) + 'static) {
    use wasm_bindgen::{closure::Closure, JsCast};
    let cb = Closure::<dyn FnMut(js_sys::Array)>::new(move |entries: js_sys::Array| {
        if let Some(e) = entries
            .iter()
            .last()
            .and_then(|e| e.dyn_into::<web_sys::IntersectionObserverEntry>().ok())
        {
            f(e.is_intersecting());
        }
    });
    let init = web_sys::IntersectionObserverInit::new();
    init.set_root_margin(margin);
    if let Ok(io) =
        web_sys::IntersectionObserver::new_with_options(cb.as_ref().unchecked_ref(), &init)
    {
        io.observe(el);
    }
    cb.forget();
}

/// Becomes true (and stays true) once `node` comes within `margin` of the viewport, or at
/// once when the page opens on a `#fragment` (a link to a panel must find it): the panels
/// below the fold are not built at all until the reader scrolls towards them. Observed
/// from when `node` is in the page (a sentinel inside a panel group that mounts later is
/// watched from its final place).
fn near_once(node: NodeRef<leptos::html::Div>, margin: &'static str) -> RwSignal<bool> {
    let near = RwSignal::new(url::has_fragment());
    Effect::new(move |_| {
        if near.get_untracked() {
            return;
        }
        let Some(el) = node.get() else { return };
        observe(&el, margin, move |hit| {
            if hit && !near.get_untracked() {
                near.set(true);
            }
        });
    });
    near
}

/// Whether the `<details>` that fired a `toggle` event is now open.
fn details_open(ev: &web_sys::Event) -> bool {
    use wasm_bindgen::JsCast;
    ev.target()
        .and_then(|t| t.dyn_into::<web_sys::HtmlDetailsElement>().ok())
        .is_some_and(|d| d.open())
}

/// Whether a panel is on screen (or within 400 px of it), from an `IntersectionObserver`;
/// `before` until the observer first reports.
fn visibility(node: NodeRef<leptos::html::Section>, before: bool) -> Signal<bool> {
    let visible = RwSignal::new(before);
    Effect::new(move |_| {
        let Some(el) = node.get() else { return };
        observe(&el, "400px", move |v| visible.set(v));
    });
    visible.into()
}

/// [`visibility`], true until the observer first reports: a panel draws at once.
fn on_screen(node: NodeRef<leptos::html::Section>) -> Signal<bool> {
    visibility(node, true)
}

/// [`visibility`], false until the observer first reports: for work that can wait until a
/// panel is known to be seen (the layout sweep).
fn seen(node: NodeRef<leptos::html::Section>) -> Signal<bool> {
    visibility(node, false)
}

/// `src` while `visible`; frozen at its last value while the panel is off screen (it
/// catches up when it scrolls into view), so off-screen panels cost nothing per input.
fn while_visible<T: Clone + PartialEq + Send + Sync + 'static>(
    src: Signal<T>,
    visible: Signal<bool>,
) -> Signal<T> {
    Memo::new(move |prev: Option<&T>| match prev {
        Some(p) if !visible.get() => p.clone(),
        _ => src.get(),
    })
    .into()
}

/// Keeps `svg()` drawn in the figure of `node`. A new drawing of the same shape as the one
/// on the page (the same elements and attribute names: a redraw for a new input, mostly)
/// is applied as the attributes and texts that changed ([`crate::chart::svg::diff`]): the
/// browser neither parses the SVG again nor restyles its unchanged elements. Any other
/// drawing replaces the figure's contents.
fn draw_svg(node: NodeRef<leptos::html::Figure>, svg: impl Fn() -> String + 'static) {
    use crate::chart::svg::Parsed;
    // The drawing on the page is kept with its tags read, so a redraw reads only the new one.
    Effect::new(move |drawn: Option<Option<Parsed>>| {
        let old = drawn.flatten();
        // Nothing is drawn (or computed) before the figure is in the page.
        let Some(fig) = node.get() else { return old };
        let new = Parsed::new(svg());
        patch_svg(&fig, old.as_ref(), &new);
        Some(new)
    });
}

/// Keeps a chart drawn in the figure of `node`: `input` hands the chart's input (read from
/// the page's signals) to the drawing step, which moves the drawing in place when its shape
/// is the one on the page ([`crate::chart::inplace`]: no SVG is written or read per input)
/// or else draws it in full.
fn draw_in_place<K, F>(node: NodeRef<leptos::html::Figure>, input: F)
where
    K: crate::chart::inplace::InPlace + 'static,
    F: Fn(&mut dyn FnMut(K::Input<'_>)) + 'static,
{
    use crate::chart::inplace::{redraw, Redraw};
    Effect::new(move |kept: Option<Option<K>>| {
        let mut kept = kept.flatten();
        // Nothing is drawn (or computed) before the figure is in the page.
        let Some(fig) = node.get() else { return kept };
        if fig.first_element_child().is_none() {
            kept = None;
        }
        input(&mut |now| match redraw(&mut kept, now) {
            Redraw::Move { changes, elements } if apply_changes(&fig, &changes, elements) => {}
            // The figure does not hold the kept drawing (not expected): drawn in full.
            Redraw::Move { .. } => {
                let (svg, new) = K::draw(now);
                kept = new;
                fig.set_inner_html(&svg);
            }
            Redraw::Draw(svg) => fig.set_inner_html(&svg),
        });
        kept
    });
}

/// Turns the figure's SVG (drawn from `old`) into `new`: patched in place when the shapes
/// match, else replaced.
fn patch_svg(
    fig: &web_sys::Element,
    old: Option<&crate::chart::svg::Parsed>,
    new: &crate::chart::svg::Parsed,
) {
    use crate::chart::svg::diff_parsed;
    let drawn = fig.first_element_child().is_some();
    if old.is_some_and(|o| o.as_str() == new.as_str()) && drawn {
        return;
    }
    let patch = old.filter(|_| drawn).and_then(|o| diff_parsed(o, new));
    if let Some((changes, n)) = patch {
        if apply_changes(fig, &changes, n) {
            return;
        }
    }
    fig.set_inner_html(new.as_str());
}

/// Sets `changes` on the SVG in `fig` when it has `elements` elements (numbered in document
/// order, the root `<svg>` 0); `false`, with nothing changed, when it has not.
fn apply_changes(
    fig: &web_sys::Element,
    changes: &[crate::chart::svg::Change],
    elements: usize,
) -> bool {
    use crate::chart::svg::Change;
    use wasm_bindgen::JsCast;
    let Ok(list) = fig.query_selector_all("*") else {
        return false;
    };
    if list.length() as usize != elements {
        return false;
    }
    let el = |i: usize| {
        list.item(i as u32)
            .and_then(|x| x.dyn_into::<web_sys::Element>().ok())
    };
    for c in changes {
        match c {
            Change::Attr { el: i, name, value } => {
                if let Some(e) = el(*i) {
                    let _ = e.set_attribute(name, value);
                }
            }
            Change::Text { el: i, text } => {
                if let Some(e) = el(*i) {
                    e.set_text_content(Some(text));
                }
            }
        }
    }
    true
}

/// Scrolls the element with this id to the top of the screen (below the sticky bar:
/// `scroll-margin-top` in the CSS).
fn scroll_to(id: &str) {
    if let Some(el) = document().get_element_by_id(id) {
        el.scroll_into_view();
    }
}

/// Keys whose problems are shown next to the layout inputs.
const LAYOUT_KEYS: [&str; 7] = ["dp", "tp", "pp", "cp", "ep", "vpp", "microbatches"];

/// The canonical spelling of the opening link, once, after the first result is painted (a
/// same-document navigation costs 1–2 ms; later changes: `after_paint`). It writes the
/// settings of that moment, so an edit made before it cannot be overwritten.
fn write_canonical_link() {
    request_animation_frame(move || set_timeout(url::write_now, std::time::Duration::ZERO));
}

/// Every edit of `settings` after the opening one reaches the address bar ([`url::edited`]).
fn follow_edits(settings: RwSignal<Settings>) {
    url::follow(move || settings.with_untracked(encode));
    Effect::new(move |first: Option<()>| {
        settings.track();
        if first.is_some() {
            url::edited();
        }
    });
}

/// Warnings from the URL stay until the user edits the key they name.
fn keep_unedited_warnings(settings: RwSignal<Settings>, url_warnings: RwSignal<Vec<Warning>>) {
    let last = StoredValue::new(settings.get_untracked());
    Effect::new(move |_| {
        let now = settings.get();
        let before = last.get_value();
        url_warnings.update(|ws| ws.retain(|w| get_key(&now, &w.key) == get_key(&before, &w.key)));
        last.set_value(now);
    });
}

/// Below the breakdown chart, every other panel (the step time, the serving panel, the
/// timeline and all below it): a second wasm module ([`split`]), loaded when the `mid`
/// sentinel under the chart comes on screen or the reader selects an item to explain, mounted
/// into `below`, and kept in step with the page: its settings one paint later (as the address
/// bar), the input warnings, the selection. Returns `(mid, below)`. A 1440 × 1000 screen
/// shows the inputs, the verdict, the fewest-GPU line and the chart, which ends about 40 px
/// below it (issue 39: the first module holds only what the first screen draws), so the
/// sentinel has no margin: the second module loads on the first scroll.
fn use_below(
    settings: RwSignal<Settings>,
    later: Signal<Settings>,
    url_warnings: RwSignal<Vec<Warning>>,
    selected: RwSignal<Option<usize>>,
) -> (NodeRef<leptos::html::Div>, NodeRef<leptos::html::Div>) {
    let mid = NodeRef::<leptos::html::Div>::new();
    let near_mid = near_once(mid, "0px");
    Effect::new(move |_| {
        if selected.with(Option::is_some) && !near_mid.get_untracked() {
            near_mid.set(true);
        }
    });
    let below = NodeRef::<leptos::html::Div>::new();
    Effect::new(move |_| {
        let Some(el) = below.get() else { return };
        if near_mid.get() {
            load_below(el.into(), settings, url_warnings, selected);
        }
    });
    Effect::new(move |_| {
        later.with(|x| {
            url_warnings.with(|w| {
                if split::mounted() {
                    split::send_settings(&encode(x), &Warning::list_json(w))
                }
            })
        })
    });
    Effect::new(move |_| {
        let i = selected.get().map_or(-1, |i| i as i32);
        split::send_selected(i);
    });
    (mid, below)
}

/// Loads the panels below the chart into `el` (once), wired to the page's state.
fn load_below(
    el: web_sys::Element,
    settings: RwSignal<Settings>,
    url_warnings: RwSignal<Vec<Warning>>,
    selected: RwSignal<Option<usize>>,
) {
    let now = move || split::Snapshot {
        query: settings.with_untracked(encode),
        warnings: url_warnings.with_untracked(|w| Warning::list_json(w)),
        selected: selected.get_untracked().map_or(-1, |i| i as i32),
    };
    let on_select = move |i: i32| {
        let next = usize::try_from(i).ok();
        if selected.get_untracked() != next {
            selected.set(next);
        }
    };
    let on_load = move |q: String| {
        let next = decode(&q).0;
        if settings.with_untracked(|s| *s != next) {
            settings.set(next);
        }
    };
    split::load(el, now, on_select, on_load, templates::settled());
}

/// Mounts the page: the app after the static header of `index.html` (which paints
/// before the wasm loads), and wires that header's "Copy link" button.
pub fn start() {
    leptos::mount::mount_to_body(App);
    results::wire_copy_link();
}

/// The verdict's headline while the op templates its run reads are loading: no figure is
/// shown that would change when they arrive ([`templates`]).
const HELD_REPLAY: &str = "Replaying the caching allocator on this run's op-level stream…";
/// The same while the module of the ledger it reads loads ([`engines`]).
const HELD_LEDGER: &str =
    "Loading the estimator of inference, serving and the other tools' conventions…";

/// The verdict's headline while it is held (what its figures need is loading: the op
/// templates, the module of inference's, serving's and the conventions' ledgers), and why a
/// load failed.
fn held_or_failed(
    scenario: Memo<memfit_core::scenario::Scenario>,
    tpl: RwSignal<templates::Tpl>,
    eng: RwSignal<engines::Eng>,
) -> (Memo<Option<&'static str>>, Memo<Option<String>>) {
    let held = Memo::new(move |_| {
        scenario.with(|s| {
            if tpl.with(|t| templates::holds(t, s)) {
                Some(HELD_REPLAY)
            } else {
                eng.with(|e| engines::holds(e, s)).then_some(HELD_LEDGER)
            }
        })
    });
    let failed = Memo::new(move |_| {
        scenario.with(|s| {
            tpl.with(|t| templates::failure(t, s))
                .or_else(|| eng.with(|e| engines::failure(e, s)))
        })
    });
    (held, failed)
}

/// The whole page: state from the URL, inputs, results; the URL follows the state.
#[component]
pub fn App() -> impl IntoView {
    #[cfg(feature = "panic-test")]
    panic::maybe_panic_for_test();
    let (initial, url_warnings) = decode(&url::read_query());
    // Everything the link holds; the estimate reads only the scenario part.
    let settings = RwSignal::new(initial);
    let scenario = Memo::new(move |_| settings.with(|x| x.scenario.clone()));
    fields::share_mode(settings);
    // Warnings from the URL stay until the user edits the key they name.
    let url_warnings: RwSignal<Vec<Warning>> = RwSignal::new(url_warnings);
    // Below the fold: one paint later. The address bar: when input settles, and at once
    // when the page is hidden or left (`url::edited`, `url::follow`).
    let later = after_paint(settings, split::mounted);
    follow_edits(settings);
    write_canonical_link();
    keep_unedited_warnings(settings, url_warnings);
    // The op templates, fetched when the scenario may read them: the estimate computes again
    // when they arrive (or fail); until then the verdict of a run that reads them is held.
    let tpl = templates::use_templates(scenario);
    // The second module, when mounted, is handed them (or their failure) as they settle; one
    // mounted later is handed them before it mounts (`split::mount`).
    Effect::new(move |_| {
        if tpl.with(|t| matches!(t, templates::Tpl::Ready | templates::Tpl::Failed(_))) {
            split::send_templates(templates::outcome());
        }
    });
    // The module of inference's, serving's and the conventions' ledgers, loaded when the
    // scenario reads one: the same.
    let eng = engines::use_engines(scenario);
    let estimate = Memo::new(move |_| {
        tpl.track();
        eng.track();
        scenario.with(|s| url_warnings.with(|w| estimate_with(s, w)))
    });
    let (held, failed) = held_or_failed(scenario, tpl, eng);
    // Memos, not derived signals: what reads them reruns only when they change (the
    // units, in particular, are read by every number on the page).
    let warnings = Memo::new(move |_| estimate.with(|e| e.warnings.clone()));
    let layout_problems = Memo::new(move |_| {
        estimate.with(|e| {
            e.warnings
                .iter()
                .filter(|w| LAYOUT_KEYS.contains(&w.key.as_str()))
                .map(|w| w.message.clone())
                .collect()
        })
    });
    let units = Memo::new(move |_| settings.with(|x| x.view.units));
    let selected = RwSignal::new(None::<usize>);
    let min_gpus = use_min_gpus(settings, tpl);
    let stage = staged(1);
    let below_on = move || stage.get() >= 1;
    let (mid, below) = use_below(settings, later, url_warnings, selected);
    view! {
        <main class="layout">
            <QuickBar estimate units held />
            <div class="inputs" id="inputs">
                <ModelPanel settings />
                <WorkloadPanel settings />
                <ServingInputs settings />
                <ClusterPanel settings layout_problems />
                <ZeroPanel settings />
            </div>
            <div class="results">
                <WarningsPanel warnings />
                <VerdictPanel estimate units held failed />
                <MinGpusLine settings explorer=min_gpus />
                <ChartPanel estimate units selected held=Signal::derive(move || held.get().is_some()) />
                <Show when=below_on>
                    <div class="lazy-sentinel" node_ref=mid aria-hidden="true"></div>
                    <div class="below" node_ref=below data-testid="below"></div>
                </Show>
            </div>
        </main>
        <footer>
            "Formulas: DeepSpeed docs and code, ZeRO paper, Korthikanti et al., Megatron-LM; every ledger line names its source. "
            "Bytes are exact integers; GiB = 2^30 bytes, GB = 10^9 bytes. Works offline once loaded (the panels below the chart load when you first scroll to them)."
        </footer>
    }
}
