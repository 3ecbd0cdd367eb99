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

const W: f64 = 120.0;
const H: f64 = 24.0;

fn sparkline(t: &crate::history::Trend) -> Markup {
    let finite: Vec<f64> = t.walls.iter().copied().filter(|w| w.is_finite()).collect();
    let (lo, hi) =
        finite.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &w| (a.min(w), b.max(w)));
    if finite.len() < 2 || !lo.is_finite() {
        return html! {};
    }
    let n = t.walls.len();
    let x = |i: usize| 3.0 + (W - 6.0) * i as f64 / (n - 1).max(1) as f64;
    let y = |w: f64| {
        let span = (hi - lo).max(hi.abs() * 1e-9).max(1e-12);
        3.0 + (H - 6.0) * (1.0 - (w - lo) / span)
    };
    let r1 = |v: f64| (v * 10.0).round() / 10.0;
    let points: Vec<String> = t
        .walls
        .iter()
        .enumerate()
        .filter(|(_, w)| w.is_finite())
        .map(|(i, w)| format!("{},{}", r1(x(i)), r1(y(*w))))
        .collect();
    let title = format!(
        "{} runs of this definition; this run {} of {}, {}",
        n,
        t.at + 1,
        n,
        duration(t.walls[t.at])
    );
    html! {
        svg.spark viewBox=(format!("0 0 {W} {H}")) width=(W) height=(H) {
            title { (title) }
            polyline points=(points.join(" ")) fill="none" stroke="#4c78a8" stroke-width="1.2" {}
            @for c in &t.changes {
                line x1=(r1(x(*c))) y1="1" x2=(r1(x(*c))) y2=(H - 1.0) stroke="#e45756" stroke-width="1" {}
            }
            circle cx=(r1(x(t.at))) cy=(r1(y(t.walls[t.at]))) r="2.5" fill="none" stroke="#000" {}
        }
    }
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
