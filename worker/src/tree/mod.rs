//! A stage's process tree, measured whole and contained.
//!
//! The worker makes itself a child subreaper ([`become_subreaper`]), so a
//! descendant whose parent exits comes back to the worker instead of to
//! init. Where it can, the worker makes a memory cgroup for each stage
//! (`cgroup`) that a command joins before it starts: the kernel's peak
//! charge is then the tree's peak. A [`Sampler`] reads the resident memory
//! of the worker and of every live descendant at the stage's start and end,
//! and the worker's one tree thread (`watcher`) in between at the declared
//! interval: their sum's maximum is the `sampled` peak, never below the
//! worker's own `VmHWM`; it misses a peak between two samples and counts a
//! page shared by several processes in each (PSS would not, but reading it
//! walks page tables: about 2 ms for a 100 MiB process). Each process's own
//! high-water mark (`VmHWM` as last read, every `STATUS_EVERY` samples and at
//! the stage's start and end, raised by its sampled RSS; or `ru_maxrss` when the worker
//! reaped it) summed gives the upper bound. When the stage ends, [`contain`] kills every descendant still
//! alive (SIGTERM, a grace, SIGKILL), reaps it and every orphan that already
//! exited, and names them by `comm` (never a path or an argument). Reaping
//! is what puts an orphan's CPU time into the worker's `RUSAGE_CHILDREN`,
//! so it must happen before the stage's CPU is read.
//!
//! `procfs` reads /proc; `watcher` is the tree thread (SIGTERM, samples);
//! `cgroup` the stage's memory cgroup.

mod cgroup;
pub mod io;
mod procfs;
mod watcher;

pub use cgroup::enter as enter_stage_cgroup;
pub use procfs::{descendants, outside_the_tree};
pub use watcher::{remove_if_killed, removed, start_watcher, will_start_processes};

use cgroup::Cgroup;
use procfs::{comm, own_rss, rss_and_hwm, running};
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// How long a leaked descendant gets between SIGTERM and SIGKILL.
pub const LEAK_GRACE: Duration = Duration::from_millis(200);
/// The sampler's interval when the coordinator did not give one.
pub const DEFAULT_SAMPLE_MS: u32 = protocol::env::DEFAULT_SAMPLE_MS;

/// Makes this process the subreaper of everything it starts.
pub fn become_subreaper() -> std::io::Result<()> {
    // SAFETY: prctl with integer arguments only.
    let r = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    if r == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
}

/// The sampler's interval, from the coordinator (`--sample-ms`).
pub fn sample_interval_ms() -> u32 {
    std::env::var(protocol::env::SAMPLE_MS)
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .filter(|ms| *ms >= 1)
        .unwrap_or(DEFAULT_SAMPLE_MS)
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
    /// The tree's /proc files, open across samples.
    open: procfs::OpenProcs,
}

/// Every how many samples each process's `VmHWM` is read (its `status`
/// costs the kernel several times what `statm` does); in between, its
/// sampled RSS raises its peak, and the stage's first and last samples
/// read it. A process that ends between two reads and that the worker does
/// not reap itself keeps the peak last read or sampled.
const STATUS_EVERY: u64 = 50;

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
            open: procfs::OpenProcs::new(),
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

    /// Everything: the cgroup's charge, and every process's RSS and peak
    /// (its `VmHWM` when `all_peaks`, when first seen, and every
    /// [`STATUS_EVERY`] samples).
    fn sample(&mut self, all_peaks: bool) {
        self.sample_cgroup();
        let mut sum = own_rss().unwrap_or(0);
        let read_peaks = all_peaks || self.samples % STATUS_EVERY == 0;
        match self.open.sample() {
            Some(procs) => {
                self.last = procs.iter().map(|p| p.0).collect();
                for &(pid, rss) in procs {
                    sum += rss;
                    let hwm = match read_peaks {
                        true => rss_and_hwm(Some(pid)).map_or(0, |(_, hwm)| hwm),
                        false => 0,
                    };
                    let e = self.hwm.entry(pid).or_default();
                    *e = (*e).max(hwm).max(rss);
                }
            }
            // No `children` files: find the tree and read each process anew.
            None => {
                self.last = descendants();
                for &pid in &self.last {
                    if let Some((rss, hwm)) = rss_and_hwm(Some(pid)) {
                        sum += rss;
                        let e = self.hwm.entry(pid).or_default();
                        *e = (*e).max(hwm);
                    }
                }
            }
        }
        self.peak_sum = self.peak_sum.max(sum);
        self.samples += 1;
    }
}

/// Whether a stage is being sampled, at what interval, and what it saw:
/// shared by the stage's thread and the tree thread ([`start_watcher`]).
static ACTIVE: AtomicBool = AtomicBool::new(false);
static INTERVAL_MS: AtomicU32 = AtomicU32::new(DEFAULT_SAMPLE_MS);
static SEEN: Mutex<Seen> = Mutex::new(Seen::new());

