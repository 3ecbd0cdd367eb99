//! A run's report as a campaign trial's parts: each stage by component, its
//! spans' calls, the medians over trials, and the sums the judgment and
//! the plot read.

use super::{COMPONENTS, StagePart, StepReport, TrialReport};
use crate::fmt::duration;
use crate::modes::Report;
use crate::stats::median;
use std::collections::BTreeMap;

/// A run's stages by component: the worker's `component:*_s` figures,
/// process start-up (the process's wait4 wall minus the stage's wall, when
/// the stage had its process alone), and the rest as `other`. The source
/// verification is integrity checking through and through.
pub fn stage_parts(report: &Report) -> BTreeMap<String, StagePart> {
    report
        .stages
        .iter()
        .map(|(key, st)| {
            let mut components: BTreeMap<String, f64> = st
                .figures
                .iter()
                .filter_map(|(k, v)| {
                    let name = k.strip_prefix("component:")?.strip_suffix("_s")?;
                    Some((name.to_string(), *v))
                })
                .collect();
            if key == crate::modes::preparation::VERIFY_BEFORE {
                components.insert("integrity".into(), st.wall_s);
            } else if components.is_empty() {
                // Anyone's command: all of it is the stage's own work.
                components.insert("work".into(), st.wall_s);
            }
            let spans = st
                .spans
                .iter()
                .map(|(name, x)| (name.clone(), x.self_s - x.concurrent_s))
                .collect();
            let concurrent_s = st.span_totals.as_ref().map_or(0.0, |t| t.concurrent_s);
            let inside: f64 = components.values().sum();
            components.insert("other".into(), (st.wall_s - inside).max(0.0));
            let alone = report.workers.iter().find(|w| w.stages == [key.clone()]);
            let startup = alone.map(|w| (w.wall_s - st.wall_s).max(0.0)).unwrap_or(0.0);
            components.insert("startup".into(), startup);
            let part = StagePart {
                order: st.order,
                wall_s: st.wall_s,
                components,
                skipped: false,
                spans,
                concurrent_s,
                runtime: st.runtime.clone(),
            };
            (key.clone(), part)
        })
        .collect()
}

/// A run's calls per stage, from its workers' job slices (a command's
/// spans, placed from the run's start): see [`crate::rundir::spans::Calls`].
pub fn stage_calls(report: &Report) -> BTreeMap<String, crate::rundir::spans::Calls> {
    let mut out = BTreeMap::new();
    for job in report.workers.iter().flat_map(|w| &w.jobs) {
        let calls = crate::rundir::spans::calls(
            job.slices
                .iter()
                .map(|s| (s.name.as_str(), s.start_s - job.start_s, s.end_s - s.start_s)),
        );
        if !calls.is_empty() {
            out.insert(job.stage.clone(), calls);
        }
    }
    out
}

/// Per stage and component, the median over the trials.
pub fn medians(trials: &[TrialReport]) -> BTreeMap<String, StagePart> {
    let mut out = BTreeMap::new();
    let Some(first) = trials.first() else { return out };
    for (key, part) in &first.stages {
        let runtime = trials.iter().find_map(|t| t.stages.get(key)?.runtime.clone());
        let mut m = StagePart { order: part.order, runtime, ..Default::default() };
        let walls: Vec<f64> =
            trials.iter().filter_map(|t| t.stages.get(key)).map(|p| p.wall_s).collect();
        m.wall_s = median(&walls);
        for c in COMPONENTS {
            let v: Vec<f64> = trials
                .iter()
                .filter_map(|t| t.stages.get(key))
                .map(|p| p.components.get(c).copied().unwrap_or(0.0))
                .collect();
            m.components.insert(c.to_string(), median(&v));
        }
        m.skipped = part.skipped;
        for span in part.spans.keys() {
            let v: Vec<f64> =
                trials.iter().filter_map(|t| t.stages.get(key)?.spans.get(span).copied()).collect();
            m.spans.insert(span.clone(), median(&v));
        }
        {
            let v: Vec<f64> =
                trials.iter().filter_map(|t| t.stages.get(key)).map(|p| p.concurrent_s).collect();
            m.concurrent_s = median(&v);
        }
        out.insert(key.clone(), m);
    }
    out
}

/// Seconds of component `c` summed over a step's median stages.
pub fn component_total(step: &StepReport, c: &str) -> f64 {
    step.median.values().map(|p| p.components.get(c).copied().unwrap_or(0.0)).sum()
}

/// A step's four largest components (but `except`), largest first, each
/// with its seconds and share of the step, named by `name`.
pub fn largest_components(
    step: &StepReport,
    except: &[&str],
    name: impl Fn(&str) -> &'static str,
) -> String {
    let r = step.median_total_s;
    let mut parts: Vec<(&str, f64)> = COMPONENTS
        .iter()
        .filter(|c| !except.contains(c))
        .map(|c| (*c, component_total(step, c)))
        .filter(|(_, v)| *v > 0.0)
        .collect();
    parts.sort_by(|a, b| b.1.total_cmp(&a.1));
    let listed: Vec<String> = parts
        .iter()
        .take(4)
        .map(|(k, v)| format!("{} {} ({})", name(k), duration(*v), pct(*v, r)))
        .collect();
    listed.join(", ")
}

pub fn pct(part: f64, whole: f64) -> String {
    if whole > 0.0 { format!("{:.0}%", 100.0 * part / whole) } else { "-".into() }
}

/// A step's median spans summed by name over its stages that ran, largest
/// first (`per_stage`: by `STAGE/NAME` instead).
pub fn span_totals(step: &StepReport, per_stage: bool) -> Vec<(String, f64)> {
    let mut by_name: BTreeMap<String, f64> = BTreeMap::new();
    for (stage, part) in step.median.iter().filter(|(_, p)| !p.skipped) {
        for (name, s) in &part.spans {
            let key = if per_stage { format!("{stage}/{name}") } else { name.clone() };
            *by_name.entry(key).or_default() += s;
        }
    }
    let mut out: Vec<(String, f64)> = by_name.into_iter().collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    out
}

/// A stage's wall outside any of its spans: its wall less the main
/// thread's self time in spans (which never overlaps itself), not clamped.
pub fn outside(part: &StagePart) -> f64 {
    match part.skipped {
        true => 0.0,
        false => part.wall_s - part.spans.values().sum::<f64>(),
    }
}
