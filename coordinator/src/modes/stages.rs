//! `--stage`, `--command` and `--name` as planned stages, and the recipe's
//! stages by name: what the modes that run stages share (diagnostic and
//! trials take a list; trials and profile run the recipe's). Each says itself
//! what it makes of a recipe stage and how it names an unknown one.

use super::SharedArgs;
use crate::error::Refusal;
use crate::plan::{self, PlannedStage};
use protocol::{EpochInput, LocalPath, ModelStep, Stage, StageParseError};
use report::modes::preparation::SERIAL_CACHE;
use std::path::Path;

/// A `--stage` that is not a diagnostic stage: a recipe stage (its
/// spelling), or a spelling nothing knows.
pub(crate) enum Other<'a> {
    Recipe(&'a str, Stage),
    Unknown(&'a str, StageParseError),
}

/// The run's stages in order: `--stage`s (the defaults when neither
/// `--stage` nor `--command` is given), then each `--command` with its
/// `--name`. `other` decides a stage that is not a diagnostic one: the
/// stage it stands for, or the refusal's text.
pub(crate) fn planned(
    shared: &SharedArgs,
    seed: u64,
    other: impl Fn(Other<'_>) -> Result<Stage, Refusal>,
) -> Result<Vec<PlannedStage>, Refusal> {
    if shared.names.len() > shared.commands.len() {
        return Err(Refusal(format!(
            "{} --name given for {} --command",
            shared.names.len(),
            shared.commands.len()
        )));
    }
    let spellings: Vec<String> = if shared.stages.is_empty() && shared.commands.is_empty() {
        plan::DEFAULT_DIAGNOSTIC_STAGES.iter().map(|s| s.to_string()).collect()
    } else {
        shared.stages.clone()
    };
    let mut stages = spellings
        .iter()
        .map(|s| match recipe_stage(s, seed) {
            Some(stage) => other(Other::Recipe(s, stage)),
            None => s.parse().or_else(|e: StageParseError| match e {
                StageParseError::Unknown(_) => other(Other::Unknown(s, e)),
                _ => Err(Refusal(format!("--stage {s}: {e}"))),
            }),
        })
        .collect::<Result<Vec<_>, _>>()?;
    for (i, line) in shared.commands.iter().enumerate() {
        if line.trim().is_empty() {
            return Err(Refusal("--command needs a command line".into()));
        }
        let name = shared.names.get(i).cloned().unwrap_or_else(|| "command".into());
        if !plan::is_label(&name) {
            return Err(Refusal(format!(
                "--name {name:?} must be 1-64 of A-Z a-z 0-9 _ and - (it names the stage in tables, plots and traces)"
            )));
        }
        stages.push(Stage::Command { name, line: line.clone() });
    }
    Ok(plan::keyed(stages))
}

/// The recipe's stages a `--stage` may name, for a refusal's text.
pub(crate) fn recipe_names() -> String {
    trial_stage_names().collect::<Vec<_>>().join(", ")
}

/// Whether any of `stages` is a `--command` (whose Python `--span` reaches).
pub(crate) fn any_command(stages: &[PlannedStage]) -> bool {
    stages.iter().any(|s| matches!(s.stage, Stage::Command { .. } | Stage::Exec { .. }))
}

/// Whether a stage's worker can be killed at a point: a command's follows
/// its spans file and its clock.
pub(crate) fn is_command(stage: &Stage) -> bool {
    matches!(stage, Stage::Command { .. } | Stage::Exec { .. })
}

/// `--kill-at`'s stage checked against the stages that can be killed at a
/// point (`known`, not empty), and a span or clock point against its stage.
pub(crate) fn kill_point(
    k: &crate::kill_points::KillAt,
    known: &[String],
    stages: &[PlannedStage],
) -> Result<(), Refusal> {
    if !known.contains(&k.stage) {
        return Err(Refusal(format!(
            "--kill-at {}: no stage of this run is called that (stages that can be killed: {})",
            k.stage,
            known.join(", ")
        )));
    }
    let command = stages.iter().find(|s| s.key == k.stage).is_some_and(|s| is_command(&s.stage));
    if k.needs_a_command() && !command {
        return Err(Refusal(format!(
            "--kill-at {k}: span: and after: points apply to a command stage"
        )));
    }
    Ok(())
}

// The recipe's stages, as the modes that run them name them.

/// The recipe's cache preparation, by its profile name.
pub(crate) const PREPARE: &str = report::modes::preparation::SERIAL;
pub(crate) const FIT: &str = "warm_fit_normalizer";
pub(crate) const COUNT: &str = "count_eligible_contexts";
pub(crate) const LOADER: &str = "warm_loader_epoch";

/// The recipe stages a mode can repeat, by their profile names;
/// their dataset is filled in once it is resolved ([`with_dataset`]).
pub(crate) fn trial_stage_names() -> impl Iterator<Item = &'static str> {
    [FIT, COUNT, LOADER].into_iter().chain(ModelStep::ALL.iter().map(|s| s.name()))
}

/// The stage a recipe stage name stands for, with no dataset yet.
pub(crate) fn recipe_stage(name: &str, seed: u64) -> Option<Stage> {
    let cache = SERIAL_CACHE.to_string();
    match name {
        FIT => Some(Stage::FitNormalizer { dataset: LocalPath::default(), cache }),
        COUNT => Some(Stage::CountContexts { dataset: LocalPath::default(), cache }),
        LOADER => Some(Stage::LoaderEpoch(epoch_input(LocalPath::default(), seed))),
        _ => ModelStep::ALL
            .into_iter()
            .find(|s| s.name() == name)
            .map(|step| Stage::Model(step, epoch_input(LocalPath::default(), seed))),
    }
}

/// The recipe stage `name` over `dataset`'s serial cache.
///
/// # Panics
/// When `name` is not a recipe stage (see [`trial_stage_names`]).
pub(crate) fn recipe_stage_over(name: &str, dataset: &Path, seed: u64) -> Stage {
    let mut stage = recipe_stage(name, seed).expect("a recipe stage name");
    with_dataset(&mut stage, dataset);
    stage
}

/// Whether `stage` is one of the recipe's warm or model stages.
pub(crate) fn recipe_name(stage: &Stage) -> bool {
    matches!(
        stage,
        Stage::FitNormalizer { .. }
            | Stage::CountContexts { .. }
            | Stage::LoaderEpoch(_)
            | Stage::Model(..)
    )
}

/// Whether `stage` reads the loader's inputs (the normalizer and the
/// context index as well as the cache).
pub(crate) fn reads_loader(stage: &Stage) -> bool {
    matches!(stage, Stage::LoaderEpoch(_) | Stage::Model(..))
}

/// Sets the dataset of a recipe stage; other stages are left alone.
pub(crate) fn with_dataset(stage: &mut Stage, dir: &Path) {
    let dir = LocalPath::from(dir.to_string_lossy().into_owned());
    if let Stage::FitNormalizer { dataset, .. } | Stage::CountContexts { dataset, .. } = stage {
        *dataset = dir;
    } else if let Some(input) = stage.epoch_input_mut() {
        input.dataset = dir;
    }
}

/// A loader epoch's input over the serial cache; the artifact hashes are
/// filled in by [`super::hand_on_artifacts`] once fitting and counting have run.
pub(crate) fn epoch_input(dataset: LocalPath, seed: u64) -> EpochInput {
    EpochInput {
        dataset,
        cache: SERIAL_CACHE.into(),
        seed,
        normalizer_sha256: String::new(),
        contexts_sha256: String::new(),
    }
}
