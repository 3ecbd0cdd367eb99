//! A pipeline's campaign, judged by the pipeline's own spans: what a resume
//! skipped (cold spans that did not run again), what it repeated (spans that
//! ran again, largest first), process start-up, and the time outside any
//! span. With roles (`[campaign] roles`, a stage's `roles`), spans join the
//! recipe's components and the recipe's sentences apply; without them, no
//! second of a pipeline is called "work".

use super::file::CampaignFile;
use super::report::{StagePart, StepReport, component_total, label, pct};
use crate::fmt::duration;
use crate::stats::median;
use std::collections::BTreeMap;

/// The components of a pipeline's stages: process start-up (before the
/// stage's wall), each span with a role in its role's component (a span
/// with the role `startup` in `startup_spans`, inside the wall), and
/// everything else (spans without a role, time outside spans) as `other`;
/// so the components add up to the stage's total, each second once.
pub(crate) fn apply_roles(parts: &mut BTreeMap<String, StagePart>, campaign: &CampaignFile) {
    for (stage, part) in parts.iter_mut().filter(|(_, p)| !p.skipped) {
        let own = campaign.pipeline.iter().find(|p| p.name == *stage).map(|p| &p.roles);
        let role = |span: &str| {
            own.and_then(|r| r.get(span)).or_else(|| campaign.campaign.roles.get(span)).copied()
        };
        let startup = part.components.get("startup").copied().unwrap_or(0.0);
        part.components.clear();
        let mut roled = 0.0;
        for (span, secs) in &part.spans {
            if let Some(r) = role(span) {
                *part.components.entry(r.component().to_string()).or_default() += secs;
                roled += secs;
            }
        }
        part.components.insert("startup".into(), startup);
        part.components.insert("other".into(), (part.wall_s - roled).max(0.0));
    }
}

/// A step's median spans summed by name over its stages that ran, largest
/// first (`per_stage`: by `STAGE/NAME` instead).
pub(crate) fn span_totals(step: &StepReport, per_stage: bool) -> Vec<(String, f64)> {
    let mut by_name: BTreeMap<String, f64> = BTreeMap::new();
    for (stage, part) in step.median.iter().filter(|(_, p)| !p.skipped) {
        for (name, s) in &part.spans {
            let key = if per_stage { format!("{stage}/{name}") } else { name.clone() };
            *by_name.entry(key).or_default() += s;
        }
    }
    let mut out: Vec<(String, f64)> = by_name.into_iter().collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    out
}

/// What a step skipped: the cold run's spans (per `STAGE/NAME`) that did
/// not run again (`ran`), and what they cost cold.
fn skipped_sentence(cold_spans: &[(String, f64)], ran: &[(String, f64)]) -> String {
    let skipped: Vec<(String, f64)> = cold_spans
        .iter()
        .filter(|(n, s)| *s > 0.0 && !ran.iter().any(|r| r.0 == *n))
        .cloned()
        .collect();
    match skipped.is_empty() {
        true => "It skipped no span of the cold run.".into(),
        false => format!(
            "It skipped {} of the cold run's spans: {}.",
            duration(skipped.iter().map(|s| s.1).sum()),
            listed(
                skipped.iter().map(|(n, s)| format!("{n} ({} cold)", duration(*s))).collect(),
                &skipped,
                6
            )
        ),
    }
}

/// A span name's repetitions over a step's stages.
struct Repeated {
    name: String,
    seconds: f64,
    stages: Vec<String>,
    /// The same stages' spans of that name, cold.
    cold: f64,
}

/// `STAGE/NAME` totals grouped by name, largest first.
fn by_name(per_stage: &[(String, f64)], cold_of: impl Fn(&str) -> f64) -> Vec<Repeated> {
    let mut out: Vec<Repeated> = Vec::new();
    for (key, secs) in per_stage {
        let (stage, name) = key.split_once('/').unwrap_or(("", key));
        let at = match out.iter().position(|x| x.name == name) {
            Some(i) => i,
            None => {
                let fresh = Repeated { name: name.into(), seconds: 0.0, stages: vec![], cold: 0.0 };
                out.push(fresh);
                out.len() - 1
            }
        };
        let x = &mut out[at];
        x.seconds += secs;
        x.stages.push(stage.into());
        x.cold += cold_of(key);
    }
    out.sort_by(|a, b| b.seconds.total_cmp(&a.seconds).then(a.name.cmp(&b.name)));
    out
}

