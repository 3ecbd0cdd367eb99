//! External pipelines: run cold and resumed with their spans, a stage that
//! is not idempotent, a stage that fails, and an interrupted campaign.

use crate::pipeline;
use harness::reports;
use harness::{coordinator, json, run, run_campaign};

#[test]
fn an_external_pipeline_runs_cold_and_resumed_with_its_spans_in_the_report() {
    let tmp = tempfile::tempdir().unwrap();
    let file = pipeline(tmp.path(), "");
    // Something of the user's inside scratch but not declared for reset stays.
    std::fs::write(tmp.path().join("work/keep.txt"), b"mine").unwrap();
    let out = tmp.path().join("campaign");
    let f = run_campaign(&file, &out);
    assert_eq!(f.code(), Some(0), "{}\n{}", f.stdout, f.stderr);
    f.assert_no_worker_left();
    let r = reports::campaign(&out);
    let (cold, resume) = (&r.steps[0], &r.steps[1]);
    // A pipeline's steps have no resume policy: a resume skips what is marked.
    assert_eq!(resume.policy, None, "{resume:?}");
    for t in &cold.trials {
        for stage in ["adapt_images", "fit_likelihood", "sample"] {
            let part = &t.stages[stage];
            assert!(!part.skipped, "{stage} skipped cold");
            // No roles: no second of it is called work; all but start-up is other.
            assert!(!part.components.contains_key("work"), "{stage}: {part:?}");
            assert!(part.components["other"] > 0.0, "{stage}");
            assert!(part.spans.contains_key(&format!("compute_{stage}")), "{stage}: {part:?}");
        }
        // The run's own report carries the spans beside the process figures.
        let run = reports::read(&out.join(&t.run));
        let sample = reports::stage(&run, "sample");
        reports::figure(sample, "span:compute_sample_s");
        assert!(sample.peak_rss_bytes > 0);
    }
    for t in &resume.trials {
        assert!(t.stages["adapt_images"].skipped);
        assert!(t.stages["fit_likelihood"].skipped);
        for (order, stage) in ["adapt_images", "fit_likelihood", "sample"].iter().enumerate() {
            // Skipped or run, a stage keeps its place in the pipeline.
            assert_eq!(t.stages[*stage].order, order, "{stage}: {t:?}");
        }
        for stage in ["adapt_images", "fit_likelihood"] {
            // A skipped stage's wall is its marker check, all of it.
            let part = &t.stages[stage];
            let check = part.components["record_check"];
            assert!(check > 0.0 && check < 0.1, "{stage}: {part:?}");
            assert_eq!(part.wall_s, check, "{stage}: {part:?}");
        }
        assert!(!t.stages["sample"].skipped);
        assert!(t.identical_to_cold, "a resume changed the outputs");
        let run = reports::read(&out.join(&t.run));
        assert_eq!(run.stages.len(), 1, "only the unmarked stage ran");
    }
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("work/sample/out.txt")).unwrap(),
        "adapt_images:salted\nfit_likelihood:salted\nsample:salted\n"
    );
    assert_eq!(std::fs::read(tmp.path().join("work/keep.txt")).unwrap(), b"mine");
    // The judgment is the pipeline's own spans: what the resume skipped (the
    // marked stages' spans), what it repeated, and never "work" unasked.
    let judgment = r.judgment.join("\n");
    assert!(!judgment.contains("work still to do"), "{judgment}");
    assert!(
        judgment.contains("It skipped") && judgment.contains("adapt_images/compute_adapt_images")
    );
    assert!(judgment.contains("It repeated") && judgment.contains("compute_sample"), "{judgment}");
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(summary.contains("| `sample` | `compute_sample` |"), "{summary}");
    let mut c = coordinator();
    c.arg("verify").arg(&out);
    assert_eq!(run(c).code(), Some(0));
}

/// A stage that is not idempotent (it appends a line each time it runs and
/// leaves no marker) makes every resume's scratch state differ from the
/// cold run's, and the report and the judgment say so; in a dot-directory
/// too (a team's cache in `.cache/`), which the recipe's state digest
/// would leave out.
#[test]
fn a_resume_that_writes_a_different_byte_is_not_identical_to_cold() {
    for tally in ["work/tally.txt", "work/.cache/tally"] {
        not_identical_to_cold(tally);
    }
}

