//! The resumable recipe over a state directory (`recipe::state`): each step
//! trusts what completion records prove, rebuilds what they do not, and
//! reports where its time went, by component:
//!
//! - `component:record_check_s`: reading completion records and comparing
//!   them with the fingerprint of today's inputs;
//! - `component:integrity_s`: hashing kept artifacts against their records;
//! - `component:load_s`: reading and parsing kept artifacts;
//! - `component:recompute_s`: recomputing a derived artifact that was kept
//!   and valid (`--resume-policy recompute`);
//! - `component:restore_s`: putting a checkpoint into the model;
//! - `component:work_s`: making what was not kept (or not trusted).
//!
//! Whatever else the stage's wall holds (opening the dataset and the state)
//! is the coordinator's `other`.

use super::model::MODEL_SEED;
use super::warm::failed;
use super::{StageContext, StageError, figure};
use model::net::{HostBatch, Model};
use protocol::{Figure, ResumePolicy, StateInput, StateStep};
use recipe::cache::{self, SeriesRef};
use recipe::frozen::{Frozen, SeriesEntry};
use recipe::loader::BATCH;
use recipe::normalizer::Normalizer;
use recipe::state::{self, Found, Record, StateDir, inputs_sha256};
use recipe::warm::{self, CacheView, ContextIndex};
use serde_json::json;
use std::collections::HashMap;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::Instant;

const NORMALIZER_FILE: &str = "normalizer.json";
const CONTEXTS_FILE: &str = "contexts.json";

/// Seconds per component, in the order they are reported.
#[derive(Default)]
struct Components {
    record_check: f64,
    integrity: f64,
    load: f64,
    recompute: f64,
    restore: f64,
    work: f64,
}

impl Components {
    fn figures(&self) -> Vec<Figure> {
        [
            ("record_check", self.record_check),
            ("integrity", self.integrity),
            ("load", self.load),
            ("recompute", self.recompute),
            ("restore", self.restore),
            ("work", self.work),
        ]
        .into_iter()
        .map(|(k, v)| figure(&format!("component:{k}_s"), v))
        .collect()
    }
}

/// Runs `f`, adding its wall time to `slot`.
fn timed<T>(slot: &mut f64, f: impl FnOnce() -> T) -> T {
    let t = Instant::now();
    let out = f();
    *slot += t.elapsed().as_secs_f64();
    out
}

fn io_failed(what: &str) -> impl FnOnce(std::io::Error) -> StageError + '_ {
    move |e| failed(format!("{what}: {e}"))
}

pub(super) fn run(
    step: StateStep,
    input: &StateInput,
    ctx: &mut StageContext<'_>,
) -> Result<Vec<Figure>, StageError> {
    let state = StateDir::open(input.state.as_path()).map_err(io_failed("state directory"))?;
    let dataset = input.dataset.as_path().to_path_buf();
    let frozen = Frozen::load(&dataset).map_err(failed)?;
    let mut c = Components::default();
    let mut train: Vec<&SeriesEntry> = frozen.train().collect();
    train.sort_by(|a, b| a.id.cmp(&b.id));
    let own = match step {
        StateStep::CachePrepare => prepare(&state, &dataset, &train, &mut c, ctx)?,
        StateStep::FitNormalizer | StateStep::CountContexts => {
            let cache = Cache::open(&state, &train, &mut c)?;
            let (name, file) = match step {
                StateStep::FitNormalizer => (state::NORMALIZER, NORMALIZER_FILE),
                _ => (state::CONTEXTS, CONTEXTS_FILE),
            };
            let inputs = derived_inputs(name, &cache, &frozen);
            let make = || -> Result<Vec<u8>, StageError> {
                match step {
                    StateStep::FitNormalizer => {
                        let n = warm::fit_normalizer(&frozen, &cache.view()).map_err(failed)?;
                        Ok(evidence::to_bytes(&n))
                    }
                    _ => {
                        let index = warm::count_contexts(&dataset, &frozen, &cache.view())
                            .map_err(failed)?;
                        if index.eligible() == 0 {
                            return Err(failed(
                                "no eligible context: every 240-frame block has an invalid frame or an unknown target",
                            ));
                        }
                        Ok(evidence::to_bytes(&index))
                    }
                }
            };
            derived(&state, name, file, &inputs, input.policy, &mut c, make)?
        }
        StateStep::Train => train_epochs(&state, &dataset, &frozen, &train, input, &mut c, ctx)?,
    };
    let mut figures = c.figures();
    figures.extend(own);
    Ok(figures)
}

