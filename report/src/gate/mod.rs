//! `coordinator gate`'s judgement: head against base from runs made in
//! interleaved windows (base, head, head, base; then head, base, base,
//! head), each figure judged from couples of runs, never from each side's
//! pooled samples.
//!
//! Couples: the runs are taken two by two in the order they ran (each
//! window's base and head beside each other). A couple is the unit: a
//! neighbour that takes a core for a second slows every trial of one run
//! and spares the next, so the trials of one couple are not independent
//! evidence, and counting each of them would count one event of the
//! machine's several times. A couple's ratio is head's lowest trial over
//! base's lowest (a shared machine only ever adds time, so a run's
//! least-disturbed trial is its best account of the work), and the
//! couples' ratios are judged by the sign test (`stats::sign`): their
//! median, with its exact interval at a level corrected for the figures
//! gated and for the windows it may look at (Bonferroni: 1 − 0.05 /
//! (figures × looks)): a gate that stops as soon as it can decide must not
//! turn each look into another chance of a false alarm.
//!
//! Within a couple the trials are also paired, mirrored around the moment
//! one run ended and the other began (the last trial of the first with the
//! first of the second, and so on): bisect's probes, which run too few
//! windows for couples to decide at their level, still judge those pairs
//! as units (`stats::paired`, [`Unit::Pair`]).
//!
//! A figure is
//! - `regressed` when its interval lies above 1 and its ratio above 1 +
//!   the threshold;
//! - `improved` when below 1 and 1 − the threshold;
//! - `same` when its interval lies inside ± the threshold;
//! - `not sure` otherwise, or with fewer than [`stats::FEWEST_PAIRS`]
//!   units, or too few for an interval at the corrected level, or when the
//!   machine moved the couples' own ratios: their interquartile range
//!   exceeds four times the threshold.
//!
//! The coordinator checks commits out, builds and runs them; this module
//! never spawns a process.

pub mod bisection;
pub mod sampled;
pub mod stacks;

use crate::bisect;
use crate::compare::Run;
use crate::rundir::gate::{Judged, SampledChange, Verdict};
use crate::stats;

/// Which commit a run measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Base,
    Head,
}

impl Side {
    pub fn word(self) -> &'static str {
        match self {
            Side::Base => "base",
            Side::Head => "head",
        }
    }
}

/// The order of window `w` (from 0): base, head, head, base, then the
/// reverse, so that neither side always runs first.
pub fn order(w: usize) -> [Side; 4] {
    use Side::{Base, Head};
    if w % 2 == 0 { [Base, Head, Head, Base] } else { [Head, Base, Base, Head] }
}

/// The level each gated figure's interval holds at, for `figures` gated
/// and judged at up to `looks` windows' ends: Bonferroni over both, so
/// neither ten gated stages nor five looks at the same figure give ten or
/// five chances of a false alarm.
pub fn confidence(figures: usize, looks: usize) -> f64 {
    1.0 - 0.05 / (figures.max(1) * looks.max(1)) as f64
}

/// The pairs of `figure` for `stage`, as (base, head) samples, grouped by
/// couple of runs: the runs taken two by two in the order they ran, a
/// couple's trials mirrored around its middle.
pub fn couples(runs: &[(Side, &Run)], stage: &str, figure: &str) -> Vec<Vec<(f64, f64)>> {
    runs.chunks_exact(2)
        .map(|two| couple(two[0], two[1], stage, figure))
        .filter(|pairs| !pairs.is_empty())
        .collect()
}

/// The pairs of two runs of either side that ran one after the other, as
/// (base, head): the last trial of the first with the first of the
/// second, and so on, mirrored around the moment one ended and the other
/// began. None for two runs of one side.
pub fn couple(
    (s1, r1): (Side, &Run),
    (s2, r2): (Side, &Run),
    stage: &str,
    figure: &str,
) -> Vec<(f64, f64)> {
    if s1 == s2 {
        return Vec::new();
    }
    let (first, second) = (bisect::samples(r1, stage, figure), bisect::samples(r2, stage, figure));
    first
        .iter()
        .rev()
        .zip(&second)
        .map(|(x, y)| if s1 == Side::Base { (*x, *y) } else { (*y, *x) })
        .collect()
}

/// What one unit of evidence is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// A couple of runs, its lowest trials' ratio (the gate).
    Couple,
    /// A pair of trials (bisect's endpoints, probes and boundary).
    Pair,
}

