//! The layout explorer: every parallel layout of a cluster, its per-GPU peak,
//! headroom and communication, and the fewest GPUs on which anything fits.
//!
//! A layout is the scenario with these settings replaced:
//! `N = dp·tp·pp·cp` (the cluster's GPUs), the sharding (ZeRO 0–3; under
//! `framework=pytorch` also FSDP full / grad-op / hybrid), optimizer offload (none,
//! cpu), recomputation (none, selective, full) and the micro-batch (1, 2, 4, … up to
//! the largest that fits). Everything else is kept from the scenario, with the
//! adjustments a layout needs to be valid:
//! - sequence parallelism is swept (off, on) where `tp > 1` and is off at `tp = 1`;
//! - a pipeline runs at least `pp` micro-batches per step (`microbatches = max(m, pp)`);
//! - without a pipeline the interleaved schedule becomes 1F1B and `vpp = 1`;
//! - parameter offload is kept only where the sharding is ZeRO-3.
//!
//! Degrees: `tp ≤ gpus_per_node`, `tp` divides the attention heads and either divides
//! the KV heads or is a multiple of them (then each rank holds one KV head replicated,
//! as Megatron-LM and vLLM do: memfit counts `⌈a_kv/t⌉` per rank); `pp ≤ layers`;
//! `cp` divides the sequence. A layout is *valid* when the calculator accepts it
//! without a warning ([`crate::estimate::is_clean`]); only valid layouts are
//! evaluated and listed.
//!
//! **Best** means, in this order: no optimizer offload (a CPU optimizer step and its
//! PCIe traffic are the slowest way to save memory: DeepSpeed recommends it only when
//! nothing else fits), then the least wasted compute ([`compute_overhead`]: the
//! pipeline bubble plus recomputation), then the least communication per trained
//! token (bytes one GPU sends per optimizer step, [`crate::comm`], over the
//! tokens the cluster trains in that step, `dp·m·b·s`), then the most headroom. memfit has no FLOP or bandwidth figures for the GPUs, so it does
//! not turn these into a step time; it orders by what it can count.

use super::comm::{activation_comm, data_parallel_comm, Comm};
use super::estimate::{
    add_fragmentation, is_clean, per_gpu_peak, route, stage_count, Prepared, Route, TRAIN,
};
use super::ledger::{Ledger, Location, Tally};
use super::megatron::Recompute;
use super::scenario::{
    at_least_one, Count, Framework, Fsdp, Mode, Offload, Scenario, Schedule, Sharding, Zero,
};
use super::train::{self, Stage};
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;

/// The largest micro-batch tried.
pub const MAX_BATCH: u32 = 1 << 16;
/// `min_gpus` tries whole nodes up to this many …
pub const MAX_NODES: u32 = 1024;
/// … and clusters of up to this many GPUs.
pub const MAX_GPUS: u32 = 65_536;

/// One evaluated layout: the settings it changes and what it costs.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    /// Data-parallel degree.
    pub dp: u32,
    /// Tensor-parallel degree.
    pub tp: u32,
    /// Pipeline-parallel degree.
    pub pp: u32,
    /// Context-parallel degree.
    pub cp: u32,
    /// ZeRO stage (with `fsdp = none`).
    pub zero: Zero,
    /// FSDP strategy (`framework=pytorch`; `zero` is then 0).
    pub fsdp: Fsdp,
    /// Optimizer offload.
    pub offload_opt: Offload,
    /// Parameter offload (the scenario's, under ZeRO-3 only).
    pub offload_param: Offload,
    /// Recomputation.
    pub recompute: Recompute,
    /// Micro-batch per GPU.
    pub batch: u32,
    /// Micro-batches per step.
    pub microbatches: u32,
    /// Sequence parallelism.
    pub sp: bool,
    /// Virtual pipeline stages.
    pub vpp: u32,
    /// Pipeline schedule.
    pub schedule: Schedule,
    /// Peak bytes per GPU (max over pipeline stages and phases), = `estimate().per_gpu_bytes`.
    pub per_gpu_bytes: u64,
    /// Usable bytes − peak (negative: does not fit).
    pub headroom_bytes: i64,
    /// Bytes one GPU sends per step.
    pub comm: Comm,
    /// Tokens the cluster trains per step (`dp·m·b·s`; inference `dp·b·(s+n)`).
    pub tokens_per_step: u64,
    /// Extra compute over the model's FLOPs: pipeline bubble + recomputation (see [`compute_overhead`]).
    pub compute_overhead: f64,
}

