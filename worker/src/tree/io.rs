//! A stage's storage and system-call I/O, for its whole tree, from Linux's
//! task I/O accounting.
//!
//! `/proc/self/io` sums this process's threads and every child it reaped:
//! when a parent reaps a child, the kernel adds the child's counters, and
//! those of the children the child reaped, to the parent's. The worker is
//! the subreaper of everything a stage starts and reaps it all before the
//! stage's end is read ([`super::contain`]), so the difference of two reads
//! is the tree's, short-lived processes included, with nothing sampled.
//!
//! What the worker does itself during the stage counts too: a built-in
//! stage is the worker's own work, and a command stage's worker adds its
//! reads of the spans file and its messages to the coordinator (bytes in
//! `rchar`/`wchar`, calls in `syscr`/`syscw`; never storage). The tree
//! thread's reads of /proc, which grow with the sampling rate, are taken
//! out: its own counters (`/proc/self/task/TID/io`) are subtracted.
//!
//! The cgroup's `io.stat` is not used: it counts block I/O only (no
//! `rchar`, `syscr`), counts writes when they are written back (often
//! after the stage ended), and misses the worker's own reads in a built-in
//! stage.

use std::sync::atomic::Ordering;

/// The six counters at one instant.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    read_bytes: u64,
    write_bytes: u64,
    rchar: u64,
    wchar: u64,
    syscr: u64,
    syscw: u64,
}

/// The tree's counters now: this process's, less its tree thread's own.
pub fn now() -> Option<Counters> {
    let own = read("/proc/self/io")?;
    let tid = super::watcher::WATCHER_TID.load(Ordering::Acquire);
    let tree_thread = match tid > 0 {
        true => read(&format!("/proc/self/task/{tid}/io")).unwrap_or_default(),
        false => Counters::default(),
    };
    Some(own.minus(&tree_thread))
}

impl Counters {
    /// `self - earlier`, counter by counter (never below zero).
    pub fn minus(&self, earlier: &Counters) -> Counters {
        Counters {
            read_bytes: self.read_bytes.saturating_sub(earlier.read_bytes),
            write_bytes: self.write_bytes.saturating_sub(earlier.write_bytes),
            rchar: self.rchar.saturating_sub(earlier.rchar),
            wchar: self.wchar.saturating_sub(earlier.wchar),
            syscr: self.syscr.saturating_sub(earlier.syscr),
            syscw: self.syscw.saturating_sub(earlier.syscw),
        }
    }

    /// As a measurement carries them.
    pub fn measured(&self) -> protocol::Io {
        protocol::Io {
            method: "procfs".into(),
            read_bytes: self.read_bytes,
            write_bytes: self.write_bytes,
            rchar: self.rchar,
            wchar: self.wchar,
            syscr: self.syscr,
            syscw: self.syscw,
        }
    }
}

/// The tree's I/O from `start` to `end`, where both could be read.
pub fn between(start: Option<Counters>, end: Option<Counters>) -> Option<protocol::Io> {
    Some(end?.minus(&start?).measured())
}

/// The counters of an `io` file; None where it cannot be read (a kernel
/// without task I/O accounting) or lacks one of the six.
fn read(path: &str) -> Option<Counters> {
    parse(&std::fs::read_to_string(path).ok()?)
}

fn parse(text: &str) -> Option<Counters> {
    let get = |key: &str| {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k == key).then(|| v.trim().parse::<u64>().ok()).flatten()
        })
    };
    Some(Counters {
        read_bytes: get("read_bytes")?,
        write_bytes: get("write_bytes")?,
        rchar: get("rchar")?,
        wchar: get("wchar")?,
        syscr: get("syscr")?,
        syscw: get("syscw")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_io_file_is_read_by_name_and_a_missing_counter_is_none() {
        let text = "rchar: 10\nwchar: 20\nsyscr: 3\nsyscw: 4\nread_bytes: 4096\nwrite_bytes: 8192\ncancelled_write_bytes: 0\n";
        let io = parse(text).unwrap();
        assert_eq!(
            (io.rchar, io.wchar, io.syscr, io.syscw, io.read_bytes, io.write_bytes),
            (10, 20, 3, 4, 4096, 8192)
        );
        assert!(parse("rchar: 10\nwchar: 20\n").is_none());
        let earlier = parse(&text.replace("rchar: 10", "rchar: 4")).unwrap();
        let d = io.minus(&earlier);
        assert_eq!((d.rchar, d.read_bytes), (6, 0));
        assert_eq!(earlier.minus(&io).rchar, 0, "never below zero");
    }

    /// The kernel folds a reaped child's counters into its parent's: a
    /// child that writes 1 MiB through `dd` shows in this process's own
    /// file once waited for.
    #[test]
    fn a_reaped_childs_writes_count_in_the_parents_counters() {
        let before = now().expect("this kernel keeps task I/O accounting");
        let status = std::process::Command::new("dd")
            .args(["if=/dev/zero", "of=/dev/null", "bs=64k", "count=16", "status=none"])
            .status()
            .unwrap();
        assert!(status.success());
        let d = now().unwrap().minus(&before);
        assert!(d.wchar >= 1 << 20, "the child's 1 MiB written is not counted: {d:?}");
        assert!(d.syscw >= 16, "{d:?}");
    }
}
