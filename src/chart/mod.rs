//! `Estimate → SVG`: stacked memory bars against the GPU's usable memory.
//!
//! Pure: plotters' SVG backend writes into a `String`; the page shows it with
//! `inner_html`. plotters escapes all text it draws, and the only text here is
//! memfit's own labels and numbers.

pub mod fitmap;
pub mod inplace;
pub mod present;
mod stacked;
pub mod svg;
pub mod timeline;

pub use stacked::{annotate, render_stacked, Bars, Stacked};

use memfit_core::estimate::{Component, Estimate};
use memfit_core::units::{group_digits, Units};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

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
    /// Whether a segment (and so the total) is out of range: such a bar is drawn
    /// empty with the words "out of range", never as a 16 EiB column.
    pub fn out_of_range(&self) -> bool {
        self.total() == memfit_core::ledger::OUT_OF_RANGE
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

/// A plotters error as text.
pub(crate) fn msg<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

/// The drawing area every chart draws on.
pub(crate) type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

/// The one plotting frame the charts share: an SVG of `size` on white, handed to `draw`,
/// presented, and slimmed ([`svg::slim`]); a drawing error (which plotters reports instead of
/// panicking) gives an SVG that shows the message as text.
pub(crate) fn frame(size: ChartSize, draw: impl FnOnce(&Area) -> Result<(), String>) -> String {
    let mut buf = String::new();
    let drawn = {
        let root = SVGBackend::with_string(&mut buf, (size.width, size.height)).into_drawing_area();
        root.fill(&WHITE)
            .map_err(msg)
            .and_then(|()| draw(&root))
            .and_then(|()| root.present().map_err(msg))
    };
    match drawn {
        Ok(()) => svg::slim(&dashes(&buf)),
        Err(m) => error_svg(&m, size),
    }
}

/// A dashed line's look: its colour as drawn and as shown, and its dash and gap (px).
pub(crate) struct Dash {
    /// The colour it is drawn in: a near twin of `shown` that no other mark uses, so
    /// [`dashes`] can find the line in the SVG.
    marker: RGBColor,
    /// `#rrggbb` of the colour the line is shown in.
    shown: &'static str,
    /// `stroke-dasharray`.
    pattern: &'static str,
}

/// The capacity and level lines: black, 6 px dashes, 4 px gaps.
pub(crate) const DASH_BLACK: Dash = Dash {
    marker: RGBColor(0, 0, 1),
    shown: "#000000",
    pattern: "6 4",
};
/// The curve's marker: red, 4 px dashes, 4 px gaps.
pub(crate) const DASH_RED: Dash = Dash {
    marker: RGBColor(0xc8, 0x3b, 0x4b),
    shown: "#C83B4A",
    pattern: "4 4",
};
/// The timeline's peak: red, 4 px dashes, 3 px gaps.
pub(crate) const DASH_PEAK: Dash = Dash {
    marker: RGBColor(0xc8, 0x3b, 0x4c),
    shown: "#C83B4A",
    pattern: "4 3",
};
const DASHES: [&Dash; 3] = [&DASH_BLACK, &DASH_RED, &DASH_PEAK];

impl Dash {
    /// The style to draw the line in (a solid line in the marker colour, 2 px).
    pub(crate) fn style(&self) -> ShapeStyle {
        self.marker.stroke_width(2)
    }
}

/// `svg` with every line drawn in a [`Dash`]'s marker colour shown dashed: one element
/// with `stroke-dasharray`, where plotters' `DashedLineSeries` writes one `<polyline>` per
/// dash (48 for the capacity line of a 1,440 px chart, patched again on every input).
fn dashes(svg: &str) -> String {
    let mut out = svg.to_string();
    for d in DASHES {
        let RGBColor(r, g, b) = d.marker;
        let drawn = format!("stroke=\"#{r:02X}{g:02X}{b:02X}\"");
        if out.contains(&drawn) {
            out = out.replace(
                &drawn,
                &format!("stroke=\"{}\" stroke-dasharray=\"{}\"", d.shown, d.pattern),
            );
        }
    }
    out
}

/// An SVG that shows a drawing error as text (plotters reports errors instead of panicking).
fn error_svg(msg: &str, size: ChartSize) -> String {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (size.width, size.height)).into_drawing_area();
        let _ = root.draw_text(
            &format!("chart error: {msg}"),
            &(FontFamily::SansSerif, 14).into_text_style(&root),
            (10, 20),
        );
    }
    out
}

/// Charts narrower than this have no legend column.
pub const NARROW: u32 = 560;

/// Two linear f64 axes mapped to the drawing's pixels (plotters' own mapping, kept to
/// move a drawing's shapes without drawing it again: [`stacked::Stacked`]).
pub(crate) type Coord =
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>;

/// A chart on two linear f64 axes (the bars: slots across, the unit's value up; the timeline).
pub(crate) type Xy<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Coord>;

/// One point of a memory curve.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    /// The swept value (sequence length or batch).
    pub x: u64,
    /// Per-GPU bytes.
    pub bytes: u64,
}

/// Per-GPU memory against a swept input (log₂ x axis), with the capacity line and
/// the largest value that fits marked.
pub fn render_curve(
    points: &[Point],
    capacity: u64,
    max_fit: Option<u64>,
    x_label: &str,
    units: Units,
    size: ChartSize,
) -> String {
    // Points out of range (> 2^64 bytes) are not drawn: they are not figures.
    let pts: Vec<(f64, f64)> = points
        .iter()
        .filter(|p| p.bytes != memfit_core::ledger::OUT_OF_RANGE)
        .map(|p| (p.x as f64, units.value(p.bytes)))
        .collect();
    let cap = units.value(capacity);
    let curve = Curve {
        points: &pts,
        x_label,
        y_label: &format!("per GPU ({})", units.symbol()),
        level: (cap, &format!("usable {cap:.1} {}", units.symbol())),
        marker: max_fit
            .filter(|m| *m >= 1)
            .map(|m| (m as f64, format!("max that fits: {}", group_digits(m)))),
    };
    render_log_x(&curve, size)
}

