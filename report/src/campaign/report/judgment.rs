//! The judgment of a campaign in plain sentences, every number from its
//! report: the failed trials first, the recipe's steps by component,
//! whether a resumed state reproduced a cold run, and whether more
//! checkpoints would pay.

use super::parts::{component_total, largest_components, pct};
use super::{FailedTrial, Identity, StepReport, label};
use crate::fmt::duration;
use crate::stats::median;

/// The judgment's opening when trials failed: per step, how many of its
/// trials and how (the first failure's words), and the steps not run.
pub fn failures(failed: &[FailedTrial], not_run: &[String], trials: u32) -> Vec<String> {
    let mut out = Vec::new();
    let mut steps: Vec<&str> = Vec::new();
    for f in failed {
        if !steps.contains(&f.step.as_str()) {
            steps.push(&f.step);
        }
    }
    for step in steps {
        let of: Vec<&FailedTrial> = failed.iter().filter(|f| f.step == step).collect();
        let first = of[0];
        let what = match first.kind.as_str() {
            "cold" => format!("A cold run ({step})"),
            "resume" => format!("Resuming ({step})"),
            _ => format!(
                "Resuming after an interruption at {} ({step})",
                first.kill_at.as_deref().unwrap_or("?")
            ),
        };
        let attempt = match of.iter().all(|f| f.killed_attempt) {
            true => ": the run to be interrupted itself failed",
            false => "",
        };
        let mut how: Vec<String> = Vec::new();
        for f in &of {
            let said = format!(
                "{}{}",
                f.stage.as_deref().map(|s| format!("stage {s}: ")).unwrap_or_default(),
                f.what()
            );
            if !how.contains(&said) {
                how.push(said);
            }
        }
        let after = first
            .last_span
            .as_deref()
            .map(|s| format!(", after its last finished span {s}"))
            .unwrap_or_default();
        let stderr = first
            .stderr_tail_file
            .as_deref()
            .map(|f| format!(" The end of its stderr is in {f}, outside the evidence."))
            .unwrap_or_default();
        out.push(format!(
            "{what} FAILED in {} of {trials} trials{attempt} ({}{after}); its measurements are left out, every other trial's kept, and failure.json in {} says why.{stderr}",
            of.len(),
            how.join("; "),
            first.run
        ));
    }
    for step in not_run {
        out.push(format!("Not run: {step}."));
    }
    out
}

/// The judgment: a few plain sentences, every number from the report.
pub fn judgment(steps: &[StepReport], epochs: u32) -> Vec<String> {
    let mut out = Vec::new();
    let Some(cold) = steps.iter().find(|s| s.kind == "cold") else { return out };
    let c = cold.median_total_s;
    out.push(format!(
        "A cold run (empty state) took {} (median of {} fresh-process runs, process start-up included).",
        duration(c),
        cold.trials.len()
    ));
    // A pipeline's resume has no policy: it stands with the load policy.
    let resume = |p: &str| {
        steps.iter().find(|s| s.kind == "resume" && s.policy.as_deref().unwrap_or("load") == p)
    };
    if let Some(load) = resume("load") {
        let r = load.median_total_s;
        let work = component_total(load, "work");
        out.push(format!(
            "Resuming ({}) took {}: {:.3}× the cold run; {} of it was work still to do, the other {} overhead.",
            load.name,
            duration(r),
            r / c,
            duration(work),
            duration(r - work)
        ));
        let listed = largest_components(load, &[], label);
        out.push(format!("That overhead is mostly {listed}."));
        out.push(resumed_state(load, "state", None));
        if let Some(rec) = resume("recompute") {
            let rr = rec.median_total_s;
            let recomputed = component_total(rec, "recompute");
            out.push(format!(
                "Recomputing the normalizer and the context index instead of loading them made the resume {} ({} of recomputation); loading instead of recomputing saves {} per resume ({} of the recompute resume).",
                duration(rr),
                duration(recomputed),
                duration(rr - r),
                pct(rr - r, rr)
            ));
        }
    }
    for s in steps.iter().filter(|s| s.kind == "interrupted") {
        let identical = s.trials.iter().filter(|t| t.identical_to_cold).count();
        let killed: Vec<f64> =
            s.trials.iter().filter_map(|t| t.killed.as_ref().map(|k| k.wall_s)).collect();
        out.push(format!(
            "Killed with SIGKILL at {} after {} and resumed: the resume took {}, {} of it work still to do or redone; the final artifacts were identical to the cold run's in {identical} of {} trials.",
            s.kill_at.as_deref().unwrap_or("?"),
            duration(median(&killed)),
            duration(s.median_total_s),
            duration(component_total(s, "work")),
            s.trials.len()
        ));
    }
    if let Some(f) = finer_checkpoints(steps, epochs) {
        out.push(f);
    }
    out
}

