use super::*;
use crate::campaign::report::Killed;

/// A stage's calls of one span: (stage, name, `[start, seconds]`s).
pub(crate) type Spans<'a> = [(&'a str, &'a str, &'a [[f64; 2]])];

pub(crate) fn trial(calls: &Spans<'_>, killed: Option<&Spans<'_>>) -> TrialReport {
    let mut by: BTreeMap<String, Calls> = BTreeMap::new();
    for (stage, name, list) in calls {
        by.entry(stage.to_string()).or_default().insert(name.to_string(), list.to_vec());
    }
    let killed = killed.map(|done| {
        let mut k: BTreeMap<String, Calls> = BTreeMap::new();
        for (stage, name, list) in done {
            k.entry(stage.to_string()).or_default().insert(name.to_string(), list.to_vec());
        }
        Killed { run: "k".into(), stage: "two".into(), wall_s: 1.0, span_s: None, calls: k }
    });
    TrialReport {
        run: "r".into(),
        run_wall_s: 1.0,
        stages: BTreeMap::new(),
        total_s: 1.0,
        state_sha256: String::new(),
        killed,
        identical_to_cold: true,
        differing_files: None,
        beyond_baseline: None,
        checkpoint_bytes: None,
        checkpoint_write_s: None,
        span_s: None,
        calls: by,
    }
}

pub(crate) fn step(kind: &str, trials: Vec<TrialReport>) -> StepReport {
    StepReport {
        name: kind.into(),
        kind: kind.into(),
        policy: None,
        kill_at: None,
        trials,
        median: BTreeMap::new(),
        median_total_s: 1.0,
        median_total_interval: None,
    }
}

fn fate(r: &Reading, stage: &str, place: &str) -> Fate {
    r.calls.iter().find(|c| c.stage == stage && c.place == place).unwrap().fate
}

/// A two-stage chain killed after stage one's recompute: stage one's
/// search is loaded (it ran, fast), its recompute repeated, stage two's
/// search not yet done at the kill; the repeated seconds count a call
/// nested in another once.
#[test]
fn an_interrupted_chain_is_read_call_by_call() {
    let cold_trial = || {
        trial(
            &[
                ("one", "search", &[[0.0, 2.0]]),
                ("one", "recompute", &[[2.0, 0.5]]),
                ("one", "inner", &[[2.1, 0.2]]),
                ("two", "search", &[[0.0, 2.0]]),
            ],
            None,
        )
    };
    let cold = step("cold", vec![cold_trial(), cold_trial()]);
    let done: [(&str, &str, &[[f64; 2]]); 3] = [
        ("one", "search", &[[0.0, 2.0]]),
        ("one", "recompute", &[[2.0, 0.5]]),
        ("one", "inner", &[[2.1, 0.2]]),
    ];
    let resumed = trial(
        &[
            ("one", "search", &[[0.0, 0.05]]),
            ("one", "recompute", &[[0.05, 0.5]]),
            ("one", "inner", &[[0.1, 0.2]]),
            ("two", "search", &[[0.0, 2.1]]),
        ],
        Some(&done),
    );
    let r = read(&step("interrupted", vec![resumed]), &cold).unwrap();
    assert_eq!(fate(&r, "one", "search#1"), Fate::Loaded);
    assert_eq!(fate(&r, "one", "recompute#1"), Fate::Repeated);
    assert_eq!(fate(&r, "two", "search#1"), Fate::NotYetDone);
    assert!(
        (r.repeated_s - 0.5).abs() < 1e-9,
        "inner inside recompute counted once: {}",
        r.repeated_s
    );
    // The same resume after a complete cold run: stage two's search was
    // done, so it is repeated.
    let again = trial(&[("two", "search", &[[0.0, 2.1]])], None);
    let r = read(&step("resume", vec![again]), &cold).unwrap();
    assert_eq!(fate(&r, "two", "search#1"), Fate::Repeated);
    assert_eq!(fate(&r, "one", "search#1"), Fate::Skipped);
    assert!((r.repeated_s - 2.1).abs() < 1e-9);
}

