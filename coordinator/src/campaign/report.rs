//! The campaign's report.json: every trial of every step decomposed per
//! stage and component, the proof that interrupted runs resumed to the cold
//! run's artifacts, and the judgment computed from those numbers. Bound by
//! SHA-256 to the campaign's declaration and environment and to every
//! run's own report (as artifacts), like a run's report.

use crate::fmt::duration;
use crate::modes::Report;
use crate::rundir::report::ArtifactRecord;
use crate::stats::median;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub(crate) const SCHEMA: &str = "stagebench.campaign";
pub(crate) const SCHEMA_VERSION: u32 = 1;

/// The components (owned by the recipe mode, whose stages report them).
pub(crate) use crate::modes::recipe::{COMPONENTS, label};

#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct CampaignReport {
    pub(crate) schema: String,
    pub(crate) schema_version: u32,
    pub(crate) name: String,
    pub(crate) declaration_sha256: String,
    pub(crate) environment_sha256: String,
    pub(crate) trials: u32,
    pub(crate) epochs: u32,
    /// Digest of the state the first cold trial left (`recipe::state::digest`;
    /// a pipeline's scratch directory: `digest_all_but`, dot-files included).
    pub(crate) reference_state_sha256: String,
    /// The steps ran an external pipeline (`[[pipeline]]`), not the recipe:
    /// its spans, not the recipe's components, carry its judgment.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) pipeline: bool,
    pub(crate) steps: Vec<StepReport>,
    /// Plain sentences computed from the medians below.
    pub(crate) judgment: Vec<String>,
    /// Every run's report.json and every killed run's failure.json.
    pub(crate) artifacts: Vec<ArtifactRecord>,
    /// Each state directory under `state/` as the campaign left it, by its
    /// recipe digest (every regular file not starting with '.'): what
    /// `verify` checks them against. Absent (empty) for a pipeline campaign.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) states: Vec<StateRecord>,
    /// Trials whose run failed (a crash, a non-zero exit, a timeout, a
    /// kill point never reached): findings, kept with the measurements the
    /// campaign took before and after them. The campaign then exits 1.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) failed_trials: Vec<FailedTrial>,
    /// Steps not run, each with why (no cold trial left a state to start
    /// from).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) not_run: Vec<String>,
    /// A pipeline's scratch state, file by file: how its cold runs compare
    /// with each other (the baseline a resume is judged against) and what
    /// `identity_exclude` left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) identity: Option<Identity>,
}

/// How a pipeline's cold runs' scratch states compare with the first's.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Identity {
    /// `identity_exclude`, as declared.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) exclude: Vec<String>,
    /// Files the patterns left out of the first cold trial's state.
    pub(crate) excluded_files: u64,
    /// Cold trials that completed, and how many of them left the first
    /// one's state exactly (the first included).
    pub(crate) cold_trials: u32,
    pub(crate) cold_identical: u32,
    /// Files in which a cold trial's state differs from the first's (the
    /// paths go to `private/identity.txt`, never into evidence).
    pub(crate) baseline_files: u64,
}