fn not_identical_to_cold(tally: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let tally = format!(
        "[[pipeline]]\nname = \"tally\"\nargv = [\"sh\", \"-c\", \"mkdir -p work/.cache && echo ran >> {tally}\"]\nreset = [\"{tally}\"]\n"
    );
    let file = pipeline(tmp.path(), &tally);
    let out = tmp.path().join("campaign");
    let f = run_campaign(&file, &out);
    // A state that differs beyond what cold runs differ in fails the
    // campaign, with its report.
    assert_eq!(f.code(), Some(1), "{}\n{}", f.stdout, f.stderr);
    assert!(f.stderr.contains("did not reproduce a cold run in 2 of 2 trials"), "{}", f.stderr);
    let r = reports::campaign(&out);
    for t in &r.steps[0].trials {
        assert!(t.identical_to_cold, "a cold trial starts from its reset");
    }
    for t in &r.steps[1].trials {
        assert!(!t.identical_to_cold, "the resume appended a line: {t:?}");
        assert_ne!(t.state_sha256, r.reference_state_sha256);
    }
    let judgment = &r.judgment;
    assert!(
        judgment.iter().any(|j| j.contains(
            "The scratch state after resuming (resume) DIFFERED from the cold run's in 2 of 2 trials"
        )),
        "{judgment:?}"
    );
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(summary.contains("DIFFERED from the cold run's in 2 of 2"), "{summary}");
}

/// A stage that always fails: every cold trial is a failed trial, the
/// resume has no state to start from and is not run; the campaign exits 1
/// with a report that verifies and opens with the failure.
#[test]
fn a_pipeline_stage_that_fails_is_a_finding_and_the_steps_after_it_are_not_run() {
    let tmp = tempfile::tempdir().unwrap();
    let file = pipeline(tmp.path(), "[[pipeline]]\nname = \"broken\"\nargv = [\"false\"]\n");
    let out = tmp.path().join("campaign");
    let f = run_campaign(&file, &out);
    assert_eq!(f.code(), Some(1), "{}", f.stderr);
    assert!(
        f.stderr.contains("error: step 'cold' trial 1") && f.stderr.contains("broken"),
        "{}",
        f.stderr
    );
    assert!(f.stderr.contains("error: not run: resume"), "{}", f.stderr);
    f.assert_no_worker_left();
    let r = reports::campaign(&out);
    assert_eq!(r.steps.len(), 0, "no trial completed");
    assert_eq!(r.failed_trials.len(), 2);
    assert_eq!(r.failed_trials[0].stage.as_deref(), Some("broken"));
    let judgment = &r.judgment;
    assert!(
        judgment[0].starts_with("A cold run (cold) FAILED in 2 of 2 trials (stage broken: the command exited with status 1)"),
        "{judgment:?}"
    );
    assert!(judgment[1].starts_with("Not run: resume: no complete state"), "{judgment:?}");
    assert!(!out.join("failure.json").exists(), "a campaign has one ending: its report");
    let mut c = coordinator();
    c.arg("verify").arg(&out);
    let v = run(c);
    assert_eq!(v.code(), Some(0), "{}", v.stderr);
    let declaration = std::fs::read_to_string(out.join("declaration.json")).unwrap();
    assert!(!declaration.contains("stage.py"), "the declaration holds a stage's argv");
}

/// A campaign of one pipeline stage `name` that writes "mine" to `path`
/// (relative to its spans file's directory, its trial's run directory):
/// it exits 1 and leaves no worker. Returns where it wrote its evidence.
fn failed_writing_beside_its_spans(
    name: &str,
    path: &str,
) -> (tempfile::TempDir, std::path::PathBuf, harness::Finished) {
    let tmp = tempfile::tempdir().unwrap();
    let stray = format!(
        "[[pipeline]]\nname = \"{name}\"\nargv = [\"sh\", \"-c\", \"echo mine > \\\"$(dirname \\\"$STAGEBENCH_SPANS\\\")/{path}\\\"\"]\n"
    );
    let file = pipeline(tmp.path(), &stray);
    let out = tmp.path().join("campaign");
    let f = run_campaign(&file, &out);
    assert_eq!(f.code(), Some(1), "{}", f.stderr);
    f.assert_no_worker_left();
    (tmp, out, f)
}

