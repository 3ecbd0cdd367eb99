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
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
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

/// Makes SIGTERM end this worker's whole tree: the signal is blocked here
/// (so every thread started later inherits the block), and a thread of its
/// own waits for it, SIGKILLs every descendant, reaps them, and exits with
/// 128 + 15. A stage that timed out or was cancelled (the coordinator sends
/// its worker's group SIGTERM) so leaves nothing behind, daemons that left
/// the group included; so does a worker whose coordinator died (its
/// parent-death signal is SIGTERM). Call early in `main`, while the
/// process has one thread. A command's processes start with an empty signal
/// mask (std resets it in the child).
pub fn contain_on_termination() {
    use nix::sys::signal::{SigSet, Signal};
    let mut set = SigSet::empty();
    set.add(Signal::SIGTERM);
    if set.thread_block().is_err() {
        return;
    }
    let spawned = std::thread::Builder::new().name("tree-on-sigterm".into()).spawn(move || {
        if set.wait().is_ok() {
            kill_tree();
            cgroup::remove_current();
            std::process::exit(128 + libc::SIGTERM);
        }
    });
    if spawned.is_err() {
        // Without the waiting thread, SIGTERM must still end the worker.
        let _ = set.thread_unblock();
    }
}

/// SIGKILLs every descendant until none is left (bounded), reaping as it goes.
fn kill_tree() {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let alive: Vec<i32> = descendants().into_iter().filter(|p| running(*p)).collect();
        reap_exited();
        if alive.is_empty() || Instant::now() >= deadline {
            return;
        }
        signal_all(&alive, libc::SIGKILL);
        std::thread::sleep(Duration::from_millis(2));
    }
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
#[derive(Default)]
struct Seen {
    peak_sum: u64,
    hwm: BTreeMap<i32, u64>,
    samples: u64,
    split: Option<(u64, u64)>,
}

impl Seen {
    fn sample(&mut self, cgroup: Option<&Cgroup>) {
        if let Some((anon, file)) = cgroup.and_then(Cgroup::anon_and_file) {
            if self.split.is_none_or(|(a, f)| anon + file > a + f) {
                self.split = Some((anon, file));
            }
        }
        let own = rss_and_hwm(None).unwrap_or((0, 0)).0;
        let mut sum = own;
        for pid in descendants() {
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

/// A thread sampling the tree until [`contain`] stops it.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<Seen>>,
    thread: Option<std::thread::JoinHandle<()>>,
    pub interval_ms: u32,
    cgroup: Option<Arc<Cgroup>>,
}

/// `sampled` forces the sampler even where a cgroup could be made (tests
/// cover both paths with it).
pub fn cgroups_allowed() -> bool {
    std::env::var(protocol::env::TREE_METHOD).as_deref() != Ok("sampled")
}

impl Sampler {
    /// Samples once now, then every `interval_ms` on a thread of its own.
    pub fn start(interval_ms: u32) -> Sampler {
        let cgroup = cgroups_allowed().then(Cgroup::create).flatten().map(Arc::new);
        let seen = Arc::new(Mutex::new(Seen::default()));
        lock(&seen).sample(cgroup.as_deref());
        let stop = Arc::new(AtomicBool::new(false));
        let (s, t, cg) = (stop.clone(), seen.clone(), cgroup.clone());
        let interval = Duration::from_millis(u64::from(interval_ms.max(1)));
        let thread = std::thread::Builder::new()
            .name("tree-sampler".into())
            .spawn(move || {
                let mut next = Instant::now() + interval;
                while !s.load(Ordering::Acquire) {
                    std::thread::park_timeout(next.saturating_duration_since(Instant::now()));
                    if s.load(Ordering::Acquire) {
                        break;
                    }
                    if Instant::now() >= next {
                        lock(&t).sample(cg.as_deref());
                        next += interval;
                    }
                }
            })
            .ok();
        Sampler { stop, seen, thread, interval_ms, cgroup }
    }

    /// Stops the thread after one last sample (the stage's end).
    fn finish(mut self) -> (Seen, Option<Cgroup>) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
        let cgroup = self.cgroup.take().and_then(|c| Arc::try_unwrap(c).ok());
        let mut seen = std::mem::take(&mut *lock(&self.seen));
        seen.sample(cgroup.as_ref());
        (seen, cgroup)
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
    let mut alive: Vec<i32> = descendants().into_iter().filter(|p| running(*p)).collect();
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
    while !descendants().is_empty() && Instant::now() < deadline {
        if reap_exited() == 0 {
            std::thread::sleep(Duration::from_millis(2));
        }
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
    // worker's own; never below what sampling saw.
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
