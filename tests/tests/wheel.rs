//! The wheel (`pip wheel . -w dist`, see docs/install.md) as a new user
//! installs it: a fresh virtual environment, a PATH with no cargo, a
//! working directory with no target/, and nothing but the wheel. The wheel
//! is the one `STAGEBENCH_WHEEL` names (`.ci/run` builds it once and sets
//! `STAGEBENCH_WHEEL_REQUIRED=1`); where none is named the test says
//! SKIPPED.

use harness::{json, run_within, skip};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const VERSION: &str = env!("CARGO_PKG_VERSION");
/// pip and the built-in cohort's first making, on a 2-core machine.
const LIMIT: Duration = Duration::from_secs(600);

fn wheel(test: &str) -> Option<PathBuf> {
    let required = std::env::var("STAGEBENCH_WHEEL_REQUIRED").is_ok_and(|v| v == "1");
    let found = std::env::var_os("STAGEBENCH_WHEEL").map(PathBuf::from).filter(|p| p.is_file());
    if found.is_none() {
        assert!(!required, "STAGEBENCH_WHEEL_REQUIRED=1 but STAGEBENCH_WHEEL names no wheel file");
        skip(test, "STAGEBENCH_WHEEL names no wheel (pip wheel . -w dist makes one)");
    }
    found
}

/// A command of the fresh environment: nothing of the caller's environment
/// but a PATH of the environment's bin/ and the system's, a HOME and the
/// built-in data's cache of its own.
fn fresh(program: &Path, root: &Path) -> Command {
    let mut c = Command::new(program);
    let path = format!("{}:/usr/bin:/bin", root.join("venv/bin").display());
    c.env_clear().env("PATH", path).env("HOME", root.join("home"));
    c.env("STAGEBENCH_CACHE", root.join("cache")).current_dir(root.join("work"));
    c
}

/// A new user's scratch: `home/`, `work/` and a fresh `venv/`, nothing installed.
fn fresh_venv() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    for d in ["home", "work"] {
        std::fs::create_dir(tmp.path().join(d)).unwrap();
    }
    let mut venv = Command::new("python3");
    venv.args(["-m", "venv"]).arg(tmp.path().join("venv"));
    ok(venv, "python3 -m venv");
    tmp
}

fn ok(c: Command, what: &str) -> String {
    let f = run_within(c, LIMIT);
    assert_eq!(f.code(), Some(0), "{what}: {}\n{}", f.stdout, f.stderr);
    f.stdout
}

/// The user's program: `wlib.step` (the spanned function) three times,
/// then where the helper's compiled fast path was loaded from, into the
/// file its argument names.
const PROGRAM: &str = "import sys, wlib\n\
for _ in range(3):\n    wlib.step()\n\
import stagebench._spans as s\n\
open(sys.argv[1], 'w').write(s.fast.__file__ if s.fast else 'none')\n";
const LIBRARY: &str =
    "def step():\n    x = 0\n    for i in range(300_000):\n        x += i\n    return x\n";

