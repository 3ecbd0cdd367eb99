//! Change points in a series, by e-divisive means (Matteson and James,
//! 2014, the method MongoDB's and Otava's histories use): the split that
//! most separates a segment's two sides by their energy distance, kept
//! when a permutation test finds it significant, then each side searched
//! again, until no split is significant.
//!
//! It can say "no": a split is kept only when fewer than 1% of the
//! series's reshufflings (within the segment) separate as well, so a flat
//! noisy series reads as flat in about 99 of 100 tries.

/// Reshufflings per test (p can be as small as 1 / (PERMUTATIONS + 1)).
pub const PERMUTATIONS: usize = 499;
/// A split is kept when its p-value is below this.
pub const SIGNIFICANCE: f64 = 0.01;
/// The shortest segment either side of a change, unless asked otherwise.
pub const MIN_SEGMENT: usize = 5;

/// A change point: the index of the first value after the change, and
/// the permutation test's p-value for it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChangePoint {
    pub at: usize,
    pub p: f64,
}

/// The change points of `xs` in order, each side at least `min_segment`
/// long (at least 2: a side's spread needs two values). A series shorter
/// than twice that has none. `seed` makes the permutations repeatable.
pub fn change_points(xs: &[f64], min_segment: usize, seed: u64) -> Vec<ChangePoint> {
    let min = min_segment.max(2);
    let mut rng = evidence::rng::Rng::new(seed);
    let mut found: Vec<ChangePoint> = Vec::new();
    // Segments still to search, as [start, end).
    let mut segments = vec![(0, xs.len())];
    loop {
        // The strongest split over every segment still open.
        let best = segments
            .iter()
            .enumerate()
            .filter_map(|(i, &(a, b))| best_split(&xs[a..b], min).map(|(t, q)| (i, a + t, q)))
            .max_by(|x, y| x.2.total_cmp(&y.2));
        let Some((i, at, q)) = best else { break };
        let (a, b) = segments[i];
        let p = permutation_p(&xs[a..b], min, q, &mut rng);
        if p >= SIGNIFICANCE {
            break;
        }
        found.push(ChangePoint { at, p });
        segments.splice(i..=i, [(a, at), (at, b)]);
    }
    found.sort_by_key(|c| c.at);
    found
}

/// The split of `xs` (left `..t`, right `t..`) with the largest scaled
/// energy distance between its sides, and that distance; None when the
/// series is too short for two sides of `min`.
fn best_split(xs: &[f64], min: usize) -> Option<(usize, f64)> {
    let n = xs.len();
    if n < 2 * min {
        return None;
    }
    // within_left[t]: Σ|xi − xj| over i < j < t; within_right[t] over t ≤ i < j.
    let mut within_left = vec![0.0; n + 1];
    for t in 1..=n {
        let add: f64 = xs[..t - 1].iter().map(|x| (x - xs[t - 1]).abs()).sum();
        within_left[t] = within_left[t - 1] + add;
    }
    let mut within_right = vec![0.0; n + 1];
    for t in (0..n).rev() {
        let add: f64 = xs[t + 1..].iter().map(|x| (x - xs[t]).abs()).sum();
        within_right[t] = within_right[t + 1] + add;
    }
    let all = within_left[n];
    let mut best: Option<(usize, f64)> = None;
    for t in min..=n - min {
        let (m, k) = (t as f64, (n - t) as f64);
        let between = all - within_left[t] - within_right[t];
        let energy = 2.0 * between / (m * k)
            - 2.0 * within_left[t] / (m * (m - 1.0))
            - 2.0 * within_right[t] / (k * (k - 1.0));
        let q = m * k / n as f64 * energy;
        if best.is_none_or(|(_, b)| q > b) {
            best = Some((t, q));
        }
    }
    best
}

/// The share of reshufflings of `xs` whose best split separates at least
/// as well as `q` (counting the series itself, so never 0).
fn permutation_p(xs: &[f64], min: usize, q: f64, rng: &mut evidence::rng::Rng) -> f64 {
    let mut shuffled = xs.to_vec();
    let mut as_good = 0;
    for _ in 0..PERMUTATIONS {
        for i in (1..shuffled.len()).rev() {
            let j = rng.range(0, i as u64 + 1) as usize;
            shuffled.swap(i, j);
        }
        if best_split(&shuffled, min).is_some_and(|(_, r)| r >= q) {
            as_good += 1;
        }
    }
    (as_good + 1) as f64 / (PERMUTATIONS + 1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 100 ms per run with 3% noise, `step` added from run `from` on
    /// (0-based index).
    fn series(n: usize, from: usize, step: f64, seed: u64) -> Vec<f64> {
        let mut rng = evidence::rng::Rng::new(seed);
        (0..n)
            .map(|i| {
                let base = if i >= from { 0.1 * (1.0 + step) } else { 0.1 };
                base * (1.0 + 0.03 * rng.normal())
            })
            .collect()
    }

    #[test]
    fn a_step_is_found_where_it_is() {
        // 40 runs, +15% from the 25th (index 24) on: one change at 25 ± 1.
        for seed in 0..10 {
            let xs = series(40, 24, 0.15, seed);
            let found = change_points(&xs, MIN_SEGMENT, seed);
            assert_eq!(found.len(), 1, "seed {seed}: {found:?}");
            assert!(found[0].at.abs_diff(24) <= 1, "seed {seed}: {found:?}");
            assert!(found[0].p < SIGNIFICANCE);
        }
    }

    #[test]
    fn a_flat_series_reads_flat_in_at_least_95_of_100() {
        let false_alarms =
            (0..100).filter(|&s| !change_points(&series(40, 40, 0.0, 1000 + s), 5, s).is_empty());
        let n = false_alarms.count();
        assert!(n <= 5, "{n} of 100 flat series had a change point");
    }

    #[test]
    fn two_steps_are_both_found_and_short_series_have_none() {
        let mut xs = series(45, 15, 0.2, 7);
        for x in &mut xs[30..] {
            *x *= 0.7;
        }
        let at: Vec<usize> = change_points(&xs, 5, 7).iter().map(|c| c.at).collect();
        assert_eq!(at.len(), 2, "{at:?}");
        assert!(at[0].abs_diff(15) <= 1 && at[1].abs_diff(30) <= 1, "{at:?}");
        // Fewer than two segments' worth: nothing, however large the step.
        let short = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 9.0, 9.0, 9.0, 9.0, 9.0, 9.0];
        assert!(change_points(&short, 7, 0).is_empty());
        assert_eq!(
            change_points(&short, 6, 0),
            [ChangePoint { at: 6, p: change_points(&short, 6, 0)[0].p }]
        );
        // Too few values for any reshuffling to be rare: a perfect split of
        // 4 against 5 happens in 2 of 126 orders (1.6%), so it is not kept.
        let fewer = [1.0, 1.0, 1.0, 1.0, 9.0, 9.0, 9.0, 9.0, 9.0];
        assert!(change_points(&fewer, 4, 0).is_empty());
    }

    #[test]
    fn the_split_is_where_the_sides_differ_most() {
        // The statistic itself: a clean step is split exactly there, and
        // a constant series has no separation anywhere.
        let xs = [1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0];
        assert_eq!(best_split(&xs, 2).map(|(t, _)| t), Some(3));
        let flat = [3.0; 8];
        assert_eq!(best_split(&flat, 2).map(|(_, q)| q), Some(0.0));
    }
}
