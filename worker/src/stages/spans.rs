//! What a command reports about itself. The worker creates a fresh, private
//! file and names it in `STAGEBENCH_SPANS`; the command appends one JSON
//! object per line:
//!
//! - `{"agg": {...}}`: what one thread of a process tallied since its last
//!   line (the `stagebench` Python helper writes these, at most once a
//!   second, at exit, and at once after a span named in
//!   `STAGEBENCH_SPANS_EAGER`): per span name the calls, inclusive, self
//!   and beside nanoseconds, min, max, the first call and its start, and a
//!   histogram ([`protocol::spans`]); the main thread's top-level time and
//!   its window; up to 4,096 spans with their start, and how many more;
//! - `{"name": "adapt_images", "seconds": 54.7}`: one span, written by a
//!   program of its own (not the helper); optionally with `"start": 1234.5`,
//!   when it began on the machine's monotonic clock. Such a span is taken
//!   as a top-level span of the program's main thread;
//! - `{"progress": 0.4}`: the fraction of the stage done so far;
//! - `{"wrapped": T, "span": NAME}` and `{"refused": T, "why": ...}`: what
//!   the `--span` bootstrap made of target T; `{"runtime": ...}`: the
//!   helper's interpreter and libraries.
//!
//! The worker follows the file while the command runs (progress reaches the
//! coordinator, and a kill point is checked against what the file says),
//! then reads the rest and removes the file. Nothing is kept per call, so no
//! count of calls is too many: the file's lines are read as they come, and
//! only a line longer than [`MAX_LINE`] fails the stage. Per span name the
//! stage reports a [`SpanSummary`] and the figures `span:NAME_s` (the sum),
//! `span:NAME_n` (calls), `span:NAME_median_s` and `span:NAME_p95_s`, in
//! order of first appearance.
//!
//! Counted once: a span's self time is its time less the spans that ran
//! inside it on its thread. What ran on the main thread of the stage's
//! first process is its share of the wall; what ran on another thread, in
//! a forked child, in a generator, or in a process whose spans overlapped
//! an earlier one's, is `concurrent`. A line that breaks the format fails
//! the stage with its line number.

use super::{StageError, figure};
use protocol::{Figure, SpanSummary};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The variable naming the span names whose every end the helper writes
/// at once (a kill point's), comma-separated.
pub const EAGER: &str = "STAGEBENCH_SPANS_EAGER";
/// Longest line a spans file may hold (an aggregate line of many names).
pub const MAX_LINE: usize = 64 << 20;
/// Most bytes read from the file at once.
const CHUNK: u64 = 8 << 20;
/// Longest span name.
pub const MAX_NAME: usize = 64;

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
    /// `preset:NAME`): it is not among the targets that never matched; the
    /// span name it records under, when it said.
    Wrapped(String, Option<String>),
    /// The bootstrap left this target as it was, and why.
    Refused(String, String),
    /// The Python helper at its process's exit: the interpreter's version
    /// and the distributions whose modules were imported.
    Runtime(PythonRuntime),
}

/// What one `{"runtime": …}` line says.
#[derive(Debug, Default, PartialEq, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PythonRuntime {
    pub python: String,
    pub distributions: std::collections::BTreeMap<String, String>,
}

/// Most distributions one runtime line may name.
pub const MAX_DISTRIBUTIONS: usize = 2000;

impl PythonRuntime {
    /// Completes what the worker read before the stage (`runtime`) with
    /// what the helper said.
    pub fn fill(self, runtime: &mut protocol::Runtime) {
        runtime.python = Some(self.python);
        runtime.distributions = self.distributions.into_iter().collect();
    }

