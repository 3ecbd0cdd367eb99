//! The run's worker processes on one time axis, as `--export-trace` shows
//! them in Perfetto: a row per process from launch to exit, its start-up
//! and each job it ran (what report.json holds: a preparation's jobs are in
//! jobs.jsonl.gz, and its rows show the processes only). An inline `<svg>`
//! whose inner drawing the page's script zooms (wheel) and resets
//! (double click).

use crate::fmt::duration;
use crate::modes::Report;
use maud::{Markup, html};

const WIDTH: f64 = 1180.0;
/// A label's character at 11 px monospace, wide enough for DejaVu Sans Mono.
const CHAR_PX: f64 = 6.8;
const ROW: f64 = 18.0;

/// Colours for stages, in plan order (repeating).
pub const PALETTE: [&str; 8] =
    ["#4c78a8", "#f58518", "#54a24b", "#b279a2", "#e45756", "#72b7b2", "#eeca3b", "#9d755d"];

/// The timeline of `r`, or None without process start times (a report
/// from before they were kept).
pub fn svg(r: &Report) -> Option<Markup> {
    if r.workers.is_empty() || r.workers.iter().any(|w| w.start_s.is_none()) {
        return None;
    }
    let end = r
        .workers
        .iter()
        .map(|w| w.start_s.unwrap_or(0.0) + w.wall_s)
        .fold(r.run_wall_s, f64::max)
        .max(1e-9);
    let label =
        |w: &crate::rundir::report::ProcessRecord| format!("worker {} · {}", w.rank, w.phase);
    let longest = r.workers.iter().map(|w| label(w).chars().count()).max().unwrap_or(0);
    // The labels' column, as wide as the longest, up to a third of the width.
    let left = (longest as f64 * CHAR_PX + 12.0).min(WIDTH / 3.0).round();
    let inner = WIDTH - left;
    let x = |s: f64| (s / end * inner * 10.0).round() / 10.0;
    let colour = |stage: &str| {
        let order = r.stages.get(stage).map_or(0, |st| st.order);
        PALETTE[order % PALETTE.len()]
    };
    let h = ROW * r.workers.len() as f64 + 24.0;
    Some(html! {
        svg.timeline viewBox=(format!("0 0 {WIDTH} {h}")) width=(WIDTH) height=(h) {
            @for (i, w) in r.workers.iter().enumerate() {
                text x="4" y=(ROW * i as f64 + 13.0) { (label(w)) }
            }
            svg.zoom x=(left) y="0" width=(inner) height=(h - 24.0)
                viewBox=(format!("0 0 {inner} {}", h - 24.0)) preserveAspectRatio="none" {
                @for (i, w) in r.workers.iter().enumerate() {
                    @let start = w.start_s.unwrap_or(0.0);
                    @let y = ROW * i as f64 + 2.0;
                    rect.process x=(x(start)) y=(y) width=(x(w.wall_s).max(0.5)) height=(ROW - 4.0) {
                        title { "worker " (w.rank) " (" (w.phase) "): " (duration(w.wall_s)) ", CPU " (duration(w.cpu_s)) ", " (w.exit) }
                    }
                    @if let Some(c) = w.connected_s {
                        rect.startup x=(x(start)) y=(y) width=(x((c - start).max(0.0)).max(0.5)) height=(ROW - 4.0) {
                            title { "start-up: " (duration(c - start)) }
                        }
                    }
                    @for j in &w.jobs {
                        rect x=(x(j.start_s)) y=(y) width=(x(j.end_s - j.start_s).max(0.5)) height=(ROW - 4.0) fill=(colour(&j.stage)) {
                            title { (j.stage) ": " (duration(j.end_s - j.start_s)) }
                        }
                    }
                }
            }
            text x=(left) y=(h - 6.0) { "0 s" }
            text.end x=(WIDTH) y=(h - 6.0) { (duration(end)) " from the run's start (wheel to zoom, double-click to reset)" }
        }
    })
}
