//! What a person reads on the console when a run ends: the stage table,
//! each stage's warnings, spans and input-wait verdict, the mode's own
//! lines (`ModeSection::console`), the inputs and where the evidence is. A
//! view of report.json like summary.md, printed instead of written.

use crate::fmt::mib;
use crate::modes::Report;
use std::path::Path;

/// Prints what a person reads on stdout when a run ends (`dir` its run
/// directory). `requested_workers`: what `--workers` asked for (cold-prep
/// starts no more processes than series).
pub fn print(r: &Report, dir: &Path, requested_workers: u32) {
    println!(
        "stagebench {} run: {} stage(s) in {} worker process(es), {:.3} s",
        r.mode(),
        r.stages.len(),
        r.workers.len(),
        r.run_wall_s
    );
    // As wide as the longest key (a round's or a sweep's key is long).
    let w = r.stages.keys().map(String::len).max().unwrap_or(0).max(36);
    println!(
        "  {:<w$} {:>6} {:>10} {:>10} {:>12}",
        "stage", "worker", "wall s", "cpu s", "peak RSS"
    );
    let mut rows: Vec<_> = r.stages.iter().collect();
    rows.sort_by_key(|(_, st)| st.order);
    for (key, st) in rows {
        let worker = match st.worker {
            Some(w) => w.to_string(),
            None => format!("{}x", st.processes),
        };
        println!(
            "  {:<w$} {:>6} {:>10.3} {:>10.3} {:>12}",
            key,
            worker,
            st.wall_s,
            st.cpu_s,
            mib(st.peak_rss_bytes)
        );
    }
    let mut ordered: Vec<_> = r.stages.iter().collect();
    ordered.sort_by_key(|(_, st)| st.order);
    // A later round's phase (`BASE#R`) repeats its first round's spans:
    // the console shows round 1's, summary.md and report.json every round's.
    let rounds = r.section.has_rounds();
    let later = |key: &str| rounds && crate::rundir::keys::repeat_of(key).is_some();
    let mut unshown = 0;
    for (key, st) in ordered {
        if let Some(w) = st.spans_not_found_warning(key) {
            println!("  warning: {w}");
        }
        for w in &st.span_warnings {
            println!("  warning: {key}: {w}");
        }
        if let Some(note) = st.memory_note(key) {
            println!("  note: {note}");
        }
        if later(key) && !st.spans.is_empty() {
            unshown += 1;
        } else {
            for line in crate::rundir::spans::lines(key, &st.spans, st.span_totals.as_ref()) {
                println!("  {line}");
            }
        }
        if !st.command_stages.is_empty() {
            use crate::rundir::spans::{COMMAND_STAGE_COLUMNS as C, command_stage_cells};
            println!("  stages inside {key} (its process's own CPU and memory):");
            println!(
                "    {:<20} {:>9} {:>9} {:>12} {:>12}  {}",
                C[0], C[1], C[2], C[3], C[4], C[5]
            );
            for c in command_stage_cells(&st.command_stages) {
                println!(
                    "    {:<20} {:>9} {:>9} {:>12} {:>12}  {}",
                    c[0], c[1], c[2], c[3], c[4], c[5]
                );
            }
        }
        if let (Some(v), "command") =
            (crate::modes::input_wait::preset_verdict(&st.figures), st.stage_kind())
        {
            let trials = if r.trials().is_some() { "; medians over trials" } else { "" };
            println!("  input: {key} {v}{trials}");
        }
    }
    if unshown > 0 {
        println!(
            "  spans: {unshown} later-round phase(s) (`#2` on) not shown here: summary.md and report.json hold each"
        );
    }
    r.section.console(r, requested_workers);
    if let Some(line) = r.inputs_line() {
        println!("{line}");
    }
    for w in &r.machine_warnings {
        eprintln!("warning: {w}");
    }
    let jobs = r.artifacts.iter().any(|a| a.kind == crate::rundir::jobs::KIND);
    println!(
        "evidence: {}/ (declaration.json, environment.json, report.json{}; summary.md, report.html and plots/ derived from it)",
        dir.display(),
        if jobs { " binding jobs.jsonl.gz" } else { "" }
    );
}
