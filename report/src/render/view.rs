//! One view of a report, built once from report.json: its title and
//! headline, the run in one line, the stage rows with each figure's value
//! and its text, every warning with its kind and its one sentence, and the
//! spans rows. The console, summary.md and report.html only format it:
//! none of them computes a figure or words a sentence of its own, so a
//! figure reads the same wherever it is shown (a test renders all three
//! from one report and compares).

use crate::fmt::{duration, mib_number};
use crate::modes::Report;
use crate::rundir::report::StageRecord;

/// A figure: its value (what a table sorts by) and its text in its unit.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    pub value: f64,
    pub text: String,
}

impl Figure {
    /// Seconds, as a duration.
    pub fn seconds(x: f64) -> Figure {
        Figure { value: x, text: duration(x) }
    }
    /// Bytes, in MiB (a column headed MiB).
    pub fn mib(bytes: u64) -> Figure {
        Figure { value: bytes as f64, text: mib_number(bytes) }
    }
}

/// One row of the stage table.
#[derive(Clone, Debug)]
pub struct StageRow<'a> {
    pub key: &'a str,
    pub record: &'a StageRecord,
    /// Its processes: `1x`, `8x` for a phase, else the worker's rank.
    pub worker: String,
    pub processes: u32,
    pub wall: Figure,
    /// Over trials: the median wall's interval.
    pub interval: Option<String>,
    pub cpu: Figure,
    pub peak_rss: Figure,
    /// Storage read and written (absent where the kernel keeps no count).
    pub read: Option<Figure>,
    pub written: Option<Figure>,
}

/// The stage table's columns, as every view heads them.
pub const STAGE_COLUMNS: [&str; 7] = [
    "stage",
    "processes",
    "wall",
    "CPU",
    "peak RSS MiB",
    "storage read MiB",
    "storage written MiB",
];

/// What a warning is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WarningKind {
    /// The machine at the run's start (load, contention, frequency).
    Machine,
    /// `--span` targets that matched nothing.
    SpansNotFound,
    /// A stage's spans said something a reader must know.
    Span,
    /// A note on how a stage's memory reads (not a fault).
    Memory,
    /// A stage left processes running.
    Leaked,
    /// A stage's trials (noise, drift, outliers).
    Trial,
}

impl WarningKind {
    /// Its name, as report.html marks each warning (`data-kind`).
    pub fn name(self) -> &'static str {
        match self {
            WarningKind::Machine => "machine",
            WarningKind::SpansNotFound => "spans-not-found",
            WarningKind::Span => "span",
            WarningKind::Memory => "memory",
            WarningKind::Leaked => "leaked",
            WarningKind::Trial => "trial",
        }
    }
}

/// One warning: its kind, its stage (if it is one stage's), and its one
/// sentence (names in backticks, no closing full stop).
#[derive(Clone, Debug, PartialEq)]
pub struct Warning {
    pub kind: WarningKind,
    pub stage: Option<String>,
    pub text: String,
}

/// The run in one line: its stages, workers, isolation and wall, and the
/// digests it is bound to.
#[derive(Clone, Debug)]
pub struct RunLine<'a> {
    pub stages: usize,
    pub workers: usize,
    pub isolation: &'a str,
    pub launcher: &'a str,
    pub wall: Figure,
    pub declaration: &'a str,
    pub environment: &'a str,
}

/// A report's one view.
pub struct View<'a> {
    pub report: &'a Report,
    pub title: String,
    /// What the run found, in one phrase (names in backticks).
    pub headline: String,
    pub run: RunLine<'a>,
    /// `--inputs` in one line, where given.
    pub inputs: Option<String>,
    pub stages: Vec<StageRow<'a>>,
    pub warnings: Vec<Warning>,
    pub spans: Vec<super::SpanRow<'a>>,
    /// The mode's own part (its tables and sentences).
    pub section: crate::doc::Blocks,
}

/// The sentence for a stage that left processes running (`names`: their
/// short command names, never paths): the run's stderr, its failure under
/// `--leaks fail`, and every view of its report say it so.
pub fn leaked_sentence(key: &str, count: u32, names: &[String]) -> String {
    let named = match names.is_empty() {
        true => String::new(),
        false => format!(" ({})", names.join(", ")),
    };
    format!(
        "stage {key} left {count} process(es) running when it ended{named}; its worker killed them (SIGTERM, then SIGKILL) and reaped them"
    )
}

