//! A stage's record: what its worker measured (wall, CPU, memory, the
//! tree's peak and I/O, faults, spans, the command's own stages), what it
//! left running, and the sentences a person reads of it.

use super::RuntimeRecord;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A stage as its worker measured it (monotonic wall clock, getrusage deltas).
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(transform = described)]
pub struct StageRecord {
    pub stage: String,
    /// Position in the plan, from 0.
    pub order: usize,
    /// Rank of the worker that ran it; null when several processes did.
    pub worker: Option<u32>,
    /// How many worker processes this stage used.
    pub processes: u32,
    pub wall_s: f64,
    /// user_s + sys_s.
    pub cpu_s: f64,
    pub user_s: f64,
    pub sys_s: f64,
    /// The worker process's lifetime peak RSS at the end of the stage
    /// (`VmHWM`: its own address space, nothing inherited). With
    /// `--isolation stage` the process ran only this stage.
    pub peak_rss_bytes: u64,
    pub figures: BTreeMap<String, f64>,
    /// Peak resident memory of the stage's whole process tree at once (the
    /// worker and every descendant), by `tree_peak_method`: `sampled` is a
    /// lower bound, never below the worker's own peak. For a phase of many
    /// processes, the largest of theirs.
    #[serde(default)]
    pub tree_peak_bytes: u64,
    #[serde(default)]
    pub tree_peak_method: String,
    /// With `cgroup`: anonymous and file pages when the stage's cgroup held
    /// the most (sampled from `memory.stat`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree_peak_anon_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree_peak_file_bytes: Option<u64>,
    /// The sum of each process's own lifetime peak: an upper bound. For a
    /// phase, summed over its processes.
    #[serde(default)]
    pub sum_of_peaks_bytes: u64,
    /// Descendants still alive when the stage ended, which the worker killed.
    #[serde(default)]
    pub leaked_processes: Leaked,
    /// `--span` targets that never matched in this stage (their module was
    /// never imported, or has no such attribute), as spelled: a typo must
    /// never read as zero time. Absent when every one matched, or none was
    /// given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spans_not_found: Vec<String>,
    /// Each span name's calls: `calls`, `sum_s`, `first_s`, `median_s`,
    /// `p95_s`, `p99_s`, `max_s`, `self_s`, `concurrent_s`, `share` (see
    /// [`crate::rundir::spans`]); for a phase or trials, pooled over their
    /// measurements.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub spans: BTreeMap<String, crate::rundir::spans::SpanRecord>,
    /// The time in spans (the main thread's, each second once), outside
    /// and beside them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span_totals: Option<crate::rundir::spans::SpanTotals>,
    /// `--span` targets refused or wrapped and never called, and a trace
    /// that draws only some calls.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub span_warnings: Vec<String>,
    /// The command's own stages (`--span …:stage`), in order, after a row
    /// `before_stages` for what ran before the first: `name`, `start_s`,
    /// `wall_s`, `user_s`, `sys_s`, `rss_start_bytes`, `rss_end_bytes`,
    /// `peak_rss_bytes`, `peak_reset`. For trials, each figure's median
    /// over them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command_stages: Vec<protocol::CommandStage>,
    /// The stage's own page faults and context switches (described in its schema).
    #[serde(flatten)]
    pub faults: Faults,
    /// Storage and system-call I/O of the stage's whole tree (for a phase,
    /// summed over its processes): `io_method`, `read_bytes`, … at the
    /// record's top level. Absent where the kernel keeps no task I/O
    /// accounting, and in reports from before it was kept.
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub io: Option<StageIo>,
    /// What the stage ran on (thread settings, the command's commit, the
    /// helper's Python and libraries); absent when nothing was found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<RuntimeRecord>,
    /// Its Python's sampled stacks (`--sample`); absent when not sampled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples: Option<crate::rundir::samples::SampledRecord>,
}

/// The I/O counters of a stage record (see `protocol::Io`, whose fields
/// these are, with the method named `io_method` beside the memory's
/// `tree_peak_method`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StageIo {
    pub io_method: String,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub rchar: u64,
    pub wchar: u64,
    pub syscr: u64,
    pub syscw: u64,
}

/// The names of [`StageIo`]'s counters, as trials sample them.
pub const IO_COUNTERS: [&str; 6] =
    ["read_bytes", "write_bytes", "rchar", "wchar", "syscr", "syscw"];

