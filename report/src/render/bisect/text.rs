//! A bisection in words: the one sentence it ends with, and its probes in
//! the order they were made.

use crate::fmt;
use crate::rundir::bisect::{BisectReport, Endpoints, ProbeVerdict, SHORT};
use std::fmt::Write as _;

/// A commit as the text shows it.
pub fn short(commit: &str) -> &str {
    &commit[..commit.len().min(SHORT)]
}

/// A probe's verdict as a word.
pub fn verdict(v: ProbeVerdict) -> &'static str {
    match v {
        ProbeVerdict::Good => "good",
        ProbeVerdict::Bad => "bad",
        ProbeVerdict::Unclear => "unclear",
        ProbeVerdict::Skipped => "skipped",
    }
}

/// "work wall_s 101.2 ms → 141.5 ms, ×1.40 (95% CI 1.35-1.46), p = 0.0002".
pub fn change(e: &Endpoints) -> String {
    format!(
        "{} {} {} → {}, ×{:.2} ({}), p = {}",
        e.stage,
        e.figure,
        fmt::figure(&e.figure, e.median_good),
        fmt::figure(&e.figure, e.median_bad),
        e.ratio,
        e.interval.phrase(|x| format!("{x:.2}")),
        fmt::p_value(e.p)
    )
}

/// The sentence a bisection ends with. "No regression" only where the
/// endpoints' interval stays below the threshold (`threshold_pct`): one
/// that reaches past it is not sure, and says so.
pub fn answer(
    endpoints: Option<&Endpoints>,
    first_bad: Option<&str>,
    candidates: &[String],
    span: Option<&Endpoints>,
    threshold_pct: f64,
) -> String {
    let Some(e) = endpoints else {
        return "the endpoints record no such figure in a common stage: nothing to bisect".into();
    };
    if let (false, Some(why)) = (e.regressed, &e.unsure) {
        return format!(
            "not sure the endpoints differ: {why}, so nothing was bisected; give more rounds (--max-rounds) on a quieter machine ({})",
            change(e)
        );
    }
    if !e.regressed && e.interval.high > 1.0 + threshold_pct / 100.0 {
        return format!(
            "not sure the endpoints differ: the interval of their ratio reaches past the {threshold_pct}% threshold, so nothing was bisected; give more rounds (--max-rounds) on a quieter machine ({})",
            change(e)
        );
    }
    if !e.regressed {
        return format!("no regression between the endpoints: nothing to bisect ({})", change(e));
    }
    let span =
        span.map(|s| format!("; the span that changed most: {}", change(s))).unwrap_or_default();
    match first_bad {
        Some(c) => format!(
            "first bad commit {}: {} (stage {} changed most){span}",
            short(c),
            change(e),
            e.stage
        ),
        None => format!(
            "the first bad commit is one of {} (the probes cannot narrow it further: a commit there or beside it was unclear or did not build, or the boundary did not hold side by side): {}",
            candidates.iter().map(|c| short(c)).collect::<Vec<_>>().join(", "),
            change(e)
        ),
    }
}

/// The answer, then the probes as a table: commit, verdict, median with its
/// interval, rounds, p against each endpoint.
pub fn render(r: &BisectReport) -> String {
    let mut s = format!("{}\n", r.answer);
    let figure = &r.figure;
    let _ = writeln!(
        s,
        "{:>3}  {:<12}  {:>8}  {:<9}  {:>10}  {:<32}  {:>6}  {:>7}  {:>7}",
        "#", "commit", "position", "verdict", "median", "interval", "rounds", "p good", "p bad"
    );
    for (i, p) in r.probes.iter().enumerate() {
        let f = |x: f64| fmt::figure(figure, x);
        let verdict = verdict(p.verdict);
        let _ = writeln!(
            s,
            "{:>3}  {:<12}  {:>8}  {:<9}  {:>10}  {:<32}  {:>6}  {:>7}  {:>7}{}",
            i + 1,
            short(&p.commit),
            p.position,
            verdict,
            p.median.map(f).unwrap_or_else(|| "–".into()),
            p.interval.as_ref().map(|iv| iv.cell(f)).unwrap_or_else(|| "–".into()),
            p.rounds,
            p.p_good.map(fmt::p_value).unwrap_or_else(|| "–".into()),
            p.p_bad.map(fmt::p_value).unwrap_or_else(|| "–".into()),
            match (&p.reason, p.reused) {
                (Some(why), _) => format!("  {why}"),
                (None, true) => "  (reused)".into(),
                (None, false) => String::new(),
            }
        );
        if !p.windows.is_empty() {
            let f = |x: f64| fmt::figure(figure, x);
            let each: Vec<String> = p
                .windows
                .iter()
                .map(|w| format!("good {} bad {}", f(w.median_good), f(w.median_bad)))
                .collect();
            let _ =
                writeln!(s, "     the endpoints beside it, window by window: {}", each.join("; "));
        }
    }
    if let Some(c) = &r.confirmation {
        let _ = writeln!(
            s,
            "boundary {} → {} side by side: {} → {}, p = {}: {}",
            short(&c.lower),
            short(&c.upper),
            fmt::figure(figure, c.median_lower),
            fmt::figure(figure, c.median_upper),
            fmt::p_value(c.p),
            if c.held { "holds" } else { "does not hold, so no single commit is named" }
        );
    }
    s
}
