//! The worker's one tree thread: started with the worker, it waits for
//! SIGTERM (and ends the whole tree when it comes), and while a stage that
//! started processes runs, it takes the tree's samples at the declared
//! interval. A worker that started no process is its own tree; the thread
//! then only waits, until `will_start_processes` wakes it (SIGURG).

use super::{cgroup, procfs};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

/// Starts the worker's one tree thread, which samples a stage's tree while
/// a stage runs and ends the tree on SIGTERM. SIGTERM is blocked here (so
/// every thread started later inherits the block) and waited for by that
/// thread, which then SIGKILLs every descendant, reaps them, removes the
/// stage's cgroup and exits with 128 + 15. A stage that timed out or was
/// cancelled (the coordinator sends its worker's group SIGTERM) so leaves
/// nothing behind, daemons that left the group included; so does a worker
/// whose coordinator died (its parent-death signal is SIGTERM). Call early
/// in `main`, while the process has one thread. A command's processes start
/// with an empty signal mask (std resets it in the child).
pub fn start_watcher() {
    use nix::sys::signal::{SigSet, Signal};
    let mut set = SigSet::empty();
    set.add(Signal::SIGTERM);
    // SIGURG (ignored by default) wakes the thread when a stage starts a process.
    set.add(Signal::SIGURG);
    if set.thread_block().is_err() {
        return;
    }
    let spawned = std::thread::Builder::new().name("tree".into()).spawn(move || {
        // SAFETY: gettid has no arguments and cannot fail.
        WATCHER_TID.store(unsafe { libc::gettid() }, Ordering::Release);
        watch(set)
    });
    if spawned.is_err() {
        // Without the thread, SIGTERM must still end the worker; stages are
        // then sampled only at their start and end.
        let _ = set.thread_unblock();
    }
}

/// The tree thread's id, for [`will_start_processes`] to wake it.
pub(super) static WATCHER_TID: AtomicI32 = AtomicI32::new(0);

/// The tree thread: waits for SIGTERM, one interval at a time while a stage
/// that started processes is sampled, and samples when the wait times out.
/// A worker that started no process is its own tree, and its own peak
/// (`VmHWM`, read at the stage's end) is exact: nothing to sample between.
fn watch(set: nix::sys::signal::SigSet) {
    loop {
        if !procfs::started_processes() {
            // SAFETY: sigwaitinfo reads the set; no info is written (null).
            let signo = unsafe { libc::sigwaitinfo(set.as_ref(), std::ptr::null_mut()) };
            if signo == libc::SIGTERM {
                end_on_sigterm();
            }
            continue;
        }
        let timeout = tick(super::interval_ms(), cgroup::with_current(|_| ()).is_some());
        // SAFETY: sigtimedwait reads the set and the timeout, writes nothing (null info).
        let signo = unsafe { libc::sigtimedwait(set.as_ref(), std::ptr::null_mut(), &timeout) };
        if signo == libc::SIGTERM {
            end_on_sigterm();
        }
        super::sample_tick();
    }
}

/// The wait between two samples of a stage's tree. With a cgroup the kernel
/// keeps the exact peak, so the processes are read (for the sum of peaks and
/// the anon/file split) every tenth interval only.
fn tick(interval_ms: u32, with_cgroup: bool) -> libc::timespec {
    let every = if with_cgroup { super::PROCESSES_EVERY } else { 1 };
    let ms = u64::from(interval_ms) * every;
    libc::timespec {
        tv_sec: (ms / 1000) as libc::time_t,
        tv_nsec: ((ms % 1000) * 1_000_000) as libc::c_long,
    }
}

/// Kills and reaps the tree, removes the stage's cgroup, and exits 128 + 15.
fn end_on_sigterm() -> ! {
    kill_tree();
    cgroup::remove_current();
    for dir in SCRATCH.lock().unwrap_or_else(|e| e.into_inner()).drain(..) {
        let _ = std::fs::remove_dir_all(dir);
    }
    std::process::exit(128 + libc::SIGTERM)
}

/// Directories the worker made below the run directory for a while (the
/// helper's bootstrap): a SIGTERM (the coordinator's death) removes them
/// once the tree is dead, so a killed run leaves none of them.
static SCRATCH: std::sync::Mutex<Vec<std::path::PathBuf>> = std::sync::Mutex::new(Vec::new());

/// Notes `dir` as one a SIGTERM removes until [`removed`].
pub fn remove_if_killed(dir: &std::path::Path) {
    SCRATCH.lock().unwrap_or_else(|e| e.into_inner()).push(dir.to_path_buf());
}

/// `dir` is gone, removed by its owner: a SIGTERM leaves it alone.
pub fn removed(dir: &std::path::Path) {
    SCRATCH.lock().unwrap_or_else(|e| e.into_inner()).retain(|d| d != dir);
}

/// SIGKILLs every descendant and reaps it, until none is left, zombies
/// included (a zombie still holds the stage's cgroup); bounded.
fn kill_tree() {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        super::reap_exited();
        let left = procfs::descendants();
        if left.is_empty() || Instant::now() >= deadline {
            return;
        }
        let alive: Vec<i32> = left.into_iter().filter(|p| procfs::running(*p)).collect();
        super::signal_all(&alive, libc::SIGKILL);
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Called before a stage starts a process: from then on, sampling and
/// containment look for descendants, and the stage gets a memory cgroup
/// (where one can be made) that the process joins before it starts.
pub fn will_start_processes() {
    if procfs::note_started_processes() {
        let tid = WATCHER_TID.load(Ordering::Acquire);
        if tid > 0 {
            // SAFETY: tgkill to this process's own tree thread; SIGURG is
            // blocked there and taken by its sigwaitinfo.
            unsafe {
                libc::syscall(libc::SYS_tgkill, std::process::id() as i32, tid, libc::SIGURG)
            };
        }
    }
    cgroup::prepare();
}

#[cfg(test)]
mod tests {
    use super::tick;

    /// The tree is sampled at the stage's declared interval, and every tenth
    /// one where a cgroup keeps the peak; a wait over a second carries into
    /// the seconds, the rest into nanoseconds.
    #[test]
    fn the_wait_between_samples_is_the_interval_or_ten_with_a_cgroup() {
        let at = |ms, cg| {
            let t = tick(ms, cg);
            (t.tv_sec as u64, t.tv_nsec as u64)
        };
        assert_eq!(at(7, false), (0, 7_000_000));
        assert_eq!(at(7, true), (0, 70_000_000));
        assert_eq!(at(250, true), (2, 500_000_000));
        assert_eq!(at(1500, false), (1, 500_000_000));
    }
}
