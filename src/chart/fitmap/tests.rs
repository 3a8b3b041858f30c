use super::*;
use memfit_core::contract::query::decode;
use memfit_core::explore::explore;
use memfit_core::scenario::Scenario;

fn sweep() -> (Scenario, Sweep) {
    let (s, _) = decode("model=llama-3-70b&seq=8192&gpus_per_node=8&nodes=8");
    let s = s.scenario;
    let sw = explore(&s, Some(10));
    (s, sw)
}

/// The map of `sw` with `current` outlined, `width × height` pixels, in GiB.
fn map(sw: &Sweep, s: &Scenario, current: (Zero, u32, u32), width: u32, height: u32) -> String {
    render_fit_map(
        sw,
        current,
        s.usable_bytes(),
        Units::Gib,
        FitColour::Headroom,
        ChartSize { width, height },
    )
}

/// By speed, the fastest cell is the deepest green and says its tokens per second.
#[test]
fn colour_by_speed() {
    let (s, sw) = sweep();
    let top = fastest(&sw);
    let best = sw
        .cells
        .iter()
        .filter_map(|c| c.best)
        .map(|b| b.tokens_per_s_per_gpu)
        .fold(0.0, f64::max);
    assert!(top > 0.0 && top == best);
    let cell = sw
        .cells
        .iter()
        .find(|c| c.best.is_some_and(|b| b.tokens_per_s_per_gpu == top))
        .unwrap();
    assert_eq!(speed_color(cell, top), RGBColor(0x1b, 0x7a, 0x3a));
    let svg = render_fit_map(
        &sw,
        (Zero::Z0, 1, 1),
        s.usable_bytes(),
        Units::Gib,
        FitColour::Speed,
        ChartSize {
            width: 900,
            height: 600,
        },
    );
    assert!(svg.contains(&format!("{:.0}", top)) && svg.contains("tokens/s per GPU"));
}

#[test]
fn one_interactive_cell_per_valid_cell() {
    let (s, sw) = sweep();
    let svg = map(&sw, &s, (Zero::Z0, 1, 1), 900, 360);
    let a = annotate_fit_map(&svg, &sw, &s, Units::Gib);
    let valid = sw.cells.iter().filter(|c| c.closest.is_some()).count();
    assert_eq!(a.matches("data-cell=\"").count(), valid);
    assert_eq!(a.matches("<title>").count(), sw.cells.len());
    assert!(a.starts_with("<svg") && a.trim_end().ends_with("</svg>"));
    // Cells are 4 panels × |PP| × |TP|: TP 1, 2, 4, 8 and PP 1, 2, 4, 8, 16, 32, 64.
    assert_eq!((sw.tps.len(), sw.pps.len(), sw.cells.len()), (4, 7, 112));
    // The annotated rects keep the colours the map drew, in cell order.
    let first = sw.cells.iter().position(|c| c.closest.is_some()).unwrap();
    let (r, g, b) = {
        let c = cell_color(&sw.cells[first], s.usable_bytes());
        (c.0, c.1, c.2)
    };
    let at = a.find(&format!("data-cell=\"{first}\"")).unwrap();
    let rect = &a[a[..at].rfind("<rect").unwrap()..at];
    assert!(rect.contains(&format!("#{r:02X}{g:02X}{b:02X}")), "{rect}");
}

#[test]
fn colours_say_fit_nothing_or_invalid() {
    let (s, sw) = sweep();
    let u = s.usable_bytes();
    // ZeRO-0 at TP 1, PP 1: 16 B/param of 70B does not fit → red.
    let c = sw.cell(Zero::Z0, 1, 1).unwrap();
    assert_eq!(cell_color(c, u), RGBColor(0xd9, 0x4a, 0x3d));
    assert!(cell_summary(c, Units::Gib, false, &s).contains("nothing fits"));
    assert!(cell_summary(c, Units::Gib, false, &s).starts_with("ZeRO-0, TP 1, PP 1: "));
    // The same cell read as an inference sweep's: no ZeRO, no micro-batch.
    let text = cell_summary(c, Units::Gib, true, &s);
    assert!(
        text.starts_with("TP 1, PP 1: ") && !text.contains("ZeRO"),
        "{text}"
    );
    // ZeRO-3 at TP 8: fits → green.
    let c = sw.cell(Zero::Z3, 8, 1).unwrap();
    assert!(c.best.is_some());
    let g = cell_color(c, u);
    assert!(g.1 > g.0 && g.1 > g.2);
}

#[test]
fn narrow_maps_stack_panels_two_by_two() {
    let (s, sw) = sweep();
    let svg = map(&sw, &s, (Zero::Z3, 8, 1), 340, 520);
    assert!(svg.contains("ZeRO-3") && svg.contains("viewBox=\"0 0 340 520\""));
}

#[test]
fn pytorch_panels_name_ddp_and_fsdp() {
    let (s, _) = decode("model=llama-3-8b&seq=8192&gpus_per_node=8&framework=pytorch");
    let s = s.scenario;
    let sw = explore(&s, Some(10));
    assert!(sw.pytorch);
    let svg = map(&sw, &s, (Zero::Z0, 1, 1), 900, 330);
    assert!(svg.contains("DDP (ZeRO-0)") && svg.contains("FSDP full (≈ZeRO-3)"));
    assert!(!svg.contains(">ZeRO-2<"));
}

#[test]
fn inference_shows_one_panel() {
    let (s, _) = decode("model=llama-3-70b&mode=infer&seq=8192&gen=1024&gpus_per_node=8&nodes=2");
    let s = s.scenario;
    let sw = explore(&s, Some(10));
    assert_eq!(panels(&sw), vec![0]);
    let svg = map(&sw, &s, (Zero::Z0, 1, 1), 900, 330);
    assert!(svg.contains("Inference (no ZeRO)") && !svg.contains("ZeRO-3"));
    let a = annotate_fit_map(&svg, &sw, &s, Units::Gib);
    let valid = sw.cells.iter().filter(|c| c.closest.is_some()).count();
    assert_eq!(a.matches("data-cell=\"").count(), valid);
    // Training shows all four.
    let (t, _) = decode("model=llama-3-70b&seq=8192&gpus_per_node=8&nodes=8");
    let t = t.scenario;
    assert_eq!(panels(&explore(&t, Some(1))), vec![0, 1, 2, 3]);
}

/// A mixture swept with `ep = 8`: the hover text names the expert parallelism each layout
/// is estimated with ("DP 8 (EP 8)"), as the fewest-GPU line and the explorer table do.
#[test]
fn cells_name_expert_parallelism() {
    let (s, _) = decode("model=mixtral-8x7b&gpus_per_node=8&ep=8");
    let s = s.scenario;
    let sw = explore(&s, Some(10));
    let c = sw.cell(Zero::Z3, 1, 1).unwrap();
    let text = cell_summary(c, Units::Gib, false, &s);
    assert!(text.contains("DP 8 (EP 8)"), "{text}");
    let (plain, _) = decode("model=mixtral-8x7b&gpus_per_node=8");
    assert!(!cell_summary(c, Units::Gib, false, &plain.scenario).contains("EP"));
}
