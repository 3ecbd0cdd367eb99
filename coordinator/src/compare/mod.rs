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
mod plot;
mod text;

pub(crate) use files::{OUTPUT_FILES, write_output};
pub(crate) use text::render;

use crate::stats::{self, Verdict};
use crate::verify::verify;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Figures compared for every stage (lower is better for each).
/// The figures compared when `--figure` is not given.
pub(crate) const DEFAULT_FIGURES: [&str; 3] = ["wall_s", "cpu_s", "peak_rss_bytes"];

#[derive(Debug)]
pub(crate) struct Row {
    pub(crate) stage: String,
    pub(crate) figure: String,
    pub(crate) n_a: usize,
    pub(crate) n_b: usize,
    pub(crate) median_a: f64,
    pub(crate) median_b: f64,
    pub(crate) ratio: f64,
    /// The ratio's interval: 95% bootstrap with 6 samples a side, else
    /// the ranges' far ends with their (least) coverage.
    pub(crate) ci: stats::Interval,
    pub(crate) p: f64,
    pub(crate) verdict: Verdict,
    pub(crate) regressed: bool,
    /// The runs differ in what this row's stage ran on (the machine, its
    /// thread settings, its runtime): see the comparability block.
    pub(crate) differs: bool,
}

#[derive(Debug)]
pub(crate) struct Comparison {
    /// Empty when the runs are comparable.
    pub(crate) incomparable: Vec<String>,
    /// What each run ran on, side by side (see [`comparable`]).
    pub(crate) comparability: Vec<comparable::Line>,
    pub(crate) rows: Vec<Row>,
    /// Two campaigns: per step, what B is against A and what changed most.
    pub(crate) notes: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum CompareError {
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
    /// Writing `--output DIR` failed; nothing of it was published.
    #[error("{0}")]
    Write(String),
}

impl From<CompareError> for crate::error::Error {
    fn from(e: CompareError) -> Self {
        match e {
            CompareError::Unverified { .. } => crate::error::Error::Unverified(e.to_string()),
            CompareError::Write(_) => crate::error::Error::Failed(e.to_string()),
            e => crate::error::Error::Usage(e.to_string()),
        }
    }
}

fn load(dir: &Path, file: &str) -> Result<Value, CompareError> {
    let bytes = std::fs::read(dir.join(file))
        .map_err(|e| CompareError::Read(format!("{}/{file}: {e}", dir.display())))?;
    serde_json::from_slice(&bytes)
        .map_err(|e| CompareError::Read(format!("{}/{file}: {e}", dir.display())))
}

/// Each stage's figures, each with its samples.
type Samples = BTreeMap<String, BTreeMap<String, Vec<f64>>>;

/// What compare reads of one run: its declaration, its report, and what
/// its report's section says: the samples of every stage it repeated
/// (trials), and whether its `BASE#R` stages are rounds of `BASE` (a
/// cold-prep round's phase is defined with its own cache, so its
/// definition differs from round 1's).
struct Run {
    declaration: Value,
    report: Value,
    repeated: Samples,
    rounds: bool,
}

impl Run {
    fn new(declaration: Value, report: Value) -> Run {
        // Read from the value in place: a large run's report is not copied.
        let typed = <crate::modes::Report as serde::Deserialize>::deserialize(&report).ok();
        let repeated = typed
            .as_ref()
            .and_then(|r| r.trials())
            .map(|t| t.iter().map(|(k, set)| (k.clone(), set.samples.clone())).collect())
            .unwrap_or_default();
        let rounds = typed.is_some_and(|r| r.section.has_rounds());
        Run { declaration, report, repeated, rounds }
    }
}

/// Values of a figure for a stage: every counted trial, or the stage's
/// record followed by those of `later` (see [`later_keys`]).
fn samples(run: &Run, stage: &str, later: &[String], figure: &str) -> Vec<f64> {
    if let Some(xs) = run.repeated.get(stage).and_then(|s| s.get(figure)) {
        return xs.clone();
    }
    let value = |key: &str| {
        let record = &run.report["stages"][key];
        record[figure].as_f64().or_else(|| record["figures"][figure].as_f64())
    };
    std::iter::once(stage).chain(later.iter().map(String::as_str)).filter_map(value).collect()
}

/// The keys whose records are more samples of `stage` (`STAGE#2`, `#3`, …
/// in order): a cold-prep round's phase (a fresh process on new caches;
/// its definition differs only by the cache it writes), or the same stage
/// planned again with the same definition.
/// `rounds`: whether the run's mode runs phases in rounds (see
/// [`has_rounds`]).
fn later_keys(declaration: &Value, stage: &str, rounds: bool) -> Vec<String> {
    let planned = declaration["stages"].as_array().map(Vec::as_slice).unwrap_or_default();
    let definition = |key: &str| {
        planned.iter().find(|s| s["key"] == key).map(|s| s["definition_sha256"].clone())
    };
    let mut later: Vec<(u32, String)> = planned
        .iter()
        .filter_map(|s| {
            let key = s["key"].as_str()?;
            match crate::plan::repeat_of(key) {
                Some((base, round))
                    if base == stage && (rounds || definition(key) == definition(stage)) =>
                {
                    Some((round, key.to_string()))
                }
                _ => None,
            }
        })
        .collect();
    later.sort();
    later.into_iter().map(|(_, key)| key).collect()
}

/// How `compare` judges: the regression threshold, whether incomparable
/// declarations are compared anyway, whether any difference in what the
/// runs ran on refuses (`--strict`), and the figures.
pub(crate) struct Asked<'a> {
    pub(crate) threshold_pct: f64,
    pub(crate) allow_incomparable: bool,
    pub(crate) strict: bool,
    pub(crate) figures: &'a [String],
}

