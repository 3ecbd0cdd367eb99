//! Frame features (contract v1): per frame of 12 samples at stride 6,
//! computed in f64 and stored as f32, in the order `tod, mov_mu, mov_std,
//! angle_mu, angle_std`. A frame is valid iff all 12 of its enmo and anglez
//! samples are finite.
//!
//! Two implementations: [`extract_reference`], a plain scalar transcription
//! of the contract, and [`extract`], the one stages use. `extract` performs
//! the same floating-point operations in the same order (it only computes
//! each sample's cosine once, from a table of exact `cos` values, and skips
//! nothing), so the two agree to the last bit; tests check that.

use crate::contract::{FRAME_SAMPLES, FRAME_STRIDE, N_FEATURES, frame_count};
use ndarray::{Array1, Array2};
use std::f64::consts::TAU;
use std::sync::OnceLock;

/// Features of one series.
#[derive(Clone, Debug, PartialEq)]
pub struct Features {
    /// `[frames, 5]`, standard (row-major) layout.
    pub values: Array2<f32>,
    /// `[frames]`.
    pub valid: Array1<bool>,
}

impl Features {
    pub fn frames(&self) -> usize {
        self.valid.len()
    }
    pub fn valid_frames(&self) -> usize {
        self.valid.iter().filter(|v| **v).count()
    }
}

/// Frames as the extraction loop fills them: flat, so the loop writes each
/// frame's five values through a plain `&mut [f32; 5]`-sized chunk (the
/// hot loop of preparation; see [`extract_into`]), then shaped once.
#[derive(Debug, Default)]
struct Flat {
    values: Vec<f32>,
    valid: Vec<bool>,
}

impl Flat {
    fn shaped(self) -> Features {
        let frames = self.valid.len();
        Features {
            values: Array2::from_shape_vec((frames, N_FEATURES), self.values)
                .expect("the extraction writes 5 values per frame"),
            valid: Array1::from_vec(self.valid),
        }
    }
}

fn tod_term(local_seconds: u32) -> f64 {
    (TAU * local_seconds as f64 / 86_400.0).cos()
}

fn mean_std(xs: impl Iterator<Item = f64> + Clone) -> (f64, f64) {
    let n = FRAME_SAMPLES as f64;
    let mut sum = 0.0;
    for x in xs.clone() {
        sum += x;
    }
    let mean = sum / n;
    let mut sq = 0.0;
    for x in xs {
        let d = x - mean;
        sq += d * d;
    }
    (mean, (sq / n).sqrt())
}

/// The contract, transcribed as plainly as possible.
pub fn extract_reference(local_seconds: &[u32], enmo: &[f32], anglez: &[f32]) -> Features {
    let frames = frame_count(local_seconds.len());
    let mut values = Vec::with_capacity(frames * N_FEATURES);
    let mut valid = Vec::with_capacity(frames);
    for j in 0..frames {
        let w = j * FRAME_STRIDE..j * FRAME_STRIDE + FRAME_SAMPLES;
        let mut tod = 0.0;
        for &t in &local_seconds[w.clone()] {
            tod += tod_term(t);
        }
        tod /= FRAME_SAMPLES as f64;
        let (mov_mu, mov_std) = mean_std(enmo[w.clone()].iter().map(|&x| x as f64));
        let (angle_mu, angle_std) = mean_std(anglez[w.clone()].iter().map(|&x| x as f64));
        values.extend([tod, mov_mu, mov_std, angle_mu, angle_std].map(|v| v as f32));
        valid.push(enmo[w.clone()].iter().chain(&anglez[w]).all(|x| x.is_finite()));
    }
    Flat { values, valid }.shaped()
}

/// `cos(2π·s/86400)` for every second of a day, computed by the same
/// expression as the reference, so lookups are bit-identical to it.
fn tod_table() -> &'static [f64] {
    static TABLE: OnceLock<Vec<f64>> = OnceLock::new();
    TABLE.get_or_init(|| (0..86_400u32).map(tod_term).collect())
}

