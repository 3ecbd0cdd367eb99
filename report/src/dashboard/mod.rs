//! `coordinator dashboard DIR`: `DIR/README.md`, a table of every run
//! directory below DIR (at any depth), newest first, from their evidence,
//! and `DIR/index.html`, the same rows as a page (`page`) with each
//! definition's history drawn and a link to each run's report.html.
//!
//! A run directory is one holding declaration.json. Its row says whether the
//! run succeeded (`ok`: report.json, and the directory verifies as
//! `verify` checks it), failed (failure.json: its `reason` only, never its
//! message, which may name a file or a series), does not verify (why, in
//! `verify`'s words: a broken seal, another schema_version, a changed
//! artifact) or never finished (a declaration alone); only an `ok` run's
//! figures are shown or read for its last change. A campaign directory
//! gets a row of its own (steps, trials, resume against cold, trials
//! identical to cold), and its runs are listed too. The output depends
//! only on the runs, so rerunning with nothing new rewrites nothing. A
//! README.md that this command did not write is refused and left alone,
//! and so is a DIR that is, or lies in, a run, campaign or bisection
//! directory (a README.md there would fail its `verify`).

use crate::campaign::report::CampaignReport;
use crate::modes::Report;
use crate::rundir::failure::Failure;
use crate::rundir::{FAILURE, REPORT};
use crate::runs_below::{Declared, find_runs, read};
use rayon::prelude::*;
use serde::Deserialize;
use std::fmt::Write as _;
use std::path::Path;

mod page;
pub use page::{PAGE, PAGE_MARKER};

pub const INDEX: &str = "README.md";
/// The status of a run whose directory verifies.
const OK: &str = "ok";
/// The first line of every index; a README.md without it is the user's.
pub const MARKER: &str =
    "<!-- written by `coordinator dashboard`: rerun it instead of editing this file -->";

struct Row {
    rel: String,
    created: String,
    mode: String,
    status: String,
    stages: String,
    processes: String,
    wall: String,
    headline: String,
    /// The last change point at or before this run in its definition's
    /// history (`coordinator history`), or "–".
    last_change: String,
    /// Its definition's history, for index.html's sparkline.
    trend: Option<crate::history::Trend>,
}

/// Why no dashboard was written.
#[derive(Debug, thiserror::Error)]
pub enum DashboardError {
    #[error("'{0}' is not a directory")]
    NotADirectory(String),
    /// A README.md the dashboard did not write is the user's.
    #[error("'{0}' exists and was not written by `coordinator dashboard`; it is left alone")]
    NotOurs(String),
    #[error("'{0}' exists and is not an index of ours")]
    NotText(String),
    #[error("reading '{0}': {1}")]
    Read(String, std::io::Error),
    #[error(
        "'{0}' is in the evidence directory '{1}' (it holds declaration.json), which a README.md would alter: point dashboard at a directory of runs"
    )]
    InEvidence(String, String),
    #[error("writing '{0}': {1}")]
    Write(String, std::io::Error),
}

/// Writes (or leaves unchanged) `dir/README.md`; returns a line for a person.
pub fn write(dir: &Path) -> Result<String, DashboardError> {
    if !dir.is_dir() {
        return Err(DashboardError::NotADirectory(dir.display().to_string()));
    }
    let index = dir.join(INDEX);
    match std::fs::read_to_string(&index) {
        Ok(old) if !old.starts_with(MARKER) => {
            return Err(DashboardError::NotOurs(index.display().to_string()));
        }
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
            return Err(DashboardError::NotText(index.display().to_string()));
        }
        _ => {}
    }
    let page_path = dir.join(PAGE);
    match std::fs::read_to_string(&page_path) {
        Ok(old) if !old.starts_with(&format!("<!DOCTYPE html>{PAGE_MARKER}")) => {
            return Err(DashboardError::NotOurs(page_path.display().to_string()));
        }
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
            return Err(DashboardError::NotText(page_path.display().to_string()));
        }
        _ => {}
    }
    if let Some(evidence) = crate::runs_below::evidence_at_or_above(dir) {
        let shown = |p: &Path| p.display().to_string();
        return Err(DashboardError::InEvidence(shown(dir), shown(&evidence)));
    }
    let runs = find_runs(dir).map_err(|e| DashboardError::Read(dir.display().to_string(), e))?;
    let mut rows: Vec<Row> = runs.par_iter().map(|(p, decl)| row(dir, p, decl)).collect();
    let ok: Vec<_> =
        runs.iter().zip(&rows).filter(|(_, r)| r.status == OK).map(|(f, _)| f).collect();
    let last = crate::history::last_changes(dir, &ok);
    for r in &mut rows {
        if let Some(trend) = last.get(&r.rel) {
            if let Some(change) = &trend.last_change {
                r.last_change = change.clone();
            }
            r.trend = Some(trend.clone());
        }
    }
    // Newest first; ties (and unreadable dates) by path, so the order is total.
    use evidence::timestamp::instant_key as at;
    rows.sort_by(|a, b| at(&b.created).cmp(&at(&a.created)).then_with(|| a.rel.cmp(&b.rel)));
    let text = markdown(&rows);
    let html = page::page(&rows);
    let mut unchanged = true;
    for (path, bytes) in [(&index, text.as_bytes()), (&page_path, html.as_bytes())] {
        if std::fs::read(path).is_ok_and(|old| old == bytes) {
            continue;
        }
        unchanged = false;
        evidence::write_atomic(path, bytes)
            .map_err(|e| DashboardError::Write(path.display().to_string(), e))?;
    }
    Ok(format!(
        "{} {} and {PAGE} ({} run director{})",
        if unchanged { "unchanged" } else { "wrote" },
        index.display(),
        rows.len(),
        if rows.len() == 1 { "y" } else { "ies" }
    ))
}

