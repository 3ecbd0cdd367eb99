//! A gate's words and files, from its report.json alone: the console's
//! lines, `comment.md` (the pull request's comment, one per gate name by
//! its marker), `summary.md`, `report.html`, what `GITHUB_OUTPUT` gets,
//! and the exports CI dashboards read (Bencher's BMF, and
//! github-action-benchmark's `customSmallerIsBetter`). `verify` re-renders
//! the derived ones and compares them, as a run's.

use super::{Rendered, benchmarks};
use crate::doc::{Align, Cell, Table};
use crate::fmt::{figure, p_value};
use crate::rundir::gate::{COMMENT, COMMENT_LIMIT, GateReport, Judged, MARKER, Verdict};

mod page;
mod plot;

/// A commit as the gate names it.
fn short(commit: &str) -> &str {
    &commit[..commit.len().min(12)]
}

/// "×1.103 (×1.061–×1.147)".
fn change(j: &Judged) -> String {
    format!("×{:.3} (×{:.3}–×{:.3})", j.ratio, j.low, j.high)
}

/// The answer in one sentence, from the gated figures.
pub fn sentence(gated: &[Judged], verdict: Verdict, threshold_pct: f64) -> String {
    let named = |v: Verdict| -> Vec<String> {
        gated
            .iter()
            .filter(|j| j.verdict == v)
            .map(|j| format!("`{}` {} {}", j.stage, j.figure, change(j)))
            .collect()
    };
    match verdict {
        Verdict::Regressed => {
            format!(
                "Regressed: {} slower than base, beyond {threshold_pct}%.",
                named(verdict).join(", ")
            )
        }
        Verdict::Improved => {
            format!(
                "Improved: {} faster than base, beyond {threshold_pct}%; nothing regressed.",
                named(verdict).join(", ")
            )
        }
        Verdict::Same => format!(
            "Same: every gated figure's interval lies inside ±{threshold_pct}% ({} figure(s)).",
            gated.len()
        ),
        Verdict::NotSure if gated.is_empty() => "Not sure: no gated figure could be judged.".into(),
        Verdict::NotSure => {
            let why: Vec<String> = gated
                .iter()
                .filter(|j| j.verdict == Verdict::NotSure)
                .map(|j| {
                    format!(
                        "`{}` {}: {}",
                        j.stage,
                        j.figure,
                        j.reason.as_deref().unwrap_or("undecided")
                    )
                })
                .collect();
            format!("Not sure: {}.", why.join("; "))
        }
    }
}

/// The figures as a table: stage, figure, base, head, change, p, couples
/// (pairs), verdict.
fn table(rows: &[Judged]) -> Table {
    use Align::{Left, Right};
    let mut t = Table::new(&[
        ("stage", Left),
        ("figure", Left),
        ("base", Right),
        ("head", Right),
        ("head/base (interval)", Right),
        ("p", Right),
        ("couples (pairs)", Right),
        ("verdict", Left),
    ]);
    for j in rows {
        t.row(vec![
            Cell::code(j.stage.clone()),
            Cell::code(j.figure.clone()),
            figure(&j.figure, j.base_median).into(),
            figure(&j.figure, j.head_median).into(),
            change(j).into(),
            p_value(j.p).into(),
            format!("{} ({})", j.couples, j.pairs).into(),
            j.verdict.word().into(),
        ]);
    }
    t
}

/// The heading of the details, in the comment and on the page.
const DETAILS: &str = "Every figure, the machine, the drift";

/// What the comment, summary.md and the page hold below their first line,
/// as Markdown in two parts: the sentence, the gated table and the
/// attribution; then the details (every other figure, the machine, the
/// drift), which each formats in its own way.
fn parts(r: &GateReport) -> (String, String) {
    let mut s = format!(
        "**stagebench gate**: head `{}` against base `{}`{}\n\n{}\n\n",
        short(&r.head),
        short(&r.base),
        match &r.merge_base_of {
            Some(b) => format!(" (the merge base with `{b}`)"),
            None => String::new(),
        },
        r.sentence
    );
    table(&r.gated).markdown(&mut s);
    for a in &r.attribution {
        s.push_str(&format!(
            "\nChanged most in `{}`: {} {} (p {}).\n",
            a.stage,
            a.figure,
            change(a),
            p_value(a.p)
        ));
    }
    for c in &r.sampled {
        s.push_str(&format!("\nSampled functions in `{}`: {}\n", c.stage, c.sentence));
    }
    let mut details = format!(
        "Couples: each base run with the head run beside it, in windows base, head, head, base (then the reverse), each couple one unit: its ratio head's lowest trial over base's lowest, the couples' median judged by the sign test; {} counted trial(s) a side; intervals at {} ({}).\n\n",
        r.rounds,
        crate::stats::coverage_pct(r.gated.first().map_or(0.95, |j| j.confidence)),
        r.correction
    );
    if !r.others.is_empty() {
        table(&r.others).markdown(&mut details);
        details.push('\n');
    }
    details.push_str(&format!("Machine: {}\n\n", r.machine));
    let mut drift = Table::new(&[
        ("window", Align::Right),
        ("order", Align::Left),
        ("base median", Align::Right),
        ("head median", Align::Right),
    ]);
    let gated = r.gated.first().map(|j| j.figure.as_str()).unwrap_or("wall_s");
    for (i, w) in r.windows.iter().enumerate() {
        let cell = |x: Option<f64>| x.map_or("–".to_string(), |x| figure(gated, x));
        drift.row(vec![
            (i + 1).to_string().into(),
            w.order.join(", ").into(),
            cell(w.base_median).into(),
            cell(w.head_median).into(),
        ]);
    }
    drift.markdown(&mut details);
    (s, details)
}

