//! `--param` over process counts: the scan's recommendation and the tree's
//! memory per value, against a command whose answer is known. Alone in its
//! binary, so no other test's processes share its two cores while it runs.

use harness::{coordinator_with_output, json, run};
use std::path::Path;

/// Work of `max(0.4/n, 0.08)` s in each of n processes on two cores. The
/// two cores are two slots of a semaphore, each held while a process works
/// (a spin on the wall clock), so the answer is the same on any machine and
/// under any load: 0.4 s for 1, 0.2 s for 2 and for 4, 0.32 s for 8. Each
/// process also starts up for 10 ms in its slot (imports, its copy of the
/// dataset), so 4 are a little slower than 2, as real workers are. Each
/// holds 40 MiB from its start until every sibling has worked, so the
/// tree's peak holds n × 40 MiB.
const SPREAD: &str = r#"
import multiprocessing as mp, os, sys, time
n = int(sys.argv[1])
per = max(0.4 / n, 0.08)
cores = mp.get_context("fork").Semaphore(2)
done = mp.get_context("fork").Barrier(n)
kids = []
for _ in range(n):
    pid = os.fork()
    if pid == 0:
        block = bytearray(40 << 20)
        for i in range(0, len(block), 4096):
            block[i] = 1
        with cores:
            end = time.perf_counter() + 0.01 + per
            while time.perf_counter() < end:
                pass
        done.wait(timeout=60)
        os._exit(0)
    kids.append(pid)
for pid in kids:
    assert os.waitpid(pid, 0)[1] == 0
assert os.environ["STAGEBENCH_PARAM_N"] == sys.argv[1]
"#;

fn script(dir: &Path, body: &str) -> String {
    let path = dir.join("spread.py");
    std::fs::write(&path, body).unwrap();
    path.display().to_string()
}

/// On two cores, 2 processes halve the wall of 1; 4 are no faster and 8
/// are slower, and each process adds its 40 MiB to the tree's peak. The
/// scan recommends 2, every round runs the four values in a shuffled order
/// drawn from the declared seed, and the run verifies.
#[test]
fn a_scan_over_processes_recommends_two_and_counts_each_process_memory() {
    let (tmp, out, mut c) = coordinator_with_output();
    let py = script(tmp.path(), SPREAD);
    c.args(["--mode", "trials", "--trials", "6", "--warmup", "1", "--param-seed", "7"]).args([
        "--command",
        &format!("python3 {py} {{n}}"),
        "--param",
        "n=1,2,4,8",
    ]);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    f.assert_no_worker_left();
    let r = harness::reports::read(&out);
    let scan = r.scan().expect("a scan");
    let rec = &scan.recommendation;
    assert_eq!(rec.stage.as_deref(), Some("trial[n=2]"), "{rec:?}");
    assert_eq!(rec.outcome, report::modes::scan::Outcome::Recommended);
    let sentence = &rec.sentence;
    assert!(sentence.starts_with("n=2: ") && sentence.contains("faster than n=1"), "{sentence}");
    assert!(f.stdout.contains(&format!("Recommendation: {sentence}")), "{}", f.stdout);

    // The tree's peak grows by about 40 MiB a process.
    let points = &scan.points;
    let peak = |i: usize| points[i].tree_peak_bytes as f64 / (1 << 20) as f64;
    let per_process = (peak(3) - peak(0)) / 7.0;
    assert!((34.0..48.0).contains(&per_process), "{per_process} MiB a process");
    let keys: Vec<&str> = points.iter().map(|p| p.stage.as_str()).collect();
    assert_eq!(keys, ["trial[n=1]", "trial[n=2]", "trial[n=4]", "trial[n=8]"]);
    assert_eq!(points[2].parameters["n"], "4");

    // The seed and the values are declared; each round is a permutation of
    // the four, and not every round has the same order.
    let d = json(&out.join("declaration.json"));
    assert_eq!(d["parameters"]["scan"]["order_seed"], 7);
    assert_eq!(
        d["parameters"]["scan"]["params"][0]["values"],
        serde_json::json!(["1", "2", "4", "8"])
    );
    let started: Vec<&str> = f
        .stderr
        .lines()
        .filter(|l| l.contains("stage started"))
        .filter_map(|l| l.split("key=").nth(1)?.split_whitespace().next())
        .collect();
    assert_eq!(started.len(), 28, "{started:?}");
    let rounds: Vec<Vec<&str>> = started.chunks(4).map(|c| c.to_vec()).collect();
    for round in &rounds {
        let mut sorted = round.clone();
        sorted.sort();
        assert_eq!(sorted, keys, "{rounds:?}");
    }
    assert!(rounds.windows(2).any(|w| w[0] != w[1]), "{rounds:?}");
    report::verify::verify(&out).expect("a scan verifies");
    let mut d = harness::coordinator();
    d.arg("dashboard").arg(tmp.path());
    assert_eq!(run(d).code(), Some(0));
    let index = std::fs::read_to_string(tmp.path().join("README.md")).unwrap();
    assert!(index.contains("; scan recommends n=2"), "{index}");
    assert!(out.join("plots/scan.svg").is_file());
}
