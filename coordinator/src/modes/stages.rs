//! `--stage`, `--command` and `--name` as planned stages: what the modes
//! that run a list of stages (diagnostic, trials) share. Each says itself
//! what it makes of a recipe stage and how it names an unknown one.

use super::SharedArgs;
use crate::error::Refusal;
use crate::plan::{self, PlannedStage};
use protocol::{Stage, StageParseError};

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
    other: impl Fn(Other<'_>) -> Result<Stage, String>,
) -> Result<Vec<PlannedStage>, Refusal> {
    if shared.names.len() > shared.commands.len() {
        return Err(format!(
            "{} --name given for {} --command",
            shared.names.len(),
            shared.commands.len()
        )
        .into());
    }
    let spellings: Vec<String> = if shared.stages.is_empty() && shared.commands.is_empty() {
        plan::DEFAULT_DIAGNOSTIC_STAGES.iter().map(|s| s.to_string()).collect()
    } else {
        shared.stages.clone()
    };
    let mut stages = spellings
        .iter()
        .map(|s| match super::profile::recipe_stage(s, seed) {
            Some(stage) => other(Other::Recipe(s, stage)),
            None => s.parse().or_else(|e: StageParseError| match e {
                StageParseError::Unknown(_) => other(Other::Unknown(s, e)),
                _ => Err(format!("--stage {s}: {e}")),
            }),
        })
        .collect::<Result<Vec<_>, _>>()?;
    for (i, line) in shared.commands.iter().enumerate() {
        if line.trim().is_empty() {
            return Err("--command needs a command line".into());
        }
        let name = shared.names.get(i).cloned().unwrap_or_else(|| "command".into());
        if !plan::is_label(&name) {
            return Err(format!(
                "--name {name:?} must be 1-64 of A-Z a-z 0-9 _ and - (it names the stage in tables, plots and traces)"
            )
            .into());
        }
        stages.push(Stage::Command { name, line: line.clone() });
    }
    Ok(plan::keyed(stages))
}

/// The recipe's stages a `--stage` may name, for a refusal's text.
pub(crate) fn recipe_names() -> String {
    super::profile::trial_stage_names().collect::<Vec<_>>().join(", ")
}

/// Whether a stage's worker can be killed at a point: a command's follows
/// its spans file and its clock.
pub(crate) fn is_command(stage: &Stage) -> bool {
    matches!(stage, Stage::Command { .. } | Stage::Exec { .. })
}

/// `--kill-at`'s stage checked against the stages that can be killed at a
/// point (`known`, not empty), and a span or clock point against its stage.
pub(crate) fn kill_point(
    k: &crate::interrupt::KillAt,
    known: &[String],
    stages: &[PlannedStage],
) -> Result<(), Refusal> {
    if !known.contains(&k.stage) {
        return Err(format!(
            "--kill-at {}: no stage of this run is called that (stages that can be killed: {})",
            k.stage,
            known.join(", ")
        )
        .into());
    }
    let command = stages.iter().find(|s| s.key == k.stage).is_some_and(|s| is_command(&s.stage));
    if k.needs_a_command() && !command {
        return Err(
            format!("--kill-at {k}: span: and after: points apply to a command stage").into()
        );
    }
    Ok(())
}
