//! The run and campaign directories below a directory, each with its
//! declaration read as its type: what `dashboard` lists and `history`
//! reads, at any depth. Hidden directories and symlinks are not followed
//! (a directory reached twice, through a bind mount, is walked once), and
//! a campaign's own runs (below it) are found too.

use crate::rundir::DECLARATION;
use crate::rundir::declaration::Declaration;
use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// What a directory's declaration.json is, read as its type: a run's, a
/// campaign's (of which the dashboard reads its start and its steps: the
/// rest is the campaign file), or one it cannot read.
pub enum Declared {
    Run(Box<Declaration>),
    Campaign(CampaignDeclared),
    Unreadable,
}

/// What the dashboard reads of a campaign's declaration.
#[derive(serde::Deserialize)]
pub struct CampaignDeclared {
    pub created_utc: String,
    pub campaign: CampaignSteps,
}

#[derive(serde::Deserialize)]
pub struct CampaignSteps {
    #[serde(default)]
    pub step: Vec<serde::de::IgnoredAny>,
}

impl Declared {
    /// What the declaration at `path` declares, read once; None for a
    /// bisection's, which is no run (its probes, probes/COMMIT, are below it).
    pub fn read(path: &Path) -> Option<Declared> {
        let Ok(bytes) = std::fs::read(path) else { return Some(Declared::Unreadable) };
        let read = match serde_json::from_slice::<Schema>(&bytes) {
            Ok(s) if s.schema == crate::campaign::SCHEMA_DECLARATION => {
                serde_json::from_slice(&bytes).map(Declared::Campaign)
            }
            Ok(s) if s.schema == crate::rundir::bisect::SCHEMA_DECLARATION => return None,
            _ => serde_json::from_slice(&bytes).map(|d| Declared::Run(Box::new(d))),
        };
        Some(read.unwrap_or(Declared::Unreadable))
    }
}

/// What a declaration says it is.
#[derive(serde::Deserialize)]
struct Schema {
    schema: String,
}

/// The directory at or above `dir` that holds declaration.json (a run's,
/// a campaign's or a bisection's), if any: an index written there would be
/// a file its evidence does not account for, and `verify` would fail it.
pub fn evidence_at_or_above(dir: &Path) -> Option<PathBuf> {
    let dir = std::fs::canonicalize(dir).ok()?;
    dir.ancestors().find(|d| d.join(DECLARATION).is_file()).map(Path::to_path_buf)
}

/// Directories holding declaration.json below `dir` (and `dir` itself),
/// with it read, in path order, at any depth; hidden directories (such as
/// a staging `.name.partial-PID`) and symlinks are not followed.
pub fn find_runs(dir: &Path) -> std::io::Result<Vec<(PathBuf, Declared)>> {
    let mut out = Vec::new();
    walk(dir, &mut HashSet::new(), &mut out)?;
    Ok(out)
}

/// One directory of [`find_runs`]; `seen` holds the (device, inode) of
/// every directory walked, so no loop is walked twice.
fn walk(
    dir: &Path,
    seen: &mut HashSet<(u64, u64)>,
    out: &mut Vec<(PathBuf, Declared)>,
) -> std::io::Result<()> {
    let meta = std::fs::metadata(dir)?;
    if !seen.insert((meta.dev(), meta.ino())) {
        return Ok(());
    }
    let declared = dir.join(DECLARATION).is_file().then(|| Declared::read(&dir.join(DECLARATION)));
    if let Some(Some(decl)) = declared {
        // A campaign's own runs lie below it (runs/STEP/TRIAL).
        let campaign = matches!(decl, Declared::Campaign(_));
        out.push((dir.to_path_buf(), decl));
        if !campaign {
            return Ok(());
        }
    }
    let mut children: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.path())
        .collect();
    children.sort();
    for c in children {
        walk(&c, seen, out)?;
    }
    Ok(())
}

/// A file of the run directory read as its type; None when absent or not
/// of it.
pub fn read<T: serde::de::DeserializeOwned>(path: &Path) -> Option<T> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}