impl Candidate {
    /// Whether the layout fits the GPU.
    pub fn fits(&self) -> bool {
        self.headroom_bytes >= 0
    }
    /// The effective ZeRO stage (FSDP's strategy when set): the fit map's panel.
    pub fn stage(&self) -> Zero {
        self.sharding().zero()
    }
    /// The layout's sharding.
    pub fn sharding(&self) -> Sharding {
        match self.fsdp {
            Fsdp::None => Sharding::Zero(self.zero),
            f => Sharding::Fsdp(f),
        }
    }
    /// Writes the layout's settings into a scenario (the one it was swept from);
    /// every other setting is left as it is.
    pub fn apply(&self, s: &mut Scenario) {
        s.parallel.dp = None;
        s.parallel.tp = at_least_one(self.tp);
        s.parallel.pp = at_least_one(self.pp);
        s.parallel.cp = at_least_one(self.cp);
        s.sharding = self.sharding();
        s.offload.optimizer = self.offload_opt;
        s.offload.params = self.offload_param;
        s.activations.recompute = self.recompute;
        s.workload.batch = at_least_one(self.batch);
        s.workload.microbatches = at_least_one(self.microbatches);
        s.parallel.sp = self.sp;
        s.parallel.vpp = at_least_one(self.vpp);
        s.parallel.schedule = self.schedule;
    }
    /// The scenario of this layout.
    pub fn scenario(&self, base: &Scenario) -> Scenario {
        let mut s = base.clone();
        self.apply(&mut s);
        s
    }
    /// Short description: "TP 4 × PP 2 × DP 2 + SP, ZeRO-1" (sequence parallelism, virtual
    /// stages and offloads named when on: two layouts never read alike).
    pub fn describe(&self) -> String {
        let mut d = format!("TP {} × PP {} × DP {}", self.tp, self.pp, self.dp);
        if self.cp > 1 {
            d.push_str(&format!(" × CP {}", self.cp));
        }
        if self.sp && self.tp > 1 {
            d.push_str(" + SP");
        }
        if self.vpp > 1 {
            d.push_str(&format!(", {} virtual stages", self.vpp));
        }
        match self.fsdp {
            Fsdp::None => d.push_str(&format!(", ZeRO-{}", self.zero.number())),
            f => d.push_str(&format!(", FSDP {}", f.as_str())),
        }
        if self.offload_opt != Offload::None {
            d.push_str(&format!(", offload {}", self.offload_opt.as_str()));
        }
        if self.offload_param != Offload::None {
            d.push_str(&format!(", offload params {}", self.offload_param.as_str()));
        }
        if self.recompute != Recompute::None {
            d.push_str(&format!(", recompute {}", self.recompute.as_str()));
        }
        d.push_str(&format!(", micro-batch {}", self.batch));
        d
    }
}

/// Orders layouts best first (see the module docs).
pub fn rank(a: &Candidate, b: &Candidate) -> Ordering {
    // comm_a / tokens_a vs comm_b / tokens_b, exactly.
    let lhs = a.comm.total() as u128 * b.tokens_per_step.max(1) as u128;
    let rhs = b.comm.total() as u128 * a.tokens_per_step.max(1) as u128;
    let rc = |r: Recompute| match r {
        Recompute::None => 0,
        Recompute::Selective => 1,
        Recompute::Full => 2,
    };
    let off = |o: Offload| match o {
        Offload::None => 0,
        Offload::Cpu => 1,
        Offload::Nvme => 2,
    };
    off(a.offload_opt)
        .cmp(&off(b.offload_opt))
        .then(a.compute_overhead.total_cmp(&b.compute_overhead))
        .then(lhs.cmp(&rhs))
        .then(rc(a.recompute).cmp(&rc(b.recompute)))
        .then(b.headroom_bytes.cmp(&a.headroom_bytes))
        .then(a.sp.cmp(&b.sp))
        .then((a.tp, a.pp, a.cp, a.zero.number()).cmp(&(b.tp, b.pp, b.cp, b.zero.number())))
        .then((a.fsdp as u8).cmp(&(b.fsdp as u8)))
}

