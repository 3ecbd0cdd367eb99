//! The formats benchmark dashboards read, named one way for a gate and for
//! a run: Bencher's Metric Format (`--export-bmf`) and github-action-
//! benchmark's `customSmallerIsBetter` (`--export-github-benchmark`).
//! Benchmarks are `STAGE` (a stage's own figures, each its own measure)
//! and `STAGE/span:NAME` (a span's figures, as the measures `time_s`,
//! `cpu_s`, `median_s`, `p95_s` and `calls`). Units: `s` for every `_s`
//! figure, `bytes` for every `_bytes` figure, none for counts.

use crate::modes::Report;
use serde_json::json;

/// One benchmark's value with its bounds, and what github-action-benchmark
/// shows beside it.
pub struct Entry {
    pub stage: String,
    pub figure: String,
    pub value: f64,
    pub lower: f64,
    pub upper: f64,
    pub extra: String,
}

/// A figure's benchmark name and measure (see the module's words).
pub fn name(stage: &str, figure: &str) -> (String, String) {
    const SPAN_MEASURES: [(&str, &str); 5] = [
        ("_cpu_s", "cpu_s"),
        ("_median_s", "median_s"),
        ("_p95_s", "p95_s"),
        ("_n", "calls"),
        ("_s", "time_s"),
    ];
    if let Some(rest) = figure.strip_prefix("span:") {
        for (suffix, measure) in SPAN_MEASURES {
            if let Some(span) = rest.strip_suffix(suffix) {
                return (format!("{stage}/span:{span}"), measure.into());
            }
        }
    }
    (stage.into(), figure.into())
}

/// A figure's unit: seconds, bytes, or none.
pub fn unit(figure: &str) -> &'static str {
    if figure.ends_with("_bytes") {
        "bytes"
    } else if figure.ends_with("_s") {
        "s"
    } else {
        ""
    }
}

/// Bencher's Metric Format: `{"BENCH": {"MEASURE": {"value", "lower_value", "upper_value"}}}`.
pub fn bmf(entries: &[Entry]) -> Vec<u8> {
    let mut out = serde_json::Map::new();
    for e in entries {
        let (bench, measure) = name(&e.stage, &e.figure);
        let slot = out.entry(bench).or_insert_with(|| json!({}));
        slot[measure] = json!({ "value": e.value, "lower_value": e.lower, "upper_value": e.upper });
    }
    pretty(&serde_json::Value::Object(out))
}

/// github-action-benchmark's `customSmallerIsBetter`: `[{"name", "unit",
/// "value", "range", "extra"}]`; a measure other than the time is named
/// after its benchmark (`STAGE/cpu_s`, `STAGE/span:NAME/cpu_s`).
pub fn github(entries: &[Entry]) -> Vec<u8> {
    let rows: Vec<serde_json::Value> = entries
        .iter()
        .map(|e| {
            let (bench, measure) = name(&e.stage, &e.figure);
            let bench = match measure.as_str() {
                "wall_s" | "time_s" => bench,
                _ => format!("{bench}/{measure}"),
            };
            json!({
                "name": bench,
                "unit": unit(&e.figure),
                "value": e.value,
                "range": format!("{:.6}–{:.6}", e.lower, e.upper),
                "extra": e.extra,
            })
        })
        .collect();
    pretty(&serde_json::Value::Array(rows))
}

fn pretty(v: &serde_json::Value) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(v).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

/// A run's benchmarks, stages in plan order: over trials each figure's
/// median with the median's interval, the trials counted and the report's
/// body digest; a stage measured once, its value as its own bounds.
pub fn of_run(r: &Report) -> Vec<Entry> {
    let body = serde_json::to_value(r).expect("report serialises");
    let digest = crate::rundir::report::body_digest(&body);
    let mut out = Vec::new();
    for (key, st) in r.ordered() {
        match r.trials().and_then(|t| t.get(key)) {
            Some(t) => out.extend(t.summary.iter().map(|(figure, s)| Entry {
                stage: key.clone(),
                figure: figure.clone(),
                value: s.median,
                lower: s.median_interval.low,
                upper: s.median_interval.high,
                extra: format!(
                    "trials: {}\ninterval: {}\nreport-body-sha256: {digest}",
                    t.n,
                    s.median_interval.phrase(|x| format!("{x:.6}"))
                ),
            })),
            None => out.extend(st.measured().into_iter().map(|(figure, x)| Entry {
                stage: key.clone(),
                figure,
                value: x,
                lower: x,
                upper: x,
                extra: format!("measured once\nreport-body-sha256: {digest}"),
            })),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(stage: &str, figure: &str, value: f64) -> Entry {
        let (lower, upper) = (value * 0.9, value * 1.1);
        Entry { stage: stage.into(), figure: figure.into(), value, lower, upper, extra: "x".into() }
    }

    #[test]
    fn benchmarks_are_named_by_stage_and_span_with_their_measures_and_units() {
        assert_eq!(name("train", "wall_s"), ("train".into(), "wall_s".into()));
        assert_eq!(name("cmd", "span:step_s"), ("cmd/span:step".into(), "time_s".into()));
        assert_eq!(name("cmd", "span:step_cpu_s"), ("cmd/span:step".into(), "cpu_s".into()));
        assert_eq!(name("cmd", "span:step_n"), ("cmd/span:step".into(), "calls".into()));
        assert_eq!((unit("wall_s"), unit("peak_rss_bytes"), unit("span:x_n")), ("s", "bytes", ""));
        let entries = [entry("cmd", "span:step_s", 2.0), entry("cmd", "span:step_cpu_s", 1.5)];
        let b: serde_json::Value = serde_json::from_slice(&bmf(&entries)).unwrap();
        assert_eq!(b["cmd/span:step"]["time_s"]["value"], 2.0);
        assert_eq!(b["cmd/span:step"]["cpu_s"]["lower_value"], 1.35);
        let g: serde_json::Value = serde_json::from_slice(&github(&entries)).unwrap();
        let names: Vec<&str> =
            g.as_array().unwrap().iter().filter_map(|x| x["name"].as_str()).collect();
        assert_eq!(names, ["cmd/span:step", "cmd/span:step/cpu_s"]);
    }
}