impl<'a> View<'a> {
    /// The view of `r`.
    pub fn of(r: &'a Report) -> View<'a> {
        let title = match &r.campaign_step {
            Some(step) => format!("stagebench campaign step `{step}` ({} mode)", r.mode()),
            None => format!("stagebench {} run", r.mode()),
        };
        View {
            report: r,
            title,
            headline: r.headline(),
            run: RunLine {
                stages: r.stages.len(),
                workers: r.workers.len(),
                isolation: &r.isolation,
                launcher: &r.launcher,
                wall: Figure::seconds(r.run_wall_s),
                declaration: short(&r.declaration_sha256),
                environment: short(&r.environment_sha256),
            },
            inputs: r.inputs_line(),
            stages: stage_rows(r),
            warnings: warnings(r),
            spans: super::span_rows(r),
            section: r.section.blocks(r),
        }
    }

    /// The warnings of one stage, in the order found.
    pub fn warnings_of<'b>(&'b self, key: &'b str) -> impl Iterator<Item = &'b Warning> + 'b {
        self.warnings.iter().filter(move |w| w.stage.as_deref() == Some(key))
    }

    /// The machine's warnings.
    pub fn machine_warnings(&self) -> impl Iterator<Item = &Warning> + '_ {
        self.warnings.iter().filter(|w| w.kind == WarningKind::Machine)
    }
}

/// A digest's first 12 hex digits, as every view shows it.
pub fn short(sha: &str) -> &str {
    &sha[..12.min(sha.len())]
}

fn stage_rows(r: &Report) -> Vec<StageRow<'_>> {
    let trials = r.section.trials();
    r.ordered()
        .into_iter()
        .map(|(key, st)| StageRow {
            key,
            record: st,
            worker: match st.worker {
                Some(w) => w.to_string(),
                None => format!("{}x", st.processes),
            },
            processes: st.processes,
            wall: Figure::seconds(st.wall_s),
            interval: trials
                .and_then(|t| t.get(key))
                .and_then(|t| t.summary.get("wall_s"))
                .map(|w| w.median_interval.cell(duration)),
            cpu: Figure::seconds(st.cpu_s),
            peak_rss: Figure::mib(st.peak_rss_bytes),
            read: st.io.as_ref().map(|io| Figure::mib(io.read_bytes)),
            written: st.io.as_ref().map(|io| Figure::mib(io.write_bytes)),
        })
        .collect()
}

/// Every warning a person must read: the machine's, then each stage's in
/// plan order.
fn warnings(r: &Report) -> Vec<Warning> {
    let mut out: Vec<Warning> = r
        .machine_warnings
        .iter()
        .map(|w| Warning { kind: WarningKind::Machine, stage: None, text: w.clone() })
        .collect();
    let trials = r.section.trials();
    for (key, st) in r.ordered() {
        let mut push = |kind, text| out.push(Warning { kind, stage: Some(key.clone()), text });
        if let Some(w) = st.spans_not_found_warning(key) {
            push(WarningKind::SpansNotFound, w);
        }
        for w in &st.span_warnings {
            push(WarningKind::Span, format!("`{key}`: {w}"));
        }
        for (name, x) in st.spans.iter().filter(|(_, x)| x.share > 1.0 + 1e-9) {
            push(
                WarningKind::Span,
                format!(
                    "`{key}`: span `{name}` reads {:.1}% of the wall, longer than its stage, which cannot be: its record is wrong, and its figures are not to be trusted",
                    100.0 * x.share
                ),
            );
        }
        if let Some(note) = st.memory_note(key) {
            push(WarningKind::Memory, note);
        }
        if st.leaked_processes.count > 0 {
            let l = &st.leaked_processes;
            push(WarningKind::Leaked, leaked_sentence(key, l.count, &l.names));
        }
        if let Some(set) = trials.and_then(|t| t.get(key)) {
            for w in &set.warnings {
                push(WarningKind::Trial, format!("`{key}`: {w}"));
            }
        }
    }
    out
}
