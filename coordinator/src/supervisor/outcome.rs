//! What supervision works on and ends with: a [`Job`] in, a [`JobResult`]
//! per job done, and per worker a [`WorkerOutcome`] whose [`WorkerEnd`] says
//! how its life ended, with the reason and the line failure.json records.

use crate::process::{ExitKind, ProcessExit};
use protocol::{JobId, Measurement, Stage, WorkerId};
use report::fmt::seconds_given;
use std::time::Duration;

/// One unit of planned work.
#[derive(Clone, Debug)]
pub(crate) struct Job {
    pub(crate) id: JobId,
    /// Position in the plan.
    pub(crate) order: usize,
    /// Unique key of the stage record in the report.
    pub(crate) key: String,
    pub(crate) stage: Stage,
    /// Which item of its phase this job is, as a failure prints it
    /// ("training series 7 of 40"): a number, never an id.
    pub(crate) item: Option<Item>,
    /// Functions its command's Python wraps as spans (`--span`); set by
    /// the run for command stages and preparation programs only.
    pub(crate) spans: Vec<protocol::SpanTarget>,
    /// How its command's Python is sampled (`--sample`); command stages
    /// and preparation programs only.
    pub(crate) sample: Option<protocol::SampleRequest>,
}

impl Job {
    pub(crate) fn item(self, item: Item) -> Job {
        Job { item: Some(item), ..self }
    }
}

/// A job's place among its phase's items: `n` of `of` (1-based; a user's
/// item's `n` is its line in the items file).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Item {
    /// What an item is called: "item", "training series".
    pub(crate) noun: &'static str,
    pub(crate) n: u64,
    pub(crate) of: u64,
}

impl std::fmt::Display for Item {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} of {}", self.noun, self.n, self.of)
    }
}

/// A completed job.
#[derive(Clone, Debug)]
pub(crate) struct JobResult {
    pub(crate) job: Job,
    pub(crate) worker: WorkerId,
    pub(crate) measurement: Measurement,
    /// Artifacts the worker reported: relative path and claimed SHA-256.
    pub(crate) artifacts: Vec<(String, [u8; 32])>,
    /// When the coordinator received the measurement (its monotonic clock).
    pub(crate) received: std::time::Instant,
}

impl JobResult {
    /// When the job began and ended, in seconds from `t0` on the
    /// coordinator's clock: the end when its measurement arrived, the start
    /// that minus the worker's own wall time for it.
    pub(crate) fn interval_since(&self, t0: std::time::Instant) -> (f64, f64) {
        let end_s = self.received.saturating_duration_since(t0).as_secs_f64();
        ((end_s - self.measurement.wall_ns as f64 / 1e9).max(0.0), end_s)
    }

    /// The job as `workers[].jobs` (or a line of jobs.jsonl.gz) holds it:
    /// its interval and its spans' slices, in seconds from `t0`.
    pub(crate) fn slice(&self, t0: std::time::Instant) -> report::rundir::report::JobSlice {
        use report::rundir::report::TimedSlice;
        let (start_s, end_s) = self.interval_since(t0);
        let slices = self
            .measurement
            .slices
            .iter()
            .map(|s| {
                let from = start_s + s.start_ns as f64 / 1e9;
                TimedSlice {
                    name: s.name.clone(),
                    start_s: from,
                    end_s: from + s.dur_ns as f64 / 1e9,
                    beside: s.beside,
                }
            })
            .collect();
        report::rundir::report::JobSlice { stage: self.job.key.clone(), start_s, end_s, slices }
    }
}

/// How a worker's life ended.
#[derive(Clone, Debug)]
pub(crate) enum WorkerEnd {
    /// Shut down when asked and exited 0.
    Completed,
    /// A stage reported failure; `done`: its command's spans that ended
    /// before it failed; `stderr_tail`: the end of its command's stderr,
    /// when the worker kept it (for a private file, never evidence).
    StageFailed {
        key: String,
        error: String,
        done: Vec<protocol::Slice>,
        stderr_tail: Option<String>,
    },
    /// The process died (non-zero exit or signal) while running `key`, or
    /// between stages; `item`: the item it was preparing then, if any.
    Crashed { key: Option<String>, exit: ExitKind, item: Option<String> },
    /// The process ended before it completed the handshake.
    ExitedBeforeHandshake { exit: ExitKind },
    /// No admitted connection within the connect timeout.
    ConnectTimeout { after: Duration },
    /// A stage ran past the stage timeout; `item`: the item in flight in
    /// this worker, when the stage is a phase of items.
    StageTimeout { key: String, after: Duration, item: Option<String> },
    /// One item took longer than `--item-timeout`.
    ItemTimeout { key: String, item: String, after: Duration },
    /// The worker sent something malformed, unexpected, or did not exit after shutdown.
    ProtocolViolation { key: Option<String>, detail: String },
    /// Stopped because the run was interrupted or another worker failed;
    /// `in_flight`: the item it was preparing then, if any.
    Cancelled { in_flight: Option<String> },
    /// Killed with SIGKILL at the run's declared interruption point (the
    /// worker, or for a command stage the command's tree); `at` says where;
    /// `done`: the command's spans that ended before the kill.
    KilledAtPoint { key: String, at: String, done: Vec<protocol::Slice> },
}

