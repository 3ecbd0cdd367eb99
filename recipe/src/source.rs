//! Reading series data in the CMI format from parquet, and the row contract
//! every series must keep: `step` runs 0, 1, 2, … and the UTC instant of each
//! row is exactly 5 s after the previous one. Freezing and extraction both
//! check it with [`RowChecker`], so there is one definition of a valid series.

use crate::clock;
use crate::contract::SAMPLE_SECONDS;
use arrow_array::{Array, Float32Array, LargeStringArray, RecordBatch, StringArray, UInt32Array};
use arrow_schema::{DataType, Schema};
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};
use parquet::file::reader::ChunkReader;

/// Columns of a frozen per-series source file, with their types.
pub const SOURCE_COLUMNS: [(&str, DataType); 4] = [
    ("step", DataType::UInt32),
    ("timestamp", DataType::Utf8),
    ("anglez", DataType::Float32),
    ("enmo", DataType::Float32),
];

/// What is wrong with an input, named well enough to fix it.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("{file}: not a readable parquet file: {detail}")]
    Parquet { file: String, detail: String },
    #[error("{file}: missing column '{column}' (needs {needs})")]
    MissingColumn { file: String, column: String, needs: String },
    #[error("{file}: column '{column}' has type {got}, expected {expected}")]
    ColumnType { file: String, column: String, got: String, expected: String },
    #[error("{file}: series {series}, row {row}: {problem}")]
    Row { file: String, series: String, row: u64, problem: RowProblem },
    #[error("{file}: {detail}")]
    Other { file: String, detail: String },
}

/// A broken row contract.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum RowProblem {
    #[error("step {got} where {expected} was expected (steps must run 0, 1, 2, … without gaps)")]
    Step { expected: u64, got: u64 },
    #[error("timestamp '{0}' cannot be parsed (expected YYYY-MM-DDTHH:MM:SS±HHMM)")]
    Timestamp(String),
    #[error("timestamp '{text}' is {delta} s after the previous row in UTC (must be exactly 5 s)")]
    Cadence { text: String, delta: i64 },
    #[error("null {0}")]
    Null(&'static str),
}

/// Checks rows of one series in order.
#[derive(Default)]
pub struct RowChecker {
    next_step: u64,
    prev_utc: Option<i64>,
    /// The previous row's date and offset bytes, and the UTC instant of that
    /// local midnight: consecutive rows almost always share them, so only
    /// HH:MM:SS needs parsing (see [`clock::parse_same_day`]).
    day: Option<([u8; 10], [u8; 5], i64)>,
    /// The next row's timestamp as it must read if it is on the common path
    /// (5 s after the last accepted row, same date and offset), with its
    /// local seconds; `None` when the next row crosses midnight or the last
    /// one was not in the 24-byte form. A row equal to it byte for byte is
    /// one that [`clock::parse`] would accept at exactly that instant.
    next: Option<Expected>,
}

impl RowChecker {
    /// Checks one row; returns its local clock seconds of day.
    pub fn push(&mut self, step: u32, timestamp: &str) -> Result<u32, RowProblem> {
        if step as u64 != self.next_step {
            return Err(RowProblem::Step { expected: self.next_step, got: step as u64 });
        }
        let b = timestamp.as_bytes();
        let fast = match &self.day {
            Some((date, offset, midnight))
                if b.len() == 24 && b[..10] == date[..] && b[19..] == offset[..] =>
            {
                clock::parse_same_day(b, *midnight)
            }
            _ => None,
        };
        let stamp = match fast {
            Some(s) => s,
            None => {
                let s =
                    clock::parse(b).ok_or_else(|| RowProblem::Timestamp(timestamp.to_string()))?;
                if b.len() == 24 {
                    let midnight = s.utc - s.local_seconds as i64;
                    self.day =
                        Some((b[..10].try_into().unwrap(), b[19..].try_into().unwrap(), midnight));
                }
                s
            }
        };
        if let Some(prev) = self.prev_utc {
            if stamp.utc - prev != SAMPLE_SECONDS {
                return Err(RowProblem::Cadence {
                    text: timestamp.to_string(),
                    delta: stamp.utc - prev,
                });
            }
        }
        self.next_step += 1;
        self.prev_utc = Some(stamp.utc);
        self.next = b.try_into().ok().and_then(|t| Expected::after(t, stamp.local_seconds));
        Ok(stamp.local_seconds)
    }

