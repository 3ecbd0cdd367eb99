//! `coordinator bisect` on real git repositories the tests make: a shell
//! program of 17 commits, 100 ms of work per call with jitter, commit 11
//! adding 40 ms; real probes (each a trials run in its own worktree), a
//! build that fails, SIGINT and a resume, and the bad inputs refused before
//! any probe.

use harness::reports::bisection;
use harness::{coordinator, run};
use report::rundir::bisect::{Probe, ProbeVerdict};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// The bisections time real processes: one at a time, as compare's tests.
fn alone() -> MutexGuard<'static, ()> {
    static ONE: Mutex<()> = Mutex::new(());
    ONE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn git(repo: &Path, args: &[&str]) -> String {
    let out = Command::new("git").arg("-C").arg(repo).args(args).output().expect("git");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// 17 commits of `work.sh` (a sleep of 100 ms plus up to 10 ms of jitter;
/// from commit `slow` on, 40 ms more); commit `broken`, if any, makes the
/// build (`test ! -e BROKEN`) fail. The commits, oldest first.
fn repository(dir: &Path, slow: Option<usize>, broken: Option<usize>) -> Vec<String> {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q"]);
    git(dir, &["config", "user.email", "test@example.invalid"]);
    git(dir, &["config", "user.name", "test"]);
    let mut commits = Vec::new();
    for i in 1..=17 {
        let extra = if slow.is_some_and(|s| i >= s) { "0.04" } else { "0" };
        let script = format!(
            "# commit {i}\nsleep $(awk -v s=$$ 'BEGIN {{ srand(s); printf \"%.4f\", 0.1 + {extra} + rand() * 0.01 }}')\n"
        );
        std::fs::write(dir.join("work.sh"), script).unwrap();
        let flag = dir.join("BROKEN");
        match broken == Some(i) {
            true => std::fs::write(&flag, "this commit does not build\n").unwrap(),
            false => {
                let _ = std::fs::remove_file(&flag);
            }
        }
        git(dir, &["add", "-A"]);
        git(dir, &["commit", "-q", "-m", &format!("commit {i}")]);
        commits.push(git(dir, &["rev-parse", "HEAD"]));
    }
    commits
}

const RUN: [&str; 9] =
    ["--mode", "trials", "--trials", "6", "--warmup", "1", "--command", "sh work.sh", "--name"];

fn bisect(repo: &Path, out: &Path, extra: &[&str]) -> Command {
    let mut c = coordinator();
    c.args(["bisect", "--good", "HEAD~16", "--bad", "HEAD", "--repo"]).arg(repo);
    c.arg("--output").arg(out).args(extra).arg("--").args(RUN).arg("work");
    c
}

/// Every file of the work tree (but .git/worktrees, which a bisection may
/// add and must remove) with its bytes, and HEAD and the index.
fn work_tree(repo: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    for f in harness::files_below(repo) {
        if !f.starts_with(".git/") || f == ".git/index" || f == ".git/HEAD" {
            files.push((f.clone(), std::fs::read(repo.join(&f)).unwrap()));
        }
    }
    files
}

fn short(commit: &str) -> &str {
    &commit[..12]
}

/// The probes' lines the bisection printed (`probe N: COMMIT ...: VERDICT`).
fn probe_lines(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.starts_with("probe ") && l.contains(" (position ")).collect()
}

