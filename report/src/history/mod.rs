//! `coordinator history DIR`: when did a figure shift? Every run below
//! DIR whose report's seal holds and that shares one definition (mode,
//! dataset, each stage's definition), in order, and for each figure of
//! each stage the change points of its per-run medians
//! ([`crate::stats::change_points`]: e-divisive means with a permutation
//! test, so a flat history says "no change").
//!
//! - The order: runs grouped by the commit they record (the measured
//!   program's, from its stages' provenance, else stagebench's own, shown
//!   as `stagebench@COMMIT`: the built-in recipe is stagebench's code), the
//!   groups in the order their first run started, and by start time within
//!   one. Without a repository that is the only order commits have.
//! - A figure's value for a run is the median of what the run measured of
//!   it (its trials, its rounds, or its one record), as `compare` reads it.
//! - Where several definitions share DIR, the one with the most runs is
//!   read and the others are counted, never mixed in.
//! - Only evidence that verifies is read: each run is checked as `verify`
//!   checks it (its seal, the declaration and environment it binds, its
//!   artifacts and what it derives), and every run left out is named with
//!   why (it does not verify, it has no report, another definition).
//! - Nothing in DIR is written but `history.md` and `history-plots/`
//!   ([`files`]), and a DIR that is, or lies in, a run, campaign or
//!   bisection directory is refused: a file written there would fail its
//!   `verify`.

pub mod files;
pub mod page;
pub mod plot;
pub mod text;

use crate::compare::{Run, expand, later_keys, samples};
use crate::modes::Report;
use crate::rundir::failure::Failure;
use crate::rundir::{DECLARATION, FAILURE, REPORT};
use crate::runs_below::{Declared, find_runs, read};
use crate::stats::{self, ChangePoint, Interval};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What `coordinator history` writes into DIR (see [`files`]).
pub const INDEX: &str = "history.md";
/// The first line of every history.md; one without it is the user's.
pub const MARKER: &str =
    "<!-- written by `coordinator history`: rerun it instead of editing this file -->";
/// The plots' directory in DIR.
pub const PLOTS: &str = "history-plots";

/// The figures read unless asked: each stage's wall, CPU and tree peak,
/// every span's seconds, and a cold preparation's speedup (a pattern, so a
/// history of another mode, which has none, is no error).
pub const DEFAULT_FIGURES: [&str; 5] = ["wall_s", "cpu_s", "tree_peak_bytes", "span:*", "speedup*"];

/// Where a run's own figures (not a stage's) are read: a cold
/// preparation's `speedup`, every round's.
pub const RUN_FIGURES: &str = "run";

/// Why no history was made.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error("'{0}' is not a directory")]
    NotADirectory(String),
    #[error("reading '{0}': {1}")]
    Read(String, std::io::Error),
    #[error("no run below '{0}' has a report.json that verifies{1}")]
    NoRuns(String, String),
    #[error(
        "'{0}' is in the evidence directory '{1}' (it holds declaration.json), which a history.md would alter: point history at a directory of runs"
    )]
    InEvidence(String, String),
    #[error("--figure {0}: no stage of these runs records it in every run")]
    NoFigure(String),
    #[error("--min-segment must be at least 2 (a segment's spread needs two runs), not {0}")]
    MinSegment(usize),
    /// A history.md the history did not write is the user's.
    #[error("'{0}' exists and was not written by `coordinator history`; it is left alone")]
    NotOurs(String),
    #[error("writing '{0}': {1}")]
    Write(String, std::io::Error),
    #[error("a history plot: {0}")]
    Plot(#[from] crate::chart::RenderError),
}

/// One run of the history, in order.
#[derive(Debug)]
pub struct HistoryRun {
    /// Its directory, relative to DIR.
    pub rel: String,
    pub created_utc: String,
    /// The commit it recorded (see the module's doc), if any.
    pub commit: Option<String>,
}

