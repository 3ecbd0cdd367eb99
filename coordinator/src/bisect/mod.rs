//! `coordinator bisect --good REV --bad REV --output DIR -- RUN FLAGS`:
//! which commit of the first-parent history from good to bad made a
//! figure slower. Each probed commit is checked out with `git worktree add
//! --detach` under DIR, built there (`--build`), and run there (this
//! coordinator with RUN FLAGS) into `probes/COMMIT/`, a complete run
//! directory; the endpoints first, then the commits `report::bisect::search`
//! picks, each classified against both endpoints by the rank test
//! (`report::bisect::classify`), with more rounds while it cannot tell.
//!
//! DIR holds `declaration.json` (written before the first probe),
//! `environment.json`, `probes/`, `builds/` (a failed build's log), then
//! `report.json` listing every probe in order. Rerun into the same DIR, it
//! resumes: a probe whose run directory verifies is read, not run again.
//! The user's work tree, index and HEAD are never touched; each worktree
//! is removed when its probe ends, and on SIGINT (exit 130).

mod directory;
pub(crate) mod gate;
mod measure;
mod probe;
mod windows;

use crate::error::Error;
use directory::{WORKTREES, artifacts, open};
use host::git;
use report::bisect::search::{Ended, Search};
use report::bisect::{
    BisectDeclaration, BisectReport, Confirmation, Endpoints, PROBES, Probe, ProbeVerdict, SCHEMA,
    SCHEMA_DECLARATION, SCHEMA_VERSION, text,
};
use report::compare::Run;
use report::gate::Side;
use report::rundir;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicI32;

/// What was asked, the run flags already checked as a run's (`rounds`:
/// the counted samples each of its runs makes).
pub(crate) struct Asked {
    pub(crate) good: String,
    pub(crate) bad: String,
    pub(crate) repo: Option<PathBuf>,
    pub(crate) build: Option<String>,
    /// The most one build may take (`--build-timeout`).
    pub(crate) build_timeout: Option<std::time::Duration>,
    pub(crate) figure: String,
    pub(crate) threshold_pct: f64,
    pub(crate) max_rounds: Option<u32>,
    pub(crate) output: PathBuf,
    pub(crate) flags: Vec<String>,
    pub(crate) rounds: u32,
}

