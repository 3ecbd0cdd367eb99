//! A gate's records (`coordinator gate`): the declaration written before
//! its first build, and the report judging head against base, figure by
//! figure, from runs made in interleaved windows. What judges them is
//! `crate::gate`'s; these are here, with the other records, so `verify`
//! can read them.

use super::bisect::Artifact;
use super::declaration::Program;
use serde::{Deserialize, Serialize};

pub const SCHEMA_DECLARATION: &str = "stagebench.gate-declaration";
pub const SCHEMA: &str = "stagebench.gate-report";
pub const SCHEMA_VERSION: u32 = 1;
/// Where each window's runs go: `windows/W/base-1/`, `windows/W/head-1/`, …
pub const WINDOWS: &str = "windows";
/// The pull request's comment, derived from report.json.
pub const COMMENT: &str = "comment.md";
/// The marker on a comment's first line: one comment per gate NAME.
pub const MARKER: &str = "<!-- stagebench gate: ";
/// GitHub refuses a comment longer than this (characters).
pub const COMMENT_LIMIT: usize = 65_536;

/// What a gate is, written before anything is built. The run flags and the
/// build command may name paths, so they are bound by hash only.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct GateDeclaration {
    pub schema: String,
    pub schema_version: u32,
    pub created_utc: String,
    /// The gate's name, in its comment's marker.
    pub name: String,
    /// The commit measured as base (the merge base of --base and --head
    /// unless `--base-exact`), and head.
    pub base: String,
    pub head: String,
    /// What `--base` named, when base is its merge base with head.
    pub merge_base_of: Option<String>,
    pub run_flags_sha256: String,
    pub build_sha256: Option<String>,
    /// The figures gated (`--gate`), as given.
    pub gates: Vec<String>,
    pub threshold_pct: f64,
    /// Rounds (counted trials) each run makes, and the most each side may have.
    pub rounds: u32,
    pub max_rounds: u32,
    pub work_tree_dirty: bool,
    pub program: Program,
}

impl GateDeclaration {
    /// Whether `other` declares the same gate (all but when it started and
    /// what the work tree held): a rerun into the same directory resumes
    /// only then.
    pub fn same_gate(&self, other: &GateDeclaration) -> bool {
        let key = |d: &GateDeclaration| {
            (
                d.name.clone(),
                d.base.clone(),
                d.head.clone(),
                d.run_flags_sha256.clone(),
                d.build_sha256.clone(),
                d.gates.clone(),
                d.threshold_pct.to_bits(),
                d.rounds,
                d.max_rounds,
            )
        };
        key(self) == key(other)
    }
}

/// One of four answers for a figure, and for the gate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Head is slower than base beyond the threshold, at the stated level.
    Regressed,
    /// Neither decided: the reason says why.
    NotSure,
    /// Head is faster beyond the threshold.
    Improved,
    /// The interval of head / base lies inside ± the threshold.
    Same,
}

impl Verdict {
    /// As the comment, the console and `GITHUB_OUTPUT` say it.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Regressed => "regressed",
            Verdict::NotSure => "not sure",
            Verdict::Improved => "improved",
            Verdict::Same => "same",
        }
    }
}

/// One figure of one stage, judged from its couples of runs (the gate) or
/// its pairs of trials (bisect).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Judged {
    pub stage: String,
    pub figure: String,
    /// Medians over every counted trial of each side.
    pub base_median: f64,
    pub head_median: f64,
    /// Head / base: the gate's median of its couples' ratios with the sign
    /// test's interval (bisect's: the pairs' Hodges–Lehmann ratio and
    /// interval), and the level it holds at (corrected for the figures
    /// gated and the looks).
    pub ratio: f64,
    pub low: f64,
    pub high: f64,
    pub confidence: f64,
    /// The sign test's p over the couples (bisect's: the signed-rank
    /// test's over the pairs).
    pub p: f64,
    /// Pairs of trials measured side by side.
    pub pairs: u32,
    /// Couples of runs, the units the gate judged: two runs, one of each
    /// side, that ran one after the other. 0 where pairs were the units
    /// (bisect, and gates written before couples were).
    #[serde(default)]
    pub couples: u32,
    pub verdict: Verdict,
    /// Why it is not sure; None otherwise.
    pub reason: Option<String>,
}

/// A regressed stage's sampled functions, base's runs pooled against
/// head's: the sentence `compare` gives (the functions whose share moved,
/// largest change of time a trial first, or that none did).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SampledChange {
    pub stage: String,
    pub sentence: String,
}

/// What a stage's stacks are of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StacksOf {
    /// Nested spans: a stack's self time per trial.
    Spans,
    /// Sampled stacks (`--sample`): a stack's running samples per trial,
    /// each 1 / rate s.
    Sampled,
}

/// A stage's stacks, each side's runs pooled, head against base.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StageStacks {
    pub stage: String,
    pub of: StacksOf,
    /// The trials each side's figures are from.
    pub base_trials: u32,
    pub head_trials: u32,
    pub stacks: Vec<DiffStack>,
}

/// One stack, head against base.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DiffStack {
    /// Its frames, outermost first (a span's stack opens with its stage,
    /// a sampled one with its lane).
    pub frames: Vec<String>,
    /// µs per trial: the median over the trials (spans) or the mean
    /// (sampled stacks, as a run's record merges them).
    pub base_us: u64,
    pub head_us: u64,
    /// `slower` or `faster` where a test found it changed, else absent:
    /// for spans compare's test of the stack's self time in each trial
    /// beyond the threshold; for sampled stacks, the function on top of it
    /// named by compare's test of its share.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<StackChange>,
}

/// Which way a stack changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StackChange {
    Slower,
    Faster,
}

/// One window of runs, in the order they ran, with the first gated
/// figure's medians in it: the drift the window saw.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Window {
    /// `base` or `head` per run, in order (base, head, head, base, or the
    /// reverse in every other window).
    pub order: Vec<String>,
    /// Each run's directory (relative), in the same order.
    pub runs: Vec<String>,
    pub base_median: Option<f64>,
    pub head_median: Option<f64>,
}

/// report.json of a gate.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct GateReport {
    pub schema: String,
    pub schema_version: u32,
    pub declaration_sha256: String,
    pub environment_sha256: String,
    pub name: String,
    pub base: String,
    pub head: String,
    pub merge_base_of: Option<String>,
    pub threshold_pct: f64,
    /// How the level is corrected for the figures gated.
    pub correction: String,
    /// The gated figures, judged.
    pub gated: Vec<Judged>,
    /// Every other figure both sides record, judged alike but never gating.
    pub others: Vec<Judged>,
    /// For a regressed stage: the span whose time changed most.
    pub attribution: Vec<Judged>,
    /// For a regressed stage sampled on both sides (`--sample`): the
    /// functions whose share of the running samples moved.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sampled: Vec<SampledChange>,
    /// Per stage, its stacks head against base: what the page's
    /// differential flame graphs draw.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stacks: Vec<StageStacks>,
    /// The answer: regressed if any gated figure is, else not sure if any
    /// is, else improved if any is, else same.
    pub verdict: Verdict,
    pub sentence: String,
    /// Counted trials per side.
    pub rounds: u32,
    pub windows: Vec<Window>,
    /// The machine, in a line (CPU, cores, kernel): no host or user name.
    pub machine: String,
    pub work_tree_dirty: bool,
    pub artifacts: Vec<Artifact>,
}
