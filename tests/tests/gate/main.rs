//! `coordinator gate` on real git repositories the tests make: a Python
//! program with two spans (`load`, `work`) whose commits change only a
//! comment, make `work` 30% slower, or (swapped) faster; real builds and
//! interleaved runs, what CI reads (comment.md, `GITHUB_OUTPUT`,
//! `GITHUB_STEP_SUMMARY`, the exports), each exit code, and the bad inputs
//! refused before anything is built.

mod action;

use harness::{coordinator, json, run};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// The gates time real processes: one at a time.
pub(crate) fn alone() -> MutexGuard<'static, ()> {
    static ONE: Mutex<()> = Mutex::new(());
    ONE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn git(repo: &Path, args: &[&str]) -> String {
    let out = Command::new("git").arg("-C").arg(repo).args(args).output().expect("git");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A program spinning 20 ms in `load` and 50 ms × F in `work`.
fn program(f: &str, comment: &str) -> String {
    format!(
        "import time\nfrom stagebench import span\nF = {f}{comment}\n\
         def spin(s):\n    t = time.perf_counter()\n    while time.perf_counter() - t < s:\n        pass\n\
         with span(\"load\"):\n    spin(0.02)\nwith span(\"work\"):\n    spin(0.05 * F)\n"
    )
}

/// Three commits: base, a comment-only change, `work` 30% slower. The
/// commits, oldest first.
fn repository(dir: &Path) -> Vec<String> {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q"]);
    git(dir, &["config", "user.email", "test@example.invalid"]);
    git(dir, &["config", "user.name", "test"]);
    let mut commits = Vec::new();
    for (f, comment) in [("1.0", ""), ("1.0", "  # only a comment"), ("1.3", "")] {
        std::fs::write(dir.join("prog.py"), program(f, comment)).unwrap();
        git(dir, &["add", "-A"]);
        git(dir, &["commit", "-q", "-m", &format!("F = {f}{comment}")]);
        commits.push(git(dir, &["rev-parse", "HEAD"]));
    }
    commits
}

/// A gate of `base` against `head` in `repo` into `out`, with `extra`
/// flags, running the program 3 trials a run.
fn gate(repo: &Path, out: &Path, base: &str, head: &str, extra: &[&str]) -> Command {
    gate_of(repo, out, base, head, extra, "3")
}

/// [`gate`] with `trials` a run.
fn gate_of(
    repo: &Path,
    out: &Path,
    base: &str,
    head: &str,
    extra: &[&str],
    trials: &str,
) -> Command {
    let mut c = coordinator();
    let py = harness::python(&mut c);
    c.args(["gate", "--base", base, "--head", head, "--base-exact", "--repo"]).arg(repo);
    c.arg("--output").arg(out).args(extra).arg("--");
    c.args(["--mode", "trials", "--trials", trials, "--warmup", "0", "--command"]);
    c.arg(format!("{py} prog.py"));
    c
}

pub(crate) struct Repo {
    _tmp: tempfile::TempDir,
    pub(crate) repo: PathBuf,
    pub(crate) base: PathBuf,
    pub(crate) commits: Vec<String>,
}

pub(crate) fn made() -> Repo {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    let commits = repository(&repo);
    let base = tmp.path().to_path_buf();
    Repo { _tmp: tmp, repo, base, commits }
}

#[test]
fn a_slower_span_is_regressed_with_its_comment_outputs_and_exports() {
    let _one = alone();
    let r = made();
    let out = r.base.join("gate");
    let (summary, output) = (r.base.join("step-summary.md"), r.base.join("github-output"));
    std::fs::write(&summary, "earlier step\n").unwrap();
    let (bmf, ghb) = (r.base.join("bmf.json"), r.base.join("github-benchmark.json"));
    let before = git(&r.repo, &["status", "--porcelain"]);
    let (bmf_s, ghb_s) = (bmf.display().to_string(), ghb.display().to_string());
    let extra = ["--gate", "span:work_s", "--name", "ci", "--export-bmf", &bmf_s];
    let extra = [&extra[..], &["--export-github-benchmark", &ghb_s]].concat();
    let mut c = gate(&r.repo, &out, "HEAD~2", "HEAD", &extra);
    c.env("GITHUB_STEP_SUMMARY", &summary).env("GITHUB_OUTPUT", &output);
    let f = run(c);
    assert_eq!(f.code(), Some(4), "{}{}", f.stdout, f.stderr);
    assert!(f.stdout.starts_with("Regressed: command span:work_s ×1.3"), "{}", f.stdout);
    let report = json(&out.join("report.json"));
    assert_eq!(report["verdict"], "regressed");
    assert_eq!(report["base"], r.commits[0].as_str());
    assert_eq!(report["head"], r.commits[2].as_str());
    let work = &report["gated"][0];
    assert_eq!(
        (work["stage"].as_str(), work["figure"].as_str()),
        (Some("command"), Some("span:work_s"))
    );
    let ratio = work["ratio"].as_f64().unwrap();
    assert!((1.2..1.4).contains(&ratio), "{work}");
    // Windows alternating; each couple of runs one unit, nine of them at
    // least (the sign test's fewest for 99.5%), each of three pairs.
    assert_eq!(report["windows"][0]["order"], serde_json::json!(["base", "head", "head", "base"]));
    let couples = work["couples"].as_u64().unwrap();
    assert!(couples >= 9 && work["pairs"].as_u64() == Some(3 * couples), "{work}");
    // The page's stacks: the spans head against base, `work` slower and
    // `load` not, drawn as a differential flame graph.
    let spans = &report["stacks"][0];
    assert_eq!((spans["stage"].as_str(), spans["of"].as_str()), (Some("command"), Some("spans")));
    let change = |name: &str| {
        let all = spans["stacks"].as_array().unwrap();
        let d = all.iter().find(|d| d["frames"].as_array().unwrap().last().unwrap() == name);
        d.unwrap_or_else(|| panic!("{name}: {spans}"))["change"].clone()
    };
    assert_eq!((change("work"), change("load")), ("slower".into(), serde_json::Value::Null));
    let page = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(page.contains("Spans of <code>command</code>, head against base"), "{page}");
    assert!(page.contains("<svg"), "no graph drawn");
    // The comment: its marker first, the sentence, the table.
    let comment = std::fs::read_to_string(out.join("comment.md")).unwrap();
    assert!(comment.starts_with("<!-- stagebench gate: ci -->\n"), "{comment}");
    assert!(comment.contains("| `command` | `span:work_s` |"), "{comment}");
    assert!(comment.contains("<details>"), "{comment}");
    // GitHub's files: the summary appended after what was there, the outputs.
    let appended = std::fs::read_to_string(&summary).unwrap();
    assert!(appended.starts_with("earlier step\n<!-- stagebench gate: ci -->"), "{appended}");
    let sha = evidence::sha256_hex(&std::fs::read(out.join("report.json")).unwrap());
    let outputs = std::fs::read_to_string(&output).unwrap();
    assert_eq!(outputs, format!("verdict=regressed\nexit-code=4\nreport-sha256={sha}\n\n"));
    // The exports: the span's benchmark with head's value inside its bounds.
    let b = json(&bmf);
    let m = &b["command/span:work"]["time_s"];
    let (v, lo, hi) = (
        m["value"].as_f64().unwrap(),
        m["lower_value"].as_f64().unwrap(),
        m["upper_value"].as_f64().unwrap(),
    );
    assert!(lo <= hi && (0.05..0.08).contains(&v), "{m}");
    let g = json(&ghb);
    let row = g.as_array().unwrap().iter().find(|r| r["name"] == "command/span:work").unwrap();
    assert_eq!(row["unit"], "s");
    assert!(row["extra"].as_str().unwrap().contains(&format!("report-sha256: {sha}")), "{row}");
    // The directory verifies, and the user's work tree is as it was.
    let mut v = coordinator();
    v.arg("verify").arg(&out);
    let verified = run(v);
    assert_eq!(verified.code(), Some(0), "{}", verified.stderr);
    // render exports the gate again, the same bytes; a run's export it refuses.
    let (again, json_export) = (r.base.join("again.json"), r.base.join("export.json"));
    let mut c = coordinator();
    c.arg("render").arg(&out).arg("--export-github-benchmark").arg(&again);
    let rendered = run(c);
    assert_eq!(rendered.code(), Some(0), "{}", rendered.stderr);
    assert_eq!(std::fs::read(&again).unwrap(), std::fs::read(&ghb).unwrap());
    let mut c = coordinator();
    c.arg("render").arg(&out).arg("--export-json").arg(&json_export);
    let refused = run(c);
    assert_eq!(refused.code(), Some(2), "{}", refused.stderr);
    assert!(refused.stderr.contains("--export-json: a gate exports only"), "{}", refused.stderr);
    assert!(!json_export.exists());
    assert_eq!(git(&r.repo, &["status", "--porcelain"]), before);
    assert_eq!(git(&r.repo, &["worktree", "list"]).lines().count(), 1, "a worktree was left");
}

#[test]
fn a_comment_only_change_never_regresses_and_a_faster_one_is_improved() {
    let _one = alone();
    let r = made();
    // Base and a head that changes a comment: never "regressed".
    let out = r.base.join("null");
    let f = run(gate(
        &r.repo,
        &out,
        "HEAD~2",
        "HEAD~1",
        &["--gate", "span:work_s", "--max-rounds", "12"],
    ));
    assert!(matches!(f.code(), Some(0 | 5)), "{:?}: {}{}", f.code(), f.stdout, f.stderr);
    let report = json(&out.join("report.json"));
    assert_ne!(report["verdict"], "regressed", "{report}");
    let j = &report["gated"][0];
    assert!(j["low"].as_f64().unwrap() <= 1.05 && j["high"].as_f64().unwrap() >= 0.95, "{j}");
    // The slower commit as base, the first as head: faster, improved, exit 0.
    let out = r.base.join("faster");
    let f = run(gate(&r.repo, &out, "HEAD", "HEAD~2", &["--gate", "span:work_s"]));
    assert_eq!(f.code(), Some(0), "{}{}", f.stdout, f.stderr);
    assert_eq!(json(&out.join("report.json"))["verdict"], "improved");
}

#[test]
fn not_sure_exits_5_unless_passed_and_an_unwritable_github_file_is_a_warning() {
    let _one = alone();
    let r = made();
    // One window: 2 couples of runs (of 4 pairs), too few to judge: not sure.
    let strict = ["--max-rounds", "4"];
    let f = run(gate_of(&r.repo, &r.base.join("a"), "HEAD~2", "HEAD~1", &strict, "2"));
    assert_eq!(f.code(), Some(5), "{}{}", f.stdout, f.stderr);
    assert!(f.stdout.starts_with("Not sure: "), "{}", f.stdout);
    assert!(f.stdout.contains("2 couple(s) of runs: too few to judge"), "{}", f.stdout);
    let passed = [&strict[..], &["--not-sure", "pass"]].concat();
    let mut c = gate_of(&r.repo, &r.base.join("b"), "HEAD~2", "HEAD~1", &passed, "2");
    c.env("GITHUB_OUTPUT", r.base.join("no-such-folder").join("out"));
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}{}", f.stdout, f.stderr);
    assert!(f.stderr.contains("warning: the gate is not sure"), "{}", f.stderr);
    assert!(f.stderr.contains("warning: GITHUB_OUTPUT"), "{}", f.stderr);
}

