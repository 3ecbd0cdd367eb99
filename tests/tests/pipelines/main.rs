//! A user's own pipeline, first class: the `stagebench` Python helper
//! through real processes (spans from a thread and a forked child, silence
//! outside stagebench), kill points a command's own reports mark (its whole
//! tree killed there), and the worked example's campaign judged by its spans;
//! and spans named on the command line or in a campaign file (`spans`).

mod counted_once;
mod fix;
mod keras;
mod provenance;
mod span_cpu;
mod spans;

use harness::{coordinator, coordinator_with_output, json, python, python_on_path, repo, run};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Writes `text` as a campaign file in `dir` and runs it into `dir/campaign`.
fn campaign(dir: &Path, text: &str) -> (PathBuf, harness::Finished) {
    let file = dir.join("c.toml");
    std::fs::write(&file, text).unwrap();
    let out = dir.join("campaign");
    let mut c = coordinator();
    c.arg("campaign").arg(&file).arg("--output").arg(&out);
    (out.clone(), run(c))
}

fn helper_user() -> String {
    repo().join("tests/scripts/helper_user.py").display().to_string()
}

#[test]
fn spans_from_a_thread_and_a_forked_child_reach_the_report_through_the_helper() {
    let (_tmp, out, mut c) = coordinator_with_output();
    let py = python(&mut c);
    c.args(["--quiet", "--name", "helper"]);
    c.arg("--command").arg(format!("'{py}' '{}' tree", helper_user()));
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    f.assert_no_worker_left();
    let report = harness::reports::read(&out);
    let helper = harness::reports::stage(&report, "helper");
    for name in ["from_thread", "from_child", "from_main"] {
        assert_eq!(harness::reports::figure(helper, &format!("span:{name}_n")), 1.0, "{name}");
        let s = harness::reports::figure(helper, &format!("span:{name}_s"));
        assert!((0.01..5.0).contains(&s), "{name}: {s}");
    }
}

