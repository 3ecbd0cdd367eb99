//! `coordinator verify DIR`: recompute every binding and artifact hash, and
//! account for every entry under the directory (`tree`). It only reads:
//! redrawing what a report derives is `render`'s, which `cli` calls on a
//! report `checked_report` hands back.

mod commits;

use crate::modes::Report;
use crate::rundir::failure::Failure;
use crate::rundir::tree::{Accounted, Stray, StrayKind};
use crate::rundir::{DECLARATION, ENVIRONMENT, FAILURE, REPORT, is_safe_relative, report};
use commits::{verify_bisection, verify_gate};
use evidence::canonical;
use rayon::prelude::*;
use serde::Deserialize;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The first binding of a directory that does not hold, in one line: why it
/// does not verify (exit 3).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Mismatch(pub String);

/// A stray in a finished directory: something changed it after its run.
impl From<Stray> for Mismatch {
    fn from(s: Stray) -> Self {
        let shown = s.shown("the directory");
        Mismatch(match &s.kind {
            StrayKind::Unbound => {
                format!("{shown} {}: a file was added or renamed after the run wrote it", s.what())
            }
            StrayKind::EmptyDirectory => format!(
                "{shown} is an empty directory the run did not write: nothing in the report accounts for it"
            ),
            StrayKind::Unreadable(e) => format!("cannot list {shown}: {e}"),
            _ => format!("{shown} {}", s.what()),
        })
    }
}

/// What a successful verification covered.
#[derive(Debug)]
pub struct Verified {
    pub mode: String,
    pub stages: usize,
    pub artifacts: usize,
    /// A run killed at its declared point: no report, its failure.json bound.
    pub killed: bool,
}

impl std::fmt::Display for Verified {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.killed {
            return write!(
                f,
                "declaration and environment match failure.json ({} run killed at its declared point, so no report)",
                self.mode
            );
        }
        write!(
            f,
            "declaration, environment, report body and {} artifact(s) match ({} run, {} stage or step record(s))",
            self.artifacts, self.mode, self.stages
        )
    }
}

/// A run directory with a declaration and neither ending: a run killed
/// (SIGKILL leaves no failure.json) or still running, and what it left, by
/// name (a killed run's half-written files are its own: `.NAME.tmp-PID`,
/// a bootstrap directory, a preparation's outputs).
fn unended(dir: &Path) -> String {
    let mut left: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect()
        })
        .unwrap_or_default();
    left.retain(|n| {
        ![crate::rundir::DECLARATION, crate::rundir::ENVIRONMENT].contains(&n.as_str())
    });
    left.sort();
    let held = match left.is_empty() {
        true => String::new(),
        false => format!("; beside its declaration it holds {}", left.join(", ")),
    };
    format!(
        "neither {REPORT} nor {FAILURE} in '{}': the run was killed (SIGKILL leaves no {FAILURE}) or is still running{held}",
        dir.display()
    )
}

/// Checks every binding of the run directory and that nothing else is in
/// it; the error names the first thing that differs.
pub fn verify(dir: &Path) -> Result<Verified, Mismatch> {
    let has = |name: &str| dir.join(name).symlink_metadata().is_ok();
    if has(REPORT) && has(FAILURE) {
        return Err(Mismatch(format!(
            "both {REPORT} and {FAILURE}: a run has one ending, so this one failed or did not finish"
        )));
    }
    if !has(REPORT) && has(FAILURE) {
        return verify_ended(dir, false);
    }
    let (value, verified, mut accounted) = verify_bindings(dir)?;
    if value["schema"].as_str() == Some(crate::campaign::report::SCHEMA) {
        return verify_campaign(dir, value, verified, accounted);
    }
    if value["schema"].as_str() == Some(crate::rundir::bisect::SCHEMA) {
        return verify_bisection(dir, value, verified, accounted);
    }
    if value["schema"].as_str() == Some(crate::rundir::gate::SCHEMA) {
        return verify_gate(dir, value, verified, accounted);
    }
    let mut parsed: Report = serde_json::from_value(value)
        .map_err(|e| Mismatch(format!("{REPORT} does not match its schema: {e}")))?;
    // Its timelines, streamed from jobs.jsonl.gz (already hashed above).
    parsed.read_jobs(dir, false).map_err(|e| Mismatch(e.to_string()))?;
    let derived = crate::render::derived(&parsed).map_err(|e| Mismatch(e.to_string()))?;
    check_derived(dir, derived, &mut accounted)?;
    accounted.check(dir)?;
    Ok(verified)
}

