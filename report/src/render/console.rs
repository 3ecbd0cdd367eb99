//! What a person reads on the console when a run ends: the stage table,
//! each stage's warnings, spans and input-wait verdict, the mode's blocks
//! that show everywhere (`ModeSection::blocks`), the inputs and where the
//! evidence is.
//! It formats the report's [`View`] as summary.md and report.html do, and
//! writes to any `Write` (the coordinator passes stdout and stderr), so it
//! is tested as bytes.

use super::view::{View, WarningKind};
use crate::rundir::spans::SpanTotals;
use std::io::{self, Write};
use std::path::Path;

/// Writes what a person reads when a run ends (`dir` its run directory):
/// the run's lines to `out`, the machine's warnings to `err`.
pub fn write(v: &View<'_>, dir: &Path, out: &mut dyn Write, err: &mut dyn Write) -> io::Result<()> {
    let r = v.report;
    writeln!(
        out,
        "{}: {} stage(s) in {} worker process(es), {}",
        crate::doc::plain(&v.title),
        v.run.stages,
        v.run.workers,
        v.run.wall.text
    )?;
    // As wide as the longest key (a round's or a sweep's key is long).
    let w = v.stages.iter().map(|s| s.key.len()).max().unwrap_or(0).max(36);
    writeln!(
        out,
        "  {:<w$} {:>6} {:>10} {:>10} {:>12}",
        "stage", "worker", "wall", "CPU", "peak RSS MiB"
    )?;
    for s in &v.stages {
        writeln!(
            out,
            "  {:<w$} {:>6} {:>10} {:>10} {:>12}",
            s.key, s.worker, s.wall.text, s.cpu.text, s.peak_rss.text
        )?;
    }
    // A later round's phase (`BASE#R`) repeats its first round's spans:
    // the console shows round 1's, summary.md and report.json every round's.
    let rounds = r.section.has_rounds();
    let later = |key: &str| rounds && crate::rundir::keys::repeat_of(key).is_some();
    let mut unshown = 0;
    for s in &v.stages {
        let (key, st) = (s.key, s.record);
        for warning in v.warnings_of(key).filter(|w| w.kind != WarningKind::Trial) {
            let label = match warning.kind {
                WarningKind::Memory => "note",
                _ => "warning",
            };
            writeln!(out, "  {label}: {}", crate::doc::plain(&warning.text))?;
        }
        if later(key) && !st.spans.is_empty() {
            unshown += 1;
        } else if let Some(t) = &st.span_totals {
            spans(v, key, t, out)?;
        }
        if !st.command_stages.is_empty() {
            use crate::rundir::spans::{COMMAND_STAGE_COLUMNS as C, command_stage_cells};
            writeln!(out, "  stages inside {key} (its process's own CPU and memory):")?;
            writeln!(
                out,
                "    {:<20} {:>9} {:>9} {:>12} {:>12}  {}",
                C[0], C[1], C[2], C[3], C[4], C[5]
            )?;
            for c in command_stage_cells(&st.command_stages) {
                writeln!(
                    out,
                    "    {:<20} {:>9} {:>9} {:>12} {:>12}  {}",
                    c[0], c[1], c[2], c[3], c[4], c[5]
                )?;
            }
        }
        if let (Some(verdict), "command") =
            (crate::modes::input_wait::preset_verdict(&st.figures), st.stage_kind())
        {
            let trials = if r.trials().is_some() { "; medians over trials" } else { "" };
            writeln!(out, "  input: {key} {verdict}{trials}")?;
        }
    }
    if unshown > 0 {
        writeln!(
            out,
            "  spans: {unshown} later-round phase(s) (`#2` on) not shown here: summary.md and report.json hold each"
        )?;
    }
    v.section.text(out)?;
    if let Some(line) = &v.inputs {
        writeln!(out, "{line}")?;
    }
    for w in v.machine_warnings() {
        writeln!(err, "warning: {}", w.text)?;
    }
    let jobs = r.artifacts.iter().any(|a| a.kind == crate::rundir::jobs::KIND);
    writeln!(
        out,
        "evidence: {}/ (declaration.json, environment.json, report.json{}; summary.md, report.html and plots/ derived from it)",
        dir.display(),
        if jobs { " binding jobs.jsonl.gz" } else { "" }
    )
}

/// Most spans a stage shows on the console (largest self time first);
/// report.json, summary.md and report.html hold them all.
pub const CONSOLE_SPANS: usize = 12;

/// A stage's spans: its totals, then each span's row of the view's spans
/// table, per measurement as summary.md and report.html give them.
fn spans(v: &View<'_>, key: &str, t: &SpanTotals, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "  spans: {key}: {}", crate::rundir::spans::totals_line(t))?;
    let rows: Vec<_> = v.spans.iter().filter(|r| r.stage == key).collect();
    for r in rows.iter().take(CONSOLE_SPANS) {
        let c = &r.cells;
        let concurrent = match c[9].as_str() {
            "0.000 s" => String::new(),
            other => format!(", {other} concurrent"),
        };
        writeln!(
            out,
            "    {} {} call(s), {} per measurement; first {}, median {}, p95 {}, max {}; self {} a measurement ({} of the wall){concurrent}",
            r.span, c[0], c[1], c[2], c[3], c[4], c[6], c[8], c[10]
        )?;
    }
    if rows.len() > CONSOLE_SPANS {
        writeln!(
            out,
            "    and {} more spans (summary.md, report.html, report.json)",
            rows.len() - CONSOLE_SPANS
        )?;
    }
    Ok(())
}
