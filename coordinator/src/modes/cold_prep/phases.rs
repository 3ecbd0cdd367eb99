//! What a cold-prep run plans before anything runs: its phases, in rounds
//! and counts, over the recipe's series or a user's items, and the
//! declaration's parameters.

use super::storage::OsCache;
use super::{items, rounds};
use crate::error::RunError;
use crate::modes::preparation::{prepare_phase, verify_phase};
use crate::modes::{JobNumbers, Phase, Prepared};
use crate::plan::Settings;
use crate::supervisor::{Feed, Item};
use host::pagecache::Inputs;
use protocol::Stage;
use report::modes::params::{Grid, Point, env_name, round_order};
use report::modes::preparation::{ITEMS, Names, RECIPE, VERIFY_AFTER, VERIFY_BEFORE};
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
    /// `--param` over `--prepare`: every value's own comparison.
    pub(crate) scan: Option<Scan>,
}

/// A `--param` scan of a `--prepare` program: its grid and the seed of
/// its rounds' shuffled order.
#[derive(Clone, Debug)]
pub(crate) struct Scan {
    pub(crate) grid: Grid,
    pub(crate) seed: u64,
}

/// `--param` in cold-prep: a scan of the `--prepare` program, at the
/// run's one `--workers` count; checked before anything is created.
pub(crate) fn scan(
    shared: &crate::modes::SharedArgs,
    items: Option<&items::Items>,
) -> Result<Option<Scan>, crate::error::Refusal> {
    use crate::error::Refusal;
    if shared.params.params.is_empty() {
        return Ok(None);
    }
    let Some(items) = items else {
        return Err(Refusal(
            "--param in --mode cold-prep scans your own --prepare program; the recipe's preparation has no knob to scan".into(),
        ));
    };
    if shared.workers.len() > 1 {
        return Err(Refusal(
            "--param and a workers sweep are two scans at once: give --param one --workers count"
                .into(),
        ));
    }
    let grid = shared.params.grid(&[&items.command], "--prepare")?;
    Ok(grid.map(|(grid, seed)| Scan { grid, seed }))
}

