//! Where mechanisms put what they compute: every item with its explanation, items
//! without text (the timeline), or a byte tally per phase (the explorer's fast path).

use super::*;

/// Bytes alive in each phase, by where they live: what a ledger sums to, without the
/// items. Sums saturate at `u64::MAX` (a sum of non-negative terms saturates to the
/// same value in any order, so a tally equals the sum of its items exactly).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// GPU bytes the allocator hands out, per phase (index: [`Phase::index`]).
    pub gpu_alloc: [u64; 6],
    /// GPU bytes outside the allocator (CUDA context, NCCL, fragmentation), per phase.
    pub gpu_other: [u64; 6],
    /// Host RAM per node, per phase.
    pub cpu: [u64; 6],
    /// Components with an item at [`OUT_OF_RANGE`] (bit `i` = `Component::ALL[i]`).
    pub saturated: u16,
}

impl Tally {
    /// Adds `bytes` at `location` in `phases` (every phase of the step but `Init` when empty).
    pub fn add(&mut self, component: Component, location: Location, bytes: u64, phases: &[Phase]) {
        if bytes == OUT_OF_RANGE {
            self.saturated |= 1 << component.index();
        }
        let row = match location {
            Location::Gpu if component.is_allocated() => &mut self.gpu_alloc,
            Location::Gpu => &mut self.gpu_other,
            Location::Cpu => &mut self.cpu,
            Location::Nvme => return,
        };
        if phases.is_empty() {
            for v in row.iter_mut().skip(1) {
                *v = v.saturating_add(bytes);
            }
        } else {
            for ph in phases {
                let v = &mut row[ph.index()];
                *v = v.saturating_add(bytes);
            }
        }
    }
    /// Adds another tally (two parts of one rank's memory).
    pub fn merge(&mut self, o: &Tally) {
        for i in 0..6 {
            self.gpu_alloc[i] = self.gpu_alloc[i].saturating_add(o.gpu_alloc[i]);
            self.gpu_other[i] = self.gpu_other[i].saturating_add(o.gpu_other[i]);
            self.cpu[i] = self.cpu[i].saturating_add(o.cpu[i]);
        }
        self.saturated |= o.saturated;
    }
    /// Bytes at `location` alive in `ph` (`allocated_only`: without CUDA context,
    /// NCCL and fragmentation).
    pub fn at(&self, location: Location, ph: Phase, allocated_only: bool) -> u64 {
        let i = ph.index();
        match location {
            Location::Gpu if allocated_only => self.gpu_alloc[i],
            Location::Gpu => self.gpu_alloc[i].saturating_add(self.gpu_other[i]),
            Location::Cpu => self.cpu[i],
            Location::Nvme => 0,
        }
    }
    /// The peak of one location over `phases` and `Init`, and the phase where it occurs
    /// (the first of equal sums, in the order given; `phases` must not be empty).
    pub fn peak(&self, location: Location, phases: &[Phase], allocated_only: bool) -> (u64, Phase) {
        let mut best = (0u64, phases[0]);
        for &ph in phases.iter().chain(std::iter::once(&Phase::Init)) {
            let sum = self.at(location, ph, allocated_only);
            if sum > best.0 {
                best = (sum, ph);
            }
        }
        best
    }
}

/// The explanation of an item: its formula in symbols and the values substituted.
pub(crate) type Text = (String, String);

/// Where mechanisms put what they compute: full items, or a byte tally.
pub(crate) enum Ledger {
    /// Every item with its explanation (what `estimate` returns).
    Items(Vec<Item>),
    /// Bytes per phase only; explanations are never built (the explorer's fast path).
    Tally(Tally),
    /// Items without their explanations (the step timeline reads sizes and phases).
    Bare(Vec<Item>),
}

impl Ledger {
    /// A ledger that keeps every item.
    pub(crate) fn items() -> Ledger {
        Ledger::Items(Vec::new())
    }
    /// A ledger that keeps items without building their text.
    pub(crate) fn bare() -> Ledger {
        Ledger::Bare(Vec::new())
    }
    /// A ledger that only sums bytes.
    pub(crate) fn tally() -> Ledger {
        Ledger::Tally(Tally::default())
    }

    /// Adds an item present in every phase of the step. `text` builds the formula and
    /// the values; it runs only when items are kept.
    pub(crate) fn push(
        &mut self,
        mech: Mech,
        component: Component,
        location: Location,
        bytes: u64,
        text: impl FnOnce() -> Text,
        source: &'static str,
    ) {
        self.push_in(&[], mech, component, location, bytes, text, source);
    }

