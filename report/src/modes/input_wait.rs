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

/// An estimate's grade from its interval: moderately or highly
/// input-bound only where the interval's lower end passes the threshold,
/// not input-bound where its upper end stays under 5%, and otherwise not
/// distinguishable from no waiting (a control with no loader work once
/// read 7.4%, 14.2%, 0.0% and 4.1% in four runs of one command).
pub fn graded(low: f64, high: f64) -> String {
    match (low, high) {
        (lo, _) if lo >= 0.05 => input_bound(lo).to_string(),
        (_, hi) if hi < 0.05 => "not input-bound".to_string(),
        (lo, hi) => format!(
            "not distinguishable from no waiting (interval {:.1}% to {:.1}%, across the 5% line)",
            100.0 * lo,
            100.0 * hi
        ),
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
        // The percentage from the very medians printed (over trials, the
        // medians of their medians), so the sentence's figures give it.
        let (fit, resident) = (get("train_step_median_s"), get("resident_step_median_s"));
        let raw = if fit > 0.0 { 1.0 - resident / fit } else { f };
        let shown = raw.max(0.0);
        // A resident step slower than the fit's is no negative wait: said so.
        let waiting = match raw < 0.0 {
            true => format!("no waiting (the resident steps {:.1}% slower)", -100.0 * raw),
            false => format!("about {:.1}% waiting", 100.0 * shown),
        };
        let interval =
            match (figures.get("input_wait_fraction_low"), figures.get("input_wait_fraction_high"))
            {
                (Some(lo), Some(hi)) => Some((*lo, *hi)),
                _ => None,
            };
        let (grade, said) = match interval {
            Some((lo, hi)) => (
                graded(lo, hi),
                format!("; 95% interval {:.1}% to {:.1}% over the steps", 100.0 * lo, 100.0 * hi),
            ),
            None => (input_bound(shown).to_string(), String::new()),
        };
        return Some(format!(
            "fit step {} against resident {}: {waiting} (estimate, 1 − resident / fit{said}), so it is {grade} (medians of {} fit steps and {} resident train_on_batch steps on one batch in memory, the first of each apart)",
            crate::fmt::duration(fit),
            crate::fmt::duration(resident),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn estimate(fit: f64, resident: f64, low: f64, high: f64) -> String {
        let figures: std::collections::BTreeMap<String, f64> = [
            ("input_wait_fraction", 0.041),
            ("input_wait_estimated", 1.0),
            ("input_wait_fraction_low", low),
            ("input_wait_fraction_high", high),
            ("span:train_step_median_s", fit),
            ("span:resident_step_median_s", resident),
            ("span:train_step_n", 100.0),
            ("span:resident_step_n", 10.0),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        preset_verdict(&figures).unwrap()
    }

    /// The percentage follows from the medians printed (6.816 ms against
    /// 6.783 ms is 0.5%, not a median of fractions' 4.1%), and the grade
    /// from the interval: each way, and "not distinguishable".
    #[test]
    fn an_estimate_is_graded_by_its_interval_and_its_figures_give_its_percentage() {
        let v = estimate(0.006816, 0.006783, -0.01, 0.02);
        assert!(
            v.starts_with("fit step 6.816 ms against resident 6.783 ms: about 0.5% waiting"),
            "{v}"
        );
        assert!(v.contains("so it is not input-bound"), "{v}");
        let v = estimate(0.0072, 0.0067, 0.02, 0.12);
        assert!(
            v.contains("so it is not distinguishable from no waiting (interval 2.0% to 12.0%"),
            "{v}"
        );
        let v = estimate(0.0080, 0.0067, 0.08, 0.25);
        assert!(v.contains("so it is moderately input-bound"), "{v}");
        let v = estimate(0.1075, 0.1106, -0.059, -0.010);
        assert!(
            v.contains(": no waiting (the resident steps 2.9% slower)")
                && v.contains("so it is not input-bound"),
            "{v}"
        );
        let v = estimate(0.0200, 0.0067, 0.55, 0.72);
        assert!(
            v.contains("about 66.5% waiting") && v.contains("so it is highly input-bound"),
            "{v}"
        );
    }
}
