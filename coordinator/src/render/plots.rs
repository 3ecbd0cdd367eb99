//! A run's plots, from report.json alone: stages, trials and cold
//! preparation, drawn with the primitives in [`crate::chart`].

use crate::chart::*;
use crate::fmt::duration;
use crate::modes::Report;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// A plot and the data it draws.
pub(crate) enum Plot<'a> {
    /// Stage wall time, CPU time and peak RSS as bars, one row per stage.
    Stages(&'a Report),
    /// Every trial's wall time relative to its stage's median, one row per
    /// stage, with the median's 95% interval and the warm-up trials.
    Trials(&'a Report),
    /// Cold preparation: each worker's busy time within its phase's wall
    /// time, serial against N processes.
    ColdPrep(&'a Report),
    /// A workers sweep: speedup against the count, beside the ideal line
    /// and the fitted Amdahl curve.
    Sweep(&'a Report),
}

/// The plots a report has data for.
pub(crate) fn for_report(r: &Report) -> Vec<Plot<'_>> {
    let mut v = Vec::new();
    if !r.stages.is_empty() {
        v.push(Plot::Stages(r));
    }
    if r.trials().is_some_and(|t| !t.is_empty()) {
        v.push(Plot::Trials(r));
    }
    if r.cold_prep().is_some() {
        v.push(Plot::ColdPrep(r));
    }
    if r.cold_prep().is_some_and(|c| c.sweep.is_some()) {
        v.push(Plot::Sweep(r));
    }
    v
}

impl Plot<'_> {
    /// The file stem under `plots/`.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Plot::Stages(_) => "stages",
            Plot::Trials(_) => "trials",
            Plot::ColdPrep(_) => "cold-prep",
            Plot::Sweep(_) => "sweep",
        }
    }

    fn rows(&self) -> usize {
        match self {
            Plot::Stages(r) => r.stages.len(),
            Plot::Trials(r) => r.trials().map_or(0, |t| t.len()),
            Plot::ColdPrep(r) => {
                r.cold_prep().map_or(0, |c| c.serial.workers.len() + c.parallel.workers.len())
            }
            // A square-ish chart, whatever the counts.
            Plot::Sweep(_) => 14,
        }
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), RenderError> {
        match self {
            Plot::Stages(r) => stages(root, r),
            Plot::Trials(r) => trials(root, r),
            Plot::ColdPrep(r) => cold_prep(root, r),
            Plot::Sweep(r) => sweep(root, r),
        }
    }

    /// The plot as SVG and PNG bytes.
    pub(crate) fn svg_and_png(&self) -> Result<(Vec<u8>, Vec<u8>), RenderError> {
        svg_and_png(self.rows(), |root| self.draw(root))
    }
}

/// One row of the stages plot: a stage, or the rounds of one stage.
struct StageRow<'a> {
    label: String,
    records: Vec<&'a crate::rundir::report::StageRecord>,
}

/// The stages in run order, a stage's later rounds (`NAME#R`) grouped with
/// its first; a phase that exists once per process count carries its count
/// (`_w4`), the largest included, whatever its key in report.json.
fn stage_rows(r: &Report) -> Vec<StageRow<'_>> {
    use crate::modes::cold_prep::rounds::later_round;
    let mut keyed: Vec<_> = r.stages.iter().collect();
    keyed.sort_by_key(|(_, st)| st.order);
    let main_count = r.cold_prep().map(|c| {
        let count = match &c.sweep {
            Some(s) => s.points.iter().map(|p| p.workers).max().unwrap_or(1),
            None => c.parallel.workers.len() as u32,
        };
        (c.names().parallel, count)
    });
    let mut rows: Vec<(String, StageRow)> = Vec::new();
    for (key, st) in keyed {
        let base = later_round(key).map_or(key.as_str(), |(b, _)| b);
        match rows.iter_mut().find(|(b, _)| b == base) {
            Some((_, row)) => row.records.push(st),
            None => {
                let label = match main_count {
                    Some((parallel, n)) if base == parallel => format!("{parallel}_w{n}"),
                    _ => base.to_string(),
                };
                rows.push((base.to_string(), StageRow { label, records: vec![st] }));
            }
        }
    }
    rows.into_iter()
        .map(|(_, mut row)| {
            if row.records.len() > 1 {
                row.label = format!("{} ({} rounds)", row.label, row.records.len());
            }
            row
        })
        .collect()
}

fn stages<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    r: &Report,
) -> Result<(), RenderError> {
    let rows = stage_rows(r);
    let (labels, shortened) = fit_labels(rows.iter().map(|row| row.label.clone()).collect());
    let grouped = rows.iter().any(|row| row.records.len() > 1);
    let what = match (r.trials().is_some(), r.isolation.as_str()) {
        (true, _) => "median of counted trials",
        (false, "run") => "one process for the whole run",
        // A preparation phase is many processes: its record sums their CPU
        // and keeps the largest one's peak.
        _ if r.cold_prep().is_some() => {
            "a preparation phase: its wall, its processes' CPU summed, its largest process's peak RSS"
        }
        _ => "one process per stage",
    };
    let mut title =
        format!("stagebench {} run: wall, CPU and peak RSS per stage ({what})", r.mode());
    if grouped {
        title.push_str("; a stage run in rounds: the median, its line from the least to the most");
    }
    if shortened {
        title.push_str("; long names shortened with … (summary.md has them whole)");
    }
    let body = caption(root, &title)?;
    let panel = (WIDTH - label_width(&labels)) as i32 / 3;
    let (left, rest) = body.split_horizontally(label_width(&labels) as i32 + panel);
    let (mid, right) = rest.split_horizontally(panel);
    let figure = |f: &dyn Fn(&crate::rundir::report::StageRecord) -> f64| -> Vec<Spread> {
        rows.iter()
            .map(|row| {
                let v: Vec<f64> = row.records.iter().map(|s| f(s)).collect();
                Spread::of(&v)
            })
            .collect()
    };
    let walls = figure(&|s| s.wall_s);
    let cpus = figure(&|s| s.cpu_s);
    let rss = figure(&|s| s.peak_rss_bytes as f64);
    bar_panel(&left, "wall", &labels, true, &walls, BAR, Steps::Decimal, &|x| duration(x))?;
    bar_panel(&mid, "CPU (user + system)", &labels, false, &cpus, CPU, Steps::Decimal, &|x| {
        duration(x)
    })?;
    bar_panel(&right, "peak RSS", &labels, false, &rss, RSS, Steps::Binary, &|x| {
        crate::fmt::mib(x as u64)
    })
}

