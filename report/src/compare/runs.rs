//! Which runs a comparison compared, and where it may write: never into a
//! run, campaign or bisection directory, which would then fail `verify`.

use super::CompareError;
use crate::rundir::declaration::Declaration;
use std::path::Path;

/// Which run a side of a comparison is: its directory's name (never its
/// path), when it started, the commit it was built from, its declaration.
#[derive(Clone, Debug, PartialEq)]
pub struct RunId {
    pub name: String,
    pub created_utc: String,
    /// stagebench's commit, or "no commit" outside a checkout.
    pub commit: String,
    /// The declaration's SHA-256, first 12 hex.
    pub declaration: String,
}

impl RunId {
    pub(super) fn of(dir: &Path, d: &Declaration, r: &crate::modes::Report) -> RunId {
        let name = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
        RunId {
            name: name.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            created_utc: d.created_utc.clone(),
            commit: d
                .program
                .git_commit
                .as_deref()
                .map_or("no commit".into(), |c| c[..12.min(c.len())].to_string()),
            declaration: r.declaration_sha256[..12.min(r.declaration_sha256.len())].to_string(),
        }
    }

    /// As a line: "r07 (started …, commit …, declaration …)".
    pub fn line(&self) -> String {
        format!(
            "{} (started {}, commit {}, declaration {})",
            self.name, self.created_utc, self.commit, self.declaration
        )
    }
}

/// Refuses an output (`flag`'s `path`, which does not exist yet) whose
/// folder is a run, campaign or bisection directory, or inside one.
pub fn refuse_inside_evidence(flag: &'static str, path: &Path) -> Result<(), CompareError> {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let folder = absolute.parent().unwrap_or(&absolute);
    match crate::runs_below::evidence_at_or_above(folder) {
        Some(dir) => Err(CompareError::InsideEvidence(
            flag,
            path.display().to_string(),
            dir.display().to_string(),
        )),
        None => Ok(()),
    }
}