/// One cell of the fit map: a (ZeRO stage, TP, PP) over every other dimension.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// The panel: effective ZeRO stage.
    pub zero: Zero,
    /// TP degree.
    pub tp: u32,
    /// PP degree.
    pub pp: u32,
    /// The best fitting layout of the cell (by [`rank`]).
    pub best: Option<Candidate>,
    /// The layout with the most headroom (the closest to fitting when nothing fits).
    pub closest: Option<Candidate>,
}

impl Cell {
    /// Most headroom over the cell's layouts (`None`: no valid layout).
    pub fn headroom(&self) -> Option<i64> {
        self.closest.map(|l| l.headroom_bytes)
    }
}

/// Everything the sweep found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sweep {
    /// GPUs of the cluster.
    pub gpus: u32,
    /// Layouts evaluated (every micro-batch tried counts once).
    pub evaluated: u64,
    /// Layouts that fit.
    pub fitting: u64,
    /// Fitting layouts, best first (at most the limit asked for).
    pub layouts: Vec<Candidate>,
    /// TP degrees of the fit map's columns.
    pub tps: Vec<u32>,
    /// PP degrees of its rows.
    pub pps: Vec<u32>,
    /// Cells, panel by panel (ZeRO 0–3), row by row (PP), column by column (TP).
    pub cells: Vec<Cell>,
    /// An inference sweep (no ZeRO, no recomputation: degrees and batch only).
    pub inference: bool,
    /// A PyTorch sweep: its panels are DDP, ZeroRedundancyOptimizer and FSDP's
    /// strategies (`shardings`).
    #[serde(default)]
    pub pytorch: bool,
}

impl Sweep {
    /// The cell of (zero, tp, pp), if that TP/PP is a column/row.
    pub fn cell(&self, zero: Zero, tp: u32, pp: u32) -> Option<&Cell> {
        let ti = self.tps.iter().position(|&t| t == tp)?;
        let pi = self.pps.iter().position(|&p| p == pp)?;
        self.cells
            .get((zero.number() as usize * self.pps.len() + pi) * self.tps.len() + ti)
    }
}

/// Divisors of `n`, ascending.
fn divisors(n: u32) -> Vec<u32> {
    let mut d: Vec<u32> = (1..=n.min(1 << 16))
        .filter(|i| n.is_multiple_of(*i))
        .collect();
    if n > 1 << 16 {
        // Large N: the cofactors too (N ≤ 2^32).
        let extra: Vec<u32> = d.iter().map(|i| n / i).collect();
        d.extend(extra);
        d.sort_unstable();
        d.dedup();
    }
    d
}

/// The TP degrees a cluster of `n` GPUs offers the scenario's model.
fn tp_options(s: &Scenario, p: &Prepared, n: u32) -> Vec<u32> {
    let (heads, kv) = (p.arch.heads.max(1), p.arch.kv_heads.max(1));
    divisors(n)
        .into_iter()
        .filter(|&t| {
            t <= s.cluster.gpus_per_node.get().max(1)
                && heads % t == 0
                && (kv % t == 0 || t % kv == 0)
        })
        .collect()
}

/// Shardings to sweep: ZeRO 0–3; under PyTorch DDP (ZeRO-0), ZeroRedundancyOptimizer
/// (ZeRO-1) and FSDP's strategies in place of ZeRO-2 and 3, which PyTorch does not have
/// (hybrid only across nodes); inference has none.
fn shardings(s: &Scenario) -> Vec<(Zero, Fsdp)> {
    if s.workload.mode == Mode::Infer {
        return vec![(Zero::Z0, Fsdp::None)];
    }
    let zeros: &[Zero] = if s.stack.framework == Framework::Pytorch {
        &[Zero::Z0, Zero::Z1]
    } else {
        &[Zero::Z0, Zero::Z1, Zero::Z2, Zero::Z3]
    };
    let mut v: Vec<(Zero, Fsdp)> = zeros.iter().map(|&z| (z, Fsdp::None)).collect();
    if s.stack.framework == Framework::Pytorch {
        v.push((Zero::Z0, Fsdp::FullShard));
        v.push((Zero::Z0, Fsdp::ShardGradOp));
        if s.cluster.nodes.get() > 1 {
            v.push((Zero::Z0, Fsdp::HybridShard));
        }
    }
    v
}

