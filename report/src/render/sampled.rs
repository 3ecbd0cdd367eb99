//! A stage's sampled stacks (`--sample`) in words and tables: the one
//! formatter of summary.md's section and report.html's, and the lines its
//! flame graph is drawn from.

use crate::modes::Report;
use crate::rundir::report::StageRecord;
use crate::rundir::samples::{SampledRecord, Share};
use std::fmt::Write as _;

/// Rows each stage's table shows (by self share).
pub const ROWS: usize = 10;

/// The table's columns after the lane and the function.
pub const COLUMNS: [&str; 2] = ["self share", "inclusive share"];

/// One row: a function's lane, name, and cells in [`COLUMNS`] order, with
/// the numbers they sort by.
pub struct Row<'a> {
    pub lane: &'a str,
    pub function: &'a str,
    pub cells: [String; 2],
    pub keys: [f64; 2],
}

/// A share with its interval: `61.2% (58.1–64.0%)`.
pub fn share(s: &Share) -> String {
    let pct = |x: f64| format!("{:.1}", x * 100.0);
    if s.low == s.high {
        return format!("{}%", pct(s.median));
    }
    format!("{}% ({}–{}%)", pct(s.median), pct(s.low), pct(s.high))
}

/// How a table orders its functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum By {
    /// Samples with the function on top: where the time is spent.
    Own,
    /// Samples with the function anywhere on the stack: what it costs with its callees.
    Inclusive,
}

impl By {
    pub const BOTH: [By; 2] = [By::Own, By::Inclusive];

    pub fn title(self) -> &'static str {
        match self {
            By::Own => "by self share",
            By::Inclusive => "by inclusive share",
        }
    }
}

/// The functions with the largest shares `by`, at most [`ROWS`].
pub fn rows(x: &SampledRecord, by: By) -> Vec<Row<'_>> {
    let key = |f: &crate::rundir::samples::FunctionShare| match by {
        By::Own => f.own.median,
        By::Inclusive => f.inclusive.median,
    };
    let mut top: Vec<_> = x.functions.iter().filter(|f| key(f) > 0.0).collect();
    top.sort_by(|a, b| key(b).total_cmp(&key(a)));
    top.into_iter()
        .take(ROWS)
        .map(|f| Row {
            lane: &f.lane,
            function: &f.function,
            cells: [share(&f.own), share(&f.inclusive)],
            keys: [f.own.median, f.inclusive.median],
        })
        .collect()
}

/// The sentence above a stage's table: what sampled, how often, what it saw.
pub fn line(x: &SampledRecord) -> String {
    let lanes: Vec<String> =
        x.lanes.iter().map(|(lane, n)| format!("`{lane}` {}", round(*n))).collect();
    let per = x.per();
    let over = match x.programs {
        true => format!(
            "{} preparation program(s), one per worker process, each over its whole life",
            x.trials
        ),
        false => format!("{} trial(s)", x.trials),
    };
    format!(
        "{} at {} Hz over {over}: {} running samples per {per} ({}). Idle and waiting threads are not sampled; a share is of the running samples, its interval over the {per}s.",
        x.sampler,
        x.rate_hz,
        round(x.samples),
        lanes.join(", ")
    )
}

fn round(x: f64) -> String {
    match x.fract() == 0.0 {
        true => format!("{x:.0}"),
        false => format!("{x:.1}"),
    }
}

/// A sentence per `--span` function that ran inside the samples: what was
/// on top of the stack while it ran.
pub fn inside_lines(st: &StageRecord, x: &SampledRecord) -> Vec<String> {
    x.inside
        .iter()
        .map(|i| {
            let median = st
                .spans
                .get(&i.span)
                .map(|s| format!("median {} a call, ", crate::fmt::duration(s.median_s)))
                .unwrap_or_default();
            let parts: Vec<String> = i
                .top
                .iter()
                .map(|(lane, f, share)| format!("{:.1}% in `{f}` ({lane})", share * 100.0))
                .collect();
            format!(
                "inside `{}` ({median}{} samples per {}): {}",
                i.span,
                round(i.samples),
                x.per(),
                parts.join(", ")
            )
        })
        .collect()
}

