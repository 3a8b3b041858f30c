//! Byte counts and their display.
//!
//! Bytes stay integers (`u64`) until the last moment of display. Display always
//! names its unit: GiB (2^30 bytes) by default, GB (10^9 bytes) on request.
//! DeepSpeed prints `bytes / 2**30` and labels it "GB"; memfit labels the same
//! number GiB.

use serde::{Deserialize, Serialize};

/// The byte count that stands for "does not fit in 64 bits".
///
/// # Invariant
/// Every byte count the estimator produces is exact, or — when the exact value is
/// 2^64 − 1 bytes or more — exactly `OUT_OF_RANGE`: products are computed in `u128`
/// and clamped once (`units::mul_div`, `mul_div_ceil`, `.min(u64::MAX)`) or saturate
/// (`units::mul`), and sums saturate; a clamped value is never divided again (within
/// the codec's ranges every division happens inside the `u128` computation). No value
/// wraps: `tests/codec_properties.rs` evaluates the full input ranges with overflow
/// checks on. So an item or total equal to `OUT_OF_RANGE` is out of range, never a
/// figure, and `estimate` says so with a warning instead of printing 16 EiB.
pub const OUT_OF_RANGE: u64 = u64::MAX;

/// 2^30 bytes.
pub const GIB: u64 = 1 << 30;
/// 2^20 bytes.
pub const MIB: u64 = 1 << 20;
/// 10^9 bytes.
pub const GB: u64 = 1_000_000_000;

crate::spelled! {
    /// Which unit system a number is shown in.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum Units {
        /// Binary: GiB = 2^30 bytes (what `nvidia-smi` and PyTorch report as MiB/GiB).
        #[default]
        Gib = "gib", "GiB (2^30 B)", "2^30 B";
        /// Decimal: GB = 10^9 bytes (what the seeds' worked examples and vendors' data sheets use).
        Gb = "gb", "GB (10^9 B)", "10^9 B";
    }
}

impl Units {
    /// The unit's symbol (`GiB`, `GB`).
    pub fn symbol(self) -> &'static str {
        match self {
            Units::Gib => "GiB",
            Units::Gb => "GB",
        }
    }
    /// Bytes in one unit.
    pub fn divisor(self) -> u64 {
        match self {
            Units::Gib => GIB,
            Units::Gb => GB,
        }
    }
    /// `bytes` in this unit, as a float for display.
    pub fn value(self, bytes: u64) -> f64 {
        bytes as f64 / self.divisor() as f64
    }
    /// `bytes` formatted with two decimals and the unit, e.g. `"12.55 GiB"`.
    ///
    /// ```
    /// use memfit_core::units::Units;
    /// assert_eq!(Units::Gib.format(85_520_809_984), "79.65 GiB");
    /// assert_eq!(Units::Gb.format(85_520_809_984), "85.52 GB");
    /// assert_eq!(Units::Gib.format(u64::MAX), "out of range"); // not 16 EiB: see ledger::OUT_OF_RANGE
    /// ```
    pub fn format(self, bytes: u64) -> String {
        if bytes == OUT_OF_RANGE {
            return "out of range".into();
        }
        format!("{:.2} {}", self.value(bytes), self.symbol())
    }
    /// A signed byte difference (headroom), e.g. `"-3.10 GiB"`.
    pub fn format_signed(self, bytes: i128) -> String {
        let v = bytes as f64 / self.divisor() as f64;
        format!("{v:.2} {}", self.symbol())
    }
}

/// `a · b / c`, computed exactly in 128-bit integers and truncated toward zero;
/// `c = 0` is treated as 1 so that no division can panic.
pub fn mul_div(a: u64, b: u64, c: u64) -> u64 {
    let r = (a as u128 * b as u128) / c.max(1) as u128;
    r.min(u64::MAX as u128) as u64
}

/// `⌈a · b / c⌉`: the largest of `c` shards of `a·b` bytes (memory comes in whole
/// bytes, and the peak is the rank holding the biggest shard); `c = 0` is treated as 1.
///
/// ```
/// use memfit_core::units::mul_div_ceil;
/// assert_eq!(mul_div_ceil(2, 7_500_000_000, 1024), 14_648_438); // 14,648,437.5 rounded up
/// ```
pub fn mul_div_ceil(a: u64, b: u64, c: u64) -> u64 {
    let r = (a as u128 * b as u128).div_ceil(c.max(1) as u128);
    r.min(u64::MAX as u128) as u64
}

