//! `--mode diagnostic`: the planned stages as jobs of one phase; one stage
//! record per job.

use super::{JobNumbers, Phase, PhaseOutcome, checked_artifact, stage_from_job};
use crate::error::RunError;
use crate::plan::RunPlan;
use crate::rundir::report::Report;
use std::path::Path;

pub fn phases(plan: &RunPlan) -> Vec<Phase> {
    let mut numbers = JobNumbers::default();
    let jobs = plan.stages.iter().map(|s| numbers.job(s.key.clone(), s.stage.clone())).collect();
    vec![Phase {
        key: "diagnostic".into(),
        jobs,
        workers: plan.workers,
        jobs_per_process: plan.isolation.jobs_per_process(),
        cache: None,
        progress: crate::events::Style::LinePerJob,
        after: None,
        after_job: None,
    }]
}

pub fn assemble(
    dir: &Path,
    outcomes: &[PhaseOutcome],
    report: &mut Report,
) -> Result<(), RunError> {
    for p in outcomes {
        for r in p.results() {
            report.stages.insert(r.job.key.clone(), stage_from_job(r, r.job.order));
            for (path, claimed) in &r.artifacts {
                report.artifacts.push(checked_artifact(dir, r, path, claimed, "file")?);
            }
        }
    }
    Ok(())
}
