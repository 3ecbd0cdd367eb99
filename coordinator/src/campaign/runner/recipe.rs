//! A recipe step's trial: a state directory (fresh, or the reference the
//! last cold trial left), for an interrupted step first the run killed at
//! its point, then the `--mode recipe` run whose report is the trial's.

use super::{Runner, Trouble};
use crate::campaign::CampaignError;
use crate::campaign::file::{StepKind, StepSpec};
use crate::modes::{RunPlan, recipe as recipe_mode};
use crate::plan::Settings;
use report::campaign::report::{self as records, TrialReport};
use std::path::{Path, PathBuf};

impl Runner<'_> {
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

    /// One trial of a recipe step: a fresh or the reference state, for an
    /// interrupted step first the run killed at its point, then the run
    /// whose report is the trial's.
    pub(super) fn recipe_trial(
        &self,
        step: &StepSpec,
        t: u32,
        run_rel: &str,
        reference: &mut Option<(String, PathBuf)>,
        artifacts: &mut Vec<report::rundir::report::ArtifactRecord>,
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
        let digest = match &summary.report.section {
            report::Section::Recipe(r) => r.state.sha256.clone(),
            _ => String::new(),
        };
        if reference.is_none() {
            *reference = Some((digest.clone(), state.clone()));
        }
        if step.kind == StepKind::Cold {
            // Later resumes use the complete state the last cold trial left.
            reference.as_mut().expect("set above").1 = state.clone();
        }
        let identical = reference.as_ref().is_some_and(|(r, _)| *r == digest);
        let stages = records::stage_parts(&summary.report);
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
}
