//! Decides what runs where: `workers` slots, each launching fresh worker
//! processes while planned jobs remain. A process takes jobs from the dispatcher's
//! queue until it has done `jobs_per_process` of them (1 under
//! `--isolation stage`), so the first free worker always gets the next job.
//!
//! The dispatcher alone owns the job queue: supervisors ask it for the next
//! job and tell it of each finished one over a channel ([`Ask`]), and it
//! applies the phase's [`AfterJob`] itself. Beyond that channel they share
//! only read-only settings, the cancellation token and the event channel.
//! The first failure cancels every other worker (fail fast); a signal does
//! the same.

use crate::admission::{Admission, Connection};
use crate::events::Event;
use crate::launch::Launcher;
use crate::process::WorkerProcess;
use crate::supervisor::{
    Ask, Feed, Job, JobResult, Shared, WorkerEnd, WorkerOutcome, lock, supervise,
};
use protocol::WorkerId;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// Run by the dispatcher when a job succeeded, before it hands out another:
/// may complete the jobs still queued (e.g. with the hashes of artifacts the
/// finished job wrote).
pub(crate) type AfterJob = fn(&JobResult, &mut VecDeque<Job>);

pub(crate) struct DispatchConfig {
    pub(crate) workers: u32,
    pub(crate) jobs_per_process: usize,
    pub(crate) after_job: Option<AfterJob>,
    pub(crate) connect_timeout: Duration,
    pub(crate) stage_timeout: Option<Duration>,
    /// How long one item job may take (`--item-timeout`).
    pub(crate) item_timeout: Option<Duration>,
    pub(crate) grace: Duration,
    pub(crate) kill_at: Option<crate::kill_points::KillAt>,
    /// The phase's key.
    pub(crate) phase: String,
    /// Whether each job's result is folded as it arrives (see [`Shared`]).
    pub(crate) fold: bool,
    pub(crate) jobs_file: Option<Arc<crate::supervisor::jobs_file::JobsFile>>,
    /// Items handed to a worker beyond the one it runs (see [`Shared`]).
    pub(crate) prefetch: usize,
}

/// What happened to every worker, and the first failure if there was one.
pub(crate) struct DispatchOutcome {
    pub(crate) outcomes: Vec<WorkerOutcome>,
    /// The first worker ending that was not a success, in time order.
    pub(crate) first_failure: Option<(WorkerId, WorkerEnd)>,
    /// A worker binary that could not be started at all.
    pub(crate) launch_error: Option<String>,
    /// When the first worker was spawned, and the time to the last reap.
    pub(crate) started: Instant,
    pub(crate) wall: Duration,
}

/// Ranks are unique across a run: phases draw them from one counter.
pub(crate) type RankCounter = Arc<AtomicU32>;

/// A phase's jobs, in the order they are handed out: listed, or made one at
/// a time from a phase of items ([`Feed`]).
pub(crate) enum Queue {
    Listed(VecDeque<Job>),
    Fed { feed: Box<Feed>, cursor: Box<host::items_file::Cursor>, next: usize },
}

impl Queue {
    /// A phase of items, read from their file as they are handed out.
    pub(crate) fn fed(feed: Feed) -> Queue {
        let cursor = feed.cursor();
        Queue::Fed { feed: Box::new(feed), cursor: Box::new(cursor), next: 0 }
    }

    fn len(&self) -> usize {
        match self {
            Queue::Listed(q) => q.len(),
            Queue::Fed { feed, next, .. } => feed.len() - next,
        }
    }

    fn pop(&mut self) -> Option<Job> {
        match self {
            Queue::Listed(q) => {
                let job = q.pop_front();
                // A drained queue gives its memory back as it goes.
                if q.capacity() > 64 && q.len() < q.capacity() / 4 {
                    q.shrink_to(q.len() * 2);
                }
                job
            }
            Queue::Fed { feed, cursor, next } => match cursor.next_item() {
                Some(item) => {
                    *next += 1;
                    Some(feed.job(*next - 1, item))
                }
                // The last, or the file changed: the phase ends, and the run
                // fails after it (`Source::unchanged`).
                None => {
                    *next = feed.len();
                    None
                }
            },
        }
    }
}

