//! report.json's records: stages, processes, artifacts, and the parts a
//! mode's section is made of (counts, preparation sides, trial sets), with
//! the seal that binds a report's body to its own digest. The report itself,
//! common part and mode section, is [`crate::modes::Report`].

use evidence::canonical;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

pub(crate) const SCHEMA: &str = "stagebench.report";
pub(crate) const SCHEMA_VERSION: u32 = 1;
/// The key holding the digest of the report's own canonical body.
pub(crate) const BODY_DIGEST_KEY: &str = "body_sha256";

/// The trials of one stage.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct TrialSet {
    /// Warm-up trials (recorded in `warmup_samples`, not counted).
    pub(crate) warmup: u32,
    /// Counted trials.
    pub(crate) n: u32,
    /// Per figure (`wall_s`, `cpu_s`, `peak_rss_bytes`, and the stage's own),
    /// the counted trials' values in trial order.
    pub(crate) samples: BTreeMap<String, Vec<f64>>,
    pub(crate) warmup_samples: BTreeMap<String, Vec<f64>>,
    /// Per figure, statistics over the counted trials.
    pub(crate) summary: BTreeMap<String, crate::stats::Summary>,
    /// Trials per side needed to resolve a 1% difference in median wall time
    /// at the observed noise (two-sided α 0.05, power 0.8).
    pub(crate) trials_for_1pct: Option<u64>,
    /// Reasons to distrust these numbers, for a person.
    pub(crate) warnings: Vec<String>,
}

/// Warnings every stage's trials share (machine load), said once by
/// whoever prints them, in the order the first stage lists them.
pub(crate) fn shared_warnings(trials: &BTreeMap<String, TrialSet>) -> Vec<&String> {
    let Some(first) = trials.values().next() else { return Vec::new() };
    first.warnings.iter().filter(|w| trials.values().all(|o| o.warnings.contains(w))).collect()
}

/// Aggregate counts of the training partition (no identifiers).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Counts {
    pub(crate) train_series: u64,
    pub(crate) samples: u64,
    pub(crate) frames: u64,
    pub(crate) valid_frames: u64,
    /// Profile: eligible 240-frame contexts of the training series.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) eligible_contexts: Option<u64>,
    /// Profile: batches of 32 in one epoch, and contexts in the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) batches: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) final_batch: Option<u64>,
    /// Profile: training series whose events break the target contract.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) invalid_event_series: Option<u64>,
}

/// One side of a cold-prep comparison.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct PrepSide {
    /// Coordinator-measured: first spawn to last reap of this phase.
    pub(crate) wall_s: f64,
    /// Sum over this phase's processes (wait4).
    pub(crate) cpu_s: f64,
    /// Largest peak RSS among this phase's processes (wait4).
    pub(crate) peak_rss_bytes: u64,
    pub(crate) workers: Vec<PrepWorker>,
    /// Distribution of per-series preparation wall time, seconds.
    pub(crate) per_series_s: crate::stats::Distribution,
    /// Where per-series time went: summed over series, seconds.
    pub(crate) components_s: BTreeMap<String, f64>,
    /// Relative path of this cache's manifest.
    pub(crate) manifest: String,
    /// Which worker prepared a series when, in start order (series are not named).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) timeline: Vec<Span>,
}

/// One job on a worker: seconds from its phase's start. The end is when the
/// coordinator received the measurement; the start is that minus the
/// worker's own wall time for the job.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Span {
    pub(crate) rank: u32,
    pub(crate) start_s: f64,
    pub(crate) end_s: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct PrepWorker {
    pub(crate) rank: u32,
    pub(crate) series: u64,
    /// Sum of this worker's per-series wall times.
    pub(crate) busy_s: f64,
    /// Spawn to reap.
    pub(crate) wall_s: f64,
    pub(crate) cpu_s: f64,
    /// The worker's own lifetime peak RSS (VmHWM), as it measured after its
    /// last series; null for a worker that found the queue empty and so
    /// measured nothing (wait4's peak would be the coordinator's, carried
    /// across exec).
    pub(crate) peak_rss_bytes: Option<u64>,
    /// A user's preparation (`--prepare`): seconds from starting the
    /// program to its `{"ready": true}` (for Python, its imports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) startup_s: Option<f64>,
}