/// The fingerprint of a series' cache: its id, its source's hash, the contract.
fn series_inputs(s: &SeriesEntry) -> String {
    inputs_sha256(&json!({
        "artifact": state::CACHE,
        "contract": recipe::contract::VERSION,
        "series": s.id,
        "source_sha256": s.sha256,
    }))
}

/// Prepares every training series whose cache the state does not prove complete.
fn prepare(
    state: &StateDir,
    dataset: &Path,
    train: &[&SeriesEntry],
    c: &mut Components,
    ctx: &mut StageContext<'_>,
) -> Result<Vec<Figure>, StageError> {
    let (mut reused, mut prepared, mut rebuilt) = (0u64, 0u64, 0u64);
    let cache_dir = state.path(state::CACHE);
    for (i, s) in train.iter().enumerate() {
        let name = state::series(&s.id);
        let inputs = series_inputs(s);
        let found = timed(&mut c.record_check, || state.record(&name, &inputs));
        let trusted = match &found {
            Found::Record(r) => timed(&mut c.integrity, || state.check_files(r)).is_ok(),
            _ => false,
        };
        if trusted {
            reused += 1;
        } else {
            rebuilt += u64::from(!matches!(found, Found::Missing));
            let series = SeriesRef { id: &s.id, file: &s.file, sha256: &s.sha256 };
            timed(&mut c.work, || -> Result<(), StageError> {
                let p = cache::prepare_series(dataset, &series, &cache_dir).map_err(|e| {
                    // By its number in the cohort, never its id.
                    StageError::Failed(format!("training series {} of {}: {e}", i + 1, train.len()))
                })?;
                let files = cache::files(&s.id)
                    .iter()
                    .zip(p.sha256)
                    .map(|(rel, sha)| (format!("{}/{rel}", state::CACHE), hex::encode(sha)))
                    .collect();
                let record =
                    Record { schema: state::RECORD_SCHEMA.into(), inputs_sha256: inputs, files };
                state.record_files(&name, &record).map_err(io_failed("writing a completion record"))
            })?;
            prepared += 1;
        }
        ctx.reporter.progress(i as u64 + 1, train.len() as u64);
    }
    Ok(vec![
        figure("series", train.len() as f64),
        figure("reused", reused as f64),
        figure("prepared", prepared as f64),
        figure("rebuilt", rebuilt as f64),
    ])
}

/// The complete cache, as its records describe it.
struct Cache {
    dir: PathBuf,
    files: HashMap<String, String>,
    /// Fingerprint of every series' record (inputs and files), in id order.
    sha256: String,
}

impl Cache {
    /// Reads every series' record; all must match today's inputs (the cache
    /// preparation runs first). Files are hashed as they are read.
    fn open(
        state: &StateDir,
        train: &[&SeriesEntry],
        c: &mut Components,
    ) -> Result<Cache, StageError> {
        let mut files = HashMap::new();
        let mut records = Vec::new();
        let prefix = format!("{}/", state::CACHE);
        timed(&mut c.record_check, || {
            for s in train {
                match state.record(&state::series(&s.id), &series_inputs(s)) {
                    Found::Record(r) => {
                        for (rel, sha) in &r.files {
                            let rel = rel.strip_prefix(&prefix).unwrap_or(rel);
                            files.insert(rel.to_string(), sha.clone());
                        }
                        records.push(r);
                    }
                    _ => {
                        return Err(failed(format!(
                            "the state's feature cache is not complete ({} of {} series): run its preparation first",
                            records.len(),
                            train.len()
                        )));
                    }
                }
            }
            Ok(())
        })?;
        let sha256 = inputs_sha256(&serde_json::to_value(&records).expect("records serialise"));
        Ok(Cache { dir: state.path(state::CACHE), files, sha256 })
    }

    fn view(&self) -> CacheView {
        CacheView::from_files(&self.dir, self.files.clone())
    }
}

/// The fingerprint of a derived artifact (normalizer or context index):
/// the cache it was made from, the events (for the index), the contract.
fn derived_inputs(name: &str, cache: &Cache, frozen: &Frozen) -> String {
    inputs_sha256(&json!({
        "artifact": name,
        "contract": recipe::contract::VERSION,
        "cache": cache.sha256,
        "events_sha256": if name == state::CONTEXTS { frozen.events.sha256.as_str() } else { "" },
    }))
}

