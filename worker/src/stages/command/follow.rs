//! Following a command while it runs: its spans file as it grows (progress
//! to the coordinator, the kill point checked at every line) and its exit.
//!
//! The worker sleeps in `poll` on a pidfd, readable when the command exits,
//! so it sees the end at once, and reads what the file gained every
//! [`WITH_KILL_POINT`] when the stage has a kill point, every [`PROGRESS`]
//! otherwise (for the progress line). Not inotify: on this project's
//! machines an inotify watch on the file, held while the command ran, made a
//! command's own `sleep 0.2` end 6 to 14 ms late in most runs (a pidfd
//! alone, or a timed look, did not). Without a pidfd, the end is seen within
//! one interval.

use crate::stages::Reporter;
use crate::stages::spans::{Line, SpansFile, Tally};
use protocol::KillPoint;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

/// How often the file is read while a stage with a kill point runs: the
/// kill comes at most this long after the point's line was written.
const WITH_KILL_POINT: Duration = Duration::from_millis(5);
/// How often the file is read otherwise (progress for a person).
const PROGRESS: Duration = Duration::from_millis(100);
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
    let interval = match kill {
        Some(_) => WITH_KILL_POINT,
        None => PROGRESS,
    };
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
            bad_line = read.err().map(|e| e.to_string());
        }
        if exited(pid) {
            let unreached = kill.map(|k| not_reached(k, &spans.tally, started.elapsed()));
            return Ended::Exited { bad_line, unreached };
        }
        let now = Instant::now();
        if let Some(d) = deadline.filter(|d| *d <= now) {
            return Ended::Killed(format!("{:.3} s after it started", (d - started).as_secs_f64()));
        }
        let wait = deadline.map_or(interval, |d| interval.min(d - now));
        match &pidfd {
            Some(fd) => sleep_on(fd, wait),
            None => std::thread::sleep(wait),
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
        (KillPoint::Span { name, n }, Line::Agg(agg))
            if agg.spans.contains_key(name) && tally.count(name) >= u64::from(*n) =>
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
pub(in crate::stages) fn exited(pid: i32) -> bool {
    // SAFETY: waitid writes only into the siginfo it is given.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
    let r = unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, flags) };
    // SAFETY: si_pid is valid for a waitid result (0 when nothing changed).
    r != 0 || unsafe { info.si_pid() } != 0
}

pub(in crate::stages) fn pidfd_open(pid: i32) -> Option<OwnedFd> {
    // SAFETY: a plain syscall with integer arguments; the fd is ours if >= 0.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Sleeps until `fd` is readable or `wait` passes.
pub(in crate::stages) fn sleep_on(fd: &OwnedFd, wait: Duration) {
    let mut polled = libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    // Rounded up, so a deadline is never missed by a millisecond.
    let ms = (wait.as_micros().div_ceil(1000)).min(i32::MAX as u128) as i32;
    // SAFETY: poll reads and writes only the one entry it is given.
    unsafe { libc::poll(&mut polled, 1, ms) };
}