    /// Adds an item present in the given phases only (every phase when empty).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn push_in(
        &mut self,
        phases: &[Phase],
        mech: Mech,
        component: Component,
        location: Location,
        bytes: u64,
        text: impl FnOnce() -> Text,
        source: &'static str,
    ) {
        // The generic part is only whether to build the text: the rest is one function
        // for every call site (the page's code size).
        let text = matches!(self, Ledger::Items(_)).then(text);
        self.push_item(phases, mech, component, location, bytes, text, source);
    }

    /// [`push_in`](Self::push_in) with the text built (`Some`) when items are kept.
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn push_item(
        &mut self,
        phases: &[Phase],
        mech: Mech,
        component: Component,
        location: Location,
        bytes: u64,
        text: Option<Text>,
        source: &'static str,
    ) {
        match self {
            Ledger::Tally(t) => t.add(component, location, bytes, phases),
            Ledger::Bare(items) => items.push(Item {
                mech,
                component,
                location,
                bytes,
                rank: String::new(),
                formula: String::new(),
                values: String::new(),
                source: String::new(),
                phases: phases.to_vec(),
            }),
            Ledger::Items(items) => {
                let (formula, values) = text.unwrap_or_default();
                items.push(Item {
                    mech,
                    component,
                    location,
                    bytes,
                    rank: if location == Location::Gpu {
                        "all".into()
                    } else {
                        "node".into()
                    },
                    formula,
                    values,
                    source: source.into(),
                    phases: phases.to_vec(),
                });
            }
        }
    }

    /// Adds the item whose bytes are `e`'s value: its formula is `e` in symbols (with
    /// `note` after it) and its values are `e`'s symbols with their values (then
    /// `context`), so the text and the arithmetic are one value. Returns the bytes.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn push_expr(
        &mut self,
        phases: &[Phase],
        mech: Mech,
        component: Component,
        location: Location,
        e: &Expr,
        note: &str,
        context: impl FnOnce() -> String,
        source: &'static str,
    ) -> u64 {
        let context = matches!(self, Ledger::Items(_)).then(context);
        self.push_expr_item(phases, mech, component, location, e, note, context, source)
    }

    /// [`push_expr`](Self::push_expr) with the context built (`Some`) when items are kept.
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn push_expr_item(
        &mut self,
        phases: &[Phase],
        mech: Mech,
        component: Component,
        location: Location,
        e: &Expr,
        note: &str,
        context: Option<String>,
        source: &'static str,
    ) -> u64 {
        // Every formula the estimator writes fits MAX_TOKENS and is well formed (the test
        // suite runs with debug assertions over every preset and mechanism).
        debug_assert!(
            e.eval_u128().is_some(),
            "ill-formed or truncated formula {e:?}"
        );
        let bytes = e.eval();
        let text = context.map(|c| {
            let f = e.symbols();
            let f = if note.is_empty() {
                f
            } else {
                format!("{f}  ({note})")
            };
            let v = e.values();
            let v = match (v.is_empty(), c.is_empty()) {
                (_, true) => v,
                (true, false) => c,
                (false, false) => format!("{v}; {c}"),
            };
            (f, v)
        });
        self.push_item(phases, mech, component, location, bytes, text, source);
        bytes
    }

    /// Adds an item computed elsewhere (a whole ledger another module computed, with its
    /// texts): as [`push_in`](Self::push_in) would have.
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
    pub(crate) fn push_whole(&mut self, item: Item) {
        match self {
            Ledger::Tally(t) => t.add(item.component, item.location, item.bytes, &item.phases),
            Ledger::Bare(items) => items.push(Item {
                rank: String::new(),
                formula: String::new(),
                values: String::new(),
                source: String::new(),
                ..item
            }),
            Ledger::Items(items) => items.push(item),
        }
    }

    /// The bytes per phase (summed from the items, or the tally itself).
    pub(crate) fn totals(&self) -> Tally {
        match self {
            Ledger::Tally(t) => *t,
            Ledger::Items(items) | Ledger::Bare(items) => {
                let mut t = Tally::default();
                for i in items {
                    t.add(i.component, i.location, i.bytes, &i.phases);
                }
                t
            }
        }
    }

    /// Items pushed so far (0 for a tally).
    pub(crate) fn len(&self) -> usize {
        match self {
            Ledger::Items(items) | Ledger::Bare(items) => items.len(),
            Ledger::Tally(_) => 0,
        }
    }

    /// The items (empty for a tally).
    pub(crate) fn into_items(self) -> Vec<Item> {
        match self {
            Ledger::Items(items) | Ledger::Bare(items) => items,
            Ledger::Tally(_) => Vec::new(),
        }
    }
}
