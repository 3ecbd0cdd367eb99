//! How a trials run shows itself: the trials table and the spans the
//! stages reported in summary.md, the same table on the console, and the
//! trials plot.

use super::{NAME, Section};
use crate::chart::*;
use crate::doc::{Align::Left, Align::Right, Block, Blocks, Cell, Table};
use crate::fmt::duration;
use crate::modes::ModeSection;
use crate::modes::Report;
use crate::rundir::report::{TrialSet, shared_warnings};
use plotters::prelude::*;
use std::collections::BTreeMap;

impl ModeSection for Section {
    fn trials(&self) -> Option<&BTreeMap<String, TrialSet>> {
        Some(&self.trials)
    }

    fn scan(&self) -> Option<&crate::modes::scan::Scan> {
        self.scan.as_ref()
    }

    /// Per stage: the median wall time with its interval, the spread, the
    /// outliers, how many trials would resolve a 1% difference; then the
    /// warnings (those every stage shares, such as the machine's load, once).
    fn blocks(&self, r: &Report) -> Blocks {
        let trials = &self.trials;
        let mut out = Blocks::default();
        out.documents(Block::Heading("Trials (wall time)".into()));
        let mut t = Table::new(&[
            ("stage", Left),
            ("n", Right),
            ("warm-up", Right),
            ("median", Right),
            ("interval of median", Right),
            ("stdev", Right),
            ("MAD", Right),
            ("outliers", Right),
            ("trials for 1%", Right),
        ]);
        let keys = ordered(r, trials);
        for &k in &keys {
            let set = &trials[k];
            let mut row = vec![
                Cell::code(k.as_str()),
                set.n.to_string().into(),
                set.warmup.to_string().into(),
            ];
            row.extend(trial_cells(set).map(Cell::from));
            t.row(row);
        }
        out.everywhere(Block::Table(t));
        if let Some(scan) = &self.scan {
            out.extend(crate::modes::scan::view::blocks(scan));
        }
        let shared = shared_warnings(trials);
        for &k in &keys {
            for w in trials[k].warnings.iter().filter(|w| !shared.contains(w)) {
                out.everywhere(Block::Warning(format!("`{k}`: {w}")));
            }
        }
        for w in &shared {
            out.everywhere(Block::Warning(format!("every stage: {w}")));
        }
        out.everywhere(Block::Para(format!(
            "Outliers: {}. Warm-up trials are recorded, not counted.",
            self.outlier_rule
        )));
        out
    }

    fn plots<'a>(&'a self, r: &'a Report) -> Vec<Box<dyn Figure + 'a>> {
        let mut plots: Vec<Box<dyn Figure + 'a>> = Vec::new();
        if !self.trials.is_empty() {
            plots.push(Box::new(TrialsPlot { r, sets: &self.trials }));
        }
        if let Some(scan) = &self.scan {
            plots.push(Box::new(crate::modes::scan::view::ScanPlot(scan)));
        }
        plots
    }

    fn headline(&self) -> Option<String> {
        let t = &self.trials;
        let n = t.values().map(|s| s.n).max().unwrap_or(0);
        let warnings: usize = t.values().map(|s| s.warnings.len()).sum();
        let scan =
            self.scan.as_ref().map(|s| format!("; {}", crate::modes::scan::view::headline(s)));
        // The slowest stage's median wall with its interval: what a reader
        // looks for first.
        let slowest = t
            .iter()
            .filter_map(|(k, set)| set.summary.get("wall_s").map(|w| (k, w)))
            .max_by(|a, b| a.1.median.total_cmp(&b.1.median));
        let lead = match slowest {
            Some((k, w)) => format!(
                "`{k}` median {} over {n} trials, interval {}{}",
                duration(w.median),
                w.median_interval.cell(duration),
                match t.len() {
                    1 => String::new(),
                    many => format!(", the slowest of {many} stages"),
                }
            ),
            None => format!("{n} trials per stage"),
        };
        let warned = match warnings {
            0 => String::new(),
            w => format!("; {w} warning(s)"),
        };
        Some(format!("{lead}{warned}{}", scan.unwrap_or_default()))
    }

    fn stages_plot_note(&self) -> Option<&'static str> {
        Some("median of counted trials")
    }
}

