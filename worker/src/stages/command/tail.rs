//! A command's stderr, passed through to the worker's own byte for byte,
//! with its last [`KEPT`] bytes kept: a failed stage's message, for a
//! private file the coordinator may write (never for evidence).
//!
//! Only when the worker's stderr is not a terminal. A program asks
//! `isatty(2)` to choose colours, progress bars and line buffering, and a
//! pipe in place of a terminal would change what it does; in place of a
//! file or a pipe, a pipe changes nothing it can see but `fstat`'s type.
//! On a terminal the message is where the person already looks.

use std::io::{IsTerminal, Read, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How much of the end of a command's stderr is kept.
pub(crate) const KEPT: usize = 64 * 1024;

/// How long a failed command's stderr may take to reach its end after the
/// command exited (a descendant that outlived it may still hold it open).
const DRAIN: Duration = Duration::from_secs(2);

/// A command's stderr kept, where it is: a pipe whose read end a thread
/// already follows, its write end given to `cmd` (which must be dropped
/// once the command started, so the pipe ends with the command's tree).
/// None, and `cmd` untouched, on a terminal or where no pipe or thread
/// could be made: the command then writes where it would unmeasured.
pub(super) fn attach(cmd: &mut Command) -> Option<Tail> {
    if std::io::stderr().is_terminal() {
        return None;
    }
    let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).ok()?;
    let tail = Tail::follow(std::fs::File::from(read))?;
    cmd.stderr(Stdio::from(write));
    Some(tail)
}

/// The end of a command's stderr, filled by a thread that passes every
/// byte on to the worker's stderr.
pub(super) struct Tail {
    kept: Arc<Mutex<Kept>>,
    ended: Receiver<()>,
}

impl Tail {
    fn follow(from: std::fs::File) -> Option<Tail> {
        let kept = Arc::new(Mutex::new(Kept::default()));
        let (tx, ended) = channel();
        let shared = Arc::clone(&kept);
        std::thread::Builder::new()
            .name("stderr-tail".into())
            .spawn(move || {
                pass_on(from, &shared);
                let _ = tx.send(());
            })
            .ok()
            .map(|_| Tail { kept, ended })
    }

    /// What was kept, once the stream ended (or [`DRAIN`] passed): whole
    /// lines, `None` when the command wrote nothing.
    pub(super) fn text(self) -> Option<String> {
        // Ended, or not within DRAIN, or no thread: what was kept so far.
        let _ = self.ended.recv_timeout(DRAIN);
        let kept = self.kept.lock().map(|k| k.text()).unwrap_or_default();
        (!kept.trim().is_empty()).then_some(kept)
    }
}

fn pass_on(mut from: std::fs::File, kept: &Mutex<Kept>) {
    let mut buf = [0u8; 8192];
    let mut out = std::io::stderr();
    loop {
        match from.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                // Passed on first: the person sees it as the program wrote it.
                let _ = out.write_all(&buf[..n]);
                if let Ok(mut k) = kept.lock() {
                    k.push(&buf[..n]);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

/// The last [`KEPT`] bytes, and whether anything before them was dropped.
#[derive(Default)]
struct Kept {
    bytes: std::collections::VecDeque<u8>,
    cut: bool,
}

impl Kept {
    fn push(&mut self, more: &[u8]) {
        self.bytes.extend(more);
        if self.bytes.len() > KEPT {
            self.bytes.drain(..self.bytes.len() - KEPT);
            self.cut = true;
        }
    }

    /// As text: from the first whole line when the start was dropped.
    fn text(&self) -> String {
        let (a, b) = self.bytes.as_slices();
        let all = [a, b].concat();
        let from = match self.cut {
            true => all.iter().position(|&c| c == b'\n').map_or(0, |i| i + 1),
            false => 0,
        };
        String::from_utf8_lossy(&all[from..]).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_bytes_from_a_whole_line() {
        let mut k = Kept::default();
        k.push(b"first line\n");
        assert_eq!(k.text(), "first line\n");
        let line = format!("{}\n", "x".repeat(99));
        for _ in 0..(KEPT / 100 + 10) {
            k.push(line.as_bytes());
        }
        k.push(b"Traceback: BadZipFile\n");
        let text = k.text();
        assert!(text.len() <= KEPT, "{}", text.len());
        assert!(text.starts_with('x'), "cut at a line's start: {:?}", &text[..10]);
        assert!(text.ends_with("Traceback: BadZipFile\n"));
        assert!(!text.contains("first line"));
    }
}