    /// Versions and names of `A-Z a-z 0-9 _ . + ! -`, 1 to 100 of them: what
    /// package metadata holds, never a path.
    fn check(&self) -> Result<(), String> {
        let safe = |s: &str| {
            !s.is_empty()
                && s.len() <= 100
                && s.chars().all(|c| c.is_ascii_alphanumeric() || "_.+!-".contains(c))
        };
        let shorten = |s: &str| s.chars().take(100).collect::<String>();
        if !safe(&self.python) {
            return Err(format!("runtime python '{}' is not a version", shorten(&self.python)));
        }
        if self.distributions.len() > MAX_DISTRIBUTIONS {
            return Err(format!("runtime names more than {MAX_DISTRIBUTIONS} distributions"));
        }
        for (name, version) in &self.distributions {
            if !safe(name) || !safe(version) {
                return Err(format!(
                    "runtime distribution '{}' '{}' must be 1 to 100 of A-Z a-z 0-9 _ . + ! -",
                    shorten(name),
                    shorten(version)
                ));
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
    refused: Option<String>,
    why: Option<String>,
    runtime: Option<PythonRuntime>,
    agg: Option<Box<Agg>>,
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
    /// Spans with their start, `[name, start, nanoseconds]`.
    pub slices: Vec<(String, u64, u64)>,
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
}

fn check_name(name: &str) -> Result<(), BadLine> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME
        && name.chars().all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c));
    match ok {
        true => Ok(()),
        false => Err(format!(
            "span name '{}' must be 1 to {MAX_NAME} of A-Z a-z 0-9 _ . -",
            name.chars().take(MAX_NAME).collect::<String>()
        )
        .into()),
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
        for (name, _, _) in &self.slices {
            check_name(name)?;
        }
        Ok(())
    }

    /// A span's part as a summary (concurrent: all of its self time when
    /// the line is not the main thread's, else what ran beside).
    fn summary(&self, name: &str, s: &AggSpan) -> SpanSummary {
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
        }
    }
}

/// Why one line of a spans file is refused.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadLine(pub String);

impl From<String> for BadLine {
    fn from(why: String) -> Self {
        BadLine(why)
    }
}

/// Why a command's spans file fails its stage.
#[derive(Debug, thiserror::Error)]
pub enum SpansError {
    #[error("spans line {0}: {1}")]
    Line(usize, BadLine),
    #[error("reading the spans file: {0}")]
    Read(std::io::Error),
    #[error("the command's spans file has a line longer than {MAX_LINE} bytes")]
    TooLarge,
    #[error("span '{0}': its seconds add up to more than the largest number")]
    Overflow(String),
    #[error("the command's spans file is not UTF-8")]
    NotUtf8,
}

/// One line, checked; None for a blank one.
pub fn parse_line(line: &str) -> Result<Option<Line>, BadLine> {
    if line.trim().is_empty() {
        return Ok(None);
    }
    let shape = "{\"name\": …, \"seconds\": …} or {\"progress\": …}";
    let raw: Raw = serde_json::from_str(line).map_err(|e| format!("not an object {shape}: {e}"))?;
    if let Some(runtime) = raw.runtime {
        let alone = raw.name.is_none()
            && raw.seconds.is_none()
            && raw.start.is_none()
            && raw.progress.is_none()
            && raw.wrapped.is_none()
            && raw.span.is_none()
            && raw.refused.is_none()
            && raw.agg.is_none();
        if !alone {
            return Err(format!("not an object {shape}").into());
        }
        runtime.check()?;
        return Ok(Some(Line::Runtime(runtime)));
    }
    let set = [
        raw.name.is_some(),
        raw.seconds.is_some() || raw.start.is_some(),
        raw.progress.is_some(),
        raw.wrapped.is_some() || raw.span.is_some(),
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
        return Ok(Some(Line::Wrapped(w.chars().take(256).collect(), raw.span)));
    }
    if let (Some(t), Some(why)) = (&raw.refused, &raw.why) {
        if only(4) {
            let t = t.chars().take(256).collect();
            return Ok(Some(Line::Refused(t, why.chars().take(200).collect())));
        }
    }
    if let (Some(p), true) = (raw.progress, only(2)) {
        if !(0.0..=1.0).contains(&p) {
            return Err(format!("progress {p} is not between 0 and 1").into());
        }
        return Ok(Some(Line::Progress(p)));
    }
    match raw {
        Raw { name: Some(name), seconds: Some(seconds), start, .. } if only(0) => {
            check_name(&name)?;
            if !(seconds.is_finite() && seconds >= 0.0) {
                return Err(format!("seconds {seconds} is not a finite non-negative number").into());
            }
            if let Some(t) = start.filter(|t| !(t.is_finite() && *t >= 0.0)) {
                return Err(format!("start {t} is not a finite non-negative number").into());
            }
            Ok(Some(Line::Span { name, seconds, start }))
        }
        _ => Err(format!("not an object {shape}").into()),
    }
}

/// A span that gave its start: name, start on the monotonic clock, seconds.
pub type Timed = (String, f64, f64);

