//! The campaign plot: cold against resume per stage, and each step's
//! median time stacked by component (a pipeline's: by span, then the time
//! outside spans and process start-up).

use super::report::{COMPONENTS, CampaignReport, StepReport, component_total, label};
use super::report::{outside, span_totals};
use crate::chart::*;
use crate::fmt::duration;
use plotters::prelude::*;

/// The plot's SVG and PNG bytes.
pub fn svg_and_png(r: &CampaignReport) -> Result<(Vec<u8>, Vec<u8>), RenderError> {
    let rows = r.stage_keys().len().max(r.steps.len()) + 2;
    crate::chart::svg_and_png(rows, |root| draw(root, r))
}

/// One colour per campaign component, in [`COMPONENTS`] order.
const COMPONENT_COLOURS: [RGBColor; 9] = [
    RGBColor(150, 150, 150),
    RGBColor(110, 110, 110),
    RGBColor(200, 50, 40),
    RGBColor(230, 150, 40),
    RGBColor(70, 110, 170),
    RGBColor(140, 90, 170),
    RGBColor(220, 110, 160),
    RGBColor(90, 160, 90),
    RGBColor(200, 200, 200),
];

/// What the right panel stacks: a label, a colour, a value per step.
fn series(r: &CampaignReport) -> Vec<(String, RGBColor, Vec<f64>)> {
    if !r.pipeline {
        return COMPONENTS
            .iter()
            .zip(COMPONENT_COLOURS)
            .map(|(c, colour)| {
                (
                    label(c).to_string(),
                    colour,
                    r.steps.iter().map(|s| component_total(s, c)).collect(),
                )
            })
            .collect();
    }
    // Span names, largest in the cold step first; then the rest.
    let totals: Vec<Vec<(String, f64)>> = r.steps.iter().map(|s| span_totals(s, false)).collect();
    let mut names: Vec<&String> = Vec::new();
    for (n, _) in totals.iter().flatten() {
        if !names.contains(&n) {
            names.push(n);
        }
    }
    let per_step = |n: &str| -> Vec<f64> {
        totals.iter().map(|t| t.iter().find(|x| x.0 == n).map_or(0.0, |x| x.1)).collect()
    };
    // A colour each for the largest; the rest stacked as one.
    let (named, rest) = names.split_at(names.len().min(SPAN_COLOURS.len()));
    let mut out: Vec<(String, RGBColor, Vec<f64>)> = named
        .iter()
        .zip(SPAN_COLOURS)
        .map(|(n, colour)| (n.to_string(), colour, per_step(n)))
        .collect();
    if !rest.is_empty() {
        let mut other = vec![0.0; r.steps.len()];
        for n in rest {
            for (o, v) in other.iter_mut().zip(per_step(n)) {
                *o += v;
            }
        }
        out.push((format!("{} other spans", rest.len()), OTHER_SPANS, other));
    }
    let outside = r.steps.iter().map(|s| s.median.values().map(outside).sum()).collect();
    out.push(("outside spans".into(), COMPONENT_COLOURS[7], outside));
    let startup = r.steps.iter().map(|s| component_total(s, "startup")).collect();
    out.push(("process start-up".into(), COMPONENT_COLOURS[0], startup));
    out
}

/// Spans' colours, the largest span first: none a grey or the green
/// (which stay for process start-up and the time outside spans), none
/// used twice; spans past the last share [`OTHER_SPANS`].
const SPAN_COLOURS: [RGBColor; 8] = [
    RGBColor(230, 150, 40),
    RGBColor(200, 50, 40),
    RGBColor(70, 110, 170),
    RGBColor(140, 90, 170),
    RGBColor(220, 110, 160),
    RGBColor(40, 150, 150),
    RGBColor(150, 100, 50),
    RGBColor(170, 170, 60),
];

/// The smaller spans past [`SPAN_COLOURS`], stacked as one.
const OTHER_SPANS: RGBColor = RGBColor(160, 190, 225);

