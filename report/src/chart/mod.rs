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

//!
//! Here: the canvas (the font, the colours, SVG and its PNG, `RenderError`).
//! Below it: `axes` (rows, round ticks, process counts), `text` (widths
//! measured from the font, wrapped captions, fitted labels) and `panels`
//! (the row charts and bar panels plots are made of), which uses both.

mod axes;
mod panels;
/// An SVG read back into its elements, for tests of what a plot draws
/// (this crate's, and the coordinator's through the `testing` feature).
#[cfg(any(test, feature = "testing"))]
pub mod picture;
mod text;

pub use axes::*;
pub use panels::*;
pub use text::*;

use plotters::coord::Shift;
use plotters::prelude::*;

static FONT: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");
pub const SANS: &str = "sans-serif";
pub const WIDTH: u32 = 1000;
pub const ROW_PX: u32 = 34;

pub const BAR: RGBColor = RGBColor(70, 110, 170);
pub const CPU: RGBColor = RGBColor(220, 130, 50);
pub const RSS: RGBColor = RGBColor(90, 160, 90);
pub const MUTED: RGBColor = RGBColor(150, 150, 150);
pub const FASTER: RGBColor = RGBColor(40, 140, 60);
pub const SLOWER: RGBColor = RGBColor(200, 50, 40);

fn register_font() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if plotters::style::register_font(SANS, FontStyle::Normal, FONT).is_err() {
            panic!("the embedded font assets/DejaVuSans.ttf does not parse");
        }
    });
}

/// The drawing area every plot draws on: an SVG, later rasterised.
pub type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// A plot: its file stem under `plots/`, its rows, and how it draws them.
/// Its owner (a mode, `render`) decides what it shows; this floor draws it.
pub trait Figure {
    /// The file stem under `plots/`.
    fn name(&self) -> &'static str;
    /// The rows it draws (the canvas grows with them).
    fn rows(&self) -> usize;
    fn draw(&self, root: &Area<'_>) -> Result<(), RenderError>;
    /// The plot as SVG and PNG bytes.
    fn svg_and_png(&self) -> Result<(Vec<u8>, Vec<u8>), RenderError> {
        svg_and_png(self.rows(), |root| self.draw(root))
    }
}

/// Draws a plot of `rows` rows as SVG (via `draw`, on a white background),
/// and rasterises that SVG to PNG with the same font.
pub fn svg_and_png(
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

pub fn err(e: impl std::fmt::Display) -> RenderError {
    RenderError::Draw(e.to_string())
}

/// What can go wrong making a derived file (a plot, a summary).
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error("drawing a plot: {0}")]
    Draw(String),
    #[error("re-reading the SVG: {0}")]
    Svg(String),
    #[error("an empty plot")]
    Empty,
    #[error("encoding PNG: {0}")]
    Png(String),
    /// report.html's parts (a flame graph) could not be drawn.
    #[error("{0}")]
    Page(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("creating {dir}/: {source}")]
    CreateDir { dir: String, source: std::io::Error },
    #[error("writing {path}: {source}")]
    Write { path: String, source: std::io::Error },
}
