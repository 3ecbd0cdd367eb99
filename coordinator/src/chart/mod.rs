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

#[cfg(test)]
pub(crate) mod picture;

use plotters::coord::Shift;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

static FONT: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");
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

/// The width in pixels of `text` set at `size` px in the embedded font,
/// from its advance widths (kerning aside): what fits a caption to the
/// canvas, and what the picture tests measure.
pub(crate) fn text_width(text: &str, size: f64) -> f64 {
    use ab_glyph::{Font, FontRef};
    static PARSED: std::sync::OnceLock<Option<FontRef<'static>>> = std::sync::OnceLock::new();
    let Some(font) = PARSED.get_or_init(|| FontRef::try_from_slice(FONT).ok()) else {
        return text.chars().count() as f64 * size * 0.6;
    };
    let em = font.units_per_em().unwrap_or(2048.0) as f64;
    text.chars().map(|c| font.h_advance_unscaled(font.glyph_id(c)) as f64).sum::<f64>() * size / em
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

/// How an axis's ticks step: 1, 2 or 5 × 10^k, or a power of two (bytes,
/// so MiB ticks fall at 1, 2, 4, 8, … MiB).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Steps {
    Decimal,
    Binary,
}

/// Ticks at round values within `lo..=hi`: the multiples of the smallest
/// step of `steps` that makes at most `most` intervals.
pub(crate) fn round_ticks(lo: f64, hi: f64, steps: Steps, most: usize) -> Vec<f64> {
    if !(lo.is_finite() && hi.is_finite() && hi > lo) {
        return vec![if lo.is_finite() { lo } else { 0.0 }];
    }
    let want = (hi - lo) / most.max(1) as f64;
    // The step as a whole multiple of a power: m × 10^k or 1 × 2^k.
    let (m, radix, k) = match steps {
        Steps::Decimal => {
            let k = want.log10().floor() as i32;
            let m = [1.0, 2.0, 5.0].into_iter().find(|m| m * 10f64.powi(k) >= want);
            match m {
                Some(m) => (m, 10f64, k),
                None => (1.0, 10f64, k + 1),
            }
        }
        Steps::Binary => (1.0, 2f64, want.log2().ceil() as i32),
    };
    // i·m scaled by radix^k, dividing by an exact power where k < 0, so a
    // tick is the double nearest its decimal value (0.95, not 0.9500…01).
    let at = |i: i64| match k >= 0 {
        true => i as f64 * m * radix.powi(k),
        false => i as f64 * m / radix.powi(-k),
    };
    let step = at(1);
    // A hair of slack, so an end that is a multiple (-0.3 of 0.1) counts.
    let (first, last) = ((lo / step - 1e-9).ceil() as i64, (hi / step + 1e-9).floor() as i64);
    // `+ 0.0` turns a -0 into 0, so a zero tick never reads "-0".
    (first..=last).map(|i| at(i) + 0.0).collect()
}

/// A numeric axis over `range` with its ticks at round values.
#[derive(Clone)]
pub(crate) struct ValueAxis {
    range: std::ops::Range<f64>,
    ticks: Vec<f64>,
}

impl ValueAxis {
    /// Ticks within `ticks_within` (inside `range`), at most `most` intervals.
    pub(crate) fn new(
        range: std::ops::Range<f64>,
        ticks_within: std::ops::Range<f64>,
        steps: Steps,
        most: usize,
    ) -> ValueAxis {
        ValueAxis::around(range, ticks_within, 0.0, steps, most)
    }

    /// The same, with ticks round as distances from `origin` (a ratio's
    /// axis read as percent change ticks at 1 ± round amounts).
    pub(crate) fn around(
        range: std::ops::Range<f64>,
        ticks_within: std::ops::Range<f64>,
        origin: f64,
        steps: Steps,
        most: usize,
    ) -> ValueAxis {
        let (lo, hi) = (ticks_within.start - origin, ticks_within.end - origin);
        let ticks = round_ticks(lo, hi, steps, most).into_iter().map(|t| t + origin).collect();
        ValueAxis { range, ticks }
    }
}