/// A process that tallied spans on its main thread: the window of its
/// top-level spans (monotonic seconds) and each name's seconds there.
#[derive(Default)]
struct MainThread {
    from: f64,
    to: f64,
    seconds: BTreeMap<String, f64>,
}

/// What the lines so far add up to.
#[derive(Default)]
pub struct Tally {
    /// Per name in order of first appearance; `concurrent_s` is final only
    /// after [`Tally::settle`].
    pub spans: Vec<SpanSummary>,
    /// The same, since the last [`Tally::take_recent`] (an item's).
    recent: Vec<SpanSummary>,
    /// Main threads by process (0: lines a program wrote itself).
    mains: BTreeMap<u32, MainThread>,
    /// The last progress reported.
    pub progress: Option<f64>,
    /// Spans with a start, the first `MAX_SLICES`; and how many more.
    pub timed: Vec<Timed>,
    pub untimed: u64,
    /// `--span` targets the bootstrap wrapped (see [`Line::Wrapped`]), with
    /// the span each records under, where it said.
    pub wrapped: BTreeMap<String, Option<String>>,
    /// Targets it refused, and why.
    pub refused: BTreeMap<String, String>,
    /// What the helper said at exit: the first process's interpreter, and
    /// the distributions every process that said anything imported.
    pub runtime: Option<PythonRuntime>,
    lines: usize,
}

/// Adds `s` to the summary of its name in `list` (appended when new).
fn merge_into(list: &mut Vec<SpanSummary>, s: &SpanSummary) {
    match list.iter_mut().find(|t| t.name == s.name) {
        Some(t) => t.merge(s),
        None => {
            let mut fresh = SpanSummary::new(&s.name);
            fresh.merge(s);
            list.push(fresh);
        }
    }
}

impl Tally {
    /// Adds the lines of `text` (complete lines); the first bad one fails.
    fn add(&mut self, text: &str, mut each: impl FnMut(&Line, &Tally)) -> Result<(), SpansError> {
        for line in text.lines() {
            self.lines += 1;
            let n = self.lines;
            let Some(parsed) = parse_line(line).map_err(|why| SpansError::Line(n, why))? else {
                continue;
            };
            match &parsed {
                Line::Span { name, seconds, start } => {
                    let mut one = SpanSummary::new(name);
                    one.add_call(*seconds, start.unwrap_or(f64::INFINITY));
                    self.add_summary(&one)?;
                    let main = self.mains.entry(0).or_insert(MainThread {
                        from: f64::INFINITY,
                        to: f64::NEG_INFINITY,
                        ..Default::default()
                    });
                    *main.seconds.entry(name.clone()).or_default() += seconds;
                    if let Some(start) = start {
                        main.from = main.from.min(*start);
                        main.to = main.to.max(start + seconds);
                        self.time(name.clone(), *start, *seconds);
                    }
                }
                Line::Agg(agg) => {
                    for (name, s) in &agg.spans {
                        self.add_summary(&agg.summary(name, s))?;
                    }
                    if agg.main && !agg.forked {
                        let main = self.mains.entry(agg.pid).or_insert(MainThread {
                            from: f64::INFINITY,
                            to: f64::NEG_INFINITY,
                            ..Default::default()
                        });
                        let [top, from, to] = agg.top;
                        if top > 0 {
                            main.from = main.from.min(from as f64 * 1e-9);
                            main.to = main.to.max(to as f64 * 1e-9);
                        }
                        for (name, s) in &agg.spans {
                            *main.seconds.entry(name.clone()).or_default() +=
                                (s.own - s.beside) as f64 * 1e-9;
                        }
                    }
                    for (name, start, ns) in &agg.slices {
                        self.time(name.clone(), *start as f64 * 1e-9, *ns as f64 * 1e-9);
                    }
                    self.untimed += agg.unsliced;
                }
                Line::Progress(p) => self.progress = Some(*p),
                Line::Wrapped(w, span) => {
                    let known = self.wrapped.entry(w.clone()).or_default();
                    if span.is_some() {
                        *known = span.clone();
                    }
                }
                Line::Refused(w, why) => {
                    self.refused.insert(w.clone(), why.clone());
                }
                Line::Runtime(r) => match &mut self.runtime {
                    None => self.runtime = Some(r.clone()),
                    Some(all) => all.distributions.extend(r.distributions.clone()),
                },
            }
            each(&parsed, self);
        }
        Ok(())
    }

