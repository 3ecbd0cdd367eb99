//! A workers sweep (`--workers 1,2,4,8`): the parallel preparation once per
//! count in every round, beside the same serial preparation, and how the
//! speedup grows with the count.
//!
//! Per count: the speedup (the median over rounds of serial wall / that
//! count's wall, with its bootstrap interval when there are rounds), the
//! efficiency (speedup / count) and the Karp–Flatt serial fraction
//! `e = (1/S − 1/p) / (1 − 1/p)`, which stays flat when the loss is a fixed
//! serial part and grows when the loss grows with the count (contention,
//! start-up). Over the counts: Amdahl's law `S(p) = 1 / (f + (1 − f)/p)`
//! fitted by least squares in `1/S − 1/p = f (1 − 1/p)`.

use serde::{Deserialize, Serialize};

/// What a sweep adds to the report.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Sweep {
    /// One point per count, increasing.
    pub points: Vec<Point>,
    pub amdahl: Amdahl,
    /// The machine's logical cores: counts above it share cores (the plot
    /// marks them). Absent in reports written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cores: Option<u32>,
    /// The counts as a scan: each count's parallel walls over the rounds
    /// and its processes' memory (the sum of each worker's tree peak, an
    /// upper bound), with the recommendation a `--param` scan makes.
    /// Absent in reports written before it was computed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scan: Option<crate::modes::scan::Scan>,
    /// The count beyond which Karp–Flatt's serial fraction rises by more
    /// than [`KARP_FLATT_RISE`] to the next count: past it the loss grows
    /// with the count (contention, start-up), not a fixed serial part.
    /// Absent when it never rises so, or in older reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub karp_flatt_rises_after: Option<u32>,
}

impl Sweep {
    /// What the sweep recommends, as its sentence (none in older reports).
    pub fn recommendation(&self) -> Option<&str> {
        self.scan.as_ref().map(|s| s.recommendation.sentence.as_str())
    }

    /// Where Karp–Flatt's serial fraction starts to rise, in a sentence.
    pub fn karp_flatt_sentence(&self) -> Option<String> {
        let defined = self.points.iter().filter(|p| p.karp_flatt.is_some()).count();
        match self.karp_flatt_rises_after {
            Some(count) => Some(format!(
                "Karp–Flatt's serial fraction rises beyond {count} processes: past that count the loss grows with the count (contention, start-up), so more processes buy less"
            )),
            None if self.scan.is_some() && defined >= 2 => Some(format!(
                "Karp–Flatt's serial fraction does not rise by more than {KARP_FLATT_RISE} from one count to the next: a fixed serial part, not the count, limits the speedup"
            )),
            None => None,
        }
    }
}

/// A rise of Karp–Flatt's serial fraction from one count to the next that
/// counts as rising: two points of the wall, about a round's noise.
pub const KARP_FLATT_RISE: f64 = 0.02;

/// The count beyond which the serial fraction rises by more than
/// [`KARP_FLATT_RISE`] (the first such step), over counts above one.
pub fn karp_flatt_rises_after(points: &[Point]) -> Option<u32> {
    let defined: Vec<(u32, f64)> = points
        .iter()
        .filter_map(|p| Some((p.workers, p.karp_flatt.filter(|e| e.is_finite())?)))
        .collect();
    defined.windows(2).find(|w| w[1].1 - w[0].1 > KARP_FLATT_RISE).map(|w| w[0].0)
}

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Point {
    /// Processes the parallel preparation started (the count asked for,
    /// or the number of series when there are fewer).
    pub workers: u32,
    /// The parallel preparation's wall time (the median over rounds).
    pub wall_s: f64,
    /// Serial wall / this wall, the median over rounds.
    pub speedup: f64,
    /// With 6 rounds or more: the bootstrap 95% interval of that median.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speedup_ci95: Option<[f64; 2]>,
    /// With rounds: that median's interval with its coverage (the range
    /// of the rounds below 6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speedup_interval: Option<crate::stats::Interval>,
    /// Speedup / workers.
    pub efficiency: f64,
    /// Karp–Flatt's experimentally determined serial fraction (null for
    /// one worker, where it is undefined).
    pub karp_flatt: Option<f64>,
}

/// Amdahl's law fitted over the counts above one.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Amdahl {
    /// The fitted serial fraction `f` (null with no count above one).
    pub serial_fraction: Option<f64>,
    /// `1 / f`, the speedup no count can pass (null when `f` is not
    /// positive).
    pub speedup_limit: Option<f64>,
}

impl Amdahl {
    /// The speedup Amdahl's law with this fit predicts for `p` workers.
    pub fn speedup(&self, p: f64) -> Option<f64> {
        self.serial_fraction.map(|f| 1.0 / (f + (1.0 - f) / p))
    }
}

/// Karp–Flatt's serial fraction for speedup `s` on `p` workers.
pub fn karp_flatt(s: f64, p: u32) -> Option<f64> {
    (p > 1).then(|| {
        let p = p as f64;
        (1.0 / s - 1.0 / p) / (1.0 - 1.0 / p)
    })
}

/// One count's walls: per round, (serial wall, this count's wall).
pub struct Measured {
    pub workers: u32,
    pub walls: Vec<(f64, f64)>,
}

