//! A command's stacks in trials: the known split, a sleep, the program
//! unchanged, compare, and a hostile file name on the page.

use super::{ONE_AT_A_TIME, pooled, sampled_run, truth};
use harness::{py_spy_python, repo, run};
use std::path::Path;

#[test]
fn sampled_shares_match_a_programs_known_split_and_a_forked_child_has_its_own_lane() {
    let Some(py) = py_spy_python("sampled_shares_match") else { return };
    let exports = tempfile::tempdir().unwrap();
    let folded = exports.path().join("stacks.folded");
    let (_tmp, out) = sampled_run(
        &py,
        "",
        "3",
        &["--span", "__main__:f", "--export-folded", folded.to_str().unwrap()],
    );
    let (n, paths) = pooled(&out);
    assert_eq!(paths.len(), 3, "one folded artifact per trial");
    let at = |lane: &str, f: &str| n.get(&(lane.to_string(), f.to_string())).copied().unwrap_or(0);
    let (f, g) = (at("main", "f"), at("main", "g"));
    assert!(f + g >= 300, "too few samples to judge: f {f}, g {g}");
    let share = f as f64 / (f + g) as f64;
    eprintln!("f's share of f and g: {share:.3} of {} samples", f + g);
    assert!((share - 0.7).abs() <= 0.05, "f's share of f and g is {share:.3}, the truth 0.70");
    // The child's loop is in the child's lane, never in main's.
    assert!(at("forked", "h") >= 100, "{n:?}");
    assert_eq!(at("main", "h"), 0);

    // The record: per lane samples, and h's share with an interval.
    let report = harness::json(&out.join("report.json"));
    let x = &report["stages"]["command"]["samples"];
    assert_eq!(x["rate_hz"], 200);
    assert_eq!(x["trials"], 3);
    assert!(x["sampler"].as_str().unwrap().starts_with("py-spy "), "{x}");
    assert!(x["lanes"]["forked"].as_f64().unwrap() > 0.0);
    // A stage with samples has no word of having none.
    let warned = report["stages"]["command"]["span_warnings"].to_string();
    assert!(!warned.contains("no running Python sample"), "{warned}");
    let h = x["functions"]
        .as_array()
        .unwrap()
        .iter()
        // Named relative to the working directory: `h (scripts/sampled_truth.py)`.
        .find(|r| {
            let name = r["function"].as_str().unwrap_or_default();
            r["lane"] == "forked" && name.starts_with("h (") && name.ends_with("sampled_truth.py)")
        })
        .unwrap_or_else(|| panic!("no h in {x}"));
    let own = &h["own"];
    assert!(own["low"].as_f64() <= own["median"].as_f64());
    assert!(own["median"].as_f64() <= own["high"].as_f64());
    // No path, pid or command line in the evidence.
    let text: String =
        paths.iter().map(|p| std::fs::read_to_string(out.join(p)).unwrap()).collect();
    let here = repo().display().to_string();
    for bad in [here.as_str(), " (/", "process ", "python3 "] {
        assert!(!text.contains(bad), "{bad:?} in the folded stacks");
    }
    // Inside the span `f` (its function, matched on the stacks): f itself.
    let inside = &x["inside"][0];
    assert_eq!(inside["span"], "f", "{x}");
    assert_eq!(inside["top"][0][0], "main");
    assert!(inside["top"][0][1].as_str().unwrap().starts_with("f ("), "{inside}");
    assert!(inside["top"][0][2].as_f64().unwrap() > 0.9, "{inside}");
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(summary.contains("- inside `f` (median "), "{summary}");
    assert!(summary.contains("## Sampled stacks"), "{summary}");
    assert!(summary.contains("| forked | `h ("), "{summary}");

    // The export: the spans' stacks, then the sampled ones in µs per trial
    // (a sample is 1/200 s), the forked child's among them.
    let exported = std::fs::read_to_string(&folded).unwrap();
    let child: u64 = exported
        .lines()
        .filter(|l| l.starts_with("command [sampled];forked;"))
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum();
    // The stacks are the trials' mean (the lanes' figure is a median).
    let per_trial = at("forked", "*") as f64 / 3.0 * 1e6 / 200.0;
    assert!((child as f64 - per_trial).abs() < 0.01 * per_trial, "{child} µs against {per_trial}");
    assert!(exported.lines().any(|l| l.starts_with("command;f ")), "{exported}");

    // One byte of a folded artifact changed: verify refuses the run.
    let victim = out.join(&paths[0]);
    let mut bytes = std::fs::read(&victim).unwrap();
    bytes[0] ^= 0x01;
    std::fs::write(&victim, bytes).unwrap();
    let v = run({
        let mut c = harness::coordinator();
        c.arg("verify").arg(&out);
        c
    });
    assert_eq!(v.code(), Some(3), "{}", v.stderr);
    assert!(v.stderr.contains(&paths[0]), "{}", v.stderr);
}

