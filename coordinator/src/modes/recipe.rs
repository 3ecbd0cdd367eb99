//! `--mode recipe`: the recipe against a state directory (`--state`) that
//! keeps its artifacts across runs: `verify_before`, then `cache_prepare`,
//! `fit_normalizer`, `count_contexts` and `train` (for `--epochs`), each in
//! a fresh worker process (or all in one with `--isolation run`). Each stage
//! takes what the state's completion records prove complete, rebuilds what
//! they do not, and reports its time by component (see the worker's
//! `stages::resumable`). The report adds a digest of the state as the run
//! left it, naming no file, so two runs can be shown to have left the same
//! artifacts.

use super::cold_prep::{self, VERIFY_BEFORE};
use super::{JobNumbers, Phase, PhaseOutcome, stage_from_job};
use crate::error::{RunError, fail};
use crate::plan::{Isolation, RunPlan, StatePlan};
use crate::rundir::report::Report;
use protocol::{Stage, StateInput, StateStep};
use std::path::Path;

/// The phase of `--isolation run` whose one process runs every state stage.
pub const SHARED_PROCESS: &str = "state_stages";

/// The stage keys, in order.
pub fn keys() -> impl Iterator<Item = &'static str> {
    std::iter::once(VERIFY_BEFORE).chain(StateStep::ALL.iter().map(|s| s.name()))
}

pub fn phases(plan: &RunPlan, dataset: &Path, state: &StatePlan) -> Vec<Phase> {
    let mut numbers = JobNumbers::default();
    let verify = cold_prep::verify_phase(&mut numbers, VERIFY_BEFORE, dataset);
    let input = StateInput {
        dataset: dataset.to_string_lossy().into_owned(),
        state: state.dir.to_string_lossy().into_owned(),
        policy: state.policy,
        epochs: state.epochs,
        seed: plan.seed,
    };
    let jobs: Vec<_> = StateStep::ALL
        .iter()
        .map(|step| numbers.job(step.name().into(), Stage::Resumable(*step, input.clone())))
        .collect();
    let phase = Phase::in_turn;
    let mut phases = vec![verify];
    match plan.isolation {
        Isolation::Stage => {
            phases.extend(jobs.into_iter().map(|j| phase(j.key.clone(), vec![j], 1)));
        }
        Isolation::Run => phases.push(phase(SHARED_PROCESS.into(), jobs, usize::MAX)),
    }
    phases
}

pub fn assemble(
    outcomes: &[PhaseOutcome],
    report: &mut Report,
    state: &StatePlan,
) -> Result<(), RunError> {
    for (order, key) in keys().enumerate() {
        let r = outcomes.iter().flat_map(|p| p.results()).find(|r| r.job.key == key).ok_or_else(
            || fail(Some(key.into()), None, "internal", format!("{key} reported nothing")),
        )?;
        report.stages.insert(key.into(), stage_from_job(r, order));
    }
    let digest = ::recipe::state::digest(&state.dir)
        .map_err(|e| fail(None, None, "internal", format!("digesting the state directory: {e}")))?;
    report.state = Some(digest);
    Ok(())
}
