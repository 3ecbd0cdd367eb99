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

/// The gate's flags, as parsed.
pub(super) struct Flags {
    pub(super) asked: crate::bisect::gate::GateAsked,
    pub(super) not_sure: String,
    pub(super) export_bmf: Option<PathBuf>,
    pub(super) export_github_benchmark: Option<PathBuf>,
}

/// Runs the gate; its exit code.
pub(super) fn run(f: Flags) -> Result<u8, Error> {
    let pass = match f.not_sure.as_str() {
        "fail" => false,
        "pass" => true,
        other => return Err(Error::Usage(format!("--not-sure {other}: fail or pass"))),
    };
    let exports = [
        ("--export-bmf", &f.export_bmf),
        ("--export-github-benchmark", &f.export_github_benchmark),
    ];
    for (flag, path) in exports.iter().filter_map(|(flag, p)| p.as_ref().map(|p| (flag, p))) {
        if path.symlink_metadata().is_ok() {
            return Err(Error::Usage(format!("{flag} '{}' already exists", path.display())));
        }
        let inside = std::path::absolute(path).ok().zip(std::path::absolute(&f.asked.output).ok());
        if inside.is_some_and(|(p, o)| p.starts_with(&o)) {
            return Err(Error::Usage(format!(
                "{flag} '{}' is inside the gate's directory, which holds its evidence only",
                path.display()
            )));
        }
    }
    let (report, sha) = crate::bisect::gate::run(&f.asked)?;
    print!("{}", report::render::gate::text(&report));
    println!(
        "evidence: {}/ (report.json, comment.md; every run under windows/)",
        f.asked.output.display()
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
    for (flag, path) in exports.iter().filter_map(|(flag, p)| p.as_ref().map(|p| (*flag, p))) {
        let bytes = match flag {
            "--export-bmf" => report::render::gate::bmf(&report),
            _ => report::render::gate::github_benchmark(&report, &sha),
        };
        evidence::write_new(path, &bytes)
            .map_err(|e| Error::Failed(format!("{flag} '{}': {e}", path.display())))?;
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
