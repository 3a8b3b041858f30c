//! The op-level allocation templates as data: what `tools/alloc_templates.py` wrote from
//! `transformers` traced on the meta device, parsed into types.
//!
//! A template holds one training iteration's allocations and frees (the first iteration
//! apart, it creates what later ones reuse), cut at the decoder layers, with every size a
//! formula of the run's dimensions ([`Size`]). See `opstream` for how a stream is rebuilt.

use std::collections::BTreeMap;

/// The symbols a size may use, in the data's order: micro-batch `b`, sequence `s`, `s + 1`,
/// `s` rounded up to 32 (the memory-efficient kernel's log-sum-exp rows), hidden `h`, FFN `f`, vocabulary `V`, KV heads `kv`, query heads per KV head `g`, `g + 2`,
/// head size `d`, learned positions `P`, LoRA rank `r`.
pub const SYMBOLS: [&str; 13] = [
    "b", "s", "s1", "s32", "h", "f", "V", "kv", "g", "g2", "d", "P", "r",
];

/// The dimensions a stream is rebuilt at (all ≥ 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Dims {
    /// Micro-batch, sequences.
    pub b: u64,
    /// Sequence length, tokens.
    pub s: u64,
    /// Hidden width.
    pub h: u64,
    /// FFN width.
    pub f: u64,
    /// Vocabulary.
    pub v: u64,
    /// KV heads.
    pub kv: u64,
    /// Query heads per KV head (1 for multi-head attention).
    pub g: u64,
    /// Head size.
    pub d: u64,
    /// Learned positions (GPT-2's `n_positions`; 1 where there are none).
    pub p: u64,
    /// LoRA rank (1 without adapters).
    pub r: u64,
}

impl Dims {
    fn symbol(&self, k: usize) -> u128 {
        let v = match k {
            0 => self.b,
            1 => self.s,
            2 => self.s + 1,
            3 => self.s.div_ceil(32) * 32,
            4 => self.h,
            5 => self.f,
            6 => self.v,
            7 => self.kv,
            8 => self.g,
            9 => self.g + 2,
            10 => self.d,
            11 => self.p,
            _ => self.r,
        };
        v as u128
    }
}

/// A tensor's bytes as `num/den · Π symbolᵉ`.
///
/// # Formula
/// `bytes = ⌊num · Π_k x_kᵉᵏ / den⌋`, `x_k` the [`SYMBOLS`] at the run's [`Dims`]; `num/den`
/// is the dtype's bytes times a count (e.g. `2*b*s*h`: a bf16 hidden state; `4*b*s*V`: the
/// loss's fp32 logits; `3/4*…`: Phi-4-mini's rotary share).
///
/// # Example
/// `4*b*s*V` at b = 4, s = 4,096, V = 128,256: 4·4·4,096·128,256 = 8,405,385,216 B.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size {
    num: u64,
    den: u64,
    exps: [u8; 13],
}

impl Size {
    /// Parses `num[/den]*sym[^e]*…`.
    pub fn parse(text: &str) -> Result<Size, String> {
        let mut parts = text.split('*');
        let head = parts.next().unwrap_or_default();
        let (n, d) = head.split_once('/').unwrap_or((head, "1"));
        let bad = || format!("size `{text}`: not num[/den]*symbol^e…");
        let num = n.parse::<u64>().map_err(|_| bad())?;
        let den = d.parse::<u64>().map_err(|_| bad())?;
        if den == 0 {
            return Err(bad());
        }
        let mut exps = [0u8; 13];
        for t in parts {
            let (sym, e) = t.split_once('^').unwrap_or((t, "1"));
            let k = SYMBOLS.iter().position(|x| *x == sym).ok_or_else(bad)?;
            exps[k] = exps[k].saturating_add(e.parse::<u8>().map_err(|_| bad())?);
        }
        Ok(Size { num, den, exps })
    }

    /// The bytes at `d` (saturating at `u64::MAX`).
    pub fn at(&self, d: &Dims) -> u64 {
        let mut x = self.num as u128;
        for (k, &e) in self.exps.iter().enumerate() {
            for _ in 0..e {
                x = x.saturating_mul(d.symbol(k));
            }
        }
        (x / self.den as u128).min(u64::MAX as u128) as u64
    }
}