/// A stage as its worker measured it (monotonic wall clock, getrusage deltas).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct StageRecord {
    pub(crate) stage: String,
    /// Position in the plan, from 0.
    pub(crate) order: usize,
    /// Rank of the worker that ran it; null when several processes did.
    pub(crate) worker: Option<u32>,
    /// How many worker processes this stage used.
    pub(crate) processes: u32,
    pub(crate) wall_s: f64,
    /// user_s + sys_s.
    pub(crate) cpu_s: f64,
    pub(crate) user_s: f64,
    pub(crate) sys_s: f64,
    /// The worker process's lifetime peak RSS at the end of the stage
    /// (`VmHWM`: its own address space, nothing inherited). With
    /// `--isolation stage` the process ran only this stage.
    pub(crate) peak_rss_bytes: u64,
    pub(crate) figures: BTreeMap<String, f64>,
    /// Peak resident memory of the stage's whole process tree at once (the
    /// worker and every descendant), by `tree_peak_method`: `sampled` is a
    /// lower bound, never below the worker's own peak. For a phase of many
    /// processes, the largest of theirs.
    #[serde(default)]
    pub(crate) tree_peak_bytes: u64,
    #[serde(default)]
    pub(crate) tree_peak_method: String,
    /// With `cgroup`: anonymous and file pages when the stage's cgroup held
    /// the most (sampled from `memory.stat`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) tree_peak_anon_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) tree_peak_file_bytes: Option<u64>,
    /// The sum of each process's own lifetime peak: an upper bound. For a
    /// phase, summed over its processes.
    #[serde(default)]
    pub(crate) sum_of_peaks_bytes: u64,
    /// Descendants still alive when the stage ended, which the worker killed.
    #[serde(default)]
    pub(crate) leaked_processes: Leaked,
    /// `--span` targets that never matched in this stage (their module was
    /// never imported, or has no such attribute), as spelled: a typo must
    /// never read as zero time. Absent when every one matched, or none was
    /// given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) spans_not_found: Vec<String>,
    /// Each span name's calls: `calls`, `sum_s`, `first_s`, `median_s`,
    /// `p95_s`, `p99_s`, `max_s`, `self_s`, `concurrent_s`, `share` (see
    /// [`super::spans`]); for a phase or trials, pooled over their
    /// measurements.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) spans: BTreeMap<String, super::spans::SpanRecord>,
    /// The time in spans (the main thread's, each second once), outside
    /// and beside them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) span_totals: Option<super::spans::SpanTotals>,
    /// `--span` targets refused or wrapped and never called, and a trace
    /// that draws only some calls.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) span_warnings: Vec<String>,
    /// The command's own stages (`--span …:stage`), in order, after a row
    /// `before_stages` for what ran before the first: `name`, `start_s`,
    /// `wall_s`, `user_s`, `sys_s`, `rss_start_bytes`, `rss_end_bytes`,
    /// `peak_rss_bytes`, `peak_reset`. For trials, each figure's median
    /// over them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) command_stages: Vec<protocol::CommandStage>,
    /// The stage's own page faults and context switches (getrusage deltas
    /// around it, the worker's and its waited-for children's; for a phase,
    /// summed over its jobs). Absent in reports from before they were kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) minor_faults: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) major_faults: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) voluntary_switches: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) involuntary_switches: Option<u64>,
    /// Storage and system-call I/O of the stage's whole tree (for a phase,
    /// summed over its processes): `io_method`, `read_bytes`, … at the
    /// record's top level. Absent where the kernel keeps no task I/O
    /// accounting, and in reports from before it was kept.
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub(crate) io: Option<StageIo>,
    /// What the stage ran on (thread settings, the command's commit, the
    /// helper's Python and libraries); absent when nothing was found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) runtime: Option<RuntimeRecord>,
}

/// The I/O counters of a stage record (see `protocol::Io`, whose fields
/// these are, with the method named `io_method` beside the memory's
/// `tree_peak_method`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct StageIo {
    pub(crate) io_method: String,
    pub(crate) read_bytes: u64,
    pub(crate) write_bytes: u64,
    pub(crate) rchar: u64,
    pub(crate) wchar: u64,
    pub(crate) syscr: u64,
    pub(crate) syscw: u64,
}

/// The names of [`StageIo`]'s counters, as trials sample them.
pub(crate) const IO_COUNTERS: [&str; 6] =
    ["read_bytes", "write_bytes", "rchar", "wchar", "syscr", "syscw"];

impl StageIo {
    pub(crate) fn measured(io: &protocol::Io) -> StageIo {
        StageIo {
            io_method: io.method.clone(),
            read_bytes: io.read_bytes,
            write_bytes: io.write_bytes,
            rchar: io.rchar,
            wchar: io.wchar,
            syscr: io.syscr,
            syscw: io.syscw,
        }
    }

    /// The counters in [`IO_COUNTERS`]' order.
    pub(crate) fn counters(&self) -> [u64; 6] {
        [self.read_bytes, self.write_bytes, self.rchar, self.wchar, self.syscr, self.syscw]
    }

    /// From counters in [`IO_COUNTERS`]' order.
    pub(crate) fn from_counters(io_method: String, c: [u64; 6]) -> StageIo {
        let [read_bytes, write_bytes, rchar, wchar, syscr, syscw] = c;
        StageIo { io_method, read_bytes, write_bytes, rchar, wchar, syscr, syscw }
    }

