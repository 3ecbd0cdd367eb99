//! Summary statistics over measured samples. Every number here is derived
//! from the samples alone; nothing measures. `interval` holds a median's (and a
//! ratio's) interval with its coverage; `compare` the two-sample rank test,
//! the ratio of medians and the verdict; `changes` the change points of a
//! series (e-divisive means with a permutation test); `paired` pairs judged
//! as pairs (bisect's signed-rank test and Hodges–Lehmann interval); `sign`
//! units judged by their signs (the gate's couples of runs).

mod changes;
mod compare;
mod interval;
mod paired;
mod sign;

pub use changes::*;
pub use compare::*;
pub use interval::*;
pub use paired::*;
pub use sign::*;

use serde::{Deserialize, Serialize};

/// Linear-interpolation quantile (`q` in [0, 1]) of sorted data.
pub fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        1 => sorted[0],
        n => {
            let pos = q.clamp(0.0, 1.0) * (n - 1) as f64;
            let (lo, frac) = (pos.floor() as usize, pos.fract());
            let (a, b) = (sorted[lo], sorted[(lo + 1).min(n - 1)]);
            // Between equal values, or on one, that value: an infinite one
            // stays infinite (inf − inf would make it NaN).
            if frac == 0.0 || a == b { a } else { a + frac * (b - a) }
        }
    }
}

fn sorted(values: &[f64]) -> Vec<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(|a, b| a.total_cmp(b));
    v
}

/// n, min, median, p95 and max of some values (non-finite values left out).
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Distribution {
    pub n: u64,
    pub min: f64,
    pub median: f64,
    pub p95: f64,
    pub max: f64,
}

/// The median of some values (non-finite values left out; NaN when none).
pub fn median(values: &[f64]) -> f64 {
    quantile_sorted(&sorted(values), 0.5)
}

/// n, min, median, p95, max of some values.
pub fn distribution(values: &[f64]) -> Distribution {
    let v = sorted(values);
    Distribution {
        n: v.len() as u64,
        min: v.first().copied().unwrap_or(f64::NAN),
        median: quantile_sorted(&v, 0.5),
        p95: quantile_sorted(&v, 0.95),
        max: v.last().copied().unwrap_or(f64::NAN),
    }
}

/// The rule that marks outliers, stated in every summary that uses it.
pub const OUTLIER_RULE: &str = "outside Tukey's fences: below Q1 - 1.5 IQR or above Q3 + 1.5 IQR";
/// Bootstrap resamples for the median's confidence interval.
pub const BOOTSTRAP_RESAMPLES: usize = 2000;

/// Everything a careful reader wants about one figure's trials.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(rename = "Statistics")]
pub struct Summary {
    pub n: u64,
    pub min: f64,
    pub median: f64,
    pub mean: f64,
    pub max: f64,
    /// Sample standard deviation (n − 1).
    pub stdev: f64,
    /// Median absolute deviation from the median (unscaled).
    pub mad: f64,
    pub p5: f64,
    pub p95: f64,
    /// The median's interval, honest about its coverage: a percentile
    /// bootstrap 95% interval from [`MIN_BOOTSTRAP`] samples on, below
    /// that the range with its exact coverage (see [`median_interval`]).
    pub median_interval: Interval,
    /// The same interval, only when it is a 95% bootstrap interval (kept
    /// under this name for scripts; absent for fewer samples, where no 95%
    /// interval exists that is narrower than the data).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub median_ci95: Option<[f64; 2]>,
    /// Indices (in trial order) of the samples outside Tukey's fences.
    pub outliers: Vec<usize>,
}

/// Summarises samples (in trial order). `seed` makes the bootstrap repeatable.
pub fn summarize(samples: &[f64], seed: u64) -> Summary {
    let v = sorted(samples);
    let n = v.len();
    let mean = if n > 0 { v.iter().sum::<f64>() / n as f64 } else { f64::NAN };
    let stdev = if n > 1 {
        (v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64).sqrt()
    } else {
        0.0
    };
    let median = quantile_sorted(&v, 0.5);
    let mad =
        quantile_sorted(&sorted(&v.iter().map(|x| (x - median).abs()).collect::<Vec<_>>()), 0.5);
    let (q1, q3) = (quantile_sorted(&v, 0.25), quantile_sorted(&v, 0.75));
    let (lo, hi) = (q1 - 1.5 * (q3 - q1), q3 + 1.5 * (q3 - q1));
    let outliers =
        samples.iter().enumerate().filter(|(_, x)| **x < lo || **x > hi).map(|(i, _)| i).collect();
    let interval = median_interval(&v, seed);
    Summary {
        n: n as u64,
        min: v.first().copied().unwrap_or(f64::NAN),
        median,
        mean,
        max: v.last().copied().unwrap_or(f64::NAN),
        stdev,
        mad,
        p5: quantile_sorted(&v, 0.05),
        p95: quantile_sorted(&v, 0.95),
        median_interval: interval,
        median_ci95: interval.ci95(),
        outliers,
    }
}

