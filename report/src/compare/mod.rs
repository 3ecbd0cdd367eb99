//! `coordinator compare RUN_A RUN_B`: per stage and figure, B against A.
//!
//! Both runs are verified first. Runs whose declarations make them
//! incomparable (mode, dataset fingerprint, a stage's definition) are refused
//! unless `--allow-incomparable`, which then marks the comparison. Per row:
//! the ratio of medians (B / A) with its interval (a bootstrap 95% one with
//! 6 samples a side, else the ranges' far ends and their coverage), a Mann–Whitney
//! rank test (unequal trial counts are fine), and a verdict. A row regressed
//! when B is significantly slower and its ratio exceeds 1 + threshold.
//!
//! Here the computing; `text` renders a comparison for a person, `files`
//! writes `--output DIR`, `plot` draws the forest plot.

mod campaigns;
mod comparable;
mod files;
pub mod html;
mod plot;
mod runs;
pub(crate) mod sampled;
pub mod stacks;
mod text;

pub use runs::{RunId, refuse_inside_evidence};

pub use files::{OUTPUT_FILES, write_output};
pub use text::render;

use crate::rundir::declaration::Declaration;
use crate::rundir::environment::Environment;
use crate::rundir::{DECLARATION, ENVIRONMENT, REPORT};
use crate::stats::{self, Verdict};
use crate::verify::verify;
use comparable::{Machine, Runtimes};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Figures compared for every stage (lower is better for each).
/// The figures compared when `--figure` is not given.
pub const DEFAULT_FIGURES: [&str; 3] = ["wall_s", "cpu_s", "peak_rss_bytes"];

#[derive(Debug)]
pub struct Row {
    pub stage: String,
    pub figure: String,
    pub n_a: usize,
    pub n_b: usize,
    pub median_a: f64,
    pub median_b: f64,
    pub ratio: f64,
    /// The ratio's interval: 95% bootstrap with 6 samples a side, else
    /// the ranges' far ends with their (least) coverage.
    pub ci: stats::Interval,
    pub p: f64,
    pub verdict: Verdict,
    pub regressed: bool,
    /// The runs differ in what this row's stage ran on (the machine, its
    /// thread settings, its runtime): see the comparability block.
    pub differs: bool,
}

#[derive(Debug)]
pub struct Comparison {
    /// Empty when the runs are comparable.
    pub incomparable: Vec<String>,
    /// What each run ran on, side by side (see `comparable`).
    pub comparability: Vec<comparable::Line>,
    pub rows: Vec<Row>,
    /// Two campaigns: per step, what B is against A and what changed most.
    /// Two runs: the stages only one of them ran (a scan's value the other
    /// did not have), never dropped without a word.
    pub notes: Vec<String>,
    /// Two runs: per stage both drew from nested spans, its stacks compared.
    pub stacks: Vec<stacks::StageStacks>,
    /// Two runs: which A and B are (empty for campaigns).
    pub runs: Vec<RunId>,
}

#[cfg(test)]
impl Comparison {
    /// Only these rows, as the tests of what shows them build one.
    fn of_rows(rows: Vec<Row>) -> Comparison {
        Comparison {
            incomparable: vec![],
            comparability: vec![],
            rows,
            notes: vec![],
            stacks: vec![],
            runs: vec![],
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error("{dir}: {reason}")]
    Unverified { dir: String, reason: String },
    #[error("the runs are not comparable: {}; pass --allow-incomparable to compare them anyway", .0.join("; "))]
    Incomparable(Vec<String>),
    /// `--strict`, and the runs ran on different machines or runtimes.
    #[error("--strict: the runs differ in what they ran on: {}; without --strict they are compared and the rows marked", .0.join("; "))]
    Differs(Vec<String>),
    #[error("{0}")]
    Read(String),
    #[error("--figure {0}: no stage the runs share has this figure in both")]
    NoFigure(String),
    /// Nothing at all was compared (no shared stage, or no figure in both):
    /// a gate must not pass on nothing.
    #[error("nothing was compared: {0}")]
    Nothing(String),
    /// `--output DIR` exists: refused before anything was written.
    #[error("output '{0}' already exists")]
    OutputExists(String),
    /// `--output` or `--html` would write into a run, campaign or
    /// bisection directory, which would then no longer verify.
    #[error(
        "{0} '{1}' is inside the evidence directory '{2}' (it holds declaration.json), which it would alter so that it no longer verifies: write it elsewhere"
    )]
    InsideEvidence(&'static str, String, String),
    /// Writing `--output DIR` failed; nothing of it was published.
    #[error("{0}")]
    Write(String),
}

