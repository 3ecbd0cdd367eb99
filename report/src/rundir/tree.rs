//! Every entry under a run or campaign directory is accounted for: bound
//! by a digest, derived from the report, or inside a subtree another check
//! owns (a campaign's runs, its state directories). Anything else is a
//! [`Stray`]: an added or renamed file, an empty directory, a symbolic
//! link, a FIFO. The one walk: `verify` makes it over a finished directory,
//! and a run makes it before it writes its report, so a run that ends ok
//! verifies.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// What a directory's bindings account for, relative to it.
#[derive(Debug, Default)]
pub struct Accounted {
    files: BTreeSet<PathBuf>,
    subtrees: BTreeSet<PathBuf>,
}

/// An entry nothing accounts for, relative to the directory walked.
#[derive(Debug)]
pub struct Stray {
    pub path: PathBuf,
    pub kind: StrayKind,
}

#[derive(Debug)]
pub enum StrayKind {
    /// A regular file no binding names.
    Unbound,
    EmptyDirectory,
    Symlink,
    /// A FIFO, socket or device.
    NotRegular,
    /// The directory (or the entry's type) could not be read.
    Unreadable(std::io::Error),
}

impl Stray {
    /// The entry as the walk shows it: a directory with a trailing slash,
    /// the walked directory itself by `root`.
    pub fn shown(&self, root: &str) -> String {
        match self.kind {
            StrayKind::EmptyDirectory => format!("{}/", self.path.display()),
            StrayKind::Unreadable(_) => shown(&self.path, root),
            _ => self.path.display().to_string(),
        }
    }

    /// What is wrong with it, after its name.
    pub fn what(&self) -> String {
        match &self.kind {
            StrayKind::Unbound => {
                "is not bound by report.json or a manifest, nor derived from the report".into()
            }
            StrayKind::EmptyDirectory => {
                "is an empty directory nothing in the report accounts for".into()
            }
            StrayKind::Symlink => {
                "is a symbolic link: a run directory holds only the files it wrote".into()
            }
            StrayKind::NotRegular => "is not a regular file or directory".into(),
            StrayKind::Unreadable(e) => format!("cannot be listed: {e}"),
        }
    }
}

/// At most this many strays are collected by [`Accounted::strays`].
pub const MAX_STRAYS: usize = 1000;

impl Accounted {
    /// A file some binding checked (or a derived file checked against its rendering).
    pub fn file(&mut self, rel: impl Into<PathBuf>) {
        self.files.insert(rel.into());
    }

    /// A directory whose whole content another check verifies.
    pub fn subtree(&mut self, rel: impl Into<PathBuf>) {
        self.subtrees.insert(rel.into());
    }

    /// Walks `dir` (never following a link); the first entry, in name
    /// order, that nothing accounts for.
    pub fn check(&self, dir: &Path) -> Result<(), Stray> {
        match self.strays(dir, 1).into_iter().next() {
            Some(s) => Err(s),
            None => Ok(()),
        }
    }

    /// Every entry nothing accounts for, in name order, at most `limit`
    /// (a stray directory is one entry: its content is not walked).
    pub fn strays(&self, dir: &Path, limit: usize) -> Vec<Stray> {
        let mut found = Vec::new();
        self.walk(dir, Path::new(""), limit, &mut found);
        found
    }

    fn walk(&self, dir: &Path, rel: &Path, limit: usize, found: &mut Vec<Stray>) {
        let stray = |path: PathBuf, kind| Stray { path, kind };
        let entries: Result<Vec<_>, _> = std::fs::read_dir(dir.join(rel)).and_then(|d| d.collect());
        let mut entries = match entries {
            Ok(e) => e,
            Err(e) => return found.push(stray(rel.to_path_buf(), StrayKind::Unreadable(e))),
        };
        if entries.is_empty() && !rel.as_os_str().is_empty() {
            return found.push(stray(rel.to_path_buf(), StrayKind::EmptyDirectory));
        }
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            if found.len() >= limit {
                return;
            }
            let r = rel.join(e.file_name());
            match e.file_type() {
                Err(err) => found.push(stray(r, StrayKind::Unreadable(err))),
                Ok(k) if k.is_symlink() => found.push(stray(r, StrayKind::Symlink)),
                Ok(k) if k.is_dir() => {
                    if !self.subtrees.contains(&r) {
                        self.walk(dir, &r, limit, found);
                    }
                }
                Ok(k) if !k.is_file() => found.push(stray(r, StrayKind::NotRegular)),
                Ok(_) if !self.files.contains(&r) => found.push(stray(r, StrayKind::Unbound)),
                Ok(_) => {}
            }
        }
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
            let stray = acc.check(tmp.path()).unwrap_err();
            let err = format!("{} {}", stray.shown("the directory"), stray.what());
            assert!(err.starts_with(says), "{says}: {err}");
        }
        // What an owned subtree holds is its owner's to check.
        std::fs::write(d.join("owned/x/more"), b"").unwrap();
        acc.check(d).expect("owned subtree");
    }

    #[test]
    fn every_stray_is_collected_up_to_the_limit_and_a_stray_directory_once() {
        let (tmp, acc) = tree();
        let d = tmp.path();
        std::fs::create_dir_all(d.join("extra/deep")).unwrap();
        std::fs::write(d.join("extra/deep/f"), b"").unwrap();
        std::fs::create_dir(d.join("a/empty")).unwrap();
        std::fs::write(d.join("z.txt"), b"").unwrap();
        let found: Vec<String> =
            acc.strays(d, MAX_STRAYS).iter().map(|s| s.shown("the directory")).collect();
        assert_eq!(found, ["a/empty/", "extra/deep/f", "z.txt"]);
        assert_eq!(acc.strays(d, 2).len(), 2);
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
