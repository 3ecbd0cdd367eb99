//! Cold-prep's report section, assembled from its phases' outcomes: the
//! stage records, the sealed manifests compared, each round's sides, the
//! speedup with its interval, the sweep, storage and warnings.

use super::{Plan, Section, rounds, storage, sweep, warnings::warnings};
use crate::error::{RunError, fail};
use crate::modes::preparation::{find, outputs, side};
use crate::modes::{Context, PhaseOutcome, Records, stage_from_job};
use report::modes::preparation::{MANIFEST, VERIFY_AFTER, VERIFY_BEFORE};
use report::modes::scan;
use report::rundir::report::PrepSide;

pub(super) fn assemble(
    cx: &Context<'_>,
    plan: &Plan,
    outcomes: &[PhaseOutcome],
    records: &mut Records,
) -> Result<Section, RunError> {
    let dir = cx.dir;
    let n = plan.names();
    // Stage records are ordered as the phases ran.
    let order = |key: &str| outcomes.iter().position(|p| p.phase.key == key).unwrap_or(0);
    if plan.items.is_none() {
        for key in [VERIFY_BEFORE, VERIFY_AFTER] {
            let p = find(outcomes, key)?;
            let r = p.results().next().ok_or_else(|| {
                fail(Some(key.into()), None, "internal", format!("{key} reported nothing"))
            })?;
            records.stages.insert(key.into(), stage_from_job(r, order(key)));
        }
    }
    // Round 1's caches were sealed as their phases ended.
    let (serial_manifest, serial_art) = side::sealed(dir, find(outcomes, &n.serial)?)?;
    let (par_manifest, par_art) = side::sealed(dir, find(outcomes, &n.parallel)?)?;
    let identical = serial_manifest == par_manifest;
    if !identical {
        let workers = find(outcomes, &n.parallel)?.phase.workers;
        let (serial_out, parallel_out) = (&n.serial_out, &n.parallel_out);
        if n.items {
            let what = format!(
                "the 1-process and {workers}-process outputs differ ({serial_out} and {parallel_out})"
            );
            return Err(outputs::outputs_differ(
                &n.parallel,
                what,
                &serial_manifest,
                &par_manifest,
            ));
        }
        return Err(fail(
            Some(n.parallel.to_string()),
            None,
            "caches_differ",
            format!(
                "the 1-process and {workers}-process caches differ: {serial_out}/{MANIFEST} and {parallel_out}/{MANIFEST} are not byte-identical"
            ),
        ));
    }
    let main = plan.counts.iter().copied().max().unwrap_or(1);
    let mut sides = Vec::new();
    let mut all = Vec::new();
    let mut measured: Vec<sweep::Measured> = Vec::new();
    let mut scanned: Vec<scan::Measured> = Vec::new();
    for round in 1..=plan.rounds {
        let (serial_key, parallel_key) = rounds::keys(&n, round);
        let (serial_stage, serial, counts) =
            side::summarise(find(outcomes, &serial_key)?, order(&serial_key))?;
        records.stages.insert(serial_key, serial_stage);
        let mut main_side = None;
        for (i, &count) in plan.counts.iter().enumerate() {
            let key = rounds::parallel_key(&n, count, main, round);
            let p = find(outcomes, &key)?;
            let (stage, side, _) = side::summarise(p, order(&key))?;
            if measured.len() <= i {
                measured.push(sweep::Measured { workers: p.phase.workers, walls: Vec::new() });
                scanned.push(scan::Measured {
                    stage: key.clone(),
                    parameters: [("workers".to_string(), count.to_string())].into(),
                    walls: Vec::new(),
                    cpus: Vec::new(),
                    tree_peaks: Vec::new(),
                    tree_peak_method: format!("sum of each worker's {}", stage.tree_peak_method),
                    spans: Default::default(),
                    input_wait: Vec::new(),
                });
            }
            measured[i].walls.push((serial.wall_s, side.wall_s));
            scanned[i].walls.push(side.wall_s);
            scanned[i].cpus.push(stage.cpu_s);
            scanned[i].tree_peaks.push(stage.sum_of_peaks_bytes as f64);
            records.stages.insert(key, stage);
            if count == main {
                main_side = Some(side);
            }
        }
        let parallel = main_side.ok_or_else(|| {
            fail(
                Some(parallel_key.clone()),
                None,
                "internal",
                format!("{parallel_key} did not run"),
            )
        })?;
        all.push(report::modes::cold_prep::rounds::Round {
            round,
            first: report::modes::cold_prep::rounds::First::of(round),
            serial_wall_s: serial.wall_s,
            parallel_wall_s: parallel.wall_s,
            serial_cpu_s: serial.cpu_s,
            parallel_cpu_s: parallel.cpu_s,
            speedup: serial.wall_s / parallel.wall_s,
        });
        if round == 1 {
            sides.push((serial, parallel, counts));
        }
    }
    let (mut serial, mut parallel, counts) = sides.pop().ok_or_else(|| {
        fail(Some(n.serial.to_string()), None, "internal", "no round of cold-prep ran".to_string())
    })?;
    placed(&mut serial, find(outcomes, &n.serial)?, cx.started);
    placed(&mut parallel, find(outcomes, &n.parallel)?, cx.started);
    records.artifacts.push(serial_art);
    records.artifacts.push(par_art);
    let (speedup, speedup_interval, all) = if all.len() > 1 {
        let s = report::stats::summarize(&all.iter().map(|r| r.speedup).collect::<Vec<_>>(), 0);
        (s.median, Some(s.median_interval), all)
    } else {
        (serial.wall_s / parallel.wall_s, None, Vec::new())
    };
    let workers = find(outcomes, &n.parallel)?.phase.workers.max(1) as f64;
    let unit = if n.items { "item" } else { "series" };
    let mut warnings = warnings(&serial, &parallel, &all, unit);
    if (workers as u32) < main {
        // No more processes start than there are items or series.
        warnings.push(format!(
            "the parallel phase had {workers} process(es), not the {main} asked for: there was no more work to hand out; its speedup and efficiency ({:.0}%) are over {workers}{}",
            100.0 * speedup / workers,
            if workers == 1.0 { ", so the speedup compares two 1-process runs (a control: about 1)" } else { "" }
        ));
    }
    let inputs_bytes = outcomes.iter().find_map(|p| p.phase.inputs.as_ref()).map(|i| i.bytes());
    let storage = storage::storage(plan.os_cache, inputs_bytes, outcomes, &records.stages);
    warnings.extend(storage.iter().flat_map(|s| s.warnings()));
    let sweep = (measured.len() > 1).then(|| sweep::Sweep {
        scan: Some(scan::scan(vec!["workers".into()], None, &scanned, "--rounds")),
        ..sweep::sweep(&measured, cx.cores)
    });
    let scan = match super::scan::assess(dir, plan, outcomes, records, order)? {
        Some((scan, differ)) => {
            warnings.extend(differ);
            Some(scan)
        }
        None => None,
    };
    let items = plan.items.as_ref().map(|i| report::modes::cold_prep::items::Summary {
        count: i.source.count() as u64,
        items_sha256: i.source.sha256().into(),
        weighted: i.source.weighted(),
        order: Some(if i.source.largest_first() { "largest_first" } else { "file" }.into()),
        sorted_max: i.source.weighted().then_some(host::items_file::MAX_SORTED as u64),
        inputs: report::inputs::combined(cx.inputs),
    });
    warnings.extend(items.as_ref().and_then(|i| i.fell_back()));
    let load_imbalance = parallel.busy().imbalance();
    Ok(Section {
        counts: items.is_none().then_some(counts),
        items,
        serial,
        parallel,
        speedup,
        speedup_ci95: speedup_interval.and_then(|i| i.ci95()),
        speedup_interval,
        rounds: all,
        sweep,
        scan,
        parallel_efficiency: speedup / workers,
        load_imbalance,
        caches_identical: (!n.items).then_some(identical),
        outputs_identical: n.items.then_some(identical),
        storage,
        warnings,
    })
}

/// A side's phase and its start on the run's clock (`t0`): its timeline
/// is read back from jobs.jsonl.gz once the file is whole, as `verify`
/// reads it ([`report::modes::Report::read_jobs`]), so the plot drawn now
/// is the plot `verify` draws, and no item's times are held till then.
fn placed(side: &mut PrepSide, p: &PhaseOutcome, t0: std::time::Instant) {
    let started_s = p.dispatch.started.saturating_duration_since(t0).as_secs_f64();
    side.phase = Some(p.phase.key.clone());
    side.started_s = Some(started_s);
}
