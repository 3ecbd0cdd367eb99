//! One commit's runs: its worktree (checked out and built once, kept while
//! the commit is needed: the endpoints' for the whole bisection, since
//! every probe's windows run them again), and a run of it into a run
//! directory, or the directory reused when it verifies.

use super::probe::{self, Unmeasured};
use super::{Bisection, WORKTREES, git};
use crate::error::Error;
use report::bisect::{BUILDS, text};
use report::compare::Run;
use std::path::{Path, PathBuf};

/// What one run of a commit gave: its directory (relative) and its run.
pub(super) struct Measured {
    pub(super) dir: String,
    pub(super) run: Run,
    pub(super) reused: bool,
}

impl Bisection<'_> {
    /// A run of commit `k` into `rel` (relative to the bisection's
    /// directory): reused when it verifies, else run in the commit's
    /// worktree (made and built first if need be). Err(why) when the
    /// commit cannot be measured (its build or its run failed): a finding,
    /// not an error.
    pub(super) fn measure(
        &mut self,
        k: usize,
        rel: &str,
    ) -> Result<Result<Measured, Unmeasured>, Error> {
        let log_rel = self.build_log(k);
        if self.out.join(&log_rel).exists() {
            return Ok(Err(Unmeasured::BuiltBefore(log_rel)));
        }
        let dir = self.out.join(rel);
        if let Ok(run) = report::bisect::read_run(&dir) {
            return Ok(Ok(Measured { dir: rel.into(), run, reused: true }));
        }
        if dir.exists() {
            // Ours, left by an interrupted probe: measured again.
            std::fs::remove_dir_all(&dir)
                .map_err(|e| Error::Failed(format!("cannot clear {rel}: {e}")))?;
        }
        let tree = match self.worktree(k)? {
            Ok(tree) => tree,
            Err(why) => return Ok(Err(why)),
        };
        std::fs::create_dir_all(dir.parent().unwrap_or(&self.out))
            .map_err(|e| Error::Failed(format!("cannot make {rel}'s parent: {e}")))?;
        match self.run_in(&tree, &dir)? {
            Err(why) => Ok(Err(why)),
            Ok(()) => match report::bisect::read_run(&dir) {
                Ok(run) => Ok(Ok(Measured { dir: rel.into(), run, reused: false })),
                Err(e) => Err(Error::Failed(format!("probe {rel} does not verify: {e}"))),
            },
        }
    }

    /// Where commit `k`'s failed build leaves its log.
    fn build_log(&self, k: usize) -> String {
        format!("{BUILDS}/{}.log", text::short(&self.commits[k]))
    }

    /// Commit `k`'s worktree, checked out and built on first use.
    fn worktree(&mut self, k: usize) -> Result<Result<PathBuf, Unmeasured>, Error> {
        if let Some(tree) = self.trees.get(&k) {
            return Ok(Ok(tree.clone()));
        }
        let commit = self.commits[k].clone();
        let short = text::short(&commit).to_string();
        let tree = self.out.join(WORKTREES).join(&short);
        let _ = git::remove_worktree(&self.repo, &tree);
        std::fs::create_dir_all(self.out.join(WORKTREES))
            .map_err(|e| Error::Failed(format!("cannot make {WORKTREES}: {e}")))?;
        git::add_worktree(&self.repo, &tree, &commit)
            .map_err(|e| Error::Failed(format!("git worktree add {short}: {e}")))?;
        self.trees.insert(k, tree.clone());
        if let Some(build) = &self.asked.build {
            let log = self.out.join(WORKTREES).join(format!("{short}.build.log"));
            let log_rel = self.build_log(k);
            let keep = |out: &Path| {
                std::fs::create_dir_all(out.join(BUILDS))
                    .and_then(|_| std::fs::rename(&log, out.join(&log_rel)))
                    .map_err(|e| Error::Failed(format!("cannot keep {log_rel}: {e}")))
            };
            match probe::build(build, &tree, &log, &self.stop, self.asked.build_timeout)
                .map_err(|e| Error::Failed(format!("cannot run --build: {e}")))?
            {
                probe::Ended::Stopped(s) => return Err(stopped(s)),
                probe::Ended::TimedOut => {
                    keep(&self.out)?;
                    self.release(k)?;
                    let limit = self.asked.build_timeout.unwrap_or_default().as_secs_f64();
                    let seconds = format!("{} s", report::fmt::seconds_given(limit));
                    return Ok(Err(Unmeasured::BuildTimedOut { seconds, log: log_rel }));
                }
                probe::Ended::Exited(st) if !st.success() => {
                    keep(&self.out)?;
                    self.release(k)?;
                    return Ok(Err(Unmeasured::Build { status: st, log: log_rel }));
                }
                probe::Ended::Exited(_) => {}
            }
        }
        Ok(Ok(tree))
    }

    /// Removes commit `k`'s worktree, if it has one.
    pub(super) fn release(&mut self, k: usize) -> Result<(), Error> {
        if let Some(tree) = self.trees.remove(&k) {
            let short = text::short(&self.commits[k]).to_string();
            git::remove_worktree(&self.repo, &tree)
                .map_err(|e| Error::Failed(format!("git worktree remove {short}: {e}")))?;
        }
        Ok(())
    }

    /// This coordinator with the run flags in `tree`, into `dir`.
    fn run_in(&mut self, tree: &Path, dir: &Path) -> Result<Result<(), Unmeasured>, Error> {
        let flags: Vec<String> =
            self.asked.flags.iter().filter(|f| *f != "--quiet").cloned().collect();
        let stderr = self.out.join(WORKTREES).join("run.stderr");
        let ended = probe::run(&flags, tree, dir, &stderr, &self.stop)
            .map_err(|e| Error::Failed(format!("cannot start a probe's run: {e}")))?;
        // A failed run's stderr is shown whole; a finished run's warnings
        // (the machine's, the same for every probe) once each.
        let said = std::fs::read_to_string(&stderr).unwrap_or_default();
        let ok = matches!(ended, probe::Ended::Exited(st) if st.success());
        for line in said.lines() {
            if !ok || (line.starts_with("warning:") && self.warned.insert(line.to_string())) {
                eprintln!("{line}");
            }
        }
        match ended {
            probe::Ended::Stopped(s) => Err(stopped(s)),
            probe::Ended::Exited(st) if st.success() => Ok(Ok(())),
            probe::Ended::Exited(st) => {
                let rel = dir.strip_prefix(&self.out).unwrap_or(dir).display().to_string();
                Ok(Err(Unmeasured::Run { status: st, dir: rel }))
            }
            probe::Ended::TimedOut => {
                Err(Error::Failed("a probe's run outlived a deadline it was not given".into()))
            }
        }
    }
}

/// The bisection stopped by a signal, to be resumed.
fn stopped(signal: i32) -> Error {
    Error::Interrupted {
        signal,
        message: format!(
            "bisection interrupted by signal {signal}; rerun with the same --output to resume"
        ),
    }
}
