//! A formula as one value: the arithmetic and its text come from the same tokens, so a
//! ledger item's formula cannot drift from its bytes.
//!
//! An [`Expr`] is a short program in reverse Polish notation over named symbols
//! (`Ψ = 6,738,415,616`, `t = 8`, …) and constants. [`Expr::eval`] computes it exactly in
//! `u128` (no allocation: the explorer's hot path evaluates the same expressions the
//! explained ledger prints), [`Expr::symbols`] renders it in infix with the symbols
//! (`⌈2·Ψ/(t·N_s)⌉`), and [`Expr::values`] lists the symbols' values in the order they
//! first appear (`Ψ=6738415616, t=1, N_s=8`).
//!
//! Rendering conventions: `·` multiplies, `/` divides rounding down, `⌈a/b⌉` divides
//! rounding up, `max(a, b)` and `min(a, b)` as written; parentheses only where precedence
//! needs them.

use std::mem::MaybeUninit;

use crate::units::OUT_OF_RANGE;

/// One token of an expression.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tok {
    /// A constant.
    Num(u128),
    /// A named quantity and its value.
    Sym(&'static str, u128),
    /// A named quantity whose value is `vals[i]` of the bindings a constant formula is
    /// evaluated with ([`eval_bound`], [`bind`]); unbound (in an [`Expr`]) it is ill-formed.
    Var(&'static str, usize),
    /// `a · b` (saturating).
    Mul,
    /// `a / b`, rounded down (`b = 0` gives 0).
    Div,
    /// `⌈a / b⌉` (`b = 0` gives 0).
    DivCeil,
    /// `a + b` (saturating).
    Add,
    /// `a − b` (0 below 0).
    Sub,
    /// `max(a, b)`.
    Max,
    /// `min(a, b)`.
    Min,
}

/// The most tokens an expression holds.
pub const MAX_TOKENS: usize = 48;

/// The deepest evaluation stack (operands not yet consumed) an expression may reach.
pub const STACK_DEPTH: usize = 16;

/// A formula: up to [`MAX_TOKENS`] tokens in reverse Polish notation.
///
/// The slots past `len` are never initialised: building an expression writes only its
/// own tokens (the explorer builds thousands per sweep).
#[derive(Clone, Copy)]
pub struct Expr {
    /// The first `len` are initialised.
    toks: [MaybeUninit<Tok>; MAX_TOKENS],
    len: usize,
    /// Tokens were dropped: the program is ill-formed.
    truncated: bool,
}

impl PartialEq for Expr {
    fn eq(&self, other: &Expr) -> bool {
        self.tokens() == other.tokens() && self.truncated == other.truncated
    }
}

impl Eq for Expr {}

impl std::fmt::Debug for Expr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Expr")
            .field("toks", &self.tokens())
            .field("truncated", &self.truncated)
            .finish()
    }
}

impl Expr {
    /// The expression of `toks` (reverse Polish; at most [`MAX_TOKENS`]; an ill-formed
    /// program evaluates to 0 and renders `?`).
    ///
    /// ```
    /// use memfit_core::expr::{Expr, Tok::*};
    /// // ⌈2·Ψ/(t·N_s)⌉ with Ψ = 6,738,415,616, t = 1, N_s = 8
    /// let e = Expr::new(&[Num(2), Sym("Ψ", 6_738_415_616), Mul, Sym("t", 1), Sym("N_s", 8), Mul, DivCeil]);
    /// assert_eq!(e.eval(), 1_684_603_904);
    /// assert_eq!(e.symbols(), "⌈2·Ψ/(t·N_s)⌉");
    /// assert_eq!(e.values(), "Ψ=6738415616, t=1, N_s=8");
    /// ```
    #[inline]
    pub const fn new(toks: &[Tok]) -> Expr {
        let mut out = [MaybeUninit::<Tok>::uninit(); MAX_TOKENS];
        let mut i = 0;
        while i < toks.len() && i < MAX_TOKENS {
            out[i] = MaybeUninit::new(toks[i]);
            i += 1;
        }
        Expr {
            toks: out,
            len: i,
            truncated: i < toks.len(),
        }
    }

    /// `self` followed by `toks` (e.g. `[Sym("n", 8), Mul]` multiplies it by `n`); tokens
    /// past [`MAX_TOKENS`] are dropped, which leaves an ill-formed program.
    #[inline]
    pub fn then(mut self, toks: &[Tok]) -> Expr {
        for t in toks {
            if self.len < MAX_TOKENS {
                self.toks[self.len] = MaybeUninit::new(*t);
                self.len += 1;
            } else {
                self.truncated = true;
            }
        }
        self
    }

