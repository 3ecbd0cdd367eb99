//! Where a stage's time went, as stacks of span names: the flame graphs of
//! report.html and `--export-folded FILE`, in the collapsed format that
//! flamegraph.pl, inferno and speedscope read (`stage;outer;inner COUNT`).
//!
//! Built from what report.json records. A job's timed slices give the
//! nesting: a span the helper saw on another thread or in a forked child
//! (`beside`) goes under the frame [`BESIDE`]; among the rest, a span
//! wholly inside another that was open is its child (the trace's rule,
//! `super::trace::into_lanes`), and one that overlaps another without
//! nesting in it goes beside the main thread too, in a lane of its own. Each
//! stack's count is its **self time per trial** in microseconds: the time
//! in it less its children, summed over the stage's counted jobs (warm-up
//! trials left out) and divided by their number. The stage is the first
//! frame; its own self time is the wall outside every span.
//!
//! Where report.json holds no slices for a stage (a preparation's jobs are
//! in jobs.jsonl.gz, or an old report) the stacks are flat, one frame per
//! span under the stage, sized by its self time per measurement from the
//! span records; [`Stacks::nested`] says which.

use crate::modes::Report;
use crate::rundir::report::{StageRecord, TimedSlice};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The frame that holds the spans which ran beside the main thread.
pub const BESIDE: &str = "[beside the main thread]";

/// One stage's stacks.
#[derive(Debug, Default)]
pub struct Stacks {
    pub stage: String,
    /// Frames (stage first) → self seconds per measurement.
    pub frames: BTreeMap<Vec<String>, f64>,
    /// Frames → self seconds in each counted job, in start order (nested
    /// stacks only): the samples two runs' stacks are compared by.
    pub samples: BTreeMap<Vec<String>, Vec<f64>>,
    /// Drawn from the slices' nesting (else flat, from the span records).
    pub nested: bool,
    /// The measurements the figures are per (counted jobs or trials).
    pub measurements: u64,
    /// Calls the slices hold against the calls the span records count:
    /// equal when every call is drawn.
    pub calls_drawn: u64,
    pub calls: u64,
}

impl Stacks {
    /// The stacks as collapsed lines, counts in whole microseconds (a
    /// stack under half a microsecond per measurement is left out).
    pub fn lines(&self) -> Vec<String> {
        self.frames
            .iter()
            .filter_map(|(stack, s)| {
                let us = (s * 1e6).round();
                (us >= 1.0).then(|| format!("{} {}", stack.join(";"), us as u64))
            })
            .collect()
    }

    /// Every span call is in the picture.
    pub fn complete(&self) -> bool {
        self.calls_drawn == self.calls
    }
}

/// A span name as a frame: `;` separates frames and a line ends a stack,
/// so each becomes `_`, and a tab or carriage return a space.
pub fn frame(name: &str) -> String {
    name.chars()
        .map(|c| match c {
            ';' | '\n' => '_',
            '\t' | '\r' => ' ',
            c => c,
        })
        .collect()
}

/// Every stage that has spans, in plan order.
pub fn stacks(r: &Report) -> Vec<Stacks> {
    r.ordered()
        .into_iter()
        .filter(|(_, st)| !st.spans.is_empty())
        .map(|(key, st)| of_stage(r, key, st))
        .collect()
}

/// The collapsed text of every stage's stacks (`--export-folded`): its
/// spans, then its sampled stacks (`--sample`) under `STAGE [sampled]`,
/// each sample counted as 1/RATE s of running time, so both are µs per
/// trial.
pub fn text(r: &Report) -> String {
    let mut out = String::new();
    for s in stacks(r) {
        for line in s.lines() {
            let _ = writeln!(out, "{line}");
        }
    }
    for (key, _, x) in super::sampled::stages(r) {
        let top = format!("{} [sampled]", frame(key));
        for (stack, per_trial) in &x.stacks {
            let us = (per_trial * 1e6 / f64::from(x.rate_hz.max(1))).round() as u64;
            if us > 0 {
                let _ = writeln!(out, "{top};{stack} {us}");
            }
        }
    }
    out
}

