//! `--mode profile`: the recipe stage by stage, each stage in its own fresh
//! worker process, on a frozen dataset: `verify_before`,
//! `cold_feature_cache_prepare`, `warm_fit_normalizer`,
//! `count_eligible_contexts`, `warm_loader_epoch`, the model stages
//! (`resident_model_build`, `resident_compile_and_warmup`,
//! `resident_model_steps`, `end_to_end_model_build`,
//! `end_to_end_fit_epoch`) and `verify_after`.
//!
//! Stages hand each other what they need only through artifacts in the run
//! directory: the cache (whose manifest the coordinator writes right after
//! preparation, so later stages check every read against it),
//! `normalizer.json`, the context index in the cache and the loader's order
//! digest. Every artifact is re-hashed against what its stage reported, so
//! one altered between stages fails the run.

use super::preparation;
use super::stages::{COUNT, FIT, LOADER, PREPARE, recipe_stage_over, trial_stage_names};
use report::modes::input_wait::input_bound;
use report::modes::preparation::{SERIAL_CACHE, VERIFY_AFTER, VERIFY_BEFORE};
use report::modes::profile::{NAME, Section};

use super::{
    Context, JobNumbers, Phase, PhaseOutcome, Planned, Prepared, Records, checked_artifact,
    stage_from_job,
};
use crate::error::{RunError, fail};
use crate::plan::{Isolation, Settings};
use protocol::ModelStep;
use recipe::frozen::Frozen;
use std::collections::BTreeMap;
use std::path::Path;

/// The mode, as the registry lists it.
pub(crate) struct Profile;
pub(crate) const MODE: Profile = Profile;

impl super::Mode for Profile {
    mode_basics!(NAME);
    fn about(&self) -> &'static str {
        "The recipe stage by stage: verify, cold cache preparation, normalizer fit, context counting, a loader epoch, the model stages, verify"
    }
    fn uses(&self) -> &'static [super::Shared] {
        use super::Shared::*;
        &[Seed, Isolation, Data]
    }
    fn resolve(
        &self,
        _: &clap::ArgMatches,
        shared: &super::SharedArgs,
    ) -> Result<Box<dyn Planned>, crate::error::Refusal> {
        Ok(Box::new(Plan { seed: shared.seed.unwrap_or(0) }))
    }
}

/// What a profile needs of its own: the loader's shuffle seed.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    pub(crate) seed: u64,
}

impl Planned for Plan {
    plan_basics!(NAME);

    fn assemble(
        &self,
        cx: &Context<'_>,
        outcomes: &[PhaseOutcome],
        records: &mut Records,
    ) -> Result<super::Section, RunError> {
        assemble(cx.dir, outcomes, records).map(super::Section::from)
    }

    fn prepare(&self, settings: &Settings) -> Result<Prepared, RunError> {
        let (dataset, frozen) = host::dataset::resolve(settings.data.as_deref(), settings.quiet)?;
        let phases = self.phases(settings, &dataset, &frozen);
        let mut parameters = BTreeMap::new();
        parameters.insert("seed".into(), self.seed.into());
        parameters.insert("batch".into(), recipe::loader::BATCH.into());
        parameters.insert("shuffle_buffer".into(), recipe::loader::SHUFFLE_BUFFER.into());
        parameters.insert("context_frames".into(), recipe::targets::CONTEXT_FRAMES.into());
        Ok(Prepared {
            // Each stage declared; the cache preparation stays one entry.
            stages: super::declared(&phases, true),
            phases,
            dataset_fingerprint: Some(frozen.fingerprint),
            parameters,
            locks: Vec::new(),
        })
    }
}

