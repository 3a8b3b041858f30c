//! The layout explorer: every parallel layout of a cluster, its per-GPU peak,
//! headroom and communication, and the fewest GPUs on which anything fits.
//!
//! A layout is the scenario with these settings replaced:
//! `N = dp·tp·pp·cp` (the cluster's GPUs), the sharding (ZeRO 0–3; under
//! `framework=pytorch` also FSDP full / grad-op / hybrid), optimizer offload (none,
//! cpu), recomputation (none, selective, full) and the micro-batch (1, 2, 4, … up to
//! the largest that fits). Everything else is kept from the scenario, with the
//! adjustments a layout needs to be valid:
//! - sequence parallelism is swept (off, on) in training where `tp > 1`, and is off at `tp = 1`
//!   and in inference and serving;
//! - a training pipeline runs at least `pp` micro-batches per step (`microbatches = max(m, pp)`;
//!   inference and serving keep the scenario's micro-batches, virtual stages and schedule);
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
//! **Best** means the highest predicted training tokens per second per GPU
//! ([`crate::steptime`]; inference and serving have none, so they tie), then, in this
//! order: no optimizer offload (a CPU optimizer step and its PCIe traffic are the slowest
//! way to save memory), the least wasted compute ([`compute_overhead`]: the pipeline
//! bubble plus recomputation), the least communication per trained token (bytes one GPU
//! sends per optimizer step, [`crate::comm`], over the tokens the cluster trains in that
//! step, `dp·m·b·s`), the most headroom.

use crate::comm::{activation_comm, data_parallel_comm, Comm};
use crate::estimate::{
    add_fragmentation, is_clean, per_gpu_peak, route, stage_count, Prepared, Route, TRAIN,
};
use crate::ledger::{Ledger, Location, Tally};
use crate::megatron::Recompute;
use crate::scenario::{
    at_least_one, Count, Framework, Fsdp, Mode, Offload, Scenario, Schedule, Sharding, Zero,
};
use crate::train::{self, Stage};
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;

mod job;
mod min_gpus;
mod options;
mod wire;

pub use job::*;
pub use min_gpus::*;
pub(crate) use options::*;
pub use wire::{min_gpus_from_line, min_gpus_to_line};

/// The largest micro-batch tried.
pub const MAX_BATCH: u32 = 1 << 16;

/// `min_gpus` tries whole nodes up to this many …
pub const MAX_NODES: u32 = 1024;

/// … and clusters of up to this many GPUs.
pub const MAX_GPUS: u32 = 65_536;

/// One evaluated layout: the settings it changes and what it costs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
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
    /// Predicted seconds per optimizer step (0 where the step-time model does not apply:
    /// inference, serving, a layout that does not fit).
    #[serde(default)]
    pub step_s: f64,
    /// Predicted training tokens per second per GPU.
    #[serde(default)]
    pub tokens_per_s_per_gpu: f64,
    /// Predicted model FLOPs utilisation.
    #[serde(default)]
    pub mfu: f64,
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
        self.describe_train(None)
    }
    /// [`Candidate::describe`], the data-parallel ranks' expert parallelism named when
    /// `ep` is given ("TP 1 × PP 1 × DP 8 (EP 8), ZeRO-1, …").
    fn describe_train(&self, ep: Option<u32>) -> String {
        let mut d = format!("TP {} × PP {} × DP {}", self.tp, self.pp, self.dp);
        if self.cp > 1 {
            d.push_str(&format!(" × CP {}", self.cp));
        }
        // EP is carved from the dp·cp ranks.
        if let Some(e) = ep {
            d.push_str(&format!(" (EP {e})"));
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

    /// The layout in the terms of `mode`: training's ([`Candidate::describe`]: sharding,
    /// offload, recomputation, micro-batch); inference's and serving's name only what they
    /// have — the parallel degrees (DP as independent replicas), and inference's batch —
    /// since there is no optimizer state, gradient or micro-batch to shard.
    ///
    /// ```
    /// use memfit_core::explore::min_gpus;
    /// use memfit_core::scenario::Mode;
    /// let s = memfit_core::contract::query::decode("model=llama-3-70b&mode=infer&seq=2048").0.scenario;
    /// let c = min_gpus(&s).layout.unwrap();
    /// let text = c.describe_in(Mode::Infer);
    /// assert!(text.starts_with(&format!("TP {} × PP {}", c.tp, c.pp)), "{text}");
    /// assert!(text.ends_with(&format!("batch {}", c.batch)) && !text.contains("ZeRO"), "{text}");
    /// assert!(c.describe_in(Mode::Train).contains("micro-batch"));
    /// ```
    pub fn describe_in(&self, mode: Mode) -> String {
        self.describe_with(mode, None)
    }

    /// [`Candidate::describe_in`] for this layout on `base` (the scenario it was swept
    /// from), naming the expert parallelism the estimate counts: `ep` is the scenario's,
    /// not swept, so a layout's text alone would hide it. Training: "DP 8 (EP 8)" when
    /// [`Scenario::ep_ranks`] > 1 on a mixture; serving: "DP 8, EP 8" where the engine
    /// spreads the experts ([`crate::serve::expert_placement`]), whose DP ranks then share
    /// the experts and are no longer independent replicas. Inference has no EP (its
    /// warning says so).
    ///
    /// ```
    /// use memfit_core::explore::min_gpus;
    /// let q = "mode=serve&engine=vllm&engine_version=0.10.1&model=deepseek-v3&quant=fp8&gpu=h200&gpus_per_node=8&tp=1&dp=8&ep=8";
    /// let s = memfit_core::contract::query::decode(q).0.scenario;
    /// let c = min_gpus(&s).layout.unwrap();
    /// assert_eq!(c.describe_on(&s), "TP 1 × PP 1 × DP 8, EP 8");
    /// let t = memfit_core::contract::query::decode("model=mixtral-8x7b&gpus_per_node=8&ep=8").0.scenario;
    /// assert!(min_gpus(&t).layout.unwrap().describe_on(&t).contains("(EP 8)"));
    /// ```
    pub fn describe_on(&self, base: &Scenario) -> String {
        let s = self.scenario(base);
        let ep = match s.workload.mode {
            Mode::Train => (s.arch().experts > 0 && s.ep_ranks() > 1).then(|| s.ep_ranks()),
            Mode::Serve => crate::serve::expert_placement(&s, &Prepared::of(&s), &s.layout())
                .map(|x| x.ep_ranks)
                .filter(|&e| e > 1),
            Mode::Infer => None,
        };
        self.describe_with(s.workload.mode, ep)
    }

    fn describe_with(&self, mode: Mode, ep: Option<u32>) -> String {
        if let (Mode::Serve, Some(e)) = (mode, ep) {
            return format!("TP {} × PP {} × DP {}, EP {e}", self.tp, self.pp, self.dp);
        }
        let replicas = if self.dp > 1 {
            format!(" × {} replicas", self.dp)
        } else {
            String::new()
        };
        match mode {
            Mode::Train => self.describe_train(ep),
            Mode::Infer => format!(
                "TP {} × PP {}{replicas}, batch {}",
                self.tp, self.pp, self.batch
            ),
            Mode::Serve => format!("TP {} × PP {}{replicas}", self.tp, self.pp),
        }
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
    // The fastest first (predicted tokens per second per GPU; equal, i.e. 0, where the
    // step-time model does not apply), then the older proxy.
    b.tokens_per_s_per_gpu
        .total_cmp(&a.tokens_per_s_per_gpu)
        .then(off(a.offload_opt).cmp(&off(b.offload_opt)))
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
