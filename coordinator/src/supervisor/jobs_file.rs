//! `jobs.jsonl.gz` written as the jobs arrive, for a mode whose jobs are
//! its items or series: a supervisor appends each job it received, and the
//! run puts the file at its path when it ends well. A run that fails
//! leaves no part of it (`evidence::AtomicFile`).

use super::JobResult;
use report::rundir::jobs::Writer;
use report::rundir::report::ArtifactRecord;
use std::sync::Mutex;

/// The run's jobs file, shared by every supervisor of every phase.
pub(crate) struct JobsFile {
    /// None once finished, or after the first error (kept in `error`).
    writer: Mutex<Option<Writer>>,
    error: Mutex<Option<std::io::Error>>,
    /// The run's start: the zero of every time in the file.
    t0: std::time::Instant,
}

impl JobsFile {
    pub(crate) fn create(dir: &std::path::Path, t0: std::time::Instant) -> std::io::Result<Self> {
        let writer = Mutex::new(Some(Writer::create(dir)?));
        Ok(JobsFile { writer, error: Mutex::new(None), t0 })
    }

    /// One job of process `rank` of `phase`; an error is kept for
    /// [`JobsFile::finish`] and ends the writing.
    pub(crate) fn append(&self, phase: &str, rank: u32, r: &JobResult) {
        let mut writer = lock(&self.writer);
        let Some(w) = writer.as_mut() else { return };
        if let Err(e) = w.append(phase, rank, &r.slice(self.t0)) {
            *writer = None;
            lock(&self.error).get_or_insert(e);
        }
    }

    /// The file at its path, and its artifact record; or why it is not.
    pub(crate) fn finish(&self) -> std::io::Result<ArtifactRecord> {
        if let Some(e) = lock(&self.error).take() {
            return Err(e);
        }
        let writer =
            lock(&self.writer).take().ok_or_else(|| std::io::Error::other("finished twice"))?;
        writer.finish()
    }
}

/// A lock, whether or not a holder panicked (what it guards stays whole:
/// each holder does one step).
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
