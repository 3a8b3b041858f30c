//! JSON figures out of range: the one rule the CLI's reports share (the plain report and
//! the explorer's), below both.

use serde_json::Value;

/// Replaces every byte count at `OUT_OF_RANGE` (2^64 − 1: does not fit in 64 bits)
/// with `null`, and the headroom with it: the JSON never shows a saturated figure.
pub(crate) fn null_out_of_range(v: &mut Value) {
    let max = crate::ledger::OUT_OF_RANGE;
    match v {
        Value::Number(n) if n.as_u64() == Some(max) => *v = Value::Null,
        Value::Object(map) => {
            let headroom_null = map.get("per_gpu_bytes").and_then(Value::as_u64) == Some(max);
            for (k, x) in map.iter_mut() {
                if headroom_null && k == "headroom_bytes" {
                    *x = Value::Null;
                } else {
                    null_out_of_range(x);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(null_out_of_range),
        _ => {}
    }
}
