//! Every entry under a run or campaign directory is accounted for: bound
//! by a digest, derived from the report, or inside a subtree another check
//! owns (a campaign's runs, its state directories). Anything else is named:
//! an added or renamed file, an empty directory, a symbolic link, a FIFO.

use super::Mismatch;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// What a directory's bindings account for, relative to it.
#[derive(Debug, Default)]
pub(super) struct Accounted {
    files: BTreeSet<PathBuf>,
    subtrees: BTreeSet<PathBuf>,
}

impl Accounted {
    /// A file some binding checked (or a derived file checked against its rendering).
    pub(super) fn file(&mut self, rel: impl Into<PathBuf>) {
        self.files.insert(rel.into());
    }

    /// A directory whose whole content another check verifies.
    pub(super) fn subtree(&mut self, rel: impl Into<PathBuf>) {
        self.subtrees.insert(rel.into());
    }

    /// Walks `dir` (never following a link) and names the first entry,
    /// in name order, that nothing accounts for.
    pub(super) fn check(&self, dir: &Path) -> Result<(), Mismatch> {
        self.walk(dir, Path::new(""))
    }

    fn walk(&self, dir: &Path, rel: &Path) -> Result<(), Mismatch> {
        let listed = |e: std::io::Error| {
            Mismatch(format!("cannot list {}: {e}", shown(rel, "the directory")))
        };
        let mut entries: Vec<_> = std::fs::read_dir(dir.join(rel))
            .map_err(listed)?
            .collect::<Result<_, _>>()
            .map_err(listed)?;
        if entries.is_empty() && !rel.as_os_str().is_empty() {
            return Err(Mismatch(format!(
                "{}/ is an empty directory the run did not write: nothing in the report accounts for it",
                rel.display()
            )));
        }
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let r = rel.join(e.file_name());
            let kind =
                e.file_type().map_err(|e| Mismatch(format!("cannot stat {}: {e}", r.display())))?;
            if kind.is_symlink() {
                return Err(Mismatch(format!(
                    "{} is a symbolic link: a run directory holds only the files it wrote",
                    r.display()
                )));
            }
            if kind.is_dir() {
                if !self.subtrees.contains(&r) {
                    self.walk(dir, &r)?;
                }
            } else if !kind.is_file() {
                return Err(Mismatch(format!(
                    "{} is not a regular file or directory",
                    r.display()
                )));
            } else if !self.files.contains(&r) {
                return Err(Mismatch(format!(
                    "{} is not bound by report.json or a manifest, nor derived from the report: \
                     a file was added or renamed after the run wrote it",
                    r.display()
                )));
            }
        }
        Ok(())
    }
}

fn shown(rel: &Path, root: &str) -> String {
    match rel.as_os_str().is_empty() {
        true => root.to_string(),
        false => format!("{}/", rel.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> (tempfile::TempDir, Accounted) {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        std::fs::create_dir_all(d.join("a/b")).unwrap();
        std::fs::create_dir_all(d.join("owned/x")).unwrap();
        std::fs::write(d.join("top.json"), b"1").unwrap();
        std::fs::write(d.join("a/b/c.bin"), b"2").unwrap();
        std::fs::write(d.join("owned/x/anything"), b"3").unwrap();
        let mut acc = Accounted::default();
        acc.file("top.json");
        acc.file("a/b/c.bin");
        acc.subtree("owned");
        (tmp, acc)
    }

    #[test]
    fn an_accounted_tree_passes_and_every_stray_entry_is_named() {
        let (tmp, acc) = tree();
        acc.check(tmp.path()).expect("all accounted for");
        let d = tmp.path();
        type Edit = fn(&Path);
        let cases: [(Edit, &str); 6] = [
            (|d| std::fs::write(d.join("stray.txt"), b"").unwrap(), "stray.txt is not bound"),
            (|d| std::fs::write(d.join("a/b/d.bin"), b"").unwrap(), "a/b/d.bin is not bound"),
            (|d| std::fs::create_dir(d.join("a/empty")).unwrap(), "a/empty/ is an empty directory"),
            (
                |d| std::os::unix::fs::symlink("/etc", d.join("a/link")).unwrap(),
                "a/link is a symbolic link",
            ),
            (
                |d| {
                    std::fs::remove_file(d.join("top.json")).unwrap();
                    std::os::unix::fs::symlink("/etc/hostname", d.join("top.json")).unwrap()
                },
                "top.json is a symbolic link",
            ),
            (
                |d| {
                    let p = std::ffi::CString::new(d.join("fifo").to_str().unwrap()).unwrap();
                    // SAFETY: a valid NUL-terminated path.
                    assert_eq!(unsafe { libc::mkfifo(p.as_ptr(), 0o600) }, 0);
                },
                "fifo is not a regular file",
            ),
        ];
        for (edit, says) in cases {
            let (tmp, acc) = tree();
            edit(tmp.path());
            let err = acc.check(tmp.path()).unwrap_err().0;
            assert!(err.starts_with(says), "{says}: {err}");
        }
        // What an owned subtree holds is its owner's to check.
        std::fs::write(d.join("owned/x/more"), b"").unwrap();
        acc.check(d).expect("owned subtree");
    }

    /// A directory that cannot be listed (unreachable as root, who can list
    /// every one) is named as the walk shows entries: the root by the word
    /// given, any other with a trailing slash.
    #[test]
    fn a_directory_is_shown_as_the_walk_names_it() {
        assert_eq!(shown(Path::new(""), "the directory"), "the directory");
        assert_eq!(shown(Path::new("runs/cold"), "the directory"), "runs/cold/");
    }
}
