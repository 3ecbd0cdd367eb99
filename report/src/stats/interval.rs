//! A median's interval, honest about its coverage: the percentile bootstrap's
//! 95% interval from [`MIN_BOOTSTRAP`] samples, the range with its exact
//! coverage below.

use super::{BOOTSTRAP_RESAMPLES, quantile_sorted};
use serde::{Deserialize, Serialize};

/// From this many samples on, a median's interval is the percentile
/// bootstrap's 95% one. Below it a percentile bootstrap of the median can
/// only give back (nearly) the range, whose coverage is far from 95%.
pub const MIN_BOOTSTRAP: usize = 6;

/// How an [`Interval`] was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum IntervalMethod {
    /// Percentile bootstrap, 95%.
    Bootstrap,
    /// The samples' range (min to max), for fewer than [`MIN_BOOTSTRAP`]
    /// samples; `coverage` is exact.
    Range,
    /// For a ratio of medians with fewer than [`MIN_BOOTSTRAP`] samples on
    /// a side: the two ranges' far ends; `coverage` is a lower bound.
    RangeRatio,
    /// For a ratio from pairs (bisect's endpoints, judged as the gate
    /// judges): the Hodges–Lehmann estimate's exact interval from the
    /// pairs' Walsh averages; `coverage` is the level it holds at.
    PairedWalsh,
}

/// An interval for a median (or a ratio of medians) with the probability
/// that it covers the true value: 0.95 for a bootstrap interval, the exact
/// (for a ratio: the least) coverage for a range.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Interval {
    pub low: f64,
    pub high: f64,
    pub coverage: f64,
    pub method: IntervalMethod,
    /// Samples it was found from (the smaller side's, for a ratio).
    pub n: u64,
}

impl Interval {
    pub fn bounds(&self) -> [f64; 2] {
        [self.low, self.high]
    }

    /// `[low, high]` when this is a 95% interval, else None.
    pub fn ci95(&self) -> Option<[f64; 2]> {
        (self.method == IntervalMethod::Bootstrap).then_some(self.bounds())
    }

    /// "1.2 s–1.4 s (95% CI)" or "1.1 s–1.5 s (range, 75%)", each end
    /// formatted by `fmt`: the interval in a table cell.
    pub fn cell(&self, fmt: impl Fn(f64) -> String) -> String {
        let tag = match self.method {
            IntervalMethod::Bootstrap => "95% CI".to_string(),
            IntervalMethod::PairedWalsh => format!("{} CI, paired", self.coverage_text()),
            _ => format!("range, {}", self.coverage_text()),
        };
        format!("{}–{} ({tag})", fmt(self.low), fmt(self.high))
    }

    /// "95% CI 1.44-1.50" or "range 1.41-1.49, 75% coverage": the
    /// interval in a sentence, each end formatted by `fmt`.
    pub fn phrase(&self, fmt: impl Fn(f64) -> String) -> String {
        let (lo, hi) = (fmt(self.low), fmt(self.high));
        match self.method {
            IntervalMethod::Bootstrap => format!("95% CI {lo}-{hi}"),
            IntervalMethod::PairedWalsh => format!("{} CI {lo}-{hi}, paired", self.coverage_text()),
            _ => format!("range {lo}-{hi}, {} coverage", self.coverage_text()),
        }
    }

    /// "75%", or for a ratio's range, whose coverage is a lower bound, "≥56%".
    fn coverage_text(&self) -> String {
        match self.method {
            IntervalMethod::RangeRatio => format!("≥{}", coverage_pct(self.coverage)),
            _ => coverage_pct(self.coverage),
        }
    }
}

/// A coverage as a percentage with no more digits than it has: 75%,
/// 87.5%, 93.75%.
pub fn coverage_pct(c: f64) -> String {
    let s = format!("{:.2}", 100.0 * c);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}%")
}

/// The probability that the range of `n` independent samples covers their
/// distribution's median: every sample falls on one side with probability
/// 2 × 2⁻ⁿ, so 1 − 2¹⁻ⁿ (50% for 2, 75% for 3, 87.5% for 4, 93.75% for 5).
pub fn range_coverage(n: usize) -> f64 {
    match n {
        0 | 1 => 0.0,
        n => 1.0 - 0.5f64.powi(n as i32 - 1),
    }
}

/// The median's interval from sorted samples: the percentile bootstrap's
/// 95% interval from [`MIN_BOOTSTRAP`] samples on, else the range with its
/// exact coverage ([`range_coverage`]).
pub fn median_interval(sorted: &[f64], seed: u64) -> Interval {
    let n = sorted.len();
    if n < MIN_BOOTSTRAP {
        return range_interval(sorted);
    }
    let [low, high] = bootstrap_median_ci(sorted, seed);
    Interval { low, high, coverage: 0.95, method: IntervalMethod::Bootstrap, n: n as u64 }
}

/// The range of sorted samples as an interval for their median.
pub(super) fn range_interval(sorted: &[f64]) -> Interval {
    let (low, high) = match (sorted.first(), sorted.last()) {
        (Some(lo), Some(hi)) => (*lo, *hi),
        _ => (f64::NAN, f64::NAN),
    };
    Interval {
        low,
        high,
        coverage: range_coverage(sorted.len()),
        method: IntervalMethod::Range,
        n: sorted.len() as u64,
    }
}

/// Percentile bootstrap 95% interval of the median.
fn bootstrap_median_ci(v: &[f64], seed: u64) -> [f64; 2] {
    if v.len() < 2 {
        let x = v.first().copied().unwrap_or(f64::NAN);
        return [x, x];
    }
    let mut rng = evidence::rng::Rng::new(seed);
    let mut medians = Vec::with_capacity(BOOTSTRAP_RESAMPLES);
    let mut resample = vec![0.0; v.len()];
    for _ in 0..BOOTSTRAP_RESAMPLES {
        for x in resample.iter_mut() {
            *x = v[rng.range(0, v.len() as u64) as usize];
        }
        resample.sort_by(|a, b| a.total_cmp(b));
        medians.push(quantile_sorted(&resample, 0.5));
    }
    medians.sort_by(|a, b| a.total_cmp(b));
    [quantile_sorted(&medians, 0.025), quantile_sorted(&medians, 0.975)]
}
