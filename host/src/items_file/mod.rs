//! The items file of `--prepare` (docs/item-protocol.md): checked once, in
//! memory that does not grow with its lines, then read again as its items
//! are handed out, so a run of 10⁷ items never holds their ids.
//!
//! - One item per line, `ID` or `ID<TAB>WEIGHT` (every line weighted, or
//!   none). A refusal names a line, never an id.
//! - Ids are unique (`unique`: a Bloom filter of fixed size, then exact).
//! - Weighted items are handed out largest first: their lines and offsets,
//!   8 bytes an item, for up to [`MAX_SORTED`] items; beyond that in file
//!   order, which the report says.
//! - The file is read again for each phase. Its identity, size and times
//!   are taken when it is checked; a read that finds it otherwise, a line
//!   that no longer parses, or (in file order) bytes whose SHA-256 is not
//!   the declared one fails the run ([`Source::unchanged`]).

mod lines;
mod unique;

use lines::Lines;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The largest items file read: 256 MiB, a million ids of 256 bytes.
pub const MAX_ITEMS_BYTES: u64 = 256 << 20;

/// The most weighted items sorted largest first (32 MiB of lines and
/// offsets); more are handed out in file order.
pub const MAX_SORTED: usize = 1 << 22;

/// Why an items file is refused (each names a line, never an id).
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ItemsError {
    #[error("--items {0}: cannot be read: {1}")]
    Read(String, String),
    #[error("--items {0}: not a regular file (a pipe or device has no end to read to)")]
    NotAFile(String),
    #[error("--items {0}: over {max} MiB, the largest items file read", max = MAX_ITEMS_BYTES >> 20)]
    TooLarge(String),
    #[error(
        "--items line {0}: over {max} MiB; a line is ID or ID<TAB>WEIGHT",
        max = lines::MAX_LINE >> 20
    )]
    LineTooLong(usize),
    #[error(
        "--items line {0}: the id is {1} bytes as a JSON string, over the {max} an answer can carry \
         (docs/item-protocol.md)",
        max = protocol::items::MAX_ID_JSON
    )]
    IdTooLong(usize, usize),
    #[error("--items: the file is not UTF-8")]
    NotUtf8,
    #[error("--items: the file lists no item")]
    Empty,
    #[error("--items line {0}: the id is empty")]
    EmptyId(usize),
    #[error("--items line {0}: a third field; a line is ID or ID<TAB>WEIGHT")]
    ThirdField(usize),
    #[error("--items line {0}: the weight is not a positive number")]
    BadWeight(usize),
    #[error("--items line {0}: the same id as line {1}")]
    Duplicate(usize, usize),
    #[error(
        "--items line {0} has no weight but line {1} has one: give every item a weight, or none"
    )]
    MixedWeights(usize, usize),
    #[error(
        "--items: the file changed while the run read it (its items are checked once, at the start)"
    )]
    Changed,
}

/// The file as it was checked: another file at its path, or this one
/// written since, is not what was declared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Stamp {
        use std::os::unix::fs::MetadataExt;
        Stamp {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }
}

/// A checked items file, whose items are read as they are handed out.
pub struct Source {
    path: PathBuf,
    stamp: Stamp,
    count: usize,
    sha256: String,
    weighted: bool,
    /// Largest weight first: each item's (line from 0, byte offset); None
    /// for file order.
    sorted: Option<Box<[(u32, u32)]>>,
    /// Set by a read during the run that found the file otherwise.
    changed: Mutex<bool>,
}

impl std::fmt::Debug for Source {
    /// Its count and order, not its millions of offsets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Source")
            .field("count", &self.count)
            .field("weighted", &self.weighted)
            .field("largest_first", &self.largest_first())
            .finish_non_exhaustive()
    }
}

impl Source {
    /// How many items (lines) it holds.
    pub fn count(&self) -> usize {
        self.count
    }

    /// SHA-256 of the file's bytes.
    pub fn sha256(&self) -> &str {
        &self.sha256
    }

    /// Whether its items carry weights.
    pub fn weighted(&self) -> bool {
        self.weighted
    }

    /// Whether its items are handed out largest weight first (weighted and
    /// at most [`MAX_SORTED`]); otherwise in file order.
    pub fn largest_first(&self) -> bool {
        self.sorted.is_some()
    }

    /// Every item, in the order they are handed out, read from the file.
    pub fn cursor(self: &Arc<Self>) -> Cursor {
        Cursor { source: self.clone(), at: 0, reader: None }
    }

