//! `coordinator campaign [FILE.toml] [--output DIR]`: a scripted sequence of
//! runs against state directories, repeated `trials` times per step, each
//! in fresh worker processes: the built-in recipe's a full `--mode recipe`
//! run, a `[[pipeline]]`'s its commands, one stage each, against the
//! file's scratch directory (see `runner`):
//!
//! - `cold`: a new, empty state per trial; the first trial's final state is
//!   the reference;
//! - `resume`: the complete state the last cold trial left, with the step's
//!   `policy` (load or recompute the derived artifacts);
//! - `interrupted`: a new state per trial, a run whose worker is killed with
//!   SIGKILL at `kill_at`, then a resume; the state it ends with must be the
//!   reference, file for file.
//!
//! The campaign directory holds `declaration.json` (the campaign as parsed
//! and the file's SHA-256, written before anything runs),
//! `environment.json`, `runs/STEP/TRIAL/` (each a verifiable run
//! directory; a killed run's is `TRIAL-killed/`, with its failure.json),
//! `state/` (the state directories), then `report.json`, `summary.md` and
//! `plots/campaign.{svg,png}`, derived from the report alone.

pub(crate) mod file;
mod runner;

use host::dataset::DatasetError;
use report::campaign::report::{self as records, CampaignReport};
use report::campaign::{PRIVATE, SCHEMA_DECLARATION};
use report::rundir::{self, RunDir};
use runner::Runner;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};

/// A finished campaign.
pub(crate) struct Finished {
    pub(crate) dir: PathBuf,
    pub(crate) report: CampaignReport,
}

/// Why a campaign stopped.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CampaignError {
    /// Refused before anything ran.
    #[error("{0}")]
    Usage(String),
    /// A run failed where it should not have; its directory says why.
    #[error("campaign failed: {0}")]
    Failed(String),
    #[error("campaign interrupted by signal {0}; no report written")]
    Interrupted(i32),
}

impl From<CampaignError> for crate::error::Error {
    fn from(e: CampaignError) -> Self {
        use crate::error::Error;
        match e {
            CampaignError::Usage(m) => Error::Usage(m),
            CampaignError::Failed(_) => Error::Failed(e.to_string()),
            CampaignError::Interrupted(signal) => {
                Error::Interrupted { signal, message: e.to_string() }
            }
        }
    }
}

/// Runs a campaign: `file` (None: the embedded default) into `output`
/// (None: `campaigns/<UTC time>-<name>/`).
pub(crate) fn run(
    file: Option<&Path>,
    output: Option<&Path>,
    worker_bin: PathBuf,
) -> Result<Finished, CampaignError> {
    let (campaign, bytes) = file::load(file).map_err(|e| CampaignError::Usage(e.0))?;
    if let Some(scratch) = &campaign.campaign.scratch {
        file::guard_scratch(scratch, &file::Places::here(file, output))
            .map_err(|e| CampaignError::Usage(e.0))?;
    }
    if !worker_bin.is_file() {
        return Err(CampaignError::Usage(format!(
            "worker binary not found at '{}': build the workspace or pass --worker-bin",
            worker_bin.display()
        )));
    }
    let (worker_sha, _) = evidence::file_sha256(&worker_bin)
        .map_err(|e| CampaignError::Usage(format!("cannot read the worker binary: {e}")))?;
    // Two campaigns never share a scratch directory (held to the end).
    let _scratch_lock = match &campaign.campaign.scratch {
        Some(dir) => Some(
            host::dirlock::lock(dir, "scratch").map_err(|e| CampaignError::Usage(e.to_string()))?,
        ),
        None => None,
    };
    // `sample = RATE`: py-spy found (or the campaign refused) before anything runs.
    let sampling = match campaign.campaign.sample {
        Some(rate_hz) => {
            let commands: Vec<String> =
                campaign.pipeline.iter().map(|p| p.argv.join(" ")).collect();
            let py_spy = crate::sampler::find(&commands).map_err(|e| CampaignError::Usage(e.0))?;
            Some(crate::plan::Sampling { rate_hz, py_spy })
        }
        None => None,
    };
    // A pipeline reads no dataset of ours; the recipe reads the declared one.
    let (dataset, fingerprint) = match campaign.pipeline.is_empty() {
        true => {
            let (dir, frozen) = host::dataset::resolve(campaign.campaign.data.as_deref(), false)
                .map_err(|e| match e {
                    DatasetError::Input(m) => CampaignError::Usage(m),
                    DatasetError::Io(m) => CampaignError::Failed(m),
                })?;
            (dir, Some(frozen.fingerprint))
        }
        false => (PathBuf::new(), None),
    };
    let dir = match output {
        Some(p) => RunDir::create(p),
        None => RunDir::create_default(Path::new("campaigns"), &campaign.campaign.name),
    }
    .map_err(|e| CampaignError::Usage(e.to_string()))?;
    let mut declaration = serde_json::json!({
        "schema": SCHEMA_DECLARATION,
        "schema_version": 1,
        "created_utc": evidence::timestamp::rfc3339_utc_now(),
        "campaign": campaign,
        "file_sha256": evidence::sha256_hex(&bytes),
        "dataset_fingerprint": fingerprint,
        "program": report::rundir::declaration::Program::current(worker_sha),
    });
    if let Some(s) = &sampling {
        declaration["sampler"] = s.py_spy.version.clone().into();
    }
    let write = |name: &str, bytes: &[u8]| {
        dir.write_evidence(name, bytes).map_err(|e| CampaignError::Failed(e.to_string()))
    };
    let declaration_sha256 = write(rundir::DECLARATION, &evidence::to_bytes(&declaration))?;
    let environment_sha256 = write(
        rundir::ENVIRONMENT,
        &evidence::to_bytes(&host::machine::capture("local", dir.path())),
    )?;
    let stop = watch_signals();
    let runner = Runner {
        t0: std::time::Instant::now(),
        campaign: &campaign,
        dir: dir.path(),
        dataset,
        worker_bin,
        sampling,
        stop,
    };
    // What a program left in the campaign directory itself: kept through
    // its failure, never deleted.
    let mut kept = Vec::new();
    let finished = runner.steps().and_then(|ran| {
        let runner::Ran { steps, reference, artifacts, failed, not_run, identity } = ran;
        let pipeline = !campaign.pipeline.is_empty();
        // A failed trial is the campaign's first finding.
        let mut judgment = records::failures(&failed, &not_run, campaign.campaign.trials);
        judgment.extend(match pipeline {
            true => report::campaign::spans::judgment(&steps, &campaign.roles(), identity.as_ref()),
            false => records::judgment(&steps, campaign.campaign.epochs),
        });
        let mut report = CampaignReport {
            schema: records::SCHEMA.into(),
            schema_version: records::SCHEMA_VERSION,
            name: campaign.campaign.name.clone(),
            declaration_sha256: declaration_sha256.clone(),
            environment_sha256: environment_sha256.clone(),
            trials: campaign.campaign.trials,
            epochs: campaign.campaign.epochs,
            reference_state_sha256: reference,
            pipeline,
            steps,
            judgment,
            artifacts,
            states: Vec::new(),
            failed_trials: failed,
            not_run,
            identity,
        };
        report.artifacts.sort_by(|a, b| a.path.cmp(&b.path));
        report.states = records::states(dir.path())
            .map_err(|e| CampaignError::Failed(format!("digesting the state directories: {e}")))?;
        // The derived files first, report.json last: one ending, as a run's.
        let derived = report::campaign::summary::write_all(dir.path(), &report)
            .map_err(|e| CampaignError::Failed(e.to_string()))?;
        // The walk verify makes, before the report says ok (as a run's).
        let strays = strays(dir.path(), &report, &derived);
        if let Some(first) = strays.first() {
            kept = strays.iter().map(|s| s.path.display().to_string()).collect();
            return Err(CampaignError::Failed(format!(
                "{} {}, left in the campaign directory by what it ran: kept, not deleted, and no report written",
                first.shown("the campaign directory"),
                first.what()
            )));
        }
        write(rundir::REPORT, &report::rundir::report::seal(&report))?;
        Ok(report)
    });
    match finished {
        Ok(report) => Ok(Finished { dir: dir.path().to_path_buf(), report }),
        Err(e) => Err(record_failure(&dir, e, &declaration_sha256, &environment_sha256, kept)),
    }
}

