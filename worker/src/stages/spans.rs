//! Inner spans a command reports about itself. The worker creates a fresh,
//! private file and names it in `STAGEBENCH_SPANS`; the command appends one
//! JSON object per line, `{"name": "adapt_images", "seconds": 54.7}`. After
//! the command succeeded the worker reads the file, removes it, and reports
//! per name `span:NAME_s` (the sum of its spans' seconds) and `span:NAME_n`
//! (how many there were), in order of first appearance. Nothing else of the
//! file enters the report. A line that is not such an object fails the stage
//! with its line number.

use super::{StageError, figure};
use protocol::Figure;
use std::path::{Path, PathBuf};

/// Most bytes a spans file may hold.
pub const MAX_BYTES: u64 = 1 << 20;
/// Longest span name.
pub const MAX_NAME: usize = 64;

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Span {
    name: String,
    seconds: f64,
}

/// The spans file of one command stage; removed when dropped.
pub struct SpansFile {
    path: PathBuf,
}

impl SpansFile {
    /// A new empty file below the run directory (never an existing one).
    pub fn create(run_dir: &Path, job_tag: &str) -> Result<SpansFile, StageError> {
        use std::os::unix::fs::OpenOptionsExt;
        let path = run_dir.join(format!(".spans-{job_tag}.jsonl"));
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(|source| StageError::Io { path: path.display().to_string(), source })?;
        Ok(SpansFile { path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The figures of the spans the command wrote.
    pub fn finish(self) -> Result<Vec<Figure>, StageError> {
        let io = |source| StageError::Io { path: self.path.display().to_string(), source };
        let len = std::fs::metadata(&self.path).map_err(io)?.len();
        if len > MAX_BYTES {
            return Err(StageError::Failed(format!(
                "the command's spans file holds {len} bytes, more than {MAX_BYTES}"
            )));
        }
        let text = std::fs::read(&self.path).map_err(io)?;
        let text = String::from_utf8(text)
            .map_err(|_| StageError::Failed("the command's spans file is not UTF-8".into()))?;
        figures(&text).map_err(StageError::Failed)
    }
}

impl Drop for SpansFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Per name, in order of first appearance: `span:NAME_s` and `span:NAME_n`.
pub fn figures(text: &str) -> Result<Vec<Figure>, String> {
    let mut totals: Vec<(String, f64, u64)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |why: String| format!("spans line {}: {why}", i + 1);
        let span: Span = serde_json::from_str(line)
            .map_err(|e| bad(format!("not an object {{\"name\": …, \"seconds\": …}}: {e}")))?;
        let ok_name = !span.name.is_empty()
            && span.name.len() <= MAX_NAME
            && span.name.chars().all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c));
        if !ok_name {
            return Err(bad(format!(
                "span name '{}' must be 1 to {MAX_NAME} of A-Z a-z 0-9 _ . -",
                span.name.chars().take(MAX_NAME).collect::<String>()
            )));
        }
        if !(span.seconds.is_finite() && span.seconds >= 0.0) {
            return Err(bad(format!(
                "seconds {} is not a finite non-negative number",
                span.seconds
            )));
        }
        match totals.iter_mut().find(|t| t.0 == span.name) {
            Some(t) => {
                t.1 += span.seconds;
                t.2 += 1;
            }
            None => totals.push((span.name, span.seconds, 1)),
        }
    }
    Ok(totals
        .into_iter()
        .flat_map(|(name, s, n)| {
            [figure(&format!("span:{name}_s"), s), figure(&format!("span:{name}_n"), n as f64)]
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::figures;

    #[test]
    fn spans_add_up_per_name_in_order_of_first_appearance() {
        let text = "{\"name\": \"load\", \"seconds\": 0.5}\n\n\
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
            ("{\"name\": \"/home/me\", \"seconds\": 1}", "span name '/home/me' must be"),
            ("{\"name\": \"\", \"seconds\": 1}", "span name '' must be"),
            ("{\"name\": \"a\", \"seconds\": -1}", "seconds -1 is not"),
        ] {
            let e = figures(&format!("{ok}{line}\n")).unwrap_err();
            assert!(e.starts_with("spans line 2: "), "{e}");
            assert!(e.contains(needle), "{e}");
        }
    }
}