    fn add_summary(&mut self, s: &SpanSummary) -> Result<(), SpansError> {
        merge_into(&mut self.spans, s);
        merge_into(&mut self.recent, s);
        let total = self.spans.iter().find(|t| t.name == s.name).map_or(0.0, |t| t.sum_s);
        match total.is_finite() {
            true => Ok(()),
            false => Err(SpansError::Overflow(s.name.clone())),
        }
    }

    fn time(&mut self, name: String, start: f64, seconds: f64) {
        match self.timed.len() < protocol::MAX_SLICES {
            true => self.timed.push((name, start, seconds)),
            false => self.untimed += 1,
        }
    }

    /// The summaries added since the last call (an item's spans).
    pub fn take_recent(&mut self) -> Vec<SpanSummary> {
        std::mem::take(&mut self.recent)
    }

    /// The targets the bootstrap found, wrapped or refused: none of them
    /// "matched nothing" (a refusal is warned of with its reason).
    pub fn matched(&self) -> std::collections::BTreeSet<String> {
        self.wrapped.keys().chain(self.refused.keys()).cloned().collect()
    }

    /// How many spans called `name` have ended.
    pub fn count(&self, name: &str) -> u64 {
        self.spans.iter().find(|t| t.name == name).map_or(0, |t| t.calls)
    }

    /// Once the command has ended: processes whose main-thread spans
    /// overlapped an earlier process's ran beside it, and their seconds
    /// become concurrent; what stays is each second on the stage's time
    /// line once.
    pub fn settle(&mut self) {
        let mut mains: Vec<&MainThread> = self.mains.values().collect();
        mains.sort_by(|a, b| a.from.total_cmp(&b.from));
        let mut until = f64::NEG_INFINITY;
        for m in mains {
            // A process with no top-level window (a program's lines
            // without starts) overlaps nothing it can be placed against.
            if m.from >= until || !m.from.is_finite() {
                until = until.max(m.to);
                continue;
            }
            for (name, secs) in &m.seconds {
                if let Some(s) = self.spans.iter_mut().find(|s| s.name == *name) {
                    s.concurrent_s = (s.concurrent_s + secs).min(s.self_s);
                }
            }
        }
    }

    /// What a person must know to read the spans: targets refused or
    /// wrapped and never called, and a trace that holds only some calls.
    pub fn warnings(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .refused
            .iter()
            .map(|(t, why)| format!("--span {t} was not wrapped: {why}"))
            .collect();
        for (t, span) in &self.wrapped {
            if let Some(span) = span.as_ref().filter(|s| self.count(s) == 0) {
                out.push(format!("--span {t} was wrapped but never called: span '{span}' 0 calls"));
            }
        }
        if self.untimed > 0 {
            let all = self.timed.len() as u64 + self.untimed;
            out.push(format!(
                "the trace draws {} of {} span calls (the first {}); every call is in the figures",
                thousands(self.timed.len() as u64),
                thousands(all),
                protocol::MAX_SLICES
            ));
        }
        out
    }

    /// Per name, in order of first appearance: `span:NAME_s` (the sum),
    /// `span:NAME_n`, `span:NAME_median_s` and `span:NAME_p95_s`.
    pub fn figures(&self) -> Vec<Figure> {
        figures_of(&self.spans)
    }
}

/// `19200` as `19,200`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The figures of span summaries (see [`Tally::figures`]).
pub fn figures_of(spans: &[SpanSummary]) -> Vec<Figure> {
    spans
        .iter()
        .flat_map(|s| {
            [
                figure(&format!("span:{}_s", s.name), s.sum_s),
                figure(&format!("span:{}_n", s.name), s.calls as f64),
                figure(&format!("span:{}_median_s", s.name), s.quantile(0.5)),
                figure(&format!("span:{}_p95_s", s.name), s.quantile(0.95)),
            ]
        })
        .collect()
}

/// The spans file of one command stage, followed as it grows; removed
/// when dropped.
pub struct SpansFile {
    path: PathBuf,
    reader: std::fs::File,
    /// Bytes read so far, and the last line when it is not complete yet.
    read: u64,
    partial: Vec<u8>,
    pub tally: Tally,
}

