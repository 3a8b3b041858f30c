use super::*;
use memfit_core::estimate::estimate;
use memfit_core::scenario::{Scenario, Zero};

#[test]
fn one_rect_per_segment_and_a_capacity_line() {
    let mut s = Scenario {
        sharding: memfit_core::scenario::Sharding::Zero(Zero::Z3),
        ..Default::default()
    };
    s.cluster.gpus_per_node = memfit_core::scenario::count(8);
    let e = estimate(&s);
    let bar = Bar::from_estimate("this config", &e);
    assert_eq!(bar.total(), e.per_gpu_bytes);
    let svg = render_stacked(
        std::slice::from_ref(&bar),
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
fn annotate_adds_a_title_per_segment() {
    let e = estimate(&Scenario::default());
    let bar = Bar::from_estimate("this <config>", &e);
    let svg = render_stacked(
        std::slice::from_ref(&bar),
        e.gpu.usable_bytes,
        Units::Gib,
        ChartSize::default(),
    );
    let a = annotate(&svg, std::slice::from_ref(&bar), Units::Gib);
    assert_eq!(a.matches("<title>").count(), bar.segments.len());
    assert!(a.contains("data-component=\"activations\""));
    assert!(a.contains("this &lt;config&gt;: Activations ("));
    assert!(!a.contains("<config>"));
}

#[test]
fn curve_marks_capacity_and_max() {
    let pts: Vec<Point> = (8..=16)
        .map(|k| Point {
            x: 1 << k,
            bytes: (1u64 << k) * 1_000_000,
        })
        .collect();
    let svg = render_curve(
        &pts,
        40_000_000_000,
        Some(40_000),
        "sequence length",
        Units::Gb,
        ChartSize::default(),
    );
    assert!(svg.contains("max that fits: 40,000"));
    // 40,000 is in the axis' right half (256 … 65,536 on log₂): the label ends at the line.
    let label = |svg: &str, text: &str| {
        let at = svg.find(text).unwrap();
        svg[svg[..at].rfind("<text").unwrap()..at].to_string()
    };
    assert!(
        label(&svg, "max that fits").contains(r#"text-anchor="end""#),
        "{svg}"
    );
    assert!(svg.contains("usable 40.0 GB"));
    assert!(svg.contains("<polyline") || svg.contains("<path"));
    let empty = render_curve(&[], 0, None, "x", Units::Gib, ChartSize::default());
    assert!(empty.contains("<svg"));
}

#[test]
fn narrow_charts_have_no_legend_column() {
    let e = estimate(&Scenario::default());
    let bar = Bar::from_estimate("x", &e);
    let svg = render_stacked(
        &[bar],
        e.gpu.usable_bytes,
        Units::Gib,
        ChartSize {
            width: 420,
            height: 320,
        },
    );
    assert!(!svg.contains("Optimizer states"));
    assert!(svg.contains("<rect"));
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

/// An out-of-range estimate is drawn as words, not as a 16 EiB column.
#[test]
fn out_of_range_bars_and_points_are_not_drawn_as_figures() {
    let (s, _) =
        memfit_core::contract::query::decode("seq=67108864&batch=1048576&model=llama-3.1-405b");
    let s = s.scenario;
    let e = estimate(&s);
    assert!(e.out_of_range);
    let bar = Bar::from_estimate("this", &e);
    assert!(bar.out_of_range());
    let svg = annotate(
        &render_stacked(
            std::slice::from_ref(&bar),
            e.gpu.usable_bytes,
            Units::Gib,
            ChartSize::default(),
        ),
        std::slice::from_ref(&bar),
        Units::Gib,
    );
    assert!(svg.contains("out of range"));
    assert!(!svg.contains("17179869184"), "a 16 EiB label was drawn");
    let pts = [
        Point {
            x: 1,
            bytes: 1 << 30,
        },
        Point {
            x: 2,
            bytes: u64::MAX,
        },
    ];
    let curve = render_curve(
        &pts,
        80 << 30,
        None,
        "seq",
        Units::Gib,
        ChartSize::default(),
    );
    assert!(!curve.contains("17179869184"));
}

mod in_place {
    use super::super::inplace::tests::moved as moved_in;
    use super::super::{Bars, Stacked};
    use super::*;
    use proptest::prelude::*;

    fn bar(label: &str, parts: &[(Component, u64)]) -> Bar {
        Bar {
            label: label.into(),
            segments: parts.to_vec(),
        }
    }

    const GIB: u64 = 1 << 30;

    fn moved(a: &[Bar], b: &[Bar], capacity: u64, units: Units, size: ChartSize) -> Option<usize> {
        let at = |bars| Bars {
            bars,
            capacity,
            units,
            size,
        };
        moved_in::<Stacked>(at(a), at(b))
    }
    #[test]
    fn a_new_height_under_the_capacity_moves_the_shapes() {
        // Llama 2 7B-like bars on an 80 GiB GPU: activations grow from 6 to 9 GiB.
        let at = |act: u64| {
            vec![bar(
                "this configuration",
                &[
                    (Component::Weights, 13 * GIB / 8),
                    (Component::Gradients, 13 * GIB / 8),
                    (Component::OptimizerStates, 10 * GIB),
                    (Component::Activations, act * GIB),
                ],
            )]
        };
        let moves = moved(&at(6), &at(9), 80 * GIB, Units::Gib, ChartSize::default());
        // The activation rect's y and height, its title, the total's y and text.
        assert_eq!(moves, Some(5));
        // Over the capacity the axis grows: drawn in full.
        assert_eq!(
            moved(&at(6), &at(90), 80 * GIB, Units::Gib, ChartSize::default()),
            None
        );
        // A component that appears changes the legend: drawn in full.
        let mut b = at(6);
        b[0].segments.push((Component::Workspace, GIB));
        assert_eq!(
            moved(&at(6), &b, 80 * GIB, Units::Gib, ChartSize::default()),
            None
        );
    }

    #[test]
    fn an_unchanged_drawing_moves_nothing() {
        let bars = [
            bar(
                "stage 0",
                &[
                    (Component::Weights, 5 * GIB),
                    (Component::Activations, 3 * GIB),
                ],
            ),
            bar("stage 1", &[(Component::Weights, 4 * GIB)]),
        ];
        let size = ChartSize {
            width: 420,
            height: 340,
        };
        assert_eq!(moved(&bars, &bars, 40 * GIB, Units::Gb, size), Some(0));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Any bytes under the capacity, one to six stages, either size and unit: the moves
        /// are exactly what a full drawing changes.
        #[test]
        fn moves_equal_full_drawings(
            stages in 1usize..=6,
            a in proptest::collection::vec(1u64..(12 * GIB), 18),
            b in proptest::collection::vec(1u64..(12 * GIB), 18),
            narrow in any::<bool>(),
            gb in any::<bool>(),
        ) {
            let parts = [Component::Weights, Component::OptimizerStates, Component::Activations];
            let mk = |v: &[u64]| -> Vec<Bar> {
                (0..stages)
                    .map(|s| bar(&format!("stage {s}"), &parts.iter().enumerate().map(|(k, c)| (*c, v[s * 3 + k])).collect::<Vec<_>>()))
                    .collect()
            };
            let size = if narrow { ChartSize { width: 420, height: 340 } } else { ChartSize::default() };
            let units = if gb { Units::Gb } else { Units::Gib };
            prop_assert!(moved(&mk(&a), &mk(&b), 40 * GIB, units, size).is_some());
        }

        /// Any bars (none to six, empty ones, zero-byte and out-of-range segments, any
        /// capacity): drawing and redrawing never panic, and whatever the redraw does is
        /// exactly what a full drawing shows.
        #[test]
        fn any_bars_redraw_as_drawn(
            a in proptest::collection::vec(proptest::collection::vec((0usize..14, prop_oneof![Just(0u64), 1u64..(1 << 40), Just(u64::MAX)]), 0..5), 0..7),
            b in proptest::collection::vec(proptest::collection::vec((0usize..14, prop_oneof![Just(0u64), 1u64..(1 << 40), Just(u64::MAX)]), 0..5), 0..7),
            capacity in prop_oneof![Just(0u64), 1u64..(1 << 42)],
            narrow in any::<bool>(),
        ) {
            let mk = |v: &[Vec<(usize, u64)>]| -> Vec<Bar> {
                v.iter()
                    .enumerate()
                    .map(|(i, segs)| bar(&format!("bar <{i}> & co"), &segs.iter().map(|(c, b)| (Component::ALL[*c], *b)).collect::<Vec<_>>()))
                    .collect()
            };
            let size = if narrow { ChartSize { width: 420, height: 340 } } else { ChartSize::default() };
            let (a, b) = (mk(&a), mk(&b));
            moved(&a, &b, capacity, Units::Gib, size);
            moved(&a, &a, capacity, Units::Gb, size);
        }
    }
}

/// The chosen `max_len`'s label stays inside the plot: ending at its line at the right end of
/// the axis (163,840 on DeepSeek-V3's curve was cut off), starting at it at the left.
#[test]
fn concurrency_marker_label_stays_inside() {
    let pts: Vec<(u64, f64)> = (9..=18)
        .map(|k| (1u64 << k, 1e6 / (1u64 << k) as f64))
        .collect();
    let label = |chosen: u64| {
        let svg = render_concurrency(&pts, chosen, ChartSize::default());
        let at = svg.find("max_len 1").unwrap();
        (svg[svg[..at].rfind("<text").unwrap()..at].to_string(), svg)
    };
    let (right, svg) = label(163_840);
    assert!(
        right.contains(r#"text-anchor="end""#) && svg.contains("max_len 163,840"),
        "{right}"
    );
    let (left, _) = label(1024);
    assert!(!left.contains(r#"text-anchor="end""#), "{left}");
}

/// Ticks on a small axis keep their decimals: llama.cpp's one request a context gives an
/// axis up to 1.1, whose ticks read 0.2 … 1.0, never "0, 0, 0, 1, 1, 1".
#[test]
fn small_axes_keep_decimals() {
    assert_eq!(super::tick_decimals(1.1), 1);
    assert_eq!(super::tick_decimals(4.9), 1);
    assert_eq!(super::tick_decimals(5.5), 0);
    assert_eq!(super::tick_decimals(80.0), 0);
    assert_eq!(super::tick_decimals(0.05), 2);
    assert_eq!(super::tick_decimals(0.0), 0);
    let svg = super::render_concurrency(
        &[(512, 1.0), (1024, 1.0), (8192, 1.0)],
        8192,
        super::ChartSize {
            width: 900,
            height: 360,
        },
    );
    let texts: Vec<&str> = svg
        .split("<text")
        .skip(1)
        .filter_map(|t| Some(t.split_once('>')?.1.split("</text>").next()?.trim()))
        .collect();
    let ticks: Vec<&str> = texts
        .iter()
        .copied()
        .filter(|t| t.parse::<f64>().is_ok())
        .collect();
    assert!(
        ticks.contains(&"0.2") && ticks.contains(&"1.0"),
        "{ticks:?}"
    );
    let mut seen = ticks.clone();
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), ticks.len(), "repeated tick labels: {ticks:?}");
}
