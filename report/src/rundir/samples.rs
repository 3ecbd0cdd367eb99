//! A stage's sampled Python stacks (`--sample`) as its record keeps them.
//!
//! Each trial's stacks are an artifact, `samples/JOB.folded`: collapsed
//! stacks, one line each, `LANE;function (module);… COUNT`, running samples
//! only (the worker's `stages::sampled` writes them, with no path in them).
//! The record holds what the pages and scripts read without those files:
//! per lane the samples per trial, the top functions by inclusive and by
//! self share of the stage's samples, each share's median over the counted
//! trials with its interval (a function's share in one trial is one
//! sample), and the stacks merged over the trials for a flame graph, the
//! smallest ones folded into their parent's frame.

use crate::stats;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// The artifacts' directory below the run directory.
pub const DIR: &str = "samples/";
/// How many functions a record lists (by inclusive share, then self).
pub const TOP: usize = 20;
/// A merged stack under this share of the samples is folded into its
/// parent's frame in the record's `stacks` (the artifacts keep them all).
pub const STACK_FLOOR: f64 = 0.001;

/// One stage's samples.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SampledRecord {
    /// The sampler as it named itself (`py-spy 0.4.3`).
    pub sampler: String,
    pub rate_hz: u32,
    /// Trials the figures are from (the counted ones).
    pub trials: u32,
    /// Running samples per trial, median.
    pub samples: f64,
    /// Per lane (`main`, `forked`, `multiprocessing`, a child's program),
    /// its running samples per trial, median.
    pub lanes: BTreeMap<String, f64>,
    /// The functions with the largest inclusive shares, then self shares.
    pub functions: Vec<FunctionShare>,
    /// The trials' stacks merged (`LANE;frame;…` → samples per trial,
    /// mean), the smallest folded into their parent ([`STACK_FLOOR`]).
    pub stacks: BTreeMap<String, f64>,
    /// Per `--span` function target found on the stacks, what ran inside it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inside: Vec<InsideSpan>,
    /// True for a `--prepare` phase: each of `trials` is then one worker
    /// process's preparation program, sampled over its whole life (its
    /// start-up, every item it was handed, its close), not a trial.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub programs: bool,
}

impl SampledRecord {
    /// What one of `trials` is, for a sentence: "trial" or "program".
    pub fn per(&self) -> &'static str {
        match self.programs {
            true => "program",
            false => "trial",
        }
    }
}

/// The samples inside one span's function: those with its frame on the
/// stack (matched by qualname), and the functions on top of them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct InsideSpan {
    /// The span's name, as the spans table has it.
    pub span: String,
    /// The qualname its frames were matched by.
    pub qualname: String,
    /// Samples inside it per trial, median.
    pub samples: f64,
    /// The functions on top of its samples, with their share of them
    /// (pooled over the trials), largest first, at most [`INSIDE_TOP`].
    pub top: Vec<(String, String, f64)>,
}

/// How many functions an [`InsideSpan`] lists.
pub const INSIDE_TOP: usize = 5;

/// A function's share of a stage's samples, in one lane.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FunctionShare {
    pub lane: String,
    /// `function (module)`, as the stacks name it.
    pub function: String,
    /// Of the stage's samples, those with the function on the stack.
    pub inclusive: Share,
    /// Of the stage's samples, those with the function on top.
    pub own: Share,
}

/// A share's median over the trials and its interval.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Share {
    pub median: f64,
    pub low: f64,
    pub high: f64,
    /// The interval's coverage (a range of few trials says its own).
    pub coverage: f64,
    /// The share in each counted trial, in trial order (what `compare`
    /// ranks).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trials: Vec<f64>,
}

impl Share {
    /// A share from its value in each trial: their median and its interval.
    pub fn of(trials: Vec<f64>, seed: u64) -> Share {
        let s = stats::summarize(&trials, seed);
        let i = s.median_interval;
        Share { median: s.median, low: i.low, high: i.high, coverage: i.coverage, trials }
    }
}

/// Why a stage that was to be sampled has no samples, as its warning says
/// it: `count` trials or programs (`per`) at `rate_hz`, the stage's wall.
/// `some` when a few of them had a sample, but the median had none.
pub fn none_sentence(count: usize, per: &str, rate_hz: u32, wall_s: f64, some: bool) -> String {
    let which = if some { "most of the " } else { "" };
    let median = if some { format!(" (a median of 0 a {per})") } else { String::new() };
    format!(
        "--sample: no running Python sample in {which}{count} {per}(s) at {rate_hz} Hz{median}: the program ended before py-spy found it (within its first second) or ran too briefly to be sampled ({} of wall); its figures stand unsampled: sample a longer run, or a higher --sample rate",
        crate::fmt::duration(wall_s)
    )
}

/// One trial's stacks: (frames, lane first; samples).
pub type Stacks = Vec<(Vec<String>, u64)>;

