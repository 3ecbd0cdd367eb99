//! Preparations of many items, answered at once by fake workers: the
//! coordinator holds the same memory for ten times the items (it reads them
//! from the items file as it hands them out and folds each answer into
//! figures of fixed size, docs/performance.md), and a worker killed in the
//! middle of a phase fails the run at once, naming its item.

use harness::{bins, json, run_within, wait_gone};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// `coordinator ARGS` over `n` items in `dir`, `--workers 2 --rounds 1`,
/// with fake workers answering at once, no debug log (a line a job), and
/// `--quiet`.
fn many_items(dir: &Path, n: usize, program: &Path) -> Command {
    let mut c = shown(dir, n, program);
    c.arg("--quiet");
    c
}

/// [`many_items`] without `--quiet`.
fn shown(dir: &Path, n: usize, program: &Path) -> Command {
    let items = dir.join("items");
    let lines: String = (0..n).map(|i| format!("item-{i:08}\n")).collect();
    std::fs::write(&items, lines).unwrap();
    let mut c = Command::new(program);
    if program != bins().coordinator {
        c.arg(&bins().coordinator);
    }
    c.args(["--mode", "cold-prep", "--workers", "2", "--rounds", "1"])
        .args(["--prepare", "true", "--items"])
        .arg(&items)
        .arg("--worker-bin")
        .arg(&bins().fake_worker)
        .arg("--output")
        .arg(dir.join("run"))
        .env("STAGEBENCH_FAKE", "instant")
        .env_remove("STAGEBENCH_LOG")
        .env_remove("STAGEBENCH_WORKER_BIN");
    c
}

/// The coordinator's peak RSS in KiB over `n` items, measured by `rss-peak`
/// from the coordinator's own size up (a process forked from this test
/// would start at the test's).
fn peak_kib(n: usize) -> u64 {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let f = run_within(many_items(tmp.path(), n, &bins().rss_peak), Duration::from_secs(600));
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    let r = json(&out.join("report.json"));
    assert_eq!(r["items"]["count"], n as u64);
    assert_eq!(r["parallel"]["per_series_s"]["n"], n as u64);
    let last = f.stderr.lines().last().unwrap_or_default();
    let kib = last.strip_prefix("peak_rss_kib ").and_then(|k| k.parse().ok());
    kib.unwrap_or_else(|| panic!("no peak on stderr's last line: {}", f.stderr))
}

#[test]
fn the_coordinators_peak_does_not_grow_with_its_items() {
    let small = peak_kib(20_000);
    let large = peak_kib(200_000);
    eprintln!("coordinator peak: {small} KiB at 2×10⁴ items, {large} KiB at 2×10⁵");
    assert!(large < 64 << 10, "{large} KiB at 2×10⁵ items, over 64 MiB");
    // 10% of the control's peak; the code before this held about 140 bytes
    // an item, 25 MiB more here.
    assert!(
        (large as f64) <= 1.1 * small as f64,
        "{large} KiB at 2×10⁵ items against {small} KiB at 2×10⁴"
    );
}

/// A worker killed (SIGKILL) at its 30 000th of 10⁵ items: the run fails
/// within seconds naming the item it held by its line, leaves no worker, no
/// jobs.jsonl.gz and no report. The control: the same run unkilled passes.
#[test]
fn a_worker_killed_in_the_middle_of_a_large_phase_fails_the_run_naming_its_item() {
    let n = 100_000;
    let tmp = tempfile::tempdir().unwrap();
    // Rank 0 is the serial phase's process; 1 and 2 the parallel phase's.
    let after = killed_mid_phase(tmp.path(), n, "1:30000", &[]);
    eprintln!("the run ended {after:?} after the kill");
    // The control: unkilled, the same run passes and covers every item.
    let tmp = tempfile::tempdir().unwrap();
    let f = run_within(many_items(tmp.path(), n, &bins().coordinator), Duration::from_secs(600));
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    assert_eq!(json(&tmp.path().join("run/report.json"))["parallel"]["per_series_s"]["n"], n);
}

/// A phase of items shows its progress off a terminal a tenth at a time
/// (the supervisors' count, sent now and then): ten lines a phase, each at
/// or past its tenth, the last every item.
#[test]
fn a_phase_of_items_shows_its_progress_by_tenths() {
    let n = 20_000;
    let tmp = tempfile::tempdir().unwrap();
    let f = harness::run(shown(tmp.path(), n, &bins().coordinator));
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    for phase in ["cold_prepare", "cold_prepare_parallel"] {
        let done: Vec<usize> = f
            .stderr
            .lines()
            .filter_map(|l| l.trim().strip_prefix(&format!("{phase}: ")))
            .filter_map(|rest| rest.split('/').next()?.parse().ok())
            .collect();
        assert_eq!(done.len(), 10, "{phase}: {done:?}\n{}", f.stderr);
        assert!(done.windows(2).all(|w| w[0] < w[1]), "{phase}: {done:?}");
        assert!(done.iter().enumerate().all(|(i, d)| d * 10 >= (i + 1) * n), "{phase}: {done:?}");
        assert_eq!(done.last(), Some(&n), "{phase}");
    }
}