/// The segments of an iteration: before the layers (`P`), a layer's forward (`F`), after
/// the layers (`H`: final norm, head, loss), the loss's backward down to the last layer
/// (`HB`), a layer's backward (`B`, a checkpointed layer's recompute included), below the
/// layers (`EB`: the embedding's backward).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Seg {
    P,
    F,
    H,
    Hb,
    B,
    Eb,
}

impl Seg {
    fn parse(s: &str) -> Result<Seg, String> {
        Ok(match s {
            "P" => Seg::P,
            "F" => Seg::F,
            "H" => Seg::H,
            "HB" => Seg::Hb,
            "B" => Seg::B,
            "EB" => Seg::Eb,
            _ => return Err(format!("unknown segment `{s}`")),
        })
    }
}

/// Which layer an allocation was made in, seen from the event that names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lay {
    /// A segment outside the layers.
    Model,
    /// `j` layers after the naming event's own layer.
    Rel(i32),
    /// Layer `j` from the first (`j ≥ 0`) or from the end (`j < 0`: −1 is the last).
    Abs(i32),
}

impl Lay {
    /// `rN` (relative), `aN` (from the start or end), empty: a model-level segment.
    fn parse(s: &str) -> Result<Lay, String> {
        if s.is_empty() {
            return Ok(Lay::Model);
        }
        let n = s
            .get(1..)
            .and_then(|x| x.parse::<i32>().ok())
            .ok_or_else(|| format!("layer `{s}`"))?;
        match s.as_bytes().first() {
            Some(b'r') => Ok(Lay::Rel(n)),
            Some(b'a') => Ok(Lay::Abs(n)),
            _ => Err(format!("layer `{s}`")),
        }
    }

    /// The layer index, for an event at layer `at` of `layers`.
    pub fn resolve(self, at: Option<u32>, layers: u32) -> Option<i64> {
        match self {
            Lay::Model => None,
            Lay::Rel(k) => Some(at.map_or(0, i64::from) + k as i64),
            Lay::Abs(k) => Some((k as i64).rem_euclid(layers as i64)),
        }
    }
}

/// The allocation a free ends: iterations back, its segment, its layer, its index among the
/// segment instance's allocations (from the end when negative: another layer's segment, whose
/// start differs between layer types while its end does not).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ref {
    pub iters_back: u32,
    pub seg: Seg,
    pub lay: Lay,
    pub idx: i64,
}

/// The parameter whose `.grad` an allocation becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GradOf {
    /// The `k`-th parameter before the layers.
    Pre(u32),
    /// The `k`-th parameter after the layers.
    Post(u32),
    /// The `k`-th parameter of a layer.
    Layer(Lay, u32),
}

impl GradOf {
    fn parse(s: &str) -> Result<GradOf, String> {
        let (w, k) = s.split_once(':').ok_or_else(|| format!("grad `{s}`"))?;
        let k = k.parse::<u32>().map_err(|_| format!("grad `{s}`"))?;
        Ok(match w {
            "pre" => GradOf::Pre(k),
            "post" => GradOf::Post(k),
            _ => GradOf::Layer(Lay::parse(w)?, k),
        })
    }
}

/// One event of a template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ev {
    /// An allocation, and the parameter it becomes the gradient of.
    Alloc(Size, Option<GradOf>),
    /// A free.
    Free(Ref),
    /// A free of the same allocation of every layer, first to last (outside the layers:
    /// autocast's weight cache dropped as the forward leaves autocast).
    EachLayer(Ref),
}

/// A free of a model-level tensor (a mask, the rotary pair) by its last user: the first or
/// last layer of a type, at position `pos` of that layer's segment `seg`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pin {
    pub seg: Seg,
    pub role: String,
    pub pos: usize,
    pub free: Ref,
}

/// One iteration's segments (`"F0"`, `"Fm"`, `"Fl"` for the first, a middle and the last
/// layer, with `":type"` where layer types alternate) and pins.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Iter {
    pub segs: BTreeMap<String, Vec<Ev>>,
    pub pins: Vec<Pin>,
}

