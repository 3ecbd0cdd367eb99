//! `--mode profile`: the recipe's data and model stages, each in a fresh
//! worker, handing each other only hash-checked artifacts; counts
//! consistent with each other, and the same seed giving the same
//! normalizer, contexts, loader order and trained weights.

use harness::data::{Raw, tiny};
use harness::reports::{self, figure};
use harness::{coordinator, json, run};
use std::path::{Path, PathBuf};

fn profile(
    data: &Path,
    seed: &str,
    keep: &mut Vec<tempfile::TempDir>,
) -> (PathBuf, harness::Finished) {
    profile_with(data, seed, &[], keep)
}

fn profile_with(
    data: &Path,
    seed: &str,
    extra: &[&str],
    keep: &mut Vec<tempfile::TempDir>,
) -> (PathBuf, harness::Finished) {
    let (tmp, out, mut c) = harness::coordinator_with_output();
    c.args(["--quiet", "--mode", "profile", "--seed", seed, "--data"]).arg(data).args(extra);
    let f = run(c);
    keep.push(tmp);
    (out, f)
}

fn read(p: PathBuf) -> Vec<u8> {
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn profile_counts_agree_and_a_seed_repeats_its_epoch() {
    let mut keep = Vec::new();
    let (a, f) = profile(&tiny().frozen, "0", &mut keep);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    let report = reports::read(&a);
    let r = reports::profile(&report);
    // The input-bound verdict: the fit epoch's loader waits against its
    // step time, graded as the TensorFlow profiler grades it.
    let fraction = r.input_wait_fraction.expect("an input-wait fraction");
    assert!((0.0..=1.0).contains(&fraction), "{fraction}");
    let stage = |k: &str| reports::stage(&report, k);
    assert_eq!(figure(stage("end_to_end_fit_epoch"), "input_wait_fraction"), fraction);
    let grade = match fraction {
        f if f < 0.05 => "not input-bound",
        f if f < 0.20 => "moderately input-bound",
        _ => "highly input-bound",
    };
    assert_eq!(r.input_bound.as_deref(), Some(grade));
    // The README's headline figures are in summary.md too.
    let summary = std::fs::read_to_string(a.join("summary.md")).unwrap();
    assert!(summary.contains(&format!("so it is {grade}")), "{summary}");
    assert!(summary.contains("Model, resident: median training step"), "{summary}");
    assert!(
        summary.contains("Model, end to end: one fit epoch through the loader at"),
        "{summary}"
    );
    let keys: Vec<&String> = report.stages.keys().collect();
    for k in [
        "verify_before",
        "cold_feature_cache_prepare",
        "warm_fit_normalizer",
        "count_eligible_contexts",
        "warm_loader_epoch",
        "resident_model_build",
        "resident_compile_and_warmup",
        "resident_model_steps",
        "end_to_end_model_build",
        "end_to_end_fit_epoch",
        "verify_after",
    ] {
        assert!(keys.iter().any(|x| *x == k), "no stage {k} in {keys:?}");
    }
    assert_eq!(keys.len(), 11, "{keys:?}");
    let c = &r.counts;
    let eligible = c.eligible_contexts.expect("eligible contexts");
    let batches = c.batches.expect("batches");
    assert!(eligible >= 2, "the tiny cohort should have contexts to shuffle: {c:?}");
    assert_eq!(batches, eligible.div_ceil(32), "{c:?}");
    assert_eq!(c.final_batch, Some(eligible - 32 * (batches - 1)), "{c:?}");
    let normalizer = json(&a.join("normalizer.json"));
    assert_eq!(normalizer["count"], c.valid_frames, "fitted on every valid frame");
    let loader = |name: &str| figure(stage("warm_loader_epoch"), name);
    assert_eq!(loader("contexts"), eligible as f64);
    assert!(loader("p95_wait_s") >= loader("median_wait_s"));
    // The model: the seed recipe's size, trained over exactly the counted epoch.
    for k in ["resident_model_build", "end_to_end_model_build"] {
        assert_eq!(figure(stage(k), "parameters"), 4018.0, "{k}");
    }
    let fit = |name: &str| figure(stage("end_to_end_fit_epoch"), name);
    assert_eq!(fit("contexts"), eligible as f64);
    assert_eq!(fit("batches"), batches as f64);
    assert_eq!(Some(fit("final_batch")), c.final_batch.map(|b| b as f64));
    assert!(fit("loss_last_tenth") < fit("loss_first_tenth"), "the fit epoch did not learn");
    let steps = |name: &str| figure(stage("resident_model_steps"), name);
    assert_eq!(steps("steps"), 20.0);
    assert_eq!(figure(stage("resident_compile_and_warmup"), "warmup_steps"), 2.0);
    assert!(steps("last_loss") < steps("first_loss"));
    // Setup a shared process would have done is timed apart from the stage.
    for k in ["resident_compile_and_warmup", "resident_model_steps", "end_to_end_fit_epoch"] {
        assert!(figure(stage(k), "setup_s") > 0.0, "{k}");
    }
    assert!(
        steps("min_step_s") * 20.0 <= stage("resident_model_steps").wall_s,
        "20 steps took less than 20 times the shortest"
    );
    // Every stage ran in its own process.
    let stages = &report.stages;
    let ranks: Vec<u32> = stages.values().filter_map(|s| s.worker).collect();
    // All but the cache preparation (a phase of one job per series, whose
    // record has no single worker) have a worker of their own: the check
    // below is over every one of them, not over what was left.
    let phases: Vec<&String> =
        stages.iter().filter(|(_, s)| s.worker.is_none()).map(|(k, _)| k).collect();
    assert_eq!(phases, ["cold_feature_cache_prepare"], "stages without a worker");
    assert_eq!(ranks.len(), stages.len() - 1);
    assert!(ranks.len() >= 8, "{} stages checked", ranks.len());
    let mut unique = ranks.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), ranks.len(), "{ranks:?}");
    let mut v = coordinator();
    v.arg("verify").arg(&a);
    assert_eq!(run(v).code(), Some(0));

    let (b, f) = profile(&tiny().frozen, "0", &mut keep);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    let (c1, f) = profile(&tiny().frozen, "1", &mut keep);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    for file in [
        "normalizer.json",
        "private-feature-cache/contexts.json",
        "loader-order.sha256",
        "fit-weights.sha256",
    ] {
        assert_eq!(read(a.join(file)), read(b.join(file)), "{file} differs for the same seed");
    }
    assert_eq!(read(a.join("normalizer.json")), read(c1.join("normalizer.json")));
    for file in ["loader-order.sha256", "fit-weights.sha256"] {
        assert_ne!(read(a.join(file)), read(c1.join(file)), "another seed gave the same {file}");
    }

    // --isolation run: every stage after the cache in one process, the
    // same epoch and the same trained weights.
    let (one, f) = profile_with(&tiny().frozen, "0", &["--isolation", "run"], &mut keep);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    assert_eq!(f.worker_pids().len(), 3, "verify, prepare, and one for the rest");
    let report1 = reports::read(&one);
    let shared = reports::stage(&report1, "warm_fit_normalizer").worker;
    assert!(shared.is_some(), "the shared process has a rank");
    for (k, s) in &report1.stages {
        if !["verify_before", "cold_feature_cache_prepare"].contains(&k.as_str()) {
            assert_eq!(s.worker, shared, "{k} ran in another process");
        }
    }
    assert_eq!(reports::profile(&report1).counts, r.counts);
    for file in ["normalizer.json", "loader-order.sha256", "fit-weights.sha256"] {
        assert_eq!(read(a.join(file)), read(one.join(file)), "{file} depends on the isolation");
    }
    f.assert_no_worker_left();
}

