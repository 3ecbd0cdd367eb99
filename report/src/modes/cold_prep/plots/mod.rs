//! The cold-prep plot (which worker prepared what when, serial against N
//! processes) and the sweep plot (speedup against the count).

use super::{NAME, Section};
use crate::chart::*;
use crate::fmt::duration;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Cold preparation: each worker's busy time within its phase's wall
/// time, serial against N processes.
pub(super) struct PreparationPlot<'a>(pub(super) &'a Section);

impl Figure for PreparationPlot<'_> {
    fn name(&self) -> &'static str {
        NAME
    }

    fn rows(&self) -> usize {
        self.0.serial.workers.len() + self.0.parallel.workers.len()
    }

    fn draw(&self, root: &Area<'_>) -> Result<(), RenderError> {
        let c = self.0;
        let (serial, parallel) = (&c.serial, &c.parallel);
        let mut labels = Vec::new();
        // Per row: the worker's jobs as (start, end), its phase's wall, a colour.
        type Spans = Vec<(f64, f64)>;
        let mut rows: Vec<(Spans, f64, RGBColor)> = Vec::new();
        for (side, name, color) in [(serial, "serial", CPU), (parallel, "parallel", BAR)] {
            let mut workers: Vec<_> = side.workers.iter().collect();
            workers.sort_by_key(|w| w.rank);
            for w in workers {
                let unit = match (w.series, c.unit()) {
                    (1, "items") => "item",
                    (_, unit) => unit,
                };
                labels.push(format!("{name} rank {} ({} {unit})", w.rank, w.series));
                let mut spans: Vec<(f64, f64)> = side
                    .timeline
                    .iter()
                    .filter(|s| s.rank == w.rank)
                    .map(|s| (s.start_s, s.end_s))
                    .collect();
                if spans.is_empty() {
                    // A report without a timeline: busy time as one bar.
                    spans.push((0.0, w.busy_s));
                }
                rows.push((spans, side.wall_s, color));
            }
        }
        let n = rows.len();
        let body = caption(
            root,
            &format!(
                "Cold preparation{}: which worker prepared {} when; {} processes: {}{}, efficiency {:.0}%",
                if c.rounds.is_empty() { "" } else { " (round 1)" },
                if c.items.is_some() { "an item" } else { "a series" },
                parallel.workers.len(),
                c.speedup_phrase(),
                if c.rounds.is_empty() {
                    String::new()
                } else {
                    let each: Vec<String> =
                        c.rounds.iter().map(|r| format!("{:.2}", r.speedup)).collect();
                    format!(", rounds {}", each.join(" "))
                },
                100.0 * c.parallel_efficiency
            ),
        )?;
        let longest =
            rows.iter().flat_map(|r| r.0.iter().map(|s| s.1).chain([r.1])).fold(0.0, f64::max);
        let axis = format!(
            "time since the phase's first spawn (a block per {}, alternating shades; outline: the phase's wall time)",
            if c.items.is_some() { "item" } else { "series" }
        );
        let mut chart = row_chart(&body, &labels, (0.0..upper(longest), 0.0), &axis, &|x| {
            if *x == 0.0 { "0".to_string() } else { duration(*x) }
        })?;
        // Blocks narrower than a pixel are drawn merged with their neighbours
        // (a run of 100,000 items would otherwise draw 100,000 rectangles).
        let pixel = upper(longest) / 2000.0;
        for (i, (spans, wall, color)) in rows.iter().enumerate() {
            let y = row_y(i, n);
            let merged;
            let spans = match spans.len() > 500 {
                true => {
                    merged = coalesce(spans, pixel);
                    &merged
                }
                false => spans,
            };
            if *wall > 0.0 {
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(0.0, y - 0.34), (*wall, y + 0.34)],
                        color.stroke_width(1),
                    )))
                    .map_err(err)?;
            }
            chart
                .draw_series(spans.iter().enumerate().filter(|(_, s)| s.1 > s.0).map(|(j, s)| {
                    let shade = if j % 2 == 0 { color.mix(0.9) } else { color.mix(0.55) };
                    Rectangle::new([(s.0, y - 0.3), (s.1, y + 0.3)], shade.filled())
                }))
                .map_err(err)?;
        }
        Ok(())
    }
}

/// Spans in start order with every gap under `gap` closed: one block each
/// for a run of blocks too narrow to see apart.
fn coalesce(spans: &[(f64, f64)], gap: f64) -> Vec<(f64, f64)> {
    let mut out: Vec<(f64, f64)> = Vec::new();
    for &(start, end) in spans {
        match out.last_mut() {
            Some(last) if start - last.1 < gap => last.1 = last.1.max(end),
            _ => out.push((start, end)),
        }
    }
    out
}

/// A workers sweep: speedup against the count, beside the ideal line and
/// the fitted Amdahl curve.
pub(super) struct SweepPlot<'a>(pub(super) &'a super::sweep::Sweep);

