//! The campaign's runner: each step's trials, as recipe runs against state
//! directories or as an external pipeline's stages, and what each trial
//! leaves for the report.

use super::CampaignError;
use super::file::{CampaignFile, StepKind, StepSpec};
use super::report::{self, FailedTrial, Killed, StepReport, TrialReport};
use crate::error::RunError;
use crate::modes::{RunPlan, diagnostic, recipe as recipe_mode};
use crate::plan::{Isolation, Settings};
use crate::run;
use crate::rundir;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

/// Why a trial gave no measurement.
pub(super) enum Trouble {
    /// Its run failed: a finding, kept beside the measurements.
    Failed(Box<FailedTrial>),
    /// The campaign cannot go on (a signal, an error of its own).
    Abort(CampaignError),
}

impl From<CampaignError> for Trouble {
    fn from(e: CampaignError) -> Self {
        Trouble::Abort(e)
    }
}

/// A pipeline's scratch state compared file by file: the first cold
/// trial's files are the reference, the paths in which later cold trials
/// differ from it the baseline; every differing path goes to
/// `private/identity.txt`, never into evidence.
#[derive(Default)]
pub(super) struct Baseline {
    reference: Option<BTreeMap<String, String>>,
    paths: BTreeSet<String>,
    identity: report::Identity,
    private: Vec<String>,
}

impl Baseline {
    /// A trial's scratch files (`recipe::state::files_all_but`): their
    /// digest once `exclude` left some out, and against the reference the
    /// files that differ and how many of them lie beyond the baseline.
    fn judge(
        &mut self,
        files: Vec<(String, String, u64)>,
        exclude: &[glob::Pattern],
        cold: bool,
        label: &str,
    ) -> (String, u64, u64) {
        let (kept, left): (Vec<_>, Vec<_>) =
            files.into_iter().partition(|(rel, _, _)| !exclude.iter().any(|p| p.matches(rel)));
        let digest = recipe::state::files_sha256(&kept);
        let now: BTreeMap<String, String> = kept.into_iter().map(|(r, s, _)| (r, s)).collect();
        let first = self.reference.is_none();
        if first {
            self.identity.excluded_files = left.len() as u64;
        }
        let reference = self.reference.get_or_insert_with(|| now.clone());
        let differ: BTreeSet<String> = reference
            .keys()
            .chain(now.keys())
            .filter(|p| reference.get(*p) != now.get(*p))
            .cloned()
            .collect();
        if cold {
            self.identity.cold_trials += 1;
            self.identity.cold_identical += u32::from(differ.is_empty());
            self.paths.extend(differ.iter().cloned());
            self.identity.baseline_files = self.paths.len() as u64;
        }
        let beyond = differ.iter().filter(|p| !self.paths.contains(*p)).count() as u64;
        let what = if cold { "differs among cold runs" } else { "differs from the first cold run" };
        self.private.extend(differ.iter().map(|p| format!("{label}\t{what}\t{p}")));
        (digest, differ.len() as u64, beyond)
    }
}

/// What the steps left for the report.
pub(super) struct Ran {
    pub(super) steps: Vec<StepReport>,
    /// The first cold trial's state digest ("" when none completed).
    pub(super) reference: String,
    pub(super) artifacts: Vec<crate::rundir::report::ArtifactRecord>,
    pub(super) failed: Vec<FailedTrial>,
    pub(super) not_run: Vec<String>,
    /// A pipeline's scratch state against its cold runs' (with a scratch).
    pub(super) identity: Option<report::Identity>,
}

pub(super) struct Runner<'a> {
    /// The campaign's start, which every run's `span_s` counts from.
    pub(super) t0: Instant,
    pub(super) campaign: &'a CampaignFile,
    pub(super) dir: &'a Path,
    pub(super) dataset: PathBuf,
    pub(super) worker_bin: PathBuf,
    /// The signal that asked the campaign to stop, or 0.
    pub(super) stop: Arc<AtomicI32>,
}