impl Ranged for ValueAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let t = (v - self.range.start) / (self.range.end - self.range.start);
        limit.0 + (t * (limit.1 - limit.0) as f64).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, _hint: Hint) -> Vec<f64> {
        self.ticks.clone()
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.range.clone()
    }
}

/// An x axis of process counts with a tick at each count and nowhere else:
/// on a log-2 scale where each count doubles the one before (1, 2, 4, 8),
/// else linear.
#[derive(Clone)]
pub(crate) struct CountsAxis {
    counts: Vec<f64>,
    log2: bool,
}

impl CountsAxis {
    /// `counts`, increasing and at least one.
    pub(crate) fn new(counts: &[u32]) -> CountsAxis {
        let log2 = counts.len() >= 2 && counts.windows(2).all(|w| w[1] == 2 * w[0]);
        CountsAxis { counts: counts.iter().map(|c| f64::from(*c)).collect(), log2 }
    }

    /// Where a count sits along the axis.
    pub(crate) fn position(&self, count: f64) -> f64 {
        if self.log2 { count.log2() } else { count }
    }

    /// The count at position `p` along the axis.
    pub(crate) fn count_at(&self, p: f64) -> f64 {
        if self.log2 { p.exp2() } else { p }
    }

    pub(crate) fn is_log2(&self) -> bool {
        self.log2
    }

    /// The count halfway (along the axis) between `a` and `b`.
    pub(crate) fn between(&self, a: f64, b: f64) -> f64 {
        self.count_at((self.position(a) + self.position(b)) / 2.0)
    }
}

impl Ranged for CountsAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let r = self.range();
        let (lo, hi) = (self.position(r.start), self.position(r.end));
        let t = (self.position(*v) - lo) / (hi - lo);
        limit.0 + (t * (limit.1 - limit.0) as f64).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, _hint: Hint) -> Vec<f64> {
        self.counts.clone()
    }

    fn range(&self) -> std::ops::Range<f64> {
        let first = self.position(self.counts[0]);
        let last = self.position(*self.counts.last().unwrap_or(&self.counts[0]));
        let pad = ((last - first) * 0.06).max(0.25);
        self.count_at(first - pad)..self.count_at(last + pad)
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

/// The label font (plotters size 14) as SVG sets it.
const LABEL_PX: f64 = 14.0 * SVG_TEXT_SCALE;
/// The widest a row label may be before it is shortened.
const LABEL_MAX_PX: f64 = 400.0;

/// The width of the label area for `labels`: the widest, measured.
pub(crate) fn label_width(labels: &[String]) -> u32 {
    let widest = labels.iter().map(|l| text_width(l, LABEL_PX)).fold(24.0, f64::max);
    (widest.ceil() as u32 + 16).clamp(60, LABEL_MAX_PX as u32 + 16)
}

/// `labels` as drawn: one wider than the label area may be loses characters
/// from its middle for a `…`; the flag says whether any did, for the caption
/// to say so (never cut silently).
pub(crate) fn fit_labels(labels: Vec<String>) -> (Vec<String>, bool) {
    let mut shortened = false;
    let fitted = labels
        .into_iter()
        .map(|l| {
            if text_width(&l, LABEL_PX) <= LABEL_MAX_PX {
                return l;
            }
            shortened = true;
            let chars: Vec<char> = l.chars().collect();
            let mut keep = chars.len();
            loop {
                keep -= 1;
                let head: String = chars[..keep.div_ceil(2)].iter().collect();
                let tail: String = chars[chars.len() - keep / 2..].iter().collect();
                let short = format!("{head}…{tail}");
                if keep <= 2 || text_width(&short, LABEL_PX) <= LABEL_MAX_PX {
                    return short;
                }
            }
        })
        .collect();
    (fitted, shortened)
}

/// A bar's value and, when it summarises several (rounds), their range.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Spread {
    pub(crate) median: f64,
    pub(crate) min: f64,
    pub(crate) max: f64,
}

