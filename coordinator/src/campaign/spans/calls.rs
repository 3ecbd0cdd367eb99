//! A resume read call by call: the k-th call of a span in a stage of the
//! resume set against the k-th of the cold run, and, after an
//! interruption, against what the killed attempt had finished. A span
//! called several times (two searches, one per stage) is never compared
//! as a sum, so a search the kill left undone is not read as a repeat.
//!
//! Each call of the resume is one of:
//! - **repeated**: the cold run did it, it was done before the resume (a
//!   resume step follows a complete cold run; an interrupted one only what
//!   ended before the kill), and it ran again at more than
//!   [`LOADED_BELOW`] of its cold time;
//! - **loaded**: the same, but it took under that share of the cold
//!   call's time: it read back what was done rather than redo it;
//! - **not yet done at the kill**: it first ran after the kill, so it is
//!   work the interruption left, never a thing to persist;
//! - **added**: the cold run had no such call (the resume's own path).
//!
//! A cold call with no counterpart in the resume was **skipped**.

use super::super::report::{StepReport, TrialReport};
use crate::rundir::spans::Calls;
use crate::stats::median;
use std::collections::BTreeMap;

/// A resume's call that took under this share of the cold call's time
/// read back what was done instead of redoing it.
pub(crate) const LOADED_BELOW: f64 = 0.1;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Fate {
    Repeated,
    Loaded,
    NotYetDone,
    Added,
    Skipped,
}

/// One call (`k`, from 1) of a span in a stage, as a step's trials had it
/// (the fate most of them gave it; the median seconds of those).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Call {
    pub(crate) stage: String,
    pub(crate) name: String,
    pub(crate) k: usize,
    pub(crate) fate: Fate,
    /// In the resume (0 for a skipped call).
    pub(crate) seconds: f64,
    /// The cold run's k-th call (median over its trials), if it had one.
    pub(crate) cold_s: Option<f64>,
    /// Whether the stage's cold run called the span more than once (so
    /// the call is named with its `#k`).
    pub(crate) numbered: bool,
}

impl Call {
    /// `STAGE/NAME`, with `#k` where the name was called more than once.
    pub(crate) fn label(&self) -> String {
        match self.numbered {
            true => format!("{}/{} #{}", self.stage, self.name, self.k),
            false => format!("{}/{}", self.stage, self.name),
        }
    }
}

/// A step read call by call.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Reading {
    pub(crate) calls: Vec<Call>,
    /// The repeated calls' time, each second once (the union of their
    /// intervals in each stage, nested and overlapping calls once),
    /// median over trials.
    pub(crate) repeated_s: f64,
    /// `(stage, name)` read here: every other span is read by its sums.
    pub(crate) names: std::collections::BTreeSet<(String, String)>,
}

/// The cold run's k-th call of each span: median seconds over its trials.
fn cold_calls(cold: &StepReport) -> BTreeMap<(String, String), Vec<f64>> {
    let mut per: BTreeMap<(String, String, usize), Vec<f64>> = BTreeMap::new();
    for t in &cold.trials {
        for (stage, calls) in &t.calls {
            for (name, list) in calls {
                for (k, c) in list.iter().enumerate() {
                    per.entry((stage.clone(), name.clone(), k)).or_default().push(c[1]);
                }
            }
        }
    }
    let mut out: BTreeMap<(String, String), Vec<f64>> = BTreeMap::new();
    for ((stage, name, _), v) in per {
        out.entry((stage, name)).or_default().push(median(&v));
    }
    out
}

/// How many calls of `(stage, name)` ended before the trial's resume began:
/// all of the cold run's for a resume step, the killed attempt's own after
/// an interruption.
fn done_before(t: &TrialReport, stage: &str, name: &str, cold_n: usize) -> usize {
    match &t.killed {
        None => cold_n,
        Some(k) => k.calls.get(stage).and_then(|c| c.get(name)).map_or(0, Vec::len),
    }
}

/// A trial's call: stage, name, k (from 0), its fate and seconds.
type Fated = (String, String, usize, Fate, f64);

