//! What a command reports about itself. The worker creates a fresh, private
//! file and names it in `STAGEBENCH_SPANS`; the command appends one JSON
//! object per line (the `stagebench` Python package does it for Python):
//!
//! - `{"name": "adapt_images", "seconds": 54.7}`: a span that ended;
//!   optionally with `"start": 1234.5`, when it began on the machine's
//!   monotonic clock (`CLOCK_MONOTONIC`, Python's `time.monotonic()`), which
//!   places it in time: the worker reports it as a slice of the stage;
//! - `{"progress": 0.4}`: the fraction of the stage done so far.
//!
//! The worker follows the file while the command runs (progress reaches the
//! coordinator, and a kill point is checked against what the file says),
//! then reads the rest, removes the file, and reports per span name
//! `span:NAME_s` (the sum of its spans' seconds) and `span:NAME_n` (how many
//! there were), in order of first appearance. Nothing else of the file
//! enters the report. A line that is neither fails the stage with its line
//! number: an unknown key, seconds or a start that are negative or not finite, a name
//! that is empty, longer than 64 bytes or not of `A-Z a-z 0-9 _ . -`, a
//! progress outside [0, 1].

use super::{StageError, figure};
use protocol::Figure;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Most bytes a spans file may hold.
pub const MAX_BYTES: u64 = 1 << 20;
/// Longest span name.
pub const MAX_NAME: usize = 64;

/// One line of the file.
#[derive(Debug, PartialEq)]
pub enum Line {
    Span {
        name: String,
        seconds: f64,
        start: Option<f64>,
    },
    Progress(f64),
    /// The `--span` bootstrap wrapped this target (`MODULE:QUALNAME`, or
    /// `preset:NAME`): it is not among the targets that never matched.
    Wrapped(String),
    /// The Python helper at its process's exit: the interpreter's version
    /// and the distributions whose modules were imported.
    Runtime(PythonRuntime),
}

/// What one `{"runtime": …}` line says.
#[derive(Debug, Default, PartialEq, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PythonRuntime {
    pub python: String,
    pub distributions: std::collections::BTreeMap<String, String>,
}

/// Most distributions one runtime line may name.
pub const MAX_DISTRIBUTIONS: usize = 2000;

impl PythonRuntime {
    /// Completes what the worker read before the stage (`runtime`) with
    /// what the helper said.
    pub fn fill(self, runtime: &mut protocol::Runtime) {
        runtime.python = Some(self.python);
        runtime.distributions = self.distributions.into_iter().collect();
    }

    /// Versions and names of `A-Z a-z 0-9 _ . + ! -`, 1 to 100 of them: what
    /// package metadata holds, never a path.
    fn check(&self) -> Result<(), String> {
        let safe = |s: &str| {
            !s.is_empty()
                && s.len() <= 100
                && s.chars().all(|c| c.is_ascii_alphanumeric() || "_.+!-".contains(c))
        };
        let shorten = |s: &str| s.chars().take(100).collect::<String>();
        if !safe(&self.python) {
            return Err(format!("runtime python '{}' is not a version", shorten(&self.python)));
        }
        if self.distributions.len() > MAX_DISTRIBUTIONS {
            return Err(format!("runtime names more than {MAX_DISTRIBUTIONS} distributions"));
        }
        for (name, version) in &self.distributions {
            if !safe(name) || !safe(version) {
                return Err(format!(
                    "runtime distribution '{}' '{}' must be 1 to 100 of A-Z a-z 0-9 _ . + ! -",
                    shorten(name),
                    shorten(version)
                ));
            }
        }
        Ok(())
    }
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    name: Option<String>,
    seconds: Option<f64>,
    start: Option<f64>,
    progress: Option<f64>,
    wrapped: Option<String>,
    runtime: Option<PythonRuntime>,
}

/// Why one line of a spans file is refused.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadLine(pub String);

impl From<String> for BadLine {
    fn from(why: String) -> Self {
        BadLine(why)
    }
}

/// Why a command's spans file fails its stage.
#[derive(Debug, thiserror::Error)]
pub enum SpansError {
    #[error("spans line {0}: {1}")]
    Line(usize, BadLine),
    #[error("reading the spans file: {0}")]
    Read(std::io::Error),
    #[error("the command's spans file holds more than {MAX_BYTES} bytes")]
    TooLarge,
    #[error("the command's spans file is not UTF-8")]
    NotUtf8,
}

