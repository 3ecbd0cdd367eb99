//! The work a worker can be assigned. Stages know nothing about sockets:
//! they see a [`StageContext`] and report through a [`Reporter`].

mod artifact;
pub(crate) mod autospan;
mod command;
mod diagnostic;
mod input_wait;
pub mod item;
mod model;
mod prepare;
mod resumable;
pub(crate) mod sampled;
mod spans;

pub use spans::PythonRuntime;
mod warm;

pub use artifact::write_artifact;

use protocol::{Figure, Stage};
use std::path::PathBuf;

/// Where a stage runs and how it talks to the outside.
pub struct StageContext<'a> {
    /// The run directory; artifacts are written below it.
    pub run_dir: PathBuf,
    /// A name unique within the run for this assignment (used in artifact names).
    pub job_tag: String,
    pub reporter: &'a mut dyn Reporter,
    /// Where a command stage is killed on purpose (see `command`).
    pub kill: Option<protocol::KillPoint>,
    /// This worker's preparation program, kept across its items (see `item`).
    pub items: &'a mut item::Items,
    /// Functions a command's Python wraps as spans (`--span`, see `autospan`).
    pub spans: &'a [protocol::SpanTarget],
    /// Sample a command's Python stacks (`--sample`, see `sampled`).
    pub sample: Option<&'a protocol::SampleRequest>,
    /// The sampler a command started, for the caller to finish once the
    /// stage's wall time has ended ([`sampled::Running::finish`]).
    pub(crate) sampling: Option<sampled::Running>,
}

/// How a stage tells the outside what it is doing and what it wrote.
pub trait Reporter {
    /// `done` of `total` units are finished.
    fn progress(&mut self, done: u64, total: u64);
    /// A file was written below the run directory, with its SHA-256.
    fn artifact(&mut self, relative_path: &str, sha256: [u8; 32]);
    /// What the stage did so far was setup (inputs an earlier stage would
    /// have left in the same process): wall, CPU and figures are measured
    /// from here; the setup's wall time is reported as `setup_s`.
    fn setup_done(&mut self);
    /// A timed part of the stage, `name`, from `start` for `seconds`: it
    /// lands in the measurement (and a trace) as a slice.
    fn slice(&mut self, name: &str, start: std::time::Instant, seconds: f64, beside: bool);
    /// `--span` targets that never matched (see `autospan`).
    fn spans_not_found(&mut self, targets: Vec<String>);
    /// Every span name's summary, and what to know to read them.
    fn spans(&mut self, spans: Vec<protocol::SpanSummary>, warnings: Vec<String>);
    /// What the Python helper said of its interpreter and libraries.
    fn python_runtime(&mut self, runtime: spans::PythonRuntime);
    /// A command's own stages (stage spans), as rows.
    fn command_stages(&mut self, _stages: Vec<protocol::CommandStage>) {}
    /// The end of a failed command's stderr (see `command`), for a private
    /// file beside the run, never for evidence.
    fn stderr_tail(&mut self, _text: String) {}
}

/// Why a stage did not complete.
#[derive(Debug, thiserror::Error)]
pub enum StageError {
    #[error("{0}")]
    Failed(String),
    #[error("i/o error on {path}: {source}")]
    Io { path: String, source: std::io::Error },
    /// A command reached its kill point; its tree was killed and reaped.
    #[error("killed at the declared point: {0}")]
    KilledAtPoint(String),
}

/// Runs one stage; returns its own figures.
pub fn run(stage: &Stage, ctx: &mut StageContext<'_>) -> Result<Vec<Figure>, StageError> {
    match stage {
        Stage::VerifySources { .. } | Stage::PrepareSeries { .. } => prepare::run(stage, ctx),
        Stage::Command { line, .. } => {
            let mut cmd = std::process::Command::new("/bin/sh");
            cmd.arg("-c").arg(line);
            command::run(cmd, ctx)
        }
        Stage::Exec { argv, cwd, env, .. } => {
            let Some((program, args)) = argv.split_first() else {
                return Err(StageError::Failed("the stage has no command".into()));
            };
            let mut cmd = std::process::Command::new(program.as_str());
            cmd.args(args.iter().map(protocol::Word::as_str))
                .current_dir(cwd)
                .envs(env.iter().map(|(k, v)| (k, v)));
            command::run(cmd, ctx)
        }
        Stage::FitNormalizer { .. } | Stage::CountContexts { .. } | Stage::LoaderEpoch(_) => {
            warm::run(stage, ctx)
        }
        Stage::PrepareItem { command, id, out, ready_timeout_ms } => {
            item::run(command, id, out, *ready_timeout_ms, ctx)
        }
        Stage::Model(step, input) => model::run(*step, input, ctx),
        Stage::Resumable(step, input) => resumable::run(*step, input, ctx),
        _ => diagnostic::run(stage, ctx),
    }
}

/// A named figure.
pub(crate) fn figure(name: &str, value: f64) -> Figure {
    Figure { name: name.into(), value }
}

/// The `p` quantile of `values` (nearest rank on the sorted values); 0 when empty.
///
/// This is the one quantile rule that differs from the coordinator's
/// (`coordinator::stats`, linear interpolation), on purpose: a stage's own
/// figures (`median_step_s`, `p95_wait_s`, …) summarise observations only the
/// worker sees, and nearest rank reports a step time or wait that actually
/// occurred. Figures computed from trials, campaigns and phases all go
/// through the coordinator's rule.
pub(crate) fn quantile(values: &[f64], p: f64) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n => v[((n - 1) as f64 * p).round() as usize],
    }
}
