//! The directories of runs of commits: a bisection's (every probe's run
//! directory) and a gate's (every window's), each verified whole, beside
//! the derived files their report renders.

use super::{Mismatch, Verified, check_derived, verify, verify_ended};
use crate::rundir::REPORT;
use crate::rundir::tree::Accounted;
use serde_json::Value;
use std::path::Path;

/// A bisection: its bindings (checked), then every probe's run directory
/// verified whole (its report.json is the artifact that names it); a
/// failed build's log is a file artifact. Nothing else may be there.
pub(super) fn verify_bisection(
    dir: &Path,
    value: Value,
    verified: Verified,
    mut accounted: Accounted,
) -> Result<Verified, Mismatch> {
    let parsed: crate::rundir::bisect::BisectReport = serde_json::from_value(value)
        .map_err(|e| Mismatch(format!("{REPORT} does not match the bisection schema: {e}")))?;
    for a in parsed.artifacts.iter().filter(|a| a.kind == "run" || a.kind == "failed-run") {
        let run = Path::new(&a.path).parent().unwrap_or(Path::new(""));
        match a.kind == "run" {
            true => verify(&dir.join(run)),
            false => verify_ended(&dir.join(run), true),
        }
        .map_err(|e| Mismatch(format!("probe {}: {e}", run.display())))?;
        accounted.subtree(run);
    }
    let derived = crate::render::bisect::derived(&parsed).map_err(|e| Mismatch(e.to_string()))?;
    check_derived(dir, derived, &mut accounted)?;
    accounted.check(dir)?;
    Ok(Verified { mode: "bisect".into(), stages: parsed.probes.len(), ..verified })
}

/// A gate: its bindings (checked), then every window's run directory
/// verified whole (its report.json is the artifact that names it), and its
/// derived files (summary.md, comment.md, report.html) as they render.
pub(super) fn verify_gate(
    dir: &Path,
    value: Value,
    verified: Verified,
    mut accounted: Accounted,
) -> Result<Verified, Mismatch> {
    let parsed: crate::rundir::gate::GateReport = serde_json::from_value(value)
        .map_err(|e| Mismatch(format!("{REPORT} does not match the gate schema: {e}")))?;
    for a in parsed.artifacts.iter().filter(|a| a.kind == "run") {
        let run = Path::new(&a.path).parent().unwrap_or(Path::new(""));
        verify(&dir.join(run)).map_err(|e| Mismatch(format!("run {}: {e}", run.display())))?;
        accounted.subtree(run);
    }
    check_derived(dir, crate::render::gate::derived(&parsed), &mut accounted)?;
    accounted.check(dir)?;
    Ok(Verified { mode: "gate".into(), stages: parsed.gated.len(), ..verified })
}
