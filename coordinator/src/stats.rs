//! Summary statistics over measured samples.

use crate::rundir::report::Distribution;

/// Linear-interpolation quantile (`q` in [0, 1]) of sorted data.
pub fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
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

/// n, min, median, p95, max of some values.
pub fn distribution(values: &[f64]) -> Distribution {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(|a, b| a.total_cmp(b));
    Distribution {
        n: v.len() as u64,
        min: v.first().copied().unwrap_or(f64::NAN),
        median: quantile_sorted(&v, 0.5),
        p95: quantile_sorted(&v, 0.95),
        max: v.last().copied().unwrap_or(f64::NAN),
    }
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
}
