//! The command line: [`parse`] the flags, then [`run`] the command. Each
//! command returns `Ok` with its exit code (0, or 4 for a comparison or a
//! gate that found a regression, 5 for a gate not sure) or an `error::Error`, which is printed as one line and
//! mapped to its exit code by `Error::exit_code`, nowhere else.

mod args;
#[cfg(test)]
mod docs_tests;
#[cfg(test)]
mod exit_codes;
mod gate;
mod print;
mod resolve;

pub use args::Cli;

use crate::error::Error;
use args::{Command, DatasetCommand};
use clap::FromArgMatches;
use protocol::exit::coordinator as code;
use report::render::export::Exports;
use std::path::Path;
use std::process::ExitCode;

/// Warnings only, and none from the SVG rasteriser: a bar narrower than a
/// pixel makes it warn about a zero-width rectangle it then rightly skips.
const QUIET_LIBRARIES: &str = "warn,usvg=error,resvg=error,tiny_skia=error";

/// The command line of this process, parsed (clap exits on bad flags), with
/// logging set up for what follows.
pub fn parse() -> Cli {
    init_logging();
    let matches = grammar().get_matches();
    let mut cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    cli.matches = matches;
    cli
}

/// The command line's grammar: the flags every run shares, then each mode's
/// own (from the registry), and `--mode` naming the registry's modes.
pub(crate) fn grammar() -> clap::Command {
    use clap::CommandFactory;
    use clap::builder::{PossibleValue, PossibleValuesParser};
    let modes = crate::modes::MODES;
    let mut cmd = Cli::command().mut_arg("mode", |a| {
        a.value_parser(PossibleValuesParser::new(
            modes.iter().map(|m| PossibleValue::new(m.name()).help(m.about())),
        ))
        .default_value(modes[0].name())
        .required(false)
    });
    for m in modes {
        cmd = m.args(cmd);
    }
    cmd
}

