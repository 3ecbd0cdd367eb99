//! Pairs judged as pairs: each base sample with the head sample measured
//! beside it, so what the machine did to both (a neighbour's burst, a
//! drift) cancels in their ratio. Wilcoxon's signed-rank test on the pairs'
//! log-ratios, and the Hodges–Lehmann estimate of their centre with its
//! exact interval (the Walsh averages between the signed-rank statistic's
//! quantiles), back as a ratio head / base. Never a pooling of each side's
//! samples as if they were independent.

/// A paired comparison: head / base.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Paired {
    /// Pairs judged.
    pub n: usize,
    /// The Hodges–Lehmann estimate of the pairs' ratio.
    pub ratio: f64,
    /// Its interval at `confidence`.
    pub low: f64,
    pub high: f64,
    /// What the interval covers (at least; the statistic is discrete).
    pub confidence: f64,
    /// The signed-rank test's two-sided p, that the ratio is 1.
    pub p: f64,
}

/// The fewest pairs whose interval can exclude anything at 95%: fewer
/// leave the whole range of their Walsh averages as the interval.
pub const FEWEST_PAIRS: usize = 6;

/// Where the exact distribution gives way to the normal approximation.
const EXACT_UP_TO: usize = 200;

/// `P(W+ ≤ w)` for w = 0 ..= n(n+1)/2: the signed-rank statistic's
/// distribution for `n` pairs without ties or zeros.
fn cdf(n: usize) -> Vec<f64> {
    let max = n * (n + 1) / 2;
    let mut counts = vec![0.0f64; max + 1];
    counts[0] = 1.0;
    for k in 1..=n {
        for w in (k..=max).rev() {
            counts[w] += counts[w - k];
        }
    }
    let total = 2f64.powi(n as i32);
    let mut acc = 0.0;
    counts
        .into_iter()
        .map(|c| {
            acc += c / total;
            acc.min(1.0)
        })
        .collect()
}

/// The largest `k` with `P(W+ ≤ k - 1) ≤ alpha / 2` (at least 1): the
/// interval runs from the k-th smallest Walsh average to the k-th largest.
fn interval_rank(n: usize, alpha: f64) -> usize {
    let m = n * (n + 1) / 2;
    if n <= EXACT_UP_TO {
        let f = cdf(n);
        let mut k = 1;
        while k < m && f[k] <= alpha / 2.0 {
            k += 1;
        }
        return k.max(1);
    }
    let (mean, sd) =
        (m as f64 / 2.0, (n as f64 * (n + 1) as f64 * (2 * n + 1) as f64 / 24.0).sqrt());
    let z = inverse_normal(1.0 - alpha / 2.0);
    ((mean - z * sd).floor() as usize).clamp(1, m)
}

/// The standard normal quantile (Acklam's rational approximation, to 1e-9).
fn inverse_normal(p: f64) -> f64 {
    let a = [
        -39.69683028665376,
        220.9460984245205,
        -275.9285104469687,
        138.357751867269,
        -30.66479806614716,
        2.506628277459239,
    ];
    let b = [
        -54.47609879822406,
        161.5858368580409,
        -155.6989798598866,
        66.80131188771972,
        -13.28068155288572,
    ];
    let c = [
        -0.007784894002430293,
        -0.3223964580411365,
        -2.400758277161838,
        -2.549732539343734,
        4.374664141464968,
        2.938163982698783,
    ];
    let d = [0.007784695709041462, 0.3224671290700398, 2.445134137142996, 3.754408661907416];
    let tail = |q: f64| {
        (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5])
            / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0)
    };
    if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q
            / (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0)
    }
}

/// The signed-rank test's two-sided p for `xs` (zeros dropped, ties given
/// their mean rank; exact without ties up to [`EXACT_UP_TO`] pairs, else
/// the normal approximation with its tie correction).
fn signed_rank_p(xs: &[f64]) -> f64 {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| *x != 0.0).collect();
    let n = v.len();
    if n == 0 {
        return 1.0;
    }
    v.sort_by(|a, b| a.abs().total_cmp(&b.abs()));
    let (mut w_plus, mut ties, mut i) = (0.0, 0.0, 0);
    while i < n {
        let mut j = i;
        while j + 1 < n && v[j + 1].abs() == v[i].abs() {
            j += 1;
        }
        let rank = (i + j + 2) as f64 / 2.0;
        let t = (j - i + 1) as f64;
        ties += t * t * t - t;
        w_plus += v[i..=j].iter().filter(|x| **x > 0.0).count() as f64 * rank;
        i = j + 1;
    }
    let m = (n * (n + 1) / 2) as f64;
    if ties == 0.0 && n <= EXACT_UP_TO {
        let f = cdf(n);
        let w = w_plus.round() as usize;
        let lower = f[w];
        let upper = 1.0 - if w == 0 { 0.0 } else { f[w - 1] };
        return (2.0 * lower.min(upper)).min(1.0);
    }
    let var = n as f64 * (n + 1) as f64 * (2 * n + 1) as f64 / 24.0 - ties / 48.0;
    let z = (w_plus - m / 2.0).abs() / var.sqrt();
    (2.0 * (1.0 - super::normal_cdf(z))).min(1.0)
}