/// Trials per side needed to resolve a difference of `fraction` of the mean
/// between two such stages (two-sided α = 0.05, power 0.8):
/// n = 2 (z₀.₉₇₅ + z₀.₈)² (σ / (fraction · mean))².
pub fn trials_to_resolve(s: &Summary, fraction: f64) -> Option<u64> {
    let delta = fraction * s.mean;
    if delta.is_nan() || delta <= 0.0 || !s.stdev.is_finite() || s.n < 2 {
        return None;
    }
    let z = 1.959_963_985 + 0.841_621_234;
    Some((2.0 * z * z * (s.stdev / delta).powi(2)).ceil().max(2.0) as u64)
}

/// A command's stages over several measurements: each row's figures their
/// median, where every measurement has the same rows (names in order);
/// else the last measurement's rows, as measured.
pub fn median_stages(all: &[&[protocol::CommandStage]]) -> Vec<protocol::CommandStage> {
    let Some(last) = all.last() else {
        return Vec::new();
    };
    let names = |s: &[protocol::CommandStage]| s.iter().map(|r| r.name.clone()).collect::<Vec<_>>();
    if all.iter().any(|s| names(s) != names(last)) {
        return last.to_vec();
    }
    let mut rows = last.to_vec();
    for (i, row) in rows.iter_mut().enumerate() {
        let of = |f: fn(&protocol::CommandStage) -> f64| {
            median(&all.iter().map(|s| f(&s[i])).collect::<Vec<_>>())
        };
        row.start_s = of(|r| r.start_s);
        row.wall_s = of(|r| r.wall_s);
        row.user_s = of(|r| r.user_s);
        row.sys_s = of(|r| r.sys_s);
        row.rss_start_bytes = of(|r| r.rss_start_bytes as f64) as u64;
        row.rss_end_bytes = of(|r| r.rss_end_bytes as f64) as u64;
        row.peak_rss_bytes = of(|r| r.peak_rss_bytes as f64) as u64;
        row.peak_reset = all.iter().all(|s| s[i].peak_reset);
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commands_stages_are_medians_row_by_row_when_every_trial_has_the_same_rows() {
        let row = |name: &str, wall: f64, peak: u64, reset: bool| protocol::CommandStage {
            name: name.into(),
            wall_s: wall,
            peak_rss_bytes: peak,
            peak_reset: reset,
            ..Default::default()
        };
        let a = [row("before_stages", 1.0, 10, true), row("fit", 5.0, 50, true)];
        let b = [row("before_stages", 3.0, 30, true), row("fit", 4.0, 40, false)];
        let c = [row("before_stages", 2.0, 20, true), row("fit", 9.0, 90, true)];
        let m = median_stages(&[&a, &b, &c]);
        assert_eq!((m[0].wall_s, m[0].peak_rss_bytes, m[0].peak_reset), (2.0, 20, true));
        // A peak not reset in one trial is not within the stage in the median.
        assert_eq!((m[1].wall_s, m[1].peak_rss_bytes, m[1].peak_reset), (5.0, 50, false));
        // Different rows: the last trial's, as measured.
        let d = [row("before_stages", 7.0, 70, true)];
        assert_eq!(median_stages(&[&a, &d]), d.to_vec());
        assert!(median_stages(&[]).is_empty());
    }

    #[test]
    fn known_values() {
        let d = distribution(&[5.0, 1.0, 3.0, 2.0, 4.0]);
        assert_eq!((d.n, d.min, d.median, d.max), (5, 1.0, 3.0, 5.0));
        assert!((d.p95 - 4.8).abs() < 1e-12);
        assert_eq!(distribution(&[1.0, 2.0]).median, 1.5);
        assert_eq!(distribution(&[7.0]).p95, 7.0);
        assert!(distribution(&[]).median.is_nan());
    }

    /// The ends of the quantile: q = 0 and q = 1 are the smallest and largest
    /// values exactly (q = 1 has no value above it to interpolate towards), and
    /// q outside [0, 1] is clamped to them.
    #[test]
    fn quantiles_at_the_ends_are_the_extremes() {
        let v = [1.0, 2.0, 4.0];
        assert_eq!(quantile_sorted(&v, 0.0), 1.0);
        assert_eq!(quantile_sorted(&v, 1.0), 4.0);
        assert_eq!(quantile_sorted(&v, 1.5), 4.0);
        assert_eq!(quantile_sorted(&v, -0.5), 1.0);
        assert_eq!(quantile_sorted(&v, 0.75), 3.0);
    }

    /// Infinite values (a ratio over a median of 0: a span B added) stay
    /// infinite at and between them, and a finite quantile below them stays
    /// finite; before, inf − inf made every such quantile NaN, and a
    /// significant change read as none.
    #[test]
    fn quantiles_among_infinite_values_are_not_nan() {
        let inf = f64::INFINITY;
        assert_eq!(quantile_sorted(&[inf, inf, inf], 0.5), inf);
        assert_eq!(quantile_sorted(&[inf, inf, inf], 0.025), inf);
        assert_eq!(quantile_sorted(&[1.0, inf, inf], 0.0), 1.0);
        assert_eq!(quantile_sorted(&[1.0, inf, inf], 0.25), inf);
        assert_eq!(quantile_sorted(&[1.0, 2.0, inf], 0.5), 2.0);
    }

    /// Hand-computed: 2, 4, 4, 4, 5, 5, 7, 9 has mean 5, sample variance
    /// 32/7, median 4.5, absolute deviations 2.5 .5 .5 .5 .5 .5 2.5 4.5 → MAD 0.5.
    #[test]
    fn summary_of_a_hand_computed_sample() {
        let s = summarize(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0], 1);
        assert_eq!(s.n, 8);
        assert_eq!(s.mean, 5.0);
        assert!((s.stdev - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        assert_eq!(s.median, 4.5);
        assert_eq!(s.mad, 0.5);
        // Q1 = 4, Q3 = 5.5, fences 1.75 and 7.75: only the 9 (index 7) is out.
        assert_eq!(s.outliers, vec![7]);
        let ci = s.median_ci95.expect("8 samples: a bootstrap interval");
        assert!(ci[0] <= s.median && s.median <= ci[1]);
        assert_eq!(s.median_interval.method, IntervalMethod::Bootstrap);
    }

    /// Below six samples the interval is the range, and its stated coverage
    /// is the one a simulation finds: the range of n draws holds the
    /// distribution's median 1 − 2¹⁻ⁿ of the time (75%, 87.5%, 93.75%),
    /// never the 95% a bootstrap label would claim.
    #[test]
    fn few_samples_give_the_range_with_its_true_coverage() {
        for (n, stated) in [(3, 0.75), (4, 0.875), (5, 0.9375)] {
            assert_eq!(range_coverage(n), stated);
            let runs = 20_000;
            let mut covered = 0;
            let mut rng = evidence::rng::Rng::new(n as u64);
            for seed in 0..runs {
                let xs: Vec<f64> = (0..n).map(|_| 10.0 + rng.normal()).collect();
                let s = summarize(&xs, seed);
                let i = s.median_interval;
                assert_eq!((i.method, i.n, i.coverage), (IntervalMethod::Range, n as u64, stated));
                assert_eq!((i.low, i.high), (s.min, s.max));
                assert!(s.median_ci95.is_none(), "{n} samples have no 95% interval");
                covered += (i.low <= 10.0 && 10.0 <= i.high) as u32;
            }
            let rate = f64::from(covered) / runs as f64;
            assert!((rate - stated).abs() < 0.015, "n {n}: simulated {rate}, stated {stated}");
        }
        let i = summarize(&[1.0, 2.0, 3.0], 0).median_interval;
        assert_eq!(i.phrase(|x| format!("{x:.1}")), "range 1.0-3.0, 75% coverage");
        assert_eq!(i.cell(|x| format!("{x:.1}")), "1.0–3.0 (range, 75%)");
        assert_eq!(coverage_pct(0.9375), "93.75%");
        assert_eq!(coverage_pct(0.875), "87.5%");
        let six = summarize(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 0).median_interval;
        assert_eq!((six.method, six.coverage), (IntervalMethod::Bootstrap, 0.95));
        assert!(six.phrase(|x| format!("{x:.1}")).starts_with("95% CI "));
    }

    /// Over many seeded samples from a distribution whose median is known
    /// (normal, median 10), the 95% interval covers it about 95% of the
    /// time; and the interval is repeatable for a seed.
    #[test]
    fn bootstrap_interval_coverage_is_close_to_nominal() {
        let mut covered = 0;
        let runs = 80;
        for seed in 0..runs {
            let mut rng = evidence::rng::Rng::new(1000 + seed);
            let sample: Vec<f64> = (0..41).map(|_| 10.0 + rng.normal()).collect();
            let s = summarize(&sample, seed);
            let ci = s.median_ci95.unwrap();
            covered += (ci[0] <= 10.0 && 10.0 <= ci[1]) as u32;
            if seed == 0 {
                assert_eq!(summarize(&sample, seed), s);
            }
        }
        let rate = covered as f64 / runs as f64;
        assert!((0.85..=1.0).contains(&rate), "coverage {rate}");
        // Coverage alone would pass [min, max]: the interval must also be
        // about as narrow as theory says. The median of n = 41 draws from
        // N(10, 1) has a standard error of about sqrt(pi/2)/sqrt(41) = 0.196,
        // so a 95% interval is about 2 x 1.96 x 0.196 = 0.77 wide.
        let widths: Vec<f64> = (0..runs)
            .map(|seed| {
                let mut rng = evidence::rng::Rng::new(1000 + seed);
                let sample: Vec<f64> = (0..41).map(|_| 10.0 + rng.normal()).collect();
                let ci = summarize(&sample, seed).median_ci95.unwrap();
                ci[1] - ci[0]
            })
            .collect();
        let mean_width = widths.iter().sum::<f64>() / widths.len() as f64;
        assert!((0.5..1.1).contains(&mean_width), "mean interval width {mean_width}");
    }

    #[test]
    fn the_normal_generator_is_standard() {
        let mut rng = evidence::rng::Rng::new(3);
        let xs: Vec<f64> = (0..100_000).map(|_| rng.normal()).collect();
        let s = summarize(&xs[..2000], 1);
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / xs.len() as f64;
        assert!(mean.abs() < 0.02 && (var - 1.0).abs() < 0.02, "{mean} {var}");
        assert!(s.median.abs() < 0.1);
    }

    /// One sample has no spread: its standard deviation is 0, not 0/0.
    #[test]
    fn one_sample_has_no_spread() {
        let s = summarize(&[5.0], 1);
        assert_eq!((s.n, s.mean, s.median, s.stdev, s.mad), (1, 5.0, 5.0, 0.0, 0.0));
    }

    /// An interval says what it is in a table cell: 95% CI only for the
    /// bootstrap's, the range with its coverage otherwise.
    #[test]
    fn an_interval_cell_names_its_kind() {
        let many = summarize(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], 1).median_interval;
        assert!(many.cell(|x| format!("{x:.1}")).ends_with("(95% CI)"), "{many:?}");
        let few = summarize(&[1.0, 2.0, 3.0], 1).median_interval;
        assert_eq!(few.cell(|x| format!("{x:.1}")), "1.0–3.0 (range, 75%)");
    }

    /// Tukey's fences at their edges: Q1 = 4 and Q3 = 6 give fences 1 and 9.
    /// A value on a fence is in; only the values beyond (0.5 and 9.5, at
    /// indices 1 and 8 in trial order) are outliers.
    #[test]
    fn values_on_tukeys_fences_are_in_and_beyond_them_out() {
        let s = summarize(&[1.0, 0.5, 4.0, 4.0, 5.0, 6.0, 6.0, 9.0, 9.5], 1);
        assert_eq!(s.outliers, vec![1, 8]);
    }

    /// The formula scales with the mean: the same relative noise at a mean of
    /// 200 needs as many trials as at 100. Too few samples, no noise estimate
    /// or no difference to resolve give None, never a count.
    #[test]
    fn trials_to_resolve_scales_and_refuses_what_it_cannot_say() {
        let s = summarize(&[200.0, 220.0, 180.0, 210.0, 190.0], 1);
        // σ = 15.811, δ = 2: 2 · 7.849 · 62.5 = 981.1 → 982.
        assert_eq!(trials_to_resolve(&s, 0.01), Some(982));
        assert_eq!(trials_to_resolve(&s, 0.0), None);
        assert_eq!(trials_to_resolve(&summarize(&[100.0], 1), 0.01), None);
        assert_eq!(trials_to_resolve(&summarize(&[], 1), 0.01), None);
        assert!(trials_to_resolve(&summarize(&[100.0, 101.0], 1), 0.01).is_some());
    }

    #[test]
    fn trials_needed_grow_with_noise() {
        let quiet = summarize(&[100.0, 100.5, 99.5, 100.2, 99.8], 1);
        let noisy = summarize(&[100.0, 110.0, 90.0, 105.0, 95.0], 1);
        let (a, b) =
            (trials_to_resolve(&quiet, 0.01).unwrap(), trials_to_resolve(&noisy, 0.01).unwrap());
        assert!(a < b, "{a} {b}");
        // σ = 7.9057, δ = 1: 2 · 7.849 · 62.5 = 981.1 → 982.
        assert_eq!(b, 982);
    }
}
