//! The charts plots are made of: a row chart over a value axis, a titled
//! panel, a panel of bars with their spread.

use super::{RenderError, SANS, err};
use super::{RowsAxis, Steps, ValueAxis, label_width, row_label, row_y, rows_axis};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// A bar's value and, when it summarises several (rounds), their range.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Spread {
    pub fn of(values: &[f64]) -> Spread {
        Spread {
            median: crate::stats::median(values),
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        }
    }
}

pub fn upper(max: f64) -> f64 {
    if max > 0.0 && max.is_finite() { max * 1.18 } else { 1.0 }
}

pub type RowChart<'a, DB> = ChartContext<'a, DB, Cartesian2d<ValueAxis, RowsAxis>>;

/// A chart of one row per label (top to bottom) over the x range, with the
/// axes, grid and labels every row plot shares.
/// Its x ticks fall at round distances from `origin` (0, or 1 for a ratio).
pub fn row_chart<'a, DB: DrawingBackend>(
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

pub type SeriesChart<'a, DB> = ChartContext<'a, DB, Cartesian2d<ValueAxis, ValueAxis>>;

/// A chart of a figure's values at whole-numbered places (a history's
/// runs, a bisection's commits): x over `x` with ticks over `ticks`,
/// labelled as whole numbers and described by `x_desc`; y over `lo..hi`,
/// its ticks at binary steps for bytes, labelled as the figure's values.
pub fn series_chart<'a, DB: DrawingBackend>(
    body: &'a DrawingArea<DB, Shift>,
    (x, ticks): (std::ops::Range<f64>, std::ops::Range<f64>),
    x_desc: &str,
    figure: &str,
    (lo, hi): (f64, f64),
) -> Result<SeriesChart<'a, DB>, RenderError> {
    let steps = if figure.ends_with("_bytes") { Steps::Binary } else { Steps::Decimal };
    let x_axis = ValueAxis::new(x, ticks, Steps::Decimal, 10).whole();
    let y_axis = ValueAxis::new(lo..hi, lo..hi, steps, 5);
    let mut chart = ChartBuilder::on(body)
        .margin(8)
        .margin_right(24)
        .x_label_area_size(40)
        .y_label_area_size(90)
        .build_cartesian_2d(x_axis, y_axis)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| crate::fmt::figure(figure, *y))
        .label_style((SANS, 14))
        .draw()
        .map_err(err)?;
    Ok(chart)
}

/// A titled panel of one row per label over `0..hi`, with two to four
/// ticks at round values `steps` apart, none in the last tenth (where its
/// label would run into the next panel's).
#[allow(clippy::too_many_arguments)]
pub fn titled_chart<'a, DB: DrawingBackend>(
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
pub fn bar_panel<DB: DrawingBackend>(
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