    /// Whether every read found the file as it was checked, and it still is.
    pub fn unchanged(&self) -> Result<(), ItemsError> {
        let now = std::fs::metadata(&self.path).map(|m| Stamp::of(&m)).ok();
        match *self.changed.lock().unwrap_or_else(|p| p.into_inner()) || now != Some(self.stamp) {
            true => Err(ItemsError::Changed),
            false => Ok(()),
        }
    }

    fn found_changed(&self) {
        *self.changed.lock().unwrap_or_else(|p| p.into_inner()) = true;
    }
}

/// Reads and checks an items file: a regular file (or a link to one) of at
/// most [`MAX_ITEMS_BYTES`], read no further than that.
pub fn check(path: &Path) -> Result<Source, ItemsError> {
    check_sorting(path, MAX_SORTED)
}

/// [`check`], sorting at most `max_sorted` weighted items.
fn check_sorting(path: &Path, max_sorted: usize) -> Result<Source, ItemsError> {
    let shown = || path.display().to_string();
    let failed = |e: std::io::Error| ItemsError::Read(shown(), e.to_string());
    let file = File::open(path).map_err(|e| ItemsError::Read(shown(), e.to_string()))?;
    let meta = file.metadata().map_err(|e| ItemsError::Read(shown(), e.to_string()))?;
    if !meta.is_file() {
        return Err(ItemsError::NotAFile(shown()));
    }
    if meta.len() > MAX_ITEMS_BYTES {
        return Err(ItemsError::TooLarge(shown()));
    }
    let stamp = Stamp::of(&meta);
    // No further than the limit, should the file grow while it is read.
    let limit = MAX_ITEMS_BYTES + 1;
    let mut lines = Lines::new(file, limit);
    let mut sha256 = evidence::Sha256Hex::default();
    let (mut weighted, mut unweighted) = (None, None);
    // (weight, line, offset) while there are few enough to sort.
    let mut weights: Option<Vec<(f64, u32, u32)>> = Some(Vec::new());
    loop {
        let line = match lines.next_line() {
            Ok(Some(line)) => line,
            Ok(None) => break,
            Err(e) => return Err(failed(e)),
        };
        let n = line.n + 1;
        if line.beyond > 0 {
            return Err(too_long(line.text, line.beyond, n));
        }
        sha256.update(line.raw);
        match parse(line.text, n)?.1 {
            None => {
                unweighted.get_or_insert(n);
            }
            Some(w) => {
                weighted.get_or_insert(n);
                match &mut weights {
                    Some(list) if list.len() < max_sorted => {
                        list.push((w, line.n as u32, line.offset as u32))
                    }
                    _ => weights = None,
                }
            }
        }
    }
    let (count, bytes) = lines.read();
    if bytes > MAX_ITEMS_BYTES {
        return Err(ItemsError::TooLarge(shown()));
    }
    if let (Some(w), Some(u)) = (weighted, unweighted) {
        return Err(ItemsError::MixedWeights(u, w));
    }
    if count == 0 {
        return Err(ItemsError::Empty);
    }
    match unique::first_repeat(path, count, limit) {
        Ok(Some((n, first))) => return Err(ItemsError::Duplicate(n, first)),
        Ok(None) => {}
        Err(e) => return Err(failed(e)),
    }
    let sorted = weighted.and(weights).map(|mut list| {
        // Largest first, ties in file order (lines are unique, so an
        // unstable sort, which allocates nothing, orders them the same).
        list.sort_unstable_by(|(a, i, _), (b, j, _)| b.total_cmp(a).then(i.cmp(j)));
        list.into_iter().map(|(_, line, offset)| (line, offset)).collect()
    });
    // Every read above was of the file as it was opened.
    let now = std::fs::metadata(path).map_err(|e| ItemsError::Read(shown(), e.to_string()))?;
    if Stamp::of(&now) != stamp {
        return Err(ItemsError::Changed);
    }
    Ok(Source {
        path: path.to_path_buf(),
        stamp,
        count,
        sha256: sha256.finish(),
        weighted: weighted.is_some(),
        sorted,
        changed: Mutex::new(false),
    })
}

/// Why line `n`, of which `kept` was read and `beyond` bytes more, is
/// refused: its id too long for an answer, when no tab came before the
/// bytes not kept (the JSON length counts each of those as one byte, as it
/// is for ASCII), else the line.
fn too_long(kept: &[u8], beyond: u64, n: usize) -> ItemsError {
    if kept.contains(&b'\t') {
        return ItemsError::LineTooLong(n);
    }
    let valid = match std::str::from_utf8(kept) {
        Ok(text) => text,
        Err(e) => std::str::from_utf8(&kept[..e.valid_up_to()]).unwrap_or_default(),
    };
    let json = protocol::items::id_json_len(valid) + (kept.len() - valid.len()) + beyond as usize;
    ItemsError::IdTooLong(n, json)
}