    /// The sum of several processes' I/O; None when any of them has none
    /// (a total that misses a process is not the phase's), or there are none.
    pub(crate) fn sum<'a>(
        each: impl IntoIterator<Item = Option<&'a protocol::Io>>,
    ) -> Option<StageIo> {
        let mut total: Option<StageIo> = None;
        for io in each {
            let io = StageIo::measured(io?);
            total = Some(match total {
                None => io,
                Some(t) => {
                    let (a, b) = (t.counters(), io.counters());
                    StageIo::from_counters(t.io_method, std::array::from_fn(|i| a[i] + b[i]))
                }
            });
        }
        total
    }
}

/// What a stage ran on: `protocol::Runtime` as the report keeps it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct RuntimeRecord {
    /// Thread settings from the stage's environment, only those set.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) thread_settings: BTreeMap<String, String>,
    /// The commit where a command ran, and whether tracked files differed
    /// (never the repository's path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) git_commit: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) git_dirty: Option<bool>,
    /// The Python helper's report at the command's exit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) python: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) distributions: BTreeMap<String, String>,
    /// The imported frameworks' devices (`jax:cpu`, `tensorflow:GPU`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) devices: Vec<String>,
    /// The SHA-256 of each Python source under the working directory the
    /// command imported, by module name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) sources: BTreeMap<String, String>,
}

impl RuntimeRecord {
    /// None when the worker found nothing to say.
    pub(crate) fn measured(r: &protocol::Runtime) -> Option<RuntimeRecord> {
        let record = RuntimeRecord {
            thread_settings: r.threads.iter().cloned().collect(),
            git_commit: r.git_commit.clone(),
            git_dirty: r.git_dirty,
            python: r.python.clone(),
            distributions: r.distributions.iter().cloned().collect(),
            devices: r.devices.clone(),
            sources: r.sources.iter().cloned().collect(),
        };
        (record != RuntimeRecord::default()).then_some(record)
    }

    /// One line for a person: `Python 3.11.7 (numpy 2.4.6, pyarrow 26.0.1);
    /// commit 0123abcdef01, dirty; OMP_NUM_THREADS=4`.
    pub(crate) fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(python) = &self.python {
            let dists: Vec<String> =
                self.distributions.iter().map(|(n, v)| format!("{n} {v}")).collect();
            parts.push(match dists.is_empty() {
                true => format!("Python {python}"),
                false => format!("Python {python} ({})", dists.join(", ")),
            });
        }
        if !self.devices.is_empty() {
            parts.push(format!("devices {}", self.devices.join(", ")));
        }
        if !self.sources.is_empty() {
            parts.push(format!("{} source file(s) of its own hashed", self.sources.len()));
        }
        if let Some(commit) = &self.git_commit {
            let short = &commit[..12.min(commit.len())];
            parts.push(match self.git_dirty {
                Some(true) => format!("commit {short}, dirty"),
                Some(false) => format!("commit {short}, clean"),
                None => format!("commit {short}"),
            });
        }
        let threads: Vec<String> =
            self.thread_settings.iter().map(|(k, v)| format!("{k}={v}")).collect();
        if !threads.is_empty() {
            parts.push(threads.join(" "));
        }
        parts.join("; ")
    }
}

impl StageRecord {
    /// "command" for a user's command or pipeline stage (its spans are its
    /// own), else the built-in stage's name.
    pub(crate) fn stage_kind(&self) -> &str {
        match self.figures.contains_key("exit_code") {
            true => "command",
            false => &self.stage,
        }
    }

    /// Why the tree's cgroup peak is well below a process's peak RSS, when
    /// it is (more than 10% and 64 MiB below): console and summary.md say
    /// the same.
    pub(crate) fn memory_note(&self, key: &str) -> Option<String> {
        let rss = self.peak_rss_bytes as f64;
        let charged = self.tree_peak_bytes as f64;
        let below = charged < 0.9 * rss && rss - charged > 64.0 * 1024.0 * 1024.0;
        (self.tree_peak_method == "cgroup" && below).then(|| {
            format!(
                "{key}: its cgroup was charged {} at most, below its peak RSS of {}: the kernel charges a page to the cgroup that first brought it into memory, so shared libraries already in the page cache count in RSS (mapped files) but not in this charge; the cgroup says what the tree cost the machine beyond what was resident, RSS what it had mapped (trees.md)",
                crate::fmt::mib(self.tree_peak_bytes),
                crate::fmt::mib(self.peak_rss_bytes)
            )
        })
    }

    /// What a person is told of `--span` targets that never matched in
    /// stage `key`, if any: console and summary.md say the same.
    pub(crate) fn spans_not_found_warning(&self, key: &str) -> Option<String> {
        (!self.spans_not_found.is_empty()).then(|| {
            format!(
                "--span {} matched nothing in stage {key}: the module was never imported, or it has no such function; its time is not zero, it is unmeasured",
                self.spans_not_found.join(", ")
            )
        })
    }
}

