//! A span name's calls in a bounded summary: count, inclusive and self
//! time, the part of it that ran beside the stage's main thread, min, max,
//! the first call, and a log-bucket histogram whose quantiles are within
//! 1/128 of a duration that occurred. Summaries merge exactly (the
//! histogram's counts add), so one per thread, process, item or trial
//! becomes one per stage or phase without losing precision.
//!
//! The buckets are those of the Python helper (`stagebench/_spans.py`):
//! below 128 ns one per nanosecond; above, 64 linear buckets per power of
//! two, bucket `e * 64 + m` holding `[(64 + m) << (e - 7), (65 + m) << (e - 7))`.

use serde::{Deserialize, Serialize};

/// How far a quantile read off the buckets may be from a duration that
/// occurred, relative to it: 1/128 (0.8%).
pub const RESOLUTION: f64 = 1.0 / 128.0;

/// The highest bucket key: durations up to 2^63 ns.
pub const MAX_BUCKET: u32 = 64 * 64 + 63;

/// The bucket of a duration in nanoseconds.
pub fn bucket(ns: u64) -> u32 {
    if ns < 128 {
        return ns as u32;
    }
    let e = 64 - ns.leading_zeros();
    (e << 6) + (ns >> (e - 7)) as u32 - 64
}

/// The nanoseconds a bucket stands for: its middle (exact below 128 ns);
/// None for a key no duration has.
pub fn bucket_middle(key: u32) -> Option<f64> {
    if key < 128 {
        return Some(key as f64);
    }
    let (e, m) = (key >> 6, u64::from(key & 63));
    if !(8..=64).contains(&e) {
        return None;
    }
    let lo = ((64 + m) as f64) * 2f64.powi(e as i32 - 7);
    Some(lo * (1.0 + 0.5 / (64 + m) as f64))
}

/// One span name's calls.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SpanSummary {
    pub name: String,
    pub calls: u64,
    /// Inclusive seconds, summed over the calls.
    pub sum_s: f64,
    /// Inclusive less the spans that ran inside each call on its thread.
    pub self_s: f64,
    /// Of `self_s`, what ran beside the stage's main thread: on another
    /// thread, in a forked child or another process that overlapped it, or
    /// in a generator or coroutine (whose time covers its consumer's).
    pub concurrent_s: f64,
    pub min_s: f64,
    pub max_s: f64,
    /// The earliest call's seconds, and when it began (monotonic seconds).
    pub first_s: f64,
    pub first_at: f64,
    /// `(bucket, calls)`, by bucket.
    pub buckets: Vec<(u32, u64)>,
    /// The calls' thread CPU seconds (inclusive, like `sum_s`), where the
    /// helper took them (`STAGEBENCH_SPANS_CPU=1`); None where it did not.
    pub cpu_s: Option<f64>,
}

impl SpanSummary {
    /// A summary of no call yet.
    pub fn new(name: &str) -> SpanSummary {
        SpanSummary { name: name.into(), first_at: f64::INFINITY, ..Default::default() }
    }

    /// One call of `seconds` that began at `at` (monotonic seconds; infinity
    /// when not known), self time its whole time.
    pub fn add_call(&mut self, seconds: f64, at: f64) {
        let key = bucket((seconds * 1e9).round() as u64);
        self.merge(&SpanSummary {
            name: String::new(),
            calls: 1,
            sum_s: seconds,
            self_s: seconds,
            concurrent_s: 0.0,
            min_s: seconds,
            max_s: seconds,
            first_s: seconds,
            first_at: at,
            buckets: vec![(key, 1)],
            cpu_s: None,
        });
    }

    /// Adds `other`'s calls to these.
    pub fn merge(&mut self, other: &SpanSummary) {
        if other.calls == 0 {
            return;
        }
        if self.calls == 0 {
            self.min_s = other.min_s;
            self.max_s = other.max_s;
        } else {
            self.min_s = self.min_s.min(other.min_s);
            self.max_s = self.max_s.max(other.max_s);
        }
        if self.calls == 0 || other.first_at < self.first_at {
            self.first_s = other.first_s;
            self.first_at = other.first_at;
        }
        self.calls += other.calls;
        self.sum_s += other.sum_s;
        self.self_s += other.self_s;
        self.concurrent_s += other.concurrent_s;
        self.cpu_s = match (self.cpu_s, other.cpu_s) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        let (x, y) = (&self.buckets, &other.buckets);
        let mut merged = Vec::with_capacity(x.len() + y.len());
        let (mut i, mut j) = (0, 0);
        while i < x.len() || j < y.len() {
            let take_x = j == y.len() || (i < x.len() && x[i].0 < y[j].0);
            let take_y = i == x.len() || (j < y.len() && y[j].0 < x[i].0);
            if take_x {
                merged.push(x[i]);
                i += 1;
            } else if take_y {
                merged.push(y[j]);
                j += 1;
            } else {
                merged.push((x[i].0, x[i].1 + y[j].1));
                i += 1;
                j += 1;
            }
        }
        self.buckets = merged;
    }

