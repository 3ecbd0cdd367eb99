//! Atomic file writes: temp file in the same directory, fsync, rename, fsync
//! of the directory. A process killed at any instant leaves either no file (or
//! the old one) or the whole new file, never a torn one.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::Path;

/// How far a write must be durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// fsync the file and its directory: survives power loss. For evidence.
    Disk,
    /// No fsync: still atomic against a killed process (the rename is), but
    /// not against power loss. For derived data that can be rebuilt, such as
    /// a feature cache, where an fsync per file costs more than the write.
    Process,
}

/// Writes `bytes` to `path` atomically and durably ([`Durability::Disk`]),
/// creating parent directories.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic_with(path, bytes, Durability::Disk)
}

/// Writes `bytes` to `path` atomically with the given durability.
pub fn write_atomic_with(path: &Path, bytes: &[u8], durability: Durability) -> io::Result<()> {
    write_atomic_streamed(path, durability, |f| f.write_all(bytes))
}

/// Writes to `path` atomically with the given durability whatever `write`
/// writes into the file (buffer it: each call is a system call), for a
/// file too large to hold in memory first. On an error nothing is left.
pub fn write_atomic_streamed(
    path: &Path,
    durability: Durability,
    write: impl FnOnce(&mut File) -> io::Result<()>,
) -> io::Result<()> {
    let mut file = AtomicFile::create(path)?;
    write(file.file())?;
    file.commit(durability)
}

/// A file written over time beside its final path (`.<name>.tmp-<pid>`)
/// and put there whole by [`AtomicFile::commit`]; one dropped uncommitted
/// (on any error, or a run that failed) is removed, so no torn or partial
/// file is ever at `path`.
pub struct AtomicFile {
    tmp: std::path::PathBuf,
    path: std::path::PathBuf,
    file: Option<File>,
}

impl AtomicFile {
    /// Creates the temporary file, and `path`'s directory if need be.
    pub fn create(path: &Path) -> io::Result<AtomicFile> {
        let dir = parent(path);
        fs::create_dir_all(dir)?;
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
        let file = File::create(&tmp)?;
        Ok(AtomicFile { tmp, path: path.to_path_buf(), file: Some(file) })
    }

    /// The file being written.
    pub fn file(&mut self) -> &mut File {
        self.file.as_mut().expect("an AtomicFile holds its file until it is committed")
    }

