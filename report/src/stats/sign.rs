//! Units judged by their signs: the median of log-ratios with the sign
//! test's exact interval (order statistics) and two-sided p, back as a
//! ratio. Distribution-free: it asks only that a unit is as likely above
//! the true median as below, so a unit the machine threw far counts as one
//! unit on one side, never by its size. The gate judges its couples of runs
//! this way (`gate::judge`), each couple one unit.

use super::Paired;

/// `P(B ≤ k)` for `B ~ Binomial(n, 1/2)`, k = 0 ..= n, summed in log space
/// so that no `n` underflows.
fn binomial_cdf(n: usize) -> Vec<f64> {
    let half = -(n as f64) * std::f64::consts::LN_2;
    let mut ln_choose = 0.0;
    let mut acc = 0.0f64;
    (0..=n)
        .map(|k| {
            if k > 0 {
                ln_choose += ((n - k + 1) as f64).ln() - (k as f64).ln();
            }
            acc += (ln_choose + half).exp();
            acc.min(1.0)
        })
        .collect()
}

/// The sign test's two-sided p that the median of `logs` is 0 (zeros
/// dropped).
fn sign_p(logs: &[f64]) -> f64 {
    let above = logs.iter().filter(|x| **x > 0.0).count();
    let below = logs.iter().filter(|x| **x < 0.0).count();
    let m = above + below;
    if m == 0 {
        return 1.0;
    }
    (2.0 * binomial_cdf(m)[above.min(below)]).min(1.0)
}

/// Judges units given as log-ratios at `confidence`: their median, and the
/// interval `[X(j+1), X(n−j)]` of the sorted units with the largest `j`
/// whose coverage `1 − 2 P(B ≤ j)` is at least `confidence`; with too few
/// units for that, the range, whose coverage (`1 − 2^(1−n)`) falls short
/// and says so. None for no finite unit.
pub fn sign(logs: &[f64], confidence: f64) -> Option<Paired> {
    let mut u: Vec<f64> = logs.iter().copied().filter(|x| x.is_finite()).collect();
    let n = u.len();
    if n == 0 {
        return None;
    }
    u.sort_by(f64::total_cmp);
    let f = binomial_cdf(n);
    let alpha = 1.0 - confidence;
    let j = (0..n).take_while(|j| 2.0 * f[*j] <= alpha).last();
    let (low, high, covered) = match j {
        Some(j) => (u[j], u[n - 1 - j], 1.0 - 2.0 * f[j]),
        None => (u[0], u[n - 1], 1.0 - 2.0 * f[0]),
    };
    Some(Paired {
        n,
        ratio: super::quantile_sorted(&u, 0.5).exp(),
        low: low.exp(),
        high: high.exp(),
        confidence: covered.max(0.0),
        p: sign_p(&u),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_is_the_tables_order_statistics_with_their_coverage() {
        // n = 20 at 95%: X(6) to X(15), covering 95.86% (2 P(B ≤ 5) =
        // 0.0414); a narrower one would cover less than asked.
        let logs: Vec<f64> = (1..=20).map(|i| (i as f64 / 100.0).ln_1p()).collect();
        let s = sign(&logs, 0.95).unwrap();
        assert!((s.low - 1.06).abs() < 1e-12 && (s.high - 1.15).abs() < 1e-12, "{s:?}");
        assert!((s.confidence - 0.958611).abs() < 1e-6, "{s:?}");
        // P(B ≤ 2) for n = 5 is 16/32; the last is 1.
        let f = binomial_cdf(5);
        assert!((f[2] - 0.5).abs() < 1e-12 && (f[5] - 1.0).abs() < 1e-12);
        // No underflow far beyond 2^-1074.
        assert!((binomial_cdf(2000)[1000] - 0.5).abs() < 0.01);
    }

    #[test]
    fn too_few_units_give_the_range_and_say_it_covers_less() {
        // 8 units reach 99.2% at best (1 − 2/256): at 99.5% they fall short.
        let logs = [0.1f64; 8];
        let s = sign(&logs, 0.995).unwrap();
        assert!(s.confidence < 0.995 && (s.confidence - (1.0 - 2.0 / 256.0)).abs() < 1e-12);
        assert!((s.p - 2.0 / 256.0).abs() < 1e-12, "{s:?}");
        let nine = sign(&[0.1f64; 9], 0.995).unwrap();
        assert!(nine.confidence >= 0.995, "{nine:?}");
        assert_eq!(sign(&[f64::NAN], 0.95), None);
    }

    #[test]
    fn a_unit_thrown_far_counts_once_and_signs_that_disagree_are_no_change() {
        // Nineteen units at ×1.10, one the machine threw to ×0.2: still
        // ×1.10, significant.
        let mut logs = vec![1.1f64.ln(); 19];
        logs.push(0.2f64.ln());
        let s = sign(&logs, 0.95).unwrap();
        assert!((s.ratio - 1.1).abs() < 1e-12 && s.low > 1.0 && s.p < 0.001, "{s:?}");
        // Half above, half below: no direction, p = 1.
        let mixed: Vec<f64> = (0..10).map(|i| if i % 2 == 0 { 0.3 } else { -0.3 }).collect();
        let s = sign(&mixed, 0.95).unwrap();
        assert!(s.low < 1.0 && s.high > 1.0 && s.p > 0.99, "{s:?}");
    }

    #[test]
    fn the_interval_covers_the_true_median_as_often_as_it_says() {
        // 2000 draws of 15 units, heavy-tailed around ln 1.05: the 95%
        // interval (which covers 96.5% exactly for n = 15) covers 1.05 in at
        // least 94.5% of them.
        let mut rng = evidence::rng::Rng::new(99);
        let mut next = || rng.uniform();
        let mut covered = 0;
        for _ in 0..2000 {
            let logs: Vec<f64> = (0..15)
                .map(|_| {
                    let u = next() - 0.5;
                    1.05f64.ln() + u.signum() * 0.02 * (1.0 / (1.0 - 2.0 * u.abs())).ln()
                })
                .collect();
            let s = sign(&logs, 0.95).unwrap();
            covered += usize::from(s.low <= 1.05 && 1.05 <= s.high);
        }
        assert!(covered >= 1890, "covered {covered} of 2000");
    }
}
