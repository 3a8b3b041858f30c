//! The CLI contract: JSON shape, exit codes, no panics.

use std::process::Command;

fn memfit(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_memfit"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn acceptance_query_prints_the_ledger() {
    let (code, out, _) = memfit(&["model=llama-2-7b&mode=train&zero=3&gpus_per_node=8"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["version"], 1);
    assert_eq!(v["model"]["params"], 6_738_415_616u64);
    let psi = 6_738_415_616u64;
    let item = |c: &str| {
        v["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["component"] == c)
            .unwrap()["bytes"]
            .as_u64()
            .unwrap()
    };
    // By hand: each of 8 ranks holds 2Ψ/8 weights, 2Ψ/8 grads, 4Ψ/8 master, 8Ψ/8 Adam m+v.
    assert_eq!(item("weights"), 2 * psi / 8);
    assert_eq!(item("gradients"), 2 * psi / 8);
    assert_eq!(item("master_weights"), 4 * psi / 8);
    assert_eq!(item("optimizer_states"), psi);
    assert_eq!(item("gathered_layer"), 4 * 32_000 * 4096);
    // The peak is the sum of the GPU items alive in the peak phase.
    let phase = v["peak_phase"].as_str().unwrap();
    let sum: u64 = v["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["location"] == "gpu")
        .filter(|i| {
            i.get("phases")
                .and_then(|p| p.as_array())
                .is_none_or(|p| p.iter().any(|x| x == phase))
        })
        .map(|i| i["bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(v["per_gpu_bytes"].as_u64().unwrap(), sum);
    assert_eq!(v["fits"], true); // 36.66 GiB of 79.65 GiB
    assert!(v["warnings"].as_array().unwrap().is_empty());
}

#[test]
fn warnings_keep_exit_zero_and_strict_makes_them_fatal() {
    let (code, out, _) = memfit(&["tp=abc"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["warnings"][0]["key"], "tp");
    assert_eq!(v["warnings"][0]["value"], "abc");
    let (code, _, err) = memfit(&["--strict", "tp=abc"]);
    assert_eq!(code, 2);
    assert!(err.contains("warnings"));
}

#[test]
fn unusable_input_exits_2() {
    assert_eq!(memfit(&[]).0, 2);
    assert_eq!(memfit(&["a", "b"]).0, 2);
    let (code, _, err) = memfit(&["--json", "{not json"]);
    assert_eq!(code, 2);
    assert!(err.contains("not a scenario"));
    // Strict: a bad value or an unknown key is an error naming it, not a warning.
    let (code, _, err) = memfit(&["--json", r#"{"tp": "abc"}"#]);
    assert_eq!(code, 2);
    assert!(err.contains("`tp`"), "{err}");
    let (code, _, err) = memfit(&["--json", r#"{"tpp": 2}"#]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown key `tpp`"), "{err}");
}

/// `--json` reads the query's keys as a JSON object (numbers, strings, booleans; null is
/// the default): the same report as the query string, and `encode_json` round-trips.
#[test]
fn json_input_matches_the_query() {
    let (_, a, _) = memfit(&[
        "--json",
        r#"{"model": "gpt2", "zero": 2, "gpus_per_node": 4, "sp": null}"#,
    ]);
    let (_, b, _) = memfit(&["model=gpt2&zero=2&gpus_per_node=4"]);
    assert_eq!(a, b);
    let (s, _) = memfit_core::contract::query::decode("model=gpt2&zero=2&gpus_per_node=4&units=gb");
    let json = memfit_core::contract::query::encode_json(&s).to_string();
    let (_, c, _) = memfit(&["--json", &json]);
    let (_, d, _) = memfit(&["model=gpt2&zero=2&gpus_per_node=4&units=gb"]);
    assert_eq!(c, d);
}

#[test]
fn help_lists_every_key() {
    let (code, out, _) = memfit(&["--help"]);
    assert_eq!(code, 0);
    for k in memfit_core::contract::query::KEYS {
        assert!(out.contains(k.name), "--help lacks {}", k.name);
    }
}

/// `--config` imports a Hugging Face config.json exactly as the page does, then applies
/// the query; a config that cannot be used exits 2 with the message.
#[test]
fn config_import_then_query() {
    let cfg = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/configs/qwen3-8b.json");
    let (code, out, _) = memfit(&["--config", cfg, "zero=3&gpus_per_node=8"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    // Qwen/Qwen3-8B: 8,190,735,360 parameters; 16 B/param over 8 ranks.
    assert_eq!(v["model"]["params"], 8_190_735_360u64);
    assert_eq!(v["layout"]["dp"], 8);
    let q = v["query"].as_str().unwrap();
    assert!(
        q.contains("model=qwen3-8b") && q.contains("zero=3") && q.contains("head_dim=128"),
        "{q}"
    );
    // The printed query reproduces the estimate without the file.
    let (_, again, _) = memfit(&[q]);
    let again: serde_json::Value = serde_json::from_str(&again).unwrap();
    assert_eq!(again["per_gpu_bytes"], v["per_gpu_bytes"]);
    // Without a query: the import alone.
    let (code, _, _) = memfit(&["--config", cfg]);
    assert_eq!(code, 0);
    // Unusable configs: exit 2, the reason on stderr.
    let dir = std::env::temp_dir().join(format!("memfit-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let opt = dir.join("opt-350m.json");
    std::fs::write(
        &opt,
        r#"{"model_type":"opt","hidden_size":1024,"word_embed_proj_dim":512}"#,
    )
    .unwrap();
    let (code, _, err) = memfit(&["--config", opt.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(
        err.contains("`word_embed_proj_dim`") && err.contains("changes the weights"),
        "{err}"
    );
    let (code, _, err) = memfit(&["--config", dir.join("missing.json").to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("cannot read"), "{err}");
    let (code, _, _) = memfit(&["--config"]);
    assert_eq!(code, 2);
}

#[test]
fn alloc_replay_reads_a_real_cuda_trace_and_names_a_bad_line() {
    // By hand: two 5 MiB tensors share one 20 MiB segment (kLargeBuffer); an 11 MiB tensor
    // opens a 12 MiB segment of its own. The real allocator's record says the same (S lines).
    let dir = std::env::temp_dir().join(format!("memfit-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("good.txt");
    std::fs::write(
        &good,
        "# R1\nS 20971520\na 0 5242880\na 1 5242880\nS 12582912\na 2 11534336\nf 2\n",
    )
    .unwrap();
    let (code, out, _) = memfit(&["--alloc-replay", good.to_str().unwrap()]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["id"], "R1");
    assert_eq!(v["max_reserved_bytes"], 32u64 << 20);
    assert_eq!(v["traced_max_reserved_bytes"], 32u64 << 20);
    assert_eq!(v["traced_segments_opened"], 2);
    let bad = dir.join("bad.txt");
    std::fs::write(&bad, "# R1\nq 3\n").unwrap();
    let (code, _, err) = memfit(&["--alloc-replay", bad.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("line 2"), "{err}");
}