fn offloads(s: &Scenario) -> Vec<Offload> {
    if s.workload.mode == Mode::Infer {
        return vec![Offload::None];
    }
    let mut v = vec![Offload::None, Offload::Cpu];
    if s.offload.optimizer == Offload::Nvme {
        v.push(Offload::Nvme);
    }
    v
}

fn recomputes(s: &Scenario) -> Vec<Recompute> {
    if s.workload.mode == Mode::Infer {
        vec![s.activations.recompute]
    } else {
        vec![Recompute::None, Recompute::Selective, Recompute::Full]
    }
}

/// Sets the degree-dependent settings of a layout on the working scenario.
fn set_degrees(w: &mut Scenario, base: &Scenario, tp: u32, pp: u32, cp: u32, sp: bool) {
    w.parallel.dp = None;
    w.parallel.tp = at_least_one(tp);
    w.parallel.pp = at_least_one(pp);
    w.parallel.cp = at_least_one(cp);
    w.parallel.sp = sp && tp > 1;
    if pp > 1 {
        w.workload.microbatches = base.workload.microbatches.max(at_least_one(pp));
        w.parallel.vpp = base.parallel.vpp;
        w.parallel.schedule = base.parallel.schedule;
    } else {
        w.workload.microbatches = base.workload.microbatches;
        w.parallel.vpp = Count::MIN;
        w.parallel.schedule = if base.parallel.schedule == Schedule::Interleaved {
            Schedule::OneFOneB
        } else {
            base.parallel.schedule
        };
    }
}

/// A sharding × offload of one degree set, with what does not depend on the
/// micro-batch or the recomputation: its model states + overheads per evaluated
/// stage (training under memfit's mechanisms) and its data-parallel communication.
#[derive(Clone, Copy)]
struct Combo {
    zero: Zero,
    fsdp: Fsdp,
    offload_opt: Offload,
    offload_param: Offload,
    /// Model states + overheads of the first and last stage (`cached` routes).
    states: [Tally; 2],
    /// Whether `estimate`'s own per-stage mechanisms apply (else `per_gpu_peak`).
    cached: bool,
    /// Data-parallel bytes per step.
    comm_dp: u64,
    /// Still fitting at the current micro-batch (for this recomputation).
    alive: bool,
    /// Accepted without a warning (any recomputation; Megatron's formula is checked
    /// per recomputation, its warning depends on it).
    clean: bool,
    /// Megatron's formula route.
    megatron: bool,
}

impl Combo {
    fn set(&self, w: &mut Scenario) {
        w.sharding = match self.fsdp {
            Fsdp::None => Sharding::Zero(self.zero),
            f => Sharding::Fsdp(f),
        };
        w.offload.optimizer = self.offload_opt;
        w.offload.params = self.offload_param;
    }
}

/// Per-GPU peak of a combo at the working scenario's micro-batch and recomputation,
/// from the activation tallies of the evaluated stages.
///
/// Only the first and last pipeline stages are evaluated: a middle stage `i` holds
/// no more of any item than stage 0 (no embedding, no more layers — earlier stages
/// take the remainder — and no more micro-batches in flight, `min(p − i, m)`, under
/// every schedule), so the maximum over stages is the maximum of the two ends.
/// Model states and overheads do not depend on the micro-batch or recomputation;
/// activations do not depend on the sharding or offload; fragmentation is taken on
/// their sum, as `estimate` does. The property test `fast_path_equals_estimate`
/// checks all of this against `estimate`, which evaluates every stage in full.
fn combo_peak(w: &Scenario, c: &Combo, acts: &[Tally; 2], n_stages: usize) -> u64 {
    let mut best = 0;
    for (states, act) in c.states.iter().zip(acts).take(n_stages) {
        let mut t = *states;
        t.merge(act);
        let mut lg = Ledger::Tally(t);
        add_fragmentation(w, &mut lg, &TRAIN);
        best = best.max(lg.totals().peak(Location::Gpu, &TRAIN, false).0);
    }
    best
}

