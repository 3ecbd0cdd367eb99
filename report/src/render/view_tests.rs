//! The console, summary.md and report.html of one view, compared: each mode's
//! report rendered three ways shows the same figures and sentences, and a
//! figure planted in the view shows in all three.

use super::view::{View, WarningKind};
use crate::doc::{Block, Reach};
use crate::modes::Report;

/// Every mode's report, as a run of it wrote report.json.
fn fixtures() -> Vec<(&'static str, Report)> {
    [
        ("diagnostic", include_str!("fixtures/diagnostic-report.json")),
        ("cold-prep", include_str!("fixtures/cold-prep-report.json")),
        ("sweep", include_str!("fixtures/sweep-report.json")),
        ("trials", include_str!("fixtures/trials-report.json")),
        ("profile", include_str!("fixtures/profile-report.json")),
        ("recipe", include_str!("fixtures/recipe-report.json")),
    ]
    .into_iter()
    .map(|(name, text)| (name, serde_json::from_str(text).unwrap()))
    .collect()
}

/// The console (stdout and stderr), summary.md and report.html of one view.
fn three(v: &View<'_>) -> [String; 3] {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    super::console::write(v, std::path::Path::new("runs/x"), &mut out, &mut err).unwrap();
    out.extend(err);
    let page = super::html::page_of(v, &[]).unwrap();
    [String::from_utf8(out).unwrap(), super::markdown(v), page]
}

