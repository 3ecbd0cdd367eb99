//! One run, start to finish: run directory, declaration, environment,
//! supervised workers, then report.json or failure.json.

use crate::dispatch::{DispatchConfig, DispatchOutcome, dispatch};
use crate::gate::Gate;
use crate::plan::RunPlan;
use crate::process::LocalLauncher;
use crate::rundir::report::{self, ArtifactRecord, ProcessRecord, Report, StageRecord};
use crate::rundir::{self, RunDir, declaration::Declaration, environment, failure::Failure};
use crate::supervisor::{Job, JobResult};
use evidence::canonical;
use protocol::{JobId, Token};
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use tokio::net::UnixListener;
use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;

/// Why a run produced no report.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Bad usage or input; nothing was measured.
    #[error("{0}")]
    Usage(String),
    /// The run failed; failure.json says why.
    #[error("{message}")]
    Failed {
        /// Key of the stage involved, if any.
        stage: Option<String>,
        /// Rank of the worker involved, if any.
        worker: Option<u32>,
        /// Stable reason for failure.json (see [`Failure::reason`]).
        reason: &'static str,
        message: String,
    },
    /// A signal stopped the run.
    #[error("interrupted by signal {signal}; workers stopped, no report written")]
    Interrupted { signal: i32 },
}

/// A run that produced no report, and where its failure.json is (if one was written).
#[derive(Debug)]
pub struct RunFailure {
    pub error: RunError,
    pub failure_file: Option<PathBuf>,
}

impl From<RunError> for RunFailure {
    fn from(error: RunError) -> Self {
        RunFailure { error, failure_file: None }
    }
}

/// A completed run.
pub struct RunSummary {
    pub dir: PathBuf,
    pub report: Report,
}

/// The evidence written so far, for failure.json.
struct Bound {
    declaration_sha256: Option<String>,
    environment_sha256: Option<String>,
}

pub fn execute(plan: &RunPlan) -> Result<RunSummary, RunFailure> {
    if !plan.worker_bin.is_file() {
        return Err(RunFailure::from(RunError::Usage(format!(
            "worker binary not found at '{}': build the workspace (`cargo build --release`) or pass --worker-bin",
            plan.worker_bin.display()
        ))));
    }
    let (worker_sha, _) = canonical::file_sha256(&plan.worker_bin).map_err(|e| {
        RunError::Usage(format!("cannot read worker binary '{}': {e}", plan.worker_bin.display()))
    })?;
    let dir = match &plan.output {
        Some(p) => RunDir::create(p),
        None => RunDir::create_default(Path::new("runs"), plan.mode.as_str()),
    }
    .map_err(|e| RunError::Usage(e.to_string()))?;

    let mut bound = Bound { declaration_sha256: None, environment_sha256: None };
    match run_in(&dir, plan, worker_sha, &mut bound) {
        Ok(report) => Ok(RunSummary { dir: dir.path().to_path_buf(), report }),
        Err(error) => {
            let failure_file = record_failure(&dir, plan, &bound, &error);
            Err(RunFailure { error, failure_file })
        }
    }
}

/// Writes failure.json; returns its path, or None if even that failed.
fn record_failure(dir: &RunDir, plan: &RunPlan, bound: &Bound, e: &RunError) -> Option<PathBuf> {
    let (stage, worker, reason) = match e {
        RunError::Failed { stage, worker, reason, .. } => (stage.clone(), *worker, *reason),
        RunError::Interrupted { .. } => (None, None, "interrupted"),
        RunError::Usage(_) => (None, None, "usage"),
    };
    let f = Failure {
        schema: rundir::failure::SCHEMA.into(),
        schema_version: rundir::failure::SCHEMA_VERSION,
        mode: plan.mode.as_str().into(),
        stage,
        worker,
        reason: reason.into(),
        message: e.to_string(),
        declaration_sha256: bound.declaration_sha256.clone(),
        environment_sha256: bound.environment_sha256.clone(),
    };
    match dir.write_evidence(rundir::FAILURE, &canonical::to_bytes(&f)) {
        Ok(_) => Some(dir.path().join(rundir::FAILURE)),
        Err(w) => {
            tracing::error!("{w}");
            None
        }
    }
}

