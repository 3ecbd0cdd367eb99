//! A user's own pipeline, first class: the `stagebench` Python helper
//! through real processes (spans from a thread and a forked child, silence
//! outside stagebench), kill points a command's own reports mark (its whole
//! tree killed there), and the worked example's campaign judged by its spans.

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
    let figures = &json(&out.join("report.json"))["stages"]["helper"]["figures"];
    for name in ["from_thread", "from_child", "from_main"] {
        assert_eq!(figures[format!("span:{name}_n")], 1.0, "{name}: {figures}");
        let s = figures[format!("span:{name}_s")].as_f64().unwrap();
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
        (vec!["--mode", "profile", "--kill-at", "verify_before:0.5"], "not --mode profile"),
        (
            vec!["--mode", "cold-prep", "--kill-at", "cold_feature_cache_prepare:0.5"],
            "not --mode cold-prep",
        ),
        (
            vec!["--mode", "trials", "--command", "true", "--kill-at", "command:0.5"],
            "not --mode trials",
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
    let r = json(&out.join("report.json"));
    assert_eq!(r["pipeline"], true);
    let judgment: Vec<&str> =
        r["judgment"].as_array().unwrap().iter().map(|l| l.as_str().unwrap()).collect();
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
    assert!(resume[2].starts_with("It repeated") && resume[2].contains("max_lh_fit_recompute"));
    assert!(!resume[2].contains("search_fit"), "a skipped search ran again: {}", resume[2]);
    assert!(resume[3].contains("max_lh_fit_recompute") && resume[3].contains("persist"));
    // Killed mid-search in light: the light and mass searches ran again.
    let killed = after("Killed with SIGKILL at light:0.5");
    assert!(killed[2].contains("search_fit") && killed[2].contains("in light, mass"), "{killed:?}");
    assert!(killed[0].contains("identical to the cold run's in 1 of 1"), "{killed:?}");
    // The search ran again, and it is the largest repeated span, but it is
    // marked work: the span to persist is the largest one that is not.
    let persist = killed.iter().find(|l| l.contains("first thing to persist")).expect("persist");
    assert!(
        persist.starts_with("The largest repeated span not marked work, max_lh_fit_recompute"),
        "{persist}"
    );
    let killed = after("Killed with SIGKILL at mass:span:max_lh_fit_recompute:1");
    assert!(killed[0].contains("in 1 of 1"), "{killed:?}");
    for step in r["steps"].as_array().unwrap() {
        for t in step["trials"].as_array().unwrap() {
            assert_eq!(t["identical_to_cold"], true, "{}", step["name"]);
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
    assert!(!out.join("report.json").exists());
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
    let r = json(&out.join("report.json"));
    let resume = &r["steps"][1]["trials"][0];
    assert_eq!(resume["run"], "runs/resume/1", "{resume}");
    assert_eq!(resume["stages"]["a"]["skipped"], true);
    let run_report = json(&out.join("runs/resume/1/report.json"));
    assert_eq!(run_report["stages"].as_object().unwrap().len(), 0);
    assert_eq!(run_report["workers"].as_array().unwrap().len(), 0, "a process started");
    let mut v = coordinator();
    v.arg("verify").arg(out.join("runs/resume/1"));
    assert_eq!(run(v).code(), Some(0));
    let judgment = r["judgment"].to_string();
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

/// `--span` on an unmodified program (tests/scripts/autospan_user.py, which
/// never imports stagebench): a function, a method, a classmethod, a
/// staticmethod, a module imported late and a forked child are timed;
/// recursion is one span, nesting two; names that never match are named.
#[test]
fn spans_named_on_the_command_line_time_an_unmodified_program() {
    let (_tmp, out, mut c) = coordinator_with_output();
    let py = python(&mut c);
    let user = repo().join("tests/scripts/autospan_user.py");
    c.args(["--quiet", "--name", "user", "--command"]).arg(format!("'{py}' '{}'", user.display()));
    for s in [
        "autospan_lib:plain",
        "autospan_lib:Shape.area",
        "autospan_lib:Shape.make=make_shape",
        "autospan_lib:Shape.unit",
        "autospan_lib:recurse",
        "autospan_lib:outer",
        "autospan_lib:inner",
        "autospan_late:work",
        "autospan_lib:missing",
        "never_imported:f",
    ] {
        c.args(["--span", s]);
    }
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    f.assert_no_worker_left();
    let r = json(&out.join("report.json"));
    let stage = &r["stages"]["user"];
    let figures = &stage["figures"];
    for (name, n) in [
        ("plain", 2.0), // the parent's call and the forked child's
        ("area", 1.0),
        ("make_shape", 1.0),
        ("unit", 1.0),
        ("recurse", 1.0), // recursion: the outermost call only
        ("outer", 1.0),
        ("inner", 2.0), // nested in outer, recorded as its own name
        ("work", 1.0),  // a module imported inside a function
    ] {
        assert_eq!(figures[format!("span:{name}_n")], n, "{name}: {figures}");
    }
    let plain = figures["span:plain_s"].as_f64().unwrap();
    assert!(plain >= 0.004, "3 ms and 1 ms of sleep, timed: {plain}");
    let outer = figures["span:outer_s"].as_f64().unwrap();
    let inner = figures["span:inner_s"].as_f64().unwrap();
    assert!(inner <= outer && inner >= 0.002, "inner {inner} inside outer {outer}");
    assert_eq!(
        stage["spans_not_found"],
        serde_json::json!(["autospan_lib:missing", "never_imported:f"])
    );
    assert!(
        f.stdout.contains(
            "warning: --span autospan_lib:missing, never_imported:f matched nothing in stage user"
        ),
        "{}",
        f.stdout
    );
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(summary.contains("Warning: --span autospan_lib:missing"), "{summary}");
    let d = json(&out.join("declaration.json"));
    assert_eq!(d["parameters"]["spans"][2], "autospan_lib:Shape.make=make_shape");
    // The bootstrap is gone with the stage.
    let left: Vec<String> =
        harness::files_below(&out).into_iter().filter(|f| f.contains("bootstrap")).collect();
    assert!(left.is_empty(), "{left:?}");
}

/// Without `--span` a command runs exactly as before: no bootstrap and no
/// PYTHONPATH change. With one, the user's own sitecustomize still runs.
#[test]
fn no_span_means_no_bootstrap_and_a_users_sitecustomize_still_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let theirs = tmp.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    let marker = tmp.path().join("marker");
    std::fs::write(
        theirs.join("sitecustomize.py"),
        format!("open({:?}, 'a').write('theirs ran\\n')\n", marker.display().to_string()),
    )
    .unwrap();
    let seen = tmp.path().join("seen");
    let probe = tmp.path().join("probe.py");
    std::fs::write(
        &probe,
        format!(
            "import os, sys\nopen({:?}, 'w').write(repr((os.environ.get('PYTHONPATH'), 'STAGEBENCH_SPAN_TARGETS' in os.environ, 'stagebench.autospan' in sys.modules)))\n",
            seen.display().to_string()
        ),
    )
    .unwrap();
    let each = |spans: &[&str]| {
        let (_t, _out, mut c) = coordinator_with_output();
        let py = python(&mut c);
        let path = match c.get_envs().find(|(k, _)| *k == "PYTHONPATH").and_then(|(_, v)| v) {
            Some(v) => format!("{}:{}", theirs.display(), v.to_string_lossy()),
            None => theirs.display().to_string(),
        };
        c.env("PYTHONPATH", &path)
            .arg("--quiet")
            .arg("--command")
            .arg(format!("'{py}' '{}'", probe.display()));
        for s in spans {
            c.args(["--span", s]);
        }
        let f = run(c);
        assert_eq!(f.code(), Some(0), "{}", f.stderr);
        (path, std::fs::read_to_string(&seen).unwrap())
    };
    let (path, got) = each(&[]);
    assert_eq!(got, format!("({path:?}, False, False)").replace('"', "'"), "no --span: untouched");
    let (_, got) = each(&["json:loads"]);
    assert!(got.contains(".spans-bootstrap-") && got.contains(", True, True)"), "{got}");
    let ran = std::fs::read_to_string(&marker).unwrap();
    assert_eq!(ran, "theirs ran\ntheirs ran\n", "the user's sitecustomize ran both times");
}

#[test]
fn bad_span_targets_are_refused_before_anything_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    for (args, says) in [
        (&["--command", "true", "--span", "json.loads"][..], "has no colon"),
        (&["--command", "true", "--span", ":loads"], "the module '' is not a dotted Python name"),
        (&["--command", "true", "--span", "json:"], "the qualname '' is not"),
        (&["--command", "true", "--span", "json:loads=a/b"], "the span name 'a/b' must be"),
        (&["--command", "true", "--span", "preset:keras"], "unknown preset 'keras'"),
        (
            &["--stage", "noop", "--span", "json:loads"],
            "applies to --command stages and --prepare programs",
        ),
        (
            &["--mode", "profile", "--span", "json:loads"],
            "applies to --command stages and --prepare programs",
        ),
    ] {
        let mut c = coordinator();
        c.args(args).arg("--output").arg(&out);
        let f = run(c);
        assert_eq!(f.code(), Some(2), "{args:?}: {}", f.stderr);
        let lines: Vec<&str> = f.stderr.lines().filter(|l| l.starts_with("error:")).collect();
        assert_eq!(lines.len(), 1, "{}", f.stderr);
        assert!(lines[0].contains(says), "{args:?}: {}", lines[0]);
        assert!(!out.exists());
    }
}

/// The worked example's campaign run twice with one trial each: over
/// chain.py, which calls the helper, and over plain.py, which calls nothing
/// and whose spans the campaign file names. Their judgments say the same
/// sentences: each sentence's opening words and the set of span and stage
/// names it gives (times, their units and the order of near-equal spans
/// differ from run to run).
#[test]
fn a_campaign_naming_its_spans_judges_an_unchanged_chain_as_the_helper_does() {
    let example = repo().join("examples/pipeline");
    let judge = |file: &str, steps: &str| {
        let tmp = tempfile::tempdir().unwrap();
        for f in ["chain.py", "plain.py", "fitting.py"] {
            std::fs::copy(example.join(f), tmp.path().join(f)).unwrap();
        }
        std::fs::create_dir(tmp.path().join("scratch")).unwrap();
        let toml = std::fs::read_to_string(example.join(file)).unwrap();
        // One trial, and the steps both campaigns share.
        let head = toml.split("[[step]]").next().unwrap().replace("trials = 3\n", "trials = 1\n");
        let path = tmp.path().join("c.toml");
        std::fs::write(&path, format!("{head}{steps}")).unwrap();
        let out = tmp.path().join("campaign");
        let mut c = coordinator();
        python_on_path(&mut c);
        c.arg("campaign").arg(&path).arg("--output").arg(&out);
        let f = run(c);
        assert_eq!(f.code(), Some(0), "{file}: {}\n{}", f.stdout, f.stderr);
        f.assert_no_worker_left();
        let r = json(&out.join("report.json"));
        let said: Vec<(String, std::collections::BTreeSet<String>)> = r["judgment"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| {
                let l = l.as_str().unwrap();
                let opening: String = l
                    .split_whitespace()
                    .take_while(|w| !w.chars().any(|c| c.is_ascii_digit()))
                    .take(3)
                    .collect::<Vec<_>>()
                    .join(" ");
                let names = l
                    .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '/'))
                    .filter(|w| w.contains('_') || w.contains('/'))
                    .map(str::to_string)
                    .collect();
                (opening, names)
            })
            .collect();
        said
    };
    let steps = "[[step]]\nname = \"cold\"\nkind = \"cold\"\n\n[[step]]\nname = \"resume\"\nkind = \"resume\"\n\n[[step]]\nname = \"killed_after_recompute\"\nkind = \"interrupted\"\nkill_at = \"mass:span:max_lh_fit_recompute:1\"\n";
    let helper = judge("campaign.toml", steps);
    let named = judge("campaign-plain.toml", steps);
    assert!(
        helper.iter().any(|(o, n)| o == "It skipped" && n.contains("light/search_fit")),
        "{helper:?}"
    );
    assert!(
        helper
            .iter()
            .any(|(o, n)| o.starts_with("The largest repeated")
                && n.contains("max_lh_fit_recompute")),
        "{helper:?}"
    );
    assert_eq!(named, helper, "the same judgment, spans named or called");
}

