use super::*;
use std::collections::BTreeMap;

const MIB: f64 = 1024.0 * 1024.0;

/// `n` walls around `center` (2% noise, seeded) and a peak of `mib`.
fn value(name: &str, v: &str, center: f64, mib: f64, n: usize, seed: u64) -> Measured {
    let mut rng = evidence::rng::Rng::new(seed);
    let walls: Vec<f64> = (0..n).map(|_| center * (1.0 + 0.02 * rng.normal())).collect();
    Measured {
        stage: format!("trial[{name}={v}]"),
        parameters: [(name.to_string(), v.to_string())].into(),
        cpus: walls.clone(),
        walls,
        tree_peaks: vec![mib * MIB; n],
        tree_peak_method: "sampled".into(),
        spans: BTreeMap::new(),
        input_wait: Vec::new(),
    }
}

fn workers(walls: [f64; 4], n: usize) -> Scan {
    let m: Vec<Measured> = [1, 2, 4, 8]
        .iter()
        .zip(walls)
        .map(|(w, c)| value("workers", &w.to_string(), c, 40.0 * *w as f64, n, *w as u64))
        .collect();
    scan(vec!["workers".into()], Some(7), &m, "--trials")
}

/// Two cores: 2 workers halve the wall, 4 are no faster and hold twice the
/// memory, 8 are slower. The recommendation is 2, by name, with its speedup
/// over the first value and what 4 and 8 would cost; this holds when 4 is
/// the fastest by a hair (a rule that takes the fastest fails here), and
/// when memory is what tells 2 from 4 (a rule that ignores memory fails).
#[test]
fn two_cores_recommend_two_workers_even_when_four_is_faster_by_a_hair() {
    for walls in [[0.4, 0.2, 0.2, 0.32], [0.4, 0.201, 0.199, 0.32]] {
        let s = workers(walls, 8);
        let r = &s.recommendation;
        assert_eq!(r.outcome, Outcome::Recommended, "{}", r.sentence);
        assert_eq!(r.stage.as_deref(), Some("trial[workers=2]"), "{}", r.sentence);
        assert!(r.sentence.starts_with("workers=2: "), "{}", r.sentence);
        assert!(r.sentence.contains("× faster than workers=1 (95% CI"), "{}", r.sentence);
        let speedup = &s.points[1].speedup;
        assert!((1.9..2.1).contains(speedup), "{speedup}");
        assert!(r.sentence.contains("workers=4 is no faster (p = "), "{}", r.sentence);
        assert!(r.sentence.contains("costs +80.0 MiB of tree peak"), "{}", r.sentence);
        assert!(r.sentence.contains("workers=8 is slower (×1.5"), "{}", r.sentence);
        let p = &s.points;
        assert_eq!(p[0].speedup, 1.0);
        assert!(p[0].speedup_interval.is_none() && p[0].vs_first.is_none());
        assert_eq!(p[1].vs_first, Some(Verdict::Faster));
        assert_eq!(p[3].vs_fastest, Some(Verdict::Slower));
        assert_eq!(p[2].tree_peak_bytes, (160.0 * MIB) as u64);
    }
    // With 4 truly faster, it is the answer, whatever it costs.
    let s = workers([0.4, 0.2, 0.12, 0.32], 8);
    assert_eq!(s.recommendation.stage.as_deref(), Some("trial[workers=4]"));
    assert_eq!(s.recommendation.fastest, "workers=4");
}

/// A command that ignores its parameter: no value differs, and the cheapest
/// is recommended even when it is not the first.
#[test]
fn no_difference_recommends_the_cheapest() {
    let m: Vec<Measured> = [(1, 80.0), (2, 30.0), (3, 50.0)]
        .iter()
        .map(|(v, mib)| value("batch", &v.to_string(), 0.3, *mib, 10, 11))
        .collect();
    let s = scan(vec!["batch".into()], None, &m, "--trials");
    let r = &s.recommendation;
    assert_eq!(r.outcome, Outcome::NoDifference, "{}", r.sentence);
    assert_eq!(r.stage.as_deref(), Some("trial[batch=2]"));
    assert!(
        r.sentence.starts_with("no value differs significantly from batch=1 (p = "),
        "{}",
        r.sentence
    );
    assert!(r.sentence.contains("batch=2 is recommended, the cheapest at 30.0 MiB"));
}

/// Two or three trials a value can never reach p < 0.05: the scan says so
/// and names the trials needed, however far apart the values are.
#[test]
fn too_few_trials_say_so_and_give_the_trials_needed() {
    for n in [2, 3] {
        let s = workers([0.4, 0.2, 0.2, 0.32], n);
        let r = &s.recommendation;
        assert_eq!(r.outcome, Outcome::TooFewTrials);
        assert_eq!((r.stage.as_deref(), r.trials_needed), (None, Some(4)));
        assert!(r.sentence.starts_with(&format!("too few trials to tell: {n} counted")));
        assert!(r.sentence.ends_with("run --trials 4 or more"), "{}", r.sentence);
    }
    assert_eq!(workers([0.4, 0.2, 0.2, 0.32], 4).recommendation.outcome, Outcome::Recommended);
}

/// The first value fastest and cheapest: it is recommended, and the others
/// are called slower.
#[test]
fn the_first_value_can_be_the_answer() {
    let s = workers([0.1, 0.2, 0.3, 0.4], 8);
    let r = &s.recommendation;
    assert_eq!(r.stage.as_deref(), Some("trial[workers=1]"));
    assert!(r.sentence.starts_with("workers=1, the first value"), "{}", r.sentence);
    assert!(r.sentence.contains("workers=2, workers=4 and workers=8 are slower"), "{}", r.sentence);
}