/// Every entry of the campaign directory that neither its report (its
/// evidence, its runs, its state directories), its private files nor its
/// derived files account for: what `verify` would name.
fn strays(
    dir: &std::path::Path,
    report: &CampaignReport,
    derived: &[report::render::Rendered],
) -> Vec<report::rundir::tree::Stray> {
    let mut accounted = report::rundir::tree::Accounted::default();
    for f in [rundir::DECLARATION, rundir::ENVIRONMENT, rundir::REPORT] {
        accounted.file(f);
    }
    for a in &report.artifacts {
        accounted.file(&a.path);
        // A run's own directory is its own to account for (its run did).
        if let Some(run) = std::path::Path::new(&a.path).parent() {
            accounted.subtree(run);
        }
    }
    for s in &report.states {
        accounted.subtree(&s.path);
    }
    accounted.subtree(PRIVATE);
    for f in derived {
        accounted.file(&f.path);
    }
    accounted.strays(dir, report::rundir::tree::MAX_STRAYS)
}

/// What a stopped campaign keeps beside failure.json: its runs, each with
/// its own one ending, and the state directories they left.
const KEPT_ON_FAILURE: [&str; 2] = ["runs", "state"];

/// failure.json in the campaign directory: it ran, and this stopped it.
/// Its summary, plots and a report.json are removed first (one ending);
/// if even failure.json cannot be written, the error says so in its line.
fn record_failure(
    dir: &RunDir,
    e: CampaignError,
    declaration: &str,
    environment: &str,
    kept: Vec<String>,
) -> CampaignError {
    let (reason, message) = match &e {
        CampaignError::Usage(m) => ("usage", m.clone()),
        CampaignError::Failed(m) => ("campaign_failed", m.clone()),
        CampaignError::Interrupted(s) => ("interrupted", format!("interrupted by signal {s}")),
    };
    let mut f = report::rundir::failure::Failure::new(
        "campaign",
        (None, None, reason),
        message,
        Some(declaration.into()),
        Some(environment.into()),
    );
    f.kept = kept;
    let written = dir.end_in_failure(&f, &KEPT_ON_FAILURE);
    match written {
        Ok(_) => e,
        Err(w) => CampaignError::Failed(format!("{} (and no failure.json: {w})", f.message)),
    }
}

/// SIGINT or SIGTERM, for the whole campaign: a run in progress sees the
/// signal itself (and stops its workers); one that arrives between runs
/// stops the campaign before the next run starts.
pub(crate) fn watch_signals() -> Arc<AtomicI32> {
    let flag = Arc::new(AtomicI32::new(0));
    let seen = flag.clone();
    std::thread::spawn(move || {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
            return;
        };
        rt.block_on(async move {
            use tokio::signal::unix::{SignalKind, signal};
            let (Ok(mut int), Ok(mut term)) =
                (signal(SignalKind::interrupt()), signal(SignalKind::terminate()))
            else {
                return;
            };
            let signo = tokio::select! {
                _ = int.recv() => libc::SIGINT,
                _ = term.recv() => libc::SIGTERM,
            };
            seen.store(signo, Ordering::SeqCst);
        });
    });
    flag
}
