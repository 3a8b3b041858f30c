//! Any text as a query string: decoding never panics (the build has overflow checks
//! and debug assertions on), the estimate never panics, the canonical query of what
//! was decoded decodes to the same scenario without a warning, and the CLI's JSON
//! never carries a saturated figure.
#![no_main]
use libfuzzer_sys::fuzz_target;
use memfit_core::estimate::estimate;
use memfit_core::scenario::Solve;
use memfit_core::contract::query::{decode, encode};
use memfit_core::contract::report::report;

fuzz_target!(|data: &[u8]| {
    let Ok(q) = std::str::from_utf8(data) else {
        return;
    };
    let (mut s, _) = decode(q);
    // The inverse solves sweep many scenarios per input; the estimate is what is fuzzed.
    s.solve = Solve::None;
    let e = estimate(&s);
    let canonical = encode(&s);
    let (back, warnings) = decode(&canonical);
    assert!(warnings.is_empty(), "{canonical}: {warnings:?}");
    assert_eq!(back, s, "{canonical}");
    let json = report(&s, &e).to_string();
    assert!(!json.contains("18446744073709551615"), "saturated figure for {q}");
});
