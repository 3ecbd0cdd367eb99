//! The life of one worker process, as a state machine:
//!
//! ```text
//! spawned ──handshake──▶ connected ──assign──▶ running ──measurement──▶ idle ─┐
//!    │                      ▲                     │                          │
//!    │                      └──────── next job ◀──┼──────────────────────────┘
//!    │                                            │                 no job left
//!    ▼                                            ▼                      ▼
//! exited early / connect timeout      failed / crashed / timed out   shutdown ─▶ completed
//!                                     / protocol violation / cancelled
//! ```
//!
//! Every ending is a [`WorkerEnd`] variant; no shortcut collapses two of them.
//! Whatever the ending, the process group is gone and the process reaped
//! before [`supervise`] returns.

mod ending;
mod feed;
pub(crate) mod jobs_file;
mod outcome;
mod shared;
pub(crate) mod tally;

use ending::{died_or_violated, shut_down, task_shut_down};
pub(crate) use feed::Feed;
pub(crate) use jobs_file::lock;
pub(crate) use outcome::{Item, Job, JobResult, WorkerEnd, WorkerOutcome, after_timeout};
pub(crate) use shared::{Ask, Shared};
use tally::Cpu;
pub(crate) use tally::Tally;

use crate::admission::{self, Connection};
use crate::events::Event;
use crate::process::WorkerProcess;
use protocol::frame::{self, FrameError};
use protocol::{FromWorker, KillPoint, Stage, ToWorker};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

type Incoming = mpsc::UnboundedReceiver<Result<FromWorker, FrameError>>;

