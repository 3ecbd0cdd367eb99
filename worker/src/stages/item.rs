//! A user's own per-item preparation (`--prepare`): one long-lived program
//! per worker process, handed one item at a time over two pipes (see
//! docs/item-protocol.md).
//!
//! On the worker's first `PrepareItem` the program starts as `sh -c
//! COMMAND`, a child of the worker in its process tree (its cgroup, its
//! parent-death signal), with `STAGEBENCH_ITEMS_FD` (it reads items there)
//! and `STAGEBENCH_ANSWERS_FD` (it writes answers there) in its
//! environment, and `STAGEBENCH_SPANS` as a command gets. The time until it
//! writes `{"ready": true}` is its start-up: the worker's untimed setup of
//! that first item (`setup_s`), so an item's wall runs from handing it over
//! to its answer. Each item is one line `{"item": ID, "out": DIR}`; the
//! answer is `{"done": ID}` or `{"error": MESSAGE}`. The spans the program
//! wrote while it worked on an item become that item's figures and slices.
//!
//! The program outlives its items: the session keeps the [`Server`] across
//! assignments and measures each item's tree without killing it. On
//! `Finish` the worker closes the program's input; it must exit 0, and the
//! tree is then contained like a stage's (leaks named and killed).
//!
//! Nothing the program writes enters a message but what is checked here:
//! an `error`'s text goes to the worker's stderr (the user's terminal),
//! never to the coordinator, since it may name the item or a path.

use super::spans::SpansFile;
use super::{StageContext, StageError};
use protocol::Figure;
use std::io::Write;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Longest answer line the worker reads (a program writing without a
/// newline cannot make it hold more).
pub use protocol::items::MAX_ANSWER;

/// A running preparation program.
pub struct Server {
    pid: i32,
    /// The `--span` bootstrap the program was started with, if any.
    bootstrap: Option<super::autospan::Bootstrap>,
    /// Our end of the items pipe; dropped to close the program's input.
    items: Option<std::fs::File>,
    answers: Answers,
    pidfd: Option<OwnedFd>,
    spans: SpansFile,
    /// How long it may take to say ready, and to exit once its input closed.
    patience: Duration,
}

/// A program's close: how it ended, its tree contained, the `--span`
/// targets it never matched, and its tree's I/O over its whole life.
pub struct Closed {
    pub result: Result<(), ProgramError>,
    pub contained: crate::tree::Contained,
    pub spans_not_found: Vec<String>,
    /// Targets refused or never called, over the program's life.
    pub span_warnings: Vec<String>,
    pub io: Option<protocol::Io>,
    pub runtime: protocol::Runtime,
}

/// What a program may write on its answers pipe.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Answer {
    ready: Option<bool>,
    done: Option<String>,
    error: Option<String>,
}

enum Said {
    Ready,
    Done(String),
    Error(String),
}

/// A worker's preparation program, if it started one, and the sampling of
/// its tree from its start to its close: an item is measured by the clock
/// alone (a few microseconds), the tree once for the program's life.
pub struct Items {
    server: Option<Server>,
    sampler: Option<crate::tree::Sampler>,
    /// The tree's I/O counters when the program was about to start.
    io_start: Option<crate::tree::io::Counters>,
    /// What the program ran on: read before it started, completed by what
    /// its Python helper said at exit.
    pub runtime: protocol::Runtime,
    sample_ms: u32,
}

impl Items {
    pub fn new(sample_ms: u32) -> Items {
        Items {
            server: None,
            sampler: None,
            io_start: None,
            runtime: protocol::Runtime::default(),
            sample_ms,
        }
    }

    /// Whether a program is running.
    pub fn running(&self) -> bool {
        self.server.is_some()
    }

    /// Closes the program (it must exit 0 once its input closes) and ends
    /// its tree: what is still alive leaked. None when no program ran.
    pub fn finish(&mut self) -> Option<Closed> {
        let mut server = self.server.take()?;
        let _ = server.spans.follow(true, |_, _| {});
        let spans_not_found = match &server.bootstrap {
            Some(b) => b.not_found(&server.spans.tally.matched()),
            None => Vec::new(),
        };
        server.spans.tally.settle();
        let span_warnings = server.spans.tally.warnings();
        let python = server.spans.tally.runtime.take();
        let result = server.close();
        let sampler = self.sampler.take()?;
        let contained = crate::tree::contain(sampler);
        let io = crate::tree::io::between(self.io_start.take(), crate::tree::io::now());
        let mut runtime = std::mem::take(&mut self.runtime);
        if let Some(python) = python {
            python.fill(&mut runtime);
        }
        Some(Closed { result, contained, spans_not_found, span_warnings, io, runtime })
    }

    /// Kills the program's tree and stops sampling it (after a failure).
    fn abort(&mut self) {
        if let Some(s) = self.server.take() {
            s.kill_and_reap();
        }
        if let Some(sampler) = self.sampler.take() {
            crate::tree::contain(sampler);
        }
    }
}