/// One line, checked; None for a blank one.
pub fn parse_line(line: &str) -> Result<Option<Line>, BadLine> {
    if line.trim().is_empty() {
        return Ok(None);
    }
    let shape = "{\"name\": …, \"seconds\": …} or {\"progress\": …}";
    let raw: Raw = serde_json::from_str(line).map_err(|e| format!("not an object {shape}: {e}"))?;
    if let Some(runtime) = raw.runtime {
        let alone = raw.name.is_none()
            && raw.seconds.is_none()
            && raw.start.is_none()
            && raw.progress.is_none()
            && raw.wrapped.is_none();
        if !alone {
            return Err(format!("not an object {shape}").into());
        }
        runtime.check()?;
        return Ok(Some(Line::Runtime(runtime)));
    }
    match raw {
        Raw {
            name: Some(name),
            seconds: Some(seconds),
            start,
            progress: None,
            wrapped: None,
            ..
        } => {
            let ok_name = !name.is_empty()
                && name.len() <= MAX_NAME
                && name.chars().all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c));
            if !ok_name {
                return Err(format!(
                    "span name '{}' must be 1 to {MAX_NAME} of A-Z a-z 0-9 _ . -",
                    name.chars().take(MAX_NAME).collect::<String>()
                )
                .into());
            }
            if !(seconds.is_finite() && seconds >= 0.0) {
                return Err(format!("seconds {seconds} is not a finite non-negative number").into());
            }
            if let Some(t) = start.filter(|t| !(t.is_finite() && *t >= 0.0)) {
                return Err(format!("start {t} is not a finite non-negative number").into());
            }
            Ok(Some(Line::Span { name, seconds, start }))
        }
        Raw {
            name: None, seconds: None, start: None, progress: None, wrapped: Some(w), ..
        } => Ok(Some(Line::Wrapped(w.chars().take(256).collect()))),
        Raw {
            name: None, seconds: None, start: None, progress: Some(p), wrapped: None, ..
        } => {
            if !(0.0..=1.0).contains(&p) {
                return Err(format!("progress {p} is not between 0 and 1").into());
            }
            Ok(Some(Line::Progress(p)))
        }
        _ => Err(format!("not an object {shape}").into()),
    }
}

/// A span that gave its start: name, start on the monotonic clock, seconds.
pub type Timed = (String, f64, f64);

/// What the lines so far add up to.
#[derive(Default)]
pub struct Tally {
    /// Per name in order of first appearance: seconds and count.
    pub spans: Vec<(String, f64, u64)>,
    /// The last progress reported.
    pub progress: Option<f64>,
    /// Spans with a start, in the order they ended (the first `MAX_SLICES`).
    pub timed: Vec<Timed>,
    /// `--span` targets the bootstrap wrapped (see [`Line::Wrapped`]).
    pub wrapped: std::collections::BTreeSet<String>,
    /// What the helper said at exit: the first process's interpreter, and
    /// the distributions every process that said anything imported.
    pub runtime: Option<PythonRuntime>,
    lines: usize,
}

impl Tally {
    /// Adds the lines of `text` (complete lines); the first bad one fails.
    fn add(&mut self, text: &str, mut each: impl FnMut(&Line, &Tally)) -> Result<(), SpansError> {
        for line in text.lines() {
            self.lines += 1;
            let n = self.lines;
            let Some(parsed) = parse_line(line).map_err(|why| SpansError::Line(n, why))? else {
                continue;
            };
            match &parsed {
                Line::Span { name, seconds, start } => {
                    if let Some(start) = start.filter(|_| self.timed.len() < protocol::MAX_SLICES) {
                        self.timed.push((name.clone(), start, *seconds));
                    }
                    match self.spans.iter_mut().find(|t| t.0 == *name) {
                        Some(t) => {
                            t.1 += seconds;
                            t.2 += 1;
                        }
                        None => self.spans.push((name.clone(), *seconds, 1)),
                    }
                }
                Line::Progress(p) => self.progress = Some(*p),
                Line::Wrapped(w) => {
                    self.wrapped.insert(w.clone());
                }
                Line::Runtime(r) => match &mut self.runtime {
                    None => self.runtime = Some(r.clone()),
                    Some(all) => all.distributions.extend(r.distributions.clone()),
                },
            }
            each(&parsed, self);
        }
        Ok(())
    }

    /// How many spans called `name` have ended.
    pub fn count(&self, name: &str) -> u64 {
        self.spans.iter().find(|t| t.0 == name).map(|t| t.2).unwrap_or(0)
    }

    /// Per name, in order of first appearance: `span:NAME_s` and `span:NAME_n`.
    pub fn figures(&self) -> Vec<Figure> {
        self.spans
            .iter()
            .flat_map(|(name, s, n)| {
                [
                    figure(&format!("span:{name}_s"), *s),
                    figure(&format!("span:{name}_n"), *n as f64),
                ]
            })
            .collect()
    }
}