/// A folded artifact's line that is not `STACK COUNT` (its number, from 1).
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("line {line} is not `STACK COUNT`")]
pub struct FoldedLineError {
    pub line: usize,
}

/// Parses a folded artifact; a line without a count is an error naming it.
pub fn parse(text: &str) -> Result<Stacks, FoldedLineError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let (stack, n) = line
            .rsplit_once(' ')
            .and_then(|(s, n)| Some((s, n.parse::<u64>().ok()?)))
            .ok_or(FoldedLineError { line: i + 1 })?;
        out.push((stack.split(';').map(str::to_string).collect(), n));
    }
    Ok(out)
}

/// A function as (lane, frame).
type Key = (String, String);

/// Per function, its inclusive and self samples in one trial.
type Counts = BTreeMap<Key, (u64, u64)>;

/// A trial's [`Counts`] and its total samples.
fn counts(trial: &Stacks) -> (Counts, u64) {
    let mut out: Counts = BTreeMap::new();
    let mut total = 0;
    for (frames, n) in trial {
        total += n;
        let Some((lane, frames)) = frames.split_first() else { continue };
        let mut seen = BTreeSet::new();
        for f in frames {
            // Recursion counts a sample once.
            if seen.insert(f) {
                out.entry((lane.clone(), f.clone())).or_default().0 += n;
            }
        }
        if let Some(top) = frames.last() {
            out.entry((lane.clone(), top.clone())).or_default().1 += n;
        }
    }
    (out, total)
}

/// What ran inside each span target `(name, qualname)`: the samples with
/// a frame of that qualname on the stack, and the functions on top.
fn inside(trials: &[Stacks], targets: &[(String, String)]) -> Vec<InsideSpan> {
    let mut out = Vec::new();
    for (span, qualname) in targets {
        let is_it = |f: &String| f.split(" (").next() == Some(qualname.as_str());
        let mut per_trial = Vec::new();
        let mut tops: BTreeMap<(String, String), u64> = BTreeMap::new();
        for trial in trials {
            let mut n = 0;
            for (frames, c) in trial {
                if frames.len() > 1 && frames[1..].iter().any(is_it) {
                    n += c;
                    let top = frames.last().cloned().unwrap_or_default();
                    *tops.entry((frames[0].clone(), top)).or_default() += c;
                }
            }
            per_trial.push(n as f64);
        }
        let total: u64 = tops.values().sum();
        if total == 0 {
            continue;
        }
        let mut top: Vec<(String, String, f64)> =
            tops.into_iter().map(|((l, f), c)| (l, f, c as f64 / total as f64)).collect();
        top.sort_by(|a, b| b.2.total_cmp(&a.2).then_with(|| (&a.0, &a.1).cmp(&(&b.0, &b.1))));
        top.truncate(INSIDE_TOP);
        out.push(InsideSpan {
            span: span.clone(),
            qualname: qualname.clone(),
            samples: stats::median(&per_trial),
            top,
        });
    }
    out
}

/// The record of a stage's counted trials' stacks, with what ran inside
/// each `--span` function target `(name, qualname)`; None without samples.
pub fn record(
    sampler: &str,
    rate_hz: u32,
    trials: &[Stacks],
    targets: &[(String, String)],
    seed: u64,
) -> Option<SampledRecord> {
    let per: Vec<(Counts, u64)> = trials.iter().map(counts).collect();
    let totals: Vec<f64> = per.iter().map(|(_, t)| *t as f64).collect();
    if totals.iter().all(|t| *t == 0.0) {
        return None;
    }
    let keys: BTreeSet<&Key> = per.iter().flat_map(|(c, _)| c.keys()).collect();
    let ratio = |n: u64, total: u64| if total == 0 { 0.0 } else { n as f64 / total as f64 };
    let mut functions: Vec<FunctionShare> = keys
        .iter()
        .enumerate()
        .map(|(k, key)| {
            let of = |pick: fn(&(u64, u64)) -> u64| -> Vec<f64> {
                per.iter().map(|(c, t)| ratio(c.get(*key).map_or(0, pick), *t)).collect()
            };
            FunctionShare {
                lane: key.0.clone(),
                function: key.1.clone(),
                inclusive: Share::of(of(|c| c.0), seed.wrapping_add(2 * k as u64)),
                own: Share::of(of(|c| c.1), seed.wrapping_add(2 * k as u64 + 1)),
            }
        })
        .collect();
    functions.sort_by(|a, b| {
        b.inclusive
            .median
            .total_cmp(&a.inclusive.median)
            .then(b.own.median.total_cmp(&a.own.median))
            .then_with(|| (&a.lane, &a.function).cmp(&(&b.lane, &b.function)))
    });
    // Below the top by inclusive share, the largest self shares not yet listed.
    let mut by_own: Vec<FunctionShare> = functions.split_off(TOP.min(functions.len()));
    by_own.sort_by(|a, b| b.own.median.total_cmp(&a.own.median));
    functions.extend(by_own.into_iter().filter(|f| f.own.median > 0.0).take(TOP / 2));

    let mut lanes: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut stacks: BTreeMap<String, f64> = BTreeMap::new();
    let n = trials.len() as f64;
    for (t, trial) in trials.iter().enumerate() {
        let mut own: BTreeMap<&str, f64> = BTreeMap::new();
        for (frames, c) in trial {
            *own.entry(frames[0].as_str()).or_default() += *c as f64;
            *stacks.entry(frames.join(";")).or_default() += *c as f64 / n;
        }
        for (lane, c) in own {
            let v = lanes.entry(lane.to_string()).or_insert_with(|| vec![0.0; trials.len()]);
            v[t] = c;
        }
    }
    let total: f64 = stacks.values().sum();
    Some(SampledRecord {
        sampler: sampler.to_string(),
        rate_hz,
        trials: trials.len() as u32,
        samples: stats::median(&totals),
        lanes: lanes.into_iter().map(|(k, v)| (k, stats::median(&v))).collect(),
        functions,
        stacks: prune(stacks, total * STACK_FLOOR),
        inside: inside(trials, targets),
        programs: false,
    })
}

