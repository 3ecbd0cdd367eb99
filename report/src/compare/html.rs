//! `compare A B --html FILE`: the comparison as one offline page, like a
//! run's report.html. The rows with their intervals, then per stage that
//! both runs drew from nested spans, a differential flame graph of B (a
//! frame's width its self time per trial in B) coloured only where the
//! compare test finds the stack's self time per trial significantly
//! different by more than the threshold (compare's `--threshold`, either
//! way): red slower, blue faster. Each stack is tested as a figure is: its
//! self time in each counted trial of A against each of B (rank test,
//! interval of the ratio of medians, `stats::verdict`).

use super::stacks::{Presence, StackRow};
use super::{Comparison, Row};
use crate::fmt::{duration, figure, p_value};
use crate::render::html::{document, flame, prose};
use crate::stats::Verdict;
use maud::{Markup, PreEscaped, html};

/// Whether a stage row's difference is coloured: significant, and beyond
/// the threshold either way.
fn coloured(r: &Row, threshold_pct: f64) -> Option<Verdict> {
    let t = threshold_pct / 100.0;
    match r.verdict {
        Verdict::Slower if r.ratio > 1.0 + t => Some(Verdict::Slower),
        Verdict::Faster if r.ratio < 1.0 - t => Some(Verdict::Faster),
        _ => None,
    }
}

/// A stack's differential line: A's and B's self µs per trial; a stack
/// whose difference is not coloured gets B's figure twice (a stack only A
/// has, A's: inferno draws it as gone).
fn line(s: &StackRow, threshold_pct: f64) -> String {
    let us = |x: f64| (x.max(0.0) * 1e6).round() as u64;
    let coloured = s.changed(threshold_pct).is_some() || s.presence == Presence::OnlyA;
    flame::differential_line(&s.stack, us(s.row.median_a), us(s.row.median_b), coloured)
}

fn class(v: Option<Verdict>) -> &'static str {
    match v {
        Some(Verdict::Slower) => "slower",
        Some(Verdict::Faster) => "faster",
        _ => "same",
    }
}

fn change(r: &Row) -> String {
    match r.ratio.is_finite() {
        true => format!("{:+.1}%", (r.ratio - 1.0) * 100.0),
        false => "–".into(),
    }
}

fn verdict(v: Verdict) -> &'static str {
    match v {
        Verdict::Slower => "slower",
        Verdict::Faster => "faster",
        Verdict::NoSignificantDifference => "no significant difference",
        Verdict::TooFewTrials => "too few trials to tell",
    }
}

/// The page comparing B against A.
pub fn page(c: &Comparison, threshold_pct: f64) -> Result<String, flame::FlameError> {
    let mut stages = Vec::new();
    for (i, s) in c.stacks.iter().enumerate() {
        let lines: Vec<String> = s.rows.iter().map(|r| line(r, threshold_pct)).collect();
        let graph = flame::differential_svg(&lines, &format!("cmp{i}"))?;
        stages.push((&s.stage, s.measurements_a, s.measurements_b, &s.rows, graph));
    }
    let body = html! {
        header {
            h1 { "stagebench compare: B against A" }
            p.run { "Ratios are B / A. A row is slower or faster when the rank test's p < 0.05 and the ratio's interval excludes 1; regressed when slower by more than " (threshold_pct) "%." }
            @if !c.incomparable.is_empty() {
                ul.warnings { @for w in &c.incomparable { li { "not comparable: " (w) } } }
            }
            @if !c.runs.is_empty() {
                table.runs {
                    thead { tr { th { "run" } th { "directory" } th { "started" } th { "commit" } th { "declaration" } } }
                    tbody {
                        @for (side, r) in ["A", "B"].iter().zip(&c.runs) {
                            tr data-side=(side) {
                                td { (side) } td { code { (r.name) } } td { (r.created_utc) }
                                td { code { (r.commit) } } td { code { (r.declaration) } }
                            }
                        }
                    }
                }
            }
            @if !c.comparability.is_empty() {
                details.comparability {
                    summary { "What each ran on (A | B)" }
                    table {
                        tbody {
                            @for l in &c.comparability {
                                tr.(if l.differs() { "differs" } else { "same" }) {
                                    td { (l.what) } td { (l.a) } td { (l.b) }
                                    td { (match (l.differs(), l.informational) {
                                        (false, _) => "same",
                                        (true, true) => "differs (information)",
                                        (true, false) => "DIFFERS",
                                    }) }
                                }
                            }
                        }
                    }
                }
            }
            @let differs = super::comparable::differences(&c.comparability);
            @if !differs.is_empty() || !c.notes.is_empty() {
                ul.warnings {
                    @for w in &differs { li { "the runs differ: " (w) } }
                    @for n in &c.notes { li { (prose(n)) } }
                }
            }
        }
        section id="rows" {
            h2 { "Stages" }
            table.sortable {
                thead { tr {
                    th { "stage" } th { "figure" } th.num { "A median" } th.num { "B median" }
                    th.num { "change" } th { "interval of B/A" } th.num { "p" } th { "verdict" }
                } }
                tbody {
                    @for r in &c.rows {
                        tr.(class(coloured(r, threshold_pct))) data-stage=(r.stage) data-figure=(r.figure) {
                            td { code { (r.stage) } }
                            td { code { (r.figure) } }
                            td.num { (figure(&r.figure, r.median_a)) }
                            td.num { (figure(&r.figure, r.median_b)) }
                            td.num data-v=(r.ratio) { (change(r)) }
                            td { (r.ci.cell(|x| format!("{x:.3}"))) }
                            td.num { (p_value(r.p)) }
                            td { (verdict(r.verdict)) @if r.regressed { " (regressed)" } }
                        }
                    }
                }
            }
        }
        @if stages.is_empty() {
            p.note { "No stage has nested spans in both runs: there is no flame graph to compare." }
        }
        @for (stage, na, nb, rows, graph) in &stages {
            section.stage-spans data-stage=(stage) {
                h2 { "Spans of " code { (stage) } }
                p.note { "Self time per trial (the median over trials), " (na) " trial(s) of A against " (nb) " of B. Width: B. Colour: red where B is significantly slower by more than " (threshold_pct) "%, blue where faster by more than that, none otherwise." }
                div.flame-box { (PreEscaped(graph)) }
                (stack_table(rows, threshold_pct))
            }
        }
    };
    Ok(document("stagebench compare", body))
}

fn stack_table(rows: &[StackRow], threshold_pct: f64) -> Markup {
    html! {
        table.sortable.stacks {
            thead { tr {
                th { "stack" } th.num { "A self per trial" } th.num { "B self per trial" }
                th.num { "change" } th { "interval of B/A" } th.num { "p" } th { "verdict" }
            } }
            tbody {
                @for s in rows {
                    tr.(class(s.changed(threshold_pct))) data-stack=(s.stack.join(";")) {
                        td { code { (s.path()) } }
                        td.num { (duration(s.row.median_a)) }
                        td.num { (duration(s.row.median_b)) }
                        td.num.change data-v=(s.row.ratio) { (s.change()) }
                        td { (s.row.ci.cell(|x| format!("{x:.3}"))) }
                        td.num { (p_value(s.row.p)) }
                        td.verdict { (match s.presence { Presence::Both => verdict(s.row.verdict), _ => "–" }) }
                    }
                }
            }
        }
    }
}