/// Judges pairs given as `(base, head)` samples at `confidence` (0.95, or
/// less strict-looking but corrected: 1 − 0.05 / figures). None for no
/// usable pair (a sample that is not positive and finite is left out).
pub fn paired(pairs: &[(f64, f64)], confidence: f64) -> Option<Paired> {
    let logs: Vec<f64> = pairs
        .iter()
        .filter(|(b, h)| b.is_finite() && h.is_finite() && *b > 0.0 && *h > 0.0)
        .map(|(b, h)| (h / b).ln())
        .collect();
    let n = logs.len();
    if n == 0 {
        return None;
    }
    let mut walsh = Vec::with_capacity(n * (n + 1) / 2);
    for i in 0..n {
        for j in i..n {
            walsh.push((logs[i] + logs[j]) / 2.0);
        }
    }
    walsh.sort_by(f64::total_cmp);
    let m = walsh.len();
    let centre = super::quantile_sorted(&walsh, 0.5);
    let k = interval_rank(n, 1.0 - confidence);
    let covered = if n <= EXACT_UP_TO { 1.0 - 2.0 * cdf(n)[k - 1] } else { confidence };
    Some(Paired {
        n,
        ratio: centre.exp(),
        low: walsh[k - 1].exp(),
        high: walsh[m - k].exp(),
        confidence: covered.max(0.0),
        p: signed_rank_p(&logs),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exact_distribution_matches_its_known_values() {
        // n = 5: 32 outcomes, P(W+ = 0) = 1/32, P(W+ <= 2) = 3/32.
        let f = cdf(5);
        assert_eq!(f.len(), 16);
        assert!((f[0] - 1.0 / 32.0).abs() < 1e-12 && (f[2] - 3.0 / 32.0).abs() < 1e-12);
        assert!((f[15] - 1.0).abs() < 1e-12);
        // The 95% interval of 10 pairs runs from the 9th Walsh average
        // (tables: the critical value 8, so k = 9).
        assert_eq!(interval_rank(10, 0.05), 9);
        assert!((inverse_normal(0.975) - 1.959964).abs() < 1e-5);
    }

    #[test]
    fn identical_pairs_are_a_ratio_of_one_and_a_known_change_is_found() {
        let same: Vec<(f64, f64)> = (0..12).map(|i| (1.0 + i as f64, 1.0 + i as f64)).collect();
        let s = paired(&same, 0.95).unwrap();
        assert_eq!((s.ratio, s.low, s.high, s.p), (1.0, 1.0, 1.0, 1.0));
        // Head 10% slower in every pair, whatever the machine did to both
        // (each pair's level differs by up to ×3): exactly 1.10.
        let slower: Vec<(f64, f64)> =
            (0..12).map(|i| (1.0 + (i % 3) as f64, 1.1 * (1.0 + (i % 3) as f64))).collect();
        let s = paired(&slower, 0.95).unwrap();
        assert!((s.ratio - 1.1).abs() < 1e-12 && (s.low - 1.1).abs() < 1e-12, "{s:?}");
        assert!(s.p < 0.001, "{s:?}");
    }

    #[test]
    fn pairs_that_disagree_give_a_wide_interval_and_no_significance() {
        // Half the pairs about ×1.3, half about ×0.77, sizes interleaved:
        // no direction.
        let pairs: Vec<(f64, f64)> = (0..10)
            .map(|i| {
                let r = 1.3 + 0.01 * i as f64;
                (1.0, if i % 2 == 0 { r } else { 1.0 / r })
            })
            .collect();
        let s = paired(&pairs, 0.95).unwrap();
        assert!(s.low < 0.9 && s.high > 1.1, "{s:?}");
        assert!(s.p > 0.5, "{s:?}");
    }

    #[test]
    fn the_interval_covers_the_truth_as_often_as_it_says() {
        // 1000 draws of 15 pairs, log-ratios uniform around ln 1.05: the
        // 95% interval covers 1.05 in at least 93% of them (3 sd below).
        let mut rng = evidence::rng::Rng::new(12345);
        let mut next = || rng.uniform();
        let mut covered = 0;
        for _ in 0..1000 {
            let pairs: Vec<(f64, f64)> =
                (0..15).map(|_| (1.0, (1.05f64.ln() + 0.2 * (next() - 0.5)).exp())).collect();
            let s = paired(&pairs, 0.95).unwrap();
            covered += usize::from(s.low <= 1.05 && 1.05 <= s.high);
        }
        assert!(covered >= 930, "covered {covered} of 1000");
    }
}