/// One trial's calls with their fates, and its repeated seconds.
fn trial_fates(t: &TrialReport, cold: &BTreeMap<(String, String), Vec<f64>>) -> (Vec<Fated>, f64) {
    let mut out = Vec::new();
    let mut repeated_s = 0.0;
    let empty = Calls::new();
    let stages: std::collections::BTreeSet<&String> =
        t.calls.keys().chain(cold.keys().map(|(s, _)| s)).collect();
    for stage in stages {
        let own = t.calls.get(stage).unwrap_or(&empty);
        let mut repeated: Vec<[f64; 2]> = Vec::new();
        let names: std::collections::BTreeSet<&String> =
            own.keys().chain(cold.keys().filter(|(s, _)| s == stage).map(|(_, n)| n)).collect();
        for name in names {
            let cold_list = cold.get(&(stage.clone(), name.clone()));
            let cold_n = cold_list.map_or(0, Vec::len);
            let done = done_before(t, stage, name, cold_n);
            let mine = own.get(name).map(Vec::as_slice).unwrap_or(&[]);
            for (k, c) in mine.iter().enumerate() {
                let fate = match cold_list.and_then(|l| l.get(k)) {
                    None => Fate::Added,
                    Some(_) if k >= done => Fate::NotYetDone,
                    Some(cold_s) if c[1] < LOADED_BELOW * cold_s => Fate::Loaded,
                    Some(_) => Fate::Repeated,
                };
                if fate == Fate::Repeated {
                    repeated.push(*c);
                }
                out.push((stage.clone(), name.clone(), k, fate, c[1]));
            }
            for k in mine.len()..cold_n {
                out.push((stage.clone(), name.clone(), k, Fate::Skipped, 0.0));
            }
        }
        repeated_s += union(&mut repeated);
    }
    (out, repeated_s)
}

/// The length of the union of intervals `[start, seconds]`.
fn union(spans: &mut [[f64; 2]]) -> f64 {
    spans.sort_by(|a, b| a[0].total_cmp(&b[0]));
    let (mut total, mut end) = (0.0, f64::NEG_INFINITY);
    for [start, secs] in spans.iter().copied() {
        let stop = start + secs;
        if stop > end {
            total += stop - start.max(end);
            end = stop;
        }
    }
    total
}

/// `step` read call by call against `cold`; None when neither recorded
/// any call (a campaign of the recipe, or reports from before calls were
/// kept).
pub(crate) fn read(step: &StepReport, cold: &StepReport) -> Option<Reading> {
    let cold_calls = cold_calls(cold);
    if cold_calls.is_empty() && step.trials.iter().all(|t| t.calls.is_empty()) {
        return None;
    }
    let mut per: BTreeMap<(String, String, usize), Vec<(Fate, f64)>> = BTreeMap::new();
    let mut repeated = Vec::new();
    for t in &step.trials {
        let (fates, r) = trial_fates(t, &cold_calls);
        repeated.push(r);
        for (stage, name, k, fate, s) in fates {
            per.entry((stage, name, k)).or_default().push((fate, s));
        }
    }
    let mut reading = Reading { repeated_s: median(&repeated), ..Default::default() };
    for ((stage, name, k), seen) in per {
        // The fate most trials gave it (the first trial's on a tie).
        let mut counts: BTreeMap<Fate, usize> = BTreeMap::new();
        for (f, _) in &seen {
            *counts.entry(*f).or_default() += 1;
        }
        let most = counts.values().copied().max().unwrap_or(0);
        let fate = seen.iter().map(|(f, _)| *f).find(|f| counts[f] == most).unwrap_or(Fate::Added);
        let secs: Vec<f64> = seen.iter().filter(|(f, _)| *f == fate).map(|(_, s)| *s).collect();
        let cold_list = cold_calls.get(&(stage.clone(), name.clone()));
        reading.names.insert((stage.clone(), name.clone()));
        reading.calls.push(Call {
            numbered: cold_list.map_or(0, Vec::len) > 1 || k > 0,
            cold_s: cold_list.and_then(|l| l.get(k)).copied(),
            stage,
            name,
            k: k + 1,
            fate,
            seconds: median(&secs),
        });
    }
    Some(reading)
}

