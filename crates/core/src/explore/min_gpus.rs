//! The fewest GPUs that fit: the smallest cluster (in whole nodes, then GPUs) on which
//! some layout fits, and its throughput proxy.

use super::*;

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
/// recomputation adds a forward pass of the layers it checkpoints, all or `ckpt_layers` of
/// each chunk).
///
/// # Example
/// p = 4, m = 8, no recompute: 3/8 = 0.375. Llama-3-70B (h = 8192) at s = 8192 with
/// selective recompute, no pipeline: 8192/(147,456 + 24,576) = 0.0476.
pub fn compute_overhead(w: &Scenario, arch: &crate::model::Arch) -> f64 {
    if w.workload.mode != Mode::Train {
        return 0.0;
    }
    let p = w.parallel.pp.get() as f64;
    let v = w.parallel.vpp.get() as f64;
    let m = w.workload.microbatches.get() as f64;
    let bubble = (p - 1.0) / (v * m);
    let (s, h) = (w.workload.seq.get() as f64, arch.hidden.get() as f64);
    let recompute = match w.activations.recompute {
        Recompute::None => 0.0,
        Recompute::Selective => s / (18.0 * h + 3.0 * s),
        // A forward pass again for the layers checkpointed (`ckpt_layers` of each chunk).
        Recompute::Full => {
            let stage = arch.layers.get().div_ceil(w.parallel.pp.get());
            let (lc, n) = crate::activations::chunk_layers(w, stage);
            n as f64 / lc.get() as f64 / 3.0
        }
    };
    bubble + recompute
}

/// Tokens the cluster processes per step: `dp·m·b·s` (inference `dp·b·(s+n)`).
pub(crate) fn tokens(w: &Scenario, dp: u32) -> u64 {
    let per = if w.workload.mode != Mode::Train {
        w.workload.batch.get() as u128 * (w.workload.seq.get() as u128 + w.workload.gen as u128)
    } else {
        w.workload.microbatches.get() as u128
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
        let gpn = s.cluster.gpus_per_node.get();
        let mut candidates: Vec<(u32, u32)> = Vec::new();
        let mut g = 1;
        while g < gpn {
            candidates.push((g, 1));
            g *= 2;
        }
        // `max_nodes` is a solver option (0 = none asked): one node is always tried.
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

    pub(crate) fn cluster(&self, per_node: u32, nodes: u32) -> Scenario {
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
                    let gpn = self.base.cluster.gpus_per_node.get();
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
