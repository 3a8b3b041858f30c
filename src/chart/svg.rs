//! The one SVG annotator: plotters draws the shapes, this adds what makes them
//! interactive (data attributes, roles, titles) by splicing text into the `<rect …/>`
//! elements it wrote, in drawing order. The breakdown chart and the fit map both use it.

use memfit_core::decimal::parse_f64;

/// Which `<rect>` a mark goes on, searching forward from the previous mark's rect.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// The next rectangle.
    Next,
    /// The next rectangle with this exact attribute text (e.g. `fill="#1F77B4"`).
    With(String),
}

/// What to do to a rectangle: `tail` replaces its closing `/>`
/// (e.g. ` data-x="1"><title>…</title></rect>`); `None` passes the rectangle over unchanged.
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
    let svg = svg.replace(" opacity=\"1\"", "");
    // A drawing has a few font sizes, each written many times: each is read once.
    let seen = std::cell::RefCell::new(Vec::<(String, String)>::new());
    let svg = rewrite_attr(&svg, "font-size=\"", |v, out| {
        if let Some((_, r)) = seen.borrow().iter().find(|(k, _)| k == v) {
            out.push_str(r);
            return;
        }
        let r = match parse_f64(v) {
            Some(x) => ((x * 100.0).round() / 100.0).to_string(),
            None => v.to_string(),
        };
        out.push_str(&r);
        seen.borrow_mut().push((v.to_string(), r));
    });
    rewrite_attr(&svg, "points=\"", simplify_points)
}

/// `svg` with the value of every attribute that starts with `key` (e.g. `points="`)
/// rewritten by `f` (which writes the new value).
fn rewrite_attr(svg: &str, key: &str, f: impl Fn(&str, &mut String)) -> String {
    let mut out = String::with_capacity(svg.len());
    let mut rest = svg;
    while let Some(at) = rest.find(key) {
        let start = at + key.len();
        let Some(len) = rest[start..].find('"') else {
            break;
        };
        out.push_str(&rest[..start]);
        f(&rest[start..start + len], &mut out);
        rest = &rest[start + len..];
    }
    out.push_str(rest);
    out
}

/// Writes `points` (`"x,y x,y …"`) without the points that repeat their predecessor or
/// lie strictly inside a horizontal or vertical run (between its neighbours, so a turn
/// back along the same line is kept); text it cannot read is copied unchanged.
pub(crate) fn simplify_points(points: &str, out: &mut String) {
    let parsed: Option<Vec<(&str, &str)>> = points
        .split_whitespace()
        .map(|p| p.split_once(','))
        .collect();
    // plotters writes integer pixels: read those digit by digit, others with the float parser.
    let num = |v: &str| {
        let (neg, digits) = match v.strip_prefix('-') {
            Some(d) => (true, d),
            None => (false, v),
        };
        if !digits.is_empty() && digits.len() < 16 && digits.bytes().all(|b| b.is_ascii_digit()) {
            let n = digits
                .bytes()
                .fold(0i64, |n, b| n * 10 + i64::from(b - b'0'));
            (if neg { -n } else { n }) as f64
        } else {
            parse_f64(v).unwrap_or(f64::NAN)
        }
    };
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

/// One change that turns an SVG already in the page into a newly drawn one of the same
/// shape (see [`diff`]). Elements are numbered in document order, the root `<svg>` 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// Set attribute `name` of element `el` to `value` (decoded).
    Attr {
        el: usize,
        name: String,
        value: String,
    },
    /// Replace the text of element `el` (an element without child elements).
    Text { el: usize, text: String },
}

/// A byte range of the SVG string a [`Tag`] was read from.
type Span = (usize, usize);

/// One start tag of an SVG string: name, its attributes (`attrs[from..to]` of the list
/// [`tags`] returns beside), the raw text after it, and whether that text runs to the
/// element's own end (no child elements). Ranges, not slices: a [`Parsed`] keeps them with
/// its string.
#[derive(Debug, PartialEq)]
struct Tag {
    name: Span,
    from: usize,
    to: usize,
    text: Span,
    leaf: bool,
}

