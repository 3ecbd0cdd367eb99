//! The git a bisection and a gate need, each a `git -C REPO` process: names resolved
//! to commits, the first-parent history between two, whether the work tree
//! has changes, and detached worktrees added and removed. Nothing here
//! touches the user's work tree, index or HEAD.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Why a git command gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("cannot run git: {0}")]
    Spawn(#[from] std::io::Error),
    /// git's own first line of complaint (its stderr has no other type).
    #[error("{0}")]
    Said(String),
    /// A question asked of the repository answered no: what it means.
    #[error("{0}")]
    Refused(String),
}

/// `git -C repo ARGS`: its stdout trimmed, or its stderr's first line.
fn git(repo: &Path, args: &[&str]) -> Result<String, GitError> {
    let out = Command::new("git").arg("-C").arg(repo).args(args).output()?;
    match out.status.success() {
        true => Ok(String::from_utf8_lossy(&out.stdout).trim().to_string()),
        false => Err(GitError::Said(
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("git failed")
                .trim_start_matches("fatal: ")
                .to_string(),
        )),
    }
}

/// The repository's top directory, or why `dir` is none.
pub fn toplevel(dir: &Path) -> Result<PathBuf, GitError> {
    git(dir, &["rev-parse", "--show-toplevel"]).map(PathBuf::from).map_err(|e| match e {
        GitError::Said(said) => {
            GitError::Refused(format!("'{}' is not a git repository ({said})", dir.display()))
        }
        other => other,
    })
}

/// The commit `rev` names.
pub fn commit(repo: &Path, rev: &str) -> Result<String, GitError> {
    git(repo, &["rev-parse", "--verify", "--quiet", &format!("{rev}^{{commit}}")]).map_err(|e| {
        match e {
            GitError::Said(_) => {
                GitError::Refused(format!("'{rev}' names no commit in this repository"))
            }
            other => other,
        }
    })
}

/// The first-parent history from `good` to `bad`, both included, oldest
/// first; an error when `good` is not on `bad`'s first-parent history.
pub fn first_parent(repo: &Path, good: &str, bad: &str) -> Result<Vec<String>, GitError> {
    let mut list: Vec<String> =
        git(repo, &["rev-list", "--first-parent", "--reverse", &format!("{good}..{bad}")])?
            .lines()
            .map(str::to_string)
            .collect();
    let parent = match list.first() {
        Some(first) => git(repo, &["rev-parse", &format!("{first}^")]).ok(),
        None => None,
    };
    if parent.as_deref() != Some(good) {
        return Err(GitError::Refused(format!(
            "--good {} is not on the first-parent history of --bad {} (it must be an earlier commit of it)",
            &good[..12],
            &bad[..12]
        )));
    }
    list.insert(0, good.to_string());
    Ok(list)
}

/// The best common ancestor of `a` and `b`: what a pull request from `b`
/// into `a` changes is measured against it.
pub fn merge_base(repo: &Path, a: &str, b: &str) -> Result<String, GitError> {
    git(repo, &["merge-base", a, b]).map_err(|e| match e {
        GitError::Said(_) => GitError::Refused(format!(
            "'{}' and '{}' have no common ancestor",
            &a[..a.len().min(12)],
            &b[..b.len().min(12)]
        )),
        other => other,
    })
}

/// Whether the work tree or index has uncommitted changes.
pub fn dirty(repo: &Path) -> Result<bool, GitError> {
    git(repo, &["status", "--porcelain", "--untracked-files=no"]).map(|s| !s.is_empty())
}

/// A detached worktree of `commit` at `path`.
pub fn add_worktree(repo: &Path, path: &Path, commit: &str) -> Result<(), GitError> {
    let path = path.to_string_lossy();
    git(repo, &["worktree", "add", "--detach", "--force", &path, commit]).map(|_| ())
}

/// Removes a worktree this bisection added, and git's record of it.
pub fn remove_worktree(repo: &Path, path: &Path) -> Result<(), GitError> {
    if path.exists() {
        git(repo, &["worktree", "remove", "--force", &path.to_string_lossy()])?;
    }
    git(repo, &["worktree", "prune"]).map(|_| ())
}
