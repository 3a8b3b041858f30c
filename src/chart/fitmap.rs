//! `Sweep → SVG`: the fit map. One panel per ZeRO stage, TP across, PP down; each
//! cell coloured by the most headroom any layout of that cell leaves (over CP, SP,
//! offload, recomputation and micro-batch).
//!
//! Panels are ZeRO stages (not recomputation modes) because the stage is the first
//! choice people make and the one the teaching is about: reading across the four
//! panels shows what each stage buys at every TP × PP, while recomputation is a
//! within-cell option that the best layout of the cell already picks.

use super::svg::{annotate_rects, escape, Mark, Target};
use super::{frame, msg, Area, ChartSize};
use memfit_core::contract::FitColour;
use memfit_core::explore::{Cell, Sweep};
use memfit_core::scenario::{Scenario, Zero};
use memfit_core::units::Units;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// The colour of a cell: green (deeper with more headroom) when a layout fits, red
/// when none does, grey when the cell has no valid layout.
pub fn cell_color(c: &Cell, usable: u64) -> RGBColor {
    match c.headroom() {
        None => RGBColor(0xe4, 0xe4, 0xe4),
        Some(h) if h < 0 => RGBColor(0xd9, 0x4a, 0x3d),
        Some(h) => {
            // Fraction of the GPU left free, 0..1 → light to deep green.
            let f = (h as f64 / usable.max(1) as f64).clamp(0.0, 1.0);
            let mix = |light: f64, deep: f64| (light + (deep - light) * f.sqrt()) as u8;
            RGBColor(
                mix(200.0, 0x1b as f64),
                mix(235.0, 0x7a as f64),
                mix(200.0, 0x3a as f64),
            )
        }
    }
}

/// The fastest fitting layout's predicted tokens per second per GPU of every cell.
fn fastest(sweep: &Sweep) -> f64 {
    sweep
        .cells
        .iter()
        .filter_map(|c| c.best.map(|b| b.tokens_per_s_per_gpu))
        .fold(0.0, f64::max)
}

/// The colour of a cell by speed: green deeper with the share of the fastest cell's
/// tokens per second; red and grey as by headroom.
pub fn speed_color(c: &Cell, top: f64) -> RGBColor {
    match (c.best, c.headroom()) {
        (Some(b), _) if b.tokens_per_s_per_gpu > 0.0 && top > 0.0 => {
            let f = (b.tokens_per_s_per_gpu / top).clamp(0.0, 1.0);
            let mix = |light: f64, deep: f64| (light + (deep - light) * f * f) as u8;
            RGBColor(
                mix(200.0, 0x1b as f64),
                mix(235.0, 0x7a as f64),
                mix(200.0, 0x3a as f64),
            )
        }
        _ => cell_color(c, u64::MAX),
    }
}

/// A cell's label: the best headroom in the chosen units, signed; by speed, the fastest
/// layout's tokens per second per GPU.
fn cell_text(c: &Cell, units: Units, colour: FitColour) -> String {
    if colour == FitColour::Speed {
        if let Some(b) = c.best.filter(|b| b.tokens_per_s_per_gpu > 0.0) {
            return format!("{:.0}", b.tokens_per_s_per_gpu);
        }
    }
    match c.headroom() {
        None => "–".into(),
        Some(h) => {
            let v = units.value(h.unsigned_abs());
            let sign = if h < 0 { "−" } else { "+" };
            if v >= 100.0 {
                format!("{sign}{v:.0}")
            } else {
                format!("{sign}{v:.1}")
            }
        }
    }
}

/// The ZeRO stages shown: those with at least one valid layout (inference has only
/// ZeRO-0: ZeRO does not apply there), or ZeRO-0 alone when nothing is valid.
pub fn panels(sweep: &Sweep) -> Vec<u8> {
    let v: Vec<u8> = (0..4u8)
        .filter(|z| {
            sweep
                .cells
                .iter()
                .any(|c| c.zero.number() == *z && c.closest.is_some())
        })
        .collect();
    if v.is_empty() {
        vec![0]
    } else {
        v
    }
}

/// Layout of `n` panels: side by side when wide, two per row when narrow.
fn grid(size: ChartSize, n: u32) -> (u32, u32) {
    let n = n.clamp(1, 4);
    if size.width >= 700 {
        (n, 1)
    } else {
        (n.min(2), n.div_ceil(2))
    }
}

