//! `--prepare CMD --items FILE`: a team's own per-item program in the main
//! job, through real processes (tests/scripts/item_program.py, which
//! misbehaves as `ITEM_MODE` says). Every ending is checked for processes
//! left behind: the workers, and every program process (each writes its pid
//! into a directory of the test's).

mod at_scale;
mod outputs;
mod prepares;
mod protocol;
mod records;
mod refusals;
mod stragglers;

use harness::{alive, coordinator_with_output, json, python, repo, run};
use std::path::PathBuf;
use std::process::Command;

/// Ids that must never reach evidence.
pub(super) const IDS: [&str; 6] =
    ["secret-a", "secret-b", "secret-c", "secret-d", "secret-e", "secret-f"];

pub(super) struct Prepared {
    _tmp: tempfile::TempDir,
    out: PathBuf,
    pids: PathBuf,
    f: harness::Finished,
}

impl Prepared {
    /// No worker and no program process outlived the run.
    fn assert_nothing_left(&self) {
        self.f.assert_no_worker_left();
        let pids: Vec<i32> = std::fs::read_dir(&self.pids)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().parse().unwrap())
            .collect();
        for pid in pids {
            assert!(!alive(pid), "program pid {pid} outlived the run\n{}", self.f.stderr);
        }
    }

    /// The run failed with `reason`, left no report, and said `says`.
    fn assert_failed(&self, reason: &str, says: &str) -> serde_json::Value {
        assert_eq!(self.f.code(), Some(1), "{}", self.f.stderr);
        assert!(!self.out.join("report.json").exists(), "a failed run has no report");
        let failure = json(&self.out.join("failure.json"));
        assert_eq!(failure["reason"], reason, "{failure}");
        let message = failure["message"].as_str().unwrap();
        assert!(message.contains(says), "failure.json says {message:?}, not {says:?}");
        for id in IDS {
            assert!(!failure.to_string().contains(id), "failure.json names an item: {failure}");
        }
        // The outputs of a failed run are never trusted: none is left.
        for dir in ["private-output", "private-output-parallel"] {
            assert!(!self.out.join(dir).exists(), "{dir} was left beside failure.json");
        }
        self.assert_nothing_left();
        failure
    }
}

/// `--mode cold-prep --prepare 'PY item_program.py' --items FILE` with
/// `ITEM_MODE=mode`, weighted items, and `args`.
pub(super) fn prepare(mode: &str, args: &[&str], env: &[(&str, &str)]) -> Prepared {
    let (tmp, out, mut c) = coordinator_with_output();
    let items = tmp.path().join("items.tsv");
    let lines: Vec<String> =
        IDS.iter().enumerate().map(|(i, id)| format!("{id}\t{}", 10 + i % 3)).collect();
    std::fs::write(&items, lines.join("\n") + "\n").unwrap();
    let pids = tmp.path().join("pids");
    std::fs::create_dir(&pids).unwrap();
    let py = python(&mut c);
    let program = repo().join("tests/scripts/item_program.py");
    c.env("ITEM_MODE", mode).env("ITEM_PIDS", &pids).env("ITEM_ITEMS", &items);
    for (k, v) in env {
        c.env(k, v);
    }
    c.args(["--mode", "cold-prep", "--prepare"])
        .arg(format!("{py} {}", program.display()))
        .arg("--items")
        .arg(&items)
        .args(args);
    let f = run(c);
    Prepared { _tmp: tmp, out, pids, f }
}
