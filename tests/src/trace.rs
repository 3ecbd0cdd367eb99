//! The structure every `--export-trace` file must have.

use serde_json::Value;
use std::collections::BTreeMap;

/// What a trace holds, once checked.
pub struct Tracks {
    /// Track id → its name (`thread_name`).
    pub names: BTreeMap<u64, String>,
    /// Per category, how many slices began.
    pub slices: BTreeMap<String, usize>,
}

/// Checks a Chrome trace's structure and panics naming the first fault:
/// all events of pid 1; within a track time never goes back, every `B` is
/// closed by an `E` of the same name, innermost first, never before it
/// began, and nothing is left open; every track with slices is named.
pub fn check(trace: &Value) -> Tracks {
    let events = trace["traceEvents"].as_array().expect("traceEvents");
    let mut stacks: BTreeMap<u64, Vec<(String, f64)>> = BTreeMap::new();
    let mut last: BTreeMap<u64, f64> = BTreeMap::new();
    let mut tracks = Tracks { names: BTreeMap::new(), slices: BTreeMap::new() };
    for e in events {
        let tid = e["tid"].as_u64().expect("a tid");
        assert_eq!(e["pid"], 1, "{e}");
        match e["ph"].as_str().expect("a phase") {
            "M" => {
                if e["name"] == "thread_name" {
                    let name = e["args"]["name"].as_str().expect("a track name");
                    tracks.names.insert(tid, name.to_string());
                }
            }
            ph @ ("B" | "E") => {
                let ts = e["ts"].as_f64().expect("a ts");
                let name = e["name"].as_str().expect("a name").to_string();
                let before = last.insert(tid, ts).unwrap_or(0.0);
                assert!(ts >= before, "track {tid} goes back in time at {e}");
                let stack = stacks.entry(tid).or_default();
                if ph == "B" {
                    let cat = e["cat"].as_str().unwrap_or_default().to_string();
                    *tracks.slices.entry(cat).or_default() += 1;
                    stack.push((name, ts));
                } else {
                    let (open, begun) =
                        stack.pop().unwrap_or_else(|| panic!("an E with no B: {e}"));
                    assert_eq!(open, name, "E closes another slice than the innermost: {e}");
                    assert!(ts >= begun, "{e} ends before it began");
                }
            }
            other => panic!("unexpected phase {other}: {e}"),
        }
    }
    for (tid, stack) in &stacks {
        assert!(stack.is_empty(), "track {tid} leaves {stack:?} open");
        assert!(tracks.names.contains_key(tid), "track {tid} is not named");
    }
    tracks
}
