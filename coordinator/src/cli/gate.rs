//! `coordinator gate`'s command line: its flags checked before anything is
//! built, the gate run (`crate::bisect::gate`), then what CI reads: the
//! console's lines, the exports, `GITHUB_STEP_SUMMARY` and `GITHUB_OUTPUT`
//! (a path that cannot be written is a warning line, never a failed
//! gate), and the exit code of the verdict.

use crate::error::Error;
use protocol::exit::coordinator as code;
use report::rundir::gate::Verdict;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// `coordinator gate`'s flags.
#[derive(clap::Args, Debug)]
pub(crate) struct GateArgs {
    /// The branch the pull request goes into (its merge base with --head is measured).
    #[arg(long, value_name = "REV")]
    pub(super) base: String,
    /// The pull request's commit.
    #[arg(long, value_name = "REV")]
    pub(super) head: String,
    /// Measure --base itself, not its merge base with --head.
    #[arg(long)]
    pub(super) base_exact: bool,
    /// The git repository. [default: the current directory's]
    #[arg(long, value_name = "DIR")]
    pub(super) repo: Option<PathBuf>,
    /// A shell command run once in each commit's worktree before its runs.
    #[arg(long, value_name = "CMD")]
    pub(super) build: Option<String>,
    /// The most seconds one build may take.
    #[arg(long, value_name = "SECONDS")]
    pub(super) build_timeout: Option<String>,
    /// A figure to gate on; repeat for several: wall_s (each stage's),
    /// cpu_s, peak_rss_bytes, span:NAME_s. [default: wall_s]
    #[arg(long = "gate", value_name = "FIGURE")]
    pub(super) gates: Vec<String>,
    /// Percent beyond which head is regressed (or improved), and inside which it is the same.
    #[arg(long, default_value_t = 5.0)]
    pub(super) threshold: f64,
    /// The most counted trials a side before the gate stops undecided. [default: forty times the run's rounds: twenty windows]
    #[arg(long, value_name = "N")]
    pub(super) max_rounds: Option<u32>,
    /// What "not sure" does: fail (exit 5) or pass (exit 0, with a warning line).
    #[arg(long, value_name = "fail|pass", default_value = "fail")]
    pub(super) not_sure: String,
    /// The gate's name, in its comment's marker (one comment per name).
    #[arg(long, default_value = "default")]
    pub(super) name: String,
    /// Write the judged figures in Bencher's Metric Format.
    #[arg(long, value_name = "FILE")]
    pub(super) export_bmf: Option<PathBuf>,
    /// Write them as github-action-benchmark's customSmallerIsBetter.
    #[arg(long, value_name = "FILE")]
    pub(super) export_github_benchmark: Option<PathBuf>,
    /// The gate's directory: new, or one this gate left unfinished (it resumes).
    #[arg(long, value_name = "DIR")]
    pub(super) output: PathBuf,
    /// A run's own flags, after `--`: what each window's runs run.
    #[arg(last = true, required = true, value_name = "RUN FLAGS")]
    pub(super) flags: Vec<String>,
}

/// Runs the gate its flags ask for; its exit code.
pub(super) fn run(a: GateArgs) -> Result<u8, Error> {
    let rounds = super::run_flags(&a.flags)?;
    if a.build_timeout.is_some() && a.build.is_none() {
        return Err(Error::Usage("--build-timeout limits --build, which is not given".into()));
    }
    // The name is the comment's hidden marker: nothing in it may end the
    // HTML comment or be markup.
    if !crate::plan::is_label(&a.name) {
        return Err(Error::Usage(format!(
            "--name '{}': 1 to 64 of A-Z a-z 0-9 _ - (it marks the gate's one comment)",
            a.name
        )));
    }
    let pass = match a.not_sure.as_str() {
        "fail" => false,
        "pass" => true,
        other => return Err(Error::Usage(format!("--not-sure {other}: fail or pass"))),
    };
    use report::render::export::{Exports, Format};
    let exports = Exports::new([
        (Format::Bmf, a.export_bmf),
        (Format::GithubBenchmark, a.export_github_benchmark),
    ]);
    for (flag, path) in exports.0.iter().map(|(f, p)| (f.flag(), p)) {
        if path.symlink_metadata().is_ok() {
            return Err(Error::Usage(format!("{flag} '{}' already exists", path.display())));
        }
        let inside = std::path::absolute(path).ok().zip(std::path::absolute(&a.output).ok());
        if inside.is_some_and(|(p, o)| p.starts_with(&o)) {
            return Err(Error::Usage(format!(
                "{flag} '{}' is inside the gate's directory, which holds its evidence only",
                path.display()
            )));
        }
    }
    let asked = crate::bisect::gate::GateAsked {
        base: a.base,
        head: a.head,
        base_exact: a.base_exact,
        repo: a.repo,
        build: a.build,
        build_timeout: a
            .build_timeout
            .as_deref()
            .map(crate::plan::positive_secs)
            .transpose()
            .map_err(|e| Error::Usage(format!("--build-timeout {e}")))?,
        gates: if a.gates.is_empty() { vec!["wall_s".into()] } else { a.gates },
        threshold_pct: a.threshold,
        max_rounds: a.max_rounds,
        name: a.name,
        output: a.output,
        flags: a.flags,
        rounds,
    };
    let (report, sha) = crate::bisect::gate::run(&asked)?;
    print!("{}", report::render::gate::text(&report));
    println!(
        "evidence: {}/ (report.json, comment.md; every run under windows/)",
        asked.output.display()
    );
    let exit = match report.verdict {
        Verdict::Regressed => code::REGRESSION,
        Verdict::NotSure if !pass => code::NOT_SURE,
        Verdict::NotSure => {
            eprintln!(
                "warning: the gate is not sure ({}); --not-sure pass makes it exit 0",
                report.sentence
            );
            code::SUCCESS
        }
        Verdict::Improved | Verdict::Same => code::SUCCESS,
    };
    for path in exports.write_gate(&report, &sha)?.paths {
        println!("exported {}", path.display());
    }
    let comment = report::render::gate::comment(&report);
    github("GITHUB_STEP_SUMMARY", &comment);
    github("GITHUB_OUTPUT", &report::render::gate::github_output(&report, exit, &sha));
    Ok(exit)
}

/// Appends `text` to the file GitHub names in `var`, when it is set; a
/// path that cannot be written is a warning line.
fn github(var: &str, text: &str) {
    let Some(path) = std::env::var_os(var).filter(|p| !p.is_empty()) else { return };
    let path = Path::new(&path);
    let written = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()).and_then(|_| f.write_all(b"\n")));
    if let Err(e) = written {
        eprintln!(
            "warning: {var} '{}' cannot be written ({e}); the gate's verdict stands",
            path.display()
        );
    }
}