impl WorkerEnd {
    pub(crate) fn is_success(&self) -> bool {
        matches!(self, WorkerEnd::Completed)
    }

    /// The stable reason string used in failure.json.
    pub(crate) fn reason(&self) -> &'static str {
        match self {
            WorkerEnd::Completed => "completed",
            WorkerEnd::StageFailed { .. } => "stage_failed",
            WorkerEnd::Crashed { .. } => "worker_crashed",
            WorkerEnd::ExitedBeforeHandshake { .. } => "worker_exited",
            WorkerEnd::ConnectTimeout { .. } => "connect_timeout",
            WorkerEnd::StageTimeout { .. } => "stage_timeout",
            WorkerEnd::ItemTimeout { .. } => "item_timeout",
            WorkerEnd::ProtocolViolation { .. } => "protocol_violation",
            WorkerEnd::Cancelled { .. } => "cancelled",
            WorkerEnd::KilledAtPoint { .. } => "killed_at_point",
        }
    }

    /// The spans a failed or killed command stage ended before it stopped.
    pub(crate) fn done(&self) -> &[protocol::Slice] {
        match self {
            WorkerEnd::StageFailed { done, .. } | WorkerEnd::KilledAtPoint { done, .. } => done,
            _ => &[],
        }
    }

    /// The end of a failed command's stderr, when it was kept.
    pub(crate) fn stderr_tail(&self) -> Option<&str> {
        match self {
            WorkerEnd::StageFailed { stderr_tail, .. } => stderr_tail.as_deref(),
            _ => None,
        }
    }

    /// The stage involved, if any.
    pub(crate) fn stage(&self) -> Option<&str> {
        match self {
            WorkerEnd::StageFailed { key, .. }
            | WorkerEnd::StageTimeout { key, .. }
            | WorkerEnd::ItemTimeout { key, .. }
            | WorkerEnd::KilledAtPoint { key, .. } => Some(key),
            WorkerEnd::Crashed { key, .. } | WorkerEnd::ProtocolViolation { key, .. } => {
                key.as_deref()
            }
            _ => None,
        }
    }

    /// One line for a person, naming the worker.
    pub(crate) fn describe(&self, rank: WorkerId) -> String {
        let at = |key: &Option<String>| match key {
            Some(k) => format!(" during stage {k}"),
            None => String::new(),
        };
        match self {
            WorkerEnd::Completed => format!("{rank} completed"),
            WorkerEnd::StageFailed { key, error, .. } => {
                format!("stage {key} failed on {rank}: {error}")
            }
            WorkerEnd::Crashed { key, exit, item } => format!(
                "{rank} {exit}{}{}",
                at(key),
                item.as_deref().map(|i| format!(" ({i} in flight)")).unwrap_or_default()
            ),
            WorkerEnd::ExitedBeforeHandshake { exit } => {
                format!("{rank} {exit} before completing the handshake")
            }
            WorkerEnd::ConnectTimeout { after } => {
                format!("{rank} did not connect within {} s", seconds_given(after.as_secs_f64()))
            }
            WorkerEnd::StageTimeout { key, after, item } => format!(
                "stage {key} on {rank} exceeded the stage timeout of {} s{}",
                seconds_given(after.as_secs_f64()),
                item.as_deref().map(|i| format!(" ({i} in flight)")).unwrap_or_default()
            ),
            WorkerEnd::ItemTimeout { key, item, after } => format!(
                "{item} of stage {key} on {rank} took longer than --item-timeout {} s",
                seconds_given(after.as_secs_f64())
            ),
            WorkerEnd::ProtocolViolation { key, detail } => {
                format!("{rank} violated the protocol{}: {detail}", at(key))
            }
            WorkerEnd::Cancelled { .. } => format!("{rank} was stopped"),
            WorkerEnd::KilledAtPoint { key, at, .. } => format!(
                "stage {key} on {rank} was killed with SIGKILL at its declared point ({at})"
            ),
        }
    }
}