/// Labels follow the names' order, not the map's.
#[test]
fn a_grid_points_label_keeps_the_names_order() {
    let mut m = value("b", "1", 0.1, 1.0, 4, 1);
    m.parameters.insert("a".into(), "x".into());
    let s = scan(vec!["b".into(), "a".into()], None, &[m], "--trials");
    assert_eq!(s.points[0].label(&s.names), "b=1,a=x");
    assert_eq!(s.recommendation.sentence, "one value: nothing to compare it with");
}

/// Peaks a page or two apart are the same cost: with no difference in
/// speed, the first value stays the answer rather than one a few KiB lower.
#[test]
fn peaks_within_the_noise_count_as_equal() {
    let mut m: Vec<Measured> =
        [1, 2].iter().map(|v| value("b", &v.to_string(), 0.3, 13.3, 8, 5)).collect();
    m[1].tree_peaks = vec![13.3 * MIB - 8192.0; 8];
    assert_eq!(
        scan(vec!["b".into()], None, &m, "--trials").recommendation.stage.as_deref(),
        Some("trial[b=1]")
    );
    m[1].tree_peaks = vec![12.0 * MIB; 8];
    assert_eq!(
        scan(vec!["b".into()], None, &m, "--trials").recommendation.stage.as_deref(),
        Some("trial[b=2]")
    );
}

/// A point's own tests are absent where they would compare it with itself:
/// the first has no test against the first, the fastest none against the
/// fastest; every other point has both.
#[test]
fn no_point_is_tested_against_itself() {
    let s = workers([0.4, 0.2, 0.25, 0.32], 8);
    let p = &s.points;
    assert!(p[0].p_vs_first.is_none() && p[0].p_vs_fastest.is_some());
    assert!(p[1].p_vs_first.is_some() && p[1].p_vs_fastest.is_none() && p[1].vs_fastest.is_none());
    assert!(p[2].p_vs_first.is_some() && p[2].p_vs_fastest.is_some());
}

/// Spans and the input-wait fraction are each value's medians over its
/// trials; a value without them has none.
#[test]
fn spans_and_input_wait_are_medians_over_the_trials() {
    let mut m = vec![value("w", "0", 0.3, 10.0, 4, 1), value("w", "2", 0.2, 20.0, 4, 2)];
    m[0].spans.insert("load".into(), vec![0.1, 0.3, 0.2, 0.4]);
    m[0].input_wait = vec![0.5, 0.4, 0.6, 0.45];
    let s = scan(vec!["w".into()], None, &m, "--trials");
    assert_eq!(s.points[0].spans_s["load"], 0.25);
    assert_eq!(s.points[0].input_wait_fraction, Some(0.475));
    assert!(s.points[1].spans_s.is_empty() && s.points[1].input_wait_fraction.is_none());
}

/// Small peaks a fraction of a MiB apart are the same cost too: the 1 MiB
/// allowance, not only the 2%, keeps the first value.
#[test]
fn a_fraction_of_a_mib_is_the_same_cost() {
    let mut m: Vec<Measured> =
        [1, 2].iter().map(|v| value("b", &v.to_string(), 0.3, 10.0, 8, 5)).collect();
    m[1].tree_peaks = vec![10.0 * MIB - 800.0 * 1024.0; 8];
    let s = scan(vec!["b".into()], None, &m, "--trials");
    assert_eq!(s.recommendation.stage.as_deref(), Some("trial[b=1]"));
}

/// Two values with too few trials: too few, not "one value".
#[test]
fn two_values_with_too_few_trials_are_too_few() {
    let m = [value("b", "1", 0.3, 10.0, 2, 1), value("b", "2", 0.1, 10.0, 2, 2)];
    let r = scan(vec!["b".into()], None, &m, "--rounds").recommendation;
    assert_eq!(r.outcome, Outcome::TooFewTrials);
    assert!(r.sentence.starts_with("too few rounds to tell: 2 counted"), "{}", r.sentence);
    assert!(r.sentence.ends_with("run --rounds 4 or more"), "{}", r.sentence);
}

/// A value significantly faster than the recommended one, yet not chosen:
/// the fastest is so spread that the recommended value is not slower than
/// it, while a tight, costlier value beats the recommended one. The
/// sentence says it is faster, never "no faster".
#[test]
fn a_faster_but_costlier_value_is_called_faster() {
    let spread = |stage: &str, walls: Vec<f64>, mib: f64| Measured {
        stage: format!("trial[w={stage}]"),
        parameters: [("w".to_string(), stage.to_string())].into(),
        cpus: walls.clone(),
        tree_peaks: vec![mib * MIB; walls.len()],
        walls,
        tree_peak_method: "cgroup".into(),
        spans: BTreeMap::new(),
        input_wait: Vec::new(),
    };
    let m = [
        spread("0", vec![1.0; 8], 10.0),
        spread("1", vec![0.05, 0.06, 0.07, 0.08, 0.30, 0.32, 0.35, 0.38], 50.0),
        spread("2", vec![0.200, 0.201, 0.202, 0.203, 0.204, 0.205, 0.206, 0.207], 20.0),
        spread("3", vec![0.190, 0.191, 0.192, 0.193, 0.194, 0.195, 0.196, 0.197], 40.0),
    ];
    let s = scan(vec!["w".into()], None, &m, "--trials");
    let r = &s.recommendation;
    assert_eq!(r.stage.as_deref(), Some("trial[w=2]"), "{}", r.sentence);
    assert!(r.sentence.contains("w=3 is faster (p = "), "{}", r.sentence);
    assert!(r.sentence.contains("but not at the lowest tree peak"), "{}", r.sentence);
}