/// `--span preset:torch` on examples/torch/train.py, which has no
/// stagebench in it, for real: with `STAGEBENCH_TORCH_PYTHON` naming a
/// Python with torch; SKIPPED otherwise. The loader waits, steps, optimizer
/// steps and backward passes counted equal the batches the script ran, and
/// the stage gets an input-wait fraction and its grade.
#[test]
fn the_torch_preset_counts_every_batch_of_an_unmodified_training_script() {
    let py = match std::env::var("STAGEBENCH_TORCH_PYTHON") {
        Ok(p) if !p.is_empty() => p,
        _ => {
            harness::skip(
                "the_torch_preset_counts_every_batch_of_an_unmodified_training_script",
                "STAGEBENCH_TORCH_PYTHON names no Python with torch",
            );
            return;
        }
    };
    let (_tmp, out, mut c) = coordinator_with_output();
    let script = repo().join("examples/torch/train.py");
    c.args(["--mode", "trials", "--trials", "2", "--warmup", "0", "--name", "train"])
        .arg("--command")
        .arg(format!("'{py}' '{}' --batches 12 --work 200", script.display()))
        .args(["--span", "preset:torch"]);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    f.assert_no_worker_left();
    let r = json(&out.join("report.json"));
    let trials = &r["trials"]["train"]["samples"];
    let counts = |name: &str| -> Vec<f64> {
        let c = trials[format!("span:{name}_n")].as_array().unwrap();
        c.iter().map(|n| n.as_f64().unwrap()).collect()
    };
    for name in ["step", "optimizer_step", "backward"] {
        assert_eq!(counts(name), [12.0, 12.0], "{name}");
    }
    // The first batch of the epoch also starts the loader's workers.
    assert_eq!(counts("loader_start"), [1.0, 1.0]);
    assert_eq!(counts("loader_wait"), [11.0, 11.0]);
    let fraction = r["stages"]["train"]["figures"]["input_wait_fraction"].as_f64().unwrap();
    assert!((0.0..1.0).contains(&fraction), "{fraction}");
    assert!(r["stages"]["train"].get("spans_not_found").is_none(), "{}", r["stages"]["train"]);
    assert!(f.stdout.contains("input: train waited for its loader"), "{}", f.stdout);
    assert!(f.stdout.contains("input-bound (11 loader waits"), "{}", f.stdout);
    // The verdict both ways: a loader that does 100x the work per item
    // under a narrow network is highly input-bound; no loader work under a
    // wide one is not.
    let verdict = |args: &str| {
        let (_tmp, out, mut c) = coordinator_with_output();
        c.args(["--mode", "trials", "--trials", "2", "--warmup", "0", "--name", "train"])
            .arg("--command")
            .arg(format!("'{py}' '{}' --batches 12 {args}", script.display()))
            .args(["--span", "preset:torch"]);
        let f = run(c);
        assert_eq!(f.code(), Some(0), "{}", f.stderr);
        json(&out.join("report.json"))["stages"]["train"]["figures"]["input_wait_fraction"]
            .as_f64()
            .unwrap()
    };
    let starved = verdict("--work 20000 --width 8");
    let fed = verdict("--work 0 --width 256");
    assert!(starved >= 0.20, "a starved loop is highly input-bound: {starved}");
    assert!(fed < 0.05, "a fed loop is not input-bound: {fed}");
}
