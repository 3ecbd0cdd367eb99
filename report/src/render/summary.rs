//! `summary.md`: a Markdown table a person can paste into an issue.

use super::view::{STAGE_COLUMNS, View, WarningKind};
use crate::fmt::{duration, mib_number as mib};
use crate::modes::Report;
use std::fmt::Write as _;

/// The stages that started processes of their own (commands, pipeline
/// stages) or left some behind: their tree's peak by each bound, and what
/// the worker had to kill.
fn process_trees(s: &mut String, v: &View<'_>) {
    let r = v.report;
    let rows: Vec<_> = r
        .ordered()
        .into_iter()
        .filter(|(_, st)| {
            st.sum_of_peaks_bytes > st.peak_rss_bytes
                || st.leaked_processes.count > 0
                || st.memory_note("").is_some()
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(s, "\n## Process trees\n");
    let _ = writeln!(
        s,
        "Each stage with processes of its own, measured whole: the peak of all its processes at once (a lower bound when `sampled`) and the sum of each one's own peak (an upper bound).\n"
    );
    let _ = writeln!(s, "| stage | tree peak MiB | method | sum of peaks MiB | left running |");
    let _ = writeln!(s, "|---|---:|---|---:|---|");
    for (key, st) in &rows {
        let leaked = match st.leaked_processes.count {
            0 => "none".to_string(),
            n => format!("{n}: {}", st.leaked_processes.names.join(", ")),
        };
        let _ = writeln!(
            s,
            "| `{key}` | {} | {} | {} | {leaked} |",
            mib(st.tree_peak_bytes),
            st.tree_peak_method,
            mib(st.sum_of_peaks_bytes)
        );
    }
    for w in v.warnings.iter().filter(|w| w.kind == WarningKind::Memory) {
        let _ = writeln!(s, "\nNote: {}.", w.text);
    }
    for w in v.warnings.iter().filter(|w| w.kind == WarningKind::Leaked) {
        let _ = writeln!(s, "\nWarning: {}. Run with `--leaks fail` to fail such a stage.", w.text);
    }
}

/// What each stage that said anything ran on (thread settings, the
/// commit, the Python helper's interpreter and libraries).
fn runtimes(s: &mut String, r: &Report) {
    let mut rows: Vec<_> =
        r.stages.iter().filter_map(|(k, st)| Some((k, st.order, st.runtime.as_ref()?))).collect();
    if rows.is_empty() {
        return;
    }
    rows.sort_by_key(|(_, order, _)| *order);
    let _ = writeln!(
        s,
        "
## What it ran on
"
    );
    for (key, _, runtime) in rows {
        let _ = writeln!(s, "- `{key}`: {}", runtime.describe());
    }
}

/// Every stage's `--span` targets that never matched, as warnings; and
/// the input-wait verdict of a command stage timed with `preset:torch`.
fn spans_not_found(s: &mut String, v: &View<'_>) {
    for row in &v.stages {
        let (key, st) = (row.key, row.record);
        // A stage's span warnings are said with its spans' table; one
        // with no spans (a sampled stage with no samples) says them here.
        let shown_here = |w: &&crate::render::view::Warning| {
            w.kind == WarningKind::SpansNotFound
                || (w.kind == WarningKind::Span && st.span_totals.is_none())
        };
        for w in v.warnings_of(key).filter(shown_here) {
            let _ = writeln!(s, "\nWarning: {}.", w.text);
        }
        if !st.command_stages.is_empty() {
            use crate::rundir::spans::{COMMAND_STAGE_COLUMNS, command_stage_cells};
            let _ = writeln!(
                s,
                "\nStages inside `{key}` (stage spans; its process's own CPU and memory, the first row what ran before the first stage):\n"
            );
            let _ = writeln!(s, "| {} |", COMMAND_STAGE_COLUMNS.join(" | "));
            let _ = writeln!(s, "|{}", "---|".repeat(COMMAND_STAGE_COLUMNS.len()));
            for c in command_stage_cells(&st.command_stages) {
                let _ = writeln!(
                    s,
                    "| `{}` | {} | {} | {} | {} | {} |",
                    c[0], c[1], c[2], c[3], c[4], c[5]
                );
            }
        }
        if let (Some(v), "command") =
            (crate::modes::input_wait::preset_verdict(&st.figures), st.stage_kind())
        {
            let _ = writeln!(
                s,
                "\nInput: `{key}` {v} (the TensorFlow profiler's grading: under 5% not, 5 to 20% moderately, 20% or more highly input-bound)."
            );
        }
    }
}

/// Every stage's spans, one table: per name the calls and their
/// distribution per call; its time, self and concurrent time per
/// measurement (a trial, an item, or the stage's one run), so a span's
/// self time reads against its time beside it (`run` 100 ms of which 50
/// ms its own, not a sum over trials beside a median); the share of the
/// wall; then the stage's time in spans, outside and beside them, and what
/// to know to read them. A trials run's time per trial is the median over
/// the trials with its interval.
fn spans(s: &mut String, v: &View<'_>) {
    use crate::rundir::spans::totals_line;
    let r = v.report;
    let rows: Vec<_> = r.ordered().into_iter().filter(|(_, st)| st.span_totals.is_some()).collect();
    if rows.is_empty() {
        return;
    }
    let _ =
        writeln!(s, "\n## Spans (per call, and per measurement: a trial, an item or the run)\n");
    let _ = writeln!(
        s,
        "Self time is a span's time less the spans inside it on its thread; the main thread's self times are the shares of the wall and add up to the time in spans. Time in spans on other threads, in forked children, in generators and coroutines is concurrent: its own column, no share of the wall. Quantiles are within 1% of a call's duration. Time, self and concurrent are each the mean per measurement, so they add up (over trials the median trial's time and its interval follow the mean).\n"
    );
    let _ = writeln!(s, "| stage | span | {} |", SPAN_COLUMNS.join(" | "));
    let _ = writeln!(s, "|---|---|{}", "---:|".repeat(SPAN_COLUMNS.len()));
    for row in &v.spans {
        let _ = writeln!(s, "| `{}` | `{}` | {} |", row.stage, row.span, row.cells.join(" | "));
    }
    let _ = writeln!(s);
    for (key, st) in &rows {
        if let Some(t) = &st.span_totals {
            let _ = writeln!(s, "- `{key}`: {}.", totals_line(t));
        }
        for w in v.warnings_of(key).filter(|w| w.kind == WarningKind::Span) {
            let _ = writeln!(s, "- warning: {}.", w.text);
        }
    }
}

/// The spans table's columns after stage and span (summary.md, report.html).
pub const SPAN_COLUMNS: [&str; 11] = [
    "calls",
    "per measurement",
    "first",
    "median",
    "p95",
    "p99",
    "max",
    "time per measurement",
    "self on the main thread",
    "concurrent",
    "share of the wall",
];

/// One row of the spans table: a stage's span and its cells, in
/// [`SPAN_COLUMNS`] order.
pub struct SpanRow<'a> {
    pub stage: &'a str,
    pub span: &'a str,
    pub cells: [String; 11],
}

/// A span's share of the wall; over 100% it cannot be (a span longer than
/// its stage), and says so rather than pass for a figure.
fn share_cell(share: f64) -> String {
    match share > 1.0 + 1e-9 {
        true => format!("impossible: {:.1}%", 100.0 * share),
        false => format!("{:.1}%", 100.0 * share),
    }
}

/// Every stage's spans in plan order, each stage's by self time: the one
/// source of the spans table's figures.
pub fn span_rows(r: &Report) -> Vec<SpanRow<'_>> {
    let trials = r.section.trials();
    let mut out = Vec::new();
    for (key, st) in r.ordered() {
        let Some(t) = &st.span_totals else { continue };
        let m = t.measurements.max(1) as f64;
        for (name, x) in crate::rundir::spans::by_self(&st.spans) {
            let over_trials =
                trials.and_then(|t| t.get(key)?.summary.get(&format!("span:{name}_s")));
            // Time, self and concurrent are each the mean over the
            // measurements, so they add up (self never exceeds its time);
            // over trials the median trial's time and its interval follow.
            let time = match over_trials {
                Some(sum) => format!(
                    "{} (median {}; {})",
                    duration(x.sum_s / m),
                    duration(sum.median),
                    sum.median_interval.cell(duration)
                ),
                None => duration(x.sum_s / m),
            };
            let per = x.calls as f64 / m;
            let per = if per.fract() == 0.0 { format!("{per}") } else { format!("{per:.2}") };
            out.push(SpanRow {
                stage: key,
                span: name,
                cells: [
                    x.calls.to_string(),
                    per,
                    duration(x.first_s),
                    duration(x.median_s),
                    duration(x.p95_s),
                    duration(x.p99_s),
                    duration(x.max_s),
                    time,
                    duration((x.self_s - x.concurrent_s) / m),
                    duration(x.concurrent_s / m),
                    share_cell(x.share),
                ],
            });
        }
    }
    out
}