fn fail(
    stage: Option<String>,
    worker: Option<u32>,
    reason: &'static str,
    message: String,
) -> RunError {
    RunError::Failed { stage, worker, reason, message }
}

fn run_in(
    dir: &RunDir,
    plan: &RunPlan,
    worker_sha: String,
    bound: &mut Bound,
) -> Result<Report, RunError> {
    let internal = |what: &str, e: &dyn std::fmt::Display| {
        fail(None, None, "internal", format!("{what}: {e}"))
    };
    let declaration = Declaration::from_plan(plan, worker_sha);
    let decl_sha = dir
        .write_evidence(rundir::DECLARATION, &canonical::to_bytes(&declaration))
        .map_err(|e| internal("writing the declaration", &e))?;
    bound.declaration_sha256 = Some(decl_sha.clone());
    let env = environment::capture();
    let env_sha = dir
        .write_evidence(rundir::ENVIRONMENT, &canonical::to_bytes(&env))
        .map_err(|e| internal("writing the environment", &e))?;
    bound.environment_sha256 = Some(env_sha.clone());

    let socket_dir = tempfile::Builder::new()
        .prefix("stagebench-")
        .tempdir()
        .map_err(|e| internal("creating the socket directory", &e))?;
    std::fs::set_permissions(socket_dir.path(), std::fs::Permissions::from_mode(0o700))
        .map_err(|e| internal("securing the socket directory", &e))?;
    let socket = socket_dir.path().join("coordinator.sock");
    tracing::debug!(socket_dir = %socket_dir.path().display(), "socket directory created");
    let token = new_token().map_err(|e| internal("drawing the run token", &e))?;

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| internal("starting the async runtime", &e))?;
    let run_dir_abs =
        std::fs::canonicalize(dir.path()).unwrap_or_else(|_| dir.path().to_path_buf());
    let (outcome, interrupted) = runtime
        .block_on(supervise_run(plan, &socket, token, &run_dir_abs))
        .map_err(|e| internal("setting up the run", &e))?;
    drop(runtime);
    drop(socket_dir);

    if let Some(signal) = interrupted {
        return Err(RunError::Interrupted { signal });
    }
    if let Some(msg) = outcome.launch_error {
        return Err(fail(None, None, "internal", msg));
    }
    if let Some((rank, end)) = &outcome.first_failure {
        return Err(fail(
            end.stage().map(str::to_string),
            Some(rank.0),
            end.reason(),
            end.describe(*rank),
        ));
    }
    build_report(dir, plan, &outcome, decl_sha, env_sha)
}

/// Runs the workers; returns their outcome and the signal that stopped them, if any.
async fn supervise_run(
    plan: &RunPlan,
    socket: &Path,
    token: Token,
    run_dir: &Path,
) -> std::io::Result<(DispatchOutcome, Option<i32>)> {
    let mut sigint = signal(SignalKind::interrupt())?;
    let mut sigterm = signal(SignalKind::terminate())?;
    let listener = UnixListener::bind(socket)?;
    let gate =
        Gate::new(token.clone(), run_dir.to_string_lossy().into_owned(), plan.connect_timeout);
    let gate_task = tokio::spawn(gate.clone().serve(listener));

    let cancel = CancellationToken::new();
    let signal_cancel = cancel.clone();
    let signal_task = tokio::spawn(async move {
        let signo = tokio::select! {
            _ = sigint.recv() => libc::SIGINT,
            _ = sigterm.recv() => libc::SIGTERM,
        };
        tracing::debug!(signal = signo, "interrupted; stopping workers");
        signal_cancel.cancel();
        signo
    });

    let (events_tx, events_rx) = tokio::sync::mpsc::unbounded_channel();
    let printer =
        tokio::spawn(crate::progress::print_events(events_rx, plan.quiet, plan.stages.len()));
    let jobs = plan
        .stages
        .iter()
        .enumerate()
        .map(|(i, s)| Job {
            id: JobId(i as u32),
            order: i,
            key: s.key.clone(),
            stage: s.stage.clone(),
        })
        .collect();
    let launcher =
        LocalLauncher { worker_bin: plan.worker_bin.clone(), socket: socket.to_path_buf(), token };
    let cfg = DispatchConfig {
        workers: plan.workers,
        jobs_per_process: plan.isolation.jobs_per_process(),
        connect_timeout: plan.connect_timeout,
        stage_timeout: plan.stage_timeout,
        grace: plan.grace,
    };
    let outcome = dispatch(jobs, launcher, gate.clone(), cfg, cancel, events_tx).await;
    gate_task.abort();
    let _ = printer.await;
    let interrupted = if signal_task.is_finished() {
        signal_task.await.ok()
    } else {
        signal_task.abort();
        None
    };
    if gate.refused() > 0 {
        tracing::warn!("{} connection(s) were refused during this run", gate.refused());
    }
    Ok((outcome, interrupted))
}

