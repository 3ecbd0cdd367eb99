//! The coordinator of a preparation holds the same memory for ten times the
//! items: it reads them from the items file as it hands them out and folds
//! each answer into figures of fixed size (docs/performance.md). The
//! control is the same run over a tenth of the items; `rss-peak` measures
//! the coordinator from its own size up (a process forked from this test
//! would start at the test's).

use harness::{bins, json, run_within};
use std::process::Command;
use std::time::Duration;

/// The coordinator's peak RSS in KiB over `n` items, answered at once by
/// fake workers, on 2 processes and one round.
fn peak_kib(n: usize) -> u64 {
    let tmp = tempfile::tempdir().unwrap();
    let items = tmp.path().join("items");
    let lines: String = (0..n).map(|i| format!("item-{i:08}\n")).collect();
    std::fs::write(&items, lines).unwrap();
    let out = tmp.path().join("run");
    let mut c = Command::new(&bins().rss_peak);
    c.arg(&bins().coordinator)
        .args(["--quiet", "--mode", "cold-prep", "--workers", "2", "--rounds", "1"])
        .args(["--prepare", "true", "--items"])
        .arg(&items)
        .arg("--worker-bin")
        .arg(&bins().fake_worker)
        .arg("--output")
        .arg(&out)
        .env("STAGEBENCH_FAKE", "instant")
        .env_remove("STAGEBENCH_LOG")
        .env_remove("STAGEBENCH_WORKER_BIN");
    let f = run_within(c, Duration::from_secs(600));
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
