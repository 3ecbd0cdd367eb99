//! The command line: flags parsed here, resolved into a [`RunPlan`], handed
//! to [`run::execute`] or [`verify`]. Exit codes: [`protocol::exit::coordinator`].

use crate::error::RunError;
use crate::fmt::mib;
use crate::modes::{ModePlan, Report, RunPlan};
use crate::plan::{self, Isolation, Mode, Settings};
use crate::render::export::Exports;
use crate::run::{self, RunSummary};
use crate::verify;
use clap::{Args, Parser, Subcommand};
use protocol::exit::coordinator as code;
use recipe::generate::Scale;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Parser, Debug)]
#[command(
    name = "coordinator",
    version,
    about = "Profile a pipeline stage by stage, each stage in a fresh isolated worker process, with hash-bound evidence",
    args_conflicts_with_subcommands = true,
    after_help = "Exit codes: 0 success, 1 run failed (failure.json says why), 2 bad usage or input, \
                  3 verification failed, 128+N interrupted by signal N.\n\
                  Set STAGEBENCH_LOG=debug to see worker spawns, pids and handshakes on stderr."
)]
pub struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Recompute every hash binding of a run directory; exit 0 if all hold.
    Verify {
        /// The run directory (holding report.json).
        dir: PathBuf,
    },
    /// Compare two runs stage by stage: ratio of medians with a bootstrap
    /// interval, a rank test, and a verdict per figure. Exits 4 when a figure
    /// of B regressed beyond the threshold against A.
    Compare {
        run_a: PathBuf,
        run_b: PathBuf,
        /// Percent by which B may be significantly slower before it counts as regressed.
        #[arg(long, default_value_t = 5.0)]
        threshold: f64,
        /// Compare (and gate on) only this figure; repeat for several. Any
        /// figure the runs record: wall_s, cpu_s, peak_rss_bytes (the
        /// default three), or a stage's own, such as span:NAME_s.
        #[arg(long = "figure", value_name = "NAME")]
        figures: Vec<String>,
        /// Compare runs whose declarations differ (mode, dataset, a stage's
        /// definition); the output is then marked as not comparable.
        #[arg(long)]
        allow_incomparable: bool,
        /// Also write the table (compare.txt) and a forest plot of the ratios
        /// (forest.svg, forest.png) into this new directory.
        #[arg(long, value_name = "DIR")]
        output: Option<PathBuf>,
    },
    /// Redraw a run's summary.md from its report.json alone (after checking
    /// every other binding), byte for byte as the run wrote it.
    Render {
        /// The run directory (holding report.json).
        dir: PathBuf,
        #[command(flatten)]
        export: ExportArgs,
    },
    /// Write DIR/README.md: a table of every run directory below DIR, newest
    /// first, from their reports. Rerunning it with nothing new changes nothing.
    Dashboard {
        /// The directory holding run directories (at any depth).
        dir: PathBuf,
    },
    /// Run a scripted cold/resume campaign: each step a full `--mode recipe`
    /// run in fresh processes, repeated; writes report.json (verifiable),
    /// summary.md with the judgment, and plots/campaign.{svg,png}.
    Campaign {
        /// The campaign (TOML). [default: scripts/campaigns/cold-resume.toml, embedded]
        file: Option<PathBuf>,
        /// Campaign directory to create; it must not exist. [default: campaigns/<UTC time>-<name>/]
        #[arg(long, value_name = "DIR")]
        output: Option<PathBuf>,
        /// The worker binary. [default: `worker` next to this coordinator]
        #[arg(long, value_name = "PATH", env = "STAGEBENCH_WORKER_BIN")]
        worker_bin: Option<PathBuf>,
    },
    /// Make or freeze datasets in the CMI "Detect Sleep States" format.
    #[command(subcommand)]
    Dataset(DatasetCommand),
}

