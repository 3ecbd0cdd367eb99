//! `--mode diagnostic`: the planned stages (diagnostic stages with known
//! costs, or a user's commands) as jobs of one phase; one stage record per job.

use super::stages::{self, Other};
use super::{
    Context, JobNumbers, Phase, PhaseOutcome, Planned, Prepared, Records, checked_artifact,
    stage_from_job,
};
use super::{Shared, SharedArgs};
use crate::error::{Refusal, RunError};
use crate::plan::{PlannedStage, Settings};
use report::modes::diagnostic::{NAME, Section};
use std::collections::BTreeMap;

/// The mode, as the registry lists it.
pub(crate) struct Diagnostic;
pub(crate) const MODE: Diagnostic = Diagnostic;

impl super::Mode for Diagnostic {
    mode_basics!(NAME);
    fn about(&self) -> &'static str {
        "Diagnostic stages with known costs (noop, sleep, spin, alloc, write, fail, crash), or your --command stages, each measured once"
    }
    fn uses(&self) -> &'static [Shared] {
        &[Shared::Stages, Shared::Isolation, Shared::KillAt, Shared::Spans, Shared::Inputs]
    }
    fn resolve(
        &self,
        _: &clap::ArgMatches,
        shared: &SharedArgs,
    ) -> Result<Box<dyn Planned>, Refusal> {
        let stages = stages::planned(shared, 0, |other| match other {
            Other::Recipe(s, _) => Err(Refusal(format!(
                "--stage {s}: recipe stages repeat in {} (the recipe's own modes run them all once)",
                Shared::RecipeStage.readers()
            ))),
            Other::Unknown(s, e) => Err(Refusal(format!(
                "--stage {s}: {e}; the recipe's stages ({}) repeat in {}",
                stages::recipe_names(),
                Shared::RecipeStage.readers()
            ))),
        })?;
        if let Some(k) = &shared.kill_at {
            let known: Vec<String> = stages
                .iter()
                .filter(|s| stages::is_command(&s.stage))
                .map(|s| s.key.clone())
                .collect();
            if known.is_empty() {
                return Err(Refusal(format!(
                    "--kill-at {k}: no stage of this run can be killed at a point (--mode {NAME} kills --command stages only)"
                )));
            }
            stages::kill_point(k, &known, &stages)?;
        }
        Ok(Box::new(Plan { stages }))
    }
}

/// What a diagnostic run needs of its own: its stages, in order.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    pub(crate) stages: Vec<PlannedStage>,
}

impl Planned for Plan {
    plan_basics!(NAME);

    fn takes_spans(&self) -> bool {
        stages::any_command(&self.stages)
    }

    fn assemble(
        &self,
        cx: &Context<'_>,
        outcomes: &[PhaseOutcome],
        records: &mut Records,
    ) -> Result<super::Section, RunError> {
        for p in outcomes {
            for r in p.results() {
                let mut record = stage_from_job(r, r.job.order);
                super::records::sampled(cx, &mut record, &[r], r.job.order as u64)?;
                records.stages.insert(r.job.key.clone(), record);
                for (path, claimed) in &r.artifacts {
                    records.artifacts.push(checked_artifact(cx.dir, r, path, claimed, "file")?);
                }
            }
        }
        Ok(super::Section::from(Section {}))
    }

    fn prepare(&self, settings: &Settings) -> Result<Prepared, RunError> {
        let mut numbers = JobNumbers::default();
        let jobs =
            self.stages.iter().map(|s| numbers.job(s.key.clone(), s.stage.clone())).collect();
        let phases = vec![Phase {
            workers: settings.workers,
            ..Phase::in_turn(NAME.into(), jobs, settings.isolation.jobs_per_process())
        }];
        Ok(Prepared {
            stages: super::declared(&phases, true),
            phases,
            dataset_fingerprint: None,
            parameters: BTreeMap::new(),
            locks: Vec::new(),
        })
    }
}
