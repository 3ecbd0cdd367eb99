//! How a parameter scan shows itself: one table (summary.md and the
//! console alike), the recommendation's sentence, and a picture of wall and
//! tree peak against the value, in two panels sharing the x axis.

use super::{Scan, ScanPoint};
use crate::chart::*;
use crate::doc::{Align, Block, Blocks, Cell, Table};
use crate::fmt::{self, duration};
use crate::stats::Verdict;
use plotters::prelude::*;

const HEADER: [&str; 8] = [
    "value",
    "n",
    "wall (median)",
    "interval of median",
    "CPU",
    "tree peak",
    "speedup vs first",
    "vs first",
];

/// Spans a cell names, largest first.
const SPANS_SHOWN: usize = 3;

/// The header: [`HEADER`], then "input wait" and "spans" where any value has them.
fn header(s: &Scan) -> Vec<String> {
    let mut h: Vec<String> = HEADER.map(String::from).to_vec();
    if s.points.iter().any(|p| p.input_wait_fraction.is_some()) {
        h.push("input wait".into());
    }
    if s.points.iter().any(|p| !p.spans_s.is_empty()) {
        h.push(format!("spans (median s a {})", s.sample()));
    }
    h
}

/// A point's cells, in [`header`]'s order.
fn cells(s: &Scan, p: &ScanPoint) -> Vec<String> {
    let mut out = base_cells(s, p).to_vec();
    if s.points.iter().any(|p| p.input_wait_fraction.is_some()) {
        out.push(p.input_wait_fraction.map_or("–".into(), |f| {
            format!("{:.1}% ({})", 100.0 * f, crate::modes::input_wait::input_bound(f))
        }));
    }
    if s.points.iter().any(|p| !p.spans_s.is_empty()) {
        let mut spans: Vec<(&String, &f64)> = p.spans_s.iter().collect();
        spans.sort_by(|a, b| b.1.total_cmp(a.1).then(a.0.cmp(b.0)));
        let shown: Vec<String> =
            spans.iter().take(SPANS_SHOWN).map(|(n, x)| format!("{n} {}", duration(**x))).collect();
        out.push(if shown.is_empty() { "–".into() } else { shown.join(", ") });
    }
    out
}

/// The cells every scan has, in [`HEADER`]'s order.
fn base_cells(s: &Scan, p: &ScanPoint) -> [String; 8] {
    let speedup = match &p.speedup_interval {
        Some(i) => format!("{:.2}× ({})", p.speedup, i.phrase(|x| format!("{x:.2}"))),
        None => "1 (the first)".into(),
    };
    let versus = match (p.vs_first, p.p_vs_first) {
        (Some(v), Some(pv)) => format!("{} (p = {})", verdict(v, s), fmt::p_value(pv)),
        _ => "–".into(),
    };
    [
        p.label(&s.names),
        p.n.to_string(),
        duration(p.wall_median_s),
        p.wall_interval.cell(duration),
        duration(p.cpu_median_s),
        format!("{} ({})", fmt::mib(p.tree_peak_bytes), p.tree_peak_method),
        speedup,
        versus,
    ]
}

fn verdict(v: Verdict, s: &Scan) -> String {
    match v {
        Verdict::Faster => "faster".into(),
        Verdict::Slower => "slower".into(),
        Verdict::NoSignificantDifference => "no difference".into(),
        Verdict::TooFewTrials => format!("too few {}s", s.sample()),
    }
}

/// The scan's part of every view: its table and recommendation (the
/// console's too), and how the values were ordered.
pub fn blocks(s: &Scan) -> Blocks {
    let mut out = Blocks::default();
    out.documents(Block::Heading(format!("Scan over {}", s.names.join(", "))));
    let header = header(s);
    let columns: Vec<(&str, Align)> = header
        .iter()
        .enumerate()
        .map(|(i, h)| (h.as_str(), if matches!(i, 1 | 2 | 4) { Align::Right } else { Align::Left }))
        .collect();
    let mut t = Table::new(&columns);
    for p in &s.points {
        let mut c = cells(s, p).into_iter();
        let first = Cell::code(c.next().unwrap_or_default());
        t.row(std::iter::once(first).chain(c.map(Cell::from)).collect());
    }
    out.everywhere(Block::Table(t));
    out.everywhere(Block::Para(format!("Recommendation: {}.", s.recommendation.sentence)));
    if let Some(seed) = s.order_seed {
        out.documents(Block::Para(format!(
            "Each round ran the values in a new shuffled order (seed {seed}); tree peak is the median over {}s.",
            s.sample()
        )));
    }
    out
}

