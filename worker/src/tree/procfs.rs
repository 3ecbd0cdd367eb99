//! What /proc says about this worker's tree: its descendants (through
//! `/proc/PID/task/TID/children`, or one scan of every `/proc/PID/stat`
//! where the kernel has no such file), their state, resident memory,
//! high-water marks and short command names.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once this worker has started a process of its own (a command):
/// until then it has no descendant to look for.
static STARTED_PROCESSES: AtomicBool = AtomicBool::new(false);

/// Records that a stage is about to start a process; true the first time.
pub(super) fn note_started_processes() -> bool {
    !STARTED_PROCESSES.swap(true, Ordering::AcqRel)
}

/// Whether this worker ever started a process.
pub(super) fn started_processes() -> bool {
    STARTED_PROCESSES.load(Ordering::Acquire)
}

/// Every live descendant of this process (children, their children, …).
pub fn descendants() -> Vec<i32> {
    // A worker that never started a process has no descendant to look for
    // (its built-in stages use threads): sampling it reads only its own RSS.
    if !started_processes() {
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
pub(super) fn children_of(pid: i32) -> Option<Vec<i32>> {
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
pub(super) fn descendants_by_scan(root: i32) -> Vec<i32> {
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
pub(super) fn stat_state_ppid(pid: i32) -> Option<(char, i32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces: parse after it.
    let rest = &stat[stat.rfind(')')? + 2..];
    let mut it = rest.split_whitespace();
    let state = it.next()?.chars().next()?;
    let ppid = it.next()?.parse().ok()?;
    Some((state, ppid))
}

/// Whether `pid` is alive and not a zombie.
pub(super) fn running(pid: i32) -> bool {
    stat_state_ppid(pid).is_some_and(|(state, _)| state != 'Z' && state != 'X')
}

/// `VmRSS` and `VmHWM` of a process, in bytes (zeros for a zombie).
pub(super) fn rss_and_hwm(pid: Option<i32>) -> Option<(u64, u64)> {
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

/// This process's resident memory, from `/proc/self/statm` (cheaper for the
/// kernel to make than `status`).
pub(super) fn own_rss() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf with a constant name.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
    Some(pages * page)
}

/// A process's short command name (at most 15 bytes, no path, no argument).
pub(super) fn comm(pid: i32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).ok().map(|s| s.trim().to_string())
}
