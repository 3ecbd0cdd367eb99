//! Spans without editing code (`--span`): for a command (or a preparation
//! program) given span targets, a private directory holding the helper
//! package and a `sitecustomize` that wraps the named functions when their
//! modules are imported, put first on `PYTHONPATH`. The `sitecustomize`
//! chains any the user had. A command given no target gets none of this:
//! no directory, no `PYTHONPATH` change.
//!
//! The bootstrap says which targets it wrapped (`{"wrapped": …}` lines in
//! the spans file); the others are the stage's `spans_not_found`.

use super::StageError;
use protocol::SpanTarget;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The files of the bootstrap directory, from the helper package.
const FILES: [(&str, &str); 4] = [
    ("sitecustomize.py", include_str!("../../../python/stagebench/bootstrap/sitecustomize.py")),
    ("stagebench/__init__.py", include_str!("../../../python/stagebench/__init__.py")),
    ("stagebench/autospan.py", include_str!("../../../python/stagebench/autospan.py")),
    ("stagebench/_spans.py", include_str!("../../../python/stagebench/_spans.py")),
];

/// The variable naming the targets, as JSON.
pub const TARGETS: &str = "STAGEBENCH_SPAN_TARGETS";

/// A stage's bootstrap directory, removed when dropped.
pub struct Bootstrap {
    dir: PathBuf,
    targets: Vec<SpanTarget>,
}

impl Bootstrap {
    /// The directory for `targets` below the run directory; None for none.
    pub fn create(
        run_dir: &Path,
        job_tag: &str,
        targets: &[SpanTarget],
    ) -> Result<Option<Bootstrap>, StageError> {
        if targets.is_empty() {
            return Ok(None);
        }
        let dir = run_dir.join(format!(".spans-bootstrap-{job_tag}"));
        let io = |path: &Path, source| StageError::Io { path: path.display().to_string(), source };
        std::fs::create_dir(&dir).map_err(|e| io(&dir, e))?;
        let b = Bootstrap { dir, targets: targets.to_vec() };
        std::fs::create_dir(b.dir.join("stagebench")).map_err(|e| io(&b.dir, e))?;
        for (name, text) in FILES {
            let path = b.dir.join(name);
            std::fs::write(&path, text).map_err(|e| io(&path, e))?;
        }
        Ok(Some(b))
    }

    /// `PYTHONPATH` with the bootstrap first, and the targets.
    pub fn apply(&self, cmd: &mut Command) {
        let path = match std::env::var_os("PYTHONPATH").filter(|p| !p.is_empty()) {
            Some(old) => {
                let mut p = self.dir.clone().into_os_string();
                p.push(":");
                p.push(old);
                p
            }
            None => self.dir.clone().into_os_string(),
        };
        let targets: Vec<serde_json::Value> = self
            .targets
            .iter()
            .map(|t| match t {
                SpanTarget::Function { module, qualname, name } => {
                    serde_json::json!({ "module": module, "qualname": qualname, "name": name })
                }
                SpanTarget::Preset(p) => serde_json::json!({ "preset": p }),
            })
            .collect();
        cmd.env("PYTHONPATH", path).env(TARGETS, serde_json::Value::from(targets).to_string());
    }

    /// The targets the bootstrap never reported wrapping, as spelled.
    pub fn not_found(&self, wrapped: &std::collections::BTreeSet<String>) -> Vec<String> {
        self.targets.iter().filter(|t| !wrapped.contains(&key(t))).map(|t| t.to_string()).collect()
    }
}

/// Figures a preset's spans make: with `preset:torch`, the input-wait
/// fraction, `span:loader_wait_s / (span:loader_wait_s + span:step_s)`
/// (waiting over waiting plus computing, as the recipe's fit epoch has it).
pub fn derived(targets: &[SpanTarget], figures: &[protocol::Figure]) -> Vec<protocol::Figure> {
    let torch = targets.iter().any(|t| matches!(t, SpanTarget::Preset(p) if p == "torch"));
    let get = |name: &str| figures.iter().find(|f| f.name == name).map(|f| f.value);
    match (torch, get("span:loader_wait_s"), get("span:step_s")) {
        (true, Some(wait), Some(step)) if wait + step > 0.0 => {
            vec![super::figure("input_wait_fraction", wait / (wait + step))]
        }
        _ => Vec::new(),
    }
}

/// What the bootstrap writes when it wraps `t`.
fn key(t: &SpanTarget) -> String {
    match t {
        SpanTarget::Function { module, qualname, .. } => format!("{module}:{qualname}"),
        SpanTarget::Preset(p) => format!("preset:{p}"),
    }
}

impl Drop for Bootstrap {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_torch_preset_gives_the_input_wait_fraction_from_its_spans() {
        let f = |n: &str, v: f64| protocol::Figure { name: n.into(), value: v };
        let torch = [SpanTarget::Preset("torch".into())];
        let figures = [f("span:loader_wait_s", 1.0), f("span:step_s", 3.0)];
        let got = derived(&torch, &figures);
        assert_eq!(got.len(), 1);
        assert_eq!((got[0].name.as_str(), got[0].value), ("input_wait_fraction", 0.25));
        // Not without the preset, nor without both spans.
        assert!(derived(&[], &figures).is_empty());
        assert!(derived(&torch, &figures[..1]).is_empty());
    }
}