fn row(base: &Path, dir: &Path, decl: &Declared) -> Row {
    let rel = crate::history::relative(base, dir);
    let (created, mode, stages) = match decl {
        Declared::Run(d) => (d.created_utc.clone(), d.mode.clone(), d.stages.len().to_string()),
        Declared::Campaign(c) => (
            c.created_utc.clone(),
            "campaign".to_string(),
            format!("{} steps", c.campaign.step.len()),
        ),
        Declared::Unreadable => (String::new(), "?".into(), "?".into()),
    };
    let campaign = matches!(decl, Declared::Campaign(_));
    let mut r = Row {
        rel,
        created,
        mode,
        status: String::new(),
        stages,
        processes: "–".into(),
        wall: "–".into(),
        headline: String::new(),
        last_change: "–".into(),
        trend: None,
    };
    if dir.join(REPORT).exists() && dir.join(FAILURE).exists() {
        // One ending per run: both is no ending a run writes.
        r.status = "**incomplete**: both report.json and failure.json".into();
        return r;
    }
    match read::<serde_json::Value>(&dir.join(REPORT)) {
        Some(rep) => {
            if let Err(m) = crate::verify::verify(dir) {
                r.status = format!("**does not verify**: {m}");
                return r;
            }
            r.status = OK.into();
            if campaign {
                r.headline = match CampaignReport::deserialize(&rep) {
                    Ok(typed) => campaign_headline(&typed),
                    Err(_) => "**unreadable report**".into(),
                };
                return r;
            }
            match Report::deserialize(&rep) {
                Ok(typed) => {
                    r.processes = typed.workers.len().to_string();
                    r.wall = crate::fmt::duration(typed.run_wall_s);
                    r.headline = headline(&typed);
                }
                Err(_) => {
                    r.processes = "?".into();
                    r.headline = "**unreadable report**".into();
                }
            }
        }
        None if dir.join(REPORT).exists() => r.status = "**unreadable report**".into(),
        None => match read::<Failure>(&dir.join(FAILURE)) {
            // The reason is a fixed word; the message is not for sharing.
            Some(f) => r.status = format!("failed: {}", f.reason),
            None if dir.join(FAILURE).exists() => r.status = "failed: ?".into(),
            None => r.status = "no report (interrupted or running)".into(),
        },
    }
    r
}

/// One phrase about what a campaign found: trials per step, the first
/// resume against the cold run, and how many resumed trials left the cold
/// run's state.
fn campaign_headline(rep: &CampaignReport) -> String {
    let of_kind = |k: &str| rep.steps.iter().find(|s| s.kind == k);
    let ratio = match (of_kind("resume"), of_kind("cold")) {
        (Some(r), Some(c)) if c.median_total_s > 0.0 => {
            format!("resume {:.3}× cold", r.median_total_s / c.median_total_s)
        }
        _ => "no resume".into(),
    };
    let resumed: Vec<_> =
        rep.steps.iter().filter(|s| s.kind != "cold").flat_map(|s| &s.trials).collect();
    let same = resumed.iter().filter(|t| t.identical_to_cold).count();
    format!(
        "{} trials per step; {ratio}; {same} of {} resumed trials identical to cold",
        rep.trials,
        resumed.len()
    )
}