/// The two parts as one Markdown text, the details in GitHub's
/// `<details>` block; cut to `room` characters when given, the details
/// first, and said so.
fn body(r: &GateReport, room: Option<usize>) -> String {
    let (mut s, details) = parts(r);
    let details = format!("\n<details><summary>{DETAILS}</summary>\n\n{details}\n</details>\n");
    match room {
        Some(room) if s.len() + details.len() > room => {
            s.push_str("\n(The details were cut: the comment would pass GitHub's 65,536 characters; see summary.md in the gate's directory.)\n");
        }
        _ => s.push_str(&details),
    }
    s
}

/// The pull request's comment: the marker, then the body, within GitHub's limit.
pub fn comment(r: &GateReport) -> String {
    let marker = format!("{MARKER}{} -->\n", r.name);
    let room = COMMENT_LIMIT - marker.len() - 200;
    format!("{marker}{}", body(r, Some(room)))
}

/// The console's lines: the sentence, then each gated figure.
pub fn text(r: &GateReport) -> String {
    let mut s = format!("{}\n", crate::doc::plain(&r.sentence));
    let mut t = Vec::new();
    let _ = table(&r.gated).text("  ", &mut t);
    s.push_str(&String::from_utf8_lossy(&t));
    for a in &r.attribution {
        s.push_str(&format!("changed most in {}: {} {}\n", a.stage, a.figure, change(a)));
    }
    for c in &r.sampled {
        s.push_str(&format!("sampled in {}: {}\n", c.stage, crate::doc::plain(&c.sentence)));
    }
    s
}

/// Every file derived from a gate's report, in a fixed order.
pub fn derived(r: &GateReport) -> Vec<Rendered> {
    vec![
        Rendered {
            path: super::SUMMARY.into(),
            bytes: format!("# Gate\n\n{}", body(r, None)).into_bytes(),
        },
        Rendered { path: COMMENT.into(), bytes: comment(r).into_bytes() },
        Rendered { path: super::html::HTML.into(), bytes: page::page(r).into_bytes() },
    ]
}

/// Writes them into the gate's directory.
pub fn write_all(
    dir: &std::path::Path,
    r: &GateReport,
) -> Result<Vec<Rendered>, crate::chart::RenderError> {
    super::write_files(dir, derived(r))
}

/// What `GITHUB_OUTPUT` gets: `verdict=`, `exit-code=`, `report-sha256=`.
pub fn github_output(r: &GateReport, exit_code: u8, report_sha256: &str) -> String {
    let verdict = r.verdict.word().replace(' ', "-");
    format!("verdict={verdict}\nexit-code={exit_code}\nreport-sha256={report_sha256}\n")
}

/// The gate's figures as benchmarks: head's median, bounded by base's
/// median times the couples' interval of head / base.
fn entries(r: &GateReport, report_sha256: &str) -> Vec<benchmarks::Entry> {
    r.gated
        .iter()
        .chain(&r.others)
        .map(|j| benchmarks::Entry {
            stage: j.stage.clone(),
            figure: j.figure.clone(),
            value: j.head_median,
            lower: j.base_median * j.low,
            upper: j.base_median * j.high,
            extra: format!(
                "couples: {}\npairs: {}\nverdict: {}\nreport-sha256: {report_sha256}",
                j.couples,
                j.pairs,
                j.verdict.word()
            ),
        })
        .collect()
}

/// Bencher's Metric Format (see [`benchmarks`]).
pub fn bmf(r: &GateReport) -> Vec<u8> {
    benchmarks::bmf(&entries(r, ""))
}

