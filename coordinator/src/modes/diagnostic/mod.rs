//! `--mode diagnostic`: the planned stages (diagnostic stages with known
//! costs, or a user's commands) as jobs of one phase; one stage record per job.

use super::section::section_basics;
use super::{
    Context, JobNumbers, ModeSection, Phase, PhaseOutcome, Planned, Prepared, Records,
    checked_artifact, stage_from_job,
};
use crate::error::RunError;
use crate::plan::{PlannedStage, Settings};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The mode's name.
pub(crate) const NAME: &str = "diagnostic";

/// The mode, as the registry lists it.
pub(crate) struct Diagnostic;
pub(crate) const MODE: Diagnostic = Diagnostic;

impl super::Mode for Diagnostic {
    fn name(&self) -> &'static str {
        NAME
    }
    fn section(
        &self,
        fields: serde_json::Value,
    ) -> Result<Box<dyn ModeSection>, serde_json::Error> {
        Ok(Box::new(serde_json::from_value::<Section>(fields)?))
    }
}

/// A diagnostic run adds nothing to the report.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Section {}

impl ModeSection for Section {
    section_basics!(NAME);
}

/// What a diagnostic run needs of its own: its stages, in order.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    pub(crate) stages: Vec<PlannedStage>,
}

impl Planned for Plan {
    fn name(&self) -> &'static str {
        NAME
    }

    fn clone_box(&self) -> Box<dyn Planned> {
        Box::new(self.clone())
    }

    fn assemble(
        &self,
        cx: &Context<'_>,
        outcomes: &[PhaseOutcome],
        records: &mut Records,
    ) -> Result<super::Section, RunError> {
        for p in outcomes {
            for r in p.results() {
                records.stages.insert(r.job.key.clone(), stage_from_job(r, r.job.order));
                for (path, claimed) in &r.artifacts {
                    records.artifacts.push(checked_artifact(cx.dir, r, path, claimed, "file")?);
                }
            }
        }
        Ok(super::Section::new(Section {}))
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
