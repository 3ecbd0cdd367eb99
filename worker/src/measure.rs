//! Wall time (monotonic clock), process CPU time (getrusage) and peak RSS.
//!
//! Peak RSS is read from `/proc/self/status` (`VmHWM`), the high-water mark
//! of this program's own address space. `ru_maxrss` is not used where /proc
//! exists: Linux carries it across `execve`, so a freshly spawned worker's
//! `ru_maxrss` starts at its spawner's peak, not at its own.

use nix::sys::resource::{UsageWho, getrusage};
use protocol::{Faults, Measurement};
use std::time::Instant;

/// Process CPU times and lifetime peak RSS at one instant.
#[derive(Clone, Copy, Debug)]
pub struct Usage {
    pub user_ns: u64,
    pub sys_ns: u64,
    pub peak_rss_bytes: u64,
    pub faults: Faults,
    /// The tree's I/O counters so far (see `tree::io`).
    pub io: Option<crate::tree::io::Counters>,
}

/// Reads the resource usage of this process together with every child it
/// has waited for (a command stage's whole process tree): CPU times add up;
/// peak RSS is the larger of this process's own (`VmHWM`) and the largest
/// waited-for child's (`ru_maxrss`, which for a child includes what Linux
/// carried into it from this process at spawn).
pub fn self_usage() -> Usage {
    let read = |who| match getrusage(who) {
        // Linux reports ru_maxrss in KiB.
        Ok(u) => (
            timeval_ns(u.user_time()),
            timeval_ns(u.system_time()),
            (u.max_rss().max(0) as u64) * 1024,
            Faults {
                minor: u.minor_page_faults().max(0) as u64,
                major: u.major_page_faults().max(0) as u64,
                voluntary_switches: u.voluntary_context_switches().max(0) as u64,
                involuntary_switches: u.involuntary_context_switches().max(0) as u64,
            },
        ),
        // getrusage cannot fail on Linux for these; report zeros rather than panic.
        Err(_) => (0, 0, 0, Faults::default()),
    };
    let (user, sys, maxrss, own) = read(UsageWho::RUSAGE_SELF);
    let (c_user, c_sys, c_maxrss, mut children) = read(UsageWho::RUSAGE_CHILDREN);
    // What a sampler beside the stages used (see `not_the_stages`).
    let (not_user, not_sys, not_faults) = *NOT_THE_STAGES.lock().unwrap_or_else(|e| e.into_inner());
    children.minor = children.minor.saturating_sub(not_faults.minor);
    children.major = children.major.saturating_sub(not_faults.major);
    children.voluntary_switches =
        children.voluntary_switches.saturating_sub(not_faults.voluntary_switches);
    children.involuntary_switches =
        children.involuntary_switches.saturating_sub(not_faults.involuntary_switches);
    Usage {
        io: crate::tree::io::now(),
        user_ns: (user + c_user).saturating_sub(not_user),
        sys_ns: (sys + c_sys).saturating_sub(not_sys),
        peak_rss_bytes: own_peak_rss().unwrap_or(maxrss).max(c_maxrss),
        faults: Faults {
            minor: own.minor + children.minor,
            major: own.major + children.major,
            voluntary_switches: own.voluntary_switches + children.voluntary_switches,
            involuntary_switches: own.involuntary_switches + children.involuntary_switches,
        },
    }
}

/// CPU times and counts of children this worker reaped that were no part
/// of any stage (py-spy beside a sampled command), summed: taken out of
/// `RUSAGE_CHILDREN` by [`self_usage`].
static NOT_THE_STAGES: std::sync::Mutex<(u64, u64, Faults)> = std::sync::Mutex::new((
    0,
    0,
    Faults { minor: 0, major: 0, voluntary_switches: 0, involuntary_switches: 0 },
));

