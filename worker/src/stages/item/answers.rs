//! What a preparation program may say on its answers pipe, read a line
//! at a time (at most [`MAX_ANSWER`] bytes) while its exit is watched.

use super::MAX_ANSWER;
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::Instant;

/// What a program may write on its answers pipe.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Answer {
    ready: Option<bool>,
    done: Option<String>,
    error: Option<String>,
}

pub(super) enum Said {
    Ready,
    Done(String),
    Error(String),
}

/// The read end of the answers pipe, split into lines.
pub(super) struct Answers {
    fd: OwnedFd,
    buf: Vec<u8>,
}

/// What went wrong with a preparation program, in a person's words (the
/// caller says whose: "the preparation program …").
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ProgramError(String);

impl ProgramError {
    pub(super) fn new(why: String) -> ProgramError {
        ProgramError(why)
    }

    /// The ready line's deadline passed.
    pub(super) fn is_not_ready(&self) -> bool {
        self.0 == NOT_READY
    }
}

/// An answer's deadline passed (only the ready line has one).
const NOT_READY: &str = "did not answer in time (--connect-timeout)";

impl Answers {
    pub(super) fn new(fd: OwnedFd) -> Answers {
        Answers { fd, buf: Vec::new() }
    }

    /// The next answer, parsed: waiting on the pipe and the program's exit
    /// (see [`Answers::line`]).
    pub(super) fn next(
        &mut self,
        pidfd: Option<&OwnedFd>,
        deadline: Option<Instant>,
    ) -> Result<Said, ProgramError> {
        let line = self.line(pidfd, deadline)?;
        let a: Answer = serde_json::from_slice(&line)
            .map_err(|e| ProgramError(format!("wrote a malformed answer line: {e}")))?;
        match a {
            Answer { ready: Some(true), done: None, error: None } => Ok(Said::Ready),
            Answer { ready: None, done: Some(id), error: None } => Ok(Said::Done(id)),
            Answer { ready: None, done: None, error: Some(m) } => Ok(Said::Error(m)),
            _ => Err(ProgramError("wrote an answer line that is not one of {\"ready\": true}, {\"done\": ID}, {\"error\": MESSAGE}".into())),
        }
    }

    /// Whether the pipe holds anything but blank lines once the program
    /// has exited: what it wrote after its last answer (read without
    /// waiting: a descendant may still hold the pipe open).
    pub(super) fn more_after_last(&mut self) -> bool {
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
