//! `compare A B --html FILE`: the comparison as one offline page, like a
//! run's report.html. The rows with their intervals, then per stage that
//! both runs drew from nested spans, a differential flame graph of B (a
//! frame's width its self time per trial in B) coloured only where the
//! compare test finds the stack's self time per trial significantly
//! different by more than the threshold (compare's `--threshold`, either
//! way): red slower, blue faster. Each stack is tested as a figure is: its
//! self time in each counted trial of A against each of B (rank test,
//! interval of the ratio of medians, `stats::verdict`).

use super::{Comparison, Row, row};
use crate::fmt::{duration, figure, p_value};
use crate::modes::Report;
use crate::render::folded::{self, Stacks};
use crate::render::html::{document, flame, prose};
use crate::stats::Verdict;
use maud::{Markup, PreEscaped, html};

/// One stack of a stage compared.
pub struct StackRow {
    pub stack: Vec<String>,
    pub row: Row,
}

/// Every stack of `stage` in either run, compared (nested stacks only).
pub fn stacks(a: &Stacks, b: &Stacks, threshold_pct: f64) -> Vec<StackRow> {
    let mut keys: Vec<&Vec<String>> = a.samples.keys().chain(b.samples.keys()).collect();
    keys.sort();
    keys.dedup();
    let zeros = |s: &Stacks| vec![0.0; s.measurements as usize];
    keys.into_iter()
        .enumerate()
        .map(|(i, k)| {
            let xa = a.samples.get(k).cloned().unwrap_or_else(|| zeros(a));
            let xb = b.samples.get(k).cloned().unwrap_or_else(|| zeros(b));
            let name = k.join(";");
            StackRow {
                stack: k.clone(),
                row: row(&a.stage, &name, &xa, &xb, threshold_pct, i as u64),
            }
        })
        .collect()
}

/// Whether a row's difference is coloured: significant, and beyond the
/// threshold either way (slower by more than it, as compare's regression,
/// or faster by more than it).
fn coloured(r: &Row, threshold_pct: f64) -> Option<Verdict> {
    let t = threshold_pct / 100.0;
    match r.verdict {
        Verdict::Slower if r.ratio > 1.0 + t => Some(Verdict::Slower),
        Verdict::Faster if r.ratio < 1.0 - t => Some(Verdict::Faster),
        _ => None,
    }
}

/// A stack's differential line: A's and B's self µs per trial; a stack
/// whose difference is not coloured gets B's figure twice.
fn line(s: &StackRow, threshold_pct: f64) -> String {
    let us = |x: f64| (x * 1e6).round() as u64;
    let after = us(s.row.median_b.max(0.0));
    let before = match coloured(&s.row, threshold_pct) {
        Some(_) => us(s.row.median_a.max(0.0)),
        None => after,
    };
    format!("{} {before} {after}", s.stack.join(";"))
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

/// The page comparing `b` against `a`.
pub fn page(
    c: &Comparison,
    reports: [&Report; 2],
    threshold_pct: f64,
) -> Result<String, flame::FlameError> {
    let [ra, rb] = reports;
    let (sa, sb) = (folded::stacks(ra), folded::stacks(rb));
    let mut stages = Vec::new();
    for (i, a) in sa.iter().enumerate().filter(|(_, s)| s.nested) {
        let Some(b) = sb.iter().find(|b| b.stage == a.stage && b.nested) else { continue };
        let rows = stacks(a, b, threshold_pct);
        let lines: Vec<String> = rows.iter().map(|s| line(s, threshold_pct)).collect();
        let graph = flame::svg(&lines, &format!("cmp{i}"))?;
        stages.push((a.stage.clone(), a.measurements, b.measurements, rows, graph));
    }
    let body = html! {
        header {
            h1 { "stagebench compare: B against A" }
            p.run { "Ratios are B / A. A row is slower or faster when the rank test's p < 0.05 and the ratio's interval excludes 1; regressed when slower by more than " (threshold_pct) "%." }
            @if !c.incomparable.is_empty() {
                ul.warnings { @for w in &c.incomparable { li { "not comparable: " (w) } } }
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
                    tr.(class(coloured(&s.row, threshold_pct))) data-stack=(s.stack.join(";")) {
                        td { code { (s.stack.join(" › ")) } }
                        td.num { (duration(s.row.median_a)) }
                        td.num { (duration(s.row.median_b)) }
                        td.num.change data-v=(s.row.ratio) { (change(&s.row)) }
                        td { (s.row.ci.cell(|x| format!("{x:.3}"))) }
                        td.num { (p_value(s.row.p)) }
                        td.verdict { (verdict(s.row.verdict)) }
                    }
                }
            }
        }
    }
}
