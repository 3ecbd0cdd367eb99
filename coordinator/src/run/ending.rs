//! What a run's phases left, read before its report is written: the first
//! failure in words, the calls its command stages got done, the processes
//! they leaked, and the entries of the run directory nothing accounts for.

use super::Done;
use crate::error::{RunError, fail};
use crate::modes::PhaseOutcome;
use crate::plan::LeakPolicy;
use crate::supervisor::WorkerEnd;
use report::Report;
use report::rundir;
use std::path::Path;

/// The phase's first failed worker, as the run's failure: its ending in
/// words, with the items other processes had in hand when a phase of
/// items ran out of time, and what its worker did with the SIGTERM.
pub(super) fn first_failure(p: &PhaseOutcome) -> Option<RunError> {
    let (rank, end) = p.dispatch.first_failure.as_ref()?;
    let mut message = end.describe(*rank);
    if let WorkerEnd::StageTimeout { item: Some(_), .. } = end {
        let elsewhere: Vec<String> = p
            .dispatch
            .outcomes
            .iter()
            .filter_map(|o| match &o.end {
                WorkerEnd::Cancelled { in_flight: Some(i) }
                | WorkerEnd::StageTimeout { item: Some(i), .. }
                    if o.rank != *rank =>
                {
                    Some(format!("{i} on {}", o.rank))
                }
                _ => None,
            })
            .collect();
        if !elsewhere.is_empty() {
            message.push_str(&format!("; also in flight: {}", elsewhere.join(", ")));
        }
    }
    if let WorkerEnd::StageTimeout { .. } | WorkerEnd::ItemTimeout { .. } = end {
        // A task of a job step is not our child: wait4 has no exit for it.
        let own = p.dispatch.outcomes.iter().find(|o| o.rank == *rank && !o.task_of_step);
        if let Some(o) = own {
            message.push_str(&crate::supervisor::after_timeout(o.exit.kind));
        }
    }
    Some(fail(end.stage().map(str::to_string), Some(rank.0), end.reason(), message))
}

/// Every entry of the run directory that neither the report (its evidence,
/// artifacts and the files their manifests list) nor its derived files
/// account for: what `verify` would name.
pub(super) fn strays(
    dir: &Path,
    report: &Report,
    derived: &[report::render::Rendered],
) -> std::io::Result<Vec<rundir::tree::Stray>> {
    let mut accounted = rundir::tree::Accounted::default();
    for f in [rundir::DECLARATION, rundir::ENVIRONMENT, rundir::REPORT] {
        accounted.file(f);
    }
    for a in &report.artifacts {
        accounted.file(&a.path);
        if a.kind == "manifest" {
            let base = Path::new(&a.path).parent().unwrap_or(Path::new(""));
            for rel in report::manifest::Manifest::read(&dir.join(&a.path))?.files.into_keys() {
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
pub(super) fn done_calls(outcomes: &[PhaseOutcome]) -> Done {
    use report::rundir::spans::calls_of_slices;
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

/// Processes a stage left behind were killed by its worker; `--leaks fail`
/// fails the run for them, `warn` says so on stderr (summary.md says it
/// too, from the report).
/// A preparation program's leaks are its close's, on the phase's key.
pub(super) fn check_leaks(outcomes: &[PhaseOutcome], policy: LeakPolicy) -> Result<(), RunError> {
    let jobs = outcomes
        .iter()
        .flat_map(|p| p.results())
        .map(|r| (&r.job.key, r.worker.0, &r.measurement.tree.leaked[..]));
    let workers =
        || outcomes.iter().flat_map(|p| p.dispatch.outcomes.iter().map(move |o| (&p.phase.key, o)));
    // A user's items, folded: the first names their processes left.
    let folded = workers()
        .filter_map(|(key, o)| o.tally.as_ref().map(|t| (key, o.rank.0, &t.leaked_names[..])));
    let closes = workers()
        .filter_map(|(key, o)| o.finished.as_ref().map(|m| (key, o.rank.0, &m.tree.leaked[..])));
    for (key, rank, leaked) in jobs.chain(folded).chain(closes) {
        if leaked.is_empty() {
            continue;
        }
        let what = report::render::view::leaked_sentence(key, leaked.len() as u32, leaked);
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
