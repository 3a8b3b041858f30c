//! Stacked memory bars against the GPU's usable memory: drawn by plotters in full when
//! their frame changes, moved in place when only their heights do ([`Stacked`],
//! [`super::inplace`]).

use super::inplace::{px, InPlace};
use super::svg::{annotate_rects, escape, Change, Mark, Parsed, Target};
use super::{frame, msg, rgb, Area, Bar, ChartSize, Coord, Xy, DASH_BLACK, NARROW};
use memfit_core::estimate::Component;
use memfit_core::units::Units;
use plotters::coord::CoordTranslate;
use plotters::prelude::*;

/// Width of the legend column in pixels.
const LEGEND_WIDTH: u32 = 210;

/// The y axis's top in the unit: the largest drawn total or the capacity, whichever is
/// higher, and 12 % room above it for the totals.
fn y_max(bars: &[Bar], capacity: u64, units: Units) -> f64 {
    let top = bars
        .iter()
        .filter(|b| !b.out_of_range())
        .map(Bar::total)
        .max()
        .unwrap_or(0)
        .max(capacity);
    (units.value(top) * 1.12).max(1e-9)
}

/// A bar's width in slots (one slot per bar).
fn bar_width(bars: usize) -> f64 {
    if bars > 4 {
        0.7
    } else {
        0.5
    }
}

/// A segment's hover title: bar, component and size (unescaped).
fn title(bar: &Bar, c: Component, bytes: u64, units: Units) -> String {
    format!("{}: {} ({})", bar.label, c.label(), units.format(bytes))
}

/// Renders stacked bars with a dashed line at `capacity` bytes.
///
/// Returns the SVG markup; on a drawing error (which plotters reports instead of
/// panicking) returns an SVG with the error message as text.
pub fn render_stacked(bars: &[Bar], capacity: u64, units: Units, size: ChartSize) -> String {
    frame(size, |root| {
        draw(root, bars, capacity, units, size).map(|_| ())
    })
}

/// Draws the chart; returns plotters' mapping of its plot (slots across, the unit's value up).
fn draw(
    root: &Area,
    bars: &[Bar],
    capacity: u64,
    units: Units,
    size: ChartSize,
) -> Result<Coord, String> {
    // Narrow charts (phones) drop the legend column; the page lists the legend in HTML.
    let legend_w = if size.width < NARROW {
        0
    } else {
        LEGEND_WIDTH.min(size.width / 2)
    };
    let (plot, legend) = root.split_horizontally(size.width - legend_w);
    let y_max = y_max(bars, capacity, units);
    let n = bars.len().max(1) as f64;
    let mut chart = ChartBuilder::on(&plot)
        .margin(12)
        .x_label_area_size(28)
        .y_label_area_size(64)
        .build_cartesian_2d(0f64..n, 0f64..y_max)
        .map_err(msg)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        // One faint line between labelled ones (plotters' default is up to 10: 80 extra
        // SVG lines the page re-inserts on every input).
        .max_light_lines(1)
        .x_labels(0)
        .y_desc(format!("per GPU ({})", units.symbol()))
        .y_label_formatter(&|y| format!("{y:.*}", super::tick_decimals(y_max)))
        .draw()
        .map_err(msg)?;
    let bar_width = bar_width(bars.len());
    for (i, bar) in bars.iter().enumerate() {
        draw_bar(&mut chart, &plot, i, bar, bar_width, y_max, units)?;
    }
    let cap = units.value(capacity);
    chart
        .draw_series(LineSeries::new(
            vec![(0.0, cap), (n, cap)],
            DASH_BLACK.style(),
        ))
        .map_err(msg)?;
    let coord = chart.as_coord_spec().clone();
    if legend_w > 0 {
        draw_legend(&legend, bars, cap, units)?;
    }
    Ok(coord)
}