impl Spread {
    pub(crate) fn of(values: &[f64]) -> Spread {
        Spread {
            median: crate::stats::median(values),
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        }
    }
}

pub(crate) fn upper(max: f64) -> f64 {
    if max > 0.0 && max.is_finite() { max * 1.18 } else { 1.0 }
}

pub(crate) type RowChart<'a, DB> = ChartContext<'a, DB, Cartesian2d<ValueAxis, RowsAxis>>;

/// A chart of one row per label (top to bottom) over the x range, with the
/// axes, grid and labels every row plot shares.
/// Its x ticks fall at round distances from `origin` (0, or 1 for a ratio).
pub(crate) fn row_chart<'a, DB: DrawingBackend>(
    body: &'a DrawingArea<DB, Shift>,
    labels: &[String],
    (x, origin): (std::ops::Range<f64>, f64),
    x_desc: &str,
    x_fmt: &dyn Fn(&f64) -> String,
) -> Result<RowChart<'a, DB>, RenderError> {
    let axis = ValueAxis::around(x.clone(), x, origin, Steps::Decimal, 8);
    let mut chart = ChartBuilder::on(body)
        .margin(8)
        .margin_right(24)
        .x_label_area_size(40)
        .y_label_area_size(label_width(labels) + 20)
        .build_cartesian_2d(axis, rows_axis(labels.len().max(1)))
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

/// plotters writes a font of size `s` into SVG as `font-size` s / 1.24.
const SVG_TEXT_SCALE: f64 = 1.0 / 1.24;
const CAPTION_SIZE: f64 = 18.0;
const CAPTION_LINE_PX: i32 = 20;

/// `text` broken at spaces into lines no wider than `width` px at `size`
/// (a plotters font size); a word wider than that stays whole on its line.
pub(crate) fn wrap(text: &str, size: f64, width: f64) -> Vec<String> {
    let fits = |s: &str| text_width(s, size * SVG_TEXT_SCALE) <= width;
    let mut lines: Vec<String> = Vec::new();
    for word in text.split(' ') {
        match lines.last_mut() {
            Some(line) if fits(&format!("{line} {word}")) => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}

/// Draws a plot's caption across the top, wrapped to the canvas, and
/// returns the area below it.
pub(crate) fn caption<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    text: &str,
) -> Result<DrawingArea<DB, Shift>, RenderError> {
    let width = root.dim_in_pixel().0 as f64 - 24.0;
    let lines = wrap(text, CAPTION_SIZE, width);
    for (i, line) in lines.iter().enumerate() {
        let y = 10 + CAPTION_LINE_PX * i as i32;
        root.draw(&Text::new(line.clone(), (12, y), (SANS, CAPTION_SIZE).into_font()))
            .map_err(err)?;
    }
    let below = 30 + CAPTION_LINE_PX * (lines.len().max(1) as i32 - 1);
    Ok(root.margin(below, 0, 0, 0))
}

/// A titled panel of one row per label over `0..hi`, with two to four
/// ticks at round values `steps` apart, none in the last tenth (where its
/// label would run into the next panel's).
#[allow(clippy::too_many_arguments)]
pub(crate) fn titled_chart<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    title: &str,
    labels: &[String],
    show_labels: bool,
    hi: f64,
    steps: Steps,
    fmt: &dyn Fn(f64) -> String,
) -> Result<RowChart<'a, DB>, RenderError> {
    let axis = ValueAxis::new(0.0..hi, 0.0..0.9 * hi, steps, 3);
    let mut chart = ChartBuilder::on(area)
        .caption(title, (SANS, 15))
        .margin(8)
        .margin_right(24)
        .x_label_area_size(28)
        .y_label_area_size(if show_labels { label_width(labels) } else { 0 })
        .build_cartesian_2d(axis, rows_axis(labels.len().max(1)))
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .x_label_formatter(&|x| if *x == 0.0 { "0".to_string() } else { fmt(*x) })
        .y_label_formatter(&|y| row_label(labels, *y))
        .label_style((SANS, 14))
        .draw()
        .map_err(err)?;
    Ok(chart)
}

