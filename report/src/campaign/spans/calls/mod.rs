//! A resume read call by call: each call of a span in a stage of the
//! resume set against the same call of the cold run, and, after an
//! interruption, against what the killed attempt had finished. A call is
//! known by its place: the k-th call of its name inside the same call of
//! its enclosing span (`search_fit #2 › start_resume_fit`), so a search a
//! resume loads does not shift which sampling the next one is matched
//! with. A span called several times (two searches) is never compared as
//! a sum, so a search the kill left undone is not read as a repeat.
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
use std::collections::{BTreeMap, BTreeSet};

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

impl Fate {
    /// Every fate, in the order a reader meets them.
    pub(crate) const ALL: [Fate; 5] =
        [Fate::Skipped, Fate::Loaded, Fate::Repeated, Fate::NotYetDone, Fate::Added];

    /// The fate as summary.md's sentences name it.
    pub(crate) fn word(self) -> &'static str {
        match self {
            Fate::Repeated => "repeated",
            Fate::Loaded => "loaded",
            Fate::NotYetDone => "not yet done at the kill",
            Fate::Added => "added",
            Fate::Skipped => "skipped",
        }
    }

    /// A one-word class for the page's colours.
    pub(crate) fn class(self) -> &'static str {
        match self {
            Fate::Repeated => "repeated",
            Fate::Loaded => "loaded",
            Fate::NotYetDone => "undone",
            Fate::Added => "added",
            Fate::Skipped => "skipped",
        }
    }
}

/// One call of a span in a stage, known by its place (see the module),
/// as a step's trials had it (the fate most of them gave it; the median
/// seconds of those).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Call {
    pub(crate) stage: String,
    /// The span's name (the last segment of `place`).
    pub(crate) name: String,
    /// `NAME#K/NAME#K/…`, from the outermost enclosing call down.
    pub(crate) place: String,
    pub(crate) fate: Fate,
    /// In the resume (0 for a skipped call).
    pub(crate) seconds: f64,
    /// The cold run's call at the same place (median over its trials).
    pub(crate) cold_s: Option<f64>,
    /// `STAGE/…`, for a person (see [`Reading::label`]).
    label: String,
}

