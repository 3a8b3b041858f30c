//! Form controls bound to one query key each. Parsing and validation are the
//! codec's (`share::query::set_key`): the form and the URL accept exactly the same values.

use leptos::prelude::*;
use memfit_core::contract::query::{get_key, set_key};
use memfit_core::scenario::Scenario;

/// Applies `value` to `key`; returns the error message when the value is rejected.
fn apply(scenario: RwSignal<Scenario>, key: &'static str, value: &str) -> Option<String> {
    let mut next = scenario.get_untracked();
    match set_key(&mut next, key, value) {
        Ok(()) => {
            if next != scenario.get_untracked() {
                scenario.set(next);
            }
            None
        }
        Err(e) => Some(e),
    }
}

/// A text/number input for one key. A rejected value stays in the box with the
/// error beside it; the scenario keeps its last valid value.
#[component]
pub fn KeyInput(
    /// The scenario being edited.
    scenario: RwSignal<Scenario>,
    /// Query key.
    key: &'static str,
    /// Label text.
    label: &'static str,
    /// Placeholder (e.g. the preset's value for an optional override).
    #[prop(into, optional)]
    placeholder: Signal<String>,
    /// Unit shown after the box.
    #[prop(optional)]
    unit: &'static str,
) -> impl IntoView {
    let draft: RwSignal<Option<String>> = RwSignal::new(None);
    let error: RwSignal<Option<String>> = RwSignal::new(None);
    // Memos: an input's DOM is touched only when its own value (or placeholder) changes,
    // not on every change of the scenario (issue 9: ~70 inputs).
    let value = Memo::new(move |_| scenario.with(|s| get_key(s, key)));
    let placeholder = Memo::new(move |_| placeholder.get());
    let id = format!("f-{key}");
    let err_id = format!("e-{key}");
    view! {
        <div class="field" class:invalid=move || error.with(Option::is_some)>
            <label for=id.clone()>{label}</label>
            <input
                id=id
                name=key
                data-key=key
                type="text"
                inputmode="numeric"
                autocomplete="off"
                aria-describedby=err_id.clone()
                placeholder=move || placeholder.get()
                prop:value=move || draft.get().unwrap_or_else(|| value.get())
                on:input=move |ev| {
                    let v = event_target_value(&ev);
                    match apply(scenario, key, &v) {
                        None => {
                            draft.set(None);
                            error.set(None);
                        }
                        Some(e) => {
                            draft.set(Some(v));
                            error.set(Some(e));
                        }
                    }
                }
            />
            <span class="unit">{unit}</span>
            <span class="error" id=err_id role="alert">{move || error.get()}</span>
        </div>
    }
}

/// A select for one key with fixed options `(value, label)`.
#[component]
pub fn KeySelect(
    /// The scenario being edited.
    scenario: RwSignal<Scenario>,
    /// Query key.
    key: &'static str,
    /// Label text.
    label: &'static str,
    /// `(value, label)` pairs.
    options: Vec<(String, String)>,
) -> impl IntoView {
    let id = format!("f-{key}");
    // A memo: the select and its options are touched only when this key changes.
    let current = Memo::new(move |_| scenario.with(|s| get_key(s, key)));
    view! {
        <div class="field">
            <label for=id.clone()>{label}</label>
            <select
                id=id
                name=key
                data-key=key
                on:change=move |ev| {
                    let _ = apply(scenario, key, &event_target_value(&ev));
                }
                prop:value=current
            >
                {options
                    .into_iter()
                    .map(|(value, text)| {
                        let v = value.clone();
                        view! {
                            <option value=value selected=move || current.with(|c| *c == v)>
                                {text}
                            </option>
                        }
                    })
                    .collect_view()}
            </select>
        </div>
    }
}

/// `(value, label)` pairs from static strings.
pub fn opts(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(v, l)| (v.to_string(), l.to_string()))
        .collect()
}
