//! Messages, named by direction.

use crate::Stage;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Bumped whenever a message's wire form changes; the handshake refuses a mismatch.
pub const PROTOCOL_VERSION: u32 = 22;

/// A worker's rank within one run (0-based). Unique per connection in a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct WorkerId(pub u32);

impl fmt::Display for WorkerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "worker {}", self.0)
    }
}

/// One unit of assigned work within a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct JobId(pub u32);

/// The per-run secret a worker must present in its handshake. It reaches the
/// worker through its environment, never through argv (which `ps` shows).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Token(#[serde(with = "serde_bytes")] pub [u8; 32]);

impl Token {
    /// Parses the 64-hex-digit form used in the environment.
    pub fn from_hex(s: &str) -> Option<Token> {
        let s = s.trim().as_bytes();
        if s.len() != 64 {
            return None;
        }
        let mut out = [0u8; 32];
        for (i, pair) in s.chunks(2).enumerate() {
            let hi = (pair[0] as char).to_digit(16)?;
            let lo = (pair[1] as char).to_digit(16)?;
            out[i] = (hi * 16 + lo) as u8;
        }
        Some(Token(out))
    }

    /// The 64-hex-digit form used in the environment.
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Comparison whose time does not depend on where the tokens differ.
    pub fn matches(&self, other: &Token) -> bool {
        self.0.iter().zip(other.0.iter()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

/// The first frame on every connection, sent by the worker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    pub protocol_version: u32,
    pub worker_version: String,
    /// [`crate::program::SOURCE_SHA256`] of the worker's build.
    pub build_fingerprint: String,
    pub pid: u32,
    pub rank: WorkerId,
    pub token: Token,
    /// [`host_sha256`] of the host the worker runs on: a report can count
    /// the hosts that served a run without naming them.
    pub host_sha256: String,
}

/// SHA-256 (hex) of the run's token and a host name: the same host gives the
/// same digest within a run, and digests cannot be linked across runs or
/// reversed by trying likely host names without the token.
pub fn host_sha256(token: &Token, host: &str) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(b"stagebench-host\0");
    h.update(token.0);
    h.update(host.as_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Coordinator → worker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ToWorker {
    /// The handshake was accepted. `run_dir` is where artifacts go.
    Welcome { run_dir: String },
    /// The handshake was refused; the connection closes after this frame.
    Refused { reason: String },
    /// Run one stage and report on it; a command stage with a `kill` point
    /// is killed there by the worker (see [`KillPoint`]). `spans`: functions
    /// a command's (or a preparation program's) Python wraps as spans
    /// without its code being edited (`--span`); empty for everything else.
    /// `sample`: sample the command's Python stacks with py-spy
    /// (`--sample`); None for everything else.
    Assign {
        job: JobId,
        stage: Stage,
        kill: Option<KillPoint>,
        spans: Vec<SpanTarget>,
        sample: Option<SampleRequest>,
    },
    /// No more work: exit cleanly.
    Shutdown,
    /// No more items: close the preparation program this worker started
    /// for its items (its input closes, it must exit 0), contain its tree,
    /// and answer [`FromWorker::Finished`]. Sent only to a worker that was
    /// assigned a `PrepareItem`.
    Finish,
}

/// How a command stage's Python stacks are sampled (`--sample`): py-spy,
/// found by the coordinator before anything ran, attached to the command's
/// process tree from outside it at `rate_hz`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SampleRequest {
    pub rate_hz: u32,
    /// The py-spy program to run (a path on the worker's host).
    pub py_spy: String,
}

/// Worker → coordinator.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum FromWorker {
    Hello(Hello),
    /// `done` of `total` units of the current job are finished.
    Progress {
        job: JobId,
        done: u64,
        total: u64,
    },
    /// A file the job wrote, relative to the run directory, with its SHA-256.
    Artifact {
        job: JobId,
        path: String,
        #[serde(with = "serde_bytes")]
        sha256: [u8; 32],
    },
    /// The job finished; this is its measurement.
    Measurement {
        job: JobId,
        measurement: Measurement,
    },
    /// The job failed with this error text. `slices`: a command's spans
    /// that ended before it failed (what it got done), as a measurement's;
    /// `stderr_tail`: the end of a failed command's stderr (at most 64 KiB,
    /// whole lines), when the worker kept it, for a private file only.
    StageFailed {
        job: JobId,
        error: String,
        slices: Vec<Slice>,
        stderr_tail: Option<String>,
    },
    /// The job's command reached its declared kill point: the worker killed
    /// its whole process tree with SIGKILL and reaped it. `at` says where,
    /// for a person ("after span 'fit' #2 ended"); `slices`, the spans that
    /// ended before the kill.
    KilledAtPoint {
        job: JobId,
        at: String,
        slices: Vec<Slice>,
    },
    /// The answer to [`ToWorker::Finish`]: the program's close measured
    /// (its wall from closing its input to its exit, its tree's lifetime
    /// peak, what it leaked), and why the close failed, if it did.
    /// `artifacts`: files written for the program's whole life (its sampled
    /// stacks, `--sample`), as [`FromWorker::Artifact`] names them;
    /// `beside`: what the worker's reaped children that were no part of
    /// the program used (py-spy), which the worker's own exit status
    /// counts and no figure of the program may.
    Finished {
        measurement: Measurement,
        error: Option<String>,
        artifacts: Vec<Written>,
        beside: Option<Beside>,
    },
}

/// A file a worker wrote, relative to the run directory, with its SHA-256.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Written {
    pub path: String,
    #[serde(with = "serde_bytes")]
    pub sha256: [u8; 32],
}

