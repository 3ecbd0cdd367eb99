//! A bisection's derived files, from its report.json alone: `summary.md`
//! (its sentence and its probes, as the console shows them) and
//! `plots/bisect.{svg,png}` (each probe's median with its interval, in
//! commit order, coloured by verdict, a red line before the first bad
//! commit) and `report.html` (the answer, the plot and the probes in
//! commit order). `verify` re-renders and compares them, as a run's.

mod page;
pub mod plot;
pub mod text;

use super::{PLOTS, Rendered, SUMMARY};
use crate::chart::RenderError;
use crate::rundir::bisect::BisectReport;

/// Every file derived from a bisection's report, in a fixed order.
pub fn derived(r: &BisectReport) -> Result<Vec<Rendered>, RenderError> {
    let (svg, png) = plot::svg_and_png(r)?;
    let summary = format!(
        "# Bisection\n\n{}\n\n```text\n{}```\n\n![probes](plots/bisect.svg)\n",
        r.answer,
        text::render(r)
    );
    let page = page::page(r, &svg);
    Ok(vec![
        Rendered { path: SUMMARY.into(), bytes: summary.into_bytes() },
        Rendered { path: format!("{PLOTS}/bisect.svg"), bytes: svg },
        Rendered { path: format!("{PLOTS}/bisect.png"), bytes: png },
        Rendered { path: super::html::HTML.into(), bytes: page.into_bytes() },
    ])
}

/// Writes them into the bisection's directory.
pub fn write_all(dir: &std::path::Path, r: &BisectReport) -> Result<Vec<Rendered>, RenderError> {
    super::write_files(dir, derived(r)?)
}