    /// Checks a run of rows given as a string array's raw bytes and offsets
    /// (no nulls), appending each row's local seconds to `out`. A row on the
    /// common path (next step, and the bytes predicted from the row before)
    /// costs one 24-byte comparison; any other row goes through
    /// [`RowChecker::push`], so the rules and the errors are the same.
    /// On error, returns the index of the failing row with its problem.
    pub fn push_raw(
        &mut self,
        steps: &[u32],
        offsets: &[i32],
        data: &[u8],
        out: &mut Vec<u32>,
    ) -> Result<(), (usize, RowProblem)> {
        out.reserve(steps.len());
        let row = |i: usize| &data[offsets[i] as usize..offsets[i + 1] as usize];
        let mut i = 0;
        while i < steps.len() {
            if let (Some(mut want), Some(mut prev)) = (self.next, self.prev_utc) {
                // The common path, with the state in registers.
                let mut step = self.next_step;
                let mut ahead = true;
                while ahead && i < steps.len() && steps[i] as u64 == step && want.is(row(i)) {
                    out.push(want.local);
                    (step, prev, i) = (step + 1, prev + SAMPLE_SECONDS, i + 1);
                    ahead = want.advance();
                }
                self.next_step = step;
                self.prev_utc = Some(prev);
                self.next = ahead.then_some(want);
                if i == steps.len() {
                    break;
                }
            }
            let text = std::str::from_utf8(row(i)).unwrap_or("<not UTF-8>");
            out.push(self.push(steps[i], text).map_err(|p| (i, p))?);
            i += 1;
        }
        Ok(())
    }
}

/// A 24-byte timestamp `YYYY-MM-DDTHH:MM:SS±HHMM` that a row must equal, with
/// its local seconds, held as two little-endian words (bytes 0..16 and
/// 16..24) so that comparing a row and stepping 5 s on stay in registers.
#[derive(Clone, Copy)]
struct Expected {
    head: u128,
    tail: u64,
    local: u32,
}

impl Expected {
    /// The timestamp 5 s after `t`, a valid one read as `local` seconds, or
    /// `None` where that crosses local midnight (the date changes).
    fn after(t: [u8; 24], local: u32) -> Option<Expected> {
        let mut e = Expected {
            head: u128::from_le_bytes(t[..16].try_into().unwrap()),
            tail: u64::from_le_bytes(t[16..].try_into().unwrap()),
            local,
        };
        e.advance().then_some(e)
    }

    #[inline]
    fn is(&self, b: &[u8]) -> bool {
        let Ok(b) = <&[u8; 24]>::try_from(b) else { return false };
        u128::from_le_bytes(b[..16].try_into().unwrap()) == self.head
            && u64::from_le_bytes(b[16..].try_into().unwrap()) == self.tail
    }

    /// Steps 5 s on by carrying through the HH:MM:SS digits: seconds in
    /// tail bytes 1 and 2, minutes in head bytes 14 and 15, hours in head
    /// bytes 11 and 12. Returns false at local midnight.
    #[inline]
    fn advance(&mut self) -> bool {
        const S10: u32 = 8;
        const S1: u32 = 16;
        const M10: u32 = 14 * 8;
        const M1: u32 = 15 * 8;
        const H10: u32 = 11 * 8;
        const H1: u32 = 12 * 8;
        self.local += SAMPLE_SECONDS as u32;
        if self.local >= 86_400 {
            return false;
        }
        if ((self.tail >> S1) as u8) < b'5' {
            self.tail += 5 << S1;
            return true;
        }
        self.tail -= 5 << S1;
        if ((self.tail >> S10) as u8) < b'5' {
            self.tail += 1 << S10;
            return true;
        }
        self.tail -= 5 << S10;
        if ((self.head >> M1) as u8) < b'9' {
            self.head += 1 << M1;
            return true;
        }
        self.head -= 9 << M1;
        if ((self.head >> M10) as u8) < b'5' {
            self.head += 1 << M10;
            return true;
        }
        self.head -= 5 << M10;
        let hour = self.local / 3600;
        let (tens, ones) = ((b'0' + (hour / 10) as u8) as u128, (b'0' + (hour % 10) as u8) as u128);
        self.head = self.head & !(0xffff << H10) | tens << H10 | ones << H1;
        true
    }
}

