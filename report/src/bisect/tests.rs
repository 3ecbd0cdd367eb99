use super::*;
use crate::rundir::declaration::Program;

fn sample(seed: u64, n: usize, center: f64) -> Vec<f64> {
    let mut rng = evidence::rng::Rng::new(seed);
    (0..n).map(|_| center * (1.0 + 0.03 * rng.normal())).collect()
}

/// Each answer of the classifier, and each of its "no"s: a probe like good
/// is good and not bad, like bad is bad and not good, one halfway is
/// neither (unclear, not guessed), and too few rounds say nothing.
#[test]
fn a_probe_is_good_bad_or_not_yet_either() {
    let (good, bad) = (sample(1, 8, 0.100), sample(2, 8, 0.140));
    let like = |seed, center| classify(&good, &bad, &sample(seed, 8, center), 5.0).verdict;
    for seed in 10..20 {
        assert_eq!(like(seed, 0.100), Some(ProbeVerdict::Good), "seed {seed}");
        assert_eq!(like(seed, 0.140), Some(ProbeVerdict::Bad), "seed {seed}");
        assert_eq!(like(seed, 0.120), None, "seed {seed}: halfway is neither");
    }
    // Two rounds can give no rank test below 0.05: nothing is said.
    assert_eq!(classify(&good[..2], &bad[..2], &sample(3, 2, 0.14), 5.0).verdict, None);
    // Endpoints that do not differ: a probe is neither.
    let same = sample(4, 8, 0.100);
    assert_eq!(classify(&good, &same, &sample(5, 8, 0.100), 5.0).verdict, None);
    // A slowdown below the threshold is no regression: not bad.
    let (g, b) = (sample(6, 12, 0.100), sample(7, 12, 0.104));
    assert_eq!(classify(&g, &b, &sample(8, 12, 0.104), 10.0).verdict, None);
}

#[test]
fn the_answer_says_no_when_the_endpoints_do_not_differ() {
    let (good, bad) = (sample(1, 8, 0.100), sample(2, 8, 0.100));
    let row = compare::row("work", "wall_s", &good, &bad, 5.0, 0);
    let e = Endpoints::from(&row);
    assert!(!e.regressed);
    let text = text::answer(Some(&e), None, &[], None, 5.0);
    assert!(text.starts_with("no regression between the endpoints: nothing to bisect"), "{text}");
    // Not regressed, but an interval reaching past the threshold: not sure.
    let e = Endpoints::from(&compare::row("work", "wall_s", &good, &sample(9, 8, 0.104), 5.0, 0));
    assert!(!e.regressed && e.interval.high > 1.05, "{:?}", e.interval);
    let text = text::answer(Some(&e), None, &[], None, 5.0);
    assert!(text.starts_with("not sure the endpoints differ"), "{text}");
    let bad = sample(3, 8, 0.140);
    let e = Endpoints::from(&compare::row("work", "wall_s", &good, &bad, 5.0, 0));
    let text = text::answer(Some(&e), Some("0123456789abcdef"), &[], None, 5.0);
    assert!(text.starts_with("first bad commit 0123456789ab: work wall_s"), "{text}");
    assert!(text.contains(" → ") && text.contains("×1.3") || text.contains("×1.4"), "{text}");
    assert!(text.contains("95% CI"), "{text}");
}

#[test]
fn a_resume_needs_the_same_bisection() {
    let d = BisectDeclaration {
        schema: SCHEMA_DECLARATION.into(),
        schema_version: SCHEMA_VERSION,
        created_utc: "2026-12-04T00:00:00Z".into(),
        good: "a".into(),
        bad: "b".into(),
        commits: vec!["a".into(), "b".into()],
        run_flags_sha256: "f".into(),
        build_sha256: None,
        figure: "wall_s".into(),
        threshold_pct: 5.0,
        rounds: 5,
        max_rounds: 15,
        work_tree_dirty: false,
        program: Program::current(String::new()),
    };
    let later = BisectDeclaration {
        created_utc: "2026-12-05T00:00:00Z".into(),
        work_tree_dirty: true,
        ..d.clone()
    };
    assert!(d.same_bisection(&later));
    let other = BisectDeclaration { run_flags_sha256: "g".into(), ..d.clone() };
    assert!(!d.same_bisection(&other));
    let other = BisectDeclaration { threshold_pct: 10.0, ..d.clone() };
    assert!(!d.same_bisection(&other));
}