/// A couple's ratio head / base as a log: head's lowest sample over base's
/// lowest. None without a positive, finite sample on a side.
pub fn couple_ratio(pairs: &[(f64, f64)]) -> Option<f64> {
    let lowest = |xs: &mut dyn Iterator<Item = f64>| {
        xs.filter(|x| x.is_finite() && *x > 0.0).min_by(f64::total_cmp)
    };
    let base = lowest(&mut pairs.iter().map(|p| p.0))?;
    let head = lowest(&mut pairs.iter().map(|p| p.1))?;
    Some((head / base).ln())
}

/// One figure judged from its couples at `confidence`, with `threshold_pct`,
/// each couple (the gate's) or each pair (bisect's) one unit.
pub fn judge(
    stage: &str,
    figure: &str,
    couples: &[Vec<(f64, f64)>],
    unit: Unit,
    confidence: f64,
    threshold_pct: f64,
) -> Option<Judged> {
    let pairs: Vec<(f64, f64)> = couples.iter().flatten().copied().collect();
    let ratios = couple_ratios(couples);
    let (s, units) = match unit {
        Unit::Couple => (stats::sign(&ratios, confidence)?, "couple(s) of runs"),
        Unit::Pair => (stats::paired(&pairs, confidence)?, "pair(s)"),
    };
    let t = threshold_pct / 100.0;
    let (base, head): (Vec<f64>, Vec<f64>) = pairs.iter().copied().unzip();
    let spread = spread(&ratios);
    let (verdict, reason) = if s.n < stats::FEWEST_PAIRS {
        (Verdict::NotSure, Some(format!("{} {units}: too few to judge", s.n)))
    } else if s.confidence + 1e-9 < confidence {
        // Too few units for the level asked: even their whole range (of
        // couples, or of the pairs' Walsh averages) covers less, and would
        // decide at a weaker level.
        (
            Verdict::NotSure,
            Some(format!(
                "{} {units} cannot give an interval at {}: too few for the corrected level",
                s.n,
                stats::coverage_pct(confidence)
            )),
        )
    } else if let Some(spread) = spread.filter(|x| *x > 4.0 * (1.0 + t).ln()) {
        let pct = (spread.exp() - 1.0) * 100.0;
        (
            Verdict::NotSure,
            Some(format!(
                "the machine moved the couples' own ratio: it spread by {pct:.0}% between couples of runs, over four times the threshold"
            )),
        )
    } else if s.low > 1.0 && s.ratio > 1.0 + t {
        (Verdict::Regressed, None)
    } else if s.high < 1.0 && s.ratio < 1.0 - t {
        (Verdict::Improved, None)
    } else if s.low >= 1.0 - t && s.high <= 1.0 + t {
        (Verdict::Same, None)
    } else {
        (
            Verdict::NotSure,
            Some(format!(
                "its interval ×{:.3}–×{:.3} reaches past ±{threshold_pct}%",
                s.low, s.high
            )),
        )
    };
    Some(Judged {
        stage: stage.into(),
        figure: figure.into(),
        base_median: stats::median(&base),
        head_median: stats::median(&head),
        ratio: s.ratio,
        low: s.low,
        high: s.high,
        confidence: s.confidence,
        p: s.p,
        pairs: pairs.len() as u32,
        couples: if unit == Unit::Couple { s.n as u32 } else { 0 },
        verdict,
        reason,
    })
}

/// Each couple's own log-ratio ([`couple_ratio`]), the couples without one
/// left out.
pub(crate) fn couple_ratios(couples: &[Vec<(f64, f64)>]) -> Vec<f64> {
    couples.iter().filter_map(|c| couple_ratio(c)).collect()
}

/// The interquartile range of the couples' own log-ratios
/// ([`couple_ratios`]), with four couples or more.
pub(crate) fn spread(ratios: &[f64]) -> Option<f64> {
    if ratios.len() < 4 {
        return None;
    }
    let mut own = ratios.to_vec();
    own.sort_by(f64::total_cmp);
    Some(stats::quantile_sorted(&own, 0.75) - stats::quantile_sorted(&own, 0.25))
}

/// The gate's answer over its gated figures: regressed if any is, else
/// not sure if any is (or none could be judged), else improved if any is,
/// else same.
pub fn overall(gated: &[Judged]) -> Verdict {
    let any = |v: Verdict| gated.iter().any(|j| j.verdict == v);
    if any(Verdict::Regressed) {
        Verdict::Regressed
    } else if gated.is_empty() || any(Verdict::NotSure) {
        Verdict::NotSure
    } else if any(Verdict::Improved) {
        Verdict::Improved
    } else {
        Verdict::Same
    }
}

