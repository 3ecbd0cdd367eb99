//! A stage's spans as its record keeps them: per name the calls and their
//! distribution, inclusive, self and concurrent time; per stage the time in
//! spans (the main thread's, each second once), outside them and beside
//! them. Built from the workers' [`SpanSummary`]s, merged over the
//! measurements a record comes from (one job, a phase's items, the trials),
//! so a pooled distribution loses nothing.

use crate::fmt::duration;
use protocol::SpanSummary;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One span name's calls in a stage.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SpanRecord {
    pub calls: u64,
    /// Inclusive seconds over the calls.
    pub sum_s: f64,
    pub first_s: f64,
    pub median_s: f64,
    pub p95_s: f64,
    pub p99_s: f64,
    pub max_s: f64,
    /// Inclusive less the spans that ran inside each call on its thread.
    pub self_s: f64,
    /// Of `self_s`, what ran beside the main thread (other threads, forked
    /// children, overlapping processes, generators and coroutines).
    pub concurrent_s: f64,
    /// `self_s - concurrent_s` over the wall it was measured in: its
    /// share of the wall. The shares of a stage sum to at most 1.
    pub share: f64,
    /// The calls' durations as the helper counted them, `(bucket, calls)`
    /// by bucket (`protocol::spans::bucket`: 64 per power of two, each
    /// within 1/128 of its durations): report.html's histograms. Absent
    /// in reports from before they were kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub buckets: Vec<(u32, u64)>,
}

/// A stage's time against its spans.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SpanTotals {
    /// How many measurements were merged (a phase's items, the trials).
    pub measurements: u64,
    /// The wall the spans were measured in (summed over the measurements).
    pub wall_s: f64,
    /// The main thread's top-level spans, each second once.
    pub in_spans_s: f64,
    /// `wall_s - in_spans_s`, never clamped.
    pub outside_s: f64,
    /// Time in spans beside the main thread: its own column, no share of
    /// the wall.
    pub concurrent_s: f64,
}

/// The spans of the measurements `(wall seconds, summaries)` merged: per
/// name (in order of first appearance, kept by the map's key order) and
/// the stage's totals; None when no span was reported.
pub fn records<'a>(
    measured: impl IntoIterator<Item = (f64, &'a [SpanSummary])>,
) -> Option<(BTreeMap<String, SpanRecord>, SpanTotals)> {
    let mut pooled = Pooled::default();
    for (wall_s, spans) in measured {
        pooled.add(wall_s, spans);
    }
    pooled.records()
}

/// Measurements' spans merged as they come, in memory bounded by the span
/// names (a summary merges exactly): a phase of 10⁶ items folds each
/// item's spans in and drops them.
#[derive(Clone, Debug, Default)]
pub struct Pooled {
    merged: Vec<SpanSummary>,
    wall: f64,
    count: u64,
}

impl Pooled {
    /// One measurement of `wall_s` seconds and its spans.
    pub fn add(&mut self, wall_s: f64, spans: &[SpanSummary]) {
        self.wall += wall_s;
        self.count += 1;
        for s in spans {
            match self.merged.iter_mut().find(|m| m.name == s.name) {
                Some(m) => m.merge(s),
                None => self.merged.push(s.clone()),
            }
        }
    }

    /// Another pool's measurements, after these.
    pub fn merge(&mut self, other: &Pooled) {
        self.wall += other.wall;
        self.count += other.count;
        for s in &other.merged {
            match self.merged.iter_mut().find(|m| m.name == s.name) {
                Some(m) => m.merge(s),
                None => self.merged.push(s.clone()),
            }
        }
    }

    /// Each span name's summary so far.
    pub fn spans(&self) -> &[SpanSummary] {
        &self.merged
    }

