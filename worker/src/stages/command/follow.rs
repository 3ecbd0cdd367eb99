//! Following a command while it runs: its spans file as it grows (progress
//! to the coordinator, the kill point checked at every line) and its exit.
//!
//! The worker sleeps in `poll` on two descriptors: a pidfd, readable when
//! the command exits, and an inotify watch on the spans file, readable when
//! the command appends to it. A command that writes nothing costs nothing
//! while it runs, and the worker sees its end at once. Where the kernel
//! offers neither, the worker looks every 10 ms instead.

use crate::stages::Reporter;
use crate::stages::spans::{Line, SpansFile, Tally};
use protocol::KillPoint;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

/// How often to look when there is no pidfd or no inotify.
const FALLBACK: Duration = Duration::from_millis(10);
/// Progress reaches the coordinator in thousandths.
const PROGRESS_TOTAL: u64 = 1000;

/// How a followed command ended.
pub(super) enum Ended {
    /// It exited by itself (not yet reaped). `bad_line`: the first bad line
    /// of its spans file; `unreached`: why its kill point never came.
    Exited { bad_line: Option<String>, unreached: Option<String> },
    /// Its kill point came, described; the caller kills its tree.
    Killed(String),
}

/// Follows the command `pid` until it exits or reaches `kill`.
pub(super) fn until_exit(
    pid: i32,
    spans: &mut SpansFile,
    kill: Option<&KillPoint>,
    reporter: &mut dyn Reporter,
) -> Ended {
    let started = Instant::now();
    let deadline = match kill {
        Some(KillPoint::After(s)) => Some(started + Duration::from_secs_f64(*s)),
        _ => None,
    };
    let pidfd = pidfd_open(pid);
    let notify = inotify_on(spans.path());
    let mut bad_line = None;
    let mut sent = None;
    loop {
        if bad_line.is_none() {
            let mut hit = None;
            let read = spans.follow(false, |line, tally| {
                if let Line::Progress(p) = line {
                    let done = (p * PROGRESS_TOTAL as f64).round() as u64;
                    if sent != Some(done) {
                        reporter.progress(done, PROGRESS_TOTAL);
                        sent = Some(done);
                    }
                }
                if hit.is_none() {
                    hit = kill.and_then(|k| reached(k, line, tally));
                }
            });
            if let Some(at) = hit {
                return Ended::Killed(at);
            }
            // A bad line fails the stage when it ends; no kill point is
            // judged from a file that broke its format.
            bad_line = read.err();
        }
        if exited(pid) {
            let unreached = kill.map(|k| not_reached(k, &spans.tally, started.elapsed()));
            return Ended::Exited { bad_line, unreached };
        }
        let now = Instant::now();
        if let Some(d) = deadline.filter(|d| *d <= now) {
            return Ended::Killed(format!("{:.3} s after it started", (d - started).as_secs_f64()));
        }
        let mut wait = match (&pidfd, &notify) {
            (Some(_), Some(_)) => None,
            _ => Some(FALLBACK),
        };
        if let Some(d) = deadline {
            wait = Some(wait.map_or(d - now, |w| w.min(d - now)));
        }
        sleep_on(&[&pidfd, &notify], wait);
        if let Some(n) = &notify {
            drain(n);
        }
    }
}

/// Whether `line` makes the kill point come, and how to say so.
fn reached(kill: &KillPoint, line: &Line, tally: &Tally) -> Option<String> {
    match (kill, line) {
        (KillPoint::Progress(at), Line::Progress(p)) if p >= at => {
            Some(format!("progress {p} reached {at}"))
        }
        (KillPoint::Span { name, n }, Line::Span { name: ended, .. })
            if ended == name && tally.count(name) >= u64::from(*n) =>
        {
            Some(format!("span '{name}' #{n} ended"))
        }
        _ => None,
    }
}

/// Why a command that ended by itself never reached `kill`.
fn not_reached(kill: &KillPoint, tally: &Tally, ran: Duration) -> String {
    let what = match kill {
        KillPoint::Progress(at) => format!(
            "progress:{at}: the command ended at progress {}",
            tally.progress.map_or("(none reported)".into(), |p| p.to_string())
        ),
        KillPoint::Span { name, n } => format!(
            "span:{name}:{n}: the command ended after {} span(s) called '{name}'",
            tally.count(name)
        ),
        KillPoint::After(s) => {
            format!("after:{s}: the command ended after {:.3} s", ran.as_secs_f64())
        }
    };
    format!("the kill point was never reached: {what}")
}

/// Whether the child `pid` has exited, without reaping it.
fn exited(pid: i32) -> bool {
    // SAFETY: waitid writes only into the siginfo it is given.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
    let r = unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, flags) };
    // SAFETY: si_pid is valid for a waitid result (0 when nothing changed).
    r != 0 || unsafe { info.si_pid() } != 0
}

fn pidfd_open(pid: i32) -> Option<OwnedFd> {
    // SAFETY: a plain syscall with integer arguments; the fd is ours if >= 0.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

fn inotify_on(path: &std::path::Path) -> Option<OwnedFd> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: the fd is ours if >= 0; the path is a valid C string.
    let fd = unsafe { libc::inotify_init1(libc::IN_CLOEXEC | libc::IN_NONBLOCK) };
    if fd < 0 {
        return None;
    }
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let w = unsafe { libc::inotify_add_watch(fd.as_raw_fd(), c.as_ptr(), libc::IN_MODIFY) };
    (w >= 0).then_some(fd)
}

/// Sleeps until one of `fds` is readable or `wait` passes (None: forever).
fn sleep_on(fds: &[&Option<OwnedFd>], wait: Option<Duration>) {
    let mut polled: Vec<libc::pollfd> = fds
        .iter()
        .filter_map(|f| f.as_ref())
        .map(|f| libc::pollfd { fd: f.as_raw_fd(), events: libc::POLLIN, revents: 0 })
        .collect();
    let ms = wait.map_or(-1, |w| w.as_millis().min(i32::MAX as u128) as i32 + 1);
    // SAFETY: poll reads and writes only the array it is given.
    unsafe { libc::poll(polled.as_mut_ptr(), polled.len() as libc::nfds_t, ms) };
}

/// Empties a non-blocking inotify descriptor.
fn drain(fd: &OwnedFd) {
    let mut buf = [0u8; 4096];
    // SAFETY: read into a local buffer of the given length.
    while unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) } > 0 {}
}
