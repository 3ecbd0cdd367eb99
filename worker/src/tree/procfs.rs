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

/// A child of this worker that is no part of any stage's tree (py-spy
/// beside a sampled command; 0: none): never sampled, counted or killed
/// as the tree's.
static OUTSIDE: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// Sets (or, with None, clears) the child that is outside the tree.
pub fn outside_the_tree(pid: Option<i32>) {
    OUTSIDE.store(pid.unwrap_or(0), Ordering::Release);
}

fn is_outside(pid: i32) -> bool {
    pid != 0 && OUTSIDE.load(Ordering::Acquire) == pid
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
                if is_outside(pid) {
                    continue;
                }
                out.push(pid);
                todo.extend(children_of(pid).unwrap_or_default());
            }
            out
        }
        None => descendants_by_scan(me).into_iter().filter(|p| !is_outside(*p)).collect(),
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
/// kernel to make than `status`), kept open.
pub(super) fn own_rss() -> Option<u64> {
    static STATM: std::sync::OnceLock<Option<std::fs::File>> = std::sync::OnceLock::new();
    let file = STATM.get_or_init(|| std::fs::File::open("/proc/self/statm").ok()).as_ref()?;
    let mut buf = Vec::new();
    pread_all(file, &mut buf)?;
    let statm = std::str::from_utf8(&buf).ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf with a constant name.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
    Some(pages * page)
}

/// A process's short command name (at most 15 bytes, no path, no argument).
pub(super) fn comm(pid: i32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).ok().map(|s| s.trim().to_string())
}

/// The tree's /proc files, kept open across samples: re-reading an open
/// procfs file (`pread` at offset 0 makes the kernel generate it afresh)
/// skips the path walk that `open` costs, which was most of a sample. A file
/// of a process that ended reads as an error, even if its pid was reused
/// since, and its entry is dropped.
pub(super) struct OpenProcs {
    procs: std::collections::BTreeMap<i32, Open>,
    /// This worker's own threads' `children` files.
    root: Vec<std::fs::File>,
    /// Samples taken; threads are listed afresh every [`RELIST_EVERY`].
    samples: u64,
    /// Kept across samples, so a sample allocates nothing once warm.
    buf: Vec<u8>,
    todo: Vec<i32>,
    out: Vec<(i32, u64)>,
}

struct Open {
    statm: std::fs::File,
    /// Each thread's `children` file (threads listed every few samples).
    children: Vec<std::fs::File>,
}

/// Every how many samples a process's threads are listed again (a thread
/// started since may fork).
const RELIST_EVERY: u64 = 10;

/// Reads an open procfs file afresh; None when its process is gone. One
/// `pread` when the file fits the buffer (a procfs file is generated whole
/// for each read, so asking again for its end would make it twice).
fn pread_all(f: &std::fs::File, buf: &mut Vec<u8>) -> Option<()> {
    use std::os::unix::fs::FileExt;
    buf.clear();
    buf.resize(buf.capacity().max(4096), 0);
    let mut len = 0;
    loop {
        let n = f.read_at(&mut buf[len..], len as u64).ok()?;
        len += n;
        if n == 0 || len < buf.len() {
            break;
        }
        buf.resize(len * 2, 0);
    }
    buf.truncate(len);
    Some(())
}

impl OpenProcs {
    pub(super) const fn new() -> OpenProcs {
        OpenProcs {
            procs: std::collections::BTreeMap::new(),
            root: Vec::new(),
            samples: 0,
            buf: Vec::new(),
            todo: Vec::new(),
            out: Vec::new(),
        }
    }

    fn open(pid: i32) -> Option<Open> {
        let statm = std::fs::File::open(format!("/proc/{pid}/statm")).ok()?;
        Some(Open { statm, children: thread_children(pid) })
    }

    /// Every descendant of this worker (zombies too, at 0 bytes) and its
    /// resident bytes, walking the tree through the open `children` files;
    /// None where the kernel has no such files.
    pub(super) fn sample(&mut self) -> Option<&[(i32, u64)]> {
        let relist = self.samples % RELIST_EVERY == 0;
        self.samples += 1;
        if relist {
            self.root = thread_children(std::process::id() as i32);
        }
        if self.root.is_empty() {
            return None;
        }
        // SAFETY: sysconf with a constant name.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
        let mut buf = std::mem::take(&mut self.buf);
        let mut todo = std::mem::take(&mut self.todo);
        let mut out = std::mem::take(&mut self.out);
        todo.clear();
        out.clear();
        read_children(&self.root, &mut buf, &mut todo);
        while let Some(pid) = todo.pop() {
            // A tree has no cycles; a pid seen twice (reused meanwhile) is skipped.
            if is_outside(pid) || out.iter().any(|(p, _)| *p == pid) {
                continue;
            }
            if let std::collections::btree_map::Entry::Vacant(e) = self.procs.entry(pid) {
                match Self::open(pid) {
                    Some(o) => {
                        e.insert(o);
                    }
                    None => continue,
                }
            }
            let open = self.procs.get_mut(&pid).expect("inserted above");
            let rss = pread_all(&open.statm, &mut buf).and_then(|_| {
                std::str::from_utf8(&buf).ok()?.split_whitespace().nth(1)?.parse::<u64>().ok()
            });
            let Some(pages) = rss else {
                self.procs.remove(&pid);
                continue;
            };
            out.push((pid, pages * page));
            if relist {
                open.children = thread_children(pid);
            }
            read_children(&open.children, &mut buf, &mut todo);
        }
        self.procs.retain(|pid, _| out.iter().any(|(p, _)| p == pid));
        (self.buf, self.todo, self.out) = (buf, todo, out);
        Some(&self.out)
    }
}

/// Adds the pids listed in open `children` files to `out`.
fn read_children(files: &[std::fs::File], buf: &mut Vec<u8>, out: &mut Vec<i32>) {
    for f in files {
        if pread_all(f, buf).is_some() {
            if let Ok(text) = std::str::from_utf8(buf) {
                out.extend(text.split_whitespace().filter_map(|p| p.parse::<i32>().ok()));
            }
        }
    }
}

/// Each of `pid`'s threads' `children` file, opened.
fn thread_children(pid: i32) -> Vec<std::fs::File> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return Vec::new() };
    tasks.flatten().filter_map(|t| std::fs::File::open(t.path().join("children")).ok()).collect()
}
