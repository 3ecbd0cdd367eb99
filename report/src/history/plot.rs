//! A changed figure's plot: each run's median in history order, the
//! segments' medians as flat lines, and each change point as a red line
//! before the first run after it.

use super::{Change, History};
use crate::chart::*;
use plotters::prelude::*;

/// The rows of canvas height a history plot takes (it has no rows: a
/// series over runs, drawn on the same canvas as every other plot).
const HEIGHT_ROWS: usize = 9;

/// The plot of `series` (one stage's figure, one value per run) with its
/// changes, as SVG and PNG bytes.
pub fn svg_and_png(
    h: &History,
    stage: &str,
    figure: &str,
    series: &[f64],
) -> Result<(Vec<u8>, Vec<u8>), RenderError> {
    let changes: Vec<&Change> =
        h.changes.iter().filter(|c| c.stage == stage && c.figure == figure).collect();
    crate::chart::svg_and_png(HEIGHT_ROWS, |root| draw(root, stage, figure, series, &changes))
}

/// A plot's file stem: its figure's index (so two names that read alike
/// never collide) and its stage and figure with anything but letters,
/// digits, `-` and `_` made `_`.
pub fn file_stem(index: usize, stage: &str, figure: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' })
            .collect()
    };
    format!("{:02}-{}-{}", index + 1, clean(stage), clean(figure))
}

fn draw(
    root: &Area<'_>,
    stage: &str,
    figure: &str,
    series: &[f64],
    changes: &[&Change],
) -> Result<(), RenderError> {
    let n = series.len();
    let finite = || series.iter().copied().filter(|x| x.is_finite());
    let (lo, hi) = (finite().fold(f64::INFINITY, f64::min), finite().fold(0.0, f64::max));
    let lo = if lo.is_finite() { lo.min(0.0) } else { 0.0 };
    let hi = if hi > lo { hi * 1.08 } else { lo + 1.0 };
    let body = caption(
        root,
        &format!(
            "{stage} {figure}: each run's median in commit order; grey lines: the medians between changes; red: a change point before the first run after it"
        ),
    )?;
    let mut chart = series_chart(
        &body,
        (0.5..(n as f64 + 0.5), 1.0..(n as f64)),
        "run, in history order",
        figure,
        (lo, hi),
    )?;
    // The segments' medians, between change points.
    let bounds: Vec<usize> =
        std::iter::once(0).chain(changes.iter().map(|c| c.at)).chain([n]).collect();
    for w in bounds.windows(2) {
        let m = crate::stats::median(&series[w[0]..w[1]]);
        let (a, b) = (w[0] as f64 + 0.6, w[1] as f64 + 0.4);
        chart
            .draw_series([PathElement::new(vec![(a, m), (b, m)], MUTED.stroke_width(2))])
            .map_err(err)?;
    }
    for c in changes {
        let x = c.at as f64 + 0.5;
        chart
            .draw_series([PathElement::new(vec![(x, lo), (x, hi)], SLOWER.stroke_width(2))])
            .map_err(err)?;
    }
    chart
        .draw_series(
            series
                .iter()
                .enumerate()
                .filter(|(_, y)| y.is_finite())
                .map(|(i, y)| Circle::new((i as f64 + 1.0, *y), 3, BAR.filled())),
        )
        .map_err(err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chart::picture::{Element, elements, problems};
    use crate::stats::{Interval, IntervalMethod};

    #[test]
    fn the_plot_draws_every_run_and_the_change_between_runs_6_and_7() {
        let series: Vec<f64> = (0..12).map(|i| if i < 6 { 0.05 } else { 0.25 }).collect();
        let change = Change {
            stage: "nap".into(),
            figure: "wall_s".into(),
            at: 6,
            before: 0.05,
            after: 0.25,
            ratio: 5.0,
            interval: Interval {
                low: 4.8,
                high: 5.2,
                coverage: 0.95,
                method: IntervalMethod::Bootstrap,
                n: 6,
            },
            p: 0.002,
        };
        let mut svg = String::new();
        {
            let root = plotters::prelude::SVGBackend::with_string(&mut svg, (WIDTH, 400))
                .into_drawing_area();
            draw(&root, "nap", "wall_s", &series, &[&change]).unwrap();
        }
        assert!(problems(&svg).is_empty(), "{:?}", problems(&svg));
        let drawn = elements(&svg);
        let dots: Vec<f64> = drawn
            .iter()
            .filter_map(|e| match e {
                Element::Circle(x, _, _) => Some(*x),
                _ => None,
            })
            .collect();
        assert_eq!(dots.len(), 12, "a dot per run");
        // The red line stands between the 6th and 7th dots.
        let red = drawn.iter().find_map(|e| match e {
            Element::Line(points, colour)
                if colour.contains("C83228") || colour.contains("200,50,40") =>
            {
                Some(points[0].0)
            }
            _ => None,
        });
        let red = red.unwrap_or_else(|| panic!("no red line: {drawn:?}"));
        assert!(dots[5] < red && red < dots[6], "{red} between {} and {}", dots[5], dots[6]);
        assert_eq!(file_stem(0, "nap#2", "span:a b_s"), "01-nap_2-span_a_b_s");
    }
}