/// The spans file of one command stage, followed as it grows; removed
/// when dropped.
pub struct SpansFile {
    path: PathBuf,
    reader: std::fs::File,
    /// Bytes read so far, and the last line when it is not complete yet.
    read: u64,
    partial: Vec<u8>,
    pub tally: Tally,
}

impl SpansFile {
    /// A new empty file below the run directory (never an existing one).
    pub fn create(run_dir: &Path, job_tag: &str) -> Result<SpansFile, StageError> {
        use std::os::unix::fs::OpenOptionsExt;
        let path = run_dir.join(format!(".spans-{job_tag}.jsonl"));
        let io = |source| StageError::Io { path: path.display().to_string(), source };
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(io)?;
        let reader = std::fs::File::open(&path).map_err(io)?;
        Ok(SpansFile { path, reader, read: 0, partial: Vec::new(), tally: Tally::default() })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads what was appended since the last call and adds its complete
    /// lines (all of it when `last`: the command has ended); `each` sees
    /// every line as it is added.
    pub fn follow(
        &mut self,
        last: bool,
        each: impl FnMut(&Line, &Tally),
    ) -> Result<(), SpansError> {
        let mut buf = Vec::new();
        (&self.reader)
            .take(MAX_BYTES + 1 - self.read.min(MAX_BYTES))
            .read_to_end(&mut buf)
            .map_err(SpansError::Read)?;
        self.read += buf.len() as u64;
        if self.read > MAX_BYTES {
            return Err(SpansError::TooLarge);
        }
        self.partial.extend_from_slice(&buf);
        let complete = match last {
            true => self.partial.len(),
            false => self.partial.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1),
        };
        let lines: Vec<u8> = self.partial.drain(..complete).collect();
        let text = String::from_utf8(lines).map_err(|_| SpansError::NotUtf8)?;
        self.tally.add(&text, each)
    }

    /// Everything the command said, once it ended.
    pub fn finish(mut self) -> Result<Said, StageError> {
        self.follow(true, |_, _| {}).map_err(|e| StageError::Failed(e.to_string()))?;
        Ok(Said {
            figures: self.tally.figures(),
            timed: std::mem::take(&mut self.tally.timed),
            wrapped: std::mem::take(&mut self.tally.wrapped),
            runtime: self.tally.runtime.take(),
        })
    }
}

/// What a command's spans file said, once it ended.
pub struct Said {
    /// The figures of every span.
    pub figures: Vec<Figure>,
    /// The spans that gave a start (name, start on the monotonic clock, seconds).
    pub timed: Vec<Timed>,
    /// The `--span` targets wrapped.
    pub wrapped: std::collections::BTreeSet<String>,
    /// What the Python helper said of its runtime.
    pub runtime: Option<PythonRuntime>,
}

/// Reports spans that gave their start as slices of the stage, placed on
/// the worker's clock by reading the machine's monotonic clock beside it.
pub fn place(timed: Vec<Timed>, reporter: &mut dyn super::Reporter) {
    let (now, mono) = (std::time::Instant::now(), monotonic_now());
    for (name, start, seconds) in timed {
        let ago = std::time::Duration::from_secs_f64((mono - start).max(0.0));
        let at = now.checked_sub(ago).unwrap_or(now);
        reporter.slice(&name, at, seconds);
    }
}

/// `CLOCK_MONOTONIC` in seconds: the clock the Python helper's
/// `time.monotonic()` reads.
fn monotonic_now() -> f64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
        .map(|t| t.tv_sec() as f64 + t.tv_nsec() as f64 * 1e-9)
        .unwrap_or(0.0)
}

