//! What a cold-prep run plans before anything runs: its phases, in rounds
//! and counts, over the recipe's series or a user's items, and the
//! declaration's parameters.

use super::storage::OsCache;
use super::{items, rounds};
use crate::error::RunError;
use crate::modes::preparation::{
    ITEMS, Names, RECIPE, VERIFY_AFTER, VERIFY_BEFORE, prepare_phase, verify_phase,
};
use crate::modes::{JobNumbers, Phase, Prepared};
use crate::pagecache::Inputs;
use crate::plan::Settings;
use protocol::Stage;
use std::collections::BTreeMap;
use std::sync::Arc;

/// `--mode cold-prep`'s own settings.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    /// Serial-against-parallel comparisons, in alternating order.
    pub(crate) rounds: u32,
    /// The parallel preparation's process counts, increasing: one, or a
    /// workers sweep. The largest is the run's `--workers`.
    pub(crate) counts: Vec<u32>,
    /// `--prepare`: a user's program and items instead of the recipe.
    pub(crate) items: Option<items::Items>,
    /// `--os-cache`: whether each preparation phase's inputs are dropped
    /// from the page cache before it starts.
    pub(crate) os_cache: OsCache,
}

impl Plan {
    pub(super) fn names(&self) -> Names {
        if self.items.is_some() { ITEMS } else { RECIPE }
    }

    /// A preparation phase's declared inputs.
    fn inputs(&self, files: Vec<std::path::PathBuf>) -> Arc<Inputs> {
        Arc::new(Inputs { files, evict: self.os_cache == OsCache::Cold })
    }
}

pub(crate) fn prepare(settings: &Settings, plan: &Plan) -> Result<Prepared, RunError> {
    if let Some(items) = &plan.items {
        return prepare_items(settings, plan, items);
    }
    let (dataset, frozen) = crate::dataset::resolve(settings.data.as_deref(), settings.quiet)?;
    let dataset = dataset.as_path();
    let mut numbers = JobNumbers::default();
    let mut phases = vec![verify_phase(&mut numbers, VERIFY_BEFORE, dataset)];
    // What the preparation reads: the training series' files.
    let inputs = plan.inputs(frozen.train().map(|s| dataset.join(&s.file)).collect());
    phases.extend(round_phases(plan, settings.workers, |key, cache, count| {
        let phase = prepare_phase(&mut numbers, key, cache, count, dataset, &frozen);
        Phase { inputs: Some(inputs.clone()), ..phase }
    }));
    phases.push(verify_phase(&mut numbers, VERIFY_AFTER, dataset));
    Ok(Prepared {
        // A cache preparation is one entry, however many series it has.
        stages: crate::modes::declared(&phases, false),
        phases,
        dataset_fingerprint: Some(frozen.fingerprint),
        parameters: parameters(plan),
        locks: Vec::new(),
    })
}

/// Every round's phases in order, each made by `phase(key, output, count)`.
fn round_phases(
    plan: &Plan,
    main: u32,
    mut phase: impl FnMut(&str, &str, u32) -> Phase,
) -> Vec<Phase> {
    let n = plan.names();
    let mut phases = Vec::new();
    for round in 1..=plan.rounds {
        let (serial_key, _) = rounds::keys(&n, round);
        let (serial_out, _) = rounds::caches(&n, round);
        let serial = phase(&serial_key, &serial_out, 1);
        let parallel = plan
            .counts
            .iter()
            .map(|&count| {
                let key = rounds::parallel_key(&n, count, main, round);
                phase(&key, &rounds::parallel_cache(&n, count, main, round), count)
            })
            .collect();
        phases.extend(rounds::in_order(round, serial, parallel, round == plan.rounds));
    }
    phases
}

fn parameters(plan: &Plan) -> BTreeMap<String, serde_json::Value> {
    let mut parameters = BTreeMap::new();
    parameters.insert("rounds".to_string(), serde_json::json!(plan.rounds));
    parameters.insert("os_cache".to_string(), serde_json::json!(plan.os_cache.as_str()));
    if plan.counts.len() > 1 {
        parameters.insert("workers_sweep".to_string(), serde_json::json!(plan.counts));
    }
    parameters
}

/// `--prepare`: the items file's digest is declared before anything runs
/// (the inputs' is every mode's: `Settings::parameters`); no dataset is read.
fn prepare_items(
    settings: &Settings,
    plan: &Plan,
    items: &items::Items,
) -> Result<Prepared, RunError> {
    let mut parameters = parameters(plan);
    parameters.insert("items_sha256".into(), serde_json::json!(items.sha256));
    parameters.insert("items".into(), serde_json::json!(items.list.len()));
    if let Some(t) = items.item_timeout {
        parameters.insert("item_timeout_s".into(), serde_json::json!(t.as_secs_f64()));
    }
    let mut numbers = JobNumbers::default();
    let ready_timeout_ms = settings.connect_timeout.as_millis() as u64;
    // What the program reads, where --inputs says.
    let files = settings.inputs.iter().flat_map(|d| d.files.iter().cloned()).collect();
    let inputs = (!settings.inputs.is_empty()).then(|| plan.inputs(files));
    let phases = round_phases(plan, settings.workers, |key, out, count| {
        let phase = item_phase(&mut numbers, key, out, count, items, ready_timeout_ms);
        Phase { inputs: inputs.clone(), ..phase }
    });
    Ok(Prepared {
        stages: crate::modes::declared(&phases, false),
        phases,
        dataset_fingerprint: None,
        parameters,
        locks: Vec::new(),
    })
}

/// Every item handed to `workers` processes running the user's program,
/// writing into `out` (no more processes than items).
fn item_phase(
    numbers: &mut JobNumbers,
    key: &str,
    out: &str,
    workers: u32,
    items: &items::Items,
    ready_timeout_ms: u64,
) -> Phase {
    let count = items.list.len();
    Phase {
        key: key.into(),
        jobs: items::dispatch_order(&items.list)
            .into_iter()
            .map(|(line, item)| {
                let stage = Stage::PrepareItem {
                    command: items.command.clone(),
                    id: item.id.clone(),
                    out: out.into(),
                    ready_timeout_ms,
                };
                numbers.job(key.into(), stage).item(format!("item {} of {count}", line + 1))
            })
            .collect(),
        workers: workers.min(count.max(1) as u32),
        jobs_per_process: usize::MAX,
        cache: Some(out.into()),
        progress: crate::events::Style::Counter { unit: "items" },
        after: None,
        after_job: None,
        inputs: None,
        item_timeout: items.item_timeout,
    }
}
