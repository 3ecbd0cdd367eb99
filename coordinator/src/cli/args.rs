//! The command line as clap parses it: commands, flags, their defaults and
//! their help. Nothing here runs anything.

use crate::error::Refusal;
use crate::kill_points::KillAt;
use crate::plan::{Isolation, LeakPolicy, positive_secs};
use clap::{Args, Parser, Subcommand};
use recipe::generate::Scale;
use report::render::export::Exports;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Parser, Debug)]
#[command(
    name = "coordinator",
    version,
    about = "Profile a pipeline stage by stage, each stage in a fresh isolated worker process, with hash-bound evidence",
    args_conflicts_with_subcommands = true,
    after_help = "Exit codes: 0 success, 1 run failed (failure.json says why; for doctor, a warning applies), 2 bad usage or input, \
                  3 verification failed, 4 compare or gate found a regression, 5 gate not sure, 128+N interrupted by signal N.\n\
                  Set STAGEBENCH_LOG=debug to see worker spawns, pids and handshakes on stderr."
)]
pub struct Cli {
    #[command(subcommand)]
    pub(super) command: Option<Command>,
    #[command(flatten)]
    pub(super) run: RunArgs,
    /// Everything given, for the chosen mode to read its own flags from.
    #[arg(skip)]
    pub(super) matches: clap::ArgMatches,
}

