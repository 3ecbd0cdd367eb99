//! The main job's report: serial and parallel preparation agree, in rounds,
//! with their figures checked against what measured them, and the run verifies.

use harness::data::tiny;
use harness::reports::{self, stage};
use harness::{json, run};
use report::modes::cold_prep::rounds::First;
use report::stats::IntervalMethod;
use std::os::unix::fs::PermissionsExt;

#[test]
fn serial_and_parallel_preparation_agree_and_verify() {
    let (_tmp, out, mut c) = harness::coordinator_with_output();
    c.args(["--mode", "cold-prep", "--workers", "2", "--data"]).arg(&tiny().frozen);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    let report = reports::read(&out);
    let r = reports::cold_prep(&report);
    let counts = r.counts.as_ref().expect("the recipe's counts");
    let frozen = json(&tiny().frozen.join("frozen.json"));

    // Counts match the contract applied to frozen.json's training series.
    let train: Vec<_> =
        frozen["series"].as_array().unwrap().iter().filter(|s| s["partition"] == "train").collect();
    let frames: u64 = train
        .iter()
        .map(|s| recipe::contract::frame_count(s["samples"].as_u64().unwrap() as usize) as u64)
        .sum();
    assert_eq!(counts.train_series, train.len() as u64);
    assert_eq!(counts.frames, frames);
    assert!(counts.valid_frames <= frames);
    // The console's line opens with what each phase prepared, in the recipe's words.
    let opening = format!(
        "training series {}, frames {frames} ({} valid); serial ",
        train.len(),
        counts.valid_frames
    );
    assert!(f.stdout.contains(&opening), "{opening:?} not in {}", f.stdout);
    // As many processes started as were asked for: no note says otherwise.
    assert!(!f.stdout.contains(" asked for"), "{}", f.stdout);
    // The plot names each worker's row with how many series it prepared.
    let svg = std::fs::read_to_string(out.join("plots/cold-prep.svg")).unwrap();
    let first = &r.serial.workers[0];
    let label = format!("serial rank {} ({} series)", first.rank, first.series);
    assert!(svg.contains(&label), "{label:?} not in the plot");
    // The stages plot says what a preparation phase's bars are, and the
    // parallel phase's row carries its process count and its rounds.
    let stages = std::fs::read_to_string(out.join("plots/stages.svg")).unwrap();
    assert!(stages.contains("(a preparation phase: its wall, its processes"), "stages plot");
    assert!(stages.contains("cold_feature_cache_prepare_parallel_w2 (3 rounds)"), "stages plot");

    for key in [
        "verify_before",
        "cold_feature_cache_prepare",
        "cold_feature_cache_prepare_parallel",
        "verify_after",
    ] {
        let st = stage(&report, key);
        assert!(st.wall_s > 0.0 && st.cpu_s >= 0.0 && st.peak_rss_bytes > 0, "{key}: {st:?}");
    }
    assert_eq!(r.caches_identical, Some(true));

    // The default is 3 rounds in alternating order, each with its own stage
    // records; the speedup is their median, inside its interval, and a later
    // round's caches are gone once checked.
    let rounds = &r.rounds;
    let firsts: Vec<_> = rounds.iter().map(|x| x.first).collect();
    assert_eq!(firsts, [First::Serial, First::Parallel, First::Serial]);
    let mut speedups: Vec<f64> = rounds
        .iter()
        .map(|x| {
            let ratio = x.serial_wall_s / x.parallel_wall_s;
            assert!((x.speedup - ratio).abs() < 1e-12, "{x:?}");
            x.speedup
        })
        .collect();
    speedups.sort_by(f64::total_cmp);
    assert_eq!(r.speedup, speedups[1]);
    // Three rounds have no 95% interval: the interval is their range, with
    // the range's true coverage for three (75%), and nothing says "95% CI".
    let i = r.speedup_interval.as_ref().expect("a speedup interval");
    assert_eq!(i.method, IntervalMethod::Range, "{i:?}");
    assert_eq!((i.low, i.high), (speedups[0], speedups[2]));
    assert_eq!(i.coverage, 0.75);
    assert!(r.speedup_ci95.is_none(), "3 rounds have no 95% interval: {r:?}");
    assert_eq!(rounds[0].serial_wall_s, r.serial.wall_s, "serial and parallel are round 1's");
    for round in [2, 3] {
        for stage in ["cold_feature_cache_prepare", "cold_feature_cache_prepare_parallel"] {
            assert!(reports::stage(&report, &format!("{stage}#{round}")).wall_s > 0.0);
        }
        for cache in ["private-feature-cache", "private-feature-cache-parallel"] {
            assert!(!out.join(format!("{cache}-round{round}")).exists(), "{cache} round {round}");
        }
    }
    let order = |k: &str| stage(&report, k).order;
    assert!(
        order("cold_feature_cache_prepare_parallel#2") < order("cold_feature_cache_prepare#2"),
        "round 2 runs the parallel phase first"
    );
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(summary.contains("| 2 | parallel |"), "{summary}");
    assert!(summary.contains("(median of 3 rounds, range "), "{summary}");
    assert!(summary.contains(", 75% coverage)"), "{summary}");
    assert!(!summary.contains("95% CI") && !f.stdout.contains("95% CI"), "{summary}");
    assert!(f.stdout.contains("(median of 3 rounds, range "), "{}", f.stdout);

    // A phase's tree peak: at least the largest tree any one process saw
    // (each worker's own peak is inside its tree), at most the sum of
    // every process's own peaks, which holds each worker's own peak.
    let sides = [
        ("serial", &r.serial, "cold_feature_cache_prepare"),
        ("parallel", &r.parallel, "cold_feature_cache_prepare_parallel"),
    ];
    for (_, side, key) in sides {
        let st = stage(&report, key);
        // A worker that another beat to every series (the first free one
        // takes the next) prepared none, and has no peak of its own.
        let own: Vec<u64> = side
            .workers
            .iter()
            .filter(|w| w.series > 0)
            .map(|w| w.peak_rss_bytes.expect("a worker's own peak"))
            .collect();
        let (tree, sum) = (st.tree_peak_bytes, st.sum_of_peaks_bytes);
        assert!(tree >= *own.iter().max().unwrap(), "{key}: tree {tree} below a worker's {own:?}");
        assert!(sum >= own.iter().sum::<u64>(), "{key}: sum of peaks {sum} below {own:?}");
        assert!(tree <= sum, "{key}: tree {tree} above the sum of peaks {sum}");
    }
    assert_eq!(r.parallel.workers.len(), 2);
    assert_eq!(r.serial.workers.len(), 1);
    // Each worker's figures in seconds, against what measured them elsewhere:
    // its CPU is its process record's (wait4, user + system), its busy time
    // (its series' walls, from the worker's clock) lies inside the process's
    // life, and the stage's user and system time add up to its CPU time.
    for (name, side, key) in sides {
        for w in &side.workers {
            let process = report
                .workers
                .iter()
                .find(|p| p.rank == w.rank)
                .unwrap_or_else(|| panic!("{name}: no process record for {w:?}"));
            let cpu = process.user_s + process.sys_s;
            assert!((w.cpu_s - cpu).abs() < 1e-6, "{name}: {w:?} {process:?}");
            let (busy, life) = (w.busy_s, process.wall_s);
            assert!(busy > 0.0 && busy <= life, "{name}: busy {busy} s in a life of {life} s");
        }
        let st = stage(&report, key);
        let (user, sys, cpu) = (st.user_s, st.sys_s, st.cpu_s);
        assert!(user > 0.0 && (user + sys - cpu).abs() < 1e-6, "{key}: {st:?}");
    }
    let series_done: u64 = r.parallel.workers.iter().map(|w| w.series).sum();
    assert_eq!(series_done, train.len() as u64);
    assert_eq!(r.serial.per_series_s.n, train.len() as u64);
    // The recipe's workers start no process: their phases' peaks are sampled.
    for key in ["cold_feature_cache_prepare", "cold_feature_cache_prepare_parallel"] {
        assert_eq!(stage(&report, key).tree_peak_method, "sampled", "{key}");
    }
    // A series' time is in seconds, inside the busy time of the worker that
    // prepared it (the sum of its series' times).
    for (name, side, _) in sides {
        let per = &side.per_series_s;
        let busiest = side.workers.iter().map(|w| w.busy_s).fold(0.0, f64::max);
        let (min, max) = (per.min, per.max);
        assert!(min > 0.0 && max <= busiest + 1e-9, "{name}: {per:?} against busy {busiest} s");
    }

    // Every job is in jobs.jsonl.gz, none in report.json: a job per series
    // per phase (3 rounds of 2) and the sources' checks before and after,
    // each of a process workers[] holds.
    let raw = json(&out.join("report.json"));
    let raw_workers = raw["workers"].as_array().expect("report.json's workers");
    assert!(raw_workers.iter().all(|w| w.get("jobs").is_none()), "a job in report.json");
    let jobs = harness::jobs(&out);
    assert_eq!(jobs.len(), 6 * train.len() + 2);
    let processes: std::collections::BTreeSet<(String, u64)> =
        report.workers.iter().map(|w| (w.phase.clone(), u64::from(w.rank))).collect();
    for j in &jobs {
        let process = (j["phase"].as_str().unwrap().to_string(), j["rank"].as_u64().unwrap());
        assert!(processes.contains(&process), "{j}");
    }
    // Round 1's timeline (its phase's jobs from its start) has every series
    // once, on a worker of its side, inside the phase, and a worker
    // prepares one series at a time.
    for (side, p, _) in sides {
        assert!(raw[side].get("timeline").is_none(), "{side}: the timeline is jobs.jsonl.gz's");
        let started = p.started_s.expect("round 1's start on the run's clock");
        let phase = p.phase.as_deref().expect("round 1's phase");
        let spans: Vec<&serde_json::Value> = jobs.iter().filter(|j| j["phase"] == phase).collect();
        assert_eq!(spans.len(), train.len(), "{side}");
        let wall = p.wall_s;
        for w in &p.workers {
            let rank = u64::from(w.rank);
            let mine: Vec<(f64, f64)> = spans
                .iter()
                .filter(|s| s["rank"].as_u64() == Some(rank))
                .map(|s| {
                    let at = |k: &str| s[k].as_f64().unwrap() - started;
                    (at("start_s"), at("end_s"))
                })
                .collect();
            assert_eq!(mine.len() as u64, w.series, "{side} rank {rank}");
            for (a, b) in &mine {
                assert!(
                    0.0 <= *a && a <= b && *b <= wall,
                    "{side}: span {a}..{b} outside 0..{wall}"
                );
            }
            for pair in mine.windows(2) {
                assert!(pair[0].1 <= pair[1].0 + 1e-3, "{side} rank {rank}: overlapping {pair:?}");
            }
        }
    }

    // The declaration carries the dataset fingerprint; the evidence names no series.
    let decl = json(&out.join("declaration.json"));
    assert_eq!(decl["dataset_fingerprint"], frozen["fingerprint"]);
    assert_eq!(decl["parameters"]["rounds"], 3);
    assert!(decl["parameters"].get("workers_sweep").is_none(), "one count is no sweep: {decl}");
    assert!(r.sweep.is_none(), "one count is no sweep");
    // Load imbalance: the busiest parallel worker's busy time over the mean.
    let busy: Vec<f64> = r.parallel.workers.iter().map(|w| w.busy_s).collect();
    let mean = busy.iter().sum::<f64>() / busy.len() as f64;
    let imbalance = busy.iter().cloned().fold(0.0, f64::max) / mean;
    assert!((r.load_imbalance - imbalance).abs() < 1e-9, "{imbalance}");
    let efficiency = r.speedup / 2.0;
    assert!((r.parallel_efficiency - efficiency).abs() < 1e-12);
    for name in [
        "declaration.json",
        "environment.json",
        "report.json",
        "summary.md",
        "plots/cold-prep.svg",
        "report.html",
    ] {
        let text = std::fs::read_to_string(out.join(name)).unwrap();
        for s in frozen["series"].as_array().unwrap() {
            assert!(!text.contains(s["id"].as_str().unwrap()), "{name} names a series");
        }
        assert!(!text.contains(tiny().frozen.to_str().unwrap()), "{name} holds the input path");
    }
    let text: String = jobs.iter().map(|j| j.to_string()).collect();
    for s in frozen["series"].as_array().unwrap() {
        assert!(!text.contains(s["id"].as_str().unwrap()), "jobs.jsonl.gz names a series");
    }
    assert!(!text.contains(tiny().frozen.to_str().unwrap()), "jobs.jsonl.gz holds the input path");

    // Both caches are private, complete and identical, file by file.
    for cache in ["private-feature-cache", "private-feature-cache-parallel"] {
        let mode = std::fs::metadata(out.join(cache)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "{cache}");
        assert_eq!(harness::files_below(&out.join(cache)).len(), 2 * train.len() + 1);
    }
    assert_eq!(
        std::fs::read(out.join("private-feature-cache/manifest.json")).unwrap(),
        std::fs::read(out.join("private-feature-cache-parallel/manifest.json")).unwrap()
    );
    report::verify::verify(&out).expect("the run verifies");
    f.assert_no_worker_left();

    // A changed cache file is caught through its manifest.
    let id = train[0]["id"].as_str().unwrap();
    let npy = out.join(format!("private-feature-cache-parallel/{id}/values.npy"));
    let mut bytes = std::fs::read(&npy).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&npy, bytes).unwrap();
    let err = report::verify::verify(&out).unwrap_err().to_string().to_string();
    assert!(
        err.contains("does not match its SHA-256 in private-feature-cache-parallel/manifest.json"),
        "{err}"
    );
}
