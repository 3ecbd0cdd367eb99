//! The stages a worker knows how to run, and their `NAME[:ARG]` spelling.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::Path;
use std::str::FromStr;

/// A path on the machine that runs a stage: a frozen dataset, a state
/// directory, a pipeline stage's working directory. It crosses the wire as
/// a string, but never enters a stage's [`Definition`], which holds every
/// `LocalPath` blank. So the same work on another machine, or on data
/// copied elsewhere, has the same definition, and no definition hashes
/// where a user keeps their files.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct LocalPath(String);

impl LocalPath {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn as_path(&self) -> &Path {
        Path::new(&self.0)
    }
}

impl From<String> for LocalPath {
    fn from(s: String) -> Self {
        LocalPath(s)
    }
}

impl From<&str> for LocalPath {
    fn from(s: &str) -> Self {
        LocalPath(s.to_string())
    }
}

impl AsRef<Path> for LocalPath {
    fn as_ref(&self) -> &Path {
        self.as_path()
    }
}

impl fmt::Display for LocalPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One word of a program's argv, typed by what it is: text, or a path of
/// this machine (a word starting with `/`), which a definition leaves blank
/// as it does every [`LocalPath`]. So `python3 /home/ana/fit.py` and
/// `python3 /srv/fit.py` define the same stage, and a word that names
/// where a user keeps their files is never hashed into one.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Word {
    Text(String),
    Path(LocalPath),
}

impl Word {
    /// The word as the program receives it.
    pub fn as_str(&self) -> &str {
        match self {
            Word::Text(t) => t,
            Word::Path(p) => p.as_str(),
        }
    }

    /// The word as a definition holds it: a path blank.
    fn definition(self) -> Word {
        match self {
            Word::Path(_) => Word::Path(LocalPath::default()),
            text => text,
        }
    }
}

impl From<&str> for Word {
    fn from(s: &str) -> Self {
        match s.starts_with('/') {
            true => Word::Path(s.into()),
            false => Word::Text(s.into()),
        }
    }
}

impl From<String> for Word {
    fn from(s: String) -> Self {
        Word::from(s.as_str())
    }
}

/// What a stage does, without where it does it: the stage with every
/// [`LocalPath`] blank, serialised as the stage is (so a stage without a
/// path defines itself). The only way to one is [`Stage::definition`],
/// which names every field of every variant: a field added to a stage does
/// not compile until its author says whether it is part of the definition.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Definition(Stage);

/// A stage and its parameters, as assigned to a worker.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Stage {
    /// Does nothing: measures orchestration overhead.
    Noop,
    /// Sleeps for the given milliseconds (wall time without CPU).
    Sleep { ms: u64 },
    /// Burns CPU for the given milliseconds of wall time.
    Spin { ms: u64 },
    /// Allocates and touches the given MiB, holding it until the stage ends.
    Alloc { mib: u64 },
    /// Writes a deterministic artifact of the given KiB and reports its hash.
    Write { kib: u64 },
    /// Returns an error.
    Fail,
    /// Aborts the worker process.
    Crash,
    /// Re-hashes every source file and the events file of a frozen dataset
    /// against its frozen.json.
    VerifySources { dataset: LocalPath },
    /// Reads one series, checks its hash, extracts its features and writes
    /// them into `cache` (relative to the run directory).
    PrepareSeries { dataset: LocalPath, id: String, file: String, sha256: String, cache: String },
    /// Runs a user's command line with `sh -c`, measured with its whole
    /// process tree; a non-zero exit fails the stage.
    Command { name: String, line: String },
    /// Runs a program with its arguments, in a working directory, with
    /// extra environment variables (a stage of an external pipeline),
    /// measured like [`Stage::Command`].
    Exec { name: String, argv: Vec<Word>, cwd: LocalPath, env: Vec<(String, String)> },
    /// Fits the normalizer over the training series of a prepared cache
    /// (relative to the run directory) and writes `normalizer.json`.
    FitNormalizer { dataset: LocalPath, cache: String },
    /// Rebuilds targets from the events, recounts validity from the sources,
    /// and writes the context index into the cache.
    CountContexts { dataset: LocalPath, cache: String },
    /// One loader epoch over the context index with the fitted normalizer.
    LoaderEpoch(EpochInput),
    /// A step of the model's part of the recipe, over the same loader.
    Model(ModelStep, EpochInput),
    /// A step of the resumable recipe, over a state directory that keeps
    /// its artifacts across runs (`--state`).
    Resumable(StateStep, StateInput),
    /// Hands one item to a user's long-lived preparation program (started
    /// as `sh -c COMMAND` on the worker's first item, once per worker
    /// process) and waits for its answer; the program writes into `out`
    /// (relative to the run directory). See docs/item-protocol.md.
    PrepareItem { command: String, id: String, out: String, ready_timeout_ms: u64 },
}