/// Checks that `schema` has each required column with its type (extra columns are ignored).
pub fn check_columns(
    schema: &Schema,
    required: &[(&str, DataType)],
    file: &str,
) -> Result<(), SourceError> {
    let needs = required.iter().map(|(n, t)| format!("{n}: {t}")).collect::<Vec<_>>().join(", ");
    for (name, ty) in required {
        let field = schema.field_with_name(name).map_err(|_| SourceError::MissingColumn {
            file: file.into(),
            column: (*name).into(),
            needs: needs.clone(),
        })?;
        let ok = field.data_type() == ty
            || (*ty == DataType::Utf8 && field.data_type() == &DataType::LargeUtf8);
        if !ok {
            return Err(SourceError::ColumnType {
                file: file.into(),
                column: (*name).into(),
                got: field.data_type().to_string(),
                expected: ty.to_string(),
            });
        }
    }
    Ok(())
}

/// A source file mapped read-only with its pages populated. Frozen sources
/// are never rewritten in place (freezing writes new files), and the hash is
/// checked on the mapping before anything is decoded from it.
pub fn map(path: &std::path::Path) -> std::io::Result<memmap2::Mmap> {
    let file = std::fs::File::open(path)?;
    // SAFETY: the mapping is read-only and private to this process; a frozen
    // source that is truncated while mapped would fault (SIGBUS), which the
    // coordinator reports as the worker's crash, never as a result.
    unsafe { memmap2::MmapOptions::new().populate().map(&file) }
}

/// Opens a parquet input reading only `columns`, after checking them.
pub fn open<R: ChunkReader + 'static>(
    input: R,
    required: &[(&str, DataType)],
    file: &str,
    batch_rows: usize,
) -> Result<ParquetRecordBatchReader, SourceError> {
    let parquet = |e: parquet::errors::ParquetError| SourceError::Parquet {
        file: file.into(),
        detail: e.to_string(),
    };
    let builder = ParquetRecordBatchReaderBuilder::try_new(input).map_err(parquet)?;
    check_columns(builder.schema(), required, file)?;
    let names: Vec<&str> = required.iter().map(|(n, _)| *n).collect();
    let mask = ProjectionMask::columns(builder.parquet_schema(), names.iter().copied());
    builder.with_projection(mask).with_batch_size(batch_rows).build().map_err(parquet)
}

/// Typed access to one column of a batch.
/// Only the `enmo` and `anglez` columns of a (frozen, one-series) file, in
/// row order, nulls as NaN: what frame validity depends on, without
/// decoding timestamps.
pub fn read_motion(bytes: bytes::Bytes, file: &str) -> Result<(Vec<f32>, Vec<f32>), SourceError> {
    let required = [("anglez", DataType::Float32), ("enmo", DataType::Float32)];
    let reader = open(bytes, &required, file, 64 * 1024)?;
    let (mut enmo, mut anglez) = (Vec::new(), Vec::new());
    for batch in reader {
        let batch =
            batch.map_err(|e| SourceError::Parquet { file: file.into(), detail: e.to_string() })?;
        for (name, out) in [("enmo", &mut enmo), ("anglez", &mut anglez)] {
            let col = column::<Float32Array>(&batch, name, file)?;
            if col.null_count() == 0 {
                out.extend_from_slice(col.values());
            } else {
                out.extend(col.iter().map(|v| v.unwrap_or(f32::NAN)));
            }
        }
    }
    Ok((enmo, anglez))
}

pub fn column<'a, T: 'static>(
    batch: &'a RecordBatch,
    name: &str,
    file: &str,
) -> Result<&'a T, SourceError> {
    batch.column_by_name(name).and_then(|c| c.as_any().downcast_ref::<T>()).ok_or_else(|| {
        SourceError::Other {
            file: file.into(),
            detail: format!("column '{name}' could not be read"),
        }
    })
}

/// A utf8 column, small or large offsets.
pub enum Text<'a> {
    Small(&'a StringArray),
    Large(&'a LargeStringArray),
}

impl Text<'_> {
    pub fn value(&self, i: usize) -> &str {
        match self {
            Text::Small(a) => a.value(i),
            Text::Large(a) => a.value(i),
        }
    }
    pub fn null_count(&self) -> usize {
        match self {
            Text::Small(a) => a.null_count(),
            Text::Large(a) => a.null_count(),
        }
    }
    pub fn is_null(&self, i: usize) -> bool {
        match self {
            Text::Small(a) => a.is_null(i),
            Text::Large(a) => a.is_null(i),
        }
    }
}

/// A utf8 column of a batch.
pub fn text<'a>(batch: &'a RecordBatch, name: &str, file: &str) -> Result<Text<'a>, SourceError> {
    let col = batch.column_by_name(name);
    if let Some(a) = col.and_then(|c| c.as_any().downcast_ref::<StringArray>()) {
        return Ok(Text::Small(a));
    }
    if let Some(a) = col.and_then(|c| c.as_any().downcast_ref::<LargeStringArray>()) {
        return Ok(Text::Large(a));
    }
    Err(SourceError::Other { file: file.into(), detail: format!("column '{name}' is not text") })
}

