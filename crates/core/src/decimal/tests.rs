//! [`parse_f64`] against `str::parse::<f64>`: the same answer (bit for bit) or the same
//! refusal, on awkward strings and a few hundred thousand drawn ones.

use super::parse_f64;

/// xorshift64*: a fixed sequence, so a failure replays.
struct Draw(u64);

impl Draw {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn same(s: &str) {
    let want = s.parse::<f64>().ok().map(f64::to_bits);
    let got = parse_f64(s).map(f64::to_bits);
    assert_eq!(
        got,
        want,
        "`{s}`: got {:?}, std {:?}",
        parse_f64(s),
        s.parse::<f64>().ok()
    );
}

#[test]
fn awkward_strings() {
    for s in [
        "", "+", "-", ".", "e", "e5", ".e5", "1e", "1e+", "1e-", "1E5", "1.e5", ".5", "5.", "-.5",
        "+5", "--5", "+-5", "1_000", " 1", "1 ", "1.2.3", "1e5.5", "0x10", "١", "inf", "-inf",
        "+Infinity", "INF", "infinity", "infinit", "infinityy", "nan", "NaN", "-nan", "+nAn",
        "nan1", "0", "-0", "0.0", "-0.0e-999", "000000", "0e99999999999999999999", "00001",
        "0.000123", "123.45", "1.50", "100", "1e308", "1e309", "1.7976931348623157e308",
        "1.7976931348623158e308", "1.7976931348623159e308", "179769313486231580793728971405303415079934132710037826936173778980444968292764750946649017977587207096330286416692887910946555547851940402630657488671505820681908902000708383676273854845817711531764475730270069855571366959622842914819860834936475292719074168444365510704342711559699508093042880177904174497791",
        "179769313486231580793728971405301e276", "2.2250738585072014e-308",
        "2.2250738585072011e-308", "2.2250738585072012e-308", "4.9406564584124654e-324",
        "2.4703282292062327e-324", "2.4703282292062328e-324", "2.47032822920623272088e-324",
        "1e-324", "1e-323", "5e-324", "3e-324", "7.4e-324", "1e-400", "9007199254740992",
        "9007199254740993", "9007199254740994", "9007199254740995", "9007199254740993.0000000001",
        "0.1", "0.2", "0.3", "0.30000000000000004", "0.1000000000000000055511151231257827021181583404541015625",
        "0.1000000000000000055511151231257827021181583404541015624", "123456789012345678901234567890",
        "1e23", "8.98846567431158e307", "1e-5", "7e9", "1e9999999999999", "1e-9999999999999",
        "4.4501477170144023e-308", "2.225073858507201136057409796709131975934819546351645648e-308",
    ] {
        same(s);
    }
}

#[test]
fn every_float_written_back() {
    let mut d = Draw(0x9E37_79B9_7F4A_7C15);
    for _ in 0..100_000 {
        let x = f64::from_bits(d.next());
        for s in [
            format!("{x}"),
            format!("{x:e}"),
            format!("{x:.17e}"),
            format!("{x:.3e}"),
            format!("{x:.30e}"),
        ] {
            same(&s);
        }
    }
}

#[test]
fn drawn_decimals() {
    let mut d = Draw(0xD1B5_4A32_D192_ED03);
    for _ in 0..200_000 {
        let mut s = String::new();
        match d.below(4) {
            0 => s.push('-'),
            1 => s.push('+'),
            _ => {}
        }
        let longest = if d.below(5) == 0 { 60 } else { 20 };
        let n = 1 + d.below(longest);
        let point = d.below(n + 2);
        for i in 0..n {
            if i == point {
                s.push('.');
            }
            // Runs of 9s and 0s reach the ties and the carries.
            let digit = match d.below(6) {
                0 => 0,
                1 => 9,
                _ => d.below(10),
            };
            s.push(char::from(b'0' + digit as u8));
        }
        if d.below(3) > 0 {
            s.push(if d.below(2) == 0 { 'e' } else { 'E' });
            let e = d.below(760) as i64 - 380;
            s.push_str(&e.to_string());
        }
        same(&s);
    }
}

/// Odd 54-bit integers lie exactly halfway between two floats; times a power of two, they
/// still do (the ties to even, in every binade).
#[test]
fn exact_ties() {
    let mut d = Draw(0x0123_4567_89AB_CDEF);
    for _ in 0..50_000 {
        let v = u128::from((1u64 << 53) | d.next() >> 11 | 1);
        let shift = d.below(70) as u32;
        same(&(v << shift).to_string());
        same(&format!("{}.0", v << shift));
        // One unit in the last written digit either side of the tie.
        let t = (v << shift) * 10;
        same(&format!("{}e-1", t + 1));
        same(&format!("{}e-1", t - 1));
    }
}

/// Halfway between two floats below 1, subnormals included: `(2m + 1) · 2^(q−1)` written
/// out exactly as `(2m + 1) · 5^(1−q)` × 10^(q−1), and a digit either side of it.
#[test]
fn exact_small_ties() {
    let mut d = Draw(0x5851_F42D_4C95_7F2D);
    for case in 0..300 {
        // Every fourth a subnormal's neighbourhood, the others normal binades below 1.
        let (m, q) = if case % 4 == 0 {
            (d.next() >> (12 + d.below(50)), -1074)
        } else {
            ((1u64 << 52) | d.next() >> 12, -(53 + d.below(1021) as i64))
        };
        // Decimal digits, least significant first.
        let mut digits: Vec<u8> = (2 * u128::from(m) + 1)
            .to_string()
            .bytes()
            .rev()
            .map(|b| b - b'0')
            .collect();
        for _ in 0..(1 - q) {
            let mut carry = 0;
            for x in &mut digits {
                let v = *x * 5 + carry;
                *x = v % 10;
                carry = v / 10;
            }
            if carry > 0 {
                digits.push(carry);
            }
        }
        let text: String = digits.iter().rev().map(|&x| char::from(b'0' + x)).collect();
        same(&format!("{text}e{}", q - 1));
        same(&format!("{text}1e{}", q - 2));
        same(&format!("{text}0e{}", q - 2));
        let mut less = text.clone().into_bytes();
        let last = less.len() - 1;
        if less[last] > b'0' {
            less[last] -= 1;
            same(&format!("{}e{}", String::from_utf8(less).unwrap(), q - 1));
        }
    }
}
