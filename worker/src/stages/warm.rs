//! The recipe's warm stages over a prepared cache, by way of `recipe::warm`:
//! fit the normalizer, count the eligible contexts, run a loader epoch.
//! Each writes its artifact atomically and reports its hash.

use super::{StageContext, StageError, figure};
use protocol::{EpochInput, Figure, Stage};
use recipe::frozen::Frozen;
use recipe::loader::{BATCH, Batch};
use recipe::normalizer::Normalizer;
use recipe::warm::{self, CacheView, ContextIndex};
use std::ops::ControlFlow;
use std::path::PathBuf;

/// Run-directory file names of the artifacts these stages hand on.
pub const NORMALIZER: &str = "normalizer.json";
pub const LOADER_ORDER: &str = "loader-order.sha256";

pub(super) fn failed(e: impl std::fmt::Display) -> StageError {
    StageError::Failed(e.to_string())
}

pub(super) fn write(ctx: &mut StageContext<'_>, rel: &str, bytes: &[u8]) -> Result<(), StageError> {
    let sha = super::write_artifact(&ctx.run_dir, rel, bytes)?;
    ctx.reporter.artifact(rel, sha);
    Ok(())
}

/// Reads an artifact an earlier stage wrote, after checking it against the
/// SHA-256 that stage reported (handed on by the coordinator).
fn read_checked<T: serde::de::DeserializeOwned>(
    ctx: &StageContext<'_>,
    rel: &str,
    sha256: &str,
) -> Result<T, StageError> {
    let path = ctx.run_dir.join(rel);
    let bytes =
        std::fs::read(&path).map_err(|source| StageError::Io { path: rel.into(), source })?;
    if evidence::sha256_hex(&bytes) != sha256 {
        return Err(failed(format!(
            "{rel} has changed since the stage that wrote it reported its SHA-256"
        )));
    }
    serde_json::from_slice(&bytes).map_err(|e| failed(format!("{rel}: {e}")))
}

/// A loader epoch's inputs, opened and checked: the dataset, the cache (every
/// read checked against its manifest), and the normalizer and context index
/// (checked against the SHA-256 their stages reported).
pub(super) struct Loader {
    dataset: PathBuf,
    frozen: Frozen,
    view: CacheView,
    normalizer: Normalizer,
    index: ContextIndex,
    seed: u64,
}

impl Loader {
    pub(super) fn open(ctx: &StageContext<'_>, input: &EpochInput) -> Result<Loader, StageError> {
        let dataset = input.dataset.as_path().to_path_buf();
        let frozen = Frozen::load(&dataset).map_err(failed)?;
        let view = CacheView::open(&ctx.run_dir.join(&input.cache)).map_err(failed)?;
        let normalizer = read_checked(ctx, NORMALIZER, &input.normalizer_sha256)?;
        let contexts = format!("{}/{}", input.cache, warm::CONTEXTS);
        let index = read_checked(ctx, &contexts, &input.contexts_sha256)?;
        Ok(Loader { dataset, frozen, view, normalizer, index, seed: input.seed })
    }

    /// One epoch; `consume` sees each batch and may end the epoch early.
    pub(super) fn epoch(
        self,
        consume: impl FnMut(&Batch) -> ControlFlow<()>,
    ) -> Result<warm::EpochStats, StageError> {
        let Loader { dataset, frozen, view, normalizer, index, seed } = self;
        warm::loader_epoch((&dataset, &frozen), view, &index, &normalizer, seed, consume)
            .map_err(failed)
    }
}

pub(super) fn run(stage: &Stage, ctx: &mut StageContext<'_>) -> Result<Vec<Figure>, StageError> {
    match stage {
        Stage::FitNormalizer { dataset, cache } => {
            let frozen = Frozen::load(dataset.as_path()).map_err(failed)?;
            let view = CacheView::open(&ctx.run_dir.join(cache)).map_err(failed)?;
            let n = warm::fit_normalizer(&frozen, &view).map_err(failed)?;
            write(ctx, NORMALIZER, &evidence::to_bytes(&n))?;
            Ok(vec![
                figure("frames", n.count as f64),
                figure("series", frozen.train().count() as f64),
            ])
        }
        Stage::CountContexts { dataset, cache } => {
            let dir = dataset.as_path();
            let frozen = Frozen::load(dir).map_err(failed)?;
            let view = CacheView::open(&ctx.run_dir.join(cache)).map_err(failed)?;
            let index = warm::count_contexts(dir, &frozen, &view).map_err(failed)?;
            let eligible = index.eligible();
            if eligible == 0 {
                return Err(failed(
                    "no eligible context: every 240-frame block has an invalid frame or an unknown target",
                ));
            }
            write(ctx, &format!("{cache}/{}", warm::CONTEXTS), &evidence::to_bytes(&index))?;
            let batches = eligible.div_ceil(BATCH as u64);
            Ok(vec![
                figure("eligible_contexts", eligible as f64),
                figure("invalid_event_series", index.invalid_event_series as f64),
                figure("batches", batches as f64),
                figure("final_batch", (eligible - (batches - 1) * BATCH as u64) as f64),
            ])
        }
        Stage::LoaderEpoch(input) => {
            let loader = Loader::open(ctx, input)?;
            let started = std::time::Instant::now();
            let mut checksum = 0f64;
            let stats = loader.epoch(|b| {
                // Touch the batch as a model would read it.
                checksum += b.x.iter().step_by(97).map(|v| *v as f64).sum::<f64>();
                ControlFlow::Continue(())
            })?;
            let epoch_s = started.elapsed().as_secs_f64();
            std::hint::black_box(checksum);
            write(ctx, LOADER_ORDER, format!("{}\n", stats.order_sha256).as_bytes())?;
            report_waits(ctx, &stats);
            let q = |p: f64| super::quantile(&stats.waits_s, p);
            Ok(vec![
                figure("batches", stats.batches as f64),
                figure("contexts", stats.contexts as f64),
                figure("final_batch", stats.final_batch as f64),
                figure("first_wait_s", stats.waits_s.first().copied().unwrap_or(0.0)),
                figure("median_wait_s", q(0.5)),
                figure("p95_wait_s", q(0.95)),
                figure("contexts_per_s", stats.contexts as f64 / epoch_s),
            ])
        }
        other => Err(failed(format!("'{other}' is not a warm recipe stage"))),
    }
}

/// Every wait for the loader's next batch as a slice `loader_wait` of the
/// stage (a trace shows where the model starved).
pub(super) fn report_waits(ctx: &mut StageContext<'_>, stats: &recipe::warm::EpochStats) {
    for (from, seconds) in stats.waits_from.iter().zip(&stats.waits_s) {
        ctx.reporter.slice("loader_wait", *from, *seconds, false);
    }
}
