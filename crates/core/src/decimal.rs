//! Decimal text to `f64`, exactly as `str::parse::<f64>` reads it (the same accepted
//! strings, the same correctly rounded value, ties to even), without the standard library's
//! parser: that parser's tables and fast paths (its `POWER_OF_FIVE_128` table alone is
//! 10.4 KB) were 15.0 KB of the page's first module's gzip (2026-11-27: 311,026 → 296,039 B
//! with every float parse stubbed out). The query codec, the form's fields and the chart's
//! SVG rewrite read floats through [`parse_f64`].
//!
//! How: an estimate from the first 19 significant digits (within a few units in the last
//! place), then corrected by comparing the exact decimal with the exact midpoints to its
//! neighbours, in big integers ([`Big`]). A test compares it with `str::parse` on a few
//! hundred thousand strings, the awkward ones included.

use std::cmp::Ordering;

/// `s` read as an `f64`, or `None` where `str::parse::<f64>` gives an error. The grammar is
/// the standard library's: an optional sign, then `inf`, `infinity` or `nan` (any case), or
/// digits with at most one `.` (at least one digit on either side) and an optional
/// exponent (`e` or `E`, an optional sign, at least one digit). No spaces.
pub fn parse_f64(s: &str) -> Option<f64> {
    let (neg, rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let sign = |x: f64| if neg { -x } else { x };
    if rest.eq_ignore_ascii_case("inf") || rest.eq_ignore_ascii_case("infinity") {
        return Some(sign(f64::INFINITY));
    }
    if rest.eq_ignore_ascii_case("nan") {
        return Some(sign(f64::NAN));
    }
    let (digits, exp) = scan(rest.as_bytes())?;
    Some(sign(value(&digits, exp)))
}

/// The significant digits (no leading zeros; empty for zero) and `k` such that the number
/// is `0.d₁d₂… × 10^k`; `None` for text outside the grammar.
fn scan(b: &[u8]) -> Option<(Vec<u8>, i64)> {
    let mut i = 0;
    let mut digits = Vec::new();
    // Digits seen (significant or not) before and after the point, and the point's place.
    let (mut before, mut after, mut point) = (0usize, 0usize, false);
    let mut k: i64 = 0;
    while i < b.len() {
        match b[i] {
            c @ b'0'..=b'9' => {
                if point {
                    after += 1;
                } else {
                    before += 1;
                }
                if c == b'0' && digits.is_empty() {
                    if point {
                        k -= 1;
                    }
                } else {
                    digits.push(c - b'0');
                    if !point {
                        k += 1;
                    }
                }
            }
            b'.' if !point => point = true,
            _ => break,
        }
        i += 1;
    }
    if before + after == 0 {
        return None;
    }
    if i < b.len() {
        if b[i] != b'e' && b[i] != b'E' {
            return None;
        }
        let e = exponent(&b[i + 1..])?;
        k = k.saturating_add(e);
    }
    Some((digits, k))
}

/// An exponent's digits with an optional sign, saturated far beyond any `f64`.
fn exponent(b: &[u8]) -> Option<i64> {
    let (neg, b) = match b.first() {
        Some(b'-') => (true, &b[1..]),
        Some(b'+') => (false, &b[1..]),
        _ => (false, b),
    };
    if b.is_empty() || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let e = b
        .iter()
        .fold(0i64, |e, &d| (e * 10 + i64::from(d - b'0')).min(1 << 40));
    Some(if neg { -e } else { e })
}

/// The nearest `f64` to `0.d₁d₂… × 10^k` (ties to even), not negative.
fn value(digits: &[u8], k: i64) -> f64 {
    // 10^(k−1) ≤ x < 10^k: below 1e-324 (under half the least subnormal) x rounds to 0;
    // from 1e309 (over the largest finite) it is infinite.
    if digits.is_empty() || k <= -324 {
        return 0.0;
    }
    if k >= 310 {
        return f64::INFINITY;
    }
    let n = digits.len() as i64;
    // The estimate: the first 19 digits, then 10^e in two factors (no overflow on the way).
    let head = digits
        .iter()
        .take(19)
        .fold(0u64, |w, &d| w * 10 + u64::from(d));
    let e = (k - n.min(19)) as i32;
    let mut x = head as f64 * 10f64.powi(e / 2) * 10f64.powi(e - e / 2);
    if x.is_infinite() {
        x = f64::MAX;
    }
    // The exact value is N · 10^(k − n), N the digits as an integer.
    let exact = Big::from_digits(digits);
    let e10 = k - n;
    loop {
        let (m, q) = parts(x);
        // Above the midpoint to the next float up (or on it, from an odd mantissa): up.
        match compare(&exact, e10, 2 * m + 1, q - 1) {
            Ordering::Greater => {
                x = up(x);
                if x.is_infinite() {
                    return x;
                }
                continue;
            }
            Ordering::Equal if m % 2 == 1 => return up(x),
            _ => {}
        }
        if x == 0.0 {
            return x;
        }
        // Below the midpoint to the next float down (or on it, from an odd mantissa): down.
        // Under a power of two (a normal float with the smallest mantissa), the float below
        // is half as far.
        let (lo_m, lo_q) = if m == 1 << 52 && q > -1074 {
            (4 * m - 1, q - 2)
        } else {
            (2 * m - 1, q - 1)
        };
        match compare(&exact, e10, lo_m, lo_q) {
            Ordering::Less => x = down(x),
            Ordering::Equal if m % 2 == 1 => return down(x),
            _ => return x,
        }
    }
}

/// `x = m · 2^q` with `m` the integer mantissa (the hidden bit included), `x` finite, ≥ 0.
fn parts(x: f64) -> (u64, i64) {
    let bits = x.to_bits();
    let (exp, frac) = ((bits >> 52) as i64, bits & ((1 << 52) - 1));
    if exp == 0 {
        (frac, -1074)
    } else {
        (frac | 1 << 52, exp - 1075)
    }
}

fn up(x: f64) -> f64 {
    f64::from_bits(x.to_bits() + 1)
}

fn down(x: f64) -> f64 {
    f64::from_bits(x.to_bits() - 1)
}

/// `n · 10^e10` against `m · 2^q`, exactly.
fn compare(n: &Big, e10: i64, m: u64, q: i64) -> Ordering {
    let mut left = n.clone();
    let mut right = Big::from_u64(m);
    if e10 >= 0 {
        left.mul_pow10(e10 as u32);
    } else {
        right.mul_pow10(e10.unsigned_abs() as u32);
    }
    if q >= 0 {
        right.shl(q as u32);
    } else {
        left.shl(q.unsigned_abs() as u32);
    }
    left.cmp(&right)
}

/// A natural number in base 2^32, least significant limb first, no high zero limbs.
#[derive(Clone, PartialEq, Eq)]
struct Big(Vec<u32>);

impl Big {
    fn from_u64(v: u64) -> Big {
        let mut b = Big(vec![v as u32, (v >> 32) as u32]);
        b.trim();
        b
    }

    fn from_digits(digits: &[u8]) -> Big {
        let mut b = Big(Vec::new());
        for chunk in digits.chunks(9) {
            let v = chunk.iter().fold(0u32, |v, &d| v * 10 + u32::from(d));
            b.mul_add(10u32.pow(chunk.len() as u32), v);
        }
        b
    }

    fn trim(&mut self) {
        while self.0.last() == Some(&0) {
            self.0.pop();
        }
    }

    /// `self · f + a`.
    fn mul_add(&mut self, f: u32, a: u32) {
        let mut carry = u64::from(a);
        for limb in &mut self.0 {
            let v = u64::from(*limb) * u64::from(f) + carry;
            *limb = v as u32;
            carry = v >> 32;
        }
        if carry > 0 {
            self.0.push(carry as u32);
        }
        self.trim();
    }

    fn mul_pow10(&mut self, mut e: u32) {
        while e > 0 {
            let k = e.min(9);
            self.mul_add(10u32.pow(k), 0);
            e -= k;
        }
    }

    fn shl(&mut self, bits: u32) {
        let (words, bits) = ((bits / 32) as usize, bits % 32);
        if bits > 0 {
            let mut carry = 0u32;
            for limb in &mut self.0 {
                let v = (*limb << bits) | carry;
                carry = *limb >> (32 - bits);
                *limb = v;
            }
            if carry > 0 {
                self.0.push(carry);
            }
        }
        if !self.0.is_empty() {
            self.0.splice(0..0, std::iter::repeat_n(0, words));
        }
    }
}

impl Ord for Big {
    fn cmp(&self, other: &Big) -> Ordering {
        self.0
            .len()
            .cmp(&other.0.len())
            .then_with(|| self.0.iter().rev().cmp(other.0.iter().rev()))
    }
}

impl PartialOrd for Big {
    fn partial_cmp(&self, other: &Big) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[cfg(test)]
mod tests;
