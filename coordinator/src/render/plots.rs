//! Plots drawn with plotters into SVG and PNG. Text uses DejaVu Sans (a
//! subset: ASCII and a few symbols) embedded in the binary and rasterised
//! by the pure-Rust ab_glyph backend, so no machine needs fontconfig or a
//! system font, and the bytes depend only on the data and this build.
//!
//! Every plot draws rows (stages, workers, comparisons) top to bottom on a
//! numeric y axis whose ticks are exactly the rows.

use crate::compare::Row;
use crate::rundir::report::Report;
use crate::stats::Verdict;
use plotters::coord::Shift;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

static FONT: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");
const SANS: &str = "sans-serif";
const WIDTH: u32 = 1000;
const ROW_PX: u32 = 34;

const BAR: RGBColor = RGBColor(70, 110, 170);
const CPU: RGBColor = RGBColor(220, 130, 50);
const RSS: RGBColor = RGBColor(90, 160, 90);
const MUTED: RGBColor = RGBColor(150, 150, 150);
const FASTER: RGBColor = RGBColor(40, 140, 60);
const SLOWER: RGBColor = RGBColor(200, 50, 40);

fn register_font() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if plotters::style::register_font(SANS, FontStyle::Normal, FONT).is_err() {
            panic!("the embedded font assets/DejaVuSans.ttf does not parse");
        }
    });
}

/// A plot and the data it draws.
pub enum Plot<'a> {
    /// Stage wall time, CPU time and peak RSS as bars, one row per stage.
    Stages(&'a Report),
    /// Every trial's wall time relative to its stage's median, one row per
    /// stage, with the median's 95% interval and the warm-up trials.
    Trials(&'a Report),
    /// Cold preparation: each worker's busy time within its phase's wall
    /// time, serial against N processes.
    ColdPrep(&'a Report),
    /// `compare`: the ratio B/A of each row with its 95% interval.
    Forest { rows: &'a [Row], threshold_pct: f64 },
    /// A campaign: cold against resume per stage, and each step's time
    /// stacked by component.
    Campaign(&'a crate::campaign::report::CampaignReport),
}

/// The plots a report has data for.
pub fn for_report(r: &Report) -> Vec<Plot<'_>> {
    let mut v = Vec::new();
    if !r.stages.is_empty() {
        v.push(Plot::Stages(r));
    }
    if r.trials.as_ref().is_some_and(|t| !t.is_empty()) {
        v.push(Plot::Trials(r));
    }
    if r.serial.is_some() && r.parallel.is_some() {
        v.push(Plot::ColdPrep(r));
    }
    v
}

impl Plot<'_> {
    /// The file stem under `plots/`.
    pub fn name(&self) -> &'static str {
        match self {
            Plot::Stages(_) => "stages",
            Plot::Trials(_) => "trials",
            Plot::ColdPrep(_) => "cold-prep",
            Plot::Forest { .. } => "forest",
            Plot::Campaign(_) => "campaign",
        }
    }

    fn rows(&self) -> usize {
        match self {
            Plot::Stages(r) => r.stages.len(),
            Plot::Trials(r) => r.trials.as_ref().map_or(0, |t| t.len()),
            Plot::ColdPrep(r) => {
                r.serial.as_ref().map_or(0, |s| s.workers.len())
                    + r.parallel.as_ref().map_or(0, |s| s.workers.len())
            }
            Plot::Forest { rows, .. } => rows.len(),
            Plot::Campaign(r) => {
                crate::campaign::summary::stage_keys(r).len().max(r.steps.len()) + 2
            }
        }
    }

    fn size(&self) -> (u32, u32) {
        (WIDTH, 110 + ROW_PX * self.rows().max(1) as u32)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        root.fill(&WHITE).map_err(err)?;
        match self {
            Plot::Stages(r) => stages(root, r),
            Plot::Trials(r) => trials(root, r),
            Plot::ColdPrep(r) => cold_prep(root, r),
            Plot::Forest { rows, threshold_pct } => forest(root, rows, *threshold_pct),
            Plot::Campaign(r) => campaign(root, r),
        }?;
        root.present().map_err(err)
    }
}

/// Draws `plot` as SVG, and rasterises that SVG to PNG with the same font.
pub fn svg_and_png(plot: &Plot<'_>) -> Result<(Vec<u8>, Vec<u8>), String> {
    register_font();
    let (w, h) = plot.size();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (w, h)).into_drawing_area();
        plot.draw(&root)?;
    }
    let png = rasterise(svg.as_bytes(), w, h)?;
    Ok((svg.into_bytes(), png))
}

