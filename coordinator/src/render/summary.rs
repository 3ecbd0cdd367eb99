//! `summary.md`: a Markdown table a person can paste into an issue.

use crate::fmt::{duration, mib_number as mib};
use crate::modes::{self, Report};
use crate::rundir::report::TrialSet;
use std::fmt::Write as _;

/// The stages that started processes of their own (commands, pipeline
/// stages) or left some behind: their tree's peak by each bound, and what
/// the worker had to kill.
fn process_trees(s: &mut String, r: &Report) {
    let mut rows: Vec<_> = r
        .stages
        .iter()
        .filter(|(_, st)| {
            st.sum_of_peaks_bytes > st.peak_rss_bytes || st.leaked_processes.count > 0
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    rows.sort_by_key(|(_, st)| st.order);
    let _ = writeln!(s, "\n## Process trees\n");
    let _ = writeln!(
        s,
        "Each stage with processes of its own, measured whole: the peak of all its processes at once (a lower bound when `sampled`) and the sum of each one's own peak (an upper bound).\n"
    );
    let _ = writeln!(s, "| stage | tree peak MiB | method | sum of peaks MiB | left running |");
    let _ = writeln!(s, "|---|---:|---|---:|---|");
    for (key, st) in &rows {
        let leaked = match st.leaked_processes.count {
            0 => "none".to_string(),
            n => format!("{n}: {}", st.leaked_processes.names.join(", ")),
        };
        let _ = writeln!(
            s,
            "| `{key}` | {} | {} | {} | {leaked} |",
            mib(st.tree_peak_bytes),
            st.tree_peak_method,
            mib(st.sum_of_peaks_bytes)
        );
    }
    for (key, st) in rows.iter().filter(|(_, st)| st.leaked_processes.count > 0) {
        let _ = writeln!(
            s,
            "\nWarning: `{key}` left {} process(es) running when it ended; its worker killed them (SIGTERM, then SIGKILL) and reaped them. Run with `--leaks fail` to fail such a stage.",
            st.leaked_processes.count
        );
    }
}

/// Every stage's `--span` targets that never matched, as warnings; and
/// the input-wait verdict of a command stage timed with `preset:torch`.
fn spans_not_found(s: &mut String, r: &Report) {
    let mut rows: Vec<_> = r.stages.iter().collect();
    rows.sort_by_key(|(_, st)| st.order);
    for (key, st) in rows {
        if let Some(w) = st.spans_not_found_warning(key) {
            let _ = writeln!(s, "\nWarning: {w}.");
        }
        if let (Some(f), "command") = (st.figures.get("input_wait_fraction"), st.stage_kind()) {
            let _ = writeln!(
                s,
                "\nInput: `{key}` {} (its DataLoader's waits against the time between batches; the TensorFlow profiler's grading: under 5% not, 5 to 20% moderately, 20% or more highly input-bound).",
                crate::modes::profile::input_phrase(*f)
            );
        }
    }
}

/// The spans the stages reported (`STAGEBENCH_SPANS`), per stage and name:
/// in how many trials, how many per trial, the median seconds with its
/// interval (95% from 6 trials, else the range with its coverage), and the
/// median's share of the stage's median wall.
fn trial_spans(
    s: &mut String,
    trials: &std::collections::BTreeMap<String, TrialSet>,
    keys: &[&String],
) {
    let rows: Vec<(&String, &str, &crate::stats::Summary)> = keys
        .iter()
        .flat_map(|k| {
            trials[*k].summary.iter().filter_map(move |(fig, sum)| {
                Some((*k, fig.strip_prefix("span:")?.strip_suffix("_s")?, sum))
            })
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(s, "\n## Spans (what the stages reported of themselves)\n");
    let _ = writeln!(
        s,
        "| stage | span | n | per trial | median | interval of median | share of the stage's wall |"
    );
    let _ = writeln!(s, "|---|---|---:|---:|---:|---|---:|");
    for (k, name, sum) in rows {
        let t = &trials[k];
        let per_trial = t.summary.get(&format!("span:{name}_n")).map_or(0.0, |c| c.median);
        let wall = t.summary["wall_s"].median;
        let share = match wall > 0.0 {
            true => format!("{:.0}%", 100.0 * sum.median / wall),
            false => "–".into(),
        };
        let _ = writeln!(
            s,
            "| `{k}` | `{name}` | {} | {per_trial} | {} | {} | {share} |",
            sum.n,
            duration(sum.median),
            sum.median_interval.cell(duration),
        );
    }
}

/// A `--mode recipe` run: each stage's time by component, what it reused
/// or rebuilt, and the state it left.
fn recipe_state(s: &mut String, r: &Report) {
    let Some(state) = r.state() else { return };
    let _ = writeln!(s, "\n## Recipe state\n");
    let components = ["record_check", "integrity", "load", "restore", "recompute", "work"];
    let _ = writeln!(
        s,
        "| stage | {} | reused | built | rebuilt |",
        components.iter().map(|c| crate::modes::recipe::label(c)).collect::<Vec<_>>().join(" | ")
    );
    let _ = writeln!(s, "|---|{}---:|---:|---:|", "---:|".repeat(components.len()));
    let mut rows: Vec<_> = r.stages.iter().collect();
    rows.sort_by_key(|(_, st)| st.order);
    for (key, st) in rows {
        let f = |k: &str| st.figures.get(k).copied();
        let cells: Vec<String> = components
            .iter()
            .map(|c| f(&format!("component:{c}_s")).map_or("–".into(), duration))
            .collect();
        let count = |k: &str| f(k).map_or("–".into(), |v| format!("{v:.0}"));
        let _ = writeln!(
            s,
            "| `{key}` | {} | {} | {} | {} |",
            cells.join(" | "),
            count("reused"),
            count("prepared"),
            count("rebuilt")
        );
    }
    let _ = writeln!(
        s,
        "\nThe state directory as the run left it: {} files, {} MiB, digest `{}`.",
        state.files,
        mib(state.bytes),
        &state.sha256[..12.min(state.sha256.len())]
    );
}

/// A stage's wall-time trial statistics as the console and summary.md show
/// them: median, its interval (95% from 6 trials, else the range with its
/// coverage), stdev, MAD, outliers, and trials to resolve 1% (`none` where
/// that cannot be said).
pub(crate) fn trial_cells(t: &TrialSet, none: &str) -> [String; 6] {
    let w = &t.summary["wall_s"];
    [
        duration(w.median),
        w.median_interval.cell(duration),
        duration(w.stdev),
        duration(w.mad),
        w.outliers.len().to_string(),
        t.trials_for_1pct.map(|n| n.to_string()).unwrap_or_else(|| none.into()),
    ]
}

/// The Markdown summary of a report.
pub(crate) fn summary_markdown(r: &Report) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# stagebench {} run\n", r.mode());
    let _ = writeln!(
        s,
        "{} stage(s), {} worker process(es), isolation `{}`, run wall {:.3} s. Declaration `{}`, environment `{}` (SHA-256, first 12 hex).\n",
        r.stages.len(),
        r.workers.len(),
        r.isolation,
        r.run_wall_s,
        &r.declaration_sha256[..12.min(r.declaration_sha256.len())],
        &r.environment_sha256[..12.min(r.environment_sha256.len())]
    );
    let _ = writeln!(s, "| stage | processes | wall | CPU | peak RSS MiB |");
    let _ = writeln!(s, "|---|---:|---:|---:|---:|");
    let mut rows: Vec<_> = r.stages.iter().collect();
    rows.sort_by_key(|(_, st)| st.order);
    for (key, st) in rows {
        let _ = writeln!(
            s,
            "| `{key}` | {} | {} | {} | {} |",
            st.processes,
            duration(st.wall_s),
            duration(st.cpu_s),
            mib(st.peak_rss_bytes)
        );
    }
    process_trees(&mut s, r);
    spans_not_found(&mut s, r);
    if let Some(prep) = r.cold_prep() {
        let (serial, parallel) = (&prep.serial, &prep.parallel);
        let _ = writeln!(s, "\n## Cold preparation\n");
        match (&prep.counts, &prep.items) {
            (Some(c), _) => {
                let _ = writeln!(
                    s,
                    "{} training series, {} samples, {} frames ({} valid).\n",
                    c.train_series, c.samples, c.frames, c.valid_frames
                );
            }
            (None, Some(i)) => items_paragraph(&mut s, prep, i),
            (None, None) => {}
        }
        let _ = writeln!(
            s,
            "| preparation | processes | wall | CPU | peak RSS MiB | per-{} median | p95 |",
            if prep.items.is_some() { "item" } else { "series" }
        );
        let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|");
        for (name, side) in [("serial", serial), ("parallel", parallel)] {
            let _ = writeln!(
                s,
                "| {name} | {} | {} | {} | {} | {} | {} |",
                side.workers.len(),
                duration(side.wall_s),
                duration(side.cpu_s),
                mib(side.peak_rss_bytes),
                duration(side.per_series_s.median),
                duration(side.per_series_s.p95)
            );
        }
        let outputs = if prep.items.is_some() { "output directories" } else { "caches" };
        if !prep.rounds.is_empty() {
            let _ = writeln!(
                s,
                "\n{} rounds, each into new {}, serial first in odd rounds and parallel first in even ones; the table above is round 1. A later round's {} were checked byte-identical to round 1's, then removed.\n",
                prep.rounds.len(),
                outputs,
                outputs
            );
            let _ = writeln!(
                s,
                "| round | first | serial wall | parallel wall | serial CPU | parallel CPU | speedup |"
            );
            let _ = writeln!(s, "|---:|---|---:|---:|---:|---:|---:|");
            for r in &prep.rounds {
                let first = match r.first {
                    crate::modes::cold_prep::rounds::First::Serial => "serial",
                    crate::modes::cold_prep::rounds::First::Parallel => "parallel",
                };
                let _ = writeln!(
                    s,
                    "| {} | {first} | {} | {} | {} | {} | {:.2}x |",
                    r.round,
                    duration(r.serial_wall_s),
                    duration(r.parallel_wall_s),
                    duration(r.serial_cpu_s),
                    duration(r.parallel_cpu_s),
                    r.speedup
                );
            }
        }
        let phrase = prep.speedup_phrase();
        let _ = writeln!(
            s,
            "\n{}{}, parallel efficiency {:.0}%, load imbalance {:.2}, {}.",
            phrase[..1].to_uppercase(),
            &phrase[1..],
            100.0 * prep.parallel_efficiency,
            prep.load_imbalance,
            prep.identical_phrase()
        );
        if let Some(sw) = &prep.sweep {
            let _ = writeln!(s, "\n### Workers sweep\n");
            let _ = writeln!(
                s,
                "The parallel preparation once per count in every round, beside the same serial one. Karp–Flatt's serial fraction stays flat when a fixed serial part limits the speedup, and grows when the loss grows with the count.\n"
            );
            let _ =
                writeln!(s, "| processes | wall | speedup | interval | efficiency | Karp–Flatt |");
            let _ = writeln!(s, "|---:|---:|---:|---|---:|---:|");
            for p in &sw.points {
                let _ = writeln!(
                    s,
                    "| {} | {} | {:.2}x | {} | {:.0}% | {} |",
                    p.workers,
                    duration(p.wall_s),
                    p.speedup,
                    p.speedup_interval.map_or("–".to_string(), |i| i.cell(|x| format!("{x:.2}"))),
                    100.0 * p.efficiency,
                    p.karp_flatt.map_or("–".to_string(), |e| format!("{e:.3}"))
                );
            }
            let _ = match (sw.amdahl.serial_fraction, sw.amdahl.speedup_limit) {
                (Some(f), Some(limit)) => writeln!(
                    s,
                    "\nAmdahl's law fitted over the counts: serial fraction {f:.3}, so no count of processes passes {limit:.2}x."
                ),
                (Some(f), None) => writeln!(
                    s,
                    "\nAmdahl's law fitted over the counts: serial fraction {f:.3}, no limit in sight."
                ),
                _ => writeln!(s, "\nNo Amdahl fit: no count above 1."),
            };
        }
        for w in &prep.warnings {
            let _ = writeln!(s, "\nWarning: {w}.");
        }
    }
    if let Some(c) = r.counts().filter(|c| c.eligible_contexts.is_some()) {
        let n = |x: Option<u64>| x.map(|v| v.to_string()).unwrap_or_else(|| "–".into());
        let _ = writeln!(s, "\n## Recipe profile\n");
        let _ = writeln!(
            s,
            "{} training series, {} frames ({} valid, all fitted by the normalizer); {} eligible contexts of 240 frames in {} batches of 32 ({} in the last); {} series with invalid event steps.",
            c.train_series,
            c.frames,
            c.valid_frames,
            n(c.eligible_contexts),
            n(c.batches),
            n(c.final_batch),
            n(c.invalid_event_series)
        );
        if let Some(l) = r.stages.get("warm_loader_epoch") {
            let f = |k: &str| l.figures.get(k).copied().unwrap_or(f64::NAN);
            let _ = writeln!(
                s,
                "\nLoader epoch: first batch after {}, median wait {}, p95 wait {}, {:.0} contexts/s.",
                duration(f("first_wait_s")),
                duration(f("median_wait_s")),
                duration(f("p95_wait_s")),
                f("contexts_per_s")
            );
        }
        let fig =
            |stage: &str, k: &str| r.stages.get(stage).and_then(|st| st.figures.get(k)).copied();
        if let Some(step) = fig("resident_model_steps", "median_step_s") {
            let _ = writeln!(
                s,
                "\nModel, resident: median training step {} (min {}, max {}) over {} steps on one batch of {} contexts; loss {:.4} → {:.4}.",
                duration(step),
                duration(fig("resident_model_steps", "min_step_s").unwrap_or(f64::NAN)),
                duration(fig("resident_model_steps", "max_step_s").unwrap_or(f64::NAN)),
                fig("resident_model_steps", "steps").unwrap_or(f64::NAN),
                fig("resident_model_steps", "batch_contexts").unwrap_or(f64::NAN),
                fig("resident_model_steps", "first_loss").unwrap_or(f64::NAN),
                fig("resident_model_steps", "last_loss").unwrap_or(f64::NAN),
            );
        }
        if let Some(f) = fig("end_to_end_fit_epoch", "input_wait_fraction") {
            let _ = writeln!(
                s,
                "\nInput: the fit epoch {} (the TensorFlow profiler's grading: under 5% not, 5 to 20% moderately, 20% or more highly input-bound).",
                crate::modes::profile::input_phrase(f)
            );
        }
        if let Some(rate) = fig("end_to_end_fit_epoch", "contexts_per_s") {
            let _ = writeln!(
                s,
                "\nModel, end to end: one fit epoch through the loader at {rate:.0} contexts/s, median step {}, median loader wait {}; mean loss {:.4} in the first tenth of the epoch, {:.4} in the last.",
                duration(fig("end_to_end_fit_epoch", "median_step_s").unwrap_or(f64::NAN)),
                duration(fig("end_to_end_fit_epoch", "median_wait_s").unwrap_or(f64::NAN)),
                fig("end_to_end_fit_epoch", "loss_first_tenth").unwrap_or(f64::NAN),
                fig("end_to_end_fit_epoch", "loss_last_tenth").unwrap_or(f64::NAN),
            );
        }
        let _ = writeln!(
            s,
            "\n\"Cold\" is the feature cache, not the OS page cache. Peak RSS is each stage's own fresh process's lifetime peak."
        );
    }
    recipe_state(&mut s, r);
    if let modes::Section::Trials(modes::trials::Section { trials, outlier_rule, .. }) = &r.section
    {
        let _ = writeln!(s, "\n## Trials (wall time)\n");
        let _ = writeln!(
            s,
            "| stage | n | warm-up | median | interval of median | stdev | MAD | outliers | trials for 1% |"
        );
        let _ = writeln!(s, "|---|---:|---:|---:|---|---:|---:|---:|---:|");
        let mut keys: Vec<&String> = trials.keys().collect();
        keys.sort_by_key(|k| r.stages.get(*k).map(|st| st.order).unwrap_or(usize::MAX));
        for &k in &keys {
            let t = &trials[k];
            let [median, interval, stdev, mad, outliers, n1] = trial_cells(t, "–");
            let _ = writeln!(
                s,
                "| `{k}` | {} | {} | {median} | {interval} | {stdev} | {mad} | {outliers} | {n1} |",
                t.n, t.warmup,
            );
        }
        trial_spans(&mut s, trials, &keys);
        let shared = crate::rundir::report::shared_warnings(trials);
        let mut warnings: Vec<String> = keys
            .iter()
            .flat_map(|k| {
                let own = trials[*k].warnings.iter().filter(|w| !shared.contains(w));
                own.map(move |w| format!("- `{k}`: {w}"))
            })
            .collect();
        warnings.extend(shared.iter().map(|w| format!("- every stage: {w}")));
        if !warnings.is_empty() {
            let _ = writeln!(s, "\nWarnings:\n\n{}", warnings.join("\n"));
        }
        let _ =
            writeln!(s, "\nOutliers: {outlier_rule}. Warm-up trials are recorded, not counted.");
    }
    if !r.machine_warnings.is_empty() {
        let _ = writeln!(s, "\n## The machine\n");
        for w in &r.machine_warnings {
            let _ = writeln!(s, "- Warning: {w}.");
        }
        let _ = writeln!(
            s,
            "\nenvironment.json records the machine's state (`coordinator doctor` prints it)."
        );
    }
    let _ = writeln!(
        s,
        "\nOne report is one observation on one machine; repeat in fresh processes on an idle machine before claiming a difference."
    );
    s
}

/// A user's own preparation (`--prepare`): what it ran over, said without
/// naming an item or a path.
fn items_paragraph(
    s: &mut String,
    prep: &crate::modes::cold_prep::Section,
    i: &crate::modes::cold_prep::items::Summary,
) {
    let _ = write!(
        s,
        "A team's own preparation program over {} items (items file SHA-256 {}…), handed out {}; each process started the program once. ",
        i.count,
        &i.items_sha256[..12.min(i.items_sha256.len())],
        if i.weighted { "largest weight first" } else { "in file order" }
    );
    let startups: Vec<f64> = prep
        .serial
        .workers
        .iter()
        .chain(&prep.parallel.workers)
        .filter_map(|w| w.startup_s)
        .collect();
    if !startups.is_empty() {
        let _ = write!(
            s,
            "Start-up (spawn to ready) median {}, per process; per-item times run from handing an item over to its answer. ",
            crate::fmt::duration(crate::stats::median(&startups))
        );
    }
    if let Some(inputs) = &i.inputs {
        let _ = write!(
            s,
            "The inputs ({} files, {}) were unchanged after the last phase. ",
            inputs.files,
            crate::fmt::mib(inputs.bytes)
        );
    }
    let _ = writeln!(s, "\n");
}
