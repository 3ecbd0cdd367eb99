//! `--sample`: a command's, a campaign's and a preparation program's
//! Python stacks sampled by a real py-spy, held to programs whose shares
//! are known (tests/scripts/sampled_truth.py, sampled_items.py), and its
//! refusals.

mod commands;
mod elsewhere;
mod permission;

use harness::{coordinator_with_output, repo, run};
use std::collections::BTreeMap;
use std::path::Path;

pub(crate) fn truth() -> String {
    repo().join("tests/scripts/sampled_truth.py").display().to_string()
}

/// Per (lane, function name), the samples with it on the stack (once per
/// stack), pooled over the run's folded artifacts; and the artifacts' paths.
pub(crate) fn pooled(run: &Path) -> (BTreeMap<(String, String), u64>, Vec<String>) {
    let report = harness::json(&run.join("report.json"));
    let mut out = BTreeMap::new();
    let mut paths = Vec::new();
    for a in report["artifacts"].as_array().unwrap() {
        if a["kind"] != "samples" {
            continue;
        }
        let path = a["path"].as_str().unwrap().to_string();
        let text = std::fs::read_to_string(run.join(&path)).unwrap();
        for line in text.lines() {
            let (stack, n) = line.rsplit_once(' ').unwrap();
            let n: u64 = n.parse().unwrap();
            let mut frames = stack.split(';');
            let lane = frames.next().unwrap().to_string();
            let mut names: Vec<&str> = frames.map(|f| f.split(" (").next().unwrap()).collect();
            names.sort();
            names.dedup();
            for name in names.into_iter().chain(["*"]) {
                *out.entry((lane.clone(), name.to_string())).or_default() += n;
            }
        }
        paths.push(path);
    }
    (out, paths)
}

/// One sampled run at a time: shares are of running time, and two runs at
/// once on two cores preempt each other's loops unevenly.
pub(crate) static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

pub(crate) fn sampled_run(
    py: &str,
    args: &str,
    trials: &str,
    more: &[&str],
) -> (tempfile::TempDir, std::path::PathBuf) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (tmp, out, mut c) = coordinator_with_output();
    c.args(["--mode", "trials", "--trials", trials, "--warmup", "0", "--sample", "200"]);
    c.args(["--command", &format!("{py} {} {args}", truth())]);
    c.args(more);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    f.assert_no_worker_left();
    (tmp, out)
}
