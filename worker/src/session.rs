//! One worker's connection: handshake, then assignments until shutdown.

use crate::measure::Mark;
use crate::stages::{self, Reporter, StageContext, StageError};
use protocol::exit::worker as code;
use protocol::frame::{self, FrameError};
use protocol::stream::{Endpoint, Stream};
use protocol::{FromWorker, Hello, JobId, PROTOCOL_VERSION, Stage, ToWorker, Token, WorkerId};
use std::io::{BufReader, BufWriter, Write};
use std::path::PathBuf;

/// What the coordinator handed this worker through its environment.
pub struct Launch {
    pub endpoint: Endpoint,
    pub token: Token,
    pub rank: WorkerId,
    /// Launched by a cluster scheduler: the parent is the scheduler's step
    /// daemon, not the coordinator.
    pub scheduled: bool,
}

/// Reads the launch environment, connects, and serves until shutdown.
/// Returns the process exit code.
pub fn run_from_env() -> u8 {
    let launch = match launch_from_env() {
        Ok(l) => l,
        Err(msg) => {
            eprintln!("worker: {msg}");
            return code::SETUP;
        }
    };
    if !launch.scheduled && !die_with_parent() {
        eprintln!("worker: the coordinator that launched it has already exited");
        return code::PROTOCOL;
    }
    // Orphans of a stage's processes come back to this worker, to be
    // measured, killed if still alive, and reaped (see `tree`).
    if let Err(e) = crate::tree::become_subreaper() {
        eprintln!("worker: cannot become a subreaper ({e}); orphans of a stage escape it");
    }
    let rank = launch.rank;
    match serve(launch) {
        Ok(()) => code::SUCCESS,
        Err(WorkerError::Refused(reason)) => {
            eprintln!("{rank}: handshake refused by the coordinator: {reason}");
            code::REFUSED
        }
        Err(WorkerError::Connect(e)) => {
            eprintln!("{rank}: cannot connect to the coordinator: {e}");
            code::SETUP
        }
        Err(WorkerError::Frame(e)) => {
            eprintln!("{rank}: connection to the coordinator failed: {e}");
            code::PROTOCOL
        }
        Err(WorkerError::Unexpected(what)) => {
            eprintln!("{rank}: protocol violation by the coordinator: {what}");
            code::PROTOCOL
        }
    }
}

/// Why this process's environment is not a launch by a coordinator.
#[derive(Debug, thiserror::Error)]
enum BadLaunch {
    #[error("{0} is not set: workers are started by the coordinator, not by hand")]
    NotSet(&'static str),
    #[error(
        "neither {} nor {} is set: workers are started by the coordinator, not by hand",
        protocol::env::ADDR,
        protocol::env::SOCKET
    )]
    NoEndpoint,
    #[error("cannot read {}: {source}", protocol::env::TOKEN_FILE)]
    TokenFile { source: std::io::Error },
    #[error("{} is not 64 hex digits", protocol::env::TOKEN)]
    Token,
    #[error("{0} is not a whole number")]
    NotANumber(&'static str),
    #[error(
        "{} {procid} is not below {} {ntasks}",
        protocol::env::SLURM_PROCID,
        protocol::env::SLURM_NTASKS
    )]
    TaskOutOfStep { procid: u32, ntasks: u32 },
    #[error("rank out of range")]
    RankOverflow,
}

fn launch_from_env() -> Result<Launch, BadLaunch> {
    use protocol::env;
    let get = |name: &str| std::env::var(name).ok();
    let var = |name: &'static str| get(name).ok_or(BadLaunch::NotSet(name));
    let endpoint = Endpoint::from_env().ok_or(BadLaunch::NoEndpoint)?;
    let token_hex = match (get(env::TOKEN), get(env::TOKEN_FILE)) {
        (Some(t), _) => t,
        (None, Some(file)) => std::fs::read_to_string(&file)
            .map_err(|source| BadLaunch::TokenFile { source })?
            .trim()
            .to_string(),
        (None, None) => var(env::TOKEN)?,
    };
    let token = Token::from_hex(&token_hex).ok_or(BadLaunch::Token)?;
    let number = |name: &'static str| -> Result<u32, BadLaunch> {
        var(name)?.parse().map_err(|_| BadLaunch::NotANumber(name))
    };
    // A Slurm task: rank = base + its index in the job step.
    let scheduled = get(env::RANK).is_none() && get(env::RANK_BASE).is_some();
    let rank = if scheduled {
        let (base, procid) = (number(env::RANK_BASE)?, number(env::SLURM_PROCID)?);
        let ntasks = number(env::SLURM_NTASKS)?;
        if procid >= ntasks {
            return Err(BadLaunch::TaskOutOfStep { procid, ntasks });
        }
        base.checked_add(procid).ok_or(BadLaunch::RankOverflow)?
    } else {
        number(env::RANK)?
    };
    Ok(Launch { endpoint, token, rank: WorkerId(rank), scheduled })
}

