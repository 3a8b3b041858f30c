//! Ledger items as one line of text and back: what the page's first module is sent by the
//! module that computes the ledgers of inference, serving and the other tools' conventions
//! (`crate::estimate`'s `set_remote`), which it links none of.

use super::{Component, Item, Location, Mech, Phase, Warning};

/// Every mechanism, in declaration order (`MECHS[m as usize] == m`, tested).
const MECHS: [Mech; 61] = [
    Mech::Weights,
    Mech::Fp8Copies,
    Mech::FrozenBase,
    Mech::Nf4Base,
    Mech::Adapters,
    Mech::Gradients,
    Mech::MasterWeights,
    Mech::OptimizerStates,
    Mech::GatheredLayer,
    Mech::NvmeSwap,
    Mech::NvmeParamSwap,
    Mech::AutocastCache,
    Mech::AutocastCopies,
    Mech::PtWeights,
    Mech::PtGradients,
    Mech::DdpBuckets,
    Mech::PtOptimizerStates,
    Mech::AdamTemporaries,
    Mech::FsdpStageParams,
    Mech::FsdpStageGrads,
    Mech::FsdpRoot,
    Mech::FsdpBlock,
    Mech::FsdpPrefetch,
    Mech::FsdpPrefetchForward,
    Mech::FsdpGradBlock,
    Mech::CudaContext,
    Mech::CublasWorkspace,
    Mech::Nccl,
    Mech::ReduceBucket,
    Mech::AllgatherBucket,
    Mech::PrefetchBucket,
    Mech::CpRing,
    Mech::ScanTransient,
    Mech::Fragmentation,
    Mech::HostInit,
    Mech::Activations,
    Mech::Logits,
    Mech::HeldOutput,
    Mech::InferWeights,
    Mech::KvPrefill,
    Mech::SlidingMask,
    Mech::KvDecode,
    Mech::PrefillWorkspace,
    Mech::DecodeWorkspace,
    Mech::ServeWeights,
    Mech::ServeActivation,
    Mech::ServeNonTorch,
    Mech::ServeGraphs,
    Mech::ServeKv,
    Mech::ServeOutside,
    Mech::ServeHost,
    Mech::DsParams,
    Mech::DsOffloadStates,
    Mech::DsLead,
    Mech::DsRest,
    Mech::DsInitLoad,
    Mech::DsGatheredLayer,
    Mech::DsZero3Rest,
    Mech::DsZero3Host,
    Mech::MegatronStates,
    Mech::MegatronActivations,
];

/// Between items (and before the warning).
const IS: char = '\u{1d}';
/// Between an item's fields.
const FS: char = '\u{1f}';

fn location_index(l: Location) -> u8 {
    match l {
        Location::Gpu => 0,
        Location::Cpu => 1,
        Location::Nvme => 2,
    }
}

impl Item {
    fn to_text(&self) -> String {
        let phases: Vec<String> = self
            .phases
            .iter()
            .map(|p| {
                Phase::ALL
                    .iter()
                    .position(|x| x == p)
                    .unwrap_or(0)
                    .to_string()
            })
            .collect();
        [
            (self.mech as usize).to_string(),
            self.component.index().to_string(),
            location_index(self.location).to_string(),
            self.bytes.to_string(),
            phases.join("."),
            self.rank.clone(),
            self.formula.clone(),
            self.values.clone(),
            self.source.clone(),
        ]
        .join(&FS.to_string())
    }

    fn from_text(t: &str) -> Option<Item> {
        let f: Vec<&str> = t.split(FS).collect();
        let [mech, component, location, bytes, phases, rank, formula, values, source] = f[..]
        else {
            return None;
        };
        let phases = phases
            .split('.')
            .filter(|p| !p.is_empty())
            .map(|p| Phase::ALL.get(p.parse::<usize>().ok()?).copied())
            .collect::<Option<Vec<Phase>>>()?;
        Some(Item {
            mech: *MECHS.get(mech.parse::<usize>().ok()?)?,
            component: *Component::ALL.get(component.parse::<usize>().ok()?)?,
            location: match location {
                "0" => Location::Gpu,
                "1" => Location::Cpu,
                "2" => Location::Nvme,
                _ => return None,
            },
            bytes: bytes.parse().ok()?,
            rank: rank.into(),
            formula: formula.into(),
            values: values.into(),
            source: source.into(),
            phases,
        })
    }
}

/// Items and a warning as one line, read back by [`items_from_line`].
pub fn items_to_line(items: &[Item], warning: Option<&Warning>) -> String {
    let mut out: Vec<String> = vec![match warning {
        Some(w) => format!("W{}{FS}{}{FS}{}", w.key, w.value, w.message),
        None => "-".into(),
    }];
    out.extend(items.iter().map(Item::to_text));
    out.join(&IS.to_string())
}

/// The items and the warning of [`items_to_line`]'s line (`None` where it is not one).
pub fn items_from_line(line: &str) -> Option<(Vec<Item>, Option<Warning>)> {
    let mut parts = line.split(IS);
    let warning = match parts.next()? {
        "-" => None,
        w => {
            let mut f = w.strip_prefix('W')?.split(FS);
            Some(Warning {
                key: f.next()?.into(),
                value: f.next()?.into(),
                message: f.next()?.into(),
            })
        }
    };
    let items = parts.map(Item::from_text).collect::<Option<Vec<Item>>>()?;
    Some((items, warning))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mechs_are_in_declaration_order() {
        for (i, m) in MECHS.iter().enumerate() {
            assert_eq!(*m as usize, i, "{m:?}");
        }
        assert_eq!(Mech::MegatronActivations as usize + 1, MECHS.len());
    }
}
