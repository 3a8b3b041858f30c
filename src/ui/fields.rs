//! Form controls bound to one query key each. The label, the widget (a select for a key
//! with spellings, a box otherwise), the options, the bounds and the unit all come from
//! the key's one declaration (`memfit_core::contract::keys::KEYS`); parsing and
//! validation are the codec's, so the form and the URL accept exactly the same values.

use leptos::prelude::*;
use memfit_core::contract::keys::{key, Key};
use memfit_core::contract::query::set_key;
use memfit_core::contract::Settings;
use memfit_core::scenario::{engine_reads, mode_reads, Engine, Mode};

/// Applies `value` to `name`; returns the error message when the value is rejected.
fn apply(settings: RwSignal<Settings>, name: &'static str, value: &str) -> Option<String> {
    let mut next = settings.get_untracked();
    match set_key(&mut next, name, value) {
        Ok(_) => {
            if next != settings.get_untracked() {
                settings.set(next);
            }
            None
        }
        Err(e) => Some(e),
    }
}

thread_local! {
    /// The page's mode and engine ([`share_mode`]): a field's "not used" mark follows them,
    /// and nothing else (one memo for the page, not one a field a keystroke).
    static PAGE_MODE: std::cell::Cell<Option<Memo<(Mode, Engine)>>> = const { std::cell::Cell::new(None) };
}

/// Shares the mode and serving engine of `settings` with every field built from now on
/// (the app calls it once): the fields grey out the keys that mode or engine does not read.
pub fn share_mode(settings: RwSignal<Settings>) {
    let mode = Memo::new(move |_| {
        settings.with(|x| (x.scenario.workload.mode, x.scenario.serving.engine))
    });
    PAGE_MODE.with(|m| m.set(Some(mode)));
}

/// Why the field of `name` is greyed out ("not used in serving": the estimate of that mode
/// does not read the key, `memfit_core::scenario::mode_reads`; "not used by SGLang": that
/// engine's plan does not, `engine_reads`); `None` where it is read, or outside a page that
/// provides its mode.
fn unused_note(name: &'static str) -> Memo<Option<&'static str>> {
    let mode = PAGE_MODE.with(std::cell::Cell::get);
    Memo::new(move |_| {
        let (m, e) = mode?.get();
        if !mode_reads(name, m) {
            return Some(match m {
                Mode::Train => "not used in training",
                Mode::Infer => "not used in inference",
                Mode::Serve => "not used in serving",
            });
        }
        (m == Mode::Serve && !engine_reads(name, e)).then_some(match e {
            Engine::Vllm => "not used by vLLM",
            Engine::Sglang => "not used by SGLang",
            Engine::Trtllm => "not used by TensorRT-LLM",
            Engine::Llamacpp => "not used by llama.cpp",
        })
    })
}

/// The label, with the field's "not used" note when it has one.
fn label_view(id: String, label: &'static str, note: Memo<Option<&'static str>>) -> impl IntoView {
    view! {
        <label for=id>
            {label}
            <span class="unused-note">{move || note.get().map(|n| format!(" — {n}"))}</span>
        </label>
    }
}

/// The unit shown after a box (none for plain counts and for spelled values).
fn unit_of(k: &Key) -> &'static str {
    match k.unit {
        "-" | "count" => "",
        u => u,
    }
}

/// The control of key `name`: a select when the key has spellings, else a text box. A
/// key the table does not declare renders nothing.
#[component]
pub fn KeyField(
    /// The settings being edited.
    settings: RwSignal<Settings>,
    /// Query key.
    name: &'static str,
    /// Placeholder (e.g. the preset's value for an optional override).
    #[prop(into, optional)]
    placeholder: Signal<String>,
) -> impl IntoView {
    let Some(k) = key(name) else {
        return ().into_any();
    };
    let choices = k.choices();
    if choices.is_empty() {
        view! { <KeyInput settings k placeholder /> }.into_any()
    } else {
        view! { <KeySelect settings k choices /> }.into_any()
    }
}