#[test]
fn outside_stagebench_the_helper_is_a_silent_no_op() {
    let mut c = Command::new("true");
    let py = python(&mut c);
    let mut p = Command::new(py);
    for (k, v) in c.get_envs() {
        if let Some(v) = v {
            p.env(k, v);
        }
    }
    p.env_remove("STAGEBENCH_SPANS").arg(helper_user()).arg("tree");
    let out = p.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// `--command` with `--kill-at NAME:span:step:2`: the command's whole tree,
/// including a grandchild in a session of its own, is killed right after
/// its second span ends; the run fails as killed, naming the point.
#[test]
fn a_command_is_killed_with_its_whole_tree_right_after_a_declared_span() {
    let (tmp, out, mut c) = coordinator_with_output();
    let py = python(&mut c);
    let pidfile = tmp.path().join("sleeper.pid");
    c.args(["--quiet", "--name", "steps", "--kill-at", "steps:span:step:2"]);
    c.arg("--command").arg(format!("'{py}' '{}' steps 20 '{}'", helper_user(), pidfile.display()));
    let f = run(c);
    assert_ne!(f.code(), Some(0), "{}", f.stderr);
    f.assert_no_worker_left();
    let failure = json(&out.join("failure.json"));
    assert_eq!(failure["reason"], "killed_at_point", "{failure}");
    assert!(failure["message"].as_str().unwrap().contains("span 'step' #2 ended"), "{failure}");
    let sleeper: i32 = std::fs::read_to_string(&pidfile).unwrap().parse().unwrap();
    assert!(
        harness::wait_gone(sleeper, std::time::Duration::from_secs(10)),
        "the grandchild {sleeper} outlived its stage"
    );
    let steps = std::fs::read_to_string(tmp.path().join("sleeper.pid.steps")).unwrap_or_default();
    assert!(steps.lines().count() <= 3, "not killed right after step 2: {steps:?}");
    let term = tmp.path().join("sleeper.pid.term");
    assert!(!term.exists(), "the grandchild got SIGTERM, not SIGKILL with its tree");
}

#[test]
fn progress_and_time_points_kill_and_a_point_never_reached_fails_when_the_stage_ends() {
    for (point, reason, needle) in [
        ("steps:0.25", "killed_at_point", "progress 0.25 reached 0.25"),
        ("steps:after:0.3", "killed_at_point", "s after it started"),
        ("steps:span:nothing:1", "stage_failed", "the kill point was never reached"),
    ] {
        let (tmp, out, mut c) = coordinator_with_output();
        let py = python(&mut c);
        let pidfile = tmp.path().join("sleeper.pid");
        c.args(["--quiet", "--name", "steps", "--kill-at", point]);
        c.arg("--command").arg(format!(
            "'{py}' '{}' steps 8 '{}'",
            helper_user(),
            pidfile.display()
        ));
        let f = run(c);
        assert_ne!(f.code(), Some(0), "{point}: {}", f.stderr);
        f.assert_no_worker_left();
        let failure = json(&out.join("failure.json"));
        assert_eq!(failure["reason"], reason, "{point}: {failure}");
        assert!(failure["message"].as_str().unwrap().contains(needle), "{point}: {failure}");
    }
}

#[test]
fn kill_points_a_run_cannot_honour_are_refused_before_anything_runs() {
    for (args, needle) in [
        (vec!["--command", "true", "--name", "c", "--kill-at", "c:span:x:0"], "≥ 1"),
        (vec!["--command", "true", "--name", "c", "--kill-at", "ghost:0.5"], "no stage"),
        (vec!["--stage", "noop", "--kill-at", "noop:after:1"], "can be killed at a point"),
        (vec!["--stage", "crash", "--kill-at", "crash:0.5"], "can be killed at a point"),
        (
            vec!["--mode", "profile", "--kill-at", "verify_before:0.5"],
            "--mode profile does not use it",
        ),
        (
            vec!["--mode", "cold-prep", "--kill-at", "cold_feature_cache_prepare:0.5"],
            "--kill-at applies to --mode diagnostic, --mode recipe; --mode cold-prep does not use it",
        ),
        (
            vec!["--mode", "trials", "--command", "true", "--kill-at", "command:0.5"],
            "--mode trials does not use it",
        ),
        (vec!["--command", "true", "--name", "c", "--kill-at", "c:after:-1"], "positive"),
    ] {
        let (_tmp, out, mut c) = coordinator_with_output();
        c.args(&args);
        let f = run(c);
        assert_eq!(f.code(), Some(2), "{args:?}: {}", f.stderr);
        assert!(f.stderr.contains(needle), "{args:?}: {}", f.stderr);
        assert!(!out.exists(), "{args:?}: a run directory was created");
    }
}

/// examples/pipeline, as a user runs it (one trial per step): the judgment
/// names what the resume skipped and what it repeated, the summary shows
/// the spans, and both interrupted steps resume to the cold digest.
#[test]
fn the_worked_example_campaign_is_judged_by_its_own_spans() {
    let tmp = tempfile::tempdir().unwrap();
    let example = repo().join("examples/pipeline");
    for f in ["chain.py", "fitting.py"] {
        std::fs::copy(example.join(f), tmp.path().join(f)).unwrap();
    }
    std::fs::create_dir(tmp.path().join("scratch")).unwrap();
    let toml = std::fs::read_to_string(example.join("campaign.toml")).unwrap();
    assert!(toml.contains("trials = 3\n"));
    let file = tmp.path().join("campaign.toml");
    std::fs::write(&file, toml.replace("trials = 3\n", "trials = 1\n")).unwrap();
    let out = tmp.path().join("campaign");
    let mut c = coordinator();
    // The example's argv says python3.
    python_on_path(&mut c);
    c.arg("campaign").arg(&file).arg("--output").arg(&out);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}\n{}", f.stdout, f.stderr);
    f.assert_no_worker_left();
    let r = harness::reports::campaign(&out);
    assert!(r.pipeline);
    let judgment: Vec<&str> = r.judgment.iter().map(String::as_str).collect();
    let after = |start: &str| {
        let i = judgment.iter().position(|l| l.starts_with(start)).expect(start);
        &judgment[i..]
    };
    // The resume: every search skipped, the recompute repeated and named.
    let resume = after("Resuming (resume)");
    assert!(
        resume[1].starts_with("It skipped") && resume[1].contains("source/search_fit"),
        "{resume:?}"
    );
    assert!(resume[1].contains("light/search_fit") && resume[1].contains("mass/search_fit"));
    // A line by how it starts, found within its section: a call quick
    // enough on a busy machine may add an "It loaded" line before it.
    let first = |section: &[&str], prefix: &str| -> String {
        section
            .iter()
            .skip(1)
            .take_while(|l| !l.starts_with("Resuming") && !l.starts_with("Killed"))
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no line starting {prefix:?} in {section:?}"))
            .to_string()
    };
    let repeated = first(resume, "It repeated");
    assert!(repeated.contains("max_lh_fit_recompute"), "{resume:?}");
    assert!(!repeated.contains("search_fit"), "a skipped search ran again: {repeated}");
    let persist = first(resume, "The largest repeated span");
    assert!(persist.contains("max_lh_fit_recompute") && persist.contains("persist"), "{persist}");
    // Killed mid-search in light: the light and mass searches ran after the
    // kill, never before it (read call by call, from what the killed
    // attempt finished): not yet done, not repeats.
    let killed = after("Killed with SIGKILL at light:0.5");
    let undone = first(killed, "Not yet done at the kill");
    assert!(
        undone.contains("light/search_fit") && undone.contains("mass/search_fit"),
        "{killed:?}"
    );
    let repeated = first(killed, "It repeated");
    assert!(repeated.contains("in source, light"), "{killed:?}");
    assert!(!repeated.contains("search_fit"), "an undone search read as a repeat: {killed:?}");
    assert!(killed[0].contains("identical to the cold run's in 1 of 1"), "{killed:?}");
    // The recompute is the largest repeat that is not marked work.
    let persist = killed.iter().find(|l| l.contains("first thing to persist")).expect("persist");
    assert!(
        persist.starts_with("The largest repeated span not marked work, max_lh_fit_recompute"),
        "{persist}"
    );
    let killed = after("Killed with SIGKILL at mass:span:max_lh_fit_recompute:1");
    assert!(killed[0].contains("in 1 of 1"), "{killed:?}");
    for step in &r.steps {
        // One trial: a median with no interval (none of one sample is honest).
        assert!(step.median_total_interval.is_none(), "{step:?}");
        for t in &step.trials {
            assert!(t.identical_to_cold, "{}", step.name);
        }
    }
    // A killed run verifies as what it is: declaration and environment bound
    // by failure.json; an edited failure.json does not.
    let killed_dir = out.join("runs/killed_mid_search/1-killed");
    let mut v = coordinator();
    v.arg("verify").arg(&killed_dir);
    let f = run(v);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    assert!(f.stdout.contains("killed at its declared point"), "{}", f.stdout);
    let failure = json(&out.join("runs/killed_mid_search/1-killed/failure.json"));
    assert_eq!(
        (failure["reason"].as_str(), failure["stage"].as_str()),
        (Some("killed_at_point"), Some("light"))
    );
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(summary.contains("## Spans per stage"), "{summary}");
    assert!(summary.contains("| `light` | `search_fit` |"), "{summary}");
    // What the chain ran on, as the helper said at each stage's exit: the
    // Python that ran it, and where the helper is installed (CI's
    // virtualenv) its own distribution; the repository's path nowhere.
    let mut probe = Command::new("true");
    let py = python(&mut probe);
    let version = Command::new(&py)
        .args(["-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"])
        .envs(probe.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .output()
        .unwrap();
    let version = String::from_utf8(version.stdout).unwrap().trim().to_string();
    let cold = &r.steps[0];
    assert_eq!(cold.name, "cold");
    for stage in ["source", "light", "mass"] {
        let runtime = cold.trials[0].stages[stage].runtime.as_ref().expect("what it ran on");
        assert_eq!(runtime.python.as_deref(), Some(version.as_str()), "{stage}: {runtime:?}");
        // The helper the program imported is the copy the worker put first
        // on its path (the worker's own build, recorded with it), not a
        // library of the program's: never listed, installed or not.
        assert!(!runtime.distributions.contains_key("stagebench"), "{stage}: {runtime:?}");
        assert!(summary.contains(&format!("- `{stage}`: Python {version}")), "{summary}");
    }
    assert!(summary.contains("## What it ran on"), "{summary}");
    let report_text = std::fs::read_to_string(out.join("report.json")).unwrap();
    assert!(!report_text.contains(tmp.path().to_str().unwrap()), "a path in the report");
    let mut v = coordinator();
    v.arg("verify").arg(&out);
    assert_eq!(run(v).code(), Some(0));
    let path = killed_dir.join("failure.json");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replacen("\"light\"", "\"mass\"", 1)).unwrap();
    let mut v = coordinator();
    v.arg("verify").arg(&out);
    let f = run(v);
    assert_eq!(f.code(), Some(3), "{}", f.stdout);
    assert!(f.stderr.contains("1-killed"), "{}", f.stderr);
}