impl StageIo {
    pub fn measured(io: &protocol::Io) -> StageIo {
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
    pub fn counters(&self) -> [u64; 6] {
        [self.read_bytes, self.write_bytes, self.rchar, self.wchar, self.syscr, self.syscw]
    }

    /// From counters in [`IO_COUNTERS`]' order.
    pub fn from_counters(io_method: String, c: [u64; 6]) -> StageIo {
        let [read_bytes, write_bytes, rchar, wchar, syscr, syscw] = c;
        StageIo { io_method, read_bytes, write_bytes, rchar, wchar, syscr, syscw }
    }

    /// The sum of several processes' I/O; None when any of them has none
    /// (a total that misses a process is not the phase's), or there are none.
    pub fn sum<'a>(each: impl IntoIterator<Item = Option<&'a protocol::Io>>) -> Option<StageIo> {
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

/// The figures a stage record keeps at its top level rather than in
/// `figures` (beside [`IO_COUNTERS`], also at the top level when measured):
/// trials sample each of them, and [`StageRecord::measured`] reads them back.
pub const TOP_LEVEL_FIGURES: [&str; 7] = [
    "wall_s",
    "cpu_s",
    "user_s",
    "sys_s",
    "peak_rss_bytes",
    "tree_peak_bytes",
    "sum_of_peaks_bytes",
];

impl StageRecord {
    /// Every figure the record holds, by the name `compare --figure` and
    /// trials use: those at its top level ([`TOP_LEVEL_FIGURES`], the I/O
    /// counters, faults and switches where measured), then `figures`.
    pub fn measured(&self) -> BTreeMap<String, f64> {
        let top = [
            self.wall_s,
            self.cpu_s,
            self.user_s,
            self.sys_s,
            self.peak_rss_bytes as f64,
            self.tree_peak_bytes as f64,
            self.sum_of_peaks_bytes as f64,
        ];
        let mut all: BTreeMap<String, f64> =
            TOP_LEVEL_FIGURES.iter().map(|n| n.to_string()).zip(top).collect();
        if let Some(io) = &self.io {
            all.extend(
                IO_COUNTERS.iter().map(|n| n.to_string()).zip(io.counters().map(|c| c as f64)),
            );
        }
        let counted = [
            ("tree_peak_anon_bytes", self.tree_peak_anon_bytes),
            ("tree_peak_file_bytes", self.tree_peak_file_bytes),
            ("minor_faults", self.faults.minor_faults),
            ("major_faults", self.faults.major_faults),
            ("voluntary_switches", self.faults.voluntary_switches),
            ("involuntary_switches", self.faults.involuntary_switches),
        ];
        all.extend(counted.into_iter().filter_map(|(n, v)| Some((n.to_string(), v? as f64))));
        all.extend(self.figures.iter().map(|(k, v)| (k.clone(), *v)));
        all
    }

    /// "command" for a user's command or pipeline stage (its spans are its
    /// own), else the built-in stage's name.
    pub fn stage_kind(&self) -> &str {
        match self.figures.contains_key("exit_code") {
            true => "command",
            false => &self.stage,
        }
    }

    /// Why the tree's cgroup peak is well below a process's peak RSS, when
    /// it is (more than 10% and 64 MiB below): console and summary.md say
    /// the same.
    pub fn memory_note(&self, key: &str) -> Option<String> {
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
    pub fn spans_not_found_warning(&self, key: &str) -> Option<String> {
        (!self.spans_not_found.is_empty()).then(|| {
            format!(
                "--span {} matched nothing in stage {key}: the module was never imported, or it has no such function; its time is not zero, it is unmeasured",
                self.spans_not_found.join(", ")
            )
        })
    }
}

/// What a stage's fault counts are, in its schema.
const FAULTS: &str = "The stage's own page faults and context switches (getrusage deltas\naround it, the worker's and its waited-for children's; for a phase,\nsummed over its jobs). Absent in reports from before they were kept.";

fn described(schema: &mut schemars::Schema) {
    Faults::describe(schema, FAULTS);
}

/// Page faults and context switches, as `getrusage` and `wait4` count
/// them: at a record's top level (`minor_faults`, …), each absent where it
/// was not counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Faults {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minor_faults: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub major_faults: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub voluntary_switches: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub involuntary_switches: Option<u64>,
}

impl Faults {
    /// Describes the flattened counts in a record's schema, as its own
    /// fields were (a flattened field's doc reaches no property).
    pub fn describe(schema: &mut schemars::Schema, description: &str) {
        let field = schema.get_mut("properties").and_then(|p| p.get_mut("minor_faults"));
        if let Some(serde_json::Value::Object(field)) = field {
            let mut described = serde_json::Map::new();
            described.insert("description".into(), description.into());
            described.extend(std::mem::take(field));
            *field = described;
        }
    }
}

impl From<protocol::Faults> for Faults {
    fn from(f: protocol::Faults) -> Faults {
        Faults {
            minor_faults: Some(f.minor),
            major_faults: Some(f.major),
            voluntary_switches: Some(f.voluntary_switches),
            involuntary_switches: Some(f.involuntary_switches),
        }
    }
}

/// Processes a stage left behind: how many, and their short command names
/// (`comm`: never a path or an argument).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Leaked {
    pub count: u32,
    pub names: Vec<String>,
}

impl Leaked {
    pub fn from_names(names: Vec<String>) -> Leaked {
        Leaked { count: names.len() as u32, names }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(method: &str, tree_mib: u64, rss_mib: u64) -> StageRecord {
        serde_json::from_value(serde_json::json!({
            "stage": "train", "order": 0, "worker": 0, "processes": 1,
            "wall_s": 1.0, "cpu_s": 1.0, "user_s": 1.0, "sys_s": 0.0,
            "peak_rss_bytes": rss_mib << 20, "figures": {},
            "tree_peak_bytes": tree_mib << 20, "tree_peak_method": method,
        }))
        .unwrap()
    }

    /// Both ways: a TensorFlow process charged 262 MiB against 575 MiB of
    /// RSS is explained; a small or near gap, or a sampled peak, is not.
    #[test]
    fn a_cgroup_well_below_the_rss_is_explained_and_nothing_else_is() {
        let note = record("cgroup", 262, 575).memory_note("train").unwrap();
        assert!(note.starts_with("train: its cgroup was charged 262.0 MiB"), "{note}");
        assert!(note.contains("peak RSS of 575.0 MiB"), "{note}");
        assert!(record("cgroup", 12, 15).memory_note("t").is_none(), "under 64 MiB apart");
        assert!(record("cgroup", 540, 575).memory_note("t").is_none(), "within 10%");
        assert!(record("sampled", 262, 575).memory_note("t").is_none(), "not a charge");
    }
}
