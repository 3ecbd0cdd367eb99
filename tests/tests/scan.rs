//! `--param`: a scan of a command over its own knob, one stage per value,
//! values shuffled per round, and a recommendation that can say "no".

use harness::{coordinator_with_output, json, run};

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
    // The dashboard's headline says it too.
    let mut d = harness::coordinator();
    d.arg("dashboard").arg(out.parent().unwrap());
    let f = run(d);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    let index = std::fs::read_to_string(out.parent().unwrap().join("README.md")).unwrap();
    assert!(index.contains("; scan: too few trials to tell"), "{index}");
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

/// The worked example, a plain Python loader (standard library only): each
/// value is its own stage with its own tree, and two workers holding their
/// 24 MiB buffers raise the tree's peak above the main process's alone.
#[test]
fn the_loader_example_scans_its_workers() {
    let (_tmp, out, mut c) = coordinator_with_output();
    let script = harness::repo().join("examples/scan/loader.py");
    c.args(["--mode", "trials", "--trials", "2", "--warmup", "0"])
        .arg("--command")
        .arg(format!("python3 '{}' --items 16 --workers {{workers}}", script.display()))
        .args(["--param", "workers=0,2"]);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    f.assert_no_worker_left();
    let points = json(&out.join("report.json"))["scan"]["points"].clone();
    let peak = |i: usize| points[i]["tree_peak_bytes"].as_f64().unwrap() / (1 << 20) as f64;
    assert!(peak(1) - peak(0) > 30.0, "{} MiB then {} MiB", peak(0), peak(1));
    assert!(f.stdout.contains("workers=2  2"), "{}", f.stdout);
    coordinator::verify::verify(&out).expect("the example's scan verifies");
}

/// examples/torch/train.py scanned over its DataLoader's workers with
/// `--span preset:torch`, for real where `STAGEBENCH_TORCH_PYTHON` names a
/// Python with torch (SKIPPED otherwise): each value gets its input-wait
/// fraction and its loader spans, and the table shows them.
#[test]
fn the_torch_example_scans_its_loader_workers() {
    let py = match std::env::var("STAGEBENCH_TORCH_PYTHON") {
        Ok(p) if !p.is_empty() => p,
        _ => {
            return harness::skip(
                "the_torch_example_scans_its_loader_workers",
                "STAGEBENCH_TORCH_PYTHON names no Python with torch",
            );
        }
    };
    let (_tmp, out, mut c) = coordinator_with_output();
    let script = harness::repo().join("examples/torch/train.py");
    c.args(["--mode", "trials", "--trials", "2", "--warmup", "0", "--span", "preset:torch"])
        .arg("--command")
        .arg(format!("'{py}' '{}' --batches 8 --num-workers {{workers}}", script.display()))
        .args(["--param", "workers=0,2"]);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    f.assert_no_worker_left();
    let points = json(&out.join("report.json"))["scan"]["points"].clone();
    for p in points.as_array().unwrap() {
        let fraction = p["input_wait_fraction"].as_f64().unwrap_or_else(|| panic!("{p}"));
        assert!((0.0..1.0).contains(&fraction), "{p}");
        assert!(p["spans_s"]["step"].as_f64().unwrap() > 0.0, "{p}");
    }
    assert!(f.stdout.contains("input wait") && f.stdout.contains("input-bound"), "{}", f.stdout);
}
