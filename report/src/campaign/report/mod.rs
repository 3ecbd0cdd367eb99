//! The campaign's report.json: every trial of every step decomposed per
//! stage and component, the proof that interrupted runs resumed to the cold
//! run's artifacts, and the judgment computed from those numbers. Bound by
//! SHA-256 to the campaign's declaration and environment and to every
//! run's own report (as artifacts), like a run's report.
//!
//! Here the records themselves; `parts` turns a run's report into a
//! trial's stage parts and sums them, `judgment` reads the steps in plain
//! sentences.

mod judgment;
mod parts;

pub use judgment::{cold_identity, failures, judgment, resumed_state};
pub use parts::{
    component_total, largest_components, medians, outside, pct, span_totals, stage_calls,
    stage_parts,
};

use crate::rundir::report::ArtifactRecord;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const SCHEMA: &str = "stagebench.campaign";
pub const SCHEMA_VERSION: u32 = 1;

/// A campaign report's `schema_version`: this one's only.
fn this_version<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    crate::rundir::report::expect_version(d, SCHEMA, SCHEMA_VERSION)
}

/// The components (owned by the recipe mode, whose stages report them).
pub use crate::modes::recipe::{COMPONENTS, label};

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CampaignReport {
    pub schema: String,
    #[serde(deserialize_with = "this_version")]
    pub schema_version: u32,
    pub name: String,
    pub declaration_sha256: String,
    pub environment_sha256: String,
    pub trials: u32,
    pub epochs: u32,
    /// Digest of the state the first cold trial left (`evidence::digest::digest`;
    /// a pipeline's scratch directory: `digest_all_but`, dot-files included).
    pub reference_state_sha256: String,
    /// The steps ran an external pipeline (`[[pipeline]]`), not the recipe:
    /// its spans, not the recipe's components, carry its judgment.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pipeline: bool,
    pub steps: Vec<StepReport>,
    /// Plain sentences computed from the medians below.
    pub judgment: Vec<String>,
    /// Every run's report.json and every killed run's failure.json.
    pub artifacts: Vec<ArtifactRecord>,
    /// Each state directory under `state/` as the campaign left it, by its
    /// recipe digest (every regular file not starting with '.'): what
    /// `verify` checks them against. Absent (empty) for a pipeline campaign.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub states: Vec<StateRecord>,
    /// Trials whose run failed (a crash, a non-zero exit, a timeout, a
    /// kill point never reached): findings, kept with the measurements the
    /// campaign took before and after them. The campaign then exits 1.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_trials: Vec<FailedTrial>,
    /// Steps not run, each with why (no cold trial left a state to start
    /// from).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_run: Vec<String>,
    /// A pipeline's scratch state, file by file: how its cold runs compare
    /// with each other (the baseline a resume is judged against) and what
    /// `identity_exclude` left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<Identity>,
}

/// How a pipeline's cold runs' scratch states compare with the first's.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Identity {
    /// `identity_exclude`, as declared.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<String>,
    /// Files the patterns left out of the first cold trial's state.
    pub excluded_files: u64,
    /// Cold trials that completed, and how many of them left the first
    /// one's state exactly (the first included).
    pub cold_trials: u32,
    pub cold_identical: u32,
    /// Files in which a cold trial's state differs from the first's (the
    /// paths go to `private/identity.txt`, never into evidence).
    pub baseline_files: u64,
}

impl CampaignReport {
    /// Whether the campaign found nothing wrong: no trial failed, every
    /// step ran, and every resumed state reproduced a cold run (a
    /// pipeline's: beyond the files cold runs differ in among themselves).
    pub fn clean(&self) -> bool {
        let reproduced = self
            .steps
            .iter()
            .filter(|s| s.kind != "cold")
            .flat_map(|s| &s.trials)
            .all(TrialReport::reproduces_cold);
        self.failed_trials.is_empty() && self.not_run.is_empty() && reproduced
    }
}

/// A trial whose run failed: where, how, and what it had done.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FailedTrial {
    pub step: String,
    /// The step's kind (`cold`, `resume`, `interrupted`).
    pub kind: String,
    pub trial: u32,
    /// The run that failed, relative to the campaign directory: the trial's
    /// own, or the attempt to be killed (`…-killed`) when that one failed.
    pub run: String,
    /// Whether it was the attempt to be killed that failed.
    pub killed_attempt: bool,
    /// The step's kill point, for an interrupted step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kill_at: Option<String>,
    /// failure.json's `reason` (`stage_failed`, `worker_crashed`,
    /// `stage_timeout`, …), or `kill_point_not_reached`.
    pub reason: String,
    pub stage: Option<String>,
    /// What went wrong, in one line (the run's own failure message).
    pub message: String,
    /// The last span the failed stage finished before it failed (`NAME`,
    /// or `NAME #k` after more than one), when it reported any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_span: Option<String>,
    /// Where the end of the failed command's stderr was kept, relative to
    /// the campaign directory (`private/stderr/STEP.T.txt`, outside the
    /// evidence), when it was: only when stagebench's stderr is not a
    /// terminal, so the program's `isatty(2)` is what it would be unmeasured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr_tail_file: Option<String>,
}

impl FailedTrial {
    /// What went wrong, short: the message after its last `: ` (a
    /// stage's own error, without which worker ran it).
    pub fn what(&self) -> &str {
        self.message.rsplit(": ").next().unwrap_or(&self.message)
    }
}

/// A state directory the campaign's runs wrote, as it was left at the end.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StateRecord {
    /// Relative to the campaign directory: `state/NAME`.
    pub path: String,
    pub files: u64,
    pub bytes: u64,
    pub sha256: String,
}

