//! A running preparation program: started with its two pipes, handed one
//! item at a time, closed (or killed) at the end.

use super::super::{StageContext, StageError};
use super::answers::{Answers, ProgramError, Said};
use crate::stages::{self, spans::SpansFile};
use protocol::Figure;
use std::io::Write;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A running preparation program.
pub struct Server {
    pid: i32,
    /// The `--span` bootstrap the program was started with, if any.
    pub(super) bootstrap: Option<stages::autospan::Bootstrap>,
    /// Our end of the items pipe; dropped to close the program's input.
    items: Option<std::fs::File>,
    answers: Answers,
    pidfd: Option<OwnedFd>,
    pub(super) spans: SpansFile,
    /// How long it may take to say ready, and to exit once its input closed.
    patience: Duration,
    /// What its files are named after: `items-` and its first item's job.
    pub(super) tag: String,
    /// py-spy sampling its tree for its whole life (`--sample`).
    pub(super) sampling: Option<stages::sampled::Running>,
}

impl Server {
    pub(super) fn start(
        command: &str,
        ctx: &mut StageContext<'_>,
        patience: Duration,
    ) -> Result<Server, StageError> {
        let tag = format!("items-{}", ctx.job_tag);
        let spans = SpansFile::create(&ctx.run_dir, &tag)?;
        let pipe = || {
            nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
                .map_err(|e| StageError::Failed(format!("cannot make a pipe: {e}")))
        };
        let (items_read, items_write) = pipe()?;
        let (answers_read, answers_write) = pipe()?;
        let (child_in, child_out) = (items_read.as_raw_fd(), answers_write.as_raw_fd());
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c").arg(command).stdin(Stdio::null()).stdout(Stdio::null());
        for var in protocol::env::LAUNCH {
            cmd.env_remove(var);
        }
        cmd.env(protocol::env::SPANS, spans.path())
            .env(protocol::env::ITEMS_FD, child_in.to_string())
            .env(protocol::env::ANSWERS_FD, child_out.to_string());
        let bootstrap = stages::autospan::Bootstrap::create(&ctx.run_dir, &ctx.job_tag, ctx.spans)?;
        if let Some(b) = &bootstrap {
            b.apply(&mut cmd);
        }
        // SAFETY: fcntl and prctl are async-signal-safe; nothing else runs
        // between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                crate::tree::enter_stage_cgroup();
                crate::child_signals::restore_in_child()?;
                for fd in [child_in, child_out] {
                    if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
                    .map_err(std::io::Error::from)
            });
        }
        crate::tree::will_start_processes();
        let child = cmd.spawn().map_err(|e| {
            StageError::Failed(format!("cannot start the preparation program: {e}"))
        })?;
        // The program's ends are the program's alone now.
        drop((items_read, answers_write));
        let pid = child.id() as i32;
        let cwd = std::env::current_dir().unwrap_or_default();
        let sampling = match ctx.sample.map(|req| stages::sampled::attach(req, pid, cwd)) {
            Some(Err(e)) => {
                crate::tree::kill_tree();
                let _ = crate::tree::wait_child(pid);
                return Err(e);
            }
            Some(Ok(running)) => Some(running),
            None => None,
        };
        let mut server = Server {
            pid,
            bootstrap,
            items: Some(std::fs::File::from(items_write)),
            answers: Answers::new(answers_read),
            pidfd: stages::command::pidfd_open(pid),
            spans,
            patience,
            tag,
            sampling,
        };
        let deadline = Instant::now() + patience;
        match server.next_answer(Some(deadline)) {
            Ok(Said::Ready) => Ok(server),
            Ok(_) => Err(server.fail("its first line was not {\"ready\": true}".into())),
            Err(why) if why.is_not_ready() => Err(server.fail(format!(
                "did not say it was ready within --connect-timeout ({:.1} s)",
                patience.as_secs_f64()
            ))),
            Err(why) => Err(server.fail(format!("stopped before it said ready: {why}"))),
        }
    }

    /// Hands over one item and waits for its answer; the spans the program
    /// wrote meanwhile become the item's figures and slices.
    pub(super) fn item(
        &mut self,
        id: &str,
        out: &str,
        reporter: &mut dyn stages::Reporter,
    ) -> Result<Vec<Figure>, StageError> {
        let mut line = serde_json::to_vec(&serde_json::json!({ "item": id, "out": out }))
            .expect("a JSON object");
        line.push(b'\n');
        let written = self.items.as_mut().map(|f| f.write_all(&line));
        if !matches!(written, Some(Ok(()))) {
            return Err(StageError::Failed(
                "the preparation program closed its input before the item was handed over".into(),
            ));
        }
        // Spans tallied between items (start-up, the last item's late lines) are no item's.
        let _ = self.spans.tally.take_recent();
        match self.next_answer(None) {
            Ok(Said::Done(done)) if done == id => {}
            Ok(Said::Done(_)) => {
                return Err(StageError::Failed(
                    "the preparation program answered done for an item it was not given".into(),
                ));
            }
            Ok(Said::Error(message)) => {
                // Its text may name the item or a path: the terminal only.
                let _ = writeln!(std::io::stderr(), "preparation program: {message}");
                return Err(StageError::Failed(
                    "the preparation program answered error (its message is on stderr)".into(),
                ));
            }
            Ok(Said::Ready) => {
                return Err(StageError::Failed(
                    "the preparation program said ready again instead of answering".into(),
                ));
            }
            Err(why) => {
                let why = match ended(self.pid) {
                    Some(how) => format!("exited before answering ({how})"),
                    None => why.to_string(),
                };
                return Err(StageError::Failed(format!("the preparation program {why}")));
            }
        }
        self.spans.follow(false, |_, _| {}).map_err(|e| StageError::Failed(e.to_string()))?;
        let timed = std::mem::take(&mut self.spans.tally.timed);
        stages::spans::place(timed, reporter);
        // This item's spans: what the program tallied since the last item
        // (the helper writes its tally before it answers done).
        let spans = self.spans.tally.take_recent();
        let figures = stages::spans::figures_of(&spans);
        reporter.spans(spans, Vec::new());
        Ok(figures)
    }

    /// The next answer, waiting until `deadline` (or for ever: a stage
    /// timeout ends the worker's tree); the program's exit ends the wait.
    fn next_answer(&mut self, deadline: Option<Instant>) -> Result<Said, ProgramError> {
        self.answers.next(self.pidfd.as_ref(), deadline)
    }

    /// Ends the program's tree after it broke the protocol at start, and
    /// says why, with its exit status when it had already exited.
    fn fail(self, why: String) -> StageError {
        let how = ended(self.pid).map(|how| format!(" ({how})")).unwrap_or_default();
        self.kill_and_reap();
        StageError::Failed(format!("the preparation program {why}{how}"))
    }

    /// SIGKILLs the program's whole tree and reaps the program (and its
    /// sampler, whose stacks are no one's).
    pub(super) fn kill_and_reap(self) -> Option<std::process::ExitStatus> {
        drop(self.items);
        crate::tree::kill_tree();
        let status = crate::tree::wait_child(self.pid).ok().map(std::process::ExitStatus::from_raw);
        if let Some(s) = self.sampling {
            s.abandon();
        }
        status
    }

    /// Closes the program's input and waits for it to exit 0 (up to the
    /// start-up's patience); reaps it. Its descendants still alive are the
    /// caller's to contain (they are leaks).
    pub(super) fn close(mut self) -> Result<(), ProgramError> {
        drop(self.items.take());
        let deadline = Instant::now() + self.patience;
        while !stages::command::exited(self.pid) {
            let now = Instant::now();
            if now >= deadline {
                let after = self.patience.as_secs_f64();
                self.kill_and_reap();
                return Err(ProgramError::new(format!(
                    "the preparation program did not exit within {after:.1} s after its input closed"
                )));
            }
            match &self.pidfd {
                Some(fd) => stages::command::sleep_on(fd, deadline - now),
                None => std::thread::sleep(Duration::from_millis(5).min(deadline - now)),
            }
        }
        let status = crate::tree::wait_child(self.pid)
            .map(std::process::ExitStatus::from_raw)
            .map_err(|e| ProgramError::new(format!("waiting for the preparation program: {e}")))?;
        match (status.code(), status.signal()) {
            // An answer no item asked for, as mid-run: a protocol error.
            (Some(0), _) if self.answers.more_after_last() => Err(ProgramError::new(
                "the preparation program wrote an answer line after its last item: \
                 one answer per item (docs/item-protocol.md)"
                    .into(),
            )),
            (Some(0), _) => Ok(()),
            (Some(code), _) => Err(ProgramError::new(format!(
                "the preparation program exited with status {code} after its input closed"
            ))),
            (_, Some(sig)) => Err(ProgramError::new(format!(
                "the preparation program was killed by signal {sig} after its input closed"
            ))),
            _ => Err(ProgramError::new(
                "the preparation program ended abnormally after its input closed".into(),
            )),
        }
    }
}

/// How the child `pid` ended, if it has (without reaping it): "it exited
/// with status 3", "it was killed by signal 9". A program whose answers
/// pipe closed may still be exiting: it gets a moment.
fn ended(pid: i32) -> Option<String> {
    for _ in 0..50 {
        // SAFETY: waitid writes only into the siginfo it is given.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
        let r = unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, flags) };
        // SAFETY: si_pid and si_status are valid for a waitid result.
        if r == 0 && unsafe { info.si_pid() } == pid {
            let status = unsafe { info.si_status() };
            return Some(match info.si_code {
                libc::CLD_EXITED => format!("it exited with status {status}"),
                _ => format!("it was killed by signal {status}"),
            });
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    None
}
