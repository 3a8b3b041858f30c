//! A timeline kept on the page and moved in place ([`super::super::inplace`]): for a walk
//! of the same shape the areas' outlines, the other stages' lines and labels, and the
//! points move; no text changes.

use super::{hex, markers, others, point, Other, Plot, Walk};
use crate::chart::inplace::{px, InPlace};
use crate::chart::svg::{simplify_points, Change, Parsed};
use crate::chart::ChartSize;
use crate::chart::{frame, Coord};
use memfit_core::estimate::Component;
use memfit_core::timeline::StepPhase;
use memfit_core::units::Units;
use plotters::coord::CoordTranslate;

/// A sample as a shape sees it: its event's index and what names it (phase, layer,
/// micro-batch, what happens).
type Named = (usize, StepPhase, Option<u32>, Option<u32>, &'static str);

/// Points as plotters writes them (`"x,y "` each) after [`crate::chart::svg::slim`].
fn points(coord: &Coord, line: &[(f64, f64)]) -> String {
    use std::fmt::Write;
    let mut raw = String::with_capacity(line.len() * 8);
    for p in line {
        let (x, y) = coord.translate(p);
        let _ = write!(raw, "{x},{y} ");
    }
    let mut out = String::with_capacity(raw.len());
    simplify_points(&raw, &mut out);
    out
}

/// Everything a timeline's frame, texts and elements are drawn from: two walks of the same
/// shape differ only in the areas' outlines, the other stages' lines and labels' places,
/// and the points' places (tested against full drawings).
#[derive(PartialEq)]
struct Shape {
    size: ChartSize,
    units: Units,
    capacity: u64,
    y_max: f64,
    peak_stage: u32,
    stages: usize,
    events: usize,
    peak: usize,
    /// Per sample, its event's index and what names it.
    samples: Vec<Named>,
    parts: Vec<Component>,
    /// The other stages drawn, and whether each is labelled.
    others: Vec<(u32, bool)>,
}

impl Shape {
    fn of(w: Walk, p: &Plot, others: &[Other]) -> Shape {
        let t = w.timeline;
        Shape {
            size: w.size,
            units: w.units,
            capacity: w.capacity,
            y_max: p.y_max,
            peak_stage: t.peak_stage,
            stages: t.stages.len(),
            events: p.events.len(),
            peak: p.peak,
            samples: p
                .pts
                .iter()
                .map(|s| {
                    let e = p.events[s.index];
                    (s.index, e.phase, e.layer, e.micro_batch, e.what)
                })
                .collect(),
            parts: p.parts(),
            others: others
                .iter()
                .map(|o| (o.stage, o.label_at.is_some()))
                .collect(),
        }
    }
}

/// A timeline as the page shows it, kept to move it in place ([`crate::chart::inplace`]).
pub struct Walked {
    shape: Shape,
    coord: Coord,
    elements: usize,
    /// The element numbers of the areas' `<polygon>`s.
    areas: Vec<usize>,
    /// Per other stage, its line's `<polyline>` and its label's `<text>`.
    others: Vec<(usize, Option<usize>)>,
    /// The points' `<circle>`s.
    points: Vec<usize>,
    shown: Vec<Change>,
}

impl InPlace for Walked {
    /// `None`: no timeline (nothing is drawn).
    type Input<'a> = Option<Walk<'a>>;

    fn draw(w: Option<Walk>) -> (String, Option<Walked>) {
        let Some(w) = w else {
            return (String::new(), None);
        };
        let t = w.timeline;
        let p = Plot::of(w);
        let others = others(&p, t);
        let mut coord = None;
        let mut buf = frame(w.size, |root| {
            coord = Some(super::draw(root, &p, &others, t, w.capacity)?);
            Ok(())
        });
        // Focusable points with their event named: appended inside the root <svg>.
        if let (Some(c), Some(end)) = (&coord, buf.rfind("</svg>")) {
            buf.insert_str(end, &markers(c, &p));
        }
        let parsed = Parsed::new(buf);
        let kept = coord.and_then(|coord| {
            let others_at = others
                .iter()
                .map(|o| {
                    let color = hex(o.color);
                    let line = parsed.first_with("stroke", &color)?;
                    let text = match o.label_at {
                        // The label follows its line (a component's area may share its colour).
                        Some(_) => Some(parsed.next_with(line, "fill", &color)?),
                        None => None,
                    };
                    Some((line, text))
                })
                .collect::<Option<Vec<_>>>()?;
            let mut kept = Walked {
                shape: Shape::of(w, &p, &others),
                coord,
                elements: parsed.elements()?,
                areas: parsed.all_named("polygon"),
                others: others_at,
                points: parsed.all_named("circle"),
                shown: Vec::new(),
            };
            kept.shown = kept.moving(Some(w))?;
            Some(kept)
        });
        (parsed.into_string(), kept)
    }

    /// In document order: each area's `points`, each other stage's line `points` and label
    /// `x`, `y`, each point's `cx`, `cy`.
    fn moving(&self, w: Option<Walk>) -> Option<Vec<Change>> {
        let w = w?;
        let p = Plot::of(w);
        let others = others(&p, w.timeline);
        if self.shape != Shape::of(w, &p, &others) {
            return None;
        }
        let areas = p.areas();
        let chosen = p.chosen();
        if areas.len() != self.areas.len() || chosen.len() != self.points.len() {
            return None;
        }
        let mut out = Vec::new();
        for ((_, poly), el) in areas.iter().zip(&self.areas) {
            out.push(Change::Attr {
                el: *el,
                name: "points".into(),
                value: points(&self.coord, poly),
            });
        }
        for (o, (line, text)) in others.iter().zip(&self.others) {
            out.push(Change::Attr {
                el: *line,
                name: "points".into(),
                value: points(&self.coord, &o.line),
            });
            if let (Some(at), Some(el)) = (o.label_at, text) {
                let (x, y) = self.coord.translate(&at);
                out.extend([px(*el, "x", x), px(*el, "y", y)]);
            }
        }
        for (k, el) in chosen.iter().zip(&self.points) {
            let (cx, cy) = point(&self.coord, &p, &p.pts[*k]);
            out.extend([px(*el, "cx", cx), px(*el, "cy", cy)]);
        }
        Some(out)
    }

    fn shown(&mut self) -> (&mut Vec<Change>, usize) {
        (&mut self.shown, self.elements)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memfit_core::timeline::{timeline, Timeline};

    /// The page's walk for the perf harness's input (the sequence length, +37 per change)
    /// and for pipeline stages.
    fn walked(q: &str) -> (Timeline, u64) {
        let s = memfit_core::contract::query::decode(q).0.scenario;
        let cap = memfit_core::estimate::estimate(&s).gpu.usable_bytes;
        (timeline(&s).unwrap(), cap)
    }

    fn at(w: &(Timeline, u64)) -> Option<Walk<'_>> {
        Some(Walk {
            timeline: &w.0,
            capacity: w.1,
            units: Units::Gib,
            size: ChartSize {
                width: 900,
                height: 380,
            },
        })
    }

    fn moved(a: &(Timeline, u64), b: &(Timeline, u64)) -> Option<usize> {
        crate::chart::inplace::tests::moved::<Walked>(at(a), at(b))
    }

    #[test]
    fn a_new_sequence_length_moves_the_drawing_and_no_text() {
        for base in [
            "model=llama-2-7b&zero=3&gpus_per_node=8",
            "model=llama-2-7b&gpus_per_node=8&pp=4&microbatches=8&zero=1",
        ] {
            let walks: Vec<_> = (0..8)
                .map(|i| walked(&format!("{base}&seq={}", 1000 + 37 * i)))
                .collect();
            let mut moves = 0;
            for w in walks.windows(2) {
                if let Some(n) = moved(&w[0], &w[1]) {
                    assert!(n > 0, "{base}: nothing moved");
                    moves += 1;
                }
            }
            assert!(moves >= 5, "{base}: {moves} of 7 changes moved in place");
        }
        // Another ZeRO stage is another schedule: drawn in full.
        let z3 = walked("model=llama-2-7b&zero=3&gpus_per_node=8");
        let z1 = walked("model=llama-2-7b&zero=1&gpus_per_node=8");
        assert_eq!(moved(&z3, &z1), None);
    }

    /// Every pair of walks of different shapes (training and inference, ZeRO stages,
    /// pipelines, a tiny model, another unit of capacity): each redraw, moved or drawn in
    /// full, equals the full drawing.
    #[test]
    fn every_pair_redraws_as_drawn() {
        let walks: Vec<_> = [
            "model=llama-2-7b&zero=3&gpus_per_node=8",
            "model=llama-2-7b&zero=3&gpus_per_node=8&seq=8192",
            "model=llama-2-7b&zero=0&gpus_per_node=1&seq=512",
            "model=llama-2-7b&gpus_per_node=8&pp=4&microbatches=8&zero=1",
            "model=llama-2-7b&gpus_per_node=8&pp=2&microbatches=4&zero=1&seq=2048",
            "model=gpt2&mode=infer&batch=4&seq=1024&gen=128",
            "model=gpt2&mode=infer&batch=8&seq=1024&gen=128",
            "model=llama-3-8b&mode=infer&seq=8192&gen=256",
        ]
        .iter()
        .map(|q| walked(q))
        .collect();
        for a in &walks {
            for b in &walks {
                moved(a, b);
            }
        }
    }
}
