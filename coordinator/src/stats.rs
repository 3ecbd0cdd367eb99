//! Summary statistics over measured samples. Every number here is derived
//! from the samples alone; nothing measures.

use serde::{Deserialize, Serialize};

/// Linear-interpolation quantile (`q` in [0, 1]) of sorted data.
pub(crate) fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        1 => sorted[0],
        n => {
            let pos = q.clamp(0.0, 1.0) * (n - 1) as f64;
            let (lo, frac) = (pos.floor() as usize, pos.fract());
            if lo + 1 < n { sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]) } else { sorted[lo] }
        }
    }
}

fn sorted(values: &[f64]) -> Vec<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(|a, b| a.total_cmp(b));
    v
}

/// n, min, median, p95 and max of some values (non-finite values left out).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Distribution {
    pub(crate) n: u64,
    pub(crate) min: f64,
    pub(crate) median: f64,
    pub(crate) p95: f64,
    pub(crate) max: f64,
}

/// The median of some values (non-finite values left out; NaN when none).
pub(crate) fn median(values: &[f64]) -> f64 {
    quantile_sorted(&sorted(values), 0.5)
}

/// n, min, median, p95, max of some values.
pub(crate) fn distribution(values: &[f64]) -> Distribution {
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
pub(crate) const OUTLIER_RULE: &str =
    "outside Tukey's fences: below Q1 - 1.5 IQR or above Q3 + 1.5 IQR";
/// Bootstrap resamples for the median's confidence interval.
pub(crate) const BOOTSTRAP_RESAMPLES: usize = 2000;

/// Everything a careful reader wants about one figure's trials.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Summary {
    pub(crate) n: u64,
    pub(crate) min: f64,
    pub(crate) median: f64,
    pub(crate) mean: f64,
    pub(crate) max: f64,
    /// Sample standard deviation (n − 1).
    pub(crate) stdev: f64,
    /// Median absolute deviation from the median (unscaled).
    pub(crate) mad: f64,
    pub(crate) p5: f64,
    pub(crate) p95: f64,
    /// The median's interval, honest about its coverage: a percentile
    /// bootstrap 95% interval from [`MIN_BOOTSTRAP`] samples on, below
    /// that the range with its exact coverage (see [`median_interval`]).
    pub(crate) median_interval: Interval,
    /// The same interval, only when it is a 95% bootstrap interval (kept
    /// under this name for scripts; absent for fewer samples, where no 95%
    /// interval exists that is narrower than the data).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) median_ci95: Option<[f64; 2]>,
    /// Indices (in trial order) of the samples outside Tukey's fences.
    pub(crate) outliers: Vec<usize>,
}

/// Summarises samples (in trial order). `seed` makes the bootstrap repeatable.
pub(crate) fn summarize(samples: &[f64], seed: u64) -> Summary {
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

/// From this many samples on, a median's interval is the percentile
/// bootstrap's 95% one. Below it a percentile bootstrap of the median can
/// only give back (nearly) the range, whose coverage is far from 95%.
pub(crate) const MIN_BOOTSTRAP: usize = 6;

/// How an [`Interval`] was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum IntervalMethod {
    /// Percentile bootstrap, 95%.
    Bootstrap,
    /// The samples' range (min to max), for fewer than [`MIN_BOOTSTRAP`]
    /// samples; `coverage` is exact.
    Range,
    /// For a ratio of medians with fewer than [`MIN_BOOTSTRAP`] samples on
    /// a side: the two ranges' far ends; `coverage` is a lower bound.
    RangeRatio,
}

/// An interval for a median (or a ratio of medians) with the probability
/// that it covers the true value: 0.95 for a bootstrap interval, the exact
/// (for a ratio: the least) coverage for a range.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Interval {
    pub(crate) low: f64,
    pub(crate) high: f64,
    pub(crate) coverage: f64,
    pub(crate) method: IntervalMethod,
    /// Samples it was found from (the smaller side's, for a ratio).
    pub(crate) n: u64,
}

impl Interval {
    pub(crate) fn bounds(&self) -> [f64; 2] {
        [self.low, self.high]
    }

