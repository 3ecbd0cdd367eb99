//! How a worker's connection ends: a broken connection read as the
//! process's death or a protocol violation, and the shutdown of a process,
//! or of a Slurm job step's task, after its last job.

use super::{Incoming, Item, Shared, WorkerEnd, tally::Cpu};
use crate::admission;
use crate::process::{ExitKind, ProcessExit, WorkerProcess};
use protocol::ToWorker;
use protocol::frame;
use std::time::Duration;

/// The connection broke: if the process died, that is the cause; otherwise
/// the worker broke the protocol.
pub(super) async fn died_or_violated(
    proc: &WorkerProcess,
    (key, item): (Option<String>, Option<Item>),
    detail: String,
    shared: &Shared,
) -> WorkerEnd {
    match tokio::time::timeout(shared.grace, proc.wait()).await {
        Ok(exit) => {
            let item = item.map(|i| i.to_string());
            WorkerEnd::Crashed { key, exit: exit.kind, item }
        }
        Err(_) => WorkerEnd::ProtocolViolation { key, detail },
    }
}

pub(super) async fn shut_down(
    proc: &WorkerProcess,
    writer: &mut admission::WriteHalf,
    grace: Duration,
) -> (WorkerEnd, ProcessExit) {
    let _ = frame::nonblocking::write(writer, &ToWorker::Shutdown).await;
    // A clean worker exits as soon as it reads Shutdown; allow generously.
    match tokio::time::timeout(grace + Duration::from_secs(5), proc.wait()).await {
        Ok(exit) => {
            proc.kill_leftovers();
            let end = match exit.kind {
                ExitKind::Exited(0) => WorkerEnd::Completed,
                kind => WorkerEnd::Crashed { key: None, exit: kind, item: None },
            };
            (end, exit)
        }
        Err(_) => {
            let exit = proc.terminate(grace).await;
            let detail = "did not exit after shutdown".to_string();
            (WorkerEnd::ProtocolViolation { key: None, detail }, exit)
        }
    }
}

/// A task of a job step has ended when its connection closes after
/// Shutdown (the worker exits right after); the step ends with its last task.
pub(super) async fn task_shut_down(
    proc: &WorkerProcess,
    writer: &mut admission::WriteHalf,
    incoming: &mut Incoming,
    cpu: Cpu,
    grace: Duration,
) -> (WorkerEnd, ProcessExit) {
    let _ = frame::nonblocking::write(writer, &ToWorker::Shutdown).await;
    let closed = async {
        loop {
            match incoming.recv().await {
                None | Some(Err(_)) => return,
                Some(Ok(_)) => {}
            }
        }
    };
    match tokio::time::timeout(grace + Duration::from_secs(5), closed).await {
        Ok(()) => {
            let exit = ProcessExit {
                kind: ExitKind::Exited(0),
                user_ns: cpu.user_ns,
                sys_ns: cpu.sys_ns,
                peak_rss_bytes: cpu.peak_rss_bytes,
                wall: proc.launched.elapsed(),
                faults: None,
            };
            (WorkerEnd::Completed, exit)
        }
        Err(_) => {
            let exit = proc.terminate(grace).await;
            let detail = "did not close its connection after shutdown".to_string();
            (WorkerEnd::ProtocolViolation { key: None, detail }, exit)
        }
    }
}
