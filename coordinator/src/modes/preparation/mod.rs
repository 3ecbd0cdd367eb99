//! The preparation phases the modes share, on a floor below them: the
//! recipe's feature-cache preparation (every training series into a cache,
//! by one or N worker processes, sealed by a manifest the coordinator
//! writes as the phase ends) or a user's items into an output directory
//! ([`outputs`]), the dataset's verification, and a phase summed up
//! ([`side`]). Cold-prep compares two of them; profile, recipe and trials
//! prepare or verify what their later stages read.

pub(crate) mod outputs;
pub(crate) mod side;

pub(crate) use side::side;

use report::modes::preparation::*;

use super::{JobNumbers, Phase, PhaseOutcome};
use crate::error::{RunError, fail};
use crate::supervisor::Item;
use protocol::Stage;
use recipe::frozen::Frozen;
use std::path::Path;

/// The names of the preparation a phase runs: a scanned value's when its
/// key carries one (`cold_prepare[chunk=64]#2`).
pub(crate) fn names_of(phase: &Phase) -> Names {
    let kind = match phase.first_job().map(|j| &j.stage) {
        Some(Stage::PrepareItem { .. }) => ITEMS,
        _ => RECIPE,
    };
    match Names::value_of(&phase.key) {
        Some(label) => kind.of_value(label),
        None => kind,
    }
}

pub(crate) fn find<'a>(
    outcomes: &'a [PhaseOutcome],
    key: &str,
) -> Result<&'a PhaseOutcome, RunError> {
    outcomes
        .iter()
        .find(|p| p.phase.key == key)
        .ok_or_else(|| fail(None, None, "internal", format!("phase {key} did not run")))
}

/// One worker re-hashing every source file against frozen.json.
pub(crate) fn verify_phase(numbers: &mut JobNumbers, key: &str, dataset: &Path) -> Phase {
    let data = dataset.to_string_lossy().into_owned().into();
    Phase::in_turn(
        key.into(),
        vec![numbers.job(key.into(), Stage::VerifySources { dataset: data })],
        1,
    )
}

/// Every training series prepared into `cache` by `workers` processes (no
/// more processes than series: one without a series would only start and
/// stop), the largest series first, so the last to start is a short one.
pub(crate) fn prepare_phase(
    numbers: &mut JobNumbers,
    key: &str,
    cache: &str,
    workers: u32,
    dataset: &Path,
    frozen: &Frozen,
) -> Phase {
    let data = protocol::LocalPath::from(dataset.to_string_lossy().into_owned());
    // Numbered in the cohort's order: a failure names a series by its
    // number, never its id.
    let mut train: Vec<_> = frozen.train().enumerate().collect();
    let count = train.len();
    train.sort_by(|(_, a), (_, b)| b.samples.cmp(&a.samples).then(a.id.cmp(&b.id)));
    Phase {
        key: key.into(),
        jobs: train
            .iter()
            .map(|(n, s)| {
                let stage = Stage::PrepareSeries {
                    dataset: data.clone(),
                    id: s.id.clone(),
                    file: s.file.clone(),
                    sha256: s.sha256.clone(),
                    cache: cache.into(),
                };
                numbers.job(key.into(), stage).item(Item {
                    noun: "training series",
                    n: *n as u64 + 1,
                    of: count as u64,
                })
            })
            .collect(),
        feed: None,
        workers: workers.min(count.max(1) as u32),
        jobs_per_process: usize::MAX,
        cache: Some(cache.into()),
        progress: crate::events::Style::Counter { unit: "series" },
        after: None,
        after_job: None,
        inputs: None,
        item_timeout: None,
    }
}