    /// `[low, high]` when this is a 95% interval, else None.
    pub(crate) fn ci95(&self) -> Option<[f64; 2]> {
        (self.method == IntervalMethod::Bootstrap).then_some(self.bounds())
    }

    /// "1.2 s–1.4 s (95% CI)" or "1.1 s–1.5 s (range, 75%)", each end
    /// formatted by `fmt`: the interval in a table cell.
    pub(crate) fn cell(&self, fmt: impl Fn(f64) -> String) -> String {
        let tag = match self.method {
            IntervalMethod::Bootstrap => "95% CI".to_string(),
            _ => format!("range, {}", self.coverage_text()),
        };
        format!("{}–{} ({tag})", fmt(self.low), fmt(self.high))
    }

    /// "95% CI 1.44-1.50" or "range 1.41-1.49, 75% coverage": the
    /// interval in a sentence, each end formatted by `fmt`.
    pub(crate) fn phrase(&self, fmt: impl Fn(f64) -> String) -> String {
        let (lo, hi) = (fmt(self.low), fmt(self.high));
        match self.method {
            IntervalMethod::Bootstrap => format!("95% CI {lo}-{hi}"),
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
pub(crate) fn coverage_pct(c: f64) -> String {
    let s = format!("{:.2}", 100.0 * c);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}%")
}

/// The probability that the range of `n` independent samples covers their
/// distribution's median: every sample falls on one side with probability
/// 2 × 2⁻ⁿ, so 1 − 2¹⁻ⁿ (50% for 2, 75% for 3, 87.5% for 4, 93.75% for 5).
pub(crate) fn range_coverage(n: usize) -> f64 {
    match n {
        0 | 1 => 0.0,
        n => 1.0 - 0.5f64.powi(n as i32 - 1),
    }
}

/// The median's interval from sorted samples: the percentile bootstrap's
/// 95% interval from [`MIN_BOOTSTRAP`] samples on, else the range with its
/// exact coverage ([`range_coverage`]).
pub(crate) fn median_interval(sorted: &[f64], seed: u64) -> Interval {
    let n = sorted.len();
    if n < MIN_BOOTSTRAP {
        return range_interval(sorted);
    }
    let [low, high] = bootstrap_median_ci(sorted, seed);
    Interval { low, high, coverage: 0.95, method: IntervalMethod::Bootstrap, n: n as u64 }
}

/// The range of sorted samples as an interval for their median.
fn range_interval(sorted: &[f64]) -> Interval {
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
    let mut rng = recipe::rng::Rng::new(seed);
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

/// Trials per side needed to resolve a difference of `fraction` of the mean
/// between two such stages (two-sided α = 0.05, power 0.8):
/// n = 2 (z₀.₉₇₅ + z₀.₈)² (σ / (fraction · mean))².
pub(crate) fn trials_to_resolve(s: &Summary, fraction: f64) -> Option<u64> {
    let delta = fraction * s.mean;
    if delta.is_nan() || delta <= 0.0 || !s.stdev.is_finite() || s.n < 2 {
        return None;
    }
    let z = 1.959_963_985 + 0.841_621_234;
    Some((2.0 * z * z * (s.stdev / delta).powi(2)).ceil().max(2.0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        let d = distribution(&[5.0, 1.0, 3.0, 2.0, 4.0]);
        assert_eq!((d.n, d.min, d.median, d.max), (5, 1.0, 3.0, 5.0));
        assert!((d.p95 - 4.8).abs() < 1e-12);
        assert_eq!(distribution(&[1.0, 2.0]).median, 1.5);
        assert_eq!(distribution(&[7.0]).p95, 7.0);
        assert!(distribution(&[]).median.is_nan());
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
            let mut rng = recipe::rng::Rng::new(n as u64);
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
            let mut rng = recipe::rng::Rng::new(1000 + seed);
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
                let mut rng = recipe::rng::Rng::new(1000 + seed);
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
        let mut rng = recipe::rng::Rng::new(3);
        let xs: Vec<f64> = (0..100_000).map(|_| rng.normal()).collect();
        let s = summarize(&xs[..2000], 1);
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / xs.len() as f64;
        assert!(mean.abs() < 0.02 && (var - 1.0).abs() < 0.02, "{mean} {var}");
        assert!(s.median.abs() < 0.1);
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

/// Two-sided p-value of the Mann–Whitney U test (normal approximation with
/// tie and continuity corrections). Works for unequal sample sizes.
pub(crate) fn mann_whitney_p(a: &[f64], b: &[f64]) -> f64 {
    let (n1, n2) = (a.len() as f64, b.len() as f64);
    if a.is_empty() || b.is_empty() {
        return f64::NAN;
    }
    let mut all: Vec<(f64, usize)> =
        a.iter().map(|&x| (x, 0)).chain(b.iter().map(|&x| (x, 1))).collect();
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    let n = all.len();
    let (mut rank_a, mut ties) = (0.0, 0.0);
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        let rank = (i + j) as f64 / 2.0 + 1.0;
        let t = (j - i + 1) as f64;
        ties += t * t * t - t;
        rank_a += all[i..=j].iter().filter(|x| x.1 == 0).count() as f64 * rank;
        i = j + 1;
    }
    let u = rank_a - n1 * (n1 + 1.0) / 2.0;
    let mean = n1 * n2 / 2.0;
    let nn = n1 + n2;
    let var = n1 * n2 / 12.0 * ((nn + 1.0) - ties / (nn * (nn - 1.0)));
    if var <= 0.0 {
        return 1.0;
    }
    let z = ((u - mean).abs() - 0.5).max(0.0) / var.sqrt();
    2.0 * (1.0 - normal_cdf(z))
}

/// Standard normal CDF (Abramowitz–Stegun 7.1.26 erf, |error| < 1.5e-7).
pub(crate) fn normal_cdf(z: f64) -> f64 {
    let x = z.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erf = 1.0 - poly * (-x * x).exp();
    if z >= 0.0 { 0.5 * (1.0 + erf) } else { 0.5 * (1.0 - erf) }
}

/// The interval of median(b) / median(a): from [`MIN_BOOTSTRAP`] samples
/// a side on, the percentile bootstrap's 95% interval; with fewer on
/// either side, min(b)/max(a) to max(b)/min(a), which holds the true ratio
/// whenever each range holds its median, so with at least the product of
/// the two ranges' coverages.
pub(crate) fn ratio_of_medians_interval(a: &[f64], b: &[f64], seed: u64) -> Interval {
    let (sa, sb) = (sorted(a), sorted(b));
    let n = sa.len().min(sb.len());
    if sa.is_empty() || sb.is_empty() || n >= MIN_BOOTSTRAP {
        let [low, high] = ratio_of_medians_ci(a, b, seed);
        return Interval {
            low,
            high,
            coverage: 0.95,
            method: IntervalMethod::Bootstrap,
            n: n as u64,
        };
    }
    let (ra, rb) = (range_interval(&sa), range_interval(&sb));
    Interval {
        low: rb.low / ra.high,
        high: rb.high / ra.low,
        coverage: ra.coverage * rb.coverage,
        method: IntervalMethod::RangeRatio,
        n: n as u64,
    }
}

/// Percentile bootstrap 95% interval of median(b) / median(a), resampling
/// each side independently.
pub(crate) fn ratio_of_medians_ci(a: &[f64], b: &[f64], seed: u64) -> [f64; 2] {
    let (a, b) = (sorted(a), sorted(b));
    if a.is_empty() || b.is_empty() {
        return [f64::NAN, f64::NAN];
    }
    let mut rng = recipe::rng::Rng::new(seed);
    let mut ra = vec![0.0; a.len()];
    let mut rb = vec![0.0; b.len()];
    let mut ratios = Vec::with_capacity(BOOTSTRAP_RESAMPLES);
    for _ in 0..BOOTSTRAP_RESAMPLES {
        for (dst, src) in [(&mut ra, &a), (&mut rb, &b)] {
            for x in dst.iter_mut() {
                *x = src[rng.range(0, src.len() as u64) as usize];
            }
            dst.sort_by(|x, y| x.total_cmp(y));
        }
        ratios.push(quantile_sorted(&rb, 0.5) / quantile_sorted(&ra, 0.5));
    }
    ratios.sort_by(|x, y| x.total_cmp(y));
    [quantile_sorted(&ratios, 0.025), quantile_sorted(&ratios, 0.975)]
}

/// Significance level of compare's verdicts.
pub(crate) const ALPHA: f64 = 0.05;

/// How B compares with A on a figure where lower is better.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Verdict {
    Faster,
    Slower,
    NoSignificantDifference,
    /// Fewer than 2 trials on a side, or so few that even B entirely above
    /// (or below) A could not give the rank test p < ALPHA: 3 against 3 or
    /// 4, such as a cold-prep's 3 rounds against another's. Nothing can be
    /// said.
    TooFewTrials,
}

/// The verdict: significant when the rank test's p < ALPHA *and* the
/// ratio's interval excludes 1.
pub(crate) fn verdict(a: &[f64], b: &[f64], p: f64, ci: [f64; 2]) -> Verdict {
    if a.len() < 2 || b.len() < 2 || p.is_nan() || smallest_p(a.len(), b.len()) >= ALPHA {
        return Verdict::TooFewTrials;
    }
    if p < ALPHA && ci[0] > 1.0 {
        Verdict::Slower
    } else if p < ALPHA && ci[1] < 1.0 {
        Verdict::Faster
    } else {
        Verdict::NoSignificantDifference
    }
}

/// The rank test's p for `n_a` and `n_b` samples that do not overlap at all:
/// the smallest it can give for these counts.
fn smallest_p(n_a: usize, n_b: usize) -> f64 {
    let a: Vec<f64> = (0..n_a).map(|i| i as f64).collect();
    let b: Vec<f64> = (n_a..n_a + n_b).map(|i| i as f64).collect();
    mann_whitney_p(&a, &b)
}

#[cfg(test)]
mod compare_tests {
    use super::*;

    fn sample(seed: u64, n: usize, center: f64) -> Vec<f64> {
        let mut rng = recipe::rng::Rng::new(seed);
        (0..n).map(|_| center * (1.0 + 0.02 * rng.normal())).collect()
    }

    /// Hand-computed: a = 1 2 3, b = 4 5: U_a = 0, mean 3, var 3·2/12·6 = 3;
    /// z = (3 − 0.5)/√3 = 1.443, p = 0.149.
    #[test]
    fn mann_whitney_matches_a_hand_computation() {
        let p = mann_whitney_p(&[1.0, 2.0, 3.0], &[4.0, 5.0]);
        assert!((p - 0.149).abs() < 0.001, "{p}");
        assert!((mann_whitney_p(&[1.0, 2.0], &[1.0, 2.0]) - 1.0).abs() < 1e-6);
        assert!((normal_cdf(1.959_964) - 0.975).abs() < 1e-6);
    }

    /// With ties, against SciPy 1.17.1:
    /// `scipy.stats.mannwhitneyu(a, b, use_continuity=True,
    /// alternative='two-sided', method='asymptotic').pvalue`.
    #[test]
    fn mann_whitney_with_ties_matches_scipy() {
        let p =
            mann_whitney_p(&[1.0, 2.0, 2.0, 3.0, 3.0, 3.0, 5.0], &[2.0, 3.0, 4.0, 4.0, 5.0, 6.0]);
        assert!((p - 0.125_006_218_529_337_96).abs() < 1e-6, "{p}");
        let p = mann_whitney_p(&[1.0, 1.0, 1.0, 2.0], &[1.0, 2.0, 2.0, 2.0, 3.0]);
        assert!((p - 0.139_996_284_315_541_2).abs() < 1e-6, "{p}");
    }

    /// The ratio's interval, directly: it is the exact ratio for constant
    /// samples, holds the observed ratio of medians, lies near a planted
    /// ratio, and is repeatable for a seed.
    #[test]
    fn the_ratio_of_medians_interval_brackets_the_planted_ratio() {
        assert_eq!(ratio_of_medians_ci(&[2.0; 5], &[3.0; 4], 1), [1.5, 1.5]);
        let a = sample(7, 15, 1.0);
        let b = sample(8, 15, 1.25);
        let ci = ratio_of_medians_ci(&a, &b, 3);
        let observed = median(&b) / median(&a);
        assert!(ci[0] < observed && observed < ci[1], "{observed} outside {ci:?}");
        assert!(ci[0] > 1.15 && ci[1] < 1.35, "far from the planted 1.25 for 2% noise: {ci:?}");
        assert_eq!(ratio_of_medians_ci(&a, &b, 3), ci);
        assert!(ratio_of_medians_ci(&[], &b, 3)[0].is_nan());
    }

    /// With fewer than six samples on a side, the ratio's interval is the
    /// ranges' far ends, and its coverage at least the product of theirs;
    /// a simulation with a known ratio finds at least that.
    #[test]
    fn a_ratio_from_few_samples_is_the_ranges_far_ends_with_their_coverage() {
        let i = ratio_of_medians_interval(
            &[1.0, 2.0, 4.0],
            &[3.0, 6.0, 9.0, 12.0, 15.0, 18.0, 21.0],
            0,
        );
        assert_eq!(
            (i.low, i.high, i.method, i.n),
            (3.0 / 4.0, 21.0, IntervalMethod::RangeRatio, 3)
        );
        assert_eq!(i.cell(|x| format!("{x:.2}")), "0.75–21.00 (range, ≥73.83%)");
        assert_eq!(i.coverage, 0.75 * range_coverage(7));
        let runs = 4000;
        let mut covered = 0;
        for seed in 0..runs {
            let a = sample(seed, 4, 1.0);
            let b = sample(seed + 9000, 5, 1.1);
            let i = ratio_of_medians_interval(&a, &b, seed);
            covered += (i.low <= 1.1 && 1.1 <= i.high) as u32;
        }
        let rate = f64::from(covered) / runs as f64;
        let stated = range_coverage(4) * range_coverage(5);
        assert!(rate >= stated - 0.015, "simulated {rate} below the stated {stated}");
        let big = ratio_of_medians_interval(&sample(1, 6, 1.0), &sample(2, 6, 1.0), 3);
        assert_eq!(big.method, IntervalMethod::Bootstrap);
    }

    #[test]
    fn a_planted_ten_percent_difference_is_detected_with_unequal_sizes() {
        for seed in 0..20 {
            let a = sample(seed, 12, 1.0);
            let b = sample(seed + 1000, 7, 1.10);
            let p = mann_whitney_p(&a, &b);
            let ci = ratio_of_medians_ci(&a, &b, seed);
            assert_eq!(verdict(&a, &b, p, ci), Verdict::Slower, "seed {seed}: p {p}, ci {ci:?}");
            assert_eq!(
                verdict(&b, &a, mann_whitney_p(&b, &a), ratio_of_medians_ci(&b, &a, seed)),
                Verdict::Faster
            );
        }
    }

    /// Three against three cannot be significant however far apart: the
    /// rank test's smallest p is above α, so the verdict says too few.
    /// Four against four can.
    #[test]
    fn counts_that_cannot_reach_significance_say_too_few() {
        assert!(smallest_p(3, 3) > ALPHA && smallest_p(3, 4) > ALPHA, "{}", smallest_p(3, 4));
        assert!(smallest_p(4, 4) < ALPHA && smallest_p(2, 9) < ALPHA);
        let (a, far) = ([1.0, 1.01, 0.99], [2.0, 2.02, 1.98]);
        let p = mann_whitney_p(&a, &far);
        assert_eq!(verdict(&a, &far, p, [1.9, 2.1]), Verdict::TooFewTrials, "p {p}");
        let (a, far) = ([1.0, 1.01, 0.99, 1.0], [2.0, 2.02, 1.98, 2.0]);
        let p = mann_whitney_p(&a, &far);
        assert_eq!(verdict(&a, &far, p, [1.9, 2.1]), Verdict::Slower, "p {p}");
    }

    /// With no difference, a significant verdict is rare: at most about the
    /// stated rate (α = 5%) over many seeds.
    #[test]
    fn no_difference_is_rarely_flagged() {
        let runs = 200;
        let flagged = (0..runs)
            .filter(|&seed| {
                let a = sample(seed, 10, 1.0);
                let b = sample(seed + 5000, 8, 1.0);
                verdict(&a, &b, mann_whitney_p(&a, &b), ratio_of_medians_ci(&a, &b, seed))
                    != Verdict::NoSignificantDifference
            })
            .count();
        let rate = flagged as f64 / runs as f64;
        assert!(rate <= 0.08, "false-positive rate {rate}");
    }
}
