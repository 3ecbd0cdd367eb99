//! A stage's process tree, measured whole and contained (issue 12): the
//! peak of all its processes at once against the sum of their own peaks,
//! the CPU of an orphan, and processes left running killed, named and gone:
//! what a tree used (`usage`), its cgroup (`cgroups`), leaks (`leaks`) and
//! abnormal ends (`endings`); the programs they run are in `programs`.

use harness::{coordinator, coordinator_with_output, json, run};
use serde_json::Value;
use std::path::{Path, PathBuf};

mod cgroups;
mod endings;
mod leaks;
mod programs;
mod usage;

use programs::{py, scripts};

const MIB: f64 = 1024.0 * 1024.0;

/// Runs `--command LINE` once; returns the command's stage record.
fn command_stage(line: &str, extra: &[&str]) -> Value {
    command_stage_by(line, extra, None)
}

/// The same, with the workers' tree method forced (`Some("sampled")`) or
/// left to what the machine offers (`None`).
fn command_stage_by(line: &str, extra: &[&str], method: Option<&str>) -> Value {
    let (_tmp, out, mut c) = coordinator_with_output();
    match method {
        Some(m) => c.env("STAGEBENCH_TREE_METHOD", m),
        None => c.env_remove("STAGEBENCH_TREE_METHOD"),
    };
    c.args(["--quiet", "--command", line]).args(extra);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    f.assert_no_worker_left();
    json(&out.join("report.json"))["stages"]["command"].clone()
}

fn mib(stage: &Value, key: &str) -> f64 {
    stage[key].as_u64().unwrap_or_else(|| panic!("no {key} in {stage}")) as f64 / MIB
}

/// Pids of live processes whose command line holds `needle`.
fn processes_with(needle: &str) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(e.path().join("cmdline")) else { continue };
        let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let zombie = std::fs::read_to_string(e.path().join("stat"))
            .map(|s| s.rsplit_once(')').is_some_and(|(_, r)| r.trim_start().starts_with('Z')))
            .unwrap_or(true);
        if text.contains(needle) && !zombie && !text.contains("cargo") {
            out.push(format!("{}: {text}", e.file_name().to_string_lossy()));
        }
    }
    out
}

/// Whether workers here can make a memory cgroup per stage (as root with a
/// writable memory hierarchy), so the default method is `cgroup`.
fn cgroups_here() -> bool {
    let Ok(text) = std::fs::read_to_string("/proc/self/cgroup") else { return false };
    let v1 = text.lines().find_map(|l| l.split_once(":memory:").map(|(_, p)| p.to_string()));
    let dir = match v1 {
        Some(p) => Path::new("/sys/fs/cgroup/memory").join(p.trim_start_matches('/')),
        None => return false,
    };
    let probe = dir.join(format!("stagebench-probe-{}", std::process::id()));
    let made = std::fs::create_dir(&probe).is_ok();
    let _ = std::fs::remove_dir(&probe);
    made
}

/// The stage cgroups a worker left below this test's own memory cgroup.
fn stage_cgroups_of(worker: i32) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string("/proc/self/cgroup") else { return Vec::new() };
    let Some(path) =
        text.lines().find_map(|l| l.split_once(":memory:").map(|(_, p)| p.to_string()))
    else {
        return Vec::new();
    };
    let dir = Path::new("/sys/fs/cgroup/memory").join(path.trim_start_matches('/'));
    let prefix = format!("stagebench-{worker}-");
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&prefix))
        .collect()
}

/// The pid a command wrote into `file`, once it is there (bounded wait on
/// the command's own event, not a sleep).
fn pid_written_to(file: &Path) -> i32 {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        if let Some(pid) = std::fs::read_to_string(file).ok().and_then(|s| s.trim().parse().ok()) {
            return pid;
        }
        assert!(std::time::Instant::now() < deadline, "{} never appeared", file.display());
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
