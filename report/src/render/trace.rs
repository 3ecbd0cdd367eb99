//! `--export-trace FILE`: a run as a Chrome Trace Event file, which
//! Perfetto (ui.perfetto.dev) and chrome://tracing open. Derived from
//! report.json alone: every worker process (`workers[]`) is a track of its
//! own, with the process's life as a slice, its start-up (launch to
//! accepted handshake) and each job it ran nested inside; a first track
//! holds the phases. A cold-prep worker's jobs are its series (named by
//! their phase, never by series), a trial's process holds its one trial.
//!
//! Timestamps are microseconds from the run's start on the coordinator's
//! monotonic clock: no wall-clock time, host or path appears. Slices are
//! `B`/`E` pairs; within a track each ends before the next begins or
//! nests inside its parent (times are clamped into the parent, which only
//! moves a boundary by the clocks' rounding).
//!
//! Inside a job: its timed slices (a command's spans that gave a start, the
//! loader's waits); spans that overlap without nesting get lanes of their
//! own. A campaign's trace (`crate::campaign::trace`) uses the same parts.

use crate::modes::Report;
use serde_json::{Value, json};
use std::collections::BTreeMap;

pub const SCHEMA: &str = "stagebench.trace";

/// One slice on a track, in microseconds; `depth` orders a parent before
/// a child that begins and ends with it.
pub struct Slice {
    name: String,
    cat: &'static str,
    begin: f64,
    end: f64,
    depth: u8,
    args: Value,
}

impl Slice {
    pub fn new(
        name: impl Into<String>,
        cat: &'static str,
        begin: f64,
        end: f64,
        depth: u8,
    ) -> Slice {
        Slice { name: name.into(), cat, begin, end, depth, args: json!({}) }
    }
}

/// A report made before stagebench kept the times a trace is drawn from.
#[derive(Debug, thiserror::Error)]
#[error(
    "this {0} has no {1} (it was made by a stagebench older than --export-trace); run it again to trace it"
)]
pub struct Untimed(pub &'static str, pub &'static str);

/// The trace of `r`, or why it cannot have one.
pub fn chrome(r: &Report) -> Result<Vec<u8>, Untimed> {
    if r.workers.is_empty() || r.workers.iter().any(|w| w.start_s.is_none()) {
        return Err(Untimed("report", "process start times"));
    }
    // Nanosecond resolution: the clocks' own, without float noise.
    let us = |s: f64| ((s * 1e9).round() / 1e3).max(0.0);
    let mut events =
        vec![meta(0, "process_name", json!({ "name": format!("stagebench {} run", r.mode()) }))];
    track_name(&mut events, 0, "phases");

    // The phases, each from its first launch to its last exit.
    let mut phases: BTreeMap<&str, (f64, f64)> = BTreeMap::new();
    for w in &r.workers {
        let start = w.start_s.unwrap_or(0.0);
        let e = phases.entry(w.phase.as_str()).or_insert((f64::INFINITY, 0.0));
        *e = (e.0.min(start), e.1.max(start + w.wall_s));
    }
    let phase_slices: Vec<Slice> = phases
        .into_iter()
        .map(|(name, (b, e))| Slice::new(name, "phase", us(b), us(e), 0))
        .collect();
    emit_nested(&mut events, 0, phase_slices);

    for w in &r.workers {
        let tid = w.rank as u64 + 1;
        track_name(&mut events, tid, &format!("worker {}", w.rank));
        let begin = us(w.start_s.unwrap_or(0.0));
        let end = begin.max(us(w.start_s.unwrap_or(0.0) + w.wall_s));
        let clamp = |t: f64| t.clamp(begin, end);
        let mut track = vec![Slice {
            args: json!({ "phase": w.phase, "exit": w.exit, "cpu_s": w.cpu_s, "peak_rss_bytes": w.peak_rss_bytes }),
            ..Slice::new(format!("worker {}", w.rank), "process", begin, end, 0)
        }];
        // Slices that overlap without nesting (spans from threads) go to
        // lanes of their own below the worker's track.
        let mut lanes: Vec<Vec<Slice>> = Vec::new();
        let mut at = begin;
        if let Some(c) = w.connected_s {
            let c = clamp(us(c));
            track.push(Slice::new("start-up", "lifecycle", begin, c, 1));
            at = c;
        }
        for j in &w.jobs {
            // One job at a time: each starts after the last ended.
            let b = clamp(us(j.start_s)).max(at);
            let e = clamp(us(j.end_s)).max(b);
            track.push(Slice::new(j.stage.clone(), "stage", b, e, 1));
            let parts: Vec<(Slice, bool)> = j
                .slices
                .iter()
                .map(|s| {
                    let sb = us(s.start_s).clamp(b, e);
                    (Slice::new(s.name.clone(), "span", sb, us(s.end_s).clamp(sb, e), 2), s.beside)
                })
                .collect();
            // A span of another thread or a forked child is never a parent
            // of the main thread's: it is drawn in a lane of its own.
            let (beside, main): (Vec<_>, Vec<_>) = parts.into_iter().partition(|p| p.1);
            let (nested, overlapping) = into_lanes(main, |p| (p.0.begin, p.0.end));
            let (first, more) = into_lanes(beside, |p| (p.0.begin, p.0.end));
            track.extend(nested.into_iter().map(|p| p.0));
            let beside = std::iter::once(first).filter(|l| !l.is_empty()).chain(more);
            for (k, lane) in overlapping.into_iter().chain(beside).enumerate() {
                let lane: Vec<Slice> = lane.into_iter().map(|p| p.0).collect();
                match lanes.get_mut(k) {
                    Some(l) => l.extend(lane),
                    None => lanes.push(lane),
                }
            }
            at = e;
        }
        if at < end {
            track.push(Slice::new("shutdown", "lifecycle", at, end, 1));
        }
        emit_nested(&mut events, tid, track);
        for (k, lane) in lanes.into_iter().enumerate() {
            // At most MAX_SLICES lanes a worker: ids never collide.
            let lane_tid = OVERFLOW_TID + w.rank as u64 * protocol::MAX_SLICES as u64 + k as u64;
            track_name(
                &mut events,
                lane_tid,
                &format!("worker {}: overlapping spans {}", w.rank, k + 1),
            );
            emit_nested(&mut events, lane_tid, lane);
        }
    }
    let trace = json!({
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": { "schema": SCHEMA, "mode": r.mode(), "clock": "microseconds from the run's start" },
    });
    Ok(serde_json::to_vec(&trace).expect("a trace serialises"))
}