/// What a resumable step works on: a dataset, a state directory (absolute),
/// what to do with derived artifacts found complete, how many epochs to
/// train and the loader's seed.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct StateInput {
    pub dataset: LocalPath,
    pub state: LocalPath,
    pub policy: ResumePolicy,
    pub epochs: u32,
    pub seed: u64,
}

/// On resume, what happens to a derived artifact (normalizer, context
/// index) whose completion record matches its inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ResumePolicy {
    /// Load it (after checking it against its record).
    Load,
    /// Recompute it from its inputs, as if it had not been kept.
    Recompute,
}

impl ResumePolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            ResumePolicy::Load => "load",
            ResumePolicy::Recompute => "recompute",
        }
    }
}

/// The stages of the resumable recipe, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum StateStep {
    /// Prepare every training series not already complete in the state.
    CachePrepare,
    /// Fit the normalizer, or take the complete one (per the policy).
    FitNormalizer,
    /// Count the eligible contexts, or take the complete index.
    CountContexts,
    /// Train up to the declared epochs from the newest complete checkpoint,
    /// writing a checkpoint (weights and optimizer state) after each epoch.
    Train,
}

impl StateStep {
    pub const ALL: [StateStep; 4] = [
        StateStep::CachePrepare,
        StateStep::FitNormalizer,
        StateStep::CountContexts,
        StateStep::Train,
    ];

    pub fn name(self) -> &'static str {
        match self {
            StateStep::CachePrepare => "cache_prepare",
            StateStep::FitNormalizer => "fit_normalizer",
            StateStep::CountContexts => "count_contexts",
            StateStep::Train => "train",
        }
    }
}

/// What a loader epoch reads: a prepared cache (relative to the run
/// directory) of a dataset, the normalizer and the context index, both
/// checked against the SHA-256 their stages reported, and the shuffle seed.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct EpochInput {
    pub dataset: LocalPath,
    pub cache: String,
    pub seed: u64,
    pub normalizer_sha256: String,
    pub contexts_sha256: String,
}

impl EpochInput {
    /// Itself with its dataset's path blank (see [`Definition`]).
    fn definition(self) -> EpochInput {
        let EpochInput { dataset: _, cache, seed, normalizer_sha256, contexts_sha256 } = self;
        EpochInput {
            dataset: LocalPath::default(),
            cache,
            seed,
            normalizer_sha256,
            contexts_sha256,
        }
    }
}

/// The model stages of the seed profiler's table. In a fresh process each
/// one first does, untimed, what it needs from the stages before it (read
/// the host batch, build the model, warm up), then measures only its own part.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ModelStep {
    /// Build the model and its optimizer (seed 0).
    ResidentBuild,
    /// Two training steps on one host batch (the loader's first).
    ResidentWarmup,
    /// Twenty training steps on that same batch, after two untimed warm-ups.
    ResidentSteps,
    /// Build a fresh model and optimizer for the epoch.
    EndToEndBuild,
    /// Train a fresh model for one epoch through the loader.
    FitEpoch,
}

impl ModelStep {
    pub const ALL: [ModelStep; 5] = [
        ModelStep::ResidentBuild,
        ModelStep::ResidentWarmup,
        ModelStep::ResidentSteps,
        ModelStep::EndToEndBuild,
        ModelStep::FitEpoch,
    ];