/// The median of `figure` for `stage` over the runs of `side` among `runs`.
pub fn median(runs: &[(Side, &Run)], side: Side, stage: &str, figure: &str) -> Option<f64> {
    let xs: Vec<f64> = runs
        .iter()
        .filter(|(s, _)| *s == side)
        .flat_map(|(_, r)| bisect::samples(r, stage, figure))
        .collect();
    (!xs.is_empty()).then(|| stats::median(&xs))
}

/// Why a gate's runs cannot be judged.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum GateError {
    #[error("no run to judge")]
    NoRuns,
    /// A `--gate` figure (as given) that no stage recorded a sample of.
    #[error("--gate {0}: the runs record no such figure in any stage")]
    NoSuchFigure(String),
}

/// What a gate found, figure by figure.
pub struct Found {
    pub gated: Vec<Judged>,
    pub others: Vec<Judged>,
    pub attribution: Vec<Judged>,
    pub sampled: Vec<SampledChange>,
    pub verdict: Verdict,
}

/// Every figure `gates` names (patterns expand over the stages both sides
/// record; `wall_s` is each stage's) judged, the other figures both
/// record judged alike for the details, and for each regressed stage the
/// span whose time changed most and, where both sides sampled it, the
/// functions whose share moved ([`sampled`]). Err names a gate no stage
/// records.
pub fn found(
    runs: &[(Side, &Run)],
    gates: &[String],
    threshold_pct: f64,
    looks: usize,
) -> Result<Found, GateError> {
    let Some((_, first)) = runs.first() else { return Err(GateError::NoRuns) };
    let mut named = Vec::new();
    for g in gates {
        let got = bisect::stages_with(first, g);
        if got.is_empty() {
            return Err(GateError::NoSuchFigure(g.clone()));
        }
        named.extend(got);
    }
    let level = confidence(named.len(), looks);
    let judged = |stage: &str, figure: &str, level: f64| {
        judge(stage, figure, &couples(runs, stage, figure), Unit::Couple, level, threshold_pct)
    };
    let gated: Vec<Judged> = named.iter().filter_map(|(s, f)| judged(s, f, level)).collect();
    // A gate whose figure no stage recorded a sample of is refused too.
    for g in gates {
        if !gated.iter().any(|j| crate::compare::matches(g, &j.figure)) {
            return Err(GateError::NoSuchFigure(g.clone()));
        }
    }
    let mut others = Vec::new();
    let mut attribution = Vec::new();
    for (stage, figure) in bisect::stages_with(first, "*") {
        if named.iter().any(|(s, f)| *s == stage && *f == figure) {
            continue;
        }
        let Some(j) = judged(&stage, &figure, 0.95) else { continue };
        others.push(j);
    }
    for g in gated.iter().filter(|j| j.verdict == Verdict::Regressed) {
        // A span's own time (`span:NAME_s`, not its median, p95, CPU or
        // calls), other than the gated figure itself, that changed
        // significantly.
        let own_time = |f: &str| {
            f.strip_prefix("span:").and_then(|n| n.strip_suffix("_s")).is_some_and(|n| {
                !n.ends_with("_median") && !n.ends_with("_p95") && !n.ends_with("_cpu")
            })
        };
        let spans = others
            .iter()
            .filter(|j| j.stage == g.stage && own_time(&j.figure) && (j.low > 1.0 || j.high < 1.0));
        let most = spans.max_by(|a, b| a.ratio.ln().abs().total_cmp(&b.ratio.ln().abs()));
        if let Some(m) = most.filter(|m| {
            !attribution.iter().any(|a: &Judged| a.figure == m.figure && a.stage == m.stage)
        }) {
            attribution.push(m.clone());
        }
    }
    // With `--sample`: the functions whose share moved, per regressed stage.
    let mut sampled: Vec<SampledChange> = Vec::new();
    for g in gated.iter().filter(|j| j.verdict == Verdict::Regressed) {
        if sampled.iter().any(|c| c.stage == g.stage) {
            continue;
        }
        if let Some(sentence) = sampled::changed(runs, &g.stage) {
            sampled.push(SampledChange { stage: g.stage.clone(), sentence });
        }
    }
    let verdict = overall(&gated);
    Ok(Found { gated, others, attribution, sampled, verdict })
}

#[cfg(test)]
mod tests;
