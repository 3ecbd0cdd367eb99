//! One run, start to finish: dataset, run directory, declaration,
//! environment, phases of supervised workers, then report.json or failure.json.

use crate::dispatch::{DispatchConfig, RankCounter, dispatch};
use crate::error::{RunError, fail};
use crate::events::Event;
use crate::gate::Gate;
use crate::launch::Launcher;
use crate::modes::{self, Phase, PhaseOutcome, Report, RunPlan};
use crate::plan::{LeakPolicy, Settings};
use crate::rundir::declaration::{Declaration, Program};
use crate::rundir::{self, RunDir, environment, failure::Failure, report};
use protocol::Token;
use std::collections::BTreeMap;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// A run that produced no report, and where its failure.json is (if one was written).
#[derive(Debug)]
pub(crate) struct RunFailure {
    pub(crate) error: RunError,
    pub(crate) failure_file: Option<PathBuf>,
    /// The run's worker processes' walls (spawn to reap) summed, when any
    /// ran: what a completed run's stages add up to, start-up included.
    pub(crate) processes_wall_s: Option<f64>,
    /// What its command stages got done before it stopped: each stage's
    /// calls of its spans (the stages that completed, and the one that
    /// failed or was killed, up to then), by stage key.
    pub(crate) done: Box<Done>,
}

/// A failed run's calls per stage key (see [`RunFailure::done`]), and the
/// end of its failed command's stderr when the worker kept it (for a
/// private file, never evidence); boxed there, so a `Result` of a run
/// stays small.
#[derive(Debug, Default)]
pub(crate) struct Done {
    pub(crate) calls: BTreeMap<String, crate::rundir::spans::Calls>,
    pub(crate) stderr_tail: Option<String>,
}

impl From<RunError> for RunFailure {
    fn from(error: RunError) -> Self {
        RunFailure { error, failure_file: None, processes_wall_s: None, done: Box::default() }
    }
}

/// A completed run.
pub(crate) struct RunSummary {
    pub(crate) dir: PathBuf,
    pub(crate) report: Report,
}

/// The evidence written so far, for failure.json.
struct Bound {
    declaration_sha256: Option<String>,
    environment_sha256: Option<String>,
    processes_wall_s: Option<f64>,
    done: Done,
    /// What the run left that it did not write, kept through its failure.
    kept: Vec<String>,
}

pub(crate) fn execute(plan: &RunPlan) -> Result<RunSummary, RunFailure> {
    let usage = |m: String| RunFailure::from(RunError::Usage(m));
    let worker_bin = &plan.settings.worker_bin;
    if !worker_bin.is_file() {
        return Err(usage(format!(
            "worker binary not found at '{}': build the workspace (`cargo build --release`) or pass --worker-bin",
            worker_bin.display()
        )));
    }
    let (worker_sha, _) = evidence::file_sha256(worker_bin)
        .map_err(|e| usage(format!("cannot read worker binary '{}': {e}", worker_bin.display())))?;
    // Everything about the input is checked before the run directory exists.
    let mut prepared = plan.mode.prepare(&plan.settings)?;
    for job in prepared.phases.iter_mut().flat_map(|p| p.jobs.iter_mut()) {
        job.spans = plan.settings.spans_of(&job.key, &job.stage);
    }
    // Held until this function returns: the run's whole life.
    let _locks = prepared.locks;
    let settings = &plan.settings;
    let dir = match &settings.output {
        Some(p) => RunDir::create(p),
        None => RunDir::create_default(Path::new("runs"), plan.mode.name()),
    }
    .map_err(|e| usage(e.to_string()))?;

    let mut bound = Bound {
        declaration_sha256: None,
        environment_sha256: None,
        processes_wall_s: None,
        done: Done::default(),
        kept: Vec::new(),
    };
    let mut parameters = settings.parameters();
    parameters.extend(prepared.parameters);
    let declaration = Declaration::new(
        plan.mode.name(),
        settings.isolation.as_str(),
        settings.workers,
        prepared.stages,
        parameters,
        prepared.dataset_fingerprint,
        Program::current(worker_sha),
    );
    match run_in(&dir, plan, &declaration, prepared.phases, &mut bound) {
        Ok(report) => Ok(RunSummary { dir: dir.path().to_path_buf(), report }),
        Err(error) => {
            let (failure_file, error) = match record_failure(&dir, plan, &bound, &error) {
                Ok(path) => (Some(path), error),
                Err(why) => (None, error.unrecorded(&why.to_string())),
            };
            Err(RunFailure {
                error,
                failure_file,
                processes_wall_s: bound.processes_wall_s,
                done: Box::new(bound.done),
            })
        }
    }
}

