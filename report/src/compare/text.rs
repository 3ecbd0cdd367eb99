//! A comparison as a table for a person (`compare`'s output and
//! `compare.txt`).

use super::Comparison;
use crate::stats::{self, Verdict};

/// What the runs ran on, A against B: every line once, those that differ
/// marked (a commit differing is information, nothing more).
fn comparability(s: &mut String, c: &Comparison) {
    let w = c.comparability.iter().map(|l| l.what.len()).max().unwrap_or(0);
    s.push_str("comparability (A | B):\n");
    for l in &c.comparability {
        let mark = match (l.differs(), l.informational) {
            (false, _) => "same",
            (true, true) => "differs (information)",
            (true, false) => "DIFFERS",
        };
        s.push_str(&format!("  {:<w$}  {} | {}  {mark}\n", l.what, l.a, l.b));
    }
    if c.rows.iter().any(|r| r.differs) {
        s.push_str("rows marked [ran on a different machine or runtime] may differ for that reason; --strict refuses such runs\n");
    }
    s.push('\n');
}

/// The comparison as a table for a person.
pub fn render(c: &Comparison, threshold_pct: f64) -> String {
    let mut s = String::new();
    if !c.incomparable.is_empty() {
        s.push_str(&format!("NOT COMPARABLE (compared as asked): {}\n", c.incomparable.join("; ")));
    }
    comparability(&mut s, c);
    // Wide enough for the longest stage key and figure (a span's name can
    // be 64 bytes).
    let sw = c.rows.iter().map(|r| r.stage.len()).max().unwrap_or(0).max(20);
    let w = c.rows.iter().map(|r| r.figure.len()).max().unwrap_or(0).max(15);
    s.push_str(&format!(
        "{:<sw$} {:<w$} {:>4} {:>4} {:>12} {:>12} {:>7} {:>30} {:>8}  {}\n",
        "stage",
        "figure",
        "n A",
        "n B",
        "median A",
        "median B",
        "B/A",
        "interval of B/A",
        "p",
        "verdict"
    ));
    for r in &c.rows {
        let verdict = match r.verdict {
            Verdict::Faster => "faster",
            Verdict::Slower if r.regressed => "SLOWER (regressed)",
            Verdict::Slower => "slower",
            Verdict::NoSignificantDifference => "no significant difference",
            Verdict::TooFewTrials => "too few trials to say",
        };
        s.push_str(&format!(
            "{:<sw$} {:<w$} {:>4} {:>4} {:>12} {:>12} {:>7.3} {:>30} {:>8.4}  {}\n",
            r.stage,
            r.figure,
            r.n_a,
            r.n_b,
            crate::fmt::figure(&r.figure, r.median_a),
            crate::fmt::figure(&r.figure, r.median_b),
            r.ratio,
            r.ci.cell(|x| format!("{x:.3}")),
            r.p,
            match r.differs {
                true => format!("{verdict}  [ran on a different machine or runtime]"),
                false => verdict.to_string(),
            }
        ));
    }
    for note in &c.notes {
        s.push_str(note);
        s.push('\n');
    }
    s.push_str(&format!(
        "verdicts: Mann–Whitney p < {} and the interval of B/A excluding 1 (a 95% bootstrap interval with 6 samples a side; with fewer, the ranges' far ends, whose coverage is at least the one shown); regressed: slower by more than {threshold_pct}%\n",
        stats::ALPHA
    ));
    s
}
