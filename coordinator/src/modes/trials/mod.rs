//! `--mode trials`: every trial of every stage in a brand-new worker
//! process, interleaved (A B C A B C …) so drift in machine speed spreads
//! over all stages; warm-up trials are recorded but not counted; each figure
//! gets statistics and the warnings a careful engineer wants.

mod scan;

use report::modes::trials::{NAME, Section};

use super::stages::{self, Other};
use super::{Context, JobNumbers, Phase, PhaseOutcome, Planned, Prepared, Records, stage_from_job};
use super::{Shared, SharedArgs};
use crate::error::{Refusal, RunError, fail};
use crate::plan::{PlannedStage, Settings};
use crate::supervisor::JobResult;
use recipe::frozen::Frozen;
use report::rundir::declaration::{DeclaredStage, definition_sha256};
use report::rundir::report::{Counts, IO_COUNTERS, Leaked, StageIo, TOP_LEVEL_FIGURES, TrialSet};
use report::stats::{self, Summary};
use std::collections::BTreeMap;
use std::path::Path;

/// Counted trials of every stage when `--trials` is not given.
const DEFAULT_TRIALS: u32 = 10;

/// The mode, as the registry lists it.
pub(crate) struct Trials;
pub(crate) const MODE: Trials = Trials;

// The flags only trials read. (A doc comment here would be the
// whole command's about: clap takes a flattened group's.)
#[derive(clap::Args, Debug)]
#[group(skip)]
#[command(next_help_heading = "Trials mode")]
pub(crate) struct Args {
    /// Counted trials of every stage, each in a fresh process (2 to
    /// 100000). [default: 10]
    #[arg(long, value_parser = clap::value_parser!(u32).range(2..=100_000))]
    trials: Option<u32>,
    /// Warm-up trials of every stage, recorded but not counted. [default: 1]
    #[arg(long)]
    warmup: Option<u32>,
}

impl super::Mode for Trials {
    mode_basics!(NAME);
    fn about(&self) -> &'static str {
        "Repeated trials of each stage, every trial in a fresh worker process, interleaved across stages, with statistics"
    }
    fn uses(&self) -> &'static [Shared] {
        &[
            Shared::Stages,
            Shared::Seed,
            Shared::Data,
            Shared::RecipeStage,
            Shared::Spans,
            Shared::Inputs,
            Shared::Params,
        ]
    }
    fn args(&self, cmd: clap::Command) -> clap::Command {
        <Args as clap::Args>::augment_args(cmd)
    }
    fn repeats(&self) -> Option<(&'static str, u32)> {
        Some(("trials", DEFAULT_TRIALS))
    }
    fn resolve(
        &self,
        own: &clap::ArgMatches,
        shared: &SharedArgs,
    ) -> Result<Box<dyn Planned>, Refusal> {
        let own: Args = super::own_args(own)?;
        let seed = shared.seed.unwrap_or(0);
        let stages = stages::planned(shared, seed, |other| match other {
            Other::Recipe(_, stage) => Ok(stage),
            Other::Unknown(s, e) => Err(Refusal(format!(
                "--stage {s}: {e}; or a recipe stage: {}",
                stages::recipe_names()
            ))),
        })?;
        let lines: Vec<&str> = shared.commands.iter().map(String::as_str).collect();
        let (stages, scan) = match shared.params.grid(&lines, "--command")? {
            Some((grid, seed)) => {
                let name = shared.names.first().map(String::as_str);
                let (stages, scan) = scan::Scan::of(stages, name, grid, seed)?;
                (stages, Some(scan))
            }
            None => (stages, None),
        };
        if !stages.iter().any(|s| stages::recipe_name(&s.stage)) {
            for (flag, given) in
                [("--data", shared.data.is_some()), ("--seed", shared.seed.is_some())]
            {
                if given {
                    return Err(Refusal(format!(
                        "{flag} applies to the recipe's stages in --mode {NAME}, and none of these stages is one"
                    )));
                }
            }
        }
        Ok(Box::new(Plan {
            stages,
            trials: own.trials.unwrap_or(DEFAULT_TRIALS),
            warmup: own.warmup.unwrap_or(1),
            seed,
            scan,
        }))
    }
}