/// Writes `file` (which must not exist): the comparison `c` of the runs in
/// directories `a` and `b` as a page ([`html`]).
pub fn write_html(
    file: &Path,
    c: &Comparison,
    dirs: [&Path; 2],
    threshold_pct: f64,
) -> Result<(), CompareError> {
    for dir in dirs {
        match load_report(dir)? {
            Loaded::Run(_) => {}
            Loaded::Campaign(_) => {
                return Err(CompareError::Write(format!(
                    "--html '{}': two campaigns have no page yet; compare two runs, or read the table",
                    file.display()
                )));
            }
        }
    }
    let page = html::page(c, threshold_pct)
        .map_err(|e| CompareError::Write(format!("--html '{}': {e}", file.display())))?;
    evidence::write_new(file, page.as_bytes())
        .map_err(|e| CompareError::Write(format!("--html '{}': {e}", file.display())))
}

/// One of a run directory's files, read as its type.
fn load<T: serde::de::DeserializeOwned>(dir: &Path, file: &str) -> Result<T, CompareError> {
    let failed =
        |e: &dyn std::fmt::Display| CompareError::Read(format!("{}/{file}: {e}", dir.display()));
    let bytes = std::fs::read(dir.join(file)).map_err(|e| failed(&e))?;
    serde_json::from_slice(&bytes).map_err(|e| failed(&e))
}

/// What a report.json is: a run's, or a campaign's (which says so by its
/// `schema`), read as its type.
enum Loaded {
    Run(Box<crate::modes::Report>),
    Campaign(Box<crate::campaign::report::CampaignReport>),
}

fn load_report(dir: &Path) -> Result<Loaded, CompareError> {
    #[derive(serde::Deserialize)]
    struct Schema {
        schema: String,
    }
    let Schema { schema } = load(dir, REPORT)?;
    Ok(match schema == crate::campaign::report::SCHEMA {
        true => Loaded::Campaign(load(dir, REPORT)?),
        false => Loaded::Run(load(dir, REPORT)?),
    })
}

/// Each stage's figures, each with its samples.
type Samples = BTreeMap<String, BTreeMap<String, Vec<f64>>>;

/// What compare reads of one run: its planned stages (key and definition,
/// in plan order), each stage record's figures, and what its report's
/// section says: the samples of every stage it repeated (trials), and
/// whether its `BASE#R` stages are rounds of `BASE` (a cold-prep round's
/// phase is defined with its own cache, so its definition differs from
/// round 1's).
pub struct Run {
    pub(crate) planned: Vec<(String, String)>,
    pub(crate) measured: BTreeMap<String, BTreeMap<String, f64>>,
    pub(crate) repeated: Samples,
    pub(crate) rounds: bool,
    /// Each sampled stage's stacks (`--sample`), what the gate's
    /// attribution pools per side.
    pub(crate) sampled: BTreeMap<String, crate::rundir::samples::SampledRecord>,
    /// The stages' stacks drawn from nested spans: read by the gate (see
    /// [`Run::with_spans`]), empty otherwise.
    pub(crate) spans: Vec<crate::render::folded::Stacks>,
}