/// A pipeline campaign whose kill point never comes fails that trial with
/// one line naming it when the stage ends, and writes no report.
#[test]
fn a_campaign_kill_point_never_reached_fails_the_trial_when_the_stage_ends() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("work")).unwrap();
    let once = r#"echo '{\"name\": \"a\", \"seconds\": 0.1}' >> \"$STAGEBENCH_SPANS\""#;
    let (out, f) = campaign(
        tmp.path(),
        &format!(
            "[campaign]\nname = \"never\"\ntrials = 1\nscratch = \"work\"\n\n[[pipeline]]\nname = \"s\"\nargv = [\"sh\", \"-c\", \"{once}\"]\n\n[[step]]\nname = \"cold\"\nkind = \"cold\"\n\n[[step]]\nname = \"cut\"\nkind = \"interrupted\"\nkill_at = \"s:span:a:5\"\n"
        ),
    );
    assert_eq!(f.code(), Some(1), "{}\n{}", f.stdout, f.stderr);
    f.assert_no_worker_left();
    let line = f.stderr.lines().find(|l| l.starts_with("error:")).unwrap();
    assert!(line.contains("step 'cut' trial 1"), "{line}");
    assert!(line.contains("the kill point was never reached: span:a:5"), "{line}");
    assert!(line.contains("after 1 span(s) called 'a'"), "{line}");
    // A failed trial is a finding: the cold step's measurement is kept.
    let r = harness::reports::campaign(&out);
    assert!(r.failed_trials[0].killed_attempt, "{r:?}");
    assert_eq!(r.steps[0].name, "cold");
}

