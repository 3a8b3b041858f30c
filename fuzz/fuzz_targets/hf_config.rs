//! Any text as a config.json: the importer never panics; what it accepts applies to a
//! scenario and estimates without panicking, and survives the query round trip.
#![no_main]
use libfuzzer_sys::fuzz_target;
use memfit_core::estimate::estimate;
use memfit_core::hfconfig::parse;
use memfit_core::scenario::Scenario;
use memfit_core::contract::query::{apply_import, decode, encode};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(imported) = parse(text) else {
        return;
    };
    let mut s = Scenario::default();
    let _ = apply_import(&mut s, &imported);
    let _ = estimate(&s);
    let (back, _) = decode(&encode(&s));
    assert_eq!(estimate(&back).per_gpu_bytes, estimate(&s).per_gpu_bytes);
});
