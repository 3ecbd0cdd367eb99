//! What each mode runs and what it adds to the report. A mode is a folder
//! of its own, its `mod` line and its entry in [`MODES`] below: its plan (a [`Planned`]),
//! which turns into [`Phase`]s (each one dispatch of jobs over worker
//! processes) and the declaration's stages and parameters ([`Prepared`]),
//! and afterwards assembles its stage records and its report section (a
//! [`ModeSection`]) from the phases' outcomes; the section shows itself in
//! summary.md, the plots and on the console. Modes never measure: workers
//! do, and `wait4` does.

mod records;

pub(crate) use records::{checked_artifact, process_records, sampled_stacks, stage_from_job};
use report::modes::Section;

use crate::dispatch::DispatchOutcome;
use crate::error::RunError;
use crate::plan::Settings;
use crate::supervisor::{Job, JobResult};
use protocol::JobId;
use report::rundir::declaration::{DeclaredStage, definition_sha256, phase_definition_sha256};
use report::rundir::report::{ArtifactRecord, StageRecord};
use std::collections::BTreeMap;
use std::path::Path;

/// A mode as the registry knows it: its name, what it is, the flags it
/// owns and the shared ones it reads, how it turns them into a plan, and
/// how its section is read back from a report.
pub(crate) trait Mode: Sync {
    /// The mode's name, as `--mode` spells it and reports record it.
    fn name(&self) -> &'static str;
    /// One line for `--mode`'s help.
    fn about(&self) -> &'static str;
    /// The flags every mode may read that this one does: any other given
    /// is refused, naming the modes that read it.
    fn uses(&self) -> &'static [Shared] {
        &[]
    }
    /// Adds the mode's own flags to the command line (a `clap::Args`
    /// group); any of them given with another mode is refused.
    fn args(&self, cmd: clap::Command) -> clap::Command {
        cmd
    }
    /// The mode's plan from its own flags (in `own`) and the shared ones;
    /// a refusal is bad usage, found before anything exists.
    fn resolve(
        &self,
        own: &clap::ArgMatches,
        shared: &SharedArgs,
    ) -> Result<Box<dyn Planned>, crate::error::Refusal>;
    /// The mode's own flag that repeats each stage (its clap id, as
    /// `--rounds` or `--trials`), and how often it repeats them when the
    /// flag is not given; None for a mode that runs each stage once.
    fn repeats(&self) -> Option<(&'static str, u32)> {
        None
    }
    /// How many counted samples of each stage a run of this mode with
    /// these flags (its own, in `own`) makes: 1 unless it repeats them.
    fn rounds(&self, own: &clap::ArgMatches) -> u32 {
        match self.repeats() {
            Some((flag, default)) => {
                own.try_get_one::<u32>(flag).ok().flatten().copied().unwrap_or(default)
            }
            None => 1,
        }
    }
}

/// A mode's own flags, read from its part of the command line.
pub(crate) fn own_args<A: clap::FromArgMatches>(
    own: &clap::ArgMatches,
) -> Result<A, crate::error::Refusal> {
    A::from_arg_matches(own).map_err(|e| crate::error::Refusal(e.to_string()))
}

/// A flag more than one mode reads (the command line's, not a mode's own).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shared {
    /// `--stage`, `--command` and `--name`.
    Stages,
    /// `--seed`.
    Seed,
    /// `--isolation`.
    Isolation,
    /// `--data`.
    Data,
    /// `--kill-at`.
    KillAt,
    /// `--workers` as a list of counts (a sweep).
    Sweep,
    /// A `--stage` that names one of the recipe's stages.
    RecipeStage,
    /// `--span` (a command stage's or a preparation program's Python).
    Spans,
    /// `--inputs` (the directories a command or preparation program reads).
    Inputs,
    /// `--param` and its companions (a scan of a command or preparation
    /// program over its own knob).
    Params,
}

impl Shared {
    /// "--mode a, --mode b": the modes that read this flag.
    pub(crate) fn readers(self) -> String {
        let names: Vec<String> = MODES
            .iter()
            .filter(|m| m.uses().contains(&self))
            .map(|m| format!("--mode {}", m.name()))
            .collect();
        names.join(", ")
    }
}

/// The shared flags' values, as given.
#[derive(Clone, Debug, Default)]
pub(crate) struct SharedArgs {
    pub(crate) stages: Vec<String>,
    pub(crate) commands: Vec<String>,
    pub(crate) names: Vec<String>,
    pub(crate) seed: Option<u64>,
    pub(crate) data: Option<std::path::PathBuf>,
    pub(crate) kill_at: Option<crate::kill_points::KillAt>,
    /// `--workers`: one count, or a sweep's.
    pub(crate) workers: Vec<u32>,
    /// `--inputs`, as given (digested once the mode has accepted them).
    pub(crate) inputs: Vec<std::path::PathBuf>,
    /// `--param` and its companions, as given.
    pub(crate) params: report::modes::params::ParamArgs,
}