/// At most `n` items, then how many more and their seconds.
fn listed(items: Vec<String>, rest: &[(String, f64)], n: usize) -> String {
    let mut out: Vec<String> = items.into_iter().take(n).collect();
    if rest.len() > n {
        let more: f64 = rest[n..].iter().map(|s| s.1).sum();
        out.push(format!("and {} more ({})", rest.len() - n, duration(more)));
    }
    out.join(", ")
}

/// A stage's wall outside any of its spans.
pub(crate) fn outside(part: &StagePart) -> f64 {
    match part.skipped {
        true => 0.0,
        false => (part.wall_s - part.spans.values().sum::<f64>()).max(0.0),
    }
}

/// A step's time outside any span, over its stages.
fn outside_total(step: &StepReport) -> f64 {
    step.median.values().map(outside).sum()
}

/// The judgment of a pipeline campaign: a few plain sentences, every number
/// from the steps' medians.
pub(crate) fn judgment(steps: &[StepReport], campaign: &CampaignFile) -> Vec<String> {
    let mut out = Vec::new();
    let Some(cold) = steps.iter().find(|s| s.kind == "cold") else { return out };
    let c = cold.median_total_s;
    let cold_spans = span_totals(cold, true);
    out.push(format!(
        "A cold run (reset scratch) took {} (median of {} fresh-process runs): {} in spans, {} outside any span, {} process start-up.",
        duration(c),
        cold.trials.len(),
        duration(cold_spans.iter().map(|s| s.1).sum()),
        duration(outside_total(cold)),
        duration(component_total(cold, "startup")),
    ));
    let has_roles = !campaign.campaign.roles.is_empty()
        || campaign.pipeline.iter().any(|p| !p.roles.is_empty());
    // `STAGE/NAME` of the spans whose role is work: still to do, never
    // something to persist.
    let is_work = |key: &str| {
        let (stage, name) = key.split_once('/').unwrap_or(("", key));
        let own =
            campaign.pipeline.iter().find(|p| p.name == stage).and_then(|p| p.roles.get(name));
        own.or_else(|| campaign.campaign.roles.get(name)).is_some_and(|r| r.component() == "work")
    };
    let has_work = campaign
        .pipeline
        .iter()
        .flat_map(|p| p.roles.values())
        .chain(campaign.campaign.roles.values())
        .any(|r| r.component() == "work");
    for step in steps.iter().filter(|s| s.kind != "cold") {
        let r = step.median_total_s;
        let opening = match step.kind.as_str() {
            "interrupted" => {
                let killed: Vec<f64> = step
                    .trials
                    .iter()
                    .filter_map(|t| t.killed.as_ref().map(|k| k.wall_s))
                    .collect();
                let k = median(&killed);
                let identical = step.trials.iter().filter(|t| t.identical_to_cold).count();
                format!(
                    "Killed with SIGKILL at {} after {} and resumed ({}): the resume took {} ({:.3}× the cold run), so the interruption cost {} beyond one cold run; the scratch state was identical to the cold run's in {identical} of {} trials.",
                    step.kill_at.as_deref().unwrap_or("?"),
                    duration(k),
                    step.name,
                    duration(r),
                    r / c,
                    duration(k + r - c),
                    step.trials.len()
                )
            }
            _ if step.median.values().all(|p| p.skipped) => {
                out.push(format!(
                    "Resuming ({}) ran no stage: every stage's completion marker existed, and checking them took {}.",
                    step.name,
                    duration(r)
                ));
                out.push(skipped_sentence(&cold_spans, &[]));
                out.push(super::report::resumed_state(step, "scratch state"));
                continue;
            }
            _ => format!(
                "Resuming ({}) took {}: {:.3}× the cold run. {}",
                step.name,
                duration(r),
                r / c,
                super::report::resumed_state(step, "scratch state")
            ),
        };
        out.push(format!(
            "{opening} Of the {}: {} ({}) process start-up, {} ({}) outside any span (the command's own start-up and imports, and whatever else no span covers).",
            if step.kind == "interrupted" { "resume" } else { "resume's time" },
            duration(component_total(step, "startup")),
            pct(component_total(step, "startup"), r),
            duration(outside_total(step)),
            pct(outside_total(step), r),
        ));
        let ran = span_totals(step, true);
        out.push(skipped_sentence(&cold_spans, &ran));
        let cold_of = |key: &str| cold_spans.iter().find(|s| s.0 == key).map_or(0.0, |s| s.1);
        // A span the cold run had in the same stage ran again; one it never
        // had is what the resume added (its own loading path).
        let (again, added): (Vec<_>, Vec<_>) =
            ran.iter().cloned().partition(|(key, _)| cold_of(key) > 0.0);
        let order = |x: &mut Vec<Repeated>| {
            for r in x.iter_mut() {
                r.stages.sort_by_key(|st| step.median.get(st).map_or(usize::MAX, |p| p.order));
            }
        };
        let mut repeated = by_name(&again, cold_of);
        order(&mut repeated);
        out.push(match repeated.is_empty() {
            true => "It repeated no span of the cold run.".into(),
            false => format!(
                "It repeated {} of the cold run's spans: {}.",
                duration(again.iter().map(|s| s.1).sum()),
                repeated
                    .iter()
                    .map(|x| format!(
                        "{} {} in {} ({} of the resume, {:.2}× the same spans cold)",
                        x.name,
                        duration(x.seconds),
                        x.stages.join(", "),
                        pct(x.seconds, r),
                        x.seconds / x.cold
                    ))
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        });
        let mut new = by_name(&added, cold_of);
        order(&mut new);
        if !new.is_empty() {
            out.push(format!(
                "It ran {} in spans the cold run did not have, its own loading path: {}.",
                duration(added.iter().map(|s| s.1).sum()),
                new.iter()
                    .map(|x| format!(
                        "{} {} in {} ({} of the resume)",
                        x.name,
                        duration(x.seconds),
                        x.stages.join(", "),
                        pct(x.seconds, r)
                    ))
                    .collect::<Vec<_>>()
                    .join("; ")
            ));
        }
        let persist = repeated.iter().find(|x| {
            x.seconds > 0.0 && !x.stages.iter().all(|st| is_work(&format!("{st}/{}", x.name)))
        });
        if let Some(x) = persist {
            out.push(format!(
                "The largest repeated span{}, {} ({} per resume over {} stage(s)), is the first thing to persist and load instead of recompute.",
                if has_work { " not marked work" } else { "" },
                x.name,
                duration(x.seconds),
                x.stages.len()
            ));
        }
        if has_roles {
            out.push(by_role(step, has_work));
        }
    }
    out
}

/// The recipe's sentences, for a step whose spans have roles.
fn by_role(step: &StepReport, has_work: bool) -> String {
    let r = step.median_total_s;
    let work = component_total(step, "work");
    let listed = super::report::largest_components(step, &["work"], |k| match k {
        "other" => "time outside roled spans",
        k => label(k),
    });
    let head = match has_work {
        true => format!(
            "By role, {} of it was work still to do, the other {} overhead: mostly {}.",
            duration(work),
            duration(r - work),
            listed
        ),
        false => format!("By role: {}.", listed),
    };
    let recompute = component_total(step, "recompute");
    match recompute > 0.0 {
        true => format!(
            "{head} Loading instead of recomputing could save up to {} per resume ({} of it), less the time to load what the recomputation makes.",
            duration(recompute),
            pct(recompute, r)
        ),
        false => head,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::campaign::report::StepReport;
    use serde_json::json;

    fn campaign(roles: &str) -> CampaignFile {
        toml::from_str(&format!(
            "[campaign]\nname = \"c\"\nroles = {{ {roles} }}\n\n[[pipeline]]\nname = \"a\"\nargv = [\"true\"]\n\n[[pipeline]]\nname = \"b\"\nargv = [\"true\"]\n\n[[step]]\nname = \"cold\"\nkind = \"cold\"\n"
        ))
        .unwrap()
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
        let c = campaign("jit_compile = \"startup\", fit = \"work\"");
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
        let mut c = campaign("");
        c.pipeline[0].roles.insert("search".into(), super::super::file::Role::Work);
        let stages: &[Stage<'_>] = &[
            ("a", 3.0, 0.1, &[("search", 2.0), ("recompute", 0.5)]),
            ("b", 1.0, 0.1, &[("plot", 0.1)]),
        ];
        let cold = step("cold", "cold", stages);
        let resume = step("resume", "resume", stages);
        let j = judgment(&[cold.clone(), resume], &c);
        let persist = j.iter().find(|l| l.contains("first thing to persist")).unwrap();
        assert!(persist.contains(", recompute (500.0 ms"), "{persist}");
        assert!(j.iter().any(|l| l.starts_with("By role, ")), "{j:?}");
        let plain = judgment(&[cold.clone(), step("resume", "resume", stages)], &campaign(""));
        assert!(!plain.iter().any(|l| l.starts_with("By role")), "{plain:?}");

        let mut none = step("resume", "resume", stages);
        none.median.values_mut().for_each(|p| p.skipped = true);
        let j = judgment(&[cold.clone(), none], &campaign(""));
        assert!(
            j[1].starts_with(
                "Resuming (resume) ran no stage: every stage's completion marker existed"
            ),
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
        });
        let j = judgment(&[cold, killed], &campaign(""));
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

        let c = campaign("");
        let cold = step("cold", "cold", &[("a", 1.0, 0.1, &[("fit", 0.5)])]);
        let resume = step("resume", "resume", &[("a", 1.0, 0.1, &[("fit", 0.0)])]);
        let j = judgment(&[cold, resume], &c);
        assert!(!j.iter().any(|l| l.contains("persist")), "{j:?}");
    }

    /// At most six items are listed, then how many more and their seconds.
    #[test]
    fn a_long_list_names_six_then_counts_the_rest() {
        let rest: Vec<(String, f64)> = (0..8).map(|i| (format!("s{i}"), 1.0)).collect();
        let items = || rest.iter().map(|r| r.0.clone()).collect::<Vec<_>>();
        assert_eq!(listed(items(), &rest, 6), "s0, s1, s2, s3, s4, s5, and 2 more (2.000 s)");
        assert_eq!(listed(items()[..6].to_vec(), &rest[..6], 6), "s0, s1, s2, s3, s4, s5");
        let part =
            StagePart { wall_s: 2.0, spans: [("x".into(), 0.5)].into(), ..Default::default() };
        assert_eq!(outside(&part), 1.5);
        assert_eq!(outside(&StagePart { skipped: true, ..part }), 0.0);
    }

    /// A stage's own roles are its own: stage `a` calls `fit` work, stage
    /// `b` gives it no role, so only `a`'s fit is work; a stage's role wins
    /// over the campaign's.
    #[test]
    fn a_stages_own_roles_apply_to_it_alone_and_win() {
        let mut c = campaign("load = \"load\"");
        c.pipeline[0].roles.insert("fit".into(), super::super::file::Role::Work);
        c.pipeline[0].roles.insert("load".into(), super::super::file::Role::Recompute);
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
        let c = campaign("search = \"work\"");
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
        let j = judgment(&[cold, resume], &c);
        let find = |start: &str| {
            j.iter().find(|l| l.starts_with(start)).unwrap_or_else(|| panic!("{start}: {j:?}"))
        };
        // Walls 3.0 + 1.0 s, spans 2.5 s, start-up 2 × 100 ms.
        assert_eq!(
            j[0],
            "A cold run (reset scratch) took 4.200 s (median of 1 fresh-process runs): 2.500 s in spans, 1.500 s outside any span, 200.0 ms process start-up."
        );
        // The resume: walls 3.5 + 1.0 s, spans 3.3 + 0.2 s.
        assert!(j[1].contains("Of the resume's time: 200.0 ms (4%) process start-up, 1.000 s (21%) outside any span"), "{}", j[1]);
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
        let plain = campaign("");
        let cold = step("cold", "cold", &[("a", 3.0, 0.1, &[("search", 2.0), ("recompute", 0.5)])]);
        let resume = step(
            "resume",
            "resume",
            &[("a", 3.5, 0.1, &[("search", 2.0), ("recompute", 0.4), ("result_rebuild", 0.9)])],
        );
        let j = judgment(&[cold, resume], &plain);
        let persist = j.iter().find(|l| l.contains("first thing to persist")).unwrap();
        assert!(persist.starts_with("The largest repeated span, search (2.000 s"), "{persist}");
    }
}