#[test]
fn bad_input_is_refused_in_one_line_before_anything_is_built() {
    let _one = alone();
    let r = made();
    let inside = r.repo.join("gate-out");
    let cases: Vec<(Vec<&str>, &Path, &str)> = vec![
        (vec!["HEAD", "HEAD"], &r.base, "name the same commit"),
        (vec!["HEAD~2", "no-such-branch"], &r.base, "--head: 'no-such-branch' names no commit"),
        (vec!["HEAD~2", "HEAD"], &inside, "is inside the repository"),
    ];
    for (revs, parent, said) in cases {
        let out = if parent == inside.as_path() { inside.clone() } else { parent.join("x") };
        let f = run(gate(&r.repo, &out, revs[0], revs[1], &[]));
        assert_eq!(f.code(), Some(2), "{said}: {}", f.stderr);
        assert!(f.stderr.contains(said), "{said}: {}", f.stderr);
        assert_eq!(f.stderr.lines().count(), 1, "{}", f.stderr);
        assert!(!out.exists(), "{said}: {} was made", out.display());
    }
    // The run's flags may not choose its output or an export.
    let mut c = coordinator();
    c.args(["gate", "--base", "HEAD~1", "--head", "HEAD", "--repo"]).arg(&r.repo);
    c.arg("--output").arg(r.base.join("y")).args([
        "--",
        "--output",
        "elsewhere",
        "--stage",
        "noop",
    ]);
    let f = run(c);
    assert_eq!(f.code(), Some(2), "{}", f.stderr);
    assert!(f.stderr.contains("RUN FLAGS: --output is given"), "{}", f.stderr);
    // A name that would end the comment's marker and put markup in it.
    let f =
        run(gate(&r.repo, &r.base.join("n"), "HEAD~2", "HEAD", &["--name", "x --><img src=x>"]));
    assert_eq!(f.code(), Some(2), "{}", f.stderr);
    assert!(f.stderr.contains("--name 'x --><img src=x>': 1 to 64 of"), "{}", f.stderr);
    assert!(!r.base.join("n").exists());
    let f = run(gate(&r.repo, &r.base.join("z"), "HEAD~2", "HEAD", &["--not-sure", "maybe"]));
    assert_eq!(f.code(), Some(2), "{}", f.stderr);
    assert!(f.stderr.contains("--not-sure maybe: fail or pass"), "{}", f.stderr);
    // A figure the runs cannot record: refused once the first window shows it.
    let f = run(gate(&r.repo, &r.base.join("w"), "HEAD~2", "HEAD", &["--gate", "span:nothing_s"]));
    assert_eq!(f.code(), Some(2), "{}", f.stderr);
    assert!(
        f.stderr.contains("--gate span:nothing_s: the runs record no such figure"),
        "{}",
        f.stderr
    );
}

