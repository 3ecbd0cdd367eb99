//! `--param`: a scan of a command over its own knob, one stage per value,
//! values shuffled per round, and a recommendation that can say "no".

use harness::{coordinator_with_output, json, run};
use std::path::Path;

/// n processes share `max(0.4/n, 0.08)` s of CPU each, on at most two
/// cores (pinned, so the answer does not depend on the machine's size),
/// each holding 40 MiB until its work is done.
const SPREAD: &str = r#"
import os, sys, time
n = int(sys.argv[1])
cpus = sorted(os.sched_getaffinity(0))[:2]
per = max(0.4 / n, 0.08)
kids = []
for _ in range(n):
    pid = os.fork()
    if pid == 0:
        os.sched_setaffinity(0, cpus)
        block = bytearray(40 << 20)
        for i in range(0, len(block), 4096):
            block[i] = 1
        end = time.process_time() + per
        while time.process_time() < end:
            pass
        os._exit(0)
    kids.append(pid)
for pid in kids:
    assert os.waitpid(pid, 0)[1] == 0
assert os.environ["STAGEBENCH_PARAM_N"] == sys.argv[1]
"#;

fn script(dir: &Path, body: &str) -> String {
    let path = dir.join("spread.py");
    std::fs::write(&path, body).unwrap();
    path.display().to_string()
}

fn figure(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("{v}"))
}

/// On two cores, 2 processes halve the wall of 1; 4 are no faster and 8
/// are slower, and each process adds its 40 MiB to the tree's peak. The
/// scan recommends 2, every round runs the four values in a shuffled order
/// drawn from the declared seed, and the run verifies.
#[test]
fn a_scan_over_processes_recommends_two_and_counts_each_process_memory() {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        return harness::skip("a_scan_over_processes", "it needs two cores");
    }
    let (tmp, out, mut c) = coordinator_with_output();
    let py = script(tmp.path(), SPREAD);
    c.args(["--mode", "trials", "--trials", "6", "--warmup", "1", "--param-seed", "7"]).args([
        "--command",
        &format!("python3 {py} {{n}}"),
        "--param",
        "n=1,2,4,8",
    ]);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    f.assert_no_worker_left();
    let r = json(&out.join("report.json"));
    let scan = &r["scan"];
    let rec = &scan["recommendation"];
    assert_eq!(rec["stage"], "trial[n=2]", "{rec}");
    assert_eq!(rec["outcome"], "recommended");
    let sentence = rec["sentence"].as_str().unwrap();
    assert!(sentence.starts_with("n=2: ") && sentence.contains("faster than n=1"), "{sentence}");
    assert!(f.stdout.contains(&format!("recommendation: {sentence}")), "{}", f.stdout);

    // The tree's peak grows by about 40 MiB a process.
    let points = scan["points"].as_array().unwrap();
    let peak = |i: usize| figure(&points[i]["tree_peak_bytes"]) / (1 << 20) as f64;
    let per_process = (peak(3) - peak(0)) / 7.0;
    assert!((34.0..48.0).contains(&per_process), "{per_process} MiB a process");
    let keys: Vec<&str> = points.iter().map(|p| p["stage"].as_str().unwrap()).collect();
    assert_eq!(keys, ["trial[n=1]", "trial[n=2]", "trial[n=4]", "trial[n=8]"]);
    assert_eq!(points[2]["parameters"]["n"], "4");

    // The seed and the values are declared; each round is a permutation of
    // the four, and not every round has the same order.
    let d = json(&out.join("declaration.json"));
    assert_eq!(d["parameters"]["scan"]["order_seed"], 7);
    assert_eq!(
        d["parameters"]["scan"]["params"][0]["values"],
        serde_json::json!(["1", "2", "4", "8"])
    );
    let started: Vec<&str> = f
        .stderr
        .lines()
        .filter(|l| l.contains("stage started"))
        .filter_map(|l| l.split("key=").nth(1)?.split_whitespace().next())
        .collect();
    assert_eq!(started.len(), 28, "{started:?}");
    let rounds: Vec<Vec<&str>> = started.chunks(4).map(|c| c.to_vec()).collect();
    for round in &rounds {
        let mut sorted = round.clone();
        sorted.sort();
        assert_eq!(sorted, keys, "{rounds:?}");
    }
    assert!(rounds.windows(2).any(|w| w[0] != w[1]), "{rounds:?}");
    coordinator::verify::verify(&out).expect("a scan verifies");
    assert!(out.join("plots/scan.svg").is_file());
}