/// Bar `i`: its label below, its segments bottom to top and its total above (or the words
/// "out of range" in place of a 16 EiB column).
fn draw_bar(
    chart: &mut Xy,
    plot: &Area,
    i: usize,
    bar: &Bar,
    bar_width: f64,
    y_max: f64,
    units: Units,
) -> Result<(), String> {
    use plotters::style::text_anchor::{HPos, Pos, VPos};
    let centre = Pos::new(HPos::Center, VPos::Bottom);
    let below = Pos::new(HPos::Center, VPos::Top);
    let x = i as f64 + 0.5;
    let (x0, x1) = (x - bar_width / 2.0, x + bar_width / 2.0);
    let (px, py) = chart.backend_coord(&(x, 0.0));
    plot.draw(&Text::new(
        bar.label.clone(),
        (px, py + 6),
        (FontFamily::SansSerif, 13)
            .into_font()
            .color(&BLACK)
            .pos(below),
    ))
    .map_err(msg)?;
    let text = |s: String, y: f64| {
        Text::new(
            s,
            (x, y),
            (FontFamily::SansSerif, 13)
                .into_font()
                .color(&BLACK)
                .pos(centre),
        )
    };
    if bar.out_of_range() {
        let words = "out of range (> 2^64 bytes)".to_string();
        chart
            .draw_series(std::iter::once(text(words, y_max * 0.5)))
            .map_err(msg)?;
        return Ok(());
    }
    let mut y0 = 0u64;
    for (c, bytes) in &bar.segments {
        let y1 = y0.saturating_add(*bytes);
        let (a, b) = (units.value(y0), units.value(y1));
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(x0, a), (x1, b)],
                rgb(*c).filled(),
            )))
            .map_err(msg)?;
        y0 = y1;
    }
    let total = units.value(bar.total());
    chart
        .draw_series(std::iter::once(text(
            format!("{total:.1}"),
            total + y_max * 0.01,
        )))
        .map_err(msg)?;
    Ok(())
}

/// The components the legend lists: those with bytes in any bar, out-of-range bars too.
fn legend_components(bars: &[Bar]) -> Vec<Component> {
    Component::ALL
        .into_iter()
        .filter(|c| {
            bars.iter()
                .any(|b| b.segments.iter().any(|(sc, v)| sc == c && *v > 0))
        })
        .collect()
}

/// The legend column: one swatch per component present, then the capacity line.
fn draw_legend(legend: &Area, bars: &[Bar], cap: f64, units: Units) -> Result<(), String> {
    let present = legend_components(bars);
    let style = (FontFamily::SansSerif, 13).into_font().color(&BLACK);
    let mut y = 20i32;
    for c in present.iter().rev() {
        legend
            .draw(&Rectangle::new([(4, y - 6), (16, y + 6)], rgb(*c).filled()))
            .map_err(msg)?;
        legend
            .draw(&Text::new(c.label(), (22, y - 7), style.clone()))
            .map_err(msg)?;
        y += 22;
    }
    legend
        .draw(&PathElement::new(vec![(2, y), (18, y)], DASH_BLACK.style()))
        .map_err(msg)?;
    legend
        .draw(&Text::new(
            format!("usable {cap:.1} {}", units.symbol()),
            (22, y - 7),
            style,
        ))
        .map_err(msg)?;
    Ok(())
}

/// Adds hover titles and click targets to the bar segments plotters drew: each
/// segment's `<rect>` (found in drawing order by its fill colour) gets
/// `data-component`, `data-bar` and a `<title>` with the component and its size.
/// The text is memfit's own labels and numbers, escaped.
pub fn annotate(svg: &str, bars: &[Bar], units: Units) -> String {
    let marks = bars
        .iter()
        .enumerate()
        .filter(|(_, bar)| !bar.out_of_range()) // drawn without segments
        .flat_map(|(bi, bar)| {
            bar.segments.iter().map(move |(c, bytes)| {
                let (r, g, b) = c.color();
                let tail = format!(
                    " data-component=\"{}\" data-bar=\"{bi}\"><title>{}</title></rect>",
                    c.as_str(),
                    escape(&title(bar, *c, *bytes, units)),
                );
                Mark {
                    target: Target::With(format!("fill=\"#{r:02X}{g:02X}{b:02X}\"")),
                    tail: Some(tail),
                }
            })
        });
    annotate_rects(svg, marks)
}

/// Everything a stacked chart's frame (axes, grid, labels, legend, capacity line) and the
/// place of each shape are drawn from. Two sets of bars of the same shape draw the same
/// elements with the same attributes except the segments' heights, their titles and the
/// totals (tested against full drawings).
#[derive(Clone, Debug, PartialEq)]
struct Shape {
    size: ChartSize,
    units: Units,
    capacity: u64,
    y_max: f64,
    /// Per bar, its label and its segments' components (`None`: out of range, no segments).
    bars: Vec<(String, Option<Vec<Component>>)>,
    /// The legend's components ([`legend_components`]): an out-of-range bar's count too.
    legend: Vec<Component>,
}