/// A template: iteration 0 and every later iteration, the trainable parameters' sizes in
/// `model.parameters()` order (before, per layer, after the layers), the other resident
/// tensors (buffers, the input ids), the layer types' period.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Template {
    pub its: [Iter; 2],
    pub pre: Vec<Size>,
    pub layer: Vec<Size>,
    pub post: Vec<Size>,
    pub extra: Vec<Size>,
    pub types: Option<Vec<String>>,
    /// Every parameter, frozen ones too (a LoRA base), before, per layer and after the layers;
    /// `None`: the trainable ones are all.
    pub resident: Option<[Vec<Size>; 3]>,
}

/// The data `tools/alloc_templates.py --merge` writes, as lines: `size F` per size and `seg
/// TEXT` per segment (named by their order), then per template `tmpl KEY` and its lines
/// (`it0`/`it1`: `NAME=SEG …`; `pins0`/`pins1`: `SEG;ROLE;POS;FREE …`; `pre`/`layer`/`post`/
/// `extra`: size indices; `rpre`/`rlayer`/`rpost`: every parameter where frozen ones are
/// resident too; `types`). A segment is one string of events separated by spaces: `N`
/// allocates size N, `N@G` also becomes parameter G's gradient, `~dit,seg,layer,idx` frees
/// (layer empty for a model-level segment), `-N` frees the segment's own allocation N, `=N` (in
/// a layer's backward) its forward's, `*dit,seg,idx` frees that allocation of every layer; a
/// segment `^N K<n> D<n> tok…` is segment N edited.
pub struct Data {
    sizes: Vec<Size>,
    segs: Vec<String>,
    templates: BTreeMap<String, Vec<String>>,
}

impl Data {
    /// Reads the lines: the sizes parsed, the segments and templates kept for
    /// [`Data::template`].
    pub fn parse(text: &str) -> Result<Data, String> {
        let (mut sizes, mut segs) = (vec![], vec![]);
        let mut templates = BTreeMap::new();
        let mut cur: Option<(String, Vec<String>)> = None;
        for line in text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
        {
            let (tag, rest) = line.split_once(' ').unwrap_or((line, ""));
            match tag {
                "size" => sizes.push(Size::parse(rest)?),
                "seg" => segs.push(rest.to_string()),
                "tmpl" => {
                    if let Some((k, v)) = cur.replace((rest.to_string(), vec![])) {
                        templates.insert(k, v);
                    }
                }
                _ => cur
                    .as_mut()
                    .ok_or_else(|| format!("a `{tag}` line before any template"))?
                    .1
                    .push(line.to_string()),
            }
        }
        if let Some((k, v)) = cur {
            templates.insert(k, v);
        }
        Ok(Data {
            sizes,
            segs,
            templates,
        })
    }

