//! A template rebuilt into the allocation stream of a run: its layers laid out, every size
//! evaluated, every free pointed at its allocation, the optimizer's and `zero_grad`'s events
//! written from the parameter list.

use super::template::{Dims, Ev, GradOf, Lay, Ref, Seg, Size, Template};
use crate::allocator::StreamEvent;

/// What the optimizer allocates (PyTorch 2.x, `torch.optim`; the meta-device traces of
/// `tools/alloc_templates.py` show the same events).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OptEvents {
    /// SGD without momentum (foreach): updates in place, allocates nothing.
    None,
    /// SGD with momentum: at the first step, one buffer per parameter (`clone(grad)`).
    Momentum,
    /// AdamW, foreach: two states per parameter at the first step; every step a list of
    /// `sqrt(exp_avg_sq)`, one per parameter, freed together (`_multi_tensor_adamw`).
    AdamForeach,
    /// AdamW, fused: a 4-byte step and two states per parameter at the first step; the
    /// kernel allocates nothing after (`_fused_adamw`).
    AdamFused,
    /// AdamW, for-loop: the states, then per parameter `sqrt(exp_avg_sq)` and its quotient
    /// (`denom`), the square root freed at once, `denom` when the next one exists
    /// (`_single_tensor_adamw`).
    AdamForloop,
}

struct Out {
    events: Vec<StreamEvent>,
    next: u64,
}

impl Out {
    fn alloc(&mut self, n: u64) -> u64 {
        self.next += 1;
        self.events.push((n.min(i64::MAX as u64) as i64, self.next));
        self.next
    }
    fn free(&mut self, id: u64, n: u64) {
        self.events.push((-(n.min(i64::MAX as u64) as i64), id));
    }
}

/// The segment variant a layer uses: first, middle or last, and its type.
fn variant(seg: &str, j: u32, layers: u32, types: &Option<Vec<String>>) -> String {
    let pos = if j == 0 {
        "0"
    } else if j + 1 == layers {
        "l"
    } else {
        "m"
    };
    match types {
        Some(t) if !t.is_empty() => format!("{seg}{pos}:{}", t[j as usize % t.len()]),
        _ => format!("{seg}{pos}"),
    }
}

fn layer_type(j: u32, types: &Option<Vec<String>>) -> &str {
    match types {
        Some(t) if !t.is_empty() => &t[j as usize % t.len()],
        _ => "",
    }
}

/// `first:T` and/or `last:T` where layer `j` is the first or last of its type `T` (both where
/// it is the only one: two layers of alternating types).
fn roles(j: u32, layers: u32, types: &Option<Vec<String>>) -> Vec<String> {
    let t = layer_type(j, types);
    let same = |i: &u32| layer_type(*i, types) == t;
    let mut out = vec![];
    if (0..layers).find(same) == Some(j) {
        out.push(format!("first:{t}"));
    }
    if (0..layers).rev().find(same) == Some(j) {
        out.push(format!("last:{t}"));
    }
    out
}

/// A segment instance: (iteration, segment, layer or −1).
type Inst = (u32, Seg, i64);

/// What has been allocated: per segment instance (a slot of [`Made::slot`]), its allocations'
/// ids and bytes in order; the instance being walked apart (`cur`).
#[derive(Default)]
struct Made {
    inst: Vec<Vec<(u64, u64)>>,
    layers: usize,
    cur_key: Option<Inst>,
    cur: Vec<(u64, u64)>,
}

impl Made {
    /// The instance's slot: (iteration · 6 + segment) · (layers + 1) + layer + 1.
    fn slot(&self, (it, seg, j): Inst) -> Option<usize> {
        let j = usize::try_from(j + 1).ok().filter(|j| *j <= self.layers)?;
        Some((it as usize * 6 + seg as usize) * (self.layers + 1) + j)
    }

    fn allocations(&self, k: &Inst) -> Option<&[(u64, u64)]> {
        if self.cur_key.as_ref() == Some(k) {
            Some(&self.cur)
        } else {
            self.inst.get(self.slot(*k)?).map(Vec::as_slice)
        }
    }
}

