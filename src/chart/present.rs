//! Text the page shows for an estimate: verdict, table rows. Pure, so it is
//! tested natively and the components only place it.

use memfit_core::estimate::{Estimate, Item, Location, Phase};
use memfit_core::units::{group_digits, Units};

/// The fit verdict in words.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// Whether the per-GPU peak fits the usable memory.
    pub fits: bool,
    /// "Fits" / "Does not fit".
    pub headline: String,
    /// Per-GPU peak, e.g. "61.24 GiB".
    pub per_gpu: String,
    /// Usable memory, e.g. "79.65 GiB".
    pub usable: String,
    /// Headroom sentence, e.g. "18.41 GiB free" or "24.10 GiB over".
    pub headroom: String,
    /// The largest GPU component and its share, e.g. "Activations (85%)".
    pub largest: String,
    /// Host RAM per node, e.g. "0.00 GiB".
    pub per_cpu: String,
    /// Where in the step the peak occurs.
    pub phase: String,
}

/// Human name of a phase.
pub fn phase_label(p: Phase) -> &'static str {
    match p {
        Phase::Init => "model init",
        Phase::Forward => "forward",
        Phase::Backward => "backward",
        Phase::OptimizerStep => "optimizer step",
        Phase::Prefill => "prefill",
        Phase::Decode => "decode (cache full)",
    }
}

/// The engine's name as its project writes it, from the report's spelling (`sglang` →
/// "SGLang").
fn engine_label(id: &str) -> &str {
    use memfit_core::spelling::Spelled;
    memfit_core::scenario::Engine::parse(id).map_or(id, |e| e.label())
}

/// The verdict for an estimate in the given units.
pub fn verdict(e: &Estimate, units: Units) -> Verdict {
    let headroom = if e.out_of_range {
        "out of range: a figure exceeds 2^64 bytes (see the warnings)".to_string()
    } else if e.headroom_bytes >= 0 {
        format!("{} free", units.format(e.headroom_bytes as u64))
    } else {
        format!("{} over", units.format(e.headroom_bytes.unsigned_abs()))
    };
    let saturated = memfit_core::estimate::Component::ALL
        .iter()
        .find(|c| e.gpu_bytes_of(**c) == memfit_core::ledger::OUT_OF_RANGE);
    let largest = saturated
        .map(|c| format!("{} (out of range)", c.label()))
        .or_else(|| {
            e.largest_gpu_component().map(|c| {
                let share = e.gpu_bytes_of(c) as f64 / e.per_gpu_bytes.max(1) as f64 * 100.0;
                format!("{} ({share:.0}%)", c.label())
            })
        })
        .unwrap_or_else(|| "—".into());
    Verdict {
        fits: e.fits,
        headline: if e.out_of_range {
            "Out of range".into()
        } else if let Some(r) = e.serve.as_ref().filter(|r| r.error.is_some()) {
            // A pool that holds some tokens but fewer than `max_len` refuses the context;
            // an empty pool, or a refusal with room to spare, is the launch itself.
            if (1..r.max_len).contains(&r.kv_tokens) {
                format!("Does not serve one request of {} tokens", r.max_len)
            } else {
                format!("{} refuses to start", engine_label(&r.engine))
            }
        } else if let Some(f) = e
            .serve
            .as_ref()
            .and_then(|r| r.fit.as_ref())
            .filter(|_| e.fits)
        {
            // What llama-server's --fit chose, in the headline: the launch fits as it cut it.
            match f.ngl {
                None if f.cpu_experts > 0 => format!(
                    "Fits with the experts of {} of {} layers in host memory",
                    f.cpu_experts,
                    f.layers - 1
                ),
                Some(g) => format!(
                    "Fits with {g} of {} layers on the GPU{}",
                    f.layers,
                    if f.devices > 1 { "s" } else { "" }
                ),
                None => format!("Fits at a {}-token context", group_digits(f.n_ctx)),
            }
        } else if e.fits {
            "Fits".into()
        } else {
            "Does not fit".into()
        },
        per_gpu: units.format(e.per_gpu_bytes),
        usable: units.format(e.gpu.usable_bytes),
        headroom,
        largest,
        per_cpu: units.format(e.per_cpu_bytes),
        phase: if e.serve.is_some() {
            "serving (after start-up, KV pool allocated)".into()
        } else {
            phase_label(e.peak_phase).into()
        },
    }
}

