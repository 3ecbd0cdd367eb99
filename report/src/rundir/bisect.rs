//! A bisection's records (`coordinator bisect`): the declaration written
//! before its first probe and the report listing every probe in order.
//! What reads and judges them is `crate::bisect`'s; these are here, with
//! the run directory's other records, so `verify` can read them.

use super::declaration::Program;
use crate::stats::Interval;
use serde::{Deserialize, Serialize};

pub const SCHEMA_DECLARATION: &str = "stagebench.bisect-declaration";
pub const SCHEMA: &str = "stagebench.bisect-report";
pub const SCHEMA_VERSION: u32 = 1;
/// Where each probe's run directories go: `probes/COMMIT/`, then
/// `probes/COMMIT-2/`, … for each further batch of rounds.
pub const PROBES: &str = "probes";
/// Where a commit's failed build leaves its log: `builds/COMMIT.log`.
pub const BUILDS: &str = "builds";
/// How many hex digits of a commit name its probe.
pub const SHORT: usize = 12;

/// What a bisection is, written before the first probe. The run flags and
/// the build command may name paths, so they are bound by hash only.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BisectDeclaration {
    pub schema: String,
    pub schema_version: u32,
    pub created_utc: String,
    pub good: String,
    pub bad: String,
    /// The first-parent history from good to bad, both included, oldest first.
    pub commits: Vec<String>,
    pub run_flags_sha256: String,
    pub build_sha256: Option<String>,
    pub figure: String,
    pub threshold_pct: f64,
    /// Rounds (counted trials) per batch, and the most one probe may have.
    pub rounds: u32,
    pub max_rounds: u32,
    /// Uncommitted changes in the user's work tree when it started (probes
    /// use their own worktrees, so they do not see them).
    pub work_tree_dirty: bool,
    pub program: Program,
}

impl BisectDeclaration {
    /// Whether `other` declares the same bisection (all but when it started
    /// and what the work tree held): a rerun into the same directory
    /// resumes only then.
    pub fn same_bisection(&self, other: &BisectDeclaration) -> bool {
        let key = |d: &BisectDeclaration| {
            (
                d.good.clone(),
                d.bad.clone(),
                d.commits.clone(),
                d.run_flags_sha256.clone(),
                d.build_sha256.clone(),
                d.figure.clone(),
                d.threshold_pct.to_bits(),
                d.rounds,
                d.max_rounds,
            )
        };
        key(self) == key(other)
    }
}

/// What a probe of one commit found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbeVerdict {
    /// An endpoint, measured first.
    Good,
    Bad,
    /// Neither like good nor like bad after `max_rounds` rounds; its
    /// neighbour is probed instead (as `git bisect skip`).
    Unclear,
    /// Its build failed (the log is kept), or its run did not end ok.
    Skipped,
}

/// One probed commit.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Probe {
    pub commit: String,
    /// Its place in the declaration's `commits`.
    pub position: usize,
    pub verdict: ProbeVerdict,
    /// Why it is `skipped`; None otherwise.
    pub reason: Option<String>,
    /// The figure's median over every counted round, and its interval.
    pub median: Option<f64>,
    pub interval: Option<Interval>,
    pub rounds: u32,
    /// The rank test's p against the good and the bad endpoint.
    pub p_good: Option<f64>,
    pub p_bad: Option<f64>,
    /// Its run directories (relative), in order.
    pub runs: Vec<String>,
    /// Found verified from an earlier, interrupted bisection, not run again.
    pub reused: bool,
    /// The windows it was measured in: each a run of it between runs of
    /// both endpoints, measured again beside it, in the recorded order
    /// (good, probe, bad, then bad, probe, good, …), so a drift of the
    /// machine common to the three cancels. Its verdict reads its runs
    /// against the endpoints' runs of its own windows only. Empty for the
    /// endpoints and for a skipped probe (and in reports from before).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub windows: Vec<Window>,
}

/// One window of a probe: its run and the endpoints' runs beside it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Window {
    /// The order the three runs were made in: `good`, `probe`, `bad`.
    pub order: Vec<String>,
    /// The run directories (relative): the endpoints' in this window.
    pub good_run: String,
    pub bad_run: String,
    /// The figure's median in each of the window's three runs: the
    /// endpoints' re-measured medians show the drift over the bisection.
    pub median_good: f64,
    pub median_probe: f64,
    pub median_bad: f64,
}

/// The boundary measured side by side before a single commit is named:
/// the last good commit and the first bad one, in one window (lower,
/// upper, upper, lower), where neither is an endpoint (an endpoint was
/// already in the other's windows).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Confirmation {
    pub lower: String,
    pub upper: String,
    /// The run directories (relative), in the order they were made.
    pub runs: Vec<String>,
    pub median_lower: f64,
    pub median_upper: f64,
    /// The rank test's p that the upper commit is slower.
    pub p: f64,
    /// Whether the upper commit regressed against the lower at p <
    /// `PROBE_ALPHA` beyond the threshold: else no single commit is named.
    pub held: bool,
}

/// The endpoints compared: the stage whose figure changed most.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Endpoints {
    pub stage: String,
    pub figure: String,
    pub median_good: f64,
    pub median_bad: f64,
    pub ratio: f64,
    pub interval: Interval,
    pub p: f64,
    pub regressed: bool,
    /// Why the endpoints, judged in pairs, cannot be said to differ or
    /// not (the gate's "not sure"); absent when they can.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unsure: Option<String>,
}

/// A file the report binds: a probe's report.json (its run directory
/// verified whole) or a failed build's log.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Artifact {
    pub path: String,
    pub sha256: String,
    pub bytes: u64,
    /// `run` or `file`.
    pub kind: String,
}

/// report.json of a bisection.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BisectReport {
    pub schema: String,
    pub schema_version: u32,
    pub declaration_sha256: String,
    pub environment_sha256: String,
    pub figure: String,
    pub threshold_pct: f64,
    /// The commits of the first-parent history, both endpoints included.
    pub commits: usize,
    pub endpoints: Option<Endpoints>,
    /// Every probe in the order it was made, the endpoints first.
    pub probes: Vec<Probe>,
    /// The first bad commit, when one commit is left.
    pub first_bad: Option<String>,
    /// The commits the first bad one may be, when unclear or skipped
    /// commits leave more than one.
    pub candidates: Vec<String>,
    /// The span that changed most between the last good and the first bad
    /// probe, where the run records spans.
    pub span: Option<Endpoints>,
    /// The boundary measured side by side (see [`Confirmation`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmation: Option<Confirmation>,
    pub answer: String,
    pub work_tree_dirty: bool,
    pub artifacts: Vec<Artifact>,
}
