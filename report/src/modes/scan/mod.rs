//! A parameter scan (`--param NAME=...`): one stage per value, and the
//! recommendation computed from them; a workers sweep's counts are judged
//! by the same rule. Its table and plot are [`view`].
//!
//! The rule: find the value with the lowest median wall; among the values
//! the compare test does not call slower than it (rank test p < α and the
//! ratio's interval above 1), recommend the one with the lowest median tree
//! peak. When no value differs from the first, say so and recommend the
//! cheapest; when the trials are too few for the rank test to ever reach
//! p < α, say so and give the trials needed. Nothing here is hard-coded to
//! a value: every word of the sentence comes from the samples.

use crate::fmt;
use crate::stats::{self, ALPHA, Interval, Verdict};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What a scan adds to a trials report.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Scan {
    /// The scanned names, in the order given.
    pub names: Vec<String>,
    /// The seed each round's shuffled order was drawn from (absent for a
    /// workers sweep, whose rounds alternate their order instead).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order_seed: Option<u64>,
    /// One point per value (per grid point), in the order given; the first
    /// is what every speedup is against.
    pub points: Vec<ScanPoint>,
    pub recommendation: Recommendation,
    /// What a sample is when not a trial: `round` (a cold-prep scan, whose
    /// values each ran once a round).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample: Option<String>,
}

impl Scan {
    /// What a sample is: `trial`, or what [`Scan::sample`] says.
    pub fn sample(&self) -> &str {
        self.sample.as_deref().unwrap_or("trial")
    }
}

/// One value of a scan: its stage and figures over the counted trials.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ScanPoint {
    /// The stage key (`trial[workers=4]`).
    pub stage: String,
    /// Each scanned name with its value (hyperfine's field name).
    pub parameters: BTreeMap<String, String>,
    /// Counted trials.
    pub n: u32,
    pub wall_median_s: f64,
    pub wall_interval: Interval,
    pub cpu_median_s: f64,
    /// The median over trials of the tree's peak memory.
    pub tree_peak_bytes: u64,
    /// How the tree's peak was found: `cgroup` or `sampled`.
    pub tree_peak_method: String,
    /// Per span the command reported (`--span`, the helper): the median
    /// over trials of its seconds in a trial.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub spans_s: BTreeMap<String, f64>,
    /// With `--span preset:torch` or `preset:keras`: the median over trials
    /// of the fraction of step time spent waiting for the loader.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_wait_fraction: Option<f64>,
    /// The first value's median wall over this one's.
    pub speedup: f64,
    /// That ratio's interval (absent for the first value).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speedup_interval: Option<Interval>,
    /// The rank test against the first value, and the compare verdict
    /// (absent for the first value).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p_vs_first: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vs_first: Option<Verdict>,
    /// The rank test against the fastest value, and the verdict (absent for
    /// the fastest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p_vs_fastest: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vs_fastest: Option<Verdict>,
}

impl ScanPoint {
    /// "workers=4" (grid points: "workers=4,batch=8"), in the names' order.
    pub fn label(&self, names: &[String]) -> String {
        let parts: Vec<String> =
            names.iter().map(|n| format!("{n}={}", self.parameters[n])).collect();
        parts.join(",")
    }
}

/// What the scan recommends.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Recommendation {
    pub outcome: Outcome,
    /// The recommended value's stage (absent when the trials are too few).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<String>,
    /// The value with the lowest median wall.
    pub fastest: String,
    /// With too few trials: how many a value would let the test decide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trials_needed: Option<u32>,
    /// The recommendation in one sentence.
    pub sentence: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Some value differs from the first: the fastest, or the cheapest
    /// value not slower than it.
    Recommended,
    /// No value differs significantly from the first: the cheapest.
    NoDifference,
    /// Too few trials for the rank test to tell any two values apart.
    TooFewTrials,
}

/// One value's counted trials, as measured.
pub struct Measured {
    pub stage: String,
    pub parameters: BTreeMap<String, String>,
    pub walls: Vec<f64>,
    pub cpus: Vec<f64>,
    pub tree_peaks: Vec<f64>,
    pub tree_peak_method: String,
    /// Per span name, its seconds in each trial.
    pub spans: BTreeMap<String, Vec<f64>>,
    /// The input-wait fraction of each trial, where the stage has one.
    pub input_wait: Vec<f64>,
}

