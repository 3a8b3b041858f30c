//! The figures every comparison reports: the bottom floor of the evidence crate (it
//! imports none of its siblings, so each comparison and the page's asset can use it).

/// Median and maximum of a list of absolute relative errors (NaN when empty).
///
/// # Formula
/// Sorted `e_1 ≤ … ≤ e_n` (non-finite values left out): median `e_{(n+1)/2}` for odd `n`,
/// `(e_{n/2} + e_{n/2+1}) / 2` for even `n`; maximum `e_n`. Example: `[0.03, 0.01, 0.02,
/// 0.10]` → median `(0.02 + 0.03)/2 = 0.025`, maximum `0.10`.
pub fn median_max(mut errs: Vec<f64>) -> (f64, f64) {
    errs.retain(|e| e.is_finite());
    if errs.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    errs.sort_by(f64::total_cmp);
    let n = errs.len();
    let median = if n % 2 == 1 {
        errs[n / 2]
    } else {
        (errs[n / 2 - 1] + errs[n / 2]) / 2.0
    };
    (median, errs[n - 1])
}

/// The strings of a JSON list `doc[key]` (empty when it is not one): a split file's ids.
pub fn string_list(doc: &serde_json::Value, key: &str) -> Vec<String> {
    doc[key]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::median_max;

    #[test]
    fn median_and_max_by_hand() {
        assert_eq!(median_max(vec![0.03, 0.01, 0.02, 0.10]), (0.025, 0.10));
        assert_eq!(median_max(vec![0.5, f64::NAN, 0.1, 0.2]), (0.2, 0.5));
        assert!(median_max(vec![]).0.is_nan());
    }
}