impl Drop for SpansFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The figures of a whole file's text.
    fn figures(text: &str) -> Result<Vec<Figure>, String> {
        let mut tally = Tally::default();
        tally.add(text, |_, _| {}).map_err(|e| e.to_string())?;
        Ok(tally.figures())
    }

    #[test]
    fn spans_add_up_per_name_in_order_of_first_appearance() {
        let text = "{\"name\": \"load\", \"seconds\": 0.5}\n\n\
                    {\"progress\": 0.5}\n\
                    {\"name\": \"adapt_images\", \"seconds\": 54.7}\n\
                    {\"name\": \"load\", \"seconds\": 0.25}\n";
        let f: Vec<(String, f64)> =
            figures(text).unwrap().into_iter().map(|f| (f.name, f.value)).collect();
        assert_eq!(
            f,
            [
                ("span:load_s".to_string(), 0.75),
                ("span:load_n".to_string(), 2.0),
                ("span:adapt_images_s".to_string(), 54.7),
                ("span:adapt_images_n".to_string(), 1.0),
            ]
        );
        assert_eq!(figures("").unwrap().len(), 0);
    }

    #[test]
    fn a_bad_line_is_named_by_its_number() {
        let ok = "{\"name\": \"a\", \"seconds\": 1}\n";
        for (line, needle) in [
            ("not json", "not an object"),
            ("{\"name\": \"a\"}", "not an object"),
            ("{\"name\": \"a\", \"seconds\": 1, \"extra\": 2}", "unknown field"),
            ("{\"name\": \"a\", \"seconds\": 1, \"progress\": 0.5}", "not an object"),
            ("{\"name\": \"/home/me\", \"seconds\": 1}", "span name '/home/me' must be"),
            ("{\"name\": \"\", \"seconds\": 1}", "span name '' must be"),
            (&format!("{{\"name\": \"{}\", \"seconds\": 1}}", "x".repeat(65)), "must be 1 to 64"),
            ("{\"name\": \"a\", \"seconds\": -1}", "seconds -1 is not"),
            ("{\"name\": \"a\", \"seconds\": 1, \"start\": -2}", "start -2 is not"),
            ("{\"progress\": 0.5, \"start\": 2}", "not an object"),
            ("{\"name\": \"a\", \"seconds\": 1e999}", "not an object"),
            ("{\"progress\": 1.5}", "progress 1.5 is not between 0 and 1"),
            ("{\"progress\": -0.1}", "progress -0.1 is not between 0 and 1"),
        ] {
            let e = figures(&format!("{ok}{line}\n")).unwrap_err();
            assert!(e.starts_with("spans line 2: "), "{e}");
            assert!(e.contains(needle), "{e}");
        }
    }

    /// Runtime lines from two processes: the first's interpreter, every
    /// distribution either imported; a path or a stray key is refused.
    #[test]
    fn runtime_lines_merge_and_a_path_is_refused() {
        let mut tally = Tally::default();
        let text = "{\"runtime\": {\"python\": \"3.11.7\", \"distributions\": {\"numpy\": \"2.4.6\"}}}\n\
                    {\"runtime\": {\"python\": \"3.12.1\", \"distributions\": {\"torch\": \"2.5.1+cpu\"}}}\n";
        tally.add(text, |_, _| {}).unwrap();
        let r = tally.runtime.clone().unwrap();
        assert_eq!(r.python, "3.11.7");
        let names: Vec<&str> = r.distributions.keys().map(String::as_str).collect();
        assert_eq!(names, ["numpy", "torch"]);
        assert!(tally.figures().is_empty(), "a runtime line is no span");
        for (line, needle) in [
            (
                "{\"runtime\": {\"python\": \"/usr/bin/python3\", \"distributions\": {}}}",
                "is not a version",
            ),
            (
                "{\"runtime\": {\"python\": \"3.11\", \"distributions\": {\"mine\": \"/home/me/x\"}}}",
                "runtime distribution 'mine'",
            ),
            (
                "{\"runtime\": {\"python\": \"3.11\", \"distributions\": {}, \"user\": \"me\"}}",
                "unknown field",
            ),
            (
                "{\"runtime\": {\"python\": \"3.11\", \"distributions\": {}}, \"progress\": 0.5}",
                "not an object",
            ),
        ] {
            let e = figures(&format!("{line}\n")).unwrap_err();
            assert!(e.starts_with("spans line 1: ") && e.contains(needle), "{e}");
        }
    }

    #[test]
    fn a_followed_file_yields_complete_lines_only_until_the_end() {
        use std::io::Write;
        let dir = std::env::temp_dir().join(format!("spans-follow-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut f = SpansFile::create(&dir, "t").unwrap();
        let mut w = std::fs::OpenOptions::new().append(true).open(f.path()).unwrap();
        w.write_all(b"{\"progress\": 0.25}\n{\"name\": \"fit\", \"sec").unwrap();
        let mut seen = Vec::new();
        f.follow(false, |l, _| seen.push(format!("{l:?}"))).unwrap();
        assert_eq!(seen, ["Progress(0.25)"]);
        w.write_all(b"onds\": 2}\n{\"name\": \"fit\", \"seconds\": 1, \"start\": 7.5}").unwrap();
        f.follow(false, |_, t| seen.push(format!("fit x{}", t.count("fit")))).unwrap();
        assert_eq!(seen, ["Progress(0.25)", "fit x1"]);
        let said = f.finish().unwrap();
        assert_eq!(said.figures[0].value, 3.0);
        assert_eq!(said.figures[1].value, 2.0);
        let timed = said.timed;
        assert_eq!(timed, [("fit".to_string(), 7.5, 1.0)], "only the span with a start is timed");
        assert!(std::fs::read_dir(&dir).unwrap().next().is_none(), "the file was not removed");
        std::fs::remove_dir(&dir).unwrap();
    }
}