/// SVG to PNG with only the embedded font in the font database (never the
/// system's), so the pixels are the same on every machine.
fn rasterise(svg: &[u8], w: u32, h: u32) -> Result<Vec<u8>, String> {
    use resvg::{tiny_skia, usvg};
    let mut opt = usvg::Options::default();
    let db = opt.fontdb_mut();
    db.load_font_data(FONT.to_vec());
    db.set_sans_serif_family("DejaVu Sans");
    let tree = usvg::Tree::from_data(svg, &opt).map_err(|e| format!("re-reading the SVG: {e}"))?;
    let mut pixmap = tiny_skia::Pixmap::new(w, h).ok_or("an empty plot")?;
    pixmap.fill(tiny_skia::Color::WHITE);
    resvg::render(&tree, tiny_skia::Transform::default(), &mut pixmap.as_mut());
    pixmap.encode_png().map_err(|e| format!("encoding PNG: {e}"))
}

fn err(e: impl std::fmt::Display) -> String {
    format!("drawing a plot: {e}")
}

/// The y coordinate of row `i` of `n`, so that row 0 is at the top.
fn row_y(i: usize, n: usize) -> f64 {
    (n - 1 - i) as f64
}

/// A y axis with one tick per row, at 0, 1, …, n − 1.
#[derive(Clone)]
struct RowsAxis(usize);

impl Ranged for RowsAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let r = self.range();
        let t = (v - r.start) / (r.end - r.start);
        limit.0 + (t * (limit.1 - limit.0) as f64).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, _hint: Hint) -> Vec<f64> {
        (0..self.0).map(|i| i as f64).collect()
    }

    fn range(&self) -> std::ops::Range<f64> {
        -0.6..(self.0 as f64 - 0.4)
    }
}

fn rows_axis(n: usize) -> RowsAxis {
    RowsAxis(n)
}

fn row_label(labels: &[String], y: f64) -> String {
    let n = labels.len();
    let i = y.round();
    if (y - i).abs() > 1e-6 || i < 0.0 || i as usize >= n {
        return String::new();
    }
    labels[n - 1 - i as usize].clone()
}

fn label_width(labels: &[String]) -> u32 {
    (labels.iter().map(|l| l.chars().count()).max().unwrap_or(4) as u32 * 8 + 16).clamp(60, 320)
}

fn upper(max: f64) -> f64 {
    if max > 0.0 && max.is_finite() { max * 1.18 } else { 1.0 }
}

type RowChart<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RowsAxis>>;

/// A chart of one row per label (top to bottom) over the x range, with the
/// axes, grid and labels every row plot shares.
fn row_chart<'a, DB: DrawingBackend>(
    body: &'a DrawingArea<DB, Shift>,
    labels: &[String],
    x: std::ops::Range<f64>,
    x_desc: &str,
    x_fmt: &dyn Fn(&f64) -> String,
) -> Result<RowChart<'a, DB>, String> {
    let mut chart = ChartBuilder::on(body)
        .margin(8)
        .margin_right(24)
        .x_label_area_size(40)
        .y_label_area_size(label_width(labels) + 20)
        .build_cartesian_2d(x, rows_axis(labels.len().max(1)))
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .x_desc(x_desc)
        .x_label_formatter(x_fmt)
        .y_label_formatter(&|y| row_label(labels, *y))
        .label_style((SANS, 14))
        .axis_desc_style((SANS, 12))
        .draw()
        .map_err(err)?;
    Ok(chart)
}

fn caption(root: &DrawingArea<impl DrawingBackend, Shift>, text: &str) -> Result<(), String> {
    root.draw(&Text::new(text.to_string(), (12, 10), (SANS, 18).into_font())).map_err(err)
}

/// A titled panel of one row per label over `0..hi`, three x labels.
fn titled_chart<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    title: &str,
    labels: &[String],
    show_labels: bool,
    hi: f64,
    fmt: &dyn Fn(f64) -> String,
) -> Result<RowChart<'a, DB>, String> {
    let mut chart = ChartBuilder::on(area)
        .caption(title, (SANS, 15))
        .margin(8)
        .margin_right(24)
        .x_label_area_size(28)
        .y_label_area_size(if show_labels { label_width(labels) } else { 0 })
        .build_cartesian_2d(0.0..hi, rows_axis(labels.len().max(1)))
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .x_labels(3)
        .x_label_formatter(&|x| fmt(*x))
        .y_label_formatter(&|y| row_label(labels, *y))
        .label_style((SANS, 14))
        .draw()
        .map_err(err)?;
    Ok(chart)
}