#[test]
fn sigint_stops_a_gate_and_the_same_command_resumes_it_reading_its_runs_again() {
    let _one = alone();
    let r = made();
    let out = r.base.join("gate");
    // A window holds 2 couples of runs, too few to decide, so
    // the signal always finds the gate in its second window.
    let flags = ["--gate", "span:work_s", "--max-rounds", "8"];
    let c = gate_of(&r.repo, &out, "HEAD~2", "HEAD~1", &flags, "2");
    let (child, rx) = harness::spawn_reading_stderr(c);
    // The event: the first window is done.
    let mut seen = harness::lines_until(&rx, "gate: window 1 done", Duration::from_secs(120));
    let status = harness::interrupt_within(child, Duration::from_secs(60));
    seen.extend(rx.try_iter());
    assert_eq!(status.code(), Some(130), "{}", seen.join("\n"));
    assert_eq!(git(&r.repo, &["worktree", "list"]).lines().count(), 1, "a worktree was left");
    assert!(!out.join("report.json").exists());
    let f = run(gate_of(&r.repo, &out, "HEAD~2", "HEAD~1", &flags, "2"));
    assert!(matches!(f.code(), Some(0 | 5)), "{:?}: {}{}", f.code(), f.stdout, f.stderr);
    assert!(
        f.stderr.contains("gate: window 1 done, 4 round(s) a side, 4 run(s) read again"),
        "{}",
        f.stderr
    );
    let mut v = coordinator();
    v.arg("verify").arg(&out);
    assert_eq!(run(v).code(), Some(0));
}