impl Run {
    pub(crate) fn new(declaration: &Declaration, report: &crate::modes::Report) -> Run {
        Run {
            planned: declaration
                .stages
                .iter()
                .map(|s| (s.key.clone(), s.definition_sha256.clone()))
                .collect(),
            measured: report.stages.iter().map(|(k, r)| (k.clone(), r.measured())).collect(),
            repeated: report
                .trials()
                .map(|t| t.iter().map(|(k, set)| (k.clone(), set.samples.clone())).collect())
                .unwrap_or_default(),
            rounds: report.section.has_rounds(),
            sampled: report
                .stages
                .iter()
                .filter_map(|(k, r)| Some((k.clone(), r.samples.clone()?)))
                .collect(),
            spans: Vec::new(),
        }
    }

    /// With `report`'s stacks drawn from nested spans, each counted trial's
    /// self times (what the gate's page compares, side against side).
    pub(crate) fn with_spans(mut self, report: &crate::modes::Report) -> Run {
        self.spans =
            crate::render::folded::stacks(report).into_iter().filter(|s| s.nested).collect();
        self
    }
}

/// Values of a figure for a stage: every counted trial, or the stage's
/// record followed by those of `later` (see [`later_keys`]).
pub(crate) fn samples(run: &Run, stage: &str, later: &[String], figure: &str) -> Vec<f64> {
    if let Some(xs) = run.repeated.get(stage).and_then(|s| s.get(figure)) {
        return xs.clone();
    }
    let value = |key: &str| run.measured.get(key)?.get(figure).copied();
    std::iter::once(stage).chain(later.iter().map(String::as_str)).filter_map(value).collect()
}

/// The keys whose records are more samples of `stage` (`STAGE#2`, `#3`, …
/// in order): a cold-prep round's phase (a fresh process on new caches;
/// its definition differs only by the cache it writes), or the same stage
/// planned again with the same definition. `planned`: (key, definition)
/// in plan order; `rounds`: whether the run's mode runs phases in rounds.
pub(crate) fn later_keys(planned: &[(String, String)], stage: &str, rounds: bool) -> Vec<String> {
    let definition = |key: &str| planned.iter().find(|(k, _)| k == key).map(|(_, d)| d);
    let mut later: Vec<(u32, String)> = planned
        .iter()
        .filter_map(|(key, _)| match crate::rundir::keys::repeat_of(key) {
            Some((base, round))
                if base == stage && (rounds || definition(key) == definition(stage)) =>
            {
                Some((round, key.to_string()))
            }
            _ => None,
        })
        .collect();
    later.sort();
    later.into_iter().map(|(_, key)| key).collect()
}

/// How `compare` judges: the regression threshold, whether incomparable
/// declarations are compared anyway, whether any difference in what the
/// runs ran on refuses (`--strict`), and the figures.
pub struct Asked<'a> {
    pub threshold_pct: f64,
    pub allow_incomparable: bool,
    pub strict: bool,
    pub figures: &'a [String],
}

