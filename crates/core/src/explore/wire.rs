//! The fewest-GPU search's answer as one line of text: what the page's worker sends back
//! to the page (the two wasm instances share no memory, so the answer travels as a
//! string). Not JSON: reading JSON into [`MinGpus`] takes serde's deserializer, which
//! cost the page's first module 15.2 KB of its gzip (2026-11-27: 408,415 → 393,203 B with
//! it stubbed out); this line is read with a few integer parses.
//!
//! The line is the fields in declaration order, separated by single spaces: integers in
//! decimal, `-` for `None`, enums by their query-string spelling ([`Spelled::as_str`]),
//! `sp` as `0`/`1`, and `f64`s as their IEEE 754 bits in hexadecimal ([`f64::to_bits`]:
//! NaN and the infinities included), so `min_gpus_from_line(&min_gpus_to_line(m)) ==
//! Some(m)` exactly (bit for bit). Not their decimal: reading a decimal `f64` links the
//! standard library's float parser, whose only user in the page's first module this was
//! (its `POWER_OF_FIVE_128` table alone is 10.4 KB).

use super::{Candidate, MinGpus};
use crate::comm::Comm;
use crate::spelling::Spelled;
use std::fmt::Write;

/// `m` as one line (see the module's documentation).
pub fn min_gpus_to_line(m: &MinGpus) -> String {
    let MinGpus {
        value,
        nodes,
        gpus_per_node,
        layout,
        previous,
    } = m;
    let mut out = String::new();
    let opt = |v: &Option<u32>| v.map_or("-".to_string(), |v| v.to_string());
    let _ = write!(
        out,
        "{} {nodes} {gpus_per_node} {}",
        opt(value),
        opt(previous)
    );
    match layout {
        None => out.push_str(" -"),
        Some(c) => candidate_to(&mut out, c),
    }
    out
}

/// Appends `c`'s fields, each after a space. Destructured, so that a new field of
/// [`Candidate`] must be added here (and to [`candidate_from`]) to compile.
fn candidate_to(out: &mut String, c: &Candidate) {
    let Candidate {
        dp,
        tp,
        pp,
        cp,
        zero,
        fsdp,
        offload_opt,
        offload_param,
        recompute,
        batch,
        microbatches,
        sp,
        vpp,
        schedule,
        per_gpu_bytes,
        headroom_bytes,
        comm,
        tokens_per_step,
        compute_overhead,
        step_s,
        tokens_per_s_per_gpu,
        mfu,
    } = c;
    let Comm {
        dp: c_dp,
        tp: c_tp,
        pp: c_pp,
        cp: c_cp,
        ep: c_ep,
    } = comm;
    let _ = write!(
        out,
        " + {dp} {tp} {pp} {cp} {} {} {} {} {} {batch} {microbatches} {} {vpp} {} \
         {per_gpu_bytes} {headroom_bytes} {c_dp} {c_tp} {c_pp} {c_cp} {c_ep} \
         {tokens_per_step} {:x} {:x} {:x} {:x}",
        zero.as_str(),
        fsdp.as_str(),
        offload_opt.as_str(),
        offload_param.as_str(),
        recompute.as_str(),
        u8::from(*sp),
        schedule.as_str(),
        compute_overhead.to_bits(),
        step_s.to_bits(),
        tokens_per_s_per_gpu.to_bits(),
        mfu.to_bits(),
    );
}

/// The [`MinGpus`] written by [`min_gpus_to_line`]; `None` for any other text.
pub fn min_gpus_from_line(line: &str) -> Option<MinGpus> {
    let mut t = line.split(' ');
    let mut opt = || -> Option<Option<u32>> {
        match t.next()? {
            "-" => Some(None),
            v => v.parse().ok().map(Some),
        }
    };
    let value = opt()?;
    let (nodes, gpus_per_node) = (t.next()?.parse().ok()?, t.next()?.parse().ok()?);
    let previous = match t.next()? {
        "-" => None,
        v => Some(v.parse().ok()?),
    };
    let layout = match t.next()? {
        "-" => None,
        "+" => Some(candidate_from(&mut t)?),
        _ => return None,
    };
    t.next().is_none().then_some(MinGpus {
        value,
        nodes,
        gpus_per_node,
        layout,
        previous,
    })
}