/// CPU time and counts of processes a worker started and reaped beside
/// the measured ones (py-spy sampling them), summed over the worker's life.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Beside {
    pub user_ns: u64,
    pub sys_ns: u64,
    pub faults: Faults,
}

/// What `--span` asks a Python command to time without editing it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SpanTarget {
    /// `MODULE:QUALNAME[=NAME]`: the function, method, classmethod or
    /// staticmethod QUALNAME of MODULE, as a span called NAME.
    Function { module: String, qualname: String, name: String },
    /// `preset:NAME`: a set of spans the helper knows (`torch`).
    Preset(String),
    /// `MODULE:QUALNAME=NAME:stage`: a function as a span that is also a
    /// stage of the command, with its process CPU and memory.
    Stage { module: String, qualname: String, name: String },
}

impl std::fmt::Display for SpanTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SpanTarget::Function { module, qualname, name } => {
                let last = qualname.rsplit('.').next().unwrap_or(qualname);
                match name == last {
                    true => write!(f, "{module}:{qualname}"),
                    false => write!(f, "{module}:{qualname}={name}"),
                }
            }
            SpanTarget::Preset(p) => write!(f, "preset:{p}"),
            SpanTarget::Stage { module, qualname, name } => {
                write!(f, "{module}:{qualname}={name}:stage")
            }
        }
    }
}

/// Where a worker kills a command stage's process tree on purpose, so a
/// resume can be measured from a known point. The command reports what it
/// has done through its spans file (`STAGEBENCH_SPANS`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum KillPoint {
    /// As soon as a `{"progress": P}` line reports at least this fraction.
    Progress(f64),
    /// Right after the `n`th span called `name` ends (n ≥ 1).
    Span { name: String, n: u32 },
    /// This many seconds after the command started.
    After(f64),
}

/// What a worker measured around one stage.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// Monotonic wall time of the stage.
    pub wall_ns: u64,
    /// Process user CPU time spent during the stage (getrusage delta).
    pub user_ns: u64,
    /// Process system CPU time spent during the stage (getrusage delta).
    pub sys_ns: u64,
    /// Process lifetime peak RSS at the end of the stage (ru_maxrss), in bytes.
    pub peak_rss_bytes: u64,
    /// The stage's own figures (counts, rates, latencies).
    pub figures: Vec<Figure>,
    /// The stage's whole process tree: the worker and every descendant.
    pub tree: TreeUsage,
    /// Page faults and context switches during the stage (getrusage
    /// deltas, the worker's own and its waited-for children's).
    pub faults: Faults,
    /// Timed parts of the stage (a command's spans with a start, the fit
    /// epoch's loader waits), at most [`MAX_SLICES`], in the order ended.
    pub slices: Vec<Slice>,
    /// `--span` targets (as spelled, `MODULE:QUALNAME`) that never matched:
    /// their module was never imported, or it has no such attribute.
    pub spans_not_found: Vec<String>,
    /// Every span name's calls, in order of first appearance: count,
    /// inclusive, self and concurrent time, and their distribution.
    pub spans: Vec<crate::spans::SpanSummary>,
    /// What a person must know to read the spans: targets refused or
    /// wrapped but never called, slices left out of the trace.
    pub span_warnings: Vec<String>,
    /// The command's own stages (stage spans), in order, after a row for
    /// what ran before the first; empty without stage spans.
    pub command_stages: Vec<crate::spans::CommandStage>,
    /// Storage and system-call I/O of the stage's whole tree, where the
    /// kernel keeps task I/O accounting (`/proc/PID/io`).
    pub io: Option<Io>,
    /// What the stage ran on: thread settings, the command's commit, and
    /// what the Python helper said of its interpreter and libraries.
    pub runtime: Runtime,
}

