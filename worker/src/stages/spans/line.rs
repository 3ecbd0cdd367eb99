//! One line of a spans file: its grammar and its checks (names, numbers,
//! an aggregate line's tallies, a runtime line's versions).

use super::MAX_NAME;
use protocol::SpanSummary;
use std::collections::BTreeMap;

/// One line of the file.
#[derive(Debug, PartialEq)]
pub enum Line {
    Span {
        name: String,
        seconds: f64,
        start: Option<f64>,
    },
    Progress(f64),
    /// A thread's tally since its last line.
    Agg(Box<Agg>),
    /// The `--span` bootstrap wrapped this target (`MODULE:QUALNAME`, or
    /// `preset:NAME`): it is not among the targets that never matched.
    Wrapped(Wrapped),
    /// The bootstrap left this target as it was, and why.
    Refused(String, String),
    /// The Python helper at its process's exit: the interpreter's version
    /// and the distributions whose modules were imported.
    Runtime(PythonRuntime),
    /// A stage span ended (`--span …:stage`).
    Stage(Box<StageLine>),
}

/// A target the bootstrap wrapped.
#[derive(Debug, PartialEq, Clone)]
pub struct Wrapped {
    pub target: String,
    /// The span name it records under, when it said.
    pub span: Option<String>,
    /// Its attribute was replaced (not the function in place): a call
    /// through a reference taken before the wrap is not counted, so its
    /// count is a lower bound.
    pub at_least: bool,
}

/// One `{"stage": …}` line: a stage of the command, with the process's CPU
/// and memory at its start and end. Times on the monotonic clock in
/// nanoseconds, CPU in seconds, memory in bytes.
#[derive(Debug, PartialEq, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StageLine {
    pub name: String,
    pub pid: u32,
    pub start: u64,
    pub ns: u64,
    /// User and system CPU at the start, then at the end.
    pub cpu: [f64; 4],
    /// RSS at the start and at the end.
    pub rss: [u64; 2],
    /// The peak before the stage (before any reset).
    pub hwm: u64,
    /// The peak at the end: the stage's own where `reset`.
    pub peak: u64,
    pub reset: bool,
}

impl StageLine {
    fn check(&self) -> Result<(), BadLine> {
        check_name(&self.name)?;
        let [u0, s0, u1, s1] = self.cpu;
        let ok = self.cpu.iter().all(|c| c.is_finite() && *c >= 0.0) && u1 >= u0 && s1 >= s0;
        match ok {
            true => Ok(()),
            false => Err(BadLine(format!(
                "stage '{}': its CPU times are not a start and a later end",
                self.name
            ))),
        }
    }

    /// The stage as a measurement carries it, `start` seconds from the
    /// command's start at `spawned` (monotonic seconds).
    pub fn stage(&self, spawned: f64) -> protocol::CommandStage {
        let [u0, s0, u1, s1] = self.cpu;
        protocol::CommandStage {
            name: self.name.clone(),
            start_s: (self.start as f64 * 1e-9 - spawned).max(0.0),
            wall_s: self.ns as f64 * 1e-9,
            user_s: u1 - u0,
            sys_s: s1 - s0,
            rss_start_bytes: self.rss[0],
            rss_end_bytes: self.rss[1],
            peak_rss_bytes: self.peak,
            peak_reset: self.reset,
        }
    }
}

/// What one `{"runtime": …}` line says.
#[derive(Debug, Default, PartialEq, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PythonRuntime {
    pub python: String,
    pub distributions: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    pub devices: Vec<String>,
    #[serde(default)]
    pub sources: std::collections::BTreeMap<String, String>,
}

/// Most distributions one runtime line may name.
pub const MAX_DISTRIBUTIONS: usize = 2000;

impl PythonRuntime {
    /// Completes what the worker read before the stage (`runtime`) with
    /// what the helper said.
    pub fn fill(self, runtime: &mut protocol::Runtime) {
        runtime.python = Some(self.python);
        runtime.distributions = self.distributions.into_iter().collect();
        runtime.devices = self.devices;
        runtime.sources = self.sources.into_iter().collect();
    }

