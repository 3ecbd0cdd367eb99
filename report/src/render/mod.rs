//! Everything derived from report.json alone: `summary.md` and the plots
//! under `plots/` (PNG and SVG), and the console's lines at a run's end
//! (`console`). Rendering only reads the report; it never
//! measures. The same report always renders to the same bytes with the same
//! coordinator build, so `verify` re-renders and compares, and
//! `coordinator render` redraws them.

pub mod benchmarks;
pub mod bisect;
pub mod console;
pub mod export;
pub mod folded;
pub mod gate;
pub mod html;
pub mod plots;
pub mod sampled;
mod snakemake;
mod summary;
pub mod trace;
pub mod view;
#[cfg(test)]
mod view_tests;

use crate::chart::RenderError;
use crate::modes::Report;
pub use summary::{SPAN_COLUMNS, SpanRow, markdown, span_rows, summary_markdown};

pub const SUMMARY: &str = "summary.md";
/// The run directory's folder of plots.
pub const PLOTS: &str = "plots";

/// One derived file: its path relative to the run directory, and its bytes.
#[derive(Debug)]
pub struct Rendered {
    pub path: String,
    pub bytes: Vec<u8>,
}

/// Every file derived from `report`, in a fixed order: summary.md, then
/// each plot the report has data for, SVG and PNG, then report.html.
pub fn derived(report: &Report) -> Result<Vec<Rendered>, RenderError> {
    let mut out =
        vec![Rendered { path: SUMMARY.into(), bytes: summary_markdown(report).into_bytes() }];
    let mut names = Vec::new();
    for plot in plots::for_report(report) {
        let (svg, png) = plot.svg_and_png()?;
        names.push(plot.name());
        out.push(Rendered { path: format!("{PLOTS}/{}.svg", plot.name()), bytes: svg });
        out.push(Rendered { path: format!("{PLOTS}/{}.png", plot.name()), bytes: png });
    }
    let svgs: Vec<(&str, &[u8])> =
        names.iter().zip(out[1..].iter().step_by(2)).map(|(n, f)| (*n, &f.bytes[..])).collect();
    let page = html::page(report, &svgs).map_err(|e| RenderError::Page(Box::new(e)))?;
    out.push(Rendered { path: html::HTML.into(), bytes: page.into_bytes() });
    Ok(out)
}

/// Writes every derived file into `dir` (each atomically).
pub fn write_all(dir: &std::path::Path, report: &Report) -> Result<Vec<Rendered>, RenderError> {
    write_files(dir, derived(report)?)
}