    /// The keys of every template.
    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.templates.keys()
    }

    /// Whether a template has this key.
    pub fn has(&self, key: &str) -> bool {
        self.templates.contains_key(key)
    }

    fn size(&self, tok: &str) -> Result<Size, String> {
        tok.parse::<usize>()
            .ok()
            .and_then(|k| self.sizes.get(k).copied())
            .ok_or_else(|| format!("size index `{tok}`"))
    }

    fn sizes_of(&self, rest: &str) -> Result<Vec<Size>, String> {
        rest.split(' ')
            .filter(|t| !t.is_empty())
            .map(|t| self.size(t))
            .collect()
    }

    /// One event of a segment of kind `kind` (`-N` and `=N` name the segment's own
    /// allocations and, in a layer's backward, its forward's).
    fn event(&self, tok: &str, kind: Option<Seg>) -> Result<Ev, String> {
        let own = |seg: Seg, idx: &str| -> Result<Ev, String> {
            let lay = if matches!(seg, Seg::F | Seg::B) {
                Lay::Rel(0)
            } else {
                Lay::Model
            };
            Ok(Ev::Free(Ref {
                iters_back: 0,
                seg,
                lay,
                idx: num(idx)?,
            }))
        };
        match (tok.as_bytes().first(), kind) {
            (Some(b'-'), Some(k)) => return own(k, &tok[1..]),
            (Some(b'='), Some(Seg::B)) => return own(Seg::F, &tok[1..]),
            (Some(b'-' | b'='), _) => return Err(format!("event `{tok}` outside its segment")),
            _ => {}
        }
        if let Some(r) = tok.strip_prefix('*') {
            let p: Vec<&str> = r.split(',').collect();
            let [dit, seg, idx] = p[..] else {
                return Err(format!("event `{tok}`"));
            };
            let r = Ref {
                iters_back: num(dit)? as u32,
                seg: Seg::parse(seg)?,
                lay: Lay::Model,
                idx: num(idx)?,
            };
            return Ok(Ev::EachLayer(r));
        }
        if let Some(r) = tok.strip_prefix('~') {
            let p: Vec<&str> = r.split(',').collect();
            let [dit, seg, lay, idx] = p[..] else {
                return Err(format!("event `{tok}`"));
            };
            let r = Ref {
                iters_back: num(dit)? as u32,
                seg: Seg::parse(seg)?,
                lay: Lay::parse(lay)?,
                idx: num(idx)?,
            };
            return Ok(Ev::Free(r));
        }
        let (size, grad) = match tok.split_once('@') {
            Some((a, g)) => (a, Some(GradOf::parse(g)?)),
            None => (tok, None),
        };
        let k: usize = size.parse().map_err(|_| format!("event `{tok}`"))?;
        let size = *self.sizes.get(k).ok_or("a size index out of range")?;
        Ok(Ev::Alloc(size, grad))
    }

    /// Segment `k`'s tokens: its text, or (`^N K<n> D<n> tok…`) segment N's tokens edited —
    /// keep n, drop n, insert tok (a first or last layer written against a middle one).
    fn tokens(&self, k: usize) -> Result<Vec<&str>, String> {
        let text = self.segs.get(k).ok_or("a segment index out of range")?;
        let mut toks = text.split(' ').filter(|t| !t.is_empty());
        let Some(base) = text.strip_prefix('^').and_then(|_| toks.next()) else {
            return Ok(toks.collect());
        };
        let b: usize = base[1..]
            .parse()
            .map_err(|_| format!("segment base `{base}`"))?;
        if self.segs.get(b).is_some_and(|t| t.starts_with('^')) {
            return Err("an edited segment edits an edited one".into());
        }
        let from = self.tokens(b)?;
        let (mut out, mut i) = (Vec::with_capacity(from.len() + 8), 0usize);
        for t in toks {
            let n = || t[1..].parse::<usize>().map_err(|_| format!("edit `{t}`"));
            match t.as_bytes().first() {
                Some(b'K') => {
                    let n = n()?;
                    out.extend(from.get(i..i + n).ok_or("an edit past its base")?);
                    i += n;
                }
                Some(b'D') => i += n()?,
                _ => out.push(t),
            }
        }
        Ok(out)
    }

    fn segment(&self, k: usize, kind: Seg) -> Result<Vec<Ev>, String> {
        self.tokens(k)?
            .into_iter()
            .map(|t| self.event(t, Some(kind)))
            .collect()
    }

    /// An `it0`/`it1` line's segments (`NAME=SEG …`).
    fn iteration(&self, rest: &str) -> Result<Iter, String> {
        let mut it = Iter::default();
        for pair in rest.split(' ').filter(|t| !t.is_empty()) {
            let (name, k) = pair
                .split_once('=')
                .ok_or_else(|| format!("segment `{pair}`"))?;
            let k: usize = k.parse().map_err(|_| format!("segment `{pair}`"))?;
            let kind = match name.as_bytes().first() {
                Some(b'F') => Seg::F,
                Some(b'B') => Seg::B,
                _ => Seg::parse(name)?,
            };
            it.segs.insert(name.to_string(), self.segment(k, kind)?);
        }
        Ok(it)
    }

    /// A `pins0`/`pins1` line (`SEG;ROLE;POS;FREE …`).
    fn pins(&self, rest: &str) -> Result<Vec<Pin>, String> {
        let mut out = vec![];
        for p in rest.split(' ').filter(|t| !t.is_empty()) {
            let f: Vec<&str> = p.split(';').collect();
            let [seg, role, pos, free] = f[..] else {
                return Err(format!("pin `{p}`"));
            };
            let Ev::Free(free) = self.event(free, None)? else {
                return Err("a pin that is not a free".into());
            };
            let pos = pos.parse().map_err(|_| format!("pin `{p}`"))?;
            let seg = Seg::parse(seg)?;
            let role = role.to_string();
            out.push(Pin {
                seg,
                role,
                pos,
                free,
            });
        }
        Ok(out)
    }

    /// The template of `key`, parsed.
    pub fn template(&self, key: &str) -> Result<Template, String> {
        let lines = self
            .templates
            .get(key)
            .ok_or_else(|| format!("no template {key}"))?;
        let mut its: [Option<Iter>; 2] = [None, None];
        let mut pins: [Vec<Pin>; 2] = [vec![], vec![]];
        let (mut lists, mut res) = ([vec![], vec![], vec![], vec![]], [vec![], vec![], vec![]]);
        let (mut types, mut resident) = (None, false);
        for line in lines {
            let (tag, rest) = line.split_once(' ').unwrap_or((line, ""));
            match tag {
                "it0" | "it1" => its[(tag == "it1") as usize] = Some(self.iteration(rest)?),
                "pins0" | "pins1" => pins[(tag == "pins1") as usize] = self.pins(rest)?,
                "pre" => lists[0] = self.sizes_of(rest)?,
                "layer" => lists[1] = self.sizes_of(rest)?,
                "post" => lists[2] = self.sizes_of(rest)?,
                "extra" => lists[3] = self.sizes_of(rest)?,
                "rpre" | "rlayer" | "rpost" => {
                    resident = true;
                    let g = ["rpre", "rlayer", "rpost"].iter().position(|x| *x == tag);
                    res[g.unwrap_or(0)] = self.sizes_of(rest)?;
                }
                "types" => types = Some(rest.split(' ').map(str::to_string).collect()),
                _ => return Err(format!("{key}: unknown line `{tag}`")),
            }
        }
        let mut first = its[0].take().ok_or_else(|| format!("{key}: no it0"))?;
        first.pins = std::mem::take(&mut pins[0]);
        // a template without `it1` repeats its first iteration
        let later = match its[1].take() {
            Some(mut it) => {
                it.pins = std::mem::take(&mut pins[1]);
                it
            }
            None => first.clone(),
        };
        let [pre, layer, post, extra] = lists;
        Ok(Template {
            its: [first, later],
            pre,
            layer,
            post,
            extra,
            types,
            resident: resident.then_some(res),
        })
    }
}

