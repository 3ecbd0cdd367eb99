//! `--param`: a scan of a command over its own knob, one stage per value,
//! values shuffled per round, and a recommendation that can say "no".

use harness::reports;
use harness::{coordinator_with_output, json, run};
use report::modes::scan::{Outcome, Scan};

/// The scan of the run in `out`.
fn scan_of(out: &std::path::Path) -> Scan {
    reports::read(out).scan().expect("a scan").clone()
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
        let rec = scan_of(&out).recommendation;
        if rec.outcome == Outcome::NoDifference {
            let s = &rec.sentence;
            assert!(s.starts_with("no value differs significantly from x=a (p = "), "{s}");
            return;
        }
        last = format!("{rec:?}");
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
    let rec = scan_of(&out).recommendation;
    assert_eq!(rec.outcome, Outcome::TooFewTrials, "{rec:?}");
    assert_eq!(rec.trials_needed, Some(4));
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
        assert_refused(run(c), args, says, &out);
    }
}

/// `f` (the run of `args`) was refused in one `error:` line saying `says`,
/// with exit 2 and no run directory at `out`.
fn assert_refused(f: harness::Finished, args: &[&str], says: &str, out: &std::path::Path) {
    assert_eq!(f.code(), Some(2), "{args:?}: {}", f.stderr);
    let errors: Vec<&str> = f.stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{args:?}: {}", f.stderr);
    assert!(errors[0].contains(says), "{args:?}: {}", f.stderr);
    assert!(!out.exists(), "{args:?} made {}", out.display());
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
    let points = scan_of(&out).points;
    let peak = |i: usize| points[i].tree_peak_bytes as f64 / (1 << 20) as f64;
    assert!(peak(1) - peak(0) > 30.0, "{} MiB then {} MiB", peak(0), peak(1));
    assert!(f.stdout.contains("workers=2  2"), "{}", f.stdout);
    report::verify::verify(&out).expect("the example's scan verifies");
}

