//! A [`Plan`] as one line of text and back, and where [`Plan::of`] gets its plans: the page's
//! first module links none of the engines' start-up programs (about 25 KB of code it needs
//! only with `mode=serve`); it asks the module that has them ([`set_planner`]) and sends the
//! scenario as its query string, which the other module answers with [`Plan::to_line`].
//! Every other program (the CLI, the tests, the page's other modules) computes here
//! ([`compute_here`]).

use super::{engines, Fitted, HostMemory, Plan};
use crate::expr::{Expr, Tok, MAX_TOKENS};
use crate::resolved::Prepared;
use crate::scenario::{Engine, Layout, Scenario, Version};
use std::cell::RefCell;
use std::sync::OnceLock;

/// Where [`Plan::of`] asks for a plan, once set ([`set_planner`]).
type Planner = fn(&Scenario, &Prepared, &Layout) -> Option<Plan>;
static PLANNER: OnceLock<Planner> = OnceLock::new();

/// Has [`Plan::of`] ask `f` from now on (once per program; a later call changes nothing).
/// `None` from `f` (the module that computes plans has not loaded) gives [`Plan::pending`].
pub fn set_planner(f: Planner) {
    let _ = PLANNER.set(f);
}

/// The engine's start-up computed here.
pub fn plan_here(s: &Scenario, p: &Prepared, l: &Layout) -> Option<Plan> {
    Some(engines::plan(s, p, l))
}

/// Plans computed here from now on: what every wasm module that estimates serving runs,
/// except the page's first (natively they are computed here without it).
pub fn compute_here() {
    set_planner(plan_here);
}

/// The plan from the planner set ([`set_planner`]), else computed here natively and
/// [`Plan::pending`] on wasm32.
pub(super) fn plan(s: &Scenario, p: &Prepared, l: &Layout) -> Plan {
    if let Some(f) = PLANNER.get() {
        return f(s, p, l).unwrap_or_else(|| Plan::pending(s));
    }
    #[cfg(not(target_arch = "wasm32"))]
    return engines::plan(s, p, l);
    #[cfg(target_arch = "wasm32")]
    Plan::pending(s)
}

/// Between fields.
const FS: char = '\u{1f}';
/// Between an expression's tokens.
const TS: char = '\u{1e}';

/// The `&'static str` equal to `s`: symbol names and sources read back from a line. Each
/// distinct text is leaked once; the texts are the engines' (a fixed set), so this stays small.
fn intern(s: &str) -> &'static str {
    thread_local! {
        static NAMES: RefCell<Vec<&'static str>> = const { RefCell::new(Vec::new()) };
    }
    NAMES.with_borrow_mut(|names| {
        if let Some(n) = names.iter().find(|n| **n == s) {
            return *n;
        }
        let n: &'static str = Box::leak(s.into());
        names.push(n);
        n
    })
}

fn expr_to_text(e: &Expr) -> String {
    let mut out = String::new();
    for (i, t) in e.tokens().iter().enumerate() {
        if i > 0 {
            out.push(TS);
        }
        match *t {
            Tok::Num(n) => out.push_str(&format!("#{n}")),
            Tok::Sym(name, v) => out.push_str(&format!("S{v}:{name}")),
            Tok::Var(name, i) => out.push_str(&format!("V{i}:{name}")),
            Tok::Mul => out.push('*'),
            Tok::Div => out.push('/'),
            Tok::DivCeil => out.push('c'),
            Tok::Add => out.push('+'),
            Tok::Sub => out.push('-'),
            Tok::Max => out.push('M'),
            Tok::Min => out.push('m'),
        }
    }
    if e.is_truncated() {
        out.push(TS);
        out.push('!');
    }
    out
}

fn tok_from_text(t: &str) -> Option<Tok> {
    Some(match t.as_bytes().first()? {
        b'#' => Tok::Num(t[1..].parse().ok()?),
        b'S' => {
            let (v, name) = t[1..].split_once(':')?;
            Tok::Sym(intern(name), v.parse().ok()?)
        }
        b'V' => {
            let (i, name) = t[1..].split_once(':')?;
            Tok::Var(intern(name), i.parse().ok()?)
        }
        b'*' => Tok::Mul,
        b'/' => Tok::Div,
        b'c' => Tok::DivCeil,
        b'+' => Tok::Add,
        b'-' => Tok::Sub,
        b'M' => Tok::Max,
        b'm' => Tok::Min,
        _ => return None,
    })
}

fn expr_from_text(text: &str) -> Option<Expr> {
    let mut toks = Vec::new();
    for t in text.split(TS).filter(|t| !t.is_empty()) {
        if t == "!" {
            // Ill-formed as it was: one token past the limit.
            toks.resize(MAX_TOKENS + 1, Tok::Num(0));
        } else {
            toks.push(tok_from_text(t)?);
        }
    }
    Some(Expr::new(&toks))
}

impl Plan {
    /// The plan shown while the module that computes it loads: the engine of `s`, every
    /// figure 0 (the page holds its verdict meanwhile and shows none of them).
    pub fn pending(s: &Scenario) -> Plan {
        let zero = || Expr::new(&[Tok::Num(0)]);
        Plan {
            engine: s.serving.engine,
            version: Version(0, 0, 0, 0),
            budget: 0,
            weights: zero(),
            activation: zero(),
            non_torch: zero(),
            graphs: zero(),
            kv: zero(),
            outside: zero(),
            per_token: 0,
            block_size: 0,
            blocks: 0,
            tokens: 0,
            max_len: 0,
            concurrency: 0.0,
            max_len_fit: 0,
            error: None,
            host: None,
            fit: None,
            fit_message: String::new(),
            notes: String::new(),
            sources: [""; 6],
        }
    }

