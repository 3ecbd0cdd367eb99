//! What a command reports about itself. The worker creates a fresh, private
//! file and names it in `STAGEBENCH_SPANS`; the command appends one JSON
//! object per line:
//!
//! - `{"agg": {...}}`: what one thread of a process tallied since its last
//!   line (the `stagebench` Python helper writes these, at most once a
//!   second, at exit, and at once after a span named in
//!   `STAGEBENCH_SPANS_EAGER`, or after every span when it is `*`, as in a
//!   stage with a kill point): per span name the calls, inclusive, self
//!   and beside nanoseconds, min, max, the first call and its start, and a
//!   histogram ([`protocol::spans`]); the main thread's top-level time and
//!   its window; up to 4,096 spans with their start, and how many more;
//! - `{"name": "adapt_images", "seconds": 54.7}`: one span, written by a
//!   program of its own (not the helper); optionally with `"start": 1234.5`,
//!   when it began on the machine's monotonic clock. Such a span is taken
//!   as a top-level span of the program's main thread;
//! - `{"progress": 0.4}`: the fraction of the stage done so far;
//! - `{"wrapped": T, "span": NAME}` and `{"refused": T, "why": ...}`: what
//!   the `--span` bootstrap made of target T; `{"runtime": ...}`: the
//!   helper's interpreter and libraries.
//!
//! The worker follows the file while the command runs (progress reaches the
//! coordinator, and a kill point is checked against what the file says),
//! then reads the rest and removes the file. Nothing is kept per call, so no
//! count of calls is too many: the file's lines are read as they come, and
//! only a line longer than [`MAX_LINE`] fails the stage. Per span name the
//! stage reports a [`SpanSummary`] and the figures `span:NAME_s` (the sum),
//! `span:NAME_n` (calls), `span:NAME_median_s` and `span:NAME_p95_s`, in
//! order of first appearance.
//!
//! Counted once: a span's self time is its time less the spans that ran
//! inside it on its thread. What ran on the main thread of the stage's
//! first process is its share of the wall; what ran on another thread, in
//! a forked child, in a generator, or in a process whose spans overlapped
//! an earlier one's, is `concurrent`. A line that breaks the format fails
//! the stage with its line number.

mod line;
mod tally;

pub use line::{BadLine, Line, PythonRuntime, StageLine};
pub use tally::{Tally, Timed, figures_of};

use super::{StageError, figure};
use protocol::{Figure, SpanSummary};
use std::io::Read;
use std::path::{Path, PathBuf};

/// The variable naming the span names whose every end the helper writes
/// at once (a kill point's), comma-separated.
pub const EAGER: &str = "STAGEBENCH_SPANS_EAGER";
/// Longest line a spans file may hold (an aggregate line of many names).
pub const MAX_LINE: usize = 64 << 20;
/// Most bytes read from the file at once.
const CHUNK: u64 = 8 << 20;
/// Longest span name.
pub const MAX_NAME: usize = 64;

/// Why a command's spans file fails its stage.
#[derive(Debug, thiserror::Error)]
pub enum SpansError {
    #[error("spans line {0}: {1}")]
    Line(usize, BadLine),
    #[error("reading the spans file: {0}")]
    Read(std::io::Error),
    #[error("the command's spans file has a line longer than {MAX_LINE} bytes")]
    TooLarge,
    #[error("span '{0}': its seconds add up to more than the largest number")]
    Overflow(String),
    #[error("the command's spans file is not UTF-8")]
    NotUtf8,
}

/// The spans file of one command stage, followed as it grows; removed
/// when dropped.
pub struct SpansFile {
    path: PathBuf,
    reader: std::fs::File,
    /// Bytes read so far, and the last line when it is not complete yet.
    read: u64,
    partial: Vec<u8>,
    pub tally: Tally,
}

impl SpansFile {
    /// A new empty file below the run directory (never an existing one).
    pub fn create(run_dir: &Path, job_tag: &str) -> Result<SpansFile, StageError> {
        use std::os::unix::fs::OpenOptionsExt;
        let path = run_dir.join(format!(".spans-{job_tag}.jsonl"));
        let io = |source| StageError::Io { path: path.display().to_string(), source };
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(io)?;
        let reader = std::fs::File::open(&path).map_err(io)?;
        Ok(SpansFile { path, reader, read: 0, partial: Vec::new(), tally: Tally::default() })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads what was appended since the last call and adds its complete
    /// lines (all of it when `last`: the command has ended); `each` sees
    /// every line as it is added.
    pub fn follow(
        &mut self,
        last: bool,
        mut each: impl FnMut(&Line, &Tally),
    ) -> Result<(), SpansError> {
        loop {
            let mut buf = Vec::new();
            (&self.reader).take(CHUNK).read_to_end(&mut buf).map_err(SpansError::Read)?;
            let more = buf.len() as u64 == CHUNK;
            self.read += buf.len() as u64;
            self.partial.extend_from_slice(&buf);
            let complete = match last && !more {
                true => self.partial.len(),
                false => self.partial.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1),
            };
            if self.partial.len() - complete > MAX_LINE {
                return Err(SpansError::TooLarge);
            }
            let lines: Vec<u8> = self.partial.drain(..complete).collect();
            let text = String::from_utf8(lines).map_err(|_| SpansError::NotUtf8)?;
            self.tally.add(&text, &mut each)?;
            if !more {
                return Ok(());
            }
        }
    }