#[test]
fn bisect_names_the_commit_that_slowed_a_stage_and_leaves_the_work_tree_alone() {
    let _alone = alone();
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    let commits = repository(&repo, Some(11), None);
    // An uncommitted change is no error; the probes do not see it.
    std::fs::write(repo.join("work.sh"), "exit 1\n").unwrap();
    std::fs::write(repo.join("notes.txt"), "mine\n").unwrap();
    let before = work_tree(&repo);
    let out = tmp.path().join("bisect");
    let f = run(bisect(&repo, &out, &[]));
    assert_eq!(f.code(), Some(0), "{}\n{}", f.stdout, f.stderr);
    let first = f.stdout.lines().next().unwrap_or_default();
    assert!(
        first.starts_with(&format!("first bad commit {}: work wall_s", short(&commits[10]))),
        "{}\n{}",
        f.stdout,
        f.stderr
    );
    assert!(first.contains("(stage work changed most)"), "{first}");
    let probes = probe_lines(&f.stderr);
    assert!(probes.len() <= 7, "{} probes:\n{}", probes.len(), f.stderr);
    assert_eq!(work_tree(&repo), before, "the work tree, index or HEAD changed");
    assert_eq!(git(&repo, &["worktree", "list"]).lines().count(), 1, "a worktree was left");
    let report = bisection(&out);
    assert_eq!(report.first_bad.as_deref(), Some(commits[10].as_str()));
    assert!(report.work_tree_dirty);
    assert_eq!(report.probes.len(), probes.len());
    let verdicts: Vec<ProbeVerdict> = report.probes.iter().map(|p| p.verdict).collect();
    assert_eq!(&verdicts[..2], [ProbeVerdict::Good, ProbeVerdict::Bad], "the endpoints first");
    // Every probe between them was measured beside both endpoints, in
    // pairs of windows of alternating order, their medians recorded (the
    // drift over the bisection), and judged against them only.
    for p in &report.probes[2..] {
        assert!(p.windows.len() >= 2 && p.windows.len() % 2 == 0, "{p:?}");
        assert_eq!(p.windows[0].order, ["good", "probe", "bad"]);
        assert_eq!(p.windows[1].order, ["bad", "probe", "good"]);
        for w in &p.windows {
            assert!(w.median_bad > w.median_good + 0.02, "the endpoints beside it differ: {w:?}");
            assert!(out.join(&w.good_run).join("report.json").is_file(), "{w:?}");
        }
    }
    // Commit 11's boundary (10 good, 11 bad, neither an endpoint) held
    // side by side before it was named.
    let c = report.confirmation.as_ref().expect("the boundary side by side");
    assert!(c.held && c.lower == commits[9] && c.upper == commits[10], "{c:?}");
    assert!(c.median_upper > c.median_lower + 0.02, "{c:?}");
    // Every probe is a complete run directory, and the whole verifies.
    let mut v = coordinator();
    v.arg("verify").arg(&out);
    let checked = run(v);
    assert_eq!(checked.code(), Some(0), "{}", checked.stderr);
    assert!(checked.stdout.contains("bisect run"), "{}", checked.stdout);
    // Its summary and plot, redrawn byte for byte by render.
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(summary.contains(first), "{summary}");
    let plot = std::fs::read(out.join("plots").join("bisect.svg")).unwrap();
    let mut r = coordinator();
    r.arg("render").arg(&out);
    assert_eq!(run(r).code(), Some(0));
    assert_eq!(std::fs::read(out.join("plots").join("bisect.svg")).unwrap(), plot);
    // Its page: the answer, and the probes in commit order, good below
    // commit 11 and bad from it, offline in a real browser.
    if harness::chromium(
        "bisect_names_the_commit_that_slowed_a_stage_and_leaves_the_work_tree_alone",
    ) {
        let rows = "JSON.stringify([...document.querySelectorAll('#probes tbody tr')].map(r => [r.cells[0].textContent, r.dataset.commit, r.dataset.verdict]))";
        let headline = "document.querySelector('.headline').textContent";
        let shot = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-html");
        std::fs::create_dir_all(&shot).unwrap();
        let seen = harness::check_page(
            &out.join("report.html"),
            &shot.join("bisect.png"),
            &[rows, headline],
        );
        assert_eq!(seen["requests"], serde_json::json!([]), "{seen}");
        assert_eq!(seen["errors"], serde_json::json!([]), "{seen}");
        assert_eq!(seen["values"][1].as_str(), Some(report.answer.as_str()), "{seen}");
        let rows: Vec<[String; 3]> =
            serde_json::from_str(seen["values"][0].as_str().unwrap()).unwrap();
        let mut want: Vec<&Probe> = report.probes.iter().collect();
        want.sort_by_key(|p| p.position);
        assert_eq!(rows.len(), want.len(), "{seen}");
        for (row, p) in rows.iter().zip(want) {
            let verdict = if p.position < 10 { "good" } else { "bad" };
            assert_eq!(row, &[p.position.to_string(), short(&p.commit).into(), verdict.into()]);
        }
    }
    // A changed probe is found.
    let probe = out.join("probes").join(short(&commits[0])).join("summary.md");
    std::fs::write(&probe, "edited\n").unwrap();
    let mut v = coordinator();
    v.arg("verify").arg(&out);
    let checked = run(v);
    assert_eq!(checked.code(), Some(3), "{}", checked.stdout);
    assert!(checked.stderr.contains("probe probes/"), "{}", checked.stderr);
    // A finished bisection is not run again into the same directory.
    let again = run(bisect(&repo, &out, &[]));
    assert_eq!(again.code(), Some(2), "{}", again.stderr);
    assert!(again.stderr.contains("holds a finished bisection"), "{}", again.stderr);
}

