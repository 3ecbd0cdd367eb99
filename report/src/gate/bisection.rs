//! bisect's judgements made as the gate makes them (issue 76): its
//! endpoints, each probe against both endpoints and the boundary side by
//! side, each from pairs of trials that ran beside each other (see
//! [`super::couple`]), never from each side's pooled samples. A neighbour
//! that slows one run and spares the next then moves a pair's two trials
//! alike, or makes its couples disagree (not sure), rather than reading as
//! a regression.
//!
//! Unlike the gate, bisect counts each pair as a unit ([`Unit::Pair`]): a
//! probe runs two to four windows, and so few couples cannot reach its 99%
//! (the sign test needs eight). Pairs of one couple are not independent
//! where a neighbour slows a whole run, so its intervals can be narrower
//! than they say; docs/ci.md names this.

use super::{Side, Unit, confidence, couple_ratios, couples, judge, spread};
use crate::bisect::{Classified, PROBE_ALPHA};
use crate::compare::Run;
use crate::rundir::bisect::{Endpoints, ProbeVerdict};
use crate::rundir::gate::{Judged, Verdict};
use crate::stats::{Interval, IntervalMethod};

/// The endpoints' runs in the order they ran (good as base, bad as head:
/// good, bad, bad, good, …) judged for every stage's `figure` (a pattern
/// expands) at a level corrected for the figures and the `looks` the
/// bisection may take: the regressed row with the largest ratio, else the
/// row with the largest ratio. None when no stage records the figure.
pub fn endpoints(
    runs: &[(Side, &Run)],
    figure: &str,
    threshold_pct: f64,
    looks: usize,
) -> Option<Endpoints> {
    let (_, first) = runs.first()?;
    let named = crate::bisect::stages_with(first, figure);
    let level = confidence(named.len(), looks);
    let mut judged: Vec<Judged> = named
        .iter()
        .filter_map(|(s, f)| judge(s, f, &couples(runs, s, f), Unit::Pair, level, threshold_pct))
        .collect();
    judged.sort_by(|a, b| {
        let key = |j: &Judged| (j.verdict == Verdict::Regressed, j.ratio);
        key(a).partial_cmp(&key(b)).unwrap_or(std::cmp::Ordering::Equal)
    });
    judged.pop().map(|j| endpoints_of(&j))
}

/// A judged figure as bisect's endpoints: regressed only when the gate
/// would say so; `unsure` carries why it would not be sure.
fn endpoints_of(j: &Judged) -> Endpoints {
    Endpoints {
        stage: j.stage.clone(),
        figure: j.figure.clone(),
        median_good: j.base_median,
        median_bad: j.head_median,
        ratio: j.ratio,
        interval: Interval {
            low: j.low,
            high: j.high,
            coverage: j.confidence,
            method: IntervalMethod::PairedWalsh,
            n: u64::from(j.pairs),
        },
        p: j.p,
        regressed: j.verdict == Verdict::Regressed,
        unsure: (j.verdict == Verdict::NotSure).then(|| j.reason.clone()).flatten(),
    }
}

/// A probe against both endpoints, from the couples of its windows: good
/// and probe (`good_probe`, good as base) and probe and bad (`probe_bad`,
/// probe as base), each couple two runs that ran one after the other. Bad
/// when the probe regressed against good at 1 − [`PROBE_ALPHA`] and bad
/// did not against it; good when bad regressed against it and it did not
/// against good; neither while either side's couples disagree (the
/// machine moved the pairs) or too few pairs say nothing.
pub fn classify(
    good_probe: &[Vec<(f64, f64)>],
    probe_bad: &[Vec<(f64, f64)>],
    threshold_pct: f64,
) -> Classified {
    let level = 1.0 - PROBE_ALPHA;
    let against_good = judge("", "", good_probe, Unit::Pair, level, threshold_pct);
    let bad_against = judge("", "", probe_bad, Unit::Pair, level, threshold_pct);
    let (Some(ag), Some(ba)) = (against_good, bad_against) else {
        return Classified { verdict: None, p_good: 1.0, p_bad: 1.0 };
    };
    let moved = |c: &[Vec<(f64, f64)>]| {
        spread(&couple_ratios(c)).is_some_and(|s| s > 4.0 * (1.0 + threshold_pct / 100.0).ln())
    };
    let regressed = |j: &Judged| j.verdict == Verdict::Regressed;
    let verdict = if regressed(&ag) && !regressed(&ba) && !moved(probe_bad) {
        Some(ProbeVerdict::Bad)
    } else if regressed(&ba) && !regressed(&ag) && !moved(good_probe) {
        Some(ProbeVerdict::Good)
    } else {
        None
    };
    Classified { verdict, p_good: ag.p, p_bad: ba.p }
}

/// The boundary side by side (lower as base, upper as head; lower, upper,
/// upper, lower): whether upper regressed against lower at 1 −
/// [`PROBE_ALPHA`], and the pairs' p.
pub fn boundary_holds(couples: &[Vec<(f64, f64)>], threshold_pct: f64) -> (bool, f64) {
    match judge("", "", couples, Unit::Pair, 1.0 - PROBE_ALPHA, threshold_pct) {
        Some(j) => (j.verdict == Verdict::Regressed, j.p),
        None => (false, 1.0),
    }
}