/// A mode's `name`, in its `impl Mode`.
macro_rules! mode_basics {
    ($name:expr) => {
        fn name(&self) -> &'static str {
            $name
        }
    };
}

/// A plan's `name` and `clone_box`, in its `impl Planned`.
macro_rules! plan_basics {
    ($name:expr) => {
        fn name(&self) -> &'static str {
            $name
        }
        fn clone_box(&self) -> Box<dyn $crate::modes::Planned> {
            Box::new(self.clone())
        }
    };
}

// The registration: adding a mode is its folder, its `mod` line here and its
// `MODE` in [`MODES`]. The compiler keeps the two lists together: a folder
// left out of MODES is dead code (an error under CI's `-D warnings`), and a
// name in MODES without its folder does not build. They are plain `mod`
// lines, not a macro's: rustfmt and cargo-mutants read modules without
// expanding macros, and while a `modes!` macro declared them, `cargo fmt`
// and `scripts/mutants.sh` passed over every mode's folder unseen.
pub(crate) mod cold_prep;
pub(crate) mod diagnostic;
pub(crate) mod profile;
pub(crate) mod recipe;
pub(crate) mod trials;

/// Every mode, in the order `--mode` lists them; the first is `--mode`'s
/// default.
pub(crate) const MODES: &[&dyn Mode] =
    &[&diagnostic::MODE, &cold_prep::MODE, &trials::MODE, &profile::MODE, &recipe::MODE];

pub(crate) mod preparation;
pub(crate) mod stages;

/// The mode called `name`.
pub(crate) fn by_name(name: &str) -> Option<&'static dyn Mode> {
    MODES.iter().copied().find(|m| m.name() == name)
}

/// A run's plan: what every mode shares, and the mode's own.
#[derive(Clone, Debug)]
pub(crate) struct RunPlan {
    pub(crate) settings: Settings,
    pub(crate) mode: Box<dyn Planned>,
}

/// A mode's plan: what only that mode needs, and what it does with it.
pub(crate) trait Planned: std::fmt::Debug + Send + Sync {
    /// The mode's name.
    fn name(&self) -> &'static str;
    /// Resolves the mode's inputs (a dataset, where it reads one) and plans
    /// its phases; an error is bad usage or input, found before the run
    /// directory exists.
    fn prepare(&self, settings: &Settings) -> Result<Prepared, RunError>;
    /// Fills in the stage records and artifacts, and returns the mode's section.
    fn assemble(
        &self,
        cx: &Context<'_>,
        outcomes: &[PhaseOutcome],
        records: &mut Records,
    ) -> Result<Section, RunError>;
    fn clone_box(&self) -> Box<dyn Planned>;
    /// Whether `--span` reaches anything of this plan (a command stage's
    /// or a preparation program's Python).
    fn takes_spans(&self) -> bool {
        false
    }
    /// Whether the mode warns of machine load per stage itself (so the
    /// report's machine warnings leave load out).
    fn warns_of_load_per_stage(&self) -> bool {
        false
    }
    /// Whether its jobs are its items or series, as many as its input
    /// has: they go to jobs.jsonl.gz, not into report.json's `workers[]`.
    fn jobs_apart(&self) -> bool {
        false
    }
}

impl Clone for Box<dyn Planned> {
    fn clone(&self) -> Self {
        self.clone_box()
    }
}

/// What a mode decided before the run directory exists.
pub(crate) struct Prepared {
    pub(crate) phases: Vec<Phase>,
    /// The stages as declaration.json lists them.
    pub(crate) stages: Vec<DeclaredStage>,
    /// Fingerprint of the frozen dataset, for modes that read one.
    pub(crate) dataset_fingerprint: Option<String>,
    /// The mode's own parameters for the declaration.
    pub(crate) parameters: BTreeMap<String, serde_json::Value>,
    /// Locks on directories the run writes into and shares with no other
    /// run (a `--state`), held until the run ends.
    pub(crate) locks: Vec<host::dirlock::DirLock>,
}

/// The stage records and artifacts a mode assembles into the report.
#[derive(Default)]
pub(crate) struct Records {
    pub(crate) stages: BTreeMap<String, StageRecord>,
    pub(crate) artifacts: Vec<ArtifactRecord>,
}