/// What a trials run needs of its own.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    /// The stages to repeat, in order (diagnostic, commands, recipe stages).
    pub(crate) stages: Vec<PlannedStage>,
    /// Counted trials per stage.
    pub(crate) trials: u32,
    /// Warm-up trials per stage, recorded but not counted.
    pub(crate) warmup: u32,
    /// The loader's shuffle seed, for recipe stages.
    pub(crate) seed: u64,
    /// A `--param` scan: the stages are its points.
    pub(crate) scan: Option<scan::Scan>,
}

impl Planned for Plan {
    plan_basics!(NAME);

    fn warns_of_load_per_stage(&self) -> bool {
        true
    }

    fn takes_spans(&self) -> bool {
        stages::any_command(&self.stages)
    }

    /// Recipe stages read a dataset: it is resolved here, filled into them,
    /// and their prerequisites are prepared once before the trials.
    fn prepare(&self, settings: &Settings) -> Result<Prepared, RunError> {
        let filled;
        let (plan, data) = if self.stages.iter().any(|s| stages::recipe_name(&s.stage)) {
            let (dir, frozen) = host::dataset::resolve(settings.data.as_deref(), settings.quiet)?;
            let mut with_data = self.clone();
            for s in &mut with_data.stages {
                stages::with_dataset(&mut s.stage, &dir);
            }
            filled = with_data;
            (&filled, Some((dir, frozen)))
        } else {
            (self, None)
        };
        let phases = plan.phases(settings, data.as_ref().map(|(d, f)| (d.as_path(), f)));
        let mut parameters = BTreeMap::new();
        parameters.insert("trials".into(), self.trials.into());
        parameters.insert("warmup".into(), self.warmup.into());
        parameters.insert("bootstrap_resamples".into(), stats::BOOTSTRAP_RESAMPLES.into());
        if let Some(scan) = &self.scan {
            parameters.insert("scan".into(), scan.declared());
        }
        Ok(Prepared {
            stages: declared(plan, &phases),
            phases,
            dataset_fingerprint: data.map(|(_, f)| f.fingerprint),
            parameters,
            locks: Vec::new(),
        })
    }

