//! `index.html` beside the dashboard's README.md: the same rows as a page,
//! each with a sparkline of its definition's history (the sum of its
//! stages' median walls per run, this run ringed, change points marked)
//! and a link to the run's report.html.

use super::{OK, Row};
use crate::fmt::duration;
use crate::render::html::{document, prose};
use maud::{Markup, html};

pub const PAGE: &str = "index.html";
/// Right after the doctype of every page of ours; an index.html without it
/// is the user's.
pub const PAGE_MARKER: &str =
    "<!-- written by `coordinator dashboard`: rerun it instead of editing this file -->";

/// The page of `rows` (newest first).
pub fn page(rows: &[Row]) -> String {
    let body = html! {
        header {
            h1 { "stagebench runs" }
            p.run {
                (rows.len()) " run director" (if rows.len() == 1 { "y" } else { "ies" })
                " below this one, newest first. Status " code { "ok" } " means the run has a report and its directory verifies; "
                "only such runs' figures are shown. The line is the run's definition's history (the sum of its stages' median walls per run, "
                "this run ringed, a change point red)."
            }
        }
        table.sortable {
            thead { tr {
                th { "run" } th { "started (UTC)" } th { "mode" } th { "status" } th.num { "stages" }
                th.num { "processes" } th.num { "run wall" } th { "headline" } th { "history" } th { "last change" }
            } }
            tbody {
                @for r in rows {
                    tr data-run=(r.rel) {
                        td {
                            @if r.status == OK {
                                a href=(link(r)) { code { (r.rel) } }
                            } @else { code { (r.rel) } }
                        }
                        td { (r.created) }
                        td { (r.mode) }
                        td.status { (prose(&r.status.replace("**", ""))) }
                        td.num { (r.stages) }
                        td.num { (r.processes) }
                        td.num { (r.wall) }
                        td { (prose(&r.headline)) }
                        td { @if let Some(t) = &r.trend { (sparkline(t)) } }
                        td { (r.last_change) }
                    }
                }
            }
        }
    };
    let page = document("stagebench runs", body);
    page.replacen("<!DOCTYPE html>", &format!("<!DOCTYPE html>{PAGE_MARKER}"), 1)
}

/// A run's page: its report.html, a campaign's summary.md; the path
/// relative to the index, each segment percent-encoded where a URL needs it.
fn link(r: &Row) -> String {
    let file = if r.mode == "campaign" { "summary.md" } else { "report.html" };
    let mut out = String::new();
    for b in format!("{}/{file}", r.rel).bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'/' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

fn sparkline(t: &crate::history::Trend) -> Markup {
    let title = format!(
        "{} runs of this definition; this run {} of {}, {}",
        t.walls.len(),
        t.at + 1,
        t.walls.len(),
        duration(t.walls[t.at])
    );
    crate::render::html::sparkline::svg(&t.walls, &t.changes, Some(t.at), &title)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_is_relative_and_encoded_and_a_sparkline_marks_its_changes() {
        let mut r = Row {
            rel: "nightly/r 1#x".into(),
            created: String::new(),
            mode: "trials".into(),
            status: OK.into(),
            stages: "1".into(),
            processes: "2".into(),
            wall: "1 s".into(),
            headline: "slowest stage `<b>`".into(),
            last_change: "–".into(),
            trend: None,
        };
        assert_eq!(link(&r), "nightly/r%201%23x/report.html");
        r.trend = Some(crate::history::Trend {
            last_change: None,
            walls: vec![1.0, 1.0, 2.0, 2.0],
            at: 3,
            changes: vec![2],
        });
        let page = page(std::slice::from_ref(&r));
        assert!(page.starts_with(&format!("<!DOCTYPE html>{PAGE_MARKER}")));
        assert!(page.contains("<code>&lt;b&gt;</code>"), "the headline's name is escaped");
        // One change line, at the third of four points.
        assert_eq!(page.matches("stroke=\"#e45756\"").count(), 1);
        assert!(page.contains("x1=\"79\""), "{page}");
    }
}
