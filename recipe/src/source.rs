//! Reading series data in the CMI format from parquet: the columns checked,
//! each file mapped, decoded chunk by chunk, and every row held to the row
//! contract ([`crate::rows`]).

use crate::rows::{RowChecker, RowProblem};
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
