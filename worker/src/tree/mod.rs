//! A stage's process tree, measured whole and contained.
//!
//! The worker makes itself a child subreaper ([`become_subreaper`]), so a
//! descendant whose parent exits comes back to the worker instead of to
//! init. Where it can, the worker makes a memory cgroup for each stage
//! (`cgroup`) that a command joins before it starts: the kernel's peak
//! charge is then the tree's peak. While a stage runs, a [`Sampler`] thread
//! reads the resident memory of the worker and of every live descendant at
//! a declared interval (and at the stage's start and end): their sum's
//! maximum is the `sampled` peak, never below the worker's own `VmHWM`; it
//! misses a peak between two samples and counts a page shared by several
//! processes in each (PSS would not, but reading it walks page tables:
//! about 2 ms for a 100 MiB process). Each process's own high-water mark (`VmHWM` as last
//! sampled, or `ru_maxrss` when the worker reaped it) summed gives the upper
//! bound. When the stage ends, [`contain`] kills every descendant still
//! alive (SIGTERM, a grace, SIGKILL), reaps it and every orphan that already
//! exited, and names them by `comm` (never a path or an argument). Reaping
//! is what puts an orphan's CPU time into the worker's `RUSAGE_CHILDREN`,
//! so it must happen before the stage's CPU is read.
//!
//! Descendants are found through `/proc/PID/task/TID/children`; where the
//! kernel has no such file, by one scan of every `/proc/PID/stat`.

mod cgroup;

pub use cgroup::enter as enter_stage_cgroup;

use cgroup::Cgroup;
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// How long a leaked descendant gets between SIGTERM and SIGKILL.
pub const LEAK_GRACE: Duration = Duration::from_millis(200);
/// The sampler's interval when the coordinator did not give one.
pub const DEFAULT_SAMPLE_MS: u32 = 10;

/// Makes this process the subreaper of everything it starts.
pub fn become_subreaper() -> std::io::Result<()> {
    // SAFETY: prctl with integer arguments only.
    let r = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    if r == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
}

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
static WATCHER_TID: AtomicI32 = AtomicI32::new(0);

/// The tree thread: waits for SIGTERM, one interval at a time while a stage
/// that started processes is sampled, and samples when the wait times out.
/// A worker that started no process is its own tree, and its own peak
/// (`VmHWM`, read at the stage's end) is exact: nothing to sample between.
fn watch(set: nix::sys::signal::SigSet) {
    loop {
        if !STARTED_PROCESSES.load(Ordering::Acquire) {
            // SAFETY: sigwaitinfo reads the set; no info is written (null).
            let signo = unsafe { libc::sigwaitinfo(set.as_ref(), std::ptr::null_mut()) };
            if signo == libc::SIGTERM {
                end_on_sigterm();
            }
            continue;
        }
        // With a cgroup the kernel keeps the exact peak: the processes are
        // read (for the sum of peaks and the anon/file split) every tenth
        // interval only.
        let every = if cgroup::with_current(|_| ()).is_some() { PROCESSES_EVERY } else { 1 };
        let ms = u64::from(INTERVAL_MS.load(Ordering::Acquire).max(1)) * every;
        let timeout = libc::timespec {
            tv_sec: (ms / 1000) as libc::time_t,
            tv_nsec: ((ms % 1000) * 1_000_000) as libc::c_long,
        };
        // SAFETY: sigtimedwait reads the set and the timeout, writes nothing (null info).
        let signo = unsafe { libc::sigtimedwait(set.as_ref(), std::ptr::null_mut(), &timeout) };
        if signo == libc::SIGTERM {
            end_on_sigterm();
        }
        if ACTIVE.load(Ordering::Acquire) {
            let mut seen = lock(&SEEN);
            if ACTIVE.load(Ordering::Acquire) {
                seen.sample();
            }
        }
    }
}

/// Kills and reaps the tree, removes the stage's cgroup, and exits 128 + 15.
fn end_on_sigterm() -> ! {
    kill_tree();
    cgroup::remove_current();
    std::process::exit(128 + libc::SIGTERM)
}