/// Runs the command; its exit code.
pub fn run(cli: Cli) -> ExitCode {
    match command(cli) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

fn command(cli: Cli) -> Result<u8, Error> {
    match cli.command {
        Some(Command::Dataset(cmd)) => {
            let line = match cmd {
                DatasetCommand::Generate { out, scale, seed } => {
                    host::dataset::generate_cmd(&out, scale, seed)
                }
                DatasetCommand::Freeze { series, events, out } => {
                    host::dataset::freeze_cmd(&series, &events, &out)
                }
                DatasetCommand::Path => {
                    host::dataset::resolve(None, false).map(|(dir, _)| dir.display().to_string())
                }
                DatasetCommand::Scan { data } => host::dataset::scan_cmd(data.as_deref()),
            }?;
            println!("{line}");
            Ok(code::SUCCESS)
        }
        Some(Command::Compare {
            run_a,
            run_b,
            threshold,
            figures,
            allow_incomparable,
            strict,
            output,
            html,
        }) => {
            if let Some(out) = output.as_ref().filter(|o| o.symlink_metadata().is_ok()) {
                return Err(Error::Usage(format!("output '{}' already exists", out.display())));
            }
            if let Some(out) = &output {
                report::compare::refuse_inside_evidence("--output", out)?;
            }
            if let Some(page) = &html {
                report::compare::refuse_inside_evidence("--html", page)?;
            }
            if let Some(page) = &html {
                if page.symlink_metadata().is_ok() {
                    return Err(Error::Usage(format!(
                        "--html '{}' already exists",
                        page.display()
                    )));
                }
                let folder = page.parent().filter(|d| !d.as_os_str().is_empty());
                if let Some(d) = folder.filter(|d| !d.is_dir()) {
                    return Err(Error::Usage(format!(
                        "--html '{}': its folder '{}' does not exist (create it first)",
                        page.display(),
                        d.display()
                    )));
                }
            }
            let figures = match figures.is_empty() {
                true => report::compare::DEFAULT_FIGURES.iter().map(|f| f.to_string()).collect(),
                false => figures,
            };
            let asked = report::compare::Asked {
                threshold_pct: threshold,
                allow_incomparable,
                strict,
                figures: &figures,
            };
            let c = report::compare::compare(&run_a, &run_b, &asked)?;
            print!("{}", report::compare::render(&c, threshold));
            if let Some(out) = &output {
                report::compare::write_output(out, &c, threshold)?;
                println!("wrote {}/ ({})", out.display(), report::compare::OUTPUT_FILES.join(", "));
            }
            if let Some(page) = &html {
                report::compare::write_html(page, &c, [&run_a, &run_b], threshold)?;
                println!("wrote {}", page.display());
            }
            Ok(if c.rows.iter().any(|r| r.regressed) { code::REGRESSION } else { code::SUCCESS })
        }
        Some(Command::Render { dir, export }) => {
            let exports = export.exports();
            exports.check(Some(&dir))?;
            let (redrawn, paths) = redraw(&dir)?;
            for path in paths {
                println!("rendered {}", path.display());
            }
            match redrawn {
                Redrawn::Run(report) => write_exports(&exports, &report, &dir),
                Redrawn::Gate(gate) => {
                    let json = dir.join("report.json");
                    let bytes = std::fs::read(&json)
                        .map_err(|e| Error::Failed(format!("reading '{}': {e}", json.display())))?;
                    let sha = evidence::sha256_hex(&bytes);
                    for path in exports.write_gate(&gate, &sha)?.paths {
                        println!("exported {}", path.display());
                    }
                    Ok(code::SUCCESS)
                }
                Redrawn::Other if exports.0.is_empty() => Ok(code::SUCCESS),
                Redrawn::Other => Err(Error::Usage(
                    "exports apply to a run or a gate, not to a campaign or a bisection".into(),
                )),
            }
        }
        Some(Command::Dashboard { dir }) => {
            println!("{}", report::dashboard::write(&dir)?);
            Ok(code::SUCCESS)
        }
        Some(Command::History { dir, figures, min_segment }) => {
            let figures = match figures.is_empty() {
                true => report::history::DEFAULT_FIGURES.iter().map(|f| f.to_string()).collect(),
                false => figures,
            };
            let h = report::history::history(&dir, &figures, min_segment)?;
            print!("{}", report::history::text::render(&h));
            println!("{}", report::history::files::write(&dir, &h)?);
            Ok(code::SUCCESS)
        }
        Some(Command::Bisect {
            good,
            bad,
            repo,
            build,
            build_timeout,
            figure,
            threshold,
            max_rounds,
            output,
            flags,
        }) => {
            let rounds = run_flags(&flags)?;
            if build_timeout.is_some() && build.is_none() {
                return Err(Error::Usage(
                    "--build-timeout limits --build, which is not given".into(),
                ));
            }
            let asked = crate::bisect::Asked {
                good,
                bad,
                repo,
                build,
                build_timeout: build_timeout
                    .as_deref()
                    .map(crate::plan::positive_secs)
                    .transpose()
                    .map_err(|e| Error::Usage(format!("--build-timeout {e}")))?,
                figure,
                threshold_pct: threshold,
                max_rounds,
                output,
                flags,
                rounds,
            };
            let report = crate::bisect::run(&asked)?;
            print!("{}", report::bisect::text::render(&report));
            println!(
                "evidence: {}/ (report.json; every probe's run under probes/)",
                asked.output.display()
            );
            Ok(code::SUCCESS)
        }
        Some(Command::Gate(args)) => gate::run(args),
        Some(Command::Doctor { workers }) => Ok(print::doctor(workers)),
        Some(Command::Campaign { file, output, worker_bin, export_trace }) => {
            let worker_bin = match worker_bin {
                Some(w) => w,
                None => resolve::default_worker_bin()?,
            };
            // Refused before anything runs, as a run's exports are.
            let trace = report::render::export::Format::Trace;
            let exports = Exports::new([(trace, export_trace.clone())]);
            exports.check(output.as_deref())?;
            let done = crate::campaign::run(file.as_deref(), output.as_deref(), worker_bin)?;
            if let Some(path) = &export_trace {
                let bytes = report::campaign::trace::chrome(&done.report).map_err(|e| {
                    Error::Usage(format!("--export-trace '{}': {e}", path.display()))
                })?;
                evidence::write_new(path, &bytes).map_err(|e| {
                    Error::Failed(format!("--export-trace '{}': {e}", path.display()))
                })?;
                println!("exported {}", path.display());
            }
            println!("campaign {}:", done.report.name);
            for line in &done.report.judgment {
                println!("  {line}");
            }
            println!(
                "evidence: {}/ (report.json, summary.md, report.html, plots/campaign.svg and .png; every run under runs/)",
                done.dir.display()
            );
            // A failed trial is a finding the report keeps, and a failure.
            for f in &done.report.failed_trials {
                eprintln!(
                    "error: step '{}' trial {}: {} (see {}/{})",
                    f.step,
                    f.trial,
                    f.message,
                    done.dir.display(),
                    f.run
                );
            }
            for step in &done.report.not_run {
                eprintln!("error: not run: {step}");
            }
            for step in done.report.steps.iter().filter(|s| s.kind != "cold") {
                let bad = step.trials.iter().filter(|t| !t.reproduces_cold()).count();
                if bad > 0 {
                    eprintln!(
                        "error: step '{}': the resumed state did not reproduce a cold run in {bad} of {} trials",
                        step.name,
                        step.trials.len()
                    );
                }
            }
            Ok(if done.report.clean() { code::SUCCESS } else { code::RUN_FAILED })
        }
        Some(Command::Verify { dir }) => {
            if !dir.is_dir() {
                return Err(Error::Usage(format!("'{}' is not a directory", dir.display())));
            }
            let v = report::verify::verify(&dir).map_err(|e| {
                Error::Unverified(format!("verification of '{}' failed: {e}", dir.display()))
            })?;
            println!("verified {}: {v}", dir.display());
            Ok(code::SUCCESS)
        }
        None => {
            let mut run = cli.run;
            let exports = std::mem::take(&mut run.export).exports();
            exports.check(run.output.as_deref())?;
            let plan = resolve::resolve(run, &cli.matches)?;
            let summary = crate::run::execute(&plan).map_err(|f| {
                // A failed run on the built-in cohort whose sources no longer
                // match their frozen hashes: say how to remake it (here, not
                // in failure.json, which names no path). Decided by hashing
                // the cohort again, not by reading the error's text.
                let altered = plan.settings.data.is_none()
                    && matches!(f.error, crate::error::RunError::Failed { .. })
                    && host::dataset::builtin_altered();
                match f.error.recorded(f.failure_file.as_deref()) {
                    Error::Failed(m) if altered => Error::Failed(format!(
                        "{m}; {}",
                        host::dataset::regenerate_hint(&host::dataset::builtin_dir())
                    )),
                    e => e,
                }
            })?;
            // The run is recorded whole by now: a console that cannot be
            // written to (a closed pipe) loses only its copy of the view.
            let view = report::render::view::View::of(&summary.report);
            let (mut out, mut err) = (std::io::stdout().lock(), std::io::stderr().lock());
            let _ = report::render::console::write(&view, &summary.dir, &mut out, &mut err);
            write_exports(&exports, &summary.report, &summary.dir)
        }
    }
}

/// `coordinator bisect`'s RUN FLAGS, parsed as a run's: the counted
/// samples of each stage a run with them makes; refused (exit 2) when they
/// are not a run's flags, name a command, or give `--output` (a probe's
/// is its own).
fn run_flags(flags: &[String]) -> Result<u32, Error> {
    let argv = std::iter::once("coordinator".to_string()).chain(flags.iter().cloned());
    let refused = |m: String| Error::Usage(format!("RUN FLAGS: {m}"));
    let matches = grammar().try_get_matches_from(argv).map_err(|e| {
        let text = e.to_string();
        let line = text.lines().next().unwrap_or("not a run's flags");
        refused(line.trim_start_matches("error: ").to_string())
    })?;
    let cli = Cli::from_arg_matches(&matches).map_err(|e| refused(e.to_string()))?;
    if cli.command.is_some() {
        return Err(refused("they name a command; give the flags of a run".into()));
    }
    if cli.run.output.is_some() {
        return Err(refused(
            "--output is given; each run goes in DIR's own folders (a bisection's probes/, a gate's windows/)"
                .into(),
        ));
    }
    // Every probe's run would write the same file: the first would, the
    // next would refuse it, and the bisection would fail on a good probe.
    let e = &cli.run.export;
    let exports = [
        ("--export-json", e.export_json.is_some()),
        ("--export-csv", e.export_csv.is_some()),
        ("--export-markdown", e.export_markdown.is_some()),
        ("--export-trace", e.export_trace.is_some()),
        ("--export-benchmark-tsv", e.export_benchmark_tsv.is_some()),
        ("--export-folded", e.export_folded.is_some()),
        ("--export-bmf", e.export_bmf.is_some()),
        ("--export-github-benchmark", e.export_github_benchmark.is_some()),
    ];
    if let Some((flag, _)) = exports.iter().find(|(_, given)| *given) {
        return Err(refused(format!(
            "{flag} is given; every run would write the same file: export one afterwards with `coordinator render DIR/probes/COMMIT {flag} FILE` (a gate's: DIR/windows/W/SIDE-I, or the gate's own exports)"
        )));
    }
    let mode = crate::modes::by_name(&cli.run.mode)
        .ok_or_else(|| refused(format!("--mode {}: no such mode", cli.run.mode)))?;
    Ok(mode.rounds(&matches))
}

/// Writes the exports of a finished run (the run's evidence is complete
/// either way): a path found taken is a usage error, a failed write a failure.
fn write_exports(exports: &Exports, report: &report::Report, dir: &Path) -> Result<u8, Error> {
    let written = exports.write(report, dir)?;
    for p in written.paths {
        println!("exported {}", p.display());
    }
    for why in written.skipped {
        eprintln!("warning: {why}");
    }
    Ok(code::SUCCESS)
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("STAGEBENCH_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(QUIET_LIBRARIES));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .without_time()
        .try_init();
}

/// `coordinator render`: every binding but the derived files checked, then
/// summary.md and the plots redrawn from report.json; a run's parsed report
/// comes back for the exports (a campaign has none).
/// A directory that does not verify exits 3; a redraw that cannot be written, 1.
/// What `render` redrew: what its exports can be made from.
enum Redrawn {
    Run(Box<report::Report>),
    Gate(Box<report::rundir::gate::GateReport>),
    Other,
}

fn redraw(dir: &Path) -> Result<(Redrawn, Vec<std::path::PathBuf>), Error> {
    use report::verify::Checked;
    let failed = |e: &dyn std::fmt::Display| {
        Error::Failed(format!("rendering '{}' failed: {e}", dir.display()))
    };
    let checked = report::verify::checked_report(dir)
        .map_err(|e| Error::Unverified(format!("rendering '{}' failed: {e}", dir.display())))?;
    let (report, files) = match checked {
        Checked::Run(mut r) => {
            r.read_jobs(dir, false).map_err(|e| {
                Error::Unverified(format!("rendering '{}' failed: {e}", dir.display()))
            })?;
            let files = report::render::write_all(dir, &r).map_err(|e| failed(&e))?;
            (Redrawn::Run(r), files)
        }
        Checked::Campaign(c) => {
            (Redrawn::Other, report::campaign::summary::write_all(dir, &c).map_err(|e| failed(&e))?)
        }
        Checked::Bisection(b) => {
            (Redrawn::Other, report::render::bisect::write_all(dir, &b).map_err(|e| failed(&e))?)
        }
        Checked::Gate(g) => {
            let files = report::render::gate::write_all(dir, &g).map_err(|e| failed(&e))?;
            (Redrawn::Gate(g), files)
        }
    };
    Ok((report, files.into_iter().map(|f| dir.join(f.path)).collect()))
}