/// The extraction stages use: the reference's arithmetic in the reference's
/// order, straight from the input slices (no intermediate arrays), with
/// each cosine looked up rather than computed.
pub fn extract(local_seconds: &[u32], enmo: &[f32], anglez: &[f32]) -> Features {
    let mut f = Flat::default();
    extract_into(local_seconds, enmo, anglez, &mut f);
    f.shaped()
}

/// Appends the frames of these samples to `f` (see [`extract`]).
fn extract_into(local_seconds: &[u32], enmo: &[f32], anglez: &[f32], f: &mut Flat) {
    let frames = frame_count(local_seconds.len());
    let table = tod_table();
    let (v0, f0) = (f.values.len(), f.valid.len());
    f.values.resize(v0 + frames * N_FEATURES, 0.0);
    f.valid.resize(f0 + frames, false);
    let (values, valid) = (&mut f.values[v0..], &mut f.valid[f0..]);
    let n = FRAME_SAMPLES as f64;
    for (j, out) in values.chunks_exact_mut(N_FEATURES).enumerate() {
        let s = j * FRAME_STRIDE;
        let t: &[u32; FRAME_SAMPLES] = local_seconds[s..s + FRAME_SAMPLES].try_into().unwrap();
        let e: &[f32; FRAME_SAMPLES] = enmo[s..s + FRAME_SAMPLES].try_into().unwrap();
        let a: &[f32; FRAME_SAMPLES] = anglez[s..s + FRAME_SAMPLES].try_into().unwrap();
        let mut tod = 0.0;
        for &x in t {
            tod += match table.get(x as usize) {
                Some(c) => *c,
                None => table[x as usize % 86_400],
            };
        }
        // The reference's own mean/std, on the same widened values.
        let (mov_mu, mov_std) = mean_std(e.iter().map(|&x| x as f64));
        let (angle_mu, angle_std) = mean_std(a.iter().map(|&x| x as f64));
        out[0] = (tod / n) as f32;
        out[1] = mov_mu as f32;
        out[2] = mov_std as f32;
        out[3] = angle_mu as f32;
        out[4] = angle_std as f32;
        // All 24 samples are finite exactly when both sums are: a NaN or an
        // infinity makes its f64 sum non-finite, and twelve finite f32s
        // cannot overflow an f64. (The reference checks each sample.)
        valid[j] = mov_mu.is_finite() && angle_mu.is_finite();
    }
}

/// Builds a series' frames from its samples arriving in chunks of any size,
/// holding back only the samples the next frame still needs (fewer than 12
/// beyond its start), so memory stays bounded by one chunk. Each frame sees
/// the same 12 samples as in [`extract`], so the result is identical.
#[derive(Default)]
pub struct FrameBuilder {
    /// The samples from the next frame's start on that arrived before the
    /// current chunk: fewer than a frame, or empty.
    ts: Vec<u32>,
    e: Vec<f32>,
    a: Vec<f32>,
    out: Flat,
}

impl FrameBuilder {
    /// Extracts every frame these samples complete. Frames that start in
    /// the held samples are built from them plus the chunk's first few
    /// (copied); the rest straight from the chunk, and only its tail,
    /// where the next frame starts, is held back.
    pub fn push(&mut self, local_seconds: &[u32], enmo: &[f32], anglez: &[f32]) {
        let mut from = 0;
        if !self.ts.is_empty() {
            let held = self.ts.len();
            let take = local_seconds.len().min(FRAME_SAMPLES);
            self.ts.extend_from_slice(&local_seconds[..take]);
            self.e.extend_from_slice(&enmo[..take]);
            self.a.extend_from_slice(&anglez[..take]);
            extract_into(&self.ts, &self.e, &self.a, &mut self.out);
            let next = frame_count(self.ts.len()) * FRAME_STRIDE;
            if next < held || take == local_seconds.len() {
                // The chunk ends before the frames it can complete need more.
                self.ts.drain(..next);
                self.e.drain(..next);
                self.a.drain(..next);
                return;
            }
            from = next - held;
            self.ts.clear();
            self.e.clear();
            self.a.clear();
        }
        let (t, e, a) = (&local_seconds[from..], &enmo[from..], &anglez[from..]);
        extract_into(t, e, a, &mut self.out);
        let next = frame_count(t.len()) * FRAME_STRIDE;
        self.ts.extend_from_slice(&t[next..]);
        self.e.extend_from_slice(&e[next..]);
        self.a.extend_from_slice(&a[next..]);
    }

