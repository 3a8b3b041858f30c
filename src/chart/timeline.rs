//! `Timeline → SVG`: one step's memory over time, stacked by component, with the
//! capacity line, the peak named, one line per other pipeline stage, and focusable
//! points that name their event (an SVG `<title>` and `aria-label` each).

use super::{frame, msg, rgb, Area, ChartSize, Xy};
use memfit_core::estimate::Component;
use memfit_core::timeline::{Event, StepPhase, Timeline};
use memfit_core::units::Units;
use plotters::prelude::*;

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

/// One line naming an event: what, where, how much, and the total after it.
pub fn describe(e: &Event, units: Units) -> String {
    let mut s = String::from(e.phase.as_str());
    if let Some(l) = e.layer {
        s.push_str(&format!(" · layer {l}"));
    }
    if let Some(m) = e.micro_batch {
        s.push_str(&format!(" · micro-batch {m}"));
    }
    let sign = if e.delta_bytes < 0 { "−" } else { "+" };
    format!(
        "{s} · {} ({sign}{}) → {}",
        e.what,
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

/// Renders the timeline of `t`: the peak stage stacked by component, the other
/// listed stages as lines of their totals, the capacity dashed, the peak marked.
pub fn render_timeline(t: &Timeline, capacity: u64, units: Units, size: ChartSize) -> String {
    let mut markers = String::new();
    let mut buf = frame(size, |root| {
        markers = draw(root, t, capacity, units)?;
        Ok(())
    });
    // Focusable points with their event named: appended inside the root <svg>.
    if let Some(end) = buf.rfind("</svg>") {
        buf.insert_str(end, &markers);
    }
    buf
}

/// The peak stage's events, their samples, and the y axis's top (the unit's value).
struct Plot<'t> {
    events: Vec<&'t Event>,
    pts: Vec<Sample>,
    y_max: f64,
    units: Units,
}

fn draw(root: &Area, t: &Timeline, capacity: u64, units: Units) -> Result<String, String> {
    let events = stage_events(t, t.peak_stage);
    let pts = samples(&events, MAX_POINTS);
    let top = t.peak_bytes.max(capacity);
    let y_max = (units.value(top) * 1.12).max(1e-9);
    let p = Plot {
        events,
        pts,
        y_max,
        units,
    };
    let mut chart = ChartBuilder::on(root)
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(64)
        .build_cartesian_2d(0f64..1f64, 0f64..y_max)
        .map_err(msg)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .disable_y_mesh()
        .x_labels(5)
        .x_label_formatter(&|x| format!("{:.0}%", x * 100.0))
        .x_desc("through the step (events, in order)")
        .y_desc(format!("per GPU ({})", units.symbol()))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .draw()
        .map_err(msg)?;
    phase_bands(&mut chart, &p)?;
    stacked_areas(&mut chart, &p)?;
    other_stages(&mut chart, &p, t)?;
    capacity_line(&mut chart, &p, capacity)?;
    let peak = p
        .events
        .iter()
        .position(|e| e.total_bytes == t.peak_bytes)
        .unwrap_or(0);
    peak_line(&mut chart, &p, t, peak)?;
    Ok(markers(&chart, &p, peak))
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

/// Stacked areas, bottom to top in the ledger's stacking order.
fn stacked_areas(chart: &mut Xy, p: &Plot) -> Result<(), String> {
    let pts = &p.pts;
    let mut below = vec![0f64; pts.len()];
    for c in Component::ALL {
        let k = c.index();
        if pts.iter().all(|p| p.by_component[k] == 0) {
            continue;
        }
        let above: Vec<f64> = pts
            .iter()
            .zip(&below)
            .map(|(s, b)| b + p.units.value(s.by_component[k]))
            .collect();
        let mut poly: Vec<(f64, f64)> = pts.iter().zip(&above).map(|(s, y)| (s.x, *y)).collect();
        poly.extend(pts.iter().zip(&below).rev().map(|(s, y)| (s.x, *y)));
        chart
            .draw_series(std::iter::once(Polygon::new(poly, rgb(c).filled())))
            .map_err(msg)?;
        below = above;
    }
    Ok(())
}

/// The other listed stages (at most three), each a line of its total, named at its top.
fn other_stages(chart: &mut Xy, p: &Plot, t: &Timeline) -> Result<(), String> {
    let others = t
        .stages
        .iter()
        .filter(|s| s.listed && s.stage != t.peak_stage)
        .take(STAGE_COLORS.len() - 1);
    for (n, st) in others.enumerate() {
        let s = samples(&stage_events(t, st.stage), MAX_POINTS);
        let color = STAGE_COLORS[n + 1];
        chart
            .draw_series(LineSeries::new(
                s.iter().map(|q| (q.x, p.units.value(q.total))),
                color.stroke_width(2),
            ))
            .map_err(msg)?;
        if let Some(top) = s.iter().max_by_key(|q| q.total) {
            chart
                .draw_series(std::iter::once(Text::new(
                    format!("stage {}", st.stage),
                    (top.x.min(0.93), p.units.value(top.total) + p.y_max * 0.02),
                    (FontFamily::SansSerif, 12).into_font().color(&color),
                )))
                .map_err(msg)?;
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

/// The peak, a dashed red line named by its figure, phase, layer and stage.
fn peak_line(chart: &mut Xy, p: &Plot, t: &Timeline, peak: usize) -> Result<(), String> {
    let px = peak_x(p, peak);
    let red = RGBColor(0xc8, 0x3b, 0x4a);
    chart
        .draw_series(LineSeries::new(
            vec![(px, 0.0), (px, p.y_max)],
            super::DASH_PEAK.style(),
        ))
        .map_err(msg)?;
    let Some(e) = p.events.get(peak) else {
        return Ok(());
    };
    let mut label = format!(
        "peak {} — {}",
        p.units.format(t.peak_bytes),
        e.phase.as_str()
    );
    if let Some(l) = e.layer {
        label.push_str(&format!(", layer {l}"));
    }
    if t.stages.len() > 1 {
        label.push_str(&format!(", stage {}", t.peak_stage));
    }
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

/// Where event `peak` sits across the step (0 to 1).
fn peak_x(p: &Plot, peak: usize) -> f64 {
    if p.events.len() > 1 {
        peak as f64 / (p.events.len() - 1) as f64
    } else {
        0.0
    }
}

/// Focusable markers: evenly chosen samples plus the peak, each naming its event.
fn markers(chart: &Xy, p: &Plot, peak: usize) -> String {
    let pts = &p.pts;
    let mut chosen: Vec<usize> = (0..pts.len())
        .step_by(pts.len().div_ceil(MAX_MARKERS).max(1))
        .collect();
    if let Some(k) = pts.iter().position(|s| s.index == peak) {
        chosen.push(k);
    }
    chosen.sort_unstable();
    chosen.dedup();
    let mut out = String::new();
    for k in chosen {
        let s = &pts[k];
        let (cx, cy) = chart.backend_coord(&(s.x, p.units.value(s.total)));
        let text = xml_escape(&describe(p.events[s.index], p.units));
        let class = if s.index == peak {
            "tl-pt tl-peak"
        } else {
            "tl-pt"
        };
        out.push_str(&format!(
            r#"<circle class="{class}" cx="{cx}" cy="{cy}" r="5" tabindex="0" role="img" aria-label="{text}" data-event="{}"><title>{text}</title></circle>"#,
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
        assert!(
            svg.contains("peak 41.50 GiB — backward, layer 31"),
            "{}",
            &svg[..200]
        );
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