/// Supervises one launched worker to its end.
pub(crate) async fn supervise(
    proc: WorkerProcess,
    conn: oneshot::Receiver<Connection>,
    shared: &Shared,
) -> WorkerOutcome {
    let rank = proc.rank;
    let rss_floor_bytes = proc.rss_floor_bytes;
    let task_of_step = proc.task_of_step;
    let launched = proc.launched;
    let outcome = |jobs, end, exit| WorkerOutcome {
        rank,
        rss_floor_bytes,
        jobs,
        tally: None,
        end,
        exit,
        task_of_step,
        host_sha256: None,
        launched,
        connected: None,
        finished: None,
        finished_artifacts: Vec::new(),
        beside: None,
    };

    // spawned → connected
    let conn = tokio::select! {
        biased;
        c = conn => c.ok(),
        exit = proc.wait() => {
            return outcome(Vec::new(), WorkerEnd::ExitedBeforeHandshake { exit: exit.kind }, exit);
        }
        _ = tokio::time::sleep(shared.connect_timeout) => {
            let exit = proc.terminate(shared.grace).await;
            return outcome(Vec::new(), WorkerEnd::ConnectTimeout { after: shared.connect_timeout }, exit);
        }
        _ = shared.cancel.cancelled() => {
            let exit = proc.terminate(shared.grace).await;
            return outcome(Vec::new(), WorkerEnd::Cancelled { in_flight: None }, exit);
        }
    };
    let Some(Connection { reader, mut writer, hello }) = conn else {
        let exit = proc.terminate(shared.grace).await;
        let detail = "connection lost during admission".to_string();
        return outcome(Vec::new(), WorkerEnd::ProtocolViolation { key: None, detail }, exit);
    };
    let connected = Some(std::time::Instant::now());
    let (tx, mut incoming) = mpsc::unbounded_channel();
    let reader_task = tokio::spawn(read_frames(reader, tx));

    // connected ⇄ running: up to `window` jobs handed over ahead of their
    // answers (a worker runs them in turn), so the next is already on its
    // socket when the current one's answer leaves.
    let mut jobs = Vec::new();
    let mut tally = shared.fold.then(Tally::default);
    let mut done = 0;
    let mut failure = None;
    let mut ahead = std::collections::VecDeque::new();
    let window = shared.window();
    while done < shared.jobs_per_process {
        if shared.cancel.is_cancelled() {
            let in_flight = ahead.front().and_then(|j: &Job| j.item).map(|i| i.to_string());
            failure = Some(WorkerEnd::Cancelled { in_flight });
            break;
        }
        while ahead.len() < window && done + ahead.len() < shared.jobs_per_process {
            let Some(job) = shared.next_job(ahead.len()).await else { break };
            if let Err(end) = assign(&proc, &mut writer, shared, &job, ahead.front()).await {
                failure = Some(end);
                break;
            }
            ahead.push_back(job);
        }
        if failure.is_some() {
            break;
        }
        let Some(job) = ahead.pop_front() else { break };
        tracing::debug!(rank = rank.0, pid = proc.pid, key = %job.key, "stage started");
        if !shared.fold {
            let _ = shared.events.send(Event::StageStarted { rank, key: job.key.clone() });
        }
        match answer(&proc, &mut incoming, shared, job).await {
            Ok(result) => {
                match shared.fold {
                    true => shared.count_ended(),
                    false => {
                        let _ = shared.events.send(Event::StageFinished {
                            rank,
                            key: result.job.key.clone(),
                            measurement: Box::new(result.measurement.clone()),
                        });
                    }
                }
                if shared.report_done {
                    let _ = shared.asks.send(Ask::Done(Box::new(result.clone())));
                }
                if let Some(file) = &shared.jobs_file {
                    file.append(&shared.phase, rank.0, &result);
                }
                done += 1;
                match &mut tally {
                    Some(t) => t.add(result, shared.phase_started),
                    None => jobs.push(result),
                }
            }
            Err(end) => {
                failure = Some(end);
                break;
            }
        }
    }

    // Held to the run's end: no room to grow into.
    jobs.shrink_to_fit();
    // A preparation program that served items is closed and measured.
    let mut finished = None;
    let mut finished_artifacts = Vec::new();
    let mut beside = None;
    let folded = tally.as_ref().and_then(|t| t.last.as_ref());
    let served = folded
        .into_iter()
        .chain(jobs.iter().rev())
        .find(|j| matches!(j.job.stage, Stage::PrepareItem { .. }));
    if let (None, Some(last)) = (&failure, served) {
        let key = last.job.key.clone();
        match finish(&proc, &mut writer, &mut incoming, shared, key).await {
            Ok(closed) => {
                finished = Some(closed.measurement);
                finished_artifacts = closed.artifacts;
                beside = closed.beside;
            }
            Err(end) => failure = Some(end),
        }
    }

    // idle → shutdown → completed, or any failure → terminated
    let (end, exit) = match failure {
        Some(end) => (end, proc.terminate(shared.grace).await),
        None if task_of_step => {
            let close = finished.as_ref();
            let cpu = Cpu::of(&jobs, tally.as_ref(), close);
            task_shut_down(&proc, &mut writer, &mut incoming, cpu, shared.grace).await
        }
        None => shut_down(&proc, &mut writer, shared.grace).await,
    };
    reader_task.abort();
    WorkerOutcome {
        host_sha256: Some(hello.host_sha256),
        connected,
        finished,
        finished_artifacts,
        beside,
        tally,
        ..outcome(jobs, end, exit)
    }
}

/// A preparation program's close, as its worker reported it.
struct Closed {
    measurement: protocol::Measurement,
    artifacts: Vec<(String, [u8; 32])>,
    beside: Option<protocol::Beside>,
}

