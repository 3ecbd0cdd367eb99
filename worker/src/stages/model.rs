//! The model stages of the recipe (`model::net`): build, warm up and step
//! on one resident host batch, and train a fresh model for one epoch
//! through the loader.
//!
//! Each stage runs in a process of its own, so it first does, untimed, what
//! the stages before it would have left in a shared process: open the
//! loader's inputs (checked by hash), take the host batch (the first batch
//! of the seeded epoch), build the model, warm it up. It then tells the
//! reporter its setup is done, and only its own part is measured. The
//! resident steps repeat one batch: they are a compute reference, never an
//! epoch time.

use super::warm::{Loader, failed, write};
use super::{StageContext, StageError, figure, quantile};
use model::net::{HostBatch, Model};
use protocol::{EpochInput, Figure, ModelStep};
use std::ops::ControlFlow;
use std::time::Instant;

/// The model's seed, the seed recipe's.
pub const MODEL_SEED: u64 = 0;
pub const WARMUP_STEPS: usize = 2;
pub const RESIDENT_STEPS: usize = 20;
/// Run-directory file with the SHA-256 of the weights after the fit epoch.
pub const FIT_WEIGHTS: &str = "fit-weights.sha256";

fn model_error(e: candle_core::Error) -> StageError {
    failed(format!("model: {e}"))
}

fn build() -> Result<Model, StageError> {
    Model::new(MODEL_SEED).map_err(model_error)
}

/// The loader's first batch for the run's seed, as the host batch.
fn host_batch(ctx: &StageContext<'_>, input: &EpochInput) -> Result<HostBatch, StageError> {
    let mut first = None;
    Loader::open(ctx, input)?.epoch(|b| {
        first = Some(HostBatch::from_loader(b));
        ControlFlow::Break(())
    })?;
    first.ok_or_else(|| failed("the loader delivered no batch"))?.map_err(model_error)
}

/// Timed training steps, each one's seconds and loss.
fn steps(model: &mut Model, batch: &HostBatch, n: usize) -> Result<Vec<(f64, f32)>, StageError> {
    (0..n)
        .map(|_| {
            let t = Instant::now();
            let loss = model.step(batch).map_err(model_error)?;
            Ok((t.elapsed().as_secs_f64(), loss))
        })
        .collect()
}

fn mean(v: &[f32]) -> f64 {
    v.iter().map(|x| *x as f64).sum::<f64>() / v.len().max(1) as f64
}

pub(super) fn run(
    step: ModelStep,
    input: &EpochInput,
    ctx: &mut StageContext<'_>,
) -> Result<Vec<Figure>, StageError> {
    match step {
        ModelStep::ResidentBuild | ModelStep::EndToEndBuild => {
            let m = build()?;
            Ok(vec![figure("parameters", m.parameters() as f64)])
        }
        ModelStep::ResidentWarmup => {
            let batch = host_batch(ctx, input)?;
            let mut m = build()?;
            ctx.reporter.setup_done();
            let done = steps(&mut m, &batch, WARMUP_STEPS)?;
            Ok(vec![
                figure("warmup_steps", WARMUP_STEPS as f64),
                figure("first_step_s", done[0].0),
                figure("batch_contexts", batch.len as f64),
                figure("loss", done[WARMUP_STEPS - 1].1 as f64),
            ])
        }
        ModelStep::ResidentSteps => {
            let batch = host_batch(ctx, input)?;
            let mut m = build()?;
            steps(&mut m, &batch, WARMUP_STEPS)?;
            ctx.reporter.setup_done();
            let done = steps(&mut m, &batch, RESIDENT_STEPS)?;
            let secs: Vec<f64> = done.iter().map(|d| d.0).collect();
            Ok(vec![
                figure("steps", RESIDENT_STEPS as f64),
                figure("median_step_s", quantile(&secs, 0.5)),
                figure("min_step_s", quantile(&secs, 0.0)),
                figure("max_step_s", quantile(&secs, 1.0)),
                figure("batch_contexts", batch.len as f64),
                figure("first_loss", done[0].1 as f64),
                figure("last_loss", done[RESIDENT_STEPS - 1].1 as f64),
            ])
        }
        ModelStep::FitEpoch => {
            let loader = Loader::open(ctx, input)?;
            let mut m = build()?;
            ctx.reporter.setup_done();
            let started = Instant::now();
            let mut losses = Vec::new();
            let mut step_s = Vec::new();
            let mut error = None;
            let stats = loader.epoch(|b| {
                let t = Instant::now();
                match HostBatch::from_loader(b).and_then(|hb| m.step(&hb)) {
                    Ok(loss) => {
                        losses.push(loss);
                        step_s.push(t.elapsed().as_secs_f64());
                        ControlFlow::Continue(())
                    }
                    Err(e) => {
                        error = Some(e);
                        ControlFlow::Break(())
                    }
                }
            })?;
            if let Some(e) = error {
                return Err(model_error(e));
            }
            let epoch_s = started.elapsed().as_secs_f64();
            if !losses.iter().all(|l| l.is_finite()) {
                return Err(failed("the fit epoch's loss is not finite"));
            }
            let weights = m.snapshot().map_err(model_error)?;
            let bytes: Vec<u8> = weights.iter().flatten().flat_map(|w| w.to_le_bytes()).collect();
            write(ctx, FIT_WEIGHTS, format!("{}\n", evidence::sha256_hex(&bytes)).as_bytes())?;
            let tenth = losses.len().div_ceil(10);
            super::warm::report_waits(ctx, &stats);
            Ok(vec![
                figure("batches", stats.batches as f64),
                figure("contexts", stats.contexts as f64),
                figure("final_batch", stats.final_batch as f64),
                figure("contexts_per_s", stats.contexts as f64 / epoch_s),
                figure("median_step_s", quantile(&step_s, 0.5)),
                figure("median_wait_s", quantile(&stats.waits_s, 0.5)),
                figure("p95_wait_s", quantile(&stats.waits_s, 0.95)),
                figure("loss_first_tenth", mean(&losses[..tenth])),
                figure("loss_last_tenth", mean(&losses[losses.len() - tenth..])),
                // The loader's waits as a share of the epoch's step time
                // (each step: waiting for its batch, then computing on it).
                figure("input_wait_fraction", {
                    let wait: f64 = stats.waits_s.iter().sum();
                    let compute: f64 = step_s.iter().sum();
                    if wait + compute > 0.0 { wait / (wait + compute) } else { 0.0 }
                }),
            ])
        }
    }
}
