//! A bisection's plot: each probe's median with its interval at its place
//! in the first-parent history, blue when good, red when bad, grey when
//! unclear (skipped commits have no median and are not drawn), and a red
//! line before the first bad commit.

use crate::chart::*;
use crate::rundir::bisect::{BisectReport, ProbeVerdict};
use plotters::prelude::*;

/// The rows of canvas height the plot takes.
const HEIGHT_ROWS: usize = 9;

pub fn svg_and_png(r: &BisectReport) -> Result<(Vec<u8>, Vec<u8>), RenderError> {
    crate::chart::svg_and_png(HEIGHT_ROWS, |root| draw(root, r))
}

fn colour(v: ProbeVerdict) -> RGBColor {
    match v {
        ProbeVerdict::Good => BAR,
        ProbeVerdict::Bad => SLOWER,
        ProbeVerdict::Unclear | ProbeVerdict::Skipped => MUTED,
    }
}

fn draw(root: &Area<'_>, r: &BisectReport) -> Result<(), RenderError> {
    let figure = r.endpoints.as_ref().map(|e| e.figure.as_str()).unwrap_or(&r.figure);
    let stage = r.endpoints.as_ref().map(|e| e.stage.as_str()).unwrap_or("");
    let points: Vec<(f64, f64, f64, f64, RGBColor)> = r
        .probes
        .iter()
        .filter_map(|p| {
            let (m, iv) = (p.median?, p.interval.as_ref()?);
            Some((p.position as f64, m, iv.low, iv.high, colour(p.verdict)))
        })
        .collect();
    let finite = |f: fn(&(f64, f64, f64, f64, RGBColor)) -> f64| {
        points.iter().map(f).filter(|x| x.is_finite()).collect::<Vec<f64>>()
    };
    // The endpoints' medians re-measured in each probe's windows: the
    // drift over the bisection, drawn beside the probe.
    let drift: Vec<(f64, f64, RGBColor)> = r
        .probes
        .iter()
        .flat_map(|p| {
            p.windows.iter().flat_map(move |w| {
                let x = p.position as f64;
                [(x - 0.2, w.median_good, BAR), (x + 0.2, w.median_bad, SLOWER)]
            })
        })
        .filter(|d| d.1.is_finite())
        .collect();
    let hi = finite(|p| p.3).into_iter().chain(drift.iter().map(|d| d.1)).fold(0.0, f64::max);
    let lo =
        finite(|p| p.2).into_iter().chain(drift.iter().map(|d| d.1)).fold(f64::INFINITY, f64::min);
    let lo = if lo.is_finite() { lo.min(0.0) } else { 0.0 };
    let hi = if hi > lo { hi * 1.08 } else { lo + 1.0 };
    let last = r.commits.saturating_sub(1).max(1) as f64;
    let body = caption(
        root,
        &format!(
            "{stage} {figure}: each probe's median and its interval at its place in the first-parent history (0: good, {}: bad); blue good, red bad, grey unclear; crosses: the good (left) and bad (right) endpoints measured again beside the probe; red line: before the first bad commit",
            r.commits.saturating_sub(1)
        ),
    )?;
    let mut chart = series_chart(
        &body,
        (-0.5..(last + 0.5), 0.0..last),
        "commit, from good (0) to bad",
        figure,
        (lo, hi),
    )?;
    if let Some(first) = r.first_bad.as_ref().and_then(|c| r.probes.iter().find(|p| &p.commit == c))
    {
        let x = first.position as f64 - 0.5;
        chart
            .draw_series([PathElement::new(vec![(x, lo), (x, hi)], SLOWER.stroke_width(2))])
            .map_err(err)?;
    }
    for &(x, _, low, high, c) in &points {
        chart
            .draw_series([PathElement::new(vec![(x, low), (x, high)], c.stroke_width(2))])
            .map_err(err)?;
    }
    chart
        .draw_series(points.iter().map(|&(x, m, _, _, c)| Circle::new((x, m), 4, c.filled())))
        .map_err(err)?;
    chart
        .draw_series(drift.iter().map(|&(x, m, c)| Cross::new((x, m), 3, c.stroke_width(1))))
        .map_err(err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chart::picture::{Element, elements, problems};
    use crate::rundir::bisect::Probe;
    use crate::stats::{Interval, IntervalMethod};

    fn probe(position: usize, verdict: ProbeVerdict, median: f64) -> Probe {
        Probe {
            commit: format!("{position:040}"),
            position,
            verdict,
            reason: None,
            median: Some(median),
            interval: Some(Interval {
                low: median * 0.97,
                high: median * 1.03,
                coverage: 0.95,
                method: IntervalMethod::Bootstrap,
                n: 6,
            }),
            rounds: 6,
            p_good: None,
            p_bad: None,
            runs: Vec::new(),
            windows: Vec::new(),
            reused: false,
        }
    }

    /// A dot per probe at its place, red for bad, and the red line between
    /// the last good probe and the first bad one.
    #[test]
    fn the_plot_puts_each_probe_at_its_commit_and_the_line_before_the_first_bad_one() {
        use ProbeVerdict::*;
        let probes = vec![
            probe(0, Good, 0.12),
            probe(16, Bad, 0.16),
            probe(8, Good, 0.12),
            probe(12, Bad, 0.16),
            probe(10, Bad, 0.16),
            probe(9, Good, 0.12),
        ];
        let r = BisectReport {
            schema: String::new(),
            schema_version: 1,
            declaration_sha256: String::new(),
            environment_sha256: String::new(),
            figure: "wall_s".into(),
            threshold_pct: 5.0,
            commits: 17,
            endpoints: None,
            first_bad: Some(probes[4].commit.clone()),
            probes,
            candidates: Vec::new(),
            span: None,
            confirmation: None,
            answer: String::new(),
            work_tree_dirty: false,
            artifacts: Vec::new(),
        };
        let mut svg = String::new();
        {
            let root = plotters::prelude::SVGBackend::with_string(&mut svg, (WIDTH, 400))
                .into_drawing_area();
            draw(&root, &r).unwrap();
        }
        assert!(problems(&svg).is_empty(), "{:?}", problems(&svg));
        let drawn = elements(&svg);
        let dot = |colour: &str| -> Vec<f64> {
            drawn
                .iter()
                .filter_map(|e| match e {
                    Element::Circle(x, _, c) if c.contains(colour) => Some(*x),
                    _ => None,
                })
                .collect()
        };
        let (blue, red) = (dot("466EAA"), dot("C83228"));
        assert_eq!((blue.len(), red.len()), (3, 3), "{drawn:?}");
        let last_good = blue.iter().copied().fold(f64::MIN, f64::max);
        let first_bad = red.iter().copied().fold(f64::MAX, f64::min);
        let line = drawn.iter().find_map(|e| match e {
            Element::Line(points, colour)
                if colour.contains("C83228")
                    && (points[0].0 - points[1].0).abs() < 0.5
                    && points[0].1 != points[1].1
                    && points[0].0 > last_good
                    && points[0].0 < first_bad =>
            {
                Some(points[0].0)
            }
            _ => None,
        });
        assert!(line.is_some(), "no red line between {last_good} and {first_bad}: {drawn:?}");
    }
}
