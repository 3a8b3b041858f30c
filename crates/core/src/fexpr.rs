//! A formula in floating point, for the tools that compute in Python floats: DeepSpeed's
//! estimators multiply `float`s and truncate with `int()`, and reproducing their numbers to
//! the byte means doing the same arithmetic in the same order. An [`FExpr`] is that
//! arithmetic as reverse Polish tokens over named symbols, so the ledger item's text
//! ([`FExpr::symbols`], [`FExpr::values`]) and its bytes ([`FExpr::bytes`]) come from one
//! program and cannot drift apart — the `f64` sibling of [`crate::expr::Expr`].
//!
//! Rendering: `·` multiplies, `/` divides (in `f64`), `int(x)` is Python's truncation
//! toward zero, `max(a, b)` as written; parentheses only where precedence needs them.

/// One token.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FTok {
    /// A constant.
    Num(f64),
    /// A named quantity and its value.
    Sym(&'static str, f64),
    /// `a · b`.
    Mul,
    /// `a / b` (IEEE: `b = 0` gives ±∞ or NaN, which [`FExpr::bytes`] reads as 0).
    Div,
    /// `a + b`.
    Add,
    /// `max(a, b)` (Python's `max` of two floats).
    Max,
    /// Python's `int(x)`: truncation toward zero.
    Int,
}

/// A floating-point formula: reverse Polish tokens.
#[derive(Clone, Debug, PartialEq)]
pub struct FExpr(Vec<FTok>);

impl FExpr {
    /// The formula of `toks` (reverse Polish).
    ///
    /// ```
    /// use memfit_core::fexpr::{FExpr, FTok::*};
    /// // DeepSpeed 0.19's partitioned states: int(18·P/G), Llama-2-7B on 8 GPUs.
    /// let e = FExpr::new(&[Num(18.0), Sym("P", 6_738_415_616.0), Mul, Sym("G", 8.0), Div, Int]);
    /// assert_eq!(e.bytes(), 15_161_435_136);
    /// assert_eq!(e.symbols(), "int(18·P/G)");
    /// assert_eq!(e.values(), "P=6738415616, G=8");
    /// ```
    pub fn new(toks: &[FTok]) -> FExpr {
        FExpr(toks.to_vec())
    }

    /// The value in `f64`, in the tokens' order (`None` when ill-formed).
    pub fn eval(&self) -> Option<f64> {
        let mut stack: Vec<f64> = Vec::with_capacity(self.0.len());
        for t in &self.0 {
            let x = match *t {
                FTok::Num(x) | FTok::Sym(_, x) => x,
                FTok::Int => {
                    let a = stack.pop()?;
                    a.trunc()
                }
                op => {
                    let (b, a) = (stack.pop()?, stack.pop()?);
                    match op {
                        FTok::Mul => a * b,
                        FTok::Div => a / b,
                        FTok::Add => a + b,
                        FTok::Max => a.max(b),
                        FTok::Num(_) | FTok::Sym(..) | FTok::Int => unreachable!(),
                    }
                }
            };
            stack.push(x);
        }
        match stack.as_slice() {
            [v] => Some(*v),
            _ => None,
        }
    }

    /// The value as bytes, as Python's `int()` of it: truncated toward zero; 0 when
    /// negative, not finite or ill-formed; saturated at 2^64 − 1.
    pub fn bytes(&self) -> u64 {
        match self.eval() {
            Some(v) if v.is_finite() && v > 0.0 => v.trunc() as u64,
            _ => 0,
        }
    }

