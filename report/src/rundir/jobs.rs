//! `jobs.jsonl.gz`: every job of every worker process, one JSON line each,
//! gzip-compressed, for a mode whose jobs are its items or series
//! (cold-prep). Three rounds of a preparation of 10⁶ items are 6 × 10⁶
//! jobs: report.json stays small (its `workers[]` hold no `jobs`, its
//! sides no `timeline`), binds this file as an artifact of kind `jobs`,
//! and whoever reads the jobs streams them from here, in bounded memory.
//!
//! Each line is a job with the process that ran it (`workers[]`' `phase`
//! and `rank`), in the order the coordinator received them (written as
//! they arrive, so each process's jobs are in the order it ran them), times in seconds from the run's start as `workers[].jobs`
//! holds them in other modes. Floats are written shortest-exact, so a
//! job read back is the job written, bit for bit.

use super::report::{ArtifactRecord, JobSlice, ProcessRecord, TimedSlice};
use flate2::Compression;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::Path;

/// The file's name in the run directory.
pub const JOBS: &str = "jobs.jsonl.gz";
/// Its artifact record's `kind`.
pub const KIND: &str = "jobs";

/// One line of the file.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct JobLine {
    /// The process that ran it, as `workers[]` names it.
    pub phase: String,
    pub rank: u32,
    /// The job, as a `workers[].jobs` entry.
    pub stage: String,
    pub start_s: f64,
    pub end_s: f64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slices: Vec<TimedSlice>,
}

impl JobLine {
    pub fn into_job(self) -> JobSlice {
        JobSlice {
            stage: self.stage,
            start_s: self.start_s,
            end_s: self.end_s,
            slices: self.slices,
        }
    }
}

/// Why the jobs file cannot be read, in one line that names it.
#[derive(Debug, thiserror::Error)]
pub enum JobsError {
    #[error("{JOBS} cannot be read: {0}")]
    Read(#[source] io::Error),
    #[error("{JOBS} line {line} is not a job: {source}")]
    Line { line: u64, source: serde_json::Error },
    #[error(
        "{JOBS} line {line} is a job of process rank {rank} of phase {phase}, which report.json's workers do not hold"
    )]
    Stranger { line: u64, phase: String, rank: u32 },
}

/// Writes every job of `workers` to `dir/jobs.jsonl.gz` (atomically, and
/// streamed: no copy of the file is held), taking them out of `workers`;
/// returns its artifact record.
pub fn write(dir: &Path, workers: &mut [ProcessRecord]) -> io::Result<ArtifactRecord> {
    let mut file = Writer::create(dir)?;
    for w in workers.iter_mut() {
        for job in std::mem::take(&mut w.jobs) {
            file.append(&w.phase, w.rank, &job)?;
        }
    }
    file.finish()
}

/// `dir/jobs.jsonl.gz` written a job at a time, as each arrives (a run of
/// 10⁶ items holds none of them): it is at its path, whole, only after
/// [`Writer::finish`]; dropped before (a run that failed), nothing is left.
pub struct Writer {
    // Buffered in front of the compressor: flate2 clears its output buffer
    // on every write, and serde makes a dozen small ones per line.
    gz: BufWriter<GzEncoder<evidence::AtomicFile>>,
    path: std::path::PathBuf,
}

/// A line as [`JobLine`] serializes it, borrowed.
#[derive(Serialize)]
struct Line<'a> {
    phase: &'a str,
    rank: u32,
    stage: &'a str,
    start_s: f64,
    end_s: f64,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    slices: &'a [TimedSlice],
}

impl Writer {
    pub fn create(dir: &Path) -> io::Result<Writer> {
        let path = dir.join(JOBS);
        let file = evidence::AtomicFile::create(&path)?;
        // The gzip header holds no name and no time (flate2's default).
        let gz = GzEncoder::new(file, Compression::fast());
        Ok(Writer { gz: BufWriter::with_capacity(1 << 16, gz), path })
    }

    /// One job of process `rank` of `phase` (`workers[]`' names for it).
    pub fn append(&mut self, phase: &str, rank: u32, job: &JobSlice) -> io::Result<()> {
        let line = Line {
            phase,
            rank,
            stage: &job.stage,
            start_s: job.start_s,
            end_s: job.end_s,
            slices: &job.slices,
        };
        serde_json::to_writer(&mut self.gz, &line)?;
        self.gz.write_all(b"\n")
    }

    /// The file at its path, synced, and its artifact record.
    pub fn finish(self) -> io::Result<ArtifactRecord> {
        let gz = self.gz.into_inner().map_err(|e| e.into_error())?;
        let file = gz.finish()?;
        file.commit(evidence::Durability::Disk)?;
        let (sha256, bytes) = evidence::file_sha256(&self.path)?;
        Ok(ArtifactRecord {
            path: JOBS.into(),
            sha256,
            bytes,
            // The coordinator's own file: no one stage wrote it.
            stage: String::new(),
            kind: KIND.into(),
        })
    }
}

