//! `--export-trace`: a Chrome Trace Event file derived from report.json,
//! one track per worker process, every B closed by its E, slices nested.

use harness::data::tiny;
use harness::{json, run};
use std::collections::{BTreeMap, BTreeSet};

/// Checks the trace's structure against its run's report, and returns it.
fn check(trace: &serde_json::Value, report: &serde_json::Value) {
    let events = trace["traceEvents"].as_array().expect("traceEvents");
    let mut stacks: BTreeMap<u64, Vec<(String, f64)>> = BTreeMap::new();
    let mut last_ts: BTreeMap<u64, f64> = BTreeMap::new();
    let mut named: BTreeSet<u64> = BTreeSet::new();
    let mut stage_slices = 0;
    for e in events {
        let tid = e["tid"].as_u64().unwrap();
        assert_eq!(e["pid"], 1, "{e}");
        match e["ph"].as_str().unwrap() {
            "M" => {
                if e["name"] == "thread_name" {
                    named.insert(tid);
                }
            }
            ph @ ("B" | "E") => {
                let ts = e["ts"].as_f64().unwrap();
                let name = e["name"].as_str().unwrap().to_string();
                let before = last_ts.insert(tid, ts).unwrap_or(0.0);
                assert!(ts >= before, "track {tid} goes back in time at {e}");
                let stack = stacks.entry(tid).or_default();
                if ph == "B" {
                    if e["cat"] == "stage" {
                        stage_slices += 1;
                    }
                    stack.push((name, ts));
                } else {
                    let (open, begun) =
                        stack.pop().unwrap_or_else(|| panic!("an E with no B: {e}"));
                    assert_eq!(open, name, "E closes another slice than the innermost: {e}");
                    assert!(ts >= begun, "{e} ends before it began");
                }
            }
            other => panic!("unexpected phase {other}: {e}"),
        }
    }
    for (tid, stack) in &stacks {
        assert!(stack.is_empty(), "track {tid} leaves {stack:?} open");
    }
    let workers = report["workers"].as_array().unwrap();
    // One track per worker process, plus the phases' track.
    assert_eq!(stacks.len(), workers.len() + 1, "tracks");
    assert_eq!(named.len(), workers.len() + 1, "named tracks");
    let jobs: usize = workers.iter().map(|w| w["jobs"].as_array().map_or(0, Vec::len)).sum();
    assert_eq!(stage_slices, jobs, "a slice per job");
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
    let report = json(&out.join("report.json"));
    let trace = json(&trace_path);
    check(&trace, &report);
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
    let report = json(&out.join("report.json"));
    check(&json(&trace_path), &report);
    assert_eq!(report["workers"].as_array().unwrap().len(), 4, "a process per trial");
}
