//! A gate's drift: the first gated figure's median in each window, base
//! (blue) and head (red), in the order the windows ran. A machine that
//! drifts moves both lines; a change of the code keeps them apart.

use crate::chart::*;
use crate::rundir::gate::GateReport;
use plotters::prelude::*;

/// The rows of canvas height the plot takes.
const HEIGHT_ROWS: usize = 7;

/// The drift plot as SVG; None without a gated figure or a window's median.
pub fn svg(r: &GateReport) -> Option<Result<Vec<u8>, RenderError>> {
    let drawn = r.windows.iter().any(|w| w.base_median.is_some() || w.head_median.is_some());
    (!r.gated.is_empty() && drawn)
        .then(|| crate::chart::svg_and_png(HEIGHT_ROWS, |root| draw(root, r)).map(|(svg, _)| svg))
}

fn draw(root: &Area<'_>, r: &GateReport) -> Result<(), RenderError> {
    let Some(first) = r.gated.first() else { return Ok(()) };
    let series = |pick: fn(&crate::rundir::gate::Window) -> Option<f64>| -> Vec<(f64, f64)> {
        r.windows
            .iter()
            .enumerate()
            .filter_map(|(i, w)| Some(((i + 1) as f64, pick(w).filter(|x| x.is_finite())?)))
            .collect()
    };
    let (base, head) = (series(|w| w.base_median), series(|w| w.head_median));
    let values = base.iter().chain(&head).map(|p| p.1);
    let hi = values.clone().fold(0.0, f64::max);
    let lo = values.fold(f64::INFINITY, f64::min).min(0.0);
    let hi = if hi > lo { hi * 1.08 } else { lo + 1.0 };
    let n = r.windows.len().max(1) as f64;
    let body = caption(
        root,
        &format!(
            "{} {}: each window's median, base (blue) and head (red), in the order the windows ran; a drifting machine moves both, a change of the code keeps them apart",
            first.stage, first.figure
        ),
    )?;
    let mut chart =
        series_chart(&body, (0.5..(n + 0.5), 1.0..n), "window", &first.figure, (lo, hi))?;
    for (points, colour) in [(&base, BAR), (&head, SLOWER)] {
        chart
            .draw_series([PathElement::new(points.clone(), colour.stroke_width(2))])
            .map_err(err)?;
        chart
            .draw_series(points.iter().map(|&(x, y)| Circle::new((x, y), 4, colour.filled())))
            .map_err(err)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chart::picture::{Element, elements, problems};
    use crate::rundir::gate::Window;

    /// A dot per window and side at its window's place, blue base below
    /// red head where head was slower; none for a window without a median;
    /// no plot without a gated figure.
    #[test]
    fn the_drift_puts_each_windows_medians_at_its_place() {
        let mut r = crate::render::gate::tests::report(0);
        let window = |b: Option<f64>, h: Option<f64>| Window {
            order: Vec::new(),
            runs: Vec::new(),
            base_median: b,
            head_median: h,
        };
        r.windows = vec![
            window(Some(0.05), Some(0.065)),
            window(Some(0.06), Some(0.075)),
            window(None, None),
            window(Some(0.05), Some(0.066)),
        ];
        let drift = String::from_utf8(svg(&r).unwrap().unwrap()).unwrap();
        assert!(problems(&drift).is_empty(), "{:?}", problems(&drift));
        let drawn = elements(&drift);
        let dots = |colour: &str| -> Vec<(f64, f64)> {
            drawn
                .iter()
                .filter_map(|e| match e {
                    Element::Circle(x, y, c) if c.contains(colour) => Some((*x, *y)),
                    _ => None,
                })
                .collect()
        };
        let (blue, red) = (dots("466EAA"), dots("C83228"));
        assert_eq!((blue.len(), red.len()), (3, 3), "{drawn:?}");
        for (b, h) in blue.iter().zip(&red) {
            // The same window's place; head higher (smaller y) than base.
            assert!((b.0 - h.0).abs() < 0.5 && h.1 < b.1, "{b:?} {h:?}");
        }
        // Windows 1, 2 and 4: the gap where window 3 had no median.
        let gap = |i: usize| blue[i + 1].0 - blue[i].0;
        assert!((gap(1) - 2.0 * gap(0)).abs() < 1.5, "{blue:?}");
        r.gated.clear();
        assert!(svg(&r).is_none());
    }
}