    /// Whether tokens were dropped (the program is ill-formed).
    pub(crate) fn is_truncated(&self) -> bool {
        self.truncated
    }

    /// The tokens.
    pub fn tokens(&self) -> &[Tok] {
        // SAFETY: the first `len` slots are initialised (`new` and `then` write them in
        // order and count them), and `MaybeUninit<Tok>` has `Tok`'s layout.
        unsafe { std::slice::from_raw_parts(self.toks.as_ptr().cast::<Tok>(), self.len) }
    }

    /// The value, exactly; `None` when the program is ill-formed.
    pub fn eval_u128(&self) -> Option<u128> {
        if self.truncated {
            return None;
        }
        run(self.tokens(), &[])
    }

    /// The value as a ledger figure: exact below 2^64 − 1, else `OUT_OF_RANGE`.
    pub fn eval(&self) -> u64 {
        self.eval_u128()
            .map_or(0, |v| v.min(OUT_OF_RANGE as u128) as u64)
    }

    /// The formula in symbols (`⌈2·Ψ/(t·N_s)⌉`).
    pub fn symbols(&self) -> String {
        if self.truncated {
            return "?".into();
        }
        // (text, precedence): 3 atom, 2 product/quotient, 1 sum.
        let mut stack: Vec<(String, u8)> = Vec::with_capacity(self.len);
        for t in self.tokens() {
            let item = match *t {
                Tok::Num(x) => (x.to_string(), 3),
                Tok::Sym(s, _) | Tok::Var(s, _) => (s.to_string(), 3),
                op => {
                    let (Some(b), Some(a)) = (stack.pop(), stack.pop()) else {
                        return "?".into();
                    };
                    let wrap = |(s, p): &(String, u8), need: u8| {
                        if *p < need {
                            format!("({s})")
                        } else {
                            s.clone()
                        }
                    };
                    match op {
                        Tok::Mul => (format!("{}·{}", wrap(&a, 2), wrap(&b, 2)), 2),
                        Tok::Div => (format!("{}/{}", wrap(&a, 2), wrap(&b, 3)), 2),
                        Tok::DivCeil => (format!("⌈{}/{}⌉", wrap(&a, 2), wrap(&b, 3)), 3),
                        Tok::Add => (format!("{} + {}", a.0, b.0), 1),
                        Tok::Sub => (format!("{} − {}", a.0, wrap(&b, 2)), 1),
                        Tok::Max => (format!("max({}, {})", a.0, b.0), 3),
                        Tok::Min => (format!("min({}, {})", a.0, b.0), 3),
                        Tok::Num(_) | Tok::Sym(..) | Tok::Var(..) => unreachable!(),
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

    /// The symbols' values, each once, in the order they first appear; a value saturated at
    /// 2^64 − 1 (a figure that does not fit in 64 bits) reads "out of range".
    pub fn values(&self) -> String {
        let mut seen: Vec<&str> = Vec::new();
        let mut out = Vec::new();
        for t in self.tokens() {
            if let Tok::Sym(s, v) = *t {
                if !seen.contains(&s) {
                    seen.push(s);
                    out.push(match v == u64::MAX as u128 {
                        true => format!("{s}=out of range"),
                        false => format!("{s}={v}"),
                    });
                }
            }
        }
        out.join(", ")
    }
}

/// Evaluates reverse-Polish `toks` exactly, a `Var(_, i)` reading `vals[i]`; `None` when
/// ill-formed (a `Var` past `vals`, too few operands, a stack deeper than
/// [`STACK_DEPTH`], or more than one value left). One tight loop over the slice: the
/// explorer's hot path.
fn run(toks: &[Tok], vals: &[u128]) -> Option<u128> {
    // Almost every figure fits in 64 bits: evaluate there first (one machine division
    // instead of a 128-bit library call), and again in 128 bits only when a value or an
    // intermediate does not fit — the same result either way.
    match run_in::<u64>(toks, vals) {
        Some(v) => v,
        None => run_in::<u128>(toks, vals).flatten(),
    }
}

/// The integer an evaluation runs in: `u64` (where a value or a product that does not fit
/// stops the evaluation, `None`) or `u128` (saturating: never stops).
trait Word: Copy + Ord + Default {
    fn of(x: u128) -> Option<Self>;
    fn wide(self) -> u128;
    fn mul(self, b: Self) -> Option<Self>;
    fn add(self, b: Self) -> Option<Self>;
    fn sub(self, b: Self) -> Self;
    fn div(self, b: Self) -> Self;
    fn div_up(self, b: Self) -> Self;
}

macro_rules! word {
    ($t:ty, $mul:ident, $add:ident, $wrap:expr) => {
        impl Word for $t {
            fn of(x: u128) -> Option<Self> {
                <$t>::try_from(x).ok()
            }
            fn wide(self) -> u128 {
                self as u128
            }
            fn mul(self, b: Self) -> Option<Self> {
                $wrap(self.$mul(b))
            }
            fn add(self, b: Self) -> Option<Self> {
                $wrap(self.$add(b))
            }
            fn sub(self, b: Self) -> Self {
                self.saturating_sub(b)
            }
            fn div(self, b: Self) -> Self {
                self.checked_div(b).unwrap_or(0)
            }
            fn div_up(self, b: Self) -> Self {
                if b == 0 {
                    0
                } else {
                    self.div_ceil(b)
                }
            }
        }
    };
}
word!(u64, checked_mul, checked_add, |x: Option<u64>| x);
word!(u128, saturating_mul, saturating_add, Some);

/// [`run`] in the integer `W`: `None` when a value or an intermediate does not fit `W`
/// (then a wider one decides), `Some(None)` when the program is ill-formed (a `Var` past
/// `vals`, too few operands, a stack deeper than [`STACK_DEPTH`], more than one value
/// left). One tight loop over the slice: the explorer's hot path.
fn run_in<W: Word>(toks: &[Tok], vals: &[u128]) -> Option<Option<u128>> {
    let mut stack = [W::default(); STACK_DEPTH];
    let mut n = 0;
    for t in toks {
        let x = match *t {
            Tok::Num(x) | Tok::Sym(_, x) => x,
            Tok::Var(_, i) => match vals.get(i) {
                Some(v) => *v,
                None => return Some(None),
            },
            op => {
                if n < 2 {
                    return Some(None);
                }
                let (a, b) = (stack[n - 2], stack[n - 1]);
                n -= 1;
                stack[n - 1] = match op {
                    Tok::Mul => a.mul(b)?,
                    Tok::Div => a.div(b),
                    Tok::DivCeil => a.div_up(b),
                    Tok::Add => a.add(b)?,
                    Tok::Sub => a.sub(b),
                    Tok::Max => a.max(b),
                    Tok::Min => a.min(b),
                    Tok::Num(_) | Tok::Sym(..) | Tok::Var(..) => unreachable!(),
                };
                continue;
            }
        };
        if n == STACK_DEPTH {
            return Some(None);
        }
        stack[n] = W::of(x)?;
        n += 1;
    }
    Some((n == 1).then(|| stack[0].wide()))
}

/// `Var(name, i)` as `Sym(name, vals[i])` (an index past `vals` stays unbound).
fn bound(t: Tok, vals: &[u128]) -> Tok {
    match t {
        Tok::Var(s, i) if i < vals.len() => Tok::Sym(s, vals[i]),
        t => t,
    }
}

/// The value of a constant formula `toks` whose `Var(_, i)` read `vals[i]`, exactly, with
/// no copy of the tokens (the explorer's hot path); `None` when ill-formed.
///
/// ```
/// use memfit_core::expr::{eval_bound, Tok, Tok::*};
/// // T·⌈a/t⌉·d·k with T = 4096, a = 32, t = 3, d = 128, k = 2
/// const F: &[Tok] = &[Var("T", 0), Var("a", 1), Var("t", 2), DivCeil, Mul, Var("d", 3), Mul, Var("k", 4), Mul];
/// assert_eq!(eval_bound(F, &[4096, 32, 3, 128, 2]), Some(4096 * 11 * 128 * 2));
/// ```
pub fn eval_bound(toks: &[Tok], vals: &[u128]) -> Option<u128> {
    run(toks, vals)
}

/// A constant formula with its `Var`s bound to `vals`, as an [`Expr`] that renders its
/// symbols and values (and evaluates to [`eval_bound`]'s value).
pub fn bind(toks: &[Tok], vals: &[u128]) -> Expr {
    let mut out = [Tok::Num(0); MAX_TOKENS];
    for (o, &t) in out.iter_mut().zip(toks) {
        *o = bound(t, vals);
    }
    let mut e = Expr::new(&out[..toks.len().min(MAX_TOKENS)]);
    e.truncated |= toks.len() > MAX_TOKENS;
    e
}

#[cfg(test)]
mod tests {
    use super::{Expr, Tok::*};

    /// Precedence and rounding, by hand.
    #[test]
    fn renders_and_evaluates_by_hand() {
        // 2·b·(s + n)·L·a_kv·d·k: the KV cache of Llama-2-7B, b = 1, s = 512, n = 32, bf16.
        let kv = Expr::new(&[
            Num(2),
            Sym("b", 1),
            Mul,
            Sym("s", 512),
            Sym("n", 32),
            Add,
            Mul,
            Sym("L", 32),
            Mul,
            Sym("a_kv", 32),
            Mul,
            Sym("d", 128),
            Mul,
            Sym("k", 2),
            Mul,
        ]);
        assert_eq!(kv.eval(), 2 * 544 * 32 * 32 * 128 * 2);
        assert_eq!(kv.symbols(), "2·b·(s + n)·L·a_kv·d·k");
        assert_eq!(kv.values(), "b=1, s=512, n=32, L=32, a_kv=32, d=128, k=2");
        // k·min(B_p, M_live − L): the ZeRO-3 prefetch cap.
        let pre = Expr::new(&[
            Sym("k", 2),
            Sym("B_p", 50_000_000),
            Sym("M_live", 150_000_000),
            Sym("L", 131_072_000),
            Sub,
            Min,
            Mul,
        ]);
        assert_eq!(pre.eval(), 2 * 18_928_000);
        assert_eq!(pre.symbols(), "k·min(B_p, M_live − L)");
        // a/(b/c) keeps its parentheses; a/b·c does not need any.
        let q = Expr::new(&[Sym("a", 12), Sym("b", 6), Sym("c", 3), Div, Div]);
        assert_eq!((q.symbols(), q.eval()), ("a/(b/c)".to_string(), 6));
        let q = Expr::new(&[Sym("a", 12), Sym("b", 6), Div, Sym("c", 3), Mul]);
        assert_eq!((q.symbols(), q.eval()), ("a/b·c".to_string(), 6));
    }

    /// A constant formula bound to values: the same number and text as the Expr written out.
    #[test]
    fn bound_formulas_equal_their_expr() {
        use super::{bind, eval_bound};
        const F: &[super::Tok] = &[
            Var("T", 0),
            Var("a", 1),
            Var("t", 2),
            DivCeil,
            Mul,
            Num(4),
            Mul,
        ];
        let vals = [4096, 32, 3];
        assert_eq!(eval_bound(F, &vals), Some(4096 * 11 * 4));
        let e = bind(F, &vals);
        assert_eq!(e.eval_u128(), eval_bound(F, &vals));
        assert_eq!(e.symbols(), "T·⌈a/t⌉·4");
        assert_eq!(e.values(), "T=4096, a=32, t=3");
        // Unbound (an index past the bindings, or a Var inside an Expr): ill-formed.
        assert_eq!(eval_bound(F, &vals[..2]), None);
        assert_eq!(Expr::new(F).eval_u128(), None);
    }

    /// The 64-bit evaluation and the 128-bit one agree: past 2^64 (a value or an
    /// intermediate) the 128-bit one decides.
    #[test]
    fn wide_values_fall_back_to_128_bits() {
        let big = u64::MAX as u128;
        // (2^64 − 1)·4/8: the product overflows 64 bits, the quotient does not.
        let e = Expr::new(&[Num(big), Num(4), Mul, Num(8), Div]);
        assert_eq!(e.eval_u128(), Some(big * 4 / 8));
        // A value past 64 bits, subtracted back into range.
        let e = Expr::new(&[Num(big + 10), Num(big), Sub]);
        assert_eq!(e.eval_u128(), Some(10));
        // Ill-formed stays ill-formed on both paths.
        assert_eq!(Expr::new(&[Num(big + 1), Mul]).eval_u128(), None);
        assert_eq!(Expr::new(&[Num(3), Num(0), DivCeil]).eval_u128(), Some(0));
    }

    /// Saturation to the out-of-range figure, and ill-formed programs.
    #[test]
    fn saturates_and_refuses() {
        let big = Expr::new(&[Num(u128::MAX), Num(3), Mul]);
        assert_eq!(big.eval(), u64::MAX);
        let bad = Expr::new(&[Num(1), Mul]);
        assert_eq!((bad.eval_u128(), bad.symbols()), (None, "?".to_string()));
        assert_eq!(Expr::new(&[Num(5), Num(0), DivCeil]).eval(), 0);
    }
}