/// A pipeline stage's own `timeout_s` ends it: the trial fails naming the
/// stage and the timeout, and no process is left; the report keeps it.
#[test]
fn a_pipeline_stage_past_its_timeout_fails_the_trial() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("work")).unwrap();
    let (out, f) = campaign(
        tmp.path(),
        "[campaign]\nname = \"slow\"\ntrials = 1\nscratch = \"work\"\n\n[[pipeline]]\nname = \"quick\"\nargv = [\"true\"]\n\n[[pipeline]]\nname = \"hangs\"\nargv = [\"sleep\", \"30\"]\ntimeout_s = 0.5\n\n[[step]]\nname = \"cold\"\nkind = \"cold\"\n",
    );
    assert_eq!(f.code(), Some(1), "{}\n{}", f.stdout, f.stderr);
    f.assert_no_worker_left();
    let line = f.stderr.lines().find(|l| l.starts_with("error:")).unwrap();
    assert!(line.contains("step 'cold' trial 1"), "{line}");
    assert!(line.contains("stage hangs") && line.contains("stage timeout of 0.5 s"), "{line}");
    let r = harness::reports::campaign(&out);
    assert_eq!(r.failed_trials[0].reason, "stage_timeout", "{r:?}");
    assert_eq!(r.failed_trials[0].stage.as_deref(), Some("hangs"), "{r:?}");
}

