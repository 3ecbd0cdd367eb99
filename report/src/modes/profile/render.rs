//! How a profile shows itself: the recipe's counts, its loader epoch, the
//! model's steps and the input-bound verdict in summary.md.

use super::Section;
use crate::fmt::duration;
use crate::modes::ModeSection;
use crate::modes::Report;
use crate::modes::input_wait::input_phrase;
use std::fmt::Write as _;

impl ModeSection for Section {
    fn summary(&self, r: &Report, s: &mut String) {
        let c = &self.counts;
        if c.eligible_contexts.is_none() {
            return;
        }
        let n = |x: Option<u64>| x.map(|v| v.to_string()).unwrap_or_else(|| "–".into());
        let _ = writeln!(s, "\n## Recipe profile\n");
        let _ = writeln!(
            s,
            "{} training series, {} frames ({} valid, all fitted by the normalizer); {} eligible contexts of 240 frames in {} batches of 32 ({} in the last); {} series with invalid event steps.",
            c.train_series,
            c.frames,
            c.valid_frames,
            n(c.eligible_contexts),
            n(c.batches),
            n(c.final_batch),
            n(c.invalid_event_series)
        );
        if let Some(l) = r.stages.get("warm_loader_epoch") {
            let f = |k: &str| l.figures.get(k).copied().unwrap_or(f64::NAN);
            let _ = writeln!(
                s,
                "\nLoader epoch: first batch after {}, median wait {}, p95 wait {}, {:.0} contexts/s.",
                duration(f("first_wait_s")),
                duration(f("median_wait_s")),
                duration(f("p95_wait_s")),
                f("contexts_per_s")
            );
        }
        let fig =
            |stage: &str, k: &str| r.stages.get(stage).and_then(|st| st.figures.get(k)).copied();
        if let Some(step) = fig("resident_model_steps", "median_step_s") {
            let _ = writeln!(
                s,
                "\nModel, resident: median training step {} (min {}, max {}) over {} steps on one batch of {} contexts; loss {:.4} → {:.4}.",
                duration(step),
                duration(fig("resident_model_steps", "min_step_s").unwrap_or(f64::NAN)),
                duration(fig("resident_model_steps", "max_step_s").unwrap_or(f64::NAN)),
                fig("resident_model_steps", "steps").unwrap_or(f64::NAN),
                fig("resident_model_steps", "batch_contexts").unwrap_or(f64::NAN),
                fig("resident_model_steps", "first_loss").unwrap_or(f64::NAN),
                fig("resident_model_steps", "last_loss").unwrap_or(f64::NAN),
            );
        }
        if let Some(f) = fig("end_to_end_fit_epoch", "input_wait_fraction") {
            let _ = writeln!(
                s,
                "\nInput: the fit epoch {} (the TensorFlow profiler's grading: under 5% not, 5 to 20% moderately, 20% or more highly input-bound).",
                input_phrase(f)
            );
        }
        if let Some(rate) = fig("end_to_end_fit_epoch", "contexts_per_s") {
            let _ = writeln!(
                s,
                "\nModel, end to end: one fit epoch through the loader at {rate:.0} contexts/s, median step {}, median loader wait {}; mean loss {:.4} in the first tenth of the epoch, {:.4} in the last.",
                duration(fig("end_to_end_fit_epoch", "median_step_s").unwrap_or(f64::NAN)),
                duration(fig("end_to_end_fit_epoch", "median_wait_s").unwrap_or(f64::NAN)),
                fig("end_to_end_fit_epoch", "loss_first_tenth").unwrap_or(f64::NAN),
                fig("end_to_end_fit_epoch", "loss_last_tenth").unwrap_or(f64::NAN),
            );
        }
        let _ = writeln!(
            s,
            "\n\"Cold\" is the feature cache, not the OS page cache. Peak RSS is each stage's own fresh process's lifetime peak."
        );
    }
}
