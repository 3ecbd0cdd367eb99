//! Exclusive locks on the directories a run writes into and a second run
//! must not share: a `--state` directory, a campaign's `scratch`. The lock
//! is `flock` on `.stagebench.lock` inside the directory (a dot-file, so no
//! digest of the directory sees it), held for as long as the [`DirLock`]
//! lives. The kernel drops it with its holder, so a SIGKILL leaves no stale
//! lock; the holder's pid is written into the file only to name it.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::path::Path;

/// The lock file's name inside a locked directory.
pub const LOCK_FILE: &str = ".stagebench.lock";

/// A held lock; dropping it (or the process ending) releases it.
#[derive(Debug)]
pub struct DirLock {
    _file: File,
}

/// Why a directory's lock was not taken. Either way the run is refused
/// before it starts.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("{what} {dir} is in use by another stagebench run ({holder}); two runs never share it")]
    InUse { what: String, dir: String, holder: String },
    #[error("{what} {dir}: cannot {doing}: {source}")]
    Io { what: String, dir: String, doing: &'static str, source: std::io::Error },
}

/// Takes the lock of `dir` (an existing directory) for `what` (e.g.
/// `--state`), or says in one line which process holds it.
pub fn lock(dir: &Path, what: &str) -> Result<DirLock, LockError> {
    let io = |doing, source| LockError::Io {
        what: what.to_string(),
        dir: dir.display().to_string(),
        doing,
        source,
    };
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(dir.join(LOCK_FILE))
        .map_err(|e| io("open its lock file", e))?;
    // SAFETY: flock on a descriptor this function owns.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EWOULDBLOCK) {
            return Err(io("lock it", e));
        }
        let mut holder = String::new();
        let _ = file.read_to_string(&mut holder);
        let holder = match holder.trim() {
            "" => "another process".to_string(),
            pid => format!("pid {pid}"),
        };
        return Err(LockError::InUse {
            what: what.to_string(),
            dir: dir.display().to_string(),
            holder,
        });
    }
    // Ours now: say who holds it.
    let _ = file.set_len(0);
    let _ = file.rewind();
    let _ = write!(file, "{}", std::process::id());
    Ok(DirLock { _file: file })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_lock_refuses_a_second_holder_until_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let first = lock(dir.path(), "--state").unwrap();
        // flock locks belong to the open file description: a second open
        // in the same process conflicts as another process's would.
        let e = lock(dir.path(), "--state").unwrap_err();
        assert!(matches!(e, LockError::InUse { .. }), "{e}");
        let e = e.to_string();
        assert!(e.contains(&format!("pid {}", std::process::id())), "{e}");
        assert!(e.contains("is in use by another stagebench run"), "{e}");
        drop(first);
        lock(dir.path(), "--state").unwrap();
    }

    /// A holder with a longer pid left its number in the file: the next
    /// holder's pid replaces it whole, so the refusal names exactly it.
    #[test]
    fn the_holders_pid_replaces_a_longer_one_whole() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(LOCK_FILE), "98765432109876").unwrap();
        let _held = lock(dir.path(), "--state").unwrap();
        let pid = std::process::id().to_string();
        assert_eq!(std::fs::read_to_string(dir.path().join(LOCK_FILE)).unwrap(), pid);
        let e = lock(dir.path(), "--state").unwrap_err();
        assert!(matches!(e, LockError::InUse { .. }), "{e}");
        let e = e.to_string();
        assert!(e.contains(&format!("(pid {pid})")), "{e}");
    }
}
