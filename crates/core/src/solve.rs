//! Inverse solves: the largest micro-batch or sequence length that fits.

use super::estimate::estimate;
use super::scenario::{Scenario, Solve};
use serde::{Deserialize, Serialize};

/// The answer of an inverse solve.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SolveResult {
    /// `max_batch` or `max_context`.
    pub what: String,
    /// The largest value that fits (0 when even 1 does not fit).
    pub value: u32,
    /// Per-GPU bytes at `value` (at 1 when nothing fits).
    pub bytes_at_value: u64,
    /// Per-GPU bytes at `value + 1` (`None` at the input's upper limit).
    pub bytes_at_next: Option<u64>,
    /// The key the value is for (`batch` or `seq`).
    pub key: String,
}

const MAX_BATCH: u32 = 1 << 20;
const MAX_SEQ: u32 = 1 << 26;

/// The largest `batch` (or `seq`) for which the estimate fits the usable memory,
/// holding every other input fixed.
///
/// Memory never decreases as batch or sequence grow (a property test checks it),
/// so a doubling search followed by bisection finds the boundary; the result is
/// exact: `value` fits and `value + 1` does not (or `value` is the key's limit).
///
/// # Example
/// ```
/// use memfit_core::{scenario::{Scenario, Mode, Solve}, solve::max_fitting};
/// let mut s = Scenario::default();
/// s.workload.mode = Mode::Infer;                       // Llama-2-7B in bf16 on an H100
/// let r = max_fitting(&s, Solve::MaxBatch).unwrap();
/// assert!(r.bytes_at_value <= 85_520_809_984 && r.bytes_at_next.unwrap() > 85_520_809_984);
/// ```
pub fn max_fitting(s: &Scenario, what: Solve) -> Option<SolveResult> {
    let (limit, key) = match what {
        Solve::None | Solve::MinGpus => return None,
        Solve::MaxBatch => (MAX_BATCH, "batch"),
        Solve::MaxContext => (MAX_SEQ, "seq"),
    };
    let usable = s.usable_bytes();
    let bytes_at = |v: u32| {
        let mut t = s.clone();
        match what {
            Solve::MaxBatch => t.workload.batch = crate::scenario::at_least_one(v),
            _ => t.workload.seq = crate::scenario::at_least_one(v),
        }
        estimate(&t).per_gpu_bytes
    };
    let result = |value: u32, at: u64, next: Option<u64>| SolveResult {
        what: what.as_str().into(),
        value,
        bytes_at_value: at,
        bytes_at_next: next,
        key: key.into(),
    };
    let first = bytes_at(1);
    if first > usable {
        return Some(result(0, first, Some(first)));
    }
    // Doubling: lo fits, hi does not (or hi = limit fits).
    let mut lo = 1u32;
    let mut hi = 2u32;
    loop {
        if bytes_at(hi) > usable {
            break;
        }
        lo = hi;
        if hi == limit {
            return Some(result(limit, bytes_at(limit), None));
        }
        hi = hi.saturating_mul(2).min(limit);
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if bytes_at(mid) <= usable {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(result(lo, bytes_at(lo), Some(bytes_at(lo + 1))))
}
