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