/// A text/number input for one key. A rejected value stays in the box with the
/// error beside it; the settings keep their last valid value.
#[component]
fn KeyInput(
    settings: RwSignal<Settings>,
    k: &'static Key,
    placeholder: Signal<String>,
) -> impl IntoView {
    let name = k.name;
    let draft: RwSignal<Option<String>> = RwSignal::new(None);
    let error: RwSignal<Option<String>> = RwSignal::new(None);
    // Memos: an input's DOM is touched only when its own value (or placeholder) changes,
    // not on every change of the settings (~70 inputs).
    // `k.get`, not `get_key(name)`: ~70 memos a keystroke, each would find its key by name.
    let value = Memo::new(move |_| settings.with(|s| (k.get)(s)));
    let placeholder = Memo::new(move |_| placeholder.get());
    let id = format!("f-{name}");
    let err_id = format!("e-{name}");
    let range = k.bounds().map(|(lo, hi)| format!("{lo}–{hi}"));
    let note = unused_note(name);
    view! {
        <div class="field" class:invalid=move || error.with(Option::is_some) class:unused=move || note.with(Option::is_some)>
            {label_view(id.clone(), k.label, note)}
            <input
                id=id
                name=name
                data-key=name
                type="text"
                inputmode="numeric"
                autocomplete="off"
                title=range
                aria-describedby=err_id.clone()
                placeholder=move || placeholder.get()
                prop:value=move || draft.get().unwrap_or_else(|| value.get())
                on:input=move |ev| {
                    let v = event_target_value(&ev);
                    match apply(settings, name, &v) {
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
            <span class="unit">{unit_of(k)}</span>
            <span class="error" id=err_id role="alert">{move || error.get()}</span>
        </div>
    }
}

/// A select for one key with its declared `(value, label)` choices.
#[component]
fn KeySelect(
    settings: RwSignal<Settings>,
    k: &'static Key,
    choices: Vec<(String, String)>,
) -> impl IntoView {
    let name = k.name;
    let id = format!("f-{name}");
    let error: RwSignal<Option<String>> = RwSignal::new(None);
    // A memo: the select and its options are touched only when this key changes.
    let current = Memo::new(move |_| settings.with(|s| (k.get)(s)));
    let note = unused_note(name);
    view! {
        <div class="field" class:unused=move || note.with(Option::is_some)>
            {label_view(id.clone(), k.label, note)}
            <select
                autocomplete="off"
                id=id
                name=name
                data-key=name
                on:change=move |ev| error.set(apply(settings, name, &event_target_value(&ev)))
                prop:value=current
            >
                {choices
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
            <span class="error" role="alert">{move || error.get()}</span>
        </div>
    }
}

/// A collapsed group: a `<details>` whose contents are built only once it is first
/// opened (and kept from then on, so a draft in one of its boxes is never lost). Closed
/// groups cost nothing per keystroke: their fields are neither in the DOM nor subscribed
/// to the settings. `open` opens it from the start (a link that sets one of its keys).
#[component]
pub fn Disclosure(
    /// The summary line (e.g. "Framework internals (9, at their defaults)").
    #[prop(into)]
    summary: Signal<String>,
    /// Open (and built) from the start.
    open: bool,
    children: ChildrenFn,
) -> impl IntoView {
    let built = RwSignal::new(open);
    let on_toggle = move |ev: leptos::ev::Event| {
        if super::details_open(&ev) && !built.get_untracked() {
            built.set(true);
        }
    };
    view! {
        <details class="advanced" open=open on:toggle=on_toggle>
            <summary>{move || summary.get()}</summary>
            {move || built.get().then(|| children())}
        </details>
    }
}

/// A collapsed group of less-used keys: its summary says how many differ from their
/// defaults, and it is open from the start when a link sets one of them.
#[component]
pub fn Advanced(
    settings: RwSignal<Settings>,
    label: &'static str,
    names: &'static [&'static str],
    #[prop(optional)] placeholders: Option<fn(&'static str) -> Signal<String>>,
) -> impl IntoView {
    let differ = Memo::new(move |_| settings.with(|x| crate::present::differing(x, names)));
    let open = differ.get_untracked() > 0;
    let summary =
        Signal::derive(move || crate::present::advanced_summary(label, differ.get(), names.len()));
    view! {
        <Disclosure summary open>
            <div class="grid">
                {names.iter().map(|&name| {
                    let placeholder = placeholders.map_or_else(|| Signal::derive(String::new), |f| f(name));
                    view! { <KeyField settings name placeholder /> }
                }).collect_view()}
            </div>
        </Disclosure>
    }
}
