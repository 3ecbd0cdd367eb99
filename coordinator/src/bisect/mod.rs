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
mod git;
mod probe;

use crate::error::Error;
use directory::{WORKTREES, artifacts, open};
use probe::Unmeasured;
use report::bisect::search::{Ended, Search};
use report::bisect::{
    BUILDS, BisectDeclaration, BisectReport, Endpoints, PROBES, Probe, ProbeVerdict, SCHEMA,
    SCHEMA_DECLARATION, SCHEMA_VERSION, text,
};
use report::compare::Run;
use report::rundir;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicI32;

/// What was asked, the run flags already checked as a run's (`rounds`:
/// the counted samples each of its runs makes).
pub(crate) struct Asked {
    pub(crate) good: String,
    pub(crate) bad: String,
    pub(crate) repo: Option<PathBuf>,
    pub(crate) build: Option<String>,
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
    // A refusal is bad input (exit 2); git that cannot run or answer, a failure.
    let refused = |flag: &str, e: git::GitError| match e {
        git::GitError::Refused(m) if flag.is_empty() => Error::Usage(m),
        git::GitError::Refused(m) => Error::Usage(format!("{flag}: {m}")),
        other => Error::Failed(format!("git: {other}")),
    };
    let here =
        std::env::current_dir().map_err(|e| Error::Failed(format!("no working directory: {e}")))?;
    let repo = git::toplevel(asked.repo.as_deref().unwrap_or(&here)).map_err(|e| refused("", e))?;
    let good = git::commit(&repo, &asked.good).map_err(|e| refused("--good", e))?;
    let bad = git::commit(&repo, &asked.bad).map_err(|e| refused("--bad", e))?;
    if good == bad {
        return Err(usage("--good and --bad name the same commit: nothing to bisect".into()));
    }
    let commits = git::first_parent(&repo, &good, &bad).map_err(|e| refused("", e))?;
    let max_rounds = asked.max_rounds.unwrap_or(3 * asked.rounds);
    if max_rounds < asked.rounds {
        return Err(usage(format!(
            "--max-rounds {max_rounds} is below the {} rounds each run makes",
            asked.rounds
        )));
    }
    if !asked.threshold_pct.is_finite() || asked.threshold_pct < 0.0 {
        return Err(usage(format!("--threshold {}: must be 0 or more", asked.threshold_pct)));
    }
    let out = rundir::resolved(&here, &asked.output);
    let parent = out.parent().map(Path::to_path_buf).unwrap_or_default();
    let parent_real = std::fs::canonicalize(&parent).unwrap_or(parent);
    let repo_real = std::fs::canonicalize(&repo).unwrap_or(repo.clone());
    if parent_real.starts_with(&repo_real) {
        return Err(usage(format!(
            "--output '{}' is inside the repository: probes would see it in their worktrees; put it outside",
            asked.output.display()
        )));
    }
    let dirty = git::dirty(&repo).map_err(|e| refused("", e))?;
    // The worker the probes' runs use by default: this coordinator's sibling.
    let worker_sha = std::env::current_exe()
        .ok()
        .and_then(|me| evidence::file_sha256(&me.with_file_name("worker")).ok())
        .map(|(sha, _)| sha)
        .unwrap_or_default();
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
        program: report::rundir::declaration::Program::current(worker_sha),
    };
    let (declaration_sha256, environment_sha256) = open(&out, &declaration)?;
    let stop = crate::campaign::watch_signals();
    let mut b = Bisection {
        asked,
        repo,
        out: out.clone(),
        commits,
        max_rounds,
        stop,
        probes: Vec::new(),
        good_runs: Vec::new(),
        bad_runs: Vec::new(),
        target: None,
        warned: Default::default(),
    };
    let result = b.bisect();
    // Whatever happened, no worktree of ours is left.
    let _ = git::remove_worktree(&b.repo, &out.join(WORKTREES).join("probe"));
    let _ = std::fs::remove_dir_all(out.join(WORKTREES));
    let (endpoints, ended) = result?;
    let (first_bad, candidates, span) = match &ended {
        Some(Ended::FirstBad(k)) => {
            let span = b.span_change(*k);
            (Some(b.commits[*k].clone()), Vec::new(), span)
        }
        Some(Ended::OneOf(ks)) => (None, ks.iter().map(|k| b.commits[*k].clone()).collect(), None),
        None => (None, Vec::new(), None),
    };
    let answer = text::answer(endpoints.as_ref(), first_bad.as_deref(), &candidates, span.as_ref());
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
        answer,
        work_tree_dirty: dirty,
        artifacts: artifacts(&out, &b.probes)?,
    };
    report.artifacts.sort_by(|a, b| a.path.cmp(&b.path));
    // The derived files first, report.json last: one ending, as a run's.
    report::render::bisect::write_all(&out, &report)
        .map_err(|e| Error::Failed(format!("cannot draw the bisection: {e}")))?;
    evidence::write_atomic(&out.join(rundir::REPORT), &report::rundir::report::seal(&report))
        .map_err(|e| Error::Failed(format!("cannot write report.json: {e}")))?;
    Ok(report)
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
}

