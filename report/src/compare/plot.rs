//! The forest plot of a comparison: the ratio B/A of each row with its
//! interval, coloured by verdict, beside the regression threshold.

use super::{Comparison, Row};
use crate::chart::*;
use crate::stats::Verdict;
use plotters::prelude::*;

/// The plot's SVG and PNG bytes.
pub fn svg_and_png(c: &Comparison, threshold_pct: f64) -> Result<(Vec<u8>, Vec<u8>), RenderError> {
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
    let body = caption(
        root,
        &format!(
            "{mark}B against A: ratio of medians with its interval (95% bootstrap from 6 samples a side, else the ranges' ends; red line: the +{threshold_pct}% threshold)"
        ),
    )?;
    let desc =
        "median B / median A   (green: faster, red: slower, grey: no significant difference)";
    let mut chart =
        row_chart(&body, &labels, ((lo - pad)..(hi + pad), 1.0), desc, &|x| format!("{x:.2}"))?;
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

#[cfg(test)]
mod tests {
    use super::super::{Comparison, row};

    /// The numbers in `attr="N"` pairs of the SVG elements that start with
    /// `open` and hold `has`.
    fn elements<'a>(svg: &'a str, open: &str, has: &str) -> Vec<&'a str> {
        svg.lines().filter(|l| l.starts_with(open) && l.contains(has)).collect()
    }

    fn attr(element: &str, name: &str) -> f64 {
        let start = element.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
        element[start..].split('"').next().unwrap().parse().unwrap()
    }

    /// A polyline's points as (x, y) pairs.
    fn points(element: &str) -> Vec<(f64, f64)> {
        let start = element.find("points=\"").unwrap() + 8;
        element[start..]
            .split('"')
            .next()
            .unwrap()
            .split_whitespace()
            .map(|p| {
                let (x, y) = p.split_once(',').unwrap();
                (x.parse().unwrap(), y.parse().unwrap())
            })
            .collect()
    }

    /// The forest plot draws its figures where they belong: each row's ratio
    /// on one linear scale, the threshold's line at 1 + threshold on that
    /// scale, from the rows' top to their bottom, and an axis from the
    /// smallest to the largest value drawn (the threshold and 1 ± 5% among
    /// them), padded by 6% of that span on each side.
    #[test]
    fn the_forest_plot_places_ratios_threshold_and_axis_by_the_figures() {
        let a: Vec<f64> = (0..8).map(|i| 1.0 + 0.001 * f64::from(i)).collect();
        let b = |k: f64| a.iter().map(|x| x * k).collect::<Vec<f64>>();
        for (ratios, pct) in [(vec![1.2, 0.9], 5.0), (vec![1.01, 0.98], 10.0)] {
            let rows: Vec<_> =
                ratios.iter().map(|k| row("s", "wall_s", &a, &b(*k), pct, 1)).collect();
            let c = Comparison::of_rows(rows);
            let (svg, _) = super::svg_and_png(&c, pct).unwrap();
            let rows = &c.rows;
            let svg = String::from_utf8(svg).unwrap();
            let circles: Vec<f64> =
                elements(&svg, "<circle", "r=\"5\"").iter().map(|c| attr(c, "cx")).collect();
            assert_eq!(circles.len(), 2, "{pct}");
            let scale = (circles[0] - circles[1]) / (rows[0].ratio - rows[1].ratio);
            let x = |r: f64| circles[1] + scale * (r - rows[1].ratio);
            let limit = 1.0 + pct / 100.0;
            let threshold = elements(&svg, "<polyline", "opacity=\"0.6\"");
            assert_eq!(threshold.len(), 1);
            let t = points(threshold[0]);
            assert!(
                (t[0].0 - x(limit)).abs() <= 1.5,
                "{pct}: threshold at {} not {}",
                t[0].0,
                x(limit)
            );
            // From the rows' top to their bottom: the grid's vertical extent.
            let grid = elements(&svg, "<line", "opacity=\"0.1\"")[0];
            let (top, bottom) = (attr(grid, "y2"), attr(grid, "y1"));
            let ys = [t[0].1, t[1].1];
            assert!(
                ys.contains(&top) && ys.contains(&bottom),
                "{pct}: {ys:?} against {top}..{bottom}"
            );
            // The axis: the longest horizontal black line.
            let axis = elements(&svg, "<polyline", "stroke=\"#000000\"")
                .into_iter()
                .map(points)
                .filter(|p| p.len() == 2 && p[0].1 == p[1].1)
                .max_by(|p, q| (p[1].0 - p[0].0).total_cmp(&(q[1].0 - q[0].0)))
                .unwrap();
            let mut lo = 0.95f64.min(1.0 / limit);
            let mut hi = 1.05f64.max(limit);
            for r in rows {
                lo = lo.min(r.ratio).min(r.ci.low);
                hi = hi.max(r.ratio).max(r.ci.high);
            }
            let pad = 0.06 * (hi - lo);
            assert!(
                (axis[0].0 - x(lo - pad)).abs() <= 2.0,
                "{pct}: axis from {} not {}",
                axis[0].0,
                x(lo - pad)
            );
            assert!(
                (axis[1].0 - x(hi + pad)).abs() <= 2.0,
                "{pct}: axis to {} not {}",
                axis[1].0,
                x(hi + pad)
            );
        }
    }

    /// The forest plot, read back from its SVG, for figures on both sides
    /// of the threshold and one far off.
    #[test]
    fn the_forest_plot_reads_cleanly() {
        let a: Vec<f64> = (0..8).map(|i| 1.0 + 0.001 * f64::from(i)).collect();
        let b = |k: f64| a.iter().map(|x| x * k).collect::<Vec<f64>>();
        let rows: Vec<_> = [1.3, 0.97, 1.02, 2.5]
            .iter()
            .enumerate()
            .map(|(i, k)| row(&format!("stage_{i}"), "wall_s", &a, &b(*k), 5.0, 1))
            .collect();
        let c = Comparison::of_rows(rows);
        let (svg, _) = super::svg_and_png(&c, 5.0).unwrap();
        let problems = crate::chart::picture::problems(&String::from_utf8(svg).unwrap());
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }
}
