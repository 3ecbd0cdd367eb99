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
//! Not yet in the trace: a campaign's steps, a command's spans and the fit
//! epoch's loader waits (the report keeps their totals, not their times).

use crate::modes::Report;
use serde_json::{Value, json};
use std::collections::BTreeMap;

pub(crate) const SCHEMA: &str = "stagebench.trace";

/// One slice on a track, in microseconds.
struct Slice {
    name: String,
    cat: &'static str,
    begin: f64,
    end: f64,
    args: Value,
}

/// The trace of `r`, or why it cannot have one (a report from before
/// stagebench kept process times).
pub(crate) fn chrome(r: &Report) -> Result<Vec<u8>, String> {
    if r.workers.is_empty() || r.workers.iter().any(|w| w.start_s.is_none()) {
        return Err("this report has no process start times (it was made by a stagebench older than --export-trace); run it again to trace it".into());
    }
    // Nanosecond resolution: the clocks' own, without float noise.
    let us = |s: f64| ((s * 1e9).round() / 1e3).max(0.0);
    let mut events =
        vec![meta(0, "process_name", json!({ "name": format!("stagebench {} run", r.mode()) }))];
    events.push(meta(0, "thread_name", json!({ "name": "phases" })));
    events.push(meta(0, "thread_sort_index", json!({ "sort_index": 0 })));

    // The phases, each from its first launch to its last exit.
    let mut phases: BTreeMap<&str, (f64, f64)> = BTreeMap::new();
    for w in &r.workers {
        let start = w.start_s.unwrap_or(0.0);
        let e = phases.entry(w.phase.as_str()).or_insert((f64::INFINITY, 0.0));
        *e = (e.0.min(start), e.1.max(start + w.wall_s));
    }
    let mut phase_slices: Vec<Slice> = phases
        .into_iter()
        .map(|(name, (b, e))| Slice {
            name: name.to_string(),
            cat: "phase",
            begin: us(b),
            end: us(e),
            args: json!({}),
        })
        .collect();
    phase_slices.sort_by(|a, b| a.begin.total_cmp(&b.begin));
    push_track(&mut events, 0, &phase_slices, &[]);

    for w in &r.workers {
        let tid = w.rank as u64 + 1;
        events.push(meta(tid, "thread_name", json!({ "name": format!("worker {}", w.rank) })));
        events.push(meta(tid, "thread_sort_index", json!({ "sort_index": tid })));
        let begin = us(w.start_s.unwrap_or(0.0));
        let end = begin.max(us(w.start_s.unwrap_or(0.0) + w.wall_s));
        let life = Slice {
            name: format!("worker {}", w.rank),
            cat: "process",
            begin,
            end,
            args: json!({ "phase": w.phase, "exit": w.exit, "cpu_s": w.cpu_s, "peak_rss_bytes": w.peak_rss_bytes }),
        };
        let clamp = |t: f64| t.clamp(begin, end);
        let mut inner = Vec::new();
        let mut at = begin;
        if let Some(c) = w.connected_s {
            let c = clamp(us(c));
            inner.push(Slice {
                name: "start-up".into(),
                cat: "lifecycle",
                begin,
                end: c,
                args: json!({}),
            });
            at = c;
        }
        for j in &w.jobs {
            // One job at a time: each starts after the last ended.
            let b = clamp(us(j.start_s)).max(at);
            let e = clamp(us(j.end_s)).max(b);
            inner.push(Slice {
                name: j.stage.clone(),
                cat: "stage",
                begin: b,
                end: e,
                args: json!({}),
            });
            at = e;
        }
        if at < end {
            inner.push(Slice {
                name: "shutdown".into(),
                cat: "lifecycle",
                begin: at,
                end,
                args: json!({}),
            });
        }
        push_track(&mut events, tid, std::slice::from_ref(&life), &inner);
    }
    let trace = json!({
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": { "schema": SCHEMA, "mode": r.mode(), "clock": "microseconds from the run's start" },
    });
    Ok(serde_json::to_vec(&trace).expect("a trace serialises"))
}

fn meta(tid: u64, name: &str, args: Value) -> Value {
    json!({ "ph": "M", "pid": 1, "tid": tid, "name": name, "args": args })
}

/// Outer slices on `tid`, each followed by the inner ones that fall in it.
fn push_track(events: &mut Vec<Value>, tid: u64, outer: &[Slice], inner: &[Slice]) {
    let event = |ph: &str, s: &Slice, ts: f64| {
        let mut e =
            json!({ "ph": ph, "pid": 1, "tid": tid, "ts": ts, "name": s.name, "cat": s.cat });
        if ph == "B" && s.args.as_object().is_some_and(|a| !a.is_empty()) {
            e["args"] = s.args.clone();
        }
        e
    };
    for o in outer {
        events.push(event("B", o, o.begin));
        for i in inner.iter().filter(|i| o.begin <= i.begin && i.end <= o.end) {
            events.push(event("B", i, i.begin));
            events.push(event("E", i, i.end));
        }
        events.push(event("E", o, o.end));
    }
}
