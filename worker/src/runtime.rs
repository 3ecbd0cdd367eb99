//! What a stage ran on, beyond the machine: the thread settings in its
//! environment, and for a command the commit checked out where it ran and
//! whether tracked files differed from it. Read before the stage's
//! measurement starts, so the `git` processes are no part of the stage's
//! tree, CPU or I/O. (What the Python helper says of its interpreter and
//! libraries arrives later, through the spans file: `stages::spans`.)

use protocol::Stage;
use std::path::Path;
use std::process::{Command, Stdio};

/// Environment variables that set a library's thread count. `TF_NUM_` is a
/// prefix (`TF_NUM_INTEROP_THREADS`, `TF_NUM_INTRAOP_THREADS`).
pub const THREAD_VARIABLES: [&str; 7] = [
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "RAYON_NUM_THREADS",
    "TORCH_NUM_THREADS",
    "TF_NUM_",
];

fn is_thread_variable(name: &str) -> bool {
    THREAD_VARIABLES.iter().any(|v| match v.strip_suffix('_') {
        Some(_) => name.starts_with(v) && name.len() > v.len(),
        None => name == *v,
    })
}

/// The runtime of `stage` as far as the worker can tell before it runs.
pub fn before(stage: &Stage) -> protocol::Runtime {
    let extra: &[(String, String)] = match stage {
        Stage::Exec { env, .. } => env,
        _ => &[],
    };
    let mut threads: Vec<(String, String)> = std::env::vars()
        .filter(|(k, _)| is_thread_variable(k) && !extra.iter().any(|(e, _)| e == k))
        .chain(extra.iter().filter(|(k, _)| is_thread_variable(k)).cloned())
        .map(|(k, v)| (k, v.chars().take(64).collect()))
        .collect();
    threads.sort();
    let cwd = match stage {
        Stage::Exec { cwd, .. } => Some(cwd.as_path().to_path_buf()),
        Stage::Command { .. } | Stage::PrepareItem { .. } => std::env::current_dir().ok(),
        _ => None,
    };
    let (git_commit, git_dirty) = match cwd.as_deref().and_then(commit_of) {
        Some((commit, dirty)) => (Some(commit), dirty),
        None => (None, None),
    };
    protocol::Runtime { threads, git_commit, git_dirty, ..Default::default() }
}

/// The commit checked out in the work tree holding `dir`, and whether a
/// tracked file differs from it (untracked files do not count, as for
/// `git describe --dirty`); None outside a work tree, without a commit, or
/// without git. One `git status` gives both (its porcelain v2 header names
/// the commit; every other line is a changed tracked file).
fn commit_of(dir: &Path) -> Option<(String, Option<bool>)> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["status", "--porcelain=v2", "--branch", "--untracked-files=no"])
        // Never take the index lock, never write the index.
        .env("GIT_OPTIONAL_LOCKS", "0")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let text = String::from_utf8(out.stdout).ok()?;
    let commit = text.lines().find_map(|l| l.strip_prefix("# branch.oid "))?.trim().to_string();
    if commit.len() < 40 || !commit.chars().all(|c| c.is_ascii_hexdigit()) {
        // "(initial)": a repository with no commit yet.
        return None;
    }
    let dirty = text.lines().any(|l| !l.starts_with('#') && !l.trim().is_empty());
    Some((commit, Some(dirty)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_variables_are_named_or_prefixed() {
        for yes in ["OMP_NUM_THREADS", "TF_NUM_INTEROP_THREADS", "RAYON_NUM_THREADS"] {
            assert!(is_thread_variable(yes), "{yes}");
        }
        for no in ["OMP_NUM_THREADSX", "TF_NUM_", "PATH", "MY_OMP_NUM_THREADS"] {
            assert!(!is_thread_variable(no), "{no}");
        }
    }

    /// A fresh repository: its commit, clean; a tracked file changed makes
    /// it dirty, an untracked one does not; outside a repository, nothing.
    #[test]
    fn a_work_trees_commit_and_whether_it_is_dirty() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(commit_of(dir.path()), None);
        let git = |args: &[&str]| {
            let ok = Command::new("git")
                .arg("-C")
                .arg(dir.path())
                .args(args)
                .env("GIT_AUTHOR_NAME", "t")
                .env("GIT_AUTHOR_EMAIL", "t@t")
                .env("GIT_COMMITTER_NAME", "t")
                .env("GIT_COMMITTER_EMAIL", "t@t")
                .stdout(Stdio::null())
                .status()
                .unwrap()
                .success();
            assert!(ok, "git {args:?}");
        };
        git(&["init", "-q"]);
        std::fs::write(dir.path().join("a.txt"), "one").unwrap();
        git(&["add", "a.txt"]);
        git(&["commit", "-qm", "one"]);
        let (commit, dirty) = commit_of(dir.path()).expect("a commit");
        assert_eq!(commit.len(), 40);
        assert_eq!(dirty, Some(false));
        std::fs::write(dir.path().join("new.txt"), "untracked").unwrap();
        assert_eq!(commit_of(dir.path()).unwrap().1, Some(false), "untracked files do not count");
        std::fs::write(dir.path().join("a.txt"), "two").unwrap();
        assert_eq!(commit_of(dir.path()).unwrap(), (commit, Some(true)));
    }
}
