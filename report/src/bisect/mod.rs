//! `coordinator bisect`'s evidence: which commit of a first-parent history
//! made a figure slower, found by probing commits with fresh-process runs
//! and classifying each probe by the rank test against both endpoints.
//!
//! Here: the records (the declaration written before the first probe, the
//! report listing every probe in order, `crate::rundir::bisect`'s), the
//! reading of a probe's run directory (`read_run`: verified first), the
//! endpoints' test (`endpoints`), each probe's classification
//! (`classify`), the order of probes (`search`) and the text (`text`). The
//! coordinator checks commits out, builds and runs them; this module never
//! spawns a process.

pub mod search;

pub use crate::render::bisect::text;

use crate::compare::{self, Row, Run};
use crate::rundir::declaration::Declaration;
use crate::rundir::{DECLARATION, REPORT};
use crate::stats::{self, Interval};
use std::path::Path;

pub use crate::rundir::bisect::*;

impl From<&Row> for Endpoints {
    fn from(r: &Row) -> Endpoints {
        Endpoints {
            stage: r.stage.clone(),
            figure: r.figure.clone(),
            median_good: r.median_a,
            median_bad: r.median_b,
            ratio: r.ratio,
            interval: r.ci,
            p: r.p,
            regressed: r.regressed,
            unsure: None,
        }
    }
}

/// Why a probe's run directory cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("{dir}: {mismatch}")]
    Unverified { dir: String, mismatch: crate::verify::Mismatch },
    #[error("{dir}: {file} cannot be read as its type")]
    Unreadable { dir: String, file: &'static str },
}

/// A probe's run directory, verified and read as compare reads a run.
pub fn read_run(dir: &Path) -> Result<Run, ProbeError> {
    let shown = || dir.display().to_string();
    crate::verify::verify(dir)
        .map_err(|mismatch| ProbeError::Unverified { dir: shown(), mismatch })?;
    let declaration: Declaration = crate::runs_below::read(&dir.join(DECLARATION))
        .ok_or_else(|| ProbeError::Unreadable { dir: shown(), file: DECLARATION })?;
    let report: crate::modes::Report = crate::runs_below::read(&dir.join(REPORT))
        .ok_or_else(|| ProbeError::Unreadable { dir: shown(), file: REPORT })?;
    Ok(Run::new(&declaration, &report).with_spans(&report))
}

/// Every counted sample of `figure` for `stage` in one run.
pub fn samples(run: &Run, stage: &str, figure: &str) -> Vec<f64> {
    let later = compare::later_keys(&run.planned, stage, run.rounds);
    compare::samples(run, stage, &later, figure)
}

/// The figures of a run matching `figure` (a name, or a pattern ending in
/// `*`), for every stage that is not a later round of another.
pub fn stages_with(run: &Run, figure: &str) -> Vec<(String, String)> {
    let pooled: std::collections::BTreeSet<String> = run
        .planned
        .iter()
        .flat_map(|(k, _)| compare::later_keys(&run.planned, k, run.rounds))
        .collect();
    let mut out = Vec::new();
    for (stage, _) in run.planned.iter().filter(|(k, _)| !pooled.contains(k)) {
        for f in compare::expand(&[figure.to_string()], &[run], stage) {
            out.push((stage.clone(), f));
        }
    }
    out
}

/// Good against bad for `figure` (a pattern expands) over every stage
/// both record: the row that regressed by the largest ratio, else the row
/// with the largest ratio (which did not regress). None when no stage
/// records the figure in both.
pub fn endpoints(good: &[Run], bad: &[Run], figure: &str, threshold_pct: f64) -> Option<Row> {
    let pooled = |runs: &[Run], stage: &str, f: &str| -> Vec<f64> {
        runs.iter().flat_map(|r| samples(r, stage, f)).collect()
    };
    let first = good.first()?;
    let mut rows: Vec<Row> = stages_with(first, figure)
        .into_iter()
        .enumerate()
        .filter_map(|(i, (stage, f))| {
            let (a, b) = (pooled(good, &stage, &f), pooled(bad, &stage, &f));
            (!a.is_empty() && !b.is_empty())
                .then(|| compare::row(&stage, &f, &a, &b, threshold_pct, i as u64))
        })
        .collect();
    rows.sort_by(|x, y| {
        (x.regressed, x.ratio)
            .partial_cmp(&(y.regressed, y.ratio))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    rows.pop()
}

/// How a probe's samples read against both endpoints.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Classified {
    /// Good, Bad, or None: neither can be said yet.
    pub verdict: Option<ProbeVerdict>,
    pub p_good: f64,
    pub p_bad: f64,
}

/// The rank test's level for a probe's verdict: stricter than compare's
/// (0.05), because a bisection looks many times (each probe, each batch of
/// rounds) and one wrong verdict sends it down the wrong half.
pub const PROBE_ALPHA: f64 = 0.01;

/// A probe's median with its interval.
pub fn median_of(samples: &[f64]) -> Option<(f64, Interval)> {
    if samples.is_empty() {
        return None;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    Some((stats::median(&sorted), stats::median_interval(&sorted, 7)))
}

#[cfg(test)]
mod tests;