/// The stream of `iters` iterations at `d` with `layers` layers: the resident tensors (the
/// parameters in order, then buffers and the input ids) and the events.
///
/// # Errors
/// A template that names an allocation it does not hold, or a layer layout it was not
/// derived for (fewer than two layers, a last layer of a type it has no segment for).
pub fn stream(
    t: &Template,
    d: &Dims,
    layers: u32,
    opt: OptEvents,
    iters: u32,
) -> Result<(Vec<u64>, Vec<StreamEvent>), String> {
    if layers < 2 {
        return Err("the templates need at least two layers".into());
    }
    let params = param_sizes(t, d, layers);
    let mut w = Walk {
        t,
        d,
        layers,
        out: Out {
            events: Vec::with_capacity(64 * 1024),
            next: 0,
        },
        made: Made {
            layers: layers as usize,
            ..Made::default()
        },
        grads: vec![None; params.len()],
    };
    let mut state: Vec<u64> = vec![];
    for it in 0..iters {
        w.grads.iter_mut().for_each(|g| *g = None);
        let mut plan: Vec<(Seg, Option<u32>)> = vec![(Seg::P, None)];
        plan.extend((0..layers).map(|j| (Seg::F, Some(j))));
        plan.extend([(Seg::H, None), (Seg::Hb, None)]);
        plan.extend((0..layers).rev().map(|j| (Seg::B, Some(j))));
        plan.push((Seg::Eb, None));
        for (seg, j) in plan {
            w.segment(it, seg, j)?;
        }
        optimizer(&mut w.out, &params, opt, it, &mut state);
        zero_grad(&mut w.out, &params, &w.grads)?;
    }
    let mut resident: Vec<u64> = match &t.resident {
        Some([pre, layer, post]) => {
            let mut v: Vec<u64> = pre.iter().map(|s| s.at(d)).collect();
            for _ in 0..layers {
                v.extend(layer.iter().map(|s| s.at(d)));
            }
            v.extend(post.iter().map(|s| s.at(d)));
            v
        }
        None => params.iter().map(|p| p.2).collect(),
    };
    resident.extend(t.extra.iter().map(|s| s.at(d)));
    Ok((resident, w.out.events))
}

/// The rebuilding of one stream: the template, the run, the events so far.
struct Walk<'a> {
    t: &'a Template,
    d: &'a Dims,
    layers: u32,
    out: Out,
    made: Made,
    /// This iteration's gradients by parameter position: their allocations.
    grads: Vec<Option<u64>>,
}

impl Walk<'_> {
    /// One segment instance of iteration `it` (layer `j` for `F` and `B`): its events, with
    /// the pinned frees of model-level tensors where this layer is their last user.
    fn segment(&mut self, it: u32, seg: Seg, j: Option<u32>) -> Result<(), String> {
        let (t, layers) = (self.t, self.layers);
        let tm = &t.its[(it > 0) as usize];
        let name = match (seg, j) {
            (Seg::F, Some(j)) => variant("F", j, layers, &t.types),
            (Seg::B, Some(j)) => variant("B", j, layers, &t.types),
            (Seg::P, _) => "P".into(),
            (Seg::H, _) => "H".into(),
            (Seg::Hb, _) => "HB".into(),
            _ => "EB".into(),
        };
        let list: &[Ev] = tm.segs.get(&name).map_or(&[], |v| v.as_slice());
        if list.is_empty() && matches!(seg, Seg::F | Seg::B) {
            return Err(format!("the template has no segment {name}"));
        }
        let pins = pins_at(t, tm, seg, j, layers, list.len());
        let lj = j.map_or(-1, i64::from);
        self.made.cur_key = Some((it, seg, lj));
        for k in 0..=list.len() {
            for (_, r) in pins.iter().filter(|(p, _)| *p == k) {
                free_ref(&mut self.out, &self.made, it, r, j, layers)?;
            }
            let Some(e) = list.get(k) else { break };
            match e {
                Ev::Alloc(size, grad) => {
                    let n = size.at(self.d);
                    let id = self.out.alloc(n);
                    self.made.cur.push((id, n));
                    if let Some(g) = grad {
                        let k = param_index(t, *g, j, layers);
                        if let Some(x) = k.and_then(|k| self.grads.get_mut(k)) {
                            *x = Some(id);
                        }
                    }
                }
                Ev::Free(r) => free_ref(&mut self.out, &self.made, it, r, j, layers)?,
                Ev::EachLayer(r) => {
                    for l in 0..layers {
                        let r = Ref {
                            lay: Lay::Abs(l as i32),
                            ..*r
                        };
                        free_ref(&mut self.out, &self.made, it, &r, j, layers)?;
                    }
                }
            }
        }
        let done = std::mem::take(&mut self.made.cur);
        let k = self
            .made
            .slot((it, seg, lj))
            .ok_or("a segment out of the layers")?;
        if self.made.inst.len() <= k {
            self.made.inst.resize(k + 1, vec![]);
        }
        self.made.inst[k] = done;
        self.made.cur_key = None;
        Ok(())
    }
}

