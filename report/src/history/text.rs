//! A history for a person: the table on the console, and `history.md`
//! (the table, a plot per changed figure, then every run in order).

use super::{History, MARKER, PLOTS};
use crate::doc::{Cell, Table};
use crate::stats;
use std::fmt::Write as _;

/// The opening line: what was read, and what was left out.
pub(super) fn heading(h: &History) -> String {
    let mut s = format!(
        "history of {} run{} of one definition ({}…, --mode {}), in commit order; min segment {}",
        h.runs.len(),
        if h.runs.len() == 1 { "" } else { "s" },
        h.definition,
        h.mode,
        h.min_segment
    );
    if h.other_runs > 0 {
        let _ = write!(
            s,
            "; {} run{} of {} other definition{} left out",
            h.other_runs,
            if h.other_runs == 1 { "" } else { "s" },
            h.other_definitions,
            if h.other_definitions == 1 { "" } else { "s" }
        );
    }
    if !h.left_out.is_empty() {
        let n = h.left_out.len();
        let _ =
            write!(s, "; {n} other run{} left out (listed below)", if n == 1 { "" } else { "s" });
    }
    s
}

/// Each run left out and why, one line each.
fn left_out_lines(h: &History) -> String {
    h.left_out.iter().map(|(rel, why)| format!("left out {rel}: {why}\n")).collect()
}

/// The verdict in words: too short, no change, or how many.
pub(super) fn verdict(h: &History) -> String {
    let (n, min) = (h.runs.len(), h.min_segment);
    if n < 2 * min {
        return format!(
            "too few runs for a change point: {n} runs, and each side of one needs {min} (--min-segment)"
        );
    }
    if h.too_short() {
        return format!(
            "too few runs to find a change at p < {}: with {n} runs and segments of at least {min}, \
             even a perfect split has p ≥ {:.3} (fewer orderings than the test needs)",
            stats::SIGNIFICANCE,
            stats::lowest_p(n, min)
        );
    }
    // The strongest split the test could not decide, named, never read as
    // "no change".
    let unsure = h.unsure.iter().max_by(|a, b| a.ratio.ln().abs().total_cmp(&b.ratio.ln().abs()));
    let unsure = unsure.map(|u| {
        format!(
            "not sure: the strongest candidate is `{}` `{}` from {}, ×{:.2}, p ≈ {:.3} ({} reshufflings could not place its p on either side of {})",
            u.stage,
            u.figure,
            h.runs[u.at].rel,
            u.ratio,
            u.p,
            stats::MAX_PERMUTATIONS + 1,
            stats::SIGNIFICANCE
        )
    });
    match (h.changes.len(), unsure) {
        (0, Some(u)) => u,
        (_, Some(u)) => format!("{}; and {u}", verdict_of_changes(h)),
        (_, None) => verdict_of_changes(h),
    }
}

/// The verdict when every split was decided.
fn verdict_of_changes(h: &History) -> String {
    match h.changes.len() {
        0 => format!("no change point in any of {} figures", h.figures.len()),
        n => format!(
            "{n} change point{} in {} of {} figures",
            if n == 1 { "" } else { "s" },
            h.figures
                .iter()
                .filter(|(s, f)| h.changes.iter().any(|c| &c.stage == s && &c.figure == f))
                .count(),
            h.figures.len()
        ),
    }
}

/// The first run after a change, by its directory, as the dashboard
/// names it: "r25 (ab12cd34ef56, 2026-12-04T10:00:00Z)".
pub(super) fn first_after(h: &History, at: usize) -> String {
    let r = &h.runs[at];
    // A commit to 12 hex digits (and stagebench's, named as such).
    let commit =
        r.commit.as_deref().map(|c| &c[..c.len().min(c.find('@').map_or(0, |i| i + 1) + 12)]);
    let commit = commit.unwrap_or("no commit");
    format!("{} ({commit}, {})", r.rel, r.created_utc)
}

/// The change points, one row each: the console's table and history.md's.
fn changes(h: &History) -> Table {
    use crate::doc::Align::{Left, Right};
    let mut t = Table::new(&[
        ("stage", Left),
        ("figure", Left),
        ("before", Right),
        ("after", Right),
        ("ratio", Right),
        ("interval of the ratio", Right),
        ("p", Right),
        ("first run after", Left),
    ]);
    for c in &h.changes {
        t.row(vec![
            Cell::code(&c.stage),
            Cell::code(&c.figure),
            crate::fmt::figure(&c.figure, c.before).into(),
            crate::fmt::figure(&c.figure, c.after).into(),
            format!("{:.3}", c.ratio).into(),
            c.interval.cell(|x| format!("{x:.3}")).into(),
            format!("{:.4}", c.p).into(),
            first_after(h, c.at).into(),
        ]);
    }
    t
}

/// The table, one row per change point.
pub fn render(h: &History) -> String {
    let s = format!("{}\n{}{}\n", heading(h), left_out_lines(h), verdict(h));
    if h.changes.is_empty() {
        return s;
    }
    let mut out = s.into_bytes();
    // Writing to a Vec cannot fail.
    let _ = changes(h).text("", &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// history.md: the marker, the same facts as a table, then the runs.
pub fn markdown(h: &History) -> String {
    let mut s = format!("{MARKER}\n# History\n\n{}.\n\n{}.\n\n", heading(h), verdict(h));
    if !h.changes.is_empty() {
        changes(h).markdown(&mut s);
        s.push('\n');
        for (i, stage, figure) in changed(h) {
            let name = super::plot::file_stem(i, stage, figure);
            let _ = writeln!(s, "![{stage} {figure}]({PLOTS}/{name}.svg)\n");
        }
    }
    if !h.left_out.is_empty() {
        s.push_str("## Runs left out\n\n| run | why |\n|---|---|\n");
        for (rel, why) in &h.left_out {
            let _ = writeln!(s, "| `{rel}` | {} |", why.replace('|', "\\|").replace('\n', " "));
        }
        s.push('\n');
    }
    s.push_str("## Runs, in order\n\n| # | run | started | commit |\n|---:|---|---|---|\n");
    for (i, r) in h.runs.iter().enumerate() {
        let _ = writeln!(
            s,
            "| {} | `{}` | {} | {} |",
            i + 1,
            r.rel,
            r.created_utc,
            r.commit.as_deref().unwrap_or("–")
        );
    }
    s
}

/// The figures with a change point, with their index in [`History::figures`].
pub fn changed(h: &History) -> impl Iterator<Item = (usize, &String, &String)> {
    h.figures.iter().enumerate().filter_map(|(i, (stage, figure))| {
        h.changes
            .iter()
            .any(|c| &c.stage == stage && &c.figure == figure)
            .then_some((i, stage, figure))
    })
}
