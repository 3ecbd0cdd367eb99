//! An items file's lines, read in order through one buffer: each with its
//! number and byte offset, without its line ending, none held longer than
//! [`MAX_LINE`].

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

/// The longest line read (1 MiB): past the longest id an answer carries
/// (so an id too long is refused as one), and a bound on what one line
/// holds in memory.
pub(super) const MAX_LINE: usize = 1 << 20;

/// What is read past the items file's size limit, to see it was crossed.
const READ_BUFFER: usize = 64 << 10;

/// A line of the file.
pub(super) struct Line<'a> {
    /// Its number, from 0.
    pub(super) n: usize,
    /// Where it starts in the file.
    pub(super) offset: u64,
    /// Its bytes as read, line ending included (what the file's hash covers).
    pub(super) raw: &'a [u8],
    /// Its bytes without the line ending: `\n`, `\r\n`, and one `\r` more.
    pub(super) text: &'a [u8],
    /// Bytes past [`MAX_LINE`] read and not kept (then `raw` and `text` are
    /// the first [`MAX_LINE`]).
    pub(super) beyond: u64,
}

pub(super) struct Lines {
    reader: BufReader<io::Take<File>>,
    buf: Vec<u8>,
    /// The next line's number and offset.
    n: usize,
    offset: u64,
}

impl Lines {
    /// The lines of the open `file`, read no further than `limit` bytes.
    pub(super) fn new(file: File, limit: u64) -> Lines {
        Lines {
            reader: BufReader::with_capacity(READ_BUFFER, file.take(limit)),
            buf: Vec::new(),
            n: 0,
            offset: 0,
        }
    }

    /// The lines of the file at `path`, read no further than `limit` bytes.
    pub(super) fn open(path: &Path, limit: u64) -> io::Result<Lines> {
        Ok(Lines::new(File::open(path)?, limit))
    }

    /// How many lines, and how many bytes, were read.
    pub(super) fn read(&self) -> (usize, u64) {
        (self.n, self.offset)
    }

    /// The next line: of one over [`MAX_LINE`] bytes, the first
    /// [`MAX_LINE`] (the rest read past and counted in `beyond`).
    pub(super) fn next_line(&mut self) -> io::Result<Option<Line<'_>>> {
        self.buf.clear();
        let mut beyond = 0u64;
        // Whether the `\n` ending the line was among the bytes read past.
        let mut ended_beyond = false;
        loop {
            let available = self.reader.fill_buf()?;
            if available.is_empty() {
                break;
            }
            let (taken, ended) = match available.iter().position(|&b| b == b'\n') {
                Some(i) => (i + 1, true),
                None => (available.len(), false),
            };
            let kept = taken.min(MAX_LINE.saturating_sub(self.buf.len()));
            self.buf.extend_from_slice(&available[..kept]);
            beyond += (taken - kept) as u64;
            self.reader.consume(taken);
            if ended {
                ended_beyond = taken > kept;
                break;
            }
        }
        if self.buf.is_empty() {
            return Ok(None);
        }
        let text = match beyond {
            0 => text(&self.buf),
            _ => &self.buf[..],
        };
        let offset = self.offset;
        self.offset += self.buf.len() as u64 + beyond;
        // The line ending is not the text's.
        let beyond = beyond - ended_beyond as u64;
        let line = Line { n: self.n, offset, raw: &self.buf, text, beyond };
        self.n += 1;
        Ok(Some(line))
    }
}

/// A line's bytes without its ending, as `str::lines` and one more `\r`.
pub(super) fn text(raw: &[u8]) -> &[u8] {
    let text = match raw.strip_suffix(b"\n") {
        Some(body) => body.strip_suffix(b"\r").unwrap_or(body),
        None => raw,
    };
    text.strip_suffix(b"\r").unwrap_or(text)
}

/// A line's id: its text up to the first tab.
pub(super) fn id_field(text: &[u8]) -> &[u8] {
    text.split(|&b| b == b'\t').next().unwrap_or_default()
}