/// A stage that writes beside its spans file, into its trial's run
/// directory (issue 44): the trial's run fails (`unaccounted_output`)
/// before any report of it says ok, the file kept and named in its
/// failure.json; the campaign records the failed trial, exits 1, and
/// verifies.
#[test]
fn a_stage_that_writes_into_its_run_directory_fails_its_trial() {
    let (_tmp, out, _f) = failed_writing_beside_its_spans("beside", "beside.txt");
    let r = reports::campaign(&out);
    let failed = &r.failed_trials;
    assert_eq!(failed.len(), 2, "{failed:?}");
    for t in failed {
        assert_eq!(t.reason, "unaccounted_output", "{t:?}");
        let run = out.join(&t.run);
        assert_eq!(std::fs::read_to_string(run.join("beside.txt")).unwrap(), "mine\n");
        let failure = json(&run.join("failure.json"));
        assert_eq!(failure["kept"], serde_json::json!(["beside.txt"]), "{failure}");
        assert!(!run.join("report.json").exists());
    }
    let mut c = coordinator();
    c.arg("verify").arg(&out);
    let v = run(c);
    assert_eq!(v.code(), Some(0), "{}", v.stderr);
}

/// A stage that writes into the campaign directory itself, outside every
/// run's: the campaign makes verify's walk before its report, fails with
/// failure.json naming the file, and keeps it.
#[test]
fn a_stage_that_writes_into_the_campaign_directory_fails_the_campaign() {
    let (_tmp, out, _f) = failed_writing_beside_its_spans("above", "../../../above.txt");
    assert!(!out.join("report.json").exists());
    let failure = json(&out.join("failure.json"));
    let message = failure["message"].as_str().unwrap();
    assert!(message.starts_with("above.txt is not bound by report.json"), "{message}");
    assert_eq!(failure["kept"], serde_json::json!(["above.txt"]), "{failure}");
    assert_eq!(std::fs::read_to_string(out.join("above.txt")).unwrap(), "mine\n");
}

#[test]
fn interrupting_a_campaign_kills_the_pipeline_tree_and_writes_no_report() {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("sleeper.toml");
    std::fs::write(
        &file,
        "[campaign]\nname = \"sleeper\"\ntrials = 1\n\n[[pipeline]]\nname = \"nap\"\nargv = [\"sh\", \"-c\", \"echo pipeline-stage-ready pid=$$ >&2; exec sleep 300\"]\n\n[[step]]\nname = \"cold\"\nkind = \"cold\"\n",
    )
    .unwrap();
    let out = tmp.path().join("campaign");
    let mut c = coordinator();
    c.arg("campaign").arg(&file).arg("--output").arg(&out);
    let mut r = harness::Running::spawn(c);
    let spawned = r.wait_for("worker spawned");
    let worker = harness::field(&spawned, "pid").expect("a worker pid");
    // The stage's own process (sh, which execs into sleep): that exact pid
    // must be alive now and gone after the interrupt.
    let ready = r.wait_for("pipeline-stage-ready");
    let sleeper = harness::field(&ready, "pid").expect("the stage's pid");
    assert!(harness::alive(sleeper), "the stage is not running");
    kill(Pid::from_raw(r.pid()), Signal::SIGINT).unwrap();
    let (status, stderr) = r.finish();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(
        harness::wait_gone(worker, std::time::Duration::from_secs(10)),
        "the worker outlived the campaign"
    );
    assert!(
        harness::wait_gone(sleeper, std::time::Duration::from_secs(10)),
        "the stage's sleep {sleeper} outlived the campaign"
    );
    assert!(!out.join("report.json").exists());
    assert_eq!(json(&out.join("failure.json"))["reason"], "interrupted");
}