/// Asks the kernel to kill this worker if the coordinator dies, so no worker
/// outlives a coordinator that was itself killed with SIGKILL. False when
/// the coordinator is already gone: the worker must not start.
fn die_with_parent() -> bool {
    #[cfg(target_os = "linux")]
    {
        // SIGTERM, not SIGKILL: the worker ends its stage's tree first (see
        // `tree::start_watcher`), then exits.
        let _ = nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGTERM);
        if let Ok(expected) = std::env::var(protocol::env::PARENT_PID) {
            // The parent may have died before the line above took effect.
            return expected.parse::<i32>().ok() == Some(nix::unistd::getppid().as_raw());
        }
    }
    true
}

#[derive(Debug)]
enum WorkerError {
    Connect(std::io::Error),
    Refused(String),
    Frame(FrameError),
    Unexpected(String),
}

impl From<FrameError> for WorkerError {
    fn from(e: FrameError) -> Self {
        WorkerError::Frame(e)
    }
}

struct Wire {
    reader: BufReader<Stream>,
    writer: BufWriter<Stream>,
}

impl Wire {
    fn send(&mut self, msg: &FromWorker) -> Result<(), FrameError> {
        frame::write(&mut self.writer, msg)
    }
    fn recv(&mut self) -> Result<ToWorker, FrameError> {
        frame::read(&mut self.reader)
    }
}