/// Each derived file (summary, plots) must be byte for byte what the report renders.
fn check_derived(
    dir: &Path,
    files: Vec<crate::render::Rendered>,
    accounted: &mut Accounted,
) -> Result<(), Mismatch> {
    for f in files {
        match std::fs::read(dir.join(&f.path)) {
            Ok(b) if b == f.bytes => accounted.file(&f.path),
            Ok(_) => {
                return Err(Mismatch(format!(
                    "{} differs from what {REPORT} renders (`coordinator render` redraws it; \
                     a coordinator of another build may draw plots differently)",
                    f.path
                )));
            }
            Err(e) => return Err(Mismatch(format!("cannot read {}: {e}", f.path))),
        }
    }
    Ok(())
}

/// failure.json read as its type (the value is kept for its seal).
fn failure_of(value: &Value) -> Result<Failure, Mismatch> {
    Failure::deserialize(value)
        .map_err(|e| Mismatch(format!("{FAILURE} does not match its schema: {e}")))
}

/// Why a failed run has nothing to verify a result by.
fn failed(failure: &Failure) -> Mismatch {
    Mismatch(format!("no {REPORT}: the run failed ({}: {})", failure.reason, failure.message))
}

/// A run killed at its declared point has no report: what it has is its
/// declaration, its environment and failure.json, which binds both. Any
/// other failed run is an error (it has nothing to verify a result by),
/// unless `failed_is_finding`: a campaign's failed trial, which its report
/// records, is held to the same bindings whatever its reason.
fn verify_ended(dir: &Path, failed_is_finding: bool) -> Result<Verified, Mismatch> {
    let bytes = std::fs::read(dir.join(FAILURE))
        .map_err(|e| Mismatch(format!("cannot read {FAILURE}: {e}")))?;
    let value: Value = serde_json::from_slice(&bytes)
        .map_err(|e| Mismatch(format!("{FAILURE} is not valid JSON: {e}")))?;
    let failure = failure_of(&value)?;
    if failure.reason != "killed_at_point" && !failed_is_finding {
        return Err(failed(&failure));
    }
    if canonical::value_bytes(&value) != bytes {
        return Err(Mismatch(format!(
            "{FAILURE} is not in canonical form: it was edited after it was written"
        )));
    }
    check_sealed(dir, &value, FAILURE, &format!("{FAILURE}'s"), "it was edited")?;
    // A failed run keeps nothing else: what it had written was removed,
    // but what a program left in it, which failure.json names.
    let mut accounted = Accounted::default();
    for f in [DECLARATION, ENVIRONMENT, FAILURE] {
        accounted.file(f);
    }
    for k in &failure.kept {
        if !is_safe_relative(k) {
            return Err(Mismatch(format!("{FAILURE} keeps '{k}', which leaves the run directory")));
        }
        accounted.file(k);
        accounted.subtree(k);
    }
    accounted.check(dir)?;
    Ok(Verified {
        mode: value["mode"].as_str().unwrap_or("?").to_string(),
        stages: 0,
        artifacts: 0,
        killed: true,
    })
}