/// A change point of one stage's figure.
#[derive(Debug)]
pub struct Change {
    pub stage: String,
    pub figure: String,
    /// The first run after the change (an index into [`History::runs`]).
    pub at: usize,
    /// The medians of the run medians in the segments either side.
    pub before: f64,
    pub after: f64,
    /// after / before, with its interval (the runs of each segment as samples).
    pub ratio: f64,
    pub interval: Interval,
    /// The permutation test's p-value.
    pub p: f64,
}

/// A history: its runs in order, the figures read, and their changes.
#[derive(Debug)]
pub struct History {
    pub runs: Vec<HistoryRun>,
    /// The first 12 hex digits of the definition read.
    pub definition: String,
    pub mode: String,
    /// Runs below DIR of other definitions, left out.
    pub other_definitions: usize,
    pub other_runs: usize,
    /// Every other run below DIR left out, by its directory relative to
    /// DIR, with why (it does not verify, or has no report), in path order.
    pub left_out: Vec<(String, String)>,
    pub min_segment: usize,
    /// Every (stage, figure) read, in plan order.
    pub figures: Vec<(String, String)>,
    /// Each figure's value per run, in history order (as `figures`).
    pub series: Vec<Vec<f64>>,
    pub changes: Vec<Change>,
    /// Per figure whose strongest split the permutation test could not
    /// decide ([`stats::Search::unsure`]): that split, neither a change nor
    /// its absence.
    pub unsure: Vec<Change>,
}

impl History {
    /// Whether there are too few runs for any change point to be found:
    /// none fits, or none can reach p < [`stats::SIGNIFICANCE`]
    /// ([`stats::lowest_p`]).
    pub fn too_short(&self) -> bool {
        stats::lowest_p(self.runs.len(), self.min_segment) >= stats::SIGNIFICANCE
    }
}

/// One run as read: where, when, which commit, which definition, and the
/// figures compare reads.
struct Read {
    rel: String,
    created: String,
    commit: Option<String>,
    definition: String,
    mode: String,
    run: Run,
}

/// The history of the runs below `dir`.
pub fn history(
    dir: &Path,
    figures: &[String],
    min_segment: usize,
) -> Result<History, HistoryError> {
    if min_segment < 2 {
        return Err(HistoryError::MinSegment(min_segment));
    }
    if !dir.is_dir() {
        return Err(HistoryError::NotADirectory(dir.display().to_string()));
    }
    if let Some(evidence) = crate::runs_below::evidence_at_or_above(dir) {
        let shown = |p: &Path| p.display().to_string();
        return Err(HistoryError::InEvidence(shown(dir), shown(&evidence)));
    }
    let found = find_runs(dir).map_err(|e| HistoryError::Read(dir.display().to_string(), e))?;
    let checked: Vec<Result<(), LeftOut>> =
        found.par_iter().map(|(path, decl)| verified(path, decl)).collect();
    let mut all = Vec::new();
    let mut left_out = Vec::new();
    for ((path, decl), check) in found.iter().zip(checked) {
        let rel = relative(dir, path);
        match check.and_then(|()| read_run(dir, path, decl).ok_or(LeftOut::Unreadable)) {
            Ok(r) => all.push(r),
            // A campaign is read as its runs, which are below it.
            Err(LeftOut::Campaign) => {}
            Err(why) => left_out.push((rel, why.to_string())),
        }
    }
    // The definition with the most runs (ties: the smaller hash, so the
    // choice never depends on the walk).
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &all {
        *counts.entry(&r.definition).or_default() += 1;
    }
    let Some((&chosen, _)) = counts.iter().max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0))) else {
        let why = match left_out.len() {
            0 => String::new(),
            n => format!(" ({n} left out, such as '{}': {})", left_out[0].0, left_out[0].1),
        };
        return Err(HistoryError::NoRuns(dir.display().to_string(), why));
    };
    let chosen = chosen.to_string();
    let other_definitions = counts.len() - 1;
    let other_runs = all.len() - counts[chosen.as_str()];
    let mut runs: Vec<Read> = all.into_iter().filter(|r| r.definition == chosen).collect();
    order(&mut runs);
    let figures = figures_of(&runs, figures)?;
    let (all_series, changes, unsure) = analyse(&runs, &figures, min_segment);
    Ok(History {
        definition: chosen[..12].to_string(),
        mode: runs[0].mode.clone(),
        runs: runs
            .into_iter()
            .map(|r| HistoryRun { rel: r.rel, created_utc: r.created, commit: r.commit })
            .collect(),
        other_definitions,
        other_runs,
        left_out,
        min_segment,
        figures,
        series: all_series,
        changes,
        unsure,
    })
}

