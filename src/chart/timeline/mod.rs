//! `Timeline → SVG`: one step's memory over time, stacked by component, with the
//! capacity line, the peak named, one line per other pipeline stage, and focusable
//! points that name their event (an SVG `<title>` and `aria-label` each).
//!
//! Kept on the page and moved in place for a new input of the same shape ([`Walked`]): the
//! areas, the other stages' lines and the points move; no text in the drawing carries a
//! figure (the peak and the points are named by event; the line under the chart gives
//! the figures), so none changes per input.

mod walked;

use super::inplace::InPlace;
use super::{msg, rgb, Area, ChartSize, Coord, Xy};
use memfit_core::estimate::Component;
use memfit_core::timeline::{Event, StepPhase, Timeline};
use memfit_core::units::Units;
use plotters::prelude::*;
pub use walked::Walked;

/// Points drawn per stage at most (buckets keep their largest total, so the peak stays).
pub const MAX_POINTS: usize = 160;
/// Focusable points at most.
const MAX_MARKERS: usize = 48;

/// The state after one event: its index in the stage and bytes by component.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// Index of the event within its stage's events.
    pub index: usize,
    /// Position in the step, 0–1 (the stage's events evenly spaced).
    pub x: f64,
    /// Bytes alive by component (`Component::ALL` order).
    pub by_component: [u64; 14],
    /// Their sum.
    pub total: u64,
}

/// The components the timeline's peak stage ever holds (for the legend), in stacking order.
pub fn components_present(t: &Timeline) -> Vec<Component> {
    let mut seen = [false; 14];
    for e in t.events.iter().filter(|e| e.stage == t.peak_stage) {
        seen[e.component.index()] |= e.delta_bytes != 0;
    }
    Component::ALL
        .into_iter()
        .filter(|c| seen[c.index()])
        .collect()
}

/// The events of one stage.
pub fn stage_events(t: &Timeline, stage: u32) -> Vec<&Event> {
    t.events.iter().filter(|e| e.stage == stage).collect()
}

/// The stage's state after every event, down-sampled to at most `max` samples:
/// each bucket of consecutive events keeps the one with the largest total, so the
/// stage's peak is always among the samples.
pub fn samples(events: &[&Event], max: usize) -> Vec<Sample> {
    let n = events.len();
    let mut all = Vec::with_capacity(n);
    let mut cur = [0u64; 14];
    for (i, e) in events.iter().enumerate() {
        let c = e.component.index();
        cur[c] = cur[c].saturating_add_signed(e.delta_bytes);
        all.push(Sample {
            index: i,
            x: if n > 1 {
                i as f64 / (n - 1) as f64
            } else {
                0.0
            },
            by_component: cur,
            total: e.total_bytes,
        });
    }
    if n <= max || max == 0 {
        return all;
    }
    let per = n.div_ceil(max);
    all.chunks(per)
        .filter_map(|ch| {
            ch.iter()
                .max_by_key(|s| (s.total, std::cmp::Reverse(s.index)))
                .cloned()
        })
        .collect()
}

/// An event named without its figures: its phase, layer and micro-batch, and what happens.
/// The drawing's points carry this name, which no figure changes (the line under the chart
/// adds the figures: [`describe`]).
pub fn name(e: &Event) -> String {
    let mut s = String::from(e.phase.as_str());
    if let Some(l) = e.layer {
        s.push_str(&format!(" · layer {l}"));
    }
    if let Some(m) = e.micro_batch {
        s.push_str(&format!(" · micro-batch {m}"));
    }
    format!("{s} · {}", e.what)
}

/// One line naming an event: what, where, how much, and the total after it.
pub fn describe(e: &Event, units: Units) -> String {
    let sign = if e.delta_bytes < 0 { "−" } else { "+" };
    format!(
        "{} ({sign}{}) → {}",
        name(e),
        units.format(e.delta_bytes.unsigned_abs()),
        units.format(e.total_bytes)
    )
}

