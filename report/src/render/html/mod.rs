//! `report.html`: the run at a glance, one file that needs nothing else.
//! Derived from report.json like summary.md (written at the run's end,
//! redrawn by `render`, checked byte for byte by `verify`): the same report
//! gives the same bytes.
//!
//! Everything is inline (style, script, SVG) and a Content-Security-Policy
//! forbids the page any request, so it opens from `file://` with the
//! network off. Every name comes from a user's program and reaches the page
//! only through maud, which escapes it (inferno and plotters escape the
//! text of their SVG). The page holds what report.json holds, no path.
//!
//! What it shows: the headline, warnings and machine; the stage table
//! (sortable); the processes on a time axis; a cold preparation's load
//! balance per worker; per stage with spans, a flame
//! graph of self time per trial ([`super::folded`]), the spans table and a
//! histogram of each span's calls; then the mode's own plots.

mod balance;
pub mod flame;
mod histogram;
pub(crate) mod markdown;
mod sampled;
pub mod sparkline;
pub mod timeline;

use super::folded::{self, Stacks};
use crate::fmt::duration;
use crate::modes::{Report, Section};
use maud::{DOCTYPE, Markup, PreEscaped, html};

pub use flame::FlameError;
pub use markdown::markdown;

/// The file's name in the run directory.
pub const HTML: &str = "report.html";

const STYLE: &str = include_str!("page.css");
const SCRIPT: &str = include_str!("page.js");
/// No request of any kind: only the page's own inline style and script.
const POLICY: &str =
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:";

/// The page of `r`; `plots` are the mode's plots as SVG (name, bytes), as
/// `plots/` holds them.
pub fn page(r: &Report, plots: &[(&str, &[u8])]) -> Result<String, FlameError> {
    page_of(&super::view::View::of(r), plots)
}

/// The page of a report's view (see [`page`]).
pub fn page_of(v: &super::view::View<'_>, plots: &[(&str, &[u8])]) -> Result<String, FlameError> {
    let r = v.report;
    let title = crate::doc::plain(&v.title);
    let spans = spans(v)?;
    let sampled = sampled::view(r)?;
    let body = html! {
                header {
                    h1 { (prose(&v.title)) }
                    p.headline { (prose(&v.headline)) }
                    p.run {
                        (v.run.stages) " stage(s), " (v.run.workers) " worker process(es), isolation "
                        code { (v.run.isolation) } ", launcher " code { (v.run.launcher) }
                        ", run wall " (v.run.wall.text) ". Declaration "
                        code { (v.run.declaration) } ", environment "
                        code { (v.run.environment) } " (SHA-256, first 12 hex)."
                    }
                    @if let Some(line) = &v.inputs { p.run { (line) } }
                    @if !v.warnings.is_empty() {
                        ul.warnings { @for w in &v.warnings { li data-kind=(w.kind.name()) { (prose(&w.text)) } } }
                    }
                }
                (stage_table(v))
                @if let Some(t) = timeline::svg(r) {
                    section id="timeline" { h2 { "Processes" } (t) }
                }
                @if let Section::ColdPrep(prep) = &r.section {
                    @if let Some(b) = balance::view(prep) { (b) }
                }
                (spans)
                (sampled)
                @let own = mode_part(v);
                @if !own.is_empty() {
                    section id="mode" data-mode=(r.mode()) { (markdown(&own)) }
                }
                @if !plots.is_empty() {
                    section id="plots" {
                        h2 { "Plots" }
                        @for (name, svg) in plots {
                            figure.plot data-plot=(name) { (PreEscaped(plot_svg(svg))) }
                        }
                    }
                }
                footer {
                    "Derived from report.json (" (r.schema) " " (r.schema_version)
                    "); " code { "coordinator verify" } " checks this file byte for byte."
                }
    };
    Ok(document(&title, body))
}

/// A whole page: `body` with the page's own style and script inline, a
/// policy that forbids every request, and `title`.
pub fn document(title: &str, body: Markup) -> String {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta http-equiv="Content-Security-Policy" content=(POLICY);
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) }
                style { (PreEscaped(STYLE)) }
            }
            body {
                (body)
                script { (PreEscaped(SCRIPT)) }
            }
        }
    }
    .into_string()
}

/// The mode's own part (its section's tables and sentences), as summary.md has it.
fn mode_part(v: &super::view::View<'_>) -> String {
    let mut s = String::new();
    v.section.markdown(&mut s);
    s
}

/// A digest's first 12 hex digits, as every page shows it.
pub use super::view::short;

