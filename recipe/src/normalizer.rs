//! The feature normalizer: per-feature mean and population variance over
//! every valid frame of the training series (unknown-target frames and
//! incomplete context tails included), in float64; scale = sqrt(variance +
//! [`EPSILON`]). Part of the versioned feature contract.
//!
//! Each series gives its own [`Moments`] (Welford's update, frames in
//! order); series are then merged one by one in series-id order (Chan et
//! al.'s pairwise update). Because every series' moments depend only on
//! that series, and the merge order is fixed, the result is the same bits
//! whichever worker processed which series.

use crate::contract::N_FEATURES;
use ndarray::{ArrayView1, ArrayView2};
use serde::{Deserialize, Serialize};

/// Added to the variance before the square root, so a constant feature
/// does not divide by zero.
pub const EPSILON: f64 = 1e-6;

/// Count, mean and sum of squared deviations of each feature.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Moments {
    pub count: u64,
    pub mean: [f64; N_FEATURES],
    pub m2: [f64; N_FEATURES],
}

impl Default for Moments {
    fn default() -> Self {
        Moments { count: 0, mean: [0.0; N_FEATURES], m2: [0.0; N_FEATURES] }
    }
}

impl Moments {
    /// The moments of a series' valid frames (`values` `[frames, 5]`,
    /// `valid` `[frames]`). The loop runs over the rows as plain slices of
    /// five (it touches every feature value of the cohort; ndarray's row
    /// views cost measurably more here).
    pub fn of_series(values: ArrayView2<'_, f32>, valid: ArrayView1<'_, bool>) -> Moments {
        assert_eq!(values.dim(), (valid.len(), N_FEATURES), "values must be [frames, 5]");
        let values = values.as_standard_layout();
        let rows = values.as_slice().expect("a standard-layout array is one slice");
        let mut m = Moments::default();
        for (row, _) in rows.chunks_exact(N_FEATURES).zip(valid).filter(|(_, v)| **v) {
            m.count += 1;
            let n = m.count as f64;
            for (k, x) in row.iter().enumerate() {
                let x = *x as f64;
                let delta = x - m.mean[k];
                m.mean[k] += delta / n;
                m.m2[k] += delta * (x - m.mean[k]);
            }
        }
        m
    }

    /// These moments and `other`'s, as if over both sets of frames.
    pub fn merge(&self, other: &Moments) -> Moments {
        if other.count == 0 {
            return *self;
        }
        if self.count == 0 {
            return *other;
        }
        let (na, nb) = (self.count as f64, other.count as f64);
        let n = na + nb;
        let mut out = Moments { count: self.count + other.count, ..Moments::default() };
        for k in 0..N_FEATURES {
            let delta = other.mean[k] - self.mean[k];
            out.mean[k] = self.mean[k] + delta * nb / n;
            out.m2[k] = self.m2[k] + other.m2[k] + delta * delta * na * nb / n;
        }
        out
    }

    /// Population variance of each feature.
    pub fn variance(&self) -> [f64; N_FEATURES] {
        self.m2.map(|m2| if self.count > 0 { m2 / self.count as f64 } else { f64::NAN })
    }
}

/// What `normalizer.json` holds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Normalizer {
    pub contract: String,
    /// Valid training frames it was fitted on.
    pub count: u64,
    pub mean: [f64; N_FEATURES],
    pub variance: [f64; N_FEATURES],
    pub scale: [f64; N_FEATURES],
}

impl Normalizer {
    /// Merges per-series moments given in series-id order.
    pub fn fit<'a>(in_series_order: impl IntoIterator<Item = &'a Moments>) -> Normalizer {
        let total = in_series_order.into_iter().fold(Moments::default(), |acc, m| acc.merge(m));
        let variance = total.variance();
        Normalizer {
            contract: crate::contract::VERSION.into(),
            count: total.count,
            mean: total.mean,
            variance,
            scale: variance.map(|v| (v + EPSILON).sqrt()),
        }
    }

    /// `(v − mean) / scale` of feature `k`, as float32.
    #[inline]
    pub fn apply(&self, k: usize, v: f32) -> f32 {
        ((v as f64 - self.mean[k]) / self.scale[k]) as f32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{Array1, Array2, arr1};

    fn rows(values: &[[f32; N_FEATURES]]) -> Array2<f32> {
        Array2::from(values.to_vec())
    }

    fn flat(values: Vec<f32>) -> Array2<f32> {
        Array2::from_shape_vec((values.len() / N_FEATURES, N_FEATURES), values).unwrap()
    }

    #[test]
    fn moments_match_a_two_pass_computation_and_skip_invalid_frames() {
        let v = rows(&[
            [1.0, 2.0, 0.0, 10.0, 5.0],
            [3.0, f32::NAN, 0.0, 10.0, 5.0],
            [5.0, 6.0, 0.0, 13.0, 7.0],
            [2.0, 4.0, 0.0, 16.0, 9.0],
        ]);
        let m = Moments::of_series(v.view(), arr1(&[true, false, true, true]).view());
        assert_eq!(m.count, 3);
        // Feature 0 over 1, 5, 2: mean 8/3, population variance 26/9.
        assert!((m.mean[0] - 8.0 / 3.0).abs() < 1e-12);
        assert!((m.variance()[0] - 26.0 / 9.0).abs() < 1e-12);
        assert!((m.mean[1] - 4.0).abs() < 1e-12 && (m.variance()[1] - 8.0 / 3.0).abs() < 1e-12);
        assert_eq!(m.variance()[2], 0.0);
        let n = Normalizer::fit([&m]);
        assert_eq!(n.scale[2], EPSILON.sqrt(), "a constant feature gets sqrt(epsilon)");
        assert!(
            (n.apply(0, 5.0) as f64 - (5.0 - 8.0 / 3.0) / (26.0f64 / 9.0 + EPSILON).sqrt()).abs()
                < 1e-6
        );
    }

    #[test]
    fn merging_series_equals_one_pass_over_all_frames() {
        let mut rng = evidence::rng::Rng::new(7);
        let a: Vec<f32> = (0..500).map(|_| rng.uniform() as f32 * 100.0).collect();
        let b: Vec<f32> = (0..300).map(|_| rng.uniform() as f32 - 3.0).collect();
        let (va, vb) = (Array1::from_elem(100, true), Array1::from_elem(60, true));
        let all = flat(a.iter().chain(&b).copied().collect());
        let (a, b) = (flat(a), flat(b));
        let merged =
            Moments::of_series(a.view(), va.view()).merge(&Moments::of_series(b.view(), vb.view()));
        let one = Moments::of_series(all.view(), Array1::from_elem(160, true).view());
        assert_eq!(merged.count, one.count);
        for k in 0..N_FEATURES {
            assert!((merged.mean[k] - one.mean[k]).abs() <= 1e-9 * one.mean[k].abs().max(1.0));
            assert!((merged.m2[k] - one.m2[k]).abs() <= 1e-9 * one.m2[k].abs().max(1.0));
        }
        // Merging with nothing changes nothing.
        assert_eq!(merged.merge(&Moments::default()), merged);
        assert_eq!(Moments::default().merge(&merged), merged);
    }
}