/// Every tag's `(name, raw value)` attributes, in order (a [`Tag`] holds its range).
type Attrs = Vec<(Span, Span)>;

/// The start tags of `svg` in document order and all their `(name, raw value)`
/// attributes; `None` for what this reader does not know (comments, declarations,
/// unquoted attributes). Scans bytes: the markup is ASCII and every split is at one.
fn tags(svg: &str) -> Option<(Vec<Tag>, Attrs)> {
    let bytes = svg.as_bytes();
    // `str::find` of an ASCII char runs core's memchr (every split is after an ASCII byte,
    // so `from` is a char boundary); a byte-by-byte scan was most of a redraw's diff.
    let find = |from: usize, want: u8| svg[from..].find(want as char).map(|p| from + p);
    let mut out = Vec::new();
    let mut attrs = Vec::new();
    let mut i = 0;
    while let Some(lt) = find(i, b'<') {
        i = lt + 1;
        match bytes.get(i) {
            Some(b'/') => {
                i = find(i, b'>')? + 1;
                continue;
            }
            Some(b'!' | b'?') | None => return None,
            _ => {}
        }
        let start = i;
        while i < bytes.len() && !matches!(bytes[i], b' ' | b'\n' | b'\t' | b'\r' | b'>' | b'/') {
            i += 1;
        }
        let name = (start, i);
        let from = attrs.len();
        let closed = loop {
            while i < bytes.len() && matches!(bytes[i], b' ' | b'\n' | b'\t' | b'\r') {
                i += 1;
            }
            match bytes.get(i)? {
                b'/' if bytes.get(i + 1) == Some(&b'>') => {
                    i += 2;
                    break true;
                }
                b'>' => {
                    i += 1;
                    break false;
                }
                _ => {}
            }
            let eq = find(i, b'=')?;
            if bytes.get(eq + 1) != Some(&b'"') {
                return None;
            }
            let q = find(eq + 2, b'"')?;
            // The name: leading blanks were skipped above; blanks before `=` are not its.
            let key_end = i + svg[i..eq].trim_end().len();
            attrs.push(((i, key_end), (eq + 2, q)));
            i = q + 1;
        };
        let (text, leaf) = if closed {
            ((i, i), true)
        } else {
            let end = find(i, b'<').unwrap_or(bytes.len());
            let after = &bytes[end..];
            let tag = &bytes[name.0..name.1];
            let leaf = after.starts_with(b"</")
                && after[2..].starts_with(tag)
                && after.get(2 + tag.len()) == Some(&b'>');
            ((i, end), leaf)
        };
        out.push(Tag {
            name,
            from,
            to: attrs.len(),
            text,
            leaf,
        });
    }
    Some((out, attrs))
}

/// An SVG string with its start tags read once (`tags`): the page keeps the drawing on
/// screen in this form, so that a redraw reads only the new drawing ([`diff_parsed`]).
#[derive(Debug)]
pub struct Parsed {
    svg: String,
    read: Option<(Vec<Tag>, Attrs)>,
}

impl Parsed {
    /// Reads `svg`'s tags (none when this reader does not know its markup).
    pub fn new(svg: String) -> Parsed {
        let read = tags(&svg);
        Parsed { svg, read }
    }

    /// The SVG text.
    pub fn as_str(&self) -> &str {
        &self.svg
    }

    /// The SVG text, taken.
    pub fn into_string(self) -> String {
        self.svg
    }

    /// How many elements it has, the root included (`None` when unread).
    pub fn elements(&self) -> Option<usize> {
        self.read.as_ref().map(|(tags, _)| tags.len())
    }

    /// The number (document order, the root 0) of the first element whose attribute
    /// `name` has the raw text `value`.
    ///
    /// ```
    /// use memfit::chart::svg::Parsed;
    /// let p = Parsed::new(r#"<svg><rect/><rect data-bar="1"><title>t</title></rect></svg>"#.into());
    /// assert_eq!((p.elements(), p.first_with("data-bar", "1"), p.first_with("data-bar", "2")), (Some(4), Some(2), None));
    /// ```
    pub fn first_with(&self, name: &str, value: &str) -> Option<usize> {
        self.next_with(0, name, value)
    }

