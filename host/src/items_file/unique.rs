//! Whether an items file repeats an id, in memory that does not grow with
//! its lines: exact, whatever the filter's false positives.
//!
//! - The ids are split by hash into passes of about [`PER_PASS`]; each pass
//!   reads the file and sets each of its ids in a Bloom filter of at most
//!   [`MAX_FILTER_BITS`] (2 MiB). An id whose bits were all set already
//!   may repeat one: a candidate.
//! - A second read names, among the candidates, the first line whose id an
//!   earlier line had. Every true repeat is a candidate, so a pass that
//!   finds none has none.
//! - Candidates are held at most [`MAX_CANDIDATES`] at a time: past that
//!   the lines read so far are settled first and the pass goes on.

use super::lines::{Lines, id_field};
use std::collections::{HashMap, HashSet};
use std::hash::Hasher;
use std::io;
use std::path::Path;

/// The lines a pass takes (by their ids' hash), so that its filter holds
/// 16 bits an id.
const PER_PASS: usize = 1 << 20;
const MAX_FILTER_BITS: usize = 1 << 24;
const MAX_CANDIDATES: usize = 1 << 16;
/// Bits set per id: near the best for 16 bits an id (a false positive in
/// about 2 000).
const PROBES: u64 = 7;

/// The first line (1-based) whose id an earlier line had, with that earlier
/// line: `None` when every id of the `count` lines of `path` is unique.
pub(super) fn first_repeat(
    path: &Path,
    count: usize,
    limit: u64,
) -> io::Result<Option<(usize, usize)>> {
    let passes = count.div_ceil(PER_PASS).max(1);
    let bits = (count.min(PER_PASS) * 16).next_power_of_two().clamp(1 << 12, MAX_FILTER_BITS);
    scan(path, passes, bits, limit)
}

/// [`first_repeat`] in `passes` passes with filters of `bits` bits.
fn scan(path: &Path, passes: usize, bits: usize, limit: u64) -> io::Result<Option<(usize, usize)>> {
    let mut earliest: Option<(usize, usize)> = None;
    for pass in 0..passes {
        let ours = |h: u64| passes == 1 || part(h, passes) == pass;
        let mut filter = Bloom::new(bits);
        let mut lines = Lines::open(path, limit)?;
        loop {
            // Candidates up to the cap, or to the end of the file.
            let mut candidates: HashSet<Vec<u8>> = HashSet::new();
            let mut upto = None;
            while let Some(line) = lines.next_line()? {
                let id = id_field(line.text);
                let h = hash(id);
                let candidate = ours(h) && filter.insert(h) && candidates.insert(id.to_vec());
                if candidate && candidates.len() >= MAX_CANDIDATES {
                    upto = Some(line.n);
                    break;
                }
            }
            if !candidates.is_empty() {
                if let Some(found) = repeat_among(path, &candidates, upto, limit)? {
                    earliest = Some(earliest.map_or(found, |e| e.min(found)));
                    break;
                }
            }
            if upto.is_none() {
                break;
            }
        }
    }
    Ok(earliest)
}

/// The first line (1-based) up to line `upto` (0-based, or the end) whose
/// id is a candidate an earlier line had, with that line.
fn repeat_among(
    path: &Path,
    candidates: &HashSet<Vec<u8>>,
    upto: Option<usize>,
    limit: u64,
) -> io::Result<Option<(usize, usize)>> {
    let mut first: HashMap<&[u8], usize> = HashMap::new();
    let mut lines = Lines::open(path, limit)?;
    while let Some(line) = lines.next_line()? {
        let id = id_field(line.text);
        if let Some(c) = candidates.get(id) {
            if let Some(&earlier) = first.get(c.as_slice()) {
                return Ok(Some((line.n + 1, earlier)));
            }
            first.insert(c.as_slice(), line.n + 1);
        }
        if Some(line.n) == upto {
            break;
        }
    }
    Ok(None)
}

fn hash(id: &[u8]) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    h.write(id);
    h.finish()
}

/// Which pass an id's hash belongs to: from bits the filter does not use.
fn part(h: u64, passes: usize) -> usize {
    ((h.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as usize) % passes
}

struct Bloom {
    words: Vec<u64>,
    mask: u64,
}

impl Bloom {
    /// A filter of `bits` (a power of two) bits, none set.
    fn new(bits: usize) -> Bloom {
        Bloom { words: vec![0; bits / 64], mask: bits as u64 - 1 }
    }

    /// Sets `h`'s bits; whether they were all set already.
    fn insert(&mut self, h: u64) -> bool {
        let (h1, h2) = (h & 0xFFFF_FFFF, (h >> 32) | 1);
        let mut present = true;
        for i in 0..PROBES {
            let bit = h1.wrapping_add(i.wrapping_mul(h2)) & self.mask;
            let (word, mask) = ((bit >> 6) as usize, 1u64 << (bit & 63));
            present &= self.words[word] & mask != 0;
            self.words[word] |= mask;
        }
        present
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file(lines: impl Iterator<Item = String>) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        let mut w = std::io::BufWriter::new(f.as_file_mut());
        for l in lines {
            writeln!(w, "{l}").unwrap();
        }
        drop(w);
        f
    }

    /// The first repeat is named with its first sighting, in one pass or
    /// several, and unique ids pass.
    #[test]
    fn the_first_repeated_id_is_found_in_any_pass() {
        let n = 30_000;
        let unique = file((0..n).map(|i| format!("id{i}")));
        let repeated = file((0..n).map(|i| match i {
            15_000 => "id7".to_string(),
            20_000 => "id12000".to_string(),
            _ => format!("id{i}"),
        }));
        for passes in [1, 3] {
            assert_eq!(scan(unique.path(), passes, 1 << 20, u64::MAX).unwrap(), None);
            // Two repeats: the earlier is named, whichever pass has it.
            let found = scan(repeated.path(), passes, 1 << 20, u64::MAX).unwrap();
            assert_eq!(found, Some((15_001, 8)), "{passes} passes");
        }
        assert_eq!(first_repeat(repeated.path(), n, u64::MAX).unwrap(), Some((15_001, 8)));
    }

    /// More candidates than are held at once (a filter far too small, or
    /// every line repeating the one before) are settled in turns: the
    /// first repeat is still the one named.
    #[test]
    fn candidates_past_the_cap_are_settled_in_turns() {
        let n = 3 * MAX_CANDIDATES;
        let pairs = file((0..n).map(|i| format!("p{}", i / 2)));
        assert_eq!(first_repeat(pairs.path(), n, u64::MAX).unwrap(), Some((2, 1)));
        // Unique ids but the last, which repeats the first: with 4 096 bits
        // nearly every id is a (false) candidate, more than the cap.
        let late = file((0..=n).map(|i| format!("u{}", i % n)));
        let mut filter = Bloom::new(1 << 12);
        let candidates = (0..n).filter(|i| filter.insert(hash(format!("u{i}").as_bytes())));
        assert!(candidates.count() > MAX_CANDIDATES, "the cap is crossed");
        assert_eq!(scan(late.path(), 1, 1 << 12, u64::MAX).unwrap(), Some((n + 1, 1)));
        assert_eq!(scan(late.path(), 2, 1 << 12, u64::MAX).unwrap(), Some((n + 1, 1)));
    }
}
