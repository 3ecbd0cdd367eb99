//! One run, start to finish: dataset, run directory, declaration,
//! environment, phases of supervised workers ([`phases`]), then what they
//! left read ([`ending`]) into report.json or failure.json.

mod ending;
mod phases;

use crate::error::{RunError, fail};
use crate::modes::{self, Phase, RunPlan};
use report::Report;
use report::rundir::declaration::{Declaration, Program};
use report::rundir::{self, RunDir, environment, failure::Failure};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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
    pub(crate) calls: BTreeMap<String, report::rundir::spans::Calls>,
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
    for job in prepared.phases.iter_mut().flat_map(|p| p.jobs_mut()) {
        job.spans = plan.settings.spans_of(&job.key, &job.stage);
        job.sample = plan.settings.sample_of(&job.stage);
    }
    // Held until this function returns: the run's whole life.
    let _locks = prepared.locks;
    let settings = &plan.settings;
    if settings.listen.is_none() {
        crate::launch::socket_home_usable().map_err(|e| usage(e.to_string()))?;
    }
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
) -> Result<PathBuf, report::rundir::RunDirError> {
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
    let decl_sha = dir
        .write_evidence(rundir::DECLARATION, &evidence::to_bytes(declaration))
        .map_err(crate::error::internal(None, "writing the declaration"))?;
    bound.declaration_sha256 = Some(decl_sha.clone());
    let env = host::machine::capture(plan.settings.launcher.as_str(), dir.path());
    let env_sha = dir
        .write_evidence(rundir::ENVIRONMENT, &evidence::to_bytes(&env))
        .map_err(crate::error::internal(None, "writing the environment"))?;
    bound.environment_sha256 = Some(env_sha.clone());

    let listen = plan.settings.listen.as_deref();
    let what = if listen.is_some() { "binding --listen" } else { "binding the socket" };
    let socket = crate::launch::bind(listen).map_err(crate::error::internal(None, what))?;
    let token =
        phases::new_token().map_err(crate::error::internal(None, "drawing the run token"))?;

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(crate::error::internal(None, "starting the async runtime"))?;
    let run_dir_abs =
        std::fs::canonicalize(dir.path()).unwrap_or_else(|_| dir.path().to_path_buf());
    let started = std::time::Instant::now();
    // Written as the jobs arrive; put at its path only if the run ends well.
    let jobs_file = match plan.mode.jobs_apart() {
        true => Some(std::sync::Arc::new(
            crate::supervisor::jobs_file::JobsFile::create(dir.path(), started).map_err(
                crate::error::internal(None, format!("creating {}", rundir::jobs::JOBS)),
            )?,
        )),
        false => None,
    };
    let crate::launch::Bound { listener, endpoint, socket_dir } = socket;
    let (mut outcomes, interrupted) = runtime
        .block_on(phases::supervise_run(
            &plan.settings,
            phases,
            listener,
            endpoint,
            token,
            &run_dir_abs,
            jobs_file.clone(),
        ))
        .map_err(crate::error::internal(None, "setting up the run"))?;
    let workers = modes::process_records(&outcomes, started, jobs_file.is_some());
    bound.processes_wall_s = Some(workers.iter().map(|w| w.wall_s).sum());
    let run_wall = started.elapsed();
    drop(runtime);
    drop(socket_dir);

    if let Some(signal) = interrupted {
        return Err(RunError::Interrupted { signal });
    }
    bound.done = ending::done_calls(&outcomes);
    for p in &mut outcomes {
        if let Some(e) = p.after_error.take() {
            return Err(e);
        }
        if let Some(msg) = &p.dispatch.launch_error {
            return Err(fail(None, None, "internal", msg.clone()));
        }
        if let Some(failed) = ending::first_failure(p) {
            return Err(failed);
        }
    }
    ending::check_leaks(&outcomes, plan.settings.leaks)?;
    let inputs = host::inputs::unchanged(&plan.settings.inputs)
        .map_err(|e| fail(None, None, "inputs_changed", e.to_string()))?;
    let hosts: std::collections::BTreeSet<&String> =
        workers.iter().filter_map(|w| w.host_sha256.as_ref()).collect();
    let hosts = hosts.len() as u32;
    let settings = &plan.settings;
    let context = modes::Context {
        dir: dir.path(),
        started,
        load_at_start: env.load_average,
        cores: env.cpu.logical_cores as u32,
        inputs: &inputs,
        sampler: settings.sample.as_ref().map(|s| s.py_spy.version.as_str()),
    };
    let mut records = modes::Records::default();
    let section = plan.mode.assemble(&context, &outcomes, &mut records)?;
    modes::preparation::side::programs_sampled(&context, &outcomes, &mut records)?;
    let mut report = Report {
        schema: rundir::report::SCHEMA.into(),
        schema_version: rundir::report::SCHEMA_VERSION,
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
            host::machine::load_average(),
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
    if let Some(file) = jobs_file {
        let jobs = file
            .finish()
            .map_err(crate::error::internal(None, format!("writing {}", rundir::jobs::JOBS)))?;
        report.artifacts.push(jobs);
        // The sides' timelines, read back from it as verify reads them.
        report.read_jobs(dir.path(), false).map_err(crate::error::internal(
            None,
            format!("reading back {}", rundir::jobs::JOBS),
        ))?;
    }
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
    let derived = report::render::write_all(dir.path(), &report)
        .map_err(crate::error::internal(None, "rendering the summary and plots"))?;
    // The walk verify makes, before the report says ok: a program that
    // wrote into the run directory fails the run, and what it wrote is kept.
    let strays = ending::strays(dir.path(), &report, &derived)
        .map_err(crate::error::internal(None, "reading back a manifest the run wrote"))?;
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
    dir.write_evidence(rundir::REPORT, &rundir::report::seal(&report))
        .map_err(crate::error::internal(None, "writing the report"))?;
    Ok(report)
}