#[derive(Subcommand, Debug)]
enum DatasetCommand {
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
struct ExportArgs {
    /// Write the results as JSON (per stage: figures, trials, statistics).
    #[arg(long, value_name = "FILE")]
    export_json: Option<PathBuf>,
    /// Write the results as CSV (per stage: wall-time statistics, CPU, peak RSS).
    #[arg(long, value_name = "FILE")]
    export_csv: Option<PathBuf>,
    /// Write the results as a Markdown table (the run's summary.md).
    #[arg(long, value_name = "FILE")]
    export_markdown: Option<PathBuf>,
}

impl ExportArgs {
    fn exports(self) -> Exports {
        Exports::new(self.export_json, self.export_csv, self.export_markdown)
    }
}

#[derive(Args, Debug)]
struct RunArgs {
    /// What to run.
    #[arg(long, value_enum, default_value = "diagnostic")]
    mode: Mode,
    /// A stage to run, in order; repeatable. Diagnostic stages: noop, sleep:MS,
    /// spin:MS, alloc:MIB, write:KIB, fail, crash.
    /// [default: noop sleep:200 spin:300 alloc:256 write:64]
    #[arg(long = "stage", value_name = "NAME[:ARG]")]
    stages: Vec<String>,
    /// Trials mode: counted trials of every stage, each in a fresh process.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(2..=100_000))]
    trials: u32,
    /// Trials mode: warm-up trials of every stage, recorded but not counted.
    #[arg(long, default_value_t = 1)]
    warmup: u32,
    /// Profile mode: the loader's shuffle seed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Recipe mode: the state directory that keeps the recipe's artifacts
    /// (cache, normalizer, context index, checkpoints) across runs. Created
    /// if missing; an existing one must be empty or a state directory.
    #[arg(long, value_name = "DIR")]
    state: Option<PathBuf>,
    /// Recipe mode: on resume, `load` a complete normalizer and context
    /// index, or `recompute` them from their inputs.
    #[arg(long, value_enum, value_name = "POLICY")]
    resume_policy: Option<PolicyArg>,
    /// Recipe mode: epochs to train (a checkpoint after each).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    epochs: Option<u32>,
    /// Kill the worker of STAGE with SIGKILL as soon as it reports FRACTION
    /// (0 to 1) of its progress, e.g. cache_prepare:0.5 or train:0.75: a
    /// declared interruption (the run then fails, leaving what it left).
    #[arg(long, value_name = "STAGE:FRACTION")]
    kill_at: Option<crate::interrupt::KillAt>,
    /// Run a command line (through `sh -c`) as a stage, inside a fresh worker,
    /// measured with its whole process tree; repeatable. Runs after --stage stages.
    #[arg(long = "command", value_name = "CMD ARGS")]
    commands: Vec<String>,
    /// A name for the matching --command (in order) in reports. [default: command]
    #[arg(long = "name", value_name = "NAME")]
    names: Vec<String>,
    /// How many worker processes run at once.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
    workers: u32,
    /// `stage`: a fresh worker process per stage; `run`: one process runs every stage.
    #[arg(long, value_enum, default_value = "stage")]
    isolation: Isolation,
    /// Run directory to create; it must not exist. [default: runs/<UTC time>-<mode>/]
    #[arg(long, value_name = "DIR")]
    output: Option<PathBuf>,
    /// A frozen dataset (see `coordinator dataset freeze`). [default: the built-in
    /// small synthetic cohort, generated once into $STAGEBENCH_CACHE or ~/.cache/stagebench]
    #[arg(long, value_name = "DIR")]
    data: Option<PathBuf>,
    /// Fail a stage that runs longer than this many seconds.
    #[arg(long, value_name = "SECS", value_parser = positive_secs)]
    stage_timeout: Option<Duration>,
    /// Fail a worker that has not completed its handshake after this many seconds.
    #[arg(long, value_name = "SECS", default_value = "20", value_parser = positive_secs)]
    connect_timeout: Duration,
    /// Seconds between SIGTERM and SIGKILL when workers must be stopped.
    #[arg(long, value_name = "SECS", default_value = "2", value_parser = positive_secs)]
    grace: Duration,
    /// How workers start: `local` child processes, or `slurm`, the tasks of
    /// one `srun` job step per phase (workers then connect over TCP).
    #[arg(long, value_enum, default_value = "local")]
    launcher: LauncherArg,
    /// Listen for workers on this TCP address (HOST:PORT; port 0 picks one).
    /// [default: a private Unix socket; 127.0.0.1:0 with --launcher slurm]
    #[arg(long, value_name = "ADDR")]
    listen: Option<String>,
    /// --launcher slurm: the partition to run in (srun --partition).
    #[arg(long, value_name = "NAME")]
    partition: Option<String>,
    /// --launcher slurm: the job step's time limit (srun --time, e.g. 10 or 1:00:00).
    #[arg(long, value_name = "TIME")]
    time_limit: Option<String>,
    /// --launcher slurm: one more argument for srun, passed as given; repeatable.
    #[arg(long = "srun-arg", value_name = "ARG", allow_hyphen_values = true)]
    srun_args: Vec<String>,
    /// The worker binary. [default: `worker` next to this coordinator]
    #[arg(long, value_name = "PATH", env = "STAGEBENCH_WORKER_BIN")]
    worker_bin: Option<PathBuf>,
    /// Print nothing while running; only the final summary.
    #[arg(long, short)]
    quiet: bool,
    #[command(flatten)]
    export: ExportArgs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum PolicyArg {
    Load,
    Recompute,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum LauncherArg {
    Local,
    Slurm,
}

fn positive_secs(s: &str) -> Result<Duration, String> {
    let v: f64 = s.parse().map_err(|_| format!("'{s}' is not a number of seconds"))?;
    if !(v.is_finite() && v > 0.0 && v < 1e9) {
        return Err(format!("'{s}' must be a positive number of seconds"));
    }
    Ok(Duration::from_secs_f64(v))
}

pub fn main() -> ExitCode {
    init_logging();
    let mut cli = Cli::parse();
    match cli.command {
        Some(Command::Dataset(cmd)) => {
            let result = match cmd {
                DatasetCommand::Generate { out, scale, seed } => {
                    crate::dataset::generate_cmd(&out, scale, seed)
                }
                DatasetCommand::Freeze { series, events, out } => {
                    crate::dataset::freeze_cmd(&series, &events, &out)
                }
                DatasetCommand::Scan { data } => crate::dataset::scan_cmd(data.as_deref()),
            };
            say(result)
        }
        Some(Command::Compare { run_a, run_b, threshold, figures, allow_incomparable, output }) => {
            if let Some(out) = output.as_ref().filter(|o| o.symlink_metadata().is_ok()) {
                eprintln!("error: output '{}' already exists", out.display());
                return ExitCode::from(code::USAGE);
            }
            let figures = match figures.is_empty() {
                true => crate::compare::DEFAULT_FIGURES.iter().map(|f| f.to_string()).collect(),
                false => figures,
            };
            match crate::compare::compare(&run_a, &run_b, threshold, allow_incomparable, &figures) {
                Ok(c) => {
                    print!("{}", crate::compare::render(&c, threshold));
                    if let Some(out) = &output {
                        if let Err(e) = crate::compare::write_output(out, &c, threshold) {
                            eprintln!("error: {e}");
                            return ExitCode::from(code::USAGE);
                        }
                        println!(
                            "wrote {}/ ({})",
                            out.display(),
                            crate::compare::OUTPUT_FILES.join(", ")
                        );
                    }
                    if c.rows.iter().any(|r| r.regressed) {
                        ExitCode::from(code::REGRESSION)
                    } else {
                        ExitCode::from(code::SUCCESS)
                    }
                }
                Err(e @ crate::compare::CompareError::Unverified { .. }) => {
                    eprintln!("error: {e}");
                    ExitCode::from(code::VERIFY_FAILED)
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::from(code::USAGE)
                }
            }
        }
        Some(Command::Render { dir, export }) => {
            let exports = export.exports();
            if let Err(e) = exports.check() {
                eprintln!("error: {e}");
                return ExitCode::from(code::USAGE);
            }
            match verify::render(&dir) {
                Ok((report, paths)) => {
                    for path in paths {
                        println!("rendered {}", path.display());
                    }
                    match report {
                        Some(report) => write_exports(&exports, &report),
                        None if exports.0.is_empty() => ExitCode::from(code::SUCCESS),
                        None => {
                            eprintln!("error: exports apply to a run, not to a campaign");
                            ExitCode::from(code::USAGE)
                        }
                    }
                }
                Err(e) => {
                    eprintln!("error: rendering '{}' failed: {e}", dir.display());
                    ExitCode::from(code::VERIFY_FAILED)
                }
            }
        }
        Some(Command::Dashboard { dir }) => say(crate::dashboard::write(&dir)),
        Some(Command::Campaign { file, output, worker_bin }) => {
            let worker_bin = match worker_bin.map(Ok).unwrap_or_else(default_worker_bin) {
                Ok(w) => w,
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(code::USAGE);
                }
            };
            use crate::campaign::CampaignError as E;
            match crate::campaign::run(file.as_deref(), output.as_deref(), worker_bin) {
                Ok(done) => {
                    println!("campaign {}:", done.report.name);
                    for line in &done.report.judgment {
                        println!("  {line}");
                    }
                    println!(
                        "evidence: {}/ (report.json, summary.md, plots/campaign.svg and .png; every run under runs/)",
                        done.dir.display()
                    );
                    ExitCode::from(code::SUCCESS)
                }
                Err(E::Usage(e)) => {
                    eprintln!("error: {e}");
                    ExitCode::from(code::USAGE)
                }
                Err(E::Failed(e)) => {
                    eprintln!("error: campaign failed: {e}");
                    ExitCode::from(code::RUN_FAILED)
                }
                Err(E::Interrupted(signal)) => {
                    eprintln!("error: campaign interrupted by signal {signal}; no report written");
                    ExitCode::from(code::INTERRUPTED_BASE + signal as u8)
                }
            }
        }
        Some(Command::Verify { dir }) => match verify::verify(&dir) {
            Ok(v) => {
                println!("verified {}: {v}", dir.display());
                ExitCode::from(code::SUCCESS)
            }
            Err(e) => {
                eprintln!("error: verification of '{}' failed: {e}", dir.display());
                ExitCode::from(code::VERIFY_FAILED)
            }
        },
        None => {
            let exports = std::mem::take(&mut cli.run.export).exports();
            let plan = match exports.check().and_then(|()| resolve(cli.run)) {
                Ok(p) => p,
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(code::USAGE);
                }
            };
            match run::execute(&plan) {
                Ok(summary) => {
                    print_summary(&summary);
                    write_exports(&exports, &summary.report)
                }
                Err(failure) => {
                    let e = failure.error;
                    match failure.failure_file {
                        Some(f) => eprintln!("error: {e} (recorded in {})", f.display()),
                        None => eprintln!("error: {e}"),
                    }
                    ExitCode::from(match e {
                        RunError::Usage(_) => code::USAGE,
                        RunError::Failed { .. } => code::RUN_FAILED,
                        RunError::Interrupted { signal } => code::INTERRUPTED_BASE + signal as u8,
                    })
                }
            }
        }
    }
}

/// Warnings only, and none from the SVG rasteriser: a bar narrower than a
/// pixel makes it warn about a zero-width rectangle it then rightly skips.
const QUIET_LIBRARIES: &str = "warn,usvg=error,resvg=error,tiny_skia=error";

/// A subcommand's one line on stdout, or its error on stderr with the usage code.
fn say(result: Result<String, String>) -> ExitCode {
    match result {
        Ok(line) => {
            println!("{line}");
            ExitCode::from(code::SUCCESS)
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(code::USAGE)
        }
    }
}

/// Writes the exports of a finished run; any failure is a usage error (the
/// run's evidence is complete either way).
fn write_exports(exports: &Exports, report: &Report) -> ExitCode {
    match exports.write(report) {
        Ok(paths) => {
            for p in paths {
                println!("exported {}", p.display());
            }
            ExitCode::from(code::SUCCESS)
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(code::USAGE)
        }
    }
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("STAGEBENCH_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(QUIET_LIBRARIES));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .without_time()
        .try_init();
}

fn resolve(args: RunArgs) -> Result<RunPlan, String> {
    let recipe_mode = matches!(args.mode, Mode::ColdPrep | Mode::Profile | Mode::Recipe);
    if args.mode != Mode::Recipe {
        let recipe_only = [
            ("--state", args.state.is_some()),
            ("--resume-policy", args.resume_policy.is_some()),
            ("--epochs", args.epochs.is_some()),
        ];
        if let Some((flag, _)) = recipe_only.iter().find(|(_, g)| *g) {
            return Err(format!("{flag} applies to --mode recipe"));
        }
    } else if args.state.is_none() {
        return Err("--mode recipe needs --state DIR".into());
    }
    if recipe_mode && !(args.stages.is_empty() && args.commands.is_empty()) {
        return Err(format!(
            "--stage and --command apply to --mode diagnostic and --mode trials, not {}",
            args.mode.as_str()
        ));
    }
    if args.names.len() > args.commands.len() {
        return Err(format!(
            "{} --name given for {} --command",
            args.names.len(),
            args.commands.len()
        ));
    }
    let spellings: Vec<String> = if args.stages.is_empty() && args.commands.is_empty() {
        plan::DEFAULT_DIAGNOSTIC_STAGES.iter().map(|s| s.to_string()).collect()
    } else {
        args.stages
    };
    let mut stages = spellings
        .iter()
        .map(|s| match crate::modes::profile::recipe_stage(s, args.seed) {
            Some(_) if args.mode != Mode::Trials => Err(format!(
                "--stage {s}: recipe stages repeat in --mode trials (--mode profile runs them all once)"
            )),
            Some(stage) => Ok(stage),
            None => s.parse().map_err(|e| format!("--stage {s}: {e}")),
        })
        .collect::<Result<Vec<_>, _>>()?;
    for (i, line) in args.commands.iter().enumerate() {
        if line.trim().is_empty() {
            return Err("--command needs a command line".into());
        }
        let name = args.names.get(i).cloned().unwrap_or_else(|| "command".into());
        if name.trim().is_empty() {
            return Err("--name must not be empty".into());
        }
        stages.push(protocol::Stage::Command { name, line: line.clone() });
    }
    let stages = plan::keyed(stages);
    let slurm_only = [
        ("--partition", args.partition.is_some()),
        ("--time-limit", args.time_limit.is_some()),
        ("--srun-arg", !args.srun_args.is_empty()),
    ];
    let launcher = match args.launcher {
        LauncherArg::Local => {
            if let Some((flag, _)) = slurm_only.iter().find(|(_, given)| *given) {
                return Err(format!("{flag} applies to --launcher slurm"));
            }
            crate::launch::Kind::Local
        }
        LauncherArg::Slurm => crate::launch::Kind::Slurm(crate::launch::SlurmOptions {
            partition: args.partition,
            time_limit: args.time_limit,
            extra: args.srun_args,
        }),
    };
    let listen = match (&launcher, args.listen) {
        (_, Some(addr)) => {
            // Refused now, before a run directory exists, not mid-run.
            std::net::TcpListener::bind(addr.as_str())
                .map_err(|e| format!("--listen {addr}: cannot listen there: {e}"))?;
            Some(addr)
        }
        (crate::launch::Kind::Slurm(_), None) => Some("127.0.0.1:0".to_string()),
        (crate::launch::Kind::Local, None) => None,
    };
    if let Some(k) = &args.kill_at {
        let known: Vec<String> = match args.mode {
            Mode::Recipe => crate::modes::recipe::keys().map(str::to_string).collect(),
            _ => stages.iter().map(|s| s.key.clone()).collect(),
        };
        if !known.contains(&k.stage) {
            return Err(format!(
                "--kill-at {}: no stage of this run is called that (stages: {})",
                k.stage,
                known.join(", ")
            ));
        }
    }
    let worker_bin = match args.worker_bin {
        Some(p) => p,
        None => default_worker_bin()?,
    };
    let mode = match args.mode {
        Mode::Diagnostic => ModePlan::Diagnostic(crate::modes::diagnostic::Plan { stages }),
        Mode::ColdPrep => ModePlan::ColdPrep,
        Mode::Trials => ModePlan::Trials(crate::modes::trials::Plan {
            stages,
            trials: args.trials,
            warmup: args.warmup,
            seed: args.seed,
        }),
        Mode::Profile => ModePlan::Profile(crate::modes::profile::Plan { seed: args.seed }),
        Mode::Recipe => {
            // Claimed (created, marked) last: a refused command line leaves nothing.
            let dir = args.state.as_deref().expect("checked above: recipe has --state");
            ModePlan::Recipe(crate::modes::recipe::Plan {
                state: recipe::state::claim(dir)?,
                policy: match args.resume_policy.unwrap_or(PolicyArg::Load) {
                    PolicyArg::Load => protocol::ResumePolicy::Load,
                    PolicyArg::Recompute => protocol::ResumePolicy::Recompute,
                },
                epochs: args.epochs.unwrap_or(1),
                seed: args.seed,
            })
        }
    };
    Ok(RunPlan {
        settings: Settings {
            isolation: args.isolation,
            workers: args.workers,
            connect_timeout: args.connect_timeout,
            stage_timeout: args.stage_timeout,
            grace: args.grace,
            worker_bin,
            launcher,
            listen,
            output: args.output,
            data: args.data,
            quiet: args.quiet,
            kill_at: args.kill_at,
        },
        mode,
    })
}

/// `worker` next to the running coordinator binary.
fn default_worker_bin() -> Result<PathBuf, String> {
    let me = std::env::current_exe().map_err(|e| format!("cannot locate this program: {e}"))?;
    Ok(me.with_file_name("worker"))
}

fn print_summary(s: &RunSummary) {
    let r = &s.report;
    println!(
        "stagebench {} run: {} stage(s) in {} worker process(es), {:.3} s",
        r.mode(),
        r.stages.len(),
        r.workers.len(),
        r.run_wall_s
    );
    println!(
        "  {:<36} {:>6} {:>10} {:>10} {:>12}",
        "stage", "worker", "wall s", "cpu s", "peak RSS"
    );
    let mut rows: Vec<_> = r.stages.iter().collect();
    rows.sort_by_key(|(_, st)| st.order);
    for (key, st) in rows {
        let worker = match st.worker {
            Some(w) => w.to_string(),
            None => format!("{}x", st.processes),
        };
        println!(
            "  {:<36} {:>6} {:>10.3} {:>10.3} {:>12}",
            key,
            worker,
            st.wall_s,
            st.cpu_s,
            mib(st.peak_rss_bytes)
        );
    }
    if let Some(prep) = r.cold_prep() {
        let (c, serial, parallel) = (&prep.counts, &prep.serial, &prep.parallel);
        println!(
            "  training series {}, frames {} ({} valid); serial {:.3} s, {} processes {:.3} s: speedup {:.2}x, efficiency {:.0}%, load imbalance {:.2}; caches identical: {}",
            c.train_series,
            c.frames,
            c.valid_frames,
            serial.wall_s,
            parallel.workers.len(),
            parallel.wall_s,
            prep.speedup,
            100.0 * prep.parallel_efficiency,
            prep.load_imbalance,
            prep.caches_identical
        );
    }
    if let Some(trials) = r.trials() {
        print_trials(r, trials);
    }
    println!(
        "evidence: {}/ (declaration.json, environment.json, report.json; summary.md and plots/ derived from it)",
        s.dir.display()
    );
}

/// Per stage: the median wall time with its interval, the spread, the
/// outliers, how many trials would resolve a 1% difference, and warnings.
fn print_trials(
    r: &Report,
    trials: &std::collections::BTreeMap<String, crate::rundir::report::TrialSet>,
) {
    let mut keys: Vec<&String> = trials.keys().collect();
    keys.sort_by_key(|k| r.stages.get(*k).map(|s| s.order).unwrap_or(usize::MAX));
    // Warnings every stage shares (machine load) are printed once, below.
    let shared = crate::rundir::report::shared_warnings(trials);
    println!(
        "  {:<24} {:>4} {:>11} {:>23} {:>10} {:>10} {:>8} {:>10}",
        "trials (wall)", "n", "median", "95% CI of median", "stdev", "MAD", "outliers", "n for 1%"
    );
    for k in keys {
        let t = &trials[k];
        let w = &t.summary["wall_s"];
        println!(
            "  {:<24} {:>4} {:>11} {:>11}–{:<11} {:>10} {:>10} {:>8} {:>10}",
            k,
            t.n,
            crate::fmt::duration(w.median),
            crate::fmt::duration(w.median_ci95[0]),
            crate::fmt::duration(w.median_ci95[1]),
            crate::fmt::duration(w.stdev),
            crate::fmt::duration(w.mad),
            w.outliers.len(),
            t.trials_for_1pct.map(|n| n.to_string()).unwrap_or_else(|| "-".into())
        );
        for warning in t.warnings.iter().filter(|w| !shared.contains(w)) {
            println!("    warning: {warning}");
        }
    }
    for warning in shared {
        println!("  warning: {warning}");
    }
    if let crate::modes::Section::Trials(t) = &r.section {
        println!("  outliers: {}; warm-up trials are recorded, not counted", t.outlier_rule);
    }
}
