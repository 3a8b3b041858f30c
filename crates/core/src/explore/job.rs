//! The sweep itself, resumable in slices (`SweepJob`) so the page stays responsive:
//! every layout of a cluster, ranked, trimmed to the best.

use super::*;
use crate::scenario::Layout;

/// One degree set of the sweep: TP, PP, CP and sequence parallelism (DP follows).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Degrees {
    pub(crate) ti: usize,
    pub(crate) pi: usize,
    pub(crate) tp: u32,
    pub(crate) pp: u32,
    pub(crate) cp: u32,
    pub(crate) sp: bool,
}

/// A sweep that can run a slice at a time (the page runs it between frames so that
/// typing never waits for it; the CLI runs it to the end at once).
pub struct SweepJob {
    base: Scenario,
    w: Scenario,
    p: Prepared,
    usable: u64,
    limit: Option<usize>,
    first_fit: bool,
    shard: Vec<(Zero, Fsdp)>,
    offs: Vec<Offload>,
    recs: Vec<Recompute>,
    todo: Vec<Degrees>,
    next: usize,
    combos: Vec<Combo>,
    pub(crate) out: Sweep,
}

impl SweepJob {
    /// Prepares the sweep of `s`'s cluster; `limit` bounds the listed layouts
    /// (`None`: all); with `first_fit` it stops at the first layout that fits.
    pub fn new(s: &Scenario, limit: Option<usize>, first_fit: bool) -> SweepJob {
        let p = Prepared::of(s);
        let n = s.world();
        let tps = tp_options(s, &p, n);
        let pps = pp_options(s, n, p.arch.layers.get());
        let mut cells: Vec<Cell> = Vec::with_capacity(4 * tps.len() * pps.len());
        for z in [Zero::Z0, Zero::Z1, Zero::Z2, Zero::Z3] {
            for &pp in &pps {
                for &tp in &tps {
                    cells.push(Cell {
                        zero: z,
                        tp,
                        pp,
                        best: None,
                        closest: None,
                    });
                }
            }
        }
        let seq = s.workload.seq.get();
        let mut todo = Vec::new();
        for (ti, &tp) in tps.iter().enumerate() {
            for (pi, &pp) in pps.iter().enumerate() {
                if !(n / tp).is_multiple_of(pp) {
                    continue;
                }
                let cps: Vec<u32> = if s.workload.mode != Mode::Train {
                    vec![1]
                } else {
                    divisors(n / tp / pp)
                        .into_iter()
                        .filter(|&c| seq.is_multiple_of(c))
                        .collect()
                };
                for cp in cps {
                    for sp in [false, true] {
                        if sp && (tp == 1 || s.workload.mode != Mode::Train) {
                            continue;
                        }
                        todo.push(Degrees {
                            ti,
                            pi,
                            tp,
                            pp,
                            cp,
                            sp,
                        });
                    }
                }
            }
        }
        let shard = shardings(s);
        let offs = offloads(s);
        SweepJob {
            base: s.clone(),
            w: s.clone(),
            usable: s.usable_bytes(),
            limit,
            first_fit,
            combos: Vec::with_capacity(shard.len() * offs.len()),
            shard,
            offs,
            recs: recomputes(s),
            todo,
            next: 0,
            out: Sweep {
                gpus: n,
                evaluated: 0,
                fitting: 0,
                layouts: Vec::new(),
                tps,
                pps,
                cells,
                inference: s.workload.mode != Mode::Train,
                pytorch: s.stack.framework == Framework::Pytorch,
            },
            p,
        }
    }

    /// Whether every layout has been evaluated (or, with `first_fit`, one fits).
    pub fn done(&self) -> bool {
        self.next >= self.todo.len() || (self.first_fit && self.out.fitting > 0)
    }

    /// Evaluates degree sets until at least `layouts` more layouts have been
    /// evaluated or the sweep is done; returns `done()`.
    pub fn step(&mut self, layouts: u64) -> bool {
        let goal = self.out.evaluated.saturating_add(layouts);
        while !self.done() && self.out.evaluated < goal {
            let d = self.todo[self.next];
            self.next += 1;
            self.degree_set(d);
        }
        self.done()
    }

    /// The result: fitting layouts best first (at most the limit), and the cells.
    pub fn finish(mut self) -> Sweep {
        keep_best(&mut self.out.layouts, self.limit.unwrap_or(usize::MAX));
        self.out.layouts.sort_unstable_by(rank);
        self.out
    }

