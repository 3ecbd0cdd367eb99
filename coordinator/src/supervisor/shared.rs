//! What a phase's supervisors share: the channel to the dispatcher, which
//! alone owns the job queue ([`Ask`]), and the settings, clock, token and
//! jobs file every one of them reads ([`Shared`]).

use super::{Job, JobResult, jobs_file};
use crate::events::Event;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// What a supervisor asks of the dispatcher, which alone owns the job queue.
/// One channel carries every ask, so a worker's `Done` is applied before its
/// next `Next` is answered.
pub(crate) enum Ask {
    /// A job of this worker succeeded: the dispatcher may hand what it left
    /// (the artifacts it reported) to the jobs still queued.
    Done(Box<JobResult>),
    /// The next job, or None when none is left.
    Next(oneshot::Sender<Option<Job>>),
    /// A job to hand over beyond the ones a worker holds (`--prefetch`),
    /// or None when the phase is at its start or its end (see
    /// `dispatch::own_queue`).
    Ahead(oneshot::Sender<Option<Job>>),
    /// Whether any job is left (a slot starts another process only then).
    HasWork(oneshot::Sender<bool>),
}

/// What every supervisor of one phase reads; nothing in it is mutated by
/// them but the count of the phase's items that ended.
pub(crate) struct Shared {
    pub(crate) asks: mpsc::UnboundedSender<Ask>,
    /// Whether the dispatcher wants each finished job (`Ask::Done`): only
    /// when the phase has an `AfterJob`, so no result is copied for nothing.
    pub(crate) report_done: bool,
    pub(crate) cancel: CancellationToken,
    pub(crate) events: mpsc::UnboundedSender<Event>,
    pub(crate) connect_timeout: Duration,
    pub(crate) stage_timeout: Option<Duration>,
    /// How long one item job may take (`--item-timeout`).
    pub(crate) item_timeout: Option<Duration>,
    /// When the phase started: a phase of items is one stage, so its
    /// `--stage-timeout` counts from here, not from each item.
    pub(crate) started: tokio::time::Instant,
    pub(crate) grace: Duration,
    pub(crate) jobs_per_process: usize,
    /// Where to kill a worker on purpose (`--kill-at`).
    pub(crate) kill_at: Option<crate::kill_points::KillAt>,
    /// The phase's key, as `workers[]` names a process's phase.
    pub(crate) phase: String,
    /// The phase's start on the coordinator's clock (as `started`).
    pub(crate) phase_started: std::time::Instant,
    /// Whether each job's result is folded into the worker's [`Tally`] as
    /// it arrives and dropped (a phase of a user's items), not kept.
    pub(crate) fold: bool,
    /// Where each job goes as it arrives, when the mode's jobs go apart.
    pub(crate) jobs_file: Option<std::sync::Arc<jobs_file::JobsFile>>,
    /// How many items a worker is handed beyond the one it runs
    /// (`--prefetch`); 0 where jobs are not items.
    pub(crate) prefetch: usize,
    /// How many jobs the phase has, and (a phase of items) how many ended.
    pub(crate) jobs: usize,
    pub(crate) ended: std::sync::atomic::AtomicUsize,
}

impl Shared {
    /// One more of a phase of items ended: the count for the progress
    /// printer, sent about a thousand times a phase and at its last item
    /// (an event a job would queue faster than a terminal prints them).
    pub(crate) fn count_ended(&self) {
        let done = self.ended.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        if done == self.jobs || done % (self.jobs / 1024).max(1) == 0 {
            let _ = self.events.send(Event::Counted { done });
        }
    }

    /// How many jobs a worker may hold handed over and not answered: one,
    /// or with `--prefetch` more, for a phase of items whose jobs depend on
    /// no earlier answer (no `AfterJob`) and whose workers are not killed
    /// on purpose.
    pub(crate) fn window(&self) -> usize {
        match self.report_done || self.kill_at.is_some() {
            true => 1,
            false => 1 + self.prefetch,
        }
    }

    /// The dispatcher's next job for a worker that holds none
    /// (`Ask::Next`), or one to hold beyond those it holds (`Ask::Ahead`);
    /// None when none is left (or the dispatcher is gone).
    pub(crate) async fn next_job(&self, holding: usize) -> Option<Job> {
        let (reply, answer) = oneshot::channel();
        let ask = match holding {
            0 => Ask::Next(reply),
            _ => Ask::Ahead(reply),
        };
        self.asks.send(ask).ok()?;
        answer.await.ok().flatten()
    }

    pub(crate) async fn has_work(&self) -> bool {
        let (reply, answer) = oneshot::channel();
        if self.asks.send(Ask::HasWork(reply)).is_err() {
            return false;
        }
        answer.await.unwrap_or(false)
    }
}
