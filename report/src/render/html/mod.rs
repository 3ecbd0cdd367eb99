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
mod markdown;
mod sampled;
pub mod sparkline;
pub mod timeline;

use super::folded::{self, Stacks};
use crate::fmt::{duration, mib_number};
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
    let title = match &r.campaign_step {
        Some(step) => format!("stagebench campaign step {step} ({} mode)", r.mode()),
        None => format!("stagebench {} run", r.mode()),
    };
    let spans = spans(r)?;
    let sampled = sampled::view(r)?;
    let body = html! {
                header {
                    h1 { (title) }
                    p.headline { (prose(&r.headline())) }
                    p.run {
                        (r.stages.len()) " stage(s), " (r.workers.len()) " worker process(es), isolation "
                        code { (r.isolation) } ", launcher " code { (r.launcher) }
                        ", run wall " (duration(r.run_wall_s)) ". Declaration "
                        code { (short(&r.declaration_sha256)) } ", environment "
                        code { (short(&r.environment_sha256)) } " (SHA-256, first 12 hex)."
                    }
                    @if let Some(line) = r.inputs_line() { p.run { (line) } }
                    @let warnings = warnings(r);
                    @if !warnings.is_empty() {
                        ul.warnings { @for w in &warnings { li { (prose(w)) } } }
                    }
                }
                (stage_table(r))
                @if let Some(t) = timeline::svg(r) {
                    section id="timeline" { h2 { "Processes" } (t) }
                }
                @if let Section::ColdPrep(prep) = &r.section {
                    @if let Some(b) = balance::view(prep) { (b) }
                }
                (spans)
                (sampled)
                @let own = mode_part(r);
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

/// The mode's own part of summary.md (its section's tables and sentences).
fn mode_part(r: &Report) -> String {
    let mut s = String::new();
    r.section.summary(r, &mut s);
    s
}

/// A digest's first 12 hex digits, as every page shows it.
pub fn short(sha: &str) -> &str {
    &sha[..12.min(sha.len())]
}

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

/// Every warning a person must read: the machine's, then each stage's.
fn warnings(r: &Report) -> Vec<String> {
    let mut out: Vec<String> = r.machine_warnings.clone();
    let trials = r.section.trials();
    for (key, st) in super::ordered(r) {
        out.extend(st.spans_not_found_warning(key));
        out.extend(st.span_warnings.iter().map(|w| format!("`{key}`: {w}")));
        out.extend(st.memory_note(key));
        if st.leaked_processes.count > 0 {
            out.push(format!(
                "`{key}` left {} process(es) running when it ended; its worker killed and reaped them",
                st.leaked_processes.count
            ));
        }
        if let Some(set) = trials.and_then(|t| t.get(key)) {
            out.extend(set.warnings.iter().map(|w| format!("`{key}`: {w}")));
        }
    }
    out
}

/// The stage table: a row per stage in plan order, each cell with the
/// number it sorts by.
fn stage_table(r: &Report) -> Markup {
    let trials = r.section.trials();
    html! {
        section id="stages" {
            h2 { "Stages" }
            table.sortable {
                thead { tr {
                    th { "stage" } th.num { "processes" } th.num { "wall" }
                    @if trials.is_some() { th { "median's interval" } }
                    th.num { "CPU" } th.num { "peak RSS MiB" }
                    th.num { "storage read MiB" } th.num { "storage written MiB" }
                } }
                tbody {
                    @for (key, st) in super::ordered(r) {
                        @let wall = trials.and_then(|t| t.get(key)).and_then(|t| t.summary.get("wall_s"));
                        tr data-stage=(key) {
                            td { code { (key) } }
                            td.num data-v=(st.processes) { (st.processes) }
                            td.num.wall data-v=(st.wall_s) { (duration(st.wall_s)) }
                            @if trials.is_some() {
                                td { (wall.map(|w| w.median_interval.cell(duration)).unwrap_or_default()) }
                            }
                            td.num data-v=(st.cpu_s) { (duration(st.cpu_s)) }
                            td.num data-v=(st.peak_rss_bytes) { (mib_number(st.peak_rss_bytes)) }
                            @match &st.io {
                                Some(io) => {
                                    td.num data-v=(io.read_bytes) { (mib_number(io.read_bytes)) }
                                    td.num data-v=(io.write_bytes) { (mib_number(io.write_bytes)) }
                                }
                                None => { td.num data-v="-1" { "–" } td.num data-v="-1" { "–" } }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Per stage with spans: its flame graph, its spans table and the
/// histogram of each span's calls.
fn spans(r: &Report) -> Result<Markup, FlameError> {
    let all = folded::stacks(r);
    if all.is_empty() {
        return Ok(html! {});
    }
    let rows = super::span_rows(r);
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
