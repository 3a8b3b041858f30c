//! Counts that cannot be zero: degrees, sizes, GPUs. The codec parses input into them
//! (parse, don't validate), so the estimator divides by them without a clamp. A floor of
//! its own (it imports no other module), so the scenario and the model shape share it.

use std::num::NonZeroU32;

/// A degree or count that cannot be zero (tp, pp, batch, seq, GPUs, ...).
pub type Count = NonZeroU32;

/// `n` as a [`Count`]; `n = 0` is a compile-time error in a constant and a panic
/// otherwise (use it for literals only; input goes through the codec).
pub const fn count(n: u32) -> Count {
    match NonZeroU32::new(n) {
        Some(c) => c,
        None => panic!("a count cannot be zero"),
    }
}

/// `n` as a [`Count`], 1 for 0: for degrees computed inside the estimator (divisors,
/// doublings), which are never 0; input goes through the codec instead.
pub fn at_least_one(n: u32) -> Count {
    Count::new(n).unwrap_or(Count::MIN)
}

/// How many groups of `d` fit in `n`, at least one: `max(⌊n / d⌋, 1)`.
///
/// # Formula
/// ```text
/// q = max(⌊n / d⌋, 1)      n: a count (GPUs, heads, layers), d ≥ 1: the group's size
/// ```
/// The one division whose quotient may round to 0 and must not: a group wider than what
/// it is carved from (a TP·CP group wider than a node, more TP ranks than KV heads) still
/// forms one group, as the frameworks replicate rather than split further; such layouts
/// are flagged as problems elsewhere.
///
/// # Example
/// `div_at_least_one(8, 16) = 1`; `div_at_least_one(8, 2) = 4`.
pub fn div_at_least_one(n: u32, d: Count) -> Count {
    at_least_one(n / d.get())
}

/// `⌈n / d⌉` of two counts, a count again (≥ 1 since `n ≥ 1`): the layers of the most
/// loaded pipeline stage, `⌈L / p⌉`.
///
/// # Formula
/// ```text
/// q = ⌈n / d⌉      n, d ≥ 1 (layers, stages): q ≥ 1 exactly, no clamp
/// ```
///
/// # Example
/// `ceil_div(30, 4) = 8`; `ceil_div(2, 4) = 1`.
pub fn ceil_div(n: Count, d: Count) -> Count {
    at_least_one(n.get().div_ceil(d.get()))
}
