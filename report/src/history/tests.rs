//! The history's order, figures and last change, on built runs.

use super::*;

fn read(rel: &str, created: &str, commit: Option<&str>) -> Read {
    Read {
        rel: rel.into(),
        created: created.into(),
        commit: commit.map(str::to_string),
        definition: "d".repeat(64),
        mode: "trials".into(),
        run: Run {
            planned: Vec::new(),
            measured: BTreeMap::new(),
            repeated: BTreeMap::new(),
            rounds: false,
            sampled: BTreeMap::new(),
            spans: Vec::new(),
        },
    }
}

/// A cold preparation's speedup is a figure of the history by default
/// (its drop from run 7 found there), and a history of runs without one
/// is no error for it.
#[test]
fn a_speedup_that_drops_is_a_change_and_its_absence_is_no_error() {
    let fixture: Report =
        serde_json::from_str(include_str!("../render/fixtures/cold-prep-report.json")).unwrap();
    let mut runs = Vec::new();
    for i in 0..12 {
        let mut rep = fixture.clone();
        if let crate::modes::Section::ColdPrep(s) = &mut rep.section {
            s.speedup = if i < 6 { 1.8 } else { 1.2 } + 0.01 * (i % 3) as f64;
        }
        let mut r = read(&format!("r{i:02}"), &format!("2026-12-{:02}T00:00:00Z", i + 1), None);
        r.run = with_speedup(r.run, &rep);
        runs.push(r);
    }
    assert!(DEFAULT_FIGURES.contains(&"speedup*"));
    let asked = vec!["speedup*".to_string()];
    let figures = figures_of(&runs, &asked).unwrap();
    assert_eq!(figures, [(RUN_FIGURES.to_string(), "speedup".to_string())]);
    let (_, changes, _) = analyse(&runs, &figures, 3);
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!((changes[0].at, changes[0].figure.as_str()), (6, "speedup"));
    assert!(changes[0].ratio < 0.7, "{changes:?}");
    // Runs of a mode with no speedup: the default pattern finds none.
    let trials: Report =
        serde_json::from_str(include_str!("../render/fixtures/trials-report.json")).unwrap();
    let mut r = read("t", "2026-12-01T00:00:00Z", None);
    r.run = with_speedup(r.run, &trials);
    assert!(r.run.planned.is_empty() && r.run.repeated.is_empty());
    assert_eq!(figures_of(&[r], &asked).unwrap(), []);
}

fn change(figure: &str, at: usize, ratio: f64) -> Change {
    let interval = stats::ratio_of_medians_interval(&[1.0; 5], &[ratio; 5], 0);
    let (stage, figure) = ("nap".into(), figure.into());
    Change { stage, figure, at, before: 1.0, after: ratio, ratio, interval, p: 0.002 }
}

/// One shift placed a run apart in two figures is one event, named by
/// its larger change (CI once showed "cpu_s ×1.22 from r08" for a wall
/// ×5 from r07); a change a segment later is a new event.
#[test]
fn the_last_change_is_the_latest_event_named_by_its_largest_figure() {
    let changes = [change("wall_s", 6, 5.0), change("cpu_s", 7, 1.22)];
    let name = |k, changes: &[Change]| last_change(changes, k, 5).map(|c| (c.figure.clone(), c.at));
    assert_eq!(name(5, &changes), None);
    assert_eq!(name(6, &changes), Some(("wall_s".into(), 6)));
    assert_eq!(name(11, &changes), Some(("wall_s".into(), 6)));
    // A slowdown by 0.5 (ln 0.69) outweighs ×1.22 the same way.
    let changes = [change("wall_s", 6, 0.5), change("cpu_s", 6, 1.22)];
    assert_eq!(name(9, &changes), Some(("wall_s".into(), 6)));
    // A segment apart: two events, the later one is the last change.
    let changes = [change("wall_s", 5, 5.0), change("cpu_s", 10, 1.22)];
    assert_eq!(name(9, &changes), Some(("wall_s".into(), 5)));
    assert_eq!(name(10, &changes), Some(("cpu_s".into(), 10)));
}

#[test]
fn runs_are_ordered_by_commit_then_start() {
    // A re-run of commit a after b started is still a's: b follows all of a.
    let mut runs = vec![
        read("3", "2026-12-03T00:00:00Z", Some("a")),
        read("2", "2026-12-02T00:00:00Z", Some("b")),
        read("1", "2026-12-01T00:00:00Z", Some("a")),
        read("4", "2026-12-04T00:00:00Z", Some("c")),
    ];
    order(&mut runs);
    let rels: Vec<&str> = runs.iter().map(|r| r.rel.as_str()).collect();
    assert_eq!(rels, ["1", "3", "2", "4"]);
}

#[test]
fn a_change_is_measured_between_its_neighbouring_changes() {
    // Two steps: the second's "before" is the middle segment, not
    // everything before it.
    let series = [1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 4.0, 4.0, 4.0];
    let points = [ChangePoint { at: 3, p: 0.002 }, ChangePoint { at: 6, p: 0.002 }];
    let c = changes_of("s", "wall_s", &series, &points, 0);
    assert_eq!((c[0].before, c[0].after, c[0].ratio), (1.0, 2.0, 2.0));
    assert_eq!((c[1].before, c[1].after, c[1].ratio), (2.0, 4.0, 2.0));
    assert_eq!(c[1].at, 6);
}