/// Takes or makes a derived artifact, per the policy; returns its figures.
fn derived(
    state: &StateDir,
    name: &str,
    file: &str,
    inputs: &str,
    policy: ResumePolicy,
    c: &mut Components,
    make: impl FnOnce() -> Result<Vec<u8>, StageError>,
) -> Result<Vec<Figure>, StageError> {
    let found = timed(&mut c.record_check, || state.record(name, inputs));
    let kept = match &found {
        Found::Record(r) => timed(&mut c.integrity, || state.check_files(r)).ok().map(|()| r),
        _ => None,
    };
    let flag = |n: &str, on: bool| figure(n, f64::from(u8::from(on)));
    match (kept, policy) {
        (Some(_), ResumePolicy::Load) => {
            timed(&mut c.load, || std::fs::read(state.path(file)))
                .map_err(io_failed("reading a kept artifact"))
                .and_then(|bytes| parse_check(name, &bytes, &mut c.load))?;
            Ok(vec![flag("loaded", true), flag("recomputed", false), flag("built", false)])
        }
        (Some(r), ResumePolicy::Recompute) => {
            let bytes = timed(&mut c.recompute, make)?;
            let identical = r.files.get(file) == Some(&evidence::sha256_hex(&bytes));
            if !identical {
                // Today's code computes something else from the same inputs:
                // keep what it computes, and say so.
                state
                    .commit(name, inputs, &[(file.into(), &bytes)])
                    .map_err(io_failed("writing"))?;
            }
            Ok(vec![
                flag("loaded", false),
                flag("recomputed", true),
                flag("built", false),
                flag("recomputed_identical", identical),
            ])
        }
        (None, _) => {
            timed(&mut c.work, || -> Result<(), StageError> {
                let bytes = make()?;
                state
                    .commit(name, inputs, &[(file.into(), &bytes)])
                    .map_err(io_failed("writing"))?;
                Ok(())
            })?;
            let rebuilt = !matches!(found, Found::Missing);
            Ok(vec![
                flag("loaded", false),
                flag("recomputed", false),
                flag("built", true),
                flag("rebuilt", rebuilt),
            ])
        }
    }
}

/// Parses a kept normalizer or context index (the load's second half).
fn parse_check(name: &str, bytes: &[u8], load: &mut f64) -> Result<(), StageError> {
    timed(load, || match name {
        state::NORMALIZER => serde_json::from_slice::<Normalizer>(bytes).map(|_| ()),
        _ => serde_json::from_slice::<ContextIndex>(bytes).map(|_| ()),
    })
    .map_err(|e| failed(format!("a kept {name} does not parse: {e}")))
}

/// A derived artifact the training needs: complete and intact, then loaded.
fn take<T: serde::de::DeserializeOwned>(
    state: &StateDir,
    name: &str,
    file: &str,
    inputs: &str,
    c: &mut Components,
) -> Result<(T, String), StageError> {
    let not_ready = |why: String| {
        failed(format!("the state's {name} cannot be used ({why}): run its stage first"))
    };
    let record = match timed(&mut c.record_check, || state.record(name, inputs)) {
        Found::Record(r) => r,
        Found::Missing => return Err(not_ready("no completion record".into())),
        Found::Stale(why) => return Err(not_ready(why)),
    };
    timed(&mut c.integrity, || state.check_files(&record)).map_err(|e| not_ready(e.to_string()))?;
    let bytes =
        timed(&mut c.load, || std::fs::read(state.path(file))).map_err(io_failed("reading"))?;
    let value = timed(&mut c.load, || serde_json::from_slice(&bytes))
        .map_err(|e| failed(format!("a kept {name} does not parse: {e}")))?;
    Ok((value, evidence::sha256_hex(&bytes)))
}

