//! Two samples compared: the Mann–Whitney rank test, the interval of the
//! ratio of their medians, and the verdict.

use super::interval::range_interval;
use super::{
    BOOTSTRAP_RESAMPLES, Interval, IntervalMethod, MIN_BOOTSTRAP, quantile_sorted, sorted,
};
use serde::{Deserialize, Serialize};

/// Two-sided p-value of the Mann–Whitney U test (normal approximation with
/// tie and continuity corrections). Works for unequal sample sizes.
pub fn mann_whitney_p(a: &[f64], b: &[f64]) -> f64 {
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
pub fn normal_cdf(z: f64) -> f64 {
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
pub fn ratio_of_medians_interval(a: &[f64], b: &[f64], seed: u64) -> Interval {
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
pub fn ratio_of_medians_ci(a: &[f64], b: &[f64], seed: u64) -> [f64; 2] {
    let (a, b) = (sorted(a), sorted(b));
    if a.is_empty() || b.is_empty() {
        return [f64::NAN, f64::NAN];
    }
    let mut rng = evidence::rng::Rng::new(seed);
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
pub const ALPHA: f64 = 0.05;

/// How B compares with A on a figure where lower is better.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
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
pub fn verdict(a: &[f64], b: &[f64], p: f64, ci: [f64; 2]) -> Verdict {
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

/// The fewest samples a side with which [`verdict`] can call a difference:
/// the smallest n whose two disjoint samples of n give the rank test
/// p < [`ALPHA`].
pub fn fewest_to_judge() -> usize {
    (2..).find(|&n| smallest_p(n, n) < ALPHA).expect("some n reaches ALPHA")
}

/// The rank test's p for `n_a` and `n_b` samples that do not overlap at all:
/// the smallest it can give for these counts.
pub fn smallest_p(n_a: usize, n_b: usize) -> f64 {
    let a: Vec<f64> = (0..n_a).map(|i| i as f64).collect();
    let b: Vec<f64> = (n_a..n_a + n_b).map(|i| i as f64).collect();
    mann_whitney_p(&a, &b)
}

/// Holm's step-down correction: which of the p-values `ps` (one per test
/// of a family) are significant with the chance of any false finding in the
/// family at most `alpha`. The k-th smallest (from 0) must be below
/// `alpha / (m - k)`, and every smaller one significant too.
pub fn holm(ps: &[f64], alpha: f64) -> Vec<bool> {
    let m = ps.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&i, &j| ps[i].total_cmp(&ps[j]));
    let mut significant = vec![false; m];
    for (k, &i) in order.iter().enumerate() {
        // NaN (no test) is never below anything, and ends the steps.
        let below = ps[i] < alpha / (m - k) as f64;
        if !below {
            break;
        }
        significant[i] = true;
    }
    significant
}

#[cfg(test)]
mod compare_tests {
    use super::*;
    use crate::stats::{median, range_coverage};

    fn sample(seed: u64, n: usize, center: f64) -> Vec<f64> {
        let mut rng = evidence::rng::Rng::new(seed);
        (0..n).map(|_| center * (1.0 + 0.02 * rng.normal())).collect()
    }

    /// The verdict at each of its edges: too few samples on either side, a
    /// p-value or an interval end exactly at its threshold, and significance
    /// needing both the rank test and the interval.
    #[test]
    fn the_verdict_at_its_edges() {
        use Verdict::*;
        let eight = [1.0; 8];
        let (p, slow, fast, wide) = (0.01, [1.1, 1.2], [0.8, 0.9], [0.9, 1.1]);
        assert_eq!(verdict(&eight, &eight, p, slow), Slower);
        assert_eq!(verdict(&eight, &eight, p, fast), Faster);
        assert_eq!(verdict(&eight, &eight, p, wide), NoSignificantDifference);
        for (a, b) in [(&eight[..1], &eight[..]), (&eight[..], &eight[..1])] {
            assert_eq!(verdict(a, b, p, slow), TooFewTrials, "{} against {}", a.len(), b.len());
        }
        // Two a side is enough to be judged only when the rank test could
        // say p < 0.05 with them; 3 against 3 never can, 8 against 8 can.
        assert!(smallest_p(3, 3) >= ALPHA && smallest_p(8, 8) < ALPHA);
        assert_eq!(verdict(&eight[..3], &eight[..3], p, slow), TooFewTrials);
        assert_eq!(verdict(&eight, &eight, f64::NAN, slow), TooFewTrials);
        // Two against twenty can be judged (the rank test can reach 0.026).
        let twenty = [1.0; 20];
        assert_eq!(verdict(&twenty[..2], &twenty, p, slow), Slower);
        assert_eq!(verdict(&twenty, &twenty[..2], p, fast), Faster);
        // p exactly at α is not significant; nor is an interval ending at 1.
        assert_eq!(verdict(&eight, &eight, ALPHA, slow), NoSignificantDifference);
        assert_eq!(verdict(&eight, &eight, ALPHA, fast), NoSignificantDifference);
        assert_eq!(verdict(&eight, &eight, p, [1.0, 1.2]), NoSignificantDifference);
        assert_eq!(verdict(&eight, &eight, p, [0.8, 1.0]), NoSignificantDifference);
        // An interval that excludes 1 without a significant rank test is not enough.
        assert_eq!(verdict(&eight, &eight, 0.5, fast), NoSignificantDifference);
        assert_eq!(verdict(&eight, &eight, 0.5, slow), NoSignificantDifference);
    }

    /// The normal CDF on both sides of 0 (the rank test uses |z|; a
    /// negative z must still be right).
    #[test]
    fn the_normal_cdf_is_right_on_both_sides() {
        for (z, want) in [(-1.959_964, 0.025), (0.0, 0.5), (1.0, 0.841_344_7), (-1.0, 0.158_655_3)]
        {
            assert!((normal_cdf(z) - want).abs() < 1e-6, "Φ({z}) = {}", normal_cdf(z));
        }
    }

    /// A ratio with an empty side has no interval: NaN at both ends.
    #[test]
    fn a_ratio_with_an_empty_side_has_no_interval() {
        for (a, b) in [(&[][..], &[1.0, 2.0][..]), (&[1.0, 2.0][..], &[][..])] {
            let ci = ratio_of_medians_ci(a, b, 1);
            assert!(ci[0].is_nan() && ci[1].is_nan(), "{ci:?}");
            let i = ratio_of_medians_interval(a, b, 1);
            assert!(i.low.is_nan() && i.high.is_nan(), "{i:?}");
        }
    }

    /// With an empty side there is no test: NaN, never a p-value that a
    /// verdict could read as "no difference".
    #[test]
    fn an_empty_side_gives_no_p_value() {
        assert!(mann_whitney_p(&[1.0, 2.0], &[]).is_nan());
        assert!(mann_whitney_p(&[], &[1.0, 2.0]).is_nan());
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

    /// Holm by hand: 0.01 < 0.05/4, 0.012 < 0.05/3, 0.03 ≥ 0.05/2 stops
    /// the steps, so 0.04 is not significant either (alone it would be);
    /// NaN never is; an empty family has nothing to say.
    #[test]
    fn holm_steps_down_and_stops_at_the_first_failure() {
        assert_eq!(holm(&[0.04, 0.012, 0.03, 0.01], 0.05), [false, true, false, true]);
        assert_eq!(holm(&[0.04], 0.05), [true]);
        assert_eq!(holm(&[0.02, 0.02], 0.05), [true, true]);
        assert_eq!(holm(&[0.03, 0.026], 0.05), [false, false]);
        assert_eq!(holm(&[f64::NAN, 0.001], 0.05), [false, true]);
        assert!(holm(&[], 0.05).is_empty());
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
        assert_eq!(fewest_to_judge(), 4);
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
