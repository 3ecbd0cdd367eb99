//! A memory cgroup per stage, where the worker may create one: the kernel's
//! own peak of the processes a stage starts (`memory.peak` on cgroup v2,
//! `memory.max_usage_in_bytes` on a v1 memory hierarchy), and its split
//! into anonymous and file pages (`memory.stat`). A command's process joins
//! the stage's cgroup between fork and exec ([`enter`]), so everything it
//! and its descendants allocate is charged there. Whatever fails (no
//! memory controller, no permission, a v2 parent that holds processes),
//! the stage falls back to sampling and says so; it is never an error.

use std::io::Write;
use std::os::fd::IntoRawFd;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};

/// The stage's cgroup, from creation to removal.
pub(super) struct Cgroup {
    dir: PathBuf,
    v2: bool,
}

/// `cgroup.procs` of the current stage's cgroup, open for writing, or -1:
/// read between fork and exec, where nothing may allocate or lock.
static PROCS_FD: AtomicI32 = AtomicI32::new(-1);
/// Stages so far, to name each stage's cgroup.
static STAGES: AtomicU64 = AtomicU64::new(0);
/// The current stage's cgroup, made when its first command is about to
/// start ([`prepare`]) and taken at the stage's end ([`take_current`]).
static CURRENT: Mutex<Option<Cgroup>> = Mutex::new(None);

fn current() -> std::sync::MutexGuard<'static, Option<Cgroup>> {
    CURRENT.lock().unwrap_or_else(|e| e.into_inner())
}

/// Makes the current stage's cgroup, unless it has one or none can be made
/// (or `STAGEBENCH_TREE_METHOD=sampled`): called before a command starts,
/// so stages of the worker alone never pay for one.
pub fn prepare() {
    let mut c = current();
    if c.is_none() && super::cgroups_allowed() {
        *c = Cgroup::create();
    }
}

/// `f` of the current stage's cgroup, if it has one.
pub(super) fn with_current<R>(f: impl FnOnce(&Cgroup) -> R) -> Option<R> {
    current().as_ref().map(f)
}

/// The current stage's cgroup, for its end.
pub(super) fn take_current() -> Option<Cgroup> {
    current().take()
}

/// Where the current stage's cgroup is, until it is removed: the SIGTERM
/// path removes it by its path even while the stage's own thread holds it.
static CURRENT_DIR: Mutex<Option<PathBuf>> = Mutex::new(None);

/// Removes the current stage's cgroup, if any (its processes must be gone).
pub(super) fn remove_current() {
    let dir = CURRENT_DIR.lock().unwrap_or_else(|e| e.into_inner()).clone();
    if let Some(dir) = dir {
        remove_dir(&dir);
    }
}

/// Removes a stage's cgroup directory (the kernel refuses while a process,
/// even a zombie, is in it: retried for up to half a second).
fn remove_dir(dir: &Path) -> bool {
    for _ in 0..250 {
        if std::fs::remove_dir(dir).is_ok() || !dir.exists() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    false
}

/// Removes the stage cgroups that workers killed with SIGKILL left below
/// `parent`: only names this code gives (`stagebench-PID-N`), only where no
/// process PID exists; the kernel refuses to remove one that holds a process.
fn sweep_stale(parent: &Path) {
    for e in std::fs::read_dir(parent).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let pid = name
            .strip_prefix("stagebench-")
            .and_then(|r| r.split_once('-'))
            .and_then(|(pid, n)| n.parse::<u64>().ok().and(pid.parse::<i32>().ok()));
        // SAFETY: kill with signal 0 only checks whether the pid exists.
        let gone = |pid: i32| unsafe { libc::kill(pid, 0) } != 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        if pid.is_some_and(|p| p > 0 && gone(p)) {
            let _ = std::fs::remove_dir(e.path());
        }
    }
}