impl SpansFile {
    /// A new empty file below the run directory (never an existing one).
    pub fn create(run_dir: &Path, job_tag: &str) -> Result<SpansFile, StageError> {
        use std::os::unix::fs::OpenOptionsExt;
        let path = run_dir.join(format!(".spans-{job_tag}.jsonl"));
        let io = |source| StageError::Io { path: path.display().to_string(), source };
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(io)?;
        let reader = std::fs::File::open(&path).map_err(io)?;
        Ok(SpansFile { path, reader, read: 0, partial: Vec::new(), tally: Tally::default() })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads what was appended since the last call and adds its complete
    /// lines (all of it when `last`: the command has ended); `each` sees
    /// every line as it is added.
    pub fn follow(
        &mut self,
        last: bool,
        mut each: impl FnMut(&Line, &Tally),
    ) -> Result<(), SpansError> {
        loop {
            let mut buf = Vec::new();
            (&self.reader).take(CHUNK).read_to_end(&mut buf).map_err(SpansError::Read)?;
            let more = buf.len() as u64 == CHUNK;
            self.read += buf.len() as u64;
            self.partial.extend_from_slice(&buf);
            let complete = match last && !more {
                true => self.partial.len(),
                false => self.partial.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1),
            };
            if self.partial.len() - complete > MAX_LINE {
                return Err(SpansError::TooLarge);
            }
            let lines: Vec<u8> = self.partial.drain(..complete).collect();
            let text = String::from_utf8(lines).map_err(|_| SpansError::NotUtf8)?;
            self.tally.add(&text, &mut each)?;
            if !more {
                return Ok(());
            }
        }
    }

    /// Everything the command said, once it ended.
    pub fn finish(mut self) -> Result<Said, StageError> {
        self.follow(true, |_, _| {}).map_err(|e| StageError::Failed(e.to_string()))?;
        self.tally.settle();
        Ok(Said {
            figures: self.tally.figures(),
            warnings: self.tally.warnings(),
            spans: std::mem::take(&mut self.tally.spans),
            timed: std::mem::take(&mut self.tally.timed),
            wrapped: self.tally.matched(),
            runtime: self.tally.runtime.take(),
        })
    }
}

/// What a command's spans file said, once it ended.
pub struct Said {
    /// The figures of every span.
    pub figures: Vec<Figure>,
    /// Every span name's summary.
    pub spans: Vec<SpanSummary>,
    /// What to know to read them (see [`Tally::warnings`]).
    pub warnings: Vec<String>,
    /// The spans that gave a start (name, start on the monotonic clock, seconds).
    pub timed: Vec<Timed>,
    /// The `--span` targets the bootstrap found, wrapped or refused.
    pub wrapped: std::collections::BTreeSet<String>,
    /// What the Python helper said of its runtime.
    pub runtime: Option<PythonRuntime>,
}

/// Reports spans that gave their start as slices of the stage, placed on
/// the worker's clock by reading the machine's monotonic clock beside it.
pub fn place(timed: Vec<Timed>, reporter: &mut dyn super::Reporter) {
    let (now, mono) = (std::time::Instant::now(), monotonic_now());
    for (name, start, seconds) in timed {
        let ago = std::time::Duration::from_secs_f64((mono - start).max(0.0));
        let at = now.checked_sub(ago).unwrap_or(now);
        reporter.slice(&name, at, seconds);
    }
}

/// `CLOCK_MONOTONIC` in seconds: the clock the Python helper's
/// `time.monotonic()` reads.
fn monotonic_now() -> f64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
        .map(|t| t.tv_sec() as f64 + t.tv_nsec() as f64 * 1e-9)
        .unwrap_or(0.0)
}

