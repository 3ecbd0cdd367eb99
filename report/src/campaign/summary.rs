//! What a campaign's report.json renders to: `summary.md`, `report.html` and
//! `plots/campaign.{svg,png}` (cold against resume per stage, and each
//! step's time stacked by component). Same report, same bytes, so `verify`
//! re-renders and compares.

use super::report::{COMPONENTS, CampaignReport, StagePart, label};
use crate::chart::RenderError;
use crate::fmt::duration;
use crate::render::{PLOTS, Rendered, SUMMARY};
use std::fmt::Write;

pub fn derived(r: &CampaignReport) -> Result<Vec<Rendered>, RenderError> {
    let (svg, png) = super::plot::svg_and_png(r)?;
    let text = markdown(r);
    let page = super::page::page(r, &text, &svg);
    Ok(vec![
        Rendered { path: SUMMARY.into(), bytes: text.into_bytes() },
        Rendered { path: format!("{PLOTS}/campaign.svg"), bytes: svg },
        Rendered { path: format!("{PLOTS}/campaign.png"), bytes: png },
        Rendered { path: crate::render::html::HTML.into(), bytes: page.into_bytes() },
    ])
}

pub fn write_all(dir: &std::path::Path, r: &CampaignReport) -> Result<Vec<Rendered>, RenderError> {
    crate::render::write_files(dir, derived(r)?)
}

/// A pipeline's spans per stage, each step's median against the cold
/// step's, with its share of the step.
fn spans_table(s: &mut String, r: &CampaignReport, keys: &[String]) {
    let _ = writeln!(s, "\n\n## Spans per stage (median of trials; share of the step's total)\n");
    let _ = write!(s, "| stage | span |");
    for step in &r.steps {
        let _ = write!(s, " {} |", step.name);
    }
    let _ = write!(s, "\n|---|---|{}", "---:|".repeat(r.steps.len()));
    for k in keys {
        let mut names: Vec<&String> = Vec::new();
        for step in &r.steps {
            for n in step.median.get(k).map(|p| p.spans.keys()).into_iter().flatten() {
                if !names.contains(&n) {
                    names.push(n);
                }
            }
        }
        let rows = names.into_iter().map(Row::Span).chain([Row::Outside, Row::Startup]);
        for row in rows {
            let _ = write!(s, "\n| `{k}` | {} |", row.name());
            for step in &r.steps {
                let part = step.median.get(k).filter(|p| !p.skipped);
                let _ = match part.and_then(|p| row.seconds(p)) {
                    Some(v) => write!(
                        s,
                        " {} ({}) |",
                        duration(v),
                        super::report::pct(v, step.median_total_s)
                    ),
                    None if part.is_none() => write!(s, " skipped |"),
                    None => write!(s, " - |"),
                };
            }
        }
    }
}

/// A row of the spans table: a span by name, the rest of the stage, start-up.
enum Row<'a> {
    Span(&'a String),
    Outside,
    Startup,
}

impl Row<'_> {
    fn name(&self) -> String {
        match self {
            Row::Span(n) => format!("`{n}`"),
            Row::Outside => "outside spans".into(),
            Row::Startup => "process start-up".into(),
        }
    }

    fn seconds(&self, p: &StagePart) -> Option<f64> {
        match self {
            Row::Span(n) => p.spans.get(*n).copied(),
            Row::Outside => Some(super::report::outside(p)),
            Row::Startup => p.components.get("startup").copied(),
        }
    }
}

/// What each stage ran on, over every trial of every step: one line when
/// they all agree; when they do not, each distinct one with the steps and
/// trials that ran on it, said as between steps when each step ran on one.
fn runtimes(s: &mut String, r: &CampaignReport, keys: &[String]) {
    let mut lines = Vec::new();
    for k in keys {
        // Each distinct line, with per step the trials that ran on it.
        let mut seen: Vec<(String, Vec<(&str, usize)>)> = Vec::new();
        for step in &r.steps {
            for runtime in step.trials.iter().filter_map(|t| t.stages.get(k)?.runtime.as_ref()) {
                let line = runtime.describe();
                let at = match seen.iter().position(|(l, _)| *l == line) {
                    Some(i) => i,
                    None => {
                        seen.push((line, Vec::new()));
                        seen.len() - 1
                    }
                };
                let steps = &mut seen[at].1;
                match steps.iter_mut().find(|(n, _)| *n == step.name) {
                    Some((_, c)) => *c += 1,
                    None => steps.push((&step.name, 1)),
                }
            }
        }
        match seen.as_slice() {
            [] => {}
            [(line, _)] => lines.push(format!("- `{k}`: {line}")),
            many => {
                let names: Vec<&str> =
                    many.iter().flat_map(|(_, st)| st.iter().map(|(n, _)| *n)).collect();
                let split = names.iter().enumerate().any(|(i, n)| names[..i].contains(n));
                let between = if split { "trials of a step" } else { "steps" };
                lines.push(format!("- `{k}`: differs between {between}:"));
                for (line, steps) in many {
                    let who: Vec<String> =
                        steps.iter().map(|(n, c)| format!("{n} ({c} trial(s))")).collect();
                    lines.push(format!("  - {}: {line}", who.join(", ")));
                }
            }
        }
    }
    if !lines.is_empty() {
        let _ = writeln!(s, "\n## What it ran on\n");
        let _ = writeln!(s, "{}", lines.join("\n"));
    }
}

