//! What `coordinator history` writes into DIR: `history.md`,
//! `history.html` and `history-plots/` (an SVG and a PNG per changed
//! figure), each replaced only when its bytes change, and only if this
//! command wrote it: a history.md without the marker on its first line (a
//! history.html without it after the doctype), or a history-plots/ without
//! the marker file, is the user's, refused and left alone.

use super::{History, HistoryError, INDEX, MARKER, PLOTS};
use std::path::Path;

/// The file that marks history-plots/ as this command's.
const PLOTS_MARKER: &str = ".written-by-coordinator-history";

/// Writes (or leaves unchanged) `dir/history.md` and its plots; returns a
/// line for a person.
pub fn write(dir: &Path, h: &History) -> Result<String, HistoryError> {
    let index = dir.join(INDEX);
    let plots = dir.join(PLOTS);
    // Both checked before anything is written.
    if std::fs::read(&index).is_ok_and(|old| !old.starts_with(MARKER.as_bytes())) {
        return Err(HistoryError::NotOurs(index.display().to_string()));
    }
    let page = dir.join(super::page::PAGE);
    let ours = format!("<!DOCTYPE html>{MARKER}");
    if std::fs::read(&page).is_ok_and(|old| !old.starts_with(ours.as_bytes())) {
        return Err(HistoryError::NotOurs(page.display().to_string()));
    }
    if plots.symlink_metadata().is_ok() && !plots.join(PLOTS_MARKER).is_file() {
        return Err(HistoryError::NotOurs(plots.display().to_string()));
    }
    let werr = |p: &Path| {
        let p = p.display().to_string();
        move |e| HistoryError::Write(p, e)
    };
    let mut wanted = Vec::new();
    for (i, stage, figure) in super::text::changed(h) {
        let (svg, png) = super::plot::svg_and_png(h, stage, figure, &h.series[i])?;
        let stem = super::plot::file_stem(i, stage, figure);
        wanted.push((format!("{stem}.svg"), svg));
        wanted.push((format!("{stem}.png"), png));
    }
    let mut changed = 0;
    if !wanted.is_empty() || plots.is_dir() {
        std::fs::create_dir_all(&plots).map_err(werr(&plots))?;
        std::fs::write(plots.join(PLOTS_MARKER), b"").map_err(werr(&plots))?;
        // A plot of a figure that no longer changes goes: the directory is ours.
        for e in std::fs::read_dir(&plots).map_err(werr(&plots))?.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let ours = name.ends_with(".svg") || name.ends_with(".png");
            if ours && !wanted.iter().any(|(w, _)| *w == name) {
                std::fs::remove_file(e.path()).map_err(werr(&e.path()))?;
                changed += 1;
            }
        }
    }
    let svgs: Vec<(&str, &[u8])> = wanted
        .iter()
        .filter(|(name, _)| name.ends_with(".svg"))
        .map(|(name, bytes)| (name.as_str(), bytes.as_slice()))
        .collect();
    let html = super::page::page(h, &svgs);
    let plotted = wanted.len() / 2;
    let text = super::text::markdown(h);
    wanted.push((String::new(), text.into_bytes()));
    wanted.push((super::page::PAGE.into(), html.into_bytes()));
    for (name, bytes) in &wanted {
        let path = match name.as_str() {
            "" => index.clone(),
            super::page::PAGE => page.clone(),
            _ => plots.join(name),
        };
        if std::fs::read(&path).is_ok_and(|old| old == *bytes) {
            continue;
        }
        evidence::write_atomic(&path, bytes).map_err(werr(&path))?;
        changed += 1;
    }
    // Plots are named only where there are some (and so their folder).
    let plots = match plotted {
        0 => " (no plot: nothing changed to draw)".to_string(),
        n => format!(" and {n} plot(s) in {}/", plots.display()),
    };
    Ok(match changed {
        0 => format!("unchanged {} and {}{plots}", index.display(), page.display()),
        _ => format!("wrote {} and {}{plots}", index.display(), page.display()),
    })
}