/// A run has one ending: everything but its declaration and environment is
/// removed (a partial cache, summary.md, plots, a report.json whose
/// directory sync failed), then failure.json is written. Returns its path,
/// or why it could not be written.
fn record_failure(
    dir: &RunDir,
    plan: &RunPlan,
    bound: &Bound,
    e: &RunError,
) -> Result<PathBuf, crate::rundir::RunDirError> {
    let mut f = Failure::new(
        plan.mode.name(),
        e.recorded_as(),
        e.to_string(),
        bound.declaration_sha256.clone(),
        bound.environment_sha256.clone(),
    );
    f.kept = bound.kept.clone();
    // Sealed like a report: a killed run's failure.json is its evidence.
    dir.end_in_failure(&f, &[])
}

fn run_in(
    dir: &RunDir,
    plan: &RunPlan,
    declaration: &Declaration,
    phases: Vec<Phase>,
    bound: &mut Bound,
) -> Result<Report, RunError> {
    let internal = |what: &str, e: &dyn std::fmt::Display| {
        fail(None, None, "internal", format!("{what}: {e}"))
    };
    let decl_sha = dir
        .write_evidence(rundir::DECLARATION, &evidence::to_bytes(declaration))
        .map_err(|e| internal("writing the declaration", &e))?;
    bound.declaration_sha256 = Some(decl_sha.clone());
    let env = environment::capture(plan.settings.launcher.as_str(), dir.path());
    let env_sha = dir
        .write_evidence(rundir::ENVIRONMENT, &evidence::to_bytes(&env))
        .map_err(|e| internal("writing the environment", &e))?;
    bound.environment_sha256 = Some(env_sha.clone());

    let listen = plan.settings.listen.as_deref();
    let what = if listen.is_some() { "binding --listen" } else { "binding the socket" };
    let socket = crate::launch::bind(listen).map_err(|e| internal(what, &e))?;
    let token = new_token().map_err(|e| internal("drawing the run token", &e))?;

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| internal("starting the async runtime", &e))?;
    let run_dir_abs =
        std::fs::canonicalize(dir.path()).unwrap_or_else(|_| dir.path().to_path_buf());
    let started = std::time::Instant::now();
    let crate::launch::Bound { listener, endpoint, socket_dir } = socket;
    let (mut outcomes, interrupted) = runtime
        .block_on(supervise_run(&plan.settings, phases, listener, endpoint, token, &run_dir_abs))
        .map_err(|e| internal("setting up the run", &e))?;
    let workers = modes::process_records(&outcomes, started);
    bound.processes_wall_s = Some(workers.iter().map(|w| w.wall_s).sum());
    let run_wall = started.elapsed();
    drop(runtime);
    drop(socket_dir);

    if let Some(signal) = interrupted {
        return Err(RunError::Interrupted { signal });
    }
    bound.done = done_calls(&outcomes);
    for p in &mut outcomes {
        if let Some(e) = p.after_error.take() {
            return Err(e);
        }
        if let Some(msg) = &p.dispatch.launch_error {
            return Err(fail(None, None, "internal", msg.clone()));
        }
        if let Some((rank, end)) = &p.dispatch.first_failure {
            let mut message = end.describe(*rank);
            if let crate::supervisor::WorkerEnd::StageTimeout { item: Some(_), .. } = end {
                // A phase of items: what every other process had in hand.
                let elsewhere: Vec<String> =
                    p.dispatch
                        .outcomes
                        .iter()
                        .filter_map(|o| match &o.end {
                            crate::supervisor::WorkerEnd::Cancelled { in_flight: Some(i) }
                            | crate::supervisor::WorkerEnd::StageTimeout {
                                item: Some(i), ..
                            } if o.rank != *rank => Some(format!("{i} on {}", o.rank)),
                            _ => None,
                        })
                        .collect();
                if !elsewhere.is_empty() {
                    message.push_str(&format!("; also in flight: {}", elsewhere.join(", ")));
                }
            }
            if let crate::supervisor::WorkerEnd::StageTimeout { .. }
            | crate::supervisor::WorkerEnd::ItemTimeout { .. } = end
            {
                // A task of a job step is not our child: wait4 has no exit for it.
                let own = p.dispatch.outcomes.iter().find(|o| o.rank == *rank && !o.task_of_step);
                if let Some(o) = own {
                    message.push_str(&crate::supervisor::after_timeout(o.exit.kind));
                }
            }
            return Err(fail(end.stage().map(str::to_string), Some(rank.0), end.reason(), message));
        }
    }
    check_leaks(&outcomes, plan.settings.leaks)?;
    let inputs = crate::inputs::unchanged(&plan.settings.inputs)?;
    let hosts: std::collections::BTreeSet<&String> =
        workers.iter().filter_map(|w| w.host_sha256.as_ref()).collect();
    let hosts = hosts.len() as u32;
    let settings = &plan.settings;
    let context = modes::Context {
        dir: dir.path(),
        load_at_start: env.load_average,
        cores: env.cpu.logical_cores as u32,
        inputs: &inputs,
    };
    let mut records = modes::Records::default();
    let section = plan.mode.assemble(&context, &outcomes, &mut records)?;
    let mut report = Report {
        schema: report::SCHEMA.into(),
        schema_version: report::SCHEMA_VERSION,
        isolation: settings.isolation.as_str().into(),
        declaration_sha256: decl_sha,
        environment_sha256: env_sha,
        stages: records.stages,
        workers,
        artifacts: records.artifacts,
        run_wall_s: run_wall.as_secs_f64(),
        launcher: settings.launcher.as_str().into(),
        hosts,
        machine_warnings: environment::warnings(
            &env,
            settings.workers,
            environment::load_average(),
            // Trials warn about load per stage already.
            !plan.mode.warns_of_load_per_stage(),
        )
        .into_iter()
        // What happened under pressure inside a measured phase.
        .chain(
            outcomes
                .iter()
                .filter_map(|p| p.accept_trouble.as_ref().map(|t| t.sentence(&p.phase.key))),
        )
        .collect(),
        inputs,
        campaign_step: settings.campaign_step.clone(),
        section,
    };
    let planned = declaration.stages.len();
    if report.stages.len() != planned {
        return Err(fail(
            None,
            None,
            "internal",
            format!("{} of {planned} planned stages reported", report.stages.len()),
        ));
    }
    report.artifacts.sort_by(|a, b| a.path.cmp(&b.path));
    if report.artifacts.windows(2).any(|w| w[0].path == w[1].path) {
        return Err(fail(
            None,
            None,
            "artifact_mismatch",
            "two stages reported the same artifact path".into(),
        ));
    }
    // Derived from the report alone (verify re-renders them and compares),
    // and written before it: report.json, written last and atomically, is
    // the run's one sign that everything it names is there.
    let derived = crate::render::write_all(dir.path(), &report).map_err(|e| {
        fail(None, None, "internal", format!("rendering the summary and plots: {e}"))
    })?;
    // The walk verify makes, before the report says ok: a program that
    // wrote into the run directory fails the run, and what it wrote is kept.
    let strays = strays(dir.path(), &report, &derived)
        .map_err(|e| internal("reading back a manifest the run wrote", &e))?;
    if let Some(first) = strays.first() {
        bound.kept = strays.iter().map(|s| s.path.display().to_string()).collect();
        return Err(fail(
            None,
            None,
            "unaccounted_output",
            format!(
                "{} {}, left in the run directory by what it ran{}: kept, not deleted, and no report written",
                first.shown("the run directory"),
                first.what(),
                match strays.len() {
                    1 => String::new(),
                    n => format!(" (and {} more, listed in failure.json's kept)", n - 1),
                }
            ),
        ));
    }
    dir.write_evidence(rundir::REPORT, &report::seal(&report))
        .map_err(|e| internal("writing the report", &e))?;
    Ok(report)
}