/// Runs (or resumes) a bisection; its report, written and sealed.
pub(crate) fn run(asked: &Asked) -> Result<BisectReport, Error> {
    let usage = |m: String| Error::Usage(m);
    let (here, repo) = repository(asked.repo.as_deref())?;
    let good = git::commit(&repo, &asked.good).map_err(|e| refused("--good", e))?;
    let bad = git::commit(&repo, &asked.bad).map_err(|e| refused("--bad", e))?;
    if good == bad {
        return Err(usage("--good and --bad name the same commit: nothing to bisect".into()));
    }
    let commits = git::first_parent(&repo, &good, &bad).map_err(|e| refused("", e))?;
    // Two pairs of windows by default (each window one run of the probe).
    let max_rounds = asked.max_rounds.unwrap_or(4 * asked.rounds);
    if max_rounds < asked.rounds {
        return Err(usage(format!(
            "--max-rounds {max_rounds} is below the {} rounds each run makes",
            asked.rounds
        )));
    }
    if !asked.threshold_pct.is_finite() || asked.threshold_pct < 0.0 {
        return Err(usage(format!("--threshold {}: must be 0 or more", asked.threshold_pct)));
    }
    let out = outside(&here, &repo, &asked.output)?;
    let dirty = git::dirty(&repo).map_err(|e| refused("", e))?;
    let declaration = BisectDeclaration {
        schema: SCHEMA_DECLARATION.into(),
        schema_version: SCHEMA_VERSION,
        created_utc: evidence::timestamp::rfc3339_utc_now(),
        good: good.clone(),
        bad: bad.clone(),
        commits: commits.clone(),
        run_flags_sha256: evidence::sha256_hex(&evidence::to_bytes(&asked.flags)),
        build_sha256: asked.build.as_ref().map(|b| evidence::sha256_hex(b.as_bytes())),
        figure: asked.figure.clone(),
        threshold_pct: asked.threshold_pct,
        rounds: asked.rounds,
        max_rounds,
        work_tree_dirty: dirty,
        program: report::rundir::declaration::Program::current(worker_sha()),
    };
    let (declaration_sha256, environment_sha256) = open(&out, &declaration)?;
    let mut b = Bisection::new(asked, repo, out.clone(), commits, max_rounds);
    let result = b.bisect();
    b.remove_worktrees();
    let (endpoints, ended) = result?;
    let (first_bad, candidates, span) = match &ended {
        Some(Ended::FirstBad(k)) => {
            let span = b.span_change(*k);
            (Some(b.commits[*k].clone()), Vec::new(), span)
        }
        Some(Ended::OneOf(ks)) => (None, ks.iter().map(|k| b.commits[*k].clone()).collect(), None),
        None => (None, Vec::new(), None),
    };
    let answer = text::answer(
        endpoints.as_ref(),
        first_bad.as_deref(),
        &candidates,
        span.as_ref(),
        asked.threshold_pct,
    );
    let mut report = BisectReport {
        schema: SCHEMA.into(),
        schema_version: SCHEMA_VERSION,
        declaration_sha256,
        environment_sha256,
        figure: asked.figure.clone(),
        threshold_pct: asked.threshold_pct,
        commits: b.commits.len(),
        endpoints,
        probes: b.probes.clone(),
        first_bad,
        candidates,
        span,
        confirmation: b.confirmation.clone(),
        answer,
        work_tree_dirty: dirty,
        artifacts: artifacts(&out, &b.probes, b.confirmation.as_ref())?,
    };
    report.artifacts.sort_by(|a, b| a.path.cmp(&b.path));
    // The derived files first, report.json last: one ending, as a run's.
    report::render::bisect::write_all(&out, &report)
        .map_err(|e| Error::Failed(format!("cannot draw the bisection: {e}")))?;
    evidence::write_atomic(&out.join(rundir::REPORT), &report::rundir::report::seal(&report))
        .map_err(|e| Error::Failed(format!("cannot write report.json: {e}")))?;
    Ok(report)
}

/// A refusal of git's as bad input (exit 2) for `flag`; git that cannot
/// run or answer, a failure.
fn refused(flag: &str, e: git::GitError) -> Error {
    match e {
        git::GitError::Refused(m) if flag.is_empty() => Error::Usage(m),
        git::GitError::Refused(m) => Error::Usage(format!("{flag}: {m}")),
        other => Error::Failed(format!("git: {other}")),
    }
}

/// The working directory and the repository (`--repo`, else the working
/// directory's).
fn repository(repo: Option<&Path>) -> Result<(PathBuf, PathBuf), Error> {
    let here =
        std::env::current_dir().map_err(|e| Error::Failed(format!("no working directory: {e}")))?;
    let repo = git::toplevel(repo.unwrap_or(&here)).map_err(|e| refused("", e))?;
    Ok((here, repo))
}

/// `output` resolved, refused inside the repository (the worktrees would
/// see it).
fn outside(here: &Path, repo: &Path, output: &Path) -> Result<PathBuf, Error> {
    let out = rundir::resolved(here, output);
    let parent = out.parent().map(Path::to_path_buf).unwrap_or_default();
    let parent_real = std::fs::canonicalize(&parent).unwrap_or(parent);
    if parent_real.starts_with(std::fs::canonicalize(repo).unwrap_or(repo.to_path_buf())) {
        return Err(Error::Usage(format!(
            "--output '{}' is inside the repository: the worktrees would see it; put it outside",
            output.display()
        )));
    }
    Ok(out)
}

/// The SHA-256 of the worker the runs use by default: this coordinator's sibling.
fn worker_sha() -> String {
    std::env::current_exe()
        .ok()
        .and_then(|me| evidence::file_sha256(&me.with_file_name("worker")).ok())
        .map(|(sha, _)| sha)
        .unwrap_or_default()
}

