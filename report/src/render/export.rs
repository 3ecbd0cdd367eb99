//! `--export-json`, `--export-csv`, `--export-markdown`, `--export-trace`,
//! `--export-benchmark-tsv`, `--export-folded`, `--export-bmf`,
//! `--export-github-benchmark` ([`super::benchmarks`]): a run's results in the forms
//! other tools read, in hyperfine's spirit (the trace is [`super::trace`],
//! Snakemake's benchmark table `snakemake`, the collapsed stacks
//! [`super::folded`]). Derived from report.json
//! alone, one row per stage in plan order, and tied to the evidence by the
//! report's body digest. Written only as new files: an existing path is
//! refused, never replaced.

use crate::modes::Report;
use crate::rundir::report::{self, TrialSet};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub const SCHEMA: &str = "stagebench.export";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Json,
    Csv,
    Markdown,
    Trace,
    BenchmarkTsv,
    Folded,
    Bmf,
    GithubBenchmark,
}

impl Format {
    pub fn flag(self) -> &'static str {
        match self {
            Format::Json => "--export-json",
            Format::Csv => "--export-csv",
            Format::Markdown => "--export-markdown",
            Format::Trace => "--export-trace",
            Format::BenchmarkTsv => "--export-benchmark-tsv",
            Format::Folded => "--export-folded",
            Format::Bmf => "--export-bmf",
            Format::GithubBenchmark => "--export-github-benchmark",
        }
    }
}