/// Read call by call (issue 43): a two-stage chain whose search, like
/// autofit's, is called again on a resume and loads its result. Killed
/// right after stage two's recompute and resumed, the judgment says stage
/// one's search was loaded (with both times), stage two's was not yet done
/// at the kill, and what was repeated: both recomputes, each second once,
/// never the undone search as a thing to persist.
#[test]
fn an_interrupted_chain_is_read_call_by_call() {
    let tmp = tempfile::tempdir().unwrap();
    let script = harness::repo().join("tests/scripts/loading_chain.py");
    std::fs::create_dir(tmp.path().join("work")).unwrap();
    let stage = |name: &str| {
        format!(
            "[[pipeline]]\nname = \"{name}\"\nargv = [\"python3\", \"{}\", \"{name}\", \"work\"]\nreset = [\"work/{name}\"]\n",
            script.display()
        )
    };
    let (out, f) = python_campaign(
        tmp.path(),
        format!(
            "[campaign]\nname = \"calls\"\ntrials = 2\nscratch = \"work\"\n\n{}\n{}\n[[step]]\nname = \"cold\"\nkind = \"cold\"\n\n[[step]]\nname = \"killed\"\nkind = \"interrupted\"\nkill_at = \"two:span:recompute:1\"\n\n[[step]]\nname = \"resume\"\nkind = \"resume\"\n",
            stage("one"),
            stage("two")
        ),
    );
    assert_eq!(f.code(), Some(0), "{}\n{}", f.stdout, f.stderr);
    let r = reports::campaign(&out);
    let j = &r.judgment;
    let killed = j
        .iter()
        .position(|l| l.starts_with("Killed with SIGKILL"))
        .unwrap_or_else(|| panic!("{j:?}"));
    let resume = j
        .iter()
        .position(|l| l.starts_with("Resuming (resume)"))
        .unwrap_or_else(|| panic!("{j:?}"));
    let read = j[killed..resume].join("\n");
    assert!(read.contains("It loaded 1 call(s) instead of redoing them"), "{read}");
    assert!(read.contains("one/search took"), "{read}");
    assert!(
        read.contains(
            "Not yet done at the kill, so work the interruption left, not a repeat: two/search"
        ),
        "{read}"
    );
    let repeated = j[killed..resume]
        .iter()
        .find(|l| l.starts_with("It repeated"))
        .unwrap_or_else(|| panic!("{read}"));
    assert!(
        repeated.contains("of calls done before the kill") && repeated.contains("recompute"),
        "{repeated}"
    );
    assert!(repeated.contains("in one, two"), "{repeated}");
    assert!(!repeated.contains("search"), "the undone search is no repeat: {repeated}");
    let persist = j[killed..resume]
        .iter()
        .find(|l| l.contains("first thing to persist"))
        .unwrap_or_else(|| panic!("{read}"));
    assert!(persist.contains("recompute") && !persist.contains("search"), "{persist}");
    // Two recomputes of 0.15 s, each second once.
    let secs: f64 = repeated
        .split("It repeated ")
        .nth(1)
        .and_then(|s| s.split(" ms").next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{repeated}"));
    assert!((290.0..450.0).contains(&secs), "{repeated}");
    // After a complete cold run both searches ran before: both loaded.
    let after = j[resume..].join("\n");
    assert!(after.contains("It loaded 2 call(s)"), "{after}");
    assert!(!after.contains("Not yet done"), "{after}");
    // The killed attempts' calls are in the report: what ended before the kill.
    let t = &r.steps[1].trials[0].killed.as_ref().expect("the killed attempt").calls;
    assert_eq!(t["one"]["search"].len(), 1, "{t:?}");
    assert_eq!(t["two"]["recompute"].len(), 1, "{t:?}");
    assert!(!t["two"].contains_key("search"), "{t:?}");
    let mut c = coordinator();
    c.arg("verify").arg(&out);
    assert_eq!(run(c).code(), Some(0));
}

/// A trial that fails is a finding (issue 43): a stage killed while
/// writing its result leaves it truncated, and every resume after that
/// interruption crashes reading it. The campaign keeps going (the cold and
/// resume steps before, a cold step after), exits 1 with a report that
/// verifies, and its judgment opens with the failure: where, how, and the
/// last span the stage finished.
#[test]
fn a_resume_that_crashes_after_an_interruption_is_a_finding() {
    let tmp = tempfile::tempdir().unwrap();
    let script = harness::repo().join("tests/scripts/fragile_chain.py");
    std::fs::create_dir(tmp.path().join("work")).unwrap();
    let (out, f) = python_campaign(
        tmp.path(),
        format!(
            "[campaign]\nname = \"fragile\"\ntrials = 2\nscratch = \"work\"\n\n[[pipeline]]\nname = \"one\"\nargv = [\"python3\", \"{}\", \"one\", \"work\"]\nreset = [\"work/one\"]\n\n[[step]]\nname = \"cold\"\nkind = \"cold\"\n\n[[step]]\nname = \"resume\"\nkind = \"resume\"\n\n[[step]]\nname = \"killed\"\nkind = \"interrupted\"\nkill_at = \"one:span:half_written:1\"\n\n[[step]]\nname = \"cold_again\"\nkind = \"cold\"\n",
            script.display()
        ),
    );
    assert_eq!(f.code(), Some(1), "{}\n{}", f.stdout, f.stderr);
    f.assert_no_worker_left();
    let errors: Vec<&str> = f.stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 2, "{}", f.stderr);
    assert!(errors[0].contains("step 'killed' trial 1"), "{}", errors[0]);
    let r = reports::campaign(&out);
    let steps: Vec<&str> = r.steps.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(steps, ["cold", "resume", "cold_again"], "every measurement kept");
    let failed = &r.failed_trials;
    assert_eq!(failed.len(), 2, "{failed:?}");
    for (i, t) in failed.iter().enumerate() {
        assert_eq!(t.step, "killed");
        assert_eq!(t.trial as usize, i + 1);
        assert_eq!(t.reason, "stage_failed", "{t:?}");
        assert_eq!(t.stage.as_deref(), Some("one"));
        assert!(!t.killed_attempt, "the resume failed, not the attempt: {t:?}");
        assert_eq!(t.last_span.as_deref(), Some("restore"), "{t:?}");
        assert!(t.message.contains("exited with status 1"), "{t:?}");
    }
    let judgment = &r.judgment[0];
    assert!(
        judgment.starts_with("Resuming after an interruption at one:span:half_written:1 (killed) FAILED in 2 of 2 trials (stage one: the command exited with status 1, after its last finished span restore)"),
        "{judgment}"
    );
    // The program's own words reach the person, not the evidence: on
    // stagebench's stderr as it wrote them, and (that stderr being no
    // terminal here) their end in a private file per failed trial.
    assert!(f.stderr.contains("result.txt is truncated"), "{}", f.stderr);
    let text = std::fs::read_to_string(out.join("report.json")).unwrap();
    assert!(!text.contains("truncated"), "the program's stderr is no evidence");
    for (i, t) in failed.iter().enumerate() {
        let kept = format!("private/stderr/killed.{}.txt", i + 1);
        assert_eq!(t.stderr_tail_file.as_deref(), Some(kept.as_str()), "{t:?}");
        let tail = std::fs::read_to_string(out.join(&kept)).unwrap();
        assert!(tail.contains("Traceback (most recent call last)"), "{tail}");
        assert!(
            tail.trim_end().ends_with("ValueError: result.txt is truncated: cannot restore one"),
            "{tail}"
        );
    }
    assert!(
        judgment.contains("The end of its stderr is in private/stderr/killed.1.txt"),
        "{judgment}"
    );
    let mut c = coordinator();
    c.arg("verify").arg(&out);
    let v = run(c);
    assert_eq!(v.code(), Some(0), "{}", v.stderr);
    // An edited failure.json of a failed trial is caught.
    let failure = out.join(&failed[0].run).join("failure.json");
    let text = std::fs::read_to_string(&failure).unwrap();
    std::fs::write(&failure, text.replace("stage_failed", "stage_faile_")).unwrap();
    let mut c = coordinator();
    c.arg("verify").arg(&out);
    assert_eq!(run(c).code(), Some(3));
}

