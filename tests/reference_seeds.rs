//! Every number printed in the seeds that the estimator covers, from
//! `../shared/reference/seed_examples.json`, checked through the query string
//! (the public contract) → estimate path.

mod common;
use common::{ds_gb, example, load, u, Failures};
use memfit_core::contract::report::estimate_query;
use memfit_core::estimate::{Component, Phase};

/// DeepSpeed's row options → query keys.
fn options_query(options: &str) -> String {
    let mut q = Vec::new();
    for part in options.split(',') {
        let (k, v) = part
            .split_once('=')
            .map(|(k, v)| (k.trim(), v.trim()))
            .unwrap_or(("", ""));
        match k {
            "offload_optimizer" => q.push(format!("offload_opt={v}")),
            "offload_param" => q.push(format!("offload_param={v}")),
            "zero_init" => q.push(format!("zero_init={v}")),
            _ => panic!("unexpected option {part:?}"),
        }
    }
    q.join("&")
}

/// Seed 000: the t5-3b tables (ZeRO-2 and ZeRO-3, live and cold), as printed on the
/// DeepSpeed page and as DeepSpeed 0.19.8 computes them.
#[test]
fn seed_000_deepspeed_tables_exact() {
    let doc = load("seed_examples.json");
    let mut f = Failures::default();
    for id in [
        "ds_doc_zero2_live_t5-3b_8gpu",
        "ds_doc_zero2_cold_2851e6_8gpu",
        "ds_doc_zero3_live_t5-3b_8gpu",
        "ds_doc_zero3_cold_2851e6_32e6_8gpu",
    ] {
        let e = example(&doc, id);
        let i = &e["inputs"];
        let zero = if id.contains("zero2") { 2 } else { 3 };
        let mut base = format!(
            "zero={zero}&params={}&gpus_per_node={}&nodes={}&buffer_factor={}",
            u(i, "total_params"),
            u(i, "num_gpus_per_node"),
            u(i, "num_nodes"),
            i["additional_buffer_factor"]
        );
        if zero == 3 {
            base.push_str(&format!("&largest_layer={}", u(i, "largest_layer_params")));
        }
        // `rows` are the page's numbers (= DeepSpeed ≤ 0.14.2); the ZeRO-3 code never changed.
        let mut sets = vec![("rows", "ds-doc", true), ("rows", "ds-0.14", true)];
        if zero == 3 {
            sets.push(("rows", "ds-0.19", true));
        } else {
            sets.push(("rows_deepspeed_0.19.8", "ds-0.19", false));
        }
        for (rows_key, conv, printed_is_expected) in sets {
            for row in e[rows_key].as_array().unwrap() {
                let opts = row["options"].as_str().unwrap();
                let q = format!("{base}&{}&convention={conv}", options_query(opts));
                let (_, est) = estimate_query(&q);
                let label = || format!("{id} [{conv}] {opts}: {q}");
                f.check(est.warnings.is_empty(), || {
                    format!("{} warnings {:?}", label(), est.warnings)
                });
                f.check(est.per_cpu_bytes == u(row, "cpu_mem_bytes"), || {
                    format!(
                        "{} cpu {} != {}",
                        label(),
                        est.per_cpu_bytes,
                        row["cpu_mem_bytes"]
                    )
                });
                f.check(est.per_gpu_bytes == u(row, "gpu_mem_bytes"), || {
                    format!(
                        "{} gpu {} != {}",
                        label(),
                        est.per_gpu_bytes,
                        row["gpu_mem_bytes"]
                    )
                });
                // The printed strings: verbatim from the seed where DeepSpeed agrees with the page.
                let (want_cpu, want_gpu) = if printed_is_expected {
                    (
                        row["expected_per_cpu"].as_str().unwrap(),
                        row["expected_per_gpu"].as_str().unwrap(),
                    )
                } else {
                    (
                        row["computed_per_cpu"].as_str().unwrap(),
                        row["computed_per_gpu"].as_str().unwrap(),
                    )
                };
                f.check(ds_gb(est.per_cpu_bytes) == want_cpu, || {
                    format!(
                        "{} printed cpu {} != {want_cpu}",
                        label(),
                        ds_gb(est.per_cpu_bytes)
                    )
                });
                f.check(ds_gb(est.per_gpu_bytes) == want_gpu, || {
                    format!(
                        "{} printed gpu {} != {want_gpu}",
                        label(),
                        ds_gb(est.per_gpu_bytes)
                    )
                });
            }
        }
    }
    f.finish("seed 000 DeepSpeed tables");
}

