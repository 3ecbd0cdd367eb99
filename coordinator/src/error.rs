//! The coordinator's errors. [`Error`] is what a command ends with, and
//! [`Error::exit_code`] is the one place an error becomes an exit code
//! ([`protocol::exit::coordinator`]). [`RunError`] is why a run produced no
//! report, with what failure.json records; each subsystem's own error
//! (a run's, a campaign's, a comparison's) converts into [`Error`] with the
//! text a person sees.

use protocol::exit::coordinator as code;

/// Why a command did not succeed; the message is the line after `error: `.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    /// Bad usage or input; nothing was measured, nothing left behind.
    #[error("{0}")]
    Usage(String),
    /// A run or campaign started and failed (its failure.json says why).
    #[error("{0}")]
    Failed(String),
    /// A run or campaign directory does not hold what its evidence binds.
    #[error("{0}")]
    Unverified(String),
    /// A signal stopped the work; nothing was reported.
    #[error("{message}")]
    Interrupted { signal: i32, message: String },
}

impl Error {
    /// The exit code, as `--help` and the README list them.
    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            Error::Usage(_) => code::USAGE,
            Error::Failed(_) => code::RUN_FAILED,
            Error::Unverified(_) => code::VERIFY_FAILED,
            Error::Interrupted { signal, .. } => code::INTERRUPTED_BASE + *signal as u8,
        }
    }
}

/// Bad usage or input, refused before anything ran, and why, in one line:
/// what flag resolution, campaign files and value parsers return. It becomes
/// a usage error (exit 2) wherever it goes.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Refusal(pub(crate) String);

impl From<report::modes::params::Refusal> for Refusal {
    fn from(r: report::modes::params::Refusal) -> Self {
        Refusal(r.0)
    }
}

impl From<Refusal> for Error {
    fn from(r: Refusal) -> Self {
        Error::Usage(r.0)
    }
}

impl From<Refusal> for RunError {
    fn from(r: Refusal) -> Self {
        RunError::Usage(r.0)
    }
}

/// Why a run produced no report.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RunError {
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
        /// Stable reason for failure.json (see `rundir::failure::Failure::reason`).
        reason: &'static str,
        message: String,
    },
    /// The run failed in its own work (a file of its run directory, the
    /// runtime): `what` says what it did, naming the file by its path in
    /// the run directory; the error is kept as its source.
    #[error("{what}: {source}")]
    Internal {
        /// Key of the stage involved, if any.
        stage: Option<String>,
        what: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A signal stopped the run.
    #[error("interrupted by signal {signal}; workers stopped, no report written")]
    Interrupted { signal: i32 },
}

impl RunError {
    /// The same run's failure, saying in its one line that failure.json
    /// could not be written either (`why`): the console is then its only
    /// record, and the exit is 1 whatever stopped the run.
    pub(crate) fn unrecorded(self, why: &str) -> RunError {
        let (stage, worker, reason) = self.recorded_as();
        fail(stage, worker, reason, format!("{self} (and no failure.json: {why})"))
    }

    /// The stage, worker and stable reason failure.json records for it.
    pub(crate) fn recorded_as(&self) -> (Option<String>, Option<u32>, &'static str) {
        match self {
            RunError::Failed { stage, worker, reason, .. } => (stage.clone(), *worker, *reason),
            RunError::Internal { stage, .. } => (stage.clone(), None, "internal"),
            RunError::Interrupted { .. } => (None, None, "interrupted"),
            RunError::Usage(_) => (None, None, "usage"),
        }
    }

    /// As a command's error, with where its failure.json is, if one was written.
    pub(crate) fn recorded(self, failure_file: Option<&std::path::Path>) -> Error {
        let message = match failure_file {
            Some(f) => format!("{self} (recorded in {})", f.display()),
            None => self.to_string(),
        };
        match self {
            RunError::Usage(_) => Error::Usage(message),
            RunError::Failed { .. } | RunError::Internal { .. } => Error::Failed(message),
            RunError::Interrupted { signal } => Error::Interrupted { signal, message },
        }
    }
}

/// A run failed in its own work (see [`RunError::Internal`]): for
/// `map_err`, keeping the error as the source.
pub(crate) fn internal<E: std::error::Error + Send + Sync + 'static>(
    stage: Option<String>,
    what: impl Into<String>,
) -> impl FnOnce(E) -> RunError {
    move |source| RunError::Internal { stage, what: what.into(), source: Box::new(source) }
}

/// A failed run's error (see [`RunError::Failed`]).
pub(crate) fn fail(
    stage: Option<String>,
    worker: Option<u32>,
    reason: &'static str,
    message: String,
) -> RunError {
    RunError::Failed { stage, worker, reason, message }
}

impl From<host::dirlock::LockError> for RunError {
    fn from(e: host::dirlock::LockError) -> Self {
        RunError::Usage(e.to_string())
    }
}

// The evidence library's errors, as a command ends with them.

impl From<report::render::export::ExportError> for Error {
    fn from(e: report::render::export::ExportError) -> Self {
        match e {
            report::render::export::ExportError::Write(..)
            | report::render::export::ExportError::Jobs(..) => Error::Failed(e.to_string()),
            _ => Error::Usage(e.to_string()),
        }
    }
}

impl From<report::dashboard::DashboardError> for Error {
    fn from(e: report::dashboard::DashboardError) -> Self {
        match e {
            report::dashboard::DashboardError::Read(..)
            | report::dashboard::DashboardError::Write(..) => Error::Failed(e.to_string()),
            _ => Error::Usage(e.to_string()),
        }
    }
}

impl From<report::history::HistoryError> for Error {
    fn from(e: report::history::HistoryError) -> Self {
        match e {
            report::history::HistoryError::Read(..) | report::history::HistoryError::Write(..) => {
                Error::Failed(e.to_string())
            }
            _ => Error::Usage(e.to_string()),
        }
    }
}

impl From<report::compare::CompareError> for Error {
    fn from(e: report::compare::CompareError) -> Self {
        match e {
            report::compare::CompareError::Unverified { .. } => Error::Unverified(e.to_string()),
            report::compare::CompareError::Write(_) => Error::Failed(e.to_string()),
            e => Error::Usage(e.to_string()),
        }
    }
}

impl From<host::dataset::DatasetError> for Error {
    fn from(e: host::dataset::DatasetError) -> Self {
        match e {
            host::dataset::DatasetError::Input(m) => Error::Usage(m),
            host::dataset::DatasetError::Io(m) => Error::Failed(m),
        }
    }
}

impl From<host::dataset::DatasetError> for RunError {
    fn from(e: host::dataset::DatasetError) -> Self {
        match e {
            host::dataset::DatasetError::Input(m) => RunError::Usage(m),
            host::dataset::DatasetError::Io(m) => fail(None, None, "dataset", m),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_has_the_documented_exit_code() {
        assert_eq!(Error::Usage("x".into()).exit_code(), 2);
        assert_eq!(Error::Failed("x".into()).exit_code(), 1);
        assert_eq!(Error::Unverified("x".into()).exit_code(), 3);
        let e = RunError::Interrupted { signal: 15 }.recorded(None);
        assert_eq!(e.exit_code(), 143);
        let e = fail(None, None, "stage_failed", "boom".into())
            .recorded(Some(std::path::Path::new("runs/x/failure.json")));
        assert_eq!(e.to_string(), "boom (recorded in runs/x/failure.json)");
        assert_eq!(e.exit_code(), 1);
    }
}