/// A bisection under way.
struct Bisection<'a> {
    asked: &'a Asked,
    repo: PathBuf,
    out: PathBuf,
    commits: Vec<String>,
    max_rounds: u32,
    stop: std::sync::Arc<AtomicI32>,
    probes: Vec<Probe>,
    good_runs: Vec<Run>,
    bad_runs: Vec<Run>,
    /// The stage and figure the endpoints differ in most.
    target: Option<(String, String)>,
    /// The probes' runs' warnings already shown.
    warned: std::collections::BTreeSet<String>,
    /// The worktrees made and built, by position, kept while needed.
    trees: BTreeMap<usize, PathBuf>,
    /// The boundary measured side by side, when it was.
    confirmation: Option<Confirmation>,
}

impl<'a> Bisection<'a> {
    /// A bisection of `commits` in `repo` into `out`, nothing measured yet;
    /// SIGINT and SIGTERM are watched from now.
    fn new(
        asked: &'a Asked,
        repo: PathBuf,
        out: PathBuf,
        commits: Vec<String>,
        max_rounds: u32,
    ) -> Bisection<'a> {
        Bisection {
            asked,
            repo,
            out,
            commits,
            max_rounds,
            stop: crate::campaign::watch_signals(),
            probes: Vec::new(),
            good_runs: Vec::new(),
            bad_runs: Vec::new(),
            target: None,
            warned: Default::default(),
            trees: BTreeMap::new(),
            confirmation: None,
        }
    }

    /// The endpoints' runs in the order they ran, good as base and bad as
    /// head: good, bad, bad, good, batch by batch.
    fn endpoint_runs(&self) -> Vec<(Side, &Run)> {
        let (good, bad) = (self.good_runs.chunks_exact(2), self.bad_runs.chunks_exact(2));
        good.zip(bad)
            .flat_map(|(g, b)| {
                [(Side::Base, &g[0]), (Side::Head, &b[0]), (Side::Head, &b[1]), (Side::Base, &g[1])]
            })
            .collect()
    }

    /// Whatever happened, no worktree of ours is left.
    fn remove_worktrees(&mut self) {
        for tree in std::mem::take(&mut self.trees).into_values() {
            let _ = git::remove_worktree(&self.repo, &tree);
        }
        let _ = std::fs::remove_dir_all(self.out.join(WORKTREES));
    }
}