/// Concurrent requests against `max_len` (log₂ x), with the line at one request (below
/// it, one request of that length does not fit) and the chosen `max_len` marked.
pub fn render_concurrency(points: &[(u64, f64)], chosen: u64, size: ChartSize) -> String {
    let pts: Vec<(f64, f64)> = points.iter().map(|p| (p.0 as f64, p.1)).collect();
    let curve = Curve {
        points: &pts,
        x_label: "max_len (tokens per request, log scale)",
        y_label: "concurrent requests",
        level: (1.0, "one request"),
        marker: Some((chosen as f64, format!("max_len {}", group_digits(chosen)))),
    };
    render_log_x(&curve, size)
}

/// A curve on a log₂ x axis with a dashed horizontal level and a dashed vertical marker:
/// memory against sequence length and batch, and a serving engine's concurrency against
/// `max_len` (one drawing routine, one instantiation of plotters' chart code).
struct Curve<'a> {
    points: &'a [(f64, f64)],
    x_label: &'a str,
    y_label: &'a str,
    /// `(y, label)` of the horizontal line (the capacity, one request).
    level: (f64, &'a str),
    /// `(x, label)` of the vertical marker.
    marker: Option<(f64, String)>,
}

fn render_log_x(c: &Curve, size: ChartSize) -> String {
    frame(size, |root| draw_log_x(root, c))
}

/// Decimals a y tick needs on an axis up to `max`: plotters steps its ticks by 1, 2 or 5
/// times a power of ten, about five of them, so an axis up to 1.1 (llama.cpp's one
/// request) ticks every 0.2 and needs one decimal ("0.2", not "0, 0, 0, 1, 1, 1"); from 5
/// up, none.
pub(crate) fn tick_decimals(max: f64) -> usize {
    if max.is_nan() || max <= 0.0 {
        return 0;
    }
    (-(max / 5.0).log10()).ceil().clamp(0.0, 4.0) as usize
}

/// A log₂ axis tick: 512, 1K, 2M.
fn pow2_label(x: &f64) -> String {
    let v = x.round() as u64;
    if v >= 1 << 20 {
        format!("{}M", v >> 20)
    } else if v >= 1024 {
        format!("{}K", v >> 10)
    } else {
        v.to_string()
    }
}

fn draw_log_x(root: &Area, c: &Curve) -> Result<(), String> {
    let lo = c.points.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
    let lo = if lo.is_finite() { lo.max(1.0) } else { 1.0 };
    let hi = c
        .points
        .iter()
        .map(|p| p.0)
        .fold(2.0f64, f64::max)
        .max(lo * 2.0);
    let top = c.points.iter().map(|p| p.1).fold(c.level.0, f64::max);
    let y_max = (top * 1.1).max(1e-9);
    let mut chart = ChartBuilder::on(root)
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(64)
        .build_cartesian_2d((lo..hi).log_scale().base(2.0), 0f64..y_max)
        .map_err(msg)?;
    chart
        .configure_mesh()
        .max_light_lines(1)
        .x_desc(c.x_label)
        .y_desc(c.y_label)
        .x_label_formatter(&pow2_label)
        .y_label_formatter(&|y| format!("{y:.*}", tick_decimals(y_max)))
        .draw()
        .map_err(msg)?;
    let blue = RGBColor(0x3b, 0x6e, 0xc8);
    chart
        .draw_series(LineSeries::new(
            c.points.iter().copied(),
            blue.stroke_width(3),
        ))
        .map_err(msg)?;
    chart
        .draw_series(c.points.iter().map(|&p| Circle::new(p, 3, blue.filled())))
        .map_err(msg)?;
    let (level, label) = c.level;
    chart
        .draw_series(LineSeries::new(
            vec![(lo, level), (hi, level)],
            DASH_BLACK.style(),
        ))
        .map_err(msg)?;
    let style = (FontFamily::SansSerif, 13).into_font().color(&BLACK);
    chart
        .draw_series(std::iter::once(Text::new(
            label.to_string(),
            (lo, level + y_max * 0.02),
            style.clone(),
        )))
        .map_err(msg)?;
    let Some((m, text)) = &c.marker else {
        return Ok(());
    };
    let x = m.clamp(lo, hi);
    let red = RGBColor(0xc8, 0x3b, 0x4a);
    chart
        .draw_series(LineSeries::new(
            vec![(x, 0.0), (x, y_max)],
            DASH_RED.style(),
        ))
        .map_err(msg)?;
    // Right of the line in the axis' left half, left of it in the right half: the label
    // stays inside the plot (a max_len of 163,840 at the right end was cut off).
    let right_half = (x / lo).ln() > 0.5 * (hi / lo).ln();
    let (label, pos) = if right_half {
        (format!("{text} "), Pos::new(HPos::Right, VPos::Top))
    } else {
        (format!(" {text}"), Pos::new(HPos::Left, VPos::Top))
    };
    chart
        .draw_series(std::iter::once(Text::new(
            label,
            (x, y_max * 0.95),
            style.color(&red).pos(pos),
        )))
        .map_err(msg)?;
    Ok(())
}

#[cfg(test)]
mod tests;
