//! `--mode recipe --state DIR`: artifacts kept across runs behind completion
//! records. A resume trusts only what its records prove; a worker killed
//! with SIGKILL at any declared point leaves a state that resumes to exactly
//! the artifacts of an uninterrupted run; tampering is rebuilt, not trusted;
//! a directory of the user's is never claimed.

use harness::data::tiny;
use harness::{coordinator, json, run};
use std::path::{Path, PathBuf};

/// One `--mode recipe` run over the tiny cohort; returns its report (if it
/// wrote one) and how it ended.
fn recipe(state: &Path, out: &Path, extra: &[&str]) -> (Option<report::Report>, harness::Finished) {
    let mut c = coordinator();
    c.args(["--quiet", "--mode", "recipe", "--epochs", "2", "--data"])
        .arg(&tiny().frozen)
        .arg("--state")
        .arg(state)
        .arg("--output")
        .arg(out)
        .args(extra);
    let f = run(c);
    (out.join("report.json").exists().then(|| harness::reports::read(out)), f)
}

fn fig(r: &report::Report, stage: &str, name: &str) -> f64 {
    harness::reports::figure(harness::reports::stage(r, stage), name)
}

fn digest(r: &report::Report) -> String {
    match &r.section {
        report::Section::Recipe(s) => s.state.sha256.clone(),
        other => panic!("a {} report has no state digest", other.mode()),
    }
}

/// A cold run's report in a fresh state directory.
fn cold(tmp: &Path, name: &str) -> (PathBuf, report::Report) {
    let state = tmp.join(format!("state-{name}"));
    let (r, f) = recipe(&state, &tmp.join(format!("run-{name}")), &[]);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    (state, r.expect("a report"))
}

#[test]
fn a_resume_reuses_everything_and_leaves_the_state_unchanged() {
    let tmp = tempfile::tempdir().unwrap();
    let (state, first) = cold(tmp.path(), "a");
    assert_eq!(fig(&first, "cache_prepare", "prepared"), fig(&first, "cache_prepare", "series"));
    assert_eq!(fig(&first, "train", "epochs_trained"), 2.0);
    for policy in ["load", "recompute"] {
        let out = tmp.path().join(format!("resume-{policy}"));
        let (r, f) = recipe(&state, &out, &["--resume-policy", policy]);
        assert_eq!(f.code(), Some(0), "{}", f.stderr);
        let r = r.unwrap();
        assert_eq!(digest(&r), digest(&first), "a {policy} resume changed the state");
        // summary.md shows the components, the reuse and the state.
        let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
        assert!(summary.contains("## Recipe state"), "{summary}");
        let short = &digest(&r)[..12];
        assert!(summary.contains(&format!("digest `{short}`")), "{summary}");
        assert_eq!(fig(&r, "cache_prepare", "prepared"), 0.0);
        assert_eq!(fig(&r, "cache_prepare", "reused"), fig(&first, "cache_prepare", "series"));
        assert_eq!(fig(&r, "train", "epochs_restored"), 2.0);
        assert_eq!(fig(&r, "train", "component:work_s"), 0.0, "a complete state trained again");
        let (loaded, recomputed) = (policy == "load", policy == "recompute");
        for stage in ["fit_normalizer", "count_contexts"] {
            assert_eq!(fig(&r, stage, "loaded") == 1.0, loaded, "{stage} under {policy}");
            assert_eq!(fig(&r, stage, "recomputed") == 1.0, recomputed, "{stage} under {policy}");
            if recomputed {
                assert_eq!(fig(&r, stage, "recomputed_identical"), 1.0);
                assert!(fig(&r, stage, "component:recompute_s") > 0.0);
            }
        }
        let mut c = coordinator();
        c.arg("verify").arg(&out);
        let v = run(c);
        assert_eq!(v.code(), Some(0), "the resume's run directory: {}", v.stderr);
    }
    // Another cold run in another directory leaves the same artifacts.
    let (_, second) = cold(tmp.path(), "b");
    assert_eq!(digest(&second), digest(&first));
    let text = std::fs::read_to_string(tmp.path().join("run-a/report.json")).unwrap();
    assert!(!text.contains(tmp.path().to_str().unwrap()), "the report holds a path");
}

/// Many kill points, chosen by seed over the stages that write state: each
/// kill is a real SIGKILL of the worker, landing wherever the worker is
/// when its progress passes the point; each resume must end with the
/// artifacts of the uninterrupted run, and no worker may be left alive.
#[test]
fn sigkill_at_many_points_always_resumes_to_the_uninterrupted_artifacts() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, reference) = cold(tmp.path(), "reference");
    let mut rng = 0x2545_F491_4F6C_DD1Du64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut killed = 0;
    for seed in 0..12 {
        let stage = ["cache_prepare", "train"][(next() % 2) as usize];
        let fraction = (next() % 1000) as f64 / 1000.0;
        let point = format!("{stage}:{fraction}");
        let state = tmp.path().join(format!("state-{seed}"));
        let out = tmp.path().join(format!("killed-{seed}"));
        let (r, f) = recipe(&state, &out, &["--kill-at", &point]);
        f.assert_no_worker_left();
        assert!(r.is_none(), "{point}: the run was not killed");
        assert_eq!(f.code(), Some(1), "{point}: {}", f.stderr);
        assert!(f.stderr.contains("killed with SIGKILL"), "{point}: {}", f.stderr);
        assert_eq!(json(&out.join("failure.json"))["reason"], "killed_at_point");
        killed += 1;
        let (r, f) = recipe(&state, &tmp.path().join(format!("resumed-{seed}")), &[]);
        assert_eq!(f.code(), Some(0), "{point}: {}", f.stderr);
        assert_eq!(digest(&r.unwrap()), digest(&reference), "resumed after {point}");
    }
    assert_eq!(killed, 12);
}