/// Text whose backticked parts are code, as the headline and warnings write names.
pub fn prose(text: &str) -> Markup {
    html! {
        @for (i, part) in text.split('`').enumerate() {
            @if i % 2 == 1 { code { (part) } } @else { (part) }
        }
    }
}

/// A plot's SVG as plotters wrote it, from its `<svg` on.
pub fn plot_svg(svg: &[u8]) -> &str {
    let text = std::str::from_utf8(svg).unwrap_or("");
    &text[text.find("<svg").unwrap_or(0)..]
}

/// The stage table: a row per stage in plan order, each cell with the
/// number it sorts by.
fn stage_table(v: &super::view::View<'_>) -> Markup {
    let trials = v.report.section.trials().is_some();
    let [stage, processes, wall, cpu, rss, read, written] = super::view::STAGE_COLUMNS;
    let figure = |f: &Option<super::view::Figure>| match f {
        Some(f) => html! { td.num data-v=(f.value) { (f.text) } },
        None => html! { td.num data-v="-1" { "–" } },
    };
    html! {
        section id="stages" {
            h2 { "Stages" }
            table.sortable {
                thead { tr {
                    th { (stage) } th.num { (processes) } th.num { (wall) }
                    @if trials { th { "median's interval" } }
                    th.num { (cpu) } th.num { (rss) }
                    th.num { (read) } th.num { (written) }
                } }
                tbody {
                    @for row in &v.stages {
                        tr data-stage=(row.key) {
                            td { code { (row.key) } }
                            td.num data-v=(row.processes) { (row.processes) }
                            td.num.wall data-v=(row.wall.value) { (row.wall.text) }
                            @if trials { td { (row.interval.clone().unwrap_or_default()) } }
                            td.num data-v=(row.cpu.value) { (row.cpu.text) }
                            td.num data-v=(row.peak_rss.value) { (row.peak_rss.text) }
                            (figure(&row.read))
                            (figure(&row.written))
                        }
                    }
                }
            }
        }
    }
}

/// Per stage with spans: its flame graph, its spans table and the
/// histogram of each span's calls.
fn spans(v: &super::view::View<'_>) -> Result<Markup, FlameError> {
    let r = v.report;
    let all = folded::stacks(r);
    if all.is_empty() {
        return Ok(html! {});
    }
    let rows = &v.spans;
    let mut graphs = Vec::new();
    for (i, s) in all.iter().enumerate() {
        graphs.push(flame::svg(&s.lines(), &format!("fg{i}"))?);
    }
    Ok(html! {
        section id="spans" {
            h2 { "Spans" }
            p { "Each flame graph is one stage: the stage on top, each span below the span it ran inside, \
                 a frame's width its time per trial. Self time is a frame's width less its children's. \
                 Spans that overlapped the main thread's without nesting (threads, forked children) are under "
                code { (folded::BESIDE) } ". Hover a frame for its figures, click it to zoom, "
                "click " em { "Reset Zoom" } " to go back." }
            @for (s, graph) in all.iter().zip(&graphs) {
                @let st = &r.stages[&s.stage];
                div.stage-spans data-stage=(s.stage) {
                    h3 { code { (s.stage) } }
                    p.note { (stacks_note(s)) }
                    div.flame-box { (PreEscaped(graph)) }
                    table.sortable.spans {
                        thead { tr { th { "span" } @for c in super::SPAN_COLUMNS { th.num { (c) } } } }
                        tbody {
                            @for row in rows.iter().filter(|row| row.stage == s.stage) {
                                tr data-span=(row.span) {
                                    td { code { (row.span) } }
                                    @for c in &row.cells { td.num { (c) } }
                                }
                            }
                        }
                    }
                    div.histograms {
                        @for (name, x) in crate::rundir::spans::by_self(&st.spans) {
                            @if let Some(h) = histogram::svg(x) {
                                figure.histogram data-span=(name) {
                                    figcaption { code { (name) } ": " (x.calls) " call(s), median " (duration(x.median_s)) }
                                    (h)
                                }
                            }
                        }
                    }
                }
            }
        }
    })
}

/// What a stage's flame graph is drawn from.
fn stacks_note(s: &Stacks) -> String {
    let per = format!("per trial, over {} measurement(s)", s.measurements);
    if !s.nested {
        return format!(
            "Self time {per}, one frame per span: report.json holds no nesting for this stage (its jobs' slices are in jobs.jsonl.gz, or the report is older than they)."
        );
    }
    if s.complete() {
        format!("Self time {per}, from every span call's start and end.")
    } else {
        format!(
            "Self time {per}, from the {} of {} span calls whose start and end report.json holds (the trace's limit); the table below counts every call.",
            s.calls_drawn, s.calls
        )
    }
}

#[cfg(test)]
mod tests;