/// A probe slower than good at compare's level (p < 0.05) but not at a
/// bisection's (p < 0.01) is not yet called bad: more rounds decide.
#[test]
fn a_probe_is_called_only_at_the_stricter_level() {
    let good: Vec<f64> = (0..8).map(|i| 0.100 + 0.001 * i as f64).collect();
    let bad: Vec<f64> = (0..8).map(|i| 0.200 + 0.001 * i as f64).collect();
    let probe: Vec<f64> = good.iter().map(|x| x + 0.0038).collect();
    let row = compare::row("", "", &good, &probe, 1.0, 1);
    assert!(row.p > PROBE_ALPHA && row.p < stats::ALPHA && row.regressed, "{row:?}");
    assert_eq!(classify(&good, &bad, &probe, 1.0).verdict, None);
    let probe: Vec<f64> = (0..8).map(|i| 0.2005 + 0.001 * i as f64).collect();
    assert_eq!(classify(&good, &bad, &probe, 5.0).verdict, Some(ProbeVerdict::Bad));
}

/// A probe significantly unlike both endpoints is never called by its
/// place between them (issue 63: a probe 12 ms from good's median in a
/// 37.6 ms gap was called good, wrongly, on a drifting machine); measured
/// in its own window, where the endpoints drifted with it, it is called.
#[test]
fn a_probe_unlike_both_is_not_called_and_its_window_decides() {
    let tight = |center: f64| -> Vec<f64> { (0..8).map(|i| center + 0.0002 * i as f64).collect() };
    let (good, bad) = (tight(0.120), tight(0.168));
    // 9% above good, far below bad, against endpoints measured before the
    // machine drifted: unlike both, so nothing is said.
    assert_eq!(classify(&good, &bad, &tight(0.131), 5.0).verdict, None);
    assert_eq!(classify(&good, &bad, &tight(0.158), 5.0).verdict, None);
    // The same probes against the endpoints measured beside them (the
    // same 9% drift): good, and bad.
    let (good_now, bad_now) = (tight(0.120 * 1.09), tight(0.168 * 1.09));
    assert_eq!(classify(&good_now, &bad_now, &tight(0.131), 5.0).verdict, Some(ProbeVerdict::Good));
    let bad_probe = tight(0.168 * 1.09 - 0.0005);
    assert_eq!(classify(&good_now, &bad_now, &bad_probe, 5.0).verdict, Some(ProbeVerdict::Bad));
}

/// The boundary side by side: an upper commit slower beyond the threshold
/// holds; one like the lower does not.
#[test]
fn the_boundary_holds_only_when_the_upper_commit_is_surely_slower() {
    let (lower, upper) = (sample(1, 12, 0.100), sample(2, 12, 0.140));
    assert!(boundary_holds(&lower, &upper, 5.0).0);
    assert!(!boundary_holds(&lower, &sample(3, 12, 0.100), 5.0).0);
    assert!(!boundary_holds(&upper, &lower, 5.0).0, "faster is no boundary");
}

/// A probe surely slower than good is not called bad while bad is slower
/// than it too, even below the bisection's level (p between 0.01 and 0.05):
/// it may lie between them.
#[test]
fn a_probe_is_not_bad_while_bad_may_still_be_slower_than_it() {
    let good: Vec<f64> = (0..8).map(|i| 0.050 + 0.0005 * i as f64).collect();
    let probe: Vec<f64> = (0..8).map(|i| 0.140 + 0.0014 * i as f64).collect();
    let bad: Vec<f64> = probe.iter().map(|x| x + 0.00532).collect();
    let against = compare::row("", "", &probe, &bad, 1.0, 2);
    assert!(against.regressed && against.p > PROBE_ALPHA, "{against:?}");
    assert_eq!(classify(&good, &bad, &probe, 1.0).verdict, None);
}