fn of_stage(r: &Report, key: &str, st: &StageRecord) -> Stacks {
    let warmup = r.section.trials().and_then(|t| t.get(key)).map_or(0, |t| t.warmup as usize);
    let mut jobs: Vec<_> =
        r.workers.iter().flat_map(|w| &w.jobs).filter(|j| j.stage == key).collect();
    jobs.sort_by(|a, b| a.start_s.total_cmp(&b.start_s));
    let counted = jobs.get(warmup..).unwrap_or_default();
    let calls = st.spans.values().map(|s| s.calls).sum();
    let stage = frame(key);
    if counted.is_empty() || counted.iter().all(|j| j.slices.is_empty()) {
        return flat(stage, st, calls);
    }
    let mut per_job = Vec::new();
    let mut drawn = 0;
    for job in counted {
        let mut frames = BTreeMap::new();
        let (b, e) = (job.start_s, job.end_s.max(job.start_s));
        let clamped: Vec<TimedSlice> = job
            .slices
            .iter()
            .map(|s| {
                let sb = s.start_s.clamp(b, e);
                TimedSlice { end_s: s.end_s.clamp(sb, e), start_s: sb, ..s.clone() }
            })
            .collect();
        drawn += clamped.len() as u64;
        let (beside, main): (Vec<_>, Vec<_>) = clamped.into_iter().partition(|s| s.beside);
        let (main, mut lanes) = super::trace::into_lanes(main, |s| (s.start_s, s.end_s));
        let (first, more) = super::trace::into_lanes(beside, |s| (s.start_s, s.end_s));
        lanes.extend(std::iter::once(first).filter(|l| !l.is_empty()).chain(more));
        let top = self_times(std::slice::from_ref(&stage), &main, &mut frames);
        *frames.entry(vec![stage.clone()]).or_insert(0.0) += e - b - top;
        for lane in lanes {
            self_times(&[stage.clone(), BESIDE.into()], &lane, &mut frames);
        }
        per_job.push(frames);
    }
    // Each stack's self time in every counted job (0 where a job had none).
    let mut samples: BTreeMap<Vec<String>, Vec<f64>> = BTreeMap::new();
    for (i, frames) in per_job.iter().enumerate() {
        for (stack, s) in frames {
            samples.entry(stack.clone()).or_insert_with(|| vec![0.0; per_job.len()])[i] = *s;
        }
    }
    let n = per_job.len() as f64;
    let frames = samples.iter().map(|(k, xs)| (k.clone(), xs.iter().sum::<f64>() / n)).collect();
    Stacks {
        stage,
        frames,
        samples,
        nested: true,
        measurements: counted.len() as u64,
        calls_drawn: drawn,
        calls,
    }
}

/// Adds the self time of each slice of `nested` (in begin order, each
/// inside the one open before it or after it ended) under `root`; returns
/// the time in its top-level slices.
fn self_times(
    root: &[String],
    nested: &[TimedSlice],
    frames: &mut BTreeMap<Vec<String>, f64>,
) -> f64 {
    // The open slices: their stack, end, length and children's length.
    let mut open: Vec<(Vec<String>, f64, f64, f64)> = Vec::new();
    let mut top = 0.0;
    let close = |o: (Vec<String>, f64, f64, f64), frames: &mut BTreeMap<Vec<String>, f64>| {
        *frames.entry(o.0).or_insert(0.0) += (o.2 - o.3).max(0.0);
    };
    for s in nested {
        while open.last().is_some_and(|o| o.1 <= s.start_s) {
            close(open.pop().expect("checked"), frames);
        }
        let length = s.end_s - s.start_s;
        let mut stack = match open.last_mut() {
            Some(parent) => {
                parent.3 += length;
                parent.0.clone()
            }
            None => {
                top += length;
                root.to_vec()
            }
        };
        stack.push(frame(&s.name));
        open.push((stack, s.end_s, length, 0.0));
    }
    while let Some(o) = open.pop() {
        close(o, frames);
    }
    top
}

/// One frame per span under the stage, from the span records.
fn flat(stage: String, st: &StageRecord, calls: u64) -> Stacks {
    let Some(t) = &st.span_totals else { return Stacks { stage, ..Default::default() } };
    let n = t.measurements.max(1) as f64;
    let mut frames = BTreeMap::new();
    frames.insert(vec![stage.clone()], t.outside_s.max(0.0) / n);
    for (name, s) in &st.spans {
        let main = s.self_s - s.concurrent_s;
        if main > 0.0 {
            frames.insert(vec![stage.clone(), frame(name)], main / n);
        }
        if s.concurrent_s > 0.0 {
            frames.insert(vec![stage.clone(), BESIDE.into(), frame(name)], s.concurrent_s / n);
        }
    }
    Stacks {
        stage,
        frames,
        samples: BTreeMap::new(),
        nested: false,
        measurements: t.measurements,
        calls_drawn: 0,
        calls,
    }
}

#[cfg(test)]
pub(crate) mod tests;