/// A training panel's title: the ZeRO stage, or under PyTorch what shards that much
/// (DDP, ZeroRedundancyOptimizer, FSDP's SHARD_GRAD_OP and FULL_SHARD / HYBRID_SHARD).
fn panel_title(stage: u8, pytorch: bool) -> &'static str {
    match (stage, pytorch) {
        (0, true) => "DDP (ZeRO-0)",
        (1, true) => "ZeRO-1 (ZeroRedundancyOpt.)",
        (2, true) => "FSDP grad_op (≈ZeRO-2)",
        (3, true) => "FSDP full (≈ZeRO-3)",
        (0, _) => "ZeRO-0",
        (1, _) => "ZeRO-1",
        (2, _) => "ZeRO-2",
        _ => "ZeRO-3",
    }
}

/// Renders the fit map. `current` is the scenario's own (ZeRO stage, TP, PP), outlined.
///
/// The cells are the first filled rectangles after the background, drawn panel by
/// panel, row by row, column by column (the order of `Sweep::cells`); `annotate_fit_map`
/// relies on that order.
pub fn render_fit_map(
    sweep: &Sweep,
    current: (Zero, u32, u32),
    usable: u64,
    units: Units,
    colour: FitColour,
    size: ChartSize,
) -> String {
    frame(size, |root| {
        draw(root, sweep, current, usable, units, colour, size)
    })
}

/// The map's geometry in pixels: panels in a grid, cells within a panel.
struct Grid {
    /// The ZeRO stages shown, one panel each.
    shown: Vec<u8>,
    cols: i32,
    /// Panel width and height.
    pw: i32,
    ph: i32,
    /// Cell width and height.
    cw: i32,
    chh: i32,
    /// PP rows.
    np: i32,
    /// The legend's height under the panels.
    legend_h: i32,
}

/// Margins inside a panel: left (PP labels), top (title), right, bottom (TP labels).
const LEFT: i32 = 44;
const TOP: i32 = 30;
const RIGHT: i32 = 8;
const BOTTOM: i32 = 26;

impl Grid {
    fn new(sweep: &Sweep, size: ChartSize) -> Grid {
        let shown = panels(sweep);
        let (cols, rows) = grid(size, shown.len() as u32);
        let legend_h = if size.width < 700 { 46i32 } else { 30i32 };
        let pw = size.width as i32 / cols as i32;
        let ph = (size.height as i32 - legend_h) / rows as i32;
        let (nt, np) = (sweep.tps.len().max(1) as i32, sweep.pps.len().max(1) as i32);
        Grid {
            shown,
            cols: cols as i32,
            pw,
            ph,
            cw: ((pw - LEFT - RIGHT) / nt).max(4),
            chh: ((ph - TOP - BOTTOM) / np).max(4),
            np,
            legend_h,
        }
    }
    /// The top-left corner of panel `panel`.
    fn origin(&self, panel: i32) -> (i32, i32) {
        (panel % self.cols * self.pw, panel / self.cols * self.ph)
    }
    /// The rectangle of the cell at column `ti`, row `pi` of panel `panel`.
    fn cell_rect(&self, panel: i32, ti: i32, pi: i32) -> [(i32, i32); 2] {
        let (x0, y0) = self.origin(panel);
        let x = x0 + LEFT + ti * self.cw;
        let y = y0 + TOP + pi * self.chh;
        [(x + 1, y + 1), (x + self.cw - 1, y + self.chh - 1)]
    }
    /// The cells of the shown panels, in `Sweep::cells` order, with their rectangles.
    fn cells<'s>(
        &'s self,
        sweep: &'s Sweep,
    ) -> impl Iterator<Item = (&'s Cell, [(i32, i32); 2])> + 's {
        sweep
            .cells
            .iter()
            .filter(|c| self.shown.contains(&c.zero.number()))
            .map(|c| {
                let (panel, ti, pi) = index(sweep, &self.shown, c);
                (c, self.cell_rect(panel, ti, pi))
            })
    }
}

#[allow(clippy::too_many_arguments)]
fn draw(
    root: &Area,
    sweep: &Sweep,
    current: (Zero, u32, u32),
    usable: u64,
    units: Units,
    colour: FitColour,
    size: ChartSize,
) -> Result<(), String> {
    let colour = if sweep.inference {
        FitColour::Headroom
    } else {
        colour
    };
    let g = Grid::new(sweep, size);
    // Cells first (annotate_fit_map finds them in this order).
    let fastest_tps = fastest(sweep);
    for (c, rect) in g.cells(sweep) {
        let fill = match colour {
            FitColour::Speed => speed_color(c, fastest_tps),
            FitColour::Headroom => cell_color(c, usable),
        };
        root.draw(&Rectangle::new(rect, fill.filled()))
            .map_err(msg)?;
    }
    cell_texts(root, &g, sweep, current, usable, units, colour)?;
    for z in 0..g.shown.len() {
        panel_axes(root, &g, sweep, z as i32)?;
    }
    legend(root, size, g.legend_h, units, colour)
}