    /// Versions and names of `A-Z a-z 0-9 _ . + ! -`, 1 to 100 of them: what
    /// package metadata holds, never a path.
    fn check(&self) -> Result<(), BadLine> {
        let safe = |s: &str| {
            !s.is_empty()
                && s.len() <= 100
                && s.chars().all(|c| c.is_ascii_alphanumeric() || "_.+!-".contains(c))
        };
        let shorten = |s: &str| s.chars().take(100).collect::<String>();
        if !safe(&self.python) {
            return Err(BadLine(format!(
                "runtime python '{}' is not a version",
                shorten(&self.python)
            )));
        }
        if self.distributions.len() > MAX_DISTRIBUTIONS {
            return Err(BadLine(format!(
                "runtime names more than {MAX_DISTRIBUTIONS} distributions"
            )));
        }
        if self.devices.len() > 64 || self.sources.len() > MAX_DISTRIBUTIONS {
            return Err(BadLine(format!(
                "runtime names more than 64 devices or {MAX_DISTRIBUTIONS} sources"
            )));
        }
        for d in &self.devices {
            let ok = !d.is_empty()
                && d.len() <= 100
                && d.chars().all(|c| c.is_ascii_alphanumeric() || "_.+-: ()".contains(c));
            if !ok {
                return Err(BadLine(format!(
                    "runtime device '{}' must be 1 to 100 of A-Z a-z 0-9 _ . + - : ( ) and spaces",
                    shorten(d)
                )));
            }
        }
        for (module, sha) in &self.sources {
            let dotted = !module.is_empty()
                && module.len() <= 200
                && module.split('.').all(|p| {
                    p.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_')
                        && p.chars().all(|c| c.is_alphanumeric() || c == '_')
                });
            let hex = sha.len() == 64 && sha.chars().all(|c| c.is_ascii_hexdigit());
            if !dotted || !hex {
                return Err(BadLine(format!(
                    "runtime source '{}' must be a module name with a SHA-256",
                    shorten(module)
                )));
            }
        }
        for (name, version) in &self.distributions {
            if !safe(name) || !safe(version) {
                return Err(BadLine(format!(
                    "runtime distribution '{}' '{}' must be 1 to 100 of A-Z a-z 0-9 _ . + ! -",
                    shorten(name),
                    shorten(version)
                )));
            }
        }
        Ok(())
    }
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    name: Option<String>,
    seconds: Option<f64>,
    start: Option<f64>,
    progress: Option<f64>,
    wrapped: Option<String>,
    span: Option<String>,
    at_least: Option<bool>,
    refused: Option<String>,
    why: Option<String>,
    runtime: Option<PythonRuntime>,
    agg: Option<Box<Agg>>,
    stage: Option<Box<StageLine>>,
}

/// One slice of an `agg` line.
#[derive(Debug, PartialEq)]
pub struct LineSlice {
    pub name: String,
    pub start: u64,
    pub ns: u64,
    pub beside: bool,
}

impl<'de> serde::Deserialize<'de> for LineSlice {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Flagged(String, u64, u64, u8),
            Bare(String, u64, u64),
        }
        Ok(match Raw::deserialize(d)? {
            Raw::Flagged(name, start, ns, beside) => {
                LineSlice { name, start, ns, beside: beside != 0 }
            }
            Raw::Bare(name, start, ns) => LineSlice { name, start, ns, beside: false },
        })
    }
}

/// One `{"agg": …}` line: what one thread of a process tallied since its
/// last line. Durations in nanoseconds, times on the monotonic clock.
#[derive(Debug, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Agg {
    pub pid: u32,
    /// The process was forked from one that tallied spans.
    pub forked: bool,
    /// The line is the main thread's.
    pub main: bool,
    /// The main thread's top-level nanoseconds, its first top-level start
    /// and its last top-level end (0 when it has none).
    pub top: [u64; 3],
    pub spans: BTreeMap<String, AggSpan>,
    /// Spans with their start, `[name, start, nanoseconds, beside]`:
    /// `beside` 1 for a span of a thread other than a process's main one
    /// or of a forked child (slices are kept per process, so the line's
    /// own `main` does not say it). A helper older than the flag wrote
    /// three elements: such a slice is placed by its times alone.
    pub slices: Vec<LineSlice>,
    /// Spans not among `slices`.
    pub unsliced: u64,
}

/// One span name's part of an [`Agg`] line.
#[derive(Debug, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AggSpan {
    pub n: u64,
    pub sum: u64,
    #[serde(rename = "self")]
    pub own: u64,
    /// Of `self`, what ran beside the thread's own spans (a generator's).
    pub beside: u64,
    pub min: u64,
    pub max: u64,
    pub first: u64,
    pub at: u64,
    /// Bucket, count, bucket, count, …
    pub h: Vec<u64>,
    /// The calls' thread CPU nanoseconds, where the helper took them
    /// (`STAGEBENCH_SPANS_CPU=1`).
    #[serde(default)]
    pub cpu: Option<u64>,
}

fn check_name(name: &str) -> Result<(), BadLine> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME
        && name.chars().all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c));
    match ok {
        true => Ok(()),
        false => Err(BadLine(format!(
            "span name '{}' must be 1 to {MAX_NAME} of A-Z a-z 0-9 _ . -",
            name.chars().take(MAX_NAME).collect::<String>()
        ))),
    }
}

impl Agg {
    /// Every name valid, and every tally one that calls could make.
    fn check(&self) -> Result<(), BadLine> {
        for (name, s) in &self.spans {
            check_name(name)?;
            let fail = |why: &str| Err(BadLine(format!("agg span '{name}': {why}")));
            if s.n == 0 {
                return fail("no calls");
            }
            if s.own > s.sum || s.beside > s.own || s.min > s.max || s.max > s.sum {
                return fail("self, beside, min, max and sum disagree");
            }
            if s.h.len() % 2 != 0 {
                return fail("its histogram is not bucket, count pairs");
            }
            let mut total = 0u64;
            for pair in s.h.chunks(2) {
                if pair[0] > u64::from(protocol::spans::MAX_BUCKET) {
                    return fail("a histogram bucket is out of range");
                }
                total = total.saturating_add(pair[1]);
            }
            if total != s.n {
                return fail("its histogram does not hold its calls");
            }
        }
        for LineSlice { name, .. } in &self.slices {
            check_name(name)?;
        }
        Ok(())
    }