/// Sweeps every layout of the scenario's cluster (see the module docs). `limit`
/// bounds the listed layouts (`None`: all fitting layouts).
///
/// # Example
/// ```
/// use memfit_core::{explore::explore, scenario::Scenario};
/// let mut s = Scenario::default(); // Llama-2-7B on H100s
/// s.cluster.gpus_per_node = memfit_core::scenario::count(8);
/// let sweep = explore(&s, Some(5));
/// assert!(sweep.fitting > 0 && sweep.layouts.len() == 5);
/// assert!(sweep.layouts.iter().all(|l| l.fits() && l.dp * l.tp * l.pp * l.cp == 8));
/// ```
pub fn explore(s: &Scenario, limit: Option<usize>) -> Sweep {
    sweep(s, limit, false)
}

/// The scenario with every setting the sweep replaces reset to its default: two
/// scenarios with the same key have the same sweep (the page re-sweeps only when
/// the key changes, so loading a layout from the map does not).
pub fn sweep_key(s: &Scenario) -> Scenario {
    let d = Scenario::default();
    let mut k = s.clone();
    k.parallel.dp = None;
    k.parallel.tp = d.parallel.tp;
    k.parallel.pp = d.parallel.pp;
    k.parallel.cp = d.parallel.cp;
    k.parallel.sp = d.parallel.sp;
    k.sharding = d.sharding;
    k.activations.recompute = d.activations.recompute;
    k.workload.batch = d.workload.batch;
    if k.offload.optimizer != Offload::Nvme {
        k.offload.optimizer = d.offload.optimizer;
    }
    k
}

/// One degree set of the sweep: TP, PP, CP and sequence parallelism (DP follows).
#[derive(Clone, Copy, Debug)]
struct Degrees {
    ti: usize,
    pi: usize,
    tp: u32,
    pp: u32,
    cp: u32,
    sp: bool,
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
    out: Sweep,
}

