//! Axes: one tick per row, ticks at round values, and process counts.

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::prelude::*;

/// The y coordinate of row `i` of `n`, so that row 0 is at the top.
pub fn row_y(i: usize, n: usize) -> f64 {
    (n - 1 - i) as f64
}

/// A y axis with one tick per row, at 0, 1, …, n − 1.
#[derive(Clone)]
pub struct RowsAxis(usize);

impl Ranged for RowsAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let r = self.range();
        let t = (v - r.start) / (r.end - r.start);
        limit.0 + (t * (limit.1 - limit.0) as f64).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, _hint: Hint) -> Vec<f64> {
        (0..self.0).map(|i| i as f64).collect()
    }

    fn range(&self) -> std::ops::Range<f64> {
        -0.6..(self.0 as f64 - 0.4)
    }
}

/// How an axis's ticks step: 1, 2 or 5 × 10^k, or a power of two (bytes,
/// so MiB ticks fall at 1, 2, 4, 8, … MiB).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Steps {
    Decimal,
    Binary,
}

/// Ticks at round values within `lo..=hi`: the multiples of the smallest
/// step of `steps` that makes at most `most` intervals.
pub fn round_ticks(lo: f64, hi: f64, steps: Steps, most: usize) -> Vec<f64> {
    if !(lo.is_finite() && hi.is_finite() && hi > lo) {
        return vec![if lo.is_finite() { lo } else { 0.0 }];
    }
    let want = (hi - lo) / most.max(1) as f64;
    // The step as a whole multiple of a power: m × 10^k or 1 × 2^k.
    let (m, radix, k) = match steps {
        Steps::Decimal => {
            let k = want.log10().floor() as i32;
            let m = [1.0, 2.0, 5.0].into_iter().find(|m| m * 10f64.powi(k) >= want);
            match m {
                Some(m) => (m, 10f64, k),
                None => (1.0, 10f64, k + 1),
            }
        }
        Steps::Binary => (1.0, 2f64, want.log2().ceil() as i32),
    };
    // i·m scaled by radix^k, dividing by an exact power where k < 0, so a
    // tick is the double nearest its decimal value (0.95, not 0.9500…01).
    let at = |i: i64| match k >= 0 {
        true => i as f64 * m * radix.powi(k),
        false => i as f64 * m / radix.powi(-k),
    };
    let step = at(1);
    // A hair of slack, so an end that is a multiple (-0.3 of 0.1) counts.
    let (first, last) = ((lo / step - 1e-9).ceil() as i64, (hi / step + 1e-9).floor() as i64);
    // `+ 0.0` turns a -0 into 0, so a zero tick never reads "-0".
    (first..=last).map(|i| at(i) + 0.0).collect()
}

/// A numeric axis over `range` with its ticks at round values.
#[derive(Clone)]
pub struct ValueAxis {
    range: std::ops::Range<f64>,
    ticks: Vec<f64>,
}

impl ValueAxis {
    /// Ticks within `ticks_within` (inside `range`), at most `most` intervals.
    pub fn new(
        range: std::ops::Range<f64>,
        ticks_within: std::ops::Range<f64>,
        steps: Steps,
        most: usize,
    ) -> ValueAxis {
        ValueAxis::around(range, ticks_within, 0.0, steps, most)
    }

    /// The same, with ticks round as distances from `origin` (a ratio's
    /// axis read as percent change ticks at 1 ± round amounts).
    pub fn around(
        range: std::ops::Range<f64>,
        ticks_within: std::ops::Range<f64>,
        origin: f64,
        steps: Steps,
        most: usize,
    ) -> ValueAxis {
        let (lo, hi) = (ticks_within.start - origin, ticks_within.end - origin);
        let ticks = round_ticks(lo, hi, steps, most).into_iter().map(|t| t + origin).collect();
        ValueAxis { range, ticks }
    }

    /// The same axis with only its whole-numbered ticks: places (a run, a
    /// commit, a window) have no halves, and a half labelled as a whole
    /// number would read as its neighbour twice.
    pub fn whole(mut self) -> ValueAxis {
        self.ticks.retain(|t| t.fract() == 0.0);
        self
    }
}

impl Ranged for ValueAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let t = (v - self.range.start) / (self.range.end - self.range.start);
        limit.0 + (t * (limit.1 - limit.0) as f64).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, _hint: Hint) -> Vec<f64> {
        self.ticks.clone()
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.range.clone()
    }
}

