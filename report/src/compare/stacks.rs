//! Two runs' spans compared stack by stack: per stage that both drew from
//! nested spans, each stack's self time per trial in A against B, tested as
//! a figure is (rank test, interval of the ratio of medians,
//! `stats::verdict`). Computed once, here: the console's lines, the page's
//! tables and its differential flame graphs all read these rows.

use super::{Row, row};
use crate::modes::Report;
use crate::render::folded::{self, Stacks};
use crate::stats::Verdict;

/// Which runs a stack was drawn in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Presence {
    Both,
    OnlyA,
    OnlyB,
}

/// One stack of a stage compared.
#[derive(Debug)]
pub struct StackRow {
    pub stack: Vec<String>,
    pub presence: Presence,
    pub row: Row,
}

impl StackRow {
    /// Whether its difference counts: in both runs, significant, and beyond
    /// the threshold either way (slower by more than it, as compare's
    /// regression, or faster by more than it). A stack only one run has is
    /// said so, never as a change.
    pub fn changed(&self, threshold_pct: f64) -> Option<Verdict> {
        let t = threshold_pct / 100.0;
        match (self.presence, self.row.verdict) {
            (Presence::Both, Verdict::Slower) if self.row.ratio > 1.0 + t => Some(Verdict::Slower),
            (Presence::Both, Verdict::Faster) if self.row.ratio < 1.0 - t => Some(Verdict::Faster),
            _ => None,
        }
    }

    /// B against A as a person reads it: `+99.1%`, or which run alone has it.
    pub fn change(&self) -> String {
        match self.presence {
            Presence::OnlyA => "only in A".into(),
            Presence::OnlyB => "only in B".into(),
            Presence::Both if self.row.ratio.is_finite() => {
                format!("{:+.1}%", (self.row.ratio - 1.0) * 100.0)
            }
            Presence::Both => "–".into(),
        }
    }

    /// The stack as a path: `outer › inner`.
    pub fn path(&self) -> String {
        self.stack.join(" › ")
    }
}

/// A stage's stacks compared, with the trials each run drew them from.
#[derive(Debug)]
pub struct StageStacks {
    pub stage: String,
    pub measurements_a: u64,
    pub measurements_b: u64,
    pub rows: Vec<StackRow>,
}

/// Every stage both runs drew from nested spans, its stacks compared.
pub fn compared(a: &Report, b: &Report, threshold_pct: f64) -> Vec<StageStacks> {
    let (sa, sb) = (folded::stacks(a), folded::stacks(b));
    let mut out = Vec::new();
    for a in sa.iter().filter(|s| s.nested) {
        let Some(b) = sb.iter().find(|b| b.stage == a.stage && b.nested) else { continue };
        out.push(StageStacks {
            stage: a.stage.clone(),
            measurements_a: a.measurements,
            measurements_b: b.measurements,
            rows: stacks(a, b, threshold_pct),
        });
    }
    out
}

/// Every stack of one stage in either run, compared.
pub(crate) fn stacks(a: &Stacks, b: &Stacks, threshold_pct: f64) -> Vec<StackRow> {
    let mut keys: Vec<&Vec<String>> = a.samples.keys().chain(b.samples.keys()).collect();
    keys.sort();
    keys.dedup();
    let zeros = |s: &Stacks| vec![0.0; s.measurements as usize];
    keys.into_iter()
        .enumerate()
        .map(|(i, k)| {
            let presence = match (a.samples.contains_key(k), b.samples.contains_key(k)) {
                (true, true) => Presence::Both,
                (true, false) => Presence::OnlyA,
                _ => Presence::OnlyB,
            };
            let xa = a.samples.get(k).cloned().unwrap_or_else(|| zeros(a));
            let xb = b.samples.get(k).cloned().unwrap_or_else(|| zeros(b));
            let name = k.join(";");
            StackRow {
                stack: k.clone(),
                presence,
                row: row(&a.stage, &name, &xa, &xb, threshold_pct, i as u64),
            }
        })
        .collect()
}

/// The console's lines: per stage, each stack whose self time changed
/// beyond the threshold, and each that only one run has (a stack opens with
/// its stage).
pub fn lines(stages: &[StageStacks], threshold_pct: f64) -> Vec<String> {
    let mut out = Vec::new();
    for s in stages {
        for r in &s.rows {
            let said = match (r.presence, r.changed(threshold_pct)) {
                (Presence::Both, Some(Verdict::Slower)) => "slower",
                (Presence::Both, Some(_)) => "faster",
                (Presence::Both, None) => continue,
                _ => "",
            };
            let figures = match r.presence {
                Presence::Both => format!(
                    " {said}: self {} → {} per trial (interval of B/A {}, p {})",
                    crate::fmt::duration(r.row.median_a),
                    crate::fmt::duration(r.row.median_b),
                    r.row.ci.cell(|x| format!("{x:.3}")),
                    crate::fmt::p_value(r.row.p)
                ),
                Presence::OnlyA => {
                    format!(": self {} per trial in A", crate::fmt::duration(r.row.median_a))
                }
                Presence::OnlyB => {
                    format!(": self {} per trial in B", crate::fmt::duration(r.row.median_b))
                }
            };
            // A stack opens with its stage's own frame.
            out.push(format!("span {} {}{figures}", r.path(), r.change()));
        }
    }
    out
}
