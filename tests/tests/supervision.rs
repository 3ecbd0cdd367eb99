//! Every way a worker can end leaves a clean run directory and no process.

use harness::{Running, coordinator, field, json, run, wait_gone};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::path::Path;
use std::time::Duration;

fn assert_failed(out: &Path, reason: &str, stage: Option<&str>) -> serde_json::Value {
    assert!(!out.join("report.json").exists(), "a failed run left report.json");
    let f = json(&out.join("failure.json"));
    assert_eq!(f["reason"], reason, "{f}");
    match stage {
        Some(s) => assert_eq!(f["stage"], s),
        None => assert!(f["stage"].is_null()),
    }
    f
}

#[test]
fn a_worker_crashing_mid_stage_fails_the_run_cleanly() {
    let (_tmp, out, mut c) = harness::coordinator_with_output();
    c.args(["--stage", "noop", "--stage", "crash", "--stage", "noop"]);
    let f = run(c);
    assert_eq!(f.code(), Some(1), "{}", f.stderr);
    assert!(f.stderr.contains("worker 1 killed by signal 6 (SIGABRT)"), "{}", f.stderr);
    assert!(f.stderr.contains("during stage crash"), "{}", f.stderr);
    let failure = assert_failed(&out, "worker_crashed", Some("crash"));
    assert_eq!(failure["worker"], 1);
    // The third stage never started: two workers were spawned, not three.
    assert_eq!(f.worker_pids().len(), 2, "{}", f.stderr);
    f.assert_no_worker_left();
}

#[test]
fn a_failing_stage_is_named_with_its_error() {
    let (_tmp, out, mut c) = harness::coordinator_with_output();
    c.args(["--isolation", "run", "--stage", "noop", "--stage", "fail"]);
    let f = run(c);
    assert_eq!(f.code(), Some(1), "{}", f.stderr);
    assert!(
        f.stderr
            .contains("stage fail failed on worker 0: the diagnostic stage 'fail' failed as asked"),
        "{}",
        f.stderr
    );
    assert_failed(&out, "stage_failed", Some("fail"));
    f.assert_no_worker_left();
}

/// An allocation the allocator refuses fails its stage in one line naming
/// the size: no abort, no backtrace, no signal.
#[test]
fn an_allocation_the_machine_refuses_fails_the_stage_in_one_line() {
    let (_tmp, out, mut c) = harness::coordinator_with_output();
    c.args(["--quiet", "--stage", "alloc:99999999"]).env("RUST_BACKTRACE", "1");
    let f = run(c);
    assert_eq!(f.code(), Some(1), "{}", f.stderr);
    let errors: Vec<&str> = f.stderr.lines().filter(|l| l.starts_with("error")).collect();
    assert_eq!(errors.len(), 1, "{}", f.stderr);
    assert!(errors[0].contains("alloc:99999999: cannot allocate 99999999 MiB"), "{}", errors[0]);
    for abort in ["SIGABRT", "backtrace", "memory allocation of"] {
        assert!(!f.stderr.contains(abort), "{}", f.stderr);
    }
    assert_failed(&out, "stage_failed", Some("alloc:99999999"));
    f.assert_no_worker_left();
}

#[test]
fn a_hanging_stage_is_ended_by_the_stage_timeout() {
    let (_tmp, out, mut c) = harness::coordinator_with_output();
    c.args(["--stage", "sleep:600000", "--stage-timeout", "0.5", "--grace", "0.5"]);
    let f = run(c);
    assert_eq!(f.code(), Some(1), "{}", f.stderr);
    assert!(
        f.stderr.contains("stage sleep:600000 on worker 0 exceeded the stage timeout of 0.5 s"),
        "{}",
        f.stderr
    );
    assert_failed(&out, "stage_timeout", Some("sleep:600000"));
    f.assert_no_worker_left();
}

/// Starts a long run on several workers, waits until every one is inside its
/// stage, then sends `sig` to the coordinator.
fn interrupt(sig: Signal, expected_code: i32) {
    let (_tmp, out, mut c) = harness::coordinator_with_output();
    c.args(["--workers", "3"]);
    for _ in 0..3 {
        c.args(["--stage", "sleep:600000"]);
    }
    let mut r = Running::spawn(c);
    let socket_line = r.wait_for("socket directory created");
    let socket_dir = socket_line.split("socket_dir=").nth(1).unwrap().trim().to_string();
    assert!(Path::new(&socket_dir).is_dir());
    let mut pids = Vec::new();
    for _ in 0..3 {
        let line = r.wait_for("stage started");
        pids.push(field(&line, "pid").expect("pid in stage event"));
    }
    kill(Pid::from_raw(r.pid()), sig).unwrap();
    let (status, stderr) = r.finish();
    assert_eq!(status.code(), Some(expected_code), "{stderr}");
    assert!(stderr.contains("interrupted by signal"), "{stderr}");
    for pid in pids {
        assert!(!harness::alive(pid), "worker {pid} survived {sig}");
    }
    assert!(!Path::new(&socket_dir).exists(), "socket directory left behind");
    assert_failed(&out, "interrupted", None);
}

#[test]
fn sigint_stops_every_worker_and_writes_no_report() {
    interrupt(Signal::SIGINT, 130);
}

#[test]
fn sigterm_stops_every_worker_and_writes_no_report() {
    interrupt(Signal::SIGTERM, 143);
}

#[test]
fn workers_die_with_a_coordinator_killed_outright() {
    let tmp = tempfile::tempdir().unwrap();
    let mut c = coordinator();
    c.arg("--output").arg(tmp.path().join("run")).args(["--stage", "sleep:600000"]);
    let mut r = Running::spawn(c);
    let pid = field(&r.wait_for("stage started"), "pid").unwrap();
    kill(Pid::from_raw(r.pid()), Signal::SIGKILL).unwrap();
    let _ = r.finish();
    assert!(
        wait_gone(pid, Duration::from_secs(30)),
        "worker {pid} outlived a SIGKILLed coordinator"
    );
}

#[test]
fn a_missing_worker_binary_is_a_usage_error_before_anything_is_written() {
    let (tmp, out, mut c) = harness::coordinator_with_output();
    c.arg("--worker-bin").arg(tmp.path().join("no-such-worker"));
    let f = run(c);
    assert_eq!(f.code(), Some(2), "{}", f.stderr);
    assert!(f.stderr.contains("worker binary not found"), "{}", f.stderr);
    assert!(!out.exists());
}

#[test]
fn an_unknown_stage_is_a_usage_error() {
    let (_tmp, out, mut c) = harness::coordinator_with_output();
    c.args(["--stage", "warp:9"]);
    let f = run(c);
    assert_eq!(f.code(), Some(2), "{}", f.stderr);
    assert!(f.stderr.contains("unknown stage 'warp:9'"), "{}", f.stderr);
    assert!(!out.exists());
}