impl Call {
    /// `STAGE/NAME`, with its enclosing calls and `#k` where a name was
    /// called more than once in the same place.
    pub(crate) fn label(&self) -> String {
        self.label.clone()
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
    pub(crate) names: BTreeSet<(String, String)>,
}

/// A call with its place.
struct Placed {
    /// `NAME#K/NAME#K/…`, from the outermost enclosing call down.
    place: String,
    name: String,
    /// `[start, seconds]`.
    call: [f64; 2],
}

impl Placed {
    fn end(&self) -> f64 {
        self.call[0] + self.call[1]
    }
}

/// One stage's calls with their places: each call's enclosing call is the
/// innermost earlier one whose interval holds it (on any thread: a call
/// beside another is read as inside it, which can only merge places).
fn placed(calls: &Calls) -> Vec<Placed> {
    let mut all: Vec<(&String, [f64; 2])> =
        calls.iter().flat_map(|(n, v)| v.iter().map(move |c| (n, *c))).collect();
    // By start, the longer first: an enclosing call before what it holds.
    all.sort_by(|a, b| a.1[0].total_cmp(&b.1[0]).then(b.1[1].total_cmp(&a.1[1])));
    let mut open: Vec<(String, f64)> = Vec::new();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = Vec::new();
    for (name, c) in all {
        let end = c[0] + c[1];
        while open.last().is_some_and(|(_, e)| *e < end - 1e-9) {
            open.pop();
        }
        let parent = open.last().map(|(p, _)| p.clone()).unwrap_or_default();
        let k = seen.entry(format!("{parent}/{name}")).or_default();
        *k += 1;
        let place = match parent.is_empty() {
            true => format!("{name}#{k}"),
            false => format!("{parent}/{name}#{k}"),
        };
        open.push((place.clone(), end));
        out.push(Placed { place, name: name.clone(), call: c });
    }
    out
}

/// The call a stage finished last, for a failure: of those that ended
/// within a millisecond of the last end (an exception leaves the spans it
/// crosses together), the innermost, with its enclosing calls
/// (`search_fit › restore`; `#k` where it was not the first of its name).
pub fn last_finished(calls: &Calls) -> Option<String> {
    let all = placed(calls);
    let last = all.iter().map(Placed::end).fold(f64::NEG_INFINITY, f64::max);
    let innermost = all
        .iter()
        .filter(|p| p.end() >= last - 1e-3)
        .max_by_key(|p| p.place.matches('/').count())?;
    let shown: Vec<String> = innermost
        .place
        .split('/')
        .map(|seg| match seg.split_once('#') {
            Some((name, "1")) => name.to_string(),
            Some((name, k)) => format!("{name} #{k}"),
            None => seg.to_string(),
        })
        .collect();
    Some(shown.join(" › "))
}

/// The cold run's call at each `(stage, place)`: median seconds over its
/// trials.
fn cold_calls(cold: &StepReport) -> BTreeMap<(String, String), f64> {
    let mut per: BTreeMap<(String, String), Vec<f64>> = BTreeMap::new();
    for t in &cold.trials {
        for (stage, calls) in &t.calls {
            for p in placed(calls) {
                per.entry((stage.clone(), p.place)).or_default().push(p.call[1]);
            }
        }
    }
    per.into_iter().map(|(k, v)| (k, median(&v))).collect()
}

/// A trial's call with its fate.
struct Fated {
    stage: String,
    place: String,
    name: String,
    fate: Fate,
    seconds: f64,
}

/// One trial's calls with their fates, and its repeated seconds.
fn trial_fates(t: &TrialReport, cold: &BTreeMap<(String, String), f64>) -> (Vec<Fated>, f64) {
    let mut out = Vec::new();
    let mut repeated_s = 0.0;
    let empty = Calls::new();
    // What ended before this trial's resume began: all of the cold run's
    // for a resume step, the killed attempt's own after an interruption.
    let done: Option<BTreeSet<(String, String)>> = t.killed.as_ref().map(|k| {
        k.calls
            .iter()
            .flat_map(|(stage, c)| placed(c).into_iter().map(move |p| (stage.clone(), p.place)))
            .collect()
    });
    let stages: BTreeSet<&String> = t.calls.keys().chain(cold.keys().map(|(s, _)| s)).collect();
    for stage in stages {
        let own = placed(t.calls.get(stage).unwrap_or(&empty));
        let mut repeated: Vec<[f64; 2]> = Vec::new();
        for Placed { place, name, call: c } in &own {
            let key = (stage.clone(), place.clone());
            let was_done = done.as_ref().is_none_or(|d| d.contains(&key));
            let fate = match cold.get(&key) {
                None => Fate::Added,
                Some(_) if !was_done => Fate::NotYetDone,
                Some(cold_s) if c[1] < LOADED_BELOW * cold_s => Fate::Loaded,
                Some(_) => Fate::Repeated,
            };
            if fate == Fate::Repeated {
                repeated.push(*c);
            }
            out.push(Fated {
                stage: stage.clone(),
                place: place.clone(),
                name: name.clone(),
                fate,
                seconds: c[1],
            });
        }
        for ((s, place), _) in cold.iter().filter(|((s, _), _)| s == stage) {
            if !own.iter().any(|p| p.place == *place) {
                let name = place.rsplit('/').next().unwrap_or(place);
                let name = name.split('#').next().unwrap_or(name).to_string();
                out.push(Fated {
                    stage: s.clone(),
                    place: place.clone(),
                    name,
                    fate: Fate::Skipped,
                    seconds: 0.0,
                });
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

/// A place for a person: `search_fit #2 › start_resume_fit`, each `#k`
/// kept only where a sibling of the same name exists (`places`).
fn label(stage: &str, place: &str, places: &BTreeSet<&str>) -> String {
    let mut parts = Vec::new();
    let mut prefix = String::new();
    for seg in place.split('/') {
        let (name, k) = seg.split_once('#').unwrap_or((seg, "1"));
        let second = format!("{prefix}{name}#2");
        parts.push(match k != "1" || places.contains(second.as_str()) {
            true => format!("{name} #{k}"),
            false => name.to_string(),
        });
        prefix.push_str(seg);
        prefix.push('/');
    }
    format!("{stage}/{}", parts.join(" › "))
}

/// `step` read call by call against `cold`; None when neither recorded
/// any call (a campaign of the recipe, or reports from before calls were
/// kept).
pub(crate) fn read(step: &StepReport, cold: &StepReport) -> Option<Reading> {
    let cold_calls = cold_calls(cold);
    if cold_calls.is_empty() && step.trials.iter().all(|t| t.calls.is_empty()) {
        return None;
    }
    // By (stage, place): the span's name and each trial's fate and seconds.
    type Seen = (String, Vec<(Fate, f64)>);
    let mut per: BTreeMap<(String, String), Seen> = BTreeMap::new();
    let mut repeated = Vec::new();
    for t in &step.trials {
        let (fates, r) = trial_fates(t, &cold_calls);
        repeated.push(r);
        for Fated { stage, place, name, fate, seconds } in fates {
            per.entry((stage, place)).or_insert_with(|| (name, Vec::new())).1.push((fate, seconds));
        }
    }
    let mut reading = Reading { repeated_s: median(&repeated), ..Default::default() };
    let places: BTreeSet<String> = per
        .keys()
        .chain(cold_calls.keys())
        .map(|(stage, place)| format!("{stage}\u{0}{place}"))
        .collect();
    for ((stage, place), (name, seen)) in per {
        // The fate most trials gave it (the first trial's on a tie).
        let mut counts: BTreeMap<Fate, usize> = BTreeMap::new();
        for (f, _) in &seen {
            *counts.entry(*f).or_default() += 1;
        }
        let most = counts.values().copied().max().unwrap_or(0);
        let fate = seen.iter().map(|(f, _)| *f).find(|f| counts[f] == most).unwrap_or(Fate::Added);
        let secs: Vec<f64> = seen.iter().filter(|(f, _)| *f == fate).map(|(_, s)| *s).collect();
        let here = format!("{stage}\u{0}");
        let siblings: BTreeSet<&str> =
            places.iter().filter_map(|p| p.strip_prefix(here.as_str())).collect();
        reading.names.insert((stage.clone(), name.clone()));
        reading.calls.push(Call {
            label: label(&stage, &place, &siblings),
            cold_s: cold_calls.get(&(stage.clone(), place.clone())).copied(),
            stage,
            name,
            place,
            fate,
            seconds: median(&secs),
        });
    }
    Some(reading)
}

impl Reading {
    /// The calls of one fate, in pipeline order (`order`: a stage's place)
    /// and then by their place in it.
    pub(crate) fn of(&self, fate: Fate, order: impl Fn(&str) -> usize) -> Vec<&Call> {
        let mut v: Vec<&Call> = self.calls.iter().filter(|c| c.fate == fate).collect();
        v.sort_by_key(|c| (order(&c.stage), c.place.clone()));
        v
    }
}

#[cfg(test)]
pub(crate) mod tests;