    /// The seed's stage name.
    pub fn name(self) -> &'static str {
        match self {
            ModelStep::ResidentBuild => "resident_model_build",
            ModelStep::ResidentWarmup => "resident_compile_and_warmup",
            ModelStep::ResidentSteps => "resident_model_steps",
            ModelStep::EndToEndBuild => "end_to_end_model_build",
            ModelStep::FitEpoch => "end_to_end_fit_epoch",
        }
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum StageParseError {
    #[error(
        "unknown stage '{0}' (known: noop, sleep:MS, spin:MS, alloc:MIB, write:KIB, fail, crash)"
    )]
    Unknown(String),
    #[error("stage '{name}' needs an argument: {name}:{what}")]
    MissingArg { name: String, what: &'static str },
    #[error("stage '{name}' takes no argument, got '{arg}'")]
    UnexpectedArg { name: String, arg: String },
    #[error("stage '{name}': '{arg}' is not a whole number of {what}")]
    BadNumber { name: String, arg: String, what: &'static str },
}

impl Stage {
    /// The stage's name without its argument.
    pub fn name(&self) -> &'static str {
        match self {
            Stage::Noop => "noop",
            Stage::Sleep { .. } => "sleep",
            Stage::Spin { .. } => "spin",
            Stage::Alloc { .. } => "alloc",
            Stage::Write { .. } => "write",
            Stage::Fail => "fail",
            Stage::Crash => "crash",
            Stage::VerifySources { .. } => "verify_sources",
            Stage::PrepareSeries { .. } => "prepare_series",
            Stage::PrepareItem { .. } => "prepare_item",
            Stage::Command { .. } | Stage::Exec { .. } => "command",
            Stage::FitNormalizer { .. } => "warm_fit_normalizer",
            Stage::CountContexts { .. } => "count_eligible_contexts",
            Stage::LoaderEpoch(_) => "warm_loader_epoch",
            Stage::Model(step, _) => step.name(),
            Stage::Resumable(step, _) => step.name(),
        }
    }

    /// The stage's [`Definition`]: itself with its paths blank.
    pub fn definition(&self) -> Definition {
        let blank = LocalPath::default;
        Definition(match self.clone() {
            Stage::Noop => Stage::Noop,
            Stage::Sleep { ms } => Stage::Sleep { ms },
            Stage::Spin { ms } => Stage::Spin { ms },
            Stage::Alloc { mib } => Stage::Alloc { mib },
            Stage::Write { kib } => Stage::Write { kib },
            Stage::Fail => Stage::Fail,
            Stage::Crash => Stage::Crash,
            Stage::VerifySources { dataset: _ } => Stage::VerifySources { dataset: blank() },
            Stage::PrepareSeries { dataset: _, id, file, sha256, cache } => {
                Stage::PrepareSeries { dataset: blank(), id, file, sha256, cache }
            }
            Stage::Command { name, line } => Stage::Command { name, line },
            Stage::Exec { name, argv, cwd: _, env } => {
                let argv = argv.into_iter().map(Word::definition).collect();
                Stage::Exec { name, argv, cwd: blank(), env }
            }
            Stage::FitNormalizer { dataset: _, cache } => {
                Stage::FitNormalizer { dataset: blank(), cache }
            }
            Stage::CountContexts { dataset: _, cache } => {
                Stage::CountContexts { dataset: blank(), cache }
            }
            Stage::LoaderEpoch(input) => Stage::LoaderEpoch(input.definition()),
            Stage::Model(step, input) => Stage::Model(step, input.definition()),
            Stage::Resumable(step, input) => {
                let StateInput { dataset: _, state: _, policy, epochs, seed } = input;
                let input = StateInput { dataset: blank(), state: blank(), policy, epochs, seed };
                Stage::Resumable(step, input)
            }
            Stage::PrepareItem { command, id, out, ready_timeout_ms } => {
                Stage::PrepareItem { command, id, out, ready_timeout_ms }
            }
        })
    }

    /// The epoch input of a loader or model stage.
    pub fn epoch_input_mut(&mut self) -> Option<&mut EpochInput> {
        match self {
            Stage::LoaderEpoch(input) | Stage::Model(_, input) => Some(input),
            _ => None,
        }
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stage::Sleep { ms } | Stage::Spin { ms } => write!(f, "{}:{ms}", self.name()),
            Stage::Alloc { mib } => write!(f, "alloc:{mib}"),
            Stage::Write { kib } => write!(f, "write:{kib}"),
            Stage::Command { name, .. } | Stage::Exec { name, .. } => f.write_str(name),
            _ => f.write_str(self.name()),
        }
    }
}