/// The current stage's interval, in milliseconds.
fn interval_ms() -> u32 {
    INTERVAL_MS.load(Ordering::Acquire).max(1)
}

/// One of the tree thread's samples, if a stage is being sampled.
fn sample_tick() {
    if ACTIVE.load(Ordering::Acquire) {
        let mut seen = lock(&SEEN);
        if ACTIVE.load(Ordering::Acquire) {
            seen.sample(false);
        }
    }
}

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
        seen.sample(true);
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
        seen.sample(true);
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

/// A peak the process `pid` of the current stage reached that its own
/// high-water mark may no longer show (a stage span reset it through
/// `/proc/self/clear_refs`): kept for the tree's sum of peaks.
pub fn raise_peak(pid: i32, bytes: u64) {
    let mut own = lock(&RAISED);
    let e = own.entry(pid).or_default();
    *e = (*e).max(bytes);
}

/// Peaks a process said it reached (see [`raise_peak`]), by pid.
static RAISED: Mutex<BTreeMap<i32, u64>> = Mutex::new(BTreeMap::new());

/// Each process's own peak: what sampling read of it (`sampled`), raised to
/// the `ru_maxrss` its reaping gave (`reaped`) except where that is another
/// process's. `wait4` gives the largest of the process and the children it
/// waited for, so `sh -c 'python …'` (a shell that forks) reports the
/// Python's peak as its own: where a reaped process's `ru_maxrss` exceeds
/// its sampled peak by no more than another process's peak, the excess is
/// taken to be that process's, counted once, there. Then the peaks the
/// processes said they reached (`raised`).
fn own_peaks(
    sampled: BTreeMap<i32, u64>,
    reaped: BTreeMap<i32, u64>,
    raised: BTreeMap<i32, u64>,
) -> BTreeMap<i32, u64> {
    let mut peaks = sampled.clone();
    for (pid, maxrss) in reaped {
        let seen = sampled.get(&pid).copied().unwrap_or(0);
        let excess = maxrss.saturating_sub(seen);
        let another = sampled.iter().any(|(p, peak)| *p != pid && *peak >= excess);
        let e = peaks.entry(pid).or_default();
        if seen == 0 || excess == 0 || !another {
            *e = (*e).max(maxrss);
        }
    }
    for (pid, bytes) in raised {
        let e = peaks.entry(pid).or_default();
        *e = (*e).max(bytes);
    }
    peaks
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
    let reaped = std::mem::take(&mut *lock(&REAPED));
    let peaks = own_peaks(seen.hwm, reaped, std::mem::take(&mut *lock(&RAISED)));
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

/// SIGKILL to every live descendant, again until none is left (a process
/// may fork while the others die); reaps nothing, so the caller can still
/// wait for its own child.
pub fn kill_tree() {
    for _ in 0..1000 {
        let alive: Vec<i32> = descendants().into_iter().filter(|p| running(*p)).collect();
        if alive.is_empty() {
            return;
        }
        signal_all(&alive, libc::SIGKILL);
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn signal_all(pids: &[i32], signal: i32) {
    for &p in pids {
        // SAFETY: kill with a pid and a signal number; failure (already gone) is fine.
        unsafe { libc::kill(p, signal) };
    }
}

#[cfg(test)]
mod tests {
    use super::procfs::{descendants_by_scan, stat_state_ppid};
    use super::*;

    #[test]
    fn a_shell_that_waited_for_its_child_does_not_count_the_childs_peak_again() {
        let map = |v: &[(i32, u64)]| v.iter().copied().collect::<BTreeMap<i32, u64>>();
        // sh (pid 1, sampled at 2 MB) forked python (2, 329 MB) and waited
        // for it: wait4 gives sh the python's 329 MB.
        let peaks = own_peaks(map(&[(1, 2), (2, 329)]), map(&[(1, 329)]), map(&[]));
        assert_eq!(peaks.values().sum::<u64>(), 331);
        // A process alone whose peak came between two samples: its own.
        let peaks = own_peaks(map(&[(2, 300), (3, 3)]), map(&[(2, 329)]), map(&[]));
        assert_eq!(peaks[&2], 329);
        // Never sampled (it lived between two samples): what wait4 said.
        assert_eq!(own_peaks(map(&[]), map(&[(4, 7)]), map(&[]))[&4], 7);
        // A peak a stage span saw before it reset the mark stays.
        assert_eq!(own_peaks(map(&[(2, 300)]), map(&[]), map(&[(2, 500)]))[&2], 500);
    }

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

        // A pid that is no child of this process: an error, not a wait
        // that never ends.
        assert!(wait_child(i32::MAX).is_err());

        become_subreaper().unwrap();
        let sampler = Sampler::start(7);
        assert_eq!(interval_ms(), 7, "the tree thread samples at the stage's interval");
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