#[derive(Subcommand, Debug)]
pub(super) enum Command {
    /// Recompute every hash binding of a run directory; exit 0 if all hold.
    Verify {
        /// The run or campaign directory (holding report.json, or a killed
        /// run's failure.json).
        dir: PathBuf,
    },
    /// Compare two runs stage by stage, or two campaigns step, stage and span
    /// by span: ratio of medians with its interval, a rank test, and a
    /// verdict per figure. Exits 4 when a figure of B regressed beyond the
    /// threshold against A.
    Compare {
        /// The run (or campaign) to compare against (the baseline, A).
        run_a: PathBuf,
        /// The run (or campaign) compared (B): ratios are B / A.
        run_b: PathBuf,
        /// Percent by which B may be significantly slower before it counts as regressed.
        #[arg(long, default_value_t = 5.0)]
        threshold: f64,
        /// Compare (and gate on) only this figure; repeat for several. Any
        /// figure the runs record: wall_s, cpu_s, peak_rss_bytes (the
        /// default three), or a stage's own, such as span:NAME_s; a name
        /// ending in `*` is a pattern (`span:*`: every span's seconds both
        /// runs record).
        #[arg(long = "figure", value_name = "NAME")]
        figures: Vec<String>,
        /// Compare runs whose declarations differ (mode, dataset, a stage's
        /// definition); the output is then marked as not comparable.
        #[arg(long)]
        allow_incomparable: bool,
        /// Refuse runs that ran on a different CPU model or core count, or
        /// whose stages ran with different thread settings or runtime
        /// versions (without it they are compared and their rows marked).
        #[arg(long)]
        strict: bool,
        /// Also write the table (compare.txt) and a forest plot of the ratios
        /// (forest.svg, forest.png) into this new directory.
        #[arg(long, value_name = "DIR")]
        output: Option<PathBuf>,
        /// Also write the comparison as one offline page: the rows with
        /// their intervals and, per stage with spans, a differential flame
        /// graph coloured where a stack's self time per trial differs
        /// significantly. The file must not exist.
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
    },
    /// Redraw what a run, campaign, bisection or gate derives from its
    /// report.json alone (summary.md, report.html and its plots), byte for
    /// byte as it was written, after checking every other binding; and write
    /// exports of a run (any) or of a gate (--export-bmf,
    /// --export-github-benchmark).
    Render {
        /// The run, campaign, bisection or gate directory (holding report.json).
        dir: PathBuf,
        #[command(flatten)]
        export: ExportArgs,
    },
    /// Write DIR/README.md and DIR/index.html: a table of every run directory
    /// below DIR, newest first, from their reports (the page with each
    /// definition's history drawn and a link to each run's report.html).
    /// Rerunning it with nothing new changes nothing.
    Dashboard {
        /// The directory holding run directories (at any depth).
        dir: PathBuf,
    },
    /// When did a figure shift? Every run below DIR that shares one
    /// definition, in commit order, and each stage's figures' change points
    /// (e-divisive means, a permutation test at p < 0.01): median before and
    /// after, the change with its interval, the first run after it. Writes
    /// DIR/history.md. Example: `coordinator history nightly/ --figure wall_s`
    History {
        /// The directory holding run directories (at any depth).
        dir: PathBuf,
        /// Read only this figure; repeat for several. As compare's
        /// --figure: wall_s, a span's span:NAME_s, a pattern ending in `*`.
        /// [default: wall_s, cpu_s, tree_peak_bytes, span:*]
        #[arg(long = "figure", value_name = "NAME")]
        figures: Vec<String>,
        /// The fewest runs either side of a change point (at least 2).
        #[arg(long, default_value_t = report::stats::MIN_SEGMENT)]
        min_segment: usize,
    },
    /// Which commit made it slower? Probes a first-parent history from
    /// --good to --bad, each probe a run (the flags after `--`) in its own
    /// `git worktree` of the commit, classified by the rank test against
    /// both endpoints (more rounds when it cannot tell, `unclear` at
    /// --max-rounds); ends with the first bad commit, the figure's change
    /// with its interval, and the stage that changed most. Rerun into the
    /// same --output to resume. Example: `coordinator bisect --good v1.0
    /// --bad main --output bisect/ -- --mode trials --trials 5 --command
    /// 'python3 train.py'`
    Bisect {
        /// A commit (any revision git names) where the figure was good.
        #[arg(long, value_name = "REV")]
        good: String,
        /// A later commit where it is bad; --good must be on its first-parent history.
        #[arg(long, value_name = "REV")]
        bad: String,
        /// The git repository. [default: the current directory's]
        #[arg(long, value_name = "DIR")]
        repo: Option<PathBuf>,
        /// A shell command run in each probe's worktree before its run; a
        /// commit whose build fails is skipped, its log kept in builds/.
        #[arg(long, value_name = "CMD")]
        build: Option<String>,
        /// The most seconds one build may take: a build still running then
        /// is killed (its process group), its log kept, and the commit
        /// skipped. [default: none, with --build, a hanging build waits]
        #[arg(long, value_name = "SECONDS")]
        build_timeout: Option<String>,
        /// The figure that got worse: wall_s, cpu_s, peak_rss_bytes, or a
        /// stage's own (span:NAME_s); its stage is the one whose figure
        /// changed most between the endpoints.
        #[arg(long, value_name = "NAME", default_value = "wall_s")]
        figure: String,
        /// Percent by which a probe must be significantly slower than good to count as bad.
        #[arg(long, default_value_t = 5.0)]
        threshold: f64,
        /// The most rounds one probe gets before it is `unclear`. [default: four times the run's rounds: two pairs of windows]
        #[arg(long, value_name = "N")]
        max_rounds: Option<u32>,
        /// The bisection's directory: new, or one this bisection left unfinished (it resumes).
        #[arg(long, value_name = "DIR")]
        output: PathBuf,
        /// A run's own flags, after `--`: what each probe runs.
        #[arg(last = true, required = true, value_name = "RUN FLAGS")]
        flags: Vec<String>,
    },
    /// Is this pull request slower? Builds --base (by default its merge
    /// base with --head) and --head once each in their own worktrees, runs
    /// them in interleaved windows (base, head, head, base; then the
    /// reverse), one run of the flags after `--` per letter, and judges
    /// each gated figure from couples of runs that ran side by side:
    /// regressed (exit 4), improved or same (0), or not sure (5; 0 with
    /// --not-sure pass). Writes DIR/comment.md for the pull request.
    /// Example: `coordinator gate --base origin/main --head HEAD --output
    /// gate/ -- --mode trials --trials 4 --command 'python3 train.py'`
    Gate(super::gate::GateArgs),
    /// Print the machine's state as a run would record it (environment.json)
    /// and what in it makes measurements hard to trust, without running
    /// anything. Exits 1 when a warning applies, 0 otherwise.
    Doctor {
        /// Judge the machine for this many workers at once.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
        workers: u32,
    },
    /// Run a scripted cold/resume campaign: each step's trials run in fresh
    /// processes (the built-in recipe as a `--mode recipe` run, or the
    /// file's `[[pipeline]]` commands against its scratch directory);
    /// writes report.json (verifiable), summary.md with the judgment, and
    /// plots/campaign.{svg,png}.
    Campaign {
        /// The campaign (TOML). [default: scripts/campaigns/cold-resume.toml, embedded]
        file: Option<PathBuf>,
        /// Campaign directory to create; it must not exist. [default: campaigns/<UTC time>-<name>/]
        #[arg(long, value_name = "DIR")]
        output: Option<PathBuf>,
        /// The worker binary. [default: `worker` next to this coordinator]
        #[arg(long, value_name = "PATH", env = "STAGEBENCH_WORKER_BIN")]
        worker_bin: Option<PathBuf>,
        /// Write the campaign as a Chrome Trace Event file (a track per
        /// step, each trial and its runs); the path must not exist.
        #[arg(long, value_name = "FILE")]
        export_trace: Option<PathBuf>,
    },
    /// Make or freeze datasets in the CMI "Detect Sleep States" format.
    #[command(subcommand)]
    Dataset(DatasetCommand),
}

