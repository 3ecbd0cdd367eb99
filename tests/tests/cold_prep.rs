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
    let ci: Vec<f64> =
        r["speedup_ci95"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    assert!(ci[0] <= speedups[1] && speedups[1] <= ci[1], "{ci:?} {speedups:?}");
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
    assert!(summary.contains("(median of 3 rounds, 95% CI"), "{summary}");
    assert_eq!(r["parallel"]["workers"].as_array().unwrap().len(), 2);
    assert_eq!(r["serial"]["workers"].as_array().unwrap().len(), 1);
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
    let err = coordinator::verify::verify(&out).unwrap_err();
    assert!(
        err.contains("does not match its SHA-256 in private-feature-cache-parallel/manifest.json"),
        "{err}"
    );
}

#[test]
fn the_cache_is_the_reference_extraction() {
    let (_tmp, out, mut c) = harness::coordinator_with_output();
    c.args(["--quiet", "--mode", "cold-prep", "--workers", "3", "--data"]).arg(&tiny().frozen);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    let frozen = recipe::frozen::Frozen::load(&tiny().frozen).unwrap();
    for s in frozen.train() {
        let bytes = std::fs::read(tiny().frozen.join(&s.file)).unwrap();
        let data = recipe::source::read_series(bytes.into(), &s.file, &s.id).unwrap();
        let reference =
            recipe::features::extract_reference(&data.local_seconds, &data.enmo, &data.anglez);
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
            assert_eq!(
                recipe::npy::read_bool_1d(&std::fs::read(out.join(cache).join(&valid)).unwrap())
                    .unwrap(),
                reference.valid
            );
        }
    }
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