/// Decodes a parquet file's source columns into arrow arrays and nothing
/// more: the floor under [`read_series`]. Returns the rows decoded.
pub fn decode_only(bytes: bytes::Bytes, file: &str) -> Result<u64, SourceError> {
    let reader = open(bytes, &SOURCE_COLUMNS, file, 64 * 1024)?;
    let mut rows = 0u64;
    for batch in reader {
        let batch =
            batch.map_err(|e| SourceError::Parquet { file: file.into(), detail: e.to_string() })?;
        rows += std::hint::black_box(batch).num_rows() as u64;
    }
    Ok(rows)
}

/// The decoded, checked columns of one series.
#[derive(Debug, Default)]
pub struct SeriesData {
    pub local_seconds: Vec<u32>,
    pub anglez: Vec<f32>,
    pub enmo: Vec<f32>,
}

/// Decodes and checks a frozen per-series source file from its bytes.
/// Null anglez/enmo values become NaN (their frames are invalid).
pub fn read_series(
    bytes: bytes::Bytes,
    file: &str,
    series: &str,
) -> Result<SeriesData, SourceError> {
    let mut out = SeriesData::default();
    read_series_chunks(bytes, file, series, |ts, e, a| {
        out.local_seconds.extend_from_slice(ts);
        out.enmo.extend_from_slice(e);
        out.anglez.extend_from_slice(a);
    })?;
    Ok(out)
}

/// Like [`read_series`], but hands each decoded, checked chunk of rows
/// (local seconds, enmo, anglez) to `sink` instead of keeping the series.
/// Float columns are lent straight from the decoded buffers when they have
/// no nulls. Returns the number of rows.
pub fn read_series_chunks(
    bytes: bytes::Bytes,
    file: &str,
    series: &str,
    mut sink: impl FnMut(&[u32], &[f32], &[f32]),
) -> Result<u64, SourceError> {
    let reader = open(bytes, &SOURCE_COLUMNS, file, 32 * 1024)?;
    let mut checker = RowChecker::default();
    let mut row = 0u64;
    let mut local = Vec::new();
    let (mut a_buf, mut e_buf) = (Vec::new(), Vec::new());
    for batch in reader {
        let batch =
            batch.map_err(|e| SourceError::Parquet { file: file.into(), detail: e.to_string() })?;
        let step = column::<UInt32Array>(&batch, "step", file)?;
        let ts = text(&batch, "timestamp", file)?;
        let anglez = column::<Float32Array>(&batch, "anglez", file)?;
        let enmo = column::<Float32Array>(&batch, "enmo", file)?;
        local.clear();
        if let (Text::Small(a), 0) = (&ts, step.null_count() + ts.null_count()) {
            checker
                .push_raw(step.values(), a.value_offsets(), a.value_data(), &mut local)
                .map_err(|(i, problem)| SourceError::Row {
                    file: file.into(),
                    series: series.into(),
                    row: row + i as u64,
                    problem,
                })?;
        } else {
            check_rows(&mut checker, step, &ts, row, file, series, &mut local)?;
        }
        let a = lend(anglez, &mut a_buf);
        let e = lend(enmo, &mut e_buf);
        sink(&local, e, a);
        row += batch.num_rows() as u64;
    }
    Ok(row)
}

/// A float column's values: borrowed when it has no nulls, else copied into
/// `buf` with nulls as NaN.
fn lend<'a>(col: &'a Float32Array, buf: &'a mut Vec<f32>) -> &'a [f32] {
    if col.null_count() == 0 {
        col.values()
    } else {
        buf.clear();
        buf.extend(col.iter().map(|v| v.unwrap_or(f32::NAN)));
        buf
    }
}