/// One panel of horizontal bars, a value label at the end of each.
#[allow(clippy::too_many_arguments)]
fn bar_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: &str,
    labels: &[String],
    show_labels: bool,
    values: &[f64],
    color: RGBColor,
    fmt: &dyn Fn(f64) -> String,
) -> Result<(), String> {
    let n = labels.len();
    let hi = upper(values.iter().copied().fold(0.0, f64::max));
    let mut chart = titled_chart(area, title, labels, show_labels, hi, fmt)?;
    chart
        .draw_series(values.iter().enumerate().filter(|(_, v)| **v > 0.0).map(|(i, v)| {
            let y = row_y(i, n);
            Rectangle::new([(0.0, y - 0.32), (*v, y + 0.32)], color.filled())
        }))
        .map_err(err)?;
    let small = TextStyle::from((SANS, 14).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    chart
        .draw_series(values.iter().enumerate().map(|(i, v)| {
            EmptyElement::at((*v, row_y(i, n))) + Text::new(fmt(*v), (4, 0), small.clone())
        }))
        .map_err(err)?;
    Ok(())
}

fn stages<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, r: &Report) -> Result<(), String> {
    let mut rows: Vec<_> = r.stages.iter().collect();
    rows.sort_by_key(|(_, st)| st.order);
    let labels: Vec<String> = rows.iter().map(|(k, _)| k.to_string()).collect();
    let what =
        if r.trials.is_some() { "median of counted trials" } else { "one process per stage" };
    caption(
        root,
        &format!("stagebench {} run: wall, CPU and peak RSS per stage ({what})", r.mode),
    )?;
    let body = root.margin(30, 0, 0, 0);
    let panel = (WIDTH - label_width(&labels)) as i32 / 3;
    let (left, rest) = body.split_horizontally(label_width(&labels) as i32 + panel);
    let (mid, right) = rest.split_horizontally(panel);
    let walls: Vec<f64> = rows.iter().map(|(_, s)| s.wall_s).collect();
    let cpus: Vec<f64> = rows.iter().map(|(_, s)| s.cpu_s).collect();
    let rss: Vec<f64> = rows.iter().map(|(_, s)| s.peak_rss_bytes as f64).collect();
    bar_panel(&left, "wall", &labels, true, &walls, BAR, &|x| super::duration(x))?;
    bar_panel(&mid, "CPU (user + system)", &labels, false, &cpus, CPU, &|x| super::duration(x))?;
    bar_panel(&right, "peak RSS", &labels, false, &rss, RSS, &|x| crate::progress::mib(x as u64))
}

/// One colour per campaign component, in [`COMPONENTS`](crate::campaign::report::COMPONENTS) order.
const COMPONENT_COLOURS: [RGBColor; 8] = [
    RGBColor(150, 150, 150),
    RGBColor(200, 50, 40),
    RGBColor(230, 150, 40),
    RGBColor(70, 110, 170),
    RGBColor(140, 90, 170),
    RGBColor(220, 110, 160),
    RGBColor(90, 160, 90),
    RGBColor(200, 200, 200),
];

