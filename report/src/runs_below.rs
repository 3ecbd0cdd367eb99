//! The run and campaign directories below a directory, each with its
//! declaration read as its type: what `dashboard` lists and `history`
//! reads. Hidden directories and symlinks are not followed, and a
//! campaign's own runs (below it) are found too.

use crate::rundir::DECLARATION;
use crate::rundir::declaration::Declaration;
use std::path::{Path, PathBuf};

/// How deep below DIR run directories are looked for.
const MAX_DEPTH: usize = 8;

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

/// Directories holding declaration.json, with it read, in path order;
/// hidden directories (such as a staging `.name.partial-PID`) and symlinks
/// are not followed.
pub fn find_runs(
    dir: &Path,
    depth: usize,
    out: &mut Vec<(PathBuf, Declared)>,
) -> std::io::Result<()> {
    let declared = dir.join(DECLARATION).is_file().then(|| Declared::read(&dir.join(DECLARATION)));
    if let Some(Some(decl)) = declared {
        // A campaign's own runs lie below it (runs/STEP/TRIAL).
        let campaign = matches!(decl, Declared::Campaign(_));
        out.push((dir.to_path_buf(), decl));
        if !campaign {
            return Ok(());
        }
    }
    if depth == MAX_DEPTH {
        return Ok(());
    }
    let mut children: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.path())
        .collect();
    children.sort();
    for c in children {
        find_runs(&c, depth + 1, out)?;
    }
    Ok(())
}

/// A file of the run directory read as its type; None when absent or not
/// of it.
pub fn read<T: serde::de::DeserializeOwned>(path: &Path) -> Option<T> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}