    /// The plan as one line, read back by [`Plan::from_line`] to an equal plan (the
    /// concurrency as its `f64` bits, exact).
    pub fn to_line(&self) -> String {
        let v = self.version;
        let mut f: Vec<String> = vec![
            self.engine.as_str().into(),
            format!("{}.{}.{}.{}", v.0, v.1, v.2, v.3),
        ];
        let ints = [
            self.budget,
            self.per_token,
            self.block_size,
            self.blocks,
            self.tokens,
            self.max_len,
            self.concurrency.to_bits(),
            self.max_len_fit,
        ];
        f.extend(ints.iter().map(u64::to_string));
        f.push(
            self.host
                .map_or(String::new(), |h| format!("{}.{}", h.file, h.host)),
        );
        f.extend(self.sources.iter().map(|s| s.to_string()));
        let exprs = [
            &self.weights,
            &self.activation,
            &self.non_torch,
            &self.graphs,
            &self.kv,
            &self.outside,
        ];
        f.extend(exprs.into_iter().map(expr_to_text));
        f.push(self.fit.map_or(String::new(), |x| x.to_text()));
        // Free texts (without the separator): the fit's message, the notes, then the error.
        f.push(self.fit_message.clone());
        f.push(self.notes.clone());
        f.push(self.error.as_ref().map_or("-".into(), |e| format!("E{e}")));
        f.join(&FS.to_string())
    }

    /// The plan of [`Plan::to_line`]'s line (`None` where it is not one).
    pub fn from_line(line: &str) -> Option<Plan> {
        let f: Vec<&str> = line.splitn(27, FS).collect();
        if f.len() != 27 {
            return None;
        }
        let engine = *Engine::ALL.iter().find(|e| e.as_str() == f[0])?;
        let mut v = f[1].split('.').map(|x| x.parse::<u16>().ok());
        let version = Version(v.next()??, v.next()??, v.next()??, v.next()??);
        let n = |i: usize| f[i].parse::<u64>().ok();
        let host = match f[10].split_once('.') {
            None => None,
            Some((a, b)) => Some(HostMemory {
                file: a.parse().ok()?,
                host: b.parse().ok()?,
            }),
        };
        let src = |i: usize| intern(f[11 + i]);
        let e = |i: usize| expr_from_text(f[17 + i]);
        let fit = match f[23] {
            "" => None,
            t => Some(Fitted::parse(t)?),
        };
        let error = match f[26] {
            "-" => None,
            t => Some(t.strip_prefix('E')?.to_string()),
        };
        Some(Plan {
            engine,
            version,
            budget: n(2)?,
            per_token: n(3)?,
            block_size: n(4)?,
            blocks: n(5)?,
            tokens: n(6)?,
            max_len: n(7)?,
            concurrency: f64::from_bits(n(8)?),
            max_len_fit: n(9)?,
            host,
            sources: [src(0), src(1), src(2), src(3), src(4), src(5)],
            weights: e(0)?,
            activation: e(1)?,
            non_torch: e(2)?,
            graphs: e(3)?,
            kv: e(4)?,
            outside: e(5)?,
            error,
            fit,
            fit_message: f[24].to_string(),
            notes: f[25].to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::query::decode;

    /// Every engine, with and without an error, llama.cpp's host memory and experts: the line
    /// reads back to the same plan, and the same report.
    #[test]
    fn a_plan_reads_back_from_its_line() {
        let queries = [
            "mode=serve&engine=vllm&model=llama-3-8b&gpu=h100-80",
            "mode=serve&engine=vllm&model=llama-3-70b&gpu=h100-80&max_len=1000000",
            "mode=serve&engine=sglang&model=qwen3-30b-a3b&gpus_per_node=4&tp=4",
            "mode=serve&engine=trtllm&model=mistral-7b&gpu=a100-40",
            "mode=serve&engine=llamacpp&model=llama-3-8b&quant=q4_k_m&gpu=rtx-4090",
            "mode=serve&engine=llamacpp&model=llama-3-70b&quant=q4_k_m&gpu=rtx-4090&ngl=40",
            // Two notes (Ollama 0.5.0: the q8_0 cache without flash attention, parallel).
            "mode=serve&engine=llamacpp&model=llama-3-8b&engine_version=ollama-0.5.0&kv_dtype=q8_0",
        ];
        for q in queries {
            let s = decode(q).0.scenario;
            let p = Prepared::of(&s);
            let plan = engines::plan(&s, &p, &s.layout());
            let back = Plan::from_line(&plan.to_line()).expect(q);
            if q.contains("ollama") {
                assert_eq!(back.notes().count(), 2, "{q}");
            }
            assert_eq!(back, plan, "{q}");
            assert_eq!(back.report(), plan.report(), "{q}");
        }
        let s = decode("mode=serve").0.scenario;
        let pending = Plan::pending(&s);
        assert_eq!(Plan::from_line(&pending.to_line()), Some(pending));
        assert_eq!(Plan::from_line("vllm"), None);
    }

    /// An ill-formed expression stays ill-formed.
    #[test]
    fn a_truncated_expression_reads_back_truncated() {
        let e = Expr::new(&[Tok::Num(1); MAX_TOKENS + 1]);
        let back = expr_from_text(&expr_to_text(&e)).unwrap();
        assert_eq!(back, e);
        assert_eq!(back.eval_u128(), None);
    }
}
