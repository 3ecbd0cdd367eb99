//! How a profile shows itself: the recipe's counts, its loader epoch, the
//! model's steps and the input-bound verdict in summary.md.

use super::Section;
use crate::doc::{Block, Blocks};
use crate::fmt::duration;
use crate::modes::ModeSection;
use crate::modes::Report;
use crate::modes::input_wait::input_phrase;

impl ModeSection for Section {
    fn blocks(&self, r: &Report) -> Blocks {
        let mut out = Blocks::default();
        let c = &self.counts;
        if c.eligible_contexts.is_none() {
            return out;
        }
        let n = |x: Option<u64>| x.map(|v| v.to_string()).unwrap_or_else(|| "–".into());
        out.documents(Block::Heading("Recipe profile".into()));
        out.documents(Block::Para(format!("{} training series, {} frames ({} valid, all fitted by the normalizer); {} eligible contexts of 240 frames in {} batches of 32 ({} in the last); {} series with invalid event steps.",
            c.train_series,
            c.frames,
            c.valid_frames,
            n(c.eligible_contexts),
            n(c.batches),
            n(c.final_batch),
            n(c.invalid_event_series)
        )));
        if let Some(l) = r.stages.get("warm_loader_epoch") {
            let f = |k: &str| l.figures.get(k).copied().unwrap_or(f64::NAN);
            out.documents(Block::Para(format!("Loader epoch: first batch after {}, median wait {}, p95 wait {}, {:.0} contexts/s.",
                duration(f("first_wait_s")),
                duration(f("median_wait_s")),
                duration(f("p95_wait_s")),
                f("contexts_per_s")
            )));
        }
        let fig =
            |stage: &str, k: &str| r.stages.get(stage).and_then(|st| st.figures.get(k)).copied();
        if let Some(step) = fig("resident_model_steps", "median_step_s") {
            out.documents(Block::Para(format!("Model, resident: median training step {} (min {}, max {}) over {} steps on one batch of {} contexts; loss {:.4} → {:.4}.",
                duration(step),
                duration(fig("resident_model_steps", "min_step_s").unwrap_or(f64::NAN)),
                duration(fig("resident_model_steps", "max_step_s").unwrap_or(f64::NAN)),
                fig("resident_model_steps", "steps").unwrap_or(f64::NAN),
                fig("resident_model_steps", "batch_contexts").unwrap_or(f64::NAN),
                fig("resident_model_steps", "first_loss").unwrap_or(f64::NAN),
                fig("resident_model_steps", "last_loss").unwrap_or(f64::NAN),
            )));
        }
        if let Some(f) = fig("end_to_end_fit_epoch", "input_wait_fraction") {
            out.documents(Block::Para(format!("Input: the fit epoch {} (the TensorFlow profiler's grading: under 5% not, 5 to 20% moderately, 20% or more highly input-bound).",
                input_phrase(f)
            )));
        }
        if let Some(rate) = fig("end_to_end_fit_epoch", "contexts_per_s") {
            out.documents(Block::Para(format!("Model, end to end: one fit epoch through the loader at {rate:.0} contexts/s, median step {}, median loader wait {}; mean loss {:.4} in the first tenth of the epoch, {:.4} in the last.",
                duration(fig("end_to_end_fit_epoch", "median_step_s").unwrap_or(f64::NAN)),
                duration(fig("end_to_end_fit_epoch", "median_wait_s").unwrap_or(f64::NAN)),
                fig("end_to_end_fit_epoch", "loss_first_tenth").unwrap_or(f64::NAN),
                fig("end_to_end_fit_epoch", "loss_last_tenth").unwrap_or(f64::NAN),
            )));
        }
        out.documents(Block::Para(
            "\"Cold\" is the feature cache, not the OS page cache. Peak RSS is each stage's own fresh process's lifetime peak.".into(),
        ));
        out
    }
}
