//! `Estimate → SVG`: stacked memory bars against the GPU's usable memory.
//!
//! Pure: plotters' SVG backend writes into a `String`; the page shows it with
//! `inner_html`. plotters escapes all text it draws, and the only text here is
//! memfit's own labels and numbers.

pub mod present;

use crate::core::estimate::{Component, Estimate};
use crate::core::units::Units;
use plotters::prelude::*;

/// One bar: a configuration's per-GPU bytes by component.
#[derive(Clone, Debug, PartialEq)]
pub struct Bar {
    /// Label under the bar.
    pub label: String,
    /// Bytes per component, bottom to top (zero entries are skipped).
    pub segments: Vec<(Component, u64)>,
}

impl Bar {
    /// The GPU items of an estimate, grouped by component in stacking order.
    pub fn from_estimate(label: impl Into<String>, e: &Estimate) -> Bar {
        let segments = Component::ALL
            .iter()
            .map(|c| (*c, e.gpu_bytes_of(*c)))
            .filter(|(_, b)| *b > 0)
            .collect();
        Bar {
            label: label.into(),
            segments,
        }
    }
    /// Sum of the segments.
    pub fn total(&self) -> u64 {
        self.segments
            .iter()
            .fold(0u64, |a, (_, b)| a.saturating_add(*b))
    }
}

/// Chart size in pixels (the SVG scales through its `viewBox`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChartSize {
    /// Width.
    pub width: u32,
    /// Height.
    pub height: u32,
}

impl Default for ChartSize {
    fn default() -> Self {
        ChartSize {
            width: 760,
            height: 400,
        }
    }
}

fn rgb(c: Component) -> RGBColor {
    let (r, g, b) = c.color();
    RGBColor(r, g, b)
}

/// Renders stacked bars with a dashed line at `capacity` bytes.
///
/// Returns the SVG markup; on a drawing error (which plotters reports instead of
/// panicking) returns an SVG with the error message as text.
pub fn render_stacked(bars: &[Bar], capacity: u64, units: Units, size: ChartSize) -> String {
    let mut buf = String::new();
    let result = draw(&mut buf, bars, capacity, units, size);
    match result {
        Ok(()) => buf,
        Err(msg) => {
            let mut fallback = String::new();
            {
                let root = SVGBackend::with_string(&mut fallback, (size.width, size.height))
                    .into_drawing_area();
                let _ = root.draw_text(
                    &format!("chart error: {msg}"),
                    &("sans-serif", 14).into_text_style(&root),
                    (10, 20),
                );
            }
            fallback
        }
    }
}

/// Width of the legend column in pixels.
const LEGEND_WIDTH: u32 = 210;

fn draw(
    buf: &mut String,
    bars: &[Bar],
    capacity: u64,
    units: Units,
    size: ChartSize,
) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let root = SVGBackend::with_string(buf, (size.width, size.height)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let legend_w = LEGEND_WIDTH.min(size.width / 2);
    let (plot, legend) = root.split_horizontally(size.width - legend_w);
    let top = bars.iter().map(Bar::total).max().unwrap_or(0).max(capacity);
    let y_max = (units.value(top) * 1.12).max(1e-9);
    let n = bars.len().max(1) as f64;
    let mut chart = ChartBuilder::on(&plot)
        .margin(12)
        .x_label_area_size(28)
        .y_label_area_size(64)
        .build_cartesian_2d(0f64..n, 0f64..y_max)
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_desc(format!("per GPU ({})", units.label()))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .draw()
        .map_err(|e| err(&e))?;

    let centre = plotters::style::text_anchor::Pos::new(
        plotters::style::text_anchor::HPos::Center,
        plotters::style::text_anchor::VPos::Bottom,
    );
    let below = plotters::style::text_anchor::Pos::new(
        plotters::style::text_anchor::HPos::Center,
        plotters::style::text_anchor::VPos::Top,
    );
    let bar_width = if bars.len() > 4 { 0.7 } else { 0.5 };
    for (i, bar) in bars.iter().enumerate() {
        let (x0, x1) = (
            i as f64 + 0.5 - bar_width / 2.0,
            i as f64 + 0.5 + bar_width / 2.0,
        );
        let mut y0 = 0u64;
        for (c, bytes) in &bar.segments {
            let y1 = y0.saturating_add(*bytes);
            let (a, b) = (units.value(y0), units.value(y1));
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(x0, a), (x1, b)],
                    rgb(*c).filled(),
                )))
                .map_err(|e| err(&e))?;
            y0 = y1;
        }
        let total = units.value(bar.total());
        chart
            .draw_series(std::iter::once(Text::new(
                format!("{total:.1}"),
                (i as f64 + 0.5, total + y_max * 0.01),
                ("sans-serif", 13).into_font().color(&BLACK).pos(centre),
            )))
            .map_err(|e| err(&e))?;
        let (px, py) = chart.backend_coord(&(i as f64 + 0.5, 0.0));
        plot.draw(&Text::new(
            bar.label.clone(),
            (px, py + 6),
            ("sans-serif", 13).into_font().color(&BLACK).pos(below),
        ))
        .map_err(|e| err(&e))?;
    }
    let cap = units.value(capacity);
    chart
        .draw_series(DashedLineSeries::new(
            vec![(0.0, cap), (n, cap)],
            6,
            4,
            BLACK.stroke_width(2),
        ))
        .map_err(|e| err(&e))?;

    // Legend column: one swatch per component present, then the capacity line.
    let mut present: Vec<Component> = Vec::new();
    for c in Component::ALL {
        if bars
            .iter()
            .any(|b| b.segments.iter().any(|(sc, v)| *sc == c && *v > 0))
        {
            present.push(c);
        }
    }
    let style = ("sans-serif", 13).into_font().color(&BLACK);
    let mut y = 20i32;
    for c in present.iter().rev() {
        legend
            .draw(&Rectangle::new([(4, y - 6), (16, y + 6)], rgb(*c).filled()))
            .map_err(|e| err(&e))?;
        legend
            .draw(&Text::new(c.label(), (22, y - 7), style.clone()))
            .map_err(|e| err(&e))?;
        y += 22;
    }
    legend
        .draw(&PathElement::new(
            vec![(2, y), (18, y)],
            BLACK.stroke_width(2),
        ))
        .map_err(|e| err(&e))?;
    legend
        .draw(&Text::new(
            format!("usable {cap:.1} {}", units.label()),
            (22, y - 7),
            style,
        ))
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::estimate::estimate;
    use crate::core::scenario::{Scenario, Zero};

    #[test]
    fn one_rect_per_segment_and_a_capacity_line() {
        let mut s = Scenario::default();
        s.zero = Zero::Z3;
        s.gpus_per_node = 8;
        let e = estimate(&s);
        let bar = Bar::from_estimate("this config", &e);
        assert_eq!(bar.total(), e.per_gpu_bytes);
        let svg = render_stacked(
            &[bar.clone()],
            e.gpu.usable_bytes,
            Units::Gib,
            ChartSize::default(),
        );
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        for (c, _) in &bar.segments {
            let (r, g, b) = c.color();
            assert!(
                svg.contains(&format!("#{r:02X}{g:02X}{b:02X}")),
                "no fill for {c:?}"
            );
            assert!(svg.contains(c.label()), "no legend for {c:?}");
        }
        assert!(svg.contains("usable 79.6 GiB"));
    }

    #[test]
    fn empty_and_zero_inputs_do_not_panic() {
        let svg = render_stacked(
            &[],
            0,
            Units::Gb,
            ChartSize {
                width: 10,
                height: 10,
            },
        );
        assert!(svg.contains("<svg"));
    }
}