fn serve(launch: Launch) -> Result<(), WorkerError> {
    let stream = Stream::connect(&launch.endpoint).map_err(WorkerError::Connect)?;
    let mut wire = Wire {
        reader: BufReader::new(stream.try_clone().map_err(WorkerError::Connect)?),
        writer: BufWriter::new(stream),
    };
    wire.send(&FromWorker::Hello(Hello {
        protocol_version: PROTOCOL_VERSION,
        worker_version: protocol::program::VERSION.to_string(),
        build_fingerprint: protocol::program::SOURCE_SHA256.to_string(),
        pid: std::process::id(),
        rank: launch.rank,
        host_sha256: protocol::host_sha256(&launch.token, &this_host()),
        token: launch.token,
    }))?;
    let run_dir = match wire.recv()? {
        ToWorker::Welcome { run_dir } => PathBuf::from(run_dir),
        ToWorker::Refused { reason } => return Err(WorkerError::Refused(reason)),
        other => return Err(WorkerError::Unexpected(format!("{other:?} before Welcome"))),
    };
    let sample_ms = crate::tree::sample_interval_ms();
    // The helper every command gets, written now, outside every stage's
    // measurement; a stage writes its own if this could not be.
    let _helper = crate::stages::autospan::share(
        &run_dir,
        &format!("worker-{}-{}", launch.rank.0, std::process::id()),
    )
    .ok();
    // A preparation program started for this worker's items, kept across
    // them until `Finish` (see `stages::item`).
    let mut items = stages::item::Items::new(sample_ms);
    loop {
        match wire.recv()? {
            ToWorker::Assign { job, stage, kill, spans, sample } => {
                let item = matches!(stage, Stage::PrepareItem { .. });
                // Read before the measurement starts: its `git` is no part of the stage.
                // An item's program is measured at `Finish`, where its runtime goes.
                let mut runtime = match item {
                    true if items.running() => protocol::Runtime::default(),
                    true => {
                        items.runtime = crate::runtime::before(&stage);
                        protocol::Runtime::default()
                    }
                    false => crate::runtime::before(&stage),
                };
                let mut reporter = WireReporter::new(&mut wire, job);
                let mut ctx = StageContext {
                    run_dir: run_dir.clone(),
                    job_tag: format!("job-{}-{}", job.0, stage.name()),
                    reporter: &mut reporter,
                    kill,
                    items: &mut items,
                    spans: &spans,
                    sample: sample.as_ref(),
                    sampling: None,
                };
                // A failed stage's slices are placed from here (a measured
                // one's from its own start, below).
                let began = std::time::Instant::now();
                let measured = if item {
                    // An item is timed by the clock alone: its program's tree
                    // is sampled for the program's whole life and measured
                    // at `Finish`; its CPU is the worker's once it is reaped.
                    let start = Mark::instant_now();
                    let result = stages::run(&stage, &mut ctx);
                    let end = Mark::instant_now();
                    result.map(|figures| (start, end, figures, protocol::TreeUsage::default()))
                } else {
                    let sampler = crate::tree::Sampler::start(sample_ms);
                    let start = Mark::now();
                    let result = stages::run(&stage, &mut ctx);
                    let end = Mark::instant_now();
                    // py-spy beside a sampled command: after the wall time,
                    // before the tree's CPU is read (it takes its own out).
                    let result = match ctx.sampling.take() {
                        Some(s) => {
                            let done =
                                s.finish(&ctx.run_dir, &ctx.job_tag, ctx.reporter, result.is_ok());
                            result.and_then(|figures| done.map(|()| figures))
                        }
                        None => result,
                    };
                    // Wall time ends with the stage; CPU is read once every
                    // descendant is reaped, so orphans' CPU counts too.
                    let contained = crate::tree::contain(sampler);
                    let end = end.with_usage_now();
                    result.map(|figures| (start, end, figures, contained.tree))
                };
                if let Some(e) = reporter.error.take() {
                    return Err(e.into());
                }
                let reply = match measured {
                    Ok((start, end, mut figures, tree)) => {
                        // A stage that did untimed setup is measured from its end.
                        let from = match reporter.setup_done {
                            Some(mark) => {
                                figures.push(protocol::Figure {
                                    name: "setup_s".into(),
                                    value: start.seconds_to(&mark),
                                });
                                mark
                            }
                            None => start,
                        };
                        let mut measurement = match item {
                            true => protocol::Measurement {
                                wall_ns: end.instant().duration_since(from.instant()).as_nanos()
                                    as u64,
                                ..Default::default()
                            },
                            false => from.until(&end),
                        };
                        measurement.slices = reporter.take_slices(from.instant());
                        if reporter.slices_dropped > 0 {
                            figures.push(protocol::Figure {
                                name: "slices_dropped".into(),
                                value: reporter.slices_dropped as f64,
                            });
                        }
                        measurement.figures = figures;
                        measurement.tree = tree;
                        measurement.spans_not_found = std::mem::take(&mut reporter.spans_not_found);
                        measurement.spans = std::mem::take(&mut reporter.spans);
                        measurement.span_warnings = std::mem::take(&mut reporter.span_warnings);
                        measurement.command_stages = std::mem::take(&mut reporter.command_stages);
                        if let Some(python) = reporter.python.take() {
                            python.fill(&mut runtime);
                        }
                        measurement.runtime = runtime;
                        FromWorker::Measurement { job, measurement }
                    }
                    Err(StageError::KilledAtPoint(at)) => {
                        FromWorker::KilledAtPoint { job, at, slices: reporter.take_slices(began) }
                    }
                    Err(e) => FromWorker::StageFailed {
                        job,
                        error: e.to_string(),
                        slices: reporter.take_slices(began),
                        stderr_tail: reporter.stderr_tail.take(),
                    },
                };
                wire.send(&reply)?;
            }
            ToWorker::Finish => {
                // The program's close, measured like a stage: its tree is
                // contained (leaks named and killed), and its CPU lands in
                // this worker's once it is reaped.
                let start = Mark::now();
                let (measurement, error, artifacts) = match items.finish(&run_dir) {
                    Some(closed) => {
                        let mut m = start.until(&Mark::now());
                        m.tree = closed.contained.tree;
                        m.spans_not_found = closed.spans_not_found;
                        m.span_warnings = closed.span_warnings;
                        m.io = closed.io;
                        m.runtime = closed.runtime;
                        (m, closed.result.err().map(|e| e.to_string()), closed.artifacts)
                    }
                    None => (start.until(&Mark::now()), None, Vec::new()),
                };
                // py-spy's usage, which this worker's exit status carries.
                let beside = crate::measure::beside();
                wire.send(&FromWorker::Finished { measurement, error, artifacts, beside })?;
            }
            ToWorker::Shutdown => {
                let _ = wire.writer.flush();
                return Ok(());
            }
            other => return Err(WorkerError::Unexpected(format!("{other:?} after Welcome"))),
        }
    }
}

