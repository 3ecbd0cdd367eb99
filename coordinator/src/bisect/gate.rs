//! `coordinator gate --base REV --head REV --output DIR -- RUN FLAGS`: is
//! head slower than base? Both are checked out and built once each in
//! their own worktrees (a bisection of two commits: its worktrees, builds
//! and runs), then run in interleaved windows (base, head, head, base;
//! then head, base, base, head), one run of RUN FLAGS per letter, into
//! `windows/W/SIDE-I/`, and judged by couples of runs (`report::gate`) after each
//! window, until every gated figure is decided or `--max-rounds`. DIR
//! holds the declaration, the environment, every window's runs, report.json
//! (bound) and the derived summary.md, comment.md and report.html. Rerun
//! into the same DIR, it resumes: a run whose directory verifies is read,
//! not run again.

use super::directory::open_as;
use super::{Asked, Bisection, outside, refused, repository, worker_sha};
use crate::error::Error;
use host::git;
use report::bisect::text::short;
use report::compare::Run;
use report::gate::Side;
use report::rundir::bisect::Artifact;
use report::rundir::gate::{
    GateDeclaration, GateReport, SCHEMA, SCHEMA_DECLARATION, SCHEMA_VERSION, WINDOWS, Window,
};
use std::path::PathBuf;

/// What was asked, the run flags already checked as a run's.
pub(crate) struct GateAsked {
    pub(crate) base: String,
    pub(crate) head: String,
    /// Measure `--base` itself, not its merge base with head.
    pub(crate) base_exact: bool,
    pub(crate) repo: Option<PathBuf>,
    pub(crate) build: Option<String>,
    pub(crate) build_timeout: Option<std::time::Duration>,
    pub(crate) gates: Vec<String>,
    pub(crate) threshold_pct: f64,
    pub(crate) max_rounds: Option<u32>,
    pub(crate) name: String,
    pub(crate) output: PathBuf,
    pub(crate) flags: Vec<String>,
    pub(crate) rounds: u32,
}

/// Runs (or resumes) a gate; its report, written and sealed, and that
/// report.json's SHA-256.
pub(crate) fn run(g: &GateAsked) -> Result<(GateReport, String), Error> {
    let (here, repo) = repository(g.repo.as_deref())?;
    let asked_base = git::commit(&repo, &g.base).map_err(|e| refused("--base", e))?;
    let head = git::commit(&repo, &g.head).map_err(|e| refused("--head", e))?;
    let base = match g.base_exact {
        true => asked_base.clone(),
        false => git::merge_base(&repo, &asked_base, &head).map_err(|e| refused("--base", e))?,
    };
    if base == head {
        return Err(Error::Usage(format!(
            "--base and --head name the same commit ({}): nothing to gate",
            short(&head)
        )));
    }
    // Twenty windows, forty couples: the sign test needs ten couples to
    // decide at 99.75% (one figure, twenty looks), and beside a neighbour
    // burning the cores twenty couples left 6 of 20 comment-only changes
    // "not sure" on a span's CPU time, forty 1 (scripts/bench-gate.py). An
    // undecided gate pays for them; a decided one stops.
    let max_rounds = g.max_rounds.unwrap_or(40 * g.rounds);
    if max_rounds < 2 * g.rounds {
        return Err(Error::Usage(format!(
            "--max-rounds {max_rounds} is below one window's {} rounds a side",
            2 * g.rounds
        )));
    }
    if !g.threshold_pct.is_finite() || g.threshold_pct <= 0.0 {
        return Err(Error::Usage(format!("--threshold {}: must be above 0", g.threshold_pct)));
    }
    let out = outside(&here, &repo, &g.output)?;
    let dirty = git::dirty(&repo).map_err(|e| refused("", e))?;
    let declaration = GateDeclaration {
        schema: SCHEMA_DECLARATION.into(),
        schema_version: SCHEMA_VERSION,
        created_utc: evidence::timestamp::rfc3339_utc_now(),
        name: g.name.clone(),
        base: base.clone(),
        head: head.clone(),
        merge_base_of: (base != asked_base).then(|| g.base.clone()),
        run_flags_sha256: evidence::sha256_hex(&evidence::to_bytes(&g.flags)),
        build_sha256: g.build.as_ref().map(|b| evidence::sha256_hex(b.as_bytes())),
        gates: g.gates.clone(),
        threshold_pct: g.threshold_pct,
        rounds: g.rounds,
        max_rounds,
        work_tree_dirty: dirty,
        program: report::rundir::declaration::Program::current(worker_sha()),
    };
    let (declaration_sha256, environment_sha256) =
        open_as(&out, &declaration, SCHEMA_DECLARATION, "gate", |a, b| a.same_gate(b))?;
    // A bisection of the two commits: its worktrees, builds and runs.
    let asked = Asked {
        good: base.clone(),
        bad: head.clone(),
        repo: Some(repo.clone()),
        build: g.build.clone(),
        build_timeout: g.build_timeout,
        figure: "wall_s".into(),
        threshold_pct: g.threshold_pct,
        max_rounds: Some(max_rounds),
        output: out.clone(),
        flags: g.flags.clone(),
        rounds: g.rounds,
    };
    let mut b =
        Bisection::new(&asked, repo, out.clone(), vec![base.clone(), head.clone()], max_rounds);
    let result = windows(&mut b, g, max_rounds);
    b.remove_worktrees();
    let (runs, windows, found) = result?;
    let stacks = {
        let sides: Vec<(Side, &Run)> = runs.iter().map(|(_, s, r)| (*s, r)).collect();
        report::gate::stacks::compared(&sides, g.threshold_pct)
    };
    let machine = report::rundir::environment::one_line(&out.join(report::rundir::ENVIRONMENT));
    let sentence = report::render::gate::sentence(&found.gated, found.verdict, g.threshold_pct);
    let mut artifacts = Vec::new();
    for (rel, _, _) in &runs {
        let path = format!("{rel}/{}", report::rundir::REPORT);
        let (sha256, bytes) = evidence::file_sha256(&out.join(&path))
            .map_err(|e| Error::Failed(format!("cannot hash {path}: {e}")))?;
        artifacts.push(Artifact { path, sha256, bytes, kind: "run".into() });
    }
    artifacts.sort_by(|a, b| a.path.cmp(&b.path));
    let report = GateReport {
        schema: SCHEMA.into(),
        schema_version: SCHEMA_VERSION,
        declaration_sha256,
        environment_sha256,
        name: g.name.clone(),
        base,
        head,
        merge_base_of: declaration.merge_base_of.clone(),
        threshold_pct: g.threshold_pct,
        correction: format!(
            "Bonferroni over {} gated figure(s) and {} look(s)",
            found.gated.len().max(1),
            (max_rounds / (2 * g.rounds).max(1)).max(1)
        ),
        gated: found.gated,
        others: found.others,
        attribution: found.attribution,
        sampled: found.sampled,
        stacks,
        verdict: found.verdict,
        sentence,
        rounds: runs.iter().filter(|(_, s, _)| *s == Side::Base).count() as u32 * g.rounds,
        windows,
        machine,
        work_tree_dirty: dirty,
        artifacts,
    };
    report::render::gate::write_all(&out, &report)
        .map_err(|e| Error::Failed(format!("cannot write the gate's files: {e}")))?;
    let sealed = report::rundir::report::seal(&report);
    evidence::write_atomic(&out.join(report::rundir::REPORT), &sealed)
        .map_err(|e| Error::Failed(format!("cannot write report.json: {e}")))?;
    Ok((report, evidence::sha256_hex(&sealed)))
}