    fn assemble(
        &self,
        cx: &Context<'_>,
        outcomes: &[PhaseOutcome],
        records: &mut Records,
    ) -> Result<super::Section, RunError> {
        let load_end = host::machine::load_average();
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) as f64;
        let mut results: Vec<&JobResult> = outcomes.iter().flat_map(|p| p.results()).collect();
        results.sort_by_key(|r| r.job.order);
        let mut sets = BTreeMap::new();
        for (order, planned) in self.stages.iter().enumerate() {
            let key = &planned.key;
            let trials: Vec<&JobResult> =
                results.iter().copied().filter(|r| &r.job.key == key).collect();
            let (warm, counted) = trials.split_at((self.warmup as usize).min(trials.len()));
            let Some(last) = counted.last() else {
                let msg = format!("no counted trial of {key}");
                return Err(fail(Some(key.clone()), None, "internal", msg));
            };
            let samples = figures_of(counted);
            let summary: BTreeMap<String, Summary> = samples
                .iter()
                .enumerate()
                .map(|(i, (name, xs))| {
                    (name.clone(), stats::summarize(xs, (order * 64 + i) as u64))
                })
                .collect();
            let wall = &summary["wall_s"];
            let warnings = report::modes::trials::warnings::warnings(
                wall,
                &samples["wall_s"],
                [cx.load_at_start, load_end],
                cores,
            );
            // The stage record carries medians; every trial is under `trials`.
            let mut record = stage_from_job(last, order);
            record.wall_s = wall.median;
            record.cpu_s = summary["cpu_s"].median;
            record.user_s = summary["user_s"].median;
            record.sys_s = summary["sys_s"].median;
            record.peak_rss_bytes = summary["peak_rss_bytes"].median as u64;
            record.tree_peak_bytes = summary["tree_peak_bytes"].median as u64;
            record.sum_of_peaks_bytes = summary["sum_of_peaks_bytes"].median as u64;
            record.io = record.io.take().map(|io| {
                let median = |name: &str| summary.get(name).map_or(0, |s| s.median as u64);
                StageIo::from_counters(io.io_method, IO_COUNTERS.map(median))
            });
            // What every trial, warm-ups too, left behind.
            record.leaked_processes = Leaked::from_names(
                trials.iter().flat_map(|r| r.measurement.tree.leaked.iter().cloned()).collect(),
            );
            // A target any trial missed.
            let mut missed: Vec<String> =
                trials.iter().flat_map(|r| r.measurement.spans_not_found.clone()).collect();
            missed.sort();
            missed.dedup();
            record.spans_not_found = missed;
            // The counted trials' spans pooled, against their walls.
            let pooled = report::rundir::spans::records(
                counted
                    .iter()
                    .map(|r| (r.measurement.wall_ns as f64 / 1e9, &r.measurement.spans[..])),
            );
            record.spans = pooled.as_ref().map(|s| s.0.clone()).unwrap_or_default();
            record.span_totals = pooled.map(|s| s.1);
            let mut notes: Vec<String> =
                counted.iter().flat_map(|r| r.measurement.span_warnings.clone()).collect();
            notes.sort();
            notes.dedup();
            record.span_warnings = notes;
            super::records::sampled(cx, &mut record, counted, order as u64)?;
            record.command_stages = report::stats::median_stages(
                &counted.iter().map(|r| &r.measurement.command_stages[..]).collect::<Vec<_>>(),
            );
            record.worker = None;
            record.processes = trials.len() as u32;
            record.figures = summary
                .iter()
                .filter(|(k, _)| {
                    !TOP_LEVEL_FIGURES.contains(&k.as_str()) && !IO_COUNTERS.contains(&k.as_str())
                })
                .map(|(k, s)| (k.clone(), s.median))
                .collect();
            records.stages.insert(key.clone(), record);
            sets.insert(
                key.clone(),
                TrialSet {
                    warmup: warm.len() as u32,
                    n: counted.len() as u32,
                    samples,
                    warmup_samples: figures_of(warm),
                    trials_for_1pct: stats::trials_to_resolve(wall, 0.01),
                    summary,
                    warnings,
                },
            );
        }
        let counts = bind_prerequisites(cx.dir, outcomes, self.stages.len(), records)?;
        // What the trials wrote beyond the prerequisites' (the loader's
        // order digest, a fit's weights digest): each path as the last
        // trial to write it left it, so the run verifies.
        let mut written: BTreeMap<&str, (&JobResult, &[u8; 32])> = BTreeMap::new();
        for r in results.iter().filter(|r| !r.job.key.starts_with("prerequisite:")) {
            for (path, sha) in &r.artifacts {
                written.insert(path, (r, sha));
            }
        }
        for (path, (r, sha)) in written {
            if !records.artifacts.iter().any(|a| a.path == path) {
                records.artifacts.push(super::checked_artifact(cx.dir, r, path, sha, "file")?);
            }
        }
        let scan = self.scan.as_ref().map(|scan| scan.assess(&sets, records));
        Ok(super::Section::from(Section {
            counts,
            trials: sets,
            outlier_rule: stats::OUTLIER_RULE.into(),
            scan,
        }))
    }
}

/// Key of a prerequisite phase in the declaration.
pub(crate) fn prerequisite(key: &str) -> String {
    format!("prerequisite:{key}")
}

fn prerequisites(
    plan: &Plan,
    workers: u32,
    numbers: &mut JobNumbers,
    dir: &Path,
    frozen: &Frozen,
) -> Vec<Phase> {
    use super::{preparation, stages as profile};
    let mut prepare = preparation::prepare_phase(
        numbers,
        &prerequisite(profile::PREPARE),
        report::modes::preparation::SERIAL_CACHE,
        workers,
        dir,
        frozen,
    );
    prepare.after = Some(|dir, p, _| preparation::side(dir, p, 0).map(|_| ()));
    // Prerequisites are not what a trials run reports on: silent unless on a terminal.
    prepare.progress = crate::events::Style::Prerequisite;
    let mut out = vec![prepare];
    if plan.stages.iter().any(|s| profile::reads_loader(&s.stage)) {
        for name in [profile::FIT, profile::COUNT] {
            let stage = profile::recipe_stage_over(name, dir, plan.seed);
            let key = prerequisite(name);
            out.push(Phase {
                jobs: vec![numbers.job(key.clone(), stage)],
                feed: None,
                key,
                workers: 1,
                jobs_per_process: 1,
                cache: None,
                progress: crate::events::Style::Prerequisite,
                after: Some(super::hand_on_artifacts),
                after_job: None,
                inputs: None,
                item_timeout: None,
            });
        }
    }
    out
}