/// Streams `dir/jobs.jsonl.gz`, handing each job to `each` in the file's
/// order; a line that is not a job of one of `workers` is an error.
pub fn read(
    dir: &Path,
    workers: &[ProcessRecord],
    mut each: impl FnMut(JobLine),
) -> Result<(), JobsError> {
    let known: HashSet<(&str, u32)> = workers.iter().map(|w| (w.phase.as_str(), w.rank)).collect();
    let file = std::fs::File::open(dir.join(JOBS)).map_err(JobsError::Read)?;
    let mut lines = BufReader::with_capacity(1 << 16, GzDecoder::new(BufReader::new(file)));
    let mut text = String::new();
    let mut line = 0;
    loop {
        text.clear();
        if lines.read_line(&mut text).map_err(JobsError::Read)? == 0 {
            return Ok(());
        }
        line += 1;
        let job: JobLine =
            serde_json::from_str(&text).map_err(|source| JobsError::Line { line, source })?;
        if !known.contains(&(job.phase.as_str(), job.rank)) {
            return Err(JobsError::Stranger { line, phase: job.phase, rank: job.rank });
        }
        each(job);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn worker(phase: &str, rank: u32, jobs: Vec<JobSlice>) -> ProcessRecord {
        let mut w: ProcessRecord = serde_json::from_value(serde_json::json!({
            "rank": rank, "phase": phase, "stages": [phase], "wall_s": 1.0, "cpu_s": 1.0,
            "user_s": 1.0, "sys_s": 0.0, "peak_rss_bytes": 1, "peak_rss_floor_bytes": 1,
            "exit": "exited 0",
        }))
        .unwrap();
        w.jobs = jobs;
        w
    }

    fn job(stage: &str, start_s: f64, end_s: f64) -> JobSlice {
        let slices =
            vec![TimedSlice { name: "load".into(), start_s, end_s: start_s + 1e-7, beside: false }];
        JobSlice { stage: stage.into(), start_s, end_s, slices }
    }

    /// What is written comes back whole, in order and bit for bit (times
    /// that are not short decimals included), and the report's workers
    /// keep no job.
    #[test]
    fn jobs_read_back_are_the_jobs_written() {
        let tmp = tempfile::tempdir().unwrap();
        let a = vec![job("p", 0.1 + 0.2, 1.0 / 3.0), job("p", 2.0 / 3.0, 0.7000000000000001)];
        let b = vec![job("q", 1e-9, std::f64::consts::PI)];
        let mut workers = vec![worker("p", 0, a.clone()), worker("q", 0, b.clone())];
        let art = write(tmp.path(), &mut workers).unwrap();
        assert!(workers.iter().all(|w| w.jobs.is_empty()));
        assert_eq!((art.path.as_str(), art.kind.as_str()), (JOBS, KIND));
        let on_disk = std::fs::read(tmp.path().join(JOBS)).unwrap();
        assert_eq!(art.sha256, evidence::sha256_hex(&on_disk));
        assert_eq!(art.bytes, on_disk.len() as u64);
        let mut back = Vec::new();
        read(tmp.path(), &workers, |l| back.push((l.phase.clone(), l.into_job()))).unwrap();
        let want = a.into_iter().map(|j| ("p", j)).chain([("q", b[0].clone())]);
        let want: Vec<String> = want.map(|(p, j)| format!("{p} {j:?}")).collect();
        let got: Vec<String> = back.iter().map(|(p, j)| format!("{p} {j:?}")).collect();
        assert_eq!(got, want);
    }

    /// A job of a process the report does not hold, a line that is not a
    /// job, and a file that is not gzip are each named.
    #[test]
    fn a_file_that_is_not_the_reports_jobs_is_named() {
        let tmp = tempfile::tempdir().unwrap();
        let mut workers = vec![worker("p", 0, vec![job("p", 0.0, 1.0)])];
        write(tmp.path(), &mut workers).unwrap();
        let err = read(tmp.path(), &[worker("p", 1, vec![])], |_| {}).unwrap_err();
        assert_eq!(
            err.to_string(),
            "jobs.jsonl.gz line 1 is a job of process rank 0 of phase p, which report.json's workers do not hold"
        );
        let gz = |text: &[u8]| {
            let mut e = GzEncoder::new(Vec::new(), Compression::fast());
            e.write_all(text).unwrap();
            std::fs::write(tmp.path().join(JOBS), e.finish().unwrap()).unwrap();
        };
        gz(b"{\"phase\":\"p\",\"rank\":0,\"stage\":\"p\",\"start_s\":0,\"end_s\":1}\nnot json\n");
        let err = read(tmp.path(), &workers, |_| {}).unwrap_err().to_string();
        assert!(err.starts_with("jobs.jsonl.gz line 2 is not a job: "), "{err}");
        std::fs::write(tmp.path().join(JOBS), b"plain text\n").unwrap();
        let err = read(tmp.path(), &workers, |_| {}).unwrap_err().to_string();
        assert!(err.starts_with("jobs.jsonl.gz cannot be read: "), "{err}");
    }
}
