//! The campaign's runner: each step's trials, as recipe runs against state
//! directories or as an external pipeline's stages, and what each trial
//! leaves for the report.

mod baseline;
mod pipeline;
mod recipe;

use super::CampaignError;
use super::file::{CampaignFile, StepKind, StepSpec};
use crate::error::RunError;
use crate::modes::RunPlan;
use crate::plan::{Isolation, Settings};
use crate::run;
use baseline::Baseline;
use report::campaign::report::{self as records, FailedTrial, Killed, StepReport};
use report::rundir;
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

/// What the steps left for the report.
pub(super) struct Ran {
    pub(super) steps: Vec<StepReport>,
    /// The first cold trial's state digest ("" when none completed).
    pub(super) reference: String,
    pub(super) artifacts: Vec<report::rundir::report::ArtifactRecord>,
    pub(super) failed: Vec<FailedTrial>,
    pub(super) not_run: Vec<String>,
    /// A pipeline's scratch state against its cold runs' (with a scratch).
    pub(super) identity: Option<records::Identity>,
}

pub(super) struct Runner<'a> {
    /// The campaign's start, which every run's `span_s` counts from.
    pub(super) t0: Instant,
    pub(super) campaign: &'a CampaignFile,
    pub(super) dir: &'a Path,
    pub(super) dataset: PathBuf,
    pub(super) worker_bin: PathBuf,
    /// `sample = RATE`: py-spy for every pipeline stage.
    pub(super) sampling: Option<crate::plan::Sampling>,
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
            sample: self.sampling.clone(),
            campaign_step: Some(format!(
                "{}/{}",
                self.campaign.campaign.name,
                run.strip_prefix("runs/").unwrap_or(run)
            )),
        }
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
                    report::fmt::duration(trial.total_s),
                    match (&trial.killed, trial.identical_to_cold) {
                        (Some(k), true) => format!(
                            "  (killed after {}, resumed: artifacts identical to cold)",
                            report::fmt::duration(k.wall_s)
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
            let median = records::medians(&done);
            let totals: Vec<f64> = done.iter().map(|t| t.total_s).collect();
            steps.push(StepReport {
                name: step.name.clone(),
                kind: step_kind(step).into(),
                policy: (step.kind != StepKind::Cold && self.campaign.pipeline.is_empty())
                    .then(|| step.policy().as_str().to_string()),
                kill_at: step.kill_at.clone(),
                trials: done,
                median,
                median_total_s: report::stats::median(&totals),
                median_total_interval: (totals.len() >= 2)
                    .then(|| report::stats::summarize(&totals, steps.len() as u64).median_interval),
            });
        }
        let reference = reference.map(|(r, _)| r).unwrap_or_default();
        let settings = &self.campaign.campaign;
        let identity =
            settings.scratch.as_ref().map(|_| baseline.identity(&settings.identity_exclude));
        // The paths that differ: for the person, never evidence.
        baseline.write_private(self.dir).map_err(|e| {
            CampaignError::Failed(format!(
                "writing {}/identity.txt: {e}",
                report::campaign::PRIVATE
            ))
        })?;
        Ok(Ran { steps, reference, artifacts, failed, not_run, identity })
    }

    /// The run killed at the step's point; it must end by that kill.
    fn killed_run(
        &self,
        step: &StepSpec,
        t: u32,
        plan: RunPlan,
        run_rel: &str,
        artifacts: &mut Vec<report::rundir::report::ArtifactRecord>,
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
                Ok(Killed { run: run_rel.into(), stage, wall_s, span_s, calls: f.done.calls })
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
                stderr_tail_file: None,
            }))),
        }
    }

    fn artifact(
        &self,
        rel: &str,
        step: &str,
    ) -> Result<report::rundir::report::ArtifactRecord, CampaignError> {
        let (sha256, bytes) = evidence::file_sha256(&self.dir.join(rel))
            .map_err(|e| CampaignError::Failed(format!("{rel}: {e}")))?;
        Ok(report::rundir::report::ArtifactRecord {
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
        let last_span = stage
            .as_ref()
            .and_then(|s| report::campaign::spans::last_finished(f.done.calls.get(s)?));
        let stderr_tail_file = match &f.done.stderr_tail {
            Some(text) => match self.keep_stderr_tail(run, text) {
                Ok(rel) => Some(rel),
                Err(e) => return Trouble::Abort(e),
            },
            None => None,
        };
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
            stderr_tail_file,
        }))
    }

    /// A failed run's stderr tail into `private/stderr/STEP.T.txt` (the
    /// run `runs/STEP/T`), for the person: a program's message may name
    /// paths and data, so it stays outside the evidence.
    fn keep_stderr_tail(&self, run: &str, text: &str) -> Result<String, CampaignError> {
        let name = run.strip_prefix("runs/").unwrap_or(run).replace('/', ".");
        let rel = format!("{}/stderr/{name}.txt", report::campaign::PRIVATE);
        let path = self.dir.join(&rel);
        path.parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&path, text))
            .map_err(|e| CampaignError::Failed(format!("writing {rel}: {e}")))?;
        Ok(rel)
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