/// Each cell's figure (where the cell is large enough) and the current scenario's outline.
#[allow(clippy::too_many_arguments)]
fn cell_texts(
    root: &Area,
    g: &Grid,
    sweep: &Sweep,
    current: (Zero, u32, u32),
    usable: u64,
    units: Units,
    colour: FitColour,
) -> Result<(), String> {
    let small = (FontFamily::SansSerif, 11).into_font();
    let centre = Pos::new(HPos::Center, VPos::Center);
    for (c, [(x0, y0), (x1, y1)]) in g.cells(sweep) {
        if g.cw >= 30 && g.chh >= 14 {
            let fits = c.headroom().is_some_and(|h| h >= 0);
            let color = if fits && c.headroom().unwrap_or(0) as f64 > usable as f64 * 0.3 {
                WHITE
            } else {
                BLACK
            };
            root.draw_text(
                &cell_text(c, units, colour),
                &small.color(&color).pos(centre),
                ((x0 + x1) / 2, (y0 + y1) / 2),
            )
            .map_err(msg)?;
        }
        if (c.zero, c.tp, c.pp) == current {
            root.draw(&Rectangle::new(
                [(x0 - 1, y0 - 1), (x1 + 1, y1 + 1)],
                BLACK.stroke_width(3),
            ))
            .map_err(msg)?;
        }
    }
    Ok(())
}

/// Panel `z`'s title, its TP labels below and its PP labels on the left.
fn panel_axes(root: &Area, g: &Grid, sweep: &Sweep, z: i32) -> Result<(), String> {
    let font = (FontFamily::SansSerif, 12).into_font();
    let small = (FontFamily::SansSerif, 11).into_font();
    let (x0, y0) = g.origin(z);
    let title = if sweep.inference {
        "Inference (no ZeRO)".to_string()
    } else {
        panel_title(g.shown[z as usize], sweep.pytorch).to_string()
    };
    root.draw_text(
        &title,
        &(FontFamily::SansSerif, 14)
            .into_font()
            .style(FontStyle::Bold)
            .color(&BLACK)
            .pos(Pos::new(HPos::Left, VPos::Top)),
        (x0 + LEFT, y0 + 6),
    )
    .map_err(msg)?;
    for (ti, t) in sweep.tps.iter().enumerate() {
        let [(a, _), (b, _)] = g.cell_rect(z, ti as i32, g.np - 1);
        root.draw_text(
            &t.to_string(),
            &font.color(&BLACK).pos(Pos::new(HPos::Center, VPos::Top)),
            ((a + b) / 2, y0 + TOP + g.np * g.chh + 4),
        )
        .map_err(msg)?;
    }
    for (pi, p) in sweep.pps.iter().enumerate() {
        let [(_, a), (_, b)] = g.cell_rect(z, 0, pi as i32);
        root.draw_text(
            &p.to_string(),
            &font.color(&BLACK).pos(Pos::new(HPos::Right, VPos::Center)),
            (x0 + LEFT - 6, (a + b) / 2),
        )
        .map_err(msg)?;
    }
    root.draw_text(
        "PP",
        &small.color(&BLACK).pos(Pos::new(HPos::Left, VPos::Center)),
        (x0 + 2, y0 + TOP + g.np * g.chh / 2),
    )
    .map_err(msg)
}

/// The legend: one row when wide, two when narrow.
fn legend(
    root: &Area,
    size: ChartSize,
    legend_h: i32,
    units: Units,
    colour: FitColour,
) -> Result<(), String> {
    let font = (FontFamily::SansSerif, 12).into_font();
    let two_rows = size.width < 700;
    let row_y = |r: i32| size.height as i32 - legend_h + 6 + r * 18;
    let entry = |x: i32, y: i32, fill: Option<RGBColor>, text: &str| -> Result<i32, String> {
        match fill {
            Some(c) => root.draw(&Rectangle::new([(x, y), (x + 14, y + 14)], c.filled())),
            None => root.draw(&Rectangle::new(
                [(x + 1, y + 1), (x + 13, y + 13)],
                BLACK.stroke_width(2),
            )),
        }
        .map_err(msg)?;
        root.draw_text(
            text,
            &font.color(&BLACK).pos(Pos::new(HPos::Left, VPos::Top)),
            (x + 18, y + 1),
        )
        .map_err(msg)?;
        Ok(x + 30 + 7 * text.chars().count() as i32)
    };
    let fits = match colour {
        FitColour::Speed => "fits (fastest layout's tokens/s per GPU)".to_string(),
        FitColour::Headroom => format!("fits (most headroom, {})", units.symbol()),
    };
    let mut x = 8;
    let y0 = row_y(0);
    if !two_rows {
        root.draw_text(
            "columns TP, rows PP:",
            &font.color(&BLACK).pos(Pos::new(HPos::Left, VPos::Top)),
            (x, y0 + 1),
        )
        .map_err(msg)?;
        x += 150;
    }
    x = entry(x, y0, Some(RGBColor(0x1b, 0x7a, 0x3a)), &fits)?;
    x = entry(x, y0, Some(RGBColor(0xd9, 0x4a, 0x3d)), "nothing fits")?;
    let (mut x, y1) = if two_rows { (8, row_y(1)) } else { (x, y0) };
    x = entry(x, y1, Some(RGBColor(0xe4, 0xe4, 0xe4)), "no valid layout")?;
    entry(x, y1, None, "this scenario")?;
    Ok(())
}