/// Processes a stage left behind: how many, and their short command names
/// (`comm`: never a path or an argument).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Leaked {
    pub(crate) count: u32,
    pub(crate) names: Vec<String>,
}

impl Leaked {
    pub(crate) fn from_names(names: Vec<String>) -> Leaked {
        Leaked { count: names.len() as u32, names }
    }
}

/// A worker process as the coordinator saw it: spawn to reap, with the
/// rusage wait4 returned, so it holds even if the worker misreported.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct ProcessRecord {
    pub(crate) rank: u32,
    /// Key of the stage (phase) the process served.
    pub(crate) phase: String,
    /// Keys of the stages this process ran.
    pub(crate) stages: Vec<String>,
    pub(crate) wall_s: f64,
    pub(crate) cpu_s: f64,
    pub(crate) user_s: f64,
    pub(crate) sys_s: f64,
    /// wait4's `ru_maxrss`. Linux carries `ru_maxrss` across `execve`, so
    /// this is never below `peak_rss_floor_bytes`; a value equal to the floor
    /// says only that the process stayed at or under it.
    pub(crate) peak_rss_bytes: u64,
    /// The coordinator's own peak RSS when it spawned this process.
    pub(crate) peak_rss_floor_bytes: u64,
    /// How the process ended, e.g. `exited 0`.
    pub(crate) exit: String,
    /// A task of a Slurm job step: not the coordinator's child and perhaps
    /// on another host, so `wait4` cannot see it; `cpu_s`, `user_s`,
    /// `sys_s` and `peak_rss_bytes` are then the worker's own figures (CPU
    /// summed over its stages, its largest VmHWM), `wall_s` is launch to the
    /// end of its connection, and `peak_rss_floor_bytes` is 0.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) task_of_step: bool,
    /// The worker's host, as SHA-256 of the run token and the host name
    /// (never the name): equal digests mean the same host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) host_sha256: Option<String>,
    /// From `wait4`'s rusage (absent for a task of a job step): minor and
    /// major page faults, voluntary and involuntary context switches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) minor_faults: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) major_faults: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) voluntary_switches: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) involuntary_switches: Option<u64>,
    /// Seconds from the run's start (the coordinator's monotonic clock, no
    /// wall-clock time) to the launch, and to the accepted handshake (absent
    /// if none came). Absent in reports from before they were kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) start_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) connected_s: Option<f64>,
    /// Every job the process ran, in order, on the same clock: the end is
    /// when the coordinator received the measurement, the start that minus
    /// the worker's own wall time for it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) jobs: Vec<JobSlice>,
}

/// One job of a worker process, in seconds from the run's start.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct JobSlice {
    /// The stage's key (a cold-prep series is its phase's key: series are
    /// never named).
    pub(crate) stage: String,
    pub(crate) start_s: f64,
    pub(crate) end_s: f64,
    /// Timed parts of the job on the same clock: a command's spans that
    /// gave a start, the loader's waits.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) slices: Vec<TimedSlice>,
}

/// A named interval, in seconds from the run's start.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct TimedSlice {
    pub(crate) name: String,
    pub(crate) start_s: f64,
    pub(crate) end_s: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct ArtifactRecord {
    /// Relative to the run directory.
    pub(crate) path: String,
    pub(crate) sha256: String,
    pub(crate) bytes: u64,
    /// Key of the stage that wrote it.
    pub(crate) stage: String,
    /// `file`, or `manifest`: a JSON list of files below the manifest's own
    /// directory with their SHA-256, each of which `verify` checks too.
    pub(crate) kind: String,
}

/// SHA-256 of the canonical bytes of `value` without its body digest.
pub(crate) fn body_digest(value: &Value) -> String {
    match value {
        Value::Object(m) if m.contains_key(BODY_DIGEST_KEY) => {
            let mut body = m.clone();
            body.remove(BODY_DIGEST_KEY);
            canonical::sha256_hex(&canonical::value_bytes(&Value::Object(body)))
        }
        body => canonical::sha256_hex(&canonical::value_bytes(body)),
    }
}

/// The final bytes of report.json: the body plus the digest of the body
/// (one copy of the report as a value, however large).
pub(crate) fn seal(report: &impl Serialize) -> Vec<u8> {
    let mut value = serde_json::to_value(report).expect("report serialises");
    if let Value::Object(m) = &mut value {
        m.remove(BODY_DIGEST_KEY);
    }
    let digest = canonical::sha256_hex(&canonical::value_bytes(&value));
    if let Value::Object(m) = &mut value {
        m.insert(BODY_DIGEST_KEY.into(), Value::String(digest));
    }
    canonical::value_bytes(&value)
}
