//! How a stage's input-wait fraction is graded and said, on the console
//! and in summary.md alike.

/// The TensorFlow profiler's grading of an input-wait fraction: under 5%
/// not input-bound, 5 to 20% moderately, 20% or more highly.
pub fn input_bound(fraction: f64) -> &'static str {
    match fraction {
        f if f < 0.05 => "not input-bound",
        f if f < 0.20 => "moderately input-bound",
        _ => "highly input-bound",
    }
}

/// The input-bound verdict of a command stage timed with `--span
/// preset:torch` or `preset:keras`, as one sentence without its subject
/// (console and summary.md say the same), from the stage's figures (for
/// trials, medians over them); None when the stage has no fraction.
pub fn preset_verdict(figures: &std::collections::BTreeMap<String, f64>) -> Option<String> {
    let f = *figures.get("input_wait_fraction")?;
    let get = |k: &str| figures.get(&format!("span:{k}")).copied().unwrap_or(0.0);
    let ms = |k: &str| crate::fmt::duration(get(k));
    if figures.get("input_wait_estimated").is_some_and(|e| *e > 0.0) {
        return Some(format!(
            "fit step {} against resident {}: about {:.1}% waiting (estimate), so it is {} (medians of {} fit steps and {} resident train_on_batch steps on one batch in memory, the first of each apart)",
            ms("train_step_median_s"),
            ms("resident_step_median_s"),
            100.0 * f,
            input_bound(f),
            get("train_step_n"),
            get("resident_step_n"),
        ));
    }
    if figures.contains_key("span:train_step_n") {
        return Some(format!(
            "{} (loader waits / (loader waits + the train steps' own time); {} loader waits, median {}; {} train steps, median {} with their waits; the first step, {}, apart)",
            input_phrase(f),
            get("loader_wait_n"),
            ms("loader_wait_median_s"),
            get("train_step_n"),
            ms("train_step_median_s"),
            ms("first_step_s"),
        ));
    }
    Some(format!(
        "{} (loader waits / (loader waits + steps); {} loader waits {}, {} steps {}, {} optimizer steps, {} backward passes; apart, the loader's start-up, {} summed over {} iterators, and its workers' shutdown at each epoch's end, {} summed over {})",
        input_phrase(f),
        get("loader_wait_n"),
        ms("loader_wait_s"),
        get("step_n"),
        ms("step_s"),
        get("optimizer_step_n"),
        get("backward_n"),
        ms("loader_start_s"),
        get("loader_start_n"),
        ms("loader_stop_s"),
        get("loader_stop_n"),
    ))
}

/// "waited for its loader 12.3% of its step time, so it is moderately
/// input-bound": how the profile's fit epoch and a `--span preset:torch`
/// stage state their input-wait fraction.
pub fn input_phrase(fraction: f64) -> String {
    format!(
        "waited for its loader {:.1}% of its step time, so it is {}",
        100.0 * fraction,
        input_bound(fraction)
    )
}
