//! `coordinator compare CAMPAIGN_A CAMPAIGN_B`: two campaigns, before and
//! after a fix, step by step. Per step in both, its trials' totals; per
//! pipeline stage (or recipe stage) in both, each trial's part (its wall
//! and process start-up); per span either campaign's stage reported, each
//! trial's seconds (0 in a trial whose stage ran without it: a span a fix
//! removed is its largest change, not a missing row). Each row is a run
//! comparison's row: ratio of medians with its interval, the rank test,
//! the verdict, the threshold; then one sentence per step saying whether B
//! is faster, slower or neither, and what changed most.

use super::{Asked, CompareError, Comparison, DEFAULT_FIGURES, Row, comparable, matches, row};
use crate::campaign::report::{CampaignReport, StepReport};
use crate::fmt::duration;
use crate::stats::Verdict;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// Two verified campaigns: their comparison, or why they are refused.
pub(super) fn compare(
    env: [&Value; 2],
    reports: [Value; 2],
    asked: &Asked<'_>,
) -> Result<Comparison, CompareError> {
    let typed = |v: Value| {
        serde_json::from_value::<crate::campaign::report::CampaignReport>(v)
            .map_err(|e| CompareError::Read(format!("a campaign's report.json: {e}")))
    };
    let [ra, rb] = reports;
    let (a, b) = (typed(ra)?, typed(rb)?);
    let mut incomparable = Vec::new();
    if a.pipeline != b.pipeline {
        incomparable.push("one campaign ran a pipeline, the other the recipe".into());
    }
    if !a.steps.iter().any(|s| b.steps.iter().any(|o| o.name == s.name)) {
        incomparable.push("no step in common".into());
    }
    if !incomparable.is_empty() && !asked.allow_incomparable {
        return Err(CompareError::Incomparable(incomparable));
    }
    let stages = [stages_with_runtime(&a), stages_with_runtime(&b)];
    let common = common_stages(&a, &b);
    let comparability = comparable::block(env, [&stages[0], &stages[1]], &common);
    let differences = comparable::differences(&comparability);
    if asked.strict && !differences.is_empty() {
        return Err(CompareError::Differs(differences));
    }
    let (mut rows, notes) = rows(&a, &b, asked.threshold_pct);
    if !asked.figures.is_empty() && asked.figures != DEFAULT_FIGURES {
        rows.retain(|r| asked.figures.iter().any(|f| matches(f, &r.figure)));
    }
    for r in &mut rows {
        // A row of STEP/STAGE is the stage's; a step's total, the machine's.
        let stage = r.stage.split_once('/').map_or("", |(_, s)| s);
        r.differs = comparability.iter().any(|l| l.marks(stage));
    }
    if rows.is_empty() {
        return Err(CompareError::Nothing("the campaigns share no step with a figure".into()));
    }
    Ok(Comparison { incomparable, comparability, rows, notes })
}

/// Rows key: the step (`STEP`) or a stage of it (`STEP/STAGE`), and the
/// figure (`total_s`, `span:NAME_s`).
type Key = (String, String);

/// Every sample of every row of one campaign, keyed; span names to fill
/// with zeros come from both campaigns (`spans`).
fn samples(
    r: &CampaignReport,
    spans: &BTreeMap<(String, String), BTreeSet<String>>,
) -> BTreeMap<Key, Vec<f64>> {
    let mut out: BTreeMap<Key, Vec<f64>> = BTreeMap::new();
    for step in &r.steps {
        let totals = step.trials.iter().map(|t| t.total_s).collect();
        out.insert((step.name.clone(), "total_s".into()), totals);
        for t in &step.trials {
            for (stage, part) in &t.stages {
                let at = format!("{}/{stage}", step.name);
                out.entry((at.clone(), "total_s".into())).or_default().push(part.total());
                let names = spans.get(&(step.name.clone(), stage.clone()));
                for name in names.into_iter().flatten() {
                    let seconds = part.spans.get(name).copied().unwrap_or(0.0);
                    out.entry((at.clone(), format!("span:{name}_s"))).or_default().push(seconds);
                }
            }
        }
    }
    out
}

/// Per (step, stage), every span name any trial of `r` reported.
fn span_names(r: &CampaignReport, into: &mut BTreeMap<(String, String), BTreeSet<String>>) {
    for step in &r.steps {
        for t in &step.trials {
            for (stage, part) in &t.stages {
                let names = into.entry((step.name.clone(), stage.clone())).or_default();
                names.extend(part.spans.keys().cloned());
            }
        }
    }
}

