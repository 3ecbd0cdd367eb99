//! A command's Python stacks sampled from outside (`--sample`): py-spy,
//! attached to the command's process and its subprocesses by pid as soon
//! as the command is spawned, with no change to the command.
//!
//! py-spy runs beside the command, not in its tree: it is not in the
//! stage's cgroup, the tree's memory samples leave it out
//! ([`crate::tree::outside_the_tree`]), and its CPU time, which its reaping
//! puts into this worker's `RUSAGE_CHILDREN`, is taken back out
//! ([`crate::measure::not_the_stages`]). It is waited for after the
//! stage's wall time has ended. What it samples costs the command: py-spy
//! pauses each process for the moment it reads a stack (its default,
//! blocking mode), so a sampled run's figures are the program's plus that
//! (docs/modes.md gives the measured cost).
//!
//! py-spy keeps only running samples (its default: a thread the kernel
//! shows waiting is left out), so a sleep or a blocked queue is not "hot";
//! its raw output carries no per-sample idle flag, so idle stacks are not
//! kept at all. Its raw file (with paths and command lines) stays in a
//! private directory and is removed; the evidence is [`raw::fold`]'s.

pub(crate) mod raw;

use super::{Reporter, StageError};
use protocol::SampleRequest;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long py-spy gets to write its file once the command has ended
/// before it is asked to stop (SIGINT), and again before it is killed.
const WRITE_GRACE: Duration = Duration::from_secs(5);

/// How long py-spy looks for a Python process in the tree it was given
/// before it gives up: a command that ended sooner may have ended before
/// py-spy found it, which is no fault of the command's.
const FINDS_WITHIN: Duration = Duration::from_secs(1);

/// py-spy, sampling a command.
pub(crate) struct Running {
    pid: i32,
    dir: PathBuf,
    cwd: PathBuf,
    /// When py-spy was started (just after the command was spawned).
    attached: Instant,
}

impl Running {
    fn raw(&self) -> PathBuf {
        self.dir.join("raw.txt")
    }

    fn stderr(&self) -> PathBuf {
        self.dir.join("stderr.txt")
    }
}

/// Starts py-spy on `pid` (the command just spawned), whose working
/// directory is `cwd`.
pub(crate) fn attach(req: &SampleRequest, pid: i32, cwd: PathBuf) -> Result<Running, StageError> {
    let dir = std::env::temp_dir().join(format!("stagebench-sample-{}-{pid}", std::process::id()));
    let io = |source| StageError::Io { path: "a private directory for py-spy".into(), source };
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new().mode(0o700).create(&dir).map_err(io)?;
    }
    let stderr = std::fs::File::create(dir.join("stderr.txt")).map_err(io)?;
    let mut cmd = Command::new(&req.py_spy);
    cmd.args(["record", "--subprocesses", "--nolineno", "--full-filenames", "--format", "raw"])
        .arg("--rate")
        .arg(req.rate_hz.to_string())
        .arg("--pid")
        .arg(pid.to_string())
        .arg("--output")
        .arg(dir.join("raw.txt"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr);
    for var in protocol::env::LAUNCH {
        cmd.env_remove(var);
    }
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
                .map_err(std::io::Error::from)
        });
    }
    let child = cmd.spawn().map_err(|e| {
        let _ = std::fs::remove_dir_all(&dir);
        StageError::Failed(format!("cannot start py-spy for --sample: {e}"))
    })?;
    let spy = child.id() as i32;
    crate::tree::outside_the_tree(Some(spy));
    Ok(Running { pid: spy, dir, cwd, attached: Instant::now() })
}

impl Running {
    /// Waits for py-spy (the command has ended), takes its CPU out of the
    /// stage's, and, when `keep`, writes its stacks as the artifact
    /// `samples/TAG.folded` and reports it. A py-spy that could not
    /// sample is this stage's error, in one line.
    pub(crate) fn finish(
        self,
        run_dir: &Path,
        tag: &str,
        reporter: &mut dyn Reporter,
        keep: bool,
    ) -> Result<(), StageError> {
        let written = self.end(run_dir, tag, keep)?;
        if let Some(w) = written {
            reporter.artifact(&w.path, w.sha256);
        }
        Ok(())
    }

    /// [`Running::finish`] for a caller that reports the file itself (a
    /// preparation program's close): the artifact written, if `keep`.
    pub(crate) fn end(
        self,
        run_dir: &Path,
        tag: &str,
        keep: bool,
    ) -> Result<Option<protocol::Written>, StageError> {
        // The command has ended: how long it lived, near enough.
        let lived = self.attached.elapsed();
        let status = self.reap();
        crate::tree::outside_the_tree(None);
        let stderr = || std::fs::read_to_string(self.stderr()).unwrap_or_default();
        let result = match status {
            Some(0) if keep => self.write(run_dir, tag).map(Some),
            Some(0) => Ok(None),
            _ if !keep => Ok(None),
            // A program that ended before py-spy found it was not sampled:
            // its figures stand, and its stage says it has no samples. Only
            // where py-spy may read any process: without CAP_SYS_PTRACE, "no
            // Python found" may be a process of another user it may not
            // read, which fails the run saying so.
            _ if lived < FINDS_WITHIN && found_no_python(&stderr()) && may_read_any_process() => {
                Ok(None)
            }
            _ => Err(StageError::Failed(why(&stderr()))),
        };
        let _ = std::fs::remove_dir_all(&self.dir);
        result
    }

