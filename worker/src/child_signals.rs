//! The signal state a user's program starts with: the one the worker was
//! started with, not the worker's own.
//!
//! The worker blocks SIGTERM and SIGURG (its tree thread waits for them),
//! and its runtime ignores signals of its own; a child inherits both the
//! mask and every ignored disposition across `exec`. A command that began
//! with SIGTERM blocked could not be terminated by its own children's pool
//! (`multiprocessing.Pool.terminate()` never returned, a Keras loader hung
//! at exit). So [`record`] takes, first thing in `main`, the mask and the
//! ignored signals the user started the coordinator with (which it hands
//! every worker), and [`restore_in_child`], between fork and exec, puts
//! exactly those back.

use std::sync::OnceLock;

/// The highest signal number the kernel knows (Linux: 64).
const SIGNALS: usize = 64;

/// What the worker inherited: its blocked signals, and the signals whose
/// disposition was "ignore", each as a bit `1 << (signo - 1)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Inherited {
    pub blocked: u64,
    pub ignored: u64,
}

static INHERITED: OnceLock<Inherited> = OnceLock::new();

/// The kernel's `struct sigaction` (x86-64 and aarch64 layout): handler,
/// flags, restorer, mask, with an 8-byte signal set.
#[repr(C)]
struct KernelSigaction {
    handler: usize,
    flags: u64,
    restorer: usize,
    mask: u64,
}

/// The disposition of `signo` as the kernel has it (the raw call: glibc's
/// wrapper refuses its own reserved signals, 32 and 33).
fn disposition(signo: usize) -> Option<usize> {
    let mut old = KernelSigaction { handler: 0, flags: 0, restorer: 0, mask: 0 };
    // SAFETY: rt_sigaction with a null new action only writes `old`.
    let r = unsafe {
        libc::syscall(
            libc::SYS_rt_sigaction,
            signo,
            std::ptr::null::<KernelSigaction>(),
            &mut old,
            8,
        )
    };
    (r == 0).then_some(old.handler)
}

/// This thread's blocked signals, and the ignored ones, now.
pub fn current() -> Inherited {
    let mut set = 0u64;
    // SAFETY: rt_sigprocmask with a null new set only writes `set`.
    unsafe {
        libc::syscall(
            libc::SYS_rt_sigprocmask,
            libc::SIG_BLOCK,
            std::ptr::null::<u64>(),
            &mut set,
            8,
        );
    }
    let ignored = (1..=SIGNALS)
        .filter(|&s| disposition(s) == Some(libc::SIG_IGN))
        .fold(0u64, |acc, s| acc | 1 << (s - 1));
    Inherited { blocked: set, ignored }
}

/// Records the signal state a user's program should start with: the one
/// the coordinator was started with (`protocol::env::SIGNALS`), or, for a
/// worker started without it, the worker's own at the start of `main`.
/// Call first in `main`, before any thread changes it. Rust's own start-up
/// ignores SIGPIPE before `main`; that one is the runtime's, not the
/// user's, and is never recorded.
pub fn record() {
    let given = std::env::var(protocol::env::SIGNALS).ok().and_then(|v| parse(&v));
    let mut now = given.unwrap_or_else(current);
    now.ignored &= !(1 << (libc::SIGPIPE - 1));
    let _ = INHERITED.set(now);
}

/// `BLOCKED:IGNORED` in hex (`protocol::env::SIGNALS`).
fn parse(v: &str) -> Option<Inherited> {
    let (b, i) = v.split_once(':')?;
    Some(Inherited {
        blocked: u64::from_str_radix(b, 16).ok()?,
        ignored: u64::from_str_radix(i, 16).ok()?,
    })
}

/// What [`record`] found (nothing blocked or ignored if it never ran).
pub fn inherited() -> Inherited {
    INHERITED.get().copied().unwrap_or(Inherited { blocked: 0, ignored: 0 })
}

/// Between fork and exec: the mask the worker inherited, and every signal
/// ignored now but not then back to its default. Only raw system calls,
/// which are async-signal-safe.
pub fn restore_in_child() -> std::io::Result<()> {
    let want = inherited();
    for signo in 1..=SIGNALS {
        let bit = 1u64 << (signo - 1);
        if want.ignored & bit != 0 || disposition(signo) != Some(libc::SIG_IGN) {
            continue;
        }
        let dfl = KernelSigaction { handler: libc::SIG_DFL, flags: 0, restorer: 0, mask: 0 };
        // SAFETY: rt_sigaction reads `dfl`; no old action is written.
        unsafe {
            libc::syscall(
                libc::SYS_rt_sigaction,
                signo,
                &dfl,
                std::ptr::null_mut::<KernelSigaction>(),
                8,
            );
        }
    }
    // SAFETY: rt_sigprocmask reads the set; no old set is written.
    let r = unsafe {
        libc::syscall(
            libc::SYS_rt_sigprocmask,
            libc::SIG_SETMASK,
            &want.blocked,
            std::ptr::null_mut::<u64>(),
            8,
        )
    };
    match r {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A child started through `restore_in_child` has what was recorded,
    /// not what its parent blocked and ignored since.
    #[test]
    fn a_child_gets_the_recorded_state_back() {
        use std::os::unix::process::CommandExt;
        record();
        let at_start = inherited();
        // What the worker does later: block SIGTERM and SIGURG, ignore SIGUSR2.
        let child = std::thread::spawn(move || {
            let mut set = nix::sys::signal::SigSet::empty();
            set.add(nix::sys::signal::Signal::SIGTERM);
            set.add(nix::sys::signal::Signal::SIGURG);
            set.thread_block().unwrap();
            // SAFETY: ignoring a signal in a test process.
            unsafe {
                libc::signal(libc::SIGUSR2, libc::SIG_IGN);
            }
            let read = |fix: bool| {
                let mut c = std::process::Command::new("/bin/sh");
                c.arg("-c").arg("grep -E '^Sig(Blk|Ign)' /proc/self/status");
                if fix {
                    // SAFETY: restore_in_child makes raw system calls only.
                    unsafe { c.pre_exec(restore_in_child) };
                }
                String::from_utf8(c.output().unwrap().stdout).unwrap()
            };
            let (without, with) = (read(false), read(true));
            // SAFETY: as above, back to the default.
            unsafe {
                libc::signal(libc::SIGUSR2, libc::SIG_DFL);
            }
            (without, with)
        });
        let (without, with) = child.join().unwrap();
        let field = |text: &str, key: &str| {
            let line = text.lines().find(|l| l.starts_with(key)).unwrap();
            u64::from_str_radix(line.split_whitespace().nth(1).unwrap(), 16).unwrap()
        };
        let usr2 = 1u64 << (libc::SIGUSR2 - 1);
        assert_ne!(
            field(&without, "SigIgn:") & usr2,
            0,
            "the test's own ignore did not reach a child: {without}"
        );
        assert_eq!(field(&with, "SigBlk:"), at_start.blocked, "{with}");
        assert_eq!(field(&with, "SigIgn:"), at_start.ignored, "{with}");
        assert_eq!(field(&with, "SigIgn:") & usr2, 0);
    }
}
