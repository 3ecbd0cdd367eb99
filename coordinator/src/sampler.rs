//! `--sample`: py-spy found, run once and its permission to read the
//! command's processes decided, before anything runs; a run that cannot
//! sample is refused in one line, never measured unsampled.
//!
//! py-spy is looked for beside each command's Python (a virtual
//! environment's `bin/`, where `pip install py-spy` puts it), then in
//! `$VIRTUAL_ENV/bin`, then on `PATH`. The worker attaches it to a
//! command's process by pid, as a sibling rather than a parent (so the
//! command's tree, its figures and its exit status are its own): that
//! needs `ptrace` of a non-child, which Yama's `ptrace_scope` 1 or more
//! forbids to a process without `CAP_SYS_PTRACE`, and 3 to everyone.

use crate::error::Refusal;
use std::path::{Path, PathBuf};

/// py-spy, found and checked.
#[derive(Clone, Debug)]
pub(crate) struct Found {
    pub(crate) path: PathBuf,
    /// What `py-spy --version` printed (`py-spy 0.4.3`): the declaration's.
    pub(crate) version: String,
}

/// Finds py-spy for `commands` (their command lines) and checks that it
/// runs and may attach here.
pub(crate) fn find(commands: &[String]) -> Result<Found, Refusal> {
    let candidates = commands
        .iter()
        .filter_map(|c| beside_python(c))
        .chain(std::env::var_os("VIRTUAL_ENV").map(|v| PathBuf::from(v).join("bin/py-spy")))
        .chain(
            std::env::var_os("PATH")
                .map(|p| std::env::split_paths(&p).map(|d| d.join("py-spy")).collect::<Vec<_>>())
                .unwrap_or_default(),
        );
    let path = candidates.into_iter().find(|p| is_executable(p)).ok_or_else(|| {
        Refusal(
            "--sample needs py-spy, which is neither beside the command's python nor on PATH: pip install py-spy (into the environment the command runs in)"
                .into(),
        )
    })?;
    let out = std::process::Command::new(&path)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| Refusal(format!("--sample: py-spy cannot be run: {e}")))?;
    let version = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() || !version.starts_with("py-spy ") {
        return Err(Refusal("--sample: py-spy --version did not answer as py-spy does".into()));
    }
    ptrace_allowed(yama_scope(), has_cap_sys_ptrace())?;
    Ok(Found { path, version })
}

/// `bin/py-spy` beside the Python a command line runs, when it names one
/// by its path (`/venv/bin/python train.py`, `.venv/bin/python3 -m x`),
/// also through `env` and its variables (`env FOO=1 /venv/bin/python …`)
/// or variables set before it (`FOO=1 /venv/bin/python …`).
fn beside_python(command: &str) -> Option<PathBuf> {
    let mut words = command.split_whitespace().peekable();
    if words.peek().is_some_and(|w| *w == "env" || w.ends_with("/env")) {
        words.next();
        // env's own options (`-i`, `-u NAME`) before the assignments.
        while let Some(w) = words.peek() {
            match *w {
                "-u" | "--unset" | "-C" | "--chdir" | "-S" | "--split-string" => {
                    words.next();
                    words.next();
                }
                w if w.starts_with('-') => {
                    words.next();
                }
                _ => break,
            }
        }
    }
    let first = words.find(|w| !is_assignment(w))?;
    let name = Path::new(first).file_name()?.to_str()?;
    (first.contains('/') && name.starts_with("python"))
        .then(|| Path::new(first).with_file_name("py-spy"))
}

/// A shell or `env` assignment: `NAME=value`, NAME a shell name.
fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        let mut chars = name.chars();
        chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Yama's `ptrace_scope`, where the kernel has Yama.
fn yama_scope() -> Option<u32> {
    std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope").ok()?.trim().parse().ok()
}

/// Whether this process's effective capabilities hold `CAP_SYS_PTRACE` (19).
fn has_cap_sys_ptrace() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    protocol::program::holds_cap_sys_ptrace(&status)
}

/// Whether a sibling may attach, by Yama's scope and the capability.
fn ptrace_allowed(scope: Option<u32>, cap: bool) -> Result<(), Refusal> {
    let refuse = |why: String| {
        Refusal(format!(
            "--sample: py-spy could not attach to the command's processes here ({why}); set kernel.yama.ptrace_scope to 0 (sysctl), run as root, or give the container SYS_PTRACE (docker run --cap-add SYS_PTRACE)"
        ))
    };
    match scope {
        Some(3) => {
            Err(refuse("kernel.yama.ptrace_scope is 3: no process may ptrace another".into()))
        }
        Some(s) if s >= 1 && !cap => Err(refuse(format!(
            "kernel.yama.ptrace_scope is {s}: only a parent may ptrace, and this user lacks CAP_SYS_PTRACE"
        ))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ptrace_is_refused_where_a_sibling_could_not_attach() {
        assert!(ptrace_allowed(None, false).is_ok());
        assert!(ptrace_allowed(Some(0), false).is_ok());
        assert!(ptrace_allowed(Some(1), true).is_ok());
        let no = ptrace_allowed(Some(1), false).unwrap_err().0;
        assert!(no.contains("ptrace_scope is 1") && no.contains("CAP_SYS_PTRACE"), "{no}");
        assert!(ptrace_allowed(Some(3), true).is_err());
        assert!(!no.contains('\n'));
    }

    #[test]
    fn py_spy_is_looked_for_beside_the_commands_python() {
        assert_eq!(
            beside_python("/v/bin/python3 train.py --x"),
            Some(PathBuf::from("/v/bin/py-spy"))
        );
        assert_eq!(beside_python(".venv/bin/python -m m"), Some(PathBuf::from(".venv/bin/py-spy")));
        assert_eq!(beside_python("python3 train.py"), None);
        assert_eq!(beside_python("/usr/bin/env python3"), None);
        // Through env, its options and assignments, or assignments alone.
        let venv = Some(PathBuf::from("/venv/bin/py-spy"));
        assert_eq!(beside_python("env FOO=1 /venv/bin/python t.py"), venv);
        assert_eq!(beside_python("/usr/bin/env -u X A_1=2 B= /venv/bin/python3 t.py"), venv);
        assert_eq!(beside_python("FOO=1 OMP_NUM_THREADS=4 /venv/bin/python t.py"), venv);
        assert_eq!(beside_python("env FOO=1 python t.py"), None);
        assert_eq!(beside_python("env =x /venv/bin/python"), None);
    }
}