/// Why an export was refused or not written. Refusals come before anything
/// runs; a failed write comes after, with the run's evidence complete.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("{0} '{1}' already exists")]
    Exists(&'static str, String),
    #[error("{0} '{1}' is named by another export")]
    NamedTwice(&'static str, String),
    /// Found missing after the run, the export would be lost with everything measured.
    #[error("{0} '{1}': its folder '{2}' does not exist (create it first)")]
    NoFolder(&'static str, String, String),
    /// The run (or campaign) directory is created fresh and holds evidence only.
    #[error(
        "{0} '{1}' is inside the run directory '{2}', which the run creates and holds its evidence only; write the export elsewhere"
    )]
    InsideRun(&'static str, String, String),
    #[error("{0} '{1}': {2}")]
    Untimed(&'static str, String, Unexportable),
    #[error("{0} '{1}': {2}")]
    Write(&'static str, String, std::io::Error),
    #[error("{0} '{1}': {2}")]
    Jobs(&'static str, String, crate::rundir::jobs::JobsError),
    /// A gate's figures are judged couples, not a run's trials.
    #[error(
        "{0}: a gate exports only --export-bmf and --export-github-benchmark; a run of it exports the rest (`coordinator render DIR/windows/W/SIDE-I {0} FILE`)"
    )]
    NotForGate(&'static str),
}

/// Exports requested on the command line.
#[derive(Clone, Debug, Default)]
pub struct Exports(pub Vec<(Format, PathBuf)>);

impl Exports {
    /// The exports asked for, each format with its path where given.
    pub fn new(asked: impl IntoIterator<Item = (Format, Option<PathBuf>)>) -> Exports {
        Exports(asked.into_iter().filter_map(|(f, p)| p.map(|p| (f, p))).collect())
    }

    /// Refuses, before anything runs, a path that exists, is named twice,
    /// lies inside the directory the run will create (`run_dir`, its
    /// `--output`), or whose folder is missing.
    pub fn check(&self, run_dir: Option<&Path>) -> Result<(), ExportError> {
        let absolute = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
        let run_dir = run_dir.map(|d| (d, absolute(d)));
        for (i, (f, p)) in self.0.iter().enumerate() {
            let path = p.display().to_string();
            if let Some((shown, _)) = run_dir.as_ref().filter(|(_, d)| absolute(p).starts_with(d)) {
                return Err(ExportError::InsideRun(f.flag(), path, shown.display().to_string()));
            }
            if p.symlink_metadata().is_ok() {
                return Err(ExportError::Exists(f.flag(), path));
            }
            if self.0[..i].iter().any(|(_, q)| q == p) {
                return Err(ExportError::NamedTwice(f.flag(), path));
            }
            // Its folder must be there now.
            let parent = p.parent().filter(|d| !d.as_os_str().is_empty());
            if let Some(dir) = parent.filter(|d| !d.is_dir()) {
                return Err(ExportError::NoFolder(f.flag(), path, dir.display().to_string()));
            }
        }
        Ok(())
    }

    /// Writes every export of `r`, whose run directory is `dir`, each as a
    /// new file. A trace reads every job back from the run's jobs.jsonl.gz.
    /// An export the run gave nothing to (`--export-folded` of a run with
    /// no span and no sample) is not written and says why in `skipped`: the
    /// run itself is complete, and measured what it was asked to.
    pub fn write(&self, r: &Report, dir: &Path) -> Result<Written<'_>, ExportError> {
        let mut written = Written::default();
        let mut with_jobs: Option<Report> = None;
        for (f, p) in &self.0 {
            let path = || p.display().to_string();
            let r = match f {
                // A preparation's jobs, and their slices, are in jobs.jsonl.gz.
                Format::Trace | Format::Folded => match &mut with_jobs {
                    Some(full) => &*full,
                    None => {
                        let mut full = r.clone();
                        full.read_jobs(dir, true)
                            .map_err(|e| ExportError::Jobs(f.flag(), path(), e))?;
                        &*with_jobs.insert(full)
                    }
                },
                _ => r,
            };
            let bytes = match bytes(*f, r) {
                Ok(bytes) => bytes,
                Err(e @ Unexportable::NoSpans) => {
                    written.skipped.push(format!("{} '{}' not written: {e}", f.flag(), path()));
                    continue;
                }
                Err(e) => return Err(ExportError::Untimed(f.flag(), path(), e)),
            };
            new_file(*f, p, &bytes)?;
            written.paths.push(p.as_path());
        }
        Ok(written)
    }

    /// Writes a gate's exports (`--export-bmf`, `--export-github-benchmark`:
    /// its judged figures, `extra` naming `report_sha256`), each as a new
    /// file; any other export is refused before anything is written.
    pub fn write_gate(
        &self,
        g: &crate::rundir::gate::GateReport,
        report_sha256: &str,
    ) -> Result<Written<'_>, ExportError> {
        if let Some((f, _)) =
            self.0.iter().find(|(f, _)| !matches!(f, Format::Bmf | Format::GithubBenchmark))
        {
            return Err(ExportError::NotForGate(f.flag()));
        }
        let mut written = Written::default();
        for (f, p) in &self.0 {
            let bytes = match f {
                Format::Bmf => super::gate::bmf(g),
                _ => super::gate::github_benchmark(g, report_sha256),
            };
            new_file(*f, p, &bytes)?;
            written.paths.push(p.as_path());
        }
        Ok(written)
    }
}

/// Writes `bytes` to `p` as a new file, for the export `f`.
fn new_file(f: Format, p: &Path, bytes: &[u8]) -> Result<(), ExportError> {
    let path = || p.display().to_string();
    evidence::write_new(p, bytes).map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => ExportError::Exists(f.flag(), path()),
        _ => ExportError::Write(f.flag(), path(), e),
    })
}

/// What [`Exports::write`] wrote, and what it had nothing to write, why.
#[derive(Debug, Default)]
pub struct Written<'a> {
    pub paths: Vec<&'a Path>,
    pub skipped: Vec<String>,
}

/// Why a report cannot be exported in a form.
#[derive(Debug, thiserror::Error)]
pub enum Unexportable {
    #[error(transparent)]
    Untimed(#[from] super::trace::Untimed),
    #[error(
        "the run recorded no span and sampled no stack, so there is no stack to fold (name spans with --span, stagebench.span or a preset, or sample with --sample)"
    )]
    NoSpans,
}

pub fn bytes(f: Format, r: &Report) -> Result<Vec<u8>, Unexportable> {
    Ok(match f {
        Format::Json => json_export(r),
        Format::Csv => csv(r).into_bytes(),
        Format::Markdown => super::summary_markdown(r).into_bytes(),
        Format::Trace => super::trace::chrome(r)?,
        Format::BenchmarkTsv => super::snakemake::tsv(r).into_bytes(),
        Format::Folded => match super::folded::text(r) {
            text if text.is_empty() => return Err(Unexportable::NoSpans),
            text => text.into_bytes(),
        },
        Format::Bmf => super::benchmarks::bmf(&super::benchmarks::of_run(r)),
        Format::GithubBenchmark => super::benchmarks::github(&super::benchmarks::of_run(r)),
    })
}

