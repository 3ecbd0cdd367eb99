//! A run's plots, from report.json alone: the stages plot every run has,
//! then its mode's own ([`crate::modes::ModeSection::plots`]), drawn with the
//! primitives in [`crate::chart`].

use crate::chart::*;
use crate::fmt::duration;
use crate::modes::Report;

/// The plots a report has data for: the stages plot, then its mode's.
pub fn for_report(r: &Report) -> Vec<Box<dyn Figure + '_>> {
    let mut v: Vec<Box<dyn Figure + '_>> = Vec::new();
    if !r.stages.is_empty() {
        v.push(Box::new(StagesPlot(r)));
    }
    v.extend(r.section.plots(r));
    v
}

/// Stage wall time, CPU time and peak RSS as bars, one row per stage.
struct StagesPlot<'a>(&'a Report);

impl Figure for StagesPlot<'_> {
    fn name(&self) -> &'static str {
        "stages"
    }

    fn rows(&self) -> usize {
        self.0.stages.len()
    }

    fn draw(&self, root: &Area<'_>) -> Result<(), RenderError> {
        stages(root, self.0)
    }
}

/// One row of the stages plot: a stage, or the rounds of one stage.
struct StageRow<'a> {
    label: String,
    records: Vec<&'a crate::rundir::report::StageRecord>,
}

/// The stages in run order, a stage's later rounds (`NAME#R`) grouped with
/// its first; a phase that exists once per process count carries its count
/// (`_w4`), the largest included, whatever its key in report.json.
fn stage_rows(r: &Report) -> Vec<StageRow<'_>> {
    let keyed = r.ordered();
    let mut rows: Vec<(String, StageRow)> = Vec::new();
    for (key, st) in keyed {
        let base = crate::rundir::keys::repeat_of(key).map_or(key.as_str(), |(b, _)| b);
        match rows.iter_mut().find(|(b, _)| b == base) {
            Some((_, row)) => row.records.push(st),
            None => {
                let label = r.section.stage_label(base).unwrap_or_else(|| base.to_string());
                rows.push((base.to_string(), StageRow { label, records: vec![st] }));
            }
        }
    }
    rows.into_iter()
        .map(|(_, mut row)| {
            if row.records.len() > 1 {
                row.label = format!("{} ({} rounds)", row.label, row.records.len());
            }
            row
        })
        .collect()
}

fn stages(root: &Area<'_>, r: &Report) -> Result<(), RenderError> {
    let rows = stage_rows(r);
    let (labels, shortened) = fit_labels(rows.iter().map(|row| row.label.clone()).collect());
    let grouped = rows.iter().any(|row| row.records.len() > 1);
    let what = match (r.section.stages_plot_note(), r.isolation.as_str()) {
        (Some(note), _) => note,
        (None, "run") => "one process for the whole run",
        (None, _) => "one process per stage",
    };
    let mut title =
        format!("stagebench {} run: wall, CPU and peak RSS per stage ({what})", r.mode());
    if grouped {
        title.push_str("; a stage run in rounds: the median, its line from the least to the most");
    }
    if shortened {
        title.push_str("; long names shortened with … (summary.md has them whole)");
    }
    let body = caption(root, &title)?;
    let panel = (WIDTH - label_width(&labels)) as i32 / 3;
    let (left, rest) = body.split_horizontally(label_width(&labels) as i32 + panel);
    let (mid, right) = rest.split_horizontally(panel);
    let figure = |f: &dyn Fn(&crate::rundir::report::StageRecord) -> f64| -> Vec<Spread> {
        rows.iter()
            .map(|row| {
                let v: Vec<f64> = row.records.iter().map(|s| f(s)).collect();
                Spread::of(&v)
            })
            .collect()
    };
    let walls = figure(&|s| s.wall_s);
    let cpus = figure(&|s| s.cpu_s);
    let rss = figure(&|s| s.peak_rss_bytes as f64);
    bar_panel(&left, "wall", &labels, true, &walls, BAR, Steps::Decimal, &|x| duration(x))?;
    bar_panel(&mid, "CPU (user + system)", &labels, false, &cpus, CPU, Steps::Decimal, &|x| {
        duration(x)
    })?;
    bar_panel(&right, "peak RSS", &labels, false, &rss, RSS, Steps::Binary, &|x| {
        crate::fmt::mib(x as u64)
    })
}
