//! `history.html` beside history.md: the same facts as a page. The verdict,
//! the change points with their intervals, the plot of each changed figure
//! inline, every figure read as a small series with its change points, and
//! the runs in order.

use super::{History, MARKER};
use crate::fmt::figure;
use crate::render::html::{document, plot_svg, sparkline};
use maud::{PreEscaped, html};

/// The file's name in DIR.
pub const PAGE: &str = "history.html";

/// The page of `h`; `plots` the changed figures' SVGs, as history-plots/
/// holds them. [`MARKER`] follows the doctype: a history.html without it
/// is the user's.
pub fn page(h: &History, plots: &[(&str, &[u8])]) -> String {
    let body = html! {
        header {
            h1 { "stagebench history" }
            p.headline { (super::text::verdict(h)) }
            p.run { (super::text::heading(h)) "." }
        }
        @if !h.changes.is_empty() {
            section id="changes" {
                h2 { "Change points" }
                table.sortable {
                    thead { tr {
                        th { "stage" } th { "figure" } th.num { "before" } th.num { "after" } th.num { "ratio" }
                        th { "interval of the ratio" } th.num { "p" } th { "first run after" }
                    } }
                    tbody {
                        @for c in &h.changes {
                            tr data-stage=(c.stage) data-figure=(c.figure) data-at=(c.at + 1) {
                                td { code { (c.stage) } } td { code { (c.figure) } }
                                td.num data-v=(c.before) { (figure(&c.figure, c.before)) }
                                td.num data-v=(c.after) { (figure(&c.figure, c.after)) }
                                td.num data-v=(c.ratio) { (format!("{:.3}", c.ratio)) }
                                td.nowrap { (c.interval.cell(|x| format!("{x:.3}"))) }
                                td.num data-v=(c.p) { (format!("{:.4}", c.p)) }
                                td { (super::text::first_after(h, c.at)) }
                            }
                        }
                    }
                }
                @for (name, svg) in plots {
                    figure.plot data-plot=(name) { (PreEscaped(plot_svg(svg))) }
                }
            }
        }
        section id="figures" {
            h2 { "Every figure, run by run" }
            p.note { "Each figure's value per run (the median of what the run measured), in history order; a red line before the first run after each change point." }
            table.sortable {
                thead { tr {
                    th { "stage" } th { "figure" } th.num { "first run" } th.num { "last run" } th { "series" } th.num { "changes" }
                } }
                tbody {
                    @for ((stage, name), series) in h.figures.iter().zip(&h.series) {
                        @let at: Vec<usize> = h.changes.iter()
                            .filter(|c| &c.stage == stage && &c.figure == name).map(|c| c.at).collect();
                        @let first = series.iter().copied().find(|v| v.is_finite());
                        @let last = series.iter().copied().rev().find(|v| v.is_finite());
                        tr data-stage=(stage) data-figure=(name) {
                            td { code { (stage) } } td { code { (name) } }
                            td.num { (first.map(|v| figure(name, v)).unwrap_or_else(|| "–".into())) }
                            td.num { (last.map(|v| figure(name, v)).unwrap_or_else(|| "–".into())) }
                            td { (sparkline::svg(series, &at, None, &format!("{stage} {name}: {} runs", series.len()))) }
                            td.num data-v=(at.len()) { (at.len()) }
                        }
                    }
                }
            }
        }
        @if !h.left_out.is_empty() {
            section id="left-out" {
                h2 { "Runs left out" }
                table { thead { tr { th { "run" } th { "why" } } }
                    tbody { @for (rel, why) in &h.left_out { tr { td { code { (rel) } } td { (why) } } } } }
            }
        }
        section id="runs" {
            h2 { "Runs, in order" }
            table.sortable {
                thead { tr { th.num { "#" } th { "run" } th { "started (UTC)" } th { "commit" } } }
                tbody {
                    @for (i, r) in h.runs.iter().enumerate() {
                        tr { td.num data-v=(i + 1) { (i + 1) } td { code { (r.rel) } } td { (r.created_utc) }
                             td { code { (r.commit.as_deref().unwrap_or("–")) } } }
                    }
                }
            }
        }
    };
    let page = document("stagebench history", body);
    page.replacen("<!DOCTYPE html>", &format!("<!DOCTYPE html>{MARKER}"), 1)
}