/// github-action-benchmark's `customSmallerIsBetter` (see [`benchmarks`]),
/// `extra` the couples and pairs, the verdict and the report's SHA-256.
pub fn github_benchmark(r: &GateReport, report_sha256: &str) -> Vec<u8> {
    benchmarks::github(&entries(r, report_sha256))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rundir::gate::{SCHEMA, SCHEMA_VERSION, Window};

    fn judged(stage: &str, figure: &str, ratio: f64, verdict: Verdict) -> Judged {
        Judged {
            stage: stage.into(),
            figure: figure.into(),
            base_median: 1.0,
            head_median: ratio,
            ratio,
            low: ratio * 0.98,
            high: ratio * 1.02,
            confidence: 0.95,
            p: 0.01,
            pairs: 12,
            couples: 4,
            verdict,
            reason: None,
        }
    }

    pub(super) fn report(others: usize) -> GateReport {
        let gated = vec![judged("command", "span:work_s", 1.3, Verdict::Regressed)];
        GateReport {
            schema: SCHEMA.into(),
            schema_version: SCHEMA_VERSION,
            declaration_sha256: "d".into(),
            environment_sha256: "e".into(),
            name: "ci".into(),
            base: "a".repeat(40),
            head: "b".repeat(40),
            merge_base_of: None,
            threshold_pct: 5.0,
            correction: "Bonferroni over 1 gated figure(s)".into(),
            sentence: sentence(&gated, Verdict::Regressed, 5.0),
            gated,
            others: (0..others)
                .map(|i| judged(&format!("stage{i}"), "wall_s", 1.0, Verdict::Same))
                .collect(),
            attribution: Vec::new(),
            sampled: Vec::new(),
            stacks: Vec::new(),
            verdict: Verdict::Regressed,
            rounds: 12,
            windows: vec![Window {
                order: vec!["base".into(), "head".into(), "head".into(), "base".into()],
                runs: vec![],
                base_median: Some(0.05),
                head_median: Some(0.065),
            }],
            machine: "a CPU".into(),
            work_tree_dirty: false,
            artifacts: Vec::new(),
        }
    }

    #[test]
    fn a_comment_fits_githubs_limit_its_details_cut_first_and_said() {
        let small = comment(&report(3));
        assert!(small.starts_with("<!-- stagebench gate: ci -->\n"), "{small}");
        assert!(small.contains("<details>") && !small.contains("were cut"), "{small}");
        let big = comment(&report(2000));
        assert!(big.chars().count() <= COMMENT_LIMIT, "{}", big.len());
        assert!(!big.contains("<details>"), "the details stayed");
        assert!(big.contains("The details were cut"), "and it says so");
        // The gated table and the sentence stay.
        assert!(big.contains("| `command` | `span:work_s` |") && big.contains("Regressed: "));
        // summary.md keeps everything.
        let summary = String::from_utf8(derived(&report(2000))[0].bytes.clone()).unwrap();
        assert!(summary.contains("`stage1999`"));
    }

    /// A regressed stage's sampled functions: under the table in the
    /// comment and on the page, a line of the console's, and nowhere
    /// without them.
    #[test]
    fn a_sampled_change_is_said_in_the_comment_the_console_and_the_page() {
        let mut r = report(0);
        assert!(!comment(&r).contains("Sampled functions") && !text(&r).contains("sampled in"));
        r.sampled.push(crate::rundir::gate::SampledChange {
            stage: "command".into(),
            sentence: "1 function(s)' share changed: `f (p.py)` (main) self 50.0% → 60.0%".into(),
        });
        let said = comment(&r);
        let line = "\nSampled functions in `command`: 1 function(s)' share changed: `f (p.py)`";
        assert!(said.contains(line) && said.find(line) < said.find("<details>"), "{said}");
        assert!(
            text(&r).contains("sampled in command: 1 function(s)' share changed: f (p.py) (main)")
        );
        assert!(page::page(&r).contains("Sampled functions in <code>command</code>"));
    }

    #[test]
    fn github_output_and_the_exports_name_what_ci_reads() {
        let r = report(1);
        assert_eq!(
            github_output(&r, 4, "abc"),
            "verdict=regressed\nexit-code=4\nreport-sha256=abc\n"
        );
        let bmf: serde_json::Value = serde_json::from_slice(&bmf(&r)).unwrap();
        assert_eq!(bmf["command/span:work"]["time_s"]["value"], 1.3);
        assert!(bmf["stage0"]["wall_s"]["lower_value"].as_f64().unwrap() < 1.0);
        let gh: serde_json::Value = serde_json::from_slice(&github_benchmark(&r, "abc")).unwrap();
        let names: Vec<&str> =
            gh.as_array().unwrap().iter().map(|x| x["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["command/span:work", "stage0"]);
        assert_eq!(gh[0]["unit"], "s");
        assert!(gh[0]["extra"].as_str().unwrap().ends_with("report-sha256: abc"));
        // A span's other figures are measures of the same benchmark.
        let mut r = report(0);
        for f in ["span:work_cpu_s", "span:work_median_s", "span:work_n"] {
            r.others.push(judged("command", f, 1.1, Verdict::Same));
        }
        let spans: serde_json::Value = serde_json::from_slice(&super::bmf(&r)).unwrap();
        let measures: Vec<&String> =
            spans["command/span:work"].as_object().unwrap().keys().collect();
        assert_eq!(measures, ["calls", "cpu_s", "median_s", "time_s"]);
    }
}