    /// [`Parsed::first_with`] from element `from` on.
    pub fn next_with(&self, from: usize, name: &str, value: &str) -> Option<usize> {
        let (tags, attrs) = self.read.as_ref()?;
        (from..tags.len()).find(|i| {
            let t = &tags[*i];
            attrs[t.from..t.to]
                .iter()
                .any(|(k, v)| self.at(*k) == name && self.at(*v) == value)
        })
    }

    /// The numbers of the elements named `name` (`<polygon>`, say), in document order.
    pub fn all_named(&self, name: &str) -> Vec<usize> {
        let Some((tags, _)) = self.read.as_ref() else {
            return Vec::new();
        };
        (0..tags.len())
            .filter(|i| self.at(tags[*i].name) == name)
            .collect()
    }

    fn at(&self, (a, b): Span) -> &str {
        &self.svg[a..b]
    }
}

/// `text` with SVG's five character references decoded; `None` for any other `&`.
fn unescape(text: &str) -> Option<String> {
    if !text.contains('&') {
        return Some(text.to_string());
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let (c, len) = [
            ("&amp;", '&'),
            ("&lt;", '<'),
            ("&gt;", '>'),
            ("&quot;", '"'),
            ("&#39;", '\''),
            ("&apos;", '\''),
        ]
        .iter()
        .find(|(e, _)| rest.starts_with(e))
        .map(|(e, c)| (*c, e.len()))?;
        out.push(c);
        rest = &rest[len..];
    }
    out.push_str(rest);
    Some(out)
}

/// The changes that turn `old` (as drawn into the page) into `new`, and the number of
/// elements, when both have the same elements with the same attribute names in the
/// same order; `None` when they differ in shape (the caller then replaces the SVG). Text
/// changes only on elements without child elements.
///
/// A redraw for a new input mostly moves the same shapes: patching their attributes
/// instead of parsing and styling the whole SVG again is what the page does per input.
///
/// ```
/// use memfit::chart::svg::{diff, Change};
/// let old = r#"<svg><rect x="1" y="2"/><text x="3">a &amp; b</text></svg>"#;
/// let new = r#"<svg><rect x="1" y="5"/><text x="3">c</text></svg>"#;
/// let (changes, n) = diff(old, new).unwrap();
/// assert_eq!(n, 3);
/// assert_eq!(changes, [
///     Change::Attr { el: 1, name: "y".into(), value: "5".into() },
///     Change::Text { el: 2, text: "c".into() },
/// ]);
/// // A different shape: no patch.
/// assert!(diff(old, r#"<svg><rect x="1"/></svg>"#).is_none());
/// ```
pub fn diff(old: &str, new: &str) -> Option<(Vec<Change>, usize)> {
    diff_parsed(&Parsed::new(old.to_string()), &Parsed::new(new.to_string()))
}