    /// The spans that ended and gave a start, of a command that failed or
    /// was killed: its complete lines only (a line cut by the kill is not
    /// one), and nothing when the file cannot be read.
    pub fn done_so_far(mut self) -> Vec<Timed> {
        match self.follow(false, |_, _| {}) {
            Ok(()) => std::mem::take(&mut self.tally.timed),
            Err(_) => Vec::new(),
        }
    }

    /// Everything the command said, once it ended.
    pub fn finish(mut self) -> Result<Said, StageError> {
        self.follow(true, |_, _| {}).map_err(|e| StageError::Failed(e.to_string()))?;
        self.tally.settle();
        Ok(Said {
            figures: self.tally.figures(),
            warnings: self.tally.warnings(),
            spans: std::mem::take(&mut self.tally.spans),
            timed: std::mem::take(&mut self.tally.timed),
            wrapped: self.tally.matched(),
            runtime: self.tally.runtime.take(),
            stages: std::mem::take(&mut self.tally.stages),
        })
    }
}

/// What a command's spans file said, once it ended.
pub struct Said {
    /// The figures of every span.
    pub figures: Vec<Figure>,
    /// Every span name's summary.
    pub spans: Vec<SpanSummary>,
    /// What to know to read them (see [`Tally::warnings`]).
    pub warnings: Vec<String>,
    /// The spans that gave a start (name, start on the monotonic clock, seconds).
    pub timed: Vec<Timed>,
    /// The `--span` targets the bootstrap found, wrapped or refused.
    pub wrapped: std::collections::BTreeSet<String>,
    /// What the Python helper said of its runtime.
    pub runtime: Option<PythonRuntime>,
    /// Stage spans' lines, in the order they ended.
    pub stages: Vec<StageLine>,
}

/// A command's stages as rows (see [`protocol::CommandStage`]): the stages
/// of the first process that reported one, in order of their start, after
/// a row [`protocol::spans::BEFORE_STAGES`] for what that process ran
/// before the first (its interpreter's start and imports: wall from the
/// command's start at `spawned`, monotonic seconds; CPU and peak from the
/// process's start). Empty without stages.
pub fn command_stages(lines: &[StageLine], spawned: f64) -> Vec<protocol::CommandStage> {
    let Some(pid) = lines.first().map(|l| l.pid) else {
        return Vec::new();
    };
    let mut own: Vec<&StageLine> = lines.iter().filter(|l| l.pid == pid).collect();
    own.sort_by_key(|l| l.start);
    let first = own[0];
    let before = protocol::CommandStage {
        name: protocol::spans::BEFORE_STAGES.into(),
        start_s: 0.0,
        wall_s: (first.start as f64 * 1e-9 - spawned).max(0.0),
        user_s: first.cpu[0],
        sys_s: first.cpu[1],
        rss_start_bytes: 0,
        rss_end_bytes: first.rss[0],
        peak_rss_bytes: first.hwm,
        peak_reset: true,
    };
    std::iter::once(before).chain(own.iter().map(|l| l.stage(spawned))).collect()
}

/// Reports spans that gave their start as slices of the stage, placed on
/// the worker's clock by reading the machine's monotonic clock beside it.
pub fn place(timed: Vec<Timed>, reporter: &mut dyn super::Reporter) {
    let (now, mono) = (std::time::Instant::now(), monotonic_now());
    for t in timed {
        let ago = std::time::Duration::from_secs_f64((mono - t.start).max(0.0));
        let at = now.checked_sub(ago).unwrap_or(now);
        reporter.slice(&t.name, at, t.seconds, t.beside);
    }
}

/// `CLOCK_MONOTONIC` in seconds: the clock the Python helper's
/// `time.monotonic()` reads.
pub fn monotonic_now() -> f64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
        .map(|t| t.tv_sec() as f64 + t.tv_nsec() as f64 * 1e-9)
        .unwrap_or(0.0)
}

impl Drop for SpansFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests;