/// Each figure's series over `runs` (in order), its change points, and
/// the splits the test could not decide.
fn analyse(
    runs: &[Read],
    figures: &[(String, String)],
    min_segment: usize,
) -> (Vec<Vec<f64>>, Vec<Change>, Vec<Change>) {
    let (mut changes, mut unsure) = (Vec::new(), Vec::new());
    let mut all_series = Vec::new();
    for (i, (stage, figure)) in figures.iter().enumerate() {
        let series: Vec<f64> = runs.iter().map(|r| run_median(&r.run, stage, figure)).collect();
        let seed = i as u64;
        let found = stats::search(&series, min_segment, seed);
        changes.extend(changes_of(stage, figure, &series, &found.points, seed));
        if let Some(c) = found.unsure {
            // Its sides: the segment it would split, between the changes kept.
            let mut points = found.points.clone();
            points.push(c);
            points.sort_by_key(|p| p.at);
            let all = changes_of(stage, figure, &series, &points, seed);
            unsure.extend(all.into_iter().filter(|x| x.at == c.at));
        }
        all_series.push(series);
    }
    (all_series, changes, unsure)
}

/// A run's place in its definition's history, for the dashboard.
#[derive(Clone, Debug, Default)]
pub struct Trend {
    /// Its last change (see [`last_changes`]), if any.
    pub last_change: Option<String>,
    /// The sum of the stages' median walls of each run of its definition,
    /// in history order, and which of them this run is.
    pub walls: Vec<f64>,
    pub at: usize,
    /// The runs that begin a change (of any stage's figure), in order.
    pub changes: Vec<usize>,
}

/// For the dashboard: each run's trend, by its directory relative to
/// `base`. A run's history is its definition's runs (the default figures,
/// the default minimum segment), and its last change is the latest change
/// event at or before it (see `last_change`): "nap wall_s ×1.52 from r07".
/// Change points are looked for only in a history long enough to hold one
/// ([`stats::lowest_p`]). `verified` are the runs whose evidence the
/// caller checked ([`verified`]); no other is read.
pub fn last_changes(base: &Path, verified: &[&(PathBuf, Declared)]) -> BTreeMap<String, Trend> {
    let mut groups: BTreeMap<String, Vec<Read>> = BTreeMap::new();
    for r in verified.iter().filter_map(|(path, decl)| read_run(base, path, decl)) {
        groups.entry(r.definition.clone()).or_default().push(r);
    }
    let asked: Vec<String> = DEFAULT_FIGURES.iter().map(|f| f.to_string()).collect();
    let mut out = BTreeMap::new();
    let enough = |g: &Vec<Read>| stats::lowest_p(g.len(), stats::MIN_SEGMENT) < stats::SIGNIFICANCE;
    for mut runs in groups.into_values() {
        order(&mut runs);
        let Ok(figures) = figures_of(&runs, &asked) else { continue };
        let walls: Vec<f64> = runs
            .iter()
            .map(|r| {
                let wall = figures.iter().filter(|(_, f)| f == "wall_s");
                wall.map(|(stage, f)| run_median(&r.run, stage, f)).sum()
            })
            .collect();
        let changes = match enough(&runs) {
            true => analyse(&runs, &figures, stats::MIN_SEGMENT).1,
            false => Vec::new(),
        };
        let mut starts: Vec<usize> = changes.iter().map(|c| c.at).collect();
        starts.sort();
        starts.dedup();
        for (k, run) in runs.iter().enumerate() {
            let last_change = last_change(&changes, k, stats::MIN_SEGMENT).map(|c| {
                format!("{} {} ×{:.2} from {}", c.stage, c.figure, c.ratio, runs[c.at].rel)
            });
            let trend = Trend { last_change, walls: walls.clone(), at: k, changes: starts.clone() };
            out.insert(run.rel.clone(), trend);
        }
    }
    out
}