/// Every entry of the run directory that neither the report (its evidence,
/// artifacts and the files their manifests list) nor its derived files
/// account for: what `verify` would name.
fn strays(
    dir: &Path,
    report: &Report,
    derived: &[crate::render::Rendered],
) -> std::io::Result<Vec<rundir::tree::Stray>> {
    let mut accounted = rundir::tree::Accounted::default();
    for f in [rundir::DECLARATION, rundir::ENVIRONMENT, rundir::REPORT] {
        accounted.file(f);
    }
    for a in &report.artifacts {
        accounted.file(&a.path);
        if a.kind == "manifest" {
            let base = Path::new(&a.path).parent().unwrap_or(Path::new(""));
            for rel in crate::manifest::Listing::read(&dir.join(&a.path))?.files.into_keys() {
                accounted.file(base.join(rel));
            }
        }
    }
    for f in derived {
        accounted.file(&f.path);
    }
    Ok(accounted.strays(dir, rundir::tree::MAX_STRAYS))
}

/// What the command stages got done: each completed job's calls, and the
/// failed or killed one's up to its end, by stage key; and the failed
/// one's stderr tail.
fn done_calls(outcomes: &[PhaseOutcome]) -> Done {
    use crate::rundir::spans::calls_of_slices;
    let mut done = Done::default();
    for p in outcomes {
        for r in p.results() {
            done.calls.insert(r.job.key.clone(), calls_of_slices(&r.measurement.slices));
        }
        if let Some((_, end)) = &p.dispatch.first_failure {
            if let Some(key) = end.stage() {
                done.calls.insert(key.to_string(), calls_of_slices(end.done()));
            }
            if let Some(text) = end.stderr_tail() {
                done.stderr_tail.get_or_insert_with(|| text.to_string());
            }
        }
    }
    done.calls.retain(|_, c| !c.is_empty());
    done
}

