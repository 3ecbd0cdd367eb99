//! `coordinator compare CAMPAIGN_A CAMPAIGN_B`: two campaigns, before and
//! after a fix, step by step. Per step in both, its trials' totals; per
//! pipeline stage (or recipe stage) in both, each trial's part (its wall
//! and process start-up); per span either campaign's stage reported, each
//! trial's seconds (0 in a trial whose stage ran without it: a span a fix
//! removed is its largest change, not a missing row). Each row is a run
//! comparison's row: ratio of medians with its interval, the rank test,
//! the verdict, the threshold; then one sentence per step saying whether B
//! is faster, slower or neither, and what changed most.

use super::comparable::{Machine, Runtimes};
use super::{Asked, CompareError, Comparison, DEFAULT_FIGURES, Row, comparable, matches, row};
use crate::campaign::report::{CampaignReport, StepReport};
use crate::fmt::duration;
use crate::stats::Verdict;
use std::collections::{BTreeMap, BTreeSet};

/// Two verified campaigns: their comparison, or why they are refused.
pub(super) fn compare(
    machines: [&Machine; 2],
    reports: [CampaignReport; 2],
    asked: &Asked<'_>,
) -> Result<Comparison, CompareError> {
    let [a, b] = reports;
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
    let comparability = comparable::block(machines, [&stages[0], &stages[1]], &common);
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
    Ok(Comparison {
        incomparable,
        comparability,
        rows,
        notes,
        stacks: Vec::new(),
        runs: Vec::new(),
    })
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
pub fn rows(a: &CampaignReport, b: &CampaignReport, pct: f64) -> (Vec<Row>, Vec<String>) {
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
pub fn stages_with_runtime(r: &CampaignReport) -> Runtimes {
    let mut out = Runtimes::new();
    for step in &r.steps {
        for (stage, part) in &step.median {
            if let (false, Some(runtime)) = (out.contains_key(stage), &part.runtime) {
                out.insert(stage.clone(), runtime.clone());
            }
        }
    }
    out
}

/// The stages both campaigns ran, by name, for the comparability block.
pub fn common_stages(a: &CampaignReport, b: &CampaignReport) -> Vec<String> {
    let keys = |r: &CampaignReport| -> BTreeSet<String> {
        r.steps.iter().flat_map(|s| s.median.keys().cloned()).collect()
    };
    keys(a).intersection(&keys(b)).cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The recorded campaign (steps cold, resume_load, interrupted_train;
    /// the recipe's five stages) with `n` trials a step, trial k's figures
    /// scaled by 1 + k/100, and in resume_load's `train` a span `fit` of
    /// `fit_s` seconds (inside the stage's wall) when it is above 0.
    fn campaign(n: usize, fit_s: f64) -> CampaignReport {
        let mut r: CampaignReport =
            serde_json::from_str(include_str!("../campaign/fixture-report.json")).unwrap();
        for step in &mut r.steps {
            let one = step.trials[0].clone();
            step.trials = (0..n)
                .map(|k| {
                    let f = 1.0 + k as f64 / 100.0;
                    let mut t = one.clone();
                    t.total_s *= f;
                    for (stage, part) in &mut t.stages {
                        part.wall_s *= f;
                        part.components.values_mut().for_each(|c| *c *= f);
                        if step.name == "resume_load" && stage == "train" && fit_s > 0.0 {
                            part.spans.insert("fit".into(), fit_s * f);
                            part.wall_s += fit_s * f;
                            t.total_s += fit_s * f;
                        }
                    }
                    t
                })
                .collect();
        }
        r
    }

    fn asked(allow_incomparable: bool, strict: bool, figures: &[String]) -> Asked<'_> {
        Asked { threshold_pct: 5.0, allow_incomparable, strict, figures }
    }

    fn compared(
        a: &CampaignReport,
        b: &CampaignReport,
        asked: &Asked<'_>,
    ) -> Result<Comparison, CompareError> {
        let machine = Machine::default();
        compare([&machine, &machine], [a.clone(), b.clone()], asked)
    }

    /// A fix that removed resume_load's 0.5 s span: that step faster,
    /// naming the span (not `load`, 2.0 s made 1.8 s: a smaller change in
    /// seconds, though a larger sum and ratio); the others no different;
    /// every row in its place (a step's total, then its stages in the order
    /// they ran, each total before its spans). The other way round, slower.
    #[test]
    fn a_removed_span_makes_its_step_faster_and_is_named_and_nothing_else_changed() {
        let (mut a, mut b) = (campaign(6, 0.5), campaign(6, 0.0));
        for (r, load) in [(&mut a, 2.0), (&mut b, 1.8)] {
            for (k, t) in r.steps[1].trials.iter_mut().enumerate() {
                let seconds = load * (1.0 + k as f64 / 100.0);
                let stage = t.stages.get_mut("cache_prepare").unwrap();
                stage.spans.insert("load".into(), seconds);
                stage.wall_s += seconds;
                t.total_s += seconds;
            }
        }
        let c = compared(&a, &b, &asked(false, false, &[])).unwrap();
        assert!(c.incomparable.is_empty(), "{:?}", c.incomparable);
        assert_eq!(c.notes.len(), 3, "{:?}", c.notes);
        let resume = &c.notes[1];
        assert!(resume.starts_with("resume_load: B is faster than A, total "), "{resume}");
        // The span's median over trials scaled 1.00 … 1.05: 0.5 × 1.025.
        let median = duration(0.5 * 1.025);
        let fit = format!("span fit in train, {median} → {} (faster).", duration(0.0));
        assert!(resume.ends_with(&format!("; what changed most: {fit}")), "{resume}");
        assert!(resume.contains("6 and 6 trials"), "{resume}");
        for same in [&c.notes[0], &c.notes[2]] {
            assert!(same.contains(": no significant difference between A and B, "), "{same}");
            assert!(same.ends_with("; no stage or span changed significantly."), "{same}");
        }
        let keys: Vec<(&str, &str)> = c
            .rows
            .iter()
            .filter(|r| r.stage.starts_with("resume_load"))
            .map(|r| (r.stage.as_str(), r.figure.as_str()))
            .collect();
        let mut stages: Vec<(&String, usize)> =
            a.steps[1].median.iter().map(|(s, p)| (s, p.order)).collect();
        stages.sort_by_key(|s| s.1);
        let mut want = vec![("resume_load".to_string(), "total_s")];
        for (s, _) in stages {
            want.push((format!("resume_load/{s}"), "total_s"));
            if s == "cache_prepare" {
                want.push(("resume_load/cache_prepare".into(), "span:load_s"));
            }
            if s == "train" {
                want.push(("resume_load/train".into(), "span:fit_s"));
            }
        }
        let want: Vec<(&str, &str)> = want.iter().map(|(s, f)| (s.as_str(), *f)).collect();
        assert_eq!(keys, want);
        assert_eq!(c.rows.len(), 6 + 8 + 6, "every stage's total in all three steps");
        assert!(c.rows.iter().all(|r| !r.differs), "the same machine and runtime");

        let c = compared(&b, &a, &asked(false, false, &[])).unwrap();
        let resume = &c.notes[1];
        assert!(resume.starts_with("resume_load: B is slower than A"), "{resume}");
        assert!(resume.contains(&format!("{} → {median} (slower)", duration(0.0))), "{resume}");

        let c = compared(&campaign(2, 0.5), &campaign(2, 0.0), &asked(false, false, &[])).unwrap();
        assert!(c.notes[1].contains("too few trials to say whether B differs from A"));
    }

    /// Campaigns with no step in common, or a pipeline against the recipe,
    /// are refused with the reason; with --allow-incomparable they are
    /// compared (or, sharing no step, refused as nothing compared).
    #[test]
    fn incomparable_campaigns_are_refused_unless_asked() {
        let a = campaign(4, 0.0);
        let mut renamed = a.clone();
        renamed.steps.iter_mut().for_each(|s| s.name = format!("other_{}", s.name));
        match compared(&a, &renamed, &asked(false, false, &[])) {
            Err(CompareError::Incomparable(why)) => assert_eq!(why, ["no step in common"]),
            other => panic!("{:?}", other.map(|c| c.rows.len())),
        }
        let nothing = compared(&a, &renamed, &asked(true, false, &[]));
        assert!(matches!(nothing, Err(CompareError::Nothing(_))), "{:?}", nothing.err());
        // One step in common is enough.
        let mut one = renamed.clone();
        one.steps[1].name = "resume_load".into();
        let c = compared(&a, &one, &asked(false, false, &[])).unwrap();
        assert_eq!(c.notes.len(), 1, "{:?}", c.notes);

        let mut pipeline = a.clone();
        pipeline.pipeline = true;
        let why = "one campaign ran a pipeline, the other the recipe";
        match compared(&a, &pipeline, &asked(false, false, &[])) {
            Err(CompareError::Incomparable(v)) => assert_eq!(v, [why]),
            other => panic!("{:?}", other.map(|c| c.rows.len())),
        }
        let c = compared(&a, &pipeline, &asked(true, false, &[])).unwrap();
        assert_eq!(c.incomparable, [why]);
        assert_eq!(c.notes.len(), 3);
    }

    /// A stage whose thread settings differ: its rows are marked and no
    /// others, and --strict refuses; --figure keeps the rows it names.
    #[test]
    fn a_stage_on_other_threads_is_marked_or_refused_and_figures_filter_rows() {
        let a = campaign(4, 0.3);
        let mut b = campaign(4, 0.3);
        // Recorded by the second step only (as when the first skipped the
        // stage): a stage's runtime is the first one recorded, not the
        // first step's.
        let train = b.steps[1].median.get_mut("train").unwrap();
        let runtime = json!({ "thread_settings": { "OMP_NUM_THREADS": "4" } });
        train.runtime = Some(serde_json::from_value(runtime).unwrap());
        let c = compared(&a, &b, &asked(false, false, &[])).unwrap();
        let marked: BTreeSet<&str> =
            c.rows.iter().filter(|r| r.differs).map(|r| r.stage.as_str()).collect();
        let want = BTreeSet::from(["cold/train", "resume_load/train", "interrupted_train/train"]);
        assert_eq!(marked, want);
        match compared(&a, &b, &asked(false, true, &[])) {
            Err(CompareError::Differs(d)) => {
                assert!(d.iter().any(|l| l.contains("train")), "{d:?}")
            }
            other => panic!("{:?}", other.map(|c| c.rows.len())),
        }
        let spans = ["span:*".to_string()];
        let c = compared(&a, &a, &asked(false, false, &spans)).unwrap();
        assert_eq!(c.rows.len(), 1, "the one span row");
        assert_eq!(c.rows[0].figure, "span:fit_s");
        let defaults: Vec<String> = DEFAULT_FIGURES.iter().map(|f| f.to_string()).collect();
        let all = compared(&a, &a, &asked(false, false, &defaults)).unwrap().rows.len();
        assert_eq!(all, compared(&a, &a, &asked(false, false, &[])).unwrap().rows.len());
        let none = ["peak_rss_bytes".to_string()];
        let refused = compared(&a, &a, &asked(false, false, &none));
        assert!(matches!(refused, Err(CompareError::Nothing(_))), "{:?}", refused.err());
    }
}
