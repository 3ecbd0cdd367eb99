//! When py-spy cannot be had or may not read: one line that says why.

use super::ONE_AT_A_TIME;
use harness::{coordinator_with_output, py_spy_python, run};
use std::path::Path;
use std::process::Command;

/// `c` run by `setpriv` without `CAP_SYS_PTRACE` (dropped from the bounding
/// set, so nothing it starts has it).
fn without_ptrace(c: &Command) -> Command {
    let mut s = Command::new("setpriv");
    s.args(["--bounding-set=-sys_ptrace", "--inh-caps=-sys_ptrace", "--"]);
    s.arg(c.get_program()).args(c.get_args());
    for (k, v) in c.get_envs() {
        match v {
            Some(v) => s.env(k, v),
            None => s.env_remove(k),
        };
    }
    s
}

/// A command run as `nobody`, and a worker (root) that may or may not read
/// other users' processes: py-spy, the worker's child, samples it only when
/// the worker holds CAP_SYS_PTRACE, and says why in one line when not.
#[test]
fn with_ptrace_forbidden_the_one_line_says_why_and_with_it_the_stage_is_sampled() {
    let Some(py) = py_spy_python("with_ptrace_forbidden") else { return };
    let root = std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines().any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
    });
    let setpriv =
        Command::new("setpriv").arg("--version").output().is_ok_and(|o| o.status.success());
    if !root || !setpriv {
        harness::skip("with_ptrace_forbidden", "needs root and setpriv to run a command as nobody");
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // py-spy is found in the venv; the command, as nobody, is the system's
    // Python (the venv may sit where nobody may not read).
    let venv = Path::new(&py).parent().unwrap().parent().unwrap().to_path_buf();
    let command = "setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 -c 'sum(i for i in range(3 * 10**7))'";
    let attempt = |forbidden: bool| {
        let (tmp, out, mut c) = coordinator_with_output();
        c.env("VIRTUAL_ENV", &venv);
        c.args([
            "--mode",
            "trials",
            "--trials",
            "2",
            "--warmup",
            "0",
            "--sample",
            "--command",
            command,
        ]);
        let c = if forbidden { without_ptrace(&c) } else { c };
        let f = run(c);
        f.assert_no_worker_left();
        (tmp, out, f)
    };
    let (_tmp, _out, f) = attempt(true);
    assert_eq!(f.code(), Some(1), "{}", f.stderr);
    let lines: Vec<&str> = f.stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(lines.len(), 1, "{}", f.stderr);
    assert!(lines[0].contains("lacks CAP_SYS_PTRACE"), "{}", lines[0]);
    assert!(lines[0].contains("--cap-add SYS_PTRACE"), "{}", lines[0]);
    // The control: the same command, the worker with the capability.
    let (_tmp, out, f) = attempt(false);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    let report = harness::json(&out.join("report.json"));
    let x = &report["stages"]["command"]["samples"];
    assert!(x["samples"].as_f64().unwrap_or(0.0) > 10.0, "{x}");
}

#[test]
fn without_py_spy_the_run_is_refused_in_one_line_before_anything_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let mut c = harness::coordinator();
    c.arg("--output").arg(&out);
    // A PATH with sh and python3 but no py-spy, and no virtual environment.
    c.env("PATH", "/usr/bin:/bin").env_remove("VIRTUAL_ENV");
    c.args(["--mode", "trials", "--trials", "2", "--sample", "--command", "python3 -c pass"]);
    let f = run(c);
    if Command::new("/usr/bin/py-spy").arg("--version").output().is_ok() {
        harness::skip("without_py_spy", "/usr/bin has a py-spy");
        return;
    }
    assert_eq!(f.code(), Some(2), "{}", f.stderr);
    let lines: Vec<&str> = f.stderr.lines().filter(|l| l.contains("py-spy")).collect();
    assert_eq!(lines.len(), 1, "{}", f.stderr);
    assert!(lines[0].contains("pip install py-spy"), "{}", lines[0]);
    assert!(!out.exists(), "a refused run made its directory");

    // Nothing Python to sample: refused too, naming why.
    let mut c = harness::coordinator();
    c.arg("--output").arg(&out);
    c.args(["--mode", "trials", "--trials", "2", "--sample", "--stage", "sleep:10"]);
    let f = run(c);
    assert_eq!(f.code(), Some(2), "{}", f.stderr);
    assert!(f.stderr.contains("--sample samples the Python of --command stages"), "{}", f.stderr);
}
