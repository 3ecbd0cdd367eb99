//! The forest plot of a comparison: the ratio B/A of each row with its
//! interval, coloured by verdict, beside the regression threshold.

use super::{Comparison, Row};
use crate::chart::*;
use crate::stats::Verdict;
use plotters::prelude::*;

/// The plot's SVG and PNG bytes.
pub(crate) fn svg_and_png(
    c: &Comparison,
    threshold_pct: f64,
) -> Result<(Vec<u8>, Vec<u8>), RenderError> {
    // An incomparable comparison, made as asked, carries the mark.
    let mark = match c.incomparable.is_empty() {
        true => String::new(),
        false => "NOT COMPARABLE (compared as asked): ".to_string(),
    };
    crate::chart::svg_and_png(c.rows.len(), |root| draw(root, &c.rows, threshold_pct, &mark))
}

fn draw(root: &Area<'_>, rows: &[Row], threshold_pct: f64, mark: &str) -> Result<(), RenderError> {
    let n = rows.len();
    let labels: Vec<String> = rows.iter().map(|r| format!("{} {}", r.stage, r.figure)).collect();
    let limit = 1.0 + threshold_pct / 100.0;
    let (mut lo, mut hi) = (0.95f64.min(1.0 / limit), 1.05f64.max(limit));
    for r in rows {
        for x in [r.ratio, r.ci.low, r.ci.high].into_iter().filter(|x| x.is_finite()) {
            lo = lo.min(x);
            hi = hi.max(x);
        }
    }
    let pad = (hi - lo) * 0.06;
    caption(
        root,
        &format!(
            "{mark}B against A: ratio of medians with its interval (95% bootstrap from 6 samples a side, else the ranges' ends; red line: the +{threshold_pct}% threshold)"
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
        if r.ci.bounds().iter().all(|x| x.is_finite()) {
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(r.ci.low, y), (r.ci.high, y)],
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