#[test]
fn an_empty_eligible_set_fails_the_run_with_a_clear_error() {
    // One night of ten samples per series: no 240-frame block has every target known.
    let tmp = tempfile::tempdir().unwrap();
    let raw = tmp.path().join("raw");
    std::fs::create_dir(&raw).unwrap();
    let r = Raw::valid(3000);
    r.write(&raw.join("train_series.parquet"));
    std::fs::write(raw.join("train_events.csv"), r.events()).unwrap();
    let frozen = tmp.path().join("frozen");
    let mut c = coordinator();
    c.args(["dataset", "freeze", "--series"]).arg(raw.join("train_series.parquet"));
    c.arg("--events").arg(raw.join("train_events.csv")).arg("--out").arg(&frozen);
    assert_eq!(run(c).code(), Some(0));

    let mut keep = Vec::new();
    let (out, f) = profile(&frozen, "0", &mut keep);
    assert_eq!(f.code(), Some(1), "{}", f.stderr);
    assert!(f.stderr.contains("no eligible context"), "{}", f.stderr);
    let failure = json(&out.join("failure.json"));
    assert_eq!(failure["stage"], "count_eligible_contexts");
    assert!(!out.join("report.json").exists());
    f.assert_no_worker_left();
}

#[test]
fn recipe_stages_repeat_as_trials_after_their_prerequisites_run_once() {
    let (_tmp, out, mut c) = harness::coordinator_with_output();
    c.args(["--mode", "trials", "--trials", "2", "--warmup", "0", "--data"]).arg(&tiny().frozen);
    c.args(["--stage", "warm_loader_epoch", "--stage", "warm_fit_normalizer"]);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    // stderr is not a terminal: no progress line, the prerequisites' neither.
    let progress: Vec<&str> = f
        .stderr
        .lines()
        .filter(|l| l.contains("prerequisite:") && (l.contains(" series, ") || l.contains("[")))
        .collect();
    assert!(progress.is_empty(), "{progress:?}");
    let report = reports::read(&out);
    let r = reports::trials(&report);
    for k in ["warm_loader_epoch", "warm_fit_normalizer"] {
        assert_eq!(r.trials[k].n, 2, "{k}");
    }
    // What the trials wrote (the loader's order digest) is bound: it
    // verifies (issue 44: it once said ok and failed verify).
    let paths: Vec<&str> = report.artifacts.iter().map(|a| a.path.as_str()).collect();
    assert!(paths.contains(&"loader-order.sha256"), "{paths:?}");
    let mut v = harness::coordinator();
    v.arg("verify").arg(&out);
    let v = run(v);
    assert_eq!(v.code(), Some(0), "{}", v.stderr);
    // Prepared once, untimed as trials: the cache, the normalizer, the context index.
    for k in [
        "prerequisite:cold_feature_cache_prepare",
        "prerequisite:warm_fit_normalizer",
        "prerequisite:count_eligible_contexts",
    ] {
        reports::stage(&report, k);
        assert!(!r.trials.contains_key(k), "{k} counted as a trial");
    }
    let artifacts: Vec<&str> = report.artifacts.iter().map(|a| a.path.as_str()).collect();
    assert!(artifacts.contains(&"normalizer.json"), "{artifacts:?}");
    // Every trial in a fresh process (prepare 1 + fit 1 + count 1 + 4 trials).
    let mut pids = f.worker_pids();
    assert_eq!(pids.len(), 7, "{pids:?}");
    pids.sort();
    pids.dedup();
    assert_eq!(pids.len(), 7);
    f.assert_no_worker_left();

    let mut c = coordinator();
    c.args(["--mode", "diagnostic", "--stage", "warm_fit_normalizer"]);
    let f = run(c);
    assert_eq!(f.code(), Some(2), "{}", f.stderr);
    assert!(f.stderr.contains("recipe stages repeat in --mode trials"), "{}", f.stderr);
}