    /// A span's part as a summary (concurrent: all of its self time when
    /// the line is not the main thread's, else what ran beside).
    pub(super) fn summary(&self, name: &str, s: &AggSpan) -> SpanSummary {
        let sec = |ns: u64| ns as f64 * 1e-9;
        let mut buckets: Vec<(u32, u64)> =
            s.h.chunks(2).map(|p| (p[0] as u32, p[1])).filter(|p| p.1 > 0).collect();
        buckets.sort_unstable();
        buckets.dedup_by(|b, a| {
            let same = a.0 == b.0;
            if same {
                a.1 += b.1;
            }
            same
        });
        SpanSummary {
            name: name.into(),
            calls: s.n,
            sum_s: sec(s.sum),
            self_s: sec(s.own),
            concurrent_s: match self.main && !self.forked {
                true => sec(s.beside),
                false => sec(s.own),
            },
            min_s: sec(s.min),
            max_s: sec(s.max),
            first_s: sec(s.first),
            first_at: sec(s.at),
            buckets,
            cpu_s: s.cpu.map(sec),
        }
    }
}

/// Why one line of a spans file is refused.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadLine(pub String);

/// One line, checked; None for a blank one.
pub fn parse_line(line: &str) -> Result<Option<Line>, BadLine> {
    if line.trim().is_empty() {
        return Ok(None);
    }
    let shape = "{\"name\": …, \"seconds\": …} or {\"progress\": …}";
    let raw: Raw =
        serde_json::from_str(line).map_err(|e| BadLine(format!("not an object {shape}: {e}")))?;
    // A stage or runtime line holds that key alone.
    let only_key = |raw: &Raw| {
        let keys = [
            raw.name.is_some(),
            raw.seconds.is_some(),
            raw.start.is_some(),
            raw.progress.is_some(),
            raw.wrapped.is_some(),
            raw.span.is_some(),
            raw.at_least.is_some(),
            raw.refused.is_some(),
            raw.why.is_some(),
            raw.agg.is_some(),
            raw.runtime.is_some(),
            raw.stage.is_some(),
        ];
        keys.iter().filter(|k| **k).count() == 1
    };
    if raw.stage.is_some() || raw.runtime.is_some() {
        if !only_key(&raw) {
            return Err(BadLine(format!("not an object {shape}")));
        }
        if let Some(stage) = raw.stage {
            stage.check()?;
            return Ok(Some(Line::Stage(stage)));
        }
        if let Some(runtime) = raw.runtime {
            runtime.check()?;
            return Ok(Some(Line::Runtime(runtime)));
        }
    }
    let set = [
        raw.name.is_some(),
        raw.seconds.is_some() || raw.start.is_some(),
        raw.progress.is_some(),
        raw.wrapped.is_some() || raw.span.is_some() || raw.at_least.is_some(),
        raw.refused.is_some() || raw.why.is_some(),
        raw.agg.is_some(),
    ];
    let only =
        |n: usize| set.iter().enumerate().all(|(i, on)| *on == (i == n || (n == 0 && i == 1)));
    if let (Some(agg), true) = (&raw.agg, only(5)) {
        agg.check()?;
        return Ok(raw.agg.map(Line::Agg));
    }
    if let (Some(w), true) = (&raw.wrapped, only(3)) {
        if let Some(name) = &raw.span {
            check_name(name)?;
        }
        let target = w.chars().take(256).collect();
        let at_least = raw.at_least.unwrap_or(false);
        return Ok(Some(Line::Wrapped(Wrapped { target, span: raw.span, at_least })));
    }
    if let (Some(t), Some(why)) = (&raw.refused, &raw.why) {
        if only(4) {
            let t = t.chars().take(256).collect();
            return Ok(Some(Line::Refused(t, why.chars().take(200).collect())));
        }
    }
    if let (Some(p), true) = (raw.progress, only(2)) {
        if !(0.0..=1.0).contains(&p) {
            return Err(BadLine(format!("progress {p} is not between 0 and 1")));
        }
        return Ok(Some(Line::Progress(p)));
    }
    match raw {
        Raw { name: Some(name), seconds: Some(seconds), start, .. } if only(0) => {
            check_name(&name)?;
            if !(seconds.is_finite() && seconds >= 0.0) {
                return Err(BadLine(format!(
                    "seconds {seconds} is not a finite non-negative number"
                )));
            }
            if let Some(t) = start.filter(|t| !(t.is_finite() && *t >= 0.0)) {
                return Err(BadLine(format!("start {t} is not a finite non-negative number")));
            }
            Ok(Some(Line::Span { name, seconds, start }))
        }
        _ => Err(BadLine(format!("not an object {shape}"))),
    }
}
