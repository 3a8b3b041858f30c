//! The step-time panel: how long one training step of the current layout takes, where the
//! time goes, and how far to trust it. It reads the scenario one paint after an edit (the
//! verdict comes first) and shows nothing outside training.

use crate::present::{duration_text, step_view, StepRow, StepView, STEP_HELD_OUT};
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

/// Rows of a table: label, duration, share.
fn rows(r: &[StepRow], testid: &'static str) -> impl IntoView {
    r.iter()
        .map(|r| {
            view! {
                <tr data-testid=testid>
                    <td>{r.label}</td>
                    <td class="num">{duration_text(r.seconds)}</td>
                    <td class="num">{format!("{:.0} %", r.share * 100.0)}</td>
                </tr>
            }
        })
        .collect_view()
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
                    <div class="table-wrap">
                        <table data-testid="step-parts">
                            <caption>"Where a step goes (the parts add up to it)"</caption>
                            <thead><tr><th>"part"</th><th>"time"</th><th>"of the step"</th></tr></thead>
                            <tbody>{rows(&v.parts, "step-part")}</tbody>
                        </table>
                    </div>
                    {(!v.comm.is_empty()).then(|| view! {
                        <div class="table-wrap">
                            <table data-testid="step-comm">
                                <caption>"Communication, whole (partly hidden behind compute; what is not is above)"</caption>
                                <thead><tr><th>"dimension"</th><th>"time"</th><th>"beside the step"</th></tr></thead>
                                <tbody>{rows(&v.comm, "step-comm-row")}</tbody>
                            </table>
                        </div>
                    })}
                }
            })
        })
    };
    view! {
        <Show when=move || v.with(Option::is_some)>
            <section class="panel steptime" id="steptime" data-testid="steptime">
                <h2>"Step time (predicted)"</h2>
                {body}
                <p class="hint">{format!(
                    "memfit's step-time model: GEMMs at measured efficiency, memory-bound kernels at HBM speed, each collective at its link's bandwidth and what the framework overlaps. It predicts faster than measured on most published runs (held out: median |error| {:.0} %, up to {:.0} %; see How accurate is this?): budget a margin.",
                    STEP_HELD_OUT.0, STEP_HELD_OUT.1
                )}</p>
            </section>
        </Show>
    }
}