/// Track ids of the lanes for spans that overlap without nesting.
const OVERFLOW_TID: u64 = 1 << 20;

/// Intervals `(begin, end)` of `items` split into those that nest in one
/// track (each inside the one open before it, or after it ended) and
/// lanes for the rest, each lane nesting on its own: a span that overlaps
/// another without nesting in it ran beside it (another thread, a forked
/// child). In begin order, the longer first; the trace and the flame
/// graphs (`super::folded`) place spans by this one rule.
pub(crate) fn into_lanes<T>(
    mut items: Vec<T>,
    at: impl Fn(&T) -> (f64, f64),
) -> (Vec<T>, Vec<Vec<T>>) {
    items.sort_by(|x, y| {
        let ((xb, xe), (yb, ye)) = (at(x), at(y));
        xb.total_cmp(&yb).then(ye.total_cmp(&xe))
    });
    let mut main = Vec::new();
    let mut open = Vec::new();
    // Each lane's items, and the ends of those still open in it.
    let mut lanes: Vec<(Vec<T>, Vec<f64>)> = Vec::new();
    for item in items {
        let span = at(&item);
        if nests(&mut open, span) {
            main.push(item);
            continue;
        }
        match lanes.iter_mut().find(|(_, open)| fits(open, span)) {
            Some((lane, open)) => {
                nests(open, span);
                lane.push(item);
            }
            None => lanes.push((vec![item], vec![span.1])),
        }
    }
    (main, lanes.into_iter().map(|(lane, _)| lane).collect())
}

/// Whether `(begin, end)` (in begin order) nests among the intervals still
/// open, whose ends are `open`; if so it is opened.
fn nests(open: &mut Vec<f64>, (begin, end): (f64, f64)) -> bool {
    while open.last().is_some_and(|e| *e <= begin) {
        open.pop();
    }
    if open.last().is_some_and(|e| *e < end) {
        return false;
    }
    open.push(end);
    true
}

/// Whether `(begin, end)` would nest in a lane whose open ends are `open`
/// (without opening it).
fn fits(open: &[f64], (begin, end): (f64, f64)) -> bool {
    let mut open = open.to_vec();
    nests(&mut open, (begin, end))
}

pub fn meta(tid: u64, name: &str, args: Value) -> Value {
    json!({ "ph": "M", "pid": 1, "tid": tid, "name": name, "args": args })
}

pub fn track_name(events: &mut Vec<Value>, tid: u64, name: &str) {
    events.push(meta(tid, "thread_name", json!({ "name": name })));
    events.push(meta(tid, "thread_sort_index", json!({ "sort_index": tid })));
}

/// A track's slices, which nest, as `B`/`E` pairs in time order: a slice
/// closes before the next one that begins after it ends.
pub fn emit_nested(events: &mut Vec<Value>, tid: u64, mut slices: Vec<Slice>) {
    slices.sort_by(|a, b| {
        a.begin.total_cmp(&b.begin).then(b.end.total_cmp(&a.end)).then(a.depth.cmp(&b.depth))
    });
    let event = |ph: &str, s: &Slice, ts: f64| {
        let mut e =
            json!({ "ph": ph, "pid": 1, "tid": tid, "ts": ts, "name": s.name, "cat": s.cat });
        if ph == "B" && s.args.as_object().is_some_and(|a| !a.is_empty()) {
            e["args"] = s.args.clone();
        }
        e
    };
    let mut open: Vec<Slice> = Vec::new();
    for s in slices {
        while open.last().is_some_and(|o| o.end <= s.begin) {
            let o = open.pop().expect("checked");
            events.push(event("E", &o, o.end));
        }
        events.push(event("B", &s, s.begin));
        open.push(s);
    }
    while let Some(o) = open.pop() {
        events.push(event("E", &o, o.end));
    }
}
