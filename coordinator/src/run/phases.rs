//! The phases of one run under one tokio runtime: the admission that lets in
//! workers, a signal watcher, and each phase dispatched in turn (its cache
//! directory made, its inputs evicted, its filesystem flushed after).

use crate::admission::Admission;
use crate::dispatch::{DispatchConfig, Queue, RankCounter, dispatch};
use crate::events::Event;
use crate::launch::Launcher;
use crate::modes::{Phase, PhaseOutcome};
use crate::plan::Settings;
use protocol::Token;
use std::os::unix::fs::DirBuilderExt;
use std::path::Path;
use std::sync::Arc;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Runs the phases in order; returns their outcomes and the signal that
/// stopped them, if any. Stops after the first phase that failed.
pub(super) async fn supervise_run(
    plan: &Settings,
    phases: Vec<Phase>,
    listener: crate::launch::BoundListener,
    endpoint: protocol::stream::Endpoint,
    token: Token,
    run_dir: &Path,
    jobs_file: Option<Arc<crate::supervisor::jobs_file::JobsFile>>,
) -> std::io::Result<(Vec<PhaseOutcome>, Option<i32>)> {
    let mut sigint = signal(SignalKind::interrupt())?;
    let mut sigterm = signal(SignalKind::terminate())?;
    let listener = listener.into_tokio()?;
    let admission =
        Admission::new(token.clone(), run_dir.to_string_lossy().into_owned(), plan.connect_timeout);
    let admission_task = tokio::spawn(admission.clone().serve(listener));

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
            Some(inputs) if inputs.evict => Some(host::pagecache::evict(&inputs.files)),
            _ => None,
        };
        tracing::debug!(key = %phase.key, jobs = phase.planned(), workers = phase.workers, "phase started");
        let _ = events_tx.send(Event::PhaseStarted {
            key: phase.key.clone(),
            jobs: phase.planned(),
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
            phase: phase.key.clone(),
            // A user's items are folded as they arrive: 10⁶ of them are
            // held as 10 would be.
            fold: phase.of_items(),
            jobs_file: jobs_file.clone(),
            prefetch: phase.feed.as_ref().map_or(0, |f| f.ahead),
        };
        let accepts_before = admission.accept_trouble();
        // The jobs go to the dispatcher, not a copy: a phase of 10⁶ items
        // would hold its plan twice. Its first stays, for the phase's kind.
        let mut phase = phase;
        let planned = phase.planned();
        let jobs = match &phase.feed {
            Some(feed) => Queue::fed(feed.clone()),
            None => {
                let jobs = std::mem::take(&mut phase.jobs);
                phase.jobs.extend(jobs.first().cloned());
                Queue::Listed(jobs.into())
            }
        };
        let d = dispatch(
            jobs,
            launcher.clone(),
            admission.clone(),
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
        let accept_trouble = admission.accept_trouble().since(&accepts_before);
        let mut outcome = PhaseOutcome {
            phase,
            planned,
            dispatch: d,
            after_error: None,
            eviction,
            accept_trouble,
        };
        // A phase of items read its file as it went: as it was declared.
        if let Some(feed) = &outcome.phase.feed {
            outcome.after_error =
                feed.source().unchanged().err().map(|e| crate::error::RunError::Failed {
                    stage: Some(outcome.phase.key.clone()),
                    worker: None,
                    reason: "items_changed",
                    message: e.to_string(),
                });
        }
        if let (false, None, Some(after)) = (failed, &outcome.after_error, outcome.phase.after) {
            outcome.after_error = after(run_dir, &outcome, pending.make_contiguous()).err();
        }
        let stop = failed || outcome.after_error.is_some();
        outcomes.push(outcome);
        if stop {
            break;
        }
    }
    drop(events_tx);
    admission_task.abort();
    let _ = printer.await;
    let interrupted = if signal_task.is_finished() {
        signal_task.await.ok()
    } else {
        signal_task.abort();
        None
    };
    if admission.refused() > 0 {
        tracing::warn!("{} connection(s) were refused during this run", admission.refused());
    }
    Ok((outcomes, interrupted))
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

pub(super) fn new_token() -> Result<Token, getrandom::Error> {
    let mut t = [0u8; 32];
    getrandom::fill(&mut t)?;
    Ok(Token(t))
}