/// What one probe's runs gave: its directories (relative) and their runs.
struct Probed {
    dirs: Vec<String>,
    runs: Vec<Run>,
    reused: bool,
}

impl Bisection<'_> {
    /// The endpoints, then the search; the endpoints' comparison and where
    /// the search ended (None: nothing to bisect).
    fn bisect(&mut self) -> Result<(Option<Endpoints>, Option<Ended>), Error> {
        let n = self.commits.len() - 1;
        for k in [0, n] {
            let verdict = if k == 0 { ProbeVerdict::Good } else { ProbeVerdict::Bad };
            let probed = match self.runs(k, 1)? {
                Ok(p) => p,
                Err(why) => {
                    return Err(Error::Failed(format!(
                        "the {} endpoint {} cannot be measured: {why}",
                        if k == 0 { "good" } else { "bad" },
                        text::short(&self.commits[k])
                    )));
                }
            };
            self.say(k, verdict, &probed, None);
            match k {
                0 => self.good_runs = probed.runs,
                _ => self.bad_runs = probed.runs,
            }
        }
        let mut batch = 1;
        let row = loop {
            let row = report::bisect::endpoints(
                &self.good_runs,
                &self.bad_runs,
                &self.asked.figure,
                self.asked.threshold_pct,
            )
            .ok_or_else(|| {
                Error::Usage(format!(
                    "--figure {}: the endpoints' runs record no such figure in a stage they share",
                    self.asked.figure
                ))
            })?;
            // Not sure yet (too few rounds to judge, or slower beyond the
            // threshold but not significantly): both endpoints get more.
            let unsure = row.verdict == report::stats::Verdict::TooFewTrials
                || (row.verdict == report::stats::Verdict::NoSignificantDifference
                    && row.ratio > 1.0 + self.asked.threshold_pct / 100.0);
            let room = (batch + 1) * self.asked.rounds <= self.max_rounds;
            if row.regressed || !unsure || !room {
                break row;
            }
            batch += 1;
            eprintln!(
                "endpoints: not sure yet after {} rounds each (p = {:.3}, ×{:.2}): more rounds",
                row.n_a, row.p, row.ratio
            );
            for (i, k) in [(0, 0), (1, n)] {
                let more = self.runs(k, batch)?.map_err(|why| {
                    Error::Failed(format!("an endpoint cannot be measured again: {why}"))
                })?;
                self.probes[i].runs.extend(more.dirs);
                match i {
                    0 => self.good_runs.extend(more.runs),
                    _ => self.bad_runs.extend(more.runs),
                }
            }
        };
        let endpoints = Endpoints::from(&row);
        self.target = Some((row.stage.clone(), row.figure.clone()));
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
        Ok((Some(endpoints), search.ended()))
    }

    /// The target figure's samples pooled over `runs`.
    fn samples_of(&self, runs: &[Run]) -> Vec<f64> {
        let Some((stage, figure)) = &self.target else { return Vec::new() };
        runs.iter().flat_map(|r| report::bisect::samples(r, stage, figure)).collect()
    }

    /// One commit inside the range: batches of rounds until it reads good
    /// or bad, or `max_rounds` leave it unclear; skipped when it does not
    /// build or run.
    fn probe(&mut self, k: usize) -> Result<ProbeVerdict, Error> {
        let (good, bad) = (self.samples_of(&self.good_runs), self.samples_of(&self.bad_runs));
        let mut batch = 1;
        let mut all: Option<Probed> = None;
        loop {
            let probed = match self.runs(k, batch)? {
                Ok(p) => p,
                Err(why) => {
                    self.say(
                        k,
                        ProbeVerdict::Skipped,
                        &Probed { dirs: Vec::new(), runs: Vec::new(), reused: false },
                        Some(why.to_string()),
                    );
                    return Ok(ProbeVerdict::Skipped);
                }
            };
            let merged = match all.take() {
                None => probed,
                Some(mut a) => {
                    a.dirs.extend(probed.dirs);
                    a.runs.extend(probed.runs);
                    a.reused &= probed.reused;
                    a
                }
            };
            let xs = self.samples_of(&merged.runs);
            let c = report::bisect::classify(&good, &bad, &xs, self.asked.threshold_pct);
            let more = xs.len() as u32 + self.asked.rounds <= self.max_rounds;
            match c.verdict {
                Some(v) => return Ok(self.said(k, v, &merged, &xs, c)),
                None if more => {
                    eprintln!(
                        "probe {} ({}): neither like good nor like bad after {} rounds (p {:.3} against good, {:.3} against bad): more rounds",
                        self.probes.len() + 1,
                        text::short(&self.commits[k]),
                        xs.len(),
                        c.p_good,
                        c.p_bad
                    );
                    all = Some(merged);
                    batch += 1;
                }
                None => return Ok(self.said(k, ProbeVerdict::Unclear, &merged, &xs, c)),
            }
        }
    }

    /// Records and prints a classified probe; its verdict.
    fn said(
        &mut self,
        k: usize,
        verdict: ProbeVerdict,
        probed: &Probed,
        xs: &[f64],
        c: report::bisect::Classified,
    ) -> ProbeVerdict {
        self.say(k, verdict, probed, None);
        let last = self.probes.last_mut().expect("just said");
        if let Some((m, iv)) = report::bisect::median_of(xs) {
            last.median = Some(m);
            last.interval = Some(iv);
        }
        last.rounds = xs.len() as u32;
        last.p_good = Some(c.p_good);
        last.p_bad = Some(c.p_bad);
        verdict
    }

    /// Records a probe and prints its line.
    fn say(&mut self, k: usize, verdict: ProbeVerdict, probed: &Probed, reason: Option<String>) {
        let probe = Probe {
            commit: self.commits[k].clone(),
            position: k,
            verdict,
            reason: reason.clone(),
            median: None,
            interval: None,
            rounds: 0,
            p_good: None,
            p_bad: None,
            runs: probed.dirs.clone(),
            reused: probed.reused,
        };
        eprintln!(
            "probe {}: {} (position {} of {}): {}{}",
            self.probes.len() + 1,
            text::short(&probe.commit),
            k,
            self.commits.len() - 1,
            serde_json::to_value(verdict)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            match (reason, probed.reused) {
                (Some(why), _) => format!(": {why}"),
                (None, true) => " (reused: its runs verify)".into(),
                (None, false) => String::new(),
            }
        );
        self.probes.push(probe);
    }

    /// Batch `batch` of commit `k`'s runs: reused when its directory
    /// verifies, else built and run in the commit's worktree. Err(why)
    /// when the commit cannot be measured (its build or its run failed):
    /// a finding, not an error.
    fn runs(&mut self, k: usize, batch: u32) -> Result<Result<Probed, Unmeasured>, Error> {
        let commit = self.commits[k].clone();
        let short = text::short(&commit).to_string();
        let rel = match batch {
            1 => format!("{PROBES}/{short}"),
            b => format!("{PROBES}/{short}-{b}"),
        };
        let dir = self.out.join(&rel);
        let log_rel = format!("{BUILDS}/{short}.log");
        if self.out.join(&log_rel).exists() {
            return Ok(Err(Unmeasured::BuiltBefore(log_rel)));
        }
        if let Ok(run) = report::bisect::read_run(&dir) {
            return Ok(Ok(Probed { dirs: vec![rel], runs: vec![run], reused: true }));
        }
        if dir.exists() {
            // Ours, left by an interrupted probe: measured again.
            std::fs::remove_dir_all(&dir)
                .map_err(|e| Error::Failed(format!("cannot clear {rel}: {e}")))?;
        }
        let worktree = self.out.join(WORKTREES).join("probe");
        let _ = git::remove_worktree(&self.repo, &worktree);
        std::fs::create_dir_all(self.out.join(WORKTREES))
            .and_then(|_| std::fs::create_dir_all(self.out.join(PROBES)))
            .map_err(|e| Error::Failed(format!("cannot make {WORKTREES}: {e}")))?;
        git::add_worktree(&self.repo, &worktree, &commit)
            .map_err(|e| Error::Failed(format!("git worktree add {short}: {e}")))?;
        let result = self.build_and_run(&worktree, &dir, &log_rel);
        git::remove_worktree(&self.repo, &worktree)
            .map_err(|e| Error::Failed(format!("git worktree remove {short}: {e}")))?;
        match result? {
            Err(why) => Ok(Err(why)),
            Ok(()) => match report::bisect::read_run(&dir) {
                Ok(run) => Ok(Ok(Probed { dirs: vec![rel], runs: vec![run], reused: false })),
                Err(e) => Err(Error::Failed(format!("probe {rel} does not verify: {e}"))),
            },
        }
    }

    fn build_and_run(
        &mut self,
        worktree: &Path,
        dir: &Path,
        log_rel: &str,
    ) -> Result<Result<(), Unmeasured>, Error> {
        let stopped = |signal| Error::Interrupted {
            signal,
            message: format!(
                "bisection interrupted by signal {signal}; rerun with the same --output to resume"
            ),
        };
        if let Some(build) = &self.asked.build {
            let log = self.out.join(WORKTREES).join("build.log");
            match probe::build(build, worktree, &log, &self.stop)
                .map_err(|e| Error::Failed(format!("cannot run --build: {e}")))?
            {
                probe::Ended::Stopped(s) => return Err(stopped(s)),
                probe::Ended::Exited(st) if !st.success() => {
                    std::fs::create_dir_all(self.out.join(BUILDS))
                        .and_then(|_| std::fs::rename(&log, self.out.join(log_rel)))
                        .map_err(|e| Error::Failed(format!("cannot keep {log_rel}: {e}")))?;
                    return Ok(Err(Unmeasured::Build { status: st, log: log_rel.into() }));
                }
                probe::Ended::Exited(_) => {}
            }
        }
        let flags: Vec<String> =
            self.asked.flags.iter().filter(|f| *f != "--quiet").cloned().collect();
        let stderr = self.out.join(WORKTREES).join("run.stderr");
        let ended = probe::run(&flags, worktree, dir, &stderr, &self.stop)
            .map_err(|e| Error::Failed(format!("cannot start a probe's run: {e}")))?;
        // A failed run's stderr is shown whole; a finished run's warnings
        // (the machine's, the same for every probe) once each.
        let said = std::fs::read_to_string(&stderr).unwrap_or_default();
        let ok = matches!(ended, probe::Ended::Exited(st) if st.success());
        for line in said.lines() {
            if !ok || (line.starts_with("warning:") && self.warned.insert(line.to_string())) {
                eprintln!("{line}");
            }
        }
        match ended {
            probe::Ended::Stopped(s) => Err(stopped(s)),
            probe::Ended::Exited(st) if st.success() => Ok(Ok(())),
            probe::Ended::Exited(st) => {
                let rel = dir.strip_prefix(&self.out).unwrap_or(dir).display().to_string();
                Ok(Err(Unmeasured::Run { status: st, dir: rel }))
            }
        }
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