/// The last change event at or before run `k`, named by its largest
/// change. Change points of different figures fewer than `min_segment`
/// runs apart are one event: the method cannot place a change closer than
/// a segment, so one shift that moves a wall ×5 and a CPU ×1.2 may put the
/// CPU's point a run later, and the event is the wall's. Of the event's
/// points (the latest at or before `k`, and those within `min_segment`
/// runs before it), the one with the largest |ln ratio|.
fn last_change(changes: &[Change], k: usize, min_segment: usize) -> Option<&Change> {
    let latest = changes.iter().filter(|c| c.at <= k).map(|c| c.at).max()?;
    changes
        .iter()
        .filter(|c| c.at <= latest && c.at + min_segment > latest)
        .max_by(|a, b| a.ratio.ln().abs().total_cmp(&b.ratio.ln().abs()).then(a.at.cmp(&b.at)))
}

/// Why a directory below DIR is not read as a run of the history: the
/// reason of a failed run, never its message (which may name a file).
#[derive(Debug, thiserror::Error)]
pub enum LeftOut {
    /// A campaign, which is read as its runs (below it): never listed.
    #[error("a campaign (read as its runs)")]
    Campaign,
    #[error("its {DECLARATION} cannot be read")]
    Declaration,
    #[error("no {REPORT}: it failed ({0})")]
    Failed(String),
    #[error("no {REPORT} (interrupted or running)")]
    Unfinished,
    #[error("it does not verify: {0}")]
    Unverified(#[source] crate::verify::Mismatch),
    #[error("unreadable")]
    Unreadable,
}

/// Whether a directory below DIR is evidence the history may read: a run
/// that verifies and has a report.
pub fn verified(dir: &Path, decl: &Declared) -> Result<(), LeftOut> {
    match decl {
        Declared::Campaign(_) => return Err(LeftOut::Campaign),
        Declared::Unreadable => return Err(LeftOut::Declaration),
        Declared::Run(_) => {}
    }
    if !dir.join(REPORT).exists() {
        return Err(match read::<Failure>(&dir.join(FAILURE)) {
            Some(f) => LeftOut::Failed(f.reason),
            None => LeftOut::Unfinished,
        });
    }
    crate::verify::verify(dir).map(|_| ()).map_err(LeftOut::Unverified)
}

/// `dir` relative to `base`, as history and dashboard name it.
pub fn relative(base: &Path, dir: &Path) -> String {
    dir.strip_prefix(base).unwrap_or(dir).to_string_lossy().into_owned()
}

/// A run directory read for the history; None unless it is a run (not a
/// campaign) with a report. Its evidence is the caller's to have checked
/// ([`verified`]).
fn read_run(base: &Path, dir: &Path, decl: &Declared) -> Option<Read> {
    let Declared::Run(decl) = decl else { return None };
    let rep: Report = read(&dir.join(REPORT))?;
    let commit = rep
        .stages
        .values()
        .find_map(|s| s.runtime.as_ref()?.git_commit.clone())
        .or_else(|| Some(format!("stagebench@{}", decl.program.git_commit.as_deref()?)));
    let definition = evidence::sha256_hex(&evidence::to_bytes(&(
        &decl.mode,
        &decl.dataset_fingerprint,
        decl.stages.iter().map(|s| (&s.key, &s.definition_sha256)).collect::<Vec<_>>(),
    )));
    Some(Read {
        rel: relative(base, dir),
        created: decl.created_utc.clone(),
        commit,
        definition,
        mode: decl.mode.clone(),
        run: with_speedup(Run::new(decl, &rep), &rep),
    })
}

/// A cold preparation's speedup added to what is read of its run, under
/// [`RUN_FIGURES`]: every round's (serial wall over parallel wall), or the
/// one. Higher is better here; a change point has no direction.
fn with_speedup(mut run: Run, rep: &Report) -> Run {
    if let crate::modes::Section::ColdPrep(s) = &rep.section {
        let xs: Vec<f64> = match s.rounds.is_empty() {
            true => vec![s.speedup],
            false => s.rounds.iter().map(|r| r.speedup).collect(),
        };
        run.planned.push((RUN_FIGURES.to_string(), String::new()));
        run.repeated.entry(RUN_FIGURES.to_string()).or_default().insert("speedup".into(), xs);
    }
    run
}

/// By commit (in the order each commit's first run started), then start
/// time (to the microsecond where the declaration has it), then directory
/// (runs of one second from before declarations held microseconds).
fn order(runs: &mut [Read]) {
    use evidence::timestamp::instant_key as at;
    runs.sort_by(|a, b| at(&a.created).cmp(&at(&b.created)).then_with(|| a.rel.cmp(&b.rel)));
    let mut first: BTreeMap<Option<String>, usize> = BTreeMap::new();
    for (i, r) in runs.iter().enumerate() {
        first.entry(r.commit.clone()).or_insert(i);
    }
    runs.sort_by_key(|r| first[&r.commit]);
}

/// Every (stage, figure) asked, for the stages the runs plan (a later
/// round's stage is read as samples of its first), each figure recorded
/// by every run. A figure named outright that no stage has is refused.
fn figures_of(runs: &[Read], asked: &[String]) -> Result<Vec<(String, String)>, HistoryError> {
    let all: Vec<&Run> = runs.iter().map(|r| &r.run).collect();
    let first = all[0];
    let pooled: Vec<String> = first
        .planned
        .iter()
        .flat_map(|(k, _)| later_keys(&first.planned, k, first.rounds))
        .collect();
    let mut out = Vec::new();
    for (stage, _) in first.planned.iter().filter(|(k, _)| !pooled.contains(k)) {
        for figure in expand(asked, &all, stage) {
            if all.iter().all(|r| {
                !samples(r, stage, &later_keys(&r.planned, stage, r.rounds), &figure).is_empty()
            }) {
                out.push((stage.clone(), figure));
            }
        }
    }
    if let Some(f) = asked.iter().find(|f| !f.ends_with('*') && !out.iter().any(|(_, g)| g == *f)) {
        return Err(HistoryError::NoFigure(f.clone()));
    }
    Ok(out)
}

/// The median of what `run` measured of `figure` for `stage`.
fn run_median(run: &Run, stage: &str, figure: &str) -> f64 {
    stats::median(&samples(run, stage, &later_keys(&run.planned, stage, run.rounds), figure))
}

/// Each change point as a [`Change`]: its segment's medians either side.
fn changes_of(
    stage: &str,
    figure: &str,
    series: &[f64],
    points: &[ChangePoint],
    seed: u64,
) -> Vec<Change> {
    let bounds: Vec<usize> =
        std::iter::once(0).chain(points.iter().map(|c| c.at)).chain([series.len()]).collect();
    points
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let (before, after) = (&series[bounds[i]..c.at], &series[c.at..bounds[i + 2]]);
            let (b, a) = (stats::median(before), stats::median(after));
            Change {
                stage: stage.into(),
                figure: figure.into(),
                at: c.at,
                before: b,
                after: a,
                ratio: a / b,
                interval: stats::ratio_of_medians_interval(before, after, seed),
                p: c.p,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