/// The pinned frees (position in the segment, the free) of model-level tensors whose last user
/// is layer `j` in segment `seg`; the last backward also takes those of a type no layer has
/// (fewer layers than its period).
fn pins_at(
    t: &Template,
    tm: &super::template::Iter,
    seg: Seg,
    j: Option<u32>,
    layers: u32,
    len: usize,
) -> Vec<(usize, Ref)> {
    let mut rs = j.map_or(vec![], |j| roles(j, layers, &t.types));
    if seg == Seg::B && j == Some(0) {
        let absent = |r: &&str| {
            let ty = r.split_once(':').map_or("", |x| x.1);
            !(0..layers).any(|i| layer_type(i, &t.types) == ty)
        };
        let extra: Vec<String> = tm
            .pins
            .iter()
            .map(|p| p.role.as_str())
            .filter(absent)
            .map(str::to_string)
            .collect();
        rs.extend(extra);
    }
    tm.pins
        .iter()
        .filter(|p| p.seg == seg && rs.contains(&p.role))
        .map(|p| (p.pos.min(len), p.free))
        .collect()
}

fn free_ref(
    out: &mut Out,
    made: &Made,
    it: u32,
    r: &Ref,
    j: Option<u32>,
    layers: u32,
) -> Result<(), String> {
    let lj = r.lay.resolve(j, layers).unwrap_or(-1);
    let key = (it.wrapping_sub(r.iters_back), r.seg, lj);
    let list = made.allocations(&key).unwrap_or(&[]);
    let idx = if r.idx < 0 {
        r.idx + list.len() as i64
    } else {
        r.idx
    };
    let (id, n) = usize::try_from(idx)
        .ok()
        .and_then(|i| list.get(i))
        .ok_or_else(|| {
            format!("a free of an allocation the template does not hold: {key:?} {idx}")
        })?;
    out.free(*id, *n);
    Ok(())
}

/// A gradient's parameter position in `model.parameters()` order (before the layers, per
/// layer, after).
fn param_index(t: &Template, g: GradOf, j: Option<u32>, layers: u32) -> Option<usize> {
    let (pre, per) = (t.pre.len(), t.layer.len());
    match g {
        GradOf::Pre(k) => Some(k as usize),
        GradOf::Post(k) => Some(pre + per * layers as usize + k as usize),
        GradOf::Layer(l, k) => {
            let lj = usize::try_from(l.resolve(j, layers)?).ok()?;
            Some(pre + per * lj + k as usize)
        }
    }
}

/// The trainable parameters as (group, layer, index, bytes), in `model.parameters()` order.
fn param_sizes(t: &Template, d: &Dims, layers: u32) -> Vec<(u8, i64, u64)> {
    let bytes = |s: &Size| s.at(d);
    let mut v: Vec<(u8, i64, u64)> = t.pre.iter().map(|s| (0, -1, bytes(s))).collect();
    for j in 0..layers as i64 {
        v.extend(t.layer.iter().map(|s| (1, j, bytes(s))));
    }
    v.extend(t.post.iter().map(|s| (2, -1, bytes(s))));
    v
}

/// The optimizer step's events (see [`OptEvents`]); `state` keeps what the first step
/// created.
fn optimizer(
    out: &mut Out,
    params: &[(u8, i64, u64)],
    opt: OptEvents,
    it: u32,
    state: &mut Vec<u64>,
) {
    if it == 0 {
        for &(_, _, n) in params {
            match opt {
                OptEvents::Momentum => state.push(out.alloc(n)),
                OptEvents::AdamFused => {
                    state.push(out.alloc(4));
                    state.push(out.alloc(n));
                    state.push(out.alloc(n));
                }
                OptEvents::AdamForeach | OptEvents::AdamForloop => {
                    state.push(out.alloc(n));
                    state.push(out.alloc(n));
                }
                OptEvents::None => {}
            }
        }
    }
    match opt {
        OptEvents::AdamForeach => {
            let sq: Vec<(u64, u64)> = params.iter().map(|p| (out.alloc(p.2), p.2)).collect();
            for (id, n) in sq {
                out.free(id, n);
            }
        }
        OptEvents::AdamForloop => {
            let mut prev: Option<(u64, u64)> = None;
            for &(_, _, n) in params {
                let sq = out.alloc(n);
                let denom = out.alloc(n);
                out.free(sq, n);
                if let Some((id, m)) = prev {
                    out.free(id, m);
                }
                prev = Some((denom, n));
            }
            if let Some((id, m)) = prev {
                out.free(id, m);
            }
        }
        _ => {}
    }
}

/// `zero_grad(set_to_none=True)`: every parameter's gradient freed.
fn zero_grad(
    out: &mut Out,
    params: &[(u8, i64, u64)],
    grads: &[Option<u64>],
) -> Result<(), String> {
    for (i, &(_, _, n)) in params.iter().enumerate() {
        let id = grads
            .get(i)
            .copied()
            .flatten()
            .ok_or_else(|| format!("no gradient for parameter {i}"))?;
        out.free(id, n);
    }
    Ok(())
}