/// The scan's phrase in a dashboard headline: the value recommended, or
/// that the samples (trials, rounds) were too few to tell.
pub fn headline(s: &Scan) -> String {
    let r = &s.recommendation;
    match s.points.iter().find(|p| Some(&p.stage) == r.stage.as_ref()) {
        Some(p) => format!("scan recommends {}", p.label(&s.names)),
        None => format!("scan: too few {}s to tell", s.sample()),
    }
}

/// Wall (median with its interval) over tree peak, against the value, the
/// recommended value marked.
pub struct ScanPlot<'a>(pub &'a Scan);

impl Figure for ScanPlot<'_> {
    fn name(&self) -> &'static str {
        "scan"
    }

    fn rows(&self) -> usize {
        12
    }

    fn draw(&self, root: &Area<'_>) -> Result<(), RenderError> {
        let s = self.0;
        let labels: Vec<String> = s.points.iter().map(|p| p.label(&s.names)).collect();
        let chosen =
            s.points.iter().position(|p| Some(&p.stage) == s.recommendation.stage.as_ref());
        let body = caption(
            root,
            &format!(
                "Scan over {}: wall (median and its interval) and the tree's peak memory per value; green: the recommended value",
                s.names.join(", ")
            ),
        )?;
        let (top, bottom) = body.split_vertically(body.dim_in_pixel().1 / 2);
        let walls: Vec<(f64, f64, f64)> = s
            .points
            .iter()
            .map(|p| (p.wall_median_s, p.wall_interval.low, p.wall_interval.high))
            .collect();
        let peaks: Vec<(f64, f64, f64)> =
            s.points.iter().map(|p| p.tree_peak_bytes as f64).map(|x| (x, x, x)).collect();
        panel(&top, &labels, &walls, "wall_s", "wall time", chosen)?;
        panel(&bottom, &labels, &peaks, "tree_peak_bytes", "tree peak", chosen)?;
        Ok(())
    }
}

/// One panel: each value's (median, low, high) at its place, joined.
fn panel(
    area: &Area<'_>,
    labels: &[String],
    points: &[(f64, f64, f64)],
    figure: &str,
    desc: &str,
    chosen: Option<usize>,
) -> Result<(), RenderError> {
    let hi = points.iter().map(|p| p.2).filter(|x| x.is_finite()).fold(0.0, f64::max);
    let hi = if hi > 0.0 { hi * 1.1 } else { 1.0 };
    let last = labels.len().saturating_sub(1) as f64;
    let steps = if figure.ends_with("_bytes") { Steps::Binary } else { Steps::Decimal };
    let x_axis = ValueAxis::new(-0.5..last + 0.5, 0.0..last, Steps::Decimal, labels.len().max(2));
    let mut chart = ChartBuilder::on(area)
        .margin(8)
        .margin_right(24)
        .x_label_area_size(32)
        .y_label_area_size(90)
        .build_cartesian_2d(x_axis, ValueAxis::new(0.0..hi, 0.0..hi, steps, 4))
        .map_err(err)?;
    chart
        .configure_mesh()
        .y_desc(desc)
        .x_label_formatter(&|x| {
            let i = x.round();
            match (x - i).abs() < 1e-9 && i >= 0.0 {
                true => labels.get(i as usize).cloned().unwrap_or_default(),
                false => String::new(),
            }
        })
        .y_label_formatter(&|y| fmt::figure(figure, *y))
        .label_style((SANS, 14))
        .axis_desc_style((SANS, 12))
        .draw()
        .map_err(err)?;
    let xy: Vec<(f64, f64)> = points.iter().enumerate().map(|(i, p)| (i as f64, p.0)).collect();
    chart.draw_series([PathElement::new(xy.clone(), BAR.stroke_width(1))]).map_err(err)?;
    for (i, &(_, low, high)) in points.iter().enumerate() {
        let x = i as f64;
        chart
            .draw_series([PathElement::new(vec![(x, low), (x, high)], BAR.stroke_width(2))])
            .map_err(err)?;
    }
    chart
        .draw_series(xy.iter().enumerate().map(|(i, &p)| match Some(i) == chosen {
            true => Circle::new(p, 6, FASTER.filled()),
            false => Circle::new(p, 4, BAR.filled()),
        }))
        .map_err(err)?;
    Ok(())
}
