//! Settings drawn from the keys' own declared domains (`contract::keys::KEYS`): every key gets
//! a value from its `Values` (a whole number in its range, a float in `(0, hi]`, a flag, one
//! of its spellings, a preset or GPU id, a modelled engine release) or stays at its default,
//! and the values are applied through the keys' own setters, in canonical order. A key added
//! to `KEYS` is drawn from the day it is declared; nothing here names a field.
#![allow(dead_code)]

use memfit_core::contract::keys::{Values, KEYS};
use memfit_core::contract::Settings;
use proptest::prelude::*;

/// Engine releases the `engine_version` key is drawn from (its parser checks the text).
const RELEASES: [&str; 6] = ["0.6.0", "0.8.5", "0.10.2", "0.11.0", "b5285", "0.4.6"];

/// One key's value: `None` leaves it at its default.
fn value(values: &Values) -> BoxedStrategy<Option<String>> {
    let v: BoxedStrategy<String> = match *values {
        Values::Int { lo, hi, empty } => {
            let n = prop_oneof![Just(lo), Just(hi), lo..=hi].prop_map(|n| n.to_string());
            if empty {
                prop_oneof![n, Just(String::new())].boxed()
            } else {
                n.boxed()
            }
        }
        Values::Float { hi } => prop_oneof![Just(hi), 1e-6f64..=hi]
            .prop_map(|x| x.to_string())
            .boxed(),
        Values::Bool { empty, .. } => {
            let b = prop_oneof![Just("0".to_string()), Just("1".to_string())];
            if empty {
                prop_oneof![b, Just(String::new())].boxed()
            } else {
                b.boxed()
            }
        }
        Values::Options { options, empty } => {
            let mut all: Vec<String> = options().into_iter().map(|o| o.0.to_string()).collect();
            if empty {
                all.push(String::new());
            }
            prop::sample::select(all).boxed()
        }
        Values::Preset => prop::sample::select(
            memfit_core::model::presets()
                .iter()
                .map(|p| p.id.to_string())
                .collect::<Vec<_>>(),
        )
        .boxed(),
        Values::Gpu => prop::sample::select(
            memfit_core::gpu::GPUS
                .iter()
                .map(|g| g.id.to_string())
                .collect::<Vec<_>>(),
        )
        .boxed(),
        Values::Text => prop::sample::select(RELEASES.map(String::from).to_vec()).boxed(),
        Values::Version => return Just(None).boxed(),
    };
    prop_oneof![1 => Just(None), 2 => v.prop_map(Some)].boxed()
}

/// Any settings the keys can express: each key drawn from its domain (or left out), set in
/// `KEYS` order through its setter; a value a setter refuses in context (a rule across
/// keys) leaves that key at what it was.
pub fn settings_from_keys() -> impl Strategy<Value = Settings> {
    let per_key: Vec<BoxedStrategy<Option<String>>> =
        KEYS.iter().map(|k| value(&k.values)).collect();
    per_key.prop_map(|vals| {
        let mut s = Settings::default();
        for (k, v) in KEYS.iter().zip(vals) {
            if let Some(v) = v {
                let _ = (k.set)(&mut s, &v);
            }
        }
        s
    })
}