fn phase_tint(p: StepPhase) -> RGBColor {
    match p {
        StepPhase::Forward | StepPhase::Prefill => RGBColor(0xe8, 0xf1, 0xfb),
        StepPhase::Backward | StepPhase::Decode => RGBColor(0xfb, 0xee, 0xe6),
        StepPhase::Optimizer => RGBColor(0xee, 0xe9, 0xf6),
        StepPhase::Baseline => RGBColor(0xf4, 0xf4, 0xf4),
    }
}

const STAGE_COLORS: [RGBColor; 4] = [
    RGBColor(0x22, 0x22, 0x22),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0x17, 0xa2, 0xb8),
    RGBColor(0x6a, 0x4c, 0x93),
];

/// A colour as plotters writes it in the SVG.
fn hex(c: RGBColor) -> String {
    format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
}

/// What a timeline is drawn from.
#[derive(Clone, Copy)]
pub struct Walk<'a> {
    /// The step's events.
    pub timeline: &'a Timeline,
    /// The GPU's usable bytes (the dashed line).
    pub capacity: u64,
    /// The unit of the axis.
    pub units: Units,
    /// The drawing's size.
    pub size: ChartSize,
}

/// Renders the timeline of `t`: the peak stage stacked by component, the other
/// listed stages as lines of their totals, the capacity dashed, the peak marked.
pub fn render_timeline(t: &Timeline, capacity: u64, units: Units, size: ChartSize) -> String {
    let walk = Walk {
        timeline: t,
        capacity,
        units,
        size,
    };
    Walked::draw(Some(walk)).0
}

/// The peak stage's events, their samples, the y axis's top (the unit's value) and the
/// peak's event (its index in the stage).
struct Plot<'t> {
    events: Vec<&'t Event>,
    pts: Vec<Sample>,
    y_max: f64,
    units: Units,
    peak: usize,
}