fn trials<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    r: &Report,
) -> Result<(), RenderError> {
    let Some(sets) = r.trials() else { return Ok(()) };
    let mut keys: Vec<&String> = sets.keys().collect();
    keys.sort_by_key(|k| r.stages.get(*k).map(|s| s.order).unwrap_or(usize::MAX));
    let n = keys.len();
    let labels: Vec<String> = keys
        .iter()
        .map(|k| format!("{k} ({})", duration(sets[*k].summary["wall_s"].median)))
        .collect();
    // Every trial as a ratio to its stage's median, so stages of any
    // duration share one axis and their noise can be compared.
    let mut lo: f64 = 0.98;
    let mut hi: f64 = 1.02;
    for k in &keys {
        let t = &sets[*k];
        let m = t.summary["wall_s"].median;
        let all =
            t.samples["wall_s"].iter().chain(t.warmup_samples.get("wall_s").into_iter().flatten());
        for x in all.map(|x| x / m).filter(|x| x.is_finite()) {
            lo = lo.min(x);
            hi = hi.max(x);
        }
    }
    let pad = (hi - lo) * 0.06;
    let body = caption(
        root,
        "Trials: wall time of each fresh-process trial relative to its stage's median (in brackets)",
    )?;
    let mut chart = row_chart(
        &body,
        &labels,
        ((lo - pad)..(hi + pad), 1.0),
        "trial wall time / median   (filled: counted, hollow grey: warm-up; bar: the median's interval, 95% CI from 6 trials, else the range)",
        &|x| format!("{:.0}%", 100.0 * (x - 1.0)),
    )?;
    chart
        .draw_series(std::iter::once(PathElement::new(
            vec![(1.0, -0.6), (1.0, n as f64 - 0.4)],
            BLACK.stroke_width(1),
        )))
        .map_err(err)?;
    for (i, k) in keys.iter().enumerate() {
        let t = &sets[*k];
        let s = &t.summary["wall_s"];
        let y = row_y(i, n);
        let i = s.median_interval;
        let (a, b) = (i.low / s.median, i.high / s.median);
        if b > a {
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(a, y - 0.06), (b, y + 0.06)],
                    BAR.mix(0.35).filled(),
                )))
                .map_err(err)?;
        }
        let jitter = |j: usize| y + 0.3 * (((j as f64 * 0.618_034) % 1.0) - 0.5);
        let warm = t.warmup_samples.get("wall_s").map(Vec::as_slice).unwrap_or(&[]);
        chart
            .draw_series(
                warm.iter().enumerate().map(|(j, x)| {
                    Circle::new((x / s.median, jitter(j + 7)), 4, MUTED.stroke_width(1))
                }),
            )
            .map_err(err)?;
        chart
            .draw_series(t.samples["wall_s"].iter().enumerate().map(|(j, x)| {
                let color = if s.outliers.contains(&j) { SLOWER } else { BAR };
                Circle::new((x / s.median, jitter(j)), 3, color.filled())
            }))
            .map_err(err)?;
    }
    Ok(())
}

fn cold_prep<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    r: &Report,
) -> Result<(), RenderError> {
    let Some(c) = r.cold_prep() else { return Ok(()) };
    let (serial, parallel) = (&c.serial, &c.parallel);
    let mut labels = Vec::new();
    // Per row: the worker's jobs as (start, end), its phase's wall, a colour.
    type Spans = Vec<(f64, f64)>;
    let mut rows: Vec<(Spans, f64, RGBColor)> = Vec::new();
    for (side, name, color) in [(serial, "serial", CPU), (parallel, "parallel", BAR)] {
        let mut workers: Vec<_> = side.workers.iter().collect();
        workers.sort_by_key(|w| w.rank);
        for w in workers {
            labels.push(format!("{name} rank {} ({} {})", w.rank, w.series, c.unit()));
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

fn sweep<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, r: &Report) -> Result<(), RenderError> {
    let Some(s) = r.cold_prep().and_then(|c| c.sweep.as_ref()) else { return Ok(()) };
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
        (Some(f), Some(limit)) => format!("Amdahl fit: serial fraction {f:.3}, limit {limit:.2}x"),
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
    let ideal: Vec<(f64, f64)> = counts.iter().map(|c| (f64::from(*c), f64::from(*c))).collect();
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
    let beside = TextStyle::from((SANS, 14).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
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

#[cfg(test)]
mod tests {
    #[test]
    fn blocks_closer_than_the_gap_merge_and_others_stay_apart() {
        let spans = [(0.0, 1.0), (1.0005, 2.0), (2.5, 3.0), (3.0001, 3.5)];
        assert_eq!(super::coalesce(&spans, 0.001), vec![(0.0, 2.0), (2.5, 3.5)]);
        assert_eq!(super::coalesce(&spans, 0.0).len(), 4);
        assert!(super::coalesce(&[], 1.0).is_empty());
    }
}