pub(crate) async fn dispatch(
    jobs: Queue,
    launcher: Arc<Launcher>,
    admission: Arc<Admission>,
    cfg: DispatchConfig,
    cancel: CancellationToken,
    events: mpsc::UnboundedSender<Event>,
    next_rank: RankCounter,
) -> DispatchOutcome {
    let clock = tokio::time::Instant::now();
    let started = clock.into_std();
    let jobs_count = jobs.len();
    let (asks, asked) = mpsc::unbounded_channel();
    let held = Held { workers: cfg.workers.max(1) as usize, prefetch: cfg.prefetch };
    let queue = tokio::spawn(own_queue(jobs, cfg.after_job, held, asked));
    let shared = Arc::new(Shared {
        asks,
        report_done: cfg.after_job.is_some(),
        cancel,
        events,
        connect_timeout: cfg.connect_timeout,
        stage_timeout: cfg.stage_timeout,
        item_timeout: cfg.item_timeout,
        started: clock,
        grace: cfg.grace,
        jobs_per_process: cfg.jobs_per_process,
        kill_at: cfg.kill_at,
        phase: cfg.phase,
        phase_started: started,
        fold: cfg.fold,
        jobs_file: cfg.jobs_file,
        prefetch: cfg.prefetch,
        jobs: jobs_count,
        ended: Default::default(),
    });
    let slot = Slot {
        shared: shared.clone(),
        admission,
        first_failure: Arc::new(Mutex::new(None)),
        launch_error: Arc::new(Mutex::new(None)),
    };
    let mut slots = tokio::task::JoinSet::new();
    let mut step = None;
    if launcher.starts_steps() && cfg.jobs_per_process == usize::MAX {
        // Long-lived workers through a scheduler: one job step for the phase.
        let n = cfg.workers.max(1).min(jobs_count.max(1) as u32);
        let first = WorkerId(next_rank.fetch_add(n, Ordering::Relaxed));
        let conns: Vec<_> =
            (0..n).map(|i| slot.admission.register(WorkerId(first.0 + i))).collect();
        match launcher.launch(first, n) {
            Ok(procs) => {
                step = procs.first().cloned();
                for (proc, conn) in procs.into_iter().zip(conns) {
                    let slot = slot.clone();
                    slots.spawn(async move {
                        match slot.supervise_one(proc, conn).await {
                            Ok(o) | Err(o) => vec![o],
                        }
                    });
                }
            }
            Err(e) => {
                for i in 0..n {
                    slot.admission.forget(WorkerId(first.0 + i));
                }
                slot.launch_failed(&launcher, e);
            }
        }
    } else {
        for _ in 0..cfg.workers.max(1) {
            let (slot, launcher, next_rank) = (slot.clone(), launcher.clone(), next_rank.clone());
            slots.spawn(async move {
                let mut outcomes = Vec::new();
                while !slot.shared.cancel.is_cancelled() && slot.shared.has_work().await {
                    let rank = WorkerId(next_rank.fetch_add(1, Ordering::Relaxed));
                    let conn = slot.admission.register(rank);
                    let proc = match launcher.launch(rank, 1) {
                        Ok(mut p) => p.remove(0),
                        Err(e) => {
                            slot.admission.forget(rank);
                            slot.launch_failed(&launcher, e);
                            break;
                        }
                    };
                    match slot.supervise_one(proc, conn).await {
                        Ok(o) => outcomes.push(o),
                        Err(o) => {
                            outcomes.push(o);
                            break;
                        }
                    }
                }
                outcomes
            });
        }
    }
    let mut outcomes = Vec::new();
    while let Some(r) = slots.join_next().await {
        match r {
            Ok(mut o) => outcomes.append(&mut o),
            Err(e) => {
                lock(&slot.launch_error)
                    .get_or_insert(format!("internal error in a worker slot: {e}"));
            }
        }
    }
    if let Some(step) = step {
        // Every task has ended its connection; the step ends with them.
        if tokio::time::timeout(cfg.grace + Duration::from_secs(5), step.wait()).await.is_err() {
            tracing::warn!(pid = step.pid, "the job step outlived its tasks; stopping it");
            step.terminate(cfg.grace).await;
        }
    }
    outcomes.sort_by_key(|o| o.rank);
    let first_failure = lock(&slot.first_failure).take();
    let launch_error = lock(&slot.launch_error).take();
    let wall = started.elapsed();
    // The last sender goes with the slot; the queue's owner then ends.
    drop((slot, shared));
    let _ = queue.await;
    DispatchOutcome { outcomes, first_failure, launch_error, started, wall }
}

/// How many jobs the phase's workers may hold beyond the ones they run.
struct Held {
    workers: usize,
    /// Each worker's window beyond its running job (`--prefetch`).
    prefetch: usize,
}

impl Held {
    /// Whether a worker may be handed one more job beyond its running one,
    /// `handed` jobs into the phase with `left` still queued: not before
    /// every process had its first (largest-first order gives the largest
    /// items to as many processes), and not among the phase's last
    /// `workers × prefetch` (those go one at a time to whichever process
    /// is free first, so no item waits behind another at the end).
    fn may_hand_ahead(&self, handed: usize, left: usize) -> bool {
        self.prefetch > 0 && handed >= self.workers && left > self.workers * self.prefetch
    }
}