/// The loader's seed for epoch `e` (1-based): the run's seed for the first.
fn epoch_seed(seed: u64, e: u32) -> u64 {
    seed ^ u64::from(e - 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// Trains up to `input.epochs` from the newest checkpoint the state proves
/// complete, writing a checkpoint after each epoch.
fn train_epochs(
    state: &StateDir,
    dataset: &Path,
    frozen: &Frozen,
    train: &[&SeriesEntry],
    input: &StateInput,
    c: &mut Components,
    ctx: &mut StageContext<'_>,
) -> Result<Vec<Figure>, StageError> {
    let cache = Cache::open(state, train, c)?;
    let norm_inputs = derived_inputs(state::NORMALIZER, &cache, frozen);
    let (normalizer, norm_sha): (Normalizer, _) =
        take(state, state::NORMALIZER, NORMALIZER_FILE, &norm_inputs, c)?;
    let ctx_inputs = derived_inputs(state::CONTEXTS, &cache, frozen);
    let (index, ctx_sha): (ContextIndex, _) =
        take(state, state::CONTEXTS, CONTEXTS_FILE, &ctx_inputs, c)?;
    let checkpoint_inputs = |epoch: u32, previous: &str| {
        inputs_sha256(&json!({
            "artifact": state::CHECKPOINTS,
            "contract": recipe::contract::VERSION,
            "normalizer_sha256": norm_sha,
            "contexts_sha256": ctx_sha,
            "seed": input.seed,
            "model_seed": MODEL_SEED,
            "epoch": epoch,
            "previous_sha256": previous,
        }))
    };
    // The newest complete checkpoint whose chain back to epoch 1 holds.
    let (mut restored, mut previous) = (0u32, String::new());
    for e in 1..=input.epochs {
        let name = state::checkpoint(e);
        let record = match timed(&mut c.record_check, || {
            state.record(&name, &checkpoint_inputs(e, &previous))
        }) {
            Found::Record(r) => r,
            _ => break,
        };
        if timed(&mut c.integrity, || state.check_files(&record)).is_err() {
            break;
        }
        let Some(sha) = record.files.values().next() else { break };
        previous = sha.clone();
        restored = e;
    }
    let mut m = Model::new(MODEL_SEED).map_err(|e| failed(format!("model: {e}")))?;
    // The size of the checkpoint last read or written (all are the same size).
    let mut checkpoint_len = 0;
    if restored > 0 {
        let file = format!("{}.bin", state::checkpoint(restored));
        let bytes = timed(&mut c.load, || std::fs::read(state.path(&file)))
            .map_err(io_failed("reading a checkpoint"))?;
        timed(&mut c.restore, || m.restore(&bytes))
            .map_err(|e| failed(format!("restoring a checkpoint: {e}")))?;
        checkpoint_len = bytes.len();
    }
    let batches = index.eligible().div_ceil(BATCH as u64);
    let total = batches * u64::from(input.epochs);
    let mut last_loss = f64::NAN;
    let mut write_s = 0.0;
    for e in restored + 1..=input.epochs {
        let mut losses = Vec::new();
        let mut error = None;
        let done_before = batches * u64::from(e - 1);
        timed(&mut c.work, || -> Result<(), StageError> {
            warm::loader_epoch(
                (dataset, frozen),
                cache.view(),
                &index,
                &normalizer,
                epoch_seed(input.seed, e),
                |b| match HostBatch::from_loader(b).and_then(|hb| m.step(&hb)) {
                    Ok(loss) => {
                        losses.push(loss);
                        ctx.reporter.progress(done_before + losses.len() as u64, total);
                        ControlFlow::Continue(())
                    }
                    Err(err) => {
                        error = Some(err);
                        ControlFlow::Break(())
                    }
                },
            )
            .map_err(failed)?;
            if let Some(err) = error.take() {
                return Err(failed(format!("model: {err}")));
            }
            let mut bytes = m.checkpoint().map_err(|err| failed(format!("model: {err}")))?;
            if restored > 0 && crate::planted::asks("resumed") {
                crate::planted::flip_last(&mut bytes);
            }
            let name = state::checkpoint(e);
            let inputs = checkpoint_inputs(e, &previous);
            let record = timed(&mut write_s, || {
                state.commit(&name, &inputs, &[(format!("{name}.bin"), &bytes)])
            })
            .map_err(io_failed("writing a checkpoint"))?;
            // The record holds the one file's hash: the next epoch chains to it.
            previous = record.files.into_values().next().unwrap_or_default();
            checkpoint_len = bytes.len();
            Ok(())
        })?;
        if !losses.iter().all(|l| l.is_finite()) {
            return Err(failed("the epoch's loss is not finite"));
        }
        last_loss = losses.iter().map(|l| f64::from(*l)).sum::<f64>() / losses.len().max(1) as f64;
    }
    let mut figures = vec![
        figure("epochs", f64::from(input.epochs)),
        figure("epochs_restored", f64::from(restored)),
        figure("epochs_trained", f64::from(input.epochs - restored)),
        figure("batches_per_epoch", batches as f64),
        figure("checkpoint_bytes", checkpoint_len as f64),
        figure("optimizer_steps", m.steps() as f64),
    ];
    if last_loss.is_finite() {
        figures.push(figure("last_epoch_loss", last_loss));
        let written = f64::from(input.epochs - restored);
        figures.push(figure("checkpoint_write_s", write_s / written));
    }
    Ok(figures)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_first_epoch_keeps_the_runs_seed_and_later_ones_differ() {
        assert_eq!(super::epoch_seed(7, 1), 7);
        assert_ne!(super::epoch_seed(7, 2), 7);
        assert_ne!(super::epoch_seed(7, 2), super::epoch_seed(7, 3));
    }
}