/// SIGKILLs every descendant and reaps it, until none is left, zombies
/// included (a zombie still holds the stage's cgroup); bounded.
fn kill_tree() {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        reap_exited();
        let left = descendants();
        if left.is_empty() || Instant::now() >= deadline {
            return;
        }
        let alive: Vec<i32> = left.into_iter().filter(|p| running(*p)).collect();
        signal_all(&alive, libc::SIGKILL);
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Set once this worker has started a process of its own (a command).
static STARTED_PROCESSES: AtomicBool = AtomicBool::new(false);

/// Called before a stage starts a process: from then on, sampling and
/// containment look for descendants, and the stage gets a memory cgroup
/// (where one can be made) that the process joins before it starts.
pub fn will_start_processes() {
    if !STARTED_PROCESSES.swap(true, Ordering::AcqRel) {
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

/// The sampler's interval, from the coordinator (`--sample-ms`).
pub fn sample_interval_ms() -> u32 {
    std::env::var(protocol::env::SAMPLE_MS)
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .filter(|ms| *ms >= 1)
        .unwrap_or(DEFAULT_SAMPLE_MS)
}

/// Every live descendant of this process (children, their children, …).
pub fn descendants() -> Vec<i32> {
    // A worker that never started a process has no descendant to look for
    // (its built-in stages use threads): sampling it reads only its own RSS.
    if !STARTED_PROCESSES.load(Ordering::Acquire) {
        return Vec::new();
    }
    let me = std::process::id() as i32;
    match children_of(me) {
        Some(first) => {
            let mut out = Vec::new();
            let mut todo = first;
            while let Some(pid) = todo.pop() {
                out.push(pid);
                todo.extend(children_of(pid).unwrap_or_default());
            }
            out
        }
        None => descendants_by_scan(me),
    }
}

/// The children of `pid`, from every one of its threads' `children` file;
/// None where the kernel has no such file.
fn children_of(pid: i32) -> Option<Vec<i32>> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut out = Vec::new();
    let mut any = false;
    for task in tasks.flatten() {
        let path = task.path().join("children");
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                any = true;
                out.extend(text.split_whitespace().filter_map(|p| p.parse::<i32>().ok()));
            }
            // The thread ended between the listing and the read.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && path.parent().is_some() => {
                any |= std::path::Path::new("/proc/self/task").exists();
            }
            Err(_) => {}
        }
    }
    any.then_some(out)
}

/// Descendants of `root` from one pass over every process's parent.
fn descendants_by_scan(root: i32) -> Vec<i32> {
    let mut parent: HashMap<i32, i32> = HashMap::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        if let Some((_, ppid)) = stat_state_ppid(pid) {
            parent.insert(pid, ppid);
        }
    }
    let mut out: Vec<i32> = Vec::new();
    for &pid in parent.keys() {
        let mut p = pid;
        for _ in 0..4096 {
            match parent.get(&p) {
                Some(&pp) if pp == root => {
                    out.push(pid);
                    break;
                }
                Some(&pp) if pp > 1 => p = pp,
                _ => break,
            }
        }
    }
    out
}

/// A process's state letter and parent pid, from `/proc/PID/stat`.
fn stat_state_ppid(pid: i32) -> Option<(char, i32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces: parse after it.
    let rest = &stat[stat.rfind(')')? + 2..];
    let mut it = rest.split_whitespace();
    let state = it.next()?.chars().next()?;
    let ppid = it.next()?.parse().ok()?;
    Some((state, ppid))
}

/// Whether `pid` is alive and not a zombie.
fn running(pid: i32) -> bool {
    stat_state_ppid(pid).is_some_and(|(state, _)| state != 'Z' && state != 'X')
}

/// `VmRSS` and `VmHWM` of a process, in bytes (zeros for a zombie).
fn rss_and_hwm(pid: Option<i32>) -> Option<(u64, u64)> {
    let path = match pid {
        Some(p) => format!("/proc/{p}/status"),
        None => "/proc/self/status".to_string(),
    };
    let status = std::fs::read_to_string(path).ok()?;
    let field = |name: &str| {
        status.lines().find_map(|l| l.strip_prefix(name)).and_then(|v| {
            v.trim().trim_end_matches("kB").trim().parse::<u64>().ok().map(|k| k * 1024)
        })
    };
    Some((field("VmRSS:").unwrap_or(0), field("VmHWM:").unwrap_or(0)))
}

/// What sampling saw: the largest sum of RSS at one instant, per process
/// its largest `VmHWM`, and with a cgroup the anonymous and file pages it
/// held when its charge was highest.
struct Seen {
    peak_sum: u64,
    hwm: BTreeMap<i32, u64>,
    samples: u64,
    /// The cgroup's highest charge seen, and its split then.
    charge: u64,
    split: Option<(u64, u64)>,
    /// The descendants the last sample found (zombies included).
    last: Vec<i32>,
}