/// Asks a worker to close its preparation program, and waits for the
/// measured close (the worker gives the program the connect timeout to exit).
async fn finish(
    proc: &WorkerProcess,
    writer: &mut admission::WriteHalf,
    incoming: &mut Incoming,
    shared: &Shared,
    key: String,
) -> Result<Closed, WorkerEnd> {
    if frame::nonblocking::write(writer, &ToWorker::Finish).await.is_err() {
        let detail = "connection lost while closing the preparation program".to_string();
        return Err(died_or_violated(proc, (Some(key), None), detail, shared).await);
    }
    let patience = shared.connect_timeout + shared.grace + Duration::from_secs(5);
    let msg = tokio::select! {
        biased;
        _ = shared.cancel.cancelled() => return Err(WorkerEnd::Cancelled { in_flight: None }),
        m = tokio::time::timeout(patience, incoming.recv()) => m,
    };
    let violation =
        |detail: String| WorkerEnd::ProtocolViolation { key: Some(key.clone()), detail };
    match msg {
        Err(_) => Err(violation("did not report its preparation program's close".into())),
        Ok(Some(Ok(FromWorker::Finished { measurement, error: None, artifacts, beside }))) => {
            if let Some(w) = artifacts.iter().find(|w| !report::rundir::is_safe_relative(&w.path)) {
                let path = &w.path;
                return Err(violation(format!(
                    "artifact path '{path}' is not a plain relative path"
                )));
            }
            let artifacts = artifacts.into_iter().map(|w| (w.path, w.sha256)).collect();
            Ok(Closed { measurement, artifacts, beside })
        }
        Ok(Some(Ok(FromWorker::Finished { error: Some(error), .. }))) => {
            Err(WorkerEnd::StageFailed { key, error, done: Vec::new(), stderr_tail: None })
        }
        Ok(Some(Ok(other))) => {
            Err(violation(format!("unexpected {} frame", admission::kind(&other))))
        }
        Ok(Some(Err(e @ (FrameError::Oversized { .. } | FrameError::Decode(_))))) => {
            Err(violation(e.to_string()))
        }
        Ok(Some(Err(e))) => {
            Err(died_or_violated(proc, (Some(key), None), e.to_string(), shared).await)
        }
        Ok(None) => {
            Err(died_or_violated(proc, (Some(key), None), "connection lost".into(), shared).await)
        }
    }
}

async fn read_frames(
    reader: admission::ReadHalf,
    tx: mpsc::UnboundedSender<Result<FromWorker, FrameError>>,
) {
    // One read takes in every frame waiting (a header and its payload, or
    // the answers of a window of items), not a read for each part.
    let mut reader = tokio::io::BufReader::with_capacity(8 << 10, reader);
    loop {
        let r = frame::nonblocking::read::<_, FromWorker>(&mut reader).await;
        let stop = r.is_err();
        if tx.send(r).is_err() || stop {
            return;
        }
    }
}

/// When `job` runs out of time, and which limit that is: a stage's
/// `--stage-timeout` from its start, or for an item (one job of a phase
/// of items, which is the stage) the earlier of the phase's and the
/// item's own `--item-timeout`.
fn deadline(shared: &Shared, job: &Job) -> (Option<tokio::time::Instant>, Limit) {
    let now = tokio::time::Instant::now();
    let stage = |from: tokio::time::Instant| shared.stage_timeout.map(|t| from + t);
    if job.item.is_none() {
        return (stage(now), Limit::Stage);
    }
    let phase_end = stage(shared.started);
    match shared.item_timeout.map(|t| (now + t, t)) {
        Some((end, after)) if phase_end.is_none_or(|p| end < p) => (Some(end), Limit::Item(after)),
        _ => (phase_end, Limit::Stage),
    }
}

/// The limit a job's [`deadline`] is; the ending that says so is made only
/// when it is reached (not on every job of a phase of 10⁶ items).
#[derive(Clone, Copy)]
enum Limit {
    Stage,
    Item(Duration),
}

impl Limit {
    /// The ending of `job` past this limit, naming the item in flight.
    fn reached(self, shared: &Shared, job: &Job) -> WorkerEnd {
        let key = job.key.clone();
        match (self, job.item) {
            (Limit::Item(after), Some(item)) => {
                WorkerEnd::ItemTimeout { key, item: item.to_string(), after }
            }
            _ => {
                let after = shared.stage_timeout.unwrap_or_default();
                WorkerEnd::StageTimeout { key, after, item: job.item.map(|i| i.to_string()) }
            }
        }
    }
}

/// Hands `job` to the worker (its answer is awaited by [`answer`]) behind
/// `in_flight`, the first job handed over and not answered: a worker that
/// died while working on that one breaks the connection under this write,
/// and is named with that job's item.
async fn assign(
    proc: &WorkerProcess,
    writer: &mut admission::WriteHalf,
    shared: &Shared,
    job: &Job,
    in_flight: Option<&Job>,
) -> Result<(), WorkerEnd> {
    let point = shared.kill_at.as_ref().filter(|k| k.stage == job.key);
    let kill = point.filter(|_| is_command(job)).map(|k| k.point.clone());
    let assign = ToWorker::Assign {
        job: job.id,
        stage: job.stage.clone(),
        kill,
        spans: job.spans.clone(),
        sample: job.sample.clone(),
    };
    if frame::nonblocking::write(writer, &assign).await.is_err() {
        let at = match in_flight {
            Some(j) => (Some(j.key.clone()), j.item),
            None => (Some(job.key.clone()), None),
        };
        let detail = "connection lost while assigning".into();
        return Err(died_or_violated(proc, at, detail, shared).await);
    }
    Ok(())
}