#[test]
fn a_fresh_environment_runs_the_main_job_and_a_users_program_from_the_wheel_alone() {
    let test = "a_fresh_environment_runs_the_main_job_and_a_users_program_from_the_wheel_alone";
    let Some(wheel) = wheel(test) else { return };
    let name = wheel.file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.starts_with(&format!("stagebench-{VERSION}-")), "{name}: not version {VERSION}");
    assert!(name.contains("-manylinux_2_"), "{name}: not a manylinux wheel");

    let tmp = fresh_venv();
    let root = tmp.path();
    let bin = root.join("venv/bin");
    for dir in std::env::split_paths(&format!("{}:/usr/bin:/bin", bin.display())) {
        assert!(!dir.join("cargo").exists(), "cargo in {}: not a PATH without Rust", dir.display());
    }
    let mut pip = fresh(&bin.join("pip"), root);
    pip.args(["install", "--quiet", "--disable-pip-version-check", "--no-index"]).arg(&wheel);
    ok(pip, "pip install the wheel");

    // Versions agree: the wheel's, the coordinator's, the helper's.
    let mut version = fresh(&bin.join("coordinator"), root);
    version.arg("--version");
    assert_eq!(ok(version, "coordinator --version"), format!("coordinator {VERSION}\n"));
    let mut helper = fresh(&bin.join("python"), root);
    helper.args([
        "-c",
        "import stagebench, stagebench._spans as s; \
         print(stagebench.__version__); print(stagebench.__file__); print(s.fast.__file__)",
    ]);
    let said = ok(helper, "import stagebench");
    let lines: Vec<&str> = said.lines().collect();
    assert_eq!(lines[0], VERSION, "{said}");
    let site = root.join("venv/lib");
    for l in &lines[1..] {
        assert!(Path::new(l).starts_with(&site), "{l}: not the wheel's, in {}", site.display());
    }
    assert!(lines[2].contains("_fast"), "{said}");

    // The main job, its built-in data made on first use.
    let mut main = fresh(&bin.join("coordinator"), root);
    main.args(["--workers", "2", "--mode", "cold-prep", "--output", "main"]);
    ok(main, "the main job");
    let report = harness::reports::read(&root.join("work/main"));
    assert_eq!(harness::reports::cold_prep(&report).caches_identical, Some(true));

    // A user's program with --span, the spans timed by the installed
    // helper's compiled fast path.
    std::fs::write(root.join("work/prog.py"), PROGRAM).unwrap();
    std::fs::write(root.join("work/wlib.py"), LIBRARY).unwrap();
    let trials = |out: &str, more: &[&str]| {
        let mut c = fresh(&bin.join("coordinator"), root);
        c.args(["--mode", "trials", "--trials", "2", "--warmup", "0", "--output", out]);
        c.args(["--command", &format!("python prog.py {out}.fast"), "--span", "wlib:step"]);
        c.args(more);
        c
    };
    ok(trials("spans", &[]), "a trials run with --span");
    let report = harness::reports::read(&root.join("work/spans"));
    let stage = harness::reports::stage(&report, "command");
    assert_eq!(harness::reports::figure(stage, "span:step_n"), 3.0);
    let fast = std::fs::read_to_string(root.join("work/spans.fast")).unwrap();
    assert!(Path::new(&fast).starts_with(&site), "the fast path was {fast}, not the wheel's");

    // With [sample], --sample: py-spy from the environment's bin/.
    let mut pip = fresh(&bin.join("pip"), root);
    pip.args(["install", "--quiet", "--disable-pip-version-check"]);
    pip.arg(format!("{}[sample]", wheel.display()));
    ok(pip, "pip install the wheel with [sample]");
    assert!(bin.join("py-spy").is_file(), "[sample] brought no py-spy");
    ok(trials("sampled", &["--sample", "200"]), "a trials run with --sample");
    let report = json(&root.join("work/sampled/report.json"));
    let kinds: Vec<&str> =
        report["artifacts"].as_array().unwrap().iter().filter_map(|a| a["kind"].as_str()).collect();
    assert!(kinds.contains(&"samples"), "no sampled stacks among {kinds:?}");
}

/// The helper's own version is the workspace's (the wheel takes its
/// version from Cargo.toml), and the helper-only install says the same.
#[test]
fn the_helpers_versions_are_the_workspaces() {
    let repo = harness::repo();
    let init = std::fs::read_to_string(repo.join("python/stagebench/__init__.py")).unwrap();
    assert!(
        init.contains(&format!("__version__ = \"{VERSION}\"")),
        "python/stagebench: {VERSION}?"
    );
    let helper = std::fs::read_to_string(repo.join("python/pyproject.toml")).unwrap();
    assert!(helper.contains(&format!("version = \"{VERSION}\"")), "python/pyproject.toml");
    let extras = std::fs::read_to_string(repo.join("pyproject.toml")).unwrap();
    assert!(
        extras.contains("dynamic = [\"version\"]"),
        "pyproject.toml: the version from Cargo.toml"
    );
}

/// The action's `install: wheel` step (scripts/action/install.sh) installs
/// the wheel its `wheel` input names into the runner's Python and puts that
/// Python's scripts folder on `GITHUB_PATH`, where the next steps find the
/// coordinator.
#[test]
fn the_actions_wheel_install_puts_the_coordinator_on_the_jobs_path() {
    let test = "the_actions_wheel_install_puts_the_coordinator_on_the_jobs_path";
    let Some(wheel) = wheel(test) else { return };
    let tmp = fresh_venv();
    let root = tmp.path();
    let github_path = root.join("github_path");
    let mut install = fresh(Path::new("bash"), root);
    install.arg(harness::repo().join("scripts/action/install.sh"));
    install.env("INPUT_INSTALL", "wheel").env("INPUT_WHEEL", &wheel);
    install.env("GITHUB_ACTION_PATH", harness::repo()).env("GITHUB_PATH", &github_path);
    let said = ok(install, "install.sh with install: wheel");
    assert_eq!(said, format!("coordinator {VERSION}\n"));
    let path = std::fs::read_to_string(&github_path).unwrap();
    assert_eq!(path.trim(), root.join("venv/bin").display().to_string());
    assert!(root.join("venv/bin/worker").is_file(), "the worker beside it");
}
