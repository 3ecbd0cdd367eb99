//! What a spans file's lines add up to: one summary per span name, the
//! main threads' windows (for what ran beside them), slices for a trace,
//! the bootstrap's wrapped and refused targets, and the span figures.

use super::line::{Line, PythonRuntime, parse_line};
use super::{SpansError, figure};
use protocol::{Figure, SpanSummary};
use std::collections::BTreeMap;

/// A span call that gave its start.
#[derive(Clone, Debug, PartialEq)]
pub struct Timed {
    pub name: String,
    /// Its start on the machine's monotonic clock, in seconds.
    pub start: f64,
    pub seconds: f64,
    /// Whether it ran beside the main thread (another thread, a child).
    pub beside: bool,
}

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
    /// The wrapped targets whose counts are a lower bound (see
    /// [`super::line::Wrapped::at_least`]).
    pub at_least: std::collections::BTreeSet<String>,
    /// Targets it refused, and why.
    pub refused: BTreeMap<String, String>,
    /// What the helper said at exit: the first process's interpreter, and
    /// the distributions every process that said anything imported.
    pub runtime: Option<PythonRuntime>,
    /// Stage spans' lines, in the order they ended.
    pub stages: Vec<super::line::StageLine>,
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
    pub(super) fn add(
        &mut self,
        text: &str,
        mut each: impl FnMut(&Line, &Tally),
    ) -> Result<(), SpansError> {
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
                        self.time(name.clone(), *start, *seconds, false);
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
                    for s in &agg.slices {
                        let (start, seconds) = (s.start as f64 * 1e-9, s.ns as f64 * 1e-9);
                        self.time(s.name.clone(), start, seconds, s.beside);
                    }
                    self.untimed += agg.unsliced;
                }
                Line::Progress(p) => self.progress = Some(*p),
                Line::Wrapped(w) => {
                    let known = self.wrapped.entry(w.target.clone()).or_default();
                    if w.span.is_some() {
                        *known = w.span.clone();
                    }
                    if w.at_least {
                        self.at_least.insert(w.target.clone());
                    }
                }
                Line::Refused(w, why) => {
                    self.refused.insert(w.clone(), why.clone());
                }
                Line::Stage(s) => self.stages.push((**s).clone()),
                Line::Runtime(r) => match &mut self.runtime {
                    None => self.runtime = Some(r.clone()),
                    Some(all) => {
                        all.distributions.extend(r.distributions.clone());
                        all.sources.extend(r.sources.clone());
                        for d in &r.devices {
                            if !all.devices.contains(d) {
                                all.devices.push(d.clone());
                            }
                        }
                    }
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

    fn time(&mut self, name: String, start: f64, seconds: f64, beside: bool) {
        match self.timed.len() < protocol::MAX_SLICES {
            true => self.timed.push(Timed { name, start, seconds, beside }),
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
            let Some(span) = span else { continue };
            let at_least = self.at_least.contains(t);
            match self.count(span) {
                0 if at_least => out.push(format!(
                    "--span {t} was wrapped and no call through it was seen: span '{span}' 0 calls counted, a lower bound \
                     (its attribute was replaced, so a call through a reference taken before is not counted)"
                )),
                0 => out.push(format!("--span {t} was wrapped but never called: span '{span}' 0 calls")),
                n if at_least => out.push(format!(
                    "--span {t}: span '{span}' {n} calls is a lower bound \
                     (its attribute was replaced, so a call through a reference taken before is not counted)"
                )),
                _ => {}
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

/// The figures of span summaries (see [`Tally::figures`]), and
/// `span:NAME_cpu_s` where the helper took the calls' CPU time.
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
            .into_iter()
            .chain(s.cpu_s.map(|cpu| figure(&format!("span:{}_cpu_s", s.name), cpu)))
        })
        .collect()
}
