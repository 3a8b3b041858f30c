//! The step timeline panel: memory through one step, stacked by component, the
//! peak named; hovering or focusing a point names its event.

use crate::chart::timeline::{components_present, describe, stage_events, Walk, Walked};
use crate::chart::ChartSize;
use leptos::prelude::*;
use memfit_core::scenario::{Mode, Scenario};
use memfit_core::timeline::{timeline, Timeline};
use memfit_core::units::Units;
use wasm_bindgen::JsCast;

fn size() -> ChartSize {
    if super::viewport_width() < 600.0 {
        ChartSize {
            width: 420,
            height: 320,
        }
    } else {
        ChartSize {
            width: 900,
            height: 380,
        }
    }
}

/// The event number (`data-event`: its index in the peak stage) of the point under the
/// pointer or focus, if any.
fn point_event(ev: &web_sys::Event) -> Option<usize> {
    ev.target()?
        .dyn_into::<web_sys::Element>()
        .ok()?
        .closest(".tl-pt")
        .ok()??
        .get_attribute("data-event")?
        .parse()
        .ok()
}

/// What the timeline's bands mean for a run of `mode`: training steps have a forward, a
/// backward and an optimizer step; an inference or serving request a prefill and a decode.
fn bands(mode: Mode) -> &'static str {
    match mode {
        Mode::Train => "Blue bands: forward; orange: backward; violet: optimizer step.",
        Mode::Infer | Mode::Serve => "Blue bands: prefill; orange: decode.",
    }
}

/// The line under the chart for a pipeline or several micro-batches: what the walk covers.
fn walked_line(t: &Timeline) -> Option<String> {
    (t.stages.len() > 1 || t.micro_batches_walked > 1).then(|| {
        format!(
            "{} pipeline stage(s) (lines: other stages' totals); {} micro-batch(es) walked per stage — the steady state repeats after.",
            t.stages.len(),
            t.micro_batches_walked
        )
    })
}

/// Event `i` of the peak stage described with its figures.
fn event_line(t: &Timeline, i: usize, units: Signal<Units>) -> Option<String> {
    stage_events(t, t.peak_stage)
        .get(i)
        .map(|e| describe(e, units.get_untracked()))
}

/// Keeps the walk drawn in `fig`, moved in place while its shape holds.
fn draw_walk(
    fig: NodeRef<leptos::html::Figure>,
    walk: Memo<Option<Timeline>>,
    scenario: Signal<Scenario>,
    units: Signal<Units>,
) {
    super::draw_in_place::<Walked, _>(fig, move |draw| {
        let (capacity, units, size) = (scenario.with(|s| s.usable_bytes()), units.get(), size());
        walk.with(|t| {
            draw(t.as_ref().map(|timeline| Walk {
                timeline,
                capacity,
                units,
                size,
            }))
        });
    });
}

/// Memory through one training step (or inference request), rank by rank.
#[component]
pub fn TimelinePanel(
    #[prop(into)] scenario: Signal<Scenario>,
    #[prop(into)] units: Signal<Units>,
) -> impl IntoView {
    let node = NodeRef::<leptos::html::Section>::new();
    let scenario = super::while_visible(scenario, super::on_screen(node));
    let walk = Memo::new(move |_| scenario.with(timeline));
    let peak_text = move || {
        walk.with(|t| match t {
            Some(t) => t
                .events
                .get(t.peak_event)
                .map(|e| format!("Peak: {}", describe(e, units.get())))
                .unwrap_or_default(),
            None => "No timeline: a figure is out of range, or the schedule is too long to walk (more than 250,000 layer passes).".into(),
        })
    };
    let hovered = RwSignal::new(None::<String>);
    Effect::new(move |_| {
        walk.track();
        hovered.set(None);
    });
    // Not a live region: the verdict already announces each input's peak; a focused point's
    // name is read out on focus, and this line, which then describes it, after it.
    let shown = move || hovered.get().unwrap_or_else(peak_text);
    let summary = move || {
        walk.with(|t| match t {
            Some(t) => format!(
                "Memory through one step: {} events; {}",
                t.events.len(),
                peak_text()
            ),
            None => peak_text(),
        })
    };
    let walked = move || walk.with(|t| t.as_ref().and_then(walked_line));
    let caption = move || scenario.with(|s| bands(s.workload.mode));
    // A point names its event with the figures of this walk (the drawing names it without).
    let name_point = move |ev: &web_sys::Event| {
        let line = point_event(ev).and_then(|i| walk.with(|t| event_line(t.as_ref()?, i, units)));
        if line.is_some() {
            hovered.set(line);
        }
    };
    let fig = NodeRef::<leptos::html::Figure>::new();
    draw_walk(fig, walk, scenario, units);
    view! {
        <section class="panel timeline" id="timeline" data-testid="timeline" node_ref=node>
            <h2>"One step, allocation by allocation"</h2>
            <p class="hint">{caption}" The stack is this rank's memory after each event; the red line is the peak, the same number as the verdict."</p>
            <figure class="chart" role="img" aria-label=summary data-testid="timeline-chart"
                on:mouseover=move |ev| name_point(&ev) on:focusin=move |ev| name_point(&ev)
                node_ref=fig></figure>
            <ul class="html-legend tl-legend" aria-hidden="true">
                {move || walk.with(|t| t.as_ref().map(components_present).unwrap_or_default()).into_iter().map(|c| {
                    let (r, g, b) = c.color();
                    view! { <li><span class="swatch" style:--swatch=format!("#{r:02x}{g:02x}{b:02x}")></span>{c.label()}</li> }
                }).collect_view()}
            </ul>
            <p class="tl-event" id="tl-event" data-testid="timeline-event">{shown}</p>
            <p class="hint">{walked}</p>
        </section>
    }
}