impl Plan {
    fn phases(&self, settings: &Settings, dataset: &Path, frozen: &Frozen) -> Vec<Phase> {
        let mut numbers = JobNumbers::default();
        let mut prepare = preparation::prepare_phase(
            &mut numbers,
            PREPARE,
            SERIAL_CACHE,
            settings.workers,
            dataset,
            frozen,
        );
        // Later stages check every cache read against this manifest.
        prepare.after = Some(|dir, p, _| preparation::side(dir, p, 1).map(|_| ()));
        let verify_before = preparation::verify_phase(&mut numbers, VERIFY_BEFORE, dataset);
        // The stages after the cache, in the seed's order.
        let mut jobs: Vec<_> = trial_stage_names()
            .map(|key| numbers.job(key.into(), recipe_stage_over(key, dataset, self.seed)))
            .collect();
        jobs.extend(preparation::verify_phase(&mut numbers, VERIFY_AFTER, dataset).jobs);
        let phase = |key: String, jobs: Vec<_>, jobs_per_process| Phase {
            // Loader and model stages check what fitting and counting wrote
            // against the hashes the coordinator hands on.
            after: Some(super::hand_on_artifacts),
            after_job: Some(super::hand_on_queued),
            ..Phase::in_turn(key, jobs, jobs_per_process)
        };
        let mut phases = vec![verify_before, prepare];
        match settings.isolation {
            Isolation::Stage => {
                phases.extend(jobs.into_iter().map(|j| phase(j.key.clone(), vec![j], 1)));
            }
            // The coordinator writes the cache's manifest between preparation
            // and the stages that read it, so those share the process after it.
            Isolation::Run => phases.push(phase(SHARED_PROCESS.into(), jobs, usize::MAX)),
        }
        phases
    }
}

/// The phase of `--isolation run` whose one process runs every stage after
/// the cache preparation.
pub(crate) const SHARED_PROCESS: &str = "after_cache_preparation";

fn assemble(
    dir: &Path,
    outcomes: &[PhaseOutcome],
    records: &mut Records,
) -> Result<Section, RunError> {
    let prep = preparation::side(dir, preparation::find(outcomes, PREPARE)?, 1)?;
    let mut counts = prep.counts;
    records.stages.insert(PREPARE.into(), prep.stage);
    records.artifacts.push(prep.artifact);
    let keys = [VERIFY_BEFORE, PREPARE, FIT, COUNT, LOADER]
        .into_iter()
        .chain(ModelStep::ALL.iter().map(|s| s.name()))
        .chain([VERIFY_AFTER]);
    for (order, key) in keys.enumerate().filter(|(_, k)| *k != PREPARE) {
        // By job, whether the stage had a process of its own or shared one.
        let r = outcomes.iter().flat_map(|p| p.results()).find(|r| r.job.key == key).ok_or_else(
            || fail(Some(key.into()), None, "internal", format!("{key} reported nothing")),
        )?;
        for (path, sha) in &r.artifacts {
            records.artifacts.push(checked_artifact(dir, r, path, sha, "file")?);
        }
        records.stages.insert(key.into(), stage_from_job(r, order));
    }
    let fig = |key: &str, name: &str| {
        records.stages.get(key).and_then(|s| s.figures.get(name)).map(|v| *v as u64)
    };
    counts.eligible_contexts = fig(COUNT, "eligible_contexts");
    counts.batches = fig(COUNT, "batches");
    counts.final_batch = fig(COUNT, "final_batch");
    counts.invalid_event_series = fig(COUNT, "invalid_event_series");
    // The loader, alone and under the fit, delivered exactly what counting found.
    for key in [LOADER, ModelStep::FitEpoch.name()] {
        if fig(key, "contexts") != counts.eligible_contexts
            || fig(key, "batches") != counts.batches
            || fig(key, "final_batch") != counts.final_batch
        {
            return Err(fail(
                Some(key.into()),
                None,
                "internal",
                format!("{key}: the epoch's contexts or batches differ from the count"),
            ));
        }
    }
    if fig(FIT, "frames") != Some(counts.valid_frames) {
        return Err(fail(
            Some(FIT.into()),
            None,
            "internal",
            "the normalizer was fitted on a different number of frames than were prepared valid"
                .into(),
        ));
    }
    let fraction = records
        .stages
        .get(ModelStep::FitEpoch.name())
        .and_then(|s| s.figures.get("input_wait_fraction"))
        .copied();
    Ok(Section {
        counts,
        input_wait_fraction: fraction,
        input_bound: fraction.map(|f| input_bound(f).to_string()),
    })
}

#[cfg(test)]
mod tests {
    use report::modes::input_wait::input_bound;

    #[test]
    fn input_wait_is_graded_as_the_tensorflow_profiler_grades_it() {
        for (f, grade) in [
            (0.0, "not input-bound"),
            (0.0499, "not input-bound"),
            (0.05, "moderately input-bound"),
            (0.1999, "moderately input-bound"),
            (0.20, "highly input-bound"),
            (0.9, "highly input-bound"),
        ] {
            assert_eq!(input_bound(f), grade, "{f}");
        }
    }
}