/// Runs the phases in order; returns their outcomes and the signal that
/// stopped them, if any. Stops after the first phase that failed.
async fn supervise_run(
    plan: &Settings,
    phases: Vec<Phase>,
    listener: crate::launch::BoundListener,
    endpoint: crate::launch::Endpoint,
    token: Token,
    run_dir: &Path,
) -> std::io::Result<(Vec<PhaseOutcome>, Option<i32>)> {
    let mut sigint = signal(SignalKind::interrupt())?;
    let mut sigterm = signal(SignalKind::terminate())?;
    let listener = listener.into_tokio()?;
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

    let (events_tx, events_rx) = mpsc::unbounded_channel();
    let printer = tokio::spawn(crate::progress::print_events(events_rx, plan.quiet));
    let launcher = Arc::new(Launcher {
        worker_bin: plan.worker_bin.clone(),
        endpoint,
        token,
        kind: plan.launcher.clone(),
        sample_ms: plan.sample_ms,
        keras_resident: plan.keras_resident,
        no_provenance: plan.no_provenance,
    });
    let ranks = RankCounter::default();
    let mut outcomes = Vec::new();
    let mut pending = std::collections::VecDeque::from(phases);
    while let Some(phase) = pending.pop_front() {
        if cancel.is_cancelled() {
            break;
        }
        if let Some(cache) = &phase.cache {
            std::fs::DirBuilder::new().mode(0o700).create(run_dir.join(cache))?;
        }
        // Outside every measured wall, right before the phase's first worker.
        let eviction = match phase.inputs.as_deref() {
            Some(inputs) if inputs.evict => Some(crate::pagecache::evict(&inputs.files)),
            _ => None,
        };
        tracing::debug!(key = %phase.key, jobs = phase.jobs.len(), workers = phase.workers, "phase started");
        let _ = events_tx.send(Event::PhaseStarted {
            key: phase.key.clone(),
            jobs: phase.jobs.len(),
            style: phase.progress,
        });
        let cfg = DispatchConfig {
            workers: phase.workers,
            jobs_per_process: phase.jobs_per_process,
            after_job: phase.after_job,
            connect_timeout: plan.connect_timeout,
            stage_timeout: plan.stage_timeout,
            item_timeout: phase.item_timeout,
            grace: plan.grace,
            kill_at: plan.kill_at.clone(),
        };
        let accepts_before = gate.accept_trouble();
        let d = dispatch(
            phase.jobs.clone(),
            launcher.clone(),
            gate.clone(),
            cfg,
            cancel.clone(),
            events_tx.clone(),
            ranks.clone(),
        )
        .await;
        let failed = d.first_failure.is_some() || d.launch_error.is_some();
        if phase.cache.is_some() && !failed {
            // Flush this phase's writes before the next phase starts, outside
            // any measured wall, so no phase pays for another's writeback.
            flush_filesystem(run_dir);
        }
        let accept_trouble = gate.accept_trouble().since(&accepts_before);
        let mut outcome =
            PhaseOutcome { phase, dispatch: d, after_error: None, eviction, accept_trouble };
        if let (false, Some(after)) = (failed, outcome.phase.after) {
            outcome.after_error = after(run_dir, &outcome, pending.make_contiguous()).err();
        }
        let stop = failed || outcome.after_error.is_some();
        outcomes.push(outcome);
        if stop {
            break;
        }
    }
    drop(events_tx);
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
    Ok((outcomes, interrupted))
}