/// Runs one item, starting the program first if this worker has none.
pub(super) fn run(
    command: &str,
    id: &str,
    out: &str,
    ready_timeout_ms: u64,
    ctx: &mut StageContext<'_>,
) -> Result<Vec<Figure>, StageError> {
    if ctx.items.server.is_none() {
        ctx.items.sampler = Some(crate::tree::Sampler::start(ctx.items.sample_ms));
        ctx.items.io_start = crate::tree::io::now();
        match Server::start(command, ctx, Duration::from_millis(ready_timeout_ms)) {
            Ok(server) => ctx.items.server = Some(server),
            Err(e) => {
                ctx.items.abort();
                return Err(e);
            }
        }
        // The start-up is this item's untimed setup (`setup_s`).
        ctx.reporter.setup_done();
    }
    let server = ctx.items.server.as_mut().expect("started above");
    let out_dir = ctx.run_dir.join(out);
    let result = server.item(id, &out_dir.to_string_lossy(), &mut *ctx.reporter);
    if result.is_err() {
        // A program that failed an item, crashed or broke the protocol is
        // not trusted with another: its tree is ended with the stage.
        ctx.items.abort();
    }
    result
}

impl Server {
    fn start(
        command: &str,
        ctx: &mut StageContext<'_>,
        patience: Duration,
    ) -> Result<Server, StageError> {
        let spans = SpansFile::create(&ctx.run_dir, &format!("items-{}", ctx.job_tag))?;
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
        let bootstrap = super::autospan::Bootstrap::create(&ctx.run_dir, &ctx.job_tag, ctx.spans)?;
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
        let mut server = Server {
            pid,
            bootstrap,
            items: Some(std::fs::File::from(items_write)),
            answers: Answers { fd: answers_read, buf: Vec::new() },
            pidfd: super::command::pidfd_open(pid),
            spans,
            patience,
        };
        let deadline = Instant::now() + patience;
        match server.next_answer(Some(deadline)) {
            Ok(Said::Ready) => Ok(server),
            Ok(_) => Err(server.fail("its first line was not {\"ready\": true}".into())),
            Err(why) if why.0 == NOT_READY => Err(server.fail(format!(
                "did not say it was ready within --connect-timeout ({:.1} s)",
                patience.as_secs_f64()
            ))),
            Err(why) => Err(server.fail(format!("stopped before it said ready: {why}"))),
        }
    }

    /// Hands over one item and waits for its answer; the spans the program
    /// wrote meanwhile become the item's figures and slices.
    fn item(
        &mut self,
        id: &str,
        out: &str,
        reporter: &mut dyn super::Reporter,
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
        super::spans::place(timed, reporter);
        // This item's spans: what the program tallied since the last item
        // (the helper writes its tally before it answers done).
        let spans = self.spans.tally.take_recent();
        let figures = super::spans::figures_of(&spans);
        reporter.spans(spans, Vec::new());
        Ok(figures)
    }

    /// The next answer, waiting until `deadline` (or for ever: a stage
    /// timeout ends the worker's tree); the program's exit ends the wait.
    fn next_answer(&mut self, deadline: Option<Instant>) -> Result<Said, ProgramError> {
        let line = self.answers.line(self.pidfd.as_ref(), deadline)?;
        let a: Answer = serde_json::from_slice(&line)
            .map_err(|e| ProgramError(format!("wrote a malformed answer line: {e}")))?;
        match a {
            Answer { ready: Some(true), done: None, error: None } => Ok(Said::Ready),
            Answer { ready: None, done: Some(id), error: None } => Ok(Said::Done(id)),
            Answer { ready: None, done: None, error: Some(m) } => Ok(Said::Error(m)),
            _ => Err(ProgramError("wrote an answer line that is not one of {\"ready\": true}, {\"done\": ID}, {\"error\": MESSAGE}".into())),
        }
    }

    /// Ends the program's tree after it broke the protocol at start, and
    /// says why, with its exit status when it had already exited.
    fn fail(self, why: String) -> StageError {
        let how = ended(self.pid).map(|how| format!(" ({how})")).unwrap_or_default();
        self.kill_and_reap();
        StageError::Failed(format!("the preparation program {why}{how}"))
    }

    /// SIGKILLs the program's whole tree and reaps the program.
    fn kill_and_reap(self) -> Option<std::process::ExitStatus> {
        drop(self.items);
        crate::tree::kill_tree();
        crate::tree::wait_child(self.pid).ok().map(std::process::ExitStatus::from_raw)
    }

