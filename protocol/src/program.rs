//! This program: its build identity, embedded at compile time by build.rs,
//! and what its process may do (read from its `/proc` status by the caller:
//! this crate does no I/O of its own).

/// SHA-256 (hex) over every source file of the workspace (paths and contents).
pub const SOURCE_SHA256: &str = env!("STAGEBENCH_SOURCE_SHA256");
/// How many files the source fingerprint covers.
pub const SOURCE_FILES: &str = env!("STAGEBENCH_SOURCE_FILES");
/// Package version of the workspace.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// `rustc --version` of the compiler that built this program.
pub const RUSTC_VERSION: &str = env!("STAGEBENCH_RUSTC_VERSION");
/// Cargo profile (`debug` or `release`).
pub const PROFILE: &str = env!("STAGEBENCH_PROFILE");

/// The git commit the program was built from, when it was built in a git checkout.
pub fn git_commit() -> Option<&'static str> {
    let c = env!("STAGEBENCH_GIT_COMMIT");
    (!c.is_empty()).then_some(c)
}

/// `(crate, version)` of the key dependencies, from Cargo.lock at build time.
pub fn key_crates() -> Vec<(&'static str, &'static str)> {
    env!("STAGEBENCH_KEY_CRATES").split(';').filter_map(|kv| kv.split_once('=')).collect()
}

/// `CAP_SYS_PTRACE`'s bit in a capability set.
const CAP_SYS_PTRACE: u32 = 19;

/// Whether a process's `/proc/PID/status` text gives it `CAP_SYS_PTRACE` in
/// its effective set (`CapEff`): py-spy started by it may then read any
/// process, whoever runs it. False where the line is missing or malformed.
pub fn holds_cap_sys_ptrace(status: &str) -> bool {
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .is_some_and(|caps| caps & (1 << CAP_SYS_PTRACE) != 0)
}

#[cfg(test)]
mod tests {
    use super::holds_cap_sys_ptrace as holds;

    #[test]
    fn cap_sys_ptrace_is_bit_19_of_the_effective_set() {
        assert!(holds("Name:\tx\nCapEff:\t000001ffffffffff\n"));
        assert!(holds("CapEff:\t0000000000080000\n"));
        assert!(!holds("CapEff:\t0000000000040000\nCapPrm:\t0000000000080000\n"));
        assert!(!holds("CapEff:\tnot hex\n"));
        assert!(!holds("Name:\tx\n"));
    }
}