/// The sweep over `measured` (increasing counts) on a machine of `cores`.
pub fn sweep(measured: &[Measured], cores: u32) -> Sweep {
    let points: Vec<Point> = measured
        .iter()
        .map(|m| {
            let speedups: Vec<f64> = m.walls.iter().map(|(s, p)| s / p).collect();
            let walls: Vec<f64> = m.walls.iter().map(|(_, p)| *p).collect();
            let (speedup, ci) = if speedups.len() > 1 {
                let s = crate::stats::summarize(&speedups, 0);
                (s.median, Some(s.median_interval))
            } else {
                (speedups.first().copied().unwrap_or(f64::NAN), None)
            };
            Point {
                workers: m.workers,
                wall_s: crate::stats::median(&walls),
                speedup,
                speedup_ci95: ci.and_then(|i| i.ci95()),
                speedup_interval: ci,
                efficiency: speedup / m.workers.max(1) as f64,
                karp_flatt: karp_flatt(speedup, m.workers),
            }
        })
        .collect();
    let amdahl = fit(&points);
    let karp_flatt_rises_after = karp_flatt_rises_after(&points);
    Sweep { points, amdahl, cores: Some(cores), scan: None, karp_flatt_rises_after }
}

/// Least squares of `1/S − 1/p = f (1 − 1/p)` over the points with p > 1.
fn fit(points: &[Point]) -> Amdahl {
    let (mut xy, mut xx) = (0.0, 0.0);
    for pt in points.iter().filter(|pt| pt.workers > 1 && pt.speedup.is_finite()) {
        let p = pt.workers as f64;
        let x = 1.0 - 1.0 / p;
        let y = 1.0 / pt.speedup - 1.0 / p;
        xy += x * y;
        xx += x * x;
    }
    let f = (xx > 0.0).then(|| xy / xx);
    Amdahl { serial_fraction: f, speedup_limit: f.filter(|f| *f > 0.0).map(|f| 1.0 / f) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measured(f: f64, counts: &[u32]) -> Vec<Measured> {
        counts
            .iter()
            .map(|&p| {
                let s = 1.0 / (f + (1.0 - f) / p as f64);
                Measured { workers: p, walls: vec![(10.0, 10.0 / s)] }
            })
            .collect()
    }

    /// Speedups made by Amdahl's law with f = 0.1 give back f, a flat
    /// Karp–Flatt fraction of 0.1, and the limit 10.
    #[test]
    fn amdahl_speedups_fit_back_to_their_serial_fraction() {
        let s = sweep(&measured(0.1, &[1, 2, 4, 8]), 8);
        let f = s.amdahl.serial_fraction.unwrap();
        assert!((f - 0.1).abs() < 1e-12, "{f}");
        assert!((s.amdahl.speedup_limit.unwrap() - 10.0).abs() < 1e-9);
        assert_eq!(s.points[0].karp_flatt, None, "undefined for one worker");
        for pt in &s.points[1..] {
            assert!((pt.karp_flatt.unwrap() - 0.1).abs() < 1e-12, "{pt:?}");
        }
        assert!((s.points[2].efficiency - s.points[2].speedup / 4.0).abs() < 1e-15);
        assert!((s.amdahl.speedup(8.0).unwrap() - s.points[3].speedup).abs() < 1e-9);
    }

    /// The fit takes only counts above one with a measured speedup: a count
    /// with no round (its speedup NaN) changes nothing, and a sweep of one
    /// process has nothing to fit.
    #[test]
    fn the_fit_leaves_out_unmeasured_counts_and_has_nothing_from_one_process() {
        let mut m = measured(0.1, &[1, 2, 4]);
        m.push(Measured { workers: 8, walls: Vec::new() });
        let s = sweep(&m, 8);
        assert!(s.points[3].speedup.is_nan());
        assert!((s.amdahl.serial_fraction.unwrap() - 0.1).abs() < 1e-12, "{:?}", s.amdahl);
        let one = sweep(&measured(0.1, &[1]), 8);
        assert_eq!(one.amdahl.serial_fraction, None);
        assert_eq!(one.amdahl.speedup_limit, None);
    }

    /// The rise is found where the loss grows with the count, and only
    /// there: a flat fraction (Amdahl's own) never rises.
    #[test]
    fn karp_flatt_rises_where_the_loss_grows_with_the_count() {
        assert_eq!(sweep(&measured(0.1, &[1, 2, 4, 8]), 8).karp_flatt_rises_after, None);
        let walls = |s: f64| vec![(10.0, 10.0 / s)];
        let m = [(1, 1.0), (2, 1.9), (4, 3.4), (8, 3.0)]
            .map(|(w, s)| Measured { workers: w, walls: walls(s) });
        // e(2) = 0.053, e(4) = 0.059, e(8) = 0.238: it rises after 4.
        assert_eq!(sweep(&m, 8).karp_flatt_rises_after, Some(4));
    }

    /// Perfect scaling: no serial fraction, no limit.
    #[test]
    fn perfect_scaling_has_no_serial_fraction_and_no_limit() {
        let s = sweep(&measured(0.0, &[2, 4]), 8);
        assert!(s.amdahl.serial_fraction.unwrap().abs() < 1e-12);
        assert_eq!(s.amdahl.speedup_limit, None);
    }

    /// Rounds give a median and an interval per count.
    #[test]
    fn rounds_give_a_median_and_an_interval() {
        let m = [Measured { workers: 2, walls: vec![(4.0, 2.0), (4.0, 2.5), (4.0, 2.2)] }];
        let s = sweep(&m, 8);
        let pt = &s.points[0];
        assert!((pt.speedup - 4.0 / 2.2).abs() < 1e-12);
        assert_eq!(pt.wall_s, 2.2);
        // Three rounds: the range, with its 75% coverage, and no 95% interval.
        let i = pt.speedup_interval.unwrap();
        assert_eq!((i.low, i.high, i.coverage), (4.0 / 2.5, 4.0 / 2.0, 0.75));
        assert!(pt.speedup_ci95.is_none());
        // One round: its speedup, and no interval of one sample.
        let one = sweep(&[Measured { workers: 2, walls: vec![(4.0, 2.0)] }], 8);
        assert_eq!(one.points[0].speedup, 2.0);
        assert!(one.points[0].speedup_interval.is_none());
    }
}