#[test]
fn a_sleeping_thread_is_not_running_time() {
    let Some(py) = py_spy_python("a_sleeping_thread") else { return };
    let (_tmp, out) = sampled_run(&py, "--sleep", "3", &[]);
    let (n, _) = pooled(&out);
    let at = |f: &str| n.get(&("main".to_string(), f.to_string())).copied().unwrap_or(0);
    let (f, g, rest) = (at("f"), at("g"), at("rest"));
    let share = f as f64 / (f + g) as f64;
    eprintln!("with sleeps, f's share of f and g: {share:.3} of {} samples; rest {rest}", f + g);
    // Half the wall asleep: the running split is unchanged, and the sleep
    // is next to nothing of the running samples.
    assert!((share - 0.7).abs() <= 0.05, "f's share {share:.3} with sleeps, the truth 0.70");
    assert!((rest as f64) < 0.03 * at("*") as f64, "rest {rest} of {} main samples", at("*"));
}

#[test]
fn sampling_changes_neither_a_programs_output_nor_its_exit_status() {
    let Some(py) = py_spy_python("sampling_changes_neither") else { return };
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut outputs = Vec::new();
    for sample in [false, true] {
        for status in ["0", "3"] {
            let tmp = tempfile::tempdir().unwrap();
            let written = tmp.path().join("out.txt");
            let mut c = harness::coordinator();
            c.arg("--output").arg(tmp.path().join("run"));
            c.args(["--mode", "trials", "--trials", "2", "--warmup", "0"]);
            if sample {
                c.arg("--sample");
            }
            c.args([
                "--command",
                &format!("{py} {} --out {} --status {status}", truth(), written.display()),
            ]);
            let f = run(c);
            let error = match status {
                "0" => {
                    assert_eq!(f.code(), Some(0), "{}", f.stderr);
                    String::new()
                }
                _ => {
                    assert_ne!(f.code(), Some(0), "{}", f.stderr);
                    let failure = harness::json(&tmp.path().join("run/failure.json"));
                    failure["message"].as_str().unwrap_or_default().to_string()
                }
            };
            f.assert_no_worker_left();
            outputs.push((status, std::fs::read_to_string(&written).unwrap(), error));
        }
    }
    assert_eq!(outputs[0..2], outputs[2..4], "with and without --sample");
    assert!(outputs[1].2.contains("status 3"), "{:?}", outputs[1]);
}

#[test]
fn compare_names_a_function_whose_share_changed_and_no_function_between_like_runs() {
    let Some(py) = py_spy_python("compare_names_a_function") else { return };
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    // A and A2: f 7 units to g's 3; B: f 2 units (the same command line,
    // so the same definition: the split comes from the environment). No
    // forked child: how a busy machine schedules two processes moves the
    // shares of their lanes between runs, which is no change of the program.
    for (name, units) in [("a", "7"), ("a2", "7"), ("b", "2")] {
        let mut c = harness::coordinator();
        c.arg("--output").arg(tmp.path().join(name)).env("SAMPLED_F_UNITS", units);
        c.env("SAMPLED_CHILD", "0");
        // Eight trials a side: the rank test's smallest p (0.0009) stays
        // below Holm's 0.05 / m for the functions at 1% or more, which
        // the start-up's frames can bring to ten (six trials: 0.005).
        c.args(["--mode", "trials", "--trials", "8", "--warmup", "0", "--sample", "200"]);
        c.args(["--command", &format!("{py} {}", truth())]);
        let f = run(c);
        assert_eq!(f.code(), Some(0), "{}", f.stderr);
    }
    let said = |b: &str| {
        let mut c = harness::coordinator();
        c.arg("compare").arg(tmp.path().join("a")).arg(tmp.path().join(b));
        let f = run(c);
        f.stdout
            .lines()
            .find(|l| l.starts_with("`command` sampled stacks: "))
            .unwrap_or_else(|| panic!("{}", f.stdout))
            .to_string()
    };
    let changed = said("b");
    eprintln!("{changed}");
    // f lost the most; it is named first, by its self share.
    assert!(changed.contains("share of the running samples changed"), "{changed}");
    let first = changed.split(": `").nth(1).unwrap_or_default();
    assert!(first.starts_with("f (") && first.contains("(main) self"), "{changed}");
    let same = said("a2");
    eprintln!("{same}");
    assert!(same.contains("no function's share changed significantly"), "{same}");
}

