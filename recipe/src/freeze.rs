//! `dataset freeze`: raw CMI files → a frozen dataset, streaming.
//!
//! The series parquet is read in batches and each series' rows go to their
//! own `sources/<id>.parquet`, so memory is bounded by one series whatever
//! the file's size. A series' rows must be contiguous (each id appears in one
//! run of rows), as they are in the competition file. Every row is checked
//! against the row contract. Output is built in a temporary sibling
//! directory and published with a no-replace rename, so a failure leaves
//! nothing and an existing path is never touched.

use crate::events;
use crate::frozen::{self, FileEntry, Frozen, SeriesEntry, is_safe_id};
use crate::rows::{RowChecker, RowProblem};
use crate::source::{self, SourceError};
use arrow_array::{Array, ArrayRef, RecordBatch, UInt32Array};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use rayon::prelude::*;
use std::collections::HashSet;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Columns of the raw series file.
pub const RAW_COLUMNS: [(&str, DataType); 5] = [
    ("series_id", DataType::Utf8),
    ("step", DataType::UInt32),
    ("timestamp", DataType::Utf8),
    ("anglez", DataType::Float32),
    ("enmo", DataType::Float32),
];

#[derive(Debug, thiserror::Error)]
pub enum FreezeError {
    #[error("output path '{0}' already exists; choose a new --out (nothing was written)")]
    Exists(PathBuf),
    #[error(transparent)]
    Source(#[from] SourceError),
    #[error(transparent)]
    Events(#[from] events::EventsError),
    #[error("{file}: row {row}: series id '{id}' is not 1–64 letters, digits, '_' or '-'")]
    UnsafeId { file: String, row: u64, id: String },
    #[error(
        "{file}: row {row}: rows of series {id} are not contiguous (it appeared earlier in the file)"
    )]
    NotContiguous { file: String, row: u64, id: String },
    #[error("{file}: the file holds no series (empty cohort)")]
    Empty { file: String },
    #[error("{what}: {source}")]
    Io { what: String, source: std::io::Error },
    #[error("writing {file}: {detail}")]
    Write { file: String, detail: String },
}

/// How frozen (and generated) parquet is written: snappy, and the timestamp
/// column prefix-delta encoded (`DELTA_BYTE_ARRAY`: consecutive timestamps
/// share their first 15–17 bytes) instead of dictionary-then-plain strings.
/// At seed scale that made the training sources 1.41 GB instead of 1.76 GB,
/// so a cold preparation hashes and reads 20% less (hash 0.79 s against
/// 0.98 s), and decodes them no slower. Any encoding reads back the same.
pub fn writer_properties() -> WriterProperties {
    let timestamp = parquet::schema::types::ColumnPath::from("timestamp");
    WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_column_dictionary_enabled(timestamp.clone(), false)
        .set_column_encoding(timestamp, parquet::basic::Encoding::DELTA_BYTE_ARRAY)
        .build()
}

struct Open {
    id: String,
    rows: u64,
    writer: ArrowWriter<File>,
    checker: RowChecker,
}

