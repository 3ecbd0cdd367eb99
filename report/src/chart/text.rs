//! Text sized by the embedded font: widths from its advance widths,
//! captions wrapped to the canvas, row labels fitted to their area.

use super::{RenderError, SANS, err};
use plotters::coord::Shift;
use plotters::prelude::*;

/// The width in pixels of `text` set at `size` px in the embedded font,
/// from its advance widths (kerning aside): what fits a caption to the
/// canvas, and what the picture tests measure.
pub fn text_width(text: &str, size: f64) -> f64 {
    use ab_glyph::{Font, FontRef};
    static PARSED: std::sync::OnceLock<Option<FontRef<'static>>> = std::sync::OnceLock::new();
    let Some(font) = PARSED.get_or_init(|| FontRef::try_from_slice(super::FONT).ok()) else {
        return text.chars().count() as f64 * size * 0.6;
    };
    let em = font.units_per_em().unwrap_or(2048.0) as f64;
    text.chars().map(|c| font.h_advance_unscaled(font.glyph_id(c)) as f64).sum::<f64>() * size / em
}

/// plotters writes a font of size `s` into SVG as `font-size` s / 1.24.
const SVG_TEXT_SCALE: f64 = 1.0 / 1.24;
const CAPTION_SIZE: f64 = 18.0;
const CAPTION_LINE_PX: i32 = 20;

/// `text` broken at spaces into lines no wider than `width` px at `size`
/// (a plotters font size); a word wider than that stays whole on its line.
pub fn wrap(text: &str, size: f64, width: f64) -> Vec<String> {
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
pub fn caption<DB: DrawingBackend>(
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

/// The label font (plotters size 14) as SVG sets it.
const LABEL_PX: f64 = 14.0 * SVG_TEXT_SCALE;
/// The widest a row label may be before it is shortened.
const LABEL_MAX_PX: f64 = 400.0;

/// The width of the label area for `labels`: the widest, measured.
pub fn label_width(labels: &[String]) -> u32 {
    let widest = labels.iter().map(|l| text_width(l, LABEL_PX)).fold(24.0, f64::max);
    (widest.ceil() as u32 + 16).clamp(60, LABEL_MAX_PX as u32 + 16)
}

/// `labels` as drawn: one wider than the label area may be loses characters
/// from its middle for a `…`; the flag says whether any did, for the caption
/// to say so (never cut silently).
pub fn fit_labels(labels: Vec<String>) -> (Vec<String>, bool) {
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
