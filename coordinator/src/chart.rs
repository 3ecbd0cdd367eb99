//! Chart primitives: plots drawn with plotters into SVG and rasterised to
//! PNG. Text uses DejaVu Sans (a subset: ASCII and a few symbols) embedded
//! in the binary and rasterised by the pure-Rust ab_glyph backend, so no
//! machine needs fontconfig or a system font, and the bytes depend only on
//! the data and this build.
//!
//! Every plot draws rows (stages, workers, comparisons, steps) top to bottom
//! on a numeric y axis whose ticks are exactly the rows. What a plot shows
//! belongs to its owner (the run's plots in `render`, the campaign's in
//! `campaign`, the forest plot in `compare`); this floor knows no report.

use plotters::coord::Shift;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

static FONT: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");
pub(crate) const SANS: &str = "sans-serif";
pub(crate) const WIDTH: u32 = 1000;
pub(crate) const ROW_PX: u32 = 34;

pub(crate) const BAR: RGBColor = RGBColor(70, 110, 170);
pub(crate) const CPU: RGBColor = RGBColor(220, 130, 50);
pub(crate) const RSS: RGBColor = RGBColor(90, 160, 90);
pub(crate) const MUTED: RGBColor = RGBColor(150, 150, 150);
pub(crate) const FASTER: RGBColor = RGBColor(40, 140, 60);
pub(crate) const SLOWER: RGBColor = RGBColor(200, 50, 40);

fn register_font() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if plotters::style::register_font(SANS, FontStyle::Normal, FONT).is_err() {
            panic!("the embedded font assets/DejaVuSans.ttf does not parse");
        }
    });
}

/// The drawing area every plot draws on: an SVG, later rasterised.
pub(crate) type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// Draws a plot of `rows` rows as SVG (via `draw`, on a white background),
/// and rasterises that SVG to PNG with the same font.
pub(crate) fn svg_and_png(
    rows: usize,
    draw: impl FnOnce(&Area<'_>) -> Result<(), RenderError>,
) -> Result<(Vec<u8>, Vec<u8>), RenderError> {
    register_font();
    let (w, h) = (WIDTH, 110 + ROW_PX * rows.max(1) as u32);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (w, h)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        draw(&root)?;
        root.present().map_err(err)?;
    }
    let png = rasterise(svg.as_bytes(), w, h)?;
    Ok((svg.into_bytes(), png))
}

/// SVG to PNG with only the embedded font in the font database (never the
/// system's), so the pixels are the same on every machine.
fn rasterise(svg: &[u8], w: u32, h: u32) -> Result<Vec<u8>, RenderError> {
    use resvg::{tiny_skia, usvg};
    let mut opt = usvg::Options::default();
    let db = opt.fontdb_mut();
    db.load_font_data(FONT.to_vec());
    db.set_sans_serif_family("DejaVu Sans");
    let tree = usvg::Tree::from_data(svg, &opt).map_err(|e| RenderError::Svg(e.to_string()))?;
    let mut pixmap = tiny_skia::Pixmap::new(w, h).ok_or(RenderError::Empty)?;
    pixmap.fill(tiny_skia::Color::WHITE);
    resvg::render(&tree, tiny_skia::Transform::default(), &mut pixmap.as_mut());
    pixmap.encode_png().map_err(|e| RenderError::Png(e.to_string()))
}

pub(crate) fn err(e: impl std::fmt::Display) -> RenderError {
    RenderError::Draw(e.to_string())
}

/// What can go wrong making a derived file (a plot, a summary).
#[derive(Debug, thiserror::Error)]
pub(crate) enum RenderError {
    #[error("drawing a plot: {0}")]
    Draw(String),
    #[error("re-reading the SVG: {0}")]
    Svg(String),
    #[error("an empty plot")]
    Empty,
    #[error("encoding PNG: {0}")]
    Png(String),
    #[error("creating {dir}/: {source}")]
    CreateDir { dir: String, source: std::io::Error },
    #[error("writing {path}: {source}")]
    Write { path: String, source: std::io::Error },
}

/// The y coordinate of row `i` of `n`, so that row 0 is at the top.
pub(crate) fn row_y(i: usize, n: usize) -> f64 {
    (n - 1 - i) as f64
}

/// A y axis with one tick per row, at 0, 1, …, n − 1.
#[derive(Clone)]
pub(crate) struct RowsAxis(usize);

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

pub(crate) fn rows_axis(n: usize) -> RowsAxis {
    RowsAxis(n)
}

pub(crate) fn row_label(labels: &[String], y: f64) -> String {
    let n = labels.len();
    let i = y.round();
    if (y - i).abs() > 1e-6 || i < 0.0 || i as usize >= n {
        return String::new();
    }
    labels[n - 1 - i as usize].clone()
}

pub(crate) fn label_width(labels: &[String]) -> u32 {
    (labels.iter().map(|l| l.chars().count()).max().unwrap_or(4) as u32 * 8 + 16).clamp(60, 320)
}

pub(crate) fn upper(max: f64) -> f64 {
    if max > 0.0 && max.is_finite() { max * 1.18 } else { 1.0 }
}

pub(crate) type RowChart<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RowsAxis>>;

/// A chart of one row per label (top to bottom) over the x range, with the
/// axes, grid and labels every row plot shares.
pub(crate) fn row_chart<'a, DB: DrawingBackend>(
    body: &'a DrawingArea<DB, Shift>,
    labels: &[String],
    x: std::ops::Range<f64>,
    x_desc: &str,
    x_fmt: &dyn Fn(&f64) -> String,
) -> Result<RowChart<'a, DB>, RenderError> {
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

pub(crate) fn caption(
    root: &DrawingArea<impl DrawingBackend, Shift>,
    text: &str,
) -> Result<(), RenderError> {
    root.draw(&Text::new(text.to_string(), (12, 10), (SANS, 18).into_font())).map_err(err)
}

/// A titled panel of one row per label over `0..hi`, three x labels.
pub(crate) fn titled_chart<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    title: &str,
    labels: &[String],
    show_labels: bool,
    hi: f64,
    fmt: &dyn Fn(f64) -> String,
) -> Result<RowChart<'a, DB>, RenderError> {
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
pub(crate) fn bar_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: &str,
    labels: &[String],
    show_labels: bool,
    values: &[f64],
    color: RGBColor,
    fmt: &dyn Fn(f64) -> String,
) -> Result<(), RenderError> {
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