    /// The formula in symbols (`P·max(4·n, 16)·abf`).
    pub fn symbols(&self) -> String {
        // (text, precedence): 4 atom or function, 3 product, 2 quotient, 1 sum. Float
        // arithmetic is not associative, so the text keeps the evaluation order: an
        // operation's right operand is parenthesised unless it is an atom (a·(b/c), a/(b·c)).
        let mut stack: Vec<(String, u8)> = Vec::with_capacity(self.0.len());
        let wrap = |(s, p): &(String, u8), need: u8| {
            if *p < need {
                format!("({s})")
            } else {
                s.clone()
            }
        };
        for t in &self.0 {
            let item = match *t {
                FTok::Num(x) => (number(x), 4),
                FTok::Sym(s, _) => (s.to_string(), 4),
                FTok::Int => {
                    let Some(a) = stack.pop() else {
                        return "?".into();
                    };
                    (format!("int({})", a.0), 4)
                }
                op => {
                    let (Some(b), Some(a)) = (stack.pop(), stack.pop()) else {
                        return "?".into();
                    };
                    match op {
                        FTok::Mul => (format!("{}·{}", wrap(&a, 2), wrap(&b, 4)), 3),
                        FTok::Div => (format!("{}/{}", wrap(&a, 2), wrap(&b, 4)), 2),
                        FTok::Add => (format!("{} + {}", a.0, wrap(&b, 2)), 1),
                        FTok::Max => (format!("max({}, {})", a.0, b.0), 4),
                        FTok::Num(_) | FTok::Sym(..) | FTok::Int => unreachable!(),
                    }
                }
            };
            stack.push(item);
        }
        match stack.as_slice() {
            [(s, _)] => s.clone(),
            _ => "?".into(),
        }
    }

    /// The symbols' values, each once, in the order they first appear.
    pub fn values(&self) -> String {
        let mut seen: Vec<&str> = Vec::new();
        let mut out = Vec::new();
        for t in &self.0 {
            if let FTok::Sym(s, v) = *t {
                if !seen.contains(&s) {
                    seen.push(s);
                    out.push(format!("{s}={}", number(v)));
                }
            }
        }
        out.join(", ")
    }
}

/// A value as Python prints it in these formulas: whole numbers without a decimal point.
fn number(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e18 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

#[cfg(test)]
mod tests {
    use super::{FExpr, FTok::*};

    /// Python's arithmetic, by hand: DeepSpeed's ZeRO-2 CPU offload host RAM for
    /// t5-3b (2,851,598,336 parameters) on one node of 8 GPUs, buffer factor 1.5:
    /// `P·max(4·n, 16)·abf` = 2,851,598,336·32·1.5 = 136,876,720,128 bytes.
    #[test]
    fn evaluates_in_order_and_renders() {
        let e = FExpr::new(&[
            Sym("P", 2_851_598_336.0),
            Num(4.0),
            Sym("n", 8.0),
            Mul,
            Num(16.0),
            Max,
            Mul,
            Sym("abf", 1.5),
            Mul,
        ]);
        assert_eq!(e.bytes(), 136_876_720_128);
        assert_eq!(e.symbols(), "P·max(4·n, 16)·abf");
        assert_eq!(e.values(), "P=2851598336, n=8, abf=1.5");
        // int() truncates: 18·7/8 = 15.75 → 15; a quotient's divisor keeps its parentheses.
        let q = FExpr::new(&[
            Num(18.0),
            Num(7.0),
            Mul,
            Num(8.0),
            Sym("k", 1.0),
            Mul,
            Div,
            Int,
        ]);
        assert_eq!(
            (q.bytes(), q.symbols()),
            (15, "int(18·7/(8·k))".to_string())
        );
        // P·18·(1/nodes)·abf: the sum's and the quotient's parentheses.
        let g = FExpr::new(&[
            Sym("P", 10.0),
            Num(18.0),
            Mul,
            Num(1.0),
            Sym("nodes", 2.0),
            Div,
            Mul,
        ]);
        assert_eq!((g.bytes(), g.symbols()), (90, "P·18·(1/nodes)".to_string()));
    }

    /// Ill-formed programs and values that are not bytes.
    #[test]
    fn refuses_and_floors_at_zero() {
        let bad = FExpr::new(&[Num(1.0), Mul]);
        assert_eq!(
            (bad.eval(), bad.bytes(), bad.symbols()),
            (None, 0, "?".to_string())
        );
        assert_eq!(FExpr::new(&[Num(1.0), Num(0.0), Div]).bytes(), 0);
        assert_eq!(FExpr::new(&[Num(-3.0)]).bytes(), 0);
        assert_eq!(FExpr::new(&[Num(1e30)]).bytes(), u64::MAX);
    }
}