    pub fn finish(self) -> Features {
        self.out.shaped()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use evidence::rng::Rng;

    fn bits(f: &Features) -> (Vec<u32>, Vec<bool>) {
        (f.values.iter().map(|v| v.to_bits()).collect(), f.valid.to_vec())
    }

    fn random_series(rng: &mut Rng, n: usize, nonfinite: f64) -> (Vec<u32>, Vec<f32>, Vec<f32>) {
        let start = rng.range(0, 86_400) as u32;
        let mut ts = Vec::with_capacity(n);
        let mut t = start;
        for _ in 0..n {
            ts.push(t);
            t = (t + 5) % 86_400;
            if rng.chance(0.001) {
                // A daylight-saving jump of the local clock by ±1 h.
                t = if rng.chance(0.5) {
                    (t + 3600) % 86_400
                } else {
                    (t + 86_400 - 3600) % 86_400
                };
            }
        }
        let special = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY];
        let pick = |scale: f64, rng: &mut Rng| -> f32 {
            if rng.chance(nonfinite) {
                special[rng.range(0, 3) as usize]
            } else {
                (rng.normal() * scale) as f32
            }
        };
        let enmo = (0..n).map(|_| pick(0.05, rng).abs()).collect();
        let anglez = (0..n).map(|_| pick(40.0, rng)).collect();
        (ts, enmo, anglez)
    }

    #[test]
    fn fast_matches_reference_to_the_bit_on_random_input() {
        let mut rng = Rng::new(42);
        for case in 0..200 {
            let n = rng.range(0, 3_000) as usize;
            let p = if case % 3 == 0 { 0.0 } else { 0.01 };
            let (ts, e, a) = random_series(&mut rng, n, p);
            assert_eq!(
                bits(&extract(&ts, &e, &a)),
                bits(&extract_reference(&ts, &e, &a)),
                "case {case}"
            );
        }
    }

    /// Validity comes from the sums: the largest finite values must still
    /// count as finite, and a single NaN or infinity among them must not.
    #[test]
    fn validity_from_the_sums_holds_at_the_float_limits() {
        let ts: Vec<u32> = (0..24).map(|i| i * 5).collect();
        let big: Vec<f32> =
            (0..24).map(|i| if i % 2 == 0 { f32::MAX } else { -f32::MAX }).collect();
        for poison in [None, Some(f32::NAN), Some(f32::INFINITY), Some(f32::NEG_INFINITY)] {
            for at in [0, 7, 23] {
                let (mut e, mut a) = (vec![f32::MAX; 24], big.clone());
                if let Some(p) = poison {
                    e[at] = p;
                    a[23 - at] = p;
                }
                assert_eq!(
                    bits(&extract(&ts, &e, &a)),
                    bits(&extract_reference(&ts, &e, &a)),
                    "{poison:?} at {at}"
                );
                assert_eq!(extract(&ts, &e, &a).valid_frames() == 3, poison.is_none());
            }
        }
    }

    #[test]
    fn chunked_building_matches_whole_series_extraction() {
        let mut rng = Rng::new(5);
        for case in 0..100 {
            let n = rng.range(0, 2_000) as usize;
            let (ts, e, a) = random_series(&mut rng, n, 0.01);
            let mut b = FrameBuilder::default();
            let mut at = 0;
            while at < n {
                let len = (rng.range(1, 40) as usize).min(n - at);
                b.push(&ts[at..at + len], &e[at..at + len], &a[at..at + len]);
                at += len;
            }
            assert_eq!(bits(&b.finish()), bits(&extract_reference(&ts, &e, &a)), "case {case}");
        }
    }