impl CampaignReport {
    /// Whether the campaign found nothing wrong: no trial failed, every
    /// step ran, and every resumed state reproduced a cold run (a
    /// pipeline's: beyond the files cold runs differ in among themselves).
    pub(crate) fn clean(&self) -> bool {
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
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct FailedTrial {
    pub(crate) step: String,
    /// The step's kind (`cold`, `resume`, `interrupted`).
    pub(crate) kind: String,
    pub(crate) trial: u32,
    /// The run that failed, relative to the campaign directory: the trial's
    /// own, or the attempt to be killed (`…-killed`) when that one failed.
    pub(crate) run: String,
    /// Whether it was the attempt to be killed that failed.
    pub(crate) killed_attempt: bool,
    /// The step's kill point, for an interrupted step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) kill_at: Option<String>,
    /// failure.json's `reason` (`stage_failed`, `worker_crashed`,
    /// `stage_timeout`, …), or `kill_point_not_reached`.
    pub(crate) reason: String,
    pub(crate) stage: Option<String>,
    /// What went wrong, in one line (the run's own failure message).
    pub(crate) message: String,
    /// The last span the failed stage finished before it failed (`NAME`,
    /// or `NAME #k` after more than one), when it reported any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) last_span: Option<String>,
}

impl FailedTrial {
    /// What went wrong, short: the message after its last `: ` (a
    /// stage's own error, without which worker ran it).
    pub(crate) fn what(&self) -> &str {
        self.message.rsplit(": ").next().unwrap_or(&self.message)
    }
}

/// A state directory the campaign's runs wrote, as it was left at the end.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct StateRecord {
    /// Relative to the campaign directory: `state/NAME`.
    pub(crate) path: String,
    pub(crate) files: u64,
    pub(crate) bytes: u64,
    pub(crate) sha256: String,
}

/// Every state directory under `dir/state/`, in name order, by its digest.
pub(crate) fn states(dir: &std::path::Path) -> std::io::Result<Vec<StateRecord>> {
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
            let d = recipe::state::digest(&root.join(&name))?;
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
    pub(crate) fn stage_keys(&self) -> Vec<String> {
        let mut keys: Vec<(usize, String)> = self
            .steps
            .first()
            .map(|s| s.median.iter().map(|(k, p)| (p.order, k.clone())).collect())
            .unwrap_or_default();
        keys.sort();
        keys.into_iter().map(|(_, k)| k).collect()
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct StepReport {
    pub(crate) name: String,
    pub(crate) kind: String,
    pub(crate) policy: Option<String>,
    pub(crate) kill_at: Option<String>,
    pub(crate) trials: Vec<TrialReport>,
    /// Per stage, the median over trials of each component's seconds.
    pub(crate) median: BTreeMap<String, StagePart>,
    /// Median over trials of the sum over stages (process start-up included).
    pub(crate) median_total_s: f64,
    /// That median's interval with its coverage (a bootstrap 95% one from 6
    /// trials, the trials' range with its exact coverage below); absent
    /// with one trial, and in reports from before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) median_total_interval: Option<crate::stats::Interval>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct TrialReport {
    /// The run directory, relative to the campaign's.
    pub(crate) run: String,
    pub(crate) run_wall_s: f64,
    pub(crate) stages: BTreeMap<String, StagePart>,
    /// Sum over stages of wall and start-up.
    pub(crate) total_s: f64,
    pub(crate) state_sha256: String,
    /// Interrupted steps: the run that was killed.
    pub(crate) killed: Option<Killed>,
    /// Whether the state left equals the reference (the first cold trial's).
    pub(crate) identical_to_cold: bool,
    /// A pipeline's: files in which the state left differs from the
    /// reference, and how many of them the cold runs do not differ in
    /// among themselves (what the resume changed beyond the baseline).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) differing_files: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) beyond_baseline: Option<u64>,
    /// The train stage's checkpoint size and mean write time, when it wrote one.
    pub(crate) checkpoint_bytes: Option<f64>,
    pub(crate) checkpoint_write_s: Option<f64>,
    /// When the run began and ended, in seconds from the campaign's start
    /// (the coordinator's monotonic clock). Absent in older reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) span_s: Option<[f64; 2]>,
    /// Per stage, its spans' calls in the order they began (names called
    /// at most `MAX_CALLS` times in the stage): what a resume is read
    /// against call by call.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) calls: BTreeMap<String, crate::rundir::spans::Calls>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Killed {
    pub(crate) run: String,
    pub(crate) stage: String,
    /// The killed run's worker processes' walls (spawn to reap) summed,
    /// the killed one's up to its reap: measured as a trial's `total_s` is.
    pub(crate) wall_s: f64,
    /// When the killed run began and ended, from the campaign's start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) span_s: Option<[f64; 2]>,
    /// The calls that ended before the kill, per stage (the stages that
    /// completed, and the killed one up to the kill): what the resume
    /// repeats, if it runs them again.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) calls: BTreeMap<String, crate::rundir::spans::Calls>,
}

/// One stage's seconds by component (see [`COMPONENTS`]) and its order.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct StagePart {
    pub(crate) order: usize,
    pub(crate) wall_s: f64,
    pub(crate) components: BTreeMap<String, f64>,
    /// A pipeline stage a resume skipped (its completion marker existed).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) skipped: bool,
    /// Inner spans the stage reported (`STAGEBENCH_SPANS`), by name: each
    /// one's self seconds on the main thread, so they add up to the time
    /// in spans and never count a second twice.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) spans: BTreeMap<String, f64>,
    /// Seconds in spans beside the main thread (other threads, forked
    /// children, generators): no part of the stage's wall.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) concurrent_s: f64,
    /// What the stage ran on (its record's `runtime`: thread settings, the
    /// commit, the Python helper's interpreter and libraries); in the
    /// medians, the first trial's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) runtime: Option<crate::rundir::report::RuntimeRecord>,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

impl TrialReport {
    /// Whether its state reproduces a cold run: identical, or for a
    /// pipeline different only where cold runs differ among themselves.
    pub(crate) fn reproduces_cold(&self) -> bool {
        self.identical_to_cold || self.beyond_baseline == Some(0)
    }
}

impl StagePart {
    pub(crate) fn total(&self) -> f64 {
        self.wall_s + self.components.get("startup").copied().unwrap_or(0.0)
    }
}

/// A run's stages by component: the worker's `component:*_s` figures,
/// process start-up (the process's wait4 wall minus the stage's wall, when
/// the stage had its process alone), and the rest as `other`. The source
/// verification is integrity checking through and through.
pub(crate) fn stage_parts(report: &Report) -> BTreeMap<String, StagePart> {
    report
        .stages
        .iter()
        .map(|(key, st)| {
            let mut components: BTreeMap<String, f64> = st
                .figures
                .iter()
                .filter_map(|(k, v)| {
                    let name = k.strip_prefix("component:")?.strip_suffix("_s")?;
                    Some((name.to_string(), *v))
                })
                .collect();
            if key == crate::modes::preparation::VERIFY_BEFORE {
                components.insert("integrity".into(), st.wall_s);
            } else if components.is_empty() {
                // Anyone's command: all of it is the stage's own work.
                components.insert("work".into(), st.wall_s);
            }
            let spans = st
                .spans
                .iter()
                .map(|(name, x)| (name.clone(), x.self_s - x.concurrent_s))
                .collect();
            let concurrent_s = st.span_totals.as_ref().map_or(0.0, |t| t.concurrent_s);
            let inside: f64 = components.values().sum();
            components.insert("other".into(), (st.wall_s - inside).max(0.0));
            let alone = report.workers.iter().find(|w| w.stages == [key.clone()]);
            let startup = alone.map(|w| (w.wall_s - st.wall_s).max(0.0)).unwrap_or(0.0);
            components.insert("startup".into(), startup);
            let part = StagePart {
                order: st.order,
                wall_s: st.wall_s,
                components,
                skipped: false,
                spans,
                concurrent_s,
                runtime: st.runtime.clone(),
            };
            (key.clone(), part)
        })
        .collect()
}

/// A run's calls per stage, from its workers' job slices (a command's
/// spans, placed from the run's start): see [`crate::rundir::spans::Calls`].
pub(crate) fn stage_calls(report: &Report) -> BTreeMap<String, crate::rundir::spans::Calls> {
    let mut out = BTreeMap::new();
    for job in report.workers.iter().flat_map(|w| &w.jobs) {
        let calls = crate::rundir::spans::calls(
            job.slices
                .iter()
                .map(|s| (s.name.as_str(), s.start_s - job.start_s, s.end_s - s.start_s)),
        );
        if !calls.is_empty() {
            out.insert(job.stage.clone(), calls);
        }
    }
    out
}

/// Per stage and component, the median over the trials.
pub(crate) fn medians(trials: &[TrialReport]) -> BTreeMap<String, StagePart> {
    let mut out = BTreeMap::new();
    let Some(first) = trials.first() else { return out };
    for (key, part) in &first.stages {
        let runtime = trials.iter().find_map(|t| t.stages.get(key)?.runtime.clone());
        let mut m = StagePart { order: part.order, runtime, ..Default::default() };
        let walls: Vec<f64> =
            trials.iter().filter_map(|t| t.stages.get(key)).map(|p| p.wall_s).collect();
        m.wall_s = median(&walls);
        for c in COMPONENTS {
            let v: Vec<f64> = trials
                .iter()
                .filter_map(|t| t.stages.get(key))
                .map(|p| p.components.get(c).copied().unwrap_or(0.0))
                .collect();
            m.components.insert(c.to_string(), median(&v));
        }
        m.skipped = part.skipped;
        for span in part.spans.keys() {
            let v: Vec<f64> =
                trials.iter().filter_map(|t| t.stages.get(key)?.spans.get(span).copied()).collect();
            m.spans.insert(span.clone(), median(&v));
        }
        {
            let v: Vec<f64> =
                trials.iter().filter_map(|t| t.stages.get(key)).map(|p| p.concurrent_s).collect();
            m.concurrent_s = median(&v);
        }
        out.insert(key.clone(), m);
    }
    out
}

/// Seconds of component `c` summed over a step's median stages.
pub(crate) fn component_total(step: &StepReport, c: &str) -> f64 {
    step.median.values().map(|p| p.components.get(c).copied().unwrap_or(0.0)).sum()
}

/// A step's four largest components (but `except`), largest first, each
/// with its seconds and share of the step, named by `name`.
pub(crate) fn largest_components(
    step: &StepReport,
    except: &[&str],
    name: impl Fn(&str) -> &'static str,
) -> String {
    let r = step.median_total_s;
    let mut parts: Vec<(&str, f64)> = COMPONENTS
        .iter()
        .filter(|c| !except.contains(c))
        .map(|c| (*c, component_total(step, c)))
        .filter(|(_, v)| *v > 0.0)
        .collect();
    parts.sort_by(|a, b| b.1.total_cmp(&a.1));
    let listed: Vec<String> = parts
        .iter()
        .take(4)
        .map(|(k, v)| format!("{} {} ({})", name(k), duration(*v), pct(*v, r)))
        .collect();
    listed.join(", ")
}

pub(crate) fn pct(part: f64, whole: f64) -> String {
    if whole > 0.0 { format!("{:.0}%", 100.0 * part / whole) } else { "-".into() }
}

/// The judgment's opening when trials failed: per step, how many of its
/// trials and how (the first failure's words), and the steps not run.
pub(crate) fn failures(failed: &[FailedTrial], not_run: &[String], trials: u32) -> Vec<String> {
    let mut out = Vec::new();
    let mut steps: Vec<&str> = Vec::new();
    for f in failed {
        if !steps.contains(&f.step.as_str()) {
            steps.push(&f.step);
        }
    }
    for step in steps {
        let of: Vec<&FailedTrial> = failed.iter().filter(|f| f.step == step).collect();
        let first = of[0];
        let what = match first.kind.as_str() {
            "cold" => format!("A cold run ({step})"),
            "resume" => format!("Resuming ({step})"),
            _ => format!(
                "Resuming after an interruption at {} ({step})",
                first.kill_at.as_deref().unwrap_or("?")
            ),
        };
        let attempt = match of.iter().all(|f| f.killed_attempt) {
            true => ": the run to be interrupted itself failed",
            false => "",
        };
        let mut how: Vec<String> = Vec::new();
        for f in &of {
            let said = format!(
                "{}{}",
                f.stage.as_deref().map(|s| format!("stage {s}: ")).unwrap_or_default(),
                f.what()
            );
            if !how.contains(&said) {
                how.push(said);
            }
        }
        let after = first
            .last_span
            .as_deref()
            .map(|s| format!(", after its last finished span {s}"))
            .unwrap_or_default();
        out.push(format!(
            "{what} FAILED in {} of {trials} trials{attempt} ({}{after}); its measurements are left out, every other trial's kept, and failure.json in {} says why.",
            of.len(),
            how.join("; "),
            first.run
        ));
    }
    for step in not_run {
        out.push(format!("Not run: {step}."));
    }
    out
}

/// The judgment: a few plain sentences, every number from the report.
pub(crate) fn judgment(steps: &[StepReport], epochs: u32) -> Vec<String> {
    let mut out = Vec::new();
    let Some(cold) = steps.iter().find(|s| s.kind == "cold") else { return out };
    let c = cold.median_total_s;
    out.push(format!(
        "A cold run (empty state) took {} (median of {} fresh-process runs, process start-up included).",
        duration(c),
        cold.trials.len()
    ));
    // A pipeline's resume has no policy: it stands with the load policy.
    let resume = |p: &str| {
        steps.iter().find(|s| s.kind == "resume" && s.policy.as_deref().unwrap_or("load") == p)
    };
    if let Some(load) = resume("load") {
        let r = load.median_total_s;
        let work = component_total(load, "work");
        out.push(format!(
            "Resuming ({}) took {}: {:.3}× the cold run; {} of it was work still to do, the other {} overhead.",
            load.name,
            duration(r),
            r / c,
            duration(work),
            duration(r - work)
        ));
        let listed = largest_components(load, &[], label);
        out.push(format!("That overhead is mostly {listed}."));
        out.push(resumed_state(load, "state", None));
        if let Some(rec) = resume("recompute") {
            let rr = rec.median_total_s;
            let recomputed = component_total(rec, "recompute");
            out.push(format!(
                "Recomputing the normalizer and the context index instead of loading them made the resume {} ({} of recomputation); loading instead of recomputing saves {} per resume ({} of the recompute resume).",
                duration(rr),
                duration(recomputed),
                duration(rr - r),
                pct(rr - r, rr)
            ));
        }
    }
    for s in steps.iter().filter(|s| s.kind == "interrupted") {
        let identical = s.trials.iter().filter(|t| t.identical_to_cold).count();
        let killed: Vec<f64> =
            s.trials.iter().filter_map(|t| t.killed.as_ref().map(|k| k.wall_s)).collect();
        out.push(format!(
            "Killed with SIGKILL at {} after {} and resumed: the resume took {}, {} of it work still to do or redone; the final artifacts were identical to the cold run's in {identical} of {} trials.",
            s.kill_at.as_deref().unwrap_or("?"),
            duration(median(&killed)),
            duration(s.median_total_s),
            duration(component_total(s, "work")),
            s.trials.len()
        ));
    }
    if let Some(f) = finer_checkpoints(steps, epochs) {
        out.push(f);
    }
    out
}

/// Whether a resume step left the state the cold run left: "identical … in
/// 2 of 2 trials", or, when any trial differs, a sentence that says so
/// first (`what`: "state", "scratch state").
pub(crate) fn resumed_state(step: &StepReport, what: &str, identity: Option<&Identity>) -> String {
    let n = step.trials.len();
    let identical = step.trials.iter().filter(|t| t.identical_to_cold).count();
    let within = step.trials.iter().filter(|t| !t.identical_to_cold && t.reproduces_cold()).count();
    let beyond = n - identical - within;
    let baseline = identity.map_or(0, |i| i.baseline_files);
    let most = step.trials.iter().filter_map(|t| t.beyond_baseline).max().unwrap_or(0);
    match (beyond, within) {
        (0, 0) => format!(
            "The {what} after resuming ({}) was identical to the cold run's in {identical} of {n} trials.",
            step.name
        ),
        (0, _) => format!(
            "The {what} after resuming ({}) was identical to the cold run's in {identical} of {n} trials, and in the other {within} differed only in files the cold runs differ in among themselves ({baseline}): it reproduces a cold run as well as a cold run does.",
            step.name
        ),
        _ => format!(
            "The {what} after resuming ({}) DIFFERED from the cold run's in {beyond} of {n} trials{}: this resume does not reproduce a cold run.",
            step.name,
            match identity {
                Some(i) if i.cold_trials > 1 => format!(
                    ", beyond what cold runs differ in among themselves (up to {most} file(s) more than the {baseline} in which they do)"
                ),
                Some(_) => format!(
                    " (in up to {most} file(s); one cold trial gives no baseline of how cold runs differ among themselves)"
                ),
                None => String::new(),
            }
        ),
    }
}

/// How a pipeline's cold runs compare with each other: the baseline a
/// resume's state is judged against, and what `identity_exclude` left out.
pub(crate) fn cold_identity(i: &Identity) -> String {
    let excluded = match i.exclude.is_empty() {
        true => String::new(),
        false => format!(
            " identity_exclude ({}) left {} file(s) out of the scratch state.",
            i.exclude.join(", "),
            i.excluded_files
        ),
    };
    let compared = match (i.cold_trials, i.cold_identical == i.cold_trials) {
        (0 | 1, _) => "One cold trial: no baseline of how cold runs differ among themselves, so any difference a resume leaves counts.".to_string(),
        (n, true) => format!("Cold runs reproduce each other: the {n} cold trials left the same scratch state."),
        (n, false) => format!(
            "Cold runs differ among themselves: {} of {n} cold trials left a scratch state other than the first's, in {} file(s) (listed in private/identity.txt, never in evidence); a resume is judged on what it changes beyond those.",
            n - i.cold_identical,
            i.baseline_files
        ),
    };
    format!("{compared}{excluded}")
}

/// Would more checkpoints per epoch pay? The time an interruption loses is
/// on average half an epoch; k checkpoints per epoch cut that to 1/(2k) of
/// an epoch and cost k − 1 more checkpoint writes (and files) per epoch.
fn finer_checkpoints(steps: &[StepReport], epochs: u32) -> Option<String> {
    let cold = steps.iter().find(|s| s.kind == "cold")?;
    let t = cold.median.get("train")?;
    let epoch_s = t.components.get("work").copied().unwrap_or(0.0) / f64::from(epochs.max(1));
    let bytes = cold.trials.first()?.checkpoint_bytes?;
    let writes: Vec<f64> = cold.trials.iter().filter_map(|t| t.checkpoint_write_s).collect();
    if writes.is_empty() {
        return None;
    }
    let write_s = median(&writes);
    let k = 4.0;
    let saved = epoch_s / 2.0 - epoch_s / (2.0 * k);
    let cost = (k - 1.0) * write_s;
    let verdict = if cost <= 0.0 {
        "they would pay off at any rate of interruption".to_string()
    } else {
        format!(
            "they pay off as soon as more than one epoch in {:.0} is interrupted; either way the stake is at most {} per interruption",
            (saved / cost).max(1.0),
            duration(saved)
        )
    };
    Some(format!(
        "A checkpoint (weights and Adam moments) is {} and takes {} to write; an epoch takes {}. Four checkpoints per epoch instead of one would add {} of state and {} of writes per epoch and cut the training lost to an interruption from about {} to {}: {verdict}.",
        kib(bytes),
        duration(write_s),
        duration(epoch_s),
        kib(3.0 * bytes),
        duration(cost),
        duration(epoch_s / 2.0),
        duration(epoch_s / (2.0 * k)),
    ))
}

fn kib(bytes: f64) -> String {
    format!("{:.1} KiB", bytes / 1024.0)
}
