//! What a preset's spans say of a stage's waiting for its input: the
//! input-wait fraction, measured from the loader's waits, or estimated
//! from fit steps against resident steps, with its interval; and why there
//! is none, when there is none.

use protocol::{SpanSummary, SpanTarget};

/// Figures a preset's spans make: the input-wait fraction, waiting over
/// waiting plus computing, as the recipe's fit epoch has it.
///
/// - `preset:torch`: `loader_wait / (loader_wait + step)` (sums).
/// - `preset:keras` where Python sees the loader's waits (JAX, torch):
///   `loader_wait / (loader_wait + train_step's self time)`; on JAX the
///   waits run inside the step, on torch before it, and self time is the
///   step without them either way.
/// - `preset:keras` where it does not (TensorFlow pulls batches inside its
///   graph) but resident steps were timed (`--keras-resident`): an
///   estimate, `1 − resident median / fit step median` (at least 0), with
///   `input_wait_estimated` = 1 and its 95% interval over the steps
///   (`input_wait_fraction_low`, `_high`; see [`estimate_interval`]).
///
/// Anything else gives no fraction: the verdict is then unknown, never 0%
/// (see [`unknown`]).
pub fn derived(targets: &[SpanTarget], spans: &[protocol::SpanSummary]) -> Vec<protocol::Figure> {
    let preset =
        |name: &str| targets.iter().any(|t| matches!(t, SpanTarget::Preset(p) if p == name));
    let get = |name: &str| spans.iter().find(|s| s.name == name && s.calls > 0);
    let fraction = |f: f64| vec![super::figure("input_wait_fraction", f)];
    if preset("torch") {
        if let (Some(wait), Some(step)) = (get("loader_wait"), get("step")) {
            if wait.sum_s + step.sum_s > 0.0 {
                return fraction(wait.sum_s / (wait.sum_s + step.sum_s));
            }
        }
    }
    if preset("keras") {
        match (get("loader_wait"), get("train_step"), get("resident_step")) {
            (Some(wait), Some(step), _) if wait.sum_s + step.self_s > 0.0 => {
                return fraction(wait.sum_s / (wait.sum_s + step.self_s));
            }
            (None, Some(step), Some(resident)) if step.quantile(0.5) > 0.0 => {
                let f = (1.0 - resident.quantile(0.5) / step.quantile(0.5)).max(0.0);
                let (low, high) = estimate_interval(step, resident);
                let mut v = fraction(f);
                v.push(super::figure("input_wait_estimated", 1.0));
                v.push(super::figure("input_wait_fraction_low", low));
                v.push(super::figure("input_wait_fraction_high", high));
                return v;
            }
            _ => {}
        }
    }
    Vec::new()
}

/// Why `preset:keras` gave no input-bound verdict, when it gave none: a
/// warning, so an unknown never reads as 0%.
pub fn unknown(targets: &[SpanTarget], derived: &[protocol::Figure]) -> Option<String> {
    let keras = targets.iter().any(|t| matches!(t, SpanTarget::Preset(p) if p == "keras"));
    let known = derived.iter().any(|f| f.name == "input_wait_fraction");
    (keras && !known).then(|| {
        "input-bound: unknown, because neither loader waits (seen on JAX and torch) nor fit steps beside resident steps (TensorFlow, with --keras-resident N) were timed".to_string()
    })
}

/// Resamplings of the steps for the estimate's interval.
const RESAMPLES: usize = 1000;

/// The 95% interval of `1 − resident median / fit step median` over the
/// steps: both spans' calls resampled (from their histograms, whose
/// buckets are within 1% of any call) [`RESAMPLES`] times, the estimate
/// recomputed each time, and its 2.5th and 97.5th percentiles, unclamped
/// (a resident step slower than the fit's gives a negative end). Seeded
/// by the calls, so the same spans give the same interval.
pub fn estimate_interval(step: &SpanSummary, resident: &SpanSummary) -> (f64, f64) {
    let mut rng = evidence::rng::Rng::new(step.calls.wrapping_mul(31).wrapping_add(resident.calls));
    let mut estimates: Vec<f64> = (0..RESAMPLES)
        .map(|_| 1.0 - resampled_median(resident, &mut rng) / resampled_median(step, &mut rng))
        .filter(|x| x.is_finite())
        .collect();
    if estimates.is_empty() {
        return (0.0, 0.0);
    }
    estimates.sort_by(f64::total_cmp);
    let at = |q: f64| estimates[((q * (estimates.len() - 1) as f64).round()) as usize];
    (at(0.025), at(0.975))
}