/// A scan whose command ignores its value. At α = 0.05 one run in twenty
/// could call a difference by chance, so a second run is allowed; a rule
/// that always recommends one value fails both.
#[test]
fn a_command_that_ignores_its_parameter_differs_in_no_value() {
    let mut last = String::new();
    for _ in 0..2 {
        let (_tmp, out, mut c) = coordinator_with_output();
        c.args(["--mode", "trials", "--trials", "8", "--warmup", "1"]).args([
            "--command",
            "sleep 0.05",
            "--param",
            "x=a,b",
            "--param-env-only",
        ]);
        let f = run(c);
        assert_eq!(f.code(), Some(0), "{}", f.stderr);
        let rec = json(&out.join("report.json"))["scan"]["recommendation"].clone();
        if rec["outcome"] == "no_difference" {
            let s = rec["sentence"].as_str().unwrap();
            assert!(s.starts_with("no value differs significantly from x=a (p = "), "{s}");
            return;
        }
        last = rec.to_string();
    }
    panic!("two runs of a command that ignores its value both found a difference: {last}");
}

/// Two trials a value cannot tell values apart, however far apart: the scan
/// says so and how many it needs.
#[test]
fn two_trials_are_too_few_to_tell() {
    let (_tmp, out, mut c) = coordinator_with_output();
    c.args(["--mode", "trials", "--trials", "2", "--warmup", "0"]).args([
        "--command",
        "sleep 0.0{ms}",
        "--param",
        "ms=1,5",
    ]);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    let rec = &json(&out.join("report.json"))["scan"]["recommendation"];
    assert_eq!(rec["outcome"], "too_few_trials", "{rec}");
    assert_eq!(rec["trials_needed"], 4);
    assert!(f.stdout.contains("too few trials to tell: 2 counted per value"), "{}", f.stdout);
}

/// Exports carry one row per value with hyperfine's `parameters`, and the
/// CSV a `parameter_NAME` column.
#[test]
fn exports_carry_each_values_parameters() {
    let (tmp, out, mut c) = coordinator_with_output();
    let (j, csv) = (tmp.path().join("scan.json"), tmp.path().join("scan.csv"));
    c.args(["--mode", "trials", "--trials", "2", "--warmup", "0"])
        .args(["--command", "true {b}", "--param", "b=1..3"])
        .arg("--export-json")
        .arg(&j)
        .arg("--export-csv")
        .arg(&csv);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    assert!(out.join("report.json").is_file());
    let e = json(&j);
    let got: Vec<(String, String)> = e["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (r["stage"].as_str().unwrap().into(), r["parameters"]["b"].as_str().unwrap().into())
        })
        .collect();
    let want: Vec<(String, String)> =
        (1..=3).map(|b| (format!("trial[b={b}]"), b.to_string())).collect();
    assert_eq!(got, want);
    assert_eq!(e["recommendation"]["outcome"], "too_few_trials");
    let text = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].ends_with(",parameter_b"), "{}", lines[0]);
    assert!(lines[2].starts_with("trial[b=2],") && lines[2].ends_with(",2"), "{}", lines[2]);
}

/// Each bad scan is refused in one line with exit 2, before anything runs.
#[test]
fn bad_scans_are_refused_before_anything_runs() {
    let cases: [(&[&str], &str); 9] = [
        (&["--command", "run {w}", "--param", "w="], "no value"),
        (&["--command", "run {w}", "--param", "w=1,1"], "the value 1 is given twice"),
        (&["--command", "run {w}", "--param", "w=1..4:0"], "the step must be above 0"),
        (&["--command", "run {v}", "--param", "w=1"], "has {v} but no --param v"),
        (&["--command", "run", "--param", "w=1,2"], "no --command has {w}"),
        (&["--command", "{a}{b}", "--param", "a=1..9", "--param", "b=1..8"], "72 points"),
        (&["--stage", "noop", "--command", "x {w}", "--param", "w=1"], "one --command"),
        (&["--command", "x {w}", "--param", "w=1", "--param", "w=2"], "given twice"),
        (&["--command", "x {w}", "--param", "w=a/b"], "must be 1-64"),
    ];
    for (args, says) in cases {
        let (_tmp, out, mut c) = coordinator_with_output();
        c.args(["--mode", "trials"]).args(args);
        let f = run(c);
        assert_eq!(f.code(), Some(2), "{args:?}: {}", f.stderr);
        let errors: Vec<&str> = f.stderr.lines().filter(|l| l.starts_with("error:")).collect();
        assert_eq!(errors.len(), 1, "{args:?}: {}", f.stderr);
        assert!(errors[0].contains(says), "{args:?}: {}", f.stderr);
        assert!(!out.exists(), "{args:?} made {}", out.display());
    }
}
