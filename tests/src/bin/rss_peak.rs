//! `rss-peak CMD [ARGS...]`: runs CMD, then prints to stderr, as its last
//! line, `peak_rss_kib N`: the command's peak resident memory as `wait4`
//! reports it (`ru_maxrss`: the largest of the process and the descendants
//! it reaped). Exits as the command did (128 + the signal that ended it).
//!
//! Why a program of its own: Linux carries a process's peak across
//! `execve`, and a process forked from a large one (a test harness, a
//! Python benchmark) starts as large, so `wait4` never reports less than
//! its parent's size. This program is small; the command it starts is
//! measured from its own size up.

use std::process::{Command, exit};

fn main() {
    let mut args = std::env::args_os().skip(1);
    let Some(program) = args.next() else {
        eprintln!("usage: rss-peak CMD [ARGS...]");
        exit(2);
    };
    let child = match Command::new(&program).args(args).spawn() {
        Ok(child) => child,
        Err(e) => {
            eprintln!("rss-peak: cannot run {}: {e}", program.to_string_lossy());
            exit(127);
        }
    };
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; wait4 fills it for our child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for the child just spawned, which nothing else reaps.
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    if pid < 0 {
        eprintln!("rss-peak: wait4: {}", std::io::Error::last_os_error());
        exit(1);
    }
    eprintln!("peak_rss_kib {}", usage.ru_maxrss);
    let code = match (libc::WIFEXITED(status), libc::WIFSIGNALED(status)) {
        (true, _) => libc::WEXITSTATUS(status),
        (_, true) => 128 + libc::WTERMSIG(status),
        _ => 1,
    };
    exit(code);
}