/// The scan over `measured` (in the order given, at least one value);
/// `repeats` is the flag that gives more samples (`--trials`, `--rounds`).
pub fn scan(
    names: Vec<String>,
    order_seed: Option<u64>,
    measured: &[Measured],
    repeats: &str,
) -> Scan {
    let median = |xs: &[f64]| stats::median(xs);
    let fastest = (0..measured.len())
        .min_by(|&a, &b| median(&measured[a].walls).total_cmp(&median(&measured[b].walls)))
        .unwrap_or(0);
    let first = &measured[0];
    let points: Vec<ScanPoint> = measured
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let wall = stats::summarize(&m.walls, i as u64);
            let against = |other: &Measured| {
                let p = stats::mann_whitney_p(&other.walls, &m.walls);
                let ci = stats::ratio_of_medians_interval(&other.walls, &m.walls, i as u64);
                (p, stats::verdict(&other.walls, &m.walls, p, ci.bounds()))
            };
            let (p_first, v_first) = against(first);
            let (p_fast, v_fast) = against(&measured[fastest]);
            ScanPoint {
                stage: m.stage.clone(),
                parameters: m.parameters.clone(),
                n: m.walls.len() as u32,
                wall_median_s: wall.median,
                wall_interval: wall.median_interval,
                cpu_median_s: median(&m.cpus),
                tree_peak_bytes: median(&m.tree_peaks) as u64,
                tree_peak_method: m.tree_peak_method.clone(),
                spans_s: m.spans.iter().map(|(k, xs)| (k.clone(), median(xs))).collect(),
                input_wait_fraction: (!m.input_wait.is_empty()).then(|| median(&m.input_wait)),
                speedup: median(&first.walls) / wall.median,
                speedup_interval: (i > 0)
                    .then(|| stats::ratio_of_medians_interval(&m.walls, &first.walls, i as u64)),
                p_vs_first: (i > 0).then_some(p_first),
                vs_first: (i > 0).then_some(v_first),
                p_vs_fastest: (i != fastest).then_some(p_fast),
                vs_fastest: (i != fastest).then_some(v_fast),
            }
        })
        .collect();
    let recommendation = recommend(&names, &points, measured, fastest, repeats);
    let sample = match repeats {
        "--trials" => None,
        other => Some(other.trim_start_matches("--").trim_end_matches('s').to_string()),
    };
    Scan { names, order_seed, points, recommendation, sample }
}

/// Tree peaks within this fraction (and [`SAME_PEAK_BYTES`]) of the lowest
/// count as equal: a sampled peak, or a page cache's share, moves by that
/// much between trials of the same program.
pub const SAME_PEAK_FRACTION: f64 = 0.02;
pub const SAME_PEAK_BYTES: u64 = 1 << 20;

/// The cheapest of `among` by median tree peak: the earliest of those
/// within [`SAME_PEAK_FRACTION`] plus [`SAME_PEAK_BYTES`] of the lowest.
fn cheapest(points: &[ScanPoint], among: impl Iterator<Item = usize>) -> Option<usize> {
    let among: Vec<usize> = among.collect();
    let low = among.iter().map(|&i| points[i].tree_peak_bytes).min()?;
    let near = low + SAME_PEAK_BYTES + (low as f64 * SAME_PEAK_FRACTION) as u64;
    among.into_iter().find(|&i| points[i].tree_peak_bytes <= near)
}