/// A command stage is killed at its point by its worker, tree and all;
/// a built-in stage by its supervisor, on the progress it reports.
fn is_command(job: &Job) -> bool {
    matches!(job.stage, Stage::Command { .. } | Stage::Exec { .. })
}

/// Waits for the answer to `job`, the first of those handed over and not
/// answered: its time limits run from now, when its worker starts it. The
/// job is its result's.
async fn answer(
    proc: &WorkerProcess,
    incoming: &mut Incoming,
    shared: &Shared,
    owned: Job,
) -> Result<JobResult, WorkerEnd> {
    let job = &owned;
    let rank = proc.rank;
    let key = || Some(job.key.clone());
    let point = shared.kill_at.as_ref().filter(|k| k.stage == job.key);
    let is_command = is_command(job);
    let killed_by_worker = point.is_some() && is_command;
    let (deadline, limit) = deadline(shared, job);
    let mut artifacts = Vec::new();
    loop {
        let msg = tokio::select! {
            biased;
            _ = shared.cancel.cancelled() => {
                return Err(WorkerEnd::Cancelled { in_flight: job.item.map(|i| i.to_string()) });
            }
            m = incoming.recv() => m,
            _ = sleep_until(deadline) => return Err(limit.reached(shared, job)),
        };
        let violation = |detail: String| WorkerEnd::ProtocolViolation { key: key(), detail };
        match msg {
            Some(Ok(FromWorker::Progress { job: j, done, total })) if j == job.id => {
                let _ = shared.events.send(Event::Progress { key: job.key.clone(), done, total });
                let fraction = match point.map(|k| &k.point) {
                    Some(KillPoint::Progress(f)) if !is_command => Some(*f),
                    _ => None,
                };
                if fraction.is_some_and(|f| done as f64 >= f * total as f64) {
                    // The declared interruption: no warning, no grace.
                    // Reaped, like every ending, by the supervisor's terminate.
                    proc.kill_now();
                    let at = format!("{done} of {total} done");
                    return Err(WorkerEnd::KilledAtPoint {
                        key: job.key.clone(),
                        at,
                        done: Vec::new(),
                    });
                }
            }
            Some(Ok(FromWorker::KilledAtPoint { job: j, at, slices }))
                if j == job.id && killed_by_worker =>
            {
                return Err(WorkerEnd::KilledAtPoint { key: job.key.clone(), at, done: slices });
            }
            Some(Ok(FromWorker::Artifact { job: j, path, sha256 })) if j == job.id => {
                if !report::rundir::is_safe_relative(&path) {
                    return Err(violation(format!(
                        "artifact path '{path}' is not a plain relative path"
                    )));
                }
                artifacts.push((path, sha256));
            }
            Some(Ok(FromWorker::Measurement { job: j, measurement })) if j == job.id => {
                let received = std::time::Instant::now();
                return Ok(JobResult {
                    job: owned,
                    worker: rank,
                    measurement,
                    artifacts,
                    received,
                });
            }
            Some(Ok(FromWorker::StageFailed { job: j, error, slices, stderr_tail }))
                if j == job.id =>
            {
                let error = match &job.item {
                    Some(item) => format!("{item}: {error}"),
                    None => error,
                };
                return Err(WorkerEnd::StageFailed {
                    key: job.key.clone(),
                    error,
                    done: slices,
                    stderr_tail,
                });
            }
            Some(Ok(other)) => {
                return Err(violation(format!("unexpected {} frame", admission::kind(&other))));
            }
            Some(Err(e @ (FrameError::Oversized { .. } | FrameError::Decode(_)))) => {
                return Err(violation(e.to_string()));
            }
            Some(Err(e)) => {
                return Err(died_or_violated(proc, (key(), job.item), e.to_string(), shared).await);
            }
            None => {
                return Err(died_or_violated(
                    proc,
                    (key(), job.item),
                    "connection lost".into(),
                    shared,
                )
                .await);
            }
        }
    }
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}