/// Every run made, in order: (directory, side, run).
type Made = Vec<(String, Side, Run)>;

/// The windows, each judged as it ends, until every gated figure is
/// decided or a side has `max_rounds` counted rounds.
fn windows(
    b: &mut Bisection<'_>,
    g: &GateAsked,
    max_rounds: u32,
) -> Result<(Made, Vec<Window>, report::gate::Found), Error> {
    let mut made: Made = Vec::new();
    let mut windows = Vec::new();
    // The windows the gate may end after, each a look at the figures.
    let looks = (max_rounds / (2 * g.rounds).max(1)).max(1) as usize;
    for w in 0.. {
        let mut reused = 0;
        let mut window =
            Window { order: Vec::new(), runs: Vec::new(), base_median: None, head_median: None };
        for (i, side) in report::gate::order(w).into_iter().enumerate() {
            let nth = if i < 2 { 1 } else { 2 };
            let rel = format!("{WINDOWS}/{}/{}-{nth}", w + 1, side.word());
            let k = usize::from(side == Side::Head);
            let m = b.measure(k, &rel)?.map_err(|why| {
                Error::Failed(format!(
                    "{} {} cannot be measured: {why}",
                    side.word(),
                    short(&b.commits[k])
                ))
            })?;
            reused += usize::from(m.reused);
            window.order.push(side.word().into());
            window.runs.push(m.dir.clone());
            made.push((m.dir, side, m.run));
        }
        let runs: Vec<(Side, &Run)> = made.iter().map(|(_, s, r)| (*s, r)).collect();
        let found = report::gate::found(&runs, &g.gates, g.threshold_pct, looks)
            .map_err(|e| Error::Usage(e.to_string()))?;
        if let Some(first) = found.gated.first() {
            let last = &runs[runs.len() - 4..];
            window.base_median =
                report::gate::median(last, Side::Base, &first.stage, &first.figure);
            window.head_median =
                report::gate::median(last, Side::Head, &first.stage, &first.figure);
        }
        windows.push(window);
        let decided =
            found.gated.iter().all(|j| j.verdict != report::rundir::gate::Verdict::NotSure);
        let rounds = made.iter().filter(|(_, s, _)| *s == Side::Base).count() as u32 * g.rounds;
        let again = match reused {
            0 => String::new(),
            n => format!(", {n} run(s) read again from an interrupted gate"),
        };
        eprintln!(
            "gate: window {} done, {rounds} round(s) a side{again}: {}",
            w + 1,
            found.verdict.word()
        );
        if (decided && !found.gated.is_empty()) || rounds + 2 * g.rounds > max_rounds {
            return Ok((made, windows, found));
        }
    }
    unreachable!("the windows end when decided or at --max-rounds")
}
