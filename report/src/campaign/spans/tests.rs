//! The pipeline judgment's sentences, each made to say "no".

use super::*;
use crate::campaign::report::StepReport;
use crate::campaign::roles::{Role, Roles};
use serde_json::json;

/// A campaign's roles: `(span, role)` for every stage.
fn campaign(roles: &[(&str, Role)]) -> Roles {
    Roles {
        campaign: roles.iter().map(|(span, role)| (span.to_string(), *role)).collect(),
        stages: BTreeMap::new(),
    }
}

/// A stage: its name, wall, process start-up and spans (name, seconds).
type Stage<'a> = (&'a str, f64, f64, &'a [(&'a str, f64)]);

/// A step from its stages, one trial.
fn step(name: &str, kind: &str, stages: &[Stage<'_>]) -> StepReport {
    let median: BTreeMap<String, StagePart> = stages
        .iter()
        .enumerate()
        .map(|(order, (stage, wall, startup, spans))| {
            let part = StagePart {
                order,
                wall_s: *wall,
                components: [("startup".to_string(), *startup)].into(),
                skipped: false,
                spans: spans.iter().map(|(n, s)| (n.to_string(), *s)).collect(),
                concurrent_s: 0.0,
                runtime: None,
            };
            (stage.to_string(), part)
        })
        .collect();
    let total: f64 = median.values().map(StagePart::total).sum();
    let trial = json!({
        "run": "r", "run_wall_s": total, "stages": {}, "total_s": total,
        "state_sha256": "s", "killed": null, "identical_to_cold": true,
    });
    serde_json::from_value(json!({
        "name": name, "kind": kind, "policy": null, "kill_at": null,
        "trials": [trial], "median": median, "median_total_s": total,
    }))
    .unwrap()
}

/// A span with the role `startup` is inside its stage's wall: it joins
/// `startup_spans`, process start-up stays what the worker measured,
/// and the components add up to the stage's total, each second once.
#[test]
fn a_startup_span_is_counted_once_and_the_parts_sum_to_the_stage() {
    let c = campaign(&[("jit_compile", Role::Startup), ("fit", Role::Work)]);
    let s = step("cold", "cold", &[("a", 1.0, 0.2, &[("jit_compile", 0.3), ("fit", 0.5)])]);
    let mut parts = s.median.clone();
    apply_roles(&mut parts, &c);
    let a = &parts["a"];
    assert_eq!(a.components["startup"], 0.2, "{a:?}");
    assert_eq!(a.components["startup_spans"], 0.3);
    assert_eq!(a.components["work"], 0.5);
    assert!((a.components["other"] - 0.2).abs() < 1e-12);
    let sum: f64 = a.components.values().sum();
    assert!((sum - a.total()).abs() < 1e-12, "parts {sum} against the stage's {}", a.total());
    assert!((a.total() - 1.2).abs() < 1e-12);
}

/// A stage's own `work` role keeps its span out of the persist
/// sentence; roles bring the sentence by role, and no roles none; an
/// interrupted step opens with its kill and what the interruption cost.
#[test]
fn own_work_roles_interrupted_steps_and_the_role_sentence() {
    let mut c = campaign(&[]);
    c.stages.entry("a".into()).or_default().insert("search".into(), Role::Work);
    let stages: &[Stage<'_>] = &[
        ("a", 3.0, 0.1, &[("search", 2.0), ("recompute", 0.5)]),
        ("b", 1.0, 0.1, &[("plot", 0.1)]),
    ];
    let cold = step("cold", "cold", stages);
    let resume = step("resume", "resume", stages);
    let j = judgment(&[cold.clone(), resume], &c, None);
    let persist = j.iter().find(|l| l.contains("first thing to persist")).unwrap();
    assert!(persist.contains(", recompute (500.0 ms"), "{persist}");
    assert!(j.iter().any(|l| l.starts_with("By role, ")), "{j:?}");
    let plain = judgment(&[cold.clone(), step("resume", "resume", stages)], &campaign(&[]), None);
    assert!(!plain.iter().any(|l| l.starts_with("By role")), "{plain:?}");

    let mut none = step("resume", "resume", stages);
    none.median.values_mut().for_each(|p| p.skipped = true);
    let j = judgment(&[cold.clone(), none], &campaign(&[]), None);
    assert!(
        j[1].starts_with("Resuming (resume) ran no stage: every stage's completion marker existed"),
        "{j:?}"
    );
    assert_eq!(
        j[2],
        "It skipped 2.600 s of the cold run's spans: a/search (2.000 s cold), a/recompute (500.0 ms cold), b/plot (100.0 ms cold)."
    );

    let mut killed = step("killed", "interrupted", stages);
    killed.kill_at = Some("a:0.5".into());
    killed.trials[0].killed = Some(crate::campaign::report::Killed {
        run: "k".into(),
        stage: "a".into(),
        wall_s: 1.0,
        span_s: None,
        calls: Default::default(),
    });
    let j = judgment(&[cold, killed], &campaign(&[]), None);
    assert!(
        j[1].starts_with("Killed with SIGKILL at a:0.5 after 1.000 s and resumed (killed): the resume took 4.200 s (1.000× the cold run), so the interruption cost 1.000 s beyond one cold run; the scratch state was identical to the cold run's in 1 of 1 trials."),
        "{}",
        j[1]
    );
}

/// The sentence by role: work against overhead, the overhead's largest
/// parts, and what loading instead of recomputing could save; without
/// work roles, the parts alone. A repeated span of 0 s is nothing to
/// persist.
#[test]
fn the_role_sentence_weighs_work_and_what_loading_would_save() {
    let mut s = step("resume", "resume", &[("a", 2.0, 0.1, &[])]);
    let parts = [("work", 1.0), ("recompute", 0.5), ("load", 0.2), ("other", 0.3)];
    let a = s.median.get_mut("a").unwrap();
    a.components.extend(parts.map(|(k, v)| (k.to_string(), v)));
    assert_eq!(
        by_role(&s, true),
        "By role, 1.000 s of it was work still to do, the other 1.100 s overhead: mostly recomputation 500.0 ms (24%), time outside roled spans 300.0 ms (14%), artifact loads 200.0 ms (10%), process start-up 100.0 ms (5%). Loading instead of recomputing could save up to 500.0 ms per resume (24% of it), less the time to load what the recomputation makes."
    );
    s.median.get_mut("a").unwrap().components.remove("recompute");
    assert!(by_role(&s, false).starts_with("By role: time outside roled spans 300.0 ms"));
    assert!(!by_role(&s, false).contains("Loading instead"));

    let c = campaign(&[]);
    let cold = step("cold", "cold", &[("a", 1.0, 0.1, &[("fit", 0.5)])]);
    let resume = step("resume", "resume", &[("a", 1.0, 0.1, &[("fit", 0.0)])]);
    let j = judgment(&[cold, resume], &c, None);
    assert!(!j.iter().any(|l| l.contains("persist")), "{j:?}");
}

/// At most six items are listed, then how many more and their seconds.
#[test]
fn a_long_list_names_six_then_counts_the_rest() {
    let rest: Vec<(String, f64)> = (0..8).map(|i| (format!("s{i}"), 1.0)).collect();
    let items = || rest.iter().map(|r| r.0.clone()).collect::<Vec<_>>();
    assert_eq!(listed(items(), &rest, 6), "s0, s1, s2, s3, s4, s5, and 2 more (2.000 s)");
    assert_eq!(listed(items()[..6].to_vec(), &rest[..6], 6), "s0, s1, s2, s3, s4, s5");
    let part = StagePart { wall_s: 2.0, spans: [("x".into(), 0.5)].into(), ..Default::default() };
    assert_eq!(outside(&part), 1.5);
    assert_eq!(outside(&StagePart { skipped: true, ..part }), 0.0);
}

/// A stage's own roles are its own: stage `a` calls `fit` work, stage
/// `b` gives it no role, so only `a`'s fit is work; a stage's role wins
/// over the campaign's.
#[test]
fn a_stages_own_roles_apply_to_it_alone_and_win() {
    let mut c = campaign(&[("load", Role::Load)]);
    c.stages.entry("a".into()).or_default().insert("fit".into(), Role::Work);
    c.stages.entry("a".into()).or_default().insert("load".into(), Role::Recompute);
    let spans: &[(&str, f64)] = &[("fit", 0.5), ("load", 0.25)];
    let s = step("cold", "cold", &[("a", 1.0, 0.0, spans), ("b", 1.0, 0.0, spans)]);
    let mut parts = s.median.clone();
    apply_roles(&mut parts, &c);
    assert_eq!(parts["a"].components.get("work"), Some(&0.5), "{:?}", parts["a"]);
    assert_eq!(parts["a"].components.get("recompute"), Some(&0.25));
    assert_eq!(parts["b"].components.get("work"), None, "{:?}", parts["b"]);
    assert_eq!(parts["b"].components.get("load"), Some(&0.25));
    assert_eq!(parts["b"].components["other"], 0.75);
}

/// The sentence to persist names the largest repeated span that is not
/// work; spans only the resume ran are its loading path, named apart
/// and never called repeated.
#[test]
fn the_persist_sentence_skips_work_and_resume_only_spans_are_their_own() {
    let c = campaign(&[("search", Role::Work)]);
    let cold = step(
        "cold",
        "cold",
        &[
            ("a", 3.0, 0.1, &[("search", 2.0), ("recompute", 0.5)]),
            ("b", 1.0, 0.1, &[("noop", 0.0)]),
        ],
    );
    let resume = step(
        "resume",
        "resume",
        &[
            ("a", 3.5, 0.1, &[("search", 2.0), ("recompute", 0.4), ("result_rebuild", 0.9)]),
            ("b", 1.0, 0.1, &[("samples_load", 0.2)]),
        ],
    );
    let j = judgment(&[cold, resume], &c, None);
    let find = |start: &str| {
        j.iter().find(|l| l.starts_with(start)).unwrap_or_else(|| panic!("{start}: {j:?}"))
    };
    // Walls 3.0 + 1.0 s, spans 2.5 s, start-up 2 × 100 ms.
    assert_eq!(
        j[0],
        "A cold run (reset scratch) took 4.200 s (median of 1 fresh-process runs): 2.500 s in spans, 1.500 s outside any span, 200.0 ms process start-up."
    );
    // The resume: walls 3.5 + 1.0 s, spans 3.3 + 0.2 s.
    assert!(
        j[1].contains(
            "Of the resume's time: 200.0 ms (4%) process start-up, 1.000 s (21%) outside any span"
        ),
        "{}",
        j[1]
    );
    // Every cold span with any time ran again (a 0 s one is no loss).
    assert!(j.iter().any(|l| l == "It skipped no span of the cold run."), "{j:?}");
    let repeated = find("It repeated");
    let search = "search 2.000 s in a (43% of the resume, 1.00× the same spans cold)";
    let recompute = "recompute 400.0 ms in a (9% of the resume, 0.80× the same spans cold)";
    assert!(repeated.contains(search) && repeated.contains(recompute), "{repeated}");
    assert!(!repeated.contains("result_rebuild") && !repeated.contains("samples_load"));
    let added = find("It ran 1.100 s in spans the cold run did not have");
    assert!(added.contains("result_rebuild 900.0 ms in a"), "{added}");
    assert!(added.contains("samples_load 200.0 ms in b"), "{added}");
    let persist = find("The largest repeated span");
    assert!(
        persist.starts_with("The largest repeated span not marked work, recompute (400.0 ms"),
        "{persist}"
    );
    // Without roles, the largest repeated span is the one to persist.
    let plain = campaign(&[]);
    let cold = step("cold", "cold", &[("a", 3.0, 0.1, &[("search", 2.0), ("recompute", 0.5)])]);
    let resume = step(
        "resume",
        "resume",
        &[("a", 3.5, 0.1, &[("search", 2.0), ("recompute", 0.4), ("result_rebuild", 0.9)])],
    );
    let j = judgment(&[cold, resume], &plain, None);
    let persist = j.iter().find(|l| l.contains("first thing to persist")).unwrap();
    assert!(persist.starts_with("The largest repeated span, search (2.000 s"), "{persist}");
}