fn markdown(r: &CampaignReport) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# stagebench campaign `{}`\n", r.name);
    let _ = writeln!(
        s,
        "{} step(s), {} trial(s) each{}. Declaration `{}`, environment `{}` (SHA-256, first 12 hex). Every run's directory is under `runs/` and verifies on its own.\n",
        r.steps.len(),
        r.trials,
        match r.pipeline {
            true => ", of a user's pipeline".to_string(),
            false => format!(", {} epoch(s)", r.epochs),
        },
        &r.declaration_sha256[..12.min(r.declaration_sha256.len())],
        &r.environment_sha256[..12.min(r.environment_sha256.len())]
    );
    let _ = writeln!(s, "## Judgment\n");
    for line in &r.judgment {
        let _ = writeln!(s, "- {line}");
    }
    if !r.failed_trials.is_empty() {
        let _ = writeln!(s, "\n## Failed trials\n");
        let _ = writeln!(s, "| step | trial | run | reason | stage | last finished span | what |");
        let _ = writeln!(s, "|---|---:|---|---|---|---|---|");
        for f in &r.failed_trials {
            let _ = writeln!(
                s,
                "| {} | {} | `{}` | {} | {} | {} | {} |",
                f.step,
                f.trial,
                f.run,
                f.reason,
                f.stage.as_deref().unwrap_or("-"),
                f.last_span.as_deref().unwrap_or("-"),
                f.what()
            );
        }
    }
    let keys = r.stage_keys();
    let _ = writeln!(s, "\n## Per stage (median of trials, process start-up included)\n");
    let _ = write!(s, "| stage |");
    for step in &r.steps {
        let _ = write!(s, " {} |", step.name);
    }
    let _ = writeln!(s, "\n|---|{}", "---:|".repeat(r.steps.len()));
    for k in &keys {
        let _ = write!(s, "| `{k}` |");
        for step in &r.steps {
            let v = step.median.get(k).map(|p| p.total()).unwrap_or(0.0);
            let _ = write!(s, " {} |", duration(v));
        }
        let _ = writeln!(s);
    }
    let _ = write!(s, "| **total** |");
    for step in &r.steps {
        let _ = write!(s, " **{}** |", duration(step.median_total_s));
    }
    let _ = write!(s, "\n| interval of the total |");
    for step in &r.steps {
        let cell = step.median_total_interval.map(|i| i.cell(duration));
        let _ = write!(s, " {} |", cell.as_deref().unwrap_or("one trial"));
    }
    if r.pipeline {
        spans_table(&mut s, r, &keys);
    }
    let _ = writeln!(s, "\n\n## Per component (median of trials, summed over stages)\n");
    let _ = write!(s, "| component |");
    for step in &r.steps {
        let _ = write!(s, " {} |", step.name);
    }
    let _ = writeln!(s, "\n|---|{}", "---:|".repeat(r.steps.len()));
    for c in COMPONENTS {
        let _ = write!(s, "| {} |", label(c));
        for step in &r.steps {
            let _ = write!(s, " {} |", duration(super::report::component_total(step, c)));
        }
        let _ = writeln!(s);
    }
    runtimes(&mut s, r, &keys);
    let _ = writeln!(s, "\n## Final state against the cold run's\n");
    let _ = writeln!(s, "| step | kind | kill point | trials identical to cold |");
    let _ = writeln!(s, "|---|---|---|---:|");
    for step in &r.steps {
        let same = step.trials.iter().filter(|t| t.identical_to_cold).count();
        let _ = writeln!(
            s,
            "| {} | {}{} | {} | {same} of {} |",
            step.name,
            step.kind,
            step.policy.as_deref().map(|p| format!(" ({p})")).unwrap_or_default(),
            step.kill_at.as_deref().unwrap_or("-"),
            step.trials.len()
        );
    }
    let _ = writeln!(
        s,
        "\nReference state: `{}` (SHA-256 over every state file's path and SHA-256, as the first cold trial left it).",
        &r.reference_state_sha256[..12.min(r.reference_state_sha256.len())]
    );
    if r.pipeline {
        let _ = writeln!(
            s,
            "\nSpans are what each stage reported through `STAGEBENCH_SPANS` (the `stagebench` Python helper writes them); outside spans is the rest of the stage's wall, the command's own start-up included. Process start-up is the worker process's wall (wait4) minus its stage's. Components: a span with a role (`roles` in the campaign file) joins its role's component; other is everything else. The state is the scratch directory's digest."
        );
        return s;
    }
    let _ = writeln!(
        s,
        "\nComponents: process start-up is the worker process's wall (wait4) minus its stage's; integrity checks hash sources and kept artifacts; completion-record checks read records and compare input fingerprints; work makes what was not kept; other is the rest of the stage (opening the dataset and the state). \"Cold\" is the feature cache and the state, not the OS page cache."
    );
    s
}