impl Bisection<'_> {
    /// The endpoints, then the search; the endpoints' comparison and where
    /// the search ended (None: nothing to bisect).
    fn bisect(&mut self) -> Result<(Option<Endpoints>, Option<Ended>), Error> {
        let n = self.commits.len() - 1;
        // The endpoints in pairs of runs, good, bad, bad, good, so a drift
        // of the machine over the pair moves both alike (issue 63: a good
        // run and a bad run seconds apart on a drifting machine read as "no
        // regression").
        let mut batch = 1;
        let mut dirs: [Vec<String>; 2] = Default::default();
        let mut reused = true;
        let row = loop {
            for (i, index) in
                [(0, 2 * batch - 1), (1, 2 * batch - 1), (1, 2 * batch), (0, 2 * batch)]
            {
                let k = if i == 0 { 0 } else { n };
                let short = text::short(&self.commits[k]).to_string();
                let rel = match index {
                    1 => format!("{PROBES}/{short}"),
                    i => format!("{PROBES}/{short}-{i}"),
                };
                let m = self.measure(k, &rel)?.map_err(|why| {
                    Error::Failed(format!(
                        "the {} endpoint {short} cannot be measured: {why}",
                        if k == 0 { "good" } else { "bad" },
                    ))
                })?;
                reused &= m.reused;
                dirs[i].push(m.dir);
                match i {
                    0 => self.good_runs.push(m.run),
                    _ => self.bad_runs.push(m.run),
                }
            }
            if batch == 1 {
                for (i, verdict) in [(0, ProbeVerdict::Good), (1, ProbeVerdict::Bad)] {
                    let p = self.endpoint_probe(
                        if i == 0 { 0 } else { n },
                        verdict,
                        Vec::new(),
                        reused,
                    );
                    self.say(p);
                }
            }
            // Judged in pairs, as the gate judges (issue 76), at a level
            // corrected for every batch the endpoints may take.
            let looks = (self.max_rounds / (2 * self.asked.rounds).max(1)).max(1) as usize;
            let e = report::gate::bisection::endpoints(
                &self.endpoint_runs(),
                &self.asked.figure,
                self.asked.threshold_pct,
                looks,
            )
            .ok_or_else(|| {
                Error::Usage(format!(
                    "--figure {}: the endpoints' runs record no such figure in a stage they share",
                    self.asked.figure
                ))
            })?;
            // Not sure yet (too few pairs, an interval that reaches past the
            // threshold, or couples that disagree): both endpoints get more.
            let room = 2 * (batch + 1) * self.asked.rounds <= self.max_rounds;
            let Some(why) = e.unsure.as_ref().filter(|_| room) else { break e };
            batch += 1;
            eprintln!(
                "endpoints: not sure yet after {} pairs (×{:.2}, p = {:.3}: {why}): another pair of runs each",
                e.interval.n, e.ratio, e.p
            );
        };
        let [good_dirs, bad_dirs] = dirs;
        self.probes[0].runs = good_dirs;
        self.probes[1].runs = bad_dirs;
        let endpoints = row;
        self.target = Some((endpoints.stage.clone(), endpoints.figure.clone()));
        // The endpoints' medians, now that the figure is known.
        for (p, runs) in [(0, &self.good_runs), (1, &self.bad_runs)] {
            let xs = self.samples_of(runs);
            if let Some((m, iv)) = report::bisect::median_of(&xs) {
                self.probes[p].median = Some(m);
                self.probes[p].interval = Some(iv);
                self.probes[p].rounds = xs.len() as u32;
            }
        }
        eprintln!("endpoints: {}", text::change(&endpoints));
        if !endpoints.regressed {
            return Ok((Some(endpoints), None));
        }
        let mut search = Search::new(self.commits.len());
        while let Some(k) = search.next() {
            let verdict = self.probe(k)?;
            search.record(k, verdict);
        }
        let mut ended = search.ended();
        // One commit is named only when its boundary holds side by side.
        if let Some(Ended::FirstBad(upper)) = ended {
            self.confirmation = self.confirm(upper - 1, upper)?;
            if self.confirmation.as_ref().is_some_and(|c| !c.held) {
                ended = Some(Ended::OneOf(vec![upper - 1, upper]));
            }
        }
        Ok((Some(endpoints), ended))
    }

    /// The target figure's samples pooled over `runs`.
    fn samples_of(&self, runs: &[Run]) -> Vec<f64> {
        let Some((stage, figure)) = &self.target else { return Vec::new() };
        runs.iter().flat_map(|r| report::bisect::samples(r, stage, figure)).collect()
    }

    /// The span that changed most between the last good probe before the
    /// first bad commit and that commit, where both record spans.
    fn span_change(&self, first_bad: usize) -> Option<Endpoints> {
        let runs_of = |k: usize| -> Option<Vec<Run>> {
            let p = self.probes.iter().find(|p| p.position == k && !p.runs.is_empty())?;
            p.runs.iter().map(|d| report::bisect::read_run(&self.out.join(d)).ok()).collect()
        };
        let last_good = self
            .probes
            .iter()
            .filter(|p| p.verdict == ProbeVerdict::Good && p.position < first_bad)
            .map(|p| p.position)
            .max()?;
        let (good, bad) = (runs_of(last_good)?, runs_of(first_bad)?);
        let row = report::bisect::endpoints(&good, &bad, "span:*", self.asked.threshold_pct)?;
        row.regressed.then(|| Endpoints::from(&row))
    }
}