/// (panel, column, row) of a cell among the `shown` panels.
fn index(sweep: &Sweep, shown: &[u8], c: &Cell) -> (i32, i32, i32) {
    let ti = sweep.tps.iter().position(|&t| t == c.tp).unwrap_or(0);
    let pi = sweep.pps.iter().position(|&p| p == c.pp).unwrap_or(0);
    let panel = shown
        .iter()
        .position(|&z| z == c.zero.number())
        .unwrap_or(0);
    (panel as i32, ti as i32, pi as i32)
}

/// What a cell says to a screen reader and in its hover title, its layouts described on
/// `base`, the scenario swept ([`Candidate::describe_on`]: an inference sweep's in
/// inference terms, no ZeRO stage or micro-batch; the expert parallelism the estimate
/// counts named, "DP 8 (EP 8)", which the layout alone does not carry).
///
/// [`Candidate::describe_on`]: memfit_core::explore::Candidate::describe_on
pub fn cell_summary(c: &Cell, units: Units, inference: bool, base: &Scenario) -> String {
    let mode = if inference {
        memfit_core::scenario::Mode::Infer
    } else {
        memfit_core::scenario::Mode::Train
    };
    // `describe_on` builds each layout's scenario; without EP it says what `describe_in` does.
    let describe = |l: &memfit_core::explore::Candidate| {
        if base.parallel.ep.get() > 1 {
            l.describe_on(base)
        } else {
            l.describe_in(mode)
        }
    };
    let head = if inference {
        format!("TP {}, PP {}: ", c.tp, c.pp)
    } else {
        format!("ZeRO-{}, TP {}, PP {}: ", c.zero.number(), c.tp, c.pp)
    };
    match (c.best, c.closest) {
        (Some(b), _) => format!(
            "{head}fits; best {} at {} per GPU ({} free){}",
            describe(&b),
            units.format(b.per_gpu_bytes),
            units.format(b.headroom_bytes.max(0) as u64),
            if b.tokens_per_s_per_gpu > 0.0 {
                format!(", {:.0} tokens/s per GPU predicted", b.tokens_per_s_per_gpu)
            } else {
                String::new()
            }
        ),
        (None, Some(c)) => format!(
            "{head}nothing fits; closest {} needs {} per GPU ({} over)",
            describe(&c),
            units.format(c.per_gpu_bytes),
            units.format(c.headroom_bytes.unsigned_abs())
        ),
        (None, None) => {
            format!("{head}no valid layout (heads, GPUs per node or warnings rule it out)")
        }
    }
}

/// Makes the cells interactive: each shown cell's `<rect>` (the first filled rectangles
/// after the background, in `Sweep::cells` order, hidden panels skipped) gets `data-cell`, `tabindex`,
/// `role="button"`, an `aria-label` and a `<title>`; cells with no valid layout get
/// only the title. The text is memfit's own, escaped.
pub fn annotate_fit_map(svg: &str, sweep: &Sweep, base: &Scenario, units: Units) -> String {
    let shown = panels(sweep);
    let background = Mark {
        target: Target::Next,
        tail: None,
    };
    let cells = sweep
        .cells
        .iter()
        .enumerate()
        .filter(|(_, c)| shown.contains(&c.zero.number()))
        .map(|(i, c)| {
            let text = escape(&cell_summary(c, units, sweep.inference, base));
            let tail = if c.closest.is_some() {
                format!(" data-cell=\"{i}\" tabindex=\"0\" role=\"button\" aria-label=\"{text}\"><title>{text}</title></rect>")
            } else {
                format!("><title>{text}</title></rect>")
            };
            Mark {
                target: Target::Next,
                tail: Some(tail),
            }
        });
    annotate_rects(svg, std::iter::once(background).chain(cells))
}

#[cfg(test)]
mod tests;