fn recommend(
    names: &[String],
    points: &[ScanPoint],
    measured: &[Measured],
    fastest: usize,
    repeats: &str,
) -> Recommendation {
    let label = |i: usize| points[i].label(names);
    let fastest_label = label(fastest);
    let n = points.iter().map(|p| p.n as usize).min().unwrap_or(0);
    let needed = stats::fewest_to_judge();
    if points.len() < 2 || n < needed {
        let sentence = match points.len() < 2 {
            true => "one value: nothing to compare it with".to_string(),
            false => format!(
                "too few {} to tell: {n} counted per value, and the rank test needs {needed} a value to call any difference at p < {ALPHA}; run {repeats} {needed} or more",
                repeats.trim_start_matches("--")
            ),
        };
        return Recommendation {
            outcome: Outcome::TooFewTrials,
            stage: None,
            fastest: fastest_label,
            trials_needed: (points.len() >= 2).then_some(needed as u32),
            sentence,
        };
    }
    let differs = |v: Option<Verdict>| matches!(v, Some(Verdict::Faster | Verdict::Slower));
    if !points.iter().any(|p| differs(p.vs_first)) {
        let chosen = cheapest(points, 0..points.len()).unwrap_or(0);
        let ps: Vec<String> =
            points[1..].iter().map(|p| fmt::p_value(p.p_vs_first.unwrap_or(f64::NAN))).collect();
        let sentence = format!(
            "no value differs significantly from {} (p = {}): {} is recommended, the cheapest at {} of tree peak",
            label(0),
            ps.join(", "),
            label(chosen),
            fmt::mib(points[chosen].tree_peak_bytes)
        );
        return Recommendation {
            outcome: Outcome::NoDifference,
            stage: Some(points[chosen].stage.clone()),
            fastest: fastest_label,
            trials_needed: None,
            sentence,
        };
    }
    let not_slower = (0..points.len()).filter(|&i| points[i].vs_fastest != Some(Verdict::Slower));
    let chosen = cheapest(points, not_slower).unwrap_or(fastest);
    let c = &points[chosen];
    let mut sentence = match (chosen, &c.speedup_interval) {
        (0, _) | (_, None) => {
            format!(
                "{}, the first value: no other value is significantly faster, and none as fast costs less tree peak",
                label(0)
            )
        }
        (_, Some(interval)) => format!(
            "{}: {:.2}× {} {} ({})",
            label(chosen),
            if c.speedup >= 1.0 { c.speedup } else { 1.0 / c.speedup },
            if c.speedup >= 1.0 { "faster than" } else { "slower than" },
            label(0),
            interval.phrase(|x| format!("{x:.2}"))
        ),
    };
    // The others against the chosen value: no faster at a cost, faster, or slower.
    let mut groups: [Vec<Other>; 3] = Default::default();
    for (j, p) in points.iter().enumerate().filter(|&(j, _)| j != chosen && j != 0) {
        let (a, b) = (&measured[chosen].walls, &measured[j].walls);
        let pv = stats::mann_whitney_p(a, b);
        let ci = stats::ratio_of_medians_interval(a, b, 0);
        let group = match stats::verdict(a, b, pv, ci.bounds()) {
            Verdict::Faster => 1,
            Verdict::Slower => 2,
            _ => 0,
        };
        groups[group].push(Other {
            label: label(j),
            p: fmt::p_value(pv),
            cost: fmt::bytes_delta(p.tree_peak_bytes as i64 - c.tree_peak_bytes as i64),
            ratio: format!("×{:.2}", p.wall_median_s / c.wall_median_s),
        });
    }
    for (group, others) in groups.iter().enumerate().filter(|(_, o)| !o.is_empty()) {
        let one = others.len() == 1;
        let labels = and_list(&others.iter().map(|o| o.label.clone()).collect::<Vec<_>>());
        let ps = others.iter().map(|o| o.p.as_str()).collect::<Vec<_>>().join(", ");
        let be = if one { "is" } else { "are" };
        sentence.push_str(&match group {
            0 => format!(
                "; {labels} {be} no faster (p = {ps}) and {} {} of tree peak",
                if one { "costs" } else { "cost" },
                and_list(&others.iter().map(|o| o.cost.clone()).collect::<Vec<_>>()),
            ),
            1 => format!("; {labels} {be} faster (p = {ps}) but not at the lowest tree peak"),
            _ => format!(
                "; {labels} {be} slower ({}; p = {ps})",
                others.iter().map(|o| o.ratio.as_str()).collect::<Vec<_>>().join(", ")
            ),
        });
    }
    Recommendation {
        outcome: Outcome::Recommended,
        stage: Some(c.stage.clone()),
        fastest: fastest_label,
        trials_needed: None,
        sentence,
    }
}

/// Another value against the recommended one, as the sentence words it.
struct Other {
    label: String,
    p: String,
    cost: String,
    ratio: String,
}

/// "a", "a and b", "a, b and c".
fn and_list(xs: &[String]) -> String {
    match xs {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

pub mod view;

#[cfg(test)]
mod tests;