impl FromStr for Stage {
    type Err = StageParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (name, arg) = match s.split_once(':') {
            Some((n, a)) => (n, Some(a)),
            None => (s, None),
        };
        let number = |what: &'static str| -> Result<u64, StageParseError> {
            let arg = arg.ok_or_else(|| StageParseError::MissingArg { name: name.into(), what })?;
            arg.parse().map_err(|_| StageParseError::BadNumber {
                name: name.into(),
                arg: arg.into(),
                what,
            })
        };
        let bare = |stage: Stage| match arg {
            None => Ok(stage),
            Some(a) => Err(StageParseError::UnexpectedArg { name: name.into(), arg: a.into() }),
        };
        match name {
            "noop" => bare(Stage::Noop),
            "fail" => bare(Stage::Fail),
            "crash" => bare(Stage::Crash),
            "sleep" => Ok(Stage::Sleep { ms: number("MS")? }),
            "spin" => Ok(Stage::Spin { ms: number("MS")? }),
            "alloc" => Ok(Stage::Alloc { mib: number("MIB")? }),
            "write" => Ok(Stage::Write { kib: number("KIB")? }),
            _ => Err(StageParseError::Unknown(s.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A LocalPath is blank in a stage's definition, under any field, and
    /// whole on the wire.
    #[test]
    fn local_paths_are_blank_only_in_a_definition() {
        let exec = |cwd: &str| Stage::Exec {
            name: "fit".into(),
            argv: vec!["python3".into()],
            cwd: cwd.into(),
            env: Vec::new(),
        };
        let bytes = |s: &Stage| crate::frame::encode(s).unwrap();
        let (a, b) = (exec("/home/ana/pipe"), exec("/srv/pipe"));
        assert_ne!(bytes(&a), bytes(&b), "the wire carries the path");
        let blank = |s: &Stage| crate::frame::encode(&s.definition()).unwrap();
        assert_eq!(blank(&a), blank(&b));
        assert_eq!(blank(&a), bytes(&exec("")));
        let back: Stage = crate::frame::read(&mut &bytes(&a)[..]).unwrap();
        assert_eq!(back, a, "the stage itself keeps its path");
        // A word of argv that is a path is blank in the definition too;
        // the words that are not still count.
        let run = |words: &[&str]| Stage::Exec {
            name: "fit".into(),
            argv: words.iter().map(|w| Word::from(*w)).collect(),
            cwd: "/p".into(),
            env: Vec::new(),
        };
        let (home, srv) = (run(&["python3", "/home/ana/fit.py"]), run(&["python3", "/srv/fit.py"]));
        assert_ne!(bytes(&home), bytes(&srv), "the wire carries the word");
        assert_eq!(blank(&home), blank(&srv));
        assert_ne!(blank(&home), blank(&run(&["python3", "fit.py"])));
        assert_ne!(blank(&home), blank(&run(&["python3", "/home/ana/fit.py", "--fast"])));
        assert_eq!(Word::from("/home/ana/fit.py").as_str(), "/home/ana/fit.py");
        // A stage without a path is its own definition.
        let sleep = Stage::Sleep { ms: 5 };
        assert_eq!(sleep.definition(), Definition(sleep));
    }

    #[test]
    fn spelling_round_trips() {
        for s in ["noop", "sleep:200", "spin:5", "alloc:256", "write:64", "fail", "crash"] {
            let stage: Stage = s.parse().unwrap();
            assert_eq!(stage.to_string(), s);
        }
    }

    #[test]
    fn bad_spellings_are_named() {
        assert!(matches!("sleep".parse::<Stage>(), Err(StageParseError::MissingArg { .. })));
        assert!(matches!("sleep:x".parse::<Stage>(), Err(StageParseError::BadNumber { .. })));
        assert!(matches!("noop:1".parse::<Stage>(), Err(StageParseError::UnexpectedArg { .. })));
        let err = "warp:9".parse::<Stage>().unwrap_err();
        assert!(err.to_string().contains("warp:9"));
    }
}