/// examples/torch/train.py scanned over its DataLoader's workers with
/// `--span preset:torch`, for real where `STAGEBENCH_TORCH_PYTHON` names a
/// Python with torch (SKIPPED otherwise): each value gets its input-wait
/// fraction and its loader spans, and the table shows them.
#[test]
fn the_torch_example_scans_its_loader_workers() {
    let Some(py) = harness::torch_python("the_torch_example_scans_its_loader_workers") else {
        return;
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
    for p in scan_of(&out).points {
        let fraction = p.input_wait_fraction.unwrap_or_else(|| panic!("{p:?}"));
        assert!((0.0..1.0).contains(&fraction), "{p:?}");
        assert!(p.spans_s["step"] > 0.0, "{p:?}");
    }
    assert!(f.stdout.contains("input wait") && f.stdout.contains("input-bound"), "{}", f.stdout);
}

/// A `--prepare` program for the cold-prep scans: each item sleeps `MS`
/// milliseconds and writes `OUT/ID.txt`, holding `STAGEBENCH_PARAM_MS` too
/// with `--mark`, and its pid too with `--pid-at V` when the value is V (the
/// 1-process and 2-process outputs then differ).
const PREPARE_PY: &str = r#"import os, sys, time
import stagebench
ms = float(sys.argv[1])
mark = '--mark' in sys.argv
pid_at = sys.argv[sys.argv.index('--pid-at') + 1] if '--pid-at' in sys.argv else None
def prepare(item, out):
    with stagebench.span('work'):
        time.sleep(ms / 1000)
    text = item * 3
    if mark:
        text += ' ' + os.environ['STAGEBENCH_PARAM_MS']
    if pid_at == sys.argv[1]:
        text += ' ' + str(os.getpid())
    with open(os.path.join(out, item + '.txt'), 'w') as f:
        f.write(text)
stagebench.serve(prepare)
"#;

/// `--mode cold-prep --workers 2 --prepare 'PY prepare.py {ms} ARGS'` over
/// 12 items, with `extra` flags.
fn prepare_scan(
    args: &str,
    extra: &[&str],
) -> (tempfile::TempDir, std::path::PathBuf, harness::Finished) {
    let (tmp, out, mut c) = coordinator_with_output();
    let program = tmp.path().join("prepare.py");
    std::fs::write(&program, PREPARE_PY).unwrap();
    let items = tmp.path().join("items.txt");
    let ids: Vec<String> = (1..=12).map(|i| format!("item{i}")).collect();
    std::fs::write(&items, ids.join("\n") + "\n").unwrap();
    let py = harness::python(&mut c);
    c.args(["--mode", "cold-prep", "--workers", "2", "--items"])
        .arg(&items)
        .arg("--prepare")
        .arg(format!("{py} {} {{ms}} {args}", program.display()))
        .args(extra);
    let f = run(c);
    (tmp, out, f)
}

/// `--param` over a `--prepare` program: each value runs its own serial
/// and 2-process comparison every round, in a shuffled order from the
/// declared seed; its parallel phase's walls are the scan's samples, and
/// 2 ms an item beats 40 ms an item. The value reaches the program both in
/// its command line and in STAGEBENCH_PARAM_MS, and outputs that differ
/// between values are said, not hidden.
#[test]
fn a_prepare_program_is_scanned_value_by_value() {
    let (_tmp, out, f) =
        prepare_scan("--mark", &["--rounds", "4", "--param", "ms=2,40", "--param-seed", "5"]);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    f.assert_no_worker_left();
    let report = reports::read(&out);
    let scan = report.scan().expect("a scan");
    let stages: Vec<&str> = scan.points.iter().map(|p| p.stage.as_str()).collect();
    assert_eq!(stages, ["cold_prepare_parallel", "cold_prepare_parallel[ms=40]"]);
    assert_eq!(scan.points[1].parameters["ms"], "40");
    assert_eq!(scan.points[1].n, 4, "{scan:?}");
    assert_eq!(scan.sample.as_deref(), Some("round"));
    let rec = &scan.recommendation;
    assert_eq!(rec.stage.as_deref(), Some("cold_prepare_parallel"), "{rec:?}");
    assert!(rec.sentence.contains("ms=40 is slower"), "{rec:?}");
    // The 40 ms value's 12 items on 2 processes: at least 6 × 40 ms.
    let wall = |i: usize| scan.points[i].wall_median_s;
    assert!(wall(1) > 0.24 && wall(1) > wall(0) + 0.15, "{} then {}", wall(0), wall(1));
    assert!(scan.points[1].spans_s["work"] > 0.45, "{scan:?}");
    // Every value's phases in every round, each value's outputs sealed.
    for round in ["", "#2", "#3", "#4"] {
        for stage in ["cold_prepare", "cold_prepare_parallel"] {
            reports::stage(&report, &format!("{stage}[ms=40]{round}"));
        }
    }
    let artifacts: Vec<&str> = report.artifacts.iter().map(|a| a.path.as_str()).collect();
    for a in ["private-output[ms=40]/manifest.json", "private-output[ms=40]-parallel/manifest.json"]
    {
        assert!(artifacts.contains(&a), "{artifacts:?}");
    }
    let marked = std::fs::read_to_string(out.join("private-output[ms=40]/item1.txt")).unwrap();
    assert_eq!(marked, "item1item1item1 40");
    // Later rounds' outputs were checked, then removed; round 1's stay.
    assert!(!out.join("private-output[ms=40]-round2").exists());
    let warnings = reports::cold_prep(&report).warnings.join("\n");
    assert!(
        warnings.contains("ms=40's outputs differ from ms=2's (12 file(s) differ"),
        "{warnings}"
    );
    let declared = json(&out.join("declaration.json"))["parameters"]["scan"].clone();
    assert_eq!(declared["order_seed"], 5);
    assert_eq!(declared["params"][0]["values"], serde_json::json!(["2", "40"]));
    assert!(f.stdout.contains("Recommendation: ms=2"), "{}", f.stdout);
    // The console shows round 1's spans; every round's are in summary.md.
    assert!(
        f.stdout.contains("spans: 12 later-round phase(s) (`#2` on) not shown"),
        "{}",
        f.stdout
    );
    assert!(!f.stdout.contains("spans: cold_prepare[ms=40]#2:"), "{}", f.stdout);
    assert!(f.stdout.contains("spans: cold_prepare[ms=40]:"), "{}", f.stdout);
    assert!(out.join("plots/scan.svg").exists());
    report::verify::verify(&out).expect("the scan verifies");
}

/// A value whose 1-process and 2-process outputs differ fails the run, as
/// the plain comparison does, naming the value and leaving no report.
#[test]
fn a_value_whose_outputs_differ_between_its_phases_fails_the_run() {
    let (_tmp, out, f) = prepare_scan("--pid-at 3", &["--rounds", "1", "--param", "ms=1,3"]);
    assert_eq!(f.code(), Some(1), "{}", f.stderr);
    assert!(!out.join("report.json").exists());
    let failure = json(&out.join("failure.json"));
    assert_eq!(failure["reason"], "outputs_differ", "{failure}");
    let message = failure["message"].as_str().unwrap();
    assert!(message.contains("at ms=3, the 1-process and 2-process outputs differ"), "{message}");
    f.assert_no_worker_left();
}

/// Each cold-prep scan that cannot run is refused in one line, exit 2,
/// before anything is created.
#[test]
fn bad_prepare_scans_are_refused_before_anything_runs() {
    let cases: [(&[&str], &str); 4] = [
        (&["--mode", "cold-prep", "--param", "ms=1,2"], "scans your own --prepare program"),
        (
            &["--mode", "cold-prep", "--workers", "1,2", "--prepare", "x {ms}", "--param", "ms=1"],
            "a workers sweep",
        ),
        (
            &["--mode", "cold-prep", "--prepare", "x {n}", "--param", "ms=1"],
            "--prepare has {n} but no --param n",
        ),
        (&["--mode", "cold-prep", "--prepare", "x", "--param", "ms=1,2"], "no --prepare has {ms}"),
    ];
    for (args, says) in cases {
        let (tmp, out, mut c) = coordinator_with_output();
        let items = tmp.path().join("items.txt");
        std::fs::write(&items, "a\nb\n").unwrap();
        c.args(args);
        if args.contains(&"--prepare") {
            c.arg("--items").arg(&items);
        }
        assert_refused(run(c), args, says, &out);
    }
}

/// Two scans over different values compared: the value each ran alone is
/// said, not dropped (issue 63), and the value both ran is a row.
#[test]
fn compare_names_the_scan_values_only_one_run_has() {
    let scan = |values: &str| {
        let (tmp, out, mut c) = coordinator_with_output();
        c.args(["--quiet", "--mode", "trials", "--trials", "2", "--warmup", "0"]).args([
            "--command",
            "true {x}",
            "--param",
            values,
        ]);
        let f = run(c);
        assert_eq!(f.code(), Some(0), "{}", f.stderr);
        (tmp, out)
    };
    let ((_a, a), (_b, b)) = (scan("x=1,2"), scan("x=1,3"));
    let mut c = harness::coordinator();
    c.arg("compare").arg(&a).arg(&b);
    let f = run(c);
    assert!(matches!(f.code(), Some(0 | 4)), "{}\n{}", f.stdout, f.stderr);
    assert!(f.stdout.contains("trial[x=1]"), "{}", f.stdout);
    for said in [
        "only A ran trial[x=2] (not compared: B has no such stage)",
        "only B ran trial[x=3] (not compared: A has no such stage)",
    ] {
        assert!(f.stdout.contains(said), "{said:?} not in {}", f.stdout);
    }
}
