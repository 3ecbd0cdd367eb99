//! A comparison as a table for a person (`compare`'s output and
//! `compare.txt`).

use super::Comparison;
use crate::stats::{self, Verdict};

/// What the runs ran on, A against B: every line once, those that differ
/// marked (a commit differing is information, nothing more).
fn comparability(s: &mut String, c: &Comparison) {
    for (side, run) in ["A", "B"].iter().zip(&c.runs) {
        s.push_str(&format!("{side}: {}\n", run.line()));
    }
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
    use crate::doc::{Align::Left, Align::Right, Cell, Table};
    let mut t = Table::new(&[
        ("stage", Left),
        ("figure", Left),
        ("n A", Right),
        ("n B", Right),
        ("median A", Right),
        ("median B", Right),
        ("B/A", Right),
        ("interval of B/A", Right),
        ("p", Right),
        ("verdict", Left),
    ]);
    for r in &c.rows {
        let verdict = match r.verdict {
            Verdict::Faster => "faster",
            Verdict::Slower if r.regressed => "SLOWER (regressed)",
            Verdict::Slower => "slower",
            Verdict::NoSignificantDifference => "no significant difference",
            Verdict::TooFewTrials => "too few trials to say",
        };
        t.row(vec![
            Cell::code(&r.stage),
            Cell::code(&r.figure),
            r.n_a.to_string().into(),
            r.n_b.to_string().into(),
            crate::fmt::figure(&r.figure, r.median_a).into(),
            crate::fmt::figure(&r.figure, r.median_b).into(),
            format!("{:.3}", r.ratio).into(),
            r.ci.cell(|x| format!("{x:.3}")).into(),
            format!("{:.4}", r.p).into(),
            match r.differs {
                true => format!("{verdict}  [ran on a different machine or runtime]"),
                false => verdict.to_string(),
            }
            .into(),
        ]);
    }
    let mut out = Vec::new();
    // Writing to a Vec cannot fail.
    let _ = t.text("", &mut out);
    s.push_str(&String::from_utf8_lossy(&out));
    for line in super::stacks::lines(&c.stacks, threshold_pct) {
        s.push_str(&line);
        s.push('\n');
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