/// Seed 000's t5-large example: `bytes >> 20` printed as "MB" for three ZeRO-3 cases on 4 GPUs.
#[test]
fn seed_000_t5_large_cases_exact() {
    let doc = load("seed_examples.json");
    let e = example(&doc, "ds_doc_t5-large_gpu_cases_4gpu");
    let i = &e["inputs"];
    let base = format!(
        "zero=3&convention=ds-doc&params={}&largest_layer={}&gpus_per_node={}",
        u(i, "total_params"),
        u(i, "largest_layer_params"),
        u(i, "total_gpus")
    );
    let mut f = Failures::default();
    for (case, opts) in [
        ("case1", "offload_opt=none&offload_param=none"),
        ("case2", "offload_opt=cpu&offload_param=cpu"),
        ("case3", "offload_opt=cpu&offload_param=none"),
    ] {
        let (_, est) = estimate_query(&format!("{base}&{opts}"));
        let want = u(&e["computed_bytes"], case);
        f.check(est.per_gpu_bytes == want, || {
            format!("{case}: {} != {want}", est.per_gpu_bytes)
        });
        let printed = format!("{}MB", est.per_gpu_bytes >> 20);
        let expected = e["expected"][format!("{case} gpu memory")]
            .as_str()
            .unwrap();
        f.check(printed == expected, || {
            format!("{case}: printed {printed} != seed {expected}")
        });
        let llm = est.gpu_bytes_of(Component::GatheredLayer);
        f.check(
            format!("{}MB", llm >> 20) == e["expected"]["largest layer memory"].as_str().unwrap(),
            || format!("{case}: largest layer {llm}"),
        );
    }
    f.finish("seed 000 t5-large cases");
}

/// Seed 000's GPU-RAM worked example: ZeRO-2 + optimizer offload keeps 2·params on the
/// GPU, "a 40GB GPU can fit ~11B params ... the model weights take about 22GB".
#[test]
fn seed_000_eleven_billion_on_40gb() {
    let doc = load("seed_examples.json");
    let w = &example(&doc, "ds_doc_gpu_ram_formulas")["worked"];
    for conv in ["ds-doc", "ds-0.14", "ds-0.19"] {
        let (_, est) = estimate_query(&format!(
            "zero=2&offload_opt=cpu&params={}&convention={conv}&gpu=a100-40",
            u(w, "params")
        ));
        assert_eq!(est.per_gpu_bytes, u(w, "bytes"), "{conv}");
        assert!(est.fits, "{conv}: 22 GB of weights should fit a 40 GB A100");
    }
}

