//! The estimate's summaries: the model and GPU as the report shows them, the rules of
//! thumb, and the out-of-range warnings.

use super::*;

/// One warning per component whose bytes do not fit in 64 bits (see [`OUT_OF_RANGE`]),
/// naming the keys that drive it; one for a total that overflows only as a sum.
pub(crate) fn out_of_range_warnings(t: &Tally, per_gpu: u64, per_cpu: u64) -> Vec<Warning> {
    // Fragmentation is a share of the others: reported only when it alone overflows.
    let only_frag = t.saturated == 1 << Component::Fragmentation.index();
    let mut out: Vec<Warning> = Component::ALL
        .iter()
        .filter(|c| t.saturated & (1 << c.index()) != 0)
        .filter(|c| **c != Component::Fragmentation || only_frag)
        .map(|c| {
            let keys = c.driving_keys();
            Warning {
                key: keys[0].into(),
                value: String::new(),
                message: format!(
                    "out of range: the {} exceed 2^64 bytes (16 EiB); lower {}",
                    c.label().to_ascii_lowercase(),
                    keys.join(", ")
                ),
            }
        })
        .collect();
    if out.is_empty() && (per_gpu == OUT_OF_RANGE || per_cpu == OUT_OF_RANGE) {
        out.push(Warning {
            key: "seq".into(),
            value: String::new(),
            message: format!(
                "out of range: the {} total exceeds 2^64 bytes (16 EiB); lower seq, batch or params",
                if per_gpu == OUT_OF_RANGE { "per-GPU" } else { "host RAM" }
            ),
        });
    }
    out
}

pub(crate) fn model_info(s: &Scenario, p: &Prepared) -> ModelInfo {
    let preset = s.preset();
    ModelInfo {
        id: preset.id.into(),
        name: preset.name.into(),
        params: p.psi,
        largest_layer_params: p.largest,
        active_params: p.active,
        breakdown: p.counts.clone(),
        explicit_params: s.model.params.is_some() || s.model.largest_layer.is_some(),
    }
}

pub(crate) fn gpu_info(s: &Scenario) -> GpuInfo {
    let custom = s.cluster.gpu_mem_mib.is_some();
    GpuInfo {
        id: if custom {
            "custom".into()
        } else {
            s.gpu().id.into()
        },
        name: if custom {
            "Custom capacity".into()
        } else {
            s.gpu().name.into()
        },
        usable_bytes: s.usable_bytes(),
    }
}

/// Seed 003's rules of thumb, labelled as rules.
///
/// # Formula
/// ```text
/// inference: 1.2 · k·Ψ                                (7B in bf16 → 16.8 GB)
/// training:  20·Ψ + (34·b·s·h + 5·b·s²·a)·L           (AdamW mixed precision, no ZeRO)
/// ```
/// Source: seed 003 (chaofa).
///
/// Both are one model's whole total: on more than one GPU the name says so, since the
/// page shows it beside a per-GPU verdict (DeepSeek-V3 FP8 served on 8 H200: 1.2·Ψ is
/// 1,499.86 GiB, against about 90 GiB a GPU).
pub(crate) fn rules(s: &Scenario, arch: &Arch, psi: u64, _l: &Layout) -> Vec<Rule> {
    let mut out = rules_whole(s, arch, psi);
    if s.world() > 1 {
        for r in &mut out {
            // "… (no ZeRO)" becomes "… (no ZeRO; the whole model, all GPUs together)".
            match r.name.strip_suffix(')') {
                Some(head) => r.name = format!("{head}; the whole model, all GPUs together)"),
                None => r.name.push_str(" (the whole model, all GPUs together)"),
            }
        }
    }
    out
}

fn rules_whole(s: &Scenario, arch: &Arch, psi: u64) -> Vec<Rule> {
    let k = s.numerics.precision.compute_bytes();
    match s.workload.mode {
        Mode::Infer | Mode::Serve => vec![Rule {
            name: "seed 003: inference ≈ 1.2 × weights".into(),
            bytes: (k as u128 * psi as u128 * 12 / 10).min(u64::MAX as u128) as u64,
            formula: format!("1.2·{k}·Ψ"),
            source: "seed 003 (chaofa: 7B in bf16 → 16.8 GB)".into(),
        }],
        Mode::Train => {
            let (b, sq, h, a, layers) = (
                s.workload.batch.get() as u128,
                s.workload.seq.get() as u128,
                arch.hidden.get() as u128,
                arch.heads.get() as u128,
                arch.layers.get() as u128,
            );
            let act = (34 * b * sq * h + 5 * b * sq * sq * a) * layers;
            vec![Rule {
                name: "seed 003: training ≈ 20·Ψ + activations (no ZeRO)".into(),
                bytes: (20 * psi as u128 + act).min(u64::MAX as u128) as u64,
                formula: "20·Ψ + (34·b·s·h + 5·b·s²·a)·L".into(),
                source: "seed 003 (chaofa: 20 = 6 params + 6 grads + 8 Adam, bytes per parameter)"
                    .into(),
            }]
        }
    }
}
