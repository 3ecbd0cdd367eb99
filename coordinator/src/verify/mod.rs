//! `coordinator verify DIR`: recompute every binding and artifact hash. It
//! only reads: redrawing what a report derives is `render`'s, which `cli`
//! calls on a report `checked_report` hands back.

use crate::modes::Report;
use crate::rundir::{DECLARATION, ENVIRONMENT, FAILURE, REPORT, is_safe_relative, report};
use evidence::canonical;
use rayon::prelude::*;
use serde_json::Value;
use std::path::Path;

/// The first binding of a directory that does not hold, in one line: why it
/// does not verify (exit 3).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Mismatch(pub String);

impl From<String> for Mismatch {
    fn from(why: String) -> Self {
        Mismatch(why)
    }
}

impl From<&str> for Mismatch {
    fn from(why: &str) -> Self {
        Mismatch(why.to_string())
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

/// Checks every binding of the run directory; the error names the first
/// thing that differs.
pub fn verify(dir: &Path) -> Result<Verified, Mismatch> {
    if !dir.join(REPORT).exists() && dir.join(FAILURE).exists() {
        return verify_killed(dir);
    }
    let (value, verified) = verify_bindings(dir)?;
    if value["schema"].as_str() == Some(crate::campaign::report::SCHEMA) {
        return verify_campaign(dir, value, verified);
    }
    let parsed: Report = serde_json::from_value(value)
        .map_err(|e| format!("{REPORT} does not match its schema: {e}"))?;
    check_derived(dir, crate::render::derived(&parsed).map_err(|e| e.to_string())?)?;
    Ok(verified)
}

/// Each derived file (summary, plots) must be byte for byte what the report renders.
fn check_derived(dir: &Path, files: Vec<crate::render::Rendered>) -> Result<(), Mismatch> {
    for f in files {
        match std::fs::read(dir.join(&f.path)) {
            Ok(b) if b == f.bytes => {}
            Ok(_) => {
                return Err(format!(
                    "{} differs from what {REPORT} renders (`coordinator render` redraws it; \
                     a coordinator of another build may draw plots differently)",
                    f.path
                )
                .into());
            }
            Err(e) => return Err(format!("cannot read {}: {e}", f.path).into()),
        }
    }
    Ok(())
}

/// A run killed at its declared point has no report: what it has is its
/// declaration, its environment and failure.json, which binds both. Any
/// other failed run is an error: it has nothing to verify a result by.
fn verify_killed(dir: &Path) -> Result<Verified, Mismatch> {
    let bytes =
        std::fs::read(dir.join(FAILURE)).map_err(|e| format!("cannot read {FAILURE}: {e}"))?;
    let value: Value =
        serde_json::from_slice(&bytes).map_err(|e| format!("{FAILURE} is not valid JSON: {e}"))?;
    let reason = value["reason"].as_str().unwrap_or("?");
    if reason != "killed_at_point" {
        return Err(format!(
            "no {REPORT}: the run failed ({reason}: {})",
            value["message"].as_str().unwrap_or("see failure.json")
        )
        .into());
    }
    if canonical::to_bytes(&value) != bytes {
        return Err(format!(
            "{FAILURE} is not in canonical form: it was edited after it was written"
        )
        .into());
    }
    check_sealed(dir, &value, FAILURE, &format!("{FAILURE}'s"), "it was edited")?;
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
        return Err(format!(
            "{file} body does not match its {}: {edited}",
            report::BODY_DIGEST_KEY
        )
        .into());
    }
    for (bound, key) in [(DECLARATION, "declaration_sha256"), (ENVIRONMENT, "environment_sha256")] {
        let got = std::fs::read(dir.join(bound))
            .map(|b| canonical::sha256_hex(&b))
            .map_err(|e| format!("cannot read {bound}: {e}"))?;
        if value[key].as_str() != Some(got.as_str()) {
            return Err(format!("{bound} does not match {whose} {key}").into());
        }
    }
    Ok(())
}

/// A campaign: its bindings (checked), every run's own bindings (a killed
/// run's too), and its summary and plot against what its report renders.
fn verify_campaign(dir: &Path, value: Value, verified: Verified) -> Result<Verified, Mismatch> {
    let parsed: crate::campaign::report::CampaignReport = serde_json::from_value(value)
        .map_err(|e| format!("{REPORT} does not match the campaign schema: {e}"))?;
    let runs = parsed.artifacts.iter().filter(|a| {
        a.path.ends_with(&format!("/{REPORT}")) || a.path.ends_with(&format!("/{FAILURE}"))
    });
    for a in runs {
        let run = Path::new(&a.path).parent().unwrap_or(Path::new(""));
        verify(&dir.join(run)).map_err(|e| format!("run {}: {e}", run.display()))?;
    }
    check_derived(dir, crate::campaign::summary::derived(&parsed).map_err(|e| e.to_string())?)?;
    Ok(Verified { mode: "campaign".into(), stages: parsed.steps.len(), ..verified })
}

/// Every binding except the derived files (summary.md, plots); returns the
/// report with what was checked.
fn verify_bindings(dir: &Path) -> Result<(Value, Verified), Mismatch> {
    let report_path = dir.join(REPORT);
    let bytes = match std::fs::read(&report_path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Mismatch(match std::fs::read(dir.join(FAILURE)) {
                Ok(f) => {
                    let v: Value = serde_json::from_slice(&f).unwrap_or(Value::Null);
                    format!(
                        "no {REPORT}: the run failed ({}: {})",
                        v["reason"].as_str().unwrap_or("?"),
                        v["message"].as_str().unwrap_or("see failure.json")
                    )
                }
                Err(_) if !dir.is_dir() => format!("'{}' is not a directory", dir.display()),
                Err(_) => format!("no {REPORT} in '{}'", dir.display()),
            }));
        }
        Err(e) => return Err(format!("cannot read {REPORT}: {e}").into()),
    };
    let value: Value =
        serde_json::from_slice(&bytes).map_err(|e| format!("{REPORT} is not valid JSON: {e}"))?;
    if canonical::to_bytes(&value) != bytes {
        return Err(format!(
            "{REPORT} is not in canonical form: it was edited after it was written"
        )
        .into());
    }
    let (schema, version) = (value["schema"].as_str(), value["schema_version"].as_u64());
    let campaign = (
        Some(crate::campaign::report::SCHEMA),
        Some(crate::campaign::report::SCHEMA_VERSION as u64),
    );
    if (schema, version) != (Some(report::SCHEMA), Some(report::SCHEMA_VERSION as u64))
        && (schema, version) != campaign
    {
        return Err(format!(
            "{REPORT} has schema {schema:?} version {version:?}; this coordinator verifies {} version {}",
            report::SCHEMA,
            report::SCHEMA_VERSION
        ).into());
    }
    check_sealed(dir, &value, REPORT, "the report's", "a figure was changed")?;
    let artifacts = value["artifacts"].as_array().cloned().unwrap_or_default();
    // Every recorded artifact path: a manifest's directory may hold other
    // artifacts beside what it lists (a normalizer written into the cache).
    let recorded: std::collections::BTreeSet<&str> =
        artifacts.iter().filter_map(|a| a["path"].as_str()).collect();
    let problems: Vec<Option<Mismatch>> =
        artifacts.par_iter().map(|a| check_artifact(dir, a, &recorded).err()).collect();
    if let Some(p) = problems.into_iter().flatten().next() {
        return Err(p);
    }
    let verified = Verified {
        mode: value["mode"].as_str().unwrap_or("?").to_string(),
        stages: value["stages"].as_object().map(|m| m.len()).unwrap_or(0),
        artifacts: artifacts.len(),
        killed: false,
    };
    Ok((value, verified))
}