pub(crate) fn compare(a: &Path, b: &Path, asked: &Asked<'_>) -> Result<Comparison, CompareError> {
    let Asked { threshold_pct, allow_incomparable, strict, figures } = *asked;
    for dir in [a, b] {
        verify(dir).map_err(|reason| CompareError::Unverified {
            dir: dir.display().to_string(),
            reason: reason.0,
        })?;
    }
    let (da, db) = (load(a, "declaration.json")?, load(b, "declaration.json")?);
    let (ra, rb) = (load(a, "report.json")?, load(b, "report.json")?);
    let (ea, eb) = (load(a, "environment.json")?, load(b, "environment.json")?);
    let campaign = |r: &Value| r["schema"] == crate::campaign::report::SCHEMA;
    match (campaign(&ra), campaign(&rb)) {
        (true, true) => return compare_campaigns([&ea, &eb], [ra, rb], asked),
        (false, false) => {}
        _ => {
            return Err(CompareError::Incomparable(vec![
                "one is a campaign and the other a run".into(),
            ]));
        }
    }
    let mut incomparable = Vec::new();
    if da["mode"] != db["mode"] {
        incomparable.push(format!("modes differ ({} vs {})", da["mode"], db["mode"]));
    }
    if da["dataset_fingerprint"] != db["dataset_fingerprint"] {
        incomparable.push("dataset fingerprints differ".into());
    }
    let defs = |d: &Value| -> Vec<(String, String)> {
        d["stages"]
            .as_array()
            .map(|s| {
                s.iter()
                    .map(|x| {
                        (
                            x["key"].as_str().unwrap_or("").to_string(),
                            x["definition_sha256"].as_str().unwrap_or("").to_string(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let (defs_a, defs_b) = (defs(&da), defs(&db));
    let keys_a: BTreeSet<&String> = defs_a.iter().map(|(k, _)| k).collect();
    let common: Vec<String> =
        defs_b.iter().map(|(k, _)| k).filter(|k| keys_a.contains(k)).cloned().collect();
    for key in &common {
        let da = defs_a.iter().find(|(k, _)| k == key).map(|(_, d)| d);
        let db = defs_b.iter().find(|(k, _)| k == key).map(|(_, d)| d);
        if da != db {
            incomparable.push(format!("stage {key} is defined differently"));
        }
    }
    // A later round's stage is compared as samples of its phase, not alone.
    let (a, b) = (Run::new(da, ra), Run::new(db, rb));
    let pooled: BTreeSet<String> =
        common.iter().flat_map(|k| later_keys(&a.declaration, k, a.rounds)).collect();
    let common: Vec<String> = common.into_iter().filter(|k| !pooled.contains(k)).collect();
    if common.is_empty() {
        incomparable.push("no stage in common".into());
    }
    if !incomparable.is_empty() && !allow_incomparable {
        return Err(CompareError::Incomparable(incomparable));
    }
    let comparability =
        comparable::block([&ea, &eb], [&a.report["stages"], &b.report["stages"]], &common);
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
    Ok(Comparison { incomparable, comparability, rows, notes: Vec::new() })
}

/// Two verified campaigns (see [`campaigns`]).
fn compare_campaigns(
    env: [&Value; 2],
    reports: [Value; 2],
    asked: &Asked<'_>,
) -> Result<Comparison, CompareError> {
    let typed = |v: Value| {
        serde_json::from_value::<crate::campaign::report::CampaignReport>(v)
            .map_err(|e| CompareError::Read(format!("a campaign's report.json: {e}")))
    };
    let [ra, rb] = reports;
    let (a, b) = (typed(ra)?, typed(rb)?);
    let mut incomparable = Vec::new();
    if a.pipeline != b.pipeline {
        incomparable.push("one campaign ran a pipeline, the other the recipe".into());
    }
    if !a.steps.iter().any(|s| b.steps.iter().any(|o| o.name == s.name)) {
        incomparable.push("no step in common".into());
    }
    if !incomparable.is_empty() && !asked.allow_incomparable {
        return Err(CompareError::Incomparable(incomparable));
    }
    let stages = [campaigns::stages_with_runtime(&a), campaigns::stages_with_runtime(&b)];
    let common = campaigns::common_stages(&a, &b);
    let comparability = comparable::block(env, [&stages[0], &stages[1]], &common);
    let differences = comparable::differences(&comparability);
    if asked.strict && !differences.is_empty() {
        return Err(CompareError::Differs(differences));
    }
    let (mut rows, notes) = campaigns::rows(&a, &b, asked.threshold_pct);
    if !asked.figures.is_empty() && asked.figures != DEFAULT_FIGURES {
        rows.retain(|r| asked.figures.iter().any(|f| matches(f, &r.figure)));
    }
    for r in &mut rows {
        // A row of STEP/STAGE is the stage's; a step's total, the machine's.
        let stage = r.stage.split_once('/').map_or("", |(_, s)| s);
        r.differs = comparability.iter().any(|l| l.marks(stage));
    }
    if rows.is_empty() {
        return Err(CompareError::Nothing("the campaigns share no step with a figure".into()));
    }
    Ok(Comparison { incomparable, comparability, rows, notes })
}

/// Every figure of every stage in `common` that both runs recorded,
/// compared; `runs`: A and B. A figure only one run has is no row.
fn rows(common: &[String], figures: &[String], runs: [&Run; 2], pct: f64) -> Vec<Row> {
    let [ra, rb] = runs;
    let mut rows = Vec::new();
    for (i, stage) in common.iter().enumerate() {
        let stage_figures = expand(figures, ra, rb, stage);
        let later = |r: &Run| later_keys(&r.declaration, stage, r.rounds);
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
fn row(stage: &str, figure: &str, xa: &[f64], xb: &[f64], threshold_pct: f64, seed: u64) -> Row {
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
fn matches(pattern: &str, figure: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => figure.starts_with(prefix),
        None => pattern == figure,
    }
}

/// The figures of `stage` to compare: each name as given, and for a
/// pattern (`span:*`) every figure both reports record for the stage that
/// starts with its prefix (a span pattern: its seconds, `span:NAME_s`).
fn expand(figures: &[String], ra: &Run, rb: &Run, stage: &str) -> Vec<String> {
    let names = |r: &Run| -> BTreeSet<String> {
        match r.repeated.get(stage) {
            Some(s) => s.keys().cloned().collect(),
            None => r.report["stages"][stage]["figures"]
                .as_object()
                .map(|o| o.keys().cloned().collect())
                .unwrap_or_default(),
        }
    };
    let (na, nb) = (names(ra), names(rb));
    let mut out = Vec::new();
    for f in figures {
        match f.strip_suffix('*') {
            Some(prefix) => {
                let seconds_only = prefix.starts_with("span:");
                out.extend(
                    na.intersection(&nb)
                        .filter(|n| n.starts_with(prefix) && (!seconds_only || n.ends_with("_s")))
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
mod tests {
    use super::text::in_units;
    use super::{Run, Samples, expand, later_keys, matches, regressed, row, rows, samples};

    /// A run from a declaration and a report that need not be whole (no
    /// section read from it).
    fn run(declaration: serde_json::Value, report: serde_json::Value) -> Run {
        Run { declaration, report, repeated: Samples::new(), rounds: false }
    }

    /// One stage's trial samples.
    fn repeated(stage: &str, figures: &[(&str, &[f64])]) -> Samples {
        let figures = figures.iter().map(|(f, xs)| (f.to_string(), xs.to_vec())).collect();
        Samples::from([(stage.to_string(), figures)])
    }
    use crate::stats::Verdict;
    use serde_json::json;

    /// The gate at its edge: eight samples a side, B a steady 3% or 10%
    /// slower than A. Both are significantly slower; only 10% is beyond a
    /// 5% threshold, and a 3% slowdown passes a 2% one.
    #[test]
    fn the_threshold_gates_a_significant_slowdown_by_its_size() {
        let a: Vec<f64> = (0..8).map(|i| 1.0 + 0.001 * f64::from(i)).collect();
        let scaled = |k: f64| a.iter().map(|x| x * k).collect::<Vec<f64>>();
        let three = row("s", "wall_s", &a, &scaled(1.03), 5.0, 1);
        assert_eq!(three.verdict, Verdict::Slower, "{three:?}");
        assert!((three.ratio - 1.03).abs() < 1e-9);
        assert!(!three.regressed, "3% slower is within a 5% gate");
        let ten = row("s", "wall_s", &a, &scaled(1.10), 5.0, 1);
        assert_eq!(ten.verdict, Verdict::Slower);
        assert!(ten.regressed, "10% slower is beyond a 5% gate");
        assert!(row("s", "wall_s", &a, &scaled(1.03), 2.0, 1).regressed);
        // Faster or undecided is never a regression, however large.
        assert!(!regressed(Verdict::Faster, 2.0, 5.0));
        assert!(!regressed(Verdict::TooFewTrials, 2.0, 5.0));
        assert!(!regressed(Verdict::NoSignificantDifference, 2.0, 5.0));
        assert!(regressed(Verdict::Slower, 1.0501, 5.0) && !regressed(Verdict::Slower, 1.05, 5.0));
        // One sample on a side: no rank test at all, and too few to say.
        let one = row("s", "wall_s", &a[..1], &a, 5.0, 1);
        assert!(one.p.is_nan(), "{one:?}");
        assert_eq!(one.verdict, Verdict::TooFewTrials);
    }

    /// The table says each verdict in words, "SLOWER (regressed)" only for
    /// a regression; an existing output directory is refused by name and
    /// left alone.
    #[test]
    fn the_table_words_each_verdict_and_an_existing_output_is_refused() {
        let a: Vec<f64> = (0..8).map(|i| 1.0 + 0.001 * f64::from(i)).collect();
        let b = |k: f64| a.iter().map(|x| x * k).collect::<Vec<f64>>();
        let rows = vec![
            row("regressed", "wall_s", &a, &b(1.10), 5.0, 1),
            row("slower", "wall_s", &a, &b(1.03), 5.0, 1),
            row("faster", "wall_s", &a, &b(0.90), 5.0, 1),
            row("same", "wall_s", &a, &a, 5.0, 1),
            row("few", "wall_s", &a[..1], &a, 5.0, 1),
        ];
        let c = super::Comparison {
            incomparable: Vec::new(),
            comparability: Vec::new(),
            rows,
            notes: Vec::new(),
        };
        let table = super::render(&c, 5.0);
        let line = |stage: &str| table.lines().find(|l| l.starts_with(stage)).unwrap().to_string();
        assert!(line("regressed").ends_with("SLOWER (regressed)"), "{table}");
        assert!(line("slower").ends_with(" slower"), "{table}");
        assert!(line("faster").ends_with(" faster"), "{table}");
        assert!(line("same").ends_with("no significant difference"), "{table}");
        assert!(line("few").ends_with("too few trials to say"), "{table}");
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("mine.txt"), b"mine").unwrap();
        let e = super::write_output(dir.path(), &c, 5.0).unwrap_err();
        assert!(matches!(e, super::CompareError::OutputExists(_)), "{e}");
        let e = e.to_string();
        assert!(e.starts_with("output '") && e.ends_with("' already exists"), "{e}");
        assert_eq!(std::fs::read(dir.path().join("mine.txt")).unwrap(), b"mine");
    }

    /// A name is itself; a pattern ending in `*` is its prefix; a table
    /// cell is in the figure's unit.
    #[test]
    fn figure_patterns_match_by_prefix_and_cells_carry_units() {
        assert!(matches("wall_s", "wall_s") && !matches("wall_s", "walls"));
        assert!(matches("span:*", "span:load_s") && !matches("span:*", "wall_s"));
        assert!(!matches("span:load*", "span:fit_s"));
        assert_eq!(in_units("wall_s", 1.5), crate::fmt::duration(1.5));
        assert_eq!(in_units("peak_rss_bytes", 3.0 * 1048576.0), crate::fmt::mib(3 * 1048576));
        assert_eq!(in_units("frames", 3.0), "3.000000");
    }

    /// A figure one run recorded and the other did not is no row; a figure
    /// both recorded is one, from each run's own samples.
    #[test]
    fn only_figures_both_runs_recorded_are_compared() {
        let decl =
            json!({"mode": "diagnostic", "stages": [{"key": "s", "definition_sha256": "d"}]});
        let a = json!({"stages": {"s": {"wall_s": 1.0, "figures": {"frames": 3.0}}}});
        let b = json!({"stages": {"s": {"wall_s": 2.0, "figures": {}}}});
        let figures = ["wall_s".to_string(), "frames".to_string()];
        let (a, b) = (run(decl.clone(), a), run(decl, b));
        let r = rows(&["s".to_string()], &figures, [&a, &b], 5.0);
        assert_eq!(r.len(), 1, "{r:?}");
        assert_eq!((r[0].figure.as_str(), r[0].median_a, r[0].median_b), ("wall_s", 1.0, 2.0));
    }

    /// A run's section says whether its `#R` stages are rounds and which
    /// stages it repeated: a cold-prep report has rounds and no trials, a
    /// trials report trials and no rounds.
    #[test]
    fn a_runs_rounds_and_trials_come_from_its_section() {
        let fixture = |text: &str| Run::new(json!({}), serde_json::from_str(text).unwrap());
        let cold = fixture(include_str!("../render/fixtures/cold-prep-report.json"));
        assert!(cold.rounds);
        assert!(cold.repeated.is_empty());
        let trials = fixture(include_str!("../render/fixtures/trials-report.json"));
        assert!(!trials.rounds);
        let walls = &trials.repeated["spin:30"]["wall_s"];
        assert_eq!(
            walls,
            trials.report["trials"]["spin:30"]["samples"]["wall_s"]
                .as_array()
                .map(|a| a.iter().map(|x| x.as_f64().unwrap()).collect::<Vec<_>>())
                .as_ref()
                .unwrap()
        );
    }

    #[test]
    fn a_stages_later_rounds_are_more_samples_of_it_in_round_order() {
        let stage = |key: &str, def: &str| json!({"key": key, "definition_sha256": def});
        let planned = json!([
            stage("prep", "d1"),
            stage("prep_parallel", "p1"),
            stage("prep_parallel#2", "p2"),
            stage("prep#3", "d3"),
            stage("prep#2", "d2"),
            stage("noop", "n"),
            stage("noop#2", "n"),
            stage("alloc", "a1"),
            stage("alloc#2", "a2"),
        ]);
        let decl = json!({"stages": planned});
        assert_eq!(later_keys(&decl, "prep", true), ["prep#2", "prep#3"]);
        assert_eq!(later_keys(&decl, "prep_parallel", true), ["prep_parallel#2"]);
        // Without rounds, only the same definition planned again.
        assert!(later_keys(&decl, "prep", false).is_empty());
        assert_eq!(later_keys(&decl, "noop", false), ["noop#2"]);
        assert!(later_keys(&decl, "alloc", false).is_empty());

        let r = json!({"stages": {
            "prep#3": {"wall_s": 3.0},
            "prep": {"wall_s": 1.0, "figures": {"frames": 7.0}},
            "prep#2": {"wall_s": 2.0, "figures": {"frames": 7.0}},
        }});
        let later = later_keys(&decl, "prep", true);
        let r = run(decl.clone(), r);
        assert_eq!(samples(&r, "prep", &later, "wall_s"), [1.0, 2.0, 3.0]);
        assert_eq!(samples(&r, "prep", &later, "frames"), [7.0, 7.0]);
        assert_eq!(samples(&r, "prep", &[], "wall_s"), [1.0]);
        // Trials keep their own samples.
        let mut t = run(decl, r.report.clone());
        t.repeated = repeated("prep", &[("wall_s", &[4.0, 5.0])]);
        assert_eq!(samples(&t, "prep", &later, "wall_s"), [4.0, 5.0]);
    }

    #[test]
    fn a_span_pattern_is_every_span_seconds_figure_both_runs_record() {
        let mut a = run(json!({}), json!({}));
        a.repeated = repeated(
            "s",
            &[
                ("wall_s", &[1.0]),
                ("span:load_s", &[1.0]),
                ("span:load_n", &[2.0]),
                ("span:fit_s", &[1.0]),
                ("span:only_a_s", &[1.0]),
            ],
        );
        let b = run(
            json!({}),
            json!({"stages": {"s": {"figures": {
                "span:load_s": 1.0, "span:load_n": 2.0, "span:fit_s": 1.0
            }}}}),
        );
        let figures = vec!["wall_s".to_string(), "span:*".to_string()];
        assert_eq!(expand(&figures, &a, &b, "s"), ["wall_s", "span:fit_s", "span:load_s"]);
        assert_eq!(expand(&["span:load_*".into()], &a, &b, "s"), ["span:load_s"]);
        assert!(expand(&["nothing:*".into()], &a, &b, "s").is_empty());
    }
}
