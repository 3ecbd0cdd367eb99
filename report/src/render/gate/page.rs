//! A gate's report.html: its comment as a document (the details a
//! `<details>` element), the drift plot, then per stage its stacks, head
//! against base, as differential flame graphs.

use crate::render::html::{flame, plot_svg};
use crate::rundir::gate::{GateReport, StacksOf, StageStacks};
use maud::{Markup, PreEscaped, html};

/// The page: the same as the comment, as a document, its details a
/// `<details>` element (raw HTML in Markdown is shown as text there); then
/// per stage its stacks, head against base, as differential flame graphs.
pub(super) fn page(r: &GateReport) -> String {
    let (main, details) = super::parts(r);
    let markdown = crate::render::html::markdown::markdown;
    let body = html! {
        header { h1 { "stagebench gate" } }
        section id="gate" {
            (markdown(&main))
            details { summary { (super::DETAILS) } (markdown(&details)) }
        }
        @match super::plot::svg(r) {
            Some(Ok(svg)) => figure.plot data-plot="drift" { (PreEscaped(plot_svg(&svg))) },
            Some(Err(e)) => p.note { "The drift could not be drawn: " (e.to_string()) },
            None => {},
        }
        @for (i, s) in r.stacks.iter().enumerate() {
            (stacks(s, i, r.threshold_pct))
        }
    };
    crate::render::html::document("stagebench gate", body)
}

/// A stage's stacks as a differential flame graph: width head's, colour
/// where the stack changed (red slower, blue faster), with what it is of.
fn stacks(s: &StageStacks, i: usize, threshold_pct: f64) -> Markup {
    let lines: Vec<String> = s
        .stacks
        .iter()
        .map(|d| flame::differential_line(&d.frames, d.base_us, d.head_us, d.change.is_some()))
        .collect();
    let (title, what, colour) = match s.of {
        StacksOf::Spans => (
            "Spans of ",
            "Self time per trial (the median over each side's trials)",
            format!(
                "red where head's self time is significantly slower by more than {threshold_pct}% (compare's test of each stack over the trials), blue where faster by more than that"
            ),
        ),
        StacksOf::Sampled => (
            "Sampled stacks of ",
            "Running time per trial (samples ÷ rate, the mean over each side's trials)",
            "red or blue where the function on top is one whose share moved (compare's test of shares), by which way its stack's time went".into(),
        ),
    };
    let graph = flame::differential_svg(&lines, &format!("gate{i}"));
    html! {
        section.stage-stacks data-stage=(s.stage) data-of=(if s.of == StacksOf::Spans { "spans" } else { "sampled" }) {
            h2 { (title) code { (s.stage) } ", head against base" }
            p.note { (what) ", " (s.base_trials) " trial(s) of base against " (s.head_trials) " of head. Width: head. Colour: " (colour) "; none otherwise. A drawing to read the change by: the verdicts above are the couples'." }
            @match graph {
                Ok(svg) => div.flame-box { (PreEscaped(svg)) },
                Err(e) => p.note { "The graph could not be drawn: " (e.to_string()) },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::gate::comment;
    use crate::render::gate::tests::report;

    #[test]
    fn the_page_draws_its_details_as_an_element_never_as_text() {
        let page = page(&report(1));
        assert!(page.contains("<details><summary>Every figure, the machine, the drift</summary>"));
        assert!(!page.contains("&lt;details&gt;"), "the block shown as text");
        assert!(page.contains("<code>stage0</code>"));
    }

    /// The stacks are drawn on the page only: a differential flame graph
    /// per stage, head's widths, the changed stack coloured; a hostile
    /// stage name is text; the comment carries no graph.
    #[test]
    fn the_page_draws_each_stages_stacks_head_against_base() {
        use crate::rundir::gate::{DiffStack, StackChange, StacksOf, StageStacks};
        let mut r = report(0);
        let d = |name: &str, base_us, head_us, change| DiffStack {
            frames: vec!["<b>stage</b>".into(), name.into()],
            base_us,
            head_us,
            change,
        };
        r.stacks.push(StageStacks {
            stage: "<b>stage</b>".into(),
            of: StacksOf::Spans,
            base_trials: 12,
            head_trials: 12,
            stacks: vec![
                d("work", 50_000, 65_000, Some(StackChange::Slower)),
                d("load", 20_000, 20_400, None),
            ],
        });
        let page = page(&r);
        assert!(
            page.contains(
                "<h2>Spans of <code>&lt;b&gt;stage&lt;/b&gt;</code>, head against base</h2>"
            ),
            "{page}"
        );
        assert!(!page.contains("<b>stage</b>"), "a name as markup");
        let svg = &page[page.find("<svg").expect("a graph")..];
        // work is coloured (inferno's red for a slower frame), load is not.
        let title = |f: &str| {
            let at = svg.find(&format!("<title>{f} (")).unwrap_or_else(|| panic!("{f}: {svg}"));
            &svg[..at]
        };
        let fill = |f: &str| {
            let before = title(f);
            let g = before.rfind("<g>").unwrap_or(0);
            let at = svg[g..].find("fill=\"").unwrap() + g + 6;
            svg[at..at + svg[at..].find('"').unwrap()].to_string()
        };
        let (work, load) = (fill("work"), fill("load"));
        assert!(work.starts_with("rgb(255,") && load == "rgb(250,250,250)", "{work} {load}");
        assert!(!comment(&r).contains("<svg"));
    }
}
