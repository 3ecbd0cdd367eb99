//! A child watched as a test needs it: its stderr read line by line as it
//! comes, a wait for one line with a timeout, and SIGINT with a bounded
//! wait for the exit (what the resume tests of bisect and gate do).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

/// `c` spawned, its stdout dropped and its stderr read line by line on a
/// thread of its own: the child, and its lines as they come.
pub fn spawn_reading_stderr(mut c: Command) -> (Child, Receiver<String>) {
    let mut child = c.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().expect("spawn");
    let stderr = child.stderr.take().expect("a piped stderr");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    (child, rx)
}

/// The lines of `rx` up to and including the first that starts with
/// `prefix`, which must come within `limit` of each other.
pub fn lines_until(rx: &Receiver<String>, prefix: &str, limit: Duration) -> Vec<String> {
    let mut seen = Vec::new();
    loop {
        let line = rx.recv_timeout(limit).unwrap_or_else(|_| {
            panic!("no line '{prefix}…' within {limit:?}:\n{}", seen.join("\n"))
        });
        seen.push(line.clone());
        if line.starts_with(prefix) {
            return seen;
        }
    }
}

/// SIGINT to `child`, then its exit status, which must come within `limit`.
pub fn interrupt_within(mut child: Child, limit: Duration) -> ExitStatus {
    // SAFETY: kill(2) on a child this test spawned and has not reaped.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    rx.recv_timeout(limit).expect("no exit in time").expect("wait")
}