/// One dispatch: these jobs, over this many worker processes at once.
#[derive(Clone, Debug)]
pub(crate) struct Phase {
    pub(crate) key: String,
    /// Its jobs, listed; empty where `feed` makes them.
    pub(crate) jobs: Vec<Job>,
    /// A phase of a user's items: its jobs made as they are handed out.
    pub(crate) feed: Option<crate::supervisor::Feed>,
    pub(crate) workers: u32,
    pub(crate) jobs_per_process: usize,
    /// A cache directory (relative to the run directory) the coordinator
    /// creates, private, before the phase starts.
    pub(crate) cache: Option<String>,
    /// How a person sees the phase progress.
    pub(crate) progress: crate::events::Style,
    /// Run by the coordinator after the phase succeeded and before the next
    /// starts (outside every measured wall): e.g. writing a cache manifest
    /// the next phase's workers check their reads against.
    pub(crate) after: Option<AfterPhase>,
    /// Run after each job of the phase that succeeded, before its worker
    /// takes the next (see [`crate::dispatch::AfterJob`]).
    pub(crate) after_job: Option<crate::dispatch::AfterJob>,
    /// The files the phase reads, where a mode declares them; with `evict`
    /// (`--os-cache cold`) the coordinator drops them from the page cache
    /// just before the phase starts.
    pub(crate) inputs: Option<std::sync::Arc<host::pagecache::Inputs>>,
    /// How long one item of the phase may take (`--item-timeout`), where
    /// its jobs are items.
    pub(crate) item_timeout: Option<std::time::Duration>,
}

impl Phase {
    /// Whether its jobs are a user's items (`--prepare`).
    pub(crate) fn of_items(&self) -> bool {
        matches!(self.first_job().map(|j| &j.stage), Some(protocol::Stage::PrepareItem { .. }))
    }

    /// Its first job, which says what kind of phase it is.
    pub(crate) fn first_job(&self) -> Option<&Job> {
        self.feed.as_ref().map(|f| &f.first).or(self.jobs.first())
    }

    /// How many jobs it has.
    pub(crate) fn planned(&self) -> usize {
        self.feed.as_ref().map_or(self.jobs.len(), |f| f.len())
    }

    /// Every job, in the order they are handed out (a feed's made anew).
    pub(crate) fn each_job(&self) -> Box<dyn Iterator<Item = std::borrow::Cow<'_, Job>> + '_> {
        match &self.feed {
            Some(feed) => Box::new(feed.jobs().map(std::borrow::Cow::Owned)),
            None => Box::new(self.jobs.iter().map(std::borrow::Cow::Borrowed)),
        }
    }

    /// What `--span` and `--sample` set on each job: the listed jobs', and
    /// a feed's first, which every job it makes copies.
    pub(crate) fn jobs_mut(&mut self) -> impl Iterator<Item = &mut Job> {
        self.jobs.iter_mut().chain(self.feed.as_mut().map(|f| &mut f.first))
    }

    /// A phase of `jobs` in one worker slot, each process taking up to
    /// `jobs_per_process` of them, a line per job, no extra steps.
    pub(crate) fn in_turn(key: String, jobs: Vec<Job>, jobs_per_process: usize) -> Phase {
        Phase {
            key,
            jobs,
            feed: None,
            workers: 1,
            jobs_per_process,
            cache: None,
            progress: crate::events::Style::LinePerJob,
            after: None,
            after_job: None,
            inputs: None,
            item_timeout: None,
        }
    }
}

/// A coordinator step between phases: given the run directory, the phase's
/// outcome and the phases still to run (whose jobs it may complete, e.g.
/// with the hashes of artifacts this phase wrote).
pub(crate) type AfterPhase = fn(&Path, &PhaseOutcome, &mut [Phase]) -> Result<(), RunError>;

/// An [`AfterPhase`] step: `hand_on` for every job of the phase, to the
/// jobs of every later phase.
pub(crate) fn hand_on_artifacts(
    _: &Path,
    done: &PhaseOutcome,
    rest: &mut [Phase],
) -> Result<(), RunError> {
    for r in done.results() {
        hand_on(r, rest.iter_mut().flat_map(|p| p.jobs.iter_mut()));
    }
    Ok(())
}

/// An [`AfterJob`](crate::dispatch::AfterJob) step: `hand_on` to the
/// jobs still queued in the same phase (one process running them in turn).
pub(crate) fn hand_on_queued(done: &JobResult, queued: &mut std::collections::VecDeque<Job>) {
    hand_on(done, queued.iter_mut());
}