impl SweepJob {
    /// Prepares the sweep of `s`'s cluster; `limit` bounds the listed layouts
    /// (`None`: all); with `first_fit` it stops at the first layout that fits.
    pub fn new(s: &Scenario, limit: Option<usize>, first_fit: bool) -> SweepJob {
        let p = Prepared::of(s);
        let n = s.world();
        let tps = tp_options(s, &p, n);
        let layers = p.arch.layers.max(1);
        let pps: Vec<u32> = divisors(n).into_iter().filter(|&d| d <= layers).collect();
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
        let seq = s.workload.seq.get().max(1);
        let mut todo = Vec::new();
        for (ti, &tp) in tps.iter().enumerate() {
            for (pi, &pp) in pps.iter().enumerate() {
                if !(n / tp).is_multiple_of(pp) {
                    continue;
                }
                let cps: Vec<u32> = if s.workload.mode == Mode::Infer {
                    vec![1]
                } else {
                    divisors(n / tp / pp)
                        .into_iter()
                        .filter(|&c| seq.is_multiple_of(c))
                        .collect()
                };
                for cp in cps {
                    for sp in [false, true] {
                        if sp && tp == 1 {
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
                inference: s.workload.mode == Mode::Infer,
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

    /// Every sharding × offload × recomputation × micro-batch of one degree set.
    fn degree_set(&mut self, d: Degrees) {
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
            Stage::of(&p.arch, n_st, n_st - 1),
        ];
        let n_stages = if n_st > 1 { 2 } else { 1 };
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
                        train::model_states(w, &p.arch, p.psi, p.largest, &l, st, &mut lg);
                        train::overhead_items(w, &l, p.largest, &mut lg);
                        *out = lg.totals();
                    }
                }
                c.comm_dp = data_parallel_comm(w, p, &ends[0]);
                self.combos.push(c);
            }
        }
        let pps = self.out.pps.len();
        let tps = self.out.tps.len();
        for &rc in &self.recs {
            w.activations.recompute = rc;
            w.workload.batch = crate::scenario::count(1);
            for c in self.combos.iter_mut() {
                c.alive = c.clean
                    && (!c.megatron || {
                        c.set(w);
                        is_clean(w, p)
                    });
            }
            let mut b = 1u32;
            while self.combos.iter().any(|c| c.alive) {
                w.workload.batch = crate::scenario::at_least_one(b);
                let mut acts = [Tally::default(); 2];
                for (st, out) in ends.iter().zip(acts.iter_mut()).take(n_stages) {
                    let mut lg = Ledger::tally();
                    train::activation_items(
                        w,
                        &p.arch,
                        &l,
                        st,
                        train::StageStates::default(),
                        &mut lg,
                    );
                    train::cp_ring_buffers(w, &p.arch, &l, &mut lg);
                    *out = lg.totals();
                }
                let act_comm = activation_comm(w, p, &ends[0]);
                let tokens = tokens(w, dp);
                let overhead = compute_overhead(w, &p.arch);
                for c in self.combos.iter_mut().filter(|c| c.alive) {
                    let peak = if c.cached {
                        combo_peak(w, c, &acts, n_stages)
                    } else {
                        c.set(w);
                        per_gpu_peak(w, p)
                    };
                    self.out.evaluated += 1;
                    let mut comm = act_comm;
                    comm.dp = c.comm_dp;
                    let l = Candidate {
                        dp,
                        tp,
                        pp,
                        cp,
                        zero: c.zero,
                        fsdp: c.fsdp,
                        offload_opt: c.offload_opt,
                        offload_param: c.offload_param,
                        recompute: rc,
                        batch: b,
                        microbatches: w.workload.microbatches.get(),
                        sp: w.parallel.sp,
                        vpp: w.parallel.vpp.get(),
                        schedule: w.parallel.schedule,
                        per_gpu_bytes: peak,
                        headroom_bytes: (self.usable as i128 - peak as i128)
                            .clamp(i64::MIN as i128, i64::MAX as i128)
                            as i64,
                        comm,
                        tokens_per_step: tokens,
                        compute_overhead: overhead,
                    };
                    let cell =
                        &mut self.out.cells[(l.stage().number() as usize * pps + pi) * tps + ti];
                    if cell
                        .closest
                        .is_none_or(|c| l.headroom_bytes > c.headroom_bytes)
                    {
                        cell.closest = Some(l);
                    }
                    if !l.fits() || b >= MAX_BATCH {
                        c.alive = false;
                    }
                    if l.fits() {
                        self.out.fitting += 1;
                        if cell.best.is_none_or(|c| rank(&l, &c) == Ordering::Less) {
                            cell.best = Some(l);
                        }
                        self.out.layouts.push(l);
                        if self.first_fit {
                            return;
                        }
                        trim(&mut self.out.layouts, self.limit);
                    }
                }
                b = b.saturating_mul(2);
            }
        }
    }
}

/// Keeps the best `limit` layouts once twice as many are held (amortised O(1) per
/// layout): with a limit the sweep never holds more than `2·limit` layouts.
fn trim(layouts: &mut Vec<Candidate>, limit: Option<usize>) {
    if let Some(limit) = limit {
        if layouts.len() >= 2 * limit.max(1) {
            keep_best(layouts, limit);
        }
    }
}

/// Keeps the `keep` best layouts (unordered).
fn keep_best(layouts: &mut Vec<Candidate>, keep: usize) {
    let keep = keep.min(layouts.len());
    if keep < layouts.len() && keep > 0 {
        layouts.select_nth_unstable_by(keep - 1, rank);
    }
    layouts.truncate(keep);
}

/// The sweep; with `first_fit` it stops at the first layout that fits.
fn sweep(s: &Scenario, limit: Option<usize>, first_fit: bool) -> Sweep {
    let mut job = SweepJob::new(s, limit, first_fit);
    job.step(u64::MAX);
    job.finish()
}

/// Compute a layout spends beyond the model's own FLOPs, as a fraction of them.
///
/// # Formula
/// ```text
/// bubble      (p − 1)/(v·m)                 idle pipeline time per step (1F1B, GPipe, interleaved)
/// selective   s/(18·h + 3·s)                the attention core replayed: 4·b·s²·h of 3·(24·b·s·h² + 4·b·s²·h)
/// full        1/3                           the whole forward replayed: 1 of 3 units (forward + 2 backward)
/// ```
/// `p` stages, `v` virtual stages, `m` micro-batches, `s` sequence, `h` hidden.
/// Sources: Narayanan et al. 2021 §2.2 (bubble fraction (p−1)/m, ÷v interleaved);
/// Korthikanti et al. 2022 §5 (24·b·s·h² + 4·b·s²·h forward FLOPs per layer; full
/// recomputation adds a forward pass).
///
/// # Example
/// p = 4, m = 8, no recompute: 3/8 = 0.375. Llama-3-70B (h = 8192) at s = 8192 with
/// selective recompute, no pipeline: 8192/(147,456 + 24,576) = 0.0476.
pub fn compute_overhead(w: &Scenario, arch: &super::model::Arch) -> f64 {
    if w.workload.mode == Mode::Infer {
        return 0.0;
    }
    let p = w.parallel.pp.get().max(1) as f64;
    let v = w.parallel.vpp.get().max(1) as f64;
    let m = w.workload.microbatches.get().max(1) as f64;
    let bubble = (p - 1.0) / (v * m);
    let (s, h) = (w.workload.seq.get() as f64, arch.hidden.max(1) as f64);
    let recompute = match w.activations.recompute {
        Recompute::None => 0.0,
        Recompute::Selective => s / (18.0 * h + 3.0 * s),
        Recompute::Full => 1.0 / 3.0,
    };
    bubble + recompute
}

/// Tokens the cluster processes per step: `dp·m·b·s` (inference `dp·b·(s+n)`).
fn tokens(w: &Scenario, dp: u32) -> u64 {
    let per = if w.workload.mode == Mode::Infer {
        w.workload.batch.get() as u128 * (w.workload.seq.get() as u128 + w.workload.gen as u128)
    } else {
        w.workload.microbatches.get().max(1) as u128
            * w.workload.batch.get() as u128
            * w.workload.seq.get() as u128
    };
    (per * dp as u128).min(u64::MAX as u128) as u64
}

/// The answer of the minimum-GPU solve.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MinGpus {
    /// Fewest GPUs on which a layout fits (`None`: not up to `MAX_NODES` nodes).
    pub value: Option<u32>,
    /// Nodes and GPUs per node of that cluster.
    pub nodes: u32,
    /// GPUs per node of that cluster.
    pub gpus_per_node: u32,
    /// The best layout there.
    pub layout: Option<Candidate>,
    /// The candidate just below `value` (none of its layouts fits).
    pub previous: Option<u32>,
}

