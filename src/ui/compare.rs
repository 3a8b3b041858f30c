//! Teaching views: ZeRO stages side by side, and memory against sequence length.

use crate::chart::present::{seq_curve, zero_variants};
use crate::chart::{annotate, render_curve, render_stacked, Bar, ChartSize};
use leptos::prelude::*;
use memfit_core::scenario::Scenario;
use memfit_core::units::Units;

/// ZeRO 0–3 × offload none/CPU at a chosen data-parallel size.
#[component]
pub fn ZeroComparison(
    #[prop(into)] scenario: Signal<Scenario>,
    #[prop(into)] units: Signal<Units>,
) -> impl IntoView {
    let dp = RwSignal::new(scenario.with_untracked(|s| s.layout().dp.get().max(8)));
    let node = NodeRef::<leptos::html::Section>::new();
    let scenario = super::while_visible(scenario, super::on_screen(node));
    let variants = Memo::new(move |_| scenario.with(|s| zero_variants(s, dp.get(), units.get())));
    let svg = Memo::new(move |_| {
        variants.with(|v| {
            let bars: Vec<Bar> = v.iter().map(|x| x.bar.clone()).collect();
            let cap = scenario.with(|s| s.usable_bytes());
            let u = units.get();
            annotate(
                &render_stacked(
                    &bars,
                    cap,
                    u,
                    ChartSize {
                        width: 900,
                        height: 420,
                    },
                ),
                &bars,
                u,
            )
        })
    });
    let summary = move || {
        variants.with(|v| {
            let u = units.get();
            v.iter()
                .map(|x| format!("{}: {}", x.bar.label, u.format(x.per_gpu)))
                .collect::<Vec<_>>()
                .join("; ")
        })
    };
    let fig = NodeRef::<leptos::html::Figure>::new();
    super::draw_svg(fig, move || svg.get());
    let training_note = move || scenario.with(crate::chart::present::zero_mode_note);
    view! {
        <section class="panel compare" id="zero-compare" data-testid="zero-compare" node_ref=node>
            <h2>"ZeRO stages side by side"</h2>
            {move || training_note().map(|t| view! { <p class="hint" data-testid="zero-mode-note">{t}</p> })}
            <div class="row">
                <label for="dp-slider">"Data-parallel ranks N_d: " <strong data-testid="dp-value">{move || dp.get()}</strong></label>
                <input id="dp-slider" autocomplete="off" type="range" min="1" max="10" step="1" data-testid="dp-slider"
                    prop:value=move || (32 - dp.get().max(1).leading_zeros() - 1).to_string()
                    on:input=move |ev| {
                        if let Ok(k) = event_target_value(&ev).parse::<u32>() {
                            dp.set(1 << k.min(10));
                        }
                    } />
            </div>
            <figure class="chart" role="img" aria-label=summary node_ref=fig></figure>
            <table class="comm" data-testid="comm-table">
                <thead><tr><th>"variant"</th><th>"per GPU"</th><th>"communication per step"</th><th>"step time (predicted)"</th></tr></thead>
                <tbody>
                    {move || variants.get().into_iter().map(|x| {
                        let u = units.get();
                        view! { <tr class:over=!x.fits><td>{x.bar.label.clone()}</td><td class="num">{u.format(x.per_gpu)}</td><td>{x.comm.clone()}</td><td class="num">{x.time.clone()}</td></tr> }
                    }).collect_view()}
                </tbody>
            </table>
            <p class="hint">"✓ fits the selected GPU. Stage 1 partitions the optimizer states, stage 2 also the gradients, stage 3 also the weights (which costs a third Ψ of communication: the parameters are all-gathered again in the backward pass). CPU offload moves the fp32 master weights and optimizer states to host RAM. The step time is memfit's model (how accurate: docs/steptime.md): what each stage's communication and each offload costs in milliseconds."</p>
        </section>
    }
}

/// Per-GPU peak against sequence length, with the largest that fits.
#[component]
pub fn SeqCurve(
    #[prop(into)] scenario: Signal<Scenario>,
    #[prop(into)] units: Signal<Units>,
) -> impl IntoView {
    let node = NodeRef::<leptos::html::Section>::new();
    let scenario = super::while_visible(scenario, super::on_screen(node));
    let data = Memo::new(move |_| scenario.with(seq_curve));
    let svg = Memo::new(move |_| {
        data.with(|(pts, max)| {
            let cap = scenario.with(|s| s.usable_bytes());
            render_curve(
                pts,
                cap,
                *max,
                "sequence length (tokens, log scale)",
                units.get(),
                ChartSize {
                    width: 760,
                    height: 360,
                },
            )
        })
    });
    let summary = move || {
        data.with(|(_, max)| match max {
            Some(0) => "Even 1 token does not fit with this layout.".to_string(),
            Some(m) => format!("The longest sequence that fits: {m} tokens."),
            None => String::new(),
        })
    };
    let fig = NodeRef::<leptos::html::Figure>::new();
    super::draw_svg(fig, move || svg.get());
    view! {
        <section class="panel curve" data-testid="seq-curve" node_ref=node>
            <h2>"Memory against sequence length"</h2>
            <figure class="chart" role="img" aria-label=summary node_ref=fig></figure>
            <p data-testid="max-seq">{summary}</p>
        </section>
    }
}