fn declared(plan: &Plan, phases: &[Phase]) -> Vec<DeclaredStage> {
    let before = &phases[..phases.len().saturating_sub(1)];
    let mut out = super::declared(before, false);
    out.extend(plan.stages.iter().map(|s| DeclaredStage {
        key: s.key.clone(),
        stage: s.stage.to_string(),
        jobs: (plan.warmup + plan.trials) as usize,
        workers: 1,
        definition_sha256: definition_sha256(&s.stage.definition()),
    }));
    out
}

/// The prerequisites, measured once and not counted as trials: their stage
/// records (ordered after the trial stages), their artifacts (cache
/// manifest, normalizer, context index), each re-hashed, and the cache's counts.
fn bind_prerequisites(
    dir: &Path,
    outcomes: &[PhaseOutcome],
    first_order: usize,
    records: &mut Records,
) -> Result<Option<Counts>, RunError> {
    use super::{preparation, stages as profile};
    let before = outcomes.iter().filter(|p| p.phase.key.starts_with("prerequisite:"));
    let mut prepared = None;
    for (i, p) in before.enumerate() {
        let order = first_order + i;
        if p.phase.key == prerequisite(profile::PREPARE) {
            let prep = preparation::side(dir, p, order)?;
            records.stages.insert(p.phase.key.clone(), prep.stage);
            records.artifacts.push(prep.artifact);
            prepared = Some(prep.counts);
            continue;
        }
        for r in p.results() {
            records.stages.insert(p.phase.key.clone(), stage_from_job(r, order));
            for (path, sha) in &r.artifacts {
                records.artifacts.push(super::checked_artifact(dir, r, path, sha, "file")?);
            }
        }
    }
    Ok(prepared)
}

/// Per figure, the trials' values in trial order. Peak RSS is each trial's
/// own process's (VmHWM), never a running maximum.
fn figures_of(trials: &[&JobResult]) -> BTreeMap<String, Vec<f64>> {
    let mut m: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for r in trials {
        let me = &r.measurement;
        let ns = |n: u64| n as f64 / 1e9;
        let top = [
            ns(me.wall_ns),
            ns(me.user_ns + me.sys_ns),
            ns(me.user_ns),
            ns(me.sys_ns),
            me.peak_rss_bytes as f64,
            me.tree.peak_bytes as f64,
            me.tree.sum_of_peaks_bytes as f64,
        ];
        for (name, value) in TOP_LEVEL_FIGURES.iter().zip(top) {
            m.entry((*name).into()).or_default().push(value);
        }
        if let Some(io) = &me.io {
            for (name, value) in IO_COUNTERS.iter().zip(StageIo::measured(io).counters()) {
                m.entry((*name).into()).or_default().push(value as f64);
            }
        }
        for f in &me.figures {
            m.entry(f.name.clone()).or_default().push(f.value);
        }
    }
    m
}

impl Plan {
    /// The trials phase: rounds of (warm-up + counted) trials, each round
    /// running every stage once in plan order, each trial in a fresh process.
    /// Recipe stages get their prerequisites first, once and untimed (`data`
    /// is then the frozen dataset): the cache, and for the loader the
    /// normalizer and the context index, whose hashes every loader trial checks.
    fn phases(&self, settings: &Settings, data: Option<(&Path, &Frozen)>) -> Vec<Phase> {
        let mut numbers = JobNumbers::default();
        let mut phases = match data {
            Some((dir, frozen)) => prerequisites(self, settings.workers, &mut numbers, dir, frozen),
            None => Vec::new(),
        };
        // A scan runs its values in a new shuffled order each round.
        let n = self.stages.len();
        let order = |round| match &self.scan {
            Some(scan) => report::modes::params::round_order(n, scan.seed, round),
            None => (0..n).collect(),
        };
        let jobs = (0..self.warmup + self.trials)
            .flat_map(order)
            .map(|i| numbers.job(self.stages[i].key.clone(), self.stages[i].stage.clone()))
            .collect();
        phases.push(Phase {
            progress: crate::events::Style::Trials { warmup: self.warmup, trials: self.trials },
            ..Phase::in_turn(NAME.into(), jobs, 1)
        });
        phases
    }
}