fn new_token() -> Result<Token, getrandom::Error> {
    let mut t = [0u8; 32];
    getrandom::fill(&mut t)?;
    Ok(Token(t))
}

fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// Re-hashes every artifact the workers reported, then assembles the report.
fn build_report(
    dir: &RunDir,
    plan: &RunPlan,
    outcome: &DispatchOutcome,
    declaration_sha256: String,
    environment_sha256: String,
) -> Result<Report, RunError> {
    let results: Vec<&JobResult> = outcome.outcomes.iter().flat_map(|o| o.jobs.iter()).collect();
    if results.len() != plan.stages.len() {
        return Err(fail(
            None,
            None,
            "internal",
            format!("{} of {} planned stages reported", results.len(), plan.stages.len()),
        ));
    }
    let mut stages = BTreeMap::new();
    let mut artifacts = Vec::new();
    for r in &results {
        let m = &r.measurement;
        stages.insert(
            r.job.key.clone(),
            StageRecord {
                stage: r.job.stage.to_string(),
                order: r.job.order,
                worker: r.worker.0,
                wall_s: secs(m.wall_ns),
                cpu_s: secs(m.user_ns + m.sys_ns),
                user_s: secs(m.user_ns),
                sys_s: secs(m.sys_ns),
                peak_rss_bytes: m.peak_rss_bytes,
                figures: m.figures.iter().map(|f| (f.name.clone(), f.value)).collect(),
            },
        );
        for (path, claimed) in &r.artifacts {
            let mismatch = |why: String| {
                fail(
                    Some(r.job.key.clone()),
                    Some(r.worker.0),
                    "artifact_mismatch",
                    format!("artifact {path} of stage {} from {}: {why}", r.job.key, r.worker),
                )
            };
            let (sha, bytes) = canonical::file_sha256(&dir.path().join(path))
                .map_err(|e| mismatch(format!("cannot be read: {e}")))?;
            if sha != hex::encode(claimed) {
                return Err(mismatch("its SHA-256 differs from what the worker reported".into()));
            }
            artifacts.push(ArtifactRecord {
                path: path.clone(),
                sha256: sha,
                bytes,
                stage: r.job.key.clone(),
            });
        }
    }
    artifacts.sort_by(|a, b| a.path.cmp(&b.path));
    if artifacts.windows(2).any(|w| w[0].path == w[1].path) {
        return Err(fail(
            None,
            None,
            "artifact_mismatch",
            "two stages reported the same artifact path".into(),
        ));
    }
    let workers = outcome
        .outcomes
        .iter()
        .map(|o| ProcessRecord {
            rank: o.rank.0,
            stages: o.jobs.iter().map(|j| j.job.key.clone()).collect(),
            wall_s: o.exit.wall.as_secs_f64(),
            cpu_s: secs(o.exit.user_ns + o.exit.sys_ns),
            user_s: secs(o.exit.user_ns),
            sys_s: secs(o.exit.sys_ns),
            peak_rss_bytes: o.exit.peak_rss_bytes,
            exit: o.exit.kind.to_string(),
        })
        .collect();
    let report = Report {
        schema: report::SCHEMA.into(),
        schema_version: report::SCHEMA_VERSION,
        mode: plan.mode.as_str().into(),
        isolation: plan.isolation.as_str().into(),
        declaration_sha256,
        environment_sha256,
        stages,
        workers,
        artifacts,
        run_wall_s: outcome.wall.as_secs_f64(),
    };
    let bytes = report::seal(&report);
    dir.write_evidence(rundir::REPORT, &bytes)
        .map_err(|e| fail(None, None, "internal", e.to_string()))?;
    Ok(report)
}