    /// Puts the file at its path, synced as `durability` says.
    pub fn commit(mut self, durability: Durability) -> io::Result<()> {
        let file = self.file.take().expect("committed once");
        let put = (|| {
            if durability == Durability::Disk {
                file.sync_all()?;
            }
            drop(file);
            fs::rename(&self.tmp, &self.path)
        })();
        if let Err(e) = put {
            let _ = fs::remove_file(&self.tmp);
            return Err(e);
        }
        if durability == Durability::Disk {
            File::open(parent(&self.path))?.sync_all()?;
        }
        Ok(())
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file().write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file().flush()
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// A directory built beside its final path (`.<name>.partial-<pid>`) and
/// published whole with [`rename_no_replace`]: readers see all of it or
/// nothing, an existing path is never replaced, and a staging directory
/// that is dropped unpublished (on any error) is removed.
pub struct Staging {
    tmp: std::path::PathBuf,
    out: std::path::PathBuf,
    published: bool,
}

impl Staging {
    /// Fails with `AlreadyExists` if `out` exists; otherwise creates the staging directory.
    pub fn new(out: &Path) -> io::Result<Staging> {
        if out.symlink_metadata().is_ok() {
            return Err(io::Error::from(io::ErrorKind::AlreadyExists));
        }
        let name = out
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "output".into());
        let parent = out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let tmp = parent.join(format!(".{name}.partial-{}", std::process::id()));
        fs::create_dir_all(&tmp)?;
        Ok(Staging { tmp, out: out.to_path_buf(), published: false })
    }

    /// Where to build the contents.
    pub fn path(&self) -> &Path {
        &self.tmp
    }

    /// Moves the contents to the final path; `AlreadyExists` if it appeared meanwhile.
    pub fn publish(mut self) -> io::Result<()> {
        rename_no_replace(&self.tmp, &self.out)?;
        self.published = true;
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.published {
            let _ = fs::remove_dir_all(&self.tmp);
        }
    }
}

/// Writes `bytes` to a new file `path` (temp file, fsync, rename without
/// replacing): `AlreadyExists` if `path` exists or appears meanwhile, and
/// never a torn or partial file. For files a user names, which must never
/// overwrite something of theirs.
pub fn write_new(path: &Path, bytes: &[u8]) -> io::Result<()> {
    if path.symlink_metadata().is_ok() {
        return Err(io::Error::from(io::ErrorKind::AlreadyExists));
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.partial-{}", std::process::id()));
    let result = (|| {
        let mut f = File::create_new(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        rename_no_replace(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Renames `from` to `to` only if `to` does not exist (Linux `renameat2`
/// with `RENAME_NOREPLACE`), so publishing a finished directory can never
/// replace something that appeared meanwhile.
pub fn rename_no_replace(from: &Path, to: &Path) -> io::Result<()> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &Path| {
        CString::new(p.as_os_str().as_bytes())
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
    };
    let (f, t) = (c(from)?, c(to)?);
    // SAFETY: two valid NUL-terminated paths; AT_FDCWD resolves them relative to the cwd.
    let r = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            f.as_ptr(),
            libc::AT_FDCWD,
            t.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if r == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

#[cfg(test)]
mod tests {
    #[test]
    fn write_new_never_replaces_and_leaves_no_temp_file() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("export.csv");
        super::write_new(&p, b"first").unwrap();
        let e = super::write_new(&p, b"second").unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&p).unwrap(), b"first");
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1);
    }

    #[test]
    fn staging_publishes_whole_or_leaves_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out");
        let s = super::Staging::new(&out).unwrap();
        std::fs::write(s.path().join("f"), b"x").unwrap();
        drop(s);
        assert_eq!(
            std::fs::read_dir(tmp.path()).unwrap().count(),
            0,
            "an unpublished staging dir was left"
        );
        let s = super::Staging::new(&out).unwrap();
        std::fs::write(s.path().join("f"), b"x").unwrap();
        s.publish().unwrap();
        assert_eq!(std::fs::read(out.join("f")).unwrap(), b"x");
        assert_eq!(
            super::Staging::new(&out).err().unwrap().kind(),
            std::io::ErrorKind::AlreadyExists
        );
    }

    #[test]
    fn rename_never_replaces() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
        std::fs::create_dir(&a).unwrap();
        std::fs::create_dir(&b).unwrap();
        let e = super::rename_no_replace(&a, &b).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists);
        std::fs::remove_dir(&b).unwrap();
        super::rename_no_replace(&a, &b).unwrap();
        assert!(b.is_dir() && !a.exists());
    }

    #[test]
    fn writes_whole_files_and_leaves_no_temp() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("a/b/c.bin");
        super::write_atomic(&p, b"hello").unwrap();
        super::write_atomic(&p, b"world!").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"world!");
        assert_eq!(std::fs::read_dir(p.parent().unwrap()).unwrap().count(), 1);
    }
}

#[cfg(test)]
mod atomic_file {
    use std::io::Write;

    /// Written over time, the file is at its path only once committed; one
    /// dropped uncommitted leaves nothing, and an old file stays as it was.
    #[test]
    fn an_uncommitted_file_leaves_nothing_and_a_committed_one_is_whole() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("jobs.gz");
        std::fs::write(&p, b"old").unwrap();
        let mut f = super::AtomicFile::create(&p).unwrap();
        f.file().write_all(b"partial").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"old");
        drop(f);
        assert_eq!(std::fs::read(&p).unwrap(), b"old");
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1, "a temp file was left");
        let mut f = super::AtomicFile::create(&p).unwrap();
        f.file().write_all(b"new, whole").unwrap();
        f.commit(super::Durability::Disk).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new, whole");
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1);
    }
}