fn check_artifact(
    dir: &Path,
    a: &Value,
    recorded: &std::collections::BTreeSet<&str>,
) -> Result<(), Mismatch> {
    let path = a["path"].as_str().ok_or("an artifact record has no path")?;
    if !is_safe_relative(path) {
        return Err(format!("artifact path '{path}' leaves the run directory").into());
    }
    let (sha, bytes) = canonical::file_sha256(&dir.join(path))
        .map_err(|e| format!("artifact {path} cannot be read: {e}"))?;
    if a["sha256"].as_str() != Some(sha.as_str()) || a["bytes"].as_u64() != Some(bytes) {
        return Err(format!("artifact {path} does not match its recorded SHA-256").into());
    }
    if a["kind"].as_str() == Some("manifest") {
        check_manifest(dir, path, recorded)?;
    }
    Ok(())
}

/// A manifest lists files below its own directory; each must match, and no
/// other file may be there but the run's other recorded artifacts.
fn check_manifest(
    dir: &Path,
    path: &str,
    recorded: &std::collections::BTreeSet<&str>,
) -> Result<(), Mismatch> {
    let bytes = std::fs::read(dir.join(path))
        .map_err(|e| format!("manifest {path} cannot be read: {e}"))?;
    let v: Value = serde_json::from_slice(&bytes)
        .map_err(|e| format!("manifest {path} is not valid JSON: {e}"))?;
    let base = Path::new(path).parent().unwrap_or(Path::new(""));
    let files = v["files"].as_object().ok_or_else(|| format!("manifest {path} lists no files"))?;
    let mut entries: Vec<(&String, &Value)> = files.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    let problems: Vec<Option<String>> = entries
        .par_iter()
        .map(|(rel, want)| {
            let shown = base.join(rel).display().to_string();
            if !is_safe_relative(rel) {
                return Some(format!("manifest {path} lists '{rel}', which leaves its directory"));
            }
            match evidence::file_sha256(&dir.join(base).join(rel)) {
                Ok((sha, n))
                    if want["sha256"].as_str() == Some(sha.as_str())
                        && want["bytes"].as_u64() == Some(n) =>
                {
                    None
                }
                Ok(_) => Some(format!("cache file {shown} does not match its SHA-256 in {path}")),
                Err(e) => Some(format!("cache file {shown} listed in {path} cannot be read: {e}")),
            }
        })
        .collect();
    if let Some(p) = problems.into_iter().flatten().next() {
        return Err(Mismatch(p));
    }
    // Nothing beside what it lists: an added file is an edit too.
    let mut found = Vec::new();
    list_files(&dir.join(base), Path::new(""), &mut found)
        .map_err(|e| format!("cannot list the directory of {path}: {e}"))?;
    let manifest_name = Path::new(path).file_name().map(Path::new).unwrap_or(Path::new(""));
    for rel in found {
        let listed = files.contains_key(&rel.to_string_lossy().into_owned());
        let artifact = recorded.contains(base.join(&rel).to_string_lossy().as_ref());
        if !listed && !artifact && rel != manifest_name {
            return Err(format!(
                "{} is not listed in {path}: a file was added after it was written",
                base.join(&rel).display()
            )
            .into());
        }
    }
    Ok(())
}