/// With a cgroup (the kernel keeps the exact peak), every how many
/// intervals the tree thread reads the stage's processes.
const PROCESSES_EVERY: u64 = 10;

impl Seen {
    const fn new() -> Seen {
        Seen {
            peak_sum: 0,
            hwm: BTreeMap::new(),
            samples: 0,
            charge: 0,
            split: None,
            last: Vec::new(),
        }
    }

    fn sample_cgroup(&mut self) {
        // memory.stat is costly for the kernel to make: read only when the
        // charge reached a new high.
        if let Some((usage, split)) = cgroup::with_current(|c| {
            let usage = c.usage().unwrap_or(0);
            (usage, (usage > self.charge).then(|| c.anon_and_file()).flatten())
        }) {
            if usage > self.charge {
                self.charge = usage;
                self.split = split.or(self.split);
            }
        }
    }

    /// Everything: the cgroup's charge, and every process's RSS and peak.
    fn sample(&mut self) {
        self.sample_cgroup();
        let mut sum = own_rss().unwrap_or(0);
        self.last = descendants();
        for &pid in &self.last {
            if let Some((rss, hwm)) = rss_and_hwm(Some(pid)) {
                sum += rss;
                let e = self.hwm.entry(pid).or_default();
                *e = (*e).max(hwm);
            }
        }
        self.peak_sum = self.peak_sum.max(sum);
        self.samples += 1;
    }
}

/// This process's resident memory, from `/proc/self/statm` (cheaper for the
/// kernel to make than `status`).
fn own_rss() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf with a constant name.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
    Some(pages * page)
}

/// Whether a stage is being sampled, at what interval, and what it saw:
/// shared by the stage's thread and the tree thread ([`start_watcher`]).
static ACTIVE: AtomicBool = AtomicBool::new(false);
static INTERVAL_MS: AtomicU32 = AtomicU32::new(DEFAULT_SAMPLE_MS);
static SEEN: Mutex<Seen> = Mutex::new(Seen::new());

/// Sampling of one stage's tree, from [`Sampler::start`] until [`contain`].
pub struct Sampler {
    pub interval_ms: u32,
}

/// `sampled` forces the sampler even where a cgroup could be made (tests
/// cover both paths with it).
pub fn cgroups_allowed() -> bool {
    std::env::var(protocol::env::TREE_METHOD).as_deref() != Ok("sampled")
}

impl Sampler {
    /// Samples once now, then every `interval_ms` on the tree thread.
    pub fn start(interval_ms: u32) -> Sampler {
        let mut seen = lock(&SEEN);
        *seen = Seen::new();
        seen.sample();
        INTERVAL_MS.store(interval_ms.max(1), Ordering::Release);
        ACTIVE.store(true, Ordering::Release);
        Sampler { interval_ms }
    }

