//! `--mode recipe`: the recipe against a state directory (`--state`) that
//! keeps its artifacts across runs: `verify_before`, then `cache_prepare`,
//! `fit_normalizer`, `count_contexts` and `train` (for `--epochs`), each in
//! a fresh worker process (or all in one with `--isolation run`). Each stage
//! takes what the state's completion records prove complete, rebuilds what
//! they do not, and reports its time by component (see the worker's
//! `stages::resumable`). The report adds a digest of the state as the run
//! left it, naming no file, so two runs can be shown to have left the same
//! artifacts.

use super::preparation;
use report::modes::preparation::VERIFY_BEFORE;
use report::modes::recipe::{NAME, Section};

use super::{Context, JobNumbers, Phase, PhaseOutcome, Planned, Prepared, Records, stage_from_job};
use crate::error::{Refusal, RunError, fail};
use crate::plan::{Isolation, Settings};
use protocol::{ResumePolicy, Stage, StateInput, StateStep};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The mode, as the registry lists it.
pub(crate) struct Recipe;
pub(crate) const MODE: Recipe = Recipe;

/// The most epochs a recipe run trains, from `--epochs` or a campaign
/// file's `epochs` alike.
pub(crate) const MAX_EPOCHS: u32 = 10_000;

// The flags only a recipe run reads. (A doc comment here would be the
// whole command's about: clap takes a flattened group's.)
#[derive(clap::Args, Debug)]
#[group(skip)]
#[command(next_help_heading = "Recipe mode")]
pub(crate) struct Args {
    /// The state directory that keeps the recipe's artifacts (cache,
    /// normalizer, context index, checkpoints) across runs. Created if
    /// missing; an existing one must be empty or a state directory.
    #[arg(long, value_name = "DIR")]
    state: Option<PathBuf>,
    /// On resume, `load` a complete normalizer and context index, or
    /// `recompute` them from their inputs.
    #[arg(long, value_enum, value_name = "POLICY")]
    resume_policy: Option<PolicyArg>,
    /// Epochs to train (a checkpoint after each), 1 to 10000. [default: 1]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=MAX_EPOCHS as i64))]
    epochs: Option<u32>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum PolicyArg {
    Load,
    Recompute,
}

impl super::Mode for Recipe {
    mode_basics!(NAME);
    fn about(&self) -> &'static str {
        "The recipe against a state directory (--state) that keeps its artifacts across runs: verify, cache preparation, normalizer, contexts, training for --epochs, each resuming from what is complete"
    }
    fn uses(&self) -> &'static [super::Shared] {
        use super::Shared::*;
        &[Seed, Isolation, Data, KillAt]
    }
    fn args(&self, cmd: clap::Command) -> clap::Command {
        <Args as clap::Args>::augment_args(cmd)
    }
    fn resolve(
        &self,
        own: &clap::ArgMatches,
        shared: &super::SharedArgs,
    ) -> Result<Box<dyn Planned>, Refusal> {
        let own: Args = super::own_args(own)?;
        let Some(dir) = own.state else {
            return Err(Refusal(format!("--mode {NAME} needs --state DIR")));
        };
        if let Some(k) = &shared.kill_at {
            let known: Vec<String> = keys().map(str::to_string).collect();
            super::stages::kill_point(k, &known, &[])?;
        }
        // Claimed (created, marked) last: a refused command line leaves nothing.
        Ok(Box::new(Plan {
            state: ::recipe::state::claim(&dir).map_err(|e| Refusal(e.to_string()))?,
            policy: match own.resume_policy.unwrap_or(PolicyArg::Load) {
                PolicyArg::Load => ResumePolicy::Load,
                PolicyArg::Recompute => ResumePolicy::Recompute,
            },
            epochs: own.epochs.unwrap_or(1),
            seed: shared.seed.unwrap_or(0),
        }))
    }
}

/// What a recipe run needs of its own: the state directory (claimed), how
/// it resumes, the epochs and the loader's seed.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Plan {
    pub(crate) state: PathBuf,
    pub(crate) policy: ResumePolicy,
    pub(crate) epochs: u32,
    pub(crate) seed: u64,
}

/// The phase of `--isolation run` whose one process runs every state stage.
pub(crate) const SHARED_PROCESS: &str = "state_stages";

/// The stage keys, in order.
pub(crate) fn keys() -> impl Iterator<Item = &'static str> {
    std::iter::once(VERIFY_BEFORE).chain(StateStep::ALL.iter().map(|s| s.name()))
}

impl Planned for Plan {
    plan_basics!(NAME);

    fn prepare(&self, settings: &Settings) -> Result<Prepared, RunError> {
        // Two runs never share a state: the second is refused here, before
        // it has a run directory.
        let lock = host::dirlock::lock(&self.state, "--state")?;
        let (dataset, frozen) = host::dataset::resolve(settings.data.as_deref(), settings.quiet)?;
        let mut numbers = JobNumbers::default();
        let verify = preparation::verify_phase(&mut numbers, VERIFY_BEFORE, &dataset);
        let input = StateInput {
            dataset: dataset.to_string_lossy().into_owned().into(),
            state: self.state.to_string_lossy().into_owned().into(),
            policy: self.policy,
            epochs: self.epochs,
            seed: self.seed,
        };
        let jobs: Vec<_> = StateStep::ALL
            .iter()
            .map(|step| numbers.job(step.name().into(), Stage::Resumable(*step, input.clone())))
            .collect();
        let phase = Phase::in_turn;
        let mut phases = vec![verify];
        match settings.isolation {
            Isolation::Stage => {
                phases.extend(jobs.into_iter().map(|j| phase(j.key.clone(), vec![j], 1)));
            }
            Isolation::Run => phases.push(phase(SHARED_PROCESS.into(), jobs, usize::MAX)),
        }
        let mut parameters = BTreeMap::new();
        parameters.insert("seed".into(), self.seed.into());
        parameters.insert("epochs".into(), self.epochs.into());
        parameters.insert("resume_policy".into(), self.policy.as_str().into());
        Ok(Prepared {
            stages: super::declared(&phases, true),
            phases,
            dataset_fingerprint: Some(frozen.fingerprint),
            parameters,
            locks: vec![lock],
        })
    }

    fn assemble(
        &self,
        _: &Context<'_>,
        outcomes: &[PhaseOutcome],
        records: &mut Records,
    ) -> Result<super::Section, RunError> {
        for (order, key) in keys().enumerate() {
            let r =
                outcomes.iter().flat_map(|p| p.results()).find(|r| r.job.key == key).ok_or_else(
                    || fail(Some(key.into()), None, "internal", format!("{key} reported nothing")),
                )?;
            records.stages.insert(key.into(), stage_from_job(r, order));
        }
        let state = evidence::digest::digest(&self.state).map_err(|e| {
            fail(None, None, "internal", format!("digesting the state directory: {e}"))
        })?;
        Ok(super::Section::from(Section { state }))
    }
}