/// I/O of a stage's process tree, from Linux's task I/O accounting: the
/// worker's own `/proc/self/io` read before the stage and again after every
/// descendant was reaped (the kernel adds a reaped child's counters, and
/// those of the children it reaped, to its parent's), less the worker's
/// tree thread's own reads of /proc.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Io {
    /// How the counters were read: `procfs`.
    pub method: String,
    /// Bytes the tree caused to be fetched from storage (page-cache hits
    /// are not counted).
    pub read_bytes: u64,
    /// Bytes the tree caused to be sent to storage (counted when pages
    /// are dirtied).
    pub write_bytes: u64,
    /// Bytes passed to read-like and write-like system calls, storage,
    /// page cache, pipes and sockets alike.
    pub rchar: u64,
    pub wchar: u64,
    /// Read-like and write-like system calls.
    pub syscr: u64,
    pub syscw: u64,
}

/// What a stage ran on, beyond the machine.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Runtime {
    /// Thread settings from the stage's environment (`OMP_NUM_THREADS`,
    /// `MKL_NUM_THREADS`, `TF_NUM_*`, …), only those set, sorted by name.
    pub threads: Vec<(String, String)>,
    /// The commit checked out where a command ran, and whether tracked
    /// files differed from it; None outside a git work tree.
    pub git_commit: Option<String>,
    pub git_dirty: Option<bool>,
    /// From the Python helper at the command's exit: the interpreter's
    /// version, and the name and version of every distribution whose
    /// modules were imported, sorted by name.
    pub python: Option<String>,
    pub distributions: Vec<(String, String)>,
    /// The devices of the frameworks the command imported (JAX, TensorFlow,
    /// torch), as `FRAMEWORK:KIND` (`jax:cpu`, `tensorflow:GPU`).
    pub devices: Vec<String>,
    /// The SHA-256 (hex) of each Python source file under the command's
    /// working directory that it imported, by module name (`__main__` for
    /// the script), sorted: the user's own code, never a path.
    pub sources: Vec<(String, String)>,
}

/// Most slices one measurement carries (the rest are counted in the
/// stage's figures, never sent).
pub const MAX_SLICES: usize = 4096;

/// A timed part of a stage: nanoseconds from the stage's measured start.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Slice {
    pub name: String,
    pub start_ns: u64,
    pub dur_ns: u64,
    /// It ran beside the stage's main thread (another thread, a forked
    /// child): never the parent of a main-thread span.
    pub beside: bool,
}

/// What rusage says about a process's memory and scheduling: the same work
/// with the same fault counts but more CPU means each fault cost more (a
/// huge page zeroed, for one).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Faults {
    pub minor: u64,
    pub major: u64,
    pub voluntary_switches: u64,
    pub involuntary_switches: u64,
}

/// Memory and containment of a stage's process tree (the worker and every
/// process it started, directly or not, including orphans it reaped).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TreeUsage {
    /// Peak resident memory of the tree's processes at once, in bytes.
    pub peak_bytes: u64,
    /// How `peak_bytes` was found: `cgroup` (the kernel's peak charge of the
    /// stage's processes, plus the worker's own peak) or `sampled` (the sum
    /// of every live process's RSS at a declared interval, never below the
    /// worker's own peak; it misses peaks between samples and counts shared
    /// pages once per process).
    pub method: String,
    /// The interval of the sampler, in milliseconds.
    pub sample_ms: u32,
    /// The sum of each process's own lifetime peak (`VmHWM` as sampled,
    /// `ru_maxrss` of those the worker reaped): an upper bound.
    pub sum_of_peaks_bytes: u64,
    /// Short command names (`comm`) of the descendants still alive when the
    /// stage ended; the worker killed them (SIGTERM, a grace, SIGKILL) and
    /// reaped them.
    pub leaked: Vec<String>,
    /// With `cgroup`: the anonymous and the file pages the stage's cgroup
    /// held when its charge was highest among the samples (from
    /// `memory.stat`); file pages of a data pipeline can dominate.
    pub anon_bytes: Option<u64>,
    pub file_bytes: Option<u64>,
}

/// A named figure a stage reports beside its wall, CPU and memory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    pub name: String,
    pub value: f64,
}