impl Reading {
    /// The calls of one fate, in pipeline order (`order`: a stage's place)
    /// and call order.
    pub(crate) fn of(&self, fate: Fate, order: impl Fn(&str) -> usize) -> Vec<&Call> {
        let mut v: Vec<&Call> = self.calls.iter().filter(|c| c.fate == fate).collect();
        v.sort_by_key(|c| (order(&c.stage), c.name.clone(), c.k));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::campaign::report::Killed;

    fn trial(
        calls: &[(&str, &str, &[[f64; 2]])],
        killed: Option<&[(&str, &str, usize)]>,
    ) -> TrialReport {
        let mut by: BTreeMap<String, Calls> = BTreeMap::new();
        for (stage, name, list) in calls {
            by.entry(stage.to_string()).or_default().insert(name.to_string(), list.to_vec());
        }
        let killed = killed.map(|done| {
            let mut k: BTreeMap<String, Calls> = BTreeMap::new();
            for (stage, name, n) in done {
                let list = (0..*n).map(|i| [i as f64, 1.0]).collect();
                k.entry(stage.to_string()).or_default().insert(name.to_string(), list);
            }
            Killed { run: "k".into(), stage: "two".into(), wall_s: 1.0, span_s: None, calls: k }
        });
        TrialReport {
            run: "r".into(),
            run_wall_s: 1.0,
            stages: BTreeMap::new(),
            total_s: 1.0,
            state_sha256: String::new(),
            killed,
            identical_to_cold: true,
            differing_files: None,
            beyond_baseline: None,
            checkpoint_bytes: None,
            checkpoint_write_s: None,
            span_s: None,
            calls: by,
        }
    }

    fn step(kind: &str, trials: Vec<TrialReport>) -> StepReport {
        StepReport {
            name: kind.into(),
            kind: kind.into(),
            policy: None,
            kill_at: None,
            trials,
            median: BTreeMap::new(),
            median_total_s: 1.0,
            median_total_interval: None,
        }
    }

    fn fate(r: &Reading, stage: &str, name: &str, k: usize) -> Fate {
        r.calls.iter().find(|c| c.stage == stage && c.name == name && c.k == k).unwrap().fate
    }

    /// A two-stage chain killed after stage one's recompute: stage one's
    /// search is loaded (it ran, fast), its recompute repeated, stage two's
    /// search not yet done at the kill; the repeated seconds count a call
    /// nested in another once.
    #[test]
    fn an_interrupted_chain_is_read_call_by_call() {
        let cold_trial = || {
            trial(
                &[
                    ("one", "search", &[[0.0, 2.0]]),
                    ("one", "recompute", &[[2.0, 0.5]]),
                    ("one", "inner", &[[2.1, 0.2]]),
                    ("two", "search", &[[0.0, 2.0]]),
                ],
                None,
            )
        };
        let cold = step("cold", vec![cold_trial(), cold_trial()]);
        let done = [("one", "search", 1), ("one", "recompute", 1), ("one", "inner", 1)];
        let resumed = trial(
            &[
                ("one", "search", &[[0.0, 0.05]]),
                ("one", "recompute", &[[0.05, 0.5]]),
                ("one", "inner", &[[0.1, 0.2]]),
                ("two", "search", &[[0.0, 2.1]]),
            ],
            Some(&done),
        );
        let r = read(&step("interrupted", vec![resumed]), &cold).unwrap();
        assert_eq!(fate(&r, "one", "search", 1), Fate::Loaded);
        assert_eq!(fate(&r, "one", "recompute", 1), Fate::Repeated);
        assert_eq!(fate(&r, "two", "search", 1), Fate::NotYetDone);
        assert!(
            (r.repeated_s - 0.5).abs() < 1e-9,
            "inner inside recompute counted once: {}",
            r.repeated_s
        );
        // The same resume after a complete cold run: stage two's search was
        // done, so it is repeated.
        let again = trial(&[("two", "search", &[[0.0, 2.1]])], None);
        let r = read(&step("resume", vec![again]), &cold).unwrap();
        assert_eq!(fate(&r, "two", "search", 1), Fate::Repeated);
        assert_eq!(fate(&r, "one", "search", 1), Fate::Skipped);
        assert!((r.repeated_s - 2.1).abs() < 1e-9);
    }

    /// Two calls of one name in one stage are read one by one: the first
    /// done before the kill and run again, the second not yet done.
    #[test]
    fn the_kth_call_is_set_against_the_kth() {
        let cold = step("cold", vec![trial(&[("s", "fit", &[[0.0, 1.0], [1.0, 1.0]])], None)]);
        let resumed = trial(&[("s", "fit", &[[0.0, 1.0], [1.0, 1.0]])], Some(&[("s", "fit", 1)]));
        let r = read(&step("interrupted", vec![resumed]), &cold).unwrap();
        assert_eq!(fate(&r, "s", "fit", 1), Fate::Repeated);
        assert_eq!(fate(&r, "s", "fit", 2), Fate::NotYetDone);
        assert_eq!(r.calls[0].label(), "s/fit #1");
        assert!((r.repeated_s - 1.0).abs() < 1e-9);
    }

    #[test]
    fn a_union_counts_each_second_once() {
        assert_eq!(union(&mut [[0.0, 2.0], [1.0, 2.0], [5.0, 1.0], [5.5, 0.1]]), 4.0);
        assert_eq!(union(&mut []), 0.0);
    }
}