    /// Ends py-spy after its command was killed: its stacks are no one's.
    pub(crate) fn abandon(self) {
        let _ = self.end(Path::new(""), "", false);
    }

    fn write(&self, run_dir: &Path, tag: &str) -> Result<protocol::Written, StageError> {
        let text = std::fs::read_to_string(self.raw())
            .map_err(|source| StageError::Io { path: "py-spy's output".into(), source })?;
        let (folded, _) = raw::fold(&text, &self.cwd);
        let path = format!("samples/{tag}.folded");
        let sha256 = super::write_artifact(run_dir, &path, folded.as_bytes())?;
        Ok(protocol::Written { path, sha256 })
    }

    /// py-spy's exit status once it is reaped (None: it had to be killed);
    /// its CPU time is taken out of the stage's.
    fn reap(&self) -> Option<i32> {
        let mut asked = false;
        let mut deadline = Instant::now() + WRITE_GRACE;
        loop {
            let mut status = 0;
            // SAFETY: wait4 writes only into the two locals it is given.
            let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
            let r = unsafe { libc::wait4(self.pid, &mut status, libc::WNOHANG, &mut usage) };
            if r == self.pid {
                crate::measure::not_the_stages(&usage);
                let killed = libc::WIFSIGNALED(status);
                return (!killed).then(|| libc::WEXITSTATUS(status));
            }
            if r < 0 {
                return None;
            }
            if Instant::now() >= deadline {
                // SAFETY: kill with a pid and a signal number.
                unsafe { libc::kill(self.pid, if asked { libc::SIGKILL } else { libc::SIGINT }) };
                asked = true;
                deadline = Instant::now() + WRITE_GRACE;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

/// Whether py-spy said it found no Python process in the tree.
fn found_no_python(stderr: &str) -> bool {
    stderr.contains("No python processes found") || stderr.contains("Failed to find python version")
}

/// py-spy's error, as one line that says what to do.
fn why(stderr: &str) -> String {
    let said = stderr
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("Error:"))
        .map(|l| l.trim_start_matches("Error:").trim())
        .unwrap_or("it exited without a profile");
    if said.contains("Permission denied") || said.contains("Operation not permitted") {
        let scope = std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope")
            .ok()
            .map(|s| format!(", kernel.yama.ptrace_scope is {}", s.trim()))
            .unwrap_or_default();
        return format!(
            "--sample: py-spy may not read the command's processes (ptrace not permitted{scope}); run as root, set kernel.yama.ptrace_scope to 0, or give the container SYS_PTRACE (docker run --cap-add SYS_PTRACE)"
        );
    }
    if found_no_python(said) {
        // With --subprocesses py-spy says this also when it may read none
        // of the tree's processes: without CAP_SYS_PTRACE, a process of
        // another user (or a non-dumpable one) cannot be read.
        return match may_read_any_process() {
            true => "--sample: py-spy found no Python process in the command's tree within its first second (--sample samples Python programs)".into(),
            false => "--sample: py-spy found no Python process it may read in the command's tree within its first second: the tree has no Python, or its processes run as another user (or are not dumpable) and this worker lacks CAP_SYS_PTRACE; run the command as the worker's user, run as root, or give the container SYS_PTRACE (docker run --cap-add SYS_PTRACE)".into(),
        };
    }
    let first: String = said.chars().take(200).collect();
    format!("--sample: py-spy could not sample the command: {first}")
}

/// Whether this worker holds `CAP_SYS_PTRACE` (bit 19 of `CapEff`): py-spy,
/// its child, may then read any process, whoever runs it.
fn may_read_any_process() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    protocol::program::holds_cap_sys_ptrace(&status)
}

#[cfg(test)]
mod tests {
    #[test]
    fn py_spys_errors_become_one_line_that_says_what_to_do() {
        let denied =
            super::why("Error: Permission denied (os error 13)\n\nStack backtrace:\n 0: x");
        assert!(denied.contains("ptrace not permitted") && !denied.contains('\n'), "{denied}");
        let none = super::why(
            "Error: No python processes found in process 4748 or any of its subprocesses\n",
        );
        assert!(none.contains("no Python process") && !none.contains('\n'), "{none}");
        assert!(super::why("").contains("without a profile"));
    }
}