/// Rows of every key both campaigns have, steps in A's order, each step's
/// total first, then its stages' totals and spans; and the steps' sentences.
pub(crate) fn rows(a: &CampaignReport, b: &CampaignReport, pct: f64) -> (Vec<Row>, Vec<String>) {
    let mut spans = BTreeMap::new();
    span_names(a, &mut spans);
    span_names(b, &mut spans);
    let (sa, sb) = (samples(a, &spans), samples(b, &spans));
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    for step in &a.steps {
        let Some(other) = b.steps.iter().find(|s| s.name == step.name) else { continue };
        let first = rows.len();
        let mut keys: Vec<&Key> = sa
            .keys()
            .filter(|(at, _)| at == &step.name || at.starts_with(&format!("{}/", step.name)))
            .filter(|k| sb.contains_key(*k))
            .collect();
        // The step's total, then stage by stage in the order they ran.
        let order = |at: &str| {
            let stage = at.split_once('/').map(|(_, s)| s);
            stage.and_then(|s| step.median.get(s)).map_or(0, |p| p.order + 1)
        };
        keys.sort_by_key(|(at, figure)| {
            (order(at), at.clone(), figure != "total_s", figure.clone())
        });
        for (i, key) in keys.into_iter().enumerate() {
            let seed = (rows.len() * 8 + i) as u64;
            rows.push(row(&key.0, &key.1, &sa[key], &sb[key], pct, seed));
        }
        notes.push(sentence(step, other, &rows[first..]));
    }
    (rows, notes)
}

/// "resume: B is faster than A, 0.412× (…); what changed most: span
/// max_lh_fit_recompute in mass, 1.03 s → 0 s (faster)."
fn sentence(a: &StepReport, b: &StepReport, rows: &[Row]) -> String {
    let Some(total) = rows.first() else {
        return format!("{}: no row in common", a.name);
    };
    let said = match total.verdict {
        Verdict::Faster => "B is faster than A",
        Verdict::Slower => "B is slower than A",
        Verdict::NoSignificantDifference => "no significant difference between A and B",
        Verdict::TooFewTrials => "too few trials to say whether B differs from A",
    };
    // The largest change in median seconds among the spans, else the stages.
    let largest = |spans: bool| {
        rows[1..]
            .iter()
            .filter(|r| r.figure.starts_with("span:") == spans)
            .filter(|r| matches!(r.verdict, Verdict::Faster | Verdict::Slower))
            .max_by(|x, y| {
                let d = |r: &Row| (r.median_b - r.median_a).abs();
                d(x).total_cmp(&d(y))
            })
    };
    let changed = match largest(true).or_else(|| largest(false)) {
        Some(r) => {
            let stage = r.stage.split_once('/').map_or(r.stage.as_str(), |(_, s)| s);
            let what = match r.figure.strip_prefix("span:").and_then(|f| f.strip_suffix("_s")) {
                Some(span) => format!("span {span} in {stage}"),
                None => format!("stage {stage}"),
            };
            let direction = if r.verdict == Verdict::Faster { "faster" } else { "slower" };
            format!(
                "; what changed most: {what}, {} → {} ({direction})",
                duration(r.median_a),
                duration(r.median_b)
            )
        }
        None => "; no stage or span changed significantly".into(),
    };
    format!(
        "{}: {said}, total {} → {}, {:.3}× ({}; {} and {} trials){changed}.",
        a.name,
        duration(total.median_a),
        duration(total.median_b),
        total.ratio,
        total.ci.phrase(|x| format!("{x:.3}")),
        a.trials.len(),
        b.trials.len()
    )
}

/// For the comparability block: each stage's runtime, keyed by the stage's
/// name, from the first step whose median recorded one (a stage a resume
/// skipped records none).
pub(crate) fn stages_with_runtime(r: &CampaignReport) -> Value {
    let mut out = serde_json::Map::new();
    for step in &r.steps {
        for (stage, part) in &step.median {
            let known = out.get(stage).is_some_and(|v| !v["runtime"].is_null());
            if !known {
                out.insert(stage.clone(), serde_json::json!({ "runtime": part.runtime }));
            }
        }
    }
    Value::Object(out)
}

/// The stages both campaigns ran, by name, for the comparability block.
pub(crate) fn common_stages(a: &CampaignReport, b: &CampaignReport) -> Vec<String> {
    let keys = |r: &CampaignReport| -> BTreeSet<String> {
        r.steps.iter().flat_map(|s| s.median.keys().cloned()).collect()
    };
    keys(a).intersection(&keys(b)).cloned().collect()
}