/// A reaped child's usage (wait4's) that no stage's figures must count.
pub fn not_the_stages(usage: &libc::rusage) {
    let mut n = NOT_THE_STAGES.lock().unwrap_or_else(|e| e.into_inner());
    n.0 += timeval_ns(nix::sys::time::TimeVal::new(usage.ru_utime.tv_sec, usage.ru_utime.tv_usec));
    n.1 += timeval_ns(nix::sys::time::TimeVal::new(usage.ru_stime.tv_sec, usage.ru_stime.tv_usec));
    n.2.minor += usage.ru_minflt.max(0) as u64;
    n.2.major += usage.ru_majflt.max(0) as u64;
    n.2.voluntary_switches += usage.ru_nvcsw.max(0) as u64;
    n.2.involuntary_switches += usage.ru_nivcsw.max(0) as u64;
}

/// What [`not_the_stages`] took out so far, over this worker's life: its
/// exit status (wait4's, the coordinator's) still counts it.
pub fn beside() -> Option<protocol::Beside> {
    let (user_ns, sys_ns, faults) = *NOT_THE_STAGES.lock().unwrap_or_else(|e| e.into_inner());
    let none = user_ns == 0 && sys_ns == 0 && faults == Faults::default();
    (!none).then_some(protocol::Beside { user_ns, sys_ns, faults })
}

/// `VmHWM` of this process's own address space, in bytes.
pub fn own_peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib =
        status.lines().find_map(|l| l.strip_prefix("VmHWM:"))?.trim().trim_end_matches("kB").trim();
    kib.parse::<u64>().ok().map(|k| k * 1024)
}

fn timeval_ns(tv: nix::sys::time::TimeVal) -> u64 {
    (tv.tv_sec().max(0) as u64) * 1_000_000_000 + (tv.tv_usec().max(0) as u64) * 1_000
}

/// The clock and this process's usage at one instant.
#[derive(Clone, Copy, Debug)]
pub struct Mark {
    at: Instant,
    usage: Usage,
}

impl Mark {
    pub fn now() -> Mark {
        // Usage first: the wall clock then starts after the getrusage calls.
        let usage = self_usage();
        Mark { at: Instant::now(), usage }
    }

    /// The clock now, with no usage yet: for an end whose usage is read
    /// later ([`Mark::with_usage_now`]).
    pub fn instant_now() -> Mark {
        Mark {
            at: Instant::now(),
            usage: Usage {
                user_ns: 0,
                sys_ns: 0,
                peak_rss_bytes: 0,
                faults: Faults::default(),
                io: None,
            },
        }
    }

    /// The same instant, with this process's usage read now (after work
    /// that belongs to the stage's CPU but not to its wall time).
    pub fn with_usage_now(self) -> Mark {
        Mark { at: self.at, usage: self_usage() }
    }

    /// The instant this mark was taken.
    pub fn instant(&self) -> Instant {
        self.at
    }

    /// Seconds from `self` to `later`.
    pub fn seconds_to(&self, later: &Mark) -> f64 {
        later.at.duration_since(self.at).as_secs_f64()
    }

    /// The measurement from `self` to `end`; peak RSS is the lifetime peak at `end`.
    pub fn until(&self, end: &Mark) -> Measurement {
        Measurement {
            wall_ns: end.at.duration_since(self.at).as_nanos() as u64,
            user_ns: end.usage.user_ns.saturating_sub(self.usage.user_ns),
            sys_ns: end.usage.sys_ns.saturating_sub(self.usage.sys_ns),
            peak_rss_bytes: end.usage.peak_rss_bytes,
            figures: Vec::new(),
            tree: protocol::TreeUsage::default(),
            slices: Vec::new(),
            spans_not_found: Vec::new(),
            spans: Vec::new(),
            span_warnings: Vec::new(),
            command_stages: Vec::new(),
            io: crate::tree::io::between(self.usage.io, end.usage.io),
            runtime: protocol::Runtime::default(),
            faults: {
                let (a, b) = (&self.usage.faults, &end.usage.faults);
                Faults {
                    minor: b.minor.saturating_sub(a.minor),
                    major: b.major.saturating_sub(a.major),
                    voluntary_switches: b.voluntary_switches.saturating_sub(a.voluntary_switches),
                    involuntary_switches: b
                        .involuntary_switches
                        .saturating_sub(a.involuntary_switches),
                }
            },
        }
    }
}