/// A sealed evidence `file` (named `whose` in a message): its body digest
/// holds, and it binds the declaration and the environment.
fn check_sealed(
    dir: &Path,
    value: &Value,
    file: &str,
    whose: &str,
    edited: &str,
) -> Result<(), Mismatch> {
    if value[report::BODY_DIGEST_KEY].as_str() != Some(report::body_digest(value).as_str()) {
        return Err(Mismatch(format!(
            "{file} body does not match its {}: {edited}",
            report::BODY_DIGEST_KEY
        )));
    }
    for (bound, key) in [(DECLARATION, "declaration_sha256"), (ENVIRONMENT, "environment_sha256")] {
        let got = std::fs::read(dir.join(bound))
            .map(|b| canonical::sha256_hex(&b))
            .map_err(|e| Mismatch(format!("cannot read {bound}: {e}")))?;
        if value[key].as_str() != Some(got.as_str()) {
            return Err(Mismatch(format!("{bound} does not match {whose} {key}")));
        }
    }
    Ok(())
}

/// A campaign: its bindings (checked), every run's own bindings (a killed
/// run's too), each state directory against its digest, its summary and
/// plot against what its report renders, and nothing else in it.
fn verify_campaign(
    dir: &Path,
    value: Value,
    verified: Verified,
    mut accounted: Accounted,
) -> Result<Verified, Mismatch> {
    let parsed: crate::campaign::report::CampaignReport = serde_json::from_value(value)
        .map_err(|e| Mismatch(format!("{REPORT} does not match the campaign schema: {e}")))?;
    let runs = parsed.artifacts.iter().filter(|a| {
        a.path.ends_with(&format!("/{REPORT}")) || a.path.ends_with(&format!("/{FAILURE}"))
    });
    for a in runs {
        let run = Path::new(&a.path).parent().unwrap_or(Path::new(""));
        let finding = parsed.failed_trials.iter().any(|f| Path::new(&f.run) == run)
            && a.path.ends_with(&format!("/{FAILURE}"));
        match finding {
            true => verify_ended(&dir.join(run), true),
            false => verify(&dir.join(run)),
        }
        .map_err(|e| Mismatch(format!("run {}: {e}", run.display())))?;
        accounted.subtree(run);
    }
    for s in &parsed.states {
        if !is_safe_relative(&s.path) {
            return Err(Mismatch(format!("state path '{}' leaves the campaign directory", s.path)));
        }
        let found = evidence::digest::digest(&dir.join(&s.path))
            .map_err(|e| Mismatch(format!("state directory {} cannot be read: {e}", s.path)))?;
        if found.sha256 != s.sha256 || found.files != s.files || found.bytes != s.bytes {
            return Err(Mismatch(format!(
                "state directory {} does not match its recorded digest: a file in it changed",
                s.path
            )));
        }
        accounted.subtree(&s.path);
    }
    // Paths for the person, never evidence: nothing to verify them by.
    if dir.join(crate::campaign::PRIVATE).is_dir() {
        accounted.subtree(crate::campaign::PRIVATE);
    }
    let derived =
        crate::campaign::summary::derived(&parsed).map_err(|e| Mismatch(e.to_string()))?;
    check_derived(dir, derived, &mut accounted)?;
    accounted.check(dir)?;
    Ok(Verified { mode: "campaign".into(), stages: parsed.steps.len(), ..verified })
}