#[test]
fn a_tampered_artifact_or_record_is_rebuilt_not_trusted() {
    let tmp = tempfile::tempdir().unwrap();
    let (state, reference) = cold(tmp.path(), "a");
    // An artifact edited after its record.
    let normalizer = state.join("normalizer.json");
    let text = std::fs::read_to_string(&normalizer).unwrap();
    std::fs::write(&normalizer, text.replacen('1', "2", 1)).unwrap();
    // A record claiming other inputs.
    let record = state.join("contexts.done.json");
    let mut r: serde_json::Value = json(&record);
    r["inputs_sha256"] = "0".repeat(64).into();
    std::fs::write(&record, serde_json::to_vec(&r).unwrap()).unwrap();
    // A cache file torn in half, and a checkpoint's record removed.
    let series = std::fs::read_dir(state.join("cache"))
        .unwrap()
        .flatten()
        .find(|e| e.path().is_dir())
        .expect("a series")
        .path();
    let values = series.join("values.npy");
    let bytes = std::fs::read(&values).unwrap();
    std::fs::write(&values, &bytes[..bytes.len() / 2]).unwrap();
    std::fs::remove_file(state.join("checkpoints/epoch-0002.done.json")).unwrap();

    let (r, f) = recipe(&state, &tmp.path().join("resumed"), &[]);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    let r = r.unwrap();
    assert_eq!(fig(&r, "cache_prepare", "rebuilt"), 1.0);
    assert_eq!(fig(&r, "cache_prepare", "prepared"), 1.0);
    for stage in ["fit_normalizer", "count_contexts"] {
        assert_eq!(fig(&r, stage, "loaded"), 0.0, "{stage} trusted a tampered artifact");
        assert_eq!(fig(&r, stage, "rebuilt"), 1.0, "{stage}");
    }
    assert_eq!(fig(&r, "train", "epochs_restored"), 1.0);
    assert_eq!(fig(&r, "train", "epochs_trained"), 1.0);
    assert_eq!(digest(&r), digest(&reference), "the rebuilt state differs from the original");
}

#[test]
fn a_directory_of_the_users_is_never_claimed_as_state() {
    let tmp = tempfile::tempdir().unwrap();
    let mine = tmp.path().join("mine");
    std::fs::create_dir(&mine).unwrap();
    std::fs::write(mine.join(".notes.tmp-1"), b"my notes").unwrap();
    std::fs::write(mine.join("paper.tex"), b"x").unwrap();
    let out = tmp.path().join("run");
    let (_, f) = recipe(&mine, &out, &[]);
    assert_eq!(f.code(), Some(2), "{}", f.stderr);
    assert!(f.stderr.contains("not a stagebench state directory"), "{}", f.stderr);
    assert_eq!(f.stderr.trim().lines().filter(|l| l.starts_with("error")).count(), 1);
    assert!(!out.exists(), "a refused run created its output");
    assert_eq!(harness::files_below(&mine).len(), 2, "the user's directory was touched");
    // Flags of the recipe mode are refused elsewhere, before anything exists.
    let mut c = coordinator();
    c.args(["--mode", "diagnostic", "--epochs", "2", "--output"]).arg(&out);
    let f = run(c);
    assert_eq!(f.code(), Some(2));
    assert!(f.stderr.contains("--epochs applies to --mode recipe"), "{}", f.stderr);
    let mut c = coordinator();
    c.args(["--mode", "recipe", "--kill-at", "warp:0.5", "--state"]).arg(tmp.path().join("s"));
    let f = run(c);
    assert_eq!(f.code(), Some(2));
    assert!(f.stderr.contains("no stage of this run is called that"), "{}", f.stderr);
    assert!(!tmp.path().join("s").exists(), "a refused command line claimed its state");
}

/// A recipe run of the tiny cohort on `state`, started and left running.
fn recipe_running(state: &Path, out: &Path) -> harness::Running {
    let mut c = coordinator();
    c.args(["--mode", "recipe", "--epochs", "3", "--data"])
        .arg(&tiny().frozen)
        .arg("--state")
        .arg(state)
        .arg("--output")
        .arg(out);
    harness::Running::spawn(c)
}

#[test]
fn two_runs_never_share_a_state_and_a_killed_holder_leaves_no_lock() {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let mut first = recipe_running(&state, &tmp.path().join("first"));
    // The lock is taken before the first phase starts.
    first.wait_for("phase started");
    let second = tmp.path().join("second");
    let (_, f) = recipe(&state, &second, &[]);
    assert_eq!(f.code(), Some(2), "{}", f.stderr);
    let line = f.stderr.trim();
    assert_eq!(line.lines().count(), 1, "one line: {line}");
    assert!(line.contains(&format!("(pid {})", first.pid())), "names the holder: {line}");
    assert!(!second.exists(), "the refused run wrote {}", second.display());
    // The first run goes on untouched.
    let (status, stderr) = first.finish();
    assert!(status.success(), "{stderr}");
    report::verify::verify(&tmp.path().join("first")).expect("the first run verifies");

    // A holder killed with SIGKILL leaves no lock: the next run proceeds.
    let mut killed = recipe_running(&state, &tmp.path().join("killed"));
    killed.wait_for("phase started");
    // SAFETY: kill(2) on the coordinator this test spawned.
    unsafe { libc::kill(killed.pid(), libc::SIGKILL) };
    let _ = killed.finish();
    let (r, f) = recipe(&state, &tmp.path().join("after"), &[]);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    assert!(r.is_some());
}