    /// Per name and the totals; None when no span was reported.
    pub fn records(&self) -> Option<(BTreeMap<String, SpanRecord>, SpanTotals)> {
        let (merged, wall, count) = (&self.merged, self.wall, self.count);
        if merged.is_empty() {
            return None;
        }
        let in_spans: f64 = merged.iter().map(SpanSummary::main_s).sum();
        let totals = SpanTotals {
            measurements: count,
            wall_s: wall,
            in_spans_s: in_spans,
            outside_s: wall - in_spans,
            concurrent_s: merged.iter().map(|s| s.concurrent_s).sum(),
        };
        let by_name = merged
            .iter()
            .map(|s| {
                let rec = SpanRecord {
                    calls: s.calls,
                    sum_s: s.sum_s,
                    first_s: s.first_s,
                    median_s: s.quantile(0.5),
                    p95_s: s.quantile(0.95),
                    p99_s: s.quantile(0.99),
                    max_s: s.max_s,
                    self_s: s.self_s,
                    concurrent_s: s.concurrent_s,
                    share: if wall > 0.0 { s.main_s() / wall } else { 0.0 },
                    buckets: s.buckets.clone(),
                };
                (s.name.clone(), rec)
            })
            .collect();
        Some((by_name, totals))
    }
}

/// Whether figure `key` is a span's sum, `span:NAME_s`, and NAME: only
/// where `span:NAME_n` is a figure too (`has`), so `span:load_median_s`
/// is the median of `load`, not the sum of a span `load_median`, unless
/// the stage has one.
pub fn sum_name(key: &str, has: impl Fn(&str) -> bool) -> Option<&str> {
    let name = key.strip_prefix("span:")?.strip_suffix("_s")?;
    has(&format!("span:{name}_n")).then_some(name)
}

/// Spans by self time on the main thread, largest first, then concurrent.
pub fn by_self(spans: &BTreeMap<String, SpanRecord>) -> Vec<(&String, &SpanRecord)> {
    let mut v: Vec<_> = spans.iter().collect();
    let own = |r: &SpanRecord| r.self_s - r.concurrent_s;
    v.sort_by(|a, b| {
        own(b.1).total_cmp(&own(a.1)).then(b.1.concurrent_s.total_cmp(&a.1.concurrent_s))
    });
    v
}

/// The stage's totals as a person reads them.
pub fn totals_line(t: &SpanTotals) -> String {
    let pct = |x: f64| match t.wall_s > 0.0 {
        true => format!("{:.0}%", 100.0 * x / t.wall_s),
        false => "–".into(),
    };
    let over = match t.measurements {
        0 | 1 => String::new(),
        n => format!(" (sums over {n} measurements, {} of wall)", duration(t.wall_s)),
    };
    format!(
        "in spans {} ({}), outside any span {} ({}), concurrent {} (beside the main thread, no share of the wall){over}",
        duration(t.in_spans_s),
        pct(t.in_spans_s),
        duration(t.outside_s),
        pct(t.outside_s),
        duration(t.concurrent_s),
    )
}

/// A command's own stages (`--span …:stage`) as a table's cells: stage,
/// wall, CPU, peak RSS, RSS at its end, and how the peak was read. The
/// console and summary.md lay out the same cells.
pub fn command_stage_cells(rows: &[protocol::CommandStage]) -> Vec<[String; 6]> {
    rows.iter()
        .map(|r| {
            [
                r.name.clone(),
                format!("{:.3}", r.wall_s),
                format!("{:.3}", r.user_s + r.sys_s),
                crate::fmt::mib(r.peak_rss_bytes),
                crate::fmt::mib(r.rss_end_bytes),
                match (r.name == protocol::spans::BEFORE_STAGES, r.peak_reset) {
                    (true, _) => "from the process's start".into(),
                    (false, true) => "within the stage".into(),
                    (false, false) => "lifetime (no reset here)".into(),
                },
            ]
        })
        .collect()
}

/// The heading of [`command_stage_cells`]' columns.
pub const COMMAND_STAGE_COLUMNS: [&str; 6] =
    ["stage", "wall s", "cpu s", "peak RSS", "RSS at end", "peak"];