/// Every binding except the derived files (summary.md, plots); returns the
/// report with what was checked, and the files those bindings account for.
fn verify_bindings(dir: &Path) -> Result<(Value, Verified, Accounted), Mismatch> {
    let report_path = dir.join(REPORT);
    let bytes = match std::fs::read(&report_path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Mismatch(match std::fs::read(dir.join(FAILURE)) {
                Ok(f) => match serde_json::from_slice::<Failure>(&f) {
                    Ok(failure) => return Err(failed(&failure)),
                    Err(e) => format!("no {REPORT}, and {FAILURE} does not match its schema: {e}"),
                },
                Err(_) if !dir.is_dir() => format!("'{}' is not a directory", dir.display()),
                Err(_) if dir.join(crate::rundir::DECLARATION).is_file() => unended(dir),
                Err(_) => format!("no {REPORT} in '{}'", dir.display()),
            }));
        }
        Err(e) => return Err(Mismatch(format!("cannot read {REPORT}: {e}"))),
    };
    let value: Value = serde_json::from_slice(&bytes)
        .map_err(|e| Mismatch(format!("{REPORT} is not valid JSON: {e}")))?;
    if canonical::value_bytes(&value) != bytes {
        return Err(Mismatch(format!(
            "{REPORT} is not in canonical form: it was edited after it was written"
        )));
    }
    let (schema, version) = (value["schema"].as_str(), value["schema_version"].as_u64());
    let campaign = (
        Some(crate::campaign::report::SCHEMA),
        Some(crate::campaign::report::SCHEMA_VERSION as u64),
    );
    let bisection =
        (Some(crate::rundir::bisect::SCHEMA), Some(crate::rundir::bisect::SCHEMA_VERSION as u64));
    let gate =
        (Some(crate::rundir::gate::SCHEMA), Some(crate::rundir::gate::SCHEMA_VERSION as u64));
    if (schema, version) != (Some(report::SCHEMA), Some(report::SCHEMA_VERSION as u64))
        && (schema, version) != campaign
        && (schema, version) != bisection
        && (schema, version) != gate
    {
        let shown = |x: Option<String>| x.unwrap_or_else(|| "none".into());
        return Err(Mismatch(format!(
            "{REPORT} is {} schema_version {}; this coordinator verifies {} schema_version {}",
            shown(schema.map(str::to_string)),
            shown(version.map(|v| v.to_string())),
            report::SCHEMA,
            report::SCHEMA_VERSION
        )));
    }
    check_sealed(dir, &value, REPORT, "the report's", "a figure was changed")?;
    let artifacts = value["artifacts"].as_array().cloned().unwrap_or_default();
    let recorded: std::collections::BTreeSet<&str> =
        artifacts.iter().filter_map(|a| a["path"].as_str()).collect();
    let checked: Vec<Result<Vec<PathBuf>, Mismatch>> =
        artifacts.par_iter().map(|a| check_artifact(dir, a)).collect();
    let mut accounted = Accounted::default();
    for f in [DECLARATION, ENVIRONMENT, REPORT].into_iter().chain(recorded) {
        accounted.file(f);
    }
    for listed in checked {
        listed?.into_iter().for_each(|f| accounted.file(f));
    }
    let verified = Verified {
        mode: value["mode"].as_str().unwrap_or("?").to_string(),
        stages: value["stages"].as_object().map(|m| m.len()).unwrap_or(0),
        artifacts: artifacts.len(),
        killed: false,
    };
    Ok((value, verified, accounted))
}

/// One artifact against its record; returns the files a manifest lists
/// (each checked), which are accounted for with it.
fn check_artifact(dir: &Path, a: &Value) -> Result<Vec<PathBuf>, Mismatch> {
    let path =
        a["path"].as_str().ok_or_else(|| Mismatch("an artifact record has no path".into()))?;
    if !is_safe_relative(path) {
        return Err(Mismatch(format!("artifact path '{path}' leaves the run directory")));
    }
    let (sha, bytes) = canonical::file_sha256(&dir.join(path))
        .map_err(|e| Mismatch(format!("artifact {path} cannot be read: {e}")))?;
    if a["sha256"].as_str() != Some(sha.as_str()) || a["bytes"].as_u64() != Some(bytes) {
        return Err(Mismatch(format!("artifact {path} does not match its recorded SHA-256")));
    }
    match a["kind"].as_str() {
        Some("manifest") => check_manifest(dir, path),
        _ => Ok(Vec::new()),
    }
}

/// A manifest lists files below its own directory; each must match. What
/// else is there the directory walk names.
fn check_manifest(dir: &Path, path: &str) -> Result<Vec<PathBuf>, Mismatch> {
    let listing = crate::manifest::Manifest::read(&dir.join(path)).map_err(|e| {
        Mismatch(match e.kind() {
            std::io::ErrorKind::InvalidData => format!("manifest {path} is not valid JSON: {e}"),
            _ => format!("manifest {path} cannot be read: {e}"),
        })
    })?;
    let base = Path::new(path).parent().unwrap_or(Path::new(""));
    let entries: Vec<(&String, &crate::manifest::Listed)> = listing.files.iter().collect();
    let problems: Vec<Option<String>> = entries
        .par_iter()
        .map(|(rel, want)| {
            let shown = base.join(rel).display().to_string();
            if !is_safe_relative(rel) {
                return Some(format!("manifest {path} lists '{rel}', which leaves its directory"));
            }
            match evidence::file_sha256(&dir.join(base).join(rel)) {
                Ok((sha, n)) if want.sha256 == sha && want.bytes == n => None,
                Ok(_) => Some(format!("file {shown} does not match its SHA-256 in {path}")),
                Err(e) => Some(format!("file {shown} listed in {path} cannot be read: {e}")),
            }
        })
        .collect();
    if let Some(p) = problems.into_iter().flatten().next() {
        return Err(Mismatch(p));
    }
    Ok(entries.into_iter().map(|(rel, _)| base.join(rel)).collect())
}