/// Freezes `series` + `events` into the new directory `out`. `progress` is
/// called with the number of rows read so far.
pub fn freeze(
    series: &Path,
    events_path: &Path,
    out: &Path,
    progress: &mut dyn FnMut(u64),
) -> Result<Frozen, FreezeError> {
    let exists = |e: std::io::Error, what: String| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            FreezeError::Exists(out.to_path_buf())
        } else {
            FreezeError::Io { what, source: e }
        }
    };
    let staging = evidence::Staging::new(out)
        .map_err(|e| exists(e, format!("creating {}", out.display())))?;
    let tmp = staging.path().to_path_buf();
    let io = |what: String| move |source| FreezeError::Io { what, source };
    std::fs::create_dir_all(tmp.join("sources"))
        .map_err(io(format!("creating {}", tmp.display())))?;

    let file = series.display().to_string();
    let input = File::open(series).map_err(io(format!("{file}: cannot open")))?;
    let reader = source::open(input, &RAW_COLUMNS, &file, 64 * 1024)?;
    let mut seen = HashSet::new();
    let mut done: Vec<(String, u64)> = Vec::new();
    let mut current: Option<Open> = None;
    let mut row = 0u64;
    for batch in reader {
        let batch = batch
            .map_err(|e| SourceError::Parquet { file: file.clone(), detail: e.to_string() })?;
        let ids = source::text(&batch, "series_id", &file)?;
        let steps = source::column::<UInt32Array>(&batch, "step", &file)?;
        let ts = source::text(&batch, "timestamp", &file)?;
        let mut run_start = 0usize;
        for i in 0..batch.num_rows() {
            let r = row + i as u64;
            if ids.is_null(i) {
                return Err(FreezeError::UnsafeId {
                    file: file.clone(),
                    row: r,
                    id: "<null>".into(),
                });
            }
            let id = ids.value(i);
            if current.as_ref().map(|c| c.id.as_str()) != Some(id) {
                if let Some(c) = current.as_mut() {
                    write_rows(c, &batch, run_start, i)?;
                }
                if let Some(c) = current.take() {
                    done.push(close(c)?);
                }
                if !is_safe_id(id) {
                    return Err(FreezeError::UnsafeId {
                        file: file.clone(),
                        row: r,
                        id: id.into(),
                    });
                }
                if !seen.insert(id.to_string()) {
                    return Err(FreezeError::NotContiguous {
                        file: file.clone(),
                        row: r,
                        id: id.into(),
                    });
                }
                current = Some(open_series(id, &batch, &tmp)?);
                run_start = i;
            }
            let c = current.as_mut().expect("opened above");
            let fail = |problem| SourceError::Row {
                file: file.clone(),
                series: id.to_string(),
                row: r,
                problem,
            };
            if steps.is_null(i) {
                return Err(fail(RowProblem::Null("step")).into());
            }
            if ts.is_null(i) {
                return Err(fail(RowProblem::Null("timestamp")).into());
            }
            c.checker.push(steps.value(i), ts.value(i)).map_err(fail)?;
        }
        if let Some(c) = current.as_mut() {
            write_rows(c, &batch, run_start, batch.num_rows())?;
        }
        row += batch.num_rows() as u64;
        progress(row);
    }
    if let Some(c) = current.take() {
        done.push(close(c)?);
    }
    if done.is_empty() {
        return Err(FreezeError::Empty { file });
    }

    let events_name = events_path.display().to_string();
    let events_bytes =
        std::fs::read(events_path).map_err(io(format!("{events_name}: cannot read")))?;
    let parsed = events::parse(&events_bytes, &events_name, Some(&seen))?;
    evidence::write_atomic(&tmp.join(frozen::EVENTS_FILE), &events_bytes)
        .map_err(io("writing events.csv".into()))?;

    let ids: Vec<String> = done.iter().map(|(id, _)| id.clone()).collect();
    let parts = frozen::partitions(&ids);
    let entries: Vec<SeriesEntry> = done
        .par_iter()
        .zip(parts.par_iter())
        .map(|((id, samples), part)| {
            let file = frozen::source_file(id);
            let (sha256, _) =
                evidence::file_sha256(&tmp.join(&file)).map_err(io(format!("hashing {file}")))?;
            Ok(SeriesEntry { id: id.clone(), file, sha256, samples: *samples, partition: *part })
        })
        .collect::<Result<_, FreezeError>>()?;
    let events_entry = FileEntry {
        file: frozen::EVENTS_FILE.into(),
        sha256: evidence::sha256_hex(&events_bytes),
        rows: parsed.len() as u64,
    };
    let frozen = Frozen::seal(events_entry, entries);
    evidence::write_atomic(&tmp.join(frozen::FILE), &evidence::to_bytes(&frozen))
        .map_err(io("writing frozen.json".into()))?;
    staging.publish().map_err(|e| exists(e, format!("publishing {}", out.display())))?;
    Ok(frozen)
}

fn source_schema(batch: &RecordBatch) -> Arc<Schema> {
    let fields: Vec<Field> = source::SOURCE_COLUMNS
        .iter()
        .map(|(n, _)| {
            let f = batch.schema().field_with_name(n).expect("checked columns").clone();
            Field::new(*n, f.data_type().clone(), true)
        })
        .collect();
    Arc::new(Schema::new(fields))
}

fn open_series(id: &str, batch: &RecordBatch, tmp: &Path) -> Result<Open, FreezeError> {
    let file = frozen::source_file(id);
    let f = File::create(tmp.join(&file))
        .map_err(|source| FreezeError::Io { what: format!("creating {file}"), source })?;
    let writer = ArrowWriter::try_new(f, source_schema(batch), Some(writer_properties()))
        .map_err(|e| FreezeError::Write { file: file.clone(), detail: e.to_string() })?;
    Ok(Open { id: id.to_string(), rows: 0, writer, checker: RowChecker::default() })
}

fn write_rows(
    c: &mut Open,
    batch: &RecordBatch,
    from: usize,
    to: usize,
) -> Result<(), FreezeError> {
    if to <= from {
        return Ok(());
    }
    let cols: Vec<ArrayRef> = source::SOURCE_COLUMNS
        .iter()
        .map(|(n, _)| batch.column_by_name(n).expect("checked columns").slice(from, to - from))
        .collect();
    let part = RecordBatch::try_new(source_schema(batch), cols).map_err(|e| {
        FreezeError::Write { file: frozen::source_file(&c.id), detail: e.to_string() }
    })?;
    c.writer.write(&part).map_err(|e| FreezeError::Write {
        file: frozen::source_file(&c.id),
        detail: e.to_string(),
    })?;
    c.rows += (to - from) as u64;
    Ok(())
}

fn close(c: Open) -> Result<(String, u64), FreezeError> {
    let file = frozen::source_file(&c.id);
    let f = c
        .writer
        .into_inner()
        .map_err(|e| FreezeError::Write { file: file.clone(), detail: e.to_string() })?;
    f.sync_all().map_err(|source| FreezeError::Io { what: format!("syncing {file}"), source })?;
    Ok((c.id, c.rows))
}