/// Hands the SHA-256 of `normalizer.json` and of the context index, as the
/// worker reported them, to the later loader and model jobs, which check
/// the files against them before use.
fn hand_on<'a>(done: &JobResult, later: impl Iterator<Item = &'a mut Job>) {
    let mut later: Vec<&mut Job> = later.collect();
    for (path, sha) in &done.artifacts {
        let sha = hex::encode(sha);
        for input in later.iter_mut().filter_map(|j| j.stage.epoch_input_mut()) {
            if path == "normalizer.json" {
                input.normalizer_sha256 = sha.clone();
            } else if path.ends_with(&format!("/{}", ::recipe::warm::CONTEXTS)) {
                input.contexts_sha256 = sha.clone();
            }
        }
    }
}

/// A phase and what happened in it.
pub(crate) struct PhaseOutcome {
    /// The phase as planned, its jobs handed to the dispatcher: `jobs`
    /// keeps only the first (what kind of phase it was; a feed is kept
    /// whole, its ids shared), `planned` counts them.
    pub(crate) phase: Phase,
    pub(crate) planned: usize,
    pub(crate) dispatch: DispatchOutcome,
    /// What the phase's `after` step refused, if anything.
    pub(crate) after_error: Option<RunError>,
    /// What dropping its inputs from the page cache did, if asked.
    pub(crate) eviction: Option<report::rundir::report::Eviction>,
    /// Accepts that failed while it ran (descriptors ran out), if any.
    pub(crate) accept_trouble: Option<crate::admission::AcceptTrouble>,
}

impl PhaseOutcome {
    /// The jobs its workers kept (none of a phase whose jobs were folded).
    pub(crate) fn results(&self) -> impl Iterator<Item = &JobResult> {
        self.dispatch.outcomes.iter().flat_map(|o| o.jobs.iter())
    }

    /// How many jobs its workers completed, kept or folded.
    pub(crate) fn done(&self) -> u64 {
        let each = |o: &crate::supervisor::WorkerOutcome| {
            o.jobs.len() as u64 + o.tally.as_ref().map_or(0, |t| t.jobs())
        };
        self.dispatch.outcomes.iter().map(each).sum()
    }
}

/// Numbers jobs across a whole run, so ids are unique in it.
#[derive(Default)]
pub(crate) struct JobNumbers(u32);

impl JobNumbers {
    pub(crate) fn job(&mut self, key: String, stage: protocol::Stage) -> Job {
        let id = JobId(self.0);
        self.0 += 1;
        Job { id, order: id.0 as usize, key, stage, item: None, spans: Vec::new(), sample: None }
    }

    /// `count` jobs numbered in turn, the first of which is returned (a
    /// [`crate::supervisor::Feed`] makes the rest).
    pub(crate) fn jobs(&mut self, key: String, stage: protocol::Stage, count: usize) -> Job {
        let first = self.job(key, stage);
        self.0 += count.saturating_sub(1) as u32;
        first
    }
}

/// The planned stages as the declaration lists them: per job, or per phase.
/// A phase that prepares a cache is one entry either way (its jobs are series).
pub(crate) fn declared(phases: &[Phase], per_job: bool) -> Vec<DeclaredStage> {
    if per_job {
        phases
            .iter()
            .flat_map(|p| match p.cache {
                Some(_) => declared(std::slice::from_ref(p), false),
                None => p
                    .jobs
                    .iter()
                    .map(|j| DeclaredStage {
                        key: j.key.clone(),
                        stage: j.stage.to_string(),
                        jobs: 1,
                        workers: p.workers,
                        definition_sha256: definition_sha256(&j.stage.definition()),
                    })
                    .collect(),
            })
            .collect()
    } else {
        phases
            .iter()
            .map(|p| DeclaredStage {
                key: p.key.clone(),
                stage: p.first_job().map(|j| j.stage.to_string()).unwrap_or_default(),
                jobs: p.planned(),
                workers: p.workers,
                // A phase's definition: every job's, in order.
                definition_sha256: phase_definition_sha256(
                    p.each_job().map(|j| j.stage.definition()),
                ),
            })
            .collect()
    }
}

/// What a mode may consult when it assembles its report.
pub(crate) struct Context<'a> {
    pub(crate) dir: &'a Path,
    /// The run's start: the zero of every time in `workers[]`.
    pub(crate) started: std::time::Instant,
    /// Load averages when the run started (from environment.json).
    pub(crate) load_at_start: Option<[f64; 3]>,
    /// The machine's logical cores (from environment.json).
    pub(crate) cores: u32,
    /// `--inputs`, digested again after the last phase (unchanged).
    pub(crate) inputs: &'a [report::inputs::Digest],
    /// `--sample`'s py-spy as it named itself; None when not sampled.
    pub(crate) sampler: Option<&'a str>,
}

#[cfg(test)]
mod tests;