impl Runner<'_> {
    /// A run, unless the campaign was asked to stop; and when it began
    /// and ended, in seconds from the campaign's start.
    fn execute(
        &self,
        plan: &RunPlan,
    ) -> (Result<run::RunSummary, run::RunFailure>, Option<[f64; 2]>) {
        let since = |t: Instant| t.saturating_duration_since(self.t0).as_secs_f64();
        let began = Instant::now();
        let outcome = match self.stop.load(Ordering::SeqCst) {
            0 => run::execute(plan),
            signal => Err(RunError::Interrupted { signal }.into()),
        };
        (outcome, Some([since(began), since(Instant::now())]))
    }

    /// What every run of the campaign shares: one local worker at a time,
    /// quiet, into `run` below the campaign directory.
    fn settings(&self, run: &str) -> Settings {
        Settings {
            isolation: Isolation::Stage,
            workers: 1,
            connect_timeout: Duration::from_secs(20),
            stage_timeout: self.campaign.campaign.stage_timeout_s.map(Duration::from_secs_f64),
            grace: Duration::from_secs(2),
            worker_bin: self.worker_bin.clone(),
            launcher: crate::launch::Kind::Local,
            listen: None,
            output: Some(self.dir.join(run)),
            data: Some(self.dataset.clone()),
            quiet: true,
            kill_at: None,
            leaks: crate::plan::LeakPolicy::Warn,
            sample_ms: crate::plan::DEFAULT_SAMPLE_MS,
            keras_resident: 0,
            no_provenance: false,
            sources: Default::default(),
            inputs: Vec::new(),
            spans: Vec::new(),
            stage_spans: Default::default(),
            campaign_step: Some(format!(
                "{}/{}",
                self.campaign.campaign.name,
                run.strip_prefix("runs/").unwrap_or(run)
            )),
        }
    }

    /// A `--mode recipe` run of `step` against `state`, killed at the
    /// step's point when `kill`.
    fn plan(&self, state: &Path, step: &StepSpec, run: &str, kill: bool) -> RunPlan {
        let s = &self.campaign.campaign;
        RunPlan {
            settings: Settings {
                kill_at: if kill { step.kill_point() } else { None },
                ..self.settings(run)
            },
            mode: Box::new(recipe_mode::Plan {
                state: state.to_path_buf(),
                policy: step.policy(),
                epochs: s.epochs,
                seed: s.seed,
            }),
        }
    }

    /// A fresh state directory, claimed for the recipe.
    fn state(&self, name: &str) -> Result<PathBuf, CampaignError> {
        recipe::state::claim(&self.dir.join("state").join(name))
            .map_err(|e| CampaignError::Failed(e.to_string()))
    }

    pub(super) fn steps(&self) -> Result<Ran, CampaignError> {
        let mut steps = Vec::new();
        let mut artifacts = Vec::new();
        let mut reference: Option<(String, PathBuf)> = None;
        let (mut failed, mut not_run) = (Vec::new(), Vec::new());
        let mut baseline = Baseline::default();
        // A pipeline resumes in its scratch directory as the last trial
        // left it: complete only when that trial succeeded.
        let mut complete = false;
        let pipeline = !self.campaign.pipeline.is_empty();
        let trials = self.campaign.campaign.trials;
        for step in &self.campaign.steps {
            let ready = match step.kind {
                StepKind::Cold => true,
                StepKind::Resume if pipeline => complete,
                _ => reference.is_some(),
            };
            if !ready {
                not_run.push(format!(
                    "{}: no complete state to start from (the trial before it failed, or no cold trial completed)",
                    step.name
                ));
                continue;
            }
            let mut done = Vec::new();
            for t in 1..=trials {
                let run_rel = format!("runs/{}/{t}", step.name);
                let outcome = if pipeline {
                    let refs = (&mut reference, &mut baseline);
                    self.pipeline_trial(step, t, &run_rel, refs, &mut artifacts)
                } else {
                    self.recipe_trial(step, t, &run_rel, &mut reference, &mut artifacts)
                };
                let trial = match outcome {
                    Ok(trial) => trial,
                    Err(Trouble::Abort(e)) => return Err(e),
                    Err(Trouble::Failed(f)) => {
                        let f = *f;
                        println!(
                            "  {:<20} trial {t}/{trials}: FAILED ({}{}): {}",
                            step.name,
                            f.reason,
                            f.stage.as_deref().map(|s| format!(" in {s}")).unwrap_or_default(),
                            f.what()
                        );
                        let failure = format!("{}/{}", f.run, rundir::FAILURE);
                        let ended = match self.dir.join(&failure).is_file() {
                            true => failure,
                            false => format!("{}/{}", f.run, rundir::REPORT),
                        };
                        if self.dir.join(&ended).is_file() {
                            artifacts.push(self.artifact(&ended, &step.name)?);
                        }
                        failed.push(f);
                        complete = false;
                        continue;
                    }
                };
                complete = true;
                if !trial.run.is_empty() {
                    let report = format!("{run_rel}/{}", rundir::REPORT);
                    artifacts.push(self.artifact(&report, &step.name)?);
                }
                println!(
                    "  {:<20} trial {t}/{trials}: {:>10}{}",
                    step.name,
                    crate::fmt::duration(trial.total_s),
                    match (&trial.killed, trial.identical_to_cold) {
                        (Some(k), true) => format!(
                            "  (killed after {}, resumed: artifacts identical to cold)",
                            crate::fmt::duration(k.wall_s)
                        ),
                        (Some(_), false) =>
                            "  (killed, resumed: artifacts DIFFER from cold)".into(),
                        _ => String::new(),
                    }
                );
                done.push(trial);
            }
            if done.is_empty() {
                continue;
            }
            let median = report::medians(&done);
            let totals: Vec<f64> = done.iter().map(|t| t.total_s).collect();
            steps.push(StepReport {
                name: step.name.clone(),
                kind: match step.kind {
                    StepKind::Cold => "cold",
                    StepKind::Resume => "resume",
                    StepKind::Interrupted => "interrupted",
                }
                .into(),
                policy: (step.kind != StepKind::Cold && self.campaign.pipeline.is_empty())
                    .then(|| step.policy().as_str().to_string()),
                kill_at: step.kill_at.clone(),
                trials: done,
                median,
                median_total_s: crate::stats::median(&totals),
                median_total_interval: (totals.len() >= 2)
                    .then(|| crate::stats::summarize(&totals, steps.len() as u64).median_interval),
            });
        }
        let reference = reference.map(|(r, _)| r).unwrap_or_default();
        let identity = self.campaign.campaign.scratch.as_ref().map(|_| {
            let mut i = baseline.identity.clone();
            i.exclude = self.campaign.campaign.identity_exclude.clone();
            i
        });
        if !baseline.private.is_empty() {
            // The paths that differ: for the person, never evidence.
            let private = self.dir.join(super::PRIVATE);
            std::fs::create_dir_all(&private)
                .and_then(|()| {
                    let mut text = baseline.private.join("\n");
                    text.push('\n');
                    std::fs::write(private.join("identity.txt"), text)
                })
                .map_err(|e| {
                    CampaignError::Failed(format!("writing {}/identity.txt: {e}", super::PRIVATE))
                })?;
        }
        Ok(Ran { steps, reference, artifacts, failed, not_run, identity })
    }

    /// One trial of a recipe step: a fresh or the reference state, for an
    /// interrupted step first the run killed at its point, then the run
    /// whose report is the trial's.
    fn recipe_trial(
        &self,
        step: &StepSpec,
        t: u32,
        run_rel: &str,
        reference: &mut Option<(String, PathBuf)>,
        artifacts: &mut Vec<crate::rundir::report::ArtifactRecord>,
    ) -> Result<TrialReport, Trouble> {
        let (state, killed) = match step.kind {
            StepKind::Cold => (self.state(&format!("{}-{t}", step.name))?, None),
            StepKind::Resume => {
                let (_, dir) = reference.as_ref().expect("checked: a cold step comes first");
                (dir.clone(), None)
            }
            StepKind::Interrupted => {
                let state = self.state(&format!("{}-{t}", step.name))?;
                let killed_rel = format!("{run_rel}-killed");
                let plan = self.plan(&state, step, &killed_rel, true);
                let killed = self.killed_run(step, t, plan, &killed_rel, artifacts)?;
                (state, Some(killed))
            }
        };
        let plan = self.plan(&state, step, run_rel, false);
        let (outcome, span_s) = self.execute(&plan);
        let summary = outcome.map_err(|f| self.failed(step, t, run_rel, false, f))?;
        let digest = summary
            .report
            .section
            .get::<recipe_mode::Section>()
            .map(|r| r.state.sha256.clone())
            .unwrap_or_default();
        if reference.is_none() {
            *reference = Some((digest.clone(), state.clone()));
        }
        if step.kind == StepKind::Cold {
            // Later resumes use the complete state the last cold trial left.
            reference.as_mut().expect("set above").1 = state.clone();
        }
        let identical = reference.as_ref().is_some_and(|(r, _)| *r == digest);
        let stages = report::stage_parts(&summary.report);
        let train = summary.report.stages.get("train");
        let fig = |n: &str| train.and_then(|s| s.figures.get(n)).copied();
        Ok(TrialReport {
            run: run_rel.to_string(),
            run_wall_s: summary.report.run_wall_s,
            total_s: stages.values().map(|p| p.total()).sum(),
            stages,
            state_sha256: digest,
            killed,
            identical_to_cold: identical,
            differing_files: None,
            beyond_baseline: None,
            checkpoint_bytes: fig("checkpoint_bytes"),
            checkpoint_write_s: fig("checkpoint_write_s"),
            span_s,
            calls: Default::default(),
        })
    }

    /// One trial of an external pipeline: a cold step resets the declared
    /// paths and runs every stage; a resume skips the stages whose
    /// completion marker exists; an interrupted step resets, runs the
    /// pipeline until its kill point (the stage's whole tree is killed
    /// with SIGKILL there), then resumes. Each stage runs under its own
    /// worker, measured with its process tree; the scratch directory's
    /// digest stands for the state.
    fn pipeline_trial(
        &self,
        step: &StepSpec,
        t: u32,
        run_rel: &str,
        (reference, baseline): (&mut Option<(String, PathBuf)>, &mut Baseline),
        artifacts: &mut Vec<crate::rundir::report::ArtifactRecord>,
    ) -> Result<TrialReport, Trouble> {
        let fail =
            |what: String| CampaignError::Failed(format!("step '{}' trial {t}: {what}", step.name));
        let pipeline = &self.campaign.pipeline;
        if step.kind != StepKind::Resume {
            for path in pipeline.iter().flat_map(|s| &s.reset) {
                let removed = match std::fs::symlink_metadata(path) {
                    Ok(m) if m.is_dir() => std::fs::remove_dir_all(path),
                    Ok(_) => std::fs::remove_file(path),
                    Err(_) => Ok(()),
                };
                removed.map_err(|e| fail(format!("resetting a declared path: {e}")))?;
            }
        }
        let killed = match step.kind {
            StepKind::Interrupted => {
                let killed_rel = format!("{run_rel}-killed");
                let (plan, _) = self.pipeline_plan(false, &killed_rel, step.kill_point());
                Some(self.killed_run(step, t, plan, &killed_rel, artifacts)?)
            }
            _ => None,
        };
        let (plan, skipped) = self.pipeline_plan(step.kind != StepKind::Cold, run_rel, None);
        let (outcome, span_s) = self.execute(&plan);
        let summary = outcome.map_err(|f| self.failed(step, t, run_rel, false, f))?;
        let mut parts = report::stage_parts(&summary.report);
        let calls = report::stage_calls(&summary.report);
        // A run's stages are numbered in its own plan, which leaves out the
        // skipped ones: each keeps its place in the pipeline instead.
        for (name, part) in parts.iter_mut() {
            if let Some(order) = self.campaign.pipeline.iter().position(|st| st.name == *name) {
                part.order = order;
            }
        }
        let (run_wall_s, run) = (summary.report.run_wall_s, run_rel.to_string());
        for (name, part) in skipped {
            parts.insert(name, part);
        }
        super::spans::apply_roles(&mut parts, self.campaign);
        let cold = step.kind == StepKind::Cold;
        let (digest, differing, beyond) = match &self.campaign.campaign.scratch {
            Some(dir) => {
                let files = recipe::state::files_all_but(dir, &[crate::dirlock::LOCK_FILE])
                    .map_err(|e| fail(format!("digesting the scratch directory: {e}")))?;
                let label = format!("{} {t}", step.name);
                let excluded = self.campaign.campaign.excluded();
                let (d, n, b) = baseline.judge(files, &excluded, cold, &label);
                (d, Some(n), (!cold).then_some(b))
            }
            None => (String::new(), None, None),
        };
        if reference.is_none() {
            *reference = Some((digest.clone(), PathBuf::new()));
        }
        let identical = reference.as_ref().is_some_and(|(r, _)| *r == digest);
        Ok(TrialReport {
            run,
            run_wall_s,
            total_s: parts.values().map(|p| p.total()).sum(),
            stages: parts,
            state_sha256: digest,
            killed,
            identical_to_cold: identical,
            differing_files: differing,
            beyond_baseline: beyond,
            checkpoint_bytes: None,
            checkpoint_write_s: None,
            span_s,
            calls,
        })
    }

    /// The run of the pipeline's stages and the stages skipped because
    /// `skip_complete` and their marker exists; `kill`: where to kill it.
    fn pipeline_plan(
        &self,
        skip_complete: bool,
        run_rel: &str,
        kill: Option<crate::interrupt::KillAt>,
    ) -> (RunPlan, Vec<(String, report::StagePart)>) {
        let pipeline = &self.campaign.pipeline;
        let mut skipped = Vec::new();
        let mut stages = Vec::new();
        for (order, st) in pipeline.iter().enumerate() {
            let started = Instant::now();
            let complete = skip_complete && st.marker.as_ref().is_some_and(|m| m.exists());
            if complete {
                // The check is all a skipped stage costs: its wall.
                let checked = started.elapsed().as_secs_f64();
                let mut part = report::StagePart { order, wall_s: checked, ..Default::default() };
                part.components.insert("record_check".into(), checked);
                part.skipped = true;
                skipped.push((st.name.clone(), part));
            } else {
                stages.push(protocol::Stage::Exec {
                    name: st.name.clone(),
                    argv: st.argv.clone(),
                    cwd: st
                        .cwd
                        .as_deref()
                        .unwrap_or(Path::new("."))
                        .to_string_lossy()
                        .into_owned()
                        .into(),
                    env: st.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                });
            }
        }
        // Every stage complete still makes a run (of no stage, no process):
        // a real, verifiable record that the resume had nothing to do.
        let s = &self.campaign.campaign;
        let timeout =
            pipeline.iter().filter_map(|st| st.timeout_s).chain(s.stage_timeout_s).reduce(f64::max);
        let stage_spans = pipeline
            .iter()
            .map(|st| (st.name.clone(), st.span_targets()))
            .filter(|(_, t)| !t.is_empty())
            .collect();
        let plan = RunPlan {
            settings: Settings {
                stage_timeout: timeout.map(Duration::from_secs_f64),
                data: None,
                kill_at: kill,
                spans: s.span_targets(),
                stage_spans,
                ..self.settings(run_rel)
            },
            mode: Box::new(diagnostic::Plan { stages: crate::plan::keyed(stages) }),
        };
        (plan, skipped)
    }

    /// The run killed at the step's point; it must end by that kill.
    fn killed_run(
        &self,
        step: &StepSpec,
        t: u32,
        plan: RunPlan,
        run_rel: &str,
        artifacts: &mut Vec<crate::rundir::report::ArtifactRecord>,
    ) -> Result<Killed, Trouble> {
        let (outcome, span_s) = self.execute(&plan);
        let elapsed = span_s.map_or(0.0, |[a, b]| b - a);
        match outcome {
            Err(f) if matches!(f.error, RunError::Failed { reason: "killed_at_point", .. }) => {
                // Measured as a cold trial's total is: its processes' walls.
                let wall_s = f.processes_wall_s.unwrap_or(elapsed);
                artifacts
                    .push(self.artifact(&format!("{run_rel}/{}", rundir::FAILURE), &step.name)?);
                let stage = step.kill_point().map(|k| k.stage).unwrap_or_default();
                Ok(Killed { run: run_rel.into(), stage, wall_s, span_s, calls: f.done.0 })
            }
            Err(f) => Err(self.failed(step, t, run_rel, true, f)),
            Ok(_) => Err(Trouble::Failed(Box::new(FailedTrial {
                step: step.name.clone(),
                kind: step_kind(step).into(),
                trial: t,
                run: run_rel.into(),
                killed_attempt: true,
                kill_at: step.kill_at.clone(),
                reason: "kill_point_not_reached".into(),
                stage: step.kill_point().map(|k| k.stage),
                message: format!(
                    "the run ended before reaching its kill point {}",
                    step.kill_at.as_deref().unwrap_or("?")
                ),
                last_span: None,
            }))),
        }
    }

    fn artifact(
        &self,
        rel: &str,
        step: &str,
    ) -> Result<crate::rundir::report::ArtifactRecord, CampaignError> {
        let (sha256, bytes) = evidence::file_sha256(&self.dir.join(rel))
            .map_err(|e| CampaignError::Failed(format!("{rel}: {e}")))?;
        Ok(crate::rundir::report::ArtifactRecord {
            path: rel.into(),
            sha256,
            bytes,
            stage: step.into(),
            kind: "run".into(),
        })
    }

    /// A run of a trial that failed: a finding (a signal stops the
    /// campaign instead).
    fn failed(
        &self,
        step: &StepSpec,
        trial: u32,
        run: &str,
        killed_attempt: bool,
        f: run::RunFailure,
    ) -> Trouble {
        if let RunError::Interrupted { signal } = f.error {
            return Trouble::Abort(CampaignError::Interrupted(signal));
        }
        let (stage, _, reason) = f.error.recorded_as();
        let last_span = stage.as_ref().and_then(|s| super::spans::last_finished(f.done.0.get(s)?));
        Trouble::Failed(Box::new(FailedTrial {
            step: step.name.clone(),
            kind: step_kind(step).into(),
            trial,
            run: run.into(),
            killed_attempt,
            kill_at: step.kill_at.clone(),
            reason: reason.into(),
            stage,
            message: f.error.to_string(),
            last_span,
        }))
    }
}

/// A step's kind as the report spells it.
fn step_kind(step: &StepSpec) -> &'static str {
    match step.kind {
        StepKind::Cold => "cold",
        StepKind::Resume => "resume",
        StepKind::Interrupted => "interrupted",
    }
}