impl Figure for SweepPlot<'_> {
    fn name(&self) -> &'static str {
        "sweep"
    }

    // A square-ish chart, whatever the counts.
    fn rows(&self) -> usize {
        14
    }

    fn draw(&self, root: &Area<'_>) -> Result<(), RenderError> {
        let s = self.0;
        let counts: Vec<u32> = s.points.iter().map(|p| p.workers).collect();
        if counts.is_empty() {
            return Ok(());
        }
        let axis = CountsAxis::new(&counts);
        let top = f64::from(*counts.last().unwrap_or(&1));
        let highest = s
            .points
            .iter()
            .map(|p| p.speedup_interval.map_or(p.speedup, |i| i.high))
            .fold(top, f64::max);
        let fit = match (s.amdahl.serial_fraction, s.amdahl.speedup_limit) {
            (Some(f), Some(limit)) => {
                format!("Amdahl fit: serial fraction {f:.3}, limit {limit:.2}x")
            }
            (Some(f), None) => format!("Amdahl fit: serial fraction {f:.3}, no limit"),
            _ => "no Amdahl fit (no count above 1)".to_string(),
        };
        let body = caption(root, &format!("Workers sweep: speedup against processes; {fit}"))?
            .margin(6, 10, 10, 10);
        let mut chart = ChartBuilder::on(&body)
            .margin(10)
            .margin_right(24)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(
                axis.clone(),
                ValueAxis::new(0.0..upper(highest), 0.0..upper(highest), Steps::Decimal, 8),
            )
            .map_err(err)?;
        let range = axis.range();
        let y_top = upper(highest);
        // Counts above the machine's cores share cores: shaded, and said so.
        if let Some(cores) = s.cores.map(f64::from) {
            let within = counts.iter().map(|c| f64::from(*c)).rfind(|c| *c <= cores);
            let above = counts.iter().map(|c| f64::from(*c)).find(|c| *c > cores);
            if let Some(first_above) = above {
                let from = within.map_or(range.start, |w| axis.between(w, first_above));
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(from, 0.0), (range.end, y_top)],
                        MUTED.mix(0.15).filled(),
                    )))
                    .map_err(err)?;
                let note =
                    TextStyle::from((SANS, 13).into_font()).pos(Pos::new(HPos::Right, VPos::Top));
                chart
                    .draw_series(std::iter::once(
                        EmptyElement::at((range.end, y_top))
                            + Text::new(
                                format!("more processes than the {cores} cores"),
                                (-6, 6),
                                note,
                            ),
                    ))
                    .map_err(err)?;
            }
        }
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_desc(if axis.is_log2() { "processes (log 2 scale)" } else { "processes" })
            .y_desc("speedup (serial wall / parallel wall)")
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_label_formatter(&|y| format!("{y:.1}x"))
            .label_style((SANS, 14))
            .draw()
            .map_err(err)?;
        let ideal: Vec<(f64, f64)> =
            counts.iter().map(|c| (f64::from(*c), f64::from(*c))).collect();
        chart
            .draw_series(LineSeries::new(ideal, MUTED.stroke_width(2)))
            .map_err(err)?
            .label("ideal (speedup = processes)")
            .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], MUTED.stroke_width(2)));
        if s.amdahl.serial_fraction.is_some() {
            let (first, last) = (axis.position(f64::from(counts[0])), axis.position(top));
            let curve = (0..=100).filter_map(|i| {
                let p = axis.count_at(first + (last - first) * f64::from(i) / 100.0);
                s.amdahl.speedup(p).map(|v| (p, v))
            });
            chart
                .draw_series(LineSeries::new(curve, CPU.stroke_width(2)))
                .map_err(err)?
                .label("Amdahl fit")
                .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], CPU.stroke_width(2)));
        }
        chart
            .draw_series(s.points.iter().filter_map(|p| {
                p.speedup_interval.map(|i| {
                    PathElement::new(
                        [(f64::from(p.workers), i.low), (f64::from(p.workers), i.high)],
                        BAR.stroke_width(2),
                    )
                })
            }))
            .map_err(err)?;
        chart
            .draw_series(
                s.points
                    .iter()
                    .map(|p| Circle::new((f64::from(p.workers), p.speedup), 5, BAR.filled())),
            )
            .map_err(err)?
            .label("measured (median; bar: 95% CI from 6 rounds, else the rounds' range)")
            .legend(|(x, y)| Circle::new((x + 10, y), 5, BAR.filled()));
        // The count the sweep recommends, ringed.
        let recommended = s.scan.as_ref().and_then(|scan| {
            let stage = scan.recommendation.stage.as_ref()?;
            let i = scan.points.iter().position(|p| &p.stage == stage)?;
            s.points.get(i)
        });
        if let Some(p) = recommended {
            chart
                .draw_series(std::iter::once(Circle::new(
                    (f64::from(p.workers), p.speedup),
                    9,
                    FASTER.stroke_width(2),
                )))
                .map_err(err)?
                .label("recommended (the scan's rule)")
                .legend(|(x, y)| Circle::new((x + 10, y), 7, FASTER.stroke_width(2)));
        }
        let beside =
            TextStyle::from((SANS, 14).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
        chart
            .draw_series(s.points.iter().map(|p| {
                EmptyElement::at((f64::from(p.workers), p.speedup))
                    + Text::new(format!("{:.2}x", p.speedup), (9, 0), beside.clone())
            }))
            .map_err(err)?;
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.9))
            .border_style(MUTED)
            .label_font((SANS, 14))
            .draw()
            .map_err(err)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
