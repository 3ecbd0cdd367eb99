//! Environment variables through which the coordinator hands a worker its
//! connection. The token travels here (or in a 0600 file), never in argv.

/// Path of the coordinator's Unix socket.
pub const SOCKET: &str = "STAGEBENCH_SOCKET";
/// The per-run secret, 64 hex digits.
pub const TOKEN: &str = "STAGEBENCH_TOKEN";
/// The worker's rank within the run.
pub const RANK: &str = "STAGEBENCH_RANK";
/// The coordinator's pid: a worker whose parent is gone exits at once.
pub const PARENT_PID: &str = "STAGEBENCH_PARENT_PID";
