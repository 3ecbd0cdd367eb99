//! One probe's processes: a commit's build and its run, each in the
//! commit's own worktree, waited for with an eye on SIGINT and SIGTERM. A
//! signal stops what runs (a run is sent SIGINT and stops its own workers;
//! a build's process group is killed) and is handed back.

use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

/// How long a run may take to stop after SIGINT before its group is killed.
const STOP_GRACE: Duration = Duration::from_secs(30);
/// How often a child is looked at while it runs.
const POLL: Duration = Duration::from_millis(20);

/// Why a commit could not be measured: a finding (its probe is skipped),
/// not an error of the bisection.
#[derive(Debug, thiserror::Error)]
pub(super) enum Unmeasured {
    #[error("its build failed earlier (see {0})")]
    BuiltBefore(String),
    #[error("its build failed ({status}; see {log})")]
    Build { status: std::process::ExitStatus, log: String },
    #[error(
        "its build was still running after --build-timeout {seconds} and was killed (see {log})"
    )]
    BuildTimedOut { seconds: String, log: String },
    #[error("its run failed ({status}; see {dir}/failure.json)")]
    Run { status: std::process::ExitStatus, dir: String },
}

/// How a probe's process ended.
pub(super) enum Ended {
    Exited(ExitStatus),
    /// A signal reached the bisection; the child was stopped.
    Stopped(i32),
    /// It outlived its deadline and its process group was killed.
    TimedOut,
}

/// Waits for `child`; on a signal, sends it `first` (SIGINT for a run,
/// SIGKILL to a build's group), then SIGKILL to its group after the grace.
/// Past `deadline`, its group is killed.
fn wait(
    mut child: Child,
    stop: &AtomicI32,
    first: i32,
    deadline: Option<Instant>,
) -> std::io::Result<Ended> {
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Ended::Exited(status));
        }
        if deadline.is_some_and(|d| Instant::now() > d) {
            // SAFETY: killpg(2) on the group of a child this process
            // spawned (in its own group) and has not yet reaped.
            unsafe { libc::killpg(child.id() as i32, libc::SIGKILL) };
            child.wait()?;
            return Ok(Ended::TimedOut);
        }
        let signal = stop.load(Ordering::SeqCst);
        if signal != 0 {
            let pid = child.id() as i32;
            // SAFETY: kill(2) and killpg(2) on a child this process spawned
            // (in its own group) and has not yet reaped.
            unsafe {
                match first {
                    libc::SIGKILL => libc::killpg(pid, libc::SIGKILL),
                    s => libc::kill(pid, s),
                };
            }
            let deadline = Instant::now() + STOP_GRACE;
            while child.try_wait()?.is_none() {
                if Instant::now() > deadline {
                    // SAFETY: as above.
                    unsafe { libc::killpg(pid, libc::SIGKILL) };
                    child.wait()?;
                    break;
                }
                std::thread::sleep(POLL);
            }
            return Ok(Ended::Stopped(signal));
        }
        std::thread::sleep(POLL);
    }
}

/// `sh -c build` in `worktree`, its output into `log`, killed (its whole
/// process group) after `timeout`.
pub(super) fn build(
    build: &str,
    worktree: &Path,
    log: &Path,
    stop: &AtomicI32,
    timeout: Option<Duration>,
) -> std::io::Result<Ended> {
    let out = std::fs::File::create(log)?;
    let child = Command::new("sh")
        .arg("-c")
        .arg(build)
        .current_dir(worktree)
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out)
        .process_group(0)
        .spawn()?;
    wait(child, stop, libc::SIGKILL, timeout.map(|t| Instant::now() + t))
}

/// This coordinator with the run's flags and `--output dir`, in `worktree`;
/// its own console output is left out (`--quiet`), its stderr goes to
/// `stderr` for the bisection to show what is new in it.
pub(super) fn run(
    flags: &[String],
    worktree: &Path,
    dir: &Path,
    stderr: &Path,
    stop: &AtomicI32,
) -> std::io::Result<Ended> {
    let me = std::env::current_exe()?;
    let stderr = std::fs::File::create(stderr)?;
    let child = Command::new(me)
        .args(flags)
        .arg("--quiet")
        .arg("--output")
        .arg(dir)
        .current_dir(worktree)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .process_group(0)
        .spawn()?;
    wait(child, stop, libc::SIGINT, None)
}