#[test]
fn a_commit_that_does_not_build_is_skipped_and_the_answer_holds() {
    let _alone = alone();
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    let commits = repository(&repo, Some(11), Some(9));
    let out = tmp.path().join("bisect");
    let f = run(bisect(&repo, &out, &["--build", "test ! -e BROKEN"]));
    assert_eq!(f.code(), Some(0), "{}\n{}", f.stdout, f.stderr);
    assert!(
        f.stdout.starts_with(&format!("first bad commit {}:", short(&commits[10]))),
        "{}\n{}",
        f.stdout,
        f.stderr
    );
    let report = bisection(&out);
    let skipped: Vec<_> =
        report.probes.iter().filter(|p| p.verdict == ProbeVerdict::Skipped).collect();
    assert_eq!(skipped.len(), 1, "{}", f.stderr);
    assert_eq!(skipped[0].commit, commits[8]);
    let log = out.join("builds").join(format!("{}.log", short(&commits[8])));
    assert!(log.is_file(), "the failed build's log is kept");
    let mut v = coordinator();
    v.arg("verify").arg(&out);
    assert_eq!(run(v).code(), Some(0));
}

/// A build that hangs is killed at --build-timeout (its whole process
/// group: nothing is left running) and its commit skipped, its log kept;
/// the answer holds.
#[test]
fn a_build_that_hangs_is_killed_at_its_timeout_and_the_commit_skipped() {
    let _alone = alone();
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    let commits = repository(&repo, Some(11), Some(9));
    let out = tmp.path().join("bisect");
    let hang = ["--build", "if test -e BROKEN; then sleep 600; fi", "--build-timeout", "1"];
    let f = run(bisect(&repo, &out, &hang));
    assert_eq!(f.code(), Some(0), "{}\n{}", f.stdout, f.stderr);
    assert!(f.stdout.contains(short(&commits[10])), "{}\n{}", f.stdout, f.stderr);
    let report = bisection(&out);
    let skipped: Vec<_> =
        report.probes.iter().filter(|p| p.verdict == ProbeVerdict::Skipped).collect();
    assert_eq!(skipped.len(), 1, "{}", f.stderr);
    assert_eq!(skipped[0].commit, commits[8]);
    let why = skipped[0].reason.as_deref().unwrap_or_default();
    assert!(why.contains("still running after --build-timeout 1.0 s and was killed"), "{why}");
    assert!(out.join("builds").join(format!("{}.log", short(&commits[8]))).is_file());
    assert!(processes_in(&out).is_empty(), "left running: {:?}", processes_in(&out));
    let mut v = coordinator();
    v.arg("verify").arg(&out);
    assert_eq!(run(v).code(), Some(0));
}

#[test]
fn endpoints_that_do_not_differ_leave_nothing_to_bisect() {
    let _alone = alone();
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    repository(&repo, None, None);
    let out = tmp.path().join("bisect");
    // "No regression" needs the interval of the ratio under the threshold:
    // 10 ms of jitter on 100 ms gives intervals of about ±4% on a busy
    // machine, so 10% (at 5% it may honestly say "not sure", a unit test's).
    let f = run(bisect(&repo, &out, &["--threshold", "10"]));
    assert_eq!(f.code(), Some(0), "{}\n{}", f.stdout, f.stderr);
    assert!(
        f.stdout.starts_with("no regression between the endpoints: nothing to bisect"),
        "{}\n{}",
        f.stdout,
        f.stderr
    );
    let report = bisection(&out);
    assert!(report.first_bad.is_none());
    let probes = &report.probes;
    assert!(probes.iter().all(|p| p.position == 0 || p.position == 16));
    // The dashboard lists the probes' runs, not the bisection as a run.
    let mut d = coordinator();
    d.arg("dashboard").arg(tmp.path());
    assert_eq!(run(d).code(), Some(0));
    let index = std::fs::read_to_string(tmp.path().join("README.md")).unwrap();
    let rows: Vec<&str> = index.lines().filter(|l| l.starts_with("| [")).collect();
    let runs: usize = probes.iter().map(|p| p.runs.len()).sum();
    assert_eq!(rows.len(), runs, "{index}");
    assert!(rows.iter().all(|r| r.starts_with("| [bisect/probes/")), "{index}");
}

/// The processes still running whose command line or working directory
/// names `dir`.
fn processes_in(dir: &Path) -> Vec<String> {
    let needle = dir.to_string_lossy().into_owned();
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let pid = e.file_name().to_string_lossy().into_owned();
        if !pid.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let cwd = std::fs::read_link(e.path().join("cwd")).unwrap_or_default();
        if cmdline.contains(&needle) || cwd.starts_with(dir) {
            found.push(format!("{pid}: {cmdline}"));
        }
    }
    found
}