/// The general per-row path: nulls, large offsets.
fn check_rows(
    checker: &mut RowChecker,
    step: &UInt32Array,
    ts: &Text<'_>,
    row: u64,
    file: &str,
    series: &str,
    out: &mut Vec<u32>,
) -> Result<(), SourceError> {
    out.reserve(step.len());
    for i in 0..step.len() {
        let fail = |problem| SourceError::Row {
            file: file.into(),
            series: series.into(),
            row: row + i as u64,
            problem,
        };
        if step.is_null(i) {
            return Err(fail(RowProblem::Null("step")));
        }
        if ts.is_null(i) {
            return Err(fail(RowProblem::Null("timestamp")));
        }
        out.push(checker.push(step.value(i), ts.value(i)).map_err(fail)?);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The raw fast path and the per-row path accept the same rows and
    /// report the same first error, on clean and on damaged input.
    #[test]
    fn push_raw_agrees_with_push() {
        let mut rng = crate::rng::Rng::new(11);
        for case in 0..300 {
            let n = rng.range(1, 400) as usize;
            let start = 1_541_300_000 + rng.range(0, 2000) as i64 * 5; // spans the 2018-11-04 DST change
            let mut steps: Vec<u32> = (0..n as u32).collect();
            let mut texts: Vec<String> = (0..n)
                .map(|i| {
                    let utc = start + 5 * i as i64;
                    let mut b = [0u8; 24];
                    clock::format_into(utc, clock::eastern_offset(utc), &mut b);
                    String::from_utf8(b.to_vec()).unwrap()
                })
                .collect();
            if case % 2 == 1 {
                let at = rng.range(0, n as u64) as usize;
                match rng.range(0, 4) {
                    0 => steps[at] = steps[at].wrapping_add(1),
                    1 => texts[at] = texts[at].replace(':', "-"),
                    2 => texts[at].replace_range(17..19, "07"),
                    _ => texts[at].replace_range(11..13, "25"),
                }
            }
            let mut offsets = vec![0i32];
            let mut data = Vec::new();
            for t in &texts {
                data.extend_from_slice(t.as_bytes());
                offsets.push(data.len() as i32);
            }
            let mut fast = RowChecker::default();
            let mut got = Vec::new();
            let fast_result = fast.push_raw(&steps, &offsets, &data, &mut got);
            let mut slow = RowChecker::default();
            let mut want = Vec::new();
            let mut slow_result = Ok(());
            for (i, (&st, t)) in steps.iter().zip(&texts).enumerate() {
                match slow.push(st, t) {
                    Ok(v) => want.push(v),
                    Err(p) => {
                        slow_result = Err((i, p));
                        break;
                    }
                }
            }
            assert_eq!(fast_result, slow_result, "case {case}");
            assert_eq!(got, want, "case {case}");
        }
    }

    /// Stepping the expected text 5 s at a time walks a whole local day
    /// exactly as the formatter writes it, from every phase of the 5 s grid
    /// and under both offset signs, and stops at midnight.
    #[test]
    fn the_expected_timestamp_steps_through_a_day_as_the_formatter_writes_it() {
        for offset in [-4 * 3600, 5 * 3600 + 30 * 60] {
            for phase in 0..5i64 {
                let midnight = 1_534_204_800 - offset; // 2018-08-14 00:00 local
                let text = |local: i64| {
                    let mut t = [0u8; 24];
                    clock::format_into(midnight + local, offset, &mut t);
                    t
                };
                let mut want = Expected::after(text(phase), phase as u32).unwrap();
                let mut steps = 1;
                for local in (phase + 5..86_400).step_by(5) {
                    assert!(want.is(&text(local)), "{}", String::from_utf8_lossy(&text(local)));
                    assert!(!want.is(&text(local + 5)));
                    assert_eq!(want.local, local as u32);
                    if local + 5 < 86_400 {
                        assert!(want.advance());
                    } else {
                        assert!(!want.advance(), "must stop at midnight");
                    }
                    steps += 1;
                }
                assert_eq!(steps, (86_400 - phase + 4) / 5);
            }
        }
    }

    #[test]
    fn row_checker_names_each_broken_rule() {
        let mut c = RowChecker::default();
        assert_eq!(c.push(0, "2018-08-14T15:30:00-0400"), Ok(55_800));
        assert_eq!(c.push(1, "2018-08-14T15:30:05-0400"), Ok(55_805));
        assert_eq!(
            c.push(3, "2018-08-14T15:30:10-0400"),
            Err(RowProblem::Step { expected: 2, got: 3 })
        );
        assert!(matches!(
            c.push(2, "2018-08-14T15:30:20-0400"),
            Err(RowProblem::Cadence { delta: 15, .. })
        ));
        assert!(matches!(c.push(2, "yesterday"), Err(RowProblem::Timestamp(_))));
        // A daylight-saving change: local clock jumps back an hour, UTC keeps 5 s.
        let mut c = RowChecker::default();
        c.push(0, "2018-11-04T01:59:55-0400").unwrap();
        assert_eq!(c.push(1, "2018-11-04T01:00:00-0500"), Ok(3600));
    }
}