/// One phrase about what the run found: its mode's, or its slowest stage.
fn headline(rep: &Report) -> String {
    cell(&rep.headline())
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// A name as Markdown text: never markup. HTML's `<`, `>` and `&` as
/// entities (GitHub would render `<img …>` as an element), Markdown's own
/// punctuation escaped (a `[` opens no link, a `|` splits no row).
fn text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '(' | ')' | '|' | '#' | '!' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// A relative path as a link's target: every byte but unreserved ones and
/// `/` percent-encoded, so no name ends the link or starts markup.
fn target(path: &str) -> String {
    path.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn markdown(rows: &[Row]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{MARKER}");
    let _ = writeln!(s, "# stagebench runs\n");
    let _ = writeln!(
        s,
        "{} run director{} below this one, newest first. Status `ok` means the run has a report and its directory \
         verifies (`coordinator verify DIR`: every binding and artifact); only such runs' figures are shown. \
         The last change is the latest change point at or before the run in the history of its definition \
         (`coordinator history DIR`, at least 10 runs).\n",
        rows.len(),
        if rows.len() == 1 { "y" } else { "ies" }
    );
    let _ = writeln!(
        s,
        "| run | started (UTC) | mode | status | stages | processes | run wall | headline | last change |"
    );
    let _ = writeln!(s, "|---|---|---|---|---:|---:|---:|---|---|");
    for r in rows {
        let link = if r.status == OK {
            format!("[{}]({}/summary.md)", text(&r.rel), target(&r.rel))
        } else {
            text(&r.rel)
        };
        let _ = writeln!(
            s,
            "| {link} | {} | {} | {} | {} | {} | {} | {} | {} |",
            cell(&r.created),
            cell(&r.mode),
            cell(&r.status),
            r.stages,
            r.processes,
            r.wall,
            cell(&r.headline),
            cell(&r.last_change)
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::headline;
    use crate::modes::Report;

    /// A run named as markup is text in README.md: no element, no link of
    /// its own, no cell split, its link's target encoded.
    #[test]
    fn a_run_named_as_markup_is_text_in_the_readme() {
        let hostile = "<img src=x onerror=alert(1)>|x [y](z) `c`";
        let row = |status: &str| super::Row {
            rel: hostile.into(),
            created: "2026-12-07T00:00:00Z".into(),
            mode: "trials".into(),
            status: status.into(),
            stages: "1".into(),
            processes: "1".into(),
            wall: "1 s".into(),
            headline: "h".into(),
            last_change: "–".into(),
            trend: None,
        };
        let md = super::markdown(&[row(super::OK), row("failed")]);
        assert!(!md.contains("<img") && md.contains("&lt;img"), "{md}");
        for line in md.lines().filter(|l| l.contains("onerror")) {
            let cells = line.split('|').count() - line.matches("\\|").count();
            assert_eq!(cells, 11, "a name split the row: {line}");
            assert!(!line.contains("[y](z)") && !line.contains("`c`"), "{line}");
        }
        assert!(md.contains("](%3Cimg%20src%3Dx%20onerror%3Dalert%281%29%3E%7Cx"), "{md}");
    }

    /// A cold-prep row says whether its caches, or a team's outputs, were
    /// identical, and says DIFFER when they were not; a report of a mode
    /// with no headline of its own names its slowest stage.
    #[test]
    fn the_headline_is_the_sections_and_can_say_differ() {
        let text = include_str!("../render/fixtures/cold-prep-report.json");
        let mut v: serde_json::Value = serde_json::from_str(text).unwrap();
        let r: Report = serde_json::from_value(v.clone()).unwrap();
        assert!(headline(&r).ends_with("; caches identical"), "{}", headline(&r));
        v["caches_identical"] = false.into();
        let r: Report = serde_json::from_value(v.clone()).unwrap();
        assert!(headline(&r).ends_with("; caches DIFFER"), "{}", headline(&r));
        // A team's own preparation: outputs, not caches.
        v.as_object_mut().unwrap().remove("caches_identical");
        v["items"] = serde_json::json!({"count": 3, "items_sha256": "ab", "weighted": false});
        v["outputs_identical"] = true.into();
        let r: Report = serde_json::from_value(v.clone()).unwrap();
        assert!(headline(&r).ends_with("; outputs identical"), "{}", headline(&r));
        v["outputs_identical"] = false.into();
        let r: Report = serde_json::from_value(v.clone()).unwrap();
        assert!(headline(&r).ends_with("; outputs DIFFER"), "{}", headline(&r));
        // The same stages as a diagnostic run: the slowest one.
        v["mode"] = "diagnostic".into();
        let r: Report = serde_json::from_value(v).unwrap();
        let (key, slowest) =
            r.stages.iter().max_by(|a, b| a.1.wall_s.total_cmp(&b.1.wall_s)).unwrap();
        assert_eq!(
            headline(&r),
            format!("slowest stage `{key}` ({})", crate::fmt::duration(slowest.wall_s))
        );
    }
}
