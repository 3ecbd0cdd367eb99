use super::*;
use crate::rundir::declaration::Program;

fn sample(seed: u64, n: usize, center: f64) -> Vec<f64> {
    let mut rng = evidence::rng::Rng::new(seed);
    (0..n).map(|_| center * (1.0 + 0.03 * rng.normal())).collect()
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
    // Judged in pairs and not sure why (the couples disagreed): it says so.
    let why = "the machine moved the pairs' own ratio";
    let e = Endpoints { unsure: Some(why.into()), ..Endpoints::from(&row) };
    let text = text::answer(Some(&e), None, &[], None, 5.0);
    assert!(text.starts_with(&format!("not sure the endpoints differ: {why}")), "{text}");
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