/// The Markdown summary of a report.
pub fn summary_markdown(r: &Report) -> String {
    markdown(&View::of(r))
}

/// summary.md: the Markdown of a report's view.
pub fn markdown(v: &View<'_>) -> String {
    let r = v.report;
    let mut s = String::new();
    let _ = writeln!(s, "# {}\n", v.title);
    let _ = writeln!(
        s,
        "{} stage(s), {} worker process(es), isolation `{}`, launcher `{}`, run wall {}. Declaration `{}`, environment `{}` (SHA-256, first 12 hex).\n",
        v.run.stages,
        v.run.workers,
        v.run.isolation,
        v.run.launcher,
        v.run.wall.text,
        v.run.declaration,
        v.run.environment
    );
    let _ = writeln!(s, "| {} |", STAGE_COLUMNS.join(" | "));
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|");
    for row in &v.stages {
        let none = || "–".to_string();
        let _ = writeln!(
            s,
            "| `{}` | {} | {} | {} | {} | {} | {} |",
            row.key,
            row.processes,
            row.wall.text,
            row.cpu.text,
            row.peak_rss.text,
            row.read.as_ref().map_or_else(none, |f| f.text.clone()),
            row.written.as_ref().map_or_else(none, |f| f.text.clone())
        );
    }
    let _ = writeln!(
        s,
        "\nStorage read and written: what the stage's whole process tree fetched from and sent to storage (the kernel's task I/O accounting); a read served by the page cache is not one."
    );
    if let Some(line) = &v.inputs {
        let _ = writeln!(s, "\nI{}.", &line[1..]);
    }
    process_trees(&mut s, v);
    runtimes(&mut s, r);
    spans_not_found(&mut s, v);
    spans(&mut s, v);
    super::sampled::summary(&mut s, r);
    v.section.markdown(&mut s);
    let machine: Vec<_> = v.machine_warnings().collect();
    if !machine.is_empty() {
        let _ = writeln!(s, "\n## The machine\n");
        for w in machine {
            let _ = writeln!(s, "- Warning: {}.", w.text);
        }
        let _ = writeln!(
            s,
            "\nenvironment.json records the machine's state (`coordinator doctor` prints it)."
        );
    }
    let _ = writeln!(
        s,
        "\nOne report is one observation on one machine; repeat in fresh processes on an idle machine before claiming a difference."
    );
    s
}
