//! One worker OS process: spawned in its own process group, reaped by wait4
//! on a blocking thread (so its rusage is kept), terminated by group.

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use protocol::{Faults, WorkerId};
use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// How a process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ExitKind {
    Exited(i32),
    Signaled { signal: i32, core_dumped: bool },
}

impl std::fmt::Display for ExitKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            ExitKind::Exited(code) => write!(f, "exited {code}"),
            ExitKind::Signaled { signal, core_dumped } => {
                let name = Signal::try_from(signal).map(|s| s.as_str()).unwrap_or("?");
                write!(f, "killed by signal {signal} ({name})")?;
                if core_dumped {
                    f.write_str(", core dumped")?;
                }
                Ok(())
            }
        }
    }
}

/// What wait4 returned for a reaped worker, plus its spawn-to-reap wall time.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ProcessExit {
    pub(crate) kind: ExitKind,
    pub(crate) user_ns: u64,
    pub(crate) sys_ns: u64,
    pub(crate) peak_rss_bytes: u64,
    pub(crate) wall: Duration,
    /// Page faults and context switches from `wait4` (None where it could
    /// not see the process: a task of a job step, or one lost to us).
    pub(crate) faults: Option<Faults>,
}

/// A running (or finished) worker process, or one task of a multi-task
/// job step started through a cluster scheduler. A clone is another handle
/// on the same process.
#[derive(Clone)]
pub(crate) struct WorkerProcess {
    pub(crate) rank: WorkerId,
    /// The local process: the worker itself, or for a task the `srun` that
    /// holds its job step.
    pub(crate) pid: u32,
    /// The coordinator's own peak RSS when it spawned this worker. Linux
    /// carries `ru_maxrss` across `execve`, so the worker's `wait4` peak can
    /// never read lower than this. Zero for a task (not our child).
    pub(crate) rss_floor_bytes: u64,
    /// One task of a job step: it may run on another host, `wait4` cannot
    /// see it, and its end is the end of its connection after shutdown.
    /// `wait`/`terminate` then concern the whole step.
    pub(crate) task_of_step: bool,
    pub(crate) launched: Instant,
    exit: watch::Receiver<Option<ProcessExit>>,
}

/// A process started by [`spawn_in_group`]: its pid and its future exit.
#[derive(Clone)]
pub(crate) struct Spawned {
    pub(crate) pid: u32,
    pub(crate) rss_floor_bytes: u64,
    pub(crate) launched: Instant,
    exit: watch::Receiver<Option<ProcessExit>>,
}

/// Spawns `cmd` as the leader of a new process group (so a terminal's
/// SIGINT reaches only the coordinator, which then stops it by group), with
/// stdin and stdout closed, and reaps it with wait4 on a thread.
pub(crate) fn spawn_in_group(cmd: &mut Command) -> io::Result<Spawned> {
    let launched = Instant::now();
    let child = cmd.stdin(Stdio::null()).stdout(Stdio::null()).process_group(0).spawn()?;
    let pid = child.id();
    // The std Child is dropped without waiting: wait4 below reaps it.
    drop(child);
    let rss_floor_bytes = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_SELF)
        .map(|u| u.max_rss().max(0) as u64 * 1024)
        .unwrap_or(0);
    Ok(Spawned { pid, rss_floor_bytes, launched, exit: reap_in_background(pid, launched) })
}

impl Spawned {
    /// The one worker this process is.
    pub(crate) fn worker(self, rank: WorkerId) -> WorkerProcess {
        WorkerProcess {
            rank,
            pid: self.pid,
            rss_floor_bytes: self.rss_floor_bytes,
            task_of_step: false,
            launched: self.launched,
            exit: self.exit,
        }
    }

    /// Task `rank` of the job step this process (`srun`) holds.
    pub(crate) fn task(&self, rank: WorkerId) -> WorkerProcess {
        WorkerProcess { rss_floor_bytes: 0, task_of_step: true, ..self.clone().worker(rank) }
    }
}

/// Reaps `pid` with wait4 on a blocking thread and publishes its exit.
fn reap_in_background(pid: u32, started: Instant) -> watch::Receiver<Option<ProcessExit>> {
    let (tx, rx) = watch::channel(None);
    std::thread::Builder::new()
        .name(format!("reap-{pid}"))
        .spawn(move || {
            let exit = wait4(pid, started);
            let _ = tx.send(Some(exit));
        })
        .expect("spawn a reaper thread");
    rx
}

fn wait4(pid: u32, started: Instant) -> ProcessExit {
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is a plain C struct for which all-zero bytes are valid.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: valid pointers to locals; pid is our own child.
        let r = unsafe { libc::wait4(pid as libc::pid_t, &mut status, 0, &mut usage) };
        if r == pid as libc::pid_t {
            break;
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            // Not our child any more (cannot happen: we never wait elsewhere).
            return ProcessExit {
                kind: ExitKind::Exited(-1),
                user_ns: 0,
                sys_ns: 0,
                peak_rss_bytes: 0,
                wall: started.elapsed(),
                faults: None,
            };
        }
    }
    let kind = if libc::WIFSIGNALED(status) {
        ExitKind::Signaled { signal: libc::WTERMSIG(status), core_dumped: libc::WCOREDUMP(status) }
    } else {
        ExitKind::Exited(libc::WEXITSTATUS(status))
    };
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    ProcessExit {
        kind,
        user_ns: tv(usage.ru_utime),
        sys_ns: tv(usage.ru_stime),
        peak_rss_bytes: usage.ru_maxrss.max(0) as u64 * 1024,
        wall: started.elapsed(),
        faults: Some(Faults {
            minor: usage.ru_minflt.max(0) as u64,
            major: usage.ru_majflt.max(0) as u64,
            voluntary_switches: usage.ru_nvcsw.max(0) as u64,
            involuntary_switches: usage.ru_nivcsw.max(0) as u64,
        }),
    }
}

impl WorkerProcess {
    /// The exit, if the process has been reaped.
    pub(crate) fn exited(&self) -> Option<ProcessExit> {
        *self.exit.borrow()
    }

    /// Waits until the process has been reaped. Cancel-safe.
    pub(crate) async fn wait(&self) -> ProcessExit {
        let mut rx = self.exit.clone();
        match rx.wait_for(|e| e.is_some()).await {
            Ok(e) => e.expect("checked by wait_for"),
            Err(_) => unreachable!("the reaper thread sends before it drops the sender"),
        }
    }

    /// SIGTERM to the whole group, then SIGKILL after `grace`; waits for the reap.
    pub(crate) async fn terminate(&self, grace: Duration) -> ProcessExit {
        if let Some(e) = self.exited() {
            self.kill_leftovers();
            return e;
        }
        self.signal_group(Signal::SIGTERM);
        let exit = match tokio::time::timeout(grace, self.wait()).await {
            Ok(e) => e,
            Err(_) => {
                self.signal_group(Signal::SIGKILL);
                self.wait().await
            }
        };
        self.kill_leftovers();
        exit
    }

    /// SIGKILL to the whole group, now (a declared interruption).
    pub(crate) fn kill_now(&self) {
        self.signal_group(Signal::SIGKILL);
    }

    /// After the leader is reaped, SIGKILL anything it left in its group.
    pub(crate) fn kill_leftovers(&self) {
        self.signal_group(Signal::SIGKILL);
    }

    fn signal_group(&self, sig: Signal) {
        // ESRCH (group already empty) is the normal case and is ignored.
        let _ = killpg(Pid::from_raw(self.pid as i32), sig);
    }
}