/// A resume whose every stage is complete still makes a real run (of no
/// stage and no process) that verifies, and the judgment says it ran nothing.
#[test]
fn a_resume_that_skips_every_stage_is_a_real_run_and_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("work")).unwrap();
    let stage =
        r#"echo '{\"name\": \"x\", \"seconds\": 0.01}' >> \"$STAGEBENCH_SPANS\"; echo 1 > done_a"#;
    let (out, f) = campaign(
        tmp.path(),
        &format!(
            "[campaign]\nname = \"allskip\"\ntrials = 1\nscratch = \"work\"\n\n[[pipeline]]\nname = \"a\"\nargv = [\"sh\", \"-c\", \"{stage}\"]\ncwd = \"work\"\nmarker = \"work/done_a\"\nreset = [\"work/done_a\"]\n\n[[step]]\nname = \"cold\"\nkind = \"cold\"\n\n[[step]]\nname = \"resume\"\nkind = \"resume\"\n"
        ),
    );
    assert_eq!(f.code(), Some(0), "{}\n{}", f.stdout, f.stderr);
    let r = harness::reports::campaign(&out);
    let resume = &r.steps[1].trials[0];
    assert_eq!(resume.run, "runs/resume/1", "{resume:?}");
    assert!(resume.stages["a"].skipped);
    let run_report = harness::reports::read(&out.join("runs/resume/1"));
    assert_eq!(run_report.stages.len(), 0);
    assert_eq!(run_report.workers.len(), 0, "a process started");
    let mut v = coordinator();
    v.arg("verify").arg(out.join("runs/resume/1"));
    assert_eq!(run(v).code(), Some(0));
    let judgment = r.judgment.join("\n");
    assert!(judgment.contains("Resuming (resume) ran no stage"), "{judgment}");
    assert!(judgment.contains("It skipped 10.00 ms of the cold run's spans: a/x"), "{judgment}");
    assert!(!judgment.contains("0.000×"), "{judgment}");
}

/// `coordinator campaign --export-trace`: a track per step, a slice per
/// trial with its runs inside (an interrupted trial's killed run first),
/// B/E well formed; an existing path is refused before anything runs.
#[test]
fn a_campaign_traces_its_steps_trials_and_runs() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("work")).unwrap();
    let stage = r#"echo '{\"name\": \"a\", \"seconds\": 0.01}' >> \"$STAGEBENCH_SPANS\"; sleep 0.3; echo 1 > done_a"#;
    let file = tmp.path().join("c.toml");
    std::fs::write(
        &file,
        format!(
            "[campaign]\nname = \"traced\"\ntrials = 2\nscratch = \"work\"\n\n[[pipeline]]\nname = \"a\"\nargv = [\"sh\", \"-c\", \"{stage}\"]\ncwd = \"work\"\nmarker = \"work/done_a\"\nreset = [\"work/done_a\"]\n\n[[step]]\nname = \"cold\"\nkind = \"cold\"\n\n[[step]]\nname = \"resume\"\nkind = \"resume\"\n\n[[step]]\nname = \"cut\"\nkind = \"interrupted\"\nkill_at = \"a:span:a:1\"\n"
        ),
    )
    .unwrap();
    let trace_path = tmp.path().join("campaign.trace.json");
    let mut c = coordinator();
    c.arg("campaign").arg(&file).arg("--output").arg(tmp.path().join("out"));
    c.arg("--export-trace").arg(&trace_path);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}\n{}", f.stdout, f.stderr);
    f.assert_no_worker_left();
    let t = harness::trace::check(&json(&trace_path));
    let names: Vec<&str> = t.names.values().map(String::as_str).collect();
    assert_eq!(names, ["step cold (cold)", "step resume (resume)", "step cut (interrupted)"]);
    assert_eq!(t.slices["step"], 3);
    assert_eq!(t.slices["trial"], 6, "2 trials of 3 steps");
    assert_eq!(t.slices["run"], 6 + 2, "a run per trial, and the interrupted step's killed runs");

    let mut c = coordinator();
    c.arg("campaign").arg(&file).arg("--output").arg(tmp.path().join("again"));
    c.arg("--export-trace").arg(&trace_path);
    let f = run(c);
    assert_eq!(f.code(), Some(2), "{}", f.stderr);
    assert!(
        f.stderr.contains("--export-trace") && f.stderr.contains("already exists"),
        "{}",
        f.stderr
    );
    assert!(!tmp.path().join("again").exists(), "the campaign ran");
}