/// Whether a resume step left the state the cold run left: "identical … in
/// 2 of 2 trials", or, when any trial differs, a sentence that says so
/// first (`what`: "state", "scratch state").
pub fn resumed_state(step: &StepReport, what: &str, identity: Option<&Identity>) -> String {
    let n = step.trials.len();
    let identical = step.trials.iter().filter(|t| t.identical_to_cold).count();
    let within = step.trials.iter().filter(|t| !t.identical_to_cold && t.reproduces_cold()).count();
    let beyond = n - identical - within;
    let baseline = identity.map_or(0, |i| i.baseline_files);
    let most = step.trials.iter().filter_map(|t| t.beyond_baseline).max().unwrap_or(0);
    match (beyond, within) {
        (0, 0) => format!(
            "The {what} after resuming ({}) was identical to the cold run's in {identical} of {n} trials.",
            step.name
        ),
        (0, _) => format!(
            "The {what} after resuming ({}) was identical to the cold run's in {identical} of {n} trials, and in the other {within} differed only in files the cold runs differ in among themselves ({baseline}): it reproduces a cold run as well as a cold run does.",
            step.name
        ),
        _ => format!(
            "The {what} after resuming ({}) DIFFERED from the cold run's in {beyond} of {n} trials{}: this resume does not reproduce a cold run.",
            step.name,
            match identity {
                Some(i) if i.cold_trials > 1 => format!(
                    ", beyond what cold runs differ in among themselves (up to {most} file(s) more than the {baseline} in which they do)"
                ),
                Some(_) => format!(
                    " (in up to {most} file(s); one cold trial gives no baseline of how cold runs differ among themselves)"
                ),
                None => String::new(),
            }
        ),
    }
}

/// How a pipeline's cold runs compare with each other: the baseline a
/// resume's state is judged against, and what `identity_exclude` left out.
pub fn cold_identity(i: &Identity) -> String {
    let excluded = match i.exclude.is_empty() {
        true => String::new(),
        false => format!(
            " identity_exclude ({}) left {} file(s) out of the scratch state.",
            i.exclude.join(", "),
            i.excluded_files
        ),
    };
    let compared = match (i.cold_trials, i.cold_identical == i.cold_trials) {
        (0 | 1, _) => "One cold trial: no baseline of how cold runs differ among themselves, so any difference a resume leaves counts.".to_string(),
        (n, true) => format!("Cold runs reproduce each other: the {n} cold trials left the same scratch state."),
        (n, false) => format!(
            "Cold runs differ among themselves: {} of {n} cold trials left a scratch state other than the first's, in {} file(s) (listed in private/identity.txt, never in evidence); a resume is judged on what it changes beyond those.",
            n - i.cold_identical,
            i.baseline_files
        ),
    };
    format!("{compared}{excluded}")
}

/// Would more checkpoints per epoch pay? The time an interruption loses is
/// on average half an epoch; k checkpoints per epoch cut that to 1/(2k) of
/// an epoch and cost k − 1 more checkpoint writes (and files) per epoch.
fn finer_checkpoints(steps: &[StepReport], epochs: u32) -> Option<String> {
    let cold = steps.iter().find(|s| s.kind == "cold")?;
    let t = cold.median.get("train")?;
    let epoch_s = t.components.get("work").copied().unwrap_or(0.0) / f64::from(epochs.max(1));
    let bytes = cold.trials.first()?.checkpoint_bytes?;
    let writes: Vec<f64> = cold.trials.iter().filter_map(|t| t.checkpoint_write_s).collect();
    if writes.is_empty() {
        return None;
    }
    let write_s = median(&writes);
    let k = 4.0;
    let saved = epoch_s / 2.0 - epoch_s / (2.0 * k);
    let cost = (k - 1.0) * write_s;
    let verdict = if cost <= 0.0 {
        "they would pay off at any rate of interruption".to_string()
    } else {
        format!(
            "they pay off as soon as more than one epoch in {:.0} is interrupted; either way the stake is at most {} per interruption",
            (saved / cost).max(1.0),
            duration(saved)
        )
    };
    Some(format!(
        "A checkpoint (weights and Adam moments) is {} and takes {} to write; an epoch takes {}. Four checkpoints per epoch instead of one would add {} of state and {} of writes per epoch and cut the training lost to an interruption from about {} to {}: {verdict}.",
        kib(bytes),
        duration(write_s),
        duration(epoch_s),
        kib(3.0 * bytes),
        duration(cost),
        duration(epoch_s / 2.0),
        duration(epoch_s / (2.0 * k)),
    ))
}

fn kib(bytes: f64) -> String {
    format!("{:.1} KiB", bytes / 1024.0)
}