/// Moves the calling process into the current stage's cgroup, if there is
/// one. Async-signal-safe: one `write` of "0" (the writer) to a descriptor
/// opened before the fork.
pub fn enter() {
    let fd = PROCS_FD.load(Ordering::Acquire);
    if fd >= 0 {
        // SAFETY: write(2) of one byte from a static buffer to a descriptor
        // that stays open until the stage's cgroup is removed.
        unsafe { libc::write(fd, b"0".as_ptr().cast(), 1) };
    }
}

/// This process's memory cgroup directory, and whether it is cgroup v2.
fn own_memory_cgroup() -> Option<(PathBuf, bool)> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        if controllers.split(',').any(|c| c == "memory") {
            return Some((
                Path::new("/sys/fs/cgroup/memory").join(path.trim_start_matches('/')),
                false,
            ));
        }
    }
    let unified = text.lines().find_map(|l| l.strip_prefix("0::"))?;
    let root = Path::new("/sys/fs/cgroup");
    root.join("cgroup.controllers")
        .is_file()
        .then(|| (root.join(unified.trim_start_matches('/')), true))
}

impl Cgroup {
    /// A new cgroup for one stage below this worker's own, with its
    /// `cgroup.procs` open for [`enter`]; None where that cannot be.
    pub(super) fn create() -> Option<Cgroup> {
        let (parent, v2) = own_memory_cgroup()?;
        sweep_stale(&parent);
        let n = STAGES.fetch_add(1, Ordering::Relaxed);
        let dir = parent.join(format!("stagebench-{}-{n}", std::process::id()));
        std::fs::create_dir(&dir).ok()?;
        let cg = Cgroup { dir, v2 };
        let procs = std::fs::OpenOptions::new().write(true).open(cg.dir.join("cgroup.procs"));
        match (procs, cg.peak().is_some()) {
            (Ok(f), true) => {
                PROCS_FD.store(f.into_raw_fd(), Ordering::Release);
                *CURRENT_DIR.lock().unwrap_or_else(|e| e.into_inner()) = Some(cg.dir.clone());
                Some(cg)
            }
            _ => {
                cg.remove();
                None
            }
        }
    }

    /// The kernel's peak charge of the cgroup, in bytes.
    pub(super) fn peak(&self) -> Option<u64> {
        let file = if self.v2 { "memory.peak" } else { "memory.max_usage_in_bytes" };
        std::fs::read_to_string(self.dir.join(file)).ok()?.trim().parse().ok()
    }

    /// The charge now, in bytes (cheap for the kernel, unlike `memory.stat`).
    pub(super) fn usage(&self) -> Option<u64> {
        let file = if self.v2 { "memory.current" } else { "memory.usage_in_bytes" };
        std::fs::read_to_string(self.dir.join(file)).ok()?.trim().parse().ok()
    }

    /// Anonymous and file pages charged now, in bytes.
    pub(super) fn anon_and_file(&self) -> Option<(u64, u64)> {
        let stat = std::fs::read_to_string(self.dir.join("memory.stat")).ok()?;
        let (anon, file) = if self.v2 { ("anon", "file") } else { ("total_rss", "total_cache") };
        let get = |key: &str| {
            stat.lines().find_map(|l| {
                let (k, v) = l.split_once(' ')?;
                (k == key).then(|| v.trim().parse::<u64>().ok()).flatten()
            })
        };
        Some((get(anon)?, get(file)?))
    }

    /// Closes the descriptor [`enter`] writes to and removes the cgroup
    /// (empty by now: the stage's processes were reaped).
    pub(super) fn remove(self) {
        let fd = PROCS_FD.swap(-1, Ordering::AcqRel);
        if fd >= 0 {
            // SAFETY: the descriptor came from into_raw_fd above and is closed once.
            unsafe { libc::close(fd) };
        }
        let removed = remove_dir(&self.dir);
        let mut current = CURRENT_DIR.lock().unwrap_or_else(|e| e.into_inner());
        if current.as_deref() == Some(self.dir.as_path()) {
            *current = None;
        }
        drop(current);
        if removed {
            return;
        }
        let _ = std::io::stderr().write_all(
            format!("worker: cannot remove the stage's cgroup {}\n", self.dir.display()).as_bytes(),
        );
    }
}
