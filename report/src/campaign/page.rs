//! A campaign's report.html: the plot of each step's stages stacked (cold
//! against resume against interrupted), its summary as summary.md words it
//! (the judgment with the identity finding, per stage and component, the
//! final states), then each resume read call by call: every call with its
//! fate (skipped, loaded, repeated, not yet done at the kill, added), its
//! time in the resume and the same call's cold.

use super::report::{CampaignReport, StepReport};
use super::spans::calls::{self, Fate};
use crate::fmt::duration;
use crate::render::html::{document, markdown, plot_svg};
use maud::{Markup, PreEscaped, html};

/// Rows of a step's calls table at most; summary.md's sentences and
/// report.json count every call.
const MAX_CALLS: usize = 500;

pub(super) fn page(r: &CampaignReport, summary: &str, svg: &[u8]) -> String {
    let title = format!("stagebench campaign {}", r.name);
    // summary.md's first line is its title, given here as the page's.
    let rest = summary.split_once('\n').map_or("", |(_, rest)| rest);
    let body = html! {
        header { h1 { "stagebench campaign " code { (r.name) } } }
        figure.plot data-plot="campaign" { (PreEscaped(plot_svg(svg))) }
        section id="campaign" { (markdown(rest)) }
        (calls_by_fate(&r.steps))
    };
    document(&title, body)
}

/// Each step after the cold one, read call by call against it; nothing for
/// a campaign whose runs recorded no calls (the recipe's).
fn calls_by_fate(steps: &[StepReport]) -> Markup {
    let Some(cold) = steps.iter().find(|s| s.kind == "cold") else { return html! {} };
    let read: Vec<(&StepReport, calls::Reading)> = steps
        .iter()
        .filter(|s| s.kind != "cold")
        .filter_map(|s| calls::read(s, cold).map(|reading| (s, reading)))
        .collect();
    if read.is_empty() {
        return html! {};
    }
    html! {
        section id="calls" {
            h2 { "Calls by fate" }
            p.note {
                "Each call of a span, known by its place (the k-th call of its name inside the same call of \
                 its enclosing span), against the cold run's call at the same place; medians over trials. "
                span.fate.skipped { "skipped" } ": the cold run made it, the resume did not. "
                span.fate.loaded { "loaded" } ": it ran again in under "
                (format!("{:.0}%", 100.0 * calls::LOADED_BELOW)) " of its cold time, reading back what was done. "
                span.fate.repeated { "repeated" } ": done before and done again. "
                span.fate.undone { "not yet done at the kill" } ": work the interruption left. "
                span.fate.added { "added" } ": the cold run had no such call."
            }
            @for (step, reading) in &read {
                (step_calls(step, reading))
            }
        }
    }
}

fn step_calls(step: &StepReport, reading: &calls::Reading) -> Markup {
    let order = |stage: &str| step.median.get(stage).map_or(usize::MAX, |p| p.order);
    let mut rows: Vec<&calls::Call> = Vec::new();
    for fate in Fate::ALL {
        rows.extend(reading.of(fate, order));
    }
    let counts: Vec<(Fate, usize)> = Fate::ALL
        .iter()
        .map(|f| (*f, rows.iter().filter(|c| c.fate == *f).count()))
        .filter(|(_, n)| *n > 0)
        .collect();
    let shown = rows.len().min(MAX_CALLS);
    html! {
        div.step-calls data-step=(step.name) {
            h3 { code { (step.name) } " (" (step.kind) ")" }
            p {
                (rows.len()) " call(s): "
                @for (i, (fate, n)) in counts.iter().enumerate() {
                    @if i > 0 { ", " }
                    (n) " " span.fate.(fate.class()) { (fate.word()) }
                }
                @if shown < rows.len() {
                    "; the first " (shown) " are listed (summary.md's sentences count every call)"
                }
                "."
            }
            table.sortable.calls {
                thead { tr {
                    th { "call" } th { "fate" } th.num { "this step" } th.num { "cold" } th.num { "of cold" }
                } }
                tbody {
                    @for c in rows.iter().take(shown) {
                        tr data-fate=(c.fate.class()) {
                            td { code { (c.label()) } }
                            td { span.fate.(c.fate.class()) { (c.fate.word()) } }
                            @if c.fate == Fate::Skipped {
                                td.num data-v="-1" { "–" }
                            } @else {
                                td.num data-v=(c.seconds) { (duration(c.seconds)) }
                            }
                            @match c.cold_s {
                                Some(s) => td.num data-v=(s) { (duration(s)) },
                                None => td.num data-v="-1" { "–" },
                            }
                            @match c.cold_s.filter(|s| *s > 0.0 && c.fate != Fate::Skipped) {
                                Some(s) => td.num data-v=(c.seconds / s) { (share(c.seconds / s)) },
                                None => td.num data-v="-1" { "–" },
                            }
                        }
                    }
                }
            }
        }
    }
}

/// A call's time as a share of its cold time: two decimals under 1%, so a
/// call that loaded its result does not read as 0%.
fn share(ratio: f64) -> String {
    match 100.0 * ratio {
        p if p < 1.0 => format!("{p:.2}%"),
        p => format!("{p:.0}%"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::campaign::spans::calls::tests::{step, trial};

    /// A span's name from the user's program is text on the page, in the
    /// calls table as anywhere: markup in it runs nothing.
    #[test]
    fn a_hostile_span_name_is_escaped_in_the_calls_table() {
        let name = "<img src=x onerror=alert(1)></td><script>x()</script>";
        let cold = step("cold", vec![trial(&[("s", name, &[[0.0, 1.0]])], None)]);
        let resume = step("resume", vec![trial(&[("s", name, &[[0.0, 0.001]])], None)]);
        let html = calls_by_fate(&[cold, resume]).into_string();
        assert!(html.contains("&lt;img src=x onerror=alert(1)&gt;&lt;"), "{html}");
        assert!(!html.contains("<img") && !html.contains("<script"), "{html}");
        // Loaded: a thousandth of its cold time, shown as such.
        assert!(html.contains("data-fate=\"loaded\"") && html.contains("0.10%"), "{html}");
    }
}