impl<'t> Plot<'t> {
    fn of(w: Walk<'t>) -> Plot<'t> {
        let t = w.timeline;
        let events = stage_events(t, t.peak_stage);
        let pts = samples(&events, MAX_POINTS);
        let top = t.peak_bytes.max(w.capacity);
        let peak = events
            .iter()
            .position(|e| e.total_bytes == t.peak_bytes)
            .unwrap_or(0);
        Plot {
            events,
            pts,
            y_max: (w.units.value(top) * 1.12).max(1e-9),
            units: w.units,
            peak,
        }
    }

    /// The components drawn as areas, in stacking order.
    fn parts(&self) -> Vec<Component> {
        Component::ALL
            .into_iter()
            .filter(|c| self.pts.iter().any(|s| s.by_component[c.index()] != 0))
            .collect()
    }

    /// The stacked areas, bottom to top in the ledger's stacking order: each its
    /// component and outline (its top left to right, then its floor back).
    fn areas(&self) -> Vec<(Component, Vec<(f64, f64)>)> {
        let mut below = vec![0f64; self.pts.len()];
        let mut out = Vec::new();
        for c in self.parts() {
            let k = c.index();
            let above: Vec<f64> = self
                .pts
                .iter()
                .zip(&below)
                .map(|(s, b)| b + self.units.value(s.by_component[k]))
                .collect();
            let mut poly: Vec<(f64, f64)> = self
                .pts
                .iter()
                .zip(&above)
                .map(|(s, y)| (s.x, *y))
                .collect();
            poly.extend(self.pts.iter().zip(&below).rev().map(|(s, y)| (s.x, *y)));
            out.push((c, poly));
            below = above;
        }
        out
    }

    /// Where the peak sits across the step (0 to 1).
    fn peak_x(&self) -> f64 {
        if self.events.len() > 1 {
            self.peak as f64 / (self.events.len() - 1) as f64
        } else {
            0.0
        }
    }

    /// The samples given focusable points: evenly chosen ones and the peak's.
    fn chosen(&self) -> Vec<usize> {
        let pts = &self.pts;
        let mut chosen: Vec<usize> = (0..pts.len())
            .step_by(pts.len().div_ceil(MAX_MARKERS).max(1))
            .collect();
        if let Some(k) = pts.iter().position(|s| s.index == self.peak) {
            chosen.push(k);
        }
        chosen.sort_unstable();
        chosen.dedup();
        chosen
    }
}

/// Another listed stage: a line of its totals, named at its top.
struct Other {
    stage: u32,
    color: RGBColor,
    line: Vec<(f64, f64)>,
    label_at: Option<(f64, f64)>,
}

/// The other listed stages (at most three).
fn others(p: &Plot, t: &Timeline) -> Vec<Other> {
    let listed = t
        .stages
        .iter()
        .filter(|s| s.listed && s.stage != t.peak_stage)
        .take(STAGE_COLORS.len() - 1);
    listed
        .enumerate()
        .map(|(n, st)| {
            let s = samples(&stage_events(t, st.stage), MAX_POINTS);
            let top = s.iter().max_by_key(|q| q.total);
            Other {
                stage: st.stage,
                color: STAGE_COLORS[n + 1],
                line: s.iter().map(|q| (q.x, p.units.value(q.total))).collect(),
                label_at: top.map(|q| (q.x.min(0.93), p.units.value(q.total) + p.y_max * 0.02)),
            }
        })
        .collect()
}

/// Draws the chart; returns plotters' mapping of the plot.
fn draw(
    root: &Area,
    p: &Plot,
    others: &[Other],
    t: &Timeline,
    capacity: u64,
) -> Result<Coord, String> {
    let mut chart = ChartBuilder::on(root)
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(64)
        .build_cartesian_2d(0f64..1f64, 0f64..p.y_max)
        .map_err(msg)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .disable_y_mesh()
        .x_labels(5)
        .x_label_formatter(&|x| format!("{:.0}%", x * 100.0))
        .x_desc("through the step (events, in order)")
        .y_desc(format!("per GPU ({})", p.units.symbol()))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .draw()
        .map_err(msg)?;
    phase_bands(&mut chart, p)?;
    for (c, poly) in p.areas() {
        chart
            .draw_series(std::iter::once(Polygon::new(poly, rgb(c).filled())))
            .map_err(msg)?;
    }
    for o in others {
        chart
            .draw_series(LineSeries::new(
                o.line.iter().copied(),
                o.color.stroke_width(2),
            ))
            .map_err(msg)?;
        if let Some(at) = o.label_at {
            let style = (FontFamily::SansSerif, 12).into_font().color(&o.color);
            chart
                .draw_series(std::iter::once(Text::new(
                    format!("stage {}", o.stage),
                    at,
                    style,
                )))
                .map_err(msg)?;
        }
    }
    capacity_line(&mut chart, p, capacity)?;
    peak_line(&mut chart, p, t)?;
    Ok(chart.as_coord_spec().clone())
}

/// Phase bands behind the areas.
fn phase_bands(chart: &mut Xy, p: &Plot) -> Result<(), String> {
    let pts = &p.pts;
    let mut start = 0usize;
    for i in 1..=pts.len() {
        let ph = |k: usize| p.events[pts[k].index].phase;
        if i == pts.len() || ph(i) != ph(start) {
            let x0 = if start == 0 { 0.0 } else { pts[start].x };
            let x1 = if i == pts.len() { 1.0 } else { pts[i].x };
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(x0, 0.0), (x1, p.y_max)],
                    phase_tint(ph(start)).filled(),
                )))
                .map_err(msg)?;
            start = i;
        }
    }
    Ok(())
}

/// The usable memory, dashed, with its figure.
fn capacity_line(chart: &mut Xy, p: &Plot, capacity: u64) -> Result<(), String> {
    let cap = p.units.value(capacity);
    chart
        .draw_series(LineSeries::new(
            vec![(0.0, cap), (1.0, cap)],
            super::DASH_BLACK.style(),
        ))
        .map_err(msg)?;
    let small = (FontFamily::SansSerif, 12).into_font().color(&BLACK);
    chart
        .draw_series(std::iter::once(Text::new(
            format!("usable {cap:.1} {}", p.units.symbol()),
            (0.005, cap + p.y_max * 0.035),
            small,
        )))
        .map_err(msg)?;
    Ok(())
}