/// Seed 001 and the ZeRO paper: 16Ψ, 4Ψ + 12Ψ/N_d, 2Ψ + 14Ψ/N_d, 16Ψ/N_d (memfit's
/// convention, model states only), for the headline case and the whole formula grid.
#[test]
fn seed_001_and_zero_paper_model_states() {
    let doc = load("seed_examples.json");
    let mut f = Failures::default();
    let states = |psi: u64, nd: u64, zero: u8| {
        let q = format!("params={psi}&gpus_per_node=1&nodes={nd}&zero={zero}");
        let (_, e) = estimate_query(&q);
        [
            Component::Weights,
            Component::Gradients,
            Component::MasterWeights,
            Component::OptimizerStates,
        ]
        .iter()
        .map(|c| e.gpu_bytes_of(*c))
        .sum::<u64>()
    };
    let s = example(&doc, "strint_zero_stage_formulas_S7.5e9_n64");
    let (psi, n) = (u(&s["inputs"], "S"), u(&s["inputs"], "n"));
    let cb = &s["computed_bytes"];
    for (zero, key) in [(0, "baseline"), (1, "stage1"), (2, "stage2")] {
        f.check(states(psi, n, zero) == u(cb, key), || {
            format!("seed 001 {key}: {}", states(psi, n, zero))
        });
    }
    let paper = example(&doc, "zero_paper_7.5B_64gpu");
    for (zero, key) in [
        (0u8, "baseline"),
        (1, "P_os"),
        (2, "P_os+g"),
        (3, "P_os+g+p"),
    ] {
        let got = states(u(&paper["inputs"], "psi"), u(&paper["inputs"], "Nd"), zero);
        f.check(got == u(&paper["computed_bytes"], key), || {
            format!("paper {key}: {got}")
        });
        // The paper's headline, in decimal GB to one decimal: 120 / 31.4 / 16.6 / 1.9.
        let gb = format!("{:.1}", got as f64 / 1e9);
        let want = format!("{:.1}", paper["expected_GB"][key].as_f64().unwrap());
        f.check(gb == want, || format!("paper {key}: {gb} GB != {want} GB"));
    }
    for row in example(&doc, "zero_paper_formula_grid")["rows"]
        .as_array()
        .unwrap()
    {
        let (psi, nd) = (u(row, "psi"), u(row, "Nd"));
        for (zero, key) in [
            (0u8, "baseline"),
            (1, "P_os"),
            (2, "P_os+g"),
            (3, "P_os+g+p"),
        ] {
            let got = states(psi, nd, zero);
            // The grid was computed in floats; memfit rounds each of its 4 items up to a
            // whole byte (the largest shard), so allow at most 4 bytes.
            let want = row[key].as_f64().unwrap();
            f.check((got as f64 - want).abs() <= 4.0, || {
                format!("grid Ψ={psi} N_d={nd} {key}: {got} vs {want}")
            });
        }
    }
    let labml = &example(&doc, "labml_zero3_formula")["worked_computed_here"];
    let got = states(u(labml, "psi"), u(labml, "N_d"), 3);
    f.check(got == u(labml, "bytes"), || {
        format!("seed 004 (2+2+K)Ψ/N_d: {got}")
    });
    f.finish("seed 001 / ZeRO paper / seed 004");
}

/// Seed 003: KV cache 4·b·l·h·(s+n) and the activation term (34bsh + 5bs²a)·l.
#[test]
fn seed_003_kv_cache_and_activations() {
    let doc = load("seed_examples.json");
    let kv = &example(&doc, "chaofa_inference_rule")["kv_worked_computed_here"];
    // Llama-2-7B is MHA: a_kv·d = h = 4096, l = 32.
    let q = format!(
        "model=llama-2-7b&mode=infer&batch={}&seq={}&gen={}",
        u(kv, "b"),
        u(kv, "s"),
        u(kv, "n")
    );
    let (_, e) = estimate_query(&q);
    let decode_kv = e
        .items
        .iter()
        .find(|i| i.component == Component::KvCache && i.phases == [Phase::Decode])
        .unwrap();
    assert_eq!(decode_kv.bytes, u(kv, "bytes"));
    let act = &example(&doc, "chaofa_training_rule")["worked_computed_here"]
        ["llama2-7b_shape_activation_b1_s4096"];
    let q = format!(
        "model=llama-2-7b&convention=seed003&batch={}&seq={}",
        u(act, "b"),
        u(act, "s")
    );
    let (_, e) = estimate_query(&q);
    assert_eq!(e.gpu_bytes_of(Component::Activations), u(act, "bytes"));
}

/// Korthikanti et al. Table 2, GPT-3 175B shape: per-layer activations with no
/// parallelism and with tensor parallelism (t = 8, no sequence parallelism).
#[test]
fn korthikanti_table_2_per_layer() {
    let doc = load("seed_examples.json");
    let k = &example(&doc, "korthikanti_activation_formulas")["worked_computed_here"][0];
    let per_layer = &k["per_layer_bytes"];
    let base = format!(
        "model=gpt3-175b&convention=korthikanti&layers=1&batch={}&seq={}",
        u(k, "b"),
        u(k, "s")
    );
    let (_, e) = estimate_query(&base);
    assert_eq!(
        e.gpu_bytes_of(Component::Activations) as f64,
        per_layer["no_parallelism"].as_f64().unwrap()
    );
    let (_, e) = estimate_query(&format!("{base}&tp={}&gpus_per_node=8", u(k, "t")));
    assert_eq!(
        e.gpu_bytes_of(Component::Activations) as f64,
        per_layer["tensor_parallel"].as_f64().unwrap()
    );
}