/// Processes a stage left behind were killed by its worker; `--leaks fail`
/// fails the run for them, `warn` says so on stderr (summary.md says it
/// too, from the report).
/// A preparation program's leaks are its close's, on the phase's key.
fn check_leaks(outcomes: &[PhaseOutcome], policy: LeakPolicy) -> Result<(), RunError> {
    let jobs =
        outcomes.iter().flat_map(|p| p.results()).map(|r| (&r.job.key, r.worker.0, &r.measurement));
    let closes = outcomes.iter().flat_map(|p| {
        p.dispatch
            .outcomes
            .iter()
            .filter_map(|o| o.finished.as_ref().map(|m| (&p.phase.key, o.rank.0, m)))
    });
    for (key, rank, m) in jobs.chain(closes) {
        let leaked = &m.tree.leaked;
        if leaked.is_empty() {
            continue;
        }
        let what = format!(
            "stage {key} left {} process(es) running when it ended ({}); the worker killed them",
            leaked.len(),
            leaked.join(", ")
        );
        match policy {
            LeakPolicy::Fail => {
                return Err(fail(
                    Some(key.clone()),
                    Some(rank),
                    "leaked_processes",
                    format!("{what} (--leaks fail)"),
                ));
            }
            LeakPolicy::Warn => eprintln!("warning: {what}"),
        }
    }
    Ok(())
}

/// syncfs(2) on the filesystem holding `dir`; best effort.
fn flush_filesystem(dir: &Path) {
    let started = std::time::Instant::now();
    if let Ok(d) = std::fs::File::open(dir) {
        use std::os::fd::AsRawFd;
        // SAFETY: a valid open descriptor for the duration of the call.
        unsafe { libc::syncfs(d.as_raw_fd()) };
    }
    tracing::debug!(
        seconds = started.elapsed().as_secs_f64(),
        "flushed the run directory's filesystem between phases"
    );
}

fn new_token() -> Result<Token, getrandom::Error> {
    let mut t = [0u8; 32];
    getrandom::fill(&mut t)?;
    Ok(Token(t))
}