/// The fewest GPUs of the selected type on which at least one layout fits.
///
/// Candidates: 1, 2, 4, … up to `gpus_per_node` (one node), then whole nodes
/// 2, 3, 4, … × `gpus_per_node`, up to [`MAX_NODES`] nodes and [`MAX_GPUS`] GPUs. Exact: a layout fits on the
/// answer, and none on the candidate before it. (Memory is not monotone in the GPU
/// count — divisibility decides which degrees exist — so every candidate is tried
/// in order.)
///
/// # Example
/// ```
/// use memfit_core::{explore::min_gpus, scenario::Scenario};
/// let mut s = Scenario::default();
/// s.select_model("llama-2-70b");   // 16-bit weights alone are 138 GB
/// s.cluster.gpus_per_node = memfit_core::scenario::count(8);
/// let m = min_gpus(&s);
/// assert!(m.value.unwrap() >= 2);
/// ```
pub fn min_gpus(s: &Scenario) -> MinGpus {
    min_gpus_within(s, MAX_NODES)
}

/// `min_gpus` trying whole nodes up to `max_nodes` only (the page's bound).
pub fn min_gpus_within(s: &Scenario, max_nodes: u32) -> MinGpus {
    let mut job = MinGpusJob::new(s, max_nodes);
    job.step(u64::MAX);
    job.finish()
}