fn campaign<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    r: &crate::campaign::report::CampaignReport,
) -> Result<(), String> {
    use crate::campaign::report::{COMPONENTS, component_total, label};
    caption(
        root,
        &format!("stagebench campaign {}: medians of {} trials per step", r.name, r.trials),
    )?;
    let body = root.margin(30, 0, 0, 0);
    let (left, right) = body.split_horizontally(WIDTH as i32 / 2);
    // Left: cold against the first resume (load policy first) per stage.
    let keys = crate::campaign::summary::stage_keys(r);
    let cold = r.steps.iter().find(|s| s.kind == "cold");
    let resume = r
        .steps
        .iter()
        .find(|s| s.kind == "resume" && s.policy.as_deref() == Some("load"))
        .or_else(|| r.steps.iter().find(|s| s.kind == "resume"));
    let at = |s: Option<&crate::campaign::report::StepReport>, k: &String| {
        s.and_then(|s| s.median.get(k)).map(|p| p.total()).unwrap_or(0.0)
    };
    let colds: Vec<f64> = keys.iter().map(|k| at(cold, k)).collect();
    let resumes: Vec<f64> = keys.iter().map(|k| at(resume, k)).collect();
    let hi = upper(colds.iter().chain(&resumes).copied().fold(0.0, f64::max));
    let n = keys.len().max(1);
    let title = format!(
        "per stage: cold (blue) vs {} (orange)",
        resume.map(|s| s.name.as_str()).unwrap_or("resume")
    );
    let mut chart = titled_chart(&left, &title, &keys, true, hi, &|x| super::duration(x))?;
    for (values, colour, (lo, top)) in
        [(&colds, BAR, (0.02, 0.36)), (&resumes, CPU, (-0.36, -0.02))]
    {
        chart
            .draw_series(values.iter().enumerate().filter(|(_, v)| **v > 0.0).map(|(i, v)| {
                let y = row_y(i, n);
                Rectangle::new([(0.0, y + lo), (*v, y + top)], colour.filled())
            }))
            .map_err(err)?;
    }
    // Right: every step's median total, stacked by component.
    let steps: Vec<String> = r.steps.iter().map(|s| s.name.clone()).collect();
    let m = steps.len().max(1);
    let totals: Vec<f64> = r.steps.iter().map(|s| s.median_total_s).collect();
    // Room on the right for the legend.
    let hi = 2.4 * upper(totals.iter().copied().fold(0.0, f64::max));
    let mut chart =
        titled_chart(&right, "per step, by component", &steps, true, hi, &|x| super::duration(x))?;
    let mut start = vec![0.0; r.steps.len()];
    for (c, colour) in COMPONENTS.iter().zip(COMPONENT_COLOURS) {
        let bars: Vec<(usize, f64, f64)> = r
            .steps
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let v = component_total(s, c);
                let from = start[i];
                start[i] += v;
                (i, from, from + v)
            })
            .collect();
        chart
            .draw_series(bars.into_iter().filter(|(_, a, b)| b > a).map(|(i, a, b)| {
                let y = row_y(i, m);
                Rectangle::new([(a, y - 0.32), (b, y + 0.32)], colour.filled())
            }))
            .map_err(err)?
            .label(label(c))
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], colour.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(MUTED)
        .label_font((SANS, 12))
        .draw()
        .map_err(err)
}