/// Every state directory under `dir/state/`, in name order, by its digest.
pub fn states(dir: &std::path::Path) -> std::io::Result<Vec<StateRecord>> {
    let root = dir.join("state");
    if !root.is_dir() {
        return Ok(Vec::new());
    }
    let mut names: Vec<String> = std::fs::read_dir(&root)?
        .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<Result<_, _>>()?;
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let d = evidence::digest::digest(&root.join(&name))?;
            Ok(StateRecord {
                path: format!("state/{name}"),
                files: d.files,
                bytes: d.bytes,
                sha256: d.sha256,
            })
        })
        .collect()
}

impl CampaignReport {
    /// The stage keys of the report's steps, in run order.
    pub fn stage_keys(&self) -> Vec<String> {
        let mut keys: Vec<(usize, String)> = self
            .steps
            .first()
            .map(|s| s.median.iter().map(|(k, p)| (p.order, k.clone())).collect())
            .unwrap_or_default();
        keys.sort();
        keys.into_iter().map(|(_, k)| k).collect()
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StepReport {
    pub name: String,
    pub kind: String,
    pub policy: Option<String>,
    pub kill_at: Option<String>,
    pub trials: Vec<TrialReport>,
    /// Per stage, the median over trials of each component's seconds.
    pub median: BTreeMap<String, StagePart>,
    /// Median over trials of the sum over stages (process start-up included).
    pub median_total_s: f64,
    /// That median's interval with its coverage (a bootstrap 95% one from 6
    /// trials, the trials' range with its exact coverage below); absent
    /// with one trial, and in reports from before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub median_total_interval: Option<crate::stats::Interval>,
}

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TrialReport {
    /// The run directory, relative to the campaign's.
    pub run: String,
    pub run_wall_s: f64,
    pub stages: BTreeMap<String, StagePart>,
    /// Sum over stages of wall and start-up.
    pub total_s: f64,
    pub state_sha256: String,
    /// Interrupted steps: the run that was killed.
    pub killed: Option<Killed>,
    /// Whether the state left equals the reference (the first cold trial's).
    pub identical_to_cold: bool,
    /// A pipeline's: files in which the state left differs from the
    /// reference, and how many of them the cold runs do not differ in
    /// among themselves (what the resume changed beyond the baseline).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub differing_files: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub beyond_baseline: Option<u64>,
    /// The train stage's checkpoint size and mean write time, when it wrote one.
    pub checkpoint_bytes: Option<f64>,
    pub checkpoint_write_s: Option<f64>,
    /// When the run began and ended, in seconds from the campaign's start
    /// (the coordinator's monotonic clock). Absent in older reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span_s: Option<[f64; 2]>,
    /// Per stage, its spans' calls in the order they began (names called
    /// at most `MAX_CALLS` times in the stage): what a resume is read
    /// against call by call.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub calls: BTreeMap<String, crate::rundir::spans::Calls>,
}

#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Killed {
    pub run: String,
    pub stage: String,
    /// The killed run's worker processes' walls (spawn to reap) summed,
    /// the killed one's up to its reap: measured as a trial's `total_s` is.
    pub wall_s: f64,
    /// When the killed run began and ended, from the campaign's start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span_s: Option<[f64; 2]>,
    /// The calls that ended before the kill, per stage (the stages that
    /// completed, and the killed one up to the kill): what the resume
    /// repeats, if it runs them again.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub calls: BTreeMap<String, crate::rundir::spans::Calls>,
}

/// One stage's seconds by component (see [`COMPONENTS`]) and its order.
#[derive(Clone, Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StagePart {
    pub order: usize,
    pub wall_s: f64,
    pub components: BTreeMap<String, f64>,
    /// A pipeline stage a resume skipped (its completion marker existed).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub skipped: bool,
    /// Inner spans the stage reported (`STAGEBENCH_SPANS`), by name: each
    /// one's self seconds on the main thread, so they add up to the time
    /// in spans and never count a second twice.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub spans: BTreeMap<String, f64>,
    /// Seconds in spans beside the main thread (other threads, forked
    /// children, generators): no part of the stage's wall.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub concurrent_s: f64,
    /// What the stage ran on (its record's `runtime`: thread settings, the
    /// commit, the Python helper's interpreter and libraries); in the
    /// medians, the first trial's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<crate::rundir::report::RuntimeRecord>,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

impl TrialReport {
    /// Whether its state reproduces a cold run: identical, or for a
    /// pipeline different only where cold runs differ among themselves.
    pub fn reproduces_cold(&self) -> bool {
        self.identical_to_cold || self.beyond_baseline == Some(0)
    }
}

impl StagePart {
    pub fn total(&self) -> f64 {
        self.wall_s + self.components.get("startup").copied().unwrap_or(0.0)
    }
}

#[cfg(test)]
mod tests {
    /// A campaign report of another schema_version is refused in one line
    /// naming both versions; its own version reads.
    #[test]
    fn a_campaign_report_of_another_version_is_refused() {
        let v: serde_json::Value =
            serde_json::from_str(include_str!("../fixture-report.json")).unwrap();
        assert!(serde_json::from_value::<super::CampaignReport>(v.clone()).is_ok());
        for other in [0, 2] {
            let mut w = v.clone();
            w["schema_version"] = other.into();
            let e = serde_json::from_value::<super::CampaignReport>(w).unwrap_err().to_string();
            let both = format!(
                "stagebench.campaign schema_version {other} cannot be read: this stagebench reads schema_version 1"
            );
            assert!(e.contains(&both) && !e.contains('\n'), "{e}");
        }
    }
}