impl Shape {
    fn of(b: Bars) -> Shape {
        Shape {
            size: b.size,
            units: b.units,
            capacity: b.capacity,
            y_max: y_max(b.bars, b.capacity, b.units),
            bars: b
                .bars
                .iter()
                .map(|b| {
                    let parts =
                        (!b.out_of_range()).then(|| b.segments.iter().map(|s| s.0).collect());
                    (b.label.clone(), parts)
                })
                .collect(),
            legend: legend_components(b.bars),
        }
    }
}

/// What a stacked chart is drawn from.
#[derive(Clone, Copy, Debug)]
pub struct Bars<'a> {
    /// The bars, left to right.
    pub bars: &'a [Bar],
    /// The GPU's usable bytes (the dashed line).
    pub capacity: u64,
    /// The unit of the axis and the figures.
    pub units: Units,
    /// The drawing's size.
    pub size: ChartSize,
}

/// A stacked chart as the page shows it, kept to move it in place ([`super::inplace`]).
/// For bars of the same shape (a new sequence length, mostly: the axis is set by the
/// capacity) what moves is each segment's `y` and `height`, its hover title and the totals
/// (the figures the chart shows).
pub struct Stacked {
    shape: Shape,
    coord: Coord,
    /// Elements in the drawing, the root `<svg>` included.
    elements: usize,
    /// Per bar, the element number of its first segment's `<rect>` (`None`: out of range).
    first: Vec<Option<usize>>,
    /// The moving values as the page shows them.
    shown: Vec<Change>,
}

impl InPlace for Stacked {
    type Input<'a> = Bars<'a>;

    /// The bars drawn in full (annotated: [`annotate`]).
    fn draw(b: Bars) -> (String, Option<Stacked>) {
        let mut coord = None;
        let svg = frame(b.size, |root| {
            coord = Some(draw(root, b.bars, b.capacity, b.units, b.size)?);
            Ok(())
        });
        let parsed = Parsed::new(annotate(&svg, b.bars, b.units));
        let kept = coord.and_then(|coord| {
            let first = b
                .bars
                .iter()
                .enumerate()
                .map(|(i, b)| {
                    if b.out_of_range() || b.segments.is_empty() {
                        return Some(None);
                    }
                    parsed.first_with("data-bar", &i.to_string()).map(Some)
                })
                .collect::<Option<Vec<_>>>()?;
            let mut kept = Stacked {
                shape: Shape::of(b),
                coord,
                elements: parsed.elements()?,
                first,
                shown: Vec::new(),
            };
            kept.shown = kept.moving(b)?;
            Some(kept)
        });
        (parsed.into_string(), kept)
    }

    /// Per segment its `<rect>`'s `y` and `height` and its `<title>`'s text, per bar its
    /// total's `y` and text. Each segment's rect is followed by its title (two elements);
    /// the total follows the bar's last segment. Pixels as plotters places them: each
    /// corner mapped ([`CoordTranslate::translate`]), the rect from the smaller y down.
    fn moving(&self, b: Bars) -> Option<Vec<Change>> {
        if self.shape != Shape::of(b) {
            return None;
        }
        let units = self.shape.units;
        let w = bar_width(b.bars.len());
        let y = |x: f64, v: f64| self.coord.translate(&(x, v)).1;
        let mut out = Vec::new();
        for (i, (bar, first)) in b.bars.iter().zip(&self.first).enumerate() {
            let Some(mut el) = *first else { continue };
            let x = i as f64 + 0.5;
            let mut y0 = 0u64;
            for (c, bytes) in &bar.segments {
                let y1 = y0.saturating_add(*bytes);
                let (a, b) = (
                    y(x - w / 2.0, units.value(y0)),
                    y(x + w / 2.0, units.value(y1)),
                );
                out.push(px(el, "y", a.min(b)));
                out.push(px(el, "height", a.max(b) - a.min(b)));
                out.push(Change::Text {
                    el: el + 1,
                    text: title(bar, *c, *bytes, units),
                });
                el += 2;
                y0 = y1;
            }
            let total = units.value(bar.total());
            out.push(px(el, "y", y(x, total + self.shape.y_max * 0.01)));
            out.push(Change::Text {
                el,
                // As plotters writes a text: on a line of its own.
                text: format!("\n{total:.1}\n"),
            });
        }
        Some(out)
    }

    fn shown(&mut self) -> (&mut Vec<Change>, usize) {
        (&mut self.shown, self.elements)
    }
}