/// One stage's calls of each span, by name, in the order they began:
/// `[start_s, seconds]`, the start from the stage's own start. What a
/// campaign compares call by call (the k-th `search_fit` of a resume
/// against the k-th of the cold run); a name called more than
/// [`MAX_CALLS`] times in the stage is left out, read by its sums.
pub type Calls = BTreeMap<String, Vec<[f64; 2]>>;

/// Most calls of one name a stage's [`Calls`] keep.
pub const MAX_CALLS: usize = 64;

/// [`Calls`] from a stage's slices (name, start from the stage's start,
/// seconds), in any order.
pub fn calls<'a>(slices: impl IntoIterator<Item = (&'a str, f64, f64)>) -> Calls {
    let mut by: Calls = BTreeMap::new();
    for (name, start, secs) in slices {
        by.entry(name.to_string()).or_default().push([start, secs]);
    }
    by.retain(|_, v| v.len() <= MAX_CALLS);
    for v in by.values_mut() {
        v.sort_by(|a, b| a[0].total_cmp(&b[0]));
    }
    by
}

/// [`calls`] of a worker's slices (nanoseconds from the stage's start).
pub fn calls_of_slices(slices: &[protocol::Slice]) -> Calls {
    calls(slices.iter().map(|s| (s.name.as_str(), s.start_ns as f64 / 1e9, s.dur_ns as f64 / 1e9)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(name: &str, calls: &[f64], own: f64, concurrent: f64) -> SpanSummary {
        let mut s = SpanSummary::new(name);
        for (i, c) in calls.iter().enumerate() {
            s.add_call(*c, i as f64);
        }
        s.self_s = own;
        s.concurrent_s = concurrent;
        s
    }

    /// The ground truth: run 2.00 s holds outer 1.00 s, which calls inner
    /// twice at 0.40 s; two threads run worker 0.50 s at once; 0.24 s is
    /// outside. Shares from self time sum to the time in spans, at most 1.
    #[test]
    fn nested_and_concurrent_spans_are_counted_once() {
        let spans = [
            summary("run", &[2.0], 1.0, 0.0),
            summary("outer", &[1.0], 0.2, 0.0),
            summary("inner", &[0.4, 0.4], 0.8, 0.0),
            summary("worker", &[0.5, 0.5], 1.0, 1.0),
        ];
        let (by, t) = records([(2.24, &spans[..])]).unwrap();
        assert!((t.in_spans_s - 2.0).abs() < 1e-9, "{t:?}");
        assert!((t.outside_s - 0.24).abs() < 1e-9, "{t:?}");
        assert!((t.concurrent_s - 1.0).abs() < 1e-9);
        let shares: f64 = by.values().map(|r| r.share).sum();
        assert!((shares - 2.0 / 2.24).abs() < 1e-9 && shares <= 1.0, "{shares}");
        assert_eq!(by["worker"].share, 0.0);
        assert_eq!(by["inner"].calls, 2);
        // A double count (shares from inclusive time) would be 5 / 2.24.
        let inclusive: f64 = by.values().map(|r| r.sum_s).sum();
        assert!(inclusive / 2.24 > 1.0);
        assert!(records([(1.0, &[][..])]).is_none());
        assert!(!totals_line(&t).contains("sums over"), "{}", totals_line(&t));
        let (_, two) = records([(2.24, &spans[..]), (2.24, &spans[..])]).unwrap();
        assert_eq!(two.measurements, 2);
        assert!(totals_line(&two).ends_with("(sums over 2 measurements, 4.480 s of wall)"));
    }

    #[test]
    fn a_sum_figure_is_told_from_a_distribution_figure() {
        let figs = ["span:load_n", "span:load_median_n"];
        let has = |k: &str| figs.contains(&k);
        assert_eq!(sum_name("span:load_s", has), Some("load"));
        assert_eq!(sum_name("span:load_median_s", has), Some("load_median"));
        assert_eq!(sum_name("span:load_p95_s", has), None);
        assert_eq!(sum_name("wall_s", has), None);
    }
}
