//! compare's unit tests: the gate, the samples of a stage, patterns.

use super::{Run, Samples, expand, later_keys, matches, regressed, row, rows, samples};
use crate::fmt::figure as in_units;

/// A run from its planned stages `(key, definition)` and its stages'
/// figures, with nothing repeated and no rounds.
fn run(planned: &[(&str, &str)], stages: &[(&str, &[(&str, f64)])]) -> Run {
    Run {
        planned: planned.iter().map(|(k, d)| (k.to_string(), d.to_string())).collect(),
        measured: stages
            .iter()
            .map(|(s, fs)| (s.to_string(), fs.iter().map(|(f, x)| (f.to_string(), *x)).collect()))
            .collect(),
        repeated: Samples::new(),
        rounds: false,
        sampled: Default::default(),
        spans: Vec::new(),
    }
}

/// One stage's trial samples.
fn repeated(stage: &str, figures: &[(&str, &[f64])]) -> Samples {
    let figures = figures.iter().map(|(f, xs)| (f.to_string(), xs.to_vec())).collect();
    Samples::from([(stage.to_string(), figures)])
}
use crate::stats::Verdict;

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
    let c = super::Comparison::of_rows(rows);
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
    let decl = [("s", "d")];
    let a: &[(&str, f64)] = &[("wall_s", 1.0), ("frames", 3.0)];
    let b: &[(&str, f64)] = &[("wall_s", 2.0)];
    let figures = ["wall_s".to_string(), "frames".to_string()];
    let (a, b) = (run(&decl, &[("s", a)]), run(&decl, &[("s", b)]));
    let r = rows(&["s".to_string()], &figures, [&a, &b], 5.0);
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!((r[0].figure.as_str(), r[0].median_a, r[0].median_b), ("wall_s", 1.0, 2.0));
}

/// A run's section says whether its `#R` stages are rounds and which
/// stages it repeated: a cold-prep report has rounds and no trials, a
/// trials report trials and no rounds.
#[test]
fn a_runs_rounds_and_trials_come_from_its_section() {
    use crate::rundir::declaration::{Declaration, Program};
    let program = Program::current(String::new());
    let declaration = Declaration::new("any", "run", 1, vec![], Default::default(), None, program);
    let fixture = |text: &str| Run::new(&declaration, &serde_json::from_str(text).unwrap());
    let cold = fixture(include_str!("../render/fixtures/cold-prep-report.json"));
    assert!(cold.rounds);
    assert!(cold.repeated.is_empty());
    let text = include_str!("../render/fixtures/trials-report.json");
    let trials = fixture(text);
    assert!(!trials.rounds);
    let walls = &trials.repeated["spin:30"]["wall_s"];
    let report: serde_json::Value = serde_json::from_str(text).unwrap();
    assert_eq!(
        walls,
        report["trials"]["spin:30"]["samples"]["wall_s"]
            .as_array()
            .map(|a| a.iter().map(|x| x.as_f64().unwrap()).collect::<Vec<_>>())
            .as_ref()
            .unwrap()
    );
}

#[test]
fn a_stages_later_rounds_are_more_samples_of_it_in_round_order() {
    let stage = |key: &str, def: &str| (key.to_string(), def.to_string());
    let decl = [
        stage("prep", "d1"),
        stage("prep_parallel", "p1"),
        stage("prep_parallel#2", "p2"),
        stage("prep#3", "d3"),
        stage("prep#2", "d2"),
        stage("noop", "n"),
        stage("noop#2", "n"),
        stage("alloc", "a1"),
        stage("alloc#2", "a2"),
    ];
    assert_eq!(later_keys(&decl, "prep", true), ["prep#2", "prep#3"]);
    assert_eq!(later_keys(&decl, "prep_parallel", true), ["prep_parallel#2"]);
    // Without rounds, only the same definition planned again.
    assert!(later_keys(&decl, "prep", false).is_empty());
    assert_eq!(later_keys(&decl, "noop", false), ["noop#2"]);
    assert!(later_keys(&decl, "alloc", false).is_empty());

    let stages: &[(&str, &[(&str, f64)])] = &[
        ("prep#3", &[("wall_s", 3.0)]),
        ("prep", &[("wall_s", 1.0), ("frames", 7.0)]),
        ("prep#2", &[("wall_s", 2.0), ("frames", 7.0)]),
    ];
    let later = later_keys(&decl, "prep", true);
    let planned: Vec<(&str, &str)> = decl.iter().map(|(k, d)| (k.as_str(), d.as_str())).collect();
    let r = run(&planned, stages);
    assert_eq!(samples(&r, "prep", &later, "wall_s"), [1.0, 2.0, 3.0]);
    assert_eq!(samples(&r, "prep", &later, "frames"), [7.0, 7.0]);
    assert_eq!(samples(&r, "prep", &[], "wall_s"), [1.0]);
    // Trials keep their own samples.
    let mut t = run(&planned, stages);
    t.repeated = repeated("prep", &[("wall_s", &[4.0, 5.0])]);
    assert_eq!(samples(&t, "prep", &later, "wall_s"), [4.0, 5.0]);
}

#[test]
fn a_span_pattern_is_every_span_seconds_figure_both_runs_record() {
    let mut a = run(&[], &[]);
    a.repeated = repeated(
        "s",
        &[
            ("wall_s", &[1.0]),
            ("span:load_s", &[1.0]),
            ("span:load_n", &[2.0]),
            ("span:load_median_s", &[0.5]),
            ("span:fit_s", &[1.0]),
            ("span:fit_n", &[1.0]),
            ("span:only_a_s", &[1.0]),
            ("span:only_a_n", &[1.0]),
        ],
    );
    // A span's median is no sum: named one by one, never by `span:*`.
    let b = run(
        &[],
        &[(
            "s",
            &[
                ("span:load_s", 1.0),
                ("span:load_n", 2.0),
                ("span:fit_s", 1.0),
                ("span:fit_n", 1.0),
                ("span:load_median_s", 0.5),
            ],
        )],
    );
    let figures = vec!["wall_s".to_string(), "span:*".to_string()];
    assert_eq!(expand(&figures, &[&a, &b], "s"), ["wall_s", "span:fit_s", "span:load_s"]);
    assert_eq!(expand(&["span:load_*".into()], &[&a, &b], "s"), ["span:load_s"]);
    assert!(expand(&["nothing:*".into()], &[&a, &b], "s").is_empty());
}