fn trials_of<'a>(r: &'a Report, key: &str) -> Option<&'a TrialSet> {
    r.trials().and_then(|t| t.get(key))
}

/// A scanned stage's values, by name (hyperfine's `parameters`).
fn parameters_of<'a>(r: &'a Report, key: &str) -> Option<&'a BTreeMap<String, String>> {
    r.scan()?.points.iter().find(|p| p.stage == key).map(|p| &p.parameters)
}

/// Canonical JSON: one result per stage, with every counted trial's figures
/// and their statistics when the run had trials.
fn json_export(r: &Report) -> Vec<u8> {
    let results: Vec<Value> = r
        .ordered()
        .into_iter()
        .map(|(key, st)| {
            let mut v = json!({
                "stage": key,
                "definition": st.stage,
                "processes": st.processes,
                "wall_s": st.wall_s,
                "cpu_s": st.cpu_s,
                "user_s": st.user_s,
                "sys_s": st.sys_s,
                "peak_rss_bytes": st.peak_rss_bytes,
                "figures": st.figures,
            });
            if let Some(p) = parameters_of(r, key) {
                v["parameters"] = json!(p);
            }
            if let Some(t) = trials_of(r, key) {
                v["trials"] = json!({
                    "n": t.n,
                    "warmup": t.warmup,
                    "summary": t.summary,
                    "samples": t.samples,
                    "warnings": t.warnings,
                });
            }
            v
        })
        .collect();
    let body = serde_json::to_value(r).expect("report serialises");
    let mut export = json!({
        "schema": SCHEMA,
        "schema_version": 1,
        "mode": r.mode(),
        "report_body_sha256": report::body_digest(&body),
        "results": results,
    });
    if let Some(scan) = r.scan() {
        export["recommendation"] = json!(scan.recommendation);
    }
    evidence::to_bytes(&export)
}

const CSV_HEADER: &str = "stage,n,wall_median_s,wall_mean_s,wall_stdev_s,wall_min_s,wall_max_s,\
wall_p5_s,wall_p95_s,wall_ci95_low_s,wall_ci95_high_s,cpu_median_s,user_median_s,sys_median_s,\
peak_rss_median_bytes";

/// One row per stage. A stage measured once has n = 1, its one value as
/// median, mean, min and max, and empty spread columns. A scan adds a
/// `parameter_NAME` column per name, as hyperfine's export does.
fn csv(r: &Report) -> String {
    let names = r.scan().map(|s| s.names.as_slice()).unwrap_or_default();
    let mut out = String::from(CSV_HEADER);
    for n in names {
        out.push_str(&format!(",parameter_{n}"));
    }
    out.push('\n');
    for (key, st) in r.ordered() {
        let mut cols = vec![csv_field(key)];
        match trials_of(r, key) {
            Some(t) => {
                let w = &t.summary["wall_s"];
                cols.push(t.n.to_string());
                cols.extend(
                    [w.median, w.mean, w.stdev, w.min, w.max, w.p5, w.p95].map(|x| x.to_string()),
                );
                // Empty below 6 trials: no 95% interval exists there.
                let ci = w.median_ci95.map(|c| c.map(|x| x.to_string()));
                cols.extend(ci.unwrap_or_default());
            }
            None => {
                let x = st.wall_s.to_string();
                cols.push("1".into());
                cols.extend([x.clone(), x.clone(), String::new(), x.clone(), x]);
                cols.extend(std::iter::repeat_n(String::new(), 4));
            }
        }
        cols.extend([st.cpu_s, st.user_s, st.sys_s].map(|x| x.to_string()));
        cols.push(st.peak_rss_bytes.to_string());
        let values = parameters_of(r, key);
        cols.extend(
            names.iter().map(|n| {
                csv_field(values.and_then(|v| v.get(n)).map(String::as_str).unwrap_or(""))
            }),
        );
        out.push_str(&cols.join(","));
        out.push('\n');
    }
    out
}

/// RFC 4180: quoted when it holds a comma, quote or line break.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::csv_field;

    #[test]
    fn csv_fields_are_quoted_only_when_needed() {
        assert_eq!(csv_field("spin:40"), "spin:40");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }
}