    /// The sharding × offload combinations of the current degrees, each with its model
    /// states tallied once for the two end stages when the cached path applies.
    fn prepare_combos(&mut self, l: &Layout, ends: &[Stage; 2], n_stages: usize) {
        let (s, p, w) = (&self.base, &self.p, &mut self.w);
        self.combos.clear();
        for &(zero, fsdp) in &self.shard {
            for &off in &self.offs {
                let mut c = Combo {
                    zero,
                    fsdp,
                    offload_opt: off,
                    offload_param: Offload::None,
                    states: [Tally::default(); 2],
                    cached: false,
                    comm_dp: 0,
                    alive: true,
                    clean: true,
                    megatron: false,
                };
                c.set(w);
                if w.zero() == Zero::Z3 {
                    c.offload_param = s.offload.params;
                    w.offload.params = s.offload.params;
                }
                // PyTorch's backward trades activations for gradients (both sides of
                // the cache), and FSDP's forward counts its prefetched block against the
                // logits (`train::fsdp_unsharded_buffers`, which depend on the
                // micro-batch), so their layouts take the full path.
                c.cached =
                    route(w) == Route::Train && !train::pytorch_grads(w) && w.fsdp() == Fsdp::None;
                c.megatron = route(w) == Route::Megatron;
                c.clean = c.megatron || is_clean(w, p);
                if c.cached {
                    for (st, out) in ends.iter().zip(c.states.iter_mut()).take(n_stages) {
                        let mut lg = Ledger::tally();
                        train::model_states(w, &p.arch, p.psi, p.largest, l, st, &mut lg);
                        train::overhead_items(w, l, p.largest, &mut lg);
                        *out = lg.totals();
                    }
                }
                c.comm_dp = data_parallel_comm(w, p, &ends[0]);
                self.combos.push(c);
            }
        }
    }

    /// Every sharding × offload × recomputation × micro-batch of one degree set.
    pub(crate) fn degree_set(&mut self, d: Degrees) {
        let Degrees {
            ti,
            pi,
            tp,
            pp,
            cp,
            sp,
        } = d;
        let (s, p, w) = (&self.base, &self.p, &mut self.w);
        let dp = self.out.gpus / (tp * pp * cp);
        set_degrees(w, s, tp, pp, cp, sp);
        let l = w.layout();
        let n_st = stage_count(&p.arch, &l);
        let ends = [
            Stage::of(&p.arch, n_st, 0),
            Stage::of(&p.arch, n_st, n_st.get() - 1),
        ];
        let n_stages = if n_st.get() > 1 { 2 } else { 1 };
        self.prepare_combos(&l, &ends, n_stages);
        let (p, w) = (&self.p, &mut self.w);
        let pps = self.out.pps.len();
        let tps = self.out.tps.len();
        for &rc in &self.recs {
            w.activations.recompute = rc;
            w.workload.batch = crate::scenario::count(1);
            revive(&mut self.combos, w, p);
            let mut b = 1u32;
            let serve = w.workload.mode == Mode::Serve;
            while self.combos.iter().any(|c| c.alive) {
                w.workload.batch = crate::scenario::at_least_one(b);
                let acts = stage_activations(w, p, &l, &ends, n_stages);
                // What every combination of this batch shares.
                let base = Candidate {
                    dp,
                    tp,
                    pp,
                    cp,
                    recompute: rc,
                    batch: b,
                    comm: activation_comm(w, p, &ends[0]),
                    tokens_per_step: tokens(w, dp),
                    compute_overhead: compute_overhead(w, &p.arch),
                    ..Candidate::default()
                };
                for c in self.combos.iter_mut().filter(|c| c.alive) {
                    let peak = if c.cached {
                        combo_peak(w, c, &acts, n_stages)
                    } else {
                        c.set(w);
                        per_gpu_peak(w, p)
                    };
                    self.out.evaluated += 1;
                    let refuses = serve && crate::serve::refuses(w, p);
                    let l = candidate(&base, c, w, peak, headroom(self.usable, peak, refuses));
                    let mut l = l;
                    if l.fits() && !serve && w.workload.mode == Mode::Train {
                        if c.cached {
                            c.set(w);
                        }
                        add_step_time(&mut l, w, p);
                    }
                    let cell = (l.stage().number() as usize * pps + pi) * tps + ti;
                    // A serving engine's start-up does not depend on the micro-batch.
                    c.alive = l.fits() && b < MAX_BATCH && !serve;
                    if record(&mut self.out, l, cell, self.limit) && self.first_fit {
                        return;
                    }
                }
                b = b.saturating_mul(2);
            }
        }
    }
}