    /// The `p` quantile of the calls' durations, in seconds: the middle of
    /// the bucket holding the call of rank `ceil(p * calls)`, kept inside
    /// `[min, max]`; 0 for no call.
    pub fn quantile(&self, p: f64) -> f64 {
        if self.calls == 0 {
            return 0.0;
        }
        let rank = ((p.clamp(0.0, 1.0) * self.calls as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (key, n) in &self.buckets {
            seen += n;
            if seen >= rank {
                let mid = bucket_middle(*key).unwrap_or(0.0) * 1e-9;
                return mid.clamp(self.min_s, self.max_s);
            }
        }
        self.max_s
    }

    /// Seconds of it on the stage's main thread: its share of the wall.
    pub fn main_s(&self) -> f64 {
        self.self_s - self.concurrent_s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_holds_its_durations_within_1_in_128() {
        for ns in (0..2000u64).chain([12_345, 2_000_000, 50_000_000, 30_000_000_000, u64::MAX / 3])
        {
            let mid = bucket_middle(bucket(ns)).unwrap();
            let err = (mid - ns as f64).abs() / (ns as f64).max(1.0);
            assert!(err <= 1.0 / 128.0 + 1e-12, "{ns}: {mid} ({err})");
        }
        // Buckets are ordered as their durations are.
        let keys: Vec<u32> = (0..100_000u64).step_by(7).map(bucket).collect();
        assert!(keys.windows(2).all(|w| w[0] <= w[1]));
        assert!(bucket(u64::MAX) <= MAX_BUCKET);
        assert_eq!(bucket_middle(127), Some(127.0));
        assert_eq!(bucket_middle(64 * 70), None);
    }

    /// 99 calls of 2 ms and one of 50 ms, the first of 30 ms: each figure
    /// within 1% + 0.3 ms, merged from two halves as from one.
    #[test]
    fn quantiles_of_a_known_list_and_a_merge_that_loses_nothing() {
        let mut calls = vec![0.030];
        calls.extend(std::iter::repeat_n(0.002, 98));
        calls.push(0.050);
        let mut whole = SpanSummary::new("x");
        let (mut a, mut b) = (SpanSummary::new("x"), SpanSummary::new("x"));
        for (i, s) in calls.iter().enumerate() {
            whole.add_call(*s, i as f64);
            match i % 2 {
                0 => a.add_call(*s, i as f64),
                _ => b.add_call(*s, i as f64),
            }
        }
        b.merge(&a);
        assert_eq!(b.buckets, whole.buckets);
        assert_eq!(b.calls, 100);
        let near = |got: f64, want: f64| (got - want).abs() <= want * 0.01 + 0.0003;
        for s in [&whole, &b] {
            assert!(near(s.quantile(0.5), 0.002), "{}", s.quantile(0.5));
            assert!(near(s.quantile(0.95), 0.002));
            assert!(near(s.quantile(0.99), 0.030), "{}", s.quantile(0.99));
            assert!(near(s.quantile(1.0), 0.050));
            assert_eq!(s.max_s, 0.050);
            assert_eq!(s.first_s, 0.030, "the earliest call, whichever half held it");
            assert!((s.sum_s - (0.030 + 0.196 + 0.050)).abs() < 1e-9);
        }
        assert_eq!(SpanSummary::new("none").quantile(0.5), 0.0);
    }
}

/// One stage inside a command, marked by a stage span (`--span
/// MODULE:QUALNAME=NAME:stage`): its wall, and the process's CPU and memory
/// over it, as the Python helper read them at its start and end
/// (`getrusage`, `/proc/self/status`). The worker adds a row
/// [`BEFORE_STAGES`] for what ran before the first (the interpreter's
/// start and imports).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct CommandStage {
    pub name: String,
    /// From the command's start, in seconds.
    pub start_s: f64,
    pub wall_s: f64,
    /// The process's own CPU over the stage (all its threads).
    pub user_s: f64,
    pub sys_s: f64,
    pub rss_start_bytes: u64,
    pub rss_end_bytes: u64,
    /// The process's peak RSS within the stage where `peak_reset` (its
    /// high-water mark was reset at the stage's start through
    /// `/proc/self/clear_refs`); else its lifetime peak at the stage's
    /// end, an upper bound.
    pub peak_rss_bytes: u64,
    pub peak_reset: bool,
}

/// The row of what ran in a command before its first stage.
pub const BEFORE_STAGES: &str = "before_stages";
