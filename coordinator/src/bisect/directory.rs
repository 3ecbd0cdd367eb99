//! The bisection's directory: made new with its declaration and
//! environment, or reopened to resume; and what its report binds.

use crate::error::Error;
use report::bisect::text;
use report::bisect::{
    Artifact, BUILDS, BisectDeclaration, Confirmation, PROBES, Probe, ProbeVerdict,
    SCHEMA_DECLARATION,
};
use report::rundir;
use std::path::Path;

/// Where the worktrees go while a probe runs (hidden: never evidence).
pub(super) const WORKTREES: &str = ".worktrees";

/// The bisection's directory: made with its declaration and environment,
/// or, when it holds an unfinished bisection declared the same, reopened
/// (what its interrupted probes left half-written is cleared). The SHA-256
/// of the declaration and environment it holds.
pub(super) fn open(out: &Path, declaration: &BisectDeclaration) -> Result<(String, String), Error> {
    open_as(out, declaration, SCHEMA_DECLARATION, "bisection", |a, b| a.same_bisection(b))
}

/// A directory of `what` (a bisection, a gate) declared by `declaration`
/// (of `schema`): made new, or reopened to resume when it holds an
/// unfinished one that `same` finds declared alike.
pub(super) fn open_as<D: serde::Serialize + serde::de::DeserializeOwned>(
    out: &Path,
    declaration: &D,
    schema: &str,
    what: &str,
    same: impl Fn(&D, &D) -> bool,
) -> Result<(String, String), Error> {
    let read = |name: &str| std::fs::read(out.join(name));
    if out.symlink_metadata().is_ok() {
        let value: Option<serde_json::Value> =
            read(rundir::DECLARATION).ok().and_then(|b| serde_json::from_slice(&b).ok());
        let earlier: Option<D> = value
            .filter(|v| v["schema"].as_str() == Some(schema))
            .and_then(|v| serde_json::from_value(v).ok());
        let Some(earlier) = earlier else {
            return Err(Error::Usage(format!(
                "output '{}' already exists and holds no {what} to resume",
                out.display()
            )));
        };
        if out.join(rundir::REPORT).exists() {
            return Err(Error::Usage(format!(
                "output '{}' holds a finished {what} (report.json); give a new --output",
                out.display()
            )));
        }
        if !same(&earlier, declaration) {
            return Err(Error::Usage(format!(
                "output '{}' holds another {what} (its commits, flags, build, figures, threshold or rounds differ)",
                out.display()
            )));
        }
        let sha = |name: &str| {
            read(name)
                .map(|b| evidence::sha256_hex(&b))
                .map_err(|e| Error::Failed(format!("cannot read {name}: {e}")))
        };
        // An interrupted probe's worktree (ours, hidden) goes.
        if out.join(WORKTREES).exists() {
            let _ = std::fs::remove_dir_all(out.join(WORKTREES));
        }
        return Ok((sha(rundir::DECLARATION)?, sha(rundir::ENVIRONMENT)?));
    }
    let dir = rundir::RunDir::create(out).map_err(|e| Error::Usage(e.to_string()))?;
    let write = |name: &str, bytes: &[u8]| {
        dir.write_evidence(name, bytes).map_err(|e| Error::Failed(e.to_string()))
    };
    let d = write(rundir::DECLARATION, &evidence::to_bytes(declaration))?;
    let e = write(rundir::ENVIRONMENT, &evidence::to_bytes(&host::machine::capture("local", out)))?;
    Ok((d, e))
}

/// Every probe's run directories (their report.json, or failure.json for a
/// run that failed), the endpoints' runs in its windows and the boundary's
/// side by side, and every failed build's log, hashed.
pub(super) fn artifacts(
    out: &Path,
    probes: &[Probe],
    confirmation: Option<&Confirmation>,
) -> Result<Vec<Artifact>, Error> {
    let mut files: Vec<(String, &str)> = Vec::new();
    let beside = probes.iter().flat_map(|p| &p.windows).flat_map(|w| [&w.good_run, &w.bad_run]);
    let boundary = confirmation.into_iter().flat_map(|c| &c.runs);
    for run in beside.chain(boundary) {
        files.push((format!("{run}/{}", rundir::REPORT), "run"));
    }
    for p in probes {
        for run in &p.runs {
            files.push((format!("{run}/{}", rundir::REPORT), "run"));
        }
        if p.verdict == ProbeVerdict::Skipped {
            let short = text::short(&p.commit);
            let log = format!("{BUILDS}/{short}.log");
            if out.join(&log).exists() {
                files.push((log, "file"));
            }
            // The run that failed: in the window it could not finish.
            let w = p.windows.len() + 1;
            let dir =
                if w == 1 { format!("{PROBES}/{short}") } else { format!("{PROBES}/{short}-{w}") };
            let failed = format!("{dir}/{}", rundir::FAILURE);
            if out.join(&failed).exists() {
                files.push((failed, "failed-run"));
            }
        }
    }
    files.sort();
    files.dedup();
    files
        .into_iter()
        .map(|(path, kind)| {
            let (sha256, bytes) = evidence::file_sha256(&out.join(&path))
                .map_err(|e| Error::Failed(format!("cannot hash {path}: {e}")))?;
            Ok(Artifact { path, sha256, bytes, kind: kind.into() })
        })
        .collect()
}