/// Text as it reads in each of the three: the console without
/// backticks, Markdown as it is, the page escaped, a name's backticks
/// its `<code>`. Each is the longest run between backticks, which every
/// format keeps whole.
fn reads(text: &str) -> String {
    let longest = text.split('`').max_by_key(|p| p.len()).unwrap_or("");
    longest.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

fn shown_in_all(name: &str, [console, md, page]: &[String; 3], text: &str, what: &str) {
    let plain = text.split('`').max_by_key(|p| p.len()).unwrap_or("");
    assert!(console.contains(plain), "{name}: the console lacks {what} {text:?}:\n{console}");
    assert!(md.contains(plain), "{name}: summary.md lacks {what} {text:?}:\n{md}");
    assert!(page.contains(&reads(text)), "{name}: report.html lacks {what} {text:?}");
}

/// What the console shows, summary.md and report.html show the same:
/// every stage's wall, CPU and peak, every warning's sentence, and
/// every block the mode shows everywhere (its tables' cells, its
/// sentences), in each mode's report.
#[test]
fn each_modes_console_summary_and_page_show_the_same_figures() {
    for (name, r) in fixtures() {
        let v = View::of(&r);
        let all = three(&v);
        assert!(!v.stages.is_empty(), "{name}");
        for row in &v.stages {
            for (what, f) in [("wall", &row.wall), ("CPU", &row.cpu), ("peak", &row.peak_rss)] {
                shown_in_all(name, &all, &f.text, &format!("{}'s {what}", row.key));
            }
        }
        shown_in_all(name, &all, &v.run.wall.text, "the run's wall");
        for w in v.warnings.iter().filter(|w| w.kind != WarningKind::Trial) {
            shown_in_all(name, &all, &w.text, "the warning");
        }
        let mut everywhere = 0;
        for (reach, block) in &v.section.0 {
            if *reach != Reach::Everywhere {
                continue;
            }
            everywhere += 1;
            match block {
                Block::Para(p) | Block::Warning(p) => shown_in_all(name, &all, p, "the sentence"),
                Block::Table(t) => {
                    for cell in t.rows.iter().flatten() {
                        shown_in_all(name, &all, &cell.text, "the cell");
                    }
                }
                Block::List(items) => {
                    for i in items {
                        shown_in_all(name, &all, i, "the item");
                    }
                }
                Block::Heading(_) | Block::Subheading(_) => {}
            }
        }
        let shows = matches!(name, "cold-prep" | "sweep" | "trials");
        assert_eq!(everywhere > 0, shows, "{name}: {everywhere} block(s) on the console");
    }
}

/// The renderers only format the view: a figure's text changed in the
/// view (as a change to its formatter would) shows, changed, in all
/// three, and so does a cell of a mode's table.
#[test]
fn a_figure_changed_in_the_view_shows_changed_in_the_console_summary_and_page() {
    for (name, r) in fixtures() {
        let mut v = View::of(&r);
        v.stages[0].wall.text = "PLANTED-WALL".into();
        v.stages[0].peak_rss.text = "PLANTED-PEAK".into();
        v.run.wall.text = "PLANTED-RUN".into();
        let table = v.section.0.iter_mut().find_map(|(reach, b)| match b {
            Block::Table(t) if *reach == Reach::Everywhere && !t.rows.is_empty() => Some(t),
            _ => None,
        });
        let cell = table.map(|t| t.rows[0][1].text = "PLANTED-CELL".into()).is_some();
        let all = three(&v);
        for planted in ["PLANTED-WALL", "PLANTED-PEAK", "PLANTED-RUN"] {
            shown_in_all(name, &all, planted, "the planted figure");
        }
        assert_eq!(cell, name == "trials", "{name}: a table on the console");
        if cell {
            shown_in_all(name, &all, "PLANTED-CELL", "the planted cell");
        }
    }
}

/// A span recorded longer than its stage (a share of the wall over 100%)
/// is marked impossible in the spans table and warned of in every view,
/// never shown as "30537.7%" of the wall.
#[test]
fn a_span_longer_than_its_stage_is_marked_impossible_everywhere() {
    let (_, mut r) = fixtures().into_iter().find(|(n, _)| *n == "trials").unwrap();
    let (key, name) = ("spin:30".to_string(), "step".to_string());
    let st = r.stages.get_mut(&key).unwrap();
    let span = serde_json::json!({"calls": 3, "sum_s": 9.2, "first_s": 3.0, "median_s": 3.0,
        "p95_s": 3.2, "p99_s": 3.2, "max_s": 3.2, "self_s": 9.2, "concurrent_s": 0.0,
        "share": 305.377});
    st.spans = [(name.clone(), serde_json::from_value(span).unwrap())].into();
    let totals = serde_json::json!({"measurements": 3, "wall_s": 0.09, "in_spans_s": 9.2,
        "outside_s": 0.0, "concurrent_s": 0.0});
    st.span_totals = Some(serde_json::from_value(totals).unwrap());
    let v = View::of(&r);
    let row = v.spans.iter().find(|row| row.stage == key && row.span == name).unwrap();
    assert_eq!(row.cells[10], "impossible: 30537.7%");
    let warned: Vec<_> = v.warnings_of(&key).filter(|w| w.text.contains("cannot be")).collect();
    assert_eq!(warned.len(), 1, "{:?}", v.warnings);
    let all = three(&v);
    shown_in_all("trials", &all, &warned[0].text, "the impossible span's warning");
}

/// A stage's span warning shows in all three whether or not the stage has
/// spans (a sampled stage with no samples has none): summary.md once said
/// it only beside a spans table.
#[test]
fn a_warning_of_a_stage_without_spans_shows_in_all_three() {
    let (_, mut r) = fixtures().into_iter().find(|(n, _)| *n == "diagnostic").unwrap();
    let key = r.ordered()[0].0.clone();
    let st = r.stages.get_mut(&key).unwrap();
    assert!(st.span_totals.is_none());
    st.span_warnings.push("--sample: no running Python sample in 1 trial(s) at 100 Hz".into());
    let v = View::of(&r);
    let warned: Vec<_> = v.warnings_of(&key).filter(|w| w.kind == WarningKind::Span).collect();
    assert_eq!(warned.len(), 1);
    shown_in_all("diagnostic", &three(&v), &warned[0].text, "the warning");
}

/// Over trials, a span's time, self and concurrent are each a mean per
/// trial, so they add up: self never exceeds its time, which it did when
/// time was the median trial's and self the mean (a first call of 2.786 s
/// self against 2.596 s). The median trial's time and its interval follow.
#[test]
fn a_spans_self_never_exceeds_its_time_over_trials() {
    let (_, mut r) = fixtures().into_iter().find(|(n, _)| *n == "trials").unwrap();
    let key = "spin:30".to_string();
    let st = r.stages.get_mut(&key).unwrap();
    // 3 trials: 2.9 s in the span in all, all of it self; the median
    // trial's 0.5 s is below the mean of 0.967 s.
    let span = serde_json::json!({"calls": 3, "sum_s": 2.9, "first_s": 2.0, "median_s": 0.5,
        "p95_s": 2.0, "p99_s": 2.0, "max_s": 2.0, "self_s": 2.9, "concurrent_s": 0.0,
        "share": 0.5});
    st.spans = [("step".to_string(), serde_json::from_value(span).unwrap())].into();
    let totals = serde_json::json!({"measurements": 3, "wall_s": 6.0, "in_spans_s": 2.9,
        "outside_s": 3.1, "concurrent_s": 0.0});
    st.span_totals = Some(serde_json::from_value(totals).unwrap());
    let crate::Section::Trials(t) = &mut r.section else { panic!("a trials report") };
    let set = t.trials.get_mut(&key).unwrap();
    let mut median = set.summary["wall_s"].clone();
    median.median = 0.5;
    set.summary.insert("span:step_s".into(), median);
    let v = View::of(&r);
    let row = v.spans.iter().find(|row| row.stage == key && row.span == "step").unwrap();
    let (time, own) = (&row.cells[7], &row.cells[8]);
    assert!(time.starts_with("966.7 ms (median 500.0 ms; "), "{time}");
    assert_eq!(own, "966.7 ms", "self, the mean per trial");
}
