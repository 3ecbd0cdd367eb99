//! Decides what runs where: `workers` slots, each launching fresh worker
//! processes while planned jobs remain. A process takes jobs from the shared
//! queue until it has done `jobs_per_process` of them (1 under
//! `--isolation stage`), so the first free worker always gets the next job.
//!
//! The dispatcher shares no state with the supervisors beyond the job queue,
//! the cancellation token and the event channel. The first failure cancels
//! every other worker (fail fast); a signal does the same.

use crate::gate::Gate;
use crate::process::LocalLauncher;
use crate::supervisor::{Event, Job, Shared, WorkerEnd, WorkerOutcome, supervise};
use protocol::WorkerId;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub struct DispatchConfig {
    pub workers: u32,
    pub jobs_per_process: usize,
    pub connect_timeout: Duration,
    pub stage_timeout: Option<Duration>,
    pub grace: Duration,
}

/// What happened to every worker, and the first failure if there was one.
pub struct DispatchOutcome {
    pub outcomes: Vec<WorkerOutcome>,
    /// The first worker ending that was not a success, in time order.
    pub first_failure: Option<(WorkerId, WorkerEnd)>,
    /// A worker binary that could not be started at all.
    pub launch_error: Option<String>,
    /// When the first worker was spawned, and the time to the last reap.
    pub started: Instant,
    pub wall: Duration,
}

/// Ranks are unique across a run: phases draw them from one counter.
pub type RankCounter = Arc<AtomicU32>;

pub async fn dispatch(
    jobs: Vec<Job>,
    launcher: Arc<LocalLauncher>,
    gate: Arc<Gate>,
    cfg: DispatchConfig,
    cancel: CancellationToken,
    events: mpsc::UnboundedSender<Event>,
    next_rank: RankCounter,
) -> DispatchOutcome {
    let started = Instant::now();
    let shared = Arc::new(Shared {
        queue: Mutex::new(VecDeque::from(jobs)),
        cancel,
        events,
        connect_timeout: cfg.connect_timeout,
        stage_timeout: cfg.stage_timeout,
        grace: cfg.grace,
        jobs_per_process: cfg.jobs_per_process,
    });
    let first_failure = Arc::new(Mutex::new(None));
    let launch_error = Arc::new(Mutex::new(None));
    let mut slots = tokio::task::JoinSet::new();
    for _ in 0..cfg.workers.max(1) {
        let (shared, gate, launcher) = (shared.clone(), gate.clone(), launcher.clone());
        let (next_rank, first_failure, launch_error) =
            (next_rank.clone(), first_failure.clone(), launch_error.clone());
        slots.spawn(async move {
            let mut outcomes = Vec::new();
            while shared.has_work() && !shared.cancel.is_cancelled() {
                let rank = WorkerId(next_rank.fetch_add(1, Ordering::Relaxed));
                let conn = gate.expect(rank);
                let proc = match launcher.launch(rank) {
                    Ok(p) => p,
                    Err(e) => {
                        gate.forget(rank);
                        let msg = format!(
                            "cannot start the worker binary '{}': {e}",
                            launcher.worker_bin.display()
                        );
                        lock(&launch_error).get_or_insert(msg);
                        shared.cancel.cancel();
                        break;
                    }
                };
                gate.set_pid(rank, proc.pid);
                tracing::debug!(rank = rank.0, pid = proc.pid, "worker spawned");
                let outcome = supervise(proc, conn, &shared).await;
                gate.forget(rank);
                tracing::debug!(rank = rank.0, end = outcome.end.reason(), exit = %outcome.exit.kind, "worker ended");
                let failed = !outcome.end.is_success();
                if failed && !matches!(outcome.end, WorkerEnd::Cancelled) {
                    lock(&first_failure).get_or_insert((rank, outcome.end.clone()));
                }
                outcomes.push(outcome);
                if failed {
                    shared.cancel.cancel();
                    break;
                }
            }
            outcomes
        });
    }
    let mut outcomes = Vec::new();
    while let Some(r) = slots.join_next().await {
        match r {
            Ok(mut o) => outcomes.append(&mut o),
            Err(e) => {
                lock(&launch_error).get_or_insert(format!("internal error in a worker slot: {e}"));
            }
        }
    }
    outcomes.sort_by_key(|o| o.rank);
    let first_failure = lock(&first_failure).take();
    let launch_error = lock(&launch_error).take();
    DispatchOutcome { outcomes, first_failure, launch_error, started, wall: started.elapsed() }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