/// [`diff`] of two drawings whose tags are already read.
pub fn diff_parsed(old: &Parsed, new: &Parsed) -> Option<(Vec<Change>, usize)> {
    let ((a, aa), (b, ba)) = (old.read.as_ref()?, new.read.as_ref()?);
    if a.len() != b.len() {
        return None;
    }
    let mut changes = Vec::new();
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        let (xs, ys) = (&aa[x.from..x.to], &ba[y.from..y.to]);
        if old.at(x.name) != new.at(y.name) || x.leaf != y.leaf || xs.len() != ys.len() {
            return None;
        }
        for (p, q) in xs.iter().zip(ys) {
            let name = new.at(q.0);
            if old.at(p.0) != name {
                return None;
            }
            let value = new.at(q.1);
            if old.at(p.1) != value {
                changes.push(Change::Attr {
                    el: i,
                    name: name.to_string(),
                    value: unescape(value)?,
                });
            }
        }
        let text = new.at(y.text);
        if old.at(x.text) != text {
            if !y.leaf {
                return None;
            }
            changes.push(Change::Text {
                el: i,
                text: unescape(text)?,
            });
        }
    }
    Some((changes, a.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An SVG as the page holds it: per element its attributes and text, decoded.
    type Doc = Vec<(String, Vec<(String, String)>, String)>;

    fn doc(svg: &str) -> Doc {
        let (tags, attrs) = tags(svg).unwrap();
        let at = |(a, b): Span| &svg[a..b];
        tags.into_iter()
            .map(|t| {
                let attrs = attrs[t.from..t.to]
                    .iter()
                    .map(|(k, v)| (at(*k).to_string(), unescape(at(*v)).unwrap()))
                    .collect();
                (at(t.name).to_string(), attrs, unescape(at(t.text)).unwrap())
            })
            .collect()
    }

    /// Property: `old`'s document with `diff(old, new)` applied is `new`'s.
    fn patched_is_new(old: &str, new: &str) -> usize {
        let (changes, n) = diff(old, new).expect("same shape");
        let mut d = doc(old);
        assert_eq!(d.len(), n);
        for c in &changes {
            match c {
                Change::Attr { el, name, value } => {
                    let a = d[*el].1.iter_mut().find(|(k, _)| k == name).unwrap();
                    a.1 = value.clone();
                }
                Change::Text { el, text } => d[*el].2 = text.clone(),
            }
        }
        assert_eq!(d, doc(new));
        changes.len()
    }

    /// The perf harness's input (the sequence length, +37 per change) on the default
    /// page's ZeRO-3 case: every consecutive pair either patches exactly into the new
    /// drawing or (the axis gained a grid line) is not patched at all; most patch.
    #[test]
    fn charts_redrawn_for_a_new_input_patch_in_place() {
        use crate::chart::{annotate, render_stacked, timeline::render_timeline, Bar, ChartSize};
        use memfit_core::contract::query::decode;
        use memfit_core::estimate::{estimate, Estimate};
        use memfit_core::units::Units;
        let size = ChartSize {
            width: 900,
            height: 380,
        };
        let chart = |e: &Estimate| {
            let bars = vec![Bar::from_estimate("now", e)];
            annotate(
                &render_stacked(&bars, e.gpu.usable_bytes, Units::Gib, size),
                &bars,
                Units::Gib,
            )
        };
        let drawn: Vec<(String, String)> = (0..12)
            .map(|i| {
                let q = format!(
                    "model=llama-2-7b&zero=3&gpus_per_node=8&seq={}",
                    1000 + 37 * i
                );
                let s = decode(&q).0.scenario;
                let e = estimate(&s);
                let t = memfit_core::timeline::timeline(&s).unwrap();
                (
                    chart(&e),
                    render_timeline(&t, e.gpu.usable_bytes, Units::Gib, size),
                )
            })
            .collect();
        let (mut charts, mut timelines) = (0, 0);
        for w in drawn.windows(2) {
            if diff(&w[0].0, &w[1].0).is_some() {
                assert!(patched_is_new(&w[0].0, &w[1].0) > 0);
                charts += 1;
            }
            if let Some((changes, n)) = diff(&w[0].1, &w[1].1) {
                assert!(
                    changes.len() < 2 * n,
                    "{} changes for {n} elements",
                    changes.len()
                );
                patched_is_new(&w[0].1, &w[1].1);
                timelines += 1;
            }
        }
        assert!(
            charts >= 6 && timelines >= 6,
            "{charts} and {timelines} of 11 patched"
        );
    }

    #[test]
    fn shapes_that_differ_are_not_patched() {
        assert!(diff("<svg><rect/></svg>", "<svg><circle/></svg>").is_none());
        assert!(diff(r#"<svg><rect x="1"/></svg>"#, r#"<svg><rect y="1"/></svg>"#).is_none());
        assert!(diff("<svg><!-- c --></svg>", "<svg></svg>").is_none());
        // Text on an element with children would wipe them: not patched.
        assert!(diff("<svg>a<rect/></svg>", "<svg>b<rect/></svg>").is_none());
        // An unknown character reference: not decoded, not patched.
        assert!(diff(
            "<svg><text>a</text></svg>",
            "<svg><text>&nbsp;</text></svg>"
        )
        .is_none());
        assert_eq!(
            unescape("&lt;&amp;&gt;&quot;&#39;").as_deref(),
            Some("<&>\"'")
        );
    }
}
