//! The helper in every command (and preparation program): a private
//! directory holding the helper package and a `sitecustomize`, put first on
//! `PYTHONPATH`. In a Python process it imports the helper, which reports
//! at exit the interpreter, the libraries, the frameworks' devices and the
//! hashes of the program's own sources (provenance, whatever the flags);
//! given `--span` targets, it also wraps the named functions when their
//! modules are imported. The `sitecustomize` chains any the user had. A
//! program that is not Python never reads it.
//!
//! The bootstrap says which targets it wrapped (`{"wrapped": …}` lines in
//! the spans file); the others are the stage's `spans_not_found`.

use super::StageError;
use protocol::SpanTarget;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The files of the bootstrap directory: the helper package's every
/// module (a test holds this list to the package's folder).
const FILES: [(&str, &str); 14] = [
    ("sitecustomize.py", include_str!("../../../python/stagebench/bootstrap/sitecustomize.py")),
    ("stagebench/__init__.py", include_str!("../../../python/stagebench/__init__.py")),
    ("stagebench/_sink.py", include_str!("../../../python/stagebench/_sink.py")),
    ("stagebench/_layout.py", include_str!("../../../python/stagebench/_layout.py")),
    ("stagebench/_own.py", include_str!("../../../python/stagebench/_own.py")),
    ("stagebench/_spans.py", include_str!("../../../python/stagebench/_spans.py")),
    ("stagebench/_hooks.py", include_str!("../../../python/stagebench/_hooks.py")),
    ("stagebench/_runtime.py", include_str!("../../../python/stagebench/_runtime.py")),
    ("stagebench/_serve.py", include_str!("../../../python/stagebench/_serve.py")),
    ("stagebench/_trampoline.py", include_str!("../../../python/stagebench/_trampoline.py")),
    ("stagebench/_wrap.py", include_str!("../../../python/stagebench/_wrap.py")),
    ("stagebench/_api.py", include_str!("../../../python/stagebench/_api.py")),
    ("stagebench/_presets.py", include_str!("../../../python/stagebench/_presets.py")),
    ("stagebench/autospan.py", include_str!("../../../python/stagebench/autospan.py")),
];

/// The variable naming the targets, as JSON.
pub const TARGETS: &str = "STAGEBENCH_SPAN_TARGETS";

/// A stage's bootstrap: the helper's directory and the stage's targets.
pub struct Bootstrap {
    dir: PathBuf,
    targets: Vec<SpanTarget>,
    /// The stage wrote the directory itself (no worker-wide one), and
    /// removes it when dropped.
    owned: bool,
}

/// The worker's helper directory, once [`share`] wrote it.
static SHARED: std::sync::Mutex<Option<PathBuf>> = std::sync::Mutex::new(None);

/// The worker-wide helper directory, written once before the worker's
/// first stage, so that no stage's measurement (its I/O, its time) holds
/// the writing of the helper's files; removed when dropped.
pub struct Shared {
    dir: PathBuf,
}

/// The prefix of the helper's directories below the run directory (one
/// per worker or job): what sampled stacks name the helper's files below.
pub(crate) const BOOTSTRAP_DIR: &str = ".spans-bootstrap-";

/// Writes the worker-wide helper directory below the run directory.
pub fn share(run_dir: &Path, tag: &str) -> Result<Shared, StageError> {
    let dir = run_dir.join(format!("{BOOTSTRAP_DIR}{tag}"));
    write_files(&dir)?;
    *SHARED.lock().unwrap_or_else(|e| e.into_inner()) = Some(dir.clone());
    Ok(Shared { dir })
}

impl Drop for Shared {
    fn drop(&mut self) {
        *SHARED.lock().unwrap_or_else(|e| e.into_inner()) = None;
        let _ = std::fs::remove_dir_all(&self.dir);
        crate::tree::removed(&self.dir);
    }
}

/// The helper's files in a new directory `dir`.
fn write_files(dir: &Path) -> Result<(), StageError> {
    let io = |path: &Path, source| StageError::Io { path: path.display().to_string(), source };
    std::fs::create_dir(dir).map_err(|e| io(dir, e))?;
    crate::tree::remove_if_killed(dir);
    std::fs::create_dir(dir.join("stagebench")).map_err(|e| io(dir, e))?;
    for (name, text) in FILES {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|e| io(&path, e))?;
    }
    Ok(())
}

impl Bootstrap {
    /// The directory for `targets` (maybe none: the helper then only
    /// reports the runtime at exit) below the run directory.
    pub fn create(
        run_dir: &Path,
        job_tag: &str,
        targets: &[SpanTarget],
    ) -> Result<Option<Bootstrap>, StageError> {
        if targets.is_empty()
            && std::env::var_os(protocol::env::NO_PROVENANCE).is_some_and(|v| v == "1")
        {
            return Ok(None);
        }
        if let Some(dir) = SHARED.lock().unwrap_or_else(|e| e.into_inner()).clone() {
            return Ok(Some(Bootstrap { dir, targets: targets.to_vec(), owned: false }));
        }
        let dir = run_dir.join(format!("{BOOTSTRAP_DIR}{job_tag}"));
        write_files(&dir)?;
        Ok(Some(Bootstrap { dir, targets: targets.to_vec(), owned: true }))
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
                SpanTarget::Stage { module, qualname, name } => serde_json::json!({
                    "module": module, "qualname": qualname, "name": name, "stage": true
                }),
            })
            .collect();
        cmd.env("PYTHONPATH", path);
        match targets.is_empty() {
            true => cmd.env_remove(TARGETS),
            false => cmd.env(TARGETS, serde_json::Value::from(targets).to_string()),
        };
    }

    /// The targets the bootstrap never reported wrapping, as spelled.
    pub fn not_found(&self, wrapped: &std::collections::BTreeSet<String>) -> Vec<String> {
        self.targets.iter().filter(|t| !wrapped.contains(&key(t))).map(|t| t.to_string()).collect()
    }
}

/// What the bootstrap writes when it wraps `t`.
fn key(t: &SpanTarget) -> String {
    match t {
        SpanTarget::Function { module, qualname, .. }
        | SpanTarget::Stage { module, qualname, .. } => {
            format!("{module}:{qualname}")
        }
        SpanTarget::Preset(p) => format!("preset:{p}"),
    }
}

impl Drop for Bootstrap {
    fn drop(&mut self) {
        if self.owned {
            let _ = std::fs::remove_dir_all(&self.dir);
            crate::tree::removed(&self.dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every module of the helper package rides in the bootstrap, and
    /// nothing that is not one: a module added to python/stagebench/ and
    /// left out here would make `--span` fail with an ImportError.
    #[test]
    fn the_bootstrap_holds_every_module_of_the_helper() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../python/stagebench");
        let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".py"))
            .map(|n| format!("stagebench/{n}"))
            .collect();
        on_disk.push("sitecustomize.py".into());
        on_disk.sort();
        let mut embedded: Vec<String> = FILES.iter().map(|(n, _)| n.to_string()).collect();
        embedded.sort();
        assert_eq!(embedded, on_disk);
    }
}