    /// Values worked out by hand, so a formula shared by `extract` and
    /// `extract_reference` (a sample std for a population std, a wrong
    /// time-of-day term) cannot pass by agreeing with itself.
    #[test]
    fn one_frame_matches_values_worked_out_by_hand() {
        // enmo 0.00, 0.01, …, 0.11: mean 0.055; population std
        // 0.01·sqrt(143/12) = 0.0345205…; a sample std would be 0.0360555….
        let enmo: Vec<f32> = (0..12).map(|i| i as f32 / 100.0).collect();
        let anglez = [10.0f32; 12];
        for (seconds, tod) in [(0u32, 1.0f32), (43_200, -1.0), (21_600, 0.0), (64_800, 0.0)] {
            let f = extract(&[seconds; 12], &enmo, &anglez);
            assert_eq!(f.frames(), 1);
            let v = f.values.row(0);
            assert!((v[0] - tod).abs() < 1e-6, "tod of {seconds} s: {}", v[0]);
            assert!((v[1] - 0.055).abs() < 1e-7, "enmo mean {}", v[1]);
            assert!((v[2] - 0.034_520_5).abs() < 1e-6, "enmo population std {}", v[2]);
            assert_eq!((v[3], v[4]), (10.0, 0.0), "anglez mean and std");
        }
        // Time of day is the mean over the frame's own samples: half at
        // midnight (1) and half at noon (-1) average to 0.
        let mut seconds = [0u32; 12];
        seconds[6..].fill(43_200);
        let f = extract(&seconds, &enmo, &anglez);
        assert!(f.values[[0, 0]].abs() < 1e-7, "{}", f.values[[0, 0]]);
    }

    #[test]
    fn edge_cases() {
        // Shorter than a window: no frames.
        for n in 0..12 {
            let f = extract(&vec![0; n], &vec![0.0; n], &vec![0.0; n]);
            assert_eq!(f.frames(), 0);
        }
        // One non-finite sample invalidates exactly the frames that contain it.
        let n = 30;
        let ts: Vec<u32> = (0..n).map(|i| i * 5).collect();
        let mut e = vec![0.01f32; n as usize];
        let a = vec![10.0f32; n as usize];
        e[13] = f32::NAN;
        let f = extract(&ts, &e, &a);
        assert_eq!(f.valid.to_vec(), [true, false, false, true]); // frames cover 0–11, 6–17, 12–23, 18–29
        let f = extract(&ts, &vec![0.01; n as usize], &a);
        assert_eq!(f.valid.to_vec(), [true, true, true, true]);
        // Constant signal: std exactly 0, mean exactly the value.
        assert_eq!(f.values[[0, 1]], 0.01f32);
        assert_eq!(f.values[[0, 2]], 0.0);
        assert_eq!(f.values[[0, 3]], 10.0);
        // Midnight: tod = 1; noon: tod = −1.
        let f = extract(&[0; 12], &[0.0; 12], &[0.0; 12]);
        assert_eq!(f.values[[0, 0]], 1.0);
        let f = extract(&[43_200; 12], &[0.0; 12], &[0.0; 12]);
        assert_eq!(f.values[[0, 0]], -1.0);
    }

    #[test]
    fn daylight_saving_jumps_use_the_local_clock() {
        // 01:59:30 … then back to 01:00:00: tod follows the local clock.
        let ts: Vec<u32> =
            (0..6).map(|i| 7170 + 5 * i).chain((0..6).map(|i| 3600 + 5 * i)).collect();
        let e = [0.0f32; 12];
        let f = extract(&ts, &e, &e);
        let r = extract_reference(&ts, &e, &e);
        assert_eq!(bits(&f), bits(&r));
        let expect: f64 = ts.iter().map(|&t| tod_term(t)).sum::<f64>() / 12.0;
        assert_eq!(f.values[[0, 0]], expect as f32);
    }
}
