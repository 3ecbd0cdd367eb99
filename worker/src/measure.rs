//! Wall time (monotonic clock), process CPU time and peak RSS (getrusage).

use nix::sys::resource::{UsageWho, getrusage};
use protocol::Measurement;
use std::time::Instant;

/// Process CPU times and lifetime peak RSS at one instant.
#[derive(Clone, Copy, Debug)]
pub struct Usage {
    pub user_ns: u64,
    pub sys_ns: u64,
    pub peak_rss_bytes: u64,
}

/// Reads this process's resource usage. Linux reports ru_maxrss in KiB.
pub fn self_usage() -> Usage {
    match getrusage(UsageWho::RUSAGE_SELF) {
        Ok(u) => Usage {
            user_ns: timeval_ns(u.user_time()),
            sys_ns: timeval_ns(u.system_time()),
            peak_rss_bytes: (u.max_rss().max(0) as u64) * 1024,
        },
        // getrusage(RUSAGE_SELF) cannot fail on Linux; report zeros rather than panic.
        Err(_) => Usage { user_ns: 0, sys_ns: 0, peak_rss_bytes: 0 },
    }
}

fn timeval_ns(tv: nix::sys::time::TimeVal) -> u64 {
    (tv.tv_sec().max(0) as u64) * 1_000_000_000 + (tv.tv_usec().max(0) as u64) * 1_000
}

/// Runs `f`, returning its result and the measurement around it.
pub fn measured<T>(f: impl FnOnce() -> T) -> (T, Measurement) {
    let before = self_usage();
    let start = Instant::now();
    let out = f();
    let wall = start.elapsed();
    let after = self_usage();
    let m = Measurement {
        wall_ns: wall.as_nanos() as u64,
        user_ns: after.user_ns.saturating_sub(before.user_ns),
        sys_ns: after.sys_ns.saturating_sub(before.sys_ns),
        peak_rss_bytes: after.peak_rss_bytes,
        figures: Vec::new(),
    };
    (out, m)
}