#[test]
fn model_stages_repeat_as_trials_each_in_a_fresh_process() {
    let (_tmp, out, mut c) = harness::coordinator_with_output();
    c.args(["--mode", "trials", "--trials", "2", "--warmup", "0", "--data"]).arg(&tiny().frozen);
    c.args(["--stage", "resident_model_steps", "--stage", "end_to_end_fit_epoch"]);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    let report = reports::read(&out);
    let r = reports::trials(&report);
    let t = &r.trials["resident_model_steps"].samples;
    assert_eq!(t["median_step_s"].len(), 2, "{t:?}");
    // Training is deterministic: both fit trials end on the same loss.
    let fit = &r.trials["end_to_end_fit_epoch"].samples;
    let losses = &fit["loss_last_tenth"];
    assert_eq!(losses[0], losses[1], "{losses:?}");
    // Each fit trial carries its input-wait fraction.
    let waits = &fit["input_wait_fraction"];
    assert_eq!(waits.len(), 2);
    assert!(waits.iter().all(|w| (0.0..=1.0).contains(w)), "{waits:?}");
    // prepare + fit + count, then 4 trials.
    assert_eq!(f.worker_pids().len(), 7);
    f.assert_no_worker_left();
}

#[test]
fn a_prerequisite_altered_between_trials_fails_the_next_trial() {
    // Trials alternate: loader, then a command that edits normalizer.json,
    // then the loader again, which must refuse the changed file.
    let (_tmp, out, mut c) = harness::coordinator_with_output();
    c.args(["--mode", "trials", "--trials", "2", "--warmup", "0", "--data"]).arg(&tiny().frozen);
    c.args(["--stage", "warm_loader_epoch", "--name", "tamper", "--command"]);
    c.arg(format!("sed -i 's/\"count\"/\"count\" /' '{}'", out.join("normalizer.json").display()));
    let f = run(c);
    assert_eq!(f.code(), Some(1), "{}", f.stderr);
    assert!(
        f.stderr.contains(
            "normalizer.json has changed since the stage that wrote it reported its SHA-256"
        ),
        "{}",
        f.stderr
    );
    let failure = json(&out.join("failure.json"));
    assert_eq!(failure["stage"], "warm_loader_epoch");
    assert!(!out.join("report.json").exists());
    f.assert_no_worker_left();
}

#[test]
fn a_cache_file_altered_after_preparation_fails_the_profile() {
    let (_tmp, out, mut c) = harness::coordinator_with_output();
    c.args(["--mode", "profile", "--data"]).arg(&tiny().frozen);
    let mut r = harness::Running::spawn(c);
    // The manifest is written once preparation is done; every stage after
    // it reads the cache, the last of them (the fit epoch) seconds later.
    r.wait_for("phase started key=warm_fit_normalizer ");
    let cache = out.join("private-feature-cache");
    let manifest = json(&cache.join("manifest.json"));
    let (file, _) = manifest["files"].as_object().unwrap().iter().next().unwrap();
    let p = cache.join(file);
    let mut b = read(p.clone());
    let last = b.len() - 1;
    b[last] ^= 1;
    std::fs::write(&p, b).unwrap();
    let (status, stderr) = r.finish();
    assert_eq!(status.code(), Some(1), "{stderr}");
    let line = stderr.lines().find(|l| l.starts_with("error:")).unwrap();
    assert!(
        line.contains(&format!("cache file {file} has changed since it was prepared")),
        "{line}"
    );
    assert!(!out.join("report.json").exists());
    assert!(out.join("failure.json").exists());
}
