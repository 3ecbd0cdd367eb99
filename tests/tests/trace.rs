//! `--export-trace`: a Chrome Trace Event file derived from report.json,
//! one track per worker process, every B closed by its E, slices nested.

use harness::data::tiny;
use harness::reports;
use harness::{json, run};
use report::Report;
use std::collections::BTreeSet;

/// Checks the trace's structure against its run's report (and its
/// jobs.jsonl.gz, which holds a cold-prep's jobs: `jobs`).
fn check(trace: &serde_json::Value, report: &Report, jobs: &[serde_json::Value]) {
    let t = harness::trace::check(trace);
    let workers = &report.workers;
    // One track per worker process, plus the phases' track, and lanes for
    // spans that overlapped without nesting.
    let own: BTreeSet<String> = workers.iter().map(|w| format!("worker {}", w.rank)).collect();
    let tracks: BTreeSet<String> =
        t.names.values().filter(|n| n.as_str() != "phases").cloned().collect();
    assert!(own.is_subset(&tracks), "a track per worker: {tracks:?}");
    assert!(tracks.difference(&own).all(|t| t.contains(": overlapping spans")), "{tracks:?}");
    let jobs = jobs.len() + workers.iter().map(|w| w.jobs.len()).sum::<usize>();
    assert!(jobs > 0);
    assert_eq!(t.slices.get("stage").copied().unwrap_or(0), jobs, "a slice per job");
}

#[test]
fn a_cold_prep_sweep_traces_every_worker_and_render_derives_the_same_trace() {
    let tmp = tempfile::tempdir().unwrap();
    let trace_path = tmp.path().join("run.trace.json");
    let (_t, out, mut c) = harness::coordinator_with_output();
    c.args(["--quiet", "--mode", "cold-prep", "--workers", "1,3", "--rounds", "2", "--data"])
        .arg(&tiny().frozen)
        .arg("--export-trace")
        .arg(&trace_path);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    let report = reports::read(&out);
    let trace = json(&trace_path);
    let jobs = harness::jobs(&out);
    // 2 rounds of a serial phase and two counts' parallel phases, and the
    // sources' checks before and after.
    let series = reports::cold_prep(&report).serial.per_series_s.n as usize;
    assert_eq!(jobs.len(), 6 * series + 2);
    check(&trace, &report, &jobs);
    assert_eq!(trace["otherData"]["schema"], "stagebench.trace");
    // Cold-prep's series are the prepare workers' jobs, named by phase only.
    let text = std::fs::read_to_string(&trace_path).unwrap();
    let frozen = json(&tiny().frozen.join("frozen.json"));
    for s in frozen["series"].as_array().unwrap() {
        assert!(!text.contains(s["id"].as_str().unwrap()), "the trace names a series");
    }
    assert!(!text.contains(tiny().frozen.to_str().unwrap()), "the trace holds the input path");

    // render derives the same bytes from report.json alone, and refuses to
    // write over an existing file.
    let again = tmp.path().join("again.json");
    let mut c = harness::coordinator();
    c.arg("render").arg(&out).arg("--export-trace").arg(&again);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    assert_eq!(std::fs::read(&again).unwrap(), std::fs::read(&trace_path).unwrap());
    let mut c = harness::coordinator();
    c.arg("render").arg(&out).arg("--export-trace").arg(&again);
    let f = run(c);
    assert_eq!(f.code(), Some(2), "{}", f.stderr);
    assert!(
        f.stderr.contains("--export-trace") && f.stderr.contains("already exists"),
        "{}",
        f.stderr
    );
}

#[test]
fn trials_trace_one_process_per_trial() {
    let tmp = tempfile::tempdir().unwrap();
    let trace_path = tmp.path().join("t.json");
    let (_t, out, mut c) = harness::coordinator_with_output();
    c.args(["--quiet", "--mode", "trials", "--trials", "3", "--warmup", "1", "--stage", "spin:20"])
        .arg("--export-trace")
        .arg(&trace_path);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    let report = reports::read(&out);
    check(&json(&trace_path), &report, &harness::jobs(&out));
    assert_eq!(report.workers.len(), 4, "a process per trial");
}

/// A command's spans through the Python helper: nested spans nest inside
/// the stage on the worker's track; spans from a thread and a forked child
/// that overlap go to lanes of their own.
#[test]
fn a_commands_spans_nest_inside_its_stage() {
    let helper = harness::repo().join("tests/scripts/helper_user.py");
    let tmp = tempfile::tempdir().unwrap();
    let trace_path = tmp.path().join("t.json");
    let (_t, out, mut c) = harness::coordinator_with_output();
    let py = harness::python(&mut c);
    c.args(["--quiet", "--isolation", "run", "--name", "nest"])
        .arg("--command")
        .arg(format!("'{py}' '{}' nest", helper.display()))
        .args(["--name", "tree"])
        .arg("--command")
        .arg(format!("'{py}' '{}' tree", helper.display()))
        .arg("--export-trace")
        .arg(&trace_path);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    let report = reports::read(&out);
    let trace = json(&trace_path);
    check(&trace, &report, &harness::jobs(&out));
    let events = trace["traceEvents"].as_array().unwrap();
    let spans: Vec<(&str, &str, u64)> = events
        .iter()
        .filter(|e| e["cat"] == "span")
        .map(|e| {
            (e["ph"].as_str().unwrap(), e["name"].as_str().unwrap(), e["tid"].as_u64().unwrap())
        })
        .collect();
    // outer ⊃ inner, inner, in that order, on the worker's own track.
    let nest: Vec<(&str, &str)> =
        spans.iter().filter(|s| s.1 == "outer" || s.1 == "inner").map(|s| (s.0, s.1)).collect();
    assert_eq!(
        nest,
        [
            ("B", "outer"),
            ("B", "inner"),
            ("E", "inner"),
            ("B", "inner"),
            ("E", "inner"),
            ("E", "outer")
        ]
    );
    let worker_tid = u64::from(report.workers[0].rank) + 1;
    assert!(spans.iter().filter(|s| s.1 == "outer").all(|s| s.2 == worker_tid));
    // The three overlapping spans all appear, once each.
    for name in ["from_thread", "from_child", "from_main"] {
        assert_eq!(
            spans.iter().filter(|s| s.1 == name && s.0 == "B").count(),
            1,
            "{name}: {spans:?}"
        );
    }
    // And each job's slices lie inside the job.
    for w in &report.workers {
        for j in &w.jobs {
            let (b, e) = (j.start_s, j.end_s);
            for s in &j.slices {
                let (sb, se) = (s.start_s, s.end_s);
                assert!(b - 0.01 <= sb && se <= e + 0.01, "{s:?} outside {b}..{e}");
            }
        }
    }
}
