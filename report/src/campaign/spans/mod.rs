//! A pipeline's campaign, judged by the pipeline's own spans: what a resume
//! skipped (cold spans that did not run again), what it repeated (spans that
//! ran again, largest first), process start-up, and the time outside any
//! span. With roles (`[campaign] roles`, a stage's `roles`), spans join the
//! recipe's components and the recipe's sentences apply; without them, no
//! second of a pipeline is called "work".

pub(crate) mod calls;

pub use calls::last_finished;

use super::report::{StagePart, StepReport, component_total, label, outside, pct, span_totals};
use super::roles::{Role, Roles};
use crate::fmt::duration;
use crate::stats::median;
use std::collections::BTreeMap;

/// The components of a pipeline's stages: process start-up (before the
/// stage's wall), each span with a role in its role's component (a span
/// with the role `startup` in `startup_spans`, inside the wall), and
/// everything else (spans without a role, time outside spans) as `other`;
/// so the components add up to the stage's total, each second once.
pub fn apply_roles(parts: &mut BTreeMap<String, StagePart>, roles: &Roles) {
    for (stage, part) in parts.iter_mut().filter(|(_, p)| !p.skipped) {
        let role = |span: &str| roles.of(stage, span);
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
        // Roled spans are main-thread self time: they never exceed the wall.
        part.components.insert("other".into(), part.wall_s - roled);
    }
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

/// The sentences of a step read call by call (see [`calls`]), and its
/// repeated calls grouped by name (for what to persist).
fn call_sentences(
    reading: &calls::Reading,
    step: &StepReport,
    interrupted: bool,
) -> (Vec<String>, Vec<Repeated>) {
    use calls::Fate;
    let r = step.median_total_s;
    let order = |stage: &str| step.median.get(stage).map_or(usize::MAX, |p| p.order);
    let mut out = Vec::new();
    let cold = |c: &calls::Call| duration(c.cold_s.unwrap_or(0.0));
    let cold_s = |c: &calls::Call| c.cold_s.unwrap_or(0.0);
    let own_s = |c: &calls::Call| c.seconds;
    let skipped = reading.of(Fate::Skipped, order);
    out.push(match skipped.is_empty() {
        true => "It skipped no call of the cold run.".into(),
        false => {
            let (total, list) =
                listed_calls(&skipped, cold_s, |c| format!("{} ({} cold)", c.label(), cold(c)));
            format!("It skipped {} of the cold run's calls: {list}.", duration(total))
        }
    });
    let loaded = reading.of(Fate::Loaded, order);
    if !loaded.is_empty() {
        let (_, list) = listed_calls(&loaded, own_s, |c| {
            format!("{} took {} against {} cold", c.label(), duration(c.seconds), cold(c))
        });
        out.push(format!(
            "It loaded {} call(s) instead of redoing them (under {:.0}% of the cold call's time): {list}.",
            loaded.len(),
            100.0 * calls::LOADED_BELOW,
        ));
    }
    let undone = reading.of(Fate::NotYetDone, order);
    if !undone.is_empty() {
        let (_, list) = listed_calls(&undone, own_s, |c| {
            format!("{} {} ({} cold)", c.label(), duration(c.seconds), cold(c))
        });
        out.push(format!(
            "Not yet done at the kill, so work the interruption left, not a repeat: {list}."
        ));
    }
    let done = match interrupted {
        true => "done before the kill",
        false => "the cold run had done",
    };
    // The repeated calls summed per `STAGE/NAME`, then grouped by name as
    // the sums are (`by_name`).
    let mut per_stage: Vec<(String, f64)> = Vec::new();
    let mut cold_per_stage: BTreeMap<String, f64> = BTreeMap::new();
    for c in reading.of(Fate::Repeated, order) {
        let key = format!("{}/{}", c.stage, c.name);
        match per_stage.iter_mut().find(|(k, _)| *k == key) {
            Some((_, s)) => *s += c.seconds,
            None => per_stage.push((key.clone(), c.seconds)),
        }
        *cold_per_stage.entry(key).or_default() += c.cold_s.unwrap_or(0.0);
    }
    let repeated = by_name(&per_stage, |key| cold_per_stage.get(key).copied().unwrap_or(0.0));
    out.push(match repeated.is_empty() {
        true => format!("It repeated no call {done}."),
        false => format!(
            "It repeated {} of calls {done} (each second once): {}.",
            duration(reading.repeated_s),
            repeats_listed(&repeated, r, "calls")
        ),
    });
    let added = reading.of(Fate::Added, order);
    if !added.is_empty() {
        let (total, list) =
            listed_calls(&added, own_s, |c| format!("{} {}", c.label(), duration(c.seconds)));
        out.push(format!(
            "It ran {} in calls the cold run did not have, its own loading path: {list}.",
            duration(total)
        ));
    }
    (out, repeated)
}

/// Calls listed (six at most, then how many more), each as `each` says,
/// and the seconds `secs` counts of all of them.
fn listed_calls(
    v: &[&calls::Call],
    secs: impl Fn(&calls::Call) -> f64,
    each: impl Fn(&calls::Call) -> String,
) -> (f64, String) {
    let rest: Vec<(String, f64)> = v.iter().map(|c| (c.label(), secs(c))).collect();
    let total = rest.iter().map(|s| s.1).sum();
    (total, listed(v.iter().map(|c| each(c)).collect(), &rest, 6))
}

/// Repeats by name, as grouped: seconds, stages, share of a resume of
/// `resume_s`, and against the same `what` (calls or spans) cold.
fn repeats_listed(repeated: &[Repeated], resume_s: f64, what: &str) -> String {
    let each = |x: &Repeated| {
        format!(
            "{} {} in {} ({} of the resume, {:.2}× the same {what} cold)",
            x.name,
            duration(x.seconds),
            x.stages.join(", "),
            pct(x.seconds, resume_s),
            x.seconds / x.cold
        )
    };
    repeated.iter().map(each).collect::<Vec<_>>().join("; ")
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

/// A step's time in spans beside the main thread, over its stages.
fn concurrent_total(step: &StepReport) -> f64 {
    step.median.values().filter(|p| !p.skipped).map(|p| p.concurrent_s).sum()
}

/// A step's time outside any span, over its stages.
fn outside_total(step: &StepReport) -> f64 {
    step.median.values().map(outside).sum()
}

/// The judgment of a pipeline campaign: a few plain sentences, every number
/// from the steps' medians.
pub fn judgment(
    steps: &[StepReport],
    roles: &Roles,
    identity: Option<&super::report::Identity>,
) -> Vec<String> {
    let mut out = Vec::new();
    let Some(cold) = steps.iter().find(|s| s.kind == "cold") else { return out };
    let c = cold.median_total_s;
    let cold_spans = span_totals(cold, true);
    out.push(format!(
        "A cold run (reset scratch) took {} (median of {} fresh-process runs): {} in spans, {} outside any span, {} process start-up{}.",
        duration(c),
        cold.trials.len(),
        duration(cold_spans.iter().map(|s| s.1).sum()),
        duration(outside_total(cold)),
        duration(component_total(cold, "startup")),
        match concurrent_total(cold) > 0.0 {
            true => format!(
                "; {} more in spans beside the main thread (threads, child processes), no part of the wall",
                duration(concurrent_total(cold))
            ),
            false => String::new(),
        }
    ));
    if let Some(identity) = identity {
        out.push(super::report::cold_identity(identity));
    }
    let has_roles = roles.any();
    // `STAGE/NAME` of the spans whose role is work: still to do, never
    // something to persist.
    let is_work = |key: &str| {
        let (stage, name) = key.split_once('/').unwrap_or(("", key));
        roles.of(stage, name) == Some(Role::Work)
    };
    let has_work = roles.names(Role::Work);
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
                // Not all identical: how, against the cold runs' own baseline.
                let how = match identical == step.trials.len() {
                    true => String::new(),
                    false => format!(
                        " {}",
                        super::report::resumed_state(step, "scratch state", identity)
                    ),
                };
                format!(
                    "Killed with SIGKILL at {} after {} and resumed ({}): the resume took {} ({:.3}× the cold run), so the interruption cost {} beyond one cold run; the scratch state was identical to the cold run's in {identical} of {} trials.{how}",
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
                out.push(super::report::resumed_state(step, "scratch state", identity));
                continue;
            }
            _ => format!(
                "Resuming ({}) took {}: {:.3}× the cold run. {}",
                step.name,
                duration(r),
                r / c,
                super::report::resumed_state(step, "scratch state", identity)
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
        // Spans of few calls are read call by call; the rest by their sums.
        let reading = calls::read(step, cold);
        let by_call = |key: &str| {
            let (stage, name) = key.split_once('/').unwrap_or(("", key));
            reading.as_ref().is_some_and(|r| r.names.contains(&(stage.into(), name.into())))
        };
        let (call_lines, call_repeats) = match &reading {
            Some(reading) => call_sentences(reading, step, step.kind == "interrupted"),
            None => (Vec::new(), Vec::new()),
        };
        out.extend(call_lines);
        let cold_rest: Vec<(String, f64)> =
            cold_spans.iter().filter(|(k, _)| !by_call(k)).cloned().collect();
        let ran: Vec<(String, f64)> =
            span_totals(step, true).into_iter().filter(|(k, _)| !by_call(k)).collect();
        let by_sums = reading.is_none() || !cold_rest.is_empty() || !ran.is_empty();
        if by_sums {
            out.push(skipped_sentence(&cold_rest, &ran));
        }
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
        if by_sums {
            out.push(match repeated.is_empty() {
                true => "It repeated no span of the cold run.".into(),
                false => format!(
                    "It repeated {} of the cold run's spans: {}.",
                    duration(again.iter().map(|s| s.1).sum()),
                    repeats_listed(&repeated, r, "spans")
                ),
            });
        }
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
        // The largest repeat, whether read call by call or by sums.
        repeated.extend(call_repeats);
        repeated.sort_by(|a, b| b.seconds.total_cmp(&a.seconds).then(a.name.cmp(&b.name)));
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
mod tests;