/// The minimum-GPU search, resumable a slice at a time like [`SweepJob`].
pub struct MinGpusJob {
    base: Scenario,
    candidates: Vec<(u32, u32)>,
    next: usize,
    previous: Option<u32>,
    /// The candidate being swept (stops at its first fitting layout).
    search: Option<(u32, u32, SweepJob)>,
    /// The answer's cluster, swept in full for its best layout.
    best: Option<(u32, u32, SweepJob)>,
    result: Option<MinGpus>,
}

impl MinGpusJob {
    /// Candidates 1, 2, 4, … < `gpus_per_node`, then 1 … `max_nodes` whole nodes.
    pub fn new(s: &Scenario, max_nodes: u32) -> MinGpusJob {
        let gpn = s.cluster.gpus_per_node.get().max(1);
        let mut candidates: Vec<(u32, u32)> = Vec::new();
        let mut g = 1;
        while g < gpn {
            candidates.push((g, 1));
            g *= 2;
        }
        for nodes in 1..=max_nodes.max(1) {
            if gpn.saturating_mul(nodes) > MAX_GPUS && nodes > 1 {
                break;
            }
            candidates.push((gpn, nodes));
        }
        MinGpusJob {
            base: s.clone(),
            candidates,
            next: 0,
            previous: None,
            search: None,
            best: None,
            result: None,
        }
    }

    fn cluster(&self, per_node: u32, nodes: u32) -> Scenario {
        let mut w = self.base.clone();
        w.cluster.gpus_per_node = crate::scenario::at_least_one(per_node);
        w.cluster.nodes = crate::scenario::at_least_one(nodes);
        w
    }

    /// Evaluates at least `layouts` more layouts (or finishes); returns whether done.
    pub fn step(&mut self, layouts: u64) -> bool {
        let mut budget = layouts;
        while self.result.is_none() && budget > 0 {
            if let Some((per_node, nodes, job)) = &mut self.best {
                let before = job.out.evaluated;
                let done = job.step(budget);
                budget = budget.saturating_sub((job.out.evaluated - before).max(1));
                if done {
                    let (per_node, nodes) = (*per_node, *nodes);
                    let job = self.best.take().map(|b| b.2);
                    self.result = Some(MinGpus {
                        value: Some(per_node * nodes),
                        nodes,
                        gpus_per_node: per_node,
                        layout: job.and_then(|j| j.finish().layouts.first().copied()),
                        previous: self.previous,
                    });
                }
                continue;
            }
            if self.search.is_none() {
                let Some(&(per_node, nodes)) = self.candidates.get(self.next) else {
                    let gpn = self.base.cluster.gpus_per_node.get().max(1);
                    self.result = Some(MinGpus {
                        value: None,
                        nodes: self.candidates.last().map_or(1, |c| c.1),
                        gpus_per_node: gpn,
                        layout: None,
                        previous: self.previous,
                    });
                    break;
                };
                self.next += 1;
                let job = SweepJob::new(&self.cluster(per_node, nodes), Some(1), true);
                self.search = Some((per_node, nodes, job));
            }
            if let Some((per_node, nodes, job)) = &mut self.search {
                let before = job.out.evaluated;
                let done = job.step(budget);
                budget = budget.saturating_sub((job.out.evaluated - before).max(1));
                if done {
                    let (per_node, nodes, fits) = (*per_node, *nodes, job.out.fitting > 0);
                    self.search = None;
                    if fits {
                        let full = SweepJob::new(&self.cluster(per_node, nodes), Some(1), false);
                        self.best = Some((per_node, nodes, full));
                    } else {
                        self.previous = Some(per_node * nodes);
                    }
                }
            }
        }
        self.result.is_some()
    }

    /// The answer (`value: None` if the search was not run to the end).
    pub fn finish(self) -> MinGpus {
        self.result.unwrap_or(MinGpus {
            value: None,
            nodes: 0,
            gpus_per_node: self.base.cluster.gpus_per_node.get(),
            layout: None,
            previous: self.previous,
        })
    }
}
