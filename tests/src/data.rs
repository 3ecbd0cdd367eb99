//! Dataset fixtures: a tiny frozen cohort made once per test binary, raw
//! parquet files built column by column (so tests can break them on
//! purpose), and snapshots that prove inputs were left untouched.

use arrow_array::{ArrayRef, Float32Array, Float64Array, RecordBatch, StringArray, UInt32Array};
use arrow_schema::{Field, Schema};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// A tiny synthetic cohort, raw and frozen, shared read-only by a test binary.
pub struct Tiny {
    _dir: tempfile::TempDir,
    pub raw: PathBuf,
    pub frozen: PathBuf,
}

pub fn tiny() -> &'static Tiny {
    static TINY: OnceLock<Tiny> = OnceLock::new();
    TINY.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let raw = dir.path().join("raw");
        let frozen = dir.path().join("frozen");
        recipe::generate::generate(&raw, recipe::generate::Scale::Tiny, 3, &mut |_, _| {}).unwrap();
        recipe::freeze::freeze(
            &raw.join("train_series.parquet"),
            &raw.join("train_events.csv"),
            &frozen,
            &mut |_| {},
        )
        .unwrap();
        Tiny { _dir: dir, raw, frozen }
    })
}

/// Copies a directory tree (for tests that change a dataset).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

/// SHA-256 of every file below `dir`, to compare before and after.
pub fn snapshot(dir: &Path) -> BTreeMap<String, String> {
    crate::files_below(dir)
        .into_iter()
        .map(|f| {
            let sha = evidence::file_sha256(&dir.join(&f)).unwrap().0;
            (f, sha)
        })
        .collect()
}

/// Raw series rows, column by column, before they are written.
#[derive(Clone)]
pub struct Raw {
    pub series_id: Vec<String>,
    pub step: Vec<u32>,
    pub timestamp: Vec<String>,
    pub anglez: Vec<f32>,
    pub enmo: Vec<f32>,
}

impl Raw {
    /// Two well-formed series of `n` rows each, starting 2018-08-14 15:30 EDT.
    pub fn valid(n: u32) -> Raw {
        let mut r = Raw {
            series_id: vec![],
            step: vec![],
            timestamp: vec![],
            anglez: vec![],
            enmo: vec![],
        };
        for id in ["aaaaaaaaaaaa", "bbbbbbbbbbbb"] {
            for i in 0..n {
                let utc = 1_534_275_000 + 5 * i as i64;
                let mut ts = [0u8; 24];
                recipe::clock::format_into(utc, -4 * 3600, &mut ts);
                r.series_id.push(id.into());
                r.step.push(i);
                r.timestamp.push(String::from_utf8(ts.to_vec()).unwrap());
                r.anglez.push((i % 90) as f32);
                r.enmo.push(0.01 * (i % 7) as f32);
            }
        }
        r
    }

    /// The columns as arrays, in file order.
    pub fn columns(&self) -> Vec<(&'static str, ArrayRef)> {
        vec![
            ("series_id", Arc::new(StringArray::from(self.series_id.clone())) as ArrayRef),
            ("step", Arc::new(UInt32Array::from(self.step.clone()))),
            ("timestamp", Arc::new(StringArray::from(self.timestamp.clone()))),
            ("anglez", Arc::new(Float32Array::from(self.anglez.clone()))),
            ("enmo", Arc::new(Float32Array::from(self.enmo.clone()))),
        ]
    }

    /// Writes the default columns.
    pub fn write(&self, path: &Path) {
        write_columns(path, self.columns());
    }

    /// An events file with one labelled night per series.
    pub fn events(&self) -> String {
        let mut s = String::from("series_id,night,event,step,timestamp\n");
        for id in ["aaaaaaaaaaaa", "bbbbbbbbbbbb"] {
            s.push_str(&format!("{id},1,onset,10,2018-08-14T15:30:50-0400\n{id},1,wakeup,20,2018-08-14T15:31:40-0400\n"));
        }
        s
    }
}

/// Writes arbitrary columns as one parquet file.
pub fn write_columns(path: &Path, columns: Vec<(&str, ArrayRef)>) {
    let fields: Vec<Field> =
        columns.iter().map(|(n, a)| Field::new(*n, a.data_type().clone(), true)).collect();
    let schema = Arc::new(Schema::new(fields));
    let batch = RecordBatch::try_new(schema.clone(), columns.into_iter().map(|(_, a)| a).collect())
        .unwrap();
    let mut w =
        parquet::arrow::ArrowWriter::try_new(std::fs::File::create(path).unwrap(), schema, None)
            .unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

/// A float64 column, for wrong-type tests.
pub fn f64_column(values: &[f32]) -> ArrayRef {
    Arc::new(Float64Array::from(values.iter().map(|&v| v as f64).collect::<Vec<_>>()))
}