/// Identity against a baseline (issue 43): a stage that writes its result
/// and a file of timings, different on every run. Cold runs differ from
/// each other in that one file, so a resume that differs only there
/// reproduces a cold run as well as a cold run does (exit 0), the paths in
/// private/identity.txt only; with `identity_exclude` the file is left out
/// and cold runs reproduce each other; a stage that also appends to its
/// result differs beyond the baseline, and the campaign exits 1.
#[test]
fn a_resume_is_judged_against_how_cold_runs_differ_among_themselves() {
    let campaign = |stage_cmd: &str, exclude: &str| {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("work")).unwrap();
        let file = tmp.path().join("timings.toml");
        std::fs::write(
            &file,
            format!(
                "[campaign]\nname = \"timings\"\ntrials = 2\nscratch = \"work\"\n{exclude}\n[[pipeline]]\nname = \"s\"\nargv = [\"sh\", \"-c\", \"{stage_cmd}\"]\nreset = [\"work/s\"]\n\n[[step]]\nname = \"cold\"\nkind = \"cold\"\n\n[[step]]\nname = \"resume\"\nkind = \"resume\"\n"
            ),
        )
        .unwrap();
        let out = tmp.path().join("campaign");
        let f = harness::run_campaign(&file, &out);
        let r = reports::campaign(&out);
        let mut c = coordinator();
        c.arg("verify").arg(&out);
        assert_eq!(run(c).code(), Some(0), "a campaign with private/ verifies");
        let private = std::fs::read_to_string(out.join("private/identity.txt")).unwrap_or_default();
        let text = std::fs::read_to_string(out.join("report.json")).unwrap_or_default();
        (tmp, f, r, private, text)
    };
    let stamp =
        "mkdir -p work/s && echo result > work/s/out.txt && date +%s%N > work/s/timings.json";
    let (_t, f, r, private, text) = campaign(stamp, "");
    assert_eq!(f.code(), Some(0), "{}\n{}", f.stdout, f.stderr);
    let identity = r.identity.as_ref().expect("the cold runs' identity");
    assert_eq!(identity.cold_trials, 2, "{identity:?}");
    assert_eq!(identity.cold_identical, 1);
    assert_eq!(identity.baseline_files, 1, "{private}");
    let judgment = r.judgment.join("\n");
    assert!(judgment.contains("Cold runs differ among themselves: 1 of 2 cold trials left a scratch state other than the first's, in 1 file(s) (listed in private/identity.txt"), "{judgment}");
    assert!(
        judgment.contains("differed only in files the cold runs differ in among themselves (1)"),
        "{judgment}"
    );
    assert!(!text.contains("timings.json"), "a path in evidence");
    assert!(private.contains("cold 2\tdiffers among cold runs\ts/timings.json"), "{private}");
    for t in &r.steps[1].trials {
        assert_eq!((t.differing_files, t.beyond_baseline), (Some(1), Some(0)), "{t:?}");
    }

    let (_t, f, r, _, _) = campaign(stamp, "identity_exclude = [\"**/timings.json\"]\n");
    assert_eq!(f.code(), Some(0), "{}\n{}", f.stdout, f.stderr);
    let identity = r.identity.as_ref().expect("the cold runs' identity");
    assert_eq!(identity.excluded_files, 1, "{identity:?}");
    assert_eq!(identity.exclude[0], "**/timings.json");
    assert_eq!(identity.cold_identical, 2);
    let judgment = r.judgment.join("\n");
    assert!(judgment.contains("Cold runs reproduce each other: the 2 cold trials left the same scratch state. identity_exclude (**/timings.json) left 1 file(s) out"), "{judgment}");
    assert!(judgment.contains("was identical to the cold run's in 2 of 2 trials"), "{judgment}");

    // Beyond the baseline: the result itself changes on a resume.
    let grows =
        "mkdir -p work/s && echo result >> work/s/out.txt && date +%s%N > work/s/timings.json";
    let (_t, f, r, _, _) = campaign(grows, "");
    assert_eq!(f.code(), Some(1), "{}\n{}", f.stdout, f.stderr);
    assert!(
        f.stderr.contains(
            "error: step 'resume': the resumed state did not reproduce a cold run in 2 of 2 trials"
        ),
        "{}",
        f.stderr
    );
    let judgment = r.judgment.join("\n");
    assert!(judgment.contains("DIFFERED from the cold run's in 2 of 2 trials, beyond what cold runs differ in among themselves (up to 1 file(s) more than the 1 in which they do)"), "{judgment}");
}

/// `coordinator campaign` over `toml` (written into `dir`), its argv's
/// `python3` the tests' Python; the campaign's directory and how it ended.
fn python_campaign(dir: &std::path::Path, toml: String) -> (std::path::PathBuf, harness::Finished) {
    let file = dir.join("campaign.toml");
    std::fs::write(&file, toml).unwrap();
    let out = dir.join("campaign");
    let mut c = coordinator();
    harness::python_on_path(&mut c);
    c.arg("campaign").arg(&file).arg("--output").arg(&out);
    (out, run(c))
}