/// `⌈a · b / c⌉` (or `⌊…⌋` without `ceil`) for 128-bit operands, exactly: the product is
/// formed in 256 bits when it does not fit in 128 (schoolbook on 64-bit limbs, then
/// long division), so no intermediate wraps; `c = 0` is treated as 1. Returns `None`
/// when the quotient itself exceeds `u128::MAX`.
///
/// ```
/// use memfit_core::units::mul_div_u128;
/// // (2^100 · 3^40) / 3^39 = 3 · 2^100: the product needs 164 bits.
/// let (a, b, c) = (1u128 << 100, 3u128.pow(40), 3u128.pow(39));
/// assert_eq!(mul_div_u128(a, b, c, false), Some(3 << 100));
/// assert_eq!(mul_div_u128(7, 1, 2, true), Some(4));
/// ```
pub fn mul_div_u128(a: u128, b: u128, c: u128, ceil: bool) -> Option<u128> {
    let c = c.max(1);
    if let Some(p) = a.checked_mul(b) {
        return Some(if ceil { p.div_ceil(c) } else { p / c });
    }
    // 256-bit product (hi, lo) from 64-bit limbs.
    let (a1, a0) = (a >> 64, a & u64::MAX as u128);
    let (b1, b0) = (b >> 64, b & u64::MAX as u128);
    let ll = a0 * b0;
    let lh = a0 * b1;
    let hl = a1 * b0;
    let hh = a1 * b1;
    let mid = (ll >> 64) + (lh & u64::MAX as u128) + (hl & u64::MAX as u128);
    let lo = (ll & u64::MAX as u128) | (mid << 64);
    let hi = hh + (lh >> 64) + (hl >> 64) + (mid >> 64);
    if hi >= c {
        return None; // the quotient needs more than 128 bits
    }
    // Long division of (hi, lo) by c, one bit at a time; the remainder stays below c.
    let (mut rem, mut q) = (hi, 0u128);
    for i in (0..128).rev() {
        let carry = rem >> 127;
        rem = (rem << 1) | ((lo >> i) & 1);
        q <<= 1;
        if carry == 1 || rem >= c {
            rem = rem.wrapping_sub(c);
            q |= 1;
        }
    }
    Some(if ceil && rem > 0 {
        q.checked_add(1)?
    } else {
        q
    })
}

/// `a · b`, saturating at `u64::MAX` (only reachable with absurd inputs, which the
/// codec rejects; this keeps the estimator panic-free on any input).
pub fn mul(a: u64, b: u64) -> u64 {
    a.saturating_mul(b)
}

/// Formats an integer with thousands separators: `6738415616` → `"6,738,415,616"`.
pub fn group_digits(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// A parameter count in a short human form: `6738415616` → `"6.74B"`.
pub fn short_count(n: u64) -> String {
    let f = n as f64;
    if f >= 1e12 {
        format!("{:.2}T", f / 1e12)
    } else if f >= 1e9 {
        format!("{:.2}B", f / 1e9)
    } else if f >= 1e6 {
        format!("{:.2}M", f / 1e6)
    } else if f >= 1e3 {
        format!("{:.1}K", f / 1e3)
    } else {
        n.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_name_their_unit() {
        assert_eq!(Units::Gib.format(GIB), "1.00 GiB");
        assert_eq!(Units::Gb.format(GB), "1.00 GB");
        assert_eq!(
            Units::Gib.format_signed(-(GIB as i128) * 3 / 2),
            "-1.50 GiB"
        );
    }

    #[test]
    fn mul_div_is_exact_and_total() {
        assert_eq!(mul_div(18, 7_000_000_000, 64), 1_968_750_000);
        assert_eq!(mul_div(5, 7, 0), 35);
        assert_eq!(mul_div(u64::MAX, u64::MAX, 1), u64::MAX);
    }

    #[test]
    fn grouping() {
        assert_eq!(group_digits(6_738_415_616), "6,738,415,616");
        assert_eq!(group_digits(999), "999");
        assert_eq!(group_digits(1000), "1,000");
        assert_eq!(short_count(6_738_415_616), "6.74B");
        assert_eq!(short_count(124_439_808), "124.44M");
    }
}