/// The phase's job queue, owned here alone: answers each supervisor's ask in
/// the order asked, until every supervisor is gone.
async fn own_queue(
    mut queue: Queue,
    after_job: Option<AfterJob>,
    held: Held,
    mut asks: mpsc::UnboundedReceiver<Ask>,
) {
    let mut handed = 0;
    while let Some(ask) = asks.recv().await {
        match ask {
            Ask::Done(result) => {
                if let (Some(after), Queue::Listed(queue)) = (after_job, &mut queue) {
                    after(&result, queue);
                }
            }
            Ask::Next(reply) => {
                let job = queue.pop();
                handed += job.is_some() as usize;
                let _ = reply.send(job);
            }
            Ask::Ahead(reply) => {
                let job = match held.may_hand_ahead(handed, queue.len()) {
                    true => queue.pop(),
                    false => None,
                };
                handed += job.is_some() as usize;
                let _ = reply.send(job);
            }
            Ask::HasWork(reply) => {
                let _ = reply.send(queue.len() > 0);
            }
        }
    }
}

/// What every worker slot of a phase shares.
#[derive(Clone)]
struct Slot {
    shared: Arc<Shared>,
    admission: Arc<Admission>,
    first_failure: Arc<Mutex<Option<(WorkerId, WorkerEnd)>>>,
    launch_error: Arc<Mutex<Option<String>>>,
}

impl Slot {
    /// Supervises one launched worker to its end: `Ok` when it completed,
    /// `Err` (after cancelling the others) when it did not.
    async fn supervise_one(
        &self,
        proc: WorkerProcess,
        conn: oneshot::Receiver<Connection>,
    ) -> Result<WorkerOutcome, WorkerOutcome> {
        let rank = proc.rank;
        if !proc.task_of_step {
            self.admission.set_pid(rank, proc.pid);
        }
        tracing::debug!(rank = rank.0, pid = proc.pid, "worker spawned");
        let outcome = supervise(proc, conn, &self.shared).await;
        self.admission.forget(rank);
        tracing::debug!(rank = rank.0, end = outcome.end.reason(), exit = %outcome.exit.kind, "worker ended");
        if outcome.end.is_success() {
            return Ok(outcome);
        }
        if !matches!(outcome.end, WorkerEnd::Cancelled { .. }) {
            lock(&self.first_failure).get_or_insert((rank, outcome.end.clone()));
        }
        self.shared.cancel.cancel();
        Err(outcome)
    }

    fn launch_failed(&self, launcher: &Launcher, e: std::io::Error) {
        let what = match launcher.kind {
            crate::launch::Kind::Local => {
                format!("cannot start the worker binary '{}': {e}", launcher.worker_bin.display())
            }
            crate::launch::Kind::Slurm(_) => format!("cannot run srun: {e}"),
        };
        lock(&self.launch_error).get_or_insert(what);
        self.shared.cancel.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A queue of `n` items, and the directory holding their file.
    fn feed(n: usize) -> (tempfile::TempDir, Queue) {
        let ids: String = (0..n).map(|i| format!("id{i}\n")).collect();
        let (dir, source) = host::items_file::written_for_test(ids.as_bytes());
        (dir, Queue::fed(Feed::new(Feed::first_for_test(0), source)))
    }

    /// Asks the queue's owner, in turn: `true` for a job beyond those held.
    async fn answers(
        (_dir, queue): (tempfile::TempDir, Queue),
        held: Held,
        asks: &[bool],
    ) -> Vec<Option<u64>> {
        let (tx, rx) = mpsc::unbounded_channel();
        let owner = tokio::spawn(own_queue(queue, None, held, rx));
        let mut got = Vec::new();
        for &ahead in asks {
            let (reply, answer) = oneshot::channel();
            let _ = tx.send(if ahead { Ask::Ahead(reply) } else { Ask::Next(reply) });
            got.push(answer.await.unwrap().map(|j| j.item.unwrap().n));
        }
        drop(tx);
        owner.await.unwrap();
        got
    }

    /// A job is held ahead only once every process had its first, and never
    /// among the last `workers × prefetch`: the largest items go to as many
    /// processes, and the last ones to whichever is free first.
    #[tokio::test]
    async fn jobs_are_held_ahead_only_in_the_middle_of_a_phase() {
        let held = || Held { workers: 2, prefetch: 1 };
        // Process A takes item 1 and asks ahead before B had its first: no.
        let got = answers(feed(6), held(), &[false, true, false, true, true, true, false]).await;
        assert_eq!(got, [Some(1), None, Some(2), Some(3), Some(4), None, Some(5)]);
        // Without a window nothing is ever held ahead.
        let none = Held { workers: 2, prefetch: 0 };
        let got = answers(feed(6), none, &[false, false, true, true]).await;
        assert_eq!(got, [Some(1), Some(2), None, None]);
        // The control: a plain ask takes the last items as they are.
        let got = answers(feed(3), held(), &[false, false, false, false]).await;
        assert_eq!(got, [Some(1), Some(2), Some(3), None]);
    }
}