/// A file may be named anything: its name reaches report.html as text
/// (through maud and inferno, escaped), and a `;` in it does not split a
/// frame.
#[test]
fn a_hostile_file_name_is_text_on_the_page() {
    let Some(py) = py_spy_python("a_hostile_file_name") else { return };
    if !harness::chromium("a_hostile_file_name_is_text_on_the_page") {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let name = "<img src=x onerror=document.title=1>;f.py";
    std::fs::write(
        tmp.path().join(name),
        "import time\ndef hot():\n    t = time.perf_counter()\n    while time.perf_counter() - t < 0.4:\n        pass\nhot()\n",
    )
    .unwrap();
    let out = tmp.path().join("run");
    let mut c = harness::coordinator();
    c.arg("--output").arg(&out);
    c.args(["--mode", "trials", "--trials", "2", "--warmup", "0", "--sample", "200"]);
    c.args(["--command", &format!("{py} '{}'", tmp.path().join(name).display())]);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    let report = harness::json(&out.join("report.json"));
    let functions = report["stages"]["command"]["samples"]["functions"].to_string();
    let here = tmp.path().display().to_string();
    assert!(!report.to_string().contains(&here), "the program's path is in report.json");
    assert!(functions.contains("hot (<img src=x onerror=document.title=1>_f.py)"), "{functions}");
    let counts = "JSON.stringify([document.scripts.length, document.images.length, document.querySelectorAll('[onerror],[onload]').length])";
    let text = "document.querySelector('#sampled').textContent.includes('hot (<img src=x onerror=document.title=1>_f.py)')";
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-html");
    std::fs::create_dir_all(&shot).unwrap();
    let seen = harness::check_page(
        &out.join("report.html"),
        &shot.join("sampled-hostile.png"),
        &[counts, text],
    );
    assert_eq!(seen["title"], "stagebench trials run", "{seen}");
    assert_eq!(seen["errors"], serde_json::json!([]), "{seen}");
    assert_eq!(seen["requests"], serde_json::json!([]), "{seen}");
    assert_eq!(seen["values"][0], "[1,0,0]", "one script, no image, no handler: {seen}");
    assert_eq!(seen["values"][1], true, "the name is shown as text: {seen}");
}

/// A Python program that ends before py-spy finds it (10 ms, `-S -c pass`)
/// and one too brief for `--sample 1` are measured as asked: the run exits
/// 0 with its figures, and the stage says it has no samples and why, in its
/// warnings, which every view shows. A run once failed for the first, and
/// wrote `samples: null` with no word for the second. At 1 Hz one of the
/// trials may catch a sample: a median of none is said as "most of".
#[test]
fn a_program_too_brief_to_sample_keeps_its_figures_and_says_why_it_has_no_samples() {
    let Some(py) = py_spy_python("a_program_too_brief_to_sample") else { return };
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    for (command, rate) in [
        (format!("{py} -S -c pass"), "100"),
        (format!("{py} -c \"import time; time.sleep(0.05)\""), "1"),
    ] {
        let (_tmp, out, mut c) = harness::coordinator_with_output();
        c.args(["--mode", "trials", "--trials", "3", "--warmup", "0", "--sample", rate]);
        c.args(["--command", &command]);
        let f = run(c);
        assert_eq!(f.code(), Some(0), "{command}: {}", f.stderr);
        let r = harness::reports::read(&out);
        let st = harness::reports::stage(&r, "command");
        // At 1 Hz a trial may still catch one sample; the median is none.
        let running = st.samples.as_ref().map_or(0.0, |s| s.samples);
        assert_eq!(running, 0.0, "{command}: {:?}", st.samples);
        let why = st.span_warnings.iter().find(|w| w.contains("no running Python sample"));
        let why = why.unwrap_or_else(|| panic!("{command}: no word: {:?}", st.span_warnings));
        assert!(why.contains(&format!("3 trial(s) at {rate} Hz")), "{why}");
        if st.samples.is_some() {
            assert!(why.contains("in most of the 3 trial(s)"), "{why}");
            assert!(why.contains("(a median of 0 a trial)"), "{why}");
        }
        assert!(f.stdout.contains("no running Python sample"), "the console: {}", f.stdout);
        let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
        assert!(summary.contains("no running Python sample"), "{summary}");
        assert!(st.wall_s > 0.0);
    }
}
