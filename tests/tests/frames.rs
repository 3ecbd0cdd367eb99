//! A malformed frame from an admitted worker ends that worker's connection
//! with an error naming it: never a panic, never a peer-sized allocation.

use harness::{bins, json, run};

fn after_hello(mode: &str) -> (tempfile::TempDir, harness::Finished) {
    after_hello_with(mode, &[])
}

fn after_hello_with(mode: &str, extra: &[&str]) -> (tempfile::TempDir, harness::Finished) {
    let (tmp, out, mut c) = harness::coordinator_with_output();
    c.args(["--stage", "sleep:1", "--grace", "1"]).args(extra);
    c.arg("--worker-bin").arg(&bins().fake_worker).env("STAGEBENCH_FAKE", mode);
    let f = run(c);
    assert_eq!(f.code(), Some(1), "{}", f.stderr);
    assert!(!out.join("report.json").exists());
    f.assert_no_worker_left();
    (tmp, f)
}

fn failure(tmp: &tempfile::TempDir) -> serde_json::Value {
    json(&tmp.path().join("run/failure.json"))
}

#[test]
fn oversized_frame_names_the_worker() {
    let (tmp, f) = after_hello("oversized");
    assert!(f.stderr.contains("worker 0 violated the protocol during stage sleep:1: oversized frame: 4294967295 bytes announced"), "{}", f.stderr);
    let fail = failure(&tmp);
    assert_eq!(fail["reason"], "protocol_violation");
    assert_eq!(fail["worker"], 0);
    assert_eq!(fail["stage"], "sleep:1");
}

#[test]
fn garbage_frame_names_the_worker() {
    let (tmp, f) = after_hello("garbage");
    assert!(
        f.stderr.contains("worker 0 violated the protocol during stage sleep:1: undecodable frame"),
        "{}",
        f.stderr
    );
    assert_eq!(failure(&tmp)["reason"], "protocol_violation");
}

#[test]
fn truncated_frame_from_a_live_worker_is_a_violation() {
    let (tmp, f) = after_hello("truncated");
    assert!(f.stderr.contains("truncated frame: expected 100 bytes"), "{}", f.stderr);
    assert_eq!(failure(&tmp)["reason"], "protocol_violation");
}

#[test]
fn an_artifact_whose_hash_is_wrong_fails_the_run() {
    let (tmp, f) = after_hello("misreport");
    assert!(
        f.stderr.contains("artifact artifacts/claimed.bin of stage sleep:1 from worker 0"),
        "{}",
        f.stderr
    );
    assert_eq!(failure(&tmp)["reason"], "artifact_mismatch");
    // One ending: beside failure.json only the declaration and environment
    // stay; the artifact the run wrote into its own directory is removed.
    assert_eq!(
        harness::files_below(&tmp.path().join("run")),
        ["declaration.json", "environment.json", "failure.json"]
    );
}

#[test]
fn over_tcp_the_same_frame_limits_hold() {
    let tcp = ["--listen", "127.0.0.1:0"];
    let (tmp, f) = after_hello_with("oversized", &tcp);
    assert!(f.stderr.contains("tcp connection"), "not over TCP: {}", f.stderr);
    assert!(f.stderr.contains("oversized frame: 4294967295 bytes announced"), "{}", f.stderr);
    assert_eq!(failure(&tmp)["reason"], "protocol_violation");
    let (tmp, f) = after_hello_with("truncated", &tcp);
    assert!(f.stderr.contains("truncated frame: expected 100 bytes"), "{}", f.stderr);
    assert_eq!(failure(&tmp)["reason"], "protocol_violation");
}