pub fn compare(a: &Path, b: &Path, asked: &Asked<'_>) -> Result<Comparison, CompareError> {
    let Asked { threshold_pct, allow_incomparable, strict, figures } = *asked;
    let (a_dir, b_dir) = (a, b);
    for dir in [a, b] {
        verify(dir).map_err(|reason| CompareError::Unverified {
            dir: dir.display().to_string(),
            reason: reason.0,
        })?;
    }
    let (ea, eb): (Environment, Environment) = (load(a, ENVIRONMENT)?, load(b, ENVIRONMENT)?);
    let machines = [&Machine::from(&ea), &Machine::from(&eb)];
    let (ra, rb) = match (load_report(a)?, load_report(b)?) {
        (Loaded::Campaign(ra), Loaded::Campaign(rb)) => {
            return campaigns::compare(machines, [*ra, *rb], asked);
        }
        (Loaded::Run(ra), Loaded::Run(rb)) => (ra, rb),
        _ => {
            return Err(CompareError::Incomparable(vec![
                "one is a campaign and the other a run".into(),
            ]));
        }
    };
    let (da, db): (Declaration, Declaration) = (load(a, DECLARATION)?, load(b, DECLARATION)?);
    let mut incomparable = Vec::new();
    if da.mode != db.mode {
        incomparable.push(format!("modes differ ({:?} vs {:?})", da.mode, db.mode));
    }
    if da.dataset_fingerprint != db.dataset_fingerprint {
        incomparable.push("dataset fingerprints differ".into());
    }
    let (a, b) = (Run::new(&da, &ra), Run::new(&db, &rb));
    let keys_a: BTreeSet<&String> = a.planned.iter().map(|(k, _)| k).collect();
    let common: Vec<String> =
        b.planned.iter().map(|(k, _)| k).filter(|k| keys_a.contains(k)).cloned().collect();
    for key in &common {
        let definition = |r: &Run| r.planned.iter().find(|(k, _)| k == key).map(|(_, d)| d.clone());
        if definition(&a) != definition(&b) {
            incomparable.push(format!("stage {key} is defined differently"));
        }
    }
    // A later round's stage is compared as samples of its phase, not alone.
    let pooled: BTreeSet<String> =
        common.iter().flat_map(|k| later_keys(&a.planned, k, a.rounds)).collect();
    let common: Vec<String> = common.into_iter().filter(|k| !pooled.contains(k)).collect();
    let mut notes = only_in_one(&a, &b, &pooled);
    notes.extend(sampled::notes(&ra, &rb, &common));
    if common.is_empty() {
        incomparable.push("no stage in common".into());
    }
    if !incomparable.is_empty() && !allow_incomparable {
        return Err(CompareError::Incomparable(incomparable));
    }
    let runtimes = |r: &crate::modes::Report| -> Runtimes {
        r.stages.iter().filter_map(|(k, s)| Some((k.clone(), s.runtime.clone()?))).collect()
    };
    let mut comparability = comparable::block(machines, [&runtimes(&ra), &runtimes(&rb)], &common);
    comparability.extend(comparable::declared_sources([&da.sources(), &db.sources()]));
    comparability.extend(comparable::declared_inputs([da.inputs().as_ref(), db.inputs().as_ref()]));
    let differences = comparable::differences(&comparability);
    if strict && !differences.is_empty() {
        return Err(CompareError::Differs(differences));
    }
    let mut rows = rows(&common, figures, [&a, &b], threshold_pct);
    for r in &mut rows {
        r.differs = comparability.iter().any(|l| l.marks(&r.stage));
    }
    let missing = figures.iter().find(|f| !rows.iter().any(|r| matches(f, &r.figure)));
    if let (Some(f), false) = (missing, common.is_empty()) {
        return Err(CompareError::NoFigure(f.clone()));
    }
    if rows.is_empty() {
        return Err(CompareError::Nothing(match common.is_empty() {
            true => "the runs share no stage".into(),
            false => "no figure is recorded by both runs".into(),
        }));
    }
    let stacks = stacks::compared(&ra, &rb, threshold_pct);
    let runs = vec![RunId::of(a_dir, &da, &ra), RunId::of(b_dir, &db, &rb)];
    Ok(Comparison { incomparable, comparability, rows, notes, stacks, runs })
}

/// A sentence per run for the stages it ran and the other did not (a later
/// round of one of them aside): no row compares them, so it is said.
fn only_in_one(a: &Run, b: &Run, pooled: &BTreeSet<String>) -> Vec<String> {
    let keys = |r: &Run| -> BTreeSet<String> {
        let all: BTreeSet<String> = r.planned.iter().map(|(k, _)| k.clone()).collect();
        let later: BTreeSet<String> =
            all.iter().flat_map(|k| later_keys(&r.planned, k, r.rounds)).collect();
        all.into_iter().filter(|k| !later.contains(k) && !pooled.contains(k)).collect()
    };
    let (ka, kb) = (keys(a), keys(b));
    [("A", &ka, &kb, "B"), ("B", &kb, &ka, "A")]
        .into_iter()
        .filter_map(|(this, own, other, that)| {
            let only: Vec<&str> = own.difference(other).map(String::as_str).collect();
            (!only.is_empty()).then(|| {
                format!(
                    "only {this} ran {} (not compared: {that} has no such stage)",
                    only.join(", ")
                )
            })
        })
        .collect()
}

