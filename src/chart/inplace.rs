//! Drawings the page keeps and moves in place. A chart drawn in full by plotters is kept
//! with what places its shapes (plotters' own mapping of the plot, the element number of
//! each shape that moves); a new input of the same *shape* (the same frame, elements and
//! texts: a new sequence length, mostly) is shown by setting only the values that moved.
//! No SVG is written, read or compared per input; the only texts set are figures a chart
//! shows (the bars' totals and hover titles; the timeline's drawing has none).
//!
//! Each chart's moves are tested against two full drawings: they must equal the difference
//! the generic differ ([`super::svg::diff`]) finds between them.

use super::svg::Change;

/// A chart the page can move in place.
pub trait InPlace: Sized {
    /// What it is drawn from.
    type Input<'a>: Copy;
    /// `input` drawn in full, and what moves it later (`None` when the drawing failed or
    /// cannot be read: the next input draws in full again).
    fn draw(input: Self::Input<'_>) -> (String, Option<Self>);
    /// The values that move with `input`, in document order, when its shape is this
    /// drawing's; `None` when it is not (the frame, an element or a text would change).
    fn moving(&self, input: Self::Input<'_>) -> Option<Vec<Change>>;
    /// The moving values as the page shows them, and the drawing's element count.
    fn shown(&mut self) -> (&mut Vec<Change>, usize);
}

/// What the page does to show a new input.
#[derive(Debug, PartialEq)]
pub enum Redraw {
    /// Set these attributes of the drawing on the page, whose elements (numbered in
    /// document order, the root `<svg>` 0) number `elements`.
    Move {
        /// The values that changed.
        changes: Vec<Change>,
        /// Elements in the drawing (the page checks its figure before it patches).
        elements: usize,
    },
    /// Replace the drawing with this SVG.
    Draw(String),
}

/// What turns the drawing on the page (`kept`, updated to the new one) into the drawing of
/// `input`: the moved values when the shape is the same, else a full drawing.
pub fn redraw<K: InPlace>(kept: &mut Option<K>, input: K::Input<'_>) -> Redraw {
    if let Some(k) = kept.as_mut() {
        if let Some(now) = k.moving(input) {
            let (shown, elements) = k.shown();
            if now.len() == shown.len() {
                let changes = now
                    .iter()
                    .zip(shown.iter())
                    .filter(|(n, s)| n != s)
                    .map(|(n, _)| n.clone())
                    .collect();
                *shown = now;
                return Redraw::Move { changes, elements };
            }
        }
    }
    let (svg, new) = K::draw(input);
    *kept = new;
    Redraw::Draw(svg)
}

/// An attribute change of a pixel value, as plotters writes it.
pub(crate) fn px(el: usize, name: &str, value: i32) -> Change {
    Change::Attr {
        el,
        name: name.to_string(),
        value: value.to_string(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::chart::svg::diff;

    /// Draws `a`, redraws `b` from it as the page does and back; when it moves (`Some`,
    /// the number of changes) the moves equal the difference of the full drawings both
    /// ways, and when it draws in full the drawing is `b`'s.
    pub(crate) fn moved<K: InPlace>(a: K::Input<'_>, b: K::Input<'_>) -> Option<usize> {
        let (svg_a, mut kept) = K::draw(a);
        let (svg_b, _) = K::draw(b);
        match redraw(&mut kept, b) {
            Redraw::Move { changes, elements } => {
                let (want, n) = diff(&svg_a, &svg_b).expect("a move between different shapes");
                assert_eq!(elements, n);
                assert_eq!(
                    changes, want,
                    "moves differ from the full drawings' difference"
                );
                let Redraw::Move { changes: back, .. } = redraw(&mut kept, a) else {
                    panic!("moving back drew in full")
                };
                assert_eq!(back, diff(&svg_b, &svg_a).unwrap().0);
                Some(changes.len())
            }
            Redraw::Draw(svg) => {
                assert_eq!(svg, svg_b);
                None
            }
        }
    }
}