/// Folds every stack under `floor` samples into its parent's frame, the
/// deepest first, so a pruned tree keeps every sample.
fn prune(mut stacks: BTreeMap<String, f64>, floor: f64) -> BTreeMap<String, f64> {
    loop {
        let small: Vec<String> = stacks
            .iter()
            .filter(|(k, v)| **v < floor && k.contains(';'))
            .map(|(k, _)| k.clone())
            .collect();
        if small.is_empty() {
            return stacks;
        }
        for k in small {
            if let Some(v) = stacks.remove(&k) {
                let parent = k.rsplit_once(';').map(|(p, _)| p.to_string()).unwrap_or(k);
                *stacks.entry(parent).or_default() += v;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trial(text: &str) -> Stacks {
        parse(text).unwrap()
    }

    #[test]
    fn shares_are_per_trial_with_an_interval_and_recursion_counts_once() {
        let a = trial(
            "main;<module> (t.py);f (t.py) 70\nmain;<module> (t.py);g (t.py);g (t.py) 30\nforked;h (t.py) 50\n",
        );
        let b = trial(
            "main;<module> (t.py);f (t.py) 60\nmain;<module> (t.py);g (t.py) 40\nforked;h (t.py) 50\n",
        );
        let r = record(
            "py-spy 0.4.3",
            100,
            &[a, b],
            &[("gee".into(), "g".into()), ("none".into(), "nowhere".into())],
            1,
        )
        .unwrap();
        assert_eq!(r.trials, 2);
        assert_eq!(r.samples, 150.0);
        assert_eq!(r.lanes["main"], 100.0);
        assert_eq!(r.lanes["forked"], 50.0);
        let find = |lane: &str, f: &str| {
            r.functions.iter().find(|x| x.lane == lane && x.function == f).unwrap().clone()
        };
        let m = find("main", "<module> (t.py)");
        assert!((m.inclusive.median - 100.0 / 150.0).abs() < 1e-12);
        assert_eq!(m.own.median, 0.0);
        let f = find("main", "f (t.py)");
        assert!((f.own.median - 65.0 / 150.0).abs() < 1e-12, "{f:?}");
        assert!(f.own.low <= 60.0 / 150.0 + 1e-12 && f.own.high >= 70.0 / 150.0 - 1e-12);
        // g is on the stack twice in a's 30 samples: counted once.
        let g = find("main", "g (t.py)");
        assert!((g.inclusive.median - 35.0 / 150.0).abs() < 1e-12, "{g:?}");
        assert_eq!(r.functions[0].function, "<module> (t.py)");
        assert_eq!(r.stacks["forked;h (t.py)"], 50.0);
        // Inside g: 30 + 40 samples, all with g on top; a target never on
        // the stacks is left out.
        assert_eq!(r.inside.len(), 1);
        assert_eq!(r.inside[0].span, "gee");
        assert_eq!(r.inside[0].samples, 35.0);
        assert_eq!(r.inside[0].top, vec![("main".into(), "g (t.py)".into(), 1.0)]);
    }

    #[test]
    fn small_stacks_fold_into_their_parent_and_keep_every_sample() {
        let mut s = BTreeMap::new();
        s.insert("main;a".to_string(), 100.0);
        s.insert("main;a;b".to_string(), 0.5);
        s.insert("main;a;b;c".to_string(), 0.2);
        let p = prune(s, 1.0);
        assert_eq!(p.len(), 1);
        assert!((p["main;a"] - 100.7).abs() < 1e-12);
    }

    #[test]
    fn a_line_without_a_count_is_named() {
        assert_eq!(
            parse("main;f (a.py) 3\nmain;g\n").unwrap_err().to_string(),
            "line 2 is not `STACK COUNT`"
        );
        assert!(record("s", 100, &[trial("")], &[], 0).is_none());
    }
}