/// The fields [`candidate_to`] wrote, in its order.
fn candidate_from<'a>(t: &mut impl Iterator<Item = &'a str>) -> Option<Candidate> {
    let mut next = || t.next();
    macro_rules! num {
        () => {
            next()?.parse().ok()?
        };
    }
    macro_rules! float {
        () => {
            f64::from_bits(u64::from_str_radix(next()?, 16).ok()?)
        };
    }
    macro_rules! spelled {
        () => {
            Spelled::parse(next()?)?
        };
    }
    Some(Candidate {
        dp: num!(),
        tp: num!(),
        pp: num!(),
        cp: num!(),
        zero: spelled!(),
        fsdp: spelled!(),
        offload_opt: spelled!(),
        offload_param: spelled!(),
        recompute: spelled!(),
        batch: num!(),
        microbatches: num!(),
        sp: match next()? {
            "0" => false,
            "1" => true,
            _ => return None,
        },
        vpp: num!(),
        schedule: spelled!(),
        per_gpu_bytes: num!(),
        headroom_bytes: num!(),
        comm: Comm {
            dp: num!(),
            tp: num!(),
            pp: num!(),
            cp: num!(),
            ep: num!(),
        },
        tokens_per_step: num!(),
        compute_overhead: float!(),
        step_s: float!(),
        tokens_per_s_per_gpu: float!(),
        mfu: float!(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explore::min_gpus_within;
    use crate::scenario::Scenario;

    /// Bit-for-bit equality (`==` on f64 would pass -0.0 for 0.0 and fail NaN).
    fn same(a: &MinGpus, b: &MinGpus) -> bool {
        format!("{a:?}") == format!("{b:?}")
            && a.layout.map(|c| {
                [c.compute_overhead, c.step_s, c.tokens_per_s_per_gpu, c.mfu].map(f64::to_bits)
            }) == b.layout.map(|c| {
                [c.compute_overhead, c.step_s, c.tokens_per_s_per_gpu, c.mfu].map(f64::to_bits)
            })
    }

    #[test]
    fn real_answers_round_trip_exactly() {
        // Llama 2 70B needs several GPUs (its 16-bit weights alone are 138 GB); the
        // default model fits on one; 405B at 1 node of 8 searches whole nodes.
        for (model, mode) in [
            ("llama-2-70b", "train"),
            ("llama-2-7b", "train"),
            ("llama-3.1-405b", "train"),
            ("llama-2-70b", "infer"),
        ] {
            let mut s = Scenario::default();
            s.select_model(model);
            s.workload.mode = Spelled::parse(mode).unwrap();
            let m = min_gpus_within(&s, 64);
            if model == "llama-2-70b" && mode == "train" {
                // The line's every field is exercised: a layout with a step time.
                assert!(m.layout.is_some_and(|c| c.step_s > 0.0), "{m:?}");
            }
            let line = min_gpus_to_line(&m);
            let back = min_gpus_from_line(&line).unwrap_or_else(|| panic!("{line}"));
            assert!(same(&m, &back), "{model} {mode}: {line}");
        }
    }

    #[test]
    fn awkward_values_round_trip_exactly() {
        let c = Candidate {
            dp: 3,
            sp: true,
            headroom_bytes: -1_234_567,
            per_gpu_bytes: u64::MAX,
            compute_overhead: 0.1 + 0.2, // 0.30000000000000004
            step_s: f64::NAN,
            tokens_per_s_per_gpu: f64::INFINITY,
            mfu: -0.0,
            ..Candidate::default()
        };
        for m in [
            MinGpus {
                value: Some(24),
                nodes: 3,
                gpus_per_node: 8,
                layout: Some(c),
                previous: Some(16),
            },
            MinGpus {
                value: None,
                nodes: 0,
                gpus_per_node: 8,
                layout: None,
                previous: None,
            },
        ] {
            let back = min_gpus_from_line(&min_gpus_to_line(&m)).unwrap();
            assert!(same(&m, &back), "{}", min_gpus_to_line(&m));
        }
    }

    #[test]
    fn other_text_is_refused() {
        for bad in [
            "",
            "{\"value\":8}",
            "8 1 8 - -",
            "8 1 8 - - extra",
            "x 1 8 - -",
        ] {
            // "8 1 8 - -" is the valid "no layout" line; with "extra" it is not.
            if bad == "8 1 8 - -" {
                assert!(min_gpus_from_line(bad).is_some());
            } else {
                assert!(min_gpus_from_line(bad).is_none(), "{bad}");
            }
        }
    }
}
