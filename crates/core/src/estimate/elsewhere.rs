//! Where the whole ledgers come from: the ledgers of inference, serving and the other tools'
//! conventions (DeepSpeed's estimators, Megatron-LM's formula; [`whole_ledger_here`]) are
//! about 20 KB of the page's first module, gzipped, which a training link never runs. The
//! first module links none of them: it sends such a scenario to the module that holds them
//! ([`set_remote`]; the page's `memfit-modes`) and reads back the items
//! ([`crate::ledger::items_from_line`]). Every other program computes them here: natively
//! always, on wasm32 once [`compute_here`] has run (every page module but the first).

use super::{route, whole_ledger_here, Prepared, Route};
use crate::ledger::{items_to_line, Ledger, Warning};
use crate::scenario::{Layout, Scenario};
use std::sync::OnceLock;

/// A whole ledger computed here ([`whole_ledger_here`]).
type Here = fn(&Scenario, &Prepared, &Layout, Route, &mut Ledger) -> Option<Warning>;
static HERE: OnceLock<Here> = OnceLock::new();
/// The line of a scenario's whole ledger, from another module ([`set_remote`]).
static REMOTE: OnceLock<fn(&Scenario) -> Option<String>> = OnceLock::new();

/// Whole ledgers and serving plans computed here from now on (wasm32: every page module
/// that estimates, except the first).
pub fn compute_here() {
    let _ = HERE.set(whole_ledger_here);
    crate::serve::compute_here();
}

/// Has the whole ledgers asked of `f` from now on: the line [`whole_ledger_line`] writes for
/// the scenario, `None` while it cannot answer (nothing is pushed meanwhile: the page holds
/// the verdict of such a scenario, [`has_whole_ledger`]).
pub fn set_remote(f: fn(&Scenario) -> Option<String>) {
    let _ = REMOTE.set(f);
}

/// Whether the estimate of `s` reads a whole ledger (inference, serving, DeepSpeed's or
/// Megatron's formula) rather than memfit's training stages.
pub fn has_whole_ledger(s: &Scenario) -> bool {
    route(s) != Route::Train
}

/// The whole ledger of `s` (its own layout and route), items with their texts and the
/// warning, as one line ([`crate::ledger::items_to_line`]): what the module asked by
/// [`set_remote`] answers.
pub fn whole_ledger_line(s: &Scenario) -> String {
    let p = Prepared::of(s);
    let mut lg = Ledger::items();
    let w = whole_ledger(s, &p, &s.layout(), route(s), &mut lg);
    items_to_line(&lg.into_items(), w.as_ref())
}

/// [`whole_ledger_here`], or its items read back from another module where one is set and
/// this program does not compute them (wasm32's first module); nothing where neither.
pub(crate) fn whole_ledger(
    s: &Scenario,
    p: &Prepared,
    l: &Layout,
    r: Route,
    ledger: &mut Ledger,
) -> Option<Warning> {
    if let Some(f) = HERE.get() {
        return f(s, p, l, r, ledger);
    }
    #[cfg(not(target_arch = "wasm32"))]
    return whole_ledger_here(s, p, l, r, ledger);
    #[cfg(target_arch = "wasm32")]
    {
        // Only the scenario's own layout and route are asked (the estimate's).
        let f = REMOTE.get().filter(|_| *l == s.layout() && r == route(s))?;
        let (items, warning) = crate::ledger::items_from_line(&f(s)?)?;
        for item in items {
            ledger.push_whole(item);
        }
        warning
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::query::decode;
    use crate::ledger::items_from_line;

    /// Inference, serving and both conventions: the line reads back to the items and
    /// warning computed here.
    #[test]
    fn a_whole_ledger_reads_back_from_its_line() {
        for q in [
            "model=llama-2-13b&mode=infer&seq=2048&gen=256&gpus_per_node=8",
            "mode=serve&engine=vllm&model=llama-3-8b&gpu=h100-80",
            "mode=serve&engine=llamacpp&model=llama-3-70b&quant=q4_k_m&gpu=rtx-4090",
            "model=llama-2-7b&zero=3&gpus_per_node=8&convention=ds-0.19&offload_param=cpu",
            "model=llama-2-7b&zero=2&gpus_per_node=8&convention=ds-doc",
            "model=llama-2-7b&gpus_per_node=8&tp=2&pp=2&convention=megatron",
            "model=llama-2-7b&gpus_per_node=8&pp=64&convention=megatron",
        ] {
            let s = decode(q).0.scenario;
            assert!(has_whole_ledger(&s), "{q}");
            let p = Prepared::of(&s);
            let mut lg = Ledger::items();
            let w = whole_ledger_here(&s, &p, &s.layout(), route(&s), &mut lg);
            let items = lg.into_items();
            assert!(!items.is_empty(), "{q}");
            let (back, w2) = items_from_line(&whole_ledger_line(&s)).expect(q);
            assert_eq!(back, items, "{q}");
            assert_eq!(w2, w, "{q}");
        }
        assert!(!has_whole_ledger(&decode("model=llama-2-7b").0.scenario));
    }
}
