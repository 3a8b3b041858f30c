//! Presenters: the small pure functions the page's views bind (texts, summaries, look-ups),
//! kept out of `view!` so they are tested natively. Nothing here touches the DOM.

mod accuracy;
mod fewest;
mod steptime;

pub use accuracy::*;
pub use fewest::*;
pub use steptime::*;

use memfit_core::model::presets;
use memfit_core::scenario::Layout;
use memfit_core::units::group_digits;

/// Finds a preset by id or display name (what the search box accepts).
///
/// ```
/// assert_eq!(memfit::present::find_preset("Llama 2 7B"), Some("llama-2-7b"));
/// assert_eq!(memfit::present::find_preset(" GPT2 "), Some("gpt2"));
/// assert_eq!(memfit::present::find_preset("gpt-5"), None);
/// ```
pub fn find_preset(text: &str) -> Option<&'static str> {
    let t = text.trim().to_ascii_lowercase();
    presets()
        .iter()
        .find(|p| p.id == t || p.name.to_ascii_lowercase() == t)
        .map(|p| p.id)
}

/// "dp·tp·pp·cp = 2·2·2·1 = 8 of 8 GPUs".
///
/// ```
/// use memfit_core::scenario::{count, Layout};
/// let (dp, tp, pp, cp) = (count(2), count(2), count(2), count(1));
/// let l = Layout { dp, tp, pp, cp, world: count(16), gpus_per_node: count(8) };
/// assert_eq!(memfit::present::layout_summary(&l), "dp·tp·pp·cp = 2·2·2·1 = 8 of 16 GPUs");
/// ```
pub fn layout_summary(l: &Layout) -> String {
    format!(
        "dp·tp·pp·cp = {}·{}·{}·{} = {} of {} GPUs",
        l.dp,
        l.tp,
        l.pp,
        l.cp,
        l.used(),
        l.world
    )
}

/// The model panel's count line: total, active per token and the largest layer, from the
/// architecture or, for a hybrid preset, from its exact count (`Prepared`).
pub fn param_count_line(p: &memfit_core::estimate::Prepared, exact: bool) -> String {
    let (total, largest) = if exact {
        (p.psi, p.largest)
    } else {
        (p.counts.total, p.counts.largest_layer)
    };
    format!(
        "{}: {} parameters ({} active per token), largest layer {}.",
        if exact {
            "From its config.json, counted exactly"
        } else {
            "From the architecture"
        },
        group_digits(total),
        group_digits(if exact { p.active } else { p.counts.active }),
        group_digits(largest)
    )
}

/// The legend of the breakdown chart: every component some stage holds, with its label
/// and colour (`#rrggbb`).
pub fn legend(e: &memfit_core::estimate::Estimate) -> Vec<(&'static str, String)> {
    use memfit_core::estimate::Component;
    Component::ALL
        .iter()
        .filter(|c| {
            e.stages
                .iter()
                .any(|st| st.components.iter().any(|(x, b)| x == *c && *b > 0))
        })
        .map(|c| {
            let (r, g, b) = c.color();
            (c.label(), format!("#{r:02x}{g:02x}{b:02x}"))
        })
        .collect()
}

/// Whether a key press activates a focused row or cell (Enter or Space).
pub fn activates(key: &str) -> bool {
    key == "Enter" || key == " "
}

/// The fit map's caption.
pub fn fit_map_hint(inference: bool, speed: bool) -> String {
    let over = if inference {
        "Each cell is one TP × PP, over every batch size"
    } else {
        "Each cell is one TP × PP under one ZeRO stage, over every context-parallel size, sequence parallelism, offload, recomputation and micro-batch"
    };
    let number = if speed && !inference {
        "the number is the fastest fitting layout's predicted tokens per second per GPU (the headroom, negative, where nothing fits)"
    } else {
        "the number is the most headroom any of them leaves"
    };
    format!("{over}; {number}. Click a cell (or focus it and press Enter) to load its best layout — the closest one when nothing fits.")
}

/// Columns of the best-layouts table that sort.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SortBy {
    /// The explorer's rank.
    Rank,
    /// Peak per GPU.
    Peak,
    /// Headroom.
    Headroom,
    /// Bytes sent per GPU per step.
    Comm,
    /// Micro-batch.
    Batch,
    /// Predicted tokens per second per GPU.
    Speed,
}

