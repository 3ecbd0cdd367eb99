//! A `--param` scan of a `--prepare` program, assembled: every value ran
//! its own serial-against-parallel comparison in every round, so each
//! value's outputs must be identical between its serial and parallel
//! phases (a difference fails the run, as for the plain comparison), and
//! its parallel phase's walls over the rounds are the scan's samples. The
//! first value's phases are the plain ones, which the rest of the section
//! describes; the others' stage records and sealed manifests join the
//! report here.

use super::{Plan, rounds};
use crate::error::RunError;
use crate::modes::preparation::{find, outputs, side};
use crate::modes::{PhaseOutcome, Records};
use report::modes::scan;
use std::path::Path;

/// The scan's section and its warnings (a value whose outputs differ from
/// the first value's prepares other work: its time is not the same job's).
/// `order` gives a phase's place in the run.
pub(super) fn assess(
    dir: &Path,
    plan: &Plan,
    outcomes: &[PhaseOutcome],
    records: &mut Records,
    order: impl Fn(&str) -> usize,
) -> Result<Option<(scan::Scan, Vec<String>)>, RunError> {
    let Some(s) = &plan.scan else {
        return Ok(None);
    };
    let points = s.points(&plan.names());
    let mut warnings = Vec::new();
    let mut first_serial: Option<Vec<u8>> = None;
    let mut measured = Vec::new();
    for (i, (point, n)) in points.iter().enumerate() {
        let label = report::modes::params::Grid::label(point);
        let (serial, serial_art) = side::sealed(dir, find(outcomes, &n.serial)?)?;
        let (parallel, parallel_art) = side::sealed(dir, find(outcomes, &n.parallel)?)?;
        // The first value's pair is the plain comparison's: checked and
        // recorded with it.
        if i > 0 {
            if serial != parallel {
                let workers = find(outcomes, &n.parallel)?.phase.workers;
                let what = format!(
                    "at {label}, the 1-process and {workers}-process outputs differ ({} and {})",
                    n.serial_out, n.parallel_out
                );
                return Err(outputs::outputs_differ(&n.parallel, what, &serial, &parallel));
            }
            records.artifacts.push(serial_art);
            records.artifacts.push(parallel_art);
        }
        match &first_serial {
            None => first_serial = Some(serial),
            Some(first) if *first != serial => {
                let d = outputs::differences(first, &serial);
                warnings.push(format!(
                    "{label}'s outputs differ from {}'s ({} file(s) differ, {} missing, {} extra): the values prepare different outputs, so their times are not of the same work",
                    report::modes::params::Grid::label(&points[0].0),
                    d.differ,
                    d.missing,
                    d.extra
                ));
            }
            Some(_) => {}
        }
        let mut m = scan::Measured {
            stage: n.parallel.to_string(),
            parameters: point.iter().cloned().collect(),
            walls: Vec::new(),
            cpus: Vec::new(),
            tree_peaks: Vec::new(),
            tree_peak_method: String::new(),
            spans: Default::default(),
            input_wait: Vec::new(),
        };
        for round in 1..=plan.rounds {
            let (serial_key, parallel_key) = rounds::keys(n, round);
            let (stage, side, _) =
                side::summarise(find(outcomes, &parallel_key)?, order(&parallel_key))?;
            m.walls.push(side.wall_s);
            m.cpus.push(stage.cpu_s);
            m.tree_peaks.push(stage.sum_of_peaks_bytes as f64);
            m.tree_peak_method = format!("sum of each worker's {}", stage.tree_peak_method);
            for (k, x) in &side.components_s {
                if let Some(name) = k.strip_prefix("span:").and_then(|k| k.strip_suffix("_s")) {
                    m.spans.entry(name.to_string()).or_default().push(*x);
                }
            }
            if i > 0 {
                let (serial_stage, _, _) =
                    side::summarise(find(outcomes, &serial_key)?, order(&serial_key))?;
                records.stages.insert(serial_key, serial_stage);
                records.stages.insert(parallel_key, stage);
            }
        }
        measured.push(m);
    }
    let scan = scan::scan(s.grid.names(), Some(s.seed), &measured, "--rounds");
    Ok(Some((scan, warnings)))
}
