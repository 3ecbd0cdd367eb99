//! The recipe's warm stages over a prepared cache, by way of `recipe::warm`:
//! fit the normalizer, count the eligible contexts, run a loader epoch.
//! Each writes its artifact atomically and reports its hash.

use super::{StageContext, StageError, figure};
use protocol::{Figure, Stage};
use recipe::frozen::Frozen;
use recipe::loader::BATCH;
use recipe::normalizer::Normalizer;
use recipe::warm::{self, CacheView, ContextIndex};
use std::path::Path;

/// Run-directory file names of the artifacts these stages hand on.
pub const NORMALIZER: &str = "normalizer.json";
pub const LOADER_ORDER: &str = "loader-order.sha256";

fn failed(e: impl std::fmt::Display) -> StageError {
    StageError::Failed(e.to_string())
}

fn write(ctx: &mut StageContext<'_>, rel: &str, bytes: &[u8]) -> Result<(), StageError> {
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

pub(super) fn run(stage: &Stage, ctx: &mut StageContext<'_>) -> Result<Vec<Figure>, StageError> {
    match stage {
        Stage::FitNormalizer { dataset, cache } => {
            let frozen = Frozen::load(Path::new(dataset)).map_err(failed)?;
            let view = CacheView::open(&ctx.run_dir.join(cache)).map_err(failed)?;
            let n = warm::fit_normalizer(&frozen, &view).map_err(failed)?;
            write(ctx, NORMALIZER, &evidence::to_bytes(&n))?;
            Ok(vec![
                figure("frames", n.count as f64),
                figure("series", frozen.train().count() as f64),
            ])
        }
        Stage::CountContexts { dataset, cache } => {
            let dir = Path::new(dataset);
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
        Stage::LoaderEpoch { dataset, cache, seed, normalizer_sha256, contexts_sha256 } => {
            let dir = Path::new(dataset);
            let frozen = Frozen::load(dir).map_err(failed)?;
            let view = CacheView::open(&ctx.run_dir.join(cache)).map_err(failed)?;
            let normalizer: Normalizer = read_checked(ctx, NORMALIZER, normalizer_sha256)?;
            let contexts = format!("{cache}/{}", warm::CONTEXTS);
            let index: ContextIndex = read_checked(ctx, &contexts, contexts_sha256)?;
            let started = std::time::Instant::now();
            let mut checksum = 0f64;
            let stats = warm::loader_epoch((dir, &frozen), view, &index, &normalizer, *seed, |b| {
                // Touch the batch as a model would read it.
                checksum += b.x.iter().step_by(97).map(|v| *v as f64).sum::<f64>();
            })
            .map_err(failed)?;
            let epoch_s = started.elapsed().as_secs_f64();
            std::hint::black_box(checksum);
            write(ctx, LOADER_ORDER, format!("{}\n", stats.order_sha256).as_bytes())?;
            let mut waits = stats.waits_s.clone();
            waits.sort_by(f64::total_cmp);
            let q = |p: f64| waits[((waits.len() - 1) as f64 * p).round() as usize];
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
