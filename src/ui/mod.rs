//! The Leptos page. Components are small, one per panel; all numbers come from
//! the Estimate; all URL access is in [`url`].

mod fields;
mod panels;
mod results;
pub mod url;

use crate::core::estimate::Warning;
use crate::share::query::{decode, encode};
use crate::share::report::estimate_with;
use leptos::prelude::*;
use panels::{ClusterPanel, ModelPanel, WorkloadPanel, ZeroPanel};
use results::{ChartPanel, CopyLink, LedgerTable, VerdictPanel, WarningsPanel};

/// The whole page: state from the URL, inputs, results; the URL follows the state.
#[component]
pub fn App() -> impl IntoView {
    let (initial, url_warnings) = decode(&url::read_query());
    let scenario = RwSignal::new(initial);
    // Warnings from the URL stay until the user edits the key they name.
    let url_warnings: RwSignal<Vec<Warning>> = RwSignal::new(url_warnings);
    let last = StoredValue::new(scenario.get_untracked());
    Effect::new(move |_| {
        let query = scenario.with(encode);
        url::replace_query(&query);
        let now = scenario.get();
        let before = last.get_value();
        url_warnings.update(|ws| {
            ws.retain(|w| {
                crate::share::query::get_key(&now, &w.key)
                    == crate::share::query::get_key(&before, &w.key)
            })
        });
        last.set_value(now);
    });
    let estimate =
        Memo::new(move |_| scenario.with(|s| url_warnings.with(|w| estimate_with(s, w))));
    let warnings = Signal::derive(move || estimate.with(|e| e.warnings.clone()));
    let units = Signal::derive(move || scenario.with(|s| s.units));
    view! {
        <header class="top">
            <h1>"memfit"</h1>
            <p class="tagline">"Will this LLM job fit in GPU memory — on which layout, and why?"</p>
            <CopyLink />
        </header>
        <main class="layout">
            <div class="inputs">
                <ModelPanel scenario />
                <WorkloadPanel scenario />
                <ClusterPanel scenario />
                <ZeroPanel scenario />
            </div>
            <div class="results">
                <WarningsPanel warnings />
                <VerdictPanel estimate units />
                <ChartPanel estimate units />
                <LedgerTable estimate units />
            </div>
        </main>
        <footer>
            "Formulas: DeepSpeed docs, ZeRO paper, Korthikanti et al.; every line of the ledger names its source. "
            "Bytes are exact integers; GiB = 2^30 bytes, GB = 10^9 bytes."
        </footer>
    }
}