/// The verdict in one line, for the bar that stays in view on a phone while the
/// inputs are edited: "Fits · 41.50 GiB of 79.65 GiB".
pub fn quick_line(v: &Verdict) -> String {
    format!("{} · {} of {}", v.headline, v.per_gpu, v.usable)
}

/// One row of the ledger table.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Component label.
    pub component: String,
    /// "GPU" / "CPU (per node)" / "NVMe (per node)".
    pub location: String,
    /// Formatted size.
    pub size: String,
    /// Exact bytes with digit grouping.
    pub bytes: String,
    /// Formula in symbols.
    pub formula: String,
    /// Values substituted.
    pub values: String,
    /// Source.
    pub source: String,
}

/// The ledger as table rows.
pub fn rows(items: &[Item], units: Units) -> Vec<Row> {
    items
        .iter()
        .map(|i| Row {
            component: i.component.label().into(),
            location: match i.location {
                Location::Gpu => "GPU".into(),
                Location::Cpu => "CPU (per node)".into(),
                Location::Nvme => "NVMe (per node)".into(),
            },
            size: units.format(i.bytes),
            bytes: group_digits(i.bytes),
            formula: i.formula.clone(),
            values: i.values.clone(),
            source: i.source.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use memfit_core::estimate::estimate;
    use memfit_core::scenario::{Scenario, Zero};

    /// The ZeRO comparison says its bars are training's outside training, and nothing in it.
    #[test]
    fn zero_panel_names_training_outside_training() {
        let note = |q: &str| zero_mode_note(&memfit_core::contract::query::decode(q).0.scenario);
        assert_eq!(note("model=llama-2-7b"), None);
        let serve = note("mode=serve&model=llama-2-7b").unwrap();
        assert!(
            serve.starts_with("The scenario is serving; these bars are what training"),
            "{serve}"
        );
        assert!(note("mode=infer&model=llama-2-7b")
            .unwrap()
            .contains("is inference;"));
    }

    /// The headline of a refused launch says what was refused: the context (a pool of
    /// 48,080 tokens for vLLM's 131,072-token request on a 24 GB card) or the start itself
    /// (SGLang with no memory left for the pool; a tensor-parallel size the heads refuse,
    /// with 1,975,226 tokens of pool to spare).
    #[test]
    fn refused_launches_name_what_was_refused() {
        let headline = |q: &str| {
            let s = memfit_core::contract::query::decode(q).0.scenario;
            verdict(&estimate(&s), Units::Gib).headline
        };
        assert_eq!(
            headline("mode=serve&model=llama-3-8b&gpu=rtx4090&max_len=131072"),
            "Does not serve one request of 131072 tokens"
        );
        assert_eq!(
            headline("mode=serve&engine=sglang&engine_version=0.5.3&model=llama-2-70b&gpu=rtx4090"),
            "SGLang refuses to start"
        );
        assert_eq!(
            headline("mode=serve&engine=sglang&model=llama-3-8b&gpu=h100-80&tp=3&gpus_per_node=3"),
            "SGLang refuses to start"
        );
        assert_eq!(
            headline("mode=serve&model=llama-2-70b&gpu=rtx4090"),
            "vLLM refuses to start"
        );
        // llama-server's --fit in the headline (serve::tests_fit has the figures).
        let ls = "mode=serve&engine=llamacpp&ctx_per=total&gpu=rtx4090";
        assert_eq!(
            headline(&format!(
                "{ls}&model=llama-2-7b&context=131072&quant=q4_k_m&engine_version=b8179"
            )),
            "Fits at a 37,632-token context"
        );
        assert_eq!(
            headline(&format!("{ls}&model=llama-3-70b&quant=q4_k_m&max_len=8192")),
            "Fits with 42 of 81 layers on the GPU"
        );
        assert_eq!(
            headline(&format!(
                "{ls}&model=gpt-oss-120b&quant=mxfp4&weight_dtype=q8_0&max_len=4096"
            )),
            "Fits with the experts of 24 of 36 layers in host memory"
        );
        assert_eq!(
            headline(&format!(
                "{ls}&model=llama-3-70b&quant=q4_k_m&max_len=65536&tp=2&gpus_per_node=2"
            )),
            "Fits with 59 of 81 layers on the GPUs"
        );
        assert_eq!(
            headline(&format!(
                "{ls}&model=llama-3-70b&quant=q4_k_m&max_len=8192&fit=off"
            )),
            "llama.cpp refuses to start"
        );
    }

    #[test]
    fn verdict_for_llama2_7b_zero3_8gpu() {
        let mut s = Scenario {
            sharding: memfit_core::scenario::Sharding::Zero(Zero::Z3),
            ..Default::default()
        };
        s.cluster.gpus_per_node = memfit_core::scenario::count(8);
        let e = estimate(&s);
        let v = verdict(&e, Units::Gib);
        // Model states 2·1,684,603,904 + 3,369,207,808 + 6,738,415,616; gathered layer
        // 524,288,000; activations 32·763,920,384; logits: the final norm 4096·4096·2·2 +
        // 4·4096 + 4·4096·4096 (composite RMSNorm) and 4096·32000·14;
        // DeepSpeed reduce bucket 2·5e8 and prefetch bucket 2·5e7 (backward); cuBLAS
        // workspaces 2·32 MiB (the forward's and the autograd thread's handles, sm90).
        let allocated: u64 = 13_476_831_232
            + 524_288_000
            + 24_445_452_288
            + 1_969_242_112
            + 1_000_000_000
            + 100_000_000
            + 2 * 32 * (1 << 20);
        assert_eq!(e.allocated_bytes, allocated);
        // + 5 % fragmentation, CUDA context 600 MiB, NCCL 256 MiB.
        let total = allocated + (allocated * 5).div_ceil(100) + 600 * (1 << 20) + 256 * (1 << 20);
        assert_eq!(e.per_gpu_bytes, total);
        assert_eq!(
            v.per_gpu,
            format!("{:.2} GiB", total as f64 / (1u64 << 30) as f64)
        );
        assert_eq!(v.per_gpu, "41.50 GiB");
        assert_eq!(v.headline, "Fits");
        assert_eq!(v.headroom, "38.15 GiB free");
        assert!(v.largest.starts_with("Activations (55%)"), "{}", v.largest); // 24.4e9 / 44.4e9
                                                                              // H100 SXM 80 GB: 85,520,809,984 B usable / 2^30 = 79.65 GiB.
        assert_eq!(quick_line(&v), format!("Fits · 41.50 GiB of {}", v.usable));
        assert_eq!(v.usable, "79.65 GiB");
    }
}

/// One bar of the ZeRO comparison: a stage × offload variant of the scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct Variant {
    /// The bar.
    pub bar: super::Bar,
    /// Whether it fits the GPU.
    pub fits: bool,
    /// Per-GPU peak.
    pub per_gpu: u64,
    /// Communication per step, as text (`2Ψ` / `3Ψ` elements and bytes).
    pub comm: String,
    /// The step-time model's step and throughput, as text.
    pub time: String,
}

/// What the ZeRO comparison shows when the scenario is not training: the bars are always
/// training's (ZeRO shards training state), so a serving or inference reader is told so.
pub fn zero_mode_note(s: &memfit_core::scenario::Scenario) -> Option<String> {
    use memfit_core::scenario::Mode;
    let what = match s.workload.mode {
        Mode::Train => return None,
        Mode::Infer => "inference",
        Mode::Serve => "serving",
    };
    Some(format!(
        "The scenario is {what}; these bars are what training this model would take with each ZeRO stage (ZeRO partitions training's gradients, optimizer states and weights), on the selected GPU."
    ))
}

/// ZeRO stages 0–3 × optimizer offload none/CPU for the scenario at data-parallel size `dp`.
///
/// # Formula
/// Communication per step (seeds 001 and 004): all-reduce = reduce-scatter + all-gather
/// = 2Ψ elements for DP, ZeRO-1 and ZeRO-2; ZeRO-3 adds a parameter all-gather in the
/// backward: 3Ψ.
pub fn zero_variants(s: &memfit_core::scenario::Scenario, dp: u32, units: Units) -> Vec<Variant> {
    use memfit_core::scenario::{at_least_one, Mode, Offload, Sharding, Zero};
    let mut out = Vec::new();
    for z in [Zero::Z0, Zero::Z1, Zero::Z2, Zero::Z3] {
        for off in [Offload::None, Offload::Cpu] {
            let mut t = s.clone();
            t.workload.mode = Mode::Train;
            t.sharding = Sharding::Zero(z);
            t.parallel.dp = Some(at_least_one(dp));
            t.offload.optimizer = off;
            t.offload.params = if z == Zero::Z3 { off } else { Offload::None };
            if t.stack.convention.is_deepspeed() || t.stack.convention.is_megatron() {
                t.stack.convention = memfit_core::scenario::Convention::Memfit;
            }
            let e = memfit_core::estimate::estimate(&t);
            let label = format!(
                "Z{}{}{}",
                z.number(),
                if off == Offload::Cpu { " cpu" } else { "" },
                if e.fits { " ✓" } else { " ✗" }
            );
            let factor = if z == Zero::Z3 { 3 } else { 2 };
            let k = t.numerics.precision.compute_bytes();
            let comm = format!("{factor}Ψ = {}", units.format(factor * k * e.model.params));
            let p = memfit_core::estimate::Prepared::of(&t);
            let time = match memfit_core::steptime::step_time(&t, &p) {
                Some(st) if st.step_s.is_finite() => {
                    let used = t.layout().used() as f64; // ≥ 1: a product of non-zero degrees
                    format!(
                        "{:.0} ms, {:.0} tokens/s per GPU",
                        st.step_s * 1e3,
                        st.tokens_per_s / used
                    )
                }
                _ => "—".into(),
            };
            out.push(Variant {
                bar: super::Bar::from_estimate(label, &e),
                fits: e.fits,
                per_gpu: e.per_gpu_bytes,
                comm,
                time,
            });
        }
    }
    out
}

/// Per-GPU peak against sequence length (powers of two), and the largest that fits.
pub fn seq_curve(s: &memfit_core::scenario::Scenario) -> (Vec<super::Point>, Option<u64>) {
    use memfit_core::scenario::Solve;
    let max = memfit_core::solve::max_fitting(s, Solve::MaxContext).map(|r| r.value as u64);
    let top_k = match max {
        Some(m) if m > 0 => (64 - (m.max(1) * 4).leading_zeros()).clamp(10, 24),
        _ => 17,
    };
    let points = (7..=top_k)
        .map(|k| {
            let mut t = s.clone();
            t.workload.seq = memfit_core::scenario::at_least_one(1 << k);
            super::Point {
                x: 1 << k,
                bytes: memfit_core::estimate::estimate(&t).per_gpu_bytes,
            }
        })
        .collect();
    (points, max)
}

#[cfg(test)]
mod variant_tests {
    use super::*;
    use memfit_core::scenario::Scenario;

    /// Each variant says its predicted step: CPU offload costs time; at this scenario
    /// (Llama 2 7B, 8 ranks) ZeRO-3's extra all-gather is not faster than ZeRO-1.
    #[test]
    fn variants_say_their_step_time() {
        let s = Scenario::default();
        let v = zero_variants(&s, 8, Units::Gib);
        let ms = |x: &Variant| x.time.split(' ').next().unwrap().parse::<f64>().unwrap();
        assert!(
            v.iter().all(|x| x.time.ends_with("tokens/s per GPU")),
            "{:?}",
            v.iter().map(|x| &x.time).collect::<Vec<_>>()
        );
        assert!(
            ms(&v[3]) > ms(&v[2]),
            "offload: {} vs {}",
            v[3].time,
            v[2].time
        );
        assert!(ms(&v[6]) >= ms(&v[2]));
    }

    #[test]
    fn eight_variants_and_zero3_removes_weights() {
        let s = Scenario::default();
        let v = zero_variants(&s, 8, Units::Gib);
        assert_eq!(v.len(), 8);
        assert!(v[0].bar.label.starts_with("Z0"));
        assert!(v[6].comm.starts_with("3Ψ"));
        assert!(v[6].per_gpu < v[0].per_gpu);
        let (pts, max) = seq_curve(&s);
        assert!(pts.windows(2).all(|w| w[0].bytes <= w[1].bytes));
        assert_eq!(max, Some(0)); // 7B full training never fits one H100
        let s = memfit_core::contract::query::decode("zero=3&gpus_per_node=8").0;
        let (_, max) = seq_curve(&s.scenario);
        assert!(max.unwrap() > 4096);
    }
}
