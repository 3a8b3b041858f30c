//! The golden corpus: 596 CLI invocations (every preset, convention, framework, ZeRO
//! stage and FSDP strategy, offload, recomputation, pipeline schedule, fine-tuning mode,
//! inference setting, `timeline=1`, the solvers, `--explore`, imported configs, bad
//! input) whose exit status and stdout must stay byte for byte what
//! `tools/golden_corpus.py record` stored in `tests/golden/out/`.
//!
//! A deliberate change to the output is recorded again in its own commit, whose message
//! lists every difference (`python3 tools/golden_corpus.py diff <memfit binary>`) with its
//! reason.

use std::process::Command;

#[test]
fn cli_output_is_byte_for_byte_the_recorded_corpus() {
    let root = env!("CARGO_MANIFEST_DIR");
    let cases: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(format!("{root}/tests/golden/cases.json")).unwrap(),
    )
    .unwrap();
    let cases = cases.as_array().unwrap();
    assert!(cases.len() >= 300, "the corpus has {} cases", cases.len());
    let mut differ = Vec::new();
    for c in cases {
        let name = c["name"].as_str().unwrap();
        let args: Vec<&str> = c["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        let out = Command::new(env!("CARGO_BIN_EXE_memfit"))
            .args(&args)
            .current_dir(root)
            .output()
            .unwrap();
        let got = format!(
            "exit {}\n{}",
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout)
        );
        let want = std::fs::read_to_string(format!("{root}/tests/golden/out/{name}.json"))
            .unwrap_or_default();
        if got != want {
            differ.push(name.to_string());
        }
    }
    assert!(
        differ.is_empty(),
        "{} of {} cases differ from the recorded corpus (first: {:?}); \
         `python3 tools/golden_corpus.py diff target/debug/memfit` lists the fields",
        differ.len(),
        cases.len(),
        &differ[..differ.len().min(10)]
    );
}