/// On a terminal (a real pseudo-terminal, by `script`) a phase of items
/// paints one live counter, at most ten times a second and at its end: it
/// painted once for every count the supervisors sent, about a thousand a
/// phase however short.
#[test]
fn on_a_terminal_the_live_counter_is_painted_at_most_ten_times_a_second() {
    let n = 20_000;
    let tmp = tempfile::tempdir().unwrap();
    let c = shown(tmp.path(), n, &bins().coordinator);
    let quote = |a: &std::ffi::OsStr| format!("'{}'", a.to_str().unwrap().replace('\'', "'\\''"));
    let line: Vec<String> =
        std::iter::once(c.get_program()).chain(c.get_args()).map(quote).collect();
    let mut script = Command::new("script");
    script.args(["-qfec", &line.join(" "), "/dev/null"]);
    for (k, v) in c.get_envs() {
        match v {
            Some(v) => script.env(k, v),
            None => script.env_remove(k),
        };
    }
    let started = Instant::now();
    let f = run_within(script, Duration::from_secs(300));
    let wall = started.elapsed().as_secs_f64();
    assert_eq!(f.code(), Some(0), "{}{}", f.stdout, f.stderr);
    for phase in ["cold_prepare", "cold_prepare_parallel"] {
        let painted: Vec<&str> = f
            .stdout
            .split(['\r', '\n'])
            .filter_map(|l| l.strip_prefix("\x1b[2K  ")?.strip_prefix(&format!("{phase}: ")))
            .collect();
        let most = (10.0 * wall) as usize + 2;
        assert!(painted.len() >= 2, "{phase}: painted {painted:?}");
        assert!(painted.len() <= most, "{phase}: painted {} times in {wall:.1} s", painted.len());
        let last = painted.last().unwrap();
        assert!(last.starts_with(&format!("{n}/{n} items")), "{phase}: {last}");
    }
}

/// The other order a death can take: a worker takes its next item, answers
/// the one before and dies, so the coordinator finds it gone as it hands the
/// next item over rather than while it waits for an answer. The run still
/// names the item the worker held, by its line (it named none before).
#[test]
fn a_worker_that_dies_as_its_next_item_is_handed_over_is_named_by_the_item_it_held() {
    let tmp = tempfile::tempdir().unwrap();
    killed_mid_phase(tmp.path(), 2_000, "2:500:handover", &["--prefetch", "1"]);
}

/// Runs [`many_items`] over `n` items with the fake worker killed as
/// `STAGEBENCH_FAKE_KILLED` says, and checks the run failed naming by its
/// line the item that worker held, with no worker, jobs file, report or
/// output left. Returns how long the run went on after the kill.
fn killed_mid_phase(dir: &Path, n: usize, killed: &str, args: &[&str]) -> Duration {
    let pids = dir.join("pids");
    std::fs::create_dir(&pids).unwrap();
    let mut c = many_items(dir, n, &bins().coordinator);
    c.args(args).env("STAGEBENCH_FAKE_PIDS", &pids).env("STAGEBENCH_FAKE_KILLED", killed);
    c.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    let marker = pids.join("killed");
    let deadline = Instant::now() + Duration::from_secs(300);
    while !marker.exists() {
        assert!(Instant::now() < deadline, "the worker was not killed within 300 s");
        assert!(child.try_wait().unwrap().is_none(), "the run ended before the kill");
        std::thread::sleep(Duration::from_millis(20));
    }
    let at = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(at.elapsed() < Duration::from_secs(30), "the run went on 30 s after the kill");
        std::thread::sleep(Duration::from_millis(20));
    };
    let after = at.elapsed();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(1), "{stderr}");
    // The items are `item-{i:08}` on line i + 1, handed out in file order.
    let held = std::fs::read_to_string(&marker).unwrap();
    let i: usize = held.strip_prefix("item-").and_then(|i| i.parse().ok()).expect(&held);
    let out = dir.join("run");
    let failure = json(&out.join("failure.json"));
    assert_eq!(failure["reason"], "worker_crashed", "{failure}");
    let message = failure["message"].as_str().unwrap();
    let named = format!("(item {} of {n} in flight)", i + 1);
    assert!(message.contains(&named), "not {named}: {message}");
    assert!(!message.contains("item-0"), "an id reached failure.json: {message}");
    for left in ["report.json", "jobs.jsonl.gz", "private-output-parallel"] {
        assert!(!out.join(left).exists(), "{left} was left beside failure.json");
    }
    let started: Vec<i32> = std::fs::read_dir(&pids)
        .unwrap()
        .filter_map(|e| e.unwrap().file_name().to_str()?.parse().ok())
        .collect();
    assert_eq!(started.len(), 3, "the serial process and the parallel two: {started:?}");
    for pid in started {
        assert!(wait_gone(pid, Duration::from_secs(10)), "worker {pid} outlived the run");
    }
    after
}
