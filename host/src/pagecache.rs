//! `--os-cache cold`: a phase's declared inputs dropped from the page cache
//! before it starts, and proof of how much left.
//!
//! Each input file is opened read-only and given
//! `posix_fadvise(POSIX_FADV_DONTNEED)` over its whole length, which needs
//! no privilege: the kernel drops the file's clean pages that no process
//! has mapped. What stays resident is then counted with `mincore` over a
//! read-only mapping of the file (which faults nothing in), so an eviction
//! that could not work says so instead of passing for cold. The kernel
//! tells residency only to a user who owns a file or may write it (to
//! anyone else `mincore` says every page is resident): for such a user the
//! residency is unknown and said to be, never taken for resident: tmpfs and
//! ramfs keep every page (they have no storage behind them), dirty pages
//! stay until written back, and a page another process maps stays.
//!
//! What the phase then read from storage is the workers' `read_bytes`
//! (see `protocol::Io`), set against the inputs' size by the mode.

use std::os::fd::AsRawFd;
use std::path::Path;

/// A phase's declared inputs: the files it reads, and whether they are
/// dropped from the page cache before it starts.
#[derive(Clone, Debug)]
pub struct Inputs {
    pub files: Vec<std::path::PathBuf>,
    pub evict: bool,
}

impl Inputs {
    /// Their bytes now (a file that cannot be read counts none).
    pub fn bytes(&self) -> u64 {
        self.files.iter().filter_map(|f| std::fs::metadata(f).ok()).map(|m| m.len()).sum()
    }
}

use report::rundir::report::Eviction;

/// Drops `files` from the page cache, as far as the kernel allows, and
/// counts what stayed.
pub fn evict(files: &[impl AsRef<Path>]) -> Eviction {
    let mut e = Eviction::default();
    for path in files {
        e.files += 1;
        let file = match std::fs::File::open(path.as_ref()) {
            Ok(f) => f,
            Err(_) => {
                e.failed_files += 1;
                continue;
            }
        };
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        e.bytes += len;
        let memory = memory_file_system(&file);
        // tmpfs and ramfs keep every page.
        let probe = |file: &std::fs::File| match memory {
            Some(_) => Some(len),
            None => resident_bytes(file, len),
        };
        if e.memory_file_system.is_none() {
            e.memory_file_system = memory.clone();
        }
        let before = probe(&file);
        // SAFETY: posix_fadvise on a descriptor we own; length 0 means to the end.
        let r = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        if r != 0 {
            e.failed_files += 1;
        }
        match (before, probe(&file)) {
            (Some(before), Some(after)) => {
                e.resident_before_bytes += before;
                e.resident_after_bytes += after;
            }
            _ => e.unknown_files += 1,
        }
    }
    e
}

/// Bytes of the file in the page cache now (`mincore` over a read-only
/// shared mapping; mapping and asking fault nothing in). None where the
/// kernel would not tell: `mincore` reports every page of a file as
/// resident unless the caller owns it, may write it, or is privileged
/// (a side channel closed in Linux 5.2), so for anyone else the
/// residency is unknown, never taken for resident. (A read with
/// `RWF_NOWAIT`, which any reader may make, starts the read-ahead it
/// probes for; `cachestat` has `mincore`'s rule.)
pub fn resident_bytes(file: &std::fs::File, len: u64) -> Option<u64> {
    if len == 0 {
        return Some(0);
    }
    if !kernel_tells_residency(file) {
        return None;
    }
    // SAFETY: sysconf has no memory effects.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
    let pages = len.div_ceil(page) as usize;
    // SAFETY: a fresh read-only shared mapping of a file we hold open,
    // unmapped below; nothing reads through it.
    let addr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len as usize,
            libc::PROT_READ,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        )
    };
    if addr == libc::MAP_FAILED {
        return None;
    }
    let mut vec = vec![0u8; pages];
    // SAFETY: `vec` holds one byte per page of the mapping, as mincore writes.
    let r = unsafe { libc::mincore(addr, len as usize, vec.as_mut_ptr()) };
    // SAFETY: the mapping made above, of this length.
    unsafe { libc::munmap(addr, len as usize) };
    if r != 0 {
        return None;
    }
    let resident = vec.iter().filter(|b| *b & 1 == 1).count() as u64;
    Some((resident * page).min(len))
}

/// Whether `mincore` answers truly for `file`: the caller is root, owns
/// it, or may open it for writing.
fn kernel_tells_residency(file: &std::fs::File) -> bool {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no side effects.
    let me = unsafe { libc::geteuid() };
    if me == 0 || file.metadata().is_ok_and(|m| m.uid() == me) {
        return true;
    }
    let path = format!("/proc/self/fd/{}", file.as_raw_fd());
    let Ok(path) = std::ffi::CString::new(path) else { return false };
    // SAFETY: a NUL-terminated path; faccessat only reads it.
    unsafe { libc::faccessat(libc::AT_FDCWD, path.as_ptr(), libc::W_OK, libc::AT_EACCESS) == 0 }
}

/// `tmpfs` or `ramfs` when the file lives on one.
fn memory_file_system(file: &std::fs::File) -> Option<String> {
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    const RAMFS_MAGIC: i64 = 0x8584_58f6;
    // SAFETY: fstatfs writes into the zeroed struct it is given.
    let mut s: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstatfs(file.as_raw_fd(), &mut s) } != 0 {
        return None;
    }
    match s.f_type as i64 {
        TMPFS_MAGIC => Some("tmpfs".into()),
        RAMFS_MAGIC => Some("ramfs".into()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A file just written and synced is resident; advised away, it is not
    /// (where /tmp has storage behind it).
    /// On /dev/shm (tmpfs) the advice cannot work, and the failure says so.
    #[test]
    fn a_synced_file_is_evicted_and_a_tmpfs_file_is_said_to_stay() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("input.bin");
        let mut f = std::fs::File::create(&path).unwrap();
        f.write_all(&vec![7u8; 4 << 20]).unwrap();
        f.sync_all().unwrap();
        drop(f);
        let file = std::fs::File::open(&path).unwrap();
        assert!(resident_bytes(&file, 4 << 20).unwrap() > 0, "a file just written is resident");
        let e = evict(&[&path]);
        assert_eq!((e.files, e.bytes), (1, 4 << 20));
        assert!(e.resident_before_bytes > 0);
        if memory_file_system(&file).is_none() {
            assert_eq!(e.resident_after_bytes, 0, "{e:?}");
            assert_eq!(e.failure(), None);
        }
        let shm = Path::new("/dev/shm");
        if shm.is_dir() {
            let dir = tempfile::tempdir_in(shm).unwrap();
            let path = dir.path().join("input.bin");
            std::fs::write(&path, vec![1u8; 1 << 20]).unwrap();
            let e = evict(&[&path]);
            assert_eq!(e.memory_file_system.as_deref(), Some("tmpfs"));
            assert_eq!(e.resident_after_bytes, 1 << 20);
            let line = e.failure().expect("a tmpfs input cannot be evicted");
            assert!(line.contains("100%") && line.contains("tmpfs"), "{line}");
        }
        let missing = evict(&[dir.path().join("gone")]);
        assert_eq!(missing.failed_files, 1);
        assert!(missing.failure().unwrap().contains("could not be opened"));
    }
}
