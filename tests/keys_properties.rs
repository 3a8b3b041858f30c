//! Properties over settings drawn from the keys' declared domains (`tests/common/keys_gen.rs`):
//! every key of `KEYS`, each over its whole declared range, combined at random. A key added
//! to the table is covered without touching this file.

mod common;

use common::keys_gen::settings_from_keys;
use memfit_core::contract::query::{decode, encode};
use memfit_core::estimate::{estimate, Location};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, ..ProptestConfig::default() })]

    /// A link reproduces the settings exactly, and reads back without a warning.
    #[test]
    fn keys_domains_round_trip(s in settings_from_keys()) {
        let q = encode(&s);
        let (back, warnings) = decode(&q);
        prop_assert!(warnings.is_empty(), "{q}: {warnings:?}");
        prop_assert_eq!(back, s);
    }

    /// The estimate of anything the keys can express never panics, and its verdict is the sum
    /// of the GPU items alive at the peak.
    #[test]
    fn keys_domains_estimate_sums(s in settings_from_keys()) {
        let e = estimate(&s.scenario);
        let gpu: u128 = e.items.iter()
            .filter(|i| i.location == Location::Gpu && i.alive_in(e.peak_phase))
            .map(|i| i.bytes as u128).sum();
        prop_assert_eq!(e.per_gpu_bytes as u128, gpu.min(u64::MAX as u128));
    }
}
