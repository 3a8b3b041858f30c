//! The guided tour: short steps, each with a plain link that loads its scenario.

use crate::learn::steps;
use leptos::prelude::*;
use memfit_core::units::Units;

/// "Learn": the ZeRO trade-offs, a state-space model's flat memory and a hybrid's slowly
/// growing one, in twelve steps
/// (`crate::learn`).
#[component]
pub fn LearnPanel(#[prop(into)] units: Signal<Units>) -> impl IntoView {
    let list = Memo::new(move |_| steps(units.get()));
    view! {
        <section class="panel learn" id="learn" data-testid="learn">
            <h2>"Learn: what ZeRO, offload and recomputation buy, and what state-space and hybrid models save"</h2>
            <p class="hint">"Llama-2-7B on 8 GPUs, one idea per step (the last two: Mamba-2, then the hybrid Nemotron-H, against a transformer of their size). Each link loads the scenario (open it in a new tab or share it) and points at the chart that makes the point."</p>
            <ol class="steps">
                {move || list.get().into_iter().enumerate().map(|(i, st)| {
                    let href = format!("?{}#{}", st.query, st.panel);
                    view! {
                        <li data-testid="learn-step" data-quoted=st.quoted.clone() data-shown-in=st.shown_in>
                            <h3>{st.title}</h3>
                            <p>{st.text.clone()}</p>
                            <a href=href data-testid=format!("learn-link-{}", i + 1)>"Load this scenario →"</a>
                        </li>
                    }
                }).collect_view()}
            </ol>
        </section>
    }
}