/// Two calls of one name in one stage are read one by one: the first
/// done before the kill and run again, the second not yet done.
#[test]
fn the_kth_call_is_set_against_the_kth() {
    let cold = step("cold", vec![trial(&[("s", "fit", &[[0.0, 1.0], [1.0, 1.0]])], None)]);
    let resumed =
        trial(&[("s", "fit", &[[0.0, 1.0], [1.0, 1.0]])], Some(&[("s", "fit", &[[0.0, 1.0]])]));
    let r = read(&step("interrupted", vec![resumed]), &cold).unwrap();
    assert_eq!(fate(&r, "s", "fit#1"), Fate::Repeated);
    assert_eq!(fate(&r, "s", "fit#2"), Fate::NotYetDone);
    assert_eq!(r.calls[0].label(), "s/fit #1");
    assert!((r.repeated_s - 1.0).abs() < 1e-9);
}

/// autofit's shape: the sampling runs inside each search's fit; a
/// resume loads search 1 (no sampling in it) and samples search 2 for
/// the first time. Matched by place, the resume's only sampling is
/// search 2's, not yet done at the kill; search 1's is skipped. (By
/// its count alone it would be the first sampling, and a repeat.)
#[test]
fn a_call_is_matched_by_its_place_inside_its_enclosing_call() {
    let cold = step(
        "cold",
        vec![trial(
            &[
                ("c", "fit", &[[0.0, 10.0], [10.0, 5.0]]),
                ("c", "sample", &[[1.0, 8.0], [11.0, 3.0]]),
            ],
            None,
        )],
    );
    let killed: [(&str, &str, &[[f64; 2]]); 2] =
        [("c", "fit", &[[0.0, 10.0]]), ("c", "sample", &[[1.0, 8.0]])];
    let resumed = trial(
        &[("c", "fit", &[[0.0, 0.05], [0.1, 5.0]]), ("c", "sample", &[[0.2, 4.0]])],
        Some(&killed),
    );
    let r = read(&step("interrupted", vec![resumed]), &cold).unwrap();
    assert_eq!(fate(&r, "c", "fit#1"), Fate::Loaded);
    assert_eq!(fate(&r, "c", "fit#1/sample#1"), Fate::Skipped);
    assert_eq!(fate(&r, "c", "fit#2"), Fate::NotYetDone);
    assert_eq!(fate(&r, "c", "fit#2/sample#1"), Fate::NotYetDone);
    assert!(r.repeated_s == 0.0, "nothing repeated: {}", r.repeated_s);
    let undone = r.of(Fate::NotYetDone, |_| 0);
    let labels: Vec<String> = undone.iter().map(|c| c.label()).collect();
    assert_eq!(labels, ["c/fit #2", "c/fit #2 › sample"]);
}

/// A failure's last span: the innermost of those that ended together
/// (an exception raised in restore ends search_fit too).
#[test]
fn the_last_finished_call_is_the_innermost_of_those_that_ended_last() {
    let mut calls = Calls::new();
    calls.insert("search_fit".into(), vec![[0.0, 10.0], [10.5, 2.0]]);
    calls.insert("restore".into(), vec![[0.5, 0.1], [11.0, 1.4996]]);
    calls.insert("plot".into(), vec![[10.1, 0.2]]);
    assert_eq!(last_finished(&calls).as_deref(), Some("search_fit #2 › restore"));
    calls.insert("plot".into(), vec![[10.1, 0.2], [12.6, 0.1]]);
    assert_eq!(last_finished(&calls).as_deref(), Some("plot #2"));
    assert_eq!(last_finished(&Calls::new()), None);
}

#[test]
fn a_union_counts_each_second_once() {
    assert_eq!(union(&mut [[0.0, 2.0], [1.0, 2.0], [5.0, 1.0], [5.5, 0.1]]), 4.0);
    assert_eq!(union(&mut []), 0.0);
}