fn num(s: &str) -> Result<i64, String> {
    s.parse().map_err(|_| format!("a number: `{s}`"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_formulas_of_the_dims() {
        let d = Dims {
            b: 4,
            s: 4096,
            h: 3072,
            f: 8192,
            v: 128_256,
            kv: 8,
            g: 3,
            d: 128,
            p: 1,
            r: 1,
        };
        // the loss's fp32 logits: 4·b·s·V
        assert_eq!(
            Size::parse("4*b*s*V").unwrap().at(&d),
            4 * 4 * 4096 * 128_256
        );
        // the shifted labels: 8·b·(s + 1)
        assert_eq!(Size::parse("8*b*s1").unwrap().at(&d), 8 * 4 * 4097);
        // fused q, k, v of a GQA model: 2·b·s·kv·(g + 2)·d
        assert_eq!(
            Size::parse("2*b*s*kv*g2*d").unwrap().at(&d),
            2 * 4 * 4096 * 8 * 5 * 128
        );
        // a rotary share of 3/4 of the head: 3/4·4·s·d
        assert_eq!(Size::parse("3/1*s*d").unwrap().at(&d), 3 * 4096 * 128);
        assert_eq!(Size::parse("3/4*s^2").unwrap().at(&d), 3 * 4096 * 4096 / 4);
        assert!(Size::parse("2*b*x").is_err());
        assert!(Size::parse("1/0*b").is_err());
    }
}