/// At a new recomputation mode every combination starts alive again, unless it is not a
/// clean layout (a Megatron one is checked on the scenario).
fn revive(combos: &mut [Combo], w: &mut Scenario, p: &Prepared) {
    for c in combos.iter_mut() {
        c.alive = c.clean
            && (!c.megatron || {
                c.set(w);
                is_clean(w, p)
            });
    }
}

/// Combination `c` of the batch `base` on scenario `w` (set to it), at its `peak` and
/// `headroom` (step time, tokens per second and MFU still 0).
fn candidate(base: &Candidate, c: &Combo, w: &Scenario, peak: u64, headroom: i64) -> Candidate {
    let mut comm = base.comm;
    comm.dp = c.comm_dp;
    Candidate {
        zero: c.zero,
        fsdp: c.fsdp,
        offload_opt: c.offload_opt,
        offload_param: c.offload_param,
        microbatches: w.workload.microbatches.get(),
        sp: w.parallel.sp,
        vpp: w.parallel.vpp.get(),
        schedule: w.parallel.schedule,
        per_gpu_bytes: peak,
        headroom_bytes: headroom,
        comm,
        ..*base
    }
}

/// Headroom under `usable` at `peak`, bytes, clamped to 64 bits; −1 when a serving engine
/// refuses to start (counted as over the device).
fn headroom(usable: u64, peak: u64, refuses: bool) -> i64 {
    if refuses {
        -1
    } else {
        (usable as i128 - peak as i128).clamp(i64::MIN as i128, i64::MAX as i128) as i64
    }
}

/// A fitting training layout's step time, tokens per second per GPU and MFU (the
/// scenario `w` set to the layout).
fn add_step_time(l: &mut Candidate, w: &Scenario, p: &Prepared) {
    if let Some(t) = crate::steptime::step_time_with(w, p, l.comm.dp as f64) {
        l.step_s = t.step_s;
        l.tokens_per_s_per_gpu = t.tokens_per_s_per_gpu;
        l.mfu = t.mfu;
    }
}

/// The activations (and CP ring buffers) of the end stages at the scenario's batch, as
/// byte tallies: what every cached combination of a degree set shares.
fn stage_activations(
    w: &Scenario,
    p: &Prepared,
    l: &Layout,
    ends: &[Stage; 2],
    n_stages: usize,
) -> [Tally; 2] {
    let mut acts = [Tally::default(); 2];
    for (st, out) in ends.iter().zip(acts.iter_mut()).take(n_stages) {
        let mut lg = Ledger::tally();
        let none = train::StageStates::default();
        train::activation_items(w, &p.arch, l, st, none, &mut lg);
        train::cp_ring_buffers(w, &p.arch, l, &mut lg);
        train::scan_transient_item(w, &p.arch, l, &mut lg);
        *out = lg.totals();
    }
    acts
}

/// Counts layout `l` in its fit-map cell (`cell`, an index into `out.cells`): the
/// closest layout when it leaves the most headroom so far, the best when it fits and ranks
/// first; a fitting layout is listed (trimmed to `limit`). Returns whether it fits.
fn record(out: &mut Sweep, l: Candidate, cell: usize, limit: Option<usize>) -> bool {
    let cell = &mut out.cells[cell];
    if cell
        .closest
        .is_none_or(|c| l.headroom_bytes > c.headroom_bytes)
    {
        cell.closest = Some(l);
    }
    if !l.fits() {
        return false;
    }
    out.fitting += 1;
    if cell.best.is_none_or(|c| rank(&l, &c) == Ordering::Less) {
        cell.best = Some(l);
    }
    out.layouts.push(l);
    trim(&mut out.layouts, limit);
    true
}

/// Keeps the best `limit` layouts once twice as many are held (amortised O(1) per
/// layout): with a limit the sweep never holds more than `2·limit` layouts.
pub(crate) fn trim(layouts: &mut Vec<Candidate>, limit: Option<usize>) {
    if let Some(limit) = limit {
        // `limit = 0` (keep none) still trims at two layouts.
        if layouts.len() >= 2 * limit.max(1) {
            keep_best(layouts, limit);
        }
    }
}

/// Keeps the `keep` best layouts (unordered).
pub(crate) fn keep_best(layouts: &mut Vec<Candidate>, keep: usize) {
    let keep = keep.min(layouts.len());
    if keep < layouts.len() && keep > 0 {
        layouts.select_nth_unstable_by(keep - 1, rank);
    }
    layouts.truncate(keep);
}

/// The sweep; with `first_fit` it stops at the first layout that fits.
pub(crate) fn sweep(s: &Scenario, limit: Option<usize>, first_fit: bool) -> Sweep {
    let mut job = SweepJob::new(s, limit, first_fit);
    job.step(u64::MAX);
    job.finish()
}