impl Drop for SpansFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The figures of a whole file's text.
    fn figures(text: &str) -> Result<Vec<Figure>, String> {
        let mut tally = Tally::default();
        tally.add(text, |_, _| {}).map_err(|e| e.to_string())?;
        Ok(tally.figures())
    }

    #[test]
    fn spans_add_up_per_name_in_order_of_first_appearance() {
        let text = "{\"name\": \"load\", \"seconds\": 0.5}\n\n\
                    {\"progress\": 0.5}\n\
                    {\"name\": \"adapt_images\", \"seconds\": 54.7}\n\
                    {\"name\": \"load\", \"seconds\": 0.25}\n";
        let f: Vec<(String, f64)> =
            figures(text).unwrap().into_iter().map(|f| (f.name, f.value)).collect();
        let names: Vec<&str> = f.iter().map(|x| x.0.as_str()).collect();
        assert_eq!(
            names,
            [
                "span:load_s",
                "span:load_n",
                "span:load_median_s",
                "span:load_p95_s",
                "span:adapt_images_s",
                "span:adapt_images_n",
                "span:adapt_images_median_s",
                "span:adapt_images_p95_s",
            ]
        );
        assert_eq!((f[0].1, f[1].1, f[4].1, f[5].1), (0.75, 2.0, 54.7, 1.0));
        // Two calls, 0.5 and 0.25 s: the median is the lower, p95 the upper,
        // each within 1/128.
        assert!((f[2].1 - 0.25).abs() <= 0.25 / 128.0, "{f:?}");
        assert!((f[3].1 - 0.5).abs() <= 0.5 / 128.0, "{f:?}");
        assert_eq!(figures("").unwrap().len(), 0);
    }

    #[test]
    fn a_bad_line_is_named_by_its_number() {
        let ok = "{\"name\": \"a\", \"seconds\": 1}\n";
        for (line, needle) in [
            ("not json", "not an object"),
            ("{\"name\": \"a\"}", "not an object"),
            ("{\"name\": \"a\", \"seconds\": 1, \"extra\": 2}", "unknown field"),
            ("{\"name\": \"a\", \"seconds\": 1, \"progress\": 0.5}", "not an object"),
            ("{\"name\": \"/home/me\", \"seconds\": 1}", "span name '/home/me' must be"),
            ("{\"name\": \"\", \"seconds\": 1}", "span name '' must be"),
            (&format!("{{\"name\": \"{}\", \"seconds\": 1}}", "x".repeat(65)), "must be 1 to 64"),
            ("{\"name\": \"a\", \"seconds\": -1}", "seconds -1 is not"),
            ("{\"name\": \"a\", \"seconds\": 1, \"start\": -2}", "start -2 is not"),
            ("{\"progress\": 0.5, \"start\": 2}", "not an object"),
            ("{\"name\": \"a\", \"seconds\": 1e999}", "not an object"),
            ("{\"progress\": 1.5}", "progress 1.5 is not between 0 and 1"),
            ("{\"progress\": -0.1}", "progress -0.1 is not between 0 and 1"),
        ] {
            let e = figures(&format!("{ok}{line}\n")).unwrap_err();
            assert!(e.starts_with("spans line 2: "), "{e}");
            assert!(e.contains(needle), "{e}");
        }
    }

    /// Runtime lines from two processes: the first's interpreter, every
    /// distribution either imported; a path or a stray key is refused.
    #[test]
    fn runtime_lines_merge_and_a_path_is_refused() {
        let mut tally = Tally::default();
        let text = "{\"runtime\": {\"python\": \"3.11.7\", \"distributions\": {\"numpy\": \"2.4.6\"}}}\n\
                    {\"runtime\": {\"python\": \"3.12.1\", \"distributions\": {\"torch\": \"2.5.1+cpu\"}}}\n";
        tally.add(text, |_, _| {}).unwrap();
        let r = tally.runtime.clone().unwrap();
        assert_eq!(r.python, "3.11.7");
        let names: Vec<&str> = r.distributions.keys().map(String::as_str).collect();
        assert_eq!(names, ["numpy", "torch"]);
        assert!(tally.figures().is_empty(), "a runtime line is no span");
        for (line, needle) in [
            (
                "{\"runtime\": {\"python\": \"/usr/bin/python3\", \"distributions\": {}}}",
                "is not a version",
            ),
            (
                "{\"runtime\": {\"python\": \"3.11\", \"distributions\": {\"mine\": \"/home/me/x\"}}}",
                "runtime distribution 'mine'",
            ),
            (
                "{\"runtime\": {\"python\": \"3.11\", \"distributions\": {}, \"user\": \"me\"}}",
                "unknown field",
            ),
            (
                "{\"runtime\": {\"python\": \"3.11\", \"distributions\": {}}, \"progress\": 0.5}",
                "not an object",
            ),
        ] {
            let e = figures(&format!("{line}\n")).unwrap_err();
            assert!(e.starts_with("spans line 1: ") && e.contains(needle), "{e}");
        }
    }

    /// Two spans of 1e308 s add up to infinity: refused when read, never
    /// written as null. An aggregate line that no calls could make is
    /// refused with its line number.
    #[test]
    fn an_overflowing_sum_and_an_impossible_tally_are_refused() {
        let big = "{\"name\": \"x\", \"seconds\": 1e308}\n";
        let e = figures(&format!("{big}{big}")).unwrap_err();
        assert_eq!(e, "span 'x': its seconds add up to more than the largest number");
        let agg = |span: &str| {
            format!(
                "{{\"agg\": {{\"pid\": 1, \"forked\": false, \"main\": true, \"top\": [0, 0, 0], \"spans\": {{\"x\": {span}}}, \"slices\": [], \"unsliced\": 0}}}}\n"
            )
        };
        let ok = "{\"n\": 2, \"sum\": 30, \"self\": 20, \"beside\": 0, \"min\": 10, \"max\": 20, \"first\": 10, \"at\": 5, \"h\": [10, 1, 20, 1]}";
        let f = figures(&agg(ok)).unwrap();
        assert!((f[0].value - 30e-9).abs() < 1e-15 && f[1].value == 2.0, "{f:?}");
        for (bad, needle) in [
            (ok.replace("\"self\": 20", "\"self\": 40"), "disagree"),
            (ok.replace("[10, 1, 20, 1]", "[10, 1, 20]"), "pairs"),
            (ok.replace("[10, 1, 20, 1]", "[10, 1]"), "does not hold its calls"),
            (ok.replace("[10, 1, 20, 1]", "[99999, 2]"), "out of range"),
            (ok.replace("\"n\": 2", "\"n\": 0"), "no calls"),
        ] {
            let e = figures(&agg(&bad)).unwrap_err();
            assert!(e.starts_with("spans line 1: ") && e.contains(needle), "{e}");
        }
    }

    /// A refused target was found: it is warned of with its reason, never
    /// as one that matched nothing; a wrapped one never called says so.
    #[test]
    fn refused_and_uncalled_targets_are_said_as_what_they_are() {
        let mut tally = Tally::default();
        let text = "{\"refused\": \"numpy:ndarray.sum\", \"why\": \"an attribute of an immutable built-in type cannot be wrapped\"}\n\
                    {\"wrapped\": \"m:f\", \"span\": \"f\"}\n\
                    {\"wrapped\": \"m:g\", \"span\": \"g\"}\n\
                    {\"name\": \"g\", \"seconds\": 0.5}\n";
        tally.add(text, |_, _| {}).unwrap();
        let matched: Vec<String> = tally.matched().into_iter().collect();
        assert_eq!(matched, ["m:f", "m:g", "numpy:ndarray.sum"]);
        assert_eq!(
            tally.warnings(),
            [
                "--span numpy:ndarray.sum was not wrapped: an attribute of an immutable built-in type cannot be wrapped",
                "--span m:f was wrapped but never called: span 'f' 0 calls",
            ]
        );
    }

    #[test]
    fn a_followed_file_yields_complete_lines_only_until_the_end() {
        use std::io::Write;
        let dir = std::env::temp_dir().join(format!("spans-follow-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut f = SpansFile::create(&dir, "t").unwrap();
        let mut w = std::fs::OpenOptions::new().append(true).open(f.path()).unwrap();
        w.write_all(b"{\"progress\": 0.25}\n{\"name\": \"fit\", \"sec").unwrap();
        let mut seen = Vec::new();
        f.follow(false, |l, _| seen.push(format!("{l:?}"))).unwrap();
        assert_eq!(seen, ["Progress(0.25)"]);
        w.write_all(b"onds\": 2}\n{\"name\": \"fit\", \"seconds\": 1, \"start\": 7.5}").unwrap();
        f.follow(false, |_, t| seen.push(format!("fit x{}", t.count("fit")))).unwrap();
        assert_eq!(seen, ["Progress(0.25)", "fit x1"]);
        let said = f.finish().unwrap();
        assert_eq!(said.figures[0].value, 3.0);
        assert_eq!(said.figures[1].value, 2.0);
        let timed = said.timed;
        assert_eq!(timed, [("fit".to_string(), 7.5, 1.0)], "only the span with a start is timed");
        assert!(std::fs::read_dir(&dir).unwrap().next().is_none(), "the file was not removed");
        std::fs::remove_dir(&dir).unwrap();
    }
}
