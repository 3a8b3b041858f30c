//! Inference's program: the weights and runtime overheads, the prompt layer by layer
//! into the KV cache (each layer's working set for a moment), then the generated tokens
//! with the cache growing (a token's working set for a moment). Sizes from the
//! inference ledger (`infer::inference_items`).

use super::{share, Ev, Sink, StepPhase};
use crate::ledger::{Component, Item, Location, Mech};
use crate::nonzero::Count;

/// Decode events: at most this many token groups.
const DECODE_GROUPS: u64 = 64;

/// Runs inference's program of `items` (the GPU items of the inference ledger, with
/// their slots = their index) into `sink`, the prompt over `layers` layers of a stage,
/// `gen` tokens generated.
pub(crate) fn run<S: Sink>(items: &[Item], layers: Count, gen: u32, sink: &mut S) {
    let gpu = |i: &&Item| i.location == Location::Gpu;
    let slot = |m: Mech| {
        items
            .iter()
            .position(|i| i.mech == m && i.location == Location::Gpu)
            .map_or(u16::MAX, |k| k as u16)
    };
    let bytes = |m: Mech| -> i128 {
        items
            .iter()
            .filter(gpu)
            .filter(|i| i.mech == m)
            .map(|i| i.bytes as i128)
            .sum()
    };
    let mut add = |phase, layer, component, mech, delta: i128, what| {
        if delta != 0 {
            sink.event(Ev {
                phase,
                layer,
                micro_batch: None,
                component,
                mech,
                slot: slot(mech),
                delta,
                what,
            });
        }
    };
    for (k, it) in items.iter().enumerate().filter(|(_, i)| gpu(i)) {
        if it.phases.is_empty() {
            sink_resident(&mut add, it, k);
        }
    }
    let kv_prompt = bytes(Mech::KvPrefill);
    // Hugging Face's sliding-window mask: built before the first layer, freed after the last.
    let mask = bytes(Mech::SlidingMask);
    let (pf, ws) = (StepPhase::Prefill, Component::Workspace);
    add(
        pf,
        None,
        ws,
        Mech::SlidingMask,
        mask,
        "build the sliding-window mask",
    );
    prefill(&mut add, kv_prompt, bytes(Mech::PrefillWorkspace), layers);
    add(pf, None, ws, Mech::SlidingMask, -mask, "free the mask");
    let grow = bytes(Mech::KvDecode) - kv_prompt;
    decode(&mut add, grow, bytes(Mech::DecodeWorkspace), gen);
}

/// What the program's events are written through: `(phase, layer, component, mechanism,
/// bytes, what)`.
trait Add: FnMut(StepPhase, Option<u32>, Component, Mech, i128, &'static str) {}
impl<F: FnMut(StepPhase, Option<u32>, Component, Mech, i128, &'static str)> Add for F {}

/// The prompt, layer by layer: its keys and values written (`kv_prompt` shared over the
/// layers), the layer's working set for a moment.
fn prefill(add: &mut impl Add, kv_prompt: i128, work: i128, layers: Count) {
    let layers = layers.get() as i128;
    let (pf, kv, ws) = (StepPhase::Prefill, Component::KvCache, Component::Workspace);
    for j in 0..layers {
        let layer = Some(j as u32);
        let part = share(kv_prompt, j, layers);
        let what = "write the prompt's keys and values";
        add(pf, layer, kv, Mech::KvPrefill, part, what);
        let what = "the layer's forward tensors";
        add(pf, layer, ws, Mech::PrefillWorkspace, work, what);
        add(
            pf,
            layer,
            ws,
            Mech::PrefillWorkspace,
            -work,
            "freed after the layer",
        );
    }
}

/// The generated tokens in at most [`DECODE_GROUPS`] groups: the cache grows by `grow`
/// in total, a token's working set for a moment. A negative `grow` is the prompt's view
/// in the windowed layers (`infer::prefill_view`) given back: the first decoded token's
/// concatenation replaces that storage, so the whole drop comes with the first group —
/// not spread over the groups, which put the last token's working set beside most of the
/// view (a decode peak 3.6 MB above the ledger's for Gemma 3 1B cut to one layer, eager,
/// 67,108,864 tokens generated; found by `keys_domains_estimate_sums`).
fn decode(add: &mut impl Add, grow: i128, work: i128, gen: u32) {
    // `gen = 0` (a prompt only) still walks one group, in which the cache grows by 0.
    let tokens = (gen as u64).max(1);
    let groups = tokens.min(DECODE_GROUPS) as i128;
    let (dc, kv, ws) = (StepPhase::Decode, Component::KvCache, Component::Workspace);
    for g in 0..groups {
        let part = match grow {
            d if d < 0 => {
                if g == 0 {
                    d
                } else {
                    0
                }
            }
            d => share(d, g, groups),
        };
        let what = "the cache grows by the generated tokens";
        add(dc, None, kv, Mech::KvDecode, part, what);
        add(
            dc,
            None,
            ws,
            Mech::DecodeWorkspace,
            work,
            "one token's forward tensors",
        );
        add(
            dc,
            None,
            ws,
            Mech::DecodeWorkspace,
            -work,
            "freed after the token",
        );
    }
}

/// A resident item (weights, CUDA context, fragmentation) at the start.
fn sink_resident(add: &mut impl Add, it: &Item, _slot: usize) {
    add(
        StepPhase::Baseline,
        None,
        it.component,
        it.mech,
        it.bytes as i128,
        super::walk::resident_what(it.component),
    );
}
