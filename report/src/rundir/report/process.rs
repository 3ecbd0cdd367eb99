//! The run's processes and files: each worker process as wait4 saw it,
//! its jobs' slices, and the artifacts `verify` checks.

use serde::{Deserialize, Serialize};

/// What a process's fault counts are, in its schema.
const FAULTS: &str = "From `wait4`'s rusage (absent for a task of a job step): minor and\nmajor page faults, voluntary and involuntary context switches.";

fn described(schema: &mut schemars::Schema) {
    super::Faults::describe(schema, FAULTS);
}

/// A worker process as the coordinator saw it: spawn to reap, with the
/// rusage wait4 returned, so it holds even if the worker misreported.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(transform = described)]
pub struct ProcessRecord {
    pub rank: u32,
    /// Key of the stage (phase) the process served.
    pub phase: String,
    /// Keys of the stages this process ran.
    pub stages: Vec<String>,
    pub wall_s: f64,
    pub cpu_s: f64,
    pub user_s: f64,
    pub sys_s: f64,
    /// wait4's `ru_maxrss`. Linux carries `ru_maxrss` across `execve`, so
    /// this is never below `peak_rss_floor_bytes`; a value equal to the floor
    /// says only that the process stayed at or under it.
    pub peak_rss_bytes: u64,
    /// The coordinator's own peak RSS when it spawned this process.
    pub peak_rss_floor_bytes: u64,
    /// How the process ended, e.g. `exited 0`.
    pub exit: String,
    /// A task of a Slurm job step: not the coordinator's child and perhaps
    /// on another host, so `wait4` cannot see it; `cpu_s`, `user_s`,
    /// `sys_s` and `peak_rss_bytes` are then the worker's own figures (CPU
    /// summed over its stages, its largest VmHWM), `wall_s` is launch to the
    /// end of its connection, and `peak_rss_floor_bytes` is 0.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub task_of_step: bool,
    /// The worker's host, as SHA-256 of the run token and the host name
    /// (never the name): equal digests mean the same host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_sha256: Option<String>,
    /// Its page faults and context switches (described in its schema).
    #[serde(flatten)]
    pub faults: super::Faults,
    /// Seconds from the run's start (the coordinator's monotonic clock, no
    /// wall-clock time) to the launch, and to the accepted handshake (absent
    /// if none came). Absent in reports from before they were kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connected_s: Option<f64>,
    /// Every job the process ran, in order, on the same clock: the end is
    /// when the coordinator received the measurement, the start that minus
    /// the worker's own wall time for it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub jobs: Vec<JobSlice>,
}

/// One job of a worker process, in seconds from the run's start.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct JobSlice {
    /// The stage's key (a cold-prep series is its phase's key: series are
    /// never named).
    pub stage: String,
    pub start_s: f64,
    pub end_s: f64,
    /// Timed parts of the job on the same clock: a command's spans that
    /// gave a start, the loader's waits.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slices: Vec<TimedSlice>,
}

/// A named interval, in seconds from the run's start.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TimedSlice {
    pub name: String,
    pub start_s: f64,
    pub end_s: f64,
    /// It ran beside the main thread (another thread, a forked child).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub beside: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ArtifactRecord {
    /// Relative to the run directory.
    pub path: String,
    pub sha256: String,
    pub bytes: u64,
    /// Key of the stage that wrote it.
    pub stage: String,
    /// `file`, or `manifest`: a JSON list of files below the manifest's own
    /// directory with their SHA-256, each of which `verify` checks too.
    pub kind: String,
}