fn trials<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, r: &Report) -> Result<(), String> {
    let Some(sets) = &r.trials else { return Ok(()) };
    let mut keys: Vec<&String> = sets.keys().collect();
    keys.sort_by_key(|k| r.stages.get(*k).map(|s| s.order).unwrap_or(usize::MAX));
    let n = keys.len();
    let labels: Vec<String> = keys
        .iter()
        .map(|k| format!("{k} ({})", super::duration(sets[*k].summary["wall_s"].median)))
        .collect();
    // Every trial as a ratio to its stage's median, so stages of any
    // duration share one axis and their noise can be compared.
    let mut lo: f64 = 0.98;
    let mut hi: f64 = 1.02;
    for k in &keys {
        let t = &sets[*k];
        let m = t.summary["wall_s"].median;
        let all =
            t.samples["wall_s"].iter().chain(t.warmup_samples.get("wall_s").into_iter().flatten());
        for x in all.map(|x| x / m).filter(|x| x.is_finite()) {
            lo = lo.min(x);
            hi = hi.max(x);
        }
    }
    let pad = (hi - lo) * 0.06;
    caption(
        root,
        "Trials: wall time of each fresh-process trial relative to its stage's median (in brackets)",
    )?;
    let body = root.margin(30, 0, 0, 0);
    let mut chart = row_chart(
        &body,
        &labels,
        (lo - pad)..(hi + pad),
        "trial wall time / median   (filled: counted, hollow grey: warm-up; bar: 95% CI of the median)",
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
        let (a, b) = (s.median_ci95[0] / s.median, s.median_ci95[1] / s.median);
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
            .draw_series(
                warm.iter().enumerate().map(|(j, x)| {
                    Circle::new((x / s.median, jitter(j + 7)), 4, MUTED.stroke_width(1))
                }),
            )
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

fn cold_prep<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, r: &Report) -> Result<(), String> {
    let (Some(serial), Some(parallel)) = (&r.serial, &r.parallel) else { return Ok(()) };
    let mut labels = Vec::new();
    // Per row: the worker's jobs as (start, end), its phase's wall, a colour.
    type Spans = Vec<(f64, f64)>;
    let mut rows: Vec<(Spans, f64, RGBColor)> = Vec::new();
    for (side, name, color) in [(serial, "serial", CPU), (parallel, "parallel", BAR)] {
        let mut workers: Vec<_> = side.workers.iter().collect();
        workers.sort_by_key(|w| w.rank);
        for w in workers {
            labels.push(format!("{name} rank {} ({} series)", w.rank, w.series));
            let mut spans: Vec<(f64, f64)> = side
                .timeline
                .iter()
                .filter(|s| s.rank == w.rank)
                .map(|s| (s.start_s, s.end_s))
                .collect();
            if spans.is_empty() {
                // A report without a timeline: busy time as one bar.
                spans.push((0.0, w.busy_s));
            }
            rows.push((spans, side.wall_s, color));
        }
    }
    let n = rows.len();
    caption(
        root,
        &format!(
            "Cold preparation: which worker prepared a series when; {} processes: speedup {:.2}x, efficiency {:.0}%",
            parallel.workers.len(),
            r.speedup.unwrap_or(f64::NAN),
            100.0 * r.parallel_efficiency.unwrap_or(f64::NAN)
        ),
    )?;
    let longest =
        rows.iter().flat_map(|r| r.0.iter().map(|s| s.1).chain([r.1])).fold(0.0, f64::max);
    let body = root.margin(30, 0, 0, 0);
    let mut chart = row_chart(
        &body,
        &labels,
        0.0..upper(longest),
        "time since the phase's first spawn (a block per series, alternating shades; outline: the phase's wall time)",
        &|x| super::duration(*x),
    )?;
    for (i, (spans, wall, color)) in rows.iter().enumerate() {
        let y = row_y(i, n);
        if *wall > 0.0 {
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(0.0, y - 0.34), (*wall, y + 0.34)],
                    color.stroke_width(1),
                )))
                .map_err(err)?;
        }
        chart
            .draw_series(spans.iter().enumerate().filter(|(_, s)| s.1 > s.0).map(|(j, s)| {
                let shade = if j % 2 == 0 { color.mix(0.9) } else { color.mix(0.55) };
                Rectangle::new([(s.0, y - 0.3), (s.1, y + 0.3)], shade.filled())
            }))
            .map_err(err)?;
    }
    Ok(())
}

fn forest<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    rows: &[Row],
    threshold_pct: f64,
) -> Result<(), String> {
    let n = rows.len();
    let labels: Vec<String> = rows.iter().map(|r| format!("{} {}", r.stage, r.figure)).collect();
    let limit = 1.0 + threshold_pct / 100.0;
    let (mut lo, mut hi) = (0.95f64.min(1.0 / limit), 1.05f64.max(limit));
    for r in rows {
        for x in [r.ratio, r.ci95[0], r.ci95[1]].into_iter().filter(|x| x.is_finite()) {
            lo = lo.min(x);
            hi = hi.max(x);
        }
    }
    let pad = (hi - lo) * 0.06;
    caption(
        root,
        &format!(
            "B against A: ratio of medians with its 95% bootstrap interval (red line: the +{threshold_pct}% threshold)"
        ),
    )?;
    let body = root.margin(30, 0, 0, 0);
    let desc =
        "median B / median A   (green: faster, red: slower, grey: no significant difference)";
    let mut chart =
        row_chart(&body, &labels, (lo - pad)..(hi + pad), desc, &|x| format!("{x:.2}"))?;
    let top = n.max(1) as f64 - 0.4;
    chart
        .draw_series([
            PathElement::new(vec![(1.0, -0.6), (1.0, top)], BLACK.stroke_width(1)),
            PathElement::new(vec![(limit, -0.6), (limit, top)], SLOWER.mix(0.6).stroke_width(1)),
        ])
        .map_err(err)?;
    for (i, r) in rows.iter().enumerate() {
        let y = row_y(i, n);
        let color = match r.verdict {
            Verdict::Faster => FASTER,
            Verdict::Slower => SLOWER,
            Verdict::NoSignificantDifference | Verdict::TooFewTrials => MUTED,
        };
        if r.ci95.iter().all(|x| x.is_finite()) {
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(r.ci95[0], y), (r.ci95[1], y)],
                    color.stroke_width(2),
                )))
                .map_err(err)?;
        }
        if r.ratio.is_finite() {
            chart
                .draw_series(std::iter::once(Circle::new((r.ratio, y), 5, color.filled())))
                .map_err(err)?;
        }
    }
    Ok(())
}