/// What a timed-out stage's worker did with the SIGTERM that ended it, for
/// the end of the failure's line. The worker's tree thread ends the stage's
/// processes, daemons that left the worker's process group included, and
/// exits 128 + 15; any other ending (killed after the grace, a crash) may
/// have left such daemons running.
pub(crate) fn after_timeout(exit: ExitKind) -> String {
    const MAYBE_LEFT: &str = "processes that left its process group may still run";
    match exit {
        ExitKind::Exited(143) => {
            "; on SIGTERM the worker ended the stage's processes and exited 143".into()
        }
        ExitKind::Exited(code) => {
            format!("; the worker then exited {code}, not 143 on SIGTERM: {MAYBE_LEFT}")
        }
        signaled => format!("; the worker was then {signaled}: {MAYBE_LEFT}"),
    }
}

/// Everything known about one worker once it is gone.
#[derive(Debug)]
pub(crate) struct WorkerOutcome {
    pub(crate) rank: WorkerId,
    /// See [`WorkerProcess::rss_floor_bytes`].
    pub(crate) rss_floor_bytes: u64,
    /// Its jobs, in the order it ran them; empty where they were folded.
    pub(crate) jobs: Vec<JobResult>,
    /// Its jobs folded as they arrived, in a phase of a user's items.
    pub(crate) tally: Option<super::Tally>,
    pub(crate) end: WorkerEnd,
    /// From `wait4`; for a task of a job step (not our child, maybe on
    /// another host) the worker's own figures: CPU summed over its stages,
    /// the largest stage-end VmHWM, and launch to end of connection.
    pub(crate) exit: ProcessExit,
    pub(crate) task_of_step: bool,
    /// From the handshake (see [`protocol::host_sha256`]); None if it never came.
    pub(crate) host_sha256: Option<String>,
    /// When the worker was launched, and when its handshake was accepted
    /// (None if it never was): the coordinator's monotonic clock.
    pub(crate) launched: std::time::Instant,
    pub(crate) connected: Option<std::time::Instant>,
    /// The close of the preparation program this worker ran items with
    /// (`--prepare`), as its worker measured it: its tree's lifetime peak
    /// and its leaks. None for a worker that ran no item.
    pub(crate) finished: Option<Measurement>,
    /// Files that close reported (the program's sampled stacks,
    /// `--sample`): relative path and claimed SHA-256.
    pub(crate) finished_artifacts: Vec<(String, [u8; 32])>,
    /// What the worker's reaped children beside its stages used (py-spy),
    /// as it said at that close: its `exit` counts it.
    pub(crate) beside: Option<protocol::Beside>,
}

impl WorkerOutcome {
    /// The CPU times (ns) and counts of the worker's own process and the
    /// stages' processes it reaped: `exit` without what ran beside them. A
    /// task's `exit` is summed from its stages already.
    pub(crate) fn stages_exit(&self) -> (u64, u64, Option<protocol::Faults>) {
        let e = &self.exit;
        let b = match (self.task_of_step, self.beside) {
            (false, Some(b)) => b,
            _ => return (e.user_ns, e.sys_ns, e.faults),
        };
        let faults = e.faults.map(|f| protocol::Faults {
            minor: f.minor.saturating_sub(b.faults.minor),
            major: f.major.saturating_sub(b.faults.major),
            voluntary_switches: f.voluntary_switches.saturating_sub(b.faults.voluntary_switches),
            involuntary_switches: f
                .involuntary_switches
                .saturating_sub(b.faults.involuntary_switches),
        });
        (e.user_ns.saturating_sub(b.user_ns), e.sys_ns.saturating_sub(b.sys_ns), faults)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only the tree thread's own ending (143) says the stage's processes
    /// were ended; a worker killed after the grace, or one that exited any
    /// other way, may have left daemons.
    #[test]
    fn a_timed_out_worker_not_ending_with_143_may_have_left_processes() {
        let contained = after_timeout(ExitKind::Exited(143));
        assert!(contained.contains("ended the stage's processes"), "{contained}");
        assert!(!contained.contains("may still run"), "{contained}");
        for other in [ExitKind::Exited(113), ExitKind::Signaled { signal: 9, core_dumped: false }] {
            let said = after_timeout(other);
            assert!(said.contains(&other.to_string()), "{said}");
            assert!(said.contains("may still run"), "{said}");
        }
    }
}
