//! `--mode diagnostic`: the planned stages (diagnostic stages with known
//! costs, or a user's commands) as jobs of one phase; one stage record per job.

use super::{JobNumbers, Phase, PhaseOutcome, Prepared, Records, checked_artifact, stage_from_job};
use crate::error::RunError;
use crate::plan::{PlannedStage, Settings};
use std::collections::BTreeMap;
use std::path::Path;

/// What a diagnostic run needs of its own: its stages, in order.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    pub(crate) stages: Vec<PlannedStage>,
}

impl Plan {
    pub(crate) fn prepare(&self, settings: &Settings) -> Prepared {
        let mut numbers = JobNumbers::default();
        let jobs =
            self.stages.iter().map(|s| numbers.job(s.key.clone(), s.stage.clone())).collect();
        let phases = vec![Phase {
            workers: settings.workers,
            ..Phase::in_turn("diagnostic".into(), jobs, settings.isolation.jobs_per_process())
        }];
        Prepared {
            stages: super::declared(&phases, true),
            phases,
            dataset_fingerprint: None,
            parameters: BTreeMap::new(),
            locks: Vec::new(),
        }
    }
}

pub(crate) fn assemble(
    dir: &Path,
    outcomes: &[PhaseOutcome],
    records: &mut Records,
) -> Result<(), RunError> {
    for p in outcomes {
        for r in p.results() {
            records.stages.insert(r.job.key.clone(), stage_from_job(r, r.job.order));
            for (path, claimed) in &r.artifacts {
                records.artifacts.push(checked_artifact(dir, r, path, claimed, "file")?);
            }
        }
    }
    Ok(())
}
