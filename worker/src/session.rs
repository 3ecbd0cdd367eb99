//! One worker's connection: handshake, then assignments until shutdown.

use crate::measure::measured;
use crate::stages::{self, Reporter, StageContext};
use protocol::exit::worker as code;
use protocol::frame::{self, FrameError};
use protocol::{FromWorker, Hello, JobId, PROTOCOL_VERSION, ToWorker, Token, WorkerId};
use std::io::{BufReader, BufWriter, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;

/// What the coordinator handed this worker through its environment.
pub struct Launch {
    pub socket: PathBuf,
    pub token: Token,
    pub rank: WorkerId,
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
    die_with_parent();
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

fn launch_from_env() -> Result<Launch, String> {
    let var = |name: &str| {
        std::env::var(name).map_err(|_| {
            format!("{name} is not set: workers are started by the coordinator, not by hand")
        })
    };
    let socket = PathBuf::from(var(protocol::env::SOCKET)?);
    let token = Token::from_hex(&var(protocol::env::TOKEN)?)
        .ok_or_else(|| format!("{} is not 64 hex digits", protocol::env::TOKEN))?;
    let rank = var(protocol::env::RANK)?
        .parse()
        .map_err(|_| format!("{} is not a whole number", protocol::env::RANK))?;
    Ok(Launch { socket, token, rank: WorkerId(rank) })
}

/// Asks the kernel to kill this worker if the coordinator dies, so no worker
/// outlives a coordinator that was itself killed with SIGKILL.
fn die_with_parent() {
    #[cfg(target_os = "linux")]
    {
        let _ = nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL);
        if let Ok(expected) = std::env::var(protocol::env::PARENT_PID) {
            // The parent may have died before the line above took effect.
            if expected.parse::<i32>().ok() != Some(nix::unistd::getppid().as_raw()) {
                std::process::exit(code::PROTOCOL as i32);
            }
        }
    }
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
    reader: BufReader<UnixStream>,
    writer: BufWriter<UnixStream>,
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
    let stream = UnixStream::connect(&launch.socket).map_err(WorkerError::Connect)?;
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
        token: launch.token,
    }))?;
    let run_dir = match wire.recv()? {
        ToWorker::Welcome { run_dir } => PathBuf::from(run_dir),
        ToWorker::Refused { reason } => return Err(WorkerError::Refused(reason)),
        other => return Err(WorkerError::Unexpected(format!("{other:?} before Welcome"))),
    };
    loop {
        match wire.recv()? {
            ToWorker::Assign { job, stage } => {
                let mut reporter = WireReporter { wire: &mut wire, job, error: None };
                let mut ctx = StageContext {
                    run_dir: run_dir.clone(),
                    job_tag: format!("job-{}-{}", job.0, stage.name()),
                    reporter: &mut reporter,
                };
                let (result, mut measurement) = measured(|| stages::run(&stage, &mut ctx));
                if let Some(e) = reporter.error.take() {
                    return Err(e.into());
                }
                let reply = match result {
                    Ok(figures) => {
                        measurement.figures = figures;
                        FromWorker::Measurement { job, measurement }
                    }
                    Err(e) => FromWorker::StageFailed { job, error: e.to_string() },
                };
                wire.send(&reply)?;
            }
            ToWorker::Shutdown => {
                let _ = wire.writer.flush();
                return Ok(());
            }
            other => return Err(WorkerError::Unexpected(format!("{other:?} after Welcome"))),
        }
    }
}

/// Sends a stage's reports as frames; remembers the first send error so the
/// stage itself need not care.
struct WireReporter<'a> {
    wire: &'a mut Wire,
    job: JobId,
    error: Option<FrameError>,
}

impl WireReporter<'_> {
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
}