fn this_host() -> String {
    nix::unistd::gethostname().map(|h| h.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Sends a stage's reports as frames; remembers the first send error so the
/// stage itself need not care.
struct WireReporter<'a> {
    wire: &'a mut Wire,
    job: JobId,
    error: Option<FrameError>,
    /// Where the stage said its untimed setup ended.
    setup_done: Option<Mark>,
    /// Slices the stage reported, the first `MAX_SLICES`, and how many more.
    slices: Vec<(String, std::time::Instant, f64, bool)>,
    slices_dropped: u64,
    /// `--span` targets the stage's command never matched.
    spans_not_found: Vec<String>,
    /// The stage's spans, and what to know to read them.
    spans: Vec<protocol::SpanSummary>,
    span_warnings: Vec<String>,
    command_stages: Vec<protocol::CommandStage>,
    /// What the Python helper said, if it said anything.
    python: Option<crate::stages::PythonRuntime>,
    /// The end of a failed command's stderr, when it was kept.
    stderr_tail: Option<String>,
}

impl<'a> WireReporter<'a> {
    fn new(wire: &'a mut Wire, job: JobId) -> WireReporter<'a> {
        WireReporter {
            wire,
            job,
            error: None,
            setup_done: None,
            slices: Vec::new(),
            slices_dropped: 0,
            spans_not_found: Vec::new(),
            spans: Vec::new(),
            span_warnings: Vec::new(),
            command_stages: Vec::new(),
            python: None,
            stderr_tail: None,
        }
    }

    /// The slices so far, from the measured start `from` (one that began
    /// in the untimed setup starts at 0).
    fn take_slices(&mut self, from: std::time::Instant) -> Vec<protocol::Slice> {
        std::mem::take(&mut self.slices)
            .into_iter()
            .map(|(name, at, seconds, beside)| protocol::Slice {
                name,
                start_ns: at.saturating_duration_since(from).as_nanos() as u64,
                dur_ns: (seconds.max(0.0) * 1e9) as u64,
                beside,
            })
            .collect()
    }

    fn send(&mut self, msg: FromWorker) {
        if self.error.is_none() {
            if let Err(e) = self.wire.send(&msg) {
                self.error = Some(e);
            }
        }
    }
}

impl Reporter for WireReporter<'_> {
    fn progress(&mut self, done: u64, total: u64) {
        self.send(FromWorker::Progress { job: self.job, done, total });
    }
    fn artifact(&mut self, relative_path: &str, sha256: [u8; 32]) {
        self.send(FromWorker::Artifact { job: self.job, path: relative_path.to_string(), sha256 });
    }
    fn setup_done(&mut self) {
        self.setup_done = Some(Mark::now());
    }
    fn spans_not_found(&mut self, targets: Vec<String>) {
        self.spans_not_found = targets;
    }
    fn spans(&mut self, spans: Vec<protocol::SpanSummary>, warnings: Vec<String>) {
        self.spans = spans;
        self.span_warnings = warnings;
    }
    fn python_runtime(&mut self, runtime: crate::stages::PythonRuntime) {
        self.python = Some(runtime);
    }
    fn command_stages(&mut self, stages: Vec<protocol::CommandStage>) {
        self.command_stages = stages;
    }
    fn stderr_tail(&mut self, text: String) {
        self.stderr_tail = Some(text);
    }
    fn slice(&mut self, name: &str, start: std::time::Instant, seconds: f64, beside: bool) {
        if self.slices.len() < protocol::MAX_SLICES {
            self.slices.push((name.to_string(), start, seconds, beside));
        } else {
            self.slices_dropped += 1;
        }
    }
}
