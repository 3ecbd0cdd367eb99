//! The coordinator's errors: why a run produced no report ([`RunError`]).

/// Why a run produced no report.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Bad usage or input; nothing was measured.
    #[error("{0}")]
    Usage(String),
    /// The run failed; failure.json says why.
    #[error("{message}")]
    Failed {
        /// Key of the stage involved, if any.
        stage: Option<String>,
        /// Rank of the worker involved, if any.
        worker: Option<u32>,
        /// Stable reason for failure.json (see [`Failure::reason`]).
        reason: &'static str,
        message: String,
    },
    /// A signal stopped the run.
    #[error("interrupted by signal {signal}; workers stopped, no report written")]
    Interrupted { signal: i32 },
}

/// A failed run's error (see [`RunError::Failed`]).
pub fn fail(
    stage: Option<String>,
    worker: Option<u32>,
    reason: &'static str,
    message: String,
) -> RunError {
    RunError::Failed { stage, worker, reason, message }
}