/// The median of `s.calls` calls drawn from `s`'s histogram, with
/// replacement (each at its bucket's middle, within its min and max).
fn resampled_median(s: &SpanSummary, rng: &mut evidence::rng::Rng) -> f64 {
    let n = s.calls.max(1);
    let mut cumulative = Vec::with_capacity(s.buckets.len());
    let mut seen = 0;
    for (key, count) in &s.buckets {
        seen += count;
        let mid = protocol::spans::bucket_middle(*key).unwrap_or(0.0) * 1e-9;
        cumulative.push((seen, mid.clamp(s.min_s, s.max_s)));
    }
    let mut drawn: Vec<f64> = (0..n)
        .map(|_| {
            let r = rng.range(0, seen.max(1));
            let i = cumulative.partition_point(|(c, _)| *c <= r);
            cumulative.get(i).map_or(s.max_s, |(_, m)| *m)
        })
        .collect();
    drawn.sort_by(f64::total_cmp);
    drawn[drawn.len() / 2]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(name: &str, calls: &[f64], self_s: f64) -> protocol::SpanSummary {
        let mut s = protocol::SpanSummary::new(name);
        for (i, c) in calls.iter().enumerate() {
            s.add_call(*c, i as f64);
        }
        s.self_s = self_s;
        s
    }

    #[test]
    fn the_torch_preset_gives_the_input_wait_fraction_from_its_spans() {
        let torch = [SpanTarget::Preset("torch".into())];
        let spans = [summary("loader_wait", &[1.0], 1.0), summary("step", &[3.0], 3.0)];
        let got = derived(&torch, &spans);
        assert_eq!(got.len(), 1);
        assert_eq!((got[0].name.as_str(), got[0].value), ("input_wait_fraction", 0.25));
        // Not without the preset, nor without both spans.
        assert!(derived(&[], &spans).is_empty());
        assert!(derived(&torch, &spans[..1]).is_empty());
    }

    #[test]
    fn the_keras_preset_measures_the_wait_or_estimates_it_or_says_nothing() {
        let keras = [SpanTarget::Preset("keras".into())];
        // JAX: the waits inside the steps; the fraction is over the steps'
        // own time, not over steps that already hold the waits.
        let waited = [summary("loader_wait", &[1.0], 1.0), summary("train_step", &[4.0], 3.0)];
        let got = derived(&keras, &waited);
        assert_eq!(got.len(), 1);
        assert_eq!((got[0].name.as_str(), got[0].value), ("input_wait_fraction", 0.25));
        // TensorFlow: fit steps of median 16.4 ms against resident steps of
        // 7.0 ms, an estimate.
        let fit = summary("train_step", &[0.0164, 0.0164, 0.0164], 0.0);
        let resident = summary("resident_step", &[0.007, 0.007, 0.007], 0.0);
        let got = derived(&keras, &[fit.clone(), resident.clone()]);
        let value = |n: &str| got.iter().find(|f| f.name == n).map(|f| f.value);
        let f = value("input_wait_fraction").unwrap();
        assert!((f - (1.0 - 7.0 / 16.4)).abs() < 0.01, "{f}");
        assert_eq!(value("input_wait_estimated"), Some(1.0));
        // A resident step slower than the fit's is no negative wait.
        let got = derived(&keras, &[resident.clone(), summary("train_step", &[0.005], 0.0)]);
        assert_eq!(got[0].value, 0.0);
        // Neither waits nor a resident reference: no figure, so unknown.
        assert!(derived(&keras, &[fit]).is_empty());
        assert!(derived(&keras, &[resident]).is_empty());
        assert!(unknown(&keras, &[]).is_some());
        assert!(unknown(&keras, &derived(&keras, &waited)).is_none());
        assert!(unknown(&[], &[]).is_none());
        // Not the torch preset's rule.
        assert!(derived(&[SpanTarget::Preset("torch".into())], &waited).is_empty());
    }

    /// The estimate's interval holds its median, narrows with the steps,
    /// and can say "no": steps of the same median give an interval around
    /// 0; fit steps 10% slower, one that excludes it.
    #[test]
    fn the_estimates_interval_holds_it_and_can_exclude_no_waiting() {
        let spread = |center: f64, n: usize| -> Vec<f64> {
            (0..n).map(|i| center * (0.95 + 0.1 * (i as f64 / n as f64))).collect()
        };
        let keras = [SpanTarget::Preset("keras".into())];
        let same = [
            summary("train_step", &spread(0.010, 200), 0.0),
            summary("resident_step", &spread(0.010, 200), 0.0),
        ];
        let got = derived(&keras, &same);
        let value =
            |got: &[protocol::Figure], n: &str| got.iter().find(|f| f.name == n).unwrap().value;
        let (low, high) =
            (value(&got, "input_wait_fraction_low"), value(&got, "input_wait_fraction_high"));
        assert!(low < 0.0 && high > 0.0 && high < 0.05, "{low} {high}");
        let slower = [
            summary("train_step", &spread(0.011, 200), 0.0),
            summary("resident_step", &spread(0.010, 200), 0.0),
        ];
        let got = derived(&keras, &slower);
        let f = value(&got, "input_wait_fraction");
        let (low, high) =
            (value(&got, "input_wait_fraction_low"), value(&got, "input_wait_fraction_high"));
        assert!(low > 0.0 && low <= f && f <= high, "{low} {f} {high}");
        // Ten steps give a wider interval than two hundred.
        let few = [
            summary("train_step", &spread(0.011, 10), 0.0),
            summary("resident_step", &spread(0.010, 10), 0.0),
        ];
        let got_few = derived(&keras, &few);
        let width = |g: &[protocol::Figure]| {
            value(g, "input_wait_fraction_high") - value(g, "input_wait_fraction_low")
        };
        assert!(width(&got_few) > width(&got), "{} {}", width(&got_few), width(&got));
    }
}