/// One panel of horizontal bars, each at its median with a line from its
/// least to its most where it has a spread, and a value label at its end.
#[allow(clippy::too_many_arguments)]
pub(crate) fn bar_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: &str,
    labels: &[String],
    show_labels: bool,
    values: &[Spread],
    color: RGBColor,
    steps: Steps,
    fmt: &dyn Fn(f64) -> String,
) -> Result<(), RenderError> {
    let n = labels.len();
    // Room after the longest bar for its value label.
    let hi = 1.3 * upper(values.iter().map(|v| v.max.max(v.median)).fold(0.0, f64::max));
    let mut chart = titled_chart(area, title, labels, show_labels, hi, steps, fmt)?;
    chart
        .draw_series(values.iter().enumerate().filter(|(_, v)| v.median > 0.0).map(|(i, v)| {
            let y = row_y(i, n);
            Rectangle::new([(0.0, y - 0.32), (v.median, y + 0.32)], color.filled())
        }))
        .map_err(err)?;
    chart
        .draw_series(values.iter().enumerate().filter(|(_, v)| v.max > v.min).map(|(i, v)| {
            let y = row_y(i, n);
            PathElement::new(vec![(v.min, y), (v.max, y)], BLACK.stroke_width(1))
        }))
        .map_err(err)?;
    let small = TextStyle::from((SANS, 14).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    chart
        .draw_series(values.iter().enumerate().map(|(i, v)| {
            EmptyElement::at((v.median.max(v.max), row_y(i, n)))
                + Text::new(fmt(v.median), (4, 0), small.clone())
        }))
        .map_err(err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_fall_at_round_values_decimal_or_binary() {
        assert_eq!(round_ticks(0.0, 0.75, Steps::Decimal, 3), [0.0, 0.5]);
        assert_eq!(round_ticks(0.0, 0.75, Steps::Decimal, 4), [0.0, 0.2, 0.4, 0.6]);
        assert_eq!(round_ticks(0.0, 530.0, Steps::Decimal, 2), [0.0, 500.0]);
        assert_eq!(round_ticks(0.93, 1.12, Steps::Decimal, 8), [0.95, 1.0, 1.05, 1.1]);
        let mib = 1024.0 * 1024.0;
        // 0..19.1 MiB: 8 MiB steps, never 9.5.
        assert_eq!(round_ticks(0.0, 19.1 * mib, Steps::Binary, 2), [0.0, 16.0 * mib]);
        assert_eq!(round_ticks(0.0, 19.1 * mib, Steps::Binary, 3), [0.0, 8.0 * mib, 16.0 * mib]);
        assert_eq!(round_ticks(-0.3, 0.0, Steps::Decimal, 3), [-0.3, -0.2, -0.1, 0.0]);
        assert_eq!(round_ticks(2.0, 2.0, Steps::Decimal, 3), [2.0]);
    }

    #[test]
    fn a_counts_axis_is_log_2_only_where_each_count_doubles() {
        let doubling = CountsAxis::new(&[1, 2, 4, 8]);
        assert!(doubling.is_log2());
        assert_eq!(doubling.key_points(3usize), [1.0, 2.0, 4.0, 8.0]);
        // Equal steps along the axis between doublings.
        let (a, b, c) = (
            doubling.map(&1.0, (0, 300)),
            doubling.map(&2.0, (0, 300)),
            doubling.map(&4.0, (0, 300)),
        );
        assert!(((b - a) - (c - b)).abs() <= 1, "{a} {b} {c}");
        let linear = CountsAxis::new(&[1, 2, 3, 4]);
        assert!(!linear.is_log2());
        assert_eq!(linear.between(2.0, 4.0), 3.0);
        assert!((doubling.between(2.0, 8.0) - 4.0).abs() < 1e-9);
    }
}