#[derive(Subcommand, Debug)]
pub(super) enum DatasetCommand {
    /// Write a deterministic synthetic cohort in the raw CMI format
    /// (train_series.parquet, train_events.csv) into a new directory.
    Generate {
        /// Directory to create; it must not exist.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// tiny (8 series, for tests), small (36, the built-in default) or seed (277, ~128 M rows).
        #[arg(long, default_value = "small")]
        scale: Scale,
        #[arg(long, default_value_t = 0)]
        seed: u64,
    },
    /// Turn raw files into a frozen dataset: one parquet per series, a copy of
    /// the events, and frozen.json with the split, every hash and a fingerprint.
    Freeze {
        /// The raw series parquet (series_id, step, timestamp, anglez, enmo).
        #[arg(long, value_name = "FILE")]
        series: PathBuf,
        /// The raw events CSV (series_id, night, event, step, timestamp).
        #[arg(long, value_name = "FILE")]
        events: PathBuf,
        /// Directory to create; it must not exist.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
    /// Print where the built-in cohort is (made once, into $STAGEBENCH_CACHE
    /// or ~/.cache/stagebench), checked: for your own program to read it.
    Path,
    /// Read and decode every training series of a frozen dataset in this one
    /// process, with no checks, extraction or writes: the floor under cold
    /// preparation. Prints the times.
    Scan {
        /// A frozen dataset. [default: the built-in small cohort]
        #[arg(long, value_name = "DIR")]
        data: Option<PathBuf>,
    },
}

/// Results in the forms other tools read; each path must not exist.
#[derive(Args, Debug, Default)]
pub(super) struct ExportArgs {
    /// Write the results as JSON (per stage: figures, trials, statistics).
    #[arg(long, value_name = "FILE")]
    pub(super) export_json: Option<PathBuf>,
    /// Write the results as CSV (per stage: wall-time statistics, CPU, peak RSS).
    #[arg(long, value_name = "FILE")]
    pub(super) export_csv: Option<PathBuf>,
    /// Write the results as a Markdown table (the run's summary.md).
    #[arg(long, value_name = "FILE")]
    pub(super) export_markdown: Option<PathBuf>,
    /// Write the run as a Chrome Trace Event file (open it in Perfetto or
    /// chrome://tracing): a track per worker process, its start-up and jobs.
    #[arg(long, value_name = "FILE")]
    pub(super) export_trace: Option<PathBuf>,
    /// Write the run as Snakemake's benchmark file (tab-separated, its
    /// extended columns): one row per stage and counted trial, `NA` where
    /// stagebench measures nothing.
    #[arg(long, value_name = "FILE")]
    pub(super) export_benchmark_tsv: Option<PathBuf>,
    /// Write each stage's spans as collapsed stacks (flamegraph.pl, inferno
    /// and speedscope read them): `stage;outer;inner COUNT`, the count the
    /// stack's self time per trial in microseconds; with --sample, each
    /// sampled stage's Python stacks too, under `STAGE [sampled];LANE`, a
    /// sample counted as 1/RATE s.
    #[arg(long, value_name = "FILE")]
    pub(super) export_folded: Option<PathBuf>,
    /// Write the results in Bencher's Metric Format: per benchmark (STAGE,
    /// STAGE/span:NAME) and measure, the value with its bounds (over
    /// trials, the median and its interval).
    #[arg(long, value_name = "FILE")]
    pub(super) export_bmf: Option<PathBuf>,
    /// Write the results as github-action-benchmark's customSmallerIsBetter
    /// JSON, the same benchmarks, `extra` the trials and the report's digest.
    #[arg(long, value_name = "FILE")]
    pub(super) export_github_benchmark: Option<PathBuf>,
}

impl ExportArgs {
    pub(super) fn exports(self) -> Exports {
        use report::render::export::Format;
        Exports::new([
            (Format::Json, self.export_json),
            (Format::Csv, self.export_csv),
            (Format::Markdown, self.export_markdown),
            (Format::Trace, self.export_trace),
            (Format::BenchmarkTsv, self.export_benchmark_tsv),
            (Format::Folded, self.export_folded),
            (Format::Bmf, self.export_bmf),
            (Format::GithubBenchmark, self.export_github_benchmark),
        ])
    }
}

#[derive(Args, Debug)]
pub(super) struct RunArgs {
    // The modes, their help and the default are the registry's
    // (`modes::MODES`), set in `super::grammar`.
    /// What to run.
    #[arg(long)]
    pub(super) mode: String,
    /// A stage to run, in order; repeatable. Diagnostic stages: noop, sleep:MS,
    /// spin:MS, alloc:MIB, write:KIB, fail, crash.
    /// [default: noop sleep:200 spin:300 alloc:256 write:64]
    #[arg(long = "stage", value_name = "NAME[:ARG]")]
    pub(super) stages: Vec<String>,
    /// The loader's shuffle seed, for the recipe's stages (see `--mode`'s
    /// modes that read it). [default: 0]
    #[arg(long)]
    pub(super) seed: Option<u64>,
    /// Kill the worker of STAGE with SIGKILL as soon as it reports FRACTION
    /// (0 to 1) of its progress, e.g. cache_prepare:0.5 or train:0.75: a
    /// declared interruption (the run then fails, leaving what it left).
    /// A --command stage's whole process tree is killed instead, and may
    /// also be killed at STAGE:span:NAME:N (right after its Nth span NAME
    /// ends) or STAGE:after:SECONDS.
    #[arg(long, value_name = "STAGE:FRACTION")]
    pub(super) kill_at: Option<KillAt>,
    /// Run a command line (through `sh -c`) as a stage, inside a fresh worker,
    /// measured with its whole process tree; repeatable. Runs after --stage stages.
    #[arg(long = "command", value_name = "CMD ARGS")]
    pub(super) commands: Vec<String>,
    /// Time a Python callable of a --command stage or a --prepare program
    /// without editing it: MODULE:QUALNAME[=NAME] (a function, method,
    /// classmethod, staticmethod, property, generator or coroutine function,
    /// or __main__:NAME in the script itself; each call a span NAME, by
    /// default the qualname's last part, with its distribution and self
    /// time; a class or a C type's method is refused with the reason), or
    /// preset:torch (loader waits, optimizer steps, backward passes, and
    /// the input-bound verdict) or preset:keras (Keras 3's train, eval and
    /// predict steps with the first apart, loader produce and wait, and the
    /// verdict); repeatable.
    #[arg(long = "span", value_name = "MODULE:QUALNAME[=NAME]", value_parser = crate::plan::parse_span)]
    pub(super) spans: Vec<protocol::SpanTarget>,
    /// Sample every Python process of each --command stage's tree (the
    /// program and its children, DataLoader workers among them) at RATE
    /// per second with py-spy, attached from outside with no change to the
    /// program: running stacks per process kind as a bound artifact, the
    /// top functions by self and inclusive share with intervals over the
    /// trials, and a flame graph. [default RATE when given alone: 100]
    #[arg(long, value_name = "RATE", num_args = 0..=1, default_missing_value = "100",
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub(super) sample: Option<u32>,
    /// A name for the matching --command (in order) in reports. [default: command]
    #[arg(long = "name", value_name = "NAME")]
    pub(super) names: Vec<String>,
    /// What a stage's leftover processes do: `warn` (the worker kills them,
    /// the report records them, summary.md and stderr say so) or `fail` (the
    /// stage fails with `leaked_processes` in failure.json).
    #[arg(long, value_enum, default_value = "warn", value_name = "POLICY")]
    pub(super) leaks: LeakPolicy,
    /// Milliseconds between two samples of each stage's process tree (its
    /// peak memory by the `sampled` method), from 1 to 10000.
    #[arg(long, value_name = "MS", default_value_t = crate::plan::DEFAULT_SAMPLE_MS,
          value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub(super) sample_ms: u32,
    /// With --span preset:keras: after the command's last fit, time N
    /// train_on_batch steps of its model on one batch already in memory
    /// (the first apart), then restore every variable: the resident
    /// reference from which the input-bound verdict is estimated on
    /// TensorFlow, whose graph pulls batches where Python sees no wait.
    #[arg(long, value_name = "N", default_value_t = 0,
          value_parser = clap::value_parser!(u32).range(0..=100_000))]
    pub(super) keras_resident: u32,
    /// Give a command without --span no helper: its Python then reports no
    /// interpreter, libraries, devices or source hashes, and starts about
    /// 20 to 40 ms sooner per process (docs/evidence.md).
    #[arg(long)]
    pub(super) no_provenance: bool,
    /// Files of your own code whose SHA-256 the declaration binds, by their
    /// path relative to the working directory (a glob, quoted, such as
    /// 'src/**/*.py'; repeatable), read before anything runs; compare marks
    /// two runs whose sources differ. Without it, a Python command's
    /// imported files under the working directory are hashed at its exit.
    #[arg(long = "sources", value_name = "GLOB")]
    pub(super) sources: Vec<String>,
    /// A directory your command (or --prepare program) reads; repeatable.
    /// Each is digested before anything runs, bound into the declaration by
    /// content (never by path), and digested again after the last phase: a
    /// change fails the run (inputs_changed).
    #[arg(long = "inputs", value_name = "DIR")]
    pub(super) inputs: Vec<std::path::PathBuf>,
    /// Scan your program over a parameter: NAME=V1,V2,... or NAME=A..B[:STEP]
    /// (integers); repeat it for a grid. `{NAME}` in the --command (trials)
    /// or --prepare (cold-prep) becomes the value, STAGEBENCH_PARAM_NAME is
    /// set, and each value is its own stages (`trial[NAME=V]`), with a
    /// recommendation.
    #[arg(long = "param", value_name = "NAME=VALUES")]
    pub(super) params: Vec<report::modes::params::Param>,
    /// Allow a --param that no command spells as {NAME}: the program reads
    /// STAGEBENCH_PARAM_NAME.
    #[arg(long, requires = "params")]
    pub(super) param_env_only: bool,
    /// Allow a --param grid of more than 64 points.
    #[arg(long, requires = "params")]
    pub(super) yes_many: bool,
    /// The seed of a scan's shuffled order of values in each round.
    /// [default: from the clock; recorded in the declaration]
    #[arg(long, requires = "params")]
    pub(super) param_seed: Option<u64>,
    /// How many worker processes run at once (1 to 1024). A preparation
    /// also takes an increasing list, e.g. 1,2,4,8: a workers sweep, the
    /// parallel preparation once per count.
    #[arg(long, value_name = "N[,N...]", default_value = "1", value_parser = worker_counts)]
    pub(super) workers: WorkerCounts,
    /// `stage`, a fresh worker process per stage; `run`, one process runs
    /// every stage (for the modes that read it; the others choose their own
    /// processes). [default: stage]
    #[arg(long, value_enum)]
    pub(super) isolation: Option<Isolation>,
    /// Run directory to create; it must not exist. [default: runs/<UTC time>-<mode>/]
    #[arg(long, value_name = "DIR")]
    pub(super) output: Option<PathBuf>,
    /// A frozen dataset (see `coordinator dataset freeze`). [default: the built-in
    /// small synthetic cohort, generated once into $STAGEBENCH_CACHE or ~/.cache/stagebench]
    #[arg(long, value_name = "DIR")]
    pub(super) data: Option<PathBuf>,
    /// Fail a stage that runs longer than this many seconds.
    #[arg(long, value_name = "SECS", value_parser = positive_secs)]
    pub(super) stage_timeout: Option<Duration>,
    /// Fail a worker that has not completed its handshake after this many seconds.
    #[arg(long, value_name = "SECS", default_value = "20", value_parser = positive_secs)]
    pub(super) connect_timeout: Duration,
    /// Seconds between SIGTERM and SIGKILL when workers must be stopped.
    #[arg(long, value_name = "SECS", default_value = "2", value_parser = positive_secs)]
    pub(super) grace: Duration,
    /// How workers start: `local` child processes, or `slurm`, the tasks of
    /// one `srun` job step per phase (workers then connect over TCP).
    #[arg(long, value_enum, default_value = "local")]
    pub(super) launcher: LauncherArg,
    /// Listen for workers on this TCP address (HOST:PORT; port 0 picks one).
    /// [default: a private Unix socket; 127.0.0.1:0 with --launcher slurm]
    #[arg(long, value_name = "ADDR")]
    pub(super) listen: Option<String>,
    /// --launcher slurm: the partition to run in (srun --partition).
    #[arg(long, value_name = "NAME")]
    pub(super) partition: Option<String>,
    /// --launcher slurm: the job step's time limit (srun --time, e.g. 10 or 1:00:00).
    #[arg(long, value_name = "TIME")]
    pub(super) time_limit: Option<String>,
    /// --launcher slurm: one more argument for srun, passed as given; repeatable.
    #[arg(long = "srun-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub(super) srun_args: Vec<String>,
    /// The worker binary. [default: `worker` next to this coordinator]
    #[arg(long, value_name = "PATH", env = "STAGEBENCH_WORKER_BIN")]
    pub(super) worker_bin: Option<PathBuf>,
    /// Print nothing while running; only the final summary.
    #[arg(long, short)]
    pub(super) quiet: bool,
    #[command(flatten)]
    pub(super) export: ExportArgs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum LauncherArg {
    Local,
    Slurm,
}

/// `--workers`: one count, or a list of them for a cold-prep sweep.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct WorkerCounts(pub(super) Vec<u32>);

/// Counts from 1 to 1024, strictly increasing, none missing between commas.
pub(super) fn worker_counts(s: &str) -> Result<WorkerCounts, Refusal> {
    let counts = s
        .split(',')
        .map(|part| {
            let part = part.trim();
            if part.is_empty() {
                return Err(Refusal(format!(
                    "'{s}' has an empty count; give N or an increasing list like 1,2,4,8"
                )));
            }
            match part.parse::<u32>() {
                Ok(n @ 1..=1024) => Ok(n),
                _ => Err(Refusal(format!("'{part}' is not a count of workers from 1 to 1024"))),
            }
        })
        .collect::<Result<Vec<u32>, Refusal>>()?;
    if let Some(w) = counts.windows(2).find(|w| w[1] <= w[0]) {
        let what = if w[1] == w[0] { "repeats" } else { "is not increasing" };
        return Err(Refusal(format!(
            "'{s}' {what} ({} after {}); give an increasing list like 1,2,4,8",
            w[1], w[0]
        )));
    }
    Ok(WorkerCounts(counts))
}
