//! `--mode profile`: the recipe stage by stage, each stage in its own fresh
//! worker process, on a frozen dataset: `verify_before`,
//! `cold_feature_cache_prepare`, `warm_fit_normalizer`,
//! `count_eligible_contexts`, `warm_loader_epoch`, `verify_after`. The model
//! stages of the seed's table are not built yet.
//!
//! Stages hand each other what they need only through artifacts in the run
//! directory: the cache (whose manifest the coordinator writes right after
//! preparation, so later stages check every read against it),
//! `normalizer.json`, the context index in the cache and the loader's order
//! digest. Every artifact is re-hashed against what its stage reported, so
//! one altered between stages fails the run.

use super::cold_prep::{self, SERIAL_CACHE, VERIFY_AFTER, VERIFY_BEFORE};
use super::{JobNumbers, Phase, PhaseOutcome, checked_artifact, stage_from_job};
use crate::plan::RunPlan;
use crate::run::{RunError, fail};
use crate::rundir::report::Report;
use protocol::Stage;
use recipe::frozen::Frozen;
use std::path::Path;

pub const PREPARE: &str = "cold_feature_cache_prepare";
pub const FIT: &str = "warm_fit_normalizer";
pub const COUNT: &str = "count_eligible_contexts";
pub const LOADER: &str = "warm_loader_epoch";

pub fn phases(plan: &RunPlan, dataset: &Path, frozen: &Frozen) -> Vec<Phase> {
    let mut numbers = JobNumbers::default();
    let data = dataset.to_string_lossy().into_owned();
    let mut prepare = cold_prep::prepare_phase(
        &mut numbers,
        PREPARE,
        SERIAL_CACHE,
        plan.workers,
        dataset,
        frozen,
    );
    // Later stages check every cache read against this manifest.
    prepare.after = Some(|dir, p, _| cold_prep::side(dir, p, 1).map(|_| ()));
    let one = |numbers: &mut JobNumbers, key: &str, stage: Stage| Phase {
        key: key.into(),
        jobs: vec![numbers.job(key.into(), stage)],
        workers: 1,
        jobs_per_process: 1,
        cache: None,
        progress: crate::progress::Style::LinePerJob,
        // The loader checks what fitting and counting wrote against their hashes.
        after: Some(super::hand_on_artifacts),
    };
    let cache = SERIAL_CACHE.to_string();
    vec![
        cold_prep::verify_phase(&mut numbers, VERIFY_BEFORE, dataset),
        prepare,
        one(
            &mut numbers,
            FIT,
            Stage::FitNormalizer { dataset: data.clone(), cache: cache.clone() },
        ),
        one(
            &mut numbers,
            COUNT,
            Stage::CountContexts { dataset: data.clone(), cache: cache.clone() },
        ),
        one(&mut numbers, LOADER, loader_stage(data, plan.seed)),
        cold_prep::verify_phase(&mut numbers, VERIFY_AFTER, dataset),
    ]
}

/// The recipe stages `--mode trials` can repeat, by their profile names;
/// their dataset is filled in once it is resolved ([`with_dataset`]).
pub const TRIAL_STAGES: [&str; 3] = [FIT, COUNT, LOADER];

/// The stage a recipe stage name stands for, with no dataset yet.
pub fn recipe_stage(name: &str, seed: u64) -> Option<Stage> {
    let cache = SERIAL_CACHE.to_string();
    match name {
        FIT => Some(Stage::FitNormalizer { dataset: String::new(), cache }),
        COUNT => Some(Stage::CountContexts { dataset: String::new(), cache }),
        LOADER => Some(loader_stage(String::new(), seed)),
        _ => None,
    }
}

/// Whether `stage` is one of the recipe's warm stages.
pub fn recipe_name(stage: &Stage) -> bool {
    matches!(
        stage,
        Stage::FitNormalizer { .. } | Stage::CountContexts { .. } | Stage::LoaderEpoch { .. }
    )
}

/// Sets the dataset of a recipe stage; other stages are left alone.
pub fn with_dataset(stage: &mut Stage, dir: &Path) {
    if let Stage::FitNormalizer { dataset, .. }
    | Stage::CountContexts { dataset, .. }
    | Stage::LoaderEpoch { dataset, .. } = stage
    {
        *dataset = dir.to_string_lossy().into_owned();
    }
}

/// A loader epoch over the serial cache; the artifact hashes are filled in
/// by [`super::hand_on_artifacts`] once fitting and counting have run.
pub fn loader_stage(dataset: String, seed: u64) -> Stage {
    Stage::LoaderEpoch {
        dataset,
        cache: SERIAL_CACHE.into(),
        seed,
        normalizer_sha256: String::new(),
        contexts_sha256: String::new(),
    }
}

pub fn assemble(
    dir: &Path,
    outcomes: &[PhaseOutcome],
    report: &mut Report,
) -> Result<(), RunError> {
    let (prep_stage, _, _, manifest, mut counts) =
        cold_prep::side(dir, cold_prep::find(outcomes, PREPARE)?, 1)?;
    report.stages.insert(PREPARE.into(), prep_stage);
    report.artifacts.push(manifest);
    for (order, key) in [(0, VERIFY_BEFORE), (2, FIT), (3, COUNT), (4, LOADER), (5, VERIFY_AFTER)] {
        let p = cold_prep::find(outcomes, key)?;
        let r = p.results().next().ok_or_else(|| {
            fail(Some(key.into()), None, "internal", format!("{key} reported nothing"))
        })?;
        for (path, sha) in &r.artifacts {
            report.artifacts.push(checked_artifact(dir, r, path, sha, "file")?);
        }
        report.stages.insert(key.into(), stage_from_job(r, order));
    }
    let fig = |key: &str, name: &str| {
        report.stages.get(key).and_then(|s| s.figures.get(name)).map(|v| *v as u64)
    };
    counts.eligible_contexts = fig(COUNT, "eligible_contexts");
    counts.batches = fig(COUNT, "batches");
    counts.final_batch = fig(COUNT, "final_batch");
    counts.invalid_event_series = fig(COUNT, "invalid_event_series");
    // The loader delivered exactly what counting found.
    if fig(LOADER, "contexts") != counts.eligible_contexts
        || fig(LOADER, "batches") != counts.batches
        || fig(LOADER, "final_batch") != counts.final_batch
    {
        return Err(fail(
            Some(LOADER.into()),
            None,
            "internal",
            "the loader epoch's contexts or batches differ from the count".into(),
        ));
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
    report.counts = Some(counts);
    Ok(())
}
