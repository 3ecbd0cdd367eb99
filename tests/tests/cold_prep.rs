//! `--mode cold-prep`: serial and N-process preparation side by side, in one
//! hash-bound report, with identical caches.

use harness::data::tiny;
use harness::{json, run};
use std::os::unix::fs::PermissionsExt;

#[test]
fn serial_and_parallel_preparation_agree_and_verify() {
    let (_tmp, out, mut c) = harness::coordinator_with_output();
    c.args(["--mode", "cold-prep", "--workers", "2", "--data"]).arg(&tiny().frozen);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    let r = json(&out.join("report.json"));
    let frozen = json(&tiny().frozen.join("frozen.json"));

    // Counts match the contract applied to frozen.json's training series.
    let train: Vec<_> =
        frozen["series"].as_array().unwrap().iter().filter(|s| s["partition"] == "train").collect();
    let frames: u64 = train
        .iter()
        .map(|s| recipe::contract::frame_count(s["samples"].as_u64().unwrap() as usize) as u64)
        .sum();
    assert_eq!(r["counts"]["train_series"], train.len() as u64);
    assert_eq!(r["counts"]["frames"], frames);
    assert!(r["counts"]["valid_frames"].as_u64().unwrap() <= frames);

    for key in [
        "verify_before",
        "cold_feature_cache_prepare",
        "cold_feature_cache_prepare_parallel",
        "verify_after",
    ] {
        let st = &r["stages"][key];
        assert!(
            st["wall_s"].as_f64().unwrap() > 0.0
                && st["cpu_s"].is_f64()
                && st["peak_rss_bytes"].as_u64().unwrap() > 0,
            "{key}: {st}"
        );
    }
    assert_eq!(r["caches_identical"], true);

    // The default is 3 rounds in alternating order, each with its own stage
    // records; the speedup is their median, inside its interval, and a later
    // round's caches are gone once checked.
    let rounds = r["rounds"].as_array().expect("rounds by default");
    let firsts: Vec<_> = rounds.iter().map(|x| x["first"].as_str().unwrap()).collect();
    assert_eq!(firsts, ["serial", "parallel", "serial"]);
    let mut speedups: Vec<f64> = rounds
        .iter()
        .map(|x| {
            let s = x["speedup"].as_f64().unwrap();
            let ratio =
                x["serial_wall_s"].as_f64().unwrap() / x["parallel_wall_s"].as_f64().unwrap();
            assert!((s - ratio).abs() < 1e-12, "{x}");
            s
        })
        .collect();
    speedups.sort_by(f64::total_cmp);
    assert_eq!(r["speedup"].as_f64().unwrap(), speedups[1]);
    // Three rounds have no 95% interval: the interval is their range, with
    // the range's true coverage for three (75%), and nothing says "95% CI".
    let i = &r["speedup_interval"];
    assert_eq!(i["method"], "range", "{i}");
    assert_eq!((i["low"].as_f64(), i["high"].as_f64()), (Some(speedups[0]), Some(speedups[2])));
    assert_eq!(i["coverage"], 0.75);
    assert!(r.get("speedup_ci95").is_none(), "3 rounds have no 95% interval: {r}");
    assert_eq!(
        rounds[0]["serial_wall_s"], r["serial"]["wall_s"],
        "serial and parallel are round 1's"
    );
    for round in [2, 3] {
        for stage in ["cold_feature_cache_prepare", "cold_feature_cache_prepare_parallel"] {
            assert!(r["stages"][format!("{stage}#{round}")]["wall_s"].as_f64().unwrap() > 0.0);
        }
        for cache in ["private-feature-cache", "private-feature-cache-parallel"] {
            assert!(!out.join(format!("{cache}-round{round}")).exists(), "{cache} round {round}");
        }
    }
    let order = |k: &str| r["stages"][k]["order"].as_u64().unwrap();
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
    for (side, key) in [
        ("serial", "cold_feature_cache_prepare"),
        ("parallel", "cold_feature_cache_prepare_parallel"),
    ] {
        let st = &r["stages"][key];
        let own: Vec<u64> = r[side]["workers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["peak_rss_bytes"].as_u64().unwrap())
            .collect();
        let tree = st["tree_peak_bytes"].as_u64().unwrap();
        let sum = st["sum_of_peaks_bytes"].as_u64().unwrap();
        assert!(tree >= *own.iter().max().unwrap(), "{key}: tree {tree} below a worker's {own:?}");
        assert!(sum >= own.iter().sum::<u64>(), "{key}: sum of peaks {sum} below {own:?}");
        assert!(tree <= sum, "{key}: tree {tree} above the sum of peaks {sum}");
    }
    assert_eq!(r["parallel"]["workers"].as_array().unwrap().len(), 2);
    assert_eq!(r["serial"]["workers"].as_array().unwrap().len(), 1);
    // Each worker's figures in seconds, against what measured them elsewhere:
    // its CPU is its process record's (wait4, user + system), its busy time
    // (its series' walls, from the worker's clock) lies inside the process's
    // life, and the stage's user and system time add up to its CPU time.
    for (side, key) in [
        ("serial", "cold_feature_cache_prepare"),
        ("parallel", "cold_feature_cache_prepare_parallel"),
    ] {
        for w in r[side]["workers"].as_array().unwrap() {
            let process = r["workers"]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["rank"] == w["rank"])
                .unwrap_or_else(|| panic!("{side}: no process record for {w}"));
            let cpu = process["user_s"].as_f64().unwrap() + process["sys_s"].as_f64().unwrap();
            assert!((w["cpu_s"].as_f64().unwrap() - cpu).abs() < 1e-6, "{side}: {w} {process}");
            let (busy, life) = (w["busy_s"].as_f64().unwrap(), process["wall_s"].as_f64().unwrap());
            assert!(busy > 0.0 && busy <= life, "{side}: busy {busy} s in a life of {life} s");
        }
        let st = &r["stages"][key];
        let (user, sys) = (st["user_s"].as_f64().unwrap(), st["sys_s"].as_f64().unwrap());
        let cpu = st["cpu_s"].as_f64().unwrap();
        assert!(user > 0.0 && (user + sys - cpu).abs() < 1e-6, "{key}: {st}");
    }
    let series_done: u64 = r["parallel"]["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["series"].as_u64().unwrap())
        .sum();
    assert_eq!(series_done, train.len() as u64);
    assert_eq!(r["serial"]["per_series_s"]["n"], train.len() as u64);

    // The timeline has every series once, on a worker of its side, inside
    // the phase, and a worker prepares one series at a time.
    for side in ["serial", "parallel"] {
        let p = &r[side];
        let spans = p["timeline"].as_array().unwrap();
        assert_eq!(spans.len(), train.len(), "{side}");
        let wall = p["wall_s"].as_f64().unwrap();
        for w in p["workers"].as_array().unwrap() {
            let rank = w["rank"].as_u64().unwrap();
            let mine: Vec<(f64, f64)> = spans
                .iter()
                .filter(|s| s["rank"].as_u64() == Some(rank))
                .map(|s| (s["start_s"].as_f64().unwrap(), s["end_s"].as_f64().unwrap()))
                .collect();
            assert_eq!(mine.len() as u64, w["series"].as_u64().unwrap(), "{side} rank {rank}");
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
    assert!(r.get("sweep").is_none(), "one count is no sweep");
    // Load imbalance: the busiest parallel worker's busy time over the mean.
    let busy: Vec<f64> = r["parallel"]["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["busy_s"].as_f64().unwrap())
        .collect();
    let mean = busy.iter().sum::<f64>() / busy.len() as f64;
    let imbalance = busy.iter().cloned().fold(0.0, f64::max) / mean;
    assert!((r["load_imbalance"].as_f64().unwrap() - imbalance).abs() < 1e-9, "{imbalance}");
    let efficiency = r["speedup"].as_f64().unwrap() / 2.0;
    assert!((r["parallel_efficiency"].as_f64().unwrap() - efficiency).abs() < 1e-12);
    for name in
        ["declaration.json", "environment.json", "report.json", "summary.md", "plots/cold-prep.svg"]
    {
        let text = std::fs::read_to_string(out.join(name)).unwrap();
        for s in frozen["series"].as_array().unwrap() {
            assert!(!text.contains(s["id"].as_str().unwrap()), "{name} names a series");
        }
        assert!(!text.contains(tiny().frozen.to_str().unwrap()), "{name} holds the input path");
    }

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
    coordinator::verify::verify(&out).expect("the run verifies");
    f.assert_no_worker_left();

    // A changed cache file is caught through its manifest.
    let id = train[0]["id"].as_str().unwrap();
    let npy = out.join(format!("private-feature-cache-parallel/{id}/values.npy"));
    let mut bytes = std::fs::read(&npy).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&npy, bytes).unwrap();
    let err = coordinator::verify::verify(&out).unwrap_err().to_string().to_string();
    assert!(
        err.contains("does not match its SHA-256 in private-feature-cache-parallel/manifest.json"),
        "{err}"
    );
}

/// A cold-prep run with a fault planted by the worker's debug-only hook
/// (`STAGEBENCH_TEST_PERTURB`, see `worker::planted`).
fn planted(
    perturb: &str,
    args: &[&str],
) -> (tempfile::TempDir, std::path::PathBuf, harness::Finished) {
    let (tmp, out, mut c) = harness::coordinator_with_output();
    c.env("STAGEBENCH_TEST_PERTURB", perturb);
    c.args(["--mode", "cold-prep", "--data"]).arg(&tiny().frozen).args(args);
    let f = run(c);
    (tmp, out, f)
}

/// A run with one value changed in `cache` fails with `caches_differ`, writes
/// no report, and its console line says `says`.
fn fails_as_differing(cache: &str, rounds: &str, says: &str) -> harness::Finished {
    let (_tmp, out, f) =
        planted(&format!("cache:{cache}"), &["--workers", "2", "--rounds", rounds]);
    assert_eq!(f.code(), Some(1), "{}", f.stderr);
    assert!(f.stderr.contains(says), "the console says {says:?}: {}", f.stderr);
    assert!(!out.join("report.json").exists(), "a run whose caches differ has no report");
    let failure = json(&out.join("failure.json"));
    assert_eq!(failure["reason"], "caches_differ", "{failure}");
    f
}

#[test]
fn caches_that_differ_fail_the_run_and_name_the_process_count() {
    // One value of one series in the 2-process cache: round 1's comparison.
    let parallel = "private-feature-cache-parallel";
    let f = fails_as_differing(parallel, "1", "the 1-process and 2-process caches differ");
    f.assert_no_worker_left();
    // A later round's serial cache against round 1's.
    let serial2 = "private-feature-cache-round2";
    fails_as_differing(serial2, "2", "private-feature-cache-round2 (1-process, round 2) differs");
    // A later round's largest-count cache is checked too, not sealed anew.
    let parallel2 = "private-feature-cache-parallel-round2";
    let says = "private-feature-cache-parallel-round2 (2-process, round 2) differs";
    fails_as_differing(parallel2, "2", says);

    // The control: the same hook aimed at a cache no phase writes changes
    // nothing, and the run succeeds with identical caches.
    let (_tmp, out, f) = planted("cache:no-such-cache", &["--workers", "2", "--rounds", "2"]);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    assert_eq!(json(&out.join("report.json"))["caches_identical"], true);
}

/// A frame's features computed here, by formulas of this test's own: the
/// time of day's cosine from the seconds since midnight, mean and
/// population standard deviation by Welford's one-pass update (the recipe
/// sums twice), validity as "no sample is NaN or infinite".
fn independent_features(secs: &[u32], enmo: &[f32], anglez: &[f32]) -> (Vec<[f64; 5]>, Vec<bool>) {
    use recipe::contract::{FRAME_SAMPLES, FRAME_STRIDE};
    fn welford(xs: &[f32]) -> (f64, f64) {
        let (mut mean, mut m2) = (0.0f64, 0.0f64);
        for (k, x) in xs.iter().enumerate() {
            let x = f64::from(*x);
            let delta = x - mean;
            mean += delta / (k + 1) as f64;
            m2 += delta * (x - mean);
        }
        (mean, (m2 / xs.len() as f64).sqrt())
    }
    let mut frames = Vec::new();
    let mut valid = Vec::new();
    let mut start = 0;
    while start + FRAME_SAMPLES <= secs.len() {
        let w = start..start + FRAME_SAMPLES;
        let tod = secs[w.clone()]
            .iter()
            .map(|s| (2.0 * std::f64::consts::PI * f64::from(*s) / 86_400.0).cos())
            .sum::<f64>()
            / FRAME_SAMPLES as f64;
        let (m, sd) = welford(&enmo[w.clone()]);
        let (am, asd) = welford(&anglez[w.clone()]);
        frames.push([tod, m, sd, am, asd]);
        valid.push(enmo[w.clone()].iter().chain(&anglez[w]).all(|x| x.is_finite()));
        start += FRAME_STRIDE;
    }
    (frames, valid)
}

#[test]
fn the_cache_is_the_reference_extraction() {
    let (_tmp, out, mut c) = harness::coordinator_with_output();
    c.args(["--quiet", "--mode", "cold-prep", "--workers", "3", "--data"]).arg(&tiny().frozen);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    let frozen = recipe::frozen::Frozen::load(&tiny().frozen).unwrap();
    let (mut series, mut frames_checked, mut valid_checked) = (0, 0, 0);
    for s in frozen.train() {
        let bytes = std::fs::read(tiny().frozen.join(&s.file)).unwrap();
        let data = recipe::source::read_series(bytes.into(), &s.file, &s.id).unwrap();
        let reference =
            recipe::features::extract_reference(&data.local_seconds, &data.enmo, &data.anglez);
        let (mine, mine_valid) =
            independent_features(&data.local_seconds, &data.enmo, &data.anglez);
        let [values, valid] = recipe::cache::files(&s.id);
        for cache in ["private-feature-cache", "private-feature-cache-parallel"] {
            let v =
                recipe::npy::read_f32_2d(&std::fs::read(out.join(cache).join(&values)).unwrap())
                    .unwrap();
            assert!(
                v.iter().zip(&reference.values).all(|(a, b)| a.to_bits() == b.to_bits()),
                "{cache} {}",
                s.id
            );
            assert_eq!(v.len(), reference.values.len());
            let flags =
                recipe::npy::read_bool_1d(&std::fs::read(out.join(cache).join(&valid)).unwrap())
                    .unwrap();
            assert_eq!(flags, reference.valid);
            // Against this test's own formulas: the same frames, the same
            // validity, and every valid frame's values within f32 rounding
            // (a different order of arithmetic rounds differently).
            assert_eq!(v.nrows(), mine.len(), "{cache}: frame count");
            assert_eq!(flags.to_vec(), mine_valid, "{cache}: validity");
            for (j, expected) in mine.iter().enumerate().filter(|(j, _)| mine_valid[*j]) {
                for (k, e) in expected.iter().enumerate() {
                    let got = f64::from(v[[j, k]]);
                    let tolerance = 1e-5 * e.abs().max(1.0);
                    assert!(
                        (got - e).abs() <= tolerance,
                        "{cache} frame {j} feature {k}: cache {got}, independent {e}"
                    );
                }
                valid_checked += 1;
            }
            frames_checked += mine.len();
        }
        series += 1;
    }
    // Every training series was compared, in both caches, and most frames
    // were valid ones whose values were checked.
    assert_eq!(series, frozen.train().count());
    assert!(series >= 2, "the tiny cohort has {series} training series");
    assert!(valid_checked * 2 > frames_checked, "{valid_checked} of {frames_checked} frames");
}

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
    let r = json(&out.join("report.json"));
    // One round keeps the report's shape from before rounds: a plain speedup
    // of the two walls, and no rounds or interval.
    assert!(r.get("rounds").is_none() && r.get("speedup_ci95").is_none(), "{r}");
    assert_eq!(
        r["speedup"].as_f64().unwrap(),
        r["serial"]["wall_s"].as_f64().unwrap() / r["parallel"]["wall_s"].as_f64().unwrap()
    );
    assert_eq!(json(&out.join("declaration.json"))["parameters"]["rounds"], 1);
    let series = r["counts"]["train_series"].as_u64().unwrap();
    assert!(series < 64);
    let workers = r["parallel"]["workers"].as_array().unwrap();
    assert_eq!(workers.len() as u64, series, "{workers:?}");
    // A worker may still find the queue empty (another took two series
    // first): it says so truthfully, never -0.0 or a peak of 0.
    for w in workers {
        let busy = w["busy_s"].as_f64().unwrap();
        match w["series"].as_u64().unwrap() {
            0 => {
                assert!(busy == 0.0 && busy.is_sign_positive(), "{w}");
                assert!(w["peak_rss_bytes"].is_null(), "{w}");
            }
            _ => {
                assert!(busy > 0.0, "{w}");
                assert!(w["peak_rss_bytes"].as_u64().unwrap() > 0, "{w}");
            }
        }
    }
    assert!(!std::fs::read_to_string(out.join("report.json")).unwrap().contains("-0.0"));
    let note = format!(
        "64 processes asked for, {series} started: there are only {series} training series"
    );
    assert!(f.stdout.contains(&note), "{}", f.stdout);
    let efficiency = r["parallel_efficiency"].as_f64().unwrap();
    let speedup = r["speedup"].as_f64().unwrap();
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
    let r = json(&out.join("report.json"));
    let stage = |k: &str| r["stages"][k]["wall_s"].as_f64().unwrap_or_else(|| panic!("{k}"));
    let points = r["sweep"]["points"].as_array().expect("a sweep");
    assert_eq!(
        points.iter().map(|p| p["workers"].as_u64().unwrap()).collect::<Vec<_>>(),
        [1, 2, 3]
    );
    for p in points {
        let n = p["workers"].as_u64().unwrap();
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
        let speedup = p["speedup"].as_f64().unwrap();
        assert!((speedup - (speedups[0] + speedups[1]) / 2.0).abs() < 1e-9, "{p} {speedups:?}");
        assert!((p["efficiency"].as_f64().unwrap() - speedup / n as f64).abs() < 1e-12);
        match n {
            1 => assert!(p["karp_flatt"].is_null(), "{p}"),
            _ => {
                let e = (1.0 / speedup - 1.0 / n as f64) / (1.0 - 1.0 / n as f64);
                assert!((p["karp_flatt"].as_f64().unwrap() - e).abs() < 1e-12, "{p}");
            }
        }
        assert!(!out.join(format!("private-feature-cache-parallel-w{n}")).exists());
    }
    assert!(r["sweep"]["amdahl"]["serial_fraction"].is_f64(), "{}", r["sweep"]);
    // The headline stays the largest count's.
    assert_eq!(r["parallel"]["workers"].as_array().unwrap().len(), 3);
    assert_eq!(r["speedup"], points[2]["speedup"]);
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
    coordinator::verify::verify(&out).expect("the run verifies");
    f.assert_no_worker_left();
}