/// A line's id and weight, checked; `n` is its number from 1.
fn parse(text: &[u8], n: usize) -> Result<(&str, Option<f64>), ItemsError> {
    let text = std::str::from_utf8(text).map_err(|_| ItemsError::NotUtf8)?;
    let mut fields = text.split('\t');
    let id = fields.next().unwrap_or_default();
    let weight = fields.next();
    if fields.next().is_some() {
        return Err(ItemsError::ThirdField(n));
    }
    if id.trim().is_empty() {
        return Err(ItemsError::EmptyId(n));
    }
    let json = protocol::items::id_json_len(id);
    if json > protocol::items::MAX_ID_JSON {
        return Err(ItemsError::IdTooLong(n, json));
    }
    let weight = match weight.map(|w| w.trim().parse::<f64>()) {
        None => None,
        Some(Ok(w)) if w.is_finite() && w > 0.0 => Some(w),
        Some(_) => return Err(ItemsError::BadWeight(n)),
    };
    Ok((id, weight))
}

/// A source's items in the order they are handed out, each read when asked
/// for: in file order through one buffer, largest first by offset.
pub struct Cursor {
    source: Arc<Source>,
    /// How many were read.
    at: usize,
    reader: Option<Reader>,
}

enum Reader {
    /// With the hash of what was read, checked at the end.
    InOrder(Lines, evidence::Sha256Hex),
    ByOffset(File, Vec<u8>),
}

impl Cursor {
    /// The next item: its line (from 0) and id. None after the last, or when
    /// the file is no longer as it was checked (which
    /// [`Source::unchanged`] then says).
    pub fn next_item(&mut self) -> Option<(usize, String)> {
        if self.at >= self.source.count {
            return None;
        }
        let item = self.read();
        match item {
            Some(_) => self.at += 1,
            None => {
                self.at = self.source.count;
                self.source.found_changed();
            }
        }
        item
    }

    fn read(&mut self) -> Option<(usize, String)> {
        let source = &self.source;
        if self.reader.is_none() {
            let file = File::open(&source.path).ok()?;
            if file.metadata().map(|m| Stamp::of(&m)).ok()? != source.stamp {
                return None;
            }
            self.reader = Some(match source.sorted {
                None => Reader::InOrder(Lines::new(file, source.stamp.len), Default::default()),
                Some(_) => Reader::ByOffset(file, Vec::new()),
            });
        }
        // The id is copied once, straight from the line as read.
        let (n, id) = match (self.reader.as_mut()?, &source.sorted) {
            (Reader::InOrder(lines, sha256), _) => {
                let line = lines.next_line().ok()??;
                sha256.update(line.raw);
                (line.n, parse(line.text, line.n + 1).ok()?.0.to_string())
            }
            (Reader::ByOffset(file, buf), Some(sorted)) => {
                let (n, offset) = sorted[self.at];
                read_line_at(file, offset as u64, buf).ok()?;
                let n = n as usize;
                (n, parse(lines::text(buf), n + 1).ok()?.0.to_string())
            }
            (Reader::ByOffset(..), None) => return None,
        };
        if self.at + 1 == source.count {
            if let Some(Reader::InOrder(_, sha256)) = self.reader.take() {
                if sha256.finish() != source.sha256 {
                    source.found_changed();
                }
            }
        }
        Some((n, id))
    }
}

/// The line starting at `offset` into `buf`, its ending included.
fn read_line_at(file: &File, offset: u64, buf: &mut Vec<u8>) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    buf.clear();
    let mut chunk = [0u8; 512];
    loop {
        let k = file.read_at(&mut chunk, offset + buf.len() as u64)?;
        let piece = &chunk[..k];
        match piece.iter().position(|&b| b == b'\n') {
            Some(i) => {
                buf.extend_from_slice(&piece[..=i]);
                return Ok(());
            }
            None => buf.extend_from_slice(piece),
        }
        if k == 0 || buf.len() > lines::MAX_LINE {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests;

/// An items file of `bytes`, checked, for tests of what reads it; the
/// directory holding it lives as long as the first.
#[cfg(any(test, feature = "testing"))]
pub fn written_for_test(bytes: &[u8]) -> (tempfile::TempDir, Arc<Source>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("items");
    std::fs::write(&path, bytes).unwrap();
    let source = Arc::new(check(&path).unwrap());
    (dir, source)
}
