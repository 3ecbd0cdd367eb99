//! The gate's stacks, head against base, for its page's differential
//! flame graphs: per stage, each side's runs pooled. Spans: each stack's
//! self time in every counted trial of a side, tested as `compare` tests
//! a stack (`compare::stacks`: rank test and interval of the ratio of
//! medians, beyond the threshold). Sampled stacks: each side's stacks per
//! trial, the mean over its trials, a stack coloured where `compare`'s
//! test of shares named the function on top of it. A drawing to read the
//! change by, never a verdict: the verdicts are the couples'.

use super::Side;
use crate::compare::Run;
use crate::render::folded::Stacks;
use crate::rundir::gate::{DiffStack, StackChange, StacksOf, StageStacks};
use crate::stats::Verdict;
use std::collections::{BTreeMap, BTreeSet};

/// Every stage's stacks, spans then sampled: those drawn from nested spans
/// in every run, and those sampled in every run.
pub fn compared(runs: &[(Side, &Run)], threshold_pct: f64) -> Vec<StageStacks> {
    let mut out = Vec::new();
    let stages: BTreeSet<&String> =
        runs.iter().flat_map(|(_, r)| r.spans.iter().map(|s| &s.stage)).collect();
    for stage in stages {
        let (Some(base), Some(head)) =
            (spans(runs, Side::Base, stage), spans(runs, Side::Head, stage))
        else {
            continue;
        };
        let rows = crate::compare::stacks::stacks(&base, &head, threshold_pct);
        let us = |s: f64| (s.max(0.0) * 1e6).round() as u64;
        out.push(StageStacks {
            stage: stage.clone(),
            of: StacksOf::Spans,
            base_trials: base.measurements as u32,
            head_trials: head.measurements as u32,
            stacks: rows
                .iter()
                .map(|r| DiffStack {
                    frames: r.stack.clone(),
                    base_us: us(r.row.median_a),
                    head_us: us(r.row.median_b),
                    change: r.changed(threshold_pct).map(|v| match v {
                        Verdict::Slower => StackChange::Slower,
                        _ => StackChange::Faster,
                    }),
                })
                .collect(),
        });
    }
    let sampled: BTreeSet<&String> = runs.iter().flat_map(|(_, r)| r.sampled.keys()).collect();
    for stage in sampled {
        if let Some(s) = sampled_stacks(runs, stage) {
            out.push(s);
        }
    }
    out
}

/// `side`'s runs' span stacks of `stage` as one: each stack's self time
/// in every counted trial of every run (0 in a run without it); None
/// unless every run of the side drew the stage from nested spans.
fn spans(runs: &[(Side, &Run)], side: Side, stage: &str) -> Option<Stacks> {
    let each: Vec<&Stacks> = runs
        .iter()
        .filter(|(s, _)| *s == side)
        .map(|(_, r)| r.spans.iter().find(|s| s.stage == stage))
        .collect::<Option<_>>()?;
    let keys: BTreeSet<&Vec<String>> = each.iter().flat_map(|s| s.samples.keys()).collect();
    let samples: BTreeMap<Vec<String>, Vec<f64>> = keys
        .into_iter()
        .map(|k| {
            let xs = each
                .iter()
                .flat_map(|s| match s.samples.get(k) {
                    Some(xs) => xs.clone(),
                    None => vec![0.0; s.measurements as usize],
                })
                .collect();
            (k.clone(), xs)
        })
        .collect();
    Some(Stacks {
        stage: stage.to_string(),
        frames: BTreeMap::new(),
        samples,
        nested: true,
        measurements: each.iter().map(|s| s.measurements).sum(),
        calls_drawn: each.iter().map(|s| s.calls_drawn).sum(),
        calls: each.iter().map(|s| s.calls).sum(),
    })
}

/// A stage's sampled stacks, head against base, each side's mean per
/// trial over its runs' trials; None unless every run of both sides
/// sampled it.
fn sampled_stacks(runs: &[(Side, &Run)], stage: &str) -> Option<StageStacks> {
    let base = super::sampled::pooled(runs, Side::Base, stage)?;
    let head = super::sampled::pooled(runs, Side::Head, stage)?;
    let named = crate::compare::sampled::judged(&base, &head).functions;
    let per_trial = |side: Side| -> Option<BTreeMap<String, f64>> {
        let mut sum: BTreeMap<String, f64> = BTreeMap::new();
        let mut trials = 0.0;
        for (_, r) in runs.iter().filter(|(s, _)| *s == side) {
            let x = r.sampled.get(stage)?;
            let n = f64::from(x.trials);
            for (stack, per) in &x.stacks {
                *sum.entry(stack.clone()).or_default() += per * n;
            }
            trials += n;
        }
        Some(sum.into_iter().map(|(k, v)| (k, v / trials.max(1.0))).collect())
    };
    let (b, h) = (per_trial(Side::Base)?, per_trial(Side::Head)?);
    let rate = f64::from(base.rate_hz.max(1));
    let us = |samples: Option<&f64>| (samples.copied().unwrap_or(0.0) * 1e6 / rate).round() as u64;
    let keys: BTreeSet<&String> = b.keys().chain(h.keys()).collect();
    let stacks = keys
        .into_iter()
        .map(|k| {
            let frames: Vec<String> = k.split(';').map(str::to_string).collect();
            let (base_us, head_us) = (us(b.get(k)), us(h.get(k)));
            // Coloured where the function on top was found to have moved.
            let top = (frames.first(), frames.last());
            let moved = named.iter().any(|(lane, f)| top == (Some(lane), Some(f)));
            let change = match (moved, head_us.cmp(&base_us)) {
                (true, std::cmp::Ordering::Greater) => Some(StackChange::Slower),
                (true, std::cmp::Ordering::Less) => Some(StackChange::Faster),
                _ => None,
            };
            DiffStack { frames, base_us, head_us, change }
        })
        .collect();
    Some(StageStacks {
        stage: stage.to_string(),
        of: StacksOf::Sampled,
        base_trials: base.trials,
        head_trials: head.trials,
        stacks,
    })
}