/// Every file below `dir`, relative to it (symlinks are reported as files).
fn list_files(dir: &Path, rel: &Path, out: &mut Vec<std::path::PathBuf>) -> std::io::Result<()> {
    for e in std::fs::read_dir(dir.join(rel))? {
        let e = e?;
        let r = rel.join(e.file_name());
        if e.file_type()?.is_dir() {
            list_files(dir, &r, out)?;
        } else {
            out.push(r);
        }
    }
    Ok(())
}

/// A report whose every binding holds except, perhaps, its derived files
/// (summary.md, plots): what `coordinator render` may redraw from.
pub(crate) enum Checked {
    Run(Box<Report>),
    Campaign(Box<crate::campaign::report::CampaignReport>),
}

/// Checks every binding of a run or campaign directory but its derived
/// files, and hands back the parsed report; the error names the first thing
/// that differs. Nothing is written.
pub(crate) fn checked_report(dir: &Path) -> Result<Checked, Mismatch> {
    let (value, _) = verify_bindings(dir)?;
    if value["schema"].as_str() == Some(crate::campaign::report::SCHEMA) {
        return serde_json::from_value(value)
            .map(|c| Checked::Campaign(Box::new(c)))
            .map_err(|e| Mismatch(format!("{REPORT} does not match the campaign schema: {e}")));
    }
    serde_json::from_value(value)
        .map(|r| Checked::Run(Box::new(r)))
        .map_err(|e| Mismatch(format!("{REPORT} does not match its schema: {e}")))
}