/// The trials' keys in the run's stage order.
fn ordered<'a>(r: &Report, trials: &'a BTreeMap<String, TrialSet>) -> Vec<&'a String> {
    let mut keys: Vec<&String> = trials.keys().collect();
    keys.sort_by_key(|k| r.stages.get(*k).map(|st| st.order).unwrap_or(usize::MAX));
    keys
}

/// A stage's wall-time trial statistics as the console and summary.md show
/// them: median, its interval (95% from 6 trials, else the range with its
/// coverage), stdev, MAD, outliers, and trials to resolve 1% (`none` where
/// that cannot be said).
fn trial_cells(t: &TrialSet) -> [String; 6] {
    let w = &t.summary["wall_s"];
    [
        duration(w.median),
        w.median_interval.cell(duration),
        duration(w.stdev),
        duration(w.mad),
        w.outliers.len().to_string(),
        t.trials_for_1pct.map(|n| n.to_string()).unwrap_or_else(|| "–".into()),
    ]
}

/// Every trial's wall time relative to its stage's median, one row per
/// stage, with the median's interval and the warm-up trials.
struct TrialsPlot<'a> {
    r: &'a Report,
    sets: &'a BTreeMap<String, TrialSet>,
}

impl Figure for TrialsPlot<'_> {
    fn name(&self) -> &'static str {
        NAME
    }

    fn rows(&self) -> usize {
        self.sets.len()
    }

    fn draw(&self, root: &Area<'_>) -> Result<(), RenderError> {
        let sets = self.sets;
        let keys = ordered(self.r, sets);
        let n = keys.len();
        let labels: Vec<String> = keys
            .iter()
            .map(|k| format!("{k} ({})", duration(sets[*k].summary["wall_s"].median)))
            .collect();
        // Every trial as a ratio to its stage's median, so stages of any
        // duration share one axis and their noise can be compared.
        let mut lo: f64 = 0.98;
        let mut hi: f64 = 1.02;
        for k in &keys {
            let t = &sets[*k];
            let m = t.summary["wall_s"].median;
            let all = t.samples["wall_s"]
                .iter()
                .chain(t.warmup_samples.get("wall_s").into_iter().flatten());
            for x in all.map(|x| x / m).filter(|x| x.is_finite()) {
                lo = lo.min(x);
                hi = hi.max(x);
            }
        }
        let pad = (hi - lo) * 0.06;
        let body = caption(
            root,
            "Trials: wall time of each fresh-process trial relative to its stage's median (in brackets)",
        )?;
        let mut chart = row_chart(
            &body,
            &labels,
            ((lo - pad)..(hi + pad), 1.0),
            "trial wall time / median   (filled: counted, hollow grey: warm-up; bar: the median's interval, 95% CI from 6 trials, else the range)",
            &|x| format!("{:.0}%", 100.0 * (x - 1.0)),
        )?;
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(1.0, -0.6), (1.0, n as f64 - 0.4)],
                BLACK.stroke_width(1),
            )))
            .map_err(err)?;
        for (i, k) in keys.iter().enumerate() {
            let t = &sets[*k];
            let s = &t.summary["wall_s"];
            let y = row_y(i, n);
            let i = s.median_interval;
            let (a, b) = (i.low / s.median, i.high / s.median);
            if b > a {
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(a, y - 0.06), (b, y + 0.06)],
                        BAR.mix(0.35).filled(),
                    )))
                    .map_err(err)?;
            }
            let jitter = |j: usize| y + 0.3 * (((j as f64 * 0.618_034) % 1.0) - 0.5);
            let warm = t.warmup_samples.get("wall_s").map(Vec::as_slice).unwrap_or(&[]);
            chart
                .draw_series(warm.iter().enumerate().map(|(j, x)| {
                    Circle::new((x / s.median, jitter(j + 7)), 4, MUTED.stroke_width(1))
                }))
                .map_err(err)?;
            chart
                .draw_series(t.samples["wall_s"].iter().enumerate().map(|(j, x)| {
                    let color = if s.outliers.contains(&j) { SLOWER } else { BAR };
                    Circle::new((x / s.median, jitter(j)), 3, color.filled())
                }))
                .map_err(err)?;
        }
        Ok(())
    }
}
