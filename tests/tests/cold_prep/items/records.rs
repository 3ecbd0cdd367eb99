//! A preparation's per-item records: every job is a line of jobs.jsonl.gz,
//! which report.json binds by its SHA-256, so report.json does not grow
//! with the items, and `verify` checks the file and redraws the timeline
//! plot from it.

use harness::{coordinator_with_output, python, run};
use std::io::{BufRead, Write};
use std::path::PathBuf;

/// Answers `done` for every item, writes nothing (the standard library only).
const NOOP: &str = r#"
import json, os
answers = int(os.environ["STAGEBENCH_ANSWERS_FD"])
items = os.fdopen(int(os.environ["STAGEBENCH_ITEMS_FD"]), "rb")
os.write(answers, b'{"ready": true}\n')
for line in items:
    if line.strip():
        os.write(answers, (json.dumps({"done": json.loads(line)["item"]}) + "\n").encode())
"#;

/// A cold-prep of `n` no-op items, 2 processes, 2 rounds.
fn noop_items(n: usize) -> (tempfile::TempDir, PathBuf) {
    let (tmp, out, mut c) = coordinator_with_output();
    let program = tmp.path().join("noop.py");
    std::fs::write(&program, NOOP).unwrap();
    let items = tmp.path().join("items.jsonl");
    let lines: Vec<String> = (0..n).map(|i| format!("{{\"item\": \"n{i}\"}}")).collect();
    std::fs::write(&items, lines.join("\n") + "\n").unwrap();
    let py = python(&mut c);
    c.args(["--quiet", "--mode", "cold-prep", "--workers", "2", "--rounds", "2", "--prepare"])
        .arg(format!("{py} {}", program.display()))
        .arg("--items")
        .arg(&items);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    (tmp, out)
}

fn verify(dir: &std::path::Path) -> harness::Finished {
    let mut v = harness::coordinator();
    v.arg("verify").arg(dir);
    run(v)
}

#[test]
fn per_item_records_are_in_the_jobs_file_and_report_json_does_not_grow() {
    let (_a, few) = noop_items(20);
    let (_b, many) = noop_items(400);
    let size = |dir: &PathBuf| std::fs::metadata(dir.join("report.json")).unwrap().len();
    // 380 more items are 1,520 more jobs: about 100 KB when report.json
    // held them; now a few digits of its figures at most.
    assert!(size(&many) < size(&few) + 1024, "{} against {}", size(&many), size(&few));
    for (dir, n) in [(&few, 20), (&many, 400)] {
        let report = harness::reports::read(dir);
        let jobs = harness::jobs(dir);
        assert_eq!(jobs.len(), 4 * n, "a line per item per phase (2 rounds of 2)");
        let bound: Vec<_> = report.artifacts.iter().filter(|a| a.kind == "jobs").collect();
        assert_eq!(bound.len(), 1, "{:?}", report.artifacts);
        assert_eq!(bound[0].path, "jobs.jsonl.gz");
        // Round 1's sides name the phase whose lines are their timeline.
        let r = harness::reports::cold_prep(&report);
        for (side, prep) in [("serial", &r.serial), ("parallel", &r.parallel)] {
            let phase = prep.phase.as_deref().expect("round 1's phase");
            let mine = jobs.iter().filter(|j| j["phase"] == phase).count();
            assert_eq!(mine, n, "{side}");
        }
        let text: String = jobs.iter().map(|j| j.to_string()).collect();
        assert!(!text.contains("\"n1"), "jobs.jsonl.gz names an item");
        let v = verify(dir);
        assert_eq!(v.code(), Some(0), "{}", v.stderr);
    }

    // One job's end moved by a microsecond, the file recompressed: verify
    // refuses it, naming the file.
    let path = many.join("jobs.jsonl.gz");
    let lines: Vec<String> =
        std::io::BufReader::new(flate2::read::GzDecoder::new(std::fs::File::open(&path).unwrap()))
            .lines()
            .map(Result::unwrap)
            .collect();
    let mut first: serde_json::Value = serde_json::from_str(&lines[0]).unwrap();
    first["end_s"] = (first["end_s"].as_f64().unwrap() + 1e-6).into();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    writeln!(gz, "{first}").unwrap();
    for l in &lines[1..] {
        writeln!(gz, "{l}").unwrap();
    }
    std::fs::write(&path, gz.finish().unwrap()).unwrap();
    let v = verify(&many);
    assert_eq!(v.code(), Some(3), "{}", v.stderr);
    assert!(
        v.stderr.contains("artifact jobs.jsonl.gz does not match its recorded SHA-256"),
        "{}",
        v.stderr
    );
}