/// A report whose every binding holds except, perhaps, its derived files
/// (summary.md, plots): what `coordinator render` may redraw from.
pub enum Checked {
    Run(Box<Report>),
    Campaign(Box<crate::campaign::report::CampaignReport>),
    Bisection(Box<crate::rundir::bisect::BisectReport>),
    Gate(Box<crate::rundir::gate::GateReport>),
}

/// Checks every binding of a run or campaign directory but its derived
/// files, and hands back the parsed report; the error names the first thing
/// that differs. Nothing is written.
pub fn checked_report(dir: &Path) -> Result<Checked, Mismatch> {
    let (value, _, _) = verify_bindings(dir)?;
    if value["schema"].as_str() == Some(crate::campaign::report::SCHEMA) {
        return serde_json::from_value(value)
            .map(|c| Checked::Campaign(Box::new(c)))
            .map_err(|e| Mismatch(format!("{REPORT} does not match the campaign schema: {e}")));
    }
    if value["schema"].as_str() == Some(crate::rundir::bisect::SCHEMA) {
        return serde_json::from_value(value)
            .map(|c| Checked::Bisection(Box::new(c)))
            .map_err(|e| Mismatch(format!("{REPORT} does not match the bisection schema: {e}")));
    }
    if value["schema"].as_str() == Some(crate::rundir::gate::SCHEMA) {
        return serde_json::from_value(value)
            .map(|c| Checked::Gate(Box::new(c)))
            .map_err(|e| Mismatch(format!("{REPORT} does not match the gate schema: {e}")));
    }
    serde_json::from_value(value)
        .map(|r| Checked::Run(Box::new(r)))
        .map_err(|e| Mismatch(format!("{REPORT} does not match its schema: {e}")))
}

#[cfg(test)]
mod tests {
    use super::verify;

    /// Where there is no report to check, the error says which case it is:
    /// no directory, a directory with neither ending, a report that is there
    /// but cannot be read.
    #[test]
    fn a_directory_without_a_readable_report_is_named_for_what_it_is() {
        let tmp = tempfile::tempdir().unwrap();
        let err = |p: &std::path::Path| verify(p).unwrap_err().0;
        let missing = tmp.path().join("missing");
        assert_eq!(err(&missing), format!("'{}' is not a directory", missing.display()));
        assert_eq!(err(tmp.path()), format!("no report.json in '{}'", tmp.path().display()));
        std::fs::create_dir(tmp.path().join("report.json")).unwrap();
        let unreadable = err(tmp.path());
        assert!(unreadable.starts_with("cannot read report.json: "), "{unreadable}");
        // A run killed by SIGKILL: a declaration, no ending, what it left.
        let killed = tmp.path().join("killed");
        std::fs::create_dir(&killed).unwrap();
        for f in ["declaration.json", "environment.json", ".jobs.jsonl.gz.tmp-4242"] {
            std::fs::write(killed.join(f), "{}").unwrap();
        }
        std::fs::create_dir(killed.join("private-output")).unwrap();
        assert_eq!(
            err(&killed),
            format!(
                "neither report.json nor failure.json in '{}': the run was killed (SIGKILL leaves no failure.json) or is still running; beside its declaration it holds .jobs.jsonl.gz.tmp-4242, private-output",
                killed.display()
            )
        );
    }
}
