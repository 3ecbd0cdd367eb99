//! `coordinator campaign --export-trace FILE`: a campaign as a Chrome Trace
//! Event file, from its report alone. A track per step; in it the step, each
//! trial, and inside a trial the run that was killed (interrupted steps) and
//! the run that was measured. Times are seconds from the campaign's start on
//! the coordinator's monotonic clock (each run's `span_s`), in microseconds;
//! each run's own trace (`coordinator render RUN --export-trace`) shows its
//! processes.

use super::report::CampaignReport;
use crate::render::trace::{Slice, Untimed, emit_nested, meta, track_name};
use serde_json::json;

pub fn chrome(r: &CampaignReport) -> Result<Vec<u8>, Untimed> {
    let trials = r.steps.iter().flat_map(|s| &s.trials);
    if trials.clone().any(|t| t.span_s.is_none()) {
        return Err(Untimed("campaign report", "run times"));
    }
    let us = |s: f64| ((s * 1e9).round() / 1e3).max(0.0);
    let mut events =
        vec![meta(0, "process_name", json!({ "name": format!("stagebench campaign {}", r.name) }))];
    for (i, step) in r.steps.iter().enumerate() {
        let tid = i as u64 + 1;
        track_name(&mut events, tid, &format!("step {} ({})", step.name, step.kind));
        let mut slices = Vec::new();
        let (mut first, mut last) = (f64::INFINITY, 0.0f64);
        for (k, t) in step.trials.iter().enumerate() {
            let [b, e] = t.span_s.unwrap_or_default().map(us);
            let killed = t.killed.as_ref().and_then(|k| k.span_s).map(|s| s.map(us));
            let begin = killed.map_or(b, |[kb, _]| kb.min(b));
            slices.push(Slice::new(format!("trial {}", k + 1), "trial", begin, e.max(begin), 1));
            if let Some([kb, ke]) = killed {
                let at = step.kill_at.as_deref().unwrap_or("its point");
                slices.push(Slice::new(format!("killed at {at}"), "run", kb, ke.min(b).max(kb), 2));
            }
            slices.push(Slice::new(format!("{} run", step.kind), "run", b, e.max(b), 2));
            first = first.min(begin);
            last = last.max(e);
        }
        if first.is_finite() {
            slices.push(Slice::new(step.name.clone(), "step", first, last, 0));
        }
        emit_nested(&mut events, tid, slices);
    }
    let trace = json!({
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": { "schema": crate::render::trace::SCHEMA, "campaign": r.name, "clock": "microseconds from the campaign's start" },
    });
    Ok(serde_json::to_vec(&trace).expect("a trace serialises"))
}