impl Scan {
    /// Each point with its names, in grid order: the first keeps the
    /// plain names (the comparison `serial` and `parallel` describe).
    pub(crate) fn points(&self, plain: &Names) -> Vec<(Point, Names)> {
        let points = self.grid.points();
        points
            .into_iter()
            .enumerate()
            .map(|(i, point)| {
                let names =
                    if i == 0 { plain.clone() } else { plain.of_value(&Grid::label(&point)) };
                (point, names)
            })
            .collect()
    }
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
    let (dataset, frozen) = host::dataset::resolve(settings.data.as_deref(), settings.quiet)?;
    let dataset = dataset.as_path();
    let mut numbers = JobNumbers::default();
    let mut phases = vec![verify_phase(&mut numbers, VERIFY_BEFORE, dataset)];
    // What the preparation reads: the training series' files.
    let inputs = plan.inputs(frozen.train().map(|s| dataset.join(&s.file)).collect());
    phases.extend(round_phases(plan, settings.workers, |_, key, cache, count| {
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

/// Every round's phases in order, each made by `phase(value, key, output,
/// count)`: per round, each value's serial phase and parallel ones (the
/// recipe and an unscanned program have one value, the plain names; a
/// scan's values run in a new shuffled order each round).
fn round_phases(
    plan: &Plan,
    main: u32,
    mut phase: impl FnMut(usize, &str, &str, u32) -> Phase,
) -> Vec<Phase> {
    let values: Vec<Names> = match &plan.scan {
        Some(scan) => scan.points(&plan.names()).into_iter().map(|(_, n)| n).collect(),
        None => vec![plan.names()],
    };
    let mut phases = Vec::new();
    for round in 1..=plan.rounds {
        let order = match &plan.scan {
            Some(scan) => round_order(values.len(), scan.seed, round),
            None => vec![0],
        };
        let last_value = order.last().copied();
        for v in order {
            let n = &values[v];
            let (serial_key, _) = rounds::keys(n, round);
            let (serial_out, _) = rounds::caches(n, round);
            let serial = phase(v, &serial_key, &serial_out, 1);
            let parallel = plan
                .counts
                .iter()
                .map(|&count| {
                    let key = rounds::parallel_key(n, count, main, round);
                    phase(v, &key, &rounds::parallel_cache(n, count, main, round), count)
                })
                .collect();
            let last = round == plan.rounds && Some(v) == last_value;
            phases.extend(rounds::in_order(round, serial, parallel, last));
        }
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
    if let Some(scan) = &plan.scan {
        parameters.insert("scan".to_string(), scan.grid.declared(scan.seed));
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
    parameters.insert("items_sha256".into(), serde_json::json!(items.source.sha256()));
    parameters.insert("items".into(), serde_json::json!(items.source.count()));
    if let Some(t) = items.item_timeout {
        parameters.insert("item_timeout_s".into(), serde_json::json!(t.as_secs_f64()));
    }
    // Declared where it is not the default, so earlier runs' definitions
    // (made with the default) stay the same.
    if items.prefetch != items::PREFETCH {
        parameters.insert("prefetch".into(), serde_json::json!(items.prefetch));
    }
    let mut numbers = JobNumbers::default();
    let ready_timeout_ms = settings.connect_timeout.as_millis() as u64;
    // What the program reads, where --inputs says.
    let files = settings.inputs.iter().flat_map(|d| d.files.iter().cloned()).collect();
    let inputs = (!settings.inputs.is_empty()).then(|| plan.inputs(files));
    let commands: Vec<String> = match &plan.scan {
        Some(scan) => scan.grid.points().iter().map(|p| command_at(&items.command, p)).collect(),
        None => vec![items.command.clone()],
    };
    let phases = round_phases(plan, settings.workers, |v, key, out, count| {
        let command = &commands[v];
        let phase = item_phase(&mut numbers, key, out, count, items, command, ready_timeout_ms);
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

/// The `--prepare` command at a scan's point: every `{NAME}` replaced,
/// after an `export STAGEBENCH_PARAM_NAME=VALUE;` per name (`sh -c` runs
/// it; a value is only `A-Z a-z 0-9 . _ + -`, nothing to quote).
pub(crate) fn command_at(command: &str, point: &Point) -> String {
    let exports: String =
        point.iter().map(|(k, v)| format!("export {}={v}; ", env_name(k))).collect();
    format!("{exports}{}", Grid::substituted(command, point))
}

/// Every item handed to `workers` processes running the user's program
/// (`command`: --prepare's, or a scanned value's), writing into `out` (no
/// more processes than items).
fn item_phase(
    numbers: &mut JobNumbers,
    key: &str,
    out: &str,
    workers: u32,
    items: &items::Items,
    command: &str,
    ready_timeout_ms: u64,
) -> Phase {
    let count = items.source.count();
    let stage = Stage::PrepareItem {
        command: command.to_string(),
        id: String::new(),
        out: out.into(),
        ready_timeout_ms,
    };
    // `n` is the item's line in the items file (every line is an item).
    let first = numbers.jobs(key.into(), stage, count).item(Item { noun: "item", n: 0, of: 0 });
    Phase {
        key: key.into(),
        jobs: Vec::new(),
        feed: Some(Feed::new(first, items.source.clone()).holding_ahead(items.prefetch)),
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

#[cfg(test)]
mod tests {
    use super::*;
    use report::modes::params::Param;

    fn plan(rounds: u32, values: &str, seed: u64) -> Plan {
        let param: Param = values.parse().unwrap();
        // The phases are planned, not run: their items file is not read again.
        let (_dir, source) = host::items_file::written_for_test(b"a\n");
        let items = items::Items {
            command: "prep {ms}".into(),
            source,
            item_timeout: None,
            prefetch: items::PREFETCH,
        };
        let grid = Grid::checked(vec![param], &["prep {ms}"], "--prepare", false, false).unwrap();
        Plan {
            rounds,
            counts: vec![2],
            items: Some(items),
            os_cache: OsCache::AsIs,
            scan: grid.map(|grid| Scan { grid, seed }),
        }
    }

    /// Each round runs every value's serial and parallel phase, the values
    /// in the seed's shuffled order for that round; the first value keeps
    /// the plain names.
    #[test]
    fn every_round_runs_every_value_in_the_seeds_order() {
        let plan = plan(3, "ms=1,2,3", 11);
        let mut made = Vec::new();
        let phases = round_phases(&plan, 2, |v, key, out, count| {
            made.push((v, key.to_string(), out.to_string(), count));
            Phase { workers: count, ..Phase::in_turn(key.into(), Vec::new(), 1) }
        });
        assert_eq!(phases.len(), 3 * 3 * 2);
        for round in 1..=3u32 {
            let order = round_order(3, 11, round);
            let ran: Vec<usize> =
                made[(round as usize - 1) * 6..][..6].iter().step_by(2).map(|m| m.0).collect();
            assert_eq!(ran, order, "round {round}");
        }
        let keys: Vec<&str> = made.iter().map(|m| m.1.as_str()).collect();
        for key in [
            "cold_prepare",
            "cold_prepare_parallel#3",
            "cold_prepare[ms=2]",
            "cold_prepare_parallel[ms=3]#2",
        ] {
            assert!(keys.contains(&key), "{key} in {keys:?}");
        }
        let outs: Vec<&str> = made.iter().map(|m| m.2.as_str()).collect();
        assert!(outs.contains(&"private-output[ms=3]-parallel-round3"), "{outs:?}");
    }

    #[test]
    fn a_values_command_exports_its_variable_and_substitutes_it() {
        let point = vec![("ms".to_string(), "40".to_string()), ("b".into(), "x".into())];
        assert_eq!(
            command_at("prep {ms} --b {b}", &point),
            "export STAGEBENCH_PARAM_MS=40; export STAGEBENCH_PARAM_B=x; prep 40 --b x"
        );
    }
}