/// An x axis of process counts with a tick at each count and nowhere else:
/// on a log-2 scale where each count doubles the one before (1, 2, 4, 8),
/// else linear.
#[derive(Clone)]
pub struct CountsAxis {
    counts: Vec<f64>,
    log2: bool,
}

impl CountsAxis {
    /// `counts`, increasing and at least one.
    pub fn new(counts: &[u32]) -> CountsAxis {
        let log2 = counts.len() >= 2 && counts.windows(2).all(|w| w[1] == 2 * w[0]);
        CountsAxis { counts: counts.iter().map(|c| f64::from(*c)).collect(), log2 }
    }

    /// Where a count sits along the axis.
    pub fn position(&self, count: f64) -> f64 {
        if self.log2 { count.log2() } else { count }
    }

    /// The count at position `p` along the axis.
    pub fn count_at(&self, p: f64) -> f64 {
        if self.log2 { p.exp2() } else { p }
    }

    pub fn is_log2(&self) -> bool {
        self.log2
    }

    /// The count halfway (along the axis) between `a` and `b`.
    pub fn between(&self, a: f64, b: f64) -> f64 {
        self.count_at((self.position(a) + self.position(b)) / 2.0)
    }
}

impl Ranged for CountsAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let r = self.range();
        let (lo, hi) = (self.position(r.start), self.position(r.end));
        let t = (self.position(*v) - lo) / (hi - lo);
        limit.0 + (t * (limit.1 - limit.0) as f64).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, _hint: Hint) -> Vec<f64> {
        self.counts.clone()
    }

    fn range(&self) -> std::ops::Range<f64> {
        let first = self.position(self.counts[0]);
        let last = self.position(*self.counts.last().unwrap_or(&self.counts[0]));
        let pad = ((last - first) * 0.06).max(0.25);
        self.count_at(first - pad)..self.count_at(last + pad)
    }
}

pub fn rows_axis(n: usize) -> RowsAxis {
    RowsAxis(n)
}

pub fn row_label(labels: &[String], y: f64) -> String {
    let n = labels.len();
    let i = y.round();
    if (y - i).abs() > 1e-6 || i < 0.0 || i as usize >= n {
        return String::new();
    }
    labels[n - 1 - i as usize].clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_fall_at_round_values_decimal_or_binary() {
        assert_eq!(round_ticks(0.0, 0.75, Steps::Decimal, 3), [0.0, 0.5]);
        assert_eq!(round_ticks(0.0, 0.75, Steps::Decimal, 4), [0.0, 0.2, 0.4, 0.6]);
        assert_eq!(round_ticks(0.0, 530.0, Steps::Decimal, 2), [0.0, 500.0]);
        assert_eq!(round_ticks(0.93, 1.12, Steps::Decimal, 8), [0.95, 1.0, 1.05, 1.1]);
        let mib = 1024.0 * 1024.0;
        // 0..19.1 MiB: 8 MiB steps, never 9.5.
        assert_eq!(round_ticks(0.0, 19.1 * mib, Steps::Binary, 2), [0.0, 16.0 * mib]);
        assert_eq!(round_ticks(0.0, 19.1 * mib, Steps::Binary, 3), [0.0, 8.0 * mib, 16.0 * mib]);
        assert_eq!(round_ticks(-0.3, 0.0, Steps::Decimal, 3), [-0.3, -0.2, -0.1, 0.0]);
        assert_eq!(round_ticks(2.0, 2.0, Steps::Decimal, 3), [2.0]);
    }

    #[test]
    fn a_counts_axis_is_log_2_only_where_each_count_doubles() {
        let doubling = CountsAxis::new(&[1, 2, 4, 8]);
        assert!(doubling.is_log2());
        assert_eq!(doubling.key_points(3usize), [1.0, 2.0, 4.0, 8.0]);
        // Equal steps along the axis between doublings.
        let (a, b, c) = (
            doubling.map(&1.0, (0, 300)),
            doubling.map(&2.0, (0, 300)),
            doubling.map(&4.0, (0, 300)),
        );
        assert!(((b - a) - (c - b)).abs() <= 1, "{a} {b} {c}");
        let linear = CountsAxis::new(&[1, 2, 3, 4]);
        assert!(!linear.is_log2());
        assert_eq!(linear.between(2.0, 4.0), 3.0);
        assert!((doubling.between(2.0, 8.0) - 4.0).abs() < 1e-9);
    }
}