/// Every figure of every stage in `common` that both runs recorded,
/// compared; `runs`: A and B. A figure only one run has is no row.
fn rows(common: &[String], figures: &[String], runs: [&Run; 2], pct: f64) -> Vec<Row> {
    let [ra, rb] = runs;
    let mut rows = Vec::new();
    for (i, stage) in common.iter().enumerate() {
        let stage_figures = expand(figures, &[ra, rb], stage);
        let later = |r: &Run| later_keys(&r.planned, stage, r.rounds);
        let (later_a, later_b) = (later(ra), later(rb));
        for (j, figure) in stage_figures.iter().enumerate() {
            let (xa, xb) =
                (samples(ra, stage, &later_a, figure), samples(rb, stage, &later_b, figure));
            if xa.is_empty() || xb.is_empty() {
                continue;
            }
            // Any seed gives a valid bootstrap; one per row keeps rows apart.
            rows.push(row(stage, figure, &xa, &xb, pct, (i * 8 + j) as u64));
        }
    }
    rows
}

/// One stage's figure compared: A's samples `xa` against B's `xb`.
pub(crate) fn row(
    stage: &str,
    figure: &str,
    xa: &[f64],
    xb: &[f64],
    threshold_pct: f64,
    seed: u64,
) -> Row {
    let (ma, mb) = (stats::distribution(xa).median, stats::distribution(xb).median);
    let p = if xa.len() >= 2 && xb.len() >= 2 { stats::mann_whitney_p(xa, xb) } else { f64::NAN };
    let ci = stats::ratio_of_medians_interval(xa, xb, seed);
    let verdict = stats::verdict(xa, xb, p, ci.bounds());
    let ratio = mb / ma;
    Row {
        stage: stage.to_string(),
        figure: figure.to_string(),
        n_a: xa.len(),
        n_b: xb.len(),
        median_a: ma,
        median_b: mb,
        ratio,
        ci,
        p,
        verdict,
        regressed: regressed(verdict, ratio, threshold_pct),
        differs: false,
    }
}

/// A regression: significantly slower, and by more than the threshold.
fn regressed(verdict: Verdict, ratio: f64, threshold_pct: f64) -> bool {
    verdict == Verdict::Slower && ratio > 1.0 + threshold_pct / 100.0
}

/// Whether `figure` is `pattern`, or starts with it when it ends in `*`.
pub(crate) fn matches(pattern: &str, figure: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => figure.starts_with(prefix),
        None => pattern == figure,
    }
}

/// The figures of `stage` to compare: each name as given, and for a
/// pattern (`span:*`) every figure both reports record for the stage that
/// starts with its prefix (a span pattern: its sums, `span:NAME_s`; a
/// span's `span:NAME_median_s` and `span:NAME_p95_s` are named one by one).
pub(crate) fn expand(figures: &[String], runs: &[&Run], stage: &str) -> Vec<String> {
    let names = |r: &Run| -> BTreeSet<String> {
        match r.repeated.get(stage) {
            Some(s) => s.keys().cloned().collect(),
            None => r.measured.get(stage).map(|m| m.keys().cloned().collect()).unwrap_or_default(),
        }
    };
    let all: Vec<BTreeSet<String>> = runs.iter().map(|r| names(r)).collect();
    // The names every run records (for two runs: both).
    let na: BTreeSet<String> = match all.split_first() {
        Some((first, rest)) => {
            first.iter().filter(|n| rest.iter().all(|o| o.contains(*n))).cloned().collect()
        }
        None => BTreeSet::new(),
    };
    let mut out = Vec::new();
    for f in figures {
        match f.strip_suffix('*') {
            Some(prefix) => {
                let seconds_only = prefix.starts_with("span:");
                out.extend(
                    na.iter()
                        .filter(|n| {
                            let sum = crate::rundir::spans::sum_name(n, |k| na.contains(k));
                            n.starts_with(prefix) && (!seconds_only || sum.is_some())
                        })
                        .cloned(),
                );
            }
            None => out.push(f.clone()),
        }
    }
    out.dedup();
    out
}

#[cfg(test)]
mod tests;