#[test]
fn sigint_stops_a_bisection_and_a_rerun_resumes_it_without_repeating_a_probe() {
    let _alone = alone();
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    let commits = repository(&repo, Some(11), None);
    let out: PathBuf = tmp.path().join("bisect");
    let (child, rx) = harness::spawn_reading_stderr(bisect(&repo, &out, &[]));
    // The event: the second probe (the bad endpoint) is done.
    let mut seen = harness::lines_until(&rx, "probe 2: ", Duration::from_secs(120));
    let status = harness::interrupt_within(child, Duration::from_secs(60));
    seen.extend(rx.try_iter());
    assert_eq!(status.code(), Some(130), "{}", seen.join("\n"));
    assert!(processes_in(&out).is_empty(), "left running: {:?}", processes_in(&out));
    assert_eq!(git(&repo, &["worktree", "list"]).lines().count(), 1, "a worktree was left");
    assert!(!out.join("report.json").exists());
    let done = seen.iter().filter(|l| l.starts_with("probe ") && l.contains(" (position ")).count();
    assert!(done >= 2, "{}", seen.join("\n"));
    // Rerun: what verified is read, not run again; the answer is the same.
    let f = run(bisect(&repo, &out, &[]));
    assert_eq!(f.code(), Some(0), "{}\n{}", f.stdout, f.stderr);
    assert!(
        f.stdout.starts_with(&format!("first bad commit {}:", short(&commits[10]))),
        "{}",
        f.stdout
    );
    let lines = probe_lines(&f.stderr);
    let reused = lines.iter().filter(|l| l.ends_with("(reused: its runs verify)")).count();
    assert_eq!(reused, done, "{}", f.stderr);
    let flagged = bisection(&out).probes.iter().filter(|p| p.reused).count();
    assert_eq!(flagged, done);
}

/// A bad input: the flags it changes, the run flags, and what it says.
type Case<'a> = (Vec<(&'a str, &'a str)>, Vec<&'a str>, &'a str);

#[test]
fn bad_input_is_refused_in_one_line_before_any_probe() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    let commits = repository(&repo, None, None);
    let plain = tmp.path().join("plain");
    std::fs::create_dir(&plain).unwrap();
    let out = tmp.path().join("bisect");
    let (repo_s, out_s, plain_s) =
        (repo.display().to_string(), out.display().to_string(), plain.display().to_string());
    let inside = repo.join("inside").display().to_string();
    let run_flags: Vec<&str> = RUN.iter().copied().chain(["work"]).collect();
    let cases: Vec<Case> = vec![
        (
            vec![("--good", "no-such-rev")],
            run_flags.clone(),
            "--good: 'no-such-rev' names no commit",
        ),
        (
            vec![("--good", &commits[5]), ("--bad", &commits[2])],
            run_flags.clone(),
            "is not on the first-parent history",
        ),
        (vec![("--repo", &plain_s)], run_flags.clone(), "is not a git repository"),
        (vec![("--output", &inside)], run_flags.clone(), "is inside the repository"),
        (vec![("--max-rounds", "3")], run_flags.clone(), "--max-rounds 3 is below the 6 rounds"),
        (vec![], vec!["--no-such-flag"], "RUN FLAGS: unexpected argument '--no-such-flag'"),
        (vec![], vec!["--output", "x"], "RUN FLAGS: --output is given"),
        (
            vec![],
            ["--export-json", "x.json"].into_iter().chain(run_flags.iter().copied()).collect(),
            "RUN FLAGS: --export-json is given; every run would write the same file",
        ),
        (
            vec![("--build", "true"), ("--build-timeout", "soon")],
            run_flags.clone(),
            "--build-timeout 'soon' is not a positive number of seconds",
        ),
        (
            vec![("--build-timeout", "10")],
            run_flags.clone(),
            "--build-timeout limits --build, which is not given",
        ),
    ];
    for (changed, flags, says) in cases {
        let mut named: Vec<(&str, &str)> = vec![
            ("--good", "HEAD~16"),
            ("--bad", "HEAD"),
            ("--repo", &repo_s),
            ("--output", &out_s),
        ];
        for (flag, value) in changed {
            match named.iter_mut().find(|(f, _)| *f == flag) {
                Some(slot) => slot.1 = value,
                None => named.push((flag, value)),
            }
        }
        let mut given = vec!["bisect"];
        for (flag, value) in named {
            given.extend([flag, value]);
        }
        given.push("--");
        given.extend(flags);
        let mut c = coordinator();
        c.args(&given);
        let f = run(c);
        assert_eq!(f.code(), Some(2), "{given:?}: {}", f.stderr);
        let lines: Vec<&str> = f.stderr.lines().filter(|l| l.starts_with("error:")).collect();
        assert_eq!(lines.len(), 1, "{given:?}: {}", f.stderr);
        assert!(lines[0].contains(says), "{given:?}: {}", f.stderr);
        assert!(!out.exists() && !repo.join("inside").exists(), "{given:?} made its output");
        assert!(probe_lines(&f.stderr).is_empty(), "{given:?} probed: {}", f.stderr);
    }
}
