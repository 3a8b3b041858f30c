//! The one SVG annotator: plotters draws the shapes, this adds what makes them
//! interactive (data attributes, roles, titles) by splicing text into the `<rect …/>`
//! elements it wrote, in drawing order. The breakdown chart and the fit map both use it.

/// Which `<rect>` a mark goes on, searching forward from the previous mark's rect.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// The next rectangle.
    Next,
    /// The next rectangle with this exact attribute text (e.g. `fill="#1F77B4"`).
    With(String),
}

/// What to do to a rectangle: `tail` replaces its closing `/>` (e.g. ` data-x="1"><title>…
/// </title></rect>`); `None` passes the rectangle over unchanged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mark {
    /// Which rectangle.
    pub target: Target,
    /// Its new ending, or `None` to leave it as drawn.
    pub tail: Option<String>,
}

/// `svg` with each mark applied in order; a mark whose rectangle is not found is skipped
/// (the search for the next mark starts where it started). Text outside the marked
/// rectangles is copied unchanged.
///
/// ```
/// use memfit::chart::svg::{annotate_rects, Mark, Target};
/// let svg = r#"<svg><rect fill="a"/><rect fill="b"/></svg>"#;
/// let marks = [Mark { target: Target::With("fill=\"b\"".into()), tail: Some("><title>B</title></rect>".into()) }];
/// assert_eq!(annotate_rects(svg, marks), r#"<svg><rect fill="a"/><rect fill="b"><title>B</title></rect></svg>"#);
/// ```
pub fn annotate_rects(svg: &str, marks: impl IntoIterator<Item = Mark>) -> String {
    let mut out = String::with_capacity(svg.len() + svg.len() / 4);
    let mut rest = svg;
    for mark in marks {
        let start = match &mark.target {
            Target::Next => rest.find("<rect "),
            Target::With(needle) => rest
                .find(needle.as_str())
                .and_then(|at| rest[..at].rfind("<rect ").map(|_| at)),
        };
        let Some(start) = start else { continue };
        let Some(end) = rest[start..].find("/>").map(|e| start + e) else {
            continue;
        };
        match mark.tail {
            Some(tail) => {
                out.push_str(&rest[..end]);
                out.push_str(&tail);
            }
            None => out.push_str(&rest[..end + 2]),
        }
        rest = &rest[end + 2..];
    }
    out.push_str(rest);
    out
}

/// Escapes text for SVG/XML content and attributes.
///
/// ```
/// assert_eq!(memfit::chart::svg::escape(r#"a<b & "c">"#), "a&lt;b &amp; &quot;c&quot;&gt;");
/// ```
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// `svg` as plotters wrote it, made smaller without changing what is drawn (the page
/// parses, styles and lays out every byte of it on every input):
/// - `opacity="1"` (the default) is dropped;
/// - font sizes are rounded to 0.01 px (plotters writes `9.67741935483871`);
/// - the points of a `polygon` / `polyline` that lie on a horizontal or vertical run
///   between two other points are dropped, and repeated points with them (the
///   timeline's stacked areas are steps: most of their points are such runs).
///
/// ```
/// let svg = r#"<polygon opacity="1" points="0,5 1,5 2,5 2,3 2,1 4,1 "/><text font-size="9.67741935483871">a</text>"#;
/// assert_eq!(
///     memfit::chart::svg::slim(svg),
///     r#"<polygon points="0,5 2,5 2,1 4,1 "/><text font-size="9.68">a</text>"#
/// );
/// ```
pub fn slim(svg: &str) -> String {
    let mut out = String::with_capacity(svg.len());
    let mut rest = svg;
    while let Some(at) = rest.find(['o', 'f', 'p']) {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        if let Some(r) = rest.strip_prefix("opacity=\"1\" ") {
            rest = r;
        } else if let Some(r) = rest.strip_prefix("font-size=\"") {
            let end = r.find('"').unwrap_or(r.len());
            match r[..end].parse::<f64>() {
                Ok(v) => out.push_str(&format!("font-size=\"{}\"", (v * 100.0).round() / 100.0)),
                Err(_) => {
                    out.push_str("font-size=\"");
                    out.push_str(&r[..end]);
                    out.push('"');
                }
            }
            rest = &r[(end + 1).min(r.len())..];
        } else if let Some(r) = rest.strip_prefix("points=\"") {
            let end = r.find('"').unwrap_or(r.len());
            out.push_str("points=\"");
            simplify_points(&r[..end], &mut out);
            out.push('"');
            rest = &r[(end + 1).min(r.len())..];
        } else {
            let c = rest.chars().next().map_or(1, char::len_utf8);
            out.push_str(&rest[..c]);
            rest = &rest[c..];
        }
    }
    out.push_str(rest);
    out
}

/// Writes `points` (`"x,y x,y …"`) without the points that repeat their predecessor or
/// lie strictly inside a horizontal or vertical run (between its neighbours, so a turn
/// back along the same line is kept); text it cannot read is copied unchanged.
fn simplify_points(points: &str, out: &mut String) {
    let parsed: Option<Vec<(&str, &str)>> = points
        .split_whitespace()
        .map(|p| p.split_once(','))
        .collect();
    let num = |v: &str| v.parse::<f64>().unwrap_or(f64::NAN);
    let between = |a: &str, b: &str, c: &str| {
        let (a, b, c) = (num(a), num(b), num(c));
        (a <= b && b <= c) || (a >= b && b >= c)
    };
    let Some(mut pts) = parsed else {
        out.push_str(points);
        return;
    };
    pts.dedup();
    let n = pts.len();
    for i in 0..n {
        let inner = i > 0 && i + 1 < n;
        let (a, b, c) = (pts[i.saturating_sub(1)], pts[i], pts[(i + 1).min(n - 1)]);
        let on_run = (a.1 == b.1 && b.1 == c.1 && between(a.0, b.0, c.0))
            || (a.0 == b.0 && b.0 == c.0 && between(a.1, b.1, c.1));
        if inner && on_run {
            continue;
        }
        out.push_str(b.0);
        out.push(',');
        out.push_str(b.1);
        out.push(' ');
    }
}