    /// Closes the program's input and waits for it to exit 0 (up to the
    /// start-up's patience); reaps it. Its descendants still alive are the
    /// caller's to contain (they are leaks).
    fn close(mut self) -> Result<(), ProgramError> {
        drop(self.items.take());
        let deadline = Instant::now() + self.patience;
        while !super::command::exited(self.pid) {
            let now = Instant::now();
            if now >= deadline {
                let after = self.patience.as_secs_f64();
                self.kill_and_reap();
                return Err(ProgramError(format!(
                    "the preparation program did not exit within {after:.1} s after its input closed"
                )));
            }
            match &self.pidfd {
                Some(fd) => super::command::sleep_on(fd, deadline - now),
                None => std::thread::sleep(Duration::from_millis(5).min(deadline - now)),
            }
        }
        let status = crate::tree::wait_child(self.pid)
            .map(std::process::ExitStatus::from_raw)
            .map_err(|e| ProgramError(format!("waiting for the preparation program: {e}")))?;
        match (status.code(), status.signal()) {
            // An answer no item asked for, as mid-run: a protocol error.
            (Some(0), _) if self.answers.more_after_last() => Err(ProgramError(
                "the preparation program wrote an answer line after its last item: \
                 one answer per item (docs/item-protocol.md)"
                    .into(),
            )),
            (Some(0), _) => Ok(()),
            (Some(code), _) => Err(ProgramError(format!(
                "the preparation program exited with status {code} after its input closed"
            ))),
            (_, Some(sig)) => Err(ProgramError(format!(
                "the preparation program was killed by signal {sig} after its input closed"
            ))),
            _ => Err(ProgramError(
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

/// The read end of the answers pipe, split into lines.
struct Answers {
    fd: OwnedFd,
    buf: Vec<u8>,
}

/// What went wrong with a preparation program, in a person's words (the
/// caller says whose: "the preparation program …").
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ProgramError(String);

/// An answer's deadline passed (only the ready line has one).
const NOT_READY: &str = "did not answer in time (--connect-timeout)";

impl Answers {
    /// Whether the pipe holds anything but blank lines once the program
    /// has exited: what it wrote after its last answer (read without
    /// waiting: a descendant may still hold the pipe open).
    fn more_after_last(&mut self) -> bool {
        // SAFETY: fcntl on our own descriptor.
        unsafe { libc::fcntl(self.fd.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) };
        let mut chunk = [0u8; 4096];
        while self.buf.len() <= MAX_ANSWER {
            // SAFETY: read into a local buffer of the given length.
            let r =
                unsafe { libc::read(self.fd.as_raw_fd(), chunk.as_mut_ptr().cast(), chunk.len()) };
            if r <= 0 {
                break;
            }
            self.buf.extend_from_slice(&chunk[..r as usize]);
        }
        self.buf.iter().any(|b| !b.is_ascii_whitespace())
    }

    /// The next complete line, waiting on the pipe and the program's exit.
    fn line(
        &mut self,
        pidfd: Option<&OwnedFd>,
        deadline: Option<Instant>,
    ) -> Result<Vec<u8>, ProgramError> {
        loop {
            if let Some(i) = self.buf.iter().position(|b| *b == b'\n') {
                let mut line: Vec<u8> = self.buf.drain(..=i).collect();
                line.pop();
                return Ok(line);
            }
            if self.buf.len() > MAX_ANSWER {
                return Err(ProgramError(format!(
                    "wrote an answer line longer than {MAX_ANSWER} bytes"
                )));
            }
            let wait = match deadline {
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return Err(ProgramError(NOT_READY.into()));
                    }
                    (d - now).as_millis().min(i32::MAX as u128) as i32 + 1
                }
                None => -1,
            };
            let mut fds =
                vec![libc::pollfd { fd: self.fd.as_raw_fd(), events: libc::POLLIN, revents: 0 }];
            if let Some(p) = pidfd {
                fds.push(libc::pollfd { fd: p.as_raw_fd(), events: libc::POLLIN, revents: 0 });
            }
            // SAFETY: poll reads and writes only the entries it is given.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, wait) };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(ProgramError(format!("could not be waited for: {e}")));
            }
            if fds[0].revents != 0 {
                let mut chunk = [0u8; 4096];
                // SAFETY: read into a local buffer of the given length.
                let r = unsafe {
                    libc::read(self.fd.as_raw_fd(), chunk.as_mut_ptr().cast(), chunk.len())
                };
                if r > 0 {
                    self.buf.extend_from_slice(&chunk[..r as usize]);
                    continue;
                }
                if r == 0 {
                    return Err(ProgramError(
                        "closed its answers before answering (it exited, or closed the descriptor)"
                            .into(),
                    ));
                }
                let e = std::io::Error::last_os_error();
                if e.kind() != std::io::ErrorKind::Interrupted {
                    return Err(ProgramError(format!("could not be read from: {e}")));
                }
                continue;
            }
            if fds.get(1).is_some_and(|p| p.revents != 0) {
                // Exited: whatever it wrote before is still in the pipe.
                let mut chunk = [0u8; 4096];
                // SAFETY: as above; the pipe may be empty, then read sees
                // the end only once every writer is gone.
                let r = unsafe {
                    libc::fcntl(self.fd.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK);
                    libc::read(self.fd.as_raw_fd(), chunk.as_mut_ptr().cast(), chunk.len())
                };
                if r > 0 {
                    self.buf.extend_from_slice(&chunk[..r as usize]);
                    continue;
                }
                return Err(ProgramError("exited before answering".into()));
            }
        }
    }
}