fn draw(root: &Area<'_>, r: &CampaignReport) -> Result<(), RenderError> {
    let body = caption(
        root,
        &format!("stagebench campaign {}: medians of {} trials per step", r.name, r.trials),
    )?;
    let (left, right) = body.split_horizontally(WIDTH as i32 / 2);
    // Left: cold against the first resume (load policy first) per stage.
    let keys = r.stage_keys();
    let cold = r.steps.iter().find(|s| s.kind == "cold");
    let resume = r
        .steps
        .iter()
        .find(|s| s.kind == "resume" && s.policy.as_deref() == Some("load"))
        .or_else(|| r.steps.iter().find(|s| s.kind == "resume"));
    let at = |s: Option<&StepReport>, k: &String| {
        s.and_then(|s| s.median.get(k)).map(|p| p.total()).unwrap_or(0.0)
    };
    let colds: Vec<f64> = keys.iter().map(|k| at(cold, k)).collect();
    let resumes: Vec<f64> = keys.iter().map(|k| at(resume, k)).collect();
    let hi = upper(colds.iter().chain(&resumes).copied().fold(0.0, f64::max));
    let n = keys.len().max(1);
    let title = format!(
        "per stage: cold (blue) vs {} (orange)",
        resume.map(|s| s.name.as_str()).unwrap_or("resume")
    );
    let mut chart = titled_chart(&left, &title, &keys, true, hi, Steps::Decimal, &|x| duration(x))?;
    for (values, colour, (lo, top)) in
        [(&colds, BAR, (0.02, 0.36)), (&resumes, CPU, (-0.36, -0.02))]
    {
        chart
            .draw_series(values.iter().enumerate().filter(|(_, v)| visible(**v, hi)).map(
                |(i, v)| {
                    let y = row_y(i, n);
                    Rectangle::new([(0.0, y + lo), (*v, y + top)], colour.filled())
                },
            ))
            .map_err(err)?;
    }
    // Right: every step's median total, stacked by component.
    let steps: Vec<String> = r.steps.iter().map(|s| s.name.clone()).collect();
    let m = steps.len().max(1);
    let totals: Vec<f64> = r.steps.iter().map(|s| s.median_total_s).collect();
    // Room on the right for the legend.
    let hi = 2.4 * upper(totals.iter().copied().fold(0.0, f64::max));
    let title = if r.pipeline { "per step, by span" } else { "per step, by component" };
    let mut chart =
        titled_chart(&right, title, &steps, true, hi, Steps::Decimal, &|x| duration(x))?;
    let mut start = vec![0.0; r.steps.len()];
    for (name, colour, values) in series(r) {
        let bars: Vec<(usize, f64, f64)> = values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let v = *v;
                let from = start[i];
                start[i] += v;
                (i, from, from + v)
            })
            .collect();
        chart
            .draw_series(bars.into_iter().filter(|(_, a, b)| visible(b - a, hi)).map(
                |(i, a, b)| {
                    let y = row_y(i, m);
                    Rectangle::new([(a, y - 0.32), (b, y + 0.32)], colour.filled())
                },
            ))
            .map_err(err)?
            .label(name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], colour.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(MUTED)
        .label_font((SANS, 12))
        .draw()
        .map_err(err)
}

/// Whether a bar of length `v` on an axis to `hi` is at least a pixel wide
/// (a narrower one is drawn 0 wide, which renderers reject with a warning).
fn visible(v: f64, hi: f64) -> bool {
    v > 0.0 && v >= hi / 500.0
}

#[cfg(test)]
mod tests {
    /// The campaign plot of a real recipe campaign (cold, resume, an
    /// interrupted step), read back from its SVG.
    #[test]
    fn the_campaign_plot_reads_cleanly() {
        let r = serde_json::from_str(include_str!("fixture-report.json")).unwrap();
        let (svg, _) = super::svg_and_png(&r).unwrap();
        let problems = crate::chart::picture::problems(&String::from_utf8(svg).unwrap());
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }

    /// A pipeline campaign with many spans (as autofit's): the legend
    /// keeps off the bars, every series has a colour of its own, and each
    /// step's stack is its median total (self times, the time outside
    /// spans and process start-up: each second once).
    #[test]
    fn a_pipeline_plot_with_many_spans_reads_cleanly_in_distinct_colours() {
        let mut r: super::CampaignReport =
            serde_json::from_str(include_str!("fixture-pipeline-report.json")).unwrap();
        // Nine more spans in the first stage of every step, taken from its
        // time outside spans (so the totals stay what they were).
        for step in &mut r.steps {
            let part = step.median.values_mut().next().unwrap();
            for i in 0..9 {
                part.spans.insert(format!("NonLinearSearch.fit_part_{i}"), 0.001 * (i + 1) as f64);
            }
        }
        let series = super::series(&r);
        let colours: Vec<_> = series.iter().map(|s| s.1).collect();
        for (i, c) in colours.iter().enumerate() {
            assert!(!colours[..i].contains(c), "{} reuses a colour", series[i].0);
        }
        for (i, step) in r.steps.iter().enumerate() {
            let stacked: f64 = series.iter().map(|s| s.2[i]).sum();
            // Medians of parts against the median of totals: close, not equal.
            assert!(
                (stacked - step.median_total_s).abs() < 0.02 * step.median_total_s,
                "{}: stacked {stacked} against a median total of {}",
                step.name,
                step.median_total_s
            );
        }
        let (svg, _) = super::svg_and_png(&r).unwrap();
        let problems = crate::chart::picture::problems(&String::from_utf8(svg).unwrap());
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }
}