/// The table's order after a click on `col`: the same column flips its direction, another
/// column sorts ascending.
pub fn next_sort(current: (SortBy, bool), col: SortBy) -> (SortBy, bool) {
    if current.0 == col {
        (col, !current.1)
    } else {
        (col, true)
    }
}

/// `aria-sort` of column `col` under `current`.
pub fn aria_sort(current: (SortBy, bool), col: SortBy) -> &'static str {
    match current {
        (c, true) if c == col => "ascending",
        (c, false) if c == col => "descending",
        _ => "none",
    }
}

/// The layouts in table order, each with its rank (0-based), the first `shown` of them.
pub fn sorted_layouts(
    layouts: &[memfit_core::explore::Candidate],
    (col, asc): (SortBy, bool),
    shown: Option<usize>,
) -> Vec<(usize, memfit_core::explore::Candidate)> {
    let mut v: Vec<_> = layouts.iter().copied().enumerate().collect();
    v.sort_by(|(ia, a), (ib, b)| {
        let o = match col {
            SortBy::Rank => ia.cmp(ib),
            SortBy::Peak => a.per_gpu_bytes.cmp(&b.per_gpu_bytes),
            SortBy::Headroom => a.headroom_bytes.cmp(&b.headroom_bytes),
            SortBy::Comm => a.comm.total().cmp(&b.comm.total()),
            SortBy::Batch => a.batch.cmp(&b.batch),
            SortBy::Speed => a.tokens_per_s_per_gpu.total_cmp(&b.tokens_per_s_per_gpu),
        };
        if asc {
            o
        } else {
            o.reverse()
        }
    });
    if let Some(n) = shown {
        v.truncate(n);
    }
    v
}

/// Tokens per second per GPU and MFU as the table shows them ("—" where the step-time
/// model does not apply).
pub fn speed_text(l: &memfit_core::explore::Candidate) -> (String, String) {
    if l.tokens_per_s_per_gpu > 0.0 {
        (
            format!("{:.0}", l.tokens_per_s_per_gpu),
            format!("{:.0} %", l.mfu * 100.0),
        )
    } else {
        ("—".into(), "—".into())
    }
}

/// "The best 10 of 1,234 fitting layouts." (or that none fits).
pub fn best_layouts_count(fitting: u64, listed: usize, shown: usize) -> String {
    if fitting == 0 {
        "No layout of this cluster fits.".to_string()
    } else {
        format!(
            "The best {} of {} fitting layouts. ",
            listed.min(shown),
            group_digits(fitting)
        )
    }
}

/// How many of `names` differ from their defaults in `x` (what an "advanced" group's
/// summary counts, and whether it opens by itself on a shared link).
pub fn differing(x: &memfit_core::contract::Settings, names: &[&str]) -> usize {
    use memfit_core::contract::query::differs_from_default;
    names.iter().filter(|k| differs_from_default(x, k)).count()
}

/// "Advanced: 2 of 11 set" / "Advanced (11, at their defaults)".
pub fn advanced_summary(label: &str, differ: usize, total: usize) -> String {
    if differ == 0 {
        format!("{label} ({total}, at their defaults)")
    } else {
        format!("{label}: {differ} of {total} changed")
    }
}

#[cfg(test)]
mod advanced_tests {
    use super::*;
    use memfit_core::contract::query::decode;

    #[test]
    fn counts_what_a_link_sets() {
        let (x, _) = decode("layers=40&frag=10&nccl=");
        // nccl= is its default (empty): not counted.
        assert_eq!(differing(&x, &["layers", "hidden", "frag", "nccl"]), 2);
        // cuda_ctx=600 is a figure set by hand, no longer the default (per stack).
        let (x, _) = decode("cuda_ctx=600");
        assert_eq!(differing(&x, &["cuda_ctx"]), 1);
        assert_eq!(
            advanced_summary("Framework internals", 0, 9),
            "Framework internals (9, at their defaults)"
        );
        assert_eq!(
            advanced_summary("Framework internals", 2, 9),
            "Framework internals: 2 of 9 changed"
        );
    }
}