/// The peak's name in the drawing: its phase, layer and stage (the figure is the verdict's
/// and the line's under the chart).
fn peak_label(p: &Plot, t: &Timeline) -> Option<String> {
    let e = p.events.get(p.peak)?;
    let mut label = format!("peak — {}", e.phase.as_str());
    if let Some(l) = e.layer {
        label.push_str(&format!(", layer {l}"));
    }
    if t.stages.len() > 1 {
        label.push_str(&format!(", stage {}", t.peak_stage));
    }
    Some(label)
}

/// The peak, a dashed red line named by its phase, layer and stage.
fn peak_line(chart: &mut Xy, p: &Plot, t: &Timeline) -> Result<(), String> {
    let px = p.peak_x();
    let red = RGBColor(0xc8, 0x3b, 0x4a);
    chart
        .draw_series(LineSeries::new(
            vec![(px, 0.0), (px, p.y_max)],
            super::DASH_PEAK.style(),
        ))
        .map_err(msg)?;
    let Some(label) = peak_label(p, t) else {
        return Ok(());
    };
    let anchor_x = if px > 0.6 {
        (px - 0.42).max(0.0)
    } else {
        px + 0.01
    };
    chart
        .draw_series(std::iter::once(Text::new(
            label,
            (anchor_x, p.y_max * 0.96),
            (FontFamily::SansSerif, 13).into_font().color(&red),
        )))
        .map_err(msg)?;
    Ok(())
}

/// A sample's point in pixels.
fn point(coord: &Coord, p: &Plot, s: &Sample) -> (i32, i32) {
    coord.translate(&(s.x, p.units.value(s.total)))
}

/// Focusable markers, each naming its event ([`name`]); the line with `id="tl-event"`
/// describes the one focused with its figures.
fn markers(coord: &Coord, p: &Plot) -> String {
    let mut out = String::new();
    for k in p.chosen() {
        let s = &p.pts[k];
        let (cx, cy) = point(coord, p, s);
        let text = xml_escape(&name(p.events[s.index]));
        let class = if s.index == p.peak {
            "tl-pt tl-peak"
        } else {
            "tl-pt"
        };
        out.push_str(&format!(
            r#"<circle class="{class}" cx="{cx}" cy="{cy}" r="5" tabindex="0" role="img" aria-label="{text}" aria-describedby="tl-event" data-event="{}"><title>{text}</title></circle>"#,
            s.index
        ));
    }
    out
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use memfit_core::scenario::{Scenario, Zero};
    use memfit_core::timeline::timeline;

    #[test]
    fn samples_keep_the_peak_and_sum_to_the_totals() {
        let mut s = Scenario::default();
        s.cluster.gpus_per_node = memfit_core::scenario::count(8);
        s.sharding = memfit_core::scenario::Sharding::Zero(Zero::Z3);
        s.workload.microbatches = memfit_core::scenario::count(4);
        let t = timeline(&s).unwrap();
        let ev = stage_events(&t, 0);
        for max in [10, 50, MAX_POINTS, 100_000] {
            let pts = samples(&ev, max);
            assert!(pts.len() <= max.max(ev.len().min(max)));
            assert!(pts.iter().any(|p| p.total == t.peak_bytes), "max {max}");
            for p in &pts {
                assert_eq!(p.by_component.iter().sum::<u64>(), p.total);
            }
        }
    }

    #[test]
    fn chart_names_the_peak_and_every_marker() {
        let mut s = Scenario::default();
        s.cluster.gpus_per_node = memfit_core::scenario::count(8);
        s.sharding = memfit_core::scenario::Sharding::Zero(Zero::Z3);
        let t = timeline(&s).unwrap();
        let svg = render_timeline(&t, 80 << 30, Units::Gib, ChartSize::default());
        // Named by its event; the figure is the verdict's (no text in the drawing moves).
        assert!(svg.contains("peak — backward, layer 31"), "{}", &svg[..200]);
        assert!(!svg.contains("41.50"));
        assert!(svg.contains(r#"class="tl-pt tl-peak""#));
        assert!(
            svg.contains(
                "backward · layer 31 · micro-batch 0 · all-gather the layer&apos;s parameters"
            ) || svg.contains(
                "backward · layer 31 · micro-batch 0 · all-gather the layer's parameters"
            )
        );
        assert!(svg.matches("<title>").count() <= MAX_MARKERS + 2);
    }
}