/// Writes derived files into `dir` (each atomically), creating `plots/`
/// when there is a plot to put in it (verify names an empty directory).
pub fn write_files(
    dir: &std::path::Path,
    files: Vec<Rendered>,
) -> Result<Vec<Rendered>, RenderError> {
    let plots = dir.join(PLOTS);
    let any_plot = files.iter().any(|f| f.path.starts_with(&format!("{PLOTS}/")));
    if any_plot && !plots.is_dir() {
        std::fs::create_dir(&plots)
            .map_err(|source| RenderError::CreateDir { dir: PLOTS.into(), source })?;
    }
    for f in &files {
        evidence::write_atomic(&dir.join(&f.path), &f.bytes)
            .map_err(|source| RenderError::Write { path: f.path.clone(), source })?;
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Report {
        let text = match name {
            "trials" => include_str!("fixtures/trials-report.json"),
            "sweep" => include_str!("fixtures/sweep-report.json"),
            _ => include_str!("fixtures/cold-prep-report.json"),
        };
        serde_json::from_str(text).unwrap()
    }

    /// Every plot of every kind a run draws, read back from its SVG: no
    /// tick label twice on an axis, no text off the canvas, no legend over
    /// a data mark.
    #[test]
    fn every_run_plot_reads_cleanly() {
        let mut kinds = std::collections::BTreeSet::new();
        let mut found = Vec::new();
        for name in ["cold-prep", "trials", "sweep"] {
            let r = fixture(name);
            for plot in plots::for_report(&r) {
                let (svg, _) = plot.svg_and_png().unwrap();
                let svg = String::from_utf8(svg).unwrap();
                for p in crate::chart::picture::problems(&svg) {
                    found.push(format!("{name} report, {}.svg: {p}", plot.name()));
                }
                kinds.insert(plot.name());
            }
        }
        // The file stems under plots/ that docs/evidence.md and docs/modes.md name.
        let promised = std::collections::BTreeSet::from(["cold-prep", "stages", "sweep", "trials"]);
        assert_eq!(kinds, promised);
        assert!(found.is_empty(), "{}", found.join("\n"));
    }

    fn png_size(b: &[u8]) -> (u32, u32) {
        assert_eq!(&b[..8], b"\x89PNG\r\n\x1a\n");
        (
            u32::from_be_bytes(b[16..20].try_into().unwrap()),
            u32::from_be_bytes(b[20..24].try_into().unwrap()),
        )
    }

    #[test]
    fn fixed_reports_render_every_plot_they_have_data_for_the_same_way_twice() {
        for (name, plots) in
            [("trials", ["stages", "trials"]), ("cold-prep", ["stages", "cold-prep"])]
        {
            let r = fixture(name);
            let files = derived(&r).unwrap();
            let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
            let mut expected = vec![SUMMARY.to_string()];
            for p in plots {
                expected.push(format!("plots/{p}.svg"));
                expected.push(format!("plots/{p}.png"));
            }
            expected.push(html::HTML.into());
            assert_eq!(paths, expected, "{name}");
            for f in &files[1..files.len() - 1] {
                assert!(f.bytes.len() > 2_000, "{} is {} bytes", f.path, f.bytes.len());
                if f.path.ends_with(".png") {
                    let (w, h) = png_size(&f.bytes);
                    assert_eq!(w, 1000);
                    assert!(h > 150, "{}: {h} px high", f.path);
                }
            }
            let again = derived(&r).unwrap();
            assert!(
                files.iter().zip(&again).all(|(a, b)| a.bytes == b.bytes),
                "{name}: not repeatable"
            );
        }
    }

    /// Each plot draws its report's figures: the stages plot labels every
    /// stage's bars with its wall time and peak RSS, the trials plot every
    /// stage with its median, the cold-prep plot states the speedup and the
    /// efficiency. A plot that drew other numbers, or none, fails here.
    #[test]
    fn each_plot_carries_figures_of_its_report() {
        let svg = |r: &Report, name: &str| -> String {
            let plot = plots::for_report(r).into_iter().find(|p| p.name() == name).unwrap();
            String::from_utf8(plot.svg_and_png().unwrap().0).unwrap()
        };
        // plotters writes a text element's content on a line of its own.
        let has = |svg: &str, text: &str| svg.contains(&format!(">\n{text}\n</text>"));
        for name in ["trials", "cold-prep"] {
            let r = fixture(name);
            let stages = svg(&r, "stages");
            for (key, st) in &r.stages {
                let wall = crate::fmt::duration(st.wall_s);
                assert!(has(&stages, &wall), "{name}: no bar labelled {wall} for {key}");
                let rss = crate::fmt::mib(st.peak_rss_bytes);
                assert!(has(&stages, &rss), "{name}: no bar labelled {rss} for {key}");
            }
        }
        let r = fixture("trials");
        let trials = svg(&r, "trials");
        for (key, t) in r.trials().unwrap() {
            let label = format!("{key} ({})", crate::fmt::duration(t.summary["wall_s"].median));
            assert!(has(&trials, &label), "no row {label}");
        }
        let r = fixture("cold-prep");
        let crate::Section::ColdPrep(c) = &r.section else { panic!("a cold-prep report") };
        let cold = svg(&r, "cold-prep");
        let phrase = c.speedup_phrase();
        assert!(phrase.starts_with(&format!("speedup {:.2}x", c.speedup)));
        assert!(cold.contains(&phrase), "the caption does not state {phrase}");
        let efficiency = format!("efficiency {:.0}%", 100.0 * c.parallel_efficiency);
        assert!(cold.contains(&efficiency), "no {efficiency}");
    }

    #[test]
    fn a_changed_figure_changes_its_plot() {
        let r = fixture("trials");
        let mut changed = r.clone();
        let crate::Section::Trials(t) = &mut changed.section else { panic!("a trials report") };
        let set = t.trials.get_mut("spin:30").unwrap();
        set.samples.get_mut("wall_s").unwrap()[0] *= 1.5;
        let (a, b) = (derived(&r).unwrap(), derived(&changed).unwrap());
        let find = |v: &[Rendered], p: &str| v.iter().find(|f| f.path == p).unwrap().bytes.clone();
        assert_ne!(find(&a, "plots/trials.svg"), find(&b, "plots/trials.svg"));
        assert_ne!(find(&a, "plots/trials.png"), find(&b, "plots/trials.png"));
        assert_eq!(
            find(&a, "plots/stages.svg"),
            find(&b, "plots/stages.svg"),
            "stages plot medians only"
        );
    }
}
