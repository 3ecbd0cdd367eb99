//! The processes: an interrupted parallel phase leaves none, no more start
//! than there are series, and a workers sweep measures every count.

use harness::data::tiny;
use harness::reports;
use harness::{json, run};
use report::modes::scan::Outcome;

#[test]
fn sigint_during_parallel_preparation_leaves_no_worker_and_no_report() {
    let (_tmp, out, mut c) = harness::coordinator_with_output();
    c.args(["--mode", "cold-prep", "--workers", "8", "--data"]).arg(&tiny().frozen);
    let mut r = harness::Running::spawn(c);
    // Wait until the 8-process phase has started and a worker is inside a series.
    r.wait_for("phase started key=cold_feature_cache_prepare_parallel");
    let line = r.wait_for("stage started");
    assert!(harness::field(&line, "pid").is_some(), "{line}");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(r.pid()), nix::sys::signal::Signal::SIGINT)
        .unwrap();
    let (status, stderr) = r.finish();
    assert_eq!(status.code(), Some(130), "{stderr}");
    let pids = harness::worker_pids(&stderr);
    assert!(pids.len() >= 2, "{stderr}");
    for pid in pids {
        assert!(!harness::alive(pid), "worker {pid} survived the interrupt");
    }
    assert!(!out.join("report.json").exists());
    assert_eq!(json(&out.join("failure.json"))["reason"], "interrupted");
}

/// More workers asked for than there are series: only as many start, the
/// console says so, and no record shows an idle process (a busy time of
/// -0.0 or a peak of 0).
#[test]
fn no_more_processes_than_series_start_and_the_console_says_so() {
    let (_tmp, out, mut c) = harness::coordinator_with_output();
    c.args(["--mode", "cold-prep", "--rounds", "1", "--workers", "64", "--data"])
        .arg(&tiny().frozen);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    let report = reports::read(&out);
    let r = reports::cold_prep(&report);
    // One round keeps the report's shape from before rounds: a plain speedup
    // of the two walls, and no rounds or interval.
    assert!(r.rounds.is_empty() && r.speedup_ci95.is_none(), "{r:?}");
    assert_eq!(r.speedup, r.serial.wall_s / r.parallel.wall_s);
    assert_eq!(json(&out.join("declaration.json"))["parameters"]["rounds"], 1);
    let series = r.counts.as_ref().expect("the recipe's counts").train_series;
    assert!(series < 64);
    let workers = &r.parallel.workers;
    assert_eq!(workers.len() as u64, series, "{workers:?}");
    // A worker may still find the queue empty (another took two series
    // first): it says so truthfully, never -0.0 or a peak of 0.
    for w in workers {
        let busy = w.busy_s;
        match w.series {
            0 => {
                assert!(busy == 0.0 && busy.is_sign_positive(), "{w:?}");
                assert!(w.peak_rss_bytes.is_none(), "{w:?}");
            }
            _ => {
                assert!(busy > 0.0, "{w:?}");
                assert!(w.peak_rss_bytes.is_some_and(|p| p > 0), "{w:?}");
            }
        }
    }
    assert!(!std::fs::read_to_string(out.join("report.json")).unwrap().contains("-0.0"));
    // The console shows the report's warning, as summary.md and the page do.
    let note = format!(
        "warning: the parallel phase had {series} process(es), not the 64 asked for: there was no more work to hand out"
    );
    assert!(f.stdout.contains(&note), "{}", f.stdout);
    let (efficiency, speedup) = (r.parallel_efficiency, r.speedup);
    assert!((efficiency - speedup / series as f64).abs() < 1e-9, "{efficiency} vs {speedup}");
}

/// `--workers 1,2,3` sweeps the parallel preparation over the counts in
/// every round: each count's stages are recorded, its speedup is the median
/// of the rounds' serial wall over its wall, Karp–Flatt and the Amdahl fit
/// follow from those, and the summary and a plot show it.
#[test]
fn a_workers_sweep_measures_every_count_in_every_round() {
    let (_tmp, out, mut c) = harness::coordinator_with_output();
    c.args(["--quiet", "--mode", "cold-prep", "--workers", "1,2,3", "--rounds", "2", "--data"])
        .arg(&tiny().frozen);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    let report = reports::read(&out);
    let r = reports::cold_prep(&report);
    let stage = |k: &str| reports::stage(&report, k).wall_s;
    let sweep = r.sweep.as_ref().expect("a sweep");
    let points = &sweep.points;
    assert_eq!(points.iter().map(|p| p.workers).collect::<Vec<_>>(), [1, 2, 3]);
    for p in points {
        let n = p.workers;
        let key = |round: u32| {
            let base = match n {
                3 => "cold_feature_cache_prepare_parallel".to_string(),
                _ => format!("cold_feature_cache_prepare_parallel_w{n}"),
            };
            if round == 1 { base } else { format!("{base}#{round}") }
        };
        let serial = |round: u32| match round {
            1 => stage("cold_feature_cache_prepare"),
            _ => stage(&format!("cold_feature_cache_prepare#{round}")),
        };
        let speedups = [serial(1) / stage(&key(1)), serial(2) / stage(&key(2))];
        // The median of two is their mean.
        let speedup = p.speedup;
        assert!((speedup - (speedups[0] + speedups[1]) / 2.0).abs() < 1e-9, "{p:?} {speedups:?}");
        assert!((p.efficiency - speedup / n as f64).abs() < 1e-12);
        match n {
            1 => assert!(p.karp_flatt.is_none(), "{p:?}"),
            _ => {
                let e = (1.0 / speedup - 1.0 / n as f64) / (1.0 - 1.0 / n as f64);
                assert!(p.karp_flatt.is_some_and(|k| (k - e).abs() < 1e-12), "{p:?}");
            }
        }
        assert!(!out.join(format!("private-feature-cache-parallel-w{n}")).exists());
    }
    assert!(sweep.amdahl.serial_fraction.is_some(), "{sweep:?}");
    // The counts as a scan: each count's walls over the rounds, its
    // processes' memory, and with two rounds no verdict but the rounds needed.
    let scan = sweep.scan.as_ref().expect("the counts as a scan");
    for (i, p) in scan.points.iter().enumerate() {
        let n = points[i].workers;
        assert_eq!(p.parameters["workers"], n.to_string(), "{p:?}");
        assert_eq!(p.n, 2);
        let key = &p.stage;
        let walls = [stage(key), stage(&format!("{key}#2"))];
        let median = p.wall_median_s;
        assert!((median - (walls[0] + walls[1]) / 2.0).abs() < 1e-12, "{p:?} {walls:?}");
        assert!(p.tree_peak_bytes > 0, "{p:?}");
    }
    let rec = &scan.recommendation;
    assert_eq!((rec.outcome, rec.trials_needed), (Outcome::TooFewTrials, Some(4)));
    assert!(rec.sentence.ends_with("run --rounds 4 or more"), "{rec:?}");
    // The headline stays the largest count's.
    assert_eq!(r.parallel.workers.len(), 3);
    assert_eq!(r.speedup, points[2].speedup);
    assert_eq!(
        json(&out.join("declaration.json"))["parameters"]["workers_sweep"],
        serde_json::json!([1, 2, 3])
    );
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        summary.contains("### Workers sweep") && summary.contains("Amdahl's law fitted"),
        "{summary}"
    );
    assert!(out.join("plots/sweep.svg").exists() && out.join("plots/sweep.png").exists());
    report::verify::verify(&out).expect("the run verifies");
    f.assert_no_worker_left();
}
