//! The step-time panel: how long one training step of the current layout takes, where the
//! time goes, and how far to trust it. It reads the scenario one paint after an edit (the
//! verdict comes first) and shows nothing outside training.

use crate::present::{duration_text, step_band, step_model_hint, step_view, StepRow, StepView};
use leptos::prelude::*;
use memfit_core::estimate::Prepared;
use memfit_core::scenario::Scenario;
use memfit_core::steptime::step_time;

/// The step-time figures of a scenario (`None` outside training or when the model cannot
/// time it).
fn view_of(s: &Scenario) -> Option<StepView> {
    step_time(s, &Prepared::of(s))
        .filter(|t| t.step_s.is_finite() && t.step_s > 0.0)
        .map(|t| step_view(&t))
}

/// A table of step rows: label, duration, share.
fn table(
    r: &[StepRow],
    testid: &'static str,
    row_testid: &'static str,
    caption: &'static str,
    heads: [&'static str; 3],
) -> impl IntoView {
    let rows = r
        .iter()
        .map(|r| {
            view! {
                <tr data-testid=row_testid>
                    <td>{r.label}</td>
                    <td class="num">{duration_text(r.seconds)}</td>
                    <td class="num">{format!("{:.0} %", r.share * 100.0)}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <div class="table-wrap">
            <table data-testid=testid>
                <caption>{caption}</caption>
                <thead><tr><th>{heads[0]}</th><th>{heads[1]}</th><th>{heads[2]}</th></tr></thead>
                <tbody>{rows}</tbody>
            </table>
        </div>
    }
}

/// Step time, tokens per second, MFU and the breakdown of the current training layout.
#[component]
pub fn StepTimePanel(#[prop(into)] scenario: Signal<Scenario>) -> impl IntoView {
    let v = Memo::new(move |_| scenario.with(view_of));
    let body = move || {
        v.with(|v| {
            v.as_ref().map(|v| {
                view! {
                    <p class="big" data-testid="step-headline" data-step-s=v.step_s.to_string()>{v.headline.clone()}</p>
                    <p data-testid="step-band">{step_band(v.step_s)}</p>
                    <p class="hint" data-testid="step-basis">{v.basis.clone()}</p>
                    {table(&v.parts, "step-parts", "step-part", "Where a step goes (the parts add up to it)", ["part", "time", "of the step"])}
                    {(!v.comm.is_empty()).then(|| table(&v.comm, "step-comm", "step-comm-row", "Communication, whole (partly hidden behind compute; what is not is above)", ["dimension", "time", "beside the step"]))}
                }
            })
        })
    };
    view! {
        <Show when=move || v.with(Option::is_some)>
            <section class="panel steptime" id="steptime" data-testid="steptime">
                <h2>"Step time (predicted)"</h2>
                {body}
                <p class="hint">{step_model_hint()}</p>
            </section>
        </Show>
    }
}
