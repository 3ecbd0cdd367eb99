//! A stage's process tree, measured whole and contained (issue 12): the
//! peak of all its processes at once against the sum of their own peaks,
//! the CPU of an orphan, and processes left running killed, named and gone:
//! what a tree used (`usage`), its cgroup (`cgroups`), leaks (`leaks`) and
//! abnormal ends (`endings`); the programs they run are in `programs`.

use harness::{cgroups_here, coordinator, coordinator_with_output, json, run};
use report::rundir::report::StageRecord;
use std::path::{Path, PathBuf};

mod cgroups;
mod endings;
mod leaks;
mod programs;
mod usage;

use programs::{py, scripts};

const MIB: f64 = 1024.0 * 1024.0;

/// Runs `--command LINE` once; returns the command's stage record.
fn command_stage(line: &str, extra: &[&str]) -> StageRecord {
    command_stage_by(line, extra, None)
}

/// The same, with the workers' tree method forced (`Some("sampled")`) or
/// left to what the machine offers (`None`).
fn command_stage_by(line: &str, extra: &[&str], method: Option<&str>) -> StageRecord {
    let (_tmp, out, mut c) = coordinator_with_output();
    match method {
        Some(m) => c.env("STAGEBENCH_TREE_METHOD", m),
        None => c.env_remove("STAGEBENCH_TREE_METHOD"),
    };
    c.args(["--quiet", "--command", line]).args(extra);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    f.assert_no_worker_left();
    harness::reports::stage(&harness::reports::read(&out), "command").clone()
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / MIB
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

/// A memory cgroup of one test's own, below the test process's, for a
/// coordinator to run in (None where none can be made). Its workers make
/// their stage cgroups in it, and the workers of tests running beside this
/// one, which sweep a dead worker's stage cgroups below their own, never
/// see them: what is left in it is what this run left. Removed on drop.
struct PrivateCgroup(PathBuf);

impl PrivateCgroup {
    fn new(test: &str) -> Option<PrivateCgroup> {
        let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        let path =
            text.lines().find_map(|l| l.split_once(":memory:").map(|(_, p)| p.to_string()))?;
        let dir = Path::new("/sys/fs/cgroup/memory")
            .join(path.trim_start_matches('/'))
            .join(format!("stagebench-test-{}-{test}", std::process::id()));
        std::fs::create_dir(&dir).ok().map(|()| PrivateCgroup(dir))
    }

    /// Starts `c` in this cgroup (so do its workers).
    fn enter(&self, c: &mut std::process::Command) {
        use std::os::fd::AsRawFd;
        use std::os::unix::process::CommandExt;
        let procs = std::fs::OpenOptions::new().write(true).open(self.0.join("cgroup.procs"));
        let procs = procs.expect("the private cgroup's cgroup.procs");
        let fd = procs.as_raw_fd();
        // SAFETY: one write(2) from a static buffer to a descriptor opened
        // before the fork (async-signal-safe); `procs` outlives the spawn
        // because the closure owns it.
        unsafe {
            c.pre_exec(move || {
                let _keep = &procs;
                match libc::write(fd, b"0".as_ptr().cast(), 1) {
                    1 => Ok(()),
                    _ => Err(std::io::Error::last_os_error()),
                }
            });
        }
    }

    /// The stage cgroups left in it.
    fn stage_cgroups(&self) -> Vec<String> {
        std::fs::read_dir(&self.0)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.path().is_dir())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect()
    }
}

impl Drop for PrivateCgroup {
    fn drop(&mut self) {
        for name in self.stage_cgroups() {
            let _ = std::fs::remove_dir(self.0.join(name));
        }
        let _ = std::fs::remove_dir(&self.0);
    }
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
