//! A preparation's slowest items named by their line in the items file,
//! against the median, and the tail they make: a slow item handed out last
//! runs alone and bounds the parallel wall; the same item handed out first
//! (by its weight) does not; equal items name no straggler (the control).

use harness::{coordinator_with_output, json, python, run};

/// Sleeps 100 ms an item, 2 s for an id ending `-slow` (sleeps, so a
/// busy machine's cores move the times little).
const SLEEPER: &str = r#"
import json, os, time
answers = int(os.environ["STAGEBENCH_ANSWERS_FD"])
items = os.fdopen(int(os.environ["STAGEBENCH_ITEMS_FD"]), "rb")
os.write(answers, b'{"ready": true}\n')
for line in items:
    if line.strip():
        item = json.loads(line)["item"]
        time.sleep(2.0 if item.endswith("-slow") else 0.1)
        os.write(answers, (json.dumps({"done": item}) + "\n").encode())
"#;

/// 20 items on 2 processes, one round: the last line's item slow when
/// `slow`, with weights (the slow one heaviest) when `weighted`. Returns
/// the parallel side's `stragglers` and summary.md.
fn prepare(slow: bool, weighted: bool) -> (serde_json::Value, String) {
    let (tmp, out, mut c) = coordinator_with_output();
    let program = tmp.path().join("sleeper.py");
    std::fs::write(&program, SLEEPER).unwrap();
    let lines: Vec<String> = (1..=20)
        .map(|i| {
            let id = match (i, slow) {
                (20, true) => "secret-slow".to_string(),
                _ => format!("secret-{i}"),
            };
            match weighted {
                true => format!("{id}\t{}", if id.ends_with("-slow") { 100 } else { 1 }),
                false => id,
            }
        })
        .collect();
    let items = tmp.path().join("items.tsv");
    std::fs::write(&items, lines.join("\n") + "\n").unwrap();
    let py = python(&mut c);
    c.args(["--quiet", "--mode", "cold-prep", "--workers", "2", "--rounds", "1", "--prepare"])
        .arg(format!("{py} {}", program.display()))
        .arg("--items")
        .arg(&items);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    f.assert_no_worker_left();
    let report = std::fs::read_to_string(out.join("report.json")).unwrap();
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    let page = std::fs::read_to_string(out.join("report.html")).unwrap();
    for text in [&report, &summary, &page] {
        assert!(!text.contains("secret"), "an item's id reached the evidence");
    }
    let r = json(&out.join("report.json"));
    (r["parallel"]["stragglers"].clone(), summary)
}

#[test]
fn a_slow_last_item_is_named_by_its_line_and_bounds_the_wall_unless_handed_out_first() {
    let (s, summary) = prepare(true, false);
    assert_eq!(s["items"], 20, "{s}");
    assert_eq!(s["slowest"][0]["line"], 20, "{s}");
    let times = s["slowest"][0]["times_median"].as_f64().unwrap();
    assert!(times >= 8.0, "2 s against 100 ms items: {times}× the median");
    let tail = &s["tail"];
    assert!(tail["tail_s"].as_f64().unwrap() >= 1.0, "{tail}");
    assert!(summary.contains("Stragglers: item 20 of 20 took"), "{summary}");
    assert!(summary.contains("so they bound the parallel wall"), "{summary}");

    // Handed out first by its weight, the same item runs beside the others.
    let (s, summary) = prepare(true, true);
    assert_eq!(s["slowest"][0]["line"], 20, "{s}");
    assert!(summary.contains("Stragglers: item 20 of 20 took"), "{summary}");
    assert!(summary.contains("no item bounds the parallel wall"), "{summary}");

    // Equal items: an item is named only when it took 3× the median (on a
    // busy machine one may: its wall is its wall), and the tail is the
    // items' grain.
    let (s, summary) = prepare(false, false);
    let slow: Vec<f64> = s["slowest"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["times_median"].as_f64().unwrap())
        .filter(|t| *t >= 3.0)
        .collect();
    let said = summary.contains("No item took 3× the median item");
    assert_eq!(said, slow.is_empty(), "{s}\n{summary}");
    assert!(summary.contains("no item bounds the parallel wall"), "{summary}");
}

/// Items answered at once (the fake worker's empty measurements, no time at
/// all): the load imbalance is even and every ratio a number, so the
/// report verifies (0/0 once made it null, which its schema refuses).
#[test]
fn items_that_took_no_time_make_a_report_that_verifies() {
    let (tmp, out, mut c) = coordinator_with_output();
    let items = tmp.path().join("items.txt");
    let ids: Vec<String> = (1..=50).map(|i| i.to_string()).collect();
    std::fs::write(&items, ids.join("\n") + "\n").unwrap();
    c.args(["--quiet", "--mode", "cold-prep", "--workers", "2", "--rounds", "1"]);
    c.args(["--prepare", "true", "--items"]).arg(&items);
    c.arg("--worker-bin").arg(&harness::bins().fake_worker).env("STAGEBENCH_FAKE", "instant");
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    f.assert_no_worker_left();
    let r = json(&out.join("report.json"));
    assert_eq!(r["load_imbalance"], 1.0, "{}", r["load_imbalance"]);
    assert!(r["parallel"]["stragglers"]["slowest"][0]["times_median"].is_number());
    let v = run({
        let mut v = harness::coordinator();
        v.arg("verify").arg(&out);
        v
    });
    assert_eq!(v.code(), Some(0), "{}", v.stderr);
}
