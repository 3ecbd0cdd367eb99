//! Exit codes of both binaries, in one place so scripts can rely on them.

/// Coordinator exit codes.
pub mod coordinator {
    /// The run (or command) completed and every check held.
    pub const SUCCESS: u8 = 0;
    /// A stage failed, a worker died, timed out or violated the protocol.
    /// `failure.json` names the stage and the reason; there is no report.json.
    /// A campaign in which a trial failed also exits 1, with its report:
    /// the failed trials are its first finding (`failed_trials`).
    /// `coordinator doctor` exits 1 when a warning applies to the machine,
    /// so a script can refuse to benchmark on it.
    pub const RUN_FAILED: u8 = 1;
    /// Bad usage or bad input (unknown flag, existing output directory,
    /// unreadable file). Nothing was measured.
    pub const USAGE: u8 = 2;
    /// `coordinator verify` found a binding or hash that does not hold.
    pub const VERIFY_FAILED: u8 = 3;
    /// `coordinator compare` (or `gate`) found a figure that regressed beyond the threshold.
    pub const REGRESSION: u8 = 4;
    /// `coordinator gate` could not decide a gated figure (the machine too
    /// unstable, or `--max-rounds` reached); `--not-sure pass` makes it 0.
    pub const NOT_SURE: u8 = 5;
    /// Interrupted by a signal: the exit code is 128 + the signal number
    /// (130 for SIGINT, 143 for SIGTERM), as shells report it.
    pub const INTERRUPTED_BASE: u8 = 128;
}

/// Worker exit codes.
pub mod worker {
    /// Shut down when asked, after every assigned stage reported.
    pub const SUCCESS: u8 = 0;
    /// Started without the environment a coordinator provides, or could not connect.
    pub const SETUP: u8 = 2;
    /// The coordinator refused the handshake.
    pub const REFUSED: u8 = 3;
    /// The coordinator sent something the worker could not read, or vanished.
    pub const PROTOCOL: u8 = 4;
}