    /// Stops sampling after one last sample (the stage's end); hands over
    /// what was seen and the stage's cgroup, if a command made one.
    fn finish(self) -> (Seen, Option<Cgroup>) {
        let mut guard = lock(&SEEN);
        ACTIVE.store(false, Ordering::Release);
        let mut seen = std::mem::replace(&mut *guard, Seen::new());
        drop(guard);
        seen.sample();
        (seen, cgroup::take_current())
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Peaks of processes the worker reaped itself (a command's own process,
/// orphans), by pid: `ru_maxrss` from `wait4`.
static REAPED: Mutex<BTreeMap<i32, u64>> = Mutex::new(BTreeMap::new());

/// Waits for `pid`, a child of this process, keeping its peak for the tree's
/// sum of peaks. Returns its wait status.
pub fn wait_child(pid: i32) -> std::io::Result<i32> {
    loop {
        let mut status = 0;
        // SAFETY: wait4 writes only into the two locals it is given.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            lock(&REAPED).insert(pid, (usage.ru_maxrss.max(0) as u64) * 1024);
            return Ok(status);
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Reaps every child that has exited, without waiting; returns how many.
fn reap_exited() -> usize {
    let mut n = 0;
    loop {
        let mut status = 0;
        // SAFETY: as in wait_child.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let r = unsafe { libc::wait4(-1, &mut status, libc::WNOHANG, &mut usage) };
        if r <= 0 {
            return n;
        }
        lock(&REAPED).insert(r, (usage.ru_maxrss.max(0) as u64) * 1024);
        n += 1;
    }
}

/// The tree as the stage left it, once contained.
pub struct Contained {
    pub tree: protocol::TreeUsage,
}

/// Ends a stage's tree: stops the sampler, kills every descendant still
/// alive (naming it), reaps everything, and sums it up.
pub fn contain(sampler: Sampler) -> Contained {
    let interval_ms = sampler.interval_ms;
    let (seen, cgroup) = sampler.finish();
    let mut alive: Vec<i32> = seen.last.iter().copied().filter(|p| running(*p)).collect();
    let leaked: Vec<String> = alive.iter().filter_map(|p| comm(*p)).collect();
    if !alive.is_empty() {
        signal_all(&alive, libc::SIGTERM);
        let deadline = Instant::now() + LEAK_GRACE;
        while Instant::now() < deadline && !alive.is_empty() {
            reap_exited();
            std::thread::sleep(Duration::from_millis(5));
            alive = descendants().into_iter().filter(|p| running(*p)).collect();
        }
        // Whatever ignored SIGTERM, and whatever it started meanwhile.
        for _ in 0..100 {
            alive = descendants().into_iter().filter(|p| running(*p)).collect();
            if alive.is_empty() {
                break;
            }
            signal_all(&alive, libc::SIGKILL);
            std::thread::sleep(Duration::from_millis(5));
            reap_exited();
        }
    }
    // Zombies: killed ones, and orphans that exited during the stage.
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut left = !seen.last.is_empty();
    while left && Instant::now() < deadline {
        if reap_exited() == 0 {
            std::thread::sleep(Duration::from_millis(2));
        }
        left = !descendants().is_empty();
    }
    let own_hwm = rss_and_hwm(None).map(|(_, hwm)| hwm).unwrap_or(0);
    let mut peaks = seen.hwm;
    for (pid, maxrss) in std::mem::take(&mut *lock(&REAPED)) {
        let e = peaks.entry(pid).or_default();
        *e = (*e).max(maxrss);
    }
    let sampled = seen.peak_sum.max(own_hwm);
    // The kernel's peak of the processes the stage started (none: a stage
    // of the worker alone, or a command that could not join), plus the
    // worker's own. Not raised to the sampled sum, which counts a page
    // shared by several processes in each.
    let charged = cgroup.as_ref().and_then(Cgroup::peak).filter(|p| *p > 0);
    let (peak_bytes, method, split) = match charged {
        Some(p) => (p + own_hwm, "cgroup", seen.split),
        None => (sampled, "sampled", None),
    };
    if let Some(c) = cgroup {
        c.remove();
    }
    Contained {
        tree: protocol::TreeUsage {
            peak_bytes,
            method: method.into(),
            sample_ms: interval_ms,
            sum_of_peaks_bytes: own_hwm + peaks.values().sum::<u64>(),
            leaked,
            anon_bytes: split.map(|s| s.0),
            file_bytes: split.map(|s| s.1),
        },
    }
}

fn signal_all(pids: &[i32], signal: i32) {
    for &p in pids {
        // SAFETY: kill with a pid and a signal number; failure (already gone) is fine.
        unsafe { libc::kill(p, signal) };
    }
}

/// A process's short command name (at most 15 bytes, no path, no argument).
fn comm(pid: i32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).ok().map(|s| s.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One test, in turn: `contain` kills and reaps every descendant of the
    /// test process, so a second test's child would be a casualty.
    #[test]
    fn children_are_found_both_ways_and_a_leftover_is_killed_named_and_reaped() {
        will_start_processes();
        let mut child = std::process::Command::new("sleep").arg("5").spawn().unwrap();
        let pid = child.id() as i32;
        let me = std::process::id() as i32;
        assert!(descendants_by_scan(me).contains(&pid));
        assert!(descendants().contains(&pid));
        child.kill().unwrap();
        child.wait().unwrap();

        become_subreaper().unwrap();
        let sampler = Sampler::start(5);
        // A child that outlives the "stage": it must be found, killed, named
        // (and reaped by `contain`, not by this handle).
        #[allow(clippy::zombie_processes)]
        let child = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let pid = child.id() as i32;
        std::thread::sleep(Duration::from_millis(30));
        let c = contain(sampler);
        assert_eq!(c.tree.leaked, vec!["sleep".to_string()]);
        assert!(!running(pid), "the leftover child is still alive");
        assert!(stat_state_ppid(pid).is_none(), "the leftover child was not reaped");
        assert!(c.tree.peak_bytes > 0 && c.tree.sum_of_peaks_bytes >= c.tree.peak_bytes);
        assert_eq!(c.tree.method, "sampled");
    }
}
