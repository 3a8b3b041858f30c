//! Unit tests of the estimate.

use super::*;
use crate::scenario::Offload;

fn gpu_item(e: &Estimate, c: Component) -> u64 {
    e.gpu_bytes_of(c)
}

/// The acceptance query, checked by hand:
/// `model=llama-2-7b&mode=train&zero=3&gpus_per_node=8`.
#[test]
fn llama2_7b_zero3_8gpu_model_states_by_hand() {
    let mut s = Scenario {
        sharding: crate::scenario::Sharding::Zero(Zero::Z3),
        ..Default::default()
    };
    s.cluster.gpus_per_node = crate::scenario::count(8);
    let e = estimate(&s);
    let psi: u64 = 6_738_415_616;
    assert_eq!(e.model.params, psi);
    // Each of 8 ranks holds 1/8 of every state.
    assert_eq!(gpu_item(&e, Component::Weights), 2 * psi / 8); // 1,684,603,904
    assert_eq!(gpu_item(&e, Component::Gradients), 1_684_603_904);
    assert_eq!(gpu_item(&e, Component::MasterWeights), 3_369_207_808);
    assert_eq!(gpu_item(&e, Component::OptimizerStates), 6_738_415_616);
    // Largest layer = embedding 32000·4096 = 131,072,000 params; 4 bytes each (bf16 params + grads).
    assert_eq!(e.model.largest_layer_params, 131_072_000);
    assert_eq!(gpu_item(&e, Component::GatheredLayer), 524_288_000);
    // Activations (memfit, flash, no dropout): 32 layers · 763,920,384 B (see activations.rs).
    assert_eq!(gpu_item(&e, Component::Activations), 32 * 763_920_384);
    // Seed 003's term for comparison: 32 · (34·4096·4096 + 5·32·4096²) = 104,152,956,928.
    s.stack.convention = Convention::Seed003;
    assert_eq!(
        gpu_item(&estimate(&s), Component::Activations),
        104_152_956_928
    );
    assert_eq!(
        e.per_gpu_bytes,
        e.items
            .iter()
            .filter(|i| i.location == Location::Gpu)
            .map(|i| i.bytes)
            .sum::<u64>()
    );
    assert!(e.fits);
}

#[test]
fn zero_stages_shrink_states_as_the_zero_paper_says() {
    // ZeRO paper headline: Ψ = 7.5B, N_d = 64: 120 / 31.4 / 16.6 / 1.9 GB.
    let mut s = Scenario::default();
    s.model.params = Some(7_500_000_000);
    s.cluster.gpus_per_node = crate::scenario::count(8);
    s.cluster.nodes = crate::scenario::count(8);
    let states = |z| {
        let mut s = s.clone();
        s.sharding = crate::scenario::Sharding::Zero(z);
        let e = estimate(&s);
        [
            Component::Weights,
            Component::Gradients,
            Component::MasterWeights,
            Component::OptimizerStates,
        ]
        .iter()
        .map(|c| gpu_item(&e, *c))
        .sum::<u64>()
    };
    assert_eq!(states(Zero::Z0), 120_000_000_000);
    assert_eq!(states(Zero::Z1), 31_406_250_000);
    assert_eq!(states(Zero::Z2), 16_640_625_000);
    assert_eq!(states(Zero::Z3), 1_875_000_000);
}

#[test]
fn offload_moves_optimizer_to_host_per_node() {
    let mut s = Scenario {
        sharding: crate::scenario::Sharding::Zero(Zero::Z2),
        ..Default::default()
    };
    s.cluster.gpus_per_node = crate::scenario::count(4);
    s.offload.optimizer = Offload::Cpu;
    let e = estimate(&s);
    assert_eq!(e.gpu_bytes_of(Component::OptimizerStates), 0);
    // Steady state: 4 ranks per node, each 12Ψ/4 → 12Ψ per node.
    let steady: u64 = e
        .items
        .iter()
        .filter(|i| i.location == Location::Cpu && i.phases.is_empty())
        .map(|i| i.bytes)
        .sum();
    assert_eq!(steady, 12 * 6_738_415_616);
    // At init each of the 4 processes builds the fp32 model: 16Ψ, the host peak.
    assert_eq!(e.per_cpu_bytes, 16 * 6_738_415_616);
    assert_eq!(e.cpu_peak_phase, Phase::Init);
}

#[test]
fn inference_kv_cache_matches_seed_003() {
    let mut s = Scenario::default();
    s.workload.mode = Mode::Infer;
    s.workload.seq = crate::scenario::count(512);
    s.workload.gen = 32;
    let e = estimate(&s);
    let kv = |ph| {
        e.items
            .iter()
            .find(|i| i.component == Component::KvCache && i.phases == [ph])
            .unwrap()
            .bytes
    };
    assert_eq!(kv(Phase::Decode), 285_212_672); // 2·1·(512+32)·32·32·128·2
    assert_eq!(kv(Phase::Prefill), 268_435_456); // 2·1·512·32·32·128·2
    assert_eq!(e.gpu_bytes_of(Component::Weights), 2 * 6_738_415_616);
}

#[test]
fn every_item_is_explained() {
    for &conv in Convention::ALL {
        for z in [Zero::Z0, Zero::Z1, Zero::Z2, Zero::Z3] {
            for off in [Offload::None, Offload::Cpu] {
                let mut s = Scenario::default();
                s.stack.convention = conv;
                s.sharding = crate::scenario::Sharding::Zero(z);
                s.offload.optimizer = off;
                s.offload.params = off;
                for i in estimate(&s).items {
                    assert!(
                        !i.formula.is_empty() && !i.values.is_empty() && !i.source.is_empty(),
                        "{i:?}"
                    );
                }
            }
        }
    }
}
