//! What makes a cold-prep speedup misleading, read from its own figures.

use super::rounds;
use crate::rundir::report::PrepSide;

/// When the N-process preparation needs more than this many times the
/// serial CPU for the same series, its processes paid for more than the work.
const CPU_RATIO_WARNING: f64 = 2.0;

/// What makes a cold-prep speedup misleading, found in its own figures:
/// - the parallel processes' CPU far above the serial process's for the same
///   series (on this project's machines: fresh memory faulted in as huge
///   pages the kernel had to zero, with fault counts unchanged);
/// - start-up dominating: most parallel workers spent more than a quarter of
///   their life before their first series.
pub fn warnings(
    serial: &PrepSide,
    parallel: &PrepSide,
    rounds: &[rounds::Round],
    unit: &str,
) -> Vec<String> {
    let mut out = Vec::new();
    let ratio = rounds
        .iter()
        .map(|r| r.parallel_cpu_s / r.serial_cpu_s.max(1e-9))
        .fold(parallel.cpu_s / serial.cpu_s.max(1e-9), f64::max);
    if ratio > CPU_RATIO_WARNING {
        out.push(format!(
            "the {}-process preparation used {ratio:.1}x the serial preparation's CPU for the same {}: its processes paid for more than the work (fresh memory the kernel had to fault in and zero, often as huge pages; see environment.json transparent_hugepages and the workers' fault counts), so this speedup understates what the processes can do; run it again with more --rounds, or compare two runs with `coordinator compare`",
            parallel.workers.len(),
            match unit {
                "series" => "series".to_string(),
                other => format!("{other}s"),
            }
        ));
    }
    let first: std::collections::BTreeMap<u32, f64> =
        parallel.timeline.iter().fold(Default::default(), |mut m, t| {
            let e = m.entry(t.rank).or_insert(f64::INFINITY);
            *e = e.min(t.start_s);
            m
        });
    let slow_starts = parallel
        .workers
        .iter()
        .filter(|w| first.get(&w.rank).is_some_and(|s| *s > 0.25 * w.wall_s))
        .count();
    if slow_starts * 2 > parallel.workers.len() {
        out.push(format!(
            "start-up dominated the parallel phase: {slow_starts} of {} workers spent more than a quarter of their life before their first {unit}",
            parallel.workers.len()
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::warnings;
    use crate::modes::cold_prep::{PrepSide, Section, rounds};

    /// The two sides of the recorded cold-prep fixture (a fast run).
    fn sides() -> (PrepSide, PrepSide) {
        let r: serde_json::Value =
            serde_json::from_str(include_str!("../../render/fixtures/cold-prep-report.json"))
                .unwrap();
        let side = |k: &str| serde_json::from_value(r[k].clone()).unwrap();
        (side("serial"), side("parallel"))
    }

    /// The walls the console states: round 1's for one round, each
    /// side's median over rounds with rounds.
    #[test]
    fn the_walls_are_round_ones_or_the_medians_over_rounds() {
        let r: serde_json::Value =
            serde_json::from_str(include_str!("../../render/fixtures/cold-prep-report.json"))
                .unwrap();
        let mut section: Section = serde_json::from_value(r).unwrap();
        assert!(section.rounds.is_empty());
        assert_eq!(section.walls(), (section.serial.wall_s, section.parallel.wall_s));
        let round = |n: u32, serial_wall_s: f64, parallel_wall_s: f64| rounds::Round {
            round: n,
            first: rounds::First::of(n),
            serial_wall_s,
            parallel_wall_s,
            serial_cpu_s: 1.0,
            parallel_cpu_s: 1.0,
            speedup: serial_wall_s / parallel_wall_s,
        };
        section.rounds = vec![round(1, 4.0, 2.0), round(2, 6.0, 3.0), round(3, 5.0, 2.2)];
        assert_eq!(section.walls(), (5.0, 2.2));
    }

    #[test]
    fn a_parallel_phase_that_paid_for_more_than_the_work_is_flagged() {
        let (serial, mut parallel) = sides();
        assert!(
            warnings(&serial, &parallel, &[], "series").is_empty(),
            "the fixture is a plain run"
        );
        parallel.cpu_s = 2.5 * serial.cpu_s;
        let w = warnings(&serial, &parallel, &[], "series");
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("used 2.5x the serial preparation's CPU for the same series"),
            "{}",
            w[0]
        );
        let w = warnings(&serial, &parallel, &[], "item");
        assert!(w[0].contains("CPU for the same items:"), "{}", w[0]);
        // Any round's ratio counts: round 1 plain, a later round at 3x.
        let (serial, parallel) = sides();
        let round = |serial_cpu_s: f64, parallel_cpu_s: f64| rounds::Round {
            round: 2,
            first: rounds::First::Parallel,
            serial_wall_s: 1.0,
            parallel_wall_s: 1.0,
            serial_cpu_s,
            parallel_cpu_s,
            speedup: 1.0,
        };
        assert!(warnings(&serial, &parallel, &[round(2.0, 3.0)], "series").is_empty());
        assert!(
            warnings(&serial, &parallel, &[round(2.0, 4.0)], "series").is_empty(),
            "2x is the edge"
        );
        let w = warnings(&serial, &parallel, &[round(2.0, 6.0)], "series");
        assert!(w[0].contains("used 3.0x the serial preparation's CPU"), "{w:?}");
    }

    #[test]
    fn start_up_dominating_the_parallel_phase_is_flagged() {
        let (serial, mut parallel) = sides();
        for t in &mut parallel.timeline {
            t.start_s += 10.0;
        }
        let w = warnings(&serial, &parallel, &[], "series");
        assert!(w.iter().any(|w| w.starts_with("start-up dominated the parallel phase")), "{w:?}");
        // At the edge: a first series at a quarter of the worker's life is
        // not slow, at half of it is.
        let at = |fraction: f64| {
            let (serial, mut parallel) = sides();
            let walls: std::collections::BTreeMap<u32, f64> =
                parallel.workers.iter().map(|w| (w.rank, w.wall_s)).collect();
            for t in &mut parallel.timeline {
                t.start_s = fraction * walls[&t.rank];
            }
            warnings(&serial, &parallel, &[], "series")
                .iter()
                .any(|w| w.starts_with("start-up dominated"))
        };
        assert!(!at(0.25) && at(0.5));
        // Two of the fixture's four workers slow is half, not most.
        let (serial, mut parallel) = sides();
        let slow: Vec<u32> = parallel.workers.iter().take(2).map(|w| w.rank).collect();
        assert_eq!(parallel.workers.len(), 4);
        for t in &mut parallel.timeline {
            t.start_s = if slow.contains(&t.rank) { 1e3 } else { 0.0 };
        }
        assert!(warnings(&serial, &parallel, &[], "series").is_empty(), "2 of 4 slow is not most");
        // And one of two: half again.
        parallel.workers.drain(1..3);
        assert_eq!(parallel.workers.len(), 2);
        assert!(warnings(&serial, &parallel, &[], "series").is_empty(), "1 of 2 slow is not most");
    }
}
