//! The gate's sampled attribution (`--sample`): for a regressed stage
//! sampled on both sides, each side's runs pooled into one record, and the
//! functions whose share of the running samples moved named as `compare`
//! names them. Attribution, never gating: its rank test takes every
//! counted trial of a side as a sample of a function's share, as
//! `compare`'s does, where the verdict counts couples of runs.

use super::Side;
use crate::compare::Run;
use crate::rundir::samples::{FunctionShare, SampledRecord, Share};
use crate::stats;
use std::collections::BTreeMap;

/// `side`'s runs' records of `stage` as one, or None unless every run of
/// that side sampled it. A function's shares are its shares in every
/// counted trial of every run, for the functions every run's record lists
/// (one missing from a run's list held too little there to be named).
/// Running samples and lanes per trial are the medians of the runs' own.
/// The merged stacks and the spans' insides are left empty: the
/// comparison reads neither.
pub fn pooled(runs: &[(Side, &Run)], side: Side, stage: &str) -> Option<SampledRecord> {
    let records = runs
        .iter()
        .filter(|(s, _)| *s == side)
        .map(|(_, r)| r.sampled.get(stage))
        .collect::<Option<Vec<&SampledRecord>>>()?;
    let first = records.first()?;
    let mut functions = Vec::new();
    for (k, f) in first.functions.iter().enumerate() {
        let listed: Option<Vec<&FunctionShare>> = records
            .iter()
            .map(|r| r.functions.iter().find(|g| g.lane == f.lane && g.function == f.function))
            .collect();
        let Some(listed) = listed else { continue };
        let trials = |pick: fn(&FunctionShare) -> &Share| -> Vec<f64> {
            listed.iter().flat_map(|g| pick(g).trials.iter().copied()).collect()
        };
        functions.push(FunctionShare {
            lane: f.lane.clone(),
            function: f.function.clone(),
            inclusive: Share::of(trials(|g| &g.inclusive), 2 * k as u64),
            own: Share::of(trials(|g| &g.own), 2 * k as u64 + 1),
        });
    }
    let mut lanes: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for (lane, n) in records.iter().flat_map(|r| &r.lanes) {
        lanes.entry(lane.clone()).or_default().push(*n);
    }
    let samples: Vec<f64> = records.iter().map(|r| r.samples).collect();
    Some(SampledRecord {
        sampler: first.sampler.clone(),
        rate_hz: first.rate_hz,
        trials: records.iter().map(|r| r.trials).sum(),
        samples: stats::median(&samples),
        lanes: lanes.into_iter().map(|(l, xs)| (l, stats::median(&xs))).collect(),
        functions,
        stacks: BTreeMap::new(),
        inside: Vec::new(),
        programs: first.programs,
    })
}

/// What `compare` says of `stage`'s sampled functions, base's runs pooled
/// against head's; None unless every run of both sides sampled it.
pub fn changed(runs: &[(Side, &Run)], stage: &str) -> Option<String> {
    let base = pooled(runs, Side::Base, stage)?;
    let head = pooled(runs, Side::Head, stage)?;
    Some(crate::compare::sampled::changed(&base, &head))
}