/// The flame graph's lines: each merged stack with its samples over all
/// the trials or programs (`LANE;frame;… COUNT`).
pub fn flame_lines(x: &SampledRecord) -> Vec<String> {
    x.stacks
        .iter()
        .map(|(stack, per)| (stack, (per * x.trials as f64).round() as u64))
        .filter(|(_, n)| *n > 0)
        .map(|(stack, n)| format!("{stack} {n}"))
        .collect()
}

/// The sampled stages, in plan order.
pub fn stages(r: &Report) -> Vec<(&String, &StageRecord, &SampledRecord)> {
    r.ordered().into_iter().filter_map(|(k, st)| st.samples.as_ref().map(|x| (k, st, x))).collect()
}

/// summary.md's section: per sampled stage, its line and its top functions.
pub fn summary(s: &mut String, r: &Report) {
    let all = stages(r);
    if all.is_empty() {
        return;
    }
    let _ = writeln!(s, "\n## Sampled stacks (where the Python time went)\n");
    for (key, st, x) in all {
        let _ = writeln!(s, "`{key}`: {}\n", line(x));
        for l in inside_lines(st, x) {
            let _ = writeln!(s, "- {l}");
        }
        if !x.inside.is_empty() {
            let _ = writeln!(s);
        }
        for by in By::BOTH {
            let _ = writeln!(s, "Top functions {}:\n", by.title());
            let _ = writeln!(s, "| lane | function | {} |", COLUMNS.join(" | "));
            let _ = writeln!(s, "|---|---|---:|---:|");
            for row in rows(x, by) {
                let _ = writeln!(
                    s,
                    "| {} | `{}` | {} |",
                    row.lane,
                    row.function.replace('|', "\\|"),
                    row.cells.join(" | ")
                );
            }
            let _ = writeln!(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rundir::samples::{parse, record};

    #[test]
    fn rows_are_by_self_share_and_flame_lines_keep_every_sample() {
        let a = parse("main;m (t.py);f (t.py) 70\nmain;m (t.py);g (t.py) 30\nforked;h (t.py) 50\n")
            .unwrap();
        let x = record("py-spy 0.4.3", 100, &[a.clone(), a], &[], 1).unwrap();
        let own = rows(&x, By::Own);
        let names: Vec<&str> = own.iter().map(|r| r.function).collect();
        assert_eq!(names, vec!["f (t.py)", "h (t.py)", "g (t.py)"]);
        assert_eq!(own[0].cells[0], "46.7%");
        let inclusive = rows(&x, By::Inclusive);
        assert_eq!(inclusive[0].function, "m (t.py)");
        assert_eq!(inclusive[0].cells, ["0.0%".to_string(), "66.7%".to_string()]);
        let total: u64 = flame_lines(&x)
            .iter()
            .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
            .sum();
        assert_eq!(total, 300);
        assert!(
            line(&x).contains("150 running samples per trial (`forked` 50, `main` 100)"),
            "{}",
            line(&x)
        );
    }

    /// The sentence of what ran inside a span reads in its order: the
    /// span, its calls' median, then its samples per trial (it once said
    /// "trial samples per 9").
    #[test]
    fn what_ran_inside_a_span_is_counted_in_samples_per_trial() {
        let r: crate::modes::Report =
            serde_json::from_str(include_str!("fixtures/trials-report.json")).unwrap();
        let mut st = r.ordered()[0].1.clone();
        let name = "work_a".to_string();
        let call = serde_json::json!({"calls": 4, "sum_s": 0.02, "first_s": 0.005,
            "median_s": 0.00385, "p95_s": 0.006, "p99_s": 0.006, "max_s": 0.006,
            "self_s": 0.02, "concurrent_s": 0.0, "share": 0.1});
        let call = serde_json::from_value(call).unwrap();
        st.spans = [(name.clone(), call)].into();
        let median = "3.850 ms";
        let a = parse("main;m (t.py);f (t.py) 70\n").unwrap();
        let mut x = record("py-spy 0.4.3", 100, &[a.clone(), a], &[], 1).unwrap();
        x.inside = vec![crate::rundir::samples::InsideSpan {
            span: name.clone(),
            qualname: "m".into(),
            samples: 9.0,
            top: vec![("main".into(), "f (t.py)".into(), 0.5)],
        }];
        assert_eq!(
            inside_lines(&st, &x),
            [format!(
                "inside `{name}` (median {median} a call, 9 samples per trial): 50.0% in `f (t.py)` (main)"
            )]
        );
    }
}
